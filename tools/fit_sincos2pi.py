"""Fits the polynomials behind float32 sin and cos of 2 pi u (ptl_sincos2pif in
src/aten/scalar_math.h and its vector twin in src/aten/native/vec_math.h, the angle of the
float Box-Muller transform) and prints them with their error.

With u = q / 4 + t, t in [-1/8, 1/8] exact, sin(2 pi t) = S0 t + t s(t^2) with S0 = fl(2 pi)
and s's constant term the rest of 2 pi, and cos(2 pi t) = 1 + t^2 c(t^2); s and c have four
coefficients each.  The fit minimises the largest relative error (Lawson's reweighted least
squares); the report then evaluates both in float32 as the formula does (Horner with one
rounding per step, as an FMA) for every t = k 2^-24 in [-1/8, 1/8], which covers every
float32 uniform u = k 2^-24 in [0, 1): the quadrant only swaps and negates.  Needs NumPy only:
python tools/fit_sincos2pi.py
"""
import math

import numpy as np

TMAX = 0.125
S0 = np.float32(2 * math.pi)
S0_REST = 2 * math.pi - float(S0)


def _lawson(vander, y, weight):
    w = weight.copy()
    for _ in range(100):
        coef, *_ = np.linalg.lstsq(vander * w[:, None], y * w, rcond=None)
        err = np.abs(vander @ coef - y) * weight
        w = w * (err / err.max()) ** 0.3
        w /= w.max()
    return coef


def fit():
    """(s, c): float32 coefficients, the highest power of t^2 first"""
    t = (np.cos(np.linspace(0, math.pi, 8000)) + 1) * (TMAX / 2)
    t = t[t > 1e-6]
    t2 = t * t
    # (sin(2 pi t) - S0 t) / t - S0_REST = s1 t^2 + s2 t^4 + s3 t^6
    ys = (np.sin(2 * math.pi * t) - float(S0) * t) / t - S0_REST
    s = _lawson(np.vander(t2, 4)[:, :3], ys, t / np.sin(2 * math.pi * t))
    c = _lawson(np.vander(t2, 5)[:, :4], np.cos(2 * math.pi * t) - 1, 1 / np.cos(2 * math.pi * t))
    return np.append(np.float32(s), np.float32(S0_REST)), np.float32(c)


def _fma32(a, b, c):
    # a float32 product is exact in float64: one rounding to float64, then to float32
    return (np.float64(a) * np.float64(b) + np.float64(c)).astype(np.float32)


def _horner(coef, x):
    p = np.full(x.shape, coef[0], np.float32)
    for c in coef[1:]:
        p = _fma32(p, x, c)
    return p


def sincos_float32(t, s, c):
    """sin and cos of 2 pi t, t float32 in [-1/8, 1/8], as the float32 formula computes them"""
    t2 = (t * t).astype(np.float32)
    sn = _fma32(t, S0, (t * _horner(s, t2)).astype(np.float32))
    return sn, _fma32(t2, _horner(c, t2), np.float32(1))


def max_ulp(s, c):
    """The largest error in float32 ulps over every t = k 2^-24 in [-1/8, 1/8], sin and cos"""
    t = (np.arange(-(1 << 21), (1 << 21) + 1) * 2.0 ** -24).astype(np.float32)
    sn, cs = sincos_float32(t, s, c)
    worst = []
    for got, ref in ((sn, np.sin(2 * math.pi * t.astype(np.float64))),
                     (cs, np.cos(2 * math.pi * t.astype(np.float64)))):
        nz = ref != 0
        ulp = np.spacing(np.abs(ref[nz]).astype(np.float32)).astype(np.float64)
        assert np.all(got[~nz] == 0)
        worst.append(float(np.max(np.abs(got[nz] - ref[nz]) / ulp)))
    return worst


def main():
    s, c = fit()
    print("S0 = %.9ef" % S0)
    print("s, the highest power first:", ", ".join("%.9ef" % v for v in s))
    print("c, the highest power first:", ", ".join("%.9ef" % v for v in c))
    print("largest error in float32 ulps, sin and cos: %.3f, %.3f" % tuple(max_ulp(s, c)))


if __name__ == "__main__":
    main()
