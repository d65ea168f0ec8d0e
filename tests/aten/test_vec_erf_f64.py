"""float64 erf, erfc and erfinv in vector lanes (Note [Vector float64 erf, erfc, erfinv] in
unary_f8_erf.h): the ulp error against mpmath on random points in every range the formulas
split (and across each split), at the splits themselves and their neighbours, the special
values exactly, every tail length, 0-dim, size-0, strided (the portable loops), in-place and
out= inputs.  The file reruns with the portable loops and with AVX2 only
(PTL_CPU_CAPABILITY=default, avx2)."""
import math
import os
import subprocess
import sys

import mpmath
import numpy as np
import pytest
import scipy.special

import pytorchlite as ptl
from helpers import (ROOT, assert_inplace_and_out_match, num_threads, reference_once,
                     rerun_with_capability, same_each, skip_native_capability)

# ulp: the vector loops' (measured at most 1.45, erfc near 8) and the portable loops' (glibc's
# erf and erfc, ptl_erfinv_d; PTL_CPU_CAPABILITY=default and strided data)
BOUND = 2.0
PORTABLE_BOUND = {"erf": 2.0, "erfc": 5.0, "erfinv": 3.0}


def _bound(name, strided=False):
    portable = strided or os.environ.get("PTL_CPU_CAPABILITY") == "default"
    return PORTABLE_BOUND[name] if portable else BOUND


OPS = ["erf", "erfc", "erfinv"]
# erf: the odd polynomial (|x| < 1), the 16 intervals of the direct erfc table on [1, 6),
# above 6 (1 exactly), tiny
# erfc: 1 - erf below 1/2 (the 1/2 - form from 1/4 on), e^(-x^2) erfcx(x) on the 16 intervals
# of [0.5, 8) and by 1 / x^2 on [8, 27.5] (subnormal results from 26.55, 0 past 27.23),
# 2 - erfc(-x) below -1/2
# erfinv: its four pieces, in w = -log(1 - y^2) below 1.5 and 6.25 and in sqrt(w) below 4
# and from 4 on (y = 0.8823, 0.99781, 0.99999989), each split crossed, near +-1
RANGES = {
    "erf": [(-1, 1), (-1e-300, 1e-300), (-1e-8, 1e-8), (0.99, 1.01), (1, 6), (-6, -1),
            (1.9, 2.1), (5.5, 6.1), (6, 40)],
    "erfc": [(-0.5, 0.5), (0.24, 0.26), (0.49, 0.51), (0.5, 8), (0.5, 1), (1, 2), (2, 4),
             (4, 8), (7.9, 8.1), (8, 27.5), (26, 27.3), (-8, -0.5), (-1e-9, 1e-9)],
    "erfinv": [(-1, 1), (-1e-3, 1e-3), (0.83, 0.86), (0.87, 0.89), (0.995, 0.998), (0.99, 1),
               (-1, -0.99), (0.9999998, 0.99999999)],
}
# points near +-1 in erfinv: 1 - 10^-k u for u uniform in (0, 1)
ERFINV_NEAR_ONE = [4, 7, 10, 12, 13, 14, 15]
SPLITS = {
    "erf": [1.0, 6.0] + [1 + i * 5 / 16 for i in range(17)],
    "erfc": [0.25, 0.5, 8.0, 27.5, 26.55, 27.2] + [0.5 * 2 ** (k + j / 4) for k in range(4)
                                                   for j in range(4)],
    # the pieces' ends w = 1.5, 6.25, 16; the splits of the Halley step this replaced
    "erfinv": [math.sqrt(-math.expm1(-w)) for w in (1.5, 6.25, 16.0)] +
              [0.8427007929497149, math.sqrt(-math.expm1(-5.0)), 1 - 1.5e-12, 0.5],
}


def _mp(name, v):
    if name == "erf":
        return mpmath.erf(v)
    if name == "erfc":
        return mpmath.erfc(v)
    # two Newton steps on erf from SciPy's value: exact to far below an ulp
    x = mpmath.mpf(float(scipy.special.erfinv(float(v))))
    for _ in range(2):
        x -= (mpmath.erf(x) - v) / (2 / mpmath.sqrt(mpmath.pi) * mpmath.exp(-x * x))
    return x


