"""pytorchlite.cuda's device model and memory functions, and pytorchlite.cpu's memory
statistics: PyTorch's CPU-build behaviour without a CUDA backend, and the real figures when
a caching allocator (here the fake device's) stands behind them."""
import collections
import gc
import re
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import _C
from pytorchlite.cuda import memory
from helpers import NO_CUDA_ERROR, torch, torch_ref

MB = 1 << 20
NO_CUDA = "Torch not compiled with CUDA enabled"
no_backend = pytest.mark.skipif(ptl.cuda.is_available(), reason="a CUDA backend is present")

# what PyTorch 2.13's CPU-only build answers
ZERO_QUERIES = ["memory_allocated", "max_memory_allocated", "memory_reserved",
                "max_memory_reserved"]
RAISING = [  # (call, exception, message)
    (lambda c: c.current_device(), AssertionError, NO_CUDA),
    (lambda c: c.synchronize(), AssertionError, NO_CUDA),
    (lambda c: c.get_device_name(), AssertionError, NO_CUDA),
    (lambda c: c.get_device_properties(0), AssertionError, NO_CUDA),
    (lambda c: c.get_device_capability(), AssertionError, NO_CUDA),
    (lambda c: c.init(), AssertionError, NO_CUDA),
    (lambda c: c.mem_get_info(), AssertionError, NO_CUDA),
    (lambda c: c.mem_get_info(0), AssertionError, NO_CUDA),
    (lambda c: c.set_per_process_memory_fraction(0.5), AssertionError, NO_CUDA),
    (lambda c: c.set_per_process_memory_fraction(2), AssertionError, NO_CUDA),
    (lambda c: c.get_per_process_memory_fraction(), AssertionError, NO_CUDA),
    (lambda c: c.caching_allocator_alloc(10), AssertionError, NO_CUDA),
    (lambda c: c.initial_seed(), AssertionError, NO_CUDA),
    (lambda c: c.set_device("cpu"), ValueError, "Expected a cuda device, but got: cpu"),
    (lambda c: c.device(0).__enter__(), RuntimeError, "PyTorch was compiled without CUDA support"),
]
# where PyTorch's CPU build fails with an AttributeError or a KeyError: the clear error instead
RAISING_BEYOND_TORCH = [
    lambda c: c.set_device(0), lambda c: c.reset_peak_memory_stats(),
    lambda c: c.reset_accumulated_memory_stats(), lambda c: c.memory_summary(),
    lambda c: c.memory_snapshot(), lambda c: c.caching_allocator_delete(0),
    lambda c: c.get_allocator_backend(),
]


@no_backend
@pytest.mark.parametrize("name", ZERO_QUERIES)
def test_queries_answer_zero_without_cuda(name):
    assert getattr(ptl.cuda, name)() == 0
    assert getattr(ptl.cuda, name)(0) == 0


@no_backend
def test_stats_are_empty_without_cuda():
    assert ptl.cuda.memory_stats() == collections.OrderedDict()
    assert isinstance(ptl.cuda.memory_stats(1), collections.OrderedDict)
    assert ptl.cuda.memory_stats_as_nested_dict() == {}
    assert ptl.cuda.empty_cache() is None
    assert ptl.cuda.device_count() == 0 and ptl.cuda.is_initialized() is False
    for name in ("memory_cached", "max_memory_cached"):
        with pytest.warns(FutureWarning, match=f"`torch.cuda.{name}` has been renamed"):
            assert getattr(ptl.cuda, name)() == 0


@no_backend
def test_negative_or_no_device_changes_nothing():
    ptl.cuda.set_device(-1)
    with ptl.cuda.device(-1):
        pass
    with ptl.cuda.device(None):
        pass
    with ptl.cuda.device_of(ptl.zeros(2)):
        pass


@no_backend
@pytest.mark.parametrize("case", range(len(RAISING)))
def test_device_functions_raise_as_pytorchs_cpu_build(case):
    call, exc, message = RAISING[case]
    if (exc, message) == (AssertionError, NO_CUDA):
        exc, message = NO_CUDA_ERROR
    with pytest.raises(exc, match=re.escape(message)):
        call(ptl.cuda)


@torch_ref
@pytest.mark.skipif(torch is not None and torch.cuda.is_available(), reason="torch has CUDA")
@pytest.mark.parametrize("case", range(len(RAISING)))
def test_device_function_errors_match_torch(case):
    call, exc, message = RAISING[case]
    with pytest.raises(exc, match=re.escape(message)):
        call(torch.cuda)


