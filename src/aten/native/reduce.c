/* reduce.c -- reductions (sum, nansum, mean, prod, amax/amin, max/min, argmax/argmin,
 * all/any, var/std, norm, logsumexp, count_nonzero, aminmax).  Mirrors
 * ATen/native/ReduceOps.cpp, ATen/native/ReduceOpsUtils.h,
 * ATen/native/cpu/ReduceOpsKernel.cpp and ATen/native/cpu/SumKernel.cpp.
 *
 * Note [Reduction plan]
 * ~~~~~~~~~~~~~~~~~~~~~
 * A reduction splits the input's dims into kept dims (one output element per index) and
 * reduced dims.  The reduced dims are ordered outermost first (by decreasing stride, or in
 * logical order when the op reports indices, so that argmax's flattened index is the
 * row-major one), size-1 dims are dropped and neighbours whose strides line up are merged:
 * a contiguous reduction becomes one run.  For every output element the reduced elements
 * are visited as 1-D runs, loaded BLOCK at a time into a double (or, for exact integer
 * results, an int64) buffer, and folded into an accumulator Acc by the op's step; partial
 * accumulators combine, so one big output is split into chunks over the threads, and many
 * outputs are split over the threads directly.  Float sums accumulate in double (with
 * independent AVX2 accumulators for contiguous float32/float64 runs, a contiguous float32
 * run's whole blocks of 256 values first in float lanes of eight values each: Note [Float
 * sums in blocks]), integer sums in int64.  When the reduced dim is outer and the kept dim
 * is contiguous (sum(dim=0) of a matrix), sums run "by columns": a block of outputs is
 * accumulated row after row, reading the input in memory order, as do the float extremes
 * (amax/amin, argmax/argmin, max.dim/min.dim; float32 amax/amin of up to 64 rows in registers,
 * Note [Column extremes in registers]), prod and the 1- and 2-norms.  Contiguous runs take
 * vector paths too: max/min chains, then the first position for argmax, the norms in lanes.
 * Contiguous float16/bfloat16 runs sum in float32 lanes (Note [Half-precision sums]) and take
 * their extremes in float32; their products, by runs and by columns, multiply in double lanes
 * (Note [Half-precision products]), float32's in float32 lanes (Note [Float32 products]).
 * Integer and bool runs sum and take extremes in typed loops, as do their column sums and
 * column max/min.  The plain vector loops over memory live in reduce_kernels.c.  A product,
 * logsumexp or float sum of one output splits into chunks that depend on its length alone,
 * so its bits do not depend on the thread count (a float32 run sums in blocks from its
 * start: Note [Float sums in blocks]).  logsumexp of
 * float32/float64 takes the softmax kernels of nn.c (Note [Softmax columns]): a contiguous
 * run's max and sum of exps in the run's dtype, or those of each column when it reduces an outer dim. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_AVX2_KERNELS 1
#endif

#include "../../c10/cpu_features.h"
#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "block_load.h"
#include "reduce_kernels.h"
#include "reduce_plan.h"
#include "device_reduce.h"
#include "native.h"

#define BLOCK 256
#define MAX_CHUNKS 64
#define COL_BLOCK PTL_RED_COL_BLOCK
/* the dtypes whose products multiply in lanes (Notes [Half-precision products], [Float32
 * products]) */
#define PROD_LANES(DT) (IS_LOWP(DT) || (DT) == PTL_DTYPE_FLOAT32)

/* One output's running state.  a, b: float state (sum, max, mean / M2, max / sum of exps);
 * i, j: integer state (sum, min / max); n: count (var); idx: argmax's index (-1: none). */
typedef struct Acc {
    double a, b;
    int64_t i, j, n, idx;
} Acc;

/* ---- the accumulator of each kind ---- */

static void
acc_init(const Plan *pl, Acc *acc)
{
    memset(acc, 0, sizeof(*acc));
    acc->idx = -1;
    switch (pl->kind) {
    case R_PROD:
        acc->a = 1;
        acc->i = 1;
        break;
    case R_MAX:
    case R_LSE:
        acc->a = -INFINITY;
        acc->i = INT64_MIN;
        break;
    case R_MIN:
        acc->a = INFINITY;
        acc->i = INT64_MAX;
        break;
    case R_MINMAX:
        acc->a = INFINITY;
        acc->b = -INFINITY;
        acc->i = INT64_MAX;
        acc->j = INT64_MIN;
        break;
    case R_ALL:
        acc->i = 1;
        break;
    case R_NORM:
        acc->a = pl->p == -INFINITY ? INFINITY : 0;
        break;
    default:
        break;
    }
}

/* NaN-propagating max / min (PyTorch's reductions return NaN when any element is NaN) */
static inline double
max_nan(double a, double x)
{
    return (x > a || isnan(x)) && !isnan(a) ? x : a;
}

static inline double
min_nan(double a, double x)
{
    return (x < a || isnan(x)) && !isnan(a) ? x : a;
}

/* argmax's order: a larger value wins, and NaN beats every number */
static inline int
beats(int is_max, double x, double a)
{
    if (isnan(a)) {
        return 0;
    }
    return isnan(x) || (is_max ? x > a : x < a);
}

/* Folds a block of partial log-sum-exp (max m, sum of exp(x - m) s) into acc. */
static void
lse_combine(Acc *acc, double m, double s)
{
    if (isnan(acc->a) || (m == -INFINITY && s == 0)) {
        return;
    }
    /* NaN wins over everything, +inf already seen included; +inf over every number */
    if (isnan(m) || (m == INFINITY && acc->a != INFINITY)) {
        acc->a = m;
        acc->b = 1;
        return;
    }
    if (acc->a == INFINITY) {
        return;
    }
    if (m > acc->a) {
        acc->b = acc->b * exp(acc->a - m) + s;
        acc->a = m;
    }
    else {
        acc->b += s * exp(m - acc->a);
    }
}

static void
var_combine(Acc *acc, int64_t n, double mean, double m2)
{
    if (n == 0) {
        return;
    }
    double delta = mean - acc->a, w = (double)n / (double)(acc->n + n);   /* delta * n: inf */
    acc->a = acc->n ? acc->a + delta * w : mean;   /* the first part: inf * 0 would be nan */
    acc->b += m2 + (acc->n ? delta * delta * (double)acc->n * w : 0);
    acc->n += n;
}

/* all, any and count_nonzero of x[0..n) into acc->i: the cases of step_d and step_i */
#define TRUTH_STEP_CASES(x, n, acc)              \
    case R_ALL:                                  \
        for (int64_t k = 0; k < (n); k++) {      \
            (acc)->i &= (x)[k] != 0;             \
        }                                        \
        break;                                   \
    case R_ANY:                                  \
        for (int64_t k = 0; k < (n); k++) {      \
            (acc)->i |= (x)[k] != 0;             \
        }                                        \
        break;                                   \
    case R_COUNT:                                \
        for (int64_t k = 0; k < (n); k++) {      \
            (acc)->i += (x)[k] != 0;             \
        }                                        \
        break

