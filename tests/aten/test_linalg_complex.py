"""torch.linalg on complex64 and complex128 matrices (Note [Complex linear algebra] in
linalg_complex.c): the LU family (lu_factor(_ex), lu, lu_solve, solve(_ex), inv(_ex), det,
slogdet), solve_triangular, Cholesky (cholesky(_ex), cholesky_solve, cholesky_inverse), QR
and eigh/eigvalsh, against NumPy in complex128 on random shapes (batches, broadcast, size
0, non-contiguous views) on one and two threads; complex64 with float32 tolerances.  The
factors follow LAPACK's conventions (izamax pivots, zlarfg reflectors with a real R
diagonal), so LU, pivots, Q and R are compared with NumPy's/SciPy's directly; eigenvectors,
unique up to a unit complex factor each, through invariant quantities.  Singular and
non-positive-definite inputs raise PyTorch 2.13's LinAlgError texts.  Gradients:
tests/autograd/test_linalg_complex_grad.py."""
import re

import numpy as np
import pytest
import scipy.linalg

import pytorchlite as ptl

DTYPES = [(ptl.complex128, np.complex128, 1e-10), (ptl.complex64, np.complex64, 2e-4)]
BATCHES = [(), (1,), (3,), (2, 3)]
SIZES = [0, 1, 2, 3, 5, 8, 17]


def _crand(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _general(shape, seed):
    """Well-conditioned square matrices: random plus a diagonal."""
    n = shape[-1]
    return _crand(shape, seed) + 2 * np.sqrt(max(n, 1)) * np.eye(n)


def _hpd(shape, seed):
    a = _crand(shape, seed)
    return a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])


def _mh(a):
    return np.conj(np.swapaxes(a, -1, -2))


def _as(a, npdt, tdt):
    """(the tensor of a in tdt, a's values in that precision as complex128)"""
    a = np.asarray(a).astype(npdt)
    return ptl.tensor(a), a.astype(np.complex128)


def _close(got, want, tol, scale=1.0):
    got = got.resolve_conj().numpy() if hasattr(got, "numpy") else got   # lu_solve: a conj view
    assert got.shape == np.shape(want)
    if np.size(want):
        err = np.abs(got - want).max()
        assert err <= tol * max(scale, np.abs(want).max(), 1.0), err


@pytest.fixture(params=DTYPES, ids=["complex128", "complex64"])
def cdt(request):
    return request.param


# ---- the LU family ----

@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("n", SIZES)
def test_solve_inv_det_slogdet(cdt, batch, n, threads):
    tdt, npdt, tol = cdt
    A, a = _as(_general(batch + (n, n), n), npdt, tdt)
    B, b = _as(_crand(batch + (n, 2), 7), npdt, tdt)
    X = ptl.linalg.solve(A, B)
    assert X.dtype == tdt
    _close(X, np.linalg.solve(a, b) if n else b, tol)
    _close(ptl.linalg.inv(A), np.linalg.inv(a) if n else a, tol)
    d = ptl.linalg.det(A)
    assert d.dtype == tdt and d.shape == batch
    _close(d, np.linalg.det(a) if n else np.ones(batch), tol)
    sign, logabs = ptl.linalg.slogdet(A)
    assert sign.dtype == tdt and logabs.dtype == ptl.float64 if tdt == ptl.complex128 \
        else logabs.dtype == ptl.float32
    ws, wl = np.linalg.slogdet(a) if n else (np.ones(batch), np.zeros(batch))
    _close(sign, ws, tol)
    _close(logabs, wl, tol, scale=10.0)
    _close(ptl.inverse(A), np.linalg.inv(a) if n else a, tol)
    _close(ptl.det(A), np.linalg.det(a) if n else np.ones(batch), tol)


