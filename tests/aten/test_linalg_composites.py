"""The composites of pytorchlite/linalg.py over the linear-algebra operators: lstsq (QR or
SVD by driver), pinv, matrix_rank, matrix_exp (scaling and squaring with a Pade approximant)
and matrix_power (also torch.matrix_power and Tensor.matrix_power), and those of
pytorchlite/functional.py: inner, addr, addbmm, dist, logdet, pinverse and vander.  References:
numpy.linalg in float64 (matrix_exp: the eigendecomposition of a diagonalisable matrix) on
batched, size-0 and transposed inputs; error paths with PyTorch's text; gradcheck and
gradgradcheck in float64 (autograd flows through the operators); the installed torch where
it is present."""
import re

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck, gradgradcheck

from helpers import assert_close, assert_raises_like_torch, make, torch, torch_ref


def _np_expm(a):
    """exp of the diagonalisable matrices of a from their eigendecomposition."""
    w, v = np.linalg.eig(a)
    return np.real(v @ (np.exp(w)[..., None] * np.linalg.inv(v)))


def _t(shape, seed=0, layout="contiguous", dtype=ptl.float64):
    t, a = make(shape, dtype, layout, seed, -1, 1)
    return t, np.asarray(a, dtype=np.float64)


@pytest.mark.parametrize("scale", [0.01, 1.0, 30.0])
@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (2, 3, 3), (0, 2, 2), (0, 0)])
def test_matrix_exp_matches_numpy(shape, scale):
    A, a = _t(shape, 1, "transposed")
    A, a = A * scale, a * scale
    E = ptl.linalg.matrix_exp(A)
    ref = _np_expm(a) if a.size else a.copy()
    assert_close(E, ref, rtol=1e-11 * max(1.0, scale), atol=1e-13)
    # float32 in, float32 out
    assert_close(ptl.linalg.matrix_exp(A.float()), ref, rtol=1e-4 * max(1.0, scale), atol=1e-5)
    assert_close(ptl.linalg.matrix_exp(ptl.zeros(3, 3)), np.eye(3))


def test_matrix_exp_of_nilpotent_and_symmetric_matrices():
    n = np.triu(np.ones((4, 4)), 1)
    ref = np.eye(4) + n + n @ n / 2 + n @ n @ n / 6
    assert_close(ptl.linalg.matrix_exp(ptl.tensor(n)), ref, rtol=1e-14, atol=1e-14)
    s = np.random.default_rng(2).standard_normal((5, 5))
    s = s + s.T
    w, v = np.linalg.eigh(s)
    assert_close(ptl.linalg.matrix_exp(ptl.tensor(s)), (v * np.exp(w)) @ v.T, rtol=1e-11)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, -1, -3])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (0, 2, 2)])
def test_matrix_power_matches_numpy(shape, n):
    A, a = _t(shape, 2)
    A, a = A + 2 * ptl.eye(shape[-1], dtype=ptl.float64), a + 2 * np.eye(shape[-1])
    assert_close(ptl.linalg.matrix_power(A, n), np.linalg.matrix_power(a, n), rtol=1e-11,
                 atol=1e-12)
    out = ptl.linalg.matrix_power(A, 1)
    assert out is not A


def test_matrix_power_of_integers():
    a = np.array([[1, 1], [1, 0]])
    assert_close(ptl.linalg.matrix_power(ptl.tensor(a), 10), np.linalg.matrix_power(a, 10))
    assert_close(ptl.matrix_power(ptl.tensor(a), 3), np.linalg.matrix_power(a, 3))
    assert_close(ptl.tensor(a).matrix_power(0), np.eye(2, dtype=np.int64), dtype=ptl.int64)


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "expanded"])
@pytest.mark.parametrize("shapes", [((3, 4), (5, 4)), ((4,), (4,)), ((2, 3, 4), (4,)),
                                    ((), (2, 3)), ((0, 4), (2, 4)), ((3, 0), (2, 0))])
def test_inner_matches_numpy(shapes, layout):
    A, a = _t(shapes[0], 1, layout)
    B, b = _t(shapes[1], 2)
    assert_close(ptl.inner(A, B), np.inner(a, b), dtype=ptl.float64, rtol=1e-13, atol=1e-14)
    assert_close(A.inner(B), np.inner(a, b), rtol=1e-13, atol=1e-14)
    assert_close(ptl.inner(ptl.tensor([1, 2]), ptl.tensor([3, 4])), np.array(11),
                 dtype=ptl.int64)


