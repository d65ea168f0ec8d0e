// runtime.cu -- CUDA runtime glue: device discovery and the device model.  Mirrors
// c10/cuda/CUDAFunctions.cpp.
// Compiled by nvcc only (setup.py); the C core sees the extern "C" functions of cuda_api.h.
#include <cuda_runtime.h>
#include <stdio.h>

#include "../c10/error.h"
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

static int
check(cudaError_t err, const char *what)
{
    if (err == cudaSuccess) {
        return 0;
    }
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return ptl_error_set(PTL_ERR_RUNTIME, "CUDA error: %s (in %s)", cudaGetErrorString(err),
                         what);
}

// PyTorch's check_device: an index outside [0, device_count) is an "invalid device ordinal".
static int
check_device(int device)
{
    int n = 0;
    if (check(cudaGetDeviceCount(&n), "cudaGetDeviceCount") < 0) {
        return -1;
    }
    if (device < 0 || device >= n) {
        return ptl_error_set(PTL_ERR_RUNTIME, "CUDA error: invalid device ordinal");
    }
    return 0;
}

extern "C" int ptl_cuda_current_device(int *device)
{
    return check(cudaGetDevice(device), "cudaGetDevice");
}

extern "C" int ptl_cuda_set_device(int device)
{
    if (check_device(device) < 0) {
        return -1;
    }
    return check(cudaSetDevice(device), "cudaSetDevice");
}

extern "C" int ptl_cuda_synchronize(int device)
{
    int previous = 0;
    if (check_device(device) < 0 || ptl_cuda_current_device(&previous) < 0 ||
        check(cudaSetDevice(device), "cudaSetDevice") < 0) {
        return -1;
    }
    int status = check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    cudaSetDevice(previous);
    return status;
}

extern "C" int ptl_cuda_get_device_properties(int device, PtlCudaDeviceProperties *out)
{
    cudaDeviceProp prop;
    if (check_device(device) < 0 ||
        check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties") < 0) {
        return -1;
    }
    snprintf(out->name, sizeof(out->name), "%s", prop.name);
    out->total_memory = prop.totalGlobalMem;
    out->major = prop.major;
    out->minor = prop.minor;
    out->multi_processor_count = prop.multiProcessorCount;
    out->l2_cache_size = prop.l2CacheSize;
    out->warp_size = prop.warpSize;
    out->max_threads_per_multi_processor = prop.maxThreadsPerMultiProcessor;
    return 0;
}
