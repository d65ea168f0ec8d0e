"""The reductions of pytorchlite/_reductions.py.  torch.nanmean / Tensor.nanmean: against
numpy.nanmean in float64 on random shapes with NaNs (0-dim, size-0, non-contiguous, dim
lists, keepdim, dtype=), gradcheck, and PyTorch's errors for integer input and an integer
dtype.  cov / corrcoef (correction, fweights, aweights) against numpy.cov / corrcoef, and
trapezoid / trapz / cumulative_trapezoid against numpy.trapezoid, on every layout, with
gradcheck and PyTorch's errors."""
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
from helpers import assert_close, assert_raises_like_torch, make, torch, torch_ref


def with_nans(shape, seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=shape)
    a[rng.uniform(size=shape) < 0.3] = np.nan
    return a


def np_nanmean(a, dim=None, keepdim=False):
    axis = tuple(dim) if isinstance(dim, (list, tuple)) else dim
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # all-NaN slices
        return np.nanmean(a, axis=axis, keepdims=keepdim)


@pytest.mark.parametrize("shape, dim, keepdim", [
    ((), None, False), ((5,), None, False), ((5,), 0, True), ((3, 4), 1, False),
    ((3, 4), -2, True), ((2, 3, 4), [0, 2], False), ((2, 0, 3), 1, False), ((0,), None, False),
    ((4, 3), (0, 1), True)])
def test_against_numpy(shape, dim, keepdim):
    a = with_nans(shape, 1)
    got = ptl.nanmean(ptl.tensor(a), dim, keepdim)
    assert_close(got, np_nanmean(a, dim, keepdim), dtype=ptl.float64, rtol=1e-12, atol=1e-14)
    assert_close(ptl.tensor(a).nanmean(dim, keepdim), np_nanmean(a, dim, keepdim), rtol=1e-12,
                 atol=1e-14)


def test_non_contiguous_dtype_and_out():
    a = with_nans((4, 5), 2)
    t = ptl.tensor(a.T.copy()).T
    assert not t.is_contiguous()
    assert_close(ptl.nanmean(t, 1), np_nanmean(a, 1), rtol=1e-12, atol=1e-14)
    f = ptl.tensor(a, dtype=ptl.float32)
    assert_close(f.nanmean(0, dtype=ptl.float64), np_nanmean(a.astype(np.float32), 0),
                 dtype=ptl.float64, rtol=1e-6, atol=1e-7)
    out = ptl.empty(5, dtype=ptl.float64)
    assert ptl.nanmean(ptl.tensor(a), 0, out=out) is out
    assert_close(out, np_nanmean(a, 0), rtol=1e-12, atol=1e-14)


def test_all_nan_slice_is_nan():
    assert np.isnan(ptl.nanmean(ptl.tensor([float("nan"), float("nan")])).item())


def test_gradcheck():
    a = with_nans((3, 4), 3)
    x = ptl.tensor(a, requires_grad=True)
    assert gradcheck(lambda t: ptl.nanmean(t, 1), (x,))
    assert gradcheck(lambda t: t.nanmean(), (x,))


def test_errors():
    with pytest.raises(RuntimeError, match="nanmean\\(\\): expected input to have floating point "
                                           "or complex dtype but got Long"):
        ptl.nanmean(ptl.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="nanmean\\(\\): could not infer output dtype. Optional "
                                           "dtype must be either a floating point or complex "
                                           "dtype. Got: Int"):
        ptl.tensor([1.0]).nanmean(dtype=ptl.int32)


@torch_ref
def test_errors_match_torch():
    for fn in (lambda m: m.nanmean(m.tensor([1, 2])),
               lambda m: m.tensor([1.0, float("nan")]).nanmean(dtype=m.int64)):
        with pytest.raises(RuntimeError) as want:
            fn(torch)
        with pytest.raises(RuntimeError) as got:
            fn(ptl)
        assert str(got.value) == str(want.value)


