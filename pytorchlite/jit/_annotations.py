"""What eager model code says to TorchScript (torch/jit/_script.py, torch/_jit_internal.py):
markers that do nothing when the code runs in Python and that jit.script reads when it
compiles (Note [Scripting] in _script.py).

- `is_scripting()` is False in Python and the constant True inside a scripted function, so
  `if not torch.jit.is_scripting():` keeps a Python-only path out of the compiled graph.
- `is_tracing()` is True while jit.trace runs the function.
- `@ignore` and `@unused` leave a function or method to Python: scripting a call of an
  `unused` one compiles to a raise (PyTorch's), and of an `ignore` one is refused with a
  clear error (PyTorch calls back into Python there; a pytorchlite graph holds operators
  only).  `@export` marks a method to compile besides forward (accepted; only forward is
  compiled here).
- `annotate(type, value)` and `Attribute(value, type)` return value; `Final` is typing's;
  `interface` returns the class.
- `fork(fn, *args)` runs fn now and returns a completed Future; `wait(future)` its value.
"""
import threading
import typing

Final = typing.Final

_IGNORE = "ignore"
_UNUSED = "unused"
_EXPORT = "export"
_state = threading.local()    # depth: the traces running in this thread (the tracer's key
                              # is the thread's, src/python/tracer.c)


def is_scripting():
    """False when the code runs in Python; True in the graph jit.script compiles."""
    return False


def is_tracing():
    """True while jit.trace records the function that calls it (in this thread)."""
    return getattr(_state, "depth", 0) > 0


def _tracing(step):
    """jit.trace entering (1) or leaving (-1) a recording in this thread."""
    _state.depth = getattr(_state, "depth", 0) + step


def _mark(fn, modifier):
    fn._torchscript_modifier = modifier
    return fn


def ignore(drop=False, **kwargs):
    """Leaves the decorated function to Python (`@ignore` or `@ignore(drop=True)`, the latter
    as `@unused`)."""
    if callable(drop):
        return _mark(drop, _IGNORE)
    drop = kwargs.pop("drop_on_export", drop)
    if kwargs:
        raise TypeError(f"ignore() got an unexpected keyword argument "
                        f"'{next(iter(kwargs))}'")
    return lambda fn: _mark(fn, _UNUSED if drop else _IGNORE)


def unused(fn):
    """Leaves the decorated function to Python; a scripted call of it raises."""
    if isinstance(fn, property):
        _mark(fn.fget, _UNUSED)
        return fn
    return _mark(fn, _UNUSED)


def export(fn):
    """Marks a method to compile besides forward."""
    return _mark(fn, _EXPORT)


def modifier(fn):
    """The marker @ignore / @unused / @export put on fn, or None."""
    return getattr(fn, "_torchscript_modifier", None)


def annotate(the_type, the_value):
    """the_value: the type is for jit.script."""
    return the_value


def Attribute(value, type):  # noqa: A002 - PyTorch's parameter name
    """value: the type is for jit.script."""
    return value


def interface(obj):
    """obj: TorchScript's interface types are checked structurally here."""
    return obj


def fork(func, *args, **kwargs):
    """A Future holding func(*args, **kwargs), run now (jit.fork's asynchronous task)."""
    from ..futures import Future
    fut = Future()
    fut.set_result(func(*args, **kwargs))
    return fut


def wait(future):
    """The value of a Future from fork."""
    return future.wait()
