"""lobpcg (pytorchlite/_lobpcg.py): the k largest / smallest eigenpairs of symmetric
positive definite standard and generalized problems against numpy.linalg.eigh in float64
(eigenvalues, and eigenvectors up to sign / the spanned subspace), for both methods, dense,
batched and sparse A, a preconditioner, the tracker protocol and its force_stop, gradients
(gradcheck in float64, and PyTorch's gradient), and PyTorch's errors.  With the same start X
PyTorch runs the same iteration, so its results are compared too."""
import numpy as np
import pytest

import golden
import pytorchlite as ptl
from helpers import torch


def _spd(m, seed, spread=10.0, batch=()):
    """A symmetric positive definite (batch, m, m) matrix with well-separated eigenvalues."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal(batch + (m, m)))
    e = np.linspace(1.0, spread, m) * (1 + 0.01 * rng.random(m))
    return (q * e[..., None, :]) @ np.swapaxes(q, -1, -2)


def _start(m, n, seed=7):
    return np.random.default_rng(seed).standard_normal((m, n))


def _check_eigvecs(A, B, E, U, ref_vals):
    """U's columns are eigenvectors of A x = e B x for E, B-normalised."""
    A, U, E = np.asarray(A), U.numpy(), E.numpy()
    Bm = np.eye(A.shape[-1]) if B is None else np.asarray(B)
    np.testing.assert_allclose(E, ref_vals, rtol=1e-9)
    np.testing.assert_allclose(A @ U, Bm @ U * E, atol=1e-6 * np.abs(ref_vals).max())
    np.testing.assert_allclose(U.T @ Bm @ U, np.eye(U.shape[1]), atol=1e-8)


@pytest.mark.parametrize("method", ["ortho", "basic"])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("m,k", [(9, 1), (12, 3), (30, 4)])
def test_lobpcg_standard_matches_eigh(method, largest, m, k):
    a = _spd(m, seed=m + k)
    vals = np.linalg.eigvalsh(a)
    ref = vals[::-1][:k] if largest else vals[:k]
    E, U = ptl.lobpcg(ptl.tensor(a), X=ptl.tensor(_start(m, k)), largest=largest,
                      method=method, tol=1e-12, niter=-1)
    assert tuple(E.shape) == (k,) and tuple(U.shape) == (m, k) and E.dtype == ptl.float64
    _check_eigvecs(a, None, E, U, ref)


def _pencil(m):
    a, b = _spd(m, seed=1, spread=30.0), _spd(m, seed=2, spread=3.0)
    Li = np.linalg.inv(np.linalg.cholesky(b))
    return a, b, np.linalg.eigvalsh(Li @ a @ Li.T)


def test_lobpcg_generalized_matches_eigh():
    m, k = 15, 3
    a, b, vals = _pencil(m)
    for largest, ref in [(True, vals[::-1][:k]), (False, vals[:k])]:
        E, U = ptl.lobpcg(ptl.tensor(a), B=ptl.tensor(b), X=ptl.tensor(_start(m, k)),
                          largest=largest, tol=1e-12, niter=-1)
        _check_eigvecs(a, b, E, U, ref)


@pytest.mark.parametrize("largest", [True, False])
def test_lobpcg_generalized_basic_as_pytorch(largest):
    # the basic method's soft locking may settle twice on one eigenpair here (PyTorch's
    # does the same from this start): every pair found is an eigenpair of the pencil
    m, k = 15, 3
    a, b, vals = _pencil(m)
    X = _start(m, k)
    E, U = ptl.lobpcg(ptl.tensor(a), B=ptl.tensor(b), X=ptl.tensor(X), largest=largest,
                      method="basic", tol=1e-12, niter=-1)
    for e in E.tolist():
        assert np.abs(vals - e).min() < 1e-9 * vals.max()
    np.testing.assert_allclose(a @ U.numpy(), b @ U.numpy() * E.numpy(), atol=1e-8)
    golden.assert_close(E, lambda: torch.lobpcg(
        torch.tensor(a), B=torch.tensor(b), X=torch.tensor(X), largest=largest,
        method="basic", tol=1e-12, niter=-1)[0], rtol=1e-9)


