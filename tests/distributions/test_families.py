"""TransformedDistribution, Multinomial, OneHotCategorical, MixtureSameFamily,
RelaxedBernoulli and RelaxedOneHotCategorical: densities against scipy.stats or a NumPy
float64 evaluation of the law, moments, entropies, enumerate_support, expand; and the
argument / sample validation of every family added with them (PyTorch's ValueError texts,
compared with live PyTorch in the torch_ref tests)."""
import math
import re

import numpy as np
import pytest
from scipy import special, stats

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
from pytorchlite.distributions import (AffineTransform, Binomial, Categorical, Cauchy, Chi2,
                                       ExpTransform, Exponential, Geometric, Gumbel,
                                       HalfNormal, Independent, Laplace, LogNormal,
                                       MixtureSameFamily, Multinomial, Normal,
                                       OneHotCategorical, Pareto, Poisson, RelaxedBernoulli,
                                       RelaxedOneHotCategorical, StickBreakingTransform,
                                       TransformedDistribution, Uniform, constraints)
from helpers import assert_close, torch, torch_ref


def t64(a):
    return ptl.tensor(np.asarray(a, dtype=np.float64))


def raises(exc, msg):
    return pytest.raises(exc, match=re.escape(msg))


# ------------------------------------------------------------------ TransformedDistribution

def test_transformed_affine_exp_is_lognormal():
    loc, scale = np.array([0.0, 1.0, -0.5]), np.array([1.0, 0.5, 2.0])
    d = TransformedDistribution(Normal(t64(0.0), t64(1.0)).expand((3,)),
                                [AffineTransform(t64(loc), t64(scale)), ExpTransform()])
    x = np.array([[0.5, 1.0, 3.0], [2.0, 0.1, 9.0]])
    law = stats.lognorm(scale, scale=np.exp(loc))
    assert_close(d.log_prob(t64(x)), law.logpdf(x), rtol=1e-12)
    assert_close(d.cdf(t64(x)), law.cdf(x), rtol=1e-12)
    q = np.array([0.1, 0.5, 0.9])
    assert_close(d.icdf(t64(q)), law.ppf(q), rtol=1e-10)
    assert d.has_rsample and d.support is constraints.positive
    assert tuple(d.batch_shape) == (3,) and tuple(d.event_shape) == ()


def test_transformed_decreasing_chain_flips_cdf():
    """y = 2 - 3x for x ~ Exponential(1): cdf(y) = 1 - F(x) (the chain's sign is -1)."""
    d = TransformedDistribution(Exponential(t64(1.0)), AffineTransform(2.0, -3.0))
    y = np.array([-4.0, 0.0, 1.5])
    x = (2.0 - y) / 3.0
    assert_close(d.cdf(t64(y)), 1 - stats.expon.cdf(x), rtol=1e-12)
    assert_close(d.log_prob(t64(y)), stats.expon.logpdf(x) - np.log(3.0), rtol=1e-12)
    assert_close(d.icdf(d.cdf(t64(y))), y, rtol=1e-10)


def test_transformed_tensor_sign_and_batch_broadcast():
    """A transform's parameter of a larger shape widens the batch (the base is expanded)."""
    scale = np.array([[1.0], [-2.0]])
    d = TransformedDistribution(Normal(t64([0.0, 1.0, 2.0]), t64(1.0)),
                                AffineTransform(0.0, t64(scale)))
    assert tuple(d.batch_shape) == (2, 3) and tuple(d.base_dist.batch_shape) == (2, 3)
    y = np.array([[0.5, 1.0, 3.0], [-1.0, 0.0, 2.0]])
    mu = np.array([0.0, 1.0, 2.0]) * scale
    want = stats.norm(mu, np.abs(scale)).cdf(y)
    assert_close(d.cdf(t64(y)), want, rtol=1e-12)
    assert tuple(d.sample((4,)).shape) == (4, 2, 3)


def test_transformed_event_dims():
    """StickBreaking couples a vector: the base's batch dim becomes the event (a logistic
    normal); log_prob subtracts the stick-breaking log Jacobian."""
    base = Normal(t64([0.0, 0.5]), t64([1.0, 2.0]))
    d = TransformedDistribution(base, StickBreakingTransform())
    assert tuple(d.batch_shape) == () and tuple(d.event_shape) == (3,)
    assert isinstance(d.base_dist, Independent)
    y = d.sample((5,))
    assert bool(constraints.simplex.check(y).all())
    x = StickBreakingTransform().inv(y)
    want = (base.log_prob(x).sum(-1)
            - StickBreakingTransform().log_abs_det_jacobian(x, y))
    assert_close(d.log_prob(y), want.numpy(), rtol=1e-12)
    assert repr(d.support) == "Simplex()"


