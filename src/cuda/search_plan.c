/* search_plan.c -- the host side of the searchsorted kernel, in every build: the entry point
 * summary.c calls for CUDA tensors through device_search.h's hook, and the kernel's
 * emulation on the host (the same per-thread function and grid loop as search.cu).  See Note
 * [CUDA searchsorted] in search_plan.h. */
#include "search_plan.h"

static void
search_one(const void *ctx, int64_t i, int64_t *status)
{
    (void)status;
    ptl_search_at(ctx, i);
}

int
ptl_cuda_search(const PtlDeviceSearchArgs *a)
{
    PtlCudaReduceTuning tuning = ptl_cuda_reduce_tuning();
    PtlCudaNnPlan elems = ptl_cuda_elems_plan(a->n, &tuning);
    if (a->n == 0) {
        return 0;
    }
    if (ptl_device_reduce_emulation) {
        ptl_cuda_kernel_emulation_ran(PTL_CUDA_EMU_SEARCH);
        ptl_cuda_emulate_elems(&elems, a->n, search_one, a, NULL);
        return 0;
    }
    return ptl_cuda_search_launch(a, &elems);
}
