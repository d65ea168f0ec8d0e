/* activation.c -- pointwise activation functions and their backward kernels.  Mirrors
 * ATen/native/Activation.cpp and ATen/native/cpu/Activation.cpp.
 *
 * Every activation computes in double through the scalar formulas of scalar_math.h
 * (float16/bfloat16/float32 load to double and round once on store); parameters
 * (alpha, beta, lambd, ...) travel in a double[4] as the loop's `extra`.  Forward loops
 * take (out, self), backward loops (grad_input, grad_output, self).  Only floating
 * dtypes have loops, so integer and bool inputs raise PyTorch's "not implemented for".
 * Exception: float32 gelu (both forms), silu and their backwards run 8 lanes in float with AVX2+FMA
 * (vec_math.h), falling back to the double formulas for blocks with far-negative inputs,
 * where float cancellation would lose digits. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "../../c10/cpu_features.h"
#include "../../c10/error.h"
#include "../scalar_math.h"
#include "native.h"
#include "vec_math.h"

#define DEFINE_ACT_LOOP(NAME, T, DT, LOAD, STORE, F)                                      \
    static void                                                                           \
    NAME##_loop_##DT(char **d, const int64_t *s, int64_t n, const void *extra)            \
    {                                                                                     \
        const double *p = (const double *)extra;                                          \
        (void)p;                                                                          \
        for (int64_t i = 0; i < n; i++) {                                                 \
            double x = (double)LOAD(*(const T *)(d[1] + i * s[1]));                       \
            *(T *)(d[0] + i * s[0]) = STORE(F(x, p));                                     \
        }                                                                                 \
    }

#define DEFINE_ACT_GRAD_LOOP(NAME, T, DT, LOAD, STORE, G)                                 \
    static void                                                                           \
    NAME##_loop_##DT(char **d, const int64_t *s, int64_t n, const void *extra)            \
    {                                                                                     \
        const double *p = (const double *)extra;                                          \
        (void)p;                                                                          \
        for (int64_t i = 0; i < n; i++) {                                                 \
            double g = (double)LOAD(*(const T *)(d[1] + i * s[1]));                       \
            double x = (double)LOAD(*(const T *)(d[2] + i * s[2]));                       \
            *(T *)(d[0] + i * s[0]) = STORE(G(g, x, p));                                  \
        }                                                                                 \
    }

#define TO_F(X) ((float)(X))
#define TO_F2(X) PTL_STORE_f2((float)(X))
#define TO_BF(X) PTL_STORE_bf((float)(X))

/* One loop per floating dtype (DEF: DEFINE_ACT_LOOP or DEFINE_ACT_GRAD_LOOP), and
 * (DEFINE_ACT, DEFINE_ACT_GRAD) the table indexed by dtype. */
#define DEFINE_FLOAT_LOOPS(DEF, NAME, F)                                                  \
    DEF(NAME, ptl_half, f2, PTL_LOAD_f2, TO_F2, F)                                        \
    DEF(NAME, ptl_bf16, bf, PTL_LOAD_bf, TO_BF, F)                                        \
    DEF(NAME, float, f4, PTL_ID, TO_F, F)                                                 \
    DEF(NAME, double, f8, PTL_ID, PTL_ID, F)

#define DEFINE_FLOAT_TABLE(NAME)                                                          \
    static const PtlLoop NAME##_loops[PTL_DTYPE_COUNT] = {                                \
        [PTL_DTYPE_FLOAT16] = NAME##_loop_f2, [PTL_DTYPE_BFLOAT16] = NAME##_loop_bf,      \
        [PTL_DTYPE_FLOAT32] = NAME##_loop_f4, [PTL_DTYPE_FLOAT64] = NAME##_loop_f8};

#define DEFINE_ACT_FLOAT_LOOPS(NAME, F) DEFINE_FLOAT_LOOPS(DEFINE_ACT_LOOP, NAME, F)
#define DEFINE_ACT(NAME, F) DEFINE_ACT_FLOAT_LOOPS(NAME, F) DEFINE_FLOAT_TABLE(NAME)
#define DEFINE_ACT_GRAD(NAME, G)                                                          \
    DEFINE_FLOAT_LOOPS(DEFINE_ACT_GRAD_LOOP, NAME, G) DEFINE_FLOAT_TABLE(NAME)

/* ---- formulas: x the input, g the incoming gradient, p the parameters ---- */

