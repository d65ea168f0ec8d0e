"""Every distribution of pytorchlite.distributions against the same one of PyTorch
(torch_ref): has_rsample, has_enumerate_support, shapes, repr, support and arg_constraints
reprs, and which of mean / variance / mode / stddev / entropy / cdf / icdf /
enumerate_support / perplexity / log_prob raise (the same exception type) or agree in value
on PyTorch's own draws.  The known differences are listed (docs/decisions.md)."""
import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.distributions as D
from helpers import torch, torch_ref

# (family, what) where pytorchlite deliberately differs from PyTorch 2.13
KNOWN = {
    ("GeneralizedPareto", "cdf"),        # PyTorch raises for float64 parameters
    ("GeneralizedPareto", "log_prob"),
    ("Kumaraswamy", "mode"),             # PyTorch's is nan for concentration0 > 1
}
METHODS = ("mean", "variance", "mode", "stddev", "entropy", "cdf", "icdf",
           "enumerate_support", "perplexity", "log_prob")


def _families(lib, mod):
    """name -> a constructor of that family in lib (pytorchlite or torch), float64."""
    def t(v):
        return lib.tensor(v, dtype=lib.float64)
    return {
        "Bernoulli": lambda: mod.Bernoulli(t([0.3, 0.6])),
        "Beta": lambda: mod.Beta(t([2., 3.]), t([1., 2.])),
        "Binomial": lambda: mod.Binomial(t(5.), t([0.3, 0.6])),
        "Categorical": lambda: mod.Categorical(t([[0.3, 0.7], [0.5, 0.5]])),
        "Cauchy": lambda: mod.Cauchy(t([0., 1.]), t([1., 2.])),
        "Chi2": lambda: mod.Chi2(t([2., 3.])),
        "ContinuousBernoulli": lambda: mod.ContinuousBernoulli(t([0.3, 0.6])),
        "Dirichlet": lambda: mod.Dirichlet(t([[1., 2.], [3., 4.]])),
        "Exponential": lambda: mod.Exponential(t([1., 2.])),
        "FisherSnedecor": lambda: mod.FisherSnedecor(t([5., 6.]), t([7., 8.])),
        "Gamma": lambda: mod.Gamma(t([2., 3.]), t([1., 2.])),
        "GeneralizedPareto": lambda: mod.GeneralizedPareto(t([0., 1.]), t([1., 2.]),
                                                           t([0.2, 0.3])),
        "Geometric": lambda: mod.Geometric(t([0.3, 0.6])),
        "Gumbel": lambda: mod.Gumbel(t([0., 1.]), t([1., 2.])),
        "HalfCauchy": lambda: mod.HalfCauchy(t([1., 2.])),
        "HalfNormal": lambda: mod.HalfNormal(t([1., 2.])),
        "Independent": lambda: mod.Independent(mod.Normal(t([0., 1.]), t([1., 2.])), 1),
        "InverseGamma": lambda: mod.InverseGamma(t([3., 4.]), t([1., 2.])),
        "Kumaraswamy": lambda: mod.Kumaraswamy(t([2., 3.]), t([1., 2.])),
        "LKJCholesky": lambda: mod.LKJCholesky(3, t([1., 2.])),
        "Laplace": lambda: mod.Laplace(t([0., 1.]), t([1., 2.])),
        "LogNormal": lambda: mod.LogNormal(t([0., 1.]), t([1., 2.])),
        "LogisticNormal": lambda: mod.LogisticNormal(t([0., 1.]), t([1., 2.])),
        "LowRankMultivariateNormal": lambda: mod.LowRankMultivariateNormal(
            t([0., 1.]), t([[1.], [2.]]), t([1., 2.])),
        "MixtureSameFamily": lambda: mod.MixtureSameFamily(
            mod.Categorical(t([0.3, 0.7])), mod.Normal(t([0., 1.]), t([1., 2.]))),
        "Multinomial": lambda: mod.Multinomial(4, t([0.3, 0.7])),
        "MultivariateNormal": lambda: mod.MultivariateNormal(t([0., 1.]),
                                                             t([[2., 0.5], [0.5, 1.]])),
        "NegativeBinomial": lambda: mod.NegativeBinomial(t([3., 4.]), t([0.3, 0.6])),
        "Normal": lambda: mod.Normal(t([0., 1.]), t([1., 2.])),
        "OneHotCategorical": lambda: mod.OneHotCategorical(t([0.3, 0.7])),
        "OneHotCategoricalStraightThrough":
            lambda: mod.OneHotCategoricalStraightThrough(t([0.3, 0.7])),
        "Pareto": lambda: mod.Pareto(t([1., 2.]), t([3., 4.])),
        "Poisson": lambda: mod.Poisson(t([1., 2.])),
        "RelaxedBernoulli": lambda: mod.RelaxedBernoulli(t(0.5), t([0.3, 0.6])),
        "RelaxedOneHotCategorical": lambda: mod.RelaxedOneHotCategorical(t(0.5),
                                                                         t([0.3, 0.7])),
        "StudentT": lambda: mod.StudentT(t([3., 4.])),
        "Uniform": lambda: mod.Uniform(t([0., 1.]), t([1., 3.])),
        "VonMises": lambda: mod.VonMises(t([0., 1.]), t([1., 2.])),
        "Weibull": lambda: mod.Weibull(t([1., 2.]), t([3., 4.])),
        "Wishart": lambda: mod.Wishart(t([4., 5.]), t([[2., 0.5], [0.5, 1.]])),
    }


