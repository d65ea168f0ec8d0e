"""torch.gradient (pytorchlite/_reductions.py) against numpy.gradient in float64: every dim or
chosen dims, uniform spacing (one number or one per dim) and sample coordinates, edge_order 1
and 2, non-contiguous inputs, integer inputs in the default dtype; gradcheck, PyTorch's errors
and the same calls in torch when installed."""
import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
from helpers import LAYOUTS, assert_close, assert_raises_like_torch, make, torch, torch_ref


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [(5,), (4, 6), (3, 4, 5)])
@pytest.mark.parametrize("edge_order", [1, 2])
def test_against_numpy(shape, layout, edge_order):
    x, a = make(shape, ptl.float64, layout)
    got = ptl.gradient(x, edge_order=edge_order)
    want = np.gradient(a, edge_order=edge_order)
    want = [want] if len(shape) == 1 else want
    assert len(got) == len(shape)
    for g, w in zip(got, want):
        assert_close(g, w)
    steps = [0.5 + i for i in range(len(shape))]
    for g, w in zip(ptl.gradient(x, spacing=steps, edge_order=edge_order),
                    [np.gradient(a, s, axis=i, edge_order=edge_order)
                     for i, s in enumerate(steps)]):
        assert_close(g, w)
    coords = [np.cumsum(np.random.default_rng(i).uniform(0.2, 1.5, n)) for i, n in
              enumerate(shape)]
    got = ptl.gradient(x, spacing=[ptl.tensor(c) for c in coords], edge_order=edge_order)
    for i, g in enumerate(got):
        assert_close(g, np.gradient(a, coords[i], axis=i, edge_order=edge_order))
    last = ptl.gradient(x, spacing=3.0, dim=-1, edge_order=edge_order)
    assert len(last) == 1
    assert_close(last[0], np.gradient(a, 3.0, axis=-1, edge_order=edge_order))


def test_dtypes_and_edges():
    got = ptl.gradient(ptl.tensor([1, 4, 9, 16]))
    assert_close(got[0], np.array([3.0, 4, 6, 7], dtype=np.float32), dtype=ptl.float32)
    assert ptl.gradient(ptl.tensor(1.0)) == ()
    assert_close(ptl.gradient(ptl.ones(2, 3), dim=[1])[0], np.zeros((2, 3)))
    x = ptl.tensor(np.random.default_rng(0).standard_normal((4, 3)), requires_grad=True)
    c = ptl.tensor([0.0, 0.5, 2.0, 2.5], dtype=ptl.float64)
    for edge_order in (1, 2):
        assert gradcheck(lambda t: ptl.gradient(t, edge_order=edge_order), (x,))
        assert gradcheck(lambda t: ptl.gradient(t, spacing=[c], dim=0, edge_order=edge_order),
                         (x,))


def test_errors():
    assert_raises_like_torch(lambda lib: lib.gradient(lib.ones(4), edge_order=3), RuntimeError,
                             "torch.gradient only supports edge_order=1 and edge_order=2.")
    assert_raises_like_torch(lambda lib: lib.gradient(lib.ones(2), edge_order=2), RuntimeError,
                             "torch.gradient expected each dimension size to be at least "
                             "edge_order+1")
    assert_raises_like_torch(lambda lib: lib.gradient(lib.ones(2, 3), spacing=[1.0, 2.0, 3.0]),
                             RuntimeError, "torch.gradient expected spacing to be unspecified, "
                             "a scalar, or a list of length equal to 'self.dim() = 2', since dim "
                             "argument was not given, but got a list of length 3")
    with pytest.raises(RuntimeError, match="to have as many elements as the input's dim 0"):
        ptl.gradient(ptl.ones(3), spacing=[ptl.tensor([1.0, 2.0])])   # PyTorch reads past it


@torch_ref
def test_matches_torch():
    a = np.random.default_rng(0).standard_normal((5, 6))
    y, x = np.cumsum(np.arange(1.0, 6.0)), np.cumsum(np.arange(1.0, 7.0) ** 0.5)
    for edge_order in (1, 2):
        for kwargs, tkwargs in [({}, {}), ({"spacing": 2.0, "dim": 1}, {"spacing": 2.0, "dim": 1}),
                                ({"spacing": [ptl.tensor(y), ptl.tensor(x)]},
                                 {"spacing": [torch.tensor(y), torch.tensor(x)]})]:
            got = ptl.gradient(ptl.tensor(a), edge_order=edge_order, **kwargs)
            want = torch.gradient(torch.tensor(a), edge_order=edge_order, **tkwargs)
            for g, w in zip(got, want, strict=True):
                assert_close(g, w.numpy(), rtol=1e-12, atol=1e-12)