def test_transformed_expand_and_errors():
    d = TransformedDistribution(Normal(t64([0.0, 1.0]), t64(1.0)), [ExpTransform()])
    e = d.expand((4, 2))
    assert tuple(e.batch_shape) == (4, 2) and tuple(e.base_dist.batch_shape) == (4, 2)
    assert_close(e.log_prob(t64(np.ones((4, 2)))), np.broadcast_to(
        d.log_prob(t64([1.0, 1.0])).numpy(), (4, 2)))
    with raises(ValueError, "transforms must be a Transform or a list of Transforms"):
        TransformedDistribution(Normal(0.0, 1.0), [ExpTransform(), 3])
    with raises(ValueError, "transforms must be a Transform or list, but was 3"):
        TransformedDistribution(Normal(0.0, 1.0), 3)
    with raises(ValueError, "base_distribution needs to have shape with size at least 1, "
                "but got torch.Size([])."):
        TransformedDistribution(Normal(0.0, 1.0), StickBreakingTransform())
    assert TransformedDistribution(Normal(0.0, 1.0), []).support is constraints.real


def test_lognormal_gumbel_through_transforms_gradcheck():
    loc = t64([0.3, -0.2]).requires_grad_()
    scale = t64([0.8, 1.5]).requires_grad_()
    x = t64([0.7, 2.5])
    assert gradcheck(lambda m, s: LogNormal(m, s).log_prob(x) + Gumbel(m, s).cdf(x),
                     (loc, scale))
    assert gradcheck(lambda m, s: LogNormal(m, s).entropy() + Pareto(s, m + 1).entropy(),
                     (loc, scale))


# ------------------------------------------------------------------------ Multinomial

@pytest.mark.parametrize("batch", [(), (3,), (2, 3)])
def test_multinomial_against_scipy(batch):
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(4), size=batch)
    d = Multinomial(7, t64(p * 3.0))   # unnormalised probs are normalised
    counts = rng.multinomial(7, p.reshape(-1, 4)[0], size=(5,) + batch).astype(np.float64)
    want = stats.multinomial(7, p).logpmf(counts)
    assert_close(d.log_prob(t64(counts)), want, rtol=1e-10, atol=1e-12)
    assert_close(d.mean, 7 * p, rtol=1e-12)
    assert_close(d.variance, 7 * p * (1 - p), rtol=1e-12)
    assert_close(d.entropy(), stats.multinomial(7, p).entropy(), rtol=1e-10)
    by_logits = Multinomial(7, logits=t64(np.log(p) + 2.0))
    assert_close(by_logits.log_prob(t64(counts)), want, rtol=1e-10, atol=1e-12)
    assert tuple(d.batch_shape) == batch and tuple(d.event_shape) == (4,)
    e = d.expand((5,) + batch)
    assert_close(e.log_prob(t64(counts)), want, rtol=1e-10, atol=1e-12)
    assert_close(e.entropy(), np.broadcast_to(stats.multinomial(7, p).entropy(), (5,) + batch),
                 rtol=1e-10)


def test_multinomial_zero_probability_and_errors():
    d = Multinomial(3, t64([0.0, 0.5, 0.5]))
    assert_close(d.log_prob(t64([0.0, 1.0, 2.0])), np.log(3 * 0.125), rtol=1e-12)
    # probs become logits through clamp_probs: a zero probability scores log(eps)
    eps = np.finfo(np.float64).eps
    assert math.isclose(d.log_prob(t64([1.0, 1.0, 1.0])).item(), math.log(6 * 0.25 * eps),
                        rel_tol=1e-12)
    with raises(NotImplementedError, "inhomogeneous total_count is not supported"):
        Multinomial(t64([2.0]), t64([0.5, 0.5]))
    with raises(ValueError, "to be within the support (Multinomial())"):
        d.log_prob(t64([2.0, 1.0, 1.0]))


# ---------------------------------------------------------------- OneHotCategorical