NAMES = sorted(_families(ptl, D))


def _outcome(fn):
    try:
        return "ok", fn()
    except Exception as e:   # the exception's type is compared with PyTorch's
        return type(e).__name__, None


def _call(d, method, x, lib):
    attr = getattr(d, method)
    if method in ("cdf", "log_prob"):
        return attr(x)
    if method == "icdf":
        return attr(lib.full_like(x, 0.3))
    return attr() if callable(attr) else attr


@torch_ref
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.filterwarnings("ignore:Singular sample detected")   # PyTorch's Wishart, always
def test_same_interface_as_torch(name):
    mine = _families(ptl, D)[name]()
    ref = _families(torch, torch.distributions)[name]()
    assert mine.has_rsample == ref.has_rsample
    assert mine.has_enumerate_support == ref.has_enumerate_support
    assert tuple(mine.batch_shape) == tuple(ref.batch_shape)
    assert tuple(mine.event_shape) == tuple(ref.event_shape)
    assert repr(mine) == repr(ref)
    assert repr(mine.support) == repr(ref.support)
    assert ({k: repr(v) for k, v in mine.arg_constraints.items()}
            == {k: repr(v) for k, v in ref.arg_constraints.items()})
    torch.manual_seed(0)
    rx = ref.sample((3,))
    x = ptl.tensor(rx.numpy())
    for method in METHODS:
        if (name, method) in KNOWN:
            continue
        got_kind, got = _outcome(lambda: _call(mine, method, x, ptl))
        want_kind, want = _outcome(lambda: _call(ref, method, rx, torch))
        assert got_kind == want_kind, (method, got_kind, want_kind)
        if got_kind == "ok":
            g, w = got.detach().numpy(), want.detach().numpy()
            assert g.shape == w.shape, method
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-12, equal_nan=True,
                                       err_msg=method)


@torch_ref
def test_same_kl_registry_as_torch():
    from pytorchlite.distributions.kl import _KL_REGISTRY
    # pairs registered by the library itself (tests may register their own subclasses)
    mine = {(p.__name__, q.__name__) for p, q in _KL_REGISTRY
            if p.__module__.startswith("pytorchlite.") and q.__module__.startswith("pytorchlite.")}
    ref = {(p.__name__, q.__name__) for p, q in torch.distributions.kl._KL_REGISTRY
           if p.__module__.startswith("torch.") and q.__module__.startswith("torch.")}
    assert mine == ref


