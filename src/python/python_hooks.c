/* python_hooks.c -- node state objects and the engine callbacks that run Python hooks.
 * Mirrors torch/csrc/autograd/python_hook.cpp.  See Note [Node state]; the hook logic
 * itself (order, replacement, retain_grad) is Python: pytorchlite/autograd/_hooks.py. */
#include "autograd_python.h"

#include <stdlib.h>
#include <string.h>

#include <structmember.h>

static PyObject *run_pre = NULL;    /* _hooks._run_pre(state, leaf_hooks, grads) */
static PyObject *run_post = NULL;   /* _hooks._run_post(state, leaf_hooks, leaf, ins, outs) */

/* ---- the state type ---- */

static int
state_traverse(PtlPyNodeState *self, visitproc visit, void *arg)
{
    Py_VISIT(self->dict);
    Py_VISIT(Py_TYPE(self));
    return 0;
}

static int
state_clear(PtlPyNodeState *self)
{
    Py_CLEAR(self->dict);
    return 0;
}

static void
state_dealloc(PtlPyNodeState *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->dict);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static PyObject *
state_get_alive(PtlPyNodeState *self, void *c)
{
    (void)c;
    return PyBool_FromLong(self->node != NULL);
}

static PyGetSetDef state_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {"alive", (getter)state_get_alive, NULL, NULL, NULL},
    {NULL},
};

static PyMemberDef state_members[] = {
    {"__dictoffset__", T_PYSSIZET, offsetof(PtlPyNodeState, dict), READONLY, NULL},
    {NULL},
};

static PyType_Slot state_slots[] = {
    {Py_tp_dealloc, state_dealloc},
    {Py_tp_traverse, state_traverse},
    {Py_tp_clear, state_clear},
    {Py_tp_getset, state_getset},
    {Py_tp_members, state_members},
    {0, NULL},
};

static PyType_Spec state_spec = {
    "pytorchlite._C._NodeState", sizeof(PtlPyNodeState), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, state_slots,
};

static PyTypeObject *state_type = NULL;

static PyObject *
state_new(PtlNode *n)
{
    PtlPyNodeState *s = PyObject_GC_New(PtlPyNodeState, state_type);
    if (s == NULL) {
        return NULL;
    }
    s->node = n;
    s->dict = NULL;
    PyObject_GC_Track(s);
    return (PyObject *)s;
}

PyObject *
ptlpy_node_state(PtlNode *n, int create)
{
    if (n->py_state == NULL && create) {
        n->py_state = state_new(n);
    }
    return n->py_state;
}

static void
free_node_state(void *state)
{
    PyGILState_STATE st = PyGILState_Ensure();
    ((PtlPyNodeState *)state)->node = NULL;
    Py_DECREF((PyObject *)state);
    PyGILState_Release(st);
}

static void
free_tensor_hooks(void *hooks)
{
    PyGILState_STATE st = PyGILState_Ensure();
    Py_DECREF((PyObject *)hooks);
    PyGILState_Release(st);
}

/* ---- engine callbacks ---- */

/* Gradient i of grads (borrowed impls) as a new object; None for an undefined one. */
static PyObject *
grad_item(const void *grads, int i)
{
    return ptlpy_wrap_borrowed(((PtlTensorImpl *const *)grads)[i]);
}

PyObject *
ptlpy_grads_tuple(PtlTensorImpl *const *grads, int n)
{
    return ptlpy_tuple_from(n, grad_item, grads);
}

