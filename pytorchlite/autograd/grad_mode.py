"""Grad mode: no_grad, enable_grad, set_grad_enabled, inference_mode (torch/autograd/grad_mode.py).

Grad mode and inference mode are thread-local state of the C core (src/c10/tls.h), their one
home: turning grad mode off excludes the Autograd dispatch key, so ops skip graph recording
entirely (Note [Autograd key]); inference mode also marks the tensors made inside it as
inference tensors (Note [Inference tensors] in src/c10/tensor_impl.h)."""
import functools

from .. import _C

is_grad_enabled = _C.is_grad_enabled
is_inference_mode_enabled = _C._is_inference_mode_enabled


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
    """inference_mode(mode=True): inside, grad mode is off and new tensors are inference
    tensors (no version counter, never saved for backward, not modifiable in place outside
    the mode); inference_mode(False) turns it off within an enabled block.  Works as a
    decorator, called or bare."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __init__(self, mode=True):
        self.mode = mode

    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        self.prev_inference = _C._is_inference_mode_enabled()
        _C._set_inference_mode(self.mode)

    def __exit__(self, *exc):
        _C._set_inference_mode(self.prev_inference)
        _C._set_grad_enabled(self.prev)
        return False

    def clone(self):
        return self.__class__(self.mode)
