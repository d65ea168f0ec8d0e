/* profiler.c -- the event recorder: the Profiler key's fallback, record_function ranges, the
 * engine's and the allocator's hooks.  See Note [Profiler] in profiler.h. */
#define _POSIX_C_SOURCE 200809L   /* clock_gettime */
#include "profiler.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>

#include "../c10/allocator.h"
#include "../c10/error.h"
#include "autograd.h"

#define INITIAL_EVENTS 65536
#define CALIBRATION_ROUNDS 64
#define CALIBRATION_BATCHES 8

/* The session: one at a time, process-wide. */
static struct {
    PtlProfilerEvent *events;
    int64_t n, cap;
    int64_t *shapes;
    int64_t nshapes, shapes_cap;
    char **names;             /* copies of record_function names, owned */
    int64_t nnames, names_cap;
    int64_t allocated;        /* bytes allocated minus freed since enable */
    int record_shapes;
    int memory;
    double overhead_ns;
    uint64_t generation;      /* bumped by every enable: stale range handles do nothing */
} session;
static _Atomic int enabled;
static _Atomic uint64_t owner;   /* the thread that enabled the session */
static _Atomic int64_t next_id;
static atomic_flag buffer_lock = ATOMIC_FLAG_INIT;
static _Thread_local int32_t depth;
static _Thread_local int64_t pending_stack = -1;

static void
lock(void)
{
    while (atomic_flag_test_and_set_explicit(&buffer_lock, memory_order_acquire)) {
    }
}

static void
unlock(void)
{
    atomic_flag_clear_explicit(&buffer_lock, memory_order_release);
}

static inline int64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline uint64_t
thread_id(void)
{
    return (uint64_t)pthread_self();
}

/* Grows *buf (elements of size elem) to hold at least need; 0, or -1 when out of memory
 * (the event is then dropped: a profiler never fails the op it watches). */
static int
reserve(void **buf, int64_t *cap, int64_t need, size_t elem)
{
    if (need <= *cap) {
        return 0;
    }
    int64_t c = *cap ? *cap : 1024;
    while (c < need) {
        c *= 2;
    }
    void *p = realloc(*buf, (size_t)c * elem);
    if (p == NULL) {
        return -1;
    }
    *buf = p;
    *cap = c;
    return 0;
}

/* Appends one event under the lock; the caller holds it. */
static void
append_locked(const PtlProfilerEvent *ev)
{
    if (reserve((void **)&session.events, &session.cap, session.n + 1,
                sizeof(PtlProfilerEvent)) == 0) {
        session.events[session.n++] = *ev;
    }
}

static void
append(const PtlProfilerEvent *ev)
{
    lock();
    append_locked(ev);
    unlock();
}

/* The values an argument contributes to its input record (PtlProfilerEvent.shapes): a
 * tensor's sizes, an int's or a bool's value, an int list's values; n receives their count. */
static const int64_t *
arg_values(const PtlIValue *v, int64_t *n, int64_t *scratch)
{
    switch (v->tag) {
    case PTL_IV_TENSOR:
        *n = v->u.t->dim;
        return v->u.t->sizes;
    case PTL_IV_INT:
        *n = 1;
        return &v->u.i;
    case PTL_IV_BOOL:
        *n = 1;
        *scratch = v->u.b;
        return scratch;
    case PTL_IV_INTLIST:
        *n = v->u.il.n;
        return v->u.il.data;
    default:
        *n = 0;
        return NULL;
    }
}

static int64_t
arg_code(const PtlIValue *v)
{
    switch (v->tag) {
    case PTL_IV_TENSOR:
        return v->u.t->dtype;
    case PTL_IV_INT: case PTL_IV_DOUBLE: case PTL_IV_BOOL: case PTL_IV_COMPLEX:
        return PTL_PROF_ARG_SCALAR;
    case PTL_IV_NONE:
        return PTL_PROF_ARG_NONE;
    case PTL_IV_INTLIST: case PTL_IV_DOUBLELIST:
        return PTL_PROF_ARG_LIST;
    case PTL_IV_TENSORLIST:
        return PTL_PROF_ARG_TENSORLIST;
    default:
        return PTL_PROF_ARG_OTHER;
    }
}

