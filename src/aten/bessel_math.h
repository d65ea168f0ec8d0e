/* bessel_math.h -- scalar formulas of the Bessel functions J0, J1, Y0, Y1, the modified
 * Bessel functions of the second kind K0, K1 (and e^x K0, e^x K1), the spherical Bessel
 * function j0 and the Airy function Ai, in double: native/special.c's CPU loops and
 * src/cuda/elementwise.cu's CUDA kernels evaluate these definitions (PTL_HD / PTL_DEVICE_FN,
 * tables from special_tables.h), and special.c's vector blocks compute their sin and cos
 * with the bits of ptl_sincos_twin here.  Mirrors the scalar code of ATen/native/Math.h
 * (bessel_j0_forward, ..., airy_ai_forward) in purpose; the methods are our own (PyTorch's
 * are Cephes' rational fits).  See Note [Bessel functions of real argument]. */
#ifndef PTL_ATEN_BESSEL_MATH_H
#define PTL_ATEN_BESSEL_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../c10/macros.h"
#include "scalar_math.h"
#include "special_tables.h"

/* Note [Bessel functions of real argument]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Fixed polynomials everywhere, fitted by tools/fit_*.py (tables in special_tables.h): Note
 * [Fast Bessel functions of real argument] (J, Y), Note [Fast modified Bessel functions K]
 * and Note [Fast Airy Ai] below.  One definition for both backends (Note [One special
 * formula for the CPU and CUDA] in gaussian_math.h): every FMA is an fma, every product that
 * feeds an add is rounded apart (PTL_DMUL_RN), and the sin and cos of the Hankel branch are
 * ptl_sincos_twin's, the bits of special.c's vector sincos; log, exp, sqrt's neighbours and
 * the sin / cos of the slow arguments are each backend's libm.
 *
 * Special values: J, Y and Ai are NaN at +-inf, as PyTorch's (float32 and float64) and
 * SciPy's: see Note [Special functions at the infinities] in special_math.h.  The spherical
 * j0 is 0 at +-inf and K(+inf) 0, as theirs; Y(0) = -inf, K(0) = inf; Y, K of x < 0 are
 * NaN.  Ai(-z) is NaN once zeta = 2/3 z^(3/2) >= 2^64 (z above about 3.2e12), where the
 * phase error of zeta as a pair would pass 2^-41; SciPy gives NaN from z = 1e8 on. */

#define PTL_BESSEL_JY_SERIES_MAX 25.0
#define PTL_TWO_OVER_PI 0.63661977236758134308
#define PTL_PI_D 3.14159265358979323846
/* pi/2 as C1 + C2 + C3 (33, 33 and 53 bits): vec_math.h's PTL_VM_PIO2_C1..C3 */
#define PTL_PIO2_C1 0x1.921fb54400000p+0
#define PTL_PIO2_C2 0x1.0b4611a600000p-34
#define PTL_PIO2_C3 0x1.3198a2e037073p-69

/* sum c[k] t^k, k < ncoef, as four Horner chains in t^4 (c[j], c[j + 4], ... for j < 4)
 * joined by (s0 + t s1) + t^2 (s2 + t s3): a quarter of Horner's latency, which bounds
 * special.c's loops.  fma: the same bits on every CPU and on the device; always inlined on
 * the CPU, for the formulas to be compiled into each of special.c's FMA clones. */
PTL_HD_INLINE double
ptl_bessel_poly(const double *c, int ncoef, double t)
{
    double t2 = t * t, t4 = t2 * t2, s[4];
    for (int j = 0; j < 4; j++) {
        int top = j + 4 * ((ncoef - 1 - j) / 4);
        s[j] = top < ncoef ? c[top] : 0.0;
        for (int k = top - 4; k >= 0; k -= 4) {
            s[j] = fma(s[j], t4, c[k]);
        }
    }
    return fma(t2, fma(s[3], t, s[2]), fma(s[1], t, s[0]));
}

