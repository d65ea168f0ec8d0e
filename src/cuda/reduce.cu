// reduce.cu -- the reduction kernels (sum, nansum, mean, prod, max, min, argmax, argmin,
// var, norm, logsumexp) and the softmax family (softmax, log_softmax and their backward).
// Mirrors ATen/native/cuda/Reduce.cuh and SoftMax.cu.  The plans come from reduce_plan.c and the
// per-element and per-thread arithmetic from reduce_plan.h (Note [CUDA reduction plan]
// there), which the host emulation runs in the CPU tests; what is only here is the grid loops
// and the block's combination (block_reduce.cuh), which the emulation mirrors
// (ptl_cuda_block_tree, emulate_reduce, emulate_softmax in reduce_plan.c).
#include <cuda_runtime.h>
#include <stdint.h>

#include "../c10/error.h"
#include "cuda_api.h"
#include "launch_check.h"
#include "block_reduce.cuh"
#include "reduce_plan.h"

// output o's accumulator for split y: written when unsplit, else kept for the second pass
template <int KIND>
__device__ inline void
emit(const PtlDeviceReduceArgs &a, const PtlCudaReducePlan &plan, PtlRedAcc *ws, int64_t o,
     int64_t y, const PtlRedAcc &acc)
{
    if (plan.nsplit == 1) {
        ptl_red_finish(KIND, &a, &acc, o);
    }
    else {
        ws[o * plan.nsplit + y] = acc;
    }
}

// blocks (x, y): outputs x, x + gridDim.x, ..., split y; thread t takes r0 + t, r0 + t + block
template <int KIND>
__global__ void
reduce_block_per_output(PtlDeviceReduceArgs a, PtlCudaReducePlan plan, PtlRedAcc *ws)
{
    __shared__ PtlRedAcc smem[PTL_CUDA_WARP + 1];
    const int64_t y = blockIdx.y;
    int64_t r0, r1;
    ptl_red_split_range(&plan, a.R, y, &r0, &r1);
    for (int64_t o = blockIdx.x; o < a.nout; o += gridDim.x) {
        PtlRedAcc acc = ptl_red_thread_acc(KIND, &a, o, r0, r1, threadIdx.x, blockDim.x);
        acc = block_reduce<KIND>(acc, a.use_int, a.p, smem);
        if (threadIdx.x == 0) {
            emit<KIND>(a, plan, ws, o, y, acc);
        }
    }
}

// thread t of block (x, y): outputs x block + t, ... a grid's width apart, split y
template <int KIND>
__global__ void
reduce_thread_per_output(PtlDeviceReduceArgs a, PtlCudaReducePlan plan, PtlRedAcc *ws)
{
    const int64_t y = blockIdx.y, step = (int64_t)gridDim.x * blockDim.x;
    int64_t r0, r1;
    ptl_red_split_range(&plan, a.R, y, &r0, &r1);
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < a.nout; o += step) {
        emit<KIND>(a, plan, ws, o, y, ptl_red_thread_acc(KIND, &a, o, r0, r1, 0, 1));
    }
}

// the second pass of a split reduction: one thread per output
template <int KIND>
__global__ void
reduce_finish_split(PtlDeviceReduceArgs a, int64_t nsplit, const PtlRedAcc *ws)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < a.nout; o += step) {
        ptl_red_finish_split(KIND, &a, ws, nsplit, o);
    }
}

template <int KIND>
static int
launch_reduce(const PtlDeviceReduceArgs *a, const PtlCudaReducePlan *plan, PtlRedAcc *ws)
{
    cudaStream_t stream = ptl_cuda_launch_stream();
    const dim3 grid((unsigned)plan->grid, (unsigned)plan->nsplit), block((unsigned)plan->block);
    if (plan->layout == PTL_CUDA_LAYOUT_BLOCK_PER_OUTPUT) {
        reduce_block_per_output<KIND><<<grid, block, 0, stream>>>(*a, *plan, ws);
    }
    else {
        reduce_thread_per_output<KIND><<<grid, block, 0, stream>>>(*a, *plan, ws);
    }
    PTL_CUDA_CHECK_LAUNCH();
    if (plan->nsplit > 1) {
        reduce_finish_split<KIND>
            <<<(unsigned)plan->finish_grid, (unsigned)plan->block, 0, stream>>>(
            *a, plan->nsplit, ws);
        PTL_CUDA_CHECK_LAUNCH();
    }
    return 0;
}

