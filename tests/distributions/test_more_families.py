"""StudentT, Weibull, Kumaraswamy, InverseGamma, FisherSnedecor, NegativeBinomial,
ContinuousBernoulli, GeneralizedPareto, LogisticNormal, LowRankMultivariateNormal, VonMises,
LKJCholesky and Wishart: densities, cdf/icdf, moments and entropies against scipy.stats (or
numerical integration where scipy lacks the law) in float64; draws by KS / chi-square tests
at significance 1e-3 with n = 20000 that fail for a shifted parameter; rsample gradcheck;
validation errors; and the torch_ref comparisons with live PyTorch."""
import math
import re
import warnings

import numpy as np
import pytest
from scipy import integrate, special, stats

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
from pytorchlite.distributions import (ContinuousBernoulli, FisherSnedecor, GeneralizedPareto,
                                       InverseGamma, Kumaraswamy, LKJCholesky, LogisticNormal,
                                       LowRankMultivariateNormal, NegativeBinomial, StudentT,
                                       VonMises, Weibull, Wishart, constraints)
from helpers import assert_close, torch, torch_ref

N = 20_000
ALPHA = 1e-3
R = dict(rtol=1e-10, atol=1e-12)


def t64(a):
    return ptl.tensor(np.asarray(a, dtype=np.float64))


def raises(exc, msg):
    return pytest.raises(exc, match=re.escape(msg))


def ks(x, cdf, shifted_cdf):
    assert stats.kstest(x, cdf).pvalue > ALPHA
    assert stats.kstest(x, shifted_cdf).pvalue < ALPHA


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (0,)])
def test_student_t(shape):
    rng = np.random.default_rng(1)
    df, loc, scale = rng.uniform(2.5, 8, shape), rng.normal(size=shape), rng.uniform(0.5, 3,
                                                                                     shape)
    d = StudentT(t64(df), t64(loc), t64(scale))
    law = stats.t(df, loc, scale)
    x = rng.normal(size=(4,) + shape) * 3
    assert_close(d.log_prob(t64(x)), law.logpdf(x), **R)
    assert_close(d.entropy(), law.entropy(), **R)
    assert_close(d.mean, law.mean(), **R)
    assert_close(d.variance, law.var(), **R)
    assert_close(d.mode, loc)


def test_student_t_heavy_tails_and_draws():
    d = StudentT(t64([0.5, 1.5, 3.0]), t64(1.0), t64(2.0))
    assert_close(d.mean, [np.nan, 1.0, 1.0], equal_nan=True)
    assert_close(d.variance, [np.nan, np.inf, 4.0 * 3.0], equal_nan=True)
    ptl.manual_seed(1)
    x = StudentT(t64(4.0), t64(1.0), t64(2.0)).rsample((N,)).numpy()
    ks(x, stats.t(4, 1, 2).cdf, stats.t(4, 1.1, 2).cdf)
    assert StudentT(3.0).batch_shape == ()


@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
def test_weibull(shape):
    rng = np.random.default_rng(2)
    scale, k = rng.uniform(0.5, 3, shape), rng.uniform(1.2, 4, shape)
    d = Weibull(t64(scale), t64(k))
    law = stats.weibull_min(k, scale=scale)
    x = rng.uniform(0.05, 4, (4,) + shape)
    assert_close(d.log_prob(t64(x)), law.logpdf(x), **R)
    assert_close(d.cdf(t64(x)), law.cdf(x), **R)
    q = rng.uniform(0.05, 0.95, (4,) + shape)
    assert_close(d.icdf(t64(q)), law.ppf(q), **R)
    assert_close(d.entropy(), law.entropy(), **R)
    assert_close(d.mean, law.mean(), **R)
    assert_close(d.variance, law.var(), **R)
    assert_close(d.mode, scale * ((k - 1) / k) ** (1 / k), **R)
    e = d.expand((5,) + shape)
    assert_close(e.log_prob(t64(x[:1])), np.broadcast_to(law.logpdf(x[:1]), (5,) + shape), **R)


def _kumaraswamy_logpdf(x, a, b):
    return np.log(a) + np.log(b) + (a - 1) * np.log(x) + (b - 1) * np.log1p(-x ** a)


def test_kumaraswamy_against_integration():
    a, b = np.array([0.7, 2.0, 5.0]), np.array([1.5, 3.0, 0.8])
    d = Kumaraswamy(t64(a), t64(b))
    x = np.array([[0.1, 0.5, 0.9], [0.3, 0.7, 0.2]])
    assert_close(d.log_prob(t64(x)), _kumaraswamy_logpdf(x, a, b), **R)
    assert_close(d.cdf(t64(x)), 1 - (1 - x ** a) ** b, **R)
    for i in range(3):
        pdf = lambda v: np.exp(_kumaraswamy_logpdf(v, a[i], b[i]))   # noqa: E731
        m1 = integrate.quad(lambda v: v * pdf(v), 0, 1)[0]
        m2 = integrate.quad(lambda v: v * v * pdf(v), 0, 1)[0]
        h = integrate.quad(lambda v: -pdf(v) * _kumaraswamy_logpdf(v, a[i], b[i]), 0, 1,
                           limit=200)[0]
        assert math.isclose(d.mean[i].item(), m1, rel_tol=1e-8)
        assert math.isclose(d.variance[i].item(), m2 - m1 * m1, rel_tol=1e-7)
        assert math.isclose(d.entropy()[i].item(), h, rel_tol=1e-7, abs_tol=1e-9)
    mode = ((a[1] - 1) / (a[1] * b[1] - 1)) ** (1 / a[1])   # undefined for a < 1 or b < 1
    assert_close(d.mode, [np.nan, mode, np.nan], rtol=1e-12, equal_nan=True)
    ptl.manual_seed(2)
    x = Kumaraswamy(t64(2.0), t64(3.0)).rsample((N,)).numpy()
    ks(x, lambda v: 1 - (1 - v ** 2) ** 3, lambda v: 1 - (1 - v ** 2.1) ** 3)


