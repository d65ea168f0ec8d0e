"""The blocked factorisations: Cholesky (Note [Blocked Cholesky] in linalg_decomp.c), LU and
the triangular solves (Note [Blocked LU and triangular solves] in linalg_solve.c), which work
in blocks of 64 (Cholesky's row blocks of U, its diagonal blocks again in blocks of 16 and
its panel solved in strips of 16) and hand the trailing updates to the GEMM.  Every size at and around one and several blocks, square and
rectangular, batched, on one and two threads (the GEMM splits large updates across threads;
a batch spreads its matrices instead), against NumPy in float64; and a failure (a
non-positive-definite minor, a zero pivot) that lies in a later block is reported at its own
index."""
import numpy as np
import pytest

import pytorchlite as ptl

from helpers import assert_close

BLOCK = 64
INNER = 16  # Cholesky's diagonal blocks are factored in blocks of 16
SIZES = [BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK - 1, 2 * BLOCK, 2 * BLOCK + 1, 3 * BLOCK + 7]
CHOLESKY_SIZES = [1, INNER - 1, INNER, INNER + 1, 2 * INNER + 3] + SIZES
TOL = dict(rtol=1e-9, atol=1e-10)


def _general(shape, seed):
    a = np.random.default_rng(seed).uniform(-1, 1, shape)
    if shape[-1] == shape[-2]:
        a = a + 2 * np.sqrt(shape[-1]) * np.eye(shape[-1])
    return a


def _spd(shape, seed):
    a = np.random.default_rng(seed).standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


@pytest.mark.parametrize("n", CHOLESKY_SIZES)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_across_blocks(n, upper, threads):
    a = _spd((n, n), n)
    L = ptl.linalg.cholesky(ptl.tensor(a), upper=upper)
    ref = np.linalg.cholesky(a)
    assert_close(L, ref.T if upper else ref, **TOL)
    assert np.count_nonzero(np.triu(L.numpy(), 1) if not upper else np.tril(L.numpy(), -1)) == 0


def test_cholesky_batched_and_float32_across_blocks(threads):
    a = _spd((3, 2 * BLOCK + 5, 2 * BLOCK + 5), 1)
    assert_close(ptl.linalg.cholesky(ptl.tensor(a)), np.linalg.cholesky(a), **TOL)
    L32 = ptl.linalg.cholesky(ptl.tensor(a).float())
    assert L32.dtype == ptl.float32
    assert_close(L32.double(), np.linalg.cholesky(a), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bad", [0, 3, INNER, INNER + 5, BLOCK - 1, BLOCK, BLOCK + 1,
                                 BLOCK + INNER + 2, 2 * BLOCK + 30])
def test_cholesky_reports_a_failing_minor_in_any_block(bad):
    n = 3 * BLOCK
    a = _spd((n, n), 2)
    # the leading minor of order bad + 1 is the first that is not positive-definite
    a[bad, :] = a[:, bad] = 0.0
    a[bad, bad] = -1.0
    _, info = ptl.linalg.cholesky_ex(ptl.tensor(a))
    assert int(info) == bad + 1
    with pytest.raises(ptl.linalg.LinAlgError, match=f"order {bad + 1} is not positive"):
        ptl.linalg.cholesky(ptl.tensor(a))


@pytest.mark.parametrize("n", [INNER + 1, BLOCK, BLOCK + 1, 2 * BLOCK + 1, 4 * BLOCK + 3])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cholesky_reads_one_triangle_across_blocks(n, dtype, threads):
    # the factor is computed as U (U^T U = A; Note [Blocked Cholesky]): L from A's lower
    # triangle transposed in by tiles, U from A's upper one; the other triangle is never read
    a = _spd((2, n, n), n + 7)
    junk = np.random.default_rng(n).standard_normal((2, n, n)) * 1e3
    lower, upper = np.tril(a) + np.triu(junk, 1), np.triu(a) + np.tril(junk, -1)
    ref = np.linalg.cholesky(a)
    tol = TOL if dtype == "float64" else dict(rtol=1e-4, atol=1e-4)
    L = ptl.linalg.cholesky(ptl.tensor(lower.astype(dtype)))
    U = ptl.linalg.cholesky(ptl.tensor(upper.astype(dtype)), upper=True)
    assert_close(L.double(), ref, **tol)
    assert_close(U.double(), np.swapaxes(ref, -1, -2), **tol)
    assert not np.triu(L.numpy(), 1).any() and not np.tril(U.numpy(), -1).any()


