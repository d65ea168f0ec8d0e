/* rnn_plan.c -- the host side of the recurrent layer's cell kernels, in every build: the
 * entry point rnn.c calls for CUDA tensors through device_nn.h's hook, and the kernels'
 * emulation on the host (the same per-thread functions and grid loop as rnn.cu).  See Note
 * [CUDA recurrent layer] in rnn_plan.h. */
#include "rnn_plan.h"

#include "../c10/error.h"

static void
step_f4(const void *ctx, int64_t e, int64_t *status)
{
    (void)status;
    ptl_rnn_step_f4(ctx, e);
}

static void
step_f8(const void *ctx, int64_t e, int64_t *status)
{
    (void)status;
    ptl_rnn_step_f8(ctx, e);
}

int
ptl_cuda_rnn_step(const PtlDeviceRnnStepArgs *a)
{
    PtlCudaReduceTuning tuning = ptl_cuda_reduce_tuning();
    const int64_t n = ptl_rnn_step_elems(a);
    PtlCudaNnPlan elems = ptl_cuda_elems_plan(n, &tuning);
    PTL_INTERNAL_ASSERT(a->dtype == PTL_DTYPE_FLOAT32 || a->dtype == PTL_DTYPE_FLOAT64);
    if (n == 0) {
        return 0;
    }
    if (ptl_device_reduce_emulation) {
        ptl_cuda_kernel_emulation_ran(PTL_CUDA_EMU_RNN_CELL);
        ptl_cuda_emulate_elems(&elems, n, a->dtype == PTL_DTYPE_FLOAT32 ? step_f4 : step_f8, a,
                               NULL);
        return 0;
    }
    return ptl_cuda_rnn_step_launch(a, &elems);
}
