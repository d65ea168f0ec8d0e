"""float32 lgamma, float32 / float64 digamma and polygamma(1, .) (Note [Vector lgamma and
digamma]) and float32 special.i0e, i1, i1e in vector lanes: error against SciPy in float64 on
random points covering every branch (the shift, the reflection, the tiny and huge arguments,
the series / asymptotic split at 8 of the Bessel functions), the special values (NaN, +-inf,
+-0, the poles, subnormals, huge), every tail length 0..70, 0-dim, size-0 and strided
inputs; the vector loop against the portable one.  The file reruns with the portable loops
and with AVX2 only (PTL_CPU_CAPABILITY=default, avx2)."""
import os

import mpmath
import numpy as np
import pytest
import scipy.special

import pytorchlite as ptl
from helpers import reference_once, rerun_with_capability, torch


def _trigamma(x):
    return scipy.special.polygamma(1, x)


OPS = {"lgamma": (ptl.lgamma, scipy.special.gammaln),
       "digamma": (ptl.digamma, scipy.special.psi),
       "trigamma": (lambda t: ptl.polygamma(1, t), _trigamma),
       "i0e": (ptl.special.i0e, scipy.special.i0e),
       "i1": (ptl.special.i1, scipy.special.i1),
       "i1e": (ptl.special.i1e, scipy.special.i1e)}
# the bound on the error in ulps of max(|ref|, FLOOR): near the zeros of lgamma and digamma
# both loops (libm's lgammaf, ptl_digamma_d) lose relative accuracy to cancellation, so
# there the error counts against an ulp of FLOOR (an absolute error)
BOUNDS = {("lgamma", np.float32): 3.0,   # libm's lgammaf: 2.8 (the vector loop 1.4)
          ("digamma", np.float32): 1.0,
          ("digamma", np.float64): 16.0, ("trigamma", np.float32): 1.0,
          ("trigamma", np.float64): 16.0, ("i0e", np.float32): 1.0, ("i1", np.float32): 1.0,
          ("i1e", np.float32): 1.0}
FLOOR = {"lgamma": 1.0, "digamma": 1.0}
# SciPy's psi and polygamma lose digits next to the negative poles (psi(-1.99998898) by 8e-10
# relative): below 0 the reference is mpmath's
MP_REF = {"digamma": mpmath.digamma, "trigamma": lambda v: mpmath.psi(1, v)}


def _reference(name, x):
    """name's value at the float64 points x in float64"""
    with np.errstate(all="ignore"):
        ref = OPS[name][1](x)
    if name in MP_REF:
        neg = np.flatnonzero((x < 0) & np.isfinite(x) & (x != np.floor(x)))
        with mpmath.workdps(40):
            ref[neg] = reference_once(
                name, lambda v: np.array([float(MP_REF[name](float(u))) for u in v]), x[neg])
    return ref
RANGES = {"lgamma": [(-12, 12), (0, 3), (-4, 0), (8, 1e6), (0.999, 1.001), (1.999, 2.001)],
          "digamma": [(0, 12), (-12, 0), (0, 11), (-30, 0), (10, 1e8), (0, 1e-3)],
          "trigamma": [(0, 12), (-12, 0), (0, 11), (-30, 0), (10, 1e8), (0, 1e-3)],
          "i0e": [(-100, 100), (-9, 9), (7.9, 8.1), (-1e6, 1e6)],
          "i1": [(-95, 95), (-9, 9), (7.9, 8.1), (-1e-3, 1e-3)],
          "i1e": [(-100, 100), (-9, 9), (7.9, 8.1), (-1e6, 1e6)]}
CASES = [("lgamma", np.float32), ("digamma", np.float32), ("digamma", np.float64),
         ("trigamma", np.float32), ("trigamma", np.float64), ("i0e", np.float32),
         ("i1", np.float32), ("i1e", np.float32)]