def test_solve_vector_broadcast_and_right(cdt, threads):
    tdt, npdt, tol = cdt
    A, a = _as(_general((2, 1, 4, 4), 1), npdt, tdt)
    B, b = _as(_crand((3, 4, 2), 2), npdt, tdt)
    _close(ptl.linalg.solve(A, B), np.linalg.solve(a, b), tol)
    v, vn = _as(_crand((4,), 3), npdt, tdt)
    _close(ptl.linalg.solve(A, v), np.linalg.solve(a, vn[:, None])[..., 0], tol)
    C, c = _as(_crand((2, 3, 2, 4), 4), npdt, tdt)
    want = _mh(np.linalg.solve(_mh(a), _mh(c)))
    _close(ptl.linalg.solve(A, C, left=False), want, tol)
    X, info = ptl.linalg.solve_ex(A, B)
    assert info.dtype == ptl.int32 and not info.numpy().any()
    _close(X, np.linalg.solve(a, b), tol)


def test_non_contiguous_inputs(cdt):
    tdt, npdt, tol = cdt
    big, bn = _as(_general((3, 6, 6), 5), npdt, tdt)
    A, a = big.mT[:, ::2, ::2], np.swapaxes(bn, -1, -2)[:, ::2, ::2]
    assert not A.is_contiguous()
    _close(ptl.linalg.inv(A), np.linalg.inv(a), tol, scale=100.0)
    _close(ptl.linalg.det(A), np.linalg.det(a), tol, scale=np.abs(np.linalg.det(a)).max())
    B, b = _as(_crand((3, 2, 3), 6), npdt, tdt)
    _close(ptl.linalg.solve(A, B.mT), np.linalg.solve(a, np.swapaxes(b, -1, -2)), tol,
           scale=100.0)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 6, 4), (0, 3, 3), (3, 0, 2)])
def test_lu_factor_matches_scipy(cdt, shape, threads):
    tdt, npdt, tol = cdt
    A, a = _as(_crand(shape, 11), npdt, tdt)
    LU, piv = ptl.linalg.lu_factor(A)
    assert LU.dtype == tdt and piv.dtype == ptl.int32
    m, n = shape[-2:]
    k = min(m, n)
    assert LU.shape == shape and piv.shape == shape[:-2] + (k,)
    P, L, U = ptl.linalg.lu(A)
    assert P.dtype == tdt
    _close(P.numpy() @ L.numpy() @ U.numpy(), a, tol)
    for idx in np.ndindex(*shape[:-2]):
        if m == n and n:
            lu, p = scipy.linalg.lu_factor(a[idx])
            _close(LU.numpy()[idx], lu, tol)
            assert (piv.numpy()[idx] == p + 1).all()


def test_lu_solve(cdt, threads):
    tdt, npdt, tol = cdt
    A, a = _as(_general((2, 5, 5), 12), npdt, tdt)
    B, b = _as(_crand((2, 5, 3), 13), npdt, tdt)
    LU, piv = ptl.linalg.lu_factor(A)
    for adjoint in (False, True):
        m = _mh(a) if adjoint else a
        _close(ptl.linalg.lu_solve(LU, piv, B, adjoint=adjoint), np.linalg.solve(m, b), tol)
        want = _mh(np.linalg.solve(_mh(m), b))
        _close(ptl.linalg.lu_solve(LU, piv, B.mH, left=False, adjoint=adjoint), want, tol)


def test_singular_errors_and_infos(cdt):
    tdt, npdt, _ = cdt
    eye = np.eye(3, dtype=npdt)
    S = ptl.tensor(np.stack([eye, np.zeros_like(eye)]))
    with pytest.raises(ptl.linalg.LinAlgError, match=re.escape(
            "linalg.inv: (Batch element 1): The diagonal element 1 is zero, the inversion "
            "could not be completed because the input matrix is singular.")):
        ptl.linalg.inv(S)
    with pytest.raises(ptl.linalg.LinAlgError, match=re.escape(
            "torch.linalg.solve: (Batch element 1): The solver failed because the input "
            "matrix is singular.")):
        ptl.linalg.solve(S, S)
    with pytest.raises(RuntimeError, match=re.escape(
            "torch.linalg.lu_factor: (Batch element 1): U[1,1] is zero and using it on "
            "lu_solve would result in a division by zero.")):
        ptl.linalg.lu_factor(S)
    assert ptl.linalg.inv_ex(S)[1].numpy().tolist() == [0, 1]
    assert ptl.linalg.lu_factor_ex(S)[2].numpy().tolist() == [0, 1]
    assert ptl.linalg.solve_ex(S, S)[1].numpy().tolist() == [0, 1]
    sign, logabs = ptl.linalg.slogdet(S)
    assert sign.numpy().tolist() == [1, 0] and logabs.numpy()[1] == -np.inf
    assert ptl.linalg.det(S).numpy().tolist() == [1, 0]


