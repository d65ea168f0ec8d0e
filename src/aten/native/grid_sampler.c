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
#include "../../c10/parallel.h"
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
 * gradient skips the taps' derivatives and the grid gradient's terms. */
#define GS_BLOCK 64

typedef struct GsBlockJob {
    const PtlGridSampler *a;
    const void *x, *go;   /* the input and grad_output, float32 (f8 0) or float64 */
    void *y;              /* the forward's output, same dtype */
    int f8;
    int64_t nblk;         /* blocks per sample */
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

static GsBlock *
gs_block_taps(const PtlGridSampler *a, int64_t n, int64_t p0, int64_t np, int level)
{
    GsBlock *blk = malloc(sizeof(GsBlock));
    PtlGsTaps t;
    if (blk == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "can't allocate grid sampler taps");
        return NULL;
    }
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
        for (int64_t c = 0; c < a->c; c++) {
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

static inline double
gs_at(const void *p, int f8, int64_t i)
{
    return f8 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

/* Backward over samples [b, e): grad_input (double, a sample's own planes) and grad_grid. */
static int
gs_block_bwd_job(void *ctx, int64_t b, int64_t e)
{
    const GsBlockJob *bj = ctx;
    const PtlGridSampler *a = bj->a;
    int nd = a->nd, f8 = bj->f8;
    for (int64_t n = b; n < e; n++) {
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
            for (int64_t p = 0; p < np && a->ggrid != NULL; p++) {
                for (int d = 0; d < nd; d++) {
                    a->ggrid[(n * a->npts + p0 + p) * nd + d] = gg[p][d];
                }
            }
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
    if (bwd) {
        return gs_per_sample(j, gs_block_bwd_job, bj);
    }
    void *tok = ptl_nogil_begin();
    int rc = ptl_parallel_for(0, j->a.n * bj->nblk, PTL_GRAIN_SIZE / (GS_BLOCK * (j->a.c + 1)) + 1,
                              gs_block_fwd_job, bj);
    ptl_nogil_end(tok);
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
            (mask[0] && (r[0] = gs_zeros(x->dim, x->sizes, x->device)) == NULL) ||
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
    GsBlockJob bj = {.x = ptl_tensor_data(xc), .go = goc != NULL ? ptl_tensor_data(goc) : NULL,
                     .y = bwd ? NULL : ptl_tensor_data(r[0]), .f8 = work == PTL_DTYPE_FLOAT64};
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
