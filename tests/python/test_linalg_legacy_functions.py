"""The deprecated torch-namespace linear algebra (cholesky, cholesky_solve, cholesky_inverse,
qr, triangular_solve, lu, lu_unpack, lu_solve, chain_matmul, nuclear_norm, frobenius_norm,
orgqr, ormqr, geqrf) and linalg.lu / lu_solve / multi_dot / vander / diagonal / tensorinv /
tensorsolve / cond / householder_product: against
NumPy in float64 on batched inputs, gradcheck, PyTorch's deprecation warnings and errors, and
torch when installed."""
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
from helpers import assert_close, assert_raises_like_torch, torch, torch_ref

pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated")


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _spd(*batch, n=4, seed=0):
    a = _rand(*batch, n, n, seed=seed)
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


@pytest.mark.parametrize("batch", [(), (2,), (2, 3)])
def test_cholesky_family(batch):
    a = _spd(*batch)
    b = _rand(*batch, 4, 3, seed=1)
    L = ptl.cholesky(ptl.tensor(a))
    assert_close(L, np.linalg.cholesky(a))
    U = ptl.cholesky(ptl.tensor(a), upper=True)
    assert_close(U, np.swapaxes(np.linalg.cholesky(a), -1, -2))
    assert_close(ptl.cholesky_solve(ptl.tensor(b), L), np.linalg.solve(a, b))
    assert_close(ptl.cholesky_solve(ptl.tensor(b), U, True), np.linalg.solve(a, b))
    assert_close(ptl.cholesky_inverse(L), np.linalg.inv(a))
    assert_close(ptl.cholesky_inverse(U, upper=True), np.linalg.inv(a))
    assert_close(ptl.tensor(b).cholesky_solve(L), np.linalg.solve(a, b))


def test_qr_and_triangular_solve():
    a = _rand(2, 5, 3)
    Q, R = ptl.qr(ptl.tensor(a))
    assert tuple(Q.shape) == (2, 5, 3) and tuple(R.shape) == (2, 3, 3)
    assert_close(Q @ R, a)
    assert_close(R, np.triu(R.numpy()))
    Qc, Rc = ptl.qr(ptl.tensor(a), some=False)
    assert tuple(Qc.shape) == (2, 5, 5) and tuple(Rc.shape) == (2, 5, 3)
    assert_close(Qc @ Rc, a)
    assert type(ptl.qr(ptl.tensor(a[0]))).__name__ == "qr"
    t = np.triu(_rand(3, 3, seed=2)) + 3 * np.eye(3)
    b = _rand(3, 2, seed=3)
    x, coefficient = ptl.triangular_solve(ptl.tensor(b), ptl.tensor(t))
    assert_close(x, np.linalg.solve(t, b))
    assert_close(coefficient, t)
    res = ptl.triangular_solve(ptl.tensor(b), ptl.tensor(t), transpose=True)
    assert_close(res.solution, np.linalg.solve(t.T, b))
    lower = t.T
    unit = np.tril(lower, -1) + np.eye(3)
    assert_close(ptl.triangular_solve(ptl.tensor(b), ptl.tensor(lower), False,
                                      unitriangular=True).solution, np.linalg.solve(unit, b))
    assert_close(ptl.tensor(b).triangular_solve(ptl.tensor(t), True).solution,
                 np.linalg.solve(t, b))


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (3, 5), (5, 3)])
def test_lu_family(shape):
    a = _rand(*shape)
    LU, pivots = ptl.lu(ptl.tensor(a))
    P, L, U = ptl.lu_unpack(LU, pivots)
    assert_close(P @ L @ U, a)
    k = min(shape[-2:])
    assert tuple(L.shape[-2:]) == (shape[-2], k) and tuple(U.shape[-2:]) == (k, shape[-1])
    assert_close(L, np.tril(L.numpy(), -1) + np.eye(shape[-2], k))
    assert_close(U, np.triu(U.numpy()))
    assert_close(P @ P.mT, np.broadcast_to(np.eye(shape[-2]), P.shape))
    P2, L2, U2 = ptl.linalg.lu(ptl.tensor(a))
    for x, y in ((P2, P), (L2, L), (U2, U)):
        assert_close(x, y.numpy())
    assert type(ptl.linalg.lu(ptl.tensor(a))).__name__ == "linalg_lu"
    _, _, info = ptl.lu(ptl.tensor(a), get_infos=True)
    assert_close(info, np.zeros(shape[:-2], dtype=np.int32))
    empty = ptl.lu_unpack(LU, pivots, unpack_data=False, unpack_pivots=False)
    assert all(t.numel() == 0 for t in empty)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
