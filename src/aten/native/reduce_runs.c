/* reduce_runs.c -- the CPU reductions whose outputs are each one contiguous run (over the
 * last dim, or trailing dims that merge): float sums and means a block of runs at a time
 * (Note [Sums of many runs]), and the extremes, integer sums and norms that a run's kernel
 * gives by itself (Note [Runs without accumulators]).  The plan is reduce.c's. */
#include <math.h>

#include "../../c10/cpu_features.h"
#include "../loops.h"
#include "native.h"
#include "reduce_kernels.h"
#include "reduce_plan.h"
#include "vec_math.h"

/* Whether output o's reduced elements are one contiguous float32/float64 run summed into an
 * output of the input's dtype (sum or mean over trailing dims: x.mean((2, 3)) of NCHW), which
 * sum_runs computes without reduce_outputs' per-output walk. */
static int
is_sum_runs(const Plan *pl)
{
    return (pl->kind == R_SUM || pl->kind == R_MEAN) &&
           (pl->dt == PTL_DTYPE_FLOAT32 || pl->dt == PTL_DTYPE_FLOAT64) &&
           pl->odt0 == pl->dt && pl->nr == 1 &&
           pl->rstride[0] == (int64_t)ptl_dtype_itemsize(pl->dt);
}

/* out[k] = 0 + sums[k] (k < m; a -0 sum is +0, as acc_finish gives), divided by R for a
 * mean, in the output's dtype dt: loops without branches, which the clones divide four at a
 * time (one division after another, a quarter of a 8 x 8 mean's time) */
PTL_LOOP_CLONES static void
put_sums(const double *sums, int64_t m, int mean, double R, PtlDtype dt, char *out)
{
    if (dt == PTL_DTYPE_FLOAT32 && mean) {
        for (int64_t k = 0; k < m; k++) {
            ((float *)out)[k] = (float)((0.0 + sums[k]) / R);
        }
    }
    else if (dt == PTL_DTYPE_FLOAT32) {
        for (int64_t k = 0; k < m; k++) {
            ((float *)out)[k] = (float)(0.0 + sums[k]);
        }
    }
    else if (mean) {
        for (int64_t k = 0; k < m; k++) {
            ((double *)out)[k] = (0.0 + sums[k]) / R;
        }
    }
    else {
        for (int64_t k = 0; k < m; k++) {
            ((double *)out)[k] = 0.0 + sums[k];
        }
    }
}

/* (reduce_plan.h) what acc_finish stores, in typed loops whose divisions go in vectors (a
 * call an output had been 8% of float16 sum(0) of 1000 x 1000, 40% of a channels_last
 * x.mean((2, 3)) of 8 x 8 planes; a division at a time, with the loop's test of the kind,
 * 15% of it: 0.95 -> 1.1x PyTorch's time, one thread) */
PTL_LOOP_CLONES void
ptl_red_put_columns(const Plan *pl, int64_t o0, double *restrict sd, int64_t m)
{
    const double R = (double)pl->R;
    float *restrict o = (float *)pl->out0 + o0;
    if (pl->odt0 == PTL_DTYPE_FLOAT32 && pl->kind == R_MEAN) {
        ptl_red_mean_store_f4(o, sd, m, pl->R);
        return;
    }
    if (pl->odt0 == PTL_DTYPE_FLOAT32) {
        for (int64_t k = 0; k < m; k++) {
            o[k] = (float)sd[k];
        }
        return;
    }
    if (pl->kind == R_MEAN) {
        for (int64_t k = 0; k < m; k++) {
            sd[k] = sd[k] / R;
        }
    }
    int64_t item = (int64_t)ptl_dtype_itemsize(pl->odt0);
    char *io[2] = {pl->out0 + o0 * item, (char *)sd};
    int64_t st[2] = {item, sizeof(double)};
    ptl_cast_loop(pl->odt0, PTL_DTYPE_FLOAT64)(io, st, m, NULL);
}

/* reduce_outputs for is_sum_runs plans: the bits of acc_init, fold_run and acc_finish (0 +
 * the run's sum, mean: / R) without kept_ptr's index walk and the dispatch (half of a 7 x 7
 * run's time); evenly tiled kept dims step by one stride, PTL_RED_SUM_RUNS runs a call. */
static void
sum_runs(const Plan *pl, int64_t b, int64_t e)
{
    int64_t step;
    int even = kept_even(pl, &step);
    double sums[PTL_RED_SUM_RUNS];
    for (int64_t o0 = b, m; o0 < e; o0 += m) {
        m = !even ? 1 : e - o0 < PTL_RED_SUM_RUNS ? e - o0 : PTL_RED_SUM_RUNS;
        ptl_red_sum_runs(pl->dt, even ? pl->base + o0 * step : kept_ptr(pl, o0), step, pl->R, m,
                         sums);
        put_sums(sums, m, pl->kind == R_MEAN, (double)pl->R, pl->dt,   /* typed stores: */
                 pl->out0 + o0 * (int64_t)ptl_dtype_itemsize(pl->dt)); /* put's switch cost 25% */
    }
}

