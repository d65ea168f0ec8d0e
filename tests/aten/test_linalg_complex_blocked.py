"""The blocked complex LU, triangular solves and Cholesky (linalg_lu.h's LU, shared with
the real dtypes; linalg_complex.c's tri_solve and cholesky): blocks of ZLU_BLOCK = 16
columns / rows, the updates through gemm_complex.c.  Against NumPy / SciPy in complex128
at and across the block edges (15, 16, 17, 31, 32, 33, ...), square and rectangular,
batched, on one and two threads (130: GEMM updates large enough to split over them); a
zero pivot / failing order in a later block; every triangle kind and side.  QR, eigh and
the SVD at lengths around their vectors (linalg_complex_vec.c, linalg_complex_svd.c: 64-byte
vectors with AVX-512, 32-byte ones otherwise; the file runs again with the capability
capped)."""
import numpy as np
import pytest
import scipy.linalg

import pytorchlite as ptl
from helpers import capability_reruns
from test_linalg_complex import _crand, _general

test_lower_capabilities = capability_reruns(__file__)

DTYPES = [(ptl.complex128, np.complex128, 1e-10), (ptl.complex64, np.complex64, 2e-4)]
EDGES = [15, 16, 17, 31, 32, 33, 48, 49, 70]


def _as(a, npdt):
    a = np.asarray(a).astype(npdt)
    return ptl.tensor(a), a.astype(np.complex128)


def _close(got, want, tol):
    got = got.numpy() if hasattr(got, "numpy") else got
    assert got.shape == np.shape(want)
    if np.size(want):
        err = np.abs(got - want).max()
        assert err <= tol * max(np.abs(want).max(), 1.0), err


@pytest.fixture(params=DTYPES, ids=["complex128", "complex64"])
def cdt(request):
    return request.param


@pytest.mark.parametrize("shape", [(n, n) for n in EDGES] +
                         [(40, 17), (17, 40), (33, 50), (50, 33), (3, 20, 20), (2, 33, 33)])
def test_lu_factor_blocks(cdt, shape, threads):
    tdt, npdt, tol = cdt
    A, a = _as(_crand(shape, sum(shape)), npdt)
    LU, piv = ptl.linalg.lu_factor(A)
    m, n = shape[-2:]
    P, L, U = ptl.linalg.lu(A)
    _close(P.numpy() @ L.numpy() @ U.numpy(), a, tol * max(m, n))
    if m == n and tdt == ptl.complex128:
        for idx in np.ndindex(*shape[:-2]):
            lu, p = scipy.linalg.lu_factor(a[idx])
            _close(LU.numpy()[idx], lu, tol * n)
            assert (piv.numpy()[idx] == p + 1).all()


# 130: trailing updates of more than 2^16 multiply-adds, split over the threads
@pytest.mark.parametrize("n", EDGES + [64, 65, 130])
def test_solve_inv_det_blocks(cdt, n, threads):
    tdt, npdt, tol = cdt
    A, a = _as(_general((2, n, n), n), npdt)
    for nrhs in (1, 3, 40):
        B, b = _as(_crand((2, n, nrhs), nrhs), npdt)
        _close(ptl.linalg.solve(A, B), np.linalg.solve(a, b), tol * n)
        _close(ptl.linalg.solve(A, B.mT.contiguous(), left=False),
               np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), b), -1, -2), tol * n)
    _close(ptl.linalg.inv(A), np.linalg.inv(a), tol * n)
    sign, logabs = ptl.linalg.slogdet(A)   # det itself overflows complex64 from n ~ 40
    want_sign, want_logabs = np.linalg.slogdet(a)
    _close(sign, want_sign, tol * n)
    _close(logabs, want_logabs, tol * n)
    if n <= 33:
        _close(ptl.linalg.det(A), np.linalg.det(a), tol * n)


@pytest.mark.parametrize("n,col", [(40, 20), (33, 32), (33, 16), (17, 0)])
def test_zero_pivot_in_a_later_block(cdt, n, col):
    tdt, npdt, _ = cdt
    a = _general((n, n), n)
    a[:, col] = 0
    A = ptl.tensor(a.astype(npdt))
    LU, piv, info = ptl.linalg.lu_factor_ex(A)
    assert int(info.numpy()) == col + 1
    assert ptl.linalg.det(A).numpy() == 0
    assert int(ptl.linalg.inv_ex(A)[1].numpy()) == col + 1