#define GELU_F(X, P) ptl_gelu_d((X), (P)[0] != 0)
#define GELU_G(G, X, P) ptl_gelu_grad_d((G), (X), (P)[0] != 0)
#define SILU_F(X, P) ((X) * ptl_sigmoid_d(X))
#define SILU_G(G, X, P) ptl_silu_grad_d((G), (X))
#define MISH_F(X, P) ptl_mish_d(X)
#define MISH_G(G, X, P) ptl_mish_grad_d((G), (X))
#define ELU_F(X, P) ptl_elu_d((X), (P)[0], (P)[1], (P)[2])
#define ELU_G(G, X, P) ptl_elu_grad_d((G), (X), (P)[0], (P)[1], (P)[2])
#define ELU_RG(G, Y, P) ptl_elu_result_grad_d((G), (Y), (P)[0], (P)[1], (P)[2])
#define LEAKY_F(X, P) ((X) > 0 ? (X) : (X) * (P)[0])
#define LEAKY_G(G, X, P) ((X) > 0 ? (G) : (G) * (P)[0])
#define HARDTANH_F(X, P) ((X) < (P)[0] ? (P)[0] : (X) > (P)[1] ? (P)[1] : (X))
#define HARDTANH_G(G, X, P) ((X) <= (P)[0] || (X) >= (P)[1] ? 0.0 : (G))
#define SOFTPLUS_F(X, P) ptl_softplus_d((X), (P)[0], (P)[1])
#define SOFTPLUS_G(G, X, P) ptl_softplus_grad_d((G), (X), (P)[0], (P)[1])
#define HARDSWISH_F(X, P) ptl_hardswish_d(X)
#define HARDSWISH_G(G, X, P) ptl_hardswish_grad_d((G), (X))
#define HARDSIGMOID_F(X, P) ptl_hardsigmoid_d(X)
#define HARDSIGMOID_G(G, X, P) ((X) > -3.0 && (X) < 3.0 ? (G) / 6.0 : 0.0)
#define LOGSIG_F(X, P) ptl_log_sigmoid_d(X)
#define LOGSIG_G(G, X, P) ((G) * ptl_sigmoid_d(-(X)))
#define SOFTSHRINK_F(X, P) ((X) > (P)[0] ? (X) - (P)[0] : (X) < -(P)[0] ? (X) + (P)[0] : 0.0 * (X))
#define SHRINK_G(G, X, P) ((X) >= -(P)[0] && (X) <= (P)[0] ? 0.0 : (G))
#define HARDSHRINK_F(X, P) ((X) >= -(P)[0] && (X) <= (P)[0] ? 0.0 : (X))
#define THRESHOLD_F(X, P) ((X) <= (P)[0] ? (P)[1] : (X))
#define THRESHOLD_G(G, X, P) ptl_threshold_grad_d((G), (X), (P)[0])

/* hardtanh and threshold also take integer tensors (limits truncated on store, as in
 * PyTorch); the loops go through double, exact up to 2^53 */
#define DEFINE_ACT_INT(NAME, F)                                                           \
    DEFINE_ACT_LOOP(NAME, uint8_t, u1, PTL_ID, (uint8_t), F)                              \
    DEFINE_ACT_LOOP(NAME, int8_t, i1, PTL_ID, (int8_t), F)                                \
    DEFINE_ACT_LOOP(NAME, int16_t, i2, PTL_ID, (int16_t), F)                              \
    DEFINE_ACT_LOOP(NAME, int32_t, i4, PTL_ID, (int32_t), F)                              \
    DEFINE_ACT_LOOP(NAME, int64_t, i8, PTL_ID, (int64_t), F)

DEFINE_ACT_INT(hardtanh_int, HARDTANH_F)
DEFINE_ACT_INT(threshold_int, THRESHOLD_F)

DEFINE_ACT_FLOAT_LOOPS(gelu, GELU_F)
DEFINE_FLOAT_LOOPS(DEFINE_ACT_GRAD_LOOP, gelu_grad, GELU_G)
/* gelu in float, 8 lanes: 0.5 x (1 + erf(x / sqrt 2)), with 1 + erf(t) taken as erfc(-t)
 * for t < -1; blocks holding an x below -5.5 (forward) or -3 (backward) go through the
 * double loops.  Strided data uses the double loops too. */
#ifdef PTL_HAVE_AVX2_KERNELS
PTL_AVX2 static inline __m256
gelu_cdf2_ps(__m256 x)
{
    /* 1 + erf(t): 1 + t P(t^2) for |t| < 1, else erfc(|t|) = e (t < -1) or 2 - e */
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 t = _mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752f));
    __m256 at = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), t);
    __m256 small = _mm256_fmadd_ps(t, ptl_vm_erf_poly_ps(_mm256_mul_ps(t, t)), one);
    __m256 e = ptl_vm_erfc_mid_ps(_mm256_min_ps(at, _mm256_set1_ps(3.93f)));
    __m256 big = _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(2.0f), e), e,
                                  _mm256_cmp_ps(t, _mm256_setzero_ps(), _CMP_LT_OQ));
    big = _mm256_blendv_ps(big, _mm256_set1_ps(2.0f),
                           _mm256_cmp_ps(t, _mm256_set1_ps(3.93f), _CMP_GE_OQ));
    return _mm256_blendv_ps(big, small, _mm256_cmp_ps(at, one, _CMP_LT_OQ));
}

