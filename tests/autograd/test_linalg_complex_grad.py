"""Gradients of torch.linalg on complex matrices (derivatives/linalg_solve.c and
linalg_decomp.c with conjugate transposes; Note [Complex autograd] in
derivatives/complex.c), by gradcheck in complex128.  Hermitian positive-definite inputs are
built as H0 + (X + X^H) / 10 from a constant H0 (no matrix product on the tape), and eigh's
outputs go through phase-invariant functions (|V|, V_k V_k^H), as PyTorch's own tests do; a
loss that depends on the vectors' phases is PyTorch's RuntimeError for eigh and svd."""
import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck, gradgradcheck


def _c(shape, seed, requires_grad=True, tri=None):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    n = shape[-1]
    if tri == "u":
        a = np.triu(a) + 3 * np.eye(n)
    elif tri == "l":
        a = np.tril(a) + 3 * np.eye(n)
    elif tri == "g":
        a = a + 3 * np.eye(n)
    return ptl.tensor(a, requires_grad=requires_grad)


def _h0(n, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    return ptl.tensor(a @ a.conj().T + n * np.eye(n))


def _hpd(x, h0):
    return h0 + 0.1 * (x + x.mH)


def _check(f, *xs):
    assert gradcheck(f, xs, eps=1e-6, atol=1e-5, rtol=1e-4)


# ---- without complex matrix products ----

def test_complex_det_grad():
    _check(ptl.linalg.det, _c((4, 4), 1, tri="g"))
    _check(ptl.linalg.det, _c((2, 3, 3), 2, tri="g"))


@pytest.mark.parametrize("part", ["sign", "logabsdet", "both"])
def test_complex_slogdet_grad(part):
    A = _c((4, 4), 3, tri="g")
    pick = {"sign": lambda r: r[0], "logabsdet": lambda r: r[1], "both": lambda r: r}[part]
    _check(lambda a: pick(ptl.linalg.slogdet(a)), A)


def test_complex_solve_vector_grad():
    _check(lambda a, b: ptl.linalg.solve(a, b), _c((4, 4), 4, tri="g"), _c((4,), 5))


def test_complex_solve_triangular_rhs_grad():
    A = _c((4, 4), 6, tri="u", requires_grad=False)
    _check(lambda b: ptl.linalg.solve_triangular(A, b, upper=True), _c((4, 2), 7))
    _check(lambda b: ptl.linalg.solve_triangular(A, b, upper=True, left=False), _c((2, 4), 8))


def test_complex_real_input_gets_real_grad():
    x = ptl.tensor(np.random.default_rng(9).standard_normal((3, 3)) + 3 * np.eye(3),
                   requires_grad=True)
    y = ptl.linalg.det(x * (1 + 1j))
    y.real.backward()
    assert x.grad.dtype == ptl.float64
    # Re(det((1 + i) x)) = Re((1 + i)^3) det(x) for a real 3 x 3 x
    a = x.detach().numpy()
    want = np.real((1 + 1j) ** 3) * np.linalg.det(a) * np.linalg.inv(a).T
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-10, atol=1e-12)


# ---- with complex matrix products ----

def test_complex_solve_grad():
    _check(lambda a, b: ptl.linalg.solve(a, b), _c((4, 4), 10, tri="g"), _c((4, 3), 11))
    _check(lambda a, b: ptl.linalg.solve(a, b, left=False), _c((4, 4), 12, tri="g"),
           _c((3, 4), 13))


def test_complex_inv_grad():
    _check(ptl.linalg.inv, _c((4, 4), 14, tri="g"))
    _check(ptl.linalg.inv, _c((2, 3, 3), 15, tri="g"))


def test_complex_inv_gradgrad():
    assert gradgradcheck(ptl.linalg.inv, (_c((3, 3), 16, tri="g"),), eps=1e-6, atol=1e-5,
                         rtol=1e-4)


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [False, True])
@pytest.mark.parametrize("unit", [False, True])
def test_complex_solve_triangular_grad(upper, left, unit):
    A = _c((4, 4), 17, tri="u" if upper else "l")
    B = _c((4, 2) if left else (2, 4), 18)
    _check(lambda a, b: ptl.linalg.solve_triangular(a, b, upper=upper, left=left,
                                                    unitriangular=unit), A, B)


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3)])
def test_complex_lu_factor_grad(shape):
    _check(lambda a: ptl.linalg.lu_factor(a)[0], _c(shape, 19))


def test_complex_lu_and_lu_solve_grad():
    _check(lambda a: ptl.linalg.lu(a)[1:], _c((4, 4), 20, tri="g"))
    _check(lambda a, b: ptl.linalg.lu_solve(*ptl.linalg.lu_factor(a), b),
           _c((4, 4), 21, tri="g"), _c((4, 2), 22))


@pytest.mark.parametrize("upper", [False, True])
def test_complex_cholesky_grad(upper):
    h0 = _h0(4, 23)
    _check(lambda x: ptl.linalg.cholesky(_hpd(x, h0), upper=upper), _c((4, 4), 24))


def test_complex_cholesky_solve_and_inverse_grad():
    h0 = _h0(4, 25)
    _check(lambda b, x: ptl.cholesky_solve(b, ptl.linalg.cholesky(_hpd(x, h0))),
           _c((4, 2), 26), _c((4, 4), 27))
    _check(lambda x: ptl.cholesky_inverse(ptl.linalg.cholesky(_hpd(x, h0))), _c((4, 4), 28))