@pytest.mark.parametrize("n", [INNER + 1, BLOCK + 1, 3 * BLOCK + 7])
def test_cholesky_ill_conditioned_across_blocks(n, threads):
    # condition number 1e12: L L^T reproduces A to O(eps |A|) (backward stable), and L
    # agrees with LAPACK's to the factor's own condition
    q, _ = np.linalg.qr(np.random.default_rng(n).standard_normal((n, n)))
    a = (q * np.logspace(0, -12, n)) @ q.T
    a = (a + a.T) / 2
    L = ptl.linalg.cholesky(ptl.tensor(a)).numpy()
    assert np.abs(L @ L.T - a).max() <= 1e-13 * np.abs(a).max()
    assert_close(ptl.tensor(L), np.linalg.cholesky(a), rtol=0, atol=1e-7)


@pytest.mark.parametrize("bad", [0, INNER + 5, BLOCK, 2 * BLOCK + 30])
def test_cholesky_upper_reports_a_failing_minor_in_any_block(bad, threads):
    n = 3 * BLOCK
    a = _spd((n, n), 3)
    a[bad, :] = a[:, bad] = 0.0
    a[bad, bad] = -1.0
    _, info = ptl.linalg.cholesky_ex(ptl.tensor(a), upper=True)
    assert int(info) == bad + 1
    with pytest.raises(ptl.linalg.LinAlgError, match=f"order {bad + 1} is not positive"):
        ptl.linalg.cholesky(ptl.tensor(a), upper=True)
    batch = ptl.tensor(np.stack([_spd((n, n), 4), a]))
    _, info = ptl.linalg.cholesky_ex(batch, upper=True)
    assert info.tolist() == [0, bad + 1]


def _lu_reconstruct(LU, piv, m, n):
    k = min(m, n)
    L = np.tril(LU[:, :k], -1) + np.eye(m, k)
    U = np.triu(LU[:k, :])
    perm = np.arange(m)
    for i, p in enumerate(piv):
        perm[[i, p - 1]] = perm[[p - 1, i]]
    out = np.empty((m, n))
    out[perm] = L @ U
    return out


@pytest.mark.parametrize("m, n", [(s, s) for s in SIZES] +
                         [(2 * BLOCK + 3, BLOCK + 5), (BLOCK + 5, 2 * BLOCK + 3),
                          (3 * BLOCK, BLOCK - 2), (BLOCK - 2, 3 * BLOCK)])
def test_lu_factor_across_blocks_reconstructs(m, n, threads):
    a = _general((m, n), m * 1000 + n)
    LU, piv = ptl.linalg.lu_factor(ptl.tensor(a))
    assert_close(ptl.tensor(_lu_reconstruct(LU.numpy(), piv.numpy(), m, n)), a, **TOL)
    # partial pivoting: every multiplier is at most 1 in magnitude
    assert np.abs(np.tril(LU.numpy(), -1)).max() <= 1.0


@pytest.mark.parametrize("n", SIZES)
def test_solve_inv_det_across_blocks(n, threads):
    a = _general((n, n), n)
    b = np.random.default_rng(n + 1).standard_normal((n, 3))
    A = ptl.tensor(a)
    assert_close(ptl.linalg.solve(A, ptl.tensor(b)), np.linalg.solve(a, b), **TOL)
    assert_close(ptl.linalg.solve(A, ptl.tensor(b.T), left=False), np.linalg.solve(a.T, b).T,
                 **TOL)
    assert_close(ptl.linalg.inv(A), np.linalg.inv(a), **TOL)
    sign, logabs = ptl.linalg.slogdet(A)
    ref_sign, ref_logabs = np.linalg.slogdet(a)
    assert float(sign) == ref_sign
    assert_close(logabs, np.float64(ref_logabs), **TOL)


def test_batched_inv_across_blocks(threads):
    a = _general((4, BLOCK + 9, BLOCK + 9), 7)
    assert_close(ptl.linalg.inv(ptl.tensor(a)), np.linalg.inv(a), **TOL)