PTL_AVX2 static void
gelu_loop_f4_avx2(char **d, const int64_t *s, int64_t n, const void *extra)
{
    const __m256 lim = _mm256_set1_ps(-5.5f);
    float *o = (float *)d[0];
    const float *a = (const float *)d[1];
    const __m256 half = _mm256_set1_ps(0.5f);
    int64_t i = 0;
    /* two independent vectors a step, so the polynomial chains overlap */
    for (; i + 16 <= n; i += 16) {
        __m256 x0 = _mm256_loadu_ps(a + i), x1 = _mm256_loadu_ps(a + i + 8);
        if (_mm256_movemask_ps(_mm256_or_ps(_mm256_cmp_ps(x0, lim, _CMP_NGE_UQ),
                                            _mm256_cmp_ps(x1, lim, _CMP_NGE_UQ))) != 0) {
            char *dd[2] = {(char *)(o + i), (char *)(a + i)};
            gelu_loop_f4(dd, s, 16, extra);
            continue;
        }
        __m256 c0 = gelu_cdf2_ps(x0), c1 = gelu_cdf2_ps(x1);
        _mm256_storeu_ps(o + i, _mm256_mul_ps(_mm256_mul_ps(half, x0), c0));
        _mm256_storeu_ps(o + i + 8, _mm256_mul_ps(_mm256_mul_ps(half, x1), c1));
    }
    char *dd[2] = {(char *)(o + i), (char *)(a + i)};
    gelu_loop_f4(dd, s, n - i, extra);
}

/* The float backward of an activation, 8 lanes: o = g * dydx(x), where grad_output g is
 * contiguous or broadcast (stride 0, e.g. the gradient of a sum); a block with a lane below
 * lim (or NaN) goes to the scalar loop. */
PTL_AVX2 static inline void
grad_loop_f4_avx2(char **d, const int64_t *s, int64_t n, const void *extra, float lim_value,
                  __m256 (*dydx)(__m256 x), PtlLoop scalar)
{
    const __m256 lim = _mm256_set1_ps(lim_value);
    float *o = (float *)d[0];
    const float *g = (const float *)d[1], *a = (const float *)d[2];
    int64_t gs = s[1] == 0 ? 0 : 1, i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(a + i);
        if (_mm256_movemask_ps(_mm256_cmp_ps(x, lim, _CMP_NGE_UQ)) != 0) {
            char *dd[3] = {(char *)(o + i), (char *)(g + gs * i), (char *)(a + i)};
            scalar(dd, s, 8, extra);
            continue;
        }
        __m256 gv = gs ? _mm256_loadu_ps(g + i) : _mm256_set1_ps(g[0]);
        _mm256_storeu_ps(o + i, _mm256_mul_ps(gv, dydx(x)));
    }
    char *dd[3] = {(char *)(o + i), (char *)(g + gs * i), (char *)(a + i)};
    scalar(dd, s, n - i, extra);
}

/* gelu's derivative cdf + x pdf, pdf = e^(-x^2 / 2) / sqrt(2 pi) */
PTL_AVX2 static inline __m256
gelu_dydx_ps(__m256 x)
{
    __m256 h = _mm256_mul_ps(_mm256_mul_ps(x, x), _mm256_set1_ps(-0.5f));
    __m256 pdf = _mm256_mul_ps(ptl_vm_exp_ps(h), _mm256_set1_ps(0.3989422804014327f));
    __m256 cdf = _mm256_mul_ps(_mm256_set1_ps(0.5f), gelu_cdf2_ps(x));
    return _mm256_fmadd_ps(x, pdf, cdf);
}

PTL_AVX2 static void
gelu_grad_loop_f4_avx2(char **d, const int64_t *s, int64_t n, const void *extra)
{
    grad_loop_f4_avx2(d, s, n, extra, -3.0f, gelu_dydx_ps, gelu_grad_loop_f4);
}

/* The tanh approximation in float, 8 lanes: 0.5 x (1 + tanh(u)) = x s with s = 1 / (1 +
 * e^(-2u)), u = sqrt(2 / pi) (x + 0.044715 x^3); neither form cancels, so every input takes
 * the vector path.  Backward: s + 2 x s (1 - s) du/dx, with 1 - s = e^(-2u) s. */
PTL_AVX2 static inline __m256
gelu_tanh_e_ps(__m256 x)
{
    __m256 x2 = _mm256_mul_ps(x, x);
    __m256 u = _mm256_mul_ps(_mm256_mul_ps(x, _mm256_fmadd_ps(x2, _mm256_set1_ps(0.044715f),
                                                              _mm256_set1_ps(1.0f))),
                             _mm256_set1_ps(-1.5957691216057308f));
    return ptl_vm_exp_ps(u);
}

