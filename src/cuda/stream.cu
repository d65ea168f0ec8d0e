// stream.cu -- CUDA streams, events, asynchronous copies and pinned host memory.  Mirrors
// c10/cuda/CUDAStream.cpp (the stream pool), at/cuda/CUDAEvent.h and
// at/cuda/CachingHostAllocator.cpp (cudaHostAlloc behind the host allocator).  See
// Note [Current stream] in stream_state.c and Note [Caching host allocator] in
// src/c10/host_allocator.c.
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdint.h>

#include "../c10/error.h"
#include "cuda_api.h"
#include "stream_api.h"

#define POOL_SIZE 32        // streams per priority and device, as PyTorch's kStreamsPerPool
#define MAX_PRIORITIES 8    // priority levels kept per device

extern "C" int ptl_cuda_check(int status, const char *what)
{
    cudaError_t err = (cudaError_t)status;
    if (err == cudaSuccess) {
        return 0;
    }
    cudaGetLastError();  // clear it so the next call starts clean
    return ptl_error_set(PTL_ERR_RUNTIME, "CUDA error: %s (in %s)", cudaGetErrorString(err),
                         what);
}

static int
check(cudaError_t err, const char *what)
{
    return ptl_cuda_check((int)err, what);
}

// ---- the stream pool ----

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static cudaStream_t pools[PTL_CUDA_MAX_STREAM_DEVICES][MAX_PRIORITIES][POOL_SIZE];
static unsigned next_in_pool[PTL_CUDA_MAX_STREAM_DEVICES][MAX_PRIORITIES];

extern "C" int ptl_cuda_stream_priority_range(int *least, int *greatest)
{
    return check(cudaDeviceGetStreamPriorityRange(least, greatest),
                 "cudaDeviceGetStreamPriorityRange");
}

// Streams are created the first time their slot comes round and never destroyed: a handle
// stays valid for the process (Note [Current stream]).
extern "C" int ptl_cuda_stream_from_pool(int device, int priority, PtlStreamId *out)
{
    int least = 0, greatest = 0, previous = 0, status = 0;
    if (device < 0 || device >= PTL_CUDA_MAX_STREAM_DEVICES) {
        return ptl_error_set(PTL_ERR_RUNTIME, "CUDA error: invalid device ordinal");
    }
    if (check(cudaGetDevice(&previous), "cudaGetDevice") < 0 ||
        check(cudaSetDevice(device), "cudaSetDevice") < 0) {
        return -1;
    }
    if (ptl_cuda_stream_priority_range(&least, &greatest) < 0) {
        cudaSetDevice(previous);
        return -1;
    }
    // lower numbers are higher priorities; out of range ones map to the nearest end
    priority = priority > least ? least : priority < greatest ? greatest : priority;
    int level = least - priority < MAX_PRIORITIES ? least - priority : MAX_PRIORITIES - 1;
    pthread_mutex_lock(&pool_lock);
    unsigned slot = next_in_pool[device][level]++ % POOL_SIZE;
    cudaStream_t *s = &pools[device][level][slot];
    if (*s == NULL) {
        status = check(cudaStreamCreateWithPriority(s, cudaStreamNonBlocking, priority),
                       "cudaStreamCreateWithPriority");
    }
    pthread_mutex_unlock(&pool_lock);
    cudaSetDevice(previous);
    *out = (PtlStreamId)*s;
    return status;
}

extern "C" int ptl_cuda_stream_priority(PtlStreamId stream, int *priority)
{
    return check(cudaStreamGetPriority((cudaStream_t)stream, priority),
                 "cudaStreamGetPriority");
}

extern "C" int ptl_cuda_stream_query(PtlStreamId stream, int *done)
{
    cudaError_t err = cudaStreamQuery((cudaStream_t)stream);
    *done = err == cudaSuccess;
    return err == cudaErrorNotReady ? (cudaGetLastError(), 0) : check(err, "cudaStreamQuery");
}

extern "C" int ptl_cuda_stream_synchronize(PtlStreamId stream)
{
    return check(cudaStreamSynchronize((cudaStream_t)stream), "cudaStreamSynchronize");
}

extern "C" PtlStreamId ptl_cuda_current_stream_here(void)
{
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return ptl_cuda_current_stream(device);
}

// ---- events ----

