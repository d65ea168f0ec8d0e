"""Reductions and scans (src/aten/native/reduce.c) against NumPy in float64 (exact for
integers), with PyTorch's own rules (int64 promotion, NaN propagation, first-occurrence
argmax, error messages) cross-checked against torch where NumPy differs."""
import re
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
from golden import golden
from helpers import (ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, LAYOUTS, SHAPES, assert_close, make,
                     num_threads, to_numpy, torch, torch_ref)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::RuntimeWarning")

NON_BOOL = INT_DTYPES + FLOAT_DTYPES


def dim_args(ndim):
    """Every dim argument worth trying on a tensor of ndim dims: None, each dim, each
    negative dim, and tuples."""
    if ndim == 0:
        return [None, 0, -1]
    out = [None] + list(range(ndim)) + [-1]
    if ndim >= 2:
        out += [(0, ndim - 1), (-1, 0)]
    if ndim >= 3:
        out += [(0, 1, 2)]
    return out


def np_axis(dim, ndim):
    if ndim == 0 or dim is None:
        return None
    dims = dim if isinstance(dim, tuple) else (dim,)
    return tuple(d % ndim for d in dims)


def cases(dtype, single=False, low=-5, high=5):
    """(tensor, ndarray, dim, keepdim) over SHAPES x LAYOUTS x dims x keepdim; single: int
    dims only."""
    for shape in SHAPES:
        for layout in LAYOUTS:
            t, a = make(shape, dtype, layout, seed=len(shape), low=low, high=high)
            for dim in dim_args(len(shape)):
                if single and (dim is None or isinstance(dim, tuple)):
                    continue
                for keepdim in (False, True):
                    yield t, a, dim, keepdim


def ref_array(a, dtype):
    """The values in float64, or int64 for integer and bool dtypes (exact)."""
    if dtype in FLOAT_DTYPES:
        return np.asarray(a, dtype=np.float64)
    return np.asarray(a).astype(np.int64)


def sum_dtype(dtype):
    return ptl.int64 if dtype == ptl.bool or dtype in INT_DTYPES else dtype


def has_empty(a, axis):
    axes = range(a.ndim) if axis is None else axis
    return any(a.shape[d] == 0 for d in axes)


# ---- strided runs: loaded BLOCK (256) elements at a time, each block summed or compared in
# vector lanes (reduce.c's step_d) ----