def test_one_hot_categorical():
    p = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    d = OneHotCategorical(t64(p))
    x = np.eye(3)[[2, 0]]
    assert_close(d.log_prob(t64(x)), np.log([0.5, 0.6]), rtol=1e-12)
    assert_close(d.entropy(), -(p * np.log(p)).sum(-1), rtol=1e-12)
    assert_close(d.mean, p)
    assert_close(d.variance, p * (1 - p), rtol=1e-12)
    assert_close(d.mode, np.eye(3)[[2, 0]])
    support = d.enumerate_support()
    assert tuple(support.shape) == (3, 2, 3)
    assert_close(support[:, 0], np.eye(3))
    assert tuple(d.enumerate_support(expand=False).shape) == (3, 1, 3)
    assert_close(d.log_prob(support), np.log(p.T), rtol=1e-12)
    assert tuple(d.expand((4, 2)).sample().shape) == (4, 2, 3)
    with raises(ValueError, "to be within the support (OneHot())"):
        d.log_prob(t64([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]]))


# --------------------------------------------------------------- MixtureSameFamily

def test_mixture_same_family_univariate():
    w = np.array([[0.2, 0.8], [0.5, 0.5]])
    loc, scale = np.array([[-1.0, 2.0], [0.0, 3.0]]), np.array([[1.0, 0.5], [2.0, 1.0]])
    d = MixtureSameFamily(Categorical(t64(w)), Normal(t64(loc), t64(scale)))
    assert tuple(d.batch_shape) == (2,) and tuple(d.event_shape) == ()
    x = np.array([[0.3, -1.2], [2.0, 5.0], [-3.0, 0.0]])
    dens = (w * stats.norm(loc, scale).pdf(x[..., None])).sum(-1)
    assert_close(d.log_prob(t64(x)), np.log(dens), rtol=1e-12)
    cdf = (w * stats.norm(loc, scale).cdf(x[..., None])).sum(-1)
    assert_close(d.cdf(t64(x)), cdf, rtol=1e-12)
    mean = (w * loc).sum(-1)
    assert_close(d.mean, mean, rtol=1e-12)
    var = (w * (scale ** 2 + loc ** 2)).sum(-1) - mean ** 2
    assert_close(d.variance, var, rtol=1e-12)
    e = d.expand((3, 2))
    assert_close(e.log_prob(t64(x)), np.log(dens), rtol=1e-12)
    assert repr(d.support) == "MixtureSameFamilyConstraint(Real())"
    assert repr(d) == ("MixtureSameFamily(\n  Categorical(probs: torch.Size([2, 2]), logits: "
                       "torch.Size([2, 2])),\n  Normal(loc: torch.Size([2, 2]), scale: "
                       "torch.Size([2, 2])))")


def test_mixture_same_family_of_vectors_and_broadcast_weights():
    """One weight vector for a batch of mixtures whose components are 2-d Normals."""
    w = np.array([0.3, 0.7])
    loc = np.array([[[0.0, 1.0], [2.0, -1.0]]] * 3)       # (3, K=2, event 2)
    scale = np.array([0.5, 2.0])
    comp = Independent(Normal(t64(loc), t64(scale)), 1)
    d = MixtureSameFamily(Categorical(t64(w)), comp)
    assert tuple(d.batch_shape) == (3,) and tuple(d.event_shape) == (2,)
    x = np.array([[0.1, 0.2], [1.0, -1.0], [3.0, 0.0]])
    comp_logp = stats.norm(loc, scale).logpdf(x[:, None, :]).sum(-1)
    assert_close(d.log_prob(t64(x)), special.logsumexp(comp_logp + np.log(w), -1),
                 rtol=1e-12)
    assert_close(d.mean, (w[:, None] * loc).sum(-2), rtol=1e-12)
    var = (w[:, None] * (scale ** 2 + loc ** 2)).sum(-2) - ((w[:, None] * loc).sum(-2)) ** 2
    assert_close(d.variance, var, rtol=1e-12)
    assert tuple(d.sample((4,)).shape) == (4, 3, 2)


def test_mixture_same_family_errors():
    with raises(ValueError, " The Mixture distribution needs to be an  instance of "
                "torch.distributions.Categorical"):
        MixtureSameFamily(Normal(0.0, 1.0), Normal(t64([0.0]), t64([1.0])))
    with raises(ValueError, "The Component distribution needs to be an instance of "
                "torch.distributions.Distribution"):
        MixtureSameFamily(Categorical(t64([0.5, 0.5])), 3)
    with raises(ValueError, "`mixture_distribution.batch_shape` (torch.Size([3])) is not "
                "compatible with `component_distribution.batch_shape`(torch.Size([2]))"):
        MixtureSameFamily(Categorical(t64(np.ones((3, 2)))), Normal(t64(np.zeros((2, 2))),
                                                                    t64(1.0)))
    with raises(ValueError, "`mixture_distribution component` (3) does not equal "
                "`component_distribution.batch_shape[-1]` (2)"):
        MixtureSameFamily(Categorical(t64(np.ones(3))), Normal(t64(np.zeros(2)), t64(1.0)))


