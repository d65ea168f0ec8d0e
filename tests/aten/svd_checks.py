"""The checks of one SVD against NumPy in float64, shared by the svd test files of each dtype."""
import numpy as np

import pytorchlite as ptl


def check_svd(a, U, S, Vh, full, eps, c, entries=False):
    """U, S, Vh (float64 arrays of one dtype's results) are an SVD of a (float64, batched or
    not): the shapes of full_matrices=full, orthonormal vectors, U diag(S) Vh = a, S = NumPy's
    values in descending order, each to c max(m, n, 16) eps (eps of the results' dtype),
    relative to the largest singular value, or to the largest entry of a where entries."""
    m, n = a.shape[-2:]
    k, r = min(m, n), max(m, n, 16)
    assert U.shape == a.shape[:-2] + (m, m if full else k)
    assert S.shape == a.shape[:-2] + (k,)
    assert Vh.shape == a.shape[:-2] + (n if full else k, n)
    tol = c * r * eps
    ref = np.linalg.svd(a, compute_uv=False)
    floor = 1e-30 if entries else 1e-300
    smax = max(float(ref.max(initial=0.0)), floor)
    scale = max(float(np.abs(a).max(initial=0.0)), floor) if entries else smax
    rec = np.einsum("...ik,...k,...kj->...ij", U[..., :, :k], S, Vh[..., :k, :])
    assert np.abs(rec - a).max(initial=0.0) <= tol * scale
    eye_u, eye_v = np.eye(U.shape[-1]), np.eye(Vh.shape[-2])
    assert np.abs(np.swapaxes(U, -1, -2) @ U - eye_u).max(initial=0.0) <= tol
    assert np.abs(Vh @ np.swapaxes(Vh, -1, -2) - eye_v).max(initial=0.0) <= tol
    assert np.abs(S - ref).max(initial=0.0) <= tol * smax
    assert np.all(np.diff(S, axis=-1) <= 0)


def check_svd_of_size_zero(shape, dtype):
    """svd of zeros of a shape with a 0 in it, both full_matrices: the result's dtypes and
    shapes, and identity vectors where full_matrices asks for square ones."""
    A = ptl.zeros(*shape, dtype=dtype)
    m, n = shape[-2:]
    k = min(m, n)
    for full in (True, False):
        U, S, Vh = ptl.linalg.svd(A, full_matrices=full)
        assert U.dtype == S.dtype == Vh.dtype == dtype
        assert tuple(U.shape) == shape[:-2] + (m, m if full else k)
        assert tuple(S.shape) == shape[:-2] + (k,)
        assert tuple(Vh.shape) == shape[:-2] + (n if full else k, n)
        if full and U.numel():
            np.testing.assert_array_equal(U.numpy(), np.broadcast_to(np.eye(m), U.shape))
        if full and Vh.numel():
            np.testing.assert_array_equal(Vh.numpy(), np.broadcast_to(np.eye(n), Vh.shape))
