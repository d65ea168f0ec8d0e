"""The LU family of src/aten/native/linalg_solve.c: linalg.lu_factor(_ex), linalg.solve(_ex),
linalg.inv(_ex) / inverse, linalg.det / det, linalg.slogdet / slogdet and
linalg.solve_triangular, with their derivatives (src/autograd/derivatives/linalg_solve.c).
References: numpy.linalg in float64 on batched, 0x0, size-0-batch and transposed inputs in
float32 and float64; singular inputs (LinAlgError, info); every error path with PyTorch's
exception type and text; gradcheck and gradgradcheck in float64; the installed torch for
error texts, values and gradients where it is present."""
import re

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck, gradgradcheck

from helpers import assert_close, assert_no_leak, make, torch, torch_ref

DTYPES = [ptl.float32, ptl.float64]
LAYOUTS = ["contiguous", "transposed"]
SQUARE = [(1, 1), (3, 3), (6, 6), (2, 4, 4), (2, 1, 3, 3), (0, 3, 3), (0, 0), (2, 0, 0)]


def _tol(dtype):
    return dict(rtol=1e-9, atol=1e-11) if dtype == ptl.float64 else dict(rtol=1e-4, atol=1e-5)


def _matrix(shape, dtype, layout="contiguous", seed=0):
    """A random well-conditioned matrix (batch): entries in [-1, 1) plus 3 I."""
    t, a = make(shape, ptl.float64, layout, seed, -1, 1)
    if shape[-1] and shape[-1] == shape[-2]:
        t = t + 3 * ptl.eye(shape[-1], dtype=ptl.float64)
    t = t.to(dtype)
    if layout == "transposed":
        t = t.mT.contiguous().mT
    return t, np.asarray(t.double().numpy(), dtype=np.float64)


def _singular(batch=()):
    """A 3x3 matrix whose third pivot is zero, repeated over batch."""
    z = np.diag([1.0, 1.0, 0.0])
    return np.broadcast_to(z, batch + (3, 3)).copy()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", SQUARE)
