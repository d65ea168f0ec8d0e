"""F.linear: leading dims folded into one mm (and one addmm with the bias), checked against
NumPy float64 and torch, forward and backward, with gradcheck and the errors."""
import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck, gradgradcheck
import golden
from helpers import assert_close, make

F = ptl.nn.functional


# ---- F.linear ----

LINEAR_CASES = [((5, 4), "contiguous"), ((2, 3, 4), "contiguous"), ((2, 3, 4), "transposed"),
                ((2, 3, 4), "sliced"), ((2, 3, 4), "expanded"), ((0, 3, 4), "contiguous"),
                ((2, 1, 3, 4), "contiguous"), ((4,), "contiguous")]


@pytest.mark.parametrize("shape,layout", LINEAR_CASES)
@pytest.mark.parametrize("bias", [None, "1d", "0d"])
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_linear_matches_numpy(shape, layout, bias, dtype):
    x, xn = make(shape, dtype, layout, seed=1)
    w, wn = make((6, 4), dtype, "contiguous", seed=2)
    b, bn = (None, 0.0) if bias is None else make((6,) if bias == "1d" else (), dtype, seed=3)
    assert_close(F.linear(x, w, b), xn.astype(np.float64) @ wn.T.astype(np.float64) + bn,
                 dtype=dtype)


GRAD_CASES = [((5, 4), "contiguous", True), ((2, 3, 4), "contiguous", True),
              ((2, 3, 4), "contiguous", False), ((2, 3, 4), "transposed", True),
              ((2, 3, 4), "sliced", False), ((2, 1, 3, 4), "contiguous", True)]


@pytest.mark.parametrize("shape,layout,with_bias", GRAD_CASES)
def test_linear_gradcheck(shape, layout, with_bias):
    x = make(shape, ptl.float64, layout, seed=4)[0].requires_grad_()
    w = make((6, 4), ptl.float64, seed=5)[0].requires_grad_()
    b = make((6,), ptl.float64, seed=6)[0].requires_grad_() if with_bias else None
    inputs = (x, w) if b is None else (x, w, b)
    assert gradcheck(lambda *a: F.linear(*a), inputs)
    if len(shape) == 3 and layout == "contiguous":
        assert gradgradcheck(lambda *a: F.linear(*a), inputs)


def test_linear_2d_bias_broadcast_keeps_matmul_path():
    # a [T, out] bias on a [B, T, in] input broadcasts over B (no folding)
    x, xn = make((2, 3, 4), ptl.float64, seed=7)
    w, wn = make((5, 4), ptl.float64, seed=8)
    b, bn = make((3, 5), ptl.float64, seed=9)
    assert_close(F.linear(x, w, b), xn @ wn.T + bn, dtype=ptl.float64)


def test_linear_grads_match_torch():
    g = np.random.default_rng(10)
    xa, wa, ba = g.standard_normal((3, 5, 8)), g.standard_normal((7, 8)), g.standard_normal(7)

    def run(lib):
        x, w, b = (lib.tensor(a).requires_grad_() for a in (xa, wa, ba))
        y = lib.nn.functional.linear(x, w, b)
        (y * y).sum().backward()
        return {"y": y.detach(), "x.grad": x.grad, "w.grad": w.grad, "b.grad": b.grad}
    golden.assert_same_results(run, rtol=1e-12, atol=1e-12)


def test_linear_errors():
    import re
    with pytest.raises(RuntimeError, match=re.escape(
            "mat1 and mat2 shapes cannot be multiplied (6x4 and 5x6)")):
        F.linear(ptl.ones(2, 3, 4), ptl.ones(6, 5))
