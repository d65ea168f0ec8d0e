/* gaussian_math.h -- scalar formulas of the scaled complementary error function erfcx and
 * of the standard normal distribution's ndtr, log_ndtr and ndtri, in double, for the CPU
 * loops (native/special.c); PTL_HD marks them __host__ __device__ under nvcc, so a CUDA
 * kernel can call the same definitions.  Mirrors the scalar code of ATen/native/Math.h
 * (calc_erfcx, calc_log_ndtr, calc_ndtri) in purpose; the methods are our own.  See
 * Note [erfcx and the normal distribution]. */
#ifndef PTL_ATEN_GAUSSIAN_MATH_H
#define PTL_ATEN_GAUSSIAN_MATH_H

#include <math.h>

#include "scalar_math.h"

/* Note [erfcx and the normal distribution]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Everything rests on libm's erfc (relative error about an ulp everywhere it is normal)
 * and on e^(x^2) with x^2 = hi + lo held exactly (fma): e^(x^2) = e^hi (1 + lo), so the
 * rounding of x^2, which would cost x^2 ulps (700 near the overflow), costs nothing.
 *   erfcx(x) = e^(x^2) erfc(x) for x < 26; above, erfc is subnormal and the asymptotic
 *     series 1 / (x sqrt(pi)) sum_k (-1)^k (2k-1)!! / (2 x^2)^k is used (its terms fall
 *     below 1e-17 by the eighth at x = 26).
 *   ndtr(x) = erfc(-x / sqrt(2)) / 2 for x >= -1; below, erfcx(t) e^(-x^2 / 2) / 2 with
 *     t = -x / sqrt(2): erfcx is insensitive to the rounding of t (relative slope ~1),
 *     where erfc(t) would amplify it by 2 t^2.
 *   log_ndtr(x) = log1p(-ndtr(-x)) for x > 0, log(ndtr(x)) on [-1, 0], and
 *     log(erfcx(t) / 2) - x^2 / 2 below (no underflow, no cancellation: both are negative).
 *   ndtri(p): on [1/4, 3/4], x = sqrt(2) erfinv(2p - 1) (2p - 1 exact) and one Newton step
 *     on erf(x / sqrt(2)) = 2p - 1; below 1/4, the start of Abramowitz and Stegun 26.2.23
 *     (4.5e-4 absolute) and Newton steps on log_ndtr(x) = log p, whose step
 *     (log_ndtr(x) - log p) ndtr(x) / ndtr'(x) uses ndtr / ndtr' = sqrt(pi/2) erfcx(t)
 *     (no underflow down to the smallest subnormal p); above 3/4, -ndtri(1 - p), 1 - p
 *     exact.  The Newton steps stop when the step is below 4e-17 of x (at most 8). */

#define PTL_SQRT1_2 0.70710678118654752440
#define PTL_SQRT_PI 1.77245385090551602730
#define PTL_SQRT_2PI 2.50662827463100050242

/* x^2 / 2 as hi + lo exactly (the halving is exact) */
PTL_HD static inline void
ptl_half_square(double x, double *hi, double *lo)
{
    double s = x * x;
    *hi = 0.5 * s;
    *lo = 0.5 * fma(x, x, -s);
}

PTL_HD static inline double
ptl_erfcx_d(double x)
{
    if (x != x) {
        return x;
    }
    if (x < 26.0) {
        double s = x * x, lo = fma(x, x, -s);
        if (s > 709.0) {   /* x < -26.6: 2 e^(x^2) overflows */
            return INFINITY;
        }
        double r = exp(s) * erfc(x);
        return r + r * lo;
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

PTL_HD static inline double
ptl_ndtr_d(double x)
{
    if (x != x) {
        return x;
    }
    if (x >= -1.0) {
        return 0.5 * erfc(-x * PTL_SQRT1_2);
    }
    if (x < -40.0) {   /* below the smallest subnormal */
        return 0.0;
    }
    double hi, lo;
    ptl_half_square(x, &hi, &lo);
    double r = 0.5 * ptl_erfcx_d(-x * PTL_SQRT1_2) * exp(-hi);
    return r - r * lo;
}

PTL_HD static inline double
ptl_log_ndtr_d(double x)
{
    if (x != x) {
        return x;
    }
    if (x > 0.0) {
        return log1p(-ptl_ndtr_d(-x));
    }
    if (x >= -1.0) {
        return log(0.5 * erfc(-x * PTL_SQRT1_2));
    }
    if (x < -1e150) {   /* x^2 may overflow; the rest is below -x^2/2's ulp */
        return (-0.5 * x) * x;
    }
    double hi, lo;
    ptl_half_square(x, &hi, &lo);
    return (log(0.5 * ptl_erfcx_d(-x * PTL_SQRT1_2)) - hi) - lo;
}

/* ndtri(p) for 0 < p < 1/4 (a negative x) */
PTL_HD static inline double
ptl_ndtri_lower(double p)
{
    double r = sqrt(-2.0 * log(p));
    double x = -(r - (2.515517 + r * (0.802853 + r * 0.010328)) /
                         (1.0 + r * (1.432788 + r * (0.189269 + r * 0.001308))));
    double lp = log(p);
    for (int i = 0; i < 8; i++) {
        double step = (ptl_log_ndtr_d(x) - lp) * 1.25331413731550025121 *
                      ptl_erfcx_d(-x * PTL_SQRT1_2);   /* sqrt(pi/2) erfcx(t) */
        x -= step;
        if (fabs(step) <= 4e-17 * fabs(x)) {
            break;
        }
    }
    return x;
}

PTL_HD static inline double
ptl_ndtri_d(double p)
{
    if (p != p || p < 0.0 || p > 1.0) {
        return NAN;
    }
    if (p == 0.0) {
        return -INFINITY;
    }
    if (p == 1.0) {
        return INFINITY;
    }
    if (p < 0.25) {
        return ptl_ndtri_lower(p);
    }
    if (p > 0.75) {
        return -ptl_ndtri_lower(1.0 - p);
    }
    double q = 2.0 * p - 1.0, x = 1.41421356237309504880 * ptl_erfinv_d(q);
    /* Newton on erf(x / sqrt(2)) = q: erf's slope there is sqrt(2 / pi) e^(-x^2 / 2) */
    double hi, lo;
    ptl_half_square(x, &hi, &lo);
    double slope = 0.79788456080286535588 * exp(-hi) * (1.0 - lo);
    return x - (erf(x * PTL_SQRT1_2) - q) / slope;
}

#endif
