/* generator.c -- pytorchlite.Generator, a Python object owning a PtlGenerator (or, for
 * pytorchlite.default_generator and the CUDA devices' default generators, borrowing a
 * process-wide one).  Mirrors torch/csrc/Generator.cpp.  The argument parser passes the
 * PtlGenerator pointer to kernels as a PTL_IV_GENERATOR (ptlpy_generator_unwrap); see Notes
 * [Philox streams] and [CUDA generators] in src/aten/generator.h. */
#include "ptlpy.h"

#include "../aten/generator.h"
#include "../aten/scalar_math.h"
#include "../cuda/cuda_api.h"

typedef struct PtlPyGenerator {
    PyObject_HEAD
    PtlGenerator *gen;
    int owned;           /* 0 for a default generator (CPU or CUDA), which lives forever */
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
    if (d.type == PTL_DEVICE_CUDA && !ptl_cuda_is_built()) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Cannot get CUDA generator without ATen_cuda library. PyTorch splits "
                        "its backend into two shared libraries: a CPU library and a CUDA "
                        "library; this error has occurred because you are trying to use some "
                        "CUDA functionality, but the CUDA library has not been loaded by the "
                        "dynamic linker for some reason.  The CUDA library MUST be loaded, "
                        "EVEN IF you don't directly use any symbols from the CUDA library! "
                        "One common culprit is a lack of -Wl,--no-as-needed in your link "
                        "arguments; many dynamic linkers will delete dynamic library "
                        "dependencies if you don't depend on any of their symbols.  You can "
                        "check if this has occurred by using ldd on your binary to see if "
                        "there is a dependency on *_cuda.so library.");
        return NULL;
    }
    if (d.type == PTL_DEVICE_CUDA) {   /* "cuda" means the current device, as in PyTorch */
        int current = d.index;
        if (ptl_cuda_lazy_init() < 0 || (d.index < 0 && ptl_cuda_current_device(&current) < 0)) {
            return ptlpy_raise();
        }
        d.index = (int8_t)current;
    }
    else if (d.type != PTL_DEVICE_CPU) {
        PyErr_Format(PyExc_RuntimeError, "%s device type not an accelerator.",
                     d.type == PTL_DEVICE_META ? "META" : ptl_device_type_name(d.type));
        return NULL;
    }
    PtlPyGenerator *self = (PtlPyGenerator *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->owned = 1;
    self->gen = ptl_generator_new(PTL_GENERATOR_DEFAULT_SEED, d);
    if (self->gen == NULL) {
        Py_DECREF(self);
        return ptlpy_raise();
    }
    return (PyObject *)self;
}

