/* caching_allocator.c -- the device caching allocator's bookkeeping, in plain C over the
 * PtlDeviceMemoryOps interface.  Mirrors c10/cuda/CUDACachingAllocator.cpp (the
 * DeviceCachingAllocator class) and CUDAAllocatorConfig.cpp.
 *
 * Note [Caching allocator]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * Device malloc and free are slow and synchronise the device, so memory is taken from the
 * device in segments and never given back until empty_cache() or an out-of-memory retry.
 * - Requests are rounded up to a multiple of 512 bytes (or, with roundup_power2_divisions:N,
 *   to one of N steps between two powers of two).  A rounded request of at most 1 MiB comes
 *   from the small pool, whose segments are 2 MiB; a larger one from the large pool, whose
 *   segments are 20 MiB for requests under 10 MiB and the request rounded up to 2 MiB above.
 * - A segment is a chain of blocks ordered by address (prev/next).  Serving a request from a
 *   bigger free block splits it when the remainder is worth keeping: at least 512 bytes in the
 *   small pool, more than 1 MiB in the large pool (and never a block of max_split_size or
 *   more).  A freed block merges with its free neighbours, so a segment whose blocks are all
 *   free is one block again and empty_cache() can give it back.
 * - The free blocks of a pool are kept sorted by (stream, size, address): the best fit is the
 *   first block at or after (stream, size), and it must be on the request's stream, so a
 *   block freed on one stream is only reused by that stream.  A block used on other streams
 *   too (record_stream) is not reused when freed: an event is recorded on each of those
 *   streams, and the block stays "active, pending free" until every event has completed; the
 *   events are polled at each malloc and waited for by empty_cache() and the OOM retry.
 * - Blocks of max_split_size or more ("oversize") are never split, and a request below
 *   max_split_size is never served by one; a request of max_split_size or more takes a cached
 *   oversize block only when it wastes less than 20 MiB.
 * - On a failed device malloc the cache is released (whole free segments, after waiting for
 *   the pending events) and the malloc retried once (num_alloc_retries); a second failure is
 *   PyTorch's OutOfMemoryError message, plus the largest free block and the three largest
 *   live allocations.  A per-process fraction
 *   makes any malloc that would take reserved memory past fraction * total fail the same way.
 * - The head block of a segment (prev == NULL) keeps its Block for the segment's life: a split
 *   keeps the front in the existing Block and a merge keeps the lower Block, so the segment
 *   list can hold head pointers.
 * One mutex guards everything; the device ops are called with it held.
 *
 * Note [Private pools]
 * ~~~~~~~~~~~~~~~~~~~~
 * A CUDA graph replays its kernels on the addresses they had at capture, so the memory a
 * graph uses must stay its own for the graph's life (CUDACachingAllocator's PrivatePool).
 * While a stream is captured, begin_allocate_to_pool routes its allocations to a private
 * pool: a pair of small/large free sets of its own, whose segments come from the device
 * like any other.  A block of a private pool goes back to that pool when freed, during the
 * capture or after it, so later allocations of the same capture (or of another graph
 * sharing the pool, captured later) reuse it, and an ordinary allocation never does.  The
 * pool counts its users (graphs); release_pool drops one, and a pool with none is
 * "freeable": release_cached (empty_cache, the out-of-memory retry) gives its whole free
 * segments back to the device, and the pool is deleted once it has no segment left.  A
 * block still live then (a graph's output the program kept) keeps its segment until it is
 * freed and the cache emptied again, as in PyTorch.
 * While any capture is underway the allocator makes no call that a capture forbids:
 * events are not polled (cudaEventQuery would invalidate the capture), nothing is given
 * back (cudaFree synchronises), and a block freed with record_stream uses waits, as
 * pending, until the last capture ends to have its events recorded. */
#define _DEFAULT_SOURCE
#include "caching_allocator.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

#define MIN_BLOCK_SIZE ((size_t)512)                  /* all sizes are multiples of this */
#define SMALL_SIZE ((size_t)1 << 20)                  /* largest request of the small pool */
#define SMALL_BUFFER ((size_t)2 << 20)                /* small pool segments */
#define LARGE_BUFFER ((size_t)20 << 20)               /* large pool segments under 10 MiB */
#define MIN_LARGE_ALLOC ((size_t)10 << 20)
#define ROUND_LARGE ((size_t)2 << 20)                 /* large segments round up to this */

typedef struct Block {
    char *ptr;
    size_t size;
    size_t requested;        /* the caller's size while allocated */
    PtlStreamId stream;      /* the stream the segment was allocated for */
    int is_large;
    int allocated;
    int event_count;         /* pending record_stream events (freed, not yet reusable) */
    struct Block *prev, *next;
    PtlStreamId *uses;       /* other streams that used it (record_stream) */
    int nuses, cap_uses;
    struct PrivatePool *priv;   /* the private pool of its segment, NULL for the ordinary */
} Block;

/* A sorted array of blocks: the free pools by (stream, size, address), the allocated blocks
 * and the segment heads by address. */
typedef struct BlockSet {
    Block **v;
    int64_t n, cap;
} BlockSet;

typedef PtlPendingEvent PendingEvent;   /* block: a Block */

/* A graph's private pool (Note [Private pools]). */
typedef struct PrivatePool {
    PtlMempoolId id;
    int use_count;        /* users; 0: freeable */
    int64_t segments;     /* segments whose blocks belong to it */
    BlockSet pools[2];    /* [0] small, [1] large: its free blocks */
} PrivatePool;