@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
def test_inverse_gamma(shape):
    rng = np.random.default_rng(3)
    c, rate = rng.uniform(2.5, 6, shape), rng.uniform(0.5, 3, shape)
    d = InverseGamma(t64(c), t64(rate))
    law = stats.invgamma(c, scale=rate)
    x = rng.uniform(0.05, 4, (4,) + shape)
    assert_close(d.log_prob(t64(x)), law.logpdf(x), **R)
    assert_close(d.cdf(t64(x)), law.cdf(x), **R)
    assert_close(d.entropy(), law.entropy(), **R)
    assert_close(d.mean, law.mean(), **R)
    assert_close(d.variance, law.var(), **R)
    assert_close(d.mode, rate / (c + 1), **R)


def test_inverse_gamma_infinite_moments_and_draws():
    d = InverseGamma(t64([0.5, 1.5, 3.0]), t64(1.0))
    assert_close(d.mean, [np.inf, 2.0, 0.5])
    assert_close(d.variance, [np.inf, np.inf, 0.25])
    ptl.manual_seed(3)
    x = InverseGamma(t64(3.0), t64(2.0)).rsample((N,)).numpy()
    ks(x, stats.invgamma(3, scale=2).cdf, stats.invgamma(3, scale=2.2).cdf)


@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
def test_fisher_snedecor(shape):
    rng = np.random.default_rng(4)
    df1, df2 = rng.uniform(2.5, 9, shape), rng.uniform(4.5, 12, shape)
    d = FisherSnedecor(t64(df1), t64(df2))
    law = stats.f(df1, df2)
    x = rng.uniform(0.05, 4, (4,) + shape)
    assert_close(d.log_prob(t64(x)), law.logpdf(x), **R)
    assert_close(d.mean, law.mean(), **R)
    assert_close(d.variance, law.var(), **R)
    assert_close(d.mode, (df1 - 2) / df1 * df2 / (df2 + 2), **R)


def test_fisher_snedecor_undefined_moments_and_draws():
    d = FisherSnedecor(t64([1.0, 3.0, 6.0]), t64([1.5, 3.0, 5.0]))
    assert_close(d.mean, [np.nan, 3.0, 5.0 / 3.0], equal_nan=True)
    assert bool(ptl.isnan(d.variance[:2]).all()) and bool(ptl.isnan(d.mode[0]))
    ptl.manual_seed(4)
    x = FisherSnedecor(t64(5.0), t64(8.0)).rsample((N,)).numpy()
    ks(x, stats.f(5, 8).cdf, stats.f(5.6, 8).cdf)


@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
def test_negative_binomial(shape):
    rng = np.random.default_rng(5)
    r, p = rng.uniform(0.5, 6, shape), rng.uniform(0.1, 0.8, shape)
    d = NegativeBinomial(t64(r), t64(p))
    law = stats.nbinom(r, 1 - p)
    k = rng.integers(0, 15, (4,) + shape).astype(np.float64)
    assert_close(d.log_prob(t64(k)), law.logpmf(k), **R)
    assert_close(d.mean, law.mean(), **R)
    assert_close(d.variance, law.var(), **R)
    assert_close(d.mode, np.maximum(np.floor((r - 1) * p / (1 - p)), 0), **R)
    by_logits = NegativeBinomial(t64(r), logits=t64(np.log(p / (1 - p))))
    assert_close(by_logits.log_prob(t64(k)), law.logpmf(k), rtol=1e-9)


def test_negative_binomial_draws_and_edges():
    assert NegativeBinomial(t64(0.0), t64(0.5)).log_prob(t64(0.0)).item() == 0.0
    ptl.manual_seed(5)
    x = NegativeBinomial(t64(3.0), t64(0.4)).sample((N,)).numpy()
    support = np.arange(12)
    for law, ok in ((stats.nbinom(3, 0.6), True), (stats.nbinom(3, 0.57), False)):
        counts = np.append([(x == k).sum() for k in support], (x > 11).sum())
        probs = np.append(law.pmf(support), law.sf(11))
        assert (stats.chisquare(counts, N * probs).pvalue > ALPHA) == ok


def _cb_log_norm(p):
    """log C(p) by integration: 1 / C = integral of p^x (1-p)^(1-x) over [0, 1]."""
    return -np.log(integrate.quad(lambda x: p ** x * (1 - p) ** (1 - x), 0, 1)[0])


