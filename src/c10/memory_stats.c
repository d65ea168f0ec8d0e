/* memory_stats.c -- resetting allocator statistics.  Mirrors the reset functions of
 * c10/core/CachingDeviceAllocator.h (DeviceStats). */
#include "memory_stats.h"

void
ptl_memory_stats_reset_peak(PtlMemoryStats *s)
{
#define RESET_POOL_PEAK(NAME)                        \
    for (int t = 0; t < PTL_STAT_TYPE_COUNT; t++) {  \
        s->NAME[t].peak = s->NAME[t].current;        \
    }
    PTL_FORALL_POOL_STATS(RESET_POOL_PEAK)
#undef RESET_POOL_PEAK
#define RESET_PEAK(NAME) s->NAME.peak = s->NAME.current;
    PTL_FORALL_SINGLE_STATS(RESET_PEAK)
#undef RESET_PEAK
}

void
ptl_memory_stats_reset_accumulated(PtlMemoryStats *s)
{
#define RESET_POOL_SUMS(NAME)                         \
    for (int t = 0; t < PTL_STAT_TYPE_COUNT; t++) {   \
        s->NAME[t].allocated = s->NAME[t].freed = 0;  \
    }
    PTL_FORALL_POOL_STATS(RESET_POOL_SUMS)
#undef RESET_POOL_SUMS
#define RESET_SUMS(NAME) s->NAME.allocated = s->NAME.freed = 0;
    PTL_FORALL_SINGLE_STATS(RESET_SUMS)
#undef RESET_SUMS
    s->num_alloc_retries = s->num_ooms = s->num_sync_all_streams = 0;
    s->num_device_alloc = s->num_device_free = 0;
}