def test_dtype_errors():
    A = ptl.eye(3, dtype=ptl.complex128)
    R = ptl.ones(3, 3, dtype=ptl.float64)
    with pytest.raises(RuntimeError, match=re.escape(
            "linalg.solve: Expected A and B to have the same dtype, but found A of type "
            "ComplexDouble and B of type Double instead")):
        ptl.linalg.solve(A, R)
    with pytest.raises(RuntimeError, match=re.escape(
            "linalg.inv: A must be batches of square matrices, but they are 2 by 3 matrices")):
        ptl.linalg.inv(ptl.ones(2, 3, dtype=ptl.complex64))
    with pytest.raises(RuntimeError, match=re.escape(
            "torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: [3] "
            "instead")):
        ptl.linalg.lu_factor(ptl.ones(3, dtype=ptl.complex64))


# ---- solve_triangular ----

@pytest.mark.parametrize("batch", [(), (2,), (2, 1)])
@pytest.mark.parametrize("n", [0, 1, 4, 9])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular(cdt, batch, n, upper, unit, threads):
    tdt, npdt, tol = cdt
    A, a = _as(_general(batch + (n, n), 21), npdt, tdt)
    B, b = _as(_crand((3, n, 2) if batch == (2, 1) else batch + (n, 2), 22), npdt, tdt)
    t = np.triu(a) if upper else np.tril(a)
    if unit:
        t = t * (1 - np.eye(n)) + np.eye(n)
    bshape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    want = np.linalg.solve(t, b) if n else np.broadcast_to(b, bshape + b.shape[-2:])
    X = ptl.linalg.solve_triangular(A, B, upper=upper, unitriangular=unit)
    _close(X, want, tol)
    Y = ptl.linalg.solve_triangular(A, B.mT, upper=upper, left=False, unitriangular=unit)
    bt = np.swapaxes(b, -1, -2)
    _close(Y, bt @ np.linalg.inv(t) if n else np.broadcast_to(bt, bshape + bt.shape[-2:]), tol)


def test_solve_triangular_mixed_dtypes():
    a = np.triu(_general((4, 4), 23))
    b = np.random.default_rng(24).standard_normal((4, 2))
    X = ptl.linalg.solve_triangular(ptl.tensor(a), ptl.tensor(b), upper=True)
    assert X.dtype == ptl.complex128
    _close(X, np.linalg.solve(a, b), 1e-10)
    with pytest.raises(NotImplementedError, match=re.escape(
            "\"triangular_solve_cpu\" not implemented for 'Long'")):
        ptl.linalg.solve_triangular(ptl.ones(2, 2, dtype=ptl.int64),
                                    ptl.ones(2, 2, dtype=ptl.int64), upper=True)


# ---- Cholesky ----

@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("n", SIZES)
def test_cholesky(cdt, batch, n, threads):
    tdt, npdt, tol = cdt
    A, a = _as(_hpd(batch + (n, n), n + 30), npdt, tdt)
    want = np.linalg.cholesky(a) if n else a
    L = ptl.linalg.cholesky(A)
    assert L.dtype == tdt
    _close(L, want, tol)
    _close(ptl.linalg.cholesky(A, upper=True), _mh(want), tol)
    L2, info = ptl.linalg.cholesky_ex(A)
    assert info.dtype == ptl.int32 and info.shape == batch and not info.numpy().any()
    _close(L2, want, tol)


def test_cholesky_reads_one_triangle_and_real_diagonal(cdt):
    tdt, npdt, tol = cdt
    a = _hpd((5, 5), 40)
    junk = a + 3j * np.eye(5) + np.triu(_crand((5, 5), 41), 1)
    _close(ptl.linalg.cholesky(ptl.tensor(junk.astype(npdt))), np.linalg.cholesky(a), tol)
    junk_u = a + 3j * np.eye(5) + np.tril(_crand((5, 5), 42), -1)
    _close(ptl.linalg.cholesky(ptl.tensor(junk_u.astype(npdt)), upper=True),
           _mh(np.linalg.cholesky(a)), tol)