@pytest.mark.parametrize("p", [0.05, 0.3, 0.4995, 0.5, 0.5003, 0.8, 0.97])
def test_continuous_bernoulli_against_integration(p):
    """Both sides of the Taylor region (0.499, 0.501)."""
    d = ContinuousBernoulli(t64(p))
    log_c = _cb_log_norm(p)
    x = np.array([0.0, 0.2, 0.5, 0.9, 1.0])
    want = log_c + x * np.log(p) + (1 - x) * np.log1p(-p)
    assert_close(d.log_prob(t64(x)), want, rtol=1e-8)
    pdf = lambda v: np.exp(log_c + v * np.log(p) + (1 - v) * np.log1p(-p))   # noqa: E731
    m1 = integrate.quad(lambda v: v * pdf(v), 0, 1)[0]
    m2 = integrate.quad(lambda v: v * v * pdf(v), 0, 1)[0]
    h = -integrate.quad(lambda v: pdf(v) * np.log(pdf(v)), 0, 1)[0]
    assert math.isclose(d.mean.item(), m1, rel_tol=1e-8)
    assert math.isclose(d.variance.item(), m2 - m1 * m1, rel_tol=1e-7)
    assert math.isclose(d.entropy().item(), h, rel_tol=1e-7, abs_tol=1e-9)
    cdf = [integrate.quad(pdf, 0, v)[0] for v in x]
    # inside lims the cdf is the uniform one, off by O(p - 1/2) (as in PyTorch)
    near_half = 0.499 < p <= 0.501
    assert_close(d.cdf(t64(x)), cdf, rtol=1e-3 if near_half else 1e-7, atol=1e-9)
    q = np.array([0.1, 0.5, 0.9])
    assert_close(d.cdf(d.icdf(t64(q))), q, rtol=1e-7)


def test_continuous_bernoulli_draws_and_errors():
    ptl.manual_seed(6)
    x = ContinuousBernoulli(t64(0.2)).rsample((N,)).numpy()
    log_c = _cb_log_norm(0.2)

    def cdf(v, p=0.2):
        return (p ** v * (1 - p) ** (1 - v) + p - 1) / (2 * p - 1)
    ks(x, cdf, lambda v: cdf(v, 0.23))
    with raises(ValueError, "The parameter probs has invalid values"):
        ContinuousBernoulli(t64(1.5), validate_args=True)
    by_logits = ContinuousBernoulli(logits=t64([-1.0, 2.0]))
    assert_close(by_logits.probs, special.expit([-1.0, 2.0]), rtol=1e-12)
    assert ContinuousBernoulli(0.3).batch_shape == ()


@pytest.mark.parametrize("c", [-0.4, 0.0, 0.3, 1.2])
def test_generalized_pareto(c):
    loc, scale = np.array([0.0, 1.0]), np.array([2.0, 0.5])
    d = GeneralizedPareto(t64(loc), t64(scale), t64(c))
    law = stats.genpareto(c, loc, scale)
    q = np.array([[0.1, 0.6], [0.35, 0.95]])
    x = law.ppf(q)
    assert_close(d.icdf(t64(q)), x, **R)
    assert_close(d.log_prob(t64(x)), law.logpdf(x), rtol=1e-9)
    assert_close(d.cdf(t64(x)), q, rtol=1e-9)
    assert_close(d.entropy(), law.entropy(), **R)
    if c < 1:
        assert_close(d.mean, law.mean(), **R)
    else:
        assert bool(ptl.isnan(d.mean).all())
    if c < 0.5:
        assert_close(d.variance, law.var(), **R)
    else:
        assert bool(ptl.isnan(d.variance).all())
    upper = loc - scale / c if c < 0 else np.full(2, np.inf)
    assert_close(d.support.upper_bound, upper)
    ptl.manual_seed(7)
    draws = GeneralizedPareto(t64(0.0), t64(2.0), t64(c)).rsample((N,)).numpy()
    ks(draws, stats.genpareto(c, 0, 2).cdf, stats.genpareto(c, 0, 2.2).cdf)


def _stick_breaking_np(x):
    """The stick-breaking map of StickBreakingTransform, in NumPy."""
    k = x.shape[-1]
    z = special.expit(x - np.log(k - np.arange(k)))
    y, rest = [], 1.0
    for i in range(k):
        y.append(z[i] * rest)
        rest = rest * (1 - z[i])
    return np.array(y + [rest])


def test_logistic_normal_against_a_finite_difference_jacobian():
    loc, scale = np.array([0.2, -0.5, 1.0]), np.array([1.0, 0.7, 1.5])
    d = LogisticNormal(t64(loc), t64(scale))
    assert tuple(d.event_shape) == (4,) and tuple(d.batch_shape) == ()
    rng = np.random.default_rng(8)
    for _ in range(3):
        x = rng.normal(size=3)
        y = _stick_breaking_np(x)
        h = 1e-6
        jac = np.stack([(_stick_breaking_np(x + h * e)[:3] - _stick_breaking_np(x - h * e)[:3])
                        / (2 * h) for e in np.eye(3)], -1)
        want = stats.norm(loc, scale).logpdf(x).sum() - np.linalg.slogdet(jac)[1]
        assert math.isclose(d.log_prob(t64(y)).item(), want, rel_tol=1e-7)
    assert_close(d.loc, loc)
    assert_close(d.scale, scale)
    assert tuple(LogisticNormal(0.0, 1.0).event_shape) == (2,)
    assert tuple(d.expand((5,)).rsample((2,)).shape) == (2, 5, 4)