/* *s = sin x, *c = cos x: the scalar twin of vec_math.h's ptl_vm_sincos_fast_S with
 * ptl_vm_patch_S's libm sin and cos on its slow arguments (Note [Vector float64 sin, cos,
 * tanh, sigmoid]: |x| > 2^20, inf, NaN, x within 2^-58 relative of a multiple of pi/2), under
 * the rules of Note [Scalar twins of vector formulas]; the kernel is scalar_math.h's
 * ptl_sincos_kernel, ptl_sincos2pi's */
PTL_HD_INLINE void
ptl_sincos_twin(double x, double *s, double *c)
{
    double k = fma(x, PTL_TWO_OVER_PI, PTL_SINCOS2PI_MAGIC);
    double q = k - PTL_SINCOS2PI_MAGIC;
    uint64_t kbits;
    memcpy(&kbits, &k, sizeof kbits);
    double t = fma(-q, PTL_PIO2_C1, x), b = PTL_DMUL_RN(q, -PTL_PIO2_C2);
    double rh = t + b, bb = rh - t, e = (t - (rh - bb)) + (b - bb);   /* two-sum */
    double rl = fma(-q, PTL_PIO2_C3, e);
    double xh = rh + rl, xl = rl - (xh - rh);
    double ax = fabs(x);
    if (!(ax <= 0x1p20) || fabs(xh) < PTL_DMUL_RN(fabs(q), 0x1p-58)) {
        *s = sin(x);
        *c = cos(x);
        return;
    }
    ptl_sincos_kernel(xh, xl, kbits, s, c);
    if (ax < 0x1p-27) {
        *s = x;
    }
}

/* Note [Fast Bessel functions of real argument]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * J0, J1, Y0, Y1 evaluate fixed polynomials:
 *   |x| < 1: the ascending series (DLMF 10.2.2, 10.8.1-2) as polynomials in z = x^2,
 *     J0 = A(z), J1 = x B(z), Y0 = 2/pi log(x) J0 + C(z), Y1 = 2/pi log(x) J1 - 2/(pi x)
 *     + x D(z), twelve terms (the thirteenth is below 1e-22 at x = 1);
 *   1 <= |x| < 25: a degree-13 polynomial in t = |x| - i - 1/2 on each unit interval
 *     [i, i + 1) (the Chebyshev interpolant of the function, fitted to 40 digits); below
 *     3 the Y tables hold the entire S_n = Y_n - 2/pi log(x) J_n (+ 2/(pi x) for n = 1),
 *     whose logarithmic singularity at 0 would need a higher degree, and the log term is
 *     added back;
 *   |x| >= 25: Hankel's expansion (DLMF 10.17.3-4) sqrt(2 / (pi x)) (P cos w - Q sin w) for
 *     J and (P sin w + Q cos w) for Y, w = x - (n/2 + 1/4) pi, its P and Q as polynomials
 *     of 11 terms in 1/x^2 (the 22nd term of the series is below 1e-18 at x = 25); cos w and
 *     sin w are sums of cos |x| and sin |x| (ptl_sincos_twin: special.c's blocks take them
 *     from vec_math.h's vector sincos, a block's worth at a time, with the same bits), so
 *     near a zero the error is absolute (an ulp of the envelope), and the phase is right to
 *     x = 1e300 (libm's exact reduction on the slow arguments).
 * tools/fit_bessel_jy.py prints the tables and their errors: at most 2 ulps of max(|f(x)|,
 * sqrt(2 / (pi x))) in Horner's evaluation, whose rounding, like the fit's, is absolute near
 * a zero (as the Hankel branch's).  Each element is a table look-up and 13 multiply-adds
 * (the log below 3 for Y).  float32 rounds the double result once. */

/* J_n (want_y 0) or Y_n (want_y 1) of x, n 0 or 1; sc, when not NULL, holds sin |x| and
 * cos |x| for the Hankel branch (ptl_sincos_twin's bits), else they are computed here */