/* x[0..n) are the reduced elements idx0, idx0 + 1, ... of one output, as doubles */
static void
step_d(const Plan *pl, Acc *acc, const double *x, int64_t n, int64_t idx0)
{
    double s = 0, m;
    switch (pl->kind) {
    case R_SUM:   /* the contiguous sums' independent accumulators, not one chain */
    case R_MEAN:
        acc->a += ptl_red_sum_contiguous(PTL_DTYPE_FLOAT64, (const char *)x, n);
        break;
    case R_NANSUM:
        for (int64_t k = 0; k < n; k++) {
            s += isnan(x[k]) ? 0 : x[k];
        }
        acc->a += s;
        break;
    case R_PROD:
        for (int64_t k = 0; k < n; k++) {
            acc->a *= x[k];
        }
        break;
    case R_MAX:
        acc->a = max_nan(acc->a,
                         ptl_red_maxmin_contiguous(PTL_DTYPE_FLOAT64, (const char *)x, n, 1));
        break;
    case R_MIN:
        acc->a = min_nan(acc->a,
                         ptl_red_maxmin_contiguous(PTL_DTYPE_FLOAT64, (const char *)x, n, 0));
        break;
    case R_ARGMAX:
    case R_ARGMIN:
        for (int64_t k = 0; k < n; k++) {
            if (acc->idx < 0 || beats(pl->kind == R_ARGMAX, x[k], acc->a)) {
                acc->a = x[k];
                acc->idx = idx0 + k;
            }
        }
        break;
        TRUTH_STEP_CASES(x, n, acc);
    case R_VAR:
        s = ptl_red_sum_contiguous(PTL_DTYPE_FLOAT64, (const char *)x, n);
        m = s / (double)n;
        for (int64_t k = 0; isinf(s) && k < n; k++) {   /* the sum overflowed: sum x / n */
            m = (k ? m : 0) + x[k] / (double)n;
        }
        s = 0;
        for (int64_t k = 0; k < n; k++) {
            s += (x[k] - m) * (x[k] - m);
        }
        var_combine(acc, n, m, s);
        break;
    case R_NORM:
        if (pl->p == INFINITY) {
            for (int64_t k = 0; k < n; k++) {
                acc->a = max_nan(acc->a, fabs(x[k]));
            }
        }
        else if (pl->p == -INFINITY) {
            for (int64_t k = 0; k < n; k++) {
                acc->a = min_nan(acc->a, fabs(x[k]));
            }
        }
        else {
            for (int64_t k = 0; k < n; k++) {
                double v = fabs(x[k]);
                s += pl->p == 2 ? v * v : pl->p == 1 ? v : pl->p == 0 ? (double)(v != 0)
                                                                       : pow(v, pl->p);
            }
            acc->a += s;
        }
        break;
    case R_LSE:
        m = -INFINITY;
        for (int64_t k = 0; k < n; k++) {
            m = max_nan(m, x[k]);
        }
        if (isfinite(m)) {
            for (int64_t k = 0; k < n; k++) {
                s += exp(x[k] - m);
            }
        }
        else {
            s = m == -INFINITY ? 0 : 1;
        }
        lse_combine(acc, m, s);
        break;
    case R_MINMAX:
        for (int64_t k = 0; k < n; k++) {
            acc->a = min_nan(acc->a, x[k]);
            acc->b = max_nan(acc->b, x[k]);
        }
        break;
    }
}

/* The same on exact int64 values (integer and bool inputs) */
static void
step_i(const Plan *pl, Acc *acc, const int64_t *x, int64_t n, int64_t idx0)
{
    uint64_t u = (uint64_t)acc->i;
    switch (pl->kind) {
    case R_SUM:
    case R_NANSUM:
        for (int64_t k = 0; k < n; k++) {
            u += (uint64_t)x[k];
        }
        acc->i = (int64_t)u;
        break;
    case R_PROD:
        for (int64_t k = 0; k < n; k++) {
            u *= (uint64_t)x[k];
        }
        acc->i = (int64_t)u;
        break;
    case R_MAX:
        for (int64_t k = 0; k < n; k++) {
            acc->i = x[k] > acc->i ? x[k] : acc->i;
        }
        break;
    case R_MIN:
        for (int64_t k = 0; k < n; k++) {
            acc->i = x[k] < acc->i ? x[k] : acc->i;
        }
        break;
    case R_ARGMAX:
    case R_ARGMIN:
        for (int64_t k = 0; k < n; k++) {
            if (acc->idx < 0 || (pl->kind == R_ARGMAX ? x[k] > acc->i : x[k] < acc->i)) {
                acc->i = x[k];
                acc->idx = idx0 + k;
            }
        }
        break;
        TRUTH_STEP_CASES(x, n, acc);
    case R_MINMAX:
        for (int64_t k = 0; k < n; k++) {
            acc->i = x[k] < acc->i ? x[k] : acc->i;
            acc->j = x[k] > acc->j ? x[k] : acc->j;
        }
        break;
    default:   /* mean, var, norm and logsumexp take floating inputs only */
        break;
    }
}

/* acc := acc followed by b (b covers later reduced indices) */
static void
acc_combine(const Plan *pl, Acc *acc, const Acc *b)
{
    switch (pl->kind) {
    case R_SUM:
    case R_NANSUM:
    case R_MEAN:
    case R_COUNT:
        acc->a += b->a;
        acc->i = (int64_t)((uint64_t)acc->i + (uint64_t)b->i);
        break;
    case R_PROD:
        acc->a *= b->a;
        acc->i = (int64_t)((uint64_t)acc->i * (uint64_t)b->i);
        break;
    case R_MAX:
        acc->a = max_nan(acc->a, b->a);
        acc->i = b->i > acc->i ? b->i : acc->i;
        break;
    case R_MIN:
        acc->a = min_nan(acc->a, b->a);
        acc->i = b->i < acc->i ? b->i : acc->i;
        break;
    case R_ARGMAX:
    case R_ARGMIN:
        if (b->idx >= 0 &&
            (acc->idx < 0 ||
             (pl->use_int ? (pl->kind == R_ARGMAX ? b->i > acc->i : b->i < acc->i)
                          : beats(pl->kind == R_ARGMAX, b->a, acc->a)))) {
            *acc = *b;
        }
        break;
    case R_ALL:
        acc->i &= b->i;
        break;
    case R_ANY:
        acc->i |= b->i;
        break;
    case R_VAR:
        var_combine(acc, b->n, b->a, b->b);
        break;
    case R_NORM:
        acc->a = pl->p == INFINITY    ? max_nan(acc->a, b->a)
                 : pl->p == -INFINITY ? min_nan(acc->a, b->a)
                                      : acc->a + b->a;
        break;
    case R_LSE:
        lse_combine(acc, b->a, b->a == -INFINITY ? 0 : b->b);
        break;
    case R_MINMAX:
        acc->a = min_nan(acc->a, b->a);
        acc->b = max_nan(acc->b, b->b);
        acc->i = b->i < acc->i ? b->i : acc->i;
        acc->j = b->j > acc->j ? b->j : acc->j;
        break;
    }
}

static void
put(char *base, PtlDtype dt, int64_t o, int use_int, int64_t iv, double dv)
{
    char *p = base + o * (int64_t)ptl_dtype_itemsize(dt);
    if (use_int) {
        ptl_store_int(p, dt, iv);
    }
    else {
        ptl_store_double(p, dt, dv);
    }
}

/* Writes output element o from its accumulator. */
static void
acc_finish(const Plan *pl, const Acc *acc, int64_t o)
{
    int ui = pl->use_int;
    double v, denom;
    switch (pl->kind) {
    case R_SUM:
    case R_NANSUM:
    case R_PROD:
    case R_MAX:
    case R_MIN:
        put(pl->out0, pl->odt0, o, ui, acc->i, acc->a);
        break;
    case R_MEAN:
        put(pl->out0, pl->odt0, o, 0, 0, acc->a / (double)pl->R);
        break;
    case R_ARGMAX:
    case R_ARGMIN:
        if (pl->out1 != NULL) {
            put(pl->out0, pl->odt0, o, ui, acc->i, acc->a);
            put(pl->out1, pl->odt1, o, 1, acc->idx, 0);
        }
        else {
            put(pl->out0, pl->odt0, o, 1, acc->idx, 0);
        }
        break;
    case R_ALL:
    case R_ANY:
    case R_COUNT:
        put(pl->out0, pl->odt0, o, 1, acc->i, 0);
        break;
    case R_VAR:
        denom = (double)pl->R - pl->correction;
        v = acc->b / (denom > 0 ? denom : 0.0);
        put(pl->out0, pl->odt0, o, 0, 0, pl->take_sqrt ? sqrt(v) : v);
        if (pl->out1 != NULL) {
            put(pl->out1, pl->odt1, o, 0, 0, acc->n > 0 ? acc->a : NAN);
        }
        break;
    case R_NORM:
        v = acc->a;
        if (pl->p == 2) {
            v = sqrt(v);
        }
        else if (pl->p != 1 && pl->p != 0 && isfinite(pl->p)) {
            v = pow(v, 1.0 / pl->p);
        }
        put(pl->out0, pl->odt0, o, 0, 0, v);
        break;
    case R_LSE:
        put(pl->out0, pl->odt0, o, 0, 0, isfinite(acc->a) ? acc->a + log(acc->b) : acc->a);
        break;
    case R_MINMAX:
        put(pl->out0, pl->odt0, o, ui, acc->i, acc->a);
        put(pl->out1, pl->odt1, o, ui, acc->j, acc->b);
        break;
    }
}

