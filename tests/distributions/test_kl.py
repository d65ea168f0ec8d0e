"""kl_divergence and register_kl: each registered pair against a Monte Carlo estimate of
E_p[log p(x) - log q(x)] (within 5 standard errors) and, where the closed form is short, the
formula in NumPy; KL(p || p) = 0; the infinite cases; the lookup by type."""
import math

import numpy as np
import pytest
from scipy import special

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
from pytorchlite.distributions import (Bernoulli, Beta, Categorical, Dirichlet, Gamma,
                                       Independent, Normal, Uniform, kl_divergence,
                                       register_kl)
from helpers import assert_close

N = 200_000


def t64(a):
    return ptl.tensor(np.asarray(a, dtype=np.float64))


PAIRS = [
    ("Normal", lambda: Normal(t64([0.0, 1.0]), t64([1.0, 2.0])),
     lambda: Normal(t64([0.5, -1.0]), t64([1.5, 0.7]))),
    ("Bernoulli", lambda: Bernoulli(t64([0.2, 0.7])), lambda: Bernoulli(t64([0.5, 0.1]))),
    ("Categorical", lambda: Categorical(t64([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]])),
     lambda: Categorical(t64([[0.4, 0.4, 0.2], [0.1, 0.1, 0.8]]))),
    ("Uniform", lambda: Uniform(t64([0.0, 1.0]), t64([1.0, 2.0])),
     lambda: Uniform(t64([-1.0, 0.5]), t64([2.0, 4.0]))),
    ("Gamma", lambda: Gamma(t64([2.0, 0.7]), t64([1.0, 3.0])),
     lambda: Gamma(t64([3.0, 1.5]), t64([2.0, 1.0]))),
    ("Beta", lambda: Beta(t64([2.0, 0.8]), t64([3.0, 1.5])),
     lambda: Beta(t64([1.0, 2.0]), t64([2.0, 2.5]))),
    ("Dirichlet", lambda: Dirichlet(t64([[1.0, 2.0, 3.0], [0.7, 0.9, 2.0]])),
     lambda: Dirichlet(t64([[2.0, 2.0, 2.0], [1.0, 1.0, 1.0]]))),
    ("Independent", lambda: Independent(Normal(t64([[0.0, 1.0]]), t64([[1.0, 2.0]])), 1),
     lambda: Independent(Normal(t64([[0.5, -1.0]]), t64([[1.5, 0.7]])), 1)),
    ("Uniform-Normal", lambda: Uniform(t64([0.0, 1.0]), t64([1.0, 3.0])),
     lambda: Normal(t64([0.5, -1.0]), t64([1.5, 0.7]))),
    ("Uniform-Gamma", lambda: Uniform(t64([0.5, 1.0]), t64([1.0, 3.0])),
     lambda: Gamma(t64([2.0, 0.8]), t64([1.0, 3.0]))),
]


@pytest.mark.parametrize("name, make_p, make_q", PAIRS, ids=[p[0] for p in PAIRS])
def test_kl_against_monte_carlo(name, make_p, make_q):
    p, q = make_p(), make_q()
    ptl.manual_seed(11)
    x = p.sample((N,))
    diff = (p.log_prob(x) - q.log_prob(x)).numpy()
    kl = kl_divergence(p, q)
    assert kl.shape == p.batch_shape
    se = diff.std(0) / math.sqrt(N)
    assert np.all(np.abs(kl.numpy() - diff.mean(0)) < 5 * se + 1e-9), (kl, diff.mean(0), se)
    assert_close(kl_divergence(p, p), np.zeros(tuple(p.batch_shape)), rtol=0, atol=1e-12)


