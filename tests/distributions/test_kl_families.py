"""kl_divergence between the families added with the transforms: every finite registered
pair against a Monte Carlo estimate of E_p[log p(X) - log q(X)] (n = 200000, within 5
standard errors) with KL(p || p) = 0 for the same-family ones, the pairs that are infinite
(q without mass on part of p's support), the errors, gradcheck of a few closed forms, and the
torch_ref comparison of every pair with live PyTorch."""
import math

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
from pytorchlite.distributions import (Bernoulli, Beta, Binomial, Cauchy, Chi2,
                                       ContinuousBernoulli, Dirichlet, Exponential, Gamma,
                                       Geometric, Gumbel, HalfNormal, Laplace, LogNormal,
                                       LowRankMultivariateNormal, MultivariateNormal, Normal,
                                       OneHotCategorical, Pareto, Poisson,
                                       TransformedDistribution, Uniform, Wishart,
                                       kl_divergence)
from pytorchlite.distributions.transforms import ExpTransform
from helpers import assert_close, torch, torch_ref

N = 200_000


def t64(a):
    return ptl.tensor(np.asarray(a, dtype=np.float64))


def _lowrank(loc, w, d):
    return LowRankMultivariateNormal(t64(loc), t64(w), t64(d))


# name: (p, q), both with batch shape (2,) (or (2,) + an event); p's draws feed q's log_prob
FINITE = {
    "Binomial": (lambda: Binomial(t64(6.0), t64([0.3, 0.7])),
                 lambda: Binomial(t64(6.0), t64([0.5, 0.4]))),
    "ContinuousBernoulli": (lambda: ContinuousBernoulli(t64([0.2, 0.7])),
                            lambda: ContinuousBernoulli(t64([0.6, 0.3]))),
    "Exponential": (lambda: Exponential(t64([1.0, 3.0])), lambda: Exponential(t64([2.0, 0.5]))),
    "Gumbel": (lambda: Gumbel(t64([0.0, 1.0]), t64([1.0, 2.0])),
               lambda: Gumbel(t64([0.5, -1.0]), t64([1.5, 0.7]))),
    "Geometric": (lambda: Geometric(t64([0.3, 0.7])), lambda: Geometric(t64([0.5, 0.2]))),
    "HalfNormal": (lambda: HalfNormal(t64([1.0, 2.0])), lambda: HalfNormal(t64([1.5, 0.7]))),
    "Laplace": (lambda: Laplace(t64([0.0, 1.0]), t64([1.0, 2.0])),
                lambda: Laplace(t64([0.5, -1.0]), t64([1.5, 0.7]))),
    "OneHotCategorical": (lambda: OneHotCategorical(t64([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]])),
                          lambda: OneHotCategorical(t64([[0.4, 0.4, 0.2], [0.1, 0.1, 0.8]]))),
    "Pareto": (lambda: Pareto(t64([2.0, 1.0]), t64([3.0, 4.0])),
               lambda: Pareto(t64([1.0, 0.5]), t64([2.0, 5.0]))),
    "Poisson": (lambda: Poisson(t64([1.0, 4.0])), lambda: Poisson(t64([2.0, 3.0]))),
    "Cauchy": (lambda: Cauchy(t64([0.0, 1.0]), t64([1.0, 2.0])),
               lambda: Cauchy(t64([0.5, -1.0]), t64([1.5, 0.7]))),
    "LogNormal": (lambda: LogNormal(t64([0.0, 1.0]), t64([1.0, 0.5])),
                  lambda: LogNormal(t64([0.5, 0.0]), t64([0.7, 1.0]))),
    "LowRank": (lambda: _lowrank([[0.0, 1.0, 0.5]] * 2, [[[1.0], [0.5], [0.2]]] * 2,
                                 [[1.0, 2.0, 0.5]] * 2),
                lambda: _lowrank([[0.5, 0.0, 0.0], [0.1, 0.2, 0.3]],
                                 [[[0.3, 0.1], [0.2, 0.4], [1.0, 0.0]]] * 2, [1.5, 1.0, 0.8])),
    "MVN-LowRank": (lambda: MultivariateNormal(t64([0.0, 1.0, 0.5]), scale_tril=t64(
        [[1.0, 0.0, 0.0], [0.5, 1.2, 0.0], [0.1, -0.3, 0.7]])).expand((2,)),
                    lambda: _lowrank([[0.5, 0.0, 0.0], [0.1, 0.2, 0.3]],
                                     [[[0.3], [0.2], [1.0]]] * 2, [1.5, 1.0, 0.8])),
    "LowRank-MVN": (lambda: _lowrank([[0.0, 1.0, 0.5]] * 2, [[[1.0], [0.5], [0.2]]] * 2,
                                     [[1.0, 2.0, 0.5]] * 2),
                    lambda: MultivariateNormal(t64([0.5, 0.0, 0.2]), scale_tril=t64(
                        [[1.0, 0.0, 0.0], [0.5, 1.2, 0.0], [0.1, -0.3, 0.7]]))),
    "Bernoulli-Poisson": (lambda: Bernoulli(t64([0.3, 0.8])), lambda: Poisson(t64([0.5, 2.0]))),
    "Beta-ContinuousBernoulli": (lambda: Beta(t64([2.0, 0.8]), t64([3.0, 1.5])),
                                 lambda: ContinuousBernoulli(t64([0.3, 0.8]))),
    "Beta-Exponential": (lambda: Beta(t64([2.0, 0.8]), t64([3.0, 1.5])),
                         lambda: Exponential(t64([1.0, 3.0]))),
    "Beta-Gamma": (lambda: Beta(t64([2.0, 0.8]), t64([3.0, 1.5])),
                   lambda: Gamma(t64([2.0, 0.7]), t64([1.0, 3.0]))),
    "Beta-Normal": (lambda: Beta(t64([2.0, 0.8]), t64([3.0, 1.5])),
                    lambda: Normal(t64([0.5, -1.0]), t64([1.5, 0.7]))),
    "Beta-Uniform": (lambda: Beta(t64([2.0, 0.8]), t64([3.0, 1.5])),
                     lambda: Uniform(t64([-1.0, 0.0]), t64([2.0, 1.0]))),
    "ContinuousBernoulli-Exponential": (lambda: ContinuousBernoulli(t64([0.2, 0.7])),
                                        lambda: Exponential(t64([1.0, 3.0]))),
    "ContinuousBernoulli-Normal": (lambda: ContinuousBernoulli(t64([0.2, 0.7])),
                                   lambda: Normal(t64([0.5, -1.0]), t64([1.5, 0.7]))),
    "ContinuousBernoulli-Uniform": (lambda: ContinuousBernoulli(t64([0.2, 0.7])),
                                    lambda: Uniform(t64([-1.0, -0.5]), t64([2.0, 1.5]))),
    "Exponential-Gamma": (lambda: Exponential(t64([1.0, 3.0])),
                          lambda: Gamma(t64([2.0, 0.7]), t64([1.0, 3.0]))),
    "Exponential-Gumbel": (lambda: Exponential(t64([1.0, 3.0])),
                           lambda: Gumbel(t64([0.5, -1.0]), t64([1.5, 0.7]))),
    "Exponential-Normal": (lambda: Exponential(t64([1.0, 3.0])),
                           lambda: Normal(t64([0.5, -1.0]), t64([1.5, 0.7]))),
    "Gamma-Exponential": (lambda: Gamma(t64([2.0, 0.7]), t64([1.0, 3.0])),
                          lambda: Exponential(t64([1.0, 3.0]))),
    "Gamma-Gumbel": (lambda: Gamma(t64([2.0, 0.7]), t64([1.0, 3.0])),
                     lambda: Gumbel(t64([0.5, -1.0]), t64([1.5, 0.7]))),
    "Gamma-Normal": (lambda: Gamma(t64([2.0, 0.7]), t64([1.0, 3.0])),
                     lambda: Normal(t64([0.5, -1.0]), t64([1.5, 0.7]))),
    "Chi2-Exponential": (lambda: Chi2(t64([3.0, 5.0])), lambda: Exponential(t64([0.5, 0.3]))),
    "Gumbel-Normal": (lambda: Gumbel(t64([0.0, 1.0]), t64([1.0, 2.0])),
                      lambda: Normal(t64([0.5, -1.0]), t64([1.5, 0.7]))),
    "Laplace-Normal": (lambda: Laplace(t64([0.0, 1.0]), t64([1.0, 2.0])),
                       lambda: Normal(t64([0.5, -1.0]), t64([1.5, 0.7]))),
    "Normal-Gumbel": (lambda: Normal(t64([0.0, 1.0]), t64([1.0, 2.0])),
                      lambda: Gumbel(t64([0.5, -1.0]), t64([1.5, 0.7]))),
    "Normal-Laplace": (lambda: Normal(t64([0.0, 1.0]), t64([1.0, 2.0])),
                       lambda: Laplace(t64([0.5, -1.0]), t64([1.5, 0.7]))),
    "Pareto-Exponential": (lambda: Pareto(t64([2.0, 1.0]), t64([3.0, 4.0])),
                           lambda: Exponential(t64([1.0, 3.0]))),
    "Pareto-Gamma": (lambda: Pareto(t64([2.0, 1.0]), t64([3.0, 4.0])),
                     lambda: Gamma(t64([2.0, 0.7]), t64([1.0, 3.0]))),
    "Pareto-Normal": (lambda: Pareto(t64([2.0, 1.0]), t64([5.0, 4.0])),
                      lambda: Normal(t64([0.5, -1.0]), t64([1.5, 0.7]))),
    "Uniform-Beta": (lambda: Uniform(t64([0.1, 0.0]), t64([0.6, 1.0])),
                     lambda: Beta(t64([2.0, 0.8]), t64([3.0, 1.5]))),
    "Uniform-ContinuousBernoulli": (lambda: Uniform(t64([0.1, 0.2]), t64([0.6, 0.9])),
                                    lambda: ContinuousBernoulli(t64([0.2, 0.7]))),
    "Uniform-Exponential": (lambda: Uniform(t64([0.1, 0.0]), t64([0.6, 2.0])),
                            lambda: Exponential(t64([1.0, 3.0]))),
    "Uniform-Gumbel": (lambda: Uniform(t64([0.1, -1.0]), t64([0.6, 2.0])),
                       lambda: Gumbel(t64([0.5, -1.0]), t64([1.5, 0.7]))),
    "Uniform-Gamma-from-0": (lambda: Uniform(t64([0.0, 0.5]), t64([1.0, 2.0])),
                             lambda: Gamma(t64([2.0, 0.7]), t64([1.0, 3.0]))),
    "Uniform-Pareto": (lambda: Uniform(t64([2.1, 1.0]), t64([3.6, 2.0])),
                       lambda: Pareto(t64([2.0, 1.0]), t64([3.0, 4.0]))),
}


