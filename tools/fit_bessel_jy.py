"""Fits the piecewise polynomials behind float64 (and float32) J0, J1, Y0, Y1 on
1 <= |x| < 25 (the tables of src/aten/special_tables.h, Note [Fast Bessel functions of real
argument] in src/aten/bessel_math.h) and prints them as C, with the series coefficients of |x| < 1 and of Hankel's
expansion at |x| >= 25, then the largest error of each table in ulps of
max(|f(x)|, sqrt(2 / (pi x))) at 400 points of its interval (float64 Horner, as the C
code evaluates).

Each unit interval [i, i + 1) carries the degree-13 Chebyshev interpolant (40-digit mpmath
values at the 14 Chebyshev nodes) written as a polynomial in t = x - i - 1/2; below 3 the Y
tables hold S_n(x) = Y_n(x) - (2/pi) log(x) J_n(x) (+ 2 / (pi x) for n = 1), entire, whose
log term the C code adds.  Below 1, J0 = sum a_k z^k, J1 = x sum b_k z^k, S0 = sum c_k z^k,
S1 = x sum d_k z^k (z = x^2, DLMF 10.2.2 and 10.8.1-2: a_k = (-1/4)^k / (k!)^2,
b_k = (-1/4)^k / (2 k! (k+1)!), c_k = 2/pi (gamma - log 2 - H_k) a_k,
d_k = 2/pi (gamma - log 2) b_k - (H_k + H_(k+1)) (-1/4)^k / (2 pi k! (k+1)!)).
Hankel (DLMF 10.17.1-4): a_k(n) = prod_(j<=k) (4 n^2 - (2j - 1)^2) / (k! 8^k),
P = sum_k (-1)^k a_2k / x^2k, Q = sum_k (-1)^k a_(2k+1) / x^(2k+1), 11 terms each (the
twenty-second is below 1e-18 at x = 25).  Needs mpmath and NumPy:
python tools/fit_bessel_jy.py
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 40
DEG = 13
LO, HI, YLOG = 1, 25, 3
NSER, NHANKEL = 12, 11


def cheb_monomial(f, a, b, deg=DEG):
    """The Chebyshev interpolant of f on [a, b] as coefficients of powers of x - (a+b)/2"""
    n = deg + 1
    c, h = (mp.mpf(a) + b) / 2, (mp.mpf(b) - a) / 2
    th = [mp.pi * (k + mp.mpf(1) / 2) / n for k in range(n)]
    vals = [f(c + h * mp.cos(v)) for v in th]
    ch = [2 * mp.fsum(vals[k] * mp.cos(j * th[k]) for k in range(n)) / n for j in range(n)]
    ch[0] /= 2
    T = [[mp.mpf(1)], [mp.mpf(0), mp.mpf(1)]]
    for j in range(2, n):
        p = [mp.mpf(0)] + [2 * v for v in T[j - 1]]
        for i, v in enumerate(T[j - 2]):
            p[i] -= v
        T.append(p)
    m = [mp.mpf(0)] * n
    for j in range(n):
        for i, v in enumerate(T[j]):
            m[i] += ch[j] * v
    return [m[i] / h ** i for i in range(n)]


def jn(n):
    return lambda x: mp.besselj(n, x)


def s_or_y(n):
    def f(x):
        if x >= YLOG:
            return mp.bessely(n, x)
        s = mp.bessely(n, x) - 2 / mp.pi * mp.log(x) * mp.besselj(n, x)
        return s + 2 / (mp.pi * x) if n == 1 else s
    return f


def series():
    a, b, c, d = [], [], [], []
    g, l2 = mp.euler, mp.log(2)
    for k in range(NSER):
        hk = mp.fsum(mp.mpf(1) / j for j in range(1, k + 1))
        hk1 = hk + mp.mpf(1) / (k + 1)
        q = mp.mpf(-0.25) ** k
        ak = q / mp.factorial(k) ** 2
        bk = q / (2 * mp.factorial(k) * mp.factorial(k + 1))
        a.append(ak)
        b.append(bk)
        c.append(2 / mp.pi * (g - l2 - hk) * ak)
        d.append(2 / mp.pi * (g - l2) * bk - (hk + hk1) * q /
                 (2 * mp.pi * mp.factorial(k) * mp.factorial(k + 1)))
    return a, b, c, d


def hankel(n):
    p, q, t = [], [], mp.mpf(1)
    for k in range(2 * NHANKEL):
        if k > 0:
            t *= (4 * n * n - (2 * k - 1) ** 2) / (mp.mpf(k) * 8)
        sign = (-1) ** (k // 2)
        (p if k % 2 == 0 else q).append(sign * t)
    return p, q


def horner(coef, t):
    s = 0.0
    for v in reversed(coef):
        s = s * t + v
    return s


def check(f, coef, a, b, extra):
    worst = 0.0
    for x in np.linspace(a, b, 400, endpoint=False):
        got = horner(coef, x - (a + b) / 2) + extra(x)
        r = float(f(mp.mpf(x)))
        env = min(1.0, (2 / (np.pi * x)) ** 0.5)
        worst = max(worst, abs(got - r) / np.spacing(max(abs(r), env)))
    return worst


def c_array(name, values, per_line=4):
    lines = [f"PTL_DEVICE_TABLE static const double {name}[{len(values)}] = {{"]
    row = []
    for v in values:
        row.append(repr(float(v)))
        if len(row) == per_line:
            lines.append("    " + ", ".join(row) + ",")
            row = []
    if row:
        lines.append("    " + ", ".join(row) + ",")
    lines.append("};")
    return "\n".join(lines)


def main():
    out, report = [], []
    for n in (0, 1):
        for kind, fn in (("J", jn(n)), ("Y", s_or_y(n))):
            flat, worst = [], 0.0
            for i in range(LO, HI):
                co = [float(v) for v in cheb_monomial(fn, i, i + 1)]
                flat += co
                if kind == "J" or i >= YLOG:
                    worst = max(worst, check(fn, co, i, i + 1, lambda x: 0.0))
            out.append(c_array(f"ptl_bessel_{kind.lower()}{n}_tab", flat))
            report.append(f"{kind}{n} tables [{LO}, {HI}): {worst:.2f} ulps")
    a, b, c, d = series()
    for name, v in (("J0_SER", a), ("J1_SER", b), ("S0_SER", c), ("S1_SER", d)):
        out.append(c_array(f"ptl_bessel_{name.lower()}", v))
    for n in (0, 1):
        p, q = hankel(n)
        out.append(c_array(f"ptl_bessel_p{n}_hankel", p))
        out.append(c_array(f"ptl_bessel_q{n}_hankel", q))
    print("\n".join(out))
    print("\n".join("/* " + r + " */" for r in report))


if __name__ == "__main__":
    main()
