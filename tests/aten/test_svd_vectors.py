"""The singular vectors by Householder bidiagonalization and QR steps on the bidiagonal (svd.c,
Note [Singular vectors]): linalg.svd with full_matrices True and False, pinv built on it,
and lstsq with each driver.  References:
numpy.linalg in float64.  The vectors may differ from LAPACK's by sign (and, for a repeated
value, by a rotation), so the checks are U diag(S) V^T = A, U^T U = I, V V^T = I, S against
numpy, and |U|, |V| columns against numpy's where the values are well separated."""
import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck

from helpers import assert_close


def _np(t):
    return np.array(t.numpy(), dtype=np.float64)


def _check(a, U, S, Vh, full, tol):
    """a: float64 ndarray [*, m, n]; the factors against numpy's."""
    m, n = a.shape[-2:]
    k = min(m, n)
    nu, ns, nvh = np.linalg.svd(a, full_matrices=full)
    assert tuple(U.shape) == nu.shape and tuple(S.shape) == ns.shape
    assert tuple(Vh.shape) == nvh.shape
    u, s, vh = _np(U), _np(S), _np(Vh)
    scale = max(np.abs(ns).max(initial=0), 1e-300)
    np.testing.assert_allclose(s, ns, atol=tol * scale, rtol=0)
    eu = np.broadcast_to(np.eye(u.shape[-1]), u.shape[:-2] + (u.shape[-1],) * 2)
    ev = np.broadcast_to(np.eye(vh.shape[-2]), vh.shape[:-2] + (vh.shape[-2],) * 2)
    np.testing.assert_allclose(np.swapaxes(u, -1, -2) @ u, eu, atol=tol)
    np.testing.assert_allclose(vh @ np.swapaxes(vh, -1, -2), ev, atol=tol)
    rec = (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]
    np.testing.assert_allclose(rec, a, atol=tol * scale)
    assert np.all(np.diff(s, axis=-1) <= 0)
    return u, s, vh, nu, ns, nvh


# sizes at and across the thresholds: the QR first when r >= 5c/3 (5x3, 4x3, 50x30, 49x30),
# the blocked Q formation's 32-column blocks (32, 33, 64, 65), rotate_rows's 16-column
# blocks (15, 16, 17, 31), and the sizes of the benchmarks
SHAPES = [(1, 1), (2, 1), (1, 2), (2, 2), (5, 3), (3, 5), (4, 3), (3, 4), (50, 30), (30, 50),
          (49, 30), (30, 49), (15, 15), (16, 16), (17, 17), (31, 31), (32, 32), (33, 33),
          (64, 33), (33, 64), (65, 65), (64, 17), (17, 64), (100, 60), (256, 64), (64, 256),
          (200, 3), (3, 200)]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [ptl.float64, ptl.float32])
@pytest.mark.parametrize("shape", SHAPES)
def test_random_shapes_match_numpy(shape, dtype, threads):
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        a = np.random.default_rng(sum(shape)).standard_normal(shape)
        a = a.astype(np.float32 if dtype == ptl.float32 else np.float64).astype(np.float64)
        tol = 1e-12 if dtype == ptl.float64 else 2e-5
        for full in (True, False):
            U, S, Vh = ptl.linalg.svd(ptl.tensor(a, dtype=dtype), full_matrices=full)
            assert U.dtype == dtype and S.dtype == dtype and Vh.dtype == dtype
            u, s, vh, nu, ns, nvh = _check(a, U, S, Vh, full, tol)
            # distinct values: each vector is numpy's up to sign
            k = min(shape)
            gap = np.min(np.diff(ns), initial=-1.0) if k > 1 else -1.0
            if -gap > 1e-3 * ns[0] and dtype == ptl.float64:
                np.testing.assert_allclose(np.abs(u[:, :k]), np.abs(nu[:, :k]), atol=1e-8)
                np.testing.assert_allclose(np.abs(vh[:k]), np.abs(nvh[:k]), atol=1e-8)
    finally:
        ptl.set_num_threads(old)


