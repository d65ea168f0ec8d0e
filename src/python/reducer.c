/* reducer.c -- _C._Reducer, the C half of DDP's reducer: which parameters' gradients are
 * ready, counted per bucket from C post-accumulate-grad hooks, the copy of each bucket's
 * gradients into its flat tensor and the launch of its reduction (a Python callable) once
 * per bucket, in bucket order; at the end, the averages back into .grad (for buckets in
 * shared memory, the sum of the ranks' slots, after waiting for them).  Mirrors the
 * bookkeeping of torch/csrc/distributed/c10d/reducer.cpp (autograd_hook,
 * mark_variable_ready, finalize_bucket_dense).  See Note [DDP reducer] in
 * pytorchlite/nn/parallel/distributed.py and Note [C post-accumulate-grad hooks] in
 * src/autograd/autograd.h.
 *
 * Note [Reducer ownership]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * The reducer owns its parameters' impls, the bucket views and `launch`; each parameter's
 * hook points back at the reducer without owning it (a strong pointer would make a cycle
 * through C that the garbage collector cannot see), so the reducer removes its hooks when
 * it dies, as PyTorch's Reducer does in its destructor.  A hook holds the reducer alive
 * while it calls `launch`, which may drop the last other reference.  It owns the shared
 * slots and flag words of its shared buckets too (tensors over MPI window memory, Note [DDP
 * shared-memory buckets] in pytorchlite/distributed/_shared_buckets.py). */
#define _GNU_SOURCE
#include "ptlpy.h"

#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <time.h>

#include "../autograd/autograd.h"

typedef struct Reducer Reducer;

typedef struct HookCtx {
    Reducer *r;                  /* borrowed, Note [Reducer ownership] */
    int index;                   /* the parameter's index */
} HookCtx;

struct Reducer {
    PyObject_HEAD
    int nparams, nbuckets;
    PtlTensorImpl **params;      /* owned, [nparams] */
    PtlTensorImpl **views;       /* owned, [nparams]: each one's piece of its bucket */
    int *bucket_of;              /* [nparams] */
    int64_t *hook_ids;           /* [nparams]; 0: no hook */
    HookCtx *ctxs;               /* [nparams] */
    unsigned char *ready;        /* [nparams] */
    int *first;                  /* [nbuckets + 1]: bucket b holds order[first[b]..first[b+1]) */
    int *order;                  /* [nparams]: parameter indices, bucket by bucket */
    int *pending;                /* [nbuckets]: parameters not ready yet */
    PtlTensorImpl **scales;      /* owned, [nbuckets]: the factor gradients are copied with
                                  * (a wrapped number), NULL for 1 */
    double *factors;             /* [nbuckets]: the same factors as doubles */
    int next_bucket;             /* the next bucket to launch (they launch in order) */
    int armed;                   /* a forward prepared a reduction that has not finished */
    int as_view;                 /* gradient_as_bucket_view: .grad becomes the bucket view */
    int local;                   /* nothing to reduce (a world of one): a completed bucket is
                                  * neither filled nor launched, Note [DDP reducer] */
    PyObject *launch;            /* launch(bucket index), owned */
    /* the shared buckets (Note [DDP shared-memory buckets]); slots and flags NULL until a
     * bucket is shared */
    int shared;                  /* the shared buckets are summed through their slots (off
                                  * while a communication hook reduces them) */
    int rank, world;             /* this rank's slot, and the number of slots per bucket */
    double stall_s;              /* how long a fill waits for the other ranks' reads */
    int64_t *offsets;            /* [nparams]: each parameter's first element in its bucket */
    int64_t *gen;                /* [nbuckets]: the shared reductions of each bucket so far */
    PtlTensorImpl **slots;       /* owned, [nbuckets * world]: bucket b's slot on rank s */
    PtlTensorImpl **flags;       /* owned, [nbuckets * world]: bucket b's flag words on s */
};

/* The flag words of a shared bucket on one rank: int64 counters, each on its own cache line
 * (ORDER FLAGS: _shared_buckets.FLAG_WORDS and its offsets). */
#define FLAG_ARRIVED 0           /* reductions whose gradients this rank's slot holds */
#define FLAG_CONSUMED 8          /* reductions whose slots this rank has finished reading */
#define FLAG_WORDS 16

static PyTypeObject *reducer_type = NULL;

static PtlTensorImpl *
grad_of(PtlTensorImpl *p)
{
    PtlAutogradMeta *m = p->autograd_meta;
    return m != NULL ? m->grad : NULL;
}

/* Sets p's .grad to g (borrowed); 0 or -1. */
static int
set_grad(PtlTensorImpl *p, PtlTensorImpl *g)
{
    PtlAutogradMeta *m = ptl_autograd_meta(p, 1);
    if (m == NULL) {
        return -1;
    }
    ptl_incref(g);
    PTL_CLEAR(m->grad);
    m->grad = g;
    return 0;
}

