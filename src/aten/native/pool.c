/* pool.c -- max, average and adaptive pooling (2-D and 3-D; 1-D goes through 2-D in
 * Python as in PyTorch), their backwards, and max_unpool2d.  Mirrors
 * ATen/native/DilatedMaxPool2d.cpp, DilatedMaxPool3d.cpp, AveragePool2d.cpp,
 * AveragePool3d.cpp, AdaptiveAveragePooling.cpp, AdaptiveMaxPooling2d.cpp / 3d.cpp,
 * MaxUnpooling.cpp and the shape checks of Pool.h.
 *
 * Note [Pooling windows]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * Every pooling op is described by per-dimension window tables (Win): for output position
 * o along one spatial dim, the first valid input index, how many valid inputs the window
 * covers (stepping by the dilation) and the span that count_include_pad divides by.  Max,
 * average and adaptive pooling only differ in how the tables are built; one max kernel and
 * one average kernel (and their scatter backwards) run over the product of three tables.
 * Max pooling records the flat spatial index (d * H + h) * W + w of the winner, NaN wins
 * (PyTorch's `val > max || isnan(val)`).  Planes (N * C) run in parallel.  On a CUDA
 * device (and in the tests' emulation of its kernels) the same windows (ptl_pool_window)
 * run pool.cu's kernels instead (pool_device.c; Note [CUDA pooling] in
 * src/cuda/pool_plan.h). */
#include <math.h>
#include <stdlib.h>

#include "../../c10/parallel.h"
#include "pool_impl.h"
#include "reduce_kernels.h"

void
pool_plan_free(PoolPlan *p)
{
    for (int d = 0; d < NN_SPATIAL; d++) {
        free(p->w[d]);
        p->w[d] = NULL;
    }
}

int
pool_plan_alloc(PoolPlan *p)
{
    for (int d = 0; d < NN_SPATIAL; d++) {
        int64_t n = p->out[d] > 0 ? p->out[d] : 1;
        p->w[d] = (uint64_t)n <= SIZE_MAX / sizeof(Win) ? malloc(sizeof(Win) * (size_t)n) : NULL;
        if (p->w[d] == NULL) {
            pool_plan_free(p);
            return ptl_error_set(PTL_ERR_MEMORY, "can't allocate pooling windows");
        }
    }
    return 0;
}

/* Finds the interior outputs along dim d (height or width): those whose window holds all k
 * inputs, starting at o * s - pad.  Adaptive plans pass k = 0 (no interior; the widest
 * window is still recorded) unless the output size divides the input's. */
static void
plan_interior(PoolPlan *p, int d, int64_t k, int64_t s, int64_t pad)
{
    Interior *in = d == NN_SPATIAL - 1 ? &p->ix : &p->iy;
    *in = (Interior){0, 0, 0, s, pad};
    for (int64_t o = 0; o < p->out[d]; o++) {
        const Win *w = &p->w[d][o];
        in->k = w->count > in->k ? w->count : in->k;
        if (k > 0 && w->count == k && w->span == k && w->start == o * s - pad) {
            in->lo = in->hi == 0 ? o : in->lo;
            in->hi = o + 1;
        }
    }
}

void
pool_plan_strided(PoolPlan *p, int d, int64_t k, int64_t s, int64_t pad, int avg)
{
    p->how = avg ? PTL_POOL_WIN_AVG : PTL_POOL_WIN_MAX;
    p->k[d] = k;
    p->s[d] = s;
    p->pad[d] = pad;
    for (int64_t o = 0; o < p->out[d]; o++) {
        p->w[d][o] = ptl_pool_window(p->how, o, p->in[d], p->out[d], k, s, pad, p->dil[d]);
    }
    if (d > 0) {
        plan_interior(p, d, k, s, pad);
    }
}

/* Windows of an adaptive pooling along dim d: [floor(o * in / out), ceil((o + 1) * in / out)). */
static void
plan_adaptive(PoolPlan *p, int d)
{
    p->dil[d] = 1;
    p->how = PTL_POOL_WIN_ADAPTIVE;
    for (int64_t o = 0; o < p->out[d]; o++) {
        p->w[d][o] = ptl_pool_window(p->how, o, p->in[d], p->out[d], 0, 1, 0, 1);
    }
    if (d > 0) {
        /* an output size that divides the input's gives every window k = in / out inputs
         * from o * k: the interior rows of a k x k pooling of stride k */
        int64_t k = p->out[d] > 0 && p->in[d] % p->out[d] == 0 ? p->in[d] / p->out[d] : 0;
        plan_interior(p, d, k, k > 0 ? k : 1, 0);
    }
}

/* ---- typed kernels ---- */

/* Note [Pooling rows]
 * ~~~~~~~~~~~~~~~~~~~~
 * The kernels walk one output row (fixed plane, depth and height) at a time.  For each input
 * row a window covers and each column q of the window they update the whole output row:
 * the interior outputs [ix.lo, ix.hi) read x[row + ox * step - pad + q * dil] with one strided
 * loop that gcc vectorizes over the output width (loops below, compiled for AVX2 and the
 * baseline: Note [Loop clones]), the few border outputs go through their window tables.
 * Each output still sees its candidates in the window's row-major order, so maxima, their
 * indices (first maximum, last NaN) and sums are those of a window-by-window walk.  The
 * stride is a constant in the common cases (1, 2) so the loads need no gather.  When every
 * output of the interior rows [iy.lo, iy.hi) is interior (no padding), max pooling takes
 * those rows in one call per window tap: the CNN's 13- and 5-wide rows were mostly call and
 * loop overhead one at a time. */
#define DEFINE_MAX_ROW(T, SUF)                                                               \
    /* m[o] = x[o * s] (flat index base + o * s) where larger or NaN, for o < n */           \
    static inline void                                                                       \
    max_row_s_##SUF(const T *restrict x, int64_t s, int64_t base, T *restrict m,             \
                    int64_t *restrict mi, int64_t n)                                         \
    {                                                                                        \
        for (int64_t o = 0; o < n; o++) {                                                    \
            T v = x[o * s];                                                                  \
            int take = v > m[o] || v != v;                                                   \
            m[o] = take ? v : m[o];                                                          \
            mi[o] = take ? base + o * s : mi[o];                                             \
        }                                                                                    \
    }                                                                                        \
    /* max_row_s over `rows` output rows of n (input rows xrs elements apart) */             \
    PTL_LOOP_CLONES static void                                                              \
    max_row_##SUF(const T *x, int64_t s, int64_t xrs, int64_t base, T *m, int64_t *mi,       \
                  int64_t n, int64_t rows)                                                   \
    {                                                                                        \
        for (int64_t r = 0; r < rows; r++, x += xrs, base += xrs, m += n, mi += n) {         \
            if (s == 2) {                                                                    \
                max_row_s_##SUF(x, 2, base, m, mi, n);                                       \
            }                                                                                \
            else if (s == 1) {                                                               \
                max_row_s_##SUF(x, 1, base, m, mi, n);                                       \
            }                                                                                \
            else {                                                                           \
                max_row_s_##SUF(x, s, base, m, mi, n);                                       \
            }                                                                                \
        }                                                                                    \
    }
DEFINE_MAX_ROW(float, f4)
DEFINE_MAX_ROW(double, f8)
#undef DEFINE_MAX_ROW

