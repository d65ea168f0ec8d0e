"""svd_lowrank / pca_lowrank (randomized): shapes, exactness on matrices of rank <= q, the
approximation quality against the truncated SVD (NumPy float64), M and centering, errors,
and torch's singular values on the same matrices (the generators differ, so only
seed-independent results are compared)."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import torch, torch_ref


def _low_rank(batch, m, n, rank, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(batch + (m, rank)) @ rng.standard_normal(batch + (rank, n))


def _recon(U, S, V):
    return (U @ ptl.diag_embed(S) @ V.mH).numpy()


@pytest.mark.parametrize("batch,m,n", [((), 20, 9), ((), 7, 15), ((2,), 12, 12),
                                       ((2, 1), 30, 5)])
def test_svd_lowrank_exact_for_low_rank(batch, m, n):
    a = _low_rank(batch, m, n, 3)
    ptl.manual_seed(0)
    U, S, V = ptl.svd_lowrank(ptl.from_numpy(a), q=4)
    assert tuple(U.shape) == batch + (m, 4) and tuple(V.shape) == batch + (n, 4)
    assert tuple(S.shape) == batch + (4,)
    np.testing.assert_allclose(_recon(U, S, V), a, atol=1e-10)
    np.testing.assert_allclose(S.numpy()[..., :3], np.linalg.svd(a, compute_uv=False)[..., :3],
                               rtol=1e-10)
    np.testing.assert_allclose((U.mH @ U).numpy(), np.broadcast_to(np.eye(4), batch + (4, 4)),
                               atol=1e-12)


def test_svd_lowrank_quality_and_mean():
    rng = np.random.default_rng(1)
    # a decaying spectrum: the randomized error stays near the best rank-q error
    u, _ = np.linalg.qr(rng.standard_normal((60, 30)))
    v, _ = np.linalg.qr(rng.standard_normal((40, 30)))
    a = (u * 0.5 ** np.arange(30)) @ v.T
    ptl.manual_seed(1)
    U, S, V = ptl.svd_lowrank(ptl.from_numpy(a), q=8, niter=3)
    best = 0.5 ** 8
    assert np.linalg.norm(a - _recon(U, S, V), 2) < 2 * best
    np.testing.assert_allclose(S.numpy()[:6], 0.5 ** np.arange(6), rtol=1e-8)
    m = rng.standard_normal((1, 40))
    ptl.manual_seed(2)
    U, S, V = ptl.svd_lowrank(ptl.from_numpy(a + m), q=8, M=ptl.from_numpy(m))
    assert np.linalg.norm(a - _recon(U, S, V), 2) < 2 * best


def test_pca_lowrank_centers_and_checks():
    a = _low_rank((), 25, 6, 2, seed=3) + 5.0
    ptl.manual_seed(0)
    U, S, V = ptl.pca_lowrank(ptl.from_numpy(a))
    assert tuple(U.shape) == (25, 6) and tuple(V.shape) == (6, 6)
    centered = a - a.mean(0)
    np.testing.assert_allclose(S.numpy()[:3], np.linalg.svd(centered, compute_uv=False)[:3],
                               rtol=1e-9, atol=1e-9)
    ptl.manual_seed(0)
    U, S, V = ptl.pca_lowrank(ptl.from_numpy(a), q=3, center=False, niter=0)
    np.testing.assert_allclose(S.numpy()[:2], np.linalg.svd(a, compute_uv=False)[:2],
                               rtol=1e-9)
    with pytest.raises(ValueError, match=r"^q\(=7\) must be non-negative integer and not "
                                         r"greater than min\(m, n\)=6$"):
        ptl.pca_lowrank(ptl.from_numpy(a), q=7)
    with pytest.raises(ValueError, match=r"^niter\(=-1\) must be non-negative integer$"):
        ptl.pca_lowrank(ptl.from_numpy(a), niter=-1)


def test_lowrank_gradients_flow():
    a = ptl.from_numpy(_low_rank((), 6, 4, 2)).requires_grad_()
    ptl.manual_seed(0)
    U, S, V = ptl.svd_lowrank(a, q=2)
    S.sum().backward()
    u, s, vh = np.linalg.svd(a.detach().numpy())
    # d(sum of the top singular values)/dA = U_2 V_2^T
    np.testing.assert_allclose(a.grad.numpy(), u[:, :2] @ vh[:2], atol=1e-8)


@torch_ref
@pytest.mark.parametrize("fn", ["svd_lowrank", "pca_lowrank"])
def test_singular_values_match_torch(fn):
    a = _low_rank((2,), 10, 8, 3, seed=5)
    ptl.manual_seed(0)
    torch.manual_seed(0)
    ours = getattr(ptl, fn)(ptl.from_numpy(a), q=5)
    theirs = getattr(torch, fn)(torch.from_numpy(a), q=5)
    for x, y in zip(ours, theirs):
        assert tuple(x.shape) == tuple(y.shape)
    np.testing.assert_allclose(ours[1].numpy()[..., :3], theirs[1].numpy()[..., :3], rtol=1e-9)
    # the same rank-3 matrix (centered for pca_lowrank) comes back from both
    recon = [(u.numpy() * s.numpy()[..., None, :]) @ np.swapaxes(v.numpy(), -1, -2)
             for u, s, v in (ours, theirs)]
    np.testing.assert_allclose(recon[0], recon[1], atol=1e-9)