@pytest.mark.parametrize("name", sorted(FINITE))
def test_kl_against_monte_carlo(name):
    make_p, make_q = FINITE[name]
    p, q = make_p(), make_q()
    ptl.manual_seed(21)
    x = p.sample((N,))
    diff = (p.log_prob(x) - q.log_prob(x)).numpy()
    kl = kl_divergence(p, q).detach()
    assert tuple(kl.shape) == tuple(torch_shape(p, q))
    se = diff.std(0) / math.sqrt(N)
    assert np.all(np.isfinite(kl.numpy()))
    assert np.all(np.abs(kl.numpy() - diff.mean(0)) < 5 * se + 1e-9), (kl, diff.mean(0), se)
    if type(p) is type(q):
        assert_close(kl_divergence(p, p).detach(), np.zeros(tuple(p.batch_shape)), rtol=0,
                     atol=1e-10)


def torch_shape(p, q):
    return np.broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape))


INFINITE = [
    (Beta(t64([2.0]), t64([3.0])), Pareto(t64([1.0]), t64([2.0]))),
    (Exponential(t64([1.0])), Beta(t64([2.0]), t64([3.0]))),
    (Exponential(t64([1.0])), Uniform(t64([0.0]), t64([5.0]))),
    (Gamma(t64([2.0]), t64([1.0])), ContinuousBernoulli(t64([0.3]))),
    (Gumbel(t64([0.0]), t64([1.0])), Exponential(t64([1.0]))),
    (Laplace(t64([0.0]), t64([1.0])), Gamma(t64([2.0]), t64([1.0]))),
    (Normal(t64([0.0]), t64([1.0])), Pareto(t64([1.0]), t64([2.0]))),
    (Pareto(t64([1.0]), t64([2.0])), Uniform(t64([0.0]), t64([9.0]))),
    (Poisson(t64([1.0])), Binomial(t64(5.0), t64([0.5]))),
    (Poisson(t64([1.0])), Bernoulli(t64([0.5]))),
    (ContinuousBernoulli(t64([0.3])), Uniform(t64([0.0]), t64([1.0]))),
    (Uniform(t64([-0.1]), t64([0.5])), Beta(t64([2.0]), t64([3.0]))),
    (Uniform(t64([-0.1]), t64([0.5])), Exponential(t64([1.0]))),
    (Uniform(t64([0.5]), t64([3.0])), Pareto(t64([1.0]), t64([2.0]))),
    (Beta(t64([2.0]), t64([3.0])), Uniform(t64([0.2]), t64([1.0]))),
    (Binomial(t64(6.0), t64([0.5])), Binomial(t64(5.0), t64([0.5]))),
    (Pareto(t64([1.0]), t64([2.0])), Pareto(t64([1.5]), t64([2.0]))),
    (Pareto(t64([1.0]), t64([0.8])), Exponential(t64([1.0]))),
    (Pareto(t64([1.0]), t64([1.5])), Normal(t64([0.0]), t64([1.0]))),
]


