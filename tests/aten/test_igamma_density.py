"""The Gamma(a) density x^(a-1) e^-x / Gamma(a), the hidden op _ptl_igamma_density that
igamma's and igammac's derivatives in x call (special_math.h, Note [Incomplete gamma
density]), against mpmath in float64: a from 1e-3 to 1e300, x from 1e-320 to the density's
underflow, at and across each switch of its formula (a = 10, |x - a| = a / 2, a phi = 700,
x = 700 and 1500 below a = 10, a phi = 2000); PyTorch's special values (its formula's),
float32 as the float64 result rounded, layouts, and the op kept out of the public namespaces."""
import math

import mpmath
import numpy as np
import pytest
from scipy import optimize

import pytorchlite as ptl
from helpers import torch, torch_ref

DENSITY = ptl.ops.aten._ptl_igamma_density
TINY = np.finfo(np.float64).tiny


def _density(a, x, dtype=ptl.float64):
    ta = ptl.tensor(np.asarray(a, dtype=np.float64), dtype=dtype)
    tx = ptl.tensor(np.asarray(x, dtype=np.float64), dtype=dtype)
    return DENSITY(ta, tx)


def _mp_density(a, x):
    """x^(a-1) e^-x / Gamma(a) at 40 + log10(a) digits, as an mpf"""
    with mpmath.workdps(40 + max(0, int(math.log10(a)))):
        a_, x_ = mpmath.mpf(a), mpmath.mpf(x)
        return +mpmath.exp((a_ - 1) * mpmath.log(x_) - x_ - mpmath.loggamma(a_))


def _check(a, x, rtol=1e-13):
    """the op, igamma's and -igammac's gradients against mpmath where the density is a normal
    double, and within a subnormal step of it (or 0) where mpmath's value underflows"""
    a, x = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(x, dtype=np.float64))
    a, x = a.ravel(), x.ravel()
    got = _density(a, x).numpy()
    want = [_mp_density(ai, xi) for ai, xi in zip(a, x)]
    normal = np.array([TINY <= w < np.finfo(np.float64).max for w in want])
    want = np.array([float(w) for w in want])
    np.testing.assert_allclose(got[normal], want[normal], rtol=rtol, atol=0)
    np.testing.assert_allclose(got[~normal], want[~normal], rtol=0, atol=1e-300)
    tx = ptl.tensor(x, requires_grad=True)
    (gp,) = ptl.autograd.grad(ptl.special.gammainc(ptl.tensor(a), tx).sum(), (tx,))
    (gq,) = ptl.autograd.grad(ptl.special.gammaincc(ptl.tensor(a), tx).sum(), (tx,))
    np.testing.assert_array_equal(gp.numpy(), got)
    np.testing.assert_array_equal(gq.numpy(), -got)


def test_against_mpmath_from_tiny_to_huge_a():
    """a = 1e-3 ... 1e300 log-spaced, x = a (1 + t / sqrt(a)) for |t| <= 40 and x = a 10^s
    for |s| <= 3: rtol 1e-13 (the formula e^((a - 1) log x - x - lgamma a) is 2e-12 off at
    a = 3300, 0.4% at 1e12)"""
    a = 10.0 ** np.linspace(-3, 300, 120)
    t = np.linspace(-40, 40, 17)
    xt = a[:, None] * (1 + t[None, :] / np.sqrt(a[:, None]))
    xs = a[:, None] * 10.0 ** np.linspace(-3, 3, 13)[None, :]
    a2 = np.concatenate([np.broadcast_to(a[:, None], xt.shape).ravel(),
                         np.broadcast_to(a[:, None], xs.shape).ravel()])
    x2 = np.concatenate([xt.ravel(), xs.ravel()])
    keep = (x2 > 0) & np.isfinite(x2)
    _check(a2[keep], x2[keep])


def test_against_mpmath_small_a_and_tiny_x():
    """a = 1e-3 ... 1e3 at random, x = 10^u for u in [-320, 3.3] (subnormal x included, where
    x^(a-1) / Gamma(a) reaches e^700 for small a) and x = a 10^s, |s| <= 3"""
    rs = np.random.RandomState(1)
    a = np.concatenate([10.0 ** rs.uniform(-3, 3, 400), 10.0 ** rs.uniform(-3, 1.5, 400)])
    x = np.concatenate([10.0 ** rs.uniform(-320, 3.3, 400),
                        a[400:] * 10.0 ** rs.uniform(-3, 3, 400)])
    _check(a, x)