extern "C" int ptl_cuda_event_create(int device, int flags, void **event)
{
    int previous = 0;
    unsigned cuda_flags = (flags & PTL_CUDA_EVENT_TIMING ? 0u : cudaEventDisableTiming) |
                          (flags & PTL_CUDA_EVENT_BLOCKING ? cudaEventBlockingSync : 0u) |
                          (flags & PTL_CUDA_EVENT_INTERPROCESS ? cudaEventInterprocess : 0u);
    if (check(cudaGetDevice(&previous), "cudaGetDevice") < 0 ||
        check(cudaSetDevice(device), "cudaSetDevice") < 0) {
        return -1;
    }
    cudaEvent_t ev = NULL;
    int status = check(cudaEventCreateWithFlags(&ev, cuda_flags), "cudaEventCreateWithFlags");
    cudaSetDevice(previous);
    *event = (void *)ev;
    return status;
}

extern "C" void ptl_cuda_event_destroy(void *event)
{
    if (event != NULL && cudaEventDestroy((cudaEvent_t)event) != cudaSuccess) {
        cudaGetLastError();
    }
}

extern "C" int ptl_cuda_event_record(void *event, PtlStreamId stream)
{
    return check(cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream), "cudaEventRecord");
}

extern "C" int ptl_cuda_event_query(void *event, int *done)
{
    cudaError_t err = cudaEventQuery((cudaEvent_t)event);
    *done = err == cudaSuccess;
    return err == cudaErrorNotReady ? (cudaGetLastError(), 0) : check(err, "cudaEventQuery");
}

extern "C" int ptl_cuda_event_synchronize(void *event)
{
    return check(cudaEventSynchronize((cudaEvent_t)event), "cudaEventSynchronize");
}

extern "C" int ptl_cuda_stream_wait_event(PtlStreamId stream, void *event)
{
    return check(cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0),
                 "cudaStreamWaitEvent");
}

extern "C" int ptl_cuda_event_elapsed_time(void *start, void *end, float *ms)
{
    return check(cudaEventElapsedTime(ms, (cudaEvent_t)start, (cudaEvent_t)end),
                 "cudaEventElapsedTime");
}

// ---- copies ----

static cudaMemcpyKind
copy_kind(int dst_on_device, int src_on_device)
{
    return dst_on_device ? (src_on_device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                         : (src_on_device ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
}

extern "C" int ptl_cuda_memcpy_async(void *dst, int dst_on_device, const void *src,
                                     int src_on_device, size_t nbytes, PtlStreamId stream)
{
    if (nbytes == 0) {
        return 0;
    }
    return check(cudaMemcpyAsync(dst, src, nbytes, copy_kind(dst_on_device, src_on_device),
                                 (cudaStream_t)stream), "cudaMemcpyAsync");
}

// ---- pinned host memory: the host allocator's device interface ----

static int
host_malloc(void *ctx, size_t nbytes, void **ptr)
{
    (void)ctx;
    // portable: the pages are pinned for every device, as PyTorch's allocator asks
    cudaError_t err = cudaHostAlloc(ptr, nbytes, cudaHostAllocPortable);
    if (err == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        return 1;
    }
    return check(err, "cudaHostAlloc");
}

static void
host_free(void *ctx, void *ptr)
{
    (void)ctx;
    if (cudaFreeHost(ptr) != cudaSuccess) {
        cudaGetLastError();
    }
}

// An event on the stream's device: the current one (a pinned block is shared by devices,
// the stream that used it is of the device current when the copy ran).
static void *
host_event_record(void *ctx, PtlStreamId stream)
{
    (void)ctx;
    int device = 0;
    void *ev = NULL;
    if (check(cudaGetDevice(&device), "cudaGetDevice") < 0 ||
        ptl_cuda_event_create(device, 0, &ev) < 0) {
        return NULL;
    }
    if (ptl_cuda_event_record(ev, stream) < 0) {
        ptl_cuda_event_destroy(ev);
        return NULL;
    }
    return ev;
}

// 1 when done; an event that reports an error counts as done (the context is broken and
// every later CUDA call reports that).
static int
host_event_query(void *ctx, void *event)
{
    (void)ctx;
    int done = 0;
    if (ptl_cuda_event_query(event, &done) < 0) {
        ptl_error_clear();
        return 1;
    }
    return done;
}

static void
host_event_synchronize(void *ctx, void *event)
{
    (void)ctx;
    if (ptl_cuda_event_synchronize(event) < 0) {
        ptl_error_clear();
    }
}

static void
host_event_destroy(void *ctx, void *event)
{
    (void)ctx;
    ptl_cuda_event_destroy(event);
}

static const PtlDeviceMemoryOps host_ops = {
    "CUDA", host_malloc, host_free, NULL, host_event_record, host_event_query,
    host_event_synchronize, host_event_destroy,
};

extern "C" const PtlDeviceMemoryOps *ptl_cuda_host_memory_ops(void)
{
    return &host_ops;
}
