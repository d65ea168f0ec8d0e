// grid_sampler.cu -- grid_sampler_{2,3}d's forward and backward kernels (Note [CUDA grid
// sampler] in grid_sampler_plan.c): one thread per grid point running
// grid_sampler_taps.h's per-point functions, which the CPU kernel and the host emulation
// run too.
#include <cuda_runtime.h>
#include <stdint.h>

#include "../aten/native/device_nn.h"
#include "cuda_api.h"
#include "launch_check.h"

__global__ void
grid_sampler_forward(PtlGridSampler j, int64_t n)
{
    PTL_GRID_LOOP(q, n)
    {
        ptl_gs_forward_at(&j, q);
    }
}

__global__ void
grid_sampler_backward(PtlGridSampler j, int64_t n)
{
    PTL_GRID_LOOP(q, n)
    {
        ptl_gs_backward_at(&j, q);
    }
}

extern "C" int
ptl_cuda_grid_sampler_launch(const PtlGridSampler *a, const PtlCudaNnPlan *elems)
{
    const int64_t n = a->n * a->npts;
    cudaStream_t stream = ptl_cuda_launch_stream();
    if (a->y != NULL) {
        grid_sampler_forward<<<(unsigned)elems->grid, (unsigned)elems->block, 0, stream>>>(*a, n);
    }
    else {
        grid_sampler_backward<<<(unsigned)elems->grid, (unsigned)elems->block, 0, stream>>>(*a, n);
    }
    PTL_CUDA_CHECK_LAUNCH();
    return 0;
}
