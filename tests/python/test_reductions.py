"""The reductions of pytorchlite/_reductions.py.  torch.nanmean / Tensor.nanmean: against
numpy.nanmean in float64 on random shapes with NaNs (0-dim, size-0, non-contiguous, dim
lists, keepdim, dtype=), gradcheck, and PyTorch's errors for integer input and an integer
dtype.  cov / corrcoef (correction, fweights, aweights) against numpy.cov / corrcoef, and
trapezoid / trapz / cumulative_trapezoid against numpy.trapezoid, on every layout, with
gradcheck and PyTorch's errors.  segment_reduce (every reduction, lengths and offsets, axis,
initial, empty segments, ties) against a NumPy loop and PyTorch, with gradcheck and its
errors."""
import re
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


# ---- segment_reduce ----

_NP_SEGMENT = {"sum": np.sum, "mean": np.mean, "prod": np.prod, "max": np.max, "amax": np.max,
               "min": np.min, "amin": np.min}
_EMPTY_SEGMENT = {"sum": 0.0, "mean": np.nan, "prod": 1.0, "max": -np.inf, "amax": -np.inf,
                  "min": np.inf, "amin": np.inf}


def _np_segment_reduce(a, reduce, lengths, axis, initial):
    """Loop reference: lengths [*a.shape[:axis], S]."""
    a = np.moveaxis(a, axis, -1)                 # [*lead, *rest, A]
    lead = a.shape[:axis]
    out = np.empty(lengths.shape + a.shape[axis:-1])
    for i in np.ndindex(*lead):
        start = 0
        for k, n in enumerate(lengths[i]):
            seg = a[i][..., start:start + n]
            start += n
            if n == 0:
                val = np.full(seg.shape[:-1], _EMPTY_SEGMENT[reduce] if initial is None
                              else initial)
            elif initial is None:
                val = _NP_SEGMENT[reduce](seg, -1)
            elif reduce == "mean":
                val = (seg.sum(-1) + initial) / n
            else:
                val = _NP_SEGMENT[reduce](np.concatenate(
                    [seg, np.full(seg.shape[:-1] + (1,), initial)], -1), -1)
            out[i + (k,)] = val
    return out


