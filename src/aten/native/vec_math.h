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

#define PTL_EXPF_HI 88.72283935546875f
#define PTL_EXPF_LO -103.972084045410f
#define PTL_EXP_HI 709.782712893384
#define PTL_EXP_LO -745.1332191019412

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

static inline float
ptl_vm_expf(float x)
{
    /* rounding by the 1.5 * 2^23 trick keeps the loop free of calls */
    const float magic = 12582912.0f;
    float xc = x > PTL_EXPF_HI ? PTL_EXPF_HI : x < PTL_EXPF_LO ? PTL_EXPF_LO : x;
    float n = (xc * 1.44269504088896341f + magic) - magic;
    float r = xc - n * 0.693145751953125f;
    r = r - n * 1.428606765330187e-06f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float y = (p * (r * r) + r) + 1.0f;
    int32_t ni = (int32_t)n, n1 = ni / 2, n2 = ni - n1;
    uint32_t b1 = (uint32_t)(n1 + 127) << 23, b2 = (uint32_t)(n2 + 127) << 23;
    float s1, s2;
    memcpy(&s1, &b1, sizeof s1);
    memcpy(&s2, &b2, sizeof s2);
    y = y * s1 * s2;
    y = x > PTL_EXPF_HI ? INFINITY : x < PTL_EXPF_LO ? 0.0f : y;
    return x != x ? x : y;
}

static inline double
ptl_vm_exp(double x)
{
    const double magic = 6755399441055744.0;
    double xc = x > PTL_EXP_HI ? PTL_EXP_HI : x < PTL_EXP_LO ? PTL_EXP_LO : x;
    double n = (xc * 1.4426950408889634 + magic) - magic;
    double r = xc - n * 0.693147180369123816490;
    r = r - n * 1.90821492927058770002e-10;
    double p = 1.0 / 6227020800.0;
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    double y = (p * (r * r) + r) + 1.0;
    int64_t ni = (int64_t)n, n1 = ni / 2, n2 = ni - n1;
    uint64_t b1 = (uint64_t)(n1 + 1023) << 52, b2 = (uint64_t)(n2 + 1023) << 52;
    double s1, s2;
    memcpy(&s1, &b1, sizeof s1);
    memcpy(&s2, &b2, sizeof s2);
    y = y * s1 * s2;
    y = x > PTL_EXP_HI ? INFINITY : x < PTL_EXP_LO ? 0.0 : y;
    return x != x ? x : y;
}

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

PTL_AVX2 static inline __m256
ptl_vm_exp_ps(__m256 x)
{
    const __m256 hi = _mm256_set1_ps(PTL_EXPF_HI);
    const __m256 lo = _mm256_set1_ps(PTL_EXPF_LO);
    __m256 xc = _mm256_max_ps(_mm256_min_ps(x, hi), lo);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), xc);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187e-06f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    __m256 y = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r);
    y = _mm256_add_ps(y, _mm256_set1_ps(1.0f));
    __m256i ni = _mm256_cvtps_epi32(n);
    __m256i n1 = _mm256_srai_epi32(ni, 1);
    __m256i n2 = _mm256_sub_epi32(ni, n1);
    __m256i bias = _mm256_set1_epi32(127);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    y = _mm256_mul_ps(_mm256_mul_ps(y, s1), s2);
    y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), _mm256_cmp_ps(x, hi, _CMP_GT_OQ));
    y = _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x, lo, _CMP_LT_OQ));
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/* 2^n for 4 integral doubles n in [-1022, 1023] (n + 2^52 + 2^51 holds n in its low bits) */
PTL_AVX2 static inline __m256d
ptl_vm_pow2i_pd(__m256d n)
{
    const __m256d magic = _mm256_set1_pd(6755399441055744.0);
    __m256i bits = _mm256_sub_epi64(_mm256_castpd_si256(_mm256_add_pd(n, magic)),
                                    _mm256_castpd_si256(magic));
    bits = _mm256_slli_epi64(_mm256_add_epi64(bits, _mm256_set1_epi64x(1023)), 52);
    return _mm256_castsi256_pd(bits);
}

PTL_AVX2 static inline __m256d
ptl_vm_exp_pd(__m256d x)
{
    const __m256d hi = _mm256_set1_pd(PTL_EXP_HI);
    const __m256d lo = _mm256_set1_pd(PTL_EXP_LO);
    __m256d xc = _mm256_max_pd(_mm256_min_pd(x, hi), lo);
    __m256d n = _mm256_round_pd(_mm256_mul_pd(xc, _mm256_set1_pd(1.4426950408889634)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256d r = _mm256_fnmadd_pd(n, _mm256_set1_pd(0.693147180369123816490), xc);
    r = _mm256_fnmadd_pd(n, _mm256_set1_pd(1.90821492927058770002e-10), r);
    __m256d p = _mm256_set1_pd(1.0 / 6227020800.0);
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 479001600.0));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 39916800.0));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 3628800.0));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 362880.0));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 40320.0));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 5040.0));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 720.0));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 120.0));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 24.0));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 6.0));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(0.5));
    __m256d y = _mm256_fmadd_pd(p, _mm256_mul_pd(r, r), r);
    y = _mm256_add_pd(y, _mm256_set1_pd(1.0));
    __m256d n1 = _mm256_floor_pd(_mm256_mul_pd(n, _mm256_set1_pd(0.5)));
    __m256d n2 = _mm256_sub_pd(n, n1);
    y = _mm256_mul_pd(_mm256_mul_pd(y, ptl_vm_pow2i_pd(n1)), ptl_vm_pow2i_pd(n2));
    y = _mm256_blendv_pd(y, _mm256_set1_pd(INFINITY), _mm256_cmp_pd(x, hi, _CMP_GT_OQ));
    y = _mm256_blendv_pd(y, _mm256_setzero_pd(), _mm256_cmp_pd(x, lo, _CMP_LT_OQ));
    return _mm256_blendv_pd(y, x, _mm256_cmp_pd(x, x, _CMP_UNORD_Q));
}

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

/* sigmoid = 1 / (1 + e^-x) */
PTL_AVX2 static inline __m256
ptl_vm_sigmoid_ps(__m256 x)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 e = ptl_vm_exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), x));
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