def test_lu_solve(left, adjoint):
    a = _rand(2, 4, 4)
    b = _rand(2, 4, 3, seed=1) if left else _rand(2, 3, 4, seed=1)
    LU, pivots = ptl.linalg.lu_factor(ptl.tensor(a))
    got = ptl.linalg.lu_solve(LU, pivots, ptl.tensor(b), left=left, adjoint=adjoint)
    m = np.swapaxes(a, -1, -2) if adjoint else a
    if left:
        want = np.linalg.solve(m, b)
    else:
        want = np.swapaxes(np.linalg.solve(np.swapaxes(m, -1, -2), np.swapaxes(b, -1, -2)),
                           -1, -2)
    assert_close(got, want, rtol=1e-10, atol=1e-10)
    if left and not adjoint:
        assert_close(ptl.lu_solve(ptl.tensor(b), LU, pivots), want, rtol=1e-10, atol=1e-10)


def test_products_and_norms():
    mats = [_rand(2, 3), _rand(3, 4, seed=1), _rand(4, 2, seed=2)]
    want = mats[0] @ mats[1] @ mats[2]
    assert_close(ptl.chain_matmul(*[ptl.tensor(m) for m in mats]), want)
    assert_close(ptl.chain_matmul(ptl.tensor(mats[0])), mats[0])
    assert_close(ptl.linalg.multi_dot([ptl.tensor(m) for m in mats]), want)
    v, w = _rand(2, seed=3), _rand(2, seed=4)
    assert_close(ptl.linalg.multi_dot([ptl.tensor(v), ptl.tensor(mats[0]), ptl.tensor(mats[1]),
                                       ptl.tensor(mats[2]), ptl.tensor(w)]),
                 v @ want @ w)
    out = ptl.empty(0, dtype=ptl.float64)
    assert ptl.linalg.multi_dot([ptl.tensor(m) for m in mats], out=out) is out
    a = _rand(2, 3, 4)
    assert_close(ptl.nuclear_norm(ptl.tensor(a[0])), np.linalg.norm(a[0], "nuc"))
    assert_close(ptl.nuclear_norm(ptl.tensor(a), (1, 2)),
                 np.array([np.linalg.norm(m, "nuc") for m in a]))
    assert_close(ptl.nuclear_norm(ptl.tensor(a[0]), True),
                 np.linalg.norm(a[0], "nuc").reshape(1, 1))
    assert_close(ptl.frobenius_norm(ptl.tensor(a), (1, 2)), np.sqrt((a ** 2).sum((1, 2))))
    assert_close(ptl.frobenius_norm(ptl.tensor(a), [0], True),
                 np.sqrt((a ** 2).sum(0, keepdims=True)))


def test_vander_and_diagonal():
    x = np.array([0.5, -2.0, 3.0])
    assert_close(ptl.linalg.vander(ptl.tensor(x)), np.vander(x, increasing=True))
    assert_close(ptl.linalg.vander(ptl.tensor(x), N=5), np.vander(x, 5, increasing=True))
    xs = np.array([[1, 2], [3, -1]])
    assert_close(ptl.linalg.vander(ptl.tensor(xs), N=3),
                 np.stack([np.vander(r, 3, increasing=True) for r in xs]))
    a = _rand(2, 3, 4)
    assert_close(ptl.linalg.diagonal(ptl.tensor(a), offset=1),
                 np.diagonal(a, 1, axis1=-2, axis2=-1))
    assert_close(ptl.linalg.diagonal(ptl.tensor(a), dim1=0, dim2=2), np.diagonal(a, 0, 0, 2))


