// elementwise.cu -- the pointwise kernels, the copy/cast kernel and fill.  Mirrors
// ATen/native/cuda/Loops.cuh, CUDALoops.cuh and Copy.cu.  The per-element math is
// scalar_math.h's, the same inline functions the CPU loops call; the offsets and the launch
// come from launch_geometry.h, which the host tests check.
//
// Note [CUDA elementwise launch]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The C side (register_cuda.c) builds a TensorIterator and hands its coalesced geometry over
// as a PtlCudaLoopArgs (by value: it is a kernel parameter).  When every operand is one dense
// run and its address allows it, a thread loads `vec` elements at once (16 bytes: float4,
// double2), the last vector of the tensor element by element; otherwise a thread computes
// each operand's offset from the linear index.  The grid is capped at 32 blocks per SM and
// the kernels loop over the rest, so the launch does not depend on the size.  CPU 0-dim
// inputs arrive as scalars in the PtlCudaLoopArgs, never as host pointers.  Every launch is
// checked at once (cudaGetLastError); a fault inside a kernel surfaces at the next
// synchronising call (the copies back to the host), so debug with CUDA_LAUNCH_BLOCKING=1.
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "../aten/bessel_math.h"
#include "../aten/distributions.h"
#include "../aten/gaussian_math.h"
#include "../aten/scalar_math.h"
#include "../aten/special_math.h"
#include "../c10/dtype.h"
#include "../c10/error.h"
#include "cuda_api.h"
#include "launch_check.h"
#include "launch_geometry.h"
#include "pointwise_dtypes.h"

#define PTL_CUDA_CHECK(EXPR)                                                               \
    do {                                                                                   \
        cudaError_t err_ = (EXPR);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            cudaGetLastError();                                                            \
            return ptl_error_set(PTL_ERR_RUNTIME, "CUDA error: %s (%s:%d)",                \
                                 cudaGetErrorString(err_), __FILE__, __LINE__);            \
        }                                                                                  \
    } while (0)

// ---- loads and stores: float16 and bfloat16 compute in float ----

template <typename T> struct Acc { typedef T type; };
template <> struct Acc<ptl_half> { typedef float type; };
template <> struct Acc<ptl_bf16> { typedef float type; };

__device__ inline float to_acc(float x) { return x; }
__device__ inline double to_acc(double x) { return x; }
__device__ inline float to_acc(ptl_half x) { return ptl_half_to_f(x); }
__device__ inline float to_acc(ptl_bf16 x) { return ptl_bf16_to_f(x); }

template <typename T> __device__ inline T from_acc(typename Acc<T>::type x) { return x; }
template <> __device__ inline ptl_half from_acc<ptl_half>(float x) { return ptl_f_to_half(x); }
template <> __device__ inline ptl_bf16 from_acc<ptl_bf16>(float x) { return ptl_f_to_bf16(x); }

// ---- the per-element math (scalar_math.h), x[0..2] the inputs, p the parameters ----

__device__ inline float add(float a, float b, double alpha)
{
    return ptl_add_f(a, b, (float)alpha);
}
__device__ inline double add(double a, double b, double alpha) { return ptl_add_d(a, b, alpha); }
__device__ inline float sigmoid(float x) { return ptl_sigmoid_f(x); }
__device__ inline double sigmoid(double x) { return ptl_sigmoid_d(x); }

