"""float64 lgamma, i0, special.i0e, special.i1 and special.i1e in vector lanes (Note [Float64
lgamma and Bessel lanes] in unary_special.c), and the scalar digamma / trigamma fixes of
scalar_math.h (the reflection next to the negative poles, polygamma(1, +inf)): the error
against mpmath (40 digits) on random points over every range the formulas split and at
their boundaries, the special values (+-0, the negative integers, +-inf, NaN, subnormals,
the overflow edges), every tail length, 0-dim, size-0, strided, in-place
and out=.  The file reruns with the portable loops and with AVX2 only
(PTL_CPU_CAPABILITY=default, avx2)."""
import os

import mpmath
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import reference_once, rerun_with_capability, torch

OPS = {"lgamma": (ptl.lgamma, lambda t: t.lgamma_()),
       "i0": (ptl.i0, lambda t: t.i0_()),
       "i0e": (ptl.special.i0e, None),
       "i1": (ptl.special.i1, None),
       "i1e": (ptl.special.i1e, None)}
OUT = {"lgamma": ptl.lgamma, "i0": ptl.i0, "i0e": ptl.special.i0e, "i1": ptl.special.i1,
       "i1e": ptl.special.i1e}


def _mp(name, v):
    """name at the double v, as an mpmath number (inf at the poles)"""
    x = mpmath.mpf(v)
    if name == "lgamma":
        return mpmath.inf if x <= 0 and x == int(x) else mpmath.loggamma(x).real
    if name == "digamma":
        return mpmath.digamma(x)
    if name == "trigamma":
        return mpmath.psi(1, x)
    order = 0 if name.startswith("i0") else 1
    value = mpmath.besseli(order, x)
    return value * mpmath.exp(-abs(x)) if name.endswith("e") else value


def _reference(name, x):
    with mpmath.workdps(40):
        return np.array([float(_mp(name, float(v))) for v in x])


def reference(name, x):
    return reference_once(name, lambda v: _reference(name, v), np.asarray(x, dtype=np.float64))


# the bound on the error in ulps of the reference (measured: lgamma 2.8, i0 3.7, i0e 2.6,
# i1 2.7, i1e 3.8 in the vector lanes; glibc's lgamma and the double-double series of the
# portable Bessel loops stay under these too).  lgamma below -2, next to its zeros (two
# between each pair of negative integers), has an absolute error of a few 1e-16 (glibc's
# lgamma about 1e-17): there the error counts in ulps of max(|ref|, 1).
BOUNDS = {"lgamma": 3.0, "i0": 4.0, "i0e": 3.0, "i1": 3.0, "i1e": 4.0}
# the portable loops (PTL_CPU_CAPABILITY=default): special_math.h's scalar
# i0 and i1 take their asymptotic series times e^(|x|/2) twice above the series' range
# (measured 6.0 and 4.0 ulp)
PORTABLE = os.environ.get("PTL_CPU_CAPABILITY") == "default"
PORTABLE_BOUNDS = dict(BOUNDS, i0=6.0, i1=4.0)
LOOP_BOUNDS = PORTABLE_BOUNDS if PORTABLE else BOUNDS
RANGES = {
    # the polynomial at 2 + t (|x| < 7.5: every m = round(x) from -7 to 7, the m = 2 band
    # from 1.25), the zeros at 1 and 2, the tiny arguments, Stirling from 7.5 and the
    # reflection below -7.5, the huge ones
    "lgamma": [(-7.5, 7.5), (0.5, 1.5), (1.2, 1.3), (1.4, 1.5), (0.99, 1.01), (1.99, 2.01),
               (-0.5, 0.5), (-1e-6, 1e-6), (-2.5, -2.4), (-3.2, -3.1), (7.4, 7.6),
               (-7.6, -7.4), (7.5, 40), (-40, -7.5), (40, 1e6), (-1e6, -40), (1e6, 1e300)],
    # the series up to |x| = 8 and the fit in 16 / x - 1 above; near 8; e^x alone and
    # e^(x/2) twice (past 700); the overflow of i0 and i1 at 713.98
    "i0": [(-8, 8), (7.9, 8.1), (-30, 30), (8, 700), (700, 713.9), (-1e-5, 1e-5)],
    "i0e": [(-8, 8), (7.9, 8.1), (-30, 30), (8, 1e6), (1e6, 1e300), (-1e-5, 1e-5)],
    "i1": [(-8, 8), (7.9, 8.1), (-30, 30), (-700, -8), (700, 713.9), (-1e-5, 1e-5)],
    "i1e": [(-8, 8), (7.9, 8.1), (-30, 30), (-1e6, -8), (1e6, 1e300), (-1e-5, 1e-5)],
}


