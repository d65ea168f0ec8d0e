"""TorchDispatchMode: see, and replace, every operator call that reaches the kernels; and
the Python key's handler, which also serves tensor subclasses that define __torch_dispatch__.

Mirrors torch/utils/_python_dispatch.py for modes.  A mode's __torch_dispatch__(func, types,
args, kwargs) runs for each call that reaches the Python dispatch key, below autograd (so
the backward's operators come through too, and composites arrive decomposed); func is an
OpOverload such as torch.ops.aten.add.Tensor, and calling func(*args, **kwargs) inside it
reaches the next mode out, or the kernels.  The stack of modes is per thread.  See Note
[Python dispatch key] in src/python/python_dispatch.c.
"""
import contextlib
import threading

from .. import _C, _ops_namespace


class _ModeStack(threading.local):
    def __init__(self):
        self.modes = []


_stack = _ModeStack()


def _push_mode(mode):
    """Pushes mode as the innermost one of this thread."""
    _stack.modes.append(mode)
    if len(_stack.modes) == 1:
        _C._set_python_dispatch(True)


def _pop_mode(k=None):
    """Pops and returns this thread's innermost mode."""
    if not _stack.modes:
        raise RuntimeError("trying to pop from empty mode stack")
    mode = _stack.modes.pop()
    if not _stack.modes:
        _C._set_python_dispatch(False)
    return mode


def _get_current_dispatch_mode():
    """This thread's innermost mode, or None."""
    return _stack.modes[-1] if _stack.modes else None


def _get_current_dispatch_mode_stack():
    """This thread's modes, outermost first."""
    return list(_stack.modes)


def _len_torch_dispatch_stack():
    return len(_stack.modes)


def is_in_torch_dispatch_mode():
    return bool(_stack.modes)


@contextlib.contextmanager
def _pop_mode_temporarily(k=None):
    """Pops the innermost mode for the block and yields it; pushes it back on exit."""
    old = _pop_mode(k)
    try:
        yield old
    finally:
        _push_mode(old)


@contextlib.contextmanager
def _disable_current_modes():
    """Pops every mode of this thread for the block; yields them, innermost first."""
    old = [_pop_mode() for _ in range(len(_stack.modes))]
    try:
        yield old
    finally:
        for mode in reversed(old):
            _push_mode(mode)


def _append_overloaded(types, t):
    """Adds t to the overloaded types: once, before the first of its bases, else last."""
    if t in types:
        return
    for i, u in enumerate(types):
        if issubclass(t, u):
            types.insert(i, t)
            return
    types.append(t)


def _overloaded_types(args, kwargs):
    """The types of the tensors (in lists and tuples too) that carry the Python key, as
    PyTorch orders them: subclasses before their bases, else left to right."""
    types = []
    todo = list(args) + list(kwargs.values())
    while todo:
        a = todo.pop(0)
        if isinstance(a, (list, tuple)):
            todo[:0] = a
        elif (isinstance(a, _C.TensorBase)
              and getattr(type(a), "__torch_dispatch__", None) is not None):
            _append_overloaded(types, type(a))
    return types


def _dispatch(qualname, /, *args, **kwargs):
    """The Python key's handler: the innermost mode's __torch_dispatch__, with it popped;
    then, while each returns NotImplemented, the overloaded types' (Note [Python dispatch
    key] in src/python/python_dispatch.c)."""
    func = _ops_namespace.overload(qualname)
    types = _overloaded_types(args, kwargs)
    tried = []
    if _stack.modes:
        with _pop_mode_temporarily() as mode:
            ret = mode.__torch_dispatch__(func, tuple(types), args, kwargs)
        if ret is not NotImplemented:
            return ret
        tried.append(f"  - mode object {mode!r}\n")
    for t in types:
        ret = t.__torch_dispatch__(func, tuple(types), args, kwargs)
        if ret is not NotImplemented:
            return ret
        tried.append(f"  - tensor subclass {t}\n")
    raise TypeError(f"Multiple dispatch failed for 'torch._ops.{func}'; all __torch_dispatch__ "
                    f"handlers returned NotImplemented:\n\n{''.join(tried)}\nFor more "
                    "information, try re-running with TORCH_LOGS=not_implemented")


