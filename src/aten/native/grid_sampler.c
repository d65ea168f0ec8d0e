/* grid_sampler.c -- grid_sampler_2d and grid_sampler_3d (bilinear/trilinear, nearest and
 * bicubic interpolation; zeros, border and reflection padding), their backwards and the
 * backward of those backwards.  Mirrors ATen/native/GridSampler.cpp, GridSampler.h and
 * cpu/GridSamplerKernel.cpp.
 *
 * Note [Grid sampler taps]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * A grid point (x, y[, z]) in [-1, 1] reads the input at a few taps.  Every mode is
 * separable: along each spatial dim the point's pixel coordinate p gives 1 (nearest),
 * 2 (linear) or 4 (cubic) tap indices with weights w(p), and a tap of the product reads
 * with the product of its per-dim weights.  Taps outside the input read zero (zeros
 * padding); border and reflection padding move the coordinate (linear, nearest) or each
 * cubic tap index (bicubic) inside, as PyTorch does.  p depends on the grid value g
 * piecewise linearly (unnormalize, then clip or reflect), so dp/dg = s is piecewise
 * constant and d2p/dg2 = 0: a tap's weight derivatives are w'(p) s and w''(p) s s'.
 * With W the product weight of a tap, W_d its derivative by grid component d and W_de the
 * second derivative, and X the input at the tap:
 *
 *     y        = sum_taps W X                         (forward)
 *     gI[tap] += W go,  gG[d] = sum_c go sum_taps W_d X  (backward)
 *
 * and for the backward's own backward, given gradients ggI of gI and ggG of gG:
 *
 *     d/d go   = sum_taps W ggI + sum_d ggG[d] sum_taps W_d X
 *     d/d X   += go sum_d ggG[d] W_d
 *     d/d g[e] = sum_c go sum_taps (W_e ggI + sum_d ggG[d] W_de X)
 *
 * Arithmetic runs in double (float32/float64 read and written in place on the CPU, Note
 * [Grid sampler blocks]; other dtypes converted, results cast back).  The taps and one grid
 * point's forward and backward are grid_sampler_taps.h's, which the CUDA kernels run too
 * (Note [CUDA grid sampler] in src/cuda/grid_sampler_plan.c). */
#include "../../c10/cpu_features.h"
#include "../../c10/parallel.h"
#include "../transpose_block.h"
#include "device_nn.h"
#include "grid_sampler_taps.h"
#include "nn_common.h"

/* The CPU job: the shared job (grid_sampler_taps.h) and the double backward's extra
 * operands. */
typedef struct GridJob {
    PtlGridSampler a;
    const double *ggx, *ggg;
    double *ggo;
} GridJob;

/* Note [Grid sampler blocks]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * On the CPU a job takes GS_BLOCK grid points of one sample at a time: their taps are
 * computed once (ptl_gs_point), then every channel walks its own input plane and writes its
 * own output run (the forward) or scatters into its own gradient plane (the backward), so
 * the channels' planes are not all live at once as when each point looped over them.
 * float32/float64 inputs, grad_outputs and outputs are read and written in their dtype;
 * the sums are the same double expressions in the same order as ptl_gs_forward_at and
 * ptl_gs_backward_at (the grid gradient of a point sums channel by channel, tap by tap; an
 * input-gradient element takes its terms in point order), so the bits are those of the
 * per-point functions, which the CUDA emulation runs.  A backward wanting only the input
 * gradient skips the taps' derivatives and the grid gradient's terms.  With many channels
 * the channels run innermost instead (Note [Grid sampler channels-last]), where only the
 * grid gradient's bits differ. */
#define GS_BLOCK 64

#if defined(__x86_64__) && defined(__GNUC__)
#define GS_AVX2 1
#endif

typedef struct GsBlockJob {
    const PtlGridSampler *a;
    const void *x, *go;   /* the input and grad_output, float32 (f8 0) or float64 */
    void *y;              /* the forward's output, same dtype */
    void *gx;             /* channels-last: the backward's input gradient, same dtype */
    int f8;
    int64_t nblk;         /* blocks per sample */
    const struct GsClFns *cl;   /* Note [Grid sampler channels-last], or NULL */
    void *xcl;            /* the forward's channels-last input */
} GsBlockJob;

/* The taps of GS_BLOCK points packed: point p's are [start[p], start[p + 1]) of off, w and
 * (backward) wd, so the channel loops read a few kilobytes, not GS_BLOCK whole PtlGsTaps. */
typedef struct GsBlock {
    int nt;   /* every point's count of taps when they agree, else -1 */
    int start[GS_BLOCK + 1];
    int64_t off[GS_BLOCK * PTL_GS_MAX_TAPS];
    double w[GS_BLOCK * PTL_GS_MAX_TAPS];
    double wd[GS_BLOCK * PTL_GS_MAX_TAPS][3];
} GsBlock;

/* The taps of n's points [p0, p0 + np) into blk: their weights and (level 1) first
 * derivatives. */
static inline __attribute__((always_inline)) void
gs_block_fill(const PtlGridSampler *a, int64_t n, int64_t p0, int64_t np, int level,
              GsBlock *blk)
{
    PtlGsTaps t;
    blk->start[0] = 0;
    for (int64_t p = 0; p < np && a->nd == 2; p++) {
        /* ptl_gs_point's taps and products (weights and, level 1, their first derivatives)
         * in its order (x fastest) and association, without its generic bookkeeping */
        const double *g = a->grid + (n * a->npts + p0 + p) * 2;
        PtlGsTaps1 tx, ty;
        int m = blk->start[p];
        ptl_gs_taps1(g[0], a->size[0], a->mode, a->padding, a->align, &tx);
        ptl_gs_taps1(g[1], a->size[1], a->mode, a->padding, a->align, &ty);
        for (int r = 0; r < ty.n; r++) {
            for (int q = 0; q < tx.n; q++) {
                if (tx.idx[q] >= 0 && ty.idx[r] >= 0) {
                    blk->off[m] = (int64_t)tx.idx[q] * a->stride[0] +
                                  (int64_t)ty.idx[r] * a->stride[1];
                    blk->w[m] = 1.0 * tx.w[q] * ty.w[r];
                    if (level >= 1) {
                        blk->wd[m][0] = 1.0 * (tx.w1[q] * tx.s) * ty.w[r];
                        blk->wd[m][1] = 1.0 * tx.w[q] * (ty.w1[r] * ty.s);
                    }
                    m++;
                }
            }
        }
        if (m == blk->start[p] && a->y != NULL && ptl_gs_nonfinite(a, g)) {
            /* Note [Grid sampler non-finite coordinates] */
            blk->off[m] = 0;
            blk->w[m++] = (double)NAN;
        }
        blk->start[p + 1] = m;
        blk->nt = p == 0 || (blk->nt == m - blk->start[p]) ? m - blk->start[p] : -1;
    }
    for (int64_t p = 0; p < np && a->nd != 2; p++) {
        int m = blk->start[p];
        ptl_gs_point(a, a->grid + (n * a->npts + p0 + p) * a->nd, level, &t, NULL);
        for (int k = 0; k < t.n; k++, m++) {
            blk->off[m] = t.off[k];
            blk->w[m] = t.w[k];
            for (int d = 0; d < a->nd && level >= 1; d++) {
                blk->wd[m][d] = t.wd[k][d];
            }
        }
        blk->start[p + 1] = m;
        blk->nt = p == 0 || (blk->nt == t.n) ? t.n : -1;
    }
}

static void
gs_block_fill_base(const PtlGridSampler *a, int64_t n, int64_t p0, int64_t np, int level,
                   GsBlock *blk)
{
    gs_block_fill(a, n, p0, np, level, blk);
}

