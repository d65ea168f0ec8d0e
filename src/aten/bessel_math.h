/* bessel_math.h -- scalar formulas of the Bessel functions J0, J1, Y0, Y1, the modified
 * Bessel functions of the second kind K0, K1 (and e^x K0, e^x K1), the spherical Bessel
 * function j0 and the Airy function Ai, in double, for the CPU loops (native/special.c);
 * PTL_HD marks them __host__ __device__ under nvcc, so a CUDA kernel can call the same
 * definitions.  Mirrors the scalar code of ATen/native/Math.h (bessel_j0_forward, ...,
 * airy_ai_forward) in purpose; the methods are our own (PyTorch's are Cephes' rational
 * fits).  See Note [Bessel functions of real argument]. */
#ifndef PTL_ATEN_BESSEL_MATH_H
#define PTL_ATEN_BESSEL_MATH_H

#include <math.h>

#include "special_math.h"

/* Note [Bessel functions of real argument]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * J0, J1, Y0, Y1 (|x| <= 25): the ascending series (DLMF 10.2.2, 10.8.1-2)
 *   J_n(x) = sum_k (-x^2/4)^k (x/2)^n / (k! (k+n)!)
 *   Y0(x) = 2/pi [(log(x/2) + gamma) J0(x) - sum_{k>=1} H_k (-x^2/4)^k / (k!)^2]
 *   Y1(x) = -2/(pi x) + 2/pi (log(x/2) + gamma) J1(x)
 *           - x/(2 pi) sum_{k>=0} (H_k + H_(k+1)) (-x^2/4)^k / (k! (k+1)!)
 * (H_k the harmonic numbers), summed in double-double (special_math.h's pairs): the terms
 * reach 1e9 at |x| = 25 while the sums are O(1), so the double-double sum keeps the
 * cancellation below 1e-20 and the result is the sum rounded once.  |x| > 25: Hankel's
 * expansion (DLMF 10.17.3-4) sqrt(2 / (pi x)) (P cos w - Q sin w) for J and
 * (P sin w + Q cos w) for Y, w = x - (n/2 + 1/4) pi, whose smallest term at x = 25 is
 * about e^-50; cos w and sin w are sums of cos x and sin x, so near a zero of the function
 * the error is absolute (an ulp of the envelope sqrt(2 / (pi x))), as in every method
 * that does not carry the zeros' positions.
 *
 * K0, K1 (x > 1): from K_v(x) = int_0^inf e^(-x cosh t) cosh(v t) dt and the substitution
 * u = sqrt(2x) sinh(t/2),
 *   e^x K0(x) = sqrt(2/x) int_0^inf e^(-u^2) / sqrt(1 + u^2 / (2x)) du
 *   e^x K1(x) = sqrt(2/x) int_0^inf e^(-u^2) (1 + u^2/x) / sqrt(1 + u^2 / (2x)) du,
 * by the trapezoidal rule with step 1/5 to u = 6.6: for an even integrand analytic in the
 * strip |Im u| < sqrt(2x) the error falls like e^(-2 pi sqrt(2x) / h), under 1e-17 from
 * x = 1, and the weights e^(-(k/5)^2) are constants; all terms are positive.  x <= 1: the
 * series (DLMF 10.31.1-2) K0 = -(log(x/2) + gamma) I0 + sum_{k>=1} H_k (x^2/4)^k / (k!)^2
 * and K1 = 1/x + (log(x/2) + gamma) I1 - x/4 sum_k (H_k + H_(k+1)) (x^2/4)^k / (k!(k+1)!),
 * without cancellation there.
 *
 * Ai (DLMF 9.4.1, 9.6.1, 9.7.9): -12 <= x <= 2, the Maclaurin series Ai(0) f - |Ai'(0)| g,
 * f = sum_k x^(3k) / prod_(j<=k) (3j-1)(3j), g = sum_k x^(3k+1) / prod_(j<=k) (3j)(3j+1),
 * in double-double with the two constants as pairs (near x = 2 the two products cancel to
 * a twentieth); x > 2, Ai(x) = x^(-1/4) e^-zeta / pi int_0^inf e^(-u^2) cosh(t/3) /
 * sqrt(1 + u^2 / (2 zeta)) du, zeta = 2/3 x^(3/2), the K_(1/3) integral above; x < -12,
 * Ai(-z) = (cos(zeta - pi/4) P + sin(zeta - pi/4) Q) / (sqrt(pi) z^(1/4)) with P, Q the
 * series in u_k / zeta^k.  zeta is formed in double-double in both tails (its rounding
 * would cost zeta * eps in the phase or the exponent); the pair carries the phase to
 * zeta 2^-105, i.e. zeta 2^-53 ulps of the envelope: under an ulp to x = -1e10, and NaN
 * (SciPy's value from x = -1e8 on) once zeta >= 2^64 (x below about -3.2e12), where the
 * phase error would pass 2^-41.
 *
 * Special values follow the limits (SciPy's): J, j0, Ai -> 0 at +-inf (Ai(-inf) = 0), Y ->
 * 0 at +inf, Y(0) = -inf, K(0) = inf, K(+inf) = 0; Y, K of x < 0 are NaN.  PyTorch returns
 * NaN at the infinities (its fits' inf * 0). */

