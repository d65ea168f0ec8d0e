/* dtype_object.c -- pytorchlite.dtype, pytorchlite.device and pytorchlite.memory_format.
 * Mirrors torch/csrc/Dtype.cpp, torch/csrc/Device.cpp and torch/csrc/MemoryFormat.cpp.
 *
 * dtype objects print as PyTorch's do ("torch.float32") so that programs written for
 * PyTorch print the same text; see docs/decisions.md. */
#include "ptlpy.h"

#include <string.h>

static PtlPyDtype *dtype_objects[PTL_DTYPE_COUNT];

/* ---- dtype ---- */

static PyObject *
dtype_repr(PtlPyDtype *self)
{
    return PyUnicode_FromFormat("torch.%s", ptl_dtype_name(self->dtype));
}

static PyObject *
dtype_reduce(PtlPyDtype *self, PyObject *unused)
{
    (void)unused;
    return PyUnicode_FromString(ptl_dtype_name(self->dtype));
}

static PyObject *
dtype_get_itemsize(PtlPyDtype *self, void *c)
{
    (void)c;
    return PyLong_FromSize_t(ptl_dtype_itemsize(self->dtype));
}

static PyObject *
dtype_get_is_floating(PtlPyDtype *self, void *c)
{
    (void)c;
    return PyBool_FromLong(ptl_dtype_is_floating(self->dtype));
}

static PyObject *
dtype_get_is_complex(PtlPyDtype *self, void *c)
{
    (void)c;
    return PyBool_FromLong(ptl_dtype_is_complex(self->dtype));
}

static PyObject *
dtype_get_is_signed(PtlPyDtype *self, void *c)
{
    (void)c;
    return PyBool_FromLong(ptl_dtype_is_signed(self->dtype));
}

static PyGetSetDef dtype_getset[] = {
    {"itemsize", (getter)dtype_get_itemsize, NULL, "size of one element in bytes", NULL},
    {"is_floating_point", (getter)dtype_get_is_floating, NULL, NULL, NULL},
    {"is_signed", (getter)dtype_get_is_signed, NULL, NULL, NULL},
    {"is_complex", (getter)dtype_get_is_complex, NULL, NULL, NULL},
    {NULL},
};

/* dtype.to_real(): a complex dtype's part dtype, any other dtype itself */
static PyObject *
dtype_to_real(PtlPyDtype *self, PyObject *unused)
{
    (void)unused;
    PyObject *r = ptlpy_dtype_object(ptl_dtype_to_real(self->dtype));
    Py_INCREF(r);
    return r;
}

/* dtype.to_complex(): the complex dtype of a floating one's parts (c10's toComplexType);
 * float16's is complex32, which pytorchlite does not have, and the integer dtypes have none
 * (PyTorch's message) */
static PyObject *
dtype_to_complex(PtlPyDtype *self, PyObject *unused)
{
    (void)unused;
    PtlDtype dt = self->dtype;
    if (dt == PTL_DTYPE_FLOAT16) {
        PyErr_SetString(PyExc_RuntimeError, "complex32 is not supported by pytorchlite");
        return NULL;
    }
    if (!ptl_dtype_is_floating(dt) && !ptl_dtype_is_complex(dt)) {
        PyErr_Format(PyExc_RuntimeError, "Unknown Complex ScalarType for %s",
                     ptl_dtype_legacy_name(dt));
        return NULL;
    }
    PyObject *r = ptlpy_dtype_object(ptl_dtype_to_complex(dt));
    Py_INCREF(r);
    return r;
}

static PyMethodDef dtype_methods[] = {
    {"__reduce__", (PyCFunction)dtype_reduce, METH_NOARGS, NULL},
    {"to_real", (PyCFunction)dtype_to_real, METH_NOARGS, NULL},
    {"to_complex", (PyCFunction)dtype_to_complex, METH_NOARGS, NULL},
    {NULL},
};

PyTypeObject PtlPyDtype_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pytorchlite.dtype",
    .tp_basicsize = sizeof(PtlPyDtype),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_repr = (reprfunc)dtype_repr,
    .tp_getset = dtype_getset,
    .tp_methods = dtype_methods,
};

PyObject *
ptlpy_dtype_object(PtlDtype dt)
{
    return (PyObject *)dtype_objects[dt];
}

PtlDtype
ptlpy_parse_dtype(PyObject *o, int raise)
{
    if (Py_IS_TYPE(o, &PtlPyDtype_Type)) {
        return ((PtlPyDtype *)o)->dtype;
    }
    if (o == (PyObject *)&PyFloat_Type) {
        return PTL_DTYPE_FLOAT64;
    }
    if (o == (PyObject *)&PyLong_Type) {
        return PTL_DTYPE_INT64;
    }
    if (o == (PyObject *)&PyBool_Type) {
        return PTL_DTYPE_BOOL;
    }
    if (raise) {
        PyErr_Format(PyExc_TypeError, "dtype must be a pytorchlite.dtype, not %.100s",
                     Py_TYPE(o)->tp_name);
    }
    return PTL_DTYPE_UNDEFINED;
}

