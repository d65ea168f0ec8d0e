"""torch.linalg.lstsq's QR drivers ('gels', and 'gelsy', the default) through the native
_linalg_lstsq_qr (src/aten/native/linalg_lstsq.c, Note [Least squares by one QR]): one
Householder QR of [A B] (tall) or of A^T (wide), blocked from 32 columns, the rank proved
from R or else counted from the singular values by linalg.py (the SVD path then for a rank
deficient matrix).  References: np.linalg.lstsq in float64 per matrix on random shapes
(size-0 dims, broadcast batch dims, vector B, non-contiguous layouts, float32 and float64,
both sides of the QR's block size, 1 and 2 threads); PyTorch's messages for every error;
gradcheck in float64 (a recorded gradient takes the differentiable composite); the
installed torch where it is present."""
import re

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck

from helpers import (assert_close, assert_no_leak, assert_raises_like_torch, make, num_threads,
                     torch, torch_ref)


def _np_lstsq(a, b, vec):
    """np.linalg.lstsq per matrix, batch dims broadcast: (X, residuals per column)."""
    bm = b[..., None] if vec else b
    batch = np.broadcast_shapes(a.shape[:-2], bm.shape[:-2])
    m, n, k = a.shape[-2], a.shape[-1], bm.shape[-1]
    count = int(np.prod(batch))
    aa = np.broadcast_to(a, batch + a.shape[-2:]).reshape((count, m, n))
    bb = np.broadcast_to(bm, batch + bm.shape[-2:]).reshape((count, m, k))
    xs, rs = [], []
    for x, y in zip(aa, bb):
        if min(m, n) == 0:
            xs.append(np.zeros((n, k)))
            rs.append(np.zeros(k))
            continue
        sol = np.linalg.lstsq(x, y, rcond=None)[0]
        xs.append(sol)
        rs.append(((x @ sol - y) ** 2).sum(0))
    x = np.array(xs).reshape(batch + (n,) + (() if vec else (k,))) if xs else \
        np.zeros(batch + (n,) + (() if vec else (k,)))
    return x, np.zeros(batch + (k,)) if not rs else np.array(rs).reshape(batch + (k,))


def _check(A, B, a, b, driver, tol):
    vec = B.dim() == 1 or (B.dim() == A.dim() - 1 and B.shape == A.shape[:-1])
    res = ptl.linalg.lstsq(A, B, driver=driver)
    assert type(res).__name__ == "linalg_lstsq"
    x, r = _np_lstsq(a, b, vec)
    assert res.solution.dtype == A.dtype
    assert_close(res.solution, x, rtol=tol, atol=tol)
    m, n = a.shape[-2:]
    if driver == "gels" and m > n:
        assert_close(res.residuals, r, rtol=tol, atol=tol * max(1.0, float(np.abs(r).max(
            initial=0))))
    else:
        assert res.residuals.shape == (0,)
    if driver == "gels":
        assert res.rank.shape == (0,)
    else:
        # rank has A's batch shape (PyTorch's), 0 without right-hand sides
        full = min(m, n) if (b.shape[-1] if b.ndim == a.ndim else 1) else 0
        assert_close(res.rank, np.full(a.shape[:-2], full, dtype=np.int64))
    assert res.singular_values.shape == (0,)
    assert res.residuals.dtype == res.singular_values.dtype == A.dtype
    return res


