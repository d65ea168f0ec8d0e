"""Reductions whose outputs are each one contiguous run (reduce_runs.c's fold_runs, Note [Runs
without accumulators]): the float extremes' AVX2 chains (Note [Extremes of runs]), the integer
extremes' (Note [Integer extremes of runs]), the 1- and 2-norms' sixteen double lanes, and the
integer column sums, four rows at a time.  Exact against NumPy, at every length around the
vectors, the four-vector blocks and the overlapping last vector, with the extreme or a NaN in
every position, at 1 and 2 threads and with the portable loops (PTL_CPU_CAPABILITY=default)
and AVX2 only.  The column reductions' stores (ptl_red_put_columns): float32 means by a
division, or by a product where the row count is a power of two, the same bits.  The column
sums of few rows in registers (Note [Column sums of few rows]), the norms of short runs (Note
[Norms of short runs]) and the float32 products of short rows with a 0: the bits of the
chains and folds they keep, at every row count and length around their thresholds."""
import os
import subprocess
import sys

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import ROOT, num_threads, rerun_with_capability

FLOAT_NP = {ptl.float32: np.float32, ptl.float64: np.float64}
INT_NP = {ptl.bool: np.bool_, ptl.uint8: np.uint8, ptl.int8: np.int8, ptl.int16: np.int16,
          ptl.int32: np.int32, ptl.int64: np.int64}
# every length to two four-vector blocks and a vector past them (8 float32 lanes, blocks of
# 32), and past two int8 blocks (32 lanes, blocks of 128)
FLOAT_LENGTHS = list(range(1, 2 * 32 + 10)) + [127, 128, 129, 1000]
INT_LENGTHS = list(range(1, 80)) + [95, 96, 97, 127, 128, 129, 159, 160, 161, 255, 256, 257,
                                    289, 1000]


def random_ints(rng, npdt, shape):
    """Integers of NumPy dtype npdt over its whole range (bool: int8's, then > 0)."""
    info = np.iinfo(np.int8 if npdt == np.bool_ else npdt)
    a = rng.integers(info.min, info.max, shape, endpoint=True)
    return (a > 0) if npdt == np.bool_ else a.astype(npdt)