/* Note [Runs without accumulators]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * When every output's reduced elements are one contiguous run (a reduction over the last
 * dim, or over trailing dims that merge) and the run's kernel gives the result by itself,
 * fold_runs calls that kernel output after output and stores its result: float/integer
 * amax/amin, integer sums, the float 1- and 2-norms and the float32, float16 and bfloat16
 * products (their lanes, Notes [Float32 products] and [Half-precision products]; prod(A, 1)
 * of 1000 x 1000 float32 spent a third of its time around the kernel).  The way through acc_init,
 * fold_range (two divisions a run), fold_run's dispatch and acc_finish's stores cost 15-25 ns
 * an output: amax(-1) of 4096 x 1024 float32 at 0.75-0.85x PyTorch's time, of 15625 x 64 at
 * 0.2x.  The kernels and their order are the same, so are the bits.  The integer extremes and
 * the integer sums into int64 go further: a block of outputs is one call, whose loop over the
 * runs has the run's kernel inlined (ptl_red_maxmin_runs_int, ptl_red_sum_runs_int; the
 * call, the capability check and the dtype switch a row had cost as much as the 8 vectors of
 * a row of 64 int32, and sum(1) of 100000 x 16 int64 took 590 us against 270 now). */
typedef enum RunFold { RUN_NONE, RUN_EXTREME, RUN_SUM_INT, RUN_NORM, RUN_PROD } RunFold;

static RunFold
run_fold(const Plan *pl)
{
    int fp = pl->dt == PTL_DTYPE_FLOAT32 || pl->dt == PTL_DTYPE_FLOAT64;
    if (pl->nr != 1 || pl->rstride[0] != (int64_t)ptl_dtype_itemsize(pl->dt)) {
        return RUN_NONE;
    }
    if ((pl->kind == R_MAX || pl->kind == R_MIN) && pl->R > 0 &&
        (fp || pl->use_int || IS_LOWP(pl->dt))) {
        return RUN_EXTREME;
    }
    if ((pl->kind == R_SUM || pl->kind == R_NANSUM) && pl->use_int) {
        return RUN_SUM_INT;
    }
    if (pl->kind == R_PROD && (pl->dt == PTL_DTYPE_FLOAT32 || IS_LOWP(pl->dt))) {
        return RUN_PROD;
    }
    return pl->kind == R_NORM && (pl->p == 2 || pl->p == 1) && fp ? RUN_NORM : RUN_NONE;
}

static void
fold_runs(const Plan *pl, RunFold how, int64_t b, int64_t e)
{
    int64_t step, R = pl->R;
    int even = kept_even(pl, &step), is_max = pl->kind == R_MAX;
    if (how == RUN_EXTREME && pl->use_int && even && pl->odt0 == pl->dt &&
        ptl_red_maxmin_runs_int(pl->dt, pl->base + b * step, step, R, e - b, is_max,
                                pl->out0 + b * (int64_t)ptl_dtype_itemsize(pl->dt))) {
        return;
    }
    if (how == RUN_SUM_INT && even && pl->odt0 == PTL_DTYPE_INT64) {
        ptl_red_sum_runs_int(pl->dt, pl->base + b * step, step, R, e - b,
                             (int64_t *)pl->out0 + b);
        return;
    }
    if (how == RUN_PROD && pl->dt == PTL_DTYPE_FLOAT32 && even &&
        pl->odt0 == PTL_DTYPE_FLOAT32) {
        ptl_red_prod_runs_f4(pl->base + b * step, step, R, e - b, (float *)pl->out0 + b);
        return;
    }
    for (int64_t o = b; o < e; o++) {
        const char *p = even ? pl->base + o * step : kept_ptr(pl, o);
        int64_t iv = 0;
        double dv = 0;
        if (how == RUN_SUM_INT) {
            iv = ptl_red_sum_int(pl->dt, p, R);
        }
        else if (how == RUN_PROD) {
            dv = ptl_red_prod_lowp(pl->dt, p, pl->rstride[0], R);
        }
        else if (how == RUN_NORM) {
            dv = 0.0 + ptl_red_powsum_contiguous(pl->dt, p, R, pl->p == 2);
            dv = pl->p == 2 ? sqrt(dv) : dv;
        }
        else if (pl->use_int) {
            iv = ptl_red_maxmin_int(pl->dt, p, R, is_max);
        }
        else {
            dv = IS_LOWP(pl->dt) ? ptl_red_maxmin_lowp(pl->dt, p, R, is_max)
                                 : ptl_red_maxmin_contiguous(pl->dt, p, R, is_max);
        }
        if (pl->odt0 == PTL_DTYPE_FLOAT32 && !pl->use_int) {   /* typed stores, no switch */
            ((float *)pl->out0)[o] = (float)dv;
        }
        else if (pl->odt0 == PTL_DTYPE_FLOAT64 && !pl->use_int) {
            ((double *)pl->out0)[o] = dv;
        }
        else if (pl->odt0 == PTL_DTYPE_INT64 && pl->use_int) {
            ((int64_t *)pl->out0)[o] = iv;
        }
        else if (pl->odt0 == PTL_DTYPE_INT32 && pl->use_int) {   /* int32, 8-bit, bool extremes */
            ((int32_t *)pl->out0)[o] = (int32_t)iv;
        }
        else if (pl->use_int && pl->odt0 == pl->dt && ptl_dtype_itemsize(pl->dt) == 1) {
            ((uint8_t *)pl->out0)[o] = (uint8_t)iv;
        }
        else if (pl->use_int) {
            ptl_store_int(pl->out0 + o * (int64_t)ptl_dtype_itemsize(pl->odt0), pl->odt0, iv);
        }
        else {
            ptl_store_double(pl->out0 + o * (int64_t)ptl_dtype_itemsize(pl->odt0), pl->odt0, dv);
        }
    }
}

