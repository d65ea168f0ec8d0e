"""igamma's and igammac's forward on vector lanes (src/aten/native/igamma_forward.c, Note
[Incomplete gamma forward lanes]): Temme's expansion for a >= 100, |x - a| <= a / 2, and the
prefactor x^a e^-x / Gamma(a) of the series and the continued fraction.  Checked: each element
computed alone, in blocks, strided, broadcast and on one and two threads gives the same bits,
at every lane tail (sizes 0..17) and around the block's edge, with every way through the
blocks (special arguments, Temme, series, fraction, a prefactor of 0) mixed in; float32 is
the float64 value rounded, also across the a phi where the smaller side is taken as 0 (746 in
float64, 110 in float32) and where the series' or fraction's side surely rounds to 0 in
float32; values against mpmath in float64 at and across the region's edges and at a below
100 (the prefactor's exponent as a double-double: 1.0e-13 there before); the special values
against SciPy; the portable and AVX2 loops in subprocesses."""
import math
import os

import mpmath
import numpy as np
import pytest
from scipy import optimize
from scipy import special as sp

import pytorchlite as ptl
from helpers import assert_binary_bits_in_layouts, reference_once, rerun_with_capability, \
    same_each

SIZES = list(range(18)) + [127, 128, 129, 300]
SPECIALS = [0.0, np.inf, np.nan, -1.0, 5e-324, 1e300]
FNS = [ptl.special.gammainc, ptl.special.gammaincc]


def _ax(size, rng):
    """a log-uniform in [1, 1e7] (the loops below 100, Temme and the loops above), x within a
    few standard deviations of a, anywhere in [a / 2, 3 a / 2] or far outside it, and a few
    special values"""
    a = np.exp(rng.uniform(0, math.log(1e7), size))
    pick = rng.integers(0, 3, size)
    x = np.where(pick == 0, a * (1 + rng.normal(0, 3, size) / np.sqrt(a)),
                 np.where(pick == 1, a * rng.uniform(0.45, 1.55, size),
                          a * np.exp(rng.uniform(-3, 2, size))))
    x = np.maximum(x, 0.0)
    odd = rng.random((2, size)) < 0.05
    a[odd[0]] = rng.choice(SPECIALS, odd[0].sum())
    x[odd[1]] = rng.choice(SPECIALS, odd[1].sum())
    return a, x


def _same(a, b):
    return a.shape == b.shape and bool(same_each(a, b).all())


def _pq(a, x, dtype=ptl.float64):
    at, xt = ptl.tensor(np.asarray(a), dtype=dtype), ptl.tensor(np.asarray(x), dtype=dtype)
    return ptl.special.gammainc(at, xt).numpy(), ptl.special.gammaincc(at, xt).numpy()


def _mp_pq(ax):
    """P and Q from mpmath's gammainc at 40 digits (a up to ~1e5), rows of ax"""
    out = []
    with mpmath.workdps(40):
        for a, x in ax:
            p = mpmath.gammainc(mpmath.mpf(a), 0, mpmath.mpf(x), regularized=True)
            q = mpmath.gammainc(mpmath.mpf(a), mpmath.mpf(x), mpmath.inf, regularized=True)
            out.append((float(p), float(q)))
    return np.array(out)


def _x_at_a_phi(a, target, above):
    """x with a phi(a, x) = target, above a or below it (phi = x/a - 1 - log(x/a))"""
    f = lambda lam: a * (lam - 1 - math.log(lam)) - target  # noqa: E731
    lam = optimize.brentq(f, 1.0, 1e3, xtol=1e-15) if above else \
        optimize.brentq(f, 1e-9, 1.0, xtol=1e-15)
    return a * lam


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn", FNS)
def test_layouts_give_the_per_element_bits(fn, dtype, threads):
    rng = np.random.default_rng(31)
    dt = getattr(ptl, dtype)
    for size in SIZES:
        a, x = _ax(size, rng)
        assert_binary_bits_in_layouts(fn, a, x, dt, size <= 17)
        at, xt = ptl.tensor(a, dtype=dt), ptl.tensor(x, dtype=dt)
        zero_dim = fn(at[0] if size else ptl.tensor(2.0, dtype=dt),
                      xt[0] if size else ptl.tensor(3.0, dtype=dt))
        assert zero_dim.dim() == 0


def test_two_threads_agree_on_a_large_run(restore_threads):
    rng = np.random.default_rng(32)
    a, x = _ax(100003, rng)
    for dt in (ptl.float32, ptl.float64):
        at, xt = ptl.tensor(a, dtype=dt), ptl.tensor(x, dtype=dt)
        for fn in FNS:
            ptl.set_num_threads(1)
            one = fn(at, xt).numpy()
            ptl.set_num_threads(2)
            assert _same(fn(at, xt).numpy(), one)