PTL_AVX2 static void
gelu_tanh_loop_f4_avx2(char **d, const int64_t *s, int64_t n, const void *extra)
{
    float *o = (float *)d[0];
    const float *a = (const float *)d[1];
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 x0 = _mm256_loadu_ps(a + i), x1 = _mm256_loadu_ps(a + i + 8);
        __m256 e0 = gelu_tanh_e_ps(x0), e1 = gelu_tanh_e_ps(x1);
        _mm256_storeu_ps(o + i, _mm256_div_ps(x0, _mm256_add_ps(_mm256_set1_ps(1.0f), e0)));
        _mm256_storeu_ps(o + i + 8,
                         _mm256_div_ps(x1, _mm256_add_ps(_mm256_set1_ps(1.0f), e1)));
    }
    char *dd[2] = {(char *)(o + i), (char *)(a + i)};
    gelu_loop_f4(dd, s, n - i, extra);
}

PTL_AVX2 static void
gelu_tanh_grad_loop_f4_avx2(char **d, const int64_t *s, int64_t n, const void *extra)
{
    float *o = (float *)d[0];
    const float *g = (const float *)d[1], *a = (const float *)d[2];
    const __m256 one = _mm256_set1_ps(1.0f);
    int64_t gs = s[1] == 0 ? 0 : 1, i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(a + i), e = gelu_tanh_e_ps(x);
        __m256 sg = _mm256_div_ps(one, _mm256_add_ps(one, e));
        __m256 du = _mm256_mul_ps(_mm256_fmadd_ps(_mm256_mul_ps(x, x),
                                                  _mm256_set1_ps(3.0f * 0.044715f), one),
                                  _mm256_set1_ps(0.7978845608028654f));
        /* 2 x s (1 - s) du = 2 x du e s^2 */
        __m256 t = _mm256_mul_ps(_mm256_mul_ps(_mm256_add_ps(x, x), du),
                                 _mm256_mul_ps(e, _mm256_mul_ps(sg, sg)));
        /* where e is 0 or inf (|x| huge: x^2 may overflow) the second term is 0, as in the
         * double formula; x = +-inf gives nan like it */
        t = _mm256_and_ps(t, _mm256_and_ps(_mm256_cmp_ps(e, _mm256_set1_ps(INFINITY), _CMP_LT_OQ),
                                           _mm256_cmp_ps(e, _mm256_setzero_ps(), _CMP_GT_OQ)));
        __m256 inf = _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x),
                                   _mm256_set1_ps(INFINITY), _CMP_EQ_OQ);
        __m256 gv = gs ? _mm256_loadu_ps(g + i) : _mm256_set1_ps(g[0]);
        __m256 r = _mm256_mul_ps(gv, _mm256_add_ps(sg, t));
        _mm256_storeu_ps(o + i, _mm256_blendv_ps(r, _mm256_set1_ps(NAN), inf));
    }
    char *dd[3] = {(char *)(o + i), (char *)(g + gs * i), (char *)(a + i)};
    gelu_grad_loop_f4(dd, s, n - i, extra);
}
#endif

#ifdef PTL_HAVE_AVX2_KERNELS
#define AVX2_LOOP(NAME) NAME##_loop_f4_avx2
#else
#define AVX2_LOOP(NAME) NULL
#endif

/* Runs the AVX2 loop avx2 where there is one, the CPU has AVX2 and the float32 operands are
 * contiguous (a backward's (grad) grad_output may also be broadcast); else portable. */
static void
run_f4(PtlLoop avx2, PtlLoop portable, int grad, char **d, const int64_t *s, int64_t n,
       const void *extra)
{
    int contiguous = s[0] == sizeof(float) && (s[1] == sizeof(float) || (grad && s[1] == 0)) &&
                     (!grad || s[2] == sizeof(float));
    if (avx2 != NULL && contiguous && ptl_cpu_capability() >= PTL_CPU_AVX2) {
        avx2(d, s, n, extra);
        return;
    }
    portable(d, s, n, extra);
}

/* float32 gelu (exact or tanh) and its backward */
static void
gelu_fast_loop_f4(char **d, const int64_t *s, int64_t n, const void *extra)
{
    PtlLoop avx2 = ((const double *)extra)[0] == 0 ? AVX2_LOOP(gelu) : AVX2_LOOP(gelu_tanh);
    run_f4(avx2, gelu_loop_f4, 0, d, s, n, extra);
}

static void
gelu_grad_fast_loop_f4(char **d, const int64_t *s, int64_t n, const void *extra)
{
    PtlLoop avx2 = ((const double *)extra)[0] == 0 ? AVX2_LOOP(gelu_grad)
                                                    : AVX2_LOOP(gelu_tanh_grad);
    run_f4(avx2, gelu_grad_loop_f4, 1, d, s, n, extra);
}

static const PtlLoop gelu_fast_loops[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_FLOAT16] = gelu_loop_f2, [PTL_DTYPE_BFLOAT16] = gelu_loop_bf,
    [PTL_DTYPE_FLOAT32] = gelu_fast_loop_f4, [PTL_DTYPE_FLOAT64] = gelu_loop_f8};