/* ---- the driver ---- */

/* Folds the 1-D run p[0], p[st], ... (n elements, reduced indices idx0...) into acc. */
static void
fold_run(const Plan *pl, Acc *acc, const char *p, int64_t st, int64_t n, int64_t idx0)
{
    double bd[BLOCK];
    int64_t bi[BLOCK];
    int contig = st == (int64_t)ptl_dtype_itemsize(pl->dt);
    int ext = pl->kind == R_MAX || pl->kind == R_MIN;
    if ((pl->kind == R_SUM || pl->kind == R_MEAN) &&
        (pl->dt == PTL_DTYPE_FLOAT32 || pl->dt == PTL_DTYPE_FLOAT64) && contig) {
        acc->a += ptl_red_sum_contiguous(pl->dt, p, n);
        return;
    }
    if ((pl->kind == R_SUM || pl->kind == R_MEAN) && IS_LOWP(pl->dt) && contig) {
        acc->a += ptl_red_sum_lowp(pl->dt, p, n);   /* Note [Half-precision sums] */
        return;
    }
    if ((pl->kind == R_SUM || pl->kind == R_NANSUM) && pl->use_int && contig) {
        acc->i = (int64_t)((uint64_t)acc->i + (uint64_t)ptl_red_sum_int(pl->dt, p, n));
        return;
    }
    if (pl->kind == R_PROD && PROD_LANES(pl->dt)) {   /* Note [Half-precision products] */
        acc->a *= ptl_red_prod_lowp(pl->dt, p, st, n);
        return;
    }
    if (pl->kind == R_PROD && contig && pl->use_int) {   /* exact, so in any order */
        acc->i = (int64_t)((uint64_t)acc->i * (uint64_t)ptl_red_prod_int(pl->dt, p, n));
        return;
    }
    if (ext && n > 0 && contig && (pl->use_int || IS_LOWP(pl->dt))) {
        if (pl->use_int) {
            int64_t m = ptl_red_maxmin_int(pl->dt, p, n, pl->kind == R_MAX);
            acc->i = pl->kind == R_MAX ? (m > acc->i ? m : acc->i) : (m < acc->i ? m : acc->i);
        }
        else {
            double m = ptl_red_maxmin_lowp(pl->dt, p, n, pl->kind == R_MAX);
            acc->a = pl->kind == R_MAX ? max_nan(acc->a, m) : min_nan(acc->a, m);
        }
        return;
    }
    if ((pl->kind == R_MAX || pl->kind == R_MIN) &&
        (pl->dt == PTL_DTYPE_FLOAT32 || pl->dt == PTL_DTYPE_FLOAT64) &&
        st == (int64_t)ptl_dtype_itemsize(pl->dt) && n > 0) {
        double m = ptl_red_maxmin_contiguous(pl->dt, p, n, pl->kind == R_MAX);
        acc->a = pl->kind == R_MAX ? max_nan(acc->a, m) : min_nan(acc->a, m);
        return;
    }
    if ((pl->kind == R_ARGMAX || pl->kind == R_ARGMIN) && contig && n > 0 &&
        (pl->dt == PTL_DTYPE_FLOAT32 || pl->dt == PTL_DTYPE_FLOAT64 || IS_LOWP(pl->dt))) {
        /* the run's extreme, then its first position (the first NaN when there is one): the
         * first of equal values wins, as in step_d */
        int is_max = pl->kind == R_ARGMAX;
        double m = IS_LOWP(pl->dt) ? ptl_red_maxmin_lowp(pl->dt, p, n, is_max)
                                   : ptl_red_maxmin_contiguous(pl->dt, p, n, is_max);
        if (acc->idx < 0 || beats(is_max, m, acc->a)) {
            int64_t k = 0;
            if (IS_LOWP(pl->dt)) {
                k = ptl_red_find_lowp(pl->dt, p, n, m);
            }
            else if (pl->dt == PTL_DTYPE_FLOAT32) {
                const float *x = (const float *)p;
                while (k < n - 1 && !((double)x[k] == m || (m != m && x[k] != x[k]))) {
                    k++;
                }
            }
            else {
                const double *x = (const double *)p;
                while (k < n - 1 && !(x[k] == m || (m != m && x[k] != x[k]))) {
                    k++;
                }
            }
            acc->a = ptl_load_double(p + k * st, pl->dt);
            acc->idx = idx0 + k;
        }
        return;
    }
    if ((pl->kind == R_ARGMAX || pl->kind == R_ARGMIN) && contig && n > 0 && pl->use_int) {
        int is_max = pl->kind == R_ARGMAX;   /* the first of equal values, as in step_i */
        int64_t m = ptl_red_maxmin_int(pl->dt, p, n, is_max);
        if (acc->idx < 0 || (is_max ? m > acc->i : m < acc->i)) {
            acc->i = m;
            acc->idx = idx0 + ptl_red_find_int(pl->dt, p, n, m);
        }
        return;
    }
    double lm, ls;
    if (pl->kind == R_LSE && st == (int64_t)ptl_dtype_itemsize(pl->dt) && n > 0 &&
        ptl_softmax_expsum_row(pl->dt, p, n, &lm, &ls)) {
        lse_combine(acc, lm, isfinite(lm) ? ls : lm == -INFINITY ? 0 : 1);
        return;
    }
    if (pl->kind == R_NORM && (pl->p == 2 || pl->p == 1) &&
        (pl->dt == PTL_DTYPE_FLOAT32 || pl->dt == PTL_DTYPE_FLOAT64) &&
        st == (int64_t)ptl_dtype_itemsize(pl->dt)) {
        acc->a += ptl_red_powsum_contiguous(pl->dt, p, n, pl->p == 2);
        return;
    }
    for (int64_t k = 0; k < n; k += BLOCK) {
        int64_t m = n - k < BLOCK ? n - k : BLOCK;
        if (pl->use_int) {
            ptl_block_load_i[pl->dt](p + k * st, st, m, bi);
            step_i(pl, acc, bi, m, idx0 + k);
        }
        else {
            ptl_block_load_d[pl->dt](p + k * st, st, m, bd);
            step_d(pl, acc, bd, m, idx0 + k);
        }
    }
}

/* Folds the reduced elements [rb, re) (row-major over the reduced dims) at p into acc. */
static void
fold_range(const Plan *pl, Acc *acc, const char *p, int64_t rb, int64_t re)
{
    int64_t inner = pl->rsize[pl->nr - 1], ist = pl->rstride[pl->nr - 1];
    while (rb < re) {
        int64_t o = rb / inner, j = rb % inner;
        const char *q = p;
        for (int d = pl->nr - 2; d >= 0; d--) {
            q += (o % pl->rsize[d]) * pl->rstride[d];
            o /= pl->rsize[d];
        }
        int64_t n = inner - j < re - rb ? inner - j : re - rb;
        fold_run(pl, acc, q + j * ist, ist, n, rb);
        rb += n;
    }
}

static int
reduce_outputs(void *ctx, int64_t b, int64_t e)
{
    const Plan *pl = ctx;
    Acc acc;
    if (ptl_red_runs(pl, b, e) || ptl_red_truth_runs(pl, b, e) ||
        ptl_red_narrow_columns(pl, b, e)) {
        return 0;
    }
    int64_t step;
    int even = kept_even(pl, &step);   /* kept_ptr's divisions cost a short run 10-20% */
    for (int64_t o = b; o < e; o++) {
        acc_init(pl, &acc);
        fold_range(pl, &acc, even ? pl->base + o * step : kept_ptr(pl, o), 0, pl->R);
        acc_finish(pl, &acc, o);
    }
    return 0;
}

typedef struct ChunkJob {
    const Plan *pl;
    const char *p;
    int64_t chunk;
    Acc parts[MAX_CHUNKS];
} ChunkJob;

static int
reduce_chunks(void *ctx, int64_t b, int64_t e)
{
    ChunkJob *job = ctx;
    const Plan *pl = job->pl;
    for (int64_t c = b; c < e; c++) {
        int64_t rb = c * job->chunk, re = rb + job->chunk < pl->R ? rb + job->chunk : pl->R;
        acc_init(pl, &job->parts[c]);
        fold_range(pl, &job->parts[c], job->p, rb, re);
    }
    return 0;
}

