/* polynomial_math.h -- scalar formulas of the classical orthogonal polynomials of
 * torch.special: Chebyshev T, U, V, W (and their shifted forms on [0, 1]), Hermite H and He,
 * Laguerre L and Legendre P, of degree n at x, in double, for the CPU loops
 * (native/special.c); PTL_HD marks them __host__ __device__ under nvcc, so a CUDA kernel can
 * call the same definitions.  Mirrors the scalar code of ATen/native/Math.h
 * (chebyshev_polynomial_t_forward, ...) in purpose; written from the recurrences and closed
 * forms.  See Note [Orthogonal polynomials]. */
#ifndef PTL_ATEN_POLYNOMIAL_MATH_H
#define PTL_ATEN_POLYNOMIAL_MATH_H

#include <math.h>
#include <stdint.h>

#include "../c10/macros.h"

/* Note [Orthogonal polynomials]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The degree is n truncated toward zero, as PyTorch's cast to int64 does; a negative or NaN
 * n, or one of 2^63 or more (inf included), gives 0 (PyTorch's value: the cast yields
 * INT64_MIN there on x86), degree 0 gives 1 for every x (NaN included).  x = NaN gives
 * NaN, x = +-inf the sign of the leading term times inf.
 *
 * Chebyshev, degree k: the three-term recurrence p_(j+1) = 2x p_j - p_(j-1) from
 * T: 1, x; U: 1, 2x; V: 1, 2x - 1; W: 1, 2x + 1, up to k = 16; above, the closed forms in
 * theta = acos x for |x| < 1 (T = cos k theta, U = sin (k+1) theta / sin theta,
 * V = cos (k+1/2) theta / cos (theta/2), W = sin (k+1/2) theta / sin (theta/2), with
 * sin theta = sqrt((1-x)(1+x)), cos(theta/2) = sqrt((1+x)/2), sin(theta/2) = sqrt((1-x)/2)
 * exact to an ulp), their hyperbolic twins in t = acosh |x| beyond, and the values at +-1
 * (T: 1, (-1)^k; U: k+1, (-1)^k (k+1); V: 1, (-1)^k (2k+1); W: 2k+1, (-1)^k).  The
 * shifted polynomials are the same at 2x - 1.
 *
 * Hermite (H: 1, 2x, H_(j+1) = 2x H_j - 2j H_(j-1); He: 1, x, He_(j+1) = x He_j - j He_(j-1)),
 * Laguerre (1, 1 - x, (j+1) L_(j+1) = (2j+1-x) L_j - j L_(j-1)) and Legendre (1, x,
 * (j+1) P_(j+1) = (2j+1) x P_j - j P_(j-1)) run their recurrences forward (the direction
 * in which they are stable); Laguerre at x < 0 sums its explicit form
 * sum_i binom(k, i) (-x)^i / i! instead, whose terms are all positive (the recurrence
 * cancels there: 3e4 ulps at k = 2000).  The loops stop early once the value is infinite.
 * The cost is O(k), as in PyTorch: a degree of 1e12 at |x| < 1 takes minutes.
 *
 * Accuracy (float64, against mpmath, in ulps of max(|p_k(x)|, E) with E the size of the
 * polynomial where it oscillates -- 1 for T and P, k+1 for U, 2k+1 for V and W on [-1, 1],
 * e^(x/2) for L at x >= 0, e^(x^2/2) sqrt(2^k k!) for H and e^(x^2/4) sqrt(k!) for He): up
 * to about one ulp per degree for T (the phase k acos x carries k ulps) and L, and for all
 * of them outside [-1, 1]; under 20 for U, V, W, H, He and P on [-1, 1]. */

/* |x| from which Chebyshev degrees 17 to 1024 outside [-1, 1] take the recurrence (below,
 * where it loses about k^2 / 100 ulps, the hyperbolic forms) */
#define PTL_CHEB_RECURRENCE_FROM 1.5

/* the degree of a floating n: truncated; -1 (the caller returns 0) for negative or NaN n
 * and for n >= 2^63, +inf included, which PyTorch's cast to int64 turns into INT64_MIN */