def _around(v):
    return [np.nextafter(v, 0.0), v, np.nextafter(v, np.inf)]


def _a_phi_at(a, target, above):
    """x with a phi(a, x) = x - a - a log(x / a) = target, above or below a"""
    f = lambda x: x - a - a * math.log(x / a) - target  # noqa: E731
    return optimize.brentq(f, a, a * 1e6) if above else optimize.brentq(f, 1e-300, a)


def test_switch_points():
    """at and across each switch: a = 10 (the Stirling form | e^-x e^((a-1) log x - lgamma a)),
    |x - a| = a / 2 (a phi's series | its logarithm), x = 700 below a = 10 (e^-x in two
    halves), a phi = 700 from a = 10 (e^(-a phi) in two halves)"""
    pts = []
    for a in _around(10.0) + [9.5, 30.0, 100.0, 3300.0, 1e6]:
        for x in _around(0.5 * a) + _around(1.5 * a) + _around(a) + [1e-3 * a, 2.0, 700.0]:
            pts.append((a, x))
    for a in [1e-3, 0.5, 1.0, 2.0, 9.9, np.nextafter(10.0, 0.0)]:
        for x in _around(700.0) + [701.0, 745.0, 800.0]:
            pts.append((a, x))
    for a in [10.0, 30.0, 150.0, 1000.0]:
        for above in (False, True):
            x0 = _a_phi_at(a, 700.0, above)
            for x in [x0 * (1 - 1e-9), x0, x0 * (1 + 1e-9)]:
                pts.append((a, x))
    a, x = np.array(pts).T
    _check(a, x)


def test_underflow_and_overflow_give_no_nan():
    """0 from x = 1500 below a = 10 (where e^((a-1) log x) may overflow) and where a phi
    passes 2000, across both; the extremes of the range; inf where x^(a-1) / Gamma(a)
    overflows (a < 1, x subnormal)"""
    big = np.finfo(np.float64).max
    pts = [(a, x) for a in [0.5, 9.99, np.nextafter(10.0, 0.0), 10.0, 100.0, 1e300, big]
           for x in _around(1500.0) + [1e300, big, 1e-300, 5e-324]]
    pts += [(a, x) for a in [20.0, 1000.0] for x in
            [_a_phi_at(a, v, above) for v in (1990.0, 2000.0, 2010.0) for above in (False, True)]]
    pts += [(big, big), (1e300, 1e300), (big, np.nextafter(big, 0.0))]
    a, x = np.array(pts).T
    got = _density(a, x).numpy()
    assert not np.isnan(got).any()
    _check(a, x)
    assert np.isinf(_density(1e-3, 5e-324).numpy())


def test_special_values_follow_the_formula():
    """outside a > 0, 0 < x < inf, a < inf: PyTorch's formula e^((a - 1) log x - x - lgamma a)
    (NaN at a = 1, x = 0, at a >= 1, x = inf and for x < 0; 0 at a = 0, x > 0; the formula's
    value for a < 0)"""
    inf, nan = math.inf, math.nan
    vals = [0.0, -0.0, 0.5, 1.0, 2.0, -0.5, -1.0, -2.5, inf, -inf, nan, 1e-320]
    a, x = np.array([(u, v) for u in vals for v in vals]).T
    special_pt = ~((a > 0) & (x > 0) & (a < inf) & (x < inf))
    a, x = a[special_pt], x[special_pt]
    with np.errstate(all="ignore"):
        want = np.exp((a - 1) * np.log(x) - x - np.array([_lgamma(v) for v in a]))
    np.testing.assert_allclose(_density(a, x).numpy(), want, rtol=1e-15, atol=0, equal_nan=True)


def _lgamma(v):
    """C's lgamma (math.lgamma raises at its poles; SciPy's gammaln(-inf) is -inf, C's +inf)"""
    try:
        return math.lgamma(v)
    except ValueError:
        return math.inf


