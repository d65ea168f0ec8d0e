/* special.c -- the CPU kernels of torch.special's functions that have no other home:
 * zeta (Hurwitz), entr, ndtr, log_ndtr, ndtri, erfcx, the Bessel functions J0, J1, Y0, Y1,
 * the modified Bessel functions K0, K1 (and e^x K0, e^x K1), the spherical Bessel
 * function j0, the Airy function Ai and the orthogonal polynomials (Chebyshev T, U, V, W
 * and their shifted forms, Hermite H and He, Laguerre L, Legendre P); modified_bessel_i0
 * and i1 register unary.c's i0 and special_i1 kernels.  Mirrors their CPU kernels in
 * ATen/native/cpu/UnaryOpsKernel.cpp and BinaryOpsKernel.cpp.  Every formula runs in
 * double (float32, float16 and bfloat16 round its result once); the formulas are the
 * scalar ones of scalar_math.h (zeta), gaussian_math.h (ndtr, log_ndtr, ndtri, erfcx),
 * bessel_math.h (J0, J1, Y0, Y1, K0, K1, spherical j0, Ai; tables in special_tables.h) and
 * polynomial_math.h, which the CUDA kernels call too (Note [One special formula for the CPU
 * and CUDA] in gaussian_math.h: the vector blocks below give those formulas' bits), but for
 * entr and the orthogonal polynomials, whose faster CPU blocks are below (Note [Orthogonal
 * polynomials in lock-step]).
 * Integer and bool inputs compute in the default float dtype, as in PyTorch.  See Note
 * [erfcx and the normal distribution], Note [Bessel functions of real argument] and Note
 * [Orthogonal polynomials]. */
#include <float.h>
#include <math.h>

#include "../../c10/cpu_features.h"
#include "../../c10/error.h"
#include "../bessel_math.h"
#include "../gaussian_math.h"
#include "../polynomial_math.h"
#include "../scalar_math.h"
#include "../special_math.h"
#include "binary_loops.h"
#include "native.h"
#include "unary_f8_erf.h"
#include "unary_f8_trig.h"
#include "unary_loops.h"

/* entr(x) = -x log x, 0 at 0, -inf below 0 (PyTorch's values: NaN stays NaN) */
static inline double
entr_d(double x)
{
    if (x != x) {
        return x;
    }
    if (x > 0.0) {
        return -x * log(x);
    }
    return x == 0.0 ? 0.0 : -INFINITY;
}

/* always inlined, for the formulas to be compiled into each FMA clone of the loops below */
#define SPECIAL_INLINE static inline __attribute__((always_inline))

/* ---- one-input loops: [*] float -> [*] float, the formula in double ---- */

/* the same loops with an FMA clone (besides the baseline), for formulas that call fma */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(PTL_NO_LOOP_CLONES)
#define SPECIAL_FMA_CLONES __attribute__((target_clones("fma", "default")))
#else
#define SPECIAL_FMA_CLONES
#endif

#define DEFINE_SPECIAL_FMA_LOOP(NAME, T, DT, LOAD, STORE, F)                            \
    SPECIAL_FMA_CLONES static void                                                        \
    NAME##_loop_##DT(char **d, const int64_t *s, int64_t n, const void *extra)            \
    {                                                                                     \
        for (int64_t i = 0; i < n; i++) {                                                 \
            const T a = *(const T *)(d[1] + i * s[1]);                                    \
            *(T *)(d[0] + i * s[0]) = STORE(F(LOAD(a), extra));                           \
        }                                                                                 \
    }

