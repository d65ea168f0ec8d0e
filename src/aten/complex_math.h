/* complex_math.h -- C99 <complex.h> for the CPU kernels of complex64/complex128, without
 * its macros `I` and `complex` (kernels use both words as names).  Build a value with
 * ptl_cmplx / ptl_cmplxf (CMPLX is C11 but not every libc has it). */
#ifndef PTL_ATEN_COMPLEX_MATH_H
#define PTL_ATEN_COMPLEX_MATH_H

#include <complex.h>
#undef I
#undef complex

#include "../c10/dtype.h"

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

#endif
