/* torch_function.c -- the __torch_function__ protocol at the Python boundary (Note [Torch
 * function]).  Mirrors torch/csrc/utils/python_arg_parser.cpp's overloaded-argument check and
 * torch/csrc/utils/disable_torch_function.cpp.
 *
 * Note [Torch function]
 * ~~~~~~~~~~~~~~~~~~~~~
 * A call from Python into an operator (a function of pytorchlite, a Tensor method, an operator
 * slot such as `x + y` or `x[i]`) whose arguments include an object of a type other than
 * Tensor that defines __torch_function__ (a Tensor subclass, or any tensor-like object), or
 * that runs while a TorchFunctionMode is active, is not computed here: it goes to
 * pytorchlite.overrides, which calls the modes' and the types' __torch_function__(func, types,
 * args, kwargs) with func the public callable the user called (pytorchlite.add, Tensor.add,
 * Tensor.__add__ ...), as PyTorch's handle_torch_function does.  Tensor.__torch_function__
 * (the default every subclass inherits) computes the call with subclass handling disabled
 * (DisableTorchFunctionSubclass) and returns its tensors as the subclass.  A type whose
 * __torch_function__ is _disabled_torch_function_impl (nn.Parameter) is not overloaded.
 *
 * The hot path pays one type compare per argument: an exact Tensor, int, float, bool or None
 * is never overloaded, and `ptlpy_tf_modes` (modes active on any thread) is read once.  Only
 * a call with another argument type looks further (ptlpy_tf_overloaded).
 *
 * Functions written in Python (nn.functional, torch.functional, Tensor.to ...) are wrapped
 * once, by pytorchlite.overrides, in a _C._RoutedFunction: a C callable that makes the same
 * check on its arguments and goes to __torch_function__ with itself as func, or else calls
 * the Python function through vectorcall (no tuple, no dict).  So a subclass or a mode sees
 * F.linear or Tensor.to, as in PyTorch, rather than the operators they call.  A plain call
 * pays the C-to-Python call, 15-70 ns (docs/performance.md); PyTorch's
 * `if has_torch_function_unary(input)` written at the top of each function costs less (23 ns
 * for F.relu) but is code in every function, and the functions here are many and spread over
 * modules.
 *
 * Tensor's getters, setters and methods that are not operators (x.shape, x.grad = g, x.dim(),
 * x.size(0), bool(x) ...) make the same check on self (ptlpy_tf_self: a flag and a type
 * compare on the plain path) and pass PyTorch's func: Tensor.<name>.__get__, __set__ or
 * __delete__ for a property, Tensor.<name> for a method (Tensor.dim for ndimension, as
 * PyTorch's).  The properties written in Python (T, mT, real, is_cpu, layout ...) are
 * _RoutedProperty objects that do the same.  A mode sees them all, as PyTorch's, and a
 * subclass through the same check (no per-subclass wrappers).  Why the modes' depth is kept
 * here and not as a dispatch key, as the dispatch modes' is: Note [Python dispatch key]. */
#include "ptlpy.h"

#include <structmember.h>

PyObject *ptlpy_tf_disabled_impl = NULL;   /* _C._disabled_torch_function_impl */
int ptlpy_tf_modes = 0;                    /* modes pushed on all threads */
static PyObject *handler = NULL;           /* overrides._handle_from_c, set by the package */
static PyObject *name_tf = NULL;           /* "__torch_function__" */
static _Thread_local int modes_here = 0;        /* this thread's mode stack depth */
static _Thread_local int subclasses_off = 0;    /* DisableTorchFunctionSubclass depth */
static _Thread_local int all_off = 0;           /* DisableTorchFunction depth */

/* the types whose objects are never overloaded, by pointer */
static int
plain_type(PyTypeObject *t)
{
    return t == &PyLong_Type || t == &PyFloat_Type || t == &PyBool_Type ||
           t == Py_TYPE(Py_None) || t == &PyUnicode_Type || t == &PtlPyDtype_Type ||
           t == &PySlice_Type || t == &PyEllipsis_Type || t == &PtlPyDevice_Type;
}