# ------------------------------------------------------------------ relaxed families

def test_relaxed_bernoulli_density():
    temp, p = 0.6, np.array([0.2, 0.5, 0.9])
    d = RelaxedBernoulli(t64(temp), t64(p))
    y = np.array([0.1, 0.5, 0.97])
    z = np.log(y / (1 - y))
    logits = np.log(p / (1 - p))
    want = stats.logistic(logits / temp, 1 / temp).logpdf(z) - np.log(y * (1 - y))
    assert_close(d.log_prob(t64(y)), want, rtol=1e-10)
    assert_close(d.logits, logits, rtol=1e-12)
    assert d.support is constraints.unit_interval and d.has_rsample
    assert tuple(d.expand((2, 3)).sample().shape) == (2, 3)
    assert_close(d.temperature, temp)


def _concrete_logpdf(x, pi, temp):
    """Maddison et al.'s Concrete density on the simplex (w.r.t. the first K-1 coords)."""
    k = x.shape[-1]
    return (special.gammaln(k) + (k - 1) * np.log(temp)
            + (np.log(pi) - (temp + 1) * np.log(x)).sum(-1)
            - k * np.log((pi * x ** -temp).sum(-1)))


def test_relaxed_one_hot_categorical_density():
    rng = np.random.default_rng(2)
    pi = np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    x = rng.dirichlet(np.ones(3), size=(4, 2))
    for temp in (0.3, 1.0, 2.5):
        d = RelaxedOneHotCategorical(t64(temp), t64(pi))
        assert_close(d.log_prob(t64(x)), _concrete_logpdf(x, pi, temp), rtol=1e-10)
    assert tuple(d.batch_shape) == (2,) and tuple(d.event_shape) == (3,)
    assert d.support is constraints.simplex
    assert tuple(d.expand((5, 2)).rsample().shape) == (5, 2, 3)


# -------------------------------------------------------------------------- validation

def test_parameter_errors():
    with raises(ValueError, "Expected parameter rate (Tensor of shape (2,)) of distribution "
                "Exponential(rate: torch.Size([2])) to satisfy the constraint "
                "GreaterThan(lower_bound=0.0), but found invalid values:\n"
                "tensor([ 1., -1.], dtype=torch.float64)"):
        Exponential(t64([1.0, -1.0]))
    with raises(ValueError, "Expected parameter scale (Tensor of shape ()) of distribution "
                "HalfNormal() to satisfy the constraint GreaterThan(lower_bound=0.0)"):
        HalfNormal(t64(-1.0))
    with raises(ValueError, "Expected parameter probs (Tensor of shape (1,)) of distribution "
                "Geometric(probs: tensor([0.], dtype=torch.float64)) to be positive but found "
                "invalid values:\ntensor([0.], dtype=torch.float64)"):
        Geometric(t64([0.0]))
    with raises(ValueError, "Either `probs` or `logits` must be specified, but not both."):
        Geometric()
    with raises(ValueError, "Either `probs` or `logits` must be specified, but not both."):
        Binomial(3, t64(0.5), t64(0.0))
    with raises(ValueError, "Either `probs` or `logits` must be specified, but not both."):
        RelaxedBernoulli(t64(1.0))
    with raises(ValueError, "Expected parameter total_count"):
        Binomial(t64(2.5), t64(0.5))
    with raises(ValueError, "Expected parameter rate"):
        Poisson(t64(-0.5))
    with raises(ValueError, "Expected parameter df"):
        Chi2(t64(0.0))
    with raises(ValueError, "Expected parameter rate (Tensor of shape ()) of distribution "
                "Exponential(rate: -1.0)"):   # Pareto's base checks alpha first, as in PyTorch
        Pareto(t64(1.0), t64(-1.0))
    with raises(ValueError, "Expected parameter scale"):
        Pareto(t64(-1.0), t64(1.0))
    with raises(ValueError, "Expected parameter probs"):
        OneHotCategorical(t64([0.5, -0.1]))
    with raises(ValueError, "Expected parameter scale"):
        Laplace(t64(0.0), t64(0.0))
    with raises(ValueError, "Expected parameter loc"):
        Gumbel(t64(math.nan), t64(1.0))


