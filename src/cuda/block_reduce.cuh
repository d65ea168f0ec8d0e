// block_reduce.cuh -- the combination of a block's accumulators through warp shuffles and
// shared memory (a fixed tree: Note [CUDA reduction plan] in reduce_plan.h), which
// ptl_cuda_block_tree in reduce_plan.c runs on the host; shared by reduce.cu and nn.cu.
#ifndef PTL_CUDA_BLOCK_REDUCE_CUH
#define PTL_CUDA_BLOCK_REDUCE_CUH

#include <cuda_runtime.h>

#include "../c10/error.h"
#include "launch_check.h"
#include "reduce_plan.h"

__device__ inline PtlRedAcc
shfl_down(PtlRedAcc v, int offset)
{
    const unsigned all = 0xffffffffu;
    PtlRedAcc o;
    o.a = __shfl_down_sync(all, v.a, offset);
    o.b = __shfl_down_sync(all, v.b, offset);
    o.i = (int64_t)__shfl_down_sync(all, (long long)v.i, offset);
    o.n = (int64_t)__shfl_down_sync(all, (long long)v.n, offset);
    o.idx = (int64_t)__shfl_down_sync(all, (long long)v.idx, offset);
    return o;
}

// lane i combines lane i + offset's value into its own: lane 0 ends with the warp's total
template <int KIND>
__device__ inline PtlRedAcc
warp_reduce(PtlRedAcc v, int use_int, double p)
{
    const int lane = threadIdx.x % PTL_CUDA_WARP;
    for (int offset = PTL_CUDA_WARP / 2; offset > 0; offset /= 2) {
        PtlRedAcc other = shfl_down(v, offset);
        if (lane + offset < PTL_CUDA_WARP) {
            ptl_red_combine(KIND, use_int, p, &v, &other);
        }
    }
    return v;
}

// The block's total, in every thread (smem: PTL_CUDA_WARP + 1 accumulators).  Every thread
// of the block calls it; it leaves smem free for the next call.
template <int KIND>
__device__ inline PtlRedAcc
block_reduce(PtlRedAcc v, int use_int, double p, PtlRedAcc *smem)
{
    const int lane = threadIdx.x % PTL_CUDA_WARP, warp = threadIdx.x / PTL_CUDA_WARP;
    const int nwarps = blockDim.x / PTL_CUDA_WARP;
    v = warp_reduce<KIND>(v, use_int, p);
    if (lane == 0) {
        smem[warp] = v;
    }
    __syncthreads();
    if (warp == 0) {
        v = lane < nwarps ? smem[lane] : ptl_red_init(KIND, p);
        v = warp_reduce<KIND>(v, use_int, p);
        if (lane == 0) {
            smem[PTL_CUDA_WARP] = v;
        }
    }
    __syncthreads();
    v = smem[PTL_CUDA_WARP];
    __syncthreads();
    return v;
}

#endif
