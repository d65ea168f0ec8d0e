"""sample and rsample of pytorchlite.distributions: shapes, reproducibility under
manual_seed, the sample moments against the law's, and the reparameterised gradients
(gradcheck at a fixed seed; for Gamma against finite differences of the CDF; for Beta,
Dirichlet and Gamma the mean gradient against the derivative of the mean).

Moment checks are within 5 standard errors (two-sided, about 6e-7 for a correct sampler); a
chi-square test has significance 1e-6.  The seeds are fixed, so every run is the same."""
import numpy as np
import pytest
from scipy import special, stats

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
from pytorchlite.distributions import (Bernoulli, Beta, Categorical, Dirichlet, Gamma,
                                       Independent, Normal, Uniform)
from helpers import assert_close, torch, torch_ref

N = 200_000


def t64(a):
    return ptl.tensor(np.asarray(a, dtype=np.float64))


def within_5_sigma(samples, mean, var, axis=0):
    """The sample mean within 5 standard errors of mean; the sample variance likewise, with
    its standard error from the sample's fourth central moment."""
    x = np.asarray(samples)
    n = x.shape[axis]
    m = x.mean(axis)
    assert np.all(np.abs(m - mean) < 5 * np.sqrt(var / n)), (m, mean)
    m4 = ((x - m) ** 4).mean(axis)
    v = x.var(axis)
    assert np.all(np.abs(v - var) < 5 * np.sqrt((m4 - np.asarray(var) ** 2) / n)), (v, var)


DISTS = [
    ("Normal", lambda: Normal(t64([0.0, 1.0, -2.0]), t64([1.0, 0.5, 3.0]))),
    ("Uniform", lambda: Uniform(t64([0.0, -1.0, 2.0]), t64([1.0, 1.0, 7.0]))),
    ("Bernoulli", lambda: Bernoulli(t64([0.1, 0.5, 0.9]))),
    ("Categorical", lambda: Categorical(t64([[0.2, 0.8], [0.5, 0.5], [0.9, 0.1]]))),
    ("Gamma", lambda: Gamma(t64([0.3, 1.0, 5.0]), t64([1.0, 2.0, 0.5]))),
    ("Beta", lambda: Beta(t64([0.5, 2.0, 5.0]), t64([0.5, 3.0, 1.0]))),
    ("Dirichlet", lambda: Dirichlet(t64([[0.5, 1.0, 2.0]]).expand(3, 3))),
    ("Independent", lambda: Independent(Normal(t64([[0.0, 1.0, 2.0]]), t64([1.0, 2.0, 3.0])),
                                        1)),
]


@pytest.mark.parametrize("name, make_dist", DISTS, ids=[d[0] for d in DISTS])
@pytest.mark.parametrize("sample_shape", [(), (4,), (2, 0), (2, 3)])
def test_sample_shape_and_reproducibility(name, make_dist, sample_shape):
    d = make_dist()
    if name == "Categorical" and 0 in sample_shape:
        # multinomial draws at least one sample: PyTorch 2.13 raises this too
        with pytest.raises(RuntimeError, match=r"^cannot sample n_sample <= 0 samples$"):
            d.sample(sample_shape)
        return
    want = tuple(sample_shape) + tuple(d.batch_shape) + tuple(d.event_shape)
    ptl.manual_seed(3)
    x = d.sample(sample_shape)
    assert tuple(x.shape) == want and x.grad_fn is None
    ptl.manual_seed(3)
    assert ptl.equal(d.sample(ptl.Size(sample_shape)), x)
    if d.has_rsample:
        assert tuple(d.rsample(sample_shape).shape) == want
    if 0 not in want:
        assert bool(d.support.check(x).all())


def test_normal_uniform_bernoulli_moments():
    ptl.manual_seed(0)
    loc, scale = np.array([0.0, 1.0, -2.0]), np.array([1.0, 0.5, 3.0])
    within_5_sigma(Normal(t64(loc), t64(scale)).sample((N,)).numpy(), loc, scale ** 2)
    within_5_sigma(Normal(t64(loc), t64(scale)).rsample((N,)).numpy(), loc, scale ** 2)
    low, high = np.array([0.0, -1.0]), np.array([1.0, 3.0])
    within_5_sigma(Uniform(t64(low), t64(high)).rsample((N,)).numpy(), (low + high) / 2,
                   (high - low) ** 2 / 12)
    p = np.array([0.1, 0.5, 0.9])
    within_5_sigma(Bernoulli(t64(p)).sample((N,)).numpy(), p, p * (1 - p))


