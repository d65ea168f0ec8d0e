"""Grad mode: no_grad, enable_grad, set_grad_enabled, inference_mode, and the engine's switches
set_multithreading_enabled and enforce_grad_layout_policy (torch/autograd/grad_mode.py).

Grad mode and inference mode are thread-local state of the C core (src/c10/tls.h), their one
home: turning grad mode off excludes the Autograd dispatch key, so ops skip graph recording
entirely (Note [Autograd key]); inference mode also marks the tensors made inside it as
inference tensors (Note [Inference tensors] in src/c10/tensor_impl.h)."""
import functools
import threading

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


_switches = threading.local()   # the engine switches below, per thread as in PyTorch


class _EngineSwitch(_DecoratorContextManager):
    """Sets the thread's switch `_name` to mode now; as a context manager, restores it on
    exit (PyTorch's function-or-context-manager form)."""
    _name = None

    def __init__(self, mode=True):
        self.prev = getattr(_switches, self._name, True)
        self.mode = bool(mode)
        setattr(_switches, self._name, self.mode)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        setattr(_switches, self._name, self.prev)
        return False

    def clone(self):
        return self.__class__(self.mode)


class set_multithreading_enabled(_EngineSwitch):
    """set_multithreading_enabled(mode): whether backward may run on the engine's device
    threads.  pytorchlite's engine always runs backward on the calling thread, which is what
    mode=False asks for, so the switch is only remembered (is_multithreading_enabled)."""
    _name = "multithreading"


class enforce_grad_layout_policy(_EngineSwitch):
    """enforce_grad_layout_policy(enable=True): PyTorch's permission (enable=False) to keep a
    stolen gradient whose strides differ from its parameter's, and to skip the layout
    warning.  The permission is optional, so obeying the contract always, as pytorchlite's
    engine does, is correct under either setting; the switch is only remembered."""
    _name = "grad_layout_policy"


def is_multithreading_enabled():
    return getattr(_switches, "multithreading", True)


def is_view_replay_enabled():
    """False, PyTorch's default: pytorchlite has no view-replay mode."""
    return False