/* Whether g is the bucket view v itself (gradient_as_bucket_view after the first step). */
static int
is_view_itself(const PtlTensorImpl *g, const PtlTensorImpl *v)
{
    return g == v || (g->storage == v->storage && g->storage_offset == v->storage_offset &&
                      g->dtype == v->dtype && g->numel == v->numel &&
                      ptl_tensor_is_contiguous(g));
}

/* Runs op on args and drops its (in-place) result; 0 or -1. */
static int
call_inplace(PtlOpId op, PtlIValue *args)
{
    PtlTensorImpl *r = ptl_call_tensor(op, args);
    if (r == NULL) {
        return -1;
    }
    ptl_decref(r);
    return 0;
}

/* The scaled copies below prefetch their destination for writing PREFETCH_LINES cache lines
 * ahead: a shared bucket's slot (Note [DDP shared-memory buckets]) was read by the other ranks
 * in the last step, so each line's store must first invalidate their copies, which one store
 * at a time waits for.  On the digits MLP's 68 KB bucket (2 ranks, 2 cores) the fill took
 * 19-20 us without, 10.5-11 us with (8, 16 or 32 lines ahead alike), where the two vCPUs
 * share little cache; where they share more, 3-4 us. */
#define LINE 64
#define PREFETCH_LINES 8

/* For one real dtype T: scaled_copy_T, dst[k] = src[k] * factor for n elements (factor
 * rounded to T first, as mul's), a cache line at a time; add_T, dst[k] = x[k] + y[k]. */
