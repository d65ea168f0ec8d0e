"""out= arguments written as PyTorch's out= overloads write them: the resize of an output of
another shape (warned when it had elements), and PyTorch's dtype rule: the "result type" error
when an output's dtype cannot hold the result (cast), or the kernel's own error when out's dtype
is not the result's (strict)."""
from . import _C


def check_result_cast(result_dtype, dtype):
    """PyTorch's error when an output of `dtype` cannot hold a result of `result_dtype`."""
    if not _C.can_cast(result_dtype, dtype):
        from ._tensor_types import _NAME
        raise RuntimeError(f"result type {_NAME[result_dtype]} can't be cast to the desired "
                           f"output type {_NAME[dtype]}")


SAME_DTYPE = "Expected out tensor to have dtype {result_cpp}, but got {out_cpp} instead"


def strict_message(template, result_dtype, dtype):
    """A message of tools/torch_out_overloads.py's templates for a result of result_dtype and an
    out of dtype: {result} / {out} is the legacy name (Float), {result_cpp} / {out_cpp} C++'s
    (float), {result_type} / {out_type} the tensor type (torch.FloatTensor)."""
    from ._tensor_types import _CPP_NAME, _NAME
    spell = {}
    for role, dt in (("result", result_dtype), ("out", dtype)):
        spell[role] = _NAME[dt]
        spell[role + "_cpp"] = _CPP_NAME[dt]
        spell[role + "_type"] = f"torch.{_NAME[dt]}Tensor"
    return template.format(**spell)


def _write(result, out, check):
    """result (a tensor or a tuple of them) written into out (None: result returned): every
    output's dtype checked against its result's first (check(index, result dtype, out dtype)),
    then each resized (Note [Resizing out=] in src/aten/resize_output.h) and the result copied
    in.  Returns out, a tuple of them as result's type."""
    if out is None:
        return result
    results = result if isinstance(result, tuple) else (result,)
    outs = tuple(out) if isinstance(result, tuple) else (out,)
    if len(outs) != len(results):
        raise TypeError(f"expected tuple of {len(results)} elements but got {len(outs)}")
    for i, (r, o) in enumerate(zip(results, outs)):
        check(i, r.dtype, o.dtype)
    for r, o in zip(results, outs):
        _C._resize_output(o, r.shape)
        o.copy_(r)
    if not isinstance(result, tuple):
        return out
    return outs if type(result) is tuple else type(result)(outs)


def write_cast(result, out):
    """out= where a result may be cast into a wider out (PyTorch's elementwise kernels): the
    operator functions without an out overload of their own (Note [Out through the
    functional overload] in src/python/arg_parse.c) and the elementwise composites."""
    return _write(result, out, lambda i, result_dtype, dtype: check_result_cast(result_dtype,
                                                                                dtype))


def write_same_dtype(result, out, message=SAME_DTYPE):
    """out= where out's dtype must be the result's (PyTorch's mm, tensordot, qr, lu...), else
    PyTorch's error: message, a template of strict_message (the common one by default)."""
    return write_probed(result, out, None, (message,) * (len(result) if isinstance(result, tuple)
                                                         else 1))


def write_probed(result, out, also, strict):
    """out= of an operator function through its functional overload (Note [Out through the
    functional overload] in src/python/arg_parse.c), by the rule the generator probed from
    torch (src/python/torch_out_overloads.h): output i is cast into when strict[i] is None;
    otherwise its dtype must be the result's, or `also` (a dtype name), else PyTorch's message
    of template strict[i] is raised."""
    def check(i, result_dtype, dtype):
        if strict[i] is None:
            check_result_cast(result_dtype, dtype)
        elif dtype != result_dtype and str(dtype) != f"torch.{also}":
            raise RuntimeError(strict_message(strict[i], result_dtype, dtype))
    return _write(result, out, check)
