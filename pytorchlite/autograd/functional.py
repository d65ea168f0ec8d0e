"""torch.autograd.functional: vjp, jvp, jacobian, hessian, vhp and hvp of a function of
tensors, written afresh for pytorchlite over autograd.grad.

pytorchlite has no forward-mode AD: jvp (and jacobian's strategy="forward-mode", and hvp) use
the double-backward trick, as PyTorch's jvp and hvp do: for u = zeros shaped like the output,
g(u) = J^T u is linear in u, so the gradient of <g(u), v> with respect to u is J v.
vectorize=True is accepted and computes the same values one row (or column) at a time."""
from .. import _C
from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _tensor_tuple(x, what, fn_name):
    """(was_tuple, x as a tuple), after checking every element is a tensor."""
    was_tuple = isinstance(x, tuple)
    items = x if was_tuple else (x,)
    for i, el in enumerate(items):
        if not isinstance(el, _C.TensorBase):
            where = f"the value at index {i}" if was_tuple else f"the given {what}"
            raise TypeError(f"The {what} given to {fn_name} must be either a Tensor or a tuple "
                            f"of Tensors but {where} has type {type(el)}.")
    return was_tuple, items


def _unwrap(res, was_tuple):
    return res if was_tuple else res[0]


def _unwrap2(res, out_tuple, in_tuple):
    """A tuple (per output) of tuples (per input) with the levels the caller did not pass as
    tuples taken away."""
    if not in_tuple:
        res = type(res)(r[0] for r in res)
    return res if out_tuple else res[0]


def _prepare(inputs, create_graph, need_graph):
    """Inputs the function is run on: part of the caller's graph only with create_graph."""
    return tuple(t.view_as(t) if create_graph and t.requires_grad
                 else t.detach().requires_grad_(need_graph) for t in inputs)


def _finish(tensors, create_graph):
    if create_graph:
        return tensors
    return tuple(t.detach() if isinstance(t, _C.TensorBase) else _finish(t, False)
                 for t in tensors)


def _check_v(v, ref, ref_is_tuple):
    if len(v) != len(ref):
        if ref_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(ref)} but got "
                               f"{len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, ref)):
        if a.size() != b.size():
            where = f"Entry {i} in " if ref_is_tuple else ""
            raise RuntimeError(f"{where}v has invalid size: should be {b.size()} but got "
                               f"{a.size()}.")


_STRICT_MESSAGES = {
    "outputs": "Output {i} of the user-provided function does not require gradients. The "
               "outputs must be computed in a differentiable manner from the input when "
               "running in strict mode.",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the "
                   "user-provided function. This is not allowed in strict mode.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided "
                "function with respect to input {i} is independent of the input. This is not "
                "allowed in strict mode. You should ensure that your function is twice "
                "differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example).",
    "hessian": "The hessian of the user-provided function with respect to input {i} is "
               "independent of the input. This is not allowed in strict mode. You should "
               "ensure that your function is thrice differentiable and that the hessian "
               "depends on the inputs.",
}


def _strict_requires_grad(tensors, kind, strict):
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        if not t.requires_grad:
            raise RuntimeError(_STRICT_MESSAGES[kind].format(i=i))


def _grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """autograd.grad over the outputs that require grad (None for every input if none does);
    inputs nothing reaches get None."""
    from . import grad
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    outs, gs = zip(*pairs)
    return grad(outs, inputs, gs, allow_unused=True, create_graph=create_graph,
                retain_graph=retain_graph)


_ZERO_FILL_MESSAGES = {
    "back": "The output of the user-provided function is independent of input {i}. This is "
            "not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
                  "grad_outputs when using the double backward trick to compute forward mode "
                  "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
                   "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry "
                         "{i} in the grad_jacobian. This is not allowed in strict mode as it "
                         "prevents from using the double backward trick to replace forward "
                         "mode AD.",
}


def _zeros_for_none(grads, refs, strict, create_graph, stage):
    out = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_ZERO_FILL_MESSAGES[stage].format(i=i))
            g = _C._functions["zeros_like"](refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if stage.startswith("double") else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when "
                               "create_graph=True.")
        out.append(g)
    return tuple(out)


def _run(func, inputs, fn_name, strict):
    outputs = func(*inputs)
    out_tuple, outputs = _tensor_tuple(outputs, "outputs of the user-provided function",
                                       fn_name)
    _strict_requires_grad(outputs, "outputs", strict)
    return out_tuple, outputs


