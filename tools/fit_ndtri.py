"""Fits the polynomials behind float64 (and float32) ndtri (the table ptl_ndtri_tab
of src/aten/special_tables.h, Note [Fast ndtri] in gaussian_math.h) and prints them as C with their largest errors in ulps (float64 Horner, at 80
points of each interval).

|p - 1/2| <= 1/4: ndtri(1/2 + q) = q G(q^2), G even and analytic for q^2 < 1/4, the
degree-16 Chebyshev interpolant on q^2 in [0, 1/16] as powers of q^2 - 1/32.
p < 1/4: ndtri(p) = H(r), r = sqrt(-2 log p) in (1.66, 38.6], on the unit intervals
[3/2 + i, 5/2 + i), i = 0..37, each the degree-17 interpolant as powers of r - 2 - i.
One table holds the tail's 38 rows of 18 coefficients and G's as row 38 (padded with a
0), so that the C code picks a row without a branch.  The reference is 40-digit mpmath (Newton steps on log ncdf(x) = log p).  Uses
fit_bessel_jy.py's interpolation; needs mpmath and NumPy: python tools/fit_ndtri.py
"""
import mpmath as mp
import numpy as np

from fit_bessel_jy import c_array, cheb_monomial, horner

mp.mp.dps = 40
MID_DEG, TAIL_DEG, TAIL_N = 16, 17, 38


def ndtri_mp(p):
    x = mp.mpf(0)
    if p < 0.5:
        x = -mp.sqrt(-2 * mp.log(p))
    lp = mp.log(p)
    for _ in range(200):
        c = mp.ncdf(x)
        step = (mp.log(c) - lp) * c / mp.npdf(x)
        x -= step
        if abs(step) < mp.mpf(10) ** -37 * (1 + abs(x)):
            break
    return x


def tail(r):
    return ndtri_mp(mp.exp(-r * r / 2))


def mid(s):
    if s == 0:
        return mp.sqrt(2 * mp.pi)
    q = mp.sqrt(s)
    return ndtri_mp(mp.mpf(0.5) + q) / q


def worst(f, co, a, b, centre):
    w = 0.0
    for v in np.linspace(a, b, 80):
        got = horner(co, v - centre)
        ref = float(f(mp.mpf(v)))
        w = max(w, abs(got - ref) / np.spacing(abs(ref)))
    return w


def main():
    co = [float(v) for v in cheb_monomial(mid, 0, 0.0625, MID_DEG)]
    report = [f"mid: {worst(mid, co, 1e-12, 0.0625, 0.03125):.2f} ulps"]
    flat, w = [], 0.0
    for i in range(TAIL_N):
        a = 1.5 + i
        c = [float(v) for v in cheb_monomial(tail, a, a + 1, TAIL_DEG)]
        flat += c
        w = max(w, worst(tail, c, max(a, 1.66), a + 1, a + 0.5))
    out = [c_array("ptl_ndtri_tab", flat + co + [0.0])]
    report.append(f"tail: {w:.2f} ulps")
    print("\n".join(out))
    print("\n".join("/* " + r + " */" for r in report))


if __name__ == "__main__":
    main()