/* The last tensor subclass found not overloaded (nn.Parameter, whose parameters come to every
 * linear layer), by type and version tag: a type that changes gets a new tag */
static PyTypeObject *plain_subclass = NULL;
static unsigned int plain_subclass_tag = 0;

/* whether o's type (not an exact Tensor) defines an enabled __torch_function__ */
static int
overloaded_object(PyObject *o)
{
    PyTypeObject *t = Py_TYPE(o);
    if (t == ptlpy_tensor_class || plain_type(t) ||
        (t == plain_subclass && t->tp_version_tag == plain_subclass_tag &&
         (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG))) {
        return 0;
    }
    PyObject *f = _PyType_Lookup(t, name_tf);
    return f != NULL && f != ptlpy_tf_disabled_impl;
}

int
ptlpy_tf_subclass(PyObject *o)
{
    PyTypeObject *t = Py_TYPE(o);
    if (t == plain_subclass && t->tp_version_tag == plain_subclass_tag &&
        (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)) {
        return 0;
    }
    if (!overloaded_object(o)) {
        if (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) {
            plain_subclass = t;
            plain_subclass_tag = t->tp_version_tag;
        }
        return 0;
    }
    return !all_off && !subclasses_off;
}

/* Visits o, or the items of a list or tuple o, that are overloaded: with a list, appends each
   (returns -1 on error, else 0); without one, returns 1 at the first. */
static int
visit_overloaded(PyObject *o, PyObject *list)
{
    PyObject **items = &o;
    Py_ssize_t n = 1;
    if (PyList_CheckExact(o) || PyTuple_CheckExact(o)) {
        items = PySequence_Fast_ITEMS(o);
        n = PySequence_Fast_GET_SIZE(o);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!overloaded_object(items[i])) {
            continue;
        }
        if (list == NULL) {
            return 1;
        }
        if (PyList_Append(list, items[i]) < 0) {
            return -1;
        }
    }
    return 0;
}

int
ptlpy_tf_overloaded(PyObject *const *args, Py_ssize_t n)
{
    int found = 0;
    for (Py_ssize_t i = 0; i < n && !found; i++) {
        found = visit_overloaded(args[i], NULL);
    }
    /* the thread's state only when something may be overloaded */
    if ((!found && !ptlpy_tf_modes) || all_off) {
        return 0;
    }
    return modes_here > 0 || (found && !subclasses_off);
}

PyObject *
ptlpy_tf_dispatch(PyObject *func, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (handler == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "pytorchlite.overrides is not loaded");
        return NULL;
    }
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *tup = PyTuple_New(nargs), *kw = PyDict_New(), *relevant = PyList_New(0);
    PyObject *res = NULL;
    if (tup == NULL || kw == NULL || relevant == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(tup, i, args[i]);
        if (visit_overloaded(args[i], relevant) < 0) {
            goto done;
        }
    }
    for (Py_ssize_t i = 0; i < nkw; i++) {
        if (PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0 ||
            visit_overloaded(args[nargs + i], relevant) < 0) {
            goto done;
        }
    }
    res = PyObject_CallFunctionObjArgs(handler, func, relevant, tup, kw, NULL);
done:
    Py_XDECREF(tup);
    Py_XDECREF(kw);
    Py_XDECREF(relevant);
    return res;
}

PyObject *
ptlpy_tf_dispatch_slot(const char *name, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *func = PyObject_GetAttrString((PyObject *)ptlpy_tensor_class, name);
    if (func == NULL) {
        return NULL;
    }
    PyObject *res = ptlpy_tf_dispatch(func, args, nargs, NULL);
    Py_DECREF(func);
    return res;
}

/* Tensor.<name>(a, b) when a is a tensor, else Tensor.<rname>(b, a) */
PyObject *
ptlpy_tf_binary_slot(PyObject *a, PyObject *b, const char *name, const char *rname)
{
    if (PtlPyTensor_Check(a)) {
        PyObject *args[2] = {a, b};
        return ptlpy_tf_dispatch_slot(name, args, 2);
    }
    PyObject *args[2] = {b, a};
    return ptlpy_tf_dispatch_slot(rname, args, 2);
}

