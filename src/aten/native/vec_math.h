/* vec_math.h -- vectorized exp, expm1, erf, sigmoid, tanh, log, log1p, sinh, cosh, sin, cos
 * and the sine and cosine of 2 pi u shared by the unary, activation, softmax, recurrent-cell and
 * random kernels.  Mirrors the exp/erf of
 * ATen/cpu/vec/vec256/vec256_float.h and vec256_double.h (Sleef there; our own polynomials
 * here).
 *
 * Note [Vector exp]
 * exp: x = n ln2 + r with |r| <= ln2/2 (ln2 split in a short high part and a tail, so
 * n ln2_hi is exact), e^r = 1 + r + r^2 P(r), then scaled by 2^n = 2^n1 2^n2 (two halves,
 * each a normal number) so that subnormal results come out right.  float: P is the Cephes
 * expf minimax fit (degree 7 overall, about 1 ulp); double: P the Taylor terms up to r^13
 * (truncation below 1e-17, about 1 ulp).  Inputs above the overflow threshold give inf,
 * below the underflow threshold 0, nan stays nan.
 *
 * erf (float only; float64 keeps libm's erf): |x| < 1 by x P(x^2), P a degree-6 minimax
 * fit of erf(x)/x; 1 <= |x| < 3.93 by 1 - e^Q(|x| - 2.5), Q a degree-9 fit of log(erfc);
 * beyond, erf rounds to +-1 in float.  Max error about 3 ulp (relative 2e-7).
 *
 * Every formula exists as vector code, written once (Note [Vector twins]) and stamped for
 * AVX2+FMA (8 floats / 4 doubles) and AVX-512 (16 floats / 8 doubles), both computing the
 * same bits, chosen at run time by the callers through ptl_cpu_capability(); exp and erf
 * also as portable scalar code without branches or libm calls, which gcc auto-vectorizes in
 * plain loops.  log (on positive normal numbers) and sincos2pi have scalar twins with the
 * same bits in scalar_math.h, for the host and the CUDA device (Note [Scalar twins of
 * vector formulas]).  expm1, sigmoid, tanh, log, log1p, sinh, cosh, sin and cos (float only)
 * have only vector versions in the unary kernels; the portable loops use scalar_math.h and libm. */
#ifndef PTL_ATEN_NATIVE_VEC_MATH_H
#define PTL_ATEN_NATIVE_VEC_MATH_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../scalar_math.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define PTL_HAVE_AVX2_KERNELS 1
#define PTL_AVX2 __attribute__((target("avx2,fma")))
#endif

/* Note [Vector exp] per element type, named by the intrinsic suffix (ps: float, pd: double):
 * the overflow and underflow thresholds, log2(e), ln2 split in a high part and a tail, the
 * 1.5 * 2^mantissa-bits rounding constant, the exponent's bit width and bias, and P's
 * coefficients from the highest power down. */
#define PTL_EXPF_HI 88.72283935546875f
#define PTL_EXPF_LO -103.972084045410f
#define PTL_EXP_HI 709.782712893384
#define PTL_EXP_LO -745.1332191019412
#define PTL_VM_HI_ps PTL_EXPF_HI
#define PTL_VM_LO_ps PTL_EXPF_LO
#define PTL_VM_LOG2E_ps 1.44269504088896341f
#define PTL_VM_LN2_HI_ps 0.693145751953125f
#define PTL_VM_LN2_LO_ps 1.428606765330187e-06f
#define PTL_VM_MAGIC_ps 12582912.0f
#define PTL_VM_MANT_ps 23
#define PTL_VM_BIAS_ps 127
#define PTL_VM_HI_pd PTL_EXP_HI
#define PTL_VM_LO_pd PTL_EXP_LO
#define PTL_VM_LOG2E_pd 1.4426950408889634
#define PTL_VM_LN2_HI_pd 0.693147180369123816490
#define PTL_VM_LN2_LO_pd 1.90821492927058770002e-10
#define PTL_VM_MAGIC_pd 6755399441055744.0
#define PTL_VM_MANT_pd 52
#define PTL_VM_BIAS_pd 1023

static const float ptl_vm_exp_coef_ps[] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                           4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
static const double ptl_vm_exp_coef_pd[] = {
    1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0,
    1.0 / 362880.0,     1.0 / 40320.0,     1.0 / 5040.0,     1.0 / 720.0,
    1.0 / 120.0,        1.0 / 24.0,        1.0 / 6.0,        0.5};

/* erf(x) / x = sum c[k] x^2k on [0, 1], the highest power first */
static const float ptl_vm_erf_small_coef[] = {
    7.854212025248941e-05f, -0.0008010308788800602f, 0.005188342245658034f,
    -0.02685382078000742f,  0.11283585410021335f,    -0.3761262585733478f,
    1.1283791657386077f};

/* log(erfc(x)) = sum c[k] (x - 2.5)^k on [1, 3.93], the highest power first */
static const float ptl_vm_erfc_log_coef[] = {
    -4.402731779151736e-08f, 1.628240235085343e-06f,  -1.3074544181979064e-05f,
    7.734083283250648e-05f,  -0.00042055925311790254f, 0.002165222531641753f,
    -0.010858247364229467f,  -0.9438936628574949f,     -5.352680728187076f,
    -7.806815275812634f};
#define PTL_VM_COUNT(A) (sizeof(A) / sizeof((A)[0]))

/* ---- portable scalar versions ---- */

/* The scalar exp of Note [Vector exp] for element type T (suffix S) and its unsigned
 * integer twin U; rounding by adding and subtracting the magic constant keeps the loop free
 * of calls, so gcc vectorizes loops over it. */