def test_inv_det_slogdet_match_numpy(shape, layout, dtype):
    A, a = _matrix(shape, dtype, layout)
    inv = ptl.linalg.inv(A)
    assert inv.dtype == dtype
    assert_close(inv, np.linalg.inv(a) if a.size else a.copy(), **_tol(dtype))
    res = ptl.linalg.inv_ex(A)
    assert_close(res.inverse, np.linalg.inv(a) if a.size else a.copy(), **_tol(dtype))
    assert_close(res.info, np.zeros(shape[:-2], dtype=np.int32))
    assert_close(ptl.inverse(A), np.linalg.inv(a) if a.size else a.copy(), **_tol(dtype))
    assert_close(ptl.linalg.det(A), np.linalg.det(a), **_tol(dtype))
    assert_close(ptl.det(A), np.linalg.det(a), **_tol(dtype))
    assert_close(A.det(), np.linalg.det(a), **_tol(dtype))
    sign, logabs = ptl.linalg.slogdet(A)
    nsign, nlog = np.linalg.slogdet(a)
    assert_close(sign, nsign, **_tol(dtype))
    assert_close(logabs, nlog, **_tol(dtype))
    assert_close(ptl.slogdet(A).logabsdet, nlog, **_tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("a_shape, b_shape, left", [
    ((3, 3), (3, 2), True), ((3, 3), (3,), True), ((2, 4, 4), (2, 4), True),
    ((2, 4, 4), (4, 5), True), ((4, 4), (3, 4, 2), True), ((2, 1, 3, 3), (4, 3, 1), True),
    ((3, 3), (2, 3), False), ((2, 3, 3), (1, 5, 3), False), ((0, 3, 3), (3, 2), True),
    ((0, 0), (0, 4), True), ((3, 3), (3, 0), True)])
def test_solve_matches_numpy(a_shape, b_shape, left, layout, dtype):
    A, a = _matrix(a_shape, dtype, layout)
    B, b = make(b_shape, dtype, layout, 1, -1, 1)
    b = np.asarray(b, dtype=np.float64)
    vector = len(b_shape) == 1 or (len(b_shape) == len(a_shape) - 1 and b_shape == a_shape[:-1])
    if not left:
        ref = np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    elif vector:
        ref = np.linalg.solve(a, b[..., None])[..., 0]
    else:
        ref = np.linalg.solve(a, b)
    X = ptl.linalg.solve(A, B, left=left)
    assert X.dtype == dtype
    assert_close(X, ref, **_tol(dtype))
    X, info = ptl.linalg.solve_ex(A, B, left=left)
    assert_close(X, ref, **_tol(dtype))
    assert not info.any()


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("a_shape, b_shape, left", [
    ((1, 1), (5, 3, 1), False), ((2, 1, 3, 3), (4, 3, 2), True), ((2, 1, 3, 3), (3,), True),
    ((3, 3), (2, 4, 3, 2), True), ((2, 3, 3), (4, 1, 5, 3), False), ((1, 2, 2), (3, 2, 1), True),
    ((2, 3, 3), (2, 3, 1), True), ((0, 3, 3), (2, 1, 3, 2), True)])
def test_solve_ex_factors_keep_a_batch(a_shape, b_shape, left, layout):
    """_linalg_solve_ex's LU, pivots and info are A's own factors in A's batch, not copies
    broadcast to B's (fuzzer --torch seed 37, call 146: A (1, 1) with B (5, 3, 1) made an LU
    of (5, 1, 1)); linalg.solve_ex's info too; the solution broadcasts"""
    A, a = _matrix(a_shape, ptl.float64, layout)
    B, _ = make(b_shape, ptl.float64, layout, 1, -1, 1)
    X, LU, piv, info = ptl.ops.aten._linalg_solve_ex(A, B, left=left)
    assert LU.shape == A.shape and piv.shape == A.shape[:-1] and info.shape == A.shape[:-2]
    want_LU, want_piv = ptl.linalg.lu_factor(A if left else A.mT)
    np.testing.assert_array_equal(LU.numpy(), want_LU.numpy())
    np.testing.assert_array_equal(piv.numpy(), want_piv.numpy())
    assert info.dtype == ptl.int32 and not info.any()
    assert ptl.linalg.solve_ex(A, B, left=left).info.shape == A.shape[:-2]
    assert_close(X, ptl.linalg.solve(A, B, left=left), rtol=0, atol=0)
    if torch is not None:
        theirs = torch.ops.aten._linalg_solve_ex(torch.tensor(A.numpy()),
                                                 torch.tensor(B.numpy()), left=left)
        for ours, t in zip((X, LU, piv, info), theirs):
            assert tuple(ours.shape) == tuple(t.shape)
        assert_close(X, theirs[0].numpy(), **_tol(ptl.float64))


def test_solve_ex_check_errors_names_a_batch_element():
    """check_errors reports the singular matrix by its index in A's batch, as PyTorch's"""
    A = ptl.eye(3, dtype=ptl.float64).repeat(3, 1, 1, 1)   # (3, 1, 3, 3): B's (4,) spreads it
    A[2, 0, 1:, 1:] = 0                                      # to (3, 4), where it is element 8
    B = ptl.ones(4, 3, 2, dtype=ptl.float64)
    with pytest.raises(ptl.linalg.LinAlgError, match=r"\(Batch element 2\)"):
        ptl.linalg.solve_ex(A, B, check_errors=True)
    if torch is not None:
        with pytest.raises(torch.linalg.LinAlgError, match=r"\(Batch element 2\)"):
            torch.linalg.solve_ex(torch.tensor(A.numpy()), torch.tensor(B.numpy()),
                                  check_errors=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 5, 5), (4, 2), (2, 5), (0, 3, 3), (0, 0)])
def test_lu_factor_reconstructs(shape, dtype):
    A, a = _matrix(shape, dtype, "transposed") if shape[-1] == shape[-2] else (None, None)
    if A is None:
        A, a = make(shape, dtype, "contiguous", 2, -1, 1)
        a = np.asarray(a, dtype=np.float64)
    LU, piv = ptl.linalg.lu_factor(A)
    _, _, info = ptl.linalg.lu_factor_ex(A)
    assert LU.dtype == dtype and piv.dtype == ptl.int32 and info.dtype == ptl.int32
    m, n = shape[-2:]
    k = min(m, n)
    assert tuple(piv.shape) == shape[:-2] + (k,) and tuple(info.shape) == shape[:-2]
    if LU.numel() == 0:
        return
    lu, p = np.asarray(LU.numpy(), np.float64).reshape(-1, m, n), piv.numpy().reshape(-1, k)
    for i, ai in enumerate(a.reshape(-1, m, n)):
        L = np.tril(lu[i], -1)[:, :k] + np.eye(m, k)
        U = np.triu(lu[i])[:k]
        pa = ai.copy()
        for r in range(k):     # LAPACK's row interchanges, in order
            pa[[r, p[i, r] - 1]] = pa[[p[i, r] - 1, r]]
        np.testing.assert_allclose(L @ U, pa, **_tol(dtype))
        assert (np.abs(L) <= 1 + 1e-12).all()   # partial pivoting


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper, left, unit", [(True, True, False), (False, True, False),
                                               (True, False, True), (False, False, True)])
