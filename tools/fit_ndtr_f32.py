"""Fits the float32 tables of float32 ndtr in float lanes (ptl_ndtr_f_tab and
ptl_ndtr_f_exp of src/aten/special_tables.h, Note [Float ndtr] in gaussian_math.h) and
prints them as C with their largest relative errors (the fit with float coefficients, in
float64 arithmetic; the float evaluation adds its roundings).

ndtr(-a) = e^(-a^2/2) Q(a), Q(a) = erfcx(a / sqrt(2)) / 2, a = |x| clamped at 15.
Q on 13 intervals picked by the bits of a + 2 (exponent and two mantissa bits): [0, 1/2),
..., [3/2, 2) of width 1/2, [2, 3), ..., [5, 6), [6, 8), ..., [12, 14) and [14, 15]; on
each Q = c0 + d P(d), d = a - centre, P of degree 7.  The centre is a float near the
interval's middle (0 for the first, Q(0) = 1/2) whose Q(centre) rounds to the float c0
within 1e-10 relative (a rounded c0 would cost up to half an ulp at d = 0, which the fit
cannot absorb); P's coefficients are rounded to float one at a time, from d's first
power, the higher ones refit after each.  e^r = 1 + r + r^2 E(r) on |r| <= 0.3468, E of
degree 5 fitted the same way from 1/2.  The interval fits extend 1e-5 past their ends
(the rounding of a + 2 may move an a across one).  Reference: mpmath at 30 digits (SciPy's
erfcx to pick the centres).  Needs mpmath, NumPy, SciPy: python tools/fit_ndtr_f32.py
"""
import mpmath as mp
import numpy as np
from scipy.special import erfcx

mp.mp.dps = 30
DEG, NPTS, MARGIN = 7, 300, 1e-5
INTERVALS = [(0, .5), (.5, 1), (1, 1.5), (1.5, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 8),
             (8, 10), (10, 12), (12, 14), (14, 15)]
f32 = np.float32


def q_mp(a):
    z = mp.mpf(a) / mp.sqrt(2)
    return mp.exp(z * z) * mp.erfc(z) / 2


def best_centre(lo, hi):
    if lo == 0:
        return 0.0
    c = f32((lo + hi) / 2)
    ks = np.arange(-3000, 3001).astype(np.int32)
    cs = (np.int32(c.view(np.int32)) + ks).view(np.float32).astype(np.float64)
    q = erfcx(cs / np.sqrt(2)) / 2
    err = np.abs(q.astype(np.float32).astype(np.float64) / q - 1)
    best, best_err = None, None
    for i in np.argsort(err)[:20]:
        qm = q_mp(cs[i])
        e = abs(mp.mpf(float(f32(float(qm)))) / qm - 1)
        if best is None or e < best_err:
            best, best_err = float(cs[i]), e
    return best


def fit_rounded(d, y, w, first, deg):
    """float coefficients of d^first .. d^deg for y, one at a time from the lowest"""
    fixed = []
    for k in range(first, deg + 1):
        res = y - sum(cf * d ** (first + j) for j, cf in enumerate(fixed))
        A = np.stack([d ** j for j in range(k, deg + 1)], 1) * w[:, None]
        fixed.append(float(f32(np.linalg.lstsq(A, res * w, rcond=None)[0][0])))
    return fixed


def fit_interval(lo, hi):
    c = best_centre(lo, hi)
    t = np.cos(np.pi * (np.arange(NPTS) + 0.5) / NPTS)
    a = (lo + hi) / 2 + (hi - lo + 2 * MARGIN) / 2 * t
    a = a[a >= 0]
    q = np.array([float(q_mp(v)) for v in a])
    d = a - c
    c0 = float(f32(float(q_mp(c))))
    p = fit_rounded(d, q - c0, 1 / q, 1, DEG)   # c1 .. c7
    approx = c0 + sum(cf * d ** (j + 1) for j, cf in enumerate(p))
    return c, c0, p, float(np.max(np.abs(approx / q - 1)))


def fit_exp():
    t = np.cos(np.pi * (np.arange(400) + 0.5) / 400)
    r = 0.3468 * t
    e = fit_rounded(r, (np.expm1(r) - r) / r ** 2 - 0.5, np.ones_like(r), 1, 5)
    e = [0.5] + e
    got = 1 + r + r * r * sum(cf * r ** j for j, cf in enumerate(e))
    return e, float(np.max(np.abs(got / np.exp(r) - 1)))


def c_float(v):
    t = "%.9g" % float(f32(v))
    return t + ("f" if "." in t or "e" in t else ".0f")


def c_array(name, values, per_line=4):
    lines = [f"PTL_DEVICE_TABLE static const float {name}[{len(values)}] = {{"]
    for i in range(0, len(values), per_line):
        lines.append("    " + ", ".join(c_float(v) for v in values[i:i + per_line]) + ",")
    lines.append("};")
    return "\n".join(lines)


def main():
    rows = [[0.0] * 16 for _ in range(DEG + 2)]   # centre, c7, ..., c1, c0
    worst = 0.0
    for i, (lo, hi) in enumerate(INTERVALS):
        c, c0, p, err = fit_interval(lo, hi)
        worst = max(worst, err)
        rows[0][i] = c
        for k, cf in enumerate(reversed(p)):
            rows[1 + k][i] = cf
        rows[DEG + 1][i] = c0
    e, e_err = fit_exp()
    print(c_array("ptl_ndtr_f_tab", [v for row in rows for v in row]))
    print(c_array("ptl_ndtr_f_exp", list(reversed(e))))
    print(f"/* Q: {worst:.2e} relative; e^r: {e_err:.2e} */")


if __name__ == "__main__":
    main()