def test_tensorinv_tensorsolve_cond():
    a = _rand(6, 2, 3)
    assert_close(ptl.linalg.tensorinv(ptl.tensor(a), 1), np.linalg.tensorinv(a, 1))
    b = _rand(2, 3, 2, 3, seed=1)
    assert_close(ptl.linalg.tensorinv(ptl.tensor(b)), np.linalg.tensorinv(b))
    m, rhs = _rand(2, 3, 6, seed=2), _rand(2, 3, seed=3)
    assert_close(ptl.linalg.tensorsolve(ptl.tensor(m), ptl.tensor(rhs)),
                 np.linalg.tensorsolve(m, rhs))
    assert_close(ptl.linalg.tensorsolve(ptl.tensor(np.moveaxis(m, 2, 0)), ptl.tensor(rhs),
                                        dims=(0,)), np.linalg.tensorsolve(m, rhs))
    mats = _rand(3, 4, 4, seed=4)
    for p in (None, 2, -2, "fro", "nuc", np.inf, -np.inf, 1, -1):
        assert_close(ptl.linalg.cond(ptl.tensor(mats), p), np.linalg.cond(mats, p),
                     rtol=1e-10, atol=0)
    wide = _rand(2, 3, seed=5)
    assert_close(ptl.linalg.cond(ptl.tensor(wide)), np.linalg.cond(wide))
    assert_close(ptl.linalg.cond(ptl.zeros(2, 2, dtype=ptl.float64), 1), np.array(np.inf))
    assert gradcheck(lambda t: ptl.linalg.cond(t, "fro"), (ptl.tensor(
        mats[0] + 4 * np.eye(4), requires_grad=True),))
    assert gradcheck(lambda t: ptl.linalg.tensorinv(t, 1), (ptl.tensor(
        _rand(4, 2, 2, seed=6) + np.eye(4).reshape(4, 2, 2), requires_grad=True),))
    assert_raises_like_torch(lambda lib: lib.linalg.tensorinv(lib.ones(2, 3), 1), RuntimeError,
                             "Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                             "prod(self.shape[:ind]), but got 3 != 2")
    assert_raises_like_torch(lambda lib: lib.linalg.tensorinv(lib.ones(6, 2, 3), 0),
                             RuntimeError, "Expected a strictly positive integer for 'ind', but "
                             "got 0")
    assert_raises_like_torch(lambda lib: lib.linalg.tensorsolve(lib.ones(2, 3, 6), lib.ones(3)),
                             RuntimeError, "Expected self to satisfy the requirement "
                             "prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), "
                             "but got 18 != 3")
    assert_raises_like_torch(lambda lib: lib.linalg.cond(lib.ones(2, 3), "fro"), RuntimeError,
                             "linalg.cond(ord=fro): A must be batches of square matrices, but "
                             "they are 2 by 3 matrices")
    assert_raises_like_torch(lambda lib: lib.linalg.cond(lib.ones(3, 3), "bad"), RuntimeError,
                             "linalg.cond got an invalid norm type: bad")


def _np_reflectors(a, tau):
    m, k = a.shape[0], tau.shape[0]
    q = np.eye(m)
    for i in range(k):
        v = np.concatenate([np.zeros(i), [1.0], a[i + 1:, i]])
        q = q @ (np.eye(m) - tau[i] * np.outer(v, v))
    return q


@pytest.mark.parametrize("m,n,k", [(5, 3, 3), (4, 4, 2), (3, 1, 1), (4, 3, 0)])
def test_householder_product_orgqr_ormqr(m, n, k):
    a = _rand(m, n)
    v_norms = 1 + np.array([(a[i + 1:, i] ** 2).sum() for i in range(k)])
    tau = 2 / v_norms                      # each H_i a reflection: Q orthogonal
    q = _np_reflectors(a, tau)
    got = ptl.linalg.householder_product(ptl.tensor(a), ptl.tensor(tau))
    assert_close(got, q[:, :n])
    assert_close(ptl.orgqr(ptl.tensor(a), ptl.tensor(tau)), q[:, :n])
    assert_close(got.mT @ got, np.eye(n))
    c, d = _rand(m, 2, seed=1), _rand(3, m, seed=2)
    assert_close(ptl.ormqr(ptl.tensor(a), ptl.tensor(tau), ptl.tensor(c)), q @ c)
    assert_close(ptl.ormqr(ptl.tensor(a), ptl.tensor(tau), ptl.tensor(c), transpose=True),
                 q.T @ c)
    assert_close(ptl.tensor(a).ormqr(ptl.tensor(tau), ptl.tensor(d), left=False), d @ q)
    assert_close(ptl.ormqr(ptl.tensor(a), ptl.tensor(tau), ptl.tensor(d), False, True), d @ q.T)
    batch = ptl.linalg.householder_product(ptl.tensor(np.stack([a, a])),
                                           ptl.tensor(np.stack([tau, tau])))
    assert_close(batch, np.stack([q[:, :n]] * 2))


def test_householder_gradients_and_errors():
    a = ptl.tensor(_rand(4, 3), requires_grad=True)
    tau = ptl.tensor([0.5, 1.2, 0.3], dtype=ptl.float64, requires_grad=True)
    assert gradcheck(lambda x, t: ptl.linalg.householder_product(x, t), (a, tau))
    c = ptl.tensor(_rand(4, 2, seed=1))
    assert gradcheck(lambda x, t: ptl.ormqr(x, t, c, True, True), (a, tau))
    name = "torch.linalg.householder_product"
    assert_raises_like_torch(lambda lib: lib.linalg.householder_product(lib.ones(3),
                                                                        lib.ones(3)),
                             RuntimeError, f"{name}: input must have at least 2 dimensions.")
    assert_raises_like_torch(lambda lib: lib.linalg.householder_product(lib.ones(2, 3),
                                                                        lib.ones(2)),
                             RuntimeError, f"{name}: input.shape[-2] must be greater than or "
                             "equal to input.shape[-1]")
    assert_raises_like_torch(lambda lib: lib.linalg.householder_product(lib.ones(5, 3),
                                                                        lib.ones(4)),
                             RuntimeError, f"{name}: input.shape[-1] must be greater than or "
                             "equal to tau.shape[-1]")
    assert_raises_like_torch(lambda lib: lib.linalg.householder_product(lib.ones(5, 3),
                                                                        lib.ones(1, 3)),
                             RuntimeError, f"{name}: Expected tau to have one dimension less "
                             "than input, but got tau.ndim equal to 2 and input.ndim is equal to "
                             "2")
    assert_raises_like_torch(lambda lib: lib.linalg.householder_product(
        lib.ones(5, 3, dtype=lib.float64), lib.ones(3)), RuntimeError,
        f"{name}: tau dtype Float does not match input dtype Double")
    assert_raises_like_torch(lambda lib: lib.ormqr(lib.ones(5, 3), lib.ones(3), lib.ones(4, 2)),
                             RuntimeError, "torch.ormqr: other.shape[-2] must be equal to "
                             "input.shape[-2]")
    assert_raises_like_torch(lambda lib: lib.ormqr(lib.ones(5, 3), lib.ones(3), lib.ones(5, 2),
                                                   left=False),
                             RuntimeError, "torch.ormqr: other.shape[-1] must be equal to "
                             "input.shape[-2]")


def test_gradients():
    a = ptl.tensor(_spd(n=3), requires_grad=True)
    b = ptl.tensor(_rand(3, 2, seed=1), requires_grad=True)
    L = ptl.tensor(np.linalg.cholesky(_spd(n=3)), requires_grad=True)
    assert gradcheck(lambda x: ptl.cholesky(x @ x.mT / 2 + x.mT @ x / 2), (a,))
    assert gradcheck(lambda m, y: ptl.cholesky_solve(y, m.tril()), (L, b))
    assert gradcheck(lambda m: ptl.cholesky_inverse(m.tril()), (L,))
    assert gradcheck(lambda m, y: ptl.triangular_solve(y, m.triu())[0], (a, b))
    g = ptl.tensor(_rand(3, 3, seed=5) + 3 * np.eye(3), requires_grad=True)
    assert gradcheck(lambda m, y: ptl.linalg.lu_solve(*ptl.linalg.lu_factor(m), y), (g, b))
    assert gradcheck(lambda m: ptl.qr(m)[1], (g,))
    m2 = ptl.tensor(_rand(2, 3, seed=6), requires_grad=True)
    assert gradcheck(lambda x, y: ptl.linalg.multi_dot([x, y, b]), (m2, g))
    assert gradcheck(lambda x: ptl.nuclear_norm(x), (m2,))
    assert gradcheck(lambda x: ptl.linalg.vander(x, N=4), (ptl.tensor(
        [0.5, 1.5], dtype=ptl.float64, requires_grad=True),))


def test_warnings_and_errors():
    a = ptl.tensor(_spd(n=3))
    for fn, start in [(lambda: ptl.cholesky(a), "torch.cholesky is deprecated"),
                      (lambda: ptl.qr(a), "torch.qr is deprecated"),
                      (lambda: ptl.triangular_solve(a, a), "torch.triangular_solve is "
                                                           "deprecated"),
                      (lambda: ptl.lu(a), "torch.lu is deprecated"),
                      (lambda: ptl.lu_solve(a, *ptl.linalg.lu_factor(a)),
                       "torch.lu_solve is deprecated"),
                      (lambda: ptl.chain_matmul(a, a), "torch.chain_matmul is deprecated"),
                      (lambda: ptl.nuclear_norm(a), "at::nuclear_norm is deprecated"),
                      (lambda: ptl.frobenius_norm(a, (0, 1)), "at::frobenius_norm is "
                                                              "deprecated")]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn()
        assert any(str(w.message).startswith(start) for w in caught), start
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_raises_like_torch(lambda lib: lib.chain_matmul(), RuntimeError,
                                 "chain_matmul(): Expected one or more matrices")
        assert_raises_like_torch(lambda lib: lib.chain_matmul(lib.ones(2, 2), lib.ones(2)),
                                 RuntimeError, "Tensor dimension is 1, expected 2 instead.")
        assert_raises_like_torch(lambda lib: lib.cholesky_inverse(lib.ones(3)), RuntimeError,
                                 "cholesky_inverse: The input tensor A must have at least 2 "
                                 "dimensions.")
    assert_raises_like_torch(lambda lib: lib.linalg.multi_dot([lib.ones(2, 2)]), RuntimeError,
                             "multi_dot(): expected at least 2 tensors but got 1")
    assert_raises_like_torch(lambda lib: lib.linalg.multi_dot([lib.ones(2, 2, 2),
                                                               lib.ones(2, 2)]), RuntimeError,
                             "multi_dot(): the first tensor must be 1D or 2D but got 3D")
    assert_raises_like_torch(lambda lib: lib.linalg.multi_dot([lib.ones(2, 2),
                                                               lib.ones(2, 2, 2), lib.ones(2)]),
                             RuntimeError, "multi_dot(): tensor 1 must be 2D but got 3D")
    assert_raises_like_torch(lambda lib: lib.linalg.vander(lib.tensor([2, 3]), N=1),
                             RuntimeError, "N must be greater than 1.")


@torch_ref
def test_matches_torch():
    a, s, b = _rand(2, 4, 4), _spd(2), _rand(2, 4, 3, seed=1)
    c = _rand(2, 4, 2, 4, seed=7)
    reflectors, tau = (x.numpy() for x in torch.geqrf(torch.tensor(b)))   # PyTorch's geqrf
    pairs = [
        (lambda lib, T: lib.cholesky(T(s), True)),
        (lambda lib, T: lib.cholesky_solve(T(b), lib.linalg.cholesky(T(s)))),
        (lambda lib, T: lib.cholesky_inverse(lib.linalg.cholesky(T(s)))),
        (lambda lib, T: lib.triangular_solve(T(b), T(a), False, True)[0]),
        (lambda lib, T: lib.lu_unpack(*lib.linalg.lu_factor(T(a)))[0]),
        (lambda lib, T: lib.lu_unpack(*lib.linalg.lu_factor(T(a[:, :3])))[1]),
        (lambda lib, T: lib.lu_solve(T(b), *lib.linalg.lu_factor(T(a)))),
        (lambda lib, T: lib.linalg.lu(T(a[:, :, :3]))[2]),
        (lambda lib, T: lib.chain_matmul(T(a[0]), T(a[1]), T(b[0]))),
        (lambda lib, T: lib.nuclear_norm(T(a), (0, 2), True)),
        (lambda lib, T: lib.frobenius_norm(T(a), 1)),
        (lambda lib, T: lib.linalg.vander(T(b[0]), N=3)),
        (lambda lib, T: lib.linalg.diagonal(T(a), offset=-1)),
        (lambda lib, T: lib.linalg.tensorinv(T(a[0].reshape(2, 2, 4)), 2)),
        (lambda lib, T: lib.linalg.tensorsolve(T(c), T(b[:, :, 0]))),
        (lambda lib, T: lib.linalg.cond(T(a), -1)),
        (lambda lib, T: lib.linalg.cond(T(b))),
        (lambda lib, T: lib.linalg.householder_product(T(reflectors), T(tau))),
        (lambda lib, T: lib.ormqr(T(reflectors), T(tau), T(c[:, :, 0]), False, True)),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fn in pairs:
            got = fn(ptl, ptl.tensor)
            want = fn(torch, torch.tensor)
            assert_close(got, want.numpy(), rtol=1e-10, atol=1e-10)
        Q, R = ptl.qr(ptl.tensor(a))
        Qt, Rt = torch.qr(torch.tensor(a))
        signs = np.sign(np.diagonal(R.numpy(), 0, -2, -1) * np.diagonal(Rt.numpy(), 0, -2, -1))
        assert_close(Q * ptl.tensor(signs[:, None, :]), Qt.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 3, 2), (1, 1), (0, 3), (3, 0),
                                   (2, 0, 2)])
