/* gaussian_math.h -- scalar formulas of the scaled complementary error function erfcx and
 * of the standard normal distribution's ndtr, log_ndtr and ndtri, in double (float32 ndtr
 * in float, Note [Float ndtr]):
 * native/special.c's CPU loops and src/cuda/elementwise.cu's CUDA kernels evaluate these
 * definitions (PTL_DEVICE_FN, tables from special_tables.h), and ptl_sp_erfc_d is the
 * scalar twin of unary_f8_erf.h's vector erfc, through which special.c's vector blocks
 * compute them.  Mirrors the scalar code of ATen/native/Math.h (calc_erfcx, calc_log_ndtr,
 * calc_ndtri) in purpose; the methods are our own.  See Note [erfcx and the normal
 * distribution] and Note [One special formula for the CPU and CUDA]. */
#ifndef PTL_ATEN_GAUSSIAN_MATH_H
#define PTL_ATEN_GAUSSIAN_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../c10/macros.h"
#include "bessel_math.h"
#include "scalar_math.h"
#include "special_tables.h"

/* Note [One special formula for the CPU and CUDA]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * ndtr, log_ndtr, ndtri, erfcx (here), J0, J1, Y0, Y1, K0, K1 and their scaled forms,
 * spherical j0 and Ai (bessel_math.h) are one definition each, which special.c's CPU loops
 * and elementwise.cu's CUDA kernels both call; their coefficient tables are special_tables.h's
 * PTL_DEVICE_TABLEs.  Every FMA is an fma and every product that feeds an add is rounded
 * apart (Note [Products rounded apart]: nvcc would fuse it), so the two compilers evaluate
 * the same IEEE operations.  The parts that special.c's AVX2 / AVX-512 blocks compute in
 * vector lanes -- erfc (unary_f8_erf.h) for ndtr, log_ndtr and erfcx, sin and cos
 * (vec_math.h) for J, Y and spherical j0, float32 ndtr whole in float lanes -- are scalar
 * twins here (ptl_sp_erfc_d, ptl_sincos_twin, ptl_ndtr_f; Note [Scalar twins of vector
 * formulas]), so the vector blocks, the scalar
 * loops (float16, bfloat16, odd strides, PTL_CPU_CAPABILITY=default) and the device give the
 * same bits (tests/aten/test_special_shared.py checks the CPU's paths bit for bit).  What
 * stays each backend's own is libm: log, log1p, exp, sin and cos where the formulas call
 * them (the K, Ai, Y near 0 and ndtri branches, the twins' slow arguments), whose last bit
 * glibc and CUDA's libdevice may round differently. */

/* Note [erfcx and the normal distribution]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * erfc is ptl_sp_erfc_d (1.45 ulps, Note [Vector float64 erf, erfc, erfinv]); e^(x^2) takes
 * x^2 = hi + lo held exactly (fma): e^(x^2) = e^hi (1 + lo), so the rounding of x^2, which
 * would cost x^2 ulps (700 near the overflow), costs nothing.
 *   erfcx(x) = e^(x^2) erfc(x) for x < 26; above, erfc is subnormal and the asymptotic
 *     series 1 / (x sqrt(pi)) sum_k (-1)^k (2k-1)!! / (2 x^2)^k is used (its terms fall
 *     below 1e-17 by the eighth at x = 26).
 *   ndtr(x) = erfc(t) / 2, t = -x / sqrt(2); below x = -1 t = th + tl exactly (1/sqrt(2) as
 *     a pair, th x's rounded product) and erfc(th + tl) = erfc(th) (1 - tl R(th)), R = 2 /
 *     (sqrt(pi) erfcx(th)), to first order (tl^2 R^2 < 1e-29): R by the bound th + sqrt(th^2
 *     + 4/pi), whose error (0.36 / th at most) costs under 0.4 ulp; the rounding of t would
 *     cost 2 t^2 ulps of erfc(t).  float32: Note [Float ndtr] below, in float arithmetic.
 *   log_ndtr(x): s = ndtr(-|x|) from erfc(|x| / sqrt(2)) as above (2 ulps), log1p(-s) above
 *     0 and log(s) below, whose relative error is that of s over |log s| (at least 0.69);
 *     below -36 (s is subnormal from -37.5) log(erfcx(t) / 2) - x^2 / 2 (no underflow, no
 *     cancellation: both are negative).
 *   ndtri(p): Note [Fast ndtri] below. */

