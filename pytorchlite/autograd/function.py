"""Custom autograd Functions (torch/autograd/function.py, written afresh).

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * y

    Exp.apply(x)

apply runs forward without recording, then records one graph node named "<Class>Backward"
(src/python/python_function.c) whose backward calls the class's backward.  Saved tensors sit
in the node's saved slots, so modifying one in place is caught as for built-in ops."""
import functools

from .. import _C
from .grad_mode import is_grad_enabled, no_grad


class FunctionCtx:
    """The `ctx` of forward/setup_context/backward."""

    def __init__(self):
        self.to_save = ()
        self.dirty_tensors = ()
        self.non_differentiable = ()
        self.materialize_grads = True
        self.needs_input_grad = ()
        self._state = None

    def save_for_backward(self, *tensors):
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, _C.TensorBase):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} "
                                f"is of type {type(t).__name__}")
        self.to_save = tensors

    @property
    def saved_tensors(self):
        if self._state is None:
            return tuple(self.to_save)
        return _C._function_saved(self._state)

    def mark_dirty(self, *args):
        self.dirty_tensors = args

    def mark_non_differentiable(self, *args):
        self.non_differentiable = args

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


class Function:
    """Base class of custom Functions: subclass it with static forward and backward."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, _C.TensorBase) and a.requires_grad
                                     for a in args)
        with no_grad():
            if cls.setup_context is not Function.setup_context:
                output = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        if not (is_grad_enabled() and any(ctx.needs_input_grad)):
            return output
        outs = output if isinstance(output, tuple) else (output,)
        positions = [k for k, o in enumerate(outs) if isinstance(o, _C.TensorBase)]
        tensors = tuple(outs[k] for k in positions)
        nondiff = {id(t) for t in ctx.non_differentiable}
        ctx._cls = cls
        ctx._nargs = len(args)
        ctx._tensor_inputs = tuple(i for i, a in enumerate(args) if isinstance(a, _C.TensorBase))
        ctx._output_positions = (len(outs), tuple(positions))
        ctx._output_meta = tuple((tuple(t.shape), t.dtype) for t in tensors)
        recorded = _C._function_record(
            ctx, cls.__name__ + "Backward", tuple(args[i] for i in ctx._tensor_inputs), tensors,
            tuple(id(t) not in nondiff for t in tensors), tuple(ctx.dirty_tensors),
            tuple(ctx.to_save))
        # the node holds these now; the ctx keeping outputs would be a cycle through C
        ctx.to_save = ctx.dirty_tensors = ctx.non_differentiable = ()
        outs = list(outs)
        for k, t in zip(positions, recorded):
            outs[k] = t
        return tuple(outs) if isinstance(output, tuple) else outs[0]


def _run_backward(ctx, grads):
    """Called by the node: the gradients of the tensor outputs in, those of the tensor inputs
    out (a tuple with one entry per tensor input)."""
    from .. import zeros
    cls = ctx._cls
    name = cls.__name__ + "Backward"
    nouts, positions = ctx._output_positions
    if ctx.materialize_grads:
        grads = tuple(zeros(shape, dtype=dtype) if g is None else g
                      for g, (shape, dtype) in zip(grads, ctx._output_meta))
    full = [None] * nouts
    for k, g in zip(positions, grads):
        full[k] = g
    result = cls.backward(ctx, *full)
    if not isinstance(result, tuple):
        result = (result,)
    n = ctx._nargs
    if len(result) > n and all(r is None for r in result[n:]):
        result = result[:n]
    if len(result) != n:
        raise RuntimeError(f"function {name} returned an incorrect number of gradients "
                           f"(expected {n}, got {len(result)})")
    inputs = set(ctx._tensor_inputs)
    for i, r in enumerate(result):
        if r is not None and i not in inputs:
            raise RuntimeError(f"function {name} returned a gradient different than None at "
                               f"position {i + 1}, but the corresponding forward input was not "
                               "a Variable")
    return tuple(result[i] for i in ctx._tensor_inputs)


class _DelayedError(Function):
    """Identity whose backward raises: marks the outputs of a once_differentiable backward."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("trying to differentiate twice a function that was marked with "
                           "@once_differentiable")


def once_differentiable(fn):
    """Decorates a backward that is not itself differentiable: it runs under no_grad, and
    differentiating its result (create_graph=True) raises."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not is_grad_enabled():
            return outputs
        if not any(isinstance(a, _C.TensorBase) and a.requires_grad for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        wrapped = tuple(_DelayedError.apply(_requiring(o)) if isinstance(o, _C.TensorBase)
                        else o for o in outs)
        return wrapped[0] if single else wrapped
    return wrapper


def _requiring(t):
    t = t.detach()
    return t.requires_grad_(True) if t.is_floating_point() or t.is_complex() else t


_C._set_function_runner(_run_backward)
