"""The derivative of scatter_reduce (src/autograd/derivatives/index.c, its rows in the
index.c section of derivatives.def): float64 gradcheck / gradgradcheck of every reduce on
non-contiguous inputs, gradients equal to PyTorch's on inputs with ties and zeros, PyTorch's
double-backward error for several zeros in a prod slot, and the legacy scatter(reduce=)
overloads refusing backward as PyTorch's do."""
import re

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck, gradgradcheck

import golden
from helpers import assert_no_leak, torch

REDUCES = ["sum", "prod", "mean", "amax", "amin"]


def leaf(shape, seed=0, L=ptl):
    a = np.random.default_rng(seed).uniform(-2, 2, size=shape)
    return L.tensor(a, dtype=L.float64, requires_grad=True)


# index for a (3, 4) self along dim 0 with a (2, 4) src, and along dim 1 with a (3, 3) src
IDX0 = ptl.tensor([[2, 0, 2, 1], [2, 2, 0, 1]])
IDX1 = ptl.tensor([[3, 0, 3], [1, 1, 1], [0, 2, 0]])

# derivatives.def row -> (function, input shapes) gradchecked and gradgradchecked below;
# the in-place rows act on a non-leaf copy
GRADCHECKED_ROWS = {
    "scatter_reduce_two": (
        lambda a, b: a.t().scatter_reduce(0, IDX0, b[:, ::2], "mean", include_self=False),
        [(4, 3), (2, 8)]),
    "scatter_reduce__two": (
        lambda a, b: (a * 1).scatter_reduce_(1, IDX1, b.t(), "prod"), [(3, 4), (3, 3)]),
}

# the legacy overloads: PyTorch records a NotImplemented node that raises at backward
LEGACY_ROWS = {
    "scatter_reduce": (lambda L, a, b: a.scatter(0, L.tensor([[2, 0, 2, 1]]), b, reduce="add"),
                       "aten::scatter"),
    "scatter__reduce": (lambda L, a, b: (a * 1).scatter_(0, L.tensor([[1, 1, 0, 2]]), b,
                                                         reduce="multiply"), "aten::scatter_"),
    "scatter_value_reduce": (lambda L, a, b: a.scatter(1, L.tensor([[0, 0], [3, 1]]), 2.0,
                                                       reduce="multiply"), "aten::scatter"),
    "scatter__value_reduce": (lambda L, a, b: (a * 1).scatter_(1, L.tensor([[2], [2]]), 2.0,
                                                               reduce="add"), "aten::scatter_"),
}


@pytest.mark.parametrize("row", sorted(GRADCHECKED_ROWS))
def test_row_gradcheck(row):
    fn, shapes = GRADCHECKED_ROWS[row]
    args = [leaf(s, seed=i) for i, s in enumerate(shapes)]
    assert type(fn(*args).grad_fn).__name__ == "ScatterReduceBackward0"
    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)


# ---- every reduce, include_self True / False, non-contiguous and expanded inputs ----

@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCES)
def test_gradcheck_every_reduce(reduce, include_self):
    a, b = leaf((4, 3)), leaf((2, 8), seed=1)
    # self transposed, src sliced, along dim 0
    assert gradcheck(lambda x, y: x.t().scatter_reduce(0, IDX0, y[:, ::2], reduce,
                                                       include_self=include_self), [a, b])
    # self expanded (stride 0), src transposed, along dim 1 (negative)
    c, d = leaf((1, 4), seed=2), leaf((3, 3), seed=3)
    assert gradcheck(lambda x, y: x.expand(3, 4).scatter_reduce(-1, IDX1, y.t(), reduce,
                                                                include_self=include_self),
                     [c, d])


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCES)
def test_gradgradcheck_every_reduce(reduce, include_self):
    a, b = leaf((3, 4)), leaf((3, 3), seed=1)
    assert gradgradcheck(lambda x, y: x.scatter_reduce(1, IDX1, y.t(), reduce,
                                                       include_self=include_self), [a, b])


def test_gradcheck_3d_and_inplace_on_a_view():
    idx = ptl.tensor(np.random.default_rng(5).integers(0, 2, size=(2, 3, 2)))
    a, b = leaf((2, 2, 2)), leaf((2, 3, 2), seed=1)
    for reduce in REDUCES:
        assert gradcheck(lambda x, y: x.scatter_reduce(1, idx, y, reduce), [a, b])

    def on_view(x, y):
        z = x * 1
        z[1].scatter_reduce_(0, IDX0, y, "amax", include_self=False)
        return z
    assert gradcheck(on_view, [leaf((2, 3, 4)), leaf((2, 4), seed=1)])