#define PTL_BESSEL_JY_SERIES_MAX 25.0
#define PTL_EULER_GAMMA 0.57721566490153286061
#define PTL_EULER_GAMMA_LO (-4.942915152430645e-18)
#define PTL_TWO_OVER_PI 0.63661977236758134308
#define PTL_PI_D 3.14159265358979323846

/* 1 / k as a pair */
PTL_HD static inline PtlDoubleDouble
ptl_dd_recip(double k)
{
    PtlDoubleDouble r;
    r.hi = 1.0 / k;
    r.lo = fma(-r.hi, k, 1.0) / k;
    return r;
}

/* The series sums of J_n and of Y_n's harmonic part at |x| <= 25 (n 0 or 1, sign ignored):
 * *j = sum_k (-x^2/4)^k / (k! (k+n)!) and *y = sum_k c_k (-x^2/4)^k / (k! (k+n)!) with
 * c_k = H_k (n = 0) or H_k + H_(k+1) (n = 1). */
PTL_HD static inline void
ptl_bessel_jy_series(int n, double ax, int want_y, double *j, double *y)
{
    double h = 0.5 * ax;
    PtlDoubleDouble q = {-(h * h), -fma(h, h, -(h * h))};   /* -(x/2)^2 exactly */
    PtlDoubleDouble t = {1.0, 0.0}, sj = t, harm = {0.0, 0.0}, sy = {0.0, 0.0};
    PtlDoubleDouble c = {(double)n, 0.0};                   /* c_0 = H_0 (+ H_1) */
    if (want_y && n == 1) {
        sy = t;
    }
    for (int k = 1; k < 90; k++) {
        t = ptl_dd_div(ptl_dd_mul(t, q), (double)k * (double)(k + n));
        sj = ptl_dd_add(sj, t);
        if (want_y) {
            harm = ptl_dd_add(harm, ptl_dd_recip((double)k));             /* H_k */
            c = n == 0 ? harm : ptl_dd_add(harm, ptl_dd_add(harm, ptl_dd_recip(k + 1.0)));
            sy = ptl_dd_add(sy, ptl_dd_mul(c, t));
        }
        if (fabs(t.hi) <= 1e-36) {   /* the sums are O(1): below 1e-20 of their ulp */
            break;
        }
    }
    *j = sj.hi + sj.lo;
    *y = sy.hi + sy.lo;
}

/* Hankel's P and Q of order n at x > 25 (DLMF 10.17.3: the a_k(n) / x^k, alternating in
 * pairs) */
