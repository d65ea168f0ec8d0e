/* memory_stats.h -- allocator statistics in the shape of PyTorch's memory_stats().  Mirrors
 * the Stat and DeviceStats structs of c10/core/CachingDeviceAllocator.h.
 *
 * Every statistic is a PtlStat (current, peak, and the running sums of increases and
 * decreases); the pool-dependent ones are arrays indexed by PtlStatType ("all",
 * "small_pool", "large_pool").  The CUDA caching allocator fills all of them, the CPU
 * allocator the ones it has a meaning for (allocation, allocated_bytes, reserved_bytes,
 * requested_bytes, segment, num_ooms) and leaves the rest zero. */
#ifndef PTL_C10_MEMORY_STATS_H
#define PTL_C10_MEMORY_STATS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct PtlStat {
    int64_t current;
    int64_t peak;
    int64_t allocated;   /* sum of increases since the last reset_accumulated */
    int64_t freed;       /* sum of decreases since the last reset_accumulated */
} PtlStat;

/* ORDER STAT_TYPE: the names PyTorch's memory_stats() uses, in its order */
typedef enum PtlStatType {
    PTL_STAT_ALL,
    PTL_STAT_SMALL_POOL,
    PTL_STAT_LARGE_POOL,
    PTL_STAT_TYPE_COUNT
} PtlStatType;

#define PTL_STAT_TYPE_NAMES {"all", "small_pool", "large_pool"}

/* The per-pool statistics, X(name), in memory_stats()'s names. */
#define PTL_FORALL_POOL_STATS(X)                                                       \
    X(allocation) X(segment) X(active) X(inactive_split) X(allocated_bytes)            \
    X(reserved_bytes) X(active_bytes) X(inactive_split_bytes) X(requested_bytes)
/* The statistics that have no pool split. */
#define PTL_FORALL_SINGLE_STATS(X) X(oversize_allocations) X(oversize_segments)
/* Plain counters. */
#define PTL_FORALL_COUNTERS(X)                                                         \
    X(num_alloc_retries) X(num_ooms) X(num_sync_all_streams) X(num_device_alloc)       \
    X(num_device_free) X(max_split_size)

typedef struct PtlMemoryStats {
#define PTL_POOL_STAT_FIELD(NAME) PtlStat NAME[PTL_STAT_TYPE_COUNT];
    PTL_FORALL_POOL_STATS(PTL_POOL_STAT_FIELD)
#undef PTL_POOL_STAT_FIELD
#define PTL_SINGLE_STAT_FIELD(NAME) PtlStat NAME;
    PTL_FORALL_SINGLE_STATS(PTL_SINGLE_STAT_FIELD)
#undef PTL_SINGLE_STAT_FIELD
#define PTL_COUNTER_FIELD(NAME) int64_t NAME;
    PTL_FORALL_COUNTERS(PTL_COUNTER_FIELD)
#undef PTL_COUNTER_FIELD
} PtlMemoryStats;

/* Adds delta (of either sign) to current, raising peak and the matching running sum. */
static inline void
ptl_stat_update(PtlStat *s, int64_t delta)
{
    s->current += delta;
    if (s->current > s->peak) {
        s->peak = s->current;
    }
    if (delta > 0) {
        s->allocated += delta;
    }
    else {
        s->freed -= delta;
    }
}

/* The same delta on the "all" entry and on the pool's entry of a per-pool statistic. */
static inline void
ptl_stat_update_pool(PtlStat *stats, PtlStatType pool, int64_t delta)
{
    ptl_stat_update(&stats[PTL_STAT_ALL], delta);
    ptl_stat_update(&stats[pool], delta);
}

/* reset_peak_memory_stats: every peak becomes its current value (memory_stats.c). */
void ptl_memory_stats_reset_peak(PtlMemoryStats *s);
/* reset_accumulated_memory_stats: the running sums and the event counters become 0. */
void ptl_memory_stats_reset_accumulated(PtlMemoryStats *s);

#ifdef __cplusplus
}
#endif
#endif
