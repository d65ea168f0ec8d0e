"""Prints the coefficients of Temme's uniform expansion of the regularized incomplete gamma
functions (PTL_IGAMMA_TEMME_COEF and PTL_IGAMMA_TEMME_LEN of src/aten/special_math.h, Note
[Incomplete gamma for large a] there), exact rationals rounded once to double.

With lambda = x / a and eta = sign(lambda - 1) sqrt(2 (lambda - 1 - log lambda)),
    Q(a, x) = erfc(eta sqrt(a / 2)) / 2 + e^(-a eta^2 / 2) / sqrt(2 pi a) sum_k D_k(eta) / a^k.
Derivation (substitute t = a u, then u - 1 - log u = z^2 / 2, integrate by parts):
C_0(eta) = 1 / (lambda - 1) - 1 / eta, C_k(eta) = (C_(k-1)'(eta) - C_(k-1)'(0)) / eta, and
D_k = sum_(j <= k) C_j g_(k-j), where sum g_i / a^i is the expansion of 1 / Gamma*(a),
Gamma*(a) = Gamma(a) / (sqrt(2 pi / a) (a / e)^a), log Gamma*(a) = sum_j B_2j / (2j (2j - 1)
a^(2j - 1)).  D_k(eta) = sum_n d_kn eta^n as power series (lambda - 1 as a series in eta by
Lagrange inversion).  The kernel uses the expansion for a >= A_MIN and |x - a| <= a / 2,
where |eta| <= ETA_MAX; it keeps the rows k whose largest term there (a = A_MIN) is at least
TOL and, in each, the powers whose tail is at least TOL (S is about -1/3).  Rows are printed
k = 0 first, each from its highest power down (Horner's order).  Needs mpmath:
python tools/igamma_temme_coef.py
"""
from fractions import Fraction

import mpmath as mp

A_MIN, ETA_MAX, TOL = 100, 0.63, 1e-19
NMAX, KMAX = 60, 14


def mul(a, b, n):
    r = [Fraction(0)] * n
    for i, x in enumerate(a[:n]):
        for j, y in enumerate(b[:n - i]):
            r[i + j] += x * y
    return r


def inverse(a, n):
    r = [Fraction(0)] * n
    r[0] = 1 / a[0]
    for k in range(1, n):
        r[k] = -sum(a[j] * r[k - j] for j in range(1, k + 1)) / a[0]
    return r


def sqrt_one_plus(a, n):
    """sqrt of a series with a[0] == 1"""
    r = [Fraction(1)] + [Fraction(0)] * (n - 1)
    for k in range(1, n):
        r[k] = (a[k] - sum(r[j] * r[k - j] for j in range(1, k))) / 2
    return r


def rows(kmax, nmax):
    m = nmax + 2 * kmax + 2
    # eta = u s(u), u = lambda - 1, s(u)^2 = 2 (u - log(1 + u)) / u^2 = sum 2 (-u)^j / (j + 2)
    s = sqrt_one_plus([Fraction(2 * (-1) ** j, j + 2) for j in range(m + 1)], m + 1)
    # Lagrange: [eta^n] u = [u^(n-1)] s(u)^-n / n
    sinv, power, u = inverse(s, m + 1), [Fraction(1)] + [Fraction(0)] * m, [Fraction(0)]
    for n in range(1, m + 1):
        power = mul(power, sinv, m + 1)
        u.append(power[n - 1] / n)
    # C_0 = (eta / u - 1) / eta
    c = [inverse(u[1:], m)[1:]]
    for _ in range(1, kmax):
        c.append([(n + 2) * c[-1][n + 2] for n in range(len(c[-1]) - 2)])
    # 1 / Gamma*(a) = exp(-log Gamma*(a)) as a series in 1/a
    log_gs = [Fraction(0)] * kmax
    for j in range(1, kmax):
        if 2 * j - 1 < kmax:
            p, q = mp.bernfrac(2 * j)
            log_gs[2 * j - 1] = -Fraction(int(p), int(q)) / (2 * j * (2 * j - 1))
    g, term = [Fraction(1)] + [Fraction(0)] * (kmax - 1), [Fraction(1)] + [Fraction(0)] * (kmax - 1)
    for i in range(1, kmax):
        term = [v / i for v in mul(term, log_gs, kmax)]
        g = [x + y for x, y in zip(g, term)]
    return [[sum(c[j][n] * g[k - j] for j in range(k + 1)) for n in range(nmax)]
            for k in range(kmax)]


def main():
    d = rows(KMAX, NMAX)
    weight = [[abs(float(v)) * ETA_MAX ** n * A_MIN ** -k for n, v in enumerate(row)]
              for k, row in enumerate(d)]
    nrows = next(k for k in range(KMAX) if sum(weight[k]) < TOL)
    lengths, flat = [], []
    for k in range(nrows):
        n = next(n for n in range(NMAX) if sum(weight[k][n:]) < TOL)
        lengths.append(n)
        flat += [repr(float(v)) for v in reversed(d[k][:n])]
    print(f"/* {nrows} rows, {len(flat)} coefficients (tools/igamma_temme_coef.py) */")
    print("#define PTL_IGAMMA_TEMME_LEN " + ", ".join(map(str, lengths)))
    print("#define PTL_IGAMMA_TEMME_COEF \\")
    lines = [", ".join(flat[i:i + 4]) for i in range(0, len(flat), 4)]
    print(",\\\n".join("    " + line for line in lines))


if __name__ == "__main__":
    main()