PTL_DEVICE_FN double
ptl_bessel_jy_sc(int n, int want_y, double x, const double *sc)
{
    double ax = fabs(x);
    if (want_y && !(x > 0.0)) {
        return x != x ? x : x == 0.0 ? -INFINITY : NAN;
    }
    if (ax < 1.0) {
        double z = ax * ax;
        double j = ptl_bessel_poly(n ? ptl_bessel_j1_ser : ptl_bessel_j0_ser, 12, z);
        if (n == 1) {
            j *= ax;
        }
        if (!want_y) {
            return (n == 1 && signbit(x)) ? -j : j;
        }
        double sv = ptl_bessel_poly(n ? ptl_bessel_s1_ser : ptl_bessel_s0_ser, 12, z);
        double l = PTL_TWO_OVER_PI * log(ax);
        return n == 0 ? PTL_DMUL_RN(l, j) + sv
                      : PTL_DMUL_RN(l, j) + (PTL_DMUL_RN(ax, sv) - PTL_TWO_OVER_PI / ax);
    }
    if (ax < PTL_BESSEL_JY_SERIES_MAX) {
        int i = (int)ax;
        double t = ax - ((double)i + 0.5);
        int off = (i - 1) * 14;
        const double *jt = n ? ptl_bessel_j1_tab : ptl_bessel_j0_tab;
        if (!want_y) {
            double j = ptl_bessel_poly(jt + off, 14, t);
            return (n == 1 && signbit(x)) ? -j : j;
        }
        double v = ptl_bessel_poly((n ? ptl_bessel_y1_tab : ptl_bessel_y0_tab) + off, 14, t);
        if (ax < 3.0) {
            double j = ptl_bessel_poly(jt + off, 14, t);
            v += PTL_DMUL_RN(PTL_TWO_OVER_PI * log(ax), j) - (n ? PTL_TWO_OVER_PI / ax : 0.0);
        }
        return v;
    }
    if (ax != ax || isinf(ax)) {   /* Note [Special functions at the infinities] */
        return ax != ax ? x : NAN;
    }
    double y = 1.0 / (ax * ax);
    double p = ptl_bessel_poly(n ? ptl_bessel_p1_hankel : ptl_bessel_p0_hankel, 11, y);
    double q = ptl_bessel_poly(n ? ptl_bessel_q1_hankel : ptl_bessel_q0_hankel, 11, y) / ax;
    double c, sn, cw, sw;
    if (sc) {
        sn = sc[0];
        c = sc[1];
    }
    else {
        ptl_sincos_twin(ax, &sn, &c);
    }
    if (n == 0) {   /* w = x - pi/4, times sqrt(2) */
        cw = c + sn;
        sw = sn - c;
    }
    else {          /* w = x - 3 pi/4, times sqrt(2) */
        cw = sn - c;
        sw = -(sn + c);
    }
    double env = 1.0 / sqrt(PTL_PI_D * ax);
    double v = want_y ? env * (PTL_DMUL_RN(p, sw) + PTL_DMUL_RN(q, cw))
                      : env * (PTL_DMUL_RN(p, cw) - PTL_DMUL_RN(q, sw));
    return (n == 1 && !want_y && signbit(x)) ? -v : v;
}

PTL_DEVICE_FN double ptl_bessel_j0_d(double x) { return ptl_bessel_jy_sc(0, 0, x, NULL); }
PTL_DEVICE_FN double ptl_bessel_j1_d(double x) { return ptl_bessel_jy_sc(1, 0, x, NULL); }
PTL_DEVICE_FN double ptl_bessel_y0_d(double x) { return ptl_bessel_jy_sc(0, 1, x, NULL); }
PTL_DEVICE_FN double ptl_bessel_y1_d(double x) { return ptl_bessel_jy_sc(1, 1, x, NULL); }

/* Note [Fast modified Bessel functions K]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * K0, K1, e^x K0, e^x K1 evaluate fixed polynomials:
 *   x < 1: K0 = A(z) - log(x) I0(z), K1 = 1/x + x (log(x) C(z) + D(z)), z = x^2, twelve
 *     terms each (DLMF 10.31.1-2 regrouped; no cancellation below 1);
 *   1 <= x < 32: e^x K_n on the 20 intervals [2^k (1 + j/4), 2^k (1 + (j + 1)/4)), the
 *     exponent and the top two mantissa bits picking the row, a degree-13 polynomial in
 *     x - the interval's centre (exact);
 *   x >= 32: sqrt(x) e^x K_n = Hankel's series in 1/x, 18 terms.
 * tools/fit_bessel_k.py prints the tables: 1 ulp; K of x >= 1 is then e^-x times e^x K
 * (libm's exp), e^x K of x < 1 K times e^x. */

