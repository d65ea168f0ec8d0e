"""The singular value decomposition: linalg.svd / linalg_svd, linalg.svdvals / linalg_svdvals
and the internal _linalg_svd (src/aten/native/svd.c), their derivative LinalgSvdBackward0
(src/autograd/derivatives_svd.c), and the spectral matrix norms (ord 2, -2, 'nuc') of
linalg.matrix_norm / linalg.norm built on svdvals.  References: numpy.linalg in float64 and,
for gradients and error texts, the installed torch."""
import re

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import _C
from pytorchlite.autograd import gradcheck, gradgradcheck

from golden import golden
from helpers import assert_close, assert_no_leak, make, torch

_linalg_svd = _C._op("aten::_linalg_svd")

# matrices and batches of them: square, tall, wide, 1x1, vectors, size 0
SVD_SHAPES = [(1, 1), (3, 3), (5, 3), (3, 5), (1, 4), (4, 1), (2, 4, 3), (2, 1, 3, 4),
              (0, 3), (3, 0), (2, 0, 4), (0, 3, 3), (7, 7)]
LAYOUTS = ["contiguous", "transposed", "sliced", "expanded"]
DTYPES = [ptl.float32, ptl.float64]


def _tol(dtype):
    return 1e-12 if dtype == ptl.float64 else 2e-5


def _np(t):
    return np.array(t.numpy(), dtype=np.float64)


def _check_factors(A, a, U, S, Vh, full, dtype):
    """U, S, Vh of A (ndarray a, float64): shapes as numpy's, S as numpy's, U and Vh
    orthonormal, U diag(S) Vh = A."""
    m, n = a.shape[-2:]
    k = min(m, n)
    nu, ns, nvh = np.linalg.svd(a, full_matrices=full)
    for got, ref in ((U, nu), (S, ns), (Vh, nvh)):
        assert tuple(got.shape) == ref.shape and got.dtype == dtype
    scale = max(1.0, np.abs(a).max()) if a.size else 1.0
    tol = _tol(dtype) * 10
    assert_close(S, ns, atol=tol * scale, rtol=tol)
    u, s, vh = _np(U), _np(S), _np(Vh)
    eye_u = np.broadcast_to(np.eye(u.shape[-1]), u.shape[:-2] + (u.shape[-1],) * 2)
    eye_v = np.broadcast_to(np.eye(vh.shape[-2]), vh.shape[:-2] + (vh.shape[-2],) * 2)
    np.testing.assert_allclose(np.swapaxes(u, -1, -2) @ u, eye_u, atol=tol)
    np.testing.assert_allclose(vh @ np.swapaxes(vh, -1, -2), eye_v, atol=tol)
    rec = (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]
    np.testing.assert_allclose(rec, a, atol=tol * scale)
    assert np.all(np.diff(s, axis=-1) <= 0), "singular values not descending"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", SVD_SHAPES)
def test_svd_matches_numpy(shape, layout, dtype):
    x, a = make(shape, dtype, layout, seed=len(shape) + shape[-1])
    a = a.astype(np.float64)
    for full in (True, False):
        U, S, Vh = ptl.linalg.svd(x, full_matrices=full)
        _check_factors(x, a, U, S, Vh, full, dtype)
    assert_close(ptl.linalg.svdvals(x), np.linalg.svd(a, compute_uv=False), dtype=dtype,
                 atol=_tol(dtype) * 50, rtol=_tol(dtype) * 10)


def test_svd_named_tuple_and_defaults():
    x, a = make((4, 3), ptl.float64)
    res = ptl.linalg.svd(x)
    assert isinstance(res, tuple) and res._fields == ("U", "S", "Vh")
    assert repr(res).startswith("torch.return_types.linalg_svd(\nU=")
    assert tuple(res.U.shape) == (4, 4) and tuple(res.Vh.shape) == (3, 3)   # full by default
    assert_close(res.S, np.linalg.svd(a, compute_uv=False))
    U, S, Vh = ptl.linalg_svd(x, False)
    assert tuple(U.shape) == (4, 3)
    assert_close(ptl.linalg_svdvals(x), np.linalg.svd(a, compute_uv=False))
    # the internal op: without compute_uv the vectors are empty, as in torch
    U, S, Vh = _linalg_svd(x, False, False)
    tU, tS, tVh = golden(lambda: tuple(torch._linalg_svd(torch.tensor(a), full_matrices=False,
                                                         compute_uv=False)))
    assert tuple(U.shape) == tU.shape and tuple(Vh.shape) == tVh.shape
    assert_close(S, tS.numpy())
    # an empty matrix: full_matrices completes the basis of the long side with I
    U, S, Vh = ptl.linalg.svd(ptl.zeros(0, 3))
    assert_close(Vh, np.eye(3))
    assert tuple(U.shape) == (0, 0) and tuple(S.shape) == (0,)