/* Replaces grads[0..n) with the items of `seq` (tensors or None).  0 or -1 (error set). */
static int
replace_grads(PyObject *seq, PtlTensorImpl **grads, int n)
{
    PyObject *fast = PySequence_Fast(seq, "hooks must return a sequence of gradients");
    if (fast == NULL) {
        return -1;
    }
    if (PySequence_Fast_GET_SIZE(fast) != n) {
        PyErr_Format(PyExc_RuntimeError, "hook returned %zd gradients but %d were expected",
                     PySequence_Fast_GET_SIZE(fast), n);
        Py_DECREF(fast);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(fast, i);
        if (o != Py_None && !PtlPyTensor_Check(o)) {
            PyErr_Format(PyExc_TypeError, "expected a Tensor or None as a gradient, got %s",
                         Py_TYPE(o)->tp_name);
            Py_DECREF(fast);
            return -1;
        }
    }
    for (int i = 0; i < n; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(fast, i);
        PtlTensorImpl *g = o == Py_None ? NULL : PTLPY_IMPL(o);
        if (g != NULL) {
            ptl_incref(g);
        }
        ptl_xdecref(grads[i]);
        grads[i] = g;
    }
    Py_DECREF(fast);
    return 0;
}

static PyObject *
leaf_hooks(PtlNode *n)
{
    PtlAutogradMeta *m = n->variable ? n->variable->autograd_meta : NULL;
    return m != NULL && m->py_hooks != NULL ? m->py_hooks : Py_None;
}

static int
hooks_pre(PtlNode *n, PtlTensorImpl **grads, int ngrads)
{
    PyObject *state = n->py_state ? n->py_state : Py_None;
    PyObject *tup = ptlpy_grads_tuple(grads, ngrads), *res = NULL;
    if (tup != NULL) {
        res = PyObject_CallFunctionObjArgs(run_pre, state, leaf_hooks(n), tup, NULL);
        Py_DECREF(tup);
    }
    if (res == NULL || (res != Py_None && replace_grads(res, grads, ngrads) < 0)) {
        Py_XDECREF(res);
        return ptl_error_set(PTL_ERR_PYTHON, "a Python hook failed");
    }
    Py_DECREF(res);
    return 0;
}

static int
hooks_post(PtlNode *n, PtlTensorImpl **grads_out, int nout, PtlTensorImpl **grads_in, int nin)
{
    PyObject *state = n->py_state ? n->py_state : Py_None, *leaf = Py_None, *res = NULL;
    PyObject *ins = ptlpy_grads_tuple(grads_out, nout), *outs = ptlpy_grads_tuple(grads_in, nin);
    if (n->variable != NULL) {
        ptl_incref(n->variable);
        leaf = ptlpy_wrap(n->variable);
    }
    else {
        Py_INCREF(leaf);
    }
    if (ins != NULL && outs != NULL && leaf != NULL) {
        res = PyObject_CallFunctionObjArgs(run_post, state, leaf_hooks(n), leaf, ins, outs, NULL);
    }
    Py_XDECREF(ins);
    Py_XDECREF(outs);
    Py_XDECREF(leaf);
    if (res == NULL || (res != Py_None && replace_grads(res, grads_out, nout) < 0)) {
        Py_XDECREF(res);
        return ptl_error_set(PTL_ERR_PYTHON, "a Python hook failed");
    }
    Py_DECREF(res);
    return 0;
}

/* ---- module functions ---- */

/* _node_state(grad_fn) -> its _NodeState (created on first use) */
static PyObject *
py_node_state(PyObject *m, PyObject *fn)
{
    (void)m;
    PtlNode *n = ptlpy_node_from(fn);
    PyObject *st = n ? ptlpy_node_state(n, 1) : NULL;
    Py_XINCREF(st);
    return st;
}

/* _tensor_hooks(tensor) -> the leaf's hook state (created on first use) */
static PyObject *
py_tensor_hooks(PyObject *m, PyObject *t)
{
    (void)m;
    if (!PtlPyTensor_Check(t)) {
        PyErr_SetString(PyExc_TypeError, "expected a Tensor");
        return NULL;
    }
    PtlAutogradMeta *meta = ptl_autograd_meta(PTLPY_IMPL(t), 1);
    if (meta == NULL) {
        return ptlpy_raise();
    }
    if (meta->py_hooks == NULL && (meta->py_hooks = state_new(NULL)) == NULL) {
        return NULL;
    }
    Py_INCREF((PyObject *)meta->py_hooks);
    return meta->py_hooks;
}

