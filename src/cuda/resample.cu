// resample.cu -- the pad and upsampling kernels, forward and backward (Note [CUDA
// resampling] in resample_plan.h): one thread per output element (forward) or per
// input-gradient element (backward, a gather).  The per-element arithmetic is
// resample_plan.h's, which the host emulation runs in the CPU tests; the maps come from
// resample.c through resample_plan.c.
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_api.h"
#include "launch_check.h"
#include "resample_plan.h"

__global__ void
resample_forward(PtlCudaResampleJob j, int64_t n)
{
    PTL_GRID_LOOP(e, n)
    {
        ptl_rs_forward_at(&j, e);
    }
}

__global__ void
resample_backward(PtlCudaResampleJob j, int64_t n)
{
    PTL_GRID_LOOP(e, n)
    {
        ptl_rs_backward_at(&j, e);
    }
}

extern "C" int
ptl_cuda_resample_launch(const PtlCudaResampleJob *j, const PtlCudaNnPlan *elems)
{
    const PtlDeviceResampleArgs *a = &j->a;
    const int64_t *sz = a->backward ? a->in : a->out;
    const int64_t n = a->planes * sz[0] * sz[1] * sz[2];
    cudaStream_t stream = ptl_cuda_launch_stream();
    if (a->backward) {
        resample_backward<<<(unsigned)elems->grid, (unsigned)elems->block, 0, stream>>>(*j, n);
    }
    else {
        resample_forward<<<(unsigned)elems->grid, (unsigned)elems->block, 0, stream>>>(*j, n);
    }
    PTL_CUDA_CHECK_LAUNCH();
    return 0;
}
