/* pool_plan.h -- the per-thread work of the max and average pooling kernels, compiled by
 * nvcc for the device (pool.cu) and by gcc for the host (pool_plan.c), whose emulation runs
 * exactly these functions in the kernels' grid-stride order.  Mirrors
 * ATen/native/cuda/DilatedMaxPool2d.cu, AveragePool2d.cu and AdaptiveAveragePooling.cu in
 * behaviour.
 *
 * Note [CUDA pooling]
 * ~~~~~~~~~~~~~~~~~~~
 * The windows are pool.c's (ptl_pool_window, device_pool.h), computed per output instead
 * of read from tables.  The forwards are one thread per output element: a max walks its
 * window in (z, y, x) order keeping `v > max || isnan(v)` from -inf and the window's first
 * index, an average sums its window in that order, rounding each sum to the dtype, and
 * divides by the divisor, as the CPU kernel does: the CPU's bits.  The backwards are one
 * thread per input-gradient element, which gathers from the outputs whose windows cover
 * it (per dim a range of outputs from the stride, or the adaptive bounds, each checked
 * against its window) in output order: one writer per element, no atomics, deterministic.
 * A max's element adds the gradients of the covering outputs whose saved index is its own:
 * the CPU's scatter adds them in output order too (the same bits); an index that lies
 * outside its window (never one of the forward's) is not seen, as in PyTorch's CUDA
 * kernel.  An average's element adds gradient / divisor of each covering output; the CPU
 * kernel adds the same terms in another order (by tap), so the last bits may differ.
 * adaptive_max_pool2d is the max forward and backward with adaptive windows (to 1 x 1 too,
 * which the CPU walks as a global maximum: the same first maximum or last NaN).
 *
 * Note [CUDA max_unpool]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * max_unpool2d scatters: y is zero but y[plane][idx[o]] = x[plane][o], the CPU's loop over
 * o letting the last o win an index met twice.  One writer per output element, with no
 * race on y, takes two kernels: one thread per source element o claims its target in an
 * int64 winner table (zeroed; an integer atomicMax of o + 1, so the largest o wins in any
 * order), then one thread per output element copies its winner's value, or writes 0.  The
 * values are moved, not computed: the CPU's bits.  The backward is a gather, one thread
 * per gradient element.  A bad index is flagged in the status word (the first one in
 * row-major order wins, Note [CUDA index and sort kernels]) and raised on the host after
 * the kernels with the CPU check's message; the output is then discarded. */
#ifndef PTL_CUDA_POOL_PLAN_H
#define PTL_CUDA_POOL_PLAN_H

#include <math.h>
#include <stdint.h>

#include "../aten/native/device_pool.h"
#include "../c10/dtype.h"
#include "reduce_plan.h"