@torch_ref
def test_gradients_match_torch():
    """igamma's and igammac's gradients in x as PyTorch's: its special values exactly, the rest
    to its formula's own error (rtol 1e-12 up to a = 100); the gradient in a raises its
    NotImplementedError"""
    inf, nan = math.inf, math.nan
    vals = [0.0, 0.5, 1.0, 2.0, -0.5, -1.0, inf, -inf, nan, 1e-320, 3.0, 45.0, 99.0]
    a, x = np.array([(u, v) for u in vals for v in vals]).T
    for name in ("gammainc", "gammaincc"):
        tx = ptl.tensor(x, requires_grad=True)
        (got,) = ptl.autograd.grad(getattr(ptl.special, name)(ptl.tensor(a), tx).sum(), (tx,))
        wx = torch.tensor(x, requires_grad=True)
        getattr(torch.special, name)(torch.tensor(a), wx).sum().backward()
        np.testing.assert_allclose(got.numpy(), wx.grad.numpy(), rtol=1e-12, atol=0,
                                   equal_nan=True)
        ta = ptl.tensor([2.0], requires_grad=True)
        with pytest.raises(NotImplementedError) as ours:
            getattr(ptl.special, name)(ta, ptl.tensor([1.5])).sum().backward()
        wa = torch.tensor([2.0], requires_grad=True)
        with pytest.raises(NotImplementedError) as theirs:
            getattr(torch.special, name)(wa, torch.tensor([1.5])).sum().backward()
        assert str(ours.value) == str(theirs.value)


@torch_ref
def test_float32_gradient_near_torch():
    """float32 gradients: PyTorch computes its formula in float32, we the float64 density
    rounded once; both within float32's error of each other at moderate a"""
    rs = np.random.RandomState(3)
    a = rs.uniform(0.2, 30, 200).astype(np.float32)
    x = (a * rs.uniform(0.3, 2.0, 200)).astype(np.float32)
    tx = ptl.tensor(x, requires_grad=True)
    (got,) = ptl.autograd.grad(ptl.special.gammainc(ptl.tensor(a), tx).sum(), (tx,))
    wx = torch.tensor(x, requires_grad=True)
    torch.special.gammainc(torch.tensor(a), wx).sum().backward()
    assert got.dtype == ptl.float32
    np.testing.assert_allclose(got.numpy(), wx.grad.numpy(), rtol=2e-5)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float16, ptl.bfloat16], ids=str)
def test_low_precision_is_the_float64_result_rounded(dtype):
    rs = np.random.RandomState(4)
    a = ptl.tensor(10.0 ** rs.uniform(-1, 3, 300)).to(dtype)
    x = (a.to(ptl.float64) * ptl.tensor(rs.uniform(0.2, 2.0, 300))).to(dtype)
    got = DENSITY(a, x)
    assert got.dtype == dtype
    want = DENSITY(a.to(ptl.float64), x.to(ptl.float64)).to(dtype)
    np.testing.assert_array_equal(got.to(ptl.float64).numpy(), want.to(ptl.float64).numpy())
    tx = x.clone().requires_grad_()
    (g,) = ptl.autograd.grad(ptl.igamma(a, tx).sum(), (tx,))
    np.testing.assert_array_equal(g.to(ptl.float64).numpy(), got.to(ptl.float64).numpy())


def test_layouts(threads):
    """0-dim, size-0, broadcast, transposed and sliced operands, and a tensor large enough to
    split over threads: each element as it comes alone"""
    rs = np.random.RandomState(5)
    a = 10.0 ** rs.uniform(-2, 6, (64, 33))
    x = a * rs.uniform(0.3, 2.0, (64, 33))
    one = np.array([[_density(ai, xi).item() for ai, xi in zip(ra, rx)] for ra, rx in zip(a, x)])
    np.testing.assert_array_equal(_density(a, x).numpy(), one)
    ta, tx = ptl.tensor(a.T.copy()).t(), ptl.tensor(np.repeat(x, 2, axis=1))[:, ::2]
    assert not ta.is_contiguous() and not tx.is_contiguous()
    np.testing.assert_array_equal(DENSITY(ta, tx).numpy(), one)
    np.testing.assert_array_equal(DENSITY(ptl.tensor(a)[::2, 1::3], tx[::2, 1::3]).numpy(),
                                  one[::2, 1::3])
    np.testing.assert_array_equal(DENSITY(ptl.tensor(a[:1]), tx).numpy(),
                                  _density(np.broadcast_to(a[:1], x.shape), x).numpy())
    p = DENSITY(ptl.tensor(50.0, dtype=ptl.float64), ptl.tensor(45.0, dtype=ptl.float64))
    assert p.shape == () and p.item() == pytest.approx(float(_mp_density(50.0, 45.0)), rel=1e-15)
    assert _density(np.zeros((0, 3)), np.zeros((0, 3))).shape == (0, 3)
    big_a = np.full(200_000, 1e5)
    big_x = 1e5 + rs.uniform(-1000, 1000, 200_000)
    got = _density(big_a, big_x).numpy()
    np.testing.assert_array_equal(got[::9973], [_density(u, v).item() for u, v in
                                                zip(big_a[::9973], big_x[::9973])])


