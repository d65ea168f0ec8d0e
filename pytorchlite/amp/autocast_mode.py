"""torch.autocast (torch/amp/autocast_mode.py).

The casting itself happens in C, in the AutocastCPU dispatch key's fallback (Note [Autocast]
in src/aten/autocast.h); this module keeps PyTorch's Python surface: the context manager and
decorator, and the per-device enabled flag and dtype.  "cpu" really autocasts; "cuda" keeps
its flag and dtype and disables itself with PyTorch's warning where CUDA is unavailable."""
import collections.abc
import functools
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


def set_autocast_enabled(device_type, enabled):
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
        _C._set_autocast_state(self.device, bool(self._enabled), self.fast_dtype)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
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
