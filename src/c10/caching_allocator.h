/* caching_allocator.h -- a device caching allocator written against a device-malloc
 * interface, so that the same bookkeeping serves the CUDA device (src/cuda) and a fake device
 * on the CPU (caching_allocator_fake.c, for tests).  Mirrors
 * c10/cuda/CUDACachingAllocator.cpp and CUDAAllocatorConfig.cpp.  See Note [Caching
 * allocator] in caching_allocator.c. */
#ifndef PTL_C10_CACHING_ALLOCATOR_H
#define PTL_C10_CACHING_ALLOCATOR_H

#include <stddef.h>
#include <stdint.h>

#include "memory_stats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A stream is an opaque handle; 0 is the device's default stream. */
typedef uintptr_t PtlStreamId;

/* What the allocator needs from a device.  Every function is called with the allocator's
 * mutex held.  malloc returns 0 with *ptr set, 1 when the device is out of memory (no error
 * set: the allocator frees its cache and retries, then reports), or -1 with an error set.
 * event_record records an event on a stream (returning a handle, or NULL with an error set);
 * event_query returns 1 once the work queued before the event is done, 0 before;
 * event_synchronize waits for it. */
typedef struct PtlDeviceMemoryOps {
    const char *name;   /* "CUDA" in messages: "CUDA out of memory." */
    int (*malloc)(void *ctx, size_t nbytes, void **ptr);
    void (*free)(void *ctx, void *ptr);
    /* free and total bytes of the device (cudaMemGetInfo); 0 or -1 with an error set */
    int (*mem_get_info)(void *ctx, size_t *free_bytes, size_t *total_bytes);
    void *(*event_record)(void *ctx, PtlStreamId stream);
    int (*event_query)(void *ctx, void *event);
    void (*event_synchronize)(void *ctx, void *event);
    void (*event_destroy)(void *ctx, void *event);
} PtlDeviceMemoryOps;

/* An event recorded on a stream that used a freed block (record_stream): the block is
 * reusable once all of its events have completed.  block is the allocator's own type. */
typedef struct PtlPendingEvent {
    void *event;
    void *block;
} PtlPendingEvent;

/* Polls the n events in order (with wait, waits for each instead), destroys the completed
 * ones and calls done(owner, block) for each; the others stay at the front, in order.
 * Returns how many stay.  Shared by the device and the host caching allocators; called with
 * the allocator's mutex held. */
int64_t ptl_pending_events_process(const PtlDeviceMemoryOps *ops, void *ctx,
                                   PtlPendingEvent *events, int64_t n, int wait,
                                   void (*done)(void *owner, void *block), void *owner);

/* The settings of PTL_CUDA_ALLOC_CONF (PYTORCH_CUDA_ALLOC_CONF's syntax), 0 meaning unset. */
typedef struct PtlAllocatorConf {
    size_t max_split_size;                /* bytes; SIZE_MAX when unset */
    double garbage_collection_threshold;  /* in (0, 1); 0 when unset */
    size_t roundup_power2_divisions;      /* a power of 2; 0 or 1: round to 512 bytes */
} PtlAllocatorConf;

/* Parses "key:value,key:value" (NULL or "" gives the defaults; caching_allocator_conf.c).  Returns 0, or -1 with a
 * RuntimeError naming the unknown key or the bad value; expandable_segments:True is refused
 * (this allocator has no expandable segments). */
int ptl_allocator_conf_parse(const char *conf, PtlAllocatorConf *out);

typedef struct PtlCachingAllocator PtlCachingAllocator;

/* A new allocator for one device (number `device`, in messages).  ops and ctx are borrowed and
 * must outlive it.  NULL with an error set on a bad conf or no memory. */
PtlCachingAllocator *ptl_caching_allocator_new(const PtlDeviceMemoryOps *ops, void *ctx,
                                               int device, const PtlAllocatorConf *conf);
/* Gives every segment back to the device, live blocks included, and frees the allocator. */
void ptl_caching_allocator_free(PtlCachingAllocator *a);

/* A block of at least nbytes for use on `stream`; NULL with an error set (PTL_ERR_DEVICE_OOM
 * with PyTorch's message when the device is out of memory).  nbytes 0 gives NULL and no
 * error, as PyTorch's allocator does. */
void *ptl_caching_allocator_malloc(PtlCachingAllocator *a, size_t nbytes, PtlStreamId stream);
/* Returns a block to the cache; when other streams used it (record_stream) it is reused
 * only after their work queued so far is done.  0, or -1 with an error on an unknown
 * pointer. */
int ptl_caching_allocator_release(PtlCachingAllocator *a, void *ptr);
/* Marks the block holding ptr as used by `stream` too (Tensor.record_stream). */
int ptl_caching_allocator_record_stream(PtlCachingAllocator *a, void *ptr,
                                        PtlStreamId stream);
/* Gives every free, unsplit segment back to the device (torch.cuda.empty_cache), after
 * waiting for the pending record_stream events. */