@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, 2.0), (0, 1), (0, -1.5)])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_addr_and_addbmm_match_numpy(beta, alpha, layout):
    M, m = _t((3, 4), 1, layout)
    v, va = _t((3,), 2, layout)
    w, wa = _t((4,), 3)
    B1, b1 = _t((5, 3, 2), 4, layout)
    B2, b2 = _t((5, 2, 4), 5)
    if beta == 0:   # beta == 0 ignores input, NaNs included
        M, m = M.fill_(float("nan")), np.zeros((3, 4))
    want_r = beta * m + alpha * np.outer(va, wa)
    want_b = beta * m + alpha * np.einsum("bij,bjk->ik", b1, b2)
    assert_close(ptl.addr(M, v, w, beta=beta, alpha=alpha), want_r, rtol=1e-13, atol=1e-14)
    assert_close(M.addr(v, w, beta=beta, alpha=alpha), want_r, rtol=1e-13, atol=1e-14)
    assert_close(ptl.addbmm(M, B1, B2, beta=beta, alpha=alpha), want_b, rtol=1e-13,
                 atol=1e-14)
    C = M.clone()
    assert C.addbmm_(B1, B2, beta=beta, alpha=alpha) is C
    assert_close(C, want_b, rtol=1e-13, atol=1e-14)
    assert_close(M.clone().addr_(v, w, beta=beta, alpha=alpha), want_r, rtol=1e-13, atol=1e-14)
    # a broadcast input and size-0 batches
    assert_close(ptl.addr(ptl.tensor([1.0, 2.0, 3.0, 4.0], dtype=ptl.float64), v, w),
                 np.arange(1.0, 5.0) + np.outer(va, wa), rtol=1e-13)
    assert_close(ptl.addbmm(v.view(3, 1), B1[:0], B2[:0], beta=2),
                 np.broadcast_to(2 * va[:, None], (3, 4)), rtol=1e-13)


def test_addr_and_addbmm_integers_and_errors():
    v, w = ptl.tensor([1, 2]), ptl.tensor([3, 4, 5])
    assert_close(ptl.addr(ptl.ones(2, 3, dtype=ptl.int64), v, w, alpha=2),
                 1 + 2 * np.outer([1, 2], [3, 4, 5]), dtype=ptl.int64)
    assert_raises_like_torch(lambda m: m.addr(m.ones(2, 3, dtype=m.int64), m.tensor([1, 2]),
                                              m.tensor([3, 4, 5]), beta=0.5), RuntimeError,
                             "For integral input tensors, argument beta must not be a floating "
                             "point number.")
    assert_raises_like_torch(lambda m: m.addr(m.ones(2, 2), m.ones(2, 1), m.ones(2)),
                             RuntimeError, "addr: Expected 1-D argument vec1, but got 2-D")
    assert_raises_like_torch(lambda m: m.addbmm(m.ones(2, 2), m.ones(2, 2), m.ones(1, 2, 2)),
                             RuntimeError, "batch1 must be a 3D tensor")
    assert_raises_like_torch(lambda m: m.addbmm(m.ones(2, 2), m.ones(2, 2, 2),
                                                m.ones(3, 2, 2)),
                             RuntimeError, "batch1 and batch2 must have same number of batches, "
                             "got 2 and 3")
    assert_raises_like_torch(lambda m: m.addbmm(m.ones(2, 2), m.ones(1, 2, 3),
                                                m.ones(1, 2, 2)),
                             RuntimeError, "Incompatible matrix sizes for bmm (2x3 and 2x2)")
    assert_raises_like_torch(lambda m: m.inner(m.ones(2, 3), m.ones(2)), RuntimeError,
                             "inner() the last dimension must match on both input tensors but "
                             "got shapes [2, 3] and [2]")