@pytest.mark.parametrize("a_shape, b_shape", [((3, 3), (3, 2)), ((2, 4, 4), (4, 4)),
                                              ((0, 2, 2), (2, 2)), ((3, 3), (3, 3))])
def test_solve_triangular_matches_numpy(a_shape, b_shape, upper, left, unit, dtype):
    A, a = _matrix(a_shape, dtype, "transposed")
    B, b = make(b_shape if left else b_shape[::-1], dtype, "transposed", 3, -1, 1)
    b = np.asarray(b, dtype=np.float64)
    t = np.triu(a) if upper else np.tril(a)
    if unit:
        t = (np.triu(a, 1) if upper else np.tril(a, -1)) + np.eye(a_shape[-1])
    ref = (np.linalg.solve(t, np.broadcast_to(b, t.shape[:-2] + b.shape[-2:])) if left else
           np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2),
                                       np.swapaxes(np.broadcast_to(b, t.shape[:-2] + b.shape[-2:]),
                                                   -1, -2)), -1, -2))
    X = ptl.linalg.solve_triangular(A, B, upper=upper, left=left, unitriangular=unit)
    assert_close(X, ref, **_tol(dtype))


def test_singular_inputs():
    z = ptl.tensor(_singular())
    zb = ptl.tensor(np.stack([np.eye(3), _singular()]))
    msg = ("The diagonal element 3 is zero, the inversion could not be completed because the "
           "input matrix is singular.")
    with pytest.raises(ptl.linalg.LinAlgError, match=re.escape("linalg.inv: " + msg)):
        ptl.linalg.inv(z)
    with pytest.raises(ptl.linalg.LinAlgError,
                       match=re.escape("linalg.inv: (Batch element 1): " + msg)):
        ptl.linalg.inv(zb)
    with pytest.raises(ptl.linalg.LinAlgError, match=re.escape("linalg.inv_ex: " + msg)):
        ptl.linalg.inv_ex(z, check_errors=True)
    assert issubclass(ptl.linalg.LinAlgError, RuntimeError)
    assert ptl.linalg.LinAlgError is ptl._C._LinAlgError
    assert_close(ptl.linalg.inv_ex(zb).info, np.array([0, 3], dtype=np.int32))
    with pytest.raises(ptl.linalg.LinAlgError, match=re.escape(
            "torch.linalg.solve: (Batch element 1): The solver failed because the input "
            "matrix is singular.")):
        ptl.linalg.solve(zb, ptl.ones(3, dtype=ptl.float64))
    assert_close(ptl.linalg.solve_ex(z, ptl.ones(3, 1, dtype=ptl.float64)).info,
                 np.array(3, dtype=np.int32))
    with pytest.raises(RuntimeError, match=re.escape(
            "torch.linalg.lu_factor: U[3,3] is zero and using it on lu_solve would result in "
            "a division by zero.")):
        ptl.linalg.lu_factor(z)
    assert_close(ptl.linalg.lu_factor_ex(zb).info, np.array([0, 3], dtype=np.int32))
    assert_close(ptl.linalg.det(zb), np.array([1.0, 0.0]))
    sign, logabs = ptl.linalg.slogdet(zb)
    assert_close(sign, np.array([1.0, 0.0]))
    assert_close(logabs, np.array([0.0, -np.inf]))



def _cofactors(a):
    """The cofactor matrices of a batch [..., n, n] (float64): the gradient of det."""
    n = a.shape[-1]
    c = np.empty_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, axis=-2), j, axis=-1)
            c[..., i, j] = (-1) ** (i + j) * (np.linalg.det(minor) if n > 1 else 1.0)
    return c


