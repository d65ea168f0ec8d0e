"""float32 dense linear algebra computed in float32 (Note [Float64 linear algebra] in
linalg_solve.c): the LU family (lu_factor, solve, inv, det, slogdet, solve_triangular) and
Cholesky on float32 inputs factor in float32 with the float32 GEMM, as LAPACK's sgetrf,
sgetrs, strsm and spotrf do for PyTorch.  Their results then carry float32 accuracy: the
checks here are against NumPy in float64 with PyTorch-like tolerances relative to
n * eps_f32 * cond(A).  Every size at and across the blocking thresholds (LINALG_BLOCK and
CHOLESKY_BLOCK of 64, CHOLESKY_INNER_BLOCK of 16), batched and broadcast, non-contiguous, on
one and two threads; singular and non-positive-definite inputs set the same info and raise
the same LinAlgError text as in float64."""
import re

import numpy as np
import pytest

import pytorchlite as ptl

BLOCK = 64
INNER = 16
SIZES = [1, 2, INNER - 1, INNER, INNER + 1, BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK - 1,
         2 * BLOCK, 2 * BLOCK + 1, 3 * BLOCK + 7]
EPS = float(np.finfo(np.float32).eps)


def _general(shape, seed):
    a = np.random.default_rng(seed).uniform(-1, 1, shape)
    return a + 2 * np.sqrt(shape[-1]) * np.eye(shape[-1])


def _spd(shape, seed):
    a = np.random.default_rng(seed).standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def _f32(a):
    """The float32 tensor of a, and a's float32 values in float64 (the reference's input)."""
    a32 = np.asarray(a, np.float32)
    return ptl.tensor(a32), a32.astype(np.float64)


def _cond(a):
    return float(np.max(np.linalg.cond(a)))


def _close(got, ref, a, c=8.0):
    """got (float32) is ref (float64) to c * n * eps * cond(a) relative to ref's norm."""
    assert got.dtype == ptl.float32
    got, ref = got.numpy().astype(np.float64), np.asarray(ref, np.float64)
    assert got.shape == ref.shape
    n = a.shape[-1]
    scale = max(float(np.max(np.abs(ref))), 1e-30)
    err = float(np.max(np.abs(got - ref), initial=0.0)) / scale
    assert err <= c * max(n, 1) * EPS * _cond(a), (err, n, _cond(a))


def _not_float64_grade(got, ref):
    """At least one entry differs from ref, pytorchlite's float64 result on the same values,
    rounded to float32 (what float32 inputs got when they were computed in float64): the
    work really ran in float32."""
    return not np.array_equal(got.numpy(), ref.numpy().astype(np.float32))


@pytest.mark.parametrize("n", SIZES)
def test_solve_inv_det_across_blocks(n, threads):
    A, a = _f32(_general((n, n), n))
    B, b = _f32(np.random.default_rng(n + 1).standard_normal((n, 3)))
    _close(ptl.linalg.solve(A, B), np.linalg.solve(a, b), a)
    _close(ptl.linalg.solve(A, B.mT, left=False), np.linalg.solve(a.T, b).T, a)
    _close(ptl.linalg.inv(A), np.linalg.inv(a), a)
    sign, logabs = ptl.linalg.slogdet(A)
    rs, rl = np.linalg.slogdet(a)
    assert sign.dtype == logabs.dtype == ptl.float32
    assert float(sign) == rs
    assert abs(float(logabs) - rl) <= 8 * n * EPS * _cond(a) * max(abs(rl), 1.0)
    # det of the matrix scaled to a unit diagonal: within float32's range at every n
    D, d = _f32(a / (2 * np.sqrt(n)))
    det = ptl.linalg.det(D)
    assert det.dtype == ptl.float32
    assert abs(float(det) / np.linalg.det(d) - 1) <= 8 * n * EPS * _cond(d)