def _kl_pairs():
    names = set(NAMES)
    return sorted((p.__name__, q.__name__) for p, q in D.kl._KL_REGISTRY
                  if p.__name__ in names and q.__name__ in names)


@torch_ref
@pytest.mark.parametrize("p_name, q_name", _kl_pairs())
def test_kl_of_every_registered_pair_matches_torch(p_name, q_name):
    """Both raise the same exception or give the same values (inf included), for the
    families above as p and q."""
    mine, ref = _families(ptl, D), _families(torch, torch.distributions)
    got_kind, got = _outcome(lambda: D.kl_divergence(mine[p_name](), mine[q_name]()))
    want_kind, want = _outcome(lambda: torch.distributions.kl_divergence(ref[p_name](),
                                                                         ref[q_name]()))
    assert got_kind == want_kind
    if got_kind == "ok":
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-9,
                                   atol=1e-12)


def _transforms(lib, mod):
    """name -> (a transform of lib, an input of its domain)."""
    def t(v):
        return lib.tensor(v, dtype=lib.float64)
    x = t([[0.3, -1.2, 0.8], [1.5, 0.1, -0.4]])
    pos = t([[0.3, 1.2, 0.8], [1.5, 0.1, 0.4]])
    return {
        "Abs": (mod.AbsTransform(), x),
        "Affine": (mod.AffineTransform(t([1.0, 2.0, 3.0]), t(-2.0)), x),
        "AffineEvent": (mod.AffineTransform(0.5, t([1.0, 2.0, -3.0]), event_dim=1), x),
        "Cat": (mod.CatTransform([mod.ExpTransform(), mod.TanhTransform()], dim=-1,
                                 lengths=[1, 2]), x),
        "Compose": (mod.ComposeTransform([mod.ExpTransform(), mod.StickBreakingTransform()]),
                    x),
        "CorrCholesky": (mod.CorrCholeskyTransform(), x),
        "CumulativeDistribution": (mod.CumulativeDistributionTransform(
            mod.Normal(t(0.5), t(2.0))), x),
        "Exp": (mod.ExpTransform(), x),
        "ExpInverse": (mod.ExpTransform().inv, pos),
        "Independent": (mod.IndependentTransform(mod.SigmoidTransform(), 1), x),
        "LowerCholesky": (mod.LowerCholeskyTransform(), t([[1.0, 2.0], [0.5, -1.0]])),
        "PositiveDefinite": (mod.PositiveDefiniteTransform(), t([[1.0, 2.0], [0.5, -1.0]])),
        "Power": (mod.PowerTransform(t(2.5)), pos),
        "Reshape": (mod.ReshapeTransform((3,), (3, 1)), x),
        "Sigmoid": (mod.SigmoidTransform(), x),
        "Softmax": (mod.SoftmaxTransform(), x),
        "Softplus": (mod.SoftplusTransform(), x),
        "Stack": (mod.StackTransform([mod.ExpTransform(), mod.SoftplusTransform(),
                                      mod.AffineTransform(1.0, 2.0)], dim=1), x),
        "StickBreaking": (mod.StickBreakingTransform(), x),
        "Tanh": (mod.TanhTransform(), x),
    }


