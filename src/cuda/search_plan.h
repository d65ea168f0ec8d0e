/* search_plan.h -- the per-thread work of the searchsorted kernel, compiled by nvcc for the
 * device (search.cu) and by gcc for the host (search_plan.c), whose emulation runs exactly
 * this function in the kernel's order.  Mirrors ATen/native/cuda/Bucketization.cu in
 * behaviour.
 *
 * Note [CUDA searchsorted]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * searchsorted and bucketize run summary.c's CPU kernel on the CUDA key: its checks, its
 * contiguous copies and its output; its last step hands the values to one kernel, a thread
 * per value running the CPU's binary search (the same comparisons: exact for two integer
 * dtypes, through double otherwise; PyTorch's !(b >= v) on the left and !(b > v) on the
 * right, so a NaN value lands at the end on both sides), so the results are the CPU's.  A
 * sorter is checked on the host first (its extremes read back: a synchronisation, only when
 * one is given), as a bad entry would read outside the row. */
#ifndef PTL_CUDA_SEARCH_PLAN_H
#define PTL_CUDA_SEARCH_PLAN_H

#include "../aten/native/device_search.h"
#include "../c10/dtype.h"
#include "cuda_api.h"

/* value i's position (Note [CUDA searchsorted]) */
PTL_HD static inline void
ptl_search_at(const PtlDeviceSearchArgs *a, int64_t i)
{
    const int64_t row = a->batched ? i / (a->per_row > 0 ? a->per_row : 1) : 0;
    const char *v = a->vals + i * a->vsz;
    int64_t lo = 0, hi = a->len;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        const int64_t at = row * a->len + (a->sorter != 0 ? a->sorter[row * a->len + mid] : mid);
        const char *b = a->bnd + at * a->bsz;
        int go;
        if (a->ints) {
            const int64_t x = ptl_load_int(b, (PtlDtype)a->bdt);
            const int64_t y = ptl_load_int(v, (PtlDtype)a->vdt);
            go = a->right ? !(x > y) : !(x >= y);
        }
        else {
            const double x = ptl_load_double(b, (PtlDtype)a->bdt);
            const double y = ptl_load_double(v, (PtlDtype)a->vdt);
            go = a->right ? !(x > y) : !(x >= y);
        }
        if (go) {
            lo = mid + 1;
        }
        else {
            hi = mid;
        }
    }
    if (a->odt == PTL_DTYPE_INT32) {
        ((int32_t *)a->out)[i] = (int32_t)lo;
    }
    else {
        ((int64_t *)a->out)[i] = lo;
    }
}

#ifdef __cplusplus
extern "C" {
#endif
/* searchsorted (summary.c's hook), on the device or emulated; 0, or -1 with an error set.
 * The launch (search.cu): elems covers a->n. */
int ptl_cuda_search(const PtlDeviceSearchArgs *a);
int ptl_cuda_search_launch(const PtlDeviceSearchArgs *a, const PtlCudaNnPlan *elems);
#ifdef __cplusplus
}
#endif

#endif
