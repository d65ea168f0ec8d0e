"""c10 services seen from Python: config, threads, allocator, default dtype, devices."""
import os
import re
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import _C
from golden import golden
from helpers import CUDA_KERNELS, NO_CUDA_ERROR, NO_CUDA_MESSAGE, torch


def test_config_show_mentions_everything():
    text = ptl.__config__.show()
    assert text.startswith("pytorchlite ")
    for key in ("C compiler:", "CPU capability usage:", "intra-op threads:", "CUDA built:",
                "CUDA available:"):
        assert key in text
    assert re.search(r"CPU capability usage: (DEFAULT|AVX2|AVX512|NEON)", text)


def test_cuda_queries_are_consistent():
    assert ptl.cuda.is_available() == (ptl.cuda.device_count() > 0)
    assert isinstance(ptl.cuda.is_built(), bool)


def test_cuda_is_unavailable_without_a_backend_or_a_device():
    # Note [CUDA availability]: nvcc and a GPU are not enough; CUDA needs the CUDA kernels
    # (registered in the nvcc build, with aten::copy_'s) and a visible device
    copy_row = next(r for r in _C._schemas() if r["schema"].startswith("aten::copy_("))
    assert ("CUDA" in copy_row["kernels"]) == CUDA_KERNELS == ptl.cuda.is_built()
    if ptl.cuda.is_available():
        pytest.skip("a CUDA device is visible")
    assert ptl.cuda.device_count() == 0
    config = _C._config()
    assert config["cuda_available"] is False
    if CUDA_KERNELS:
        # the backend is there: the reason is the missing device
        assert "no CUDA backend" not in config["cuda_unavailable_reason"]
    else:
        assert "built without CUDA" in config["cuda_unavailable_reason"]
    assert f"CUDA available: False ({config['cuda_unavailable_reason']})" in ptl.__config__.show()
    # PyTorch's CPU-only build raises AssertionError from cuda.init() (and every function that
    # initialises CUDA), its CUDA build without a GPU RuntimeError; the C layer's error is a
    # RuntimeError either way, with the same message
    message = (NO_CUDA_MESSAGE if CUDA_KERNELS
               else f"{NO_CUDA_MESSAGE} ({config['cuda_unavailable_reason']})")
    with pytest.raises(NO_CUDA_ERROR[0], match=re.escape(message)):
        ptl.cuda.init()
    with pytest.raises(RuntimeError, match=re.escape(message)):
        _C._cuda_lazy_init()
    assert not ptl.cuda.is_initialized()


def test_set_num_threads_round_trip_and_errors():
    old = ptl.get_num_threads()
    try:
        ptl.set_num_threads(1)
        assert ptl.get_num_threads() == 1
        a = np.arange(200_000, dtype=np.float32)
        one = (ptl.tensor(a) * 3 + 1).numpy().copy()
        ptl.set_num_threads(2)
        two = (ptl.tensor(a) * 3 + 1).numpy()
        np.testing.assert_array_equal(one, two)
        np.testing.assert_array_equal(two, a * 3 + 1)
    finally:
        ptl.set_num_threads(old)
    with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer"):
        ptl.set_num_threads(0)
    with pytest.raises(TypeError):
        ptl.set_num_threads("2")


