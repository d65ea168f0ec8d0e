/* size_object.c -- pytorchlite.Size, the shape of a tensor: a tuple subclass written in C.
 * Mirrors torch/csrc/Size.cpp.
 *
 * Note [Size in C]
 * ~~~~~~~~~~~~~~~~
 * `x.shape` and `x.size()` make a Size on every call, and model code indexes it (`x.shape[0]`)
 * in every forward, so Size is a C type: the getter fills a tuple of the type directly
 * (tp_alloc, no argument tuple and no Python __new__), and an integer index is tuple's own
 * subscript.  What differs from a tuple is what PyTorch's differs by: slicing, `+` (either
 * side, with a tuple), `*` (either side) give a Size; the constructor takes an iterable of
 * ints, where an int is anything with __index__ (bool, NumPy integers, one-element integer
 * tensors) and anything else is PyTorch's TypeError naming the item; the repr is
 * "torch.Size([2, 3])"; numel() is the product of the sizes; it pickles as Size(tuple); it
 * cannot be subclassed. */
#include "ptlpy.h"

PyTypeObject PtlPySize_Type;

/* A Size of `type` holding the n items of `items` (new references taken) */
static PyObject *
size_from_items(PyTypeObject *type, PyObject *const *items, Py_ssize_t n)
{
    PyObject *s = type->tp_alloc(type, n);
    if (s == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_INCREF(items[i]);
        PyTuple_SET_ITEM(s, i, items[i]);
    }
    return s;
}

/* A Size holding the items of the tuple t (stolen); NULL passes through */
static PyObject *
size_from_tuple(PyObject *t)
{
    if (t == NULL) {
        return NULL;
    }
    PyObject *s = size_from_items(&PtlPySize_Type, &PyTuple_GET_ITEM(t, 0), PyTuple_GET_SIZE(t));
    Py_DECREF(t);
    return s;
}

PyObject *
ptlpy_make_size(int dim, const int64_t *sizes)
{
    PyObject *s = PtlPySize_Type.tp_alloc(&PtlPySize_Type, dim);
    if (s == NULL) {
        return NULL;
    }
    for (int i = 0; i < dim; i++) {
        PyObject *v = PyLong_FromLongLong(sizes[i]);
        if (v == NULL) {
            Py_DECREF(s);
            return NULL;
        }
        PyTuple_SET_ITEM(s, i, v);
    }
    return s;
}

/* One item of Size's constructor argument as a Python int of int64's range: ints (bool
 * included) as they are, anything else through __index__; PyTorch's errors otherwise. */
static PyObject *
size_item(PyObject *item, Py_ssize_t i)
{
    PyObject *v;
    if (PyLong_Check(item)) {
        v = item;
        Py_INCREF(v);
    } else if (Py_TYPE(item)->tp_as_number == NULL || Py_TYPE(item)->tp_as_number->nb_index == NULL ||
               (v = PyNumber_Index(item)) == NULL) {
        if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_TypeError)) {
            return NULL;
        }
        PyErr_Format(PyExc_TypeError, "torch.Size() takes an iterable of 'int' (item %zd is '%s')", i,
                     Py_TYPE(item)->tp_name);
        return NULL;
    }
    int overflow;
    PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow != 0) {
        Py_DECREF(v);
        PyErr_SetString(PyExc_ValueError, "Overflow when unpacking long long");
        return NULL;
    }
    if (PyBool_Check(v)) {
        Py_SETREF(v, PyLong_FromLong(v == Py_True));
    }
    return v;
}

/* Size(sizes=()): positional only, with tuple()'s messages, as PyTorch's */
static PyObject *
size_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0) {
        PyErr_SetString(PyExc_TypeError, "tuple() takes no keyword arguments");
        return NULL;
    }
    if (PyTuple_GET_SIZE(args) > 1) {
        PyErr_Format(PyExc_TypeError, "tuple expected at most 1 argument, got %zd", PyTuple_GET_SIZE(args));
        return NULL;
    }
    if (PyTuple_GET_SIZE(args) == 0) {
        return type->tp_alloc(type, 0);
    }
    PyObject *arg = PyTuple_GET_ITEM(args, 0);
    PyObject *seq = PySequence_Fast(arg, "");
    if (seq == NULL) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Format(PyExc_TypeError, "'%s' object is not iterable", Py_TYPE(arg)->tp_name);
        }
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *s = type->tp_alloc(type, n);
    for (Py_ssize_t i = 0; s != NULL && i < n; i++) {
        PyObject *v = size_item(PySequence_Fast_GET_ITEM(seq, i), i);
        if (v == NULL) {
            Py_CLEAR(s);
            break;
        }
        PyTuple_SET_ITEM(s, i, v);
    }
    Py_DECREF(seq);
    return s;
}

