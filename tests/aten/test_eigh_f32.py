"""float32 eigh and eigvalsh computed in float32 (Note [Float64 linear algebra] in
linalg_solve.c, Note [Symmetric eigensolver] in linalg_decomp.c, Note [Tridiagonal divide and
conquer] in linalg_eigh_dc.c): the tridiagonal reduction, the divide and conquer (its leaves'
QL), and the back-transform run in float, as LAPACK's ssyevd does for PyTorch; eigvalsh's
eigenvalues come from the root-free QL on the float tridiagonal, in double.  Checked against
NumPy in float64 on the same float32 values: the eigenvalues within a few float32 eps |A|
(a small multiple of sqrt(n)), the residual |A V - V diag(w)| and the orthogonality |V^T V -
I| within n eps.  Every size at and across the thresholds of the float code (the reduction's
panels of 16 steps, the leaves of 32 rows, the tiles of 16 and the 16-float vectors, the QR
blocks of 32 of the back-transform), deflation-heavy spectra, diagonal matrices, 0x0 and 1x1,
batched and non-contiguous inputs, both triangles, on one and two threads; the float32
backward against the float64 one."""
import numpy as np
import pytest

import pytorchlite as ptl

from helpers import num_threads, rerun_with_capability

EPS = float(np.finfo(np.float32).eps)
# 0 to 70 covers the panels of 16 (n - 2 steps), the leaf of 32 and the first merges; then
# the panel, tile and QR-block edges higher up, and two merge levels more
SIZES = list(range(0, 71)) + [95, 96, 97, 127, 128, 129, 130, 200, 256, 257]


def _values_tol(n):
    """A few float32 eps |A|: PyTorch's ssyevd/ssterf are within 2 to 17 on these inputs."""
    return (4 * np.sqrt(n) + 8) * EPS


def _check_values(a64, w):
    """w ascending and NumPy's float64 eigenvalues of the same float32 numbers."""
    w = w.numpy().astype(np.float64)
    assert np.all(np.diff(w, axis=-1) >= 0)
    n = a64.shape[-1]
    if n == 0:
        assert w.shape == a64.shape[:-1]
        return
    norm = np.linalg.norm(a64, 2, axis=(-2, -1))[..., None]
    assert np.all(np.abs(w - np.linalg.eigvalsh(a64)) <= _values_tol(n) * norm)


def _check(a64, w, V, orth=2):
    """eigh's values as _check_values; residual at 2 n eps, orthogonality at orth n eps
    (normwise)."""
    assert w.dtype == ptl.float32 and V.dtype == ptl.float32
    _check_values(a64, w)
    n = a64.shape[-1]
    v = V.numpy().astype(np.float64)
    assert v.shape == a64.shape
    if n == 0:
        return
    wd = w.numpy().astype(np.float64)
    norm = np.linalg.norm(a64, 2, axis=(-2, -1))
    safe = np.where(norm > 0, norm, 1.0)
    res = np.linalg.norm(a64 @ v - v * wd[..., None, :], axis=(-2, -1))
    assert np.all(res <= 2 * n * EPS * safe)
    eye = np.broadcast_to(np.eye(n), a64.shape)
    assert np.all(np.linalg.norm(np.swapaxes(v, -1, -2) @ v - eye, axis=(-2, -1)) <=
                  orth * n * EPS)


def _f32(a):
    """a in float32, and those float32 numbers in float64 (NumPy's reference input)."""
    a32 = np.ascontiguousarray(a, dtype=np.float32)
    return a32, a32.astype(np.float64)


def _random(n, seed):
    a = np.random.default_rng(seed).standard_normal((n, n))
    return a + a.T


def _with_values(lam, seed):
    n = len(lam)
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, n)))
    a = (q * np.asarray(lam, dtype=np.float64)) @ q.T
    return (a + a.T) / 2


def _kind(kind, n):
    if kind == "random":
        return _random(n, n)
    if kind == "spd":
        b = np.random.default_rng(n + 1).standard_normal((n, n))
        return b @ b.T + n * np.eye(n)
    if kind == "two values":
        return _with_values(np.where(np.arange(n) % 2 == 0, -1.0, 3.0), n)
    if kind == "clusters":
        return _with_values(np.array([(-2.0, 1.0, 1.0 + 1e-6, 3.0)[i % 4] for i in range(n)]), n)
    if kind == "graded":
        return _with_values(np.logspace(-6, 6, n), n)
    if kind == "repeated":
        return _with_values(np.ones(n), n) + np.diag(np.zeros(n))
    if kind == "ones":
        return np.ones((n, n))
    if kind == "wilkinson":
        i = np.arange(n)
        return (np.diag(np.abs(i - (n - 1) / 2)) + np.diag(np.ones(n - 1), 1) +
                np.diag(np.ones(n - 1), -1))
    raise ValueError(kind)