@pytest.mark.parametrize("dtype", [ptl.float64, ptl.complex128, ptl.float32])
def test_geqrf_reconstructs(shape, dtype):
    rng = np.random.default_rng(3)
    a = rng.standard_normal(shape)
    if dtype.is_complex:
        a = a + 1j * rng.standard_normal(shape)
    x = ptl.tensor(a, dtype=dtype)
    if len(shape) == 3:
        x = x.transpose(-1, -2).contiguous().transpose(-1, -2)   # non-contiguous input
    res = ptl.geqrf(x)
    assert res._fields == ("a", "tau") and res.a.dtype == dtype and res.tau.dtype == dtype
    m, n = shape[-2:]
    k = min(m, n)
    assert tuple(res.tau.shape) == shape[:-2] + (k,)
    assert x.geqrf().a.tolist() == res.a.tolist()
    q = ptl.linalg.householder_product(res.a[..., :, :k], res.tau)
    r = res.a[..., :k, :].triu()
    tol = 1e-5 if dtype == ptl.float32 else 1e-12
    np.testing.assert_allclose((q @ r).numpy(), a, rtol=tol, atol=tol)
    # R's diagonal: LAPACK's sign convention, beta = -sign(Re alpha) |column|
    if k and len(shape) == 2 and dtype == ptl.float64:
        col = a[:, 0]
        expect = np.linalg.norm(col) * (-1 if col[0] >= 0 else 1) if np.any(col[1:]) else col[0]
        assert res.a[0, 0].item() == pytest.approx(expect, rel=1e-12)


