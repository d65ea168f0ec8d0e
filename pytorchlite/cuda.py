"""pytorchlite.cuda: device queries (the CUDA backend is optional at build time)."""
from . import _C


def is_available():
    """True when a CUDA backend has registered its allocator and kernels and a CUDA device is
    visible (Note [CUDA availability] in src/cuda/lazy_init.c).  No backend exists yet, so
    this is False even on a machine with a GPU; __config__.show() says why."""
    return _C._cuda_is_available()


def device_count():
    """The CUDA devices pytorchlite can use: 0 whenever is_available() is False."""
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
