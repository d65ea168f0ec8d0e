"""pytorchlite.cuda: device queries (the CUDA backend is optional at build time)."""
from . import _C


def is_available():
    """True when pytorchlite was built with nvcc and a CUDA device is visible."""
    return _C._cuda_device_count() > 0


def device_count():
    return _C._cuda_device_count()


def is_built():
    return bool(_C._config()["cuda_built"])


def init():
    """Initialises CUDA now instead of at first use (raises in a child forked after CUDA was
    initialised: Note [CUDA and fork] in src/cuda/lazy_init.c)."""
    _lazy_init()


def _lazy_init():
    _C._cuda_lazy_init()


def is_initialized():
    return _C._cuda_is_initialized()


def _is_in_bad_fork():
    return _C._cuda_in_bad_fork()


from .amp import cuda_aliases as amp  # noqa: E402  (torch.cuda.amp, deprecated spellings)
