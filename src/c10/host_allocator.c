/* host_allocator.c -- the pinned host memory cache's bookkeeping, in plain C over the
 * PtlDeviceMemoryOps interface.  Mirrors aten/src/ATen/core/CachingHostAllocator.h
 * (CachingHostAllocatorImpl).
 *
 * Note [Caching host allocator]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * cudaHostAlloc pins pages and maps them for the device: it costs far more than malloc and
 * synchronises with the device, so pinned blocks are cached.
 * - A request is rounded up to a power of two (PyTorch's PowerOf2Ceil), and the block sizes
 *   are the size classes: a freed block is reused only by a request of its own class, so
 *   blocks are never split or merged and a size class is a LIFO free list.
 * - A pinned block is read by the device after the host has moved on: a non_blocking copy
 *   from it is queued on a stream and returns at once.  The copy records that stream on the
 *   block (ptl_host_allocator_record_stream, PyTorch's record_event).  When such a block is
 *   released, an event is recorded on each of its streams and the block stays out of the
 *   free lists until every event has completed; the events are polled at each malloc and
 *   at empty_cache (which, as PyTorch's, does not wait for them).  When an event cannot be
 *   recorded the block is given back to the device instead: cudaFreeHost synchronises, so the
 *   copies from it are done before its pages go.
 * - is_pinned asks whether a pointer lies inside any block of the allocator, live or cached:
 *   the blocks are kept in one array sorted by address.
 * - Statistics are PyTorch's host_memory_stats(): allocations / allocated_bytes count the
 *   blocks owned (handed out or cached), active_requests / active_bytes the blocks handed out
 *   and not yet reusable, with the time spent in the device's malloc and free.
 * One mutex guards everything; the device ops are called with it held. */
#define _POSIX_C_SOURCE 200809L
#include "host_allocator.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"

#define NCLASSES 64   /* size class k holds blocks of 2^k bytes */

typedef struct HostBlock {
    char *ptr;
    size_t size;
    int allocated;
    int event_count;             /* events still pending since it was released */
    PtlStreamId *streams;        /* streams that used it since it was handed out */
    int nstreams, cap_streams;
    struct HostBlock *next_free; /* its size class's free list */
} HostBlock;

typedef PtlPendingEvent HostEvent;   /* block: a HostBlock */

struct PtlHostAllocator {
    pthread_mutex_t mutex;
    const PtlDeviceMemoryOps *ops;
    void *ctx;
    HostBlock **blocks;          /* every block, sorted by address */
    int64_t nblocks, cap_blocks;
    HostBlock *free_lists[NCLASSES];
    HostEvent *events;
    int64_t nevents, cap_events;
    PtlHostMemoryStats stats;
};

static int
size_class(size_t size)
{
    return size <= 1 ? 0 : 64 - __builtin_clzll((unsigned long long)(size - 1));
}

static int64_t
now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void
duration_add(PtlDurationStat *d, int64_t us)
{
    d->min = d->count == 0 || us < d->min ? us : d->min;
    d->max = us > d->max ? us : d->max;
    d->total += us;
    d->count++;
}

/* The index of the first block whose address is not below ptr. */
static int64_t
block_lower_bound(const PtlHostAllocator *a, const char *ptr)
{
    int64_t lo = 0, hi = a->nblocks;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (a->blocks[mid]->ptr < ptr) {
            lo = mid + 1;
        }
        else {
            hi = mid;
        }
    }
    return lo;
}

/* The block that starts at ptr, or NULL. */
static HostBlock *
block_at(const PtlHostAllocator *a, const void *ptr)
{
    int64_t i = block_lower_bound(a, ptr);
    return i < a->nblocks && a->blocks[i]->ptr == ptr ? a->blocks[i] : NULL;
}

/* Grows *v (of *cap items of `item` bytes) to hold n + 1; 0 or -1 with an error set. */
static int
reserve_one(void **v, int64_t *cap, int64_t n, size_t item)
{
    if (n < *cap) {
        return 0;
    }
    int64_t c = *cap ? 2 * *cap : 16;
    void *grown = realloc(*v, (size_t)c * item);
    if (grown == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "host allocator: out of host memory");
    }
    *v = grown;
    *cap = c;
    return 0;
}

/* A block handed out becomes reusable: back on its free list. */
static void
block_cache(PtlHostAllocator *a, HostBlock *b)
{
    int k = size_class(b->size);
    b->next_free = a->free_lists[k];
    a->free_lists[k] = b;
    ptl_stat_update(&a->stats.active_requests, -1);
    ptl_stat_update(&a->stats.active_bytes, -(int64_t)b->size);
}

