/* pool_global.c -- the average poolings that skip pool.c's window walk: whole planes
 * (adaptive_avg_pool2d to 1 x 1), wide adaptive windows and narrow adaptive windows that
 * do not tile the input.  Mirrors ATen/native/cpu/AdaptiveAvgPoolKernel.cpp.  See Note
 * [Pooling windows] in pool.c. */
#include <string.h>

#include "../../c10/cpu_features.h"
#include "../loops.h"
#include "pool_impl.h"
#include "reduce_kernels.h"
#include "vec_math.h"

/* Note [Global average pooling]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * adaptive_avg_pool2d to 1 x 1 (the head of every ResNet) averages whole planes: one
 * contiguous run of H * W values each, so it skips the window walk of avg_plane (which went
 * value by value through nn_load / nn_store: 20 ms for [32, 64, 32, 32], 200x PyTorch's
 * time).  The forward sums each plane in sixteen double lanes (float32: 32 float lanes add 8
 * values each first, one widening per 8 values) and divides once in double;
 * the backward fills each gradient plane with g / (H * W) rounded to the work dtype, as
 * avg_plane's backward does.  So the forward is more accurate than a float sum (avg_plane added
 * in the work dtype, value after value, PyTorch's way too), and the backward gives
 * avg_plane's bits.  Adaptive windows at least WIDE_WINDOW inputs wide (adaptive_avg_pool2d
 * to 2 x 2 of 32 x 32 planes: 16 x 16 windows) are summed the same way, one window at a
 * time, its rows one after the other into the sixteen double lanes (window_sum; a whole
 * plane is one row): the window walk went through its 16 taps with output rows of 2, call
 * after call.  Their bits change from the window walk's float sums to these double ones,
 * the error from about n ulp of the sum to about one. */

/* The sixteen double lanes are four vectors of four (GCC's vector types: SSE2 pairs in the
 * baseline build, one register each in the AVX2 one, the same sums either way; plain arrays
 * went through the stack, scalar, at 4x PyTorch's time on 7 x 7 planes).  Lane k holds the
 * values i = k mod 16 of each row, added in order.  A row's last values are zero-padded to
 * sixteen: a lane never holds -0 (it starts at +0), so a padding +0 leaves its bits alone.
 * The helpers of the loop clones are always inlined: an outlined copy (gcc makes one when they
 * grow) is compiled for the baseline x86-64 only (Note [Loop clones]). */
typedef double PoolVec __attribute__((vector_size(32)));
typedef float PoolVecF __attribute__((vector_size(16)));
typedef float PoolVecF8 __attribute__((vector_size(32)));

/* *acc += 4 floats at p as doubles (no vector return value: it would differ between the
 * baseline and AVX2 ABIs).  Built element by element: gcc 12 turns that into one vcvtps2pd,
 * but __builtin_convertvector into two halves and a vinsertf128 (5 instructions). */
static inline __attribute__((always_inline)) void
pool_add_f4(PoolVec *acc, const float *p)
{
    PoolVec u = {p[0], p[1], p[2], p[3]};
    *acc += u;
}

/* *acc += a + b, four floats each widened to double (built as pool_add_f4's) */
static inline __attribute__((always_inline)) void
pool_add_f4_pair(PoolVec *acc, PoolVecF a, PoolVecF b)
{
    PoolVec u = {a[0], a[1], a[2], a[3]}, v = {b[0], b[1], b[2], b[3]};
    *acc += u + v;
}

/* acc[q] += the m < 16 values at p, zero-padded to sixteen (built in registers, one
 * predictable branch a lane: a padded copy on the stack was zeroed by a rep stos, half the
 * time of a 8 x 8 plane) */
static inline __attribute__((always_inline)) void
pool_add_tail(int f8, const char *p, int64_t m, PoolVec *acc)
{
    for (int q = 0; q < 4; q++) {
        PoolVec u = {0, 0, 0, 0};
        for (int r = 0; r < 4; r++) {
            if (4 * q + r < m) {
                u[r] = f8 ? ((const double *)p)[4 * q + r] : (double)((const float *)p)[4 * q + r];
            }
        }
        acc[q] += u;
    }
}

