/* autograd_object.c -- autograd seen from Python: grad_fn node objects (one Python type per
 * node name, so type(y.grad_fn).__name__ == "MulBackward0"), Tensor.grad / grad_fn /
 * is_leaf / requires_grad, backward and autograd.grad, grad mode.  Mirrors
 * torch/csrc/autograd/{python_cpp_function.cpp, python_engine.cpp, python_variable.cpp}.
 * See Note [Autograd ownership]. */
#include "autograd_python.h"
#include "../autograd/derivatives.h"

#include <string.h>

typedef struct PtlPyNode {
    PyObject_HEAD
    PtlNode *node;        /* owned */
} PtlPyNode;

static PyObject *node_types = NULL;   /* name -> type */
static PyTypeObject *node_base_type = NULL;

static void
node_dealloc(PtlPyNode *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (self->node != NULL) {
        self->node->pyobj = NULL;
        ptl_node_decref(self->node);
        self->node = NULL;
    }
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

/* The node's state (hooks, metadata) may refer back to this wrapper.  Only while the wrapper
 * is the node's sole owner does it own that state, so only then is it reported (and
 * released by node_clear): the collector may then free such a cycle. */
static int
uniquely_owned(PtlPyNode *self)
{
    return self->node != NULL && atomic_load(&self->node->refcnt) == 1;
}

static int
node_traverse(PtlPyNode *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    if (uniquely_owned(self) && self->node->py_state != NULL) {
        Py_VISIT((PyObject *)self->node->py_state);
    }
    return 0;
}

static int
node_clear(PtlPyNode *self)
{
    if (uniquely_owned(self)) {
        PtlNode *n = self->node;
        self->node = NULL;
        n->pyobj = NULL;
        ptl_node_decref(n);
    }
    return 0;
}

static PyObject *
node_name(PtlPyNode *self, PyObject *unused)
{
    (void)unused;
    return PyUnicode_FromString(self->node->kind->name);
}

static PyObject *
node_next_functions(PtlPyNode *self, void *c)
{
    (void)c;
    PtlNode *n = self->node;
    PyObject *tup = PyTuple_New(n->num_next);
    for (int i = 0; tup != NULL && i < n->num_next; i++) {
        PyObject *fn;
        if (n->next[i].fn != NULL) {
            ptl_node_incref(n->next[i].fn);
            fn = ptlpy_wrap_node(n->next[i].fn);
        }
        else {
            Py_INCREF(Py_None);
            fn = Py_None;
        }
        PyObject *pair = fn ? Py_BuildValue("(Ni)", fn, n->next[i].input_nr) : NULL;
        if (pair == NULL) {
            Py_CLEAR(tup);
            break;
        }
        PyTuple_SET_ITEM(tup, i, pair);
    }
    return tup;
}

/* The metadata dict lives as long as the node (not its wrapper), in its state. */
static PyObject *
node_metadata(PtlPyNode *self, void *c)
{
    (void)c;
    PyObject *st = ptlpy_node_state(self->node, 1), *md;
    if (st == NULL) {
        return NULL;
    }
    if ((md = PyObject_GetAttrString(st, "metadata")) != NULL ||
        !PyErr_ExceptionMatches(PyExc_AttributeError)) {
        return md;
    }
    PyErr_Clear();
    if ((md = PyDict_New()) == NULL || PyObject_SetAttrString(st, "metadata", md) < 0) {
        Py_XDECREF(md);
        return NULL;
    }
    return md;
}

PtlNode *
ptlpy_node_from(PyObject *o)
{
    if (!PyObject_TypeCheck(o, node_base_type)) {
        PyErr_Format(PyExc_TypeError, "expected a grad_fn node, got %s", Py_TYPE(o)->tp_name);
        return NULL;
    }
    return ((PtlPyNode *)o)->node;
}

static PyObject *
node_variable(PtlPyNode *self, void *c)
{
    (void)c;
    if (self->node->variable == NULL) {
        PyErr_SetString(PyExc_AttributeError, "'variable' exists only on AccumulateGrad nodes");
        return NULL;
    }
    ptl_incref(self->node->variable);
    return ptlpy_wrap(self->node->variable);
}

/* Note [Saved attributes]
 * ~~~~~~~~~~~~~~~~~~~~~~~
 * grad_fn._saved_<name> reads what the node saved, named as PyTorch's generated nodes name
 * it: the tensors its derivatives.def row saves by schema argument name (`_saved_self`), its
 * saved outputs as `_saved_result`, `_saved_result1`, ... or by the return's name
 * (`_saved_indices`), a saved tensor list as a tuple, and the forward's non-tensor arguments
 * (`_saved_dim`, `_saved_alpha`), which the node keeps in `args`.  The list is derived from
 * the row's mask and the schema, so dir(grad_fn) shows exactly the names that resolve (as
 * torchviz's show_saved / show_attrs expect).  PyTorch also saves sizes and strides where
 * its formulas need them (`_saved_self_sym_sizes`); our nodes keep the input sizes in
 * input_meta instead and do not list them.  Each tensor attribute also reads as
 * `_raw_saved_<name>`: its SavedTensor handle (a tuple of them for a list), whose
 * register_hooks gives that one tensor its own pack / unpack pair (Note [Saved tensor
 * hooks]). */
enum { SAVED_SLOT, SAVED_LIST, SAVED_ARG };

typedef struct SavedAttr {
    const char *name;
    int kind;
    int index;   /* SAVED_SLOT / SAVED_LIST: the first saved slot; SAVED_ARG: the argument */
} SavedAttr;

/* Fills out[] (room for PTL_SCHEMA_MAX_ARGS + 3) with n's saved attributes; their count. */
static int
saved_attrs(const PtlNode *n, SavedAttr *out)
{
    static const char *const results[] = {"result", "result1", "result2"};
    uint32_t save = ptl_node_saves(n);
    int count = 0, slot = 0;
    if (n->op == NULL) {
        return 0;
    }
    const PtlSchema *sc = &n->op->schema;
    for (int i = 0; i < sc->nargs && i < PTL_SAVE_ARG_MAX; i++) {
        if ((save & PTL_SAVE_ARG(i)) && sc->args[i].kind != PTL_ARG_TENSORLIST) {
            out[count++] = (SavedAttr){sc->args[i].name, SAVED_SLOT, slot++};
        }
    }
    for (int k = 0; k < 3 && k < sc->nrets; k++) {
        if (save & (PTL_SAVE_RESULT << k)) {
            const char *rn = sc->rets_named ? sc->rets[k].name : "";
            out[count++] = (SavedAttr){rn[0] != '\0' ? rn : results[k], SAVED_SLOT, slot++};
        }
    }
    for (int i = 0; i < sc->nargs && i < PTL_SAVE_ARG_MAX; i++) {
        if ((save & PTL_SAVE_ARG(i)) && sc->args[i].kind == PTL_ARG_TENSORLIST) {
            out[count++] = (SavedAttr){sc->args[i].name, SAVED_LIST, slot};
        }
    }
    for (int i = 0; i < sc->nargs && i < n->nargs; i++) {
        switch (sc->args[i].kind) {
        case PTL_ARG_INT: case PTL_ARG_FLOAT: case PTL_ARG_BOOL: case PTL_ARG_STR:
        case PTL_ARG_SCALAR: case PTL_ARG_INTLIST:
            out[count++] = (SavedAttr){sc->args[i].name, SAVED_ARG, i};
            break;
        default:
            break;
        }
    }
    return count;
}

/* A saved slot as a tensor (None when nothing was saved there); NULL with an error set. */
static PyObject *
saved_slot(PtlNode *n, int slot)
{
    if (slot >= n->nsaved) {
        Py_RETURN_NONE;
    }
    return ptlpy_saved_unpack(n, slot);
}

static PyObject *
saved_arg(const PtlIValue *v)
{
    switch (v->tag) {
    case PTL_IV_INT: return PyLong_FromLongLong(v->u.i);
    case PTL_IV_DOUBLE: return PyFloat_FromDouble(v->u.d);
    case PTL_IV_COMPLEX: return PyComplex_FromDoubles(v->u.z.re, v->u.z.im);
    case PTL_IV_BOOL: return PyBool_FromLong(v->u.b);
    case PTL_IV_STRING: return PyUnicode_FromString(v->u.s);
    case PTL_IV_INTLIST: {
        PyObject *tup = PyTuple_New(v->u.il.n);
        for (int64_t k = 0; tup != NULL && k < v->u.il.n; k++) {
            PyObject *item = PyLong_FromLongLong(v->u.il.data[k]);
            if (item == NULL) {
                Py_CLEAR(tup);
                break;
            }
            PyTuple_SET_ITEM(tup, k, item);
        }
        return tup;
    }
    default: Py_RETURN_NONE;
    }
}

static PyObject *
saved_value(PtlNode *n, const SavedAttr *a)
{
    if (a->kind == SAVED_SLOT) {
        return saved_slot(n, a->index);
    }
    if (a->kind == SAVED_ARG) {
        return saved_arg(&n->args[a->index]);
    }
    PyObject *tup = PyTuple_New(n->nsaved > a->index ? n->nsaved - a->index : 0);
    for (Py_ssize_t k = 0; tup != NULL && k < PyTuple_GET_SIZE(tup); k++) {
        PyObject *item = saved_slot(n, a->index + (int)k);
        if (item == NULL) {
            Py_CLEAR(tup);
            break;
        }
        PyTuple_SET_ITEM(tup, k, item);
    }
    return tup;
}

/* _raw_saved_<name>: the SavedTensor handles of a tensor attribute (a tuple for a list) */
static PyObject *
raw_saved_value(PtlNode *n, const SavedAttr *a)
{
    if (a->kind == SAVED_SLOT) {
        return ptlpy_saved_tensor_new(n, a->index);
    }
    return ptlpy_saved_tensors(n, a->index);
}

/* _saved_<name> and _raw_saved_<name>: see Note [Saved attributes]. */
static PyObject *
node_getattro(PyObject *o, PyObject *name)
{
    PtlNode *n = ((PtlPyNode *)o)->node;
    const char *s = PyUnicode_AsUTF8(name);
    int raw = s != NULL && strncmp(s, "_raw_saved_", 11) == 0;
    if (s == NULL || (!raw && strncmp(s, "_saved_", 7) != 0) || n->op == NULL) {
        return PyObject_GenericGetAttr(o, name);
    }
    SavedAttr attrs[PTL_SCHEMA_MAX_ARGS + 3];
    int count = saved_attrs(n, attrs);
    for (int i = 0; i < count; i++) {
        if (strcmp(attrs[i].name, s + (raw ? 11 : 7)) != 0) {
            continue;
        }
        if (!raw) {
            return saved_value(n, &attrs[i]);
        }
        if (attrs[i].kind != SAVED_ARG) {
            return raw_saved_value(n, &attrs[i]);
        }
    }
    PyErr_Format(PyExc_AttributeError, "'%s' object has no attribute '%s'", n->kind->name, s);
    return NULL;
}

/* __dir__: object's attributes plus the _saved_<name> ones that resolve */
static PyObject *
node_dir(PyObject *o, PyObject *unused)
{
    (void)unused;
    PtlNode *n = ((PtlPyNode *)o)->node;
    PyObject *names = PyObject_CallMethod((PyObject *)&PyBaseObject_Type, "__dir__", "O", o);
    PyObject *list = names != NULL ? PySequence_List(names) : NULL;
    Py_XDECREF(names);
    SavedAttr attrs[PTL_SCHEMA_MAX_ARGS + 3];
    int count = list != NULL ? saved_attrs(n, attrs) : 0;
    for (int i = 0; i < 2 * count; i++) {
        const SavedAttr *a = &attrs[i % count];
        if (i >= count && a->kind == SAVED_ARG) {
            continue;
        }
        PyObject *s = PyUnicode_FromFormat(i < count ? "_saved_%s" : "_raw_saved_%s", a->name);
        if (s == NULL || PyList_Append(list, s) < 0) {
            Py_XDECREF(s);
            Py_CLEAR(list);
            break;
        }
        Py_DECREF(s);
    }
    return list;
}

static PyObject *
node_repr(PtlPyNode *self)
{
    return PyUnicode_FromFormat("<%s object at %p>", self->node->kind->name, (void *)self);
}

static PyMethodDef node_methods[] = {
    {"name", (PyCFunction)node_name, METH_NOARGS, NULL},
    {"__dir__", node_dir, METH_NOARGS, NULL},
    {NULL},
};

static PyGetSetDef node_getset[] = {
    {"next_functions", (getter)node_next_functions, NULL, NULL, NULL},
    {"metadata", (getter)node_metadata, NULL, NULL, NULL},
    {"variable", (getter)node_variable, NULL, NULL, NULL},
    {NULL},
};

static PyType_Slot node_slots[] = {
    {Py_tp_dealloc, node_dealloc},
    {Py_tp_traverse, node_traverse},
    {Py_tp_clear, node_clear},
    {Py_tp_methods, node_methods},
    {Py_tp_getset, node_getset},
    {Py_tp_getattro, node_getattro},
    {Py_tp_repr, node_repr},
    {0, NULL},
};

static PyType_Spec node_base_spec = {
    "pytorchlite._C._Node", sizeof(PtlPyNode), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC, node_slots,
};

static PyTypeObject *
type_for(const char *name)
{
    PyObject *t = PyDict_GetItemString(node_types, name);
    if (t != NULL) {
        return (PyTypeObject *)t;
    }
    static PyType_Slot gc_slots[] = {
        {Py_tp_dealloc, node_dealloc},
        {Py_tp_traverse, node_traverse},
        {Py_tp_clear, node_clear},
        {0, NULL},
    };
    char qualified[128];
    snprintf(qualified, sizeof(qualified), "pytorchlite._C.%s", name);
    PyType_Spec spec = {qualified, sizeof(PtlPyNode), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
                        gc_slots};
    PyObject *bases = PyTuple_Pack(1, (PyObject *)node_base_type);
    if (bases == NULL) {
        return NULL;
    }
    t = PyType_FromSpecWithBases(&spec, bases);
    Py_DECREF(bases);
    if (t == NULL || PyDict_SetItemString(node_types, name, t) < 0) {
        Py_XDECREF(t);
        return NULL;
    }
    Py_DECREF(t);   /* the dict keeps it */
    return (PyTypeObject *)t;
}

/* Wraps n (STOLEN reference) in its Python object, reusing n->pyobj. */
PyObject *
ptlpy_wrap_node(PtlNode *n)
{
    if (n->pyobj != NULL) {
        PyObject *o = n->pyobj;
        Py_INCREF(o);
        ptl_node_decref(n);
        return o;
    }
    PyTypeObject *tp = type_for(n->kind->name);
    PtlPyNode *o = tp ? PyObject_GC_New(PtlPyNode, tp) : NULL;
    if (o == NULL) {
        ptl_node_decref(n);
        return NULL;
    }
    o->node = n;
    n->pyobj = o;
    PyObject_GC_Track(o);
    return (PyObject *)o;
}

/* ---- Tensor properties (installed on TensorBase by ptlpy_autograd_init) ---- */

static PyObject *
t_get_requires_grad(PyObject *self, void *c)
{
    (void)c;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_getter(self, "requires_grad");
    }
    return PyBool_FromLong(ptl_requires_grad(PTLPY_IMPL(self)));
}

