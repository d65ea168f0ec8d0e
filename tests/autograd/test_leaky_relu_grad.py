"""In-place leaky_relu saves its result, not a copy of its input, as PyTorch does
(LeakyReluBackward1 with leaky_relu_backward(..., self_is_result=True)).  That no copy is
kept is checked with the elu family in test_activation_grad.py."""
import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck, gradgradcheck
from helpers import assert_raises_like_torch, torch

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch as the reference")
# ties at exactly 0, values on both sides; transposed below (non-contiguous)
VALUES = [[-2.0, -0.7, 0.0, 3.0], [0.0, 0.4, 1.5, -1e-4]]
SLOPES = [0.01, 0.0, 0.3, 1.5]
MSG = ("In-place leakyReLu backward calculation is triggered with a negative slope which is "
       "not supported.")


def inplace(m, x, slope):
    return m.nn.functional.leaky_relu(x.clone(), slope, inplace=True)


def grads(m, slope):
    x = m.tensor(VALUES, dtype=m.float64).t().requires_grad_(True)
    y = inplace(m, x, slope)
    g, = m.autograd.grad((y * y).sum(), x, create_graph=True)
    gg, = m.autograd.grad((g * g * x).sum(), x)
    return y, g, gg


@needs_torch
@pytest.mark.parametrize("slope", SLOPES)
def test_first_and_second_derivatives_match_torch(slope):
    for a, b in zip(grads(ptl, slope), grads(torch, slope)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12,
                                   atol=1e-12)


@needs_torch
def test_node_saves_the_result():
    for m in (torch, ptl):
        x = m.tensor([-1.0, 0.0, 2.0], dtype=m.float64, requires_grad=True)
        y = inplace(m, x, 0.2)
        assert y.grad_fn.name() == "LeakyReluBackward1"
        r = y.grad_fn._saved_result
        assert r.data_ptr() == y.data_ptr() and r.tolist() == y.tolist()


@pytest.mark.parametrize("slope", SLOPES)
def test_gradcheck_and_gradgradcheck(slope):
    x = ptl.tensor(np.random.default_rng(0).standard_normal((3, 4)), dtype=ptl.float64)
    x = x.t().requires_grad_(True)
    assert gradcheck(lambda a: inplace(ptl, a, slope), (x,))
    assert gradgradcheck(lambda a: inplace(ptl, a, slope), (x,))


def test_negative_slope_raises_at_backward():
    def run(m):
        x = m.tensor([-1.0, 2.0], dtype=m.float64, requires_grad=True)
        inplace(m, x, -0.1).sum().backward()
    assert_raises_like_torch(run, RuntimeError, MSG)


def test_backward_op_refuses_a_negative_slope_on_the_result():
    def run(m):
        t = m.ones(3)
        m.ops.aten.leaky_relu_backward(t, t, -0.1, True)
    assert_raises_like_torch(run, RuntimeError, MSG)


def test_backward_op_from_result_matches_numpy():
    y = np.array([-0.3, 0.0, 2.0, -0.0, 5.0])
    g = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    got = ptl.ops.aten.leaky_relu_backward(ptl.tensor(g), ptl.tensor(y), 0.1, True)
    np.testing.assert_array_equal(got.numpy(), np.where(y > 0, g, 0.1 * g))