def _ulp_units(name, x):
    """(e, hi, lo) per point: the reference r (mpmath, 40 digits) is (hi + lo) * 2^e, with 2^e
    its ulp (the subnormal ulp below 2^-1022) and hi + lo a double-double, exact to far below
    an ulp; e = -1074 and hi = lo = 0 where r is 0"""
    out = np.zeros((3, len(x)))
    out[0] = -1074
    with mpmath.workdps(40):
        for i, v in enumerate(x):
            r = _mp(name, mpmath.mpf(float(v)))
            if r == 0:
                continue
            e = max(int(mpmath.floor(mpmath.log(abs(r), 2))) - 52, -1074)
            units = r / mpmath.mpf(2) ** e
            out[0, i], out[1, i] = e, float(units)
            out[2, i] = float(units - out[1, i])
    return out


def _ulps(got, x, name):
    """|got - ref| in ulps of ref (the subnormal ulp below 2^-1022), ref from mpmath; the
    references are computed once per session (helpers.reference_once: the capability reruns
    read them)"""
    e, hi, lo = reference_once("erf_f64_ulp_units/" + name, lambda v: _ulp_units(name, v),
                               np.asarray(x, dtype=np.float64))
    with np.errstate(over="ignore"):
        return np.abs((np.ldexp(np.asarray(got, dtype=np.float64), (-e).astype(int)) - hi)
                      - lo)