#define DEFINE_SUM_ROW(T, SUF)                                                               \
    /* acc[o] += x[o * s] (forward) or x[o * s] += acc[o] / div (backward), for o < n */     \
    static inline void                                                                       \
    sum_row_s_##SUF(T *restrict x, int64_t s, T *restrict acc, T div, int64_t n, int bwd)    \
    {                                                                                        \
        if (bwd) {                                                                           \
            for (int64_t o = 0; o < n; o++) {                                                \
                x[o * s] += acc[o] / div;                                                    \
            }                                                                                \
        }                                                                                    \
        else {                                                                               \
            for (int64_t o = 0; o < n; o++) {                                                \
                acc[o] += x[o * s];                                                          \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
    PTL_LOOP_CLONES static void                                                              \
    sum_row_##SUF(T *x, int64_t s, T *acc, T div, int64_t n, int bwd)                        \
    {                                                                                        \
        if (s == 2) {                                                                        \
            sum_row_s_##SUF(x, 2, acc, div, n, bwd);                                         \
        }                                                                                    \
        else if (s == 1) {                                                                   \
            sum_row_s_##SUF(x, 1, acc, div, n, bwd);                                         \
        }                                                                                    \
        else {                                                                               \
            sum_row_s_##SUF(x, s, acc, div, n, bwd);                                         \
        }                                                                                    \
    }

DEFINE_SUM_ROW(float, f4)
DEFINE_SUM_ROW(double, f8)
#undef DEFINE_SUM_ROW

/* The kernels below are plain functions over byte pointers, f8 picking float64 over
 * float32 (nn_load, nn_store, nn_round); the typed row loops above do the vectorized work. */
static inline void
max_row(int f8, const char *x, int64_t s, int64_t xrs, int64_t base, char *m, int64_t *mi,
        int64_t n, int64_t rows)
{
    if (f8) {
        max_row_f8((const double *)x, s, xrs, base, (double *)m, mi, n, rows);
    }
    else {
        max_row_f4((const float *)x, s, xrs, base, (float *)m, mi, n, rows);
    }
}

/* column q of the windows over input row x[row..]: updates the output row m, mi */
static inline void
max_cols(const PoolPlan *p, int f8, const char *x, int64_t row, int64_t q, char *m,
         int64_t *mi)
{
    const int64_t es = f8 ? 8 : 4, lo = p->ix.lo, hi = p->ix.hi;
    for (int64_t ox = 0; ox < p->out[2]; ox++) {
        const Win *w = &p->w[2][ox];
        if (ox == lo && hi > lo) {
            int64_t i = row + lo * p->ix.step - p->ix.pad + q * p->dil[2];
            max_row(f8, x + i * es, p->ix.step, 0, i, m + lo * es, mi + lo, hi - lo, 1);
            ox = hi - 1;
        }
        else if (q < w->count) {
            int64_t i = row + w->start + q * p->dil[2];
            double v = nn_load(f8, x, i);
            if (v > nn_load(f8, m, ox) || isnan(v)) {
                nn_store(f8, m, ox, v);
                mi[ox] = i;
            }
        }
    }
}

/* Note [2x2 max pooling]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * max_pool2d(2) -- 2x2 windows at stride 2, no padding or dilation, every window inside
 * the image -- is the pooling of most CNNs, and the walk of Note [Pooling rows] spends
 * four read-modify-write passes of the output and its int64 indices on it.  max_2x2 takes
 * each output's four candidates straight from its two input rows instead, in the window's
 * row-major order with the same rule (`v > max || isnan(v)`, the first candidate taken as
 * it stands: -inf there leaves the window's start as the index, as the walk does), so the
 * maxima and indices are the walk's, bit for bit; gcc vectorizes the loop over a row. */
#define DEFINE_MAX_2X2(T, SUF)                                                               \
    PTL_LOOP_CLONES static void                                                              \
    max_2x2_##SUF(const T *restrict x, int64_t iw, T *restrict m, int64_t *restrict mi,      \
                  int64_t oh, int64_t ow)                                                    \
    {                                                                                        \
        for (int64_t oy = 0; oy < oh; oy++, m += ow, mi += ow) {                             \
            const T *r0 = x + 2 * oy * iw, *r1 = r0 + iw;                                    \
            const int64_t base = 2 * oy * iw;                                                \
            for (int64_t ox = 0; ox < ow; ox++) {                                            \
                T best = r0[2 * ox], v = r0[2 * ox + 1];                                     \
                int64_t k = 0;                                                               \
                int take = v > best || v != v;                                               \
                best = take ? v : best;                                                      \
                k = take ? 1 : k;                                                            \
                v = r1[2 * ox];                                                              \
                take = v > best || v != v;                                                   \
                best = take ? v : best;                                                      \
                k = take ? iw : k;                                                           \
                v = r1[2 * ox + 1];                                                          \
                take = v > best || v != v;                                                   \
                best = take ? v : best;                                                      \
                k = take ? iw + 1 : k;                                                       \
                m[ox] = best;                                                                \
                mi[ox] = base + 2 * ox + k;                                                  \
            }                                                                                \
        }                                                                                    \
    }
DEFINE_MAX_2X2(float, f4)
DEFINE_MAX_2X2(double, f8)
#undef DEFINE_MAX_2X2

/* Note [2x2 max pooling]'s case: a 2-D plan of 2x2 windows at stride 2, all interior */
static int
is_max_2x2(const PoolPlan *p)
{
    return p->in[0] == 1 && p->out[0] == 1 && p->iy.k == 2 && p->ix.k == 2 &&
           p->iy.step == 2 && p->ix.step == 2 && p->iy.pad == 0 && p->ix.pad == 0 &&
           p->dil[1] == 1 && p->dil[2] == 1 && p->iy.lo == 0 && p->iy.hi == p->out[1] &&
           p->ix.lo == 0 && p->ix.hi == p->out[2];
}

/* max pooling of planes [b, e): the interior rows go all at once when all their outputs
 * are interior, the others output row by output row (Note [Pooling rows]) */
static inline int
max_fwd(const PoolJob *j, int f8, int64_t b, int64_t e)
{
    const PoolPlan *p = j->p;
    const int64_t es = f8 ? 8 : 4;
    int64_t isz = p->in[0] * p->in[1] * p->in[2], ih = p->in[1], iw = p->in[2];
    int64_t osz = p->out[0] * p->out[1] * p->out[2], oh = p->out[1], ow = p->out[2];
    int whole = p->ix.lo == 0 && p->ix.hi == ow;
    if (is_max_2x2(p)) {
        for (int64_t pl = b; pl < e; pl++) {
            if (f8) {
                max_2x2_f8((const double *)j->x + pl * isz, iw, (double *)j->y + pl * osz,
                           j->idx + pl * osz, oh, ow);
            }
            else {
                max_2x2_f4((const float *)j->x + pl * isz, iw, (float *)j->y + pl * osz,
                           j->idx + pl * osz, oh, ow);
            }
        }
        return 0;
    }
    int64_t ylo = whole ? p->iy.lo : 0, yhi = whole ? p->iy.hi : 0;
    for (int64_t pl = b; pl < e; pl++) {
        const char *x = j->x + pl * isz * es;
        for (int64_t oz = 0; oz < p->out[0]; oz++) {
            const Win *wz = &p->w[0][oz];
            char *m = j->y + (pl * osz + oz * oh * ow) * es;
            int64_t *mi = j->idx + pl * osz + oz * oh * ow;
            for (int64_t oy = 0; oy < oh; oy++) {
                int64_t first = (wz->start * ih + p->w[1][oy].start) * iw;
                for (int64_t ox = 0; ox < ow; ox++) {
                    nn_store(f8, m, oy * ow + ox, -INFINITY);
                    mi[oy * ow + ox] = first + p->w[2][ox].start;
                }
            }
            for (int64_t a = 0; a < wz->count && yhi > ylo; a++) {
                int64_t iz = wz->start + a * p->dil[0];
                for (int64_t c = 0; c < p->iy.k; c++) {
                    int64_t iy = ylo * p->iy.step - p->iy.pad + c * p->dil[1];
                    for (int64_t q = 0; q < p->ix.k; q++) {
                        int64_t i = (iz * ih + iy) * iw - p->ix.pad + q * p->dil[2];
                        max_row(f8, x + i * es, p->ix.step, p->iy.step * iw, i,
                                m + ylo * ow * es, mi + ylo * ow, ow, yhi - ylo);
                    }
                }
            }
            for (int64_t oy = 0; oy < oh; oy++) {
                const Win *wy = &p->w[1][oy];
                for (int64_t a = 0; a < wz->count && (oy < ylo || oy >= yhi); a++) {
                    int64_t iz = wz->start + a * p->dil[0];
                    for (int64_t c = 0; c < wy->count; c++) {
                        int64_t row = (iz * ih + wy->start + c * p->dil[1]) * iw;
                        for (int64_t q = 0; q < p->ix.k; q++) {
                            max_cols(p, f8, x, row, q, m + oy * ow * es, mi + oy * ow);
                        }
                    }
                }
            }
        }
    }
    return 0;
}

/* Moves values by the saved indices, plane by plane: scatter (y[plane][idx[o]] =
 * x[plane][o]: max_unpool2d's forward) or gather (y[plane][o] = x[plane][idx[o]]: its
 * backward). */
static inline int
move_by_index(const PoolJob *j, int f8, int64_t b, int64_t e, int scatter)
{
    const PoolPlan *p = j->p;
    const int64_t es = f8 ? 8 : 4;
    int64_t isz = p->in[0] * p->in[1] * p->in[2];
    int64_t osz = p->out[0] * p->out[1] * p->out[2];
    int64_t xsz = scatter ? osz : isz, ysz = scatter ? isz : osz;
    for (int64_t pl = b; pl < e; pl++) {
        const char *x = j->x + pl * xsz * es;
        char *y = j->y + pl * ysz * es;
        const int64_t *ix = j->cidx + pl * osz;
        for (int64_t o = 0; o < osz; o++) {
            if (scatter) {
                nn_store(f8, y, ix[o], nn_load(f8, x, o));
            }
            else {
                nn_store(f8, y, o, nn_load(f8, x, ix[o]));
            }
        }
    }
    return 0;
}

/* PyTorch's error for a max pooling index k outside the input plane of isz elements */
static int
index_error(int64_t k, int64_t isz)
{
    return ptl_error_set(PTL_ERR_INDEX, "index %lld is out of bounds for an input plane of %lld "
                         "elements", (long long)k, (long long)isz);
}

/* Note [Max pooling backward]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * grad_input is grad_output scattered through the indices, plane by plane: scatter_add zeroes
 * one plane of grad_input (a few KB, which stay in L1 for the adds) and adds into it in
 * output order, so overlapping windows sum in the order they always did, checking each index
 * as it uses it.  Zeroing all of grad_input first and checking every index in a pass of its
 * own read and wrote everything twice.  Writing each element of a 2x2 stride-2 pooling's
 * grad_input once, with selects and no zeroing, was slower (docs/decisions.md). */
#define DEFINE_SCATTER(T, SUF)                                                               \
    static int                                                                               \
    scatter_add_##SUF(const T *restrict g, const int64_t *restrict ix, T *restrict gi,       \
                      int64_t osz, int64_t isz)                                              \
    {                                                                                        \
        memset(gi, 0, (size_t)isz * sizeof(T));                                              \
        for (int64_t o = 0; o < osz; o++) {                                                  \
            const int64_t k = ix[o];                                                         \
            if (k < 0 || k >= isz) {                                                         \
                return index_error(k, isz);                                                  \
            }                                                                                \
            gi[k] += g[o];                                                                   \
        }                                                                                    \
        return 0;                                                                            \
    }                                                                                        \
    /* grad_input's planes [b, e) from grad_output's (j->x) through the indices */           \
    static int                                                                               \
    max_bwd_##SUF(void *ctx, int64_t b, int64_t e)                                           \
    {                                                                                        \
        const PoolJob *j = ctx;                                                              \
        const PoolPlan *p = j->p;                                                            \
        const int64_t isz = p->in[0] * p->in[1] * p->in[2];                                  \
        const int64_t osz = p->out[0] * p->out[1] * p->out[2];                               \
        for (int64_t pl = b; pl < e; pl++) {                                                 \
            const T *g = (const T *)j->x + pl * osz;                                         \
            const int64_t *ix = j->cidx + pl * osz;                                          \
            T *gi = (T *)j->y + pl * isz;                                                    \
            if (scatter_add_##SUF(g, ix, gi, osz, isz) < 0) {                                \
                return -1;                                                                   \
            }                                                                                \
        }                                                                                    \
        return 0;                                                                            \
    }
DEFINE_SCATTER(float, f4)
DEFINE_SCATTER(double, f8)
#undef DEFINE_SCATTER

static inline void
sum_row(int f8, char *x, int64_t s, char *acc, double div, int64_t n, int bwd)
{
    if (f8) {
        sum_row_f8((double *)x, s, (double *)acc, div, n, bwd);
    }
    else {
        sum_row_f4((float *)x, s, (float *)acc, (float)div, n, bwd);
    }
}

/* average pooling of one plane: forward (bwd = 0) or its scatter backward (bwd = 1), by
 * output row */
static inline void
avg_plane(const PoolJob *j, int f8, int64_t pl, int bwd)
{
    const PoolPlan *p = j->p;
    const int64_t es = f8 ? 8 : 4;
    int64_t isz = p->in[0] * p->in[1] * p->in[2];
    int64_t osz = p->out[0] * p->out[1] * p->out[2];
    int64_t ow = p->out[2], lo = p->ix.lo, hi = p->ix.hi;
    const Win *wx = p->w[2];
    /* the image plane is read (forward) or accumulated into (backward) */
    char *img = (bwd ? j->y : (char *)j->x) + pl * isz * es;
    char *orow = (bwd ? (char *)j->x : j->y) + pl * osz * es;
    for (int64_t oz = 0; oz < p->out[0]; oz++) {
        const Win *wz = &p->w[0][oz];
        for (int64_t oy = 0; oy < p->out[1]; oy++) {
            const Win *wy = &p->w[1][oy];
            /* forward: the output row accumulates; backward: the gradient row */
            char *acc = orow + (oz * p->out[1] + oy) * ow * es;
            double inner = nn_round(f8, (double)(hi > lo ? win_div(p, wz, wy, &wx[lo]) : 1));
            for (int64_t ox = 0; ox < ow && !bwd; ox++) {
                nn_store(f8, acc, ox, 0);
            }
            for (int64_t a = 0; a < wz->count; a++) {
                for (int64_t c = 0; c < wy->count; c++) {
                    int64_t row = ((wz->start + a) * p->in[1] + wy->start + c) * p->in[2];
                    for (int64_t q = 0; q < p->ix.k; q++) {
                        for (int64_t ox = 0; ox < ow; ox++) {
                            if (ox == lo && hi > lo) {
                                int64_t i = row + lo * p->ix.step - p->ix.pad + q, n = hi - lo;
                                sum_row(f8, img + i * es, p->ix.step, acc + lo * es, inner, n,
                                        bwd);
                                ox = hi - 1;
                            }
                            else if (q < wx[ox].count && bwd) {
                                int64_t k = row + wx[ox].start + q;
                                double d = nn_round(f8, (double)win_div(p, wz, wy, &wx[ox]));
                                nn_store(f8, img, k, nn_load(f8, img, k) +
                                                       nn_round(f8, nn_load(f8, acc, ox) / d));
                            }
                            else if (q < wx[ox].count) {
                                nn_store(f8, acc, ox, nn_load(f8, acc, ox) +
                                                        nn_load(f8, img, row + wx[ox].start + q));
                            }
                        }
                    }
                }
            }
            for (int64_t ox = 0; ox < ow && !bwd; ox++) {
                int64_t div = win_div(p, wz, wy, &wx[ox]);
                nn_store(f8, acc, ox, div != 0 ? nn_load(f8, acc, ox) /
                                                       nn_round(f8, (double)div)
                                                 : NAN);
            }
        }
    }
}

static inline int
avg_planes(const PoolJob *j, int f8, int64_t b, int64_t e, int bwd)
{
    for (int64_t pl = b; pl < e; pl++) {
        avg_plane(j, f8, pl, bwd);
    }
    return 0;
}

/* The thin typed wrappers: the parallel_for bodies of each kernel for float32 and float64. */
#define DEFINE_POOL(SUF, F8)                                                                 \
    static int                                                                               \
    max_fwd_##SUF(void *ctx, int64_t b, int64_t e)                                           \
    {                                                                                        \
        return max_fwd(ctx, F8, b, e);                                                       \
    }                                                                                        \
    static int                                                                               \
    scatter_##SUF(void *ctx, int64_t b, int64_t e)                                           \
    {                                                                                        \
        return move_by_index(ctx, F8, b, e, 1);                                              \
    }                                                                                        \
    static int                                                                               \
    gather_##SUF(void *ctx, int64_t b, int64_t e)                                            \
    {                                                                                        \
        return move_by_index(ctx, F8, b, e, 0);                                              \
    }                                                                                        \
    static int                                                                               \
    avg_fwd_##SUF(void *ctx, int64_t b, int64_t e)                                           \
    {                                                                                        \
        return avg_planes(ctx, F8, b, e, 0);                                                 \
    }                                                                                        \
    static int                                                                               \
    avg_bwd_##SUF(void *ctx, int64_t b, int64_t e)                                           \
    {                                                                                        \
        return avg_planes(ctx, F8, b, e, 1);                                                 \
    }
DEFINE_POOL(f4, 0)
DEFINE_POOL(f8, 1)
#undef DEFINE_POOL

/* Runs fn over the planes of p in parallel without the GIL. */
static int
run_planes(const PoolPlan *p, PtlParallelFn fn, PoolJob *j)
{
    int64_t per = p->in[0] * p->in[1] * p->in[2] + p->out[0] * p->out[1] * p->out[2];
    int64_t grain = per > 0 ? PTL_GRAIN_SIZE / per + 1 : 1;
    void *tok = ptl_nogil_begin();
    int rc = ptl_parallel_for(0, p->planes, grain, fn, j);
    ptl_nogil_end(tok);
    return rc;
}

/* ---- shapes and checks (Pool.h) ---- */

/* PyTorch's pooling_output_shape: floor or ceil, and the last window must start inside the
 * input or its left padding. */
static int64_t
pool_out_size(int64_t in, int64_t k, int64_t pad, int64_t s, int64_t dil, int ceil_mode)
{
    int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    int64_t q = num >= 0 ? num / s : -((-num + s - 1) / s);
    int64_t out = q + 1;
    if (ceil_mode && (out - 1) * s >= in + pad) {
        out--;
    }
    return out;
}

/* Reads an int[nd] argument into v[NN_SPATIAL] (right-aligned, `fill` in front); a single
 * value is expanded.  -1 with "<name>: <what> must either be ..." on a bad length. */
static int
pool_param(const char *opname, const PtlIValue *iv, int nd, const char *what,
           const char *tail, int64_t fill, int64_t *v)
{
    int64_t n = iv->u.il.n;
    if (n != 1 && n != nd) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: %s%s", opname, what, tail);
    }
    for (int i = 0; i < NN_SPATIAL; i++) {
        int u = i - (NN_SPATIAL - nd);
        v[i] = u < 0 ? fill : iv->u.il.data[n == 1 ? 0 : u];
    }
    return 0;
}

