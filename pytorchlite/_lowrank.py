"""Randomized low-rank SVD and PCA (torch/_lowrank.py): svd_lowrank and pca_lowrank, after
Halko, Martinsson and Tropp (2009), algorithms 4.4 and 5.1.

A random Gaussian test matrix (from the default generator: seed it for repeatable results)
is pushed through A and refined by niter power iterations, each re-orthonormalised with QR;
the small projected matrix then gets an exact SVD.  pytorchlite's generator differs from
PyTorch's, so the same seed gives other (equally good) factors; for a matrix of rank at most
q both are exact up to the signs of the singular vectors."""
from . import _C, linalg
from . import overrides as _overrides

__all__ = ["svd_lowrank", "pca_lowrank"]


def _basis(A, q, niter, M):
    """Q (*, m, q) with orthonormal columns whose span approximates A - M's range."""
    def apply(B):      # (A - M) B
        return A @ B if M is None else A @ B - M @ B

    def apply_h(B):    # (A - M)^H B
        return A.mH @ B if M is None else A.mH @ B - M.mH @ B
    dtype = A.dtype if A.dtype.is_complex or A.dtype.is_floating_point else _C.float32
    R = _C._functions["randn"](A.shape[-1], q, dtype=dtype, device=A.device)
    Q = linalg.qr(apply(R)).Q
    for _ in range(niter):
        Q = linalg.qr(apply_h(Q)).Q
        Q = linalg.qr(apply(Q)).Q
    return Q


def _svd_lowrank(A, q, niter, M):
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    m, n = A.shape[-2], A.shape[-1]
    if M is not None:
        M = M.broadcast_to(A.shape)
    wide = m < n
    if wide:
        A = A.mH
        M = None if M is None else M.mH
    Q = _basis(A, q, niter, M)
    B = Q.mH @ A if M is None else Q.mH @ A - Q.mH @ M
    U, S, Vh = linalg.svd(B, full_matrices=False)
    U, V = Q @ U, Vh.mH
    return (V, S, U) if wide else (U, S, V)


def svd_lowrank(A, q=6, niter=2, M=None):
    """(U, S, V), A - M ~ U diag(S) V^H with q columns (q: a slight overestimate of the rank;
    M, broadcast to A's shape, defaults to zero)."""
    return _svd_lowrank(A, q, niter, M)


def pca_lowrank(A, q=None, center=True, niter=2):
    """svd_lowrank of A with its column means removed (center=True); V's columns are the
    principal directions and S^2 / (m - 1) the variances along them."""
    m, n = A.shape[-2], A.shape[-1]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter, None)
    return _svd_lowrank(A - A.mean(dim=(-2,), keepdim=True), q, niter, None)

# each public function goes to __torch_function__ first (Note [Torch function])
_overrides._route_functions(globals())