def test_closed_forms_in_numpy():
    m1, s1, m2, s2 = 0.3, 1.2, -0.5, 0.8
    want = math.log(s2 / s1) + (s1 ** 2 + (m1 - m2) ** 2) / (2 * s2 ** 2) - 0.5
    assert_close(kl_divergence(Normal(t64(m1), t64(s1)), Normal(t64(m2), t64(s2))), want,
                 rtol=1e-12)
    a1, r1, a2, r2 = 2.0, 1.5, 3.0, 0.5
    want = ((a1 - a2) * special.digamma(a1) - special.gammaln(a1) + special.gammaln(a2)
            + a2 * (math.log(r1) - math.log(r2)) + a1 * (r2 - r1) / r1)
    assert_close(kl_divergence(Gamma(t64(a1), t64(r1)), Gamma(t64(a2), t64(r2))), want,
                 rtol=1e-12)
    assert_close(kl_divergence(Uniform(t64(0.0), t64(1.0)), Uniform(t64(-1.0), t64(3.0))),
                 math.log(4.0), rtol=1e-12)


def test_infinite_and_zero_cases():
    inf = float("inf")
    assert_close(kl_divergence(Uniform(t64([0.0, 0.0]), t64([1.0, 1.0])),
                               Uniform(t64([0.5, -1.0]), t64([2.0, 0.5]))), [inf, inf],
                 rtol=0, atol=0)
    assert_close(kl_divergence(Bernoulli(t64([0.0, 0.3, 1.0])), Bernoulli(t64([0.5, 0.0, 1.0]))),
                 [math.log(2.0), inf, 0.0], rtol=1e-12, atol=1e-12)
    assert_close(kl_divergence(Categorical(t64([0.5, 0.5, 0.0])),
                               Categorical(t64([0.25, 0.25, 0.5]))), math.log(2.0), rtol=1e-12)
    assert_close(kl_divergence(Categorical(t64([0.5, 0.5])), Categorical(t64([1.0, 0.0]))),
                 inf, rtol=0, atol=0)
    assert_close(kl_divergence(Normal(t64([0.0]), t64([1.0])), Uniform(t64([0.0]), t64([1.0]))),
                 [inf], rtol=0, atol=0)
    assert_close(kl_divergence(Uniform(t64([-1.0]), t64([1.0])), Gamma(t64([1.0]), t64([1.0]))),
                 [inf], rtol=0, atol=0)


def test_gradcheck_kl():
    a = ptl.tensor([0.7, 1.3], dtype=ptl.float64, requires_grad=True)
    b = ptl.tensor([1.1, 2.0], dtype=ptl.float64, requires_grad=True)
    q = (t64([0.5, 1.0]), t64([2.0, 1.5]))
    assert gradcheck(lambda x, y: kl_divergence(Normal(x, y), Normal(*q)), (a, b))
    assert gradcheck(lambda x, y: kl_divergence(Gamma(x, y), Gamma(*q)), (a, b))
    assert gradcheck(lambda x, y: kl_divergence(Beta(x, y), Beta(*q)), (a, b))
    assert gradcheck(lambda x: kl_divergence(Dirichlet(x), Dirichlet(q[1])), (b,))


def test_lookup_by_type():
    class MyNormal(Normal):
        pass

    p, q = MyNormal(t64(0.0), t64(1.0)), Normal(t64(1.0), t64(1.0))
    assert_close(kl_divergence(p, q), 0.5, rtol=1e-12)

    @register_kl(MyNormal, Normal)
    def _kl_mine(p, q):
        return ptl.tensor(42.0)
    assert kl_divergence(p, q).item() == 42.0
    assert kl_divergence(q, p).item() == 0.5 and kl_divergence(q, q).item() == 0.0
    with pytest.raises(NotImplementedError,
                       match=r"No KL\(p \|\| q\) is implemented for p type Normal and q type "
                             r"Categorical"):
        kl_divergence(q, Categorical(t64([0.5, 0.5])))
    # Normal and Bernoulli are both exponential families, as in PyTorch
    with pytest.raises(NotImplementedError, match="The cross KL-divergence between different "
                       "exponential families"):
        kl_divergence(q, Bernoulli(t64(0.5)))
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution subclass"):
        register_kl("Normal", Normal)
    with pytest.raises(NotImplementedError):
        kl_divergence(Independent(Normal(t64([[0.0]]), t64([[1.0]])), 1),
                      Independent(Normal(t64([[0.0]]), t64([[1.0]])), 2))