static const PtlLoop gelu_grad_fast_loops[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_FLOAT16] = gelu_grad_loop_f2, [PTL_DTYPE_BFLOAT16] = gelu_grad_loop_bf,
    [PTL_DTYPE_FLOAT32] = gelu_grad_fast_loop_f4, [PTL_DTYPE_FLOAT64] = gelu_grad_loop_f8};

DEFINE_ACT_FLOAT_LOOPS(silu, SILU_F)
DEFINE_FLOAT_LOOPS(DEFINE_ACT_GRAD_LOOP, silu_grad, SILU_G)

/* silu in float, 8 lanes: x s with s = 1 / (1 + e^-x); backward g s (1 + x e^-x s) (1 - s
 * written as e^-x s, which does not cancel).  Blocks holding an x below -80 (where e^-x
 * nears float overflow) or a nan go through the double loops, as does strided data. */
#ifdef PTL_HAVE_AVX2_KERNELS
PTL_AVX2 static void
silu_loop_f4_avx2(char **d, const int64_t *s, int64_t n, const void *extra)
{
    const __m256 lim = _mm256_set1_ps(-80.0f), one = _mm256_set1_ps(1.0f);
    float *o = (float *)d[0];
    const float *a = (const float *)d[1];
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(a + i);
        if (_mm256_movemask_ps(_mm256_cmp_ps(x, lim, _CMP_NGE_UQ)) != 0) {
            char *dd[2] = {(char *)(o + i), (char *)(a + i)};
            silu_loop_f4(dd, s, 8, extra);
            continue;
        }
        __m256 e = ptl_vm_exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), x));
        _mm256_storeu_ps(o + i, _mm256_div_ps(x, _mm256_add_ps(one, e)));
    }
    char *dd[2] = {(char *)(o + i), (char *)(a + i)};
    silu_loop_f4(dd, s, n - i, extra);
}

/* silu's derivative sg (1 + x e sg), sg = 1 / (1 + e), e = e^-x */
PTL_AVX2 static inline __m256
silu_dydx_ps(__m256 x)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 e = ptl_vm_exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), x));
    __m256 sg = _mm256_div_ps(one, _mm256_add_ps(one, e));
    return _mm256_mul_ps(sg, _mm256_fmadd_ps(x, _mm256_mul_ps(e, sg), one));
}

PTL_AVX2 static void
silu_grad_loop_f4_avx2(char **d, const int64_t *s, int64_t n, const void *extra)
{
    grad_loop_f4_avx2(d, s, n, extra, -80.0f, silu_dydx_ps, silu_grad_loop_f4);
}
#endif

static void
silu_fast_loop_f4(char **d, const int64_t *s, int64_t n, const void *extra)
{
    run_f4(AVX2_LOOP(silu), silu_loop_f4, 0, d, s, n, extra);
}

static void
silu_grad_fast_loop_f4(char **d, const int64_t *s, int64_t n, const void *extra)
{
    run_f4(AVX2_LOOP(silu_grad), silu_grad_loop_f4, 1, d, s, n, extra);
}

static const PtlLoop silu_loops[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_FLOAT16] = silu_loop_f2, [PTL_DTYPE_BFLOAT16] = silu_loop_bf,
    [PTL_DTYPE_FLOAT32] = silu_fast_loop_f4, [PTL_DTYPE_FLOAT64] = silu_loop_f8};
static const PtlLoop silu_grad_loops[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_FLOAT16] = silu_grad_loop_f2, [PTL_DTYPE_BFLOAT16] = silu_grad_loop_bf,
    [PTL_DTYPE_FLOAT32] = silu_grad_fast_loop_f4, [PTL_DTYPE_FLOAT64] = silu_grad_loop_f8};
#undef AVX2_LOOP
DEFINE_ACT(mish, MISH_F)
DEFINE_ACT_GRAD(mish_grad, MISH_G)
DEFINE_ACT(elu, ELU_F)
DEFINE_ACT_GRAD(elu_grad, ELU_G)
DEFINE_ACT_GRAD(elu_result_grad, ELU_RG)
DEFINE_ACT(leaky_relu, LEAKY_F)
DEFINE_ACT_GRAD(leaky_relu_grad, LEAKY_G)
DEFINE_ACT_FLOAT_LOOPS(hardtanh, HARDTANH_F)
DEFINE_ACT_GRAD(hardtanh_grad, HARDTANH_G)
DEFINE_ACT(softplus, SOFTPLUS_F)
DEFINE_ACT_GRAD(softplus_grad, SOFTPLUS_G)
DEFINE_ACT(hardswish, HARDSWISH_F)
DEFINE_ACT_GRAD(hardswish_grad, HARDSWISH_G)
DEFINE_ACT(hardsigmoid, HARDSIGMOID_F)
DEFINE_ACT_GRAD(hardsigmoid_grad, HARDSIGMOID_G)
DEFINE_ACT(log_sigmoid, LOGSIG_F)
DEFINE_ACT_GRAD(log_sigmoid_grad, LOGSIG_G)
DEFINE_ACT(softshrink, SOFTSHRINK_F)
DEFINE_ACT(hardshrink, HARDSHRINK_F)
DEFINE_ACT_GRAD(shrink_grad, SHRINK_G)
DEFINE_ACT_FLOAT_LOOPS(threshold, THRESHOLD_F)
DEFINE_ACT_GRAD(threshold_grad, THRESHOLD_G)