PTL_HD static inline int64_t
ptl_poly_degree(double n)
{
    if (n != n || n <= -1.0 || n >= 9223372036854775808.0) {
        return -1;
    }
    return (int64_t)n;
}

/* (-1)^k */
PTL_HD static inline double
ptl_poly_parity(int64_t k)
{
    return (k & 1) ? -1.0 : 1.0;
}

/* the value at x = +-inf of a polynomial of degree k >= 1 whose leading coefficient has the
 * sign lead */
PTL_HD static inline double
ptl_poly_at_inf(double x, int64_t k, double lead)
{
    return (x > 0 ? lead : lead * ptl_poly_parity(k)) * INFINITY;
}

/* Chebyshev T, U, V, W (kind 0-3) of degree k > 16 inside (-1, 1), or k > 1024 or near the
 * ends outside, by the closed forms of Note [Orthogonal polynomials] at a = |x| (x = +-1
 * excluded), d = 1 - a given exactly by the caller (the shifted forms' 2x or 2 - 2x); the
 * sign and the kind of p_k(-a) = (-1)^k p_k(a) (T, U), V_k(-a) = (-1)^k W_k(a) put back */
PTL_HD static inline double
ptl_chebyshev_closed(int kind, double x, double d, int64_t k)
{
    double kk = (double)k, a = fabs(x), s = x > 0 ? 1.0 : ptl_poly_parity(k);
    int kd = (x < 0 && kind >= 2) ? 5 - kind : kind;
    if (d > 0.0) {   /* theta = acos a = 2 asin sqrt(d / 2) */
        double th = 2.0 * asin(sqrt(0.5 * d));
        switch (kd) {
        case 0: return s * cos(kk * th);
        case 1: return s * sin((kk + 1.0) * th) / sqrt(d * (1.0 + a));
        case 2: return s * cos((kk + 0.5) * th) / sqrt(0.5 * (1.0 + a));
        default: return s * sin((kk + 0.5) * th) / sqrt(0.5 * d);
        }
    }
    double e = -d, t = 2.0 * asinh(sqrt(0.5 * e));   /* t = acosh a */
    switch (kd) {
    case 0: return s * cosh(kk * t);
    case 1: return s * sinh((kk + 1.0) * t) / sqrt(e * (a + 1.0));
    case 2: return s * cosh((kk + 0.5) * t) / sqrt(0.5 * (a + 1.0));
    default: return s * sinh((kk + 0.5) * t) / sqrt(0.5 * e);
    }
}

/* Chebyshev polynomials, kind 0, 1, 2, 3: T, U, V, W, at x with d = 1 - |x| (see
 * ptl_chebyshev_closed) */
PTL_HD static inline double
ptl_chebyshev_gap(int kind, double x, double d, double n)
{
    int64_t k = ptl_poly_degree(n);
    if (k < 0) {
        return 0.0;
    }
    if (k == 0) {
        return 1.0;
    }
    if (x != x) {
        return x;
    }
    if (isinf(x)) {
        return ptl_poly_at_inf(x, k, 1.0);
    }
    if (fabs(x) == 1.0) {
        double kk = (double)k, s = x > 0 ? 1.0 : ptl_poly_parity(k);
        double at1[4] = {1.0, kk + 1.0, 1.0, 2.0 * kk + 1.0};
        double atm1[4] = {1.0, kk + 1.0, 2.0 * kk + 1.0, 1.0};
        return s * (x > 0 ? at1[kind] : atm1[kind]);
    }
    if (k <= 16 || (fabs(x) >= PTL_CHEB_RECURRENCE_FROM && k <= 1024)) {
        double p = 1.0, q = kind == 0 ? x : kind == 1 ? 2.0 * x : kind == 2 ? 2.0 * x - 1.0
                                                                           : 2.0 * x + 1.0;
        for (int64_t j = 1; j < k; j++) {
            double r = 2.0 * x * q - p;
            p = q;
            q = r;
        }
        return q;
    }
    return ptl_chebyshev_closed(kind, x, d, k);
}