/* Parses kernel_size/stride/padding(/dilation) of max_pool / avg_pool (stack slots 1..),
 * checks input and parameters in PyTorch's order and fills the plan's sizes. */
static int
pool_setup(const char *opname, PtlTensorImpl *x, const PtlIValue *s, int nd, int has_dil,
           PoolArgs *a, PoolPlan *p)
{
    const char *pair = nd == 2 ? " a tuple of two ints" : " a tuple of three ints";
    char t1[64], t2[80];
    a->nd = nd;
    snprintf(t1, sizeof(t1), "must either be a single int, or%s", pair);
    snprintf(t2, sizeof(t2), "must either be omitted, a single int, or%s", pair);
    if (pool_param(opname, &s[1], nd, "kernel_size ", t1, 1, a->k) < 0) {
        return -1;
    }
    if (s[2].u.il.n == 0) {
        memcpy(a->s, a->k, sizeof(a->s));
    }
    else if (pool_param(opname, &s[2], nd, "stride ", t2, 1, a->s) < 0) {
        return -1;
    }
    if (pool_param(opname, &s[3], nd, "padding ", t1, 0, a->p) < 0) {
        return -1;
    }
    if (has_dil) {
        snprintf(t1, sizeof(t1), "be either a single int, or%s", pair);
        if (pool_param(opname, &s[4], nd, "dilation must ", t1, 1, a->d) < 0) {
            return -1;
        }
    }
    else {
        a->d[0] = a->d[1] = a->d[2] = 1;
    }
    a->ceil_mode = s[has_dil ? 5 : 4].u.b;
    if (x->dim != nd + 1 && x->dim != nd + 2) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "non-empty %dD or %dD (batch mode) tensor expected for input",
                             nd + 1, nd + 2);
    }
    /* output sizes, dim by dim (pooling_output_shape's checks) */
    for (int i = 3 - nd; i < 3; i++) {
        if (a->s[i] == 0) {
            return ptl_error_set(PTL_ERR_RUNTIME, "stride should not be zero");
        }
        if (a->p[i] > ((a->k[i] - 1) * a->d[i] + 1) / 2) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "pad should be at most half of effective kernel size, but got "
                                 "pad=%lld, kernel_size=%lld and dilation=%lld",
                                 (long long)a->p[i], (long long)a->k[i], (long long)a->d[i]);
        }
    }
    if (nd == 2) {
        PTL_CHECK(a->k[1] > 0 && a->k[2] > 0, PTL_ERR_RUNTIME,
                  "kernel size should be greater than zero, but got kH: %lld kW: %lld",
                  (long long)a->k[1], (long long)a->k[2]);
        PTL_CHECK(a->s[1] > 0 && a->s[2] > 0, PTL_ERR_RUNTIME,
                  "stride should be greater than zero, but got dH: %lld dW: %lld",
                  (long long)a->s[1], (long long)a->s[2]);
        PTL_CHECK(a->d[1] > 0 && a->d[2] > 0, PTL_ERR_RUNTIME,
                  "dilation should be greater than zero, but got dilationH: %lld dilationW: %lld",
                  (long long)a->d[1], (long long)a->d[2]);
    }
    else {
        PTL_CHECK(a->k[0] > 0 && a->k[1] > 0 && a->k[2] > 0, PTL_ERR_RUNTIME,
                  "kernel size should be greater than zero, but got kT: %lld kH: %lld kW: %lld",
                  (long long)a->k[0], (long long)a->k[1], (long long)a->k[2]);
        PTL_CHECK(a->s[0] > 0 && a->s[1] > 0 && a->s[2] > 0, PTL_ERR_RUNTIME,
                  "stride should be greater than zero, but got dT: %lld dH: %lld dW: %lld",
                  (long long)a->s[0], (long long)a->s[1], (long long)a->s[2]);
        PTL_CHECK(a->d[0] > 0 && a->d[1] > 0 && a->d[2] > 0, PTL_ERR_RUNTIME,
                  "dilation should be greater than zero, but got dilationT: %lld dilationH: "
                  "%lld dilationW: %lld",
                  (long long)a->d[0], (long long)a->d[1], (long long)a->d[2]);
    }
    for (int i = x->dim == nd + 2 ? 1 : 0; i < x->dim; i++) {
        if (x->sizes[i] == 0) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "Expected %dD or %dD (batch mode) tensor with optional 0 dim "
                                 "batch size for input, but got:%s",
                                 nd + 1, nd + 2,
                                 ptl_format_sizes(t2, sizeof(t2), x->dim, x->sizes));
        }
    }
    int64_t c = x->sizes[x->dim - nd - 1], ins[4] = {c}, outs[4] = {c};
    int bad = 0;
    p->planes = 1;
    for (int i = 0; i < x->dim - nd; i++) {
        p->planes *= x->sizes[i];
    }
    for (int i = 0; i < 3; i++) {
        int u = i - (3 - nd);
        p->in[i] = u < 0 ? 1 : x->sizes[x->dim - nd + u];
        p->out[i] = u < 0 ? 1 : pool_out_size(p->in[i], a->k[i], a->p[i], a->s[i], a->d[i],
                                               a->ceil_mode);
        p->dil[i] = a->d[i];
        if (u >= 0) {
            ins[1 + u] = p->in[i];
            outs[1 + u] = p->out[i];
            bad |= p->out[i] < 1;
        }
    }
    if (bad) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Given input size: %s. Calculated output size: %s. Output size is "
                             "too small",
                             ptl_format_ints(t1, sizeof(t1), nd + 1, ins, "(", "x", ")"),
                             ptl_format_ints(t2, sizeof(t2), nd + 1, outs, "(", "x", ")"));
    }
    return 0;
