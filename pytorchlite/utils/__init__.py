"""pytorchlite.utils (torch/utils): data loading lives in utils.data."""
from . import data  # noqa: F401