PyObject *
ptlpy_tf_binary_or(PyObject *a, PyObject *b, const char *name, const char *rname,
                   binaryfunc slot)
{
    PyObject *ab[2] = {a, b};
    return ptlpy_tf_overloaded(ab, 2) ? ptlpy_tf_binary_slot(a, b, name, rname) : slot(a, b);
}

PyObject *
ptlpy_tf_call2_or(PyObject *a, PyObject *b, const char *name, binaryfunc slot)
{
    PyObject *ab[2] = {a, b};
    return ptlpy_tf_overloaded(ab, 2) ? ptlpy_tf_dispatch_slot(name, ab, 2) : slot(a, b);
}

PyObject *
ptlpy_tf_unary_or(PyObject *a, const char *name, unaryfunc slot)
{
    return ptlpy_tf_overloaded(&a, 1) ? ptlpy_tf_dispatch_slot(name, &a, 1) : slot(a);
}

/* ---- Tensor's getters, setters and methods that are not operators ---- */

/* Tensor.<name>, or its attribute dunder (__get__, __set__, __delete__) when dunder is set */
static PyObject *
tensor_attr(const char *name, const char *dunder)
{
    PyObject *a = PyObject_GetAttrString((PyObject *)ptlpy_tensor_class, name);
    if (a == NULL || dunder == NULL) {
        return a;
    }
    PyObject *f = PyObject_GetAttrString(a, dunder);
    Py_DECREF(a);
    return f;
}

static PyObject *
dispatch_attr(const char *name, const char *dunder, PyObject *const *args, Py_ssize_t nargs,
              PyObject *kwnames)
{
    PyObject *func = tensor_attr(name, dunder);
    if (func == NULL) {
        return NULL;
    }
    PyObject *res = ptlpy_tf_dispatch(func, args, nargs, kwnames);
    Py_DECREF(func);
    return res;
}

PyObject *
ptlpy_tf_getter(PyObject *self, const char *name)
{
    return dispatch_attr(name, "__get__", &self, 1, NULL);
}

int
ptlpy_tf_setter(PyObject *self, const char *name, PyObject *value)
{
    PyObject *args[2] = {self, value};
    PyObject *res = value != NULL ? dispatch_attr(name, "__set__", args, 2, NULL)
                                  : dispatch_attr(name, "__delete__", args, 1, NULL);
    Py_XDECREF(res);
    return res != NULL ? 0 : -1;
}

PyObject *
ptlpy_tf_method(PyObject *self, const char *name, PyObject *args, PyObject *kwargs)
{
    Py_ssize_t na = args != NULL ? PyTuple_GET_SIZE(args) : 0;
    Py_ssize_t nk = kwargs != NULL ? PyDict_GET_SIZE(kwargs) : 0;
    PyObject **v = PyMem_Malloc(sizeof(PyObject *) * (size_t)(1 + na + nk));
    PyObject *kwnames = nk > 0 ? PyTuple_New(nk) : NULL, *key, *value, *res = NULL;
    Py_ssize_t pos = 0, i = 0;
    if (v == NULL || (nk > 0 && kwnames == NULL)) {
        PyErr_NoMemory();
        goto done;
    }
    v[0] = self;
    for (Py_ssize_t k = 0; k < na; k++) {
        v[1 + k] = PyTuple_GET_ITEM(args, k);
    }
    while (nk > 0 && PyDict_Next(kwargs, &pos, &key, &value)) {
        PyTuple_SET_ITEM(kwnames, i, Py_NewRef(key));
        v[1 + na + i++] = value;
    }
    res = dispatch_attr(name, NULL, v, 1 + na, kwnames);
done:
    PyMem_Free(v);
    Py_XDECREF(kwnames);
    return res;
}

/* ---- _RoutedFunction: a Python function that checks for __torch_function__ first ---- */

typedef struct {
    PyObject_HEAD
    PyObject *func;      /* the Python function */
    PyObject *dict;      /* __name__, __qualname__, __module__, __doc__, __wrapped__ */
    PyObject *public;    /* the func __torch_function__ sees: NULL for the wrapper itself */
    vectorcallfunc vectorcall;
} RoutedFunction;