def _points(name, n=1500):
    """n random points in each range, but 100 in the Bessel functions' huge range past 1e6,
    where mpmath's besseli takes 13 ms a point (19 s for 1500) and the functions are their
    asymptotic series"""
    rng = np.random.default_rng(16)
    parts = [rng.uniform(a, b, n if abs(b) < 1e7 or name == "lgamma" else 100)
             for a, b in RANGES[name]]
    if name == "lgamma":   # log-uniform tiny arguments of both signs, subnormals included
        tiny = np.exp(rng.uniform(-744, -20, n))
        parts += [tiny, -tiny]
    return np.concatenate(parts)


def ulps(got, ref, floor=None):
    """|got - ref| in ulps of |ref| (of max(|ref|, floor) where floor is given per point);
    0 where got equals ref (infinities, exact zeros) or both are NaN"""
    with np.errstate(invalid="ignore", over="ignore"):
        scale = np.abs(ref) if floor is None else np.maximum(np.abs(ref), floor)
        err = np.abs(got - ref) / np.spacing(np.minimum(scale, np.finfo(np.float64).max))
    same = (got == ref) | (np.isnan(got) & np.isnan(ref))
    return np.where(same, 0.0, err)


def _floor(name, x):
    return np.where(x < -2, 1.0, 0.0) if name == "lgamma" else None


@pytest.mark.parametrize("name", list(OPS))
def test_max_ulp(name):
    x = _points(name)
    got = OPS[name][0](ptl.tensor(x)).numpy()
    err = ulps(got, reference(name, x), _floor(name, x))
    assert err.max() <= LOOP_BOUNDS[name], (err.max(), x[np.argmax(err)])


def test_lgamma_zeros_one_two():
    """relative error next to the zeros at 1 and 2 (the polynomial's t Q(t), and t Q(t) -
    log(1 + t)), down to the smallest steps"""
    steps = np.array([2.0 ** -k for k in range(1, 60, 3)])
    x = np.concatenate([1 + steps, 1 - steps / 2, 2 + steps * 2, 2 - steps])
    got = ptl.lgamma(ptl.tensor(x)).numpy()
    assert ulps(got, reference("lgamma", x)).max() <= BOUNDS["lgamma"]
    assert np.array_equal(ptl.lgamma(ptl.tensor([1.0, 2.0])).numpy(), [0.0, 0.0])


SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
            -2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308, 1.0,
            2.0, 3.0, -1.0, -2.0, -3.0, -7.0, -8.0, -100.0, 0.5, -0.5, -2.5, 1.5, 1.25,
            7.5, -7.5, 7.499999999999999, 8.0, -8.0, 7.999999999999999, 8.000000000000002,
            700.0, 700.0000000000001, 713.9, -714.1, 1e-300, -1e-300, 1e-301, 2.0 ** 52,
            -(2.0 ** 52) - 0.5, -(2.0 ** 53), 1e300, 2.5e305, 2.6e305, 1e-16, -1e-16]


def _expected_specials(name, x):
    with np.errstate(all="ignore"):
        ref = np.array([float(_mp(name, v)) if np.isfinite(v) else np.nan for v in x])
    inf = np.isinf(x)
    if name in ("i1", "i1e"):   # odd: the zeros keep x's sign
        ref[ref == 0] = np.copysign(0.0, x[ref == 0])
    if name == "lgamma":
        ref[inf] = np.inf
    elif name in ("i0", "i1"):   # Note [Special functions at the infinities]
        ref[inf] = np.nan
    else:
        ref[inf] = np.copysign(0.0, x[inf]) if name == "i1e" else 0.0
    return ref


@pytest.mark.parametrize("name", list(OPS))
def test_special_values(name):
    x = np.array(SPECIALS)
    with mpmath.workdps(40):
        ref = _expected_specials(name, x)
    got = OPS[name][0](ptl.tensor(x)).numpy()
    exact = ~np.isfinite(ref) | (ref == 0)
    same = ((got == ref) & (np.signbit(got) == np.signbit(ref))) | (np.isnan(got) &
                                                                     np.isnan(ref))
    assert same[exact].all(), (x[exact][~same[exact]], got[exact][~same[exact]])
    err = ulps(got[~exact], ref[~exact], _floor(name, x[~exact]))
    assert err.max(initial=0.0) <= LOOP_BOUNDS[name], (err.max(), x[~exact][np.argmax(err)])
    if torch is not None and name in ("lgamma", "i0e", "i1e"):
        t = {"lgamma": torch.lgamma, "i0e": torch.special.i0e,
             "i1e": torch.special.i1e}[name](torch.from_numpy(x)).numpy()
        keep = ~np.isfinite(t) | (t == 0)
        assert np.array_equal(got[keep], t[keep], equal_nan=True), (x[keep], got[keep])