def _with_values(s, m, n, seed):
    g = np.random.default_rng(seed)
    q1, _ = np.linalg.qr(g.standard_normal((m, m)))
    q2, _ = np.linalg.qr(g.standard_normal((n, n)))
    k = min(m, n)
    return (q1[:, :k] * s) @ q2[:k, :]


def _values(case, k):
    return {"rank1": np.r_[1.0, np.zeros(k - 1)],
            "rank_half": np.r_[np.ones(k // 2), np.zeros(k - k // 2)],
            "zero": np.zeros(k), "repeated": np.ones(k),
            "pairs": np.repeat(np.arange(k // 2 + 1, 0, -1), 2)[:k] * 1.0,
            "graded": 10.0 ** -np.arange(k, dtype=np.float64),
            "ill_conditioned": np.logspace(0, -15, k)}[case]


@pytest.mark.parametrize("m,n", [(40, 40), (70, 30), (30, 70), (120, 20), (64, 64)])
@pytest.mark.parametrize("case", ["rank1", "rank_half", "zero", "repeated", "pairs", "graded",
                                  "ill_conditioned"])
def test_structured_values(case, m, n):
    a = _with_values(_values(case, min(m, n)), m, n, seed=m + n)
    for full in (True, False):
        U, S, Vh = ptl.linalg.svd(ptl.tensor(a), full_matrices=full)
        _check(a, U, S, Vh, full, 1e-12)


@pytest.mark.parametrize("layout", ["transposed", "sliced", "expanded"])
@pytest.mark.parametrize("shape", [(3, 40, 25), (2, 2, 25, 40), (4, 90, 20), (2, 0, 5),
                                   (2, 5, 0), (3, 1, 1)])
def test_batched_and_strided(shape, layout):
    g = np.random.default_rng(len(shape) + shape[-1])
    if layout == "transposed":
        base = g.standard_normal(shape[:-2] + (shape[-1], shape[-2]))
        x = ptl.tensor(base).transpose(-1, -2)
        a = np.swapaxes(base, -1, -2)
    elif layout == "sliced":
        base = g.standard_normal(shape[:-1] + (2 * shape[-1],))
        x = ptl.tensor(base)[..., ::2]
        a = base[..., ::2]
    else:
        base = g.standard_normal((1,) + shape[-2:])
        x = ptl.tensor(base).expand(shape)
        a = np.broadcast_to(base, shape)
    assert not x.is_contiguous() or 0 in shape or shape[-1] == 1
    for full in (True, False):
        U, S, Vh = ptl.linalg.svd(x, full_matrices=full)
        _check(np.ascontiguousarray(a), U, S, Vh, full, 1e-12)


@pytest.mark.parametrize("shape", [(0, 4), (4, 0), (0, 0)])
def test_empty_matrices_give_identity_bases(shape):
    U, S, Vh = ptl.linalg.svd(ptl.zeros(shape, dtype=ptl.float64), full_matrices=True)
    assert_close(U, np.eye(shape[0]))
    assert_close(Vh, np.eye(shape[1]))
    assert tuple(S.shape) == (0,)
    U, S, Vh = ptl.linalg.svd(ptl.zeros(shape, dtype=ptl.float64), full_matrices=False)
    assert tuple(U.shape) == (shape[0], 0) and tuple(Vh.shape) == (0, shape[1])


@pytest.mark.parametrize("scale", [1e-300, 1e-150, 1e150, 1e300])
def test_extreme_scales(scale):
    a = np.random.default_rng(3).standard_normal((20, 12)) * scale
    U, S, Vh = ptl.linalg.svd(ptl.tensor(a), full_matrices=False)
    u, s, vh = _np(U), _np(S), _np(Vh)
    ns = np.linalg.svd(a, compute_uv=False)
    np.testing.assert_allclose(s, ns, rtol=1e-12)
    np.testing.assert_allclose(u.T @ u, np.eye(12), atol=1e-12)
    np.testing.assert_allclose((u * (s / scale)) @ vh, a / scale, atol=1e-12)


def test_non_finite_raises():
    a = ptl.ones(4, 3, dtype=ptl.float64)
    a[1, 2] = float("nan")
    with pytest.raises(RuntimeError, match="contained non-finite values"):
        ptl.linalg.svd(a)


def _invariant_loss(fn):
    # gauge invariant: U diag(S) V^T and the projector U U^T do not depend on the signs
    def loss(x):
        U, S, Vh = fn(x)
        return (U * S.unsqueeze(-2)) @ Vh, U @ U.mT, Vh.mT @ Vh
    return loss


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (5, 5), (6, 2)])
def test_gradcheck_svd_and_pinv(shape):
    a = np.random.default_rng(11).standard_normal(shape)
    x = ptl.tensor(a, requires_grad=True)
    assert gradcheck(_invariant_loss(lambda t: ptl.linalg.svd(t, full_matrices=False)), (x,))
    assert gradcheck(lambda t: ptl.linalg.pinv(t), (x,))


@pytest.mark.parametrize("dtype", [ptl.float64, ptl.float32])
@pytest.mark.parametrize("shape", [(64, 64), (256, 64), (64, 256), (7, 3), (3, 7), (2, 9, 5),
                                   (0, 3), (3, 0)])
def test_pinv_matches_numpy(shape, dtype):
    a = np.random.default_rng(5).standard_normal(shape)
    a = a.astype(np.float32 if dtype == ptl.float32 else np.float64).astype(np.float64)
    got = ptl.linalg.pinv(ptl.tensor(a, dtype=dtype))
    ref = np.linalg.pinv(a) if a.size else np.swapaxes(a, -1, -2).copy()
    tol = 1e-10 if dtype == ptl.float64 else 2e-3
    np.testing.assert_allclose(_np(got), ref, atol=tol * max(1, np.abs(ref).max(initial=0)))


@pytest.mark.parametrize("rtol,atol", [(None, None), (0.3, None), (None, 0.5), (0.1, 0.2)])
def test_pinv_tolerances_of_rank_deficient_matrices(rtol, atol):
    a = _with_values(np.array([3.0, 1.0, 0.25, 0.0]), 6, 4, seed=2)
    got = ptl.linalg.pinv(ptl.tensor(a), rtol=rtol, atol=atol)
    s = np.linalg.svd(a, compute_uv=False)
    cut = max(atol or 0.0, (rtol if rtol is not None else (0 if atol else 6 * 2.2e-16)) * s[0])
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    inv = np.where(s > cut, 1 / np.where(s > cut, s, 1), 0)
    np.testing.assert_allclose(_np(got), (vh.T * inv) @ u.T, atol=1e-12)


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("dtype", [ptl.float64, ptl.float32])
@pytest.mark.parametrize("a_shape,b_shape", [((256, 64), (256,)), ((256, 64), (256, 1)),
                                             ((256, 64), (256, 4)), ((64, 64), (64, 3)),
                                             ((40, 70), (40, 2)), ((3, 30, 20), (1, 30, 5)),
                                             ((2, 1, 9, 4), (1, 3, 9, 2)), ((5, 0), (5, 2)),
                                             ((0, 5), (0, 2))])
def test_lstsq_matches_numpy(a_shape, b_shape, dtype, driver):
    g = np.random.default_rng(len(a_shape) + a_shape[-1])
    a, b = g.standard_normal(a_shape), g.standard_normal(b_shape)
    npdt = np.float32 if dtype == ptl.float32 else np.float64
    a, b = a.astype(npdt).astype(np.float64), b.astype(npdt).astype(np.float64)
    res = ptl.linalg.lstsq(ptl.tensor(a, dtype=dtype), ptl.tensor(b, dtype=dtype), driver=driver)
    vec = len(b_shape) == 1
    bb = b[:, None] if vec else b
    batch = np.broadcast_shapes(a_shape[:-2], bb.shape[:-2])
    nb = int(np.prod(batch))
    aa = np.broadcast_to(a, batch + a_shape[-2:]).reshape((nb,) + a_shape[-2:])
    bm = np.broadcast_to(bb, batch + bb.shape[-2:]).reshape((aa.shape[0],) + bb.shape[-2:])
    ref = np.stack([np.linalg.lstsq(x, y, rcond=None)[0] for x, y in zip(aa, bm)])
    ref = ref.reshape(batch + (a_shape[-1], bb.shape[-1]))
    if vec:
        ref = ref[..., 0]
    assert res.solution.dtype == dtype
    tol = 1e-9 if dtype == ptl.float64 else 2e-3
    np.testing.assert_allclose(_np(res.solution), ref,
                               atol=tol * max(1, np.abs(ref).max(initial=0)))
    m, n = a_shape[-2:]
    if (driver or "gelsy") == "gelsy":
        assert_close(res.rank, np.full(a_shape[:-2], min(m, n), dtype=np.int64))
    elif driver == "gels":
        assert res.rank.numel() == 0
    assert res.singular_values.numel() == (0 if driver in (None, "gels", "gelsy") else
                                           res.singular_values.numel())


@pytest.mark.parametrize("m,n,rank", [(30, 10, 6), (10, 10, 9), (10, 30, 4), (64, 64, 63)])
def test_lstsq_rank_deficient(m, n, rank):
    g = np.random.default_rng(m + n + rank)
    a = g.standard_normal((m, rank)) @ g.standard_normal((rank, n))
    b = g.standard_normal((m, 2))
    res = ptl.linalg.lstsq(ptl.tensor(a), ptl.tensor(b))
    assert int(res.rank) == rank
    np.testing.assert_allclose(_np(res.solution), np.linalg.lstsq(a, b, rcond=None)[0],
                               atol=1e-8)


def test_lstsq_equal_columns():
    a = np.random.default_rng(4).standard_normal((12, 5))
    a[:, 1] = a[:, 0]
    assert int(ptl.linalg.lstsq(ptl.tensor(a), ptl.tensor(np.ones((12, 1)))).rank) == 4


def test_lstsq_gradient():
    a = np.random.default_rng(8).standard_normal((6, 3))
    b = np.random.default_rng(9).standard_normal((6, 2))
    A = ptl.tensor(a, requires_grad=True)
    X = ptl.linalg.lstsq(A, ptl.tensor(b)).solution
    X.sum().backward()
    assert A.grad is not None and tuple(A.grad.shape) == (6, 3)
    assert gradcheck(lambda t: ptl.linalg.lstsq(t, ptl.tensor(b)).solution,
                     (ptl.tensor(a, requires_grad=True),))


@pytest.mark.parametrize("top", [-9.0, -13.0])
@pytest.mark.parametrize("m,n", [(30, 20), (20, 30)])
def test_lstsq_ill_conditioned_full_rank(m, n, top):
    # -9: ||R||_F ||R^-1||_F < 1 / rcond proves full rank; -13: it does not, and the rank
    # comes from the singular values (full either way)
    a = _with_values(np.logspace(0, top, min(m, n)), m, n, seed=3)
    b = np.random.default_rng(4).standard_normal((m, 2))
    res = ptl.linalg.lstsq(ptl.tensor(a), ptl.tensor(b))
    assert int(res.rank) == min(m, n) == np.linalg.matrix_rank(a)
    x, ref = _np(res.solution), np.linalg.lstsq(a, b, rcond=None)[0]
    # as small a residual as LAPACK's, to the rounding that the condition number amplifies
    assert np.linalg.norm(a @ x - b) <= 1.5 * np.linalg.norm(a @ ref - b) + 1e-6


def test_lstsq_broadcast_batch_with_a_rank_deficient_matrix():
    # B's batch broadcasts A's; one of A's matrices is rank deficient, so the rank comes from
    # the singular values, shaped as A's batch as in PyTorch
    g = np.random.default_rng(6)
    a = g.standard_normal((2, 1, 9, 4))
    a[1, 0, :, 3] = a[1, 0, :, 2]
    b = g.standard_normal((1, 3, 9, 2))
    res = ptl.linalg.lstsq(ptl.tensor(a), ptl.tensor(b))
    assert_close(res.rank, np.array([[4], [3]]))
    ref = np.stack([np.stack([np.linalg.lstsq(a[i, 0], b[0, j], rcond=None)[0]
                              for j in range(3)]) for i in range(2)])
    np.testing.assert_allclose(_np(res.solution), ref, atol=1e-8)
