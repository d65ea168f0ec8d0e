"""kthvalue, median, nanmedian and mode as compositions of the device's kernels, and cummax,
cummin and logcumsumexp on the scan kernel (src/aten/native/sort_device.c, Note [Device
selections and scans]; the scan's per-line functions in src/cuda/reduce_plan.h), checked on
the host: with _C._cuda_kernel_emulation on, CPU tensors take the path CUDA tensors take (the
emulated merge sort, pointwise ops, gather; the emulated scan kernel) and must give the CPU
kernel's values and indices bit for bit (logcumsumexp: to rounding), and NumPy's values, in
every dtype the op takes, on contiguous, transposed, sliced, 0-dim and size-0 inputs with
ties, NaN, +-inf and +-0.0; gradients through them; the CPU kernel's errors.  Under tunings
whose grids hold one block and many.  Needs no device."""
import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
from kernel_emulation import TUNINGS, emulated

DTYPES = [ptl.bool, ptl.uint8, ptl.int8, ptl.int16, ptl.int32, ptl.int64, ptl.float16,
          ptl.bfloat16, ptl.float32, ptl.float64]
FLOATS = {ptl.float16, ptl.bfloat16, ptl.float32, ptl.float64}


def values(rng, shape, dtype, special=True):
    """few distinct values (ties); floats with NaN, +-inf and +-0.0 when special"""
    if dtype == ptl.bool:
        return ptl.tensor(rng.integers(0, 2, size=shape).astype(bool))
    if dtype not in FLOATS:
        return ptl.tensor(rng.integers(0 if dtype == ptl.uint8 else -3, 4, size=shape)).to(dtype)
    v = rng.integers(-3, 4, size=shape).astype(np.float64) * 0.5
    if special and v.size:
        flat = v.reshape(-1)
        picks = rng.integers(0, flat.size, size=max(1, flat.size // 6))
        flat[picks] = rng.choice([np.nan, np.inf, -np.inf, -0.0, 0.0], size=picks.size)
    return ptl.tensor(v).to(dtype)


def bits(t):
    dense = ptl.empty(t.numel(), dtype=t.dtype).copy_(t.reshape(-1))
    return dense.view(ptl.uint8).numpy().tobytes()


def same(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype
    assert bits(got) == bits(want), (got, want)


def layouts(t):
    """t, a transposed view and a slice of a larger tensor (same values)"""
    out = [t]
    if t.dim() == 2:
        out.append(t.t().contiguous().t())
    if t.dim() >= 1 and t.shape[0] > 0:
        out.append(ptl.cat([t, t], 0)[t.shape[0]:])
    return out


# shapes: lanes of 1, 2, 33 (across the tiny tuning's block), long single lanes, 0-dim,
# size-0 along and across the dim
SHAPES = [(7,), (3, 5), (2, 33), (4, 1), (1, 70), (2, 3, 4), (), (0, 3), (3, 0)]


def run_both(fn, tuning):
    want = fn()
    with emulated(TUNINGS[tuning]) as ran:
        got = fn()
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    return got, want, ran


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cummax_cummin_are_the_cpu_kernels(tuning, dtype):
    rng = np.random.default_rng(0)
    for shape in SHAPES:
        for x in layouts(values(rng, shape, dtype)):
            for d in range(-max(x.dim(), 1), max(x.dim(), 1)):
                for name in ("cummax", "cummin"):
                    got, want, ran = run_both(lambda: getattr(x, name)(d), tuning)
                    for g, w in zip(got, want):
                        same(g, w)
                    assert ran["scan"] == (1 if x.numel() else 0)
    # NumPy's running extremum where there is no NaN
    v = rng.standard_normal((4, 9))
    with emulated(TUNINGS[tuning]):
        got = ptl.tensor(v).cummax(1)
    np.testing.assert_array_equal(got[0].numpy(), np.maximum.accumulate(v, 1))


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", sorted(FLOATS, key=str), ids=str)
def test_logcumsumexp_matches_the_cpu_and_numpy(tuning, dtype):
    rng = np.random.default_rng(1)
    for shape in SHAPES:
        for x in layouts(values(rng, shape, dtype)):
            for d in range(-max(x.dim(), 1), max(x.dim(), 1)):
                got, want, ran = run_both(lambda: x.logcumsumexp(d), tuning)
                assert got[0].shape == want[0].shape and got[0].dtype == dtype
                np.testing.assert_allclose(got[0].double().numpy(), want[0].double().numpy(),
                                           rtol=1e-12, atol=0)
    v = rng.standard_normal((3, 40)) * 30
    with emulated(TUNINGS[tuning]):
        got = ptl.tensor(v).logcumsumexp(1)
    np.testing.assert_allclose(got.numpy(), np.logaddexp.accumulate(v, 1), rtol=1e-12)


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_selections_are_the_cpu_kernels(tuning, dtype):
    """values and indices bit for bit: the stable device sort orders ties as the CPU's"""
    rng = np.random.default_rng(2)
    for shape in SHAPES:
        for x in layouts(values(rng, shape, dtype)):
            for d in range(-max(x.dim(), 1), max(x.dim(), 1)):
                n = x.shape[d] if x.dim() else 1
                if n == 0:
                    continue
                calls = [lambda: x.mode(d), lambda: x.mode(d, keepdim=True)]
                if dtype != ptl.bool:
                    calls += [lambda: x.kthvalue(1, d), lambda: x.kthvalue(n, d, True),
                              lambda: x.kthvalue((n + 1) // 2, d), lambda: x.median(d),
                              lambda: x.median(d, keepdim=True), lambda: x.nanmedian(d)]
                for fn in calls:
                    got, want, ran = run_both(fn, tuning)
                    for g, w in zip(got, want):
                        same(g, w)
                    assert x.numel() == 0 or ran["sort"] > 0
        if dtype != ptl.bool:
            for x in layouts(values(rng, shape, dtype)):
                for name in ("median", "nanmedian"):
                    got, want, _ = run_both(lambda: getattr(x, name)(), tuning)
                    same(got[0], want[0])


def test_selections_match_numpy():
    rng = np.random.default_rng(3)
    v = rng.standard_normal((5, 8))
    v[1, 3] = np.nan
    v[2, :] = np.nan
    x = ptl.tensor(v)
    with emulated(TUNINGS["small"]):
        kth = x[3:].kthvalue(3, 1)
        med = x[3:].median(1)
        nanmed = x.nanmedian(1)
        med_nan = x.median(1)
        mode = ptl.tensor([[1, 2, 2, 3, 3, 0], [5, 5, 4, 4, 4, 5]]).mode(1)
    s = np.sort(v[3:], 1)
    np.testing.assert_array_equal(kth[0].numpy(), s[:, 2])
    np.testing.assert_array_equal(v[3:][np.arange(2), kth[1].numpy()], s[:, 2])
    np.testing.assert_array_equal(med[0].numpy(), s[:, 3])
    lower = [np.sort(r[~np.isnan(r)])[(np.sum(~np.isnan(r)) - 1) // 2] if np.any(~np.isnan(r))
             else np.nan for r in v]
    np.testing.assert_array_equal(nanmed[0].numpy(), lower)
    assert np.isnan(med_nan[0].numpy()[[1, 2]]).all() and med_nan[1].tolist()[1] == 3
    # mode: the smallest of the most frequent values, at its last index
    assert mode[0].tolist() == [2, 4] and mode[1].tolist() == [2, 4]


@pytest.mark.parametrize("op", ["cummax", "cummin", "logcumsumexp", "kthvalue", "median",
                                "nanmedian", "mode", "median_all"])
def test_gradients_through_the_emulated_kernels(op):
    rng = np.random.default_rng(4)
    x = ptl.tensor(rng.standard_normal((3, 5))).t().requires_grad_(True)   # distinct values
    fns = {"cummax": lambda t: t.cummax(1)[0], "cummin": lambda t: t.cummin(0)[0],
           "logcumsumexp": lambda t: t.logcumsumexp(1), "kthvalue": lambda t: t.kthvalue(2, 0)[0],
           "median": lambda t: t.median(1)[0], "nanmedian": lambda t: t.nanmedian(0)[0],
           "mode": lambda t: t.mode(1)[0], "median_all": lambda t: t.median()}
    with emulated(TUNINGS["tiny"]) as ran:
        assert gradcheck(fns[op], (x,))
    assert ran["scan"] + ran["sort"] > 0


def test_errors_are_the_cpu_kernels():
    x = ptl.randn(3, 4)
    with emulated(TUNINGS["small"]) as ran:
        with pytest.raises(RuntimeError, match="kthvalue\\(\\): selected number k out of range "
                                               "for dimension 1"):
            x.kthvalue(5, 1)
        with pytest.raises(IndexError, match="median\\(\\): Expected reduction dim 1 to have "
                                             "non-zero size."):
            ptl.zeros(3, 0).median(1)
        with pytest.raises(IndexError, match="Dimension out of range"):
            x.cummax(2)
        with pytest.raises(NotImplementedError,
                           match="\"logcumsumexp_out_cpu\" not implemented for 'Long'"):
            ptl.tensor([1, 2]).logcumsumexp(0)
        with pytest.raises(NotImplementedError, match="\"median_out\" not implemented for 'Bool'"):
            ptl.tensor([True]).median(0)
    assert ran["scan"] == 0 and ran["sort"] == 0
