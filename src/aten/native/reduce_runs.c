/* reduce_runs.c -- the CPU reductions whose outputs are each one contiguous run (over the
 * last dim, or trailing dims that merge): float sums and means a block of runs at a time
 * (Note [Sums of many runs]), and the extremes, integer sums and norms that a run's kernel
 * gives by itself (Note [Runs without accumulators]).  The plan is reduce.c's. */
#include <math.h>

#include "../loops.h"
#include "native.h"
#include "reduce_kernels.h"
#include "reduce_plan.h"

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

int
ptl_red_runs(const Plan *pl, int64_t b, int64_t e)
{
    RunFold how = run_fold(pl);
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
