/* reduce_kernels_int.c -- the exact integer and bool loops of the reductions (reduce.c, Note
 * [Reduction plan]): the sums, products, extremes and first positions of contiguous runs, the
 * column sums and the column extremes.  Plain loops over memory, no plan: written once per
 * element type and compiled for the portable, AVX2 and AVX-512 targets, and AVX2 intrinsics
 * for the extremes of runs (Note [Integer extremes of runs]). */
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "../../c10/cpu_features.h"
#include "native.h"
#include "reduce_kernels.h"
#include "vec_math.h"

/* Note [Integer sums of runs]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * sum(1) of a matrix is one run a row.  A run at a time, the vectorized loop streams one row
 * from memory: sum(1) of 1000 x 1000 int64 from DRAM took 390-430 us on Zen 3, PyTorch 320-415.
 * Four rows at a time (four independent sums, each still in its own order: integers are exact)
 * keep four streams of loads in flight: 305-320 us (the same loop from a C driver, caches
 * flushed between calls).  The rows left over after the groups of four go one at a time. */
/* ---- integer and bool runs: exact, so any order and width gives the same result ----
 * Each loop is written once per element type and inlined into a portable, an AVX2 and an
 * AVX-512 function, which the compiler vectorizes for its target (the extremes in the
 * element type, the sums widened to int64, wrapping as uint64 adds). */
#define PTL_FORALL_INT_RUNS(_)                                                            \
    _(BOOL, uint8_t, b1) _(UINT8, uint8_t, u1) _(INT8, int8_t, i1) _(INT16, int16_t, i2)  \
    _(INT32, int32_t, i4) _(INT64, int64_t, i8)

/* Column sums add IADD_ROW_STEP rows into acc at a time: one load and store of acc for four
 * rows (a row at a time, sum(0) of 1000 x 1000 int64 was 0.8-1.05x PyTorch's time) */
