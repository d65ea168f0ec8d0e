/* stream_state.c -- what the CUDA and the CPU-only builds share about streams: the calling
 * thread's current stream per device, and pinned host storages over the process's caching
 * host allocator.  Mirrors the current-stream part of c10/cuda/CUDAStream.cpp and
 * at/cuda/CachingHostAllocator.cpp (getCachingHostAllocator).
 *
 * Note [Current stream]
 * ~~~~~~~~~~~~~~~~~~~~~
 * Each thread has a current stream per device, the legacy default stream (0) until
 * torch.cuda.set_stream or a `with torch.cuda.stream(s)` block changes it, as PyTorch's
 * thread-local current streams.  Kernel launches, copies and the caching allocator's
 * blocks take the current stream of the current device (ptl_cuda_current_stream_here), so
 * a tensor allocated inside a stream block is cached for that stream.  Streams come from a
 * per-device pool and are never destroyed, so a handle stays valid for the process. */
#include "stream_api.h"

#include <pthread.h>
#include <stdio.h>

#include "../c10/error.h"
#include "../c10/storage.h"
#include "cuda_api.h"

static _Thread_local PtlStreamId current_streams[PTL_CUDA_MAX_STREAM_DEVICES];

PtlStreamId
ptl_cuda_current_stream(int device)
{
    return device >= 0 && device < PTL_CUDA_MAX_STREAM_DEVICES ? current_streams[device] : 0;
}

void
ptl_cuda_set_current_stream(int device, PtlStreamId stream)
{
    if (device >= 0 && device < PTL_CUDA_MAX_STREAM_DEVICES) {
        current_streams[device] = stream;
    }
}

/* ---- pinned host memory ---- */

/* PyTorch's message when no accelerator can pin memory (a CPU-only build, no device). */
#define NO_PINNED_ALLOCATOR "Cannot access accelerator device when none is available."

static PtlHostAllocator *host_allocator;
static char host_allocator_error[256];
static pthread_once_t host_allocator_once = PTHREAD_ONCE_INIT;

static void
create_host_allocator(void)
{
    const PtlDeviceMemoryOps *ops = ptl_cuda_host_memory_ops();
    if (ops == NULL || ptl_cuda_lazy_init() < 0) {
        ptl_error_clear();
        return;
    }
    host_allocator = ptl_host_allocator_new(ops, NULL);
    if (host_allocator == NULL) {
        snprintf(host_allocator_error, sizeof(host_allocator_error), "%s",
                 ptl_error_message());
        ptl_error_clear();
    }
}

static PtlHostAllocator *testing_host_allocator;

void
ptl_cuda_set_host_allocator_for_testing(PtlHostAllocator *a)
{
    testing_host_allocator = a;
}

PtlHostAllocator *
ptl_cuda_host_allocator(void)
{
    if (testing_host_allocator != NULL) {
        return testing_host_allocator;
    }
    pthread_once(&host_allocator_once, create_host_allocator);
    if (host_allocator == NULL) {
        ptl_error_set(PTL_ERR_RUNTIME, "%s", host_allocator_error[0] != '\0'
                                                 ? host_allocator_error : NO_PINNED_ALLOCATOR);
    }
    return host_allocator;
}

static void
pinned_deleter(void *ctx, void *data)
{
    if (ptl_host_allocator_release(ctx, data) < 0) {
        ptl_error_clear();   /* a deleter cannot fail; the block was the allocator's */
    }
}

PtlStorage *
ptl_pinned_storage_new(size_t nbytes)
{
    PtlHostAllocator *a = ptl_cuda_host_allocator();
    if (a == NULL) {
        return NULL;
    }
    void *data = ptl_host_allocator_malloc(a, nbytes);
    if (data == NULL && nbytes > 0) {
        return NULL;
    }
    PtlStorage *s = ptl_storage_new_foreign(data, nbytes, ptl_device_cpu(), pinned_deleter, a);
    if (s == NULL) {
        pinned_deleter(a, data);
    }
    return s;
}

/* A storage of no bytes has no pinned block (PyTorch asks the driver about its NULL
 * pointer), so it is not pinned. */
int
ptl_storage_is_pinned(const PtlStorage *s)
{
    return s->deleter == pinned_deleter && s->data != NULL;
}

int
ptl_pinned_storage_record_stream(const PtlStorage *s, PtlStreamId stream)
{
    if (!ptl_storage_is_pinned(s)) {
        return 0;
    }
    return ptl_host_allocator_record_stream(s->deleter_ctx, s->data, stream);
}
