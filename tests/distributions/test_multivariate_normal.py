"""MultivariateNormal: log_prob, entropy and moments against scipy.stats in float64 for each
parameterisation (covariance_matrix, precision_matrix, scale_tril) and batch shape, the
derived matrices, sample moments, gradients, KL divergence and errors.  It needs
pytorchlite.linalg.cholesky and solve_triangular; until they exist the module skips."""
import math

import numpy as np
import pytest
from scipy import stats

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
from pytorchlite.distributions import MultivariateNormal, kl_divergence
from helpers import assert_close

pytestmark = pytest.mark.skipif(
    not (hasattr(ptl.linalg, "cholesky") and hasattr(ptl.linalg, "solve_triangular")),
    reason="needs linalg.cholesky (linalg branch)")

RTOL, ATOL = 1e-9, 1e-12


def t64(a):
    return ptl.tensor(np.asarray(a, dtype=np.float64))


def spd(rng, n):
    a = rng.normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


@pytest.mark.parametrize("by", ["covariance_matrix", "precision_matrix", "scale_tril"])
@pytest.mark.parametrize("n", [1, 3])
def test_against_scipy(by, n):
    rng = np.random.default_rng(n)
    loc, cov = rng.normal(size=n), spd(rng, n)
    given = {"covariance_matrix": cov, "precision_matrix": np.linalg.inv(cov),
             "scale_tril": np.linalg.cholesky(cov)}[by]
    d = MultivariateNormal(t64(loc), **{by: t64(given)})
    assert d.batch_shape == ptl.Size([]) and d.event_shape == ptl.Size([n])
    frozen = stats.multivariate_normal(loc, cov)
    x = rng.normal(size=(4, n))
    assert_close(d.log_prob(t64(x)), frozen.logpdf(x), rtol=RTOL, atol=ATOL)
    assert_close(d.entropy(), frozen.entropy(), rtol=RTOL, atol=ATOL)
    assert_close(d.mean, loc, rtol=0, atol=0)
    assert_close(d.variance, np.diag(cov), rtol=RTOL, atol=ATOL)
    assert_close(d.covariance_matrix, cov, rtol=RTOL, atol=1e-10)
    assert_close(d.precision_matrix, np.linalg.inv(cov), rtol=RTOL, atol=1e-10)
    assert_close(d.scale_tril, np.linalg.cholesky(cov), rtol=RTOL, atol=1e-10)


def test_batched_and_broadcast():
    rng = np.random.default_rng(5)
    covs = np.stack([spd(rng, 2) for _ in range(3)])
    loc = rng.normal(size=(4, 1, 2))
    d = MultivariateNormal(t64(loc), covariance_matrix=t64(covs))
    assert d.batch_shape == ptl.Size([4, 3]) and d.event_shape == ptl.Size([2])
    x = rng.normal(size=(4, 3, 2))
    want = np.array([[stats.multivariate_normal(loc[i, 0], covs[j]).logpdf(x[i, j])
                      for j in range(3)] for i in range(4)])
    assert_close(d.log_prob(t64(x)), want, rtol=RTOL, atol=ATOL)
    assert d.entropy().shape == ptl.Size([4, 3])
    assert d.rsample((5,)).shape == ptl.Size([5, 4, 3, 2])
    e = d.expand((2, 4, 3))
    assert e.batch_shape == ptl.Size([2, 4, 3]) and e.sample().shape == ptl.Size([2, 4, 3, 2])


def test_sample_moments():
    rng = np.random.default_rng(6)
    loc, cov = rng.normal(size=3), spd(rng, 3)
    ptl.manual_seed(0)
    n = 200_000
    x = MultivariateNormal(t64(loc), covariance_matrix=t64(cov)).sample((n,)).numpy()
    se = np.sqrt(np.diag(cov) / n)
    assert np.all(np.abs(x.mean(0) - loc) < 5 * se)
    # each covariance entry within 5 standard errors: var(x_i x_j) = c_ii c_jj + c_ij^2
    se_cov = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov ** 2) / n)
    assert np.all(np.abs(np.cov(x.T) - cov) < 5 * se_cov)


def test_gradients():
    rng = np.random.default_rng(7)
    loc = t64(rng.normal(size=2)).requires_grad_()
    tril = t64(np.linalg.cholesky(spd(rng, 2))).requires_grad_()
    x = t64(rng.normal(size=(3, 2)))
    # gradcheck perturbs every entry, the upper triangle's too: the functions take the lower
    # triangle, as a user differentiating through scale_tril would
    assert gradcheck(lambda m, L: MultivariateNormal(m, scale_tril=L.tril()).log_prob(x),
                     (loc, tril))
    assert gradcheck(lambda L: MultivariateNormal(loc.detach(), scale_tril=L.tril()).entropy(),
                     (tril,))

    def sample(m, L):
        ptl.manual_seed(1)
        return MultivariateNormal(m, scale_tril=L.tril()).rsample((2,))
    assert gradcheck(sample, (loc, tril))


def test_kl_closed_form():
    rng = np.random.default_rng(8)
    m1, m2, c1, c2 = rng.normal(size=3), rng.normal(size=3), spd(rng, 3), spd(rng, 3)
    c2_inv = np.linalg.inv(c2)
    want = 0.5 * (np.trace(c2_inv @ c1) + (m2 - m1) @ c2_inv @ (m2 - m1) - 3
                  + math.log(np.linalg.det(c2) / np.linalg.det(c1)))
    p = MultivariateNormal(t64(m1), covariance_matrix=t64(c1))
    q = MultivariateNormal(t64(m2), covariance_matrix=t64(c2))
    assert_close(kl_divergence(p, q), want, rtol=1e-9)
    with pytest.raises(ValueError, match="different event shapes cannot be computed"):
        kl_divergence(p, MultivariateNormal(ptl.zeros(2, dtype=ptl.float64),
                                            covariance_matrix=ptl.eye(2, dtype=ptl.float64)))


def test_errors():
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix or "
                                         "precision_matrix or scale_tril may be specified."):
        MultivariateNormal(ptl.zeros(2))
    with pytest.raises(ValueError, match="loc must be at least one-dimensional."):
        MultivariateNormal(ptl.tensor(0.0), covariance_matrix=ptl.eye(1))
    with pytest.raises(ValueError, match="scale_tril matrix must be at least two-dimensional"):
        MultivariateNormal(ptl.zeros(2), scale_tril=ptl.ones(2))
    with pytest.raises(ValueError, match="to satisfy the constraint PositiveDefinite()"):
        MultivariateNormal(ptl.zeros(2), covariance_matrix=ptl.tensor([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="to satisfy the constraint LowerCholesky()"):
        MultivariateNormal(ptl.zeros(2), scale_tril=ptl.tensor([[1.0, 1.0], [0.0, 1.0]]))
