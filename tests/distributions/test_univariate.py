"""log_prob, cdf, icdf, entropy, mean, mode, variance and stddev of the univariate families
Exponential, Laplace, LogNormal, Cauchy, HalfNormal, HalfCauchy, Gumbel, Chi2, Pareto,
Geometric, Poisson and Binomial against scipy.stats in float64, on parameters of random
shapes (0-dim, size-0, broadcast, non-contiguous); expand; gradcheck of log_prob; and the
torch_ref comparisons with live PyTorch."""
import os
import zlib

import numpy as np
import pytest
from scipy import stats

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
from pytorchlite.distributions import (Binomial, Cauchy, Chi2, Exponential, Geometric, Gumbel,
                                       HalfCauchy, HalfNormal, Laplace, LogNormal, Pareto,
                                       Poisson)
from helpers import assert_close, torch, torch_ref

RTOL, ATOL = 1e-10, 1e-12
SEED_SHIFT = int(os.environ.get("PTL_DIST_SEED_SHIFT", "0"))   # other parameter draws
EULER = 0.5772156649015329


def t64(a):
    return ptl.tensor(np.asarray(a, dtype=np.float64))


def real(r, s):
    return r.normal(size=s)


def pos(r, s):
    return r.uniform(0.5, 4.0, size=s)


def prob(r, s):
    return r.uniform(0.05, 0.95, size=s)


def count(r, s):
    return r.integers(0, 12, size=s).astype(np.float64)


# name: (constructor, scipy law of the numpy parameters, parameter generators, values in the
#        support given (rng, shape, params), numpy mode, has cdf, has icdf)
FAMILIES = {
    "Exponential": (Exponential, lambda r: stats.expon(scale=1 / r), [pos],
                    lambda g, s, p: g.exponential(size=s), lambda r: 0 * r, True, True),
    "Laplace": (Laplace, lambda m, b: stats.laplace(m, b), [real, pos],
                lambda g, s, p: g.normal(size=s) * 3, lambda m, b: m + 0 * b, True, True),
    "LogNormal": (LogNormal, lambda m, s: stats.lognorm(s=s, scale=np.exp(m)), [real, pos],
                  lambda g, s, p: g.lognormal(size=s), lambda m, s: np.exp(m - s * s), True,
                  True),
    "Cauchy": (Cauchy, lambda m, b: stats.cauchy(m, b), [real, pos],
               lambda g, s, p: g.standard_cauchy(size=s), lambda m, b: m + 0 * b, True, True),
    "HalfNormal": (HalfNormal, lambda s: stats.halfnorm(scale=s), [pos],
                   lambda g, s, p: np.abs(g.normal(size=s)) * 2, lambda s: 0 * s, True, True),
    "HalfCauchy": (HalfCauchy, lambda s: stats.halfcauchy(scale=s), [pos],
                   lambda g, s, p: np.abs(g.standard_cauchy(size=s)), lambda s: 0 * s, True,
                   True),
    "Gumbel": (Gumbel, lambda m, b: stats.gumbel_r(m, b), [real, pos],
               lambda g, s, p: np.broadcast_to(p[0], s) + np.broadcast_to(p[1], s)
               * np.clip(g.gumbel(size=s), -3, 20), lambda m, b: m + 0 * b, True, True),
    "Chi2": (Chi2, lambda k: stats.chi2(k), [pos],
             lambda g, s, p: g.chisquare(2.0, size=s) + 0.01,
             lambda k: np.maximum(k - 2, 0), True, False),   # Gamma's cdf (gammainc)
    "Pareto": (Pareto, lambda s, a: stats.pareto(b=a, scale=s), [pos, pos],
               lambda g, s, p: np.broadcast_to(p[0], s) * (1 + g.pareto(2.0, size=s)),
               lambda s, a: s + 0 * a, True, True),
    "Geometric": (Geometric, lambda p: stats.geom(p, loc=-1), [prob],
                  lambda g, s, p: g.geometric(0.3, size=s) - 1.0, lambda p: 0 * p, False,
                  False),
    "Poisson": (Poisson, lambda r: stats.poisson(r), [pos], lambda g, s, p: count(g, s),
                lambda r: np.floor(r), False, False),
}

ONE = [((),), ((3,),), ((2, 3),), ((0,),)]
TWO = [((), ()), ((3,), (3,)), ((2, 3), (3,)), ((0,), (0,)), ((2, 1), (1, 4))]