@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (3, 5)])
def test_complex_qr_grad(shape):
    _check(ptl.linalg.qr, _c(shape, 29))
    _check(lambda a: ptl.linalg.qr(a)[1], _c(shape, 30))


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_complex_eigh_grad(uplo):
    def values_and_moduli(x):
        w, V = ptl.linalg.eigh(x + x.mH, UPLO=uplo)
        return w, V.abs()

    def projector(x):
        w, V = ptl.linalg.eigh(x + x.mH, UPLO=uplo)
        v = V[..., :, :1]
        return v * v.conj().mT

    _check(values_and_moduli, _c((4, 4), 31))
    _check(projector, _c((4, 4), 32))


def test_complex_eigvalsh_grad():
    _check(lambda x: ptl.linalg.eigvalsh(x + x.mH), _c((4, 4), 33))
    _check(lambda x: ptl.linalg.eigvalsh(x + x.mH), _c((2, 3, 3), 34))


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (9, 6), (2, 5, 7)])
def test_complex_svd_grad(shape):
    def phase_free(a):
        U, S, Vh = ptl.linalg.svd(a, full_matrices=False)
        return S, U[..., :, :1] * Vh[..., :1, :], U.abs(), Vh.abs()

    _check(phase_free, _c(shape, 35))
    _check(ptl.linalg.svdvals, _c(shape, 36))


def test_complex_det_grad_at_singular():
    a = np.eye(4, dtype=complex)
    a[3, 3] = 0
    a = a @ np.asarray(_c((4, 4), 37, requires_grad=False).numpy())
    _check(ptl.linalg.det, ptl.tensor(a, requires_grad=True))


def test_complex_eig_grad():
    """eig's formula computes in real and imaginary parts (derivatives/linalg_eig.c): no
    complex matrix product is needed."""
    def phase_free(a):
        w, V = ptl.linalg.eig(a)
        return w, V.abs()

    _check(phase_free, _c((4, 4), 38))
    _check(ptl.linalg.eigvals, _c((2, 3, 3), 39))


_EIGH_PHASE = ("linalg_eigh_backward: The eigenvectors in the complex case are specified up to "
               "multiplication by e^{i phi}. The specified loss function depends on this "
               "quantity, so it is ill-defined.")
_SVD_PHASE = ("svd_backward: The singular vectors in the complex case are specified up to "
              "multiplication by e^{i phi}. The specified loss function depends on this phase "
              "term, making it ill-defined.")


def test_complex_eigh_phase_dependent_loss_raises():
    x = _c((4, 4), 41)
    _, V = ptl.linalg.eigh(x + x.mH)
    with pytest.raises(RuntimeError) as err:
        V.real.sum().backward()
    assert str(err.value) == _EIGH_PHASE
    _, V = ptl.linalg.eigh(x + x.mH)
    (V * V.conj()).real.sum().backward()   # |V|^2: phase-free, no error
    assert x.grad is not None


@pytest.mark.parametrize("which", ["U", "Vh", "both"])
def test_complex_svd_phase_dependent_loss_raises(which):
    a = _c((5, 3), 42)
    U, _, Vh = ptl.linalg.svd(a, full_matrices=False)
    loss = {"U": lambda: U.real.sum(), "Vh": lambda: Vh.imag.sum(),
            "both": lambda: U.real.sum() + Vh.real.sum()}[which]()
    with pytest.raises(RuntimeError) as err:
        loss.backward()
    assert str(err.value) == _SVD_PHASE


def test_complex_svd_common_phase_passes():
    """u_k vh_k does not change when u_k and v_k turn by the same phase: no error, and the
    gradient is the one of the same function of A computed through the product."""
    a = _c((4, 3), 43)
    U, _, Vh = ptl.linalg.svd(a, full_matrices=False)
    (U[:, :1] @ Vh[:1, :]).real.sum().backward()
    assert a.grad is not None and bool(ptl.isfinite(a.grad).all())


# ---- cross, vecdot and lstsq ----

def test_complex_cross_grad():
    a, b = _c((4, 3), 50), _c((4, 3), 51)
    _check(lambda x, y: ptl.linalg.cross(x, y), a, b)
    _check(lambda x, y: ptl.cross(x.mT, y.mT, dim=0), a, b)
    _check(lambda x, y: ptl.linalg.cross(x, y), _c((2, 1, 3), 52), _c((1, 4, 3), 53))


def test_complex_vecdot_grad():
    _check(lambda x, y: ptl.linalg.vecdot(x, y), _c((3, 4), 54), _c((4,), 55))


@pytest.mark.parametrize("driver", ["gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("shape_a,shape_b", [((5, 3), (5, 2)), ((3, 5), (3, 2)),
                                             ((2, 4, 3), (2, 4, 1))])
def test_complex_lstsq_grad(driver, shape_a, shape_b):
    a, b = _c(shape_a, 56), _c(shape_b, 57)
    _check(lambda x, y: ptl.linalg.lstsq(x, y, driver=driver).solution, a, b)


def test_complex_logdet_grad():
    _check(ptl.logdet, _c((2, 3, 3), 58, tri="g"))
