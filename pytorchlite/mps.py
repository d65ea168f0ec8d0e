"""torch.mps (Apple GPUs): pytorchlite has no MPS backend, so this is PyTorch's build without
it: is_available() is False, device_count() 0, manual_seed does nothing, and every call that
needs the backend raises PyTorch's RuntimeError("Cannot execute <call>() without MPS
backend.")."""

__all__ = ["Event", "compile_shader", "current_allocated_memory", "device_count",
           "driver_allocated_memory", "empty_cache", "get_rng_state", "is_available",
           "manual_seed", "recommended_max_memory", "seed", "set_per_process_memory_fraction",
           "set_rng_state", "synchronize"]


def _without_backend(call):
    raise RuntimeError(f"Cannot execute {call}() without MPS backend.")


def is_available():
    return False


def device_count():
    return 0


def manual_seed(seed):
    """Nothing to seed without the backend (PyTorch's)."""


def synchronize():
    _without_backend("deviceSynchronize")


def empty_cache():
    _without_backend("emptyCache")


def seed():
    _without_backend("getDefaultGenerator")


def get_rng_state(device="mps"):
    _without_backend("getDefaultGenerator")


def set_rng_state(new_state, device="mps"):
    _without_backend("getDefaultGenerator")


def current_allocated_memory():
    _without_backend("getCurrentAllocatedMemory")


def driver_allocated_memory():
    _without_backend("getDriverAllocatedMemory")


def recommended_max_memory():
    _without_backend("getRecommendedMaxMemory")


def set_per_process_memory_fraction(fraction):
    _without_backend("setMemoryFraction")


def compile_shader(source):
    raise RuntimeError("MPS is not available")


class Event:
    """An MPS event: creating one needs the backend."""

    def __init__(self, enable_timing=False):
        _without_backend("acquireEvent")
