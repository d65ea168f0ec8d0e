/* profiler.h -- the event recorder behind pytorchlite.profiler.  Mirrors
 * torch/csrc/autograd/profiler_kineto.h and ATen/record_function.h, without Kineto.
 *
 * Note [Profiler]
 * ~~~~~~~~~~~~~~~
 * A profiler session records complete events into one growable buffer:
 * - every operator call, by the boxed fallback of the Profiler key (the highest key).  The
 *   key sits in the enabling thread's included set only while a session is active, so with no
 *   profiler a call costs what it always did.  The fallback takes the start time, redispatches
 *   below itself and records on return; ops that a kernel calls go through the dispatcher
 *   again, so they are recorded inside their caller: events nest by construction;
 * - every backward node the engine runs, twice: "autograd::engine::evaluate_function: <name>"
 *   around the node and "<name>" around its formula, with the node's sequence number.  A
 *   forward op whose call created a node carries that node's sequence number too, which is
 *   the flow link from the forward op to its backward;
 * - record_function ranges (ptl_profiler_range_enter/exit) with a name the session copies;
 * - with profile_memory, every CPU allocation and free (bytes +/-) through the allocator hook,
 *   as instant events on the allocating thread: the op that encloses one in time owns it.
 * Times are CLOCK_MONOTONIC nanoseconds.  A spinlock guards the buffer, so events of several
 * threads can be appended; only threads that enabled a session (or that enable the key with
 * ptl_profiler_enter_thread) record ops.  A forked child stops recording (its copy of the
 * session is never read).  Nothing here calls Python. */
#ifndef PTL_AUTOGRAD_PROFILER_H
#define PTL_AUTOGRAD_PROFILER_H

#include <stdint.h>

#include "../aten/dispatcher.h"
#include "../c10/tls.h"

typedef enum PtlProfilerEventKind {
    PTL_PROF_OP = 0,          /* an operator call: name is "aten::add" */
    PTL_PROF_BACKWARD,        /* a node's formula: name is "MulBackward0" */
    PTL_PROF_EVALUATE,        /* "autograd::engine::evaluate_function: " + name */
    PTL_PROF_RANGE,           /* record_function */
    PTL_PROF_MEMORY,          /* an allocation (bytes > 0) or a free (bytes < 0) */
} PtlProfilerEventKind;

typedef struct PtlProfilerEvent {
    const char *name;         /* borrowed: the op's schema, the node kind, or the session */
    int64_t start_ns, end_ns; /* end == start for memory events */
    uint64_t tid;
    int64_t seq;              /* the autograd sequence number, or -1 */
    int64_t bytes;            /* memory events: the change; others: 0 */
    int64_t total_bytes;      /* memory events: bytes the session saw allocated, after */
    int64_t shapes;           /* offset of its input record in the shapes buffer, or -1 */
    int32_t depth;            /* enclosing events on its thread when it started */
    int32_t kind;             /* PtlProfilerEventKind */
    int64_t id;               /* unique in the session, increasing with start time on a thread */
    int64_t stack;            /* with_stack: the Python stack's id (src/python), or -1 */
} PtlProfilerEvent;

/* Input records, one per op event with record_shapes: nargs, then per argument a type code
 * (a PtlDtype for a tensor, or one of these), a count and that many values: a tensor's
 * sizes, an int's or a bool's value, an int list's values (FLOPs need them), else none. */
enum {
    PTL_PROF_ARG_SCALAR = -1, PTL_PROF_ARG_NONE = -2, PTL_PROF_ARG_LIST = -3,
    PTL_PROF_ARG_TENSORLIST = -4, PTL_PROF_ARG_OTHER = -5,
};

typedef struct PtlProfilerConfig {
    int record_shapes;
    int profile_memory;
} PtlProfilerConfig;

/* Registers the Profiler key's fallback; once, at module init. */
void ptl_profiler_init(void);
/* Starts a session on the calling thread: 0, or -1 with PyTorch's error when one runs. */
int ptl_profiler_enable(const PtlProfilerConfig *config);
/* Ends the session: removes the key from the calling thread and stops recording; the events
 * stay readable until the next enable. */
void ptl_profiler_disable(void);
int ptl_profiler_is_enabled(void);
/* Adds (on != 0) or removes the Profiler key on the calling thread while a session runs. */
void ptl_profiler_enter_thread(int on);

/* The recorded events (borrowed; valid until the next enable), and the shapes buffer. */
const PtlProfilerEvent *ptl_profiler_events(int64_t *n);
const int64_t *ptl_profiler_shapes(int64_t *n);
/* Nanoseconds the recorder costs per event, measured when the session started. */
double ptl_profiler_overhead_ns(void);

/* with_stack: the id of the Python stack that the calling thread's next op call takes. */
void ptl_profiler_set_stack(int64_t id);

/* record_function: enter returns a handle for exit (the name is copied), or -1 with the
 * error set.  Without a session enter returns 0 and exit does nothing.  Ranges may exit in
 * any order; each keeps its own start and end (PyTorch's behaviour). */
int64_t ptl_profiler_range_enter(const char *name);
void ptl_profiler_range_exit(int64_t handle);

/* The engine's hook (Note [Profiler]): begin returns the start time, or -1 when this thread
 * records nothing; end records the event. */
static inline int
ptl_profiler_thread_active(void)
{
    return (ptl_tls()->included & PTL_KEYSET(PTL_KEY_PROFILER)) != 0;
}
int64_t ptl_profiler_node_begin(void);
void ptl_profiler_node_end(int64_t start, const char *name, uint64_t seq, int kind);

#endif