/* acc[0..n) += the row p[0..n) (a float dtype, contiguous) */
static void
add_row(const Plan *pl, double *acc, const char *p, int64_t n, int avx2)
{
    double bd[BLOCK];
    int64_t isz = (int64_t)ptl_dtype_itemsize(pl->dt);
    if (pl->kind != R_NANSUM && pl->dt == PTL_DTYPE_FLOAT64) {
        ptl_red_add_row_f8(acc, (const double *)p, n, avx2);
        return;
    }
    for (int64_t k0 = 0; k0 < n; k0 += BLOCK) {
        int64_t m = n - k0 < BLOCK ? n - k0 : BLOCK;
        ptl_block_load_d[pl->dt](p + k0 * isz, isz, m, bd);
        for (int64_t k = 0; k < m; k++) {
            acc[k0 + k] += pl->kind == R_NANSUM && isnan(bd[k]) ? 0 : bd[k];
        }
    }
}

/* Whether reduce_columns folds kind on dtype dt by ptl_red_column_fold, or for max/min of
 * integers by ptl_red_maxmin_rows_int (else it sums). */
static int
column_fold_kind(RedKind kind, PtlDtype dt, double p)
{
    if (kind == R_ALL || kind == R_ANY) { return !ptl_dtype_is_complex(dt); }  /* reduce_truth.c */
    if (ptl_dtype_is_integral(dt, 1)) {
        return kind == R_MAX || kind == R_MIN || kind == R_ARGMAX || kind == R_ARGMIN;
    }
    if (IS_LOWP(dt)) {
        return kind == R_MAX || kind == R_MIN || kind == R_PROD;
    }
    if (dt != PTL_DTYPE_FLOAT32 && dt != PTL_DTYPE_FLOAT64) {
        return 0;
    }
    return kind == R_MAX || kind == R_MIN || kind == R_ARGMAX || kind == R_ARGMIN ||
           kind == R_PROD || (kind == R_NORM && (p == 2 || p == 1));
}

/* sum(dim=0)-like: the run is the outer dim and the innermost kept dim is contiguous, so a
 * block of pl->cw outputs is accumulated row after row, reading the input in memory order:
 * summed, folded by column_fold for the kinds of column_fold_kind, or for logsumexp taken
 * by the softmax column kernels (Note [Softmax columns]).  Work unit u = (outer kept index,
 * block of columns). */
static const PtlRedColOp col_ops[] = {   /* by RedKind; the 2-norm is NORM1 + 1 */
    [R_MAX] = PTL_RED_COL_MAX, [R_MIN] = PTL_RED_COL_MIN, [R_ARGMAX] = PTL_RED_COL_ARGMAX,
    [R_ARGMIN] = PTL_RED_COL_ARGMIN, [R_PROD] = PTL_RED_COL_PROD, [R_NORM] = PTL_RED_COL_NORM1};

static int
reduce_columns(void *ctx, int64_t b, int64_t e)
{
    const Plan *pl = ctx;
    int64_t cols = pl->ksize[pl->nk - 1], ncb = (cols + pl->cw - 1) / pl->cw;
    double sd[COL_BLOCK], ss[COL_BLOCK];
    int64_t si[COL_BLOCK], sa[COL_BLOCK];
    int avx2 = ptl_cpu_capability() >= PTL_CPU_AVX2;
    int fold = column_fold_kind(pl->kind, pl->dt, pl->p);
    int arg = pl->kind == R_ARGMAX || pl->kind == R_ARGMIN;
    Acc acc;
    for (int64_t u = b; u < e; u++) {
        int64_t c0 = (u % ncb) * pl->cw, o0 = (u / ncb) * cols + c0;
        int64_t m = cols - c0 < pl->cw ? cols - c0 : pl->cw;
        const char *p = kept_ptr(pl, o0);
        if (pl->kind == R_LSE) {   /* each column's max in sd, its sum of exps in ss */
            ptl_softmax_expsum_cols(pl->dt, p, pl->R, pl->rstride[0], m, sd, ss);
            for (int64_t k = 0; k < m; k++) {
                acc.a = sd[k];
                acc.b = ss[k];
                acc_finish(pl, &acc, o0 + k);
            }
            continue;
        }
        if (ptl_red_columns_put(pl, o0, p, m)) {   /* straight out: reduce_columns.c */
            continue;
        }
        if (fold && pl->use_int) {   /* the exact extreme in si, its row in sa */
            ptl_red_maxmin_rows_int(si, arg ? sa : NULL, pl->dt, p, pl->rstride[0], pl->R, m,
                                    pl->kind == R_MAX || pl->kind == R_ARGMAX);
        }
        else if (fold && PROD_LANES(pl->dt) && pl->kind == R_PROD) {
            ptl_red_prod_rows_lowp(sd, pl->dt, p, pl->rstride[0], pl->R, m);
            if (pl->odt0 == PTL_DTYPE_FLOAT32) {   /* a quarter of prod(A, 0) of 64 x 1000 */
                ptl_red_put_columns(pl, o0, sd, m);
                continue;
            }
        }
        else if (fold && IS_LOWP(pl->dt)) {
            ptl_red_maxmin_rows_lowp(sd, pl->dt, p, pl->rstride[0], pl->R, m, pl->kind == R_MAX);
        }
        else if (fold) {   /* a value (and a row) per column: sd and si */
            ptl_red_column_fold(pl->dt, col_ops[pl->kind] + (pl->kind == R_NORM && pl->p == 2), p,
                                pl->rstride[0], pl->R, m, sd, si, avx2);
            int ix = arg && pl->out1 != NULL && pl->odt1 == PTL_DTYPE_INT64;   /* max.dim */
            if ((pl->kind == R_MAX || pl->kind == R_MIN || ix) && ptl_dtype_is_floating(pl->odt0)) {
                ptl_red_put_columns(pl, o0, sd, m);   /* a put an output: 0.04x amax(0) 2x40000 */
                if (ix) {
                    memcpy((int64_t *)pl->out1 + o0, si, sizeof(int64_t) * (size_t)m);
                }
                continue;
            }
        }
        else {   /* sums */
            memset(sd, 0, sizeof(double) * (size_t)m);
            memset(si, 0, sizeof(int64_t) * (size_t)m);
            if (pl->kind != R_NANSUM && pl->dt == PTL_DTYPE_FLOAT32) {
                ptl_red_add_rows_f4(sd, p, pl->rstride[0], pl->R, m, avx2);
            }
            else if (pl->kind != R_NANSUM && IS_LOWP(pl->dt)) {
                ptl_red_add_rows_lowp(sd, pl->dt, p, pl->rstride[0], pl->R, m);
            }
            else if (pl->use_int) {
                ptl_red_add_rows_int(si, pl->dt, p, pl->rstride[0], pl->R, m);
            }
            else {
                for (int64_t r = 0; r < pl->R; r++) {
                    add_row(pl, sd, p + r * pl->rstride[0], m, avx2);
                }
            }
            if ((pl->kind == R_SUM || pl->kind == R_NANSUM || pl->kind == R_MEAN) &&
                !pl->use_int && ptl_dtype_is_floating(pl->odt0)) {
                ptl_red_put_columns(pl, o0, sd, m);
                continue;
            }
        }
        for (int64_t k = 0; k < m; k++) {
            acc_init(pl, &acc);
            acc.a = sd[k];
            if (arg) {
                acc.idx = pl->use_int ? sa[k] : si[k];
            }
            if (!fold || pl->use_int) {
                acc.i = si[k];
            }
            acc_finish(pl, &acc, o0 + k);
        }
    }
    return 0;
}