def test_geqrf_zero_columns_out_and_errors():
    res = ptl.geqrf(ptl.tensor([[2.0, 1.0], [0.0, 3.0]], dtype=ptl.float64))
    assert res.tau.tolist() == [0.0, 0.0]           # nothing to reflect: H = I
    assert res.a.tolist() == [[2.0, 1.0], [0.0, 3.0]]
    out = (ptl.empty(0, dtype=ptl.float64), ptl.empty(0, dtype=ptl.float64))
    got = ptl.geqrf(ptl.ones(3, 2, dtype=ptl.float64), out=out)
    assert got.a is out[0] and tuple(out[0].shape) == (3, 2) and tuple(out[1].shape) == (2,)
    assert_raises_like_torch(lambda lib: lib.geqrf(lib.ones(3)), RuntimeError,
                             "torch.geqrf: input must have at least 2 dimensions.")
    assert_raises_like_torch(lambda lib: lib.geqrf(lib.ones(2, 2, dtype=lib.int64)),
                             NotImplementedError, "\"geqrf_cpu\" not implemented for 'Long'")
    assert_raises_like_torch(lambda lib: lib.geqrf(lib.ones(2, 2, dtype=lib.float16)),
                             NotImplementedError, "\"geqrf_cpu\" not implemented for 'Half'")