// the float and double overloads of special_math.h's and scalar_math.h's functions
__device__ inline float acosh_of(float x) { return ptl_acosh_f(x); }
__device__ inline double acosh_of(double x) { return ptl_acosh_d(x); }
__device__ inline float asinh_of(float x) { return ptl_asinh_f(x); }
__device__ inline double asinh_of(double x) { return ptl_asinh_d(x); }
__device__ inline float atanh_of(float x) { return ptl_atanh_f(x); }
__device__ inline double atanh_of(double x) { return ptl_atanh_d(x); }
__device__ inline float erfc_of(float x) { return ptl_erfc_f(x); }
__device__ inline double erfc_of(double x) { return ptl_erfc_d(x); }
__device__ inline float hypot_of(float a, float b) { return ptl_hypot_f(a, b); }
__device__ inline double hypot_of(double a, double b) { return ptl_hypot_d(a, b); }
__device__ inline float hardswish_of(float x) { return ptl_hardswish_f(x); }
__device__ inline double hardswish_of(double x) { return ptl_hardswish_d(x); }
__device__ inline float hardswish_grad_of(float g, float x) { return ptl_hardswish_grad_f(g, x); }
__device__ inline double hardswish_grad_of(double g, double x)
{
    return ptl_hardswish_grad_d(g, x);
}
__device__ inline float hardsigmoid_of(float x) { return ptl_hardsigmoid_f(x); }
__device__ inline double hardsigmoid_of(double x) { return ptl_hardsigmoid_d(x); }
// the select activations compute float32, float16 and bfloat16 in float, as activation.c's
#define PTL_SELECT_OVERLOADS(T, SUF)                                                      \
    __device__ inline T hardsigmoid_grad_of(T g, T x) { return ptl_hardsigmoid_grad_##SUF(g, x); } \
    __device__ inline T leaky_relu_of(T x, T s) { return ptl_leaky_relu_##SUF(x, s); }    \
    __device__ inline T leaky_relu_grad_of(T g, T x, T s)                                 \
    {                                                                                     \
        return ptl_leaky_relu_grad_##SUF(g, x, s);                                        \
    }                                                                                     \
    __device__ inline T hardtanh_of(T x, T lo, T hi) { return ptl_hardtanh_##SUF(x, lo, hi); } \
    __device__ inline T hardtanh_grad_of(T g, T x, T lo, T hi)                            \
    {                                                                                     \
        return ptl_hardtanh_grad_##SUF(g, x, lo, hi);                                     \
    }                                                                                     \
    __device__ inline T softshrink_of(T x, T l) { return ptl_softshrink_##SUF(x, l); }    \
    __device__ inline T hardshrink_of(T x, T l) { return ptl_hardshrink_##SUF(x, l); }    \
    __device__ inline T shrink_grad_of(T g, T x, T l) { return ptl_shrink_grad_##SUF(g, x, l); }
PTL_SELECT_OVERLOADS(float, f)
PTL_SELECT_OVERLOADS(double, d)
#undef PTL_SELECT_OVERLOADS

// unary.c's abs and binary.c's pow with a number exponent: fabsf / fabs, and
// ptl_pow_scalar_f / _d but for float16, which takes plain pow (binary.c's pow_scalar_loops)
__device__ inline float abs_of(float x) { return fabsf(x); }
__device__ inline double abs_of(double x) { return fabs(x); }
__device__ inline float pow_scalar_of(float a, double e, bool plain)
{
    return plain ? powf(a, (float)e) : ptl_pow_scalar_f(a, (float)e);
}
__device__ inline double pow_scalar_of(double a, double e, bool plain)
{
    return plain ? pow(a, e) : ptl_pow_scalar_d(a, e);
}

// loss.c's reg_loss_f / _d and reg_grad_f / _d: the element's dtype (float for float16)
#define PTL_REG_LOSS_OVERLOADS(T, SUF)                                                    \
    __device__ inline T reg_loss_of(T x, T t, int k, T p)                                 \
    {                                                                                     \
        return k == PTL_CUDA_REG_MSE         ? ptl_mse_loss_##SUF(x, t, p)                \
               : k == PTL_CUDA_REG_SMOOTH_L1 ? ptl_smooth_l1_loss_##SUF(x, t, p)          \
                                             : ptl_huber_loss_##SUF(x, t, p);             \
    }                                                                                     \
    __device__ inline T reg_grad_of(T g, T x, T t, int k, T norm, T p)                    \
    {                                                                                     \
        return k == PTL_CUDA_REG_MSE         ? ptl_mse_loss_grad_##SUF(g, x, t, norm, p)  \
               : k == PTL_CUDA_REG_SMOOTH_L1 ? ptl_smooth_l1_loss_grad_##SUF(g, x, t, norm, p) \
                                             : ptl_huber_loss_grad_##SUF(g, x, t, norm, p); \
    }
PTL_REG_LOSS_OVERLOADS(float, f)
PTL_REG_LOSS_OVERLOADS(double, d)
#undef PTL_REG_LOSS_OVERLOADS

// binary.c's nextafter: float16 and bfloat16 values arrive in float (exactly) and step on
// their own bits (special_math.h's ptl_nextafter_f2 / _bf); the result is exact in them
__device__ inline float nextafter_of(float a, float b, int width)
{
    switch (width) {
    case PTL_CUDA_NEXTAFTER_HALF:
        return ptl_half_to_f(ptl_nextafter_f2(ptl_f_to_half(a), ptl_f_to_half(b)));
    case PTL_CUDA_NEXTAFTER_BF16:
        return ptl_bf16_to_f(ptl_nextafter_bf(ptl_f_to_bf16(a), ptl_f_to_bf16(b)));
    default: return ptl_nextafter_f(a, b);
    }
}
__device__ inline double nextafter_of(double a, double b, int width)
{
    (void)width;
    return ptl_nextafter_d(a, b);
}

// torch.special's functions of special.c (gaussian_math.h, bessel_math.h), in double for
// every dtype, ndtr of float32 (float16, bfloat16) by its float formula as special.c's loops:
// one out-of-line copy for both of math1_of's
__device__ __noinline__ double
special1_of(double x, int fn, bool f32)
{
    switch (fn) {
    case PTL_CUDA_MATH_NDTR: return f32 ? ptl_ndtr_f32(x) : ptl_ndtr_d(x);
    case PTL_CUDA_MATH_LOG_NDTR: return ptl_log_ndtr_d(x);
    case PTL_CUDA_MATH_NDTRI: return ptl_ndtri_d(x);
    case PTL_CUDA_MATH_ERFCX: return ptl_erfcx_d(x);
    case PTL_CUDA_MATH_BESSEL_J0: return ptl_bessel_j0_d(x);
    case PTL_CUDA_MATH_BESSEL_J1: return ptl_bessel_j1_d(x);
    case PTL_CUDA_MATH_BESSEL_Y0: return ptl_bessel_y0_d(x);
    case PTL_CUDA_MATH_BESSEL_Y1: return ptl_bessel_y1_d(x);
    case PTL_CUDA_MATH_BESSEL_K0: return ptl_bessel_k0_d(x);
    case PTL_CUDA_MATH_BESSEL_K1: return ptl_bessel_k1_d(x);
    case PTL_CUDA_MATH_BESSEL_K0E: return ptl_bessel_k0e_d(x);
    case PTL_CUDA_MATH_BESSEL_K1E: return ptl_bessel_k1e_d(x);
    case PTL_CUDA_MATH_SPHERICAL_J0: return ptl_spherical_bessel_j0_d(x);
    default: return ptl_airy_ai_d(x);
    }
}

// the math family (PtlCudaMathFn in p[0]) as unary.c's, binary.c's and ternary.c's loops
// call scalar_math.h: float16, bfloat16 and float32 in float (erfinv, digamma and polygamma
// in double, as there), float64 in double; round's 10^|decimals| is p[RP] in the dtype's
// precision.  Out of line: one call per element keeps the unrolled vector kernels small.
#define PTL_MATH_OVERLOADS(T, SUF, RP)                                                    \
    __device__ __noinline__ T math1_of(T x, const double *p)                              \
    {                                                                                     \
        switch ((int)p[0]) {                                                              \
        case PTL_CUDA_MATH_EXP2: return ptl_exp2_##SUF(x);                                \
        case PTL_CUDA_MATH_EXPM1: return ptl_expm1_##SUF(x);                              \
        case PTL_CUDA_MATH_LOG2: return ptl_log2_##SUF(x);                                \
        case PTL_CUDA_MATH_LOG10: return ptl_log10_##SUF(x);                              \
        case PTL_CUDA_MATH_LOG1P: return ptl_log1p_##SUF(x);                              \
        case PTL_CUDA_MATH_RSQRT: return ptl_rsqrt_##SUF(x);                              \
        case PTL_CUDA_MATH_SIN: return ptl_sin_##SUF(x);                                  \
        case PTL_CUDA_MATH_COS: return ptl_cos_##SUF(x);                                  \
        case PTL_CUDA_MATH_TAN: return ptl_tan_##SUF(x);                                  \
        case PTL_CUDA_MATH_ASIN: return ptl_asin_##SUF(x);                                \
        case PTL_CUDA_MATH_ACOS: return ptl_acos_##SUF(x);                                \
        case PTL_CUDA_MATH_ATAN: return ptl_atan_##SUF(x);                                \
        case PTL_CUDA_MATH_SINH: return ptl_sinh_##SUF(x);                                \
        case PTL_CUDA_MATH_COSH: return ptl_cosh_##SUF(x);                                \
        case PTL_CUDA_MATH_ERF: return ptl_erf_##SUF(x);                                  \
        case PTL_CUDA_MATH_ERFINV: return (T)ptl_erfinv_d((double)x);                     \
        case PTL_CUDA_MATH_LGAMMA: return ptl_lgamma_##SUF(x);                            \
        case PTL_CUDA_MATH_DIGAMMA: return (T)ptl_digamma_d((double)x);                   \
        case PTL_CUDA_MATH_POLYGAMMA: return (T)ptl_polygamma_d((int64_t)p[1], (double)x); \
        case PTL_CUDA_MATH_FRAC: return ptl_frac_##SUF(x);                                \
        case PTL_CUDA_MATH_NDTR:                                                          \
        case PTL_CUDA_MATH_LOG_NDTR:                                                      \
        case PTL_CUDA_MATH_NDTRI:                                                         \
        case PTL_CUDA_MATH_ERFCX:                                                         \
        case PTL_CUDA_MATH_BESSEL_J0:                                                     \
        case PTL_CUDA_MATH_BESSEL_J1:                                                     \
        case PTL_CUDA_MATH_BESSEL_Y0:                                                     \
        case PTL_CUDA_MATH_BESSEL_Y1:                                                     \
        case PTL_CUDA_MATH_BESSEL_K0:                                                     \
        case PTL_CUDA_MATH_BESSEL_K1:                                                     \
        case PTL_CUDA_MATH_BESSEL_K0E:                                                    \
        case PTL_CUDA_MATH_BESSEL_K1E:                                                    \
        case PTL_CUDA_MATH_SPHERICAL_J0:                                                  \
        case PTL_CUDA_MATH_AIRY_AI:                                                       \
            return (T)special1_of((double)x, (int)p[0], sizeof(T) == sizeof(float));      \
        case PTL_CUDA_MATH_FLOOR: return ptl_floor_##SUF(x);                              \
        case PTL_CUDA_MATH_CEIL: return ptl_ceil_##SUF(x);                                \
        case PTL_CUDA_MATH_TRUNC: return ptl_trunc_##SUF(x);                              \
        case PTL_CUDA_MATH_ROUND: return ptl_round_decimals_##SUF(x, (int64_t)p[1], (T)p[RP]); \
        case PTL_CUDA_MATH_SQUARE: return x * x;                                          \
        case PTL_CUDA_MATH_NAN_TO_NUM: return ptl_nan_to_num_##SUF(x, (T)p[1], (T)p[2], (T)p[3]); \
        case PTL_CUDA_MATH_THRESHOLD: return x <= (T)p[1] ? (T)p[2] : x;                  \
        default: return x;                                                                \
        }                                                                                 \
    }                                                                                     \
    __device__ inline T math2_of(T a, T b, const double *p)                               \
    {                                                                                     \
        switch ((int)p[0]) {                                                              \
        case PTL_CUDA_MATH_ATAN2: return ptl_atan2_##SUF(a, b);                           \
        case PTL_CUDA_MATH_MAXIMUM: return ptl_maximum_##SUF(a, b);                       \
        case PTL_CUDA_MATH_MINIMUM: return ptl_minimum_##SUF(a, b);                       \
        case PTL_CUDA_MATH_FMAX: return ptl_fmax_##SUF(a, b);                             \
        case PTL_CUDA_MATH_FMIN: return ptl_fmin_##SUF(a, b);                             \
        case PTL_CUDA_MATH_POW: return ptl_pow_##SUF(a, b);                               \
        case PTL_CUDA_MATH_DIV_TRUNC: return ptl_div_trunc_##SUF(a, b);                   \
        case PTL_CUDA_MATH_DIV_FLOOR: return ptl_div_floor_##SUF(a, b);                   \
        case PTL_CUDA_MATH_REMAINDER: return ptl_remainder_##SUF(a, b);                   \
        case PTL_CUDA_MATH_FMOD: return ptl_fmod_##SUF(a, b);                             \
        case PTL_CUDA_MATH_LERP_SCALAR: return ptl_lerp_##SUF(a, b, (T)p[1]);             \
        default: return a;                                                                \
        }                                                                                 \
    }                                                                                     \
    __device__ inline T math3_of(T a, T b, T c, const double *p)                          \
    {                                                                                     \
        switch ((int)p[0]) {                                                              \
        case PTL_CUDA_MATH_LERP: return ptl_lerp_##SUF(a, b, c);                          \
        case PTL_CUDA_MATH_ADDCMUL: return a + (T)p[1] * (b * c);                         \
        case PTL_CUDA_MATH_ADDCDIV: return a + (T)p[1] * (b / c);                         \
        default: return a;                                                                \
        }                                                                                 \
    }
PTL_MATH_OVERLOADS(float, f, 2)
PTL_MATH_OVERLOADS(double, d, 3)
#undef PTL_MATH_OVERLOADS

template <int OP, typename A>
__device__ inline A
apply(const A *x, const double *p)
{
    switch (OP) {
    case PTL_CUDA_OP_ADD: return add(x[0], x[1], p[0]);
    case PTL_CUDA_OP_MUL: return x[0] * x[1];
    case PTL_CUDA_OP_DIV: return x[0] / x[1];
    case PTL_CUDA_OP_NEG: return -x[0];
    case PTL_CUDA_OP_RELU: return (A)ptl_relu_d((double)x[0]);
    case PTL_CUDA_OP_SIGMOID: return sigmoid(x[0]);
    case PTL_CUDA_OP_TANH: return tanh(x[0]);
    case PTL_CUDA_OP_EXP: return exp(x[0]);
    case PTL_CUDA_OP_LOG: return log(x[0]);
    // the activations compute in double, as the CPU loops of activation.c do
    case PTL_CUDA_OP_GELU: return (A)ptl_gelu_d((double)x[0], p[0] != 0);
    case PTL_CUDA_OP_GELU_BACKWARD:
        return (A)ptl_gelu_grad_d((double)x[0], (double)x[1], p[0] != 0);
    case PTL_CUDA_OP_THRESHOLD_BACKWARD:
        return (A)ptl_threshold_grad_d((double)x[0], (double)x[1], p[0]);
    // special_math.h, as unary.c and binary.c call them: float in float where the CPU does
    case PTL_CUDA_OP_ACOSH: return acosh_of(x[0]);
    case PTL_CUDA_OP_ASINH: return asinh_of(x[0]);
    case PTL_CUDA_OP_ATANH: return atanh_of(x[0]);
    case PTL_CUDA_OP_ERFC: return erfc_of(x[0]);
    case PTL_CUDA_OP_I0: return (A)ptl_i0_d((double)x[0]);
    case PTL_CUDA_OP_I0E: return (A)ptl_i0e_d((double)x[0]);
    case PTL_CUDA_OP_I1: return (A)ptl_i1_d((double)x[0]);
    case PTL_CUDA_OP_I1E: return (A)ptl_i1e_d((double)x[0]);
    case PTL_CUDA_OP_HYPOT: return hypot_of(x[0], x[1]);
    case PTL_CUDA_OP_IGAMMA:   // p[0] != 0: _ptl_igamma_density, its derivative in x
        return (A)(p[0] != 0.0 ? ptl_igamma_density_d((double)x[0], (double)x[1])
                               : ptl_igamma_d((double)x[0], (double)x[1]));
    case PTL_CUDA_OP_IGAMMAC: return (A)ptl_igammac_d((double)x[0], (double)x[1]);
    case PTL_CUDA_OP_STANDARD_GAMMA_GRAD:
        return (A)ptl_standard_gamma_grad((double)x[0], (double)x[1]);
    case PTL_CUDA_OP_DIRICHLET_GRAD:
        return (A)ptl_dirichlet_grad((double)x[0], (double)x[1], (double)x[2]);
    case PTL_CUDA_OP_SILU: return (A)((double)x[0] * ptl_sigmoid_d((double)x[0]));
    case PTL_CUDA_OP_SILU_BACKWARD: return (A)ptl_silu_grad_d((double)x[0], (double)x[1]);
    case PTL_CUDA_OP_MISH: return (A)ptl_mish_d((double)x[0]);
    case PTL_CUDA_OP_MISH_BACKWARD: return (A)ptl_mish_grad_d((double)x[0], (double)x[1]);
    case PTL_CUDA_OP_ELU: return (A)ptl_elu_d((double)x[0], p[0], p[1], p[2]);
    case PTL_CUDA_OP_ELU_BACKWARD:
        return (A)(p[3] != 0 ? ptl_elu_result_grad_d((double)x[0], (double)x[1], p[0], p[1], p[2])
                             : ptl_elu_grad_d((double)x[0], (double)x[1], p[0], p[1], p[2]));
    case PTL_CUDA_OP_SOFTPLUS: return (A)ptl_softplus_d((double)x[0], p[0], p[1]);
    case PTL_CUDA_OP_SOFTPLUS_BACKWARD:
        return (A)ptl_softplus_grad_d((double)x[0], (double)x[1], p[0], p[1]);
    case PTL_CUDA_OP_LOG_SIGMOID: return (A)ptl_log_sigmoid_d((double)x[0]);
    case PTL_CUDA_OP_LOG_SIGMOID_BACKWARD:
        return (A)((double)x[0] * ptl_sigmoid_d(-(double)x[1]));
    case PTL_CUDA_OP_HARDSWISH: return hardswish_of(x[0]);
    case PTL_CUDA_OP_HARDSWISH_BACKWARD: return hardswish_grad_of(x[0], x[1]);
    case PTL_CUDA_OP_HARDSIGMOID: return hardsigmoid_of(x[0]);
    case PTL_CUDA_OP_HARDSIGMOID_BACKWARD: return hardsigmoid_grad_of(x[0], x[1]);
    case PTL_CUDA_OP_LEAKY_RELU: return leaky_relu_of(x[0], (A)p[0]);
    case PTL_CUDA_OP_LEAKY_RELU_BACKWARD: return leaky_relu_grad_of(x[0], x[1], (A)p[0]);
    case PTL_CUDA_OP_HARDTANH: return hardtanh_of(x[0], (A)p[0], (A)p[1]);
    case PTL_CUDA_OP_HARDTANH_BACKWARD: return hardtanh_grad_of(x[0], x[1], (A)p[0], (A)p[1]);
    case PTL_CUDA_OP_SOFTSHRINK: return softshrink_of(x[0], (A)p[0]);
    case PTL_CUDA_OP_HARDSHRINK: return hardshrink_of(x[0], (A)p[0]);
    case PTL_CUDA_OP_SHRINK_BACKWARD: return shrink_grad_of(x[0], x[1], (A)p[0]);
    case PTL_CUDA_OP_ABS: return abs_of(x[0]);
    case PTL_CUDA_OP_SIGN: return (A)ptl_sign_d((double)x[0]);
    case PTL_CUDA_OP_SQRT: return sqrt(x[0]);
    case PTL_CUDA_OP_RECIPROCAL: return (A)1 / x[0];
    // ternary.c's scalar clamp: ptl_clamp_d on the value in double
    case PTL_CUDA_OP_CLAMP: return (A)ptl_clamp_d((double)x[0], p[0], p[1]);
    case PTL_CUDA_OP_POW_SCALAR: return pow_scalar_of(x[0], p[0], p[1] != 0);
    // ternary.c's clamp.Tensor: ptl_clamp_d in double, a missing bound the infinite one
    case PTL_CUDA_OP_CLAMP_TENSOR:
        return (A)ptl_clamp_d((double)x[0], (double)x[1], (double)x[2]);
    case PTL_CUDA_OP_CLAMP_MIN_TENSOR: return (A)ptl_clamp_d((double)x[0], (double)x[1], INFINITY);
    case PTL_CUDA_OP_CLAMP_MAX_TENSOR:
        return (A)ptl_clamp_d((double)x[0], -INFINITY, (double)x[1]);
    case PTL_CUDA_OP_NEXTAFTER: return nextafter_of(x[0], x[1], (int)p[0]);
    case PTL_CUDA_OP_REG_LOSS: return reg_loss_of(x[0], x[1], (int)p[0], (A)p[1]);
    case PTL_CUDA_OP_REG_LOSS_BACKWARD:
        return reg_grad_of(x[0], x[1], x[2], (int)p[0], (A)p[1], (A)p[2]);
    case PTL_CUDA_OP_BCE: return (A)ptl_bce_d((double)x[0], (double)x[1]);
    case PTL_CUDA_OP_BCE_BACKWARD:
        return (A)ptl_bce_grad_d((double)x[0] / p[0], (double)x[1], (double)x[2]);
    case PTL_CUDA_OP_MATH: return math1_of(x[0], p);
    case PTL_CUDA_OP_MATH2: return math2_of(x[0], x[1], p);
    case PTL_CUDA_OP_MATH3: return math3_of(x[0], x[1], x[2], p);
    default: return x[0];
    }
}

template <int OP> struct Arity { enum { n = 1 }; };
template <> struct Arity<PTL_CUDA_OP_ADD> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_MUL> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_DIV> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_GELU_BACKWARD> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_THRESHOLD_BACKWARD> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_HYPOT> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_IGAMMA> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_IGAMMAC> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_STANDARD_GAMMA_GRAD> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_DIRICHLET_GRAD> { enum { n = 3 }; };
template <> struct Arity<PTL_CUDA_OP_SILU_BACKWARD> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_MISH_BACKWARD> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_ELU_BACKWARD> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_SOFTPLUS_BACKWARD> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_LOG_SIGMOID_BACKWARD> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_HARDSWISH_BACKWARD> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_HARDSIGMOID_BACKWARD> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_LEAKY_RELU_BACKWARD> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_HARDTANH_BACKWARD> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_SHRINK_BACKWARD> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_REG_LOSS> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_REG_LOSS_BACKWARD> { enum { n = 3 }; };
template <> struct Arity<PTL_CUDA_OP_CLAMP_TENSOR> { enum { n = 3 }; };
template <> struct Arity<PTL_CUDA_OP_CLAMP_MIN_TENSOR> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_CLAMP_MAX_TENSOR> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_NEXTAFTER> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_GCD> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_LCM> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_BCE> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_BCE_BACKWARD> { enum { n = 3 }; };
template <> struct Arity<PTL_CUDA_OP_MATH2> { enum { n = 2 }; };
template <> struct Arity<PTL_CUDA_OP_MATH3> { enum { n = 3 }; };

struct Params {
    double p[PTL_CUDA_MAX_PARAMS];
};

// input k (operand k + 1) at byte offset off
template <typename T>
__device__ inline typename Acc<T>::type
input(const PtlCudaLoopArgs &a, int k, int64_t off)
{
    if (a.is_scalar & (1u << (k + 1))) {
        return (typename Acc<T>::type)a.scalar[k + 1];
    }
    return to_acc(*(const T *)(a.data[k + 1] + off));
}

// [numel] (any strides) -> [numel]: one element per thread, offsets from the linear index
template <int OP, typename T>
__global__ void
pointwise_strided_kernel(PtlCudaLoopArgs a, Params p)
{
    typedef typename Acc<T>::type A;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.numel; i += step) {
        int64_t off[PTL_CUDA_MAX_OPERANDS];
        A x[3];
        ptl_cuda_offsets_at(&a, i, off);
        for (int k = 0; k < Arity<OP>::n; k++) {
            x[k] = input<T>(a, k, off[k + 1]);
        }
        *(T *)(a.data[0] + off[0]) = from_acc<T>(apply<OP, A>(x, p.p));
    }
}

template <typename T, int VEC> struct alignas(sizeof(T) * VEC) Vector {
    T v[VEC];
};

// [numel] dense -> [numel] dense: VEC elements per thread and load
template <int OP, typename T, int VEC>
__global__ void
pointwise_contiguous_kernel(PtlCudaLoopArgs a, Params p)
{
    typedef typename Acc<T>::type A;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    const int64_t nvec = (a.numel + VEC - 1) / VEC;
    for (int64_t u = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; u < nvec; u += step) {
        const int64_t start = u * VEC;
        if (start + VEC <= a.numel) {
            Vector<T, VEC> in[3], out;
            for (int k = 0; k < Arity<OP>::n; k++) {
                if (!(a.is_scalar & (1u << (k + 1)))) {
                    in[k] = ((const Vector<T, VEC> *)a.data[k + 1])[u];
                }
            }
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                A x[3];
                for (int k = 0; k < Arity<OP>::n; k++) {
                    x[k] = (a.is_scalar & (1u << (k + 1))) ? (A)a.scalar[k + 1]
                                                           : to_acc(in[k].v[j]);
                }
                out.v[j] = from_acc<T>(apply<OP, A>(x, p.p));
            }
            ((Vector<T, VEC> *)a.data[0])[u] = out;
            continue;
        }
        for (int64_t i = start; i < a.numel; i++) {
            A x[3];
            for (int k = 0; k < Arity<OP>::n; k++) {
                x[k] = input<T>(a, k, i * (int64_t)sizeof(T));
            }
            ((T *)a.data[0])[i] = from_acc<T>(apply<OP, A>(x, p.p));
        }
    }
}

// ---- integer dtypes ----
//
// Note [CUDA integer pointwise]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// add (sub, rsub), mul, neg, relu, abs, sign, gcd and lcm take uint8, int8, int16, int32 and
// int64 (not bool): each element is widened to int64, computed with the CPU loops' wrapping
// formulas (scalar_math.h's ptl_add_i, ptl_abs_i, ...; special_math.h's ptl_gcd_i), and
// truncated to the dtype at the store, as binary.c's and unary.c's integer loops do: the
// CPU's values.  A CPU 0-dim operand arrives exact in iscalar.  One element per thread from
// the linear index (no vector loads): integer tensors are rarely the hot path.  IntOps, from
// pointwise_dtypes.h's list, says which ops take them; gcd and lcm take nothing else.  The
// math family (PTL_CUDA_OP_MATH, MATH2, MATH3) takes bool too, through the uint8 kernel:
// its bool functions (and, or, xor, maximum, minimum, BOOL_NOT) keep 0 and 1 in 0 and 1.
template <int OP> struct IntOps { enum { ints = 0, floats = 1 }; };
#define PTL_INT_OPS(OP, FLOATS)                                                           \
    template <> struct IntOps<OP> { enum { ints = 1, floats = FLOATS }; };
PTL_FORALL_INT_OPS(PTL_INT_OPS)
#undef PTL_INT_OPS

// BoolOps: the ops whose uint8 kernel runs bool too (pointwise_dtypes.h's list)
template <int OP> struct BoolOps { enum { bools = 0 }; };
#define PTL_BOOL_OPS(OP) template <> struct BoolOps<OP> { enum { bools = 1 }; };
PTL_FORALL_BOOL_OPS(PTL_BOOL_OPS)
#undef PTL_BOOL_OPS

// the math family on integers (and bool as 0 or 1), as the CPU's integer loops: the
// rounding functions and nan_to_num are the identity, the divisions give 0 for a zero
// divisor (the caller raises), addcmul's value is p[1] truncated
__device__ inline int64_t
int_math_of(const int64_t *x, const double *p)
{
    const int64_t a = x[0], b = x[1];
    switch ((int)p[0]) {
    case PTL_CUDA_MATH_SQUARE: return ptl_square_i(a);
    case PTL_CUDA_MATH_THRESHOLD: return (double)a <= p[1] ? (int64_t)p[2] : a;
    case PTL_CUDA_MATH_BITWISE_NOT: return ~a;
    case PTL_CUDA_MATH_BOOL_NOT: return a ^ 1;
    case PTL_CUDA_MATH_MAXIMUM: case PTL_CUDA_MATH_FMAX: return a > b ? a : b;
    case PTL_CUDA_MATH_MINIMUM: case PTL_CUDA_MATH_FMIN: return a < b ? a : b;
    case PTL_CUDA_MATH_POW: return ptl_pow_i(a, b);
    case PTL_CUDA_MATH_DIV_TRUNC: return b == 0 ? 0 : ptl_div_trunc_i(a, b);
    case PTL_CUDA_MATH_DIV_FLOOR: return b == 0 ? 0 : ptl_div_floor_i(a, b);
    case PTL_CUDA_MATH_REMAINDER: return b == 0 ? 0 : ptl_remainder_i(a, b);
    case PTL_CUDA_MATH_FMOD: return b == 0 ? 0 : ptl_fmod_i(a, b);
    case PTL_CUDA_MATH_BITWISE_AND: return a & b;
    case PTL_CUDA_MATH_BITWISE_OR: return a | b;
    case PTL_CUDA_MATH_BITWISE_XOR: return a ^ b;
    case PTL_CUDA_MATH_LSHIFT: return ptl_lshift_i(a, b, (int)p[1]);
    case PTL_CUDA_MATH_RSHIFT: return ptl_rshift_i(a, b, (int)p[1]);
    case PTL_CUDA_MATH_ADDCMUL:
        return (int64_t)((uint64_t)a + (uint64_t)(int64_t)p[1] * (uint64_t)b * (uint64_t)x[2]);
    default: return a;
    }
}

template <int OP>
__device__ inline int64_t
apply_int(const int64_t *x, const double *p)
{
    switch (OP) {
    case PTL_CUDA_OP_ADD: return ptl_add_i(x[0], x[1], (int64_t)p[0]);
    case PTL_CUDA_OP_MUL: return (int64_t)((uint64_t)x[0] * (uint64_t)x[1]);
    case PTL_CUDA_OP_NEG: return (int64_t)(0 - (uint64_t)x[0]);
    case PTL_CUDA_OP_RELU: return ptl_relu_i(x[0]);
    case PTL_CUDA_OP_ABS: return ptl_abs_i(x[0]);
    case PTL_CUDA_OP_SIGN: return ptl_sign_i(x[0]);
    case PTL_CUDA_OP_GCD: return ptl_gcd_i(x[0], x[1]);
    case PTL_CUDA_OP_LCM: return ptl_lcm_i(x[0], x[1]);
    default: return int_math_of(x, p);
    }
}

// [numel] (any strides) -> [numel] in an integer dtype T
template <int OP, typename T>
__global__ void
int_pointwise_kernel(PtlCudaLoopArgs a, Params p)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.numel; i += step) {
        int64_t off[PTL_CUDA_MAX_OPERANDS], x[3];
        ptl_cuda_offsets_at(&a, i, off);
        for (int k = 0; k < Arity<OP>::n; k++) {
            const T *in = (const T *)(a.data[k + 1] + off[k + 1]);
            x[k] = (a.is_scalar & (1u << (k + 1))) ? a.iscalar[k + 1] : (int64_t)*in;
        }
        *(T *)(a.data[0] + off[0]) = (T)apply_int<OP>(x, p.p);
    }
}

// 32 blocks per SM: enough resident warps to hide memory latency, a grid-stride loop beyond
static int64_t
max_blocks(void)
{
    int device = 0, sms = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
        cudaGetLastError();
        sms = 1;
    }
    return (int64_t)sms * 32;
}

template <int OP, typename T>
static int
launch_pointwise(const PtlCudaLoopArgs *a, const double *p)
{
    cudaStream_t stream = ptl_cuda_launch_stream();
    Params params = {{0.0, 0.0, 0.0, 0.0}};
    for (int k = 0; p != NULL && k < PTL_CUDA_MAX_PARAMS; k++) {
        params.p[k] = p[k];
    }
    PtlCudaLaunch l = ptl_cuda_launch_for(a, (int64_t)sizeof(T), max_blocks());
    if (l.grid == 0) {
        return 0;
    }
    const int contiguous = ptl_cuda_is_contiguous(a, (int64_t)sizeof(T));
    const dim3 grid((unsigned)l.grid), block((unsigned)l.block);
    // eight per load only for two-byte types (16 bytes); the other instantiation is unused
    constexpr int eight = sizeof(T) <= 2 ? 8 : 1;
    if (!contiguous) {
        pointwise_strided_kernel<OP, T><<<grid, block, 0, stream>>>(*a, params);
    }
    else if (l.vec >= 8 && sizeof(T) <= 2) {
        pointwise_contiguous_kernel<OP, T, eight><<<grid, block, 0, stream>>>(*a, params);
    }
    else if (l.vec >= 4 && sizeof(T) <= 4) {
        pointwise_contiguous_kernel<OP, T, 4><<<grid, block, 0, stream>>>(*a, params);
    }
    else if (l.vec >= 2) {
        pointwise_contiguous_kernel<OP, T, 2><<<grid, block, 0, stream>>>(*a, params);
    }
    else {
        pointwise_contiguous_kernel<OP, T, 1><<<grid, block, 0, stream>>>(*a, params);
    }
    PTL_CUDA_CHECK(cudaGetLastError());
    return 0;
}

template <int OP, typename T>
static int
launch_int(const PtlCudaLoopArgs *a, const double *p)
{
    Params params = {{0.0, 0.0, 0.0, 0.0}};
    for (int k = 0; p != NULL && k < PTL_CUDA_MAX_PARAMS; k++) {
        params.p[k] = p[k];
    }
    PtlCudaLaunch l = ptl_cuda_launch_for(a, (int64_t)sizeof(T), max_blocks());
    if (l.grid == 0) {
        return 0;
    }
    int_pointwise_kernel<OP, T>
        <<<(unsigned)l.grid, (unsigned)l.block, 0, ptl_cuda_launch_stream()>>>(*a, params);
    PTL_CUDA_CHECK(cudaGetLastError());
    return 0;
}

template <int OP>
static int
launch_op(const PtlCudaLoopArgs *a, const double *p)
{
    if constexpr (IntOps<OP>::floats) {
        switch (a->dtype) {
        case PTL_DTYPE_FLOAT32: return launch_pointwise<OP, float>(a, p);
        case PTL_DTYPE_FLOAT64: return launch_pointwise<OP, double>(a, p);
        case PTL_DTYPE_FLOAT16: return launch_pointwise<OP, ptl_half>(a, p);
        case PTL_DTYPE_BFLOAT16: return launch_pointwise<OP, ptl_bf16>(a, p);
        default: break;
        }
    }
    if constexpr (IntOps<OP>::ints) {
        switch (a->dtype) {
        case PTL_DTYPE_UINT8: return launch_int<OP, uint8_t>(a, p);
        case PTL_DTYPE_INT8: return launch_int<OP, int8_t>(a, p);
        case PTL_DTYPE_INT16: return launch_int<OP, int16_t>(a, p);
        case PTL_DTYPE_INT32: return launch_int<OP, int32_t>(a, p);
        case PTL_DTYPE_INT64: return launch_int<OP, int64_t>(a, p);
        default: break;
        }
    }
    if constexpr (BoolOps<OP>::bools) {
        if (a->dtype == PTL_DTYPE_BOOL) {
            return launch_int<OP, uint8_t>(a, p);
        }
    }
    return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "CUDA kernel not implemented for '%s'",
                         ptl_dtype_legacy_name((PtlDtype)a->dtype));
}