@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 4, 3), (2, 0, 3), (1, 1)])
def test_legacy_svd(shape):
    """torch.svd: V instead of Vh, `some` for reduced factors, zeros without compute_uv."""
    x, a = make(shape, ptl.float64, "transposed", seed=2)
    for some in (True, False):
        U, S, V = ptl.svd(x, some=some)
        _check_factors(x, a, U, S, V.mT, not some, ptl.float64)
    res = x.svd(compute_uv=False)
    ref_u, ref_s, ref_v = golden(lambda: tuple(torch.svd(torch.tensor(a), compute_uv=False)))
    assert repr(res).startswith("torch.return_types.svd(\nU=") and res._fields == ("U", "S", "V")
    assert_close(res.U, ref_u.numpy(), atol=0, rtol=0)
    assert_close(res.V, ref_v.numpy(), atol=0, rtol=0)
    assert_close(res.S, ref_s.numpy())
    msg = "linalg.svd: input should have at least 2 dimensions, but has 1 dimensions instead"
    for m in (ptl, torch) if torch is not None else (ptl,):
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            m.svd(m.ones(3))
    with pytest.raises(RuntimeError, match=re.escape("Got Long")):
        ptl.svd(ptl.ones(2, 2, dtype=ptl.int64))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,rank", [((6, 5), 2), ((5, 6), 2), ((4, 4), 0), ((5, 3), 1),
                                        ((3, 3, 3), 1)])
def test_rank_deficient(shape, rank, dtype):
    g = np.random.default_rng(rank)
    a = g.standard_normal(shape[:-1] + (rank,)) @ g.standard_normal(shape[:-2] + (rank, shape[-1]))
    x = ptl.tensor(a, dtype=dtype)
    a = _np(x)
    for full in (True, False):
        U, S, Vh = ptl.linalg.svd(x, full_matrices=full)
        _check_factors(x, a, U, S, Vh, full, dtype)


def test_repeated_and_graded_singular_values():
    g = np.random.default_rng(3)
    q1, _ = np.linalg.qr(g.standard_normal((6, 6)))
    q2, _ = np.linalg.qr(g.standard_normal((6, 6)))
    for s in ([3, 3, 3, 1, 1, 0.5], [1, 1e-3, 1e-6, 1e-9, 1e-12, 1e-14], [2] * 6):
        a = q1 @ np.diag(s) @ q2.T
        U, S, Vh = ptl.linalg.svd(ptl.tensor(a))
        _check_factors(None, a, U, S, Vh, True, ptl.float64)
        assert_close(S, np.array(s, dtype=np.float64), atol=1e-14, rtol=1e-12)
    # the identity and a permutation: exact
    assert_close(ptl.linalg.svdvals(ptl.eye(4, dtype=ptl.float64)), np.ones(4), atol=0, rtol=0)
    perm = np.eye(3)[[2, 0, 1]] * np.array([1.0, -2.0, 5.0])
    assert_close(ptl.linalg.svdvals(ptl.tensor(perm)), np.array([5.0, 2.0, 1.0]), atol=0,
                 rtol=0)


def test_large_batch_runs_in_parallel():
    g = np.random.default_rng(5)
    a = g.standard_normal((200, 5, 4))
    U, S, Vh = ptl.linalg.svd(ptl.tensor(a), full_matrices=False)
    _check_factors(None, a, U, S, Vh, False, ptl.float64)
    assert_close(ptl.linalg.svdvals(ptl.tensor(a).float()), np.linalg.svd(a, compute_uv=False),
                 atol=1e-5)


@pytest.mark.parametrize("shape", [(520, 1), (1, 520), (300, 3)])
def test_full_matrices_of_long_thin_matrices(shape):
    """full_matrices of a long thin matrix: the long side's basis is completed by Householder
    QR (it was completed by trying unit vectors, O(m^4): minutes at (520, 1))."""
    a = np.random.default_rng(11).standard_normal(shape)
    U, S, Vh = ptl.linalg.svd(ptl.tensor(a))
    _check_factors(None, a, U, S, Vh, True, ptl.float64)


