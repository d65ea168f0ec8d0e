// runtime.cu -- CUDA runtime glue: device discovery.  Mirrors c10/cuda/CUDAFunctions.cpp.
// Compiled by nvcc only (setup.py); the C core sees the extern "C" functions of cuda_api.h.
#include <cuda_runtime.h>
#include <stdio.h>

#include "cuda_api.h"

static char unavailable[256] = "";

extern "C" int ptl_cuda_is_built(void)
{
    return 1;
}

extern "C" int ptl_cuda_device_count(void)
{
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
        snprintf(unavailable, sizeof(unavailable), "CUDA driver or device unavailable: %s",
                 cudaGetErrorString(err));
        cudaGetLastError();  // clear the sticky error so later calls start clean
        return 0;
    }
    if (n == 0) {
        snprintf(unavailable, sizeof(unavailable), "no CUDA device is present");
    }
    return n;
}

extern "C" const char *ptl_cuda_no_device_reason(void)
{
    return unavailable;
}

extern "C" int ptl_cuda_runtime_version(void)
{
    int v = 0;
    if (cudaRuntimeGetVersion(&v) != cudaSuccess) {
        return 0;
    }
    return v;
}
