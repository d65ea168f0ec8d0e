/* parallel_counts.h -- what the thread pool of parallel.c did, so that tests and benchmarks
 * can see where the workers slept (Note [Spin before sleeping]). */
#ifndef PTL_C10_PARALLEL_COUNTS_H
#define PTL_C10_PARALLEL_COUNTS_H

#include <stdint.h>

/* Since the process started: parallel jobs posted, those posted within a burst (the pool
 * then polls SPIN_LONG_NS for the next), times a worker went to sleep waiting for a job,
 * times a caller slept waiting for the workers, chunks that the caller ran because no worker
 * had claimed them, and polls cut short because a yield lost the CPU to another thread;
 * then how many workers there are and how many of them sleep now. */
typedef struct PtlPoolCounts {
    int64_t jobs, long_spins, worker_sleeps, caller_sleeps, chunks_by_caller, spins_lost;
    int64_t workers, workers_asleep;
} PtlPoolCounts;

void ptl_parallel_pool_counts(PtlPoolCounts *out);

#endif