@pytest.mark.parametrize("batch", [(), (2,)])
def test_lowrank_multivariate_normal(batch):
    rng = np.random.default_rng(9)
    n, m = 4, 2
    loc = rng.normal(size=batch + (n,))
    W = rng.normal(size=batch + (n, m))
    D = rng.uniform(0.5, 2, batch + (n,))
    d = LowRankMultivariateNormal(t64(loc), t64(W), t64(D))
    cov = W @ np.swapaxes(W, -1, -2) + D[..., None] * np.eye(n)
    x = rng.normal(size=(3,) + batch + (n,))
    if batch:
        want = np.stack([stats.multivariate_normal(loc[i], cov[i]).logpdf(x[:, i])
                         for i in range(batch[0])], 1)
        ent = [stats.multivariate_normal(loc[i], cov[i]).entropy() for i in range(batch[0])]
    else:
        want = stats.multivariate_normal(loc, cov).logpdf(x)
        ent = stats.multivariate_normal(loc, cov).entropy()
    assert_close(d.log_prob(t64(x)), want, **R)
    assert_close(d.entropy(), ent, **R)
    assert_close(d.covariance_matrix, cov, **R)
    assert_close(d.precision_matrix, np.linalg.inv(cov), rtol=1e-9, atol=1e-12)
    L = d.scale_tril.numpy()
    assert_close(d.scale_tril, np.linalg.cholesky(cov), rtol=1e-9, atol=1e-12)
    assert np.allclose(L @ np.swapaxes(L, -1, -2), cov)
    assert_close(d.variance, np.diagonal(cov, 0, -2, -1), **R)
    assert_close(d.mean, loc)
    assert_close(d.mode, loc)
    assert tuple(d.expand((3,) + batch).sample().shape) == (3,) + batch + (n,)


def test_lowrank_draws_and_errors():
    ptl.manual_seed(10)
    W, D = np.array([[1.0], [0.5]]), np.array([1.0, 2.0])
    x = LowRankMultivariateNormal(t64([0.0, 1.0]), t64(W), t64(D)).rsample((N,)).numpy()
    cov = W @ W.T + np.diag(D)
    proj = x @ np.array([1.0, -1.0])        # a fixed projection is normal
    sd = math.sqrt(np.array([1.0, -1.0]) @ cov @ np.array([1.0, -1.0]))
    ks(proj, stats.norm(-1.0, sd).cdf, stats.norm(-1.0, sd * 1.08).cdf)
    with raises(ValueError, "loc must be at least one-dimensional."):
        LowRankMultivariateNormal(t64(0.0), t64(W), t64(D))
    with raises(ValueError, "cov_factor must be at least two-dimensional, with optional "
                "leading batch dimensions"):
        LowRankMultivariateNormal(t64([0.0, 1.0]), t64([1.0, 2.0]), t64(D))
    with raises(ValueError, "cov_factor must be a batch of matrices with shape 2 x m"):
        LowRankMultivariateNormal(t64([0.0, 1.0]), t64(np.ones((3, 1))), t64(D))
    with raises(ValueError, "cov_diag must be a batch of vectors with shape "
                "torch.Size([2])"):
        LowRankMultivariateNormal(t64([0.0, 1.0]), t64(W), t64([1.0]))
    with raises(ValueError, "Incompatible batch shapes: loc torch.Size([3, 2]), cov_factor "
                "torch.Size([4, 2, 1]), cov_diag torch.Size([2])"):
        LowRankMultivariateNormal(t64(np.zeros((3, 2))), t64(np.ones((4, 2, 1))), t64(D))


def test_von_mises():
    loc, kappa = np.array([0.5, -2.0, 3.0]), np.array([0.3, 2.0, 40.0])
    d = VonMises(t64(loc), t64(kappa))
    x = np.array([[0.0, 1.0, -3.0], [2.5, -2.2, 3.1]])
    assert_close(d.log_prob(t64(x)), stats.vonmises(kappa, loc).logpdf(x), **R)
    assert_close(d.variance, 1 - special.i1e(kappa) / special.i0e(kappa), **R)
    assert_close(d.mean, loc)
    assert_close(d.mode, loc)
    ptl.manual_seed(11)
    for k in (0.5, 4.0):
        draws = VonMises(t64(1.0), t64(k)).sample((N,)).numpy()
        assert np.all((draws >= -np.pi) & (draws < np.pi))
        centred = (draws - 1.0 + np.pi) % (2 * np.pi) - np.pi   # scipy's support: loc +- pi
        ks(centred, stats.vonmises(k).cdf, stats.vonmises(k, 0.15).cdf)
    e = d.expand((2, 3))
    assert tuple(e.batch_shape) == (2, 3) and not d.has_rsample


def test_lkj_cholesky_two_dims_is_a_scaled_beta():
    """For dim 2, L = [[1, 0], [r, sqrt(1 - r^2)]] with (r + 1) / 2 ~ Beta(eta, eta)."""
    for eta in (0.5, 1.0, 3.0):
        d = LKJCholesky(2, t64(eta))
        r = np.array([-0.9, -0.2, 0.4, 0.8])
        L = np.zeros((4, 2, 2))
        L[:, 0, 0], L[:, 1, 0], L[:, 1, 1] = 1.0, r, np.sqrt(1 - r * r)
        want = stats.beta(eta, eta).logpdf((r + 1) / 2) - np.log(2)
        assert_close(d.log_prob(t64(L)), want, **R)