#define IADD_ROW_STEP 4
#define DEFINE_INT_RUNS(E, T, DT)                                                         \
    static inline __attribute__((always_inline)) int64_t                                  \
    isum_loop_##DT(const T *x, int64_t n)                                                 \
    {                                                                                     \
        uint64_t s = 0;                                                                   \
        for (int64_t k = 0; k < n; k++) {                                                 \
            s += (uint64_t)(int64_t)x[k];                                                 \
        }                                                                                 \
        return (int64_t)s;                                                                \
    }                                                                                     \
    /* out[0..3] = the sums of the four runs p, p + step, ...: four streams a loop, which \
     * keeps more of memory's lines in flight (Note [Integer sums of runs]) */            \
    static inline __attribute__((always_inline)) void                                    \
    isum4_loop_##DT(const char *p, int64_t step, int64_t n, int64_t *out)                 \
    {                                                                                     \
        const T *x0 = (const T *)p, *x1 = (const T *)(p + step);                          \
        const T *x2 = (const T *)(p + 2 * step), *x3 = (const T *)(p + 3 * step);         \
        uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;                                          \
        for (int64_t k = 0; k < n; k++) {                                                 \
            s0 += (uint64_t)(int64_t)x0[k];                                               \
            s1 += (uint64_t)(int64_t)x1[k];                                               \
            s2 += (uint64_t)(int64_t)x2[k];                                               \
            s3 += (uint64_t)(int64_t)x3[k];                                               \
        }                                                                                 \
        out[0] = (int64_t)s0;                                                             \
        out[1] = (int64_t)s1;                                                             \
        out[2] = (int64_t)s2;                                                             \
        out[3] = (int64_t)s3;                                                             \
    }                                                                                     \
    static inline __attribute__((always_inline)) int64_t                                  \
    iprod_loop_##DT(const T *x, int64_t n)                                                \
    {                                                                                     \
        uint64_t s = 1;                                                                   \
        for (int64_t k = 0; k < n; k++) {                                                 \
            s *= (uint64_t)(int64_t)x[k];                                                 \
        }                                                                                 \
        return (int64_t)s;                                                                \
    }                                                                                     \
    static inline __attribute__((always_inline)) int64_t                                  \
    imaxmin_loop_##DT(const T *x, int64_t n, int is_max)                                  \
    {                                                                                     \
        T m = x[0];                                                                       \
        if (is_max) {                                                                     \
            for (int64_t k = 0; k < n; k++) {                                             \
                m = x[k] > m ? x[k] : m;                                                  \
            }                                                                             \
        }                                                                                 \
        else {                                                                            \
            for (int64_t k = 0; k < n; k++) {                                             \
                m = x[k] < m ? x[k] : m;                                                  \
            }                                                                             \
        }                                                                                 \
        return (int64_t)m;                                                                \
    }                                                                                     \
    static inline __attribute__((always_inline)) int64_t                                  \
    ifind_loop_##DT(const T *x, int64_t n, int64_t v)                                     \
    {                                                                                     \
        int64_t i = 0;                                                                    \
        for (; i + 64 <= n; i += 64) { /* a block without exits, which vectorizes */      \
            int hit = 0;                                                                  \
            for (int k = 0; k < 64; k++) {                                                \
                hit |= (int64_t)x[i + k] == v;                                            \
            }                                                                             \
            if (hit) {                                                                    \
                break;                                                                    \
            }                                                                             \
        }                                                                                 \
        while (i < n - 1 && (int64_t)x[i] != v) {                                         \
            i++;                                                                          \
        }                                                                                 \
        return i;                                                                         \
    }                                                                                     \
    static inline __attribute__((always_inline)) void                                    \
    iadd_rows_loop_##DT(int64_t *acc, const char *p, int64_t rs, int64_t R, int64_t n)    \
    {                                                                                     \
        int64_t r = 0;                                                                    \
        for (; r + IADD_ROW_STEP <= R; r += IADD_ROW_STEP) {                              \
            const T *x0 = (const T *)(p + r * rs), *x1 = (const T *)(p + (r + 1) * rs);   \
            const T *x2 = (const T *)(p + (r + 2) * rs), *x3 = (const T *)(p + (r + 3) * rs); \
            for (int64_t k = 0; k < n; k++) {                                             \
                acc[k] = (int64_t)((uint64_t)acc[k] + (uint64_t)(int64_t)x0[k] +          \
                                   (uint64_t)(int64_t)x1[k] + (uint64_t)(int64_t)x2[k] +  \
                                   (uint64_t)(int64_t)x3[k]);                             \
            }                                                                             \
        }                                                                                 \
        for (; r < R; r++) {                                                              \
            const T *x = (const T *)(p + r * rs);                                         \
            for (int64_t k = 0; k < n; k++) {                                             \
                acc[k] = (int64_t)((uint64_t)acc[k] + (uint64_t)(int64_t)x[k]);           \
            }                                                                             \
        }                                                                                 \
    }                                                                                     \
    static inline __attribute__((always_inline)) void                                    \
    imaxmin_rows_loop_##DT(int64_t *best, int64_t *at, const char *p, int64_t rs,         \
                           int64_t R, int64_t n, int is_max)                              \
    {                                                                                     \
        T b[PTL_RED_COL_BLOCK];                                                           \
        int64_t w[PTL_RED_COL_BLOCK];                                                     \
        memcpy(b, p, sizeof(T) * (size_t)n);                                              \
        for (int64_t k = 0; k < n && at != NULL; k++) {                                   \
            w[k] = 0;                                                                     \
        }                                                                                 \
        for (int64_t r = 1; r < R; r++) {                                                 \
            const T *x = (const T *)(p + r * rs);                                         \
            if (at != NULL) {   /* the first row of the extreme */                        \
                for (int64_t k = 0; k < n; k++) {                                         \
                    int take = is_max ? x[k] > b[k] : x[k] < b[k];                        \
                    b[k] = take ? x[k] : b[k];                                            \
                    w[k] = take ? r : w[k];                                               \
                }                                                                         \
            }                                                                             \
            else if (is_max) {                                                            \
                for (int64_t k = 0; k < n; k++) {                                         \
                    b[k] = x[k] > b[k] ? x[k] : b[k];                                     \
                }                                                                         \
            }                                                                             \
            else {                                                                        \
                for (int64_t k = 0; k < n; k++) {                                         \
                    b[k] = x[k] < b[k] ? x[k] : b[k];                                     \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
        for (int64_t k = 0; k < n; k++) {                                                 \
            best[k] = (int64_t)b[k];                                                      \
        }                                                                                 \
        if (at != NULL) {                                                                 \
            memcpy(at, w, sizeof(int64_t) * (size_t)n);                                   \
        }                                                                                 \
    }
PTL_FORALL_INT_RUNS(DEFINE_INT_RUNS)
#undef DEFINE_INT_RUNS

/* The four entry points of one target: a switch over the integer dtypes */
#define INT_RUN_CASE_SUM(E, T, DT)                                                        \
    case PTL_DTYPE_##E:                                                                   \
        return isum_loop_##DT((const T *)p, n);
#define INT_RUN_CASE_PROD(E, T, DT)                                                       \
    case PTL_DTYPE_##E:                                                                   \
        return iprod_loop_##DT((const T *)p, n);
#define INT_RUN_CASE_MAXMIN(E, T, DT)                                                     \
    case PTL_DTYPE_##E:                                                                   \
        return imaxmin_loop_##DT((const T *)p, n, is_max);
#define INT_RUN_CASE_FIND(E, T, DT)                                                       \
    case PTL_DTYPE_##E:                                                                   \
        return ifind_loop_##DT((const T *)p, n, v);
#define INT_RUN_CASE_ADD_ROWS(E, T, DT)                                                   \
    case PTL_DTYPE_##E:                                                                   \
        iadd_rows_loop_##DT(acc, p, rs, R, n);                                            \
        return;
#define INT_RUN_CASE_MAXMIN_ROWS(E, T, DT)                                                \
    case PTL_DTYPE_##E:                                                                   \
        imaxmin_rows_loop_##DT(acc, at, p, rs, R, n, is_max);                                 \
        return;
#define INT_RUN_CASE_SUM_RUNS(E, T, DT)                                                   \
    case PTL_DTYPE_##E: {                                                                 \
        int64_t r = 0;                                                                    \
        for (; r + 4 <= runs; r += 4) {                                                   \
            isum4_loop_##DT(p + r * step, step, n, out + r);                              \
        }                                                                                 \
        for (; r < runs; r++) {                                                           \
            out[r] = isum_loop_##DT((const T *)(p + r * step), n);                        \
        }                                                                                 \
        return;                                                                           \
    }
#define DEFINE_INT_TARGET(ISA, ATTR)                                                      \
    ATTR static int64_t                                                                   \
    isum_##ISA(PtlDtype dt, const char *p, int64_t n)                                     \
    {                                                                                     \
        switch (dt) {                                                                     \
            PTL_FORALL_INT_RUNS(INT_RUN_CASE_SUM)                                         \
        default:                                                                          \
            return 0;                                                                     \
        }                                                                                 \
    }                                                                                     \
    ATTR static void                                                                      \
    isum_runs_##ISA(PtlDtype dt, const char *p, int64_t step, int64_t n, int64_t runs,    \
                    int64_t *out)                                                         \
    {                                                                                     \
        switch (dt) {                                                                     \
            PTL_FORALL_INT_RUNS(INT_RUN_CASE_SUM_RUNS)                                    \
        default:                                                                          \
            return;                                                                       \
        }                                                                                 \
    }                                                                                     \
    ATTR static int64_t                                                                   \
    iprod_##ISA(PtlDtype dt, const char *p, int64_t n)                                    \
    {                                                                                     \
        switch (dt) {                                                                     \
            PTL_FORALL_INT_RUNS(INT_RUN_CASE_PROD)                                        \
        default:                                                                          \
            return 0;                                                                     \
        }                                                                                 \
    }                                                                                     \
    ATTR static int64_t                                                                   \
    imaxmin_##ISA(PtlDtype dt, const char *p, int64_t n, int is_max)                      \
    {                                                                                     \
        switch (dt) {                                                                     \
            PTL_FORALL_INT_RUNS(INT_RUN_CASE_MAXMIN)                                      \
        default:                                                                          \
            return 0;                                                                     \
        }                                                                                 \
    }                                                                                     \
    ATTR static int64_t                                                                   \
    ifind_##ISA(PtlDtype dt, const char *p, int64_t n, int64_t v)                         \
    {                                                                                     \
        switch (dt) {                                                                     \
            PTL_FORALL_INT_RUNS(INT_RUN_CASE_FIND)                                        \
        default:                                                                          \
            return 0;                                                                     \
        }                                                                                 \
    }                                                                                     \
    ATTR static void                                                                      \
    iadd_rows_##ISA(int64_t *acc, PtlDtype dt, const char *p, int64_t rs, int64_t R,      \
                    int64_t n)                                                            \
    {                                                                                     \
        switch (dt) {                                                                     \
            PTL_FORALL_INT_RUNS(INT_RUN_CASE_ADD_ROWS)                                    \
        default:                                                                          \
            return;                                                                       \
        }                                                                                 \
    }                                                                                     \
    ATTR static void                                                                      \
    imaxmin_rows_##ISA(int64_t *acc, int64_t *at, PtlDtype dt, const char *p, int64_t rs, \
                       int64_t R, int64_t n, int is_max)                                  \
    {                                                                                     \
        switch (dt) {                                                                     \
            PTL_FORALL_INT_RUNS(INT_RUN_CASE_MAXMIN_ROWS)                                 \
        default:                                                                          \
            return;                                                                       \
        }                                                                                 \
    }