/* ---- device ---- */

PyObject *
ptlpy_device_object(PtlDevice d)
{
    PtlPyDevice *o = PyObject_New(PtlPyDevice, &PtlPyDevice_Type);
    if (o != NULL) {
        o->device = d;
    }
    return (PyObject *)o;
}

int
ptlpy_parse_device(PyObject *o, PtlDevice *out, int raise)
{
    if (Py_IS_TYPE(o, &PtlPyDevice_Type)) {
        *out = ((PtlPyDevice *)o)->device;
        return 0;
    }
    if (PyUnicode_Check(o)) {
        const char *s = PyUnicode_AsUTF8(o);
        if (s == NULL) {
            return -1;
        }
        if (ptl_device_parse(s, out) < 0) {
            if (raise) {
                return ptlpy_raise_int();
            }
            ptl_error_clear();
            return -1;
        }
        return 0;
    }
    if (PyLong_Check(o) && !PyBool_Check(o)) {
        long i = PyLong_AsLong(o);
        if (i < 0 || i > 127) {
            if (raise) {
                PyErr_Format(PyExc_RuntimeError, "Device index must not be negative");
            }
            return -1;
        }
        out->type = PTL_DEVICE_CUDA;
        out->index = (int8_t)i;
        return 0;
    }
    if (raise) {
        PyErr_Format(PyExc_TypeError, "expected a device (str, int or pytorchlite.device), not %.100s",
                     Py_TYPE(o)->tp_name);
    }
    return -1;
}

static PyObject *
device_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"type", "index", NULL};
    PyObject *spec = NULL, *index = Py_None;
    PtlDevice d;
    (void)type;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:device", kwlist, &spec, &index)) {
        return NULL;
    }
    if (Py_IS_TYPE(spec, &PtlPyDevice_Type) && index == Py_None) {
        Py_INCREF(spec);
        return spec;
    }
    if (ptlpy_parse_device(spec, &d, 1) < 0) {
        return NULL;
    }
    if (index != Py_None) {
        long i = PyLong_AsLong(index);
        if (i == -1 && PyErr_Occurred()) {
            return NULL;
        }
        if (d.index >= 0) {
            PyErr_Format(PyExc_RuntimeError,
                         "type (string) must not include an index because index was passed "
                         "explicitly: %S",
                         spec);
            return NULL;
        }
        if (i < 0) {
            PyErr_Format(PyExc_RuntimeError, "Device index must not be negative");
            return NULL;
        }
        d.index = (int8_t)i;
    }
    return ptlpy_device_object(d);
}

static PyObject *
device_repr(PtlPyDevice *self)
{
    const char *t = ptl_device_type_name(self->device.type);
    if (self->device.index >= 0) {
        return PyUnicode_FromFormat("device(type='%s', index=%d)", t, self->device.index);
    }
    return PyUnicode_FromFormat("device(type='%s')", t);
}

static PyObject *
device_str(PtlPyDevice *self)
{
    const char *t = ptl_device_type_name(self->device.type);
    if (self->device.index >= 0) {
        return PyUnicode_FromFormat("%s:%d", t, self->device.index);
    }
    return PyUnicode_FromString(t);
}