/* Gives b's pages back to the device and forgets it (b must be on no free list). */
static void
block_destroy(PtlHostAllocator *a, HostBlock *b)
{
    int64_t i = block_lower_bound(a, b->ptr);
    memmove(a->blocks + i, a->blocks + i + 1, (size_t)(a->nblocks - i - 1) * sizeof(b));
    a->nblocks--;
    int64_t t0 = now_us();
    a->ops->free(a->ctx, b->ptr);
    duration_add(&a->stats.host_free_time, now_us() - t0);
    a->stats.num_host_free++;
    ptl_stat_update(&a->stats.allocations, -1);
    ptl_stat_update(&a->stats.allocated_bytes, -(int64_t)b->size);
    free(b->streams);
    free(b);
}

static void
event_done(void *owner, void *block)
{
    HostBlock *b = block;
    if (--b->event_count == 0) {
        block_cache(owner, b);
    }
}

/* Caches the blocks whose events have all completed (or, with wait, waits for them). */
static void
process_events(PtlHostAllocator *a, int wait)
{
    a->nevents = ptl_pending_events_process(a->ops, a->ctx, a->events, a->nevents, wait,
                                            event_done, a);
}

PtlHostAllocator *
ptl_host_allocator_new(const PtlDeviceMemoryOps *ops, void *ctx)
{
    PtlHostAllocator *a = calloc(1, sizeof(PtlHostAllocator));
    if (a == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "host allocator: out of host memory");
        return NULL;
    }
    pthread_mutex_init(&a->mutex, NULL);
    a->ops = ops;
    a->ctx = ctx;
    return a;
}

void
ptl_host_allocator_free(PtlHostAllocator *a)
{
    if (a == NULL) {
        return;
    }
    process_events(a, 1);
    for (int64_t i = a->nblocks - 1; i >= 0; i--) {
        block_destroy(a, a->blocks[i]);
    }
    pthread_mutex_destroy(&a->mutex);
    free(a->blocks);
    free(a->events);
    free(a);
}

/* A new block of `size` bytes from the device, handed out; NULL with an error set. */
static HostBlock *
block_new(PtlHostAllocator *a, size_t size)
{
    void *p = NULL;
    HostBlock *b = calloc(1, sizeof(HostBlock));
    if (b == NULL || reserve_one((void **)&a->blocks, &a->cap_blocks, a->nblocks,
                                 sizeof(HostBlock *)) < 0) {
        free(b);
        ptl_error_set(PTL_ERR_MEMORY, "host allocator: out of host memory");
        return NULL;
    }
    int64_t t0 = now_us();
    int status = a->ops->malloc(a->ctx, size, &p);
    if (status != 0) {
        free(b);
        if (status > 0) {
            char buf[32];
            ptl_error_set(PTL_ERR_MEMORY, "%s error: out of memory (pinning %s of host memory)",
                          a->ops->name, ptl_format_bytes(buf, sizeof(buf), size));
        }
        return NULL;
    }
    duration_add(&a->stats.host_alloc_time, now_us() - t0);
    a->stats.num_host_alloc++;
    b->ptr = p;
    b->size = size;
    int64_t i = block_lower_bound(a, b->ptr);
    memmove(a->blocks + i + 1, a->blocks + i, (size_t)(a->nblocks - i) * sizeof(b));
    a->blocks[i] = b;
    a->nblocks++;
    ptl_stat_update(&a->stats.allocations, 1);
    ptl_stat_update(&a->stats.allocated_bytes, (int64_t)size);
    return b;
}

void *
ptl_host_allocator_malloc(PtlHostAllocator *a, size_t nbytes)
{
    if (nbytes == 0) {
        return NULL;
    }
    if (nbytes > ((size_t)1 << (NCLASSES - 1))) {
        ptl_error_set(PTL_ERR_MEMORY, "host allocator: cannot pin %zu bytes", nbytes);
        return NULL;
    }
    int k = size_class(nbytes);
    pthread_mutex_lock(&a->mutex);
    process_events(a, 0);
    HostBlock *b = a->free_lists[k];
    if (b != NULL) {
        a->free_lists[k] = b->next_free;
    }
    else {
        b = block_new(a, (size_t)1 << k);
    }
    void *p = NULL;
    if (b != NULL) {
        b->allocated = 1;
        b->next_free = NULL;
        ptl_stat_update(&a->stats.active_requests, 1);
        ptl_stat_update(&a->stats.active_bytes, (int64_t)b->size);
        p = b->ptr;
    }
    pthread_mutex_unlock(&a->mutex);
    return p;
}

/* The live block at ptr, or NULL with PyTorch's invalid pointer error. */
static HostBlock *
live_block(PtlHostAllocator *a, const void *ptr)
{
    HostBlock *b = block_at(a, ptr);
    if (b == NULL || !b->allocated) {
        ptl_error_set(PTL_ERR_RUNTIME, "invalid host pointer: %p", ptr);
        return NULL;
    }
    return b;
}