static int
t_set_requires_grad(PyObject *self, PyObject *value, void *c)
{
    (void)c;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_setter(self, "requires_grad", value);
    }
    if (value == NULL || !PyBool_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "requires_grad must be a bool");
        return -1;
    }
    return ptl_set_requires_grad(PTLPY_IMPL(self), value == Py_True) < 0 ? ptlpy_raise_int() : 0;
}

static PyObject *
t_requires_grad_(PyObject *self, PyObject *args, PyObject *kwargs)
{
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_method(self, "requires_grad_", args, kwargs);
    }
    static char *kwlist[] = {"requires_grad", NULL};
    int on = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|p:requires_grad_", kwlist, &on)) {
        return NULL;
    }
    if (ptl_set_requires_grad(PTLPY_IMPL(self), on) < 0) {
        return ptlpy_raise();
    }
    Py_INCREF(self);
    return self;
}

static PyObject *
t_get_is_leaf(PyObject *self, void *c)
{
    (void)c;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_getter(self, "is_leaf");
    }
    PtlTensorImpl *t = PTLPY_IMPL(self);
    if ((t->flags & PTL_TF_IS_VIEW) && ptl_view_check(t) < 0) {
        return ptlpy_raise();
    }
    return PyBool_FromLong(ptl_is_leaf(t));
}

