"""torch.cuda's memory functions, reporting from the CUDA caching allocator
(Note [Caching allocator] in src/c10/caching_allocator.c).

Before CUDA is initialised, and so always without a CUDA backend, the statistics are empty
and the queries answer 0, as in PyTorch; the functions that need a device raise
AssertionError("Torch not compiled with CUDA enabled") (module docstring of pytorchlite.cuda).
Each device's allocator is a _C._CachingAllocator; tests put a _C._FakeDeviceAllocator in its
place through _allocator and _allocators."""
import collections
import warnings

from .. import _C
from . import _get_device_index, _lazy_init, device_count, is_initialized


def _allocator(device=None, init=False):
    """The caching allocator of device (the current one for None).  Without init: None while
    CUDA is not initialised; with init: initialises CUDA (raising without a backend)."""
    if init:
        _lazy_init()
    elif not is_initialized():
        return None
    alloc = _C._cuda_caching_allocator(_get_device_index(device, optional=True))
    if alloc is None:
        raise AssertionError("Invalid device id")
    return alloc


def _allocators():
    """(index, allocator) for every device; none before CUDA is initialised."""
    if not is_initialized():
        return []
    return [(d, _C._cuda_caching_allocator(d)) for d in range(device_count())]


def memory_stats_as_nested_dict(device=None):
    """memory_stats() as nested dicts: {"allocated_bytes": {"all": {"current": ...}}}."""
    alloc = _allocator(device)
    return {} if alloc is None else alloc.memory_stats()


def _flatten(prefix, value, out):
    if isinstance(value, dict):
        for key, sub in value.items():
            _flatten(f"{prefix}.{key}" if prefix else key, sub, out)
    else:
        out.append((prefix, value))


def memory_stats(device=None):
    """The allocator's statistics as one OrderedDict sorted by key: "allocated_bytes.all.
    current", "num_ooms", ... (empty before CUDA is initialised)."""
    items = []
    _flatten("", memory_stats_as_nested_dict(device), items)
    items.sort()
    return collections.OrderedDict(items)


def memory_allocated(device=None):
    """Bytes of device memory held by tensors now."""
    return memory_stats(device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device=None):
    """The peak of memory_allocated() since the start or reset_peak_memory_stats()."""
    return memory_stats(device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device=None):
    """Bytes of device memory the caching allocator holds (allocated plus cached)."""
    return memory_stats(device).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device=None):
    return memory_stats(device).get("reserved_bytes.all.peak", 0)


def memory_cached(device=None):
    warnings.warn("`torch.cuda.memory_cached` has been renamed to `torch.cuda.memory_reserved`",
                  FutureWarning, stacklevel=2)
    return memory_reserved(device)


def max_memory_cached(device=None):
    warnings.warn("`torch.cuda.max_memory_cached` has been renamed to "
                  "`torch.cuda.max_memory_reserved`", FutureWarning, stacklevel=2)
    return max_memory_reserved(device)


def reset_peak_memory_stats(device=None):
    """Every "peak" statistic becomes its current value."""
    _allocator(device, init=True).reset_peak_memory_stats()


