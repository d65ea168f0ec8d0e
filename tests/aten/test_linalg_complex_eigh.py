"""Complex eigh / eigvalsh in the input's precision (linalg_complex_eigh.c, Note [Complex
linear algebra] in linalg_complex.c): complex64 reduces, solves the tridiagonal problem and
back-transforms in single precision, as PyTorch's cheevd does.  Against NumPy in complex128
at and across every size the kernel branches on: 0-3, the row padding to whole vectors (8
complex64 / 4 complex128 numbers: 7, 8, 9, 15, 16, 17), the divide and conquer above
LINALG_DC_LEAF = 32 rows (31, 32, 33, 64, 65), batched on one and two threads (a batch's
matrices give the bits they give alone), both triangles, indefinite and graded spectra,
repeated eigenvalues (the divide and conquer's deflation), scaled near float's range ends,
non-contiguous input."""
import numpy as np
import pytest

import pytorchlite as ptl
from test_linalg_complex import _crand

DTYPES = [(ptl.complex128, np.complex128, 1e-10), (ptl.complex64, np.complex64, 2e-5)]
SIZES = [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 65]


@pytest.fixture(params=DTYPES, ids=["complex128", "complex64"])
def cdt(request):
    return request.param


def _herm(shape, seed):
    a = _crand(shape, seed)
    return (a + np.conj(np.swapaxes(a, -1, -2))) / 2


def _check(A, a, tol, uplo="L"):
    """eigh(A) and eigvalsh(A) against NumPy (a: A's values in complex128): the values, the
    residual A V - V diag(w), V's orthonormality; dtypes and shapes."""
    n = a.shape[-1]
    w, V = ptl.linalg.eigh(A, UPLO=uplo)
    real = ptl.float64 if A.dtype == ptl.complex128 else ptl.float32
    assert w.dtype == real and V.dtype == A.dtype
    assert w.shape == a.shape[:-1] and V.shape == a.shape
    scale = max(np.abs(a).max(initial=0), np.finfo(float).tiny) * max(n, 1)
    wn = np.linalg.eigvalsh(a)
    assert np.abs(w.numpy() - wn).max(initial=0) <= tol * scale
    v = V.numpy().astype(np.complex128)
    res = a @ v - v * w.numpy()[..., None, :]
    assert np.abs(res).max(initial=0) <= tol * scale
    eye = np.broadcast_to(np.eye(n), a.shape)
    assert np.abs(np.conj(np.swapaxes(v, -1, -2)) @ v - eye).max(initial=0) <= tol * n
    wv = ptl.linalg.eigvalsh(A, UPLO=uplo)
    assert wv.dtype == real
    assert np.abs(wv.numpy() - wn).max(initial=0) <= tol * scale
    return w, V


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_sizes_batched(cdt, n, uplo, threads):
    tdt, npdt, tol = cdt
    a = _herm((3, n, n), n).astype(npdt)
    # the unread triangle and the diagonal's imaginary part are junk
    junk = _crand((3, n, n), n + 100).astype(npdt)
    junk = np.triu(junk, 1) if uplo == "L" else np.tril(junk, -1)
    J = a + junk + 0.5j * np.eye(n, dtype=npdt)
    w, V = _check(ptl.tensor(J), a.astype(np.complex128), tol, uplo)
    # each matrix of the batch alone gives the same bits
    for b in range(3):
        w1, V1 = ptl.linalg.eigh(ptl.tensor(J[b]), UPLO=uplo)
        assert np.array_equal(w1.numpy(), w.numpy()[b])
        assert np.array_equal(V1.numpy(), V.numpy()[b])


@pytest.mark.parametrize("n", [8, 33, 64])
def test_graded_and_indefinite(cdt, n):
    """eigenvalues spread over six orders of magnitude, both signs"""
    tdt, npdt, tol = cdt
    u, _ = np.linalg.qr(_crand((n, n), 5))
    lam = np.geomspace(1e-3, 1e3, n) * np.where(np.arange(n) % 2, 1, -1)
    a = ((u * lam) @ np.conj(u.T)).astype(npdt)
    a = (a + np.conj(a.T)) / 2
    _check(ptl.tensor(a), a.astype(np.complex128), tol)


@pytest.mark.parametrize("n", [5, 33, 40, 70])
def test_repeated_eigenvalues(cdt, n, threads):
    tdt, npdt, tol = cdt
    u, _ = np.linalg.qr(_crand((n, n), 9))
    lam = np.repeat([-2.0, 1.0, 3.0], (n + 2) // 3)[:n]
    a = ((u * lam) @ np.conj(u.T)).astype(npdt)
    a = (a + np.conj(a.T)) / 2
    w, _ = _check(ptl.tensor(a), a.astype(np.complex128), tol)
    assert np.abs(w.numpy() - np.sort(lam)).max() <= tol * 10 * n
    for m in (n, 1):
        e = np.eye(m, dtype=npdt)
        _check(ptl.tensor(e), e.astype(np.complex128), tol)


@pytest.mark.parametrize("n", [3, 17, 40])
@pytest.mark.parametrize("scale", [1e-30, 1e30])
def test_scaled(cdt, n, scale):
    """entries near float's range ends: the divide and conquer's scaling and the values'
    root-free QL in double keep them finite"""
    tdt, npdt, tol = cdt
    a = (_herm((n, n), 3) * scale).astype(npdt)
    w, _ = _check(ptl.tensor(a), a.astype(np.complex128), tol)
    assert np.isfinite(w.numpy()).all()


def test_non_contiguous(cdt):
    tdt, npdt, tol = cdt
    big = _herm((2, 70, 70), 11).astype(npdt)
    A = ptl.tensor(big)[:, 1::2, 1::2].mT
    sub = np.swapaxes(big[:, 1::2, 1::2], -1, -2).astype(np.complex128)
    _check(A, sub, tol, "U")
