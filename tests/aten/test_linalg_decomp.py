"""The factorisations of src/aten/native/linalg_decomp.c: linalg.cholesky(_ex), linalg.qr
(Householder) and linalg.eigh / eigvalsh (tridiagonalisation + implicit QL), with their
derivatives (src/autograd/derivatives/linalg_decomp.c).  References: numpy.linalg in float64
on batched, 0x0, size-0-batch and transposed inputs in float32 and float64; eigenvectors are
checked through A V = V diag(w) and V^T V = I (their signs are a free choice); every error
path with PyTorch's exception type and text; gradcheck and gradgradcheck in float64; the
installed torch for error texts and values where it is present."""
import re

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck, gradgradcheck

from helpers import assert_close, assert_no_leak, make, torch, torch_ref

DTYPES = [ptl.float32, ptl.float64]
SQUARE = [(1, 1), (3, 3), (7, 7), (2, 4, 4), (2, 1, 3, 3), (0, 3, 3), (0, 0), (2, 0, 0)]


def _tol(dtype):
    return dict(rtol=1e-9, atol=1e-11) if dtype == ptl.float64 else dict(rtol=1e-4, atol=1e-5)


def _sym(shape, seed=0, spd=False):
    """A random symmetric matrix (batch) as float64 values; positive-definite when spd."""
    a = np.random.default_rng(seed).uniform(-1, 1, shape)
    a = a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1]) if spd else \
        a + np.swapaxes(a, -1, -2)
    return a


