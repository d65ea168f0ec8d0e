"""Fits unary.c's i1e_small_coef (float32 special.i1e in double lanes, DEFINE_UNARY_VEC_BESSEL)
and prints it as C with its largest relative error: i1e(x) / x = e^-x I1(x) / x on [0, 8] as
a polynomial in u = x / 4 - 1, the highest power first, a Chebyshev interpolant of degree 22
converted to powers and checked by Horner's rule in float64 on 20001 points.  Reference:
mpmath at 30 digits.  Needs mpmath and NumPy: python tools/fit_bessel_scaled.py
"""
import textwrap

import mpmath as mp
import numpy as np
from numpy.polynomial import chebyshev

mp.mp.dps = 30
DEG = 22


def i1e_over_x(x):
    return np.array([float(mp.besseli(1, v) * mp.exp(-v) / v) if v != 0 else 0.5
                     for v in np.ravel(x).astype(float)])


def main():
    coef = chebyshev.cheb2poly(chebyshev.chebinterpolate(lambda u: i1e_over_x(4 * u + 4), DEG))
    xs = np.linspace(0, 8, 20001)
    u, y = xs / 4 - 1, np.zeros_like(xs)
    for c in coef[::-1]:
        y = y * u + c
    err = np.abs(y / i1e_over_x(xs) - 1).max()
    body = ", ".join(repr(float(c)) for c in coef[::-1])
    print(f"/* ... degree {DEG}, {err:.1e} relative */")
    print("static const double i1e_small_coef[] = {")
    print(textwrap.fill(body, 92, initial_indent="    ", subsequent_indent="    ") + "};")


if __name__ == "__main__":
    main()
