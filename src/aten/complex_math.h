/* complex_math.h -- C99 <complex.h> for the CPU kernels of complex64/complex128, without
 * its macros `I` and `complex` (kernels use both words as names).  Build a value with
 * ptl_cmplx / ptl_cmplxf (CMPLX is C11 but not every libc has it). */
#ifndef PTL_ATEN_COMPLEX_MATH_H
#define PTL_ATEN_COMPLEX_MATH_H

#include <complex.h>
#undef I
#undef complex
#include <math.h>

#include "../c10/dtype.h"
#include "special_math.h"

static inline ptl_complex128
ptl_cmplx(double re, double im)
{
    ptl_complex128 z;
    __real__ z = re;
    __imag__ z = im;
    return z;
}

static inline ptl_complex64
ptl_cmplxf(float re, float im)
{
    ptl_complex64 z;
    __real__ z = re;
    __imag__ z = im;
    return z;
}

/* a b by the textbook formula, as PyTorch's c10::complex and NumPy compute it (C99's `*`
 * calls __mulsc3 to recover infinities from nan results: 4x slower and different from
 * both) */
static inline ptl_complex128
ptl_cmul(ptl_complex128 a, ptl_complex128 b)
{
    return ptl_cmplx(creal(a) * creal(b) - cimag(a) * cimag(b),
                     creal(a) * cimag(b) + cimag(a) * creal(b));
}

static inline ptl_complex64
ptl_cmulf(ptl_complex64 a, ptl_complex64 b)
{
    return ptl_cmplxf(crealf(a) * crealf(b) - cimagf(a) * cimagf(b),
                      crealf(a) * cimagf(b) + cimagf(a) * crealf(b));
}

/* a / b by Smith's method (scale by the ratio of b's smaller part to its larger), as PyTorch's
 * c10::complex and NumPy divide: C99's `/` also recovers infinities from nan results, so
 * (-inf + nan i) / (2 + i) is -inf + inf i there and nan + nan i here and in PyTorch.  A zero
 * b divides each part by zero. */
#define PTL_CDIV_BODY(T, FABS, MK, RE, IM)                                                \
    T ar = RE(a), ai = IM(a), br = RE(b), bi = IM(b);                                    \
    if (FABS(br) >= FABS(bi)) {                                                           \
        if (br == 0 && bi == 0) {                                                         \
            return MK(ar / FABS(br), ai / FABS(bi));                                      \
        }                                                                                 \
        T rat = bi / br, scl = (T)1 / (br + bi * rat);                                    \
        return MK((ar + ai * rat) * scl, (ai - ar * rat) * scl);                          \
    }                                                                                     \
    T rat = br / bi, scl = (T)1 / (bi + br * rat);                                        \
    return MK((ar * rat + ai) * scl, (ai * rat - ar) * scl);

static inline ptl_complex128
ptl_cdiv(ptl_complex128 a, ptl_complex128 b)
{
    PTL_CDIV_BODY(double, fabs, ptl_cmplx, creal, cimag)
}

static inline ptl_complex64
ptl_cdivf(ptl_complex64 a, ptl_complex64 b)
{
    PTL_CDIV_BODY(float, fabsf, ptl_cmplxf, crealf, cimagf)
}
#undef PTL_CDIV_BODY

/* 2x + x^2 + y^2 with the rounding errors of the squares and of their sum added back: the
 * 2x and x^2 + y^2 that cancel on |1 + z| = 1 are then both exact or nearly so */
static inline double
ptl_clog1p_arg(double x, double y)
{
    double xx = x * x, yy = y * y, e1 = fma(x, x, -xx), e2 = fma(y, y, -yy), e3;
    double sq = ptl_two_sum_d(xx, yy, &e3);
    return (2.0 * x + sq) + (e1 + e2 + e3);
}

/* log(1 + z) = log|1 + z| + i arg(1 + z), log|1 + z| = log1p(2x + x^2 + y^2) / 2 near 0
 * (Note [Complex elementwise math] in native/complex_unary.c) */
static inline ptl_complex128
ptl_clog1p(ptl_complex128 z)
{
    double x = creal(z), y = cimag(z);
    if (!isfinite(x) || !isfinite(y) || fabs(x) + fabs(y) >= 0.5) {
        return clog(1.0 + z);
    }
    double m = ptl_clog1p_arg(x, y);
    return ptl_cmplx(m == 0 ? x : 0.5 * log1p(m), atan2(y, 1.0 + x));
}

#endif
