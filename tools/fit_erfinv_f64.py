"""Fits the polynomials of the float64 vector erfinv (ptl_erfinv_direct_coef in
src/aten/native/unary_f8_erf.h, Note [Vector float64 erf, erfc, erfinv]) and prints them as
C with their largest fit errors in ulps (the coefficients rounded to doubles, evaluated
exactly, at 400 points of each interval).

erfinv(a) = a F(w), w = -log((1 - a)(1 + a)), F analytic in w.  Four pieces: w in [0, 1.5]
as powers of w; w in [1.5, 6.25] as powers of w - 3.875; r = sqrt(w) in [2.5, 4] as powers of
r - 3.25; r in [3.99, 6.01] (a up to 1 - 2^-53) as powers of r - 5.  Each piece's constant term is printed as a double
plus its rest, the other terms highest power first.  The reference is 40-digit mpmath.
Uses fit_bessel_jy.py's interpolation; needs mpmath and NumPy:
python tools/fit_erfinv_f64.py
"""
import mpmath as mp
import numpy as np

from fit_bessel_jy import cheb_monomial

mp.mp.dps = 40
# (name, variable, lo, hi, centre, degree): the variable is w or sqrt(w)
PIECES = [("w", 0.0, 1.5, 0.0, 14), ("w", 1.5, 6.25, 3.875, 20), ("r", 2.5, 4.0, 3.25, 20),
          ("r", 3.99, 6.01, 5.0, 20)]


def f_of_w(w):
    if w == 0:
        return mp.sqrt(mp.pi) / 2
    a = mp.sqrt(-mp.expm1(-w))
    return mp.erfinv(a) / a


def fit(var, lo, hi, centre, deg):
    """f and its interpolant on [lo, hi] as powers of the variable less centre"""
    f = f_of_w if var == "w" else (lambda r: f_of_w(r * r))
    m = cheb_monomial(f, lo, hi, deg)
    d = mp.mpf(centre) - (mp.mpf(lo) + hi) / 2   # x - mid = (x - centre) + d
    return f, [mp.fsum(m[i] * mp.binomial(i, j) * d ** (i - j) for i in range(j, len(m)))
               for j in range(len(m))]


def worst(f, co, lo, hi, centre):
    """largest |sum co[i] t^i - f| in ulps of f, the co as doubles, summed exactly"""
    cd = [mp.mpf(float(v)) for v in co]
    c0lo = mp.mpf(float(co[0] - cd[0]))
    w = 0.0
    for v in np.linspace(lo, hi, 400):
        t = mp.mpf(v) - centre
        got = mp.fsum(c * t ** i for i, c in enumerate(cd)) + c0lo
        ref = f(mp.mpf(v))
        w = max(w, float(abs(got - ref) / mp.mpf(np.spacing(float(ref)))))
    return w


def main():
    rows = []
    for var, lo, hi, centre, deg in PIECES:
        f, co = fit(var, lo, hi, centre, deg)
        c0 = float(co[0])
        rest = float(co[0] - c0)
        print(f"/* {var} in [{lo}, {hi}], powers of {var} - {centre}, degree {deg}: "
              f"{worst(f, co, lo, hi, centre):.3f} ulps */")
        rows.append([c0, rest] + [float(v) for v in co[:0:-1]])
    for r in rows:
        print("{" + ", ".join(repr(v) for v in r) + "},")


if __name__ == "__main__":
    main()
