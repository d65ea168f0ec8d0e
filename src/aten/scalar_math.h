/* scalar_math.h -- scalar formulas shared by the CPU loops and the CUDA kernels
 * (PTL_HD marks them __host__ __device__ under nvcc), so the CPU tests check the GPU's
 * math.  Mirrors the scalar lambdas of ATen/native/cpu/BinaryOpsKernel.cpp. */
#ifndef PTL_ATEN_SCALAR_MATH_H
#define PTL_ATEN_SCALAR_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../c10/macros.h"

PTL_HD static inline double ptl_add_d(double a, double b, double alpha) { return a + alpha * b; }
PTL_HD static inline float ptl_add_f(float a, float b, float alpha) { return a + alpha * b; }
PTL_HD static inline int64_t ptl_add_i(int64_t a, int64_t b, int64_t alpha) { return (int64_t)((uint64_t)a + (uint64_t)alpha * (uint64_t)b); }

/* ---- conversions (ATen/native/Copy.cpp) ---- */

/* Float -> integer conversion without undefined behaviour, giving what PyTorch gives on
 * x86 (its results are platform-dependent; these are the hardware's truncating converts):
 * int64 from cvttsd2si, where NaN and out-of-range values become INT64_MIN; the narrower
 * types from the 32-bit convert, where they become INT32_MIN, then wrapped to the type
 * (NaN -> int32 is -2147483648, NaN -> int16 is 0, 300.0 -> uint8 is 44). */
PTL_HD static inline int64_t
ptl_d_to_i64(double v)
{
    if (!(v > -9.2233720368547758e18 && v < 9.2233720368547758e18)) {
        return INT64_MIN;
    }
    return (int64_t)v;
}

PTL_HD static inline int32_t
ptl_d_to_i32(double v)
{
    if (!(v > -2147483649.0 && v < 2147483648.0)) {
        return INT32_MIN;
    }
    return (int32_t)v;
}

/* ---- unary (ATen/native/cpu/UnaryOpsKernel.cpp, ATen/native/Math.h) ---- */

/* sign: -1, 0 or 1; nan and -0 give 0 (PyTorch's sign, unlike NumPy's nan). */
PTL_HD static inline double
ptl_sign_d(double x)
{
    return (double)((0 < x) - (x < 0));
}

/* integer abs, sign and relu in int64 (abs wraps at the minimum, as PyTorch's does) */
PTL_HD static inline int64_t
ptl_abs_i(int64_t x)
{
    return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
}

PTL_HD static inline int64_t
ptl_sign_i(int64_t x)
{
    return (0 < x) - (x < 0);
}

PTL_HD static inline int64_t
ptl_relu_i(int64_t x)
{
    return x < 0 ? 0 : x;
}

/* relu keeps nan and -0 (it is clamp_min(x, 0)). */
PTL_HD static inline double
ptl_relu_d(double x)
{
    return x < 0 ? 0 : x;
}

PTL_HD static inline float
ptl_sigmoid_f(float x)
{
    return 1.0f / (1.0f + expf(-x));
}