DEFINE_INT_TARGET(portable, )
#ifdef PTL_HAVE_AVX2_KERNELS
DEFINE_INT_TARGET(avx2, PTL_AVX2)
DEFINE_INT_TARGET(avx512, PTL_AVX512)
#endif
#undef DEFINE_INT_TARGET
#undef INT_RUN_CASE_SUM
#undef INT_RUN_CASE_SUM_RUNS
#undef INT_RUN_CASE_PROD
#undef INT_RUN_CASE_MAXMIN
#undef INT_RUN_CASE_ADD_ROWS
#undef INT_RUN_CASE_FIND
#undef INT_RUN_CASE_MAXMIN_ROWS
#undef PTL_FORALL_INT_RUNS

/* The target of this CPU's capability: ISA##_portable, _avx2 or _avx512 */
#ifdef PTL_HAVE_AVX2_KERNELS
#define INT_TARGET(NAME)                                                                  \
    (ptl_cpu_capability() >= PTL_CPU_AVX512 ? NAME##_avx512                               \
     : ptl_cpu_capability() >= PTL_CPU_AVX2 ? NAME##_avx2                                 \
                                            : NAME##_portable)
#else
#define INT_TARGET(NAME) NAME##_portable
#endif

int64_t
ptl_red_sum_int(PtlDtype dt, const char *p, int64_t n)
{
    return INT_TARGET(isum)(dt, p, n);
}

void
ptl_red_sum_runs_int(PtlDtype dt, const char *p, int64_t step, int64_t n, int64_t runs,
                     int64_t *out)
{
    INT_TARGET(isum_runs)(dt, p, step, n, runs, out);
}

int64_t
ptl_red_prod_int(PtlDtype dt, const char *p, int64_t n)
{
    return INT_TARGET(iprod)(dt, p, n);
}

#ifdef PTL_HAVE_AVX2_KERNELS
/* Note [Integer extremes of runs]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A run of at least one ymm register of integers (W lanes of T): four chains of vector
 * max/min from the first vector, the whole vectors after the chains' blocks into the first
 * chain, the last, partial vector as the run's last W values (which the chains have partly
 * seen: an extreme does not mind a value twice), and the lanes folded in registers.  gcc's
 * vectorization of the plain loop kept one chain, waiting on its latency, and gave the run's
 * tail to a scalar loop: amax(1) of 1000 x 1000 int32 at 0.83x PyTorch's time, rows of 64 at
 * 0.3x.  int64 has no AVX2 max: a compare and a blend.  Shorter runs take the typed loops. */
PTL_AVX2 static inline __m256i
max_epi64_avx2(__m256i a, __m256i b)
{
    return _mm256_blendv_epi8(b, a, _mm256_cmpgt_epi64(a, b));
}

PTL_AVX2 static inline __m256i
min_epi64_avx2(__m256i a, __m256i b)
{
    return _mm256_blendv_epi8(a, b, _mm256_cmpgt_epi64(a, b));
}

#define IEXT_OP(DT, a, b) iext_op_##DT(a, b, is_max)
#define DEFINE_IEXT_AVX2(DT, T, MAX, MIN, CVT)                                           \
    PTL_AVX2 static inline __attribute__((always_inline)) __m256i                        \
    iext_op_##DT(__m256i a, __m256i b, int is_max)                                       \
    {                                                                                    \
        return is_max ? MAX(a, b) : MIN(a, b);                                           \
    }                                                                                    \
    PTL_AVX2 static inline __attribute__((always_inline)) int64_t                        \
    iext_avx2_##DT(const T *x, int64_t n, int is_max)                                    \
    {                                                                                    \
        enum { W = 32 / sizeof(T) };                                                     \
        __m256i m0 = _mm256_loadu_si256((const __m256i *)x), m1 = m0, m2 = m0, m3 = m0;  \
        int64_t i = W;                                                                   \
        for (; i + 4 * W <= n; i += 4 * W) {                                             \
            m0 = IEXT_OP(DT, _mm256_loadu_si256((const __m256i *)(x + i)), m0);          \
            m1 = IEXT_OP(DT, _mm256_loadu_si256((const __m256i *)(x + i + W)), m1);      \
            m2 = IEXT_OP(DT, _mm256_loadu_si256((const __m256i *)(x + i + 2 * W)), m2);  \
            m3 = IEXT_OP(DT, _mm256_loadu_si256((const __m256i *)(x + i + 3 * W)), m3);  \
        }                                                                                \
        for (; i < n; i += W) {                                                          \
            const T *y = x + (i + W <= n ? i : n - W);                                   \
            m0 = IEXT_OP(DT, _mm256_loadu_si256((const __m256i *)y), m0);                \
        }                                                                                \
        m0 = IEXT_OP(DT, IEXT_OP(DT, m0, m1), IEXT_OP(DT, m2, m3));                      \
        m0 = IEXT_OP(DT, m0, _mm256_permute2x128_si256(m0, m0, 1));                      \
        for (int sh = 8; sh >= (int)sizeof(T); sh /= 2) {   /* lane 0 folds the rest */  \
            m0 = IEXT_OP(DT, m0, sh == 8 ? _mm256_srli_si256(m0, 8) : sh == 4 ?          \
                         _mm256_srli_si256(m0, 4) : sh == 2 ? _mm256_srli_si256(m0, 2) : \
                         _mm256_srli_si256(m0, 1));                                      \
        }                                                                                \
        return (int64_t)(T)CVT(m0);                                                      \
    }
#define CVT32(v) _mm256_cvtsi256_si32(v)
#define CVT64(v) _mm_cvtsi128_si64(_mm256_castsi256_si128(v))
DEFINE_IEXT_AVX2(b1, uint8_t, _mm256_max_epu8, _mm256_min_epu8, CVT32)
DEFINE_IEXT_AVX2(i1, int8_t, _mm256_max_epi8, _mm256_min_epi8, CVT32)
DEFINE_IEXT_AVX2(i2, int16_t, _mm256_max_epi16, _mm256_min_epi16, CVT32)
DEFINE_IEXT_AVX2(i4, int32_t, _mm256_max_epi32, _mm256_min_epi32, CVT32)
DEFINE_IEXT_AVX2(i8, int64_t, max_epi64_avx2, min_epi64_avx2, CVT64)
#undef DEFINE_IEXT_AVX2
#undef IEXT_OP
#undef CVT32
#undef CVT64

/* out[r] = the extreme of the run p + r * step (r < runs), iext_avx2's loop inlined with
 * is_max a constant: rows of 64 int32 spent as long in the call and the checks around one row
 * as in its 8 vectors (Note [Integer extremes of runs]) */
#define DEFINE_IEXT_RUNS_AVX2(DT, T)                                                     \
    PTL_AVX2 static void                                                                 \
    iext_runs_avx2_##DT(const char *p, int64_t step, int64_t n, int64_t runs, int is_max, \
                        T *out)                                                          \
    {                                                                                    \
        if (is_max) {                                                                    \
            for (int64_t r = 0; r < runs; r++) {                                         \
                out[r] = (T)iext_avx2_##DT((const T *)(p + r * step), n, 1);             \
            }                                                                            \
        }                                                                                \
        else {                                                                           \
            for (int64_t r = 0; r < runs; r++) {                                         \
                out[r] = (T)iext_avx2_##DT((const T *)(p + r * step), n, 0);             \
            }                                                                            \
        }                                                                                \
    }