def test_categorical_frequencies():
    ptl.manual_seed(1)
    p = np.array([0.1, 0.2, 0.3, 0.4])
    x = Categorical(t64(p * 5)).sample((N,)).numpy()
    counts = np.bincount(x, minlength=4)
    assert stats.chisquare(counts, N * p).pvalue > 1e-6


@pytest.mark.parametrize("concentration", [0.05, 0.3, 1.0, 4.0, 40.0])
def test_gamma_moments(concentration):
    ptl.manual_seed(2)
    rate = 2.0
    x = Gamma(t64([concentration]), t64([rate])).sample((N,)).numpy()[:, 0]
    within_5_sigma(x, concentration / rate, concentration / rate ** 2)
    assert (x > 0).all()
    assert stats.kstest(x, stats.gamma(concentration, scale=1 / rate).cdf).pvalue > 1e-6


def test_beta_and_dirichlet_moments():
    ptl.manual_seed(4)
    a, b = np.array([0.5, 2.0, 5.0]), np.array([0.5, 3.0, 1.0])
    x = Beta(t64(a), t64(b)).sample((N,)).numpy()
    within_5_sigma(x, a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1)))
    c = np.array([0.5, 1.0, 2.0])
    y = Dirichlet(t64(c)).sample((N,)).numpy()
    assert np.allclose(y.sum(-1), 1.0)
    c0 = c.sum()
    within_5_sigma(y, c / c0, c * (c0 - c) / (c0 ** 2 * (c0 + 1)))


def test_rsample_gradcheck_normal_uniform():
    loc = ptl.tensor([0.5, -1.0], dtype=ptl.float64, requires_grad=True)
    scale = ptl.tensor([1.5, 0.2], dtype=ptl.float64, requires_grad=True)

    def normal(m, s):
        ptl.manual_seed(5)
        return Normal(m, s).rsample((3,))

    def uniform(lo, width):
        ptl.manual_seed(5)
        return Uniform(lo, lo + width).rsample((3,))
    assert gradcheck(normal, (loc, scale))
    assert gradcheck(uniform, (loc, scale))


def _quantile_grad(alpha, x):
    """dx/dalpha of a Gamma(alpha, 1) variate at a fixed quantile, from finite differences
    of the regularised incomplete gamma function (the CDF)."""
    h = 1e-6 * np.maximum(alpha, 1.0)
    dp = (special.gammainc(alpha + h, x) - special.gammainc(alpha - h, x)) / (2 * h)
    return -dp / np.exp((alpha - 1) * np.log(x) - x - special.gammaln(alpha))


@pytest.mark.parametrize("concentration", [0.1, 0.7, 1.0, 3.0, 25.0, 300.0])
def test_gamma_rsample_gradient_is_the_cdf_quantile_derivative(concentration):
    ptl.manual_seed(6)
    alpha = ptl.full((64,), concentration, dtype=ptl.float64, requires_grad=True)
    rate = ptl.full((64,), 2.0, dtype=ptl.float64, requires_grad=True)
    x = Gamma(alpha, rate).rsample()
    x.sum().backward()
    z = x.detach().numpy() * 2.0            # the standard gamma variate
    assert_close(alpha.grad, _quantile_grad(concentration, z) / 2.0, rtol=1e-5, atol=1e-10)
    assert_close(rate.grad, -x.detach().numpy() / 2.0, rtol=1e-12, atol=1e-14)



def _beta_quantile_grads(x, a, b):
    """dx/da and dx/db of a Beta(a, b) variate at a fixed quantile, from finite differences
    of the regularised incomplete beta function (the CDF)."""
    h = 1e-6
    pdf = stats.beta(a, b).pdf(x)
    da = (special.betainc(a + h, b, x) - special.betainc(a - h, b, x)) / (2 * h)
    db = (special.betainc(a, b + h, x) - special.betainc(a, b - h, x)) / (2 * h)
    return -da / pdf, -db / pdf