STRIDED_RUNS = [1, 3, 4, 5, 8, 255, 256, 257, 513, 1000]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin"])
def test_strided_runs_across_blocks(dtype, name):
    for n in STRIDED_RUNS:
        t, a = make((3, 2 * n), dtype, seed=n)
        t, a = t[:, ::2], a[:, ::2]
        ref = getattr(np, {"amax": "max", "amin": "min"}.get(name, name))
        tol = {} if dtype in (ptl.float32, ptl.float64) else dict(rtol=2e-2, atol=5e-2 * n ** .5)
        for dim in (None, 1, 0):
            assert_close(getattr(t, name)(dim) if dim is not None else getattr(t, name)(),
                         ref(a, axis=dim), dtype=dtype, **tol)
        for k in {0, n // 2, n - 1}:  # a NaN in each position of a block and its lanes
            b = a.copy()
            b[1, k] = np.nan
            u = ptl.tensor(np.repeat(b, 2, axis=1), dtype=dtype)[:, ::2]
            got = to_numpy(getattr(u, name)(1))
            assert np.isnan(got[1]) and not np.isnan(got[0]) and not np.isnan(got[2])


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_contiguous_max_min_chains(dtype):
    """Contiguous rows go through four vector chains of 4 * lanes elements, the portable loop
    taking the tail: every length around one and two chains' blocks, with the extreme and a
    NaN in every position."""
    for n in [1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100]:
        a = np.random.default_rng(n).standard_normal((3, n))
        for k in range(n):
            b = a.copy()
            b[0, k] = 9.0
            b[1, k] = -9.0
            b[2, k] = np.nan
            t = ptl.tensor(b, dtype=dtype)
            np.testing.assert_array_equal(to_numpy(t.amax(1)), np.max(b.astype(
                np.float32 if dtype == ptl.float32 else np.float64), axis=1))
            np.testing.assert_array_equal(to_numpy(t.amin(1)), np.min(b.astype(
                np.float32 if dtype == ptl.float32 else np.float64), axis=1))


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_contiguous_argmax_first_position(dtype):
    """argmax/argmin and max.dim/min.dim of contiguous rows take the row's extreme from the
    vector chains, then its first position (the first NaN when there is one): every length
    around the chains' blocks, with the extreme, a tie after it and a NaN in every position."""
    npdt = np.float32 if dtype == ptl.float32 else np.float64
    for n in [1, 2, 7, 8, 9, 31, 32, 33, 65, 100]:
        a = np.random.default_rng(n).standard_normal((4, n))
        for k in range(n):
            b = a.copy()
            b[0, k] = b[0, (k + 1 + n // 2) % n] = 9.0     # two copies: the first wins
            b[1, k] = -9.0
            b[2, k] = np.nan
            b[3, :] = -np.inf
            b = b.astype(npdt)
            t = ptl.tensor(b, dtype=dtype)
            first = min(k, (k + 1 + n // 2) % n)
            nan_row = np.isnan(b).argmax(1)
            exp_max = np.where(np.isnan(b).any(1), nan_row, b.argmax(1))
            exp_min = np.where(np.isnan(b).any(1), nan_row, b.argmin(1))
            assert exp_max[0] == first
            np.testing.assert_array_equal(to_numpy(t.argmax(1)), exp_max)
            np.testing.assert_array_equal(to_numpy(t.argmin(1)), exp_min)
            values, indices = t.max(1)
            np.testing.assert_array_equal(to_numpy(indices), exp_max)
            np.testing.assert_array_equal(to_numpy(values), b[np.arange(4), exp_max])
            values, indices = t.min(1)
            np.testing.assert_array_equal(to_numpy(indices), exp_min)
            np.testing.assert_array_equal(to_numpy(values), b[np.arange(4), exp_min])


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_contiguous_norms_lanes(dtype):
    """The 1- and 2-norms of contiguous rows sum in 16 double lanes and a tail: every length
    around one and two blocks."""
    for n in [1, 15, 16, 17, 31, 32, 33, 100]:
        a = np.random.default_rng(n).standard_normal((3, n))
        a = a.astype(np.float32).astype(np.float64) if dtype == ptl.float32 else a
        t = ptl.tensor(a, dtype=dtype)
        tol = 1e-6 if dtype == ptl.float32 else 1e-14
        np.testing.assert_allclose(to_numpy(t.norm(2, 1)), np.sqrt((a * a).sum(1)), rtol=tol)
        np.testing.assert_allclose(to_numpy(t.norm(1, 1)), np.abs(a).sum(1), rtol=tol)


# ---- sum, nansum, mean, prod ----

@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_sum(dtype):
    for t, a, dim, keepdim in cases(dtype):
        ax = np_axis(dim, a.ndim)
        exp = ref_array(a, dtype).sum(axis=ax, keepdims=keepdim)
        got = ptl.sum(t) if dim is None and not keepdim else t.sum(dim, keepdim=keepdim)
        assert_close(got, exp, dtype=sum_dtype(dtype))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_nansum(dtype):
    for t, a, dim, keepdim in cases(dtype):
        exp = ref_array(a, dtype).sum(axis=np_axis(dim, a.ndim), keepdims=keepdim)
        assert_close(ptl.nansum(t, dim, keepdim), exp, dtype=sum_dtype(dtype))


@pytest.mark.parametrize("dtype", [ptl.float16, ptl.float32, ptl.float64])
def test_nansum_skips_nan(dtype):
    a = np.array([[1.0, np.nan, 2.0], [np.nan, np.nan, 4.0]])
    t = ptl.tensor(a, dtype=dtype)
    assert_close(ptl.nansum(t), np.nansum(a), dtype=dtype)
    assert_close(ptl.nansum(t, 0), np.nansum(a, 0), dtype=dtype)
    assert_close(ptl.nansum(t.t(), 1), np.nansum(a, 0), dtype=dtype)
    assert np.isnan(to_numpy(t.sum()))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_mean(dtype):
    for t, a, dim, keepdim in cases(dtype):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exp = ref_array(a, dtype).mean(axis=np_axis(dim, a.ndim), keepdims=keepdim)
        got = ptl.mean(t) if dim is None and not keepdim else t.mean(dim, keepdim)
        assert_close(got, exp, dtype=dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_prod(dtype):
    for t, a, dim, keepdim in cases(dtype, low=-2, high=2):
        if isinstance(dim, tuple):
            continue
        exp = ref_array(a, dtype).prod(axis=np_axis(dim, a.ndim), keepdims=keepdim)
        if dim is None:
            got = ptl.prod(t)
            exp = exp.reshape(())
        else:
            got = t.prod(dim, keepdim)
        assert_close(got, exp, dtype=sum_dtype(dtype), atol=1e-2)


def test_dtype_argument():
    a = np.array([[1.5, -2.7, 3.2], [4.9, 5.1, -6.3]])
    i = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.uint8)
    checks = [
        (lambda m: m.sum(m.tensor(a, dtype=m.float32), dtype=m.int32), np.int32),
        (lambda m: m.tensor(i).sum(dtype=m.float32), np.float32),
        (lambda m: m.tensor(i).sum(0, dtype=m.int16), np.int16),
        (lambda m: m.tensor(i).prod(0, dtype=m.int8), np.int8),
        (lambda m: m.tensor(i).prod(dtype=m.float64), np.float64),
        (lambda m: m.mean(m.tensor(i), dtype=m.float32), np.float32),
        (lambda m: m.tensor(a, dtype=m.float16).mean(1, dtype=m.float64), np.float64),
        (lambda m: m.nansum(m.tensor(i), dtype=m.float64), np.float64),
        (lambda m: m.cumsum(m.tensor(a), 1, dtype=m.int32), np.int32),
        (lambda m: m.cumprod(m.tensor(i), 0, dtype=m.int8), np.int8),
        (lambda m: m.tensor(i > 2).sum(dtype=m.bool), np.bool_),
        (lambda m: m.tensor(i > 2).sum(0, dtype=m.bool), np.bool_),
    ]
    for fn, npdt in checks:
        got, exp = fn(ptl), golden(lambda: fn(torch))
        assert got.numpy().dtype == npdt and str(got.dtype) == str(exp.dtype)
        np.testing.assert_allclose(got.numpy().astype(np.float64), exp.numpy().astype(np.float64),
                                   rtol=1e-6)


@pytest.mark.parametrize("dt", [ptl.bool, ptl.uint8, ptl.float32, ptl.float64, ptl.int32],
                         ids=str)
def test_count_nonzero_whole_tensor(dt):
    # count_nonzero_run (a whole contiguous bool / uint8 / float32 / float64 tensor) against
    # NumPy and against the generic reduction (a transposed view, and int32, take it): every
    # length 0..70 across the vector tails, 0-dim, NaN counted, -0.0 and 0 not, subnormals
    rng = np.random.default_rng(11)
    npdt = {ptl.bool: np.bool_, ptl.uint8: np.uint8, ptl.float32: np.float32,
            ptl.float64: np.float64, ptl.int32: np.int32}[dt]
    for n in list(range(71)) + [1000, 4099]:
        a = rng.integers(0, 3, n).astype(npdt)
        if dt.is_floating_point and n > 5:
            a[:5] = [np.nan, -0.0, 0.0, np.inf, np.finfo(npdt).tiny / 4]
        got = ptl.count_nonzero(ptl.tensor(a))
        assert got.dtype == ptl.int64 and got.shape == ()
        assert got.item() == np.count_nonzero(a)
    a = rng.integers(0, 2, (37, 29)).astype(npdt)
    t = ptl.tensor(a)
    assert ptl.count_nonzero(t).item() == ptl.count_nonzero(t.t()).item() == np.count_nonzero(a)
    assert ptl.count_nonzero(ptl.tensor(a[3, 4])).item() == np.count_nonzero(a[3, 4])
    assert_close(ptl.count_nonzero(t, 1), np.count_nonzero(a, 1).astype(np.int64),
                 dtype=ptl.int64)


def test_empty_reductions():
    t = ptl.tensor(np.zeros((0, 3), dtype=np.float32))
    assert_close(t.sum(0), np.zeros(3), dtype=ptl.float32)
    assert_close(t.prod(0), np.ones(3), dtype=ptl.float32)
    assert_close(t.mean(0), np.full(3, np.nan), dtype=ptl.float32)
    assert_close(t.sum(1), np.zeros(0), dtype=ptl.float32)
    assert_close(t.amax(1), np.zeros(0), dtype=ptl.float32)
    assert_close(ptl.logsumexp(t, 0), np.full(3, -np.inf), dtype=ptl.float32)
    assert_close(ptl.count_nonzero(t, 0), np.zeros(3, dtype=np.int64), dtype=ptl.int64)
    assert_close(t.all(0), np.ones(3, dtype=bool), dtype=ptl.bool)
    assert_close(t.any(), np.array(False), dtype=ptl.bool)
    assert_close(ptl.norm(t, 0.5, 0), np.zeros(3), dtype=ptl.float32)
    assert_close(ptl.cumsum(t, 0), np.zeros((0, 3)), dtype=ptl.float32)
    i = ptl.tensor(np.zeros((2, 0), dtype=np.int32))
    assert_close(i.sum(1), np.zeros(2, dtype=np.int64), dtype=ptl.int64)
    assert_close(i.prod(1), np.ones(2, dtype=np.int64), dtype=ptl.int64)


def test_float32_sum_accuracy():
    a = np.random.default_rng(0).uniform(0, 1, size=1 << 24).astype(np.float32)
    t = ptl.tensor(a)
    exp = a.astype(np.float64).sum()
    assert abs(float(t.sum().item()) - exp) / exp < 1e-6
    m = a.reshape(4096, 4096)
    tm = t.view(4096, 4096)
    for dim in (0, 1):
        got = to_numpy(tm.sum(dim))
        ref = m.astype(np.float64).sum(dim)
        assert np.max(np.abs(got - ref) / ref) < 1e-6


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("np_dt", [np.float32, np.float64])
def test_sum_runs_of_trailing_dims_bits(np_dt, threads):
    # reduce_runs.c's sum_runs: sums and means whose reduced elements are one contiguous run per
    # output (x.mean((2, 3)) of NCHW) skip the per-output walk.  Integers of a few bits
    # scaled by powers of two add exactly in double, so the expected bits are float64's
    # rounded once, for contiguous kept dims and for kept dims that step unevenly.
    prev = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        rng = np.random.default_rng(4)
        for shape in [(3, 5, 7, 7), (2, 3, 8, 8), (4, 2, 4, 4), (2, 3, 1, 1), (3, 2, 0, 4),
                      (64, 16, 2, 9)]:
            a = (rng.integers(-512, 512, shape) * 2.0 ** rng.integers(-12, 12, shape))
            a = a.astype(np_dt)
            x = ptl.tensor(a)
            views = [(x, a), (x[:, ::2], a[:, ::2]), (x.transpose(0, 1), a.transpose(1, 0, 2, 3))]
            for t, v in views:
                s64 = v.astype(np.float64).sum((2, 3))
                n = v.shape[2] * v.shape[3]
                with np.errstate(all="ignore"):
                    want_mean = (s64 / n).astype(np_dt)
                assert t.sum((2, 3)).numpy().tobytes() == s64.astype(np_dt).tobytes()
                np.testing.assert_array_equal(t.mean((2, 3)).numpy(), want_mean)
                assert t.mean((-1, -2), keepdim=True).shape == (*v.shape[:2], 1, 1)
    finally:
        ptl.set_num_threads(prev)


@pytest.mark.parametrize("np_dt", [np.float32, np.float64])
def test_sum_runs_in_blocks_keep_each_runs_bits(np_dt, threads):
    # reduce_kernels.c's ptl_red_sum_runs (Note [Sums of many runs]): runs summed two at a
    # time in blocks of 64 outputs give the bits of each run summed alone, for every count of
    # runs around the pairs and the blocks and run lengths around the 16-value steps and the
    # longest paired run (512)
    rng = np.random.default_rng(5)
    for m in [1, 2, 3, 63, 64, 65, 129]:
        for hw in [(1, 1), (1, 7), (3, 5), (4, 4), (1, 17), (7, 7), (8, 8), (1, 511), (16, 32),
                   (1, 513), (25, 40)]:
            a = (rng.standard_normal((m,) + hw) * 10.0 ** rng.integers(-3, 4, (m,) + hw))
            x = ptl.tensor(a.astype(np_dt))
            alone = np.array([x[k].sum().item() for k in range(m)], dtype=np_dt)
            assert x.sum((1, 2)).numpy().tobytes() == alone.tobytes(), (m, hw)
            ref = a.astype(np_dt).astype(np.float64)
            tol = 1e-6 if np_dt == np.float32 else 1e-13
            scale = np.abs(ref).sum((1, 2))
            assert (np.abs(x.sum((1, 2)).numpy() - ref.sum((1, 2))) <= tol * scale).all()
            n = hw[0] * hw[1]
            assert (np.abs(x.mean((1, 2)).numpy() - ref.mean((1, 2))) <= tol * scale / n).all()


def block_sum_f4(v):
    """reduce_kernels.c's sum_f4_avx2 in Python (Note [Float sums in blocks]): each whole
    block of 256 values in 32 float32 lanes (lane l: values l, l + 32, ... in order), lanes
    8 q + k and 8 q + k + 4 widened and added into double lane 4 q + k; sixteen values a step
    into the sixteen lanes; the lanes folded as (a0 + a1) + (a2 + a3), halves, pairs; the
    last values one by one"""
    acc = np.zeros(16)
    i = 0
    while i + 256 <= len(v):
        p = v[i:i + 32].copy()
        for j in range(i + 32, i + 256, 32):
            p += v[j:j + 32]
        p = p.astype(np.float64).reshape(4, 8)
        acc += (p[:, :4] + p[:, 4:]).reshape(16)
        i += 256
    while i + 16 <= len(v):
        acc += v[i:i + 16].astype(np.float64)
        i += 16
    a = acc.reshape(4, 4)
    t = (a[0] + a[1]) + (a[2] + a[3])
    h = t[:2] + t[2:]
    s = h[0] + h[1]
    for x in v[i:]:
        s += float(x)
    return s


@pytest.mark.parametrize("threads", [1, 2])
def test_float_sums_in_blocks(threads):
    """Note [Float sums in blocks]: float32 runs from one block on add each whole block of
    256 values in float lanes: runs around one, two and four blocks (and the paired and four-
    run sums below a block), the bits of block_sum_f4 with AVX2 and within 8 ulp of the sum of
    |x| against NumPy's float64 everywhere; one long sum (chunks of PTL_GRAIN_SIZE values from
    2 GRAIN on) the same bits on 1 and 2 threads and as a (1, n) row"""
    rng = np.random.default_rng(24)
    avx2 = ptl.backends.cpu.get_cpu_capability().lower() != "default"
    with num_threads(threads):
        for n in [255, 256, 257, 271, 300, 511, 512, 513, 1024, 1041, 4096 + 15]:
            a = (rng.standard_normal((6, n)) * 10.0 ** rng.integers(-3, 4, (6, n))).astype(
                np.float32)
            x = ptl.tensor(a)
            ref = a.astype(np.float64)
            for t in [x.sum(1), x.view(6, 1, n).sum((1, 2)), x.mean(1) * n]:
                got = t.numpy().astype(np.float64)
                bound = 8 * 2.0 ** -24 * np.abs(ref).sum(1) + 2.0 ** -24 * np.abs(ref.sum(1))
                assert (np.abs(got - ref.sum(1)) <= bound * 1.01).all(), n
            if avx2:
                want = np.array([block_sum_f4(r) for r in a]).astype(np.float32)
                np.testing.assert_array_equal(x.sum(1).numpy(), want, err_msg=str(n))
                np.testing.assert_array_equal(
                    x.mean(1).numpy(), (np.array([block_sum_f4(r) for r in a]) / n).astype(
                        np.float32), err_msg=str(n))
        n = 2 * 32768 * 3 + 101
        a = rng.standard_normal(n).astype(np.float32)
        x = ptl.tensor(a)
        got = x.sum().numpy().tobytes()
        with num_threads(3 - threads):
            assert x.sum().numpy().tobytes() == got
            assert x.view(1, n).sum(1).numpy().tobytes() == got
        assert abs(float(x.sum()) - a.astype(np.float64).sum()) <= 8e-7 * np.abs(a).sum()


def test_sum_runs_four_at_a_time_every_tail(threads):
    # reduce_kernels.c's sum4_f4_avx2: float32 runs four at a time, their tails value after
    # value in the four lanes: every tail length after 0-2 rounds of 16, run counts around the
    # fours, kept dims that step by two runs; the bits of each run summed alone, NaN and inf
    rng = np.random.default_rng(6)
    for n in range(1, 49):
        for m in [4, 5, 6, 7, 8, 9]:
            a = (rng.standard_normal((2 * m, n)) * 10.0 ** rng.integers(-3, 4, (2 * m, n)))
            x = ptl.tensor(a.astype(np.float32))
            for t in [x[:m], x[::2]]:
                alone = np.array([t[k].sum().item() for k in range(m)], dtype=np.float32)
                assert t.sum(1).numpy().tobytes() == alone.tobytes(), (n, m)
                mean = np.array([t[k].mean().item() for k in range(m)], dtype=np.float32)
                assert t.mean(1).numpy().tobytes() == mean.tobytes(), (n, m)
        b = rng.standard_normal((5, n)).astype(np.float32)
        b[1, -1], b[2, 0], b[3, n // 2] = np.nan, np.inf, -np.inf
        got = ptl.tensor(b).mean(1).numpy()
        assert np.isfinite(got[[0, 4]]).all() and np.isnan(got[1])
        assert got[2] == np.inf and got[3] == -np.inf


def test_large_dim_reductions_split():
    # long reductions split over the threads, combined in order
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 200000))
    t = ptl.tensor(a)
    assert_close(t.var(1), a.var(1, ddof=1), dtype=ptl.float64)
    assert_close(ptl.logsumexp(t, 1), np.logaddexp.reduce(a, 1), dtype=ptl.float64)
    assert_close(ptl.norm(t, 3, [1]), (np.abs(a) ** 3).sum(1) ** (1 / 3), dtype=ptl.float64)
    a[1, 150001] = 7.5
    a[1, 180000] = 7.5
    t = ptl.tensor(a)
    assert_close(t.argmax(1), a.argmax(1))
    assert_close(t.max(1).indices, a.argmax(1))
    assert_close(t.amax(1), a.max(1), dtype=ptl.float64)
    i = ptl.tensor((a * 100).astype(np.int64))
    assert_close(i.sum(1), (a * 100).astype(np.int64).sum(1), dtype=ptl.int64)
    assert_close(i.argmin(), np.argmin((a * 100).astype(np.int64)))


# ---- amax, amin, max, min, argmax, argmin, aminmax ----

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("name", ["amax", "amin"])
def test_amax_amin(dtype, name):
    npf = np.max if name == "amax" else np.min
    for t, a, dim, keepdim in cases(dtype):
        ax = np_axis(dim, a.ndim)
        if a.size == 0 and (ax is None or has_empty(a, ax)):
            continue
        exp = npf(ref_array(a, dtype), axis=ax, keepdims=keepdim)
        got = getattr(ptl, name)(t, [] if dim is None else dim, keepdim)
        assert_close(got, exp, dtype=dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_full(dtype, name):
    npf = np.max if name == "max" else np.min
    for shape in SHAPES:
        for layout in LAYOUTS:
            t, a = make(shape, dtype, layout, seed=3)
            if a.size:
                assert_close(getattr(t, name)(), npf(ref_array(a, dtype)), dtype=dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_dim(dtype, name):
    npf, npa = (np.max, np.argmax) if name == "max" else (np.min, np.argmin)
    for t, a, dim, keepdim in cases(dtype, single=True):
        ax = dim % a.ndim if a.ndim else None
        if a.ndim and a.shape[ax] == 0:
            continue
        r = getattr(ptl, name)(t, dim, keepdim)
        assert type(r).__name__ == name
        values, indices = r
        ref = ref_array(a, dtype)
        assert_close(r.values, npf(ref, axis=ax, keepdims=keepdim), dtype=dtype)
        exp_i = npa(ref, axis=ax, keepdims=keepdim) if a.ndim else np.array(0)
        assert_close(r.indices, exp_i, dtype=ptl.int64)
        assert values is r.values and indices is r.indices


@pytest.mark.parametrize("dtype", NON_BOOL)
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin(dtype, name):
    npa = np.argmax if name == "argmax" else np.argmin
    for t, a, dim, keepdim in cases(dtype):
        if isinstance(dim, tuple):
            continue
        ax = None if dim is None or a.ndim == 0 else dim % a.ndim
        if a.size == 0 and (ax is None or a.shape[ax] == 0):
            continue
        exp = npa(ref_array(a, dtype), axis=ax, keepdims=keepdim)
        if a.ndim == 0:
            exp = np.array(0)
        assert_close(getattr(ptl, name)(t, dim, keepdim), exp, dtype=ptl.int64)


def argmax_picks(m, a):
    """What argmax/argmin/max/min/amax/amin of module m pick on the values a."""
    t, out = m.tensor(a), []
    for name in ("argmax", "argmin"):
        out.append(getattr(t, name)().item())
        if a.ndim == 2:
            out += [getattr(t, name)(d).tolist() for d in (0, 1)]
    for name in ("max", "min"):
        if a.ndim == 2:
            r = getattr(t, name)(1)
            out += [r.indices.tolist(), r.values.tolist()]
        out += [getattr(t, name)().tolist(), getattr(t, "a" + name)(0).tolist()]
    return out


def test_argmax_nan_and_ties_match_torch():
    nan = np.nan
    arrays = [
        np.array([1.0, nan, 3.0, nan], dtype=np.float32),
        np.array([3.0, 1.0, 3.0, 1.0], dtype=np.float32),
        np.array([[nan, 2.0, 2.0], [1.0, 1.0, nan], [5.0, 5.0, 5.0]], dtype=np.float64),
        np.array([-np.inf, -np.inf, np.inf, np.inf], dtype=np.float32),
    ]
    for a in arrays:
        np.testing.assert_equal(argmax_picks(ptl, a), golden(lambda: argmax_picks(torch, a)))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_aminmax(dtype):
    for t, a, dim, keepdim in cases(dtype):
        if isinstance(dim, tuple):
            continue
        ax = None if dim is None or a.ndim == 0 else (dim % a.ndim,)
        if a.size == 0 and (ax is None or has_empty(a, ax)):
            continue
        r = ptl.aminmax(t, dim=dim, keepdim=keepdim)
        ref = ref_array(a, dtype)
        assert_close(r.min, np.min(ref, axis=ax, keepdims=keepdim), dtype=dtype)
        assert_close(r.max, np.max(ref, axis=ax, keepdims=keepdim), dtype=dtype)


def test_max_min_other():
    for dtype in ALL_DTYPES:
        for sa, sb in [((3, 4), (4,)), ((2, 1, 4), (1, 3, 1)), ((), (2, 3))]:
            t1, a1 = make(sa, dtype, seed=1)
            t2, a2 = make(sb, dtype, seed=2)
            assert_close(ptl.max(t1, t2), np.maximum(ref_array(a1, dtype), ref_array(a2, dtype)),
                         dtype=dtype)
            assert_close(t1.min(t2), np.minimum(ref_array(a1, dtype), ref_array(a2, dtype)),
                         dtype=dtype)
    a = np.array([1.0, np.nan, 3.0]), np.array([np.nan, 2.0, 1.0])
    assert_close(ptl.max(ptl.tensor(a[0]), ptl.tensor(a[1])), np.maximum(*a))
    assert_close(ptl.min(ptl.tensor(a[0]), ptl.tensor(a[1])), np.minimum(*a))
    r = ptl.max(ptl.tensor(np.arange(3, dtype=np.int32)), ptl.tensor(np.ones(3)))
    assert r.dtype == ptl.float64


def test_nan_propagation():
    a = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32)
    t = ptl.tensor(a)
    assert_close(t.amax(1), np.max(a, 1))
    assert_close(t.amin(), np.min(a))
    assert_close(ptl.aminmax(t, dim=1).max, np.max(a, 1))
    assert_close(t.max(), np.max(a))
    assert_close(ptl.logsumexp(t, 1), np.logaddexp.reduce(a.astype(np.float64), 1))
    assert_close(t.norm(float("inf"), [1]), np.max(np.abs(a), 1))
    assert_close(t.var(1), np.var(a.astype(np.float64), 1, ddof=1))


# ---- all, any, count_nonzero ----

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("name", ["all", "any"])
def test_all_any(dtype, name):
    npf = np.all if name == "all" else np.any
    out_dtype = ptl.uint8 if dtype == ptl.uint8 else ptl.bool
    for t, a, dim, keepdim in cases(dtype, low=0, high=1):
        exp = npf(a, axis=np_axis(dim, a.ndim), keepdims=keepdim)
        if dtype == ptl.uint8:
            exp = exp.astype(np.uint8)
        if dim is None and not keepdim:
            assert_close(getattr(t, name)(), exp, dtype=out_dtype)
        else:
            assert_close(getattr(ptl, name)(t, dim, keepdim), exp, dtype=out_dtype)
    t, a = make((2, 3), dtype, seed=4, low=0, high=1)
    exp = a.astype(np.uint8) if dtype == ptl.uint8 else a.astype(bool)
    assert_close(getattr(t, name)([]), exp, dtype=out_dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_count_nonzero(dtype):
    for t, a, dim, keepdim in cases(dtype, low=-1, high=1):
        if keepdim:
            continue
        exp = np.asarray(np.count_nonzero(a, axis=np_axis(dim, a.ndim)), dtype=np.int64)
        if isinstance(dim, tuple):
            got = ptl.count_nonzero(t, list(dim))
        else:
            got = ptl.count_nonzero(t, dim)
        assert_close(got, exp, dtype=ptl.int64)
    t, a = make((2, 3), dtype, seed=5, low=-1, high=1)
    assert_close(ptl.count_nonzero(t, []), np.asarray(np.count_nonzero(a)), dtype=ptl.int64)


# ---- var, std, var_mean, std_mean ----

def var_ref(a, ax, correction, keepdim):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = np.asarray(a, dtype=np.float64)
        n = ref.size if ax is None else int(np.prod([ref.shape[d] for d in ax]))
        mean = ref.mean(axis=ax, keepdims=True) if ref.size else np.full(
            [1 if ax is None or d in ax else s for d, s in enumerate(ref.shape)], np.nan)
        m2 = ((ref - mean) ** 2).sum(axis=ax, keepdims=keepdim)
        return m2 / max(n - correction, 0), ref.mean(axis=ax, keepdims=keepdim)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_var_std(dtype):
    for t, a, dim, keepdim in cases(dtype):
        ax = np_axis(dim, a.ndim)
        for correction in (0, 1, 2.5):
            var, mean = var_ref(a, ax, correction, keepdim)
            assert_close(ptl.var(t, dim, correction=correction, keepdim=keepdim), var,
                         dtype=dtype)
            assert_close(ptl.std(t, dim, correction=correction, keepdim=keepdim),
                         np.sqrt(var), dtype=dtype)
            v, m = ptl.var_mean(t, dim, correction=correction, keepdim=keepdim)
            assert_close(v, var, dtype=dtype)
            assert_close(m, mean, dtype=dtype)
            s, m = ptl.std_mean(t, dim, correction=correction, keepdim=keepdim)
            assert_close(s, np.sqrt(var), dtype=dtype)
            assert_close(m, mean, dtype=dtype)
        var, _ = var_ref(a, ax, 0, keepdim)
        assert_close(t.var(dim, False, keepdim), var, dtype=dtype)
        var, _ = var_ref(a, ax, 1, keepdim)
        assert_close(t.std(dim, True, keepdim), np.sqrt(var), dtype=dtype)
        if dim is None:
            assert_close(t.var(False), var_ref(a, None, 0, False)[0], dtype=dtype)
            assert_close(ptl.std_mean(t)[0], np.sqrt(var_ref(a, None, 1, False)[0]),
                         dtype=dtype)


def test_var_degrees_of_freedom_match_torch():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    for kwargs in [dict(correction=10), dict(dim=1, correction=3), dict(dim=1, correction=2.5)]:
        got = ptl.var(ptl.tensor(a), **kwargs)
        exp = golden(lambda: torch.var(torch.tensor(a), **kwargs))
        assert str(got.dtype) == str(exp.dtype)
        np.testing.assert_array_equal(got.numpy(), exp.numpy())
    assert np.isnan(ptl.var(ptl.tensor(np.float32(2.0))).item())
    msg = ("std(): degrees of freedom is <= 0. Correction should be strictly less than the "
           "reduction factor (input numel divided by output numel).")
    with pytest.warns(UserWarning, match=re.escape(msg)):
        ptl.std(ptl.tensor(np.zeros(1, dtype=np.float32)))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [ptl.complex64, ptl.complex128])
@pytest.mark.filterwarnings("ignore:.*degrees of freedom")
def test_var_of_nothing_is_nan_whatever_the_correction(dtype):
    """An empty reduction is nan even with a negative correction (0 / (0 - correction) had
    given 0), as PyTorch, which fills the result with nan when the input is empty."""
    e = ptl.zeros(0, 3, 2, dtype=dtype)
    for correction in (-0.894, -2, 0, 1):
        for fn in (ptl.var, ptl.std):
            assert np.isnan(to_numpy(fn(e, correction=correction))).all()
            assert np.isnan(to_numpy(fn(e, 0, correction=correction))).all()
            assert fn(e, 1, correction=correction).shape == (0, 2)
        v, m = ptl.var_mean(e, [0, 2], correction=correction)
        assert np.isnan(to_numpy(v)).all() and np.isnan(to_numpy(m)).all() and v.shape == (3,)
    assert np.isnan(to_numpy(ptl.zeros(2, 0, dtype=dtype).var(1, correction=-1))).all()


def test_var_is_stable():
    a = 1e8 + np.random.default_rng(2).uniform(size=1000)
    assert_close(ptl.tensor(a).var(), a.var(ddof=1), dtype=ptl.float64, rtol=1e-6)


# ---- norm, logsumexp ----

def norm_ref(a, p, ax, keepdim):
    x = np.abs(np.asarray(a, dtype=np.float64))
    if p == 0:
        return (x != 0).sum(axis=ax, keepdims=keepdim).astype(np.float64)
    if p == np.inf:
        return x.max(axis=ax, keepdims=keepdim)
    if p == -np.inf:
        return x.min(axis=ax, keepdims=keepdim)
    with np.errstate(divide="ignore"):
        return (x ** p).sum(axis=ax, keepdims=keepdim) ** (1.0 / p)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_norm(dtype):
    for t, a, dim, keepdim in cases(dtype):
        ax = np_axis(dim, a.ndim)
        for p in (2, 1, np.inf, -np.inf, 0, 3, 0.5, -1.5):
            if a.size == 0 and (p < 0 or p == np.inf) and (ax is None or has_empty(a, ax)):
                continue
            if dim is None and not keepdim:
                got = t.norm(p)
            else:
                got = ptl.norm(t, p, [] if dim is None else dim, keepdim)
            assert_close(got, norm_ref(a, p, ax, keepdim), dtype=dtype)
    assert_close(ptl.norm(make((3, 4), dtype)[0]), norm_ref(make((3, 4), dtype)[1], 2, None,
                                                             False), dtype=dtype)


ONE_ELEMENT_NORMS = [  # (shape, layout, dim): every reduced dimension has size 1
    ((), "contiguous", None), ((1,), "contiguous", None), ((1, 1), "transposed", None),
    ((3, 1), "contiguous", 1), ((1, 4), "transposed", [0]), ((2, 1, 3), "sliced", [1]),
    ((0, 1), "contiguous", [1]), ((1, 5), "expanded", [-2])]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape,layout,dim", ONE_ELEMENT_NORMS)
def test_norm_of_one_element_is_its_abs(dtype, shape, layout, dim):
    """Note [Norm of one element]: over size-1 dimensions the p-norm is |x| (x != 0 for
    p = 0) whatever p: a huge, tiny, negative or nan p and a huge x do not under- or
    overflow through |x|^p (0.09 with p = 2^32 was 0; 1e30 with p = 2 was inf)."""
    t = make(shape, dtype, layout)[0] * (1e30 if dtype in (ptl.float32, ptl.float64) else 1e3)
    a = to_numpy(t)
    ax = None if dim is None else np_axis(tuple(dim) if isinstance(dim, list) else dim, a.ndim)
    for p in (2**32, -2**32, 1000, 2, 3, 1, 0.5, -1.5, 1e-300, np.nan, np.inf, -np.inf, 0):
        for keepdim in (False, True):
            want = (np.abs(a) if p != 0 else (a != 0) * 1.0).sum(axis=ax, keepdims=keepdim)
            assert_close(ptl.linalg.vector_norm(t, p, dim, keepdim), want, dtype=dtype)
            assert_close(ptl.norm(t, p, [] if dim is None else dim, keepdim), want, dtype=dtype)
    assert_close(ptl.linalg.vector_norm(t, 2**32, dim, dtype=ptl.float64),
                 np.abs(a).sum(axis=ax), dtype=ptl.float64)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_logsumexp(dtype):
    out_dtype = dtype if dtype in FLOAT_DTYPES else ptl.float32
    for t, a, dim, keepdim in cases(dtype):
        ax = np_axis(dim, a.ndim)
        exp = np.logaddexp.reduce(np.asarray(a, dtype=np.float64), axis=ax, keepdims=keepdim)
        assert_close(ptl.logsumexp(t, [] if dim is None else dim, keepdim), exp,
                     dtype=out_dtype)


def test_logsumexp_infinities():
    inf = np.inf
    a = np.array([[-inf, -inf], [inf, 1.0], [-inf, 2.0], [inf, inf], [1000.0, 1000.0]])
    t = ptl.tensor(a)
    np.testing.assert_array_equal(ptl.logsumexp(t, 1).numpy(),
                                  golden(lambda: torch.logsumexp(torch.tensor(a), 1)).numpy())
    assert_close(ptl.logsumexp(t, 1), [-inf, inf, 2.0, inf, 1000.0 + np.log(2.0)])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("threads", [1, 2])
def test_logsumexp_nan_after_inf_in_a_later_block_is_nan(dtype, threads):
    """+inf in an early run (a strided row) or chunk (a long contiguous run split over the
    threads), NaN in a later one: the result is NaN, whatever came first."""
    rows = np.zeros((4, 600))
    rows[0, 10], rows[3, 500] = np.inf, np.nan
    line = np.zeros(300000)
    line[10], line[-5] = np.inf, np.nan
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        for t in (ptl.tensor(rows).to(dtype)[:, ::2], ptl.tensor(line).to(dtype),
                  ptl.tensor(rows[::-1].copy()).to(dtype)[:, ::2]):
            assert np.isnan(ptl.logsumexp(t, list(range(t.dim()))).to(ptl.float64).item())
    finally:
        ptl.set_num_threads(old)


# ---- cumsum, cumprod ----

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_scans(dtype, name):
    npf = np.cumsum if name == "cumsum" else np.cumprod
    for t, a, dim, keepdim in cases(dtype, single=True, low=-2, high=2):
        if keepdim:
            continue
        ref = ref_array(a, dtype)
        exp = npf(ref, axis=dim % a.ndim).reshape(a.shape) if a.ndim else ref
        assert_close(getattr(ptl, name)(t, dim), exp, dtype=sum_dtype(dtype))
        assert_close(getattr(t, name)(dim), exp, dtype=sum_dtype(dtype))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("np_dt", [np.float32, np.float64, np.int64, np.int16])
def test_scan_tiles_keep_the_bits(np_dt, threads):
    """Note [Scan tiles]: contiguous float32 / float64 / int64 sources scan TILE_COLS (256)
    neighbouring lines or TILE_LINES (8) lines len apart together, each line still a
    sequential double (int64) chain, so the results equal NumPy's sequential float64 cumsum
    and cumprod rounded once per element, bit for bit, at and across both tile sizes, on
    both sides of the parallel grain, and through the strided line-at-a-time path."""
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    gen = np.random.default_rng(5)
    try:
        for shape in [(), (0, 4), (7, 3), (8, 5), (9, 255), (3, 256, 2), (4, 257), (17, 513),
                      (1030, 40)]:
            a = (gen.standard_normal(shape) * 3).astype(np_dt)
            if np_dt in (np.float32, np.float64) and a.size:
                a = (a * 0.4 + 1).astype(np_dt)   # products stay finite
            t = ptl.tensor(a)
            for x, xa in [(t, a)] + ([(t.t(), a.T)] if a.ndim == 2 else []):
                for dim in range(max(xa.ndim, 1)):
                    for name, npf in (("cumsum", np.cumsum), ("cumprod", np.cumprod)):
                        acc = np.int64 if xa.dtype.kind == "i" else np.float64
                        exp = npf(xa.astype(acc), axis=dim if xa.ndim else None)
                        exp = exp.reshape(xa.shape).astype(np.int64 if acc is np.int64 else np_dt)
                        got = getattr(x, name)(dim).numpy()
                        assert got.dtype == exp.dtype and np.array_equal(got, exp), (shape, dim)
    finally:
        ptl.set_num_threads(old)


# ---- errors ----

E = np.zeros((0, 3), dtype=np.float32)
X = np.arange(6, dtype=np.float32).reshape(2, 3)
XI = np.arange(6).reshape(2, 3)


def T(a):
    return ptl.tensor(a)


ERRORS = [
    (lambda: T(XI).mean(), RuntimeError,
     "mean(): could not infer output dtype. Input dtype must be either a floating point or "
     "complex dtype. Got: Long"),
    (lambda: T(XI > 2).mean(0), RuntimeError,
     "mean(): could not infer output dtype. Input dtype must be either a floating point or "
     "complex dtype. Got: Bool"),
    (lambda: T(X).mean(dtype=ptl.int64), RuntimeError,
     "mean(): could not infer output dtype. Optional dtype must be either a floating point or "
     "complex dtype. Got: Long"),
    (lambda: T(X).sum((0, 0)), RuntimeError, "dim 0 appears multiple times in the list of dims"),
    (lambda: T(X).sum((1, -1)), RuntimeError, "dim 1 appears multiple times in the list of dims"),
    (lambda: ptl.count_nonzero(T(X), [0, 0]), RuntimeError,
     "dim 0 appears multiple times in the list of dims"),
    (lambda: T(X).sum(2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda: T(X).prod(-3), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    (lambda: T(X).cumsum(2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda: T(np.float32(3)).amax(1), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    (lambda: T(E).amax(0), IndexError, "amax(): Expected reduction dim 0 to have non-zero size."),
    (lambda: T(E).amin(0), IndexError, "amin(): Expected reduction dim 0 to have non-zero size."),
    (lambda: T(np.zeros((2, 0, 3))).amax((2, 1)), IndexError,
     "amax(): Expected reduction dim 1 to have non-zero size."),
    (lambda: T(E).amax(), RuntimeError,
     "amax(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
     "reduction dim with the 'dim' argument."),
    (lambda: T(E).max(), RuntimeError,
     "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
     "reduction dim with the 'dim' argument."),
    (lambda: T(E).min(), RuntimeError,
     "min(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
     "reduction dim with the 'dim' argument."),
    (lambda: T(E).max(0), IndexError, "max(): Expected reduction dim 0 to have non-zero size."),
    (lambda: T(E).min(0), IndexError, "min(): Expected reduction dim 0 to have non-zero size."),
    (lambda: T(E).argmax(), IndexError,
     "argmax(): Expected reduction dim to be specified for input.numel() == 0."),
    (lambda: T(E).argmin(0), IndexError,
     "argmin(): Expected reduction dim 0 to have non-zero size."),
    (lambda: T(XI > 2).argmax(), RuntimeError, "argmax(): does not support bool input"),
    (lambda: T(XI > 2).argmin(0), RuntimeError, "argmin(): does not support bool input"),
    (lambda: ptl.aminmax(T(E)), RuntimeError,
     "aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
     "identity."),
    (lambda: ptl.aminmax(T(E), dim=0), IndexError,
     "aminmax: Expected reduction dim 0 to have non-zero size."),
    (lambda: T(XI).var(), RuntimeError, "std and var only support floating point and complex dtypes"),
    (lambda: T(XI > 1).std(0), RuntimeError,
     "std and var only support floating point and complex dtypes"),
    (lambda: ptl.var_mean(T(XI)), RuntimeError,
     "var_mean only support floating point and complex dtypes"),
    (lambda: ptl.std_mean(T(XI), 0), RuntimeError,
     "std_mean only support floating point and complex dtypes"),
    (lambda: T(XI).norm(), RuntimeError,
     "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"),
    (lambda: ptl.norm(T(XI > 1), 2, [0]), RuntimeError,
     "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Bool"),
    (lambda: T(E).norm(float("inf")), RuntimeError,
     "linalg.vector_norm cannot compute the inf norm on an empty tensor because the operation "
     "does not have an identity"),
    (lambda: ptl.norm(T(E), float("-inf"), [0]), RuntimeError,
     "linalg.vector_norm cannot compute the -inf norm on the dimension 0because this dimension "
     "is empty and the operation does not have an identity"),
    (lambda: ptl.norm(T(E), -1.5, [1, 0]), RuntimeError,
     "linalg.vector_norm cannot compute the -1.5 norm on the dimension 0because this dimension "
     "is empty and the operation does not have an identity"),
]


@pytest.mark.parametrize("fn,exc,msg", ERRORS)
def test_errors(fn, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        fn()


@torch_ref
@pytest.mark.parametrize("fn,exc,msg", ERRORS)
def test_errors_match_torch(fn, exc, msg):
    """The same calls on torch raise the same type and text (the table is not our own)."""
    global T
    saved, saved_ptl = T, globals()["ptl"]
    try:
        globals()["ptl"] = torch
        T = torch.tensor
        with pytest.raises(exc, match=re.escape(msg)):
            fn()
    finally:
        T, globals()["ptl"] = saved, saved_ptl


def test_zero_dim_inputs():
    t = ptl.tensor(np.float64(2.5))
    for dim in (0, -1, [0], (-1,)):
        assert_close(t.sum(dim), np.array(2.5))
        assert_close(t.sum(dim, keepdim=True), np.array(2.5))
    assert_close(t.amax(0), np.array(2.5))
    assert_close(t.max(0).indices, np.array(0))
    assert_close(t.argmax(0), np.array(0))
    assert_close(t.cumsum(0), np.array(2.5))
    assert_close(t.var(0), np.array(np.nan))
    i = ptl.tensor(np.int8(-3))
    assert_close(i.sum(), np.array(-3), dtype=ptl.int64)
    assert_close(i.cumprod(-1), np.array(-3), dtype=ptl.int64)


# ---- float16 / bfloat16 sums and extremes (Note [Half-precision sums]) and the exact integer
# runs of reduce_kernels.c: lengths across the 16- and 64-value vector steps, the 64-lane groups,
# the 1024-value blocks, the column block (2048) and group (32 rows), and the chunk split of one
# long reduction over threads (2 * 32768 values), on 1 and 2 threads ----

RUN_LENGTHS = [0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 1023, 1024, 1025, 2047, 2049,
               65535, 65536, 65537 + 64 * 3 + 5]
LOWP = [ptl.float16, ptl.bfloat16]
LOWP_NP = {ptl.float16: np.float16, ptl.bfloat16: None}


def lowp_tensor(a, dtype):
    """(tensor of dtype, its values in float64): a float32 array rounded to dtype."""
    t = ptl.tensor(np.asarray(a, np.float32)).to(dtype)
    return t, t.to(ptl.float64).numpy()


def lowp_sum_tol(vals, axis=None):
    # float32 partial sums: each value's rounding error is at most 2^-24 of the running sum,
    # which is at most sum |x|; 64 values a lane and the lane tree add < 80 roundings, the
    # block sums add in double; then one rounding to the result's dtype (2^-8 for bfloat16)
    mag = np.abs(vals).sum(axis=axis)
    return 80 * 2.0 ** -24 * mag


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", LOWP, ids=str)
def test_lowp_sum_mean_runs_against_float64(dtype, threads):
    with num_threads(threads):
        rng = np.random.default_rng(11)
        ulp = 2.0 ** -10 if dtype == ptl.float16 else 2.0 ** -7
        for n in RUN_LENGTHS:
            t, v = lowp_tensor(rng.standard_normal(n), dtype)
            ref = v.sum()
            for got, want in [(t.sum(), ref), (t.mean(), ref / n if n else np.nan)]:
                assert got.dtype == dtype and got.shape == ()
                g = got.to(ptl.float64).item()
                if n == 0:
                    assert g == 0 or np.isnan(want) and np.isnan(g)
                    continue
                tol = lowp_sum_tol(v) / (1 if want is ref else n) + ulp * abs(want)
                assert abs(g - want) <= tol, (n, g, want)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", LOWP, ids=str)
def test_lowp_sums_of_small_integers_are_exact(dtype, threads):
    # integers of a few bits add exactly in float32, so the result is the exact sum rounded
    # once to the dtype: the same bits as float64's sum cast, in every layout and dim
    with num_threads(threads):
        rng = np.random.default_rng(12)
        for shape in [(3, 1025), (1025, 3), (40, 2049), (2049, 17), (33, 16), (16, 33), (5, 0),
                      (0, 5), (70000,)]:
            t, v = lowp_tensor(rng.integers(-4, 5, shape), dtype)
            views = [(t, v)]
            if len(shape) == 2:
                views += [(t.t(), v.T), (t[:, ::2], v[:, ::2]), (t[::3], v[::3])]
            for x, a in views:
                for dim in [None, 0, -1] if a.ndim == 2 else [None, 0]:
                    for keepdim in (False, True):
                        got = x.sum() if dim is None else x.sum(dim, keepdim=keepdim)
                        want = a.sum(axis=dim, keepdims=keepdim and dim is not None)
                        want = ptl.tensor(np.asarray(want)).to(dtype).to(ptl.float64).numpy()
                        assert got.shape == want.shape
                        np.testing.assert_array_equal(got.to(ptl.float64).numpy(), want)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", LOWP, ids=str)
def test_lowp_column_and_row_sums_against_float64(dtype, threads):
    with num_threads(threads):
        rng = np.random.default_rng(13)
        ulp = 2.0 ** -10 if dtype == ptl.float16 else 2.0 ** -7
        for shape in [(31, 16), (32, 17), (33, 2047), (65, 2049), (1000, 1000), (2, 3, 40)]:
            t, v = lowp_tensor(rng.standard_normal(shape), dtype)
            for dim in range(len(shape)):
                got = t.sum(dim).to(ptl.float64).numpy()
                want = v.sum(axis=dim)
                tol = lowp_sum_tol(v, axis=dim) + ulp * np.abs(want)
                assert np.all(np.abs(got - want) <= tol), (shape, dim)
                got = t.mean(dim).to(ptl.float64).numpy()
                want = want / shape[dim]
                assert np.all(np.abs(got - want) <= tol / shape[dim] + ulp * np.abs(want))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", LOWP, ids=str)
@pytest.mark.parametrize("name", ["amax", "amin"])
def test_lowp_extremes_of_runs(dtype, name, threads):
    # exact: the extreme is one of the values; NaN anywhere gives NaN; +-inf and the largest
    # finite values at the first, a middle and the last position
    big = 65504.0 if dtype == ptl.float16 else 3.0e38
    with num_threads(threads):
        rng = np.random.default_rng(14)
        for n in RUN_LENGTHS[1:]:
            base = rng.standard_normal(n).astype(np.float32)
            for special in [None, big, -big, np.inf, -np.inf, np.nan]:
                for pos in sorted({0, n // 2, n - 1}):
                    a = base.copy()
                    if special is not None:
                        a[pos] = special
                    t, v = lowp_tensor(a, dtype)
                    got = getattr(t, name)().to(ptl.float64).item()
                    want = getattr(np, "max" if name == "amax" else "min")(v)
                    assert got == want or np.isnan(got) and np.isnan(want), (n, special, pos)
                    if special is None:
                        break
        m = rng.standard_normal((70, 2049)).astype(np.float32)
        m[5, 7] = m[69, 2048] = np.nan   # columns' NaN win, in a first and the last row
        m[0, 8] = np.inf
        m[3, 9] = -np.inf
        t, v = lowp_tensor(m, dtype)
        for dim in (0, 1):
            got = getattr(t, name)(dim).to(ptl.float64).numpy()
            want = getattr(v, "max" if name == "amax" else "min")(dim)
            np.testing.assert_array_equal(got, want)


INT_RUN_DTYPES = [(ptl.bool, np.bool_), (ptl.uint8, np.uint8), (ptl.int8, np.int8),
                  (ptl.int16, np.int16), (ptl.int32, np.int32), (ptl.int64, np.int64)]


def int_values(rng, npdt, shape, near_limits=False):
    if npdt == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    info = np.iinfo(npdt)
    if near_limits:   # the dtype's extremes and their neighbours, and values in between
        pool = np.array([info.min, info.min + 1, info.max, info.max - 1, 0, -1 if info.min else 1,
                         1], dtype=npdt)
        return np.where(rng.random(shape) < 0.5, rng.choice(pool, shape),
                        rng.integers(info.min, info.max, shape, dtype=npdt, endpoint=True))
    return rng.integers(info.min, info.max, shape, dtype=npdt, endpoint=True)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype,npdt", INT_RUN_DTYPES, ids=lambda d: str(d))
def test_integer_sums_are_exact_and_wrap(dtype, npdt, threads):
    # full-range values (int64 sums wrap as NumPy's do), every length around the steps, and
    # rows, columns (narrower and wider than the 2048-column block), transposed and sliced
    with num_threads(threads):
        rng = np.random.default_rng(15)
        for n in RUN_LENGTHS:
            a = int_values(rng, npdt, n)
            got = ptl.tensor(a).sum()
            assert got.dtype == ptl.int64
            assert got.item() == a.astype(np.int64).sum()
        for shape in [(3, 15), (3, 16), (33, 17), (5, 2049), (70, 2050), (1000, 100)]:
            a = int_values(rng, npdt, shape)
            t = ptl.tensor(a)
            for x, v in [(t, a), (t.t(), a.T), (t[:, ::2], a[:, ::2]), (t[1:], a[1:])]:
                for dim in (None, 0, 1, (0, 1)):
                    for keepdim in (False, True):
                        got = x.sum() if dim is None else x.sum(dim, keepdim=keepdim)
                        want = v.astype(np.int64).sum(axis=dim,
                                                      keepdims=keepdim and dim is not None)
                        assert got.dtype == ptl.int64
                        np.testing.assert_array_equal(got.numpy(), want)
        if npdt == np.int64:   # wrap-around: (2^62) * 5 and (-2^63) * 3
            for v, k in [(2 ** 62, 5), (-(2 ** 63), 3), (2 ** 63 - 1, 70001)]:
                a = np.full(k, v, np.int64)
                with np.errstate(over="ignore"):
                    assert ptl.tensor(a).sum().item() == a.sum()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype,npdt", INT_RUN_DTYPES, ids=lambda d: str(d))
@pytest.mark.parametrize("name", ["amax", "amin"])
def test_integer_extremes_near_the_limits(dtype, npdt, name, threads):
    ref = np.max if name == "amax" else np.min
    with num_threads(threads):
        rng = np.random.default_rng(16)
        for n in RUN_LENGTHS[1:]:
            a = int_values(rng, npdt, n, near_limits=True)
            got = getattr(ptl.tensor(a), name)()
            assert got.dtype == dtype and got.item() == ref(a)
            if npdt != np.bool_:   # one extreme value at the end of a run of its neighbours
                info = np.iinfo(npdt)
                b = np.full(n, info.max - 1 if name == "amax" else info.min + 1, npdt)
                b[-1] = info.max if name == "amax" else info.min
                assert getattr(ptl.tensor(b), name)().item() == b[-1]
        for shape in [(3, 16), (33, 17), (5, 2049), (70, 2050), (0, 4)]:
            a = int_values(rng, npdt, shape, near_limits=True)
            t = ptl.tensor(a)
            for x, v in [(t, a), (t.t(), a.T), (t[:, ::2], a[:, ::2])]:
                for dim in (0, 1, -1):
                    if v.shape[dim % 2] == 0:
                        with pytest.raises(IndexError, match=rf"{name}\(\): Expected reduction "
                                           rf"dim {dim % 2} to have non-zero size"):
                            getattr(x, name)(dim)
                        continue
                    for keepdim in (False, True):
                        got = getattr(x, name)(dim, keepdim=keepdim)
                        np.testing.assert_array_equal(got.numpy(),
                                                      ref(v, axis=dim, keepdims=keepdim))
        zero_dim = ptl.tensor(np.array(7, npdt) if npdt != np.bool_ else np.array(True))
        assert getattr(zero_dim, name)().item() == zero_dim.item()
        assert getattr(zero_dim, name)(0).item() == zero_dim.item()


LOWP_WIDTH_SCRIPT = r"""
import sys, numpy as np, pytorchlite as ptl
rng = np.random.default_rng(17)
out = []
for dt in (ptl.float16, ptl.bfloat16):
    for n in list(range(0, 200)) + [1023, 1024, 1025, 4111, 70001]:
        t = ptl.tensor(rng.standard_normal(n).astype(np.float32) * 100).to(dt)
        out += [t.sum(), t.mean(), t.to(ptl.float32)]
    m = ptl.tensor(rng.standard_normal((67, 2051)).astype(np.float32)).to(dt)
    out += [m.sum(0), m.sum(1), m[:, 3:].sum(0), m.mean(0)]
    # rows under, at and over 8 values (AVX2 reads a row's last partial eight values with
    # one load ending at the row's end, or from a zero-padded copy when the row is shorter)
    for shape in [(70, 250), (9, 31), (35, 17), (64, 1000), (130, 47), (9, 5), (6, 8), (5, 9),
                  (4, 71), (3, 1)]:
        m = ptl.tensor(rng.standard_normal(shape).astype(np.float32)).to(dt)
        out += [m.sum(0), m.sum(1)]
    for n in [31, 32, 33, 1023, 1025, 70001]:
        t = ptl.tensor(1 + rng.standard_normal(n).astype(np.float32) / 64).to(dt)
        out += [t.prod(), t[1:].prod(), t[::2].prod()]
    m = ptl.tensor(1 + rng.standard_normal((70, 250)).astype(np.float32) / 16).to(dt)
    out += [m.prod(0), m.prod(1), m[:, 1:].prod(1)]
sys.stdout.buffer.write(b"".join(x.to(ptl.float32).numpy().tobytes() for x in out))
"""


def lowp_column_sum_reference(v):
    """sum(0) of the float16/bfloat16 values v (float64) in the order of Note [Half-precision
    sums]: each column adds its rows one after another into a float32 partial sum, a new
    partial every RED_COL_GROUP (32) rows, and the partials into a double."""
    acc = np.zeros(v.shape[1:])
    for r0 in range(0, v.shape[0], 32):
        part = np.zeros(v.shape[1:], np.float32)
        for row in v[r0:r0 + 32]:
            part = part + row.astype(np.float32)
        acc += part
    return acc


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", LOWP, ids=str)
def test_lowp_column_sums_keep_the_row_order(dtype, threads):
    # the vector loops add four rows into a vector of partial sums at a time, the columns past
    # the last whole vector through masked loads: rows 1..4 past a multiple of four, columns
    # around 16 and 8 lanes, groups of 32 rows, a sliced view; the bits of the sequential sum
    with num_threads(threads):
        rng = np.random.default_rng(19)
        for shape in [(70, 250), (9, 31), (35, 17), (64, 1000), (130, 47), (33, 16),
                      (4, 24), (1, 33), (3, 8200)]:
            t, v = lowp_tensor(100 * rng.standard_normal(shape), dtype)
            for x, a in [(t, v), (t[:, 1:], v[:, 1:]), (t[1:], v[1:])]:
                got = x.sum(0).to(ptl.float64).numpy()
                want = ptl.tensor(lowp_column_sum_reference(a)).to(dtype).to(ptl.float64)
                np.testing.assert_array_equal(got, want.numpy())


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("odt", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_column_sums_round_each_block_at_once(dtype, odt, threads):
    """sum(0) and nansum(0) write each block of column sums with one cast loop (reduce.c's
    reduce_columns): every block width (column tails of the 8- and 16-lane conversions,
    more columns than a block holds), into every float dtype, with sums exact in float64
    (small integers) rounded once: 2049 to even in float16 and bfloat16, 98304 to inf in
    float16, NaN kept by sum and dropped by nansum"""
    rng = np.random.default_rng(21)
    with num_threads(threads):
        for shape in [(3, 16), (7, 17), (33, 33), (2, 2 * 2048 + 19)]:
            a = rng.integers(-8, 9, shape).astype(np.float64)
            a[:, :3] = 0
            a[:2, 0] = 49152.0
            a[1, 1] = np.nan
            a[:2, 2] = [2048.0, 1.0]
            x = ptl.tensor(a).to(dtype)
            for fn, ref in [(lambda t: t.sum(0, dtype=odt), np.sum),
                            (lambda t: t.to(odt).nansum(0), np.nansum)]:
                got = fn(x)
                want = ref(a, axis=0)
                assert got.dtype == odt
                with np.errstate(over="ignore"):
                    want = (want.astype(np.float16).astype(np.float64) if odt == ptl.float16
                            else ptl.tensor(want).to(odt).to(ptl.float64).numpy())
                np.testing.assert_array_equal(got.to(ptl.float64).numpy(), want)
            if odt == ptl.float16:
                assert np.isinf(want[0]) and want[2] == 2048


def float_column_sums(a):
    """sum(0) of the float32 rows of a in reduce_kernels.c's order: each column adds its rows
    one after another into a float32 partial sum, a new one every RED_COL_GROUP (32) rows,
    and the partials into a double"""
    acc = np.zeros(a.shape[1:])
    for r0 in range(0, a.shape[0], 32):
        part = np.zeros(a.shape[1:], np.float32)
        for row in a[r0:r0 + 32]:
            part += row
        acc += part.astype(np.float64)
    return acc


@pytest.mark.parametrize("threads", [1, 2])
def test_float_column_sums_in_registers_keep_the_row_order(threads):
    """Rows of 16 to 64 columns in a multiple of 8 keep their partial sums in vectors
    (add_rows_f4_regs), the other widths in a buffer: widths around each vector count and
    past 64, rows around the groups of 32, sliced and strided rows; sum(0) and mean(0) the
    bits of float_column_sums, and channels_last x.mean((2, 3)) (each sample's H W x C
    columns) those of its samples"""
    rng = np.random.default_rng(23)
    with num_threads(threads):
        for cols in [16, 20, 24, 56, 63, 64, 65, 72]:   # reduce.c sums 16 or more by columns
            for rows in [1, 31, 32, 33, 65, 100]:
                a = (rng.standard_normal((rows, cols)) * 10.0 ** rng.integers(-3, 4, cols)
                     ).astype(np.float32)
                x = ptl.tensor(a)
                want = float_column_sums(a)
                np.testing.assert_array_equal(x.sum(0).numpy(), want.astype(np.float32))
                np.testing.assert_array_equal(x.mean(0).numpy(),
                                              (want / rows).astype(np.float32))
                wide = ptl.tensor(np.concatenate([a[:, :3], a], 1))[:, 3:]
                np.testing.assert_array_equal(wide.sum(0).numpy(), want.astype(np.float32))
        for c in [16, 24, 64, 72]:
            a = rng.standard_normal((3, c, 5, 7)).astype(np.float32)
            x = ptl.tensor(a).contiguous(memory_format=ptl.channels_last)
            want = [float_column_sums(s.reshape(c, -1).T) / 35 for s in a]
            np.testing.assert_array_equal(x.mean((2, 3)).numpy(), np.array(want, np.float32))
            np.testing.assert_allclose(x.mean((2, 3)).numpy(), a.astype(np.float64).mean(
                (2, 3)), rtol=2e-7, atol=1e-7)


GRAIN = 32768   # c10/parallel.h PTL_GRAIN_SIZE (test_size_thresholds checks it)


def lowp_run_product(v):
    """The product of the float16/bfloat16 run v (float64 values) in the order of Note
    [Half-precision products]: value i into double lane i % 32, the lanes folded pairwise."""
    lanes = np.ones(32)
    for i in range(0, len(v), 32):
        g = v[i:i + 32]
        lanes[:len(g)] *= g
    for w in (16, 8, 4, 2, 1):
        lanes[:w] *= lanes[w:2 * w]
    return lanes[0]


def lowp_product(v):
    """A whole reduction of R values: one run, or from 2 GRAIN values min(R / GRAIN, 64)
    chunks of equal length (the last shorter) whatever the thread count, their products
    multiplied in order."""
    R = len(v)
    if R < 2 * GRAIN:
        return lowp_run_product(v)
    chunk = -(-R // min(R // GRAIN, 64))
    acc = 1.0
    for c in range(0, R, chunk):
        acc *= lowp_run_product(v[c:c + chunk])
    return acc


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", LOWP, ids=str)
def test_lowp_products_in_lanes(dtype, threads):
    # the bits of the lane order (float32: test_prod_f4_lanes.py), contiguous, strided and by
    # columns (prod(0): row r into lane r % 32 of its column), at lengths around the 32 lanes,
    # the 1024-value blocks and the chunks of one long product; values near 1 (and a few
    # zeros, infinities and a NaN)
    with num_threads(threads):
        rng = np.random.default_rng(20)

        def same(got, want):
            want = ptl.tensor(np.asarray(want, np.float64)).to(dtype).to(ptl.float64).numpy()
            np.testing.assert_array_equal(got.to(ptl.float64).numpy(), want)

        for n in RUN_LENGTHS:
            t, v = lowp_tensor(1 + rng.standard_normal(n) / 64, dtype)
            same(t.prod(), lowp_product(v))
            same(t[1::3].prod(), lowp_product(v[1::3]))
        for shape in [(1, 40), (31, 16), (32, 17), (33, 200), (70, 129), (1000, 20), (5, 1025)]:
            t, v = lowp_tensor(1 + rng.standard_normal(shape) / 16, dtype)
            for x, a in [(t, v), (t.t().contiguous().t(), v), (t[:, 1:], v[:, 1:])]:
                same(x.prod(0), [lowp_run_product(a[:, k]) for k in range(a.shape[1])])
                same(x.prod(1), [lowp_run_product(a[k]) for k in range(a.shape[0])])
        t, v = lowp_tensor(np.array([2.0, 0.5, np.inf, 0.0, 3.0, np.nan, -1.0] * 9), dtype)
        same(t.prod(), lowp_run_product(v))
        same(t[:3].prod(), np.inf)
        same(t[:4].prod(), lowp_run_product(v[:4]))


def test_lowp_sums_same_bits_at_every_width():
    # the 64 float32 lanes are one logical array at every width (Note [Half-precision sums]):
    # portable C, AVX2 and this CPU's own capability give the same bits
    import os
    import subprocess
    import sys
    runs = []
    for cap in ("default", "avx2", None):
        env = dict(os.environ)
        env.pop("PTL_CPU_CAPABILITY", None)
        if cap:
            env["PTL_CPU_CAPABILITY"] = cap
        runs.append(subprocess.run([sys.executable, "-c", LOWP_WIDTH_SCRIPT], env=env,
                                   capture_output=True, check=True).stdout)
    assert runs[0] == runs[1] == runs[2] and len(runs[0]) > 0


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", LOWP + [ptl.int64, ptl.int32, ptl.uint8], ids=str)
@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_scan_tiles_of_half_and_integer_bits(dtype, name, threads):
    # scan.c's tiles (Note [Scan tiles]): float16/bfloat16 add (or multiply) in double and round
    # to float32 and then to the dtype, as a sequential NumPy float64 scan does; integers are
    # exact and wrap.  Lengths around the 256-value conversion blocks, columns around the
    # 256-column tiles, lines around the 8-line tiles, one line alone, transposed and sliced;
    # int64 lines in groups of four (scan_line_i8): every remainder 0..3
    with num_threads(threads):
        rng = np.random.default_rng(18)
        for shape in [(1,), (255,), (256,), (257,), (1000,), (3, 257), (7, 255), (9, 256),
                      (300, 5), (2, 300, 3), (8, 1), (0, 4), (5, 6), (4, 4), (2, 150, 7)]:
            if dtype in LOWP:
                scale = 1.0 if name == "cumsum" else 0.02
                t, v = lowp_tensor(1 + scale * rng.standard_normal(shape), dtype)
            else:
                npdt = {ptl.int64: np.int64, ptl.int32: np.int32, ptl.uint8: np.uint8}[dtype]
                v = int_values(rng, npdt, shape) if name == "cumsum" else \
                    rng.integers(0, 3, shape).astype(npdt)
                t = ptl.tensor(v)
            for dim in range(len(shape)):
                views = [(t, v)]
                if len(shape) >= 2:
                    views += [(t.transpose(0, 1), v.swapaxes(0, 1)), (t[::2], v[::2])]
                for x, a in views:
                    d = dim % a.ndim
                    got = getattr(x, name)(d)
                    if dtype in LOWP:
                        f = np.cumsum if name == "cumsum" else np.cumprod
                        want = f(a.astype(np.float64), axis=d).astype(np.float32)
                        want = ptl.tensor(want).to(dtype).to(ptl.float64).numpy()
                        assert got.dtype == dtype
                        np.testing.assert_array_equal(got.to(ptl.float64).numpy(), want)
                    else:
                        f = np.cumsum if name == "cumsum" else np.cumprod
                        with np.errstate(over="ignore"):
                            want = f(a.astype(np.int64), axis=d)
                        assert got.dtype == ptl.int64
                        np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", LOWP + [d for d, _ in INT_RUN_DTYPES], ids=str)
@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_dim_first_position_of_runs_and_columns(dtype, name, threads):
    # max/min with dim of float16/bfloat16 and the integers: the run's extreme, then its first
    # position (found 64 values a block for the integers), or a column's first row of it; few
    # distinct values make ties, NaN wins and its first position is taken
    rng = np.random.default_rng(19)
    with num_threads(threads):
        for shape in [(3, 1000), (70, 2049), (33, 17), (16, 16), (1, 130), (130, 1)]:
            if dtype in LOWP:
                t, v = lowp_tensor(rng.integers(-2, 3, shape), dtype)
                if shape[0] > 2:
                    bad = np.array(v)
                    bad[1, 3 % shape[1]] = bad[2, 3 % shape[1]] = np.nan
                    bad[2, -1] = np.nan
                    t, v = lowp_tensor(bad, dtype)
            else:
                npdt = dict((d, n) for d, n in INT_RUN_DTYPES)[dtype]
                v = int_values(rng, npdt, shape, near_limits=True)
                v = np.where(rng.random(shape) < 0.5, v, v.flat[0]).astype(npdt)
                t = ptl.tensor(v)
            for x, a in [(t, v), (t.t(), v.T), (t[:, ::2], v[:, ::2])]:
                for dim in (0, 1):
                    if a.shape[dim] == 0:
                        continue
                    vals, idx = getattr(x, name)(dim)
                    nan_pos = np.isnan(a).argmax(dim) if dtype in LOWP else None
                    ref = np.argmax(a, dim) if name == "max" else np.argmin(a, dim)
                    if nan_pos is not None:
                        has_nan = np.isnan(a).any(dim)
                        ref = np.where(has_nan, nan_pos, ref)
                    np.testing.assert_array_equal(idx.numpy(), ref)
                    want = np.take_along_axis(a, np.expand_dims(ref, dim), dim).squeeze(dim)
                    got = vals.to(ptl.float64).numpy() if dtype in LOWP else vals.numpy()
                    np.testing.assert_array_equal(got, want)
                    assert vals.dtype == dtype and idx.dtype == ptl.int64


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype,npdt", INT_RUN_DTYPES, ids=lambda d: str(d))
def test_integer_products_are_exact_and_wrap(dtype, npdt, threads):
    rng = np.random.default_rng(21)
    with num_threads(threads):
        for n in RUN_LENGTHS:
            a = (rng.integers(0, 2, n) if npdt == np.bool_ else
                 rng.choice(np.array([1, 1, 1, -1, 2, 3] if npdt != np.uint8 else [1, 1, 2, 3]),
                            n)).astype(npdt)
            got = ptl.tensor(a).prod()
            with np.errstate(over="ignore"):
                want = np.prod(a.astype(np.int64))
            assert got.dtype == ptl.int64 and got.item() == want, n
        t = ptl.tensor(np.arange(1, 2049, dtype=npdt) if npdt != np.bool_ else np.ones(5, bool))
        with np.errstate(over="ignore"):
            assert t.prod().item() == np.prod(t.numpy().astype(np.int64))


# Note [Reductions over dims of size one]: every reduced dim of size 1 is a copy
SIZE_ONE_CASES = [((7, 1), -1), ((1, 7), 0), ((3, 1, 5), 1), ((3, 1, 1), (1, 2)), ((1,), 0),
                  ((0, 1), 1), ((1, 1), (0, 1))]


@pytest.mark.parametrize("shape, dim", SIZE_ONE_CASES)
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.float16, ptl.bfloat16,
                                   ptl.int32, ptl.int64, ptl.uint8, ptl.bool], ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions_over_dims_of_size_one(shape, dim, dtype, keepdim):
    """sum (and with dtype=), mean, prod, amax, amin, max/min(dim) and argmax/argmin over dims
    of size 1 against NumPy, exactly: sum and mean of -0.0 are +0.0 (the accumulators start at
    +0), prod, amax and amin keep -0.0 and a NaN; a transposed input; the indices are 0."""
    gen = np.random.default_rng(len(shape))
    a = gen.standard_normal(shape) * 4
    flat = a.reshape(-1)
    if dtype.is_floating_point and flat.size >= 3:
        flat[:3] = [-0.0, np.nan, np.inf]
    x = ptl.tensor(a).to(dtype)
    ref = x.numpy() if dtype == ptl.bool else x.double().numpy()
    dims = dim if isinstance(dim, tuple) else (dim,)

    def check(got, want):
        want = np.asarray(want)
        assert tuple(got.shape) == want.shape
        g = got.numpy() if got.dtype == ptl.bool else got.double().numpy()
        np.testing.assert_array_equal(g, want)
        if got.dtype.is_floating_point:
            np.testing.assert_array_equal(np.signbit(g), np.signbit(want))

    def red(f, arr):
        return f(arr, axis=dims, keepdims=keepdim)

    with np.errstate(all="ignore"):
        if dtype.is_floating_point:
            check(x.sum(dim, keepdim=keepdim), 0.0 + red(np.sum, ref))
            check(x.mean(dim, keepdim=keepdim), 0.0 + red(np.mean, ref))
            check(x.sum(dim, keepdim=keepdim, dtype=ptl.float64), 0.0 + red(np.sum, ref))
        else:
            check(x.sum(dim, keepdim=keepdim), red(np.sum, ref.astype(np.int64)))
        if dtype != ptl.bool and len(dims) == 1:   # prod takes one dim
            check(x.prod(dims[0], keepdim=keepdim), red(np.prod, ref))
        check(x.amax(dim, keepdim=keepdim), red(np.max, ref))
        check(x.amin(dim, keepdim=keepdim), red(np.min, ref))
        if x.dim() == 2:   # transposed: the same dims of size 1, swapped
            tdims = tuple(1 - d % 2 for d in dims)
            check(x.t().amax(tdims, keepdim=keepdim), np.max(ref.T, axis=tdims, keepdims=keepdim))
            check(x.t().sum(tdims, keepdim=keepdim),
                  (0.0 if dtype.is_floating_point else 0) +
                  np.sum(ref.T if dtype.is_floating_point else ref.T.astype(np.int64),
                         axis=tdims, keepdims=keepdim))
    if len(dims) == 1:
        d = dims[0]
        kept = ref if keepdim else np.squeeze(ref, d)
        for name in ("max", "min"):
            v, i = getattr(x, name)(d, keepdim=keepdim)
            check(v, kept)
            assert i.dtype == ptl.int64 and tuple(i.shape) == kept.shape and not i.numpy().any()
        if dtype != ptl.bool:
            for name in ("argmax", "argmin"):
                i = getattr(x, name)(d, keepdim=keepdim)
                assert i.dtype == ptl.int64 and tuple(i.shape) == kept.shape
                assert not i.numpy().any()