def test_lobpcg_random_start():
    m, k = 30, 4
    a = _spd(m, seed=2)
    ptl.manual_seed(0)
    E, U = ptl.lobpcg(ptl.tensor(a), k=k, tol=1e-12, niter=-1)
    _check_eigvecs(a, None, E, U, np.linalg.eigvalsh(a)[::-1][:k])


def test_lobpcg_n_larger_than_k_and_float32():
    m = 24
    a = _spd(m, seed=5)
    ptl.manual_seed(1)
    E, U = ptl.lobpcg(ptl.tensor(a), k=2, n=5, tol=1e-12, niter=-1)
    assert tuple(E.shape) == (2,) and tuple(U.shape) == (m, 2)
    _check_eigvecs(a, None, E, U, np.linalg.eigvalsh(a)[::-1][:2])
    E32, U32 = ptl.lobpcg(ptl.tensor(a, dtype=ptl.float32), k=2,
                          X=ptl.tensor(_start(m, 2), dtype=ptl.float32))
    assert E32.dtype == ptl.float32 and U32.dtype == ptl.float32
    np.testing.assert_allclose(E32.numpy(), np.linalg.eigvalsh(a)[::-1][:2], rtol=1e-4)


def test_lobpcg_batched():
    m, k = 12, 2
    a = _spd(m, seed=3, batch=(2, 3))
    X = np.random.default_rng(4).standard_normal((2, 3, m, k))
    E, U = ptl.lobpcg(ptl.tensor(a), X=ptl.tensor(X), tol=1e-12, niter=-1, largest=False)
    assert tuple(E.shape) == (2, 3, k) and tuple(U.shape) == (2, 3, m, k)
    vals = np.linalg.eigvalsh(a)[..., :k]
    for i in range(2):
        for j in range(3):
            _check_eigvecs(a[i, j], None, E[i, j], U[i, j], vals[i, j])


def test_lobpcg_sparse_and_preconditioner():
    m, k = 20, 2
    a = _spd(m, seed=8)
    a[np.abs(a) < 0.3] = 0.0
    a = (a + a.T) / 2 + m * np.eye(m)          # still symmetric positive definite
    ref = np.linalg.eigvalsh(a)[::-1][:k]
    sa = ptl.tensor(a).to_sparse()
    E, U = ptl.lobpcg(sa, X=ptl.tensor(_start(m, k)), tol=1e-12, niter=-1)
    _check_eigvecs(a, None, E, U, ref)
    iK = ptl.tensor(np.diag(1 / np.diag(a)))    # Jacobi preconditioner
    E, U = ptl.lobpcg(ptl.tensor(a), X=ptl.tensor(_start(m, k)), iK=iK, tol=1e-12, niter=-1)
    _check_eigvecs(a, None, E, U, ref)


def test_lobpcg_tracker_and_force_stop():
    m = 18
    a = ptl.tensor(_spd(m, seed=9))
    seen = []

    def tracker(worker):
        seen.append((worker.ivars["istep"], worker.ivars["converged_count"],
                     worker.tvars["rerr"].clone(), worker.E.clone()))
        assert set(worker.iparams) >= {"m", "n", "k", "niter", "ortho_i_max", "ortho_j_max"}
        assert set(worker.fparams) >= {"tol", "ortho_tol", "ortho_tol_drop",
                                       "ortho_tol_replace"}
        assert worker.bparams["largest"] is True and worker.bparams["ortho_use_drop"] is False
        assert tuple(worker.S.shape) == (m, 6) and tuple(worker.R.shape) == (m, 2)
        if worker.ivars["istep"] == 3:
            worker.bvars["force_stop"] = True

    ptl.lobpcg(a, k=2, X=ptl.tensor(_start(m, 2)), tracker=tracker, tol=1e-300)
    assert [s[0] for s in seen] == [1, 2, 3]
    assert all(s[1] == 0 for s in seen)
    assert seen[-1][2].max() < seen[0][2].max()
    iterations = []
    ptl.lobpcg(a, k=2, X=ptl.tensor(_start(m, 2)), niter=4, tol=1e-300,
               tracker=lambda w: iterations.append(w.ivars["iterations_left"]))
    assert iterations == [3, 2, 1, 0]