static int launch_predicate(const PtlCudaLoopArgs *a, const double *p);

extern "C" int
ptl_cuda_pointwise(PtlCudaPointwiseOp op, const PtlCudaLoopArgs *a, const double *p)
{
    switch (op) {
    case PTL_CUDA_OP_ADD: return launch_op<PTL_CUDA_OP_ADD>(a, p);
    case PTL_CUDA_OP_MUL: return launch_op<PTL_CUDA_OP_MUL>(a, p);
    case PTL_CUDA_OP_DIV: return launch_op<PTL_CUDA_OP_DIV>(a, p);
    case PTL_CUDA_OP_NEG: return launch_op<PTL_CUDA_OP_NEG>(a, p);
    case PTL_CUDA_OP_RELU: return launch_op<PTL_CUDA_OP_RELU>(a, p);
    case PTL_CUDA_OP_SIGMOID: return launch_op<PTL_CUDA_OP_SIGMOID>(a, p);
    case PTL_CUDA_OP_TANH: return launch_op<PTL_CUDA_OP_TANH>(a, p);
    case PTL_CUDA_OP_EXP: return launch_op<PTL_CUDA_OP_EXP>(a, p);
    case PTL_CUDA_OP_LOG: return launch_op<PTL_CUDA_OP_LOG>(a, p);
    case PTL_CUDA_OP_GELU: return launch_op<PTL_CUDA_OP_GELU>(a, p);
    case PTL_CUDA_OP_GELU_BACKWARD: return launch_op<PTL_CUDA_OP_GELU_BACKWARD>(a, p);
    case PTL_CUDA_OP_THRESHOLD_BACKWARD:
        return launch_op<PTL_CUDA_OP_THRESHOLD_BACKWARD>(a, p);
    case PTL_CUDA_OP_ACOSH: return launch_op<PTL_CUDA_OP_ACOSH>(a, p);
    case PTL_CUDA_OP_ASINH: return launch_op<PTL_CUDA_OP_ASINH>(a, p);
    case PTL_CUDA_OP_ATANH: return launch_op<PTL_CUDA_OP_ATANH>(a, p);
    case PTL_CUDA_OP_ERFC: return launch_op<PTL_CUDA_OP_ERFC>(a, p);
    case PTL_CUDA_OP_I0: return launch_op<PTL_CUDA_OP_I0>(a, p);
    case PTL_CUDA_OP_I0E: return launch_op<PTL_CUDA_OP_I0E>(a, p);
    case PTL_CUDA_OP_I1: return launch_op<PTL_CUDA_OP_I1>(a, p);
    case PTL_CUDA_OP_I1E: return launch_op<PTL_CUDA_OP_I1E>(a, p);
    case PTL_CUDA_OP_HYPOT: return launch_op<PTL_CUDA_OP_HYPOT>(a, p);
    case PTL_CUDA_OP_IGAMMA: return launch_op<PTL_CUDA_OP_IGAMMA>(a, p);
    case PTL_CUDA_OP_IGAMMAC: return launch_op<PTL_CUDA_OP_IGAMMAC>(a, p);
    case PTL_CUDA_OP_STANDARD_GAMMA_GRAD:
        return launch_op<PTL_CUDA_OP_STANDARD_GAMMA_GRAD>(a, p);
    case PTL_CUDA_OP_DIRICHLET_GRAD: return launch_op<PTL_CUDA_OP_DIRICHLET_GRAD>(a, p);
    case PTL_CUDA_OP_SILU: return launch_op<PTL_CUDA_OP_SILU>(a, p);
    case PTL_CUDA_OP_SILU_BACKWARD: return launch_op<PTL_CUDA_OP_SILU_BACKWARD>(a, p);
    case PTL_CUDA_OP_MISH: return launch_op<PTL_CUDA_OP_MISH>(a, p);
    case PTL_CUDA_OP_MISH_BACKWARD: return launch_op<PTL_CUDA_OP_MISH_BACKWARD>(a, p);
    case PTL_CUDA_OP_ELU: return launch_op<PTL_CUDA_OP_ELU>(a, p);
    case PTL_CUDA_OP_ELU_BACKWARD: return launch_op<PTL_CUDA_OP_ELU_BACKWARD>(a, p);
    case PTL_CUDA_OP_SOFTPLUS: return launch_op<PTL_CUDA_OP_SOFTPLUS>(a, p);
    case PTL_CUDA_OP_SOFTPLUS_BACKWARD: return launch_op<PTL_CUDA_OP_SOFTPLUS_BACKWARD>(a, p);
    case PTL_CUDA_OP_LOG_SIGMOID: return launch_op<PTL_CUDA_OP_LOG_SIGMOID>(a, p);
    case PTL_CUDA_OP_LOG_SIGMOID_BACKWARD: return launch_op<PTL_CUDA_OP_LOG_SIGMOID_BACKWARD>(a, p);
    case PTL_CUDA_OP_HARDSWISH: return launch_op<PTL_CUDA_OP_HARDSWISH>(a, p);
    case PTL_CUDA_OP_HARDSWISH_BACKWARD: return launch_op<PTL_CUDA_OP_HARDSWISH_BACKWARD>(a, p);
    case PTL_CUDA_OP_HARDSIGMOID: return launch_op<PTL_CUDA_OP_HARDSIGMOID>(a, p);
    case PTL_CUDA_OP_HARDSIGMOID_BACKWARD: return launch_op<PTL_CUDA_OP_HARDSIGMOID_BACKWARD>(a, p);
    case PTL_CUDA_OP_LEAKY_RELU: return launch_op<PTL_CUDA_OP_LEAKY_RELU>(a, p);
    case PTL_CUDA_OP_LEAKY_RELU_BACKWARD: return launch_op<PTL_CUDA_OP_LEAKY_RELU_BACKWARD>(a, p);
    case PTL_CUDA_OP_HARDTANH: return launch_op<PTL_CUDA_OP_HARDTANH>(a, p);
    case PTL_CUDA_OP_HARDTANH_BACKWARD: return launch_op<PTL_CUDA_OP_HARDTANH_BACKWARD>(a, p);
    case PTL_CUDA_OP_SOFTSHRINK: return launch_op<PTL_CUDA_OP_SOFTSHRINK>(a, p);
    case PTL_CUDA_OP_HARDSHRINK: return launch_op<PTL_CUDA_OP_HARDSHRINK>(a, p);
    case PTL_CUDA_OP_SHRINK_BACKWARD: return launch_op<PTL_CUDA_OP_SHRINK_BACKWARD>(a, p);
    case PTL_CUDA_OP_ABS: return launch_op<PTL_CUDA_OP_ABS>(a, p);
    case PTL_CUDA_OP_SIGN: return launch_op<PTL_CUDA_OP_SIGN>(a, p);
    case PTL_CUDA_OP_SQRT: return launch_op<PTL_CUDA_OP_SQRT>(a, p);
    case PTL_CUDA_OP_RECIPROCAL: return launch_op<PTL_CUDA_OP_RECIPROCAL>(a, p);
    case PTL_CUDA_OP_CLAMP: return launch_op<PTL_CUDA_OP_CLAMP>(a, p);
    case PTL_CUDA_OP_POW_SCALAR: return launch_op<PTL_CUDA_OP_POW_SCALAR>(a, p);
    case PTL_CUDA_OP_CLAMP_TENSOR: return launch_op<PTL_CUDA_OP_CLAMP_TENSOR>(a, p);
    case PTL_CUDA_OP_CLAMP_MIN_TENSOR: return launch_op<PTL_CUDA_OP_CLAMP_MIN_TENSOR>(a, p);
    case PTL_CUDA_OP_CLAMP_MAX_TENSOR: return launch_op<PTL_CUDA_OP_CLAMP_MAX_TENSOR>(a, p);
    case PTL_CUDA_OP_NEXTAFTER: return launch_op<PTL_CUDA_OP_NEXTAFTER>(a, p);
    case PTL_CUDA_OP_GCD: return launch_op<PTL_CUDA_OP_GCD>(a, p);
    case PTL_CUDA_OP_LCM: return launch_op<PTL_CUDA_OP_LCM>(a, p);
    case PTL_CUDA_OP_REG_LOSS: return launch_op<PTL_CUDA_OP_REG_LOSS>(a, p);
    case PTL_CUDA_OP_REG_LOSS_BACKWARD: return launch_op<PTL_CUDA_OP_REG_LOSS_BACKWARD>(a, p);
    case PTL_CUDA_OP_BCE: return launch_op<PTL_CUDA_OP_BCE>(a, p);
    case PTL_CUDA_OP_BCE_BACKWARD: return launch_op<PTL_CUDA_OP_BCE_BACKWARD>(a, p);
    case PTL_CUDA_OP_MATH: return launch_op<PTL_CUDA_OP_MATH>(a, p);
    case PTL_CUDA_OP_MATH2: return launch_op<PTL_CUDA_OP_MATH2>(a, p);
    case PTL_CUDA_OP_MATH3: return launch_op<PTL_CUDA_OP_MATH3>(a, p);
    case PTL_CUDA_OP_PREDICATE: return launch_predicate(a, p);
    default: return ptl_error_set(PTL_ERR_RUNTIME, "unknown CUDA pointwise op %d", (int)op);
    }
}