@torch_ref
@pytest.mark.skipif(torch is not None and torch.cuda.is_available(), reason="torch has CUDA")
def test_queries_match_torch():
    for name in ZERO_QUERIES:
        assert getattr(ptl.cuda, name)() == getattr(torch.cuda, name)()
    assert ptl.cuda.memory_stats() == torch.cuda.memory_stats()
    assert ptl.cuda.memory_stats_as_nested_dict() == torch.cuda.memory_stats_as_nested_dict()


@no_backend
@pytest.mark.parametrize("case", range(len(RAISING_BEYOND_TORCH)))
def test_functions_pytorch_crashes_in_raise_the_no_cuda_error(case):
    with pytest.raises(NO_CUDA_ERROR[0], match=re.escape(NO_CUDA_ERROR[1])):
        RAISING_BEYOND_TORCH[case](ptl.cuda)


@no_backend
def test_reset_max_warns_before_raising():
    for name in ("reset_max_memory_allocated", "reset_max_memory_cached"):
        with pytest.warns(FutureWarning, match=f"torch.cuda.{name} now calls"):
            with pytest.raises(NO_CUDA_ERROR[0], match=NO_CUDA_ERROR[1]):
                getattr(ptl.cuda, name)()


def test_device_index_parsing():
    assert ptl.cuda._get_device_index(3) == 3
    assert ptl.cuda._get_device_index("cuda:2") == 2
    assert ptl.cuda._get_device_index(ptl.device("cuda", 1)) == 1
    with pytest.raises(ValueError, match=re.escape("Expected a cuda device, but got: cpu")):
        ptl.cuda._get_device_index(ptl.device("cpu"))
    with pytest.raises(ValueError, match="Expected a cuda device"):
        ptl.cuda._get_device_index(1.5)


def test_out_of_memory_error_is_pytorchs():
    assert ptl.OutOfMemoryError is ptl.cuda.OutOfMemoryError
    assert issubclass(ptl.OutOfMemoryError, RuntimeError)


# ---- the real figures, from a caching allocator (the fake device's) ----

@pytest.fixture
def fake(monkeypatch):
    alloc = _C._FakeDeviceAllocator(64 * MB)
    monkeypatch.setattr(memory, "_allocator", lambda device=None, init=False: alloc)
    monkeypatch.setattr(memory, "_allocators", lambda: [(0, alloc)])
    monkeypatch.setattr(memory, "_lazy_init", lambda: None)
    return alloc


def test_memory_functions_report_the_allocator(fake):
    c = ptl.cuda
    p = c.caching_allocator_alloc(1000)
    q = c.caching_allocator_alloc(3 * MB, stream=0)
    assert c.memory_allocated(0) == 1024 + 3 * MB
    assert c.memory_reserved(0) == 2 * MB + 20 * MB
    stats = c.memory_stats(0)
    assert list(stats) == sorted(stats) and stats["num_ooms"] == 0
    assert stats["requested_bytes.all.current"] == 1000 + 3 * MB
    assert stats["allocation.small_pool.current"] == 1 and stats["max_split_size"] == -1
    assert c.memory_stats_as_nested_dict(0)["allocation"]["large_pool"]["current"] == 1
    c.caching_allocator_delete(q)
    assert c.max_memory_allocated(0) == 1024 + 3 * MB
    c.reset_peak_memory_stats(0)
    assert c.max_memory_allocated(0) == 1024
    with pytest.warns(FutureWarning):
        assert c.max_memory_cached(0) == 22 * MB
    c.empty_cache()
    assert c.memory_reserved(0) == 2 * MB and c.max_memory_reserved(0) == 22 * MB
    c.reset_accumulated_memory_stats(0)
    assert c.memory_stats(0)["allocated_bytes.all.allocated"] == 0
    segments = c.memory_snapshot()
    assert [s["segment_type"] for s in segments] == ["small"]
    assert segments[0]["blocks"][0] == {"address": p, "size": 1024, "requested_size": 1000,
                                        "state": "active_allocated"}
    assert c.mem_get_info(0) == (62 * MB, 64 * MB)
    assert c.get_allocator_backend() == "native"
    c.caching_allocator_delete(p)
    with pytest.raises(RuntimeError, match="invalid device pointer"):
        c.caching_allocator_delete(p)
    with pytest.raises(TypeError, match="Invalid type for stream argument"):
        c.caching_allocator_alloc(10, stream="s")