@pytest.mark.parametrize("N", [None, 0, 1, 2, 5])
@pytest.mark.parametrize("increasing", [False, True])
def test_vander_matches_numpy(N, increasing):
    X, x = _t((4,), 1, "sliced")
    assert_close(ptl.vander(X, N, increasing), np.vander(x, N, increasing), dtype=ptl.float64,
                 rtol=1e-13, atol=1e-14)
    i = np.array([2, -3, 0])
    assert_close(ptl.vander(ptl.tensor(i, dtype=ptl.int32), N, increasing),
                 np.vander(i, N, increasing), dtype=ptl.int64)
    assert_close(ptl.vander(ptl.tensor([True, False]), N, increasing),
                 np.vander(np.array([1, 0]), N, increasing), dtype=ptl.int64)
    assert ptl.vander(ptl.ones(0), N).shape == (0, 0 if N is None else N)


@pytest.mark.parametrize("p", [2, 1, 3.5, 0, float("inf"), -float("inf")])
def test_dist_matches_numpy(p):
    A, a = _t((3, 4), 1, "transposed")
    B, b = _t((4,), 2)
    d = np.abs(a - b).ravel()
    want = (np.count_nonzero(d) if p == 0 else d.max() if p == np.inf else
            d.min() if p == -np.inf else (d ** p).sum() ** (1 / p))
    assert_close(ptl.dist(A, B, p), np.array(want), dtype=ptl.float64, rtol=1e-13)
    assert_close(A.dist(B, p), np.array(want), rtol=1e-13)
    assert_raises_like_torch(lambda m: m.dist(m.tensor([1, 2]), m.tensor([0, 0])),
                             RuntimeError, "norm(): input dtype should be either floating "
                             "point or complex. Got Long instead.")


def test_logdet_matches_numpy():
    A, a = _t((3, 4, 4), 5, "transposed")
    sign, logabs = np.linalg.slogdet(a)
    want = np.where(sign < 0, np.nan, logabs)
    assert_close(ptl.logdet(A), want, dtype=ptl.float64, rtol=1e-12)
    assert_close(A.logdet(), want, rtol=1e-12)
    assert ptl.logdet(ptl.zeros(2, 2, dtype=ptl.float64)).item() == -np.inf
    P = (A @ A.mT + ptl.eye(4, dtype=ptl.float64)).detach().requires_grad_()
    assert gradcheck(ptl.logdet, (P,))


def test_pinverse_and_matrix_exp_names():
    A, a = _t((2, 4, 3), 3, "transposed")
    assert_close(ptl.pinverse(A), np.linalg.pinv(a), rtol=1e-11, atol=1e-12)
    assert_close(A.pinverse(rcond=0.5), np.linalg.pinv(a, rcond=0.5), rtol=1e-11, atol=1e-12)
    S, s = _t((3, 3), 4)
    assert_close(ptl.matrix_exp(S), _np_expm(s), rtol=1e-11, atol=1e-12)
    assert_close(S.matrix_exp(), _np_expm(s), rtol=1e-11, atol=1e-12)
    assert gradcheck(lambda x, y: ptl.dist(x, y, 3), (A[0].detach().requires_grad_(),
                                                      A[1].detach().requires_grad_()))


def test_vander_errors():
    assert_raises_like_torch(lambda m: m.vander(m.ones(2, 2)), RuntimeError,
                             "x must be a one-dimensional tensor.")
    assert_raises_like_torch(lambda m: m.vander(m.ones(2), N=-1), RuntimeError,
                             "N must be non-negative.")


def test_inner_addr_addbmm_vander_gradcheck():
    A = _t((3, 4), 1, "transposed")[0].requires_grad_()
    v = _t((3,), 2)[0].requires_grad_()
    w = _t((4,), 3)[0].requires_grad_()
    B1 = _t((2, 3, 2), 4)[0].requires_grad_()
    B2 = _t((2, 2, 4), 5)[0].requires_grad_()
    assert gradcheck(lambda a, b: ptl.inner(a, b), (A, w))
    assert gradcheck(lambda m, a, b: ptl.addr(m, a, b, beta=0.5, alpha=2), (A, v, w))
    assert gradcheck(lambda m, a, b: ptl.addbmm(m, a, b, beta=0.5, alpha=2), (A, B1, B2))
    assert gradcheck(lambda a: ptl.vander(a, 4), (v,))


PINV_SHAPES = [(5, 3), (3, 5), (4, 4), (2, 6, 4), (0, 3, 2)]