// ---- copy with conversion: the rules of copy.c's conversion loops, one kernel for every
// (destination, source) pair: integers go through int64, floats through double ----

struct Value {
    double d;
    int64_t i;
    int is_int;
};

__device__ inline Value
load_value(const char *p, int dtype)
{
    Value v = {0.0, 0, 1};
    switch (dtype) {
    case PTL_DTYPE_BOOL: v.i = *(const uint8_t *)p != 0; break;
    case PTL_DTYPE_UINT8: v.i = *(const uint8_t *)p; break;
    case PTL_DTYPE_INT8: v.i = *(const int8_t *)p; break;
    case PTL_DTYPE_INT16: v.i = *(const int16_t *)p; break;
    case PTL_DTYPE_INT32: v.i = *(const int32_t *)p; break;
    case PTL_DTYPE_INT64: v.i = *(const int64_t *)p; break;
    case PTL_DTYPE_FLOAT16: v.is_int = 0; v.d = ptl_half_to_f(*(const ptl_half *)p); break;
    case PTL_DTYPE_BFLOAT16: v.is_int = 0; v.d = ptl_bf16_to_f(*(const ptl_bf16 *)p); break;
    case PTL_DTYPE_FLOAT32: v.is_int = 0; v.d = *(const float *)p; break;
    default: v.is_int = 0; v.d = *(const double *)p; break;
    }
    return v;
}