/* _track_tensor(tensor): lets the cyclic GC see the tensor, which is about to hold Python
 * state that may refer back to it (Note [Tensor GC]) */
static PyObject *
py_track_tensor(PyObject *m, PyObject *t)
{
    (void)m;
    if (!PtlPyTensor_Check(t)) {
        PyErr_SetString(PyExc_TypeError, "expected a Tensor");
        return NULL;
    }
    if (PyObject_IS_GC(t) && !PyObject_GC_IsTracked(t)) {
        PyObject_GC_Track(t);
    }
    Py_RETURN_NONE;
}

/* _retains_grad(tensor[, on]) -> the flag, after setting it when `on` is given */
static PyObject *
py_retains_grad(PyObject *m, PyObject *args)
{
    PyObject *t, *on = NULL;
    (void)m;
    if (!PyArg_ParseTuple(args, "O!|O:_retains_grad", &PtlPyTensorBase_Type, &t, &on)) {
        return NULL;
    }
    PtlAutogradMeta *meta = ptl_autograd_meta(PTLPY_IMPL(t), on != NULL);
    if (on != NULL) {
        if (meta == NULL) {
            return ptlpy_raise();
        }
        meta->retains_grad = PyObject_IsTrue(on);
    }
    return PyBool_FromLong(meta != NULL && meta->retains_grad);
}

/* _set_grad_raw(tensor, grad): sets .grad without checks (retain_grad's hook) */
static PyObject *
py_set_grad_raw(PyObject *m, PyObject *args)
{
    PyObject *t, *g;
    (void)m;
    if (!PyArg_ParseTuple(args, "O!O!:_set_grad_raw", &PtlPyTensorBase_Type, &t,
                          &PtlPyTensorBase_Type, &g)) {
        return NULL;
    }
    PtlAutogradMeta *meta = ptl_autograd_meta(PTLPY_IMPL(t), 1);
    if (meta == NULL) {
        return ptlpy_raise();
    }
    ptl_incref(PTLPY_IMPL(g));
    PTL_CLEAR(meta->grad);
    meta->grad = PTLPY_IMPL(g);
    Py_RETURN_NONE;
}

static PyObject *
py_set_hook_runners(PyObject *m, PyObject *args)
{
    PyObject *pre, *post;
    (void)m;
    if (!PyArg_ParseTuple(args, "OO:_set_hook_runners", &pre, &post)) {
        return NULL;
    }
    Py_INCREF(pre);
    Py_INCREF(post);
    Py_XSETREF(run_pre, pre);
    Py_XSETREF(run_post, post);
    ptl_autograd_hooks.pre = hooks_pre;
    ptl_autograd_hooks.post = hooks_post;
    Py_RETURN_NONE;
}

/* ---- call sites (Note [In-place provenance]) ---- */

#define MAX_SITES 65536

/* One interned site: a code object (kept alive, so its address is never reused) and an
 * instruction offset, with its "file:line" text (never freed: callers keep the pointer). */
typedef struct Site {
    PyCodeObject *code;
    int lasti;
    char *text;
} Site;

static PyObject *site_prefix = NULL;   /* frames of files under it (the package) are skipped */
static Site *sites = NULL;             /* open addressing, a power of two long */
static size_t sites_cap = 0, sites_used = 0;

