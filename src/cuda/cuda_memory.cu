// cuda_memory.cu -- the CUDA device under the caching allocator: cudaMalloc, cudaFree,
// cudaMemGetInfo and events as PtlDeviceMemoryOps, one caching allocator per device, and the
// PtlAllocator that CUDA storages use.  Mirrors c10/cuda/CUDACachingAllocator.cpp
// (NativeCachingAllocator).  See Note [Caching allocator] in src/c10/caching_allocator.c and
// Note [CUDA availability] in lazy_init.c: the allocator is registered only once CUDA kernels
// are (ptl_cuda_register_allocator is called from there).
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>

#include "../c10/allocator.h"
#include "../c10/caching_allocator.h"
#include "../c10/error.h"
#include "cuda_api.h"
#include "stream_api.h"

#define MAX_DEVICES 64

static PtlCachingAllocator *allocators[MAX_DEVICES];
static int ndevices;

// Makes `device` current; returns the device to restore with leave_device (-1: none).
// Plain functions rather than an RAII guard: the extension links no C++ runtime.
static int
enter_device(int device)
{
    int previous = -1;
    if (cudaGetDevice(&previous) != cudaSuccess || previous == device ||
        cudaSetDevice(device) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    return previous;
}

static void
leave_device(int previous)
{
    if (previous >= 0) {
        cudaSetDevice(previous);
    }
}

static int
device_of(void *ctx)
{
    return (int)(intptr_t)ctx;
}

static int
cuda_error(cudaError_t err, const char *what)
{
    cudaGetLastError();   // clear it so the next call starts clean
    return ptl_error_set(PTL_ERR_RUNTIME, "CUDA error: %s (in %s)", cudaGetErrorString(err),
                         what);
}

static int
device_malloc(void *ctx, size_t nbytes, void **ptr)
{
    int previous = enter_device(device_of(ctx));
    // A graph's private pool grows while a stream is captured, and cudaMalloc is one of the
    // calls a "global" capture forbids: this thread allocates in relaxed mode, as PyTorch's
    // allocator does, and nothing of the allocation enters the graph.
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mode);
    cudaError_t err = cudaMalloc(ptr, nbytes);
    cudaThreadExchangeStreamCaptureMode(&mode);
    leave_device(previous);
    if (err == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        return 1;
    }
    return err == cudaSuccess ? 0 : cuda_error(err, "cudaMalloc");
}

static void
device_free(void *ctx, void *ptr)
{
    int previous = enter_device(device_of(ctx));
    // cudaFree synchronises the device: the blocks' pending work is done before it returns
    cudaError_t err = cudaFree(ptr);
    leave_device(previous);
    if (err != cudaSuccess) {
        cudaGetLastError();
    }
}

static int
device_mem_get_info(void *ctx, size_t *free_bytes, size_t *total_bytes)
{
    int previous = enter_device(device_of(ctx));
    cudaError_t err = cudaMemGetInfo(free_bytes, total_bytes);
    leave_device(previous);
    return err == cudaSuccess ? 0 : cuda_error(err, "cudaMemGetInfo");
}

static void *
device_event_record(void *ctx, PtlStreamId stream)
{
    int previous = enter_device(device_of(ctx));
    cudaEvent_t ev = NULL;
    cudaError_t err = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (err == cudaSuccess) {
        err = cudaEventRecord(ev, (cudaStream_t)stream);
        if (err != cudaSuccess) {
            cudaEventDestroy(ev);
        }
    }
    leave_device(previous);
    if (err != cudaSuccess) {
        cuda_error(err, "cudaEventRecord");
        return NULL;
    }
    return (void *)ev;
}

// 1 when done; an event that reports an error never completes, so it counts as done (the
// context is broken and every later CUDA call reports that).
static int
device_event_query(void *ctx, void *event)
{
    (void)ctx;
    cudaError_t err = cudaEventQuery((cudaEvent_t)event);
    if (err == cudaErrorNotReady) {
        cudaGetLastError();
        return 0;
    }
    if (err != cudaSuccess) {
        cudaGetLastError();
    }
    return 1;
}

static void
device_event_synchronize(void *ctx, void *event)
{
    (void)ctx;
    if (cudaEventSynchronize((cudaEvent_t)event) != cudaSuccess) {
        cudaGetLastError();
    }
}

static void
device_event_destroy(void *ctx, void *event)
{
    (void)ctx;
    cudaEventDestroy((cudaEvent_t)event);
}

static const PtlDeviceMemoryOps cuda_ops = {
    "CUDA", device_malloc, device_free, device_mem_get_info, device_event_record,
    device_event_query, device_event_synchronize, device_event_destroy,
};

// The PtlAllocator of CUDA storages: the current device's allocator, for the thread's current
// stream there (Note [Current stream] in stream_state.c).
static void *
cuda_storage_alloc(void *ctx, size_t nbytes)
{
    (void)ctx;
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= ndevices) {
        cudaGetLastError();
        ptl_error_set(PTL_ERR_RUNTIME, "CUDA error: no current device");
        return NULL;
    }
    return ptl_caching_allocator_malloc(allocators[device], nbytes,
                                        ptl_cuda_current_stream(device));
}

// A pointer belongs to the allocator of the device it was allocated on: the current one
// first, then the others.
static void
cuda_storage_free(void *ctx, void *ptr, size_t nbytes)
{
    (void)ctx;
    (void)nbytes;
    int current = 0;
    if (ptr == NULL) {
        return;
    }
    if (cudaGetDevice(&current) != cudaSuccess) {
        cudaGetLastError();
        current = 0;
    }
    if (current >= 0 && current < ndevices &&
        ptl_caching_allocator_release(allocators[current], ptr) == 0) {
        return;
    }
    ptl_error_clear();
    for (int d = 0; d < ndevices; d++) {
        if (d != current && ptl_caching_allocator_release(allocators[d], ptr) == 0) {
            return;
        }
        ptl_error_clear();
    }
}

// A growing storage's bytes into its new block: on the current stream, then waited for
// (a storage resize_ or an out= argument resized is synchronous, as in PyTorch).
static int
cuda_storage_copy(void *ctx, void *dst, const void *src, size_t nbytes)
{
    (void)ctx;
    return ptl_cuda_memcpy(dst, 1, src, 1, nbytes);
}

static const PtlAllocator cuda_storage_allocator = {
    "cuda", cuda_storage_alloc, cuda_storage_free, NULL, PTL_DEVICE_CUDA, cuda_storage_copy,
};

extern "C" int
ptl_cuda_register_allocator(void)
{
    PtlAllocatorConf conf;
    int n = ptl_cuda_device_count();
    if (ptl_allocator_conf_parse(getenv("PTL_CUDA_ALLOC_CONF"), &conf) < 0) {
        return -1;
    }
    n = n < MAX_DEVICES ? n : MAX_DEVICES;
    for (int d = 0; d < n; d++) {
        allocators[d] = ptl_caching_allocator_new(&cuda_ops, (void *)(intptr_t)d, d, &conf);
        if (allocators[d] == NULL) {
            while (d-- > 0) {
                ptl_caching_allocator_free(allocators[d]);
                allocators[d] = NULL;
            }
            return -1;
        }
    }
    ndevices = n;
    ptl_allocator_register(PTL_DEVICE_CUDA, &cuda_storage_allocator);
    return 0;
}

extern "C" const struct PtlDeviceMemoryOps *
ptl_cuda_device_memory_ops(void)
{
    return &cuda_ops;
}

extern "C" struct PtlCachingAllocator *
ptl_cuda_caching_allocator(int device)
{
    return device >= 0 && device < ndevices ? allocators[device] : NULL;
}