/* Note [Extremes of short runs]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Runs of up to SHORT_EXTREME_RUN values (amax(1), amin(1), argmax(1), argmin(1) of 65536 x 2
 * to 16) take a loop over the runs with the run's length a constant (a case for each length)
 * and the run's values compared in a register: amax and amin of float32, float64 and the
 * integers keep the extreme value (a NaN, once seen, stays: nothing compares greater than
 * it, and a NaN replaces a number), argmax and argmin keep the extreme's position (the first
 * of equal values, the first NaN); float16 and bfloat16 runs are cast to float32 256 at a
 * time and their extremes cast back.  The same values as the run kernels of Note
 * [Runs without accumulators] (the vector chains, a call a run: 7-9 ns a run, amax(1) of
 * 65536 x 2 float32 at 0.19x PyTorch's time, int32 0.14x, float16 0.12x; argmax(1)
 * 0.10-0.32x, one thread), and of -0.0 and +0.0 the first, as PyTorch's (the float64 chain
 * had given the last of 5). */
#define SHORT_EXTREME_RUN 16

/* out[o] = the extreme (is_max: the largest) of the run x + o * step, x[0..n) (o < m, 1 <= n);
 * T compares itself (a float or an integer type); n a constant in the cases below */
#define DEFINE_SHORT_EXTREMES(T)                                                             \
    static inline __attribute__((always_inline)) void                                        \
    short_extremes_body_##T(T *out, const char *x, int64_t step, int64_t n, int64_t m,        \
                            int is_max)                                                       \
    {                                                                                         \
        for (int64_t o = 0; o < m; o++) {                                                     \
            const T *v = (const T *)(x + o * step);                                           \
            T best = v[0];                                                                    \
            for (int64_t k = 1; k < n; k++) {                                                 \
                T y = v[k];                                                                   \
                int take = (is_max ? y > best : y < best) | (y != y);                         \
                best = take ? y : best;                                                       \
            }                                                                                 \
            out[o] = best;                                                                    \
        }                                                                                     \
    }                                                                                         \
    PTL_LOOP_CLONES static void                                                              \
    short_extremes_##T(T *out, const char *x, int64_t step, int64_t n, int64_t m, int is_max) \
    {                                                                                         \
        switch (n * 2 + is_max) {                                                             \
            SHORT_CASES(T, short_extremes_body_##T, out)                                      \
        default: short_extremes_body_##T(out, x, step, n, m, is_max); return;                 \
        }                                                                                     \
    }
/* The cases of n = 2..16 and is_max = 0, 1 of a switch over n * 2 + is_max */
#define SHORT_CASE(T, BODY, OUT, N)                                                          \
    case 2 * (N): BODY(OUT, x, step, N, m, 0); return;                                        \
    case 2 * (N) + 1: BODY(OUT, x, step, N, m, 1); return;
#define SHORT_CASES(T, BODY, OUT)                                                            \
    SHORT_CASE(T, BODY, OUT, 2) SHORT_CASE(T, BODY, OUT, 3) SHORT_CASE(T, BODY, OUT, 4)      \
    SHORT_CASE(T, BODY, OUT, 5) SHORT_CASE(T, BODY, OUT, 6) SHORT_CASE(T, BODY, OUT, 7)      \
    SHORT_CASE(T, BODY, OUT, 8) SHORT_CASE(T, BODY, OUT, 9) SHORT_CASE(T, BODY, OUT, 10)     \
    SHORT_CASE(T, BODY, OUT, 11) SHORT_CASE(T, BODY, OUT, 12) SHORT_CASE(T, BODY, OUT, 13)   \
    SHORT_CASE(T, BODY, OUT, 14) SHORT_CASE(T, BODY, OUT, 15) SHORT_CASE(T, BODY, OUT, 16)
DEFINE_SHORT_EXTREMES(float)
DEFINE_SHORT_EXTREMES(double)
DEFINE_SHORT_EXTREMES(uint8_t)
DEFINE_SHORT_EXTREMES(int8_t)
DEFINE_SHORT_EXTREMES(int16_t)
DEFINE_SHORT_EXTREMES(int32_t)
DEFINE_SHORT_EXTREMES(int64_t)
#undef DEFINE_SHORT_EXTREMES

/* idx[o] = the position of the extreme of the run x + o * step, x[0..n) of type T (the
 * first of equal values, the first NaN): the comparisons with || and &&, on which GCC
 * branches, as it does for any form tried (| and &: 12 ns a run of 4; the extreme and then
 * its position, integer selects only: 9 ns); the branches are cheaper than both from 4
 * values on */
#define DEFINE_SHORT_ARG(T)                                                                   \
    static inline __attribute__((always_inline)) void                                        \
    short_arg_body_##T(int64_t *idx, const char *x, int64_t step, int64_t n, int64_t m,       \
                       int is_max)                                                            \
    {                                                                                         \
        for (int64_t o = 0; o < m; o++) {                                                     \
            const T *v = (const T *)(x + o * step);                                           \
            T best = v[0];                                                                    \
            int64_t at = 0;                                                                   \
            for (int64_t k = 1; k < n; k++) {                                                 \
                T y = v[k];                                                                   \
                int take = (is_max ? y > best : y < best) || (y != y && best == best);        \
                best = take ? y : best;                                                       \
                at = take ? k : at;                                                           \
            }                                                                                 \
            idx[o] = at;                                                                      \
        }                                                                                     \
    }                                                                                         \
    PTL_LOOP_CLONES static void                                                              \
    short_arg_##T(int64_t *idx, const char *x, int64_t step, int64_t n, int64_t m, int is_max)\
    {                                                                                         \
        switch (n * 2 + is_max) {                                                             \
            SHORT_CASES(T, short_arg_body_##T, idx)                                           \
        default: short_arg_body_##T(idx, x, step, n, m, is_max); return;                      \
        }                                                                                     \
    }
DEFINE_SHORT_ARG(float)
DEFINE_SHORT_ARG(double)
DEFINE_SHORT_ARG(uint8_t)
DEFINE_SHORT_ARG(int8_t)
DEFINE_SHORT_ARG(int16_t)
DEFINE_SHORT_ARG(int32_t)
DEFINE_SHORT_ARG(int64_t)
#undef DEFINE_SHORT_ARG
#undef SHORT_CASES
#undef SHORT_CASE

/* short_extremes for float16 and bfloat16 runs that follow one another (x, m runs of pl->R
 * values): SHORT_LOWP_RUNS runs at a time cast to float32 by the cast loops, their extremes
 * cast back (exact: each is one of the values) or their positions stored; returns 1 */
#define SHORT_LOWP_RUNS 256
static int
short_extremes_lowp(const Plan *pl, const char *x, char *out, int64_t m, int is_max, int arg)
{
    float rows[SHORT_LOWP_RUNS * SHORT_EXTREME_RUN], best[SHORT_LOWP_RUNS];
    int64_t R = pl->R, to_f4_st[2] = {sizeof(float), 2}, back_st[2] = {2, sizeof(float)};
    PtlLoop to_f4 = ptl_cast_loop(PTL_DTYPE_FLOAT32, pl->dt);
    PtlLoop back = ptl_cast_loop(pl->dt, PTL_DTYPE_FLOAT32);
    for (int64_t o0 = 0; o0 < m; o0 += SHORT_LOWP_RUNS) {
        int64_t mm = m - o0 < SHORT_LOWP_RUNS ? m - o0 : SHORT_LOWP_RUNS;
        char *io[2] = {(char *)rows, (char *)(x + o0 * R * 2)};
        char *bo[2] = {out + o0 * 2, (char *)best};
        const char *r = (const char *)rows;
        to_f4(io, to_f4_st, mm * R, NULL);
        if (arg) {
            short_arg_float((int64_t *)out + o0, r, R * (int64_t)sizeof(float), R, mm, is_max);
            continue;
        }
        short_extremes_float(best, r, R * (int64_t)sizeof(float), R, mm, is_max);
        back(bo, back_st, mm, NULL);
    }
    return 1;
}

/* reduce_outputs' outputs [b, e) of pl by the loops of Note [Extremes of short runs], when
 * they take pl: 1 then, else 0 and nothing done */
#define SHORT_EXT(T) short_extremes_##T((T *)out, x, step, pl->R, m, is_max)
static int
short_extremes(const Plan *pl, int64_t b, int64_t e)
{
    int64_t step, isz = (int64_t)ptl_dtype_itemsize(pl->dt), m = e - b;
    int ext = pl->kind == R_MAX || pl->kind == R_MIN;
    int arg = (pl->kind == R_ARGMAX || pl->kind == R_ARGMIN) && pl->out1 == NULL &&
              pl->odt0 == PTL_DTYPE_INT64;
    int is_max = pl->kind == R_MAX || pl->kind == R_ARGMAX;
    if (!(ext && pl->odt0 == pl->dt) && !arg) {
        return 0;
    }
    if (pl->nr != 1 || pl->rstride[0] != isz || pl->R < 2 || pl->R > SHORT_EXTREME_RUN ||
        !kept_even(pl, &step) || pl->dt == PTL_DTYPE_BOOL || ptl_dtype_is_complex(pl->dt)) {
        return 0;
    }
    const char *x = pl->base + b * step;
    char *out = pl->out0 + b * (int64_t)ptl_dtype_itemsize(pl->odt0);
    if (IS_LOWP(pl->dt)) {
        return step == pl->R * isz && short_extremes_lowp(pl, x, out, m, is_max, arg);
    }
    if (ext) {
        switch (pl->dt) {
        case PTL_DTYPE_FLOAT32: SHORT_EXT(float); return 1;
        case PTL_DTYPE_FLOAT64: SHORT_EXT(double); return 1;
        case PTL_DTYPE_UINT8: SHORT_EXT(uint8_t); return 1;
        case PTL_DTYPE_INT8: SHORT_EXT(int8_t); return 1;
        case PTL_DTYPE_INT16: SHORT_EXT(int16_t); return 1;
        case PTL_DTYPE_INT32: SHORT_EXT(int32_t); return 1;
        case PTL_DTYPE_INT64: SHORT_EXT(int64_t); return 1;
        default: return 0;
        }
    }
    int64_t *at = (int64_t *)out;
    switch (pl->dt) {
    case PTL_DTYPE_FLOAT32: short_arg_float(at, x, step, pl->R, m, is_max); return 1;
    case PTL_DTYPE_FLOAT64: short_arg_double(at, x, step, pl->R, m, is_max); return 1;
    case PTL_DTYPE_UINT8: short_arg_uint8_t(at, x, step, pl->R, m, is_max); return 1;
    case PTL_DTYPE_INT8: short_arg_int8_t(at, x, step, pl->R, m, is_max); return 1;
    case PTL_DTYPE_INT16: short_arg_int16_t(at, x, step, pl->R, m, is_max); return 1;
    case PTL_DTYPE_INT32: short_arg_int32_t(at, x, step, pl->R, m, is_max); return 1;
    case PTL_DTYPE_INT64: short_arg_int64_t(at, x, step, pl->R, m, is_max); return 1;
    default: return 0;
    }
}
#undef SHORT_EXT

/* Note [Half-precision sums of short runs]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A float16 or bfloat16 sum or mean of runs of up to SHORT_LOWP_SUM values gives the bits of
 * Note [Half-precision sums] (value k into float32 lane k, 0 + the value, the lanes folded
 * pairwise, lane k += lane k + w for w = 32, 16, ..., 1, the sum 0 + the fold in double,
 * divided by the count for a mean, cast to the dtype): the lanes past the run hold +0, which
 * changes no lane (a lane is never -0: 0 + -0 is +0), so the fold starts at w = 8 over 16
 * lanes, in registers, the run's length a constant.  SHORT_LOWP_RUNS runs at a time are cast
 * to float32, and their results stored by one cast loop call.  A call a run
 * (ptl_red_sum_lowp, the accumulator, a store through a switch) had cost 25 ns a run: sum(1)
 * of 65536 x 2 to 16 at 0.25-0.32x PyTorch's time, mean(1) 0.17-0.33x (one thread). */
#define SHORT_LOWP_SUM 16

/* The sum of v[0..n) in the lanes of Note [Half-precision sums of short runs] (n <= 16, a
 * constant): lane k += lane k + w only where lane k + w holds a value (the others hold +0,
 * which changes nothing), written out so that the lanes stay in registers (GCC's loops had
 * kept them in the stack for some n: 20 ns a run) */
static inline __attribute__((always_inline)) float
short_lowp_fold(const float *v, const int n)
{
    float l[16];
    for (int k = 0; k < 16; k++) {
        l[k] = k < n ? 0.0f + v[k] : 0.0f;
    }
#define FOLD(K, W)                                                                            \
    if ((K) + (W) < n) {                                                                      \
        l[K] += l[(K) + (W)];                                                                 \
    }
    FOLD(0, 8) FOLD(1, 8) FOLD(2, 8) FOLD(3, 8) FOLD(4, 8) FOLD(5, 8) FOLD(6, 8) FOLD(7, 8)
    FOLD(0, 4) FOLD(1, 4) FOLD(2, 4) FOLD(3, 4)
    FOLD(0, 2) FOLD(1, 2)
    FOLD(0, 1)
#undef FOLD
    return l[0];
}

/* d[o] = 0 + the sum of the run rows + o * n (o < m), divided by n when mean; n a constant in
 * the cases below */
static inline __attribute__((always_inline)) void
short_lowp_sums_body(double *d, const float *rows, const int n, int64_t m, int mean)
{
    for (int64_t o = 0; o < m; o++) {
        double s = 0.0 + (double)short_lowp_fold(rows + o * n, n);
        d[o] = mean ? s / n : s;
    }
}

PTL_LOOP_CLONES static void
short_lowp_sums(double *d, const float *rows, int64_t n, int64_t m, int mean)
{
    switch (n) {
#define SHORT_SUM_CASE(N)                                                                     \
    case N: short_lowp_sums_body(d, rows, N, m, mean); return;
        SHORT_SUM_CASE(1) SHORT_SUM_CASE(2) SHORT_SUM_CASE(3) SHORT_SUM_CASE(4)
        SHORT_SUM_CASE(5) SHORT_SUM_CASE(6) SHORT_SUM_CASE(7) SHORT_SUM_CASE(8)
        SHORT_SUM_CASE(9) SHORT_SUM_CASE(10) SHORT_SUM_CASE(11) SHORT_SUM_CASE(12)
        SHORT_SUM_CASE(13) SHORT_SUM_CASE(14) SHORT_SUM_CASE(15) SHORT_SUM_CASE(16)
#undef SHORT_SUM_CASE
    default: return;
    }
}

/* reduce_outputs' outputs [b, e) of pl by Note [Half-precision sums of short runs] when they
 * are such sums of runs that follow one another: 1 then, else 0 and nothing done */
static int
short_sums_lowp(const Plan *pl, int64_t b, int64_t e)
{
    int64_t step, R = pl->R;
    if ((pl->kind != R_SUM && pl->kind != R_MEAN) || !IS_LOWP(pl->dt) || pl->odt0 != pl->dt ||
        pl->nr != 1 || pl->rstride[0] != 2 || R < 1 || R > SHORT_LOWP_SUM ||
        !kept_even(pl, &step) || step != 2 * R) {
        return 0;
    }
    float rows[SHORT_LOWP_RUNS * SHORT_LOWP_SUM];
    double d[SHORT_LOWP_RUNS];
    int64_t to_f4_st[2] = {sizeof(float), 2}, out_st[2] = {2, sizeof(double)};
    PtlLoop to_f4 = ptl_cast_loop(PTL_DTYPE_FLOAT32, pl->dt);
    PtlLoop to_out = ptl_cast_loop(pl->dt, PTL_DTYPE_FLOAT64);
    for (int64_t o0 = b; o0 < e; o0 += SHORT_LOWP_RUNS) {
        int64_t mm = e - o0 < SHORT_LOWP_RUNS ? e - o0 : SHORT_LOWP_RUNS;
        char *in[2] = {(char *)rows, (char *)(pl->base + o0 * step)};
        char *out[2] = {pl->out0 + o0 * 2, (char *)d};
        to_f4(in, to_f4_st, mm * R, NULL);
        short_lowp_sums(d, rows, R, mm, pl->kind == R_MEAN);
        to_out(out, out_st, mm, NULL);
    }
    return 1;
}

/* Note [Norms of short runs]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The 1- and 2-norms of runs of up to SHORT_NORM_RUN values (x.norm(dim=1) of 65536 x 2 to
 * 16) take a loop over the runs with the run's length a constant, the sums of |x| or x^2
 * in double SHORT_NORM_RUNS runs at a time into a buffer, then one loop that takes their
 * square roots and stores them in the output's dtype, in vectors.  The float32 and float64
 * values are the bits of the kernel they replace (ptl_red_powsum_contiguous, a call a run:
 * Note [Runs without accumulators]): a run below 16 values is summed into lane 0 of its
 * sixteen lanes from +0, value after value, and a run of 16 fills each lane once and folds
 * them, lane k += lane k + 8, then ((0 + 1) + (2 + 3)) + ((4 + 5) + (6 + 7)), in vectors
 * where the CPU has AVX2.  float16 and bfloat16 runs are cast to float32 (exact) by the cast
 * loops SHORT_NORM_RUNS runs at a time and take float32's order: the same bits as step_d's
 * blocks (value after value from +0) below 16 values; a run of 16 now folds its lanes (a
 * different rounding of the double sum, which shows only where that sum lies within a
 * double's rounding of a midpoint between two float16 or bfloat16 values).  The result is 0 + the sum, its square root for the 2-norm, rounded once to the
 * output's dtype.  A call a run had cost float32 6 ns a run (0.59-0.89x PyTorch's time, one
 * thread), bfloat16's way through step_d's blocks 25 ns (0.15-0.33x).  Longer float32 and
 * float64 runs take the same buffer and roots with the run's kernel inlined in a loop over
 * the runs (ptl_red_powsum_runs, where the CPU has AVX2): its bits, without the call and
 * the capability check a run that had left 65536 x 17 float32 at 0.93x, 65536 x 24 at 0.61x. */
#define SHORT_NORM_RUN 16
#define SHORT_NORM_RUNS 256

/* |x| or x^2 (square) of a float32 or float64 value, in double */
static inline __attribute__((always_inline)) double
norm_term(double v, int square)
{
    return square ? v * v : fabs(v);
}

/* d[o] = the sum of the terms of the run x + o * step, x[0..n) of type T (o < m), in the order
 * of Note [Norms of short runs] (lanes: the sixteen lanes' fold for n == 16); n a constant
 * in the cases below */
#define DEFINE_SHORT_POWSUMS(T)                                                              \
    static inline __attribute__((always_inline)) void                                        \
    short_powsums_body_##T(double *d, const char *x, int64_t step, const int n, int64_t m,   \
                           int square)                                                        \
    {                                                                                         \
        for (int64_t o = 0; o < m; o++) {                                                     \
            const T *v = (const T *)(x + o * step);                                           \
            double l[SHORT_NORM_RUN], t = 0.0;                                                \
            if (n == SHORT_NORM_RUN) {                                                        \
                for (int k = 0; k < SHORT_NORM_RUN; k++) {                                    \
                    l[k] = norm_term((double)v[k], square);                                   \
                }                                                                             \
                for (int k = 0; k < 8; k++) {                                                 \
                    l[k] += l[k + 8];                                                         \
                }                                                                             \
                t = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));        \
            }                                                                                 \
            else {                                                                            \
                for (int k = 0; k < n; k++) {                                                 \
                    t += norm_term((double)v[k], square);                                     \
                }                                                                             \
            }                                                                                 \
            d[o] = t;                                                                         \
        }                                                                                     \
    }                                                                                         \
    PTL_LOOP_CLONES static void                                                              \
    short_powsums_##T(double *d, const char *x, int64_t step, int64_t n, int64_t m,           \
                      int square)                                                             \
    {                                                                                         \
        switch (n * 2 + square) {                                                             \
            SHORT_NORM_CASES(T)                                                               \
        default: short_powsums_body_##T(d, x, step, (int)n, m, square); return;               \
        }                                                                                     \
    }
