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
 * modules. */
#include "ptlpy.h"

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

/* ---- _RoutedFunction: a Python function that checks for __torch_function__ first ---- */

typedef struct {
    PyObject_HEAD
    PyObject *func;      /* the Python function */
    PyObject *dict;      /* __name__, __qualname__, __module__, __doc__, __wrapped__ */
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
        return ptlpy_tf_dispatch(self, args, nargs, kwnames);
    }
    return PyObject_Vectorcall(((RoutedFunction *)self)->func, args, nargsf, kwnames);
}

static PyObject *
routed_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *func;
    if (!PyArg_ParseTuple(args, "O:_RoutedFunction", &func)) {
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
    Py_INCREF(func);
    self->func = func;
    self->vectorcall = routed_vectorcall;
    return (PyObject *)self;
}

static int
routed_traverse(PyObject *self, visitproc visit, void *arg)
{
    Py_VISIT(((RoutedFunction *)self)->func);
    Py_VISIT(((RoutedFunction *)self)->dict);
    return 0;
}

static int
routed_clear(PyObject *self)
{
    Py_CLEAR(((RoutedFunction *)self)->func);
    Py_CLEAR(((RoutedFunction *)self)->dict);
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
    .tp_doc = "_RoutedFunction(func): func, a function written in Python, that goes to "
              "__torch_function__ first when an argument or a mode asks for it "
              "(Note [Torch function])",
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
        PyType_Ready(&Routed_Type) < 0) {
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
    return 0;
}
