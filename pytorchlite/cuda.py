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


def manual_seed(seed):
    """Seeds the current CUDA device's generator when CUDA is used; without a CUDA backend
    there is nothing to seed and, as in PyTorch, the call does nothing (programs call it
    unconditionally)."""
    int(seed)


def manual_seed_all(seed):
    """manual_seed for every device: nothing to seed without a CUDA backend."""
    int(seed)


def seed():
    """Seeds the current device with a random number: nothing to seed without CUDA."""


def seed_all():
    """seed() for every device: nothing to seed without CUDA."""


def initial_seed():
    """The current device's seed: initialises CUDA, so without it raises the no-CUDA error."""
    _lazy_init()


def get_rng_state(device="cuda"):
    _lazy_init()


def set_rng_state(new_state, device="cuda"):
    _lazy_init()


def get_rng_state_all():
    _lazy_init()


def set_rng_state_all(new_states):
    _lazy_init()


from .amp import cuda_aliases as amp  # noqa: E402  (torch.cuda.amp, deprecated spellings)