PTL_HD static inline double
ptl_sigmoid_d(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

/* The unary functions that are one libm call, in double (_d) and float (_f), so that the CPU
 * loops and the CUDA kernels call the same function: ptl_sin_d is sin, ptl_sin_f sinf. */
#define PTL_FORALL_LIBM_UNARY(_)                                                          \
    _(exp2) _(expm1) _(log2) _(log10) _(log1p) _(sin) _(cos) _(tan) _(asin) _(acos) _(atan) \
    _(sinh) _(cosh) _(erf) _(floor) _(ceil) _(trunc) _(lgamma)
#define PTL_DEFINE_LIBM_UNARY(F)                                                          \
    PTL_HD static inline double ptl_##F##_d(double x) { return F(x); }                    \
    PTL_HD static inline float ptl_##F##_f(float x) { return F##f(x); }
PTL_FORALL_LIBM_UNARY(PTL_DEFINE_LIBM_UNARY)
#undef PTL_DEFINE_LIBM_UNARY

/* the binary ones: atan2, pow, fmod, and fmax / fmin (NaN ignoring) */
#define PTL_FORALL_LIBM_BINARY(_) _(atan2) _(pow) _(fmod) _(fmax) _(fmin)
#define PTL_DEFINE_LIBM_BINARY(F)                                                         \
    PTL_HD static inline double ptl_##F##_d(double a, double b) { return F(a, b); }       \
    PTL_HD static inline float ptl_##F##_f(float a, float b) { return F##f(a, b); }
PTL_FORALL_LIBM_BINARY(PTL_DEFINE_LIBM_BINARY)
#undef PTL_DEFINE_LIBM_BINARY

PTL_HD static inline double ptl_rsqrt_d(double x) { return 1.0 / sqrt(x); }
PTL_HD static inline float ptl_rsqrt_f(float x) { return 1.0f / sqrtf(x); }
PTL_HD static inline double ptl_frac_d(double x) { return x - trunc(x); }
PTL_HD static inline float ptl_frac_f(float x) { return x - truncf(x); }
/* square of an integer, wrapping */
PTL_HD static inline int64_t ptl_square_i(int64_t x) { return (int64_t)((uint64_t)x * (uint64_t)x); }

/* nan_to_num: selects (the CPU loops vectorize), the replacements already in T */
#define PTL_DEFINE_NAN_TO_NUM(NAME, T)                                                    \
    PTL_HD static inline T                                                                \
    NAME(T x, T nan, T posinf, T neginf)                                                  \
    {                                                                                     \
        T y = x == (T)INFINITY ? posinf : x;                                              \
        y = x == -(T)INFINITY ? neginf : y;                                               \
        return x != x ? nan : y;                                                          \
    }
PTL_DEFINE_NAN_TO_NUM(ptl_nan_to_num_d, double)
PTL_DEFINE_NAN_TO_NUM(ptl_nan_to_num_f, float)
#undef PTL_DEFINE_NAN_TO_NUM

/* C division rounded toward zero (div's rounding_mode='trunc') */
PTL_HD static inline double ptl_div_trunc_d(double a, double b) { return trunc(a / b); }
PTL_HD static inline float ptl_div_trunc_f(float a, float b) { return truncf(a / b); }

/* round(x, decimals): round half to even at the given decimal.  p = 10^|decimals| is taken
 * in the tensor's precision, as PyTorch does (so huge `decimals` give nan), by the caller,
 * once per tensor: a pow per element kept the loops from vectorizing. */
PTL_HD static inline double
ptl_round_decimals_d(double x, int64_t decimals, double p)
{
    if (decimals == 0) {
        return nearbyint(x);
    }
    return decimals > 0 ? nearbyint(x * p) / p : nearbyint(x / p) * p;
}

PTL_HD static inline float
ptl_round_decimals_f(float x, int64_t decimals, float p)
{
    if (decimals == 0) {
        return nearbyintf(x);
    }
    return decimals > 0 ? nearbyintf(x * p) / p : nearbyintf(x / p) * p;
}

/* erfinv(a) / a = P(w - 5/2) for w = -log(1 - a^2) in [0, 5], degree 10, and Q(sqrt(w) -
 * 4.15) for sqrt(w) in [2.2, 6.1], degree 12, the highest power first (unary_f8_erf.h's
 * vector erfinv starts from the same fits) */
#define PTL_ERFINV_MID_COEF                                                                   \
    4.3511473069028143e-10, -8.739830973051999e-09, 1.6487176840838708e-08,                   \
        4.6542873048510424e-07, -3.426175951749159e-06, -4.959743495185408e-06,               \
        0.00021826392314411755, -0.0012527484164558688, -0.004177324921932883,                \
        0.24664028938940982, 1.5014093517282388
#define PTL_ERFINV_TAIL_COEF                                                                  \
    -3.738346743601539e-07, 9.041676292984441e-07, 3.301911694964025e-06,                     \
        -1.184373288755043e-05, 7.725262722449835e-06, -1.5933089927151504e-06,               \
        3.218470312258784e-05, -9.535631169596914e-05, 0.00024787542590083776,                \
        -0.0006928083426063571, 0.0009084901914351929, 1.0098157137509043, 3.9912333572875025

/* erfinv(y): the fits above as the start x0 (4.5e-8 relative at worst), then one Halley step
 * on erf(x) = |y|, with f = erf(x0) - |y| below x0 = 1 and (1 - |y|) - erfc(x0) above, where
 * 1 - |y| is exact (Note [Vector float64 erf, erfc, erfinv]).  The start of single
 * precision this replaced, with two Newton steps, was off by up to 6e14 ulp within 1e-8 of
 * +-1. */
PTL_HD static inline double
ptl_erfinv_d(double y)
{
    const double mid[] = {PTL_ERFINV_MID_COEF}, tail[] = {PTL_ERFINV_TAIL_COEF};
    double a = fabs(y), p = 0.0;
    if (!(a <= 1.0)) {
        return NAN;
    }
    if (a == 1.0) {
        return copysign(INFINITY, y);
    }
    double w = -log((1.0 - a) * (1.0 + a));
    if (w < 5.0) {
        for (size_t i = 0; i < sizeof(mid) / sizeof(mid[0]); i++) {
            p = p * (w - 2.5) + mid[i];
        }
    }
    else {
        for (size_t i = 0; i < sizeof(tail) / sizeof(tail[0]); i++) {
            p = p * (sqrt(w) - 4.15) + tail[i];
        }
    }
    double x0 = a * p;
    double f = x0 < 1.0 ? erf(x0) - a : (1.0 - a) - erfc(x0);
    double u = f * 0.88622692545275801365 * exp(x0 * x0);   /* f / erf'(x0) */
    return copysign(x0 - u * (1.0 - x0 * u), y);
}

/* ---- ternary (ATen/native/cpu/TensorCompareKernel.cpp, LerpKernel.cpp,
 * PointwiseOpsKernel.cpp) ---- */

/* clamp: nan in x or in a bound propagates; min > max gives max. */
PTL_HD static inline double
ptl_clamp_d(double x, double lo, double hi)
{
    if (x != x) {
        return x;
    }
    if (lo != lo || x < lo) {
        x = lo;
    }
    if (hi != hi || x > hi) {
        x = hi;
    }
    return x;
}

PTL_HD static inline int64_t
ptl_clamp_i(int64_t x, int64_t lo, int64_t hi)
{
    x = x < lo ? lo : x;
    return x > hi ? hi : x;
}

/* lerp: PyTorch's two-sided form, a + w (b - a) for |w| < 0.5, else b + (w - 1) (b - a),
 * each as one fused multiply-add, as PyTorch's vector kernel (lerp_vec's fmadd): lerp(a, b,
 * 1) == b exactly, and the product, unrounded, does not overflow on the way to a finite
 * result (b = 1e308, a = 0, w = -1.6: (w - 1) (b - a) is -2.6e308, the result -1.6e308).
 * The coefficient and the base are picked by a bit mask, so the loops vectorise: a branch
 * on a weight tensor's |w| < 0.5 mispredicts, and GCC turns a floating-point select back
 * into one.  Without FMA hardware fma() is libm's (exact, slower); the loops (ternary.c)
 * have an FMA clone. */
#define PTL_DEFINE_LERP(NAME, T, U, FABS, FMA)                                            \
    PTL_HD static inline T                                                                \
    NAME(T a, T b, T w)                                                                   \
    {                                                                                     \
        T wm1 = w - (T)1, coef, base;                                                     \
        U aw, am1, ua, ub, m = 0 - (U)(FABS(w) < (T)0.5);                                 \
        memcpy(&aw, &w, sizeof aw);                                                       \
        memcpy(&am1, &wm1, sizeof am1);                                                   \
        memcpy(&ua, &a, sizeof ua);                                                       \
        memcpy(&ub, &b, sizeof ub);                                                       \
        aw = (aw & m) | (am1 & ~m);                                                       \
        ua = (ua & m) | (ub & ~m);                                                        \
        memcpy(&coef, &aw, sizeof coef);                                                  \
        memcpy(&base, &ua, sizeof base);                                                  \
        return FMA(coef, b - a, base);                                                    \
    }
PTL_DEFINE_LERP(ptl_lerp_d, double, uint64_t, fabs, fma)
PTL_DEFINE_LERP(ptl_lerp_f, float, uint32_t, fabsf, fmaf)
#undef PTL_DEFINE_LERP

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

/* ---- log and sin/cos of 2 pi u in float32, formulas with a vector twin ----
 *
 * Note [Scalar twins of vector formulas]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * ptl_logf_normal and ptl_sincos2pif are the scalar twins of vec_math.h's ptl_vm_log_##S
 * (on positive normal numbers) and ptl_vm_sincos2pi_##S: the same IEEE operations in the
 * same order, every FMA of the vector code an fmaf here and every product that feeds an add
 * rounded apart (Note [Products rounded apart]), so the CPU's vector loops, the CPU's scalar
 * loops and the CUDA kernels give the same bits (float32 Box-Muller, distributions.h).  The
 * coefficients are listed once, below, for both.  Off x86-64 with FMA, fmaf is a libm call
 * on the host (exact, slower); the vector loops keep the host's scalar calls to tails.
 *
 * log(x), x positive and normal (Cephes logf): x = 2^e m with m in (sqrt(1/2), sqrt(2)],
 * f = m - 1 exact, log x = f - f^2 / 2 + f^3 P(f) + e ln2, ln2 split in 0.693359375 (exact
 * times any e) and a tail.  About 1 ulp.
 *
 * sin and cos of 2 pi u, |u| < 2^20: q = round(4 u) (by the 1.5 * 2^23 trick, so the
 * integer comes with it), t = u - q / 4 in [-1/8, 1/8] exact, and the angle 2 pi t lies in
 * [-pi/4, pi/4] with no rounding of pi at all: sin(2 pi t) = S0 t + t s(t^2) with S0 =
 * fl(2 pi) and s's constant term 2 pi - S0, cos(2 pi t) = 1 + t^2 c(t^2) (minimax fits by
 * tools/fit_sincos2pi.py), then the quadrant q mod 4 swaps and negates them.  Under 1 ulp
 * for every u = k 2^-24 in [0, 1) against float64 (tests/aten/test_random.py). */
#define PTL_LOGF_COEF                                                                    \
    7.0376836292e-2f, -1.1514610310e-1f, 1.1676998740e-1f, -1.2420140846e-1f,           \
        1.4249322787e-1f, -1.6668057665e-1f, 2.0000714765e-1f, -2.4999993993e-1f,       \
        3.3333331174e-1f
#define PTL_LOGF_LN2_HI 0.693359375f
#define PTL_LOGF_LN2_LO -2.12194440e-4f
#define PTL_SIN2PIF_S0 6.283185482e+00f
/* s(t^2) and c(t^2), the highest power first */
#define PTL_SIN2PIF_COEF -7.544560242e+01f, 8.159376526e+01f, -4.134167099e+01f, -1.748455531e-07f
#define PTL_COS2PIF_COEF 5.922924423e+01f, -8.544323730e+01f, 6.493932343e+01f, -1.973920822e+01f
#define PTL_SINCOS2PIF_MAGIC 12582912.0f

/* c[0] t^(n-1) + ... + c[n-1] by Horner's rule with fmaf or fma (vec_math.h's
 * ptl_vm_poly_##S): ptl_polyf_fma in float, ptl_poly_fma in double */
#define PTL_DEFINE_POLY_FMA(NAME, T, FMA)                \
    PTL_HD static inline T                               \
    NAME(T t, const T *c, int n)                         \
    {                                                    \
        T p = c[0];                                      \
        for (int i = 1; i < n; i++) {                    \
            p = FMA(p, t, c[i]);                         \
        }                                                \
        return p;                                        \
    }
PTL_DEFINE_POLY_FMA(ptl_polyf_fma, float, fmaf)
PTL_DEFINE_POLY_FMA(ptl_poly_fma, double, fma)
#undef PTL_DEFINE_POLY_FMA

/* log(x) for positive normal x (Note [Scalar twins of vector formulas]) */
PTL_HD static inline float
ptl_logf_normal(float x)
{
    const float c[] = {PTL_LOGF_COEF};
    uint32_t bits, mbits;
    float m;
    memcpy(&bits, &x, sizeof bits);
    mbits = (bits & 0x7fffffu) | 0x3f800000u;
    memcpy(&m, &mbits, sizeof m);
    float e = (float)((int32_t)(bits >> 23) - 127);
    if (m > 1.41421356237f) {
        m = m * 0.5f;
        e = e + 1.0f;
    }
    float f = m - 1.0f;
    float z = PTL_FMUL_RN(f, f);
    float y = PTL_FMUL_RN(PTL_FMUL_RN(ptl_polyf_fma(f, c, (int)(sizeof c / sizeof c[0])), f), z);
    y = fmaf(e, PTL_LOGF_LN2_LO, y);
    y = fmaf(-0.5f, z, y);
    y = f + y;
    return fmaf(e, PTL_LOGF_LN2_HI, y);
}

/* *s = sin(2 pi u), *c = cos(2 pi u) for |u| < 2^20 (Note [Scalar twins of vector
 * formulas]) */
PTL_HD static inline void
ptl_sincos2pif(float u, float *s, float *c)
{
    const float sc[] = {PTL_SIN2PIF_COEF}, cc[] = {PTL_COS2PIF_COEF};
    float k = PTL_FMUL_RN(u, 4.0f) + PTL_SINCOS2PIF_MAGIC;
    float q = k - PTL_SINCOS2PIF_MAGIC;
    uint32_t kbits;
    memcpy(&kbits, &k, sizeof kbits);
    float t = fmaf(-q, 0.25f, u);
    float t2 = PTL_FMUL_RN(t, t);
    float sn = fmaf(t, PTL_SIN2PIF_S0, PTL_FMUL_RN(t, ptl_polyf_fma(t2, sc, 4)));
    float cs = fmaf(t2, ptl_polyf_fma(t2, cc, 4), 1.0f);
    float a = (kbits & 1u) ? cs : sn, b = (kbits & 1u) ? sn : cs;
    *s = (kbits & 2u) ? -a : a;
    *c = ((kbits + 1u) & 2u) ? -b : b;
}

/* ---- log and sin/cos of 2 pi u in float64, formulas with a vector twin ----
 *
 * ptl_log_normal and ptl_sincos2pi are the double twins of vec_math.h's ptl_vm_log_##S and
 * ptl_vm_sincos2pi_##S for the kinds pd and pd512, under the rules of Note [Scalar twins of
 * vector formulas] (every FMA an fma here, products that feed adds rounded apart), so the
 * float64 Box-Muller (distributions.h) gives the same bits on the CPU's vector and scalar
 * paths and on the CUDA device.
 *
 * log(x), x positive and normal (fdlibm's e_log.c): x = 2^e m with m in (sqrt(1/2),
 * sqrt(2)], f = m - 1, s = f / (2 + f), log m = f - f^2 / 2 + s (f^2 / 2 + R(s^2)) with R
 * the degree-14 minimax fit of Lg1..Lg7, and e ln2 split in a high part exact times any e
 * and a tail.  Under 1 ulp.
 *
 * sin and cos of 2 pi u, |u| < 2^50: q = round(4 u) (by the 1.5 * 2^52 trick), t = u - q / 4
 * in [-1/8, 1/8] exact, the angle 2 pi t as xh + xl (2 pi split in fl(2 pi) and its tail, the
 * product xh's error recovered by an fma), |xh| <= pi / 4, then fdlibm's k_sin.c and k_cos.c
 * kernels on xh + xl and the quadrant q mod 4 as in ptl_sincos2pif.  Under 1 ulp for u in
 * [0, 1) (tests/aten/test_random.py checks dense grids against long double with the
 * reduction done exactly). */
#define PTL_LOG_COEF                                                                      \
    1.479819860511658591e-01, 1.531383769920937332e-01, 1.818357216161805012e-01,         \
        2.222219843214978396e-01, 2.857142874366239149e-01, 3.999999999940941908e-01,     \
        6.666666666666735130e-01
#define PTL_LOG_LN2_HI 6.93147180369123816490e-01
#define PTL_LOG_LN2_LO 1.90821492927058770002e-10
#define PTL_SIN2PI_COEF                                                                   \
    1.58969099521155010221e-10, -2.50507602534068634195e-08, 2.75573137070700676789e-06,  \
        -1.98412698298579493134e-04, 8.33333333332248946124e-03
#define PTL_SIN2PI_S1 -1.66666666666666324348e-01
#define PTL_COS2PI_COEF                                                                   \
    -1.13596475577881948265e-11, 2.08757232129817482790e-09, -2.75573143513906633035e-07,  \
        2.48015872894767294178e-05, -1.38888888888741095749e-03, 4.16666666666666019037e-02
#define PTL_SINCOS2PI_TWOPI_HI 6.28318530717958623200e+00
#define PTL_SINCOS2PI_TWOPI_LO 2.44929359829470635445e-16
#define PTL_SINCOS2PI_MAGIC 6755399441055744.0

/* log(x) for positive normal x (the twin of ptl_vm_log_##S for pd, pd512) */
PTL_HD static inline double
ptl_log_normal(double x)
{
    const double c[] = {PTL_LOG_COEF};
    uint64_t bits, mbits;
    double m;
    memcpy(&bits, &x, sizeof bits);
    mbits = (bits & 0xfffffffffffffull) | 0x3ff0000000000000ull;
    memcpy(&m, &mbits, sizeof m);
    double e = (double)((int64_t)(bits >> 52) - 1023);
    if (m > 1.4142135623730951) {
        m = m * 0.5;
        e = e + 1.0;
    }
    double f = m - 1.0;
    double s = f / (2.0 + f);
    double z = PTL_DMUL_RN(s, s);
    double r = PTL_DMUL_RN(z, ptl_poly_fma(z, c, (int)(sizeof c / sizeof c[0])));
    double hfsq = PTL_DMUL_RN(0.5 * f, f);
    double t = fma(s, hfsq + r, PTL_DMUL_RN(e, PTL_LOG_LN2_LO));
    double y = (hfsq - t) - f;
    return fma(e, PTL_LOG_LN2_HI, -y);
}

/* *s, *c = the sine and cosine of the angle xh + xl (|xh| <= pi / 4) plus kbits quarter turns
 * (kbits: the low bits of the 1.5 * 2^52 trick's sum): fdlibm's k_sin.c and k_cos.c on xh + xl
 * and the quadrant rule, the kernel of ptl_sincos2pi and of bessel_math.h's ptl_sincos_twin
 * (always inlined: special.c's FMA clones compile it with their fma) */
PTL_HD_INLINE void
ptl_sincos_kernel(double xh, double xl, uint64_t kbits, double *s, double *c)
{
    const double sc[] = {PTL_SIN2PI_COEF}, cc[] = {PTL_COS2PI_COEF};
    double z = PTL_DMUL_RN(xh, xh);
    double v = PTL_DMUL_RN(z, xh);
    double a = fma(-v, ptl_poly_fma(z, sc, 5), 0.5 * xl);
    double sn = xh - fma(-v, PTL_SIN2PI_S1, fma(z, a, -xl));
    double hz = PTL_DMUL_RN(0.5, z), w = 1.0 - hz;
    double r = PTL_DMUL_RN(z, ptl_poly_fma(z, cc, 6));
    double cs = w + (((1.0 - w) - hz) + fma(z, r, -PTL_DMUL_RN(xh, xl)));
    double p = (kbits & 1u) ? cs : sn, o = (kbits & 1u) ? sn : cs;
    *s = (kbits & 2u) ? -p : p;
    *c = ((kbits + 1u) & 2u) ? -o : o;
}

/* *s = sin(2 pi u), *c = cos(2 pi u) for |u| < 2^50 (the twin of ptl_vm_sincos2pi_##S for
 * pd, pd512) */
PTL_HD static inline void
ptl_sincos2pi(double u, double *s, double *c)
{
    double k = PTL_DMUL_RN(u, 4.0) + PTL_SINCOS2PI_MAGIC;
    double q = k - PTL_SINCOS2PI_MAGIC;
    uint64_t kbits;
    memcpy(&kbits, &k, sizeof kbits);
    double t = fma(-q, 0.25, u);
    double xh = PTL_DMUL_RN(t, PTL_SINCOS2PI_TWOPI_HI);
    double xl = fma(t, PTL_SINCOS2PI_TWOPI_HI, -xh) + PTL_DMUL_RN(t, PTL_SINCOS2PI_TWOPI_LO);
    ptl_sincos_kernel(xh, xl, kbits, s, c);
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

/* ---- activations: forward f(x) and derivative-times-grad g*f'(x).  Mirrors
 * ATen/native/cpu/Activation.cpp.  Parameters come in p[] (alpha, beta, ...). ---- */

/* threshold_backward: the gradient passes where x is above the threshold (nan does) */
PTL_HD static inline double
ptl_threshold_grad_d(double g, double x, double threshold)
{
    return x <= threshold ? 0.0 : g;
}

PTL_HD static inline double
ptl_softplus_d(double x, double beta, double threshold)
{
    return x * beta > threshold ? x : log1p(exp(x * beta)) / beta;
}

PTL_HD static inline double
ptl_softplus_grad_d(double g, double x, double beta, double threshold)
{
    double z = exp(x * beta);
    return x * beta > threshold ? g : g * z / (z + 1.0);
}

PTL_HD static inline double
ptl_gelu_d(double x, int tanh_approx)
{
    if (tanh_approx) {
        double inner = 0.7978845608028654 * (x + 0.044715 * x * x * x);
        return 0.5 * x * (1.0 + tanh(inner));
    }
    return 0.5 * x * (1.0 + erf(x * 0.7071067811865476));
}

PTL_HD static inline double
ptl_gelu_grad_d(double g, double x, int tanh_approx)
{
    if (tanh_approx) {
        double k = 0.7978845608028654, c = 0.044715;
        double t = tanh(k * (x + c * x * x * x));
        double dinner = k * (1.0 + 3.0 * c * x * x);
        return g * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * dinner);
    }
    double cdf = 0.5 * (1.0 + erf(x * 0.7071067811865476));
    double pdf = exp(-0.5 * x * x) * 0.3989422804014327;
    return g * (cdf + x * pdf);
}

PTL_HD static inline double
ptl_silu_grad_d(double g, double x)
{
    double s = ptl_sigmoid_d(x);
    return g * s * (1.0 + x * (1.0 - s));
}

PTL_HD static inline double
ptl_mish_d(double x)
{
    return x * tanh(ptl_softplus_d(x, 1.0, 20.0));
}

PTL_HD static inline double
ptl_mish_grad_d(double g, double x)
{
    double t = tanh(ptl_softplus_d(x, 1.0, 20.0));
    return g * (t + x * ptl_sigmoid_d(x) * (1.0 - t * t));
}

/* elu with PyTorch's coefficients: alpha, scale, input_scale.  As in PyTorch's kernels, the
 * negative side's coefficient alpha scale is one product (inf where it overflows, though
 * expm1 times it need not), a zero of either sign takes the positive side forward (scale x:
 * 0 * inf is no nan there, -0 stays -0) and the negative side backward. */
PTL_HD static inline double
ptl_elu_d(double x, double alpha, double scale, double input_scale)
{
    return x < 0 ? expm1(x * input_scale) * (alpha * scale) : x * scale;
}

PTL_HD static inline double
ptl_elu_grad_d(double g, double x, double alpha, double scale, double input_scale)
{
    return x <= 0 ? g * input_scale * (alpha * scale) * exp(x * input_scale) : g * scale;
}

/* the same slope from the result y = elu(x): input_scale (y + alpha scale) where y <= 0 */
PTL_HD static inline double
ptl_elu_result_grad_d(double g, double y, double alpha, double scale, double input_scale)
{
    return y <= 0 ? g * input_scale * (y + alpha * scale) : g * scale;
}

/* log(sigmoid(x)) = min(x, 0) - log1p(e^-|x|), exact for large |x| */
PTL_HD static inline double
ptl_log_sigmoid_d(double x)
{
    return (x < 0 ? x : 0.0) - log1p(exp(-fabs(x)));
}

/* hardswish, its backward and hardsigmoid in double, and in float for the float32 kernels,
 * which round after each operation as PyTorch's float32 kernels do (its bits).  The
 * backward chooses the factor and takes the product everywhere: no branch to mispredict
 * (Note [Select formulas] in native/activation.c). */
#define PTL_DEFINE_HARDSWISH(T, SUF)                                                      \
    PTL_HD static inline T ptl_hardswish_##SUF(T x)                                       \
    {                                                                                     \
        T r = x + (T)3;                                                                   \
        r = r < 0 ? (T)0 : r > 6 ? (T)6 : r;                                              \
        return x * r / (T)6;                                                              \
    }                                                                                     \
    PTL_HD static inline T ptl_hardswish_grad_##SUF(T g, T x)                             \
    {                                                                                     \
        T v = g * (x < (T)3 ? x / (T)3 + (T)0.5 : (T)1);                                  \
        return x <= (T)-3 ? (T)0 : v;                                                     \
    }                                                                                     \
    PTL_HD static inline T ptl_hardsigmoid_##SUF(T x)                                     \
    {                                                                                     \
        T r = x + (T)3;                                                                   \
        return (r < 0 ? (T)0 : r > 6 ? (T)6 : r) / (T)6;                                  \
    }
PTL_DEFINE_HARDSWISH(double, d)
PTL_DEFINE_HARDSWISH(float, f)
#undef PTL_DEFINE_HARDSWISH

/* The select activations in float and double (the float32 loops compute in float: Note
 * [Select formulas] in native/activation.c).  hardtanh: x below lo is lo, then above hi is
 * hi (nan stays nan): PyTorch's clamp, which also gives hi everywhere when lo > hi.
 * softshrink: x - lambd above lambd, x + lambd below -lambd, 0 * x (signed zero, nan for
 * nan) between; the shift is chosen, then applied to every element.  hardsigmoid's backward
 * is g / 6 inside (-3, 3): float multiplies by 1/6 rounded to float, as PyTorch's kernel
 * does (within an ulp of the quotient, and PyTorch's bits). */
#define PTL_DEFINE_SELECT_ACTIVATIONS(T, SUF)                                             \
    PTL_HD static inline T ptl_hardtanh_##SUF(T x, T lo, T hi)                            \
    {                                                                                     \
        T t = x < lo ? lo : x;                                                            \
        return t > hi ? hi : t;                                                           \
    }                                                                                     \
    PTL_HD static inline T ptl_hardtanh_grad_##SUF(T g, T x, T lo, T hi)                  \
    {                                                                                     \
        return x <= lo || x >= hi ? (T)0 : g;                                             \
    }                                                                                     \
    PTL_HD static inline T ptl_softshrink_##SUF(T x, T lambd)                             \
    {                                                                                     \
        int up = x > lambd, down = x < -lambd;                                            \
        T moved = x + (up ? -lambd : lambd);                                              \
        return up | down ? moved : (T)0 * x;                                              \
    }                                                                                     \
    PTL_HD static inline T ptl_hardshrink_##SUF(T x, T lambd)                             \
    {                                                                                     \
        return (x >= -lambd) & (x <= lambd) ? (T)0 : x;                                   \
    }                                                                                     \
    PTL_HD static inline T ptl_shrink_grad_##SUF(T g, T x, T lambd)                       \
    {                                                                                     \
        return (x >= -lambd) & (x <= lambd) ? (T)0 : g;                                   \
    }                                                                                     \
    PTL_HD static inline T ptl_leaky_relu_##SUF(T x, T slope)                             \
    {                                                                                     \
        return x * (x > 0 ? (T)1 : slope);                                                \
    }                                                                                     \
    PTL_HD static inline T ptl_leaky_relu_grad_##SUF(T g, T x, T slope)                   \
    {                                                                                     \
        return g * (x > 0 ? (T)1 : slope);                                                \
    }
PTL_DEFINE_SELECT_ACTIVATIONS(double, d)
PTL_DEFINE_SELECT_ACTIVATIONS(float, f)
#undef PTL_DEFINE_SELECT_ACTIVATIONS

PTL_HD static inline float
ptl_hardsigmoid_grad_f(float g, float x)
{
    return ((x > -3) & (x < 3) ? g : 0.0f) * (1.0f / 6);
}

PTL_HD static inline double
ptl_hardsigmoid_grad_d(double g, double x)
{
    return ((x > -3) & (x < 3) ? g : 0.0) / 6;
}

/* binary_cross_entropy of one element: logs clamped at -100 as in PyTorch */
PTL_HD static inline double
ptl_bce_d(double x, double y)
{
    double lx = log(x), l1x = log1p(-x);
    lx = lx < -100.0 ? -100.0 : lx;
    l1x = l1x < -100.0 ? -100.0 : l1x;
    return -(y * lx + (1.0 - y) * l1x);
}

/* d bce / dx, with PyTorch's epsilon guard against 1 / 0 */
PTL_HD static inline double
ptl_bce_grad_d(double g, double x, double y)
{
    double den = (1.0 - x) * x;
    return g * (x - y) / (den < 1e-12 ? 1e-12 : den);
}

/* ---- regression losses (mse_loss, smooth_l1_loss, huber_loss) of one element and their
 * derivatives, in the element's dtype T and in the order of operations of PyTorch's
 * vectorised CPU kernels (cpu/PointwiseOpsKernel.cpp, cpu/BinaryOpsKernel.cpp), so float32
 * gives PyTorch's bits.  p is beta / delta; an infinite difference takes the linear side
 * (inf, not 0 * inf).  The derivative's norm is 1 (2 for mse), over numel for 'mean'.
 *
 * Note [Regression loss derivatives at a negative beta or delta]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * smooth_l1_loss and huber_loss refuse a negative beta / delta, but their backward ops take
 * any (PyTorch checks only the forward's).  For p >= 0 every order of tests agrees; for
 * p < 0, where -p > p, PyTorch's two CPU loops disagree: its scalar loop (strided inputs,
 * short runs, the tail of a contiguous run) tests d <= -p first, its vector loop |d| >= p
 * with d's sign.  These derivatives follow the scalar loop: d <= -p gives -1 (-p for huber),
 * else d >= p gives 1 (p), else d / p (d), on every run of any length.  A contiguous run of
 * two vectors or more (16 doubles with AVX-512) is where PyTorch's answer differs. ---- */
#define PTL_DEFINE_REG_LOSSES(SUF, T, FABS)                                               \
    PTL_HD static inline T                                                                \
    ptl_mse_loss_##SUF(T x, T t, T p)                                                     \
    {                                                                                     \
        T d = x - t;                                                                      \
        (void)p;                                                                          \
        return d * d;                                                                     \
    }                                                                                     \
    PTL_HD static inline T                                                                \
    ptl_smooth_l1_loss_##SUF(T x, T t, T p)                                               \
    {                                                                                     \
        T z = FABS(x - t);                                                                \
        return z >= p ? z - (T)0.5 * p : (T)0.5 * z * z / p;                              \
    }                                                                                     \
    PTL_HD static inline T                                                                \
    ptl_huber_loss_##SUF(T x, T t, T p)                                                   \
    {                                                                                     \
        T z = FABS(x - t);                                                                \
        return z >= p ? p * (z - (T)0.5 * p) : (T)0.5 * z * z;                            \
    }                                                                                     \
    PTL_HD static inline T                                                                \
    ptl_mse_loss_grad_##SUF(T g, T x, T t, T norm, T p)                                   \
    {                                                                                     \
        (void)p;                                                                          \
        return norm * (x - t) * g;                                                        \
    }                                                                                     \
    PTL_HD static inline T                                                                \
    ptl_smooth_l1_loss_grad_##SUF(T g, T x, T t, T norm, T p)                             \
    {                                                                                     \
        T d = x - t; /* Note [Regression loss derivatives at a negative beta or delta] */ \
        return (d <= -p ? (T)-1 : d >= p ? (T)1 : d / p) * norm * g;                     \
    }                                                                                     \
    PTL_HD static inline T                                                                \
    ptl_huber_loss_grad_##SUF(T g, T x, T t, T norm, T p)                                 \
    {                                                                                     \
        T d = x - t;                                                                      \
        return (d <= -p ? -p : d >= p ? p : d) * norm * g;                                \
    }
PTL_DEFINE_REG_LOSSES(d, double, fabs)
PTL_DEFINE_REG_LOSSES(f, float, fabsf)
#undef PTL_DEFINE_REG_LOSSES

/* ---- the gamma function family: lgamma, digamma, polygamma ---- */

/* digamma(x) = d lgamma(x) / dx.  Poles: +-inf at +-0 (the sign opposite to zero's, as in
 * PyTorch), nan at the negative integers.  Below 0 by the reflection
 * psi(x) = psi(1 - x) - pi cot(pi x); then psi(x) = psi(x + 1) - 1/x up to x >= 10, where
 * the asymptotic series ln x - 1/(2x) - sum_k B_2k / (2k x^2k) has converged to double
 * precision by its seventh term.
 *
 * cot(pi x) = cot(pi r) with r = x - round(x), exact and in [-1/2, 1/2]: cos and sin of
 * pi |r| <= pi / 4 directly, above it as sin and cos of pi (1/2 - |r|) (1/2 - |r| exact too),
 * so both keep their relative precision next to the poles (r -> 0) and at r -> +-1/2 (a
 * reduction to [0, 1) instead, pi (1 - eps) rounding to the absolute precision of pi, cost
 * 5.6e3 ulp at x = -6.00008). */
PTL_HD static inline double
ptl_digamma_d(double x)
{
    static const double PI = 3.14159265358979323846;
    double acc = 0.0;
    if (x == 0.0) {
        return copysign(INFINITY, -x);
    }
    if (x < 0.0) {
        if (x == floor(x)) {
            return NAN;
        }
        double r = x - round(x), a = fabs(r);
        double c = a <= 0.25 ? cos(PI * a) : sin(PI * (0.5 - a));
        double s = a <= 0.25 ? sin(PI * a) : cos(PI * (0.5 - a));
        return ptl_digamma_d(1.0 - x) - copysign(PI * c / s, r);
    }
    while (x < 10.0) {
        acc -= 1.0 / x;
        x += 1.0;
    }
    double z = 1.0 / (x * x);
    double series = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 -
                    z * (1.0 / 132 - z * (691.0 / 32760 - z * (1.0 / 12)))))));
    return acc + log(x) - 0.5 / x - series;
}