/* Fills pl's dims from in and the reduced-dim mask (Note [Reduction plan]). */
static void
plan_dims(Plan *pl, const PtlTensorImpl *in, uint32_t mask, int keep_order)
{
    int64_t isz = (int64_t)ptl_tensor_itemsize(in);
    pl->nk = pl->nr = 0;
    pl->nout = pl->R = 1;
    for (int d = 0; d < in->dim; d++) {
        if (mask & (1u << d)) {
            pl->R *= in->sizes[d];
            if (in->sizes[d] != 1) {
                pl->rsize[pl->nr] = in->sizes[d];
                pl->rstride[pl->nr++] = in->strides[d] * isz;
            }
        }
        else {
            pl->nout *= in->sizes[d];
            pl->ksize[pl->nk] = in->sizes[d];
            pl->kstride[pl->nk++] = in->strides[d] * isz;
        }
    }
    /* outermost (largest stride) first; insertion sort keeps ties in logical order */
    for (int i = 1; i < pl->nr && !keep_order; i++) {
        for (int j = i; j > 0 && llabs(pl->rstride[j]) > llabs(pl->rstride[j - 1]); j--) {
            int64_t ts = pl->rsize[j], tt = pl->rstride[j];
            pl->rsize[j] = pl->rsize[j - 1];
            pl->rstride[j] = pl->rstride[j - 1];
            pl->rsize[j - 1] = ts;
            pl->rstride[j - 1] = tt;
        }
    }
    int n = 0;
    for (int i = 0; i < pl->nr; i++) {
        if (n > 0 && pl->rstride[n - 1] == pl->rstride[i] * pl->rsize[i]) {
            pl->rsize[n - 1] *= pl->rsize[i];
            pl->rstride[n - 1] = pl->rstride[i];
        }
        else {
            pl->rsize[n] = pl->rsize[i];
            pl->rstride[n++] = pl->rstride[i];
        }
    }
    pl->nr = n;
    if (pl->nr == 0) {
        pl->rsize[0] = 1;
        pl->rstride[0] = 0;
        pl->nr = 1;
    }
}

int (*ptl_device_reduce_hook)(const PtlDeviceReduceArgs *a);
int (*ptl_device_softmax_hook)(const PtlDeviceSoftmaxArgs *a);
int ptl_device_reduce_emulation;

/* The CUDA kernels' kind of a reduction, or -1 for those without one (aminmax: a min and
 * a max, reduce_cuda) */
static int
cuda_kind(RedKind kind)
{
    static const int kinds[] = {   /* ORDER RedKind */
        PTL_DEVICE_RED_SUM, PTL_DEVICE_RED_NANSUM, PTL_DEVICE_RED_MEAN, PTL_DEVICE_RED_PROD,
        PTL_DEVICE_RED_MAX, PTL_DEVICE_RED_MIN, PTL_DEVICE_RED_ARGMAX, PTL_DEVICE_RED_ARGMIN,
        PTL_DEVICE_RED_ALL, PTL_DEVICE_RED_ANY, PTL_DEVICE_RED_COUNT_NONZERO, PTL_DEVICE_RED_VAR,
        PTL_DEVICE_RED_NORM, PTL_DEVICE_RED_LSE, -1};
    return kinds[kind];
}

/* The plan handed to the CUDA kernels (device_reduce.h): a CUDA input, or any input while
 * the tests emulate those kernels on the host.  aminmax is two launches, min into out0 and
 * max into out1 (each NaN-propagating, as the CPU's fold). */
static int
reduce_cuda(const Plan *pl)
{
    PtlDeviceReduceArgs a;
    if (pl->kind == R_MINMAX) {
        Plan one = *pl;
        one.kind = R_MIN;
        one.out1 = NULL;
        one.odt1 = PTL_DTYPE_UNDEFINED;
        if (reduce_cuda(&one) < 0) {
            return -1;
        }
        one.kind = R_MAX;
        one.out0 = pl->out1;
        one.odt0 = pl->odt1;
        return reduce_cuda(&one);
    }
    memset(&a, 0, sizeof(a));
    a.kind = cuda_kind(pl->kind);
    a.dtype = pl->dt;
    a.use_int = pl->use_int;
    a.odt0 = pl->odt0;
    a.odt1 = pl->odt1;
    a.in = pl->base;
    a.out0 = pl->out0;
    a.out1 = pl->out1;
    a.nk = pl->nk;
    a.nr = pl->nr;
    memcpy(a.ksize, pl->ksize, sizeof(pl->ksize));
    memcpy(a.kstride, pl->kstride, sizeof(pl->kstride));
    memcpy(a.rsize, pl->rsize, sizeof(pl->rsize));
    memcpy(a.rstride, pl->rstride, sizeof(pl->rstride));
    a.nout = pl->nout;
    a.R = pl->R;
    a.p = pl->p;
    a.correction = pl->correction;
    a.take_sqrt = pl->take_sqrt;
    return ptl_device_reduce_hook(&a);
}

/* Note [Reductions over dims of size one]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * When every reduced dim has size 1 (x.sum(-1) of an [N, 1] tensor) each output is its one
 * element: sum, mean, prod, max, min, amax and amin copy it into the output's dtype, and the
 * indices of argmax, argmin and max/min(dim) are 0.  Walked as N reductions of one element
 * they took 16-21 ns an output, 30-100x PyTorch's time for N = 1e6.  Sum and mean start
 * their accumulators at +0, so -0.0 sums to 0.0: the copy adds +0 too (PyTorch's results). */
static int
size_one_kind(RedKind kind)
{
    return kind == R_SUM || kind == R_MEAN || kind == R_PROD || kind == R_MAX ||
           kind == R_MIN || kind == R_ARGMAX || kind == R_ARGMIN;
}

/* -0.0 -> +0.0 in the contiguous floating t (x + 0 in its dtype; NaN stays NaN) */
static void
positive_zeros(PtlTensorImpl *t)
{
    int64_t n = t->numel;
    if (t->dtype == PTL_DTYPE_FLOAT32) {
        float *p = (float *)ptl_tensor_data(t);
        for (int64_t i = 0; i < n; i++) {
            p[i] += 0.0f;
        }
    }
    else if (t->dtype == PTL_DTYPE_FLOAT64) {
        double *p = (double *)ptl_tensor_data(t);
        for (int64_t i = 0; i < n; i++) {
            p[i] += 0.0;
        }
    }
    else {   /* float16, bfloat16: the sign bit of a zero */
        uint16_t *p = (uint16_t *)ptl_tensor_data(t);
        for (int64_t i = 0; i < n; i++) {
            p[i] = p[i] == 0x8000 ? 0 : p[i];
        }
    }
}

/* reduce_run for size_one_kind(kind) when every dim in mask has size 1 (Note [Reductions
 * over dims of size one]) */
static int
reduce_size_one(RedKind kind, PtlTensorImpl *in, uint32_t mask, PtlTensorImpl *out0,
                PtlTensorImpl *out1)
{
    PtlTensorImpl *values = kind == R_ARGMAX || kind == R_ARGMIN ? (out1 ? out0 : NULL) : out0;
    PtlTensorImpl *index = kind == R_ARGMAX || kind == R_ARGMIN ? (out1 ? out1 : out0) : out1;
    if (values != NULL) {
        int64_t strides[PTL_MAX_DIMS];
        int n = 0;
        for (int d = 0; d < in->dim; d++) {
            if (!(mask & (1u << d)) || values->dim == in->dim) {
                strides[n++] = in->strides[d];
            }
        }
        PtlTensorImpl *v = ptl_tensor_impl_view(in, values->dim, values->sizes, strides,
                                                in->storage_offset);
        int rc = v != NULL ? ptl_copy_into(values, v) : -1;
        ptl_xdecref(v);
        if (rc < 0) {
            return -1;
        }
        if ((kind == R_SUM || kind == R_MEAN) && ptl_dtype_is_floating(values->dtype)) {
            positive_zeros(values);
        }
    }
    if (index != NULL) {
        memset(ptl_tensor_data(index), 0, (size_t)index->numel * ptl_tensor_itemsize(index));
    }
    return 0;
}

/* Reduces `in` over the dims in mask into out0 (and out1), which have the output's
 * element count and are contiguous.  p: norm's order; correction: var's. */