/* The input record of an op call (see PtlProfilerEvent.shapes), or -1. */
static int64_t
record_inputs(const PtlOperator *op, const PtlIValue *stack)
{
    int nargs = op->schema.nargs;
    int64_t need = 1 + 2 * (int64_t)nargs, n, scratch;
    for (int i = 0; i < nargs; i++) {
        arg_values(&stack[i], &n, &scratch);
        need += n;
    }
    lock();
    if (reserve((void **)&session.shapes, &session.shapes_cap, session.nshapes + need,
                sizeof(int64_t)) < 0) {
        unlock();
        return -1;
    }
    int64_t at = session.nshapes, *p = session.shapes + at;
    *p++ = nargs;
    for (int i = 0; i < nargs; i++) {
        const int64_t *values = arg_values(&stack[i], &n, &scratch);
        *p++ = arg_code(&stack[i]);
        *p++ = n;
        if (n > 0) {
            memcpy(p, values, sizeof(int64_t) * (size_t)n);
            p += n;
        }
    }
    session.nshapes = (int64_t)(p - session.shapes);
    unlock();
    return at;
}

/* The boxed Profiler kernel of every operator: records the call around the kernels below. */
static int
profiler_fallback(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *stack)
{
    const PtlDispatchKeySet below = ks & ptl_keyset_below(PTL_KEY_PROFILER);
    if (!atomic_load_explicit(&enabled, memory_order_relaxed)) {
        return ptl_dispatcher_redispatch(op, below, stack);
    }
    PtlProfilerEvent ev = {.name = op->schema.name, .tid = thread_id(), .kind = PTL_PROF_OP,
                           .seq = -1, .shapes = -1, .depth = depth++, .stack = pending_stack};
    pending_stack = -1;
    if (session.record_shapes) {
        ev.shapes = record_inputs(op, stack);
    }
    ev.id = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
    uint64_t seq = ptl_peek_sequence_nr();
    ev.start_ns = now_ns();
    int rc = ptl_dispatcher_redispatch(op, below, stack);
    ev.end_ns = now_ns();
    depth--;
    uint64_t after = ptl_peek_sequence_nr();
    if (after != seq) {   /* this call created nodes: its own is the last one */
        ev.seq = (int64_t)(after - 1);
    }
    append(&ev);
    return rc;
}

/* The allocator hook (profile_memory): the allocating thread's instant event. */
static void
memory_hook(int64_t delta)
{
    PtlProfilerEvent ev = {.name = "[memory]", .tid = thread_id(), .kind = PTL_PROF_MEMORY,
                           .seq = -1, .shapes = -1, .depth = depth, .bytes = delta,
                           .stack = -1};
    ev.id = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
    ev.start_ns = ev.end_ns = now_ns();
    lock();
    session.allocated += delta;
    ev.total_bytes = session.allocated;
    append_locked(&ev);
    unlock();
}

/* A forked child (a DataLoader worker) inherits the session but nobody reads its copy:
 * it stops recording, so worker events are cleanly absent from the parent's trace. */
static void
stop_in_child(void)
{
    atomic_flag_clear(&buffer_lock);
    if (atomic_load(&enabled)) {
        ptl_profiler_disable();
    }
}

void
ptl_profiler_init(void)
{
    ptl_dispatcher_register_fallback(PTL_KEY_PROFILER, profiler_fallback);
    pthread_atfork(NULL, NULL, stop_in_child);
}

static void
clear_session(void)
{
    for (int64_t i = 0; i < session.nnames; i++) {
        free(session.names[i]);
    }
    session.n = session.nshapes = session.nnames = session.allocated = 0;
}

/* What one op event costs the recorder: two clock reads, a sequence-number read and an
 * append, timed over CALIBRATION_BATCHES batches of CALIBRATION_ROUNDS fake events that are
 * then dropped.  The fastest batch is the cost: a slower one was interrupted. */
static double
calibrate(void)
{
    PtlProfilerEvent ev = {.name = "calibration", .seq = -1, .shapes = -1, .stack = -1};
    double per = 0.0;
    for (int b = 0; b < CALIBRATION_BATCHES; b++) {
        int64_t t0 = now_ns();
        for (int i = 0; i < CALIBRATION_ROUNDS; i++) {
            ev.id = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
            ev.tid = thread_id();
            ev.seq = (int64_t)ptl_peek_sequence_nr();
            ev.start_ns = now_ns();
            ev.end_ns = now_ns();
            append(&ev);
        }
        double batch = (double)(now_ns() - t0) / CALIBRATION_ROUNDS;
        per = b == 0 || batch < per ? batch : per;
        session.n = 0;
    }
    atomic_store(&next_id, 0);
    return per;
}

