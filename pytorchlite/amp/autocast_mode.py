"""torch.autocast (torch/amp/autocast_mode.py).

The casting itself happens in C, in the AutocastCPU dispatch key's fallback (Note [Autocast]
in src/aten/autocast.h); this module keeps PyTorch's Python surface: the context manager and
decorator, and the per-device enabled flag and dtype.  "cpu" really autocasts; "cuda" keeps
its flag and dtype and disables itself with PyTorch's warning where CUDA is unavailable."""
import collections.abc
import functools
import threading
import warnings

from .. import _C

_DEVICE_TYPES = ("cpu", "cuda")
_SUPPORTED_DTYPES = (_C.bfloat16, _C.float16)


def is_autocast_available(device_type):
    """Whether autocast supports device_type ('cpu' and 'cuda'); an unknown device string
    raises as torch.device does."""
    _C.device(device_type)
    return device_type in _DEVICE_TYPES


def _check(device_type):
    if not is_autocast_available(device_type):
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")


def is_autocast_enabled(device_type="cuda"):
    """Whether autocast is on for device_type in this thread."""
    _C.device(device_type)
    return device_type in _DEVICE_TYPES and _C._autocast_state(device_type)[0]


_NOT_GIVEN = object()


def set_autocast_enabled(device_type, enabled=_NOT_GIVEN):
    """set_autocast_enabled(device_type, enabled), or PyTorch's older set_autocast_enabled(
    enabled) for CUDA."""
    position = 2
    if enabled is _NOT_GIVEN:
        device_type, enabled, position = "cuda", device_type, 1
    if not isinstance(enabled, bool):
        raise TypeError(f"set_autocast_enabled(): argument 'enabled' (position {position}) must "
                        f"be bool, not {type(enabled).__name__}")
    _check(device_type)
    _C._set_autocast_state(device_type, bool(enabled), _C._autocast_state(device_type)[1])


def get_autocast_dtype(device_type):
    """The dtype autocast lowers to on device_type (bfloat16 on the CPU, float16 on CUDA,
    unless changed)."""
    _check(device_type)
    return _C._autocast_state(device_type)[1]


def set_autocast_dtype(device_type, dtype):
    _check(device_type)
    _C._set_autocast_state(device_type, _C._autocast_state(device_type)[0], dtype)


def _deprecated(old, new):
    warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def _require_bool(value):
    if not isinstance(value, bool):
        raise TypeError(f"enabled must be a bool (got {type(value).__name__})")


def _require_dtype(value):
    if not isinstance(value, _C.dtype):
        raise TypeError(f"dtype must be a torch.dtype (got {type(value).__name__})")


# PyTorch's older per-device entry points (torch.set_autocast_cpu_enabled, ...): each is
# the device_type form above for "cpu" or "cuda" ("gpu"), with PyTorch's DeprecationWarning


def set_autocast_cpu_enabled(enabled):
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    _require_bool(enabled)
    set_autocast_enabled("cpu", enabled)


def is_autocast_cpu_enabled():
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def get_autocast_cpu_dtype():
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype):
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    _require_dtype(dtype)
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype):
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    _require_dtype(dtype)
    set_autocast_dtype("cuda", dtype)


class _ThreadAutocast(threading.local):
    """The per-thread autocast region depth and cache flag (Note [Autocast]: pytorchlite
    casts without a cache, so the flag is kept for PyTorch's API and changes nothing)."""
    nesting = 0
    cache_enabled = True


_thread = _ThreadAutocast()


def autocast_increment_nesting():
    """One more autocast region entered on this thread; returns the new depth."""
    _thread.nesting += 1
    return _thread.nesting


def autocast_decrement_nesting():
    """One autocast region left on this thread; returns the new depth."""
    _thread.nesting -= 1
    return _thread.nesting


def is_autocast_cache_enabled():
    return _thread.cache_enabled


def set_autocast_cache_enabled(enabled):
    _require_bool(enabled)
    _thread.cache_enabled = enabled


def clear_autocast_cache():
    """Empties the autocast cache: pytorchlite keeps none (Note [Autocast])."""


class autocast:
    """autocast(device_type, dtype=None, enabled=True, cache_enabled=None): a context manager
    and decorator in whose region the listed operators run in lower precision (Note
    [Autocast]).  cache_enabled is accepted and kept; pytorchlite casts without a cache."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        self._cache_enabled = True if cache_enabled is None else cache_enabled
        if enabled:
            if device_type == "cuda":
                from .. import cuda
                if not cuda.is_available():
                    warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                                  "autocast.", stacklevel=2)
                    enabled = False
            elif self.fast_dtype not in _SUPPORTED_DTYPES:
                name = device_type.upper()
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. "
                              f"Disabling autocast.\n{name} Autocast only supports dtypes of "
                              + ", ".join(map(str, _SUPPORTED_DTYPES)) + " currently.",
                              stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        self.prev = _C._autocast_state(self.device)
        self.prev_cache = _thread.cache_enabled
        _C._set_autocast_state(self.device, bool(self._enabled), self.fast_dtype)
        _thread.cache_enabled = bool(self._cache_enabled)
        autocast_increment_nesting()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        _thread.cache_enabled = self.prev_cache
        _C._set_autocast_state(self.device, *self.prev)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return decorate_autocast


def _cast_inputs(value, device_type, dtype):
    """value with every floating tensor of device_type (float64 aside) cast to dtype, through
    lists, tuples, mappings and other iterables, as autocast's custom_fwd casts them."""
    if isinstance(value, _C.TensorBase):
        eligible = (value.is_floating_point() and value.device.type == device_type
                    and value.dtype is not _C.float64)
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes)) or type(value).__name__ == "ndarray":
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast_inputs(k, device_type, dtype): _cast_inputs(v, device_type, dtype)
                for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable):
        items = (_cast_inputs(v, device_type, dtype) for v in value)
        return type(value)(items) if isinstance(value, (list, tuple)) else items
    return value


def _check_device_type(device_type):
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorates a custom autograd.Function's forward for autocast regions: without
    cast_inputs forward runs in the region as it is (and backward, through custom_bwd, in the
    same autocast state); with cast_inputs its floating inputs of device_type are cast to that
    dtype and forward runs with autocast off."""
    _check_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        inside = is_autocast_enabled(device_type)
        if cast_inputs is None or not inside:
            ctx._fwd_used_autocast = inside if cast_inputs is None else False
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        with autocast(device_type=device_type, enabled=False):
            return fwd(*_cast_inputs(args, device_type, cast_inputs),
                       **_cast_inputs(kwargs, device_type, cast_inputs))
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorates the matching backward: it runs in the autocast state its forward ran in."""
    _check_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast,
                      dtype=ctx._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