def test_cholesky_solve_and_inverse(cdt):
    tdt, npdt, tol = cdt
    A, a = _as(_hpd((2, 4, 4), 43), npdt, tdt)
    B, b = _as(_crand((2, 4, 3), 44), npdt, tdt)
    L = ptl.linalg.cholesky(A)
    _close(ptl.cholesky_solve(B, L), np.linalg.solve(a, b), tol)
    _close(ptl.cholesky_solve(B, L.mH, upper=True), np.linalg.solve(a, b), tol)
    _close(ptl.cholesky_inverse(L[0]), np.linalg.inv(a[0]), tol)


def test_cholesky_not_positive_definite(cdt):
    tdt, npdt, _ = cdt
    a = np.stack([np.eye(3), np.diag([1.0, -1.0, 1.0])]).astype(npdt)
    with pytest.raises(ptl.linalg.LinAlgError, match=re.escape(
            "linalg.cholesky: (Batch element 1): The factorization could not be completed "
            "because the input is not positive-definite (the leading minor of order 2 is not "
            "positive-definite).")):
        ptl.linalg.cholesky(ptl.tensor(a))
    assert ptl.linalg.cholesky_ex(ptl.tensor(a))[1].numpy().tolist() == [0, 2]
    with pytest.raises(ptl.linalg.LinAlgError, match=re.escape(
            "linalg.cholesky_ex: (Batch element 1): The factorization")):
        ptl.linalg.cholesky_ex(ptl.tensor(a), check_errors=True)
    with pytest.raises(RuntimeError, match=re.escape(
            "linalg.cholesky: A must be batches of square matrices, but they are 2 by 3 "
            "matrices")):
        ptl.linalg.cholesky(ptl.ones(2, 3, dtype=tdt))


# ---- QR ----