def _vector(v, ref, ref_tuple, fn_name, create_graph, none_message):
    if v is None:
        if len(ref) != 1 or ref[0].nelement() != 1:
            raise RuntimeError(none_message)
        return None
    v = _tensor_tuple(v, "v", fn_name)[1]
    v = _prepare(v, create_graph, need_graph=False)
    _check_v(v, ref, ref_tuple)
    # as PyTorch's engine, which casts each gradient to its tensor's dtype
    return tuple(a if a.dtype == b.dtype else a.to(b.dtype) for a, b in zip(v, ref))


_V_NONE_INPUT = ("The vector v can only be None if the input to the user-provided function is "
                 "a single Tensor with a single element.")


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product at inputs."""
    with enable_grad():
        in_tuple, inputs = _tensor_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        out_tuple, outputs = _run(func, inputs, "vjp", strict)
        v = _vector(v, outputs, out_tuple, "vjp", create_graph,
                    "The vector v can only be None if the user-provided function returns a "
                    "single Tensor with a single element.")
    with set_grad_enabled(create_graph or is_grad_enabled()):
        res = _zeros_for_none(_grad(outputs, inputs, v, create_graph), inputs, strict,
                              create_graph, "back")
    return (_unwrap(_finish(outputs, create_graph), out_tuple),
            _unwrap(_finish(res, create_graph), in_tuple))


def _jvp_trick(outputs, inputs, v, create_graph, strict):
    """J v by differentiating J^T u (u zeros requiring grad) with respect to u."""
    zeros_like = _C._functions["zeros_like"]
    with enable_grad():
        us = tuple(zeros_like(o).requires_grad_(True) for o in outputs)
        grad_inputs = _grad(outputs, inputs, us, create_graph=True)
        _strict_requires_grad(grad_inputs, "grad_inputs", strict)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        res = _grad(grad_inputs, us, v, create_graph=create_graph)
        return _zeros_for_none(res, outputs, strict, create_graph, "back_trick")


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product at inputs (double-backward trick)."""
    with enable_grad():
        in_tuple, inputs = _tensor_tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        v = _vector(v, inputs, in_tuple, "jvp", create_graph, _V_NONE_INPUT)
        out_tuple, outputs = _run(func, inputs, "jvp", strict)
    res = _jvp_trick(outputs, inputs, v, create_graph, strict)
    return (_unwrap(_finish(outputs, create_graph), out_tuple),
            _unwrap(_finish(res, create_graph), out_tuple))


def _stack_rows(rows, out_shape, inp):
    from .. import stack
    return stack(rows, 0).view(tuple(out_shape) + tuple(inp.shape))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of func at inputs: for each output and each input a tensor of shape
    output.shape + input.shape (nested tuples as PyTorch)."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more performant. '
            'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "torch.autograd.functional.jacobian: `create_graph=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either set '
                '`create_graph=False` or `strategy="reverse-mode"`.')
        return _jacobian_by_columns(func, inputs, strict, vectorize)
    with enable_grad():
        in_tuple, inputs = _tensor_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        out_tuple, outputs = _run(func, inputs, "jacobian", strict)
        if vectorize and strict:
            raise RuntimeError(
                "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are "
                "not supported together. Please either set `strict=False` or "
                "`vectorize=False`.")
        result = []
        for i, out in enumerate(outputs):
            rows = tuple([] for _ in inputs)
            flat = out.reshape(-1)
            for k in range(out.nelement()):
                grads = _grad((flat[k],), inputs, retain_graph=True, create_graph=create_graph)
                for j, (g, inp) in enumerate(zip(grads, inputs)):
                    if g is None:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is independent of "
                                f"input {j}. This is not allowed in strict mode.")
                        g = _C._functions["zeros_like"](inp)
                    elif strict and create_graph and not g.requires_grad:
                        raise RuntimeError(
                            "The jacobian of the user-provided function is independent of "
                            f"input {i}. This is not allowed in strict mode when "
                            "create_graph=True.")
                    rows[j].append(g)
            result.append(tuple(_stack_rows(r, out.shape, inp)
                                for r, inp in zip(rows, inputs)))
        return _unwrap2(_finish(tuple(result), create_graph), out_tuple, in_tuple)