def _as(a, dtype, transposed=False):
    """a as a pytorchlite tensor of dtype (a transposed view of a contiguous copy when asked),
    and its values in float64."""
    t = ptl.tensor(a, dtype=dtype)
    if transposed:
        t = t.mT.contiguous().mT
    return t, np.asarray(t.double().numpy(), dtype=np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("shape", SQUARE)
def test_cholesky_matches_numpy(shape, transposed, dtype):
    A, a = _as(_sym(shape, spd=True), dtype, transposed)
    L = ptl.linalg.cholesky(A)
    assert L.dtype == dtype
    ref = np.linalg.cholesky(a) if a.size else a.copy()
    assert_close(L, ref, **_tol(dtype))
    assert_close(ptl.linalg.cholesky(A, upper=True), np.swapaxes(ref, -1, -2), **_tol(dtype))
    L, info = ptl.linalg.cholesky_ex(A)
    assert_close(L, ref, **_tol(dtype))
    assert_close(info, np.zeros(shape[:-2], dtype=np.int32))


def test_cholesky_reads_one_triangle_and_reports_the_failing_minor():
    a = _sym((4, 4), 1, spd=True)
    lower = np.tril(a) + np.triu(np.full((4, 4), 99.0), 1)
    assert_close(ptl.linalg.cholesky(ptl.tensor(lower)), np.linalg.cholesky(a), rtol=1e-12,
                 atol=1e-13)
    upper = np.triu(a) + np.tril(np.full((4, 4), 99.0), -1)
    assert_close(ptl.linalg.cholesky(ptl.tensor(upper), upper=True),
                 np.linalg.cholesky(a).T, rtol=1e-12, atol=1e-13)
    bad = np.stack([np.eye(3), np.diag([1.0, 1.0, -1.0]), np.diag([1.0, 0.0, 1.0])])
    _, info = ptl.linalg.cholesky_ex(ptl.tensor(bad))
    assert_close(info, np.array([0, 3, 2], dtype=np.int32))
    with pytest.raises(ptl.linalg.LinAlgError, match=re.escape(
            "linalg.cholesky: (Batch element 1): The factorization could not be completed "
            "because the input is not positive-definite (the leading minor of order 3 is not "
            "positive-definite).")):
        ptl.linalg.cholesky(ptl.tensor(bad))
    with pytest.raises(ptl.linalg.LinAlgError, match=re.escape(
            "linalg.cholesky_ex: The factorization could not be completed because the input is "
            "not positive-definite (the leading minor of order 1 is not positive-definite).")):
        ptl.linalg.cholesky_ex(-ptl.eye(2), check_errors=True)


QR_SHAPES = [(1, 1), (4, 4), (6, 3), (3, 6), (2, 5, 4), (2, 4, 5), (0, 3), (3, 0), (2, 0, 2),
             (0, 0)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
@pytest.mark.parametrize("shape", QR_SHAPES)
def test_qr_matches_numpy(shape, mode, layout, dtype):
    A, a = make(shape, dtype, layout, 0, -1, 1)
    a = np.asarray(a, dtype=np.float64)
    Q, R = ptl.linalg.qr(A, mode)
    m, n = shape[-2:]
    k = min(m, n)
    if mode == "r":
        assert tuple(Q.shape) == (0,)
        assert_close(R, np.linalg.qr(a, "r"), **_tol(dtype))
        return
    qn, rn = np.linalg.qr(a, mode)
    # Householder with LAPACK's sign choice: the factors themselves match
    assert_close(Q, qn, **_tol(dtype))
    assert_close(R, rn, **_tol(dtype))
    q, r = np.asarray(Q.double().numpy()), np.asarray(R.double().numpy())
    cols = m if mode == "complete" else k
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(
        np.eye(cols), q.shape[:-2] + (cols, cols)), **_tol(dtype))
    np.testing.assert_allclose(q @ r, a, **_tol(dtype))
    assert (np.tril(r, -1) == 0).all()


def test_qr_of_rank_deficient_matrices():
    a = np.outer(np.arange(1.0, 6.0), np.ones(3))
    Q, R = ptl.linalg.qr(ptl.tensor(a))
    q, r = Q.numpy(), R.numpy()
    np.testing.assert_allclose(q.T @ q, np.eye(3), atol=1e-14)
    np.testing.assert_allclose(q @ r, a, atol=1e-13)
    Q, R = ptl.linalg.qr(ptl.zeros(4, 2, dtype=ptl.float64))
    np.testing.assert_allclose(Q.numpy().T @ Q.numpy(), np.eye(2), atol=0)
    assert not R.any()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("shape", SQUARE + [(40, 40)])
def test_eigh_matches_numpy(shape, transposed, uplo, dtype):
    a = _sym(shape, 2)
    # only the named triangle is read: spoil the other one
    if shape[-1] > 1:
        junk = np.triu(np.full(shape, 7.0), 1)
        a = np.tril(a) + junk if uplo == "L" else np.triu(a) + np.swapaxes(junk, -1, -2)
    A, a = _as(a, dtype, transposed)
    w, V = ptl.linalg.eigh(A, UPLO=uplo)
    assert w.dtype == dtype and V.dtype == dtype
    wn = np.linalg.eigvalsh(a, UPLO=uplo) if a.size else np.zeros(shape[:-1])
    tol = _tol(dtype) if dtype == ptl.float32 else dict(rtol=1e-10, atol=1e-12 * shape[-1])
    assert_close(w, wn, **tol)
    assert_close(ptl.linalg.eigvalsh(A, UPLO=uplo), wn, **tol)
    full = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2) if uplo == "L" else \
        np.triu(a) + np.swapaxes(np.triu(a, 1), -1, -2)
    v = np.asarray(V.double().numpy())
    np.testing.assert_allclose(full @ v, v * np.asarray(w.double().numpy())[..., None, :], **tol)
    np.testing.assert_allclose(np.swapaxes(v, -1, -2) @ v, np.broadcast_to(
        np.eye(shape[-1]), shape), **tol)


