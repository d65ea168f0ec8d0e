/* parallel.c -- the thread pool behind ptl_parallel_for.  See Note [Thread pool] and
 * Note [Spin before sleeping]. */
#define _GNU_SOURCE
#include "parallel.h"
#include "parallel_counts.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "error.h"

#define MAX_THREADS 64

typedef struct Job {
    PtlParallelFn fn;
    void *ctx;
    int64_t begin, end, chunk;
    int nchunks;
    int next;        /* next chunk to claim (under the pool lock) */
    _Atomic unsigned done;  /* chunks finished (changed under the pool lock) */
    int failed;
    PtlErrorKind err_kind;
    char err_msg[512];
} Job;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static Job *current_job = NULL;
static int num_workers = 0;        /* started worker threads */
static int num_threads = 0;        /* configured (0 = not yet decided) */
static int atfork_installed = 0;
static _Thread_local int in_region = 0;
/* bumped under the pool lock each time a job is posted; read without it by spinners */
static _Atomic unsigned job_seq = 0;
/* how long workers and the caller poll for the latest job (Note [Spin before sleeping]);
 * written under the pool lock when a job is posted */
static _Atomic int64_t spin_ns = 0;
static int64_t last_end_ns = 0;   /* when the latest job finished; under the pool lock */
/* what ptl_parallel_pool_counts reports; bumped under the pool lock */
static PtlPoolCounts counts;

/* Note [Spin before sleeping]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A training step is a stream of parallel ops a few tens of microseconds apart, each split
 * into one chunk per thread.  A worker asleep on the condition variable takes a futex wake
 * and a reschedule to pick its chunk up, and the caller, done with its own chunk, sleeps
 * again until the worker finishes: on two threads that latency ate the gain of an op of
 * tens of microseconds (relu on 2 MB took 58 us on two threads, 46 us on one; 23 us when
 * the worker polls), and ResNet's and the CNN's steps ran at 0.6-1.1x PyTorch's speed on two
 * threads against 1.3x on one.  So a worker that finished a chunk, and a caller that
 * waits for the workers, first poll for a while (OpenMP's workers, which PyTorch uses, spin
 * likewise, GOMP_SPINCOUNT), yielding the CPU between polls so that a machine with more
 * runnable threads than cores loses little to the polling; only then do they sleep on the
 * condition variable.
 *
 * How long: SPIN_SHORT_NS (200 us) after an op that came out of idleness, SPIN_LONG_NS (5 ms)
 * after an op that began less than SPIN_LONG_NS after the previous one ended, i.e. while the
 * process is in a burst of parallel ops such as a training loop.  200 us alone was too short:
 * every training step has serial stretches longer than that (the end of backward, the
 * optimizer, zero_grad and the Python of the loop), the worker fell asleep there about once a
 * step, and waking it on this 2-vCPU VM sometimes takes milliseconds, the hypervisor having
 * halted the idle vCPU (benchmarks/ratio_table.py's WARM_S saw 20-100 ms).  The MLP step on
 * two threads read 2.06-2.3 ms in some rounds and 2.7-4.9 ms in others (3.8 ms on one
 * thread); with 5 ms polls every round read 2.1-2.2 ms.  A process that goes idle pays one
 * long poll and an op that comes alone (an interactive session) a short one; then the
 * workers sleep.
 *
 * Polling only pays while the poller has a CPU to itself.  When a yield returns after more
 * than YIELD_LOST_NS, another thread ran on that CPU (more runnable threads than cores: other
 * processes, a DataLoader's workers): the poller stops and sleeps until the next job wakes
 * it.  A thread that keeps polling and yielding waits behind the other runnable threads for
 * each poll, while a woken sleeper runs at once, and its polls take CPU time that the caller
 * needs: with other processes keeping the load at 9-14 on the two vCPUs, the GPT step on two
 * threads took 110-164 ms polling 200 us and 125-274 ms polling 5 ms, both without this rule,
 * and 38-41 ms with it (one process, the policies alternating round by round; one thread:
 * 42-57 ms).  The caller runs any chunk no worker has claimed, and the split into chunks does
 * not depend on the polling, so no result does.  _C._pool_counts() shows the pool's jobs,
 * sleeps, polls and late chunks. */