@pytest.mark.parametrize("a", [0.3, 2.5, 9.5, 10.5, 40.0, 150.0])
def test_gradcheck_moderate_a(a):
    """float64 gradcheck and gradgradcheck of gammainc and gammaincc in x on both sides of
    a = 10, and of the density itself in a and x (its derivative: d (log x - digamma a),
    d ((a - 1) / x - 1))"""
    ta = ptl.full((4,), a, dtype=ptl.float64)
    x = ptl.tensor([0.5 * a, 0.9 * a, 1.2 * a, 2.0 * a + 1.0], dtype=ptl.float64,
                   requires_grad=True)
    for fn in (ptl.special.gammainc, ptl.special.gammaincc):
        assert ptl.autograd.gradcheck(lambda t: fn(ta, t), (x,))
        assert ptl.autograd.gradgradcheck(lambda t: fn(ta, t), (x,))
    assert ptl.autograd.gradcheck(DENSITY, (ta.clone().requires_grad_(), x))


def test_the_op_is_hidden():
    """reachable as ptl.ops.aten._ptl_igamma_density only: not in the torch-like namespaces"""
    for ns in (ptl, ptl.Tensor, ptl.special, ptl.nn.functional, ptl.linalg):
        assert not hasattr(ns, "_ptl_igamma_density")
    assert "_ptl_igamma_density" not in dir(ptl)
    x = ptl.tensor([1.5], requires_grad=True)
    g = ptl.special.gammainc(ptl.tensor([2.0]), x)
    assert type(g.grad_fn).__name__ == "IgammaBackward0"


def _lane_pool():
    """(a, x) pairs of every path of the vector lanes (Note [Incomplete gamma density lanes]):
    the form below a = 10 (x up to 700, x = DBL_MIN), the Stirling form by a phi's series
    (|x - a| <= a / 2) and by its logarithm, in one exponential and in two halves (a phi at
    700) and 0 (a phi at 2000), and the slow lanes: subnormal x, x past 700 below a = 10, x / a
    below the normal range, and the special values"""
    below = np.nextafter(10.0, 0.0)
    pts = [(a, x) for a in (1e-3, 0.3, 1.0, 5.0, below)
           for x in (TINY, 1e-300, 0.2, 3.0, 40.0, 700.0, np.nextafter(700.0, 1e3), 800.0,
                     2.5e-310)]
    for a in (10.0, 10.5, 300.0, 1e4, 1e9):
        pts += [(a, x) for x in _around(0.5 * a) + _around(1.5 * a) + [a, 0.9 * a, 1.3 * a,
                                                                      1e-3 * a, 5.0 * a]]
        pts += [(a, _a_phi_at(a, v, above)) for v in (699.0, 701.0, 1999.0, 2001.0)
                for above in (False, True) if a < 1e9 or v < 1000.0]
    pts += [(1e300, 1e-10), (1e10, 3.0 * TINY), (1e10, 2.5e-310), (20.0, 1e-300)]
    specials = [(0.0, 1.0), (-1.0, 2.0), (2.0, 0.0), (2.0, -1.0), (math.nan, 1.0),
                (1.0, math.nan), (math.inf, 5.0), (5.0, math.inf), (1.0, 0.0)]
    a, x = np.array(pts).T
    sa, sx = np.array(specials).T
    return a, x, sa, sx


def test_lanes_against_mpmath():
    """every path of the lanes within 1e-13 of mpmath (and its gradients the op's)"""
    a, x, _, _ = _lane_pool()
    _check(a, x)


