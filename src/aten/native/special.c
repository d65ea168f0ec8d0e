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
 * Chebyshev's, Hermite's and Legendre's, whose faster CPU formulas are below.
 * Integer and bool inputs compute in the default float dtype, as in PyTorch.  See Note
 * [erfcx and the normal distribution], Note [Bessel functions of real argument] and Note
 * [Orthogonal polynomials]. */
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

#define DEFINE_SPECIAL_UNARY(NAME, FN)                                                    \
    static inline float NAME##_in_f(float x, const void *e)                               \
    {                                                                                     \
        (void)e;                                                                          \
        return (float)FN((double)x);                                                      \
    }                                                                                     \
    static inline double NAME##_in_d(double x, const void *e)                             \
    {                                                                                     \
        (void)e;                                                                          \
        return FN(x);                                                                     \
    }                                                                                     \
    DEFINE_UNARY_LOOP(NAME, ptl_half, ptl_half, f2, PTL_LOAD_f2, PTL_STORE_f2, NAME##_in_f) \
    DEFINE_UNARY_LOOP(NAME, ptl_bf16, ptl_bf16, bf, PTL_LOAD_bf, PTL_STORE_bf, NAME##_in_f) \
    DEFINE_UNARY_LOOP(NAME, float, float, f4, PTL_ID, PTL_ID, NAME##_in_f)                \
    DEFINE_UNARY_LOOP(NAME, double, double, f8, PTL_ID, PTL_ID, NAME##_in_d)              \
    static const PtlLoop NAME##_loops[PTL_DTYPE_COUNT] = {FLOAT_ENTRIES(NAME)};

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

/* float32 and float64 ndtr, log_ndtr and erfcx with AVX2, any layout: th for a block of
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
/* float32: th's rounding costs under 2e-13 of the result, no correction; th clamped at
 * 10.0625, where erfc(th) / 2 already rounds to 0 in float32 (the vector erfc's far lanes
 * are its slow ones; NaN stays NaN) */
#define NDTR_PRE(X) (-(X) * PTL_RSQRT2_HI)
#define NDTR_HALF_ERFC(X, E) (0.5 * (E))
#define NDTR_PRE_F(X) ptl_ndtr_f32_arg(X)
DEFINE_ERFC_BLOCKS(ndtr, float, f4, NDTR_PRE_F, NDTR_HALF_ERFC, pd)
DEFINE_ERFC_BLOCKS(ndtr, double, f8, NDTR_PRE, ptl_ndtr_from_erfc, pd)
DEFINE_ERFC_BLOCKS(ndtr, float, f4, NDTR_PRE_F, NDTR_HALF_ERFC, pd512)
DEFINE_ERFC_BLOCKS(ndtr, double, f8, NDTR_PRE, ptl_ndtr_from_erfc, pd512)
/* log_ndtr: erfc(|x| / sqrt(2)) gives ndtr(-|x|) */
#define LOG_NDTR_PRE(X) (fabs(X) * PTL_RSQRT2_HI)
DEFINE_ERFC_BLOCK_KINDS(log_ndtr, LOG_NDTR_PRE, ptl_log_ndtr_from_erfc,
                        ptl_log_ndtr_from_erfc)
/* erfcx: e^(x^2) erfc(x) below 26 (x^2 = s + lo exactly: e^s (1 + lo)), as
 * gaussian_math.h's ptl_erfcx_d but with the vector erfc; from 26 on (and NaN) that
 * function's asymptotic series, the lane clamped at 26 */
#define ERFCX_PRE(X) ((X) > 26.0 ? 26.0 : (X))
DEFINE_ERFC_BLOCK_KINDS(erfcx, ERFCX_PRE, ptl_erfcx_from_erfc, ptl_erfcx_from_erfc)
/* spherical j0: sin x / x from the vector sin, bessel_math.h's Taylor polynomial below
 * |x| = 1/2 and 0 at +-inf (ptl_spherical_bessel_j0_from_sin), those out of line: inlined,
 * gcc if-converted the block's loop into evaluating the polynomial's seven divisions for
 * every element (2x the time) */
__attribute__((noinline)) static double
sph_j0_small(double x)
{
    return ptl_spherical_bessel_j0_from_sin(x, 0.0);   /* |x| < 1/2 or inf: no sin */
}
#define SPH_J0_PRE(X) (X)
#define SPH_J0_FIN(X, S) (fabs(X) < 0.5 || isinf(X) ? sph_j0_small(X) : (S) / (X))
DEFINE_MAP_BLOCKS(spherical_bessel_j0, float, f4, SPH_J0_PRE, sin, SPH_J0_FIN, pd)
DEFINE_MAP_BLOCKS(spherical_bessel_j0, double, f8, SPH_J0_PRE, sin, SPH_J0_FIN, pd)
DEFINE_MAP_BLOCKS(spherical_bessel_j0, float, f4, SPH_J0_PRE, sin, SPH_J0_FIN, pd512)
DEFINE_MAP_BLOCKS(spherical_bessel_j0, double, f8, SPH_J0_PRE, sin, SPH_J0_FIN, pd512)
/* element strides (every layout takes the vector erfc: the bits do not depend on it) */
#define ERFC_BLOCKS(NAME, T, DT, D, S, N)                                                 \
    if ((S)[0] % (int64_t)sizeof(T) == 0 && (S)[1] % (int64_t)sizeof(T) == 0 &&           \
        ptl_cpu_capability() >= PTL_CPU_AVX2) {                                           \
        int64_t so = (S)[0] / (int64_t)sizeof(T), sa = (S)[1] / (int64_t)sizeof(T);       \
        if (ptl_cpu_capability() >= PTL_CPU_AVX512) {                                     \
            NAME##_blocks_##DT##_pd512((T *)(D)[0], so, (const T *)(D)[1], sa, (N));      \
        }                                                                                 \
        else {                                                                            \
            NAME##_blocks_##DT##_pd((T *)(D)[0], so, (const T *)(D)[1], sa, (N));         \
        }                                                                                 \
        return;                                                                           \
    }

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
#endif

/* NAME's loops: the blocks with AVX2, else FN (double) per element */
#define DEFINE_ERFC_LOOPS(NAME, FN_F, FN)                                                 \
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
        ERFC_BLOCKS(NAME, float, f4, d, s, n)                                             \
        NAME##_strided_loop_f4(d, s, n, extra);                                           \
    }                                                                                     \
    static void NAME##_loop_f8(char **d, const int64_t *s, int64_t n, const void *extra)  \
    {                                                                                     \
        ERFC_BLOCKS(NAME, double, f8, d, s, n)                                            \
        NAME##_strided_loop_f8(d, s, n, extra);                                           \
    }                                                                                     \
    static const PtlLoop NAME##_loops[PTL_DTYPE_COUNT] = {FLOAT_ENTRIES(NAME)};

/* float32, float16 and bfloat16 take FN_F, float64 FN (gaussian_math.h, bessel_math.h: the
 * CUDA kernels' formulas, with the blocks' bits) */
DEFINE_ERFC_LOOPS(ndtr, ptl_ndtr_f32, ptl_ndtr_d)
DEFINE_ERFC_LOOPS(log_ndtr, ptl_log_ndtr_d, ptl_log_ndtr_d)
DEFINE_ERFC_LOOPS(erfcx, ptl_erfcx_d, ptl_erfcx_d)
/* (the same block plumbing: ERFC_BLOCKS only names NAME's blocks) */
DEFINE_ERFC_LOOPS(bessel_j0, ptl_bessel_j0_d, ptl_bessel_j0_d)
DEFINE_ERFC_LOOPS(bessel_j1, ptl_bessel_j1_d, ptl_bessel_j1_d)
DEFINE_ERFC_LOOPS(bessel_y0, ptl_bessel_y0_d, ptl_bessel_y0_d)
DEFINE_ERFC_LOOPS(bessel_y1, ptl_bessel_y1_d, ptl_bessel_y1_d)
DEFINE_ERFC_LOOPS(spherical_bessel_j0, ptl_spherical_bessel_j0_d, ptl_spherical_bessel_j0_d)

DEFINE_SPECIAL_UNARY(entr, entr_d)
/* ndtri in blocks: the indices of the central elements and of the others collected
 * without a branch, then each list by its own loop (on uniform p a branch between the
 * regions per element mispredicted half the time) */
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
            for (int t = 0; t < nm; t++) {                                                \
                res[mid[t]] = ptl_ndtri_mid(p[mid[t]] - 0.5);                             \
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
#undef DEFINE_SPECIAL_UNARY

/* ---- zeta: [*] x, [*] q -> [*] float (broadcast) ---- */

#define ZETA_F(A, B, X) ((float)ptl_zeta_d((A), (B)))
#define ZETA_D(A, B, X) ptl_zeta_d((A), (B))
DEFINE_BINARY_FLOAT_LOOPS(zeta, ZETA_F, ZETA_D)
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
 * recurrence (degrees 1-16 inside (-1, 1)) takes its step as one fma, fma(2x, p_j,
 * -p_(j-1)) (2x exact), inlined: one rounding instead of two, half the latency */
SPECIAL_INLINE double
chebyshev_fast(int kind, double x, double n)
{
    int64_t k = ptl_poly_degree(n);
    if (k <= 0 || k > 16 || !(fabs(x) < 1.0)) {
        return ptl_chebyshev(kind, x, n);
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

SPECIAL_INLINE double cheb_t_fast(double x, double n) { return chebyshev_fast(0, x, n); }
SPECIAL_INLINE double cheb_u_fast(double x, double n) { return chebyshev_fast(1, x, n); }
SPECIAL_INLINE double cheb_v_fast(double x, double n) { return chebyshev_fast(2, x, n); }
SPECIAL_INLINE double cheb_w_fast(double x, double n) { return chebyshev_fast(3, x, n); }
SPECIAL_INLINE double scheb_t_fast(double x, double n) { return cheb_t_fast(2.0 * x - 1.0, n); }
SPECIAL_INLINE double scheb_u_fast(double x, double n) { return cheb_u_fast(2.0 * x - 1.0, n); }
SPECIAL_INLINE double scheb_v_fast(double x, double n) { return cheb_v_fast(2.0 * x - 1.0, n); }
SPECIAL_INLINE double scheb_w_fast(double x, double n) { return cheb_w_fast(2.0 * x - 1.0, n); }

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

SPECIAL_INLINE double hermite_h_fast(double x, double n) { return hermite_fast(0, x, n); }
SPECIAL_INLINE double hermite_he_fast(double x, double n) { return hermite_fast(1, x, n); }

/* DEFINE_POLYNOMIAL with the FMA clones of DEFINE_SPECIAL_UNARY_FMA's loops */
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
#define DEFINE_POLYNOMIAL_FMA(NAME, FN)                                                   \
    SPECIAL_INLINE float NAME##_in_f(float x, float n)                                    \
    {                                                                                     \
        return (float)FN((double)x, (double)n);                                           \
    }                                                                                     \
    SPECIAL_INLINE double NAME##_in_d(double x, double n) { return FN(x, n); }            \
    DEFINE_POLYNOMIAL_FMA_LOOP(NAME, ptl_half, f2, PTL_LOAD_f2, PTL_STORE_f2, NAME##_in_f) \
    DEFINE_POLYNOMIAL_FMA_LOOP(NAME, ptl_bf16, bf, PTL_LOAD_bf, PTL_STORE_bf, NAME##_in_f) \
    DEFINE_POLYNOMIAL_FMA_LOOP(NAME, float, f4, PTL_ID, PTL_ID, NAME##_in_f)              \
    DEFINE_POLYNOMIAL_FMA_LOOP(NAME, double, f8, PTL_ID, PTL_ID, NAME##_in_d)             \
    static const PtlLoop NAME##_loops[PTL_DTYPE_COUNT] = {FLOAT_ENTRIES(NAME)};

#define DEFINE_POLYNOMIAL(NAME, FN)                                                       \
    static inline float NAME##_in_f(float x, float n, float e)                            \
    {                                                                                     \
        (void)e;                                                                          \
        return (float)FN((double)x, (double)n);                                           \
    }                                                                                     \
    static inline double NAME##_in_d(double x, double n, double e)                        \
    {                                                                                     \
        (void)e;                                                                          \
        return FN(x, n);                                                                  \
    }                                                                                     \
    DEFINE_BINARY_FLOAT_LOOPS(NAME, NAME##_in_f, NAME##_in_d)                             \
    static const PtlLoop NAME##_loops[PTL_DTYPE_COUNT] = {FLOAT_ENTRIES(NAME)};

DEFINE_POLYNOMIAL_FMA(chebyshev_polynomial_t, cheb_t_fast)
DEFINE_POLYNOMIAL_FMA(chebyshev_polynomial_u, cheb_u_fast)
DEFINE_POLYNOMIAL_FMA(chebyshev_polynomial_v, cheb_v_fast)
DEFINE_POLYNOMIAL_FMA(chebyshev_polynomial_w, cheb_w_fast)
DEFINE_POLYNOMIAL_FMA(shifted_chebyshev_polynomial_t, scheb_t_fast)
DEFINE_POLYNOMIAL_FMA(shifted_chebyshev_polynomial_u, scheb_u_fast)
DEFINE_POLYNOMIAL_FMA(shifted_chebyshev_polynomial_v, scheb_v_fast)
DEFINE_POLYNOMIAL_FMA(shifted_chebyshev_polynomial_w, scheb_w_fast)
DEFINE_POLYNOMIAL_FMA(hermite_polynomial_h, hermite_h_fast)
DEFINE_POLYNOMIAL_FMA(hermite_polynomial_he, hermite_he_fast)
DEFINE_POLYNOMIAL(laguerre_polynomial_l, ptl_laguerre_l_d)
DEFINE_POLYNOMIAL_FMA(legendre_polynomial_p, legendre_fast)
#undef DEFINE_POLYNOMIAL

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
