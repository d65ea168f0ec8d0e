/* pool_plan.c -- the host side of the pooling kernels, in every build: the entry point
 * pool.c calls for CUDA tensors through device_pool.h's hook, and the kernels' emulation on
 * the host (the same per-element functions in pool.cu's grid-stride order).  Note [CUDA
 * pooling] in pool_plan.h. */
#include "pool_plan.h"

#include "cuda_api.h"

static void
forward_at(const void *a, int64_t e, int64_t *ws)
{
    (void)ws;
    ptl_pool_forward_at(a, e);
}

static void
backward_at(const void *a, int64_t e, int64_t *ws)
{
    (void)ws;
    ptl_pool_backward_at(a, e);
}

int
ptl_cuda_pool(const PtlDevicePoolArgs *a)
{
    PtlCudaReduceTuning tuning = ptl_cuda_reduce_tuning();
    const int backward = a->kind == PTL_DEVICE_POOL_MAX_BACKWARD ||
                         a->kind == PTL_DEVICE_POOL_AVG_BACKWARD;
    const int64_t *sz = backward ? a->in : a->out;
    const int64_t n = a->planes * sz[0] * sz[1] * sz[2];
    PtlCudaNnPlan p = ptl_cuda_elems_plan(n, &tuning);
    if (n == 0) {
        return 0;
    }
    if (!ptl_device_reduce_emulation) {
        return ptl_cuda_pool_launch(a, &p);
    }
    ptl_cuda_kernel_emulation_ran(PTL_CUDA_EMU_POOL);
    ptl_cuda_emulate_elems(&p, n, backward ? backward_at : forward_at, a, NULL);
    return 0;
}