static PyObject *
t_get_grad_fn(PyObject *self, void *c)
{
    (void)c;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_getter(self, "grad_fn");
    }
    PtlTensorImpl *t = PTLPY_IMPL(self);
    if ((t->flags & PTL_TF_IS_VIEW) && ptl_view_check(t) < 0) {
        return ptlpy_raise();
    }
    PtlNode *n = ptl_grad_fn(t);
    if (n == NULL) {
        Py_RETURN_NONE;
    }
    ptl_node_incref(n);
    return ptlpy_wrap_node(n);
}

static PyObject *
t_get_output_nr(PyObject *self, void *c)
{
    (void)c;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_getter(self, "output_nr");
    }
    PtlAutogradMeta *m = ptl_autograd_meta(PTLPY_IMPL(self), 0);
    return PyLong_FromLong(m ? m->output_nr : 0);
}

static PyObject *
t_get_grad(PyObject *self, void *c)
{
    (void)c;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_getter(self, "grad");
    }
    PtlAutogradMeta *m = ptl_autograd_meta(PTLPY_IMPL(self), 0);
    return ptlpy_wrap_borrowed(m != NULL ? m->grad : NULL);
}

/* Note [Tensor GC]: while t's grad refers back to t, the wrapper owns itself and is tracked;
 * a tensor with the Python key always does (Note [Python tensors]) */
