/* grid_sampler_plan.c -- the host side of the grid sampler's kernels, in every build: the
 * entry point grid_sampler.c calls for CUDA tensors through device_nn.h's hook, and the
 * kernels' emulation on the host (the same per-point functions and grid loop as
 * grid_sampler.cu).
 *
 * Note [CUDA grid sampler]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * grid_sampler_{2,3}d and their backwards run grid_sampler.c's CPU kernel on the CUDA key:
 * its checks (PyTorch's messages), its float64 copies of input, grid and grad_output (on
 * the device, through the cast kernels) and its casts back; what reaches the device is one
 * PtlGridSampler job over contiguous float64 data.
 * - One thread per grid point (sample-major: n npts of them, the elems plan and a
 *   grid-stride loop), which runs grid_sampler_taps.h's ptl_gs_forward_at or
 *   ptl_gs_backward_at: the CPU's taps, weights and sums, in its order, in double (the
 *   device may fuse multiply-adds: last bits only).
 * - Forward: the point's output over every channel; one writer per element.
 * - Backward: grad_grid has one writer per point; grad_input, zeroed first (the fill
 *   kernel), takes each tap's w go by a double atomicAdd (sm_60 and later), since the
 *   points of a sample share taps.  Its sums' order, and so their last bits, change run to
 *   run, as PyTorch's CUDA grid sampler's do; the CPU kernel owns whole samples per thread
 *   and adds in point order, which the emulation reproduces.
 * The backward's backward (_grid_sampler_backward_backward) stays on the CPU. */
#include "cuda_api.h"

#include "../aten/native/device_nn.h"

static void
gs_forward(const void *ctx, int64_t q, int64_t *status)
{
    (void)status;
    ptl_gs_forward_at(ctx, q);
}

static void
gs_backward(const void *ctx, int64_t q, int64_t *status)
{
    (void)status;
    ptl_gs_backward_at(ctx, q);
}

int
ptl_cuda_grid_sampler(const PtlGridSampler *a)
{
    PtlCudaReduceTuning tuning = ptl_cuda_reduce_tuning();
    const int64_t n = a->n * a->npts;
    PtlCudaNnPlan elems = ptl_cuda_elems_plan(n, &tuning);
    if (n == 0) {
        return 0;
    }
    if (ptl_device_reduce_emulation) {
        ptl_cuda_kernel_emulation_ran(PTL_CUDA_EMU_GRID_SAMPLER);
        ptl_cuda_emulate_elems(&elems, n, a->y != NULL ? gs_forward : gs_backward, a, NULL);
        return 0;
    }
    return ptl_cuda_grid_sampler_launch(a, &elems);
}