static inline __attribute__((always_inline)) double
window_sum(int f8, const char *x, int64_t rs, int64_t rows, int64_t n)
{
    PoolVec acc[4] = {{0}};
    for (int64_t r = 0; r < rows; r++) {
        int64_t i = 0;
        if (f8) {
            const double *v = (const double *)x + r * rs;
            for (; i + 16 <= n; i += 16) {
                for (int q = 0; q < 4; q++) {
                    PoolVec u;
                    memcpy(&u, v + i + 4 * q, sizeof u);
                    acc[q] += u;
                }
            }

        }
        else {
            /* blocks of 256 values: 32 float lanes of 8 values each, then lanes k and k + 16
             * added in double */
            const float *v = (const float *)x + r * rs;
            for (; i + 256 <= n; i += 256) {
                /* float lane 8 q + k is part[q][k] (eights: one ymm load and add each in the
                 * AVX2 clone, where fours took twice the loads, the limit on 32 x 32
                 * planes), its four-lane halves added in double as before: the same sums */
                PoolVecF8 part[4] = {{0}};
                for (int64_t b = 0; b < 256; b += 32) {
                    for (int q = 0; q < 4; q++) {
                        PoolVecF8 u;
                        memcpy(&u, v + i + b + 8 * q, sizeof u);
                        part[q] += u;
                    }
                }
                for (int q = 0; q < 4; q++) {
                    const PoolVecF8 a = part[q / 2], c = part[q / 2 + 2];
                    const int h = 4 * (q % 2);
                    pool_add_f4_pair(&acc[q], (PoolVecF){a[h], a[h + 1], a[h + 2], a[h + 3]},
                                     (PoolVecF){c[h], c[h + 1], c[h + 2], c[h + 3]});
                }
            }
            for (; i + 16 <= n; i += 16) {
                for (int q = 0; q < 4; q++) {
                    pool_add_f4(&acc[q], v + i + 4 * q);
                }
            }

        }
        if (i < n) {
            pool_add_tail(f8, x + (r * rs + i) * (f8 ? 8 : 4), n - i, acc);
        }
    }
    PoolVec lo = acc[0] + acc[2], hi = acc[1] + acc[3];
    return ((lo[0] + lo[1]) + (lo[2] + lo[3])) + ((hi[0] + hi[1]) + (hi[2] + hi[3]));
}

#ifdef PTL_HAVE_AVX2_KERNELS
/* Note [Small planes four at a time]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A float32 plane of 7 x 7 or 8 x 8 values is 12 or 16 widenings to double, and the tail's
 * sixteen branches, the fold of the lanes to one double, the division and the store cost as
 * much again (0.88-0.95x PyTorch's time on ResNet heads).  With AVX2, planes of fewer than
 * SMALL_PLANE values go four at a time: each plane's tail is one masked load a vector of four
 * it reaches (the lanes past the plane read +0, pool_add_tail's padding, and never fault),
 * its lanes fold to h = [lo0 + lo1, hi0 + hi1, lo2 + lo3, hi2 + hi3] (lo = acc0 + acc2,
 * hi = acc1 + acc3: one horizontal add), the 128-bit halves of two planes' h add to
 * [(lo0 + lo1) + (lo2 + lo3), (hi0 + hi1) + (hi2 + hi3)] of each, and one more horizontal
 * add gives the four planes' sums: window_sum's additions in its order (the same bits), then
 * one division and one store of four floats. */
#define SMALL_PLANE 256

/* h of the n < SMALL_PLANE floats at x (full: n rounded down to 16; mask[q]: the lanes of
 * the tail's vector q, tq of them) */
PTL_AVX2 static inline __attribute__((always_inline)) __m256d
small_plane_h(const float *x, int64_t full, int tq, const __m128i *mask)
{
    __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < full; i += 16) {
        a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm_loadu_ps(x + i)));
        a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4)));
        a2 = _mm256_add_pd(a2, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 8)));
        a3 = _mm256_add_pd(a3, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 12)));
    }
    if (tq > 0) {
        a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm_maskload_ps(x + full, mask[0])));
    }
    if (tq > 1) {
        a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm_maskload_ps(x + full + 4, mask[1])));
    }
    if (tq > 2) {
        a2 = _mm256_add_pd(a2, _mm256_cvtps_pd(_mm_maskload_ps(x + full + 8, mask[2])));
    }
    if (tq > 3) {
        a3 = _mm256_add_pd(a3, _mm256_cvtps_pd(_mm_maskload_ps(x + full + 12, mask[3])));
    }
    return _mm256_hadd_pd(_mm256_add_pd(a0, a2), _mm256_add_pd(a1, a3));
}