# hermitian=True only for square matrices, the only ones that can be hermitian
@pytest.mark.parametrize("shape, hermitian",
                         [(s, False) for s in PINV_SHAPES] +
                         [(s, True) for s in PINV_SHAPES if s[-1] == s[-2]])
def test_pinv_matches_numpy(shape, hermitian):
    A, a = _t(shape, 3, "transposed")
    if hermitian:
        A, a = A + A.mT, a + np.swapaxes(a, -1, -2)
    ref = np.linalg.pinv(a, hermitian=hermitian) if a.size else np.swapaxes(a, -1, -2).copy()
    assert_close(ptl.linalg.pinv(A, hermitian=hermitian), ref, rtol=1e-10, atol=1e-12)


def test_pinv_and_matrix_rank_of_rank_deficient_matrices():
    g = np.random.default_rng(4)
    a = g.standard_normal((6, 2)) @ g.standard_normal((2, 5))
    assert_close(ptl.linalg.pinv(ptl.tensor(a)), np.linalg.pinv(a), rtol=1e-9, atol=1e-11)
    assert_close(ptl.linalg.matrix_rank(ptl.tensor(a)), np.array(2))
    s = a @ a.T
    assert_close(ptl.linalg.matrix_rank(ptl.tensor(s), hermitian=True), np.array(2))
    assert_close(ptl.linalg.pinv(ptl.tensor(s), hermitian=True),
                 np.linalg.pinv(s, hermitian=True), rtol=1e-8, atol=1e-10)
    d = ptl.tensor(np.diag([1.0, 1e-3, 1e-9]))
    assert_close(ptl.linalg.matrix_rank(d), np.array(3))
    assert_close(ptl.linalg.matrix_rank(d, atol=1e-6), np.array(2))
    assert_close(ptl.linalg.matrix_rank(d, rtol=1e-2), np.array(1))
    assert_close(ptl.linalg.pinv(d, atol=1e-6), np.diag([1.0, 1e3, 0.0]), rtol=1e-12)
    assert_close(ptl.linalg.matrix_rank(ptl.zeros(2, 0, 3)), np.zeros(2, dtype=np.int64))


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("a_shape, b_shape", [((6, 3), (6, 2)), ((2, 5, 3), (2, 5, 4)),
                                              ((3, 5), (3, 2)), ((4, 4), (4, 1)),
                                              ((5, 3), (5,))])
def test_lstsq_matches_numpy(a_shape, b_shape, driver):
    A, a = _t(a_shape, 5, "transposed")
    B, b = _t(b_shape, 6)
    res = ptl.linalg.lstsq(A, B, driver=driver)
    assert type(res).__name__ == "linalg_lstsq"
    assert res._fields == ("solution", "residuals", "rank", "singular_values")
    vec = len(b_shape) == len(a_shape) - 1
    aa = a.reshape((-1,) + a_shape[-2:])
    bb = b.reshape((aa.shape[0], a_shape[-2], -1))
    refs = [np.linalg.lstsq(x, y, rcond=None) for x, y in zip(aa, bb)]
    sol = np.stack([r[0] for r in refs]).reshape(
        a_shape[:-2] + (a_shape[-1],) + (() if vec else b_shape[-1:]))
    assert_close(res.solution, sol, rtol=1e-9, atol=1e-11)
    m, n = a_shape[-2:]
    driver = driver or "gelsy"
    if driver == "gels":
        assert res.rank.numel() == 0
    else:
        assert_close(res.rank, np.full(a_shape[:-2], min(m, n), dtype=np.int64))
    if driver in ("gelsd", "gelss"):
        assert_close(res.singular_values, np.linalg.svd(a, compute_uv=False), rtol=1e-12)
    else:
        assert res.singular_values.numel() == 0
    if m > n and driver != "gelsy":
        # a vector B has residuals [*, 1], as in PyTorch
        resid = np.stack([r[1] for r in refs]).reshape(
            a_shape[:-2] + ((1,) if vec else b_shape[-1:]))
        assert_close(res.residuals, resid, rtol=1e-9, atol=1e-11)
    else:
        assert res.residuals.numel() == 0


