"""Nothing grows: 100k small ops keep live TensorImpl/Storage counts and RSS flat."""
import gc
import resource

import pytest

import pytorchlite as ptl
from pytorchlite import _C


def rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def small_ops(x, y, n):
    for _ in range(n):
        z = x + y
        z = z * 2 - y
        z = x[0] + z.t()
        z += 1
        z = (x > y)
        z = x.view(-1)[1:]


def test_100k_small_ops_keep_counts_and_rss_flat():
    x = ptl.tensor([[1.0, 2.0], [3.0, 4.0]])
    y = ptl.tensor([0.5, 0.25])
    small_ops(x, y, 2000)   # warm up caches
    gc.collect()
    before = _C._live_counts()
    rss0 = rss_kb()
    small_ops(x, y, 100_000 // 6)
    gc.collect()
    after = _C._live_counts()
    assert after == before
    if not _C._config()["sanitize"]:   # AddressSanitizer holds freed blocks in quarantine
        assert rss_kb() - rss0 < 2048, "RSS grew by more than 2 MiB over 100k ops"


def test_failed_ops_do_not_leak():
    x = ptl.tensor([1.0, 2.0, 3.0])
    y = ptl.tensor([1.0, 2.0])
    gc.collect()
    before = _C._live_counts()
    for _ in range(1000):
        with pytest.raises(RuntimeError):
            x + y
        with pytest.raises(IndexError):
            x[5]
        with pytest.raises(TypeError):
            ptl.add(x, "a")
    gc.collect()
    assert _C._live_counts() == before


def test_allocation_failure_is_a_memory_error_without_leaks():
    x = ptl.tensor([1.0] * 100)
    gc.collect()
    before = _C._live_counts()
    for n in range(1, 4):
        _C._fail_alloc_after(1)
        try:
            with pytest.raises(MemoryError, match="can't allocate memory"):
                for _ in range(n):
                    x + x
        finally:
            _C._fail_alloc_after(0)
    gc.collect()
    assert _C._live_counts() == before


def test_huge_and_negative_sizes_fail_cleanly():
    with pytest.raises(RuntimeError, match=r"Trying to create tensor with negative dimension -1: \[-1\]"):
        ptl.empty(-1)
    with pytest.raises((RuntimeError, MemoryError)):
        ptl.empty(2**40, 2**30)
    with pytest.raises(MemoryError):
        ptl.empty(2**45)


def test_same_impl_same_python_object():
    x = ptl.tensor([1.0, 2.0])
    y = x.add_(1)
    assert y is x
    import sys
    rc = sys.getrefcount(x)
    for _ in range(100):
        x.add_(1)
        x += 1
    assert sys.getrefcount(x) == rc