__device__ inline void
store_value(char *p, int dtype, Value v)
{
    // integers convert directly (int64 -> float rounds once), floats from double
    const float f = v.is_int ? (float)v.i : (float)v.d;
    const int32_t i32 = v.is_int ? (int32_t)v.i : ptl_d_to_i32(v.d);
    switch (dtype) {
    case PTL_DTYPE_BOOL: *(uint8_t *)p = v.is_int ? v.i != 0 : v.d != 0; break;
    case PTL_DTYPE_UINT8: *(uint8_t *)p = (uint8_t)i32; break;
    case PTL_DTYPE_INT8: *(int8_t *)p = (int8_t)i32; break;
    case PTL_DTYPE_INT16: *(int16_t *)p = (int16_t)i32; break;
    case PTL_DTYPE_INT32: *(int32_t *)p = i32; break;
    case PTL_DTYPE_INT64: *(int64_t *)p = v.is_int ? v.i : ptl_d_to_i64(v.d); break;
    case PTL_DTYPE_FLOAT16: *(ptl_half *)p = ptl_f_to_half(f); break;
    case PTL_DTYPE_BFLOAT16: *(ptl_bf16 *)p = ptl_f_to_bf16(f); break;
    case PTL_DTYPE_FLOAT32: *(float *)p = f; break;
    default: *(double *)p = v.is_int ? (double)v.i : v.d; break;
    }
}