PTL_HD static inline double
ptl_pool_load(const PtlDevicePoolArgs *a, const char *p, int64_t i)
{
    return a->dtype == PTL_DTYPE_FLOAT64 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

PTL_HD static inline void
ptl_pool_store(const PtlDevicePoolArgs *a, char *p, int64_t i, double v)
{
    if (a->dtype == PTL_DTYPE_FLOAT64) {
        ((double *)p)[i] = v;
    }
    else {
        ((float *)p)[i] = (float)v;
    }
}

/* y[i] = x[j], the element's bits moved */
PTL_HD static inline void
ptl_pool_move(const PtlDevicePoolArgs *a, int64_t i, int64_t j)
{
    if (a->dtype == PTL_DTYPE_FLOAT64) {
        ((int64_t *)a->y)[i] = ((const int64_t *)a->x)[j];
    }
    else {
        ((int32_t *)a->y)[i] = ((const int32_t *)a->x)[j];
    }
}

/* v rounded to the dtype: one +, - or / of two floats done in double and rounded back is
 * float arithmetic's result */
PTL_HD static inline double
ptl_pool_round(const PtlDevicePoolArgs *a, double v)
{
    return a->dtype == PTL_DTYPE_FLOAT64 ? v : (double)(float)v;
}

PTL_HD static inline PtlPoolWin
ptl_pool_win(const PtlDevicePoolArgs *a, int dim, int64_t o)
{
    return ptl_pool_window(a->how, o, a->in[dim], a->out[dim], a->k[dim], a->s[dim], a->p[dim],
                           a->d[dim]);
}

/* an average window's divisor */
PTL_HD static inline int64_t
ptl_pool_divisor(const PtlDevicePoolArgs *a, const PtlPoolWin *w)
{
    if (a->divisor != 0) {
        return a->divisor;
    }
    return a->count_include_pad ? w[0].span * w[1].span * w[2].span
                                : w[0].count * w[1].count * w[2].count;
}

/* v as the (z, y, x) index of a row-major box of sizes sz */
PTL_HD static inline void
ptl_pool_split3(int64_t v, const int64_t *sz, int64_t *o)
{
    o[2] = v % sz[2];
    o[1] = v / sz[2] % sz[1];
    o[0] = v / (sz[2] * sz[1]);
}

/* the outputs [*lo, *hi] along dim whose windows may cover input i (each still checked
 * with ptl_pool_covers) */
PTL_HD static inline void
ptl_pool_candidates(const PtlDevicePoolArgs *a, int dim, int64_t i, int64_t *lo, int64_t *hi)
{
    const int64_t in = a->in[dim], out = a->out[dim], s = a->s[dim];
    if (a->how == PTL_POOL_WIN_ADAPTIVE) {
        *lo = i * out / in;
        *hi = ((i + 1) * out + in - 1) / in - 1;
    }
    else {
        const int64_t t = i + a->p[dim] - (a->k[dim] - 1) * a->d[dim];
        *lo = t <= 0 ? 0 : (t + s - 1) / s;
        *hi = (i + a->p[dim]) / s;
    }
    *hi = *hi < out - 1 ? *hi : out - 1;
}

/* whether output o's window along dim covers input i */
PTL_HD static inline int
ptl_pool_covers(const PtlDevicePoolArgs *a, int dim, int64_t o, int64_t i)
{
    const PtlPoolWin w = ptl_pool_win(a, dim, o);
    const int64_t dil = a->how == PTL_POOL_WIN_MAX ? a->d[dim] : 1;
    return i >= w.start && (i - w.start) % dil == 0 && (i - w.start) / dil < w.count;
}

/* the forwards: output element e (plane e / osz) */
PTL_HD static inline void
ptl_pool_forward_at(const PtlDevicePoolArgs *a, int64_t e)
{
    const int64_t osz = a->out[0] * a->out[1] * a->out[2];
    const int64_t isz = a->in[0] * a->in[1] * a->in[2], base = e / osz * isz;
    const int max = a->kind == PTL_DEVICE_POOL_MAX;
    int64_t o[3];
    PtlPoolWin w[3];
    ptl_pool_split3(e % osz, a->out, o);
    for (int i = 0; i < 3; i++) {
        w[i] = ptl_pool_win(a, i, o[i]);
    }
    const int64_t dz = max ? a->d[0] : 1, dy = max ? a->d[1] : 1, dx = max ? a->d[2] : 1;
    double m = max ? -INFINITY : 0;
    int64_t mi = (w[0].start * a->in[1] + w[1].start) * a->in[2] + w[2].start;
    for (int64_t z = 0; z < w[0].count; z++) {
        for (int64_t y = 0; y < w[1].count; y++) {
            const int64_t row = ((w[0].start + z * dz) * a->in[1] + w[1].start + y * dy) *
                                a->in[2] + w[2].start;
            for (int64_t x = 0; x < w[2].count; x++) {
                const double v = ptl_pool_load(a, a->x, base + row + x * dx);
                if (!max) {
                    m = ptl_pool_round(a, m + v);
                }
                else if (v > m || v != v) {
                    m = v;
                    mi = row + x * dx;
                }
            }
        }
    }
    if (max) {
        a->idx[e] = mi;
    }
    else {
        const int64_t div = ptl_pool_divisor(a, w);
        m = div != 0 ? ptl_pool_round(a, m / ptl_pool_round(a, (double)div)) : NAN;
    }
    ptl_pool_store(a, a->y, e, m);
}

/* the backwards: input-gradient element e (plane e / isz), from the covering outputs */
PTL_HD static inline void
ptl_pool_backward_at(const PtlDevicePoolArgs *a, int64_t e)
{
    const int64_t osz = a->out[0] * a->out[1] * a->out[2];
    const int64_t isz = a->in[0] * a->in[1] * a->in[2], pl = e / isz, k = e % isz;
    int64_t i[3], lo[3], hi[3];
    double acc = 0;
    ptl_pool_split3(k, a->in, i);
    for (int d = 0; d < 3; d++) {
        ptl_pool_candidates(a, d, i[d], &lo[d], &hi[d]);
    }
    for (int64_t oz = lo[0]; oz <= hi[0]; oz++) {
        if (!ptl_pool_covers(a, 0, oz, i[0])) {
            continue;
        }
        for (int64_t oy = lo[1]; oy <= hi[1]; oy++) {
            if (!ptl_pool_covers(a, 1, oy, i[1])) {
                continue;
            }
            for (int64_t ox = lo[2]; ox <= hi[2]; ox++) {
                const int64_t o = pl * osz + (oz * a->out[1] + oy) * a->out[2] + ox;
                if (!ptl_pool_covers(a, 2, ox, i[2])) {
                    continue;
                }
                if (a->kind == PTL_DEVICE_POOL_MAX_BACKWARD) {
                    if (a->idx[o] == k) {
                        acc = ptl_pool_round(a, acc + ptl_pool_load(a, a->x, o));
                    }
                    continue;
                }
                const PtlPoolWin w[3] = {ptl_pool_win(a, 0, oz), ptl_pool_win(a, 1, oy),
                                         ptl_pool_win(a, 2, ox)};
                const double div = ptl_pool_round(a, (double)ptl_pool_divisor(a, w));
                acc = ptl_pool_round(a, acc + ptl_pool_round(a, ptl_pool_load(a, a->x, o) / div));
            }
        }
    }
    ptl_pool_store(a, a->y, e, acc);
}

/* max_unpool's kernels (Note [CUDA max_unpool]); ws[0] the status word, ws + 1 the winner
 * table, planes x in. */

/* index idx[e] of source element e, or -1 (flagged) when it lies outside the plane */
PTL_HD static inline int64_t
ptl_unpool_index(const PtlDevicePoolArgs *a, int64_t e, int64_t *ws)
{
    const int64_t osz = a->out[0] * a->out[1] * a->out[2];
    const int64_t isz = a->in[0] * a->in[1] * a->in[2], k = a->idx[e];
    if ((uint64_t)k >= (uint64_t)isz) {
        ptl_cuda_flag_first(ws, a->planes * osz, e);
        return -1;
    }
    return e / osz * isz + k;
}

/* the forward's first kernel: source element e claims its target */
PTL_HD static inline void
ptl_unpool_claim_at(const PtlDevicePoolArgs *a, int64_t e, int64_t *ws)
{
    const int64_t t = ptl_unpool_index(a, e, ws);
    if (t >= 0) {
        ptl_cuda_atomic_max(ws + 1 + t, e + 1);
    }
}

/* the forward's second kernel: output element e, its winner's value or 0 */
PTL_HD static inline void
ptl_unpool_fill_at(const PtlDevicePoolArgs *a, int64_t e, int64_t *ws)
{
    const int64_t w = ws[1 + e];
    if (w > 0) {
        ptl_pool_move(a, e, w - 1);
    }
    else {
        ptl_pool_store(a, a->y, e, 0.0);
    }
}

/* the backward: gradient element e from the output gradient at its index */
PTL_HD static inline void
ptl_unpool_gather_at(const PtlDevicePoolArgs *a, int64_t e, int64_t *ws)
{
    const int64_t t = ptl_unpool_index(a, e, ws);
    if (t >= 0) {
        ptl_pool_move(a, e, t);
    }
}

#endif