/* the centre 2^k (1 + (2 j + 1) / 8) of x's interval [2^k (1 + j/4), 2^k (1 + (j + 1)/4))
 * (x >= 1 normal): *row = 4 k + j */
PTL_HD_INLINE double
ptl_quarter_centre(double x, int *row)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    int k = (int)(bits >> 52) - 1023, j = (int)((bits >> 50) & 3);
    *row = 4 * k + j;
    return (1.0 + PTL_DMUL_RN((double)(2 * j + 1), 0.125)) * (double)(1 << k);
}

/* e^x K_n(x) for x >= 1 (inf gives 0) */
PTL_DEVICE_FN double
ptl_bessel_ke_big(int n, double x)
{
    if (x < 32.0) {
        int row;
        double centre = ptl_quarter_centre(x, &row);
        const double *c = (n ? ptl_bessel_k1_tab : ptl_bessel_k0_tab) + 14 * row;
        return ptl_bessel_poly(c, 14, x - centre);
    }
    return ptl_bessel_poly(n ? ptl_bessel_k1_asym : ptl_bessel_k0_asym, 18, 1.0 / x) / sqrt(x);
}

/* K_n(x) (scaled 0) or e^x K_n(x) (scaled 1), n 0 or 1 */
PTL_DEVICE_FN double
ptl_bessel_k(int n, double x, int scaled)
{
    if (!(x > 0.0)) {
        return x != x ? x : x == 0.0 ? INFINITY : NAN;
    }
    if (x >= 1.0) {
        double v = ptl_bessel_ke_big(n, x);
        return scaled ? v : v * exp(-x);
    }
    double z = x * x, l = log(x), v;
    if (n == 0) {
        v = ptl_bessel_poly(ptl_bessel_k_ser_a, 12, z) -
            PTL_DMUL_RN(l, ptl_bessel_poly(ptl_bessel_k_ser_i0, 12, z));
    }
    else {
        double w = PTL_DMUL_RN(l, ptl_bessel_poly(ptl_bessel_k_ser_c, 12, z)) +
                   ptl_bessel_poly(ptl_bessel_k_ser_d, 12, z);
        v = 1.0 / x + PTL_DMUL_RN(x, w);
    }
    return scaled ? v * exp(x) : v;
}

PTL_DEVICE_FN double ptl_bessel_k0_d(double x) { return ptl_bessel_k(0, x, 0); }
PTL_DEVICE_FN double ptl_bessel_k1_d(double x) { return ptl_bessel_k(1, x, 0); }
PTL_DEVICE_FN double ptl_bessel_k0e_d(double x) { return ptl_bessel_k(0, x, 1); }
PTL_DEVICE_FN double ptl_bessel_k1e_d(double x) { return ptl_bessel_k(1, x, 1); }

/* spherical j0(x) = sin(x) / x (sin by ptl_sincos_twin: special.c's blocks take the vector
 * sin, with its bits); its Taylor polynomial 1 - x^2/6 + x^4/120 - ... below |x| = 1/2 (the
 * quotient's two roundings there would be 1.5 ulp; the polynomial's truncation after x^14
 * is under 1e-19), 0 at +-inf */
PTL_HD_INLINE double
ptl_spherical_bessel_j0_small(double x)
{
    double z = x * x, t = 1.0, s = 1.0;
    for (int k = 1; k <= 7; k++) {
        t *= -z / ((double)(2 * k) * (double)(2 * k + 1));
        s += t;
    }
    return s;
}

/* j0 of x from s = sin x */
PTL_HD_INLINE double
ptl_spherical_bessel_j0_from_sin(double x, double s)
{
    if (isinf(x)) {
        return 0.0;
    }
    return fabs(x) < 0.5 ? ptl_spherical_bessel_j0_small(x) : s / x;
}

PTL_HD_INLINE double
ptl_spherical_bessel_j0_d(double x)
{
    double s = 0.0, c;
    if (!(fabs(x) < 0.5) && !isinf(x)) {
        ptl_sincos_twin(x, &s, &c);
    }
    return ptl_spherical_bessel_j0_from_sin(x, s);
}

