"""pytorchlite.cuda.random: the CUDA devices' generators (torch/cuda/random.py).

Each device's default generator exists before CUDA is initialised (Note [CUDA generators] in
src/aten/generator.h), so the seeding functions seed it at once where PyTorch queues the
call until initialisation (same end state); the readers initialise CUDA first, as PyTorch's,
and so raise without a device."""
from . import _current_index, _defaults, _generator, _lazy_init, current_device, device_count
from . import is_initialized
from .. import _C

__all__ = ["get_rng_state", "get_rng_state_all", "set_rng_state", "set_rng_state_all",
           "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed"]


def _index_of(device):
    """The device index that a get/set_rng_state `device` (an int, a "cuda[:N]" string or a
    device) names; no index means the current device."""
    if isinstance(device, str):
        device = _C.device(device)
    elif isinstance(device, int):
        device = _C.device("cuda", device)
    return _current_index() if device.index is None else device.index


def manual_seed(seed):
    """Seeds the current CUDA device's generator; does nothing harmful without CUDA, as in
    PyTorch (programs call it unconditionally)."""
    _generator(_current_index()).manual_seed(int(seed))


def manual_seed_all(seed):
    """Seeds every CUDA device's generator."""
    _C._cuda_manual_seed_all(int(seed))


def seed():
    """Seeds the current device's generator from the operating system's entropy."""
    _generator(_current_index()).seed()


def seed_all():
    """Seeds every device's generator with one seed from the operating system's entropy."""
    gen = _generator(0)
    gen.seed()
    manual_seed_all(gen.initial_seed())


def initial_seed():
    """The current device's seed: initialises CUDA, so without it raises the no-CUDA error."""
    _lazy_init()
    return _defaults()[current_device()].initial_seed()


def get_rng_state(device="cuda"):
    """The device's generator state, a uint8 tensor of 16 bytes (seed, offset): initialises
    CUDA."""
    _lazy_init()
    return _defaults()[_index_of(device)].get_state()


def set_rng_state(new_state, device="cuda"):
    """Restores a state returned by get_rng_state (8 bytes: a seed, offset 0)."""
    index = _index_of(device)
    gen = _defaults()[index] if is_initialized() else _generator(index)
    gen.set_state(new_state)


def get_rng_state_all():
    """The states of every device's generator ([] without a device)."""
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states):
    """set_rng_state for device 0, 1, ... in turn."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)
