/* reduce_kernels.c -- the vector loops of the reductions (reduce.c, Note [Reduction plan]):
 * sums, extremes and |x|^p sums of contiguous float32/float64 runs, and the column sums
 * that add rows into a block of outputs.  Plain loops over memory, no plan: AVX2 versions
 * where the CPU has it, portable ones otherwise. */
#include <math.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_AVX2_KERNELS 1
#endif

#include "../../c10/cpu_features.h"
#include "reduce_kernels.h"

/* ---- contiguous float sums: independent accumulators, AVX2 when the CPU has it ---- */

static double
sum_f4_portable(const float *x, int64_t n)
{
    double acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        for (int k = 0; k < 8; k++) {
            acc[k] += (double)x[i + k];
        }
    }
    for (; i < n; i++) {
        acc[0] += (double)x[i];
    }
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

static double
sum_f8_portable(const double *x, int64_t n)
{
    double acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        for (int k = 0; k < 8; k++) {
            acc[k] += x[i + k];
        }
    }
    for (; i < n; i++) {
        acc[0] += x[i];
    }
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

#ifdef HAVE_AVX2_KERNELS
__attribute__((target("avx2,fma"))) static double
hsum_avx2(__m256d a)
{
    __m128d lo = _mm256_castpd256_pd128(a), hi = _mm256_extractf128_pd(a, 1);
    lo = _mm_add_pd(lo, hi);
    return _mm_cvtsd_f64(_mm_add_sd(lo, _mm_unpackhi_pd(lo, lo)));
}

/* 16 floats per step, widened to double into four accumulators of 4 lanes */
__attribute__((target("avx2,fma"))) static double
sum_f4_avx2(const float *x, int64_t n)
{
    __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm_loadu_ps(x + i)));
        a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4)));
        a2 = _mm256_add_pd(a2, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 8)));
        a3 = _mm256_add_pd(a3, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 12)));
    }
    double s = hsum_avx2(_mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)));
    for (; i < n; i++) {
        s += (double)x[i];
    }
    return s;
}

__attribute__((target("avx2,fma"))) static double
sum_f8_avx2(const double *x, int64_t n)
{
    __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = _mm256_add_pd(a0, _mm256_loadu_pd(x + i));
        a1 = _mm256_add_pd(a1, _mm256_loadu_pd(x + i + 4));
        a2 = _mm256_add_pd(a2, _mm256_loadu_pd(x + i + 8));
        a3 = _mm256_add_pd(a3, _mm256_loadu_pd(x + i + 12));
    }
    double s = hsum_avx2(_mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)));
    for (; i < n; i++) {
        s += x[i];
    }
    return s;
}
/* sum_f4_avx2 and sum_f8_avx2 of two runs x and y at once, each with its own four
 * accumulators and the same steps (so the same bits): eight independent add chains, where
 * one run's four wait on the add's latency (Note [Sums of many runs]) */
__attribute__((target("avx2,fma"))) static void
sum2_f4_avx2(const float *x, const float *y, int64_t n, double *sx, double *sy)
{
    __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
    __m256d b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm_loadu_ps(x + i)));
        b0 = _mm256_add_pd(b0, _mm256_cvtps_pd(_mm_loadu_ps(y + i)));
        a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4)));
        b1 = _mm256_add_pd(b1, _mm256_cvtps_pd(_mm_loadu_ps(y + i + 4)));
        a2 = _mm256_add_pd(a2, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 8)));
        b2 = _mm256_add_pd(b2, _mm256_cvtps_pd(_mm_loadu_ps(y + i + 8)));
        a3 = _mm256_add_pd(a3, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 12)));
        b3 = _mm256_add_pd(b3, _mm256_cvtps_pd(_mm_loadu_ps(y + i + 12)));
    }
    double s = hsum_avx2(_mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)));
    double t = hsum_avx2(_mm256_add_pd(_mm256_add_pd(b0, b1), _mm256_add_pd(b2, b3)));
    for (; i < n; i++) {
        s += (double)x[i];
        t += (double)y[i];
    }
    *sx = s;
    *sy = t;
}

