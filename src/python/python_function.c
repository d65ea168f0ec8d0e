/* python_function.c -- the graph node of a custom autograd.Function: a node kind whose
 * apply calls the class's backward in Python.  Mirrors torch/csrc/autograd/python_function.cpp.
 * The Python half (ctx, apply, the checks on backward's results) is
 * pytorchlite/autograd/function.py; the context lives in the node's state (Note [Node state]),
 * its saved tensors in the node's saved slots, so they get the usual version checks. */
#include "autograd_python.h"

#include <stdlib.h>
#include <string.h>

static PyObject *kinds = NULL;        /* "<Name>Backward" -> capsule of a PtlNodeKind */
static PyObject *run_backward = NULL; /* function._run_backward(ctx, grads) -> grads per input */

/* grads_in[k]: gradient of output k; grads_out[i]: gradient of tensor input i. */
static int
function_apply(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out)
{
    PyObject *state = n->py_state, *ctx = NULL, *tup = NULL, *res = NULL, *fast = NULL;
    int rc = -1;
    if (state == NULL || (ctx = PyObject_GetAttrString(state, "ctx")) == NULL ||
        (tup = ptlpy_grads_tuple(grads_in, n->num_outputs)) == NULL) {
        goto done;
    }
    if ((res = PyObject_CallFunctionObjArgs(run_backward, ctx, tup, NULL)) == NULL ||
        (fast = PySequence_Fast(res, "backward results")) == NULL) {
        goto done;
    }
    if (PySequence_Fast_GET_SIZE(fast) != n->num_next) {
        PyErr_SetString(PyExc_RuntimeError, "internal error: wrong number of input gradients");
        goto done;
    }
    for (int i = 0; i < n->num_next; i++) {
        PyObject *g = PySequence_Fast_GET_ITEM(fast, i);
        if (g == Py_None || n->next[i].fn == NULL) {
            continue;
        }
        if (!PtlPyTensor_Check(g)) {
            PyErr_Format(PyExc_TypeError, "function %s returned a %s as gradient %d; expected a "
                         "Tensor or None", n->kind->name, Py_TYPE(g)->tp_name, i);
            goto done;
        }
        /* the engine checks its shape, dtype and device (validate_outputs) */
        PtlTensorImpl *t = PTLPY_IMPL(g);
        ptl_incref(t);
        grads_out[i] = t;
    }
    rc = 0;
done:
    if (rc < 0) {
        for (int i = 0; i < n->num_next; i++) {
            PTL_CLEAR(grads_out[i]);
        }
        ptl_error_set(PTL_ERR_PYTHON, "a custom Function's backward failed");
    }
    Py_XDECREF(ctx);
    Py_XDECREF(tup);
    Py_XDECREF(res);
    Py_XDECREF(fast);
    return rc;
}

static void
kind_free(PyObject *cap)
{
    PtlNodeKind *k = PyCapsule_GetPointer(cap, "PtlNodeKind");
    if (k != NULL) {
        free((char *)k->name);
        free(k);
    }
}

static const char *
forward_name(const PtlNodeKind *k)
{
    return k->name + strlen(k->name) + 1;
}