static PyObject *
routed_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t n = nargs + (kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0);
    Py_ssize_t i = 0;
    /* the inlined check of ptlpy_tf_plain1 and None; anything else gets the full one */
    while (i < n && !ptlpy_tf_modes &&
           (ptlpy_tf_plain_fast(Py_TYPE(args[i])) || args[i] == Py_None)) {
        i++;
    }
    if (i < n && ptlpy_tf_overloaded(args, n)) {
        PyObject *public = ((RoutedFunction *)self)->public;
        return ptlpy_tf_dispatch(public != NULL ? public : self, args, nargs, kwnames);
    }
    return PyObject_Vectorcall(((RoutedFunction *)self)->func, args, nargsf, kwnames);
}

static PyObject *
routed_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *func, *public = NULL;
    if (!PyArg_ParseTuple(args, "O|O:_RoutedFunction", &func, &public)) {
        return NULL;
    }
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) > 0) {
        PyErr_SetString(PyExc_TypeError, "_RoutedFunction takes no keyword arguments");
        return NULL;
    }
    if (!PyCallable_Check(func)) {
        PyErr_SetString(PyExc_TypeError, "_RoutedFunction expects a callable");
        return NULL;
    }
    RoutedFunction *self = (RoutedFunction *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->func = Py_NewRef(func);
    self->public = Py_XNewRef(public == Py_None ? NULL : public);
    self->vectorcall = routed_vectorcall;
    return (PyObject *)self;
}

static int
routed_traverse(PyObject *self, visitproc visit, void *arg)
{
    Py_VISIT(((RoutedFunction *)self)->func);
    Py_VISIT(((RoutedFunction *)self)->dict);
    Py_VISIT(((RoutedFunction *)self)->public);
    return 0;
}

static int
routed_clear(PyObject *self)
{
    Py_CLEAR(((RoutedFunction *)self)->func);
    Py_CLEAR(((RoutedFunction *)self)->dict);
    Py_CLEAR(((RoutedFunction *)self)->public);
    return 0;
}

static void
routed_dealloc(PyObject *self)
{
    PyObject_GC_UnTrack(self);
    routed_clear(self);
    Py_TYPE(self)->tp_free(self);
}

/* a method of a class (Tensor.to): bound to the instance as a Python function is */
static PyObject *
routed_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)type;
    if (obj == NULL || obj == Py_None) {
        return Py_NewRef(self);
    }
    return PyMethod_New(self, obj);
}

/* what the wrapper does not hold itself (__code__, __defaults__ ...) is the function's */
static PyObject *
routed_getattro(PyObject *self, PyObject *name)
{
    PyObject *r = PyObject_GenericGetAttr(self, name);
    if (r == NULL && PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
        r = PyObject_GetAttr(((RoutedFunction *)self)->func, name);
    }
    return r;
}

static PyObject *
routed_repr(PyObject *self)
{
    return PyObject_Repr(((RoutedFunction *)self)->func);
}

/* pickled by name, as a function is (its module's attribute __qualname__) */
static PyObject *
routed_reduce(PyObject *self, PyObject *unused)
{
    (void)unused;
    return PyObject_GetAttrString(self, "__qualname__");
}

static PyMethodDef routed_methods[] = {
    {"__reduce__", routed_reduce, METH_NOARGS, NULL},
    {NULL},
};

static PyGetSetDef routed_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL},
};

static PyTypeObject Routed_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pytorchlite._C._RoutedFunction",
    .tp_basicsize = sizeof(RoutedFunction),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_vectorcall_offset = offsetof(RoutedFunction, vectorcall),
    .tp_dictoffset = offsetof(RoutedFunction, dict),
    .tp_call = PyVectorcall_Call,
    .tp_new = routed_new,
    .tp_traverse = routed_traverse,
    .tp_clear = routed_clear,
    .tp_dealloc = routed_dealloc,
    .tp_descr_get = routed_get,
    .tp_getattro = routed_getattro,
    .tp_repr = routed_repr,
    .tp_methods = routed_methods,
    .tp_getset = routed_getset,
    .tp_doc = "_RoutedFunction(func, public=None): func, a function written in Python, that "
              "goes to __torch_function__ first when an argument or a mode asks for it, with "
              "public (else the wrapper itself) as the func it sees (Note [Torch function])",
};