def _low_rank(batch, n, rank, seed):
    g = np.random.default_rng(seed)
    return g.standard_normal(batch + (n, rank)) @ g.standard_normal(batch + (rank, n))


SINGULAR = {
    "rank-n-1": _low_rank((), 3, 2, 0),
    "rank-n-1-batched": _low_rank((2, 2), 4, 3, 1),
    "rank-n-2": _low_rank((3,), 4, 2, 2),
    "exact-pivot": _singular((2,)),
    "exact-2x2": np.array([[1.0, 2.0], [2.0, 4.0]]),
    "zeros": np.zeros((3, 3)),
    "ones": np.ones((2, 3, 3)),
    "mixed-batch": np.stack([np.eye(3) + 0.5, _low_rank((), 3, 2, 3), np.zeros((3, 3))]),
    "mixed-batch-rank-n-1": np.stack([np.eye(3) + 0.5, _low_rank((), 3, 2, 4)]),
    "1x1-zero": np.zeros((2, 1, 1)),
    "0x0": np.zeros((0, 0)),
    "size-0-batch": np.zeros((0, 3, 3)),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", list(SINGULAR))
def test_det_grad_at_singular_matrices_is_the_cofactor_matrix(name, layout):
    """PyTorch's cofactor gradient through the SVD where det(A) vanishes."""
    a = SINGULAR[name]
    g = np.random.default_rng(5).standard_normal(a.shape[:-2])
    A = ptl.tensor(a if layout == "contiguous" else np.swapaxes(a, -1, -2).copy())
    if layout == "transposed":
        A = A.mT
    A.requires_grad_()
    for fn in (ptl.linalg.det, ptl.det):
        (gA,) = ptl.autograd.grad(fn(A), A, ptl.tensor(g))
        assert_close(gA, g[..., None, None] * _cofactors(a), rtol=1e-9, atol=1e-12)
        (gA,) = ptl.autograd.grad(fn(A), A, ptl.tensor(g), create_graph=True)
        assert_close(gA.detach(), g[..., None, None] * _cofactors(a), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["rank-n-1", "rank-n-1-batched", "exact-2x2",
                                  "mixed-batch-rank-n-1", "1x1-zero"])
def test_det_gradcheck_and_gradgradcheck_at_singular_matrices(name):
    A = ptl.tensor(SINGULAR[name], requires_grad=True)
    assert gradcheck(ptl.linalg.det, [A])
    assert gradgradcheck(ptl.linalg.det, [A])


def test_det_gradcheck_below_rank_n_minus_1():
    A = ptl.tensor(SINGULAR["rank-n-2"], requires_grad=True)
    assert gradcheck(ptl.linalg.det, [A])


def test_slogdet_backward_at_a_singular_matrix_raises():
    A = ptl.tensor(_singular((2,)), requires_grad=True)
    sign, logabs = ptl.linalg.slogdet(A)
    assert_close(sign.detach(), np.zeros(2))
    assert_close(logabs.detach(), np.full(2, -np.inf))
    for create_graph in (False, True):
        with pytest.raises(ptl.linalg.LinAlgError, match=re.escape(
                "torch.linalg.solve: (Batch element 0): The solver failed because the input "
                "matrix is singular.")):
            ptl.autograd.grad(ptl.linalg.slogdet(A).logabsdet.sum(), A,
                              create_graph=create_graph)


@torch_ref
@pytest.mark.parametrize("name", list(SINGULAR))
def test_det_grad_at_singular_matrices_matches_torch(name):
    """Against torch's create_graph branch, which takes the SVD where |det| < 100 eps."""
    a = SINGULAR[name]
    outs = []
    for L in (ptl, torch):
        A = L.tensor(a, requires_grad=True)
        (gA,) = L.autograd.grad(L.linalg.det(A).sum(), A, create_graph=True)
        outs.append(np.asarray(gA.detach().numpy()))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-9, atol=1e-12)