#define INT_AND_FLOAT_ENTRIES(NAME, INAME)                                                \
    [PTL_DTYPE_UINT8] = INAME##_loop_u1, [PTL_DTYPE_INT8] = INAME##_loop_i1,              \
    [PTL_DTYPE_INT16] = INAME##_loop_i2, [PTL_DTYPE_INT32] = INAME##_loop_i4,             \
    [PTL_DTYPE_INT64] = INAME##_loop_i8, [PTL_DTYPE_FLOAT16] = NAME##_loop_f2,            \
    [PTL_DTYPE_BFLOAT16] = NAME##_loop_bf, [PTL_DTYPE_FLOAT32] = NAME##_loop_f4,          \
    [PTL_DTYPE_FLOAT64] = NAME##_loop_f8

static const PtlLoop hardtanh_all_loops[PTL_DTYPE_COUNT] = {
    INT_AND_FLOAT_ENTRIES(hardtanh, hardtanh_int)};
static const PtlLoop threshold_all_loops[PTL_DTYPE_COUNT] = {
    INT_AND_FLOAT_ENTRIES(threshold, threshold_int)};

/* ---- kernels ---- */

static const int fwd_inputs[1] = {0};
static const int grad_inputs[2] = {0, 1};

/* Which stack slots hold an op's parameters, in the order its formula reads p[]. */
typedef struct ActKernel {
    PtlOpId id;
    const PtlLoop *loops;
    int ninputs;            /* 1: forward (self), 2: backward (grad_output, self) */
    int nparams;
    int param_slot[3];
    const char *kname;      /* the kernel PyTorch's dtype error names; NULL: "<op>_cpu" */
} ActKernel;

/* [*] -> [*] (forward) and [*], [*] -> [*] (backward) */
static const ActKernel act_table[] = {
    {PTL_OP__gelu, gelu_fast_loops, 1, 1, {1}, "GeluKernelImpl"},
    {PTL_OP_silu, silu_loops, 1, 0, {0}, NULL},
    {PTL_OP_silu_, silu_loops, 1, 0, {0}, NULL},
    {PTL_OP_silu_backward, silu_grad_loops, 2, 0, {0}, NULL},
    {PTL_OP_mish, mish_loops, 1, 0, {0}, NULL},
    {PTL_OP_mish_, mish_loops, 1, 0, {0}, NULL},
    {PTL_OP_mish_backward, mish_grad_loops, 2, 0, {0}, NULL},
    {PTL_OP_elu, elu_loops, 1, 3, {1, 2, 3}, NULL},
    {PTL_OP_elu_, elu_loops, 1, 3, {1, 2, 3}, NULL},
    {PTL_OP_leaky_relu, leaky_relu_loops, 1, 1, {1}, NULL},
    {PTL_OP_leaky_relu_, leaky_relu_loops, 1, 1, {1}, NULL},
    {PTL_OP_leaky_relu_backward, leaky_relu_grad_loops, 2, 1, {2}, NULL},
    {PTL_OP_hardtanh, hardtanh_all_loops, 1, 2, {1, 2}, NULL},
    {PTL_OP_hardtanh_, hardtanh_all_loops, 1, 2, {1, 2}, NULL},
    {PTL_OP_hardtanh_backward, hardtanh_grad_loops, 2, 2, {2, 3}, NULL},
    {PTL_OP_softplus, softplus_loops, 1, 2, {1, 2}, NULL},
    {PTL_OP_softplus_backward, softplus_grad_loops, 2, 2, {2, 3}, NULL},
    {PTL_OP_hardswish, hardswish_loops, 1, 0, {0}, NULL},
    {PTL_OP_hardswish_, hardswish_loops, 1, 0, {0}, NULL},
    {PTL_OP_hardswish_backward, hardswish_grad_loops, 2, 0, {0}, NULL},
    {PTL_OP_hardsigmoid, hardsigmoid_loops, 1, 0, {0}, NULL},
    {PTL_OP_hardsigmoid_, hardsigmoid_loops, 1, 0, {0}, NULL},
    {PTL_OP_hardsigmoid_backward, hardsigmoid_grad_loops, 2, 0, {0}, NULL},
    {PTL_OP_log_sigmoid, log_sigmoid_loops, 1, 0, {0}, NULL},
    {PTL_OP_log_sigmoid_backward, log_sigmoid_grad_loops, 2, 0, {0}, NULL},
    {PTL_OP_softshrink, softshrink_loops, 1, 1, {1}, "softshrink_check"},
    {PTL_OP_softshrink_backward, shrink_grad_loops, 2, 1, {2}, NULL},
    {PTL_OP_hardshrink, hardshrink_loops, 1, 1, {1}, NULL},
    {PTL_OP_hardshrink_backward, shrink_grad_loops, 2, 1, {2}, NULL},
    {PTL_OP_threshold, threshold_all_loops, 1, 2, {1, 2}, NULL},
    {PTL_OP_threshold_, threshold_all_loops, 1, 2, {1, 2}, NULL},
    {PTL_OP_threshold_backward, threshold_grad_loops, 2, 1, {2}, NULL},
};