/* A capture underway: the allocations on `stream` come from `pool`. */
typedef struct PoolRoute {
    PtlStreamId stream;
    PrivatePool *pool;
} PoolRoute;

struct PtlCachingAllocator {
    pthread_mutex_t mutex;
    const PtlDeviceMemoryOps *ops;
    void *ctx;
    int device;
    PtlAllocatorConf conf;
    BlockSet pools[2];          /* [0] small, [1] large */
    BlockSet live;              /* allocated blocks */
    BlockSet segments;          /* segment heads */
    PendingEvent *events;
    int64_t nevents, cap_events;
    PrivatePool **private_pools;
    int64_t npools, cap_pools;
    PoolRoute *routes;          /* captures underway */
    int64_t nroutes, cap_routes;
    Block **deferred;           /* freed during a capture, waiting to record their events */
    int64_t ndeferred, cap_deferred;
    PtlMemoryStats stats;
    size_t reserved;            /* bytes in segments */
    double fraction;            /* 1.0 unless set */
    size_t allowed;             /* fraction * total, SIZE_MAX when unset */
};

/* ---- sorted block sets ---- */

static int
by_pool_order(const Block *a, PtlStreamId stream, size_t size, const char *ptr)
{
    if (a->stream != stream) {
        return a->stream < stream ? -1 : 1;
    }
    if (a->size != size) {
        return a->size < size ? -1 : 1;
    }
    return a->ptr < ptr ? -1 : a->ptr > ptr;
}

/* The first index whose block is not before (stream, size, ptr) in pool order, or, with
 * by_address, whose address is not below ptr. */
static int64_t
lower_bound(const BlockSet *s, int by_address, PtlStreamId stream, size_t size,
            const char *ptr)
{
    int64_t lo = 0, hi = s->n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int before = by_address ? s->v[mid]->ptr < ptr
                                : by_pool_order(s->v[mid], stream, size, ptr) < 0;
        if (before) {
            lo = mid + 1;
        }
        else {
            hi = mid;
        }
    }
    return lo;
}

/* v, an array of n elements of `size` bytes and room for *cap, with room for one more:
 * v itself, or a larger copy (v freed, *cap updated); NULL with an error on no host memory
 * (v kept). */
static void *
grow(void *v, int64_t n, int64_t *cap, size_t size)
{
    if (n < *cap) {
        return v;
    }
    int64_t c = *cap ? 2 * *cap : 16;
    void *nv = realloc(v, (size_t)c * size);
    if (nv == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "caching allocator: out of host memory");
        return NULL;
    }
    *cap = c;
    return nv;
}

static int
set_insert(BlockSet *s, int by_address, Block *b)
{
    Block **v = grow(s->v, s->n, &s->cap, sizeof(Block *));
    if (v == NULL) {
        return -1;
    }
    s->v = v;
    int64_t i = lower_bound(s, by_address, b->stream, b->size, b->ptr);
    memmove(s->v + i + 1, s->v + i, (size_t)(s->n - i) * sizeof(Block *));
    s->v[i] = b;
    s->n++;
    return 0;
}

/* Removes b, which must be in s (found by its current key). */
static void
set_remove(BlockSet *s, int by_address, const Block *b)
{
    int64_t i = lower_bound(s, by_address, b->stream, b->size, b->ptr);
    memmove(s->v + i, s->v + i + 1, (size_t)(s->n - i - 1) * sizeof(Block *));
    s->n--;
}

static BlockSet *
pool_of(PtlCachingAllocator *a, const Block *b)
{
    return b->priv != NULL ? &b->priv->pools[b->is_large] : &a->pools[b->is_large];
}

static PtlStatType
stat_type(const Block *b)
{
    return b->is_large ? PTL_STAT_LARGE_POOL : PTL_STAT_SMALL_POOL;
}

static int
is_split(const Block *b)
{
    return b->prev != NULL || b->next != NULL;
}

/* ---- sizes ---- */

/* Rounds up to one of `divisions` equal steps between the powers of two around size. */
static size_t
round_power2_division(size_t size, size_t divisions)
{
    if ((size & (size - 1)) == 0) {
        return size;
    }
    size_t floor2 = (size_t)1 << (63 - __builtin_clzll((unsigned long long)size));
    size_t step = floor2 / divisions;
    if (step == 0) {
        return floor2 << 1;
    }
    return (size + step - 1) / step * step;
}

static size_t
round_size(const PtlAllocatorConf *conf, size_t size)
{
    if (size < MIN_BLOCK_SIZE) {
        return MIN_BLOCK_SIZE;
    }
    size_t div = conf->roundup_power2_divisions;
    if (div > 1 && size > MIN_BLOCK_SIZE * div) {
        return round_power2_division(size, div);
    }
    return (size + MIN_BLOCK_SIZE - 1) / MIN_BLOCK_SIZE * MIN_BLOCK_SIZE;
}

static size_t
segment_size(size_t size)
{
    if (size <= SMALL_SIZE) {
        return SMALL_BUFFER;
    }
    if (size < MIN_LARGE_ALLOC) {
        return LARGE_BUFFER;
    }
    return (size + ROUND_LARGE - 1) / ROUND_LARGE * ROUND_LARGE;
}

static int
should_split(const PtlCachingAllocator *a, const Block *b, size_t size)
{
    size_t remaining = b->size - size;
    if (!b->is_large) {
        return remaining >= MIN_BLOCK_SIZE;
    }
    return size < a->conf.max_split_size && remaining > SMALL_SIZE;
}

