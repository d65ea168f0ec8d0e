"""all and any on the values' bits (reduce_truth.c, Note [Truth of bits]): contiguous runs of
every length 0..33 and around the column blocks, with the lengths 1..8 and 16 each their own
loop; columns of 2..33 rows and of block widths around PTL_RED_COL_BLOCK (2048); every real
dtype, with -0.0 (false), NaN, inf and subnormals (true) in floats; transposed, sliced and
expanded inputs; 1 and 2 threads; the uint8 result of uint8.  Exact against NumPy.  Also the
integer column sums stored straight into their int64 outputs (reduce.c's reduce_columns)."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import num_threads

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
          "float32", "float64"]
RUN_LENGTHS = list(range(0, 34)) + [63, 64, 65, 2047, 2048, 2049]
COL_COUNTS = [16, 17, 31, 100, 2047, 2048, 2049, 4100]


def values(rng, dtype, shape, p_true):
    """A float64 array of shape whose elements are true with probability p_true: small
    integers, and in floats also -0.0 (false), NaN, inf and the smallest subnormal (true)"""
    a = rng.integers(1, 4, shape) * np.where(rng.random(shape) < 0.5, -1, 1).astype(np.float64)
    a[rng.random(shape) >= p_true] = 0
    if dtype.startswith("float") or dtype == "bfloat16":
        special = rng.random(shape)
        a[(special < 0.1) & (a == 0)] = -0.0
        a[(special > 0.9) & (a != 0)] = np.nan
        a[(special > 0.8) & (special <= 0.9) & (a != 0)] = -np.inf
        tiny = {"float16": 2.0 ** -24, "bfloat16": 2.0 ** -133, "float32": 2.0 ** -149,
                "float64": 2.0 ** -1074}[dtype]   # each dtype's smallest subnormal
        a[(special > 0.7) & (special <= 0.8) & (a != 0)] = tiny
    return a


def tensor(a, dtype):
    if dtype == "bfloat16":   # the values above are all exact in bfloat16
        return ptl.tensor(a.astype(np.float32)).to(ptl.bfloat16)
    return ptl.tensor(a.astype(np.bool_ if dtype == "bool" else dtype))


def check(t, a, dim, dtype):
    for op in ("all", "any"):
        got = getattr(t, op)(dim)
        want = getattr(a != 0, op)(dim)
        assert got.dtype == (ptl.uint8 if dtype == "uint8" else ptl.bool), (op, dtype)
        np.testing.assert_array_equal(got.numpy().astype(np.bool_), want,
                                      err_msg=f"{op} {dtype} {tuple(t.shape)} dim {dim}")


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", DTYPES)
def test_runs_every_length(dtype, threads):
    rng = np.random.default_rng(5)
    with num_threads(threads):
        for n in RUN_LENGTHS:
            rows = max(1, 40000 // max(n, 1))   # past the grain, split over the threads
            for p_true in (0.05, 0.5, 0.97):
                a = values(rng, dtype, (rows, n), p_true)
                check(tensor(a, dtype), a, 1, dtype)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", DTYPES)
def test_columns_few_rows_and_block_widths(dtype, threads):
    rng = np.random.default_rng(6)
    with num_threads(threads):
        for R in range(2, 34):
            for p_true in (0.1, 0.9):
                a = values(rng, dtype, (R, 40), p_true)
                check(tensor(a, dtype), a, 0, dtype)
        for cols in COL_COUNTS:
            for R in (2, 5, 16):
                a = values(rng, dtype, (R, cols), 0.8)
                check(tensor(a, dtype), a, 0, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_one_true_or_false_value_in_every_position(dtype):
    # a row (or column) of one kind with the other kind at position j
    for n in (1, 2, 3, 7, 8, 9, 16, 17, 33):
        for fill, other in ((0.0, 1.0), (1.0, 0.0)):
            a = np.full((n, n), fill)
            a[np.arange(n), np.arange(n)] = other
            t = tensor(a, dtype)
            check(t, a, 1, dtype)
            if n >= 2:
                wide = np.tile(a.T, (1, 20))   # at least 16 columns: the column plan
                check(tensor(wide, dtype), wide, 0, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_non_contiguous_0dim_and_size0(dtype):
    rng = np.random.default_rng(7)
    a = values(rng, dtype, (40, 30), 0.7)
    t = tensor(a, dtype)
    check(t.t(), a.T, 1, dtype)
    check(t.t(), a.T, 0, dtype)
    check(t[:, ::2], a[:, ::2], 1, dtype)
    check(t[::3, 1:], a[::3, 1:], 0, dtype)
    e = tensor(a[:1], dtype).expand(50, 30)
    check(e, np.broadcast_to(a[:1], (50, 30)), 0, dtype)
    check(e, np.broadcast_to(a[:1], (50, 30)), 1, dtype)
    for shape, dim in (((0, 5), 0), ((0, 5), 1), ((5, 0), 1), ((5, 0), 0)):
        z = np.zeros(shape)
        check(tensor(z, dtype), z, dim, dtype)
    s = tensor(np.array(2.0), dtype)
    assert bool(s.all()) and bool(s.any(0))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64", "bool"])
def test_integer_column_sums(dtype, threads):
    rng = np.random.default_rng(8)
    info = np.iinfo(np.int8 if dtype == "bool" else dtype)
    with num_threads(threads):
        for R, cols in [(2, 16), (3, 17), (2, 65536), (4, 2049), (16, 4100), (33, 100)]:
            a = rng.integers(info.min, info.max, (R, cols), endpoint=True)
            a = (a > 0) if dtype == "bool" else a.astype(dtype)
            got = ptl.tensor(a).sum(0)
            assert got.dtype == ptl.int64
            np.testing.assert_array_equal(got.numpy(), a.astype(np.int64).sum(0))