def np_cov(a, correction=1, fweights=None, aweights=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # numpy's dof <= 0
        return np.cov(a, ddof=correction, fweights=fweights, aweights=aweights)


# two observations with correction 2 leave no degrees of freedom: PyTorch's warning, tested in
# test_cov_dtypes_and_degenerate_cases
@pytest.mark.filterwarnings("ignore:.*degrees of freedom is <= 0")
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "expanded"])
@pytest.mark.parametrize("shape", [(3, 6), (1, 5), (6,), (4, 2)])
@pytest.mark.parametrize("correction", [0, 1, 2])
def test_cov_against_numpy(shape, correction, layout):
    t, a = make(shape, ptl.float64, layout)
    n = shape[-1]
    fw = np.arange(1, n + 1) % 3
    aw = np.linspace(0.25, 2.0, n)
    for kw in ({}, {"fweights": fw}, {"aweights": aw}, {"fweights": fw, "aweights": aw}):
        got = ptl.cov(t, correction=correction,
                      **{k: ptl.tensor(v) for k, v in kw.items()})
        assert_close(got, np_cov(a, correction, **kw), dtype=ptl.float64, rtol=1e-12,
                     atol=1e-14)
    assert_close(t.cov(correction=correction), np_cov(a, correction), rtol=1e-12, atol=1e-14)
    with np.errstate(invalid="ignore"):   # an expanded 1-D input is constant: 0 / 0
        c = np.corrcoef(a)
    assert_close(ptl.corrcoef(t), c, rtol=1e-12, atol=1e-14)
    assert_close(t.corrcoef(), c, rtol=1e-12, atol=1e-14)


def test_cov_dtypes_and_degenerate_cases():
    i = np.array([[1, 4, 2], [0, 0, 3]])
    assert_close(ptl.cov(ptl.tensor(i)), np.cov(i), dtype=ptl.float32)
    assert_close(ptl.corrcoef(ptl.tensor(i, dtype=ptl.int32)), np.corrcoef(i),
                 dtype=ptl.float32)
    assert_close(ptl.corrcoef(ptl.tensor([1.0, 2.0, 4.0])), np.array(1.0))
    with pytest.warns(UserWarning, match="cov\\(\\): degrees of freedom is <= 0"):
        got = ptl.cov(ptl.tensor([[1.0, 2.0]]), correction=2)
    assert np.isinf(got.item())
    assert np.isnan(ptl.corrcoef(ptl.tensor([3.0, 3.0])).item())


def test_cov_errors():
    assert_raises_like_torch(lambda m: m.cov(m.ones(2, 2, 2)), RuntimeError,
                             "cov(): expected input to have two or fewer dimensions but got an "
                             "input with 3 dimensions")
    assert_raises_like_torch(lambda m: m.cov(m.ones(2, dtype=m.bool)), RuntimeError,
                             "cov(): bool dtype is not supported for input")
    assert_raises_like_torch(lambda m: m.cov(m.ones(2, 3), fweights=m.ones(3)), RuntimeError,
                             "cov(): expected fweights to have integral dtype but got fweights "
                             "with Float dtype")
    assert_raises_like_torch(lambda m: m.cov(m.ones(2, 3), aweights=m.ones(3, 1)),
                             RuntimeError, "cov(): expected aweights to have one or fewer "
                             "dimensions but got aweights with 2 dimensions")
    assert_raises_like_torch(lambda m: m.cov(m.ones(2, 3), fweights=m.ones(2, dtype=m.int64)),
                             RuntimeError, "cov(): expected fweights to have the same numel as "
                             "there are observations in the input but got 2 != 3")
    assert_raises_like_torch(lambda m: m.cov(m.ones(2, 3), aweights=-m.ones(3)), RuntimeError,
                             "cov(): aweights cannot be negative")
    assert_raises_like_torch(lambda m: m.cov(m.ones(2, 3), fweights=m.zeros(3, dtype=m.int64)),
                             RuntimeError, "cov(): weights sum to zero, can't be normalized")
    assert_raises_like_torch(lambda m: m.corrcoef(m.ones(2, 2, 2)), RuntimeError,
                             "corrcoef(): expected input to have two or fewer dimensions")