const char *
ptl_format_bytes(char *buf, size_t n, size_t bytes)
{
    if (bytes <= 1024) {
        snprintf(buf, n, "%zu bytes", bytes);
    }
    else if (bytes <= ((size_t)1 << 20)) {
        snprintf(buf, n, "%.2f KiB", (double)bytes / 1024.0);
    }
    else if (bytes <= ((size_t)1 << 30)) {
        snprintf(buf, n, "%.2f MiB", (double)bytes / 1048576.0);
    }
    else {
        snprintf(buf, n, "%.2f GiB", (double)bytes / 1073741824.0);
    }
    return buf;
}

/* ---- segments and blocks ---- */

static void
block_delete(Block *b)
{
    free(b->uses);
    free(b);
}

static Block *
block_new(char *ptr, size_t size, PtlStreamId stream, int is_large)
{
    Block *b = calloc(1, sizeof(Block));
    if (b == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "caching allocator: out of host memory");
        return NULL;
    }
    b->ptr = ptr;
    b->size = size;
    b->stream = stream;
    b->is_large = is_large;
    return b;
}

/* A new segment of `size` bytes taken from the device, not in any pool.  Returns NULL with
 * *status 1 when the device (or the memory fraction) has no room, or -1 with an error set. */
static Block *
segment_alloc(PtlCachingAllocator *a, size_t size, int is_large, PtlStreamId stream,
              PrivatePool *priv, int retry, int *status)
{
    void *ptr = NULL;
    *status = 1;
    if (retry) {
        a->stats.num_alloc_retries++;
    }
    if (a->allowed != SIZE_MAX && (a->reserved > a->allowed || size > a->allowed - a->reserved)) {
        return NULL;
    }
    *status = a->ops->malloc(a->ctx, size, &ptr);
    if (*status != 0) {
        return NULL;
    }
    Block *b = block_new(ptr, size, stream, is_large);
    if (b == NULL || set_insert(&a->segments, 1, b) < 0) {
        a->ops->free(a->ctx, ptr);
        free(b);
        *status = -1;
        return NULL;
    }
    PtlStatType t = stat_type(b);
    b->priv = priv;
    if (priv != NULL) {
        priv->segments++;
    }
    a->reserved += size;
    a->stats.num_device_alloc++;
    ptl_stat_update_pool(a->stats.segment, t, 1);
    ptl_stat_update_pool(a->stats.reserved_bytes, t, (int64_t)size);
    if (size >= a->conf.max_split_size) {
        ptl_stat_update(&a->stats.oversize_segments, 1);
    }
    return b;
}

/* Gives a whole free segment (in its pool) back to the device. */
static void
segment_release(PtlCachingAllocator *a, Block *b)
{
    PtlStatType t = stat_type(b);
    set_remove(pool_of(a, b), 0, b);
    set_remove(&a->segments, 1, b);
    a->ops->free(a->ctx, b->ptr);
    if (b->priv != NULL) {
        b->priv->segments--;
    }
    a->reserved -= b->size;
    a->stats.num_device_free++;
    ptl_stat_update_pool(a->stats.segment, t, -1);
    ptl_stat_update_pool(a->stats.reserved_bytes, t, -(int64_t)b->size);
    if (b->size >= a->conf.max_split_size) {
        ptl_stat_update(&a->stats.oversize_segments, -1);
    }
    block_delete(b);
}

static int
is_free(const Block *b)
{
    return b != NULL && !b->allocated && b->event_count == 0;
}

/* Puts a block that is neither allocated nor waited on back in its pool, merged with its
 * free neighbours.  Should the host be out of memory for the pool's array, the block is left
 * out of the pool: its bytes stay reserved and unused, which is all that can be done. */
static void
block_free(PtlCachingAllocator *a, Block *b)
{
    BlockSet *pool = pool_of(a, b);
    PtlStatType t = stat_type(b);
    size_t orig_size = b->size, requested = b->requested;
    int64_t net_blocks = 0, net_bytes = 0;
    b->requested = 0;
    Block *n = b->next;
    if (is_free(n)) {
        set_remove(pool, 0, n);
        net_blocks--;
        net_bytes -= (int64_t)n->size;
        b->size += n->size;
        b->next = n->next;
        if (b->next != NULL) {
            b->next->prev = b;
        }
        block_delete(n);
    }
    Block *p = b->prev;
    if (is_free(p)) {
        set_remove(pool, 0, p);
        net_blocks--;
        net_bytes -= (int64_t)p->size;
        p->size += b->size;
        p->next = b->next;
        if (p->next != NULL) {
            p->next->prev = p;
        }
        block_delete(b);
        b = p;
    }
    (void)set_insert(pool, 0, b);
    if (is_split(b)) {
        net_blocks++;
        net_bytes += (int64_t)b->size;
    }
    ptl_stat_update_pool(a->stats.inactive_split, t, net_blocks);
    ptl_stat_update_pool(a->stats.inactive_split_bytes, t, net_bytes);
    ptl_stat_update_pool(a->stats.active, t, -1);
    ptl_stat_update_pool(a->stats.active_bytes, t, -(int64_t)orig_size);
    ptl_stat_update_pool(a->stats.requested_bytes, t, -(int64_t)requested);
}