error:
    return -1;
}

/* The output shape: x's leading dims, then p->out. */
static void
out_shape(const PtlTensorImpl *x, int nd, const PoolPlan *p, int64_t *sizes)
{
    for (int i = 0; i < x->dim - nd; i++) {
        sizes[i] = x->sizes[i];
    }
    for (int i = 0; i < nd; i++) {
        sizes[x->dim - nd + i] = p->out[3 - nd + i];
    }
}

/* A backward's grad_output (or indices) t must have the forward output's shape: x's leading
 * dims, then p->out.  PyTorch's check_dim_size message, channels and spatial dims first as
 * PyTorch checks them, the batch dim last.  0 or -1. */
static int
check_out_shape(const PtlTensorImpl *t, const PtlTensorImpl *x, int nd, const PoolPlan *p)
{
    int64_t want[PTL_MAX_DIMS];
    out_shape(x, nd, p, want);
    for (int k = 0; k < x->dim; k++) {
        int i = (k + x->dim - nd - 1) % x->dim;
        if (t->dim != x->dim || t->sizes[i] != want[i]) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "Expected a tensor of dimension %d and tensor.size[%d] == %lld "
                                 "but got: dimension %d and tensor.size[%d] = %lld",
                                 x->dim, i, (long long)want[i], t->dim, i,
                                 (long long)(i < t->dim ? t->sizes[i] : 0));
        }
    }
    return 0;
}