static void
generator_dealloc(PtlPyGenerator *self)
{
    if (self->owned) {
        ptl_generator_free(self->gen);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A seed: any int in [-2**63, 2**64); negative seeds wrap as in PyTorch.  0, or -1 with
 * PyTorch's error set. */
static int
seed_from(PyObject *seed, uint64_t *out)
{
    uint64_t s;
    if (!PyLong_Check(seed) || PyBool_Check(seed)) {
        PyErr_Format(PyExc_RuntimeError, "manual_seed expected a long, but got %s",
                     Py_TYPE(seed)->tp_name);
        return -1;
    }
    s = PyLong_AsUnsignedLongLong(seed);
    if (s == (uint64_t)-1 && PyErr_Occurred()) {
        long long v;
        PyErr_Clear();
        v = PyLong_AsLongLong(seed);
        if (v == -1 && PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "Overflow when unpacking long long");
            return -1;
        }
        s = (uint64_t)v;
    }
    *out = s;
    return 0;
}

/* manual_seed(seed): sets the seed and rewinds the stream. */
static PyObject *
generator_manual_seed(PtlPyGenerator *self, PyObject *seed)
{
    uint64_t s;
    if (seed_from(seed, &s) < 0) {
        return NULL;
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

/* set_state(state): the 16 bytes of get_state; a CUDA generator also takes PyTorch's
 * 8-byte form, a seed alone (offset 0), and PyTorch's CUDA message for other sizes. */
static PyObject *
generator_set_state(PtlPyGenerator *self, PyObject *state)
{
    uint8_t bytes[PTL_GENERATOR_STATE_SIZE] = {0};
    if (!PtlPyTensor_Check(state) || PTLPY_IMPL(state)->dtype != PTL_DTYPE_UINT8 ||
        PTLPY_IMPL(state)->device.type != PTL_DEVICE_CPU) {   /* PyTorch's check_rng_state */
        PyErr_SetString(PyExc_TypeError, "RNG state must be a torch.ByteTensor");
        return NULL;
    }
    PtlTensorImpl *t = PTLPY_IMPL(state);
    if (self->gen->device.type == PTL_DEVICE_CUDA) {
        if (t->numel != PTL_GENERATOR_STATE_SIZE && t->numel != PTL_GENERATOR_STATE_SIZE / 2) {
            PyErr_SetString(PyExc_RuntimeError, "RNG state is wrong size");
            return NULL;
        }
    }
    else if (t->numel != PTL_GENERATOR_STATE_SIZE) {
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
    memcpy(bytes, ptl_tensor_data(c), (size_t)t->numel);
    ptl_decref(c);
    ptl_generator_set_state(self->gen, bytes);
    Py_INCREF(self);
    return (PyObject *)self;
}

static PyObject *
generator_get_device(PtlPyGenerator *self, void *c)
{
    (void)c;
    return ptlpy_device_object(self->gen->device);
}

static PyObject *
generator_repr(PtlPyGenerator *self)
{
    PtlDevice d = self->gen->device;
    if (d.type == PTL_DEVICE_CUDA) {
        return PyUnicode_FromFormat("<pytorchlite.Generator object (Philox4x32-10, cuda:%d)>",
                                    (int)d.index);
    }
    return PyUnicode_FromString("<pytorchlite.Generator object (Philox4x32-10, cpu)>");
}

/* _graph_capture_prologue(state): a CUDA graph starts capturing this generator's launches,
 * which read seed and base offset from state, a contiguous int64 tensor of two elements
 * that the graph keeps alive (Note [Graph-safe Philox] in src/aten/philox.h). */
static PyObject *
generator_graph_capture_prologue(PtlPyGenerator *self, PyObject *state)
{
    if (!PtlPyTensor_Check(state) || PTLPY_IMPL(state)->dtype != PTL_DTYPE_INT64 ||
        PTLPY_IMPL(state)->numel != 2 || !ptl_tensor_is_contiguous(PTLPY_IMPL(state))) {
        PyErr_SetString(PyExc_TypeError, "the graph's generator state is a contiguous int64 "
                                         "tensor of two elements");
        return NULL;
    }
    if (self->gen->device.type != PTL_DEVICE_CUDA) {   /* the CPU kernels read no pointer */
        PyErr_SetString(PyExc_RuntimeError, "only a CUDA generator can be captured in a CUDA "
                                            "graph");
        return NULL;
    }
    const uint64_t *p = (const uint64_t *)ptl_tensor_data(PTLPY_IMPL(state));
    if (ptl_generator_capture_prologue(self->gen, p, p + 1) < 0) {
        return ptlpy_raise();
    }
    Py_RETURN_NONE;
}

/* _graph_capture_epilogue() -> int: the counters the captured launches reserve in all. */
static PyObject *
generator_graph_capture_epilogue(PtlPyGenerator *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromUnsignedLongLong(ptl_generator_capture_epilogue(self->gen));
}

/* _graph_replay_prologue(increment) -> (seed, offset): what a replay writes to its state
 * tensor; the generator advances by increment. */
static PyObject *
generator_graph_replay_prologue(PtlPyGenerator *self, PyObject *arg)
{
    uint64_t seed, offset;
    unsigned long long increment = PyLong_AsUnsignedLongLong(arg);
    if (increment == (unsigned long long)-1 && PyErr_Occurred()) {
        return NULL;
    }
    ptl_generator_replay_prologue(self->gen, increment, &seed, &offset);
    return Py_BuildValue("(KK)", (unsigned long long)seed, (unsigned long long)offset);
}

static PyMethodDef generator_methods[] = {
    {"_graph_capture_prologue", (PyCFunction)generator_graph_capture_prologue, METH_O, NULL},
    {"_graph_capture_epilogue", (PyCFunction)generator_graph_capture_epilogue, METH_NOARGS,
     NULL},
    {"_graph_replay_prologue", (PyCFunction)generator_graph_replay_prologue, METH_O, NULL},
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
    .tp_doc = "Generator(device='cpu'): a Philox4x32-10 random number generator (device "
              "'cuda' or 'cuda:N': one that CUDA kernels draw from)",
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

/* A new wrapper borrowing the process-wide generator g. */
static PyObject *
wrap_default(PtlGenerator *g)
{
    PtlPyGenerator *w = PyObject_New(PtlPyGenerator, &PtlPyGenerator_Type);
    if (w != NULL) {
        w->gen = g;
        w->owned = 0;
    }
    return (PyObject *)w;
}

/* _C._cuda_default_generator(index): a new wrapper of CUDA device index's default
 * generator, which exists whether or not CUDA is initialised (Note [CUDA generators]);
 * pytorchlite.cuda keeps one wrapper per device. */
static PyObject *
py_cuda_default_generator(PyObject *m, PyObject *arg)
{
    (void)m;
    long index = PyLong_AsLong(arg);
    if (index == -1 && PyErr_Occurred()) {
        return NULL;
    }
    PtlGenerator *g = ptl_cuda_default_generator(index < INT_MIN ? INT_MIN : (int)index);
    if (g == NULL) {
        return ptlpy_raise();
    }
    return wrap_default(g);
}

/* _C._cuda_manual_seed_all(seed): seeds every CUDA device's default generator (all
 * PTL_GENERATOR_MAX_CUDA_DEVICES of them, so a device's stream never depends on whether
 * CUDA was initialised when torch.manual_seed ran). */
static PyObject *
py_cuda_manual_seed_all(PyObject *m, PyObject *seed)
{
    (void)m;
    uint64_t s;
    if (seed_from(seed, &s) < 0) {
        return NULL;
    }
    for (int i = 0; i < PTL_GENERATOR_MAX_CUDA_DEVICES; i++) {
        ptl_generator_set_seed(ptl_cuda_default_generator(i), s);
    }
    Py_RETURN_NONE;
}

/* _C._box_muller_formulas_for_testing(x: float64 buffer) -> bytes of 3 n float64: the
 * float64 Box-Muller's scalar formulas (Note [Scalar twins of vector formulas]) on each
 * x, log(x) (x positive and normal) then sin(2 pi x) then cos(2 pi x), so that tests can
 * check their accuracy on dense grids (the vector twins give the same bits: randn) */
static PyObject *
py_box_muller_formulas_for_testing(PyObject *m, PyObject *arg)
{
    (void)m;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_C_CONTIGUOUS) < 0) {
        return NULL;
    }
    Py_ssize_t n = view.len / (Py_ssize_t)sizeof(double);
    PyObject *out = PyBytes_FromStringAndSize(NULL, 3 * n * (Py_ssize_t)sizeof(double));
    if (out != NULL) {
        const double *x = view.buf;
        double *y = (double *)PyBytes_AS_STRING(out);
        for (Py_ssize_t i = 0; i < n; i++) {
            y[i] = ptl_log_normal(x[i]);
            ptl_sincos2pi(x[i], &y[n + i], &y[2 * n + i]);
        }
    }
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef generator_functions[] = {
    {"_cuda_default_generator", py_cuda_default_generator, METH_O, NULL},
    {"_cuda_manual_seed_all", py_cuda_manual_seed_all, METH_O, NULL},
    {"_box_muller_formulas_for_testing", py_box_muller_formulas_for_testing, METH_O, NULL},
    {NULL},
};

int
ptlpy_generator_init(PyObject *module)
{
    PyObject *dflt;
    if (PyType_Ready(&PtlPyGenerator_Type) < 0 ||
        PyModule_AddFunctions(module, generator_functions) < 0) {
        return -1;
    }
    Py_INCREF(&PtlPyGenerator_Type);
    if (PyModule_AddObject(module, "Generator", (PyObject *)&PtlPyGenerator_Type) < 0) {
        Py_DECREF(&PtlPyGenerator_Type);
        return -1;
    }
    if ((dflt = wrap_default(ptl_default_generator())) == NULL) {
        return -1;
    }
    if (PyModule_AddObject(module, "default_generator", dflt) < 0) {
        Py_DECREF(dflt);
        return -1;
    }
    return 0;
}