#define SHORT_NORM_CASE(T, N)                                                                 \
    case 2 * (N): short_powsums_body_##T(d, x, step, N, m, 0); return;                        \
    case 2 * (N) + 1: short_powsums_body_##T(d, x, step, N, m, 1); return;
#define SHORT_NORM_CASES(T)                                                                   \
    SHORT_NORM_CASE(T, 1) SHORT_NORM_CASE(T, 2) SHORT_NORM_CASE(T, 3) SHORT_NORM_CASE(T, 4)  \
    SHORT_NORM_CASE(T, 5) SHORT_NORM_CASE(T, 6) SHORT_NORM_CASE(T, 7) SHORT_NORM_CASE(T, 8)  \
    SHORT_NORM_CASE(T, 9) SHORT_NORM_CASE(T, 10) SHORT_NORM_CASE(T, 11)                      \
    SHORT_NORM_CASE(T, 12) SHORT_NORM_CASE(T, 13) SHORT_NORM_CASE(T, 14)                     \
    SHORT_NORM_CASE(T, 15) SHORT_NORM_CASE(T, 16)
DEFINE_SHORT_POWSUMS(float)
DEFINE_SHORT_POWSUMS(double)
#undef SHORT_NORM_CASES
#undef SHORT_NORM_CASE
#undef DEFINE_SHORT_POWSUMS