__attribute__((target("avx2,fma"))) static void
sum2_f8_avx2(const double *x, const double *y, int64_t n, double *sx, double *sy)
{
    __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
    __m256d b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = _mm256_add_pd(a0, _mm256_loadu_pd(x + i));
        b0 = _mm256_add_pd(b0, _mm256_loadu_pd(y + i));
        a1 = _mm256_add_pd(a1, _mm256_loadu_pd(x + i + 4));
        b1 = _mm256_add_pd(b1, _mm256_loadu_pd(y + i + 4));
        a2 = _mm256_add_pd(a2, _mm256_loadu_pd(x + i + 8));
        b2 = _mm256_add_pd(b2, _mm256_loadu_pd(y + i + 8));
        a3 = _mm256_add_pd(a3, _mm256_loadu_pd(x + i + 12));
        b3 = _mm256_add_pd(b3, _mm256_loadu_pd(y + i + 12));
    }
    double s = hsum_avx2(_mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)));
    double t = hsum_avx2(_mm256_add_pd(_mm256_add_pd(b0, b1), _mm256_add_pd(b2, b3)));
    for (; i < n; i++) {
        s += x[i];
        t += y[i];
    }
    *sx = s;
    *sy = t;
}
#endif

double
ptl_red_sum_contiguous(PtlDtype dt, const char *p, int64_t n)
{
#ifdef HAVE_AVX2_KERNELS
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        return dt == PTL_DTYPE_FLOAT32 ? sum_f4_avx2((const float *)p, n)
                                       : sum_f8_avx2((const double *)p, n);
    }
#endif
    return dt == PTL_DTYPE_FLOAT32 ? sum_f4_portable((const float *)p, n)
                                   : sum_f8_portable((const double *)p, n);
}

/* Note [Sums of many runs]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~
 * x.mean((2, 3)) of NCHW sums N * C runs of H * W values.  One ptl_red_sum_contiguous call
 * a run paid the capability check, the call and the final horizontal add for every run of
 * 49 or 64 values, its four add chains waiting on the add's latency (0.8x PyTorch's time on
 * 7 x 7 and 8 x 8 planes).  ptl_red_sum_runs sums the runs of a block two at a time, each with
 * the steps of ptl_red_sum_contiguous, so every sum keeps its bits.  Runs of PAIRED_RUNS
 * values or more go one at a time: there the float32 sum is bound by its widening to double
 * (one vcvtps2pd per 4 values; 0.62-0.7x PyTorch's float sums from 16 x 16 to 32 x 32
 * planes, either way), and pairs of 56 x 56 planes ran 2.5x slower than single ones. */
#define PAIRED_RUNS 512

void
ptl_red_sum_runs(PtlDtype dt, const char *p, int64_t step, int64_t n, int64_t runs,
                 double *sums)
{
    int64_t r = 0;
#ifdef HAVE_AVX2_KERNELS
    if (ptl_cpu_capability() >= PTL_CPU_AVX2 && n < PAIRED_RUNS) {
        for (; r + 2 <= runs; r += 2) {
            const char *x = p + r * step, *y = x + step;
            if (dt == PTL_DTYPE_FLOAT32) {
                sum2_f4_avx2((const float *)x, (const float *)y, n, sums + r, sums + r + 1);
            }
            else {
                sum2_f8_avx2((const double *)x, (const double *)y, n, sums + r, sums + r + 1);
            }
        }
    }
#endif
    for (; r < runs; r++) {
        sums[r] = ptl_red_sum_contiguous(dt, p + r * step, n);
    }
}

/* max (is_max) or min of x[0..n) with NaN propagation, for contiguous float32/float64
 * runs: 8 lanes of plain selects, NaNs kept aside by another select (no integer flag, so
 * gcc vectorizes the portable loop); the AVX2 versions use max/min instructions in four
 * independent chains and an unordered-compare mask, the portable loop taking the tail. */