DEFINE_IEXT_RUNS_AVX2(b1, uint8_t)
DEFINE_IEXT_RUNS_AVX2(i1, int8_t)
DEFINE_IEXT_RUNS_AVX2(i2, int16_t)
DEFINE_IEXT_RUNS_AVX2(i4, int32_t)
DEFINE_IEXT_RUNS_AVX2(i8, int64_t)
#undef DEFINE_IEXT_RUNS_AVX2

/* The run's extreme by iext_avx2 when it fills a vector (is_max a constant in each call) */
PTL_AVX2 static int
iext_avx2(PtlDtype dt, const char *p, int64_t n, int is_max, int64_t *out)
{
    if (n * (int64_t)ptl_dtype_itemsize(dt) < 32) {
        return 0;
    }
#define IEXT_CASE(E, DT, T)                                                              \
    case PTL_DTYPE_##E:                                                                  \
        *out = is_max ? iext_avx2_##DT((const T *)p, n, 1) : iext_avx2_##DT((const T *)p, n, 0); \
        return 1;
    switch (dt) {
    IEXT_CASE(BOOL, b1, uint8_t)
    IEXT_CASE(UINT8, b1, uint8_t)
    IEXT_CASE(INT8, i1, int8_t)
    IEXT_CASE(INT16, i2, int16_t)
    IEXT_CASE(INT32, i4, int32_t)
    IEXT_CASE(INT64, i8, int64_t)
    default:
        return 0;
    }
#undef IEXT_CASE
}
#endif