static int
reduce_run(RedKind kind, PtlTensorImpl *in, uint32_t mask, int keep_order, PtlTensorImpl *out0,
           PtlTensorImpl *out1, double p, double correction, int take_sqrt)
{
    Plan pl;
    ChunkJob *job = NULL;
    int rc = 0, nt = ptl_get_num_threads();
    if (in->device.type == PTL_DEVICE_META) {   /* the outputs are made; there is no data */
        return 0;
    }
    pl.kind = kind;
    pl.dt = in->dtype;
    pl.use_int = ptl_dtype_is_integral(in->dtype, 1);
    pl.base = ptl_tensor_data(in);
    pl.out0 = ptl_tensor_data(out0);
    pl.odt0 = out0->dtype;
    pl.out1 = out1 ? ptl_tensor_data(out1) : NULL;
    pl.odt1 = out1 ? out1->dtype : PTL_DTYPE_UNDEFINED;
    pl.take_sqrt = take_sqrt;
    plan_dims(&pl, in, mask, keep_order);
    pl.p = kind == R_NORM && pl.R == 1 && p != 0 ? 1 : p;   /* Note [Norm of one element] */
    pl.correction = pl.R == 0 ? 0 : correction;   /* var of nothing: nan, as PyTorch's */
    if (pl.nout == 0) {
        return 0;
    }
    if (pl.R == 1 && size_one_kind(kind) && in->device.type == PTL_DEVICE_CPU &&
        !ptl_device_reduce_emulation) {
        return reduce_size_one(kind, in, mask, out0, out1);
    }
    if ((in->device.type == PTL_DEVICE_CUDA || ptl_device_reduce_emulation) &&
        ptl_device_reduce_hook != NULL && (kind == R_MINMAX || cuda_kind(kind) >= 0)) {
        return reduce_cuda(&pl);
    }
    void *token = in->numel >= PTL_GRAIN_SIZE ? ptl_nogil_begin() : NULL;
    int64_t isz = (int64_t)ptl_tensor_itemsize(in);
    int by_columns = kind == R_SUM || kind == R_NANSUM || kind == R_MEAN;
    /* float sums too: their runs' bits depend on where the runs start (Note [Float sums in
     * blocks]) */
    int fixed_chunks = kind == R_LSE || kind == R_PROD ||
                       ((kind == R_SUM || kind == R_MEAN) && !pl.use_int && !IS_LOWP(pl.dt));
    int fp_columns = column_fold_kind(kind, pl.dt, p);
    /* logsumexp's columns: the softmax kernels, where this CPU has them (asked with w = 0) */
    fp_columns |= kind == R_LSE && ptl_softmax_expsum_cols(pl.dt, pl.base, 0, 0, 0, NULL, NULL);
    if ((by_columns || fp_columns) && pl.nk > 0 && pl.nr == 1 &&
        pl.kstride[pl.nk - 1] == isz && pl.ksize[pl.nk - 1] >= 16 &&
        llabs(pl.rstride[0]) > isz && pl.R > 1) {
        /* column blocks of at most COL_BLOCK, narrower when that leaves threads idle */
        int64_t cols = pl.ksize[pl.nk - 1], outer = pl.nout / cols;
        int64_t per = (cols * outer < nt ? 1 : (cols * outer + nt - 1) / nt) + 63;
        pl.cw = per / 64 * 64 < COL_BLOCK ? per / 64 * 64 : COL_BLOCK;
        int64_t units = outer * ((cols + pl.cw - 1) / pl.cw);
        int64_t grain = PTL_GRAIN_SIZE / (pl.R * pl.cw) + 1;
        rc = ptl_parallel_for(0, units, grain, reduce_columns, &pl);
    }
    else if ((fixed_chunks ? pl.nout == 1 : pl.nout < nt) && pl.R >= 2 * PTL_GRAIN_SIZE) {
        /* few outputs, long reductions: split each reduction over the threads (logsumexp's,
         * prod's and the float sums' one output into the same chunks whatever the thread
         * count, so the same bits) */
        if ((job = malloc(sizeof(*job))) == NULL) {
            ptl_nogil_end(token);
            return ptl_error_set(PTL_ERR_MEMORY, "out of memory");
        }
        int64_t nchunks = pl.R / PTL_GRAIN_SIZE < MAX_CHUNKS ? pl.R / PTL_GRAIN_SIZE : MAX_CHUNKS;
        nchunks = nchunks < 4 * nt || fixed_chunks ? nchunks : 4 * nt;
        job->pl = &pl;
        job->chunk = (pl.R + nchunks - 1) / nchunks;
        nchunks = (pl.R + job->chunk - 1) / job->chunk;
        for (int64_t o = 0; o < pl.nout && rc == 0; o++) {
            job->p = kept_ptr(&pl, o);
            rc = ptl_parallel_for(0, nchunks, 1, reduce_chunks, job);
            for (int64_t c = 1; c < nchunks && rc == 0; c++) {
                acc_combine(&pl, &job->parts[0], &job->parts[c]);
            }
            if (rc == 0) {
                acc_finish(&pl, &job->parts[0], o);
            }
        }
        free(job);
    }
    else {
        int64_t grain = PTL_GRAIN_SIZE / (pl.R > 0 ? pl.R : 1) + 1;
        rc = ptl_parallel_for(0, pl.nout, grain, reduce_outputs, &pl);
    }
    ptl_nogil_end(token);
    return rc;
}

/* ---- argument handling ---- */

/* The reduced-dim mask of an int[]? argument (None: every dim; an empty list: every dim
 * when empty_all, else none).  Repeated dims are PyTorch's error. */
static int
dims_mask(const PtlTensorImpl *t, const PtlIValue *v, int empty_all, uint32_t *mask)
{
    uint32_t all = t->dim >= 32 ? 0xffffffffu : (1u << t->dim) - 1;
    if (v->tag == PTL_IV_NONE || (v->tag == PTL_IV_INTLIST && v->u.il.n == 0 && empty_all)) {
        *mask = all;
        return 0;
    }
    *mask = 0;
    if (v->tag == PTL_IV_INT) {
        int64_t d = v->u.i;
        if (ptl_wrap_dim(&d, t->dim) < 0) {
            return -1;
        }
        *mask = (1u << d) & all;
        return 0;
    }
    uint32_t seen = 0;
    for (int64_t k = 0; k < v->u.il.n; k++) {
        int64_t d = v->u.il.data[k];
        if (ptl_wrap_dim(&d, t->dim) < 0) {
            return -1;
        }
        if (seen & (1u << d)) {
            return ptl_error_set(PTL_ERR_RUNTIME, "dim %lld appears multiple times in the list "
                                 "of dims", (long long)d);
        }
        seen |= 1u << d;
    }
    *mask = seen & all;
    return 0;
}

/* A new contiguous output of in's shape reduced over mask. */
static PtlTensorImpl *
reduced_empty(const PtlTensorImpl *in, uint32_t mask, int keepdim, PtlDtype dt)
{
    int64_t sizes[PTL_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < in->dim; d++) {
        if (!(mask & (1u << d))) {
            sizes[n++] = in->sizes[d];
        }
        else if (keepdim) {
            sizes[n++] = 1;
        }
    }
    return ptl_empty(n, sizes, dt, in->device);
}

/* Allocates the outputs, reduces and writes them to s[0] (and s[1]).  odt1 UNDEFINED: one
 * output. */
static int
reduce_into(PtlIValue *s, RedKind kind, PtlTensorImpl *in, uint32_t mask, int keepdim,
            PtlDtype odt0, PtlDtype odt1, double p, double correction, int take_sqrt)
{
    PtlTensorImpl *out0 = NULL, *out1 = NULL;
    int keep_order = kind == R_ARGMAX || kind == R_ARGMIN;
    if ((out0 = reduced_empty(in, mask, keepdim, odt0)) == NULL) {
        goto error;
    }
    if (odt1 != PTL_DTYPE_UNDEFINED && (out1 = reduced_empty(in, mask, keepdim, odt1)) == NULL) {
        goto error;
    }
    if (reduce_run(kind, in, mask, keep_order, out0, out1, p, correction, take_sqrt) < 0) {
        goto error;
    }
    s[0] = ptl_iv_tensor(out0);
    if (out1 != NULL) {
        s[1] = ptl_iv_tensor(out1);
    }
    return 0;
error:
    ptl_xdecref(out0);
    ptl_xdecref(out1);
    return -1;
}

/* IndexError "<name>(): Expected reduction dim 1 to have non-zero size." for the first
 * empty reduced dim; fmt names the op. */
static int
check_nonempty_dims(const PtlTensorImpl *in, uint32_t mask, const char *name)
{
    for (int d = 0; d < in->dim; d++) {
        if ((mask & (1u << d)) && in->sizes[d] == 0) {
            return ptl_error_set(PTL_ERR_INDEX,
                                 "%s Expected reduction dim %d to have non-zero size.", name, d);
        }
    }
    return 0;
}

