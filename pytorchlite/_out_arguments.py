"""out= arguments written as PyTorch's out= overloads write them: the resize of an output of
another shape (warned when it had elements), and PyTorch's "result type" error when an output's
dtype cannot hold the result."""
import warnings

from . import _C


def check_result_cast(result_dtype, dtype):
    """PyTorch's error when an output of `dtype` cannot hold a result of `result_dtype`."""
    if not _C.can_cast(result_dtype, dtype):
        from ._tensor_types import _NAME
        raise RuntimeError(f"result type {_NAME[result_dtype]} can't be cast to the desired "
                           f"output type {_NAME[dtype]}")


def resize_output(out, shape):
    """out resized to shape, as PyTorch's resize_output: warned when it had elements."""
    if out.shape != shape:
        if out.numel() != 0:
            warnings.warn(f"An output with one or more elements was resized since it had shape "
                          f"{list(out.shape)}, which does not match the required output shape "
                          f"{list(shape)}. This behavior is deprecated, and in a future PyTorch "
                          f"release outputs will not be resized unless they have zero elements. "
                          f"You can explicitly reuse an out tensor t by resizing it, inplace, to "
                          f"zero elements with t.resize_(0).", UserWarning, stacklevel=3)
        out.resize_(shape)


def write_cast(result, out):
    """result (a tensor or a tuple of them) written into out (None: result returned): each
    output resized to its result and the result cast into it, after checking that every
    output's dtype can hold its result.  Returns out, a tuple of them as result's type.  The
    out= of the operator functions without an out overload of their own (Note [Out through
    the functional overload] in src/python/arg_parse.c) and of elementwise composites."""
    if out is None:
        return result
    results = result if isinstance(result, tuple) else (result,)
    outs = tuple(out) if isinstance(result, tuple) else (out,)
    if len(outs) != len(results):
        raise TypeError(f"expected tuple of {len(results)} elements but got {len(outs)}")
    for r, o in zip(results, outs):
        check_result_cast(r.dtype, o.dtype)
    for r, o in zip(results, outs):
        resize_output(o, r.shape)
        o.copy_(r)
    if not isinstance(result, tuple):
        return out
    return outs if type(result) is tuple else type(result)(outs)