@pytest.mark.parametrize("zero", [BLOCK - 1, BLOCK, 2 * BLOCK + 3])
def test_a_zero_pivot_in_a_later_block_is_reported(zero):
    n = 3 * BLOCK
    a = _general((n, n), 3)
    # column `zero` becomes a combination of the columns before it: U[zero, zero] = 0
    a[:, zero] = a[:, :zero] @ np.random.default_rng(4).standard_normal(zero)
    _, _, info = ptl.linalg.lu_factor_ex(ptl.tensor(a))
    # rounding may leave a tiny pivot instead of an exact zero; when it is exact it is here
    assert int(info) in (0, zero + 1)
    exact = np.zeros((n, n))
    exact[:zero, :zero] = np.eye(zero)
    exact[zero + 1:, zero + 1:] = np.eye(n - zero - 1)
    _, _, info = ptl.linalg.lu_factor_ex(ptl.tensor(exact))
    assert int(info) == zero + 1
    with pytest.raises(ptl.linalg.LinAlgError,
                       match=f"diagonal element {zero + 1} is zero"):
        ptl.linalg.inv(ptl.tensor(exact))


@pytest.mark.parametrize("n", [BLOCK - 1, BLOCK + 1, 2 * BLOCK, 3 * BLOCK + 7])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [False, True])
@pytest.mark.parametrize("nrhs", [1, 5, BLOCK + 3])
def test_solve_triangular_across_blocks(n, upper, left, unit, nrhs, threads):
    rng = np.random.default_rng(n * 7 + nrhs)
    t = rng.uniform(-1, 1, (n, n)) / np.sqrt(n) + 2 * np.eye(n)
    b = rng.standard_normal((n, nrhs) if left else (nrhs, n))
    tri = np.triu(t) if upper else np.tril(t)
    if unit:
        np.fill_diagonal(tri, 1.0)
    ref = np.linalg.solve(tri, b) if left else np.linalg.solve(tri.T, b.T).T
    out = ptl.linalg.solve_triangular(ptl.tensor(t), ptl.tensor(b), upper=upper, left=left,
                                      unitriangular=unit)
    assert_close(out, ref, **TOL)


QR_BLOCK = 32
QR_SHAPES = [(QR_BLOCK - 1,) * 2, (QR_BLOCK,) * 2, (QR_BLOCK + 1,) * 2, (2 * QR_BLOCK,) * 2,
             (3 * QR_BLOCK + 5,) * 2, (2 * QR_BLOCK + 9, QR_BLOCK + 3),
             (QR_BLOCK + 3, 2 * QR_BLOCK + 9), (4 * QR_BLOCK, QR_BLOCK - 3),
             (QR_BLOCK - 3, 4 * QR_BLOCK), (3 * QR_BLOCK + 1, 2 * QR_BLOCK)]