/* the point of Chebyshev at x: x, or 2x - 1 when shift; *d = 1 - |point|, for the shifted
 * ones 2x below 1/2 and 2 - 2x above, exact where it matters (next to x = 0 and 1) */
PTL_HD static inline double
ptl_chebyshev_point(double x, int shift, double *d)
{
    if (!shift) {
        *d = 1.0 - fabs(x);
        return x;
    }
    *d = x < 0.5 ? 2.0 * x : 2.0 - 2.0 * x;
    return 2.0 * x - 1.0;
}

/* Chebyshev polynomials at x (shift 0) or the shifted ones (at 2x - 1) */
PTL_HD static inline double
ptl_chebyshev(int kind, int shift, double x, double n)
{
    double d, xp = ptl_chebyshev_point(x, shift, &d);
    return ptl_chebyshev_gap(kind, xp, d, n);
}

/* Hermite H (physicists', norm 0) and He (probabilists', norm 1) */
PTL_HD static inline double
ptl_hermite(int probabilists, double x, double n)
{
    int64_t k = ptl_poly_degree(n);
    if (k < 0) {
        return 0.0;
    }
    if (k == 0) {
        return 1.0;
    }
    if (x != x) {
        return x;
    }
    if (isinf(x)) {
        return ptl_poly_at_inf(x, k, 1.0);
    }
    double c = probabilists ? 1.0 : 2.0, p = 1.0, q = c * x;
    for (int64_t j = 1; j < k && !isinf(q); j++) {
        double r = c * (x * q - (double)j * p);
        p = q;
        q = r;
    }
    return q;
}

/* Laguerre L */
PTL_HD static inline double
ptl_laguerre(double x, double n)
{
    int64_t k = ptl_poly_degree(n);
    if (k < 0) {
        return 0.0;
    }
    if (k == 0) {
        return 1.0;
    }
    if (x != x) {
        return x;
    }
    if (isinf(x)) {   /* the leading coefficient is (-1)^k / k! */
        return x > 0 ? ptl_poly_parity(k) * INFINITY : INFINITY;
    }
    if (x < 0.0) {   /* sum_i binom(k, i) |x|^i / i!: positive terms, no cancellation */
        double t = 1.0, sum = 1.0;
        for (int64_t i = 1; i <= k && !isinf(sum); i++) {
            t *= (double)(k - i + 1) * -x / ((double)i * (double)i);
            sum += t;
        }
        return sum;
    }
    double p = 1.0, q = 1.0 - x;
    for (int64_t j = 1; j < k && !isinf(q); j++) {
        double jj = (double)j;
        double r = ((2.0 * jj + 1.0 - x) * q - jj * p) / (jj + 1.0);
        p = q;
        q = r;
    }
    return q;
}

/* Legendre P */
PTL_HD static inline double
ptl_legendre(double x, double n)
{
    int64_t k = ptl_poly_degree(n);
    if (k < 0) {
        return 0.0;
    }
    if (k == 0) {
        return 1.0;
    }
    if (x != x) {
        return x;
    }
    if (isinf(x)) {
        return ptl_poly_at_inf(x, k, 1.0);
    }
    if (fabs(x) == 1.0) {
        return x > 0 ? 1.0 : ptl_poly_parity(k);
    }
    double p = 1.0, q = x;
    for (int64_t j = 1; j < k && !isinf(q); j++) {
        double jj = (double)j;
        double r = ((2.0 * jj + 1.0) * x * q - jj * p) / (jj + 1.0);
        p = q;
        q = r;
    }
    return q;
}

PTL_HD static inline double ptl_hermite_h_d(double x, double n) { return ptl_hermite(0, x, n); }
PTL_HD static inline double ptl_hermite_he_d(double x, double n) { return ptl_hermite(1, x, n); }
PTL_HD static inline double ptl_laguerre_l_d(double x, double n) { return ptl_laguerre(x, n); }
PTL_HD static inline double ptl_legendre_p_d(double x, double n) { return ptl_legendre(x, n); }

#endif