/* The node kind named `name` (one per Function class name; lives in `kinds`). */
static const PtlNodeKind *
kind_for(PyObject *name)
{
    PyObject *cap = PyDict_GetItemWithError(kinds, name);
    if (cap != NULL) {
        return PyCapsule_GetPointer(cap, "PtlNodeKind");
    }
    /* the name buffer holds "<Class>Backward\0<Class>\0": PyTorch names the class itself in
     * the "modified by an inplace operation" message (see forward_name) */
    Py_ssize_t len;
    const char *s = PyUnicode_AsUTF8AndSize(name, &len);
    PtlNodeKind *k = s ? calloc(1, sizeof(PtlNodeKind)) : NULL;
    char *buf = k ? malloc((size_t)len * 2 + 2) : NULL;
    if (buf == NULL) {
        free(k);
        if (!PyErr_Occurred()) {
            PyErr_NoMemory();
        }
        return NULL;
    }
    memcpy(buf, s, (size_t)len + 1);
    memcpy(buf + len + 1, s, (size_t)len + 1);
    if (len > 8 && strcmp(s + len - 8, "Backward") == 0) {
        buf[len + 1 + len - 8] = '\0';
    }
    k->name = buf;
    k->apply = function_apply;
    k->runs_without_grads = 1;
    cap = PyCapsule_New(k, "PtlNodeKind", kind_free);
    if (cap == NULL) {
        free((char *)k->name);
        free(k);
        return NULL;
    }
    int rc = PyDict_SetItem(kinds, name, cap);
    Py_DECREF(cap);
    return rc < 0 ? NULL : k;
}

static int
index_of(PtlTensorImpl *t, PyObject *seq)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(seq); i++) {
        PyObject *o = PyTuple_GET_ITEM(seq, i);
        if (PtlPyTensor_Check(o) && PTLPY_IMPL(o) == t) {
            return (int)i;
        }
    }
    return -1;
}

/* _function_record(ctx, name, inputs, outputs, differentiable, dirty, to_save) -> outputs
 *
 * inputs: the forward's tensor arguments (tuple); outputs: its tensor results (tuple);
 * differentiable: a bool per output; dirty: the inputs modified in place; to_save: the
 * tensors (or None) of save_for_backward.  Records the node and returns the outputs as the
 * caller must hand them out (an input returned unchanged comes back as a new alias). */
