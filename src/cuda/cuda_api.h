/* cuda_api.h -- the only src/cuda header the C core includes.  Everything here is extern "C"
 * and POD; templates stay inside the .cu files.  Mirrors c10/cuda/CUDAFunctions.h. */
#ifndef PTL_CUDA_CUDA_API_H
#define PTL_CUDA_CUDA_API_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct PtlCachingAllocator;
struct PtlDeviceMemoryOps;

/* 1 when the extension was compiled with nvcc (PTL_WITH_CUDA). */
int ptl_cuda_is_built(void);
/* Number of visible devices; 0 when CUDA is not built, no driver, or no device.  Never
 * fails: the reason for 0 is kept for ptl_cuda_no_device_reason(). */
int ptl_cuda_device_count(void);
const char *ptl_cuda_no_device_reason(void);
/* CUDA runtime version as major*1000 + minor*10, or 0. */
int ptl_cuda_runtime_version(void);

/* Note [CUDA availability] in lazy_init.c: 1 only when a CUDA backend has registered its
 * allocator and kernels and a device is visible; never fails. */
int ptl_cuda_is_available(void);
/* Why ptl_cuda_is_available() is 0, or "" when it is 1. */
const char *ptl_cuda_unavailable_reason(void);

/* Note [CUDA and fork] in lazy_init.c.  Call before any CUDA use: 0, or -1 with an error
 * set (in a child forked after CUDA was initialised, or when CUDA is unavailable). */
int ptl_cuda_lazy_init(void);
/* Sets the "CUDA initialised" flag without touching a device (tests, and the backend once it
 * has created its context). */
void ptl_cuda_mark_initialized(void);
int ptl_cuda_is_initialized(void);
int ptl_cuda_in_bad_fork(void);

/* The device model (torch.cuda.current_device, set_device, synchronize,
 * get_device_properties).  Call after ptl_cuda_lazy_init(); 0, or -1 with an error set. */
typedef struct PtlCudaDeviceProperties {
    char name[256];
    size_t total_memory;
    int major, minor;
    int multi_processor_count;
    int l2_cache_size;
    int warp_size;
    int max_threads_per_multi_processor;
} PtlCudaDeviceProperties;

int ptl_cuda_current_device(int *device);
int ptl_cuda_set_device(int device);
int ptl_cuda_synchronize(int device);
int ptl_cuda_get_device_properties(int device, PtlCudaDeviceProperties *out);

/* Creates the devices' caching allocators (settings from PTL_CUDA_ALLOC_CONF) and registers
 * the CUDA storage allocator; 0, or -1 with an error (a bad PTL_CUDA_ALLOC_CONF, a CPU-only
 * build).  Called once CUDA kernels are registered (Note [CUDA availability]). */
int ptl_cuda_register_allocator(void);
/* The CUDA runtime as the caching allocator's device interface (its ctx is the device index
 * cast to a pointer), or NULL in a CPU-only build.  For tests that drive an allocator of
 * their own over a real device. */
const struct PtlDeviceMemoryOps *ptl_cuda_device_memory_ops(void);
/* The caching allocator of CUDA device `device` once the CUDA allocator is registered
 * (cuda_memory.cu), else NULL; sets no error. */
struct PtlCachingAllocator *ptl_cuda_caching_allocator(int device);

#ifdef __cplusplus
}
#endif
#endif