int64_t
ptl_red_maxmin_int(PtlDtype dt, const char *p, int64_t n, int is_max)
{
#ifdef PTL_HAVE_AVX2_KERNELS
    int64_t m;
    if (ptl_cpu_capability() >= PTL_CPU_AVX2 && iext_avx2(dt, p, n, is_max, &m)) {
        return m;
    }
#endif
    return INT_TARGET(imaxmin)(dt, p, n, is_max);
}

int
ptl_red_maxmin_runs_int(PtlDtype dt, const char *p, int64_t step, int64_t n, int64_t runs,
                        int is_max, char *out)
{
#ifdef PTL_HAVE_AVX2_KERNELS
    if (ptl_cpu_capability() < PTL_CPU_AVX2 || n * (int64_t)ptl_dtype_itemsize(dt) < 32) {
        return 0;
    }
#define IEXT_RUNS_CASE(E, DT, T)                                                         \
    case PTL_DTYPE_##E:                                                                  \
        iext_runs_avx2_##DT(p, step, n, runs, is_max, (T *)out);                         \
        return 1;
    switch (dt) {
    IEXT_RUNS_CASE(BOOL, b1, uint8_t)
    IEXT_RUNS_CASE(UINT8, b1, uint8_t)
    IEXT_RUNS_CASE(INT8, i1, int8_t)
    IEXT_RUNS_CASE(INT16, i2, int16_t)
    IEXT_RUNS_CASE(INT32, i4, int32_t)
    IEXT_RUNS_CASE(INT64, i8, int64_t)
    default:
        return 0;
    }
#undef IEXT_RUNS_CASE
#else
    (void)dt, (void)p, (void)step, (void)n, (void)runs, (void)is_max, (void)out;
    return 0;
#endif
}

int64_t
ptl_red_find_int(PtlDtype dt, const char *p, int64_t n, int64_t v)
{
    return INT_TARGET(ifind)(dt, p, n, v);
}

void
ptl_red_add_rows_int(int64_t *acc, PtlDtype dt, const char *p, int64_t rs, int64_t R, int64_t n)
{
    INT_TARGET(iadd_rows)(acc, dt, p, rs, R, n);
}

void
ptl_red_maxmin_rows_int(int64_t *best, int64_t *at, PtlDtype dt, const char *p, int64_t rs,
                        int64_t R, int64_t n, int is_max)
{
    INT_TARGET(imaxmin_rows)(best, at, dt, p, rs, R, n, is_max);
}
#undef INT_TARGET