/* ---- _RoutedProperty: a property written in Python that checks for __torch_function__ ---- */

typedef struct {
    PyObject_HEAD
    PyObject *name;      /* the attribute's name, for the messages */
    PyObject *fget;
    PyObject *fset;      /* NULL: read-only */
    PyObject *doc;
} RoutedProperty;

/* x.<name>: fget(x), or Tensor.<name>.__get__ through __torch_function__ when x is
 * overloaded or a mode is active, as PyTorch's getters (Note [Torch function]) */
static PyObject *
rprop_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)type;
    if (obj == NULL || obj == Py_None) {
        return Py_NewRef(self);
    }
    if (ptlpy_tf_self(obj)) {
        PyObject *func = PyObject_GetAttrString(self, "__get__");
        PyObject *res = func != NULL ? ptlpy_tf_dispatch(func, &obj, 1, NULL) : NULL;
        Py_XDECREF(func);
        return res;
    }
    return PyObject_Vectorcall(((RoutedProperty *)self)->fget, &obj, 1, NULL);
}

static int
rprop_set(PyObject *self, PyObject *obj, PyObject *value)
{
    RoutedProperty *p = (RoutedProperty *)self;
    if (ptlpy_tf_self(obj)) {
        PyObject *args[2] = {obj, value};
        PyObject *func = PyObject_GetAttrString(self, value != NULL ? "__set__" : "__delete__");
        PyObject *res = func != NULL ? ptlpy_tf_dispatch(func, args, value != NULL ? 2 : 1, NULL)
                                     : NULL;
        Py_XDECREF(func);
        Py_XDECREF(res);
        return res != NULL ? 0 : -1;
    }
    if (p->fset == NULL || value == NULL) {
        PyErr_Format(PyExc_AttributeError, "property '%U' of '%s' object has no %s", p->name,
                     Py_TYPE(obj)->tp_name, value != NULL ? "setter" : "deleter");
        return -1;
    }
    PyObject *args[2] = {obj, value};
    PyObject *res = PyObject_Vectorcall(p->fset, args, 2, NULL);
    Py_XDECREF(res);
    return res != NULL ? 0 : -1;
}

static PyObject *
rprop_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *name, *fget, *fset = Py_None, *doc = Py_None;
    static char *kwlist[] = {"name", "fget", "fset", "doc", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "UO|OO:_RoutedProperty", kwlist, &name,
                                     &fget, &fset, &doc)) {
        return NULL;
    }
    if (!PyCallable_Check(fget) || (fset != Py_None && !PyCallable_Check(fset))) {
        PyErr_SetString(PyExc_TypeError, "_RoutedProperty expects callables");
        return NULL;
    }
    RoutedProperty *self = (RoutedProperty *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->name = Py_NewRef(name);
    self->fget = Py_NewRef(fget);
    self->fset = fset != Py_None ? Py_NewRef(fset) : NULL;
    self->doc = Py_NewRef(doc);
    return (PyObject *)self;
}

static int
rprop_traverse(PyObject *self, visitproc visit, void *arg)
{
    RoutedProperty *p = (RoutedProperty *)self;
    Py_VISIT(p->name);
    Py_VISIT(p->fget);
    Py_VISIT(p->fset);
    Py_VISIT(p->doc);
    return 0;
}

static int
rprop_clear(PyObject *self)
{
    RoutedProperty *p = (RoutedProperty *)self;
    Py_CLEAR(p->name);
    Py_CLEAR(p->fget);
    Py_CLEAR(p->fset);
    Py_CLEAR(p->doc);
    return 0;
}

static void
rprop_dealloc(PyObject *self)
{
    PyObject_GC_UnTrack(self);
    rprop_clear(self);
    Py_TYPE(self)->tp_free(self);
}