static PtlDtype
opt_dtype(const PtlIValue *v)
{
    return v->tag == PTL_IV_DTYPE ? v->u.dtype : PTL_DTYPE_UNDEFINED;
}

/* ---- kernels ---- */

/* The result dtype of sum and prod: dtype= when given, else int64 for integer and bool
 * inputs and self's dtype for the others. */
static PtlDtype
sum_out_dtype(const PtlTensorImpl *self, PtlDtype dt)
{
    if (dt != PTL_DTYPE_UNDEFINED) {
        return dt;
    }
    return ptl_dtype_is_integral(self->dtype, 1) ? PTL_DTYPE_INT64 : self->dtype;
}

/* What sum and prod reduce: self cast to dtype= when that is given and differs, else self
 * (new ref either way; NULL with the error set). */
static PtlTensorImpl *
sum_input(PtlTensorImpl *self, PtlDtype dt)
{
    if (dt != PTL_DTYPE_UNDEFINED && dt != self->dtype) {
        return ptl_cast(self, dt);
    }
    ptl_incref(self);
    return self;
}

/* sum(Tensor self, *, ScalarType? dtype=None) -> Tensor
 * sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None)
 * nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None)
 * mean(Tensor self, *, ScalarType? dtype=None), mean.dim(... like sum.dim_IntList)
 * prod(Tensor self, *, ScalarType? dtype=None) -> Tensor
 * prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None)
 * [*] -> reduced; integer and bool sums and products give int64 unless dtype= says so */
static int
sum_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *in = NULL;
    int has_dim = op->id != PTL_OP_sum && op->id != PTL_OP_mean && op->id != PTL_OP_prod;
    int is_mean = op->id == PTL_OP_mean || op->id == PTL_OP_mean_dim;
    int is_prod = op->id == PTL_OP_prod || op->id == PTL_OP_prod_dim_int;
    PtlDtype dt = opt_dtype(&s[has_dim ? 3 : 1]);
    RedKind kind = is_mean ? R_MEAN : is_prod ? R_PROD : op->id == PTL_OP_nansum ? R_NANSUM : R_SUM;
    PtlIValue all = ptl_iv_none();
    uint32_t mask;

    if (is_mean && dt == PTL_DTYPE_UNDEFINED && !ptl_dtype_is_floating(self->dtype)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "mean(): could not infer output dtype. Input dtype must be either "
                             "a floating point or complex dtype. Got: %s",
                             ptl_dtype_legacy_name(self->dtype));
    }
    if (is_mean && dt != PTL_DTYPE_UNDEFINED && !ptl_dtype_is_floating(dt)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "mean(): could not infer output dtype. Optional dtype must be "
                             "either a floating point or complex dtype. Got: %s",
                             ptl_dtype_legacy_name(dt));
    }
    if (dims_mask(self, has_dim ? &s[1] : &all, 1, &mask) < 0 ||
        (in = sum_input(self, dt)) == NULL) {
        return -1;
    }
    int rc = reduce_into(s, kind, in, mask, has_dim && s[2].u.b, sum_out_dtype(self, dt),
                         PTL_DTYPE_UNDEFINED, 0, 0, 0);
    ptl_decref(in);
    return rc;
}

/* amax / amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor  (empty: all dims)
 * max / min(Tensor self) -> Tensor */
static int
amax_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int full = op->id == PTL_OP_max || op->id == PTL_OP_min;
    int is_max = op->id == PTL_OP_max || op->id == PTL_OP_amax;
    const char *name = op->id == PTL_OP_max ? "max" : op->id == PTL_OP_min ? "min"
                       : is_max            ? "amax" : "amin";
    PtlIValue all = ptl_iv_none();
    uint32_t mask;
    char buf[16];
    if (dims_mask(self, full ? &all : &s[1], 1, &mask) < 0) {
        return -1;
    }
    if (self->numel == 0 && (full || s[1].u.il.n == 0)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "%s(): Expected reduction dim to be specified for input.numel() "
                             "== 0. Specify the reduction dim with the 'dim' argument.", name);
    }
    snprintf(buf, sizeof(buf), "%s():", name);
    if (check_nonempty_dims(self, mask, buf) < 0) {
        return -1;
    }
    return reduce_into(s, is_max ? R_MAX : R_MIN, self, mask, !full && s[2].u.b, self->dtype,
                       PTL_DTYPE_UNDEFINED, 0, 0, 0);
}

/* max.dim / min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
 * argmax / argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor  (None: flattened) */
static int
argmax_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int is_arg = op->id == PTL_OP_argmax || op->id == PTL_OP_argmin;
    int is_max = op->id == PTL_OP_argmax || op->id == PTL_OP_max_dim;
    const char *name = op->id == PTL_OP_argmax ? "argmax" : op->id == PTL_OP_argmin ? "argmin"
                       : is_max                ? "max" : "min";
    uint32_t mask;
    char buf[16];
    if (is_arg && self->dtype == PTL_DTYPE_BOOL) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s(): does not support bool input", name);
    }
    if (dims_mask(self, &s[1], 1, &mask) < 0) {
        return -1;
    }
    if (s[1].tag == PTL_IV_NONE && self->numel == 0) {
        return ptl_error_set(PTL_ERR_INDEX,
                             "%s(): Expected reduction dim to be specified for input.numel() "
                             "== 0.", name);
    }
    snprintf(buf, sizeof(buf), "%s():", name);
    if (check_nonempty_dims(self, mask, buf) < 0) {
        return -1;
    }
    return reduce_into(s, is_max ? R_ARGMAX : R_ARGMIN, self, mask, s[2].u.b,
                       is_arg ? PTL_DTYPE_INT64 : self->dtype,
                       is_arg ? PTL_DTYPE_UNDEFINED : PTL_DTYPE_INT64, 0, 0, 0);
}

/* all / any(Tensor self), .dim(Tensor self, int dim, bool keepdim=False),
 * .dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor  (bool; uint8 stays
 * uint8; an empty dims list reduces nothing) */
static int
all_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int full = op->id == PTL_OP_all || op->id == PTL_OP_any;
    int is_all = op->id == PTL_OP_all || op->id == PTL_OP_all_dim || op->id == PTL_OP_all_dims;
    PtlIValue none = ptl_iv_none();
    uint32_t mask;
    if (dims_mask(self, full ? &none : &s[1], 0, &mask) < 0) {
        return -1;
    }
    return reduce_into(s, is_all ? R_ALL : R_ANY, self, mask, !full && s[2].u.b,
                       self->dtype == PTL_DTYPE_UINT8 ? PTL_DTYPE_UINT8 : PTL_DTYPE_BOOL,
                       PTL_DTYPE_UNDEFINED, 0, 0, 0);
}

/* count_nonzero.dim_IntList(Tensor self, int[] dim), count_nonzero(Tensor self, int? dim=None)
 * -> int64.  A whole contiguous CPU tensor of bool, uint8, float32 or float64 is counted by
 * ptl_red_count_nonzero_contiguous: through the generic reduction each element became a double first
 * (1e6 bools 0.51x PyTorch's time, float32 0.79x). */
static int
count_nonzero_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    PtlDtype dt = self->dtype;
    if (op->id == PTL_OP_count_nonzero && s[1].tag == PTL_IV_NONE &&
        self->device.type == PTL_DEVICE_CPU && ptl_tensor_is_contiguous(self) &&
        (dt == PTL_DTYPE_BOOL || dt == PTL_DTYPE_UINT8 || dt == PTL_DTYPE_FLOAT32 ||
         dt == PTL_DTYPE_FLOAT64)) {
        PtlTensorImpl *out = ptl_empty(0, NULL, PTL_DTYPE_INT64, self->device);
        if (out == NULL) {
            return -1;
        }
        *(int64_t *)ptl_tensor_data(out) =
            ptl_red_count_nonzero_contiguous(dt, ptl_tensor_data(self), self->numel);
        s[0] = ptl_iv_tensor(out);
        return 0;
    }
    uint32_t mask;
    if (dims_mask(s[0].u.t, &s[1], 1, &mask) < 0) {
        return -1;
    }
    return reduce_into(s, R_COUNT, s[0].u.t, mask, 0, PTL_DTYPE_INT64, PTL_DTYPE_UNDEFINED, 0,
                       0, 0);
}