extern "C" int
ptl_cuda_reduce_launch(const PtlDeviceReduceArgs *a, const PtlCudaReducePlan *plan,
                       void *workspace)
{
    PtlRedAcc *ws = (PtlRedAcc *)workspace;
    switch (a->kind) {
    case PTL_DEVICE_RED_SUM: return launch_reduce<PTL_DEVICE_RED_SUM>(a, plan, ws);
    case PTL_DEVICE_RED_NANSUM: return launch_reduce<PTL_DEVICE_RED_NANSUM>(a, plan, ws);
    case PTL_DEVICE_RED_MEAN: return launch_reduce<PTL_DEVICE_RED_MEAN>(a, plan, ws);
    case PTL_DEVICE_RED_PROD: return launch_reduce<PTL_DEVICE_RED_PROD>(a, plan, ws);
    case PTL_DEVICE_RED_MAX: return launch_reduce<PTL_DEVICE_RED_MAX>(a, plan, ws);
    case PTL_DEVICE_RED_MIN: return launch_reduce<PTL_DEVICE_RED_MIN>(a, plan, ws);
    case PTL_DEVICE_RED_ARGMAX: return launch_reduce<PTL_DEVICE_RED_ARGMAX>(a, plan, ws);
    case PTL_DEVICE_RED_ARGMIN: return launch_reduce<PTL_DEVICE_RED_ARGMIN>(a, plan, ws);
    case PTL_DEVICE_RED_VAR: return launch_reduce<PTL_DEVICE_RED_VAR>(a, plan, ws);
    case PTL_DEVICE_RED_NORM: return launch_reduce<PTL_DEVICE_RED_NORM>(a, plan, ws);
    case PTL_DEVICE_RED_LSE: return launch_reduce<PTL_DEVICE_RED_LSE>(a, plan, ws);
    case PTL_DEVICE_RED_ALL: return launch_reduce<PTL_DEVICE_RED_ALL>(a, plan, ws);
    case PTL_DEVICE_RED_ANY: return launch_reduce<PTL_DEVICE_RED_ANY>(a, plan, ws);
    case PTL_DEVICE_RED_COUNT_NONZERO:
        return launch_reduce<PTL_DEVICE_RED_COUNT_NONZERO>(a, plan, ws);
    default: return ptl_error_set(PTL_ERR_RUNTIME, "unknown CUDA reduction %d", (int)a->kind);
    }
}

// ---- softmax ----

// one block per line (the softmax dim is the last): lines x, x + gridDim.x, ...
__global__ void
softmax_block_per_line(PtlDeviceSoftmaxArgs a)
{
    __shared__ PtlRedAcc smem[PTL_CUDA_WARP + 1];
    const int64_t lines = a.outer * a.inner;
    for (int64_t l = blockIdx.x; l < lines; l += gridDim.x) {
        double shift = 0;
        if (a.y == NULL) {
            PtlRedAcc m = ptl_softmax_thread_max(&a, l, threadIdx.x, blockDim.x);
            shift = ptl_softmax_shift(block_reduce<PTL_DEVICE_RED_MAX>(m, 0, 0, smem).a);
        }
        PtlRedAcc s = ptl_softmax_thread_sum(&a, l, shift, threadIdx.x, blockDim.x);
        double sum = block_reduce<PTL_DEVICE_RED_SUM>(s, 0, 0, smem).a;
        ptl_softmax_write(&a, l, shift, sum, threadIdx.x, blockDim.x);
    }
}

// one thread per line (inner > 1: neighbouring threads read neighbouring elements)
__global__ void
softmax_thread_per_line(PtlDeviceSoftmaxArgs a)
{
    const int64_t lines = a.outer * a.inner, step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t l = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; l < lines; l += step) {
        double shift = a.y == NULL ? ptl_softmax_shift(ptl_softmax_thread_max(&a, l, 0, 1).a)
                                   : 0;
        double sum = ptl_softmax_thread_sum(&a, l, shift, 0, 1).a;
        ptl_softmax_write(&a, l, shift, sum, 0, 1);
    }
}

extern "C" int
ptl_cuda_softmax_launch(const PtlDeviceSoftmaxArgs *a, const PtlCudaSoftmaxPlan *plan)
{
    cudaStream_t stream = ptl_cuda_launch_stream();
    if (plan->layout == PTL_CUDA_LAYOUT_BLOCK_PER_OUTPUT) {
        softmax_block_per_line<<<(unsigned)plan->grid, (unsigned)plan->block, 0, stream>>>(*a);
    }
    else {
        softmax_thread_per_line<<<(unsigned)plan->grid, (unsigned)plan->block, 0, stream>>>(*a);
    }
    PTL_CUDA_CHECK_LAUNCH();
    return 0;
}

// the scans (cumsum, cumprod, cummax, cummin, logcumsumexp): one thread per line (Note
// [CUDA scans] in reduce_plan.h)
__global__ void
scan_kernel(PtlDeviceScanArgs a)
{
    PTL_GRID_LOOP(l, a.nlines)
    {
        ptl_scan_line(&a, l);
    }
}

extern "C" int
ptl_cuda_scan_launch(const PtlDeviceScanArgs *a, const PtlCudaNnPlan *elems)
{
    scan_kernel<<<(unsigned)elems->grid, (unsigned)elems->block, 0, ptl_cuda_launch_stream()>>>(
        *a);
    PTL_CUDA_CHECK_LAUNCH();
    return 0;
}