/* ---- max pooling ---- */

/* Max pooling of x by the plan p (windows set) over nd spatial dims: s[0] = the values,
 * s[1] = the flat indices; frees the plan. */
/* adaptive_max_pool2d to 1 x 1: the maximum of each whole plane and its position, as the
 * window walk of max_fwd picks it (`v > max || isnan(v)`: the first maximum, or the last
 * NaN), without the walk: the reductions' vector max of a contiguous run (NaN when the run
 * holds one), then a scan for the position. */
#define DEFINE_GLOBAL_MAX(T, SUF, DT)                                                     \
    static int                                                                            \
    global_max_##SUF(void *ctx, int64_t b, int64_t e)                                     \
    {                                                                                     \
        const PoolJob *j = ctx;                                                           \
        int64_t n = j->p->in[1] * j->p->in[2], at;                                        \
        for (int64_t pl = b; pl < e; pl++) {                                              \
            const T *v = (const T *)j->x + pl * n;                                        \
            double m = ptl_red_maxmin_contiguous(DT, (const char *)v, n, 1);              \
            if (m != m) {                                                                 \
                for (at = n - 1; at > 0 && v[at] == v[at]; at--) {                        \
                }                                                                         \
            }                                                                             \
            else {                                                                        \
                for (at = 0; at < n - 1 && v[at] != m; at++) {                            \
                }                                                                         \
            }                                                                             \
            ((T *)j->y)[pl] = v[at];                                                      \
            j->idx[pl] = at;                                                              \
        }                                                                                 \
        return 0;                                                                         \
    }
DEFINE_GLOBAL_MAX(float, f4, PTL_DTYPE_FLOAT32)
DEFINE_GLOBAL_MAX(double, f8, PTL_DTYPE_FLOAT64)

static int
max_pool_run(PoolPlan *p, PtlTensorImpl *x, int nd, PtlIValue *s, int global)
{
    PtlTensorImpl *xc = NULL, *y = NULL, *ix = NULL;
    int64_t osz[PTL_MAX_DIMS];
    PtlDtype work = nn_work_dtype(x->dtype);
    out_shape(x, nd, p, osz);
    if ((xc = nn_prepare(x, work)) == NULL ||
        (y = ptl_empty(x->dim, osz, work, x->device)) == NULL ||
        (ix = ptl_empty(x->dim, osz, PTL_DTYPE_INT64, x->device)) == NULL) {
        goto error;
    }
    PoolJob j = {p, ptl_tensor_data(xc), ptl_tensor_data(y), (int64_t *)ptl_tensor_data(ix),
                 NULL, 0};
    PtlParallelFn fn = work == PTL_DTYPE_FLOAT32 ? (global ? global_max_f4 : max_fwd_f4)
                                                 : (global ? global_max_f8 : max_fwd_f8);
    int rc = pool_on_device(x) ? pool_device(PTL_DEVICE_POOL_MAX, p, xc, y, ix)
                               : run_planes(p, fn, &j);
    if (rc < 0 || (y = nn_finish(y, x->dtype)) == NULL) {
        goto error;
    }
    pool_plan_free(p);
    ptl_decref(xc);
    s[0] = ptl_iv_tensor(y);
    s[1] = ptl_iv_tensor(ix);
    return 0;
error:
    pool_plan_free(p);
    ptl_xdecref(xc);
    ptl_xdecref(y);
    ptl_xdecref(ix);
    return -1;
}

/* max_pool{2,3}d_with_indices(Tensor self, kernel_size, stride=[], padding=0, dilation=1,
 * bool ceil_mode=False) -> (Tensor, Tensor):  (N, C, *in) -> (N, C, *out) twice */
static int
max_pool_with_indices_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int nd = op == ptl_op(PTL_OP_max_pool3d_with_indices) ? 3 : 2;
    PtlTensorImpl *x = s[0].u.t;
    PoolArgs a;
    PoolPlan p = {0};

    if (pool_setup(nd == 2 ? "max_pool2d" : "max_pool3d", x, s, nd, 1, &a, &p) < 0 ||
        nn_check_dtype(nd == 2 ? "max_pool2d" : "max_pool3d", x->dtype, 1) < 0) {
        return -1;
    }
    if (pool_plan_alloc(&p) < 0) {
        return -1;
    }
    for (int d = 0; d < 3; d++) {
        pool_plan_strided(&p, d, a.k[d], a.s[d], a.p[d], 0);
    }
    return max_pool_run(&p, x, nd, s, 0);
}

/* grad_input shaped like self: grad_output scattered through indices (Note [Max pooling
 * backward]); the plan only needs planes and the in/out volumes.  The caller checked the
 * shapes of go and idx. */
static PtlTensorImpl *
scatter_indices(PtlTensorImpl *go, PtlTensorImpl *self, PtlTensorImpl *idx, int nd)
{
    PtlDtype work = nn_work_dtype(go->dtype);
    PtlTensorImpl *gc = NULL, *ic = NULL, *gi = NULL;
    PoolPlan p = {0};
    p.planes = 1;
    for (int i = 0; i < self->dim - nd; i++) {
        p.planes *= self->sizes[i];
    }
    for (int i = 0; i < 3; i++) {
        int u = i - (3 - nd);
        p.in[i] = u < 0 ? 1 : self->sizes[self->dim - nd + u];
        p.out[i] = u < 0 ? 1 : go->sizes[go->dim - nd + u];
    }
    if (idx->dtype != PTL_DTYPE_INT64) {
        ptl_error_set(PTL_ERR_RUNTIME, "expected indices to have dtype Long, but got %s",
                      ptl_dtype_name(idx->dtype));
        goto error;
    }
    if ((gc = nn_prepare(go, work)) == NULL || (ic = ptl_contiguous(idx)) == NULL ||
        (gi = ptl_empty(self->dim, self->sizes, work, self->device)) == NULL) {
        goto error;
    }
    PoolJob j = {&p, ptl_tensor_data(gc), ptl_tensor_data(gi), NULL,
                 (const int64_t *)ptl_tensor_data(ic), 0};
    if (run_planes(&p, work == PTL_DTYPE_FLOAT32 ? max_bwd_f4 : max_bwd_f8, &j) < 0) {
        goto error;
    }
    ptl_decref(gc);
    ptl_decref(ic);
    return nn_finish(gi, go->dtype);
error:
    ptl_xdecref(gc);
    ptl_xdecref(ic);
    ptl_xdecref(gi);
    return NULL;
}

/* max_pool{2,3}d_with_indices_backward(grad_output, self, kernel_size, stride, padding,
 * dilation, ceil_mode, indices) -> grad_input shaped like self */
