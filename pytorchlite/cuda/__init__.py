"""pytorchlite.cuda: the CUDA device model and its memory statistics (torch.cuda).

Without a CUDA backend (Note [CUDA availability] in src/cuda/lazy_init.c: the CPU-only
build) every function behaves as in PyTorch's CPU-only build: queries answer 0, False or an
empty dict, and whatever needs a device raises AssertionError("Torch not compiled with CUDA
enabled"); with the backend but no device, as PyTorch's CUDA build without a GPU
(RuntimeError "No CUDA GPUs are available").  Where that build itself fails with an AttributeError or KeyError (set_device,
reset_peak_memory_stats, memory_summary, memory_snapshot, caching_allocator_delete,
get_allocator_backend) the same AssertionError is raised instead."""
import sys

from .. import _C

OutOfMemoryError = _C.OutOfMemoryError


def is_available():
    """True when a CUDA backend has registered its allocator and kernels (the nvcc build) and
    a CUDA device is visible (Note [CUDA availability] in src/cuda/lazy_init.c);
    __config__.show() says why not."""
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


_NOT_COMPILED = "Torch not compiled with CUDA enabled"


def _lazy_init():
    """Initialises CUDA once; without a CUDA backend raises PyTorch's AssertionError."""
    try:
        _C._cuda_lazy_init()
    except RuntimeError as e:
        if str(e).startswith(_NOT_COMPILED):
            raise AssertionError(str(e)) from None
        raise


def _get_device_index(device, optional=False):
    """The CUDA device index that device (an int, a "cuda:N" string or a cuda device) names;
    None, or a device without an index, means the current device when optional.  Errors as
    torch.cuda._utils._get_device_index."""
    if isinstance(device, str):
        device = _C.device(device)
    if isinstance(device, _C.device):
        if device.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {device}")
        device = device.index
    if device is None:
        if not optional:
            raise ValueError("Expected a cuda device with a specified index or an integer, "
                             "but got:None")
        return current_device()
    if isinstance(device, bool) or not isinstance(device, int):
        raise ValueError(f"Expected a cuda device, but got: {device}")
    return device


def current_device():
    """Index of the current CUDA device (initialises CUDA)."""
    _lazy_init()
    return _C._cuda_current_device()


def set_device(device):
    """Makes device current; a negative index does nothing, as in PyTorch."""
    index = _get_device_index(device)
    if index >= 0:
        _lazy_init()
        _C._cuda_set_device(index)


def _exchange_device(index):
    """Makes index current and returns the previous index (-1 and no change for index < 0)."""
    if index < 0:
        return -1
    if not is_available():
        raise RuntimeError("PyTorch was compiled without CUDA support")
    previous = current_device()
    if previous != index:
        _C._cuda_set_device(index)
    return previous


class device:
    """Context manager that makes device current inside; a negative index or None changes
    nothing (PyTorch's documented behaviour: its CPU-only build fails on None with a
    TypeError)."""

    def __init__(self, device):
        self.idx = -1 if device is None else _get_device_index(device, optional=True)
        self.prev_idx = -1

    def __enter__(self):
        self.prev_idx = _exchange_device(self.idx)

    def __exit__(self, exc_type, exc_value, traceback):
        self.idx = _exchange_device(self.prev_idx)
        return False


