// attention.cu -- the fused attention kernels: the forward of
// _scaled_dot_product_flash_attention_for_cpu on CUDA tensors, and its backward's dk/dv and
// dq kernels.  The plan comes from attention_plan.c and every stage's arithmetic from
// attention_plan.h (Note [CUDA flash attention] there), which the host emulation runs in the
// CPU tests; what is only here is the block's walk over its items and stages with a
// __syncthreads() between stages, which the emulation mirrors (emulate_kernel).
#include <cuda_runtime.h>
#include <stdint.h>

#include "attention_plan.h"
#include "cuda_api.h"
#include "launch_check.h"

__device__ inline void
attn_step(int kind, int stage, const PtlDeviceAttnJob *j, const PtlCudaAttnPlan *p,
          int64_t item, int64_t it, float *sm)
{
    ptl_attn_step_f4(kind, stage, j, p, item, it, sm, threadIdx.x, blockDim.x);
}

__device__ inline void
attn_step(int kind, int stage, const PtlDeviceAttnJob *j, const PtlCudaAttnPlan *p,
          int64_t item, int64_t it, double *sm)
{
    ptl_attn_step_f8(kind, stage, j, p, item, it, sm, threadIdx.x, blockDim.x);
}

// kernel `kind`: items x, x + gridDim.x, ..., each INIT, INIT2, LOAD..ACC per looped tile,
// FINISH, every stage after a barrier (the previous item's FINISH included).  Two blocks an
// SM (the plan's shared memory allows two on sm_80 and sm_90): at most 128 registers a thread.
template <typename T>
__global__ void __launch_bounds__(PTL_ATTN_MAX_THREADS, 2)
attention_kernel(PtlDeviceAttnJob j, PtlCudaAttnPlan p, int kind)
{
    extern __shared__ double attn_smem[];
    T *sm = (T *)attn_smem;
    for (int64_t item = blockIdx.x; item < p.items[kind]; item += gridDim.x) {
        int64_t lo, hi;
        ptl_attn_loop_range(kind, &j, &p, item, &lo, &hi);
        __syncthreads();
        attn_step(kind, PTL_ATTN_INIT, &j, &p, item, -1, sm);
        __syncthreads();
        attn_step(kind, PTL_ATTN_INIT2, &j, &p, item, -1, sm);
        for (int64_t it = lo; it < hi; it++) {
            for (int stage = PTL_ATTN_LOAD; stage <= PTL_ATTN_ACC; stage++) {
                __syncthreads();
                attn_step(kind, stage, &j, &p, item, it, sm);
            }
        }
        __syncthreads();
        attn_step(kind, PTL_ATTN_FINISH, &j, &p, item, -1, sm);
    }
}

template <typename T>
static int
launch(const PtlDeviceAttnJob *j, const PtlCudaAttnPlan *p, int kind)
{
    const size_t bytes = (size_t)ptl_attn_smem(kind, p->bq, p->bk, p->ld).total * sizeof(T);
    // above 48 KiB a block's dynamic shared memory must be asked for (the plan keeps to
    // PTL_ATTN_SMEM_BYTES, within every sm_80 and sm_90 device's limit)
    cudaError_t err = cudaFuncSetAttribute(attention_kernel<T>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           (int)bytes);
    if (err != cudaSuccess) {
        return ptl_error_set(PTL_ERR_RUNTIME, "CUDA error: %s (%s:%d)", cudaGetErrorString(err),
                             __FILE__, __LINE__);
    }
    attention_kernel<T><<<(unsigned)p->grid[kind], (unsigned)p->block, bytes,
                          ptl_cuda_launch_stream()>>>(*j, *p, kind);
    PTL_CUDA_CHECK_LAUNCH();
    return 0;
}

extern "C" int
ptl_cuda_attention_launch(const PtlDeviceAttnJob *j, const PtlCudaAttnPlan *p, int kind, int f8)
{
    return f8 ? launch<double>(j, p, kind) : launch<float>(j, p, kind);
}