SHAPES = [
    ((6, 3), (6, 2)), ((3, 6), (3, 2)), ((4, 4), (4, 1)), ((5, 3), (5,)), ((3, 5), (3,)),
    ((2, 5, 3), (2, 5, 4)), ((2, 3, 5), (2, 3)), ((2, 1, 5, 3), (1, 3, 5, 2)),
    ((1, 5, 3), (4, 5, 2)), ((1, 6, 2), (3, 6, 1)),
    # size 0: no rows, no columns, no right-hand sides, no matrices
    ((0, 3), (0, 2)), ((3, 0), (3, 2)), ((0, 0), (0, 1)), ((4, 3), (4, 0)), ((3, 4), (3, 0)),
    ((0, 4, 3), (0, 4, 2)), ((0, 4, 3), (0, 4)),
    # around the QR's 32-column block: [A B] has n + nrhs columns, A^T m
    ((40, 31), (40, 1)), ((40, 32), (40, 1)), ((70, 33), (70, 2)), ((80, 64), (80, 3)),
    ((31, 45), (31, 1)), ((32, 45), (32, 2)), ((33, 70), (33, 1)), ((65, 90), (65, 2)),
    # tall with more than 0.6 n right-hand sides: Q formed, Q^T B by the GEMM
    ((9, 5), (9, 3)), ((9, 5), (9, 4)), ((70, 40), (70, 30)), ((2, 40, 3), (1, 40, 50)),
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("driver", ["gels", "gelsy"])
@pytest.mark.parametrize("a_shape, b_shape", SHAPES)
def test_lstsq_qr_matches_numpy(a_shape, b_shape, driver, threads):
    A, a = make(a_shape, ptl.float64, "contiguous", 1, -1, 1)
    B, b = make(b_shape, ptl.float64, "contiguous", 2, -1, 1)
    with num_threads(threads):
        _check(A, B, a, b, driver, 1e-9)


@pytest.mark.parametrize("layout", ["transposed", "sliced", "expanded"])
@pytest.mark.parametrize("a_shape, b_shape", [((3, 7, 4), (3, 7, 2)), ((3, 4, 7), (3, 4, 2)),
                                              ((3, 6, 4), (3, 6))])
def test_lstsq_qr_non_contiguous(a_shape, b_shape, layout):
    A, a = make(a_shape, ptl.float64, layout, 3, -1, 1)
    B, b = make(b_shape, ptl.float64, layout, 4, -1, 1)
    for driver in ("gels", "gelsy"):
        _check(A, B, np.asarray(a), np.asarray(b), driver, 1e-9)


@pytest.mark.parametrize("driver", ["gels", "gelsy", None])
@pytest.mark.parametrize("a_shape, b_shape", [((9, 4), (9, 2)), ((4, 9), (4, 2)),
                                              ((2, 50, 40), (2, 50))])
def test_lstsq_qr_float32(a_shape, b_shape, driver):
    A, a = make(a_shape, ptl.float32, "contiguous", 5, -1, 1)
    B, b = make(b_shape, ptl.float32, "contiguous", 6, -1, 1)
    _check(A, B, a.astype(np.float64), b.astype(np.float64), driver or "gelsy", 2e-4)


def test_lstsq_batch_spread_over_threads():
    A, a = make((40, 12, 5), ptl.float64, "contiguous", 7, -1, 1)
    B, b = make((40, 12, 3), ptl.float64, "contiguous", 8, -1, 1)
    for threads in (1, 2):
        with num_threads(threads):
            _check(A, B, a, b, "gels", 1e-9)
            _check(A, B, a, b, "gelsy", 1e-9)


def test_gelsy_rank_deficient_takes_the_svd_path():
    g = np.random.default_rng(9)
    low = g.standard_normal((6, 2)) @ g.standard_normal((2, 4))
    full = g.standard_normal((6, 4))
    b = g.standard_normal((2, 6, 3))
    # one deficient matrix in the batch: the rank of each is counted, X is the SVD's
    a = np.stack([full, low])
    for rcond in (None, 1e-10):
        res = ptl.linalg.lstsq(ptl.tensor(a), ptl.tensor(b), rcond=rcond)
        x = np.stack([np.linalg.lstsq(p, q, rcond=rcond)[0] for p, q in zip(a, b)])
        assert_close(res.solution, x, rtol=1e-8, atol=1e-10)
        assert_close(res.rank, np.array([4, 2]))
        assert res.residuals.shape == (0,)
    # wide, and a vector B
    res = ptl.linalg.lstsq(ptl.tensor(low.T), ptl.tensor(b[0, :4, 0]))
    assert_close(res.solution, np.linalg.lstsq(low.T, b[0, :4, 0], rcond=None)[0], rtol=1e-8,
                 atol=1e-10)
    assert_close(res.rank, np.array(2))
    # a zero matrix
    res = ptl.linalg.lstsq(ptl.zeros(3, 2, dtype=ptl.float64), ptl.ones(3, 1, dtype=ptl.float64))
    assert_close(res.solution, np.zeros((2, 1)))
    assert_close(res.rank, np.array(0))


def test_gelsy_rank_of_ill_conditioned_matrices():
    g = np.random.default_rng(10)
    q1, _ = np.linalg.qr(g.standard_normal((8, 5)))
    q2, _ = np.linalg.qr(g.standard_normal((5, 5)))
    b = g.standard_normal((8, 2))
    # cond 1e8: full rank, proved from R; cond 1e17: rank 4 by the singular values
    for last, rank in ((1e-8, 5), (1e-17, 4)):
        a = q1 @ np.diag([1, 0.5, 0.1, 0.01, last]) @ q2
        res = ptl.linalg.lstsq(ptl.tensor(a), ptl.tensor(b))
        assert_close(res.rank, np.array(rank))
        assert_close(res.solution, np.linalg.lstsq(a, b, rcond=None)[0], rtol=1e-6,
                     atol=1e-6 * np.abs(np.linalg.lstsq(a, b, rcond=None)[0]).max())
    # a large rcond counts the small values out
    a = q1 @ np.diag([1, 0.5, 0.1, 0.01, 1e-3]) @ q2
    res = ptl.linalg.lstsq(ptl.tensor(a), ptl.tensor(b), rcond=0.05)
    assert_close(res.rank, np.array(3))
    assert_close(res.solution, np.linalg.lstsq(a, b, rcond=0.05)[0], rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("n", [120, 300])
def test_gelsy_full_rank_of_square_gaussian_matrices(n):
    # the O(k^2) bound of Note [Least squares by one QR] holds at 120 rows; at 300 it is
    # above 1 / rcond and the bound from R^-1 proves the rank
    g = np.random.default_rng(n)
    a, b = g.standard_normal((n, n)), g.standard_normal((n, 2))
    res = ptl.linalg.lstsq(ptl.tensor(a), ptl.tensor(b))
    assert_close(res.rank, np.array(n))
    assert_close(res.solution, np.linalg.solve(a, b), rtol=1e-8, atol=1e-8)


def test_gels_of_a_singular_matrix_raises():
    a = np.zeros((4, 3))
    a[:, 0] = 1
    with pytest.raises(ptl.linalg.LinAlgError, match=re.escape(
            "torch.linalg.lstsq: The least squares solution could not be computed because the "
            "input matrix does not have full rank (error code: 2).")):
        ptl.linalg.lstsq(ptl.tensor(a), ptl.ones(4, 1, dtype=ptl.float64), driver="gels")
    batch = np.stack([np.eye(4, 3), a])
    with pytest.raises(ptl.linalg.LinAlgError, match=re.escape(
            "torch.linalg.lstsq: (Batch element 1): The least squares solution could not be "
            "computed because the input matrix does not have full rank (error code: 2).")):
        ptl.linalg.lstsq(ptl.tensor(batch), ptl.ones(2, 4, dtype=ptl.float64), driver="gels")
    with pytest.raises(ptl.linalg.LinAlgError, match=re.escape("(error code: 2)")):
        ptl.linalg.lstsq(ptl.tensor(a.T.copy()), ptl.ones(3, 1, dtype=ptl.float64),
                         driver="gels")
    # many right-hand sides (Q formed)
    with pytest.raises(ptl.linalg.LinAlgError, match=re.escape("(error code: 2)")):
        ptl.linalg.lstsq(ptl.tensor(a), ptl.ones(4, 3, dtype=ptl.float64), driver="gels")


ERRORS = [
    ("dim", lambda L: L.linalg.lstsq(L.ones(3), L.ones(3)), RuntimeError,
     "torch.linalg.lstsq: input must have at least 2 dimensions."),
    ("dtype", lambda L: L.linalg.lstsq(L.ones(3, 2), L.ones(3, 1, dtype=L.float64)),
     RuntimeError, "torch.linalg.lstsq: Expected input and other to have the same dtype, but "
     "got input's dtype Float and other's dtype Double"),
    ("other-dim", lambda L: L.linalg.lstsq(L.ones(2, 3, 2), L.ones(3)), RuntimeError,
     "torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and "
     "(input.dim() - other.dim()) <= 1"),
    ("other-dim-more", lambda L: L.linalg.lstsq(L.ones(3, 2), L.ones(2, 3, 1)), RuntimeError,
     "torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and "
     "(input.dim() - other.dim()) <= 1"),
    ("rows", lambda L: L.linalg.lstsq(L.ones(3, 2), L.ones(4, 1), driver="foo"), RuntimeError,
     "torch.linalg.lstsq: input.size(-2) should match other.size(-2)"),
    ("rows-vector", lambda L: L.linalg.lstsq(L.ones(3, 2), L.ones(4)), RuntimeError,
     "torch.linalg.lstsq: input.size(-2) should match other.size(-1)"),
    ("driver", lambda L: L.linalg.lstsq(L.ones(3, 2), L.ones(3, 1), driver="gelsx"),
     RuntimeError, "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, "
     "gelsd, gelss)"),
    ("long", lambda L: L.linalg.lstsq(L.ones(3, 2, dtype=L.int64), L.ones(3, 1, dtype=L.int64)),
     RuntimeError, "This function doesn't handle types other than float and double"),
    ("batch", lambda L: L.linalg.lstsq(L.ones(2, 3, 2), L.ones(3, 3, 1)), RuntimeError,
     "The size of tensor a (2) must match the size of tensor b (3) at non-singleton "
     "dimension 0"),
    # a B of one dimension less that is no batch of vectors: its leading dimensions are
    # broadcast with A's batch, its last dimension included
    ("batch-matrix-b", lambda L: L.linalg.lstsq(L.ones(2, 4, 3), L.ones(4, 2)), RuntimeError,
     "The size of tensor a (2) must match the size of tensor b (4) at non-singleton "
     "dimension 0"),
    ("batch-matrix-b-4d", lambda L: L.linalg.lstsq(L.ones(2, 1, 4, 3), L.ones(3, 4, 2)),
     RuntimeError, "The size of tensor a (2) must match the size of tensor b (3) at "
     "non-singleton dimension 0"),
    ("batch-matrix-b-grad", lambda L: L.linalg.lstsq(
        L.ones(2, 4, 3, requires_grad=True), L.ones(4, 2), driver="gelsd"), RuntimeError,
     "The size of tensor a (2) must match the size of tensor b (4) at non-singleton "
     "dimension 0"),
    ("rows-batch-of-vectors", lambda L: L.linalg.lstsq(L.ones(2, 4, 3), L.ones(3, 4)),
     RuntimeError, "torch.linalg.lstsq: input.size(-2) should match other.size(-2)"),
]


@pytest.mark.parametrize("name, fn, exc, msg", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_like_torch(name, fn, exc, msg):
    assert_raises_like_torch(fn, exc, msg)


@pytest.mark.parametrize("driver", ["gels", "gelsy", "gelsd"])
@pytest.mark.parametrize("a_shape, b_shape, batch", [((1, 4, 3), (4, 4), (4,)),
                                                     ((3, 1, 4, 3), (1, 4, 2), (3, 4)),
                                                     ((1, 3, 5), (3, 2), (3,))])
def test_b_of_one_dimension_less_broadcasts_as_pytorch(a_shape, b_shape, batch, driver):
    """A B with one dimension less than A that is not a batch of vectors: PyTorch broadcasts
    A's batch with all of B's dimensions but the last, and solves each element of that batch
    against B's last two dimensions."""
    A, a = make(a_shape, ptl.float64, "contiguous", 15, -1, 1)
    B, b = make(b_shape, ptl.float64, "contiguous", 16, -1, 1)
    a_all = np.broadcast_to(a, batch + a.shape[-2:])
    b_all = np.broadcast_to(b, batch + b.shape[-2:])
    x, _ = _np_lstsq(a_all, b_all, False)
    for grad in (False, True):
        got = ptl.linalg.lstsq(A.requires_grad_(grad), B, driver=driver).solution
        assert got.shape == batch + (a.shape[-1], b.shape[-1])
        assert_close(got.detach(), x, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("driver", ["gels", "gelsy"])
@pytest.mark.parametrize("shapes", [[(5, 3), (5, 2)], [(2, 3, 5), (2, 3)],
                                    [(2, 1, 4, 2), (1, 3, 4, 1)]])
def test_gradcheck(shapes, driver):
    xs = [make(s, ptl.float64, "contiguous", i + 11, -1, 1)[0].requires_grad_()
          for i, s in enumerate(shapes)]
    assert gradcheck(lambda a, b: ptl.linalg.lstsq(a, b, driver=driver).solution, xs)
    if shapes[0][-2] > shapes[0][-1] and driver == "gels":
        assert gradcheck(lambda a, b: ptl.linalg.lstsq(a, b, driver=driver).residuals, xs)
    # the composite a gradient takes and the kernel agree
    with_grad = ptl.linalg.lstsq(*xs, driver=driver)
    with ptl.no_grad():
        plain = ptl.linalg.lstsq(*xs, driver=driver)
    for got, ref in zip(with_grad, plain):
        assert got.shape == ref.shape
        assert_close(got.detach(), ref.numpy(), rtol=1e-10, atol=1e-12)


def test_only_b_requires_grad():
    A, _ = make((5, 3), ptl.float64, "contiguous", 12, -1, 1)
    B, _ = make((5, 2), ptl.float64, "contiguous", 13, -1, 1)
    assert gradcheck(lambda b: ptl.linalg.lstsq(A, b).solution, [B.requires_grad_()])


@torch_ref
@pytest.mark.parametrize("driver", ["gels", "gelsy", "gelsd"])
@pytest.mark.parametrize("a_shape, b_shape", [((6, 3), (6, 2)), ((3, 6), (3, 2)),
                                              ((2, 5, 3), (2, 5)), ((2, 1, 5, 3), (1, 3, 5, 1)),
                                              ((3, 0), (3, 2)), ((0, 4, 3), (0, 4)),
                                              ((4, 3), (4, 0))])
def test_matches_torch(a_shape, b_shape, driver):
    if driver == "gelsd" and b_shape[-1] == 0:
        pytest.skip("PyTorch 2.13's gelsd fails on B without columns (MKL: parameter 4)")
    g = np.random.default_rng(14)
    a, b = g.standard_normal(a_shape), g.standard_normal(b_shape)
    ours = ptl.linalg.lstsq(ptl.tensor(a), ptl.tensor(b), driver=driver)
    ref = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
    for name in ("solution", "residuals", "rank"):
        got, want = getattr(ours, name), getattr(ref, name)
        assert tuple(got.shape) == tuple(want.shape), name
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("n", [12, 17, 64, 100])
def test_gelsy_float32_square_ranks(n):
    # float32's rcond (eps * n, 2^29 times float64's) leaves the O(k^2) bound behind at
    # these sizes: R^-1 (recursive, leaves of 16 rows) proves the rank; a matrix whose last
    # singular value is below rcond * the largest is counted deficient by the SVD
    g = np.random.default_rng(n)
    q1, _ = np.linalg.qr(g.standard_normal((n, n)))
    q2, _ = np.linalg.qr(g.standard_normal((n, n)))
    b = g.standard_normal((n, 2)).astype(np.float32)
    for last, rank in ((0.05, n), (1e-9, n - 1)):
        s = np.linspace(1, 0.1, n)
        s[-1] = last
        a = (q1 @ np.diag(s) @ q2).astype(np.float32)
        res = ptl.linalg.lstsq(ptl.tensor(a), ptl.tensor(b))
        assert_close(res.rank, np.array(rank))
        ref = np.linalg.lstsq(a.astype(np.float64), b.astype(np.float64),
                              rcond=np.finfo(np.float32).eps * n)[0]
        assert_close(res.solution, ref, rtol=1e-3, atol=1e-3 * np.abs(ref).max())


def test_no_leak():
    A, _ = make((3, 6, 4), ptl.float64, "contiguous", 15, -1, 1)
    B, _ = make((3, 6, 2), ptl.float64, "contiguous", 16, -1, 1)
    singular = ptl.zeros(4, 3, dtype=ptl.float64)

    def calls():
        for driver in ("gels", "gelsy"):
            ptl.linalg.lstsq(A, B, driver=driver)
            ptl.linalg.lstsq(A.mT, B[..., :4, :], driver=driver)
        ptl.linalg.lstsq(singular, ptl.ones(4, 1, dtype=ptl.float64))
        with pytest.raises(ptl.linalg.LinAlgError):
            ptl.linalg.lstsq(singular, ptl.ones(4, 1, dtype=ptl.float64), driver="gels")
        with pytest.raises(RuntimeError):
            ptl.linalg._lstsq_qr(A, B[..., :5, :], None)
    assert_no_leak(calls)