static PyMemberDef rprop_members[] = {
    {"__name__", T_OBJECT, offsetof(RoutedProperty, name), READONLY, NULL},
    {"fget", T_OBJECT, offsetof(RoutedProperty, fget), READONLY, NULL},
    {"fset", T_OBJECT, offsetof(RoutedProperty, fset), READONLY, NULL},
    {"__doc__", T_OBJECT, offsetof(RoutedProperty, doc), READONLY, NULL},
    {NULL},
};

static PyTypeObject RoutedProperty_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pytorchlite._C._RoutedProperty",
    .tp_basicsize = sizeof(RoutedProperty),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = rprop_new,
    .tp_traverse = rprop_traverse,
    .tp_clear = rprop_clear,
    .tp_dealloc = rprop_dealloc,
    .tp_descr_get = rprop_get,
    .tp_descr_set = rprop_set,
    .tp_members = rprop_members,
    .tp_doc = "_RoutedProperty(name, fget, fset=None, doc=None): a property of Tensor written "
              "in Python that goes to __torch_function__ (func Tensor.<name>.__get__ / __set__) "
              "when its tensor or a mode asks for it (Note [Torch function])",
};

/* ---- _C functions and the context managers ---- */

static PyObject *
disabled_impl(PyObject *m, PyObject *args, PyObject *kwargs)
{
    /* _disabled_torch_function_impl(func, types, args=(), kwargs=None): func(*args, **kwargs)
     * with subclass handling off, its result unconverted */
    PyObject *func, *types, *fargs = NULL, *fkwargs = NULL;
    static char *kwlist[] = {"func", "types", "args", "kwargs", NULL};
    (void)m;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|OO:_disabled_torch_function_impl",
                                     kwlist, &func, &types, &fargs, &fkwargs)) {
        return NULL;
    }
    PyObject *tup = fargs != NULL ? PySequence_Tuple(fargs) : PyTuple_New(0);
    if (tup == NULL) {
        return NULL;
    }
    subclasses_off++;
    PyObject *res = PyObject_Call(func, tup, fkwargs == Py_None ? NULL : fkwargs);
    subclasses_off--;
    Py_DECREF(tup);
    return res;
}

static PyObject *
py_set_handler(PyObject *m, PyObject *fn)
{
    (void)m;
    Py_INCREF(fn);
    Py_XSETREF(handler, fn);
    Py_RETURN_NONE;
}

/* _tf_mode_count(delta): adds delta to this thread's mode depth; returns the new depth */
static PyObject *
py_mode_count(PyObject *m, PyObject *arg)
{
    (void)m;
    long d = PyLong_AsLong(arg);
    if (d == -1 && PyErr_Occurred()) {
        return NULL;
    }
    modes_here += (int)d;
    ptlpy_tf_modes += (int)d;
    return PyLong_FromLong(modes_here);
}

static PyObject *
py_is_enabled(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyBool_FromLong(!all_off && !subclasses_off);
}

static PyObject *
py_all_enabled(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyBool_FromLong(!all_off);
}

static PyObject *
py_has_torch_function(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    (void)m;
    if (nargs != 1) {
        PyErr_SetString(PyExc_TypeError, "_has_torch_function takes one iterable");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(args[0], "expected a sequence of arguments");
    if (seq == NULL) {
        return NULL;
    }
    int r = ptlpy_tf_overloaded(PySequence_Fast_ITEMS(seq), PySequence_Fast_GET_SIZE(seq));
    Py_DECREF(seq);
    return PyBool_FromLong(r);
}

static PyObject *
py_has_torch_function_variadic(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    (void)m;
    return PyBool_FromLong(ptlpy_tf_overloaded(args, nargs));
}

static PyObject *
py_has_torch_function_unary(PyObject *m, PyObject *arg)
{
    (void)m;
    return PyBool_FromLong(ptlpy_tf_overloaded(&arg, 1));
}

/* DisableTorchFunctionSubclass / DisableTorchFunction: context managers over a depth */
typedef struct {
    PyObject_HEAD
    int all;
} DisableGuard;

static PyObject *
guard_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    if (((DisableGuard *)self)->all) {
        all_off++;
    }
    else {
        subclasses_off++;
    }
    Py_RETURN_NONE;
}

