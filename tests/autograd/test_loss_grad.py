"""Gradients for the other arguments of losses and quantile (rows of
src/autograd/derivatives.def): binary_cross_entropy's target (first and second order), the
arguments PyTorch refuses to differentiate (refused at the forward call with PyTorch's
message), the composite losses that differentiate more than PyTorch, and quantile's q."""

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck, gradgradcheck
import golden
from helpers import torch

F = ptl.nn.functional
TF = torch.nn.functional if torch is not None else None


def arr(shape, seed=0, low=0.1, high=0.9):
    return np.random.default_rng(seed).uniform(low, high, size=shape)


def leaf(a):
    return ptl.tensor(a, dtype=ptl.float64, requires_grad=True)


def tleaf(a):
    return torch.tensor(a, dtype=torch.float64, requires_grad=True)


# ---- binary_cross_entropy: self and target, first and second order ----

BCE_W = np.array([0.5, 1.5, 2.0])


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_bce_gradcheck_input_and_target(reduction, weighted):
    # x transposed, target sliced, weight broadcast over the rows
    x = leaf(arr((3, 2), 0))
    t = leaf(arr((2, 6), 1))
    w = ptl.tensor(BCE_W, dtype=ptl.float64) if weighted else None

    def f(x, t):
        return F.binary_cross_entropy(x.t(), t[:, ::2], weight=w, reduction=reduction)
    assert gradcheck(f, (x, t))
    assert gradgradcheck(f, (x, t))


def test_bce_target_only_and_node_name():
    x = ptl.tensor(arr((4,), 2), dtype=ptl.float64)
    t = leaf(arr((4,), 3))
    y = F.binary_cross_entropy(x, t)
    assert type(y.grad_fn).__name__ == "BinaryCrossEntropyBackward0"
    assert gradcheck(lambda t: F.binary_cross_entropy(x, t), (t,))
    assert gradgradcheck(lambda t: F.binary_cross_entropy(x, t, reduction="sum"), (t,))


# x at and near the ends (target gradient -logit(x): +-inf at 0 and 1, no eps clamp), ties
BCE_X = np.array([[0.0, 1e-20, 1e-5, 0.5], [0.5, 1 - 1e-5, 1.0, 0.25]])
BCE_T = np.array([[0.3, 0.3, 1.0, 0.0], [0.5, 0.5, 0.3, 0.25]])


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_bce_grads_match_torch(reduction, weighted):
    def run(m):
        mk = leaf if m is ptl else tleaf
        x, t = mk(BCE_X), mk(BCE_T)
        w = m.tensor([1.0, 2.0, 0.5, 3.0], dtype=m.float64) if weighted else None
        y = m.nn.functional.binary_cross_entropy(x, t, weight=w, reduction=reduction)
        g = m.tensor(arr(tuple(y.shape), 4), dtype=m.float64)
        gx, gt = m.autograd.grad(y, (x, t), g, create_graph=True)
        # second order: gt's gradient for x, gx's for t
        gtx = m.autograd.grad(gt.sum(), (x, t), allow_unused=True)
        gxt = m.autograd.grad(gx[:, 1:3].sum(), (x, t), allow_unused=True)
        return golden.named((gx, gt) + tuple(gtx) + tuple(gxt))
    golden.assert_same_results(run, rtol=1e-7, atol=1e-12)


def test_bce_float32_target_grad_matches_torch():
    def run(m):
        x = m.tensor([0.0, 0.2, 0.7, 1.0], requires_grad=True)
        t = m.tensor([0.3, 0.3, 0.9, 0.3], requires_grad=True)
        return golden.named(m.autograd.grad(m.nn.functional.binary_cross_entropy(x, t), (x, t)))
    assert all(v.dtype == ptl.float32 for v in run(ptl).values())
    golden.assert_same_results(run, rtol=1e-6, atol=0)


# ---- arguments PyTorch does not differentiate: refused at the forward call ----

def _nll_case(m, dims, weight_grad=True, input_grad=True):
    x = m.tensor(np.log(arr(dims, 5)), dtype=m.float64, requires_grad=input_grad)
    c = dims[1] if len(dims) > 1 else dims[0]
    tshape = (dims[0],) + dims[2:] if len(dims) > 1 else ()
    t = m.tensor(np.random.default_rng(6).integers(0, c, tshape))
    w = m.tensor(arr((c,), 7), dtype=m.float64, requires_grad=weight_grad)
    return x, t, w


def _message(fn, *args, **kw):
    with pytest.raises(RuntimeError) as info:
        fn(*args, **kw)
    return str(info.value)


def _expected(name, arg):
    return (f"The function '{name}' is not differentiable with respect to argument '{arg}'. "
            "This input cannot have requires_grad True.")