PTL_HD static inline void
ptl_bessel_hankel_pq(int n, double x, double *p, double *q)
{
    double nu = 4.0 * (double)(n * n), t = 1.0, sp = 1.0, sq = 0.0, prev = INFINITY;
    for (int k = 1; k < 60; k++) {
        double odd = (double)(2 * k - 1);
        t *= (nu - odd * odd) / (8.0 * (double)k * x);
        if (fabs(t) >= prev || fabs(t) <= 1e-18) {
            break;
        }
        prev = fabs(t);
        /* k = 1, 2, 3, 4, ...: +Q, -P, -Q, +P, ... */
        double v = (k % 4 == 1 || k % 4 == 0) ? t : -t;
        if (k % 2 == 1) {
            sq += v;
        }
        else {
            sp += v;
        }
    }
    *p = sp;
    *q = sq;
}

/* J_n (y 0) or Y_n (y 1) of x, n 0 or 1 */
PTL_HD static inline double
ptl_bessel_jy(int n, int want_y, double x)
{
    double ax = fabs(x), j, s;
    if (x != x) {
        return x;
    }
    if (want_y && x < 0.0) {
        return NAN;
    }
    if (want_y && x == 0.0) {
        return -INFINITY;
    }
    if (isinf(ax)) {
        return 0.0;
    }
    if (ax <= PTL_BESSEL_JY_SERIES_MAX) {
        ptl_bessel_jy_series(n, ax, want_y, &j, &s);
        if (n == 1) {
            j *= 0.5 * ax;
        }
        if (!want_y) {
            return (n == 1 && signbit(x)) ? -j : j;   /* J1 is odd: J1(-0) = -0 */
        }
        double l = log(0.5 * ax) + PTL_EULER_GAMMA;
        if (n == 0) {
            return PTL_TWO_OVER_PI * (l * j - s);
        }
        return PTL_TWO_OVER_PI * (l * j - 1.0 / ax) - ax / (2.0 * PTL_PI_D) * s;
    }
    double p, q, c = cos(ax), sn = sin(ax), cw, sw;
    ptl_bessel_hankel_pq(n, ax, &p, &q);
    if (n == 0) {   /* w = x - pi/4 */
        cw = c + sn;
        sw = sn - c;
    }
    else {          /* w = x - 3 pi/4 */
        cw = sn - c;
        sw = -(sn + c);
    }
    /* sqrt(2 / (pi x)) / sqrt(2) = 1 / sqrt(pi x) */
    double env = 1.0 / sqrt(PTL_PI_D * ax);
    double v = want_y ? env * (p * sw + q * cw) : env * (p * cw - q * sw);
    return (n == 1 && !want_y && signbit(x)) ? -v : v;
}

PTL_HD static inline double ptl_bessel_j0_d(double x) { return ptl_bessel_jy(0, 0, x); }
PTL_HD static inline double ptl_bessel_j1_d(double x) { return ptl_bessel_jy(1, 0, x); }
PTL_HD static inline double ptl_bessel_y0_d(double x) { return ptl_bessel_jy(0, 1, x); }
PTL_HD static inline double ptl_bessel_y1_d(double x) { return ptl_bessel_jy(1, 1, x); }

/* The trapezoidal rule for e^zeta K_v(zeta) (Note [Bessel functions of real argument]):
 * v = 0, 1 or 1/3 (kind 0, 1, 3); the weights are e^(-(k h)^2), h = 1/5 */