def _cases():
    for name, spec in FAMILIES.items():
        for shapes in (ONE if len(spec[2]) == 1 else TWO):
            yield pytest.param(name, shapes, id=f"{name}-{shapes}")


def _law_stat(stat, shape):
    return np.zeros(shape) if 0 in shape else np.broadcast_to(stat(), shape)


@pytest.mark.parametrize("name, shapes", list(_cases()))
def test_against_scipy(name, shapes):
    make, law, gens, values, mode, has_cdf, has_icdf = FAMILIES[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()) + SEED_SHIFT)
    params = [gen(rng, s) for gen, s in zip(gens, shapes)]
    tparams = [t64(p) for p in params]
    if len(shapes[0]) == 2 and shapes[0][0] == 2:   # a non-contiguous view, same values
        tparams[0] = t64(np.ascontiguousarray(params[0].T)).T
    d = make(*tparams)
    shape = np.broadcast_shapes(*shapes)
    assert tuple(d.batch_shape) == shape and tuple(d.event_shape) == ()
    frozen = law(*params)
    x = values(rng, (5,) + shape, params)
    assert_close(d.log_prob(t64(x)), frozen.logpdf(x) if hasattr(frozen, "logpdf")
                 else frozen.logpmf(x), rtol=RTOL, atol=ATOL)
    if has_cdf:
        assert_close(d.cdf(t64(x)), frozen.cdf(x), rtol=1e-9, atol=ATOL)
    if has_icdf:
        q = rng.uniform(0.02, 0.98, size=(5,) + shape)
        assert_close(d.icdf(t64(q)), frozen.ppf(q), rtol=1e-9, atol=ATOL)
    if name not in ("Poisson",):   # PyTorch's Poisson has no entropy either
        assert_close(d.entropy(), _law_stat(frozen.entropy, shape), rtol=RTOL, atol=ATOL)
    assert_close(d.mean, _law_stat(frozen.mean, shape), rtol=RTOL, atol=ATOL,
                 equal_nan=True)
    if name != "Cauchy":   # scipy says nan, PyTorch inf (test_cauchy_moments_...)
        assert_close(d.variance, _law_stat(frozen.var, shape), rtol=RTOL, atol=ATOL)
    assert_close(d.mode, np.broadcast_to(mode(*params), shape), rtol=RTOL, atol=ATOL)
    if name != "Cauchy":
        assert_close(d.stddev, _law_stat(frozen.std, shape), rtol=RTOL, atol=ATOL)


def test_gumbel_cdf_far_in_the_right_tail():
    """The cdf inverts the transforms down to the base Uniform(tiny, 1 - eps): where
    exp(-exp(-z)) rounds to 1 the validated cdf raises (as PyTorch's), the unvalidated one
    returns 1."""
    with pytest.raises(ValueError, match="to be within the support"):
        Gumbel(t64(0.0), t64(1.0)).cdf(t64(40.0))
    assert Gumbel(t64(0.0), t64(1.0), validate_args=False).cdf(t64(40.0)).item() == 1.0


def test_cauchy_moments_are_nan_and_inf():
    d = Cauchy(t64([0.0, 1.0]), t64(2.0))
    assert bool(ptl.isnan(d.mean).all()) and bool(ptl.isinf(d.variance).all())
    h = HalfCauchy(t64([1.0, 3.0]))
    assert bool(ptl.isinf(h.mean).all()) and bool(ptl.isinf(h.variance).all())


def test_pareto_moments_infinite_for_small_alpha():
    d = Pareto(t64([1.0, 2.0, 1.5]), t64([0.5, 1.5, 3.0]))
    want_mean = [np.inf, 1.5 * 2 / 0.5, 3 * 1.5 / 2]
    want_var = [np.inf, np.inf, 1.5 ** 2 * 3 / (4 * 1)]
    assert_close(d.mean, want_mean, rtol=1e-12)
    assert_close(d.variance, want_var, rtol=1e-12)
    assert repr(d.support) == "GreaterThanEq(lower_bound=tensor([1.0000, 2.0000, 1.5000], " \
        "dtype=torch.float64))"


