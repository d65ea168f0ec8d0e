"""The caching allocator over the real CUDA device (cudaMalloc, cudaFree, cudaMemGetInfo,
events: src/cuda/cuda_memory.cu).  The bookkeeping is the one tests/c10/test_caching_allocator.py
checks on the fake device; here the device side is checked.  Each test skips, with the reason
the device is missing, on a machine without a GPU; tools/gpu_check.sh runs them on one."""
import os

import pytest

import pytorchlite as ptl
from pytorchlite import _C

MB = 1 << 20


def _device_allocator(conf=""):
    try:
        return _C._DeviceCachingAllocator(0, conf), None
    except RuntimeError as e:
        return None, str(e)


_, NO_DEVICE = _device_allocator()
# tools/gpu_check.sh sets PTL_REQUIRE_GPU=1 on a GPU machine: not seeing the device fails there
REQUIRE_GPU = os.environ.get("PTL_REQUIRE_GPU") == "1"
pytestmark = pytest.mark.skipif(NO_DEVICE is not None and not REQUIRE_GPU,
                                reason=f"no CUDA device: {NO_DEVICE}")


@pytest.fixture
def alloc():
    if NO_DEVICE is not None:
        pytest.fail(f"PTL_REQUIRE_GPU=1 but no CUDA device: {NO_DEVICE}")
    return _device_allocator()[0]


def test_blocks_split_merge_and_go_back_to_the_device(alloc):
    free_before, total = alloc.mem_get_info()
    assert 0 < free_before <= total
    p = alloc.malloc(1000)
    q = alloc.malloc(1)
    assert q == p + 1024 and p % 512 == 0
    big = alloc.malloc(30 * MB)
    s = alloc.memory_stats()
    assert s["reserved_bytes"]["all"]["current"] == 2 * MB + 30 * MB
    assert s["num_device_alloc"] == 2
    assert alloc.mem_get_info()[0] <= free_before - 32 * MB
    for ptr in (p, q, big):
        alloc.free(ptr)
    alloc.empty_cache()
    s = alloc.memory_stats()
    assert s["reserved_bytes"]["all"]["current"] == 0 and s["num_device_free"] == 2


def test_record_stream_waits_for_the_stream(alloc):
    per_thread_stream = 2          # cudaStreamPerThread
    p = alloc.malloc(MB)
    alloc.record_stream(p, per_thread_stream)
    alloc.free(p)
    assert alloc.memory_stats()["active_bytes"]["all"]["current"] == MB
    alloc.empty_cache()            # synchronises the event, then releases the segment
    s = alloc.memory_stats()
    assert s["active_bytes"]["all"]["current"] == 0
    assert s["reserved_bytes"]["all"]["current"] == 0


def test_device_out_of_memory_gives_pytorchs_message(alloc):
    free_bytes, total = alloc.mem_get_info()
    with pytest.raises(ptl.OutOfMemoryError, match=r"^CUDA out of memory\. Tried to allocate "):
        alloc.malloc(total + 64 * MB)
    s = alloc.memory_stats()
    assert s["num_ooms"] == 1 and s["num_alloc_retries"] == 1
    alloc.set_memory_fraction(0.001)
    with pytest.raises(ptl.OutOfMemoryError, match="allowed; Of the allocated memory"):
        alloc.malloc(int(total * 0.002))


def test_live_blocks_on_the_device_never_overlap(alloc):
    sizes = (512, 4096, 3 * MB, 12 * MB, 100, 700 * 1024)
    ptrs = [alloc.malloc(n) for n in sizes]
    spans = sorted((p, p + n) for p, n in zip(ptrs, sizes))
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    for p in ptrs:
        alloc.free(p)
    assert alloc.memory_stats()["allocated_bytes"]["all"]["current"] == 0