PTL_HD static inline double
ptl_bessel_k_quadrature(int kind, double z)
{
    static const double W[34] = {
        1.0, 0.9607894391523232, 0.8521437889662113, 0.697676326071031, 0.5272924240430485,
        0.36787944117144233, 0.23692775868212176, 0.140858420921045, 0.07730474044329974,
        0.03916389509898707, 0.01831563888873418, 0.00790705405159344, 0.0031511115984444405,
        0.0011592291739045912, 0.00039366904065507824, 0.00012340980408667956,
        3.571284964163522e-05, 9.540162873079234e-06, 2.352575200009773e-06,
        5.355347802793107e-07, 1.1253517471925912e-07, 2.182957795125479e-08,
        3.9089384342648615e-09, 6.461431773106109e-10, 9.859505575991508e-11,
        1.3887943864964021e-11, 1.8058314375132157e-12, 2.167568882618962e-13,
        2.4017347816209595e-14, 2.4565953687921445e-15, 2.3195228302435696e-16,
        2.021715848695342e-17, 1.6266646214532443e-18, 1.2081820198999735e-19};
    double sum = 0.0, inv2z = 0.5 / z;
    /* smallest weights first */
    for (int k = 33; k >= 0; k--) {
        double u = 0.2 * (double)k, u2 = u * u, f;
        double r = sqrt(1.0 + u2 * inv2z);
        if (kind == 0) {
            f = 1.0 / r;
        }
        else if (kind == 1) {
            f = (1.0 + 2.0 * u2 * inv2z) / r;
        }
        else {   /* cosh(t/3), t = 2 asinh(w), w = u / sqrt(2 zeta) */
            double w = u * sqrt(inv2z), e = cbrt((w + r) * (w + r));
            f = 0.5 * (e + 1.0 / e) / r;
        }
        sum += (k == 0 ? 0.5 : 1.0) * W[k] * f;
    }
    return 0.2 * sum * sqrt(2.0 / z);
}

/* K_n(x) (scaled 0) or e^x K_n(x) (scaled 1), n 0 or 1 */
PTL_HD static inline double
ptl_bessel_k(int n, double x, int scaled)
{
    if (x != x) {
        return x;
    }
    if (x < 0.0) {
        return NAN;
    }
    if (x == 0.0) {
        return INFINITY;
    }
    if (isinf(x)) {
        return 0.0;
    }
    if (x > 1.0) {
        double v = ptl_bessel_k_quadrature(n, x);
        return scaled ? v : v * exp(-x);
    }
    /* the series, with I_n's power series (special_math.h) */
    double h = 0.5 * x, q = h * h, t = 1.0, harm = 0.0, s;
    double l = log(h) + PTL_EULER_GAMMA, v;
    if (n == 0) {
        s = 0.0;
        for (int k = 1; k < 40; k++) {
            t *= q / ((double)k * (double)k);
            harm += 1.0 / (double)k;
            s += harm * t;
            if (t <= 1e-18 * s) {
                break;
            }
        }
        v = s - l * ptl_bessel_i_series(0, x);
    }
    else {
        s = 1.0;   /* k = 0: H_0 + H_1 = 1 */
        for (int k = 1; k < 40; k++) {
            t *= q / ((double)k * (double)(k + 1));
            harm += 1.0 / (double)k;
            s += (2.0 * harm + 1.0 / (double)(k + 1)) * t;
            if (t <= 1e-18 * s) {
                break;
            }
        }
        v = 1.0 / x + l * ptl_bessel_i_series(1, x) - 0.5 * h * s;
    }
    return scaled ? v * exp(x) : v;
}

PTL_HD static inline double ptl_bessel_k0_d(double x) { return ptl_bessel_k(0, x, 0); }
PTL_HD static inline double ptl_bessel_k1_d(double x) { return ptl_bessel_k(1, x, 0); }
PTL_HD static inline double ptl_bessel_k0e_d(double x) { return ptl_bessel_k(0, x, 1); }
PTL_HD static inline double ptl_bessel_k1e_d(double x) { return ptl_bessel_k(1, x, 1); }

/* spherical j0(x) = sin(x) / x; its Taylor polynomial 1 - x^2/6 + x^4/120 - ... below
 * |x| = 1/2 (the quotient's two roundings there would be 1.5 ulp; the polynomial's
 * truncation after x^14 is under 1e-19) */
PTL_HD static inline double
ptl_spherical_bessel_j0_d(double x)
{
    if (isinf(x)) {
        return 0.0;
    }
    if (fabs(x) < 0.5) {
        double z = x * x, t = 1.0, s = 1.0;
        for (int k = 1; k <= 7; k++) {
            t *= -z / ((double)(2 * k) * (double)(2 * k + 1));
            s += t;
        }
        return s;
    }
    return sin(x) / x;
}