int64_t
ptl_pending_events_process(const PtlDeviceMemoryOps *ops, void *ctx, PtlPendingEvent *events,
                           int64_t n, int wait, void (*done)(void *owner, void *block),
                           void *owner)
{
    int64_t kept = 0;
    for (int64_t i = 0; i < n; i++) {
        PtlPendingEvent e = events[i];
        if (wait) {
            ops->event_synchronize(ctx, e.event);
        }
        else if (ops->event_query(ctx, e.event) != 1) {
            events[kept++] = e;
            continue;
        }
        ops->event_destroy(ctx, e.event);
        done(owner, e.block);
    }
    return kept;
}

static void
event_done(void *owner, void *block)
{
    Block *b = block;
    if (--b->event_count == 0) {
        block_free(owner, b);
    }
}

/* Frees the blocks whose record_stream events have all completed (or, with wait, waits for
 * every event first). */
static void
process_events(PtlCachingAllocator *a, int wait)
{
    a->nevents = ptl_pending_events_process(a->ops, a->ctx, a->events, a->nevents, wait,
                                            event_done, a);
}

/* Gives the whole free segments of a free set back, largest first, while reserved memory
 * is above only_above. */
static void
release_free_segments(PtlCachingAllocator *a, BlockSet *pool, size_t only_above)
{
    for (int64_t i = pool->n - 1; i >= 0 && a->reserved > only_above; i--) {
        if (i < pool->n && !is_split(pool->v[i])) {
            segment_release(a, pool->v[i]);
        }
    }
}

static void
private_pool_delete(PtlCachingAllocator *a, int64_t i)
{
    PrivatePool *pp = a->private_pools[i];
    free(pp->pools[0].v);
    free(pp->pools[1].v);
    free(pp);
    memmove(a->private_pools + i, a->private_pools + i + 1,
            (size_t)(a->npools - i - 1) * sizeof(PrivatePool *));
    a->npools--;
}

/* Waits for the pending events and gives every whole free segment of the ordinary pools and
 * of the freeable private pools back, deleting the private pools left without a segment
 * (Note [Private pools]); with only_above set, stops once reserved memory is at most that.
 * Never called while a capture is underway. */
static void
release_cached(PtlCachingAllocator *a, size_t only_above)
{
    process_events(a, 1);
    a->stats.num_sync_all_streams++;
    for (int large = 0; large < 2; large++) {
        release_free_segments(a, &a->pools[large], only_above);
    }
    for (int64_t i = a->npools - 1; i >= 0; i--) {
        PrivatePool *pp = a->private_pools[i];
        if (pp->use_count == 0) {
            release_free_segments(a, &pp->pools[0], only_above);
            release_free_segments(a, &pp->pools[1], only_above);
            if (pp->segments == 0) {
                private_pool_delete(a, i);
            }
        }
    }
}

/* The best-fitting free block on `stream` for a rounded request, still in its pool. */
static Block *
find_free_block(PtlCachingAllocator *a, BlockSet *pool, PtlStreamId stream, size_t size)
{
    int64_t i = lower_bound(pool, 0, stream, size, NULL);
    if (i == pool->n || pool->v[i]->stream != stream) {
        return NULL;
    }
    Block *b = pool->v[i];
    size_t max_split = a->conf.max_split_size;
    if (size < max_split && b->size >= max_split) {
        return NULL;   /* no oversize block for a request that could split */
    }
    if (size >= max_split && b->size - size >= LARGE_BUFFER) {
        return NULL;   /* an oversize block wastes at most 20 MiB */
    }
    return b;
}

/* Allocates b (taken out of its pool when in_pool) for a rounded request of `size` bytes,
 * splitting off the rest when worth it.  -1 on no host memory (b is left as it was). */
static int
block_take(PtlCachingAllocator *a, Block *b, int in_pool, size_t size, size_t requested)
{
    BlockSet *pool = pool_of(a, b);
    PtlStatType t = stat_type(b);
    int already_split = is_split(b);
    if (should_split(a, b, size)) {
        Block *rest = block_new(b->ptr + size, b->size - size, b->stream, b->is_large);
        if (rest == NULL) {
            return -1;
        }
        rest->priv = b->priv;
        if (in_pool) {
            set_remove(pool, 0, b);
        }
        if (set_insert(pool, 0, rest) < 0) {
            block_delete(rest);
            if (in_pool) {
                (void)set_insert(pool, 0, b);
            }
            return -1;
        }
        rest->prev = b;
        rest->next = b->next;
        if (b->next != NULL) {
            b->next->prev = rest;
        }
        b->next = rest;
        b->size = size;
        if (already_split) {
            ptl_stat_update_pool(a->stats.inactive_split_bytes, t, -(int64_t)size);
        }
        else {
            ptl_stat_update_pool(a->stats.inactive_split, t, 1);
            ptl_stat_update_pool(a->stats.inactive_split_bytes, t, (int64_t)rest->size);
        }
    }
    else {
        if (in_pool) {
            set_remove(pool, 0, b);
        }
        if (already_split) {
            ptl_stat_update_pool(a->stats.inactive_split, t, -1);
            ptl_stat_update_pool(a->stats.inactive_split_bytes, t, -(int64_t)b->size);
        }
    }
    b->allocated = 1;
    b->requested = requested;
    ptl_stat_update_pool(a->stats.allocation, t, 1);
    ptl_stat_update_pool(a->stats.allocated_bytes, t, (int64_t)b->size);
    ptl_stat_update_pool(a->stats.active, t, 1);
    ptl_stat_update_pool(a->stats.active_bytes, t, (int64_t)b->size);
    ptl_stat_update_pool(a->stats.requested_bytes, t, (int64_t)requested);
    if (b->size >= a->conf.max_split_size) {
        ptl_stat_update(&a->stats.oversize_allocations, 1);
    }
    return 0;
}