static size_t
site_hash(const PyCodeObject *code, int lasti, size_t cap)
{
    uint64_t h = (uint64_t)(uintptr_t)code * 0x9E3779B97F4A7C15u ^ (uint64_t)lasti * 0xC2B2AE3Du;
    return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static int
sites_grow(void)
{
    size_t cap = sites_cap ? sites_cap * 2 : 1024;
    Site *bigger = calloc(cap, sizeof(Site));
    if (bigger == NULL) {
        return -1;
    }
    for (size_t i = 0; i < sites_cap; i++) {
        if (sites[i].code != NULL) {
            size_t j = site_hash(sites[i].code, sites[i].lasti, cap);
            while (bigger[j].code != NULL) {
                j = (j + 1) & (cap - 1);
            }
            bigger[j] = sites[i];
        }
    }
    free(sites);
    sites = bigger;
    sites_cap = cap;
    return 0;
}

/* The interned text of frame f's position; NULL when the table is full or out of memory. */
static const char *
site_of(PyFrameObject *f, PyCodeObject *code)
{
    int lasti = PyFrame_GetLasti(f);
    size_t j = sites_cap ? site_hash(code, lasti, sites_cap) : 0;
    while (sites_cap && sites[j].code != NULL) {
        if (sites[j].code == code && sites[j].lasti == lasti) {
            return sites[j].text;
        }
        j = (j + 1) & (sites_cap - 1);
    }
    if (sites_used >= MAX_SITES || (2 * (sites_used + 1) > sites_cap && sites_grow() < 0)) {
        return NULL;
    }
    PyObject *u = PyUnicode_FromFormat("%U:%d", code->co_filename, PyFrame_GetLineNumber(f));
    const char *utf8 = u ? PyUnicode_AsUTF8(u) : NULL;
    char *text = utf8 ? strdup(utf8) : NULL;
    Py_XDECREF(u);
    if (text == NULL) {
        return NULL;
    }
    j = site_hash(code, lasti, sites_cap);
    while (sites[j].code != NULL) {
        j = (j + 1) & (sites_cap - 1);
    }
    Py_INCREF(code);
    sites[j].code = code;
    sites[j].lasti = lasti;
    sites[j].text = text;
    sites_used++;
    return text;
}

/* The innermost frame outside the package (a new reference), and in *above how many of the
 * package's frames run above it; NULL when there is none, the package is not known yet, or a
 * frame's file name cannot be compared (a Python error may then be set).  Holds the GIL. */
static PyFrameObject *
frame_outside_package(int *above)
{
    PyFrameObject *f = PyEval_GetFrame();
    *above = 0;
    Py_XINCREF(f);
    while (f != NULL && site_prefix != NULL) {
        PyCodeObject *code = PyFrame_GetCode(f);
        int inside = PyUnicode_Tailmatch(code->co_filename, site_prefix, 0, PY_SSIZE_T_MAX, -1);
        Py_DECREF(code);
        if (inside == 0) {
            return f;
        }
        PyFrameObject *back = inside == 1 ? PyFrame_GetBack(f) : NULL;
        Py_DECREF(f);
        f = back;
        (*above)++;
    }
    Py_XDECREF(f);
    return NULL;
}

/* The innermost frame outside the package as "file:line"; NULL when unknown (no frame, no
 * GIL).  Only ever called between Python calls, so no Python error is pending or left. */
static const char *
current_site(void)
{
    const char *site = NULL;
    int above;
    if (!PyGILState_Check() || PyErr_Occurred()) {
        return NULL;
    }
    PyFrameObject *f = frame_outside_package(&above);
    if (f != NULL) {
        PyCodeObject *code = PyFrame_GetCode(f);
        site = site_of(f, code);
        Py_DECREF(code);
        Py_DECREF(f);
    }
    PyErr_Clear();
    return site;
}

int
ptlpy_user_stacklevel(void)
{
    int above;
    PyFrameObject *f = frame_outside_package(&above);
    if (f == NULL) {
        PyErr_Clear();
        return 1;
    }
    Py_DECREF(f);
    return above + 1;
}

/* _set_site_prefix(package_dir): installs the call-site hook */
static PyObject *
py_set_site_prefix(PyObject *m, PyObject *prefix)
{
    (void)m;
    if (!PyUnicode_Check(prefix)) {
        PyErr_SetString(PyExc_TypeError, "expected a str");
        return NULL;
    }
    Py_INCREF(prefix);
    Py_XSETREF(site_prefix, prefix);
    ptl_autograd_hooks.site = current_site;
    Py_RETURN_NONE;
}

/* ---- anomaly mode ---- */

static PyObject *format_stack = NULL;   /* traceback.format_stack */

static void
anomaly_record(PtlNode *n)
{
    PyObject *type, *value, *tb;
    PyGILState_STATE st = PyGILState_Ensure();
    PyErr_Fetch(&type, &value, &tb);
    if (format_stack == NULL) {
        PyObject *mod = PyImport_ImportModule("traceback");
        format_stack = mod ? PyObject_GetAttrString(mod, "format_stack") : NULL;
        Py_XDECREF(mod);
    }
    PyObject *lines = format_stack ? PyObject_CallNoArgs(format_stack) : NULL;
    PyObject *empty = PyUnicode_FromString("");
    if (lines != NULL && empty != NULL) {
        n->py_trace = PyUnicode_Join(empty, lines);
    }
    Py_XDECREF(lines);
    Py_XDECREF(empty);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
    PyGILState_Release(st);
}

static void
anomaly_report(PtlNode *n)
{
    PyObject *type, *value, *tb;
    PyGILState_STATE st = PyGILState_Ensure();
    PyErr_Fetch(&type, &value, &tb);
    PyObject *msg = PyUnicode_FromFormat("Error detected in %s. Traceback of forward call that "
                                         "caused the error:\n%U", n->kind->name,
                                         (PyObject *)n->py_trace);
    const char *text = msg ? PyUnicode_AsUTF8(msg) : NULL;
    if (text == NULL || PyErr_WarnEx(PyExc_UserWarning, text, 1) < 0) {
        PyErr_Clear();
    }
    Py_XDECREF(msg);
    PyErr_Restore(type, value, tb);
    PyGILState_Release(st);
}

/* _set_anomaly_enabled(on, check_nan=True) */
static PyObject *
py_set_anomaly_enabled(PyObject *m, PyObject *args)
{
    int on, check_nan = 1;
    (void)m;
    if (!PyArg_ParseTuple(args, "p|p:_set_anomaly_enabled", &on, &check_nan)) {
        return NULL;
    }
    ptl_anomaly_set(on, check_nan);
    Py_RETURN_NONE;
}

static PyObject *
py_is_anomaly_check_nan_enabled(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyBool_FromLong(ptl_anomaly_check_nan());
}

static PyObject *
py_is_anomaly_enabled(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyBool_FromLong(ptl_anomaly_enabled());
}

/* ---- saved tensor hooks (Note [Saved tensor hooks]) ---- */

static PyObject *saved_hooks = NULL;       /* list of (pack, unpack), innermost last */
static PyObject *saved_hooks_off = NULL;   /* the message while disabled, else NULL */

/* *packed = (unpack, pack(t)) for hooks = (pack, unpack) (borrowed); 0 or -1
 * (PTL_ERR_PYTHON).  Tensors saved by ops inside the pack hook itself are kept as they are. */
static int
pack_with(PtlTensorImpl *t, void **packed, void *hooks)
{
    ptl_incref(t);
    PyObject *obj = ptlpy_wrap(t), *res = NULL;
    if (obj != NULL) {
        int (*active)(PtlTensorImpl *, void **) = ptl_autograd_hooks.pack;
        ptl_autograd_hooks.pack = NULL;
        res = PyObject_CallOneArg(PyTuple_GET_ITEM((PyObject *)hooks, 0), obj);
        ptl_autograd_hooks.pack = active;
        Py_DECREF(obj);
    }
    PyObject *pair = res != NULL ? PyTuple_Pack(2, PyTuple_GET_ITEM((PyObject *)hooks, 1), res)
                                 : NULL;
    Py_XDECREF(res);
    if (pair == NULL) {
        return ptl_error_set(PTL_ERR_PYTHON, "a saved tensor pack hook failed");
    }
    *packed = pair;
    return 0;
}

/* The innermost hooks' pack_with.  Hooks are process-wide here (PyTorch keeps them per
 * thread). */
static int
saved_pack(PtlTensorImpl *t, void **packed)
{
    return pack_with(t, packed, PyList_GET_ITEM(saved_hooks, PyList_GET_SIZE(saved_hooks) - 1));
}

static PtlTensorImpl *
saved_unpack(void *packed)
{
    PyObject *pair = packed, *res = NULL;
    /* a formula unpacking several slots goes on after one failed: keep the first error */
    if (!PyErr_Occurred()) {
        res = PyObject_CallOneArg(PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1));
    }
    if (res != NULL && !PtlPyTensor_Check(res)) {
        PyErr_Format(PyExc_TypeError, "Output of saved tensor unpack_hook expected to be a "
                     "Tensor but got result of type %s", Py_TYPE(res)->tp_name);
        Py_CLEAR(res);
    }
    if (res == NULL) {
        ptl_error_set(PTL_ERR_PYTHON, "a saved tensor unpack hook failed");
        return NULL;
    }
    PtlTensorImpl *t = PTLPY_IMPL(res);
    ptl_incref(t);
    Py_DECREF(res);
    return t;
}