#ifdef GS_AVX2
/* the same arithmetic with ptl_gs_taps1 inlined and its floor, nearbyint and trunc as
 * single instructions (roundsd) rather than calls */
__attribute__((target("avx2"), flatten, noclone)) static void
gs_block_fill_avx2(const PtlGridSampler *a, int64_t n, int64_t p0, int64_t np, int level,
                   GsBlock *blk)
{
    gs_block_fill(a, n, p0, np, level, blk);
}
#endif

static GsBlock *
gs_block_taps(const PtlGridSampler *a, int64_t n, int64_t p0, int64_t np, int level)
{
    GsBlock *blk = malloc(sizeof(GsBlock));
    if (blk == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "can't allocate grid sampler taps");
        return NULL;
    }
#ifdef GS_AVX2
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        gs_block_fill_avx2(a, n, p0, np, level, blk);
        return blk;
    }
#endif
    gs_block_fill_base(a, n, p0, np, level, blk);
    return blk;
}

#define GS_ROWS(T)                                                                          \
    static void gs_rows_##T(const GsBlock *t, int64_t np, const T *x, T *y)                 \
    {                                                                                       \
        const int64_t *o = t->off;                                                          \
        const double *w = t->w;                                                             \
        for (int64_t p = 0; p < np && t->nt == 4; p++, o += 4, w += 4) {                    \
            double acc = 0.0 + w[0] * (double)x[o[0]];                                      \
            acc = acc + w[1] * (double)x[o[1]] + w[2] * (double)x[o[2]];                    \
            y[p] = (T)(acc + w[3] * (double)x[o[3]]);                                       \
        }                                                                                   \
        for (int64_t p = 0; p < np && t->nt != 4; p++) {                                    \
            double acc = 0.0;                                                               \
            for (int k = t->start[p]; k < t->start[p + 1]; k++) {                           \
                acc += t->w[k] * (double)x[t->off[k]];                                      \
            }                                                                               \
            y[p] = (T)acc;                                                                  \
        }                                                                                   \
    }
GS_ROWS(float)
GS_ROWS(double)
#undef GS_ROWS

/* Note [Grid sampler nearest forward]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A nearest forward is a gather: each point reads one input element (weight 1) or none.
 * It takes GS_NEAR points of a sample at a time, their offsets once (ptl_gs_taps1's index
 * per dim, no weights), then gathers channel by channel, so an input plane is read by
 * GS_NEAR points while it is in cache (GS_BLOCK = 64 points would fetch each plane's lines
 * again for every block); the offsets are int32 (planes of up to 2^31 - 1 elements; larger
 * ones take the blocks), gathered 8 floats or 4 doubles at a time where the CPU has AVX2.
 * y = x + 0 is the per-point sum 0.0 + 1.0 * x (-0.0 becomes +0.0 in both).  The backward
 * (its grid gradient is zeros, written before) scatters the same way: by runs, channel by
 * channel, into the float64 input gradient, each element taking its terms in point order
 * (the blocks' bits); nearest never runs channels-last. */
#define GS_NEAR 1024

/* The point offsets of n's points [q0, q0 + nq) into o, -1 where a point has no tap (its
 * one tap's index along each dim, ptl_gs_taps1's) */
static inline __attribute__((always_inline)) void
gs_near_offsets_fill(const PtlGridSampler *a, int64_t n, int64_t q0, int64_t nq, int32_t *o)
{
    for (int64_t p = 0; p < nq; p++) {
        const double *g = a->grid + (n * a->npts + q0 + p) * a->nd;
        int64_t off = 0;
        int ok = 1;
        for (int k = 0; k < a->nd; k++) {
            PtlGsTaps1 t;
            ptl_gs_taps1(g[k], a->size[k], PTL_GS_NEAREST, a->padding, a->align, &t);
            ok = ok && t.idx[0] >= 0;
            off += ok ? (int64_t)t.idx[0] * a->stride[k] : 0;
        }
        o[p] = ok ? (int32_t)off : -1;
    }
}

static void
gs_near_offsets_base(const PtlGridSampler *a, int64_t n, int64_t q0, int64_t nq, int32_t *o)
{
    gs_near_offsets_fill(a, n, q0, nq, o);
}

#ifdef GS_AVX2
__attribute__((target("avx2"), flatten, noclone)) static void
gs_near_offsets_avx2(const PtlGridSampler *a, int64_t n, int64_t q0, int64_t nq, int32_t *o)
{
    gs_near_offsets_fill(a, n, q0, nq, o);
}
#endif

static void
gs_near_offsets(const PtlGridSampler *a, int64_t n, int64_t q0, int64_t nq, int32_t *o)
{
#ifdef GS_AVX2
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        gs_near_offsets_avx2(a, n, q0, nq, o);
        return;
    }
#endif
    gs_near_offsets_base(a, n, q0, nq, o);
}

#define GS_NEAR_ROWS(T)                                                                     \
    static void gs_near_rows_##T(const int32_t *o, int64_t np, const void *x_, void *y_)    \
    {                                                                                       \
        const T *x = x_;                                                                    \
        T *y = y_;                                                                          \
        for (int64_t p = 0; p < np; p++) {                                                  \
            T v = x[o[p] >= 0 ? o[p] : 0] + (T)0.0;                                         \
            y[p] = o[p] >= 0 ? v : (T)0.0;                                                  \
        }                                                                                   \
    }
GS_NEAR_ROWS(float)
GS_NEAR_ROWS(double)
#undef GS_NEAR_ROWS

#ifdef GS_AVX2
/* gs_near_rows_* by AVX2 gathers (8 floats, 4 doubles), the masked-off lanes (no tap)
 * loading nothing and giving 0 */
__attribute__((target("avx2"))) static void
gs_near_rows_float_avx2(const int32_t *o, int64_t np, const void *x_, void *y_)
{
    const float *x = x_;
    float *y = y_;
    int64_t p = 0;
    __m256 z = _mm256_setzero_ps();
    for (; p + 8 <= np; p += 8) {
        __m256i i = _mm256_loadu_si256((const __m256i *)(o + p));
        __m256 m = _mm256_castsi256_ps(_mm256_cmpgt_epi32(i, _mm256_set1_epi32(-1)));
        _mm256_storeu_ps(y + p, _mm256_add_ps(_mm256_mask_i32gather_ps(z, x, i, m, 4), z));
    }
    gs_near_rows_float(o + p, np - p, x, y + p);
}

__attribute__((target("avx2"))) static void
gs_near_rows_double_avx2(const int32_t *o, int64_t np, const void *x_, void *y_)
{
    const double *x = x_;
    double *y = y_;
    int64_t p = 0;
    __m256d z = _mm256_setzero_pd();
    for (; p + 4 <= np; p += 4) {
        __m128i i = _mm_loadu_si128((const __m128i *)(o + p));
        __m256d m = _mm256_castsi256_pd(
            _mm256_cvtepi32_epi64(_mm_cmpgt_epi32(i, _mm_set1_epi32(-1))));
        _mm256_storeu_pd(y + p, _mm256_add_pd(_mm256_mask_i32gather_pd(z, x, i, m, 8), z));
    }
    gs_near_rows_double(o + p, np - p, x, y + p);
}
#endif

/* Nearest forward over the (sample, run of GS_NEAR points) items [b, e). */
static int
gs_near_fwd_job(void *ctx, int64_t b, int64_t e)
{
    const GsBlockJob *bj = ctx;
    const PtlGridSampler *a = bj->a;
    int32_t o[GS_NEAR];
    void (*rows)(const int32_t *, int64_t, const void *, void *) =
        bj->f8 ? gs_near_rows_double : gs_near_rows_float;
    size_t es = bj->f8 ? sizeof(double) : sizeof(float);
#ifdef GS_AVX2
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        rows = bj->f8 ? gs_near_rows_double_avx2 : gs_near_rows_float_avx2;
    }
