"""The complex SVD on graded and rank-deficient inputs (linalg_complex_svd.c, Note [Complex
SVD]; these began as the tests of the one-sided Jacobi's column-sorted QR that it replaced).
Against NumPy in complex128: columns graded in rising and mixed norm order, rank-deficient
inputs (zero and repeated columns and rows), tall and wide, full_matrices, batched on one and
two threads."""
import numpy as np
import pytest

import pytorchlite as ptl
from test_linalg_complex import _crand

DTYPES = [(ptl.complex128, np.complex128, 1e-10), (ptl.complex64, np.complex64, 2e-5)]


@pytest.fixture(params=DTYPES, ids=["complex128", "complex64"])
def cdt(request):
    return request.param


def _mh(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _check(A, a, tol, full):
    """U S Vh = a, U and Vh with orthonormal columns / rows, S = NumPy's"""
    U, S, Vh = ptl.linalg.svd(A, full_matrices=full)
    u, s, vh = (t.numpy().astype(np.complex128) for t in (U, S, Vh))
    s = s.real
    m, n = a.shape[-2:]
    k = min(m, n)
    scale = max(np.abs(a).max(initial=0), 1e-300) * max(m, n, 1)
    sn = np.linalg.svd(a, compute_uv=False)
    assert np.abs(s - sn).max(initial=0) <= tol * scale
    assert np.abs((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :] - a).max(initial=0) \
        <= tol * scale
    assert np.abs(_mh(u) @ u - np.eye(u.shape[-1])).max(initial=0) <= tol * max(m, n)
    assert np.abs(vh @ _mh(vh) - np.eye(vh.shape[-2])).max(initial=0) <= tol * max(m, n)
    sv = ptl.linalg.svdvals(A).numpy()
    assert np.abs(sv - sn).max(initial=0) <= tol * scale


def _graded(shape, seed, order):
    a = _crand(shape, seed)
    n = shape[-1]
    g = np.geomspace(1e-3, 1e3, n)
    if order == "mixed":
        g = g[np.random.default_rng(seed).permutation(n)]
    return a * g


@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (3, 3), (9, 5), (5, 9), (17, 16),
                                   (16, 17), (33, 33), (40, 21), (21, 40)])
@pytest.mark.parametrize("order", ["rising", "mixed"])
@pytest.mark.parametrize("full", [False, True])
def test_column_order(cdt, shape, order, full, threads):
    tdt, npdt, tol = cdt
    a = _graded((2,) + shape, sum(shape), order).astype(npdt)
    _check(ptl.tensor(a), a.astype(np.complex128), tol, full)


@pytest.mark.parametrize("shape", [(6, 6), (9, 5), (5, 9), (20, 20)])
@pytest.mark.parametrize("full", [False, True])
def test_rank_deficient(cdt, shape, full, threads):
    tdt, npdt, tol = cdt
    m, n = shape
    a = _crand((m, n), m * n)
    a[:, 1] = 0                          # a zero column
    a[:, -1] = 2j * a[:, 0]              # a repeated one
    a[2] = 0                             # a zero row
    a = a.astype(npdt)
    _check(ptl.tensor(a), a.astype(np.complex128), tol, full)
    z = np.zeros((3, m, n), npdt)
    _check(ptl.tensor(z), z.astype(np.complex128), tol, full)