static void
saved_free(void *packed)
{
    Py_DECREF((PyObject *)packed);
}

/* ---- SavedTensor: one saved slot of a node (grad_fn._raw_saved_<name>) ---- */

typedef struct SavedTensorObject {
    PyObject_HEAD
    PtlNode *node;   /* owned */
    int slot;
} SavedTensorObject;

static PyTypeObject *saved_tensor_type = NULL;

PyObject *
ptlpy_saved_tensor_new(PtlNode *n, int slot)
{
    SavedTensorObject *self = PyObject_New(SavedTensorObject, saved_tensor_type);
    if (self == NULL) {
        return NULL;
    }
    ptl_node_incref(n);
    self->node = n;
    self->slot = slot;
    return (PyObject *)self;
}

static PyObject *
saved_tensor_forbidden(PyTypeObject *tp, PyObject *args, PyObject *kwargs)
{
    (void)tp;
    (void)args;
    (void)kwargs;
    PyErr_SetString(PyExc_RuntimeError,
                    "Trying to create a SavedTensor object from Python is forbidden.");
    return NULL;
}

static void
saved_tensor_dealloc(SavedTensorObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    ptl_node_decref(self->node);
    PyObject_Free(self);
    Py_DECREF(tp);
}

PyObject *
ptlpy_saved_unpack(PtlNode *n, int slot)
{
    int err;
    PtlTensorImpl *t = ptl_saved_unpack(n, slot, &err);
    if (err) {
        return ptlpy_raise();
    }
    if (t == NULL) {
        Py_RETURN_NONE;
    }
    return ptlpy_wrap(t);
}

