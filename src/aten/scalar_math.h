/* scalar_math.h -- scalar formulas shared by the CPU loops and the CUDA kernels
 * (PTL_HD marks them __host__ __device__ under nvcc), so the CPU tests check the GPU's
 * math.  Mirrors the scalar lambdas of ATen/native/cpu/BinaryOpsKernel.cpp. */
#ifndef PTL_ATEN_SCALAR_MATH_H
#define PTL_ATEN_SCALAR_MATH_H

#include <math.h>
#include <stdint.h>

#include "../c10/macros.h"

PTL_HD static inline double ptl_add_d(double a, double b, double alpha) { return a + alpha * b; }
PTL_HD static inline float ptl_add_f(float a, float b, float alpha) { return a + alpha * b; }
PTL_HD static inline int64_t ptl_add_i(int64_t a, int64_t b, int64_t alpha) { return (int64_t)((uint64_t)a + (uint64_t)alpha * (uint64_t)b); }

/* ---- division family.  Integer formulas take b != 0 (the loops check) and compute in
 * int64_t; INT64_MIN / -1 wraps instead of trapping (PyTorch's CPU kernel traps). ---- */

/* C division: rounds toward zero. */
PTL_HD static inline int64_t
ptl_div_trunc_i(int64_t a, int64_t b)
{
    return b == -1 ? (int64_t)(0 - (uint64_t)a) : a / b;
}

/* Python's //: rounds toward negative infinity. */
PTL_HD static inline int64_t
ptl_div_floor_i(int64_t a, int64_t b)
{
    if (b == -1) {
        return (int64_t)(0 - (uint64_t)a);
    }
    int64_t q = a / b, r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}

/* Python's %: the result has the sign of b. */
PTL_HD static inline int64_t
ptl_remainder_i(int64_t a, int64_t b)
{
    if (b == -1) {
        return 0;
    }
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

/* C's %: the result has the sign of a. */
PTL_HD static inline int64_t
ptl_fmod_i(int64_t a, int64_t b)
{
    return b == -1 ? 0 : a % b;
}

/* Floating floor division as Python's float.__floordiv__: the quotient of the exact
 * remainder, rounded to the nearest integer, so that a == b * q + remainder(a, b) holds
 * as closely as possible; division by zero gives the IEEE quotient. */
PTL_HD static inline double
ptl_div_floor_d(double a, double b)
{
    if (b == 0) {
        return a / b;
    }
    double mod = fmod(a, b);
    double div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) {
        div -= 1;
    }
    if (div == 0) {
        return copysign(0.0, a / b);
    }
    double q = floor(div);
    return div - q > 0.5 ? q + 1 : q;
}

PTL_HD static inline float
ptl_div_floor_f(float a, float b)
{
    if (b == 0) {
        return a / b;
    }
    float mod = fmodf(a, b);
    float div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) {
        div -= 1;
    }
    if (div == 0) {
        return copysignf(0.0f, a / b);
    }
    float q = floorf(div);
    return div - q > 0.5f ? q + 1 : q;
}

PTL_HD static inline double
ptl_remainder_d(double a, double b)
{
    double m = fmod(a, b);
    return (m != 0 && ((b < 0) != (m < 0))) ? m + b : m;
}

PTL_HD static inline float
ptl_remainder_f(float a, float b)
{
    float m = fmodf(a, b);
    return (m != 0 && ((b < 0) != (m < 0))) ? m + b : m;
}

/* ---- pow ---- */

/* Integer power by squaring, wrapping like the C unsigned types; a negative exponent gives
 * 1 / a truncated (1 for a == 1, +-1 for a == -1, else 0), as PyTorch's powi. */
PTL_HD static inline int64_t
ptl_pow_i(int64_t a, int64_t b)
{
    if (b < 0) {
        return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    }
    uint64_t r = 1, base = (uint64_t)a;
    while (b) {
        if (b & 1) {
            r *= base;
        }
        base *= base;
        b >>= 1;
    }
    return (int64_t)r;
}

/* A Python-number exponent x: PyTorch's pow.Tensor_Scalar fast paths (so (-0.0) ** 0.5
 * is sqrt's -0.0 there, while a tensor exponent gives pow's 0.0). */
PTL_HD static inline double
ptl_pow_scalar_d(double a, double x)
{
    if (x == 2) {
        return a * a;
    }
    if (x == 3) {
        return a * a * a;
    }
    if (x == 0.5) {
        return sqrt(a);
    }
    if (x == -0.5) {
        return 1 / sqrt(a);
    }
    if (x == -1) {
        return 1 / a;
    }
    if (x == -2) {
        return 1 / (a * a);
    }
    return pow(a, x);
}

PTL_HD static inline float
ptl_pow_scalar_f(float a, float x)
{
    if (x == 2) {
        return a * a;
    }
    if (x == 3) {
        return a * a * a;
    }
    if (x == 0.5f) {
        return sqrtf(a);
    }
    if (x == -0.5f) {
        return 1 / sqrtf(a);
    }
    if (x == -1) {
        return 1 / a;
    }
    if (x == -2) {
        return 1 / (a * a);
    }
    return powf(a, x);
}

/* ---- maximum / minimum: NaN propagating (fmax/fmin are C's NaN ignoring ones) ---- */

PTL_HD static inline double
ptl_maximum_d(double a, double b)
{
    return a != a ? a : b != b ? b : a > b ? a : b;
}

PTL_HD static inline double
ptl_minimum_d(double a, double b)
{
    return a != a ? a : b != b ? b : a < b ? a : b;
}

PTL_HD static inline float
ptl_maximum_f(float a, float b)
{
    return a != a ? a : b != b ? b : a > b ? a : b;
}

PTL_HD static inline float
ptl_minimum_f(float a, float b)
{
    return a != a ? a : b != b ? b : a < b ? a : b;
}

/* ---- shifts on a BITS-wide integer held in int64_t.  A shift count that is negative or
 * not below BITS gives 0 (left), or the sign fill a >> (BITS - 1) (right; 0 when unsigned),
 * as PyTorch's left_shift/right_shift. ---- */

PTL_HD static inline int64_t
ptl_lshift_i(int64_t a, int64_t b, int bits)
{
    return (b < 0 || b >= bits) ? 0 : (int64_t)((uint64_t)a << b);
}

PTL_HD static inline int64_t
ptl_rshift_i(int64_t a, int64_t b, int bits)
{
    return (b < 0 || b >= bits) ? (a < 0 ? -1 : 0) : a >> b;
}

/* ---- isclose: a == b, or both NaN when equal_nan, or a finite |a - b| within
 * atol + |rtol * b| (PyTorch's formula; rtol and atol are >= 0). ---- */

PTL_HD static inline int
ptl_isclose_d(double a, double b, double rtol, double atol, int equal_nan)
{
    if (a == b) {
        return 1;
    }
    if (a != a || b != b) {
        return equal_nan && a != a && b != b;
    }
    double diff = fabs(a - b);
    return isfinite(diff) && diff <= atol + fabs(rtol * b);
}

PTL_HD static inline int
ptl_isclose_f(float a, float b, float rtol, float atol, int equal_nan)
{
    if (a == b) {
        return 1;
    }
    if (a != a || b != b) {
        return equal_nan && a != a && b != b;
    }
    float diff = fabsf(a - b);
    return isfinite(diff) && diff <= atol + fabsf(rtol * b);
}

#endif