@pytest.mark.parametrize("dim, eta", [(2, 2.0), (3, 0.7), (4, 1.5)])
def test_lkj_cholesky_draws(dim, eta):
    """An off-diagonal correlation of LKJ(eta) in dim d has (r + 1) / 2 ~ Beta(b, b), b =
    eta - 1 + d / 2."""
    ptl.manual_seed(12)
    L = LKJCholesky(dim, t64(eta)).sample((N,))
    assert bool(constraints.corr_cholesky.check(L).all())
    Ln = L.numpy()
    corr = Ln @ np.swapaxes(Ln, -1, -2)
    r = corr[:, dim - 1, 0]
    b = eta - 1 + dim / 2
    ks((r + 1) / 2, stats.beta(b, b).cdf, stats.beta(b * 1.2, b * 1.2).cdf)
    with raises(ValueError, "Expected dim to be an integer greater than or equal to 2. "
                "Found dim=1."):
        LKJCholesky(1)
    assert tuple(LKJCholesky(3, t64([1.0, 2.0])).expand((4, 2)).sample().shape) == (4, 2, 3, 3)


def test_wishart():
    cov = np.array([[2.0, 0.5, 0.1], [0.5, 1.0, 0.3], [0.1, 0.3, 1.5]])
    df = 5.5
    law = stats.wishart(df, cov)
    rng = np.random.default_rng(13)
    xs = law.rvs(size=3, random_state=rng)
    for given in ({"covariance_matrix": t64(cov)}, {"scale_tril": t64(np.linalg.cholesky(cov))},
                  {"precision_matrix": t64(np.linalg.inv(cov))}):
        d = Wishart(t64(df), **given)
        assert_close(d.log_prob(t64(xs)), law.logpdf(np.moveaxis(xs, 0, -1)), rtol=1e-9)
        assert_close(d.entropy(), law.entropy(), rtol=1e-9)
        assert_close(d.mean, df * cov, rtol=1e-12)
        assert_close(d.variance, df * (cov ** 2 + np.outer(np.diag(cov), np.diag(cov))),
                     rtol=1e-12)
        assert_close(d.mode, (df - 3 - 1) * cov, rtol=1e-12)
        assert_close(d.covariance_matrix, cov, rtol=1e-12)
        assert_close(d.precision_matrix, np.linalg.inv(cov), rtol=1e-9)
    ptl.manual_seed(13)
    with warnings.catch_warnings():
        warnings.simplefilter("error")     # no "Singular sample detected." for df >= dim
        x = Wishart(t64(df), t64(cov)).rsample((N,)).numpy()
    assert bool(constraints.positive_definite.check(t64(x[:50])).all())
    ks(x[:, 0, 0] / cov[0, 0], stats.chi2(df).cdf, stats.chi2(df * 1.1).cdf)
    m = x.mean(0)
    se = np.sqrt(df * (cov ** 2 + np.outer(np.diag(cov), np.diag(cov))) / N)
    assert np.all(np.abs(m - df * cov) < 5 * se)


def test_wishart_batch_and_errors():
    cov = np.stack([np.eye(2), np.array([[2.0, 0.3], [0.3, 1.0]])])
    d = Wishart(t64([3.0, 4.0]), t64(cov))
    assert tuple(d.batch_shape) == (2,) and tuple(d.event_shape) == (2, 2)
    x = d.sample((5,))
    assert tuple(x.shape) == (5, 2, 2, 2)
    want = np.stack([stats.wishart(v, c).logpdf(np.moveaxis(x.numpy()[:, i], 0, -1))
                     for i, (v, c) in enumerate(zip([3.0, 4.0], cov))], 1)
    assert_close(d.log_prob(x), want, rtol=1e-9)
    assert tuple(d.expand((3, 2)).rsample().shape) == (3, 2, 2, 2)
    with raises(ValueError, "Value of df=1.0 expected to be greater than ndim - 1 = 1."):
        Wishart(1.0, t64(np.eye(2)))
    with raises(AssertionError, "Exactly one of covariance_matrix or precision_matrix or "
                "scale_tril may be specified."):
        Wishart(3.0)
    with raises(ValueError, "scale_tril must be at least two-dimensional, with optional "
                "leading batch dimensions"):
        Wishart(3.0, t64([1.0, 2.0]))
    with pytest.warns(UserWarning, match="Low df values detected"):
        Wishart(2.5, t64(np.eye(3)))


def test_rsample_gradcheck():
    a = t64([0.7, 1.6]).requires_grad_()
    b = t64([1.3, 2.4]).requires_grad_()

    def fixed(make):
        def fn(*params):
            ptl.manual_seed(5)
            return make(*params).rsample((3,))
        return fn
    for make in (lambda a, b: Weibull(a, b), lambda a, b: Kumaraswamy(a, b),
                 lambda a, b: GeneralizedPareto(a, b, a - 1.0),
                 lambda a, b: ContinuousBernoulli(a / 3),
                 lambda a, b: StudentT(t64(3.0), a, b),
                 lambda a, b: LogisticNormal(a, b),
                 lambda a, b: LowRankMultivariateNormal(a, b.unsqueeze(-1), a + 1)):
        assert gradcheck(fixed(make), (a, b))