#ifdef PTL_HAVE_AVX2_KERNELS
/* |x| or x^2 (square) of four doubles */
static inline __attribute__((always_inline)) PTL_AVX2 __m256d
norm_term4(__m256d v, int square)
{
    return square ? _mm256_mul_pd(v, v) : _mm256_andnot_pd(_mm256_set1_pd(-0.0), v);
}

/* short_powsums_body_T's sums of runs of 16 values (lanes) in vectors: lanes k and k + 8 in
 * lane k % 4 of a0 (k < 4) or a1, added, then ptl_red_powsum_contiguous's fold (a call a run
 * through GCC's code of the loop, which gathers values of 4 runs a vector, had cost 4.7 ns a
 * run) */
#define DEFINE_LANES16(T, LOAD4)                                                              \
    static inline __attribute__((always_inline)) PTL_AVX2 void                               \
    lanes16_body_##T(double *d, const char *x, int64_t step, int64_t m, int square)          \
    {                                                                                         \
        for (int64_t o = 0; o < m; o++) {                                                     \
            const T *v = (const T *)(x + o * step);                                           \
            __m256d a0 = norm_term4(LOAD4(v), square), a1 = norm_term4(LOAD4(v + 4), square);  \
            a0 = _mm256_add_pd(a0, norm_term4(LOAD4(v + 8), square));                         \
            a1 = _mm256_add_pd(a1, norm_term4(LOAD4(v + 12), square));                        \
            __m256d h = _mm256_hadd_pd(a0, a1);                                               \
            __m128d q = _mm_add_pd(_mm256_castpd256_pd128(h), _mm256_extractf128_pd(h, 1));   \
            d[o] = _mm_cvtsd_f64(_mm_add_sd(q, _mm_unpackhi_pd(q, q)));                       \
        }                                                                                     \
    }                                                                                         \
    PTL_AVX2 static void                                                                      \
    lanes16_##T(double *d, const char *x, int64_t step, int64_t m, int square)                \
    {                                                                                         \
        if (square) {                                                                         \
            lanes16_body_##T(d, x, step, m, 1);                                               \
        }                                                                                     \
        else {                                                                                \
            lanes16_body_##T(d, x, step, m, 0);                                               \
        }                                                                                     \
    }
