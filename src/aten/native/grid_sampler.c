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
 * Arithmetic runs in double (inputs converted, results cast back). */
#include <math.h>

#include "../../c10/parallel.h"
#include "nn_common.h"

enum { GS_BILINEAR = 0, GS_NEAREST = 1, GS_BICUBIC = 2 };
enum { GS_ZEROS = 0, GS_BORDER = 1, GS_REFLECTION = 2 };

#define GS_MAX_TAPS 16     /* 4 x 4 (bicubic, 2-D); trilinear has 8 */
#define GS_CUBIC_A (-0.75)

/* The taps of one grid component along its dim. */
typedef struct Taps1 {
    int n;
    double idx[4];      /* in-bounds index, or -1 */
    double w[4], w1[4], w2[4];
    double s;           /* d(pixel coordinate) / d(grid value) */
} Taps1;

/* The valid taps of one grid point: offsets into an input plane and weights. */
typedef struct Taps {
    int n;
    int64_t off[GS_MAX_TAPS];
    double w[GS_MAX_TAPS];
    double wd[GS_MAX_TAPS][3];      /* d W / d grid component */
    double wdd[GS_MAX_TAPS][3][3];  /* d2 W / d component d component */
} Taps;

/* Pixel coordinate in [0, size - 1]; *d is zeroed outside and on the borders (PyTorch
 * counts the borders as outside for the gradient). */
static double
gs_clip(double x, int64_t size, double *d)
{
    double hi = (double)(size - 1);
    if (!(x > 0)) {
        *d = 0.0;
        return 0.0;
    }
    if (x >= hi) {
        *d = 0.0;
        return hi;
    }
    return x;
}

/* x reflected into [lo2 / 2, hi2 / 2]; *d takes the sign of the reflection. */
static double
gs_reflect(double x, double lo2, double hi2, double *d)
{
    if (lo2 == hi2) {
        *d = 0.0;
        return 0.0;
    }
    double lo = lo2 / 2, span = (hi2 - lo2) / 2, sign = 1.0;
    x -= lo;
    if (x < 0) {
        sign = -1.0;
        x = -x;
    }
    double extra = fmod(x, span), flips = floor(x / span);
    if (fmod(flips, 2.0) == 0.0) {
        *d *= sign;
        return extra + lo;
    }
    *d *= -sign;
    return span - extra + lo;
}

/* The padding mode applied to pixel coordinate x, with *d multiplied by its slope. */
static double
gs_pad(double x, int64_t size, int padding, int align, double *d)
{
    if (padding == GS_REFLECTION) {
        x = align ? gs_reflect(x, 0.0, 2.0 * (double)(size - 1), d)
                  : gs_reflect(x, -1.0, 2.0 * (double)size - 1.0, d);
    }
    return padding == GS_ZEROS ? x : gs_clip(x, size, d);
}

/* An integer coordinate as a tap index, -1 outside [0, size). */
static double
gs_index(double i, int64_t size)
{
    return i >= 0 && i < (double)size ? i : -1.0;
}

/* Cubic convolution weights (A = -0.75) of the 4 taps at fractional offset t, with their
 * first and second derivatives by t. */
static void
gs_cubic(double t, double *w, double *w1, double *w2)
{
    const double a = GS_CUBIC_A;
    /* near(u) for |u| <= 1, far(u) for 1 < |u| < 2 */
    double u[4] = {t + 1.0, t, 1.0 - t, 2.0 - t}, du[4] = {1.0, 1.0, -1.0, -1.0};
    for (int k = 0; k < 4; k++) {
        double x = u[k];
        if (k == 1 || k == 2) {
            w[k] = ((a + 2) * x - (a + 3)) * x * x + 1;
            w1[k] = (3 * (a + 2) * x - 2 * (a + 3)) * x * du[k];
            w2[k] = 6 * (a + 2) * x - 2 * (a + 3);
        }
        else {
            w[k] = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
            w1[k] = ((3 * a * x - 10 * a) * x + 8 * a) * du[k];
            w2[k] = 6 * a * x - 10 * a;
        }
    }
}

