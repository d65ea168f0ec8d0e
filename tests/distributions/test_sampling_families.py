"""sample and rsample of the families added with the transforms: shapes, reproducibility
under manual_seed, a Kolmogorov-Smirnov (continuous) or chi-square (discrete) test of the
draws against scipy.stats at significance 1e-3 with n = 20000 -- and the same test failing
for a law with a shifted parameter, so the check has power -- and gradcheck of the
reparameterised samples at a fixed seed.  The seeds are fixed, so every run is the same."""
import numpy as np
import pytest
from scipy import stats

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
from pytorchlite.distributions import (Binomial, Categorical, Cauchy, Chi2, Exponential,
                                       Geometric, Gumbel, HalfCauchy, HalfNormal, Laplace,
                                       LogNormal, MixtureSameFamily, Multinomial, Normal,
                                       OneHotCategorical, OneHotCategoricalStraightThrough,
                                       Pareto, Poisson, RelaxedBernoulli,
                                       RelaxedOneHotCategorical)
from helpers import assert_close

N = 20_000
ALPHA = 1e-3


def t64(a):
    return ptl.tensor(np.asarray(a, dtype=np.float64))


# name: (distribution, its scipy law, the scipy law with a shifted parameter)
CONTINUOUS = {
    "Exponential": (lambda: Exponential(t64(1.5)), stats.expon(scale=1 / 1.5),
                    stats.expon(scale=1 / 1.6)),
    "Laplace": (lambda: Laplace(t64(0.5), t64(2.0)), stats.laplace(0.5, 2.0),
                stats.laplace(0.6, 2.0)),
    "LogNormal": (lambda: LogNormal(t64(0.2), t64(0.7)), stats.lognorm(0.7, scale=np.exp(0.2)),
                  stats.lognorm(0.75, scale=np.exp(0.2))),
    "Cauchy": (lambda: Cauchy(t64(-1.0), t64(0.5)), stats.cauchy(-1.0, 0.5),
               stats.cauchy(-0.95, 0.5)),
    "HalfNormal": (lambda: HalfNormal(t64(2.0)), stats.halfnorm(scale=2.0),
                   stats.halfnorm(scale=2.1)),
    "HalfCauchy": (lambda: HalfCauchy(t64(1.5)), stats.halfcauchy(scale=1.5),
                   stats.halfcauchy(scale=1.6)),
    "Gumbel": (lambda: Gumbel(t64(1.0), t64(2.0)), stats.gumbel_r(1.0, 2.0),
               stats.gumbel_r(1.1, 2.0)),
    "Chi2": (lambda: Chi2(t64(3.0)), stats.chi2(3.0), stats.chi2(3.15)),
    "Pareto": (lambda: Pareto(t64(2.0), t64(3.0)), stats.pareto(3.0, scale=2.0),
               stats.pareto(3.2, scale=2.0)),
}


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
@pytest.mark.parametrize("method", ["sample", "rsample"])
def test_continuous_draws_ks(name, method):
    make, law, shifted = CONTINUOUS[name]
    ptl.manual_seed(17)
    x = getattr(make(), method)((N,)).detach().numpy()
    assert x.shape == (N,)
    assert stats.kstest(x, law.cdf).pvalue > ALPHA
    assert stats.kstest(x, shifted.cdf).pvalue < ALPHA


def _chi2_pvalue(x, pmf, support):
    """Pearson's test of integer draws against pmf on support, the tail pooled."""
    counts = np.array([(x == k).sum() for k in support] + [(x > support[-1]).sum()])
    probs = np.array([pmf(k) for k in support])
    probs = np.append(probs, 1 - probs.sum())
    return stats.chisquare(counts, N * probs).pvalue


DISCRETE = {
    "Geometric": (lambda: Geometric(t64(0.3)), stats.geom(0.3, loc=-1),
                  stats.geom(0.32, loc=-1), range(0, 15)),
    "Poisson": (lambda: Poisson(t64(3.5)), stats.poisson(3.5), stats.poisson(3.65),
                range(0, 12)),
    "Binomial": (lambda: Binomial(t64(20.0), t64(0.35)), stats.binom(20, 0.35),
                 stats.binom(20, 0.37), range(0, 16)),
    "Binomial_logits": (lambda: Binomial(t64(300.0), logits=t64(-1.0)),
                        stats.binom(300, 1 / (1 + np.e)), stats.binom(300, 0.275),
                        range(60, 110)),
}


@pytest.mark.parametrize("name", sorted(DISCRETE))
def test_discrete_draws_chi_square(name):
    make, law, shifted, support = DISCRETE[name]
    ptl.manual_seed(19)
    x = make().sample((N,)).numpy()
    assert np.all(x == np.floor(x)) and np.all(x >= 0)
    support = list(support)
    if support[0] > 0:   # pool the lower tail into the first bin
        x = np.maximum(x, support[0])
        base = law.cdf(support[0])
        pmf = (lambda law: lambda k: base if k == support[0] else law.pmf(k))(law)
        sbase = shifted.cdf(support[0])
        spmf = lambda k: sbase if k == support[0] else shifted.pmf(k)
    else:
        pmf, spmf = law.pmf, shifted.pmf
    assert _chi2_pvalue(x, pmf, support) > ALPHA
    assert _chi2_pvalue(x, spmf, support) < ALPHA