def _jacobian_by_columns(func, inputs, strict, vectorize):
    """strategy="forward-mode": one Jacobian-vector product per input element."""
    if strict:
        raise RuntimeError(
            "torch.autograd.functional.jacobian: `strict=True` and `strategy=\"forward-mode\"` "
            "are not supported together (yet). Please either set `strict=False` or "
            '`strategy="reverse-mode"`.')
    in_tuple, inputs = _tensor_tuple(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotImplementedError(
            "Computing Jacobian using forward-AD or forward-over-reverse Hessian isonly "
            "implemented for `vectorize=True`.")
    with enable_grad():
        prepared = _prepare(inputs, False, need_graph=True)
        out_tuple, outputs = _tensor_tuple(func(*prepared), "outputs", "jacobian")
    zeros_like = _C._functions["zeros_like"]
    columns = [[[] for _ in inputs] for _ in outputs]
    for j, inp in enumerate(inputs):
        for k in range(inp.nelement()):
            v = [zeros_like(t) for t in inputs]
            v[j].view(-1)[k] = 1
            col = _jvp_trick(outputs, prepared, tuple(v), False, False)
            for i in range(len(outputs)):
                columns[i][j].append(col[i].detach())
    from .. import stack
    # lists, not tuples, as PyTorch's forward mode gives
    result = [[stack(cols, -1).reshape(tuple(out.shape) + tuple(inp.shape)) if cols
               else _C._functions["zeros"](tuple(out.shape) + tuple(inp.shape), dtype=out.dtype)
               for cols, inp in zip(columns[i], inputs)]
              for i, out in enumerate(outputs)]
    return _unwrap2(result, out_tuple, in_tuple)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar func at inputs: for each pair of inputs a tensor of shape
    input_i.shape + input_j.shape."""
    in_tuple, inputs = _tensor_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def scalar_func(*inp):
        out = func(*inp)
        out_tuple, outs = _tensor_tuple(out, "outputs of the user-provided function",
                                        "hessian")
        _strict_requires_grad(outs, "outputs", strict)
        if out_tuple:
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.nelement() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        return out.squeeze()

    def gradient(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(scalar_func, inp, create_graph=True)
        _strict_requires_grad(jac, "jacobian", strict)
        return jac

    res = jacobian(gradient, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _unwrap2(res, in_tuple, in_tuple)


def _scalar_output(func, inputs, fn_name, strict):
    out_tuple, outputs = _run(func, inputs, fn_name, strict)
    if out_tuple:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                           "contain a single element")
    return outputs


def _gradient_of_scalar(func, inputs, v, fn_name, create_graph, strict):
    """(in_tuple, inputs, v, outputs, gradient with a graph) for vhp and hvp; call with grad
    enabled."""
    in_tuple, inputs = _tensor_tuple(inputs, "inputs", fn_name)
    inputs = _prepare(inputs, create_graph, need_graph=True)
    v = _vector(v, inputs, in_tuple, fn_name, create_graph, _V_NONE_INPUT)
    outputs = _scalar_output(func, inputs, fn_name, strict)
    jac = _grad(outputs, inputs, create_graph=True)
    _strict_requires_grad(jac, "jacobian", strict)
    return in_tuple, inputs, v, outputs, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a scalar func."""
    with enable_grad():
        in_tuple, inputs, v, outputs, jac = _gradient_of_scalar(func, inputs, v, "vhp",
                                                                create_graph, strict)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        res = _zeros_for_none(_grad(jac, inputs, v, create_graph=create_graph), inputs,
                              strict, create_graph, "double_back")
    return (_finish(outputs, create_graph)[0], _unwrap(_finish(res, create_graph), in_tuple))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a scalar func (double-backward trick)."""
    zeros_like = _C._functions["zeros_like"]
    with enable_grad():
        in_tuple, inputs, v, outputs, jac = _gradient_of_scalar(func, inputs, v, "hvp",
                                                                create_graph, strict)
        us = tuple(zeros_like(t).requires_grad_(True) for t in inputs)
        double_back = _grad(jac, inputs, us, create_graph=True)
        _strict_requires_grad(jac, "hessian", strict)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        res = _zeros_for_none(_grad(double_back, us, v, create_graph=create_graph), inputs,
                              strict, create_graph, "double_back_trick")
    return (_finish(outputs, create_graph)[0], _unwrap(_finish(res, create_graph), in_tuple))