def every_position(base, value):
    """Rows of base (length n), row j with value at position j: one call covers them all."""
    rows = np.repeat(base[None, :], len(base), axis=0)
    rows[np.arange(len(base)), np.arange(len(base))] = value
    return rows


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", list(FLOAT_NP), ids=str)
def test_float_extremes_of_rows(dtype, threads):
    npdt = FLOAT_NP[dtype]
    rng = np.random.default_rng(1)
    with num_threads(threads):
        for n in FLOAT_LENGTHS:
            base = rng.standard_normal(n).astype(npdt)
            for value in [9.0, -9.0, np.inf, -np.inf, np.nan]:
                a = every_position(base, value)
                t = ptl.tensor(a)
                np.testing.assert_array_equal(t.amax(1).numpy(), a.max(1))
                np.testing.assert_array_equal(t.amin(1).numpy(), a.min(1))
                # strided rows take the blocks of step_d; a 3-D view merges its last two dims
                np.testing.assert_array_equal(t[::2].amax(-1).numpy(), a[::2].max(-1))
                if n % 2 == 0:
                    u = t.view(n, 2, n // 2)
                    np.testing.assert_array_equal(u.amin((1, 2)).numpy(), a.min(1))
            assert np.isnan(ptl.tensor(np.full((2, n), np.nan, npdt)).amax(1).numpy()).all()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", list(INT_NP), ids=str)
def test_integer_extremes_of_rows(dtype, threads):
    npdt = INT_NP[dtype]
    rng = np.random.default_rng(2)
    if npdt == np.bool_:
        lo, hi, values = 0, 1, [True, False]
    else:
        info = np.iinfo(npdt)
        lo, hi = info.min, info.max
        values = [lo, hi, lo + 1, hi - 1]
    with num_threads(threads):
        for n in INT_LENGTHS:
            if npdt == np.bool_:
                bases = [np.zeros(n, np.bool_), np.ones(n, np.bool_)]
            else:   # values in the middle of the range, and near its ends
                bases = [rng.integers(lo // 4, hi // 4, n, dtype=npdt, endpoint=True),
                         rng.integers(lo, hi, n, dtype=npdt, endpoint=True)]
            for base in bases:
                for value in values:
                    a = every_position(base, value)
                    t = ptl.tensor(a)
                    got, want = t.amax(1), a.max(1)
                    assert got.dtype == dtype
                    np.testing.assert_array_equal(got.numpy(), want)
                    np.testing.assert_array_equal(t.amin(1).numpy(), a.min(1))
                    np.testing.assert_array_equal(ptl.tensor(a.T.copy()).t().amax(1).numpy(), want)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", list(INT_NP), ids=str)
def test_integer_extremes_of_many_rows(dtype, threads):
    """A block of rows is one ptl_red_maxmin_runs_int call: kept dims that tile evenly (3-D,
    row steps of 1 and 2 rows), ones that do not (each row by itself), and enough rows that 2
    threads split them."""
    npdt = INT_NP[dtype]
    rng = np.random.default_rng(7)
    with num_threads(threads):
        for n in [1, 7, 8, 31, 32, 33, 64, 65]:
            rows = 40000 // n
            a = rng.integers(0, 2, (rows, n)) if npdt == np.bool_ else \
                rng.integers(-100, 100, (rows, n))
            a = a.astype(npdt)
            t = ptl.tensor(a)
            for got, want in [(t, a), (t[1::2], a[1::2]),
                              (t[: rows // 4 * 4].view(rows // 4, 4, n),
                               a[: rows // 4 * 4].reshape(rows // 4, 4, n)),
                              (t[: rows // 4 * 4].view(rows // 4, 4, n)[:, 1:],
                               a[: rows // 4 * 4].reshape(rows // 4, 4, n)[:, 1:])]:
                np.testing.assert_array_equal(got.amax(-1).numpy(), want.max(-1))
                np.testing.assert_array_equal(got.amin(-1).numpy(), want.min(-1))
                np.testing.assert_array_equal(got.max(-1).values.numpy(), want.max(-1))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", list(INT_NP), ids=str)
def test_integer_row_sums_and_column_sums(dtype, threads):
    # rows: fold_runs' sums; columns: four rows at a time into int64, then the rest one by one
    npdt = INT_NP[dtype]
    rng = np.random.default_rng(3)
    with num_threads(threads):
        for rows in list(range(1, 10)) + [31, 33, 1000]:
            for cols in [1, 15, 16, 17, 64, 2047, 2049]:
                if rows * cols > 300000:
                    continue
                a = random_ints(rng, npdt, (rows, cols))
                t = ptl.tensor(a)
                with np.errstate(over="ignore"):
                    for dim in (0, 1):
                        got = t.sum(dim)
                        assert got.dtype == ptl.int64
                        np.testing.assert_array_equal(got.numpy(), a.astype(np.int64).sum(dim))
                    np.testing.assert_array_equal(t.sum(1, dtype=ptl.int32).numpy(),
                                                  a.astype(np.int64).sum(1).astype(np.int32))
        big = np.full((9, 20), 2 ** 62, np.int64)   # wraps as NumPy's int64 does
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(ptl.tensor(big).sum(0).numpy(), big.sum(0))
            np.testing.assert_array_equal(ptl.tensor(big).sum(1).numpy(), big.sum(1))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", list(INT_NP), ids=str)
def test_integer_sums_of_many_short_rows(dtype, threads):
    # ptl_red_sum_runs_int: the int64 sums of a block of rows in one call, the rows' loop
    # inlined: row counts around the grain of a thread's block (PTL_GRAIN_SIZE / 16 + 1 = 2049
    # rows of 16) and past two blocks, rows of every length to 40 and past a vector, 1 to 9
    # long rows (four rows a loop, Note [Integer sums of runs], and every leftover), the kept
    # dims of a 3-D tensor (evenly tiled: one call; sliced: a row at a time), a strided row
    # (the other path), int32 outputs (a row at a time), empty rows and a 0-dim tensor
    rng = np.random.default_rng(8)

    def ints(shape):
        return random_ints(rng, INT_NP[dtype], shape)

    with num_threads(threads), np.errstate(over="ignore"):
        for rows, n in [(2048, 16), (2049, 16), (2050, 16), (4099, 16), (3, 1), (1, 33)] + [
                (37, k) for k in range(1, 41)] + [(5, 67)] + [(r, 1000) for r in range(1, 10)]:
            a = ints((rows, n))
            t = ptl.tensor(a)
            np.testing.assert_array_equal(t.sum(1).numpy(), a.astype(np.int64).sum(1))
            np.testing.assert_array_equal(t.sum(-1, dtype=ptl.int32).numpy(),
                                          a.astype(np.int64).sum(1).astype(np.int32))
        a = ints((6, 7, 19))
        t = ptl.tensor(a)
        for got, want in [(t.sum(2), a), (t[:, 1:5].sum(2), a[:, 1:5]),
                          (t[:, :, 1:].sum(2), a[:, :, 1:]), (t[:, :, ::2].sum(2), a[:, :, ::2]),
                          (t.transpose(1, 2).sum(2), a.transpose(0, 2, 1))]:
            np.testing.assert_array_equal(got.numpy(), want.astype(np.int64).sum(2))
        e = ptl.tensor(ints((5, 0)))
        np.testing.assert_array_equal(e.sum(1).numpy(), np.zeros(5, np.int64))
        z = ints(())
        assert ptl.tensor(z).sum(0).item() == int(z)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", list(FLOAT_NP), ids=str)
def test_norms_of_rows(dtype, threads):
    npdt = FLOAT_NP[dtype]
    rng = np.random.default_rng(4)
    tol = 1e-6 if dtype == ptl.float32 else 1e-14
    with num_threads(threads):
        for n in list(range(0, 50)) + [63, 64, 65, 1000]:
            a = rng.standard_normal((3, n)).astype(npdt)
            t = ptl.tensor(a)
            w = a.astype(np.float64)
            np.testing.assert_allclose(t.norm(2, 1).numpy(), np.sqrt((w * w).sum(1)), rtol=tol)
            np.testing.assert_allclose(t.norm(1, 1).numpy(), np.abs(w).sum(1), rtol=tol)
            if n > 0:
                b = every_position(a[0], np.nan)
                assert np.isnan(ptl.tensor(b).norm(2, 1).numpy()).all()
                b = every_position(a[0], np.inf)
                assert (ptl.tensor(b).norm(1, 1).numpy() == np.inf).all()


def test_size_zero_and_zero_dim():
    for dtype in [ptl.float32, ptl.int32, ptl.int8]:
        e = ptl.zeros((3, 0), dtype=dtype)
        np.testing.assert_array_equal(e.sum(1).numpy(), np.zeros(3))
        assert e.sum(1).dtype == (ptl.int64 if dtype != ptl.float32 else ptl.float32)
        assert tuple(ptl.zeros((0, 5), dtype=dtype).amax(1).shape) == (0,)
        s = ptl.tensor(np.array(7, dtype=np.float32 if dtype == ptl.float32 else np.int64))
        s = s.to(dtype)
        assert s.amax().item() == 7 and s.amin(0).item() == 7 and s.sum(0).item() == 7
    np.testing.assert_array_equal(ptl.zeros((3, 0)).norm(2, 1).numpy(), np.zeros(3))
    with pytest.raises(IndexError, match=r"amax\(\): Expected reduction dim 1 to have non-zero"):
        ptl.zeros((3, 0)).amax(1)


CHILD = """
import numpy as np, pytorchlite as ptl
rng = np.random.default_rng(6)
out = []
for dtype in (ptl.float32, ptl.float64):
    for n in list(range(0, 70)) + [1000, 1025]:
        a = rng.standard_normal((3, n)) * np.exp(5 * rng.standard_normal((3, n)))
        t = ptl.tensor(a).to(dtype)
        out += [t.norm(2, 1).to(ptl.float64).numpy(), t.norm(1, 1).to(ptl.float64).numpy()]
print(np.concatenate(out).view(np.int64).tolist())
"""


@pytest.mark.skipif("PTL_CPU_CAPABILITY" in os.environ,
                    reason="already running with a capability chosen by a parent run")
def test_norms_same_bits_with_the_portable_loops():
    """The AVX2 norms keep the portable loops' lanes and order: the same bits."""
    def bits(env):
        r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                           text=True, cwd=ROOT)
        assert r.returncode == 0, r.stderr[-3000:]
        return r.stdout
    assert bits(dict(os.environ, PTL_CPU_CAPABILITY="default")) == bits(dict(os.environ))


@pytest.mark.skipif("PTL_CPU_CAPABILITY" in os.environ,
                    reason="already running with a capability chosen by a parent run")
@pytest.mark.parametrize("cap", ["default", "avx2"])
def test_runs_other_capabilities(cap):
    """Reruns this file with the portable loops and with AVX2 only."""
    rerun_with_capability(__file__, cap)


@pytest.mark.parametrize("threads", [1, 2])
def test_column_means_round_once_power_of_two_or_not(threads):
    """Sums that are exact (integers times 2^-140: subnormal inputs, and means down in the
    subnormals), so the mean is the float64 sum over R rounded once, whether R is a power of
    two (a product by 1 / R) or not (a division); columns and channels_last planes"""
    rng = np.random.default_rng(8)
    scale = np.float32(2.0 ** -140)
    with num_threads(threads):
        for R in [2, 3, 4, 7, 49, 63, 64, 65, 128]:
            for cols in [16, 17, 100]:
                a = rng.integers(-1000, 1000, (R, cols)).astype(np.float32) * scale
                want = (a.astype(np.float64).sum(0) / R).astype(np.float32)
                got = ptl.tensor(a).mean(0).numpy()
                assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (R, cols)
                s = ptl.tensor(a).sum(0).numpy()
                np.testing.assert_array_equal(s, a.astype(np.float64).sum(0).astype(np.float32))
        for hw in [(8, 8), (7, 7), (4, 8)]:
            a = rng.integers(-1000, 1000, (3, 32) + hw).astype(np.float32) * scale
            x = ptl.tensor(a).contiguous(memory_format=ptl.channels_last)
            want = (a.astype(np.float64).sum((2, 3)) / (hw[0] * hw[1])).astype(np.float32)
            assert np.array_equal(x.mean((2, 3)).numpy().view(np.uint32), want.view(np.uint32))
            y = ptl.nn.functional.adaptive_avg_pool2d(x, 1).numpy().reshape(3, 32)
            assert np.array_equal(y.view(np.uint32), want.view(np.uint32))


SHORT_DTYPES = ["uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
                "float64"]


def short_tensor(a, dtype):
    """a (float64, values exact in dtype) as a pytorchlite tensor of dtype"""
    if dtype == "bfloat16":
        return ptl.tensor(a.astype(np.float32)).to(ptl.bfloat16)
    return ptl.tensor(a.astype(dtype))


def check_short_extremes(t, a, dtype):
    for op, ref in (("amax", np.max), ("amin", np.min)):
        got = getattr(t, op)(1)
        assert got.dtype == t.dtype
        np.testing.assert_array_equal(got.float().numpy().astype(np.float64), ref(a, 1),
                                      err_msg=f"{op} {dtype} {a.shape}")
    for op, ref in (("argmax", np.argmax), ("argmin", np.argmin)):
        np.testing.assert_array_equal(getattr(t, op)(1).numpy(), ref(a, 1),
                                      err_msg=f"{op} {dtype} {a.shape}")


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", SHORT_DTYPES)
def test_short_run_extremes_every_length_and_position(dtype, threads):
    # runs of 2..16 values each take a loop of their own length (Note [Extremes of short
    # runs]); 1 and 17 on do not; float16 and bfloat16 go through float32 256 runs at a time;
    # the extreme, ties (the first wins) and NaN (the first) in every position
    rng = np.random.default_rng(21)
    floats = dtype.startswith("float") or dtype == "bfloat16"
    with num_threads(threads):
        for n in list(range(1, 18)) + [33]:
            for rows in (1, 255, 256, 257, max(300, 40000 // n)):
                a = rng.integers(0 if dtype == "uint8" else -4, 5, (rows, n)).astype(np.float64)
                if floats:
                    a[rng.random(a.shape) < 0.02] = np.nan
                    a[rng.random(a.shape) < 0.05] = -np.inf
                check_short_extremes(short_tensor(a, dtype), a, dtype)
            for value in ([9.0, -9.0, np.nan, np.inf, -np.inf] if floats else [9.0, 0.0]):
                a = every_position(np.full(n, 1.0), value)
                a = np.concatenate([a, a[::-1]])
                check_short_extremes(short_tensor(a, dtype), a, dtype)


@pytest.mark.parametrize("dtype", SHORT_DTYPES)
def test_short_run_extremes_strided_expanded_and_signed_zeros(dtype):
    rng = np.random.default_rng(22)
    a = rng.integers(0, 7, (300, 40)).astype(np.float64)
    t = short_tensor(a, dtype)
    for n in (2, 3, 8, 16):
        check_short_extremes(t[:, 5:5 + n], a[:, 5:5 + n], dtype)   # runs 40 values apart
        check_short_extremes(t[::3, :n], a[::3, :n], dtype)
        check_short_extremes(t[:, :2 * n:2], a[:, :2 * n:2], dtype)   # strided runs
        e = short_tensor(a[:1, :n].copy(), dtype).expand(50, n)
        check_short_extremes(e, np.broadcast_to(a[:1, :n], (50, n)), dtype)
    if dtype.startswith("float") or dtype == "bfloat16":
        # the first of -0.0 and +0.0, as PyTorch's amax and amin give
        for first in (-0.0, 0.0):
            z = short_tensor(np.array([[first, -first, first, -first, -first]] * 3), dtype)
            for op in ("amax", "amin"):
                assert np.signbit(float(getattr(z, op)(1)[0])) == np.signbit(first), op


def lowp_lane_sums(a):
    """The float32 sums of the rows of a (float32, up to 64 columns) in the lanes of Note
    [Half-precision sums]: value k into lane k (0 + the value), lane k += lane k + w for w =
    32, 16, ..., 1"""
    lanes = np.zeros((a.shape[0], 64), np.float32)
    with np.errstate(all="ignore"):
        lanes[:, :a.shape[1]] += a
        w = 32
        while w >= 1:
            lanes[:, :w] += lanes[:, w:2 * w]
            w //= 2
    return lanes[:, 0]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [ptl.float16, ptl.bfloat16])
def test_short_run_half_precision_sums_bits(dtype, threads):
    # sums and means of runs of 1..16 values in registers (Note [Half-precision sums of short
    # runs]), 256 runs cast at a time: the bits of the lanes; 17 on, and runs apart, as before
    rng = np.random.default_rng(23)
    with num_threads(threads):
        for n in list(range(1, 18)) + [33]:
            for rows in (1, 255, 256, 257, max(300, 40000 // n)):
                a = (rng.standard_normal((rows, n)) *
                     rng.choice([1e-3, 1, 100, 3e4], (rows, n))).astype(np.float32)
                a[rng.random(a.shape) < 0.02] = -0.0
                a[rng.random(a.shape) < 0.005] = np.nan
                a[rng.random(a.shape) < 0.005] = -np.inf
                t = ptl.tensor(a).to(dtype)
                v = t.float().numpy()
                want = ptl.tensor(lowp_lane_sums(v)).to(dtype)
                np.testing.assert_array_equal(t.sum(1).float().numpy(), want.float().numpy(),
                                              err_msg=f"sum {dtype} {a.shape}")
                mean = t.mean(1).float().numpy()
                with np.errstate(invalid="ignore"):
                    ref = v.astype(np.float64).mean(1)
                tol = 1e-2 if dtype == ptl.bfloat16 else 2e-3
                np.testing.assert_allclose(mean, ref, rtol=tol, atol=tol * np.abs(v[np.isfinite(v)]).max(),
                                           err_msg=f"mean {dtype} {a.shape}")
        w = ptl.tensor(rng.standard_normal((300, 40)).astype(np.float32)).to(dtype)
        for n in (2, 5, 16):
            for view in (w[:, 3:3 + n], w[::2, :n], w[:, :2 * n:2]):
                v = view.float().numpy()
                np.testing.assert_array_equal(view.sum(1).float().numpy(),
                                              ptl.tensor(lowp_lane_sums(v)).to(dtype).float()
                                              .numpy())


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("npdt", list(INT_NP.values()))
def test_short_run_integer_sums(npdt, threads):
    # sums into int64 of runs of 1..16 values each in a loop of its own length, 17 on as
    # before; the whole range of each dtype (int64 wraps, as PyTorch's), strided and sliced
    rng = np.random.default_rng(24)
    with num_threads(threads):
        for n in list(range(1, 18)) + [33]:
            for rows in (1, 3, max(300, 40000 // n)):
                a = random_ints(rng, npdt, (rows, n))
                got = ptl.tensor(a).sum(1)
                assert got.dtype == ptl.int64
                np.testing.assert_array_equal(got.numpy(), a.astype(np.int64).sum(1),
                                              err_msg=f"{npdt} {a.shape}")
        a = random_ints(rng, npdt, (200, 40))
        t = ptl.tensor(a)
        for n in (2, 5, 16):
            for view, ref in ((t[:, 3:3 + n], a[:, 3:3 + n]), (t[::3, :n], a[::3, :n]),
                              (t[:, :2 * n:2], a[:, :2 * n:2])):
                np.testing.assert_array_equal(view.sum(1).numpy(), ref.astype(np.int64).sum(1))


def column_chain(a, dt):
    """The sums of the columns of a (R x n) as reduce.c adds them: float64 row after row from
    +0; float32 in float32 from +0, PTL_RED_COL_GROUP (32) rows a group, each group's sum
    added in float64 (one group: the float32 chain itself).  Returned in float64."""
    if dt == np.float64:
        s = np.zeros(a.shape[1])
        for row in a:
            s = s + row
        return s
    total = np.zeros(a.shape[1])
    for g in range(0, a.shape[0], 32):
        s = np.zeros(a.shape[1], np.float32)
        for row in a[g:g + 32]:
            s = s + row
        total = total + s.astype(np.float64)
    return total


def check_column_sums(t, a, dt):
    """sum(0) and mean(0) of t (the values a) against column_chain: the same bits"""
    with np.errstate(all="ignore"):
        s = column_chain(a, dt)
        mean = (s / a.shape[0]).astype(dt)
    np.testing.assert_array_equal(t.sum(0).numpy().view(np.uint8), s.astype(dt).view(np.uint8),
                                  err_msg=f"sum {dt} {a.shape}")
    np.testing.assert_array_equal(t.mean(0).numpy().view(np.uint8), mean.view(np.uint8),
                                  err_msg=f"mean {dt} {a.shape}")


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", list(FLOAT_NP), ids=str)
def test_column_sums_of_few_rows_bits(dtype, threads):
    # Note [Column sums of few rows]: float32 up to 32 rows and float64 any count, 8 rows a
    # pass, straight into the output: the bits of the buffer's chains, at every row count
    # around the passes and the float32 group, columns around the 2048-column units, the
    # vectors and the 16 columns a column plan takes; -0.0 columns sum to +0.0, NaN and inf
    # where they fall
    dt = FLOAT_NP[dtype]
    rng = np.random.default_rng(30)
    with num_threads(threads):
        for R in list(range(2, 42)) + [63, 64, 65, 100]:
            for n in (15, 16, 17, 31, 33, 100, 2047, 2048, 2049, 4100):
                if R * n > 120000:
                    continue
                a = (rng.standard_normal((R, n)) * np.exp(4 * rng.standard_normal((R, n))))
                a = a.astype(dt)
                a[:, 0] = -0.0
                a[rng.random(a.shape) < 0.001] = np.nan
                a[rng.random(a.shape) < 0.001] = np.inf
                if n >= 16:
                    check_column_sums(ptl.tensor(a), a, dt)
                    continue
                with np.errstate(invalid="ignore"):   # below 16 columns: strided runs
                    w = a.astype(np.float64).sum(0)
                np.testing.assert_allclose(ptl.tensor(a).sum(0).numpy(), w, rtol=1e-5,
                                           atol=1e-5 * np.abs(a[np.isfinite(a)]).sum())


@pytest.mark.parametrize("threads", [1, 2])
def test_float32_column_sums_of_many_rows_bits(threads):
    # ptl_red_add_rows_f4's groups of 32 rows: from 8 to 64 columns in registers, the last
    # vector shifted to end at the last column, two whole groups down their rows together;
    # the bits of column_chain (each group's float32 chain, the groups added in float64 in
    # order) at row counts around one and two groups and column counts around the vectors,
    # on contiguous rows, rows apart and a slice of columns
    rng = np.random.default_rng(39)
    with num_threads(threads):
        for R in (33, 63, 64, 65, 95, 96, 97, 128, 129, 200, 1000):
            for n in (16, 17, 23, 24, 25, 31, 32, 33, 40, 63, 64, 65, 100):
                a = (rng.standard_normal((2 * R, n + 3)) *
                     np.exp(3 * rng.standard_normal((2 * R, n + 3)))).astype(np.float32)
                a[rng.random(a.shape) < 0.001] = np.nan
                t = ptl.tensor(a)
                for view, ref in ((t[:R, :n], a[:R, :n]), (t[::2, 3:], a[::2, 3:]),
                                  (ptl.tensor(np.ascontiguousarray(a[:R, :n])), a[:R, :n])):
                    check_column_sums(view, np.ascontiguousarray(ref), np.float32)


@pytest.mark.parametrize("dtype", list(FLOAT_NP), ids=str)
def test_column_sums_views_keepdim_and_dtype(dtype):
    dt = FLOAT_NP[dtype]
    rng = np.random.default_rng(31)
    a = rng.standard_normal((40, 300)).astype(dt)
    t = ptl.tensor(a)
    for R in (2, 7, 8, 9, 16, 17, 33):
        # rows apart, flipped (negative stride), columns from an offset, a transposed view
        for view, ref in ((t[:2 * R:2], a[:2 * R:2]), (t[:R].flip(0), a[:R][::-1]),
                          (t[:R, 3:], a[:R, 3:]), (t.t()[:, :R].t(), a[:R])):
            check_column_sums(view, np.ascontiguousarray(ref), dt)
        k = t[:R].sum(0, keepdim=True)
        assert tuple(k.shape) == (1, 300)
        np.testing.assert_array_equal(k.numpy()[0], t[:R].sum(0).numpy())
        d = t[:R].sum(0, dtype=ptl.float64).numpy()
        np.testing.assert_allclose(d, a[:R].astype(np.float64).sum(0), rtol=1e-6, atol=1e-6)
    b = rng.standard_normal((3, 5, 40)).astype(dt)   # the middle dim, outer kept dims
    np.testing.assert_allclose(ptl.tensor(b).sum(1).numpy(), b.astype(np.float64).sum(1),
                               rtol=1e-5, atol=1e-5)
    assert ptl.tensor(np.array(2.5, dt)).sum(0).item() == 2.5
    np.testing.assert_array_equal(ptl.zeros((0, 20), dtype=dtype).sum(0).numpy(), np.zeros(20))
    assert tuple(ptl.zeros((5, 0), dtype=dtype).mean(0).shape) == (0,)


def test_column_sums_long_float64_columns():
    # columns whose row-after-row sum drifts (an offset of 1e8): sum(0) of 16 columns (the
    # column plan) keeps the chain of the rows, NumPy's axis-0 sum, the same bits as before
    # the register chain; 3 columns (strided runs) and one contiguous run keep the blocked
    # sums' accuracy
    import math
    rng = np.random.default_rng(32)
    a = rng.random((200000, 16)) + 1e8
    got = ptl.tensor(a).sum(0).numpy()
    np.testing.assert_array_equal(got, column_chain(a, np.float64))
    np.testing.assert_array_equal(got, a.sum(0))
    a = rng.random((1000000, 3)) + 1e8
    exact = np.array([math.fsum(a[:, j]) for j in range(3)])
    for got in (ptl.tensor(a).sum(0).numpy(), ptl.tensor(np.ascontiguousarray(a.T)).sum(1)
                .numpy()):
        assert np.abs(got - exact).max() / exact.max() < 2e-14


def norm_chain(a, square, fold16=True):
    """0 + the sum of |x| or x^2 of each row of a (float64 values) in the order of Note [Norms
    of short runs]: value after value from +0 below 16 values, the 16 lanes' fold at 16 (with
    fold16; strided runs go value after value at any length, step_d's blocks)"""
    terms = a * a if square else np.abs(a)
    if a.shape[1] != 16 or not fold16:
        s = np.zeros(a.shape[0])
        for k in range(a.shape[1]):
            s = s + terms[:, k]
        return s
    lanes = terms[:, :8] + terms[:, 8:]
    return (((lanes[:, 0] + lanes[:, 1]) + (lanes[:, 2] + lanes[:, 3])) +
            ((lanes[:, 4] + lanes[:, 5]) + (lanes[:, 6] + lanes[:, 7])))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.float16, ptl.bfloat16],
                         ids=str)
def test_short_run_norms_bits(dtype, threads):
    # Note [Norms of short runs]: runs of 1..16 values, 256 runs a block; the sums in double
    # in the Note's order, their square roots rounded once to the dtype (float16 and bfloat16
    # through PyTorch's double-to-dtype rounding, ptl's own cast); 17 on as before
    rng = np.random.default_rng(33)
    with num_threads(threads):
        for n in list(range(1, 18)) + [33]:
            for rows in (1, 255, 256, 257, 1000):
                a = (rng.standard_normal((rows, n)) *
                     rng.choice([1e-3, 1, 100, 3e3], (rows, n)))
                a[rng.random(a.shape) < 0.02] = -0.0
                a[rng.random(a.shape) < 0.003] = np.nan
                a[rng.random(a.shape) < 0.003] = -np.inf
                t = ptl.tensor(a).to(dtype)
                v = t.to(ptl.float64).numpy()
                for p in (1, 2):
                    got = t.norm(p, 1).to(ptl.float64).numpy()
                    if n > 16:
                        with np.errstate(invalid="ignore"):
                            ref = np.sqrt((v * v).sum(1)) if p == 2 else np.abs(v).sum(1)
                        np.testing.assert_allclose(got, ref, rtol=1e-2)
                        continue
                    s = norm_chain(v, p == 2)
                    want = ptl.tensor(np.sqrt(s) if p == 2 else s).to(dtype)
                    np.testing.assert_array_equal(got, want.to(ptl.float64).numpy(),
                                                  err_msg=f"{dtype} p={p} {a.shape}")


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.bfloat16], ids=str)
def test_short_run_norms_views_keepdim_and_empty(dtype):
    rng = np.random.default_rng(34)
    t = ptl.tensor(rng.standard_normal((300, 40))).to(dtype)
    for n in (2, 5, 16):
        # runs 40 values apart, every other row, strided runs (the general loop), expanded
        for view in (t[:, 3:3 + n], t[::2, :n], t[:, :2 * n:2],
                     t[:1, :n].expand(50, n)):
            v = view.to(ptl.float64).numpy()
            fold = view.stride(1) == 1
            for p in (1, 2):
                want = ptl.tensor(np.sqrt(norm_chain(v, True, fold)) if p == 2
                                  else norm_chain(v, False, fold)).to(dtype)
                np.testing.assert_array_equal(view.norm(p, 1).to(ptl.float64).numpy(),
                                              want.to(ptl.float64).numpy())
        k = t[:, :n].norm(dim=1, keepdim=True)
        assert tuple(k.shape) == (300, 1)
        np.testing.assert_array_equal(k.to(ptl.float64).numpy()[:, 0],
                                      ptl.linalg.vector_norm(t[:, :n], dim=1)
                                      .to(ptl.float64).numpy())
    np.testing.assert_array_equal(ptl.zeros((3, 0), dtype=dtype).norm(dim=1)
                                  .to(ptl.float64).numpy(), np.zeros(3))
    assert tuple(ptl.zeros((0, 4), dtype=dtype).norm(dim=1).shape) == (0,)
    assert ptl.tensor(-3.0).to(dtype).norm(dim=0).item() == 3.0


@pytest.mark.parametrize("threads", [1, 2])
def test_float32_prod_of_short_rows_with_zeros(threads):
    # prod(1) of short float32 rows whose products are 0: a row with a 0 value keeps its 0
    # (sign: the product of the signs), found by comparing the whole row at once; one whose
    # product underflowed without a 0 is multiplied again exactly; a 0 and an inf give NaN
    rng = np.random.default_rng(35)
    with num_threads(threads):
        for n in list(range(1, 18)) + [31, 33, 64, 100, 127, 128]:
            rows = 600
            a = rng.uniform(0.5, 2, (rows, n)).astype(np.float32)
            a *= rng.choice([-1, 1], a.shape).astype(np.float32)
            at = rng.integers(0, n, rows)
            zero = np.arange(rows) % 3 == 0
            a[np.arange(rows)[zero], at[zero]] = rng.choice([0.0, -0.0], zero.sum())
            tiny = np.arange(rows) % 3 == 1   # underflows in float32 lanes, no 0 value
            a[tiny] = np.float32(1e-6) * np.sign(a[tiny])
            lanes0 = np.arange(rows) % 3 == 2
            if n >= 7:   # lanes whose partial products underflow to 0, the product normal
                a[lanes0] = 1
                a[lanes0, 0:min(n, 8):2] = np.float32(1e-12)
                a[lanes0, 1:min(n, 8):2] = np.float32(1e5)
            if n > 1:
                a[5, 0], a[5, -1] = 0.0, np.inf
            got = ptl.tensor(a).prod(1).numpy()
            with np.errstate(all="ignore"):
                want = np.prod(a.astype(np.float64), 1)
                w32 = want.astype(np.float32)
            # the products out of the normal range are the exact product's rounding
            exact = zero | (tiny & (np.abs(w32) < np.finfo(np.float32).tiny))
            exact |= (np.arange(rows) == 5) | (lanes0 & (n >= 7))
            np.testing.assert_array_equal(got[exact].view(np.uint32), w32[exact].view(np.uint32),
                                          err_msg=f"n={n}")
            np.testing.assert_allclose(got[~exact], want[~exact], rtol=1e-5)


def powsum_lanes(v, square):
    """The sum of |x| or x^2 of each row of v (float64 values) in ptl_red_powsum_contiguous's
    order: sixteen lanes from +0, value i of the whole groups of 16 in lane i % 16, the values
    past them into lane 0 one by one, lane k += lane k + 8, then ((0 + 1) + (2 + 3)) + ((4 +
    5) + (6 + 7)); at most 16 values it is norm_chain's"""
    terms = v * v if square else np.abs(v)
    full = terms.shape[1] // 16 * 16
    lanes = np.zeros((terms.shape[0], 16))
    for i in range(0, full, 16):
        lanes = lanes + terms[:, i:i + 16]
    for i in range(full, terms.shape[1]):
        lanes[:, 0] = lanes[:, 0] + terms[:, i]
    h = lanes[:, :8] + lanes[:, 8:]
    return ((h[:, 0] + h[:, 1]) + (h[:, 2] + h[:, 3])) + ((h[:, 4] + h[:, 5]) + (h[:, 6] + h[:, 7]))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", list(FLOAT_NP), ids=str)
def test_norms_of_many_runs_bits(dtype, threads):
    # float32 and float64 runs of more than 16 values: the kernel's loop over the runs
    # (ptl_red_powsum_runs) has the bits of its call a run, at every tail length and across
    # the 256 runs a block; 16 and under stay Note [Norms of short runs]'s
    rng = np.random.default_rng(36)
    with num_threads(threads):
        for n in list(range(15, 50)) + [63, 64, 65, 100, 257]:
            for rows in (1, 255, 256, 257, 700):
                a = rng.standard_normal((rows, n)) * rng.choice([1e-3, 1, 100, 3e3], (rows, n))
                a[rng.random(a.shape) < 0.003] = np.nan
                a[rng.random(a.shape) < 0.003] = -np.inf
                t = ptl.tensor(a).to(dtype)
                v = t.to(ptl.float64).numpy()
                for p in (1, 2):
                    with np.errstate(invalid="ignore"):
                        s = powsum_lanes(v, p == 2)
                        want = ptl.tensor(np.sqrt(s) if p == 2 else s).to(dtype).numpy()
                    got = t.norm(p, 1).numpy()
                    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8),
                                                  err_msg=f"{dtype} p={p} {a.shape}")
        t = ptl.tensor(rng.standard_normal((40, 90))).to(dtype)
        for view in (t[:, 5:75], t[::3, :33], t[:1, :40].expand(9, 40)):
            want = np.sqrt(powsum_lanes(view.to(ptl.float64).numpy(), True))
            np.testing.assert_array_equal(view.norm(dim=1).numpy(),
                                          ptl.tensor(want).to(dtype).numpy())
        k = t.norm(dim=1, keepdim=True)
        np.testing.assert_array_equal(k.numpy()[:, 0], t.norm(dim=1).numpy())


def narrow_blocks(v):
    """Each column's sum of v (float64 values) in the order of Note [Sums of narrow columns]:
    blocks of 256 rows, each summed in sixteen lanes (row i % 16), folded (l + l+4) + (l+8 +
    l+12), then (0 + 2) + (1 + 3), the rows past the last 16 added one by one, the block sums
    added from +0"""
    acc = np.zeros(v.shape[1:])
    for b0 in range(0, v.shape[0], 256):
        blk = v[b0:b0 + 256]
        full = len(blk) // 16 * 16
        lanes = np.zeros((16,) + v.shape[1:])
        for i in range(0, full, 16):
            lanes = lanes + blk[i:i + 16]
        h = (lanes[0:4] + lanes[4:8]) + (lanes[8:12] + lanes[12:16])
        s = (h[0] + h[2]) + (h[1] + h[3])
        for i in range(full, len(blk)):
            s = s + blk[i]
        acc = acc + s
    return acc


def narrow_f4_chains(a):
    """Each column's sum of the float32 rows a (R x c, c < 16) in the order of Note [Float32
    sums of narrow columns]: row r into chain r % 16, a chain's values of each 512-row block
    summed in float32 from +0 (the last 16 rows padded with zeros) and added in float64 to
    its total, the 16 totals folded (l + l+4) + (l+8 + l+12), then (0 + 2) + (1 + 3)"""
    tot = np.zeros((16,) + a.shape[1:])
    for b0 in range(0, a.shape[0], 512):
        blk = a[b0:b0 + 512]
        pad = np.zeros(((len(blk) + 15) // 16 * 16,) + a.shape[1:], np.float32)
        pad[:len(blk)] = blk
        f = np.zeros((16,) + a.shape[1:], np.float32)
        for t in range(0, len(pad), 16):
            f = f + pad[t:t + 16]
        tot = tot + f.astype(np.float64)
    h = (tot[0:4] + tot[4:8]) + (tot[8:12] + tot[12:16])
    return (h[0] + h[2]) + (h[1] + h[3])


def narrow_model(a, dt, c):
    """The sums of sum(0) of a (R x c) of dtype dt into dt, in float64"""
    if c >= 16:
        return column_chain(a, dt)
    return narrow_f4_chains(a) if dt == np.float32 else narrow_blocks(a.astype(np.float64))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", list(FLOAT_NP), ids=str)
def test_sums_of_narrow_columns_bits(dtype, threads):
    # sum(0) and mean(0) of 2 to 15 columns (strided runs): the bits of each column's blocked
    # fold (float64), of Note [Float32 sums of narrow columns]'s chains (float32), at row
    # counts around the lanes' 16 and the 256- and 512-row blocks, on rows that are
    # contiguous, wider (a slice of columns), every other one, reversed, under an outer kept
    # dim, into float64 (dtype=: the fold) and keepdim
    if os.environ.get("PTL_CPU_CAPABILITY") == "default":
        pytest.skip("the portable loops sum a block in 8 lanes, not 16")
    dt = FLOAT_NP[dtype]
    rng = np.random.default_rng(37)
    with num_threads(threads):
        for R in list(range(2, 36)) + [255, 256, 257, 511, 512, 513, 1000, 1023, 1024, 1025,
                                       1039, 4099]:
            for c in (2, 3, 4, 5, 7, 8, 9, 15, 16):
                a = (rng.standard_normal((R, c)) * np.exp(4 * rng.standard_normal((R, c))))
                a = a.astype(dt)
                a[rng.random(a.shape) < 0.001] = np.nan
                a[rng.random(a.shape) < 0.001] = np.inf
                v = a.astype(np.float64)
                with np.errstate(all="ignore"):
                    s = narrow_model(a, dt, c)
                    want, mean = s.astype(dt), (s / R).astype(dt)
                t = ptl.tensor(a)
                np.testing.assert_array_equal(t.sum(0).numpy().view(np.uint8), want.view(np.uint8),
                                              err_msg=f"sum {dt} {a.shape}")
                np.testing.assert_array_equal(t.mean(0).numpy().view(np.uint8), mean.view(np.uint8),
                                              err_msg=f"mean {dt} {a.shape}")
                if c == 16 or R > 600:
                    continue
                wide = ptl.tensor(np.concatenate([a, a, a], 1))[:, c:2 * c]
                np.testing.assert_array_equal(wide.sum(0).numpy(), t.sum(0).numpy())
                if dt == np.float32:
                    d = t.sum(0, dtype=ptl.float64).numpy()
                    with np.errstate(all="ignore"):
                        np.testing.assert_array_equal(d, narrow_blocks(v))
                outer = ptl.tensor(np.stack([a, a[::-1].copy()]))
                got = outer.mean(1, keepdim=True).numpy()
                with np.errstate(all="ignore"):
                    rev = (narrow_model(a[::-1], dt, c) / R).astype(dt)
                np.testing.assert_array_equal(got[0, 0], mean)
                np.testing.assert_array_equal(got[1, 0], rev)
                np.testing.assert_array_equal(t.flip(0).mean(0).numpy(), rev)
                with np.errstate(all="ignore"):   # every other row (sum has no out= yet)
                    np.testing.assert_array_equal(t[::2].sum(0).numpy(),
                                                  narrow_model(a[::2], dt, c).astype(dt))
    assert tuple(ptl.zeros((0, 5), dtype=dtype).sum(0).shape) == (5,)
    np.testing.assert_array_equal(ptl.zeros((0, 5), dtype=dtype).sum(0).numpy(), np.zeros(5))
    assert ptl.tensor(np.ones((1, 5), dt)).mean(0).numpy().tolist() == [1.0] * 5


@pytest.mark.torch_ref
def test_float32_sums_of_narrow_columns_accuracy():
    # Note [Float32 sums of narrow columns] adds 32 values a chain in float32: on long columns
    # whose sums drift (an offset, all positive), cancel (+-3e4 halves) or mix magnitudes
    # (|x| over e^+-9 and e^+-18), the root mean square of its errors against the exact sums
    # (relative to the sum of the magnitudes, the 2 + 4 + 8 + 15 columns together) is at most
    # PyTorch's cascade's (float32 levels of 16), and each error within the final rounding
    # plus 32 float32 roundings of the sum of the magnitudes
    import math
    from helpers import torch
    rng = np.random.default_rng(38)
    R = 1 << 19
    cases = {"drift": lambda c: rng.random((R, c)) + 100,
             "mixed3": lambda c: rng.standard_normal((R, c)) * np.exp(3 * rng.standard_normal((R, c))),
             "mixed6": lambda c: rng.standard_normal((R, c)) * np.exp(6 * rng.standard_normal((R, c))),
             "cancel": lambda c: np.concatenate([np.full((R // 2, c), 3e4),
                                                 np.full((R // 2, c), -3e4)]) + rng.random((R, c))}
    for name, make in cases.items():
        ours, theirs = [], []
        for c in (2, 4, 8, 15):
            a = make(c).astype(np.float32)
            exact = np.array([math.fsum(a[:, k].astype(np.float64)) for k in range(c)])
            mag = np.abs(a).astype(np.float64).sum(0)
            got = ptl.tensor(a).sum(0).numpy().astype(np.float64)
            ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
            assert (np.abs(got - exact) <= 32 * 2.0 ** -24 * mag + ulp).all(), (name, c)
            ours += list(np.abs(got - exact) / mag)
            ref = torch.from_numpy(a).sum(0).numpy().astype(np.float64)
            theirs += list(np.abs(ref - exact) / mag)
        rms = [np.sqrt(np.mean(np.square(e))) for e in (ours, theirs)]
        assert rms[0] <= rms[1], (name, rms)