/* The forward of the planes [b, e) of n < SMALL_PLANE float32 values each */
PTL_AVX2 static void
small_planes_f4(const float *x, int64_t n, int64_t b, int64_t e, float *y)
{
    const int64_t full = n / 16 * 16;
    const int tq = (int)(n - full + 3) / 4;
    __m128i mask[4];
    for (int q = 0; q < 4; q++) {
        int64_t m = n - full - 4 * q;
        mask[q] = _mm_setr_epi32(-(m > 0), -(m > 1), -(m > 2), -(m > 3));
    }
    const __m256d div = _mm256_set1_pd((double)n);
    for (int64_t pl = b; pl < e; pl += 4) {
        int64_t m = e - pl < 4 ? e - pl : 4;
        const float *p = x + pl * n;
        __m256d z = _mm256_setzero_pd();
        __m256d h0 = small_plane_h(p, full, tq, mask);
        __m256d h1 = m > 1 ? small_plane_h(p + n, full, tq, mask) : z;
        __m256d h2 = m > 2 ? small_plane_h(p + 2 * n, full, tq, mask) : z;
        __m256d h3 = m > 3 ? small_plane_h(p + 3 * n, full, tq, mask) : z;
        __m256d l = _mm256_add_pd(_mm256_permute2f128_pd(h0, h1, 0x20),
                                  _mm256_permute2f128_pd(h0, h1, 0x31));
        __m256d r = _mm256_add_pd(_mm256_permute2f128_pd(h2, h3, 0x20),
                                  _mm256_permute2f128_pd(h2, h3, 0x31));
        __m128 f = _mm256_cvtpd_ps(_mm256_div_pd(_mm256_hadd_pd(l, r), div)); /* 0, 2, 1, 3 */
        f = _mm_shuffle_ps(f, f, _MM_SHUFFLE(3, 1, 2, 0));
        if (m == 4) {
            _mm_storeu_ps(y + pl, f);
        }
        else {
            float v[4];
            _mm_storeu_ps(v, f);
            for (int64_t k = 0; k < m; k++) {
                y[pl + k] = v[k];
            }
        }
    }
}
#endif

/* Note [Channels-last global average pooling]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A channels-last input (N, C, H, W with strides H W C, 1, W C, C) holds each sample as an
 * H W x C matrix whose column c is the plane (n, c).  Copied to NCHW first (nn_prepare),
 * the pooling cost 2.5-3.5x PyTorch's time, the copy more than the sums.  Plane n C + c of
 * such a job (PoolJob.cl_channels = C) is that column, and the columns of a job's planes
 * [b, e) are summed as the column sums of the reductions do (reduce_kernels.c's
 * ptl_red_add_rows_f4: the rows in memory order, PTL_RED_COL_GROUP of them at a time in
 * float32, each group's sums added in double; float64 rows added in double), then divided
 * once in double, as global_avg's.  So the result is x.mean((2, 3))'s of the same input bit
 * for bit where the reduction sums by columns (16 channels or more), and a column's sum does not depend on the block it falls in: the bits depend
 * neither on the split over the threads nor on the vector width.  They may differ from the
 * NCHW pooling's (whose lanes add a plane's values in another order) in the last bit.  The
 * backward writes its channels-last gradient directly: row r of sample n is the C values
 * g[n] / (H W), global_avg's, so that the boundary of Note [Channels-last at the kernel
 * boundary] finds it in its format and copies nothing. */

/* The planes [b, e) of a channels-last job (Note [Channels-last global average pooling]):
 * forward, or (bwd) the gradient rows */