def test_log_prob_gradcheck():
    a = t64([0.7, 1.6]).requires_grad_()
    b = t64([2.3, 3.4]).requires_grad_()
    x = t64([0.3, 0.8])
    for fn in (lambda a, b: StudentT(b, a, a + 1).log_prob(x),
               lambda a, b: InverseGamma(a, b).log_prob(x) + InverseGamma(a, b).entropy(),
               lambda a, b: FisherSnedecor(a, b).log_prob(x),
               lambda a, b: NegativeBinomial(b, a / 2).log_prob(t64([0.0, 3.0])),
               lambda a, b: VonMises(a, b).log_prob(x),
               lambda a, b: LKJCholesky(2, b).log_prob(t64([[1.0, 0.0], [0.6, 0.8]])),
               lambda a, b: ContinuousBernoulli(a / 2).log_prob(x)):
        assert gradcheck(fn, (a, b))


def test_parameter_errors():
    # StudentT builds its Chi2 first, which checks df (as in PyTorch)
    with raises(ValueError, "Expected parameter df (Tensor of shape (1,)) of distribution "
                "Chi2() to satisfy the constraint GreaterThan(lower_bound=0.0), but found "
                "invalid values:\ntensor([-1.], dtype=torch.float64)"):
        StudentT(t64([-1.0]))
    with raises(ValueError, "Expected parameter scale (Tensor of shape (1,)) of distribution "
                "StudentT(df: tensor([1.], dtype=torch.float64), loc: tensor([0.], "
                "dtype=torch.float64), scale: tensor([-1.], dtype=torch.float64)) to satisfy "
                "the constraint GreaterThan(lower_bound=0.0)"):
        StudentT(t64([1.0]), t64([0.0]), t64([-1.0]))
    for bad in (lambda: Weibull(t64(-1.0), t64(1.0)), lambda: Kumaraswamy(t64(1.0), t64(0.0)),
                lambda: InverseGamma(t64(1.0), t64(-1.0)),
                lambda: FisherSnedecor(t64(0.0), t64(1.0)),
                lambda: NegativeBinomial(t64(-1.0), t64(0.5)),
                lambda: NegativeBinomial(t64(1.0), t64(1.0)),
                lambda: GeneralizedPareto(t64(0.0), t64(-1.0), t64(0.1)),
                lambda: VonMises(t64(0.0), t64(-1.0)),
                lambda: LKJCholesky(3, t64(-1.0)),
                lambda: LogisticNormal(t64([0.0]), t64([-1.0]))):
        with pytest.raises(ValueError, match="^Expected parameter "):
            bad()
    with raises(ValueError, "Either `probs` or `logits` must be specified, but not both."):
        NegativeBinomial(t64(1.0))


# ------------------------------------------------------------------------------ PyTorch

TORCH_CASES = [
    ("StudentT", (3.5, 0.5, 2.0), [0.3, -1.0]),
    ("Weibull", (2.0, 1.5), [0.3, 1.0]),
    ("Kumaraswamy", (2.0, 3.0), [0.3, 0.7]),
    ("InverseGamma", (2.0, 3.0), [0.3, 1.0]),
    ("FisherSnedecor", (5.0, 7.0), [0.3, 1.0]),
    ("NegativeBinomial", (3.0, 0.4), [0.0, 5.0]),
    ("ContinuousBernoulli", (0.3,), [0.3, 0.8]),
    ("LogisticNormal", ([0.0, 1.0], [1.0, 2.0]), [[0.2, 0.3, 0.5]]),
]


@torch_ref
@pytest.mark.parametrize("name, args, x", TORCH_CASES, ids=[c[0] for c in TORCH_CASES])
def test_matches_torch(name, args, x):
    import pytorchlite.distributions as D
    mine = getattr(D, name)(*[t64(np.atleast_1d(a)) for a in args])
    ref = getattr(torch.distributions, name)(*[torch.tensor(np.atleast_1d(a)) for a in args])
    assert_close(mine.log_prob(t64(x)), ref.log_prob(torch.tensor(np.asarray(x))).numpy(),
                 rtol=1e-12)
    for stat in ("mean", "variance", "mode", "entropy"):
        if name == "Kumaraswamy" and stat == "mode":
            continue   # PyTorch's is nan for every b > 1 (test_kumaraswamy_...)
        try:
            want = getattr(ref, stat)
            want = want() if callable(want) else want
        except NotImplementedError:
            continue
        got = getattr(mine, stat)
        got = got() if callable(got) else got
        assert_close(got.detach(), want.detach().numpy(), rtol=1e-11, equal_nan=True)
    assert repr(mine) == repr(ref) and repr(mine.support) == repr(ref.support)
    assert mine.has_rsample == ref.has_rsample
    assert tuple(mine.sample((2,)).shape) == tuple(ref.sample((2,)).shape)


