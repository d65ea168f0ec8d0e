"""Fits the polynomials of float64 asin/acos and atan/atan2 in vector lanes (asin_d_coef and
atan_d_coef in src/aten/native/unary_f8_trig.h, Note [Vector float64 asin, acos, atan, asinh,
acosh]) and prints them, highest power first, with their error.

P(t) = (asin(sqrt t) - sqrt t) / t^(3/2) and Q(t) = (atan(sqrt t) - sqrt t) / t^(3/2) on
t in [0, 1/4], each a degree-12 Chebyshev interpolant (mpmath.chebyfit at 50 digits); the
error printed is that of the coefficients rounded to doubles, on 4001 points.  Needs mpmath:
python tools/fit_asin_atan_f64.py
"""
import mpmath as mp

mp.mp.dps = 50


def p_asin(t):
    if t == 0:
        return mp.mpf(1) / 6
    s = mp.sqrt(t)
    return (mp.asin(s) - s) / (t * s)


def q_atan(t):
    if t == 0:
        return -mp.mpf(1) / 3
    s = mp.sqrt(t)
    return (mp.atan(s) - s) / (t * s)


def main():
    for name, f in (("asin_d_coef", p_asin), ("atan_d_coef", q_atan)):
        coef = [float(c) for c in mp.chebyfit(f, [0, 0.25], 13)]
        err = max(abs(mp.polyval([mp.mpf(c) for c in coef], t) - f(t))
                  for t in (mp.mpf(i) / 16000 for i in range(4001)))
        print(f"{name} (max error {mp.nstr(err, 3)}):")
        print(", ".join(repr(c) for c in coef))


if __name__ == "__main__":
    main()
