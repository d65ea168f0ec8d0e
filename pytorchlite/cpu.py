"""pytorchlite.cpu: the CPU device (torch.cpu), and beyond PyTorch the CPU allocator's
statistics in torch.cuda.memory_stats()'s names (Note [CPU memory statistics] in
src/c10/allocator.c): allocation, allocated_bytes and reserved_bytes, "all" entries only; and
saved_tensor_bytes, the bytes of the storages the autograd graph's saved tensors keep alive
(Note [Saved tensor bytes] in src/c10/storage.h)."""
import collections
import sys

from . import _C


def is_available():
    return True


def device_count():
    return 1


def current_device():
    return "cpu"


def synchronize(device=None):
    """CPU work is done when the call that queued it returns: nothing to wait for."""


def memory_stats():
    """The CPU allocator's statistics, sorted by key: "allocated_bytes.all.current", ..."""
    items = []
    for stat, pools in _C._cpu_memory_stats().items():
        for pool, values in pools.items():
            items += [(f"{stat}.{pool}.{key}", v) for key, v in values.items()]
    items.sort()
    return collections.OrderedDict(items)


def memory_allocated():
    """Bytes of CPU memory held by tensors now (rounded up to the allocator's block sizes)."""
    return memory_stats()["allocated_bytes.all.current"]


def max_memory_allocated():
    return memory_stats()["allocated_bytes.all.peak"]


def memory_reserved():
    """Bytes held by tensors plus bytes kept in the allocator's caches."""
    return memory_stats()["reserved_bytes.all.current"]


def max_memory_reserved():
    return memory_stats()["reserved_bytes.all.peak"]


def saved_tensor_memory():
    """Bytes of the storages that the autograd graph's saved tensors keep alive now, each
    storage counted once (beyond PyTorch)."""
    return memory_stats()["saved_tensor_bytes.all.current"]


def reset_peak_memory_stats():
    _C._cpu_reset_peak_memory_stats()


def reset_accumulated_memory_stats():
    _C._cpu_reset_accumulated_memory_stats()


def empty_cache():
    """Gives the allocator's cached blocks back to the C library."""
    _C._empty_cache()


def memory_summary(abbreviated=False):
    """memory_stats() as torch.cuda.memory_summary's table (abbreviated is accepted for the
    same signature: the CPU allocator has no pools to leave out)."""
    from .cuda.memory import _format_count, _format_size, _summary
    rows = (("allocated_bytes", "Allocated memory", _format_size),
            ("reserved_bytes", "Reserved memory", _format_size),
            ("allocation", "Allocations", _format_count),
            ("saved_tensor_bytes", "Saved tensors", _format_size))
    return _summary(memory_stats(), "pytorchlite CPU memory summary", None, True, rows=rows,
                    single_rows=())


from .amp import cpu_aliases as amp  # noqa: E402  (torch.cpu.amp, deprecated spellings)
sys.modules[__name__ + ".amp"] = amp