@pytest.mark.parametrize("p, q", INFINITE, ids=[f"{type(p).__name__}-{type(q).__name__}"
                                                  for p, q in INFINITE])
def test_infinite_pairs(p, q):
    kl = kl_divergence(p, q)
    assert tuple(kl.shape) == (1,) and kl.item() == math.inf


def test_errors():
    with pytest.raises(NotImplementedError, match="^KL between Binomials where q.total_count "
                       "> p.total_count is not implemented$"):
        kl_divergence(Binomial(t64(3.0), t64(0.5)), Binomial(t64(5.0), t64(0.5)))
    with pytest.raises(NotImplementedError, match="^The cross KL-divergence between different "
                       "exponential families cannot be computed using Bregman divergences$"):
        kl_divergence(Exponential(t64(1.0)), Poisson(t64(1.0)))
    p = TransformedDistribution(Normal(t64(0.0), t64(1.0)), ExpTransform())
    q = TransformedDistribution(Normal(t64(0.0), t64(1.0)), ExpTransform().inv)
    with pytest.raises(NotImplementedError):
        kl_divergence(p, q)
    with pytest.raises(ValueError, match="^KL-divergence between two Low Rank Multivariate "
                       "Normals with different event shapes cannot be computed$"):
        kl_divergence(_lowrank([0.0, 1.0], [[1.0], [0.5]], [1.0, 1.0]),
                      _lowrank([0.0, 1.0, 2.0], [[1.0], [0.5], [0.1]], [1.0, 1.0, 1.0]))
    with pytest.raises(NotImplementedError, match="^No KL\\(p \\|\\| q\\) is implemented for p "
                       "type Cauchy and q type Normal$"):
        kl_divergence(Cauchy(0.0, 1.0), Normal(0.0, 1.0))


