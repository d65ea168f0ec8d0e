// nn.cu -- the layer norm (forward, input gradient, weight and bias gradients), nll_loss
// (forward and backward), embedding (forward and dense backward) and batch norm (forward and
// backward) kernels.  The plans
// come from nn_plan.c and the per-element and per-thread arithmetic from nn_plan.h (Note
// [CUDA nn kernels] there), which the host emulation runs in the CPU tests; what is only
// here is the grid loops and the block's combination (block_reduce.cuh), which the
// emulation mirrors (emulate_* in nn_plan.c).
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "block_reduce.cuh"
#include "cuda_api.h"
#include "launch_check.h"
#include "nn_plan.h"

// the block's sums of .a and .b over its threads' accumulators
__device__ inline void
block_sums(const PtlRedAcc &acc, PtlRedAcc *smem, double *a, double *b)
{
    PtlRedAcc other = acc;
    other.a = acc.b;
    *b = block_reduce<PTL_DEVICE_RED_SUM>(other, 0, 0, smem).a;
    *a = block_reduce<PTL_DEVICE_RED_SUM>(acc, 0, 0, smem).a;
}

// one block per row: rows x, x + gridDim.x, ... (forward, or the input gradient)
__global__ void
layer_norm_rows(PtlDeviceLayerNormArgs a)
{
    __shared__ PtlRedAcc smem[PTL_CUDA_WARP + 1];
    const int64_t t = threadIdx.x, step = blockDim.x;
    for (int64_t r = blockIdx.x; r < a.m; r += gridDim.x) {
        if (a.pass == PTL_DEVICE_LN_FORWARD) {
            PtlRedAcc s = ptl_ln_thread_sum(&a, 0, r, 0, t, step);
            const double mean = block_reduce<PTL_DEVICE_RED_SUM>(s, 0, 0, smem).a / (double)a.n;
            s = ptl_ln_thread_sum(&a, 1, r, mean, t, step);
            const double var = block_reduce<PTL_DEVICE_RED_SUM>(s, 0, 0, smem).a / (double)a.n;
            ptl_ln_write_row(&a, r, mean, 1.0 / sqrt(var + a.eps), t, step);
        }
        else {
            double sgx, sg;
            block_sums(ptl_ln_thread_sum(&a, 2, r, 0, t, step), smem, &sgx, &sg);
            ptl_ln_write_dx(&a, r, sgx, sg, t, step);
        }
    }
}

// one thread per column of the weight and bias gradients, over row chunk blockIdx.y
__global__ void
layer_norm_columns(PtlDeviceLayerNormArgs a, int64_t chunk, int64_t nsplit, double *ws)
{
    PTL_GRID_LOOP(c, a.n)
    {
        ptl_ln_column(&a, c, blockIdx.y, chunk, nsplit, ws);
    }
}

// the second pass of split column sums: one thread per column
__global__ void
layer_norm_columns_finish(PtlDeviceLayerNormArgs a, int64_t nsplit, const double *ws)
{
    PTL_GRID_LOOP(c, a.n)
    {
        ptl_ln_column_finish(&a, c, nsplit, ws);
    }
}

extern "C" int
ptl_cuda_layer_norm_launch(const PtlDeviceLayerNormArgs *a, const PtlCudaNnPlan *plan,
                           double *ws)
{
    cudaStream_t stream = ptl_cuda_launch_stream();
    if (a->pass != PTL_DEVICE_LN_BACKWARD_DW) {
        layer_norm_rows<<<(unsigned)plan->grid, (unsigned)plan->block, 0, stream>>>(*a);
        PTL_CUDA_CHECK_LAUNCH();
        return 0;
    }
    const dim3 grid((unsigned)plan->grid, (unsigned)plan->nsplit);
    layer_norm_columns<<<grid, (unsigned)plan->block, 0, stream>>>(*a, plan->chunk,
                                                                  plan->nsplit, ws);
    PTL_CUDA_CHECK_LAUNCH();
    if (plan->nsplit > 1) {
        layer_norm_columns_finish<<<(unsigned)plan->grid, (unsigned)plan->block, 0, stream>>>(
            *a, plan->nsplit, ws);
        PTL_CUDA_CHECK_LAUNCH();
    }
    return 0;
}

// reduction none: one thread per target
__global__ void
nll_forward_none(PtlDeviceNllArgs a, int64_t *ws)
{
    PTL_GRID_LOOP(e, a.N * a.S)
    {
        double wt;
        ((double *)a.out)[e] = ptl_nll_loss_at(&a, e, &wt, ws);
    }
}

// one block: the mean's or sum's loss (forward), the total weight (backward, into ws[2])
__global__ void
nll_block_sum(PtlDeviceNllArgs a, int64_t *ws)
{
    __shared__ PtlRedAcc smem[PTL_CUDA_WARP + 1];
    double loss, total;
    block_sums(ptl_nll_thread_sum(&a, threadIdx.x, blockDim.x, ws), smem, &loss, &total);
    if (threadIdx.x == 0) {
        if (a.backward) {
            memcpy(ws + 2, &total, sizeof(double));
        }
        else {
            ((double *)a.out)[0] = a.reduction == 1 ? loss / total : loss;
        }
    }
}

// the input gradient: one thread per element
__global__ void
nll_grad(PtlDeviceNllArgs a, int64_t *ws)
{
    double total;
    memcpy(&total, ws + 2, sizeof(double));
    PTL_GRID_LOOP(j, a.N * a.S * a.C)
    {
        ptl_nll_grad_at(&a, j, total, ws);
    }
}