/* The private pool that the allocations on `stream` come from, or NULL: the ordinary pools.
 * The latest capture on the stream wins. */
static PrivatePool *
route_of(const PtlCachingAllocator *a, PtlStreamId stream)
{
    for (int64_t i = a->nroutes - 1; i >= 0; i--) {
        if (a->routes[i].stream == stream) {
            return a->routes[i].pool;
        }
    }
    return NULL;
}

/* Drops segments while reserved memory is above garbage_collection_threshold of the allowed
 * memory.  PyTorch frees the least recently reused blocks first, without waiting for pending
 * events; here the pending events are waited for and whole free segments go, largest first,
 * which reaches the same bound. */
static void
collect_garbage(PtlCachingAllocator *a)
{
    double limit = a->conf.garbage_collection_threshold * (double)a->allowed;
    if (a->conf.garbage_collection_threshold > 0 && a->allowed != SIZE_MAX &&
        (double)a->reserved > limit) {
        release_cached(a, (size_t)limit);
    }
}

static size_t
largest_free_block(const PtlCachingAllocator *a)
{
    size_t best = 0;
    for (int large = 0; large < 2; large++) {
        for (int64_t i = 0; i < a->pools[large].n; i++) {
            if (a->pools[large].v[i]->size > best) {
                best = a->pools[large].v[i]->size;
            }
        }
    }
    return best;
}

/* " The largest live allocations are 8.00 MiB, 2.00 MiB, 512 bytes." (the three largest),
 * or "" when nothing is allocated. */
static void
format_largest_live(const PtlCachingAllocator *a, char *buf, size_t n)
{
    size_t top[3] = {0, 0, 0};
    for (int64_t i = 0; i < a->live.n; i++) {
        size_t size = a->live.v[i]->size;
        for (int k = 0; k < 3; k++) {
            if (size > top[k]) {
                size_t displaced = top[k];
                top[k] = size;
                size = displaced;
            }
        }
    }
    buf[0] = '\0';
    for (int k = 0; k < 3 && top[k] > 0; k++) {
        char one[32];
        size_t used = strlen(buf);
        snprintf(buf + used, n - used, "%s%s",
                 k == 0 ? " The largest live allocations are " : ", ",
                 ptl_format_bytes(one, sizeof(one), top[k]));
    }
    if (buf[0] != '\0') {
        size_t used = strlen(buf);
        snprintf(buf + used, n - used, ".");
    }
}

static void
set_oom_error(PtlCachingAllocator *a, size_t alloc_size)
{
    size_t dev_free = 0, dev_total = 0;
    char tried[32], total[32], free_s[32], used[32], allowed[48] = "", alloc_s[32], unalloc[32],
        largest[32], live[128];
    int64_t allocated = a->stats.allocated_bytes[PTL_STAT_ALL].current;
    if (a->ops->mem_get_info(a->ctx, &dev_free, &dev_total) < 0) {
        ptl_error_clear();
    }
    format_largest_live(a, live, sizeof(live));
    if (a->allowed != SIZE_MAX) {
        char buf[32];
        snprintf(allowed, sizeof(allowed), "%s allowed; ",
                 ptl_format_bytes(buf, sizeof(buf), a->allowed));
    }
    ptl_error_set(
        PTL_ERR_OUT_OF_MEMORY,
        "%s out of memory. Tried to allocate %s. GPU %d has a total capacity of %s of which %s "
        "is free. Including non-PyTorch memory, this process has %s memory in use. %sOf the "
        "allocated memory %s is allocated by PyTorch, and %s is reserved by PyTorch but "
        "unallocated. The largest free block is %s.%s If reserved but unallocated memory is "
        "large try setting PTL_CUDA_ALLOC_CONF=max_split_size_mb:N to avoid fragmentation.  "
        "See documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
        a->ops->name, ptl_format_bytes(tried, sizeof(tried), alloc_size), a->device,
        ptl_format_bytes(total, sizeof(total), dev_total),
        ptl_format_bytes(free_s, sizeof(free_s), dev_free),
        ptl_format_bytes(used, sizeof(used), dev_total - dev_free), allowed,
        ptl_format_bytes(alloc_s, sizeof(alloc_s), (size_t)allocated),
        ptl_format_bytes(unalloc, sizeof(unalloc), a->reserved - (size_t)allocated),
        ptl_format_bytes(largest, sizeof(largest), largest_free_block(a)), live);
}