def test_lobpcg_ortho_options():
    m, k = 20, 3
    a = _spd(m, seed=11)
    ref = np.linalg.eigvalsh(a)[::-1][:k]
    E, U = ptl.lobpcg(ptl.tensor(a), X=ptl.tensor(_start(m, k)), tol=1e-12, niter=-1,
                      ortho_iparams={"ortho_i_max": 5, "ortho_j_max": 2},
                      ortho_fparams={"ortho_tol": 1e-14},
                      ortho_bparams={"ortho_use_drop": True})
    _check_eigvecs(a, None, E, U, ref)


@pytest.mark.parametrize("method", ["ortho", "basic"])
def test_lobpcg_matches_torch_from_the_same_start(method):
    m, k = 16, 3
    a, X = _spd(m, seed=12), _start(m, k)
    E, U = ptl.lobpcg(ptl.tensor(a), X=ptl.tensor(X), method=method, tol=1e-12, niter=-1)
    golden.assert_close(E, lambda: torch.lobpcg(torch.tensor(a), X=torch.tensor(X),
                                                method=method, tol=1e-12, niter=-1)[0],
                        rtol=1e-10, sub="E")
    # eigenvectors up to sign
    signs = np.sign(U.numpy()[0])
    golden.assert_close(U * ptl.tensor(signs), lambda: (lambda u: u * torch.sign(u[0]))(
        torch.lobpcg(torch.tensor(a), X=torch.tensor(X), method=method, tol=1e-12,
                     niter=-1)[1]), rtol=1e-6, atol=1e-8, sub="U")


def _signed(f):
    """f's eigenvectors with the sign fixed by their first entry (gradcheck perturbs A)."""
    def g(A):
        E, U = f(A)
        return E, U * U[0].sign()
    return g


def test_lobpcg_gradcheck():
    m, k = 9, 2
    A = ptl.tensor(_spd(m, seed=13), requires_grad=True)
    X = ptl.tensor(_start(m, k))
    for largest in (True, False):
        f = _signed(lambda A: ptl.lobpcg(A, X=X.clone(), largest=largest, tol=1e-14,
                                         niter=-1))
        assert ptl.autograd.gradcheck(f, (A,), atol=1e-6, rtol=1e-5)


def test_lobpcg_gradient_matches_torch():
    m, k = 9, 2
    a, X = _spd(m, seed=14), _start(m, k)
    w = np.random.default_rng(15).standard_normal((m, k))

    def run(lib):
        A = lib.tensor(a, requires_grad=True)
        E, U = lib.lobpcg(A, X=lib.tensor(X), tol=1e-14, niter=-1)
        U = U * lib.sign(U[0])
        (E.sum() + (U * lib.tensor(w)).sum()).backward()
        return {"grad": A.grad}
    golden.assert_same_results(run, rtol=1e-6, atol=1e-8)


def _errors(lib, case):
    eye = lib.eye(9, dtype=lib.float64)
    if case == "rows":
        return lib.lobpcg(eye, k=4)
    if case == "rows_n":
        return lib.lobpcg(eye, k=1, n=4)
    if case == "rows_X":
        return lib.lobpcg(eye, X=lib.ones(9, 4, dtype=lib.float64))
    if case == "square":
        return lib.lobpcg(lib.ones(9, 8, dtype=lib.float64))
    if case == "B_shape":
        return lib.lobpcg(eye, B=lib.eye(8, dtype=lib.float64))
    if case == "X_shape":
        return lib.lobpcg(eye, k=1, X=lib.ones(8, 1, dtype=lib.float64))
    A = eye.clone().requires_grad_()          # "backward_B"
    E, _ = lib.lobpcg(A * 2, B=eye, X=lib.ones(9, 1, dtype=lib.float64))
    return E.sum().backward()


@pytest.mark.parametrize("case", ["rows", "rows_n", "rows_X", "square", "B_shape", "X_shape",
                                  "backward_B"])
def test_lobpcg_errors(case):
    golden.assert_raises(lambda: _errors(ptl, case), lambda: _errors(torch, case))