int
ptl_host_allocator_release(PtlHostAllocator *a, void *ptr)
{
    if (ptr == NULL) {
        return 0;
    }
    pthread_mutex_lock(&a->mutex);
    HostBlock *b = live_block(a, ptr);
    if (b == NULL) {
        pthread_mutex_unlock(&a->mutex);
        return -1;
    }
    b->allocated = 0;
    for (int i = 0; i < b->nstreams; i++) {
        void *ev = NULL;
        if (reserve_one((void **)&a->events, &a->cap_events, a->nevents,
                        sizeof(HostEvent)) < 0 ||
            (ev = a->ops->event_record(a->ctx, b->streams[i])) == NULL) {
            /* Note [Caching host allocator]: without an event, the block goes back to the
             * device once the events already recorded for it are gone */
            ptl_error_clear();
            b->nstreams = 0;
            b->event_count = -1;
            break;
        }
        a->events[a->nevents++] = (HostEvent){ev, b};
        b->event_count++;
    }
    b->nstreams = 0;
    if (b->event_count < 0) {
        int64_t kept = 0;
        for (int64_t i = 0; i < a->nevents; i++) {
            if (a->events[i].block == b) {
                a->ops->event_destroy(a->ctx, a->events[i].event);
            }
            else {
                a->events[kept++] = a->events[i];
            }
        }
        a->nevents = kept;
        ptl_stat_update(&a->stats.active_requests, -1);
        ptl_stat_update(&a->stats.active_bytes, -(int64_t)b->size);
        block_destroy(a, b);
    }
    else if (b->event_count == 0) {
        block_cache(a, b);
    }
    pthread_mutex_unlock(&a->mutex);
    return 0;
}

int
ptl_host_allocator_record_stream(PtlHostAllocator *a, void *ptr, PtlStreamId stream)
{
    int status = 0;
    pthread_mutex_lock(&a->mutex);
    HostBlock *b = live_block(a, ptr);
    if (b == NULL) {
        status = -1;
        goto done;
    }
    for (int i = 0; i < b->nstreams; i++) {
        if (b->streams[i] == stream) {
            goto done;
        }
    }
    int64_t cap = b->cap_streams;
    if (reserve_one((void **)&b->streams, &cap, b->nstreams, sizeof(PtlStreamId)) < 0) {
        status = -1;
        goto done;
    }
    b->cap_streams = (int)cap;
    b->streams[b->nstreams++] = stream;
done:
    pthread_mutex_unlock(&a->mutex);
    return status;
}

int
ptl_host_allocator_contains(PtlHostAllocator *a, const void *ptr)
{
    pthread_mutex_lock(&a->mutex);
    const char *p = ptr;
    int64_t i = block_lower_bound(a, p);
    /* the block starting at p, else the one before it when p falls inside it */
    int inside = (i < a->nblocks && a->blocks[i]->ptr == p) ||
                 (i > 0 && p < a->blocks[i - 1]->ptr + a->blocks[i - 1]->size);
    pthread_mutex_unlock(&a->mutex);
    return inside;
}

void
ptl_host_allocator_empty_cache(PtlHostAllocator *a)
{
    pthread_mutex_lock(&a->mutex);
    process_events(a, 0);
    for (int k = 0; k < NCLASSES; k++) {
        while (a->free_lists[k] != NULL) {
            HostBlock *b = a->free_lists[k];
            a->free_lists[k] = b->next_free;
            block_destroy(a, b);
        }
    }
    pthread_mutex_unlock(&a->mutex);
}

PtlHostMemoryStats
ptl_host_allocator_stats(PtlHostAllocator *a)
{
    pthread_mutex_lock(&a->mutex);
    PtlHostMemoryStats s = a->stats;
    pthread_mutex_unlock(&a->mutex);
    return s;
}

void
ptl_host_allocator_reset_peak(PtlHostAllocator *a)
{
    pthread_mutex_lock(&a->mutex);
    PtlStat *stats[] = {&a->stats.allocations, &a->stats.allocated_bytes,
                        &a->stats.active_requests, &a->stats.active_bytes};
    for (size_t i = 0; i < sizeof(stats) / sizeof(stats[0]); i++) {
        stats[i]->peak = stats[i]->current;
    }
    a->stats.host_alloc_time.max = a->stats.host_free_time.max = 0;
    pthread_mutex_unlock(&a->mutex);
}

void
ptl_host_allocator_reset_accumulated(PtlHostAllocator *a)
{
    pthread_mutex_lock(&a->mutex);
    PtlStat *stats[] = {&a->stats.allocations, &a->stats.allocated_bytes,
                        &a->stats.active_requests, &a->stats.active_bytes};
    for (size_t i = 0; i < sizeof(stats) / sizeof(stats[0]); i++) {
        stats[i]->allocated = stats[i]->freed = 0;
    }
    a->stats.num_host_alloc = a->stats.num_host_free = 0;
    memset(&a->stats.host_alloc_time, 0, sizeof(PtlDurationStat));
    memset(&a->stats.host_free_time, 0, sizeof(PtlDurationStat));
    pthread_mutex_unlock(&a->mutex);
}
