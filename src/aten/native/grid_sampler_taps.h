/* grid_sampler_taps.h -- the per-point arithmetic of grid_sampler_{2,3}d and its backward
 * (Note [Grid sampler taps] in grid_sampler.c): a grid point's taps and weights, and one grid
 * point's forward and backward over every channel.  Compiled by gcc for grid_sampler.c's CPU
 * kernel and by nvcc for src/cuda/grid_sampler.cu (one source, two compilers, as
 * scalar_math.h), so the device samples with the CPU's formulas and the CPU tests run them.
 * Mirrors ATen/native/GridSampler.h. */
#ifndef PTL_ATEN_NATIVE_GRID_SAMPLER_TAPS_H
#define PTL_ATEN_NATIVE_GRID_SAMPLER_TAPS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "../../c10/macros.h"

enum { PTL_GS_BILINEAR = 0, PTL_GS_NEAREST = 1, PTL_GS_BICUBIC = 2 };
enum { PTL_GS_ZEROS = 0, PTL_GS_BORDER = 1, PTL_GS_REFLECTION = 2 };

#define PTL_GS_MAX_TAPS 16     /* 4 x 4 (bicubic, 2-D); trilinear has 8 */
#define PTL_GS_CUBIC_A (-0.75)

/* One sampling job over n samples, contiguous float64: input x (n, c, [D,] H, W), grid
 * (n, [Do,] Ho, Wo, nd).  Forward: y (n, c, [Do,] Ho, Wo).  Backward: from go (y's shape),
 * gx (x's shape, zeroed by the caller, accumulated into) and ggrid (grid's shape), each
 * NULL when not wanted.  Component k of a grid point indexes spatial dim nd - 1 - k, of
 * size size[k] and element stride stride[k] within a plane of `plane` elements. */
typedef struct PtlGridSampler {
    int32_t nd, mode, padding, align;
    int64_t n, c, npts, plane, size[3], stride[3];
    const double *x, *grid, *go;
    double *y, *gx, *ggrid;
} PtlGridSampler;

/* The taps of one grid component along its dim. */
typedef struct PtlGsTaps1 {
    int n;
    double idx[4];      /* in-bounds index, or -1 */
    double w[4], w1[4], w2[4];
    double s;           /* d(pixel coordinate) / d(grid value) */
} PtlGsTaps1;

/* The valid taps of one grid point: offsets into an input plane, weights and (level >= 1)
 * the weights' derivatives by each grid component. */
typedef struct PtlGsTaps {
    int n;
    int64_t off[PTL_GS_MAX_TAPS];
    double w[PTL_GS_MAX_TAPS];
    double wd[PTL_GS_MAX_TAPS][3];
} PtlGsTaps;

/* Pixel coordinate in [0, size - 1]; *d is zeroed outside and on the borders (PyTorch
 * counts the borders as outside for the gradient). */
PTL_HD static inline double
ptl_gs_clip(double x, int64_t size, double *d)
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
PTL_HD static inline double
ptl_gs_reflect(double x, double lo2, double hi2, double *d)
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
    /* below two spans (most points) fmod(x, span) is x or x - span, both exact: the same
     * values without the two library calls */
    double flips = floor(x / span), extra;
    int even;
    if (flips < 2.0) {
        extra = x >= span ? x - span : x;
        even = flips == 0.0;
    }
    else {
        extra = fmod(x, span);
        even = fmod(flips, 2.0) == 0.0;
    }
    if (even) {
        *d *= sign;
        return extra + lo;
    }
    *d *= -sign;
    return span - extra + lo;
}

/* The padding mode applied to pixel coordinate x, with *d multiplied by its slope. */
PTL_HD static inline double
ptl_gs_pad(double x, int64_t size, int padding, int align, double *d)
{
    if (padding == PTL_GS_REFLECTION) {
        x = align ? ptl_gs_reflect(x, 0.0, 2.0 * (double)(size - 1), d)
                  : ptl_gs_reflect(x, -1.0, 2.0 * (double)size - 1.0, d);
    }
    return padding == PTL_GS_ZEROS ? x : ptl_gs_clip(x, size, d);
}