def test_binomial_batch_of_counts():
    """Each element draws its own number of trials (0 included)."""
    ptl.manual_seed(23)
    n = np.array([0.0, 1.0, 7.0, 400.0])
    p = np.array([0.5, 0.9, 0.2, 0.6])
    x = Binomial(t64(n), t64(p)).sample((N,)).numpy()
    assert np.all(x <= n) and np.all(x[:, 0] == 0)
    mean, var = n * p, n * p * (1 - p)
    m = x.mean(0)
    assert np.all(np.abs(m - mean) <= 5 * np.sqrt(var / N) + 1e-12)


def _binned_chi2_pvalue(x, law):
    """Pearson's test of integer draws against a scipy law: one bin per integer between the
    0.001 and 0.999 quantiles (40 equal bins where that range is wide) and the two tails."""
    lo, hi = law.ppf(0.001), law.ppf(0.999)
    edges = np.linspace(lo, hi + 1, 41) if hi - lo > 60 else np.arange(lo, hi + 2)
    counts = np.bincount(np.searchsorted(edges, x, side="right"), minlength=len(edges) + 1)
    probs = np.diff(np.concatenate([[0], law.cdf(np.ceil(edges) - 1), [1]]))
    keep = probs > 0
    return stats.chisquare(counts[keep], len(x) * probs[keep] / probs[keep].sum()).pvalue


@pytest.mark.parametrize("n, p", [(1e6, 0.3), (1000.0, 0.01), (257.0, 0.5), (300.0, 0.27),
                                  (64.0, 0.6), (65.0, 0.6), (129.0, 0.05)])
def test_binomial_large_counts(n, p):
    """Large counts, on both sides of aten::binomial's inversion / BTRS switch (n q = 10)."""
    ptl.manual_seed(47)
    x = Binomial(t64(n), t64(p)).sample((N,)).numpy()
    assert np.all((x >= 0) & (x <= n) & (x == np.floor(x)))
    assert _binned_chi2_pvalue(x, stats.binom(int(n), p)) > ALPHA
    assert _binned_chi2_pvalue(x, stats.binom(int(n), p * 1.05)) < ALPHA


def test_multinomial_draws():
    ptl.manual_seed(29)
    p = np.array([0.1, 0.2, 0.3, 0.4])
    x = Multinomial(10, t64(p)).sample((N,)).numpy()
    assert x.shape == (N, 4) and np.all(x.sum(-1) == 10)
    m = x.mean(0)
    assert np.all(np.abs(m - 10 * p) < 5 * np.sqrt(10 * p * (1 - p) / N))
    # the first count is Binomial(10, 0.1)
    counts = np.bincount(x[:, 0].astype(int), minlength=11)
    assert stats.chisquare(counts[:5].tolist() + [counts[5:].sum()],
                           N * np.append(stats.binom(10, 0.1).pmf(range(5)),
                                         stats.binom(10, 0.1).sf(4))).pvalue > ALPHA
    batch = Multinomial(3, t64(np.ones((2, 5)) / 5)).sample((6,))
    assert tuple(batch.shape) == (6, 2, 5) and bool((batch.sum(-1) == 3).all())


def test_one_hot_categorical_draws():
    ptl.manual_seed(31)
    p = np.array([0.5, 0.3, 0.2])
    x = OneHotCategorical(t64(p)).sample((N,)).numpy()
    assert np.all(x.sum(-1) == 1) and set(np.unique(x)) <= {0.0, 1.0}
    assert stats.chisquare(x.sum(0), N * p).pvalue > ALPHA
    assert stats.chisquare(x.sum(0), N * np.array([0.48, 0.32, 0.2])).pvalue < ALPHA


def test_mixture_same_family_draws():
    ptl.manual_seed(37)
    mix = Categorical(t64([0.3, 0.7]))
    comp = Normal(t64([-2.0, 3.0]), t64([1.0, 0.5]))
    x = MixtureSameFamily(mix, comp).sample((N,)).numpy()

    def cdf(v, w=0.3):
        return w * stats.norm(-2, 1).cdf(v) + (1 - w) * stats.norm(3, 0.5).cdf(v)
    assert stats.kstest(x, cdf).pvalue > ALPHA
    assert stats.kstest(x, lambda v: cdf(v, 0.33)).pvalue < ALPHA


def test_mixture_of_vectors_draws():
    """Components with an event shape: the chosen component's whole vector is returned."""
    ptl.manual_seed(41)
    from pytorchlite.distributions import Independent
    mix = Categorical(t64([[0.5, 0.5], [1.0, 0.0]]))
    comp = Independent(Normal(t64([[[0.0, 10.0], [100.0, 110.0]]] * 2), t64(0.01)), 1)
    x = MixtureSameFamily(mix, comp).sample((400,)).numpy()
    assert x.shape == (400, 2, 2)
    first = np.round(x[:, 0] / 10) * 10
    assert set(map(tuple, first)) == {(0.0, 10.0), (100.0, 110.0)}
    assert np.allclose(np.round(x[:, 1] / 10) * 10, [0.0, 10.0])