#define DEFINE_SPECIAL_UNARY_FMA(NAME, FN)                                                \
    SPECIAL_INLINE float NAME##_in_f(float x, const void *e)                              \
    {                                                                                     \
        (void)e;                                                                          \
        return (float)FN((double)x);                                                      \
    }                                                                                     \
    SPECIAL_INLINE double NAME##_in_d(double x, const void *e)                            \
    {                                                                                     \
        (void)e;                                                                          \
        return FN(x);                                                                     \
    }                                                                                     \
    DEFINE_SPECIAL_FMA_LOOP(NAME, ptl_half, f2, PTL_LOAD_f2, PTL_STORE_f2, NAME##_in_f)    \
    DEFINE_SPECIAL_FMA_LOOP(NAME, ptl_bf16, bf, PTL_LOAD_bf, PTL_STORE_bf, NAME##_in_f)    \
    DEFINE_SPECIAL_FMA_LOOP(NAME, float, f4, PTL_ID, PTL_ID, NAME##_in_f)                 \
    DEFINE_SPECIAL_FMA_LOOP(NAME, double, f8, PTL_ID, PTL_ID, NAME##_in_d)                \
    static const PtlLoop NAME##_loops[PTL_DTYPE_COUNT] = {FLOAT_ENTRIES(NAME)};

/* float64 ndtr, float32 and float64 log_ndtr and erfcx with AVX2, any layout (float32 ndtr:
 * float lanes, below): th for a block of
 * elements into a buffer, unary.c's vector erfc over it (Note [Vector float64 erf, erfc,
 * erfinv]: 1.45 ulps), then gaussian_math.h's ptl_ndtr_from_erfc, ptl_log_ndtr_from_erfc or
 * ptl_erfcx_from_erfc; without AVX2 the formulas per element, whose erfc is the vector
 * one's scalar twin ptl_sp_erfc_d: the same bits */
#define NDTR_BLOCK 256
#ifdef PTL_HAVE_AVX2_KERNELS
DEFINE_VM_POLY_SPLIT(pd)
DEFINE_VM_POLY_SPLIT(pd512)
DEFINE_UNARY_VEC_ERF_D(pd)
DEFINE_UNARY_VEC_ERF_D(pd512)

/* NAME's blocks: buf = PRE(x), the vector erfc (MAP in general) over buf, then
 * FIN(x, buf) */
#define DEFINE_ERFC_BLOCKS(NAME, T, DT, PRE, FIN, S)                                      \
    DEFINE_MAP_BLOCKS(NAME, T, DT, PRE, erfcd, FIN, S)
#define DEFINE_MAP_BLOCKS(NAME, T, DT, PRE, MAP, FIN, S)                                  \
    PTL_VATTR(S) static void                                                              \
        NAME##_blocks_##DT##_##S(T *o, int64_t so, const T *a, int64_t sa, int64_t n)     \
    {                                                                                     \
        double buf[NDTR_BLOCK];                                                           \
        for (int64_t i = 0; i < n; i += NDTR_BLOCK) {                                     \
            int64_t m = n - i < NDTR_BLOCK ? n - i : NDTR_BLOCK;                          \
            for (int64_t j = 0; j < m; j++) {                                             \
                buf[j] = PRE((double)a[(i + j) * sa]);                                    \
            }                                                                             \
            ptl_vm_map_##MAP##_##S(buf, buf, m);                                          \
            for (int64_t j = 0; j < m; j++) {                                             \
                o[(i + j) * so] = (T)(FIN((double)a[(i + j) * sa], buf[j]));              \
            }                                                                             \
        }                                                                                 \
    }
#define DEFINE_ERFC_BLOCK_KINDS(NAME, PRE, FIN_F, FIN_D)                                  \
    DEFINE_ERFC_BLOCKS(NAME, float, f4, PRE, FIN_F, pd)                                   \
    DEFINE_ERFC_BLOCKS(NAME, double, f8, PRE, FIN_D, pd)                                  \
    DEFINE_ERFC_BLOCKS(NAME, float, f4, PRE, FIN_F, pd512)                                \
    DEFINE_ERFC_BLOCKS(NAME, double, f8, PRE, FIN_D, pd512)
/* float64 ndtr: erfc(th), th = fl(-x / sqrt(2)), then the correction of th's rounding */
#define NDTR_PRE(X) (-(X) * PTL_RSQRT2_HI)
DEFINE_ERFC_BLOCKS(ndtr, double, f8, NDTR_PRE, ptl_ndtr_from_erfc, pd)
DEFINE_ERFC_BLOCKS(ndtr, double, f8, NDTR_PRE, ptl_ndtr_from_erfc, pd512)

/* float32 ndtr in float lanes (8 a vector with AVX2, 16 with AVX-512): gaussian_math.h's
 * ptl_ndtr_f (Note [Float ndtr]), the same operations in the same order, its table's rows
 * looked up by a permute of the lanes' interval indices (two and a blend with AVX2).  Lanes
 * with |x| > 14.5 take the twin's results there, 0 and 1 (ndtr(-14.5) = 6e-48), from a
 * select, their formula run at |x| = 0: its underflowing products took twice the time. */
PTL_AVX2 static inline __m256
ndtr_f_row_ps(const float *row, __m256i idx)
{
    __m256 lo = _mm256_permutevar8x32_ps(_mm256_loadu_ps(row), idx);
    __m256 up = _mm256_permutevar8x32_ps(_mm256_loadu_ps(row + 8), idx);
    return _mm256_blendv_ps(lo, up, _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28)));
}
PTL_AVX512 static inline __m512
ndtr_f_row_ps512(const float *row, __m512i idx)
{
    return _mm512_permutexvar_ps(idx, _mm512_loadu_ps(row));
}
#define NDTR_F_CVT_ps _mm256_cvtps_epi32
#define NDTR_F_CVT_ps512 _mm512_cvtps_epi32
#define NDTR_F_SCALE(S, N)                                                                \
    PTL_VFROMI(S, PTL_VI(S, slli)(PTL_VI(S, add)(NDTR_F_CVT_##S(N), PTL_VI_SET1(S)(127)), 23))
#define DEFINE_NDTR_F_VEC(S)                                                              \
    PTL_VATTR(S) static inline PTL_VT(S) ndtr_f_vec_##S(PTL_VT(S) x)                      \
    {                                                                                     \
        PTL_VT(S) a = PTL_V(S, andnot)(PTL_V(S, set1)(-0.0f), x);                         \
        a = PTL_V(S, min)(a, PTL_V(S, set1)(15.0f));                                      \
        PTL_VMT(S) far = PTL_VCMP(S, a, PTL_V(S, set1)(14.5f), _CMP_GT_OQ);               \
        a = PTL_VSEL(S, far, a, PTL_V(S, setzero)());                                     \
        PTL_VT(S) h = PTL_V(S, mul)(a, a), l = PTL_V(S, fmsub)(a, a, h);                  \
        PTL_VT(S) y = PTL_V(S, mul)(PTL_V(S, set1)(-0.5f), h);                            \
        PTL_VT(S) magic = PTL_V(S, set1)(12582912.0f);                                    \
        PTL_VT(S) n = PTL_V(S, sub)(                                                      \
            PTL_V(S, fmadd)(y, PTL_V(S, set1)(1.44269504088896341f), magic), magic);      \
        PTL_VT(S) r = PTL_V(S, fmadd)(n, PTL_V(S, set1)(-0.693145751953125f), y);         \
        r = PTL_V(S, add)(r, PTL_V(S, fmadd)(n, PTL_V(S, set1)(-1.428606765330187e-06f),  \
                                             PTL_V(S, mul)(PTL_V(S, set1)(-0.5f), l)));   \
        PTL_VT(S) e = PTL_V(S, set1)(ptl_ndtr_f_exp[0]);                                  \
        for (int k = 1; k < 6; k++) {                                                     \
            e = PTL_V(S, fmadd)(e, r, PTL_V(S, set1)(ptl_ndtr_f_exp[k]));                 \
        }                                                                                 \
        PTL_VT(S) er = PTL_V(S, fmadd)(PTL_V(S, mul)(r, r), e, r);                        \
        PTL_VIT(S) idx = PTL_VI(S, sub)(                                                  \
            PTL_VI(S, srli)(PTL_VTOI(S, PTL_V(S, add)(a, PTL_V(S, set1)(2.0f))), 21),      \
            PTL_VI_SET1(S)(512));                                                         \
        PTL_VT(S) d = PTL_V(S, sub)(a, ndtr_f_row_##S(ptl_ndtr_f_tab, idx));              \
        PTL_VT(S) q = ndtr_f_row_##S(ptl_ndtr_f_tab + 16, idx);                           \
        for (int k = 2; k < 9; k++) {                                                     \
            q = PTL_V(S, fmadd)(q, d, ndtr_f_row_##S(ptl_ndtr_f_tab + 16 * k, idx));      \
        }                                                                                 \
        PTL_VT(S) v = PTL_V(S, fmadd)(q, er, q);                                          \
        PTL_VT(S) n1 = PTL_VTRUNC(S, PTL_V(S, mul)(PTL_V(S, set1)(0.5f), n));             \
        v = PTL_V(S, mul)(PTL_V(S, mul)(v, NDTR_F_SCALE(S, n1)),                          \
                          NDTR_F_SCALE(S, PTL_V(S, sub)(n, n1)));                         \
        PTL_VT(S) res = PTL_VSEL(S, PTL_VCMP(S, x, PTL_V(S, setzero)(), _CMP_LT_OQ),      \
                                 PTL_V(S, sub)(PTL_V(S, set1)(1.0f), v), v);              \
        PTL_VT(S) ends = PTL_VSEL(S, PTL_VCMP(S, x, PTL_V(S, setzero)(), _CMP_LT_OQ),     \
                                  PTL_V(S, set1)(1.0f), PTL_V(S, setzero)());             \
        res = PTL_VSEL(S, far, res, ends);                                                \
        return PTL_VSEL(S, PTL_VCMP(S, x, x, _CMP_UNORD_Q), res, x);                      \
    }                                                                                     \
    PTL_VATTR(S) static void                                                              \
        ndtr_f_blocks_##S(float *o, int64_t so, const float *a, int64_t sa, int64_t n)    \
    {                                                                                     \
        const int64_t L = PTL_VLANES(S);                                                  \
        float buf[NDTR_BLOCK];                                                            \
        for (int64_t i = 0; i < n; i += NDTR_BLOCK) {                                     \
            int64_t m = n - i < NDTR_BLOCK ? n - i : NDTR_BLOCK, j = 0;                   \
            const float *src = a + i * sa;                                                \
            float *dst = so == 1 ? o + i : buf;                                           \
            if (sa != 1) {                                                                \
                for (int64_t k = 0; k < m; k++) {                                         \
                    buf[k] = a[(i + k) * sa];                                             \
                }                                                                         \
                src = buf;                                                                \
            }                                                                             \
            for (; j + L <= m; j += L) {                                                  \
                PTL_V(S, storeu)(dst + j, ndtr_f_vec_##S(PTL_V(S, loadu)(src + j)));      \
            }                                                                             \
            if (j < m) {                                                                  \
                PTL_VTAILT(S) t = PTL_VTAIL(S, m - j);                                    \
                PTL_VT(S) x = ndtr_f_vec_##S(PTL_VLOAD_TAIL(S, src + j, t));              \
                PTL_VSTORE_TAIL(S, dst + j, t, x);                                        \
            }                                                                             \
            if (so != 1) {                                                                \
                for (int64_t k = 0; k < m; k++) {                                         \
                    o[(i + k) * so] = buf[k];                                             \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
    }
DEFINE_NDTR_F_VEC(ps)
DEFINE_NDTR_F_VEC(ps512)
/* log_ndtr: erfc(|x| / sqrt(2)) gives ndtr(-|x|) */
#define LOG_NDTR_PRE(X) (fabs(X) * PTL_RSQRT2_HI)
DEFINE_ERFC_BLOCK_KINDS(log_ndtr, LOG_NDTR_PRE, ptl_log_ndtr_from_erfc,
                        ptl_log_ndtr_from_erfc)
/* erfcx: e^(x^2) erfc(x) below 26 (x^2 = s + lo exactly: e^s (1 + lo)), as
 * gaussian_math.h's ptl_erfcx_d but with the vector erfc; from 26 on (and NaN) that
 * function's asymptotic series, the lane clamped at 26 */
#define ERFCX_PRE(X) ((X) > 26.0 ? 26.0 : (X))
DEFINE_ERFC_BLOCK_KINDS(erfcx, ERFCX_PRE, ptl_erfcx_from_erfc, ptl_erfcx_from_erfc)
/* spherical j0: sin x / x from the vector sin; bessel_math.h's Taylor polynomial below
 * |x| = 1/2 and 0 at +-inf (ptl_spherical_bessel_j0_from_sin), its operations the same.
 * A block with no such element divides; one with any takes both formulas for every element
 * and keeps one, a loop gcc vectorizes: a branch per element to the polynomial's seven
 * divisions out of line had run log-uniform inputs (4 in 10 under 1/2) at a quarter of
 * PyTorch's speed on a Zen 3, and inlining it into a loop of branches had gcc if-convert
 * the block into the polynomial everywhere anyway. */
#define DEFINE_SPH_J0_BLOCKS(T, DT, S)                                                    \
    PTL_VATTR(S) static void spherical_bessel_j0_blocks_##DT##_##S(T *o, int64_t so,      \
                                                                  const T *a, int64_t sa, \
                                                                  int64_t n)              \
    {                                                                                     \
        double xs[NDTR_BLOCK], buf[NDTR_BLOCK];                                           \
        for (int64_t i = 0; i < n; i += NDTR_BLOCK) {                                     \
            int64_t m = n - i < NDTR_BLOCK ? n - i : NDTR_BLOCK;                          \
            int small = 0;                                                                \
            for (int64_t j = 0; j < m; j++) {                                             \
                xs[j] = (double)a[(i + j) * sa];                                          \
                small |= fabs(xs[j]) < 0.5 || isinf(xs[j]);                               \
            }                                                                             \
            ptl_vm_map_sin_##S(buf, xs, m);                                               \
            if (small) {                                                                  \
                for (int64_t j = 0; j < m; j++) {                                         \
                    double x = xs[j], p = ptl_spherical_bessel_j0_small(x);               \
                    double q = buf[j] / x;                                                \
                    buf[j] = isinf(x) ? 0.0 : fabs(x) < 0.5 ? p : q;                      \
                }                                                                         \
            }                                                                             \
            else {                                                                        \
                for (int64_t j = 0; j < m; j++) {                                         \
                    buf[j] /= xs[j];                                                      \
                }                                                                         \
            }                                                                             \
            for (int64_t j = 0; j < m; j++) {                                             \
                o[(i + j) * so] = (T)buf[j];                                              \
            }                                                                             \
        }                                                                                 \
    }
DEFINE_SPH_J0_BLOCKS(float, f4, pd)
DEFINE_SPH_J0_BLOCKS(double, f8, pd)
DEFINE_SPH_J0_BLOCKS(float, f4, pd512)
DEFINE_SPH_J0_BLOCKS(double, f8, pd512)
#undef DEFINE_SPH_J0_BLOCKS
/* element strides (every layout takes the vector blocks: the bits do not depend on it) */
#define VEC_BLOCKS(F2, F512, T, D, S, N)                                                  \
    if ((S)[0] % (int64_t)sizeof(T) == 0 && (S)[1] % (int64_t)sizeof(T) == 0 &&           \
        ptl_cpu_capability() >= PTL_CPU_AVX2) {                                           \
        int64_t so = (S)[0] / (int64_t)sizeof(T), sa = (S)[1] / (int64_t)sizeof(T);       \
        if (ptl_cpu_capability() >= PTL_CPU_AVX512) {                                     \
            F512((T *)(D)[0], so, (const T *)(D)[1], sa, (N));                            \
        }                                                                                 \
        else {                                                                            \
            F2((T *)(D)[0], so, (const T *)(D)[1], sa, (N));                              \
        }                                                                                 \
        return;                                                                           \
    }
#define ERFC_BLOCKS(NAME, T, DT, D, S, N)                                                 \
    VEC_BLOCKS(NAME##_blocks_##DT##_pd, NAME##_blocks_##DT##_pd512, T, D, S, N)
#define NDTR_F_BLOCKS(NAME, T, DT, D, S, N)                                               \
    VEC_BLOCKS(ndtr_f_blocks_ps, ndtr_f_blocks_ps512, T, D, S, N)

/* J0, J1, Y0, Y1 in blocks: where a block has an |x| >= 25, sin |x| and cos |x| of all its
 * elements by vec_math.h's vector sincos (libm's on its slow lanes: |x| > 2^20, inf, NaN,
 * near a multiple of pi/2), which the Hankel branch then reads: libm's scalar sincos was
 * most of its time */
#define DEFINE_JY_BLOCKS(NAME, NN, WANT_Y, T, DT, S)                                      \
    PTL_VATTR(S) static void                                                              \
        NAME##_blocks_##DT##_##S(T *o, int64_t so, const T *a, int64_t sa, int64_t n)     \
    {                                                                                     \
        double ax[NDTR_BLOCK], sc[2 * NDTR_BLOCK];                                        \
        const int64_t L = PTL_VLANES(S);                                                  \
        for (int64_t i = 0; i < n; i += NDTR_BLOCK) {                                     \
            int64_t m = n - i < NDTR_BLOCK ? n - i : NDTR_BLOCK, far = 0;                 \
            for (int64_t j = 0; j < m; j++) {                                             \
                ax[j] = fabs((double)a[(i + j) * sa]);                                    \
                far |= !(ax[j] < PTL_BESSEL_JY_SERIES_MAX);                               \
            }                                                                             \
            if (far) {                                                                    \
                int64_t mp = (m + L - 1) / L * L;                                         \
                for (int64_t j = m; j < mp; j++) {                                        \
                    ax[j] = 0.0;                                                          \
                }                                                                         \
                for (int64_t j = 0; j < mp; j += L) {                                     \
                    PTL_VT(S) x = PTL_V(S, loadu)(ax + j), vs, vc;                        \
                    PTL_VMT(S) slow = ptl_vm_sincos_fast_##S(x, &vs, &vc);                \
                    vs = ptl_vm_patch_##S(vs, x, slow, sin);                              \
                    vc = ptl_vm_patch_##S(vc, x, slow, cos);                              \
                    double ts[8], tc[8];                                                  \
                    PTL_V(S, storeu)(ts, vs);                                             \
                    PTL_V(S, storeu)(tc, vc);                                             \
                    for (int64_t l = 0; l < L; l++) {                                     \
                        sc[2 * (j + l)] = ts[l];                                          \
                        sc[2 * (j + l) + 1] = tc[l];                                      \
                    }                                                                     \
                }                                                                         \
            }                                                                             \
            for (int64_t j = 0; j < m; j++) {                                             \
                double x = (double)a[(i + j) * sa];                                       \
                o[(i + j) * so] = (T)ptl_bessel_jy_sc(NN, WANT_Y, x, sc + 2 * j);             \
            }                                                                             \
        }                                                                                 \
    }
#define DEFINE_JY_BLOCK_KINDS(NAME, NN, WANT_Y)                                           \
    DEFINE_JY_BLOCKS(NAME, NN, WANT_Y, float, f4, pd)                                     \
    DEFINE_JY_BLOCKS(NAME, NN, WANT_Y, double, f8, pd)                                    \
    DEFINE_JY_BLOCKS(NAME, NN, WANT_Y, float, f4, pd512)                                  \
    DEFINE_JY_BLOCKS(NAME, NN, WANT_Y, double, f8, pd512)
DEFINE_JY_BLOCK_KINDS(bessel_j0, 0, 0)
DEFINE_JY_BLOCK_KINDS(bessel_j1, 1, 0)
DEFINE_JY_BLOCK_KINDS(bessel_y0, 0, 1)
DEFINE_JY_BLOCK_KINDS(bessel_y1, 1, 1)
#else
#define ERFC_BLOCKS(NAME, T, DT, D, S, N)
#define NDTR_F_BLOCKS(NAME, T, DT, D, S, N)
#endif

/* NAME's loops: the blocks with AVX2 (float32's F4_BLOCKS), else FN_F (float32, float16,
 * bfloat16) or FN (float64) per element */
#define DEFINE_ERFC_LOOPS_F4(NAME, FN_F, FN, F4_BLOCKS)                                   \
    SPECIAL_INLINE float NAME##_in_f(float x, const void *e)                              \
    {                                                                                     \
        (void)e;                                                                          \
        return (float)FN_F((double)x);                                                    \
    }                                                                                     \
    SPECIAL_INLINE double NAME##_in_d(double x, const void *e)                            \
    {                                                                                     \
        (void)e;                                                                          \
        return FN(x);                                                                     \
    }                                                                                     \
    DEFINE_SPECIAL_FMA_LOOP(NAME##_strided, float, f4, PTL_ID, PTL_ID, NAME##_in_f)       \
    DEFINE_SPECIAL_FMA_LOOP(NAME##_strided, double, f8, PTL_ID, PTL_ID, NAME##_in_d)      \
    DEFINE_SPECIAL_FMA_LOOP(NAME, ptl_half, f2, PTL_LOAD_f2, PTL_STORE_f2, NAME##_in_f)    \
    DEFINE_SPECIAL_FMA_LOOP(NAME, ptl_bf16, bf, PTL_LOAD_bf, PTL_STORE_bf, NAME##_in_f)    \
    static void NAME##_loop_f4(char **d, const int64_t *s, int64_t n, const void *extra)  \
    {                                                                                     \
        F4_BLOCKS(NAME, float, f4, d, s, n)                                               \
        NAME##_strided_loop_f4(d, s, n, extra);                                           \
    }                                                                                     \
    static void NAME##_loop_f8(char **d, const int64_t *s, int64_t n, const void *extra)  \
    {                                                                                     \
        ERFC_BLOCKS(NAME, double, f8, d, s, n)                                            \
        NAME##_strided_loop_f8(d, s, n, extra);                                           \
    }                                                                                     \
    static const PtlLoop NAME##_loops[PTL_DTYPE_COUNT] = {FLOAT_ENTRIES(NAME)};

#define DEFINE_ERFC_LOOPS(NAME, FN_F, FN) DEFINE_ERFC_LOOPS_F4(NAME, FN_F, FN, ERFC_BLOCKS)

/* float32, float16 and bfloat16 take FN_F, float64 FN (gaussian_math.h, bessel_math.h: the
 * CUDA kernels' formulas, with the blocks' bits) */
DEFINE_ERFC_LOOPS_F4(ndtr, ptl_ndtr_f32, ptl_ndtr_d, NDTR_F_BLOCKS)
DEFINE_ERFC_LOOPS(log_ndtr, ptl_log_ndtr_d, ptl_log_ndtr_d)
DEFINE_ERFC_LOOPS(erfcx, ptl_erfcx_d, ptl_erfcx_d)
/* (the same block plumbing: ERFC_BLOCKS only names NAME's blocks) */
DEFINE_ERFC_LOOPS(bessel_j0, ptl_bessel_j0_d, ptl_bessel_j0_d)
DEFINE_ERFC_LOOPS(bessel_j1, ptl_bessel_j1_d, ptl_bessel_j1_d)
DEFINE_ERFC_LOOPS(bessel_y0, ptl_bessel_y0_d, ptl_bessel_y0_d)
DEFINE_ERFC_LOOPS(bessel_y1, ptl_bessel_y1_d, ptl_bessel_y1_d)
DEFINE_ERFC_LOOPS(spherical_bessel_j0, ptl_spherical_bessel_j0_d, ptl_spherical_bessel_j0_d)

/* entr: -x log x by vec_math.h's double log of positive normal numbers (under 1 ulp), a
 * block at a time with AVX2 or AVX-512, by its scalar twin scalar_math.h's ptl_log_normal
 * (the same bits) without; subnormal x (float64 only), 0, negative x, inf and NaN by
 * entr_d.  libm's log per element was most of the time. */
#define ENTR_BLOCK 256
#define ENTR_LOG_ARG(X) ((X) >= DBL_MIN && (X) < INFINITY ? (X) : 1.0)
#ifdef PTL_HAVE_AVX2_KERNELS
PTL_VM_DEFINE_MAP(log_normal, pd)
PTL_VM_DEFINE_MAP(log_normal, pd512)
#endif

SPECIAL_INLINE double
entr_from_log(double x, double lg)
{
    return x >= DBL_MIN && x < INFINITY ? -x * lg : entr_d(x);
}

/* lg[j] = log(a[j]), a[j] positive and normal, j < m */
SPECIAL_FMA_CLONES static void
entr_logs(double *lg, const double *a, int64_t m)
{
#ifdef PTL_HAVE_AVX2_KERNELS
    if (ptl_cpu_capability() >= PTL_CPU_AVX512) {
        ptl_vm_map_log_normal_pd512(lg, a, m);
        return;
    }
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        ptl_vm_map_log_normal_pd(lg, a, m);
        return;
    }
#endif
    for (int64_t j = 0; j < m; j++) {
        lg[j] = ptl_log_normal(a[j]);
    }
}

/* T's loop, the result rounded to ACC (float32 for float16 and bfloat16, as everywhere) */
#define DEFINE_ENTR_LOOP(T, DT, ACC, LOAD, STORE)                                         \
    static void entr_loop_##DT(char **d, const int64_t *s, int64_t n, const void *extra)  \
    {                                                                                     \
        double a[ENTR_BLOCK], lg[ENTR_BLOCK];                                             \
        (void)extra;                                                                      \
        for (int64_t i = 0; i < n; i += ENTR_BLOCK) {                                     \
            int64_t m = n - i < ENTR_BLOCK ? n - i : ENTR_BLOCK;                          \
            for (int64_t j = 0; j < m; j++) {                                             \
                a[j] = ENTR_LOG_ARG((double)LOAD(*(const T *)(d[1] + (i + j) * s[1])));   \
            }                                                                             \
            entr_logs(lg, a, m);                                                          \
            for (int64_t j = 0; j < m; j++) {                                             \
                double x = (double)LOAD(*(const T *)(d[1] + (i + j) * s[1]));             \
                *(T *)(d[0] + (i + j) * s[0]) = STORE((ACC)entr_from_log(x, lg[j]));      \
            }                                                                             \
        }                                                                                 \
    }
DEFINE_ENTR_LOOP(ptl_half, f2, float, PTL_LOAD_f2, PTL_STORE_f2)
DEFINE_ENTR_LOOP(ptl_bf16, bf, float, PTL_LOAD_bf, PTL_STORE_bf)
DEFINE_ENTR_LOOP(float, f4, float, PTL_ID, PTL_ID)
DEFINE_ENTR_LOOP(double, f8, double, PTL_ID, PTL_ID)
#undef DEFINE_ENTR_LOOP
static const PtlLoop entr_loops[PTL_DTYPE_COUNT] = {FLOAT_ENTRIES(entr)};
/* ndtri in blocks: the indices of the central elements and of the others collected
 * without a branch, then each list by its own loop (on uniform p a branch between the
 * regions per element mispredicted half the time).  With AVX2 / AVX-512 the central list's
 * polynomial (Note [Fast ndtri]: ptl_bessel_poly's Estrin scheme, 18 coefficients) runs in
 * double lanes, the same operations as the scalar formula's (its bits): 6% of uniform p's
 * time.  The tails stay per element (libm's log; in lanes, each lane's table row gathered,
 * they took 20% longer). */
#ifdef PTL_HAVE_AVX2_KERNELS
#define DEFINE_NDTRI_LANES(S)                                                             \
    /* res[k] = ptl_ndtri_mid(q[k]), k < m (a multiple of the lanes) */                   \
    PTL_VATTR(S) static void ndtri_mid_lanes_##S(double *res, const double *q, int m)     \
    {                                                                                     \
        const double *c = ptl_ndtri_tab + 18 * 38;                                        \
        for (int k = 0; k < m; k += PTL_VLANES(S)) {                                      \
            PTL_VT(S) v = PTL_V(S, loadu)(q + k), sj[4];                                  \
            PTL_VT(S) t = PTL_V(S, sub)(PTL_V(S, mul)(v, v), PTL_V(S, set1)(0.03125));    \
            PTL_VT(S) t2 = PTL_V(S, mul)(t, t), t4 = PTL_V(S, mul)(t2, t2);               \
            for (int j = 0; j < 4; j++) {                                                 \
                int top = j + 4 * ((17 - j) / 4);                                         \
                sj[j] = PTL_V(S, set1)(c[top]);                                           \
                for (int i = top - 4; i >= 0; i -= 4) {                                   \
                    sj[j] = PTL_V(S, fmadd)(sj[j], t4, PTL_V(S, set1)(c[i]));             \
                }                                                                         \
            }                                                                             \
            PTL_VT(S) g = PTL_V(S, fmadd)(t2, PTL_V(S, fmadd)(sj[3], t, sj[2]),           \
                                          PTL_V(S, fmadd)(sj[1], t, sj[0]));              \
            PTL_V(S, storeu)(res + k, PTL_V(S, mul)(v, g));                               \
        }                                                                                 \
    }
DEFINE_NDTRI_LANES(pd)
DEFINE_NDTRI_LANES(pd512)
#endif

/* res[mid[k]] = ptl_ndtri_mid(p[mid[k]] - 1/2), k < nm, in lanes: 0 without AVX2 (the
 * caller's loop then, compiled in its FMA clone) */
static int
ndtri_mid_list(double *res, const double *p, const int *mid, int nm)
{
#ifdef PTL_HAVE_AVX2_KERNELS
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        double q[NDTR_BLOCK], r[NDTR_BLOCK];
        int mp = (nm + 7) / 8 * 8;
        for (int k = 0; k < nm; k++) {
            q[k] = p[mid[k]] - 0.5;
        }
        for (int k = nm; k < mp; k++) {
            q[k] = 0.0;
        }
        if (ptl_cpu_capability() >= PTL_CPU_AVX512) {
            ndtri_mid_lanes_pd512(r, q, mp);
        }
        else {
            ndtri_mid_lanes_pd(r, q, mp);
        }
        for (int k = 0; k < nm; k++) {
            res[mid[k]] = r[k];
        }
        return 1;
    }
#else
    (void)res, (void)p, (void)mid, (void)nm;
#endif
    return 0;
}

#define DEFINE_NDTRI_LOOP(T, DT)                                                          \
    SPECIAL_FMA_CLONES static void                                                        \
    ndtri_loop_##DT(char **d, const int64_t *s, int64_t n, const void *extra)             \
    {                                                                                     \
        double p[NDTR_BLOCK], res[NDTR_BLOCK];                                            \
        int mid[NDTR_BLOCK], tail[NDTR_BLOCK];                                            \
        (void)extra;                                                                      \
        for (int64_t i = 0; i < n; i += NDTR_BLOCK) {                                     \
            int m = (int)(n - i < NDTR_BLOCK ? n - i : NDTR_BLOCK), nm = 0, nt = 0;       \
            for (int j = 0; j < m; j++) {                                                 \
                p[j] = (double)*(const T *)(d[1] + (i + j) * s[1]);                       \
                int c = fabs(p[j] - 0.5) <= 0.25;                                         \
                mid[nm] = j;                                                              \
                tail[nt] = j;                                                             \
                nm += c;                                                                  \
                nt += !c;                                                                 \
            }                                                                             \
            if (!ndtri_mid_list(res, p, mid, nm)) {                                       \
                for (int t = 0; t < nm; t++) {                                            \
                    res[mid[t]] = ptl_ndtri_mid(p[mid[t]] - 0.5);                         \
                }                                                                         \
            }                                                                             \
            for (int t = 0; t < nt; t++) {                                                \
                res[tail[t]] = ptl_ndtri_d(p[tail[t]]);                                   \
            }                                                                             \
            for (int j = 0; j < m; j++) {                                                 \
                *(T *)(d[0] + (i + j) * s[0]) = (T)res[j];                                \
            }                                                                             \
        }                                                                                 \
    }
DEFINE_NDTRI_LOOP(float, f4)
DEFINE_NDTRI_LOOP(double, f8)
SPECIAL_INLINE float
ndtri_in_f(float x, const void *e)
{
    (void)e;
    return (float)ptl_ndtri_d((double)x);
}
DEFINE_SPECIAL_FMA_LOOP(ndtri, ptl_half, f2, PTL_LOAD_f2, PTL_STORE_f2, ndtri_in_f)
DEFINE_SPECIAL_FMA_LOOP(ndtri, ptl_bf16, bf, PTL_LOAD_bf, PTL_STORE_bf, ndtri_in_f)
static const PtlLoop ndtri_loops[PTL_DTYPE_COUNT] = {FLOAT_ENTRIES(ndtri)};
DEFINE_SPECIAL_UNARY_FMA(modified_bessel_k0, ptl_bessel_k0_d)
DEFINE_SPECIAL_UNARY_FMA(modified_bessel_k1, ptl_bessel_k1_d)
DEFINE_SPECIAL_UNARY_FMA(scaled_modified_bessel_k0, ptl_bessel_k0e_d)
DEFINE_SPECIAL_UNARY_FMA(scaled_modified_bessel_k1, ptl_bessel_k1e_d)
DEFINE_SPECIAL_UNARY_FMA(airy_ai, ptl_airy_ai_d)

/* ---- zeta: [*] x, [*] q -> [*] float (broadcast) ---- */

#define ZETA_F(A, B, X) ((float)ptl_zeta_d((A), (B)))
#define ZETA_D(A, B, X) ptl_zeta_d((A), (B))
DEFINE_BINARY_LOOP(zeta, ptl_half, f2, float, PTL_LOAD_f2, PTL_STORE_f2, ZETA_F)
DEFINE_BINARY_LOOP(zeta, ptl_bf16, bf, float, PTL_LOAD_bf, PTL_STORE_bf, ZETA_F)
DEFINE_BINARY_LOOP(zeta_scalar, float, f4, float, PTL_ID, PTL_ID, ZETA_F)
DEFINE_BINARY_LOOP(zeta_scalar, double, f8, double, PTL_ID, PTL_ID, ZETA_D)

/* Note [zeta in double lanes]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * float32 and float64 zeta with AVX2 or AVX-512, any layout: blocks of (s, q) gathered into
 * doubles, the lanes with 1 < s <= 30 and 1e-3 <= q <= 1e6 by ptl_zeta_sum's
 * Euler-Maclaurin sum in double lanes, the others by ptl_zeta_d per element (libm's pow).
 * The ten direct terms (q + k)^-s (libm's pow was most of the time: ten calls an element)
 * are e^-(s L), L = log(q + k) as hi + lo to about 2^-70: q + k = 2^e m, m in [sqrt(1/2),
 * sqrt(2)), f = m - 1, t = f / (2 + f) as t_hi + t_lo (the residual by fma), log m =
 * 2 t_hi + 2 t_lo + t^3 P(t^2) (P: 2 / (2k + 1), k = 1..10; |t| <= 0.172), e ln2 in two
 * parts, summed by two exact two-sums into hi + lo (|lo| <= ulp(hi)); s L = p_hi + p_lo
 * (the product exact by fma), e^-(s L) = e^-p_hi (1 - p_lo) by vec_math.h's
 * exp (about 1 ulp).  A plain double log would cost s |L| ulps of the term (26 at s = 10,
 * q + k = 14; the float64 tests allow 8).  The twelve Bernoulli corrections run in full
 * (the scalar loop stops at 1e-17 of the sum), b / w as a product by 1 / w; on these lanes
 * they decrease throughout (their smallest term is past j = pi w > 28).  The results are
 * not libm pow's bits (PTL_CPU_CAPABILITY=default's): within a few ulps of them (float32:
 * the same but for values within 1e-15 of a rounding boundary). */
#define ZETA_BLOCK 256
#define ZETA_LANE_OK(S, Q) ((S) > 1.0 && (S) <= 30.0 && (Q) >= 1e-3 && (Q) <= 1e6)
#ifdef PTL_HAVE_AVX2_KERNELS
/* B_2j / (2j)!, j = 1..12 */
static const double zeta_bernoulli[12] = {
    1.0 / 12.0, -1.0 / 720.0, 1.0 / 30240.0, -1.0 / 1209600.0, 1.0 / 47900160.0,
    -1.0 / 1.8924375803183791606e9, 1.0 / 7.47242496e10, -1.0 / 2.950130727918164224e12,
    1.0 / 1.1646782814350067249e14, -1.0 / 4.5979787224074726105e15,
    1.0 / 1.8152105401943546773e17, -1.0 / 7.1661652561756670113e18};
/* (log m - 2t) / t^3 = sum 2 / (2k + 1) t^(2k - 2), k = 1..10, the highest power first */
static const double zeta_log_coef[10] = {2.0 / 21, 2.0 / 19, 2.0 / 17, 2.0 / 15, 2.0 / 13,
                                         2.0 / 11, 2.0 / 9,  2.0 / 7,  2.0 / 5,  2.0 / 3};
#define DEFINE_ZETA_LANES(S)                                                              \
    /* a + b = the result + *err exactly */                                               \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        zeta_two_sum_##S(PTL_VT(S) a, PTL_VT(S) b, PTL_VT(S) *err)                        \
    {                                                                                     \
        PTL_VT(S) h = PTL_V(S, add)(a, b), bb = PTL_V(S, sub)(h, a);                      \
        *err = PTL_V(S, add)(PTL_V(S, sub)(a, PTL_V(S, sub)(h, bb)), PTL_V(S, sub)(b, bb)); \
        return h;                                                                         \
    }                                                                                     \
    /* a^-s for positive normal a, 1 < s <= 30 (Note [zeta in double lanes]) */           \
    PTL_VATTR(S) static inline PTL_VT(S) zeta_pow_##S(PTL_VT(S) a, PTL_VT(S) s)           \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0), two = PTL_V(S, set1)(2.0);             \
        PTL_VT(S) e, m = ptl_vm_split_##S(a, &e);                                         \
        PTL_VMT(S) big = PTL_VCMP(S, m, PTL_V(S, set1)(1.4142135623730951), _CMP_GT_OQ);  \
        m = PTL_VSEL(S, big, m, PTL_V(S, mul)(m, PTL_V(S, set1)(0.5)));                   \
        e = PTL_VSEL(S, big, e, PTL_V(S, add)(e, one));                                   \
        PTL_VT(S) f = PTL_V(S, sub)(m, one), d = PTL_V(S, add)(two, f);                   \
        PTL_VT(S) dl = PTL_V(S, sub)(f, PTL_V(S, sub)(d, two)), r = PTL_V(S, div)(one, d); \
        PTL_VT(S) th = PTL_V(S, mul)(f, r);                                               \
        PTL_VT(S) rho = PTL_V(S, fnmadd)(th, dl, PTL_V(S, fnmadd)(th, d, f));             \
        PTL_VT(S) tl = PTL_V(S, mul)(rho, r), t2 = PTL_V(S, mul)(th, th);                 \
        PTL_VT(S) tail = PTL_V(S, mul)(PTL_V(S, mul)(t2, th), PTL_VM_POLY(S, t2, zeta_log_coef)); \
        PTL_VT(S) A = PTL_V(S, mul)(e, PTL_V(S, set1)(PTL_LOG_LN2_HI)), err1, err2;       \
        PTL_VT(S) h1 = zeta_two_sum_##S(A, PTL_V(S, add)(th, th), &err1);                 \
        PTL_VT(S) C = PTL_V(S, fmadd)(e, PTL_V(S, set1)(PTL_LOG_LN2_LO),                  \
                                      PTL_V(S, add)(PTL_V(S, add)(tl, tl), tail));        \
        PTL_VT(S) hi = zeta_two_sum_##S(h1, C, &err2), lo = PTL_V(S, add)(err1, err2);    \
        PTL_VT(S) ph = PTL_V(S, mul)(s, hi);                                              \
        PTL_VT(S) pl = PTL_V(S, fmadd)(s, lo, PTL_V(S, fmsub)(s, hi, ph));                \
        PTL_VT(S) ex = ptl_vm_exp_##S(PTL_V(S, sub)(PTL_V(S, setzero)(), ph));            \
        return PTL_V(S, fnmadd)(ex, pl, ex);                                              \
    }                                                                                     \
    PTL_VATTR(S) static void                                                              \
        zeta_lanes_##S(double *out, const double *sv, const double *qv, int64_t m)        \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0);                                        \
        for (int64_t j = 0; j < m; j += PTL_VLANES(S)) {                                  \
            PTL_VT(S) s = PTL_V(S, loadu)(sv + j), a = PTL_V(S, loadu)(qv + j);           \
            PTL_VT(S) b = zeta_pow_##S(a, s), sum = b;                                    \
            for (int k = 1; k < 10; k++) {                                                \
                a = PTL_V(S, add)(a, one);                                                \
                b = zeta_pow_##S(a, s);                                                   \
                sum = PTL_V(S, add)(sum, b);                                              \
            }                                                                             \
            PTL_VT(S) integral = PTL_V(S, div)(PTL_V(S, mul)(b, a), PTL_V(S, sub)(s, one)); \
            sum = PTL_V(S, add)(sum, PTL_V(S, fnmadd)(PTL_V(S, set1)(0.5), b, integral)); \
            PTL_VT(S) iw = PTL_V(S, div)(one, a), fac = one, k = PTL_V(S, setzero)();     \
            for (int t = 0; t < 12; t++) {                                                \
                fac = PTL_V(S, mul)(fac, PTL_V(S, add)(s, k));                            \
                b = PTL_V(S, mul)(b, iw);                                                 \
                PTL_VT(S) term = PTL_V(S, mul)(PTL_V(S, mul)(fac, b),                     \
                                               PTL_V(S, set1)(zeta_bernoulli[t]));        \
                sum = PTL_V(S, add)(sum, term);                                           \
                k = PTL_V(S, add)(k, one);                                                \
                fac = PTL_V(S, mul)(fac, PTL_V(S, add)(s, k));                            \
                b = PTL_V(S, mul)(b, iw);                                                 \
                k = PTL_V(S, add)(k, one);                                                \
            }                                                                             \
            PTL_V(S, storeu)(out + j, sum);                                               \
        }                                                                                 \
    }
DEFINE_ZETA_LANES(pd)
DEFINE_ZETA_LANES(pd512)
#endif

#define DEFINE_ZETA_LOOP(T, DT)                                                           \
    static void zeta_loop_##DT(char **d, const int64_t *st, int64_t n, const void *extra) \
    {                                                                                     \
        ZETA_BLOCKS(T, d, st, n)                                                          \
        zeta_scalar_loop_##DT(d, st, n, extra);                                           \
    }
#ifdef PTL_HAVE_AVX2_KERNELS
#define ZETA_BLOCKS(T, D, ST, N)                                                          \
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {                                           \
        double sv[ZETA_BLOCK], qv[ZETA_BLOCK], r[ZETA_BLOCK];                             \
        for (int64_t i = 0; i < (N); i += ZETA_BLOCK) {                                   \
            int64_t m = (N) - i < ZETA_BLOCK ? (N) - i : ZETA_BLOCK, mp = (m + 7) / 8 * 8; \
            for (int64_t j = 0; j < m; j++) {                                             \
                double x = *(const T *)((D)[1] + (i + j) * (ST)[1]);                      \
                double q = *(const T *)((D)[2] + (i + j) * (ST)[2]);                      \
                int ok = ZETA_LANE_OK(x, q);                                              \
                sv[j] = ok ? x : 2.0;                                                     \
                qv[j] = ok ? q : 1.0;                                                     \
            }                                                                             \
            for (int64_t j = m; j < mp; j++) {                                            \
                sv[j] = 2.0;                                                              \
                qv[j] = 1.0;                                                              \
            }                                                                             \
            if (ptl_cpu_capability() >= PTL_CPU_AVX512) {                                 \
                zeta_lanes_pd512(r, sv, qv, mp);                                          \
            }                                                                             \
            else {                                                                        \
                zeta_lanes_pd(r, sv, qv, mp);                                             \
            }                                                                             \
            for (int64_t j = 0; j < m; j++) {                                             \
                double x = *(const T *)((D)[1] + (i + j) * (ST)[1]);                      \
                double q = *(const T *)((D)[2] + (i + j) * (ST)[2]);                      \
                double v = ZETA_LANE_OK(x, q) ? r[j] : ptl_zeta_d(x, q);                  \
                *(T *)((D)[0] + (i + j) * (ST)[0]) = (T)v;                                \
            }                                                                             \
        }                                                                                 \
        return;                                                                           \
    }
#else
#define ZETA_BLOCKS(T, D, ST, N)
#endif
DEFINE_ZETA_LOOP(float, f4)
DEFINE_ZETA_LOOP(double, f8)
static const PtlLoop zeta_loops[PTL_DTYPE_COUNT] = {FLOAT_ENTRIES(zeta)};

/* ---- the orthogonal polynomials: [*] x, [*] n -> [*] float (broadcast); see Note
 * [Orthogonal polynomials] ---- */

/* Hermite H (probabilists 0) and He (1) on the CPU: polynomial_math.h's ptl_hermite with
 * the step as one fma, fma(c x, H_j, -(c j) H_(j-1)) (c x and c j exact, (c j) H_(j-1)
 * formed while the previous step runs): one rounding where c (x H_j - j H_(j-1)) takes
 * three, and a quarter of its latency, which bounds the loop */
SPECIAL_INLINE double
hermite_fast(int probabilists, double x, double n)
{
    int64_t k = ptl_poly_degree(n);
    if (k <= 0 || x != x || isinf(x)) {
        return ptl_hermite(probabilists, x, n);
    }
    double c = probabilists ? 1.0 : 2.0, cx = c * x, p = 1.0, q = cx;
    for (int64_t j = 1; j < k && !isinf(q); j++) {
        double r = fma(cx, q, -(c * (double)j) * p);
        p = q;
        q = r;
    }
    return q;
}

/* Chebyshev T, U, V, W (kind 0-3) on the CPU: polynomial_math.h's ptl_chebyshev, whose
 * recurrence (degrees 1-16 inside (-1, 1); to top, 256 for the float32 result, Note
 * [Orthogonal polynomials in lock-step]) takes its step as one fma, fma(2x, p_j, -p_(j-1))
 * (2x exact), inlined: one rounding instead of two, half the latency */
#define POLY_CHEB_MAX_F32 256
SPECIAL_INLINE double
chebyshev_fast(int kind, int shift, int64_t top, double x0, double n)
{
    int64_t k = ptl_poly_degree(n);
    double d, x = ptl_chebyshev_point(x0, shift, &d);
    if (k <= 0 || k > top || !(fabs(x) < 1.0)) {
        return ptl_chebyshev_gap(kind, x, d, n);
    }
    double x2 = 2.0 * x, p = 1.0;
    double q = kind == 0 ? x : kind == 1 ? x2 : kind == 2 ? x2 - 1.0 : x2 + 1.0;
    for (int64_t j = 1; j < k; j++) {
        double r = fma(x2, q, -p);
        p = q;
        q = r;
    }
    return q;
}

/* the float64 (_d) and float32 (_f) per-element formulas of kind KIND, at 2x - 1 if SHIFT */
#define DEFINE_CHEB_FAST(NAME, KIND, SHIFT)                                               \
    SPECIAL_INLINE double NAME##_d(double x, double n)                                    \
    {                                                                                     \
        return chebyshev_fast(KIND, SHIFT, 16, x, n);                                     \
    }                                                                                     \
    SPECIAL_INLINE double NAME##_f(double x, double n)                                    \
    {                                                                                     \
        return chebyshev_fast(KIND, SHIFT, POLY_CHEB_MAX_F32, x, n);                      \
    }
DEFINE_CHEB_FAST(cheb_t_fast, 0, 0)
DEFINE_CHEB_FAST(cheb_u_fast, 1, 0)
DEFINE_CHEB_FAST(cheb_v_fast, 2, 0)
DEFINE_CHEB_FAST(cheb_w_fast, 3, 0)
DEFINE_CHEB_FAST(scheb_t_fast, 0, 1)
DEFINE_CHEB_FAST(scheb_u_fast, 1, 1)
DEFINE_CHEB_FAST(scheb_v_fast, 2, 1)
DEFINE_CHEB_FAST(scheb_w_fast, 3, 1)
#undef DEFINE_CHEB_FAST

/* Legendre P on the CPU: polynomial_math.h's ptl_legendre inlined, the step
 * fma((2j + 1) x, P_j, -j P_(j-1)) / (j + 1) (one rounding fewer) */
SPECIAL_INLINE double
legendre_fast(double x, double n)
{
    int64_t k = ptl_poly_degree(n);
    if (k <= 0 || !(fabs(x) < 1.0)) {
        return ptl_legendre(x, n);
    }
    double p = 1.0, q = x;
    for (int64_t j = 1; j < k; j++) {
        double jj = (double)j;
        double r = fma((2.0 * jj + 1.0) * x, q, -jj * p) / (jj + 1.0);
        p = q;
        q = r;
    }
    return q;
}

/* Laguerre L on the CPU: polynomial_math.h's ptl_laguerre but for the sum of x < 0, whose
 * term's factor (k - i + 1) |x| / i^2 takes the ratio (k - i + 1) / i^2 first (the same
 * three roundings a term, without a division per element: the lanes' divisions were the
 * cost of Laguerre's float32 and float64 loops, Note [Orthogonal polynomials in
 * lock-step]) */
SPECIAL_INLINE double
laguerre_fast(double x, double n)
{
    int64_t k = ptl_poly_degree(n);
    if (k <= 0 || !(x < 0.0) || isinf(x)) {
        return ptl_laguerre(x, n);
    }
    double t = 1.0, sum = 1.0;
    for (int64_t i = 1; i <= k && !isinf(sum); i++) {
        t *= -x * ((double)(k - i + 1) / ((double)i * (double)i));
        sum += t;
    }
    return sum;
}

SPECIAL_INLINE double hermite_h_fast(double x, double n) { return hermite_fast(0, x, n); }
SPECIAL_INLINE double hermite_he_fast(double x, double n) { return hermite_fast(1, x, n); }

/* Note [Orthogonal polynomials in lock-step]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A recurrence's steps are serial, so one element at a time is latency-bound (an fma, or
 * Legendre's and Laguerre's division, per step).  The float32 and float64 loops take
 * POLY_BLOCK elements at a time: those whose degree is the block's first element's and
 * whose x lies where the per-element formulas above run their recurrence (poly_lane_class)
 * are gathered and run together, the inner loop over the elements (which gcc vectorizes:
 * 4 or 8 doubles per instruction, the steps of different elements overlapping); the others
 * take the per-element formula.  The lanes perform the per-element formula's operations in
 * its order (fma where it has fma), so the bits are the same; Hermite and Laguerre stop at
 * the first infinite value, the lanes run on (every 32 steps they stop once every lane is
 * infinite or NaN) and a lane that ends infinite or NaN is recomputed by the per-element
 * formula (from an infinite value on, a step gives +-inf or NaN, never a finite number).
 * Where the CPU's formulas differ from polynomial_math.h's (the CUDA kernels'), the lanes
 * and the per-element formulas here agree, so no value depends on its neighbours:
 *   - float32 (float16 and bfloat16 compute in float32) Chebyshev of degree 17 to
 *     POLY_CHEB_MAX_F32 inside (-1, 1) runs the fma recurrence in double where
 *     polynomial_math.h takes the closed forms (acos, then cos or sin): its error, at most
 *     about k^2 / 2 double ulps of the size E of Note [Orthogonal polynomials] near +-1, is
 *     below 2e-11 E at k = 256, so the float32 rounding is the same but for ties
 *     (tests/aten/test_special_poly_lanes.py checks it against mpmath at those degrees);
 *   - float64 Chebyshev keeps the closed forms from 17 on (the recurrence's k^2 / 2 ulps
 *     would pass the tests' 8 + 2k), but by vector acos, sin and cos (cheb_closed), every
 *     such element of a block whatever its degree, with AVX2 (libm's without); float32's
 *     above POLY_CHEB_MAX_F32 take the same vector forms, rounded once to float32 (libm's
 *     asin, sin and division an element had made chebyshev_u of degree 1000 on 16K float32
 *     0.68x PyTorch's time, one thread, Zen 4);
 *   - Laguerre's sum at x < 0 is laguerre_fast's.
 * A block whose n are all equal (a broadcast n, stride 0, or a full one) and whose x are all
 * in the lanes' domain skips the gathering; Laguerre's then runs both of its lists over the
 * whole block when it has x of both signs (gathering the two cost more than the lanes of
 * the PyTorch benchmark's degrees) and takes each element's from its list. */
#define POLY_BLOCK 256
#define POLY_ANY INT64_MAX   /* no top degree */
enum { POLY_CHEB, POLY_HERMITE, POLY_LAGUERRE, POLY_LEGENDRE };

/* where the lanes run x of degree k >= 1: 0 not (the per-element formula), 1 the
 * recurrence, 2 Laguerre's sum of x < 0 */
SPECIAL_INLINE int
poly_lane_class(int fam, double x, int64_t k, int64_t cheb_max)
{
    int live = (k >= 1) & (k <= cheb_max);
    switch (fam) {
    case POLY_CHEB: return live & (fabs(x) < 1.0);
    case POLY_LEGENDRE: return live & (fabs(x) < 1.0);
    case POLY_HERMITE: return live & (fabs(x) < INFINITY);
    default: return (live & (fabs(x) < INFINITY)) << (x < 0.0);
    }
}

/* poly_lane_class(fam, x, k, .) != 0 given k's part of it, without a branch */
SPECIAL_INLINE int
poly_lane_first(int fam, double x)
{
    switch (fam) {
    case POLY_CHEB: return fabs(x) < 1.0;
    case POLY_LEGENDRE: return fabs(x) < 1.0;
    case POLY_HERMITE: return fabs(x) < INFINITY;
    default: return fabs(x) < INFINITY;   /* Laguerre: either list (see the loops) */
    }
}

/* whether some of v[0..m) is infinite or NaN */
SPECIAL_INLINE int
poly_some_nonfinite(const double *v, int m)
{
    int bad = 0;
    for (int l = 0; l < m; l++) {
        bad |= !(fabs(v[l]) < INFINITY);
    }
    return bad;
}

/* whether none of v[0..m) is finite (the lanes of Hermite and Laguerre may stop) */
SPECIAL_INLINE int
poly_none_finite(const double *v, int m)
{
    int fin = 0;
    for (int l = 0; l < m; l++) {
        fin |= fabs(v[l]) < INFINITY;
    }
    return !fin;
}

/* the steps j = J0, ..., JN - 1 of p, q -> q, STEP(s, q, p) over the m lanes, two a pass
 * (p and q stay in registers between them); CO(j, s) sets step j's coefficients for slot s;
 * with CHK, every 32 steps, a stop once no lane is finite */
#define POLY_STEPS(J0, JN, CO, STEP, CHK)                                                 \
    {                                                                                     \
        int64_t j = (J0);                                                                 \
        for (; j + 1 < (JN); j += 2) {                                                    \
            CO(j, 0)                                                                      \
            CO(j + 1, 1)                                                                  \
            for (int l = 0; l < m; l++) {                                                 \
                double r0 = STEP(0, q[l], p[l]);                                          \
                double r1 = STEP(1, r0, q[l]);                                            \
                p[l] = r0;                                                                \
                q[l] = r1;                                                                \
            }                                                                             \
            if ((CHK) && ((j - (J0)) & 31) == 30 && poly_none_finite(q, m)) {             \
                break;                                                                    \
            }                                                                             \
        }                                                                                 \
        if (j < (JN)) {                                                                   \
            CO(j, 0)                                                                      \
            for (int l = 0; l < m; l++) {                                                 \
                double r0 = STEP(0, q[l], p[l]);                                          \
                p[l] = q[l];                                                              \
                q[l] = r0;                                                                \
            }                                                                             \
        }                                                                                 \
    }
#define CHEB_CO(J, S)
#define CHEB_STEP(S, Q, P) fma(a[l], (Q), -(P))
#define HERMITE_CO(J, S) double cj##S = -(c * (double)(J));
#define HERMITE_STEP(S, Q, P) fma(a[l], (Q), cj##S * (P))
#define LEGENDRE_CO(J, S)                                                                 \
    double jj##S = (double)(J), b##S = 2.0 * jj##S + 1.0, nj##S = -jj##S, dj##S = jj##S + 1.0;
#define LEGENDRE_STEP(S, Q, P) (fma(b##S * a[l], (Q), nj##S * (P)) / dj##S)
#define LAGUERRE_CO(J, S)                                                                 \
    double jj##S = (double)(J), b##S = 2.0 * jj##S + 1.0, dj##S = jj##S + 1.0;
#define LAGUERRE_STEP(S, Q, P) (((b##S - a[l]) * (Q) - jj##S * (P)) / dj##S)

/* v[0..m) = p_k(v[l]), k >= 1, for family fam (kind: Chebyshev's kind, Hermite's
 * probabilists flag; list 2: Laguerre's x < 0 sum), the per-element formulas' steps */
SPECIAL_INLINE void
poly_lanes_body(int fam, int kind, int list, double *v, int m, int64_t k)
{
    double a[POLY_BLOCK], p[POLY_BLOCK], *q = v;   /* the values in place */
    for (int l = 0; l < m; l++) {
        double x = v[l], x2 = 2.0 * x;
        a[l] = fam == POLY_CHEB ? x2 : fam == POLY_HERMITE ? (kind ? x : x2) : x;
        p[l] = 1.0;
        q[l] = fam == POLY_CHEB ? (kind == 0 ? x : kind == 1 ? x2 : kind == 2 ? x2 - 1.0
                                                                           : x2 + 1.0)
             : fam == POLY_HERMITE ? a[l] : fam == POLY_LAGUERRE ? (list == 2 ? 1.0 : 1.0 - x)
                                                                : x;
    }
    if (fam == POLY_CHEB) {
        POLY_STEPS(1, k, CHEB_CO, CHEB_STEP, 0)
    }
    else if (fam == POLY_HERMITE) {
        double c = kind ? 1.0 : 2.0;
        POLY_STEPS(1, k, HERMITE_CO, HERMITE_STEP, 1)
    }
    else if (fam == POLY_LEGENDRE) {
        POLY_STEPS(1, k, LEGENDRE_CO, LEGENDRE_STEP, 0)
    }
    else if (list == 1) {   /* Laguerre, x >= 0 */
        POLY_STEPS(1, k, LAGUERRE_CO, LAGUERRE_STEP, 1)
    }
    else {   /* Laguerre, x < 0: the term t in p, the sum in q (laguerre_fast's) */
        for (int64_t i = 1; i <= k; i++) {
            double ci = (double)(k - i + 1) / ((double)i * (double)i);
            for (int l = 0; l < m; l++) {
                p[l] *= -a[l] * ci;
                q[l] += p[l];
            }
            if ((i & 31) == 0 && poly_none_finite(q, m)) {
                break;
            }
        }
    }
}
#undef POLY_STEPS
#undef CHEB_CO
#undef CHEB_STEP
#undef HERMITE_CO
#undef HERMITE_STEP
#undef LEGENDRE_CO
#undef LEGENDRE_STEP
#undef LAGUERRE_CO
#undef LAGUERRE_STEP

#ifdef PTL_HAVE_AVX2_KERNELS
PTL_VATTR(pd512) static void
poly_lanes_pd512(int fam, int kind, int list, double *v, int m, int64_t k)
{
    poly_lanes_body(fam, kind, list, v, m, k);
}
PTL_VATTR(pd) static void
poly_lanes_pd(int fam, int kind, int list, double *v, int m, int64_t k)
{
    poly_lanes_body(fam, kind, list, v, m, k);
}
#endif

static void
poly_lanes(int fam, int kind, int list, double *v, int m, int64_t k)
{
    if (m == 0) {
        return;
    }
#ifdef PTL_HAVE_AVX2_KERNELS
    if (ptl_cpu_capability() >= PTL_CPU_AVX512) {
        poly_lanes_pd512(fam, kind, list, v, m, k);
        return;
    }
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        poly_lanes_pd(fam, kind, list, v, m, k);
        return;
    }
#endif
    poly_lanes_body(fam, kind, list, v, m, k);
}

/* float64 Chebyshev of degree k > 16 inside (-1, 1): polynomial_math.h's closed forms
 * (ptl_chebyshev_closed: at a = |x|, theta = 2 asin sqrt(d / 2), d = 1 - a exact, the sign
 * and V <-> W of x < 0 put back) and the sine or cosine of (k, k + 1 or k + 1/2) theta, by
 * unary.c's vector asin (0.6 ulp) and vec_math.h's vector sin and cos (0.77 ulp; libm's on
 * their slow lanes) where libm's took most of the time: the phase's k ulps dominate either
 * way (Note [Orthogonal polynomials]).  v[l] = p_k(v[l]) (at 2 v[l] - 1 when shift), k =
 * kv[l], l < m; 0 without AVX2 (the caller takes polynomial_math.h's formulas) */
#ifdef PTL_HAVE_AVX2_KERNELS
/* (unary.c's float32 maps of the set are not wanted here) */
#define DEFINE_F4_IN_DOUBLE_MAP(F, G, S)
DEFINE_UNARY_VEC_TRIG_D(pd)
DEFINE_UNARY_VEC_TRIG_D(pd512)
#undef DEFINE_F4_IN_DOUBLE_MAP
#define DEFINE_CHEB_CLOSED(S)                                                             \
    PTL_VATTR(S) static void                                                              \
        cheb_closed_##S(int kind, int shift, double *v, const double *kv, int m)          \
    {                                                                                     \
        const int L = PTL_VLANES(S);                                                      \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0), half = PTL_V(S, set1)(0.5);            \
        const PTL_VT(S) add = PTL_V(S, set1)(kind == 0 ? 0.0 : kind == 1 ? 1.0 : 0.5);    \
        for (int j = 0; j < m; j += L) {                                                  \
            double ab[8], db[8], kb[8], sb[8], fb[8], rb[8];                              \
            int cnt = m - j < L ? m - j : L;                                              \
            for (int l = 0; l < L; l++) {                                                 \
                double x = ptl_chebyshev_point(l < cnt ? v[j + l] : 0.0, shift, &db[l]);  \
                kb[l] = l < cnt ? kv[j + l] : 17.0;                                       \
                ab[l] = fabs(x);                                                          \
                sb[l] = x > 0 ? 1.0 : ptl_poly_parity((int64_t)kb[l]);                    \
                fb[l] = x < 0 ? 1.0 : 0.0;   /* V <-> W, below */                         \
            }                                                                             \
            PTL_VT(S) a = PTL_V(S, loadu)(ab), d = PTL_V(S, loadu)(db), sn, cs, r;        \
            PTL_VT(S) th = ptl_vm_asin_##S(PTL_V(S, sqrt)(PTL_V(S, mul)(half, d)));      \
            th = PTL_V(S, add)(th, th);                                                   \
            PTL_VT(S) arg = PTL_V(S, mul)(PTL_V(S, add)(PTL_V(S, loadu)(kb), add), th);   \
            PTL_VMT(S) slow = ptl_vm_sincos_fast_##S(arg, &sn, &cs);                      \
            if (kind != 1) {                                                              \
                cs = ptl_vm_patch_##S(cs, arg, slow, cos);                                \
            }                                                                             \
            if (kind != 0) {                                                              \
                sn = ptl_vm_patch_##S(sn, arg, slow, sin);                                \
            }                                                                             \
            PTL_VT(S) dp = PTL_V(S, add)(one, a);                                         \
            if (kind == 0) {                                                              \
                r = cs;                                                                   \
            }                                                                             \
            else if (kind == 1) {                                                         \
                r = PTL_V(S, div)(sn, PTL_V(S, sqrt)(PTL_V(S, mul)(d, dp)));              \
            }                                                                             \
            else {   /* V at x >= 0 and W at x < 0: cos; the others sin */                \
                PTL_VT(S) rc = PTL_V(S, div)(cs, PTL_V(S, sqrt)(PTL_V(S, mul)(half, dp))); \
                PTL_VT(S) rs = PTL_V(S, div)(sn, PTL_V(S, sqrt)(PTL_V(S, mul)(half, d))); \
                PTL_VMT(S) flip = PTL_VCMP(S, PTL_V(S, loadu)(fb), half, _CMP_GT_OQ);     \
                r = kind == 2 ? PTL_VSEL(S, flip, rc, rs) : PTL_VSEL(S, flip, rs, rc);    \
            }                                                                             \
            PTL_V(S, storeu)(rb, r);                                                      \
            for (int l = 0; l < cnt; l++) {                                               \
                v[j + l] = sb[l] * rb[l];                                                 \
            }                                                                             \
        }                                                                                 \
    }
DEFINE_CHEB_CLOSED(pd)
DEFINE_CHEB_CLOSED(pd512)
#undef DEFINE_CHEB_CLOSED
#endif

static int
cheb_closed(int kind, int shift, double *v, const double *kv, int m)
{
#ifdef PTL_HAVE_AVX2_KERNELS
    if (ptl_cpu_capability() >= PTL_CPU_AVX512) {
        cheb_closed_pd512(kind, shift, v, kv, m);
        return 1;
    }
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        cheb_closed_pd(kind, shift, v, kv, m);
        return 1;
    }
#endif
    (void)kind, (void)shift, (void)v, (void)kv, (void)m;
    return 0;
}

/* the float32 and float64 loops of Note [Orthogonal polynomials in lock-step]: FN the
 * per-element formula (of x, not 2x - 1 where SHIFT), CHEB_MAX the lanes' top Chebyshev
 * degree, CLOSED (float64 Chebyshev) the closed forms' list; xs: the block's x, 2x - 1
 * where SHIFT; v[c]: list c's (c 0: the per-element formula's; 3: the closed forms', of
 * degrees kv) */
#define DEFINE_POLY_BLOCK_LOOP(NAME, T, DT, FAM, KIND, SHIFT, CHEB_MAX, FN, CLOSED)       \
    SPECIAL_FMA_CLONES static void                                                        \
    NAME##_loop_##DT(char **d, const int64_t *s, int64_t n, const void *extra)            \
    {                                                                                     \
        double x[POLY_BLOCK], nv[POLY_BLOCK], xs[POLY_BLOCK], v[4][POLY_BLOCK];           \
        double kv[POLY_BLOCK];                                                            \
        int at[4][POLY_BLOCK];                                                            \
        char *o = d[0];                                                                   \
        const char *xp = d[1], *np = d[2];                                                \
        const int64_t so = s[0], sx = s[1], sn = s[2];                                    \
        (void)extra;                                                                      \
        for (int64_t i = 0; i < n; i += POLY_BLOCK) {                                     \
            int m = (int)(n - i < POLY_BLOCK ? n - i : POLY_BLOCK), cnt[4] = {0, 0, 0, 0};\
            /* x, xs and (the common case: contiguous, one degree) n compared in place */ \
            int dense = sx == (int64_t)sizeof(T) && sn == (int64_t)sizeof(T);             \
            const T *nc = (const T *)np + i;                                              \
            if (dense) {                                                                  \
                const T *xc = (const T *)xp + i;                                          \
                for (int j = 0; j < m; j++) {                                             \
                    double xv = (double)xc[j];                                            \
                    x[j] = xv;                                                            \
                    xs[j] = (SHIFT) ? 2.0 * xv - 1.0 : xv;                                \
                }                                                                         \
            }                                                                             \
            else {                                                                        \
                for (int j = 0; j < m; j++) {                                             \
                    x[j] = (double)*(const T *)(xp + (i + j) * sx);                       \
                    nv[j] = (double)*(const T *)(np + (i + j) * sn);                      \
                    xs[j] = (SHIFT) ? 2.0 * x[j] - 1.0 : x[j];                            \
                }                                                                         \
            }                                                                             \
            double n0 = (double)*(const T *)(np + i * sn);                                \
            int64_t k = ptl_poly_degree(n0);                                              \
            int in = k >= 1 && k <= (CHEB_MAX), neg = 0, pos = 0;                         \
            for (int j = 0; j < m; j++) {                                                 \
                in &= ((dense ? (double)nc[j] : nv[j]) == n0) & poly_lane_first(FAM, xs[j]);\
                neg |= xs[j] < 0.0;                                                       \
                pos |= !(xs[j] < 0.0);                                                    \
            }                                                                             \
            if (dense && !in) {                                                           \
                for (int j = 0; j < m; j++) {                                             \
                    nv[j] = (double)nc[j];                                                \
                }                                                                         \
            }                                                                             \
            if (in && (FAM) == POLY_LAGUERRE && neg) {                                    \
                for (int j = 0; j < m; j++) {                                             \
                    v[2][j] = xs[j];                                                      \
                }                                                                         \
                poly_lanes(FAM, KIND, 2, v[2], m, k);                                     \
                if (pos) {                                                                \
                    poly_lanes(FAM, KIND, 1, xs, m, k);                                   \
                }                                                                         \
                for (int j = 0; j < m; j++) {                                             \
                    xs[j] = x[j] < 0.0 ? v[2][j] : xs[j];                                 \
                }                                                                         \
            }                                                                             \
            else if (in) {                                                                \
                poly_lanes(FAM, KIND, 1, xs, m, k);                                       \
            }                                                                             \
            if (in) {                                                                     \
                if (!poly_some_nonfinite(xs, m)) {                                        \
                    for (int j = 0; j < m; j++) {                                         \
                        *(T *)(o + (i + j) * so) = (T)xs[j];                              \
                    }                                                                     \
                    continue;                                                             \
                }                                                                         \
                for (int j = 0; j < m; j++) {                                             \
                    at[1][j] = j;                                                         \
                    v[1][j] = xs[j];                                                      \
                    nv[j] = n0;   /* (all equal, any layout) */                           \
                }                                                                         \
                cnt[1] = m;                                                               \
            }                                                                             \
            else {                                                                        \
                int c0 = 0, c1 = 0, c2 = 0, c3 = 0;                                       \
                for (int j = 0; j < m; j++) {                                             \
                    int c = nv[j] == n0 || ptl_poly_degree(nv[j]) == k                    \
                                ? poly_lane_class(FAM, xs[j], k, CHEB_MAX) : 0;           \
                    int64_t kj = (CLOSED) ? ptl_poly_degree(nv[j]) : 0;                   \
                    int closed = (CLOSED) && kj > (CHEB_MAX) && fabs(xs[j]) < 1.0;        \
                    c = closed ? 3 : c;                                                   \
                    at[0][c0] = j;                                                        \
                    at[1][c1] = j;                                                        \
                    at[2][c2] = j;                                                        \
                    v[1][c1] = xs[j];                                                     \
                    v[2][c2] = xs[j];                                                     \
                    if (CLOSED) {                                                         \
                        at[3][c3] = j;                                                    \
                        v[3][c3] = x[j];                                                  \
                        kv[c3] = (double)kj;                                              \
                    }                                                                     \
                    c0 += c == 0;                                                         \
                    c1 += c == 1;                                                         \
                    c2 += c == 2;                                                         \
                    c3 += c == 3;                                                         \
                }                                                                         \
                cnt[0] = c0;                                                              \
                cnt[1] = c1;                                                              \
                cnt[2] = c2;                                                              \
                cnt[3] = c3;                                                              \
                for (int t = 0; t < cnt[0]; t++) {                                        \
                    int j = at[0][t];                                                     \
                    *(T *)(o + (i + j) * so) = (T)FN(x[j], nv[j]);                        \
                }                                                                         \
                poly_lanes(FAM, KIND, 1, v[1], cnt[1], k);                                \
                poly_lanes(FAM, KIND, 2, v[2], cnt[2], k);                                \
                if (CLOSED && !cheb_closed(KIND, SHIFT, v[3], kv, cnt[3])) {              \
                    for (int t = 0; t < cnt[3]; t++) {                                    \
                        v[3][t] = FN(x[at[3][t]], nv[at[3][t]]);                          \
                    }                                                                     \
                }                                                                         \
            }                                                                             \
            for (int c = 1; c <= 3; c++) {                                                \
                for (int t = 0; t < cnt[c]; t++) {                                        \
                    int j = at[c][t];                                                     \
                    double r = v[c][t];                                                   \
                    r = fabs(r) < INFINITY ? r : FN(x[j], nv[j]);                         \
                    *(T *)(o + (i + j) * so) = (T)r;                                      \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
    }

/* the per-element loops (float16 and bfloat16) */
#define DEFINE_POLYNOMIAL_FMA_LOOP(NAME, T, DT, LOAD, STORE, F)                           \
    SPECIAL_FMA_CLONES static void                                                        \
    NAME##_loop_##DT(char **d, const int64_t *s, int64_t n, const void *extra)            \
    {                                                                                     \
        (void)extra;                                                                      \
        for (int64_t i = 0; i < n; i++) {                                                 \
            const T a = *(const T *)(d[1] + i * s[1]);                                    \
            const T b = *(const T *)(d[2] + i * s[2]);                                    \
            *(T *)(d[0] + i * s[0]) = STORE(F(LOAD(a), LOAD(b)));                         \
        }                                                                                 \
    }
#define DEFINE_POLYNOMIAL_FMA(NAME, FN4, FN8, FAM, KIND, SHIFT, CHEB_MAX_F4, CHEB_MAX_F8) \
    SPECIAL_INLINE float NAME##_in_f(float x, float n)                                    \
    {                                                                                     \
        return (float)FN4((double)x, (double)n);                                          \
    }                                                                                     \
    DEFINE_POLYNOMIAL_FMA_LOOP(NAME, ptl_half, f2, PTL_LOAD_f2, PTL_STORE_f2, NAME##_in_f) \
    DEFINE_POLYNOMIAL_FMA_LOOP(NAME, ptl_bf16, bf, PTL_LOAD_bf, PTL_STORE_bf, NAME##_in_f) \
    DEFINE_POLY_BLOCK_LOOP(NAME, float, f4, FAM, KIND, SHIFT, CHEB_MAX_F4, FN4,           \
                           (FAM) == POLY_CHEB)                                            \
    DEFINE_POLY_BLOCK_LOOP(NAME, double, f8, FAM, KIND, SHIFT, CHEB_MAX_F8, FN8,          \
                           (FAM) == POLY_CHEB)                                            \
    static const PtlLoop NAME##_loops[PTL_DTYPE_COUNT] = {FLOAT_ENTRIES(NAME)};
#define DEFINE_CHEBYSHEV(NAME, FN, KIND, SHIFT)                                           \
    DEFINE_POLYNOMIAL_FMA(NAME, FN##_f, FN##_d, POLY_CHEB, KIND, SHIFT, POLY_CHEB_MAX_F32, 16)
#define DEFINE_RECURRENCE(NAME, FN, FAM, KIND)                                            \
    DEFINE_POLYNOMIAL_FMA(NAME, FN, FN, FAM, KIND, 0, POLY_ANY, POLY_ANY)

DEFINE_CHEBYSHEV(chebyshev_polynomial_t, cheb_t_fast, 0, 0)
DEFINE_CHEBYSHEV(chebyshev_polynomial_u, cheb_u_fast, 1, 0)
DEFINE_CHEBYSHEV(chebyshev_polynomial_v, cheb_v_fast, 2, 0)
DEFINE_CHEBYSHEV(chebyshev_polynomial_w, cheb_w_fast, 3, 0)
DEFINE_CHEBYSHEV(shifted_chebyshev_polynomial_t, scheb_t_fast, 0, 1)
DEFINE_CHEBYSHEV(shifted_chebyshev_polynomial_u, scheb_u_fast, 1, 1)
DEFINE_CHEBYSHEV(shifted_chebyshev_polynomial_v, scheb_v_fast, 2, 1)
DEFINE_CHEBYSHEV(shifted_chebyshev_polynomial_w, scheb_w_fast, 3, 1)
DEFINE_RECURRENCE(hermite_polynomial_h, hermite_h_fast, POLY_HERMITE, 0)
DEFINE_RECURRENCE(hermite_polynomial_he, hermite_he_fast, POLY_HERMITE, 1)
DEFINE_RECURRENCE(laguerre_polynomial_l, laguerre_fast, POLY_LAGUERRE, 0)
DEFINE_RECURRENCE(legendre_polynomial_p, legendre_fast, POLY_LEGENDRE, 0)
#undef DEFINE_CHEBYSHEV
#undef DEFINE_RECURRENCE

static const int self_only[1] = {0};
static const int self_other[2] = {0, 1};

/* Runs op (functional or out=) over its one or two tensor inputs with `loops`; integer and
 * bool inputs compute in the default float dtype, float16 and bfloat16 in float32. */
static int
special_run(const PtlOperator *op, PtlIValue *s, int ninputs, const PtlLoop *loops)
{
    PtlIterConfig cfg = ptl_iter_config();
    double unused = 0.0;
    cfg.int_to_float = 1;
    return ptl_pointwise_halves_in_float(op, s, ninputs, ninputs == 1 ? self_only : self_other,
                                         cfg, loops, &unused, 1);
}

#define DEFINE_SPECIAL_KERNEL(NAME, NINPUTS)                                              \
    static int                                                                            \
    NAME##_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)                 \
    {                                                                                     \
        (void)ks;                                                                         \
        return special_run(op, s, (NINPUTS), NAME##_loops);                               \
    }
DEFINE_SPECIAL_KERNEL(zeta, 2)
DEFINE_SPECIAL_KERNEL(entr, 1)
DEFINE_SPECIAL_KERNEL(ndtr, 1)
DEFINE_SPECIAL_KERNEL(log_ndtr, 1)
DEFINE_SPECIAL_KERNEL(ndtri, 1)
DEFINE_SPECIAL_KERNEL(erfcx, 1)
DEFINE_SPECIAL_KERNEL(bessel_j0, 1)
DEFINE_SPECIAL_KERNEL(bessel_j1, 1)
DEFINE_SPECIAL_KERNEL(bessel_y0, 1)
DEFINE_SPECIAL_KERNEL(bessel_y1, 1)
DEFINE_SPECIAL_KERNEL(modified_bessel_k0, 1)
DEFINE_SPECIAL_KERNEL(modified_bessel_k1, 1)
DEFINE_SPECIAL_KERNEL(scaled_modified_bessel_k0, 1)
DEFINE_SPECIAL_KERNEL(scaled_modified_bessel_k1, 1)
DEFINE_SPECIAL_KERNEL(spherical_bessel_j0, 1)
DEFINE_SPECIAL_KERNEL(airy_ai, 1)
DEFINE_SPECIAL_KERNEL(chebyshev_polynomial_t, 2)
DEFINE_SPECIAL_KERNEL(chebyshev_polynomial_u, 2)
DEFINE_SPECIAL_KERNEL(chebyshev_polynomial_v, 2)
DEFINE_SPECIAL_KERNEL(chebyshev_polynomial_w, 2)
DEFINE_SPECIAL_KERNEL(shifted_chebyshev_polynomial_t, 2)
DEFINE_SPECIAL_KERNEL(shifted_chebyshev_polynomial_u, 2)
DEFINE_SPECIAL_KERNEL(shifted_chebyshev_polynomial_v, 2)
DEFINE_SPECIAL_KERNEL(shifted_chebyshev_polynomial_w, 2)
DEFINE_SPECIAL_KERNEL(hermite_polynomial_h, 2)
DEFINE_SPECIAL_KERNEL(hermite_polynomial_he, 2)
DEFINE_SPECIAL_KERNEL(laguerre_polynomial_l, 2)
DEFINE_SPECIAL_KERNEL(legendre_polynomial_p, 2)
#undef DEFINE_SPECIAL_KERNEL

/* the functional and out= overloads of one op share its kernel */
#define SPECIAL_REGS(NAME)                                                                \
    {PTL_OP_special_##NAME, PTL_KEY_CPU, NAME##_cpu},                                     \
        {PTL_OP_special_##NAME##_out, PTL_KEY_CPU, NAME##_cpu}

static const PtlKernelReg special_cpu[] = {
    SPECIAL_REGS(zeta), SPECIAL_REGS(entr), SPECIAL_REGS(ndtr), SPECIAL_REGS(log_ndtr),
    SPECIAL_REGS(ndtri), SPECIAL_REGS(erfcx), SPECIAL_REGS(bessel_j0), SPECIAL_REGS(bessel_j1),
    SPECIAL_REGS(bessel_y0), SPECIAL_REGS(bessel_y1),
    {PTL_OP_special_modified_bessel_i0, PTL_KEY_CPU, ptl_unary_i0_cpu},
    {PTL_OP_special_modified_bessel_i0_out, PTL_KEY_CPU, ptl_unary_i0_cpu},
    {PTL_OP_special_modified_bessel_i1, PTL_KEY_CPU, ptl_unary_special_i1_cpu},
    {PTL_OP_special_modified_bessel_i1_out, PTL_KEY_CPU, ptl_unary_special_i1_cpu},
    SPECIAL_REGS(modified_bessel_k0),
    SPECIAL_REGS(modified_bessel_k1), SPECIAL_REGS(scaled_modified_bessel_k0),
    SPECIAL_REGS(scaled_modified_bessel_k1), SPECIAL_REGS(spherical_bessel_j0),
    SPECIAL_REGS(airy_ai), SPECIAL_REGS(chebyshev_polynomial_t),
    SPECIAL_REGS(chebyshev_polynomial_u), SPECIAL_REGS(chebyshev_polynomial_v),
    SPECIAL_REGS(chebyshev_polynomial_w), SPECIAL_REGS(shifted_chebyshev_polynomial_t),
    SPECIAL_REGS(shifted_chebyshev_polynomial_u), SPECIAL_REGS(shifted_chebyshev_polynomial_v),
    SPECIAL_REGS(shifted_chebyshev_polynomial_w), SPECIAL_REGS(hermite_polynomial_h),
    SPECIAL_REGS(hermite_polynomial_he), SPECIAL_REGS(laguerre_polynomial_l),
    SPECIAL_REGS(legendre_polynomial_p),
};
#undef SPECIAL_REGS
PTL_DEFINE_REGISTER(special_cpu)
