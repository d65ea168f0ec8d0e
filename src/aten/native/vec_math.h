/* vec_math.h -- vectorized exp, erf, sigmoid and tanh shared by the unary, activation,
 * softmax and recurrent-cell kernels.  Mirrors the exp/erf of
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
 * Every formula exists twice: an AVX2+FMA version on 8 floats / 4 doubles (chosen at run
 * time by the callers through ptl_cpu_capability()) and a portable scalar one without
 * branches or libm calls, which gcc auto-vectorizes in plain loops.  sigmoid and tanh (float
 * only) have only the AVX2 version; the portable loops use scalar_math.h and libm. */
#ifndef PTL_ATEN_NATIVE_VEC_MATH_H
#define PTL_ATEN_NATIVE_VEC_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

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
#define PTL_VM_NCOEF(S) (sizeof(ptl_vm_exp_coef_##S) / sizeof(ptl_vm_exp_coef_##S[0]))

/* ORDER erf_small_coef: erf(x) / x = sum c[k] x^2k on [0, 1] */
#define PTL_ERF_S0 1.1283791657386077f
#define PTL_ERF_S1 -0.3761262585733478f
#define PTL_ERF_S2 0.11283585410021335f
#define PTL_ERF_S3 -0.02685382078000742f
#define PTL_ERF_S4 0.005188342245658034f
#define PTL_ERF_S5 -0.0008010308788800602f
#define PTL_ERF_S6 7.854212025248941e-05f