def test_prod_with_zeros_gradcheck():
    # one zero in self, one zero alone in a slot of src, two zeros in another slot
    x = ptl.tensor([[0.0, 2.0, 3.0], [1.5, 0.5, -1.0]], dtype=ptl.float64, requires_grad=True)
    s = ptl.tensor([[0.0, 0.0, 2.0], [0.0, 3.0, 0.0], [1.0, -2.0, 4.0]], dtype=ptl.float64,
                   requires_grad=True)
    idx = ptl.tensor([[1, 0, 1], [0, 0, 1], [1, 1, 0]])
    for include_self in [True, False]:
        assert gradcheck(lambda a, b: a.scatter_reduce(0, idx, b, "prod",
                                                       include_self=include_self), [x, s])
    # with a single zero per slot, the gradient is differentiable again
    s1 = ptl.tensor([[0.0, 1.5, 2.0], [1.0, 3.0, 0.0], [1.0, -2.0, 4.0]], dtype=ptl.float64,
                    requires_grad=True)
    assert gradgradcheck(lambda a, b: a.scatter_reduce(0, idx, b, "prod"), [x, s1])


# ---- the same gradients as PyTorch on ties and zeros ----

TIES_AND_ZEROS = [
    # (self, src, index, dim)
    ([1.0, 2.0, 3.0], [0.0, 0.0, 2.0, 5.0], [0, 0, 1, 2], 0),       # two zeros in one slot
    ([0.0, 2.0, 3.0], [4.0, 0.0, 2.0, 5.0], [0, 1, 1, 0], 0),       # zero in self, lone zero
    ([3.0, 5.0, 1.0], [3.0, 1.0, 5.0, 5.0], [0, 0, 1, 1], 0),       # ties with self and src
    ([3.0, 5.0, 1.0], [3.0, 3.0, 3.0, 1.0], [0, 0, 0, 1], 0),       # three-way tie in src
    ([[2.0, 0.0, 2.0], [1.0, 1.0, -1.0]], [[2.0, 2.0], [0.0, 1.0]], [[0, 2], [1, 1]], 1),
    ([[0.0, 4.0], [0.0, -3.0], [2.0, 2.0]], [[0.0, 4.0], [0.0, 0.0]], [[0, 0], [0, 2]], 0),
]


def grads_of(L, xs, ss, idx, dim, reduce, include_self, inplace=False):
    x = L.tensor(xs, dtype=L.float64, requires_grad=True)
    s = L.tensor(ss, dtype=L.float64, requires_grad=True)
    i = L.tensor(idx)
    if inplace:
        y = (x * 1).scatter_reduce_(dim, i, s, reduce, include_self=include_self)
    else:
        y = x.scatter_reduce(dim, i, s, reduce, include_self=include_self)
    g = L.tensor(np.arange(1.0, y.numel() + 1).reshape(tuple(y.shape)), dtype=L.float64)
    gx, gs = L.autograd.grad(y, (x, s), g)
    return type(y.grad_fn).__name__, gx.tolist(), gs.tolist()


def grads_match(run, rtol, atol, prefix=""):
    """run(L) -> grads_of's (node, grad of self, grad of src): the same gradients as torch's
    (live, or stored without torch: tests/golden.py)."""
    golden.assert_same_results(
        lambda L: {k: np.array(v) for k, v in zip(["self", "src"], run(L)[1:])},
        rtol=rtol, atol=atol, prefix=prefix)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCES)
def test_grads_match_torch_on_ties_and_zeros(reduce, include_self):
    for k, (xs, ss, idx, dim) in enumerate(TIES_AND_ZEROS):
        got = grads_of(ptl, xs, ss, idx, dim, reduce, include_self, inplace=k % 2 == 1)
        assert got[0] == "ScatterReduceBackward0"
        grads_match(lambda L: grads_of(L, xs, ss, idx, dim, reduce, include_self,
                                       inplace=L is ptl and k % 2 == 1),
                    rtol=1e-14, atol=0, prefix=f"case {k}: ")


def test_amax_include_self_false_counts_self_in_ties_as_torch():
    # self[0] is excluded but equals the result: PyTorch still counts it in the tie and
    # gives src[0] half the gradient (FunctionsManual.cpp); we follow PyTorch
    got = grads_of(ptl, [3.0, 5.0], [3.0, 1.0], [0, 0], 0, "amax", False)
    assert got[1] == [0.0, 2.0] and got[2] == [0.5, 0.0]   # output grads are [1, 2]
    assert golden.plain(got) == golden.answer(
        lambda: grads_of(torch, [3.0, 5.0], [3.0, 1.0], [0, 0], 0, "amax", False))


@pytest.mark.parametrize("reduce", REDUCES)
def test_random_grads_match_torch(reduce):
    rng = np.random.default_rng(7)
    xs, ss = rng.uniform(-2, 2, size=(4, 5)), rng.uniform(-2, 2, size=(3, 5))
    idx = rng.integers(0, 4, size=(3, 5)).tolist()
    for include_self in [True, False]:
        grads_match(lambda L: grads_of(L, xs, ss, idx, 0, reduce, include_self), rtol=1e-13,
                    atol=1e-15, prefix=f"include_self={include_self}: ")


