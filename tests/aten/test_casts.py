"""The casts of training with vectorized contiguous loops (Note [Vectorized casts] in copy.c):
float32 -> int64 / int32, float64 -> int64, int64 / int32 / uint8 / bool -> float32,
float32 <-> float64, int64 -> float64.  A contiguous run takes the AVX2 or AVX-512 loop, a
strided one the table's scalar loop: both give the same bits, PyTorch's x86 results for NaN
and out-of-range values (INT64_MIN / INT32_MIN), and NumPy's float64 numbers elsewhere."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import rerun_with_capability

INT_MIN = {ptl.int64: np.iinfo(np.int64).min, ptl.int32: np.iinfo(np.int32).min}

# (source numpy dtype, destination dtype): the pairs of copy.c's vec_convs
PAIRS = [(np.float32, ptl.int64), (np.float32, ptl.int32), (np.float64, ptl.int64),
         (np.int64, ptl.float32), (np.int32, ptl.float32), (np.uint8, ptl.float32),
         (np.bool_, ptl.float32), (np.float64, ptl.float32), (np.float32, ptl.float64),
         (np.int64, ptl.float64)]
NP_OF = {ptl.int64: np.int64, ptl.int32: np.int32, ptl.float32: np.float32,
         ptl.float64: np.float64}
# run lengths around the vector widths (4 to 16 lanes, unrolled by gcc) and a run that is
# split over two threads
LENGTHS = list(range(0, 34)) + [63, 64, 65, 127, 128, 129, 255, 256, 257, 100003]


def values(src, n, seed):
    rng = np.random.default_rng(seed)
    if src == np.bool_:
        return rng.integers(0, 2, n).astype(np.bool_)
    if np.issubdtype(src, np.integer):
        info = np.iinfo(src)
        a = rng.integers(info.min, info.max, n, dtype=src, endpoint=True)
        special = np.array([0, 1, -1, info.min, info.max, 2 ** 24 + 1, 255], dtype=np.int64)
        special = special[(special >= info.min) & (special <= info.max)].astype(src)
    else:
        a = (rng.standard_normal(n) * 10.0 ** rng.integers(-8, 25, n)).astype(src)
        special = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30, 2.0 ** 31,
                            -2.0 ** 31, 2.0 ** 31 - 128, -2.0 ** 31 - 256, 2.0 ** 63, -2.0 ** 63,
                            -0.5, 0.5, 2.5, 1e-45, 1e-40, 3.4e38, 2.0 ** 53 + 2], dtype=src)
    a[:min(n, special.size)] = special[:n]
    return rng.permutation(a)


def strided(a):
    wide = np.zeros(2 * a.size, dtype=a.dtype)
    wide[::2] = a
    return ptl.tensor(wide)[::2]


def reference(a, dst):
    """NumPy's float64 values: integers truncated toward zero, NaN and out of range to the
    integer's minimum (cvttss2si / vcvttps2qq, what PyTorch gives on x86)"""
    if dst in INT_MIN:
        info = np.iinfo(NP_OF[dst])
        x = a.astype(np.float64)
        ok = (x >= info.min) & (x < -float(info.min))
        out = np.full(a.shape, info.min, dtype=NP_OF[dst])
        out[ok] = np.trunc(x[ok]).astype(NP_OF[dst])
        return out
    return a.astype(NP_OF[dst])


def bits(x):
    return np.ascontiguousarray(x).tobytes()


@pytest.mark.parametrize("src, dst", PAIRS, ids=str)
def test_vector_and_scalar_loops_give_the_same_bits(src, dst, threads):
    for n in LENGTHS:
        a = values(src, n, seed=n)
        fast = ptl.tensor(a).to(dst).numpy()
        slow = strided(a).to(dst).contiguous().numpy()
        assert bits(fast) == bits(slow), (src, dst, n)
        np.testing.assert_array_equal(fast, reference(a, dst), err_msg=f"n={n}")


@pytest.mark.parametrize("src, dst", PAIRS, ids=str)
def test_strided_destination_and_offset_runs(src, dst):
    a = values(src, 300, seed=1)
    for lo in range(0, 17):                     # runs starting at every lane of a vector
        np.testing.assert_array_equal(ptl.tensor(a)[lo:].to(dst).numpy(),
                                      reference(a[lo:], dst))
    out = ptl.zeros(600, dtype=dst)
    out[::2].copy_(ptl.tensor(a))
    np.testing.assert_array_equal(out[::2].numpy(), reference(a, dst))
    assert not out[1::2].numpy().any()
    assert ptl.tensor(a[:0]).to(dst).shape == (0,)
    assert ptl.tensor(a[3]).to(dst).item() == reference(a[3:4], dst)[0]


@pytest.mark.parametrize("cap", ["default", "avx2"])
def test_portable_and_avx2_loops(cap):
    """Reruns this file with the vector loops switched off, and with AVX2 only."""
    rerun_with_capability(__file__, cap, "-k", "not portable_and_avx2")