/* Note [Fast Airy Ai]
 * ~~~~~~~~~~~~~~~~~~~
 * Ai evaluates fixed polynomials:
 *   -12 <= x < 2: a degree-15 polynomial in x - the centre on each interval of width 1/2;
 *   2 <= x < 128: e^-zeta times e^zeta Ai, the latter of degree 13 on the 24 intervals
 *     [2^k (1 + j/4), 2^k (1 + (j + 1)/4)), zeta = 2/3 x^(3/2) as a pair (its rounding
 *     would cost zeta ulps); 0 from 128 on (Ai(128) = 1e-420);
 *   x < -12: DLMF 9.7.9, (cos(zeta - pi/4) P + sin(zeta - pi/4) Q) / (sqrt(pi) z^(1/4)),
 *     with P and Q of 12 terms in 1/zeta^2, the phase zeta as a pair: sin and cos of
 *     hi + lo to first order in lo while |lo| < 2^-30 (zeta < 2^22), by the sum formulas
 *     above; NaN from zeta = 2^64 on (Note [Bessel functions of real argument]).
 * tools/fit_airy.py prints the tables: 1 ulp of max(|Ai|, envelope). */

/* zeta = 2/3 z^(3/2) as *hi + *lo (z > 0) */
PTL_HD_INLINE void
ptl_airy_zeta_pair(double z, double *hi, double *lo)
{
    double s = sqrt(z), slo = fma(-s, s, z) / (2.0 * s);
    double p = z * s, plo = fma(z, s, -p) + PTL_DMUL_RN(z, slo);
    *hi = 2.0 * p / 3.0;
    *lo = (fma(-*hi, 3.0, 2.0 * p) + PTL_DMUL_RN(2.0, plo)) / 3.0;
}

PTL_DEVICE_FN double
ptl_airy_ai_d(double x)
{
    double hi, lo;
    if (x >= -12.0 && x < 2.0) {
        int i = (int)((x + 12.0) * 2.0);
        i = i > 27 ? 27 : i;
        return ptl_bessel_poly(ptl_airy_mid_tab + 16 * i, 16,
                               x - (-11.75 + PTL_DMUL_RN(0.5, (double)i)));
    }
    if (x >= 2.0) {
        if (x >= 128.0) {   /* Note [Special functions at the infinities]: NaN at +inf */
            return isinf(x) ? NAN : 0.0;
        }
        int row;
        double centre = ptl_quarter_centre(x, &row);
        double f = ptl_bessel_poly(ptl_airy_pos_tab + 14 * (row - 4), 14, x - centre);
        ptl_airy_zeta_pair(x, &hi, &lo);
        return f * exp(-hi) * (1.0 - lo);
    }
    if (x != x || isinf(x)) {
        return x != x ? x : NAN;
    }
    double z = -x;
    ptl_airy_zeta_pair(z, &hi, &lo);
    if (hi >= 0x1p64) {   /* the pair's phase error, zeta 2^-105, passes 2^-41 */
        return NAN;
    }
    double y = 1.0 / (hi * hi);
    double p = ptl_bessel_poly(ptl_airy_p_asym, 12, y);
    double q = ptl_bessel_poly(ptl_airy_q_asym, 12, y) / hi;
    double sh = sin(hi), ch = cos(hi), cz, sz;
    if (hi < 0x1p22) {
        cz = ch - PTL_DMUL_RN(sh, lo);
        sz = sh + PTL_DMUL_RN(ch, lo);
    }
    else {
        double cl = cos(lo), sl = sin(lo);
        cz = PTL_DMUL_RN(ch, cl) - PTL_DMUL_RN(sh, sl);
        sz = PTL_DMUL_RN(sh, cl) + PTL_DMUL_RN(ch, sl);
    }
    /* cos(zeta - pi/4) and sin(zeta - pi/4), times sqrt(2) */
    double cw = cz + sz, sw = sz - cz;
    return (PTL_DMUL_RN(cw, p) + PTL_DMUL_RN(sw, q)) / (sqrt(2.0 * PTL_PI_D) * sqrt(sqrt(z)));
}

#endif