@pytest.mark.parametrize("n", SIZES)
def test_lu_factor_reconstructs_across_blocks(n, threads):
    A, a = _f32(np.random.default_rng(n).uniform(-1, 1, (n, n)))
    LU, piv = ptl.linalg.lu_factor(A)
    assert LU.dtype == ptl.float32 and piv.dtype == ptl.int32
    lu, p = LU.numpy().astype(np.float64), piv.numpy()
    L, U = np.tril(lu, -1) + np.eye(n), np.triu(lu)
    perm = np.arange(n)
    for i, q in enumerate(p):
        assert i < q <= n or q == i + 1
        perm[[i, q - 1]] = perm[[q - 1, i]]
    # partial pivoting keeps |L| <= 1; backward error of order n * eps * |L| |U|
    assert np.max(np.abs(L)) <= 1.0
    err = np.max(np.abs(a[perm] - L @ U))
    assert err <= 4 * n * EPS * np.max(np.abs(L) @ np.abs(U)), err


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_across_blocks(n, upper, threads):
    A, a = _f32(_spd((n, n), n))
    L = ptl.linalg.cholesky(A, upper=upper)
    ref = np.linalg.cholesky(a)
    _close(L, ref.T if upper else ref, a, c=2.0)
    off = np.triu(L.numpy(), 1) if not upper else np.tril(L.numpy(), -1)
    assert np.count_nonzero(off) == 0


@pytest.mark.parametrize("n", [INNER + 1, BLOCK + 1, 2 * BLOCK + 1])
def test_float32_is_computed_in_float32(n):
    # float64 work rounded at the end would equal the float64 result rounded to float32
    A, _ = _f32(_spd((n, n), 3))
    B, _ = _f32(np.random.default_rng(4).standard_normal((n, 4)))
    A64, B64 = A.double(), B.double()
    L = ptl.linalg
    assert _not_float64_grade(L.cholesky(A), L.cholesky(A64))
    assert _not_float64_grade(L.solve(A, B), L.solve(A64, B64))
    assert _not_float64_grade(L.inv(A), L.inv(A64))
    assert _not_float64_grade(L.solve_triangular(A, B, upper=True),
                              L.solve_triangular(A64, B64, upper=True))
    assert _not_float64_grade(L.qr(A)[1], L.qr(A64)[1])


@pytest.mark.parametrize("n", [INNER + 1, BLOCK, BLOCK + 1, 2 * BLOCK + 3])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular_across_blocks(n, upper, left, unit, threads):
    g = np.random.default_rng(n)
    t = g.uniform(-1, 1, (n, n)) / np.sqrt(n) + np.diag(g.uniform(1, 2, n))
    t = np.triu(t) if upper else np.tril(t)
    T, t = _f32(t)
    B, b = _f32(g.standard_normal((n, 5) if left else (5, n)))
    tt = t - np.diag(np.diag(t)) + np.eye(n) if unit else t
    ref = np.linalg.solve(tt, b) if left else np.linalg.solve(tt.T, b.T).T
    got = ptl.linalg.solve_triangular(T, B, upper=upper, left=left, unitriangular=unit)
    _close(got, ref, tt)


def test_batched_broadcast_and_non_contiguous(threads):
    n = BLOCK + 5
    a = _general((3, n, n), 7)
    A, a = _f32(a)
    At = A.mT  # non-contiguous: the transposes of the matrices
    aT = np.swapaxes(a, -1, -2)
    B, b = _f32(np.random.default_rng(8).standard_normal((2, 1, n, 2)))
    _close(ptl.linalg.solve(At, B), np.linalg.solve(aT, b), aT)
    _close(ptl.linalg.inv(At), np.linalg.inv(aT), aT)
    d = aT / (2 * np.sqrt(n))  # a unit diagonal: det within float32's range
    _close(ptl.linalg.det(At[:, None] / (2 * np.sqrt(n))).reshape(3), np.linalg.det(d), d)
    s = _spd((2, n, n), 9)
    S, s = _f32(s)
    _close(ptl.linalg.cholesky(S.mT[:, ::1]), np.linalg.cholesky(np.swapaxes(s, -1, -2)), s)
    # a strided batch (every other matrix) and a strided right-hand side
    Sb = ptl.tensor(np.repeat(s.astype(np.float32), 2, axis=0))[::2]
    _close(ptl.linalg.cholesky(Sb), np.linalg.cholesky(s), s)
    bs = b[:, 0, :, :1]
    tri = np.tril(s)
    X = ptl.linalg.solve_triangular(ptl.tensor(tri.astype(np.float32)),
                                    B[:, 0, :, ::2], upper=False)
    _close(X, np.linalg.solve(tri, bs), tri)