@pytest.mark.parametrize("n", SIZES)
def test_eigh_and_eigvalsh_every_size(n, threads):
    a32, a64 = _f32(_random(n, n))
    w, V = ptl.linalg.eigh(ptl.tensor(a32))
    _check(a64, w, V)
    values = ptl.linalg.eigvalsh(ptl.tensor(a32))
    assert values.dtype == ptl.float32
    _check_values(a64, values)


KINDS = ["spd", "two values", "clusters", "graded", "repeated", "ones", "wilkinson"]


@pytest.mark.parametrize("n", [5, 32, 33, 64, 65, 129, 200])
@pytest.mark.parametrize("kind", KINDS)
def test_deflating_spectra(n, kind):
    a32, a64 = _f32(_kind(kind, n))
    w, V = ptl.linalg.eigh(ptl.tensor(a32))
    # ones(n, n): its reflections after the first are made from rounding noise, and our Q's
    # orthogonality there is 2 to 8 n eps where PyTorch's is 0.5, and its eigenvalues are off
    # by up to 34 eps |A| at n <= 200: float64 eigh has both too (the shared code's)
    _check(a64, w, V, orth=10 if kind == "ones" else 2)
    _check_values(a64, ptl.linalg.eigvalsh(ptl.tensor(a32)))


@pytest.mark.parametrize("n", [1, 7, 33, 100])
def test_diagonal_exact(n):
    # a diagonal matrix is its own tridiagonal: the values exactly, the vectors unit columns
    d = np.random.default_rng(n).integers(-4, 5, n).astype(np.float32) / 4
    w, V = ptl.linalg.eigh(ptl.tensor(np.diag(d)))
    np.testing.assert_array_equal(w.numpy(), np.sort(d))
    np.testing.assert_array_equal(np.abs(V.numpy()).sum(axis=0), np.ones(n, np.float32))
    np.testing.assert_array_equal(ptl.linalg.eigvalsh(ptl.tensor(np.diag(d))).numpy(),
                                  np.sort(d))
    z = ptl.zeros((n, n), dtype=ptl.float32)
    np.testing.assert_array_equal(ptl.linalg.eigvalsh(z).numpy(), np.zeros(n, np.float32))


def test_empty_and_one_by_one():
    for shape in [(0, 0), (3, 0, 0), (0, 4, 4), (2, 0, 1, 1)]:
        a = ptl.zeros(shape, dtype=ptl.float32)
        w, V = ptl.linalg.eigh(a)
        assert tuple(w.shape) == shape[:-1] and tuple(V.shape) == shape
        assert w.dtype == ptl.float32 and V.dtype == ptl.float32
        assert tuple(ptl.linalg.eigvalsh(a).shape) == shape[:-1]
    w, V = ptl.linalg.eigh(ptl.tensor(np.array([[-2.5]], np.float32)))
    assert w.numpy().tolist() == [-2.5] and V.numpy().tolist() == [[1.0]]


@pytest.mark.parametrize("n", [3, 16, 40, 100])
def test_upper_and_lower_triangles(n):
    # only the triangle UPLO names is read: the other one holds garbage
    a32, a64 = _f32(_random(n, 7 + n))
    junk = np.random.default_rng(n).standard_normal((n, n)).astype(np.float32) * 100
    lower = np.tril(a32) + np.triu(junk, 1)
    upper = np.triu(a32) + np.tril(junk, -1)
    for uplo, m in (("L", lower), ("U", upper), ("l", lower), ("u", upper)):
        w, V = ptl.linalg.eigh(ptl.tensor(m), UPLO=uplo)
        _check(a64, w, V)
        _check_values(a64, ptl.linalg.eigvalsh(ptl.tensor(m), UPLO=uplo))