static void
anchor(PyObject *self, PtlAutogradMeta *m)
{
    PtlTensorImpl *t = PTLPY_IMPL(self);
    int on = (t->keys & PTL_KEYSET(PTL_KEY_PYTHON)) ||
             (m->grad != NULL && (m->grad->base != NULL || m->grad->autograd_meta != NULL) &&
              ptl_grad_refs_to(t, 0) > 0);
    if (on && m->py_self == NULL) {
        Py_INCREF(self);
        m->py_self = self;
        if (!PyObject_GC_IsTracked(self)) {
            PyObject_GC_Track(self);
        }
    }
    else if (!on && m->py_self != NULL) {
        m->py_self = NULL;
        Py_DECREF(self);
    }
}

static int
t_set_grad(PyObject *self, PyObject *value, void *c)
{
    (void)c;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_setter(self, "grad", value);
    }
    PtlTensorImpl *t = PTLPY_IMPL(self);
    if (value == NULL || value == Py_None) {
        PtlAutogradMeta *m = ptl_autograd_meta(t, 0);
        if (m != NULL) {
            PTL_CLEAR(m->grad);
            anchor(self, m);
        }
        return 0;
    }
    if (!PtlPyTensor_Check(value)) {
        PyErr_Format(PyExc_TypeError, "assigned grad expected to be a Tensor or None but got %s",
                     Py_TYPE(value)->tp_name);
        return -1;
    }
    PtlTensorImpl *g = PTLPY_IMPL(value);
    if (g == t) {
        /* it would own itself: a reference cycle in C that no collector can see */
        PyErr_SetString(PyExc_RuntimeError, "can't assign Variable as its own grad");
        return -1;
    }
    if (g->dtype != t->dtype) {
        PyErr_SetString(PyExc_RuntimeError, "assigned grad has data of a different type");
        return -1;
    }
    if (g->dim != t->dim || memcmp(g->sizes, t->sizes, sizeof(int64_t) * (size_t)t->dim) != 0) {
        PyErr_SetString(PyExc_RuntimeError, "assigned grad has data of a different size");
        return -1;
    }
    PtlAutogradMeta *m = ptl_autograd_meta(t, 1);
    if (m == NULL) {
        return ptlpy_raise_int();
    }
    ptl_incref(g);
    PTL_CLEAR(m->grad);
    m->grad = g;
    anchor(self, m);
    return 0;
}