#define PTL_SQRT1_2 0.70710678118654752440
#define PTL_SQRT_PI 1.77245385090551602730
#define PTL_SQRT_2PI 2.50662827463100050242
/* 1/sqrt(2) as a pair */
#define PTL_RSQRT2_HI 0.7071067811865476
#define PTL_RSQRT2_LO -4.833646656726457e-17
/* e^r's Taylor terms 1/13!, ..., 1/2 (vec_math.h's ptl_vm_exp_coef_pd) */
#define PTL_EXP_TAYLOR_COEF                                                               \
    1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0,             \
        1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, \
        1.0 / 6.0, 0.5

/* ---- erfc: the scalar twin of unary_f8_erf.h's ptl_vm_erfcd_S (Note [Vector float64
 * erf, erfc, erfinv] describes the method; Note [Scalar twins of vector formulas]) ---- */

/* sum c[k] t^(n-1-k) as two Horner chains in t^2: ptl_vm_poly_split_S's twin */
PTL_HD_INLINE double
ptl_poly_split(double t, const double *c, int n)
{
    double t2 = t * t, a = c[0], b = c[1];
    for (int i = 2; i + 1 < n; i += 2) {
        a = fma(a, t2, c[i]);
        b = fma(b, t2, c[i + 1]);
    }
    if (n % 2 == 1) {
        return fma(b, t, fma(a, t2, c[n - 1]));
    }
    return fma(a, t, b);
}

/* Horner's rule by fma: ptl_vm_poly_S's twin */
PTL_HD_INLINE double
ptl_sp_horner(double t, const double *c, int n)
{
    double p = c[0];
    for (int i = 1; i < n; i++) {
        p = fma(p, t, c[i]);
    }
    return p;
}

/* e^r - 1 - r = r^2 P(r) by Estrin's scheme: ptl_vm_exp_pair_poly_S's twin */
PTL_HD_INLINE double
ptl_exp_pair_poly(double r)
{
    const double c[] = {PTL_EXP_TAYLOR_COEF};
    double r2 = r * r, r4 = r2 * r2;
    double q0 = fma(c[10], r, c[11]), q1 = fma(c[8], r, c[9]), q2 = fma(c[6], r, c[7]);
    double q3 = fma(c[4], r, c[5]), q4 = fma(c[2], r, c[3]), q5 = fma(c[0], r, c[1]);
    double lo = fma(fma(q3, r2, q2), r4, fma(q1, r2, q0));
    double hi = fma(q5, r2, q4);
    return fma(hi, r4 * r4, lo);
}

/* 2^n for integral n in the normal exponent range */
PTL_HD_INLINE double
ptl_pow2i(double n)
{
    uint64_t bits = (uint64_t)((int64_t)n + 1023) << 52;
    double r;
    memcpy(&r, &bits, sizeof r);
    return r;
}

