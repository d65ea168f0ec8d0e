"""torch.fx.passes: passes over FX graphs (shape_prop)."""
from . import shape_prop  # noqa: F401