/* The Hurwitz zeta function zeta(s, q) = sum_{k >= 0} (q + k)^-s for s > 1, by
 * Euler-Maclaurin summation: the first terms directly until q + k > 9, then the integral
 * of the rest, half its first term, and the Bernoulli corrections
 * B_2j / (2j)! s (s + 1) ... (s + 2j - 2) a^(-s-2j+1).  The direct terms walk from q up to
 * 9, so ptl_zeta_d below splits off the negative terms of a q < -16 first. */
PTL_HD static inline double
ptl_zeta_sum(double s, double q)
{
    /* (2j)! / B_2j for j = 1..12 */
    static const double FACT_OVER_B[12] = {
        12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
        7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
        -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18};
    double sum = pow(q, -s), a = q, b = 0.0;
    int i = 0;
    while (i < 9 || a <= 9.0) {
        i++;
        a += 1.0;
        b = pow(a, -s);
        sum += b;
        if (fabs(b / sum) < 1e-17) {
            return sum;
        }
    }
    double w = a;
    /* the integral w^(1 - s) / (s - 1) as b w, unless b = w^-s lost its digits below the
     * normal range (a large q: trigamma(1e300) is 1e-300, b is 0) */
    sum += (b >= 0x1p-1022 ? b * w : pow(w, 1.0 - s)) / (s - 1.0) - 0.5 * b;
    double fac = 1.0, k = 0.0;
    for (int j = 0; j < 12; j++) {
        fac *= s + k;
        b /= w;
        double t = fac * b / FACT_OVER_B[j];
        sum += t;
        if (fabs(t / sum) < 1e-17) {
            break;
        }
        k += 1.0;
        fac *= s + k;
        b /= w;
        k += 1.0;
    }
    return sum;
}

