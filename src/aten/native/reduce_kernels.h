/* reduce_kernels.h -- the vector loops of the reductions (reduce_kernels.c), for reduce.c. */
#ifndef PTL_ATEN_NATIVE_REDUCE_KERNELS_H
#define PTL_ATEN_NATIVE_REDUCE_KERNELS_H

#include <stdint.h>

#include "../../c10/dtype.h"

#define PTL_RED_COL_BLOCK 2048   /* outputs per column-reduction unit */
#define PTL_RED_COL_GROUP 32     /* float32 rows summed in float before the double add */
#define PTL_RED_SUM_RUNS 64      /* runs a ptl_red_sum_runs call of reduce_runs.c takes */

/* The sum, in double, of the contiguous float32 (dt) or float64 run p[0..n). */
double ptl_red_sum_contiguous(PtlDtype dt, const char *p, int64_t n);
/* The nonzero elements of x[0..n) of dtype dt (bool, uint8, float32 or float64: a NaN counts,
 * -0.0 does not), in a typed loop that vectorizes */
int64_t ptl_red_count_nonzero_contiguous(PtlDtype dt, const void *x, int64_t n);
/* sums[r] = ptl_red_sum_contiguous(dt, p + r * step, n) for r < runs, the same bits
 * (Note [Sums of many runs]) */
void ptl_red_sum_runs(PtlDtype dt, const char *p, int64_t step, int64_t n, int64_t runs,
                      double *sums);
/* Its maximum (is_max) or minimum; NaN when the run holds one. */
double ptl_red_maxmin_contiguous(PtlDtype dt, const char *p, int64_t n, int is_max);
/* The sum of x^2 (square) or |x| of the run, in double. */
double ptl_red_powsum_contiguous(PtlDtype dt, const char *p, int64_t n, int square);
/* d[r] = ptl_red_powsum_contiguous(dt, p + r * step, n, square) (r < runs), the run's loop
 * inlined, and 1 where the CPU has AVX2; 0, touching nothing, otherwise */
int ptl_red_powsum_runs(PtlDtype dt, const char *p, int64_t step, int64_t n, int64_t runs,
                        int square, double *d);
/* acc[k] += the sum of the nrows float32 rows x, x + rs, ... (k < n <= PTL_RED_COL_BLOCK). */
void ptl_red_add_rows_f4(double *acc, const char *x, int64_t rs, int64_t nrows, int64_t n,
                         int avx2);
/* acc[k] += x[k] (k < n). */
void ptl_red_add_row_f8(double *acc, const double *x, int64_t n, int avx2);
/* o[k] = v[k] / n rounded to float32 (k < m): the float32 means of column sums */
void ptl_red_mean_store_f4(float *o, const double *v, int64_t m, int64_t n);

/* The column folds of float32/float64 other than the sums: a block of m outputs folded row
 * after row (R rows rs bytes apart) into val (and the row of each extreme into at). */
typedef enum PtlRedColOp {
    PTL_RED_COL_MAX, PTL_RED_COL_MIN, PTL_RED_COL_ARGMAX, PTL_RED_COL_ARGMIN, PTL_RED_COL_PROD,
    PTL_RED_COL_NORM1, PTL_RED_COL_NORM2,
} PtlRedColOp;
void ptl_red_column_fold(PtlDtype dt, PtlRedColOp op, const char *p, int64_t rs, int64_t R,
                         int64_t m, double *val, int64_t *at, int avx2);

/* float16 / bfloat16 (dt) runs, Note [Half-precision sums]: the sum of the contiguous run
 * p[0..n), its maximum (is_max) or minimum (NaN when it holds one; n > 0), and acc[k] += the
 * sum of the nrows rows x, x + rs, ... (k < n <= PTL_RED_COL_BLOCK) */
double ptl_red_sum_lowp(PtlDtype dt, const char *p, int64_t n);
double ptl_red_maxmin_lowp(PtlDtype dt, const char *p, int64_t n, int is_max);
/* val[k] = the extreme of column k of the R rows p, p + rs, ... (NaN when it holds one) */
void ptl_red_maxmin_rows_lowp(double *val, PtlDtype dt, const char *p, int64_t rs, int64_t R,
                              int64_t n, int is_max);
