"""pytorchlite.amp: automatic mixed precision (torch/amp): autocast and GradScaler."""
from .autocast_mode import (  # noqa: F401
    autocast, get_autocast_dtype, is_autocast_available, is_autocast_enabled,
    set_autocast_dtype, set_autocast_enabled,
)
from .grad_scaler import GradScaler  # noqa: F401

__all__ = ["autocast", "GradScaler", "is_autocast_available"]