/* zeta(s, q): inf at the poles q = 0, -1, ... (and -inf); nan for s <= 1 or, as PyTorch,
 * for q <= 0 and non-integer s, and at q = +inf.  A q < -16 (not an integer, so above
 * -2^52) is -n + f with 0 < f < 1: its n negative terms -(j - f), j = 1..n, sum to (-1)^s
 * (zeta(s, 1 - f) - zeta(s, n+1-f)), so zeta(s, q) = zeta(s, f) + (-1)^s (zeta(s, 1 - f) -
 * zeta(s, n + 1 - f)), three sums of a few dozen terms where the direct walk from q would
 * take n steps (PyTorch's: 4 s at q = -1e8 + 0.5; hours at -1e15 + 0.5). */
PTL_HD static inline double
ptl_zeta_d(double s, double q)
{
    if (s == 1.0) {
        return INFINITY;
    }
    if (!(s > 1.0)) {
        return NAN;
    }
    if (q == INFINITY) {   /* Note [Special functions at the infinities] */
        return NAN;
    }
    if (q <= 0.0) {
        if (q == floor(q)) {
            return INFINITY;
        }
        if (s != floor(s)) {
            return NAN;
        }
    }
    if (q < -16.0) {
        double n = -floor(q), f = q + n, sign = fmod(s, 2.0) == 0.0 ? 1.0 : -1.0;
        return ptl_zeta_sum(s, f) +
               sign * (ptl_zeta_sum(s, 1.0 - f) - ptl_zeta_sum(s, n + 1.0 - f));
    }
    return ptl_zeta_sum(s, q);
}