def test_value_errors():
    with raises(ValueError, "to be within the support (GreaterThanEq(lower_bound=0.0))"):
        Exponential(t64(1.0)).log_prob(t64(-1.0))
    with raises(ValueError, "to be within the support (IntegerGreaterThan(lower_bound=0))"):
        Poisson(t64(1.0)).log_prob(t64(1.5))
    with raises(ValueError, "to be within the support (IntegerInterval(lower_bound="):
        Binomial(t64(3.0), t64(0.5)).log_prob(t64(4.0))
    with raises(ValueError, "to be within the support (GreaterThan(lower_bound=0.0))"):
        LogNormal(t64(0.0), t64(1.0)).log_prob(t64(0.0))
    with raises(ValueError, "to be within the support (GreaterThanEq(lower_bound="):
        Pareto(t64(2.0), t64(1.0)).log_prob(t64(1.0))
    with raises(ValueError, "to be within the support (Interval(lower_bound=0.0, "
                "upper_bound=1.0))"):
        RelaxedBernoulli(t64(1.0), t64(0.5)).log_prob(t64(1.5))
    with raises(ValueError, "Value is not broadcastable with batch_shape+event_shape"):
        Laplace(t64([0.0, 1.0]), t64(1.0)).log_prob(t64([0.0, 1.0, 2.0]))
    # validation off: values outside the support are scored
    assert HalfNormal(t64(1.0), validate_args=False).log_prob(t64(-1.0)).item() == -math.inf


INVALID = [
    ("Exponential", lambda m: m.Exponential(m.tensor([-1.0]))),
    ("Laplace", lambda m: m.Laplace(m.tensor([0.0]), m.tensor([-2.0]))),
    ("Cauchy", lambda m: m.Cauchy(m.tensor(0.0), m.tensor(0.0))),
    ("HalfCauchy", lambda m: m.HalfCauchy(m.tensor([-1.0, 1.0]))),
    ("HalfNormal", lambda m: m.HalfNormal(m.tensor(-1.0))),
    ("LogNormal", lambda m: m.LogNormal(m.tensor([0.0]), m.tensor([-1.0]))),
    ("Gumbel", lambda m: m.Gumbel(m.tensor([0.0]), m.tensor([-1.0]))),
    ("Chi2", lambda m: m.Chi2(m.tensor([-3.0]))),
    ("Pareto", lambda m: m.Pareto(m.tensor([-1.0]), m.tensor([1.0]))),
    ("Poisson", lambda m: m.Poisson(m.tensor([-1.0]))),
    ("Geometric", lambda m: m.Geometric(m.tensor([1.5]))),
    ("Geometric0", lambda m: m.Geometric(m.tensor([0.0, 0.5]))),
    ("Binomial", lambda m: m.Binomial(m.tensor([2.5]), m.tensor([0.5]))),
    ("Multinomial", lambda m: m.Multinomial(3, m.tensor([0.5, -0.5]))),
    ("OneHotCategorical", lambda m: m.OneHotCategorical(m.tensor([0.5, -0.1]))),
    ("RelaxedBernoulli", lambda m: m.RelaxedBernoulli(m.tensor(1.0), m.tensor([1.5]))),
    ("RelaxedOneHotCategorical",
     lambda m: m.RelaxedOneHotCategorical(m.tensor(1.0), m.tensor([0.5, -0.1]))),
]


class _Module:
    """Distributions and tensor constructor of one library, so one lambda builds both."""

    def __init__(self, lib):
        self.lib = lib
        self.tensor = lambda v: lib.tensor(v, dtype=lib.float64)

    def __getattr__(self, name):
        return getattr(self.lib.distributions, name)


@torch_ref
@pytest.mark.parametrize("name, build", INVALID, ids=[c[0] for c in INVALID])
def test_parameter_errors_match_torch(name, build):
    import pytorchlite.distributions  # noqa: F401
    import torch.distributions  # noqa: F401
    with pytest.raises(ValueError) as ref:
        build(_Module(torch))
    with pytest.raises(ValueError) as mine:
        build(_Module(ptl))
    assert str(mine.value) == str(ref.value)