/* erfc(a) for a in [0.5, 27.5] (ptl_vm_erfc_big_S's twin) */
PTL_DEVICE_FN double
ptl_sp_erfc_big(double a)
{
    /* erfcx(a) = c0 + t: below 8 by the interval of a (exponent and two mantissa bits),
     * d = a - its centre exact */
    double an = a < 0x1.fffffffffffffp2 ? a : 0x1.fffffffffffffp2, c0, t;
    uint64_t bits, cb;
    memcpy(&bits, &an, sizeof bits);
    int idx = (int)(bits >> 50) - 4088;
    cb = (bits & ~((1ull << 50) - 1)) | (1ull << 49);
    double centre;
    memcpy(&centre, &cb, sizeof centre);
    double d = an - centre, p = ptl_erfcx_coef[0][idx];
    for (int r = 1; r < 13; r++) {
        p = fma(p, d, ptl_erfcx_coef[r][idx]);
    }
    t = fma(p, d, ptl_erfcx_coef[14][idx]);
    c0 = ptl_erfcx_coef[13][idx];
    if (a >= 8.0) {
        double du = 1.0 / (a * a) - 0.0085;
        t = fma(ptl_sp_horner(du, ptl_erfcx_far_coef, 9), du, PTL_ERFCX_FAR_C0_LO);
        c0 = PTL_ERFCX_FAR_C0_HI;
    }
    /* e^(-a^2) = 2^n (1 + rh + m) */
    double h = a * a, l = fma(a, a, -h);
    double k = fma(-h, 1.4426950408889634, 6755399441055744.0);
    double n = k - 6755399441055744.0;
    double rh = fma(-n, 0.693147180369123816490, -h);
    double rl = fma(-n, 1.90821492927058770002e-10, -l);
    double r = rh + rl;
    double m = fma(ptl_exp_pair_poly(r), r * r, rl);
    double ah = PTL_DMUL_RN(c0, rh), al = fma(c0, rh, -ah);
    double sh = c0 + ah, se = (c0 - sh) + ah;
    double rest = fma(t, rh + m, t);
    rest = fma(c0, m, al) + rest;
    double y = sh + (se + rest);
    if (a >= 8.0) {
        y = y / a;
    }
    double n1 = floor(n * 0.5);
    y = y * ptl_pow2i(n1);
    return y * ptl_pow2i(n - n1);
}

/* erfc(x): ptl_vm_erfcd_S's twin */
PTL_DEVICE_FN double
ptl_sp_erfc_d(double x)
{
    if (x != x) {
        return x;
    }
    double a = fabs(x), c = x >= 0.25 ? 0.5 : 0.0;
    double small = ptl_poly_split(fma(a < 0.5 ? a : 0.5, a < 0.5 ? a : 0.5, -0.5),
                                  ptl_erf_small_coef, 13);
    double y = (1.0 - c) - fma(x, small, x - c);
    if (a >= 0.5) {
        double e = ptl_sp_erfc_big(a < 27.5 ? a : 27.5);
        y = x < 0.0 ? 2.0 - e : e;
    }
    return y;
}

/* ---- erfcx ---- */

/* erfcx by the asymptotic series, x >= 26 (and NaN) */
PTL_HD_INLINE double
ptl_erfcx_asym_d(double x)
{
    if (x != x) {
        return x;
    }
    if (x > 1e9) {   /* the series' second term is below 5e-19 */
        return (1.0 / PTL_SQRT_PI) / x;
    }
    double w = 0.5 / (x * x), t = 1.0, sum = 1.0;
    for (int k = 1; k < 20; k++) {
        t *= -(double)(2 * k - 1) * w;
        sum += t;
        if (fabs(t) < 1e-17) {
            break;
        }
    }
    return sum / (x * PTL_SQRT_PI);
}

/* erfcx(x) from e = erfc(min(x, 26)) */
PTL_HD_INLINE double
ptl_erfcx_from_erfc(double x, double e)
{
    if (!(x < 26.0)) {
        return ptl_erfcx_asym_d(x);
    }
    double sq = x * x, lo = fma(x, x, -sq);
    if (sq > 709.0) {   /* x < -26.6: 2 e^(x^2) overflows */
        return INFINITY;
    }
    double r = exp(sq) * e;
    return r + PTL_DMUL_RN(r, lo);
}

PTL_DEVICE_FN double
ptl_erfcx_d(double x)
{
    return ptl_erfcx_from_erfc(x, x < 26.0 ? ptl_sp_erfc_d(x) : 0.0);
}

/* ---- ndtr and log_ndtr ---- */

/* ndtr(x) from e = erfc(th), th = fl(-x / sqrt(2)): the correction computed for every x and
 * selected (a blend, which special.c's blocks vectorize); erfc(th) is 0 from th = 27.3
 * (x = -38.6) on, and x = -inf's NaN correction is not selected */