def second_order(L, reduce, xs, ss, idx):
    x = L.tensor(xs, dtype=L.float64, requires_grad=True)
    s = L.tensor(ss, dtype=L.float64, requires_grad=True)
    y = x.scatter_reduce(0, L.tensor(idx), s, reduce)
    gx, gs = L.autograd.grad((y * y).sum(), (x, s), create_graph=True)
    hx, hs = L.autograd.grad((gx * gx).sum() + gs.sum(), (x, s))
    return hx.tolist(), hs.tolist()


@pytest.mark.parametrize("reduce", REDUCES)
def test_double_backward_matches_torch(reduce):
    xs, ss, idx = [0.0, 2.0, 3.0], [4.0, 0.0, 2.0, 3.0], [0, 1, 1, 0]
    golden.assert_same_results(
        lambda L: golden.named([np.array(v) for v in second_order(L, reduce, xs, ss, idx)]),
        rtol=1e-13, atol=0)


DOUBLE_ZERO_MSG = ("scatter_reduce(): Double backward is unsupported for src when >1 zeros in "
                   "src are scattered to the same position in self")


@pytest.mark.parametrize("L", [ptl, pytest.param(torch, marks=pytest.mark.torch_ref)],
                         ids=["pytorchlite", "torch"])
def test_prod_double_backward_refused_for_several_zeros(L):
    x = L.tensor([1.0, 2.0, 3.0], dtype=L.float64, requires_grad=True)
    s = L.tensor([0.0, 0.0, 2.0, 5.0], dtype=L.float64, requires_grad=True)
    y = x.scatter_reduce(0, L.tensor([0, 0, 1, 2]), s, "prod")
    gs, = L.autograd.grad(y.sum(), s, create_graph=True)
    assert type(gs.grad_fn).__name__ == "Error"
    assert gs.tolist() == [0.0, 0.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match=re.escape(DOUBLE_ZERO_MSG)):
        gs.sum().backward()
    # first order alone, and self's double backward, are fine
    gx, = L.autograd.grad(y.sum(), x, create_graph=True)
    gx.sum().backward()
    assert L.autograd.grad(y.sum(), s)[0].tolist() == [0.0, 0.0, 2.0, 3.0]


# ---- one input requiring grad, saved attributes, no leaks ----

@pytest.mark.parametrize("reduce", REDUCES)
def test_one_input_requires_grad(reduce):
    def run(L):
        res = {}
        for which in [0, 1]:
            x, s = leaf((3, 4), L=L), leaf((2, 4), seed=1, L=L)
            (x if which else s).requires_grad_(False)
            y = x.scatter_reduce(0, L.tensor(IDX0.tolist()), s, reduce, include_self=False)
            res[["grad of self", "grad of src"][which]] = np.array(
                L.autograd.grad(y.sum(), [x, s][which])[0].tolist())
        return res
    golden.assert_same_results(run, rtol=1e-13, atol=1e-15)


def test_saved_attributes_match_torch():
    for L in golden.LIBRARIES:
        y = leaf((3, 4), L=L).scatter_reduce(1, L.tensor(IDX1.tolist()), leaf((3, 3), L=L),
                                             "amin", include_self=False)
        assert y.grad_fn._saved_reduce == "amin"
        assert y.grad_fn._saved_include_self is False
        assert y.grad_fn._saved_dim == 1


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
@pytest.mark.parametrize("row", sorted(LEGACY_ROWS))
def test_legacy_reduce_refuses_backward(row):
    fn, name = LEGACY_ROWS[row]
    for L in golden.LIBRARIES:
        y = fn(L, leaf((3, 4), L=L), leaf((2, 4), seed=1, L=L))
        assert type(y.grad_fn).__name__ == "NotImplemented"
        with pytest.raises(RuntimeError, match=re.escape(f"derivative for {name} is not "
                                                         "implemented")):
            y.sum().backward()


def test_no_leaks_including_error_paths():
    def run():
        for reduce in REDUCES:
            x, s = leaf((3, 4)), leaf((2, 4), seed=1)
            y = x.scatter_reduce(0, IDX0, s, reduce, include_self=reduce != "sum")
            gx, gs = ptl.autograd.grad((y * y).sum(), (x, s), create_graph=True)
            (gx.sum() + gs.sum()).backward()
        x = leaf((3,))
        s = ptl.tensor([0.0, 0.0, 2.0, 5.0], dtype=ptl.float64, requires_grad=True)
        gs, = ptl.autograd.grad(x.scatter_reduce(0, ptl.tensor([0, 0, 1, 2]), s, "prod").sum(),
                                s, create_graph=True)
        with pytest.raises(RuntimeError):
            gs.sum().backward()
        with pytest.raises(RuntimeError):
            leaf((3, 4)).scatter(0, IDX0, 1.0, reduce="add").sum().backward()

    assert_no_leak(run, 5)
