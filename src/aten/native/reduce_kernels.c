/* reduce_kernels.c -- the vector loops of the reductions (reduce.c, Note [Reduction plan]):
 * sums, extremes and |x|^p sums of contiguous float32/float64 runs, the column sums that add
 * rows into a block of outputs and the column folds of the other float kinds, the float16 /
 * bfloat16 sums and extremes (Note [Half-precision sums]); the integer and bool ones are in
 * reduce_kernels_int.c.  Plain loops over memory, no plan: AVX2 (and, where
 * written as vector twins or left to the compiler, AVX-512) versions where the CPU has them,
 * portable ones otherwise. */
#include <math.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_AVX2_KERNELS 1
#endif

#include "../../c10/cpu_features.h"
#include "../loops.h"
#include "native.h"
#include "reduce_kernels.h"
#include "vec_math.h"

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

/* Note [Float sums in blocks]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A float32 run sums in sixteen double lanes (four accumulators of four), sixteen values a
 * step, so every value was widened to double on its own: one vcvtps2pd per four values bound
 * x.mean((2, 3)) of 32 x 32 planes at 0.63x PyTorch's float sums.  Runs of SUM_BLOCK values
 * or more now add each whole block of SUM_BLOCK values in 32 float lanes first (lane l the
 * values i = l mod 32 of the block, eight each, in order), and the block's lanes l and
 * l + 4 (of each group of eight) widened and added in double into lane l mod 16 of the
 * accumulators; the values past the last whole block go sixteen a step and one by one, as
 * before.  Each float lane adds eight values, so its error is at most 7 ulp of their
 * magnitude (about 4e-7 of the sum of |x|, against 1e-16 in double before; PyTorch's cascade
 * of float sums is no better); a run shorter than SUM_BLOCK keeps its bits.  The blocks
 * start at the run's start, so a sum's bits depend on where its runs begin: one output's
 * long sum splits into chunks that depend on its length alone (reduce.c), never on the
 * thread count, and the runs summed two or four at a time (Note [Sums of many runs]) are
 * shorter than a block. */
#define SUM_BLOCK 256

/* 16 floats per step, widened to double into four accumulators of 4 lanes, after the whole
 * blocks of Note [Float sums in blocks] */
__attribute__((target("avx2,fma"))) static double
sum_f4_avx2(const float *x, int64_t n)
{
    __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + SUM_BLOCK <= n; i += SUM_BLOCK) {
        __m256 p0 = _mm256_loadu_ps(x + i), p1 = _mm256_loadu_ps(x + i + 8);
        __m256 p2 = _mm256_loadu_ps(x + i + 16), p3 = _mm256_loadu_ps(x + i + 24);
        for (int64_t j = i + 32; j < i + SUM_BLOCK; j += 32) {
            p0 = _mm256_add_ps(p0, _mm256_loadu_ps(x + j));
            p1 = _mm256_add_ps(p1, _mm256_loadu_ps(x + j + 8));
            p2 = _mm256_add_ps(p2, _mm256_loadu_ps(x + j + 16));
            p3 = _mm256_add_ps(p3, _mm256_loadu_ps(x + j + 24));
        }
        /* float lanes 8 q + (0..3) and 8 q + (4..7) into double accumulator q */
        a0 = _mm256_add_pd(a0, _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(p0)),
                                             _mm256_cvtps_pd(_mm256_extractf128_ps(p0, 1))));
        a1 = _mm256_add_pd(a1, _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(p1)),
                                             _mm256_cvtps_pd(_mm256_extractf128_ps(p1, 1))));
        a2 = _mm256_add_pd(a2, _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(p2)),
                                             _mm256_cvtps_pd(_mm256_extractf128_ps(p2, 1))));
        a3 = _mm256_add_pd(a3, _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(p3)),
                                             _mm256_cvtps_pd(_mm256_extractf128_ps(p3, 1))));
    }
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

/* v = (a0 + a1) + (a2 + a3) of sum_f4_avx2 for the run x[0..n) (full: n rounded down to 16) */
__attribute__((target("avx2,fma"))) static inline __attribute__((always_inline)) __m256d
sum_f4_lanes_avx2(const float *x, int64_t full)
{
    __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < full; i += 16) {
        a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm_loadu_ps(x + i)));
        a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4)));
        a2 = _mm256_add_pd(a2, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 8)));
        a3 = _mm256_add_pd(a3, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 12)));
    }
    return _mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3));
}

/* sum_f4_avx2 of the four runs x + r * step (r < 4) at once, the same bits: their lane
 * vectors v one run after the other, then hsum_avx2's (v0 + v2) + (v1 + v3) of all four by
 * adding the 128-bit halves of two runs' v and one horizontal add (lane order 0, 2, 1, 3),
 * and the tails value after value in all four lanes (Note [Sums of many runs]) */