def test_thread_pool_back_to_back_jobs_and_worker_errors():
    # Note [Spin before sleeping]: jobs posted while the worker still polls for the last one,
    # jobs after it went to sleep, errors raised in the worker's chunk, and Python threads
    # sharing the pool; on 1 and 2 threads the results are NumPy's, exactly.
    old = ptl.get_num_threads()
    g = np.random.default_rng(0)
    a = g.standard_normal(100_003).astype(np.float32)
    b = g.standard_normal(100_003).astype(np.float32)
    idx = np.arange(100_003)
    idx[-3] = 10 ** 6                 # in the last chunk, the worker's
    try:
        for n in (1, 2):
            ptl.set_num_threads(n)
            x, y = ptl.tensor(a), ptl.tensor(b)
            for i in range(200):
                np.testing.assert_array_equal(ptl.relu(x).numpy(), np.maximum(a, 0))
                np.testing.assert_array_equal((x + y).numpy(), a + b)
                if i % 50 == 0:
                    time.sleep(0.02)   # longer than the long poll: the worker sleeps
                    with pytest.raises(IndexError, match="index out of range in self"):
                        x.index_select(0, ptl.tensor(idx))
            results = []

            def work():
                results.append(all(((x + y).numpy() == a + b).all() for _ in range(50)))
            threads = [threading.Thread(target=work) for _ in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert results == [True] * 3
    finally:
        ptl.set_num_threads(old)


def test_thread_pool_survives_fork():
    code = """
import os, numpy as np, pytorchlite as t
a = np.arange(100000, dtype=np.float64)
x = t.tensor(a)
(x + x)
pid = os.fork()
if pid == 0:
    ok = bool(((x + x).numpy() == 2 * a).all())
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "0", r.stderr


@pytest.mark.skipif(not _C._alloc_stats()["caching"],
                    reason="the allocator's caches are bypassed (PTL_NO_ALLOC_CACHE or a sanitized build)")
def test_allocator_stats_and_cache():
    s0 = _C._alloc_stats()
    xs = [ptl.tensor(np.ones(1000, np.float32)) for _ in range(10)]
    s1 = _C._alloc_stats()
    assert s1["allocated_bytes"] >= s0["allocated_bytes"] + 10 * 4000
    del xs
    s2 = _C._alloc_stats()
    assert s2["allocated_bytes"] <= s1["allocated_bytes"] - 10 * 4000
    assert s2["cached_bytes"] > 0
    _C._empty_cache()
    assert _C._alloc_stats()["cached_bytes"] == 0


def test_cache_bypass_allocates_exact_sizes():
    code = """
import numpy as np
import pytorchlite as ptl
from pytorchlite import _C
s0 = _C._alloc_stats()
xs = [ptl.tensor(np.ones(1000, np.float32)) for _ in range(10)]
s1 = _C._alloc_stats()
del xs
s2 = _C._alloc_stats()
print(s0["caching"], s1["allocated_bytes"] - s0["allocated_bytes"],
      s1["allocated_bytes"] - s2["allocated_bytes"], s2["cached_bytes"], s2["cache_hits"])
"""
    env = dict(os.environ, PTL_NO_ALLOC_CACHE="1")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "40000", "40000", "0", "0"]


def test_default_dtype():
    assert ptl.get_default_dtype() == ptl.float32
    try:
        ptl.set_default_dtype(ptl.float64)
        assert ptl.tensor([1.5]).dtype == ptl.float64
        assert (ptl.tensor([1, 2]) / 2).dtype == ptl.float64
        assert (ptl.tensor([1, 2]) + 0.5).dtype == ptl.float64
    finally:
        ptl.set_default_dtype(ptl.float32)
    with pytest.raises(TypeError, match="only floating-point types are supported as the default type"):
        ptl.set_default_dtype(ptl.int64)


def test_result_type_and_promote_types():
    assert ptl.promote_types(ptl.uint8, ptl.int8) == ptl.int16
    assert ptl.promote_types(ptl.float16, ptl.bfloat16) == ptl.float32
    assert ptl.result_type(ptl.tensor([1], dtype=ptl.int32), 1.0) == ptl.float32
    assert ptl.result_type(ptl.tensor([1], dtype=ptl.int8), 1000) == ptl.int8
    # a 0-dim float tensor lifts an int tensor to its own float dtype
    assert ptl.result_type(ptl.tensor(1.0, dtype=ptl.float64), ptl.tensor([1], dtype=ptl.int32)) == ptl.float64
    assert ptl.result_type(ptl.tensor(1.0, dtype=ptl.float64), ptl.tensor([1.0])) == ptl.float32
    assert ptl.can_cast(ptl.float32, ptl.int32) is False
    assert ptl.can_cast(ptl.int32, ptl.float32) is True
    assert ptl.can_cast(ptl.int32, ptl.bool) is False


def test_promotion_matches_torch_on_all_pairs():
    names = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
             "float32", "float64"]
    table = golden(lambda: [[str(torch.promote_types(getattr(torch, a), getattr(torch, b)))
                             for b in names] for a in names])
    for a, row in zip(names, table):
        for b, want in zip(names, row):
            assert str(ptl.promote_types(getattr(ptl, a), getattr(ptl, b))) == want, (a, b)


def test_device_objects():
    d = ptl.device("cuda:1")
    assert (d.type, d.index) == ("cuda", 1)
    assert repr(d) == "device(type='cuda', index=1)" and str(d) == "cuda:1"
    assert ptl.device("cpu") == ptl.device("cpu") and hash(ptl.device("cpu")) == hash(ptl.device("cpu"))
    assert ptl.device("cuda", 0) == ptl.device("cuda:0")
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, meta device type at start of device string: gpu"):
        ptl.device("gpu")
    with pytest.raises(RuntimeError, match="Invalid device string: 'cuda:x'"):
        ptl.device("cuda:x")


@pytest.mark.skipif(ptl.cuda.is_available(), reason="a CUDA device is present")
@pytest.mark.skipif(not _C._alloc_stats()["caching"],
                    reason="the allocator's caches are bypassed (PTL_NO_ALLOC_CACHE or a sanitized build)")
def test_big_blocks_reuse_the_most_recently_freed_and_drop_the_oldest():
    """An allocation takes the block of its size freed last (the likeliest still in the
    cache); past BIG_SLOTS = 64 blocks the least recently freed one is returned to libc."""
    _C._empty_cache()
    n = 300_000                                   # 1.2 MB: a big block
    a, b = ptl.empty(n), ptl.empty(n)
    pa, pb = a.data_ptr(), b.data_ptr()
    del a
    del b
    assert ptl.empty(n).data_ptr() == pb          # freed last, reused first
    c, d = ptl.empty(n), ptl.empty(n)
    assert {c.data_ptr(), d.data_ptr()} == {pa, pb}
    del c, d
    _C._empty_cache()
    blocks = [ptl.empty(n) for _ in range(70)]
    ptrs = [t.data_ptr() for t in blocks]
    for i in range(70):
        blocks[i] = None                          # freed in order 0, 1, ..., 69
    assert _C._alloc_stats()["cached_bytes"] == 64 * n * 4
    kept = [ptl.empty(n) for _ in range(64)]
    assert [t.data_ptr() for t in kept] == ptrs[69:5:-1]   # newest first; 0..5 dropped
    del kept
    _C._empty_cache()


def test_cuda_tensor_without_cuda_is_a_clear_error():
    with pytest.raises(RuntimeError, match="Torch not compiled with CUDA enabled|CUDA"):
        ptl.tensor([1.0], device="cuda")


@pytest.mark.skipif(not _C._alloc_stats()["caching"],
                    reason="the allocator's caches are bypassed (PTL_NO_ALLOC_CACHE or a sanitized build)")
def test_big_blocks_are_reused_exactly():
    _C._empty_cache()
    x = ptl.tensor(np.ones(300_000, np.float32))
    (x + x)                                   # a 1.2 MB result, freed at once
    s0 = _C._alloc_stats()
    assert s0["cached_bytes"] >= 1_200_000
    for _ in range(5):
        (x + x)
    s1 = _C._alloc_stats()
    assert s1["cache_hits"] - s0["cache_hits"] >= 5
    assert s1["cached_bytes"] == s0["cached_bytes"]
    _C._empty_cache()
    assert _C._alloc_stats()["cached_bytes"] == 0
