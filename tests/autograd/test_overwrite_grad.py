"""In-place writes that overwrite every element of self (copy_, fill_, zero_): the old value
gets a zero gradient (derivatives.yaml's zeros_like(grad)), not none, and the source gets
the gradient (src/autograd/derivatives/copy.c).  Expected gradients are written out; the
installed torch is a second reference."""
import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck, gradgradcheck

from helpers import torch, torch_ref

W = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]])

# name -> (write on a = 2 * leaf, with value b (0-dim) and y ([3]), and the expected
# gradients of sum(W * a) with respect to leaf, b, y; None where none is expected)
CASES = {
    "copy_": (lambda L, a, b, y: a.copy_(y), np.zeros((2, 3)), None, W.sum(0)),
    "copy_-detached-source": (lambda L, a, b, y: a.copy_(y.detach()), np.zeros((2, 3)), None,
                              None),
    "copy_-other-dtype": (lambda L, a, b, y: a.copy_(y.float()), np.zeros((2, 3)), None,
                          W.sum(0)),
    "copy_-0-dim": (lambda L, a, b, y: a.copy_(b), np.zeros((2, 3)), W.sum(), None),
    "fill_-number": (lambda L, a, b, y: a.fill_(3.0), np.zeros((2, 3)), None, None),
    "fill_-tensor": (lambda L, a, b, y: a.fill_(b), np.zeros((2, 3)), W.sum(), None),
    "fill_-detached-tensor": (lambda L, a, b, y: a.fill_(b.detach()), np.zeros((2, 3)), None,
                              None),
    "zero_": (lambda L, a, b, y: a.zero_(), np.zeros((2, 3)), None, None),
    "zero_-row-view": (lambda L, a, b, y: (a[0].zero_(), a)[1],
                       np.stack([np.zeros(3), 2 * W[1]]), None, None),
    "copy_-row-view": (lambda L, a, b, y: (a[1].copy_(y), a)[1],
                       np.stack([2 * W[0], np.zeros(3)]), None, W[1]),
}


def _run(L, write):
    leaf = L.ones(2, 3, dtype=L.float64, requires_grad=True)
    b = L.tensor(2.5, dtype=L.float64, requires_grad=True)
    y = L.tensor([1.0, 2.0, 3.0], dtype=L.float64, requires_grad=True)
    a = 2 * leaf
    out = write(L, a, b, y)
    (out * L.tensor(W)).sum().backward()
    return [None if t.grad is None else t.grad.numpy() for t in (leaf, b, y)]


@pytest.mark.parametrize("name", list(CASES))
def test_overwritten_value_gets_zeros(name):
    write, *expected = CASES[name]
    for got, want in zip(_run(ptl, write), expected):
        if want is None:
            assert got is None
        else:
            np.testing.assert_allclose(got, want, rtol=1e-6)


def test_leaf_grad_is_zeros_not_none_through_clone():
    """The case of the report: a = leaf.clone(); a.copy_(y) left leaf.grad None."""
    leaf = ptl.ones(3, requires_grad=True)
    a = leaf.clone()
    a.copy_(ptl.tensor([4.0, 5.0, 6.0]))
    a.sum().backward()
    assert leaf.grad is not None and leaf.grad.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("name", ["copy_", "fill_-tensor", "copy_-0-dim"])
def test_gradcheck_and_gradgradcheck(name):
    write = CASES[name][0]
    leaf = ptl.tensor(W, requires_grad=True)
    b = ptl.tensor(2.5, dtype=ptl.float64, requires_grad=True)
    y = ptl.tensor([1.0, 2.0, 3.0], dtype=ptl.float64, requires_grad=True)

    def f(leaf, b, y):
        return write(ptl, leaf * 2, b, y) * leaf
    assert gradcheck(f, (leaf, b, y))
    assert gradgradcheck(f, (leaf, b, y))


@torch_ref
@pytest.mark.parametrize("name", list(CASES))
def test_overwritten_value_grads_match_torch(name):
    write = CASES[name][0]
    for got, want in zip(_run(ptl, write), _run(torch, write)):
        assert (got is None) == (want is None)
        if got is not None:
            np.testing.assert_allclose(got, want, rtol=1e-6)
