/* unary_half.c -- float16 exp, tanh and the other float32 formulas of vec_math.h in
 * registers (Note [Float16 unary formulas in registers]), for unary.c's kernels.  Mirrors
 * the Half paths of ATen/native/cpu/UnaryOpsKernel.cpp (Vectorized<Half> through float). */
#include <stdint.h>

#include "../../c10/cpu_features.h"
#include "../../c10/dtype.h"
#include "unary_half.h"
#include "vec_math.h"

#ifdef PTL_HAVE_AVX2_KERNELS
/* Note [Float16 unary formulas in registers]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * float16 exp, tanh and the other formulas of vec_math.h ran through float32 blocks (Note
 * [Half-precision pointwise through float32] in native.c): each block converted and stored,
 * loaded by the float32 loop, its results stored, loaded and converted back, a third of exp
 * of 1e6 values (0.90x PyTorch's time, one thread).  Where the CPU has F16C and the
 * capability is AVX2 or more, their float16 loops convert 8 (AVX2) or 16 (AVX-512) values in
 * registers, apply the float32 formula and convert the results back before one store, as
 * binary.c does for add (Note [Float16 arithmetic in registers]): the same float32 values,
 * rounded to nearest even alike, so the bits of the blocks.  A vector with a NaN result
 * stores it through ptl_f_to_half (the quiet NaN of its sign, as the blocks' conversion
 * gives); strided values and the last part vector go through a buffer of one vector, so
 * every value takes the vector formula, as in the blocks. */
#define HALF_ATTR_ps __attribute__((target("avx2,fma,f16c")))
#define HALF_ATTR_ps512 PTL_AVX512
#define HALF_TO_F_ps(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))
#define HALF_TO_F_ps512(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p)))
#define HALF_STORE_ps(p, v) \
    _mm_storeu_si128((__m128i *)(p), _mm256_cvtps_ph((v), _MM_FROUND_TO_NEAREST_INT))
#define HALF_STORE_ps512(p, v) \
    _mm256_storeu_si256((__m256i *)(p), _mm512_cvtps_ph((v), _MM_FROUND_TO_NEAREST_INT))
/* o[i so] = F(a[i sa]) for i < n float16 values (strides in elements) in vectors of kind S
 * (flatten: gcc had left the formula a call a vector, a third of the time) */
#define DEFINE_HALF_UNARY_VEC(F, S)                                                       \
    HALF_ATTR_##S __attribute__((flatten)) static void                                    \
    F##_halves_##S(ptl_half *o, const ptl_half *a, int64_t so, int64_t sa, int64_t n)     \
    {                                                                                     \
        const int64_t L = PTL_VLANES(S);                                                  \
        for (int64_t i = 0; i < n; i += L) {                                              \
            if (so == 1 && sa == 1 && i + L <= n) {                                       \
                PTL_VT(S) y = ptl_vm_##F##_##S(HALF_TO_F_##S(a + i));                     \
                if (PTL_VBITS(S, PTL_VCMP(S, y, y, _CMP_UNORD_Q)) == 0) {                 \
                    HALF_STORE_##S(o + i, y);                                             \
                    continue;                                                             \
                }                                                                         \
            }                                                                             \
            /* strided, the last part vector, a vector with a NaN result */               \
            int64_t m = n - i < L ? n - i : L;                                            \
            ptl_half in[PTL_VLANES(S)] = {{0}};                                           \
            float r[PTL_VLANES(S)];                                                       \
            for (int64_t j = 0; j < m; j++) {                                             \
                in[j] = a[(i + j) * sa];                                                  \
            }                                                                             \
            PTL_V(S, storeu)(r, ptl_vm_##F##_##S(HALF_TO_F_##S(in)));                     \
            for (int64_t j = 0; j < m; j++) {                                             \
                o[(i + j) * so] = ptl_f_to_half(r[j]);                                    \
            }                                                                             \
        }                                                                                 \
    }
/* NAME_loop_f2_vec: float16 NAME in registers, at the widest vector kind */
#define DEFINE_HALF_UNARY_LOOP(NAME)                                                      \
    DEFINE_HALF_UNARY_VEC(NAME, ps)                                                       \
    DEFINE_HALF_UNARY_VEC(NAME, ps512)                                                    \
    static void                                                                           \
    NAME##_loop_f2_vec(char **d, const int64_t *s, int64_t n, const void *extra)          \
    {                                                                                     \
        const int64_t e = sizeof(ptl_half);                                               \
        (void)extra;                                                                      \
        (ptl_cpu_capability() >= PTL_CPU_AVX512 ? NAME##_halves_ps512 : NAME##_halves_ps)( \
            (ptl_half *)d[0], (const ptl_half *)d[1], s[0] / e, s[1] / e, n);             \
    }
DEFINE_HALF_UNARY_LOOP(exp)
DEFINE_HALF_UNARY_LOOP(expm1)
DEFINE_HALF_UNARY_LOOP(tanh)
DEFINE_HALF_UNARY_LOOP(sigmoid)
DEFINE_HALF_UNARY_LOOP(log)
DEFINE_HALF_UNARY_LOOP(log1p)
DEFINE_HALF_UNARY_LOOP(erf)
DEFINE_HALF_UNARY_LOOP(sinh)
DEFINE_HALF_UNARY_LOOP(cosh)
#undef DEFINE_HALF_UNARY_LOOP
#undef DEFINE_HALF_UNARY_VEC
#undef HALF_STORE_ps512
#undef HALF_STORE_ps
#undef HALF_TO_F_ps512
#undef HALF_TO_F_ps
#undef HALF_ATTR_ps512
#undef HALF_ATTR_ps

static const PtlLoop half_loops[PTL_HALF_UNARY_COUNT] = {   /* ORDER HALF_UNARY */
    exp_loop_f2_vec,  expm1_loop_f2_vec, tanh_loop_f2_vec, sigmoid_loop_f2_vec,
    log_loop_f2_vec,  log1p_loop_f2_vec, erf_loop_f2_vec,  sinh_loop_f2_vec,
    cosh_loop_f2_vec};
#endif

/* (unary_half.h) */
PtlLoop
ptl_unary_half_loop(PtlHalfUnary f)
{
#ifdef PTL_HAVE_AVX2_KERNELS
    if (ptl_cpu_capability() >= PTL_CPU_AVX2 && ptl_cpu_has_f16c()) {
        return half_loops[f];
    }
#endif
    (void)f;
    return NULL;
}
