/* reduce_kernels.h -- the vector loops of the reductions (reduce_kernels.c), for reduce.c. */
#ifndef PTL_ATEN_NATIVE_REDUCE_KERNELS_H
#define PTL_ATEN_NATIVE_REDUCE_KERNELS_H

#include <stdint.h>

#include "../../c10/dtype.h"

#define PTL_RED_COL_BLOCK 2048   /* outputs per column-reduction unit */
#define PTL_RED_COL_GROUP 32     /* float32 rows summed in float before the double add */
#define PTL_RED_SUM_RUNS 64      /* runs a ptl_red_sum_runs call of reduce.c takes at most */

/* The sum, in double, of the contiguous float32 (dt) or float64 run p[0..n). */
double ptl_red_sum_contiguous(PtlDtype dt, const char *p, int64_t n);
/* sums[r] = ptl_red_sum_contiguous(dt, p + r * step, n) for r < runs, the same bits
 * (Note [Sums of many runs]) */
void ptl_red_sum_runs(PtlDtype dt, const char *p, int64_t step, int64_t n, int64_t runs,
                      double *sums);
/* Its maximum (is_max) or minimum; NaN when the run holds one. */
double ptl_red_maxmin_contiguous(PtlDtype dt, const char *p, int64_t n, int is_max);
/* The sum of x^2 (square) or |x| of the run, in double. */
double ptl_red_powsum_contiguous(PtlDtype dt, const char *p, int64_t n, int square);
/* acc[k] += the sum of the nrows float32 rows x, x + rs, ... (k < n <= PTL_RED_COL_BLOCK). */
void ptl_red_add_rows_f4(double *acc, const char *x, int64_t rs, int64_t nrows, int64_t n,
                         int avx2);
/* acc[k] += x[k] (k < n). */
void ptl_red_add_row_f8(double *acc, const double *x, int64_t n, int avx2);

#endif