static PyObject *
size_repr(PyObject *self)
{
    Py_ssize_t n = PyTuple_GET_SIZE(self);
    PyObject *parts = PyList_New(n);
    if (parts == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *r = PyObject_Str(PyTuple_GET_ITEM(self, i));
        if (r == NULL) {
            Py_DECREF(parts);
            return NULL;
        }
        PyList_SET_ITEM(parts, i, r);
    }
    PyObject *sep = PyUnicode_FromString(", ");
    PyObject *joined = sep != NULL ? PyUnicode_Join(sep, parts) : NULL;
    Py_XDECREF(sep);
    Py_DECREF(parts);
    if (joined == NULL) {
        return NULL;
    }
    PyObject *r = PyUnicode_FromFormat("torch.Size([%U])", joined);
    Py_DECREF(joined);
    return r;
}

/* s[i] is the tuple's item; s[a:b] a Size */
static PyObject *
size_subscript(PyObject *self, PyObject *index)
{
    PyObject *r = PyTuple_Type.tp_as_mapping->mp_subscript(self, index);
    if (r == NULL || !PySlice_Check(index)) {
        return r;
    }
    return size_from_tuple(r);
}

/* Size + tuple and tuple + Size give a Size; PyTorch's message for Size + anything else */
static PyObject *
size_add(PyObject *a, PyObject *b)
{
    if (!PyTuple_Check(a) || !PyTuple_Check(b)) {
        if (PyObject_TypeCheck(a, &PtlPySize_Type)) {
            PyErr_Format(PyExc_TypeError, "can only concatenate tuple (not %s) to torch.Size",
                         Py_TYPE(b)->tp_name);
            return NULL;
        }
        Py_RETURN_NOTIMPLEMENTED;
    }
    return size_from_tuple(PyTuple_Type.tp_as_sequence->sq_concat(a, b));
}

/* Size * n and n * Size give a Size */
static PyObject *
size_multiply(PyObject *a, PyObject *b)
{
    PyObject *s = PyObject_TypeCheck(a, &PtlPySize_Type) ? a : b, *n = s == a ? b : a;
    if (!PyIndex_Check(n)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    Py_ssize_t times = PyNumber_AsSsize_t(n, PyExc_OverflowError);
    if (times == -1 && PyErr_Occurred()) {
        return NULL;
    }
    return size_from_tuple(PyTuple_Type.tp_as_sequence->sq_repeat(s, times));
}

static PyObject *
size_numel(PyObject *self, PyObject *unused)
{
    (void)unused;
    int64_t n = 1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self); i++) {
        n *= PyLong_AsLongLong(PyTuple_GET_ITEM(self, i));
    }
    return PyLong_FromLongLong(n);
}

static PyObject *
size_reduce(PyObject *self, PyObject *unused)
{
    (void)unused;
    PyObject *items = PyTuple_GetSlice(self, 0, PyTuple_GET_SIZE(self));
    if (items == NULL) {
        return NULL;
    }
    return Py_BuildValue("(O(N))", (PyObject *)Py_TYPE(self), items);
}

static PyMethodDef size_methods[] = {
    {"numel", size_numel, METH_NOARGS,
     "numel() -> int\n\nThe number of elements a tensor of this size holds (the product of the sizes)."},
    {"__reduce__", size_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyMappingMethods size_as_mapping = {
    .mp_subscript = size_subscript,
};

static PyNumberMethods size_as_number = {
    .nb_add = size_add,
    .nb_multiply = size_multiply,
};

PyTypeObject PtlPySize_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pytorchlite.Size",
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Size(sizes=()) -> the shape of a tensor: a tuple of ints",
    .tp_repr = size_repr,
    .tp_str = size_repr,
    .tp_as_mapping = &size_as_mapping,
    .tp_as_number = &size_as_number,
    .tp_methods = size_methods,
    .tp_new = size_new,
};

int
ptlpy_size_init_type(PyObject *module)
{
    PtlPySize_Type.tp_base = &PyTuple_Type;
    if (PyType_Ready(&PtlPySize_Type) < 0) {
        return -1;
    }
    Py_INCREF(&PtlPySize_Type);
    if (PyModule_AddObject(module, "Size", (PyObject *)&PtlPySize_Type) < 0) {
        Py_DECREF(&PtlPySize_Type);
        return -1;
    }
    return 0;
}