def test_batched_and_non_contiguous(threads):
    g = np.random.default_rng(3)
    n = 45
    a = g.standard_normal((2, 3, n, n))
    a = a + np.swapaxes(a, -1, -2)
    a[0, 1] = _kind("clusters", n)
    a32, a64 = _f32(a)
    w, V = ptl.linalg.eigh(ptl.tensor(a32))
    _check(a64, w, V)
    _check_values(a64, ptl.linalg.eigvalsh(ptl.tensor(a32)))
    # a transposed view of every other matrix of a larger batch: the contiguous copy's bits
    big = np.concatenate([a32, a32], axis=1)
    view = ptl.tensor(big).transpose(-1, -2)[:, ::2]
    ref = np.ascontiguousarray(np.swapaxes(big, -1, -2)[:, ::2])
    w2, V2 = ptl.linalg.eigh(view)
    w3, V3 = ptl.linalg.eigh(ptl.tensor(ref))
    np.testing.assert_array_equal(w2.numpy(), w3.numpy())
    np.testing.assert_array_equal(V2.numpy(), V3.numpy())
    # (eigvalsh of a view may take eigh's route: a view carries autograd metadata)
    _check_values(ref.astype(np.float64), ptl.linalg.eigvalsh(view))
    # a strided slice of a larger matrix
    wide = ptl.tensor(_f32(_random(2 * n, 9))[0])[::2, ::2]
    _check(wide.numpy().astype(np.float64), *ptl.linalg.eigh(wide))


@pytest.mark.parametrize("n", [33, 64, 256])
def test_one_and_two_threads_bit_identical(n):
    a = np.stack([_random(n, 1), _kind("two values", n), _kind("graded", n)]).astype(np.float32)
    out = []
    for t in (1, 2):
        with num_threads(t):
            out.append([x.numpy() for x in ptl.linalg.eigh(ptl.tensor(a))] +
                       [ptl.linalg.eigvalsh(ptl.tensor(a)).numpy()] +
                       [x.numpy() for x in ptl.linalg.eigh(ptl.tensor(a[0]))])
    for x, y in zip(*out):
        np.testing.assert_array_equal(x, y)


def test_scales():
    # tiny and huge entries in float32's range: the root-free QL squares e in double, the
    # divide and conquer works on T scaled near 1
    base = _f32(_random(50, 4))[0]
    for scale in (1e-30, 1e-12, 1e12, 1e30):
        a32 = (base * np.float32(scale)).astype(np.float32)
        a64 = a32.astype(np.float64)
        w, V = ptl.linalg.eigh(ptl.tensor(a32))
        _check(a64, w, V)
        _check_values(a64, ptl.linalg.eigvalsh(ptl.tensor(a32)))


def test_not_finite():
    # a NaN reaches the tridiagonal: eigvalsh leaves it to the QL as eigh does
    n = 40
    a = _f32(_random(n, 5))[0]
    a[3, 4] = a[4, 3] = np.nan
    w, V = ptl.linalg.eigh(ptl.tensor(a))
    assert np.isnan(w.numpy()).any() and w.shape == (n,) and V.shape == (n, n)
    assert np.isnan(ptl.linalg.eigvalsh(ptl.tensor(a)).numpy()).any()


def _backward(dtype, a, weights):
    A = ptl.tensor(a.astype(dtype), requires_grad=True)
    w, V = ptl.linalg.eigh(A)
    # V's squares: the loss does not depend on the vectors' signs
    loss = (w * ptl.tensor(weights[0].astype(dtype))).sum() + \
        (V * V * ptl.tensor(weights[1].astype(dtype))).sum()
    loss.backward()
    B = ptl.tensor(a.astype(dtype), requires_grad=True)
    (ptl.linalg.eigvalsh(B) * ptl.tensor(weights[0].astype(dtype))).sum().backward()
    return A.grad.numpy().astype(np.float64), B.grad.numpy().astype(np.float64)


@pytest.mark.parametrize("n", [4, 40])
def test_backward_against_float64(n):
    # well separated eigenvalues (1, 2, ..., n): float32's gradients within float32 accuracy
    # of float64's
    a = _with_values(np.arange(1.0, n + 1), n)
    a = a.astype(np.float32).astype(np.float64)
    g = np.random.default_rng(n)
    weights = (g.standard_normal(n), g.standard_normal((n, n)))
    ga32, gb32 = _backward(np.float32, a, weights)
    ga64, gb64 = _backward(np.float64, a, weights)
    np.testing.assert_allclose(ga32, ga64, atol=200 * n * EPS * np.abs(ga64).max())
    np.testing.assert_allclose(gb32, gb64, atol=20 * n * EPS * np.abs(gb64).max())


@pytest.mark.parametrize("cap", ["avx2", "default"])
def test_other_capabilities(cap):
    # the GEMMs' other vector loops under the same checks
    rerun_with_capability(__file__, cap, "-k", "every_size and (-31] or -33] or -64] or "
                          "-65] or -129] or -256])")
