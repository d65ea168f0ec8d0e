"""Fits the polynomials behind float64 (and float32) K0, K1, e^x K0, e^x K1 (the tables of
src/aten/special_tables.h, Note [Fast modified Bessel functions K] in bessel_math.h) and prints them as C with their largest relative errors in ulps (float64
Horner, 200 points an interval).

1 <= x < 32: e^x K_n(x) on the 20 intervals [2^k (1 + j/4), 2^k (1 + (j + 1)/4)), k = 0..4,
j = 0..3 (row 4 k + j; the exponent and the top two mantissa bits pick it), the degree-DEG
Chebyshev interpolant (40-digit mpmath) as powers of d = x - the interval's centre (exact).
x >= 32: sqrt(x) e^x K_n(x) = sum_k c_k / x^k, Hankel's (DLMF 10.40.2)
c_k = sqrt(pi/2) prod_(j<=k) (4 n^2 - (2j - 1)^2) / (k! 8^k), NASYM terms (the next is below
1e-18 of the sum at x = 32).  x < 1: K0 = A(z) - log(x) I0(z), K1 = 1/x + x (log(x) C(z) +
D(z)), z = x^2, from DLMF 10.31.1-2 (I0 = sum (z/4)^k / (k!)^2, C = sum (z/4)^k /
(2 k! (k+1)!), A = sum (log 2 - gamma + H_k) (z/4)^k / (k!)^2, D = sum ((gamma - log 2) /
2 - (H_k + H_(k+1)) / 4) (z/4)^k / (k! (k+1)!)), NSER terms each.  Needs mpmath and NumPy:
python tools/fit_bessel_k.py
"""
import mpmath as mp
import numpy as np

from fit_bessel_jy import c_array, cheb_monomial, horner

mp.mp.dps = 40
DEG, NASYM, NSER = 13, 18, 12


def scaled(n):
    return lambda x: mp.besselk(n, x) * mp.exp(x)


def intervals():
    for k in range(5):
        for j in range(4):
            lo = 2 ** k * (1 + j / 4)
            yield lo, lo + 2 ** k / 4


def series():
    a, i0, c, d = [], [], [], []
    g, l2 = mp.euler, mp.log(2)
    for k in range(NSER):
        hk = mp.fsum(mp.mpf(1) / j for j in range(1, k + 1))
        hk1 = hk + mp.mpf(1) / (k + 1)
        q = mp.mpf(0.25) ** k
        f2 = mp.factorial(k) ** 2
        f11 = mp.factorial(k) * mp.factorial(k + 1)
        i0.append(q / f2)
        a.append((l2 - g + hk) * q / f2)
        c.append(q / (2 * f11))
        d.append(((g - l2) / 2 - (hk + hk1) / 4) * q / f11)
    return a, i0, c, d


def asym(n):
    out, t = [], mp.sqrt(mp.pi / 2)
    for k in range(NASYM):
        if k:
            t *= (4 * n * n - (2 * k - 1) ** 2) / (mp.mpf(k) * 8)
        out.append(t)
    return out


def main():
    out, report = [], []
    for n in (0, 1):
        flat, w = [], 0.0
        for lo, hi in intervals():
            co = [float(v) for v in cheb_monomial(scaled(n), lo, hi, DEG)]
            flat += co
            c = (lo + hi) / 2
            for x in np.linspace(lo, hi, 200):
                r = float(scaled(n)(mp.mpf(x)))
                w = max(w, abs(horner(co, x - c) - r) / np.spacing(r))
        out.append(c_array(f"ptl_bessel_k{n}_tab", flat))
        report.append(f"e^x K{n} on [1, 32): {w:.2f} ulps")
        out.append(c_array(f"ptl_bessel_k{n}_asym", asym(n)))
    for name, v in zip(("a", "i0", "c", "d"), series()):
        out.append(c_array(f"ptl_bessel_k_ser_{name}", v))
    print("\n".join(out))
    print("\n".join("/* " + r + " */" for r in report))


if __name__ == "__main__":
    main()
