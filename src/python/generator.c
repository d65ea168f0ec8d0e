/* generator.c -- pytorchlite.Generator, a Python object owning a PtlGenerator (or, for
 * pytorchlite.default_generator, borrowing the process-wide one).  Mirrors
 * torch/csrc/Generator.cpp.  The argument parser passes the PtlGenerator pointer to kernels
 * as a PTL_IV_GENERATOR (ptlpy_generator_unwrap); see Note [Philox streams]. */
#include "ptlpy.h"

#include "../aten/generator.h"

typedef struct PtlPyGenerator {
    PyObject_HEAD
    PtlGenerator *gen;   /* owned unless it is the default generator */
} PtlPyGenerator;

static PyTypeObject PtlPyGenerator_Type;

static PyObject *
generator_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"device", NULL};
    PyObject *device = NULL;
    PtlDevice d = ptl_device_cpu();
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:Generator", kwlist, &device)) {
        return NULL;
    }
    if (device != NULL && device != Py_None && ptlpy_parse_device(device, &d, 1) < 0) {
        return NULL;
    }
    if (d.type != PTL_DEVICE_CPU) {
        PyErr_SetString(PyExc_RuntimeError,
                        "pytorchlite.Generator only supports the CPU device");
        return NULL;
    }
    PtlPyGenerator *self = (PtlPyGenerator *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->gen = ptl_generator_new(PTL_GENERATOR_DEFAULT_SEED);
    if (self->gen == NULL) {
        Py_DECREF(self);
        return ptlpy_raise();
    }
    return (PyObject *)self;
}

static void
generator_dealloc(PtlPyGenerator *self)
{
    ptl_generator_free(self->gen);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* manual_seed(seed): any int in [-2**63, 2**64); negative seeds wrap as in PyTorch. */
static PyObject *
generator_manual_seed(PtlPyGenerator *self, PyObject *seed)
{
    uint64_t s;
    if (!PyLong_Check(seed) || PyBool_Check(seed)) {
        PyErr_Format(PyExc_RuntimeError, "manual_seed expected a long, but got %s",
                     Py_TYPE(seed)->tp_name);
        return NULL;
    }
    s = PyLong_AsUnsignedLongLong(seed);
    if (s == (uint64_t)-1 && PyErr_Occurred()) {
        long long v;
        PyErr_Clear();
        v = PyLong_AsLongLong(seed);
        if (v == -1 && PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "Overflow when unpacking long long");
            return NULL;
        }
        s = (uint64_t)v;
    }
    ptl_generator_set_seed(self->gen, s);
    Py_INCREF(self);
    return (PyObject *)self;
}

static PyObject *
generator_seed(PtlPyGenerator *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromUnsignedLongLong(ptl_generator_seed_random(self->gen));
}

static PyObject *
generator_initial_seed(PtlPyGenerator *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromUnsignedLongLong(ptl_generator_initial_seed(self->gen));
}

/* get_state(): a new uint8 tensor of PTL_GENERATOR_STATE_SIZE bytes (seed, offset). */
static PyObject *
generator_get_state(PtlPyGenerator *self, PyObject *unused)
{
    int64_t n = PTL_GENERATOR_STATE_SIZE;
    (void)unused;
    PtlTensorImpl *t = ptl_empty(1, &n, PTL_DTYPE_UINT8, ptl_device_cpu());
    if (t == NULL) {
        return ptlpy_raise();
    }
    ptl_generator_get_state(self->gen, (uint8_t *)ptl_tensor_data(t));
    return ptlpy_wrap(t);
}

static PyObject *
generator_set_state(PtlPyGenerator *self, PyObject *state)
{
    if (!PtlPyTensor_Check(state) || PTLPY_IMPL(state)->dtype != PTL_DTYPE_UINT8) {
        PyErr_SetString(PyExc_TypeError, "RNG state must be a torch.ByteTensor");
        return NULL;
    }
    PtlTensorImpl *t = PTLPY_IMPL(state);
    if (t->numel != PTL_GENERATOR_STATE_SIZE) {
        PyErr_Format(PyExc_RuntimeError,
                     "Expected a PhiloxGeneratorState of size %d but found the input RNG "
                     "state size to be %lld",
                     PTL_GENERATOR_STATE_SIZE, (long long)t->numel);
        return NULL;
    }
    PtlTensorImpl *c = ptl_contiguous(t);
    if (c == NULL) {
        return ptlpy_raise();
    }
    ptl_generator_set_state(self->gen, (const uint8_t *)ptl_tensor_data(c));
    ptl_decref(c);
    Py_INCREF(self);
    return (PyObject *)self;
}

static PyObject *
generator_get_device(PtlPyGenerator *self, void *c)
{
    (void)self;
    (void)c;
    return ptlpy_device_object(ptl_device_cpu());
}

static PyObject *
generator_repr(PtlPyGenerator *self)
{
    (void)self;
    return PyUnicode_FromString("<pytorchlite.Generator object (Philox4x32-10, cpu)>");
}

static PyMethodDef generator_methods[] = {
    {"manual_seed", (PyCFunction)generator_manual_seed, METH_O,
     "manual_seed(seed) -> Generator: sets the seed and rewinds the stream"},
    {"seed", (PyCFunction)generator_seed, METH_NOARGS,
     "seed() -> int: seeds from the operating system's entropy"},
    {"initial_seed", (PyCFunction)generator_initial_seed, METH_NOARGS, NULL},
    {"get_state", (PyCFunction)generator_get_state, METH_NOARGS,
     "get_state() -> uint8 Tensor (seed and offset, 16 bytes)"},
    {"set_state", (PyCFunction)generator_set_state, METH_O, "set_state(uint8 Tensor)"},
    {NULL},
};

static PyGetSetDef generator_getset[] = {
    {"device", (getter)generator_get_device, NULL, NULL, NULL},
    {NULL},
};

static PyTypeObject PtlPyGenerator_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pytorchlite.Generator",
    .tp_basicsize = sizeof(PtlPyGenerator),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Generator(device='cpu'): a Philox4x32-10 random number generator",
    .tp_new = generator_new,
    .tp_dealloc = (destructor)generator_dealloc,
    .tp_repr = (reprfunc)generator_repr,
    .tp_methods = generator_methods,
    .tp_getset = generator_getset,
};

int
ptlpy_generator_unwrap(PyObject *o, PtlIValue *out)
{
    if (!PyObject_TypeCheck(o, &PtlPyGenerator_Type)) {
        return 0;
    }
    out->tag = PTL_IV_GENERATOR;
    out->owned = 0;
    out->u.p = ((PtlPyGenerator *)o)->gen;
    return 1;
}

int
ptlpy_generator_init(PyObject *module)
{
    PtlPyGenerator *dflt;
    if (PyType_Ready(&PtlPyGenerator_Type) < 0) {
        return -1;
    }
    Py_INCREF(&PtlPyGenerator_Type);
    if (PyModule_AddObject(module, "Generator", (PyObject *)&PtlPyGenerator_Type) < 0) {
        Py_DECREF(&PtlPyGenerator_Type);
        return -1;
    }
    dflt = PyObject_New(PtlPyGenerator, &PtlPyGenerator_Type);
    if (dflt == NULL) {
        return -1;
    }
    dflt->gen = ptl_default_generator();
    if (PyModule_AddObject(module, "default_generator", (PyObject *)dflt) < 0) {
        Py_DECREF(dflt);
        return -1;
    }
    return 0;
}
