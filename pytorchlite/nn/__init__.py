"""pytorchlite.nn: neural-network building blocks.  Mirrors torch/nn/__init__.py."""
from . import functional  # noqa: F401