static PyObject *
device_richcompare(PyObject *a, PyObject *b, int op)
{
    if (!Py_IS_TYPE(a, &PtlPyDevice_Type) || !Py_IS_TYPE(b, &PtlPyDevice_Type) ||
        (op != Py_EQ && op != Py_NE)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    PtlDevice x = ((PtlPyDevice *)a)->device, y = ((PtlPyDevice *)b)->device;
    int eq = x.type == y.type && x.index == y.index;
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_hash_t
device_hash(PtlPyDevice *self)
{
    return (Py_hash_t)(self->device.type * 1000 + self->device.index + 7);
}

static PyObject *
device_get_type(PtlPyDevice *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(ptl_device_type_name(self->device.type));
}

static PyObject *
device_get_index(PtlPyDevice *self, void *c)
{
    (void)c;
    if (self->device.index < 0) {
        Py_RETURN_NONE;
    }
    return PyLong_FromLong(self->device.index);
}

static PyObject *
device_reduce(PtlPyDevice *self, PyObject *unused)
{
    (void)unused;
    const char *t = ptl_device_type_name(self->device.type);
    if (self->device.index >= 0) {
        return Py_BuildValue("(O(si))", (PyObject *)&PtlPyDevice_Type, t, self->device.index);
    }
    return Py_BuildValue("(O(s))", (PyObject *)&PtlPyDevice_Type, t);
}

static PyGetSetDef device_getset[] = {
    {"type", (getter)device_get_type, NULL, NULL, NULL},
    {"index", (getter)device_get_index, NULL, NULL, NULL},
    {NULL},
};

static PyMethodDef device_methods[] = {
    {"__reduce__", (PyCFunction)device_reduce, METH_NOARGS, NULL},
    {"__enter__", ptlpy_device_enter, METH_NOARGS, NULL},
    {"__exit__", ptlpy_device_exit, METH_VARARGS, NULL},
    {NULL},
};

PyTypeObject PtlPyDevice_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pytorchlite.device",
    .tp_basicsize = sizeof(PtlPyDevice),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = device_new,
    .tp_repr = (reprfunc)device_repr,
    .tp_str = (reprfunc)device_str,
    .tp_richcompare = device_richcompare,
    .tp_hash = (hashfunc)device_hash,
    .tp_getset = device_getset,
    .tp_methods = device_methods,
};

/* ---- memory_format (Note [Memory formats] in src/c10/memory_format.h) ---- */

static PtlPyMemoryFormat *memory_format_objects[PTL_MEMORY_FORMAT_COUNT];

static PyObject *
memory_format_repr(PtlPyMemoryFormat *self)
{
    return PyUnicode_FromFormat("torch.%s", ptl_memory_format_name(self->format));
}

/* pickled as the module attribute of its name, so it loads as the same object */
static PyObject *
memory_format_reduce(PtlPyMemoryFormat *self, PyObject *unused)
{
    (void)unused;
    return PyUnicode_FromString(ptl_memory_format_name(self->format));
}

static PyMethodDef memory_format_methods[] = {
    {"__reduce__", (PyCFunction)memory_format_reduce, METH_NOARGS, NULL},
    {NULL},
};

PyTypeObject PtlPyMemoryFormat_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pytorchlite.memory_format",
    .tp_basicsize = sizeof(PtlPyMemoryFormat),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_repr = (reprfunc)memory_format_repr,
    .tp_methods = memory_format_methods,
};

PyObject *
ptlpy_memory_format_object(PtlMemoryFormat f)
{
    return (PyObject *)memory_format_objects[f];
}

static int
memory_format_init(PyObject *module)
{
    if (PyType_Ready(&PtlPyMemoryFormat_Type) < 0) {
        return -1;
    }
    for (int i = 0; i < PTL_MEMORY_FORMAT_COUNT; i++) {
        PtlPyMemoryFormat *o = PyObject_New(PtlPyMemoryFormat, &PtlPyMemoryFormat_Type);
        if (o == NULL) {
            return -1;
        }
        o->format = (PtlMemoryFormat)i;
        memory_format_objects[i] = o;
        Py_INCREF(o);
        if (PyModule_AddObject(module, ptl_memory_format_name((PtlMemoryFormat)i),
                               (PyObject *)o) < 0) {
            Py_DECREF(o);
            return -1;
        }
    }
    Py_INCREF(&PtlPyMemoryFormat_Type);
    return PyModule_AddObject(module, "memory_format", (PyObject *)&PtlPyMemoryFormat_Type);
}

int
ptlpy_dtype_init_types(PyObject *module)
{
    static const struct {
        const char *alias;
        PtlDtype dt;
    } aliases[] = {
        {"float", PTL_DTYPE_FLOAT32}, {"double", PTL_DTYPE_FLOAT64}, {"half", PTL_DTYPE_FLOAT16},
        {"long", PTL_DTYPE_INT64},    {"int", PTL_DTYPE_INT32},      {"short", PTL_DTYPE_INT16},
        {"cfloat", PTL_DTYPE_COMPLEX64}, {"cdouble", PTL_DTYPE_COMPLEX128},
    };
    if (PyType_Ready(&PtlPyDtype_Type) < 0 || PyType_Ready(&PtlPyDevice_Type) < 0) {
        return -1;
    }
    for (int i = 0; i < PTL_DTYPE_COUNT; i++) {
        PtlPyDtype *o = PyObject_New(PtlPyDtype, &PtlPyDtype_Type);
        if (o == NULL) {
            return -1;
        }
        o->dtype = (PtlDtype)i;
        dtype_objects[i] = o;
        Py_INCREF(o);
        if (PyModule_AddObject(module, ptl_dtype_name((PtlDtype)i), (PyObject *)o) < 0) {
            Py_DECREF(o);
            return -1;
        }
    }
    for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++) {
        PyObject *o = (PyObject *)dtype_objects[aliases[i].dt];
        Py_INCREF(o);
        if (PyModule_AddObject(module, aliases[i].alias, o) < 0) {
            Py_DECREF(o);
            return -1;
        }
    }
    if (memory_format_init(module) < 0) {
        return -1;
    }
    Py_INCREF(&PtlPyDtype_Type);
    Py_INCREF(&PtlPyDevice_Type);
    if (PyModule_AddObject(module, "dtype", (PyObject *)&PtlPyDtype_Type) < 0 ||
        PyModule_AddObject(module, "device", (PyObject *)&PtlPyDevice_Type) < 0) {
        return -1;
    }
    return 0;
}
