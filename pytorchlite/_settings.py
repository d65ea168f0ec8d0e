"""The process-wide switches of the torch namespace that torch/__init__.py defines: warn-always,
the deterministic debug mode, the inter-op thread count, the default tensor type, the
anomaly-mode switch and flushing denormals.  Each records its setting and has PyTorch's checks; what a switch changes
elsewhere is said next to it."""
import os
import warnings

from . import _C
from . import backends

__all__ = [
    "set_warn_always", "is_warn_always_enabled", "set_deterministic_debug_mode",
    "get_deterministic_debug_mode", "set_num_interop_threads", "get_num_interop_threads",
    "set_default_tensor_type", "set_anomaly_enabled", "is_anomaly_enabled",
    "is_anomaly_check_nan_enabled", "set_flush_denormal",
]

_warn_always = False


def set_warn_always(b):
    """Records whether warnings PyTorch gives once should be given every time (pytorchlite's
    once-only warnings go through Python's warnings module, whose filters decide)."""
    global _warn_always
    _warn_always = bool(b)


def is_warn_always_enabled():
    return _warn_always


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode):
    """0 / "default": deterministic algorithms off; 1 / "warn": on, warning only; 2 / "error":
    on (torch.use_deterministic_algorithms)."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, "
                               f"`error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    backends.use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    if not backends.are_deterministic_algorithms_enabled():
        return 0
    return 1 if backends.is_deterministic_algorithms_warn_only_enabled() else 2


_interop_threads = None


def set_num_interop_threads(nthreads):
    """Records the size of the inter-op pool, once, as PyTorch allows.  pytorchlite runs
    independent ops on the calling thread (it has no inter-op pool); intra-op threads are
    set_num_threads."""
    global _interop_threads
    if not isinstance(nthreads, int) or isinstance(nthreads, bool) or nthreads <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    if _interop_threads is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work "
                           "has started or set_num_interop_threads called")
    _interop_threads = nthreads


def get_num_interop_threads():
    """The recorded inter-op thread count; by default the number of CPUs, as PyTorch's."""
    return _interop_threads if _interop_threads is not None else (os.cpu_count() or 1)


def set_flush_denormal(mode):
    """Flushes denormal floats to zero (mode True) or stops (False) on the calling thread, and
    says whether the CPU allows it (x86-64 with SSE3, aarch64).  Note [Flushing denormals]: as
    PyTorch's, the switch is the calling thread's floating-point control register, so kernels
    that a large tensor splits over the intra-op pool's other threads still see denormals;
    results on one thread (set_num_threads(1), or tensors below the split sizes) flush."""
    if type(mode) is not bool:
        raise RuntimeError(f"flush_denormal expects a bool, but got {type(mode).__name__}")
    return _C._set_flush_denormal(mode)


def set_default_tensor_type(t):
    """Deprecated in PyTorch: sets the default dtype from a tensor type (torch.DoubleTensor or
    "torch.DoubleTensor"), which must be a floating-point one."""
    from ._tensor_types import _DTYPE_BY_NAME
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    name = t if isinstance(t, str) else getattr(t, "__name__", None)
    name = name[len("torch."):] if isinstance(name, str) and name.startswith("torch.") else name
    if name not in _DTYPE_BY_NAME:
        raise TypeError(f"invalid type: '{t}'")
    dtype = _DTYPE_BY_NAME[name]
    if not dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _C.set_default_dtype(dtype)


def set_anomaly_enabled(enabled, check_nan=True):
    """torch.autograd.set_detect_anomaly's switch, without the context manager."""
    _C._set_anomaly_enabled(bool(enabled), bool(check_nan))


is_anomaly_enabled = _C.is_anomaly_enabled
is_anomaly_check_nan_enabled = _C.is_anomaly_check_nan_enabled