SUPPORT_ERRORS = [
    ("Exponential", lambda m: m.Exponential(m.tensor(1.0)), -1.0),
    ("Poisson", lambda m: m.Poisson(m.tensor([1.0])), [0.5]),
    ("Geometric", lambda m: m.Geometric(m.tensor([0.5])), [-1.0]),
    ("HalfCauchy", lambda m: m.HalfCauchy(m.tensor([1.0])), [-1.0]),
    ("Binomial", lambda m: m.Binomial(m.tensor([3.0]), m.tensor([0.5])), [4.0]),
    ("Multinomial", lambda m: m.Multinomial(2, m.tensor([0.5, 0.5])), [2.0, 1.0]),
    ("OneHotCategorical", lambda m: m.OneHotCategorical(m.tensor([0.5, 0.5])), [0.0, 0.0]),
    ("Pareto", lambda m: m.Pareto(m.tensor([1.0]), m.tensor([1.0])), [0.5]),
    ("LogNormal", lambda m: m.LogNormal(m.tensor([0.0]), m.tensor([1.0])), [-0.5]),
]


@torch_ref
@pytest.mark.parametrize("name, build, value", SUPPORT_ERRORS,
                         ids=[c[0] for c in SUPPORT_ERRORS])
def test_support_errors_match_torch(name, build, value):
    import pytorchlite.distributions  # noqa: F401
    import torch.distributions  # noqa: F401
    tm, mm = _Module(torch), _Module(ptl)
    with pytest.raises(ValueError) as ref:
        build(tm).log_prob(tm.tensor(value))
    with pytest.raises(ValueError) as mine:
        build(mm).log_prob(mm.tensor(value))
    assert str(mine.value) == str(ref.value)


@torch_ref
def test_multivariate_families_match_torch():
    rng = np.random.default_rng(4)
    p = rng.dirichlet(np.ones(3), size=2)
    pairs = [
        (Multinomial(5, t64(p)), torch.distributions.Multinomial(5, torch.tensor(p)),
         rng.multinomial(5, p[0], size=2).astype(np.float64)),
        (OneHotCategorical(t64(p)), torch.distributions.OneHotCategorical(torch.tensor(p)),
         np.eye(3)[[0, 2]]),
        (RelaxedOneHotCategorical(t64(0.7), t64(p)),
         torch.distributions.RelaxedOneHotCategorical(torch.tensor(0.7, dtype=torch.float64),
                                                      torch.tensor(p)),
         rng.dirichlet(np.ones(3), size=2)),
        (RelaxedBernoulli(t64(0.7), t64(p[:, 0])),
         torch.distributions.RelaxedBernoulli(torch.tensor(0.7, dtype=torch.float64),
                                              torch.tensor(p[:, 0])),
         np.array([0.3, 0.8])),
        (MixtureSameFamily(Categorical(t64(p)), Normal(t64(p * 3), t64(1.0 + p))),
         torch.distributions.MixtureSameFamily(
             torch.distributions.Categorical(torch.tensor(p)),
             torch.distributions.Normal(torch.tensor(p * 3), torch.tensor(1.0 + p))),
         np.array([0.3, -1.0])),
    ]
    for mine, ref, x in pairs:
        assert_close(mine.log_prob(t64(x)), ref.log_prob(torch.tensor(x)).numpy(), rtol=1e-12)
        assert tuple(mine.batch_shape) == tuple(ref.batch_shape)
        assert tuple(mine.event_shape) == tuple(ref.event_shape)
        assert repr(mine.support) == repr(ref.support)
        assert mine.has_rsample == ref.has_rsample
        for stat in ("mean", "variance", "entropy"):
            try:
                want = getattr(ref, stat)
                want = want() if callable(want) else want
            except NotImplementedError:
                continue
            got = getattr(mine, stat)
            # torch's Multinomial entropy takes lgamma of an int64 n: float32 accuracy
            rtol = 1e-6 if isinstance(mine, Multinomial) and stat == "entropy" else 1e-11
            assert_close(got() if callable(got) else got, want.numpy(), rtol=rtol)
    cauchy = Cauchy(t64([0.0, 1.0]), t64(2.0))
    assert repr(cauchy) == repr(torch.distributions.Cauchy(torch.tensor([0.0, 1.0],
                                                                        dtype=torch.float64),
                                                           torch.tensor(2.0,
                                                                        dtype=torch.float64)))
    assert repr(Uniform(0.0, 1.0).support) == "Interval(lower_bound=0.0, upper_bound=1.0)"