void ptl_caching_allocator_empty_cache(PtlCachingAllocator *a);
/* Limits reserved memory to fraction * total memory; 0, or -1 with an error (a device whose
 * total cannot be read). */
int ptl_caching_allocator_set_memory_fraction(PtlCachingAllocator *a, double fraction);
double ptl_caching_allocator_memory_fraction(PtlCachingAllocator *a);
/* The device's free and total bytes (torch.cuda.mem_get_info); 0, or -1 with an error. */
int ptl_caching_allocator_mem_get_info(PtlCachingAllocator *a, size_t *free_bytes,
                                       size_t *total_bytes);
PtlMemoryStats ptl_caching_allocator_stats(PtlCachingAllocator *a);
void ptl_caching_allocator_reset_peak(PtlCachingAllocator *a);
void ptl_caching_allocator_reset_accumulated(PtlCachingAllocator *a);

/* A private pool's id (PyTorch's MempoolId_t): (graph id, 0) for a graph's own pool,
 * (0, handle) for one made by graph_pool_handle(); (0, 0) is no pool (the ordinary pools).
 * See Note [Private pools] in caching_allocator.c. */
typedef struct PtlMempoolId {
    uint64_t first, second;
} PtlMempoolId;

/* From now on the allocations on `stream` come from the private pool `id`, created at its
 * first use; each call counts one more user of the pool (beginAllocateToPool).  0, or -1
 * with an error set (no host memory, or the id (0, 0)). */
int ptl_caching_allocator_begin_allocate_to_pool(PtlCachingAllocator *a, PtlMempoolId id,
                                                 PtlStreamId stream);
/* Stops routing the allocations of the stream that began allocating to `id`
 * (endAllocateToPool); 0, or -1 with an error when no stream allocates to it. */
int ptl_caching_allocator_end_allocate_to_pool(PtlCachingAllocator *a, PtlMempoolId id);
/* One user of the pool is done with it (releasePool): once none is left, its segments go
 * back to the device at the next empty_cache (or out-of-memory retry) that finds them
 * free.  0, or -1 with an error on an unknown pool. */
int ptl_caching_allocator_release_pool(PtlCachingAllocator *a, PtlMempoolId id);
/* The pool's users, or -1 when the allocator has no such pool (never made, or freed). */
int ptl_caching_allocator_pool_use_count(PtlCachingAllocator *a, PtlMempoolId id);

/* One block of a segment, for memory_snapshot(). */
typedef struct PtlBlockInfo {
    uintptr_t address;
    size_t size;
    size_t requested_size;
    int state;   /* PtlBlockState */
} PtlBlockInfo;

typedef enum PtlBlockState {
    PTL_BLOCK_INACTIVE,               /* "inactive": free, in a pool */
    PTL_BLOCK_ACTIVE_ALLOCATED,       /* "active_allocated" */
    PTL_BLOCK_ACTIVE_PENDING_FREE,    /* "active_pending_free": freed, waiting on streams */
} PtlBlockState;

typedef struct PtlSegmentInfo {
    uintptr_t address;
    size_t total_size;
    size_t allocated_size;
    size_t active_size;
    size_t requested_size;
    PtlStreamId stream;
    PtlMempoolId pool;   /* (0, 0): the ordinary pools */
    int is_large;
    int64_t nblocks;
    PtlBlockInfo *blocks;   /* owned by the snapshot */
} PtlSegmentInfo;

/* The segments ordered by address, each with its blocks; *nsegments set.  The array and its
 * blocks are freed by ptl_caching_allocator_snapshot_free.  NULL with an error on no memory
 * (or NULL and *nsegments 0 when there is no segment). */
PtlSegmentInfo *ptl_caching_allocator_snapshot(PtlCachingAllocator *a, int64_t *nsegments);
void ptl_caching_allocator_snapshot_free(PtlSegmentInfo *segments, int64_t nsegments);

/* PyTorch's format_size: "512 bytes", "1.50 KiB", "20.00 MiB", "2.00 GiB". */
const char *ptl_format_bytes(char *buf, size_t n, size_t bytes);

/* The fake device (caching_allocator_fake.c): malloc-backed, at most `capacity` bytes, with
 * streams 0..PTL_FAKE_STREAMS-1 whose work completes only when the test says so. */
#define PTL_FAKE_STREAMS 64
typedef struct PtlFakeDevice PtlFakeDevice;
extern const PtlDeviceMemoryOps ptl_fake_device_ops;
PtlFakeDevice *ptl_fake_device_new(size_t capacity);   /* NULL with an error set */
void ptl_fake_device_free(PtlFakeDevice *dev);
/* Completes the work queued so far on `stream`: its recorded events become done. */
void ptl_fake_device_complete(PtlFakeDevice *dev, PtlStreamId stream);
/* Bytes currently taken from the fake device, and the events not yet destroyed. */
size_t ptl_fake_device_used(const PtlFakeDevice *dev);
int64_t ptl_fake_device_live_events(const PtlFakeDevice *dev);

#ifdef __cplusplus
}
#endif
#endif