static PyObject *
saved_tensor_item(const void *n, int i)
{
    return ptlpy_saved_tensor_new((PtlNode *)n, i);
}

PyObject *
ptlpy_saved_tensors(PtlNode *n, int first)
{
    PyObject *all = ptlpy_tuple_from(n->nsaved, saved_tensor_item, n);
    PyObject *tail = all != NULL ? PyTuple_GetSlice(all, first, n->nsaved) : NULL;
    Py_XDECREF(all);
    return tail;
}

/* unpack(): the saved tensor as backward sees it (through the unpack hook when set) */
static PyObject *
saved_tensor_unpack(SavedTensorObject *self, PyObject *unused)
{
    (void)unused;
    return ptlpy_saved_unpack(self->node, self->slot);
}

/* register_hooks(pack, unpack): packs the tensor now, unpacks it with unpack on use */
static PyObject *
saved_tensor_register_hooks(SavedTensorObject *self, PyObject *args)
{
    PyObject *pack, *unpack;
    PtlSavedVariable *sv = &self->node->saved[self->slot];
    if (!PyArg_ParseTuple(args, "OO", &pack, &unpack) || !PyCallable_Check(pack) ||
        !PyCallable_Check(unpack)) {
        PyErr_SetString(PyExc_TypeError,
                        "register_hooks(): incompatible function arguments. The following "
                        "argument types are supported:\n    1. (self: SavedTensor, arg0: "
                        "collections.abc.Callable, arg1: collections.abc.Callable) -> None");
        return NULL;
    }
    if (self->node->released) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Calling register_hooks on a saved tensor after it has been freed. "
                        "Saved intermediate values of the graph are freed when you call "
                        ".backward() or autograd.grad(). Specify retain_graph=True if you need "
                        "to backward through the graph a second time or if you need to access "
                        "saved variables after calling backward.");
        return NULL;
    }
    if (sv->packed != NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Calling register_hooks on a saved tensor whose hooks have already "
                        "been set. Hint: only one pair of hooks is allowed at a time.");
        return NULL;
    }
    if (sv->data == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Calling register_hooks on a saved tensor with value None is forbidden");
        return NULL;
    }
    PyObject *hooks = PyTuple_Pack(2, pack, unpack);
    if (hooks == NULL) {
        return NULL;
    }
    ptl_autograd_hooks.unpack = saved_unpack;
    ptl_autograd_hooks.free_packed = saved_free;
    int rc = ptl_saved_pack(self->node, self->slot, pack_with, hooks);
    Py_DECREF(hooks);
    if (rc < 0) {
        return ptlpy_raise();
    }
    Py_RETURN_NONE;
}