@torch_ref
def test_matrix_families_match_torch():
    """LowRankMultivariateNormal, LKJCholesky and Wishart on the same values; VonMises and
    GeneralizedPareto within the single-precision accuracy of PyTorch's Bessel fits and
    float32 isclose."""
    import pytorchlite.distributions as D
    T = torch.distributions
    W, Dg = np.array([[1.0], [0.5]]), np.array([1.0, 2.0])
    pairs = [(D.LowRankMultivariateNormal(t64([0.0, 1.0]), t64(W), t64(Dg)),
              T.LowRankMultivariateNormal(torch.tensor([0.0, 1.0], dtype=torch.float64),
                                          torch.tensor(W), torch.tensor(Dg)),
              np.array([0.3, 0.2]), 1e-12)]
    ptl.manual_seed(0)
    lkj = D.LKJCholesky(3, t64(1.5))
    pairs.append((lkj, T.LKJCholesky(3, torch.tensor(1.5, dtype=torch.float64)),
                  lkj.sample((2,)).numpy(), 1e-12))
    cov = np.array([[2.0, 0.5], [0.5, 1.0]])
    wish = D.Wishart(t64(4.0), t64(cov))
    pairs.append((wish, T.Wishart(torch.tensor(4.0, dtype=torch.float64), torch.tensor(cov)),
                  wish.sample((2,)).numpy(), 1e-12))
    pairs.append((D.VonMises(t64([0.5]), t64([2.0])),
                  T.VonMises(torch.tensor([0.5], dtype=torch.float64),
                             torch.tensor([2.0], dtype=torch.float64)),
                  np.array([0.3, -1.0]), 1e-7))
    for mine, ref, x, rtol in pairs:
        assert_close(mine.log_prob(t64(x)), ref.log_prob(torch.tensor(x)).numpy(), rtol=rtol)
        try:
            want = ref.entropy().numpy()
        except NotImplementedError:
            want = None
        if want is not None:
            assert_close(mine.entropy(), want, rtol=rtol)
        assert repr(mine.support) == repr(ref.support)
        assert tuple(mine.batch_shape) == tuple(ref.batch_shape)
        assert tuple(mine.event_shape) == tuple(ref.event_shape)
    gp = D.GeneralizedPareto(t64([0.0]), t64([2.0]), t64([0.3]))
    ref = T.GeneralizedPareto(torch.tensor([0.0]), torch.tensor([2.0]), torch.tensor([0.3]))
    assert_close(gp.log_prob(t64([0.3, 1.0])), ref.log_prob(torch.tensor([0.3, 1.0])).numpy(),
                 rtol=1e-6)


SHAPED = {
    "StudentT": (lambda s: StudentT(t64(np.full(s, 3.0)), t64(np.zeros(s)), t64(np.ones(s))),
                 0.5),
    "Weibull": (lambda s: Weibull(t64(np.ones(s)), t64(np.full(s, 2.0))), 0.5),
    "Kumaraswamy": (lambda s: Kumaraswamy(t64(np.ones(s)), t64(np.full(s, 2.0))), 0.5),
    "InverseGamma": (lambda s: InverseGamma(t64(np.full(s, 3.0)), t64(np.ones(s))), 0.5),
    "FisherSnedecor": (lambda s: FisherSnedecor(t64(np.full(s, 3.0)), t64(np.full(s, 5.0))),
                       0.5),
    "NegativeBinomial": (lambda s: NegativeBinomial(t64(np.full(s, 3.0)), t64(np.full(s, 0.4))),
                         2.0),
    "ContinuousBernoulli": (lambda s: ContinuousBernoulli(t64(np.full(s, 0.3))), 0.5),
    "GeneralizedPareto": (lambda s: GeneralizedPareto(t64(np.zeros(s)), t64(np.ones(s)),
                                                      t64(np.full(s, 0.2))), 0.5),
    "VonMises": (lambda s: VonMises(t64(np.zeros(s)), t64(np.ones(s))), 0.5),
}


@pytest.mark.parametrize("name", sorted(SHAPED))
@pytest.mark.parametrize("shape", [(), (0,), (2, 3)])
def test_shapes(name, shape):
    """0-dim, size-0 and 2-d batches: sample, log_prob, moments and expand keep the shape."""
    make, value = SHAPED[name]
    d = make(shape)
    assert tuple(d.batch_shape) == shape and tuple(d.event_shape) == ()
    ptl.manual_seed(0)
    x = d.sample((4,))
    assert tuple(x.shape) == (4,) + shape
    assert tuple(d.log_prob(t64(np.full(shape, value))).shape) == shape
    assert tuple(d.mean.shape) == shape and tuple(d.variance.shape) == shape
    if 0 not in shape:
        assert bool(d.support.check(x).all())
    assert tuple(d.expand((5,) + shape).sample().shape) == (5,) + shape


INVALID = [
    ("StudentT", lambda m: m.StudentT(m.tensor([3.0]), m.tensor([0.0]), m.tensor([-1.0]))),
    ("Weibull", lambda m: m.Weibull(m.tensor([1.0]), m.tensor([-1.0]))),
    ("Kumaraswamy", lambda m: m.Kumaraswamy(m.tensor([-1.0]), m.tensor([1.0]))),
    ("InverseGamma", lambda m: m.InverseGamma(m.tensor([1.0]), m.tensor([-1.0]))),
    ("FisherSnedecor", lambda m: m.FisherSnedecor(m.tensor([1.0]), m.tensor([0.0]))),
    ("NegativeBinomial", lambda m: m.NegativeBinomial(m.tensor([2.0]), m.tensor([1.0]))),
    ("GeneralizedPareto",
     lambda m: m.GeneralizedPareto(m.tensor([0.0]), m.tensor([-2.0]), m.tensor([0.1]))),
    ("VonMises", lambda m: m.VonMises(m.tensor([0.0]), m.tensor([-2.0]))),
    # dim 2: for dim >= 3 the Beta that checks first differs (test_lkj_cholesky_draws)
    ("LKJCholesky", lambda m: m.LKJCholesky(2, m.tensor([-2.0]))),
    ("LogisticNormal", lambda m: m.LogisticNormal(m.tensor([0.0, 1.0]), m.tensor([1.0, -1.0]))),
    ("LowRankMultivariateNormal", lambda m: m.LowRankMultivariateNormal(
        m.tensor([0.0, 1.0]), m.tensor([[1.0], [2.0]]), m.tensor([1.0, -10.0]))),
    ("Wishart", lambda m: m.Wishart(m.tensor([0.5]), m.tensor([[[1.0, 0.0], [0.0, 1.0]]]))),
    ("ContinuousBernoulli", lambda m: m.ContinuousBernoulli(m.tensor([2.0]),
                                                            validate_args=True)),
]