void *
ptl_caching_allocator_malloc(PtlCachingAllocator *a, size_t nbytes, PtlStreamId stream)
{
    if (nbytes == 0) {
        return NULL;
    }
    if (nbytes > ((size_t)1 << 62)) {   /* rounding would wrap: no device has this */
        pthread_mutex_lock(&a->mutex);
        a->stats.num_ooms++;
        set_oom_error(a, nbytes);
        pthread_mutex_unlock(&a->mutex);
        return NULL;
    }
    pthread_mutex_lock(&a->mutex);
    int capturing = a->nroutes > 0;   /* no event query, no free: Note [Private pools] */
    if (!capturing) {
        process_events(a, 0);
    }
    size_t size = round_size(&a->conf, nbytes);
    int is_large = size > SMALL_SIZE;
    size_t alloc_size = segment_size(size);
    int status = 0;
    PrivatePool *priv = route_of(a, stream);
    if (!capturing) {
        collect_garbage(a);
    }
    Block *b = find_free_block(a, priv ? &priv->pools[is_large] : &a->pools[is_large], stream,
                               size);
    int in_pool = b != NULL;
    if (b == NULL) {
        b = segment_alloc(a, alloc_size, is_large, stream, priv, 0, &status);
    }
    if (b == NULL && status == 1 && !capturing) {
        release_cached(a, 0);
        b = segment_alloc(a, alloc_size, is_large, stream, priv, 1, &status);
    }
    if (b == NULL) {
        if (status == 1) {
            a->stats.num_ooms++;
            set_oom_error(a, alloc_size);
        }
        goto error;
    }
    if (block_take(a, b, in_pool, size, nbytes) < 0 || set_insert(&a->live, 1, b) < 0) {
        if (b->allocated) {
            b->allocated = 0;
            ptl_stat_update_pool(a->stats.allocation, stat_type(b), -1);
            ptl_stat_update_pool(a->stats.allocated_bytes, stat_type(b), -(int64_t)b->size);
            if (b->size >= a->conf.max_split_size) {
                ptl_stat_update(&a->stats.oversize_allocations, -1);
            }
            block_free(a, b);
        }
        else if (!in_pool) {
            (void)set_insert(pool_of(a, b), 0, b);
        }
        goto error;
    }
    pthread_mutex_unlock(&a->mutex);
    return b->ptr;
error:
    pthread_mutex_unlock(&a->mutex);
    return NULL;
}

static Block *
find_live(PtlCachingAllocator *a, void *ptr)
{
    int64_t i = lower_bound(&a->live, 1, 0, 0, ptr);
    if (i == a->live.n || a->live.v[i]->ptr != (char *)ptr) {
        ptl_error_set(PTL_ERR_RUNTIME, "invalid device pointer: %p", ptr);
        return NULL;
    }
    return a->live.v[i];
}

/* Waits for the events already recorded for b and drops them (b stays where it is). */
static void
wait_block_events(PtlCachingAllocator *a, Block *b)
{
    int64_t kept = 0;
    for (int64_t i = 0; i < a->nevents; i++) {
        PendingEvent e = a->events[i];
        if (e.block != b) {
            a->events[kept++] = e;
            continue;
        }
        a->ops->event_synchronize(a->ctx, e.event);
        a->ops->event_destroy(a->ctx, e.event);
        b->event_count--;
    }
    a->nevents = kept;
}

/* Records an event on every stream that used b; b is freed when the last completes.  When an
 * event cannot be recorded, waits for the ones recorded for b (its work is then done) and
 * frees b at once. */
static void
block_defer_free(PtlCachingAllocator *a, Block *b)
{
    for (int i = 0; i < b->nuses; i++) {
        void *ev = NULL;
        PendingEvent *events = grow(a->events, a->nevents, &a->cap_events, sizeof(PendingEvent));
        if (events != NULL) {
            a->events = events;
        }
        if (events == NULL || (ev = a->ops->event_record(a->ctx, b->uses[i])) == NULL) {
            ptl_error_clear();
            wait_block_events(a, b);
            break;
        }
        a->events[a->nevents].event = ev;
        a->events[a->nevents].block = b;
        a->nevents++;
        b->event_count++;
    }
    b->nuses = 0;
    if (b->event_count == 0) {
        block_free(a, b);
    }
}

int
ptl_caching_allocator_release(PtlCachingAllocator *a, void *ptr)
{
    if (ptr == NULL) {
        return 0;
    }
    pthread_mutex_lock(&a->mutex);
    Block *b = find_live(a, ptr);
    if (b == NULL) {
        pthread_mutex_unlock(&a->mutex);
        return -1;
    }
    PtlStatType t = stat_type(b);
    set_remove(&a->live, 1, b);
    b->allocated = 0;
    ptl_stat_update_pool(a->stats.allocation, t, -1);
    ptl_stat_update_pool(a->stats.allocated_bytes, t, -(int64_t)b->size);
    if (b->size >= a->conf.max_split_size) {
        ptl_stat_update(&a->stats.oversize_allocations, -1);
    }
    if (b->nuses > 0 && a->nroutes > 0) {
        /* no event can be recorded during a capture: the block stays pending, held by one
         * placeholder event count, until the last capture ends (Note [Private pools]) */
        Block **deferred = grow(a->deferred, a->ndeferred, &a->cap_deferred, sizeof(Block *));
        if (deferred == NULL) {
            ptl_error_clear();
            b->nuses = 0;   /* the block's streams cannot be waited for: reuse it at once */
            block_free(a, b);
        }
        else {
            a->deferred = deferred;
            b->event_count = 1;
            a->deferred[a->ndeferred++] = b;
        }
    }
    else if (b->nuses > 0) {
        block_defer_free(a, b);
    }
    else {
        block_free(a, b);
    }
    pthread_mutex_unlock(&a->mutex);
    return 0;
}

int
ptl_caching_allocator_record_stream(PtlCachingAllocator *a, void *ptr, PtlStreamId stream)
{
    int status = 0;
    pthread_mutex_lock(&a->mutex);
    Block *b = find_live(a, ptr);
    if (b == NULL) {
        status = -1;
        goto done;
    }
    if (stream == b->stream) {
        goto done;   /* the allocation stream is waited on by construction */
    }
    for (int i = 0; i < b->nuses; i++) {
        if (b->uses[i] == stream) {
            goto done;
        }
    }
    if (b->nuses == b->cap_uses) {
        int cap = b->cap_uses ? 2 * b->cap_uses : 4;
        PtlStreamId *v = realloc(b->uses, (size_t)cap * sizeof(PtlStreamId));
        if (v == NULL) {
            status = ptl_error_set(PTL_ERR_MEMORY, "caching allocator: out of host memory");
            goto done;
        }
        b->uses = v;
        b->cap_uses = cap;
    }
    b->uses[b->nuses++] = stream;
done:
    pthread_mutex_unlock(&a->mutex);
    return status;
}

