"""Fits the polynomials of float32 sin and cos in vector lanes (ptl_vm_sinf_coef and
ptl_vm_cosf_coef in src/aten/native/vec_math.h, Note [Vector float32 sin, cos]) and prints them,
highest power first, with their error, and the float split C1 + C2 + C3 of pi/2.

P(s) = (sin r - r) / r^3 (degree 3) and Q(s) = (cos r - 1 + r^2/2) / r^4 (degree 2) in s = r^2
on r in [0, 0.82], each fitted for the relative error of sin and cos on 4000 Chebyshev points
(Lawson's iteration of weighted least squares, which tends to the minimax fit), the
coefficients rounded to float one at a time from the lowest power up, the rest refitted each
time.  Needs mpmath and NumPy:  python tools/fit_sincos_f32.py
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 40
R = 0.82


def lawson(a, t, w, steps=200):
    """Coefficients c minimizing max |(a c - t) w|, approximately."""
    v = np.ones(len(t))
    for _ in range(steps):
        sw = w * np.sqrt(v)
        c = np.linalg.lstsq(a * sw[:, None], t * sw, rcond=None)[0]
        v = v * np.abs((a @ c - t) * w)
        v /= v.sum()
    return c


def fit(s, t, w, degree):
    """float coefficients of a degree-`degree` polynomial in s, highest power first, and the
    max weighted error."""
    low = []
    for k in range(degree + 1):
        rest = t - sum(c * s ** i for i, c in enumerate(low))
        a = np.vander(s, degree + 1 - k) * (s ** k)[:, None]
        low.append(float(np.float32(lawson(a, rest, w)[-1])))
    c = np.array(low[::-1])
    return c, np.max(np.abs((np.vander(s, degree + 1) @ c - t) * w))


def main():
    n = 4000
    r = (R / 2) * (1 - np.cos(np.pi * (np.arange(n) + 0.5) / n))
    r = r[r > 1e-3]
    m = [mp.mpf(float(v)) for v in r]
    sin = np.array([float(mp.sin(v)) for v in m])
    cos = np.array([float(mp.cos(v)) for v in m])
    p = np.array([float((mp.sin(v) - v) / v ** 3) for v in m])
    q = np.array([float((mp.cos(v) - 1 + v ** 2 / 2) / v ** 4) for v in m])
    for name, t, w, degree in (("ptl_vm_sinf_coef", p, r ** 3 / sin, 3),
                               ("ptl_vm_cosf_coef", q, r ** 4 / cos, 2)):
        c, err = fit(r * r, t, w, degree)
        print(f"{name} = {{{', '.join('%.9ef' % v for v in c)}}}  "
              f"/* relative error {err:.2e} */")
    half_pi = mp.pi / 2
    parts = []
    for _ in range(3):
        parts.append(float(np.float32(float(half_pi - mp.fsum(parts)))))
    print("C1..C3 =", ", ".join(v.hex() for v in parts),
          f" /* left: {float(half_pi - mp.fsum(parts)):.2e} */")


if __name__ == "__main__":
    main()