static inline __attribute__((always_inline)) void
global_avg_cl(const PoolJob *j, int f8, int64_t b, int64_t e, int bwd)
{
    const int64_t n = j->p->in[1] * j->p->in[2], C = j->cl_channels, es = f8 ? 8 : 4;
    const int avx2 = ptl_cpu_capability() >= PTL_CPU_AVX2;
    double v[PTL_RED_COL_BLOCK];
    float vf[PTL_RED_COL_BLOCK];
    for (int64_t s = b / C; s * C < e; s++) {
        const int64_t c0 = b > s * C ? b - s * C : 0, c1 = e < (s + 1) * C ? e - s * C : C;
        for (int64_t c = c0; c < c1; c += PTL_RED_COL_BLOCK) {
            const int64_t m = c1 - c < PTL_RED_COL_BLOCK ? c1 - c : PTL_RED_COL_BLOCK;
            if (bwd) {
                /* the block's m values once in the work dtype, then copied into each row
                 * (stored value by value through a scalar double -> float conversion, the
                 * rows had cost as much as PyTorch's whole backward) */
                for (int64_t k = 0; k < m; k++) {
                    double g = nn_load(f8, j->x, s * C + c + k);
                    v[k] = f8 ? g / (double)n : (double)(float)(g / (double)(float)n);
                    vf[k] = (float)v[k];
                }
                const void *row = f8 ? (const void *)v : (const void *)vf;
                for (int64_t r = 0; r < n; r++) {
                    memcpy(j->y + ((s * n + r) * C + c) * es, row, (size_t)(m * es));
                }
                continue;
            }
            const char *x = j->x + (s * n * C + c) * es;
            memset(v, 0, sizeof(double) * (size_t)m);
            if (f8) {
                for (int64_t r = 0; r < n; r++) {
                    ptl_red_add_row_f8(v, (const double *)x + r * C, m, avx2);
                }
            }
            else {
                ptl_red_add_rows_f4(v, x, C * es, n, m, avx2);
            }
            /* typed stores, so that the divisions go in vectors (one at a time, their latency
             * was a sixth of the time of 64 x 256 x 8 x 8) */
            if (f8) {
                double *yo = (double *)j->y + s * C + c;
                for (int64_t k = 0; k < m; k++) {
                    yo[k] = v[k] / (double)n;
                }
            }
            else {   /* x.mean((2, 3))'s stores (reduce_runs.c) */
                ptl_red_mean_store_f4((float *)j->y + s * C + c, v, m, n);
            }
        }
    }
}

static inline __attribute__((always_inline)) int
global_avg(const PoolJob *j, int f8, int64_t b, int64_t e, int bwd)
{
    int64_t n = j->p->in[1] * j->p->in[2], es = f8 ? 8 : 4;
    if (j->cl_channels > 0) {
        global_avg_cl(j, f8, b, e, bwd);
        return 0;
    }
#ifdef PTL_HAVE_AVX2_KERNELS
    if (!bwd && !f8 && n < SMALL_PLANE && ptl_cpu_capability() >= PTL_CPU_AVX2) {
        small_planes_f4((const float *)j->x, n, b, e, (float *)j->y);
        return 0;
    }
#endif
    for (int64_t pl = b; pl < e; pl++) {
        if (!bwd) {
            nn_store(f8, j->y, pl, window_sum(f8, j->x + pl * n * es, 0, 1, n) / (double)n);
        }
        else if (f8) {
            double v = ((const double *)j->x)[pl] / (double)n, *row = (double *)j->y + pl * n;
            for (int64_t k = 0; k < n; k++) {
                row[k] = v;
            }
        }
        else {
            float v = (float)((double)((const float *)j->x)[pl] / (double)(float)n);
            float *row = (float *)j->y + pl * n;
            for (int64_t k = 0; k < n; k++) {
                row[k] = v;
            }
        }
    }
    return 0;
}

/* The adaptive forward over wide windows (Note [Global average pooling]), planes [b, e) */
static inline __attribute__((always_inline)) int
wide_avg(const PoolJob *j, int f8, int64_t b, int64_t e)
{
    const PoolPlan *p = j->p;
    const int64_t h = p->in[1], w = p->in[2], oh = p->out[1], ow = p->out[2], es = f8 ? 8 : 4;
    for (int64_t pl = b; pl < e; pl++) {
        const char *img = j->x + pl * h * w * es;
        for (int64_t oy = 0; oy < oh; oy++) {
            const Win *wy = &p->w[1][oy];
            for (int64_t ox = 0; ox < ow; ox++) {
                const Win *wx = &p->w[2][ox];
                double sum = window_sum(f8, img + (wy->start * w + wx->start) * es, w, wy->count,
                                        wx->count);
                nn_store(f8, j->y, (pl * oh + oy) * ow + ox,
                         sum / (double)win_div(p, &p->w[0][0], wy, wx));
            }
        }
    }
    return 0;
}

#define DEFINE_GLOBAL_AVG(SUF, F8, BWD)                                                   \
    PTL_LOOP_CLONES static int                                                            \
    global_avg_##SUF(void *ctx, int64_t b, int64_t e)                                     \
    {                                                                                     \
        return global_avg(ctx, F8, b, e, BWD);                                            \
    }
DEFINE_GLOBAL_AVG(fwd_f4, 0, 0)
DEFINE_GLOBAL_AVG(fwd_f8, 1, 0)
DEFINE_GLOBAL_AVG(bwd_f4, 0, 1)
DEFINE_GLOBAL_AVG(bwd_f8, 1, 1)

