/* parallel.h -- parallel_for over a small pthread pool.  Mirrors ATen/Parallel.h (it sits in
 * c10 here because it knows nothing of tensors).
 *
 * Note [Thread pool]
 * ~~~~~~~~~~~~~~~~~~
 * ptl_parallel_for(begin, end, grain, fn, ctx) splits [begin, end) into at most
 * num_threads chunks of at least `grain` items and runs fn(ctx, b, e) on each, the calling
 * thread taking the first chunk; ranges below 2*grain run inline with no synchronisation.
 * Workers are created lazily.  After fork() the child has no workers: a pthread_atfork
 * handler marks the pool empty so the child builds a fresh one (DataLoader workers fork).
 * fn returns 0 or -1 after ptl_error_set; the first worker error is re-set on the calling
 * thread and parallel_for returns -1.  Nested calls run inline. */
#ifndef PTL_C10_PARALLEL_H
#define PTL_C10_PARALLEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int (*PtlParallelFn)(void *ctx, int64_t begin, int64_t end);

int ptl_parallel_for(int64_t begin, int64_t end, int64_t grain, PtlParallelFn fn, void *ctx);
int ptl_get_num_threads(void);
/* 0, or -1 with a RuntimeError for n < 1. */
int ptl_set_num_threads(int n);
int ptl_in_parallel_region(void);

#define PTL_GRAIN_SIZE 32768

/* Note [GIL release]: kernels run without the GIL when they have enough work to be worth
 * the switch.  c10 cannot name the GIL, so src/python installs these two hooks at import;
 * ptl_nogil_begin() returns a token for ptl_nogil_end() (NULL when no hook is installed). */
extern void *(*ptl_gil_release_hook)(void);
extern void (*ptl_gil_acquire_hook)(void *token);

static inline void *
ptl_nogil_begin(void)
{
    return ptl_gil_release_hook ? ptl_gil_release_hook() : (void *)0;
}

static inline void
ptl_nogil_end(void *token)
{
    if (token != (void *)0 && ptl_gil_acquire_hook) {
        ptl_gil_acquire_hook(token);
    }
}

#ifdef __cplusplus
}
#endif
#endif
