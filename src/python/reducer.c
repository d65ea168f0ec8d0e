/* reducer.c -- _C._Reducer, the C half of DDP's reducer: which parameters' gradients are
 * ready, counted per bucket from C post-accumulate-grad hooks, the copy of each bucket's
 * gradients into its flat tensor and the launch of its reduction (a Python callable) once
 * per bucket, in bucket order; at the end, the averages back into .grad.  Mirrors the
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
 * while it calls `launch`, which may drop the last other reference. */
#include "ptlpy.h"

#include <stddef.h>
#include <stdlib.h>

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
};

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
        float *d = (float *)ptl_tensor_data(dst), f = (float)*factor;
        const float *x = (const float *)ptl_tensor_data(src);
        for (int64_t k = 0; k < n; k++) {
            d[k] = x[k] * f;
        }
    }
    else {
        double *d = (double *)ptl_tensor_data(dst), f = *factor;
        const double *x = (const double *)ptl_tensor_data(src);
        for (int64_t k = 0; k < n; k++) {
            d[k] = x[k] * f;
        }
    }
    ptl_tensor_bump_version(dst);
    return 1;
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
        ptl_grad_mode_set(0);   /* create_graph: the bucket holds values, not history */
        rc = fill_bucket(r, b);
        ptl_grad_mode_set(grad_mode);
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
    r->next_bucket = 0;
    r->armed = 0;
    r->as_view = as_view;
    r->local = 0;
    Py_INCREF(launch);
    r->launch = launch;
    PyObject_GC_Track(r);
    if (r->params == NULL || r->views == NULL || r->bucket_of == NULL || r->hook_ids == NULL ||
        r->ctxs == NULL || r->ready == NULL || r->first == NULL || r->order == NULL ||
        r->pending == NULL || r->scales == NULL || r->factors == NULL) {
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

/* mark_ready(i): parameter i is ready without a gradient from this backward
 * (find_unused_parameters), as its hook would mark it. */
static PyObject *
reducer_mark_ready(Reducer *self, PyObject *index)
{
    long i = PyLong_AsLong(index);
    if (i == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (i < 0 || i >= self->nparams) {
        PyErr_Format(PyExc_IndexError, "_Reducer: parameter index %ld out of range", i);
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
    int grad_mode = ptl_grad_mode_enabled(), rc = 0;
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
    Py_RETURN_NONE;
}

/* The int flags `armed` and `local`: the closure is the flag's offset in Reducer. */
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
                         (size_t)offset == offsetof(Reducer, armed) ? "armed" : "local");
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
    {NULL},
};

static PyGetSetDef reducer_getset[] = {
    {"armed", (getter)reducer_get_flag, (setter)reducer_set_flag,
     "a forward prepared a reduction that has not finished",
     (void *)offsetof(Reducer, armed)},
    {"local", (getter)reducer_get_flag, (setter)reducer_set_flag,
     "nothing to reduce (a world of one): the reduction ends when every bucket is complete",
     (void *)offsetof(Reducer, local)},
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