static PyObject *
py_function_record(PyObject *m, PyObject *args)
{
    PyObject *ctx, *name, *ins, *outs, *diff, *dirty, *save, *result = NULL, *state;
    PtlNode *node = NULL;
    (void)m;
    if (!PyArg_ParseTuple(args, "OUO!O!O!O!O!:_function_record", &ctx, &name, &PyTuple_Type, &ins,
                          &PyTuple_Type, &outs, &PyTuple_Type, &diff, &PyTuple_Type, &dirty,
                          &PyTuple_Type, &save)) {
        return NULL;
    }
    int nin = (int)PyTuple_GET_SIZE(ins), nout = (int)PyTuple_GET_SIZE(outs);
    if (PyTuple_GET_SIZE(save) > PTL_NODE_MAX_SAVED) {
        PyErr_Format(PyExc_RuntimeError, "save_for_backward: at most %d tensors can be saved",
                     PTL_NODE_MAX_SAVED);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(dirty); i++) {
        PtlTensorImpl *t = PTLPY_IMPL(PyTuple_GET_ITEM(dirty, i));
        if (ptl_is_leaf(t) && ptl_requires_grad(t)) {
            PyErr_SetString(PyExc_RuntimeError, "a leaf Variable that requires grad is being used "
                                                "in an in-place operation.");
            return NULL;
        }
    }
    const PtlNodeKind *kind = kind_for(name);
    if (kind == NULL || (node = ptl_node_new(kind, nout, nin)) == NULL) {
        if (!PyErr_Occurred()) {
            ptlpy_raise();
        }
        return NULL;
    }
    for (int i = 0; i < nin; i++) {
        PtlTensorImpl *t = PTLPY_IMPL(PyTuple_GET_ITEM(ins, i));
        PtlInputMeta *im = &node->input_meta[i];
        if (ptl_requires_grad(t)) {
            node->next[i] = ptl_gradient_edge(t);
            node->needs |= 1u << (i < 31 ? i : 31);
        }
        im->dtype = t->dtype;
        im->device = t->device;
        im->dim = t->dim;
        memcpy(im->sizes, t->sizes, sizeof(int64_t) * (size_t)t->dim);
    }
    if ((result = PyTuple_New(nout)) == NULL) {
        goto error;
    }
    for (int k = 0; k < nout; k++) {
        PyObject *o = PyTuple_GET_ITEM(outs, k);
        PtlTensorImpl *t = PTLPY_IMPL(o);
        int is_input = index_of(t, ins) >= 0, is_dirty = index_of(t, dirty) >= 0;
        if (is_input && !is_dirty) {
            /* an input handed back unchanged: the output is a new alias with its own history */
            PtlTensorImpl *a = ptl_tensor_impl_view(t, t->dim, t->sizes, t->strides,
                                                    t->storage_offset);
            if (a == NULL || (o = ptlpy_wrap(a)) == NULL) {
                if (a == NULL) {
                    ptlpy_raise();
                }
                goto error;
            }
        }
        else {
            Py_INCREF(o);
        }
        PyTuple_SET_ITEM(result, k, o);
        if (PyObject_IsTrue(PyTuple_GET_ITEM(diff, k)) && ptl_dtype_is_differentiable(t->dtype)) {
            ptl_set_grad_fn(PTLPY_IMPL(o), node, k);
        }
    }
    for (int i = 0; i < (int)PyTuple_GET_SIZE(save); i++) {
        PyObject *o = PyTuple_GET_ITEM(save, i);
        if (o == Py_None) {
            ptl_saved_set(node, i, NULL, 0, 0);
            continue;
        }
        if (!PtlPyTensor_Check(o)) {
            PyErr_Format(PyExc_TypeError, "save_for_backward can only save variables, but "
                         "argument %d is of type %s", i, Py_TYPE(o)->tp_name);
            goto error;
        }
        if (ptl_saved_check(PTLPY_IMPL(o)) < 0) {
            ptlpy_raise();
            goto error;
        }
        int k = index_of(PTLPY_IMPL(o), result);
        ptl_saved_set(node, i, PTLPY_IMPL(o), k >= 0, k >= 0 ? k : 0);
        if (k >= 0) {
            node->saved[i].producer = forward_name(kind);
        }
    }
    node->nsaved = (int)PyTuple_GET_SIZE(save);
    if (ptl_node_pack_saved(node) < 0) {
        ptlpy_raise();
        goto error;
    }
    if ((state = ptlpy_node_state(node, 1)) == NULL ||
        PyObject_SetAttrString(state, "ctx", ctx) < 0 ||
        PyObject_SetAttrString(ctx, "_state", state) < 0) {
        goto error;
    }
    ptl_node_decref(node);
    return result;
error:
    Py_XDECREF(result);
    ptl_node_decref(node);
    return NULL;
}

static PyObject *
saved_item(const void *n, int i)
{
    return ptlpy_saved_unpack((PtlNode *)n, i);
}

/* _function_saved(state, raw=False) -> the saved tensors, version-checked, or (raw) their
 * SavedTensor handles */
static PyObject *
py_function_saved(PyObject *m, PyObject *args)
{
    PyObject *st;
    int raw = 0;
    (void)m;
    if (!PyArg_ParseTuple(args, "O|p:_function_saved", &st, &raw)) {
        return NULL;
    }
    PtlNode *n = ((PtlPyNodeState *)st)->node;
    if (n == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the graph of this Function was freed");
        return NULL;
    }
    return raw ? ptlpy_saved_tensors(n, 0) : ptlpy_tuple_from(n->nsaved, saved_item, n);
}

static PyObject *
py_set_function_runner(PyObject *m, PyObject *fn)
{
    (void)m;
    Py_INCREF(fn);
    Py_XSETREF(run_backward, fn);
    Py_RETURN_NONE;
}

static PyMethodDef function_methods[] = {
    {"_function_record", py_function_record, METH_VARARGS, NULL},
    {"_function_saved", py_function_saved, METH_VARARGS, NULL},
    {"_set_function_runner", py_set_function_runner, METH_O, NULL},
    {NULL},
};

int
ptlpy_function_init(PyObject *module)
{
    if ((kinds = PyDict_New()) == NULL) {
        return -1;
    }
    return PyModule_AddFunctions(module, function_methods);
}