@pytest.mark.parametrize("dims", [(4,), (3, 4), (2, 4, 3), (2, 4, 3, 2), (2, 4, 3, 2, 2)])
@pytest.mark.parametrize("loss", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("input_grad", [True, False])
def test_nll_loss_weight_requiring_grad_is_refused_like_torch(dims, loss, input_grad):
    def message(m):
        x, t, w = _nll_case(m, dims, input_grad=input_grad)
        return _message(getattr(m.nn.functional, loss), x, t, weight=w)
    name = "nll_loss_forward" if len(dims) <= 2 else "nll_loss2d_forward"
    assert message(ptl) == _expected(name, "weight")
    golden.assert_equal(message(ptl), lambda: message(torch))


def test_refusal_is_skipped_without_grad_mode_and_without_grad():
    def run(m):
        x, t, w = _nll_case(m, (3, 4))
        with m.no_grad():
            y = m.nn.functional.nll_loss(x, t, weight=w)
        res = {"no_grad node": y.grad_fn and type(y.grad_fn).__name__}
        x, t, w = _nll_case(m, (3, 4), weight_grad=False)
        y = m.nn.functional.nll_loss(x, t, weight=w)
        res["node"] = type(y.grad_fn).__name__
        return res
    assert run(ptl) == {"no_grad node": None, "node": "NllLossBackward0"}
    golden.assert_same_results(run)


def test_bce_weight_requiring_grad_is_refused_like_torch():
    def messages(m):
        mk = leaf if m is ptl else tleaf
        x, t, w = mk(BCE_X[:, 1:3]), mk(BCE_T[:, 1:3]), mk(np.array([0.5, 2.0]))
        return [_message(m.nn.functional.binary_cross_entropy, x.detach(), t, w),
                _message(m.nn.functional.binary_cross_entropy, x, t.detach(), w)]
    assert messages(ptl) == [_expected("binary_cross_entropy", "weight")] * 2
    golden.assert_equal(messages(ptl), lambda: messages(torch))


@pytest.mark.parametrize("dims", [(2, 3), (2, 3, 2)])
def test_loss_backward_weight_requiring_grad_is_refused_like_torch(dims):
    g = np.array(0.5)

    def theirs():
        x, t, w = _nll_case(torch, dims)
        total = torch.tensor(1.0, dtype=torch.float64)
        if len(dims) == 2:
            return _message(torch.ops.aten.nll_loss_backward, tleaf(g), x, t, w, 1, -100, total)
        return _message(torch.ops.aten.nll_loss2d_backward, tleaf(g), x.unsqueeze(-1),
                        t.unsqueeze(-1), w, 1, -100, total)
    x, t, w = _nll_case(ptl, dims)
    ours = _message(ptl.ops.aten.nll_loss_nd_backward, leaf(g), x, t, w, 1, -100)
    name = "nll_loss_backward" if len(dims) == 2 else "nll_loss2d_backward"
    assert ours == _expected(name, "weight")
    golden.assert_equal(ours, theirs, sub="nll")

    def bce(m):
        mk = leaf if m is ptl else tleaf
        return _message(m.ops.aten.binary_cross_entropy_backward, mk(g), mk(BCE_X[:, 1:3]),
                        mk(BCE_T[:, 1:3]), mk(BCE_W[:2]), 1)
    assert bce(ptl) == _expected("binary_cross_entropy_backward", "weight")
    golden.assert_equal(bce(ptl), lambda: bce(torch), sub="bce")


# ---- composite losses that give gradients PyTorch refuses: checked numerically ----

MORE_THAN_TORCH = [
    ("bce_with_logits_weight", lambda x, t, w: F.binary_cross_entropy_with_logits(
        x, t, weight=w)),
    ("bce_with_logits_pos_weight", lambda x, t, w: F.binary_cross_entropy_with_logits(
        x.t(), t.t(), pos_weight=w)),
    ("soft_margin_target", lambda x, t, w: F.soft_margin_loss(x, t * 2 - 1)),
    ("multi_margin_weight", lambda x, t, w: F.multi_margin_loss(
        x.t(), ptl.tensor([0, 2, 1]), weight=w[:, 0] + 0.5, margin=2.0)),
]


@pytest.mark.parametrize("name,fn", MORE_THAN_TORCH, ids=[c[0] for c in MORE_THAN_TORCH])
def test_composite_losses_differentiate_what_torch_refuses(name, fn):
    x, t = leaf(arr((3, 3), 8, -1.0, 1.0)), leaf(arr((3, 3), 9))
    w = leaf(arr((3, 1), 10, 0.5, 2.0)) if "multi" in name else leaf(arr((3,), 10, 0.5, 2.0))
    assert gradcheck(fn, (x, t, w))
    assert gradgradcheck(fn, (x, t, w))


# ---- quantile / nanquantile: q's gradient (linear interpolation only, as in PyTorch) ----

# ranks q * (count - 1) stay away from whole numbers, where the result has a kink in q
QX = np.array([[0.3, -1.2, 2.5, 0.7, 1.9], [4.0, -0.5, 1.1, 3.3, -2.2], [0.8, 0.1, -3.0, 2.2, 5.0]])
QNAN = np.array([[0.3, np.nan, 2.5, 0.7, 1.9], [4.0, -0.5, np.nan, 3.3, np.nan],
                 [0.8, 0.1, -3.0, 2.2, 5.0]])
QS = np.array([0.3, 0.9, 0.55, 0.9])

QUANTILE_CASES = [
    ("all_q0d", lambda f, x, q: f(x, q[0]), QX),
    ("all_q1d", lambda f, x, q: f(x, q[::2]), QX),
    ("dim1_q1d", lambda f, x, q: f(x, q[:3], dim=1), QX),
    ("dim0_t_keepdim", lambda f, x, q: f(x.t(), q[::2], dim=0, keepdim=True), QX),
    ("dim_neg_q0d_keepdim", lambda f, x, q: f(x, q[2], dim=-1, keepdim=True), QX),
    ("all_keepdim", lambda f, x, q: f(x.t(), q[1:3], keepdim=True), QX),
]


@pytest.mark.parametrize("name,fn,data", QUANTILE_CASES, ids=[c[0] for c in QUANTILE_CASES])
@pytest.mark.parametrize("op", ["quantile", "nanquantile"])
def test_quantile_gradcheck_self_and_q(name, fn, data, op):
    x, q = leaf(data), leaf(QS)
    f = getattr(ptl, op)
    assert gradcheck(lambda x, q: fn(f, x, q), (x, q))
    assert gradgradcheck(lambda x, q: fn(f, x, q), (x, q))


@pytest.mark.parametrize("dim", [None, 1])
def test_nanquantile_gradcheck_with_nans(dim):
    # lanes with one and two NaNs; NaN positions get no gradient
    x, q = leaf(QNAN[:, [0, 1, 3, 2, 4]] if dim is None else QNAN), leaf(QS[:2])
    f = (lambda x, q: ptl.nanquantile(x, q)) if dim is None else (
        lambda x, q: ptl.nanquantile(x, q, dim=dim))
    assert gradcheck(f, (x, q))
    assert gradgradcheck(f, (x, q))


# ties, a NaN lane in quantile, an all-NaN lane in nanquantile, q at 0 and 1
QT = np.array([[2.0, 2.0, 1.0, 2.0], [np.nan, 1.0, 3.0, 0.0], [np.nan] * 4, [5.0, -1.0, 5.0, 0.5]])
QT_Q = np.array([0.0, 0.25, 0.5, 0.8, 1.0])


@pytest.mark.parametrize("op", ["quantile", "nanquantile"])
@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("kw", [{}, {"dim": 1}, {"dim": 0, "keepdim": True}])
def test_quantile_grads_match_torch(op, interpolation, kw):
    def run(m):
        mk = leaf if m is ptl else tleaf
        x, q = mk(QT), mk(QT_Q)
        y = getattr(m, op)(x, q, interpolation=interpolation, **kw)
        g = m.tensor(arr(tuple(y.shape), 11), dtype=m.float64)
        gx, gq = m.autograd.grad(y, (x, q), g, allow_unused=True)
        if m is torch and op == "nanquantile" and interpolation == "linear" and \
                kw.get("dim") == 1:
            # PyTorch masks the ranks of an all-NaN lane where they are < 0, which misses
            # q = 0 (rank -0.0): its q gets NaN there.  Ours gives that lane no gradient for
            # every q, as PyTorch does for q > 0 and for quantile's NaN lanes.
            assert np.isnan(gq[0].item())
            gq = torch.nan_to_num(gq, nan=0.0)
        return {"output": y.detach(), "grad of x": gx, "grad of q": gq}
    # PyTorch connects q for linear interpolation only
    assert (run(ptl)["grad of q"] is None) == (interpolation != "linear")
    golden.assert_same_results(lambda m: {"output": run(m)["output"]}, rtol=1e-12, atol=0,
                               prefix="output: ")
    golden.assert_same_results(run, rtol=1e-7, atol=1e-12)


def test_quantile_q_without_grad_and_scalar_q():
    x = leaf(QX)

    def run(m):
        x = leaf(QX) if m is ptl else tleaf(QX)
        y = m.quantile(x, m.tensor(QS[:2], dtype=m.float64), dim=1)
        return {"grad of x": m.autograd.grad(y.sum(), (x,))[0]}
    golden.assert_same_results(run, rtol=1e-7, atol=1e-12)
    assert gradcheck(lambda x: ptl.nanquantile(x, 0.3, dim=0), (x,))