static int
max_pool_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int nd = op == ptl_op(PTL_OP_max_pool3d_with_indices_backward) ? 3 : 2;
    PtlTensorImpl *go = s[0].u.t, *x = s[1].u.t, *idx = s[7].u.t, *gi;
    PoolArgs a;
    PoolPlan p = {0};
    if (pool_setup(nd == 2 ? "max_pool2d" : "max_pool3d", x, &s[1], nd, 1, &a, &p) < 0 ||
        check_out_shape(go, x, nd, &p) < 0 || check_out_shape(idx, x, nd, &p) < 0) {
        return -1;
    }
    gi = pool_on_device(go) ? pool_gather_indices(go, x, idx, &a, &p)
                            : scatter_indices(go, x, idx, nd);
    if (gi == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(gi);
    return 0;
}

/* ---- average pooling ---- */

static int
avg_plan(const char *name, PtlTensorImpl *x, const PtlIValue *s, int nd, PoolPlan *p)
{
    PoolArgs a;
    if (s[6].tag != PTL_IV_NONE && s[6].u.i == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "divisor must be not zero");
    }
    if (pool_setup(name, x, s, nd, 0, &a, p) < 0) {
        return -1;
    }
    p->divisor = s[6].tag != PTL_IV_NONE ? s[6].u.i : 0;
    p->count_include_pad = s[5].u.b;
    if (pool_plan_alloc(p) < 0) {
        return -1;
    }
    for (int d = 0; d < 3; d++) {
        pool_plan_strided(p, d, a.k[d], a.s[d], a.p[d], 1);
    }
    return 0;
}

/* Runs the average kernel (forward from x, or backward from grad g into zeros shaped like
 * x) over plan p, walking as `walk` says (AVG_GLOBAL and AVG_WIDE write every element; AVG_WIDE
 * is forward only); returns the new tensor. */
static PtlTensorImpl *
avg_run(PtlTensorImpl *src, PtlTensorImpl *like, int nd, PoolPlan *p, int bwd, AvgWalk walk,
        PtlDtype out_dt)
{
    PtlDtype work = nn_work_dtype(src->dtype);
    PtlTensorImpl *sc = NULL, *dst = NULL;
    int64_t osz[PTL_MAX_DIMS];
    if (bwd) {
        memcpy(osz, like->sizes, sizeof(int64_t) * (size_t)like->dim);
    }
    else {
        out_shape(like, nd, p, osz);
    }
    if (pool_on_device(src)) {   /* every element written: no zeros */
        if ((sc = nn_prepare(src, work)) == NULL ||
            (dst = ptl_empty(like->dim, osz, work, src->device)) == NULL ||
            pool_device(bwd ? PTL_DEVICE_POOL_AVG_BACKWARD : PTL_DEVICE_POOL_AVG, p, sc, dst,
                        NULL) < 0) {
            goto error;
        }
        ptl_decref(sc);
        return nn_finish(dst, out_dt);
    }
    /* a channels-last input pooled to 1 x 1 is read, or its gradient written, in its own
     * layout (Note [Channels-last global average pooling]) */
    int cl = walk == AVG_GLOBAL && like->dim == 4 && like->sizes[1] > 0 &&
             ptl_tensor_impl_suggest_memory_format(like) == PTL_MEMORY_FORMAT_CHANNELS_LAST &&
             (bwd || (src->dtype == work &&
                      ptl_tensor_impl_is_contiguous_as(src, PTL_MEMORY_FORMAT_CHANNELS_LAST)));
    if (cl && !bwd) {
        ptl_incref(src);
        sc = src;
    }
    else if ((sc = nn_prepare(src, work)) == NULL) {
        goto error;
    }
    dst = cl && bwd       ? ptl_empty_format(like->dim, osz, PTL_MEMORY_FORMAT_CHANNELS_LAST, work,
                                             ptl_device_cpu())
          : walk != AVG_WINDOWS ? ptl_empty(like->dim, osz, work, ptl_device_cpu())
                                : nn_zeros(like->dim, osz, work);
    if (dst == NULL) {
        goto error;
    }
    PoolJob j = {p, ptl_tensor_data(sc), ptl_tensor_data(dst), NULL, NULL,
                 cl ? like->sizes[1] : 0};
    PtlParallelFn fn = work == PTL_DTYPE_FLOAT32 ? (bwd ? avg_bwd_f4 : avg_fwd_f4)
                                                 : (bwd ? avg_bwd_f8 : avg_fwd_f8);
    if (walk != AVG_WINDOWS) {
        fn = pool_avg_walk(walk, work == PTL_DTYPE_FLOAT64, bwd);
    }
    if (run_planes(p, fn, &j) < 0) {
        goto error;
    }
    ptl_decref(sc);
    return nn_finish(dst, out_dt);
error:
    ptl_xdecref(sc);
    ptl_xdecref(dst);
    return NULL;
}

/* avg_pool{2,3}d(Tensor self, kernel_size, stride=[], padding=0, ceil_mode=False,
 * count_include_pad=True, divisor_override=None):  (N, C, *in) -> (N, C, *out) */
static int
avg_pool_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int nd = op == ptl_op(PTL_OP_avg_pool3d) ? 3 : 2;
    const char *name = nd == 2 ? "avg_pool2d" : "avg_pool3d";
    PtlTensorImpl *x = s[0].u.t, *y;
    PoolPlan p = {0};
    PtlDtype dt = x->dtype;

    if (avg_plan(name, x, s, nd, &p) < 0) {
        return -1;
    }
    if (!ptl_dtype_is_floating(dt) && dt != PTL_DTYPE_INT64 &&
        (dt != PTL_DTYPE_UINT8 || nd != 2)) {
        pool_plan_free(&p);
        return nn_check_dtype(name, dt, 0);
    }
    y = avg_run(x, x, nd, &p, 0, AVG_WINDOWS, dt);
    pool_plan_free(&p);
    return ptl_kernel_return(s, y);
}

/* avg_pool{2,3}d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
 * count_include_pad, divisor_override) -> grad_input shaped like self */
static int
avg_pool_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int nd = op == ptl_op(PTL_OP_avg_pool3d_backward) ? 3 : 2;
    PtlTensorImpl *g = s[0].u.t, *x = s[1].u.t, *gi;
    PtlIValue shifted[7];
    PoolPlan p = {0};

    shifted[0] = s[1];
    for (int i = 1; i < 7; i++) {
        shifted[i] = s[i + 1];
    }
    if (avg_plan(nd == 2 ? "avg_pool2d" : "avg_pool3d", x, shifted, nd, &p) < 0) {
        return -1;
    }
    if (check_out_shape(g, x, nd, &p) < 0) {
        pool_plan_free(&p);
        return -1;
    }
    gi = avg_run(g, x, nd, &p, 1, AVG_WINDOWS, g->dtype);
    pool_plan_free(&p);
    return ptl_kernel_return(s, gi);
}

/* ---- adaptive pooling ---- */

/* The plan of an adaptive pooling of x (nd = 2 or 3 spatial dims) to osize, windows laid,
 * after PyTorch's checks of the input (avg: adaptive_avg_pool2d's wording).  0 or -1. */