/* var / std / var_mean / std_mean in their three overloads:
 *   (Tensor self, bool unbiased=True)
 *   .dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False)
 *   .correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) */
static int
var_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    const char *name = strstr(op->schema.name, "::") + 2;
    int with_mean = strstr(name, "_mean") != NULL, is_std = name[0] == 's';
    int plain = s[1].tag == PTL_IV_BOOL;
    int is_corr = op->id == PTL_OP_var_correction || op->id == PTL_OP_std_correction ||
                  op->id == PTL_OP_var_mean_correction || op->id == PTL_OP_std_mean_correction;
    PtlIValue all = ptl_iv_none();
    double correction;
    uint32_t mask;
    int keepdim;

    if (!ptl_dtype_is_floating(self->dtype)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s only support floating point and complex dtypes",
                             with_mean ? (is_std ? "std_mean" : "var_mean") : "std and var");
    }
    if (plain) {
        correction = s[1].u.b ? 1 : 0;
        keepdim = 0;
    }
    else if (is_corr) {
        correction = s[2].tag == PTL_IV_NONE ? 1 : ptl_iv_to_double(&s[2]);
        keepdim = s[3].u.b;
    }
    else {
        correction = s[2].u.b ? 1 : 0;
        keepdim = s[3].u.b;
    }
    if (dims_mask(self, plain ? &all : &s[1], 1, &mask) < 0) {
        return -1;
    }
    int64_t n = 1;
    for (int d = 0; d < self->dim; d++) {
        n *= (mask & (1u << d)) ? self->sizes[d] : 1;
    }
    if ((double)n - correction <= 0) {
        ptl_warn("%.*s(): degrees of freedom is <= 0. Correction should be strictly less than "
                 "the reduction factor (input numel divided by output numel).",
                 (int)strcspn(name, "."), name);
    }
    return reduce_into(s, R_VAR, self, mask, keepdim, self->dtype,
                       with_mean ? self->dtype : PTL_DTYPE_UNDEFINED, 0, correction, is_std);
}

/* norm.Scalar(Tensor self, Scalar p=2) -> Tensor
 * norm.ScalarOpt_dim(Tensor self, Scalar? p, int[1] dim, bool keepdim=False) -> Tensor */
static int
norm_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int full = op->id == PTL_OP_norm_Scalar;
    double p = s[1].tag == PTL_IV_NONE ? 2 : ptl_iv_to_double(&s[1]);
    PtlIValue all = ptl_iv_none();
    uint32_t mask;
    if (!ptl_dtype_is_floating(self->dtype)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "linalg.vector_norm: Expected a floating point or complex tensor "
                             "as input. Got %s", ptl_dtype_legacy_name(self->dtype));
    }
    if (dims_mask(self, full ? &all : &s[2], 1, &mask) < 0) {
        return -1;
    }
    if (self->numel == 0 && (p < 0 || p == INFINITY)) {
        if (full || s[2].u.il.n == 0) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "linalg.vector_norm cannot compute the %g norm on an empty "
                                 "tensor because the operation does not have an identity", p);
        }
        for (int d = 0; d < self->dim; d++) {
            if ((mask & (1u << d)) && self->sizes[d] == 0) {
                return ptl_error_set(PTL_ERR_RUNTIME,
                                     "linalg.vector_norm cannot compute the %g norm on the "
                                     "dimension %dbecause this dimension is empty and the "
                                     "operation does not have an identity", p, d);
            }
        }
    }
    return reduce_into(s, R_NORM, self, mask, !full && s[3].u.b, self->dtype,
                       PTL_DTYPE_UNDEFINED, p, 0, 0);
}

/* logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor  (integers: default
 * float dtype) */
static int
logsumexp_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *in;
    uint32_t mask;
    if (dims_mask(self, &s[1], 1, &mask) < 0) {
        return -1;
    }
    if (!ptl_dtype_is_floating(self->dtype)) {
        if ((in = ptl_cast(self, ptl_default_dtype())) == NULL) {
            return -1;
        }
    }
    else {
        ptl_incref(self);
        in = self;
    }
    int rc = reduce_into(s, R_LSE, in, mask, s[2].u.b, in->dtype, PTL_DTYPE_UNDEFINED, 0, 0, 0);
    ptl_decref(in);
    return rc;
}

/* aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> (Tensor min, Tensor max) */
static int
aminmax_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    uint32_t mask;
    if (dims_mask(self, &s[1], 1, &mask) < 0) {
        return -1;
    }
    if (s[1].tag == PTL_IV_NONE && self->numel == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "aminmax(): cannot compute aminmax over an empty dimension as the "
                             "operation has no identity.");
    }
    if (check_nonempty_dims(self, mask, "aminmax:") < 0) {
        return -1;
    }
    return reduce_into(s, R_MINMAX, self, mask, s[2].u.b, self->dtype, self->dtype, 0, 0, 0);
}

static const PtlKernelReg reduce_cpu[] = {
    {PTL_OP_sum, PTL_KEY_CPU, sum_cpu},
    {PTL_OP_sum_dim_IntList, PTL_KEY_CPU, sum_cpu},
    {PTL_OP_nansum, PTL_KEY_CPU, sum_cpu},
    {PTL_OP_mean, PTL_KEY_CPU, sum_cpu},
    {PTL_OP_mean_dim, PTL_KEY_CPU, sum_cpu},
    {PTL_OP_prod, PTL_KEY_CPU, sum_cpu},
    {PTL_OP_prod_dim_int, PTL_KEY_CPU, sum_cpu},
    {PTL_OP_amax, PTL_KEY_CPU, amax_cpu},
    {PTL_OP_amin, PTL_KEY_CPU, amax_cpu},
    {PTL_OP_max, PTL_KEY_CPU, amax_cpu},
    {PTL_OP_min, PTL_KEY_CPU, amax_cpu},
    {PTL_OP_max_dim, PTL_KEY_CPU, argmax_cpu},
    {PTL_OP_min_dim, PTL_KEY_CPU, argmax_cpu},
    {PTL_OP_argmax, PTL_KEY_CPU, argmax_cpu},
    {PTL_OP_argmin, PTL_KEY_CPU, argmax_cpu},
    {PTL_OP_all, PTL_KEY_CPU, all_cpu},
    {PTL_OP_all_dim, PTL_KEY_CPU, all_cpu},
    {PTL_OP_all_dims, PTL_KEY_CPU, all_cpu},
    {PTL_OP_any, PTL_KEY_CPU, all_cpu},
    {PTL_OP_any_dim, PTL_KEY_CPU, all_cpu},
    {PTL_OP_any_dims, PTL_KEY_CPU, all_cpu},
    {PTL_OP_var, PTL_KEY_CPU, var_cpu},
    {PTL_OP_var_dim, PTL_KEY_CPU, var_cpu},
    {PTL_OP_var_correction, PTL_KEY_CPU, var_cpu},
    {PTL_OP_std, PTL_KEY_CPU, var_cpu},
    {PTL_OP_std_dim, PTL_KEY_CPU, var_cpu},
    {PTL_OP_std_correction, PTL_KEY_CPU, var_cpu},
    {PTL_OP_var_mean, PTL_KEY_CPU, var_cpu},
    {PTL_OP_var_mean_dim, PTL_KEY_CPU, var_cpu},
    {PTL_OP_var_mean_correction, PTL_KEY_CPU, var_cpu},
    {PTL_OP_std_mean, PTL_KEY_CPU, var_cpu},
    {PTL_OP_std_mean_dim, PTL_KEY_CPU, var_cpu},
    {PTL_OP_std_mean_correction, PTL_KEY_CPU, var_cpu},
    {PTL_OP_norm_Scalar, PTL_KEY_CPU, norm_cpu},
    {PTL_OP_norm_ScalarOpt_dim, PTL_KEY_CPU, norm_cpu},
    {PTL_OP_logsumexp, PTL_KEY_CPU, logsumexp_cpu},
    {PTL_OP_count_nonzero_dim_IntList, PTL_KEY_CPU, count_nonzero_cpu},
    {PTL_OP_count_nonzero, PTL_KEY_CPU, count_nonzero_cpu},
    {PTL_OP_aminmax, PTL_KEY_CPU, aminmax_cpu},
};
PTL_DEFINE_REGISTER(reduce_cpu)