extern "C" int
ptl_cuda_nll_launch(const PtlDeviceNllArgs *a, const PtlCudaNnPlan *block,
                    const PtlCudaNnPlan *elems, int64_t *ws)
{
    cudaStream_t stream = ptl_cuda_launch_stream();
    if (!a->backward && a->reduction == 0) {
        if (elems->grid > 0) {
            nll_forward_none<<<(unsigned)elems->grid, (unsigned)elems->block, 0, stream>>>(*a, ws);
            PTL_CUDA_CHECK_LAUNCH();
        }
        return 0;
    }
    if (a->reduction != 0) {
        nll_block_sum<<<1, (unsigned)block->block, 0, stream>>>(*a, ws);
        PTL_CUDA_CHECK_LAUNCH();
    }
    if (a->backward && elems->grid > 0) {
        nll_grad<<<(unsigned)elems->grid, (unsigned)elems->block, 0, stream>>>(*a, ws);
        PTL_CUDA_CHECK_LAUNCH();
    }
    return 0;
}

// the forward: one thread per output element
__global__ void
embedding_gather(PtlDeviceEmbeddingArgs a, int64_t *ws)
{
    PTL_GRID_LOOP(j, a.L * a.D)
    {
        ptl_emb_gather(&a, j, ws);
    }
}

// scale_grad_by_freq's row counts, into ws[3 + v] (integer atomics: exact in any order)
__global__ void
embedding_count(PtlDeviceEmbeddingArgs a, int64_t *ws)
{
    PTL_GRID_LOOP(i, a.L)
    {
        const int64_t v = ptl_emb_row(&a, i, ws);
        if (v >= 0) {
            atomicAdd((unsigned long long *)(ws + 3 + v), 1ull);
        }
    }
}

// the backward: thread u owns column u % D of rows [u / D chunk, (u / D + 1) chunk)
__global__ void
embedding_accumulate(PtlDeviceEmbeddingArgs a, int64_t chunk, int64_t *ws)
{
    PTL_GRID_LOOP(u, (a.V + chunk - 1) / chunk * a.D)
    {
        const int64_t v0 = u / a.D * chunk, v1 = v0 + chunk < a.V ? v0 + chunk : a.V;
        ptl_emb_accumulate(&a, v0, v1, u % a.D, ws + 3, ws);
    }
}

extern "C" int
ptl_cuda_embedding_launch(const PtlDeviceEmbeddingArgs *a, const PtlCudaNnPlan *count,
                          const PtlCudaNnPlan *elems, int64_t chunk, int64_t *ws)
{
    cudaStream_t stream = ptl_cuda_launch_stream();
    if (!a->backward) {
        embedding_gather<<<(unsigned)elems->grid, (unsigned)elems->block, 0, stream>>>(*a, ws);
        PTL_CUDA_CHECK_LAUNCH();
        return 0;
    }
    if (a->scale && count->grid > 0) {
        embedding_count<<<(unsigned)count->grid, (unsigned)count->block, 0, stream>>>(*a, ws);
        PTL_CUDA_CHECK_LAUNCH();
    }
    embedding_accumulate<<<(unsigned)elems->grid, (unsigned)elems->block, 0, stream>>>(
        *a, chunk, ws);
    PTL_CUDA_CHECK_LAUNCH();
    return 0;
}

// batch norm's sums: one block per (channel, chunk) task, tasks x, x + gridDim.x, ...
__global__ void
batch_norm_sums(PtlDeviceBatchNormArgs a, int64_t chunk, int64_t nsplit, double *ws)
{
    __shared__ PtlRedAcc smem[PTL_CUDA_WARP + 1];
    for (int64_t u = blockIdx.x; u < a.c * nsplit; u += gridDim.x) {
        double s1, s2;
        block_sums(ptl_bn_thread_sum(&a, u, chunk, nsplit, threadIdx.x, blockDim.x), smem, &s1,
                   &s2);
        if (threadIdx.x == 0) {
            ws[2 * u] = s1;
            ws[2 * u + 1] = s2;
        }
    }
}

// one thread per channel: statistics, coefficients, per-channel outputs
__global__ void
batch_norm_channels(PtlDeviceBatchNormArgs a, int64_t nsplit, double *ws)
{
    PTL_GRID_LOOP(c, a.c)
    {
        ptl_bn_channel(&a, c, nsplit, ws, ws + 2 * a.c * nsplit);
    }
}

// one thread per element of y (forward) or dx (backward)
__global__ void
batch_norm_affine(PtlDeviceBatchNormArgs a, const double *coef)
{
    PTL_GRID_LOOP(j, a.n * a.c * a.hw)
    {
        ptl_bn_affine_at(&a, j, coef);
    }
}

extern "C" int
ptl_cuda_batch_norm_launch(const PtlDeviceBatchNormArgs *a, const PtlCudaNnPlan *tasks,
                           const PtlCudaNnPlan *chans, const PtlCudaNnPlan *elems, double *ws)
{
    cudaStream_t stream = ptl_cuda_launch_stream();
    if (ptl_bn_has_sums(a)) {
        batch_norm_sums<<<(unsigned)tasks->grid, (unsigned)tasks->block, 0, stream>>>(
            *a, tasks->chunk, tasks->nsplit, ws);
        PTL_CUDA_CHECK_LAUNCH();
    }
    batch_norm_channels<<<(unsigned)chans->grid, (unsigned)chans->block, 0, stream>>>(
        *a, tasks->nsplit, ws);
    PTL_CUDA_CHECK_LAUNCH();
    if (a->y != 0) {
        batch_norm_affine<<<(unsigned)elems->grid, (unsigned)elems->block, 0, stream>>>(
            *a, ws + 2 * a->c * tasks->nsplit);
        PTL_CUDA_CHECK_LAUNCH();
    }
    return 0;
}
