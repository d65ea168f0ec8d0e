/* memory.c -- the memory statistics bindings: _C._CachingAllocator (a device caching
 * allocator seen from Python), the fake device that tests drive it with, and the CPU
 * allocator's statistics.  Mirrors the memory functions of torch/csrc/cuda/Module.cpp
 * (memoryStats, memorySnapshot, ...).  See Note [Caching allocator] in
 * src/c10/caching_allocator.c.
 *
 * _C._FakeDeviceAllocator(capacity, conf="") is a testing hook: a caching allocator over a
 * malloc-backed device of `capacity` bytes whose streams complete only on complete(stream).
 * Its streams are 0..PTL_FAKE_STREAMS-1; recording an event on another fails, which tests the
 * allocator's fallback (it waits instead of deferring).
 * _C._cuda_caching_allocator(device) is the CUDA device's allocator, or None while no CUDA
 * allocator is registered (Note [CUDA availability]).  Both are _CachingAllocator objects
 * with the same methods, so pytorchlite.cuda's memory functions run unchanged on either.
 * _C._HostAllocator is the pinned host memory cache seen the same way (Note [Caching host
 * allocator]): _C._cuda_host_allocator() the process's, _C._FakeHostAllocator(capacity) one
 * over a fake device for tests. */
#include "ptlpy.h"

#include "../c10/allocator.h"
#include "../c10/caching_allocator.h"
#include "../c10/host_allocator.h"
#include "../cuda/cuda_api.h"
#include "../cuda/stream_api.h"

/* What _CachingAllocator and _HostAllocator objects start with: the fake device's methods
 * (complete, device_used) serve both. */
typedef struct {
    PyObject_HEAD
    void *alloc;
    PtlFakeDevice *fake;          /* owned; NULL for a real device */
} PtlPyAllocatorHead;

typedef struct {
    PyObject_HEAD
    PtlCachingAllocator *alloc;   /* owned when `owned`, else the CUDA backend's */
    PtlFakeDevice *fake;          /* owned; NULL for a real device */
    int owned;
} PtlPyCachingAllocator;

static PyTypeObject PtlPyCachingAllocator_Type;

static PyObject *
stat_dict(const PtlStat *s)
{
    return Py_BuildValue("{s:L,s:L,s:L,s:L}", "current", (long long)s->current, "peak",
                         (long long)s->peak, "allocated", (long long)s->allocated, "freed",
                         (long long)s->freed);
}

/* Sets d[key] = value and drops the reference to value; -1 when value is NULL. */
static int
set_steal(PyObject *d, const char *key, PyObject *value)
{
    if (value == NULL) {
        return -1;
    }
    int r = PyDict_SetItemString(d, key, value);
    Py_DECREF(value);
    return r;
}

static int
name_in(const char *name, const char *const *names)
{
    for (; *names != NULL; names++) {
        if (strcmp(name, *names) == 0) {
            return 1;
        }
    }
    return 0;
}

/* PyTorch's memory_stats_as_nested_dict: {"allocation": {"all": {"current": ...}, ...},
 * "num_ooms": ..., ...}.  With `only` (a NULL-terminated list of names) just those
 * statistics and only their "all" entry, which is what the CPU allocator has; with NULL,
 * everything. */
