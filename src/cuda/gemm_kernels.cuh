// gemm_kernels.cuh -- what the GEMM kernels of gemm.cu and gemm_tensor_core.cu share: the
// conversions to and from double, the epilogue's write of one C element (Note [CUDA GEMM
// plan] in gemm_plan.h), and the launchers of gemm_tensor_core.cu for gemm.cu's switch.
#ifndef PTL_CUDA_GEMM_KERNELS_CUH
#define PTL_CUDA_GEMM_KERNELS_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "gemm_plan.h"

static __device__ inline double to_d(float v) { return v; }
static __device__ inline double to_d(double v) { return v; }
static __device__ inline double to_d(__half v) { return __half2float(v); }
static __device__ inline double to_d(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> static __device__ inline T from_d(double v) { return (T)v; }
template <> __device__ inline __half from_d<__half>(double v) { return __float2half((float)v); }
template <> __device__ inline __nv_bfloat16
from_d<__nv_bfloat16>(double v) { return __float2bfloat16((float)v); }

// C's element (row, col) of the batch at offsets cbo, sbo := alpha acc + beta S
template <typename T>
static __device__ inline void
write_c(const PtlDeviceGemmArgs &a, int64_t cbo, int64_t sbo, int64_t row, int64_t col,
        double acc)
{
    if (row >= a.m || col >= a.n) {
        return;
    }
    double s = a.beta == 0 ? 0.0 : to_d(((const T *)a.s)[sbo + row * a.srs + col * a.scs]);
    ((T *)a.c)[cbo + row * a.crs + col * a.ccs] = from_d<T>(ptl_gemm_result(&a, acc, s));
}

// gemm_tensor_core.cu: the mma kernel of the plan on the stream (0, or -1 with an error set)
int ptl_cuda_gemm_mma_launch(const PtlDeviceGemmArgs *a, const PtlCudaGemmPlan *p,
                             cudaStream_t stream);

#endif
