/* reduce_plan.h -- the plan of a CPU reduction (Note [Reduction plan] in reduce.c), shared by
 * reduce.c, reduce_runs.c (the outputs that are each one contiguous run) and
 * reduce_columns.c (column reductions stored straight out). */
#ifndef PTL_ATEN_NATIVE_REDUCE_PLAN_H
#define PTL_ATEN_NATIVE_REDUCE_PLAN_H

#include <stdint.h>

#include "../../c10/dtype.h"
#include "../../c10/macros.h"

#define IS_LOWP(DT) ((DT) == PTL_DTYPE_FLOAT16 || (DT) == PTL_DTYPE_BFLOAT16)

typedef enum RedKind {
    R_SUM, R_NANSUM, R_MEAN, R_PROD, R_MAX, R_MIN, R_ARGMAX, R_ARGMIN, R_ALL, R_ANY,
    R_COUNT, R_VAR, R_NORM, R_LSE, R_MINMAX,   /* ORDER RedKind: cuda_kind's table */
} RedKind;

typedef struct Plan {
    RedKind kind;
    PtlDtype dt;             /* input dtype */
    int use_int;             /* integral or bool input: exact int64 path */
    const char *base;        /* input data */
    int nk;                  /* kept dims, output order */
    int64_t ksize[PTL_MAX_DIMS], kstride[PTL_MAX_DIMS];   /* input strides in bytes */
    int nr;                  /* reduced dims, outermost first; the last one is the run */
    int64_t rsize[PTL_MAX_DIMS], rstride[PTL_MAX_DIMS];
    int64_t nout, R;         /* output elements, reduced elements per output */
    char *out0, *out1;       /* contiguous outputs (out1 may be NULL) */
    PtlDtype odt0, odt1;
    double p;                /* norm's order */
    double correction;       /* var's */
    int take_sqrt;           /* std */
    int64_t cw;              /* column reductions: outputs per work unit */
} Plan;

/* Input address of the first reduced element of output o. */
static inline const char *
kept_ptr(const Plan *pl, int64_t o)
{
    const char *p = pl->base;
    for (int d = pl->nk - 1; d >= 0; d--) {
        p += (o % pl->ksize[d]) * pl->kstride[d];
        o /= pl->ksize[d];
    }
    return p;
}

/* Whether the kept dims tile evenly: output o's first element is then base + o * *step */
static inline int
kept_even(const Plan *pl, int64_t *step)
{
    int even = 1;
    for (int d = 0; d + 1 < pl->nk; d++) {
        even &= pl->kstride[d] == pl->kstride[d + 1] * pl->ksize[d + 1];
    }
    *step = pl->nk > 0 ? pl->kstride[pl->nk - 1] : 0;
    return even;
}

/* Reduces the outputs [b, e) of pl and returns 1 when each is one contiguous run that
 * reduce_runs.c folds by itself (Note [Runs without accumulators]); 0, touching nothing,
 * otherwise. */
int ptl_red_runs(const Plan *pl, int64_t b, int64_t e);
/* Outputs o0 + k = sd[k] (k < m; sd is scratch), divided by R for a mean, in the output's
 * dtype: the column reductions' sums and float32 products (reduce_runs.c) */
void ptl_red_put_columns(const Plan *pl, int64_t o0, double *sd, int64_t m);
/* Outputs o0 .. o0 + m of a column plan (pl->nr == 1) from the R rows at p, stored by
 * reduce_columns.c's kernels when one takes pl's kind and dtype (float32 prod, amax and
 * amin of few rows; float64 amax and amin of up to 16 rows; integer, float16 and bfloat16
 * amax and amin; integer sums into int64; float32 sums and means of up to 32 rows, float64
 * of any count; all and any): 1 then, else 0 and nothing done */
int ptl_red_columns_put(const Plan *pl, int64_t o0, const char *p, int64_t m);
/* The sums and means of the outputs [b, e) of a plan whose outputs are the 2 to 15 columns
 * of strided rows (reduce_columns.c, Notes [Sums of narrow columns] and [Float32 sums of
 * narrow columns]): 1 then, else 0 and nothing done */
int ptl_red_narrow_columns(const Plan *pl, int64_t b, int64_t e);
/* all and any of reduce_truth.c (Note [Truth of bits]) into their one-byte outputs: the
 * outputs [b, e) of a plan whose outputs are each one contiguous run, or the column plan's
 * outputs o0 .. o0 + m (m <= PTL_RED_COL_BLOCK) from the R rows at p; 1 then, else 0 and
 * nothing done */
int ptl_red_truth_runs(const Plan *pl, int64_t b, int64_t e);
int ptl_red_truth_columns(const Plan *pl, int64_t o0, const char *p, int64_t m);

#endif