/* During a capture nothing can be given back (cudaFree synchronises): a no-op then. */
void
ptl_caching_allocator_empty_cache(PtlCachingAllocator *a)
{
    pthread_mutex_lock(&a->mutex);
    if (a->nroutes == 0) {
        release_cached(a, 0);
    }
    pthread_mutex_unlock(&a->mutex);
}

/* ---- private pools (Note [Private pools]) ---- */

static int
same_id(PtlMempoolId x, PtlMempoolId y)
{
    return x.first == y.first && x.second == y.second;
}

static int64_t
find_private_pool(const PtlCachingAllocator *a, PtlMempoolId id)
{
    for (int64_t i = 0; i < a->npools; i++) {
        if (same_id(a->private_pools[i]->id, id)) {
            return i;
        }
    }
    return -1;
}

int
ptl_caching_allocator_begin_allocate_to_pool(PtlCachingAllocator *a, PtlMempoolId id,
                                             PtlStreamId stream)
{
    PrivatePool *pp = NULL;
    if (id.first == 0 && id.second == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "beginAllocateToPool: (0, 0) is not a pool id");
    }
    pthread_mutex_lock(&a->mutex);
    int64_t i = find_private_pool(a, id);
    PoolRoute *routes = grow(a->routes, a->nroutes, &a->cap_routes, sizeof(PoolRoute));
    if (routes == NULL) {
        goto error;
    }
    a->routes = routes;
    if (i < 0) {
        PrivatePool **pools = grow(a->private_pools, a->npools, &a->cap_pools,
                                   sizeof(PrivatePool *));
        if (pools == NULL) {
            goto error;
        }
        a->private_pools = pools;
    }
    if (i >= 0) {
        pp = a->private_pools[i];
    }
    else {
        if ((pp = calloc(1, sizeof(PrivatePool))) == NULL) {
            ptl_error_set(PTL_ERR_MEMORY, "caching allocator: out of host memory");
            goto error;
        }
        pp->id = id;
        a->private_pools[a->npools++] = pp;
    }
    pp->use_count++;
    a->routes[a->nroutes].stream = stream;
    a->routes[a->nroutes].pool = pp;
    a->nroutes++;
    pthread_mutex_unlock(&a->mutex);
    return 0;
error:
    pthread_mutex_unlock(&a->mutex);
    return -1;
}

int
ptl_caching_allocator_end_allocate_to_pool(PtlCachingAllocator *a, PtlMempoolId id)
{
    pthread_mutex_lock(&a->mutex);
    int64_t i = a->nroutes - 1;
    while (i >= 0 && !same_id(a->routes[i].pool->id, id)) {
        i--;
    }
    if (i < 0) {
        pthread_mutex_unlock(&a->mutex);
        return ptl_error_set(PTL_ERR_RUNTIME, "endAllocatePool: not currently recording to "
                                              "mempool_id (%llu, %llu)",
                             (unsigned long long)id.first, (unsigned long long)id.second);
    }
    memmove(a->routes + i, a->routes + i + 1, (size_t)(a->nroutes - i - 1) * sizeof(PoolRoute));
    a->nroutes--;
    if (a->nroutes == 0) {
        for (int64_t k = 0; k < a->ndeferred; k++) {
            Block *b = a->deferred[k];
            b->event_count = 0;
            block_defer_free(a, b);
        }
        a->ndeferred = 0;
    }
    pthread_mutex_unlock(&a->mutex);
    return 0;
}

int
ptl_caching_allocator_release_pool(PtlCachingAllocator *a, PtlMempoolId id)
{
    pthread_mutex_lock(&a->mutex);
    int64_t i = find_private_pool(a, id);
    if (i < 0 || a->private_pools[i]->use_count == 0) {
        pthread_mutex_unlock(&a->mutex);
        return ptl_error_set(PTL_ERR_RUNTIME, "releasePool: no pool (%llu, %llu) in use",
                             (unsigned long long)id.first, (unsigned long long)id.second);
    }
    a->private_pools[i]->use_count--;
    pthread_mutex_unlock(&a->mutex);
    return 0;
}

int
ptl_caching_allocator_pool_use_count(PtlCachingAllocator *a, PtlMempoolId id)
{
    pthread_mutex_lock(&a->mutex);
    int64_t i = find_private_pool(a, id);
    int n = i < 0 ? -1 : a->private_pools[i]->use_count;
    pthread_mutex_unlock(&a->mutex);
    return n;
}

int
ptl_caching_allocator_set_memory_fraction(PtlCachingAllocator *a, double fraction)
{
    size_t dev_free = 0, dev_total = 0;
    if (!(fraction >= 0.0 && fraction <= 1.0)) {
        return ptl_error_set(PTL_ERR_VALUE, "Invalid fraction value: %g. Allowed range: 0~1",
                             fraction);
    }
    pthread_mutex_lock(&a->mutex);
    int status = a->ops->mem_get_info(a->ctx, &dev_free, &dev_total);
    if (status == 0) {
        a->fraction = fraction;
        a->allowed = (size_t)(fraction * (double)dev_total);
    }
    pthread_mutex_unlock(&a->mutex);
    return status;
}

