/* allocator.c -- the CPU allocator.  Mirrors c10/core/CPUAllocator.cpp.
 *
 * Note [CPU small-block cache]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Blocks up to 64 KiB are rounded up to a power of two (at least 64 bytes) and, when freed,
 * kept on a per-size-class stack (at most CACHE_DEPTH blocks each) instead of going back to
 * the C library: small tensors come and go at every op, and aligned_alloc/free of page-ish
 * sizes costs far more than a stack push/pop.  A spinlock guards the stacks; blocks are
 * never touched while on them, so fork() just inherits them.
 *
 * Blocks of 4 MiB and more are advised to use transparent huge pages where the kernel
 * leaves that to madvise (as NumPy does): a fresh block costs one page fault per 2 MiB
 * instead of per 4 KiB, which is most of the time of a large elementwise op.
 *
 * Note [Allocator cache bypass]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * With PTL_NO_ALLOC_CACHE=1 in the environment (read once, at the first allocation) every
 * block is allocated at its exact size and freed at once: no size classes, no small-block or
 * big-block cache, so AddressSanitizer sees each allocation and free and catches an access
 * one byte past a tensor's storage or into a freed one.  A sanitized build (-DPTL_SANITIZE)
 * bypasses the caches unless PTL_NO_ALLOC_CACHE=0.  The setting never changes afterwards: a
 * block must be freed the way it was allocated. */
#define _DEFAULT_SOURCE   /* madvise, MADV_HUGEPAGE */
#include "allocator.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "error.h"

#define NUM_CLASSES 11   /* 64 B .. 64 KiB */
#define CACHE_DEPTH 64
#define SMALL_MAX ((size_t)64 << (NUM_CLASSES - 1))

/* Big blocks are kept for exact-size reuse: a training loop allocates the same sizes every
 * step, and a fresh big block costs a page fault (and the kernel's zeroing) per page touched,
 * which for a 4 MB output is most of an elementwise op's time.  At most BIG_SLOTS blocks and
 * BIG_CACHE_MAX bytes are held, in the order they were freed; empty_cache() returns them.  An
 * allocation takes the block of its size freed last, the likeliest to be still in the cache,
 * and a full cache drops the one freed first.  A GPT block's backward frees more than 16
 * activations of one size (the slots there were): the overflow went back to libc, and ~300
 * pages a step were faulted in again. */
#define BIG_SLOTS 64
#define BIG_CACHE_MAX ((size_t)1 << 30)
static struct {
    void *p;
    size_t n;
} big[BIG_SLOTS];
static int big_len;
static size_t big_bytes;

static void *cache[NUM_CLASSES][CACHE_DEPTH];
static int cache_len[NUM_CLASSES];
static atomic_flag cache_lock = ATOMIC_FLAG_INIT;
static _Atomic int64_t stat_allocated, stat_cached, stat_count, stat_hits;
/* For memory_stats() (Note [CPU memory statistics]). */
static _Atomic int64_t stat_frees, stat_bytes_sum, stat_count_peak, stat_bytes_peak,
    stat_reserved_peak;
static _Atomic int64_t base_count, base_frees, base_bytes_sum, base_bytes_freed;
static _Atomic int64_t fail_countdown;

/* Note [Allocator cache bypass]: 0 until read, then CACHING or BYPASS. */
enum { CACHING = 1, BYPASS = 2 };
static _Atomic int cache_mode;

static int
read_cache_mode(void)
{
    const char *env = getenv("PTL_NO_ALLOC_CACHE");
#ifdef PTL_SANITIZE
    int mode = env != NULL && strcmp(env, "0") == 0 ? CACHING : BYPASS;
#else
    int mode = env != NULL && env[0] != '\0' && strcmp(env, "0") != 0 ? BYPASS : CACHING;
#endif
    int expected = 0;
    /* two threads that race here read the same environment: either store is right */
    atomic_compare_exchange_strong(&cache_mode, &expected, mode);
    return atomic_load(&cache_mode);
}

static inline int
bypass_cache(void)
{
    int mode = atomic_load_explicit(&cache_mode, memory_order_relaxed);
    return (mode != 0 ? mode : read_cache_mode()) == BYPASS;
}

/* Note [CPU memory statistics]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * pytorchlite.cpu.memory_stats() reports, in PyTorch's memory_stats() names, the "all"
 * entries of allocation (count), allocated_bytes and reserved_bytes (allocated plus cached;
 * its running sums are allocated_bytes' own).
 * Each allocation and free costs relaxed atomic adds; a peak is raised by compare-and-swap
 * only when it is passed, and the running sums of frees are derived (sum of allocations
 * minus current), so counting is cheap.  reset_accumulated keeps the sums at the time of the
 * reset and reports the differences. */