def test_relaxed_draws():
    """RelaxedBernoulli's logit is (logit U + logits) / T: a logistic law; at a low
    temperature RelaxedOneHotCategorical's argmax is the categorical draw."""
    ptl.manual_seed(43)
    logits, temp = 0.7, 0.4
    y = RelaxedBernoulli(t64(temp), logits=t64(logits)).sample((N,)).numpy()
    z = np.log(y / (1 - y))
    assert stats.kstest(z, stats.logistic(logits / temp, 1 / temp).cdf).pvalue > ALPHA
    assert stats.kstest(z, stats.logistic(0.8 / temp, 1 / temp).cdf).pvalue < ALPHA
    p = np.array([0.2, 0.5, 0.3])
    w = RelaxedOneHotCategorical(t64(0.5), t64(p)).sample((N,)).numpy()
    assert np.allclose(w.sum(-1), 1.0) and np.all(w > 0)
    # Gumbel-max: the argmax of the relaxed sample is Categorical(p) at any temperature
    counts = np.bincount(w.argmax(-1), minlength=3)
    assert stats.chisquare(counts, N * p).pvalue > ALPHA


@pytest.mark.parametrize("make", [
    lambda: Exponential(t64([1.0, 2.0])), lambda: Laplace(t64(0.0), t64([1.0, 3.0])),
    lambda: Gumbel(t64([0.0, 1.0]), t64(2.0)), lambda: Geometric(t64([0.3, 0.9])),
    lambda: Poisson(t64([0.5, 30.0])), lambda: Binomial(t64(5.0), t64([0.3, 0.6])),
    lambda: Pareto(t64(1.0), t64([2.0, 3.0])), lambda: Multinomial(4, t64([0.5, 0.5])),
    lambda: OneHotCategorical(t64([[0.5, 0.5]])),
    lambda: RelaxedBernoulli(t64(0.5), t64([0.2, 0.8])),
    lambda: RelaxedOneHotCategorical(t64(0.5), t64([0.2, 0.8])),
])
@pytest.mark.parametrize("sample_shape", [(), (3,), (2, 0)])
def test_shapes_and_reproducibility(make, sample_shape):
    d = make()
    if isinstance(d, (Multinomial, OneHotCategorical)) and 0 in sample_shape:
        # multinomial draws at least one sample: PyTorch 2.13 raises this too
        with pytest.raises(RuntimeError, match=r"^cannot sample n_sample <= 0 samples$"):
            d.sample(sample_shape)
        return
    want = tuple(sample_shape) + tuple(d.batch_shape) + tuple(d.event_shape)
    ptl.manual_seed(3)
    x = d.sample(sample_shape)
    assert tuple(x.shape) == want and x.grad_fn is None
    ptl.manual_seed(3)
    assert ptl.equal(d.sample(sample_shape), x)
    if 0 not in want:
        assert bool(d.support.check(x).all())


# --------------------------------------------------------------- reparameterised samples

def _fixed(make):
    def fn(*params):
        ptl.manual_seed(5)
        return make(*params).rsample((3,))
    return fn


def test_rsample_gradcheck():
    a = t64([0.5, 1.5]).requires_grad_()
    b = t64([1.2, 0.4]).requires_grad_()
    for make in (lambda a, b: Exponential(b), lambda a, b: Laplace(a, b),
                 lambda a, b: LogNormal(a, b), lambda a, b: Cauchy(a, b),
                 lambda a, b: HalfNormal(b), lambda a, b: HalfCauchy(b),
                 lambda a, b: Gumbel(a, b), lambda a, b: Pareto(b, a + 1),
                 lambda a, b: RelaxedBernoulli(b.sum(), logits=a),
                 lambda a, b: RelaxedOneHotCategorical(b.sum(), logits=a)):
        assert make(a, b).has_rsample
        assert gradcheck(_fixed(make), (a, b))


def test_rsample_matches_the_transform_of_its_noise():
    """Exponential's rsample is E / rate for a standard exponential E: its gradient with
    respect to rate is -x / rate."""
    ptl.manual_seed(8)
    rate = t64([0.5, 2.0, 4.0]).requires_grad_()
    x = Exponential(rate).rsample()
    x.sum().backward()
    assert_close(rate.grad, -x.detach().numpy() / rate.detach().numpy(), rtol=1e-14)


def test_straight_through_gradient():
    probs = t64([0.2, 0.3, 0.5]).requires_grad_()
    d = OneHotCategoricalStraightThrough(probs)
    ptl.manual_seed(2)
    y = d.rsample((4,))
    assert d.has_rsample and not OneHotCategorical(probs).has_rsample
    assert set(np.unique(y.detach().numpy())) <= {0.0, 1.0}
    w = t64(np.arange(12.0).reshape(4, 3))
    (y * w).sum().backward()
    assert_close(probs.grad, w.numpy().sum(0) - (w.numpy().sum(0) * probs.detach().numpy()
                                                 / 1.0).sum(), rtol=1e-12, atol=1e-12)
