"""torch.xpu (Intel GPUs): pytorchlite has no XPU backend, so this is PyTorch's build without
XPU support: is_available() is False, the queries answer 0, False, empty or None, the
seeding calls do nothing (they are queued until a device initialises, which never happens),
and what needs a device raises AssertionError("Torch not compiled with XPU enabled").
Where that build fails by accident (reset_peak_memory_stats' missing binding,
is_current_stream_capturing's dummy class) the same AssertionError is raised."""
from collections import OrderedDict

__all__ = ["Event", "Stream", "StreamContext", "current_device", "current_stream",
           "default_generators", "device", "device_count", "device_of", "empty_cache",
           "get_arch_list", "get_device_capability", "get_device_name",
           "get_device_properties", "get_gencode_flags", "get_rng_state", "get_rng_state_all",
           "init", "initial_seed", "is_available", "is_bf16_supported", "is_initialized",
           "is_tf32_supported", "manual_seed", "manual_seed_all", "max_memory_allocated",
           "max_memory_reserved", "mem_get_info", "memory_allocated", "memory_reserved",
           "memory_stats", "reset_peak_memory_stats", "seed", "seed_all", "set_device",
           "set_rng_state", "set_rng_state_all", "set_stream", "stream", "synchronize",
           "is_current_stream_capturing"]

default_generators = ()


def _not_compiled(*args, **kwargs):
    raise AssertionError("Torch not compiled with XPU enabled")


def is_available():
    return False


def device_count():
    return 0


def is_initialized():
    return False


def is_bf16_supported(including_emulation=True):
    return False


def is_tf32_supported():
    return False


def get_arch_list():
    return []


def get_gencode_flags():
    return ""


def _nothing(*args, **kwargs):
    """The seeding calls and empty_cache: nothing to do without a device."""


def _zero(device=None):
    return 0


def memory_stats(device=None):
    return OrderedDict()


manual_seed = manual_seed_all = seed = seed_all = set_rng_state = _nothing
set_rng_state_all = empty_cache = _nothing
memory_allocated = max_memory_allocated = memory_reserved = max_memory_reserved = _zero
init = current_device = synchronize = initial_seed = get_rng_state = _not_compiled
get_device_name = get_device_properties = get_device_capability = _not_compiled
current_stream = set_device = mem_get_info = _not_compiled
reset_peak_memory_stats = is_current_stream_capturing = _not_compiled


def get_rng_state_all():
    return []


class device:
    """`with torch.xpu.device(i):` raises NotImplementedError on entry, as PyTorch's build
    without XPU."""

    def __init__(self, device):
        self.idx = device

    def __enter__(self):
        raise NotImplementedError("PyTorch was compiled without XPU support")

    def __exit__(self, *exc):
        return False


class device_of(device):
    def __init__(self, obj):
        super().__init__(-1)


class _Dummy:
    """PyTorch's dummy base classes of a build without XPU: instantiating raises."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"Tried to instantiate dummy base class {type(self).__name__}")


class Stream(_Dummy):
    pass


class Event(_Dummy):
    pass


def set_stream(stream):
    """Nothing for None (PyTorch's); no XPU stream can exist to be set."""
    if stream is not None:
        _not_compiled()


class StreamContext:
    """`with torch.xpu.stream(s):`: nothing happens without XPU (PyTorch's)."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def stream(stream):
    return StreamContext(stream)
