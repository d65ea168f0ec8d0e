"""Fast paths of the training-step work (trainperf): F.linear folding leading dims into one
mm, checked against NumPy float64 and torch, forward and backward."""
import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck, gradgradcheck
from helpers import assert_close, make

F = ptl.nn.functional

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


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


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_linear_grads_match_torch():
    g = np.random.default_rng(10)
    xa, wa, ba = g.standard_normal((3, 5, 8)), g.standard_normal((7, 8)), g.standard_normal(7)
    outs = []
    for lib in (ptl, torch):
        x, w, b = (lib.tensor(a).requires_grad_() for a in (xa, wa, ba))
        y = lib.nn.functional.linear(x, w, b)
        (y * y).sum().backward()
        outs.append([t.detach().numpy() for t in (y, x.grad, w.grad, b.grad)])
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_linear_errors():
    import re
    with pytest.raises(RuntimeError, match=re.escape(
            "mat1 and mat2 shapes cannot be multiplied (6x4 and 5x6)")):
        F.linear(ptl.ones(2, 3, 4), ptl.ones(6, 5))


# ---- fused optimizer steps (Note [Fused optimizer step]) ----

def _trajectory(lib, opt_name, kwargs, dtype, steps=20, shapes=((7, 5), (5,), (3, 1, 4))):
    g = np.random.default_rng(11)
    inits = [g.standard_normal(s) for s in shapes]
    targets = [g.standard_normal(s) for s in shapes]
    params = [lib.tensor(a, dtype=getattr(lib, dtype)).requires_grad_() for a in inits]
    opt = getattr(lib.optim, opt_name)(params, **kwargs)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        loss = sum(((p - lib.tensor(t, dtype=p.dtype)) ** 4).sum() for p, t in zip(params, targets))
        loss.backward()
        opt.step()
        out.append([p.detach().numpy().copy() for p in params])
    return out


OPT_CASES = [
    ("SGD", dict(lr=0.01)),
    ("SGD", dict(lr=0.01, momentum=0.9)),
    ("SGD", dict(lr=0.01, momentum=0.9, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.01, momentum=0.5, dampening=0.3, maximize=True)),
    ("SGD", dict(lr=0.01, weight_decay=0.2, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.9), maximize=True, eps=1e-6)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, amsgrad=True, weight_decay=0.3)),
    ("AdamW", dict(lr=0.01, maximize=True)),
]


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("opt_name,kwargs", OPT_CASES)
def test_fused_step_trajectory_matches_torch(opt_name, kwargs):
    ours = _trajectory(ptl, opt_name, kwargs, "float64")
    ref = _trajectory(torch, opt_name, kwargs, "float64")
    for a, b in zip(ours, ref):
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("opt_name,kwargs", OPT_CASES)
def test_fused_step_matches_op_by_op_path(opt_name, kwargs):
    """foreach=False takes the op-by-op path: float32 results agree with the fused kernel."""
    fused = _trajectory(ptl, opt_name, kwargs, "float32", steps=5)
    plain = _trajectory(ptl, opt_name, dict(kwargs, foreach=False), "float32", steps=5)
    for a, b in zip(fused, plain):
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


def test_fused_step_used_and_falls_back():
    # a non-contiguous parameter takes the op-by-op path, a contiguous one the fused kernel;
    # both must give the same values
    base = ptl.tensor(np.arange(12.0).reshape(3, 4))
    p1 = base.clone().t().requires_grad_()          # non-contiguous leaf
    p2 = base.clone().t().contiguous().requires_grad_()
    for p in (p1, p2):
        opt = ptl.optim.SGD([p], lr=0.1, momentum=0.9)
        for _ in range(3):
            opt.zero_grad()
            (p * p).sum().backward()
            opt.step()
    np.testing.assert_allclose(p1.detach().numpy(), p2.detach().numpy(), rtol=1e-12)
    assert p1.is_contiguous() is False


def test_fused_kernels_direct_and_errors():
    import re
    aten = ptl.ops.aten
    p, g, buf = ptl.ones(4), ptl.full((4,), 2.0), ptl.zeros(4)
    aten._fused_sgd_step_(p, g, buf, 0.5, 0.9, 0.0, 0.0, False, False, True)
    assert_close(p, np.full(4, 0.0), dtype=ptl.float32)
    assert_close(buf, np.full(4, 2.0), dtype=ptl.float32)
    aten._fused_sgd_step_(p, g, None, 0.5, 0.0, 0.0, 0.0, False, False, False)
    assert_close(p, np.full(4, -1.0), dtype=ptl.float32)
    m, v = ptl.zeros(4), ptl.zeros(4)
    aten._fused_adam_step_(p, g, m, v, None, 1.0, 0.1, 0.9, 0.999, 0.0, 1e-8, False, False)
    assert_close(p, np.full(4, -1.1), dtype=ptl.float32)   # first Adam step moves by lr
    cases = [
        (lambda: aten._fused_sgd_step_(ptl.ones(4, dtype=ptl.int64), ptl.ones(4, dtype=ptl.int64),
                                       None, 0.1, 0.0, 0.0, 0.0, False, False, False),
         "_fused_sgd_step_: expected a float32 or float64 tensor, got Long"),
        (lambda: aten._fused_sgd_step_(ptl.ones(4, 2).t(), ptl.ones(2, 4), None, 0.1, 0.0, 0.0,
                                       0.0, False, False, False),
         "_fused_sgd_step_: self must be contiguous"),
        (lambda: aten._fused_sgd_step_(ptl.ones(4), ptl.ones(4, dtype=ptl.float64), None, 0.1,
                                       0.0, 0.0, 0.0, False, False, False),
         "_fused_sgd_step_: grad must have the dtype of self"),
        (lambda: aten._fused_sgd_step_(ptl.ones(4), ptl.ones(5), None, 0.1, 0.0, 0.0, 0.0, False,
                                       False, False),
         "_fused_sgd_step_: grad must have the shape of self"),
        (lambda: aten._fused_sgd_step_(ptl.ones(2, 2), ptl.ones(4, 1), None, 0.1, 0.0, 0.0, 0.0,
                                       False, False, False),
         "_fused_sgd_step_: grad must have the shape of self"),
        (lambda: aten._fused_sgd_step_(ptl.ones(2, 2), ptl.ones(2, 2), ptl.ones(2, 2).t(), 0.1,
                                       0.9, 0.0, 0.0, False, False, False),
         "_fused_sgd_step_: momentum_buffer must be contiguous"),
        (lambda: aten._fused_adam_step_(ptl.ones(3), ptl.ones(3), ptl.ones(2), ptl.ones(3), None,
                                        1.0, 0.1, 0.9, 0.9, 0.0, 1e-8, False, False),
         "_fused_adam_step_: exp_avg must have the shape of self"),
        (lambda: aten._fused_adam_step_(ptl.ones(3), ptl.ones(3), ptl.ones(3), ptl.ones(3),
                                        ptl.ones(3, dtype=ptl.float64), 1.0, 0.1, 0.9, 0.9, 0.0,
                                        1e-8, False, False),
         "_fused_adam_step_: max_exp_avg_sq must have the dtype of self"),
    ]
    for fn, msg in cases:
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            fn()