static void
raise_peak(_Atomic int64_t *peak, int64_t value)
{
    int64_t old = atomic_load_explicit(peak, memory_order_relaxed);
    while (value > old &&
           !atomic_compare_exchange_weak_explicit(peak, &old, value, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
}

/* A block of `bytes` was handed out: the one place stat_allocated grows. */
static void
count_alloc(int64_t bytes)
{
    int64_t now = atomic_fetch_add_explicit(&stat_allocated, bytes, memory_order_relaxed) + bytes;
    int64_t count = atomic_load_explicit(&stat_count, memory_order_relaxed) -
                    atomic_load_explicit(&stat_frees, memory_order_relaxed);
    atomic_fetch_add_explicit(&stat_bytes_sum, bytes, memory_order_relaxed);
    raise_peak(&stat_bytes_peak, now);
    raise_peak(&stat_count_peak, count);
    raise_peak(&stat_reserved_peak, now + atomic_load_explicit(&stat_cached,
                                                               memory_order_relaxed));
}

static void
count_free(int64_t bytes)
{
    atomic_fetch_sub_explicit(&stat_allocated, bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&stat_frees, 1, memory_order_relaxed);
}

static void *
exact_alloc(size_t nbytes)
{
    void *p = NULL;
    if (nbytes > ((size_t)1 << 62) ||
        posix_memalign(&p, PTL_CPU_ALIGNMENT, nbytes == 0 ? 1 : nbytes) != 0) {
        return NULL;
    }
    count_alloc((int64_t)nbytes);
    return p;
}

static int
size_class(size_t nbytes)
{
    int c = 0;
    size_t s = 64;
    while (s < nbytes) {
        s <<= 1;
        c++;
    }
    return c;
}

static void
lock(void)
{
    while (atomic_flag_test_and_set_explicit(&cache_lock, memory_order_acquire)) {
    }
}

static void
unlock(void)
{
    atomic_flag_clear_explicit(&cache_lock, memory_order_release);
}

/* The observer of CPU allocations and frees (ptl_cpu_alloc_set_hook), or NULL. */
static void (*_Atomic alloc_hook)(int64_t delta);

static void *
cpu_alloc_block(size_t nbytes)
{
    if (atomic_load_explicit(&fail_countdown, memory_order_relaxed) > 0 &&
        atomic_fetch_sub(&fail_countdown, 1) == 1) {
        ptl_error_set(PTL_ERR_MEMORY,
                      "[enforce fail at alloc_cpu.cpp] DefaultCPUAllocator: can't allocate "
                      "memory: you tried to allocate %zu bytes (injected failure).", nbytes);
        return NULL;
    }
    atomic_fetch_add_explicit(&stat_count, 1, memory_order_relaxed);
    if (bypass_cache()) {
        void *p = exact_alloc(nbytes);
        if (p == NULL) {
            goto oom;
        }
        return p;
    }
    if (nbytes <= SMALL_MAX) {
        int c = size_class(nbytes);
        size_t rounded = (size_t)64 << c;
        void *p = NULL;
        lock();
        if (cache_len[c] > 0) {
            p = cache[c][--cache_len[c]];
        }
        unlock();
        if (p != NULL) {
            atomic_fetch_add_explicit(&stat_hits, 1, memory_order_relaxed);
            atomic_fetch_sub_explicit(&stat_cached, (int64_t)rounded, memory_order_relaxed);
        }
        else if ((p = aligned_alloc(PTL_CPU_ALIGNMENT, rounded)) == NULL) {
            goto oom;
        }
        count_alloc((int64_t)rounded);
        return p;
    }
    if (nbytes > ((size_t)1 << 62)) {
        goto oom;
    }
    size_t rounded = (nbytes + PTL_CPU_ALIGNMENT - 1) / PTL_CPU_ALIGNMENT * PTL_CPU_ALIGNMENT;
    void *p = NULL;
    lock();
    /* the most recently freed block of the size: the likeliest to be still in the cache */
    for (int i = big_len - 1; i >= 0; i--) {
        if (big[i].n == rounded) {
            p = big[i].p;
            memmove(&big[i], &big[i + 1], sizeof(big[0]) * (size_t)(big_len - 1 - i));
            big_len--;
            big_bytes -= rounded;
            break;
        }
    }
    unlock();
    if (p != NULL) {
        atomic_fetch_add_explicit(&stat_hits, 1, memory_order_relaxed);
        atomic_fetch_sub_explicit(&stat_cached, (int64_t)rounded, memory_order_relaxed);
        count_alloc((int64_t)rounded);
        return p;
    }
    p = aligned_alloc(PTL_CPU_ALIGNMENT, rounded);
    if (p == NULL) {
        goto oom;
    }
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    /* Like NumPy: ask for transparent huge pages on big blocks (fewer TLB misses when
     * streaming; a no-op where THP is off).  Failure is harmless. */
    if (rounded >= ((size_t)4 << 20)) {
        uintptr_t lo = ((uintptr_t)p + 4095) & ~(uintptr_t)4095;
        uintptr_t hi = (uintptr_t)p + rounded;
        if (hi > lo) {
            (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
        }
    }
#endif
    count_alloc((int64_t)rounded);
    return p;
oom:
    atomic_fetch_sub_explicit(&stat_count, 1, memory_order_relaxed);   /* none was served */
    ptl_error_set(PTL_ERR_MEMORY,
                  "[enforce fail at alloc_cpu.cpp] DefaultCPUAllocator: can't allocate memory: "
                  "you tried to allocate %zu bytes. Error code 12 (Cannot allocate memory)",
                  nbytes);
    return NULL;
}

static void *
cpu_alloc(void *ctx, size_t nbytes)
{
    (void)ctx;
    void *p = cpu_alloc_block(nbytes);
    void (*hook)(int64_t) = atomic_load_explicit(&alloc_hook, memory_order_relaxed);
    if (hook != NULL && p != NULL) {
        hook((int64_t)nbytes);
    }
    return p;
}

static void
cpu_free(void *ctx, void *ptr, size_t nbytes)
{
    (void)ctx;
    if (ptr == NULL) {
        return;
    }
    void (*hook)(int64_t) = atomic_load_explicit(&alloc_hook, memory_order_relaxed);
    if (hook != NULL) {
        hook(-(int64_t)nbytes);
    }
    if (bypass_cache()) {
        count_free((int64_t)nbytes);
        free(ptr);
        return;
    }
    if (nbytes <= SMALL_MAX) {
        int c = size_class(nbytes);
        size_t rounded = (size_t)64 << c;
        count_free((int64_t)rounded);
        lock();
        if (cache_len[c] < CACHE_DEPTH) {
            cache[c][cache_len[c]++] = ptr;
            ptr = NULL;
        }
        unlock();
        if (ptr == NULL) {
            atomic_fetch_add_explicit(&stat_cached, (int64_t)rounded, memory_order_relaxed);
            return;
        }
        free(ptr);
        return;
    }
    size_t rounded = (nbytes + PTL_CPU_ALIGNMENT - 1) / PTL_CPU_ALIGNMENT * PTL_CPU_ALIGNMENT;
    void *evicted = NULL;
    count_free((int64_t)rounded);
    lock();
    if (rounded <= BIG_CACHE_MAX) {
        while (big_bytes + rounded > BIG_CACHE_MAX || big_len == BIG_SLOTS) {
            /* make room by dropping one cached block (freed after the lock) */
            if (evicted != NULL) {
                break;
            }
            /* the least recently freed block */
            evicted = big[0].p;
            big_bytes -= big[0].n;
            atomic_fetch_sub_explicit(&stat_cached, (int64_t)big[0].n, memory_order_relaxed);
            memmove(&big[0], &big[1], sizeof(big[0]) * (size_t)(--big_len));
        }
        if (big_bytes + rounded <= BIG_CACHE_MAX && big_len < BIG_SLOTS) {
            big[big_len].p = ptr;
            big[big_len].n = rounded;
            big_len++;
            big_bytes += rounded;
            atomic_fetch_add_explicit(&stat_cached, (int64_t)rounded, memory_order_relaxed);
            ptr = NULL;
        }
    }
    unlock();
    free(evicted);
    free(ptr);
}

static const PtlAllocator cpu_allocator = {"cpu", cpu_alloc, cpu_free, NULL, PTL_DEVICE_CPU,
                                          NULL};
static const PtlAllocator *allocators[PTL_DEVICE_TYPE_COUNT] = {&cpu_allocator, NULL, NULL};
static int (*initializers[PTL_DEVICE_TYPE_COUNT])(PtlDevice *device);

const PtlAllocator *
ptl_cpu_allocator(void)
{
    return &cpu_allocator;
}

const PtlAllocator *
ptl_allocator_for(PtlDevice *device)
{
    if (initializers[device->type] != NULL && initializers[device->type](device) < 0) {
        /* the first CUDA tensor initialises CUDA, which registers its allocator, or says
         * why it cannot (Note [CUDA availability]) */
        return NULL;
    }
    const PtlAllocator *a = allocators[device->type];
    if (a == NULL) {
        ptl_error_set(PTL_ERR_RUNTIME, PTL_NO_CUDA_MESSAGE);
    }
    return a;
}

void
ptl_allocator_register(int device_type, const PtlAllocator *alloc)
{
    allocators[device_type] = alloc;
}

void
ptl_allocator_set_initializer(int device_type, int (*init)(PtlDevice *device))
{
    initializers[device_type] = init;
}

int
ptl_allocator_is_registered(int device_type)
{
    return allocators[device_type] != NULL;
}

PtlCpuAllocStats
ptl_cpu_alloc_stats(void)
{
    PtlCpuAllocStats s = {atomic_load(&stat_allocated), atomic_load(&stat_cached),
                          atomic_load(&stat_count), atomic_load(&stat_hits), !bypass_cache()};
    return s;
}

void
ptl_cpu_alloc_empty_cache(void)
{
    lock();
    while (big_len > 0) {
        big_len--;
        free(big[big_len].p);
        atomic_fetch_sub(&stat_cached, (int64_t)big[big_len].n);
    }
    big_bytes = 0;
    for (int c = 0; c < NUM_CLASSES; c++) {
        while (cache_len[c] > 0) {
            free(cache[c][--cache_len[c]]);
            atomic_fetch_sub(&stat_cached, (int64_t)((size_t)64 << c));
        }
    }
    unlock();
}

void
ptl_cpu_alloc_fail_after(int64_t n)
{
    atomic_store(&fail_countdown, n);
}

PtlMemoryStats
ptl_cpu_alloc_memory_stats(void)
{
    PtlMemoryStats s;
    memset(&s, 0, sizeof(s));
    int64_t count = atomic_load(&stat_count), frees = atomic_load(&stat_frees);
    int64_t bytes = atomic_load(&stat_allocated), sum = atomic_load(&stat_bytes_sum);
    int64_t cached = atomic_load(&stat_cached);
    PtlStat *n = &s.allocation[PTL_STAT_ALL], *b = &s.allocated_bytes[PTL_STAT_ALL];
    PtlStat *r = &s.reserved_bytes[PTL_STAT_ALL];
    n->current = count - frees;
    n->peak = atomic_load(&stat_count_peak);
    n->allocated = count - atomic_load(&base_count);
    n->freed = frees - atomic_load(&base_frees);
    b->current = bytes;
    b->peak = atomic_load(&stat_bytes_peak);
    b->allocated = sum - atomic_load(&base_bytes_sum);
    b->freed = sum - bytes - atomic_load(&base_bytes_freed);
    r->current = bytes + cached;
    r->peak = atomic_load(&stat_reserved_peak);
    /* blocks move between allocated and cached without a trace: the sums are those of
     * allocated_bytes, with freed making current = allocated - freed hold */
    r->allocated = b->allocated;
    r->freed = r->allocated > r->current ? r->allocated - r->current : 0;
    /* counting races with other threads' allocations: a peak is never below its current */
    n->peak = n->peak > n->current ? n->peak : n->current;
    b->peak = b->peak > b->current ? b->peak : b->current;
    r->peak = r->peak > r->current ? r->peak : r->current;
    return s;
}

void
ptl_cpu_alloc_reset_peak(void)
{
    int64_t bytes = atomic_load(&stat_allocated);
    atomic_store(&stat_count_peak, atomic_load(&stat_count) - atomic_load(&stat_frees));
    atomic_store(&stat_bytes_peak, bytes);
    atomic_store(&stat_reserved_peak, bytes + atomic_load(&stat_cached));
}

void
ptl_cpu_alloc_reset_accumulated(void)
{
    int64_t sum = atomic_load(&stat_bytes_sum);
    atomic_store(&base_count, atomic_load(&stat_count));
    atomic_store(&base_frees, atomic_load(&stat_frees));
    atomic_store(&base_bytes_sum, sum);
    atomic_store(&base_bytes_freed, sum - atomic_load(&stat_allocated));
}

void
ptl_cpu_alloc_set_hook(void (*hook)(int64_t delta))
{
    atomic_store(&alloc_hook, hook);
}
