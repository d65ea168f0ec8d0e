"""torch.cpu.amp: the deprecated spellings of torch.amp.autocast("cpu", ...) and
torch.amp.GradScaler("cpu", ...), with PyTorch's FutureWarning (torch/cpu/amp/)."""
import warnings

from .. import _C
from . import autocast_mode, grad_scaler


def _deprecated(name):
    warnings.warn(f"`torch.cpu.amp.{name}(args...)` is deprecated. Please use "
                  f"`torch.amp.{name}('cpu', args...)` instead.", FutureWarning, stacklevel=3)


class autocast(autocast_mode.autocast):
    """Deprecated: torch.amp.autocast("cpu", ...)."""

    def __init__(self, enabled=True, dtype=_C.bfloat16, cache_enabled=True):
        _deprecated("autocast")
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(grad_scaler.GradScaler):
    """Deprecated: torch.amp.GradScaler("cpu", ...)."""

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        _deprecated("GradScaler")
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)