#define PTL_DEFINE_REDUCER_LOOPS(T)                                                         \
    static void scaled_copy_##T(void *dst, const void *src, int64_t n, T f)                 \
    {                                                                                       \
        T *d = dst;                                                                         \
        const T *x = src;                                                                   \
        const int64_t step = LINE / (int64_t)sizeof(T), ahead = PREFETCH_LINES * step;      \
        for (int64_t j = 0; j < n; j += step) {                                             \
            int64_t end = j + step < n ? j + step : n;                                      \
            if (j + ahead < n) {                                                            \
                __builtin_prefetch(d + j + ahead, 1, 3);                                    \
            }                                                                               \
            for (int64_t k = j; k < end; k++) {                                             \
                d[k] = x[k] * f;                                                            \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
    static void add_##T(T *d, const T *x, const T *y, int64_t n)                            \
    {                                                                                       \
        for (int64_t k = 0; k < n; k++) {                                                   \
            d[k] = x[k] + y[k];                                                             \
        }                                                                                   \
    }
PTL_DEFINE_REDUCER_LOOPS(float)
PTL_DEFINE_REDUCER_LOOPS(double)
#undef PTL_DEFINE_REDUCER_LOOPS

/* dst = src * factor (factor NULL: a copy) without the dispatcher, for what DDP's buckets
 * and gradients are: two distinct, dense, contiguous CPU float32 or float64 tensors of one
 * dtype and element count.  The operator (copy_ or mul.out) costs about 10k instructions
 * of dispatch a call, a tenth of DDP's cost per step on the digits MLP, where the data of
 * a gradient is a few thousand floats.  1 when done, 0 when the caller takes the operator.
 * The product is in the tensors' dtype, as mul's.  Called with grad mode off. */
static int
direct_copy(PtlTensorImpl *dst, PtlTensorImpl *src, const double *factor)
{
    if (dst == src || dst->dtype != src->dtype || dst->numel != src->numel ||
        dst->device.type != PTL_DEVICE_CPU || src->device.type != PTL_DEVICE_CPU ||
        dst->sparse != NULL || src->sparse != NULL || !ptl_tensor_is_contiguous(dst) ||
        !ptl_tensor_is_contiguous(src) || dst->storage == src->storage ||
        ptl_tensor_is_conj(dst) || ptl_tensor_is_conj(src) ||
        (dst->dtype != PTL_DTYPE_FLOAT32 && dst->dtype != PTL_DTYPE_FLOAT64)) {
        return 0;
    }
    int64_t n = dst->numel;
    if (n == 0) {
        ptl_tensor_bump_version(dst);
        return 1;
    }
    if (factor == NULL) {
        memcpy(ptl_tensor_data(dst), ptl_tensor_data(src), (size_t)n * ptl_tensor_itemsize(dst));
    }
    else if (dst->dtype == PTL_DTYPE_FLOAT32) {
        scaled_copy_float(ptl_tensor_data(dst), ptl_tensor_data(src), n, (float)*factor);
    }
    else {
        scaled_copy_double(ptl_tensor_data(dst), ptl_tensor_data(src), n, *factor);
    }
    ptl_tensor_bump_version(dst);
    return 1;
}

/* Bucket b is shared (Note [DDP shared-memory buckets]) and summed through its slots. */
static int
is_shared(const Reducer *r, int b)
{
    return r->shared && r->slots != NULL && r->slots[(size_t)b * r->world] != NULL;
}

static int64_t *
flag_word(const Reducer *r, int b, int s, int word)
{
    return (int64_t *)ptl_tensor_data(r->flags[(size_t)b * r->world + s]) + word;
}

/* Whether every rank's flag `word` of bucket b has reached gen (an acquire load: what the
 * rank wrote before it stored the flag is visible after). */
static int
all_reached(const Reducer *r, int b, int word, int64_t gen)
{
    for (int s = 0; s < r->world; s++) {
        if (s != r->rank &&
            __atomic_load_n(flag_word(r, b, s, word), __ATOMIC_ACQUIRE) < gen) {
            return 0;
        }
    }
    return 1;
}

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Waits until every other rank has finished reading bucket b's previous reduction, so that
 * this rank may overwrite its slot: nearly always true at once (they read it in the last
 * step's final callback); polls, yielding the core, for at most stall_s.  0, or -1 with an
 * error naming the bucket. */
static int
wait_consumed(const Reducer *r, int b)
{
    double start = 0.0;
    for (int i = 0; !all_reached(r, b, FLAG_CONSUMED, r->gen[b]); i++) {
        if (i == 0) {
            start = now_s();
        }
        else if (now_s() - start > r->stall_s) {
            return ptl_error_set(PTL_ERR_RUNTIME, "DDP bucket %d: timed out after %.1f s "
                                 "waiting for the other ranks to read its previous "
                                 "reduction", b, r->stall_s);
        }
        sched_yield();
    }
    return 0;
}

/* dst[k] = slot_0[k] + slot_1[k] + ... over the ranks' slots of parameter i's piece of bucket
 * b, in rank order (so bit-identical on every rank), for a dense contiguous CPU dst of the
 * bucket's dtype (float32, float64 or their complex types, summed part by part) outside the
 * slots.  1 when done, 0 when the caller must sum into a tensor of its own. */
static int
sum_slots(const Reducer *r, int b, int i, PtlTensorImpl *dst)
{
    PtlTensorImpl *own = r->slots[(size_t)b * r->world + r->rank];
    PtlDtype real = ptl_dtype_to_real(own->dtype);
    if (dst->dtype != own->dtype || dst->numel != r->params[i]->numel ||
        dst->device.type != PTL_DEVICE_CPU || dst->sparse != NULL ||
        !ptl_tensor_is_contiguous(dst) || ptl_tensor_is_conj(dst) ||
        (real != PTL_DTYPE_FLOAT32 && real != PTL_DTYPE_FLOAT64)) {
        return 0;
    }
    for (int s = 0; s < r->world; s++) {
        if (dst->storage == r->slots[(size_t)b * r->world + s]->storage) {
            return 0;
        }
    }
    int64_t n = dst->numel * (real != own->dtype ? 2 : 1);
    size_t at = (size_t)r->offsets[i] * ptl_tensor_itemsize(own);
    const char *src[2];
    for (int s = 0; s < r->world && n > 0; s++) {
        src[s > 0] = (const char *)ptl_tensor_data(r->slots[(size_t)b * r->world + s]) + at;
        if (s == 0) {
            continue;
        }
        void *d = ptl_tensor_data(dst);
        const void *x = s == 1 ? src[0] : d;
        if (real == PTL_DTYPE_FLOAT32) {
            add_float(d, x, (const void *)src[1], n);
        }
        else {
            add_double(d, x, (const void *)src[1], n);
        }
    }
    ptl_tensor_bump_version(dst);
    return 1;
}

/* The sum of parameter i's piece of shared bucket b over the ranks' slots into its .grad
 * (a new tensor when it has none): directly, or through a contiguous copy of this rank's
 * piece when .grad is not a plain tensor of the bucket's dtype.  0 or -1. */
static int
write_sum(Reducer *r, int b, int i)
{
    PtlTensorImpl *g = grad_of(r->params[i]);
    if (g != NULL && sum_slots(r, b, i, g)) {
        return 0;
    }
    PtlIValue a[2] = {ptl_iv_tensor(r->views[i]), ptl_iv_none()};
    PtlTensorImpl *c = ptl_call_tensor(PTL_OP_clone, a);
    int rc = c != NULL && sum_slots(r, b, i, c) ? 0 : -1;
    if (rc == 0 && g == NULL) {
        rc = set_grad(r->params[i], c);
    }
    else if (rc == 0) {
        PtlIValue cp[3] = {ptl_iv_tensor(g), ptl_iv_tensor(c), ptl_iv_bool(0)};
        rc = call_inplace(PTL_OP_copy_, cp);
    }
    if (c != NULL && rc < 0 && ptl_error_kind() == PTL_ERR_NONE) {
        ptl_error_set(PTL_ERR_RUNTIME, "DDP bucket %d: cannot sum parameter %d", b, i);
    }
    ptl_xdecref(c);
    return rc;
}

/* The gradients of bucket b into its flat tensor, times its scale (PyTorch divides while
 * copying: one pass); a missing gradient gives zeros.  With as_view, .grad becomes the
 * view.  0 or -1. */
static int
fill_bucket(Reducer *r, int b)
{
    PtlTensorImpl *scale = r->scales[b];
    for (int k = r->first[b]; k < r->first[b + 1]; k++) {
        int i = r->order[k];
        PtlTensorImpl *g = grad_of(r->params[i]), *v = r->views[i];
        int rc;
        if (g == NULL) {
            PtlIValue a[1] = {ptl_iv_tensor(v)};
            rc = call_inplace(PTL_OP_zero_, a);
        }
        else if (is_view_itself(g, v)) {
            PtlIValue a[2] = {ptl_iv_tensor(v), ptl_iv_tensor(scale)};
            rc = scale != NULL ? call_inplace(PTL_OP_mul__Tensor, a) : 0;
        }
        else if (direct_copy(v, g, scale != NULL ? &r->factors[b] : NULL)) {
            rc = 0;
        }
        else if (scale != NULL) {
            PtlIValue a[3] = {ptl_iv_tensor(g), ptl_iv_tensor(scale), ptl_iv_tensor(v)};
            rc = call_inplace(PTL_OP_mul_out, a);
        }
        else {
            PtlIValue a[3] = {ptl_iv_tensor(v), ptl_iv_tensor(g), ptl_iv_bool(0)};
            rc = call_inplace(PTL_OP_copy_, a);
        }
        if (rc < 0 || (r->as_view && g != NULL && g != v && set_grad(r->params[i], v) < 0)) {
            return -1;
        }
    }
    return 0;
}

/* Parameter i is ready: when that completes the next bucket(s), fills and launches them in
 * order.  0, or -1 with an error set (PTL_ERR_PYTHON when launch raised). */
static int
mark_ready(Reducer *r, int i)
{
    r->ready[i] = 1;
    int b = r->bucket_of[i];
    if (--r->pending[b] > 0 || b != r->next_bucket) {
        return 0;
    }
    if (r->local) {
        while (r->next_bucket < r->nbuckets && r->pending[r->next_bucket] == 0) {
            r->next_bucket++;
        }
        r->armed = r->next_bucket < r->nbuckets;
        return 0;
    }
    int rc = 0, grad_mode = ptl_grad_mode_enabled();
    Py_INCREF(r);
    while (rc == 0 && r->next_bucket < r->nbuckets && r->pending[r->next_bucket] == 0) {
        b = r->next_bucket++;
        int shared = is_shared(r, b);
        ptl_grad_mode_set(0);   /* create_graph: the bucket holds values, not history */
        rc = shared ? wait_consumed(r, b) : 0;
        rc = rc == 0 ? fill_bucket(r, b) : rc;
        ptl_grad_mode_set(grad_mode);
        if (rc == 0 && shared) {   /* publishes the slot (a release store) */
            __atomic_store_n(flag_word(r, b, r->rank, FLAG_ARRIVED), ++r->gen[b],
                             __ATOMIC_RELEASE);
        }
        if (rc == 0) {
            PyObject *index = PyLong_FromLong(b);
            PyObject *res = index != NULL ? PyObject_CallOneArg(r->launch, index) : NULL;
            Py_XDECREF(index);
            if (res == NULL) {
                rc = ptl_error_set(PTL_ERR_PYTHON, "launching a DDP bucket failed");
            }
            Py_XDECREF(res);
        }
    }
    Py_DECREF(r);
    return rc;
}

/* The post-accumulate-grad hook of every parameter (Note [C post-accumulate-grad hooks]). */
static int
param_ready(void *ctx, PtlTensorImpl *leaf)
{
    (void)leaf;
    HookCtx *c = ctx;
    Reducer *r = c->r;
    return r->armed && !r->ready[c->index] ? mark_ready(r, c->index) : 0;
}

static void
remove_hooks(Reducer *r)
{
    for (int i = 0; r->hook_ids != NULL && i < r->nparams; i++) {
        if (r->hook_ids[i] > 0) {
            ptl_post_acc_grad_hook_remove(r->params[i], r->hook_ids[i]);
            r->hook_ids[i] = 0;
        }
    }
}

static int
reducer_traverse(Reducer *self, visitproc visit, void *arg)
{
    Py_VISIT(self->launch);
    Py_VISIT(Py_TYPE(self));
    return 0;
}

static int
reducer_clear(Reducer *self)
{
    Py_CLEAR(self->launch);
    return 0;
}

static void
reducer_dealloc(Reducer *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    remove_hooks(self);
    for (int i = 0; i < self->nparams; i++) {
        ptl_xdecref(self->params ? self->params[i] : NULL);
        ptl_xdecref(self->views ? self->views[i] : NULL);
    }
    for (int b = 0; self->scales != NULL && b < self->nbuckets; b++) {
        ptl_xdecref(self->scales[b]);
    }
    free(self->params);
    free(self->views);
    free(self->bucket_of);
    free(self->hook_ids);
    free(self->ctxs);
    free(self->ready);
    free(self->first);
    free(self->order);
    free(self->pending);
    free(self->scales);
    free(self->factors);
    for (int k = 0; self->slots != NULL && k < self->nbuckets * self->world; k++) {
        ptl_xdecref(self->slots[k]);
        ptl_xdecref(self->flags[k]);
    }
    free(self->slots);
    free(self->flags);
    free(self->offsets);
    free(self->gen);
    Py_CLEAR(self->launch);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

/* The tensor o (borrowed impl), or NULL with TypeError naming `what`. */
static PtlTensorImpl *
tensor_arg(PyObject *o, const char *what)
{
    if (!PtlPyTensor_Check(o)) {
        PyErr_Format(PyExc_TypeError, "_Reducer: %s must be tensors, got %s", what,
                     Py_TYPE(o)->tp_name);
        return NULL;
    }
    return PTLPY_IMPL(o);
}

/* Reads buckets (a list of lists of parameter indices, covering each parameter once) into
 * r->first / r->order / r->bucket_of; 0 or -1 (ValueError). */
static int
read_buckets(Reducer *r, PyObject *buckets)
{
    int k = 0;
    for (int i = 0; i < r->nparams; i++) {
        r->bucket_of[i] = -1;
    }
    for (int b = 0; b < r->nbuckets; b++) {
        PyObject *items = PySequence_Fast(PyList_GET_ITEM(buckets, b),
                                          "_Reducer: a bucket must be a list of indices");
        if (items == NULL) {
            return -1;
        }
        r->first[b] = k;
        for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(items); j++) {
            long i = PyLong_AsLong(PySequence_Fast_GET_ITEM(items, j));
            if (i == -1 && PyErr_Occurred()) {
                Py_DECREF(items);
                return -1;
            }
            if (i < 0 || i >= r->nparams || r->bucket_of[i] != -1) {
                PyErr_Format(PyExc_ValueError, "_Reducer: parameter index %ld is out of range "
                             "or in two buckets", i);
                Py_DECREF(items);
                return -1;
            }
            r->bucket_of[i] = b;
            r->offsets[i] = k == r->first[b] ? 0 : r->offsets[r->order[k - 1]] +
                                                   r->params[r->order[k - 1]]->numel;
            r->order[k++] = (int)i;
        }
        Py_DECREF(items);
        if (k == r->first[b]) {
            PyErr_Format(PyExc_ValueError, "_Reducer: bucket %d is empty", b);
            return -1;
        }
    }
    r->first[r->nbuckets] = k;
    if (k != r->nparams) {
        PyErr_SetString(PyExc_ValueError, "_Reducer: every parameter must be in a bucket");
        return -1;
    }
    return 0;
}

/* _Reducer(params, buckets, views, launch, as_view): params and views (each parameter's
 * piece of its bucket's flat tensor) are lists of tensors, buckets a list of lists of
 * parameter indices in launch order; launch(b) starts bucket b's reduction.  Registers a
 * post-accumulate-grad hook on every parameter. */
static PyObject *
reducer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"params", "buckets", "views", "launch", "as_view", NULL};
    PyObject *params, *buckets, *views, *launch;
    int as_view;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!O!Op:_Reducer", kwlist, &PyList_Type,
                                     &params, &PyList_Type, &buckets, &PyList_Type, &views,
                                     &launch, &as_view)) {
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(params), nb = PyList_GET_SIZE(buckets);
    if (PyList_GET_SIZE(views) != n || n == 0 || nb == 0 || n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "_Reducer: expected as many views as parameters, "
                        "and at least one bucket");
        return NULL;
    }
    if (!PyCallable_Check(launch)) {
        PyErr_SetString(PyExc_TypeError, "_Reducer: launch must be callable");
        return NULL;
    }
    Reducer *r = PyObject_GC_New(Reducer, type);
    if (r == NULL) {
        return NULL;
    }
    r->nparams = (int)n;
    r->nbuckets = (int)nb;
    r->params = calloc((size_t)n, sizeof(PtlTensorImpl *));
    r->views = calloc((size_t)n, sizeof(PtlTensorImpl *));
    r->bucket_of = calloc((size_t)n, sizeof(int));
    r->hook_ids = calloc((size_t)n, sizeof(int64_t));
    r->ctxs = calloc((size_t)n, sizeof(HookCtx));
    r->ready = calloc((size_t)n, 1);
    r->first = calloc((size_t)nb + 1, sizeof(int));
    r->order = calloc((size_t)n, sizeof(int));
    r->pending = calloc((size_t)nb, sizeof(int));
    r->scales = calloc((size_t)nb, sizeof(PtlTensorImpl *));
    r->factors = calloc((size_t)nb, sizeof(double));
    r->offsets = calloc((size_t)n, sizeof(int64_t));
    r->gen = calloc((size_t)nb, sizeof(int64_t));
    r->slots = r->flags = NULL;
    r->shared = 0;
    r->rank = 0;
    r->world = 1;
    r->stall_s = 0.0;
    r->next_bucket = 0;
    r->armed = 0;
    r->as_view = as_view;
    r->local = 0;
    Py_INCREF(launch);
    r->launch = launch;
    PyObject_GC_Track(r);
    if (r->params == NULL || r->views == NULL || r->bucket_of == NULL || r->hook_ids == NULL ||
        r->ctxs == NULL || r->ready == NULL || r->first == NULL || r->order == NULL ||
        r->pending == NULL || r->scales == NULL || r->factors == NULL || r->offsets == NULL ||
        r->gen == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    for (int i = 0; i < r->nparams; i++) {
        PtlTensorImpl *p = tensor_arg(PyList_GET_ITEM(params, i), "params");
        PtlTensorImpl *v = p != NULL ? tensor_arg(PyList_GET_ITEM(views, i), "views") : NULL;
        if (v == NULL) {
            goto error;
        }
        if (v->numel != p->numel || v->dtype != p->dtype) {
            PyErr_Format(PyExc_ValueError, "_Reducer: view %d does not match its parameter", i);
            goto error;
        }
        ptl_incref(p);
        r->params[i] = p;
        ptl_incref(v);
        r->views[i] = v;
    }
    if (read_buckets(r, buckets) < 0) {
        goto error;
    }
    for (int i = 0; i < r->nparams; i++) {
        r->ctxs[i].r = r;
        r->ctxs[i].index = i;
        r->hook_ids[i] = ptl_post_acc_grad_hook_add(r->params[i], param_ready, &r->ctxs[i],
                                                    NULL);
        if (r->hook_ids[i] < 0) {
            r->hook_ids[i] = 0;
            ptlpy_raise();
            goto error;
        }
    }
    return (PyObject *)r;
error:
    Py_DECREF(r);
    return NULL;
}

/* prepare(): a forward that will be reduced: no parameter is ready, no bucket launched. */
static PyObject *
reducer_prepare(Reducer *self, PyObject *unused)
{
    (void)unused;
    memset(self->ready, 0, (size_t)self->nparams);
    for (int b = 0; b < self->nbuckets; b++) {
        self->pending[b] = self->first[b + 1] - self->first[b];
    }
    self->next_bucket = 0;
    self->armed = 1;
    Py_RETURN_NONE;
}

/* *out = the int o, in [0, n); 0, or -1 with TypeError or IndexError naming `what`. */
static int
index_arg(PyObject *o, long n, const char *what, long *out)
{
    long i = PyLong_AsLong(o);
    if (i == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (i < 0 || i >= n) {
        PyErr_Format(PyExc_IndexError, "_Reducer: %s %ld out of range", what, i);
        return -1;
    }
    *out = i;
    return 0;
}

/* mark_ready(i): parameter i is ready without a gradient from this backward
 * (find_unused_parameters), as its hook would mark it. */
static PyObject *
reducer_mark_ready(Reducer *self, PyObject *index)
{
    long i;
    if (index_arg(index, self->nparams, "parameter index", &i) < 0) {
        return NULL;
    }
    if (self->armed && !self->ready[i] && mark_ready(self, (int)i) < 0) {
        return ptlpy_raise();
    }
    Py_RETURN_NONE;
}

/* unready() -> the indices of the parameters not ready yet, ascending. */
static PyObject *
reducer_unready(Reducer *self, PyObject *unused)
{
    (void)unused;
    PyObject *out = PyList_New(0);
    for (int i = 0; out != NULL && i < self->nparams; i++) {
        PyObject *o = self->ready[i] ? NULL : PyLong_FromLong(i);
        if (!self->ready[i] && (o == NULL || PyList_Append(out, o) < 0)) {
            Py_CLEAR(out);
        }
        Py_XDECREF(o);
    }
    return out;
}

/* set_scale(b, factor): bucket b's gradients are copied in times factor (1: a plain copy). */
static PyObject *
reducer_set_scale(Reducer *self, PyObject *args)
{
    int b;
    double factor;
    if (!PyArg_ParseTuple(args, "id:set_scale", &b, &factor)) {
        return NULL;
    }
    if (b < 0 || b >= self->nbuckets) {
        PyErr_Format(PyExc_IndexError, "_Reducer: bucket %d out of range", b);
        return NULL;
    }
    PtlTensorImpl *scale = NULL;
    if (factor != 1.0 && (scale = ptl_wrapped_double(factor)) == NULL) {
        return ptlpy_raise();
    }
    PTL_CLEAR(self->scales[b]);
    self->scales[b] = scale;
    self->factors[b] = factor;
    Py_RETURN_NONE;
}

/* write_grads(b, results=None, used=None): bucket b's reduced values into .grad: from its own
 * views, or from `results` (a list of tensors, one per parameter of the bucket, e.g. views of
 * a communication hook's result).  A parameter i with used[i] false keeps its .grad.  A
 * missing .grad becomes a copy of the result (the view itself with as_view). */
static PyObject *
reducer_write_grads(Reducer *self, PyObject *args)
{
    int b;
    PyObject *results = Py_None, *used = Py_None;
    if (!PyArg_ParseTuple(args, "i|OO:write_grads", &b, &results, &used)) {
        return NULL;
    }
    if (b < 0 || b >= self->nbuckets) {
        PyErr_Format(PyExc_IndexError, "_Reducer: bucket %d out of range", b);
        return NULL;
    }
    int first = self->first[b], count = self->first[b + 1] - first;
    if (results != Py_None && (!PyList_Check(results) || PyList_GET_SIZE(results) != count)) {
        PyErr_Format(PyExc_ValueError, "_Reducer: bucket %d needs a list of %d results", b,
                     count);
        return NULL;
    }
    if (used != Py_None && (!PyList_Check(used) || PyList_GET_SIZE(used) != self->nparams)) {
        PyErr_SetString(PyExc_ValueError, "_Reducer: used must list every parameter");
        return NULL;
    }
    int grad_mode = ptl_grad_mode_enabled(), rc = 0, shared = results == Py_None &&
                                                             is_shared(self, b);
    ptl_grad_mode_set(0);
    for (int k = 0; k < count && rc == 0; k++) {
        int i = self->order[first + k];
        if (used != Py_None) {
            int on = PyObject_IsTrue(PyList_GET_ITEM(used, i));
            if (on < 0) {
                rc = ptl_error_set(PTL_ERR_PYTHON, "used");
                break;
            }
            if (!on) {
                continue;
            }
        }
        if (shared) {
            rc = write_sum(self, b, i);
            continue;
        }
        PtlTensorImpl *v = self->views[i], *res = v, *g = grad_of(self->params[i]);
        if (results != Py_None && (res = tensor_arg(PyList_GET_ITEM(results, k), "results")) == NULL) {
            rc = ptl_error_set(PTL_ERR_PYTHON, "results");
            break;
        }
        if (self->as_view && res != v) {   /* a hook's result goes into the bucket */
            PtlIValue a[3] = {ptl_iv_tensor(v), ptl_iv_tensor(res), ptl_iv_bool(0)};
            if ((rc = call_inplace(PTL_OP_copy_, a)) < 0) {
                break;
            }
            res = v;
        }
        if (g == NULL && self->as_view) {
            rc = set_grad(self->params[i], v);
        }
        else if (g == NULL) {
            PtlIValue a[2] = {ptl_iv_tensor(res), ptl_iv_none()};
            PtlTensorImpl *c = ptl_call_tensor(PTL_OP_clone, a);
            rc = c != NULL ? set_grad(self->params[i], c) : -1;
            ptl_xdecref(c);
        }
        else if (!is_view_itself(g, res) && !direct_copy(g, res, NULL)) {
            PtlIValue a[3] = {ptl_iv_tensor(g), ptl_iv_tensor(res), ptl_iv_bool(0)};
            rc = call_inplace(PTL_OP_copy_, a);
        }
    }
    ptl_grad_mode_set(grad_mode);
    if (rc < 0) {
        return ptlpy_raise();
    }
    if (shared) {   /* this rank is done with every slot of the reduction */
        __atomic_store_n(flag_word(self, b, self->rank, FLAG_CONSUMED), self->gen[b],
                         __ATOMIC_RELEASE);
    }
    Py_RETURN_NONE;
}

/* arrived(b) -> whether every rank's slot of shared bucket b holds the gradients of this
 * rank's latest reduction of it (then write_grads(b) sums them). */
static PyObject *
reducer_arrived(Reducer *self, PyObject *index)
{
    long b;
    if (index_arg(index, self->nbuckets, "bucket", &b) < 0) {
        return NULL;
    }
    if (!is_shared(self, (int)b)) {
        PyErr_Format(PyExc_IndexError, "_Reducer: bucket %ld is not a shared bucket", b);
        return NULL;
    }
    return PyBool_FromLong(all_reached(self, (int)b, FLAG_ARRIVED, self->gen[b]));
}

/* share(b, rank, slots, flags, stall_s): bucket b is summed through shared memory (Note [DDP
 * shared-memory buckets]): slots[s] is rank s's copy of its flat tensor (this rank's is the
 * one its views are of), flags[s] rank s's FLAG_WORDS int64 flag words of it, zero before
 * the first reduction; a fill waits at most stall_s for the other ranks' reads.  Every
 * shared bucket has the same ranks. */
static PyObject *
reducer_share(Reducer *self, PyObject *args)
{
    int b, rank;
    PyObject *slots, *flags;
    double stall_s;
    if (!PyArg_ParseTuple(args, "iiO!O!d:share", &b, &rank, &PyList_Type, &slots,
                          &PyList_Type, &flags, &stall_s)) {
        return NULL;
    }
    Py_ssize_t world = PyList_GET_SIZE(slots);
    if (b < 0 || b >= self->nbuckets || world < 2 || world > INT32_MAX ||
        PyList_GET_SIZE(flags) != world || rank < 0 || rank >= world ||
        (self->slots != NULL && world != self->world)) {
        PyErr_Format(PyExc_ValueError, "_Reducer: share(%d, %d): expected a bucket index, "
                     "this rank's index and as many slots as flags, for every bucket the "
                     "same ranks", b, rank);
        return NULL;
    }
    int64_t numel = self->offsets[self->order[self->first[b + 1] - 1]] +
                    self->params[self->order[self->first[b + 1] - 1]]->numel;
    for (Py_ssize_t s = 0; s < world; s++) {
        PtlTensorImpl *t = tensor_arg(PyList_GET_ITEM(slots, s), "slots");
        PtlTensorImpl *f = t != NULL ? tensor_arg(PyList_GET_ITEM(flags, s), "flags") : NULL;
        if (f == NULL) {
            return NULL;
        }
        if (t->numel != numel || t->dtype != self->params[self->order[self->first[b]]]->dtype ||
            !ptl_tensor_is_contiguous(t) || t->device.type != PTL_DEVICE_CPU ||
            f->numel != FLAG_WORDS || f->dtype != PTL_DTYPE_INT64 ||
            !ptl_tensor_is_contiguous(f) || f->device.type != PTL_DEVICE_CPU) {
            PyErr_Format(PyExc_ValueError, "_Reducer: share(%d): slot %zd must be a contiguous "
                         "CPU tensor of the bucket's %lld elements and dtype, its flags %d "
                         "contiguous int64", b, s, (long long)numel, FLAG_WORDS);
            return NULL;
        }
    }
    if (self->slots == NULL) {
        size_t k = (size_t)self->nbuckets * (size_t)world;
        self->slots = calloc(k, sizeof(PtlTensorImpl *));
        self->flags = calloc(k, sizeof(PtlTensorImpl *));
        if (self->slots == NULL || self->flags == NULL) {
            free(self->slots);
            free(self->flags);
            self->slots = self->flags = NULL;
            return PyErr_NoMemory();
        }
        self->world = (int)world;
    }
    for (int s = 0; s < self->world; s++) {
        size_t k = (size_t)b * self->world + s;
        ptl_incref(PTLPY_IMPL(PyList_GET_ITEM(slots, s)));
        PTL_CLEAR(self->slots[k]);
        self->slots[k] = PTLPY_IMPL(PyList_GET_ITEM(slots, s));
        ptl_incref(PTLPY_IMPL(PyList_GET_ITEM(flags, s)));
        PTL_CLEAR(self->flags[k]);
        self->flags[k] = PTLPY_IMPL(PyList_GET_ITEM(flags, s));
    }
    self->rank = rank;
    self->stall_s = stall_s;
    self->gen[b] = 0;
    self->shared = 1;
    Py_RETURN_NONE;
}

/* The int flags `armed`, `local` and `shared`: the closure is the flag's offset in Reducer. */
static PyObject *
reducer_get_flag(Reducer *self, void *offset)
{
    return PyBool_FromLong(*(int *)((char *)self + (size_t)offset));
}

static int
reducer_set_flag(Reducer *self, PyObject *value, void *offset)
{
    int on = value != NULL ? PyObject_IsTrue(value) : -1;
    if (on < 0) {
        if (value == NULL) {
            PyErr_Format(PyExc_AttributeError, "can't delete %s",
                         (size_t)offset == offsetof(Reducer, armed)   ? "armed"
                         : (size_t)offset == offsetof(Reducer, local) ? "local"
                                                                      : "shared");
        }
        return -1;
    }
    *(int *)((char *)self + (size_t)offset) = on;
    return 0;
}

static PyMethodDef reducer_methods[] = {
    {"prepare", (PyCFunction)reducer_prepare, METH_NOARGS, NULL},
    {"mark_ready", (PyCFunction)reducer_mark_ready, METH_O, NULL},
    {"unready", (PyCFunction)reducer_unready, METH_NOARGS, NULL},
    {"set_scale", (PyCFunction)reducer_set_scale, METH_VARARGS, NULL},
    {"write_grads", (PyCFunction)reducer_write_grads, METH_VARARGS, NULL},
    {"arrived", (PyCFunction)reducer_arrived, METH_O, NULL},
    {"share", (PyCFunction)reducer_share, METH_VARARGS, NULL},
    {NULL},
};

static PyGetSetDef reducer_getset[] = {
    {"armed", (getter)reducer_get_flag, (setter)reducer_set_flag,
     "a forward prepared a reduction that has not finished",
     (void *)offsetof(Reducer, armed)},
    {"local", (getter)reducer_get_flag, (setter)reducer_set_flag,
     "nothing to reduce (a world of one): the reduction ends when every bucket is complete",
     (void *)offsetof(Reducer, local)},
    {"shared", (getter)reducer_get_flag, (setter)reducer_set_flag,
     "the shared buckets are summed through their slots (off while a communication hook "
     "reduces them)", (void *)offsetof(Reducer, shared)},
    {NULL},
};

static PyType_Slot reducer_slots[] = {
    {Py_tp_new, reducer_new},
    {Py_tp_dealloc, reducer_dealloc},
    {Py_tp_traverse, reducer_traverse},
    {Py_tp_clear, reducer_clear},
    {Py_tp_methods, reducer_methods},
    {Py_tp_getset, reducer_getset},
    {0, NULL},
};

static PyType_Spec reducer_spec = {
    "pytorchlite._C._Reducer", sizeof(Reducer), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, reducer_slots,
};

int
ptlpy_reducer_init(PyObject *module)
{
    reducer_type = (PyTypeObject *)PyType_FromSpec(&reducer_spec);
    if (reducer_type == NULL) {
        return -1;
    }
    Py_INCREF(reducer_type);
    if (PyModule_AddObject(module, "_Reducer", (PyObject *)reducer_type) < 0) {
        Py_DECREF(reducer_type);
        return -1;
    }
    return 0;
}