PTL_HD_INLINE double
ptl_ndtr_from_erfc(double x, double e)
{
    double th = -x * PTL_RSQRT2_HI;
    double tl = fma(-x, PTL_RSQRT2_HI, -th) + PTL_DMUL_RN(-x, PTL_RSQRT2_LO);
    double r = th + sqrt(fma(th, th, 1.2732395447351628));   /* 4 / pi */
    double c = 1.0 - PTL_DMUL_RN(tl, r);
    return 0.5 * e * (x < -1.0 && x >= -40.0 ? c : 1.0);     /* NaN stays NaN */
}

PTL_DEVICE_FN double
ptl_ndtr_d(double x)
{
    return ptl_ndtr_from_erfc(x, ptl_sp_erfc_d(-x * PTL_RSQRT2_HI));
}

/* Note [Float ndtr]
 * ~~~~~~~~~~~~~~~~~
 * float32 ndtr runs in float arithmetic (special.c's blocks: 8 or 16 lanes a vector, this
 * twin's operations in the same order): t = ndtr(-a) = e^(-a^2/2) Q(a), a = |x| clamped at
 * 15 (ndtr(-15) = 4e-51 rounds to 0), Q(a) = erfcx(a / sqrt(2)) / 2; ndtr(x) = t below 0,
 * 1 - t above (t <= 1/2 there: its error is below the result's half ulp).
 *   a^2 = h + l exactly (fma); -h/2 = n ln2 + r_hi (n = round(-h/2 log2 e), ln2_hi of 16
 *   bits: r_hi is exact), r = r_hi + (-n ln2_lo - l/2) rounded (1e-8 of e^r at most):
 *   the rounding of a^2, which would cost a^2/2 ulps (110 at a = 14.8), costs nothing.
 *   e^r = 1 + er, er = r + r^2 E(r), E of degree 5 (fit 3e-10).
 *   Q on 13 intervals picked by the bits of a + 2 (width 1/2 below 2, 1 below 6, 2 up to
 *   14, then [14, 15]): c0 + d P(d), d = a - centre, P of degree 7 (fit 1.3e-9 relative
 *   with float coefficients; tools/fit_ndtr_f32.py), c0 = Q(centre) within 1e-10 (the
 *   centres are chosen for it).  The vector blocks look the coefficients up by permutes
 *   of one 16-float row each.
 *   t = (Q + Q er) 2^n1 2^n2 (n1 = trunc(n / 2): two normal factors; a subnormal t is
 *   rounded once more).  NaN stays NaN; +-inf give 1 and 0.
 * Error: under 2 ulps of float against the float64 value (1.79 measured on 1.2e7 points),
 * the subnormal tail (x < -12.95) within an ulp of the smallest subnormal. */
PTL_DEVICE_FN float
ptl_ndtr_f(float x)
{
    float a = fabsf(x);
    a = a < 15.0f ? a : 15.0f;   /* NaN: any a, replaced at the end */
    float h = PTL_FMUL_RN(a, a), l = fmaf(a, a, -h), y = -0.5f * h;
    float n = fmaf(y, 1.44269504088896341f, 12582912.0f) - 12582912.0f;
    float r = fmaf(n, -0.693145751953125f, y);
    r = r + fmaf(n, -1.428606765330187e-06f, -0.5f * l);
    float e = ptl_ndtr_f_exp[0];
    for (int k = 1; k < 6; k++) {
        e = fmaf(e, r, ptl_ndtr_f_exp[k]);
    }
    float er = fmaf(PTL_FMUL_RN(r, r), e, r);
    float a2 = a + 2.0f;
    uint32_t bits;
    memcpy(&bits, &a2, sizeof bits);
    int idx = (int)(bits >> 21) - 512;
    float d = a - ptl_ndtr_f_tab[idx], q = ptl_ndtr_f_tab[16 + idx];
    for (int k = 2; k < 9; k++) {
        q = fmaf(q, d, ptl_ndtr_f_tab[16 * k + idx]);
    }
    float v = fmaf(q, er, q), n1 = truncf(0.5f * n);
    uint32_t b1 = (uint32_t)((int)n1 + 127) << 23, b2 = (uint32_t)((int)(n - n1) + 127) << 23;
    float s1, s2;
    memcpy(&s1, &b1, sizeof s1);
    memcpy(&s2, &b2, sizeof s2);
    v = (v * s1) * s2;
    float res = x < 0.0f ? v : 1.0f - v;
    return x != x ? x : res;
}