/* data: what the pack hook returned, or the saved tensor itself without hooks */
static PyObject *
saved_tensor_data(SavedTensorObject *self, void *c)
{
    (void)c;
    void *packed = self->node->saved[self->slot].packed;
    if (packed != NULL) {
        return Py_NewRef(PyTuple_GET_ITEM((PyObject *)packed, 1));
    }
    return saved_tensor_unpack(self, NULL);
}

/* unpack_hook: the registered (or saved_tensors_hooks') unpack hook, else None */
static PyObject *
saved_tensor_unpack_hook(SavedTensorObject *self, void *c)
{
    (void)c;
    void *packed = self->node->saved[self->slot].packed;
    return Py_NewRef(packed != NULL ? PyTuple_GET_ITEM((PyObject *)packed, 0) : Py_None);
}

static PyMethodDef saved_tensor_methods[] = {
    {"register_hooks", (PyCFunction)saved_tensor_register_hooks, METH_VARARGS, NULL},
    {"unpack", (PyCFunction)saved_tensor_unpack, METH_NOARGS, NULL},
    {NULL},
};

static PyGetSetDef saved_tensor_getset[] = {
    {"data", (getter)saved_tensor_data, NULL, NULL, NULL},
    {"unpack_hook", (getter)saved_tensor_unpack_hook, NULL, NULL, NULL},
    {NULL},
};

static PyType_Slot saved_tensor_slots[] = {
    {Py_tp_new, saved_tensor_forbidden},
    {Py_tp_dealloc, saved_tensor_dealloc},
    {Py_tp_methods, saved_tensor_methods},
    {Py_tp_getset, saved_tensor_getset},
    {0, NULL},
};

static PyType_Spec saved_tensor_spec = {
    "pytorchlite._C.SavedTensor", sizeof(SavedTensorObject), 0, Py_TPFLAGS_DEFAULT,
    saved_tensor_slots,
};

/* _saved_tensors_hooks_push(pack, unpack): hooks for the tensors nodes save from now on */
static PyObject *
py_saved_hooks_push(PyObject *m, PyObject *args)
{
    PyObject *pack, *unpack;
    (void)m;
    if (!PyArg_ParseTuple(args, "OO:_saved_tensors_hooks_push", &pack, &unpack)) {
        return NULL;
    }
    if (saved_hooks_off != NULL) {
        PyErr_SetObject(PyExc_RuntimeError, saved_hooks_off);
        return NULL;
    }
    if (saved_hooks == NULL && (saved_hooks = PyList_New(0)) == NULL) {
        return NULL;
    }
    PyObject *pair = PyTuple_Pack(2, pack, unpack);
    if (pair == NULL || PyList_Append(saved_hooks, pair) < 0) {
        Py_XDECREF(pair);
        return NULL;
    }
    Py_DECREF(pair);
    ptl_autograd_hooks.unpack = saved_unpack;
    ptl_autograd_hooks.free_packed = saved_free;
    ptl_autograd_hooks.pack = saved_pack;
    Py_RETURN_NONE;
}