static int
adaptive_setup(const char *name, PtlTensorImpl *x, const PtlIValue *osize, int nd, PoolPlan *p,
               int avg)
{
    char buf[128];
    if (osize->u.il.n != nd) {
        return nd == 2 ? ptl_error_set(PTL_ERR_RUNTIME, "%s: output_size must be 2", name)
                       : ptl_error_set(PTL_ERR_RUNTIME,
                                       "%s(): internal error: output_size.size() must be 3", name);
    }
    if (x->dim != nd + 1 && x->dim != nd + 2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s(): Expected %dD or %dD tensor, but got%s %s",
                             name, nd + 1, nd + 2, avg ? "" : ":",
                             ptl_format_sizes(buf, sizeof(buf), x->dim, x->sizes));
    }
    for (int i = x->dim - nd; i < x->dim; i++) {
        if (x->sizes[i] == 0) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "%s(): Expected input to have non-zero size for non-batch "
                                 "dimensions, but input has sizes %s with dimension %d being empty",
                                 name, ptl_format_sizes(buf, sizeof(buf), x->dim, x->sizes), i);
        }
    }
    if (nd == 2 && (osize->u.il.data[0] < 0 || osize->u.il.data[1] < 0)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "%s: elements of output_size must be greater than or equal to 0 "
                             "but received {%lld, %lld}",
                             name, (long long)osize->u.il.data[0], (long long)osize->u.il.data[1]);
    }
    p->planes = 1;
    for (int i = 0; i < x->dim - nd; i++) {
        p->planes *= x->sizes[i];
    }
    for (int i = 0; i < 3; i++) {
        int u = i - (3 - nd);
        p->in[i] = u < 0 ? 1 : x->sizes[x->dim - nd + u];
        p->out[i] = u < 0 ? 1 : osize->u.il.data[u];
    }
    /* the output must fit before its window tables are sized (Note [Storage bytes]); a
     * negative size of a 3-D output fails here with PyTorch's message */
    int64_t osz[PTL_MAX_DIMS];
    size_t nbytes;
    out_shape(x, nd, p, osz);
    if (ptl_storage_nbytes(x->dim, osz, NULL, 0, ptl_tensor_itemsize(x), &nbytes) < 0 ||
        pool_plan_alloc(p) < 0) {
        return -1;
    }
    for (int d = 0; d < 3; d++) {
        plan_adaptive(p, d);
    }
    return 0;
}

/* Adaptive average pooling of x to the output size osize (bwd = 0: s[0] = the pooled x, in
 * x's dtype) or its backward (bwd = 1: s[0] = the gradient g spread back over x's shape). */
static int
adaptive_avg(PtlIValue *s, PtlTensorImpl *g, PtlTensorImpl *x, const PtlIValue *osize, int bwd)
{
    PoolPlan p = {0};
    int64_t osz[PTL_MAX_DIMS], onumel = 1;
    if (adaptive_setup("adaptive_avg_pool2d", x, osize, 2, &p, 1) < 0) {
        return -1;
    }
    if (bwd && check_out_shape(g, x, 2, &p) < 0) {
        pool_plan_free(&p);
        return -1;
    }
    if (!bwd) {
        out_shape(x, 2, &p, osz);
        for (int i = 0; i < x->dim; i++) {
            onumel *= osz[i];
        }
        /* as PyTorch's, an empty output returns before the dtype's loop is looked up, so a
         * complex input gets one too */
        if (onumel == 0) {
            pool_plan_free(&p);
            return ptl_kernel_return(s, ptl_empty(x->dim, osz, x->dtype, x->device));
        }
        if (nn_check_dtype("adaptive_avg_pool2d", x->dtype, 0) < 0) {
            pool_plan_free(&p);
            return -1;
        }
    }
    int64_t narrowest = p.out[2] > 0 ? p.w[2][0].count : 0;
    for (int64_t ox = 1; ox < p.out[2]; ox++) {
        narrowest = p.w[2][ox].count < narrowest ? p.w[2][ox].count : narrowest;
    }
    AvgWalk walk = p.out[1] == 1 && p.out[2] == 1 ? AVG_GLOBAL
                   : bwd                              ? AVG_WINDOWS
                   : narrowest >= WIDE_WINDOW         ? AVG_WIDE
                                                      : AVG_ADAPTIVE;
    PtlTensorImpl *y = avg_run(g, x, 2, &p, bwd, walk, g->dtype);
    pool_plan_free(&p);
    return ptl_kernel_return(s, y);
}

/* _adaptive_avg_pool2d(Tensor self, output_size):  (N, C, H, W) -> (N, C, oh, ow) */
static int
adaptive_avg_pool2d_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    return adaptive_avg(s, s[0].u.t, s[0].u.t, &s[1], 0);
}

/* _adaptive_avg_pool2d_backward(grad_output, self) -> grad_input shaped like self */
static int
adaptive_avg_pool2d_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *g = s[0].u.t, *x = s[1].u.t;
    if (g->dim != x->dim) {
        return ptl_error_set(PTL_ERR_RUNTIME, "adaptive_avg_pool2d_backward: Expected "
                             "dimensions %d for `grad_output` but got dimensions %d",
                             x->dim, g->dim);
    }
    /* adaptive_setup refuses an x (so a g) of fewer than 3 dims before the sizes are used */
    int64_t os[2] = {g->dim >= 2 ? g->sizes[g->dim - 2] : 0,
                     g->dim >= 1 ? g->sizes[g->dim - 1] : 0};
    PtlIValue osize = ptl_iv_intlist(os, 2);
    return adaptive_avg(s, g, x, &osize, 1);
}

/* adaptive_max_pool{2,3}d(Tensor self, output_size) -> (Tensor, Tensor) */
static int
adaptive_max_pool_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int nd = op == ptl_op(PTL_OP_adaptive_max_pool3d) ? 3 : 2;
    const char *name = nd == 2 ? "adaptive_max_pool2d" : "adaptive_max_pool3d";
    PtlTensorImpl *x = s[0].u.t;
    PoolPlan p = {0};
    if (adaptive_setup(name, x, &s[1], nd, &p, 0) < 0) {
        return -1;
    }
    if (nn_check_dtype(nd == 2 ? name : "adaptive_max_pool3d_cpu", x->dtype, 0) < 0) {
        pool_plan_free(&p);
        return -1;
    }
    return max_pool_run(&p, x, nd, s, nd == 2 && p.out[1] == 1 && p.out[2] == 1);
}

/* adaptive_max_pool{2,3}d_backward(grad_output, self, indices) -> grad_input */
static int
adaptive_max_pool_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int nd = op == ptl_op(PTL_OP_adaptive_max_pool3d_backward) ? 3 : 2;
    const char *name = nd == 2 ? "adaptive_max_pool2d" : "adaptive_max_pool3d";
    PtlTensorImpl *go = s[0].u.t, *x = s[1].u.t, *idx = s[2].u.t;
    char b1[128], b2[128];
    if (nd == 3 && idx->dtype != PTL_DTYPE_INT64) {
        return ptl_error_set(PTL_ERR_RUNTIME, "expected scalar type Long but found %s",
                             ptl_dtype_legacy_name(idx->dtype));
    }
    if (nd == 3 && idx->dim != x->dim) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "expected dimensions %d for `indices` but got dimensions %d",
                             x->dim, idx->dim);
    }
    if (x->dim != nd + 1 && x->dim != nd + 2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s(): Expected %dD or %dD tensor, but got: %s",
                             name, nd + 1, nd + 2,
                             ptl_format_sizes(b1, sizeof(b1), x->dim, x->sizes));
    }
    if (idx->dim != x->dim || go->dim != idx->dim ||
        memcmp(go->sizes, idx->sizes, sizeof(int64_t) * (size_t)go->dim) != 0 ||
        memcmp(go->sizes, x->sizes, sizeof(int64_t) * (size_t)(x->dim - nd)) != 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "expected sizes %s for `%s` but got sizes %s",
                             ptl_format_sizes(b1, sizeof(b1), idx->dim, idx->sizes),
                             nd == 2 ? "grad_output" : "gradOutput",
                             ptl_format_sizes(b2, sizeof(b2), go->dim, go->sizes));
    }
    if (!pool_on_device(go)) {
        return ptl_kernel_return(s, scatter_indices(go, x, idx, nd));
    }
    /* the device gathers through the forward's windows (Note [CUDA pooling]) */
    int64_t os[3];
    for (int i = 0; i < nd; i++) {
        os[i] = go->sizes[go->dim - nd + i];
    }
    PtlIValue osize = ptl_iv_intlist(os, nd);
    PoolPlan p = {0};
    if (adaptive_setup(name, x, &osize, nd, &p, 0) < 0) {
        return -1;
    }
    return ptl_kernel_return(s, pool_gather_indices(go, x, idx, NULL, &p));
}

/* ---- max_unpool2d ---- */

/* The checks max_unpool2d and its backward share; fills the plan with planes and the
 * volumes (in = output_size, out = self's spatial). */
