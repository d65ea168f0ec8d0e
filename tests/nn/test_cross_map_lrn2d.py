"""nn.CrossMapLRN2d (pytorchlite/nn/modules/_functions.py): forward and backward against a
NumPy float64 transcription of PyTorch's running-sum algorithm (whose windows the docstring
there describes, quirks included) for odd and even sizes, windows wider than the channels,
non-contiguous inputs, the repr, the 4-D check, and torch when installed."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import assert_close, assert_raises_like_torch, make, torch, torch_ref


def _np_lrn(a, g, size, alpha, beta, k):
    """(output, grad_input) as PyTorch's legacy CrossMapLRN2d computes them"""
    c = a.shape[1]
    sq = a * a
    scale = np.empty_like(a)
    pre_pad = int((size - 1) / 2 + 1)
    scale[:, 0] = sq[:, :min(pre_pad, c)].sum(1)
    for ch in range(1, c):
        scale[:, ch] = scale[:, ch - 1]
        if ch < c - pre_pad + 1:
            scale[:, ch] += sq[:, ch + pre_pad - 1]
        if ch > pre_pad:
            scale[:, ch] -= sq[:, ch - pre_pad]
    scale = scale * (alpha / size) + k
    out = scale ** -beta * a
    ipp = int(size - (size - 1) / 2)
    padded = np.zeros((a.shape[0], c + size - 1) + a.shape[2:])
    padded[:, ipp:ipp + c] = g * out / scale
    gi = scale ** -beta * g
    for ch in range(c):
        accum = padded[:, ch:ch + size].sum(1)
        gi[:, ch] -= 2 * alpha * beta / size * a[:, ch] * accum
    return out, gi


@pytest.mark.parametrize("size, c", [(3, 7), (5, 8), (4, 6), (5, 2), (6, 9), (2, 1)])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_forward_and_backward_against_numpy(size, c, layout):
    x, a = make((2, c, 3, 4), ptl.float64, layout, seed=size)
    g, ga = make((2, c, 3, 4), ptl.float64, seed=size + 1)
    want, want_grad = _np_lrn(a, ga, size, 1e-2, 0.75, 1.0)
    x.requires_grad_()
    y = ptl.nn.CrossMapLRN2d(size, 1e-2, 0.75, 1.0)(x)
    assert_close(y.detach(), want)
    y.backward(g)
    assert_close(x.grad, want_grad)
    y32 = ptl.nn.CrossMapLRN2d(size, 1e-2, 0.75, 1.0)(x.detach().float())
    assert y32.dtype == ptl.float32
    assert_close(y32, want.astype(np.float32), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(0, 3, 2, 2), (2, 0, 2, 2), (2, 3, 0, 2)])
def test_size_zero(shape):
    """Empty results and gradients (PyTorch 2.13 fails on zero channels: a select past the
    end of its running sum)"""
    x = ptl.ones(shape, requires_grad=True)
    y = ptl.nn.CrossMapLRN2d(3)(x)
    y.sum().backward()
    assert tuple(y.shape) == shape and tuple(x.grad.shape) == shape


def test_repr_and_errors():
    assert repr(ptl.nn.CrossMapLRN2d(3)) == "CrossMapLRN2d(3, alpha=0.0001, beta=0.75, k=1)"
    assert repr(ptl.nn.CrossMapLRN2d(5, 1e-3, 0.5, 2.0)) == \
        "CrossMapLRN2d(5, alpha=0.001, beta=0.5, k=2.0)"
    assert_raises_like_torch(lambda lib: lib.nn.CrossMapLRN2d(3)(lib.ones(2, 3, 4)), ValueError,
                             "CrossMapLRN2d: Expected input to be 4D, got 3D instead.")


@torch_ref
@pytest.mark.parametrize("size, c", [(3, 7), (5, 8), (4, 6)])
def test_matches_torch(size, c):
    a = np.random.default_rng(size).standard_normal((2, c, 3, 4))
    g = np.random.default_rng(size + 1).standard_normal((2, c, 3, 4))
    res = []
    for lib in (ptl, torch):
        x = lib.tensor(a, requires_grad=True)
        y = lib.nn.CrossMapLRN2d(size, 1e-2, 0.75, 1.0)(x)
        y.backward(lib.tensor(g))
        res.append((y.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-12, atol=1e-14)