@pytest.mark.parametrize("a, b", [(0.3, 0.5), (2.0, 3.0), (0.8, 12.0), (40.0, 7.0)])
def test_beta_rsample_gradient_is_the_cdf_quantile_derivative(a, b):
    """Dirichlet's rsample goes through aten::_sample_dirichlet and aten::_dirichlet_grad,
    so a Beta sample moves with each concentration at its quantile."""
    ptl.manual_seed(8)
    ca = ptl.full((64,), a, dtype=ptl.float64, requires_grad=True)
    cb = ptl.full((64,), b, dtype=ptl.float64, requires_grad=True)
    x = Beta(ca, cb).rsample()
    assert type(x.grad_fn).__name__ == "SelectBackward0"
    x.sum().backward()
    want_a, want_b = _beta_quantile_grads(x.detach().numpy(), a, b)
    assert_close(ca.grad, want_a, rtol=1e-4, atol=1e-10)
    assert_close(cb.grad, want_b, rtol=1e-4, atol=1e-10)


def test_dirichlet_rsample_backward_is_once_differentiable():
    """As in PyTorch, the backward runs without history (once_differentiable), so its
    gradient is a constant even under create_graph."""
    c = ptl.tensor([1.0, 2.0, 3.0], dtype=ptl.float64, requires_grad=True)
    y = Dirichlet(c).rsample((4,))
    assert type(y.grad_fn).__name__ == "_DirichletBackward"
    (g,) = ptl.autograd.grad(y[:, 0].sum(), c, create_graph=True)
    assert not g.requires_grad and g.grad_fn is None


@torch_ref
def test_dirichlet_backward_matches_torch():
    """The same backward formula as torch's _Dirichlet_backward; torch's _dirichlet_grad
    approximates the Beta quantile derivative to about 2e-3."""
    from pytorchlite.distributions.dirichlet import _Dirichlet_backward
    from torch.distributions.dirichlet import _Dirichlet_backward as torch_backward
    g = np.random.default_rng(9)
    c = g.uniform(0.3, 5.0, (6, 4))
    x = np.stack([stats.dirichlet(row).rvs(random_state=g)[0] for row in c])
    w = g.standard_normal((6, 4))
    mine = _Dirichlet_backward(t64(x), t64(c), t64(w)).numpy()
    ref = torch_backward(*(torch.tensor(v) for v in (x, c, w))).numpy()
    np.testing.assert_allclose(mine, ref, rtol=5e-3, atol=1e-6)


def _mean_gradient(grads, want):
    """Per-sample gradients whose mean must match the derivative of the mean (5 sigma)."""
    g = np.asarray(grads)
    se = g.std(0) / np.sqrt(g.shape[0])
    assert np.all(np.abs(g.mean(0) - want) < 5 * se + 1e-12), (g.mean(0), want, se)


def test_reparameterised_gradients_are_unbiased():
    """E[dx/dtheta] = dE[x]/dtheta for the Gamma, Beta and Dirichlet estimators."""
    ptl.manual_seed(7)
    n = 100_000
    c = ptl.full((n,), 2.5, dtype=ptl.float64, requires_grad=True)
    Gamma(c, ptl.tensor(1.0, dtype=ptl.float64)).rsample().sum().backward()
    _mean_gradient(c.grad.numpy(), 1.0)
    a = ptl.full((n,), 2.0, dtype=ptl.float64, requires_grad=True)
    b = ptl.full((n,), 3.0, dtype=ptl.float64, requires_grad=True)
    Beta(a, b).rsample().sum().backward()
    _mean_gradient(a.grad.numpy(), 3.0 / 25.0)
    _mean_gradient(b.grad.numpy(), -2.0 / 25.0)
    conc = ptl.tensor([1.0, 2.0, 3.0], dtype=ptl.float64).expand(n, 3).clone().requires_grad_()
    y = Dirichlet(conc).rsample()
    y[:, 0].sum().backward()
    # d(c_0 / sum c)/dc_j = (delta_0j sum c - c_0) / (sum c)^2
    _mean_gradient(conc.grad.numpy(), np.array([5.0, -1.0, -1.0]) / 36.0)