@torch_ref
def test_slogdet_backward_at_a_singular_matrix_raises_like_torch():
    A = torch.tensor(_singular(), requires_grad=True)
    with pytest.raises(torch.linalg.LinAlgError, match=re.escape(
            "torch.linalg.solve: The solver failed because the input matrix is singular.")):
        torch.autograd.grad(torch.linalg.slogdet(A).logabsdet, A, create_graph=True)
    A = ptl.tensor(_singular(), requires_grad=True)
    with pytest.raises(ptl.linalg.LinAlgError, match=re.escape(
            "torch.linalg.solve: The solver failed because the input matrix is singular.")):
        ptl.autograd.grad(ptl.linalg.slogdet(A).logabsdet, A, create_graph=True)


ERRORS = [
    ("inv", ptl.linalg.inv, [(2, 3)], {}, RuntimeError,
     "linalg.inv: A must be batches of square matrices, but they are 2 by 3 matrices"),
    ("inv-1d", ptl.linalg.inv, [(3,)], {}, RuntimeError,
     "linalg.inv: The input tensor A must have at least 2 dimensions."),
    ("inv-long", ptl.linalg.inv, [(3, 3, ptl.int64)], {}, RuntimeError,
     "linalg.inv: Expected a floating point or complex tensor as input. Got Long"),
    ("inv-half", ptl.linalg.inv, [(3, 3, ptl.float16)], {}, RuntimeError,
     "linalg.inv: Low precision dtypes not supported. Got Half"),
    ("det", ptl.linalg.det, [(2, 3)], {}, RuntimeError,
     "linalg.det: A must be batches of square matrices, but they are 2 by 3 matrices"),
    ("det-1d", ptl.det, [(3,)], {}, RuntimeError,
     "linalg.det: The input tensor A must have at least 2 dimensions."),
    ("det-long", ptl.linalg.det, [(3, 3, ptl.int64)], {}, RuntimeError,
     "linalg.det: Expected a floating point or complex tensor as input. Got Long"),
    ("det-half", ptl.linalg.det, [(3, 3, ptl.float16)], {}, NotImplementedError,
     "\"lu_cpu\" not implemented for 'Half'"),
    ("slogdet", ptl.linalg.slogdet, [(2, 3)], {}, RuntimeError,
     "linalg.slogdet: A must be batches of square matrices, but they are 2 by 3 matrices"),
    ("slogdet-long", ptl.linalg.slogdet, [(3, 3, ptl.int64)], {}, RuntimeError,
     "linalg.slogdet: Expected a floating point or complex tensor as input. Got Long"),
    ("solve-shapes", ptl.linalg.solve, [(3, 3), (4,)], {}, RuntimeError,
     "linalg.solve: Incompatible shapes of A and B for the equation AX = B (3x3 and 4x1)"),
    ("solve-shapes2", ptl.linalg.solve, [(3, 3), (2, 4, 2)], {}, RuntimeError,
     "linalg.solve: Incompatible shapes of A and B for the equation AX = B (3x3 and 4x2)"),
    ("solve-right", ptl.linalg.solve, [(3, 3), (3, 2)], {"left": False}, RuntimeError,
     "linalg.solve: Incompatible shapes of A and B for the equation XA = B (3x3 and 3x2)"),
    ("solve-batch", ptl.linalg.solve, [(2, 3, 3), (3, 3, 2)], {}, RuntimeError,
     "The size of tensor a (3) must match the size of tensor b (2) at non-singleton "
     "dimension 0"),
    ("solve-dtypes", ptl.linalg.solve, [(3, 3), (3, 3, ptl.float32)], {}, RuntimeError,
     "linalg.solve: Expected A and B to have the same dtype, but found A of type Double and "
     "B of type Float instead"),
    ("solve-nonsquare", ptl.linalg.solve, [(3, 4), (3,)], {}, RuntimeError,
     "linalg.solve: A must be batches of square matrices, but they are 3 by 4 matrices"),
    ("solve-long", ptl.linalg.solve, [(3, 3, ptl.int64), (3, ptl.int64)], {}, RuntimeError,
     "linalg.solve: Expected a floating point or complex tensor as input. Got Long"),
    ("solve-1d", ptl.linalg.solve, [(3,), (3,)], {}, RuntimeError,
     "linalg.solve: The input tensor A must have at least 2 dimensions."),
    ("solve-0d", ptl.linalg.solve, [(3, 3), ()], {}, RuntimeError,
     "linalg.solve: The input tensor B must have at least 2 dimensions."),
    ("lu_factor-1d", ptl.linalg.lu_factor, [(3,)], {}, RuntimeError,
     "torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: [3] instead"),
    ("lu_factor-long", ptl.linalg.lu_factor, [(3, 3, ptl.int64)], {}, NotImplementedError,
     "\"lu_cpu\" not implemented for 'Long'"),
    ("solve_triangular-1d", ptl.linalg.solve_triangular, [(3, 3), (3,)], {"upper": True},
     RuntimeError, "linalg.solve_triangular: The input tensor B must have at least 2 "
     "dimensions."),
    ("solve_triangular-shape", ptl.linalg.solve_triangular, [(3, 4), (3, 1)], {"upper": True},
     RuntimeError, "linalg.solve_triangular: A must be batches of square matrices, but they "
     "are 3 by 4 matrices"),
    ("solve_triangular-rhs", ptl.linalg.solve_triangular, [(3, 3), (4, 1)], {"upper": True},
     RuntimeError, "linalg.solve_triangular: Incompatible shapes of A and B for the equation "
     "AX = B (3x3 and 4x1)"),
    ("solve_triangular-long", ptl.linalg.solve_triangular,
     [(3, 3, ptl.int64), (3, 1, ptl.int64)], {"upper": True}, NotImplementedError,
     "\"triangular_solve_cpu\" not implemented for 'Long'"),
]