def test_ambiguous_registration_warns_and_memoization_follows_new_pairs():
    """As PyTorch: (A, Base) and (Base, A) both match (A, A); the p-first choice wins with a
    RuntimeWarning naming the pair to register; registering it ends the ambiguity even for a
    pair looked up before."""
    from pytorchlite.distributions import Distribution, register_kl

    class Base(Normal):
        pass

    class A(Base):
        pass
    register_kl(A, Base)(lambda p, q: ptl.tensor(1.0))
    register_kl(Base, A)(lambda p, q: ptl.tensor(2.0))
    a = A(t64(0.0), t64(1.0))
    with pytest.warns(RuntimeWarning, match=r"^Ambiguous kl_divergence\(A, A\). Please "
                      r"register_kl\(A, A\)$"):
        assert kl_divergence(a, a).item() == 1.0
    register_kl(A, A)(lambda p, q: ptl.tensor(3.0))
    assert kl_divergence(a, a).item() == 3.0
    assert issubclass(Base, Distribution)


def test_exponential_family_bregman_matches_closed_forms():
    """The generic Bregman form (ExponentialFamily) equals the closed forms it stands in for."""
    from pytorchlite.distributions.kl import _kl_expfamily_expfamily
    p, q = Exponential(t64([1.0, 3.0])), Exponential(t64([2.0, 0.5]))
    assert_close(_kl_expfamily_expfamily(p, q).detach(), kl_divergence(p, q).numpy(),
                 rtol=1e-12)
    p, q = Poisson(t64([1.0, 4.0])), Poisson(t64([2.0, 3.0]))
    assert_close(_kl_expfamily_expfamily(p, q).detach(), kl_divergence(p, q).numpy(),
                 rtol=1e-12)
    p, q = ContinuousBernoulli(t64([0.2, 0.7])), ContinuousBernoulli(t64([0.6, 0.3]))
    assert_close(_kl_expfamily_expfamily(p, q).detach(), kl_divergence(p, q).numpy(),
                 rtol=1e-9)