def test_memory_fraction_through_the_api(fake):
    c = ptl.cuda
    c.set_per_process_memory_fraction(0.5, 0)
    assert c.get_per_process_memory_fraction(0) == 0.5
    with pytest.raises(TypeError, match="Invalid type for fraction argument, must be `float`"):
        c.set_per_process_memory_fraction(1, 0)
    with pytest.raises(ValueError, match=re.escape("Invalid fraction value: -0.5. Allowed "
                                                   "range: 0~1")):
        c.set_per_process_memory_fraction(-0.5, 0)
    with pytest.raises(ptl.OutOfMemoryError, match=r"32\.00 MiB allowed"):
        c.caching_allocator_alloc(40 * MB)
    assert c.memory_stats(0)["num_ooms"] == 1


def summary_lines(text):
    return text.rstrip("\n").split("\n")


def test_memory_summary_layout(fake):
    c = ptl.cuda
    c.caching_allocator_alloc(1000)
    c.caching_allocator_alloc(30 * MB)
    text = c.memory_summary(0)
    lines = summary_lines(text)
    assert all(len(line) == 77 and line[0] == line[-1] == "|" for line in lines)
    assert lines[1] == "|" + " " * 18 + "PyTorch CUDA memory summary, device ID 0" + " " * 17 + "|"
    assert lines[3].startswith("|            CUDA OOMs: 0            |        cudaMalloc "
                               "retries: 0 ")
    assert "| Allocated memory      |  30721 KiB |  30721 KiB |  30721 KiB |      0 B   |" in lines
    assert "|       from small pool |      1 KiB |      1 KiB |      1 KiB |      0 B   |" in lines
    assert "| Allocations           |       2    |       2    |       2    |       0    |" in lines
    assert len(lines) == 6 + 9 * 4 + 2 * 2 + 1
    short = summary_lines(c.memory_summary(0, abbreviated=True))
    assert len(short) == 6 + 9 * 2 + 2 * 2 + 1