def ulps(got, ref, dtype, floor=0.0):
    """|got - ref| in units of the last place of max(|ref|, floor) in dtype (ref in float64);
    0 where got is ref rounded (infinities, NaN, exact values)"""
    got = np.asarray(got, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = ref.astype(dtype).astype(np.float64)
        big = np.minimum(np.maximum(np.abs(ref), floor), np.finfo(dtype).max).astype(dtype)
        err = np.abs(got - ref) / np.spacing(big).astype(np.float64)
    both_special = (got == rounded) | (np.isnan(got) & np.isnan(ref))
    return np.where(both_special, 0.0, err)


def _points(name, dtype, n=100000):
    """n random points in each range; 2000 in the negative ranges of digamma and trigamma,
    whose reference is mpmath's (16 s a dtype for trigamma's 52000 there before)"""
    rng = np.random.default_rng(11)
    parts = [rng.uniform(a, b, n if b > 0 or name not in MP_REF else n // 50)
             for a, b in RANGES[name]]
    if name in ("digamma", "trigamma"):   # tiny and huge positive arguments, log-uniform
        parts.append(np.exp(rng.uniform(-700 if dtype == np.float64 else -100, 80, n)))
    return np.concatenate(parts).astype(dtype)


def _specials(dtype):
    fi = np.finfo(dtype)
    v = [0.0, -0.0, np.inf, -np.inf, np.nan, fi.smallest_subnormal, -fi.smallest_subnormal,
         fi.tiny, -fi.tiny, fi.max, -fi.max, 1.0, 2.0, 3.0, -1.0, -2.0, -3.0, -100.0, 0.5,
         -0.5, -2.5, 1.5, 8.0, -8.0, 7.99, 8.01, 10.0, 9.99, 1e30, -1e30, 1e-30, -1e-30,
         1e-290, 1e-101, 1e-99, 2.0 ** 52, -(2.0 ** 52) - 0.5, 4e36, 5e36]
    with np.errstate(over="ignore"):
        return np.array(v, dtype)


@pytest.mark.parametrize("name,dtype", CASES)
def test_max_ulp(name, dtype):
    f = OPS[name][0]
    x = _points(name, dtype)
    got = f(ptl.tensor(x)).numpy()
    ref = _reference(name, x.astype(np.float64))
    err = ulps(got, ref, dtype, FLOOR.get(name, 0.0))
    assert err.max() <= BOUNDS[name, dtype], (err.max(), x[np.argmax(err)])


def _expected_specials(name, x):
    """PyTorch's values at the special points (SciPy's where they agree)"""
    ref = _reference(name, x.astype(np.float64))
    if name == "lgamma":   # +inf at the poles and at -inf
        ref[(x <= 0) & (x == np.floor(x))] = np.inf
    if name == "digamma":   # -inf at +0, +inf at -0, nan at the negative integers and -inf
        ref[x == 0] = np.where(np.signbit(x[x == 0]), np.inf, -np.inf)
        ref[(x < 0) & (x == np.floor(x))] = np.nan
    if name == "trigamma":   # +inf at the poles, 0 at +inf, nan at -inf (no limit)
        ref[(x <= 0) & (x == np.floor(x))] = np.inf
        ref[x == np.inf] = 0.0
        ref[x == -np.inf] = np.nan
    return ref


@pytest.mark.parametrize("name,dtype", CASES)
def test_specials(name, dtype):
    f = OPS[name][0]
    x = _specials(dtype)
    if name == "trigamma":   # SciPy's zeta loops a long time below -1e29
        x = x[~(x < -1e20)]
    got = f(ptl.tensor(x)).numpy()
    ref = _expected_specials(name, x)
    exact = ~np.isfinite(ref) | (ref == 0)
    with np.errstate(over="ignore"):
        r = ref[exact].astype(dtype)
    same = (got[exact] == r) | (np.isnan(got[exact]) & np.isnan(r))
    assert same.all(), (x[exact][~same], got[exact][~same])
    err = ulps(got[~exact], ref[~exact], dtype, FLOOR.get(name, 0.0))
    assert err.max(initial=0.0) <= BOUNDS[name, dtype], (err.max(), x[~exact][np.argmax(err)])
    if torch is not None and name in ("lgamma", "digamma", "i1"):
        t = {"lgamma": torch.lgamma, "digamma": torch.digamma,
             "i1": torch.special.i1}[name](torch.from_numpy(x)).numpy()
        keep = ~np.isfinite(t) | (t == 0)
        assert np.array_equal(got[keep], t[keep], equal_nan=True), (x[keep], got[keep])


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tails_strided_0dim_empty(name, dtype):
    f = OPS[name][0]
    x = _points(name, dtype, 1000)[::17][:300]
    full = f(ptl.tensor(x)).numpy()
    for n in range(0, 71):   # every tail length of 4, 8 and 16 lanes
        assert np.array_equal(f(ptl.tensor(x[:n])).numpy(), full[:n], equal_nan=True)
    strided = f(ptl.tensor(x)[::3]).numpy()   # the portable loop
    err = ulps(strided, full[::3].astype(np.float64), dtype, FLOOR.get(name, 1e-300))
    assert err.max(initial=0.0) <= 2 * BOUNDS.get((name, dtype), 8.0), err.max()
    m = ptl.tensor(x[:120].reshape(12, 10)).t()
    assert np.array_equal(f(m).numpy(), f(ptl.tensor(x[:120].reshape(12, 10).T.copy())).numpy(),
                          equal_nan=True)
    z = f(ptl.tensor(x[5]))
    assert z.shape == () and np.array_equal(z.numpy(), full[5], equal_nan=True)
    assert f(ptl.tensor(np.zeros((0, 3), dtype))).shape == (0, 3)


def test_polygamma_orders_and_inplace():
    x = _points("digamma", np.float64, 200)
    t = ptl.tensor(x)
    assert np.array_equal(ptl.polygamma(0, t).numpy(), ptl.digamma(t).numpy(), equal_nan=True)
    with np.errstate(all="ignore"):
        ref = scipy.special.polygamma(2, x)
    got = ptl.polygamma(2, t).numpy()   # no vector loop: the portable one
    ok = np.isfinite(ref)
    assert np.allclose(got[ok], ref[ok], rtol=1e-12)
    out = ptl.tensor(x.copy())
    out.polygamma_(1)
    assert np.array_equal(out.numpy(), ptl.polygamma(1, t).numpy(), equal_nan=True)


@pytest.mark.skipif("PTL_CPU_CAPABILITY" in os.environ,
                    reason="already running with a capability chosen by a parent run")
@pytest.mark.parametrize("cap", ["default", "avx2"])
def test_portable_and_avx2_loops(cap):
    """Reruns this file with the vector loops switched off, and with AVX2 only."""
    rerun_with_capability(__file__, cap)