@pytest.mark.parametrize("scale", [1e160, 1e300, 1e-160, 1e-300, 1e-310])
def test_extreme_scales(scale):
    """Huge and tiny (subnormal) entries: the squared norms must not overflow or underflow."""
    a = np.random.default_rng(9).standard_normal((4, 3)) * scale
    U, S, Vh = ptl.linalg.svd(ptl.tensor(a))
    ref = np.linalg.svd(a, compute_uv=False)
    np.testing.assert_allclose(_np(S), ref, rtol=1e-12 if scale > 1e-300 else 1e-3)
    np.testing.assert_allclose(_np(U).T @ _np(U), np.eye(4), atol=1e-14)
    np.testing.assert_allclose(_np(Vh) @ _np(Vh).T, np.eye(3), atol=1e-14)


def test_float64_accuracy():
    g = np.random.default_rng(7)
    a = g.standard_normal((40, 30))
    S = _np(ptl.linalg.svdvals(ptl.tensor(a)))
    ref = np.linalg.svd(a, compute_uv=False)
    assert np.abs(S - ref).max() <= 1e-13 * ref[0]


SVD_FUNCS = [("svd", lambda m, a, **kw: m.linalg.svd(a, **kw)),
             ("svdvals", lambda m, a, **kw: m.linalg.svdvals(a, **kw))]


@pytest.mark.parametrize("name,fn", SVD_FUNCS)
@pytest.mark.parametrize("args,kw,exc,msg", [
    ((ptl.ones(3, 3, dtype=ptl.int64),), {}, RuntimeError,
     "linalg.svd: Expected a floating point or complex tensor as input. Got Long"),
    ((ptl.ones(3, 3, dtype=ptl.bool),), {}, RuntimeError,
     "linalg.svd: Expected a floating point or complex tensor as input. Got Bool"),
    ((ptl.ones(3),), {}, RuntimeError,
     "linalg.svd: The input tensor A must have at least 2 dimensions."),
    ((ptl.ones(3, 3, dtype=ptl.float16),), {}, NotImplementedError,
     "\"linalg_svd_cpu\" not implemented for 'Half'"),
    ((ptl.ones(3, 3, dtype=ptl.bfloat16),), {}, NotImplementedError,
     "\"linalg_svd_cpu\" not implemented for 'BFloat16'"),
    ((ptl.ones(3, 3),), {"driver": "gesvd"}, RuntimeError,
     "torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
     "cuSOLVER backend."),
    ((ptl.tensor([[1.0, float("nan")], [0.0, 1.0]]),), {}, ptl.linalg.LinAlgError,
     "linalg.svd: The algorithm failed to converge because the input matrix contained "
     "non-finite values."),
    ((ptl.tensor([[1.0, 2.0], [float("inf"), 1.0]]),), {}, ptl.linalg.LinAlgError,
     "linalg.svd: The algorithm failed to converge because the input matrix contained "
     "non-finite values."),
])
def test_errors(name, fn, args, kw, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        fn(ptl, *args, **kw)
    # the same text from torch (whose LAPACK returns NaNs for an infinite entry, where
    # pytorchlite raises as for NaN)
    if torch is None or any(np.isinf(a.float().numpy()).any() for a in args):
        return
    targs = [torch.tensor(a.float().numpy() if a.dtype in (ptl.float16, ptl.bfloat16)
                          else a.numpy()).to(getattr(torch, str(a.dtype).split(".")[-1]))
             for a in args]
    with pytest.raises(Exception, match=re.escape(msg)):
        fn(torch, *targs, **kw)


# ---- the spectral matrix norms ----

@pytest.mark.parametrize("ord", [2, -2, "nuc"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "expanded"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_spectral_matrix_norms(ord, layout, dtype):
    x, a = make((2, 3, 4), dtype, layout, seed=11)
    a = a.astype(np.float64)
    tol = _tol(dtype) * 10
    assert_close(ptl.linalg.matrix_norm(x, ord), np.linalg.norm(a, ord, axis=(-2, -1)),
                 dtype=dtype, rtol=tol, atol=tol)
    assert_close(ptl.linalg.matrix_norm(x, ord, dim=(2, 0), keepdim=True),
                 np.linalg.norm(a, ord, axis=(2, 0), keepdims=True), rtol=tol, atol=tol)
    assert_close(ptl.linalg.matrix_norm(x, ord, dim=(0, 1)),
                 np.linalg.norm(a, ord, axis=(0, 1)), rtol=tol, atol=tol)
    assert_close(ptl.linalg.norm(x[1], ord), np.linalg.norm(a[1], ord), rtol=tol, atol=tol)
    assert_close(ptl.linalg.norm(x, ord, dim=(-1, -2)), np.linalg.norm(a, ord, axis=(-1, -2)),
                 rtol=tol, atol=tol)
    if dtype == ptl.float32:
        assert_close(ptl.linalg.matrix_norm(x, ord, dtype=ptl.float64),
                     np.linalg.norm(a, ord, axis=(-2, -1)), dtype=ptl.float64, rtol=tol)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 0)])
