"""log_prob, cdf, entropy, mean, mode, variance and stddev of every family of
pytorchlite.distributions against scipy.stats in float64, on parameters of random shapes
(0-dim, size-0, broadcast, non-contiguous), and gradcheck of log_prob and entropy with
respect to the parameters."""
import numpy as np
import pytest
from scipy import special, stats

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
from pytorchlite.distributions import (Bernoulli, Beta, Categorical, Dirichlet, Gamma, Normal,
                                       Uniform)
from helpers import assert_close

RTOL, ATOL = 1e-10, 1e-12


def t64(a):
    return ptl.tensor(np.asarray(a, dtype=np.float64))


def positive(rng, shape, low=0.5, high=4.0):
    return rng.uniform(low, high, size=shape)


# shapes of the two parameters of a two-parameter family: equal, broadcast, 0-dim, size-0
PAIR_SHAPES = [((), ()), ((3,), (3,)), ((2, 3), (3,)), ((0,), (0,)), ((2, 1), (1, 4))]


def make_pair(rng, shapes, gen_a, gen_b, transpose=False):
    a, b = gen_a(rng, shapes[0]), gen_b(rng, shapes[1])
    ta, tb = t64(a), t64(b)
    if transpose and ta.dim() == 2:
        ta = t64(np.ascontiguousarray(a.T)).T   # same values, non-contiguous
    return (a, b), (ta, tb)


def check_all(d, frozen, values, logp, cdf=None):
    """d against the scipy frozen law: log_prob/cdf at values, entropy and moments."""
    assert_close(d.log_prob(t64(values)), logp(values), rtol=RTOL, atol=ATOL)
    if cdf is not None:
        assert_close(d.cdf(t64(values)), cdf(values), rtol=RTOL, atol=ATOL)
    shape = tuple(d.batch_shape)

    def law(stat):   # scipy refuses some statistics of size-0 laws
        return np.zeros(shape) if 0 in shape else np.broadcast_to(stat(), shape)
    assert_close(d.entropy(), law(frozen.entropy), rtol=RTOL, atol=ATOL)
    assert_close(d.mean, law(frozen.mean), rtol=RTOL, atol=ATOL)
    assert_close(d.variance, law(frozen.var), rtol=RTOL, atol=ATOL)
    assert_close(d.stddev, law(frozen.std), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("shapes", PAIR_SHAPES)
@pytest.mark.parametrize("transpose", [False, True])
def test_normal(shapes, transpose):
    rng = np.random.default_rng(1)
    (loc, scale), (tl, ts) = make_pair(rng, shapes, lambda r, s: r.normal(size=s), positive,
                                       transpose)
    d = Normal(tl, ts)
    shape = np.broadcast_shapes(np.shape(loc), np.shape(scale))
    assert d.batch_shape == ptl.Size(shape) and d.event_shape == ptl.Size([])
    frozen = stats.norm(loc, scale)
    x = rng.normal(size=(5,) + shape) * 2
    check_all(d, frozen, x, frozen.logpdf, frozen.cdf)
    u = rng.uniform(0.01, 0.99, size=shape)
    assert_close(d.icdf(t64(u)), frozen.ppf(u), rtol=1e-9, atol=1e-12)
    assert_close(d.mode, np.broadcast_to(loc, shape), rtol=0, atol=0)


@pytest.mark.parametrize("shapes", PAIR_SHAPES)
def test_uniform(shapes):
    rng = np.random.default_rng(2)
    (low, width), (tl, tw) = make_pair(rng, shapes, lambda r, s: r.normal(size=s), positive)
    high = low + width
    d = Uniform(tl, tl + tw)
    shape = np.broadcast_shapes(np.shape(low), np.shape(width))
    frozen = stats.uniform(low, width)
    x = np.broadcast_to(low, shape) + rng.uniform(0, 1, size=(4,) + shape) * width
    check_all(d, frozen, x, frozen.logpdf, frozen.cdf)
    # outside [low, high): log density -inf, cdf clamped to 0 and 1
    d_free = Uniform(tl, tl + tw, validate_args=False)
    outside = np.broadcast_to(high, shape) + 1.0
    assert_close(d_free.log_prob(t64(outside)), np.full(shape, -np.inf), rtol=0, atol=0)
    assert_close(d_free.cdf(t64(outside)), np.ones(shape), rtol=0, atol=0)
    assert np.isnan(d.mode.numpy()).all()


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (0,)])
@pytest.mark.parametrize("by", ["probs", "logits"])
def test_bernoulli(shape, by):
    rng = np.random.default_rng(3)
    p = rng.uniform(0.05, 0.95, size=shape)
    d = Bernoulli(probs=t64(p)) if by == "probs" else Bernoulli(logits=t64(special.logit(p)))
    frozen = stats.bernoulli(p)
    x = rng.integers(0, 2, size=(4,) + shape).astype(np.float64)
    check_all(d, frozen, x, frozen.logpmf)
    assert_close(d.probs, p, rtol=1e-12, atol=1e-14)
    assert_close(d.logits, special.logit(p), rtol=1e-9, atol=1e-12)
    assert_close(d.mode, (p > 0.5).astype(np.float64), rtol=0, atol=0)


