// rnn.cu -- the recurrent layer's fused cell kernel (Note [CUDA recurrent layer] in
// rnn_plan.h): one launch a step and pass, one thread per (row, hidden unit) or per
// element of dh, running rnn_plan.h's per-thread functions, which the host emulation runs
// too.
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_api.h"
#include "launch_check.h"
#include "rnn_plan.h"

template <typename T>
__global__ void
rnn_step(PtlDeviceRnnStepArgs a, int64_t n)
{
    PTL_GRID_LOOP(e, n)
    {
        if constexpr (sizeof(T) == sizeof(float)) {
            ptl_rnn_step_f4(&a, e);
        }
        else {
            ptl_rnn_step_f8(&a, e);
        }
    }
}

extern "C" int
ptl_cuda_rnn_step_launch(const PtlDeviceRnnStepArgs *a, const PtlCudaNnPlan *elems)
{
    const int64_t n = ptl_rnn_step_elems(a);
    cudaStream_t stream = ptl_cuda_launch_stream();
    if (a->dtype == PTL_DTYPE_FLOAT32) {
        rnn_step<float><<<(unsigned)elems->grid, (unsigned)elems->block, 0, stream>>>(*a, n);
    }
    else {
        rnn_step<double><<<(unsigned)elems->grid, (unsigned)elems->block, 0, stream>>>(*a, n);
    }
    PTL_CUDA_CHECK_LAUNCH();
    return 0;
}
