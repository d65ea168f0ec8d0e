"""pytorchlite.cuda: device queries (the CUDA backend is optional at build time)."""
from . import _C


def is_available():
    """True when pytorchlite was built with nvcc and a CUDA device is visible."""
    return _C._cuda_device_count() > 0


def device_count():
    return _C._cuda_device_count()


def is_built():
    return bool(_C._config()["cuda_built"])