/* zeta = 2/3 z^(3/2) as a pair (z > 0) */
PTL_HD static inline PtlDoubleDouble
ptl_airy_zeta(double z)
{
    double s = sqrt(z), slo = fma(-s, s, z) / (2.0 * s);
    double p = z * s, plo = fma(z, s, -p) + z * slo;
    PtlDoubleDouble r;
    r.hi = 2.0 * p / 3.0;
    r.lo = (fma(-r.hi, 3.0, 2.0 * p) + 2.0 * plo) / 3.0;
    return r;
}

/* Ai(x) */
PTL_HD static inline double
ptl_airy_ai_d(double x)
{
    if (x != x) {
        return x;
    }
    if (isinf(x)) {
        return 0.0;
    }
    if (x > 2.0) {
        PtlDoubleDouble zeta = ptl_airy_zeta(x);
        double e = exp(-zeta.hi) * (1.0 - zeta.lo);
        return ptl_bessel_k_quadrature(3, zeta.hi) * e * sqrt(x / 3.0) / PTL_PI_D;
    }
    if (x < -12.0) {
        double z = -x, sp = 1.0, sq = 0.0, u = 1.0;
        PtlDoubleDouble zeta = ptl_airy_zeta(z);
        if (zeta.hi >= 0x1p64) {   /* the pair's phase error, zeta 2^-105, passes 2^-41 */
            return NAN;
        }
        for (int k = 1; k < 40; k++) {
            double k6 = 6.0 * (double)k;
            u *= (k6 - 5.0) * (k6 - 3.0) * (k6 - 1.0) / ((2.0 * k - 1.0) * 216.0 * k * zeta.hi);
            if (fabs(u) <= 1e-18) {
                break;
            }
            /* k = 1, 2, 3, 4, ...: +Q, -P, -Q, +P, ... */
            double v = (k % 4 == 1 || k % 4 == 0) ? u : -u;
            if (k % 2 == 1) {
                sq += v;
            }
            else {
                sp += v;
            }
        }
        /* cos and sin of hi + lo by the sum formulas: lo is not small once hi > 2^53 */
        double ch = cos(zeta.hi), sh = sin(zeta.hi), cl = cos(zeta.lo), sl = sin(zeta.lo);
        double cz = ch * cl - sh * sl, sz = sh * cl + ch * sl;
        /* cos(zeta - pi/4) and sin(zeta - pi/4), times sqrt(2) */
        double cw = cz + sz, sw = sz - cz;
        return (cw * sp + sw * sq) / (sqrt(2.0 * PTL_PI_D) * sqrt(sqrt(z)));
    }
    /* Ai(0) and -Ai'(0) as pairs */
    const PtlDoubleDouble c1 = {0.3550280538878172, 2.05233632436212e-17};
    const PtlDoubleDouble c2 = {0.2588194037928068, -2.522243111610832e-17};
    PtlDoubleDouble xx = {x * x, fma(x, x, -(x * x))}, xd = {x, 0.0};
    PtlDoubleDouble x3 = ptl_dd_mul(xx, xd), tf = {1.0, 0.0}, tg = xd, f = tf, g = tg;
    for (int k = 1; k < 60; k++) {
        double k3 = 3.0 * (double)k;
        tf = ptl_dd_div(ptl_dd_mul(tf, x3), (k3 - 1.0) * k3);
        tg = ptl_dd_div(ptl_dd_mul(tg, x3), k3 * (k3 + 1.0));
        f = ptl_dd_add(f, tf);
        g = ptl_dd_add(g, tg);
        if (fabs(tf.hi) + fabs(tg.hi) <= 1e-34) {
            break;
        }
    }
    g.hi = -g.hi;
    g.lo = -g.lo;
    PtlDoubleDouble r = ptl_dd_add(ptl_dd_mul(c1, f), ptl_dd_mul(c2, g));
    return r.hi + r.lo;
}

#endif