def test_lstsq_of_rank_deficient_matrices_is_minimum_norm():
    g = np.random.default_rng(7)
    a = g.standard_normal((6, 2)) @ g.standard_normal((2, 4))
    b = g.standard_normal((6, 3))
    for driver in (None, "gelsd"):
        res = ptl.linalg.lstsq(ptl.tensor(a), ptl.tensor(b), driver=driver)
        assert_close(res.solution, np.linalg.lstsq(a, b, rcond=None)[0], rtol=1e-8, atol=1e-10)
        assert_close(res.rank, np.array(2))


ERRORS = [
    ("matrix_exp", lambda L: L.linalg.matrix_exp(L.ones(2, 3)), RuntimeError,
     "linalg.matrix_exp: A must be batches of square matrices, but they are 2 by 3 matrices"),
    ("matrix_exp-long", lambda L: L.linalg.matrix_exp(L.ones(3, 3, dtype=L.int64)),
     RuntimeError, "linalg.matrix_exp: Expected a floating point or complex tensor as input. "
     "Got Long"),
    ("matrix_power", lambda L: L.linalg.matrix_power(L.ones(2, 3), 2), RuntimeError,
     "linalg.matrix_power: A must be batches of square matrices, but they are 2 by 3 "
     "matrices"),
    ("matrix_power-singular", lambda L: L.linalg.matrix_power(L.zeros(2, 2), -1),
     RuntimeError, "linalg.inv: The diagonal element 1 is zero"),
    ("pinv", lambda L: L.linalg.pinv(L.ones(3)), RuntimeError,
     "linalg.pinv(Float{[3]}): expected a tensor with 2 or more dimensions of float, double, "
     "cfloat or cdouble types"),
    ("pinv-long", lambda L: L.linalg.pinv(L.ones(3, 3, dtype=L.int64)), RuntimeError,
     "linalg.pinv(Long{[3, 3]}): expected a tensor with 2 or more dimensions"),
    ("matrix_rank", lambda L: L.linalg.matrix_rank(L.ones(3)), RuntimeError,
     "torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions."),
    ("lstsq-rows", lambda L: L.linalg.lstsq(L.ones(3, 3), L.ones(4, 3)), RuntimeError,
     "torch.linalg.lstsq: input.size(-2) should match other.size(-2)"),
    ("lstsq-driver", lambda L: L.linalg.lstsq(L.ones(3, 3), L.ones(3, 3), driver="foo"),
     RuntimeError, "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, "
     "gelsd, gelss)"),
]