def test_float32_is_the_float64_value_rounded():
    """on float32 inputs, float32's results are float64's on the same inputs rounded, also
    where a phi crosses 110 (Temme's float32 side taken as 0) and where the series' or the
    fraction's side surely rounds to 0 in float32 (a >= 1000, x / a in {0.45, 2}) and 746"""
    rng = np.random.default_rng(33)
    a, x = _ax(20000, rng)
    pts = []
    for a0 in (100.0, 150.0, 1e3, 1e4, 1e6):
        for target in (100.0, 110.0, 120.0, 740.0, 746.0, 750.0):
            for above in (False, True):
                xs = _x_at_a_phi(a0, target, above)
                pts += [(a0, xs * (1 + k * 1e-7)) for k in range(-3, 4)]
        pts += [(a0, a0 * r) for r in (0.3, 0.45, 0.49, 2.0, 3.0, 10.0)]
    pa, px = np.array(pts).T
    with np.errstate(over="ignore"):   # 1e300 is inf in float32
        a = np.concatenate([a, pa]).astype(np.float32)
        x = np.concatenate([x, px]).astype(np.float32)
    p4, q4 = _pq(a, x, ptl.float32)
    p8, q8 = _pq(a.astype(np.float64), x.astype(np.float64))
    assert _same(p4, p8.astype(np.float32))
    assert _same(q4, q8.astype(np.float32))


def test_temme_zero_side_across_746():
    """float64: the smaller side is 0 on both sides of a phi = 746 (Temme's lanes skip it
    there) and the other exactly 1; just below, where it is a subnormal or 0, as mpmath"""
    for a in (1e4, 1e6):
        for above in (False, True):
            xs = [_x_at_a_phi(a, t, above) for t in (700.0, 740.0, 746.0, 760.0)]
            p, q = _pq([a] * 4, xs)
            small, big = (q, p) if above else (p, q)
            assert np.all(small[2:] == 0.0) and np.all(big[2:] == 1.0)
            assert 0.0 < small[0] < 1e-300 and big[0] == 1.0


def _edges():
    """at and across a = 100, |x - a| = a / 2, x = a + 1, and a few standard deviations"""
    pts = []
    around = lambda v: [np.nextafter(v, 0.0), v, np.nextafter(v, np.inf)]  # noqa: E731
    for a in around(100.0) + [150.0, 1e3, 5e3]:
        for x in around(0.5 * a) + around(1.5 * a) + around(a) + around(a + 1.0):
            pts.append((a, x))
        for t in (-5.0, -1.0, -0.1, 0.1, 1.0, 5.0):
            pts.append((a, a + t * math.sqrt(a)))
    return np.array(pts)


def test_edges_against_mpmath():
    ax = _edges()
    want = reference_once("igamma_forward_edges", _mp_pq, ax)
    p, q = _pq(ax[:, 0], ax[:, 1])
    np.testing.assert_allclose(p, want[:, 0], rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(q, want[:, 1], rtol=1e-13, atol=1e-300)


def test_prefactor_exponent_below_100_against_mpmath():
    """a in [30, 100), x within 3 standard deviations: the exponent a log x - x - lgamma(a)
    as a double-double leaves lgamma's rounding (6e-14 here); the portable loops'
    ptl_igamma_prefactor sums it in one double (1.0e-13 here)"""
    rng = np.random.default_rng(5)
    a = rng.uniform(30, 100, 400)
    x = a + rng.uniform(-3, 3, 400) * np.sqrt(a)
    ax = np.stack([a, x], axis=1)
    want = reference_once("igamma_forward_below_100", _mp_pq, ax)
    p, q = _pq(a, x)
    rtol = 1.2e-13 if ptl.backends.cpu.get_cpu_capability().lower() == "default" else 8e-14
    np.testing.assert_allclose(p, want[:, 0], rtol=rtol)
    np.testing.assert_allclose(q, want[:, 1], rtol=rtol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_special_values_in_mixed_blocks(dtype):
    """0, inf, NaN, negative and subnormal arguments among Temme's and the loops' elements:
    SciPy's values (NaN for negative arguments, as PyTorch).  (A subnormal a is left out: the
    series' first term 1 / a overflows there, before and after the lanes alike.)"""
    vals = [0.0, -0.0, -1.0, np.inf, -np.inf, np.nan, 0.5, 150.0, 1e4]
    a, x = (v.ravel() for v in np.meshgrid(vals, vals + [5e-324, 1e-310]))
    temme = np.full(40, 1000.0), np.linspace(600.0, 1400.0, 40)
    a = np.concatenate([temme[0], a, temme[0]])
    x = np.concatenate([temme[1], x, temme[1][::-1]])
    a, x = a.astype(dtype), x.astype(dtype)
    p, q = _pq(a, x, getattr(ptl, dtype))
    with np.errstate(all="ignore"):
        wp, wq = sp.gammainc(a.astype(np.float64), x), sp.gammaincc(a.astype(np.float64), x)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(p, wp.astype(dtype), rtol=tol, atol=1e-300)
    np.testing.assert_allclose(q, wq.astype(dtype), rtol=tol, atol=1e-300)


@pytest.mark.skipif("PTL_CPU_CAPABILITY" in os.environ,
                    reason="already running with a capability chosen by a parent run")
@pytest.mark.parametrize("cap", ["default", "avx2"])
def test_portable_and_avx2_loops(cap):
    """Reruns this file with the portable loops (ptl_igamma_temme and ptl_igamma_prefactor
    per element) and the AVX2 lanes."""
    rerun_with_capability(__file__, cap)