/* The table-driven kernel of every op in act_table. */
static int
act_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    double p[4] = {0, 0, 0, 0};
    (void)ks;
    for (size_t k = 0; k < sizeof(act_table) / sizeof(act_table[0]); k++) {
        const ActKernel *a = &act_table[k];
        if ((int)a->id != op->id) {
            continue;
        }
        for (int j = 0; j < a->nparams; j++) {
            p[j] = ptl_iv_to_double(&s[a->param_slot[j]]);
        }
        return ptl_pointwise_named(op, s, a->ninputs, a->ninputs == 1 ? fwd_inputs : grad_inputs,
                                   ptl_iter_config(), a->loops, p, a->kname);
    }
    return ptl_error_set(PTL_ERR_RUNTIME, "activation kernel for an unknown op");
}

/* softshrink(Tensor self, Scalar lambd=0.5): lambd must fit the dtype and be >= 0 */
static int
shrink_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlDtype dt = s[0].u.t->dtype;
    double lambd = ptl_iv_to_double(&s[1]);
    double hi = dt == PTL_DTYPE_FLOAT64 ? DBL_MAX : dt == PTL_DTYPE_FLOAT16 ? 65504.0
              : dt == PTL_DTYPE_BFLOAT16 ? 3.3895313892515355e38 : FLT_MAX;
    if (ptl_dtype_is_floating(dt) && (lambd < 0 || lambd > hi)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "lambda must be in range [0, %g] for input dtype %s, but found %g",
                             hi, ptl_dtype_legacy_name(dt), lambd);
    }
    return act_cpu(op, ks, s);
}

/* hardtanh(Tensor self, Scalar min_val, Scalar max_val): integer tensors too, with
 * PyTorch's refusals for bool and for unsigned tensors with a negative limit */
static int
hardtanh_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlDtype dt = s[0].u.t->dtype;
    if (dt == PTL_DTYPE_BOOL) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Bool inputs not supported for hardtanh");
    }
    if (dt == PTL_DTYPE_UINT8 && (ptl_iv_to_double(&s[1]) < 0 || ptl_iv_to_double(&s[2]) < 0)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "cannot do hardtanh on an unsigned type with negative limits");
    }
    return act_cpu(op, ks, s);
}

/* gelu(Tensor self, *, str approximate='none') -> Tensor: checks the mode and calls the
 * hidden _gelu(self, int) that autograd records (node arguments keep no strings). */
static int
gelu_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    const char *mode = s[1].tag == PTL_IV_STRING ? s[1].u.s : "none";
    int tanh_approx = strcmp(mode, "tanh") == 0;
    (void)op;
    (void)ks;
    if (!tanh_approx && strcmp(mode, "none") != 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "approximate argument must be either none or tanh.");
    }
    PtlIValue a[2] = {s[0], ptl_iv_int(tanh_approx)};
    PtlTensorImpl *r = ptl_call_tensor(PTL_OP__gelu, a);
    if (r == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(r);
    return 0;
}

/* gelu_backward(Tensor grad_output, Tensor self, *, str approximate='none') -> Tensor */
static int
gelu_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    const char *mode = s[2].tag == PTL_IV_STRING ? s[2].u.s : "none";
    double p[1] = {strcmp(mode, "tanh") == 0};
    (void)ks;
    return ptl_pointwise(op, s, 2, grad_inputs, ptl_iter_config(), gelu_grad_fast_loops, p);
}

/* elu_backward(grad_output, alpha, scale, input_scale, bool is_result, self_or_result):
 * [*], [*] -> [*].  From self x the slope for x <= 0 is input_scale alpha scale
 * e^(x input_scale); from the result y = alpha scale (e^(x input_scale) - 1) of the in-place
 * op it is input_scale (y + alpha scale) for y <= 0, which needs alpha >= 0 (with a negative
 * alpha the sign of y no longer tells the side of x). */
static int
elu_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    double p[3] = {ptl_iv_to_double(&s[1]), ptl_iv_to_double(&s[2]), ptl_iv_to_double(&s[3])};
    int is_result = s[4].tag == PTL_IV_BOOL && s[4].u.b;
    static const int gs[2] = {0, 5};
    (void)ks;
    if (is_result && p[0] < 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "In-place elu backward calculation is triggered with a negative "
                             "slope which is not supported. This is caused by calling in-place "
                             "forward function with a negative slope, please call out-of-place "
                             "version instead.");
    }
    return ptl_pointwise(op, s, 2, gs, ptl_iter_config(),
                         is_result ? elu_result_grad_loops : elu_grad_loops, p);
}