@pytest.mark.parametrize("batch", [(), (2,), (2, 3)])
@pytest.mark.parametrize("mn", [(0, 3), (3, 0), (1, 1), (4, 4), (6, 3), (3, 6), (9, 7)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_matches_numpy(cdt, batch, mn, mode, threads):
    tdt, npdt, tol = cdt
    A, a = _as(_crand(batch + mn, sum(mn)), npdt, tdt)
    Q, R = ptl.linalg.qr(A, mode=mode)
    assert Q.dtype == tdt and R.dtype == tdt
    if mode == "r":
        assert Q.shape == (0,)
        if a.size:
            _close(R, np.linalg.qr(a, mode="r"), tol, scale=10.0)
        return
    q, r = np.linalg.qr(a, mode=mode)
    assert Q.shape == q.shape and R.shape == r.shape
    if a.size:
        _close(Q, q, tol, scale=10.0)
        _close(R, r, tol, scale=10.0)
        _close(Q.numpy() @ R.numpy(), a, tol, scale=10.0)
        k = Q.shape[-1]
        _close(_mh(Q.numpy()) @ Q.numpy(), np.broadcast_to(np.eye(k), batch + (k, k)), tol)
    assert np.abs(np.imag(np.diagonal(R.numpy(), axis1=-2, axis2=-1))).max(initial=0) == 0


def test_qr_non_contiguous_and_zero_columns(cdt):
    tdt, npdt, tol = cdt
    big, bn = _as(_crand((6, 8), 50), npdt, tdt)
    A, a = big.mT[::2], bn.T[::2]
    q, r = np.linalg.qr(a)
    Q, R = ptl.linalg.qr(A)
    _close(Q, q, tol, scale=10.0)
    _close(R, r, tol, scale=10.0)
    z = np.zeros((4, 3), npdt)
    z[:, 1] = 1j
    Q, R = ptl.linalg.qr(ptl.tensor(z))
    _close(Q.numpy() @ R.numpy(), z, tol)


def test_qr_mode_error():
    with pytest.raises(RuntimeError, match=re.escape(
            "qr received unrecognized mode 'x' but expected one of 'reduced' (default), "
            "'r', or 'complete'")):
        ptl.linalg.qr(ptl.eye(3, dtype=ptl.complex64), mode="x")
    with pytest.raises(RuntimeError, match=re.escape(
            "linalg.qr: The input tensor A must have at least 2 dimensions.")):
        ptl.linalg.qr(ptl.ones(3, dtype=ptl.complex64))


# ---- eigh / eigvalsh ----

def _check_eigh(w, V, a, tol):
    """ascending real eigenvalues equal to NumPy's; A V = V diag(w); V unitary; each column
    equal to NumPy's up to a unit complex factor (distinct eigenvalues)."""
    wn, vn = np.linalg.eigh(a)
    n = a.shape[-1]
    _close(w, wn, tol, scale=np.abs(a).max(initial=1) * n)
    v = V.numpy()
    _close(a @ v, v * w.numpy()[..., None, :], tol, scale=np.abs(a).max(initial=1) * n)
    _close(_mh(v) @ v, np.broadcast_to(np.eye(n), a.shape), tol, scale=n)
    overlap = np.abs(np.sum(np.conj(v) * vn, axis=-2))
    _close(overlap, np.ones(a.shape[:-1]), tol * 100, scale=n)


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("n", SIZES + [40])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(cdt, batch, n, uplo, threads):
    tdt, npdt, tol = cdt
    h = _hpd(batch + (n, n), n + 60)
    A, a = _as(h, npdt, tdt)
    a = (a + _mh(a)) / 2
    junk = np.triu(_crand(batch + (n, n), 61), 1) if uplo == "L" else \
        np.tril(_crand(batch + (n, n), 61), -1)
    J = ptl.tensor((a + junk + 1j * np.eye(n)).astype(npdt))
    w, V = ptl.linalg.eigh(J, UPLO=uplo)
    assert w.dtype == (ptl.float64 if tdt == ptl.complex128 else ptl.float32)
    assert V.dtype == tdt and V.shape == a.shape and w.shape == a.shape[:-1]
    _check_eigh(w, V, a, tol)
    wv = ptl.linalg.eigvalsh(J, UPLO=uplo)
    _close(wv, w.numpy(), tol, scale=np.abs(a).max(initial=1) * n)


def test_eigh_repeated_and_non_contiguous(cdt):
    tdt, npdt, tol = cdt
    u, _ = np.linalg.qr(_crand((6, 6), 70))
    a = u @ np.diag([1.0, 1.0, 2.0, 2.0, 2.0, -3.0]) @ _mh(u)
    w, V = ptl.linalg.eigh(ptl.tensor(a.astype(npdt)))
    _close(w, [-3, 1, 1, 2, 2, 2], tol, scale=10.0)
    v = V.numpy()
    _close(a @ v, v * w.numpy()[None, :], tol, scale=10.0)
    big = _hpd((8, 8), 71)
    A = ptl.tensor(big.astype(npdt))[1::2, 1::2]
    sub = big[1::2, 1::2]
    _check_eigh(*ptl.linalg.eigh(A), sub, tol)


def test_eigh_errors():
    with pytest.raises(RuntimeError, match=re.escape(
            "Expected UPLO argument to be 'L' or 'U', but got X")):
        ptl.linalg.eigh(ptl.eye(3, dtype=ptl.complex64), UPLO="X")
    with pytest.raises(RuntimeError, match=re.escape(
            "linalg.eigh: A must be batches of square matrices, but they are 2 by 3 matrices")):
        ptl.linalg.eigh(ptl.ones(2, 3, dtype=ptl.complex64))


def test_byte_moving_ops_take_complex():
    """tril/triu, diagonal, diag_embed and eye, which the formulas and lu use."""
    a = _crand((2, 3, 4), 80)
    A = ptl.tensor(a)
    _close(A.tril(), np.tril(a), 0)
    _close(A.triu(1), np.triu(a, 1), 0)
    B = A.clone()
    B.tril_(-1)
    _close(B, np.tril(a, -1), 0)
    _close(A.diagonal(0, -2, -1), np.diagonal(a, 0, -2, -1), 0)
    d = ptl.diag_embed(A[:, 0])
    assert d.dtype == ptl.complex128
    _close(d, np.stack([np.diag(r) for r in a[:, 0]]), 0)
    _close(ptl.eye(3, 2, dtype=ptl.complex64), np.eye(3, 2), 0)


# ---- SVD ----

def _check_svd(U, S, Vh, a, full, tol):
    """S real, descending, equal to NumPy's; U and Vh with orthonormal columns / rows of the
    right shapes; U diag(S) Vh = A; each singular pair equal to NumPy's up to a common unit
    complex factor (u v^H is phase-free) where the singular values are distinct."""
    u, s, vh = np.linalg.svd(a, full_matrices=full)
    scale = np.abs(a).max(initial=1) * max(a.shape[-2:], default=1)
    assert U.shape == u.shape and Vh.shape == vh.shape and S.shape == s.shape
    _close(S, s, tol, scale=scale)
    U, S, Vh = U.numpy(), S.numpy(), Vh.numpy()
    k = S.shape[-1]
    _close((U[..., :, :k] * S[..., None, :]) @ Vh[..., :k, :], a, tol, scale=scale)
    _close(_mh(U) @ U, np.broadcast_to(np.eye(U.shape[-1]), U.shape[:-2] + (U.shape[-1],) * 2),
           tol, scale=10)
    _close(Vh @ _mh(Vh), np.broadcast_to(np.eye(Vh.shape[-2]),
                                         Vh.shape[:-2] + (Vh.shape[-2],) * 2), tol, scale=10)
    if k:
        pair = U[..., :, :1] * Vh[..., :1, :]
        _close(pair, u[..., :, :1] * vh[..., :1, :], tol * 100, scale=10)


@pytest.mark.parametrize("batch", [(), (3,), (2, 1)])
@pytest.mark.parametrize("mn", [(0, 3), (3, 0), (1, 1), (4, 4), (6, 3), (3, 6), (9, 7)])
@pytest.mark.parametrize("full", [False, True])
def test_svd(cdt, batch, mn, full, threads):
    tdt, npdt, tol = cdt
    A, a = _as(_crand(batch + mn, sum(mn) + 90), npdt, tdt)
    U, S, Vh = ptl.linalg.svd(A, full_matrices=full)
    assert U.dtype == tdt and Vh.dtype == tdt
    assert S.dtype == (ptl.float64 if tdt == ptl.complex128 else ptl.float32)
    _check_svd(U, S, Vh, a, full, tol)
    _close(ptl.linalg.svdvals(A), np.linalg.svd(a, compute_uv=False), tol,
           scale=np.abs(a).max(initial=1) * 10)


def test_svd_rank_deficient_and_non_contiguous(cdt):
    tdt, npdt, tol = cdt
    r = _crand((7, 2), 91)
    a = r @ _mh(r)
    _check_svd(*ptl.linalg.svd(ptl.tensor(a.astype(npdt))), a.astype(npdt).astype(complex),
               True, tol)
    _check_svd(*ptl.linalg.svd(ptl.zeros(3, 2, dtype=tdt)), np.zeros((3, 2)), True, tol)
    big, bn = _as(_crand((6, 10), 92), npdt, tdt)
    A, sub = big.mT[::2], np.swapaxes(bn, -1, -2)[::2]
    _check_svd(*ptl.linalg.svd(A, full_matrices=False), sub, False, tol)


def test_legacy_svd_returns_v():
    a = _crand((4, 3), 93)
    U, S, V = ptl.svd(ptl.tensor(a))
    _close((U.numpy() * S.numpy()) @ _mh(V.numpy()), a, 1e-10, scale=10)


def test_svd_errors():
    with pytest.raises(RuntimeError, match=re.escape(
            "linalg.svd: The input tensor A must have at least 2 dimensions.")):
        ptl.linalg.svd(ptl.ones(3, dtype=ptl.complex64))
    bad = ptl.tensor(np.array([[1, np.nan], [0, 1j]]))
    with pytest.raises(ptl.linalg.LinAlgError, match=re.escape(
            "linalg.svd: The algorithm failed to converge because the input matrix contained "
            "non-finite values.")):
        ptl.linalg.svd(bad)


# ---- eig / eigvals ----

@pytest.mark.parametrize("batch", [(), (3,), (2, 1)])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 8, 17])
def test_eig(cdt, batch, n, threads):
    tdt, npdt, tol = cdt
    A, a = _as(_crand(batch + (n, n), n + 100), npdt, tdt)
    w, V = ptl.linalg.eig(A)
    assert w.dtype == tdt and V.dtype == tdt and w.shape == batch + (n,)
    scale = np.abs(a).max(initial=1) * max(n, 1)
    _close(np.sort_complex(w.numpy()), np.sort_complex(np.linalg.eigvals(a)), tol * 10,
           scale=scale)
    v = V.numpy()
    _close(a @ v, v * w.numpy()[..., None, :], tol * 10, scale=scale)
    _close(np.linalg.norm(v, axis=-2), np.ones(batch + (n,)), tol)
    if n:
        big = np.argmax(np.abs(v) ** 2, axis=-2)
        lead = np.take_along_axis(v, big[..., None, :], -2)
        assert (np.abs(np.imag(lead)) <= tol).all() and (np.real(lead) > 0).all()
        wn, vn = np.linalg.eig(a)
        for idx in np.ndindex(*batch):
            for k in range(n):
                j = np.argmin(np.abs(wn[idx] - w.numpy()[idx][k]))
                overlap = np.abs(np.vdot(vn[idx][:, j], v[idx][:, k]))
                assert abs(overlap - 1) <= tol * 1e3
    _close(ptl.linalg.eigvals(A), w.numpy(), tol)