#define LOAD4_F4(p) _mm256_cvtps_pd(_mm_loadu_ps(p))
DEFINE_LANES16(float, LOAD4_F4)
DEFINE_LANES16(double, _mm256_loadu_pd)
#undef LOAD4_F4
#undef DEFINE_LANES16
#endif

/* d[o] = 0 + d[o], its square root where root (o < m): the norms of the sums, in vectors */
PTL_LOOP_CLONES_WIDE static void
short_norm_roots(double *restrict d, int64_t m, int root)
{
    if (root) {
        for (int64_t o = 0; o < m; o++) {
            d[o] = sqrt(0.0 + d[o]);
        }
        return;
    }
    for (int64_t o = 0; o < m; o++) {
        d[o] = 0.0 + d[o];
    }
}

/* reduce_outputs' outputs [b, e) of pl by Note [Norms of short runs] when they are 1- or
 * 2-norms of runs of 1 to SHORT_NORM_RUN values (float16 and bfloat16: runs that follow one
 * another) into the input's dtype: 1 then, else 0 and nothing done */
static int
short_norms(const Plan *pl, int64_t b, int64_t e)
{
    int64_t step, R = pl->R, isz = (int64_t)ptl_dtype_itemsize(pl->dt);
    int lowp = IS_LOWP(pl->dt), square = pl->p == 2;
    if (pl->kind != R_NORM || (pl->p != 1 && pl->p != 2) || pl->odt0 != pl->dt ||
        (!lowp && pl->dt != PTL_DTYPE_FLOAT32 && pl->dt != PTL_DTYPE_FLOAT64) || pl->nr != 1 ||
        pl->rstride[0] != isz || R < 1 || (R > SHORT_NORM_RUN && lowp) ||
        !kept_even(pl, &step) || (lowp && step != R * isz)) {
        return 0;
    }
    if (R > SHORT_NORM_RUN && !ptl_red_powsum_runs(pl->dt, pl->base, 0, R, 0, square, NULL)) {
        return 0;   /* longer runs: the kernel's loop where the CPU has AVX2 */
    }
    float rows[SHORT_NORM_RUNS * SHORT_NORM_RUN];
    double d[SHORT_NORM_RUNS];
    int64_t to_f4_st[2] = {sizeof(float), isz}, out_st[2] = {isz, sizeof(double)};
    PtlLoop to_f4 = lowp ? ptl_cast_loop(PTL_DTYPE_FLOAT32, pl->dt) : NULL;
    PtlLoop to_out = ptl_cast_loop(pl->dt, PTL_DTYPE_FLOAT64);
    int lanes16 = 0;
#ifdef PTL_HAVE_AVX2_KERNELS
    lanes16 = R == SHORT_NORM_RUN && ptl_cpu_capability() >= PTL_CPU_AVX2;
#endif
    for (int64_t o0 = b; o0 < e; o0 += SHORT_NORM_RUNS) {
        int64_t mm = e - o0 < SHORT_NORM_RUNS ? e - o0 : SHORT_NORM_RUNS, xs = step;
        const char *x = pl->base + o0 * step;
        char *out[2] = {pl->out0 + o0 * isz, (char *)d};
        if (lowp) {   /* the runs as float32, one after another */
            char *in[2] = {(char *)rows, (char *)x};
            to_f4(in, to_f4_st, mm * R, NULL);
            x = (const char *)rows;
            xs = R * (int64_t)sizeof(float);
        }
        if (R > SHORT_NORM_RUN) {
            ptl_red_powsum_runs(pl->dt, x, xs, R, mm, square, d);
        }
        else if (lanes16 && pl->dt != PTL_DTYPE_FLOAT64) {
            lanes16_float(d, x, xs, mm, square);
        }
        else if (lanes16) {
            lanes16_double(d, x, xs, mm, square);
        }
        else if (pl->dt != PTL_DTYPE_FLOAT64) {
            short_powsums_float(d, x, xs, R, mm, square);
        }
        else {
            short_powsums_double(d, x, xs, R, mm, square);
        }
        short_norm_roots(d, mm, square);
        to_out(out, out_st, mm, NULL);
    }
    return 1;
}