@torch_ref
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_geqrf_matches_torch(shape, dtype):
    rng = np.random.default_rng(4)
    a = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if "complex" in dtype
                                      else 0)
    ours = ptl.geqrf(ptl.tensor(a, dtype=getattr(ptl, dtype)))
    theirs = torch.geqrf(torch.tensor(a, dtype=getattr(torch, dtype)))
    for x, y in zip(ours, theirs):
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-10, atol=1e-12)


def _first(out):
    return None if out is None else out[0]


def _empties(*dtypes):
    return tuple(ptl.empty(0, dtype=d) for d in dtypes)


F64 = ptl.float64
# name -> (call with out=, how many outputs and their dtypes); every one of these ignored its
# out= before (the tensors stayed empty)
OUT_CALLS = {
    "qr": (lambda A, LU, piv, out: ptl.qr(A, out=out), (F64, F64)),
    "triangular_solve": (lambda A, LU, piv, out: ptl.triangular_solve(A, A.triu(), out=out),
                         (F64, F64)),
    "lu": (lambda A, LU, piv, out: ptl.lu(A, out=out), (F64, ptl.int32)),
    "lu_unpack": (lambda A, LU, piv, out: ptl.lu_unpack(LU, piv, out=out), (F64, F64, F64)),
    "lu_solve": (lambda A, LU, piv, out: ptl.lu_solve(A, LU, piv, out=_first(out)), (F64,)),
    "linalg.lu": (lambda A, LU, piv, out: ptl.linalg.lu(A, out=out), (F64, F64, F64)),
    "linalg.lu_solve": (lambda A, LU, piv, out: ptl.linalg.lu_solve(LU, piv, A,
                                                                    out=_first(out)), (F64,)),
    "histogram": (lambda A, LU, piv, out: ptl.histogram(A, 3, out=out), (F64, F64)),
}


