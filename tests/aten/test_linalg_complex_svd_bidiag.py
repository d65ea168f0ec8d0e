"""The complex SVD by bidiagonalisation (linalg_complex_svd.c, Note [Complex SVD]): zgebd2's
reflectors on rows padded to whole 64-byte vectors (4 complex128, 8 complex64 numbers: the
sizes below cross 1-3 vectors either way), svd.c's bidiagonal QR with its real rotations on
the complex vectors, the back-transforms.  Against NumPy in complex128: every shape up to
3 x 3, tall/wide/square up to 70, full_matrices, rank-deficient, zero, scaled by 1e-30 and
1e30, graded and repeated singular values, non-contiguous, batched on one and two threads
(each matrix's bits alone equal to those in the batch).  The file runs again with the
capability capped (zdot_rows' two 32-byte halves below AVX-512).  Gradients:
tests/autograd/test_linalg_complex_grad.py."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import capability_reruns
from test_linalg_complex import _crand
from test_linalg_complex_svd_order import _mh

test_lower_capabilities = capability_reruns(__file__)

DTYPES = [(ptl.complex128, np.complex128, 1e-12), (ptl.complex64, np.complex64, 1e-5)]
# around 1-3 vectors of complex128 (4) and complex64 (8), and the benchmarks' sizes
SIDES = [1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 24, 31, 32, 33, 63, 64, 65, 70]


@pytest.fixture(params=DTYPES, ids=["complex128", "complex64"])
def cdt(request):
    return request.param


def _unitary(n, seed):
    q, _ = np.linalg.qr(_crand((n, n), seed))
    return q


def _check(A, a, tol, full, vals_tol=None):
    """S = NumPy's to tol * ||A|| (vals_tol when set), U S Vh = a to tol * ||A|| (entries of
    order ||A|| / sqrt(n)), U and Vh unitary to tol, shapes and dtypes as NumPy's / PyTorch's;
    svdvals (from R's bidiagonal when m >= 5n/3 or n >= 5m/3) = NumPy's S as well"""
    m, n = a.shape[-2:]
    k = min(m, n)
    U, S, Vh = ptl.linalg.svd(A, full_matrices=full)
    u, s, vh = np.linalg.svd(a, full_matrices=full)
    assert U.shape == u.shape and S.shape == s.shape and Vh.shape == vh.shape
    assert U.dtype == A.dtype and Vh.dtype == A.dtype
    assert S.dtype == (ptl.float64 if A.dtype == ptl.complex128 else ptl.float32)
    Un, Sn, Vn = (t.numpy().astype(np.complex128) for t in (U, S, Vh))
    Sn = Sn.real
    big = max(np.abs(s).max(initial=0), 1e-300)
    dim = max(m, n, 1)
    assert np.all(np.diff(Sn, axis=-1) <= 0)
    assert np.abs(Sn - s).max(initial=0) <= (vals_tol or tol) * dim * big
    rec = (Un[..., :, :k] * Sn[..., None, :]) @ Vn[..., :k, :]
    assert np.abs(rec - a).max(initial=0) <= tol * dim * big
    assert np.abs(_mh(Un) @ Un - np.eye(Un.shape[-1])).max(initial=0) <= tol * dim
    assert np.abs(Vn @ _mh(Vn) - np.eye(Vn.shape[-2])).max(initial=0) <= tol * dim
    sv = ptl.linalg.svdvals(A).numpy().astype(np.float64)
    assert np.abs(sv - s).max(initial=0) <= (vals_tol or tol) * dim * big


@pytest.mark.parametrize("m", [0, 1, 2, 3])
@pytest.mark.parametrize("n", [0, 1, 2, 3])
@pytest.mark.parametrize("full", [False, True])
def test_small_shapes(cdt, m, n, full):
    tdt, npdt, tol = cdt
    a = _crand((m, n), 10 * m + n).astype(npdt)
    _check(ptl.tensor(a), a.astype(np.complex128), tol, full)
    a = _crand((2, m, n), 10 * m + n + 1).astype(npdt)
    _check(ptl.tensor(a), a.astype(np.complex128), tol, full)


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("shape", ["square", "tall", "wide"])
def test_sizes_across_vectors(cdt, side, shape):
    tdt, npdt, tol = cdt
    m, n = {"square": (side, side), "tall": (side + 5, side), "wide": (side, side + 3)}[shape]
    a = _crand((m, n), side).astype(npdt)
    for full in (False, True):
        _check(ptl.tensor(a), a.astype(np.complex128), tol, full)


@pytest.mark.parametrize("shape", [(5, 5), (9, 4), (4, 9), (17, 17), (33, 20)])
def test_rank_deficient_and_zero(cdt, shape):
    tdt, npdt, tol = cdt
    m, n = shape
    low = (_crand((m, 2), m) @ _crand((2, n), n)).astype(npdt)
    _check(ptl.tensor(low), low.astype(np.complex128), tol, True)
    col = _crand((m, n), m + n)
    col[:, 0] = 0
    col[:, -1] = 1j * col[:, 1]
    col = col.astype(npdt)
    _check(ptl.tensor(col), col.astype(np.complex128), tol, False)
    z = np.zeros((2, m, n), npdt)
    _check(ptl.tensor(z), z.astype(np.complex128), tol, True)
    U, S, Vh = ptl.linalg.svd(ptl.tensor(z))
    assert np.array_equal(S.numpy(), np.zeros((2, min(m, n))))


@pytest.mark.parametrize("scale", [1e-30, 1e30])
@pytest.mark.parametrize("shape", [(6, 6), (20, 9), (9, 20)])
def test_extreme_scales(cdt, scale, shape):
    """the power-of-two scaling: 1e-30 and 1e30 matrices (their squares under- and overflow
    complex64), relative accuracy as at scale 1"""
    tdt, npdt, tol = cdt
    a = (_crand(shape, 3) * scale).astype(npdt)
    _check(ptl.tensor(a), a.astype(np.complex128), tol, False)
    S1 = ptl.linalg.svdvals(ptl.tensor((_crand(shape, 3)).astype(npdt))).numpy()
    S2 = ptl.linalg.svdvals(ptl.tensor(a)).numpy()
    np.testing.assert_allclose(S2 / scale, S1, rtol=tol * 100)


@pytest.mark.parametrize("n", [8, 30])
@pytest.mark.parametrize("span", [1e-6, 1e-30])
def test_graded_values(cdt, n, span):
    """singular values from 1 down to span: absolute accuracy O(eps s_max), as gesdd's"""
    tdt, npdt, tol = cdt
    s = np.geomspace(1, span, n)
    a = ((_unitary(n, 1) * s) @ _unitary(n, 2)).astype(npdt)
    _check(ptl.tensor(a), a.astype(np.complex128), tol, True)
    ag = a * np.geomspace(1e-20, 1e20, n)    # graded columns
    ag = ag.astype(npdt)
    if npdt == np.complex128:
        _check(ptl.tensor(ag), ag.astype(np.complex128), tol, False)


@pytest.mark.parametrize("shape", [(6, 6), (12, 7), (7, 12)])
def test_repeated_values(cdt, shape):
    tdt, npdt, tol = cdt
    m, n = shape
    k = min(m, n)
    s = np.array([2.0] * (k // 2) + [1.0] * (k - k // 2 - 1) + [0.0])
    a = ((_unitary(m, 4)[:, :k] * s) @ _unitary(n, 5)[:k]).astype(npdt)
    _check(ptl.tensor(a), a.astype(np.complex128), tol, True)
    eye = np.eye(k).astype(npdt)
    _check(ptl.tensor(eye), eye.astype(np.complex128), tol, False)


def test_non_contiguous(cdt):
    tdt, npdt, tol = cdt
    big = _crand((3, 12, 20), 6).astype(npdt)
    B = ptl.tensor(big)
    for A, a in ((B.mT[:, ::2], np.swapaxes(big, -1, -2)[:, ::2]),
                 (B[::2, 1::3, ::2], big[::2, 1::3, ::2])):
        assert not A.is_contiguous()
        _check(A, a.astype(np.complex128), tol, False)
        _check(A, a.astype(np.complex128), tol, True)


@pytest.mark.parametrize("shape", [(5, 4, 4), (3, 17, 9), (2, 3, 9, 17), (4, 33, 33)])
def test_batch_bits_equal_alone(cdt, shape, threads):
    tdt, npdt, tol = cdt
    a = _crand(shape, sum(shape)).astype(npdt)
    A = ptl.tensor(a)
    U, S, Vh = ptl.linalg.svd(A, full_matrices=True)
    sv = ptl.linalg.svdvals(A)
    flat = a.reshape((-1,) + shape[-2:])
    Uf, Vf = (t.reshape((-1,) + tuple(t.shape[-2:])) for t in (U, Vh))
    Sf = S.reshape(-1, S.shape[-1])
    for b in range(flat.shape[0]):
        u1, s1, v1 = ptl.linalg.svd(ptl.tensor(flat[b]), full_matrices=True)
        assert np.array_equal(u1.numpy(), Uf[b].numpy())
        assert np.array_equal(s1.numpy(), Sf[b].numpy())
        assert np.array_equal(v1.numpy(), Vf[b].numpy())
    for b in range(flat.shape[0]):
        assert np.array_equal(ptl.linalg.svdvals(ptl.tensor(flat[b])).numpy(),
                              sv.reshape(-1, sv.shape[-1])[b].numpy())
    _check(A, a.astype(np.complex128), tol, True)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, 1j * np.inf])
def test_non_finite_raises(cdt, bad):
    tdt, npdt, tol = cdt
    a = _crand((4, 3), 8)
    a[1, 2] = bad
    A = ptl.tensor(a.astype(npdt))
    for f in (lambda: ptl.linalg.svd(A), lambda: ptl.linalg.svdvals(A)):
        with pytest.raises(ptl.linalg.LinAlgError, match=(
                "linalg.svd: The algorithm failed to converge because the input matrix "
                "contained non-finite values.")):
            f()


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (6, 4), (10, 6), (6, 10), (11, 7), (7, 11),
                                   (63, 38), (64, 38), (65, 38), (38, 64), (200, 9)])
def test_values_qr_threshold(cdt, shape, threads):
    """svdvals of a W with r >= 5c/3 from its R's bidiagonal, at and around that edge"""
    tdt, npdt, tol = cdt
    a = _crand((2,) + shape, sum(shape)).astype(npdt)
    s = np.linalg.svd(a.astype(np.complex128), compute_uv=False)
    sv = ptl.linalg.svdvals(ptl.tensor(a)).numpy().astype(np.float64)
    assert np.abs(sv - s).max() <= tol * max(shape) * s.max()
    _check(ptl.tensor(a), a.astype(np.complex128), tol, False)