def test_eig_non_contiguous_and_triangular(cdt):
    tdt, npdt, tol = cdt
    big, bn = _as(_crand((8, 8), 110), npdt, tdt)
    A, a = big.mT[::2, ::2], np.swapaxes(bn, -1, -2)[::2, ::2]
    w = ptl.linalg.eigvals(A)
    _close(np.sort_complex(w.numpy()), np.sort_complex(np.linalg.eigvals(a)), tol * 10,
           scale=10)
    t = np.triu(_crand((5, 5), 111)).astype(npdt)
    w, V = ptl.linalg.eig(ptl.tensor(t))
    _close(w, np.diagonal(t), tol)


def test_eig_errors():
    bad = ptl.tensor(np.array([[1, np.inf], [0, 1j]]))
    with pytest.raises(RuntimeError, match=re.escape(
            "torch.linalg.eig: input tensor should not contain infs or NaNs.")):
        ptl.linalg.eig(bad)
    with pytest.raises(RuntimeError, match=re.escape(
            "linalg.eig: A must be batches of square matrices, but they are 2 by 3 matrices")):
        ptl.linalg.eig(ptl.ones(2, 3, dtype=ptl.complex64))


# ---- cross, vecdot and lstsq ----

@pytest.mark.parametrize("shape_a,shape_b,dim", [((3,), (3,), -1), ((4, 3), (4, 3), -1),
                                                 ((3, 5), (3, 1), 0), ((2, 1, 3), (1, 4, 3), -1),
                                                 ((0, 3), (0, 3), 1)])