@torch_ref
def test_memory_summary_matches_torchs_on_the_same_stats(fake, monkeypatch):
    c = ptl.cuda
    gen = np.random.default_rng(0)
    ptrs = [c.caching_allocator_alloc(int(n)) for n in gen.integers(1, 40 * MB // 8, 6)]
    for p in ptrs[::2]:
        c.caching_allocator_delete(p)
    stats = c.memory_stats(0)
    monkeypatch.setattr(torch.cuda.memory, "memory_stats", lambda device=None: stats)
    for abbreviated in (False, True):
        assert c.memory_summary(0, abbreviated) == torch.cuda.memory_summary(0, abbreviated)


def test_memory_stats_flatten_like_pytorch(fake):
    nested = ptl.cuda.memory_stats_as_nested_dict(0)
    flat = ptl.cuda.memory_stats(0)
    assert flat["reserved_bytes.large_pool.peak"] == nested["reserved_bytes"]["large_pool"]["peak"]
    assert flat["oversize_segments.current"] == nested["oversize_segments"]["current"]
    assert len(flat) == 9 * 3 * 4 + 2 * 4 + 6


# ---- pytorchlite.cpu ----

@pytest.mark.skipif(not _C._alloc_stats()["caching"],
                    reason="the allocator's caches are bypassed: sizes are not rounded")
def test_cpu_memory_stats_follow_tensors():
    cpu = ptl.cpu
    ptl.cpu.empty_cache()
    before = cpu.memory_stats()
    cpu.reset_peak_memory_stats()
    x = ptl.empty(1000 * 1000, dtype=ptl.float32)     # 4,000,000 bytes, a multiple of 64
    after = cpu.memory_stats()
    grown = after["allocated_bytes.all.current"] - before["allocated_bytes.all.current"]
    assert grown == 4_000_000
    assert after["allocation.all.current"] - before["allocation.all.current"] == 1
    assert cpu.max_memory_allocated() >= cpu.memory_allocated() >= 4_000_000
    peak = cpu.max_memory_allocated()
    del x
    assert cpu.memory_allocated() == before["allocated_bytes.all.current"]
    assert cpu.max_memory_allocated() == peak
    assert cpu.memory_reserved() >= cpu.memory_allocated() + 4_000_000   # cached
    cpu.empty_cache()
    assert cpu.memory_reserved() == cpu.memory_allocated()
    cpu.reset_accumulated_memory_stats()
    s = cpu.memory_stats()
    assert s["allocation.all.allocated"] == 0 and s["allocated_bytes.all.freed"] == 0
    y = ptl.empty(32, dtype=ptl.float32)   # 128 bytes, a size class (64 would be inline)
    s = cpu.memory_stats()
    assert s["allocation.all.allocated"] == 1 and s["allocated_bytes.all.allocated"] == 128
    del y
    s = cpu.memory_stats()
    assert s["allocated_bytes.all.freed"] == 128
    for stat in ("allocation", "allocated_bytes", "reserved_bytes"):
        assert s[f"{stat}.all.peak"] >= s[f"{stat}.all.current"] >= 0


def test_cpu_memory_summary_and_keys():
    keys = list(ptl.cpu.memory_stats())
    assert keys == sorted(f"{s}.all.{c}" for s in ("allocation", "allocated_bytes",
                                                    "reserved_bytes", "saved_tensor_bytes")
                          for c in ("allocated", "current", "freed", "peak"))
    lines = summary_lines(ptl.cpu.memory_summary())
    assert all(len(line) == 77 for line in lines)
    assert "pytorchlite CPU memory summary" in lines[1]
    assert [line[:23] for line in lines if line.startswith("| ") and " | " in line][1:] == [
        "| Allocated memory     ", "| Reserved memory      ", "| Allocations          ",
        "| Saved tensors        "]
    assert ptl.cpu.is_available() and ptl.cpu.device_count() == 1
    assert ptl.cpu.current_device() == "cpu" and ptl.cpu.synchronize() is None


def test_saved_tensor_bytes_count_each_storage_once():
    cpu = ptl.cpu
    gc.collect()                  # graphs left by earlier tests die now, not halfway through
    base = cpu.saved_tensor_memory()
    cpu.reset_peak_memory_stats()
    cpu.reset_accumulated_memory_stats()
    a = ptl.ones(1000, requires_grad=True)            # 4000 bytes
    b = a.exp()                   # ExpBackward0 saves its output b
    assert cpu.saved_tensor_memory() - base == 4000
    c = b.sin()                   # SinBackward0 saves b again: the same storage
    assert cpu.saved_tensor_memory() - base == 4000
    d = c[::2] * a[:500]          # views: the whole storages of c and a are held
    assert cpu.saved_tensor_memory() - base == 12000
    del b, c
    assert cpu.saved_tensor_memory() - base == 12000  # the graph still holds them
    d.sum().backward()            # each node releases what it saved
    assert cpu.saved_tensor_memory() == base
    s = cpu.memory_stats()
    assert s["saved_tensor_bytes.all.peak"] - base == 12000
    assert s["saved_tensor_bytes.all.allocated"] == s["saved_tensor_bytes.all.freed"] == 12000
    e = a.exp()
    assert cpu.saved_tensor_memory() - base == 4000
    del e                         # the graph dies with its last tensor
    assert cpu.saved_tensor_memory() == base
    with ptl.no_grad():
        a.exp()
    assert cpu.saved_tensor_memory() == base


def test_saved_tensor_bytes_follow_hooks_data_swaps_and_resizes():
    cpu = ptl.cpu
    base = cpu.saved_tensor_memory()
    a = ptl.ones(100, requires_grad=True)
    with ptl.autograd.graph.saved_tensors_hooks(lambda t: t.tolist(),
                                                lambda x: ptl.tensor(x)):
        b = a.sin()               # the pack hook keeps a list: no storage held by the graph
    assert cpu.saved_tensor_memory() == base
    x = ptl.ones(100)
    y = ptl.ones(10, requires_grad=True)
    z = y * x[:10]                # MulBackward0 saves y and a view of x (400 bytes)
    assert cpu.saved_tensor_memory() - base == 440
    x.untyped_storage().resize_(800)    # a saved storage that grows moves the figure
    assert cpu.saved_tensor_memory() - base == 840
    y.data = ptl.zeros(1000)      # the saved y now has another storage; its mark stays put
    del z
    assert cpu.saved_tensor_memory() == base
    del b


def test_cpu_memory_stats_count_tensors_from_threads():
    import threading
    before = ptl.cpu.memory_stats()["allocation.all.current"]

    def work():
        for _ in range(200):
            ptl.ones(257) + 1

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with warnings.catch_warnings():
        assert ptl.cpu.memory_stats()["allocation.all.current"] == before