@pytest.mark.parametrize("shape", QR_SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_across_blocks(shape, mode, threads):
    # the reflections are LAPACK's (Note [Householder QR]), so Q and R match NumPy's, signs
    # included; Q is orthonormal and Q R = A
    a = np.random.default_rng(shape[0] * 31 + shape[1]).standard_normal(shape)
    Q, R = ptl.linalg.qr(ptl.tensor(a), mode=mode)
    ref_q, ref_r = np.linalg.qr(a, mode="complete" if mode == "complete" else "reduced")
    assert_close(R, ref_r, **TOL)
    if mode == "r":
        assert Q.numel() == 0
        return
    assert_close(Q, ref_q, **TOL)
    q = Q.numpy()
    assert_close(ptl.tensor(q.T @ q), np.eye(q.shape[1]), **TOL)
    assert_close(ptl.tensor(q @ R.numpy()), a, **TOL)


def test_batched_qr_across_blocks(threads):
    a = np.random.default_rng(5).standard_normal((3, 2 * QR_BLOCK + 7, QR_BLOCK + 11))
    Q, R = ptl.linalg.qr(ptl.tensor(a))
    ref_q, ref_r = np.linalg.qr(a)
    assert_close(Q, ref_q, **TOL)
    assert_close(R, ref_r, **TOL)


def test_qr_of_rank_deficient_columns_across_blocks():
    # zero columns give tau = 0 (H = I) inside the blocked update too
    a = np.random.default_rng(6).standard_normal((3 * QR_BLOCK, 2 * QR_BLOCK + 4))
    a[:, [0, QR_BLOCK, QR_BLOCK + 1, 2 * QR_BLOCK + 3]] = 0.0
    Q, R = ptl.linalg.qr(ptl.tensor(a))
    q = Q.numpy()
    assert_close(ptl.tensor(q.T @ q), np.eye(q.shape[1]), **TOL)
    assert_close(ptl.tensor(q @ R.numpy()), a, **TOL)


# eigh (Note [Symmetric eigensolver] in linalg_decomp.c): the tridiagonal reduction runs in
# panels of TRIDIAG_BLOCK of its n - 2 steps, Q is formed (or applied to T's vectors)
# QR_BLOCK reflections at a time, up to DC_LEAF rows each QL sweep reaches the vectors
# SWEEP_CHUNK columns at a time (above it the vectors come from divide and conquer:
# test_linalg_eigh_dc.py), and the transposes go by TRANSPOSE_TILE tiles.  Eigenvalues are
# compared with NumPy's, the vectors (whose signs are free) through the residual and the
# orthogonality.
TRIDIAG_BLOCK = 32
SWEEP_CHUNK = 32
TRANSPOSE_TILE = 16
DC_LEAF = 32
EIGH_SIZES = sorted({1, 2, 3, 4, TRANSPOSE_TILE - 1, TRANSPOSE_TILE, TRANSPOSE_TILE + 1,
                     SWEEP_CHUNK - 1, SWEEP_CHUNK, SWEEP_CHUNK + 1, 2 * SWEEP_CHUNK + 1,
                     TRIDIAG_BLOCK - 1, TRIDIAG_BLOCK, TRIDIAG_BLOCK + 1, TRIDIAG_BLOCK + 2,
                     TRIDIAG_BLOCK + 3, QR_BLOCK + 2, 2 * TRIDIAG_BLOCK + 1,
                     2 * TRIDIAG_BLOCK + 2, 2 * TRIDIAG_BLOCK + 3, 3 * TRIDIAG_BLOCK + 7,
                     4 * SWEEP_CHUNK + 1})


def _eigh_check(a, w, V):
    """w ascending and NumPy's; |A V - V diag(w)| and |V^T V - I| at LAPACK's level."""
    n = a.shape[-1]
    w, v = w.numpy(), V.numpy()
    scale = max(np.abs(a).max(initial=0.0), 1.0)
    eps = np.finfo(np.float64).eps
    ref = np.linalg.eigvalsh(a) if n else np.zeros(a.shape[:-1])
    assert np.all(np.diff(w, axis=-1) >= 0)
    np.testing.assert_allclose(w, ref, rtol=0, atol=20 * n * eps * scale)
    np.testing.assert_allclose(a @ v, v * w[..., None, :], rtol=0, atol=20 * n * eps * scale)
    np.testing.assert_allclose(np.swapaxes(v, -1, -2) @ v, np.broadcast_to(np.eye(n), a.shape),
                               rtol=0, atol=20 * n * eps)


def _clustered(n, seed):
    """Q diag(lam) Q^T with eigenvalues in three tight clusters and one repeated exactly."""
    g = np.random.default_rng(seed)
    q, _ = np.linalg.qr(g.standard_normal((n, n)))
    lam = np.array([(-1.0, 2.0, 2.0 + 1e-11, 5.0)[i % 4] for i in range(n)])
    a = (q * lam) @ q.T
    return (a + a.T) / 2


@pytest.mark.parametrize("n", EIGH_SIZES)
@pytest.mark.parametrize("kind", ["random", "clustered"])
def test_eigh_across_blocks(n, kind, threads):
    if kind == "random":
        a = np.random.default_rng(n).standard_normal((n, n))
        a = a + a.T
    else:
        a = _clustered(n, n)
    for uplo in ("L", "U"):
        w, V = ptl.linalg.eigh(ptl.tensor(a), UPLO=uplo)
        _eigh_check(a, w, V)
        # the eigenvalue-only path runs the same reduction and QL without the vectors: the
        # same bits up to DC_LEAF rows; above it eigh's values come from the merges
        wv = ptl.linalg.eigvalsh(ptl.tensor(a), UPLO=uplo).numpy()
        if n <= DC_LEAF:
            assert np.array_equal(wv, w.numpy())
        else:
            np.testing.assert_allclose(wv, w.numpy(), rtol=0,
                                       atol=4 * n * np.finfo(np.float64).eps *
                                       np.abs(a).sum(axis=1).max())


@pytest.mark.parametrize("n", [0, 1, TRIDIAG_BLOCK + 1, 4 * SWEEP_CHUNK + 1])
def test_eigh_of_zero_and_diagonal_matrices_across_blocks(n):
    w, V = ptl.linalg.eigh(ptl.zeros(n, n, dtype=ptl.float64))
    assert not w.any()
    np.testing.assert_array_equal(V.numpy(), np.eye(n))
    d = np.random.default_rng(n).integers(-3, 4, n).astype(np.float64)
    w, V = ptl.linalg.eigh(ptl.tensor(np.diag(d)))
    np.testing.assert_array_equal(w.numpy(), np.sort(d))
    _eigh_check(np.diag(d), w, V)


def test_eigh_batched_and_non_contiguous_across_blocks(threads):
    g = np.random.default_rng(8)
    a = g.standard_normal((3, TRIDIAG_BLOCK + 5, TRIDIAG_BLOCK + 5))
    a = a + np.swapaxes(a, -1, -2)
    a[1] = _clustered(TRIDIAG_BLOCK + 5, 9)
    w, V = ptl.linalg.eigh(ptl.tensor(a))
    _eigh_check(a, w, V)
    # a transposed view of every other matrix of a larger batch
    big = ptl.tensor(np.concatenate([a, a])).transpose(-1, -2)[::2]
    w, V = ptl.linalg.eigh(big)
    _eigh_check(np.concatenate([a, a])[::2], w, V)


# eig (Note [Nonsymmetric eigensolver] in linalg_eig.c): a Francis sweep's row updates right
# of the active block and on Z go by SWEEP_LANES columns carried in registers, the last ones
# by SWEEP_COLS, its column updates above the bulge by EIG_COL_BLOCK rows; blocks of
# EIG_AED_MIN rows and more deflate early in a window.  Eigenvalues against NumPy's
# (sorted), vectors by the residual.
SWEEP_LANES = 32
SWEEP_COLS = 64
EIG_COL_BLOCK = 32
EIG_AED_MIN = 75
EIG_SIZES = sorted({3, EIG_COL_BLOCK - 1, EIG_COL_BLOCK, EIG_COL_BLOCK + 1, EIG_COL_BLOCK + 2,
                    SWEEP_LANES + SWEEP_COLS - 1, SWEEP_LANES + SWEEP_COLS + 1,
                    SWEEP_COLS - 1, SWEEP_COLS, SWEEP_COLS + 1, 3 * EIG_COL_BLOCK + 1,
                    2 * SWEEP_COLS + 1, EIG_AED_MIN - 1, EIG_AED_MIN, EIG_AED_MIN + 1})


def _sorted_eigs(w):
    return w[np.lexsort((w.imag, w.real))]


@pytest.mark.parametrize("n", EIG_SIZES)
def test_eig_across_blocks(n, threads):
    a = np.random.default_rng(n).standard_normal((n, n))
    wr, wi, vr, vi = ptl.linalg._eig_split(ptl.tensor(a))
    w = wr.numpy() + 1j * wi.numpy()
    v = vr.numpy() + 1j * vi.numpy()
    eps = np.finfo(np.float64).eps
    scale = np.abs(a).max()
    np.testing.assert_allclose(_sorted_eigs(w), _sorted_eigs(np.linalg.eigvals(a)), rtol=0,
                               atol=1e3 * n * eps * scale)
    np.testing.assert_allclose(a @ v, v * w, rtol=0, atol=50 * n * eps * scale)
    np.testing.assert_allclose(np.linalg.norm(v, axis=0), np.ones(n), rtol=0, atol=1e-13)
    # the eigenvalue-only path
    wr2, wi2, _, _ = ptl.linalg._eig_split(ptl.tensor(a), compute_v=False)
    np.testing.assert_allclose(_sorted_eigs(wr2.numpy() + 1j * wi2.numpy()), _sorted_eigs(w),
                               rtol=0, atol=1e3 * n * eps * scale)
