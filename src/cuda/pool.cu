// pool.cu -- the max and average pooling kernels (forward, and the input gradient as a
// gather): one thread per output element, or per input-gradient element, in grid-stride
// loops; max_unpool's claim, fill and gather (Note [CUDA max_unpool]).  The plan comes from
// pool_plan.c and the per-element work from pool_plan.h (Note [CUDA pooling] there), which
// the host emulation runs in the CPU tests.
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_api.h"
#include "launch_check.h"
#include "pool_plan.h"

__global__ void
pool_forward(PtlDevicePoolArgs a, int64_t n)
{
    PTL_GRID_LOOP(e, n)
    {
        ptl_pool_forward_at(&a, e);
    }
}

__global__ void
pool_backward(PtlDevicePoolArgs a, int64_t n)
{
    PTL_GRID_LOOP(e, n)
    {
        ptl_pool_backward_at(&a, e);
    }
}

extern "C" int
ptl_cuda_pool_launch(const PtlDevicePoolArgs *a, const PtlCudaNnPlan *plan)
{
    cudaStream_t stream = ptl_cuda_launch_stream();
    if (a->kind == PTL_DEVICE_POOL_MAX_BACKWARD || a->kind == PTL_DEVICE_POOL_AVG_BACKWARD) {
        const int64_t n = a->planes * a->in[0] * a->in[1] * a->in[2];
        pool_backward<<<(unsigned)plan->grid, (unsigned)plan->block, 0, stream>>>(*a, n);
    }
    else {
        const int64_t n = a->planes * a->out[0] * a->out[1] * a->out[2];
        pool_forward<<<(unsigned)plan->grid, (unsigned)plan->block, 0, stream>>>(*a, n);
    }
    PTL_CUDA_CHECK_LAUNCH();
    return 0;
}

__global__ void
unpool_claim(PtlDevicePoolArgs a, int64_t n, int64_t *ws)
{
    PTL_GRID_LOOP(e, n)
    {
        ptl_unpool_claim_at(&a, e, ws);
    }
}

__global__ void
unpool_fill(PtlDevicePoolArgs a, int64_t n, int64_t *ws)
{
    PTL_GRID_LOOP(e, n)
    {
        ptl_unpool_fill_at(&a, e, ws);
    }
}

__global__ void
unpool_gather(PtlDevicePoolArgs a, int64_t n, int64_t *ws)
{
    PTL_GRID_LOOP(e, n)
    {
        ptl_unpool_gather_at(&a, e, ws);
    }
}

extern "C" int
ptl_cuda_unpool_launch(const PtlDevicePoolArgs *a, const PtlCudaNnPlan *src,
                       const PtlCudaNnPlan *dst, int64_t *ws)
{
    cudaStream_t stream = ptl_cuda_launch_stream();
    const int64_t nsrc = a->planes * a->out[0] * a->out[1] * a->out[2];
    const int64_t ndst = a->planes * a->in[0] * a->in[1] * a->in[2];
    if (a->kind == PTL_DEVICE_POOL_UNPOOL_BACKWARD) {
        if (nsrc > 0) {
            unpool_gather<<<(unsigned)src->grid, (unsigned)src->block, 0, stream>>>(*a, nsrc,
                                                                                   ws);
            PTL_CUDA_CHECK_LAUNCH();
        }
        return 0;
    }
    if (nsrc > 0) {
        unpool_claim<<<(unsigned)src->grid, (unsigned)src->block, 0, stream>>>(*a, nsrc, ws);
        PTL_CUDA_CHECK_LAUNCH();
    }
    if (ndst > 0) {
        unpool_fill<<<(unsigned)dst->grid, (unsigned)dst->block, 0, stream>>>(*a, ndst, ws);
        PTL_CUDA_CHECK_LAUNCH();
    }
    return 0;
}