static int
unpool_setup(PtlTensorImpl *x, PtlTensorImpl *idx, const PtlIValue *osize, PoolPlan *p)
{
    char b1[128], b2[128];
    if (idx->dtype != PTL_DTYPE_INT64) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "elements in indices should be type int64 but got: %s",
                             ptl_dtype_legacy_name(idx->dtype));
    }
    if (osize->u.il.n != 2) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "There should be exactly two elements (height, width) in "
                             "output_size, but got %lld elements.",
                             (long long)osize->u.il.n);
    }
    if (x->dim != 3 && x->dim != 4) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Input to max_unpooling2d should be a 3d or 4d Tensor, but got a "
                             "tensor with %d dimensions.",
                             (int)x->dim);
    }
    if (x->dim != idx->dim || memcmp(x->sizes, idx->sizes, sizeof(int64_t) * (size_t)x->dim)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Expected shape of indices to be same as that of the input tensor "
                             "(%s) but got indices tensor with shape: %s",
                             ptl_format_sizes(b1, sizeof(b1), x->dim, x->sizes),
                             ptl_format_sizes(b2, sizeof(b2), idx->dim, idx->sizes));
    }
    p->planes = 1;
    for (int i = 0; i < x->dim - 2; i++) {
        p->planes *= x->sizes[i];
    }
    p->in[0] = p->out[0] = 1;
    p->in[1] = osize->u.il.data[0];
    p->in[2] = osize->u.il.data[1];
    p->out[1] = x->sizes[x->dim - 2];
    p->out[2] = x->sizes[x->dim - 1];
    return 0;
}

/* Every index must address the output plane. */
static int
unpool_check_indices(const PtlTensorImpl *ic, const PoolPlan *p)
{
    const int64_t *ix = (const int64_t *)ptl_tensor_data(ic);
    int64_t vol = p->in[1] * p->in[2];
    for (int64_t i = 0; i < ic->numel; i++) {
        if (ix[i] < 0 || ix[i] >= vol) {
            return ptl_error_set(PTL_ERR_RUNTIME, PTL_POOL_UNPOOL_INDEX_ERROR, (long long)ix[i],
                                 (long long)p->in[1], (long long)p->in[2]);
        }
    }
    return 0;
}

/* max_unpool2d(Tensor self, Tensor indices, output_size):  (N, C, h, w) -> (N, C, H, W)
 * with zeros except at the indices; max_unpool2d_backward gathers the gradient back. */
static int
max_unpool2d_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int bwd = op == ptl_op(PTL_OP_max_unpool2d_backward);
    PtlTensorImpl *src = s[0].u.t, *x = bwd ? s[1].u.t : s[0].u.t;
    PtlTensorImpl *idx = s[bwd ? 2 : 1].u.t, *sc = NULL, *ic = NULL, *y = NULL;
    PoolPlan p = {0};
    int64_t ysz[PTL_MAX_DIMS];

    if (unpool_setup(x, idx, &s[bwd ? 3 : 2], &p) < 0 ||
        nn_check_dtype("max_unpool2d", src->dtype, 0) < 0) {
        return -1;
    }
    if (bwd) {   /* grad_output has the forward's output shape: x's with output_size */
        PoolPlan fwd = p;
        fwd.out[1] = p.in[1];
        fwd.out[2] = p.in[2];
        if (check_out_shape(src, x, 2, &fwd) < 0) {
            return -1;
        }
    }
    PtlDtype work = nn_work_dtype(src->dtype);
    memcpy(ysz, x->sizes, sizeof(int64_t) * (size_t)x->dim);
    if (!bwd) {
        ysz[x->dim - 2] = p.in[1];
        ysz[x->dim - 1] = p.in[2];
    }
    int dev = pool_on_device(src);   /* the device checks the indices (Note [CUDA max_unpool]) */
    if ((sc = nn_prepare(src, work)) == NULL || (ic = ptl_contiguous(idx)) == NULL ||
        (!dev && unpool_check_indices(ic, &p) < 0) ||
        (y = dev ? ptl_empty(x->dim, ysz, work, src->device) : nn_zeros(x->dim, ysz, work)) ==
            NULL) {
        goto error;
    }
    PoolJob j = {&p, ptl_tensor_data(sc), ptl_tensor_data(y), NULL,
                 (const int64_t *)ptl_tensor_data(ic), 0};
    PtlParallelFn fn = work == PTL_DTYPE_FLOAT32 ? (bwd ? gather_f4 : scatter_f4)
                                                 : (bwd ? gather_f8 : scatter_f8);
    int kind = bwd ? PTL_DEVICE_POOL_UNPOOL_BACKWARD : PTL_DEVICE_POOL_UNPOOL;
    if ((dev ? pool_device(kind, &p, sc, y, ic) : run_planes(&p, fn, &j)) < 0 ||
        (y = nn_finish(y, src->dtype)) == NULL) {
        goto error;
    }
    ptl_decref(sc);
    ptl_decref(ic);
    s[0] = ptl_iv_tensor(y);
    return 0;
error:
    ptl_xdecref(sc);
    ptl_xdecref(ic);
    ptl_xdecref(y);
    return -1;
}

/* results laid out as the input suggests: Note [Channels-last at the kernel boundary] */
PTL_KERNEL_AS_INPUT(max_pool_with_indices_cpu) PTL_KERNEL_AS_INPUT(max_pool_backward_cpu)
PTL_KERNEL_AS_INPUT(avg_pool_cpu) PTL_KERNEL_AS_INPUT(avg_pool_backward_cpu)
PTL_KERNEL_AS_INPUT(adaptive_avg_pool2d_cpu) PTL_KERNEL_AS_INPUT(adaptive_avg_pool2d_backward_cpu)
PTL_KERNEL_AS_INPUT(adaptive_max_pool_cpu) PTL_KERNEL_AS_INPUT(adaptive_max_pool_backward_cpu)
PTL_KERNEL_AS_INPUT(max_unpool2d_cpu)

static const PtlKernelReg pool_cpu[] = {
    {PTL_OP_max_pool2d_with_indices, PTL_KEY_CPU, max_pool_with_indices_cpu_as_input},
    {PTL_OP_max_pool3d_with_indices, PTL_KEY_CPU, max_pool_with_indices_cpu_as_input},
    {PTL_OP_max_pool2d_with_indices_backward, PTL_KEY_CPU, max_pool_backward_cpu_as_input},
    {PTL_OP_max_pool3d_with_indices_backward, PTL_KEY_CPU, max_pool_backward_cpu_as_input},
    {PTL_OP_avg_pool2d, PTL_KEY_CPU, avg_pool_cpu_as_input},
    {PTL_OP_avg_pool3d, PTL_KEY_CPU, avg_pool_cpu_as_input},
    {PTL_OP_avg_pool2d_backward, PTL_KEY_CPU, avg_pool_backward_cpu_as_input},
    {PTL_OP_avg_pool3d_backward, PTL_KEY_CPU, avg_pool_backward_cpu_as_input},
    {PTL_OP__adaptive_avg_pool2d, PTL_KEY_CPU, adaptive_avg_pool2d_cpu_as_input},
    {PTL_OP__adaptive_avg_pool2d_backward, PTL_KEY_CPU, adaptive_avg_pool2d_backward_cpu_as_input},
    {PTL_OP_adaptive_max_pool2d, PTL_KEY_CPU, adaptive_max_pool_cpu_as_input},
    {PTL_OP_adaptive_max_pool2d_backward, PTL_KEY_CPU, adaptive_max_pool_backward_cpu_as_input},
    /* 3-D: contiguous results whatever the input's layout, as PyTorch's */
    {PTL_OP_adaptive_max_pool3d, PTL_KEY_CPU, adaptive_max_pool_cpu},
    {PTL_OP_adaptive_max_pool3d_backward, PTL_KEY_CPU, adaptive_max_pool_backward_cpu},
    {PTL_OP_max_unpool2d, PTL_KEY_CPU, max_unpool2d_cpu_as_input},
    {PTL_OP_max_unpool2d_backward, PTL_KEY_CPU, max_unpool2d_cpu},
};
PTL_DEFINE_REGISTER(pool_cpu)