/* log(erfc(x)) = sum c[k] (x - 2.5)^k on [1, 3.93] */
#define PTL_ERF_L0 -7.806815275812634f
#define PTL_ERF_L1 -5.352680728187076f
#define PTL_ERF_L2 -0.9438936628574949f
#define PTL_ERF_L3 -0.010858247364229467f
#define PTL_ERF_L4 0.002165222531641753f
#define PTL_ERF_L5 -0.00042055925311790254f
#define PTL_ERF_L6 7.734083283250648e-05f
#define PTL_ERF_L7 -1.3074544181979064e-05f
#define PTL_ERF_L8 1.628240235085343e-06f
#define PTL_ERF_L9 -4.402731779151736e-08f

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
        for (size_t i = 1; i < PTL_VM_NCOEF(S); i++) {                                    \
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

static inline float
ptl_vm_erff(float x)
{
    float ax = fabsf(x), z = ax * ax;
    float p = PTL_ERF_S6;
    p = p * z + PTL_ERF_S5;
    p = p * z + PTL_ERF_S4;
    p = p * z + PTL_ERF_S3;
    p = p * z + PTL_ERF_S2;
    p = p * z + PTL_ERF_S1;
    p = p * z + PTL_ERF_S0;
    float t = (ax > 3.93f ? 3.93f : ax) - 2.5f;
    float q = PTL_ERF_L9;
    q = q * t + PTL_ERF_L8;
    q = q * t + PTL_ERF_L7;
    q = q * t + PTL_ERF_L6;
    q = q * t + PTL_ERF_L5;
    q = q * t + PTL_ERF_L4;
    q = q * t + PTL_ERF_L3;
    q = q * t + PTL_ERF_L2;
    q = q * t + PTL_ERF_L1;
    q = q * t + PTL_ERF_L0;
    float y = ax < 1.0f ? ax * p : ax < 3.93f ? 1.0f - ptl_vm_expf(q) : 1.0f;
    return x != x ? x : copysignf(y, x);
}

#ifdef PTL_HAVE_AVX2_KERNELS

/* ---- AVX2 + FMA versions ---- */

/* Note [Vector twins]
 * A kernel written once for float and double names its vector operations through the
 * intrinsic suffix S (ps: 8 floats, pd: 4 doubles): PTL_V(S, add) is _mm256_add_S,
 * PTL_VT(S) the vector type, PTL_VLANES(S) the lane count, PTL_VEXP(S) the vector exp and
 * PTL_SEXP(S) the scalar one for the tail. */
#define PTL_V(S, op) _mm256_##op##_##S
#define PTL_VT(S) PTL_VT_##S
#define PTL_VT_ps __m256
#define PTL_VT_pd __m256d
#define PTL_VLANES(S) PTL_VLANES_##S
#define PTL_VLANES_ps 8
#define PTL_VLANES_pd 4
#define PTL_VEXP(S) ptl_vm_exp_##S
#define PTL_SEXP(S) PTL_SEXP_##S
#define PTL_SEXP_ps ptl_vm_expf
#define PTL_SEXP_pd ptl_vm_exp

/* 2^n for integral n in the normal exponent range: n + magic holds n in its low bits */
#define PTL_VI(S, op) PTL_VI_##S(op)
#define PTL_VI_ps(op) _mm256_##op##_epi32
#define PTL_VI_pd(op) _mm256_##op##_epi64
#define PTL_VI_SET1(S) PTL_VI_SET1_##S
#define PTL_VI_SET1_ps _mm256_set1_epi32
#define PTL_VI_SET1_pd _mm256_set1_epi64x
#define PTL_VM_DEFINE_POW2I(S)                                                            \
    PTL_AVX2 static inline PTL_VT(S) ptl_vm_pow2i_##S(PTL_VT(S) n)                        \
    {                                                                                     \
        const PTL_VT(S) magic = PTL_V(S, set1)(PTL_VM_MAGIC_##S);                         \
        __m256i bits = PTL_VI(S, sub)(_mm256_cast##S##_si256(PTL_V(S, add)(n, magic)),    \
                                      _mm256_cast##S##_si256(magic));                     \
        bits = PTL_VI(S, add)(bits, PTL_VI_SET1(S)(PTL_VM_BIAS_##S));                     \
        return PTL_V(S, castsi256)(PTL_VI(S, slli)(bits, PTL_VM_MANT_##S));               \
    }

/* The vector exp of Note [Vector exp].  When every lane lies in [NORMAL_LO, NORMAL_HI]
 * (no NaN, n in [-124, 127] for float and [-1020, 1023] for double), y 2^n is a normal
 * number and 2^n is one: the one product y 2^n is exact, as are the two of the general path
 * (y 2^n1) 2^n2, so both give the same bits, and the clamps and the special-value blends
 * change nothing there.  Skipping them saves about a third of the instructions. */
#define PTL_VM_NORMAL_LO_ps -86.0f
#define PTL_VM_NORMAL_HI_ps 88.0f
#define PTL_VM_ALL_LANES_ps 0xff
#define PTL_VM_NORMAL_LO_pd -707.0
#define PTL_VM_NORMAL_HI_pd 709.0
#define PTL_VM_ALL_LANES_pd 0xf
#define PTL_VM_DEFINE_VECTOR_EXP(S)                                                       \
    PTL_AVX2 static inline PTL_VT(S) ptl_vm_exp_##S(PTL_VT(S) x)                          \
    {                                                                                     \
        const PTL_VT(S) hi = PTL_V(S, set1)(PTL_VM_HI_##S);                               \
        const PTL_VT(S) lo = PTL_V(S, set1)(PTL_VM_LO_##S);                               \
        const PTL_VT(S) inside = PTL_V(S, and)(                                           \
            PTL_V(S, cmp)(x, PTL_V(S, set1)(PTL_VM_NORMAL_LO_##S), _CMP_GE_OQ),           \
            PTL_V(S, cmp)(x, PTL_V(S, set1)(PTL_VM_NORMAL_HI_##S), _CMP_LE_OQ));          \
        PTL_VT(S) xc = PTL_V(S, max)(PTL_V(S, min)(x, hi), lo);                           \
        PTL_VT(S) n = PTL_V(S, round)(PTL_V(S, mul)(xc, PTL_V(S, set1)(PTL_VM_LOG2E_##S)), \
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);     \
        PTL_VT(S) r = PTL_V(S, fnmadd)(n, PTL_V(S, set1)(PTL_VM_LN2_HI_##S), xc);         \
        r = PTL_V(S, fnmadd)(n, PTL_V(S, set1)(PTL_VM_LN2_LO_##S), r);                    \
        PTL_VT(S) p = PTL_V(S, set1)(ptl_vm_exp_coef_##S[0]);                             \
        for (size_t i = 1; i < PTL_VM_NCOEF(S); i++) {                                    \
            p = PTL_V(S, fmadd)(p, r, PTL_V(S, set1)(ptl_vm_exp_coef_##S[i]));            \
        }                                                                                 \
        PTL_VT(S) y = PTL_V(S, fmadd)(p, PTL_V(S, mul)(r, r), r);                         \
        y = PTL_V(S, add)(y, PTL_V(S, set1)(1));                                          \
        if (PTL_V(S, movemask)(inside) == PTL_VM_ALL_LANES_##S) {                          \
            return PTL_V(S, mul)(y, ptl_vm_pow2i_##S(n));                                 \
        }                                                                                 \
        PTL_VT(S) n1 = PTL_V(S, floor)(PTL_V(S, mul)(n, PTL_V(S, set1)(0.5)));            \
        PTL_VT(S) n2 = PTL_V(S, sub)(n, n1);                                              \
        y = PTL_V(S, mul)(PTL_V(S, mul)(y, ptl_vm_pow2i_##S(n1)), ptl_vm_pow2i_##S(n2));  \
        y = PTL_V(S, blendv)(y, PTL_V(S, set1)(INFINITY), PTL_V(S, cmp)(x, hi, _CMP_GT_OQ)); \
        y = PTL_V(S, blendv)(y, PTL_V(S, setzero)(), PTL_V(S, cmp)(x, lo, _CMP_LT_OQ));   \
        return PTL_V(S, blendv)(y, x, PTL_V(S, cmp)(x, x, _CMP_UNORD_Q));                 \
    }

PTL_VM_DEFINE_POW2I(ps)
PTL_VM_DEFINE_POW2I(pd)
PTL_VM_DEFINE_VECTOR_EXP(ps)
PTL_VM_DEFINE_VECTOR_EXP(pd)

/* erfc(a) = e^Q(a - 2.5) for 1 <= a <= 3.93 (no cancellation, unlike 1 - erf) */
PTL_AVX2 static inline __m256
ptl_vm_erfc_mid_ps(__m256 a)
{
    __m256 t = _mm256_sub_ps(a, _mm256_set1_ps(2.5f));
    __m256 q = _mm256_set1_ps(PTL_ERF_L9);
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(PTL_ERF_L8));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(PTL_ERF_L7));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(PTL_ERF_L6));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(PTL_ERF_L5));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(PTL_ERF_L4));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(PTL_ERF_L3));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(PTL_ERF_L2));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(PTL_ERF_L1));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(PTL_ERF_L0));
    return ptl_vm_exp_ps(q);
}

/* P(z) with erf(t) = t P(t^2) for |t| < 1 */
PTL_AVX2 static inline __m256
ptl_vm_erf_poly_ps(__m256 z)
{
    __m256 p = _mm256_set1_ps(PTL_ERF_S6);
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(PTL_ERF_S5));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(PTL_ERF_S4));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(PTL_ERF_S3));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(PTL_ERF_S2));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(PTL_ERF_S1));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(PTL_ERF_S0));
    return p;
}

PTL_AVX2 static inline __m256
ptl_vm_erf_ps(__m256 x)
{
    const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
    const __m256 edge = _mm256_set1_ps(3.93f);
    __m256 ax = _mm256_andnot_ps(sign, x);
    __m256 small = _mm256_mul_ps(ax, ptl_vm_erf_poly_ps(_mm256_mul_ps(ax, ax)));
    __m256 large = _mm256_sub_ps(one, ptl_vm_erfc_mid_ps(_mm256_min_ps(ax, edge)));
    large = _mm256_blendv_ps(large, one, _mm256_cmp_ps(ax, edge, _CMP_GE_OQ));
    __m256 y = _mm256_blendv_ps(large, small, _mm256_cmp_ps(ax, one, _CMP_LT_OQ));
    y = _mm256_or_ps(y, _mm256_and_ps(sign, x));
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/* sigmoid = 1 / (1 + e^-x).  For x >= 20, e^-x < 2.1e-9 is below half an ulp of 1 (2^-24),
 * so 1 + e^-x rounds to 1 and the result is exactly 1: clamping -x at -20 gives the same bits,
 * and spares exp the subnormal results it makes for x > 87 (each one a microcode assist on
 * Intel cores, which made sigmoid 2.5x slower on inputs with a few per cent of such values).
 * max_ps returns its second operand when one is NaN, so NaN still propagates. */
PTL_AVX2 static inline __m256
ptl_vm_sigmoid_ps(__m256 x)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 negx = _mm256_sub_ps(_mm256_setzero_ps(), x);
    __m256 e = ptl_vm_exp_ps(_mm256_max_ps(_mm256_set1_ps(-20.0f), negx));
    return _mm256_div_ps(one, _mm256_add_ps(one, e));
}

/* tanh: |x| < 0.625 by the Cephes tanhf odd polynomial, else sign(x) (1 - 2 / (e^2|x| + 1)) */
PTL_AVX2 static inline __m256
ptl_vm_tanh_ps(__m256 x)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 sign_mask = _mm256_set1_ps(-0.0f);
    __m256 ax = _mm256_andnot_ps(sign_mask, x);
    __m256 e = ptl_vm_exp_ps(_mm256_add_ps(ax, ax));
    __m256 t = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
    t = _mm256_or_ps(t, _mm256_and_ps(sign_mask, x));
    __m256 z = _mm256_mul_ps(x, x);
    __m256 p = _mm256_set1_ps(-5.70498872745e-3f);
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(2.06390887954e-2f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-5.37397155531e-2f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.33314422036e-1f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.33332819422e-1f));
    __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), x, x);
    return _mm256_blendv_ps(t, small, _mm256_cmp_ps(ax, _mm256_set1_ps(0.625f), _CMP_LT_OQ));
}

/* The first n (< 8) lanes as a maskload/maskstore mask. */
PTL_AVX2 static inline __m256i
ptl_vm_tail_mask(int64_t n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

#endif

#endif