@pytest.mark.parametrize("shapes", [((), ()), ((3,), (3,)), ((2, 3), (3,)), ((0,), (0,))])
def test_binomial_against_scipy(shapes):
    rng = np.random.default_rng(5)
    n = rng.integers(0, 15, size=shapes[0]).astype(np.float64)
    p = prob(rng, shapes[1])
    d = Binomial(t64(n), t64(p))
    shape = np.broadcast_shapes(*shapes)
    k = np.floor(rng.uniform(0, 1, size=(4,) + shape) * (np.broadcast_to(n, shape) + 1))
    frozen = stats.binom(n, p)
    assert_close(d.log_prob(t64(k)), frozen.logpmf(k), rtol=1e-10, atol=1e-12)
    assert_close(d.mean, np.broadcast_to(frozen.mean(), shape), rtol=RTOL, atol=ATOL)
    assert_close(d.variance, np.broadcast_to(frozen.var(), shape), rtol=RTOL, atol=ATOL)
    mode = np.minimum(np.floor((n + 1) * p), n)
    assert_close(d.mode, np.broadcast_to(mode, shape), rtol=RTOL, atol=ATOL)
    by_logits = Binomial(t64(n), logits=t64(np.log(p / (1 - p))))
    assert_close(by_logits.log_prob(t64(k)), frozen.logpmf(k), rtol=1e-9, atol=1e-12)


def test_binomial_entropy_and_support():
    p = np.array([0.1, 0.5, 0.8])
    d = Binomial(10, t64(p))
    assert_close(d.entropy(), stats.binom(10, p).entropy(), rtol=1e-10)
    support = d.enumerate_support()
    assert tuple(support.shape) == (11, 3)
    assert_close(support[:, 0], np.arange(11.0))
    assert tuple(d.enumerate_support(expand=False).shape) == (11, 1)
    d2 = Binomial(t64([3.0, 4.0]), t64([0.5, 0.5]))
    with pytest.raises(NotImplementedError,
                       match="^Inhomogeneous total count not supported by `entropy`.$"):
        d2.entropy()
    with pytest.raises(NotImplementedError, match="^Inhomogeneous total count not supported "
                       "by `enumerate_support`.$"):
        d2.enumerate_support()
    # probability 0 and 1 give finite log_prob at their certain outcome
    edge = Binomial(t64([5.0, 5.0]), t64([0.0, 1.0]))
    assert_close(edge.log_prob(t64([0.0, 5.0])), [0.0, 0.0], atol=1e-12)


def test_geometric_logits_and_edge_probability():
    p = np.array([0.2, 0.7, 1.0])
    d = Geometric(t64(p))
    k = np.array([3.0, 0.0, 0.0])
    assert_close(d.log_prob(t64(k)), [stats.geom(0.2, loc=-1).logpmf(3),
                                      stats.geom(0.7, loc=-1).logpmf(0), 0.0], rtol=1e-12)
    by_logits = Geometric(logits=t64(np.log(p[:2] / (1 - p[:2]))))
    assert_close(by_logits.probs, p[:2], rtol=1e-12)
    assert_close(by_logits.log_prob(t64(k[:2])), d.log_prob(t64(k)).numpy()[:2], rtol=1e-10)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_expand(name):
    make, law, gens, values, mode, has_cdf, has_icdf = FAMILIES[name]
    rng = np.random.default_rng(3)
    params = [gen(rng, (3,)) for gen in gens]
    d = make(*[t64(p) for p in params])
    e = d.expand((2, 3))
    assert type(e) is type(d) and tuple(e.batch_shape) == (2, 3)
    x = values(rng, (2, 3), [np.broadcast_to(p, (2, 3)) for p in params])
    assert_close(e.log_prob(t64(x)), d.log_prob(t64(x)).numpy(), rtol=1e-14)
    assert_close(e.mean, np.broadcast_to(d.mean.numpy(), (2, 3)), equal_nan=True)
    assert tuple(e.sample((4,)).shape) == (4, 2, 3)
    assert e._validate_args == d._validate_args


def test_scalar_parameters_give_empty_batch_shape():
    for d in (Exponential(2.0), Laplace(0.0, 1.0), LogNormal(0.0, 1.0), Cauchy(0.0, 1.0),
              HalfNormal(1.0), HalfCauchy(1.0), Gumbel(0.0, 1.0), Chi2(3.0), Pareto(1.0, 2.0),
              Geometric(0.5), Poisson(2.0)):
        assert d.batch_shape == () and tuple(d.sample().shape) == ()
        assert tuple(d.sample((3,)).shape) == (3,)


