"""Column extremes of float32/float64 (amax(0), amin(0), max(0) / min(0) values and rows;
reduce_kernels.c's column fold, AVX-512, AVX2 and portable): rows 0-4 in the first pass,
four a pass after (the last pass repeating row R - 1, which changes nothing), the extremes
and max.dim's / min.dim's int64 rows stored by reduce.c's typed loops rather than a call an
output.  Exact against NumPy for every row count across the passes (1 to 10, 13, 64, 65),
column counts across reduce.c's 2048-column units, on 1 and 2 threads and on the AVX2 and
portable capabilities; NaN anywhere in a column wins (max.dim: the first NaN's row), the
first of equal values (+0 and -0) is kept; keepdim, non-contiguous and expanded inputs; the
error paths."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import assert_raises_like_torch, num_threads, rerun_with_capability

ROWS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 64, 65]
WIDTHS = [1, 7, 100, 2047, 2048, 2049, 5000]
DTYPES = {"float32": (np.float32, ptl.float32), "float64": (np.float64, ptl.float64)}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_column_extremes_bits(threads, dtype):
    npt, pt = DTYPES[dtype]
    rng = np.random.default_rng(40)
    with num_threads(threads):
        for R in ROWS:
            for n in WIDTHS:
                a = rng.standard_normal((R, n)).astype(npt)
                t = ptl.tensor(a, dtype=pt)
                for got, want in [(t.amax(0), a.max(0)), (t.amin(0), a.min(0)),
                                  (t.max(0).values, a.max(0)), (t.min(0).values, a.min(0))]:
                    assert got.dtype == pt
                    np.testing.assert_array_equal(got.numpy(), want)
                np.testing.assert_array_equal(t.max(0).indices.numpy(), a.argmax(0))
                np.testing.assert_array_equal(t.min(0).indices.numpy(), a.argmin(0))
                m = t.max(0, keepdim=True)
                np.testing.assert_array_equal(m.values.numpy(), a.max(0, keepdims=True))
                np.testing.assert_array_equal(m.indices.numpy(), a.argmax(0)[None])
                np.testing.assert_array_equal(t.amax(0, keepdim=True).numpy(),
                                              a.max(0, keepdims=True))


@pytest.mark.parametrize("threads", [1, 2])
def test_column_extremes_nan_and_signed_zeros_bits(threads):
    with num_threads(threads):
        for R in ROWS:
            a = np.ones((R, 40), np.float32)
            for r in range(R):   # a NaN in row r of column r; -inf and +inf elsewhere
                a[r, r % 40] = np.nan
            a[R - 1, 39] = np.inf
            a[0, 38] = -np.inf
            got = ptl.tensor(a)
            np.testing.assert_array_equal(got.amax(0).numpy(), a.max(0))
            np.testing.assert_array_equal(got.amin(0).numpy(), a.min(0))
            for name in ["max", "min"]:   # the first NaN's row, as NumPy's argmax / argmin
                r = getattr(got, name)(0)
                np.testing.assert_array_equal(r.values.numpy(), getattr(a, name)(0))
                np.testing.assert_array_equal(r.indices.numpy(), getattr(a, "arg" + name)(0))
            z = np.zeros((R, 40), np.float32)   # 40 columns: the column fold
            z[:, 1::2] = -0.0
            z[0, 0::2], z[0, 1::2] = -0.0, 0.0   # the first zero of each column keeps its sign
            for name in ["amax", "amin"]:
                v = getattr(ptl.tensor(z), name)(0).numpy()
                np.testing.assert_array_equal(np.signbit(v), np.signbit(z[0]))


@pytest.mark.parametrize("threads", [1, 2])
def test_column_extremes_strided_and_expanded(threads):
    rng = np.random.default_rng(41)
    with num_threads(threads):
        for R in [3, 5, 9]:
            a = rng.standard_normal((2 * R, 3, 700))
            t = ptl.tensor(a)
            np.testing.assert_array_equal(t[::2].amax(0).numpy(), a[::2].max(0))
            np.testing.assert_array_equal(t[:, 1].amin(0).numpy(), a[:, 1].min(0))
            np.testing.assert_array_equal(t.amax(0).numpy(), a.max(0))
            e = ptl.tensor(a[0, 0]).expand(R, 700)
            np.testing.assert_array_equal(e.amax(0).numpy(), a[0, 0])
            f = ptl.tensor(a[:R, 0, :1]).expand(R, 300)
            np.testing.assert_array_equal(f.amin(0).numpy(), np.full(300, a[:R, 0, 0].min()))


def test_column_extremes_errors():
    assert_raises_like_torch(lambda m: m.zeros(0, 3).amax(0), IndexError,
                             "amax(): Expected reduction dim 0 to have non-zero size.")
    assert_raises_like_torch(lambda m: m.zeros(0, 3).amin(0), IndexError,
                             "amin(): Expected reduction dim 0 to have non-zero size.")


@pytest.mark.parametrize("cap", ["avx2", "default"])
def test_capabilities(cap):
    rerun_with_capability(__file__, cap, "-k", "bits and not capabilities")


INT_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64"]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_column_extremes_exact(threads, dtype):
    # reduce_columns.c's int_extreme_T: four rows a pass, the last pass repeating row R - 1;
    # every row count across the passes, the 2048-column units, the type's own extremes
    rng = np.random.default_rng(41)
    info = np.iinfo(dtype) if dtype != "bool" else None
    with num_threads(threads):
        for R in ROWS:
            for n in WIDTHS:
                if dtype == "bool":
                    a = rng.random((R, n)) < 0.5
                else:
                    a = rng.integers(info.min, info.max, (R, n), dtype=dtype, endpoint=True)
                    a[rng.integers(0, R), rng.integers(0, n)] = info.min
                    a[rng.integers(0, R), rng.integers(0, n)] = info.max
                t = ptl.tensor(a)
                np.testing.assert_array_equal(t.amax(0).numpy(), a.max(0))
                np.testing.assert_array_equal(t.amin(0).numpy(), a.min(0))
                np.testing.assert_array_equal(t[:, ::2].amax(0).numpy(), a[:, ::2].max(0))
