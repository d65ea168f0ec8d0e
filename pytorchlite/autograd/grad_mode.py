"""Grad mode: no_grad, enable_grad, set_grad_enabled, inference_mode (torch/autograd/grad_mode.py).

Grad mode is thread-local state of the C core (src/c10/tls.h): turning it off excludes the
Autograd dispatch key, so ops skip graph recording entirely (Note [Autograd key])."""
import functools
import threading

from .. import _C

is_grad_enabled = _C.is_grad_enabled
_state = threading.local()


def is_inference_mode_enabled():
    """True inside an enabled inference_mode block (on this thread)."""
    return getattr(_state, "inference", False)


class _DecoratorContextManager:
    """A context manager that also works as a function decorator (a fresh instance per call)."""

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        return self.__class__()


class _GradModeContext(_DecoratorContextManager):
    """Sets grad mode to the class's _enabled inside the block; restores it on exit."""
    _enabled = False

    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(self._enabled)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)
        return False


class no_grad(_GradModeContext):
    """Disables gradient recording inside the block (or the decorated function)."""
    _enabled = False


class enable_grad(_GradModeContext):
    """Enables gradient recording inside the block, even within no_grad."""
    _enabled = True


class set_grad_enabled(_GradModeContext):
    """set_grad_enabled(mode): sets grad mode now; as a context manager, restores it on exit."""

    def __init__(self, mode):
        self.prev = _C.is_grad_enabled()
        self.mode = bool(mode)
        _C._set_grad_enabled(self.mode)

    def __enter__(self):
        pass

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like no_grad (pytorchlite does not yet keep inference tensors apart)."""

    def __init__(self, mode=True):
        self.mode = mode

    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        self.prev_inference = is_inference_mode_enabled()
        _state.inference = bool(self.mode)
        _C._set_inference_mode(bool(self.mode))
        if self.mode:
            _C._set_grad_enabled(False)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)
        _state.inference = self.prev_inference
        _C._set_inference_mode(self.prev_inference)
        return False

    def clone(self):
        return self.__class__(self.mode)