#define DEFINE_MAXMIN_PORTABLE(NAME, T)                                                   \
    static double                                                                         \
    NAME(const T *x, int64_t n, int is_max)                                               \
    {                                                                                     \
        T m[8], nn[8];                                                                    \
        int64_t i = 0;                                                                    \
        for (int k = 0; k < 8; k++) {                                                     \
            m[k] = is_max ? -INFINITY : INFINITY;                                         \
            nn[k] = 0;                                                                    \
        }                                                                                 \
        if (is_max) {                                                                     \
            for (; i + 8 <= n; i += 8) {                                                  \
                for (int k = 0; k < 8; k++) {                                             \
                    m[k] = x[i + k] > m[k] ? x[i + k] : m[k];                             \
                    nn[k] = x[i + k] != x[i + k] ? x[i + k] : nn[k];                      \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
        else {                                                                            \
            for (; i + 8 <= n; i += 8) {                                                  \
                for (int k = 0; k < 8; k++) {                                             \
                    m[k] = x[i + k] < m[k] ? x[i + k] : m[k];                             \
                    nn[k] = x[i + k] != x[i + k] ? x[i + k] : nn[k];                      \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
        for (; i < n; i++) {                                                              \
            m[0] = is_max ? (x[i] > m[0] ? x[i] : m[0]) : (x[i] < m[0] ? x[i] : m[0]);    \
            nn[0] = x[i] != x[i] ? x[i] : nn[0];                                          \
        }                                                                                 \
        double r = m[0];                                                                  \
        for (int k = 0; k < 8; k++) {                                                     \
            r = is_max ? (m[k] > r ? m[k] : r) : (m[k] < r ? m[k] : r);                   \
            r = nn[k] != nn[k] ? NAN : r;                                                 \
        }                                                                                 \
        return r;                                                                         \
    }

DEFINE_MAXMIN_PORTABLE(maxmin_f4_portable, float)
DEFINE_MAXMIN_PORTABLE(maxmin_f8_portable, double)

#ifdef HAVE_AVX2_KERNELS
/* The AVX2 twins over 8 floats (S = ps) or 4 doubles (S = pd): lane-wise max/min and a NaN
 * mask, then the tail and the lanes folded as the portable version does. */
#define DEFINE_MAXMIN_AVX2(NAME, T, S, LANES, PORTABLE)                                   \
    __attribute__((target("avx2,fma"))) static double NAME(const T *x, int64_t n,          \
                                                           int is_max)                     \
    {                                                                                     \
        __typeof__(_mm256_setzero_##S()) m = _mm256_set1_##S(is_max ? -INFINITY : INFINITY); \
        __typeof__(m) nan = _mm256_setzero_##S(), mk[4] = {m, m, m, m};                  \
        int64_t i = 0;                                                                    \
        for (; i + 4 * LANES <= n; i += 4 * LANES) { /* four independent chains */        \
            for (int k = 0; k < 4; k++) {                                                 \
                __typeof__(m) v = _mm256_loadu_##S(x + i + k * LANES);                    \
                mk[k] = is_max ? _mm256_max_##S(v, mk[k]) : _mm256_min_##S(v, mk[k]);     \
                nan = _mm256_or_##S(nan, _mm256_cmp_##S(v, v, _CMP_UNORD_Q));            \
            }                                                                             \
        }                                                                                 \
        m = is_max ? _mm256_max_##S(_mm256_max_##S(mk[0], mk[1]), _mm256_max_##S(mk[2], mk[3])) \
                   : _mm256_min_##S(_mm256_min_##S(mk[0], mk[1]), _mm256_min_##S(mk[2], mk[3])); \
        T lanes[LANES];                                                                   \
        _mm256_storeu_##S(lanes, m);                                                      \
        double r = PORTABLE(x + i, n - i, is_max);                                        \
        for (int k = 0; k < LANES; k++) {                                                 \
            r = is_max ? (lanes[k] > r ? lanes[k] : r) : (lanes[k] < r ? lanes[k] : r);   \
        }                                                                                 \
        return _mm256_movemask_##S(nan) != 0 || r != r ? NAN : r;                         \
    }

DEFINE_MAXMIN_AVX2(maxmin_f4_avx2, float, ps, 8, maxmin_f4_portable)
DEFINE_MAXMIN_AVX2(maxmin_f8_avx2, double, pd, 4, maxmin_f8_portable)
#endif

double
ptl_red_maxmin_contiguous(PtlDtype dt, const char *p, int64_t n, int is_max)
{
#ifdef HAVE_AVX2_KERNELS
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        return dt == PTL_DTYPE_FLOAT32 ? maxmin_f4_avx2((const float *)p, n, is_max)
                                       : maxmin_f8_avx2((const double *)p, n, is_max);
    }
#endif
    return dt == PTL_DTYPE_FLOAT32 ? maxmin_f4_portable((const float *)p, n, is_max)
                                   : maxmin_f8_portable((const double *)p, n, is_max);
}

/* sum of |x|^p (p = 1 or 2) of a contiguous float32/float64 run, in double: sixteen
 * independent accumulators (four chains of 4-lane FMAs), inlined into a portable and an AVX2
 * function so that the compiler vectorizes each for its target */
#define DEFINE_POWSUM_LOOP(NAME, T)                                                       \
    static inline __attribute__((always_inline)) double NAME(const T *x, int64_t n,       \
                                                             int square)                  \
    {                                                                                     \
        double acc[16] = {0};                                                             \
        int64_t i = 0;                                                                    \
        if (square) {                                                                     \
            for (; i + 16 <= n; i += 16) {                                                \
                for (int k = 0; k < 16; k++) {                                            \
                    acc[k] += (double)x[i + k] * (double)x[i + k];                        \
                }                                                                         \
            }                                                                             \
            for (; i < n; i++) {                                                          \
                acc[0] += (double)x[i] * (double)x[i];                                    \
            }                                                                             \
        }                                                                                 \
        else {                                                                            \
            for (; i + 16 <= n; i += 16) {                                                \
                for (int k = 0; k < 16; k++) {                                            \
                    acc[k] += fabs((double)x[i + k]);                                     \
                }                                                                         \
            }                                                                             \
            for (; i < n; i++) {                                                          \
                acc[0] += fabs((double)x[i]);                                             \
            }                                                                             \
        }                                                                                 \
        for (int k = 0; k < 8; k++) {                                                     \
            acc[k] += acc[k + 8];                                                         \
        }                                                                                 \
        return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])); \
    }

DEFINE_POWSUM_LOOP(powsum_f4_loop, float)
DEFINE_POWSUM_LOOP(powsum_f8_loop, double)

static double
powsum_portable(PtlDtype dt, const char *p, int64_t n, int square)
{
    return dt == PTL_DTYPE_FLOAT32 ? powsum_f4_loop((const float *)p, n, square)
                                   : powsum_f8_loop((const double *)p, n, square);
}

#ifdef HAVE_AVX2_KERNELS
__attribute__((target("avx2,fma"))) static double
powsum_avx2(PtlDtype dt, const char *p, int64_t n, int square)
{
    return dt == PTL_DTYPE_FLOAT32 ? powsum_f4_loop((const float *)p, n, square)
                                   : powsum_f8_loop((const double *)p, n, square);
}
#endif

double
ptl_red_powsum_contiguous(PtlDtype dt, const char *p, int64_t n, int square)
{
#ifdef HAVE_AVX2_KERNELS
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        return powsum_avx2(dt, p, n, square);
    }
#endif
    return powsum_portable(dt, p, n, square);
}

/* acc[k] += the sum of nrows float32 rows x, x + rs, ... (k < n): PTL_RED_COL_GROUP rows a time
 * in float32 (8 lanes per AVX2 instruction), each group's partial sums added in double */

/* The loops of add_rows_f4 and add_rows_f4_avx2, inlined into each so that the compiler
 * vectorizes them for that function's target. */
static inline __attribute__((always_inline)) void
add_rows_f4_loops(double *acc, const char *x, int64_t rs, int64_t nrows, int64_t n)
{
    float part[PTL_RED_COL_BLOCK];
    for (int64_t r0 = 0; r0 < nrows; r0 += PTL_RED_COL_GROUP) {
        int64_t r1 = r0 + PTL_RED_COL_GROUP < nrows ? r0 + PTL_RED_COL_GROUP : nrows;
        memset(part, 0, sizeof(float) * (size_t)n);
        for (int64_t r = r0; r < r1; r++) {
            const float *row = (const float *)(x + r * rs);
            for (int64_t k = 0; k < n; k++) {
                part[k] += row[k];
            }
        }
        for (int64_t k = 0; k < n; k++) {
            acc[k] += (double)part[k];
        }
    }
}

static void
add_rows_f4(double *acc, const char *x, int64_t rs, int64_t nrows, int64_t n)
{
    add_rows_f4_loops(acc, x, rs, nrows, n);
}

static void
add_row_f8(double *acc, const double *x, int64_t n)
{
    for (int64_t k = 0; k < n; k++) {
        acc[k] += x[k];
    }
}

#ifdef HAVE_AVX2_KERNELS
__attribute__((target("avx2,fma"))) static void
add_rows_f4_avx2(double *acc, const char *x, int64_t rs, int64_t nrows, int64_t n)
{
    add_rows_f4_loops(acc, x, rs, nrows, n);
}

__attribute__((target("avx2,fma"))) static void
add_row_f8_avx2(double *acc, const double *x, int64_t n)
{
    for (int64_t k = 0; k < n; k++) {
        acc[k] += x[k];
    }
}
#endif


void
ptl_red_add_rows_f4(double *acc, const char *x, int64_t rs, int64_t nrows, int64_t n, int avx2)
{
#ifdef HAVE_AVX2_KERNELS
    if (avx2) {
        add_rows_f4_avx2(acc, x, rs, nrows, n);
        return;
    }
#endif
    (void)avx2;
    add_rows_f4(acc, x, rs, nrows, n);
}

void
ptl_red_add_row_f8(double *acc, const double *x, int64_t n, int avx2)
{
#ifdef HAVE_AVX2_KERNELS
    if (avx2) {
        add_row_f8_avx2(acc, x, n);
        return;
    }
#endif
    (void)avx2;
    add_row_f8(acc, x, n);
}