def test_cross(cdt, shape_a, shape_b, dim):
    tdt, npdt, tol = cdt
    A, a = _as(_crand(shape_a, 120), npdt, tdt)
    B, b = _as(_crand(shape_b, 121), npdt, tdt)
    want = np.cross(np.moveaxis(a, dim, -1), np.moveaxis(b, dim, -1)) if a.size else \
        np.zeros(np.broadcast_shapes(shape_a, shape_b))
    want = np.moveaxis(want, -1, dim) if a.size else want
    got = ptl.linalg.cross(A, B, dim=dim)
    assert got.dtype == tdt
    _close(got, want, tol)
    _close(ptl.cross(A, B, dim=dim), want, tol)
    # non-contiguous operands: a transposed and a stepped view
    rev = list(range(a.ndim))[::-1]
    At = ptl.tensor(np.ascontiguousarray(np.transpose(a, rev)).astype(npdt)).permute(rev)
    Bs = ptl.tensor(np.repeat(b, 2, axis=-1).astype(npdt))[..., ::2]
    _close(ptl.linalg.cross(At, Bs, dim=dim), want, tol)


def test_cross_errors():
    with pytest.raises(RuntimeError, match=re.escape("expected scalar type ComplexFloat but "
                                                     "found ComplexDouble")):
        ptl.linalg.cross(ptl.ones(3, dtype=ptl.complex64), ptl.ones(3, dtype=ptl.complex128))
    with pytest.raises(RuntimeError, match="inputs dimension -1 must have length 3"):
        ptl.linalg.cross(ptl.ones(4, dtype=ptl.complex64), ptl.ones(4, dtype=ptl.complex64))