__attribute__((target("avx2,fma"))) static void
sum4_f4_avx2(const float *x, int64_t step, int64_t n, double *sums)
{
    const int64_t full = n / 16 * 16;
    const float *x1 = x + step, *x2 = x + 2 * step, *x3 = x + 3 * step;
    __m256d v0 = sum_f4_lanes_avx2(x, full), v1 = sum_f4_lanes_avx2(x1, full);
    __m256d v2 = sum_f4_lanes_avx2(x2, full), v3 = sum_f4_lanes_avx2(x3, full);
    __m256d l = _mm256_add_pd(_mm256_permute2f128_pd(v0, v1, 0x20),
                              _mm256_permute2f128_pd(v0, v1, 0x31));
    __m256d r = _mm256_add_pd(_mm256_permute2f128_pd(v2, v3, 0x20),
                              _mm256_permute2f128_pd(v2, v3, 0x31));
    __m256d s = _mm256_hadd_pd(l, r);
    for (int64_t i = full; i < n; i++) {
        s = _mm256_add_pd(s, _mm256_setr_pd(x[i], x2[i], x1[i], x3[i]));
    }
    double t[4];
    _mm256_storeu_pd(t, s);
    sums[0] = t[0];
    sums[1] = t[2];
    sums[2] = t[1];
    sums[3] = t[3];
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
 * the steps of ptl_red_sum_contiguous, so every sum keeps its bits (float32 runs shorter
 * than SUM_BLOCK, which have no blocks: Note [Float sums in blocks]).  Runs of PAIRED_RUNS
 * values or more go one at a time: there the float32 sum is bound by its widening to double
 * (one vcvtps2pd per 4 values; 0.62-0.7x PyTorch's float sums from 16 x 16 to 32 x 32
 * planes, either way), and pairs of 56 x 56 planes ran 2.5x slower than single ones.
 * float32 runs go four at a time where they can (sum4_f4_avx2): the fold of the lanes and
 * the tail's values, with the vectors of four runs, cost a 7 x 7 run as much as its 12
 * widenings. */
#define PAIRED_RUNS 512

void
ptl_red_sum_runs(PtlDtype dt, const char *p, int64_t step, int64_t n, int64_t runs,
                 double *sums)
{
    int64_t r = 0;
#ifdef HAVE_AVX2_KERNELS
    if (ptl_cpu_capability() >= PTL_CPU_AVX2 &&
        n < (dt == PTL_DTYPE_FLOAT32 ? SUM_BLOCK : PAIRED_RUNS)) {
        for (; dt == PTL_DTYPE_FLOAT32 && r + 4 <= runs; r += 4) {
            sum4_f4_avx2((const float *)(p + r * step), step / 4, n, sums + r);
        }
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
 * gcc vectorizes the portable loop); the AVX2 versions: Note [Extremes of runs]. */
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
/* Note [Extremes of runs]
 * ~~~~~~~~~~~~~~~~~~~~~~~
 * The AVX2 twins over 8 floats (S = ps) or 4 doubles (S = pd) of runs of at least one vector
 * (shorter ones take the portable loop): four chains of max/min from the first vector, the
 * whole vectors after the chains' blocks into the first chain, and the last, partial vector
 * as the run's last LANES values, which the chains have partly seen already (an extreme does
 * not mind a value twice).  NaNs are gathered by unordered compares, one for each pair of
 * vectors (true when either holds a NaN), and the chains fold in registers.  Before, a tail
 * call to the portable loop and a fold through memory cost a row of 64 floats 15 ns (amax(-1)
 * of 15625 x 64 float32 at 0.35x PyTorch's time). */
#define DEFINE_MAXMIN_AVX2(NAME, T, S, LANES, PORTABLE, FOLD)                              \
    static inline __attribute__((always_inline, target("avx2,fma"))) double                \
    NAME##_dir(const T *x, int64_t n, int is_max)                                          \
    {                                                                                      \
        typedef __typeof__(_mm256_setzero_##S()) V;                                        \
        V m0 = _mm256_loadu_##S(x), m1 = m0, m2 = m0, m3 = m0;                             \
        V nan = _mm256_cmp_##S(m0, m0, _CMP_UNORD_Q);                                      \
        int64_t i = LANES;                                                                 \
        for (; i + 4 * LANES <= n; i += 4 * LANES) {                                       \
            V a = _mm256_loadu_##S(x + i), b = _mm256_loadu_##S(x + i + LANES);            \
            V c = _mm256_loadu_##S(x + i + 2 * LANES), d = _mm256_loadu_##S(x + i + 3 * LANES); \
            m0 = is_max ? _mm256_max_##S(a, m0) : _mm256_min_##S(a, m0);                   \
            m1 = is_max ? _mm256_max_##S(b, m1) : _mm256_min_##S(b, m1);                   \
            m2 = is_max ? _mm256_max_##S(c, m2) : _mm256_min_##S(c, m2);                   \
            m3 = is_max ? _mm256_max_##S(d, m3) : _mm256_min_##S(d, m3);                   \
            nan = _mm256_or_##S(nan, _mm256_or_##S(_mm256_cmp_##S(a, b, _CMP_UNORD_Q),     \
                                                   _mm256_cmp_##S(c, d, _CMP_UNORD_Q)));   \
        }                                                                                  \
        for (; i < n; i += LANES) {                                                        \
            V a = _mm256_loadu_##S(x + (i + LANES <= n ? i : n - LANES));                  \
            m0 = is_max ? _mm256_max_##S(a, m0) : _mm256_min_##S(a, m0);                   \
            nan = _mm256_or_##S(nan, _mm256_cmp_##S(a, a, _CMP_UNORD_Q));                  \
        }                                                                                  \
        if (_mm256_movemask_##S(nan) != 0) {                                               \
            return NAN;                                                                    \
        }                                                                                  \
        m0 = is_max ? _mm256_max_##S(_mm256_max_##S(m0, m1), _mm256_max_##S(m2, m3))       \
                    : _mm256_min_##S(_mm256_min_##S(m0, m1), _mm256_min_##S(m2, m3));      \
        return FOLD(m0, is_max);                                                           \
    }                                                                                      \
    __attribute__((target("avx2,fma"))) static double                                      \
    NAME(const T *x, int64_t n, int is_max)                                                \
    {                                                                                      \
        if (n < LANES) {                                                                   \
            return PORTABLE(x, n, is_max);                                                 \
        }                                                                                  \
        return is_max ? NAME##_dir(x, n, 1) : NAME##_dir(x, n, 0);                         \
    }

/* The extreme of the lanes of m (no NaN among them), in registers */
static inline __attribute__((always_inline, target("avx2,fma"))) double
fold_extreme_ps(__m256 m, int is_max)
{
    __m128 q = _mm256_castps256_ps128(m), h = _mm256_extractf128_ps(m, 1);
    q = is_max ? _mm_max_ps(q, h) : _mm_min_ps(q, h);
    h = _mm_movehl_ps(q, q);
    q = is_max ? _mm_max_ps(q, h) : _mm_min_ps(q, h);
    h = _mm_shuffle_ps(q, q, 1);
    q = is_max ? _mm_max_ss(q, h) : _mm_min_ss(q, h);
    return _mm_cvtss_f32(q);
}

static inline __attribute__((always_inline, target("avx2,fma"))) double
fold_extreme_pd(__m256d m, int is_max)
{
    __m128d q = _mm256_castpd256_pd128(m), h = _mm256_extractf128_pd(m, 1);
    q = is_max ? _mm_max_pd(q, h) : _mm_min_pd(q, h);
    h = _mm_unpackhi_pd(q, q);
    q = is_max ? _mm_max_sd(q, h) : _mm_min_sd(q, h);
    return _mm_cvtsd_f64(q);
}

DEFINE_MAXMIN_AVX2(maxmin_f4_avx2, float, ps, 8, maxmin_f4_portable, fold_extreme_ps)
DEFINE_MAXMIN_AVX2(maxmin_f8_avx2, double, pd, 4, maxmin_f8_portable, fold_extreme_pd)
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
/* powsum_f4_loop and powsum_f8_loop in AVX2 registers: the sixteen lanes are four vectors
 * of four doubles (lane k in vector k / 4), the tail goes into lane 0 value after value and
 * the lanes fold in the loops' order, in registers, so the bits are the loops' (x * x is
 * exact in double for a float32 x, so there an FMA gives the bits of the product and the
 * add; float64 multiplies, then adds, as the loops do).  gcc's code of the loops
 * folded through memory: 15 ns a row, norm(dim=-1) of 4096 x 1024 float32 at 0.8x
 * PyTorch's time. */
static inline __attribute__((always_inline, target("avx2,fma"))) __m256d
powsum_term_avx2(__m256d v, __m256d acc, int square, int f4)
{
    if (!square) {
        return _mm256_add_pd(acc, _mm256_andnot_pd(_mm256_set1_pd(-0.0), v));
    }
    return f4 ? _mm256_fmadd_pd(v, v, acc) : _mm256_add_pd(acc, _mm256_mul_pd(v, v));
}

#define DEFINE_POWSUM_AVX2(NAME, T, LOAD4, F4)                                                \
    static inline __attribute__((always_inline, target("avx2,fma"))) double               \
    NAME##_dir(const T *x, int64_t n, int square)                                         \
    {                                                                                     \
        __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;                      \
        int64_t i = 0;                                                                    \
        for (; i + 16 <= n; i += 16) {                                                    \
            a0 = powsum_term_avx2(LOAD4(x + i), a0, square, F4);                              \
            a1 = powsum_term_avx2(LOAD4(x + i + 4), a1, square, F4);                          \
            a2 = powsum_term_avx2(LOAD4(x + i + 8), a2, square, F4);                          \
            a3 = powsum_term_avx2(LOAD4(x + i + 12), a3, square, F4);                         \
        }                                                                                 \
        if (i < n) {                                                                      \
            double t = _mm256_cvtsd_f64(a0);                                              \
            for (; i < n; i++) {                                                          \
                t += square ? (double)x[i] * (double)x[i] : fabs((double)x[i]);           \
            }                                                                             \
            a0 = _mm256_blend_pd(a0, _mm256_set1_pd(t), 1);                               \
        }                                                                                 \
        a0 = _mm256_add_pd(a0, a2);   /* lanes 0-3 += 8-11, 4-7 += 12-15 */               \
        a1 = _mm256_add_pd(a1, a3);                                                       \
        /* (l0 + l1, l4 + l5, l2 + l3, l6 + l7), then ((l0+l1) + (l2+l3), (l4+l5) + (l6+l7)) */ \
        __m256d h = _mm256_hadd_pd(a0, a1);                                               \
        __m128d q = _mm_add_pd(_mm256_castpd256_pd128(h), _mm256_extractf128_pd(h, 1));   \
        return _mm_cvtsd_f64(_mm_add_sd(q, _mm_unpackhi_pd(q, q)));                       \
    }                                                                                     \
    __attribute__((target("avx2,fma"))) static double                                     \
    NAME(const T *x, int64_t n, int square)                                               \
    {                                                                                     \
        return square ? NAME##_dir(x, n, 1) : NAME##_dir(x, n, 0);                        \
    }
#define LOAD4_F4(p) _mm256_cvtps_pd(_mm_loadu_ps(p))
#define LOAD4_F8(p) _mm256_loadu_pd(p)
DEFINE_POWSUM_AVX2(powsum_f4_avx2, float, LOAD4_F4, 1)
DEFINE_POWSUM_AVX2(powsum_f8_avx2, double, LOAD4_F8, 0)
#undef DEFINE_POWSUM_AVX2
#undef LOAD4_F4
#undef LOAD4_F8

__attribute__((target("avx2,fma"))) static double
powsum_avx2(PtlDtype dt, const char *p, int64_t n, int square)
{
    return dt == PTL_DTYPE_FLOAT32 ? powsum_f4_avx2((const float *)p, n, square)
                                   : powsum_f8_avx2((const double *)p, n, square);
}

/* ptl_red_powsum_runs' loops, the run's kernel inlined in each */
#define DEFINE_POWSUM_RUNS(NAME, T, DIR)                                                  \
    __attribute__((target("avx2,fma"))) static void                                       \
    NAME(const char *p, int64_t step, int64_t n, int64_t runs, int square, double *d)     \
    {                                                                                     \
        for (int64_t r = 0; square && r < runs; r++) {                                    \
            d[r] = DIR((const T *)(p + r * step), n, 1);                                  \
        }                                                                                 \
        for (int64_t r = 0; !square && r < runs; r++) {                                   \
            d[r] = DIR((const T *)(p + r * step), n, 0);                                  \
        }                                                                                 \
    }
DEFINE_POWSUM_RUNS(powsum_runs_f4_avx2, float, powsum_f4_avx2_dir)
DEFINE_POWSUM_RUNS(powsum_runs_f8_avx2, double, powsum_f8_avx2_dir)
#undef DEFINE_POWSUM_RUNS
#endif

int
ptl_red_powsum_runs(PtlDtype dt, const char *p, int64_t step, int64_t n, int64_t runs,
                    int square, double *d)
{
#ifdef HAVE_AVX2_KERNELS
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        if (dt == PTL_DTYPE_FLOAT32) {
            powsum_runs_f4_avx2(p, step, n, runs, square, d);
        }
        else {
            powsum_runs_f8_avx2(p, step, n, runs, square, d);
        }
        return 1;
    }
#endif
    (void)dt, (void)p, (void)step, (void)n, (void)runs, (void)square, (void)d;
    return 0;
}

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
 * in float32 (8 lanes per AVX2 instruction), each group's partial sums added in double.
 * From 8 to ROW_COLS columns, a group's partial sums are ceil(n / 8) vectors of eight floats
 * in registers (one load and one add per eight values, where a buffer in memory took two
 * loads and a store), the last one shifted left to end at column n (its columns twice, the
 * same adds): a count no multiple of 8 had gone through the buffer whole (sum(0) of 100000 x
 * 17 float32 at 0.84-0.94x PyTorch's time, one thread, Zen 4).  Each column's partial sum
 * adds the same values in the same order either way, so the bits do not depend on n.  Two
 * groups down their rows together (twice the chains) ran sum(0) of 100000 x 32 at 0.4-0.7x:
 * their rows, a 4 KiB page apart for 32 columns, stalled the loads. */
typedef float RedVecF __attribute__((vector_size(32)));
#define ROW_COLS 64

/* part[0 .. n) = the float32 sums of the rows r0 .. r1 - 1 of x, in nv = ceil(n / 8) vectors,
 * the last ending at column n (8 <= n <= 8 nv; nv a constant where this is inlined, so that
 * the sums stay in registers) */
static inline __attribute__((always_inline)) void
add_rows_f4_regs(float *part, const char *x, int64_t rs, int64_t r0, int64_t r1, int64_t n,
                 const int nv)
{
    RedVecF p[ROW_COLS / 8] = {{0}};
    for (int64_t r = r0; r < r1; r++) {
        const float *row = (const float *)(x + r * rs);
        for (int q = 0; q < nv; q++) {
            RedVecF u;
            memcpy(&u, row + (q < nv - 1 ? 8 * q : n - 8), sizeof u);
            p[q] += u;
        }
    }
    for (int q = 0; q < nv; q++) {
        memcpy(part + (q < nv - 1 ? 8 * q : n - 8), &p[q], sizeof(RedVecF));
    }
}

/* The loops of add_rows_f4 and add_rows_f4_avx2, inlined into each so that the compiler
 * vectorizes them for that function's target. */
static inline __attribute__((always_inline)) void
add_rows_f4_loops(double *acc, const char *x, int64_t rs, int64_t nrows, int64_t n)
{
    float part[PTL_RED_COL_BLOCK];
    for (int64_t r0 = 0; r0 < nrows; r0 += PTL_RED_COL_GROUP) {
        int64_t r1 = r0 + PTL_RED_COL_GROUP < nrows ? r0 + PTL_RED_COL_GROUP : nrows;
        switch (n >= 8 && n <= ROW_COLS ? (n + 7) / 8 : 0) {
        case 1: add_rows_f4_regs(part, x, rs, r0, r1, n, 1); break;
        case 2: add_rows_f4_regs(part, x, rs, r0, r1, n, 2); break;
        case 3: add_rows_f4_regs(part, x, rs, r0, r1, n, 3); break;
        case 4: add_rows_f4_regs(part, x, rs, r0, r1, n, 4); break;
        case 5: add_rows_f4_regs(part, x, rs, r0, r1, n, 5); break;
        case 6: add_rows_f4_regs(part, x, rs, r0, r1, n, 6); break;
        case 7: add_rows_f4_regs(part, x, rs, r0, r1, n, 7); break;
        case 8: add_rows_f4_regs(part, x, rs, r0, r1, n, 8); break;
        default:
            memset(part, 0, sizeof(float) * (size_t)n);
            for (int64_t r = r0; r < r1; r++) {
                const float *row = (const float *)(x + r * rs);
                for (int64_t k = 0; k < n; k++) {
                    part[k] += row[k];
                }
            }
            break;
        }
        for (int64_t k = 0; k < n; k++) {
            acc[k] += (double)part[k];
        }
    }
}
#undef ROW_COLS

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

/* Column reductions of float32/float64 for the kinds other than the sums: max/min,
 * argmax/argmin (max.dim, min.dim), prod and the 1- and 2-norms.  As for the
 * sums, a block of m outputs is folded row after row, reading the input in memory order:
 * val[k] gets the extreme (NaN when the column has one: the NaN itself, which then beats
 * everything, as in step_d) or the sum of |x|^p, at[k] the row of the extreme, the first of
 * equal values; prod (float64 here: float32 takes ptl_red_prod_rows_lowp's lanes) multiplies
 * in double in row order, as step_d does, so its bits do not change.  Inlined into a portable and an AVX2 function, so that each vectorizes the
 * row loops for its target. */
/* A pass of a column extreme over the rows r .. r + 3 of R (past R row R - 1 again, which
 * changes nothing) for the m columns: the extreme b (the first of equal values kept, a NaN b
 * kept) and the last NaN n of each column, from best and nan, or (first) from row 0 with r
 * = 1; last: n where a NaN, else b, into val */
#define DEFINE_EXTREME_PASS(T)                                                            \
    static inline __attribute__((always_inline)) void extreme_pass_##T(                  \
        const char *p, int64_t rs, int64_t R, int64_t r, int64_t m, T *best, T *nan,      \
        double *val, const int first, const int last, const int is_max)                  \
    {                                                                                     \
        const T *x0 = (const T *)p, *x[4];                                                \
        for (int j = 0; j < 4; j++) {                                                     \
            x[j] = (const T *)(p + (r + j < R ? r + j : R - 1) * rs);                     \
        }                                                                                 \
        for (int64_t k = 0; k < m; k++) {                                                 \
            T b = first ? x0[k] : best[k];                                                \
            T n = first ? (b != b ? b : 0) : nan[k];                                      \
            _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {                         \
                T v = x[j][k];                                                            \
                b = (is_max ? v > b : v < b) ? v : b;                                     \
                n = v != v ? v : n;                                                       \
            }                                                                             \
            if (last) {                                                                   \
                val[k] = n != n ? (double)n : (double)b;                                  \
            }                                                                             \
            else {                                                                        \
                best[k] = b;                                                              \
                nan[k] = n;                                                               \
            }                                                                             \
        }                                                                                 \
    }
DEFINE_EXTREME_PASS(float)
DEFINE_EXTREME_PASS(double)
#undef DEFINE_EXTREME_PASS

/* extreme_pass_T from row r, max or min (is_max a constant in each) */
#define COLUMN_EXTREME_PASS(T, R0, FIRST, LAST)                                           \
    do {                                                                                  \
        if (is_max) {                                                                     \
            extreme_pass_##T(p, rs, R, R0, m, best, nan, val, FIRST, LAST, 1);            \
        }                                                                                 \
        else {                                                                            \
            extreme_pass_##T(p, rs, R, R0, m, best, nan, val, FIRST, LAST, 0);            \
        }                                                                                 \
    } while (0)
#define DEFINE_COLUMN_FOLD(NAME, T)                                                       \
    static inline __attribute__((always_inline)) void NAME(PtlRedColOp op, const char *p, \
                                                           int64_t rs, int64_t R,         \
                                                           int64_t m, double *val,        \
                                                           int64_t *at)                   \
    {                                                                                     \
        int is_max = op == PTL_RED_COL_MAX || op == PTL_RED_COL_ARGMAX;                   \
        if (op == PTL_RED_COL_PROD) {  /* in double, row after row: step_d's order and bits */ \
            for (int64_t k = 0; k < m; k++) {                                             \
                val[k] = 1;                                                               \
            }                                                                             \
            for (int64_t r = 0; r < R; r++) {                                             \
                const T *x = (const T *)(p + r * rs);                                     \
                for (int64_t k = 0; k < m; k++) {                                         \
                    val[k] *= (double)x[k];                                               \
                }                                                                         \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        if (op == PTL_RED_COL_NORM1 || op == PTL_RED_COL_NORM2) {                         \
            int square = op == PTL_RED_COL_NORM2;                                         \
            for (int64_t k = 0; k < m; k++) {                                             \
                val[k] = 0;                                                               \
            }                                                                             \
            for (int64_t r = 0; r < R; r++) {                                             \
                const T *x = (const T *)(p + r * rs);                                     \
                if (square) {                                                             \
                    for (int64_t k = 0; k < m; k++) {                                     \
                        val[k] += (double)x[k] * (double)x[k];                            \
                    }                                                                     \
                }                                                                         \
                else {                                                                    \
                    for (int64_t k = 0; k < m; k++) {                                     \
                        val[k] += fabs((double)x[k]);                                     \
                    }                                                                     \
                }                                                                         \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        if (op == PTL_RED_COL_MAX || op == PTL_RED_COL_MIN) { /* rows 0-4, 4 a pass after */ \
            T best[PTL_RED_COL_BLOCK], nan[PTL_RED_COL_BLOCK];                            \
            int64_t r = 5;                                                                \
            if (R > 5) {                                                                  \
                COLUMN_EXTREME_PASS(T, 1, 1, 0);                                          \
                for (; r + 4 < R; r += 4) {                                               \
                    COLUMN_EXTREME_PASS(T, r, 0, 0);                                      \
                }                                                                         \
                COLUMN_EXTREME_PASS(T, r, 0, 1);                                          \
            }                                                                             \
            else {                                                                        \
                COLUMN_EXTREME_PASS(T, 1, 1, 1);                                          \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        T best[PTL_RED_COL_BLOCK];                                                        \
        const T *x0 = (const T *)p;                                                       \
        for (int64_t k = 0; k < m; k++) {                                                 \
            best[k] = x0[k];                                                              \
        }                                                                                 \
        for (int64_t k = 0; k < m; k++) {                                                 \
            at[k] = 0;                                                                    \
        }                                                                                 \
        for (int64_t r = 1; r < R; r++) {                                                 \
            const T *x = (const T *)(p + r * rs);                                         \
            for (int64_t k = 0; k < m; k++) {                                             \
                T v = x[k], b = best[k];                                                  \
                int take = ((is_max ? v > b : v < b) | (v != v)) & (b == b);              \
                best[k] = take ? v : b;                                                   \
                at[k] = take ? r : at[k];                                                 \
            }                                                                             \
        }                                                                                 \
        for (int64_t k = 0; k < m; k++) {                                                 \
            val[k] = best[k];                                                             \
        }                                                                                 \
    }

DEFINE_COLUMN_FOLD(column_fold_f4, float)
DEFINE_COLUMN_FOLD(column_fold_f8, double)

/* The dispatch over the element type, once per target */
#define DEFINE_COLUMN_FOLD_TARGET(NAME, ATTR)                                             \
    ATTR static void                                                                      \
    NAME(PtlDtype dt, PtlRedColOp op, const char *p, int64_t rs, int64_t R, int64_t m,    \
         double *val, int64_t *at)                                                        \
    {                                                                                     \
        if (dt == PTL_DTYPE_FLOAT32) {                                                    \
            column_fold_f4(op, p, rs, R, m, val, at);                                     \
        }                                                                                 \
        else {                                                                            \
            column_fold_f8(op, p, rs, R, m, val, at);                                     \
        }                                                                                 \
    }
DEFINE_COLUMN_FOLD_TARGET(column_fold_portable, )
#ifdef HAVE_AVX2_KERNELS
DEFINE_COLUMN_FOLD_TARGET(column_fold_avx2, __attribute__((target("avx2,fma"))))
/* 16 floats a vector: amax(0) of 2 x 40000 float32 had been 0.55x PyTorch's time with 8 */
DEFINE_COLUMN_FOLD_TARGET(column_fold_avx512, __attribute__((target("avx512f,avx512vl,fma"))))
#endif
#undef DEFINE_COLUMN_FOLD_TARGET

void
ptl_red_column_fold(PtlDtype dt, PtlRedColOp op, const char *p, int64_t rs, int64_t R,
                    int64_t m, double *val, int64_t *at, int avx2)
{
#ifdef HAVE_AVX2_KERNELS
    if (avx2 && ptl_cpu_capability() >= PTL_CPU_AVX512) {
        column_fold_avx512(dt, op, p, rs, R, m, val, at);
        return;
    }
    if (avx2) {
        column_fold_avx2(dt, op, p, rs, R, m, val, at);
        return;
    }
#endif
    (void)avx2;
    column_fold_portable(dt, op, p, rs, R, m, val, at);
}

/* Note [Half-precision sums]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * float16 and bfloat16 sums accumulate in float32, as PyTorch's (its opmath type; it sums in
 * a cascade of float32 partial sums).  A contiguous run is converted LOWP_BLOCK values at a
 * time into a float32 buffer by the cast loops (F16C, Note [Half-precision conversions]),
 * the buffer is summed into LOWP_LANES float32 lanes (value i into lane i % LOWP_LANES), the
 * lanes are folded pairwise into the block's sum, and the block sums are added in double as
 * the other float sums are.  The lanes are one logical array however wide the vectors are
 * (8 ymm or 4 zmm registers, or plain C), so every width gives the same bits (Note [Vector
 * twins]); only the block structure fixes the order.  Column sums add a float32 row at a
 * time into PTL_RED_COL_GROUP-row float32 partial sums, then into double, as the float32
 * columns do; the vector loops take four rows into a register of partial sums before they
 * store it, and the last columns through masked loads.  Extremes are exact: the block's
 * float32 max/min.  Before, every value went through block_load's scalar conversion to
 * double: 0.05-0.13x PyTorch's time on 1e6. */
#define LOWP_BLOCK 1024
#define LOWP_LANES 64
#define LOWP_PROD_LANES 32   /* Note [Half-precision products] */

/* A float16 (bf = 0) or bfloat16 (bf = 1) value as float32 */
static inline float
lowp_value(const uint16_t *x, int bf)
{
    ptl_half h = {*x};
    ptl_bf16 g = {*x};
    return bf ? ptl_bf16_to_f(g) : ptl_half_to_f(h);
}

/* lanes[k] += x[i + k] for the groups of LOWP_LANES values of x[0..n) (n a multiple of
 * LOWP_LANES), and part[k] += x[k] (k < n), in portable C; their vector twins, which convert
 * with F16C's vcvtph2ps (float16) or a 16-bit shift (bfloat16), are block_sum_lowp_* (a whole
 * block in registers) and add_lowp_row_* */
static void
lane_sum_portable(float *lanes, const uint16_t *x, int64_t n, int bf)
{
    for (int64_t i = 0; i < n; i += LOWP_LANES) {
        for (int k = 0; k < LOWP_LANES; k++) {
            lanes[k] += lowp_value(x + i + k, bf);
        }
    }
}

static void
add_lowp_row_portable(float *part, const uint16_t *x, int64_t n, int bf)
{
    for (int64_t k = 0; k < n; k++) {
        part[k] += lowp_value(x + k, bf);
    }
}

/* part[k] += x[r * rs + k] for the rows r < nrows in order (rs in bytes, k < n): each column's
 * adds in row order, whatever the width, so every width gives the same bits.  The vector
 * twins add LOWP_ROW_STEP rows into a vector of part at a time (adding a row into part
 * in memory loaded and stored part at every row: float16 sum(0) of 1000 x 1000 at 0.64x
 * PyTorch's time). */
#define LOWP_ROW_STEP 4
static void
add_lowp_rows_portable(float *part, const char *x, int64_t rs, int64_t nrows, int64_t n, int bf)
{
    for (int64_t r = 0; r < nrows; r++) {
        add_lowp_row_portable(part, (const uint16_t *)(x + r * rs), n, bf);
    }
}

#ifdef PTL_HAVE_AVX2_KERNELS
#define LOWP_ATTR_ps __attribute__((target("avx2,fma,f16c")))
#define LOWP_ATTR_ps512 PTL_AVX512
#define LOWP_LOAD_ps(x, bf)                                                               \
    ((bf) ? _mm256_castsi256_ps(_mm256_slli_epi32(                                        \
                _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(x))), 16))        \
          : _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x))))
#define LOWP_LOAD_ps512(x, bf)                                                            \
    ((bf) ? _mm512_castsi512_ps(_mm512_slli_epi32(                                        \
                _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(x))), 16))     \
          : _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(x))))