#define DEFINE_WIDE_AVG(SUF, F8)                                                          \
    PTL_LOOP_CLONES static int                                                            \
    wide_avg_##SUF(void *ctx, int64_t b, int64_t e)                                       \
    {                                                                                     \
        return wide_avg(ctx, F8, b, e);                                                   \
    }
DEFINE_WIDE_AVG(f4, 0)
DEFINE_WIDE_AVG(f8, 1)
#undef DEFINE_GLOBAL_AVG
#undef DEFINE_WIDE_AVG

/* Note [Adaptive average rows]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * adaptive_avg_pool2d to a size that does not divide the input's (7 x 7 from 32 x 32 or
 * 55 x 55: overlapping windows of 5 or 6) has no interior outputs (Note [Pooling rows]), so
 * the window walk took every value through its border branch and nn_load / nn_store (0.5-0.65x
 * PyTorch's time).  adaptive_avg walks one output row at a time: the input rows of its window
 * one after the other, each adding its window's columns into every output of the row, so
 * each output sums its window in row-major order in the work dtype and is divided by its count
 * there: the window walk's bits.  The outputs of a row are independent sums, which the CPU
 * overlaps. */
/* o[ox] = the sum of window wx[ox] over the rows of x (row stride w), row-major */
#define DEFINE_ADAPTIVE_ROW(T, SUF)                                                       \
    static inline __attribute__((always_inline)) void                                     \
    adaptive_row_##SUF(const T *x, int64_t w, int64_t rows, const Win *wx, int64_t ow,    \
                       T *o)                                                              \
    {                                                                                     \
        for (int64_t ox = 0; ox < ow; ox++) {                                             \
            o[ox] = 0;                                                                    \
        }                                                                                 \
        for (int64_t r = 0; r < rows; r++) {                                              \
            for (int64_t ox = 0; ox < ow; ox++) {                                         \
                const T *v = x + r * w + wx[ox].start;                                    \
                T acc = o[ox];                                                            \
                for (int64_t q = 0; q < wx[ox].count; q++) {                              \
                    acc += v[q];                                                          \
                }                                                                         \
                o[ox] = acc;                                                              \
            }                                                                             \
        }                                                                                 \
    }
/* aligned(64): the window loops ran 10% slower (adaptive_avg_pool2d(7) of [32, 64, 32, 32])
 * when the code before them moved these functions to 32 bytes past a 64-byte line */
#define DEFINE_ADAPTIVE_AVG(T, SUF)                                                       \
    PTL_LOOP_CLONES __attribute__((aligned(64))) static int                               \
    adaptive_avg_##SUF(void *ctx, int64_t b, int64_t e)                                   \
    {                                                                                     \
        const PoolJob *j = ctx;                                                           \
        const PoolPlan *p = j->p;                                                         \
        const int64_t h = p->in[1], w = p->in[2], oh = p->out[1], ow = p->out[2];         \
        const Win *wx = p->w[2];                                                          \
        for (int64_t pl = b; pl < e; pl++) {                                              \
            const T *img = (const T *)j->x + pl * h * w;                                  \
            for (int64_t oy = 0; oy < oh; oy++) {                                         \
                const Win *wy = &p->w[1][oy];                                             \
                T *o = (T *)j->y + (pl * oh + oy) * ow;                                   \
                adaptive_row_##SUF(img + wy->start * w, w, wy->count, wx, ow, o);         \
                for (int64_t ox = 0; ox < ow; ox++) {                                     \
                    o[ox] = o[ox] / (T)win_div(p, &p->w[0][0], wy, &wx[ox]);              \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
        return 0;                                                                         \
    }
DEFINE_ADAPTIVE_ROW(float, f4)
DEFINE_ADAPTIVE_ROW(double, f8)
DEFINE_ADAPTIVE_AVG(float, f4)
DEFINE_ADAPTIVE_AVG(double, f8)
#undef DEFINE_ADAPTIVE_ROW
#undef DEFINE_ADAPTIVE_AVG

PtlParallelFn
pool_avg_walk(AvgWalk walk, int f8, int bwd)
{
    switch (walk) {
    case AVG_GLOBAL:
        return f8 ? (bwd ? global_avg_bwd_f8 : global_avg_fwd_f8)
                  : (bwd ? global_avg_bwd_f4 : global_avg_fwd_f4);
    case AVG_WIDE:
        return f8 ? wide_avg_f8 : wide_avg_f4;
    default:
        return f8 ? adaptive_avg_f8 : adaptive_avg_f4;
    }
}