class device_of(device):
    """device() for the device of a tensor: a CPU tensor changes nothing."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.is_cuda else -1)


def synchronize(device=None):
    """Waits for all work on device (the current one by default) to finish."""
    _lazy_init()
    _C._cuda_synchronize(_get_device_index(device, optional=True))


class _CudaDeviceProperties:
    """What get_device_properties returns: cudaDeviceProp's main fields, with PyTorch's names
    and repr."""

    def __init__(self, fields):
        self.__dict__.update(fields)

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // (1 << 20)}MB, "
                f"multi_processor_count={self.multi_processor_count}, "
                f"L2_cache_size={self.L2_cache_size // (1 << 20)}MB)")


def get_device_properties(device=None):
    """The properties of device (the current one by default)."""
    _lazy_init()
    index = _get_device_index(device, optional=True)
    if index < 0 or index >= device_count():
        raise AssertionError("Invalid device id")
    return _CudaDeviceProperties(_C._cuda_get_device_properties(index))


def get_device_name(device=None):
    return get_device_properties(device).name


def get_device_capability(device=None):
    """(major, minor) compute capability of device."""
    prop = get_device_properties(device)
    return prop.major, prop.minor


def is_initialized():
    return _C._cuda_is_initialized()


def _is_in_bad_fork():
    return _C._cuda_in_bad_fork()


# the devices' default generators (Note [CUDA generators] in src/aten/generator.h); the
# seeding and state functions are in random.py
_default_generators = None


def _defaults():
    """default_generators: the devices' default generators once CUDA is initialised, () before
    (as PyTorch's, which fills the tuple at initialisation)."""
    global _default_generators
    if not is_initialized():
        return ()
    if _default_generators is None:
        _default_generators = tuple(_generator(i) for i in range(device_count()))
    return _default_generators


def __getattr__(name):
    if name == "default_generators":
        return _defaults()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_generators = {}


def _generator(index):
    """Device index's default generator (one wrapper per device), initialised or not."""
    if index not in _generators:
        _generators[index] = _C._cuda_default_generator(index)
    return _generators[index]


def _current_index():
    """The current device without initialising CUDA: 0 until it is (set_device initialises)."""
    return _C._cuda_current_device() if is_initialized() else 0


def current_stream(device=None):
    """The calling thread's current stream on device (the current device for None): the
    default stream until set_stream or a `with stream(s)` block changes it."""
    _lazy_init()
    index = _get_device_index(device, optional=True)
    return Stream(stream_id=_C._cuda_current_stream(index), device_index=index)


def default_stream(device=None):
    """The legacy default stream (cuda_stream 0) of device."""
    _lazy_init()
    return Stream(stream_id=0, device_index=_get_device_index(device, optional=True))


def set_stream(stream):
    """Makes stream the calling thread's current stream, and its device the current device,
    as PyTorch's; None does nothing.  Prefer the stream() context manager."""
    if stream is None:
        return
    if current_device() != stream.device_index:
        _C._cuda_set_device(stream.device_index)
    _C._cuda_set_current_stream(stream.device_index, stream.cuda_stream)


class StreamContext:
    """Makes a stream current inside the block (and restores the previous ones, on its
    device and the current device, on the way out).  A no-op for None or where no device is
    present, as PyTorch's."""

    def __init__(self, stream):
        self.stream = stream
        self.idx = current_device() if stream is not None and device_count() > 0 else -1
        self.src_prev_stream = None
        self.dst_prev_stream = None

    def __enter__(self):
        cur_stream = self.stream
        if cur_stream is None or self.idx == -1:
            return
        self.src_prev_stream = current_stream(None)
        if self.src_prev_stream.device != cur_stream.device:
            with device(cur_stream.device):
                self.dst_prev_stream = current_stream(cur_stream.device)
        set_stream(cur_stream)

    def __exit__(self, exc_type, exc_value, traceback):
        cur_stream = self.stream
        if cur_stream is None or self.idx == -1:
            return
        if self.src_prev_stream.device != cur_stream.device:
            set_stream(self.dst_prev_stream)
        set_stream(self.src_prev_stream)


def stream(stream):
    """The StreamContext of stream: `with torch.cuda.stream(s):` queues the block's work on
    s."""
    return StreamContext(stream)


from ..amp import cuda_aliases as amp  # noqa: E402  (torch.cuda.amp, deprecated spellings)
sys.modules[__name__ + ".amp"] = amp   # `from torch.cuda.amp import GradScaler`
from .streams import Event, ExternalStream, Stream  # noqa: E402
from . import memory, random  # noqa: E402
from .random import (  # noqa: E402,F401
    get_rng_state, get_rng_state_all, initial_seed, manual_seed, manual_seed_all, seed,
    seed_all, set_rng_state, set_rng_state_all)
from .memory import (  # noqa: E402,F401
    caching_allocator_alloc, caching_allocator_delete, empty_cache, get_allocator_backend,
    get_per_process_memory_fraction, host_memory_stats, host_memory_stats_as_nested_dict,
    max_memory_allocated, max_memory_cached, max_memory_reserved, mem_get_info,
    memory_allocated, memory_cached, memory_reserved, memory_snapshot, memory_stats,
    memory_stats_as_nested_dict, memory_summary, reset_accumulated_host_memory_stats,
    reset_accumulated_memory_stats, reset_max_memory_allocated, reset_max_memory_cached,
    reset_peak_host_memory_stats, reset_peak_memory_stats, set_per_process_memory_fraction)
from . import graphs  # noqa: E402
from . import nvtx  # noqa: E402,F401
from .graphs import (  # noqa: E402,F401
    CUDAGraph, graph, graph_pool_handle, is_current_stream_capturing, make_graphed_callables)