def _points(name, n):
    rng = np.random.default_rng(17)
    pts = [rng.uniform(a, b, n) for a, b in RANGES[name]]
    if name == "erfinv":
        pts += [1 - 10.0 ** -k * rng.uniform(0, 1, n // 4) for k in ERFINV_NEAR_ONE]
        pts = [p[np.abs(p) < 1] for p in pts]
    return np.concatenate(pts)


@pytest.mark.parametrize("name", OPS)
def test_max_ulp_per_range(name):
    x = _points(name, 1500 if name == "erfinv" else 3000)
    got = getattr(ptl, name)(ptl.tensor(x)).numpy()
    err = _ulps(got, x, name)
    assert err.max() <= _bound(name), (err.max(), x[np.argmax(err)])


@pytest.mark.parametrize("name", OPS)
def test_splits_and_neighbours(name):
    s = np.array(SPLITS[name])
    s = np.concatenate([s, -s])
    x = np.concatenate([s, np.nextafter(s, np.inf), np.nextafter(s, -np.inf)])
    x = np.concatenate([np.nextafter(x, np.inf), np.nextafter(x, -np.inf), x])
    if name == "erfinv":
        x = x[np.abs(x) < 1]
    got = getattr(ptl, name)(ptl.tensor(x)).numpy()
    err = _ulps(got, x, name)
    assert err.max() <= _bound(name), (err.max(), x[np.argmax(err)])


INF, NAN = np.inf, np.nan
SPECIALS = {
    "erf": [(0.0, 0.0), (-0.0, -0.0), (INF, 1.0), (-INF, -1.0), (NAN, NAN), (6.0, 1.0),
            (-6.0, -1.0), (1e300, 1.0), (-1e300, -1.0), (5e-324, 5e-324), (-5e-324, -5e-324)],
    "erfc": [(0.0, 1.0), (-0.0, 1.0), (INF, 0.0), (-INF, 2.0), (NAN, NAN), (27.3, 0.0),
             (1e300, 0.0), (-1e300, 2.0), (-6.0, 2.0), (5e-324, 1.0), (28.0, 0.0)],
    "erfinv": [(0.0, 0.0), (-0.0, -0.0), (1.0, INF), (-1.0, -INF), (NAN, NAN),
               (1.0000000000000002, NAN), (-1.0000000000000002, NAN), (2.0, NAN),
               (INF, NAN), (-INF, NAN), (5e-324, 5e-324), (-5e-324, -5e-324)],
}


@pytest.mark.parametrize("name", OPS)
def test_special_values(name):
    x, ref = (np.array(v) for v in zip(*SPECIALS[name]))
    # each alone (the tail's masked lanes) and in one vector with ordinary values
    mix = np.concatenate([x, np.linspace(-0.9, 0.9, 7)])
    for data in [x, mix]:
        got = getattr(ptl, name)(ptl.tensor(data)).numpy()[:len(x)]
        assert same_each(got, ref).all(), (x, got, ref)
    for v, r in zip(x, ref):
        assert same_each(getattr(ptl, name)(ptl.tensor([v])).numpy(), np.array([r])).all(), v


@pytest.mark.parametrize("name", OPS)
def test_every_tail_length_and_shapes(name):
    x = _points(name, 60)[::7][:70]
    whole = getattr(ptl, name)(ptl.tensor(x)).numpy()
    for n in list(range(18)) + list(range(18, len(x) + 1, 5)):
        part = getattr(ptl, name)(ptl.tensor(x[:n])).numpy()
        assert np.array_equal(part, whole[:n]), n
        assert np.array_equal(getattr(ptl, name)(ptl.tensor(x[len(x) - n:])).numpy(),
                              whole[len(x) - n:]), n
    assert getattr(ptl, name)(ptl.tensor(np.float64(0.25))).shape == ()
    assert getattr(ptl, name)(ptl.tensor(np.zeros(0))).shape == (0,)
    # strided data takes the portable loop (libm's erf and erfc, ptl_erfinv_d)
    t = ptl.tensor(np.repeat(x, 2))[::2]
    assert _ulps(getattr(ptl, name)(t).numpy(), x, name).max() <= _bound(name, True)
    # in place and out= reach the same loops
    assert_inplace_and_out_match(name, x, whole)


@pytest.mark.parametrize("name", OPS)
def test_large_random_against_libm(name):
    """1e5 points over the whole domain against glibc's erf and erfc and SciPy's erfinv;
    where they differ by more than an ulp (glibc's erfc is off by up to 4 ulp near 1.25),
    against mpmath"""
    rng = np.random.default_rng(3)
    if name == "erfinv":
        x = np.concatenate([rng.uniform(-1, 1, 60000), np.tanh(rng.standard_normal(40000) * 3)])
    else:
        x = np.concatenate([rng.standard_normal(60000) * 3, rng.uniform(-30, 30, 40000)])
    got = getattr(ptl, name)(ptl.tensor(x)).numpy()
    with np.errstate(all="ignore"):
        ref = (scipy.special.erfinv(x) if name == "erfinv"
               else np.vectorize(getattr(math, name), otypes=[np.float64])(x))
        far = ~(np.abs(got - ref) <= np.spacing(np.abs(ref))) & ~same_each(got, ref)
    assert far.sum() < 5000
    assert _ulps(got[far], x[far], name).max(initial=0) <= _bound(name)


def _mixed_points():
    rng = np.random.default_rng(23)
    x = np.concatenate([rng.standard_normal(40000) * 4, rng.uniform(-30, 30, 20000),
                        np.tanh(rng.standard_normal(30000) * 3), rng.uniform(-1, 1, 30000),
                        1 - 10.0 ** -rng.uniform(0, 16, 5000), [0.0, -0.0, np.inf, -np.inf,
                                                                 np.nan, 5e-324, 1.0, -1.0]])
    rng.shuffle(x)
    return x


@pytest.mark.parametrize("name", OPS)
def test_results_do_not_depend_on_the_thread_count(name):
    """the same bits on 1 and 2 threads: a 2-thread run's chunk edges (from PTL_GRAIN_SIZE =
    32768 elements on) fall inside vectors, and every element still takes the same formula"""
    x = _mixed_points()
    sizes = (len(x), 32767, 32768, 32769)
    with num_threads(1):
        one = [getattr(ptl, name)(ptl.tensor(x[:n])).numpy() for n in sizes]
    with num_threads(2):
        two = [getattr(ptl, name)(ptl.tensor(x[:n])).numpy() for n in sizes]
    for a, b in zip(one, two):
        assert np.array_equal(a.view(np.uint64), b.view(np.uint64))


SAME_BITS = r"""
import sys, numpy as np, pytorchlite as ptl
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/.."]   # this file's folder and helpers'
from test_vec_erf_f64 import _mixed_points
x = _mixed_points()
for name in ("erf", "erfc", "erfinv"):
    sys.stdout.buffer.write(getattr(ptl, name)(ptl.tensor(x)).numpy().tobytes())
"""


@pytest.mark.skipif("PTL_CPU_CAPABILITY" in os.environ,
                    reason="already running with a capability chosen by a parent run")
def test_avx2_and_avx512_give_the_same_bits():
    """Note [Vector float64 erf, erfc, erfinv]: the two widths pick the same coefficients
    (four loads or a permute) and run the same operations"""
    skip_native_capability("avx2")
    here = os.path.dirname(os.path.abspath(__file__))
    runs = []
    for cap in ("avx2", None):
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.pop("PTL_CPU_CAPABILITY", None)
        if cap is not None:
            env["PTL_CPU_CAPABILITY"] = cap
        r = subprocess.run([sys.executable, "-c", SAME_BITS, here], env=env,
                           capture_output=True, check=True)
        runs.append(r.stdout)
    assert len(runs[0]) == 3 * 8 * len(_mixed_points())
    assert runs[0] == runs[1]


@pytest.mark.skipif("PTL_CPU_CAPABILITY" in os.environ,
                    reason="already running with a capability chosen by a parent run")
@pytest.mark.parametrize("cap", ["default", "avx2"])
def test_portable_and_avx2_loops(cap):
    """Reruns this file with the vector loops switched off, and with AVX2 only."""
    rerun_with_capability(__file__, cap)