def test_lanes_mixed_in_one_vector(threads):
    """pairs of every path (special values included) shuffled so that each vector mixes them,
    at each length 0..33 (the 4- and 8-lane tails) and across the 256-element blocks of the
    copying loops: each element as it comes alone, contiguous, strided, in float32 the float64
    value rounded"""
    a0, x0, sa, sx = _lane_pool()
    a0, x0 = np.concatenate([a0, sa]), np.concatenate([x0, sx])
    alone = np.array([_density(u, v).item() for u, v in zip(a0, x0)])
    rs = np.random.RandomState(6)
    for n in list(range(34)) + [255, 256, 257, 600]:
        pick = rs.randint(0, len(a0), n)
        a, x = a0[pick], x0[pick]
        want = alone[pick]
        np.testing.assert_array_equal(_density(a, x).numpy(), want)
        ta = ptl.tensor(np.repeat(a, 2))[::2]
        tx = ptl.tensor(np.repeat(x, 3))[1::3]
        np.testing.assert_array_equal(DENSITY(ta, tx).numpy(), want)
        with np.errstate(over="ignore"):
            want32 = _density(a.astype(np.float32), x.astype(np.float32)).numpy()
            np.testing.assert_array_equal(
                _density(a.astype(np.float32), x.astype(np.float32), ptl.float32).numpy(),
                want32.astype(np.float32))


def test_runs_of_equal_a_and_broadcast_a(threads):
    """lgamma(a) or Gamma*(a) kept across a run of equal a: runs of 1..20 elements that change
    inside a vector, a broadcast 0-dim a, and sizes across the thread split (32768): the same
    bits as each element alone, within 1e-13 of mpmath"""
    rs = np.random.RandomState(7)
    values = [0.5, 5.0, np.nextafter(10.0, 0.0), 10.0, 300.0, 1e6]
    runs = [np.full(rs.randint(1, 21), values[rs.randint(len(values))]) for _ in range(40)]
    a = np.concatenate(runs)
    x = a * rs.uniform(0.3, 2.5, len(a))
    got = _density(a, x).numpy()
    np.testing.assert_array_equal(got, [_density(u, v).item() for u, v in zip(a, x)])
    _check(a, x)
    for a0 in (5.0, 1e4):
        for n in (7, 32767, 32768, 32769, 70001):
            x = a0 * rs.uniform(0.5, 1.5, n)
            full = _density(np.full(n, a0), x).numpy()
            np.testing.assert_array_equal(DENSITY(ptl.tensor(a0, dtype=ptl.float64),
                                                  ptl.tensor(x)).numpy(), full)
            np.testing.assert_array_equal(
                DENSITY(ptl.tensor([a0], dtype=ptl.float64).expand(n), ptl.tensor(x)).numpy(),
                full)
            at = rs.randint(0, n, 5)
            np.testing.assert_array_equal(full[at], [_density(a0, v).item() for v in x[at]])


def test_log_side_of_a_phi_at_large_a():
    """a phi's logarithmic side (|x - a| > a / 2) from a = 1e3 to 2e4, where a phi stays under
    700: a log m's rounding cost 2e-13 there (a = 5000, x = 1.52 a) before log m was a
    double-double; now within 2e-14 (checked against mpmath, and each element alone)"""
    rs = np.random.RandomState(8)
    a = 10.0 ** rs.uniform(3, 4.3, 300)
    lam = np.where(rs.rand(300) < 0.5, 1.5 + rs.uniform(0, 0.3, 300),
                   0.5 - rs.uniform(0, 0.15, 300))
    keep = a * (lam - 1 - np.log(lam)) < 700
    _check(a[keep], (a * lam)[keep], rtol=2e-14)


def test_plain_and_double_double_exponents_below_a_10():
    """below a = 10 the lanes sum the exponent in plain doubles where |(a - 1) log x| +
    |lgamma a| + x <= 32, else as a double-double (Note [Incomplete gamma density lanes]): at
    and across that switch, and at random, within 1e-14 of mpmath"""
    pts = []
    for a in (1e-3, 0.4, 1.0, 2.5, 5.0, 9.9):
        size = lambda x, a=a: abs((a - 1) * math.log(x)) + abs(math.lgamma(a)) + x - 32.0  # noqa: E731
        x0 = optimize.brentq(size, 1.0, 40.0)
        pts += [(a, x) for x in _around(x0) + [x0 * (1 - 1e-9), x0 * (1 + 1e-9)]]
        if a < 1.0:
            x1 = optimize.brentq(size, 1e-300, 1.0)
            pts += [(a, x) for x in _around(x1)]
    rs = np.random.RandomState(9)
    a = 10.0 ** rs.uniform(-3, 1, 400)
    pts += list(zip(a, a * 10.0 ** rs.uniform(-3, 1.7, 400)))
    a, x = np.array(pts).T
    _check(a, x, rtol=1e-14)