#endif
    for (int64_t it = b; it < e; it++) {
        int64_t n = it / bj->nblk, q0 = it % bj->nblk * GS_NEAR;
        int64_t nq = a->npts - q0 < GS_NEAR ? a->npts - q0 : GS_NEAR;
        gs_near_offsets(a, n, q0, nq, o);
        for (int64_t c = 0; c < a->c; c++) {
            int64_t pl = (n * a->c + c) * a->plane, yo = (n * a->c + c) * a->npts + q0;
            rows(o, nq, (const char *)bj->x + (size_t)pl * es, (char *)bj->y + (size_t)yo * es);
        }
    }
    return 0;
}

#define GS_NEAR_SCATTER(T)                                                                  \
    static void gs_near_scatter_##T(const int32_t *o, int64_t np, const T *go, double *gx)  \
    {                                                                                       \
        for (int64_t p = 0; p < np; p++) {                                                  \
            if (o[p] >= 0) {                                                                \
                gx[o[p]] += 1.0 * (double)go[p];                                            \
            }                                                                               \
        }                                                                                   \
    }
GS_NEAR_SCATTER(float)
GS_NEAR_SCATTER(double)
#undef GS_NEAR_SCATTER

/* Nearest's input gradient over samples [b, e) (float64, zeroed; Note [Grid sampler nearest
 * forward]). */
static int
gs_near_bwd_job(void *ctx, int64_t b, int64_t e)
{
    const GsBlockJob *bj = ctx;
    const PtlGridSampler *a = bj->a;
    int32_t o[GS_NEAR];
    for (int64_t n = b; n < e; n++) {
        for (int64_t q0 = 0; q0 < a->npts; q0 += GS_NEAR) {
            int64_t nq = a->npts - q0 < GS_NEAR ? a->npts - q0 : GS_NEAR;
            gs_near_offsets(a, n, q0, nq, o);
            for (int64_t c = 0; c < a->c; c++) {
                int64_t go = (n * a->c + c) * a->npts + q0;
                double *gx = a->gx + (n * a->c + c) * a->plane;
                if (bj->f8) {
                    gs_near_scatter_double(o, nq, (const double *)bj->go + go, gx);
                }
                else {
                    gs_near_scatter_float(o, nq, (const float *)bj->go + go, gx);
                }
            }
        }
    }
    return 0;
}