/* out[o] = the sum of the integer run x + o * step, x[0..n) of type T, into int64 (wrapping
 * as PyTorch's: in uint64), for n of 1 to 16 each a loop of its own: a call a few runs
 * (ptl_red_sum_runs_int's loop, its length not a constant) had left sum(1) of 65536 x 2
 * int8, int32 and int64 at 0.73-0.89x PyTorch's time (one thread) */
#define DEFINE_SHORT_INT_SUMS(T)                                                              \
    static inline __attribute__((always_inline)) void                                        \
    short_isums_body_##T(int64_t *out, const char *x, int64_t step, int64_t n, int64_t m)     \
    {                                                                                         \
        for (int64_t o = 0; o < m; o++) {                                                     \
            const T *v = (const T *)(x + o * step);                                           \
            uint64_t sum = 0;                                                                 \
            for (int64_t k = 0; k < n; k++) {                                                 \
                sum += (uint64_t)v[k];                                                        \
            }                                                                                 \
            out[o] = (int64_t)sum;                                                            \
        }                                                                                     \
    }                                                                                         \
    PTL_LOOP_CLONES static void                                                              \
    short_isums_##T(int64_t *out, const char *x, int64_t step, int64_t n, int64_t m)          \
    {                                                                                         \
        switch (n) {                                                                          \
            ISUM_CASE(T, 1) ISUM_CASE(T, 2) ISUM_CASE(T, 3) ISUM_CASE(T, 4) ISUM_CASE(T, 5)  \
            ISUM_CASE(T, 6) ISUM_CASE(T, 7) ISUM_CASE(T, 8) ISUM_CASE(T, 16)                 \
        default: short_isums_body_##T(out, x, step, n, m); return;                            \
        }                                                                                     \
    }
