"""Fits the polynomial behind float32 gelu's normal CDF (Note [Vector activations] in
src/aten/native/activation.c) and prints it with its error.

For a = |x| / sqrt(2), erfc(a) = e^(-a^2) erfcx(a), and erfcx is smooth enough that
0.5 erfcx(a) = R(u), u = 1 / (1 + P |x|), is a low-degree polynomial on the range float gelu
needs (|x| <= XMAX; below -XMAX the kernel falls back to double).  The fit minimises the
largest relative error (Lawson's reweighted least squares); the report then evaluates R in
float32 exactly as the kernel does (u rounded, Horner with one rounding per step) and
compares with float64.  Needs NumPy only:  python tools/fit_gelu_cdf.py
"""
import math

import numpy as np

P = np.float32(0.45 / math.sqrt(2))
DEGREE = 7
XMAX = 5.6


def half_erfcx(x):
    a = x / math.sqrt(2)
    return np.array([0.5 * math.erfc(v) * math.exp(v * v) for v in a])


def u_of(x):
    x = np.asarray(x, np.float32)
    return (np.float32(1) / (P * x + np.float32(1))).astype(np.float32)


def fit():
    x = (np.cos(np.linspace(0, math.pi, 6000)) + 1) * (XMAX / 2)
    y = half_erfcx(x)
    vander = np.vander(u_of(x).astype(np.float64), DEGREE + 1)
    w = 1 / y
    for _ in range(80):
        coef, *_ = np.linalg.lstsq(vander * w[:, None], y * w, rcond=None)
        err = np.abs(vander @ coef - y) / y
        w = w * (err / err.max()) ** 0.3
        w /= w.max()
    return coef.astype(np.float32)


def horner_float32(coef, u):
    r = np.full(u.shape, coef[0], np.float32)
    for c in coef[1:]:
        # a float32 product is exact in float64, so this rounds once, as an FMA does
        r = (r.astype(np.float64) * u + np.float64(c)).astype(np.float32)
    return r


def main():
    coef = fit()
    x = np.linspace(0, XMAX, 400001).astype(np.float32)
    got = horner_float32(coef, u_of(x).astype(np.float64))
    rel = np.abs(got / half_erfcx(x.astype(np.float64)) - 1)
    print("P = %.9ef" % P)
    print("coefficients, highest power first:")
    print(",\n".join("%.9ef" % c for c in coef))
    print("largest relative error in float32 on [0, %g]: %.2e" % (XMAX, rel.max()))
    far = np.linspace(XMAX, 12, 1001).astype(np.float32)
    ratio = horner_float32(coef, u_of(far).astype(np.float64)) / half_erfcx(far.astype(np.float64))
    print("R / (erfcx / 2) on [%g, 12] (only bounded there): %.3f to %.3f"
          % (XMAX, ratio.min(), ratio.max()))


if __name__ == "__main__":
    main()