/* Note [Polygamma of a huge order]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x) for n >= 2 takes n as PyTorch's
 * calc_polygamma does: a C int, so an order past 2^31 wraps (2^32 and 2^40 are 0: -zeta(1,
 * x), -inf; 2^63 - 1 is -1: nan), and float32, float16 and bfloat16 compute n! in float
 * (inf from n = 35, so the product is inf or nan where a double's would be finite) and
 * zeta(n + 1, x) in double rounded to float.  n >= 0 is checked by the kernel on the int64;
 * 0 and 1 are digamma and trigamma. */

/* n as a C int: its low 32 bits, two's complement */
PTL_HD static inline double
ptl_polygamma_order(int64_t n)
{
    int64_t low = n & 0xffffffff;
    return (double)(low >= 0x80000000LL ? low - 0x100000000LL : low);
}

/* polygamma(n, x), n >= 0 (Note [Polygamma of a huge order]) */
PTL_HD static inline double
ptl_polygamma_d(int64_t n, double x)
{
    if (n == 0) {
        return ptl_digamma_d(x);
    }
    if (n == 1 && isinf(x)) {   /* PyTorch's trigamma: 0 at +inf, NaN at -inf (Note [Special
                                 * functions at the infinities] in special_math.h) */
        return x > 0 ? 0.0 : NAN;
    }
    double m = ptl_polygamma_order(n);
    double sign = fmod(m, 2.0) != 0.0 ? 1.0 : -1.0;
    return sign * exp(lgamma(m + 1.0)) * ptl_zeta_d(m + 1.0, x);
}

/* The same for float32, float16 and bfloat16: n! in float, zeta(n + 1, x) rounded to float
 * (n + 1 rounded to float first) */
PTL_HD static inline float
ptl_polygamma_f(int64_t n, float x)
{
    if (n <= 1) {
        return (float)ptl_polygamma_d(n, x);
    }
    double m = ptl_polygamma_order(n);
    float sign = fmod(m, 2.0) != 0.0 ? 1.0f : -1.0f;
    return sign * expf(lgammaf((float)m + 1.0f)) * (float)ptl_zeta_d((float)(m + 1.0), x);
}

#endif