class _Lib:
    """One library's distributions and float64 tensor constructor."""

    def __init__(self, lib):
        self.lib = lib

    def tensor(self, v):
        return self.lib.tensor(v, dtype=self.lib.float64)

    def __getattr__(self, name):
        return getattr(self.lib.distributions, name)


@torch_ref
@pytest.mark.parametrize("name, build", INVALID, ids=[c[0] for c in INVALID])
def test_parameter_errors_match_torch(name, build):
    import pytorchlite.distributions  # noqa: F401
    import torch.distributions  # noqa: F401
    with pytest.raises(ValueError) as ref:
        build(_Lib(torch))
    with pytest.raises(ValueError) as mine:
        build(_Lib(ptl))
    assert str(mine.value) == str(ref.value)


SUPPORT = [
    ("StudentT", lambda m: m.StudentT(m.tensor([3.0])), [float("nan")]),
    ("Weibull", lambda m: m.Weibull(m.tensor([1.0]), m.tensor([1.0])), [-1.0]),
    ("Kumaraswamy", lambda m: m.Kumaraswamy(m.tensor([1.0]), m.tensor([1.0])), [1.5]),
    ("NegativeBinomial", lambda m: m.NegativeBinomial(m.tensor([2.0]), m.tensor([0.5])),
     [0.5]),
    ("LKJCholesky", lambda m: m.LKJCholesky(2, m.tensor(1.0)), [[1.0, 0.0], [0.5, 0.5]]),
    ("Wishart", lambda m: m.Wishart(m.tensor(3.0), m.tensor([[1.0, 0.0], [0.0, 1.0]])),
     [[1.0, 2.0], [2.0, 1.0]]),
    ("LogisticNormal", lambda m: m.LogisticNormal(m.tensor([0.0]), m.tensor([1.0])),
     [0.5, 0.6]),
]


@torch_ref
@pytest.mark.parametrize("name, build, value", SUPPORT, ids=[c[0] for c in SUPPORT])
def test_support_errors_match_torch(name, build, value):
    import pytorchlite.distributions  # noqa: F401
    import torch.distributions  # noqa: F401
    tl, ml = _Lib(torch), _Lib(ptl)
    with pytest.raises(ValueError) as ref:
        build(tl).log_prob(tl.tensor(value))
    with pytest.raises(ValueError) as mine:
        build(ml).log_prob(ml.tensor(value))
    assert str(mine.value) == str(ref.value)


def _unbiased(grads, want):
    """Per-sample pathwise gradients whose mean is the derivative of the mean (5 sigma)."""
    g = np.asarray(grads)
    assert abs(g.mean() - want) < 5 * g.std() / math.sqrt(g.size) + 1e-12, (g.mean(), want)


def test_gamma_based_rsample_gradients_are_unbiased():
    """StudentT, InverseGamma, FisherSnedecor and Wishart reparameterise through Gamma's
    rsample: E[dx/dtheta] = dE[x]/dtheta for each parameter."""
    n = 100_000
    ptl.manual_seed(14)
    rate = t64(np.full(n, 2.0)).requires_grad_()
    conc = t64(np.full(n, 4.0)).requires_grad_()
    InverseGamma(conc, rate).rsample().sum().backward()
    _unbiased(rate.grad.numpy(), 1 / 3.0)                  # E = rate / (c - 1)
    _unbiased(conc.grad.numpy(), -2.0 / 9.0)
    df1 = t64(np.full(n, 5.0)).requires_grad_()
    df2 = t64(np.full(n, 12.0)).requires_grad_()
    FisherSnedecor(df1, df2).rsample().sum().backward()
    _unbiased(df1.grad.numpy(), 0.0)                       # E = df2 / (df2 - 2)
    _unbiased(df2.grad.numpy(), -2.0 / 100.0)
    df = t64(np.full(n, 7.0)).requires_grad_()
    loc = t64(np.full(n, 1.0)).requires_grad_()
    scale = t64(np.full(n, 2.0)).requires_grad_()
    x = StudentT(df, loc, scale).rsample()
    (x * x).sum().backward()                               # E[x^2] = loc^2 + s^2 df / (df - 2)
    _unbiased(df.grad.numpy(), -2 * 4.0 / 25.0)
    _unbiased(scale.grad.numpy(), 2 * 2.0 * 7 / 5)
    _unbiased(loc.grad.numpy(), 2.0)
    nu = t64(np.full(20_000, 4.0)).requires_grad_()
    w = Wishart(nu, t64([[2.0, 0.5], [0.5, 1.0]])).rsample()
    w[..., 0, 0].sum().backward()                          # E[X_00] = df V_00
    _unbiased(nu.grad.numpy(), 2.0)
