"""gammainc / gammaincc (igamma / igammac) for large a: special_math.h's Temme expansion
(Note [Incomplete gamma for large a]) against SciPy and mpmath in float64.

a >= 100 with |x - a| <= a / 2 takes Temme's uniform asymptotic expansion, the rest the
series (x < a + 1) or the continued fraction.  The series alone, stopped after 100000 terms,
needs about 8 sqrt(a) of them at x = a: it gave gammainc(1e9, 1e9) = 0.4992 for 0.500004,
gammainc(1e12, 1e12) = 0.04 and nan from a ~ 1e17.

The judges: SciPy where it is itself accurate, that is every a up to 1e5 and, above,
|x - a| <= 4.4 sqrt(a) (its own asymptotic region: beyond it SciPy's and PyTorch's loops stop
after 2000 terms, and gammainc(1e9, 1e9 - 7 sqrt(1e9)) comes out 50% off); elsewhere mpmath,
as the integral of the Gamma(a) density over u = t / a at 30 + log10(a) digits (mpmath's own
gammainc does not converge there)."""
import math

import mpmath
import numpy as np
import pytest
from scipy import special

import pytorchlite as ptl
from helpers import torch, torch_ref


def _both(a, x, dtype=ptl.float64):
    ta = ptl.tensor(np.asarray(a, dtype=np.float64), dtype=dtype)
    tx = ptl.tensor(np.asarray(x, dtype=np.float64), dtype=dtype)
    return ptl.special.gammainc(ta, tx).numpy(), ptl.special.gammaincc(ta, tx).numpy()


def _near(a, t):
    """x = a (1 + t / sqrt(a)) on the grid a x t"""
    a, t = np.meshgrid(np.asarray(a, dtype=np.float64), np.asarray(t, dtype=np.float64))
    return a.ravel(), np.maximum(a * (1 + t / np.sqrt(a)), 0.0).ravel()


def _mp_pq(a, x):
    """P(a, x), Q(a, x) as floats: sqrt(a / 2 pi) / Gamma*(a) times the integral of
    e^(-a (u - 1 - log u)) / u over u = t / a from 0 to x / a (P) or x / a to inf (Q), the
    smaller one integrated, its range cut 60 standard deviations (1 / sqrt(a)) from the peak
    and split in 40 pieces"""
    with mpmath.workdps(30 + max(0, int(math.log10(a)))):
        a_, lam = mpmath.mpf(a), mpmath.mpf(x) / a
        log_gs = mpmath.loggamma(a_) - (a_ - 0.5) * mpmath.log(a_) + a_ \
            - mpmath.log(2 * mpmath.pi) / 2
        c = mpmath.sqrt(a_ / (2 * mpmath.pi)) / mpmath.exp(log_gs)
        w = 60 / mpmath.sqrt(a_)

        def f(u):
            return mpmath.exp(-a_ * (u - 1 - mpmath.log(u))) / u

        if lam <= 1:
            lo = max(mpmath.mpf(0), min(lam, 1 - w))
            p = c * mpmath.quad(f, [0] + [lo + (lam - lo) * i / 40 for i in range(41)])
            return float(p), float(1 - p)
        hi = max(lam, 1 + w)
        q = c * mpmath.quad(f, [lam + (hi - lam) * i / 40 for i in range(41)]
                            + [2 * hi, mpmath.inf])
        return float(1 - q), float(q)


def _mp_direct(a, x):
    """P(a, x), Q(a, x) as floats from mpmath's gammainc at 40 digits (a up to ~1e5)"""
    with mpmath.workdps(40):
        a_, x_ = mpmath.mpf(a), mpmath.mpf(x)
        return (float(mpmath.gammainc(a_, 0, x_, regularized=True)),
                float(mpmath.gammainc(a_, x_, mpmath.inf, regularized=True)))