def test_eigh_repeated_and_graded_eigenvalues():
    g = np.random.default_rng(5)
    q, _ = np.linalg.qr(g.standard_normal((6, 6)))
    for lam in ([2, 2, 2, -1, -1, 0], [1, 1e-4, 1e-8, -1e-8, 1e4, 5], [3.0] * 6):
        a = q @ np.diag(lam) @ q.T
        a = (a + a.T) / 2
        w, V = ptl.linalg.eigh(ptl.tensor(a))
        assert_close(w, np.sort(np.array(lam, dtype=np.float64)), rtol=1e-10, atol=1e-11)
        v = V.numpy()
        np.testing.assert_allclose(v.T @ v, np.eye(6), atol=1e-13)
        np.testing.assert_allclose(a @ v, v * w.numpy(), atol=1e-11)
    w, V = ptl.linalg.eigh(ptl.diag(ptl.tensor([3.0, 1.0, 2.0], dtype=ptl.float64)))
    assert_close(w, np.array([1.0, 2.0, 3.0]), atol=0, rtol=0)


ERRORS = [
    ("cholesky", ptl.linalg.cholesky, (2, 3), {}, RuntimeError,
     "linalg.cholesky: A must be batches of square matrices, but they are 2 by 3 matrices"),
    ("cholesky-long", ptl.linalg.cholesky, (2, 2, "int64"), {}, RuntimeError,
     "linalg.cholesky: Expected a floating point or complex tensor as input. Got Long"),
    ("cholesky-half", ptl.linalg.cholesky, (3, 3, "float16"), {}, NotImplementedError,
     "\"cholesky_cpu\" not implemented for 'Half'"),
    ("qr-1d", ptl.linalg.qr, (3,), {}, RuntimeError,
     "linalg.qr: The input tensor A must have at least 2 dimensions."),
    ("qr-mode", ptl.linalg.qr, (3, 3), {"mode": "x"}, RuntimeError,
     "qr received unrecognized mode 'x' but expected one of 'reduced' (default), 'r', or "
     "'complete'"),
    ("qr-long", ptl.linalg.qr, (3, 3, "int64"), {}, RuntimeError,
     "linalg.qr: Expected a floating point or complex tensor as input. Got Long"),
    ("qr-half", ptl.linalg.qr, (3, 3, "float16"), {}, NotImplementedError,
     "\"geqrf_cpu\" not implemented for 'Half'"),
    ("eigh", ptl.linalg.eigh, (2, 3), {}, RuntimeError,
     "linalg.eigh: A must be batches of square matrices, but they are 2 by 3 matrices"),
    ("eigh-uplo", ptl.linalg.eigh, (3, 3), {"UPLO": "X"}, RuntimeError,
     "Expected UPLO argument to be 'L' or 'U', but got X"),
    ("eigh-long", ptl.linalg.eigh, (3, 3, "int64"), {}, NotImplementedError,
     "\"linalg_eigh_cpu\" not implemented for 'Long'"),
    ("eigvalsh", ptl.linalg.eigvalsh, (2, 3), {}, RuntimeError,
     "linalg.eigh: A must be batches of square matrices, but they are 2 by 3 matrices"),
]


def _arg(lib, spec):
    *shape, dtype = spec if isinstance(spec[-1], str) else (*spec, "float64")
    return lib.ones(tuple(shape), dtype=getattr(lib, dtype))


