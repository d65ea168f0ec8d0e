"""Note [Matrix product gradient layout]: mm, addmm and matmul of two matrices give a
column-major (transposed contiguous) input a column-major gradient, computed as the transpose
of a row-major product; any other input gets the plain product.  Values against NumPy in
float64, derivatives by gradcheck/gradgradcheck on every layout pair, strides against PyTorch."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import torch, torch_ref
from pytorchlite.autograd import gradcheck, gradgradcheck

LAYOUTS = ["contiguous", "transposed", "strided"]


def matrix(m, shape, layout, seed, requires_grad=True):
    g = np.random.default_rng(seed)
    if layout == "contiguous":
        t = m.tensor(g.standard_normal(shape))
    elif layout == "transposed":
        t = m.tensor(g.standard_normal(shape[::-1])).t()
    else:
        t = m.tensor(g.standard_normal((shape[0], 2 * shape[1])))[:, ::2]
    return t.detach().requires_grad_(requires_grad)


def products(m):
    return {"mm": lambda a, b: m.mm(a, b),
            "matmul": lambda a, b: a @ b,
            "addmm": lambda a, b: m.addmm(m.ones(b.shape[1], dtype=a.dtype), a, b,
                                          beta=0.5, alpha=2.0)}


def expected(name, a, b, g):
    """(grad a, grad b) in float64 NumPy"""
    scale = 2.0 if name == "addmm" else 1.0
    return scale * g @ b.T, scale * a.T @ g


@pytest.mark.parametrize("name", ["mm", "matmul", "addmm"])
@pytest.mark.parametrize("la", LAYOUTS)
@pytest.mark.parametrize("lb", LAYOUTS)
@pytest.mark.parametrize("shape", [(5, 4, 3), (1, 4, 3), (5, 1, 3), (5, 4, 1), (0, 4, 3),
                                   (5, 0, 3)])
def test_values_and_layout(name, la, lb, shape):
    n, k, p = shape
    a, b = matrix(ptl, (n, k), la, 0), matrix(ptl, (k, p), lb, 1)
    g = np.random.default_rng(2).standard_normal((n, p))
    products(ptl)[name](a, b).backward(ptl.tensor(g))
    ga, gb = expected(name, a.detach().numpy(), b.detach().numpy(), g)
    np.testing.assert_allclose(a.grad.numpy(), ga, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), gb, rtol=1e-12, atol=1e-12)
    for x in (a, b):
        if la == "transposed" and x is a or lb == "transposed" and x is b:
            if min(x.shape) > 1:
                assert x.grad.stride() == x.stride()


@pytest.mark.parametrize("name", ["mm", "matmul", "addmm"])
@pytest.mark.parametrize("la", LAYOUTS)
@pytest.mark.parametrize("lb", LAYOUTS)
def test_gradcheck(name, la, lb):
    a, b = matrix(ptl, (4, 3), la, 0), matrix(ptl, (3, 2), lb, 1)
    fn = products(ptl)[name]
    assert gradcheck(fn, (a, b))
    assert gradgradcheck(fn, (a, b))


@torch_ref
@pytest.mark.parametrize("name", ["mm", "matmul", "addmm"])
@pytest.mark.parametrize("la", LAYOUTS)
@pytest.mark.parametrize("lb", LAYOUTS)
def test_hook_strides_match_torch(name, la, lb):
    """the gradient the product hands to each leaf (seen by a hook, before AccumulateGrad
    lays it out) has PyTorch's strides"""
    def strides(m):
        a, b = matrix(m, (5, 4), la, 0), matrix(m, (4, 3), lb, 1)
        seen = {}
        a.register_hook(lambda g: seen.__setitem__("a", g.stride()))
        b.register_hook(lambda g: seen.__setitem__("b", g.stride()))
        products(m)[name](a, b).sum().backward()
        return seen
    assert strides(ptl) == strides(torch)