def test_spectral_norms_of_empty_matrices(shape):
    for ord in (2, "nuc"):
        got = ptl.linalg.matrix_norm(ptl.zeros(*shape), ord)
        assert_close(got, golden(lambda: torch.linalg.matrix_norm(torch.zeros(*shape), ord))
                     .numpy())
    msg = "amin(): Expected reduction dim -1 to have non-zero size."
    for m in (ptl, torch) if torch is not None else (ptl,):
        with pytest.raises(IndexError, match=re.escape(msg)):
            m.linalg.matrix_norm(m.zeros(*shape), -2)


# ---- derivatives ----

def _mat(shape, seed):
    """A well-conditioned float64 matrix with distinct singular values (gaps checked)."""
    a = np.random.default_rng(seed).standard_normal(shape)
    s = np.linalg.svd(a, compute_uv=False)
    assert np.all(-np.diff(s, axis=-1) > 0.05) and np.all(s[..., -1] > 0.05)
    return a


def _leaf(a, layout="contiguous"):
    """A float64 leaf requiring grad with a's values, laid out as asked."""
    if layout == "transposed":
        t = ptl.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2))).transpose(-1, -2)
    elif layout == "sliced":
        big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],))
        big[..., ::2] = a
        t = ptl.tensor(big)[..., ::2]
    else:
        t = ptl.tensor(a)
    return t.requires_grad_()


def _invariant(U, S, Vh):
    """Functions of the factors that do not depend on the signs of singular vectors."""
    k = S.shape[-1]
    Uk, Vk = U[..., :k], Vh[..., :k, :]
    return Uk * Uk, S, Vk * Vk, Uk @ Vk


GRADCHECKS = {
    "_linalg_svd": [
        ("svdvals", lambda a: ptl.linalg.svdvals(a)),
        ("svd_reduced", lambda a: _invariant(*ptl.linalg.svd(a, full_matrices=False))),
        ("svd_full", lambda a: _invariant(*ptl.linalg.svd(a, full_matrices=True))),
        ("svd_S_only", lambda a: ptl.linalg.svd(a, full_matrices=False)[1]),
        ("svd_U_only", lambda a: _invariant(*ptl.linalg.svd(a, full_matrices=False))[0]),
        ("svd_Vh_only", lambda a: _invariant(*ptl.linalg.svd(a, full_matrices=False))[2]),
        ("legacy_svd", lambda a: (lambda U, S, V: _invariant(U, S, V.mT))(*ptl.svd(a))),
        ("svdvals_broadcast", lambda a: ptl.linalg.svdvals(a.expand(2, *a.shape))),
        ("nuc_norm", lambda a: ptl.linalg.matrix_norm(a, "nuc")),
        ("spectral_norm", lambda a: ptl.linalg.matrix_norm(a, 2)),
        ("min_spectral_norm", lambda a: ptl.linalg.matrix_norm(a, -2)),
    ],
}
GRAD_SHAPES = [(3, 3), (4, 2), (2, 4), (2, 3, 4)]


# every function on every shape, contiguous; non-contiguous leaves on the batched shape for
# all, on every shape for svdvals and the reduced svd
GRAD_CASES = [(name, fn, shape, layout) for name, fn in GRADCHECKS["_linalg_svd"]
              for shape in GRAD_SHAPES for layout in ("contiguous", "transposed", "sliced")
              if layout == "contiguous" or shape == (2, 3, 4)
              or name in ("svdvals", "svd_reduced")]


@pytest.mark.parametrize("name,fn,shape,layout", GRAD_CASES)
def test_gradcheck(name, fn, shape, layout):
    a = _leaf(_mat(shape, seed=sum(shape)), layout)
    assert gradcheck(fn, (a,))


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 3)])
@pytest.mark.parametrize("name", ["svdvals", "svd_reduced", "nuc_norm"])
def test_gradgradcheck(name, shape):
    fn = dict(GRADCHECKS["_linalg_svd"])[name]
    assert gradgradcheck(fn, (_leaf(_mat(shape, seed=sum(shape) + 1)),))