static PyObject *
py_saved_hooks_pop(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    Py_ssize_t n = saved_hooks != NULL ? PyList_GET_SIZE(saved_hooks) : 0;
    if (n == 0) {
        PyErr_SetString(PyExc_RuntimeError, "_saved_tensors_hooks_pop: no hooks are active");
        return NULL;
    }
    if (PyList_SetSlice(saved_hooks, n - 1, n, NULL) < 0) {
        return NULL;
    }
    if (n == 1) {
        ptl_autograd_hooks.pack = NULL;
    }
    Py_RETURN_NONE;
}

/* _saved_tensors_hooks_set_disabled(message or None) -> the previous message or None */
static PyObject *
py_saved_hooks_set_disabled(PyObject *m, PyObject *msg)
{
    (void)m;
    if (msg != Py_None && !PyUnicode_Check(msg)) {
        PyErr_SetString(PyExc_TypeError, "the message must be a str or None");
        return NULL;
    }
    PyObject *old = saved_hooks_off != NULL ? saved_hooks_off : Py_None;
    Py_INCREF(old);
    Py_XSETREF(saved_hooks_off, msg == Py_None ? NULL : Py_NewRef(msg));
    return old;
}

static PyMethodDef hooks_methods[] = {
    {"_set_anomaly_enabled", py_set_anomaly_enabled, METH_VARARGS, NULL},
    {"is_anomaly_enabled", py_is_anomaly_enabled, METH_NOARGS, NULL},
    {"is_anomaly_check_nan_enabled", py_is_anomaly_check_nan_enabled, METH_NOARGS, NULL},
    {"_set_site_prefix", py_set_site_prefix, METH_O, NULL},
    {"_node_state", py_node_state, METH_O, NULL},
    {"_tensor_hooks", py_tensor_hooks, METH_O, NULL},
    {"_track_tensor", py_track_tensor, METH_O, NULL},
    {"_retains_grad", py_retains_grad, METH_VARARGS, NULL},
    {"_set_grad_raw", py_set_grad_raw, METH_VARARGS, NULL},
    {"_set_hook_runners", py_set_hook_runners, METH_VARARGS, NULL},
    {"_saved_tensors_hooks_push", py_saved_hooks_push, METH_VARARGS, NULL},
    {"_saved_tensors_hooks_pop", py_saved_hooks_pop, METH_NOARGS, NULL},
    {"_saved_tensors_hooks_set_disabled", py_saved_hooks_set_disabled, METH_O, NULL},
    {NULL},
};

int
ptlpy_hooks_init(PyObject *module)
{
    state_type = (PyTypeObject *)PyType_FromSpec(&state_spec);
    saved_tensor_type = (PyTypeObject *)PyType_FromSpec(&saved_tensor_spec);
    if (state_type == NULL || saved_tensor_type == NULL) {
        return -1;
    }
    Py_INCREF(saved_tensor_type);
    if (PyModule_AddObject(module, "SavedTensor", (PyObject *)saved_tensor_type) < 0) {
        Py_DECREF(saved_tensor_type);
        return -1;
    }
    ptl_autograd_hooks.free_state = free_node_state;
    ptl_autograd_hooks.free_tensor_hooks = free_tensor_hooks;
    ptl_autograd_hooks.anomaly_record = anomaly_record;
    ptl_autograd_hooks.anomaly_report = anomaly_report;
    ptl_autograd_hooks.free_trace = free_tensor_hooks;
    Py_INCREF(state_type);
    if (PyModule_AddObject(module, "_NodeState", (PyObject *)state_type) < 0) {
        Py_DECREF(state_type);
        return -1;
    }
    return PyModule_AddFunctions(module, hooks_methods);
}
