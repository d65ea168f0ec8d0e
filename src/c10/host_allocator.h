/* host_allocator.h -- the caching allocator of pinned (page-locked) host memory, written
 * against the same device interface as the device caching allocator, so that the CUDA
 * build puts cudaHostAlloc behind it (src/cuda/stream.cu) and tests put the fake device
 * (caching_allocator_fake.c).  Mirrors aten/src/ATen/core/CachingHostAllocator.h.  See
 * Note [Caching host allocator] in host_allocator.c. */
#ifndef PTL_C10_HOST_ALLOCATOR_H
#define PTL_C10_HOST_ALLOCATOR_H

#include <stddef.h>
#include <stdint.h>

#include "caching_allocator.h"
#include "memory_stats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A duration statistic in microseconds (PyTorch's DurationStat). */
typedef struct PtlDurationStat {
    int64_t total, max, min, count;
} PtlDurationStat;

/* torch.cuda.host_memory_stats(): blocks owned (active + cached) and their bytes, blocks
 * handed out and their bytes, host mallocs and frees with their times. */
typedef struct PtlHostMemoryStats {
    PtlStat allocations, allocated_bytes, active_requests, active_bytes;
    int64_t num_host_alloc, num_host_free;
    PtlDurationStat host_alloc_time, host_free_time;
} PtlHostMemoryStats;

typedef struct PtlHostAllocator PtlHostAllocator;

/* A new allocator over ops/ctx (borrowed; they must outlive it; ops->mem_get_info is not
 * used).  NULL with an error set on no memory. */
PtlHostAllocator *ptl_host_allocator_new(const PtlDeviceMemoryOps *ops, void *ctx);
/* Waits for the pending events and gives every block back, live ones included. */
void ptl_host_allocator_free(PtlHostAllocator *a);
/* A block of at least nbytes (the size rounded up to a power of two); NULL with an error
 * set (a failed host malloc is PTL_ERR_MEMORY).  nbytes 0 gives NULL and no error. */
void *ptl_host_allocator_malloc(PtlHostAllocator *a, size_t nbytes);
/* Returns the block at ptr; when streams used it (record_stream) it is reused only after
 * the events then recorded on them complete.  0, or -1 with an error on an unknown ptr. */
int ptl_host_allocator_release(PtlHostAllocator *a, void *ptr);
/* Marks the live block at ptr as used by work queued on `stream` (an asynchronous copy).
 * 0, or -1 with an error on an unknown ptr. */
int ptl_host_allocator_record_stream(PtlHostAllocator *a, void *ptr, PtlStreamId stream);
/* 1 when ptr lies inside a block of this allocator, live or cached (Tensor.is_pinned). */
int ptl_host_allocator_contains(PtlHostAllocator *a, const void *ptr);
/* Frees the blocks whose events completed, then gives every cached block back. */
void ptl_host_allocator_empty_cache(PtlHostAllocator *a);
PtlHostMemoryStats ptl_host_allocator_stats(PtlHostAllocator *a);
void ptl_host_allocator_reset_peak(PtlHostAllocator *a);
void ptl_host_allocator_reset_accumulated(PtlHostAllocator *a);

#ifdef __cplusplus
}
#endif
#endif