int
ptl_profiler_enable(const PtlProfilerConfig *config)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&enabled, &expected, 1)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Profiler is already enabled on %s thread",
                             atomic_load(&owner) == thread_id() ? "this" : "another");
    }
    atomic_store(&owner, thread_id());
    clear_session();
    if (reserve((void **)&session.events, &session.cap, INITIAL_EVENTS,
                sizeof(PtlProfilerEvent)) < 0) {
        atomic_store(&enabled, 0);
        return ptl_error_set(PTL_ERR_MEMORY, "can't allocate the profiler's event buffer");
    }
    session.record_shapes = config->record_shapes;
    session.memory = config->profile_memory;
    session.generation++;
    session.overhead_ns = calibrate();
    depth = 0;
    pending_stack = -1;
    if (session.memory) {
        ptl_cpu_alloc_set_hook(memory_hook);
    }
    ptl_profiler_enter_thread(1);
    return 0;
}

void
ptl_profiler_disable(void)
{
    ptl_profiler_enter_thread(0);
    ptl_cpu_alloc_set_hook(NULL);
    atomic_store(&enabled, 0);
}

int
ptl_profiler_is_enabled(void)
{
    return atomic_load(&enabled);
}

void
ptl_profiler_enter_thread(int on)
{
    PtlLocalState *tls = ptl_tls();
    if (on) {
        tls->included |= PTL_KEYSET(PTL_KEY_PROFILER);
    }
    else {
        tls->included &= ~PTL_KEYSET(PTL_KEY_PROFILER);
    }
}

const PtlProfilerEvent *
ptl_profiler_events(int64_t *n)
{
    *n = session.n;
    return session.events;
}

const int64_t *
ptl_profiler_shapes(int64_t *n)
{
    *n = session.nshapes;
    return session.shapes;
}

double
ptl_profiler_overhead_ns(void)
{
    return session.overhead_ns;
}

void
ptl_profiler_set_stack(int64_t id)
{
    pending_stack = id;
}

/* A range handle: the session's generation above bit 40, the event's index + 1 below. */
#define HANDLE_BITS 40

int64_t
ptl_profiler_range_enter(const char *name)
{
    if (!atomic_load(&enabled)) {
        return 0;
    }
    size_t len = strlen(name) + 1;
    char *copy = malloc(len);
    if (copy == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "can't copy a record_function name");
        return -1;
    }
    memcpy(copy, name, len);
    PtlProfilerEvent ev = {.name = copy, .tid = thread_id(), .kind = PTL_PROF_RANGE,
                           .seq = -1, .shapes = -1, .depth = depth++, .end_ns = -1,
                           .stack = -1};
    ev.id = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
    ev.start_ns = now_ns();
    lock();
    if (reserve((void **)&session.names, &session.names_cap, session.nnames + 1,
                sizeof(char *)) < 0 ||
        reserve((void **)&session.events, &session.cap, session.n + 1,
                sizeof(PtlProfilerEvent)) < 0) {
        unlock();
        free(copy);
        depth--;
        ptl_error_set(PTL_ERR_MEMORY, "can't record a record_function range");
        return -1;
    }
    session.names[session.nnames++] = copy;
    session.events[session.n++] = ev;
    int64_t handle = (int64_t)(session.generation << HANDLE_BITS) | session.n;
    unlock();
    return handle;
}

void
ptl_profiler_range_exit(int64_t handle)
{
    int64_t end = now_ns();
    if (handle <= 0) {
        return;
    }
    lock();
    int64_t i = (handle & (((int64_t)1 << HANDLE_BITS) - 1)) - 1;
    if ((uint64_t)handle >> HANDLE_BITS == session.generation && i < session.n &&
        session.events[i].end_ns < 0) {
        session.events[i].end_ns = end;
        depth--;
    }
    unlock();
}

int64_t
ptl_profiler_node_begin(void)
{
    if (!ptl_profiler_thread_active() || !atomic_load_explicit(&enabled, memory_order_relaxed)) {
        return -1;
    }
    depth++;
    return now_ns();
}

void
ptl_profiler_node_end(int64_t start, const char *name, uint64_t seq, int kind)
{
    if (start < 0) {
        return;
    }
    PtlProfilerEvent ev = {.name = name, .tid = thread_id(), .kind = kind, .seq = (int64_t)seq,
                           .shapes = -1, .depth = --depth, .start_ns = start, .stack = -1};
    ev.id = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
    ev.end_ns = now_ns();
    append(&ev);
}