def test_size_zero_and_mixed_dtypes():
    A = ptl.tensor(np.zeros((0, 4, 4), np.float32))
    assert ptl.linalg.inv(A).shape == (0, 4, 4) and ptl.linalg.inv(A).dtype == ptl.float32
    assert ptl.linalg.cholesky(A).dtype == ptl.float32
    E = ptl.tensor(np.zeros((3, 0, 0), np.float32))
    assert ptl.linalg.det(E).numpy().tolist() == [1.0, 1.0, 1.0]
    # solve_triangular promotes: float32 A with float64 B works in float64
    t = np.tril(_spd((5, 5), 1))
    b = np.random.default_rng(2).standard_normal((5, 2))
    X = ptl.linalg.solve_triangular(ptl.tensor(t.astype(np.float32)), ptl.tensor(b), upper=False)
    assert X.dtype == ptl.float64
    np.testing.assert_allclose(X.numpy(), np.linalg.solve(np.tril(t.astype(np.float32)), b),
                               rtol=1e-10, atol=1e-12)


SINGULAR_AT = [0, 5, BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK + 3]


@pytest.mark.parametrize("col", SINGULAR_AT)
def test_singular_info_and_messages_match_float64(col, threads):
    n = 3 * BLOCK
    a = _general((n, n), col)
    a[:, col] = 0.0  # U[col, col] is the first zero pivot
    batch = np.stack([_general((n, n), 1), a])
    for dt in (np.float64, np.float32):
        A = ptl.tensor(batch.astype(dt))
        _, _, info = ptl.linalg.lu_factor_ex(A)
        assert info.numpy().tolist() == [0, col + 1]
        assert ptl.linalg.inv_ex(A)[1].numpy().tolist() == [0, col + 1]
        assert ptl.linalg.solve_ex(A, A[..., :1])[1].numpy().tolist() == [0, col + 1]
        assert float(ptl.linalg.det(A)[1]) == 0.0
        sign, logabs = ptl.linalg.slogdet(A)
        assert float(sign[1]) == 0.0 and float(logabs[1]) == -np.inf
        msg = (f"linalg.inv: (Batch element 1): The diagonal element {col + 1} is zero, the "
               "inversion could not be completed because the input matrix is singular.")
        with pytest.raises(ptl.linalg.LinAlgError, match=re.escape(msg)):
            ptl.linalg.inv(A)
        with pytest.raises(ptl.linalg.LinAlgError, match=re.escape(
                "torch.linalg.solve: (Batch element 1): The solver failed because the input "
                "matrix is singular.")):
            ptl.linalg.solve(A, A[..., :1])
        with pytest.raises(RuntimeError, match=re.escape(
                f"torch.linalg.lu_factor: (Batch element 1): U[{col + 1},{col + 1}] is zero")):
            ptl.linalg.lu_factor(A)


@pytest.mark.parametrize("bad", [0, 3, INNER, INNER + 5, BLOCK - 1, BLOCK, BLOCK + 1,
                                 BLOCK + INNER + 2, 2 * BLOCK + 30])
def test_cholesky_failing_minor_in_any_block(bad, threads):
    n = 3 * BLOCK
    a = _spd((n, n), 2)
    a[bad, :] = a[:, bad] = 0.0
    a[bad, bad] = -1.0
    A = ptl.tensor(a.astype(np.float32))
    L, info = ptl.linalg.cholesky_ex(A)
    assert L.dtype == ptl.float32 and int(info) == bad + 1
    with pytest.raises(ptl.linalg.LinAlgError, match=re.escape(
            "linalg.cholesky: The factorization could not be completed because the input is "
            f"not positive-definite (the leading minor of order {bad + 1} is not "
            "positive-definite).")):
        ptl.linalg.cholesky(A)
    with pytest.raises(ptl.linalg.LinAlgError, match=f"order {bad + 1} is not positive"):
        ptl.linalg.cholesky_ex(A[None].expand(2, n, n), check_errors=True)


def test_nan_and_inf_inputs_do_not_hang():
    a = _spd((BLOCK + 3, BLOCK + 3), 1).astype(np.float32)
    a[7, 7] = np.nan
    _, info = ptl.linalg.cholesky_ex(ptl.tensor(a))
    assert int(info) == 8
    x = ptl.linalg.solve(ptl.tensor(a), ptl.tensor(np.ones((BLOCK + 3, 1), np.float32)))
    assert np.isnan(x.numpy()).any()


FEW_RHS = 8  # TRI_FEW_RHS: fewer right-hand sides are substituted column by column