// [numel] any strides, src_dtype -> [numel] any strides, dtype
__global__ void
copy_kernel(PtlCudaLoopArgs a)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.numel; i += step) {
        int64_t off[PTL_CUDA_MAX_OPERANDS];
        ptl_cuda_offsets_at(&a, i, off);
        store_value(a.data[0] + off[0], a.dtype, load_value(a.data[1] + off[1], a.src_dtype));
    }
}

extern "C" int
ptl_cuda_copy(const PtlCudaLoopArgs *a)
{
    cudaStream_t stream = ptl_cuda_launch_stream();
    const int64_t grid = ptl_cuda_grid_for(a->numel, max_blocks());
    if (grid == 0) {
        return 0;
    }
    copy_kernel<<<(unsigned)grid, PTL_CUDA_BLOCK_SIZE, 0, stream>>>(*a);
    PTL_CUDA_CHECK(cudaGetLastError());
    return 0;
}

// ---- the predicates (PTL_CUDA_OP_PREDICATE, PtlCudaMathFn in p[0]) ----

// input k of a predicate, of the compute dtype, as copy's Value (a CPU 0-dim input: exact in
// iscalar for integers and bool, in scalar for the float dtypes)
__device__ inline Value
predicate_input(const PtlCudaLoopArgs &a, int k, int64_t off)
{
    if (a.is_scalar & (1u << (k + 1))) {
        const int is_int = a.dtype != PTL_DTYPE_FLOAT16 && a.dtype != PTL_DTYPE_BFLOAT16 &&
                           a.dtype != PTL_DTYPE_FLOAT32 && a.dtype != PTL_DTYPE_FLOAT64;
        Value v = {a.scalar[k + 1], a.iscalar[k + 1], is_int};
        return v;
    }
    return load_value(a.data[k + 1] + off, a.dtype);
}