/* The first k with p[k] == v (or NaN, v NaN) of the run, n - 1 when there is none */
int64_t ptl_red_find_lowp(PtlDtype dt, const char *p, int64_t n, double v);
void ptl_red_add_rows_lowp(double *acc, PtlDtype dt, const char *x, int64_t rs, int64_t nrows,
                           int64_t n);
/* Note [Half-precision products]: the product of the run p[0], p[st], ... (n values), and
 * val[k] = the product of column k of the R rows p, p + rs, ... (k < n) */
double ptl_red_prod_lowp(PtlDtype dt, const char *p, int64_t st, int64_t n);
void ptl_red_prod_rows_lowp(double *val, PtlDtype dt, const char *p, int64_t rs, int64_t R,
                            int64_t n);
/* The same for float32, in float32 lanes (reduce_prod.c, Note [Float32 products]) */
double ptl_red_prod_run_f4(const char *p, int64_t st, int64_t n);
/* out[r] = the product of the contiguous run at p + r * step (n values, r < runs) */
void ptl_red_prod_runs_f4(const char *p, int64_t step, int64_t n, int64_t runs, float *out);
void ptl_red_prod_rows_f4(double *val, const char *p, int64_t rs, int64_t R, int64_t n);
/* out[k] = the same product, stored as float32, when prod_few_rows takes it (1 <= R <= 64, n
 * >= 16; from 16 rows that share L1 sets, staged 256 columns at a time): 1 then, else 0
 * and nothing done */
int ptl_red_prod_rows_f4_put(float *out, const char *p, int64_t rs, int64_t R, int64_t n);
/* out[k] = the float32 result of op (PTL_RED_COL_PROD: ptl_red_prod_rows_f4_put's; MAX, MIN:
 * the column fold's values, Note [Column extremes in registers] in reduce_columns.c) over
 * column k of the R float32 rows p, p + rs, ... (k < n) when a kernel that stores float32
 * takes it: 1 then, else 0 and nothing done */
int ptl_red_rows_f4_put(PtlRedColOp op, float *out, const char *p, int64_t rs, int64_t R,
                        int64_t n);

/* Integer and bool (dt) runs, exact (reduce_kernels_int.c): the wrapping int64 sum and
 * product of the contiguous run p[0..n), its maximum (is_max) or minimum (n > 0), acc[k] +=
 * the sum of column k of the R rows p, p + rs, ... (k < n), and best[k] = the extreme of
 * column k of those rows (R > 0, k < n <= PTL_RED_COL_BLOCK), at[k] its first row where at is
 * not NULL */
int64_t ptl_red_sum_int(PtlDtype dt, const char *p, int64_t n);
/* out[r] = ptl_red_sum_int(dt, p + r * step, n) (r < runs), the run's loop inlined */
void ptl_red_sum_runs_int(PtlDtype dt, const char *p, int64_t step, int64_t n, int64_t runs,
                          int64_t *out);
int64_t ptl_red_prod_int(PtlDtype dt, const char *p, int64_t n);
int64_t ptl_red_maxmin_int(PtlDtype dt, const char *p, int64_t n, int is_max);
/* out[r] = ptl_red_maxmin_int(dt, p + r * step, n, is_max) in dt (r < runs) and 1 where the
 * CPU has AVX2 and a run fills a vector; 0, touching nothing, otherwise */
int ptl_red_maxmin_runs_int(PtlDtype dt, const char *p, int64_t step, int64_t n, int64_t runs,
                            int is_max, char *out);
/* The first k with p[k] == v, n - 1 when there is none */
int64_t ptl_red_find_int(PtlDtype dt, const char *p, int64_t n, int64_t v);
void ptl_red_add_rows_int(int64_t *acc, PtlDtype dt, const char *p, int64_t rs, int64_t R,
                          int64_t n);
void ptl_red_maxmin_rows_int(int64_t *best, int64_t *at, PtlDtype dt, const char *p, int64_t rs,
                             int64_t R, int64_t n, int is_max);

#endif
