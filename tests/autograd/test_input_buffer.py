"""The engine's input buffers: when several gradients reach one input of a node, their sum
is added into the buffer's own tensor when nothing else holds it and backward does not
record a graph (PyTorch's InputBuffer::accumulate), and into a new tensor otherwise, so a
gradient a hook, a Function or the caller kept is never changed afterwards."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import torch, torch_ref

LIBS = ["ptl", pytest.param("torch", marks=torch_ref)]


def branches(m, x, w):
    """y = x @ w feeds two branches, so y's node receives the sum of two gradients."""
    y = x @ w
    return (y.tanh() + y * y).sum()


def expected_grads(xv, wv):
    y = xv @ wv
    dy = 1 - np.tanh(y) ** 2 + 2 * y
    return dy @ wv.T, xv.T @ dy


def leaves(m, seed=0, shape=(5, 4, 3)):
    rng = np.random.default_rng(seed)
    xv, wv = rng.uniform(-1, 1, shape[:2]), rng.uniform(-1, 1, shape[1:])
    x = m.tensor(xv, dtype=m.float64, requires_grad=True)
    w = m.tensor(wv, dtype=m.float64, requires_grad=True)
    return x, w, xv, wv


def op_names(prof):
    return [e.key for e in prof.key_averages()]


@pytest.mark.parametrize("shape", [(5, 4, 3), (1, 1, 1), (0, 3, 2), (64, 128, 33)])
def test_a_sum_of_gradients_is_added_in_place(shape):
    x, w, xv, wv = leaves(ptl, shape=shape)
    with ptl.profiler.profile() as prof:
        branches(ptl, x, w).backward()
    gx, gw = expected_grads(xv, wv)
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), gw, rtol=1e-12, atol=1e-12)
    names = op_names(prof)
    assert "aten::add_" in names
    assert names.count("aten::add") == 1, names    # the forward's tanh + y * y only


def test_create_graph_adds_out_of_place_and_differentiates_the_sum():
    x, w, xv, wv = leaves(ptl)
    with ptl.profiler.profile() as prof:
        (gx,) = ptl.autograd.grad(branches(ptl, x, w), x, create_graph=True)
    assert "aten::add_" not in op_names(prof)
    np.testing.assert_allclose(gx.detach().numpy(), expected_grads(xv, wv)[0], rtol=1e-12)
    gx.sum().backward()
    # d/dx of sum((1 - tanh(y)^2 + 2y) @ w^T), y = x @ w
    y = xv @ wv
    t = np.tanh(y)
    d2 = (-2 * t * (1 - t ** 2) + 2) * wv.sum(axis=0)
    np.testing.assert_allclose(x.grad.numpy(), d2 @ wv.T, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("lib", LIBS)
def test_a_gradient_a_function_kept_is_not_changed_by_the_sum(lib):
    m = ptl if lib == "ptl" else torch
    kept = []

    class Keep(m.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1

        @staticmethod
        def backward(ctx, g):
            r = g * 3
            kept.append(r)
            return r

    x = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
    y = x * 2
    # Keep's backward runs first (it is the later branch) and hands y's node the tensor it
    # kept; the second branch's gradient is then summed with it
    (y.exp().sum() + Keep.apply(y).sum()).backward()
    np.testing.assert_array_equal(kept[0].numpy(), [3.0, 3.0])
    np.testing.assert_allclose(x.grad.numpy(), 2 * (np.exp([2.0, 4.0]) + 3), rtol=1e-12)


@pytest.mark.parametrize("lib", LIBS)
def test_a_gradient_a_hook_kept_is_not_changed_by_the_sum(lib):
    m = ptl if lib == "ptl" else torch
    kept = []
    x = m.tensor([1.0, -1.0], dtype=m.float64, requires_grad=True)
    y = x * 2
    a = y.sin()
    a.register_hook(lambda g: kept.append(g))
    (a.sum() * 5 + (y * y).sum()).backward()
    np.testing.assert_array_equal(kept[0].numpy(), [5.0, 5.0])
    yv = 2 * np.array([1.0, -1.0])
    np.testing.assert_allclose(x.grad.numpy(), 2 * (5 * np.cos(yv) + 2 * yv), rtol=1e-12)


def test_the_same_gradient_reaching_one_input_twice_is_doubled():
    # add's backward hands one tensor to both of its inputs, which are the same node here
    x = ptl.tensor([1.0, 2.0, 3.0], dtype=ptl.float64, requires_grad=True)
    y = x * 1
    (y + y).exp().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(2 * np.array([1.0, 2.0, 3.0])),
                               rtol=1e-12)


def test_a_transposed_gradient_is_summed_with_a_contiguous_one():
    # t()'s backward hands y's node a transposed view; whichever of the two gradients comes
    # first, the sum must be the plain elementwise one
    x = ptl.tensor(np.arange(6.0).reshape(2, 3), dtype=ptl.float64, requires_grad=True)
    y = x * 1
    c = ptl.arange(6.0, dtype=ptl.float64).reshape(3, 2)
    ((y.t() * c).sum() + (y * y).sum()).backward()
    g = np.arange(6.0).reshape(3, 2).T + 2 * np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(x.grad.numpy(), g, rtol=1e-12)


@pytest.mark.parametrize("lib", LIBS)
def test_residual_mlp_gradients_match(lib):
    m = ptl if lib == "ptl" else torch
    rng = np.random.default_rng(3)
    xv, w1v, w2v = rng.normal(size=(8, 16)), rng.normal(size=(16, 16)), rng.normal(size=(16, 16))
    x = m.tensor(xv, dtype=m.float64)
    w1 = m.tensor(w1v, dtype=m.float64, requires_grad=True)
    w2 = m.tensor(w2v, dtype=m.float64, requires_grad=True)
    h = x + (x @ w1).relu()
    out = h + (h @ w2).tanh()
    (out * out).sum().backward()
    # NumPy float64 by hand
    a1 = xv @ w1v
    hv = xv + np.maximum(a1, 0)
    a2 = hv @ w2v
    ov = hv + np.tanh(a2)
    go = 2 * ov
    ga2 = go * (1 - np.tanh(a2) ** 2)
    gw2 = hv.T @ ga2
    gh = go + ga2 @ w2v.T
    gw1 = xv.T @ (gh * (a1 > 0))
    np.testing.assert_allclose(w2.grad.numpy(), gw2, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(w1.grad.numpy(), gw1, rtol=1e-11, atol=1e-11)