// as unary.c's predicate loops and compare.c's isclose loops: integers and bool are never
// nan or inf; isclose compares integers and float64 in double (ptl_isclose_d), the other
// float dtypes in float (ptl_isclose_f), rtol and atol rounded to that type
__device__ inline uint8_t
predicate_of(Value x, Value y, int dtype, const double *p)
{
    switch ((int)p[0]) {
    case PTL_CUDA_MATH_ISNAN: return !x.is_int && isnan(x.d);
    case PTL_CUDA_MATH_ISINF: return !x.is_int && isinf(x.d);
    case PTL_CUDA_MATH_ISFINITE: return x.is_int || isfinite(x.d);
    case PTL_CUDA_MATH_LOGICAL_NOT: return x.is_int ? x.i == 0 : x.d == 0;
    default:
        if (x.is_int || dtype == PTL_DTYPE_FLOAT64) {
            return (uint8_t)ptl_isclose_d(x.is_int ? (double)x.i : x.d,
                                          y.is_int ? (double)y.i : y.d, p[1], p[2], p[3] != 0);
        }
        return (uint8_t)ptl_isclose_f((float)x.d, (float)y.d, (float)p[1], (float)p[2],
                                      p[3] != 0);
    }
}

// [numel] any strides, N inputs of a.dtype -> [numel] bool, any strides
template <int N>
__global__ void
predicate_kernel(PtlCudaLoopArgs a, Params p)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.numel; i += step) {
        int64_t off[PTL_CUDA_MAX_OPERANDS];
        ptl_cuda_offsets_at(&a, i, off);
        const Value x = predicate_input(a, 0, off[1]);
        const Value y = N > 1 ? predicate_input(a, 1, off[2]) : x;
        *(uint8_t *)(a.data[0] + off[0]) = predicate_of(x, y, a.dtype, p.p);
    }
}

