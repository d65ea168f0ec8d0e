/* debug_counts.h -- live-object counters, so that tests can assert nothing leaks. */
#ifndef PTL_C10_DEBUG_COUNTS_H
#define PTL_C10_DEBUG_COUNTS_H

#include <stdatomic.h>
#include <stdint.h>

typedef enum PtlCountKind {
    PTL_COUNT_TENSOR_IMPL = 0,
    PTL_COUNT_STORAGE,
    PTL_COUNT_NODE,
    PTL_COUNT_KINDS
} PtlCountKind;

extern _Atomic int64_t ptl_live_counts[PTL_COUNT_KINDS];

static inline void
ptl_debug_count(PtlCountKind k, int64_t delta)
{
    atomic_fetch_add_explicit(&ptl_live_counts[k], delta, memory_order_relaxed);
}

#endif