#define PTL_VM_DEFINE_SCALAR_EXP(NAME, T, U, S)                                           \
    static inline T NAME(T x)                                                             \
    {                                                                                     \
        T xc = x > PTL_VM_HI_##S ? PTL_VM_HI_##S : x < PTL_VM_LO_##S ? PTL_VM_LO_##S : x;  \
        T n = (xc * PTL_VM_LOG2E_##S + PTL_VM_MAGIC_##S) - PTL_VM_MAGIC_##S;              \
        T r = xc - n * PTL_VM_LN2_HI_##S;                                                 \
        r = r - n * PTL_VM_LN2_LO_##S;                                                    \
        T p = ptl_vm_exp_coef_##S[0];                                                     \
        for (size_t i = 1; i < PTL_VM_COUNT(ptl_vm_exp_coef_##S); i++) {                                    \
            p = p * r + ptl_vm_exp_coef_##S[i];                                           \
        }                                                                                 \
        T y = (p * (r * r) + r) + 1;                                                      \
        int64_t ni = (int64_t)n, n1 = ni / 2, n2 = ni - n1;                               \
        U b1 = (U)(n1 + PTL_VM_BIAS_##S) << PTL_VM_MANT_##S;                              \
        U b2 = (U)(n2 + PTL_VM_BIAS_##S) << PTL_VM_MANT_##S;                              \
        T s1, s2;                                                                         \
        memcpy(&s1, &b1, sizeof s1);                                                      \
        memcpy(&s2, &b2, sizeof s2);                                                      \
        y = y * s1 * s2;                                                                  \
        y = x > PTL_VM_HI_##S ? (T)INFINITY : x < PTL_VM_LO_##S ? 0 : y;                  \
        return x != x ? x : y;                                                            \
    }

PTL_VM_DEFINE_SCALAR_EXP(ptl_vm_expf, float, uint32_t, ps)
PTL_VM_DEFINE_SCALAR_EXP(ptl_vm_exp, double, uint64_t, pd)

/* c[0] t^(n-1) + ... + c[n-1] by Horner's rule */
static inline float
ptl_vm_polyf(float t, const float *c, size_t n)
{
    float p = c[0];
    for (size_t i = 1; i < n; i++) {
        p = p * t + c[i];
    }
    return p;
}

static inline float
ptl_vm_erff(float x)
{
    float ax = fabsf(x);
    float p = ptl_vm_polyf(ax * ax, ptl_vm_erf_small_coef, PTL_VM_COUNT(ptl_vm_erf_small_coef));
    float q = ptl_vm_polyf((ax > 3.93f ? 3.93f : ax) - 2.5f, ptl_vm_erfc_log_coef,
                           PTL_VM_COUNT(ptl_vm_erfc_log_coef));
    float y = ax < 1.0f ? ax * p : ax < 3.93f ? 1.0f - ptl_vm_expf(q) : 1.0f;
    return x != x ? x : copysignf(y, x);
}
#ifdef PTL_HAVE_AVX2_KERNELS

/* ---- vector versions: AVX2 + FMA and AVX-512 ----
 *
 * Note [Vector twins]
 * A vector formula is written once and stamped for each vector kind S, named by its
 * intrinsic suffix: ps (8 floats) and pd (4 doubles) with AVX2 + FMA, ps512 (16 floats) and
 * pd512 (8 doubles) with AVX-512.  PTL_V(S, add) is _mm256_add_ps, _mm512_add_pd, ...;
 * PTL_VT(S) the vector type, PTL_VLANES(S) the lane count, PTL_VEXP(S) the vector exp and
 * PTL_SEXP(S) the scalar one (ps, pd), PTL_VK(S, NAME) the constant
 * NAME_ps or NAME_pd of S's element type.  Comparisons give a lane mask (a vector with AVX2,
 * a __mmask with AVX-512): PTL_VCMP makes one, PTL_VSEL(S, m, a, b) takes b where m is set
 * and a elsewhere, PTL_VBITS turns it into an int with one bit per lane.  Both widths run
 * the same IEEE operations in the same order (FMA in both), so a formula gives the same
 * bits at either width: callers choose the width by ptl_cpu_capability() alone, and
 * tests/aten/test_vec_math.py compares the two in subprocesses. */
#define PTL_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")))
#define PTL_VATTR(S) PTL_VATTR_##S
#define PTL_VATTR_ps PTL_AVX2
#define PTL_VATTR_pd PTL_AVX2
#define PTL_VATTR_ps512 PTL_AVX512
#define PTL_VATTR_pd512 PTL_AVX512
#define PTL_V(S, op) PTL_V_##S(op)
#define PTL_V_ps(op) _mm256_##op##_ps
#define PTL_V_pd(op) _mm256_##op##_pd
#define PTL_V_ps512(op) _mm512_##op##_ps
#define PTL_V_pd512(op) _mm512_##op##_pd
#define PTL_VT(S) PTL_VT_##S
#define PTL_VT_ps __m256
#define PTL_VT_pd __m256d
#define PTL_VT_ps512 __m512
#define PTL_VT_pd512 __m512d
#define PTL_VLANES(S) PTL_VLANES_##S
#define PTL_VLANES_ps 8
#define PTL_VLANES_pd 4
#define PTL_VLANES_ps512 16
#define PTL_VLANES_pd512 8
#define PTL_VK(S, NAME) PTL_VK_##S(NAME)
#define PTL_VK_ps(NAME) NAME##_ps
#define PTL_VK_pd(NAME) NAME##_pd
#define PTL_VK_ps512(NAME) NAME##_ps
#define PTL_VK_pd512(NAME) NAME##_pd
#define PTL_VE(S) PTL_VK(S, PTL_VE)
#define PTL_VE_ps float
#define PTL_VE_pd double
#define PTL_VEXP(S) ptl_vm_exp_##S
#define PTL_SEXP(S) PTL_SEXP_##S
#define PTL_SEXP_ps ptl_vm_expf
#define PTL_SEXP_pd ptl_vm_exp

/* lane masks */
#define PTL_VMT(S) PTL_VMT_##S
#define PTL_VMT_ps __m256
#define PTL_VMT_pd __m256d
#define PTL_VMT_ps512 __mmask16
#define PTL_VMT_pd512 __mmask8
#define PTL_VCMP(S, a, b, pred) PTL_VCMP_##S(a, b, pred)
#define PTL_VCMP_ps(a, b, pred) _mm256_cmp_ps(a, b, pred)
#define PTL_VCMP_pd(a, b, pred) _mm256_cmp_pd(a, b, pred)
#define PTL_VCMP_ps512(a, b, pred) _mm512_cmp_ps_mask(a, b, pred)
#define PTL_VCMP_pd512(a, b, pred) _mm512_cmp_pd_mask(a, b, pred)
#define PTL_VSEL(S, m, a, b) PTL_VSEL_##S(m, a, b)
#define PTL_VSEL_ps(m, a, b) _mm256_blendv_ps(a, b, m)
#define PTL_VSEL_pd(m, a, b) _mm256_blendv_pd(a, b, m)
#define PTL_VSEL_ps512(m, a, b) _mm512_mask_blend_ps(m, a, b)
#define PTL_VSEL_pd512(m, a, b) _mm512_mask_blend_pd(m, a, b)
#define PTL_VBITS(S, m) PTL_VBITS_##S(m)
#define PTL_VBITS_ps(m) _mm256_movemask_ps(m)
#define PTL_VBITS_pd(m) _mm256_movemask_pd(m)
#define PTL_VBITS_ps512(m) ((int)(m))
#define PTL_VBITS_pd512(m) ((int)(m))
#define PTL_VMOR(S, a, b) PTL_VMOR_##S(a, b)
#define PTL_VMOR_ps(a, b) _mm256_or_ps(a, b)
#define PTL_VMOR_pd(a, b) _mm256_or_pd(a, b)
#define PTL_VMOR_ps512(a, b) ((__mmask16)((a) | (b)))
#define PTL_VMOR_pd512(a, b) ((__mmask8)((a) | (b)))
#define PTL_VMAND(S, a, b) PTL_VMAND_##S(a, b)
#define PTL_VMAND_ps(a, b) _mm256_and_ps(a, b)
#define PTL_VMAND_pd(a, b) _mm256_and_pd(a, b)
#define PTL_VMAND_ps512(a, b) ((__mmask16)((a) & (b)))
#define PTL_VMAND_pd512(a, b) ((__mmask8)((a) & (b)))

/* rounding to an integral value: to nearest (even), and down */
#define PTL_VROUND(S, x) PTL_VROUND_##S(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define PTL_VFLOOR(S, x) PTL_VROUND_##S(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
#define PTL_VTRUNC(S, x) PTL_VROUND_##S(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC)
#define PTL_VROUND_ps(x, mode) _mm256_round_ps(x, mode)
#define PTL_VROUND_pd(x, mode) _mm256_round_pd(x, mode)
#define PTL_VROUND_ps512(x, mode) _mm512_roundscale_ps(x, mode)
#define PTL_VROUND_pd512(x, mode) _mm512_roundscale_pd(x, mode)

/* the bits as integer lanes of the element's width (epi32 / epi64), and back */
#define PTL_VI(S, op) PTL_VI_##S(op)
#define PTL_VI_ps(op) _mm256_##op##_epi32
#define PTL_VI_pd(op) _mm256_##op##_epi64
#define PTL_VI_ps512(op) _mm512_##op##_epi32
#define PTL_VI_pd512(op) _mm512_##op##_epi64
#define PTL_VIT(S) PTL_VIT_##S
#define PTL_VIT_ps __m256i
#define PTL_VIT_pd __m256i
#define PTL_VIT_ps512 __m512i
#define PTL_VIT_pd512 __m512i
#define PTL_VI_SET1(S) PTL_VI_SET1_##S
#define PTL_VI_SET1_ps _mm256_set1_epi32
#define PTL_VI_SET1_pd _mm256_set1_epi64x
#define PTL_VI_SET1_ps512 _mm512_set1_epi32
#define PTL_VI_SET1_pd512 _mm512_set1_epi64
#define PTL_VSI(S, op) PTL_VSI_##S(op)
#define PTL_VSI_ps(op) _mm256_##op##_si256
#define PTL_VSI_pd(op) _mm256_##op##_si256
#define PTL_VSI_ps512(op) _mm512_##op##_si512
#define PTL_VSI_pd512(op) _mm512_##op##_si512
#define PTL_VTOI(S, x) PTL_VTOI_##S(x)
#define PTL_VTOI_ps(x) _mm256_castps_si256(x)
#define PTL_VTOI_pd(x) _mm256_castpd_si256(x)
#define PTL_VTOI_ps512(x) _mm512_castps_si512(x)
#define PTL_VTOI_pd512(x) _mm512_castpd_si512(x)
#define PTL_VFROMI(S, x) PTL_VFROMI_##S(x)
#define PTL_VFROMI_ps(x) _mm256_castsi256_ps(x)
#define PTL_VFROMI_pd(x) _mm256_castsi256_pd(x)
#define PTL_VFROMI_ps512(x) _mm512_castsi512_ps(x)
#define PTL_VFROMI_pd512(x) _mm512_castsi512_pd(x)

/* L float32 values as a vector of kind S (L its lane count; the double kinds widen them,
 * exactly), back to float32 (rounding to nearest), and a double kind's lanes rounded to
 * float32 and widened again: a float32 operation done in double lanes is the double
 * operation followed by PTL_VROUNDF */
#define PTL_VLOADF(S, p) PTL_VLOADF_##S(p)
#define PTL_VLOADF_ps(p) _mm256_loadu_ps(p)
#define PTL_VLOADF_pd(p) _mm256_cvtps_pd(_mm_loadu_ps(p))
#define PTL_VLOADF_ps512(p) _mm512_loadu_ps(p)
#define PTL_VLOADF_pd512(p) _mm512_cvtps_pd(_mm256_loadu_ps(p))
#define PTL_VSTOREF(S, p, v) PTL_VSTOREF_##S(p, v)
#define PTL_VSTOREF_ps(p, v) _mm256_storeu_ps(p, v)
#define PTL_VSTOREF_pd(p, v) _mm_storeu_ps(p, _mm256_cvtpd_ps(v))
#define PTL_VSTOREF_ps512(p, v) _mm512_storeu_ps(p, v)
#define PTL_VSTOREF_pd512(p, v) _mm256_storeu_ps(p, _mm512_cvtpd_ps(v))
#define PTL_VROUNDF(S, v) PTL_VROUNDF_##S(v)
#define PTL_VROUNDF_pd(v) _mm256_cvtps_pd(_mm256_cvtpd_ps(v))
#define PTL_VROUNDF_pd512(v) _mm512_cvtps_pd(_mm512_cvtpd_ps(v))

/* The first n (< lanes) lanes: a mask for PTL_VLOAD_TAIL (lanes past n read as 0) and
 * PTL_VSTORE_TAIL (lanes past n not written). */
PTL_AVX2 static inline __m256i
ptl_vm_tail_mask(int64_t n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

PTL_AVX2 static inline __m256i
ptl_vm_tail_mask_pd(int64_t n)
{
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3));
}

#define PTL_VTAILT(S) PTL_VTAILT_##S
#define PTL_VTAILT_ps __m256i
#define PTL_VTAILT_pd __m256i
#define PTL_VTAILT_ps512 __mmask16
#define PTL_VTAILT_pd512 __mmask8
#define PTL_VTAIL(S, n) PTL_VTAIL_##S(n)
#define PTL_VTAIL_ps(n) ptl_vm_tail_mask(n)
#define PTL_VTAIL_pd(n) ptl_vm_tail_mask_pd(n)
#define PTL_VTAIL_ps512(n) ((__mmask16)((1u << (n)) - 1))
#define PTL_VTAIL_pd512(n) ((__mmask8)((1u << (n)) - 1))
#define PTL_VLOAD_TAIL(S, p, m) PTL_VLOAD_TAIL_##S(p, m)
#define PTL_VLOAD_TAIL_ps(p, m) _mm256_maskload_ps(p, m)
#define PTL_VLOAD_TAIL_pd(p, m) _mm256_maskload_pd(p, m)
#define PTL_VLOAD_TAIL_ps512(p, m) _mm512_maskz_loadu_ps(m, p)
#define PTL_VLOAD_TAIL_pd512(p, m) _mm512_maskz_loadu_pd(m, p)
#define PTL_VSTORE_TAIL(S, p, m, v) PTL_VSTORE_TAIL_##S(p, m, v)
#define PTL_VSTORE_TAIL_ps(p, m, v) _mm256_maskstore_ps(p, m, v)
#define PTL_VSTORE_TAIL_pd(p, m, v) _mm256_maskstore_pd(p, m, v)
#define PTL_VSTORE_TAIL_ps512(p, m, v) _mm512_mask_storeu_ps(p, m, v)
#define PTL_VSTORE_TAIL_pd512(p, m, v) _mm512_mask_storeu_pd(p, m, v)

/* v with the lanes past a tail mask's n set to 0 */
#define PTL_VTAIL_ZERO(S, m, v) PTL_VTAIL_ZERO_##S(m, v)
#define PTL_VTAIL_ZERO_ps(m, v) _mm256_and_ps(v, _mm256_castsi256_ps(m))
#define PTL_VTAIL_ZERO_pd(m, v) _mm256_and_pd(v, _mm256_castsi256_pd(m))
#define PTL_VTAIL_ZERO_ps512(m, v) _mm512_maskz_mov_ps(m, v)
#define PTL_VTAIL_ZERO_pd512(m, v) _mm512_maskz_mov_pd(m, v)

/* Stamps DEFINE(S) for the float kinds, or for every kind. */
#define PTL_VM_FOR_FLOAT_KINDS(DEFINE) DEFINE(ps) DEFINE(ps512)
#define PTL_VM_FOR_ALL_KINDS(DEFINE) DEFINE(ps) DEFINE(pd) DEFINE(ps512) DEFINE(pd512)

/* c[0] t^(n-1) + ... + c[n-1] by Horner's rule with FMA (the loop unrolls: n is constant) */
#define PTL_VM_DEFINE_POLY(S)                                                             \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        ptl_vm_poly_##S(PTL_VT(S) t, const PTL_VE(S) *c, size_t n)                        \
    {                                                                                     \
        PTL_VT(S) p = PTL_V(S, set1)(c[0]);                                               \
        for (size_t i = 1; i < n; i++) {                                                  \
            p = PTL_V(S, fmadd)(p, t, PTL_V(S, set1)(c[i]));                              \
        }                                                                                 \
        return p;                                                                         \
    }

/* 2^n for integral n in the normal exponent range: n + magic holds n in its low bits */
#define PTL_VM_DEFINE_POW2I(S)                                                            \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_pow2i_##S(PTL_VT(S) n)                    \
    {                                                                                     \
        const PTL_VT(S) magic = PTL_V(S, set1)(PTL_VK(S, PTL_VM_MAGIC));                  \
        PTL_VIT(S) bits = PTL_VI(S, sub)(PTL_VTOI(S, PTL_V(S, add)(n, magic)),            \
                                         PTL_VTOI(S, magic));                             \
        bits = PTL_VI(S, add)(bits, PTL_VI_SET1(S)(PTL_VK(S, PTL_VM_BIAS)));              \
        return PTL_VFROMI(S, PTL_VI(S, slli)(bits, PTL_VK(S, PTL_VM_MANT)));              \
    }

/* The vector exp of Note [Vector exp].  When every lane lies in [NORMAL_LO, NORMAL_HI]
 * (no NaN, n in [-124, 127] for float and [-1020, 1023] for double), y 2^n is a normal
 * number and 2^n is one: the one product y 2^n is exact, as are the two of the general path
 * (y 2^n1) 2^n2, so both give the same bits, and the clamps and the special-value blends
 * change nothing there.  Skipping them saves about a third of the instructions. */
#define PTL_VM_NORMAL_LO_ps -86.0f
#define PTL_VM_NORMAL_HI_ps 88.0f
#define PTL_VM_NORMAL_LO_pd -707.0
#define PTL_VM_NORMAL_HI_pd 709.0
#define PTL_VM_DEFINE_VECTOR_EXP(S)                                                       \
    /* e^x = y 2^n for x in [LO, HI]: returns y, n in *n_out */                           \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_exp_reduced_##S(PTL_VT(S) xc, PTL_VT(S) *n_out) \
    {                                                                                     \
        PTL_VT(S) n = PTL_VROUND(S, PTL_V(S, mul)(xc, PTL_V(S, set1)(PTL_VK(S, PTL_VM_LOG2E)))); \
        PTL_VT(S) r = PTL_V(S, fnmadd)(n, PTL_V(S, set1)(PTL_VK(S, PTL_VM_LN2_HI)), xc);  \
        r = PTL_V(S, fnmadd)(n, PTL_V(S, set1)(PTL_VK(S, PTL_VM_LN2_LO)), r);             \
        PTL_VT(S) p = ptl_vm_poly_##S(r, PTL_VK(S, ptl_vm_exp_coef),                      \
                                      PTL_VM_COUNT(PTL_VK(S, ptl_vm_exp_coef)));          \
        PTL_VT(S) y = PTL_V(S, fmadd)(p, PTL_V(S, mul)(r, r), r);                         \
        *n_out = n;                                                                       \
        return PTL_V(S, add)(y, PTL_V(S, set1)(1));                                       \
    }                                                                                     \
    /* e^x for x its caller knows to lie in [NORMAL_LO, NORMAL_HI]: the same bits as      \
     * ptl_vm_exp there, without the clamps and the lane check */                         \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_exp_normal_##S(PTL_VT(S) x)               \
    {                                                                                     \
        PTL_VT(S) n, y = ptl_vm_exp_reduced_##S(x, &n);                                   \
        return PTL_V(S, mul)(y, ptl_vm_pow2i_##S(n));                                     \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_exp_##S(PTL_VT(S) x)                      \
    {                                                                                     \
        const PTL_VT(S) hi = PTL_V(S, set1)(PTL_VK(S, PTL_VM_HI));                        \
        const PTL_VT(S) lo = PTL_V(S, set1)(PTL_VK(S, PTL_VM_LO));                        \
        const PTL_VMT(S) inside = PTL_VMAND(                                              \
            S, PTL_VCMP(S, x, PTL_V(S, set1)(PTL_VK(S, PTL_VM_NORMAL_LO)), _CMP_GE_OQ),   \
            PTL_VCMP(S, x, PTL_V(S, set1)(PTL_VK(S, PTL_VM_NORMAL_HI)), _CMP_LE_OQ));     \
        PTL_VT(S) xc = PTL_V(S, max)(PTL_V(S, min)(x, hi), lo);                           \
        PTL_VT(S) n, y = ptl_vm_exp_reduced_##S(xc, &n);                                  \
        if (PTL_VBITS(S, inside) == (1 << PTL_VLANES(S)) - 1) {                           \
            return PTL_V(S, mul)(y, ptl_vm_pow2i_##S(n));                                 \
        }                                                                                 \
        PTL_VT(S) n1 = PTL_VFLOOR(S, PTL_V(S, mul)(n, PTL_V(S, set1)(0.5)));              \
        PTL_VT(S) n2 = PTL_V(S, sub)(n, n1);                                              \
        y = PTL_V(S, mul)(PTL_V(S, mul)(y, ptl_vm_pow2i_##S(n1)), ptl_vm_pow2i_##S(n2));  \
        y = PTL_VSEL(S, PTL_VCMP(S, x, hi, _CMP_GT_OQ), y, PTL_V(S, set1)(INFINITY));     \
        y = PTL_VSEL(S, PTL_VCMP(S, x, lo, _CMP_LT_OQ), y, PTL_V(S, setzero)());          \
        return PTL_VSEL(S, PTL_VCMP(S, x, x, _CMP_UNORD_Q), y, x);                        \
    }

PTL_VM_FOR_ALL_KINDS(PTL_VM_DEFINE_POLY)
#define PTL_VM_POLY(S, t, coef) ptl_vm_poly_##S(t, coef, PTL_VM_COUNT(coef))
PTL_VM_FOR_ALL_KINDS(PTL_VM_DEFINE_POW2I)
PTL_VM_FOR_ALL_KINDS(PTL_VM_DEFINE_VECTOR_EXP)

/* Note [Vector float32 division]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * fmod, remainder and floor division of float32 a, b computed in double lanes (kinds pd and
 * pd512), with the bits of the scalar formulas of scalar_math.h (fmodf, ptl_remainder_f,
 * ptl_div_floor_f) on every lane that is not *slow*; the caller recomputes slow lanes with
 * the scalar formula.  Slow: the double quotient a / b has |a / b| >= 2^24 or is NaN (a or b
 * NaN, a infinite, b zero), or b is infinite.
 *
 * fmod: q = trunc(a / b) in double.  The double quotient is rounded, and monotonic rounding
 * can only carry it up to the next integer in magnitude (never below one): q is the true
 * truncated quotient or one more in magnitude.  r = a - q b is exact in double (one FMA: q
 * has at most 24 bits and the exact result is a multiple of the smaller of a's and b's
 * ulps below 2 |b|), and where q was one too many r has the sign opposite to a's and
 * r + |b| (toward a's sign) is exact too.  The result is fmodf's exactly, with a's sign put
 * on it (fmod of a multiple of b is a zero of a's sign).
 *
 * remainder and floor division follow the scalar formulas step by step on that exact
 * fmod, each float32 operation done in double and rounded to float32 (PTL_VROUNDF): for +,
 * -, *, / that gives float32's correctly rounded result, since 53 >= 2 * 24 + 2 (double
 * rounding is innocuous; Figueroa, "When is double rounding innocuous?", 1995).  The
 * products r a and m b test opposite signs without underflow (float32 magnitudes squared
 * stay far inside double's range). */
#define PTL_VM_DEFINE_FLOAT32_DIVISION(S)                                                 \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        ptl_vm_fmodf_##S(PTL_VT(S) a, PTL_VT(S) b, PTL_VMT(S) *slow)                      \
    {                                                                                     \
        const PTL_VT(S) sign = PTL_V(S, set1)(-0.0), zero = PTL_V(S, setzero)();          \
        PTL_VT(S) qd = PTL_V(S, div)(a, b);                                               \
        PTL_VT(S) q = PTL_VTRUNC(S, qd);                                                  \
        PTL_VT(S) r = PTL_V(S, fnmadd)(q, b, a);                                          \
        PTL_VT(S) back = PTL_V(S, or)(PTL_V(S, andnot)(sign, b), PTL_V(S, and)(sign, a)); \
        PTL_VMT(S) over = PTL_VCMP(S, PTL_V(S, mul)(r, a), zero, _CMP_LT_OQ);             \
        r = PTL_VSEL(S, over, r, PTL_V(S, add)(r, back));                                 \
        *slow = PTL_VMOR(                                                                 \
            S, PTL_VCMP(S, PTL_V(S, andnot)(sign, qd), PTL_V(S, set1)(16777216.0), _CMP_NLT_UQ), \
            PTL_VCMP(S, PTL_V(S, andnot)(sign, b), PTL_V(S, set1)(FLT_MAX), _CMP_GT_OQ)); \
        return PTL_V(S, or)(PTL_V(S, andnot)(sign, r), PTL_V(S, and)(sign, a));           \
    }                                                                                     \
    /* m + b where m (an fmod of a by b) and b have opposite signs */                     \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        ptl_vm_remainder_fix_##S(PTL_VT(S) m, PTL_VT(S) b, PTL_VMT(S) *fix)               \
    {                                                                                     \
        *fix = PTL_VCMP(S, PTL_V(S, mul)(m, b), PTL_V(S, setzero)(), _CMP_LT_OQ);         \
        return PTL_VSEL(S, *fix, m, PTL_V(S, add)(m, b));                                 \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        ptl_vm_remainderf_##S(PTL_VT(S) a, PTL_VT(S) b, PTL_VMT(S) *slow)                 \
    {                                                                                     \
        PTL_VMT(S) fix;                                                                   \
        return ptl_vm_remainder_fix_##S(ptl_vm_fmodf_##S(a, b, slow), b, &fix);           \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        ptl_vm_div_floorf_##S(PTL_VT(S) a, PTL_VT(S) b, PTL_VMT(S) *slow)                 \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0), zero = PTL_V(S, setzero)();            \
        PTL_VT(S) mod = ptl_vm_fmodf_##S(a, b, slow);                                     \
        PTL_VMT(S) fix;                                                                   \
        (void)ptl_vm_remainder_fix_##S(mod, b, &fix);                                     \
        PTL_VT(S) div = PTL_VROUNDF(S, PTL_V(S, sub)(a, mod));                            \
        div = PTL_VROUNDF(S, PTL_V(S, div)(div, b));                                      \
        div = PTL_VSEL(S, fix, div, PTL_VROUNDF(S, PTL_V(S, sub)(div, one)));             \
        PTL_VT(S) q = PTL_VFLOOR(S, div);                                                 \
        PTL_VMT(S) up = PTL_VCMP(S, PTL_V(S, sub)(div, q), PTL_V(S, set1)(0.5), _CMP_GT_OQ); \
        q = PTL_VSEL(S, up, q, PTL_V(S, add)(q, one));                                    \
        PTL_VT(S) signed_zero = PTL_V(S, and)(PTL_V(S, set1)(-0.0), PTL_V(S, xor)(a, b)); \
        return PTL_VSEL(S, PTL_VCMP(S, div, zero, _CMP_EQ_OQ), q, signed_zero);           \
    }
PTL_VM_DEFINE_FLOAT32_DIVISION(pd)
PTL_VM_DEFINE_FLOAT32_DIVISION(pd512)

/* Note [Vector float64 division]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * fmod, remainder and floor division of float64 a, b (kinds pd, pd512) with the bits of
 * fmod, ptl_remainder_d and ptl_div_floor_d on every lane that is not *slow*: |a / b| >=
 * 2^52 or NaN (a or b NaN, a infinite, b zero), or b infinite.  The scalar loop took 20 ms
 * for 1e6 values (libm's fmod; 0.2x PyTorch's time).  fmod: q = trunc(a / b) is the true
 * truncated quotient or one more in magnitude (the rounded quotient is monotonic and below
 * 2^52), and r = a - q b by one FMA is exact: the exact value is below |b| in magnitude and a
 * multiple of the smaller of a's and b's ulps; when a's is the smaller, |a| < |b|, so q is 0,
 * or 1 with |b| - |a| exact (Sterbenz).  Where q was one too many r has the sign opposite to
 * a's and r + |b| (toward a's sign) is the exact remainder.  Signs are compared through
 * products by +-1, which are exact and cannot underflow; remainder and floor division then
 * run the scalar formulas' double operations lane by lane. */
#define PTL_VM_DEFINE_FLOAT64_DIVISION(S)                                                 \
    /* +-1 with x's sign */                                                               \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_unit_sign_##S(PTL_VT(S) x)                \
    {                                                                                     \
        return PTL_V(S, or)(PTL_V(S, and)(PTL_V(S, set1)(-0.0), x), PTL_V(S, set1)(1.0)); \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        ptl_vm_fmod_##S(PTL_VT(S) a, PTL_VT(S) b, PTL_VMT(S) *slow)                       \
    {                                                                                     \
        const PTL_VT(S) sign = PTL_V(S, set1)(-0.0), zero = PTL_V(S, setzero)();          \
        PTL_VT(S) qd = PTL_V(S, div)(a, b);                                               \
        PTL_VT(S) r = PTL_V(S, fnmadd)(PTL_VTRUNC(S, qd), b, a);                          \
        PTL_VT(S) back = PTL_V(S, or)(PTL_V(S, andnot)(sign, b), PTL_V(S, and)(sign, a)); \
        PTL_VMT(S) over =                                                                 \
            PTL_VCMP(S, PTL_V(S, mul)(r, ptl_vm_unit_sign_##S(a)), zero, _CMP_LT_OQ);     \
        r = PTL_VSEL(S, over, r, PTL_V(S, add)(r, back));                                 \
        *slow = PTL_VMOR(                                                                 \
            S, PTL_VCMP(S, PTL_V(S, andnot)(sign, qd), PTL_V(S, set1)(0x1p52), _CMP_NLT_UQ), \
            PTL_VCMP(S, PTL_V(S, andnot)(sign, b), PTL_V(S, set1)(DBL_MAX), _CMP_GT_OQ)); \
        return PTL_V(S, or)(PTL_V(S, andnot)(sign, r), PTL_V(S, and)(sign, a));           \
    }                                                                                     \
    /* where the fmod m of a by b and b have opposite signs (m != 0) */                   \
    PTL_VATTR(S) static inline PTL_VMT(S) ptl_vm_opposite_##S(PTL_VT(S) m, PTL_VT(S) b)   \
    {                                                                                     \
        return PTL_VCMP(S, PTL_V(S, mul)(m, ptl_vm_unit_sign_##S(b)), PTL_V(S, setzero)(), \
                        _CMP_LT_OQ);                                                      \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        ptl_vm_remainder_##S(PTL_VT(S) a, PTL_VT(S) b, PTL_VMT(S) *slow)                  \
    {                                                                                     \
        PTL_VT(S) m = ptl_vm_fmod_##S(a, b, slow);                                        \
        return PTL_VSEL(S, ptl_vm_opposite_##S(m, b), m, PTL_V(S, add)(m, b));            \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        ptl_vm_div_floor_##S(PTL_VT(S) a, PTL_VT(S) b, PTL_VMT(S) *slow)                  \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0), zero = PTL_V(S, setzero)();            \
        PTL_VT(S) mod = ptl_vm_fmod_##S(a, b, slow);                                      \
        PTL_VT(S) div = PTL_V(S, div)(PTL_V(S, sub)(a, mod), b);                          \
        div = PTL_VSEL(S, ptl_vm_opposite_##S(mod, b), div, PTL_V(S, sub)(div, one));     \
        PTL_VT(S) q = PTL_VFLOOR(S, div);                                                 \
        PTL_VMT(S) up = PTL_VCMP(S, PTL_V(S, sub)(div, q), PTL_V(S, set1)(0.5), _CMP_GT_OQ); \
        q = PTL_VSEL(S, up, q, PTL_V(S, add)(q, one));                                    \
        PTL_VT(S) signed_zero = PTL_V(S, and)(PTL_V(S, set1)(-0.0), PTL_V(S, xor)(a, b)); \
        return PTL_VSEL(S, PTL_VCMP(S, div, zero, _CMP_EQ_OQ), q, signed_zero);           \
    }
PTL_VM_DEFINE_FLOAT64_DIVISION(pd)
PTL_VM_DEFINE_FLOAT64_DIVISION(pd512)

/* Note [Vector float32 pow]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~
 * x^y for float32 x, y in double lanes (kinds pd, pd512) as e^(y log x): x = m 2^e with m in
 * [sqrt(1/2), sqrt(2)), log m = 2 atanh(s) = 2 s (1 + s^2/3 + ... + s^14/15), s = (m - 1) /
 * (m + 1), |s| <= 0.172 (truncation below 1e-12 relative), and the double exp of Note
 * [Vector exp].  The error of y log x stays far below 2^-30 for every y log x in float32's
 * range, so the float32 result is the correctly rounded one but for values within about
 * 1e-11 relative of a rounding boundary (measured at most 0.5 ulp + 1e-6).  Slow lanes,
 * which the caller computes with powf: x <= 0, x infinite or NaN, y NaN or infinite. */
static const double ptl_vm_log_atanh_coef[] = {1.0 / 15, 1.0 / 13, 1.0 / 11, 1.0 / 9,
                                               1.0 / 7,  1.0 / 5,  1.0 / 3,  1.0};
/* x = 2^e m for positive normal doubles x (kinds pd, pd512): returns m in [1, 2), e (a
 * double) in *e */
#define PTL_VM_DEFINE_SPLIT_DOUBLE(S)                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_split_##S(PTL_VT(S) x, PTL_VT(S) *e)      \
    {                                                                                     \
        const PTL_VT(S) two52 = PTL_V(S, set1)(4503599627370496.0);                       \
        PTL_VIT(S) bits = PTL_VTOI(S, x);                                                 \
        /* the biased exponent as a double: its bits under 2^52's, less 2^52 */           \
        *e = PTL_V(S, sub)(                                                               \
            PTL_VFROMI(S, PTL_VSI(S, or)(PTL_VI(S, srli)(bits, 52), PTL_VTOI(S, two52))), \
            PTL_V(S, set1)(4503599627370496.0 + 1023));                                   \
        return PTL_VFROMI(S, PTL_VSI(S, or)(                                              \
            PTL_VSI(S, and)(bits, PTL_VI_SET1(S)(0xfffffffffffffLL)),                     \
            PTL_VI_SET1(S)(0x3ff0000000000000LL)));                                       \
    }
PTL_VM_DEFINE_SPLIT_DOUBLE(pd)
PTL_VM_DEFINE_SPLIT_DOUBLE(pd512)
#undef PTL_VM_DEFINE_SPLIT_DOUBLE

#define PTL_VM_DEFINE_FLOAT32_POW(S)                                                      \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        ptl_vm_powf_##S(PTL_VT(S) x, PTL_VT(S) y, PTL_VMT(S) *slow)                       \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0);                                        \
        PTL_VT(S) e, m = ptl_vm_split_##S(x, &e);                                         \
        PTL_VMT(S) big = PTL_VCMP(S, m, PTL_V(S, set1)(1.4142135623730951), _CMP_GT_OQ);  \
        m = PTL_VSEL(S, big, m, PTL_V(S, mul)(m, PTL_V(S, set1)(0.5)));                   \
        e = PTL_VSEL(S, big, e, PTL_V(S, add)(e, one));                                   \
        PTL_VT(S) s = PTL_V(S, div)(PTL_V(S, sub)(m, one), PTL_V(S, add)(m, one));        \
        PTL_VT(S) p = PTL_VM_POLY(S, PTL_V(S, mul)(s, s), ptl_vm_log_atanh_coef);         \
        PTL_VT(S) lx = PTL_V(S, fmadd)(e, PTL_V(S, set1)(0.6931471805599453),             \
                                       PTL_V(S, mul)(PTL_V(S, add)(s, s), p));            \
        *slow = PTL_VMOR(                                                                 \
            S, PTL_VCMP(S, x, PTL_V(S, setzero)(), _CMP_NGT_UQ),                          \
            PTL_VMOR(S, PTL_VCMP(S, x, PTL_V(S, set1)(FLT_MAX), _CMP_GT_OQ),              \
                     PTL_VCMP(S, PTL_V(S, andnot)(PTL_V(S, set1)(-0.0), y),               \
                              PTL_V(S, set1)(FLT_MAX), _CMP_NLE_UQ)));                    \
        return ptl_vm_exp_##S(PTL_V(S, mul)(y, lx));                                      \
    }
PTL_VM_DEFINE_FLOAT32_POW(pd)
PTL_VM_DEFINE_FLOAT32_POW(pd512)

/* The quarter turns of the sincos2pi formulas (ptl_sincos2pif and ptl_sincos2pi in
 * scalar_math.h): ptl_vm_quarters_##S splits u = q / 4 + t with q = round(4 u) (by the
 * 1.5 * 2^mantissa-bits trick, which leaves q's low bits in k's) and t in [-1/8, 1/8]
 * exact, returning t, q in *q and k's bits in *kbits; ptl_vm_quadrant_##S turns the sine
 * and cosine of 2 pi t into those of 2 pi u: swapped for odd q, the sign of sin flipped for
 * q mod 4 in {2, 3} and that of cos for q mod 4 in {1, 2} (the bit 2 of q, or of q + 1,
 * moved to the sign bit). */
#define PTL_VM_SINCOS2PI_MAGIC_ps PTL_SINCOS2PIF_MAGIC
#define PTL_VM_SINCOS2PI_MAGIC_pd PTL_SINCOS2PI_MAGIC
#define PTL_VM_SIGN_SHIFT_ps 30
#define PTL_VM_SIGN_SHIFT_pd 62
#define PTL_VM_DEFINE_QUARTERS(S)                                                         \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        ptl_vm_quarters_##S(PTL_VT(S) u, PTL_VT(S) *q, PTL_VIT(S) *kbits)                 \
    {                                                                                     \
        const PTL_VT(S) magic = PTL_V(S, set1)(PTL_VK(S, PTL_VM_SINCOS2PI_MAGIC));        \
        PTL_VT(S) k = PTL_V(S, add)(PTL_V(S, mul)(u, PTL_V(S, set1)(4)), magic);          \
        *q = PTL_V(S, sub)(k, magic);                                                     \
        *kbits = PTL_VTOI(S, k);                                                          \
        return PTL_V(S, fnmadd)(*q, PTL_V(S, set1)(0.25), u);                             \
    }                                                                                     \
    PTL_VATTR(S) static inline void                                                       \
        ptl_vm_quadrant_##S(PTL_VT(S) q, PTL_VIT(S) kbits, PTL_VT(S) sn, PTL_VT(S) cs,    \
                            PTL_VT(S) *s, PTL_VT(S) *c)                                   \
    {                                                                                     \
        const PTL_VIT(S) two = PTL_VI_SET1(S)(2);                                         \
        PTL_VT(S) qh = PTL_V(S, mul)(q, PTL_V(S, set1)(0.5));                             \
        PTL_VMT(S) swap = PTL_VCMP(S, PTL_VFLOOR(S, qh), qh, _CMP_NEQ_OQ);                \
        PTL_VIT(S) ssign = PTL_VI(S, slli)(PTL_VSI(S, and)(kbits, two),                   \
                                           PTL_VK(S, PTL_VM_SIGN_SHIFT));                 \
        PTL_VIT(S) csign = PTL_VI(S, slli)(                                               \
            PTL_VSI(S, and)(PTL_VI(S, add)(kbits, PTL_VI_SET1(S)(1)), two),               \
            PTL_VK(S, PTL_VM_SIGN_SHIFT));                                                \
        *s = PTL_V(S, xor)(PTL_VSEL(S, swap, sn, cs), PTL_VFROMI(S, ssign));              \
        *c = PTL_V(S, xor)(PTL_VSEL(S, swap, cs, sn), PTL_VFROMI(S, csign));              \
    }
PTL_VM_FOR_ALL_KINDS(PTL_VM_DEFINE_QUARTERS)
#undef PTL_VM_DEFINE_QUARTERS

/* The double formulas of vector kind S (pd or pd512), the twins of scalar_math.h's
 * ptl_log_normal (on positive normal numbers) and ptl_sincos2pi, with their bits (Note
 * [Scalar twins of vector formulas]; the method is described above ptl_log_normal). */
static const double ptl_vm_log_coef_pd[] = {PTL_LOG_COEF};
static const double ptl_vm_sin2pi_coef_pd[] = {PTL_SIN2PI_COEF};
static const double ptl_vm_cos2pi_coef_pd[] = {PTL_COS2PI_COEF};
#define PTL_VM_DEFINE_DOUBLE_FORMULAS(S)                                                  \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_log_normal_##S(PTL_VT(S) x)               \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0), half = PTL_V(S, set1)(0.5);            \
        PTL_VT(S) e, m = ptl_vm_split_##S(x, &e);                                         \
        PTL_VMT(S) big = PTL_VCMP(S, m, PTL_V(S, set1)(1.4142135623730951), _CMP_GT_OQ);  \
        m = PTL_VSEL(S, big, m, PTL_V(S, mul)(m, half));                                  \
        e = PTL_VSEL(S, big, e, PTL_V(S, add)(e, one));                                   \
        PTL_VT(S) f = PTL_V(S, sub)(m, one);                                              \
        PTL_VT(S) s = PTL_V(S, div)(f, PTL_V(S, add)(PTL_V(S, set1)(2.0), f));            \
        PTL_VT(S) z = PTL_V(S, mul)(s, s);                                                \
        PTL_VT(S) r = PTL_V(S, mul)(z, PTL_VM_POLY(S, z, ptl_vm_log_coef_pd));            \
        PTL_VT(S) hfsq = PTL_V(S, mul)(PTL_V(S, mul)(half, f), f);                        \
        PTL_VT(S) t = PTL_V(S, fmadd)(s, PTL_V(S, add)(hfsq, r),                          \
                                      PTL_V(S, mul)(e, PTL_V(S, set1)(PTL_LOG_LN2_LO)));  \
        PTL_VT(S) y = PTL_V(S, sub)(PTL_V(S, sub)(hfsq, t), f);                           \
        return PTL_V(S, fmsub)(e, PTL_V(S, set1)(PTL_LOG_LN2_HI), y);                     \
    }                                                                                     \
    /* *sn = sin(xh + xl), *cs = cos(xh + xl) for |xh| <= pi / 4 (a little over is fine),  \
     * |xl| about ulp(xh) / 2 or less: fdlibm's k_sin.c and k_cos.c kernels */          \
    PTL_VATTR(S) static inline void                                                       \
        ptl_vm_sincos_kernel_##S(PTL_VT(S) xh, PTL_VT(S) xl, PTL_VT(S) *sn, PTL_VT(S) *cs) \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0), half = PTL_V(S, set1)(0.5);            \
        PTL_VT(S) z = PTL_V(S, mul)(xh, xh), v = PTL_V(S, mul)(z, xh);                    \
        PTL_VT(S) a = PTL_V(S, fnmadd)(v, PTL_VM_POLY(S, z, ptl_vm_sin2pi_coef_pd),       \
                                       PTL_V(S, mul)(half, xl));                          \
        *sn = PTL_V(S, sub)(xh, PTL_V(S, fnmadd)(v, PTL_V(S, set1)(PTL_SIN2PI_S1),        \
                                                 PTL_V(S, fmsub)(z, a, xl)));             \
        PTL_VT(S) hz = PTL_V(S, mul)(half, z), w = PTL_V(S, sub)(one, hz);                \
        PTL_VT(S) r = PTL_V(S, mul)(z, PTL_VM_POLY(S, z, ptl_vm_cos2pi_coef_pd));         \
        *cs = PTL_V(S, add)(                                                              \
            w, PTL_V(S, add)(PTL_V(S, sub)(PTL_V(S, sub)(one, w), hz),                    \
                             PTL_V(S, fmsub)(z, r, PTL_V(S, mul)(xh, xl))));              \
    }                                                                                     \
    PTL_VATTR(S) static inline void                                                       \
        ptl_vm_sincos2pi_##S(PTL_VT(S) u, PTL_VT(S) *s, PTL_VT(S) *c)                     \
    {                                                                                     \
        const PTL_VT(S) hi = PTL_V(S, set1)(PTL_SINCOS2PI_TWOPI_HI);                      \
        PTL_VT(S) q, sn, cs;                                                              \
        PTL_VIT(S) kbits;                                                                 \
        PTL_VT(S) t = ptl_vm_quarters_##S(u, &q, &kbits);                                 \
        PTL_VT(S) xh = PTL_V(S, mul)(t, hi);                                              \
        PTL_VT(S) xl = PTL_V(S, add)(PTL_V(S, fmsub)(t, hi, xh),                          \
                                     PTL_V(S, mul)(t, PTL_V(S, set1)(PTL_SINCOS2PI_TWOPI_LO))); \
        ptl_vm_sincos_kernel_##S(xh, xl, &sn, &cs);                                       \
        ptl_vm_quadrant_##S(q, kbits, sn, cs, s, c);                                      \
    }
PTL_VM_DEFINE_DOUBLE_FORMULAS(pd)
PTL_VM_DEFINE_DOUBLE_FORMULAS(pd512)
#undef PTL_VM_DEFINE_DOUBLE_FORMULAS

/* Note [Vector float64 sin, cos, tanh, sigmoid]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * libm's scalar sin, cos, tanh and exp made these 3-4x slower than PyTorch's Sleef loops.
 *
 * sin, cos: q = round(x 2/pi) and x - q pi/2 as xh + xl, pi/2 split in C1 + C2 (33 bits
 * each, so q C1 and q C2 are exact for |q| < 2^20) and C3 (the next 53 bits; what is left
 * is 1e-37): x - q C1 is exact (Sterbenz), subtracting q C2 keeps its rounding error (two-sum)
 * and q C3 goes into the tail.  The error of xh + xl is about |q| 2^-120, so the lanes with
 * |xh| < |q| 2^-58 (x within 2^-58 relative of a multiple of pi/2, never met on random data)
 * are slow, as are |x| > 2^20 (|q| < 2^20 needs it), inf and nan: those lanes take libm's
 * sin / cos, which reduce huge arguments exactly (sin(1e22) = -0.8522...).  Then the
 * kernels of ptl_sincos2pi (fdlibm's k_sin.c, k_cos.c on xh + xl) and its quadrant rule;
 * |x| < 2^-27 gives sin x = x (keeps -0).  Measured 0.77 ulp at most (sin; cos 0.75) on
 * test_vec_math.py's 1e6 points.
 *
 * tanh and sigmoid use e^y = 2^n (uh + ul) with exp's reduction y = n ln2 + rh + rl,
 * e^r - 1 = r + r^2 P(r) (P the Taylor terms of Note [Vector exp]) and 1 + rh split by a
 * fast two-sum into uh + ul, so 2^n (uh + ul) +- 1 is formed as a pair without a rounding
 * error of 2^n's size (a two-sum: 2^n - 1 is not a double for n > 53).
 * tanh |x| = (e^2a - 1) / (e^2a + 1), a = min(|x|, 19.5) (above 19.1 tanh rounds to 1), the
 * quotient of the two pairs by one division and an FMA correction; near 0, n = 0 and the
 * numerator pair is rh + m with no error of 1's size, which keeps tanh x = x for tiny x; the
 * sign of x is put back.
 * sigmoid x = 1 / (1 + e^-x), -x clamped to [-40, 708] (1 from x > 37.5 on); x < -708,
 * where e^-x overflows, takes the vector exp of x (1 + e^x rounds to 1 there; 1 / (1 +
 * exp(-x)) would give 0 for the subnormal results below -709.78), inline: a call to libm's
 * exp in the loop, even one never taken, made gcc keep every constant of the formula on
 * the stack (8% of its time).  Measured at most 0.91 ulp for tanh (x near -0.176, where
 * 2|x| crosses exp's first reduction step) and 0.63 for sigmoid.
 * e^r's polynomial runs by Estrin's scheme and n comes from one FMA with the rounding
 * constant: sigmoid 1e6 took 1.37 -> 1.20 ms on one AVX-512 thread (it is bound by the
 * count of vector operations, about 45 an 8-lane vector, and by their chains at 4 lanes).
 * NaN stays NaN: tanh patches the lanes (min and max return their second operand on
 * NaN); sigmoid passes a NaN y as min's and max's second operand, and it propagates. */
#define PTL_VM_PIO2_C1 0x1.921fb54400000p+0
#define PTL_VM_PIO2_C2 0x1.0b4611a600000p-34
#define PTL_VM_PIO2_C3 0x1.3198a2e037073p-69
/* The helpers of the sine and cosine lanes of every kind: a two-sum, the patch of a
 * formula's slow lanes by a scalar function, and the last step of both kinds' sincos. */
#define PTL_VM_DEFINE_SINCOS_HELPERS(S)                                                   \
    /* s + e = a + b exactly (two-sum) */                                                 \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        ptl_vm_two_sum_##S(PTL_VT(S) a, PTL_VT(S) b, PTL_VT(S) *e)                        \
    {                                                                                     \
        PTL_VT(S) s = PTL_V(S, add)(a, b), bb = PTL_V(S, sub)(s, a);                      \
        *e = PTL_V(S, add)(PTL_V(S, sub)(a, PTL_V(S, sub)(s, bb)), PTL_V(S, sub)(b, bb)); \
        return s;                                                                         \
    }                                                                                     \
    /* y with its lanes in slow replaced by f(x) */                                       \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_patch_##S(PTL_VT(S) y, PTL_VT(S) x,       \
                                                          PTL_VMT(S) slow,                \
                                                          PTL_VE(S) (*f)(PTL_VE(S)))      \
    {                                                                                     \
        int bits = PTL_VBITS(S, slow);                                                    \
        if (bits == 0) {                                                                  \
            return y;                                                                     \
        }                                                                                 \
        PTL_VE(S) xs[PTL_VLANES(S)], ys[PTL_VLANES(S)];                                   \
        PTL_V(S, storeu)(xs, x);                                                          \
        PTL_V(S, storeu)(ys, y);                                                          \
        for (int i = 0; i < PTL_VLANES(S); i++) {                                         \
            if (bits & (1 << i)) {                                                        \
                ys[i] = f(xs[i]);                                                         \
            }                                                                             \
        }                                                                                 \
        return PTL_V(S, loadu)(ys);                                                       \
    }                                                                                     \
    /* sin x in *s, cos x in *c from sn, cs, the sine and cosine of x - q pi/2 = xh + .., \
     * k x 2/pi plus the rounding constant (q = round(x 2/pi) in its low bits); sin x = x \
     * for |x| < tiny.  Returns the slow lanes: |x| > 2^20, inf, NaN and |xh| < |q| cut. */ \
    PTL_VATTR(S) static inline PTL_VMT(S)                                                 \
        ptl_vm_sincos_finish_##S(PTL_VT(S) x, PTL_VT(S) q, PTL_VT(S) k, PTL_VT(S) xh,      \
                                 PTL_VT(S) sn, PTL_VT(S) cs, PTL_VE(S) tiny,              \
                                 PTL_VE(S) cut, PTL_VT(S) *s, PTL_VT(S) *c)               \
    {                                                                                     \
        const PTL_VT(S) sign = PTL_V(S, set1)(-0.0);                                      \
        ptl_vm_quadrant_##S(q, PTL_VTOI(S, k), sn, cs, s, c);                             \
        PTL_VT(S) ax = PTL_V(S, andnot)(sign, x);                                         \
        *s = PTL_VSEL(S, PTL_VCMP(S, ax, PTL_V(S, set1)(tiny), _CMP_LT_OQ), *s, x);       \
        PTL_VT(S) qcut = PTL_V(S, mul)(PTL_V(S, andnot)(sign, q), PTL_V(S, set1)(cut));   \
        return PTL_VMOR(S, PTL_VCMP(S, ax, PTL_V(S, set1)(0x1p20), _CMP_NLE_UQ),          \
                        PTL_VCMP(S, PTL_V(S, andnot)(sign, xh), qcut, _CMP_LT_OQ));       \
    }
PTL_VM_FOR_ALL_KINDS(PTL_VM_DEFINE_SINCOS_HELPERS)
#undef PTL_VM_DEFINE_SINCOS_HELPERS

#define PTL_VM_DEFINE_FLOAT64_TRIG(S)                                                     \
    /* sin x in *s, cos x in *c, slow lanes in the mask returned (Note [Vector float64     \
     * sin, cos, tanh, sigmoid]) */                                                       \
    PTL_VATTR(S) static inline PTL_VMT(S)                                                 \
        ptl_vm_sincos_fast_##S(PTL_VT(S) x, PTL_VT(S) *s, PTL_VT(S) *c)                   \
    {                                                                                     \
        const PTL_VT(S) magic = PTL_V(S, set1)(PTL_SINCOS2PI_MAGIC);                      \
        PTL_VT(S) k = PTL_V(S, fmadd)(x, PTL_V(S, set1)(0.63661977236758134308), magic);  \
        PTL_VT(S) q = PTL_V(S, sub)(k, magic), e, sn, cs;                                 \
        PTL_VT(S) t = PTL_V(S, fnmadd)(q, PTL_V(S, set1)(PTL_VM_PIO2_C1), x);             \
        PTL_VT(S) rh = ptl_vm_two_sum_##S(                                                \
            t, PTL_V(S, mul)(q, PTL_V(S, set1)(-PTL_VM_PIO2_C2)), &e);                    \
        PTL_VT(S) rl = PTL_V(S, fnmadd)(q, PTL_V(S, set1)(PTL_VM_PIO2_C3), e);            \
        PTL_VT(S) xh = PTL_V(S, add)(rh, rl);                                             \
        PTL_VT(S) xl = PTL_V(S, sub)(rl, PTL_V(S, sub)(xh, rh));                          \
        ptl_vm_sincos_kernel_##S(xh, xl, &sn, &cs);                                       \
        return ptl_vm_sincos_finish_##S(x, q, k, xh, sn, cs, 0x1p-27, 0x1p-58, s, c);     \
    }                                                                                     \
    /* ptl_vm_exp_coef_pd's polynomial in r by Estrin's scheme: pairs c[k] r + c[k + 1]  \
     * joined by r^2, r^4, r^8, a chain of 4 dependent steps instead of Horner's 11 */     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_exp_pair_poly_##S(PTL_VT(S) r)            \
    {                                                                                     \
        const double *c = ptl_vm_exp_coef_pd;                                             \
        PTL_VT(S) r2 = PTL_V(S, mul)(r, r), r4 = PTL_V(S, mul)(r2, r2);                   \
        /* qk = the terms of r^2k and r^(2k+1) (an array of them: gcc kept it in memory) */ \
        PTL_VT(S) q0 = PTL_V(S, fmadd)(PTL_V(S, set1)(c[10]), r, PTL_V(S, set1)(c[11]));  \
        PTL_VT(S) q1 = PTL_V(S, fmadd)(PTL_V(S, set1)(c[8]), r, PTL_V(S, set1)(c[9]));    \
        PTL_VT(S) q2 = PTL_V(S, fmadd)(PTL_V(S, set1)(c[6]), r, PTL_V(S, set1)(c[7]));    \
        PTL_VT(S) q3 = PTL_V(S, fmadd)(PTL_V(S, set1)(c[4]), r, PTL_V(S, set1)(c[5]));    \
        PTL_VT(S) q4 = PTL_V(S, fmadd)(PTL_V(S, set1)(c[2]), r, PTL_V(S, set1)(c[3]));    \
        PTL_VT(S) q5 = PTL_V(S, fmadd)(PTL_V(S, set1)(c[0]), r, PTL_V(S, set1)(c[1]));    \
        PTL_VT(S) lo = PTL_V(S, fmadd)(PTL_V(S, fmadd)(q3, r2, q2), r4,                   \
                                       PTL_V(S, fmadd)(q1, r2, q0));                      \
        PTL_VT(S) hi = PTL_V(S, fmadd)(q5, r2, q4);                                       \
        return PTL_V(S, fmadd)(hi, PTL_V(S, mul)(r4, r4), lo);                            \
    }                                                                                     \
    /* e^y = *scale (1 + rh + *m) for y in [-708, 708]: |rh| <= ln2 / 2, *m the rest of    \
     * e^r - 1 (the pair of Note [Vector float64 sin, cos, tanh, sigmoid]).  n comes from \
     * y log2(e) + 1.5 2^52 in one FMA (round to nearest in the add), whose low bits are  \
     * n: 2^n is those bits plus the bias, shifted into the exponent. */                  \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        ptl_vm_exp_pair_##S(PTL_VT(S) y, PTL_VT(S) *scale, PTL_VT(S) *m)                  \
    {                                                                                     \
        const PTL_VT(S) magic = PTL_V(S, set1)(PTL_VM_MAGIC_pd);                          \
        PTL_VT(S) k = PTL_V(S, fmadd)(y, PTL_V(S, set1)(PTL_VM_LOG2E_pd), magic);         \
        PTL_VT(S) n = PTL_V(S, sub)(k, magic);                                            \
        PTL_VT(S) rh = PTL_V(S, fnmadd)(n, PTL_V(S, set1)(PTL_VM_LN2_HI_pd), y);          \
        PTL_VT(S) rl = PTL_V(S, mul)(n, PTL_V(S, set1)(-PTL_VM_LN2_LO_pd));               \
        PTL_VT(S) r = PTL_V(S, add)(rh, rl);                                              \
        PTL_VT(S) p = ptl_vm_exp_pair_poly_##S(r);                                        \
        PTL_VIT(S) bits = PTL_VI(S, add)(PTL_VTOI(S, k), PTL_VI_SET1(S)(PTL_VM_BIAS_pd));  \
        *scale = PTL_VFROMI(S, PTL_VI(S, slli)(bits, PTL_VM_MANT_pd));                    \
        *m = PTL_V(S, fmadd)(p, PTL_V(S, mul)(r, r), rl);                                 \
        return rh;                                                                        \
    }                                                                                     \
    /* the pair h + *l = scale u + b, b = +-1, for the pair u = uh + ul: the larger       \
     * magnitude of scale uh and b first (max and min: both are positive but for the -1   \
     * of tanh, below every scale uh >= 1), then a fast two-sum, the same h and error as  \
     * the two-sum's in 5 operations, not 6; a NaN, min's and max's second operand, goes  \
     * through */                                                                         \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        ptl_vm_exp_pair_add_##S(PTL_VT(S) scale, PTL_VT(S) uh, PTL_VT(S) ul, double b,    \
                                PTL_VT(S) *l)                                             \
    {                                                                                     \
        PTL_VT(S) a = PTL_V(S, mul)(scale, uh), c = PTL_V(S, set1)(b);                    \
        PTL_VT(S) big = PTL_V(S, max)(c, a), small = PTL_V(S, min)(c, a);                 \
        PTL_VT(S) h = PTL_V(S, add)(big, small);                                          \
        PTL_VT(S) e = PTL_V(S, sub)(small, PTL_V(S, sub)(h, big));                        \
        *l = PTL_V(S, fmadd)(scale, ul, e);                                               \
        return h;                                                                         \
    }                                                                                     \
    /* the pair uh + *ul = 1 + rh + m, |*ul| <= ulp(uh) / 2 (|rh|, |m| < 1/2: two fast    \
     * two-sums) */                                                                       \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        ptl_vm_one_plus_##S(PTL_VT(S) rh, PTL_VT(S) m, PTL_VT(S) *ul)                     \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0);                                        \
        PTL_VT(S) uh = PTL_V(S, add)(one, rh);                                            \
        PTL_VT(S) l = PTL_V(S, add)(PTL_V(S, sub)(rh, PTL_V(S, sub)(uh, one)), m);        \
        PTL_VT(S) h = PTL_V(S, add)(uh, l);                                               \
        *ul = PTL_V(S, sub)(l, PTL_V(S, sub)(h, uh));                                     \
        return h;                                                                         \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_tanh_##S(PTL_VT(S) x)                     \
    {                                                                                     \
        const PTL_VT(S) sign = PTL_V(S, set1)(-0.0);                                      \
        PTL_VT(S) a = PTL_V(S, min)(PTL_V(S, andnot)(sign, x), PTL_V(S, set1)(19.5));     \
        PTL_VT(S) scale, m, ul, nl, dl;                                                   \
        PTL_VT(S) rh = ptl_vm_exp_pair_##S(PTL_V(S, add)(a, a), &scale, &m);              \
        PTL_VT(S) uh = ptl_vm_one_plus_##S(rh, m, &ul);                                   \
        PTL_VT(S) nh = ptl_vm_exp_pair_add_##S(scale, uh, ul, -1.0, &nl);                 \
        PTL_VT(S) dh = ptl_vm_exp_pair_add_##S(scale, uh, ul, 1.0, &dl);                  \
        PTL_VT(S) inv = PTL_V(S, div)(PTL_V(S, set1)(1.0), dh);                           \
        PTL_VT(S) t = PTL_V(S, mul)(nh, inv);                                             \
        PTL_VT(S) rem = PTL_V(S, fnmadd)(t, dl, PTL_V(S, add)(PTL_V(S, fnmadd)(t, dh, nh), nl)); \
        t = PTL_V(S, or)(PTL_V(S, fmadd)(rem, inv, t), PTL_V(S, and)(sign, x));           \
        return PTL_VSEL(S, PTL_VCMP(S, x, x, _CMP_UNORD_Q), t, x);                        \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_sigmoid_##S(PTL_VT(S) x)                  \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0);                                        \
        /* -x clamped; a NaN, the second operand of min and max, goes through them */     \
        PTL_VT(S) y = PTL_V(S, sub)(PTL_V(S, setzero)(), x);                              \
        y = PTL_V(S, max)(PTL_V(S, set1)(-40.0), PTL_V(S, min)(PTL_V(S, set1)(708.0), y)); \
        PTL_VT(S) scale, m, ul, dl;                                                       \
        PTL_VT(S) rh = ptl_vm_exp_pair_##S(y, &scale, &m);                                \
        PTL_VT(S) uh = ptl_vm_one_plus_##S(rh, m, &ul);                                   \
        PTL_VT(S) dh = ptl_vm_exp_pair_add_##S(scale, uh, ul, 1.0, &dl);                  \
        PTL_VT(S) inv = PTL_V(S, div)(one, dh);                                           \
        PTL_VT(S) rem = PTL_V(S, fnmadd)(inv, dl, PTL_V(S, fnmadd)(inv, dh, one));        \
        PTL_VT(S) t = PTL_V(S, fmadd)(rem, inv, inv);                                     \
        PTL_VMT(S) tiny = PTL_VCMP(S, x, PTL_V(S, set1)(-708.0), _CMP_LT_OQ);             \
        if (PTL_VBITS(S, tiny) != 0) {                                                    \
            t = PTL_VSEL(S, tiny, t, ptl_vm_exp_##S(x));                                  \
        }                                                                                 \
        return t;                                                                         \
    }
PTL_VM_DEFINE_FLOAT64_TRIG(pd)
PTL_VM_DEFINE_FLOAT64_TRIG(pd512)
#undef PTL_VM_DEFINE_FLOAT64_TRIG

/* Note [Vector float32 sin, cos]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * libm's sinf and cosf per element made float32 sin and cos 0.17x PyTorch's Sleef loops
 * (1e5 and 1e6 values, one thread; 1.9-2.1x in these lanes, docs/performance.md).  In float
 * lanes (8 with AVX2, 16 with AVX-512):
 *
 * q = round(x 2/pi) (one FMA with the rounding constant, whose low bits give the quadrant),
 * and x - q pi/2 as a float pair xh + xl, pi/2 = C1 + C2 + C3 in floats (what is left is
 * 1e-23).  t = x - q C1 by one FMA is exact: for |x| >= 1 both x and q C1 are multiples of
 * 2^-23 and their difference is below 2 (|q| < 2^20), for |x| < 1 q is 0 or +-1 and
 * Sterbenz's lemma applies.  t - q C2 keeps both its rounding errors (the product's by an
 * FMA, the difference's by a two-sum) and q C3 goes into the tail, so xh + xl is off by
 * about |q| 2^-72.  Slow lanes: |xh| < |q| 2^-42 (x within 2^-30 relative of a multiple of
 * pi/2; three floats below 2^20 have it), |x| > 2^20, inf and NaN; they take libm's float64
 * sin or cos rounded to float32 (libm reduces huge arguments exactly).
 *
 * sin(xh + xl) = xh + (xh z P(z) + xl), z = xh^2 (cos(xh) xl = xl to the last bit), and
 * cos(xh + xl) = w + (((1 - w) - z/2) + (z^2 Q(z) - zl/2 - xh xl)) with w = 1 - z/2 and
 * zl = xh^2 - z exact by an FMA (fdlibm's k_cos arrangement; without zl, z's rounding
 * costs 0.15 ulp), then the quadrant rule of ptl_vm_quadrant.  P, Q: degree-3 and degree-2
 * fits of (sin r - r) / r^3 and (cos r - 1 + r^2/2) / r^4 in r^2 on |r| <= 0.82 (with 2/pi
 * rounded to float, q can be one off round(x 2/pi) and |r| pass pi/4 by up to 0.03 near
 * 2^20), 2^-32 relative with float coefficients (tools/fit_sincos_f32.py).  |x| < 2^-12 gives sin x =
 * x (keeps -0).  Measured exhaustively over every float32 |x| <= 2^20 against float64
 * libm: 0.86 ulp at most for sin, 0.87 for cos (Sleef's u10, PyTorch's, is 1.0). */
#define PTL_VM_PIO2F_C1 0x1.921fb6p+0f
#define PTL_VM_PIO2F_C2 -0x1.777a5cp-25f
#define PTL_VM_PIO2F_C3 -0x1.ee59dap-50f
/* (sin r - r) / r^3 and (cos r - 1 + r^2 / 2) / r^4 in r^2, the highest power first */
static const float ptl_vm_sinf_coef[] = {2.803717280e-06f, -1.985064009e-04f,
                                         8.333374746e-03f, -1.666666716e-01f};
static const float ptl_vm_cosf_coef[] = {2.439365016e-05f, -1.388695906e-03f,
                                         4.166663811e-02f};

/* the slow lanes' sin and cos: float64 libm's, rounded */
static inline float
ptl_vm_sinf_slow(float x)
{
    return (float)sin(x);
}

static inline float
ptl_vm_cosf_slow(float x)
{
    return (float)cos(x);
}

#define PTL_VM_DEFINE_FLOAT32_TRIG(S)                                                     \
    /* sin x in *s, cos x in *c, slow lanes in the mask returned */                       \
    PTL_VATTR(S) static inline PTL_VMT(S)                                                 \
        ptl_vm_sincos_fast_##S(PTL_VT(S) x, PTL_VT(S) *s, PTL_VT(S) *c)                   \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0f), half = PTL_V(S, set1)(0.5f);          \
        const PTL_VT(S) magic = PTL_V(S, set1)(PTL_VM_MAGIC_ps);                          \
        const PTL_VT(S) mc2 = PTL_V(S, set1)(-PTL_VM_PIO2F_C2);                           \
        PTL_VT(S) k = PTL_V(S, fmadd)(x, PTL_V(S, set1)(0.636619772f), magic);            \
        PTL_VT(S) q = PTL_V(S, sub)(k, magic), e, sn, cs;                                 \
        PTL_VT(S) t = PTL_V(S, fnmadd)(q, PTL_V(S, set1)(PTL_VM_PIO2F_C1), x);            \
        /* t - q C2 = rh + e + pe exactly: the product's error pe by an FMA, e by a two-sum */ \
        PTL_VT(S) p = PTL_V(S, mul)(q, mc2), pe = PTL_V(S, fmsub)(q, mc2, p);             \
        PTL_VT(S) rh = ptl_vm_two_sum_##S(t, p, &e);                                      \
        PTL_VT(S) rl = PTL_V(S, fnmadd)(q, PTL_V(S, set1)(PTL_VM_PIO2F_C3),               \
                                        PTL_V(S, add)(e, pe));                            \
        PTL_VT(S) xh = PTL_V(S, add)(rh, rl);                                             \
        PTL_VT(S) xl = PTL_V(S, sub)(rl, PTL_V(S, sub)(xh, rh));                          \
        PTL_VT(S) z = PTL_V(S, mul)(xh, xh), zl = PTL_V(S, fmsub)(xh, xh, z);             \
        sn = PTL_V(S, fmadd)(PTL_V(S, mul)(xh, z), PTL_VM_POLY(S, z, ptl_vm_sinf_coef), xl); \
        sn = PTL_V(S, add)(xh, sn);                                                       \
        PTL_VT(S) hz = PTL_V(S, mul)(half, z), w = PTL_V(S, sub)(one, hz);                \
        PTL_VT(S) tail = PTL_V(S, fmsub)(PTL_V(S, mul)(z, z), PTL_VM_POLY(S, z, ptl_vm_cosf_coef), \
                                         PTL_V(S, fmadd)(half, zl, PTL_V(S, mul)(xh, xl))); \
        cs = PTL_V(S, add)(w, PTL_V(S, add)(PTL_V(S, sub)(PTL_V(S, sub)(one, w), hz), tail)); \
        return ptl_vm_sincos_finish_##S(x, q, k, xh, sn, cs, 0x1p-12f, 0x1p-42f, s, c);   \
    }
PTL_VM_FOR_FLOAT_KINDS(PTL_VM_DEFINE_FLOAT32_TRIG)
#undef PTL_VM_DEFINE_FLOAT32_TRIG

/* sin x and cos x of every kind: ptl_vm_sincos_fast, libm's (float64) on the slow lanes */
#define PTL_VM_SIN_SLOW_pd sin
#define PTL_VM_SIN_SLOW_ps ptl_vm_sinf_slow
#define PTL_VM_COS_SLOW_pd cos
#define PTL_VM_COS_SLOW_ps ptl_vm_cosf_slow
#define PTL_VM_DEFINE_SIN_COS(S)                                                          \
    /* cos x if cosine, else sin x */                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_sin_or_cos_##S(PTL_VT(S) x, int cosine)   \
    {                                                                                     \
        PTL_VT(S) s, c;                                                                   \
        PTL_VMT(S) slow = ptl_vm_sincos_fast_##S(x, &s, &c);                              \
        return ptl_vm_patch_##S(cosine ? c : s, x, slow,                                  \
                                cosine ? PTL_VK(S, PTL_VM_COS_SLOW) : PTL_VK(S, PTL_VM_SIN_SLOW)); \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_sin_##S(PTL_VT(S) x)                      \
    {                                                                                     \
        return ptl_vm_sin_or_cos_##S(x, 0);                                               \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_cos_##S(PTL_VT(S) x)                      \
    {                                                                                     \
        return ptl_vm_sin_or_cos_##S(x, 1);                                               \
    }
PTL_VM_FOR_ALL_KINDS(PTL_VM_DEFINE_SIN_COS)
#undef PTL_VM_DEFINE_SIN_COS

/* The float formulas of vector kind S (ps or ps512).
 *
 * erf: Note [Vector exp]'s erf; erfc(a) = e^Q(a - 2.5) for 1 <= a <= 3.93 (no cancellation,
 * unlike 1 - erf) is ptl_vm_erfc_mid, erf(t) = t P(t^2) for |t| < 1 uses ptl_vm_erf_poly.
 *
 * sigmoid = 1 / (1 + e^-x).  For x >= 20, e^-x < 2.1e-9 is below half an ulp of 1 (2^-24),
 * so 1 + e^-x rounds to 1 and the result is exactly 1: clamping -x at -20 gives the same bits,
 * and spares exp the subnormal results it makes for x > 87 (each one a microcode assist on
 * Intel cores, which made sigmoid 2.5x slower on inputs with a few per cent of such values).
 * max returns its second operand when one is NaN, so NaN still propagates.
 *
 * tanh: |x| < 0.625 by the Cephes tanhf odd polynomial, else sign(x) (1 - 2 / (e^2|x| + 1)).
 *
 * log: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) by the Cephes logf polynomial in
 * m - 1; subnormals are scaled up first, and x < 0, 0, inf and nan are patched in.
 *
 * Note [Vector expm1]
 * expm1(x) = e^x - 1 = 2^n (e^r - 1) + (2^n - 1) with exp's reduction x = n ln2 + r (x
 * clamped to [-87, 88], where 2^n is a normal number), e^r - 1 = r + s, s = r^2 P(r), P the
 * Taylor terms of (e^r - 1 - r) / r^2 up to r^6 (truncation below 1e-9 relative).  The
 * parts are added so that no rounding error grows by cancellation (x in [ln2/2, ln2] has n = 1
 * and r < 0, where 2 r + 1 nearly cancels): r is kept as its exact high part
 * rh = x - n ln2_hi and the small rl = -n ln2_lo, u = 2^n rh + (2^n - 1) is one FMA (exact for
 * n >= 0: rh is a multiple of x's ulp), and the result u + 2^n (s + rl) a second, so the
 * error stays within about one ulp.  Near 0, n = 0 and the result is rh + s = x + x^2 / 2 +
 * ..., exact for tiny and subnormal x; the sign of x is or'ed in (expm1 keeps it), which
 * makes expm1(-0) = -0.  Below -87 the clamped formula gives -1 (expm1 rounds to -1 in float
 * from -17.4 on).  A vector with a lane above 88 or NaN takes e^x - 1 there (inf beyond exp's
 * overflow threshold; NaN stays NaN), where -1 is below half an ulp of e^x.
 *
 * log1p: log(u) + (x - (u - 1)) / u with u = 1 + x rounded: the second term is what the
 * rounding of u lost, to first order, so the result keeps log's accuracy near x = 0; where
 * u = 1 (|x| below half an ulp of 1, and +-0) it is x itself, and x = -1, x = inf are
 * patched in (the correction is NaN there).
 *
 * sinh(|x|) = (E + E / (E + 1)) / 2 with E = expm1(|x|), which does not cancel near 0
 * (e^x - e^-x would), and cosh(|x|) = (e + 1 / e) / 2, e = e^|x|, the sign of x put back on
 * sinh.  Above 88, where e^|x| overflows before its half does, both are (w / 2) w with
 * w = e^(|x| / 2) (the 1 / e part is below the last bit there). */
static const float ptl_vm_tanh_coef[] = {-5.70498872745e-3f, 2.06390887954e-2f,
                                         -5.37397155531e-2f, 1.33314422036e-1f,
                                         -3.33332819422e-1f};
/* Note [Scalar twins of vector formulas] in scalar_math.h */
static const float ptl_vm_log_coef[] = {PTL_LOGF_COEF};
static const float ptl_vm_sin2pi_coef[] = {PTL_SIN2PIF_COEF};
static const float ptl_vm_cos2pi_coef[] = {PTL_COS2PIF_COEF};
/* (e^r - 1 - r) / r^2 = 1/2 + r/6 + ... + r^6/8!, the highest power first */
static const float ptl_vm_expm1_coef[] = {1.0f / 40320, 1.0f / 5040, 1.0f / 720, 1.0f / 120,
                                          1.0f / 24,    1.0f / 6,    0.5f};
/* atan(z) = z + z^3 P(z^2) on [-tan(pi/8), tan(pi/8)] (Cephes atanf) */
static const float ptl_vm_atan_coef[] = {8.05374449538e-2f, -1.38776856032e-1f,
                                         1.99777106478e-1f, -3.33329491539e-1f};
/* erfinv(y) = y P(w) with w = -log((1 - y)(1 + y)): P in w - 2.5 for w < 5, else in
 * sqrt(w) - 3 (Giles, "Approximating the erfinv function", 2010, single precision) */
static const float ptl_vm_erfinv_mid_coef[] = {
    2.81022636e-08f, 3.43273939e-07f, -3.5233877e-06f, -4.39150654e-06f, 0.00021858087f,
    -0.00125372503f, -0.00417768164f, 0.246640727f,    1.50140941f};
static const float ptl_vm_erfinv_tail_coef[] = {
    -0.000200214257f, 0.000100950558f, 0.00134934322f, -0.00367342844f, 0.00573950773f,
    -0.0076224613f,   0.00943887047f,  1.00167406f,    2.83297682f};
#define PTL_VM_DEFINE_FLOAT_FORMULAS(S)                                                   \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_erfc_mid_##S(PTL_VT(S) a)                 \
    {                                                                                     \
        PTL_VT(S) t = PTL_V(S, sub)(a, PTL_V(S, set1)(2.5f));                             \
        return ptl_vm_exp_##S(PTL_VM_POLY(S, t, ptl_vm_erfc_log_coef));                   \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_erf_poly_##S(PTL_VT(S) z)                 \
    {                                                                                     \
        return PTL_VM_POLY(S, z, ptl_vm_erf_small_coef);                                  \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_erf_##S(PTL_VT(S) x)                      \
    {                                                                                     \
        const PTL_VT(S) sign = PTL_V(S, set1)(-0.0f), one = PTL_V(S, set1)(1.0f);         \
        const PTL_VT(S) edge = PTL_V(S, set1)(3.93f);                                     \
        PTL_VT(S) ax = PTL_V(S, andnot)(sign, x);                                         \
        PTL_VT(S) small = PTL_V(S, mul)(ax, ptl_vm_erf_poly_##S(PTL_V(S, mul)(ax, ax)));  \
        PTL_VT(S) large = PTL_V(S, sub)(one, ptl_vm_erfc_mid_##S(PTL_V(S, min)(ax, edge))); \
        large = PTL_VSEL(S, PTL_VCMP(S, ax, edge, _CMP_GE_OQ), large, one);               \
        PTL_VT(S) y = PTL_VSEL(S, PTL_VCMP(S, ax, one, _CMP_LT_OQ), large, small);        \
        y = PTL_V(S, or)(y, PTL_V(S, and)(sign, x));                                      \
        return PTL_VSEL(S, PTL_VCMP(S, x, x, _CMP_UNORD_Q), y, x);                        \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_sigmoid_##S(PTL_VT(S) x)                  \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0f);                                       \
        PTL_VT(S) negx = PTL_V(S, sub)(PTL_V(S, setzero)(), x);                           \
        PTL_VT(S) e = ptl_vm_exp_##S(PTL_V(S, max)(PTL_V(S, set1)(-20.0f), negx));        \
        return PTL_V(S, div)(one, PTL_V(S, add)(one, e));                                 \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_tanh_##S(PTL_VT(S) x)                     \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0f), sign = PTL_V(S, set1)(-0.0f);         \
        PTL_VT(S) ax = PTL_V(S, andnot)(sign, x);                                         \
        PTL_VT(S) e = ptl_vm_exp_##S(PTL_V(S, add)(ax, ax));                              \
        PTL_VT(S) t = PTL_V(S, sub)(one, PTL_V(S, div)(PTL_V(S, set1)(2.0f),              \
                                                       PTL_V(S, add)(e, one)));           \
        t = PTL_V(S, or)(t, PTL_V(S, and)(sign, x));                                      \
        PTL_VT(S) z = PTL_V(S, mul)(x, x);                                                \
        PTL_VT(S) small = PTL_V(S, fmadd)(                                                \
            PTL_V(S, mul)(PTL_VM_POLY(S, z, ptl_vm_tanh_coef), z), x, x);                 \
        return PTL_VSEL(S, PTL_VCMP(S, ax, PTL_V(S, set1)(0.625f), _CMP_LT_OQ), t, small); \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_expm1_##S(PTL_VT(S) x)                    \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0f), hi = PTL_V(S, set1)(88.0f);           \
        PTL_VT(S) xc = PTL_V(S, max)(PTL_V(S, min)(x, hi), PTL_V(S, set1)(-87.0f));       \
        PTL_VT(S) n = PTL_VROUND(S, PTL_V(S, mul)(xc, PTL_V(S, set1)(PTL_VM_LOG2E_ps)));  \
        PTL_VT(S) rh = PTL_V(S, fnmadd)(n, PTL_V(S, set1)(PTL_VM_LN2_HI_ps), xc);         \
        PTL_VT(S) rl = PTL_V(S, mul)(n, PTL_V(S, set1)(-PTL_VM_LN2_LO_ps));               \
        PTL_VT(S) r = PTL_V(S, add)(rh, rl);                                              \
        PTL_VT(S) s = PTL_V(S, mul)(PTL_V(S, mul)(r, r), PTL_VM_POLY(S, r, ptl_vm_expm1_coef)); \
        PTL_VT(S) t = ptl_vm_pow2i_##S(n);                                                \
        PTL_VT(S) u = PTL_V(S, fmadd)(t, rh, PTL_V(S, sub)(t, one));                      \
        PTL_VT(S) y = PTL_V(S, fmadd)(t, PTL_V(S, add)(s, rl), u);                        \
        y = PTL_V(S, or)(y, PTL_V(S, and)(PTL_V(S, set1)(-0.0f), x));                     \
        PTL_VMT(S) big = PTL_VCMP(S, x, hi, _CMP_NLE_UQ);                                 \
        if (PTL_VBITS(S, big) != 0) {                                                     \
            y = PTL_VSEL(S, big, y, PTL_V(S, sub)(ptl_vm_exp_##S(x), one));               \
        }                                                                                 \
        return y;                                                                         \
    }                                                                                     \
    /* log(xs) - eadj ln2 for positive normal xs: ptl_logf_normal's bits when eadj = 0     \
     * (Note [Scalar twins of vector formulas]) */                                        \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_log_scaled_##S(PTL_VT(S) xs, PTL_VT(S) eadj) \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0f), zero = PTL_V(S, setzero)();           \
        PTL_VIT(S) bits = PTL_VTOI(S, xs);                                                \
        PTL_VIT(S) ei = PTL_VI(S, sub)(PTL_VI(S, srli)(bits, 23), PTL_VI_SET1(S)(127));   \
        PTL_VT(S) m = PTL_VFROMI(S, PTL_VSI(S, or)(                                       \
            PTL_VSI(S, and)(bits, PTL_VI_SET1(S)(0x7fffff)), PTL_VI_SET1(S)(0x3f800000))); \
        PTL_VT(S) e = PTL_V(S, sub)(PTL_V(S, cvtepi32)(ei), eadj);                        \
        PTL_VMT(S) big = PTL_VCMP(S, m, PTL_V(S, set1)(1.41421356237f), _CMP_GT_OQ);      \
        m = PTL_VSEL(S, big, m, PTL_V(S, mul)(m, PTL_V(S, set1)(0.5f)));                  \
        e = PTL_V(S, add)(e, PTL_VSEL(S, big, zero, one));                                \
        PTL_VT(S) f = PTL_V(S, sub)(m, one);                                              \
        PTL_VT(S) z = PTL_V(S, mul)(f, f);                                                \
        PTL_VT(S) y = PTL_V(S, mul)(PTL_V(S, mul)(PTL_VM_POLY(S, f, ptl_vm_log_coef), f), z); \
        y = PTL_V(S, fmadd)(e, PTL_V(S, set1)(PTL_LOGF_LN2_LO), y);                       \
        y = PTL_V(S, fnmadd)(PTL_V(S, set1)(0.5f), z, y);                                 \
        y = PTL_V(S, add)(f, y);                                                          \
        return PTL_V(S, fmadd)(e, PTL_V(S, set1)(PTL_LOGF_LN2_HI), y);                    \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_log_##S(PTL_VT(S) x)                      \
    {                                                                                     \
        const PTL_VT(S) zero = PTL_V(S, setzero)();                                       \
        /* subnormals: scale by 2^23 and take 23 off the exponent */                      \
        PTL_VMT(S) sub = PTL_VCMP(S, x, PTL_V(S, set1)(FLT_MIN), _CMP_LT_OQ);             \
        PTL_VT(S) xs = PTL_VSEL(S, sub, x, PTL_V(S, mul)(x, PTL_V(S, set1)(8388608.0f))); \
        PTL_VT(S) y = ptl_vm_log_scaled_##S(xs, PTL_VSEL(S, sub, zero, PTL_V(S, set1)(23.0f))); \
        /* specials: x < 0 or nan -> nan, 0 -> -inf, inf -> inf */                        \
        y = PTL_VSEL(S, PTL_VCMP(S, x, zero, _CMP_EQ_OQ), y, PTL_V(S, set1)(-INFINITY));  \
        y = PTL_VSEL(S, PTL_VCMP(S, x, PTL_V(S, set1)(INFINITY), _CMP_EQ_OQ), y, x);      \
        return PTL_VSEL(S, PTL_VCMP(S, x, zero, _CMP_NGE_UQ), y, PTL_V(S, set1)(NAN));    \
    }                                                                                     \
    /* *s = sin(2 pi u), *c = cos(2 pi u) for |u| < 2^20: ptl_sincos2pif's bits (Note      \
     * [Scalar twins of vector formulas]) */                                              \
    PTL_VATTR(S) static inline void                                                       \
        ptl_vm_sincos2pi_##S(PTL_VT(S) u, PTL_VT(S) *s, PTL_VT(S) *c)                     \
    {                                                                                     \
        PTL_VT(S) q;                                                                      \
        PTL_VIT(S) kbits;                                                                 \
        PTL_VT(S) t = ptl_vm_quarters_##S(u, &q, &kbits);                                 \
        PTL_VT(S) t2 = PTL_V(S, mul)(t, t);                                               \
        PTL_VT(S) sn = PTL_V(S, fmadd)(t, PTL_V(S, set1)(PTL_SIN2PIF_S0),                 \
                                       PTL_V(S, mul)(t, PTL_VM_POLY(S, t2, ptl_vm_sin2pi_coef))); \
        PTL_VT(S) cs = PTL_V(S, fmadd)(t2, PTL_VM_POLY(S, t2, ptl_vm_cos2pi_coef),        \
                                       PTL_V(S, set1)(1.0f));                             \
        ptl_vm_quadrant_##S(q, kbits, sn, cs, s, c);                                      \
    }                                                                                     \
    /* (w / 2) w, w = e^(|x| / 2), on the lanes of big (|x| > 88), y elsewhere */          \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        ptl_vm_half_exp_big_##S(PTL_VT(S) ax, PTL_VMT(S) big, PTL_VT(S) y)                \
    {                                                                                     \
        if (PTL_VBITS(S, big) == 0) {                                                     \
            return y;                                                                     \
        }                                                                                 \
        const PTL_VT(S) half = PTL_V(S, set1)(0.5f);                                      \
        PTL_VT(S) w = ptl_vm_exp_##S(PTL_V(S, mul)(ax, half));                            \
        return PTL_VSEL(S, big, y, PTL_V(S, mul)(PTL_V(S, mul)(w, half), w));             \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_sinh_##S(PTL_VT(S) x)                     \
    {                                                                                     \
        const PTL_VT(S) sign = PTL_V(S, set1)(-0.0f), one = PTL_V(S, set1)(1.0f);         \
        const PTL_VT(S) hi = PTL_V(S, set1)(88.0f);                                       \
        PTL_VT(S) ax = PTL_V(S, andnot)(sign, x);                                         \
        PTL_VT(S) e = ptl_vm_expm1_##S(PTL_V(S, min)(hi, ax));                            \
        PTL_VT(S) y = PTL_V(S, mul)(PTL_V(S, set1)(0.5f),                                 \
                                    PTL_V(S, add)(e, PTL_V(S, div)(e, PTL_V(S, add)(e, one)))); \
        y = ptl_vm_half_exp_big_##S(ax, PTL_VCMP(S, ax, hi, _CMP_GT_OQ), y);              \
        return PTL_V(S, or)(y, PTL_V(S, and)(sign, x));                                   \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_cosh_##S(PTL_VT(S) x)                     \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0f), hi = PTL_V(S, set1)(88.0f);           \
        PTL_VT(S) ax = PTL_V(S, andnot)(PTL_V(S, set1)(-0.0f), x);                        \
        PTL_VT(S) e = ptl_vm_exp_##S(PTL_V(S, min)(hi, ax));                              \
        PTL_VT(S) y = PTL_V(S, mul)(PTL_V(S, set1)(0.5f),                                 \
                                    PTL_V(S, add)(e, PTL_V(S, div)(one, e)));             \
        return ptl_vm_half_exp_big_##S(ax, PTL_VCMP(S, ax, hi, _CMP_GT_OQ), y);           \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_log1p_##S(PTL_VT(S) x)                    \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0f);                                       \
        PTL_VT(S) u = PTL_V(S, add)(one, x);                                              \
        PTL_VT(S) c = PTL_V(S, div)(PTL_V(S, sub)(x, PTL_V(S, sub)(u, one)), u);          \
        PTL_VT(S) y = PTL_V(S, add)(ptl_vm_log_##S(u), c);                                \
        y = PTL_VSEL(S, PTL_VCMP(S, u, one, _CMP_EQ_OQ), y, x);                           \
        y = PTL_VSEL(S, PTL_VCMP(S, x, PTL_V(S, set1)(INFINITY), _CMP_EQ_OQ), y, x);      \
        return PTL_VSEL(S, PTL_VCMP(S, u, PTL_V(S, setzero)(), _CMP_EQ_OQ), y,            \
                        PTL_V(S, set1)(-INFINITY));                                       \
    }

PTL_VM_FOR_FLOAT_KINDS(PTL_VM_DEFINE_FLOAT_FORMULAS)

/* Note [Vector atan2 and erfinv]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * atan2(y, x), float32: with mn, mx the smaller and larger of |x|, |y|, atan(mn / mx) in
 * [0, pi/4] is atan(z), z = mn / mx, for mn <= tan(pi/8) mx, else pi/4 + atan(z) with
 * z = (mn - mx) / (mn + mx); |z| <= tan(pi/8) either way, where Cephes' atanf polynomial is
 * good to 2e-7.  Then pi/2 - r where |y| > |x|, pi - r where x < 0, and y's sign.  None of
 * these steps cancels (pi/2 - r >= pi/4, pi - r >= 3pi/4), so the result stays within a few
 * ulp.  Slow lanes, which the caller computes with atan2f: x or y NaN or infinite, and
 * x = y = 0 (the signed zeros' quadrants).
 *
 * erfinv(y), float32: Giles' single-precision approximation, y P(w), w = -log((1 - |y|)
 * (1 + |y|)) with the vector log (1 - |y| is exact for |y| >= 1/2, so w keeps its relative
 * accuracy up to |y| = 1 - 2^-24); |y| > 1 and NaN give NaN, |y| = 1 an infinity of y's
 * sign. */
#define PTL_VM_DEFINE_ATAN2_ERFINV(S)                                                     \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        ptl_vm_atan2_##S(PTL_VT(S) y, PTL_VT(S) x, PTL_VMT(S) *slow)                      \
    {                                                                                     \
        const PTL_VT(S) sign = PTL_V(S, set1)(-0.0f), zero = PTL_V(S, setzero)();         \
        const PTL_VT(S) quarter = PTL_V(S, set1)(0.785398163397448f);                     \
        PTL_VT(S) ax = PTL_V(S, andnot)(sign, x), ay = PTL_V(S, andnot)(sign, y);         \
        PTL_VT(S) mx = PTL_V(S, max)(ax, ay), mn = PTL_V(S, min)(ax, ay);                 \
        PTL_VMT(S) big = PTL_VCMP(S, mn, PTL_V(S, mul)(mx, PTL_V(S, set1)(0.414213562f)), \
                                  _CMP_GT_OQ);                                            \
        PTL_VT(S) num = PTL_VSEL(S, big, mn, PTL_V(S, sub)(mn, mx));                      \
        PTL_VT(S) den = PTL_VSEL(S, big, mx, PTL_V(S, add)(mn, mx));                      \
        PTL_VT(S) z = PTL_V(S, div)(num, den), z2 = PTL_V(S, mul)(z, z);                  \
        PTL_VT(S) r = PTL_V(S, fmadd)(PTL_V(S, mul)(PTL_VM_POLY(S, z2, ptl_vm_atan_coef), z2), \
                                      z, z);                                              \
        r = PTL_V(S, add)(r, PTL_VSEL(S, big, zero, quarter));                            \
        r = PTL_VSEL(S, PTL_VCMP(S, ay, ax, _CMP_GT_OQ), r,                               \
                     PTL_V(S, sub)(PTL_V(S, set1)(1.57079632679490f), r));                \
        r = PTL_VSEL(S, PTL_VCMP(S, x, zero, _CMP_LT_OQ), r,                              \
                     PTL_V(S, sub)(PTL_V(S, set1)(3.14159265358979f), r));                \
        *slow = PTL_VMOR(S, PTL_VCMP(S, mx, PTL_V(S, set1)(FLT_MAX), _CMP_NLE_UQ),        \
                         PTL_VMOR(S, PTL_VCMP(S, mx, zero, _CMP_EQ_OQ),                   \
                                  PTL_VCMP(S, x, y, _CMP_UNORD_Q)));                      \
        return PTL_V(S, or)(r, PTL_V(S, and)(sign, y));                                   \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_erfinv_##S(PTL_VT(S) y)                   \
    {                                                                                     \
        const PTL_VT(S) sign = PTL_V(S, set1)(-0.0f), one = PTL_V(S, set1)(1.0f);         \
        PTL_VT(S) a = PTL_V(S, andnot)(sign, y);                                          \
        PTL_VT(S) w = PTL_V(S, mul)(PTL_V(S, sub)(one, a), PTL_V(S, add)(one, a));        \
        w = PTL_V(S, sub)(PTL_V(S, setzero)(), ptl_vm_log_##S(w));                        \
        PTL_VT(S) mid = PTL_VM_POLY(S, PTL_V(S, sub)(w, PTL_V(S, set1)(2.5f)),            \
                                    ptl_vm_erfinv_mid_coef);                              \
        PTL_VT(S) tail = PTL_VM_POLY(S, PTL_V(S, sub)(PTL_V(S, sqrt)(w), PTL_V(S, set1)(3.0f)), \
                                     ptl_vm_erfinv_tail_coef);                            \
        PTL_VT(S) p = PTL_VSEL(S, PTL_VCMP(S, w, PTL_V(S, set1)(5.0f), _CMP_LT_OQ), tail, mid); \
        PTL_VT(S) r = PTL_V(S, mul)(p, y);                                                \
        PTL_VT(S) inf = PTL_V(S, or)(PTL_V(S, set1)(INFINITY), PTL_V(S, and)(sign, y));   \
        r = PTL_VSEL(S, PTL_VCMP(S, a, one, _CMP_EQ_OQ), r, inf);                         \
        return PTL_VSEL(S, PTL_VCMP(S, a, one, _CMP_NLE_UQ), r, PTL_V(S, set1)(NAN));     \
    }

PTL_VM_FOR_FLOAT_KINDS(PTL_VM_DEFINE_ATAN2_ERFINV)

/* o[i] = F(a[i]) for i < n: whole vectors, two a step (their dependency chains overlap),
 * then the tail through a masked load and store (so every element goes through the same
 * vector formula, whatever n). */
#define PTL_VM_DEFINE_MAP(F, S)                                                           \
    PTL_VATTR(S) static inline void                                                       \
        ptl_vm_map_##F##_##S(PTL_VE(S) *o, const PTL_VE(S) *a, int64_t n)                 \
    {                                                                                     \
        const int64_t L = PTL_VLANES(S);                                                  \
        int64_t i = 0;                                                                    \
        for (; i + 2 * L <= n; i += 2 * L) {                                              \
            PTL_VT(S) y0 = ptl_vm_##F##_##S(PTL_V(S, loadu)(a + i));                      \
            PTL_VT(S) y1 = ptl_vm_##F##_##S(PTL_V(S, loadu)(a + i + L));                  \
            PTL_V(S, storeu)(o + i, y0);                                                  \
            PTL_V(S, storeu)(o + i + L, y1);                                              \
        }                                                                                 \
        for (; i + L <= n; i += L) {                                                      \
            PTL_V(S, storeu)(o + i, ptl_vm_##F##_##S(PTL_V(S, loadu)(a + i)));            \
        }                                                                                 \
        if (i < n) {                                                                      \
            PTL_VTAILT(S) m = PTL_VTAIL(S, n - i);                                        \
            PTL_VSTORE_TAIL(S, o + i, m, ptl_vm_##F##_##S(PTL_VLOAD_TAIL(S, a + i, m)));  \
        }                                                                                 \
    }
#define PTL_VM_DEFINE_FLOAT_MAPS(S)                                                       \
    PTL_VM_DEFINE_MAP(exp, S)                                                             \
    PTL_VM_DEFINE_MAP(expm1, S)                                                           \
    PTL_VM_DEFINE_MAP(erf, S)                                                             \
    PTL_VM_DEFINE_MAP(sigmoid, S)                                                         \
    PTL_VM_DEFINE_MAP(tanh, S)                                                            \
    PTL_VM_DEFINE_MAP(log, S)                                                             \
    PTL_VM_DEFINE_MAP(log1p, S)                                                           \
    PTL_VM_DEFINE_MAP(sinh, S)                                                            \
    PTL_VM_DEFINE_MAP(cosh, S)                                                            \
    PTL_VM_DEFINE_MAP(sin, S)                                                             \
    PTL_VM_DEFINE_MAP(cos, S)                                                             \
    PTL_VM_DEFINE_MAP(erfinv, S)

PTL_VM_DEFINE_FLOAT_MAPS(ps)
PTL_VM_DEFINE_FLOAT_MAPS(ps512)
#define PTL_VM_DEFINE_DOUBLE_MAPS(S)                                                      \
    PTL_VM_DEFINE_MAP(exp, S)                                                             \
    PTL_VM_DEFINE_MAP(sin, S)                                                             \
    PTL_VM_DEFINE_MAP(cos, S)                                                             \
    PTL_VM_DEFINE_MAP(tanh, S)                                                            \
    PTL_VM_DEFINE_MAP(sigmoid, S)

PTL_VM_DEFINE_DOUBLE_MAPS(pd)
PTL_VM_DEFINE_DOUBLE_MAPS(pd512)

#endif

#endif