def test_bernoulli_mode_is_nan_at_one_half():
    assert np.isnan(Bernoulli(ptl.tensor(0.5)).mode.item())


@pytest.mark.parametrize("shape", [(4,), (2, 3), (0, 3), (3, 1)])
@pytest.mark.parametrize("by", ["probs", "logits"])
def test_categorical(shape, by):
    rng = np.random.default_rng(4)
    w = rng.uniform(0.1, 2.0, size=shape)
    p = w / w.sum(-1, keepdims=True)
    d = Categorical(probs=t64(w)) if by == "probs" else Categorical(logits=t64(np.log(w) + 3))
    batch = shape[:-1]
    assert d.batch_shape == ptl.Size(batch) and d.event_shape == ptl.Size([])
    x = rng.integers(0, shape[-1], size=(5,) + batch)
    want = np.take_along_axis(np.broadcast_to(np.log(p), (5,) + shape), x[..., None], -1)[..., 0]
    assert_close(d.log_prob(ptl.tensor(x)), want, rtol=1e-12, atol=1e-12)
    assert_close(d.entropy(), -(p * np.log(p)).sum(-1), rtol=1e-12, atol=1e-12)
    assert_close(d.probs, p, rtol=1e-12, atol=1e-14)
    assert_close(d.mode, np.argmax(p, -1))
    assert np.isnan(d.mean.numpy()).all() and np.isnan(d.variance.numpy()).all()
    support = d.enumerate_support()
    assert_close(support, np.broadcast_to(np.arange(shape[-1]).reshape((-1,) + (1,) * len(batch)),
                                          (shape[-1],) + batch))