#define SPIN_SHORT_NS 200000
#define SPIN_LONG_NS 5000000
#define YIELD_LOST_NS 50000

static int64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Polls, without the pool lock, until *word differs from `seen` (want_equal 0) or equals
 * it (want_equal 1), for at most spin_ns; the caller re-checks under the lock.  Returns -1
 * when a yield lost the CPU to another thread (the caller should sleep), else 0. */
static int
spin_while(_Atomic unsigned *word, unsigned seen, int want_equal)
{
    int64_t deadline = now_ns() + atomic_load_explicit(&spin_ns, memory_order_relaxed);
    for (int i = 0;; i++) {
        unsigned v = atomic_load_explicit(word, memory_order_acquire);
        if ((v == seen) == want_equal) {
            return 0;
        }
        if ((i & 15) == 15) {
            int64_t t = now_ns();
            if (t > deadline) {
                return 0;
            }
            sched_yield();
            if (now_ns() - t > YIELD_LOST_NS) {
                return -1;
            }
        }
    }
}

void *(*ptl_gil_release_hook)(void) = NULL;
void (*ptl_gil_acquire_hook)(void *token) = NULL;

static int
default_threads(void)
{
    const char *env = getenv("OMP_NUM_THREADS");
    if (env != NULL && atoi(env) > 0) {
        return atoi(env) > MAX_THREADS ? MAX_THREADS : atoi(env);
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) {
        n = 1;
    }
    return n > MAX_THREADS ? MAX_THREADS : (int)n;
}

static void
run_chunk(Job *job, int c)
{
    int64_t b = job->begin + (int64_t)c * job->chunk;
    int64_t e = b + job->chunk < job->end ? b + job->chunk : job->end;
    in_region = 1;
    int rc = job->fn(job->ctx, b, e);
    in_region = 0;
    if (rc < 0) {
        pthread_mutex_lock(&pool_lock);
        if (!job->failed) {
            job->failed = 1;
            job->err_kind = ptl_error_kind();
            strncpy(job->err_msg, ptl_error_message(), sizeof(job->err_msg) - 1);
            job->err_msg[sizeof(job->err_msg) - 1] = '\0';
        }
        pthread_mutex_unlock(&pool_lock);
        ptl_error_clear();
    }
}

static void *
worker_main(void *arg)
{
    (void)arg;
    unsigned spun = atomic_load(&job_seq) - 1;   /* the job seq this worker spun on last */
    pthread_mutex_lock(&pool_lock);
    for (;;) {
        while (current_job == NULL || current_job->next >= current_job->nchunks) {
            unsigned seq = atomic_load_explicit(&job_seq, memory_order_relaxed);
            if (spun != seq) {   /* poll once per posted job (Note [Spin before sleeping]) */
                spun = seq;
                pthread_mutex_unlock(&pool_lock);
                int lost = spin_while(&job_seq, seq, 0) < 0;
                pthread_mutex_lock(&pool_lock);
                if (lost) {   /* sleep unless a job is there to claim */
                    counts.spins_lost++;
                    spun = atomic_load_explicit(&job_seq, memory_order_relaxed);
                }
                continue;
            }
            counts.worker_sleeps++;
            counts.workers_asleep++;
            pthread_cond_wait(&work_cv, &pool_lock);
            counts.workers_asleep--;
        }
        Job *job = current_job;
        int c = job->next++;
        pthread_mutex_unlock(&pool_lock);
        run_chunk(job, c);
        pthread_mutex_lock(&pool_lock);
        if (++job->done == (unsigned)job->nchunks) {
            pthread_cond_broadcast(&done_cv);
        }
    }
    return NULL;
}

static void
atfork_child(void)
{
    /* The child has only the forking thread: forget the workers and reset the locks. */
    pthread_mutex_init(&pool_lock, NULL);
    pthread_cond_init(&work_cv, NULL);
    pthread_cond_init(&done_cv, NULL);
    current_job = NULL;
    num_workers = 0;
    counts.workers_asleep = 0;
}