@pytest.mark.parametrize("name", OUT_CALLS)
def test_out_arguments_are_written(name):
    call, dtypes = OUT_CALLS[name]
    a = _rand(2, 4, 4) + 4 * np.eye(4)
    A = ptl.tensor(a)
    LU, piv = ptl.linalg.lu_factor(A)
    want = call(A, LU, piv, None)
    out = _empties(*dtypes)
    got = call(A, LU, piv, out)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want) == len(out)
    for g, o, w in zip(got, out, want):
        assert g is o
        assert_close(o, w.numpy())
    if len(out) > 1:
        assert type(got) is type(want)
        with pytest.raises(TypeError, match=rf"^expected tuple of {len(out)} elements but got 1$"):
            call(A, LU, piv, out[:1])
    wrong = _empties(*(ptl.float32 if d is F64 else d for d in dtypes))
    with pytest.raises(RuntimeError, match="^Expected out tensor to have dtype double, but got "
                                           "float instead$"):
        call(A, LU, piv, wrong)


@torch_ref
def test_out_errors_as_torch():
    a = _rand(3, 3) + 3 * np.eye(3)
    for lib in (ptl, torch):
        A = lib.tensor(a)
        with pytest.raises(TypeError, match="^expected tuple of 2 elements but got 1$"):
            lib.qr(A, out=(lib.empty(0, dtype=lib.float64),))
        with pytest.raises(RuntimeError, match="^Expected out tensor to have dtype double, but "
                                               "got float instead$"):
            lib.qr(A, out=(lib.empty(0), lib.empty(0)))