double
ptl_caching_allocator_memory_fraction(PtlCachingAllocator *a)
{
    pthread_mutex_lock(&a->mutex);
    double f = a->fraction;
    pthread_mutex_unlock(&a->mutex);
    return f;
}

int
ptl_caching_allocator_mem_get_info(PtlCachingAllocator *a, size_t *free_bytes,
                                   size_t *total_bytes)
{
    pthread_mutex_lock(&a->mutex);
    int status = a->ops->mem_get_info(a->ctx, free_bytes, total_bytes);
    pthread_mutex_unlock(&a->mutex);
    return status;
}

PtlMemoryStats
ptl_caching_allocator_stats(PtlCachingAllocator *a)
{
    pthread_mutex_lock(&a->mutex);
    PtlMemoryStats s = a->stats;
    pthread_mutex_unlock(&a->mutex);
    s.max_split_size = a->conf.max_split_size == SIZE_MAX ? -1
                                                          : (int64_t)a->conf.max_split_size;
    return s;
}

void
ptl_caching_allocator_reset_peak(PtlCachingAllocator *a)
{
    pthread_mutex_lock(&a->mutex);
    ptl_memory_stats_reset_peak(&a->stats);
    pthread_mutex_unlock(&a->mutex);
}

void
ptl_caching_allocator_reset_accumulated(PtlCachingAllocator *a)
{
    pthread_mutex_lock(&a->mutex);
    ptl_memory_stats_reset_accumulated(&a->stats);
    pthread_mutex_unlock(&a->mutex);
}

PtlSegmentInfo *
ptl_caching_allocator_snapshot(PtlCachingAllocator *a, int64_t *nsegments)
{
    pthread_mutex_lock(&a->mutex);
    int64_t n = a->segments.n;
    PtlSegmentInfo *out = n ? calloc((size_t)n, sizeof(PtlSegmentInfo)) : NULL;
    *nsegments = 0;
    if (n > 0 && out == NULL) {
        goto nomem;
    }
    for (int64_t i = 0; i < n; i++) {
        const Block *head = a->segments.v[i];
        PtlSegmentInfo *s = &out[i];
        int64_t nblocks = 0;
        for (const Block *b = head; b != NULL; b = b->next) {
            nblocks++;
        }
        s->blocks = calloc((size_t)nblocks, sizeof(PtlBlockInfo));
        if (s->blocks == NULL) {
            *nsegments = i;
            ptl_caching_allocator_snapshot_free(out, i);
            goto nomem;
        }
        s->address = (uintptr_t)head->ptr;
        s->stream = head->stream;
        if (head->priv != NULL) {
            s->pool = head->priv->id;
        }
        s->is_large = head->is_large;
        for (const Block *b = head; b != NULL; b = b->next) {
            PtlBlockInfo *info = &s->blocks[s->nblocks++];
            info->address = (uintptr_t)b->ptr;
            info->size = b->size;
            info->requested_size = b->requested;
            info->state = b->allocated ? PTL_BLOCK_ACTIVE_ALLOCATED
                          : b->event_count ? PTL_BLOCK_ACTIVE_PENDING_FREE
                                           : PTL_BLOCK_INACTIVE;
            s->total_size += b->size;
            s->allocated_size += b->allocated ? b->size : 0;
            s->active_size += info->state != PTL_BLOCK_INACTIVE ? b->size : 0;
            s->requested_size += b->requested;
        }
    }
    *nsegments = n;
    pthread_mutex_unlock(&a->mutex);
    return out;
nomem:
    pthread_mutex_unlock(&a->mutex);
    ptl_error_set(PTL_ERR_MEMORY, "caching allocator: out of host memory");
    return NULL;
}

void
ptl_caching_allocator_snapshot_free(PtlSegmentInfo *segments, int64_t nsegments)
{
    for (int64_t i = 0; i < nsegments; i++) {
        free(segments[i].blocks);
    }
    free(segments);
}

PtlCachingAllocator *
ptl_caching_allocator_new(const PtlDeviceMemoryOps *ops, void *ctx, int device,
                          const PtlAllocatorConf *conf)
{
    PtlCachingAllocator *a = calloc(1, sizeof(PtlCachingAllocator));
    if (a == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "caching allocator: out of host memory");
        return NULL;
    }
    pthread_mutex_init(&a->mutex, NULL);
    a->ops = ops;
    a->ctx = ctx;
    a->device = device;
    if (conf != NULL) {
        a->conf = *conf;
    }
    else {
        (void)ptl_allocator_conf_parse(NULL, &a->conf);
    }
    a->fraction = 1.0;
    a->allowed = SIZE_MAX;
    return a;
}

void
ptl_caching_allocator_free(PtlCachingAllocator *a)
{
    if (a == NULL) {
        return;
    }
    process_events(a, 1);
    for (int64_t i = 0; i < a->segments.n; i++) {
        Block *b = a->segments.v[i];
        a->ops->free(a->ctx, b->ptr);
        while (b != NULL) {
            Block *next = b->next;
            block_delete(b);
            b = next;
        }
    }
    while (a->npools > 0) {
        private_pool_delete(a, a->npools - 1);
    }
    free(a->private_pools);
    free(a->routes);
    free(a->deferred);
    free(a->pools[0].v);
    free(a->pools[1].v);
    free(a->live.v);
    free(a->segments.v);
    free(a->events);
    pthread_mutex_destroy(&a->mutex);
    free(a);
}