# the same gradients as torch, on inputs with distinct and with repeated singular values
def _tied(shape, s, seed):
    g = np.random.default_rng(seed)
    q1, _ = np.linalg.qr(g.standard_normal((shape[0], shape[0])))
    q2, _ = np.linalg.qr(g.standard_normal((shape[1], shape[1])))
    d = np.zeros(shape)
    d[range(len(s)), range(len(s))] = s
    return q1 @ d @ q2.T


EXACT_TIES = [np.diag([2.0, 2.0, 1.0]), np.array([[0, 2.0, 0], [0, 0, -2.0], [1.0, 0, 0]]),
              np.array([[0, 3.0, 0, 0], [0, 0, 0, -3.0], [0.5, 0, 0, 0]])]
COMPARE = [
    ("svd_invariants", lambda m, a: sum(((o * w).sum() for o, w in zip(
        _inv_of(m, a), (1.0, 2.0, -1.0, 0.5)))), [_mat((4, 3), 1), _mat((3, 5), 2)]),
    ("svd_full_invariants", lambda m, a: sum(((o * w).sum() for o, w in zip(
        _inv_of(m, a, True), (1.0, 2.0, -1.0, 0.5)))), [_mat((4, 3), 3), _mat((2, 4), 4)]),
    ("svdvals_weighted", lambda m, a: (m.linalg.svdvals(a) * m.tensor([3.0, -1.0, 2.0],
                                       dtype=m.float64)).sum(), [_mat((3, 3), 5)]),
    ("nuc_ties", lambda m, a: m.linalg.matrix_norm(a, "nuc"),
     [_tied((3, 3), [2.0, 2.0, 1.0], 6), _tied((4, 3), [1.0, 1.0, 1.0], 7)]),
    # exactly tied extreme singular values (a rotated tie is split by rounding, and the
    # gradient of the then single largest value depends on the basis of the tied subspace)
    ("spectral_ties", lambda m, a: m.linalg.matrix_norm(a, 2), EXACT_TIES),
    ("min_spectral_ties", lambda m, a: m.linalg.matrix_norm(a, -2),
     EXACT_TIES + [np.diag([3.0, 1.0, 1.0])]),
    ("frobenius_squared_ties", lambda m, a: (m.linalg.svdvals(a) ** 2).sum(),
     [_tied((3, 3), [1.0, 1.0, 1.0], 11)]),
]


def _inv_of(m, a, full=False):
    U, S, Vh = m.linalg.svd(a, full_matrices=full)
    k = S.shape[-1]
    Uk, Vk = U[..., :k], Vh[..., :k, :]
    return Uk * Uk, S, Vk * Vk, Uk @ Vk


@pytest.mark.parametrize("name,fn,inputs", COMPARE)
def test_grads_match_torch(name, fn, inputs):
    def grad(m, a):
        x = m.tensor(a, requires_grad=True)
        fn(m, x).backward()
        return x.grad.tolist()
    for a in inputs:
        assert_close(ptl.tensor(grad(ptl, a), dtype=ptl.float64), np.array(golden(lambda: grad(torch, a))),
                     atol=1e-10, rtol=1e-8)


def test_no_leaks():
    """Forward, backward, double backward and every error path keep the live counts flat."""
    a = _mat((4, 3), 1)
    bad = [(ptl.linalg.svd, ptl.ones(2, 2, dtype=ptl.int64)),
           (ptl.linalg.svdvals, ptl.tensor([[1.0, float("nan")], [0.0, 1.0]])),
           (ptl.svd, ptl.ones(3))]

    def run():
        x = ptl.tensor(a, requires_grad=True)
        U, S, Vh = ptl.linalg.svd(x, full_matrices=False)
        ((U @ Vh).sum() + S.sum()).backward()
        g, = ptl.autograd.grad(ptl.linalg.svdvals(x).sum(), x, create_graph=True)
        g.sum().backward()
        ptl.svd(x, compute_uv=False)
        ptl.linalg.matrix_norm(x, "nuc")
        for fn, arg in bad:
            with pytest.raises(RuntimeError):
                fn(arg)
        with pytest.raises(RuntimeError):
            ptl.linalg.svd(x, driver="gesvd")

    assert_no_leak(run)