/* The taps of grid value g along a dim of `size`. */
static void
gs_taps1(double g, int64_t size, int mode, int padding, int align, Taps1 *t)
{
    double s = align ? (double)(size - 1) / 2 : (double)size / 2;
    double x = align ? (g + 1) / 2 * (double)(size - 1) : ((g + 1) * (double)size - 1) / 2;
    if (mode != GS_BICUBIC) {
        x = gs_pad(x, size, padding, align, &s);
    }
    t->s = s;
    if (mode == GS_NEAREST) {
        t->n = 1;
        t->idx[0] = gs_index(nearbyint(x), size);
        t->w[0] = 1.0;
        t->w1[0] = t->w2[0] = 0.0;
        return;
    }
    double x0 = floor(x), f = x - x0;
    if (mode == GS_BILINEAR) {
        t->n = 2;
        t->idx[0] = gs_index(x0, size);
        t->idx[1] = gs_index(x0 + 1, size);
        t->w[0] = 1 - f;
        t->w[1] = f;
        t->w1[0] = -1.0;
        t->w1[1] = 1.0;
        t->w2[0] = t->w2[1] = 0.0;
        return;
    }
    t->n = 4;
    gs_cubic(f, t->w, t->w1, t->w2);
    for (int k = 0; k < 4; k++) {
        double unused = 0.0, i = gs_pad(x0 - 1 + k, size, padding, align, &unused);
        t->idx[k] = gs_index(trunc(i), size);
    }
}

typedef struct GridJob {
    int nd, mode, padding, align, level;   /* level: 0 weights, 1 + first, 2 + second */
    int64_t c, npts, plane;                /* channels, grid points and input plane size */
    int64_t size[3], stride[3];            /* per grid component (x, y[, z]) */
    const double *x, *grid, *go, *ggx, *ggg;
    double *y, *gx, *ggrid, *ggo;
} GridJob;

/* The valid taps of grid point g (nd components). */
static void
gs_point(const GridJob *j, const double *g, Taps *t)
{
    Taps1 a[3];
    int total = 1, nd = j->nd;
    for (int k = 0; k < nd; k++) {
        gs_taps1(g[k], j->size[k], j->mode, j->padding, j->align, &a[k]);
        total *= a[k].n;
    }
    t->n = 0;
    for (int q = 0; q < total; q++) {
        int sel[3], rem = q, ok = 1;
        int64_t off = 0;
        for (int k = 0; k < nd; k++) {
            sel[k] = rem % a[k].n;
            rem /= a[k].n;
            double i = a[k].idx[sel[k]];
            ok = ok && i >= 0;
            off += (int64_t)i * j->stride[k];
        }
        if (!ok) {
            continue;
        }
        int m = t->n++;
        t->off[m] = off;
        /* f[k][o]: the o-th derivative of component k's weight, by the grid value */
        double f[3][3];
        for (int k = 0; k < nd; k++) {
            f[k][0] = a[k].w[sel[k]];
            f[k][1] = a[k].w1[sel[k]] * a[k].s;
            f[k][2] = a[k].w2[sel[k]] * a[k].s * a[k].s;
        }
        t->w[m] = 1.0;
        for (int k = 0; k < nd; k++) {
            t->w[m] *= f[k][0];
        }
        for (int d = 0; d < nd && j->level >= 1; d++) {
            t->wd[m][d] = 1.0;
            for (int k = 0; k < nd; k++) {
                t->wd[m][d] *= f[k][k == d];
            }
            for (int e = 0; e < nd && j->level >= 2; e++) {
                t->wdd[m][d][e] = 1.0;
                for (int k = 0; k < nd; k++) {
                    t->wdd[m][d][e] *= f[k][(k == d) + (k == e)];
                }
            }
        }
    }
}

/* Forward over grid points [b, e) of all samples. */
static int
gs_forward_job(void *ctx, int64_t b, int64_t e)
{
    const GridJob *j = ctx;
    Taps t;
    for (int64_t q = b; q < e; q++) {
        int64_t n = q / j->npts, p = q % j->npts;
        gs_point(j, j->grid + q * j->nd, &t);
        for (int64_t c = 0; c < j->c; c++) {
            const double *xp = j->x + (n * j->c + c) * j->plane;
            double acc = 0.0;
            for (int k = 0; k < t.n; k++) {
                acc += t.w[k] * xp[t.off[k]];
            }
            j->y[(n * j->c + c) * j->npts + p] = acc;
        }
    }
    return 0;
}