static inline double
gs_at(const void *p, int f8, int64_t i)
{
    return f8 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

/* Note [Grid sampler channels-last]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * With c >= GS_CL_MIN_C channels and at least as many taps as the input has pixels per plane
 * (gs_use_cl; nearest has its own loops), the CPU samples channels-last: the input (and in the
 * backward the input gradient, in double) lives in a scratch copy laid out (pixel, channel), so
 * a tap is one contiguous run of c values, a block of points reads a few lines per tap instead
 * of one line per channel plane, and each loop over the channels is a vector loop with the
 * point's tap offset and weight in registers (the forward prefetches the taps of the point two
 * ahead: the taps land anywhere in the plane).  The copies in and out (the input, the output
 * block, grad_output's block, the input gradient) are transposes by 8 x 8 blocks (float32,
 * AVX2) and cost a pass over the input, which the taps' count pays for.  Each output is the
 * same double sum in the same order as in Note [Grid sampler blocks], and each input-gradient
 * element takes its terms in point order, so both keep their bits; the grid gradient combines a
 * point's taps per channel, then sums the channels in four lanes, so it differs from the
 * per-point functions' sum by float64 rounding only.  float32 reads and writes its own dtype and
 * computes in double, so it is still the float64 arithmetic rounded, and the input gradient is
 * written in the input's dtype directly (no float64 tensor, no cast).  The vector lanes are GCC
 * vectors, so the SSE2 and AVX2 builds of the loops give the same bits. */
#define GS_CL_MIN_C 8
#define GS_CW 16   /* channels per chunk of a point's accumulators (registers) */

static int
gs_use_cl(const PtlGridSampler *a)
{
    int64_t taps = a->mode == PTL_GS_NEAREST ? 1 : a->mode == PTL_GS_BICUBIC ? 16 : 4 * (a->nd - 1);
    return a->n > 0 && a->c >= GS_CL_MIN_C && a->npts * taps >= a->plane &&
           a->mode != PTL_GS_NEAREST;
}

/* dst[j * ds + i] = src[i * ss + j] for i < rows, j < cols, by runs of GS_BLOCK columns */
#define GS_TR(NAME, ATTR, T)                                                                \
    ATTR static void                                                                        \
    gs_tr_##NAME(const void *src_, int64_t ss, void *dst_, int64_t ds, int64_t rows,        \
                 int64_t cols)                                                              \
    {                                                                                       \
        const T *src = src_;                                                                \
        T *dst = dst_;                                                                      \
        for (int64_t j0 = 0; j0 < cols; j0 += GS_BLOCK) {                                   \
            int64_t nj = cols - j0 < GS_BLOCK ? cols - j0 : GS_BLOCK;                       \
            for (int64_t i = 0; i < rows; i++) {                                            \
                for (int64_t j = j0; j < j0 + nj; j++) {                                    \
                    dst[j * ds + i] = src[i * ss + j];                                      \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
    }
GS_TR(f4, , float)
GS_TR(f8, , double)
#undef GS_TR

/* Four doubles in a GCC vector (SSE2 pairs, or one AVX register where compiled for AVX2);
 * GS_LD4_T / GS_ST4_T move four T items (float32 converted exactly, stores rounded; the
 * _avx forms are the same conversions as single instructions). */
typedef double gs_v4d __attribute__((vector_size(32)));
typedef float gs_v4f __attribute__((vector_size(16)));
#define GS_SPLAT(w) ((gs_v4d){(w), (w), (w), (w)})
#define GS_LD4_double(v, p) memcpy(&(v), (p), sizeof(gs_v4d))
#define GS_ST4_double(p, v) memcpy((p), &(v), sizeof(gs_v4d))
#define GS_LD4_float(v, p)                                                                  \
    do {                                                                                    \
        gs_v4f f_;                                                                          \
        memcpy(&f_, (p), sizeof(f_));                                                       \
        (v) = __builtin_convertvector(f_, gs_v4d);                                          \
    } while (0)
#define GS_ST4_float(p, v)                                                                  \
    do {                                                                                    \
        gs_v4f f_ = __builtin_convertvector((v), gs_v4f);                                   \
        memcpy((p), &f_, sizeof(f_));                                                       \
    } while (0)

/* The channels-last loops of one dtype (T) and instruction set (ATTR), by chunks of
 * GS_CW = 16 channels whose accumulators are four vectors of four lanes (each lane's sums
 * are the scalar expressions, so the bits do not depend on the chunking), the last
 * c % 16 channels item by item:
 * fwd: the GS_BLOCK points' outputs, yb (np, c), from xcl (plane, c);
 * bwd: their terms of gxcl (plane, c; NULL: not wanted) and, where gg is not NULL, their
 * grid gradients (nd components), from go's rows gob (np, c) and xcl; a chunk's part of a
 * grid gradient sums its channels in the four lanes, then the lanes pairwise. */
#define GS_CL_LOOPS(NAME, ATTR, T, IO)                                                      \
    ATTR static void                                                                        \
    gs_fwd_cl_##NAME(const GsBlock *t, int64_t np, int64_t c, const void *xcl_, void *yb_)  \
    {                                                                                       \
        const T *xcl = xcl_;                                                                \
        T *yb = yb_;                                                                        \
        for (int p = 0; p < (int)np; p++) {                                                 \
            int64_t c0 = 0;                                                                 \
            int pn = p + 2 < np ? p + 2 : p; /* point p + 2's taps on their way to cache */  \
            for (int k = t->start[pn]; k < t->start[pn + 1]; k++) {                         \
                __builtin_prefetch(xcl + t->off[k] * c);                                    \
                __builtin_prefetch(xcl + t->off[k] * c + c - 1);                            \
            }                                                                               \
            for (; c0 + GS_CW <= c; c0 += GS_CW) {                                          \
                gs_v4d acc[4] = {GS_SPLAT(0.0), GS_SPLAT(0.0), GS_SPLAT(0.0), GS_SPLAT(0.0)};\
                for (int k = t->start[p]; k < t->start[p + 1]; k++) {                       \
                    const T *xr = xcl + t->off[k] * c + c0;                                 \
                    gs_v4d w = GS_SPLAT(t->w[k]), xv;                                       \
                    for (int q = 0; q < 4; q++) {                                           \
                        GS_LD4_##IO(xv, xr + 4 * q);                                        \
                        acc[q] += w * xv;                                                   \
                    }                                                                       \
                }                                                                           \
                for (int q = 0; q < 4; q++) {                                               \
                    GS_ST4_##IO(yb + p * c + c0 + 4 * q, acc[q]);                           \
                }                                                                           \
            }                                                                               \
            for (; c0 < c; c0++) {                                                          \
                double acc = 0.0;                                                           \
                for (int k = t->start[p]; k < t->start[p + 1]; k++) {                       \
                    acc += t->w[k] * (double)xcl[t->off[k] * c + c0];                       \
                }                                                                           \
                yb[p * c + c0] = (T)acc;                                                    \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
    ATTR static void                                                                        \
    gs_bwd_chunk_##NAME(const GsBlock *t, int p, int64_t c, int nd, const T *xcl,           \
                        const T *g, double *gxcl, double *gg)                               \
    {                                                                                       \
        gs_v4d gv[4], s[3][4], z = GS_SPLAT(0.0);                                           \
        for (int q = 0; q < 4; q++) {                                                       \
            GS_LD4_##IO(gv[q], g + 4 * q);                                                  \
            s[0][q] = s[1][q] = s[2][q] = z;                                                \
        }                                                                                   \
        for (int k = t->start[p]; k < t->start[p + 1]; k++) {                               \
            int64_t o = t->off[k] * c;                                                      \
            gs_v4d w = GS_SPLAT(t->w[k]), a, xv;                                            \
            for (int q = 0; q < 4 && gxcl != NULL; q++) {                                   \
                memcpy(&a, gxcl + o + 4 * q, sizeof(a));                                    \
                a += w * gv[q];                                                             \
                memcpy(gxcl + o + 4 * q, &a, sizeof(a));                                    \
            }                                                                               \
            if (gg != NULL) {                                                               \
                gs_v4d w0 = GS_SPLAT(t->wd[k][0]), w1 = GS_SPLAT(t->wd[k][1]);              \
                gs_v4d w2 = GS_SPLAT(t->wd[k][2]);                                          \
                for (int q = 0; q < 4; q++) {                                               \
                    GS_LD4_##IO(xv, xcl + o + 4 * q);                                       \
                    s[0][q] += w0 * xv;                                                     \
                    s[1][q] += w1 * xv;                                                     \
                    if (nd == 3) {                                                          \
                        s[2][q] += w2 * xv;                                                 \
                    }                                                                       \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
        for (int d = 0; d < nd && gg != NULL; d++) {                                        \
            gs_v4d l = s[d][0] * gv[0];                                                     \
            for (int q = 1; q < 4; q++) {                                                   \
                l += s[d][q] * gv[q];                                                       \
            }                                                                               \
            gg[d] += (l[0] + l[1]) + (l[2] + l[3]);                                         \
        }                                                                                   \
    }                                                                                       \
    ATTR static void                                                                        \
    gs_bwd_cl_##NAME(const GsBlock *t, int64_t np, int64_t c, int nd, const void *xcl_,     \
                     const void *gob_, double *gxcl, double (*gg)[3])                       \
    {                                                                                       \
        const T *xcl = xcl_, *gob = gob_;                                                   \
        for (int p = 0; p < (int)np; p++) {                                                 \
            int64_t c0 = 0;                                                                 \
            const T *g = gob + p * c;                                                       \
            double *ggp = gg != NULL ? gg[p] : NULL;                                        \
            for (; c0 + GS_CW <= c; c0 += GS_CW) {                                          \
                gs_bwd_chunk_##NAME(t, p, c, nd, xcl + c0, g + c0,                          \
                                    gxcl != NULL ? gxcl + c0 : NULL, ggp);                  \
            }                                                                               \
            for (; c0 < c; c0++) {                                                          \
                double sv[3] = {0.0, 0.0, 0.0};                                             \
                for (int k = t->start[p]; k < t->start[p + 1]; k++) {                       \
                    int64_t o = t->off[k] * c + c0;                                         \
                    if (gxcl != NULL) {                                                     \
                        gxcl[o] += t->w[k] * (double)g[c0];                                 \
                    }                                                                       \
                    for (int d = 0; d < nd && gg != NULL; d++) {                            \
                        sv[d] += t->wd[k][d] * (double)xcl[o];                              \
                    }                                                                       \
                }                                                                           \
                for (int d = 0; d < nd && gg != NULL; d++) {                                \
                    ggp[d] += sv[d] * (double)g[c0];                                        \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
    }
GS_CL_LOOPS(f4, , float, float)
GS_CL_LOOPS(f8, , double, double)
#ifdef GS_AVX2
/* gs_tr_f4 by 8 x 8 blocks in AVX2 registers (transpose_block.h), the edges item by item */
__attribute__((target("avx2"))) static void
gs_tr_f4_blocks(const void *src_, int64_t ss, void *dst_, int64_t ds, int64_t rows,
                int64_t cols)
{
    const float *src = src_;
    float *dst = dst_;
    int64_t r8 = rows / 8 * 8, c8 = cols / 8 * 8;
    for (int64_t i0 = 0; i0 < r8; i0 += 8) {
        for (int64_t j0 = 0; j0 < c8; j0 += 8) {
            ptl_transpose_block_4((char *)(dst + j0 * ds + i0), ds * 4,
                                  (const char *)(src + i0 * ss + j0), ss * 4);
        }
        for (int64_t i = i0; i < i0 + 8; i++) {
            for (int64_t j = c8; j < cols; j++) {
                dst[j * ds + i] = src[i * ss + j];
            }
        }
    }
    for (int64_t i = r8; i < rows; i++) {
        for (int64_t j = 0; j < cols; j++) {
            dst[j * ds + i] = src[i * ss + j];
        }
    }
}
/* gs_tr_f8 by 4 x 4 blocks in AVX registers, the edges item by item */
__attribute__((target("avx2"))) static void
gs_tr_f8_blocks(const void *src_, int64_t ss, void *dst_, int64_t ds, int64_t rows,
                int64_t cols)
{
    const double *src = src_;
    double *dst = dst_;
    int64_t r4 = rows / 4 * 4, c4 = cols / 4 * 4;
    for (int64_t i0 = 0; i0 < r4; i0 += 4) {
        for (int64_t j0 = 0; j0 < c4; j0 += 4) {
            const double *s = src + i0 * ss + j0;
            __m256d r0 = _mm256_loadu_pd(s), r1 = _mm256_loadu_pd(s + ss);
            __m256d r2 = _mm256_loadu_pd(s + 2 * ss), r3 = _mm256_loadu_pd(s + 3 * ss);
            __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
            __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
            double *d = dst + j0 * ds + i0;
            _mm256_storeu_pd(d, _mm256_permute2f128_pd(t0, t2, 0x20));
            _mm256_storeu_pd(d + ds, _mm256_permute2f128_pd(t1, t3, 0x20));
            _mm256_storeu_pd(d + 2 * ds, _mm256_permute2f128_pd(t0, t2, 0x31));
            _mm256_storeu_pd(d + 3 * ds, _mm256_permute2f128_pd(t1, t3, 0x31));
        }
        for (int64_t i = i0; i < i0 + 4; i++) {
            for (int64_t j = c4; j < cols; j++) {
                dst[j * ds + i] = src[i * ss + j];
            }
        }
    }
    for (int64_t i = r4; i < rows; i++) {
        for (int64_t j = 0; j < cols; j++) {
            dst[j * ds + i] = src[i * ss + j];
        }
    }
}
/* the loads and stores as single AVX conversions (GCC splits __builtin_convertvector's) */
#define GS_LD4_float_avx(v, p) ((v) = (gs_v4d)_mm256_cvtps_pd(_mm_loadu_ps(p)))
#define GS_ST4_float_avx(p, v) _mm_storeu_ps((p), _mm256_cvtpd_ps((__m256d)(v)))
#define GS_LD4_double_avx(v, p) ((v) = (gs_v4d)_mm256_loadu_pd(p))
#define GS_ST4_double_avx(p, v) _mm256_storeu_pd((p), (__m256d)(v))
GS_CL_LOOPS(f4_avx2, __attribute__((target("avx2"))), float, float_avx)
GS_CL_LOOPS(f8_avx2, __attribute__((target("avx2"))), double, double_avx)
#endif
#undef GS_CL_LOOPS

typedef struct GsClFns {
    void (*tr)(const void *src, int64_t ss, void *dst, int64_t ds, int64_t rows, int64_t cols);
    void (*fwd)(const GsBlock *t, int64_t np, int64_t c, const void *xcl, void *yb);
    void (*bwd)(const GsBlock *t, int64_t np, int64_t c, int nd, const void *xcl,
                const void *gob, double *gxcl, double (*gg)[3]);
} GsClFns;

/* The channels-last loops for float64 (f8) or float32 on this CPU. */
static const GsClFns *
gs_cl_fns(int f8)
{
    static const GsClFns base[2] = {{gs_tr_f4, gs_fwd_cl_f4, gs_bwd_cl_f4},
                                    {gs_tr_f8, gs_fwd_cl_f8, gs_bwd_cl_f8}};
#ifdef GS_AVX2
    static const GsClFns avx2[2] = {{gs_tr_f4_blocks, gs_fwd_cl_f4_avx2, gs_bwd_cl_f4_avx2},
                                    {gs_tr_f8_blocks, gs_fwd_cl_f8_avx2, gs_bwd_cl_f8_avx2}};
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        return &avx2[f8];
    }
#endif
    return &base[f8];
}

/* The channels-last forward of n's points [p0, p0 + np) with taps t. */
static int
gs_cl_fwd_block(const GsBlockJob *bj, const GsBlock *t, int64_t n, int64_t p0, int64_t np)
{
    const PtlGridSampler *a = bj->a;
    size_t es = bj->f8 ? sizeof(double) : sizeof(float);
    char *yb = malloc((size_t)(np * a->c) * es);
    if (yb == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "can't allocate grid sampler rows");
    }
    bj->cl->fwd(t, np, a->c, (const char *)bj->xcl + (size_t)(n * a->plane * a->c) * es, yb);
    bj->cl->tr(yb, a->c, (char *)bj->y + (size_t)(n * a->c * a->npts + p0) * es, a->npts, np,
               a->c);
    free(yb);
    return 0;
}

/* The forward's channels-last copy of the input, samples [b, e). */
static int
gs_cl_input_job(void *ctx, int64_t b, int64_t e)
{
    const GsBlockJob *bj = ctx;
    const PtlGridSampler *a = bj->a;
    size_t es = bj->f8 ? sizeof(double) : sizeof(float), sz = (size_t)(a->plane * a->c) * es;
    for (int64_t n = b; n < e; n++) {
        bj->cl->tr((const char *)bj->x + (size_t)n * sz, a->plane,
                   (char *)bj->xcl + (size_t)n * sz, a->c, a->c, a->plane);
    }
    return 0;
}

/* Writes the grid gradient rows gg of n's points [p0, p0 + np) with taps t, where wanted; a
 * point without taps takes ptl_gs_nonfinite_grad's row where a coordinate is not finite
 * (Note [Grid sampler non-finite coordinates]). */
static void
gs_block_ggrid(const GsBlockJob *bj, const GsBlock *t, int64_t n, int64_t p0, int64_t np,
               double (*gg)[3])
{
    const PtlGridSampler *a = bj->a;
    for (int64_t p = 0; p < np && a->ggrid != NULL; p++) {
        int64_t q = n * a->npts + p0 + p;
        int bad = t->start[p] == t->start[p + 1] ? ptl_gs_nonfinite(a, a->grid + q * a->nd) : 0;
        if (bad) {
            double zero = 0.0;
            for (int64_t c = 0; c < a->c; c++) {
                zero += 0.0 * gs_at(bj->go, bj->f8, (n * a->c + c) * a->npts + p0 + p);
            }
            ptl_gs_nonfinite_grad(a, bad, zero, gg[p]);
        }
        for (int d = 0; d < a->nd; d++) {
            a->ggrid[q * a->nd + d] = gg[p][d];
        }
    }
}

/* The channels-last backward of sample n: its input gradient (bj->gx, written whole) and
 * grid gradient rows, as wanted. */
static int
gs_cl_bwd_sample(const GsBlockJob *bj, int64_t n)
{
    const PtlGridSampler *a = bj->a;
    int64_t c = a->c, plane = a->plane;
    size_t es = bj->f8 ? sizeof(double) : sizeof(float);
    void *xcl = a->ggrid != NULL ? malloc((size_t)(plane * c) * es) : NULL;
    double *gxcl = bj->gx != NULL ? calloc((size_t)(plane * c), sizeof(double)) : NULL;
    void *gob = malloc((size_t)(GS_BLOCK * c) * sizeof(double));
    int rc = -1;
    if ((a->ggrid != NULL && xcl == NULL) || (bj->gx != NULL && gxcl == NULL) || gob == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "can't allocate grid sampler scratch");
        goto done;
    }
    if (xcl != NULL) {
        bj->cl->tr((const char *)bj->x + (size_t)(n * c * plane) * es, plane, xcl, c, c, plane);
    }
    for (int64_t p0 = 0; p0 < a->npts; p0 += GS_BLOCK) {
        int64_t np = a->npts - p0 < GS_BLOCK ? a->npts - p0 : GS_BLOCK;
        double gg[GS_BLOCK][3] = {{0.0}};
        GsBlock *t = gs_block_taps(a, n, p0, np, a->ggrid != NULL);
        if (t == NULL) {
            goto done;
        }
        bj->cl->tr((const char *)bj->go + (size_t)(n * c * a->npts + p0) * es, a->npts, gob, c,
                   c, np);
        bj->cl->bwd(t, np, c, a->nd, xcl, gob, gxcl, a->ggrid != NULL ? gg : NULL);
        gs_block_ggrid(bj, t, n, p0, np, gg);
        free(t);
    }
    /* gxcl's rows of GS_BLOCK pixels rounded to the dtype (float32: in gob), transposed */
    for (int64_t i0 = 0; i0 < plane && gxcl != NULL; i0 += GS_BLOCK) {
        int64_t ni = plane - i0 < GS_BLOCK ? plane - i0 : GS_BLOCK;
        float *rows = gob;
        for (int64_t q = 0; q < ni * c && !bj->f8; q++) {
            rows[q] = (float)gxcl[i0 * c + q];
        }
        bj->cl->tr(bj->f8 ? (const void *)(gxcl + i0 * c) : rows, c,
                   (char *)bj->gx + (size_t)(n * c * plane + i0) * es, plane, ni, c);
    }
    rc = 0;
done:
    free(xcl);
    free(gxcl);
    free(gob);
    return rc;
}

/* Forward over the (sample, block) items [b, e). */
static int
gs_block_fwd_job(void *ctx, int64_t b, int64_t e)
{
    const GsBlockJob *bj = ctx;
    const PtlGridSampler *a = bj->a;
    for (int64_t it = b; it < e; it++) {
        int64_t n = it / bj->nblk, p0 = it % bj->nblk * GS_BLOCK;
        int64_t np = a->npts - p0 < GS_BLOCK ? a->npts - p0 : GS_BLOCK;
        GsBlock *t = gs_block_taps(a, n, p0, np, 0);
        if (t == NULL) {
            return -1;
        }
        if (bj->cl != NULL && gs_cl_fwd_block(bj, t, n, p0, np) < 0) {
            free(t);
            return -1;
        }
        for (int64_t c = 0; c < a->c && bj->cl == NULL; c++) {
            int64_t pl = (n * a->c + c) * a->plane, o = (n * a->c + c) * a->npts + p0;
            if (bj->f8) {
                gs_rows_double(t, np, (const double *)bj->x + pl, (double *)bj->y + o);
            }
            else {
                gs_rows_float(t, np, (const float *)bj->x + pl, (float *)bj->y + o);
            }
        }
        free(t);
    }
    return 0;
}

/* Backward over samples [b, e): grad_input (double, a sample's own planes) and grad_grid. */
static int
gs_block_bwd_job(void *ctx, int64_t b, int64_t e)
{
    const GsBlockJob *bj = ctx;
    const PtlGridSampler *a = bj->a;
    int nd = a->nd, f8 = bj->f8;
    for (int64_t n = b; n < e && bj->cl != NULL; n++) {
        if (gs_cl_bwd_sample(bj, n) < 0) {
            return -1;
        }
    }
    for (int64_t n = b; n < e && bj->cl == NULL; n++) {
        for (int64_t p0 = 0; p0 < a->npts; p0 += GS_BLOCK) {
            int64_t np = a->npts - p0 < GS_BLOCK ? a->npts - p0 : GS_BLOCK;
            double gg[GS_BLOCK][3] = {{0.0}};
            GsBlock *t = gs_block_taps(a, n, p0, np, a->ggrid != NULL);
            if (t == NULL) {
                return -1;
            }
            for (int64_t c = 0; c < a->c; c++) {
                int64_t pl = (n * a->c + c) * a->plane, o = (n * a->c + c) * a->npts + p0;
                double *gx = a->gx != NULL ? a->gx + pl : NULL;
                for (int64_t p = 0; p < np && a->ggrid == NULL && gx != NULL; p++) {
                    double g = gs_at(bj->go, f8, o + p);
                    for (int k = t->start[p]; k < t->start[p + 1]; k++) {
                        gx[t->off[k]] += t->w[k] * g;
                    }
                }
                for (int64_t p = 0; p < np && a->ggrid != NULL; p++) {
                    double g = gs_at(bj->go, f8, o + p);
                    for (int k = t->start[p]; k < t->start[p + 1]; k++) {
                        if (gx != NULL) {
                            gx[t->off[k]] += t->w[k] * g;
                        }
                        double xv = gs_at(bj->x, f8, pl + t->off[k]);
                        for (int d = 0; d < nd; d++) {
                            gg[p][d] += t->wd[k][d] * xv * g;
                        }
                    }
                }
            }
            gs_block_ggrid(bj, t, n, p0, np, gg);
            free(t);
        }
    }
    return 0;
}

/* The backward's backward over samples [b, e) (Note [Grid sampler taps]); ggx / ggg may be
 * NULL (zero). */
static int
gs_double_job(void *ctx, int64_t b, int64_t e)
{
    const GridJob *j = ctx;
    const PtlGridSampler *a = &j->a;
    PtlGsTaps t;
    int nd = a->nd;
    for (int64_t q = b * a->npts; q < e * a->npts; q++) {
        int64_t n = q / a->npts, p = q % a->npts;
        double gg[3] = {0.0, 0.0, 0.0}, v[PTL_GS_MAX_TAPS], u[PTL_GS_MAX_TAPS][3];
        double wdd[PTL_GS_MAX_TAPS][3][3];
        const double *ggg = j->ggg != NULL ? j->ggg + q * nd : NULL;
        ptl_gs_point(a, a->grid + q * nd, 2, &t, wdd);
        /* v = sum_d ggG[d] W_d and u[e] = sum_d ggG[d] W_de per tap */
        for (int k = 0; k < t.n; k++) {
            v[k] = u[k][0] = u[k][1] = u[k][2] = 0.0;
            for (int d = 0; d < nd && ggg != NULL; d++) {
                v[k] += ggg[d] * t.wd[k][d];
                for (int f = 0; f < nd; f++) {
                    u[k][f] += ggg[d] * wdd[k][d][f];
                }
            }
        }
        for (int64_t c = 0; c < a->c; c++) {
            int64_t pl = (n * a->c + c) * a->plane, o = (n * a->c + c) * a->npts + p;
            double g = a->go[o], acc = 0.0;
            for (int k = 0; k < t.n; k++) {
                double xv = a->x[pl + t.off[k]];
                double gi = j->ggx != NULL ? j->ggx[pl + t.off[k]] : 0.0;
                acc += t.w[k] * gi + v[k] * xv;
                if (a->gx != NULL) {
                    a->gx[pl + t.off[k]] += g * v[k];
                }
                for (int f = 0; f < nd; f++) {
                    gg[f] += g * (t.wd[k][f] * gi + u[k][f] * xv);
                }
            }
            if (j->ggo != NULL) {
                j->ggo[o] = acc;
            }
        }
        for (int f = 0; f < nd && a->ggrid != NULL; f++) {
            a->ggrid[q * nd + f] = gg[f];
        }
    }
    return 0;
}

/* PyTorch's checks of input (N, C, [D,] H, W) and grid (N, [Do,] Ho, Wo, nd), in its
 * order; nd is 2 or 3 (the op). */
static int
gs_check(PtlTensorImpl *x, PtlTensorImpl *grid, int nd, int mode)
{
    char b1[128], b2[128];
    ptl_format_sizes(b1, sizeof(b1), x->dim, x->sizes);
    ptl_format_sizes(b2, sizeof(b2), grid->dim, grid->sizes);
    PTL_CHECK(x->dim >= 1 && grid->dim >= 1, PTL_ERR_INDEX,
              "Dimension specified as 0 but tensor has no dimensions");
    PTL_CHECK(x->sizes[0] == grid->sizes[0], PTL_ERR_RUNTIME,
              "grid_sampler(): expected grid and input to have same batch size, but got input "
              "with sizes %s and grid with sizes %s", b1, b2);
    PTL_CHECK(grid->sizes[grid->dim - 1] == x->dim - 2, PTL_ERR_RUNTIME,
              "grid_sampler(): expected grid to have size %d in last dimension, but got grid "
              "with sizes %s", x->dim - 2, b2);
    for (int i = 2; i < x->dim; i++) {
        PTL_CHECK(x->sizes[i] > 0, PTL_ERR_RUNTIME,
                  "grid_sampler(): expected input to have non-empty spatial dimensions, but "
                  "input has sizes %s with dimension %d being empty", b1, i);
    }
    PTL_CHECK(x->dim == nd + 2 && grid->dim == nd + 2, PTL_ERR_RUNTIME,
              "grid_sampler(): expected %dD input and grid with same number of dimensions, but "
              "got input with sizes %s and grid with sizes %s", nd + 2, b1, b2);
    PTL_CHECK(nd == 2 || mode != PTL_GS_BICUBIC, PTL_ERR_RUNTIME,
              "grid_sampler(): bicubic interpolation only supports 4D input");
    PTL_CHECK(mode >= PTL_GS_BILINEAR && mode <= PTL_GS_BICUBIC, PTL_ERR_RUNTIME,
              "grid_sampler(): invalid interpolation_mode %d", mode);
    if (nn_check_dtype(nd == 2 ? "grid_sampler_2d_cpu_kernel_impl" : "grid_sampler3d_cpu",
                       x->dtype, 0) < 0) {
        return -1;
    }
    PTL_CHECK(x->dtype == grid->dtype, PTL_ERR_RUNTIME, "expected scalar type %s but found %s",
              ptl_dtype_legacy_name(x->dtype), ptl_dtype_legacy_name(grid->dtype));
    return 0;
error:
    return -1;
}

/* t (may be NULL) must have `dim` sizes equal to `sizes`. */
static int
gs_check_like(PtlTensorImpl *t, const char *what, int dim, const int64_t *sizes)
{
    char b1[128], b2[128];
    if (t == NULL ||
        (t->dim == dim && memcmp(t->sizes, sizes, sizeof(int64_t) * (size_t)dim) == 0)) {
        return 0;
    }
    return ptl_error_set(PTL_ERR_RUNTIME, "grid_sampler backward: expected %s of size %s, but "
                         "got %s", what, ptl_format_sizes(b1, sizeof(b1), dim, sizes),
                         ptl_format_sizes(b2, sizeof(b2), t->dim, t->sizes));
}

/* Fills the job's shape fields; returns the output sizes (N, C, [Do,] Ho, Wo) in ysz. */
static GridJob
gs_job(PtlTensorImpl *x, PtlTensorImpl *grid, const PtlIValue *opts, int64_t *ysz)
{
    GridJob j = {0};
    PtlGridSampler *a = &j.a;
    int nd = x->dim - 2;
    a->nd = nd;
    a->mode = (int32_t)opts[0].u.i;
    a->padding = (int32_t)opts[1].u.i;
    a->align = opts[2].u.b;
    a->n = x->sizes[0];
    a->c = x->sizes[1];
    a->npts = 1;
    a->plane = 1;
    ysz[0] = x->sizes[0];
    ysz[1] = x->sizes[1];
    for (int i = 0; i < nd; i++) {
        a->npts *= grid->sizes[1 + i];
        ysz[2 + i] = grid->sizes[1 + i];
    }
    /* component k indexes spatial dim nd - 1 - k */
    for (int k = 0; k < nd; k++) {
        a->size[k] = x->sizes[x->dim - 1 - k];
        a->stride[k] = a->plane;
        a->plane *= a->size[k];
    }
    return j;
}

/* Runs fn(ctx) over the samples [0, j->a.n), without the GIL. */
static int
gs_per_sample(GridJob *j, PtlParallelFn fn, void *ctx)
{
    int64_t work = j->a.npts * (j->a.c + 1) + 1;
    void *tok = ptl_nogil_begin();
    int rc = ptl_parallel_for(0, j->a.n, PTL_GRAIN_SIZE / work + 1, fn, ctx);
    ptl_nogil_end(tok);
    return rc;
}

/* Zeros of `sizes` in float64 on `device` (new ref), or NULL with the error set. */
static PtlTensorImpl *
gs_zeros(int dim, const int64_t *sizes, PtlDevice device)
{
    PtlIValue zero = ptl_iv_double(0.0);
    PtlTensorImpl *t = ptl_empty(dim, sizes, PTL_DTYPE_FLOAT64, device);
    if (t != NULL && ptl_fill_scalar(t, &zero) < 0) {
        PTL_CLEAR(t);
    }
    return t;
}

int (*ptl_device_grid_sampler_hook)(const PtlGridSampler *a);

/* The job's forward (j->a.y set) or backward (j->a.go set) on the device through the hook
 * (Note [CUDA grid sampler] in src/cuda/grid_sampler_plan.c), or on the CPU's threads by
 * blocks of points (Note [Grid sampler blocks]), reading bj's x and go in their dtype. */
static int
gs_run(GridJob *j, GsBlockJob *bj, int on_device, int bwd)
{
    if (on_device) {
        return ptl_device_grid_sampler_hook(&j->a);
    }
    bj->a = &j->a;
    bj->nblk = (j->a.npts + GS_BLOCK - 1) / GS_BLOCK;
    if (bwd && j->a.mode == PTL_GS_NEAREST && j->a.plane <= INT32_MAX && j->a.ggrid == NULL) {
        return j->a.gx == NULL ? 0 : gs_per_sample(j, gs_near_bwd_job, bj);
    }
    if (bwd) {
        return gs_per_sample(j, gs_block_bwd_job, bj);
    }
    if (j->a.mode == PTL_GS_NEAREST && j->a.plane <= INT32_MAX) {
        bj->nblk = (j->a.npts + GS_NEAR - 1) / GS_NEAR;
        void *tok = ptl_nogil_begin();
        int64_t grain = PTL_GRAIN_SIZE / (GS_NEAR * (j->a.c + 1)) + 1;
        int rc = ptl_parallel_for(0, j->a.n * bj->nblk, grain, gs_near_fwd_job, bj);
        ptl_nogil_end(tok);
        return rc;
    }
    size_t es = bj->f8 ? sizeof(double) : sizeof(float);
    if (bj->cl != NULL && (bj->xcl = malloc((size_t)(j->a.n * j->a.c * j->a.plane) * es)) == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "can't allocate grid sampler scratch");
    }
    void *tok = ptl_nogil_begin();
    int rc = 0;
    if (bj->cl != NULL) {   /* c >= GS_CL_MIN_C and plane > 0 here; c is 0 in an empty input */
        int64_t grain = PTL_GRAIN_SIZE / (j->a.c * j->a.plane) + 1;
        rc = ptl_parallel_for(0, j->a.n, grain, gs_cl_input_job, bj);
    }
    if (rc == 0) {
        rc = ptl_parallel_for(0, j->a.n * bj->nblk, PTL_GRAIN_SIZE / (GS_BLOCK * (j->a.c + 1)) + 1,
                              gs_block_fwd_job, bj);
    }
    ptl_nogil_end(tok);
    free(bj->xcl);
    return rc;
}

/* grid_sampler_{2,3}d(input, grid, interpolation_mode, padding_mode, align_corners):
 * (N, C, [D,] H, W) sampled at (N, [Do,] Ho, Wo, nd) -> (N, C, [Do,] Ho, Wo);
 * grid_sampler_{2,3}d_backward(grad_output, input, grid, ..., output_mask) -> grad_input
 * (N, C, [D,] H, W) and grad_grid (N, [Do,] Ho, Wo, nd) per output_mask.  CUDA tensors take
 * the device's kernels (device_nn.h's hook) after the same checks and float64 copies. */
static int
grid_sampler_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int bwd = op->id == PTL_OP_grid_sampler_2d_backward ||
              op->id == PTL_OP_grid_sampler_3d_backward;
    int nd = op->id == PTL_OP_grid_sampler_2d || op->id == PTL_OP_grid_sampler_2d_backward ? 2 : 3;
    int k = bwd ? 1 : 0;
    PtlTensorImpl *x = s[k].u.t, *grid = s[k + 1].u.t;
    PtlTensorImpl *xc = NULL, *gc = NULL, *goc = NULL, *r[2] = {NULL, NULL};
    int64_t ysz[5];

    if (gs_check(x, grid, nd, (int)s[k + 2].u.i) < 0) {
        return -1;
    }
    int on_device = nn_on_device(x, ptl_device_grid_sampler_hook != NULL);
    GridJob j = gs_job(x, grid, &s[k + 2], ysz);
    int cl = !on_device && gs_use_cl(&j.a);
    /* the CPU reads and writes float32/float64 in place; the rest, and the device, in double */
    PtlDtype work = !on_device && (x->dtype == PTL_DTYPE_FLOAT32 ||
                                   x->dtype == PTL_DTYPE_FLOAT64) ? x->dtype : PTL_DTYPE_FLOAT64;
    if ((xc = nn_prepare(x, work)) == NULL ||
        (gc = nn_prepare(grid, PTL_DTYPE_FLOAT64)) == NULL) {
        goto error;
    }
    j.a.x = (const double *)ptl_tensor_data(xc);
    j.a.grid = (const double *)ptl_tensor_data(gc);
    if (bwd) {
        const int64_t *mask = s[6].u.il.data;
        if (gs_check_like(s[0].u.t, "grad_output", nd + 2, ysz) < 0 ||
            (goc = nn_prepare(s[0].u.t, work)) == NULL ||
            (mask[0] && cl && (r[0] = ptl_empty(x->dim, x->sizes, work, x->device)) == NULL) ||
            (mask[0] && !cl && (r[0] = gs_zeros(x->dim, x->sizes, x->device)) == NULL) ||
            (mask[1] && (r[1] = ptl_empty(grid->dim, grid->sizes, PTL_DTYPE_FLOAT64,
                                          x->device)) == NULL)) {
            goto error;
        }
        j.a.go = (const double *)ptl_tensor_data(goc);
        j.a.gx = r[0] != NULL ? (double *)ptl_tensor_data(r[0]) : NULL;
        j.a.ggrid = r[1] != NULL ? (double *)ptl_tensor_data(r[1]) : NULL;
    }
    else {
        if ((r[0] = ptl_empty(nd + 2, ysz, work, x->device)) == NULL) {
            goto error;
        }
        j.a.y = (double *)ptl_tensor_data(r[0]);
    }
    if (bwd && !on_device && j.a.mode == PTL_GS_NEAREST && j.a.ggrid != NULL) {
        /* nearest's taps do not move with the grid: PyTorch's grid gradient is zeros, also
         * where the input is not finite */
        memset(j.a.ggrid, 0, sizeof(double) * (size_t)(j.a.n * j.a.npts * nd));
        j.a.ggrid = NULL;
    }
    GsBlockJob bj = {.x = ptl_tensor_data(xc), .go = goc != NULL ? ptl_tensor_data(goc) : NULL,
                     .y = bwd ? NULL : ptl_tensor_data(r[0]), .f8 = work == PTL_DTYPE_FLOAT64,
                     .gx = bwd && r[0] != NULL ? ptl_tensor_data(r[0]) : NULL};
    bj.cl = cl ? gs_cl_fns(bj.f8) : NULL;
    if (gs_run(&j, &bj, on_device, bwd) < 0) {
        goto error;
    }
    for (int i = 0; i < 2; i++) {
        if (r[i] != NULL && (r[i] = nn_finish(r[i], x->dtype)) == NULL) {
            goto error;
        }
    }
    ptl_decref(xc);
    ptl_decref(gc);
    ptl_xdecref(goc);
    s[0] = ptl_iv_tensor(r[0]);
    if (bwd) {
        s[1] = ptl_iv_tensor(r[1]);
    }
    return 0;
error:
    ptl_xdecref(xc);
    ptl_xdecref(gc);
    ptl_xdecref(goc);
    ptl_xdecref(r[0]);
    ptl_xdecref(r[1]);
    return -1;
}

/* _grid_sampler_backward_backward(ggI?, ggG?, grad_output, input, grid, interpolation_mode,
 * padding_mode, align_corners, output_mask): the gradients of grid_sampler_{2,3}d_backward
 * for grad_output (N, C, [Do,] Ho, Wo), input (N, C, [D,] H, W) and grid
 * (N, [Do,] Ho, Wo, nd) given those of its outputs; undefined ones count as zeros. */
static int
grid_sampler_backward_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *ggx = s[0].tag == PTL_IV_TENSOR ? s[0].u.t : NULL;
    PtlTensorImpl *ggg = s[1].tag == PTL_IV_TENSOR ? s[1].u.t : NULL;
    PtlTensorImpl *go = s[2].u.t, *x = s[3].u.t, *grid = s[4].u.t;
    PtlTensorImpl *in[5] = {NULL, NULL, NULL, NULL, NULL}, *r[3] = {NULL, NULL, NULL};
    const int64_t *mask = s[8].u.il.data;
    int64_t ysz[5];

    if (gs_check(x, grid, x->dim == 5 ? 3 : 2, (int)s[5].u.i) < 0) {
        return -1;
    }
    GridJob j = gs_job(x, grid, &s[5], ysz);
    if (gs_check_like(go, "grad_output", x->dim, ysz) < 0 ||
        gs_check_like(ggx, "grad of grad_input", x->dim, x->sizes) < 0 ||
        gs_check_like(ggg, "grad of grad_grid", grid->dim, grid->sizes) < 0) {
        return -1;
    }
    PtlTensorImpl *src[5] = {x, grid, go, ggx, ggg};
    for (int i = 0; i < 5; i++) {
        if (src[i] != NULL && (in[i] = nn_prepare(src[i], PTL_DTYPE_FLOAT64)) == NULL) {
            goto error;
        }
    }
    PtlTensorImpl *like[3] = {go, x, grid};
    for (int i = 0; i < 3; i++) {
        if (mask[i] && (r[i] = nn_zeros(like[i]->dim, like[i]->sizes, PTL_DTYPE_FLOAT64)) == NULL) {
            goto error;
        }
    }
    j.a.x = (const double *)ptl_tensor_data(in[0]);
    j.a.grid = (const double *)ptl_tensor_data(in[1]);
    j.a.go = (const double *)ptl_tensor_data(in[2]);
    j.ggx = in[3] != NULL ? (const double *)ptl_tensor_data(in[3]) : NULL;
    j.ggg = in[4] != NULL ? (const double *)ptl_tensor_data(in[4]) : NULL;
    j.ggo = r[0] != NULL ? (double *)ptl_tensor_data(r[0]) : NULL;
    j.a.gx = r[1] != NULL ? (double *)ptl_tensor_data(r[1]) : NULL;
    j.a.ggrid = r[2] != NULL ? (double *)ptl_tensor_data(r[2]) : NULL;
    if (gs_per_sample(&j, gs_double_job, &j) < 0) {
        goto error;
    }
    PtlDtype out_dt[3] = {like[0]->dtype, like[1]->dtype, like[2]->dtype};
    return nn_return(s, r, out_dt, 3, in, 5, 1);
error:
    return nn_return(s, r, NULL, 3, in, 5, 0);
}

static const PtlKernelReg grid_sampler_kernels[] = {
    {PTL_OP_grid_sampler_2d, PTL_KEY_CPU, grid_sampler_cpu},
    {PTL_OP_grid_sampler_2d_backward, PTL_KEY_CPU, grid_sampler_cpu},
    {PTL_OP_grid_sampler_3d, PTL_KEY_CPU, grid_sampler_cpu},
    {PTL_OP_grid_sampler_3d_backward, PTL_KEY_CPU, grid_sampler_cpu},
    {PTL_OP__grid_sampler_backward_backward, PTL_KEY_CPU, grid_sampler_backward_backward_cpu},
};
PTL_DEFINE_REGISTER(grid_sampler_kernels)