_C._set_dispatch_mode_handler(_dispatch)


class TorchDispatchMode:
    """Base class of dispatch modes: override __torch_dispatch__ and enter with `with`."""

    def __init__(self, _dispatch_key=None):
        if _dispatch_key is not None:
            raise NotImplementedError(
                "TorchDispatchMode(_dispatch_key=...): pytorchlite's modes run at the Python "
                "key only")

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError()

    def __enter__(self):
        _push_mode(self)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        _pop_mode()

    @classmethod
    def push(cls, *args, **kwargs):
        return cls(*args, **kwargs)

    @classmethod
    def is_infra_mode(cls):
        return False


# ---- wrapper subclasses that flatten: the protocol PyTorch's tracing and utilities read ----

def _has_traceable_wrapper_subclass_protocol(t):
    return hasattr(t, "__tensor_flatten__") and hasattr(t, "__tensor_unflatten__")


def is_traceable_wrapper_subclass(t):
    """Whether t is a tensor subclass with __tensor_flatten__ (-> (attribute names of its
    inner tensors, metadata)) and __tensor_unflatten__(inner_tensors, metadata, outer_size,
    outer_stride) (-> an equivalent instance), PyTorch's TraceableWrapperSubclass."""
    from .._tensor import Tensor
    return (isinstance(t, Tensor) and type(t) is not Tensor
            and _has_traceable_wrapper_subclass_protocol(t))


def is_traceable_wrapper_subclass_type(t):
    """is_traceable_wrapper_subclass for a type."""
    from .._tensor import Tensor
    return (issubclass(t, Tensor) and t is not Tensor
            and _has_traceable_wrapper_subclass_protocol(t))


def transform_subclass(t, callback, outer_size=None, outer_stride=None):
    """A fresh instance of t's traceable wrapper subclass whose inner tensors are
    callback(name, inner) of t's, rebuilt through __tensor_unflatten__ with outer_size and
    outer_stride (t's by default), which the result must have."""
    outer_size = outer_size if outer_size is not None else t.size()
    outer_stride = outer_stride if outer_stride is not None else t.stride()
    attrs, ctx = t.__tensor_flatten__()
    inner = {attr: callback(attr, getattr(t, attr)) for attr in attrs}
    sub = type(t).__tensor_unflatten__(inner, ctx, outer_size, outer_stride)
    if sub.shape != outer_size:
        raise AssertionError(
            f"Expected return value from {type(t)}__tensor_unflatten__() to have "
            f"shape equal to {outer_size}, but got: {sub.shape}")
    if sub.stride() != outer_stride:
        raise AssertionError(
            f"Expected return value from {type(t)}__tensor_unflatten__() to have "
            f"stride equal to {outer_stride}, but got: {sub.stride()}")
    return sub


def _write_alias(arg):
    """'a' of an argument or return spelled Tensor(a!), else None."""
    spelled = arg.type
    return spelled[spelled.index("(") + 1:spelled.index("!")] if "!" in spelled else None


def return_and_correct_aliasing(func, args, kwargs, out):
    """What a wrapper's __torch_dispatch__ returns for func: out, except that a return func
    writes in place (self of add_, out= of mul.out) is the argument it aliases, as in
    PyTorch.  PyTorch also points a view's wrapper at its base's storage and redoes an
    in-place view op's metadata change on the wrapper; a pytorchlite wrapper has no storage
    of its own and keeps its geometry (see docs/handbook/tensor-subclasses.md)."""
    schema = func._schema
    aliases = [_write_alias(r) for r in schema.returns]
    if not any(aliases):
        return out

    def argument(alias):
        for i, a in enumerate(schema.arguments):
            if _write_alias(a) == alias:
                return kwargs[a.name] if a.name in (kwargs or {}) else args[i]
        raise AssertionError("Expected exactly one argument index for the given output alias")

    if len(aliases) == 1:
        return argument(aliases[0])
    return type(out)(argument(a) for a in aliases)