@torch_ref
@pytest.mark.parametrize("name", sorted(_transforms(ptl, D)))
def test_transform_matches_torch(name):
    mine, x = _transforms(ptl, D)[name]
    ref, rx = _transforms(torch, torch.distributions)[name]
    for attr in ("bijective", "sign", "event_dim"):
        got_kind, got = _outcome(lambda: getattr(mine, attr))
        want_kind, want = _outcome(lambda: getattr(ref, attr))
        assert got_kind == want_kind, attr
        if got_kind == "ok":
            got = got.numpy() if isinstance(got, ptl.Tensor) else got
            want = want.numpy() if isinstance(want, torch.Tensor) else want
            np.testing.assert_array_equal(got, want, err_msg=attr)
    assert repr(mine.domain) == repr(ref.domain)
    assert repr(mine.codomain) == repr(ref.codomain)
    assert repr(mine) == repr(ref)
    y, ry = mine(x), ref(rx)
    np.testing.assert_allclose(y.numpy(), ry.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(mine.inv(y).numpy(), ref.inv(ry).numpy(), rtol=1e-10,
                               atol=1e-12)
    assert tuple(mine.forward_shape(x.shape)) == tuple(ref.forward_shape(rx.shape))
    assert tuple(mine.inverse_shape(y.shape)) == tuple(ref.inverse_shape(ry.shape))
    got_kind, got = _outcome(lambda: mine.log_abs_det_jacobian(x, y))
    want_kind, want = _outcome(lambda: ref.log_abs_det_jacobian(rx, ry))
    assert got_kind == want_kind
    if got_kind == "ok":
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


def _constraints(c):
    """(constraint, value) pairs of constraints module c, each value with valid and invalid
    events."""
    return [
        (c.one_hot, [[0.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.5, 0.5, 0.0]]),
        (c.multinomial(3), [[1.0, 2.0, 0.0], [2.0, 2.0, 0.0], [-1.0, 1.0, 1.0]]),
        (c.lower_triangular, [[[1.0, 0.0], [2.0, -1.0]], [[1.0, 1.0], [0.0, 1.0]]]),
        (c.lower_cholesky, [[[1.0, 0.0], [2.0, 1.0]], [[1.0, 0.0], [2.0, -1.0]]]),
        (c.corr_cholesky, [[[1.0, 0.0], [0.6, 0.8]], [[1.0, 0.0], [0.6, 0.9]]]),
        (c.square, [[[1.0, 2.0], [3.0, 4.0]]]),
        (c.symmetric, [[[1.0, 2.0], [2.0, 4.0]], [[1.0, 2.0], [3.0, 4.0]]]),
        (c.positive_semidefinite, [[[1.0, 1.0], [1.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]]]),
        (c.positive_definite, [[[2.0, 1.0], [1.0, 2.0]], [[1.0, 1.0], [1.0, 1.0]]]),
        (c.cat([c.positive, c.unit_interval], 0, [2, 1]), [1.0, 2.0, 0.5]),
        (c.cat([c.positive, c.unit_interval], 0, [2, 1]), [1.0, -2.0, 1.5]),
        (c.stack([c.positive, c.real], 0), [[1.0, -1.0], [0.5, 3.0]]),
        (c.stack([c.positive, c.unit_interval], 1), [[1.0, 0.5], [-1.0, 2.0]]),
        (c.MixtureSameFamilyConstraint(c.positive), [1.0, -1.0, 2.0]),
        (c.MixtureSameFamilyConstraint(c.simplex), [[0.5, 0.5], [0.2, 0.9]]),
        (c.half_open_interval(0.0, 1.0), [0.0, 1.0, 0.5]),
        (c.integer_interval(0, 3), [0.0, 3.0, 1.5, 4.0]),
    ]


@torch_ref
@pytest.mark.parametrize("index", range(len(_constraints(D.constraints))))
def test_constraint_checks_match_torch(index):
    mine, value = _constraints(D.constraints)[index]
    ref, _ = _constraints(torch.distributions.constraints)[index]
    got = mine.check(ptl.tensor(value, dtype=ptl.float64)).numpy()
    want = ref.check(torch.tensor(value, dtype=torch.float64)).numpy()
    np.testing.assert_array_equal(got, want)
    assert mine.event_dim == ref.event_dim and mine.is_discrete == ref.is_discrete
    assert repr(mine).split("(")[0] == repr(ref).split("(")[0]
