"""Fits the polynomials behind float64 (and float32) Ai (the tables of
src/aten/special_tables.h, Note [Fast Airy Ai] in bessel_math.h) and prints them as C
with their largest errors in ulps of max(|Ai(x)|, |x|^(-1/4) / sqrt(pi) below -1) (float64
Horner, 100 points an interval).

-12 <= x < 2: the 28 intervals [-12 + i/2, -12 + (i + 1)/2), each the degree-15 Chebyshev
interpolant (40-digit mpmath) as powers of x - its centre.  2 <= x < 128: e^zeta Ai(x),
zeta = 2/3 x^(3/2), on the 24 intervals [2^k (1 + j/4), 2^k (1 + (j + 1)/4)), k = 1..6
(row 4 (k - 1) + j), degree 13 in x - the centre.  x < -12: Ai(-z) = (cos(zeta - pi/4) P +
sin(zeta - pi/4) Q) / (sqrt(pi) z^(1/4)) (DLMF 9.7.9), P = sum_k (-1)^k u_2k / zeta^2k,
Q = sum_k (-1)^k u_(2k+1) / zeta^(2k+1), u_k = u_(k-1) (6k - 5)(6k - 3)(6k - 1) /
((2k - 1) 216 k), NASYM terms each (the next below 1e-18 at zeta = 27.7, x = -12).
Uses fit_bessel_jy.py's interpolation; needs mpmath and NumPy: python tools/fit_airy.py
"""
import mpmath as mp
import numpy as np

from fit_bessel_jy import c_array, cheb_monomial, horner

mp.mp.dps = 40
MID_DEG, POS_DEG, NASYM = 15, 13, 12


def pos(x):
    return mp.airyai(x) * mp.exp(2 * x ** mp.mpf(1.5) / 3)


def asym():
    u, p, q = mp.mpf(1), [], []
    for k in range(2 * NASYM):
        if k:
            u *= mp.mpf((6 * k - 5) * (6 * k - 3) * (6 * k - 1)) / ((2 * k - 1) * 216 * k)
        sign = (-1) ** (k // 2)
        (p if k % 2 == 0 else q).append(sign * u)
    zeta = 2 * mp.mpf(12) ** 1.5 / 3
    nxt = u * (6 * 2 * NASYM - 5) * (6 * 2 * NASYM - 3) * (6 * 2 * NASYM - 1) / (
        (4 * NASYM - 1) * 216 * 2 * NASYM) / zeta ** (2 * NASYM)
    return p, q, float(nxt)


def main():
    out, report = [], []
    flat, w = [], 0.0
    for i in range(28):
        lo = -12 + i / 2
        co = [float(v) for v in cheb_monomial(mp.airyai, lo, lo + 0.5, MID_DEG)]
        flat += co
        for x in np.linspace(lo, lo + 0.5, 100):
            r = float(mp.airyai(mp.mpf(x)))
            env = abs(x) ** -0.25 / np.sqrt(np.pi) if x < -1 else 0.0
            w = max(w, abs(horner(co, x - (lo + 0.25)) - r) / np.spacing(max(abs(r), env)))
    out.append(c_array("ptl_airy_mid_tab", flat))
    report.append(f"Ai on [-12, 2): {w:.2f} ulps")
    flat, w = [], 0.0
    for k in range(1, 7):
        for j in range(4):
            lo = 2 ** k * (1 + j / 4)
            hi = lo + 2 ** k / 4
            co = [float(v) for v in cheb_monomial(pos, lo, hi, POS_DEG)]
            flat += co
            for x in np.linspace(lo, hi, 100):
                r = float(pos(mp.mpf(x)))
                w = max(w, abs(horner(co, x - (lo + hi) / 2) - r) / np.spacing(r))
    out.append(c_array("ptl_airy_pos_tab", flat))
    report.append(f"e^zeta Ai on [2, 128): {w:.2f} ulps")
    p, q, nxt = asym()
    out.append(c_array("ptl_airy_p_asym", p))
    out.append(c_array("ptl_airy_q_asym", q))
    report.append(f"first omitted asymptotic term at x = -12: {nxt:.2e}")
    print("\n".join(out))
    print("\n".join("/* " + r + " */" for r in report))


if __name__ == "__main__":
    main()
