"""logcumsumexp of complex64/complex128 tensors (src/aten/native/complex_scan.c, Note [Complex
logcumsumexp]): values against NumPy's complex128 (the same recurrence, and e^result against
the cumulative sum of e^x) on random shapes and layouts, across the kernel's task split on 1
and 2 threads, PyTorch 2.13's special values (-inf, +inf, NaN in either part), the gradient
(gradcheck and torch's vector-Jacobian product) and the errors."""
import itertools
import math

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import assert_raises_like_torch, crandn, num_threads, torch, torch_ref

C64, C128 = ptl.complex64, ptl.complex128
SHAPES_DIMS = [((), 0), ((), -1), ((0,), 0), ((5,), 0), ((3, 4), 0), ((3, 4), 1),
               ((0, 3), 1), ((2, 1, 3), 1), ((2, 3, 4), -1), ((4, 0, 2), 2)]
LAYOUTS = ["contiguous", "transposed", "sliced", "expanded"]
CHUNK, SCAN_GRAIN = 256, 4096   # complex_scan.c's task geometry


def np_logcumsumexp(a, axis):
    """The kernel's recurrence in complex128: max + log1p(e^(min - max)), min and max by real
    part, from -inf + 0j (finite inputs)."""
    a = np.moveaxis(np.asarray(a, dtype=np.complex128), axis, -1)
    out = np.empty_like(a)
    acc = np.full(a.shape[:-1], complex(-math.inf, 0.0))
    with np.errstate(invalid="ignore"):
        for j in range(a.shape[-1]):
            x = a[..., j]
            first = x.real < acc.real
            lo, hi = np.where(first, x, acc), np.where(first, acc, x)
            acc = hi + np.log1p(np.exp(lo - hi))
            out[..., j] = acc
    return np.moveaxis(out, -1, axis)


def check(got, a, dim, dtype):
    want = np_logcumsumexp(a, dim if a.ndim else 0) if a.ndim else a
    tol = 2e-6 if dtype == C64 else 1e-13
    assert got.dtype == dtype and tuple(got.shape) == a.shape
    g = got.numpy().astype(np.complex128)
    np.testing.assert_allclose(g, want, rtol=tol, atol=tol)
    if a.size and a.ndim:   # the definition: e^result is the cumulative sum of e^x
        np.testing.assert_allclose(np.exp(g), np.cumsum(np.exp(a), axis=dim), rtol=10 * tol)


@pytest.mark.parametrize("dtype", [C64, C128], ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_values_match_numpy(dtype, layout):
    for k, (shape, dim) in enumerate(SHAPES_DIMS):
        x, a = crandn(shape, dtype, layout, seed=k)
        check(ptl.logcumsumexp(x, dim), a, dim, dtype)
        check(x.logcumsumexp(dim), a, dim, dtype)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape,dim", [
    # inner 1: tasks of len elements, grain SCAN_GRAIN / len tasks, split from 2 grains
    ((2 * (SCAN_GRAIN // 8) - 1, 8), 1), ((2 * (SCAN_GRAIN // 8), 8), 1),
    ((2 * (SCAN_GRAIN // 8) + 1, 8), 1),
    # one task per block at SCAN_GRAIN elements and above
    ((2, SCAN_GRAIN - 1), 1), ((2, SCAN_GRAIN), 1), ((3, SCAN_GRAIN + 1), 1),
    # inner dims across the CHUNK columns of a task
    ((3, 5, CHUNK - 1), 1), ((3, 5, CHUNK), 1), ((2, 7, CHUNK + 1), 1), ((9, 2 * CHUNK + 3), 0)])
def test_across_the_task_split(shape, dim, threads):
    x, a = crandn(shape, C128, seed=sum(shape))
    with num_threads(threads):
        got = ptl.logcumsumexp(x, dim)
    check(got, a, dim, C128)
    with num_threads(3 - threads):   # the split does not change a bit of the result
        other = ptl.logcumsumexp(x, dim)
    assert np.array_equal(got.numpy(), other.numpy())


def test_large_and_small_real_parts_stay_finite():
    a = np.array([[800 + 1j, 799 - 2j, -800 + 0.5j], [-800 + 0j, -801 + 3j, -1e308 + 0j]])
    got = ptl.logcumsumexp(ptl.tensor(a), 1).numpy()
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, np_logcumsumexp(a, 1), rtol=1e-14)


@torch_ref
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_special_values_match_torch(dtype):
    """Every pair (and random runs of four) of real parts in {-inf, inf, nan, finite} and
    imaginary parts in {0, -0, finite, inf, -inf, nan}."""
    parts_re = [-math.inf, math.inf, math.nan, 0.0, 1.5, -2.0, 800.0, -800.0]
    parts_im = [0.0, -0.0, 1.0, -3.0, math.inf, -math.inf, math.nan, 20.0]
    values = [complex(r, i) for r in parts_re for i in parts_im]
    rng = np.random.default_rng(0)
    for a in (np.array(list(itertools.product(values, repeat=2))),
              np.array(values)[rng.integers(0, len(values), (2000, 4))]):
        ours = ptl.logcumsumexp(ptl.tensor(a, dtype=getattr(ptl, dtype)), 1).numpy()
        theirs = torch.logcumsumexp(torch.tensor(a, dtype=getattr(torch, dtype)), 1).numpy()
        tol = 1e-5 if dtype == "complex64" else 1e-12
        for part in (np.real, np.imag):
            np.testing.assert_allclose(part(ours), part(theirs), rtol=tol, atol=1e-6)


def test_gradcheck():
    for shape, dim in [((3, 4), 1), ((3, 4), 0), ((2, 3, 2), 1), ((4,), 0)]:
        x, _ = crandn(shape, C128, seed=3)
        x.requires_grad_(True)
        assert ptl.autograd.gradcheck(lambda t: ptl.logcumsumexp(t, dim), (x,))
        assert ptl.autograd.gradgradcheck(lambda t: ptl.logcumsumexp(t, dim), (x,))


@torch_ref
def test_gradient_matches_torch():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 5)) + 1j * rng.standard_normal((3, 5))
    g = rng.standard_normal((3, 5)) + 1j * rng.standard_normal((3, 5))
    g[0, 2] = 0   # log(conj(g)) is -inf there
    for dim in (0, 1):
        x = ptl.tensor(a, requires_grad=True)
        ptl.logcumsumexp(x, dim).backward(ptl.tensor(g))
        tx = torch.tensor(a, requires_grad=True)
        torch.logcumsumexp(tx, dim).backward(torch.tensor(g))
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.resolve_conj().numpy(), rtol=1e-12,
                                   atol=1e-14)


def test_errors():
    x = ptl.ones(2, 3, dtype=C64)
    assert_raises_like_torch(lambda lib: lib.logcumsumexp(lib.ones(2, 3, dtype=lib.complex64), 2),
                             IndexError, "Dimension out of range (expected to be in range of "
                             "[-2, 1], but got 2)")
    assert x.logcumsumexp(-1).dtype == C64