/* float32's ndtr for callers in double (the argument a float) */
PTL_DEVICE_FN double
ptl_ndtr_f32(double x)
{
    return (double)ptl_ndtr_f((float)x);
}

/* x^2 / 2 as hi + lo exactly (the halving is exact) */
PTL_HD_INLINE void
ptl_half_square(double x, double *hi, double *lo)
{
    double s = x * x;
    *hi = 0.5 * s;
    *lo = 0.5 * fma(x, x, -s);
}

/* log_ndtr(x) for x < -36 (and -inf): log(erfcx(t) / 2) - x^2 / 2, t = -x / sqrt(2) */
PTL_DEVICE_FN double
ptl_log_ndtr_tail_d(double x)
{
    if (x < -1e150) {   /* x^2 may overflow; the rest is below -x^2/2's ulp */
        return (-0.5 * x) * x;
    }
    double hi, lo;
    ptl_half_square(x, &hi, &lo);
    return (log(0.5 * ptl_erfcx_d(-x * PTL_SQRT1_2)) - hi) - lo;
}

/* log_ndtr(x) from e = erfc(fl(|x| / sqrt(2))) */
PTL_DEVICE_FN double
ptl_log_ndtr_from_erfc(double x, double e)
{
    double s = ptl_ndtr_from_erfc(-fabs(x), e);
    if (x > 0.0) {
        return log1p(-s);
    }
    return x >= -36.0 ? log(s) : ptl_log_ndtr_tail_d(x);   /* NaN stays NaN */
}

PTL_DEVICE_FN double
ptl_log_ndtr_d(double x)
{
    return ptl_log_ndtr_from_erfc(x, ptl_sp_erfc_d(fabs(x) * PTL_RSQRT2_HI));
}

/* Note [Fast ndtri]
 * ~~~~~~~~~~~~~~~~~
 * ndtri evaluates fixed polynomials: |p - 1/2| <= 1/4, q = p - 1/2 exact: q G(q^2), G of
 * degree 16; p < 1/4: H(r), r = sqrt(-2 log p) in (1.66, 38.6] (the smallest subnormal p),
 * H of degree 17 on the unit interval [3/2 + i, 5/2 + i) that holds r; p > 3/4: -H of 1 - p
 * (exact).  Each fit is within an ulp (tools/fit_ndtri.py); log's rounding moves x by at
 * most 3.2 times its relative error (r H'(r) / H(r) at p = 1/4, less deeper in the tail). */

/* ndtri for |q| <= 1/4, q = p - 1/2 */
PTL_DEVICE_FN double
ptl_ndtri_mid(double q)
{
    return q * ptl_bessel_poly(ptl_ndtri_tab + 18 * 38, 18, PTL_DMUL_RN(q, q) - 0.03125);
}

PTL_DEVICE_FN double
ptl_ndtri_d(double p)
{
    if (!(p > 0.0 && p < 1.0)) {
        return p == 0.0 ? -INFINITY : p == 1.0 ? INFINITY : NAN;
    }
    double q = p - 0.5;
    if (fabs(q) <= 0.25) {
        return ptl_ndtri_mid(q);
    }
    double r = sqrt(-2.0 * log(q < 0.0 ? p : 1.0 - p));
    int i = (int)(r - 1.5);
    i = i > 37 ? 37 : i;
    double x = ptl_bessel_poly(ptl_ndtri_tab + 18 * i, 18, r - (2.0 + (double)i));
    return q < 0.0 ? x : -x;
}

#endif