/* An integer coordinate as a tap index, -1 outside [0, size). */
PTL_HD static inline double
ptl_gs_index(double i, int64_t size)
{
    return i >= 0 && i < (double)size ? i : -1.0;
}

/* Cubic convolution weights (A = -0.75) of the 4 taps at fractional offset t, with their
 * first and second derivatives by t. */
PTL_HD static inline void
ptl_gs_cubic(double t, double *w, double *w1, double *w2)
{
    const double a = PTL_GS_CUBIC_A;
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
PTL_HD static inline void
ptl_gs_taps1(double g, int64_t size, int mode, int padding, int align, PtlGsTaps1 *t)
{
    double s = align ? (double)(size - 1) / 2 : (double)size / 2;
    double x = align ? (g + 1) / 2 * (double)(size - 1) : ((g + 1) * (double)size - 1) / 2;
    if (mode != PTL_GS_BICUBIC) {
        x = ptl_gs_pad(x, size, padding, align, &s);
    }
    t->s = s;
    if (mode == PTL_GS_NEAREST) {
        t->n = 1;
        t->idx[0] = ptl_gs_index(nearbyint(x), size);
        t->w[0] = 1.0;
        t->w1[0] = t->w2[0] = 0.0;
        return;
    }
    double x0 = floor(x), f = x - x0;
    if (mode == PTL_GS_BILINEAR) {
        t->n = 2;
        t->idx[0] = ptl_gs_index(x0, size);
        t->idx[1] = ptl_gs_index(x0 + 1, size);
        t->w[0] = 1 - f;
        t->w[1] = f;
        t->w1[0] = -1.0;
        t->w1[1] = 1.0;
        t->w2[0] = t->w2[1] = 0.0;
        return;
    }
    t->n = 4;
    ptl_gs_cubic(f, t->w, t->w1, t->w2);
    for (int k = 0; k < 4; k++) {
        double unused = 0.0, i = ptl_gs_pad(x0 - 1 + k, size, padding, align, &unused);
        t->idx[k] = ptl_gs_index(trunc(i), size);
    }
}

/* Note [Grid sampler non-finite coordinates]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A grid value that is nan or +-inf has a nan fractional part, so every weight of that dim
 * is nan.  Border and reflection padding move the coordinate or the taps inside (nan clips to
 * 0 as in PyTorch's 2-d kernel), and nearest has no weights, so only bilinear and bicubic
 * with zeros padding are special: all of the point's taps are outside.  PyTorch's 2-d CPU
 * kernel still multiplies the zeros those taps read by their nan weights, so the output is
 * nan, the taps take no input gradient, and grid component d's gradient, sum_taps W_d 0 go,
 * is nan where W_d is (bicubic, or another component is not finite) and 0 go otherwise.  We
 * give those values in 2-d and in 3-d (PyTorch's 3-d CPU kernel and its CUDA kernels move
 * such a coordinate to -100 and sample zeros: a nan in, a finite number out, silently).
 * A finite grid value whose pixel coordinate overflows (near 1e308) samples zeros, as
 * PyTorch's (its unnormalizing, g s + o, stays finite there).  ptl_gs_nonfinite finds the
 * points; the forward gives each one tap at offset 0 with weight nan (nan whatever the input
 * holds there), the backward writes the grid gradient with ptl_gs_nonfinite_grad. */

/* Bit k set where grid point g's component k is not finite and the point's taps are all
 * outside for it (zeros padding, bilinear or bicubic). */
PTL_HD static inline int
ptl_gs_nonfinite(const PtlGridSampler *j, const double *g)
{
    int bad = 0;
    for (int k = 0; k < j->nd && j->padding == PTL_GS_ZEROS && j->mode != PTL_GS_NEAREST; k++) {
        bad |= isfinite(g[k]) ? 0 : 1 << k;
    }
    return bad;
}

/* The grid gradient gg (j->nd components) of a point with non-finite components `bad`, zero
 * being sum_c 0 go (0, or nan where a go is not finite). */
PTL_HD static inline void
ptl_gs_nonfinite_grad(const PtlGridSampler *j, int bad, double zero, double *gg)
{
    for (int d = 0; d < j->nd; d++) {
        gg[d] = j->mode == PTL_GS_BICUBIC || (bad & ~(1 << d)) ? (double)NAN : zero;
    }
}

/* The valid taps of grid point g (j->nd components): weights, with level >= 1 their first
 * derivatives, and where wdd is not NULL their second derivatives wdd[tap][d][e].  In a
 * forward (j->y set) a point with a non-finite coordinate gets its nan tap (Note [Grid
 * sampler non-finite coordinates]). */
PTL_HD static inline void
ptl_gs_point(const PtlGridSampler *j, const double *g, int level, PtlGsTaps *t,
             double (*wdd)[3][3])
{
    PtlGsTaps1 a[3];
    int total = 1, nd = j->nd;
    for (int k = 0; k < nd; k++) {
        ptl_gs_taps1(g[k], j->size[k], j->mode, j->padding, j->align, &a[k]);
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
        for (int d = 0; d < nd && level >= 1; d++) {
            t->wd[m][d] = 1.0;
            for (int k = 0; k < nd; k++) {
                t->wd[m][d] *= f[k][k == d];
            }
            for (int e = 0; e < nd && wdd != NULL; e++) {
                wdd[m][d][e] = 1.0;
                for (int k = 0; k < nd; k++) {
                    wdd[m][d][e] *= f[k][(k == d) + (k == e)];
                }
            }
        }
    }
    if (t->n == 0 && j->y != NULL && ptl_gs_nonfinite(j, g)) {
        t->n = 1;
        t->off[0] = 0;
        t->w[0] = (double)NAN;
    }
}

/* *p += v: one atomic on the device (grid points of a sample share input taps), a plain
 * add on the host, where each thread owns whole samples. */
PTL_HD static inline void
ptl_gs_add(double *p, double v)
{
#ifdef __CUDA_ARCH__
    atomicAdd(p, v);
#else
    *p += v;
#endif
}

/* The forward of grid point q of n npts: y at q over every channel. */
PTL_HD static inline void
ptl_gs_forward_at(const PtlGridSampler *j, int64_t q)
{
    PtlGsTaps t;
    int64_t n = q / j->npts, p = q % j->npts;
    ptl_gs_point(j, j->grid + q * j->nd, 0, &t, NULL);
    for (int64_t c = 0; c < j->c; c++) {
        const double *xp = j->x + (n * j->c + c) * j->plane;
        double acc = 0.0;
        for (int k = 0; k < t.n; k++) {
            acc += t.w[k] * xp[t.off[k]];
        }
        j->y[(n * j->c + c) * j->npts + p] = acc;
    }
}

/* The backward of grid point q: its taps' terms of gx and its ggrid row. */
PTL_HD static inline void
ptl_gs_backward_at(const PtlGridSampler *j, int64_t q)
{
    PtlGsTaps t;
    int64_t n = q / j->npts, p = q % j->npts;
    double gg[3] = {0.0, 0.0, 0.0};
    ptl_gs_point(j, j->grid + q * j->nd, 1, &t, NULL);
    for (int64_t c = 0; c < j->c; c++) {
        int64_t pl = (n * j->c + c) * j->plane;
        double g = j->go[(n * j->c + c) * j->npts + p];
        for (int k = 0; k < t.n; k++) {
            if (j->gx != NULL) {
                ptl_gs_add(&j->gx[pl + t.off[k]], t.w[k] * g);
            }
            for (int d = 0; d < j->nd; d++) {
                gg[d] += t.wd[k][d] * j->x[pl + t.off[k]] * g;
            }
        }
    }
    int bad = t.n == 0 && j->ggrid != NULL ? ptl_gs_nonfinite(j, j->grid + q * j->nd) : 0;
    if (bad) {
        double zero = 0.0;
        for (int64_t c = 0; c < j->c; c++) {
            zero += 0.0 * j->go[(n * j->c + c) * j->npts + p];
        }
        ptl_gs_nonfinite_grad(j, bad, zero, gg);
    }
    for (int d = 0; d < j->nd && j->ggrid != NULL; d++) {
        j->ggrid[q * j->nd + d] = gg[d];
    }
}

#endif