@pytest.mark.parametrize("name, fn, spec, kw, exc, msg", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name, fn, spec, kw, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        fn(_arg(ptl, spec), **kw)


@torch_ref
@pytest.mark.parametrize("name, fn, spec, kw, exc, msg", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(name, fn, spec, kw, exc, msg):
    tfn = getattr(torch.linalg, fn.__name__.split("linalg_")[-1])
    with pytest.raises(exc, match=re.escape(msg)):
        tfn(_arg(torch, spec), **kw)


def _leaf(a):
    return ptl.tensor(a, requires_grad=True)


def _spd_of(x):
    """A symmetric positive-definite function of any square x (gradcheck's perturbations
    stay inside the domain)."""
    return x @ x.mT + x.shape[-1] * ptl.eye(x.shape[-1], dtype=x.dtype)


GRAD_CASES = [
    ("cholesky", lambda x: ptl.linalg.cholesky(_spd_of(x)), (3, 3)),
    ("cholesky-upper-batched", lambda x: ptl.linalg.cholesky(_spd_of(x), upper=True),
     (2, 3, 3)),
    ("qr-square", lambda x: ptl.linalg.qr(x), (3, 3)),
    ("qr-tall-batched", lambda x: ptl.linalg.qr(x), (2, 4, 3)),
    ("qr-wide", lambda x: ptl.linalg.qr(x), (2, 4)),
    ("qr-complete-wide", lambda x: ptl.linalg.qr(x, "complete"), (2, 3)),
    ("eigvalsh", lambda x: ptl.linalg.eigvalsh(x + x.mT), (3, 3)),
    ("eigh-batched", lambda x: (lambda w, V: (w, V.abs()))(*ptl.linalg.eigh(x + x.mT)),
     (2, 3, 3)),
    ("eigh-upper", lambda x: (lambda w, V: (w, V.abs()))(*ptl.linalg.eigh(x + x.mT, "U")),
     (4, 4)),
]


@pytest.mark.parametrize("name, fn, shape", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradcheck_and_gradgradcheck(name, fn, shape):
    x = _leaf(np.random.default_rng(7).uniform(-1, 1, shape))
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_qr_derivative_refusals():
    x = _leaf(np.random.default_rng(8).uniform(-1, 1, (4, 3)))
    with pytest.raises(RuntimeError, match=re.escape(
            "The derivative of linalg.qr depends on Q, which is not computed when mode='r'.")):
        ptl.linalg.qr(x, mode="r").R.sum().backward()
    with pytest.raises(RuntimeError, match=re.escape(
            "The QR decomposition is not differentiable when mode='complete' and nrows > "
            "ncols.")):
        ptl.linalg.qr(x, mode="complete").Q.sum().backward()


def test_grad_fn_names_and_named_tuples():
    x = _leaf(_sym((3, 3), 9, spd=True))
    res = ptl.linalg.cholesky_ex(x)
    assert type(res).__name__ == "linalg_cholesky_ex" and res._fields == ("L", "info")
    assert type(res.L.grad_fn).__name__ == "LinalgCholeskyExBackward0"
    assert type(ptl.linalg.cholesky(x).grad_fn).__name__ == "LinalgCholeskyExBackward0"
    res = ptl.linalg.qr(x)
    assert res._fields == ("Q", "R") and type(res.Q.grad_fn).__name__ == "LinalgQrBackward0"
    res = ptl.linalg.eigh(x)
    assert res._fields == ("eigenvalues", "eigenvectors")
    assert type(res.eigenvalues.grad_fn).__name__ == "LinalgEighBackward0"
    assert type(ptl.linalg.eigvalsh(x).grad_fn).__name__ == "LinalgEighBackward0"


@torch_ref
def test_values_and_grads_match_torch():
    a = _sym((2, 4, 4), 10, spd=True)
    fns = [lambda L, A: L.linalg.cholesky(A), lambda L, A: L.linalg.qr(A).R,
           lambda L, A: L.linalg.qr(A).Q, lambda L, A: L.linalg.eigvalsh(A),
           lambda L, A: L.linalg.eigh(A).eigenvectors.abs()]
    for fn in fns:
        outs = []
        for L in (ptl, torch):
            A = L.tensor(a, requires_grad=True)
            y = fn(L, A)
            (y * y.detach().sign()).sum().backward()
            outs.append([np.asarray(t.detach().numpy()) for t in (y, A.grad)])
        for got, ref in zip(*outs):
            np.testing.assert_allclose(got, ref, rtol=1e-8, atol=1e-10)


def test_no_leaks():
    x = _leaf(_sym((3, 3), 11, spd=True))

    def run():
        ptl.linalg.cholesky(x).sum().backward()
        ptl.linalg.qr(x).Q.sum().backward()
        ptl.linalg.eigvalsh(x).sum().backward()
        try:
            ptl.linalg.cholesky(-ptl.eye(2))
        except ptl.linalg.LinAlgError:
            pass
    assert_no_leak(run)