#define ISUM_CASE(T, N)                                                                       \
    case N: short_isums_body_##T(out, x, step, N, m); return;
DEFINE_SHORT_INT_SUMS(uint8_t)
DEFINE_SHORT_INT_SUMS(int8_t)
DEFINE_SHORT_INT_SUMS(int16_t)
DEFINE_SHORT_INT_SUMS(int32_t)
DEFINE_SHORT_INT_SUMS(int64_t)
#undef ISUM_CASE
#undef DEFINE_SHORT_INT_SUMS

/* reduce_outputs' outputs [b, e) of pl by short_isums_T when they are integer sums into
 * int64 of contiguous runs of 1 to 16 values: 1 then, else 0 and nothing done */
static int
short_sums_int(const Plan *pl, int64_t b, int64_t e)
{
    int64_t step;
    if ((pl->kind != R_SUM && pl->kind != R_NANSUM) || !pl->use_int ||
        pl->odt0 != PTL_DTYPE_INT64 || pl->nr != 1 ||
        pl->rstride[0] != (int64_t)ptl_dtype_itemsize(pl->dt) || pl->R < 1 || pl->R > 16 ||
        !kept_even(pl, &step)) {
        return 0;
    }
    const char *x = pl->base + b * step;
    int64_t *out = (int64_t *)pl->out0 + b, R = pl->R, m = e - b;
    switch (pl->dt) {
    case PTL_DTYPE_BOOL:
    case PTL_DTYPE_UINT8: short_isums_uint8_t(out, x, step, R, m); return 1;
    case PTL_DTYPE_INT8: short_isums_int8_t(out, x, step, R, m); return 1;
    case PTL_DTYPE_INT16: short_isums_int16_t(out, x, step, R, m); return 1;
    case PTL_DTYPE_INT32: short_isums_int32_t(out, x, step, R, m); return 1;
    case PTL_DTYPE_INT64: short_isums_int64_t(out, x, step, R, m); return 1;
    default: return 0;
    }
}

int
ptl_red_runs(const Plan *pl, int64_t b, int64_t e)
{
    RunFold how = run_fold(pl);
    if (short_extremes(pl, b, e) || short_sums_lowp(pl, b, e) || short_sums_int(pl, b, e) ||
        short_norms(pl, b, e)) {
        return 1;
    }
    if (is_sum_runs(pl)) {
        sum_runs(pl, b, e);
        return 1;
    }
    if (how != RUN_NONE) {
        fold_runs(pl, how, b, e);
        return 1;
    }
    return 0;
}