@pytest.mark.parametrize("make_p, make_q", [
    (lambda: Normal(t64([0.0, 1.0]), t64([1.0, 2.0])),
     lambda: Normal(t64([0.5, -1.0]), t64([1.5, 0.7]))),
    (lambda: Gamma(t64([2.0, 0.7]), t64([1.0, 3.0])),
     lambda: Gamma(t64([3.0, 1.5]), t64([2.0, 1.0]))),
    (lambda: Bernoulli(t64([0.2, 0.7])), lambda: Bernoulli(t64([0.5, 0.1]))),
    (lambda: Beta(t64([2.0, 0.8]), t64([3.0, 1.5])),
     lambda: Beta(t64([1.0, 2.0]), t64([2.0, 2.5]))),
    (lambda: Dirichlet(t64([[1.0, 2.0, 3.0], [0.7, 0.9, 2.0]])),
     lambda: Dirichlet(t64([[2.0, 2.0, 2.0], [1.0, 1.0, 1.0]]))),
], ids=["Normal", "Gamma", "Bernoulli", "Beta", "Dirichlet"])
def test_older_families_are_exponential_families(make_p, make_q):
    """Normal, Gamma, Bernoulli, Beta and Dirichlet subclass ExponentialFamily as in PyTorch:
    their natural parameters and log normalisers give the closed-form KL (and, where the
    carrier measure is 0, the entropy) through the Bregman divergence."""
    from pytorchlite.distributions import ExponentialFamily
    from pytorchlite.distributions.kl import _kl_expfamily_expfamily
    p, q = make_p(), make_q()
    assert isinstance(p, ExponentialFamily)
    assert_close(_kl_expfamily_expfamily(p, q).detach(), kl_divergence(p, q).numpy(),
                 rtol=1e-10, atol=1e-12)
    if not isinstance(p, (Beta, Dirichlet)):
        assert_close(ExponentialFamily.entropy(p).detach(), p.entropy().numpy(), rtol=1e-10)


def test_wishart_kl_by_bregman():
    """Wishart has no closed form registered: the ExponentialFamily pair gives it, checked by
    Monte Carlo."""
    p = Wishart(t64(5.0), t64([[2.0, 0.5], [0.5, 1.0]]))
    q = Wishart(t64(4.0), t64([[1.0, 0.2], [0.2, 1.5]]))
    kl = kl_divergence(p, q).detach().item()
    ptl.manual_seed(3)
    x = p.sample((50_000,))
    diff = (p.log_prob(x) - q.log_prob(x)).numpy()
    assert abs(kl - diff.mean()) < 5 * diff.std() / math.sqrt(50_000)
    assert abs(kl_divergence(p, p).detach().item()) < 1e-10


def test_kl_gradcheck():
    a = t64([0.7, 1.6]).requires_grad_()
    b = t64([1.3, 2.4]).requires_grad_()
    for fn in (lambda a, b: kl_divergence(Laplace(a, b), Laplace(b, a)),
               lambda a, b: kl_divergence(Gumbel(a, b), Normal(b, a)),
               lambda a, b: kl_divergence(Exponential(a), Gamma(b, a)),
               lambda a, b: kl_divergence(Pareto(a, b + 1), Pareto(a / 2, b)),
               lambda a, b: kl_divergence(Normal(a, b), Laplace(b, a))):
        assert gradcheck(fn, (a, b))


@torch_ref
@pytest.mark.parametrize("name", sorted(FINITE))
def test_kl_matches_torch(name):
    """The same pair built in PyTorch from the same values (one sample of p gives the
    parameters back through the distributions' attributes)."""
    import pytorchlite.distributions as D
    make_p, make_q = FINITE[name]
    p, q = make_p(), make_q()
    rp, rq = _to_torch(p), _to_torch(q)
    want = torch.distributions.kl_divergence(rp, rq).detach().numpy()
    assert_close(kl_divergence(p, q).detach(), want, rtol=1e-10, atol=1e-12)
    assert D.kl_divergence is kl_divergence


def _to_torch(d):
    """The PyTorch distribution with d's parameters."""
    T = torch.distributions

    def tt(x):
        return torch.tensor(x.detach().numpy())
    name = type(d).__name__
    if name == "LowRankMultivariateNormal":
        return T.LowRankMultivariateNormal(tt(d.loc), tt(d.cov_factor), tt(d.cov_diag))
    if name == "MultivariateNormal":
        return T.MultivariateNormal(tt(d.loc), scale_tril=tt(d.scale_tril))
    if name in ("OneHotCategorical", "Geometric", "Bernoulli", "ContinuousBernoulli"):
        return getattr(T, name)(probs=tt(d.probs))
    if name == "Binomial":
        return T.Binomial(tt(d.total_count), probs=tt(d.probs))
    params = {"Exponential": ("rate",), "Poisson": ("rate",), "HalfNormal": ("scale",),
              "Chi2": ("df",), "Pareto": ("scale", "alpha"),
              "Beta": ("concentration1", "concentration0"),
              "Gamma": ("concentration", "rate"), "Uniform": ("low", "high")}
    names = params.get(name, ("loc", "scale"))
    return getattr(T, name)(*[tt(getattr(d, n)) for n in names])
