"""pytorchlite.utils (torch/utils): data loading lives in utils.data."""
from . import data  # noqa: F401
from . import checkpoint  # noqa: F401
from . import dlpack  # noqa: F401
from . import model_zoo  # noqa: F401
from ._torch_alias import as_torch  # noqa: F401
