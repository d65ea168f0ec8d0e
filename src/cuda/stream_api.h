/* stream_api.h -- CUDA streams, events and pinned host memory as the C core sees them:
 * extern "C" and POD, like cuda_api.h.  stream.cu holds the CUDA calls (stream_stub.c
 * their CPU-only build), stream_state.c what both builds share: the per-thread current
 * stream and the pinned host allocator.  Mirrors c10/cuda/CUDAStream.h, at/cuda/CUDAEvent.h
 * and at/cuda/CachingHostAllocator.h.  See Note [Current stream] in stream_state.c. */
#ifndef PTL_CUDA_STREAM_API_H
#define PTL_CUDA_STREAM_API_H

#include <stddef.h>

#include "../c10/caching_allocator.h"
#include "../c10/host_allocator.h"

#ifdef __cplusplus
extern "C" {
#endif

struct PtlStorage;   /* c10/storage.h, which nvcc does not compile (C11 atomics) */

/* ---- streams (stream.cu); a PtlStreamId is the cudaStream_t, 0 the legacy default ---- */

/* A CUDA runtime status (a cudaError_t) as 0, or -1 with "CUDA error: <its string> (in
 * what)" set and the runtime's last error cleared: the .cu files' check of a call. */
int ptl_cuda_check(int status, const char *what);

/* A stream of device `device` from its pool (PyTorch's round-robin pool of 32 streams per
 * priority); priority is clamped into the device's range.  0, or -1 with an error set. */
int ptl_cuda_stream_from_pool(int device, int priority, PtlStreamId *out);
/* The device's priority range: least (0) and greatest (negative) priority. */
int ptl_cuda_stream_priority_range(int *least, int *greatest);
int ptl_cuda_stream_priority(PtlStreamId stream, int *priority);
/* *done = 1 when all work queued on stream so far has completed. */
int ptl_cuda_stream_query(PtlStreamId stream, int *done);
int ptl_cuda_stream_synchronize(PtlStreamId stream);

/* ---- events (stream.cu) ---- */

enum { PTL_CUDA_EVENT_TIMING = 1, PTL_CUDA_EVENT_BLOCKING = 2,
       PTL_CUDA_EVENT_INTERPROCESS = 4 };
/* A new event on device `device` with the PTL_CUDA_EVENT_* flags; 0 or -1. */
int ptl_cuda_event_create(int device, int flags, void **event);
void ptl_cuda_event_destroy(void *event);
int ptl_cuda_event_record(void *event, PtlStreamId stream);
/* *done = 1 when the work captured by the event has completed. */
int ptl_cuda_event_query(void *event, int *done);
int ptl_cuda_event_synchronize(void *event);
/* Work queued on stream from now on waits for the event (cudaStreamWaitEvent). */
int ptl_cuda_stream_wait_event(PtlStreamId stream, void *event);
/* Milliseconds between two completed timing events; 0 or -1 with an error set. */
int ptl_cuda_event_elapsed_time(void *start, void *end, float *ms);

/* ---- copies and pinned memory ---- */

/* cudaMemcpyAsync of nbytes between contiguous buffers on `stream`, returning at once: the
 * host side must be pinned memory that stays alive until the copy is done (the caller
 * records the stream on its block).  0, or -1 with an error set. */
int ptl_cuda_memcpy_async(void *dst, int dst_on_device, const void *src, int src_on_device,
                          size_t nbytes, PtlStreamId stream);
/* cudaHostAlloc / cudaFreeHost and the events as the host allocator's device interface
 * (stream.cu), or NULL in a CPU-only build. */
const PtlDeviceMemoryOps *ptl_cuda_host_memory_ops(void);

/* ---- the per-thread current stream and the pinned storages (stream_state.c) ---- */

#define PTL_CUDA_MAX_STREAM_DEVICES 64

/* The calling thread's current stream on device (0, the legacy default, until set). */
PtlStreamId ptl_cuda_current_stream(int device);
void ptl_cuda_set_current_stream(int device, PtlStreamId stream);
/* The calling thread's current stream on the current device (stream.cu; the kernels'
 * launches and the copies use it). */
PtlStreamId ptl_cuda_current_stream_here(void);

/* The process's pinned host allocator, created at the first call; NULL with PyTorch's
 * error when no CUDA device can pin memory. */
PtlHostAllocator *ptl_cuda_host_allocator(void);
/* Tests only: ptl_cuda_host_allocator() returns a (a fake device's; NULL: the real one
 * again); a must outlive every storage pinned while it was in place. */
void ptl_cuda_set_host_allocator_for_testing(PtlHostAllocator *a);
/* A new storage of nbytes on the CPU in pinned memory (new ref), or NULL with an error. */
struct PtlStorage *ptl_pinned_storage_new(size_t nbytes);
/* 1 when the storage's bytes are pinned memory of the host allocator. */
int ptl_storage_is_pinned(const struct PtlStorage *s);
/* When the CPU storage s is pinned, marks its block as used by stream (an asynchronous
 * copy from or to it); otherwise does nothing.  0, or -1 with an error set. */
int ptl_pinned_storage_record_stream(const struct PtlStorage *s, PtlStreamId stream);

#ifdef __cplusplus
}
#endif
#endif