def test_categorical_entropy_with_a_zero_probability():
    d = Categorical(probs=t64([0.5, 0.5, 0.0]))
    assert_close(d.entropy(), np.log(2.0), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shapes", PAIR_SHAPES)
@pytest.mark.parametrize("transpose", [False, True])
def test_gamma(shapes, transpose):
    rng = np.random.default_rng(5)
    (c, r), (tc, tr) = make_pair(rng, shapes, lambda g, s: positive(g, s, 0.3, 5.0), positive,
                                 transpose)
    d = Gamma(tc, tr)
    shape = np.broadcast_shapes(np.shape(c), np.shape(r))
    frozen = stats.gamma(c, scale=1 / r)
    x = rng.uniform(0.05, 6.0, size=(4,) + shape)
    check_all(d, frozen, x, frozen.logpdf)
    assert_close(d.mode, np.broadcast_to(np.maximum((c - 1) / r, 0), shape), rtol=1e-12,
                 atol=1e-14)


def test_gamma_log_prob_at_zero():
    """concentration 1 is the exponential law: its density at 0 is the rate."""
    assert_close(Gamma(t64(1.0), t64(2.0)).log_prob(t64(0.0)), np.log(2.0), rtol=1e-12)


@pytest.mark.parametrize("shapes", PAIR_SHAPES)
def test_beta(shapes):
    rng = np.random.default_rng(6)
    (a, b), (ta, tb) = make_pair(rng, shapes, lambda g, s: positive(g, s, 0.5, 5.0),
                                 lambda g, s: positive(g, s, 0.5, 5.0))
    d = Beta(ta, tb)
    shape = np.broadcast_shapes(np.shape(a), np.shape(b))
    frozen = stats.beta(a, b)
    x = rng.uniform(0.02, 0.98, size=(3,) + shape)
    check_all(d, frozen, x, frozen.logpdf)
    assert_close(d.concentration1, np.broadcast_to(a, shape), rtol=0, atol=0)


def test_beta_from_numbers():
    d = Beta(2.0, 3.0)
    assert d.batch_shape == ptl.Size([])
    assert_close(d.log_prob(ptl.tensor(0.25)), stats.beta(2, 3).logpdf(0.25), rtol=1e-6)


@pytest.mark.parametrize("k", [2, 3, 5])
def test_dirichlet(k):
    rng = np.random.default_rng(7)
    c = rng.uniform(0.5, 4.0, size=k)
    d = Dirichlet(t64(c))
    assert d.batch_shape == ptl.Size([]) and d.event_shape == ptl.Size([k])
    frozen = stats.dirichlet(c)
    x = rng.dirichlet(c, size=4)
    assert_close(d.log_prob(t64(x)), [frozen.logpdf(v) for v in x], rtol=RTOL, atol=ATOL)
    assert_close(d.entropy(), frozen.entropy(), rtol=RTOL, atol=ATOL)
    assert_close(d.mean, frozen.mean(), rtol=RTOL, atol=ATOL)
    assert_close(d.variance, frozen.var(), rtol=RTOL, atol=ATOL)


def test_dirichlet_batched_and_mode():
    rng = np.random.default_rng(8)
    c = rng.uniform(0.5, 4.0, size=(2, 3, 4))
    d = Dirichlet(t64(c).transpose(0, 1).transpose(0, 1))
    assert d.batch_shape == ptl.Size([2, 3]) and d.event_shape == ptl.Size([4])
    want = np.array([[stats.dirichlet(c[i, j]).entropy() for j in range(3)] for i in range(2)])
    assert_close(d.entropy(), want, rtol=RTOL, atol=ATOL)
    big = np.array([[2.0, 3.0, 5.0], [0.5, 0.9, 0.7]])
    mode = Dirichlet(t64(big)).mode
    assert_close(mode, [[1 / 7, 2 / 7, 4 / 7], [0.0, 1.0, 0.0]], rtol=1e-12, atol=1e-14)


FAMILIES = [
    ("Normal", lambda a, b: Normal(a, b), 0.3),
    ("Gamma", lambda a, b: Gamma(a, b), 1.7),
    ("Beta", lambda a, b: Beta(a, b), 0.4),
    ("Uniform", lambda a, b: Uniform(a, a + b + 3.0), 1.5),
]


@pytest.mark.parametrize("name, make_dist, value", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_gradcheck_log_prob_and_entropy(name, make_dist, value):
    a = ptl.tensor([0.7, 1.3], dtype=ptl.float64, requires_grad=True)
    b = ptl.tensor([1.1, 2.0], dtype=ptl.float64, requires_grad=True)
    x = ptl.full((2,), value, dtype=ptl.float64)
    assert gradcheck(lambda p, q: make_dist(p, q).log_prob(x), (a, b))
    assert gradcheck(lambda p, q: make_dist(p, q).entropy(), (a, b))


def test_gradcheck_categorical_bernoulli_dirichlet():
    w = ptl.tensor([[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]], dtype=ptl.float64, requires_grad=True)
    idx = ptl.tensor([2, 0])
    assert gradcheck(lambda q: Categorical(probs=q).log_prob(idx), (w,))
    assert gradcheck(lambda q: Categorical(logits=q).entropy(), (w,))
    p = ptl.tensor([0.3, 0.6], dtype=ptl.float64, requires_grad=True)
    assert gradcheck(lambda q: Bernoulli(q).log_prob(ptl.tensor([1.0, 0.0],
                                                                dtype=ptl.float64)), (p,))
    assert gradcheck(lambda q: Bernoulli(logits=q).entropy(), (p,))
    c = ptl.tensor([0.8, 1.5, 2.5], dtype=ptl.float64, requires_grad=True)
    x = ptl.tensor([0.2, 0.3, 0.5], dtype=ptl.float64)
    assert gradcheck(lambda q: Dirichlet(q).log_prob(x), (c,))
    assert gradcheck(lambda q: Dirichlet(q).entropy(), (c,))