def test_grid_against_scipy():
    """a = 1e2 ... 1e300 (log-spaced), x = a (1 + t / sqrt(a)) with |t| <= 4.4 once x is
    rounded (SciPy's asymptotic region, where it is accurate): rtol 1e-12 on P and Q"""
    a, x = _near(np.logspace(2, 300, 150), np.linspace(-4.4, 4.4, 23))
    keep = np.abs(x - a) <= 4.4 * np.sqrt(a)
    a, x = a[keep], x[keep]
    p, q = _both(a, x)
    np.testing.assert_allclose(p, special.gammainc(a, x), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(q, special.gammaincc(a, x), rtol=1e-12, atol=1e-300)


def test_moderate_a_against_mpmath():
    """a = 1e2 ... 1e5 with t in [-10, 10]: beyond |t| = 4.5 SciPy's own prefactor (e^(a log x
    - x - lgamma a)) costs it up to 1e-12, so mpmath judges, to rtol 1e-13"""
    a, x = _near(np.logspace(2, 5, 7), np.linspace(-10, 10, 21))
    p, q = _both(a, x)
    want = np.array([_mp_direct(ai, xi) for ai, xi in zip(a, x)])
    np.testing.assert_allclose(p, want[:, 0], rtol=1e-13)
    np.testing.assert_allclose(q, want[:, 1], rtol=1e-13)


@pytest.mark.parametrize("a", [1e6, 1e9, 1e12, 1e17])
def test_far_tails_against_mpmath(a):
    """the tails 5 to 10 standard deviations out, where SciPy's loops are truncated"""
    a, x = _near([a], [-10.0, -7.0, -5.0, 5.0, 7.0, 10.0])
    p, q = _both(a, x)
    want = np.array([_mp_pq(ai, xi) for ai, xi in zip(a, x)])
    np.testing.assert_allclose(p, want[:, 0], rtol=1e-12)
    np.testing.assert_allclose(q, want[:, 1], rtol=1e-12)


def _around(v):
    return [np.nextafter(v, 0.0), v, np.nextafter(v, np.inf)]


def test_switch_points_against_mpmath():
    """at and across each switch: a = 100 (Temme's smallest a and the Stirling form of the
    prefactor), |x - a| = a / 2 (Temme's edges), x = a + 1 (series | continued fraction)"""
    pts = []
    for a in _around(100.0) + [150.0, 1e4]:
        for x in _around(0.5 * a) + _around(1.5 * a) + _around(a) + _around(a + 1.0):
            pts.append((a, x))
    for a in _around(100.0):
        for x in [5.0, 50.0, 99.0, 130.0, 300.0]:
            pts.append((a, x))
    a, x = np.array(pts).T
    p, q = _both(a, x)
    want = np.array([_mp_direct(ai, xi) for ai, xi in pts])
    np.testing.assert_allclose(p, want[:, 0], rtol=1e-13)
    np.testing.assert_allclose(q, want[:, 1], rtol=1e-13)


def test_extremes():
    big = np.finfo(np.float64).max
    a = [1e300, big, 1e17, 1e150, 1e308, 1e300, 30.0, big, 1e300]
    x = [1e300, big, 1e17, 1e150, big, 1.0, 1e300, np.nextafter(big, 0.0), 2e300]
    p, q = _both(a, x)
    assert np.all(np.isfinite(p)) and np.all(np.isfinite(q))
    np.testing.assert_allclose(p[:4], 0.5, rtol=1e-8)
    np.testing.assert_array_equal(p[4:], [1.0, 0.0, 1.0, 0.0, 1.0])
    np.testing.assert_array_equal(q[4:], [0.0, 1.0, 0.0, 1.0, 0.0])
    # P(a, a) = 1/2 + 1 / (3 sqrt(2 pi a)) + O(1/a^1.5)
    np.testing.assert_allclose(p[2], 0.5 + 1 / (3 * math.sqrt(2 * math.pi * 1e17)), rtol=1e-15)


@pytest.mark.parametrize("n", [127, 128, 129, 300])
def test_blocks_mix_the_methods(n, threads):
    """one tensor whose elements take Temme, the series and the continued fraction (and
    special values), across the CPU kernel's 128-element block, strided, broadcast and in
    float32 (computed in double, rounded once): each element as it comes alone"""
    rs = np.random.RandomState(n)
    a = 10.0 ** rs.uniform(-1, 12, n)
    x = a * rs.choice([0.3, 0.6, 0.99, 1.0, 1.01, 1.4, 2.0], n) + rs.choice([0.0, 1.0], n)
    a[::17], x[::23] = 0.0, np.inf
    p, q = _both(a, x)
    one = np.array([_both([ai], [xi]) for ai, xi in zip(a, x)])[:, :, 0]
    np.testing.assert_array_equal(p, one[:, 0])
    np.testing.assert_array_equal(q, one[:, 1])
    ta, tx = ptl.tensor(np.stack([a, a])), ptl.tensor(np.stack([x, x]))
    np.testing.assert_array_equal(ptl.igamma(ta.t().contiguous().t(), tx).numpy()[1], p)
    np.testing.assert_array_equal(ptl.igammac(ptl.tensor(a[:1]), tx).numpy()[0],
                                  _both(np.full(n, a[0]), x)[1])
    f32 = _both(a.astype(np.float32), x.astype(np.float32), dtype=ptl.float32)
    d64 = _both(a.astype(np.float32), x.astype(np.float32))
    np.testing.assert_array_equal(f32[0], d64[0].astype(np.float32))
    np.testing.assert_array_equal(f32[1], d64[1].astype(np.float32))


def test_empty_and_zero_dim():
    p, q = _both(np.zeros((0, 3)), np.zeros((0, 3)))
    assert p.shape == q.shape == (0, 3)
    p, q = _both(np.float64(1e9), np.float64(1e9))
    assert p.shape == () and abs(p - 0.5000042052208701) < 1e-15


@pytest.mark.parametrize("a", [150.0, 1e5, 1e9, 1e12, 1e17])
def test_gradient_large_a(a):
    """d/dx P(a, x) = x^(a-1) e^-x / Gamma(a) (the hidden op _ptl_igamma_density, Note
    [Incomplete gamma density]): a float64 gradcheck near x = a, and the value against
    mpmath's density to 1e-13 (derivatives.yaml's formula: 0.4% off at 1e12, no digit right
    at 1e17); the step a power of 2, which x +- eps keeps exactly (x = 1e17 has an ulp of 16:
    1e-6 sqrt(a) = 316 would step 320)"""
    s = math.sqrt(a)
    eps = 2.0 ** math.floor(math.log2(1e-6 * s))
    x = ptl.tensor([a - 3 * s, a - 0.5 * s, a, a + 2 * s], dtype=ptl.float64,
                   requires_grad=True)
    ta = ptl.full((4,), a, dtype=ptl.float64)
    for fn in (ptl.special.gammainc, ptl.special.gammaincc):
        assert ptl.autograd.gradcheck(lambda t: fn(ta, t), (x,), eps=eps, atol=0,
                                      rtol=1e-6)
    (g,) = ptl.autograd.grad(ptl.special.gammainc(ta, x).sum(), (x,))
    with mpmath.workdps(30 + int(math.log10(a))):
        a_ = mpmath.mpf(a)
        want = [float(mpmath.exp((a_ - 1) * mpmath.log(mpmath.mpf(v)) - v - mpmath.loggamma(a_)))
                for v in x.detach().numpy()]
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-13)