static PyObject *
stats_dict(const PtlMemoryStats *s, const char *const *only)
{
    static const char *const pool_names[PTL_STAT_TYPE_COUNT] = PTL_STAT_TYPE_NAMES;
    PyObject *d = PyDict_New();
    if (d == NULL) {
        return NULL;
    }
#define WANTED(NAME) (only == NULL || name_in(#NAME, only))
#define ADD_POOL_STAT(NAME)                                                               \
    if (WANTED(NAME)) {                                                                   \
        PyObject *per_pool = PyDict_New();                                                \
        if (set_steal(d, #NAME, per_pool) < 0) {                                          \
            goto error;                                                                   \
        }                                                                                 \
        for (int t = 0; t < (only == NULL ? PTL_STAT_TYPE_COUNT : 1); t++) {              \
            if (set_steal(per_pool, pool_names[t], stat_dict(&s->NAME[t])) < 0) {         \
                goto error;                                                               \
            }                                                                             \
        }                                                                                 \
    }
#define ADD_SINGLE_STAT(NAME)                                                             \
    if (WANTED(NAME) && set_steal(d, #NAME, stat_dict(&s->NAME)) < 0) {                   \
        goto error;                                                                       \
    }
#define ADD_COUNTER(NAME)                                                                 \
    if (WANTED(NAME) && set_steal(d, #NAME, PyLong_FromLongLong(s->NAME)) < 0) {          \
        goto error;                                                                       \
    }
    PTL_FORALL_COUNTERS(ADD_COUNTER)
    PTL_FORALL_POOL_STATS(ADD_POOL_STAT)
    PTL_FORALL_SINGLE_STATS(ADD_SINGLE_STAT)
#undef ADD_COUNTER
#undef ADD_SINGLE_STAT
#undef ADD_POOL_STAT
#undef WANTED
    return d;
error:
    Py_DECREF(d);
    return NULL;
}

/* ---- _CachingAllocator ---- */

/* Wraps alloc; with owned set, the object frees alloc (and fake) when it goes, or at once
 * when it cannot be created. */
static PyObject *
wrap_allocator(PtlCachingAllocator *alloc, PtlFakeDevice *fake, int owned)
{
    PtlPyCachingAllocator *self = PyObject_New(PtlPyCachingAllocator,
                                               &PtlPyCachingAllocator_Type);
    if (self == NULL) {
        if (owned) {
            ptl_caching_allocator_free(alloc);
            ptl_fake_device_free(fake);
        }
        return NULL;
    }
    self->alloc = alloc;
    self->fake = fake;
    self->owned = owned;
    return (PyObject *)self;
}

static void
caching_allocator_dealloc(PyObject *o)
{
    PtlPyCachingAllocator *self = (PtlPyCachingAllocator *)o;
    if (self->owned) {
        ptl_caching_allocator_free(self->alloc);
        ptl_fake_device_free(self->fake);
    }
    PyObject_Free(o);
}

static int
parse_stream(PyObject *o, PtlStreamId *out)
{
    unsigned long long v = PyLong_AsUnsignedLongLong(o);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        return 0;
    }
    *out = (PtlStreamId)v;
    return 1;
}

static PyObject *
ca_malloc(PyObject *o, PyObject *args)
{
    PtlPyCachingAllocator *self = (PtlPyCachingAllocator *)o;
    Py_ssize_t nbytes;
    PtlStreamId stream = 0;
    void *p;
    if (!PyArg_ParseTuple(args, "n|O&:malloc", &nbytes, parse_stream, &stream)) {
        return NULL;
    }
    if (nbytes < 0) {
        PyErr_SetString(PyExc_ValueError, "malloc: nbytes must be non-negative");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    p = ptl_caching_allocator_malloc(self->alloc, (size_t)nbytes, stream);
    Py_END_ALLOW_THREADS
    if (p == NULL && ptl_error_kind() != PTL_ERR_NONE) {
        return ptlpy_raise();
    }
    return PyLong_FromVoidPtr(p);
}

static PyObject *
ca_free(PyObject *o, PyObject *arg)
{
    PtlPyCachingAllocator *self = (PtlPyCachingAllocator *)o;
    int r;
    void *p = PyLong_AsVoidPtr(arg);
    if (p == NULL && PyErr_Occurred()) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    r = ptl_caching_allocator_release(self->alloc, p);
    Py_END_ALLOW_THREADS
    if (r < 0) {
        return ptlpy_raise();
    }
    Py_RETURN_NONE;
}

static PyObject *
ca_record_stream(PyObject *o, PyObject *args)
{
    PtlPyCachingAllocator *self = (PtlPyCachingAllocator *)o;
    PyObject *ptr;
    PtlStreamId stream;
    if (!PyArg_ParseTuple(args, "OO&:record_stream", &ptr, parse_stream, &stream)) {
        return NULL;
    }
    void *p = PyLong_AsVoidPtr(ptr);
    if (p == NULL && PyErr_Occurred()) {
        return NULL;
    }
    if (ptl_caching_allocator_record_stream(self->alloc, p, stream) < 0) {
        return ptlpy_raise();
    }
    Py_RETURN_NONE;
}

static PyObject *
ca_empty_cache(PyObject *o, PyObject *unused)
{
    (void)unused;
    Py_BEGIN_ALLOW_THREADS
    ptl_caching_allocator_empty_cache(((PtlPyCachingAllocator *)o)->alloc);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *
ca_memory_stats(PyObject *o, PyObject *unused)
{
    (void)unused;
    PtlMemoryStats s = ptl_caching_allocator_stats(((PtlPyCachingAllocator *)o)->alloc);
    return stats_dict(&s, NULL);
}

static PyObject *
ca_reset_peak(PyObject *o, PyObject *unused)
{
    (void)unused;
    ptl_caching_allocator_reset_peak(((PtlPyCachingAllocator *)o)->alloc);
    Py_RETURN_NONE;
}

static PyObject *
ca_reset_accumulated(PyObject *o, PyObject *unused)
{
    (void)unused;
    ptl_caching_allocator_reset_accumulated(((PtlPyCachingAllocator *)o)->alloc);
    Py_RETURN_NONE;
}

/* A pool id from a (first, second) tuple of non-negative ints; 0 with an exception set. */
static int
parse_pool_id(PyObject *o, PtlMempoolId *out)
{
    unsigned long long first, second;
    if (!PyTuple_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "a mempool id is a tuple of two ints");
        return 0;
    }
    if (!PyArg_ParseTuple(o, "KK;a mempool id is a tuple of two ints", &first, &second)) {
        return 0;
    }
    out->first = first;
    out->second = second;
    return 1;
}

static PyObject *
ca_begin_allocate_to_pool(PyObject *o, PyObject *args)
{
    PtlMempoolId id;
    PtlStreamId stream;
    if (!PyArg_ParseTuple(args, "O&O&:begin_allocate_to_pool", parse_pool_id, &id,
                          parse_stream, &stream)) {
        return NULL;
    }
    if (ptl_caching_allocator_begin_allocate_to_pool(((PtlPyCachingAllocator *)o)->alloc, id,
                                                     stream) < 0) {
        return ptlpy_raise();
    }
    Py_RETURN_NONE;
}

/* end_allocate_to_pool(id), release_pool(id): the allocator function f on the pool id. */
static PyObject *
pool_call(PyObject *o, PyObject *arg, int (*f)(PtlCachingAllocator *, PtlMempoolId))
{
    PtlMempoolId id;
    if (!parse_pool_id(arg, &id)) {
        return NULL;
    }
    if (f(((PtlPyCachingAllocator *)o)->alloc, id) < 0) {
        return ptlpy_raise();
    }
    Py_RETURN_NONE;
}

static PyObject *
ca_end_allocate_to_pool(PyObject *o, PyObject *arg)
{
    return pool_call(o, arg, ptl_caching_allocator_end_allocate_to_pool);
}

static PyObject *
ca_release_pool(PyObject *o, PyObject *arg)
{
    return pool_call(o, arg, ptl_caching_allocator_release_pool);
}

static PyObject *
ca_pool_use_count(PyObject *o, PyObject *arg)
{
    PtlMempoolId id;
    if (!parse_pool_id(arg, &id)) {
        return NULL;
    }
    return PyLong_FromLong(
        ptl_caching_allocator_pool_use_count(((PtlPyCachingAllocator *)o)->alloc, id));
}

static PyObject *
segment_dict(const PtlSegmentInfo *s, int device)
{
    static const char *const states[] = {"inactive", "active_allocated",
                                         "active_pending_free"};   /* ORDER BLOCK_STATE */
    PyObject *blocks = PyList_New(s->nblocks);
    if (blocks == NULL) {
        return NULL;
    }
    for (int64_t j = 0; j < s->nblocks; j++) {
        const PtlBlockInfo *b = &s->blocks[j];
        PyObject *bd = Py_BuildValue("{s:K,s:n,s:n,s:s}", "address",
                                     (unsigned long long)b->address, "size",
                                     (Py_ssize_t)b->size, "requested_size",
                                     (Py_ssize_t)b->requested_size, "state", states[b->state]);
        if (bd == NULL) {
            Py_DECREF(blocks);
            return NULL;
        }
        PyList_SET_ITEM(blocks, j, bd);
    }
    return Py_BuildValue("{s:i,s:K,s:n,s:n,s:n,s:n,s:K,s:s,s:(KK),s:N}", "device", device,
                         "address", (unsigned long long)s->address, "total_size",
                         (Py_ssize_t)s->total_size, "allocated_size",
                         (Py_ssize_t)s->allocated_size, "active_size", (Py_ssize_t)s->active_size,
                         "requested_size", (Py_ssize_t)s->requested_size, "stream",
                         (unsigned long long)s->stream, "segment_type",
                         s->is_large ? "large" : "small", "segment_pool_id",
                         (unsigned long long)s->pool.first, (unsigned long long)s->pool.second,
                         "blocks", blocks);
}

static PyObject *
ca_snapshot(PyObject *o, PyObject *args)
{
    int device = 0;
    int64_t n = 0;
    if (!PyArg_ParseTuple(args, "|i:snapshot", &device)) {
        return NULL;
    }
    PtlSegmentInfo *segs = ptl_caching_allocator_snapshot(((PtlPyCachingAllocator *)o)->alloc,
                                                          &n);
    if (segs == NULL && n == 0 && ptl_error_kind() != PTL_ERR_NONE) {
        return ptlpy_raise();
    }
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (int64_t i = 0; list != NULL && i < n; i++) {
        PyObject *d = segment_dict(&segs[i], device);
        if (d == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, d);
    }
    ptl_caching_allocator_snapshot_free(segs, n);
    return list;
}

static PyObject *
ca_set_memory_fraction(PyObject *o, PyObject *arg)
{
    double f = PyFloat_AsDouble(arg);
    if (f == -1.0 && PyErr_Occurred()) {
        return NULL;
    }
    if (ptl_caching_allocator_set_memory_fraction(((PtlPyCachingAllocator *)o)->alloc, f) < 0) {
        return ptlpy_raise();
    }
    Py_RETURN_NONE;
}

static PyObject *
ca_get_memory_fraction(PyObject *o, PyObject *unused)
{
    (void)unused;
    return PyFloat_FromDouble(
        ptl_caching_allocator_memory_fraction(((PtlPyCachingAllocator *)o)->alloc));
}

static PtlFakeDevice *
fake_of(PyObject *o)
{
    PtlFakeDevice *fake = ((PtlPyAllocatorHead *)o)->fake;
    if (fake == NULL) {
        PyErr_Format(PyExc_TypeError, "only a fake allocator has a fake device, not %s",
                     Py_TYPE(o)->tp_name);
    }
    return fake;
}

static PyObject *
ca_mem_get_info(PyObject *o, PyObject *unused)
{
    (void)unused;
    size_t free_bytes = 0, total = 0;
    if (ptl_caching_allocator_mem_get_info(((PtlPyCachingAllocator *)o)->alloc, &free_bytes,
                                           &total) < 0) {
        return ptlpy_raise();
    }
    return Py_BuildValue("(nn)", (Py_ssize_t)free_bytes, (Py_ssize_t)total);
}

static PyObject *
ca_complete(PyObject *o, PyObject *arg)
{
    PtlFakeDevice *fake = fake_of(o);
    PtlStreamId stream;
    if (fake == NULL || !parse_stream(arg, &stream)) {
        return NULL;
    }
    ptl_fake_device_complete(fake, stream);
    Py_RETURN_NONE;
}

static PyObject *
ca_device_used(PyObject *o, PyObject *unused)
{
    (void)unused;
    PtlFakeDevice *fake = fake_of(o);
    if (fake == NULL) {
        return NULL;
    }
    return Py_BuildValue("{s:n,s:L}", "bytes", (Py_ssize_t)ptl_fake_device_used(fake),
                         "live_events", (long long)ptl_fake_device_live_events(fake));
}

static PyMethodDef caching_allocator_methods[] = {
    {"malloc", ca_malloc, METH_VARARGS,
     "malloc(nbytes, stream=0) -> address (0 for nbytes 0)"},
    {"free", ca_free, METH_O, "free(address)"},
    {"record_stream", ca_record_stream, METH_VARARGS, "record_stream(address, stream)"},
    {"empty_cache", ca_empty_cache, METH_NOARGS, NULL},
    {"memory_stats", ca_memory_stats, METH_NOARGS, "memory_stats_as_nested_dict()'s dict"},
    {"reset_peak_memory_stats", ca_reset_peak, METH_NOARGS, NULL},
    {"reset_accumulated_memory_stats", ca_reset_accumulated, METH_NOARGS, NULL},
    {"snapshot", ca_snapshot, METH_VARARGS, "snapshot(device=0): memory_snapshot()'s list"},
    {"set_memory_fraction", ca_set_memory_fraction, METH_O, NULL},
    {"get_memory_fraction", ca_get_memory_fraction, METH_NOARGS, NULL},
    {"mem_get_info", ca_mem_get_info, METH_NOARGS, "(free, total) bytes of the device"},
    {"complete", ca_complete, METH_O, "complete(stream): the fake stream's work is done"},
    {"device_used", ca_device_used, METH_NOARGS, "the fake device's bytes and live events"},
    {"begin_allocate_to_pool", ca_begin_allocate_to_pool, METH_VARARGS,
     "begin_allocate_to_pool(pool_id, stream): the stream's allocations come from the pool"},
    {"end_allocate_to_pool", ca_end_allocate_to_pool, METH_O, "end_allocate_to_pool(pool_id)"},
    {"release_pool", ca_release_pool, METH_O, "release_pool(pool_id): one user fewer"},
    {"pool_use_count", ca_pool_use_count, METH_O,
     "pool_use_count(pool_id): its users, -1 when the pool does not exist"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject PtlPyCachingAllocator_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pytorchlite._C._CachingAllocator",
    .tp_basicsize = sizeof(PtlPyCachingAllocator),
    .tp_dealloc = caching_allocator_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A device caching allocator (Note [Caching allocator]).",
    .tp_methods = caching_allocator_methods,
};

/* ---- _HostAllocator ---- */

typedef struct {
    PyObject_HEAD
    PtlHostAllocator *alloc;   /* owned when fake is set, else the process's */
    PtlFakeDevice *fake;       /* owned; NULL for the CUDA host allocator (PtlPyAllocatorHead) */
} PtlPyHostAllocator;

static PyTypeObject PtlPyHostAllocator_Type;

static PtlHostAllocator *
host_of(PyObject *o)
{
    return ((PtlPyHostAllocator *)o)->alloc;
}

static void
host_allocator_dealloc(PyObject *o)
{
    PtlPyHostAllocator *self = (PtlPyHostAllocator *)o;
    if (self->fake != NULL) {
        ptl_host_allocator_free(self->alloc);
        ptl_fake_device_free(self->fake);
    }
    PyObject_Free(o);
}

static PyObject *
ha_malloc(PyObject *o, PyObject *arg)
{
    Py_ssize_t nbytes = PyLong_AsSsize_t(arg);
    void *p;
    if (nbytes == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (nbytes < 0) {
        PyErr_SetString(PyExc_ValueError, "malloc: nbytes must be non-negative");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    p = ptl_host_allocator_malloc(host_of(o), (size_t)nbytes);
    Py_END_ALLOW_THREADS
    if (p == NULL && ptl_error_kind() != PTL_ERR_NONE) {
        return ptlpy_raise();
    }
    return PyLong_FromVoidPtr(p);
}

static PyObject *
ha_free(PyObject *o, PyObject *arg)
{
    int r;
    void *p = PyLong_AsVoidPtr(arg);
    if (p == NULL && PyErr_Occurred()) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    r = ptl_host_allocator_release(host_of(o), p);
    Py_END_ALLOW_THREADS
    if (r < 0) {
        return ptlpy_raise();
    }
    Py_RETURN_NONE;
}

static PyObject *
ha_record_stream(PyObject *o, PyObject *args)
{
    PyObject *ptr;
    PtlStreamId stream;
    if (!PyArg_ParseTuple(args, "OO&:record_stream", &ptr, parse_stream, &stream)) {
        return NULL;
    }
    void *p = PyLong_AsVoidPtr(ptr);
    if (p == NULL && PyErr_Occurred()) {
        return NULL;
    }
    if (ptl_host_allocator_record_stream(host_of(o), p, stream) < 0) {
        return ptlpy_raise();
    }
    Py_RETURN_NONE;
}

static PyObject *
ha_contains(PyObject *o, PyObject *arg)
{
    void *p = PyLong_AsVoidPtr(arg);
    if (p == NULL && PyErr_Occurred()) {
        return NULL;
    }
    return PyBool_FromLong(ptl_host_allocator_contains(host_of(o), p));
}

static PyObject *
ha_empty_cache(PyObject *o, PyObject *unused)
{
    (void)unused;
    Py_BEGIN_ALLOW_THREADS
    ptl_host_allocator_empty_cache(host_of(o));
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *
duration_dict(const PtlDurationStat *d)
{
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L}", "total", (long long)d->total, "max",
                         (long long)d->max, "min", (long long)d->min, "count",
                         (long long)d->count, "avg",
                         (long long)(d->count ? d->total / d->count : 0));
}

/* PyTorch's _cuda_hostMemoryStats(): torch.cuda.host_memory_stats_as_nested_dict(). */
static PyObject *
ha_memory_stats(PyObject *o, PyObject *unused)
{
    (void)unused;
    PtlHostMemoryStats s = ptl_host_allocator_stats(host_of(o));
    PyObject *d = PyDict_New();
    if (d == NULL || set_steal(d, "allocations", stat_dict(&s.allocations)) < 0 ||
        set_steal(d, "allocated_bytes", stat_dict(&s.allocated_bytes)) < 0 ||
        set_steal(d, "active_requests", stat_dict(&s.active_requests)) < 0 ||
        set_steal(d, "active_bytes", stat_dict(&s.active_bytes)) < 0 ||
        set_steal(d, "num_host_alloc", PyLong_FromLongLong(s.num_host_alloc)) < 0 ||
        set_steal(d, "num_host_free", PyLong_FromLongLong(s.num_host_free)) < 0 ||
        set_steal(d, "host_alloc_time", duration_dict(&s.host_alloc_time)) < 0 ||
        set_steal(d, "host_free_time", duration_dict(&s.host_free_time)) < 0) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

static PyObject *
ha_reset_peak(PyObject *o, PyObject *unused)
{
    (void)unused;
    ptl_host_allocator_reset_peak(host_of(o));
    Py_RETURN_NONE;
}

static PyObject *
ha_reset_accumulated(PyObject *o, PyObject *unused)
{
    (void)unused;
    ptl_host_allocator_reset_accumulated(host_of(o));
    Py_RETURN_NONE;
}

static PyMethodDef host_allocator_methods[] = {
    {"malloc", ha_malloc, METH_O, "malloc(nbytes) -> address (0 for nbytes 0)"},
    {"free", ha_free, METH_O, "free(address)"},
    {"record_stream", ha_record_stream, METH_VARARGS, "record_stream(address, stream)"},
    {"contains", ha_contains, METH_O, "contains(address): inside a pinned block"},
    {"empty_cache", ha_empty_cache, METH_NOARGS, NULL},
    {"memory_stats", ha_memory_stats, METH_NOARGS, "host_memory_stats_as_nested_dict()"},
    {"reset_peak_memory_stats", ha_reset_peak, METH_NOARGS, NULL},
    {"reset_accumulated_memory_stats", ha_reset_accumulated, METH_NOARGS, NULL},
    {"complete", ca_complete, METH_O, "complete(stream): the fake stream's work is done"},
    {"device_used", ca_device_used, METH_NOARGS, "the fake device's bytes and live events"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject PtlPyHostAllocator_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pytorchlite._C._HostAllocator",
    .tp_basicsize = sizeof(PtlPyHostAllocator),
    .tp_dealloc = host_allocator_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The pinned host memory cache (Note [Caching host allocator]).",
    .tp_methods = host_allocator_methods,
};

/* Wraps alloc; with fake set, the object owns both. */
static PyObject *
wrap_host_allocator(PtlHostAllocator *alloc, PtlFakeDevice *fake)
{
    PtlPyHostAllocator *self = PyObject_New(PtlPyHostAllocator, &PtlPyHostAllocator_Type);
    if (self == NULL) {
        if (fake != NULL) {
            ptl_host_allocator_free(alloc);
            ptl_fake_device_free(fake);
        }
        return NULL;
    }
    self->alloc = alloc;
    self->fake = fake;
    return (PyObject *)self;
}

/* ---- module functions ---- */

/* A caching allocator over ops/ctx configured by the text conf, wrapped and owned by its
 * object together with fake (may be NULL), which is freed on failure. */
static PyObject *
new_owned_allocator(const PtlDeviceMemoryOps *ops, void *ctx, int device, const char *conf,
                    PtlFakeDevice *fake)
{
    PtlAllocatorConf c;
    PtlCachingAllocator *alloc = NULL;
    if (ptl_allocator_conf_parse(conf, &c) == 0) {
        alloc = ptl_caching_allocator_new(ops, ctx, device, &c);
    }
    if (alloc == NULL) {
        ptl_fake_device_free(fake);
        return ptlpy_raise();
    }
    return wrap_allocator(alloc, fake, 1);
}

static PyObject *
py_fake_device_allocator(PyObject *m, PyObject *args)
{
    (void)m;
    Py_ssize_t capacity;
    const char *conf = "";
    if (!PyArg_ParseTuple(args, "n|s:_FakeDeviceAllocator", &capacity, &conf)) {
        return NULL;
    }
    if (capacity < 0) {
        PyErr_SetString(PyExc_ValueError, "_FakeDeviceAllocator: capacity must be non-negative");
        return NULL;
    }
    PtlFakeDevice *fake = ptl_fake_device_new((size_t)capacity);
    if (fake == NULL) {
        return ptlpy_raise();
    }
    return new_owned_allocator(&ptl_fake_device_ops, fake, 0, conf, fake);
}

/* _C._DeviceCachingAllocator(device, conf=""): a caching allocator of its own over the real
 * CUDA device (tests/cuda); RuntimeError without CUDA or without that device. */
static PyObject *
py_device_caching_allocator(PyObject *m, PyObject *args)
{
    (void)m;
    int device;
    const char *conf = "";
    if (!PyArg_ParseTuple(args, "i|s:_DeviceCachingAllocator", &device, &conf)) {
        return NULL;
    }
    const PtlDeviceMemoryOps *ops = ptl_cuda_device_memory_ops();
    if (ops == NULL || device < 0 || device >= ptl_cuda_device_count()) {
        return PyErr_Format(PyExc_RuntimeError, "no CUDA device %d: %s", device,
                            ops == NULL || ptl_cuda_device_count() == 0
                                ? ptl_cuda_no_device_reason() : "invalid device ordinal");
    }
    return new_owned_allocator(ops, (void *)(intptr_t)device, device, conf, NULL);
}

static PyObject *
py_parse_alloc_conf(PyObject *m, PyObject *arg)
{
    (void)m;
    PtlAllocatorConf c;
    const char *conf = PyUnicode_AsUTF8(arg);
    if (conf == NULL) {
        return NULL;
    }
    if (ptl_allocator_conf_parse(conf, &c) < 0) {
        return ptlpy_raise();
    }
    return Py_BuildValue("{s:L,s:d,s:n}", "max_split_size",
                         c.max_split_size == SIZE_MAX ? -1LL : (long long)c.max_split_size,
                         "garbage_collection_threshold", c.garbage_collection_threshold,
                         "roundup_power2_divisions", (Py_ssize_t)c.roundup_power2_divisions);
}

static PyObject *
py_cuda_caching_allocator(PyObject *m, PyObject *arg)
{
    (void)m;
    int device = PyLong_AsLong(arg);
    if (device == -1 && PyErr_Occurred()) {
        return NULL;
    }
    PtlCachingAllocator *alloc = ptl_cuda_caching_allocator(device);
    if (alloc == NULL) {
        Py_RETURN_NONE;
    }
    return wrap_allocator(alloc, NULL, 0);
}

/* _C._FakeHostAllocator(capacity): a host allocator over a fake device of capacity bytes
 * whose streams complete only on complete(stream) (a testing hook). */
static PyObject *
py_fake_host_allocator(PyObject *m, PyObject *arg)
{
    (void)m;
    Py_ssize_t capacity = PyLong_AsSsize_t(arg);
    if (capacity == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (capacity < 0) {
        PyErr_SetString(PyExc_ValueError, "_FakeHostAllocator: capacity must be non-negative");
        return NULL;
    }
    PtlFakeDevice *fake = ptl_fake_device_new((size_t)capacity);
    PtlHostAllocator *alloc = NULL;
    if (fake == NULL || (alloc = ptl_host_allocator_new(&ptl_fake_device_ops, fake)) == NULL) {
        ptl_fake_device_free(fake);
        return ptlpy_raise();
    }
    return wrap_host_allocator(alloc, fake);
}

/* _C._cuda_host_allocator(): the process's pinned host allocator (created and CUDA
 * initialised at the first call); PyTorch's error where no device can pin memory. */
static PyObject *
py_cuda_host_allocator(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    PtlHostAllocator *alloc = ptl_cuda_host_allocator();
    if (alloc == NULL) {
        return ptlpy_raise();
    }
    return wrap_host_allocator(alloc, NULL);
}

/* _C._cuda_set_host_allocator_for_testing(alloc or None): pinned memory comes from alloc (a
 * _FakeHostAllocator, which the caller keeps alive while its pinned tensors live). */
static PyObject *
py_set_host_allocator_for_testing(PyObject *m, PyObject *arg)
{
    (void)m;
    if (arg != Py_None && !PyObject_TypeCheck(arg, &PtlPyHostAllocator_Type)) {
        PyErr_SetString(PyExc_TypeError, "expected a _HostAllocator or None");
        return NULL;
    }
    ptl_cuda_set_host_allocator_for_testing(arg == Py_None ? NULL : host_of(arg));
    Py_RETURN_NONE;
}

static PyObject *
py_cpu_memory_stats(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    static const char *const cpu_stats[] = {"allocation", "allocated_bytes", "reserved_bytes",
                                            NULL};
    PtlMemoryStats s = ptl_cpu_alloc_memory_stats();
    PtlStat saved = ptl_saved_tensor_bytes();
    PyObject *d = stats_dict(&s, cpu_stats);
    if (d == NULL) {
        return NULL;
    }
    PyObject *per_pool = PyDict_New();
    if (set_steal(d, "saved_tensor_bytes", per_pool) < 0 ||
        set_steal(per_pool, "all", stat_dict(&saved)) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

static PyObject *
py_cpu_reset_peak(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    ptl_cpu_alloc_reset_peak();
    ptl_saved_tensor_bytes_reset_peak();
    Py_RETURN_NONE;
}

static PyObject *
py_cpu_reset_accumulated(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    ptl_cpu_alloc_reset_accumulated();
    ptl_saved_tensor_bytes_reset_accumulated();
    Py_RETURN_NONE;
}

static PyMethodDef memory_functions[] = {
    {"_FakeDeviceAllocator", py_fake_device_allocator, METH_VARARGS,
     "_FakeDeviceAllocator(capacity, conf='') -> _CachingAllocator (a testing hook)"},
    {"_DeviceCachingAllocator", py_device_caching_allocator, METH_VARARGS,
     "_DeviceCachingAllocator(device, conf='') -> _CachingAllocator over the real device"},
    {"_parse_alloc_conf", py_parse_alloc_conf, METH_O, NULL},
    {"_cuda_caching_allocator", py_cuda_caching_allocator, METH_O, NULL},
    {"_FakeHostAllocator", py_fake_host_allocator, METH_O,
     "_FakeHostAllocator(capacity) -> _HostAllocator (a testing hook)"},
    {"_cuda_host_allocator", py_cuda_host_allocator, METH_NOARGS, NULL},
    {"_cuda_set_host_allocator_for_testing", py_set_host_allocator_for_testing, METH_O, NULL},
    {"_cpu_memory_stats", py_cpu_memory_stats, METH_NOARGS, NULL},
    {"_cpu_reset_peak_memory_stats", py_cpu_reset_peak, METH_NOARGS, NULL},
    {"_cpu_reset_accumulated_memory_stats", py_cpu_reset_accumulated, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

int
ptlpy_memory_init(PyObject *module)
{
    if (PyType_Ready(&PtlPyCachingAllocator_Type) < 0) {
        return -1;
    }
    Py_INCREF(&PtlPyCachingAllocator_Type);
    if (PyModule_AddObject(module, "_CachingAllocator",
                           (PyObject *)&PtlPyCachingAllocator_Type) < 0) {
        Py_DECREF(&PtlPyCachingAllocator_Type);
        return -1;
    }
    if (PyType_Ready(&PtlPyHostAllocator_Type) < 0) {
        return -1;
    }
    Py_INCREF(&PtlPyHostAllocator_Type);
    if (PyModule_AddObject(module, "_HostAllocator", (PyObject *)&PtlPyHostAllocator_Type) < 0) {
        Py_DECREF(&PtlPyHostAllocator_Type);
        return -1;
    }
    return PyModule_AddFunctions(module, memory_functions);
}