static PyObject *
guard_exit(PyObject *self, PyObject *args)
{
    (void)args;
    if (((DisableGuard *)self)->all) {
        all_off--;
    }
    else {
        subclasses_off--;
    }
    Py_RETURN_FALSE;
}

static PyMethodDef guard_methods[] = {
    {"__enter__", guard_enter, METH_NOARGS, NULL},
    {"__exit__", guard_exit, METH_VARARGS, NULL},
    {NULL},
};

static PyTypeObject DisableSubclass_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pytorchlite._C.DisableTorchFunctionSubclass",
    .tp_basicsize = sizeof(DisableGuard),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = guard_methods,
    .tp_new = PyType_GenericNew,
    .tp_doc = "Disables __torch_function__ on arguments (Tensor subclasses, tensor-likes) "
              "inside the block; modes still apply",
};

static int
disable_all_init(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)args;
    (void)kwargs;
    ((DisableGuard *)self)->all = 1;
    return 0;
}

static PyTypeObject DisableAll_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pytorchlite._C.DisableTorchFunction",
    .tp_basicsize = sizeof(DisableGuard),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = guard_methods,
    .tp_new = PyType_GenericNew,
    .tp_init = disable_all_init,
    .tp_doc = "Disables __torch_function__, modes included, inside the block",
};

static PyMethodDef tf_methods[] = {
    {"_disabled_torch_function_impl", (PyCFunction)(void (*)(void))disabled_impl,
     METH_VARARGS | METH_KEYWORDS, NULL},
    {"_set_torch_function_handler", py_set_handler, METH_O, NULL},
    {"_torch_function_mode_count", py_mode_count, METH_O, NULL},
    {"_is_torch_function_enabled", py_is_enabled, METH_NOARGS, NULL},
    {"_is_torch_function_all_enabled", py_all_enabled, METH_NOARGS, NULL},
    {"_has_torch_function", (PyCFunction)(void (*)(void))py_has_torch_function, METH_FASTCALL,
     NULL},
    {"_has_torch_function_variadic",
     (PyCFunction)(void (*)(void))py_has_torch_function_variadic, METH_FASTCALL, NULL},
    {"_has_torch_function_unary", py_has_torch_function_unary, METH_O, NULL},
    {NULL},
};

int
ptlpy_torch_function_init(PyObject *module)
{
    name_tf = PyUnicode_InternFromString("__torch_function__");
    if (name_tf == NULL || PyModule_AddFunctions(module, tf_methods) < 0 ||
        PyType_Ready(&DisableSubclass_Type) < 0 || PyType_Ready(&DisableAll_Type) < 0 ||
        PyType_Ready(&Routed_Type) < 0 || PyType_Ready(&RoutedProperty_Type) < 0) {
        return -1;
    }
    ptlpy_tf_disabled_impl = PyObject_GetAttrString(module, "_disabled_torch_function_impl");
    if (ptlpy_tf_disabled_impl == NULL) {
        return -1;
    }
    Py_INCREF(&DisableSubclass_Type);
    if (PyModule_AddObject(module, "DisableTorchFunctionSubclass",
                           (PyObject *)&DisableSubclass_Type) < 0) {
        Py_DECREF(&DisableSubclass_Type);
        return -1;
    }
    Py_INCREF(&DisableAll_Type);
    if (PyModule_AddObject(module, "DisableTorchFunction", (PyObject *)&DisableAll_Type) < 0) {
        Py_DECREF(&DisableAll_Type);
        return -1;
    }
    Py_INCREF(&Routed_Type);
    if (PyModule_AddObject(module, "_RoutedFunction", (PyObject *)&Routed_Type) < 0) {
        Py_DECREF(&Routed_Type);
        return -1;
    }
    Py_INCREF(&RoutedProperty_Type);
    if (PyModule_AddObject(module, "_RoutedProperty", (PyObject *)&RoutedProperty_Type) < 0) {
        Py_DECREF(&RoutedProperty_Type);
        return -1;
    }
    return 0;
}