@pytest.mark.parametrize("reduce", ["sum", "mean", "prod", "max", "min", "amax", "amin"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_segment_reduce_against_numpy(reduce, layout):
    cases = [((6,), 0, [2, 0, 3, 1]), ((0,), 0, [0, 0]), ((5, 3), 0, [5]), ((7, 2), 0, [0, 7]),
             ((2, 6, 3), 1, [[2, 4], [3, 3]]), ((2, 3, 4), 2, [[[4, 0]] * 3, [[1, 3]] * 3]),
             ((3, 0), 1, [[0], [0], [0]]), ((2, 5), -1, [[1, 1, 3], [0, 5, 0]])]
    for shape, axis, lengths in cases:
        lengths = np.array(lengths, dtype=np.int64)
        x, a = make(shape, ptl.float64, layout)
        ax = axis % len(shape)
        for initial in (None, 2.0, -1):
            want = _np_segment_reduce(a, reduce, lengths, ax, initial)
            offsets = np.concatenate([np.zeros(lengths.shape[:-1] + (1,), dtype=np.int64),
                                      np.cumsum(lengths, -1)], -1)
            for kw in (dict(lengths=ptl.tensor(lengths)), dict(offsets=ptl.tensor(offsets)),
                       dict(lengths=ptl.tensor(lengths, dtype=ptl.int32))):
                got = ptl.segment_reduce(x, reduce, axis=axis, initial=initial, **kw)
                assert_close(got, want)
    x32 = ptl.tensor([1.0, 2.0, 3.0], dtype=ptl.bfloat16)
    got = ptl.segment_reduce(x32, reduce, lengths=ptl.tensor([1, 2]))
    assert got.dtype == ptl.bfloat16
    assert_close(got.float(), _np_segment_reduce(np.array([1.0, 2, 3]), reduce,
                                                 np.array([1, 2]), 0, None), rtol=1e-2)


@pytest.mark.parametrize("reduce", ["sum", "mean", "prod", "max", "min"])
def test_segment_reduce_gradcheck(reduce):
    rng = np.random.default_rng(4)
    x = ptl.tensor(rng.uniform(0.5, 2, size=(2, 7, 3)), requires_grad=True)
    # an empty segment is nan / -inf / inf without initial: no finite differences there
    for initial, lengths in ((None, [[2, 1, 4], [3, 3, 1]]), (1.5, [[2, 0, 5], [3, 3, 1]])):
        lengths = ptl.tensor(lengths)
        assert gradcheck(lambda x: ptl.segment_reduce(x, reduce, lengths=lengths, axis=1,
                                                      initial=initial), [x])


def test_segment_reduce_gradient_of_ties_and_zeros():
    """max / min share the gradient among a segment's tied elements (initial takes none);
    prod's gradient is exact around zeros -- PyTorch's segment_reduce backward."""
    x = ptl.tensor([1.0, 2.0, 0.0, 4.0, 0.0, 0.0, 3.0, 3.0, -2.0, -2.0], requires_grad=True)
    lengths = ptl.tensor([2, 2, 2, 2, 2])
    g, = ptl.autograd.grad(ptl.segment_reduce(x, "prod", lengths=lengths).sum(), [x])
    assert g.tolist() == [2.0, 1.0, 4.0, 0.0, 0.0, 0.0, 3.0, 3.0, -2.0, -2.0]
    g, = ptl.autograd.grad(ptl.segment_reduce(x, "max", lengths=lengths, initial=-2).sum(), [x])
    assert g.tolist() == [0.0, 1.0, 0.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    g, = ptl.autograd.grad(ptl.segment_reduce(x, "min", lengths=lengths, initial=3).sum(), [x])
    assert g.tolist() == [1.0, 0.0, 1.0, 0.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    if torch is not None:
        for reduce, initial in (("prod", None), ("max", -2), ("min", 3)):
            t = torch.tensor(x.tolist(), requires_grad=True)
            tg, = torch.autograd.grad(torch.segment_reduce(
                t, reduce, lengths=torch.tensor(lengths.tolist()), initial=initial).sum(), [t])
            g, = ptl.autograd.grad(ptl.segment_reduce(x, reduce, lengths=lengths,
                                                      initial=initial).sum(), [x])
            assert g.tolist() == tg.tolist()


def test_segment_reduce_errors():
    d = [1.0, 2, 3, 4]
    cases = [
        (RuntimeError, "reduce argument must be either sum, prod, mean, amax or amin, got foo",
         dict(reduce="foo", lengths=[4])),
        (RuntimeError, "segment_reduce(): Either lengths or offsets must be defined.", {}),
        (RuntimeError, "segment_reduce(): indices based reduction is not supported yet.",
         dict(indices=[0, 1])),
        (RuntimeError, "lengths contains negative value!", dict(lengths=[-1, 5])),
        (RuntimeError, "segment_reduce(): Expected all rows of lengths along axis to sum to "
         "data.size(lengths.dim()-1) when !unsafe.", dict(lengths=[1, 2])),
        (RuntimeError, "segment_reduce(): Expected axis to be the last dimension of lengths "
         "but got 0.", dict(data=[[1.0, 2.0], [3.0, 4.0]], lengths=[[2], [2]])),
        (RuntimeError, "Expected data.dim() >= lengths_value.dim() to be true, but got false.",
         dict(lengths=[[4]])),
        (RuntimeError, "Expected segment_length >= 0 to be true, but got false.",
         dict(offsets=[0, 3, 1, 4])),
        (RuntimeError, "min(): Expected reduction dim to be specified for input.numel() == 0.",
         dict(lengths=ptl.tensor([], dtype=ptl.int64))),
        (NotImplementedError, '"_segment_reduce_cpu" not implemented for \'Long\'',
         dict(data=[1, 2], lengths=[2])),
        (NotImplementedError, '"_segment_reduce_lengths_cpu_kernel1" not implemented for '
         "'Float'", dict(lengths=[4.0])),
        (NotImplementedError, '"_segment_reduce_offsets_cpu_kernel1" not implemented for '
         "'Float'", dict(offsets=[0.0, 4.0])),
        (IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got 1)",
         dict(lengths=[4], axis=1)),
    ]
    for exc, msg, kw in cases:
        def fn(lib, kw=kw):
            kw = dict(kw)
            data = kw.pop("data", d)
            reduce = kw.pop("reduce", "sum")
            kw = {k: lib.tensor(v) if isinstance(v, list) else
                  (lib.tensor(v.tolist(), dtype=lib.int64) if isinstance(v, ptl.Tensor) else v)
                  for k, v in kw.items()}
            return lib.segment_reduce(lib.tensor(data), reduce, **kw)
        assert_raises_like_torch(fn, exc, msg)
    # unsafe skips the checks of lengths, as PyTorch's
    got = ptl.segment_reduce(ptl.tensor(d), "sum", lengths=ptl.tensor([1, 2]), unsafe=True)
    assert got.tolist() == [1.0, 5.0]
    with pytest.raises(RuntimeError, match=re.escape("segment_reduce(): offsets must lie in "
                                                     "[0, 4]")):
        ptl.segment_reduce(ptl.tensor(d), "sum", offsets=ptl.tensor([0, 2, 9]))
    with pytest.raises(RuntimeError, match=re.escape("segment_reduce(): Expected offsets of "
                                                     "shape [2, '*'], got [1, 3]")):
        ptl.segment_reduce(ptl.zeros(2, 4), "sum", offsets=ptl.tensor([[0, 2, 4]]), axis=1)


@torch_ref
def test_segment_reduce_against_torch():
    rng = np.random.default_rng(8)
    for reduce in ("sum", "mean", "prod", "max", "min"):
        for initial in (None, 0.5):
            a = rng.normal(size=(3, 8, 2))
            lengths = np.array([[3, 0, 5], [8, 0, 0], [1, 2, 5]])
            x, t = ptl.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
            y = ptl.segment_reduce(x, reduce, lengths=ptl.tensor(lengths), axis=1,
                                   initial=initial)
            ty = torch.segment_reduce(t, reduce, lengths=torch.tensor(lengths), axis=1,
                                      initial=initial)
            assert_close(y.detach(), ty.detach().numpy())
            go = rng.normal(size=tuple(ty.shape))
            g, = ptl.autograd.grad(y, [x], ptl.tensor(go))
            tg, = torch.autograd.grad(ty, [t], torch.tensor(go))
            assert_close(g, tg.numpy())
