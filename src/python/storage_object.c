/* storage_object.c -- storages seen from Python: _C.StorageBase, the base of
 * pytorchlite.UntypedStorage (a refcounted handle on one PtlStorage), and Tensor.set_.
 * Mirrors torch/csrc/Storage.cpp and StorageMethods.cpp.  See Note [TensorImpl ownership]
 * and Note [Storage capacity]. */
#include "ptlpy.h"

#include "../autograd/autograd.h"
#include "../c10/storage_shm.h"

typedef struct PtlPyStorage {
    PyObject_HEAD
    PtlStorage *storage;   /* owned: the storage outlives every tensor that dies before it */
} PtlPyStorage;

static PyTypeObject PtlPyStorageBase_Type;

#define STORAGE(O) (((PtlPyStorage *)(O))->storage)

/* A new object of type tp holding s (STOLEN). */
static PyObject *
wrap_storage(PyTypeObject *tp, PtlStorage *s)
{
    PyObject *o = tp->tp_alloc(tp, 0);
    if (o == NULL) {
        ptl_storage_decref(s);
        return NULL;
    }
    STORAGE(o) = s;
    return o;
}

/* Parses a byte count; -1 with an error set when o is not a non-negative int. */
static Py_ssize_t
byte_count(PyObject *o, const char *what)
{
    Py_ssize_t n = PyNumber_AsSsize_t(o, PyExc_OverflowError);
    if (n == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (n < 0) {
        PyErr_Format(PyExc_RuntimeError, "%s: the size in bytes must be non-negative, got %zd",
                     what, n);
        return -1;
    }
    return n;
}

/* StorageBase(nbytes=0, *, device=None): a new storage of nbytes uninitialised bytes. */
static PyObject *
storage_new(PyTypeObject *tp, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"nbytes", "device", NULL};
    PyObject *n_o = NULL, *dev_o = Py_None;
    PtlDevice dev = ptl_device_cpu();
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O$O:UntypedStorage", kwlist, &n_o,
                                     &dev_o)) {
        return NULL;
    }
    Py_ssize_t n = n_o == NULL ? 0 : byte_count(n_o, "UntypedStorage");
    if (n < 0 || (dev_o != Py_None && ptlpy_parse_device(dev_o, &dev, 1) < 0)) {
        return NULL;
    }
    PtlStorage *s = ptl_storage_new((size_t)n, dev);
    if (s == NULL) {
        return ptlpy_raise();
    }
    return wrap_storage(tp, s);
}

static void
storage_dealloc(PyObject *self)
{
    if (STORAGE(self) != NULL) {
        ptl_storage_decref(STORAGE(self));
    }
    Py_TYPE(self)->tp_free(self);
}

/* cls._of(tensor): the storage under tensor, as a new cls object. */
static PyObject *
storage_of(PyObject *cls, PyObject *tensor)
{
    if (!PtlPyTensor_Check(tensor)) {
        PyErr_Format(PyExc_TypeError, "expected a Tensor, got %s", Py_TYPE(tensor)->tp_name);
        return NULL;
    }
    PtlStorage *s = PTLPY_IMPL(tensor)->storage;
    ptl_storage_incref(s);
    return wrap_storage((PyTypeObject *)cls, s);
}

static PyObject *
storage_nbytes(PyObject *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromSize_t(STORAGE(self)->nbytes);
}

static Py_ssize_t
storage_len(PyObject *self)
{
    return (Py_ssize_t)STORAGE(self)->nbytes;
}

static PyObject *
storage_data_ptr(PyObject *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromVoidPtr(STORAGE(self)->data);
}

/* resize_(nbytes): grows or shrinks in place (Note [Storage capacity]); returns self. */
static PyObject *
storage_resize(PyObject *self, PyObject *arg)
{
    Py_ssize_t n = byte_count(arg, "resize_");
    if (n < 0) {
        return NULL;
    }
    if (STORAGE(self)->device.type != PTL_DEVICE_CPU) {
        PyErr_Format(PyExc_NotImplementedError, "resize_: storages on %s cannot be resized "
                     "in pytorchlite yet", ptl_device_type_name(STORAGE(self)->device.type));
        return NULL;
    }
    if (ptl_storage_resize_bytes(STORAGE(self), (size_t)n) < 0) {
        return ptlpy_raise();
    }
    Py_INCREF(self);
    return self;
}

/* share_memory_(): moves the bytes to shared memory in place; returns self. */
static PyObject *
storage_share_memory(PyObject *self, PyObject *unused)
{
    (void)unused;
    if (STORAGE(self)->device.type == PTL_DEVICE_CPU && ptl_storage_share(STORAGE(self)) < 0) {
        return ptlpy_raise();
    }
    Py_INCREF(self);
    return self;
}

static PyObject *
storage_is_shared(PyObject *self, PyObject *unused)
{
    (void)unused;
    const PtlStorage *s = STORAGE(self);
    return PyBool_FromLong(s->device.type != PTL_DEVICE_CPU || ptl_storage_is_shared(s));
}

/* _byte_tensor(): a 1-D uint8 tensor over every byte of the storage (shares it), through
 * which the Python class reads, writes and copies. */
static PyObject *
storage_byte_tensor(PyObject *self, PyObject *unused)
{
    (void)unused;
    PtlStorage *s = STORAGE(self);
    int64_t n = (int64_t)s->nbytes;
    ptl_storage_incref(s);
    PtlTensorImpl *t = ptl_tensor_impl_new(s, PTL_DTYPE_UINT8, 1, &n, NULL, 0);
    if (t == NULL) {
        return ptlpy_raise();
    }
    return ptlpy_wrap(t);
}