static int
launch_predicate(const PtlCudaLoopArgs *a, const double *p)
{
    cudaStream_t stream = ptl_cuda_launch_stream();
    Params params = {{p[0], p[1], p[2], p[3]}};
    const int64_t grid = ptl_cuda_grid_for(a->numel, max_blocks());
    if (grid == 0) {
        return 0;
    }
    if ((int)p[0] == PTL_CUDA_MATH_ISCLOSE) {
        predicate_kernel<2><<<(unsigned)grid, PTL_CUDA_BLOCK_SIZE, 0, stream>>>(*a, params);
    }
    else {
        predicate_kernel<1><<<(unsigned)grid, PTL_CUDA_BLOCK_SIZE, 0, stream>>>(*a, params);
    }
    PTL_CUDA_CHECK(cudaGetLastError());
    return 0;
}

struct FillValue {
    unsigned char bytes[16];
};

// [numel] any strides <- one value of `itemsize` bytes
__global__ void
fill_kernel(PtlCudaLoopArgs a, FillValue v, int itemsize)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.numel; i += step) {
        int64_t off[PTL_CUDA_MAX_OPERANDS];
        ptl_cuda_offsets_at(&a, i, off);
        for (int b = 0; b < itemsize; b++) {
            a.data[0][off[0] + b] = (char)v.bytes[b];
        }
    }
}

extern "C" int
ptl_cuda_fill(const PtlCudaLoopArgs *a, const void *value, int64_t itemsize)
{
    cudaStream_t stream = ptl_cuda_launch_stream();
    FillValue v;
    const int64_t grid = ptl_cuda_grid_for(a->numel, max_blocks());
    if (grid == 0) {
        return 0;
    }
    if (itemsize < 1 || itemsize > (int64_t)sizeof(v.bytes)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "fill: unsupported element size %lld",
                             (long long)itemsize);
    }
    memcpy(v.bytes, value, (size_t)itemsize);
    fill_kernel<<<(unsigned)grid, PTL_CUDA_BLOCK_SIZE, 0, stream>>>(*a, v, (int)itemsize);
    PTL_CUDA_CHECK(cudaGetLastError());
    return 0;
}

// On the current stream, then waited for: the copy comes after the work queued there, which
// cudaMemcpy (the legacy stream) would not wait for on a non-blocking pool stream.
extern "C" int
ptl_cuda_memcpy(void *dst, int dst_on_device, const void *src, int src_on_device,
                size_t nbytes)
{
    PtlStreamId stream = ptl_cuda_current_stream_here();
    if (nbytes == 0) {
        return 0;
    }
    if (ptl_cuda_memcpy_async(dst, dst_on_device, src, src_on_device, nbytes, stream) < 0) {
        return -1;
    }
    return ptl_cuda_stream_synchronize(stream);
}
