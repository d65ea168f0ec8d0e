/* stream_stub.c -- the stream, event and asynchronous copy entry points of a CPU-only build
 * (no nvcc): each fails with PyTorch's error, and no memory can be pinned.  With nvcc,
 * stream.cu provides them and this file compiles to nothing. */
#include "stream_api.h"

#include "../c10/error.h"

#ifndef PTL_WITH_CUDA
static int
not_built(void)
{
    return ptl_error_set(PTL_ERR_RUNTIME, "Torch not compiled with CUDA enabled");
}

int
ptl_cuda_stream_from_pool(int device, int priority, PtlStreamId *out)
{
    (void)device;
    (void)priority;
    (void)out;
    return not_built();
}

int
ptl_cuda_stream_priority_range(int *least, int *greatest)
{
    (void)least;
    (void)greatest;
    return not_built();
}

int
ptl_cuda_stream_priority(PtlStreamId stream, int *priority)
{
    (void)stream;
    (void)priority;
    return not_built();
}

int
ptl_cuda_stream_query(PtlStreamId stream, int *done)
{
    (void)stream;
    (void)done;
    return not_built();
}

int
ptl_cuda_stream_synchronize(PtlStreamId stream)
{
    (void)stream;
    return not_built();
}

PtlStreamId
ptl_cuda_current_stream_here(void)
{
    return 0;
}

int
ptl_cuda_event_create(int device, int flags, void **event)
{
    (void)device;
    (void)flags;
    (void)event;
    return not_built();
}

void
ptl_cuda_event_destroy(void *event)
{
    (void)event;
}

int
ptl_cuda_event_record(void *event, PtlStreamId stream)
{
    (void)event;
    (void)stream;
    return not_built();
}

int
ptl_cuda_event_query(void *event, int *done)
{
    (void)event;
    (void)done;
    return not_built();
}

int
ptl_cuda_event_synchronize(void *event)
{
    (void)event;
    return not_built();
}

int
ptl_cuda_stream_wait_event(PtlStreamId stream, void *event)
{
    (void)stream;
    (void)event;
    return not_built();
}

int
ptl_cuda_event_elapsed_time(void *start, void *end, float *ms)
{
    (void)start;
    (void)end;
    (void)ms;
    return not_built();
}

int
ptl_cuda_memcpy_async(void *dst, int dst_on_device, const void *src, int src_on_device,
                      size_t nbytes, PtlStreamId stream)
{
    (void)dst;
    (void)dst_on_device;
    (void)src;
    (void)src_on_device;
    (void)nbytes;
    (void)stream;
    return not_built();
}

const PtlDeviceMemoryOps *
ptl_cuda_host_memory_ops(void)
{
    return NULL;
}
#endif