@pytest.mark.parametrize("name, fn, exc, msg", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name, fn, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        fn(ptl)


@torch_ref
@pytest.mark.parametrize("name, fn, exc, msg", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(name, fn, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        fn(torch)


GRAD_CASES = [
    ("matrix_exp", lambda x: ptl.linalg.matrix_exp(x), [(3, 3)]),
    ("matrix_exp-batched-scaled", lambda x: ptl.linalg.matrix_exp(4 * x), [(2, 3, 3)]),
    ("matrix_power", lambda x: ptl.linalg.matrix_power(x, 3), [(2, 3, 3)]),
    ("matrix_power-negative", lambda x: ptl.linalg.matrix_power(
        x + 3 * ptl.eye(3, dtype=x.dtype), -2), [(3, 3)]),
    ("pinv", lambda x: ptl.linalg.pinv(x), [(4, 3)]),
    ("pinv-batched-wide", lambda x: ptl.linalg.pinv(x), [(2, 2, 3)]),
    ("lstsq", lambda a, b: ptl.linalg.lstsq(a, b).solution, [(5, 3), (5, 2)]),
    ("lstsq-wide-batched", lambda a, b: ptl.linalg.lstsq(a, b, driver="gels").solution,
     [(2, 2, 4), (2, 2, 1)]),
    ("lstsq-gelsd", lambda a, b: ptl.linalg.lstsq(a, b, driver="gelsd").solution,
     [(4, 3), (4, 2)]),
]


@pytest.mark.parametrize("name, fn, shapes", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradcheck_and_gradgradcheck(name, fn, shapes):
    xs = [_t(s, i + 8)[0].requires_grad_() for i, s in enumerate(shapes)]
    assert gradcheck(fn, xs)
    assert gradgradcheck(fn, xs)


@torch_ref
def test_values_match_torch():
    g = np.random.default_rng(9)
    a = g.standard_normal((2, 5, 3))
    b = g.standard_normal((2, 5, 2))
    s = g.standard_normal((2, 4, 4))
    for fn in (lambda L: L.linalg.matrix_exp(L.tensor(s)),
               lambda L: L.linalg.matrix_power(L.tensor(s), -3),
               lambda L: L.linalg.pinv(L.tensor(a)),
               lambda L: L.linalg.matrix_rank(L.tensor(a)),
               lambda L: L.linalg.lstsq(L.tensor(a), L.tensor(b), driver="gelsd").solution,
               lambda L: L.linalg.lstsq(L.tensor(a), L.tensor(b), driver="gelsd").residuals):
        np.testing.assert_allclose(fn(ptl).numpy(), fn(torch).numpy(), rtol=1e-9, atol=1e-11)


def _crandn(shape, seed, scale=0.5):
    g = np.random.default_rng(seed)
    return scale * (g.standard_normal(shape) + 1j * g.standard_normal(shape))


def _expm(a):
    """exp of each matrix of a through its (diagonalisable) eigendecomposition, complex128"""
    w, v = np.linalg.eig(a)
    return v @ (np.exp(w)[..., None] * np.linalg.inv(v))


@pytest.mark.parametrize("dtype,tol", [(ptl.complex64, 2e-5), (ptl.complex128, 1e-12)])
@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (2, 3, 5, 5), (0, 3, 3), (6, 6)])
def test_complex_matrix_exp_pinv_and_rank(dtype, tol, shape):
    a = _crandn(shape, 3, 1.5 if shape == (6, 6) else 0.5)   # (6, 6): squarings
    x = ptl.tensor(a).to(dtype)
    assert_close(ptl.linalg.matrix_exp(x), _expm(a) if a.size else a, rtol=tol * 10,
                 atol=tol * 10)
    assert_close(ptl.linalg.pinv(x), np.linalg.pinv(a) if a.size else np.swapaxes(a, -1, -2),
                 rtol=tol * 100, atol=tol * 100)
    h = a + np.conj(np.swapaxes(a, -1, -2))
    xh = ptl.tensor(h).to(dtype)
    assert_close(ptl.linalg.pinv(xh, hermitian=True),
                 np.linalg.pinv(h, hermitian=True) if h.size else h, rtol=tol * 100,
                 atol=tol * 100)
    assert ptl.linalg.matrix_rank(x).tolist() == np.linalg.matrix_rank(a).tolist() \
        if a.size else True
    # transposed (non-contiguous) input
    assert_close(ptl.linalg.matrix_exp(x.mT), _expm(np.swapaxes(a, -1, -2)) if a.size else a,
                 rtol=tol * 10, atol=tol * 10)


def test_complex_rank_deficient_pinv_and_rank():
    g = _crandn((5, 2), 1) @ _crandn((2, 4), 2)
    x = ptl.tensor(g)
    assert ptl.linalg.matrix_rank(x).item() == 2
    assert_close(ptl.linalg.pinv(x), np.linalg.pinv(g), rtol=1e-9, atol=1e-10)


def test_complex_matrix_exp_and_pinv_gradcheck():
    a = ptl.tensor(_crandn((3, 3), 4)).requires_grad_()
    assert gradcheck(ptl.linalg.matrix_exp, (a,))
    assert gradcheck(ptl.linalg.pinv, (a,))
    h = _crandn((3, 3), 5)
    h = ptl.tensor(h + np.conj(h.T) + 4 * np.eye(3)).requires_grad_()
    assert gradcheck(lambda m: ptl.linalg.pinv(m + m.mH, hermitian=True), (h,))


@torch_ref
def test_complex_matrix_exp_and_pinv_match_torch():
    a = _crandn((2, 4, 4), 6)
    for dt in ("complex64", "complex128"):
        ours, ref = ptl.tensor(a).to(getattr(ptl, dt)), torch.tensor(a).to(getattr(torch, dt))
        assert_close(ptl.linalg.matrix_exp(ours), torch.linalg.matrix_exp(ref).numpy(),
                     rtol=1e-4, atol=1e-5)
        assert_close(ptl.linalg.pinv(ours), torch.linalg.pinv(ref).numpy(), rtol=1e-3,
                     atol=1e-4)