@torch_ref
def test_special_values_and_large_a_match_torch():
    """a = 0, x = 0, inf, nan and negative arguments as PyTorch; large a near x (PyTorch's
    asymptotic region) to 2e-10: PyTorch's own error reaches 1e-10 there (gammaincc(1e12,
    1e12 + 1e6) = 0.158655253947 for mpmath's 0.158655253931)"""
    inf, nan = math.inf, math.nan
    a = [0, 0, inf, inf, 1, -1, 1, 2, 0.5, 1, inf, 0, nan, -inf, 1e9, 1e12, 1e17, 1e300]
    x = [0, 1, inf, 1, inf, 1, -1, 0, 0, nan, 0, inf, 1, 1, 1e9, 1e12 + 1e6, 1e17, 1e300]
    for name in ("gammainc", "gammaincc"):
        got = getattr(ptl.special, name)(ptl.tensor(a, dtype=ptl.float64),
                                         ptl.tensor(x, dtype=ptl.float64)).numpy()
        want = getattr(torch.special, name)(torch.tensor(a, dtype=torch.float64),
                                            torch.tensor(x, dtype=torch.float64)).numpy()
        np.testing.assert_array_equal(got[:14], want[:14])
        np.testing.assert_allclose(got[14:], want[14:], rtol=2e-10)