/* Starts workers up to n-1; called with pool_lock held. */
static void
ensure_workers(int n)
{
    if (!atfork_installed) {
        pthread_atfork(NULL, NULL, atfork_child);
        atfork_installed = 1;
    }
    while (num_workers < n - 1) {
        pthread_t th;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&th, &attr, worker_main, NULL);
        pthread_attr_destroy(&attr);
        if (rc != 0) {
            break;
        }
        num_workers++;
    }
}

int
ptl_get_num_threads(void)
{
    if (num_threads == 0) {
        num_threads = default_threads();
    }
    return num_threads;
}

int
ptl_set_num_threads(int n)
{
    if (n < 1) {
        return ptl_error_set(PTL_ERR_RUNTIME, "set_num_threads expects a positive integer");
    }
    num_threads = n > MAX_THREADS ? MAX_THREADS : n;
    return 0;
}

void
ptl_parallel_pool_counts(PtlPoolCounts *out)
{
    pthread_mutex_lock(&pool_lock);
    *out = counts;
    out->workers = num_workers;
    pthread_mutex_unlock(&pool_lock);
}

int
ptl_in_parallel_region(void)
{
    return in_region;
}

int
ptl_parallel_for(int64_t begin, int64_t end, int64_t grain, PtlParallelFn fn, void *ctx)
{
    int64_t n = end - begin;
    if (n <= 0) {
        return 0;
    }
    if (grain < 1) {
        grain = 1;
    }
    int nt = ptl_get_num_threads();
    if (nt <= 1 || n < 2 * grain || in_region) {
        return fn(ctx, begin, end);
    }
    int64_t nchunks = (n + grain - 1) / grain;
    if (nchunks > nt) {
        nchunks = nt;
    }
    Job job;
    memset(&job, 0, sizeof(job));
    job.fn = fn;
    job.ctx = ctx;
    job.begin = begin;
    job.end = end;
    job.chunk = (n + nchunks - 1) / nchunks;
    job.nchunks = (int)((n + job.chunk - 1) / job.chunk);

    pthread_mutex_lock(&pool_lock);
    if (current_job != NULL) {
        /* another thread owns the pool: run inline rather than wait */
        pthread_mutex_unlock(&pool_lock);
        return fn(ctx, begin, end);
    }
    ensure_workers(nt);
    int burst = now_ns() - last_end_ns < SPIN_LONG_NS;   /* Note [Spin before sleeping] */
    counts.long_spins += burst;
    atomic_store_explicit(&spin_ns, burst ? SPIN_LONG_NS : SPIN_SHORT_NS, memory_order_relaxed);
    current_job = &job;
    job.next = 1;   /* the caller takes chunk 0 */
    atomic_fetch_add_explicit(&job_seq, 1, memory_order_release);
    counts.jobs++;
    pthread_cond_broadcast(&work_cv);
    pthread_mutex_unlock(&pool_lock);

    run_chunk(&job, 0);

    pthread_mutex_lock(&pool_lock);
    job.done++;
    while (job.next < job.nchunks) {   /* no worker picked these up: do them here */
        int c = job.next++;
        counts.chunks_by_caller++;
        pthread_mutex_unlock(&pool_lock);
        run_chunk(&job, c);
        pthread_mutex_lock(&pool_lock);
        job.done++;
    }
    if (job.done < (unsigned)job.nchunks) {   /* Note [Spin before sleeping] */
        pthread_mutex_unlock(&pool_lock);
        int lost = spin_while(&job.done, (unsigned)job.nchunks, 1) < 0;
        pthread_mutex_lock(&pool_lock);
        counts.spins_lost += lost;
    }
    while (job.done < (unsigned)job.nchunks) {
        counts.caller_sleeps++;
        pthread_cond_wait(&done_cv, &pool_lock);
    }
    current_job = NULL;
    last_end_ns = now_ns();
    pthread_mutex_unlock(&pool_lock);
    if (job.failed) {
        ptl_error_set(job.err_kind, "%s", job.err_msg);
        return -1;
    }
    return 0;
}