@pytest.mark.parametrize("name", list(OPS))
def test_tails_strided_inplace_out(name):
    f, inplace = OPS[name]
    x = _points(name, 120)[::3][:200]
    full = f(ptl.tensor(x)).numpy()
    for n in range(0, 71):   # every tail length of 4 and 8 lanes
        assert np.array_equal(f(ptl.tensor(x[:n])).numpy(), full[:n], equal_nan=True), n
    # strided data: within the bound of the reference
    strided = f(ptl.tensor(np.repeat(x, 2))[::2]).numpy()
    ref = reference(name, x)
    assert ulps(strided, ref, _floor(name, x)).max() <= LOOP_BOUNDS[name]
    m = ptl.tensor(x[:120].reshape(12, 10)).t()
    assert np.array_equal(f(m).numpy(), full[:120].reshape(12, 10).T, equal_nan=True)
    z = f(ptl.tensor(np.float64(x[5])))
    assert z.shape == () and np.array_equal(z.numpy(), full[5], equal_nan=True)
    assert f(ptl.tensor(np.zeros((0, 3)))).shape == (0, 3)
    out = ptl.empty(len(x), dtype=ptl.float64)
    OUT[name](ptl.tensor(x), out=out)
    assert np.array_equal(out.numpy(), full, equal_nan=True)
    if inplace is not None:
        y = ptl.tensor(x.copy())
        inplace(y)
        assert np.array_equal(y.numpy(), full, equal_nan=True)


# digamma next to the negative poles: the vector loop and ptl_digamma_d (the portable loop,
# in the PTL_CPU_CAPABILITY=default rerun), both by the reflection with cot(pi r),
# r = x - round(x) (before,
# ptl_digamma_d's pi (x - floor(x)) cost 5.6e3 ulp at -6.00008).  The error counts in ulps
# of max(|ref|, 1), as in test_vec_gamma_bessel.py: next to digamma's own zeros (one between
# each pair of negative integers, -0.504 the first) psi(1 - x) - pi cot(pi x) cancels.
NEAR_POLES = np.array([-6.00008, -6.99992, -1e-30, -1 + 1e-12, -2 - 1e-9, -0.5000001,
                       -3.4999999, -20.0000001, -19.9999999, -1e10 - 0.5, -1e15 + 0.25,
                       -0.75, -5.25, -1e-8, -4503599627370495.5])


def test_digamma_near_negative_poles():
    ref = reference("digamma", NEAR_POLES)
    for t in (ptl.tensor(NEAR_POLES), ptl.tensor(np.repeat(NEAR_POLES, 2))[::2]):
        got = ptl.digamma(t).numpy()
        assert ulps(got, ref, 1.0).max() <= 16, ulps(got, ref, 1.0)


def test_trigamma_at_infinities():   # ptl_polygamma_d(1, .)'s in the default rerun
    x = np.array([np.inf, 1e100, 5.0, -np.inf, np.nan])
    for t in (ptl.tensor(x), ptl.tensor(np.repeat(x, 2))[::2]):
        got = ptl.polygamma(1, t).numpy()
        assert got[0] == 0.0 and not np.signbit(got[0])
        assert np.isnan(got[3]) and np.isnan(got[4])
        assert ulps(got[1:3], reference("trigamma", x[1:3])).max() <= 16
    if torch is not None:
        assert torch.polygamma(1, torch.tensor([np.inf], dtype=torch.float64)).item() == 0.0


def test_polygamma_of_huge_arguments():
    # zeta(n + 1, x)'s tail as w^-n / n, not (w^-(n + 1)) w, once w^-(n + 1) is below the
    # normal range (it was 0): polygamma(n, x) ~ (-1)^(n + 1) (n - 1)! / x^n, normal or
    # subnormal
    x = np.array([1e160, 1e200, 1e300, np.finfo(np.float64).max])
    for n in (1, 2, 3):
        with mpmath.workdps(40):
            want = np.array([float(mpmath.psi(n, mpmath.mpf(float(v)))) for v in x])
        for t in (ptl.tensor(x), ptl.tensor(np.repeat(x, 2))[::2]):
            got = ptl.polygamma(n, t).numpy()
            normal = np.abs(want) >= np.finfo(np.float64).tiny
            assert ulps(got[normal], want[normal]).max(initial=0) <= 4, (n, got, want)
            # a subnormal result has fewer digits: within one of its last place
            assert (np.abs(got - want)[~normal] <= 2 * np.spacing(0.0)).all(), (n, got, want)


@pytest.mark.skipif("PTL_CPU_CAPABILITY" in os.environ,
                    reason="already running with a capability chosen by a parent run")
@pytest.mark.parametrize("cap", ["default", "avx2"])
def test_portable_and_avx2_loops(cap):
    """Reruns this file with the vector loops switched off, and with AVX2 only."""
    rerun_with_capability(__file__, cap)
