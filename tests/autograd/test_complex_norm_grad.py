"""Gradients of the norms and moments of complex tensors (src/aten/native/complex_norm.c;
their derivative rows in derivatives/reduce.c with sgn(z) = z / |z| for sign, Note
[Complex autograd]): gradcheck in complex128 for linalg.vector_norm (every ord, dims,
keepdim, dtype), Tensor.norm, matrix_norm, dist, normalize, var / std / var_mean /
std_mean; the gradient of a norm at 0 against PyTorch's."""
import math

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck

from helpers import torch, torch_ref


def _c(shape, seed, requires_grad=True):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return ptl.tensor(a, requires_grad=requires_grad)


def _check(f, *xs):
    assert gradcheck(f, xs, eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("ord", [2, 1, math.inf, -math.inf, 3, 0.5, -1, 2.5])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), ((0, 2), True)])
def test_vector_norm_grad(ord, dim, keepdim):
    x = _c((2, 3, 4), 1)
    _check(lambda t: ptl.linalg.vector_norm(t, ord, dim, keepdim), x)


def test_vector_norm_zero_ord_and_dtype_grad():
    x = _c((3, 4), 2)
    _check(lambda t: ptl.linalg.vector_norm(t, 0, 1), x)
    x64 = ptl.tensor(np.random.default_rng(3).standard_normal((3, 2)).astype(np.complex64),
                     requires_grad=True)
    y = ptl.linalg.vector_norm(x64, dtype=ptl.complex128)
    y.backward()
    z = x64.detach().numpy().astype(np.complex128)
    np.testing.assert_allclose(x64.grad.numpy(), z / np.linalg.norm(z), rtol=1e-6)
    assert x64.grad.dtype == ptl.complex64


@pytest.mark.parametrize("p", [2, 1, 3, math.inf])
def test_tensor_norm_and_dist_grad(p):
    x, y = _c((3, 4), 4), _c((4,), 5)
    _check(lambda t: t.norm(p), x)
    _check(lambda t: t.norm(p, [0], True), x)
    _check(lambda a, b: ptl.dist(a, b, p), x, y)
    _check(lambda t: ptl.nn.functional.normalize(t, p, dim=1), x)


@pytest.mark.parametrize("ord", ["fro", "nuc", 2, 1, -1, math.inf])
def test_matrix_norm_grad(ord):
    x = _c((2, 3, 4), 6)
    _check(lambda t: ptl.linalg.matrix_norm(t, ord), x)


@pytest.mark.parametrize("fn", ["var", "std", "var_mean", "std_mean"])
@pytest.mark.parametrize("dim,correction,keepdim", [(None, 1, False), (1, 0, True),
                                                    ((0, 2), 2.5, False)])
def test_moments_grad(fn, dim, correction, keepdim):
    x = _c((3, 4, 5), 7)
    f = getattr(ptl, fn)
    _check(lambda t: f(t, dim, correction=correction, keepdim=keepdim), x)
    if dim is None:
        _check(lambda t: f(t, bool(correction)), x)


@torch_ref
@pytest.mark.parametrize("ord", [2, 1, math.inf, 3, 0.5])
def test_norm_grad_at_zero_matches_torch(ord):
    z = np.array([[0, 0, 0], [1 + 2j, 0, -3j]])
    grads = []
    for lib in (torch, ptl):
        t = lib.tensor(z, dtype=lib.complex128, requires_grad=True)
        lib.linalg.vector_norm(t, ord, 1).sum().backward()
        grads.append(t.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12, atol=0)


@pytest.mark.parametrize("p", [2, 1, 3, 1.5, 0.5, math.inf])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_renorm_grad(p, dim):
    """renorm's factor comes from a real norm of complex slices: its share of the gradient
    takes real(conj(x) g) (derivatives/linalg_norm.c).  Rows of norm 0.6 to 3 straddle the
    maxnorm of 1.5."""
    x = _c((3, 4), 7)
    _check(lambda t: ptl.renorm(t, p, dim, 1.5), x)
    _check(lambda t: ptl.renorm(t, p, dim, 1.5), _c((2, 3, 2), 8))


@torch_ref
@pytest.mark.parametrize("p", [2, 1, 3, math.inf])
def test_renorm_grad_matches_torch(p):
    rng = np.random.default_rng(9)
    a = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    g = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    for dim in (0, 1):
        x = ptl.tensor(a, requires_grad=True)
        ptl.renorm(x, p, dim, 1.0).backward(ptl.tensor(g))
        tx = torch.tensor(a, requires_grad=True)
        torch.renorm(tx, p, dim, 1.0).backward(torch.tensor(g))
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.resolve_conj().numpy(), rtol=1e-12,
                                   atol=1e-14)