static PyObject *
storage_get_device(PyObject *self, void *c)
{
    (void)c;
    return ptlpy_device_object(STORAGE(self)->device);
}

/* _cdata: the address of the C storage, equal for every handle on it (PyTorch's identity) */
static PyObject *
storage_get_cdata(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromVoidPtr(STORAGE(self));
}

static PyMethodDef storage_methods[] = {
    {"_of", storage_of, METH_O | METH_CLASS, "the storage under a tensor"},
    {"nbytes", storage_nbytes, METH_NOARGS, NULL},
    {"size", storage_nbytes, METH_NOARGS, "the size in bytes"},
    {"data_ptr", storage_data_ptr, METH_NOARGS, NULL},
    {"resize_", storage_resize, METH_O, NULL},
    {"share_memory_", storage_share_memory, METH_NOARGS, NULL},
    {"is_shared", storage_is_shared, METH_NOARGS, NULL},
    {"_byte_tensor", storage_byte_tensor, METH_NOARGS, NULL},
    {NULL},
};

static PyGetSetDef storage_getset[] = {
    {"device", storage_get_device, NULL, NULL, NULL},
    {"_cdata", storage_get_cdata, NULL, NULL, NULL},
    {NULL},
};

static PySequenceMethods storage_as_sequence = {
    .sq_length = storage_len,
};

static PyTypeObject PtlPyStorageBase_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pytorchlite._C.StorageBase",
    .tp_basicsize = sizeof(PtlPyStorage),
    .tp_dealloc = storage_dealloc,
    .tp_as_sequence = &storage_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A refcounted handle on a block of bytes (the base of UntypedStorage).",
    .tp_methods = storage_methods,
    .tp_getset = storage_getset,
    .tp_new = storage_new,
};

/* ---- Tensor.set_ ---- */

/* Reads a sequence of ints into out; the count, or -1 with an error set. */
static int
int_seq(PyObject *o, int64_t *out, const char *what)
{
    PyObject *seq = PySequence_Fast(o, "set_(): sizes and strides must be sequences of ints");
    if (seq == NULL) {
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > PTL_MAX_DIMS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_RuntimeError, "set_(): %s has %zd entries; pytorchlite supports "
                     "tensors of at most %d dimensions", what, n, PTL_MAX_DIMS);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        out[i] = v;
    }
    Py_DECREF(seq);
    return (int)n;
}

/* _set_storage(tensor, storage, storage_offset, size, stride): Tensor.set_ with a storage
 * (None: a new empty one) and a geometry (stride None: contiguous); returns tensor.  An
 * in-place op: bumps the version; refused on an inference tensor outside inference mode and
 * on a leaf that requires grad (PyTorch's errors), and on a non-leaf in the graph, whose
 * history set_ would make wrong. */
static PyObject *
py_set_storage(PyObject *m, PyObject *args)
{
    PyObject *self, *src, *size_o, *stride_o;
    long long offset;
    int64_t sizes[PTL_MAX_DIMS], strides[PTL_MAX_DIMS];
    (void)m;
    if (!PyArg_ParseTuple(args, "O!OLOO:_set_storage", &PtlPyTensorBase_Type, &self, &src,
                          &offset, &size_o, &stride_o)) {
        return NULL;
    }
    PtlTensorImpl *t = PTLPY_IMPL(self);
    if (src != Py_None && !PyObject_TypeCheck(src, &PtlPyStorageBase_Type)) {
        PyErr_Format(PyExc_TypeError, "set_(): expected a Tensor or an UntypedStorage, got %s",
                     Py_TYPE(src)->tp_name);
        return NULL;
    }
    int dim = int_seq(size_o, sizes, "size");
    if (dim < 0) {
        return NULL;
    }
    if (stride_o != Py_None) {
        int sdim = int_seq(stride_o, strides, "stride");
        if (sdim < 0) {
            return NULL;
        }
        if (sdim != dim) {
            PyErr_Format(PyExc_RuntimeError, "unequal size length (%d) and stride length (%d)",
                         dim, sdim);
            return NULL;
        }
    }
    if (ptl_tensor_impl_check_inplace(t) < 0) {
        return ptlpy_raise();
    }
    if (ptl_grad_mode_enabled() && ptl_requires_grad(t)) {
        PyErr_SetString(PyExc_RuntimeError, ptl_is_leaf(t)
                        ? "a leaf Variable that requires grad is being used in an in-place "
                          "operation."
                        : "set_(): the tensor is part of an autograd graph (it requires grad "
                          "and is not a leaf), whose history set_ would make wrong; call it "
                          "on .detach() or under torch.no_grad()");
        return NULL;
    }
    PtlStorage *s = src == Py_None ? ptl_storage_new(0, t->device) : STORAGE(src);
    if (s == NULL) {
        return ptlpy_raise();
    }
    int rc = ptl_tensor_impl_set_storage(t, s, offset, dim, sizes,
                                         stride_o == Py_None ? NULL : strides);
    if (src == Py_None) {
        ptl_storage_decref(s);
    }
    if (rc < 0) {
        return ptlpy_raise();
    }
    ptl_tensor_bump_version(t);
    Py_INCREF(self);
    return self;
}

static PyMethodDef storage_module_methods[] = {
    {"_set_storage", py_set_storage, METH_VARARGS, "Tensor.set_ with a storage"},
    {NULL},
};

int
ptlpy_storage_init(PyObject *module)
{
    if (PyType_Ready(&PtlPyStorageBase_Type) < 0 ||
        PyModule_AddObjectRef(module, "StorageBase", (PyObject *)&PtlPyStorageBase_Type) < 0) {
        return -1;
    }
    return PyModule_AddFunctions(module, storage_module_methods);
}
