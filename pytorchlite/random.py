"""pytorchlite.random: the default generator's seed and state.  Mirrors torch/random.py.

The default generator is a Philox4x32-10 stream (seed, offset); see Note [Philox streams]
in src/aten/generator.h.  A forked child keeps its parent's state, as in PyTorch, so
processes that fork (DataLoader workers) must reseed to get different numbers.
"""
import contextlib

from ._C import Generator, default_generator

__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed",
           "manual_seed", "seed", "set_rng_state"]


def manual_seed(seed):
    """Seeds the default generator and every CUDA device's (any int in [-2**63, 2**64), as
    PyTorch does: Note [CUDA generators] in src/aten/generator.h); returns the CPU one."""
    from . import cuda
    seed = int(seed)
    if not cuda._is_in_bad_fork():
        cuda.manual_seed_all(seed)
    return default_generator.manual_seed(seed)


def seed():
    """Seeds the default generator from the operating system's entropy, and every CUDA
    device's with the same seed; returns the seed."""
    from . import cuda
    s = default_generator.seed()
    if not cuda._is_in_bad_fork():
        cuda.manual_seed_all(s)
    return s


def initial_seed():
    """The seed the default generator was last seeded with."""
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state as a uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Restores a state returned by get_rng_state()."""
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, device_type="cuda"):
    """Restores the default generator's state on exit, and those of the CUDA devices in
    `devices` (all of them for None: none without a device)."""
    from . import cuda
    if device_type != "cuda":
        raise RuntimeError(f"torch has no module of `{device_type}`, you should register a "
                           "module by `torch._register_device_module`.")
    if not enabled:
        yield
        return
    devices = list(range(cuda.device_count())) if devices is None else list(devices)
    state = get_rng_state()
    device_states = [cuda.get_rng_state(d) for d in devices]
    try:
        yield
    finally:
        set_rng_state(state)
        for d, device_state in zip(devices, device_states):
            cuda.set_rng_state(device_state, d)