static PyObject *
t_get_data(PyObject *self, void *c)
{
    (void)c;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_getter(self, "data");
    }
    PtlTensorImpl *t = PTLPY_IMPL(self);
    if (t->keys & PTL_KEYSET(PTL_KEY_PYTHON)) {   /* its subclass's detach(), as PyTorch's */
        return ptlpy_wrap(ptl_detach_below_autograd(t));
    }
    /* not a view: the same storage under a new tensor with its own version counter */
    ptl_storage_incref(t->storage);
    PtlTensorImpl *d = ptl_tensor_impl_new(t->storage, t->dtype, t->dim, t->sizes, t->strides,
                                           t->storage_offset);
    if (d == NULL) {
        return ptlpy_raise();
    }
    return ptlpy_wrap(d);
}

/* t.data = new: t keeps its identity, grad, hooks and version counter and takes new's
 * storage and geometry (PyTorch's VariableHooks::set_data).  A grad accumulator made for the
 * old dtype or device is dropped, so the next graph makes one for the new. */
static int
t_set_data(PyObject *self, PyObject *value, void *c)
{
    (void)c;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_setter(self, "data", value);
    }
    if (value == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Deleting tensor data is not allowed. Delete tensor instead!");
        return -1;
    }
    if (!PtlPyTensor_Check(value)) {
        PyErr_Format(PyExc_TypeError, "Variable data has to be a tensor, but got %s",
                     Py_TYPE(value)->tp_name);
        return -1;
    }
    PtlTensorImpl *t = PTLPY_IMPL(self), *d = PTLPY_IMPL(value);
    PtlAutogradMeta *m = ptl_autograd_meta(t, 0);
    if (ptl_requires_grad(t) && !ptl_dtype_is_differentiable(d->dtype)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "data set to a tensor that requires gradients must be floating point "
                        "or complex dtype");
        return -1;
    }
    if (m != NULL && m->grad_accumulator != NULL &&
        (d->dtype != t->dtype || d->device.type != t->device.type ||
         d->device.index != t->device.index)) {
        m->grad_accumulator = NULL;
    }
    return ptl_tensor_impl_set_data(t, d) < 0 ? ptlpy_raise_int() : 0;
}