@pytest.mark.parametrize("k", [1, 2, FEW_RHS - 1, FEW_RHS, FEW_RHS + 1])
@pytest.mark.parametrize("n", [INNER + 1, BLOCK + 1, 2 * BLOCK + 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_few_right_hand_sides(k, n, dtype, threads):
    g = np.random.default_rng(k * 1000 + n)
    t = np.tril(g.uniform(-1, 1, (n, n)) / np.sqrt(n)) + np.diag(g.uniform(1, 2, n))
    t = t.astype(dtype).astype(np.float64)
    b = g.standard_normal((2, n, k)).astype(dtype).astype(np.float64)
    a = _general((n, n), k).astype(dtype).astype(np.float64)
    T, B, A = (ptl.tensor(x.astype(dtype)) for x in (t, b, a))
    cases = [
        (ptl.linalg.solve_triangular(T, B, upper=False), np.linalg.solve(t, b), t),
        (ptl.linalg.solve_triangular(T.mT, B, upper=True, unitriangular=True),
         np.linalg.solve(np.triu(t.T, 1) + np.eye(n), b), np.triu(t.T, 1) + np.eye(n)),
        (ptl.linalg.solve_triangular(T, B.mT, upper=False, left=False),
         np.swapaxes(np.linalg.solve(t.T, b), -1, -2), t),
        (ptl.linalg.solve(A, B), np.linalg.solve(a, b), a),
        (ptl.linalg.solve(A.expand(2, n, n), B[..., 0]),  # a batch of vectors
         np.linalg.solve(a, b[..., 0:1])[..., 0], a),
    ]
    for got, ref, m in cases:
        if dtype == np.float32:
            _close(got, ref, m)
        else:
            np.testing.assert_allclose(got.numpy(), ref, rtol=1e-10, atol=1e-11)


QR_BLOCK = 32  # Note [Blocked QR]: column blocks of 32, one block unblocked
QR_SHAPES = [(1, 1), (5, 3), (3, 5), (QR_BLOCK - 1, QR_BLOCK - 1), (QR_BLOCK, QR_BLOCK),
             (QR_BLOCK + 1, QR_BLOCK + 1), (2 * QR_BLOCK + 1, 2 * QR_BLOCK + 1),
             (3 * QR_BLOCK + 5, QR_BLOCK + 1), (QR_BLOCK + 1, 3 * QR_BLOCK + 5),
             (2 * BLOCK + 3, 2 * BLOCK + 3)]


@pytest.mark.parametrize("m, n", QR_SHAPES)
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_across_blocks(m, n, mode, threads):
    A, a = _f32(np.random.default_rng(m * 100 + n).standard_normal((m, n)))
    Q, R = ptl.linalg.qr(A, mode=mode)
    k = min(m, n)
    assert R.dtype == ptl.float32 and R.shape == ((m, n) if mode == "complete" else (k, n))
    r = R.numpy().astype(np.float64)
    assert np.count_nonzero(np.tril(r, -1)) == 0
    # the same Householder convention as LAPACK: R is NumPy's to n eps cond(A)
    _close(R, np.linalg.qr(a, mode="complete" if mode == "complete" else "reduced")[1], a)
    if mode == "r":
        assert Q.shape == (0,)
        return
    q = Q.numpy().astype(np.float64)
    assert Q.dtype == ptl.float32 and q.shape == (m, m if mode == "complete" else k)
    tol = 8 * max(m, n) * EPS
    assert np.max(np.abs(q.T @ q - np.eye(q.shape[1]))) <= tol
    assert np.max(np.abs(q @ r - a)) <= tol * np.max(np.abs(a)) * np.sqrt(max(m, n))


def test_qr_batched_non_contiguous_and_in_float32(threads):
    m, n = 2 * QR_BLOCK + 3, QR_BLOCK + 9
    A, a = _f32(np.random.default_rng(3).standard_normal((3, n, m)))
    Q, R = ptl.linalg.qr(A.mT)  # non-contiguous: the transposes
    at = np.swapaxes(a, -1, -2)
    _close(R, np.linalg.qr(at)[1], at)
    qr = np.einsum("bij,bjk->bik", Q.numpy().astype(np.float64), R.numpy().astype(np.float64))
    assert np.max(np.abs(qr - at)) <= 8 * m * EPS * np.max(np.abs(at)) * np.sqrt(m)
    assert _not_float64_grade(R, ptl.linalg.qr(A.mT.double())[1])