def test_vecdot_conjugates_x(cdt):
    tdt, npdt, tol = cdt
    X, x = _as(_crand((3, 4), 122), npdt, tdt)
    Y, y = _as(_crand((4,), 123), npdt, tdt)
    _close(ptl.linalg.vecdot(X, Y), (np.conj(x) * y).sum(-1), tol)
    _close(ptl.linalg.vecdot(X.mT, X.mT, dim=0), (np.abs(x) ** 2).sum(-1), tol)


def _np_lstsq_c(a, b):
    """Per matrix minimum-norm least squares of complex a, b (batch dims equal)."""
    if a.ndim == 2:
        return np.linalg.lstsq(a, b, rcond=None)[0]
    return np.stack([_np_lstsq_c(x, y) for x, y in zip(a, b)])


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("shape_a,shape_b", [((5, 3), (5, 2)), ((3, 5), (3, 2)),
                                             ((2, 6, 4), (2, 6, 1)), ((4, 4), (4, 3)),
                                             ((5, 3), (5,)), ((0, 3), (0, 2)),
                                             ((3, 0), (3, 2))])
def test_lstsq(cdt, driver, shape_a, shape_b, threads):
    tdt, npdt, tol = cdt
    A, a = _as(_crand(shape_a, 124), npdt, tdt)
    B, b = _as(_crand(shape_b, 125), npdt, tdt)
    vec = len(shape_b) == 1
    m, n = shape_a[-2], shape_a[-1]
    if driver == "gels" and m < n and m == 0:
        return
    res = ptl.linalg.lstsq(A, B, driver=driver)
    rdt = ptl.float64 if tdt == ptl.complex128 else ptl.float32
    assert res.solution.dtype == tdt
    assert res.residuals.dtype == rdt and res.singular_values.dtype == rdt
    bm = b[..., None] if vec else b
    want = _np_lstsq_c(a, bm) if min(m, n) else np.zeros(shape_a[:-2] + (n, bm.shape[-1]))
    _close(res.solution, want[..., 0] if vec else want, tol * 10, scale=10)
    if driver in ("gelsd", "gelss"):
        _close(res.singular_values, np.linalg.svd(a, compute_uv=False), tol * 10, scale=10)
        assert (res.rank.numpy() == min(m, n)).all()
    if m > n and n and driver not in (None, "gelsy"):
        _close(res.residuals, (np.abs(a @ want - bm) ** 2).sum(-2), tol * 10, scale=10)


def test_lstsq_rank_deficient(cdt):
    tdt, npdt, tol = cdt
    u = _crand((6, 1), 126)
    a = (u @ _crand((1, 3), 127)).astype(npdt)   # rank 1
    b = _crand((6, 2), 128).astype(npdt)
    want = np.linalg.pinv(a.astype(np.complex128), rcond=tol) @ b
    for driver in ("gelsy", "gelsd", "gelss"):
        res = ptl.linalg.lstsq(ptl.tensor(a), ptl.tensor(b), driver=driver)
        assert int(res.rank) == 1
        _close(res.solution, want, tol * 100, scale=10)


def test_lstsq_errors():
    with pytest.raises(RuntimeError, match=re.escape(
            "torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
            "input's dtype ComplexFloat and other's dtype Float")):
        ptl.linalg.lstsq(ptl.ones(3, 2, dtype=ptl.complex64), ptl.ones(3, 1))


def test_logdet(cdt):
    tdt, npdt, tol = cdt
    A, a = _as(_general((2, 4, 4), 129), npdt, tdt)
    got = ptl.logdet(A)
    assert got.dtype == tdt
    _close(got, np.log(np.linalg.det(a)), tol * 10)
    _close(A.logdet(), np.log(np.linalg.det(a)), tol * 10)