def _args(lib, specs):
    out = []
    for spec in specs:
        *shape, dtype = spec if spec and not isinstance(spec[-1], int) else (*spec, None)
        dtype = getattr(lib, str(dtype or ptl.float64).split(".")[-1])
        out.append(lib.ones(tuple(shape), dtype=dtype))
    return out


@pytest.mark.parametrize("name, fn, specs, kw, exc, msg", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name, fn, specs, kw, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        fn(*_args(ptl, specs), **kw)


@torch_ref
@pytest.mark.parametrize("name, fn, specs, kw, exc, msg", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(name, fn, specs, kw, exc, msg):
    tfn = {ptl.linalg.inv: torch.linalg.inv, ptl.linalg.det: torch.linalg.det,
           ptl.det: torch.det, ptl.linalg.slogdet: torch.linalg.slogdet,
           ptl.linalg.solve: torch.linalg.solve, ptl.linalg.lu_factor: torch.linalg.lu_factor,
           ptl.linalg.solve_triangular: torch.linalg.solve_triangular}[fn]
    with pytest.raises(exc, match=re.escape(msg)):
        tfn(*_args(torch, specs), **kw)


def _x(shape, seed=0):
    t, _ = _matrix(shape, ptl.float64, "contiguous", seed)
    return t.requires_grad_()


GRAD_CASES = [
    ("lu_factor", lambda A: ptl.linalg.lu_factor(A).LU, [(3, 3)]),
    ("lu_factor-batched", lambda A: ptl.linalg.lu_factor_ex(A).LU, [(2, 4, 4)]),
    ("lu_factor-tall", lambda A: ptl.linalg.lu_factor(A).LU, [(5, 3)]),
    ("lu_factor-wide-batched", lambda A: ptl.linalg.lu_factor_ex(A).LU, [(2, 3, 5)]),
    ("lu_factor-column", lambda A: ptl.linalg.lu_factor(A).LU, [(4, 1)]),
    ("lu_factor-row", lambda A: ptl.linalg.lu_factor(A).LU, [(1, 4)]),
    ("lu_factor-empty-columns", lambda A: ptl.linalg.lu_factor(A).LU, [(3, 0)]),
    ("solve", lambda A, B: ptl.linalg.solve(A, B), [(3, 3), (3, 2)]),
    ("solve-vector", lambda A, B: ptl.linalg.solve(A, B), [(2, 3, 3), (2, 3)]),
    ("solve-broadcast", lambda A, B: ptl.linalg.solve(A, B), [(3, 3), (2, 3, 2)]),
    ("solve-right", lambda A, B: ptl.linalg.solve(A, B, left=False), [(2, 3, 3), (4, 3)]),
    ("inv", lambda A: ptl.linalg.inv(A), [(3, 3)]),
    ("inv-batched", lambda A: ptl.linalg.inv_ex(A).inverse, [(2, 3, 3)]),
    ("det", lambda A: ptl.linalg.det(A), [(3, 3)]),
    ("det-batched", lambda A: ptl.det(A), [(2, 2, 2)]),
    ("slogdet", lambda A: ptl.linalg.slogdet(A).logabsdet, [(2, 3, 3)]),
    ("solve_triangular", lambda A, B: ptl.linalg.solve_triangular(A, B, upper=True),
     [(3, 3), (3, 2)]),
    ("solve_triangular-right-unit", lambda A, B: ptl.linalg.solve_triangular(
        A, B, upper=False, left=False, unitriangular=True), [(2, 3, 3), (2, 3)]),
]


@pytest.mark.parametrize("name, fn, shapes", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradcheck_and_gradgradcheck(name, fn, shapes):
    inputs = [_x(s, i) for i, s in enumerate(shapes)]
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 2), (2, 2, 4), (2, 1, 3, 6)])
def test_lu_factor_grad_of_rectangular_matrices_matches_a_finite_difference(shape):
    """gLU . dLU = gA . dA along a random direction, with the pivots kept fixed."""
    g = np.random.default_rng(7)
    a, d, w = (g.uniform(-2, 2, shape) for _ in range(3))
    A = ptl.tensor(a, requires_grad=True)
    ptl.linalg.lu_factor(A).LU.backward(ptl.tensor(w))
    h = 1e-6
    plus = ptl.linalg.lu_factor(ptl.tensor(a + h * d)).LU.numpy()
    minus = ptl.linalg.lu_factor(ptl.tensor(a - h * d)).LU.numpy()
    np.testing.assert_allclose((A.grad.numpy() * d).sum(),
                               (w * (plus - minus) / (2 * h)).sum(), rtol=1e-6)