/* leaky_relu_backward(grad_output, self_or_result, negative_slope, self_is_result): the sign
 * of the in-place op's result tells the side of x only for a slope >= 0 */
static int
leaky_relu_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    if (s[3].u.b && ptl_iv_to_double(&s[2]) < 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "In-place leakyReLu backward calculation is triggered with a "
                             "negative slope which is not supported. This is caused by calling "
                             "in-place forward function with a negative slope, please call "
                             "out-of-place version instead. File an issue at "
                             "https://github.com/pytorch/pytorch if you do require supporting "
                             "in-place leakRelu backward calculation with negative slope");
    }
    return act_cpu(op, ks, s);
}

/* celu(Tensor self, Scalar alpha=1.0): [*] -> [*], elu with scale 1 and input_scale
 * 1 / alpha (and celu_ in place) */
static int
celu_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    double alpha = ptl_iv_to_double(&s[1]);
    double p[3] = {alpha, 1.0, 1.0 / alpha};
    (void)ks;
    if (alpha == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "ZeroDivisionError: alpha cannot be 0 for CELU");
    }
    return ptl_pointwise_named(op, s, 1, fwd_inputs, ptl_iter_config(), elu_loops, p, "elu_cpu");
}

static const PtlKernelReg activation_cpu[] = {
    {PTL_OP__gelu, PTL_KEY_CPU, act_cpu},
    {PTL_OP_gelu, PTL_KEY_COMPOSITE_IMPLICIT, gelu_composite},
    {PTL_OP_gelu_backward, PTL_KEY_CPU, gelu_backward_cpu},
    {PTL_OP_silu, PTL_KEY_CPU, act_cpu},
    {PTL_OP_silu_, PTL_KEY_CPU, act_cpu},
    {PTL_OP_silu_backward, PTL_KEY_CPU, act_cpu},
    {PTL_OP_mish, PTL_KEY_CPU, act_cpu},
    {PTL_OP_mish_, PTL_KEY_CPU, act_cpu},
    {PTL_OP_mish_backward, PTL_KEY_CPU, act_cpu},
    {PTL_OP_elu, PTL_KEY_CPU, act_cpu},
    {PTL_OP_elu_, PTL_KEY_CPU, act_cpu},
    {PTL_OP_elu_backward, PTL_KEY_CPU, elu_backward_cpu},
    {PTL_OP_celu, PTL_KEY_CPU, celu_cpu},
    {PTL_OP_celu_, PTL_KEY_CPU, celu_cpu},
    {PTL_OP_leaky_relu, PTL_KEY_CPU, act_cpu},
    {PTL_OP_leaky_relu_, PTL_KEY_CPU, act_cpu},
    {PTL_OP_leaky_relu_backward, PTL_KEY_CPU, leaky_relu_backward_cpu},
    {PTL_OP_hardtanh, PTL_KEY_CPU, hardtanh_cpu},
    {PTL_OP_hardtanh_, PTL_KEY_CPU, hardtanh_cpu},
    {PTL_OP_hardtanh_backward, PTL_KEY_CPU, act_cpu},
    {PTL_OP_softplus, PTL_KEY_CPU, act_cpu},
    {PTL_OP_softplus_backward, PTL_KEY_CPU, act_cpu},
    {PTL_OP_hardswish, PTL_KEY_CPU, act_cpu},
    {PTL_OP_hardswish_, PTL_KEY_CPU, act_cpu},
    {PTL_OP_hardswish_backward, PTL_KEY_CPU, act_cpu},
    {PTL_OP_hardsigmoid, PTL_KEY_CPU, act_cpu},
    {PTL_OP_hardsigmoid_, PTL_KEY_CPU, act_cpu},
    {PTL_OP_hardsigmoid_backward, PTL_KEY_CPU, act_cpu},
    {PTL_OP_log_sigmoid, PTL_KEY_CPU, act_cpu},
    {PTL_OP_log_sigmoid_backward, PTL_KEY_CPU, act_cpu},
    {PTL_OP_softshrink, PTL_KEY_CPU, shrink_cpu},
    {PTL_OP_softshrink_backward, PTL_KEY_CPU, act_cpu},
    {PTL_OP_hardshrink, PTL_KEY_CPU, act_cpu},
    {PTL_OP_hardshrink_backward, PTL_KEY_CPU, act_cpu},
    {PTL_OP_threshold, PTL_KEY_CPU, act_cpu},
    {PTL_OP_threshold_, PTL_KEY_CPU, act_cpu},
    {PTL_OP_threshold_backward, PTL_KEY_CPU, act_cpu},
};
PTL_DEFINE_REGISTER(activation_cpu)