def test_cov_and_corrcoef_gradcheck():
    x = ptl.tensor(np.random.default_rng(4).normal(size=(3, 5)), requires_grad=True)
    aw = ptl.tensor(np.linspace(0.5, 1.5, 5), requires_grad=True)
    assert gradcheck(lambda t: ptl.cov(t), (x,))
    assert gradcheck(lambda t, w: ptl.cov(t, fweights=ptl.tensor([1, 2, 1, 3, 1]), aweights=w),
                     (x, aw))
    assert gradcheck(ptl.corrcoef, (x,))


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "expanded"])
@pytest.mark.parametrize("shape, dim", [((3, 5), -1), ((3, 5), 0), ((4,), 0), ((2, 1, 3), 1),
                                        ((2, 0), 1), ((0, 3), 1), ((2, 3, 4), 1)])
def test_trapezoid_against_numpy(shape, dim, layout):
    t, a = make(shape, ptl.float64, layout)
    n = shape[dim]
    x = np.sort(np.random.default_rng(5).normal(size=n))
    xs = np.sort(np.random.default_rng(6).normal(size=shape), axis=dim)
    assert_close(ptl.trapezoid(t, dim=dim), np.trapezoid(a, axis=dim), dtype=ptl.float64,
                 rtol=1e-12, atol=1e-14)
    assert_close(ptl.trapz(t, dx=0.25, dim=dim), np.trapezoid(a, dx=0.25, axis=dim),
                 rtol=1e-12, atol=1e-14)
    assert_close(ptl.trapezoid(t, ptl.tensor(x), dim=dim), np.trapezoid(a, x, axis=dim),
                 rtol=1e-12, atol=1e-14)
    assert_close(ptl.trapezoid(t, ptl.tensor(xs), dim=dim), np.trapezoid(a, xs, axis=dim),
                 rtol=1e-12, atol=1e-14)
    d = np.moveaxis(a, dim, -1)
    pairs = (d[..., 1:] + d[..., :-1]) / 2
    want = np.moveaxis(np.cumsum(pairs * np.diff(x), axis=-1), -1, dim)
    assert_close(ptl.cumulative_trapezoid(t, ptl.tensor(x), dim=dim), want, rtol=1e-12,
                 atol=1e-14)
    want = np.moveaxis(np.cumsum(pairs * 0.5, axis=-1), -1, dim)
    assert_close(ptl.cumulative_trapezoid(t, dx=0.5, dim=dim), want, rtol=1e-12, atol=1e-14)


def test_trapezoid_integers_errors_and_gradcheck():
    assert_close(ptl.trapezoid(ptl.tensor([1, 2, 4])), np.array(4.5), dtype=ptl.float32)
    assert_close(ptl.cumulative_trapezoid(ptl.tensor([1, 2, 4])), np.array([1.5, 4.5]),
                 dtype=ptl.float32)
    assert_raises_like_torch(lambda m: m.trapezoid(m.tensor([True])), RuntimeError,
                             "trapezoid: received a bool input for `y`, but bool is not "
                             "supported")
    assert_raises_like_torch(lambda m: m.cumulative_trapezoid(m.ones(3), dx=True), RuntimeError,
                             "cumulative_trapezoid: Currently, we only support dx as a real "
                             "number.")
    assert_raises_like_torch(lambda m: m.trapezoid(m.ones(3), m.ones(2)), RuntimeError,
                             "trapezoid: There must be one `x` value for each sample point")
    assert_raises_like_torch(lambda m: m.cumulative_trapezoid(m.tensor(1.0)), IndexError,
                             "slice() cannot be applied to a 0-dim tensor.")
    y = ptl.tensor(np.random.default_rng(7).normal(size=(3, 4)), requires_grad=True)
    x = ptl.tensor(np.sort(np.random.default_rng(8).normal(size=4)), requires_grad=True)
    assert gradcheck(lambda a, b: ptl.trapezoid(a, b), (y, x))
    assert gradcheck(lambda a: ptl.trapezoid(a, dx=0.3, dim=0), (y,))
    assert gradcheck(lambda a, b: ptl.cumulative_trapezoid(a, b), (y, x))