@torch_ref
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 2), (2, 2, 4), (4, 1), (1, 4)])
def test_lu_factor_grad_of_rectangular_matrices_matches_torch(shape):
    g = np.random.default_rng(8)
    a, w = g.uniform(-2, 2, shape), g.uniform(-2, 2, shape)
    grads = []
    for L in (ptl, torch):
        A = L.tensor(a, requires_grad=True)
        L.linalg.lu_factor(A).LU.backward(L.tensor(w))
        grads.append(np.asarray(A.grad.numpy()))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10, atol=1e-12)


def test_grad_fn_names():
    A, B = _x((3, 3)), _x((3, 2), 1)
    names = {
        "LinalgLuFactorExBackward0": ptl.linalg.lu_factor(A).LU,
        "LinalgSolveExBackward0": ptl.linalg.solve(A, B),
        "LinalgInvExBackward0": ptl.linalg.inv(A),
        "LinalgDetBackward0": ptl.det(A),
        "LinalgSlogdetBackward0": ptl.linalg.slogdet(A).logabsdet,
        "LinalgSolveTriangularBackward0": ptl.linalg.solve_triangular(A, B, upper=True),
    }
    for name, out in names.items():
        assert type(out.grad_fn).__name__ == name


@torch_ref
def test_values_and_grads_match_torch():
    g = np.random.default_rng(4)
    a = g.standard_normal((2, 4, 4)) + 3 * np.eye(4)
    b = g.standard_normal((2, 4, 3))
    fns = [lambda L, A, B: L.linalg.solve(A, B), lambda L, A, B: L.linalg.inv(A) @ B,
           lambda L, A, B: L.linalg.det(A)[:, None, None] * B,
           lambda L, A, B: L.linalg.slogdet(A)[1][:, None, None] * B,
           lambda L, A, B: L.linalg.solve_triangular(A, B, upper=False, left=True),
           lambda L, A, B: L.linalg.lu_factor(A).LU @ B]
    for fn in fns:
        outs = []
        for L in (ptl, torch):
            A = L.tensor(a, requires_grad=True)
            B = L.tensor(b, requires_grad=True)
            y = fn(L, A, B)
            (y * y).sum().backward()
            outs.append([np.asarray(t.detach().numpy()) for t in (y, A.grad, B.grad)])
        for got, ref in zip(*outs):
            np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)


def test_no_leaks():
    A, B = _x((3, 3)), _x((3, 2), 1)

    def run():
        ptl.linalg.solve(A, B).sum().backward()
        ptl.linalg.det(A).backward()
        ptl.linalg.lu_factor(A.detach())
        try:
            ptl.linalg.inv(ptl.zeros(2, 2))
        except ptl.linalg.LinAlgError:
            pass
    assert_no_leak(run)
