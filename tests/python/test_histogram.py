"""histogram and histogramdd (pytorchlite/_reductions.py) against NumPy's histogram /
histogramdd in float64: equal bins and given edges, range, weight, density, empty and constant
inputs, the right edge in the last bin, NaN and outliers not counted; PyTorch's errors and return
types, and torch when installed."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import assert_close, assert_raises_like_torch, make, torch, torch_ref


@pytest.mark.parametrize("shape", [(50,), (6, 7), (0,), ()])
@pytest.mark.parametrize("bins", [1, 4, 10])
def test_histogram_against_numpy(shape, bins):
    x, a = make(shape, ptl.float64, "transposed")
    hist, edges = ptl.histogram(x, bins)
    lo_hi = (a.min(), a.max()) if a.size else (0.0, 1.0)
    if lo_hi[0] == lo_hi[1]:
        lo_hi = (lo_hi[0] - 0.5, lo_hi[1] + 0.5)
    want_hist, want_edges = np.histogram(a, bins, range=lo_hi)
    assert_close(hist, want_hist.astype(np.float64))
    assert_close(edges, want_edges)
    w = np.random.default_rng(1).uniform(0, 2, shape)
    hist, _ = ptl.histogram(x, bins, range=(-2.0, 3.0), weight=ptl.tensor(w), density=True)
    want = np.histogram(a, bins, range=(-2.0, 3.0), weights=w, density=True)[0] \
        if a.size and ((a >= -2) & (a <= 3)).any() else np.full(bins, np.nan)
    assert_close(hist, want)


def test_histogram_takes_100_bins_by_default():
    x, a = make((7, 5), ptl.float64)
    hist, edges = ptl.histogram(x)
    want_hist, want_edges = np.histogram(a, 100)
    assert_close(hist, want_hist.astype(np.float64))
    assert_close(edges, want_edges)
    assert x.histogram()[0].shape == (100,)


def test_histogram_edges_outliers_and_float32():
    x = ptl.tensor([0.0, 1, 2, 3, 3, -1, 9, float("nan")])
    hist, edges = ptl.histogram(x, ptl.tensor([0.0, 1, 3]))
    assert_close(hist, np.array([1.0, 4.0], dtype=np.float32))
    assert_close(edges, np.array([0.0, 1, 3], dtype=np.float32))
    res = ptl.histogram(ptl.ones(3), 4)
    assert type(res).__name__ == "histogram" and res._fields == ("hist", "bin_edges")
    assert_close(res.bin_edges, np.array([0.5, 0.75, 1.0, 1.25, 1.5], dtype=np.float32))
    assert_close(res.hist, np.array([0.0, 0, 3, 0], dtype=np.float32))
    assert_close(ptl.ones(3).histogram(2)[0], np.array([0.0, 3.0], dtype=np.float32))


def test_histogramdd_against_numpy():
    a = np.random.default_rng(0).standard_normal((60, 3))
    w = np.random.default_rng(1).uniform(0, 1, 60)
    hist, edges = ptl.histogramdd(ptl.tensor(a), [3, 4, 2])
    lo, hi = a.min(0), a.max(0)
    want, want_edges = np.histogramdd(a, [3, 4, 2], range=list(zip(lo, hi)))
    assert_close(hist, want)
    for e, we in zip(edges, want_edges):
        assert_close(e, we)
    given = [ptl.tensor([-3.0, 0, 3]), ptl.tensor([-1.0, 1]), ptl.tensor([-2.0, -1, 0, 2])]
    hist = ptl.histogramdd(ptl.tensor(a), given, weight=ptl.tensor(w), density=True).hist
    want = np.histogramdd(a, [g.numpy() for g in given], weights=w, density=True)[0]
    assert_close(hist, want)
    hist = ptl.histogramdd(ptl.tensor(a), 2, range=[-1.0, 1, -2, 2, 0, 1]).hist
    assert_close(hist, np.histogramdd(a, 2, range=[(-1, 1), (-2, 2), (0, 1)])[0])
    assert type(ptl.histogramdd(ptl.tensor(a), 2)).__name__ == "histogramdd"


def test_errors():
    assert_raises_like_torch(lambda lib: lib.histogram(lib.tensor([1, 2]), 2),
                             NotImplementedError, "\"histogramdd\" not implemented for 'Long'")
    assert_raises_like_torch(lambda lib: lib.histogram(lib.ones(2), 0), RuntimeError,
                             "torch.histogram(): bins must be > 0, but got 0 for dimension 0")
    assert_raises_like_torch(lambda lib: lib.histogram(lib.ones(2), 2, range=(1, 0)),
                             RuntimeError, "torch.histogramdd: min should not exceed max, but "
                             "got min 1")
    assert_raises_like_torch(lambda lib: lib.histogram(lib.ones(2), lib.tensor([[1.0]])),
                             RuntimeError, "torch.histogramdd: bins tensor should have one "
                             "dimension, but got 2 dimensions in the bins tensor for dimension 0")
    assert_raises_like_torch(lambda lib: lib.histogram(lib.tensor([float("nan")]), 2),
                             RuntimeError, "torch.histogramdd: dimension 0's range [nan, nan] "
                             "is not finite")
    assert_raises_like_torch(lambda lib: lib.histogram(lib.ones(2), 2, weight=lib.ones(3)),
                             RuntimeError, "torch.histogramdd: if weight tensor is provided it "
                             "should have the same shape as the input tensor excluding its "
                             "innermost dimension, but got input with shape [2, 1] and weight "
                             "with shape [3]")


@torch_ref
def test_matches_torch():
    a = np.random.default_rng(0).standard_normal(200).astype(np.float32)
    for bins, kwargs in [(7, {}), (5, {"range": (-1.0, 1.0)}), (3, {"density": True})]:
        got = ptl.histogram(ptl.tensor(a), bins, **kwargs)
        want = torch.histogram(torch.tensor(a), bins, **kwargs)
        assert_close(got.hist, want.hist.numpy(), rtol=1e-6, atol=1e-6)
        assert_close(got.bin_edges, want.bin_edges.numpy())
    pts = np.random.default_rng(1).standard_normal((80, 2))
    got = ptl.histogramdd(ptl.tensor(pts), [4, 3], density=True)
    want = torch.histogramdd(torch.tensor(pts), [4, 3], density=True)
    assert_close(got.hist, want.hist.numpy())
