/* parallel.c -- the thread pool behind ptl_parallel_for.  See Note [Thread pool]. */
#define _GNU_SOURCE
#include "parallel.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"

#define MAX_THREADS 64

typedef struct Job {
    PtlParallelFn fn;
    void *ctx;
    int64_t begin, end, chunk;
    int nchunks;
    int next;        /* next chunk to claim (under the pool lock) */
    int done;        /* chunks finished */
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
    pthread_mutex_lock(&pool_lock);
    for (;;) {
        while (current_job == NULL || current_job->next >= current_job->nchunks) {
            pthread_cond_wait(&work_cv, &pool_lock);
        }
        Job *job = current_job;
        int c = job->next++;
        pthread_mutex_unlock(&pool_lock);
        run_chunk(job, c);
        pthread_mutex_lock(&pool_lock);
        if (++job->done == job->nchunks) {
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
    current_job = &job;
    job.next = 1;   /* the caller takes chunk 0 */
    pthread_cond_broadcast(&work_cv);
    pthread_mutex_unlock(&pool_lock);

    run_chunk(&job, 0);

    pthread_mutex_lock(&pool_lock);
    job.done++;
    while (job.next < job.nchunks) {   /* no worker picked these up: do them here */
        int c = job.next++;
        pthread_mutex_unlock(&pool_lock);
        run_chunk(&job, c);
        pthread_mutex_lock(&pool_lock);
        job.done++;
    }
    while (job.done < job.nchunks) {
        pthread_cond_wait(&done_cv, &pool_lock);
    }
    current_job = NULL;
    pthread_mutex_unlock(&pool_lock);
    if (job.failed) {
        ptl_error_set(job.err_kind, "%s", job.err_msg);
        return -1;
    }
    return 0;
}
