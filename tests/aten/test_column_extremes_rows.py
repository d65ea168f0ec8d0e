"""float32 amax(0) / amin(0) of up to EXTREME_FEW_ROWS = 64 rows in registers, stored straight
into the float32 output (reduce_columns.c, Note [Column extremes in registers]): groups of
EXTREME_GROUP = 16 rows a pass over blocks of EXTREME_COLS = 2048 columns, 64 columns a step
on AVX-512 (16 a vector, the last step masked), 32 on AVX2 (then 8 at a time, the last
columns by the scalar fold), a NaN sum sending its step through the scalar fold.  Exact
against NumPy in float64 at and across every one of those sizes (rows 1-7, 15-17, 31-33,
63-65; columns at the vector, step and block edges), on 1 and 2 threads (reduce.c's units of
at most 2048 columns, narrower on two threads) and on the AVX2 and portable capabilities;
NaN anywhere in a column wins as in PyTorch's amax, +inf with -inf, sums past the float
range, signed zeros (the first kept), strided, flipped, offset and expanded rows, size 0,
float64 (AVX-512: the same kernel, 32 columns a step; AVX2: f8_extreme up to F8_FEW_ROWS = 16
rows, two rows a pass, the same rule), the integer
dtypes (exact, reduce_columns.c's typed loops) and float16 / bfloat16 (in float32 between
the cast loops) on the same shapes."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import assert_raises_like_torch, num_threads, rerun_with_capability

ROWS = [1, 2, 3, 4, 5, 6, 7, 8, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65]
WIDTHS = [16, 17, 24, 31, 32, 33, 63, 64, 65, 100, 127, 129, 2047, 2048, 2049, 4160]


def check(t, a):
    """t.amax(0) and t.amin(0) equal a's column extremes computed in float64 (NaN wins)."""
    w = a.astype(np.float64)
    for got, want in [(t.amax(0), w.max(0)), (t.amin(0), w.min(0))]:
        assert got.numpy().dtype == a.dtype
        np.testing.assert_array_equal(got.numpy(), want.astype(a.dtype))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rows_and_widths_bits(threads, dtype):
    """float64: registers 32 columns a step on AVX-512, f8_extreme's typed loop two rows a
    pass up to F8_FEW_ROWS = 16 rows on AVX2 (the capability reruns)"""
    rng = np.random.default_rng(60)
    with num_threads(threads):
        for R in ROWS:
            for n in WIDTHS:
                a = rng.standard_normal((R, n)).astype(dtype)
                check(ptl.tensor(a), a)
                np.testing.assert_array_equal(ptl.tensor(a).amax(0, keepdim=True).numpy(),
                                              a.max(0, keepdims=True))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_wins_in_every_step_bits(threads, dtype):
    """A NaN in one column of a step (first, last, in the masked tail, in each row group):
    that column NaN, the step's other columns exact; +inf with -inf in a column (a NaN sum
    without a NaN), and values whose sum passes the float range, stay exact"""
    rng = np.random.default_rng(61)
    with num_threads(threads):
        for R in [1, 2, 3, 5, 16, 17, 40, 64]:
            for n in [17, 64, 100, 2049]:
                for r, c in {(0, 0), (R - 1, n - 1), (R // 2, n // 2), (R - 1, 63 % n)}:
                    a = rng.standard_normal((R, n)).astype(dtype)
                    a[r, c] = np.nan
                    check(ptl.tensor(a), a)
                a = rng.standard_normal((R, n)).astype(dtype)
                a[0, 3] = np.inf
                a[R - 1, 3] = -np.inf   # R = 1: -inf alone
                a[:, 5] = 3e38
                a[R // 2, 7] = -np.inf
                check(ptl.tensor(a), a)
                a[:, 9] = np.nan
                check(ptl.tensor(a), a)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_signed_zeros_keep_the_first(dtype):
    for R in [2, 3, 5, 16, 17, 64]:
        z = np.zeros((R, 100), dtype)
        z[1:, 1::2] = -0.0
        z[0, 0::2], z[0, 1::2] = -0.0, 0.0
        for name in ["amax", "amin"]:
            v = getattr(ptl.tensor(z), name)(0).numpy()
            np.testing.assert_array_equal(np.signbit(v), np.signbit(z[0]))


@pytest.mark.parametrize("threads", [1, 2])
def test_strided_flipped_offset_and_expanded(threads):
    rng = np.random.default_rng(62)
    with num_threads(threads):
        for R in [2, 6, 17, 33]:
            a = rng.standard_normal((2 * R, 3, 300)).astype(np.float32)
            t = ptl.tensor(a)
            check(t[::2, 1], a[::2, 1])
            check(t[:, 2, 5:], a[:, 2, 5:])
            check(t[:, 0].flip(0), a[::-1, 0])
            np.testing.assert_array_equal(t.amax(0).numpy(), a.max(0))   # 3 outer blocks
            np.testing.assert_array_equal(t.amin(1).numpy(), a.min(1))
            e = ptl.tensor(a[0, 0]).expand(R, 300)
            np.testing.assert_array_equal(e.amax(0).numpy(), a[0, 0])


def test_size_zero_and_errors():
    for R in [1, 2, 64]:
        t = ptl.zeros(R, 0)
        assert t.amax(0).shape == (0,) and t.amin(0).shape == (0,)
    assert_raises_like_torch(lambda m: m.zeros(0, 40).amax(0), IndexError,
                             "amax(): Expected reduction dim 0 to have non-zero size.")


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64", "bool"])
def test_integer_dtypes_exact(dtype, threads):
    """reduce_columns.c's typed loops, two rows a pass (an odd last row paired with itself),
    the output its own accumulator: exact at the dtype's ends, odd and even row counts"""
    rng = np.random.default_rng(63)
    with num_threads(threads):
        for R in [1, 2, 3, 4, 5, 17, 64, 65]:
            for n in [16, 33, 2049, 4100]:
                if dtype == "bool":
                    a = rng.random((R, n)) < 0.5
                else:
                    info = np.iinfo(dtype)
                    a = rng.integers(info.min, info.max, (R, n), endpoint=True).astype(dtype)
                    a[R // 2, :3] = [info.min, info.max, 0]
                t = ptl.tensor(a)
                for got, want in [(t.amax(0), a.max(0)), (t.amin(0), a.min(0))]:
                    assert got.numpy().dtype == a.dtype
                    np.testing.assert_array_equal(got.numpy(), want)
                np.testing.assert_array_equal(t[:, 1:].amax(0).numpy(), a[:, 1:].max(0))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_dtypes_exact(dtype, threads):
    """float16 / bfloat16 amax(0) and amin(0): rows cast to float32, folded by the column
    fold's rule (f4_take), cast back: the extremes of the rounded values, NaN wins"""
    rng = np.random.default_rng(64)
    pt = getattr(ptl, dtype)
    with num_threads(threads):
        for R in [1, 2, 5, 17, 65]:
            for n in [16, 33, 2049]:
                t = ptl.tensor(rng.standard_normal((R, n)).astype(np.float32)).to(pt)
                t[R - 1, 5] = float("nan")
                a = t.float().numpy()
                for got, want in [(t.amax(0), a.max(0)), (t.amin(0), a.min(0))]:
                    assert got.dtype == pt
                    np.testing.assert_array_equal(got.float().numpy(), want)


@pytest.mark.parametrize("cap", ["avx2", "default"])
def test_capabilities(cap):
    rerun_with_capability(__file__, cap, "-k", "not capabilities")