def test_log_prob_gradcheck():
    x = t64([0.3, 1.7, 2.2])
    a = t64([0.5, 1.0, 2.0]).requires_grad_()
    b = t64([1.5, 0.7, 3.0]).requires_grad_()
    for fn in (lambda a, b: Exponential(a).log_prob(x),
               lambda a, b: Laplace(a, b).log_prob(x),
               lambda a, b: LogNormal(a, b).log_prob(x),
               lambda a, b: Cauchy(a, b).log_prob(x),
               lambda a, b: HalfNormal(b).log_prob(x),
               lambda a, b: HalfCauchy(b).log_prob(x),
               lambda a, b: Gumbel(a, b).log_prob(x),
               lambda a, b: Chi2(b).log_prob(x),
               lambda a, b: Pareto(a * 0.1, b).log_prob(x),
               lambda a, b: Poisson(b).log_prob(t64([0.0, 2.0, 5.0])),
               lambda a, b: Geometric(a / 3).log_prob(t64([0.0, 2.0, 5.0])),
               lambda a, b: Binomial(t64(6.0), a / 3).log_prob(t64([0.0, 2.0, 5.0])),
               lambda a, b: Laplace(a, b).entropy() + Gumbel(a, b).entropy()):
        assert gradcheck(fn, (a, b))


def test_exponential_family_entropy_by_bregman():
    """Exponential's entropy through ExponentialFamily's autograd formula equals 1 - log
    rate."""
    from pytorchlite.distributions import ExponentialFamily
    rate = t64([0.5, 2.0, 7.0])
    d = Exponential(rate)
    assert_close(ExponentialFamily.entropy(d).detach(), 1 - np.log(rate.numpy()), rtol=1e-12)
    with pytest.raises(NotImplementedError):
        Poisson(t64([1.0])).entropy()


# ------------------------------------------------------------------------------ PyTorch

TORCH_FAMILIES = ["Exponential", "Laplace", "LogNormal", "Cauchy", "HalfNormal", "HalfCauchy",
                  "Gumbel", "Chi2", "Pareto", "Geometric", "Poisson"]


@torch_ref
@pytest.mark.parametrize("name", TORCH_FAMILIES)
def test_matches_torch(name):
    make, law, gens, values, mode, has_cdf, has_icdf = FAMILIES[name]
    rng = np.random.default_rng(11)
    params = [gen(rng, (2, 3)) for gen in gens]
    mine = make(*[t64(p) for p in params])
    ref = getattr(torch.distributions, name)(*[torch.tensor(p) for p in params])
    x = values(rng, (2, 3), params)
    assert_close(mine.log_prob(t64(x)), ref.log_prob(torch.tensor(x)).numpy(), rtol=1e-12,
                 atol=1e-13)
    for stat in ("mean", "variance", "mode"):
        assert_close(getattr(mine, stat), getattr(ref, stat).numpy(), rtol=1e-12,
                     equal_nan=True)
    if name != "Poisson":
        assert_close(mine.entropy(), ref.entropy().numpy(), rtol=1e-12, atol=1e-13)
    if has_cdf:
        assert_close(mine.cdf(t64(x)), ref.cdf(torch.tensor(x)).numpy(), rtol=1e-12,
                     atol=1e-14)
    assert repr(mine.support) == repr(ref.support)
    assert {k: repr(v) for k, v in mine.arg_constraints.items()} == \
        {k: repr(v) for k, v in ref.arg_constraints.items()}
    assert mine.has_rsample == ref.has_rsample
    assert repr(mine) == repr(ref)


@torch_ref
def test_binomial_matches_torch():
    n, p = np.array([3.0, 7.0]), np.array([0.2, 0.6])
    mine, ref = Binomial(t64(n), t64(p)), torch.distributions.Binomial(torch.tensor(n),
                                                                       torch.tensor(p))
    k = np.array([[0.0, 7.0], [2.0, 4.0]])
    assert_close(mine.log_prob(t64(k)), ref.log_prob(torch.tensor(k)).numpy(), rtol=1e-12)
    assert_close(mine.mode, ref.mode.numpy())
    assert repr(mine.support) == repr(ref.support).replace("torch.", "torch.")