/* part[k] += x[k] for k < m < the vector's lanes: masked loads and stores (AVX-512), or a
 * masked float load and store and a zero-padded copy of x (AVX2) */
LOWP_ATTR_ps512 static inline void
add_lowp_tail_ps512(float *part, const uint16_t *x, int64_t m, int bf)
{
    __mmask16 km = (__mmask16)((1u << m) - 1);
    __m256i h = _mm256_maskz_loadu_epi16(km, x);
    __m512 xv = bf ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16))
                   : _mm512_cvtph_ps(h);
    _mm512_mask_storeu_ps(part, km, _mm512_add_ps(_mm512_maskz_loadu_ps(km, part), xv));
}

LOWP_ATTR_ps static inline void
add_lowp_tail_ps(float *part, const uint16_t *x, int64_t m, int bf)
{
    uint16_t xt[8] = {0};
    for (int64_t k = 0; k < m; k++) {
        xt[k] = x[k];
    }
    __m256i im = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)m),
                                    _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256 v = _mm256_add_ps(_mm256_maskload_ps(part, im), LOWP_LOAD_ps(xt, bf));
    _mm256_maskstore_ps(part, im, v);
}

#define DEFINE_LOWP_TWINS(S)                                                              \
    LOWP_ATTR_##S static void                                                             \
    add_lowp_row_##S(float *part, const uint16_t *x, int64_t n, int bf)                   \
    {                                                                                     \
        int64_t k = 0;                                                                    \
        for (; k + PTL_VLANES(S) <= n; k += PTL_VLANES(S)) {                              \
            PTL_VSTOREF(S, part + k,                                                      \
                        PTL_V(S, add)(PTL_VLOADF(S, part + k), LOWP_LOAD_##S(x + k, bf))); \
        }                                                                                 \
        if (k < n) {                                                                      \
            add_lowp_tail_##S(part + k, x + k, n - k, bf);                                \
        }                                                                                 \
    }                                                                                     \
    LOWP_ATTR_##S static void                                                             \
    add_lowp_rows_##S(float *part, const char *x, int64_t rs, int64_t nrows, int64_t n,   \
                      int bf)                                                             \
    {                                                                                     \
        int64_t r = 0;                                                                    \
        for (; r + LOWP_ROW_STEP <= nrows; r += LOWP_ROW_STEP) {                          \
            const uint16_t *xr[LOWP_ROW_STEP];                                            \
            for (int j = 0; j < LOWP_ROW_STEP; j++) {                                     \
                xr[j] = (const uint16_t *)(x + (r + j) * rs);                             \
            }                                                                             \
            int64_t k = 0;                                                                \
            for (; k + PTL_VLANES(S) <= n; k += PTL_VLANES(S)) {                          \
                PTL_VT(S) a = PTL_VLOADF(S, part + k);                                    \
                for (int j = 0; j < LOWP_ROW_STEP; j++) {                                 \
                    a = PTL_V(S, add)(a, LOWP_LOAD_##S(xr[j] + k, bf));                   \
                }                                                                         \
                PTL_VSTOREF(S, part + k, a);                                              \
            }                                                                             \
            for (int j = 0; k < n && j < LOWP_ROW_STEP; j++) {                            \
                add_lowp_tail_##S(part + k, xr[j] + k, n - k, bf);                        \
            }                                                                             \
        }                                                                                 \
        for (; r < nrows; r++) {                                                          \
            add_lowp_row_##S(part, (const uint16_t *)(x + r * rs), n, bf);                \
        }                                                                                 \
    }
DEFINE_LOWP_TWINS(ps)
DEFINE_LOWP_TWINS(ps512)
#undef DEFINE_LOWP_TWINS

/* lanes[k] *= x[i + k] in double for the groups of LOWP_PROD_LANES values of x[0..n) (n a
 * multiple of LOWP_PROD_LANES; Note [Half-precision products]): the lanes in 8 ymm or 4 zmm
 * registers of doubles, lane k in register k / 4 or k / 8 */
LOWP_ATTR_ps static void
prod_lanes_lowp_ps(double *lanes, const uint16_t *x, int64_t n, int bf)
{
    enum { NV = LOWP_PROD_LANES / 4 };
    __m256d a[NV];
    for (int j = 0; j < NV; j++) {
        a[j] = _mm256_loadu_pd(lanes + 4 * j);
    }
    for (int64_t i = 0; i < n; i += LOWP_PROD_LANES) {
        for (int j = 0; j < NV; j += 2) {
            __m256 v = LOWP_LOAD_ps(x + i + 4 * j, bf);
            a[j] = _mm256_mul_pd(a[j], _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
            a[j + 1] = _mm256_mul_pd(a[j + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
        }
    }
    for (int j = 0; j < NV; j++) {
        _mm256_storeu_pd(lanes + 4 * j, a[j]);
    }
}

LOWP_ATTR_ps512 static void
prod_lanes_lowp_ps512(double *lanes, const uint16_t *x, int64_t n, int bf)
{
    enum { NV = LOWP_PROD_LANES / 8 };
    __m512d a[NV];
    for (int j = 0; j < NV; j++) {
        a[j] = _mm512_loadu_pd(lanes + 8 * j);
    }
    for (int64_t i = 0; i < n; i += LOWP_PROD_LANES) {
        for (int j = 0; j < NV; j += 2) {
            __m512 v = LOWP_LOAD_ps512(x + i + 8 * j, bf);
            a[j] = _mm512_mul_pd(a[j], _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
            a[j + 1] = _mm512_mul_pd(a[j + 1],
                                     _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)));
        }
    }
    for (int j = 0; j < NV; j++) {
        _mm512_storeu_pd(lanes + 8 * j, a[j]);
    }
}
/* The float32 sum of one block x[0..m) (m <= LOWP_BLOCK) in ptl_red_sum_lowp's order, all in
 * registers: value i into lane i % LOWP_LANES (the last group's missing values as +0, which
 * leaves a lane unchanged, since a lane summed from +0 is never -0), then the
 * lanes folded pairwise (lane k + w into lane k, w = 32, 16, ..., 1).  Through memory (a
 * memset, the groups, the tail, a scalar fold) the fold and the set-up took as long as the
 * adds on rows of 1000; a zero-filled copy of the whole last group (128 bytes cleared with
 * rep stos at every block, the accumulators kept in memory) left float16 sum() of 1e6 at
 * 0.7-0.9x PyTorch's time on a Zen 3.  bf is a constant where block_sum_lowp_ps calls it,
 * so each dtype gets its own loop. */
#include "reduce_lowp_block.h"

LOWP_ATTR_ps512 static float
block_sum_lowp_ps512(const uint16_t *x, int64_t m, int bf)
{
    __m512 a[4];
    int64_t full = m / LOWP_LANES * LOWP_LANES;
    for (int j = 0; j < 4; j++) {
        a[j] = _mm512_setzero_ps();
    }
    for (int64_t i = 0; i < full; i += LOWP_LANES) {
        for (int j = 0; j < 4; j++) {
            a[j] = _mm512_add_ps(a[j], LOWP_LOAD_ps512(x + i + 16 * j, bf));
        }
    }
    for (int j = 0; j < 4 && full + 16 * j < m; j++) {
        int64_t r = m - full - 16 * j;
        __mmask16 km = (__mmask16)(r >= 16 ? 0xffffu : (1u << r) - 1);
        __m256i h = _mm256_maskz_loadu_epi16(km, x + full + 16 * j);
        __m512 v = bf ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16))
                      : _mm512_cvtph_ps(h);
        a[j] = _mm512_add_ps(a[j], v);
    }
    a[0] = _mm512_add_ps(a[0], a[2]);
    a[1] = _mm512_add_ps(a[1], a[3]);
    a[0] = _mm512_add_ps(a[0], a[1]);
    __m256 y = _mm256_add_ps(_mm512_castps512_ps256(a[0]), _mm512_extractf32x8_ps(a[0], 1));
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(y), _mm256_extractf128_ps(y, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
    return _mm_cvtss_f32(q);
}
#undef LOWP_LOAD_ps
#undef LOWP_LOAD_ps512
#undef LOWP_ATTR_ps
#undef LOWP_ATTR_ps512
#endif

/* The width of the lowp twins: 2 (AVX-512), 1 (AVX2 with F16C, or bfloat16) or 0 (portable) */
static int
lowp_width(int bf)
{
#ifdef PTL_HAVE_AVX2_KERNELS
    static int f16c = -1;
    PtlCpuCapability cap = ptl_cpu_capability();
    if (f16c < 0) {
        __builtin_cpu_init();
        f16c = __builtin_cpu_supports("f16c");
    }
    return cap >= PTL_CPU_AVX512 ? 2 : cap >= PTL_CPU_AVX2 && (bf || f16c) ? 1 : 0;
#else
    (void)bf;
    return 0;
#endif
}

/* buf[0..n) = the float16 / bfloat16 values p[0..n) as float32 (n <= LOWP_BLOCK) */
static void
lowp_to_float(PtlDtype dt, const char *p, int64_t n, float *buf)
{
    char *d[2] = {(char *)buf, (char *)p};
    int64_t st[2] = {sizeof(float), (int64_t)ptl_dtype_itemsize(dt)};
    ptl_cast_loop(PTL_DTYPE_FLOAT32, dt)(d, st, n, NULL);
}

double
ptl_red_sum_lowp(PtlDtype dt, const char *p, int64_t n)
{
    const uint16_t *x = (const uint16_t *)p;
    int bf = dt == PTL_DTYPE_BFLOAT16, width = lowp_width(bf);
    float lanes[LOWP_LANES];
    double s = 0;
    for (int64_t b = 0; b < n; b += LOWP_BLOCK) {
        int64_t m = n - b < LOWP_BLOCK ? n - b : LOWP_BLOCK, full = m / LOWP_LANES * LOWP_LANES;
#ifdef PTL_HAVE_AVX2_KERNELS
        if (width > 0) {
            s += (double)(width == 2 ? block_sum_lowp_ps512 : block_sum_lowp_ps)(x + b, m, bf);
            continue;
        }
#endif
        memset(lanes, 0, sizeof(lanes));
        lane_sum_portable(lanes, x + b, full, bf);
        /* the tail's value i - full into lane i - full */
        add_lowp_row_portable(lanes, x + b + full, m - full, bf);
        for (int w = LOWP_LANES / 2; w >= 1; w /= 2) {
            for (int k = 0; k < w; k++) {
                lanes[k] += lanes[k + w];
            }
        }
        s += (double)lanes[0];
    }
    (void)width;
    return s;
}

double
ptl_red_maxmin_lowp(PtlDtype dt, const char *p, int64_t n, int is_max)
{
    float buf[LOWP_BLOCK];
    double r = is_max ? -INFINITY : INFINITY;
    for (int64_t b = 0; b < n; b += LOWP_BLOCK) {
        int64_t m = n - b < LOWP_BLOCK ? n - b : LOWP_BLOCK;
        lowp_to_float(dt, p + b * 2, m, buf);
        double v = ptl_red_maxmin_contiguous(PTL_DTYPE_FLOAT32, (const char *)buf, m, is_max);
        if (v != v) {
            return v;
        }
        r = is_max ? (v > r ? v : r) : (v < r ? v : r);
    }
    return r;
}

/* best[k] / nan[k] fold the float32 row x (k < n): the extreme, and a NaN seen (the column
 * folds' selects, so that the loops vectorize); inlined into a portable and an AVX2 function */
static inline __attribute__((always_inline)) void
maxmin_row_f4_loop(float *best, float *nan, const float *x, int64_t n, int is_max)
{
    if (is_max) {
        for (int64_t k = 0; k < n; k++) {
            best[k] = x[k] > best[k] ? x[k] : best[k];
            nan[k] = x[k] != x[k] ? x[k] : nan[k];
        }
    }
    else {
        for (int64_t k = 0; k < n; k++) {
            best[k] = x[k] < best[k] ? x[k] : best[k];
            nan[k] = x[k] != x[k] ? x[k] : nan[k];
        }
    }
}

static void
maxmin_row_f4_portable(float *best, float *nan, const float *x, int64_t n, int is_max)
{
    maxmin_row_f4_loop(best, nan, x, n, is_max);
}

#ifdef HAVE_AVX2_KERNELS
__attribute__((target("avx2,fma"))) static void
maxmin_row_f4_avx2(float *best, float *nan, const float *x, int64_t n, int is_max)
{
    maxmin_row_f4_loop(best, nan, x, n, is_max);
}
#endif

void
ptl_red_maxmin_rows_lowp(double *val, PtlDtype dt, const char *p, int64_t rs, int64_t R,
                         int64_t n, int is_max)
{
    float best[PTL_RED_COL_BLOCK], nan[PTL_RED_COL_BLOCK], buf[LOWP_BLOCK];
    for (int64_t k = 0; k < n; k++) {
        best[k] = is_max ? -INFINITY : INFINITY;
        nan[k] = 0;
    }
    for (int64_t r = 0; r < R; r++) {
        for (int64_t k0 = 0; k0 < n; k0 += LOWP_BLOCK) {
            int64_t m = n - k0 < LOWP_BLOCK ? n - k0 : LOWP_BLOCK;
            lowp_to_float(dt, p + r * rs + k0 * 2, m, buf);
#ifdef HAVE_AVX2_KERNELS
            if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
                maxmin_row_f4_avx2(best + k0, nan + k0, buf, m, is_max);
                continue;
            }
#endif
            maxmin_row_f4_portable(best + k0, nan + k0, buf, m, is_max);
        }
    }
    for (int64_t k = 0; k < n; k++) {
        val[k] = nan[k] != nan[k] ? (double)nan[k] : (double)best[k];
    }
}

int64_t
ptl_red_find_lowp(PtlDtype dt, const char *p, int64_t n, double v)
{
    float buf[LOWP_BLOCK];
    for (int64_t b = 0; b < n; b += LOWP_BLOCK) {
        int64_t m = n - b < LOWP_BLOCK ? n - b : LOWP_BLOCK;
        lowp_to_float(dt, p + b * 2, m, buf);
        for (int64_t k = 0; k < m; k++) {
            if ((double)buf[k] == v || (v != v && buf[k] != buf[k])) {
                return b + k;
            }
        }
    }
    return n - 1;
}

/* acc[k] += part[k] (k < n), in double: the same bits on either clone (Note [Loop clones]) */
PTL_LOOP_CLONES static void
add_floats_to_doubles(double *acc, const float *part, int64_t n)
{
    for (int64_t k = 0; k < n; k++) {
        acc[k] += (double)part[k];
    }
}

void
ptl_red_add_rows_lowp(double *acc, PtlDtype dt, const char *x, int64_t rs, int64_t nrows,
                      int64_t n)
{
    float part[PTL_RED_COL_BLOCK];
    int bf = dt == PTL_DTYPE_BFLOAT16, width = lowp_width(bf);
    for (int64_t r0 = 0; r0 < nrows; r0 += PTL_RED_COL_GROUP) {
        int64_t r1 = r0 + PTL_RED_COL_GROUP < nrows ? r0 + PTL_RED_COL_GROUP : nrows;
        memset(part, 0, sizeof(float) * (size_t)n);
#ifdef PTL_HAVE_AVX2_KERNELS
        if (width > 0) {
            (width == 2 ? add_lowp_rows_ps512 : add_lowp_rows_ps)(part, x + r0 * rs, rs,
                                                                  r1 - r0, n, bf);
        }
        else
#endif
        {
            add_lowp_rows_portable(part, x + r0 * rs, rs, r1 - r0, n, bf);
        }
        add_floats_to_doubles(acc, part, n);
    }
    (void)width;
}

/* Note [Half-precision products]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A float16/bfloat16 product multiplies in double, as the other float products do, but in
 * LOWP_PROD_LANES lanes: value i of a run into lane i % LOWP_PROD_LANES, and the lanes folded
 * pairwise (lane k times lane k + w, w = 16, 8, ..., 1) into the run's product.  One chain of
 * dependent multiplies, a scalar conversion a value, had been 0.07x (float16) and 0.19x
 * (bfloat16) PyTorch's time on 1e6 values.  The values reach the lanes converted to float32
 * by the cast loops (exact), LOWP_BLOCK at a time.  The column kernel (prod(0) of a matrix)
 * keeps the lanes of every column and gives row r to lane r % LOWP_PROD_LANES, so a column's
 * product has the bits of the same values as a contiguous run.  The order depends on the run
 * alone (and on a full reduction's chunks, which reduce.c fixes by the length), never on the
 * vector width or the thread count.  float32 products multiply in float32 lanes instead
 * (Note [Float32 products]). */
#define LOWP_PROD_COLS 128

/* lanes[k] *= x[i + k] for the groups of LOWP_PROD_LANES values of x[0..n), then for the
 * last group's k < n % LOWP_PROD_LANES */
PTL_LOOP_CLONES static void
prod_lanes(double *lanes, const float *x, int64_t n)
{
    double a[LOWP_PROD_LANES];   /* a copy, so that the lanes stay in registers */
    int64_t i = 0;
    memcpy(a, lanes, sizeof(a));
    for (; i + LOWP_PROD_LANES <= n; i += LOWP_PROD_LANES) {
        for (int k = 0; k < LOWP_PROD_LANES; k++) {
            a[k] *= (double)x[i + k];
        }
    }
    for (int64_t k = 0; i + k < n; k++) {
        a[k] *= (double)x[i + k];
    }
    memcpy(lanes, a, sizeof(a));
}

/* row[k] *= x[k] (k < n) */
PTL_LOOP_CLONES static void
prod_row(double *row, const float *x, int64_t n)
{
    for (int64_t k = 0; k < n; k++) {
        row[k] *= (double)x[k];
    }
}

/* The lanes folded pairwise into lanes[0], which it returns */
static double
prod_fold_lanes(double *lanes)
{
    for (int w = LOWP_PROD_LANES / 2; w >= 1; w /= 2) {
        for (int k = 0; k < w; k++) {
            lanes[k] *= lanes[k + w];
        }
    }
    return lanes[0];
}

double
ptl_red_prod_lowp(PtlDtype dt, const char *p, int64_t st, int64_t n)
{
    int64_t sts[2] = {sizeof(float), st};
    float buf[LOWP_BLOCK];
    double lanes[LOWP_PROD_LANES];
    int64_t b = 0;
    if (dt == PTL_DTYPE_FLOAT32) {
        return ptl_red_prod_run_f4(p, st, n);
    }
    for (int k = 0; k < LOWP_PROD_LANES; k++) {
        lanes[k] = 1;
    }
    PtlLoop to_f = ptl_cast_loop(PTL_DTYPE_FLOAT32, dt);
#ifdef PTL_HAVE_AVX2_KERNELS
    int bf = dt == PTL_DTYPE_BFLOAT16, width = lowp_width(bf);
    if (width > 0 && st == 2) {   /* the whole groups of lanes, then the rest below */
        b = n / LOWP_PROD_LANES * LOWP_PROD_LANES;
        (width == 2 ? prod_lanes_lowp_ps512 : prod_lanes_lowp_ps)(lanes, (const uint16_t *)p, b,
                                                                  bf);
    }
#endif
    for (; b < n; b += LOWP_BLOCK) {   /* b and LOWP_BLOCK: multiples of the lanes */
        int64_t m = n - b < LOWP_BLOCK ? n - b : LOWP_BLOCK;
        char *d[2] = {(char *)buf, (char *)p + b * st};
        to_f(d, sts, m, NULL);
        prod_lanes(lanes, buf, m);
    }
    return prod_fold_lanes(lanes);
}

void
ptl_red_prod_rows_lowp(double *val, PtlDtype dt, const char *p, int64_t rs, int64_t R,
                       int64_t n)
{
    PtlLoop to_f = ptl_cast_loop(PTL_DTYPE_FLOAT32, dt);
    int64_t isz = (int64_t)ptl_dtype_itemsize(dt), sts[2] = {sizeof(float), isz};
    float buf[LOWP_PROD_COLS];
    double lanes[LOWP_PROD_LANES][LOWP_PROD_COLS], col[LOWP_PROD_LANES];
    if (dt == PTL_DTYPE_FLOAT32) {
        ptl_red_prod_rows_f4(val, p, rs, R, n);
        return;
    }
    for (int64_t c0 = 0; c0 < n; c0 += LOWP_PROD_COLS) {
        int64_t m = n - c0 < LOWP_PROD_COLS ? n - c0 : LOWP_PROD_COLS;
        for (int l = 0; l < LOWP_PROD_LANES; l++) {
            for (int64_t k = 0; k < m; k++) {
                lanes[l][k] = 1;
            }
        }
        for (int64_t r = 0; r < R; r++) {
            char *d[2] = {(char *)buf, (char *)p + r * rs + c0 * isz};
            to_f(d, sts, m, NULL);
            prod_row(lanes[r % LOWP_PROD_LANES], buf, m);
        }
        for (int64_t k = 0; k < m; k++) {
            for (int l = 0; l < LOWP_PROD_LANES; l++) {
                col[l] = lanes[l][k];
            }
            val[c0 + k] = prod_fold_lanes(col);
        }
    }
}

/* (reduce_kernels.h) vector divisions, or a product where n is a power of two (x / n rounds
 * as x (1 / n) does, 1 / n exact): a division at a time had been a sixth of the time of the
 * 8 x 8 planes' means and pools of 64 x 256 x 8 x 8 channels_last */
PTL_LOOP_CLONES void
ptl_red_mean_store_f4(float *restrict o, const double *restrict v, int64_t m, int64_t n)
{
    const double inv = 1 / (double)n;
    if (n > 0 && (n & (n - 1)) == 0) {
        for (int64_t k = 0; k < m; k++) {
            o[k] = (float)(v[k] * inv);
        }
        return;
    }
    for (int64_t k = 0; k < m; k++) {
        o[k] = (float)(v[k] / (double)n);
    }
}

/* (reduce_kernels.h) */
PTL_LOOP_CLONES int64_t
ptl_red_count_nonzero_contiguous(PtlDtype dt, const void *x, int64_t n)
{
    int64_t c = 0;
    if (dt == PTL_DTYPE_FLOAT32) {
        const float *f = x;
        for (int64_t k = 0; k < n; k++) {
            c += f[k] != 0;
        }
    }
    else if (dt == PTL_DTYPE_FLOAT64) {
        const double *d = x;
        for (int64_t k = 0; k < n; k++) {
            c += d[k] != 0;
        }
    }
    else {
        const uint8_t *b = x;
        for (int64_t k = 0; k < n; k++) {
            c += b[k] != 0;
        }
    }
    return c;
}