/* detach_(): this tensor leaves the graph in place (grad_fn and requires_grad cleared). */
static PyObject *
t_detach_(PyObject *self, PyObject *unused)
{
    (void)unused;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_method(self, "detach_", NULL, NULL);
    }
    PtlTensorImpl *t = PTLPY_IMPL(self);
    PtlAutogradMeta *m = ptl_autograd_meta(t, 0);
    if (t->flags & PTL_TF_IS_VIEW) {   /* any view, as PyTorch's (also one without grad) */
        PyErr_SetString(PyExc_RuntimeError,
                        "Can't detach views in-place. Use detach() instead. If you are using "
                        "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view "
                        "is set as True, gradients are views of DDP buckets, and hence detach_() "
                        "cannot be called on these gradients. To fix this error, please refer to "
                        "the Optimizer.zero_grad() function in torch/optim/optimizer.py as the "
                        "solution.");
        return NULL;
    }
    if (m != NULL) {
        ptl_set_grad_fn(t, NULL, 0);
        m->requires_grad = 0;
    }
    Py_INCREF(self);
    return self;
}

static PyGetSetDef autograd_getset[] = {
    {"requires_grad", t_get_requires_grad, t_set_requires_grad, NULL, NULL},
    {"is_leaf", t_get_is_leaf, NULL, NULL, NULL},
    {"grad_fn", t_get_grad_fn, NULL, NULL, NULL},
    {"grad", t_get_grad, t_set_grad, NULL, NULL},
    {"output_nr", t_get_output_nr, NULL, NULL, NULL},
    {"data", t_get_data, t_set_data, NULL, NULL},
    {NULL},
};

static PyMethodDef autograd_tensor_methods[] = {
    {"detach_", t_detach_, METH_NOARGS, "detach this tensor from the graph, in place"},
    {"requires_grad_", (PyCFunction)(void (*)(void))t_requires_grad_, METH_VARARGS | METH_KEYWORDS,
     NULL},
    {NULL},
};

/* ---- engine entry points ---- */

/* Fills impls from a sequence of tensors (borrowed); -1 with TypeError. */
static int
tensor_seq(PyObject *seq, PtlTensorImpl ***out, Py_ssize_t *n, int allow_none, const char *what)
{
    PyObject *fast = PySequence_Fast(seq, what);
    if (fast == NULL) {
        return -1;
    }
    *n = PySequence_Fast_GET_SIZE(fast);
    *out = PyMem_Calloc((size_t)(*n ? *n : 1), sizeof(PtlTensorImpl *));
    if (*out == NULL) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < *n; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(fast, i);
        if (o == Py_None && allow_none) {
            continue;
        }
        if (!PtlPyTensor_Check(o)) {
            PyErr_Format(PyExc_TypeError, "%s must contain Tensors, got %s", what,
                         Py_TYPE(o)->tp_name);
            Py_DECREF(fast);
            PyMem_Free(*out);
            *out = NULL;
            return -1;
        }
        (*out)[i] = PTLPY_IMPL(o);
    }
    Py_DECREF(fast);
    return 0;
}

/* Note [Final callbacks]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * Variable._execution_engine.queue_callback(cb) (PyTorch's final callbacks) runs cb once the
 * backward pass that is running now has finished: after every node and every gradient hook,
 * on success only, in the order queued; a callback may queue more, which run after it.  A
 * pass is one _run_backward or _run_grad call on this thread; a backward started inside a
 * hook is a pass of its own, with its own callbacks, so `pass_callbacks` is saved and restored
 * around each call (a stack through the C stack).  The first callback that raises ends the
 * pass with its exception, and the ones after it do not run.  is_checkpoint_valid() is False
 * inside a pass that computes the gradients of given inputs (autograd.grad, or backward with
 * inputs=), or inside any pass started from one, as in PyTorch.  _current_graph_task_id()
 * numbers the passes, -1 outside one (DDP asks it whether its launch runs inside backward). */
static _Thread_local PyObject *pass_callbacks;   /* the running pass's list, or NULL */
static _Thread_local int checkpoint_invalid;
static _Thread_local long long pass_id = -1;     /* _current_graph_task_id() */
static _Atomic long long passes_begun;

typedef struct {
    PyObject *callbacks;
    int checkpoint_invalid;
    long long id;
} PassState;

static int
pass_begin(PassState *saved, int has_inputs)
{
    PyObject *list = PyList_New(0);
    if (list == NULL) {
        return -1;
    }
    saved->callbacks = pass_callbacks;
    saved->checkpoint_invalid = checkpoint_invalid;
    saved->id = pass_id;
    pass_callbacks = list;
    pass_id = passes_begun++;
    checkpoint_invalid = checkpoint_invalid || has_inputs;
    return 0;
}