/* Backward over samples [b, e): grad_input (a sample's own planes) and grad_grid. */
static int
gs_backward_job(void *ctx, int64_t b, int64_t e)
{
    const GridJob *j = ctx;
    Taps t;
    for (int64_t q = b * j->npts; q < e * j->npts; q++) {
        int64_t n = q / j->npts, p = q % j->npts;
        double gg[3] = {0.0, 0.0, 0.0};
        gs_point(j, j->grid + q * j->nd, &t);
        for (int64_t c = 0; c < j->c; c++) {
            int64_t pl = (n * j->c + c) * j->plane;
            double g = j->go[(n * j->c + c) * j->npts + p];
            for (int k = 0; k < t.n; k++) {
                if (j->gx != NULL) {
                    j->gx[pl + t.off[k]] += t.w[k] * g;
                }
                for (int d = 0; d < j->nd; d++) {
                    gg[d] += t.wd[k][d] * j->x[pl + t.off[k]] * g;
                }
            }
        }
        for (int d = 0; d < j->nd && j->ggrid != NULL; d++) {
            j->ggrid[q * j->nd + d] = gg[d];
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
    Taps t;
    int nd = j->nd;
    for (int64_t q = b * j->npts; q < e * j->npts; q++) {
        int64_t n = q / j->npts, p = q % j->npts;
        double gg[3] = {0.0, 0.0, 0.0}, v[GS_MAX_TAPS], u[GS_MAX_TAPS][3];
        const double *ggg = j->ggg != NULL ? j->ggg + q * nd : NULL;
        gs_point(j, j->grid + q * nd, &t);
        /* v = sum_d ggG[d] W_d and u[e] = sum_d ggG[d] W_de per tap */
        for (int k = 0; k < t.n; k++) {
            v[k] = u[k][0] = u[k][1] = u[k][2] = 0.0;
            for (int d = 0; d < nd && ggg != NULL; d++) {
                v[k] += ggg[d] * t.wd[k][d];
                for (int f = 0; f < nd; f++) {
                    u[k][f] += ggg[d] * t.wdd[k][d][f];
                }
            }
        }
        for (int64_t c = 0; c < j->c; c++) {
            int64_t pl = (n * j->c + c) * j->plane, o = (n * j->c + c) * j->npts + p;
            double g = j->go[o], acc = 0.0;
            for (int k = 0; k < t.n; k++) {
                double xv = j->x[pl + t.off[k]];
                double gi = j->ggx != NULL ? j->ggx[pl + t.off[k]] : 0.0;
                acc += t.w[k] * gi + v[k] * xv;
                if (j->gx != NULL) {
                    j->gx[pl + t.off[k]] += g * v[k];
                }
                for (int f = 0; f < nd; f++) {
                    gg[f] += g * (t.wd[k][f] * gi + u[k][f] * xv);
                }
            }
            if (j->ggo != NULL) {
                j->ggo[o] = acc;
            }
        }
        for (int f = 0; f < nd && j->ggrid != NULL; f++) {
            j->ggrid[q * nd + f] = gg[f];
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
    PTL_CHECK(nd == 2 || mode != GS_BICUBIC, PTL_ERR_RUNTIME,
              "grid_sampler(): bicubic interpolation only supports 4D input");
    PTL_CHECK(mode >= GS_BILINEAR && mode <= GS_BICUBIC, PTL_ERR_RUNTIME,
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
gs_job(PtlTensorImpl *x, PtlTensorImpl *grid, const PtlIValue *opts, int level, int64_t *ysz)
{
    GridJob j = {0};
    int nd = x->dim - 2;
    j.nd = nd;
    j.mode = (int)opts[0].u.i;
    j.padding = (int)opts[1].u.i;
    j.align = opts[2].u.b;
    j.level = level;
    j.c = x->sizes[1];
    j.npts = 1;
    j.plane = 1;
    ysz[0] = x->sizes[0];
    ysz[1] = x->sizes[1];
    for (int i = 0; i < nd; i++) {
        j.npts *= grid->sizes[1 + i];
        ysz[2 + i] = grid->sizes[1 + i];
    }
    /* component k indexes spatial dim nd - 1 - k */
    for (int k = 0; k < nd; k++) {
        j.size[k] = x->sizes[x->dim - 1 - k];
        j.stride[k] = j.plane;
        j.plane *= j.size[k];
    }
    return j;
}

/* Runs fn over the samples [0, n), without the GIL. */
static int
gs_per_sample(GridJob *j, int64_t n, PtlParallelFn fn)
{
    int64_t work = j->npts * (j->c + 1) + 1;
    void *tok = ptl_nogil_begin();
    int rc = ptl_parallel_for(0, n, PTL_GRAIN_SIZE / work + 1, fn, j);
    ptl_nogil_end(tok);
    return rc;
}

/* grid_sampler_{2,3}d(input, grid, interpolation_mode, padding_mode, align_corners):
 * (N, C, [D,] H, W) sampled at (N, [Do,] Ho, Wo, nd) -> (N, C, [Do,] Ho, Wo);
 * grid_sampler_{2,3}d_backward(grad_output, input, grid, ..., output_mask) -> grad_input
 * (N, C, [D,] H, W) and grad_grid (N, [Do,] Ho, Wo, nd) per output_mask. */
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
    GridJob j = gs_job(x, grid, &s[k + 2], bwd, ysz);
    if ((xc = nn_prepare(x, PTL_DTYPE_FLOAT64)) == NULL ||
        (gc = nn_prepare(grid, PTL_DTYPE_FLOAT64)) == NULL) {
        goto error;
    }
    j.x = (const double *)ptl_tensor_data(xc);
    j.grid = (const double *)ptl_tensor_data(gc);
    if (bwd) {
        const int64_t *mask = s[6].u.il.data;
        if (gs_check_like(s[0].u.t, "grad_output", nd + 2, ysz) < 0 ||
            (goc = nn_prepare(s[0].u.t, PTL_DTYPE_FLOAT64)) == NULL ||
            (mask[0] && (r[0] = nn_zeros(x->dim, x->sizes, PTL_DTYPE_FLOAT64)) == NULL) ||
            (mask[1] && (r[1] = nn_zeros(grid->dim, grid->sizes, PTL_DTYPE_FLOAT64)) == NULL)) {
            goto error;
        }
        j.go = (const double *)ptl_tensor_data(goc);
        j.gx = r[0] != NULL ? (double *)ptl_tensor_data(r[0]) : NULL;
        j.ggrid = r[1] != NULL ? (double *)ptl_tensor_data(r[1]) : NULL;
        if (gs_per_sample(&j, x->sizes[0], gs_backward_job) < 0) {
            goto error;
        }
    }
    else {
        if ((r[0] = ptl_empty(nd + 2, ysz, PTL_DTYPE_FLOAT64, x->device)) == NULL) {
            goto error;
        }
        j.y = (double *)ptl_tensor_data(r[0]);
        void *tok = ptl_nogil_begin();
        int rc = ptl_parallel_for(0, x->sizes[0] * j.npts, PTL_GRAIN_SIZE / (j.c + 1) + 1,
                                  gs_forward_job, &j);
        ptl_nogil_end(tok);
        if (rc < 0) {
            goto error;
        }
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
    GridJob j = gs_job(x, grid, &s[5], 2, ysz);
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
    j.x = (const double *)ptl_tensor_data(in[0]);
    j.grid = (const double *)ptl_tensor_data(in[1]);
    j.go = (const double *)ptl_tensor_data(in[2]);
    j.ggx = in[3] != NULL ? (const double *)ptl_tensor_data(in[3]) : NULL;
    j.ggg = in[4] != NULL ? (const double *)ptl_tensor_data(in[4]) : NULL;
    j.ggo = r[0] != NULL ? (double *)ptl_tensor_data(r[0]) : NULL;
    j.gx = r[1] != NULL ? (double *)ptl_tensor_data(r[1]) : NULL;
    j.ggrid = r[2] != NULL ? (double *)ptl_tensor_data(r[2]) : NULL;
    if (gs_per_sample(&j, x->sizes[0], gs_double_job) < 0) {
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