def reset_max_memory_allocated(device=None):
    warnings.warn("torch.cuda.reset_max_memory_allocated now calls "
                  "torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None):
    warnings.warn("torch.cuda.reset_max_memory_cached now calls "
                  "torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device=None):
    """The "allocated"/"freed" running sums and the event counters become 0."""
    _allocator(device, init=True).reset_accumulated_memory_stats()


def empty_cache():
    """Gives the cached, unused device memory back to the device (nothing before CUDA is
    initialised)."""
    for _, alloc in _allocators():
        alloc.empty_cache()


def mem_get_info(device=None):
    """(free, total) bytes of the device, from the driver."""
    return _allocator(device, init=True).mem_get_info()


def set_per_process_memory_fraction(fraction, device=None):
    """Limits the memory the allocator may reserve on device to fraction of its total."""
    alloc = _allocator(device, init=True)
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if fraction < 0 or fraction > 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    alloc.set_memory_fraction(fraction)


def get_per_process_memory_fraction(device=None):
    return _allocator(device, init=True).get_memory_fraction()


def _host_allocator():
    """The pinned host allocator (Note [Caching host allocator] in src/c10/host_allocator.c),
    or None while CUDA is not initialised.  Tests put a _C._FakeHostAllocator in its place."""
    return _C._cuda_host_allocator() if is_initialized() else None


def host_memory_stats_as_nested_dict():
    """host_memory_stats() as nested dicts (empty before CUDA is initialised)."""
    alloc = _host_allocator()
    return {} if alloc is None else alloc.memory_stats()


def host_memory_stats():
    """The pinned host allocator's statistics as one OrderedDict sorted by key:
    "allocations.current", "active_bytes.peak", "num_host_alloc", "host_alloc_time.avg", ...
    (PyTorch's; see Note [Caching host allocator])."""
    items = []
    _flatten("", host_memory_stats_as_nested_dict(), items)
    items.sort()
    return collections.OrderedDict(items)


def reset_peak_host_memory_stats():
    """Every "peak" host statistic becomes its current value."""
    _lazy_init()
    _host_allocator().reset_peak_memory_stats()


def reset_accumulated_host_memory_stats():
    """The host statistics' "allocated"/"freed" sums and the counters become 0."""
    _lazy_init()
    _host_allocator().reset_accumulated_memory_stats()


def caching_allocator_alloc(size, device=None, stream=None):
    """A raw block of size bytes from the allocator, as an address (free it with
    caching_allocator_delete)."""
    alloc = _allocator(device, init=True)
    if stream is None:
        stream = 0
    from .streams import Stream
    if isinstance(stream, Stream):
        stream = stream.cuda_stream
    if isinstance(stream, bool) or not isinstance(stream, int):
        raise TypeError("Invalid type for stream argument, must be `torch.cuda.Stream` or "
                        "`int` representing a pointer to a existing stream")
    return alloc.malloc(size, stream)


def caching_allocator_delete(mem_ptr):
    """Frees a block from caching_allocator_alloc, whichever device it is on."""
    _lazy_init()
    error = None
    for _, alloc in _allocators():
        try:
            alloc.free(mem_ptr)
            return
        except RuntimeError as e:
            error = e
    raise error if error is not None else RuntimeError(f"invalid device pointer: {mem_ptr:#x}")


def get_allocator_backend():
    """The allocator's name, as PYTORCH_CUDA_ALLOC_CONF's backend option spells it."""
    _allocator(None, init=True)
    return "native"


def memory_snapshot():
    """Every device's segments, each with its blocks (PyTorch's memory_snapshot())."""
    _lazy_init()
    return [seg for index, alloc in _allocators() for seg in alloc.snapshot(index)]


def _format_scaled(value, scale, step, threshold, units, fmt):
    """value divided by step while scale (the row's first value) stays at or above threshold,
    with the unit reached: memory_summary's columns."""
    unit = 0
    while unit + 1 < len(units) and scale >= threshold:
        value //= step
        scale /= step
        unit += 1
    return fmt.format(value, units[unit])


def _format_size(size, scale):
    """A byte count: "  1024 B  ", "    20 MiB"."""
    return _format_scaled(size, scale, 1024, 768 * 1024, ["B  ", "KiB", "MiB", "GiB", "TiB",
                                                         "PiB"], "{:6d} {}")


def _format_count(count, scale):
    """An event count: "     12   ", "    305 K "."""
    return _format_scaled(count, scale, 1000, 750 * 1000, [" ", "K", "M"], "{:7d} {} ")


_SUMMARY_ROWS = (("allocated_bytes", "Allocated memory", _format_size),
                 ("active_bytes", "Active memory", _format_size),
                 ("requested_bytes", "Requested memory", _format_size),
                 ("reserved_bytes", "GPU reserved memory", _format_size),
                 ("inactive_split_bytes", "Non-releasable memory", _format_size),
                 ("allocation", "Allocations", _format_count),
                 ("active", "Active allocs", _format_count),
                 ("segment", "GPU reserved segments", _format_count),
                 ("inactive_split", "Non-releasable allocs", _format_count))
_SUMMARY_SINGLE_ROWS = (("oversize_allocations", "Oversize allocations"),
                        ("oversize_segments", "Oversize GPU segments"))


def _summary(stats, title, counters, abbreviated, pools=("large_pool", "small_pool"),
             rows=_SUMMARY_ROWS, single_rows=_SUMMARY_SINGLE_ROWS):
    """The memory_summary table of a flat memory_stats() dict: 75 columns, one block per
    statistic (current, peak, total allocated, total freed), with pool rows unless
    abbreviated, and the counters line unless it is empty.  Shared by
    pytorchlite.cpu.memory_summary."""
    rule, double = "-" * 75, "=" * 75
    lines = [double, f"{title:^75}"] + ([rule, counters] if counters else []) + [
        double, "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  "]
    columns = ("current", "peak", "allocated", "freed")
    for key, name, fmt in rows:
        lines.append(rule)
        first = [stats[f"{key}.all.{c}"] for c in columns]
        subrows = [("all", name)]
        if not abbreviated:
            subrows += [(pool, f"      from {pool.replace('_', ' ')}") for pool in pools]
        for sub, label in subrows:
            cells = [fmt(stats[f"{key}.{sub}.{c}"], scale) for c, scale in zip(columns, first)]
            lines.append(f" {label:<21} | " + " | ".join(cells) + " ")
    for key, name in single_rows:
        lines.append(rule)
        values = [stats[f"{key}.{c}"] for c in columns]
        lines.append(f" {name:<21} | " + " | ".join(_format_count(v, v) for v in values) + " ")
    lines.append(double)
    return "|" + "|\n|".join(lines) + "|\n"


def memory_summary(device=None, abbreviated=False):
    """The allocator's statistics as PyTorch's 75-column table."""
    alloc = _allocator(device, init=True)
    index = _get_device_index(device, optional=True)
    stats = []
    _flatten("", alloc.memory_stats(), stats)
    stats = dict(stats)
    counters = (f"  {'':9} CUDA OOMs: {stats['num_ooms']:<12d} | {'':6} cudaMalloc retries: "
                f"{stats['num_alloc_retries']:<8d}  ")
    return _summary(stats, f" {'':16} PyTorch CUDA memory summary, device ID {index:<17d} ",
                    counters, abbreviated)
