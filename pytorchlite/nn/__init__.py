"""pytorchlite.nn: so far only the functional interface (nn.functional)."""
from . import functional  # noqa: F401
