"""pytorchlite.amp: automatic mixed precision (torch/amp): autocast and GradScaler."""
from .autocast_mode import (  # noqa: F401
    autocast, custom_bwd, custom_fwd, get_autocast_dtype, is_autocast_available,
    is_autocast_enabled, set_autocast_dtype, set_autocast_enabled,
)
from .grad_scaler import GradScaler  # noqa: F401

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]