/* Ends the pass: on success (ok) runs its callbacks; 0, or -1 with the exception set. */
static int
pass_end(PassState *saved, int ok)
{
    PyObject *list = pass_callbacks;
    int rc = 0;
    for (Py_ssize_t i = 0; ok && i < PyList_GET_SIZE(list); i++) {
        PyObject *cb = PyList_GET_ITEM(list, i);
        Py_INCREF(cb);
        PyObject *r = PyObject_CallNoArgs(cb);
        Py_DECREF(cb);
        if (r == NULL) {
            rc = -1;
            break;
        }
        Py_DECREF(r);
    }
    pass_callbacks = saved->callbacks;
    checkpoint_invalid = saved->checkpoint_invalid;
    pass_id = saved->id;
    Py_DECREF(list);
    return rc;
}

static PyObject *
py_queue_callback(PyObject *m, PyObject *cb)
{
    (void)m;
    if (pass_callbacks == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Final callbacks can only be installed during backward pass.");
        return NULL;
    }
    if (!PyCallable_Check(cb)) {
        PyErr_Format(PyExc_TypeError, "queue_callback() expects a callable that takes no "
                                      "arguments, got %s", Py_TYPE(cb)->tp_name);
        return NULL;
    }
    if (PyList_Append(pass_callbacks, cb) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
py_is_checkpoint_valid(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyBool_FromLong(!checkpoint_invalid);
}

/* The running pass's number (they count from 0 in the process), or -1 outside a pass. */
static PyObject *
py_current_graph_task_id(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyLong_FromLongLong(pass_id);
}

/* _run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs) */
static PyObject *
py_run_backward(PyObject *m, PyObject *args)
{
    PyObject *ts, *gs, *ins;
    int retain, create;
    PtlTensorImpl **roots = NULL, **grads = NULL, **inputs = NULL;
    Py_ssize_t n, ng, ni;
    PyObject *res = NULL;
    PassState saved;
    int ok;
    (void)m;
    if (!PyArg_ParseTuple(args, "OOppO:_run_backward", &ts, &gs, &retain, &create, &ins)) {
        return NULL;
    }
    if (tensor_seq(ts, &roots, &n, 0, "tensors") < 0 ||
        tensor_seq(gs, &grads, &ng, 1, "grad_tensors") < 0 ||
        tensor_seq(ins, &inputs, &ni, 0, "inputs") < 0) {
        goto done;
    }
    if (ng != n) {
        PyErr_Format(PyExc_RuntimeError, "got %zd tensors and %zd gradients", n, ng);
        goto done;
    }
    if (pass_begin(&saved, ni > 0) < 0) {
        goto done;
    }
    ok = ptl_backward(roots, grads, (int)n, retain, create, inputs, (int)ni) == 0;
    if (!ok) {
        ptlpy_raise();
    }
    if (pass_end(&saved, ok) < 0 || !ok || ptlpy_flush_warnings() < 0) {
        goto done;
    }
    Py_INCREF(Py_None);
    res = Py_None;
done:
    PyMem_Free(roots);
    PyMem_Free(grads);
    PyMem_Free(inputs);
    return res;
}

/* _run_grad(outputs, grad_outputs, inputs, retain_graph, create_graph, allow_unused) */
static PyObject *
py_run_grad(PyObject *m, PyObject *args)
{
    PyObject *ts, *gs, *ins;
    int retain, create, allow_unused;
    PtlTensorImpl **roots = NULL, **grads = NULL, **inputs = NULL, **out = NULL;
    Py_ssize_t n, ng, ni;
    PyObject *res = NULL;
    PassState saved;
    int ok;
    (void)m;
    if (!PyArg_ParseTuple(args, "OOOppp:_run_grad", &ts, &gs, &ins, &retain, &create,
                          &allow_unused)) {
        return NULL;
    }
    if (tensor_seq(ts, &roots, &n, 0, "outputs") < 0 ||
        tensor_seq(gs, &grads, &ng, 1, "grad_outputs") < 0 ||
        tensor_seq(ins, &inputs, &ni, 0, "inputs") < 0) {
        goto done;
    }
    if ((out = PyMem_Calloc((size_t)(ni ? ni : 1), sizeof(PtlTensorImpl *))) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (pass_begin(&saved, 1) < 0) {
        goto done;
    }
    ok = ptl_autograd_grad(roots, grads, (int)n, inputs, (int)ni, retain, create, allow_unused,
                           out) == 0;
    if (!ok) {
        ptlpy_raise();
    }
    if (pass_end(&saved, ok) < 0 || !ok || ptlpy_flush_warnings() < 0) {
        goto done;
    }
    res = PyTuple_New(ni);
    for (Py_ssize_t i = 0; i < ni; i++) {
        PyObject *o;
        if (out[i] == NULL) {
            Py_INCREF(Py_None);
            o = Py_None;
        }
        else {
            o = ptlpy_wrap(out[i]);
            out[i] = NULL;
        }
        if (res == NULL || o == NULL) {
            Py_XDECREF(o);
            Py_CLEAR(res);
            continue;
        }
        PyTuple_SET_ITEM(res, i, o);
    }
done:
    for (Py_ssize_t i = 0; out != NULL && i < ni; i++) {
        ptl_xdecref(out[i]);
    }
    PyMem_Free(out);
    PyMem_Free(roots);
    PyMem_Free(grads);
    PyMem_Free(inputs);
    return res;
}

static PyObject *
py_is_grad_enabled(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyBool_FromLong(ptl_grad_mode_enabled());
}

static PyObject *
py_set_grad_enabled(PyObject *m, PyObject *arg)
{
    (void)m;
    int on = PyObject_IsTrue(arg);
    if (on < 0) {
        return NULL;
    }
    ptl_grad_mode_set(on);
    Py_RETURN_NONE;
}

static PyObject *
py_is_inference_mode_enabled(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyBool_FromLong(ptl_inference_mode_enabled());
}

/* Enters or leaves the thread's inference mode, grad mode following (Note [Inference
 * tensors]); torch.inference_mode restores both on exit. */
static PyObject *
py_set_inference_mode(PyObject *m, PyObject *arg)
{
    (void)m;
    int on = PyObject_IsTrue(arg);
    if (on < 0) {
        return NULL;
    }
    ptl_inference_mode_set(on);
    Py_RETURN_NONE;
}

static PyMethodDef autograd_module_methods[] = {
    {"_run_backward", py_run_backward, METH_VARARGS, NULL},
    {"_run_grad", py_run_grad, METH_VARARGS, NULL},
    {"_queue_callback", py_queue_callback, METH_O, NULL},
    {"_is_checkpoint_valid", py_is_checkpoint_valid, METH_NOARGS, NULL},
    {"_current_graph_task_id", py_current_graph_task_id, METH_NOARGS, NULL},
    {"is_grad_enabled", py_is_grad_enabled, METH_NOARGS, NULL},
    {"_set_grad_enabled", py_set_grad_enabled, METH_O, NULL},
    {"_set_inference_mode", py_set_inference_mode, METH_O, NULL},
    {"_is_inference_mode_enabled", py_is_inference_mode_enabled, METH_NOARGS, NULL},
    {NULL},
};

int
ptlpy_autograd_init(PyObject *module)
{
    if (ptl_autograd_init() < 0) {
        ptlpy_raise();
        return -1;
    }
    node_types = PyDict_New();
    node_base_type = (PyTypeObject *)PyType_FromSpec(&node_base_spec);
    if (node_types == NULL || node_base_type == NULL) {
        return -1;
    }
    PyObject *dict = PtlPyTensorBase_Type.tp_dict;
    for (PyGetSetDef *g = autograd_getset; g->name != NULL; g++) {
        PyObject *d = PyDescr_NewGetSet(&PtlPyTensorBase_Type, g);
        if (d == NULL || PyDict_SetItemString(dict, g->name, d) < 0) {
            Py_XDECREF(d);
            return -1;
        }
        Py_DECREF(d);
    }
    for (PyMethodDef *md = autograd_tensor_methods; md->ml_name != NULL; md++) {
        PyObject *d = PyDescr_NewMethod(&PtlPyTensorBase_Type, md);
        if (d == NULL || PyDict_SetItemString(dict, md->ml_name, d) < 0) {
            Py_XDECREF(d);
            return -1;
        }
        Py_DECREF(d);
    }
    PyType_Modified(&PtlPyTensorBase_Type);
    Py_INCREF(node_base_type);
    if (PyModule_AddObject(module, "_Node", (PyObject *)node_base_type) < 0) {
        Py_DECREF(node_base_type);
        return -1;
    }
    Py_INCREF(node_types);
    if (PyModule_AddObject(module, "_node_types", node_types) < 0) {
        Py_DECREF(node_types);
        return -1;
    }
    if (ptlpy_hooks_init(module) < 0 || ptlpy_function_init(module) < 0) {
        return -1;
    }
    return PyModule_AddFunctions(module, autograd_module_methods);
}