@pytest.mark.parametrize("n", [15, 16, 17, 33, 50])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular_blocks(cdt, n, upper, unit, threads):
    tdt, npdt, tol = cdt
    # off-diagonals of order 1 / n: a random unit triangle is exponentially ill-conditioned
    A, a = _as(_crand((2, n, n), 30 + n) / n + 2 * np.eye(n), npdt)
    t = np.triu(a) if upper else np.tril(a)
    if unit:
        t = t * (1 - np.eye(n)) + np.eye(n)
    for nrhs in (1, 2, 37):
        B, b = _as(_crand((2, n, nrhs), nrhs), npdt)
        X = ptl.linalg.solve_triangular(A, B, upper=upper, unitriangular=unit)
        _close(X, np.linalg.solve(t, b), tol * n)
        Y = ptl.linalg.solve_triangular(A, B.mT, upper=upper, left=False, unitriangular=unit)
        _close(Y, np.swapaxes(b, -1, -2) @ np.linalg.inv(t), tol * n)


# ---- the SVD's reflector updates and rotations: whole vectors of 4 / 8 complex numbers ----

@pytest.mark.parametrize("shape", [(n, n) for n in (1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33)] +
                         [(9, 5), (5, 9), (40, 13), (2, 12, 7)])
def test_svd_rotation_lengths(shape, threads):
    a = _crand(shape, sum(shape))
    for tdt, npdt, tol in DTYPES:
        A, x = _as(a, npdt)
        U, S, Vh = ptl.linalg.svd(A, full_matrices=False)
        _close(S, np.linalg.svd(x, compute_uv=False), tol * 10)
        u, s, vh = U.numpy().astype(np.complex128), S.numpy(), Vh.numpy().astype(np.complex128)
        _close(u @ (s[..., :, None] * vh), x, tol * 10)
        k = s.shape[-1]
        eye = np.broadcast_to(np.eye(k), u.shape[:-2] + (k, k))
        _close(np.swapaxes(u.conj(), -1, -2) @ u, eye, tol * 10)
        _close(ptl.linalg.svdvals(A), np.linalg.svd(x, compute_uv=False), tol * 10)


# ---- eigh's vectorised reduction and back-transform (4 complex numbers a vector) ----

@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 9, 10, 17, 33])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_vector_lengths(n, uplo, threads):
    a = _crand((2, n, n), n)
    a = a + np.swapaxes(a.conj(), -1, -2)
    for tdt, npdt, tol in DTYPES:
        A, x = _as(a, npdt)
        w, V = ptl.linalg.eigh(A, UPLO=uplo)
        _close(w, np.linalg.eigvalsh(x), tol * 10)
        v = V.numpy().astype(np.complex128)
        _close(x @ v, v * w.numpy()[..., None, :], tol * 10 * n)
        _close(np.swapaxes(v.conj(), -1, -2) @ v, np.broadcast_to(np.eye(n), (2, n, n)),
               tol * 10)


# ---- QR's reflector updates (8 complex64 / 4 complex128 numbers a vector) ----

@pytest.mark.parametrize("shape", [(n, n) for n in (1, 2, 3, 5, 8, 9, 10, 17, 33)] +
                         [(20, 9), (9, 20), (3, 17, 16)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_vector_lengths(shape, mode, threads):
    a = _crand(shape, sum(shape))
    for tdt, npdt, tol in DTYPES:
        A, x = _as(a, npdt)
        Q, R = ptl.linalg.qr(A, mode=mode)
        wq, wr = np.linalg.qr(x, mode=mode) if mode != "r" else (None, np.linalg.qr(x, "r"))
        _close(R, wr, tol * 10)
        if mode != "r":
            _close(Q, wq, tol * 10)


# ---- Cholesky in blocks of 16 (the earlier columns' part through one GEMM a block) ----

@pytest.mark.parametrize("n", [15, 16, 17, 31, 32, 33, 64, 65, 130])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_blocks(cdt, n, upper, threads):
    tdt, npdt, tol = cdt
    a = _crand((2, n, n), n)
    a = a @ np.swapaxes(a.conj(), -1, -2) + n * np.eye(n)
    A, x = _as(a, npdt)
    L = ptl.linalg.cholesky(A, upper=upper)
    want = np.linalg.cholesky(x)
    _close(L, np.swapaxes(want.conj(), -1, -2) if upper else want, tol * n)


@pytest.mark.parametrize("n,bad", [(40, 20), (33, 32), (33, 16), (17, 0)])
def test_cholesky_not_positive_definite_in_a_later_block(cdt, n, bad):
    tdt, npdt, _ = cdt
    d = np.ones(n)
    d[bad] = -1.0
    L, info = ptl.linalg.cholesky_ex(ptl.tensor(np.diag(d).astype(npdt)))
    assert int(info.numpy()) == bad + 1
