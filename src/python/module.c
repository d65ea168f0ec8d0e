/* module.c -- PyInit__C: builds the operator table, registers every kernel, creates the
 * Python types and the module-level functions.  Mirrors torch/csrc/Module.cpp. */
#include "ptlpy.h"

#include <stdlib.h>
#include <string.h>

#include "../aten/autocast.h"
#include "../aten/native/conv_impl.h"
#include "../c10/allocator.h"
#include "../c10/cpu_features.h"
#include "../c10/fpu.h"
#include "../c10/debug_counts.h"
#include "../c10/parallel.h"
#include "../c10/parallel_counts.h"
#include "../c10/tls.h"
#include "../cuda/cuda_api.h"

#define PTL_KERNEL_FILE(NAME) int ptl_register_##NAME(void);
#include "../aten/native/native.def"
#undef PTL_KERNEL_FILE

static int (*const kernel_files[])(void) = {
#define PTL_KERNEL_FILE(NAME) ptl_register_##NAME,
#include "../aten/native/native.def"
#undef PTL_KERNEL_FILE
};

PyObject *ptlpy_as_tensor(PyObject *module, PyObject *args, PyObject *kwargs);

/* Note [GIL release] hooks: only release when this thread holds the GIL. */
static void *
gil_release(void)
{
    if (!PyGILState_Check()) {
        return NULL;
    }
    return PyEval_SaveThread();
}

static void
gil_acquire(void *token)
{
    PyEval_RestoreThread((PyThreadState *)token);
}

static PyObject *
py_set_tensor_class(PyObject *m, PyObject *cls)
{
    (void)m;
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &PtlPyTensorBase_Type)) {
        PyErr_SetString(PyExc_TypeError, "expected a subclass of TensorBase");
        return NULL;
    }
    PyTypeObject *t = (PyTypeObject *)cls;
    /* The hot path (ARCHITECTURE; Note [Tensor GC] in tensor_object.c): a subclass that adds
     * no __dict__ and no slots but __weakref__ holds no Python references of its own, so
     * TensorBase's dealloc (which clears weak references) serves it, without
     * subtype_dealloc's GC bookkeeping. */
    Py_ssize_t weaklist = t->tp_weaklistoffset ? (Py_ssize_t)sizeof(PyObject *) : 0;
    if (t->tp_dictoffset == 0 &&
        t->tp_basicsize == PtlPyTensorBase_Type.tp_basicsize + weaklist) {
        t->tp_dealloc = PtlPyTensorBase_Type.tp_dealloc;
        PyType_Modified(t);
    }
    Py_INCREF(cls);
    ptlpy_tensor_class = t;
    Py_RETURN_NONE;
}

static PyObject *
py_get_num_threads(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyLong_FromLong(ptl_get_num_threads());
}

/* _conv_winograd_mode(mode) -> the old mode: 0 automatic (the measured crossover), 1 every
 * convolution that fits, 2 never (Note [Winograd convolution]); tests force 1 and 2. */
static PyObject *
py_conv_winograd_mode(PyObject *m, PyObject *arg)
{
    (void)m;
    long mode = PyLong_Check(arg) ? PyLong_AsLong(arg) : -1;
    if (mode < CONV_WINOGRAD_AUTO || mode > CONV_WINOGRAD_NEVER) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError, "_conv_winograd_mode expects 0, 1 or 2");
        return NULL;
    }
    return PyLong_FromLong(conv_winograd_set_mode((int)mode));
}

static PyObject *
py_set_num_threads(PyObject *m, PyObject *arg)
{
    (void)m;
    if (!PyLong_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "set_num_threads expects an int");
        return NULL;
    }
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (ptl_set_num_threads((int)(n > 1 << 20 ? 1 << 20 : n)) < 0) {
        return ptlpy_raise();
    }
    Py_RETURN_NONE;
}

/* set_flush_denormal(mode) -> bool: flush denormals to zero on the calling thread (see
 * pytorchlite/_settings.py's set_flush_denormal). */
static PyObject *
py_set_flush_denormal(PyObject *m, PyObject *arg)
{
    (void)m;
    int on = PyObject_IsTrue(arg);
    if (on < 0) {
        return NULL;
    }
    return PyBool_FromLong(ptl_fpu_set_flush_denormal(on));
}

static PyObject *
py_get_default_dtype(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    PyObject *o = ptlpy_dtype_object(ptl_default_dtype());
    Py_INCREF(o);
    return o;
}

static PyObject *
py_set_default_dtype(PyObject *m, PyObject *arg)
{
    (void)m;
    PtlDtype dt = ptlpy_parse_dtype(arg, 1);
    if (dt == PTL_DTYPE_UNDEFINED) {
        return NULL;
    }
    if (!ptl_dtype_is_floating(dt)) {
        PyErr_Format(PyExc_TypeError,
                     "only floating-point types are supported as the default type");
        return NULL;
    }
    ptl_set_default_dtype(dt);
    Py_RETURN_NONE;
}

static PyObject *
py_promote_types(PyObject *m, PyObject *args)
{
    PyObject *a, *b;
    (void)m;
    if (!PyArg_ParseTuple(args, "OO:promote_types", &a, &b)) {
        return NULL;
    }
    PtlDtype da = ptlpy_parse_dtype(a, 1), db;
    if (da == PTL_DTYPE_UNDEFINED || (db = ptlpy_parse_dtype(b, 1)) == PTL_DTYPE_UNDEFINED) {
        return NULL;
    }
    PyObject *o = ptlpy_dtype_object(ptl_promote_types(da, db));
    Py_INCREF(o);
    return o;
}

static PyObject *
py_can_cast(PyObject *m, PyObject *args)
{
    PyObject *a, *b;
    (void)m;
    if (!PyArg_ParseTuple(args, "OO:can_cast", &a, &b)) {
        return NULL;
    }
    PtlDtype da = ptlpy_parse_dtype(a, 1), db;
    if (da == PTL_DTYPE_UNDEFINED || (db = ptlpy_parse_dtype(b, 1)) == PTL_DTYPE_UNDEFINED) {
        return NULL;
    }
    return PyBool_FromLong(ptl_can_cast(da, db));
}

/* result_type(tensor or number, tensor or number) */
static PyObject *
py_result_type(PyObject *m, PyObject *args)
{
    PyObject *a, *b;
    (void)m;
    if (!PyArg_ParseTuple(args, "OO:result_type", &a, &b)) {
        return NULL;
    }
    PtlTensorImpl *ts[2] = {ptlpy_to_impl(a), NULL};
    if (ts[0] == NULL || (ts[1] = ptlpy_to_impl(b)) == NULL) {
        if (ts[0]) {
            ptl_decref(ts[0]);
        }
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "result_type expects tensors or numbers");
        }
        return NULL;
    }
    if (!PtlPyTensor_Check(a) && !PtlPyTensor_Check(b)) {
        /* two numbers: treat the first as a tensor, as PyTorch's scalar_tensor would */
        ts[0]->flags &= ~(uint32_t)PTL_TF_WRAPPED_NUMBER;
        if (ts[0]->dtype == PTL_DTYPE_FLOAT64) {
            PtlTensorImpl *c = ptl_cast(ts[0], ptl_default_dtype());
            ptl_decref(ts[0]);
            ts[0] = c;
        }
    }
    PtlDtype r = ptl_result_type(ts, 2);
    ptl_decref(ts[0]);
    ptl_decref(ts[1]);
    PyObject *o = ptlpy_dtype_object(r);
    Py_INCREF(o);
    return o;
}

/* _dispatch_dump("aten::add.Tensor") -> str listing the kernel registered per key */
static PyObject *
py_dispatch_dump(PyObject *m, PyObject *arg)
{
    (void)m;
    const char *name = PyUnicode_AsUTF8(arg);
    if (name == NULL) {
        return NULL;
    }
    const PtlOperator *op = ptl_dispatcher_find(name, NULL);
    if (op == NULL) {
        PyErr_Format(PyExc_RuntimeError, "no operator named '%s' (write it as 'aten::add.Tensor')",
                     name);
        return NULL;
    }
    char buf[4096], sch[1024];
    int off;
    ptl_schema_format(&op->schema, sch, sizeof(sch));
    off = snprintf(buf, sizeof(buf), "name: %s%s%s\nschema: %s\n", op->schema.name,
                   op->schema.overload[0] ? "." : "", op->schema.overload, sch);
    for (int k = PTL_KEY_COUNT - 1; k >= 0 && off < (int)sizeof(buf); k--) {
        const char *what = op->kernels[k] ? "kernel" : ptl_dispatcher_fallback(k) ? "fallback"
                                                                                   : NULL;
        if (what == NULL) {
            continue;
        }
        off += snprintf(buf + off, sizeof(buf) - (size_t)off, "%s: %s%s%s%s  [calls: %llu]\n",
                        ptl_dispatch_key_name((PtlDispatchKey)k), what,
                        op->kernels[k] ? " registered at " : "",
                        op->kernels[k] ? op->kernel_origin[k] : "",
                        "", (unsigned long long)op->calls[k]);
    }
    return PyUnicode_FromString(buf);
}

static PyObject *
py_dispatch_trace(PyObject *m, PyObject *arg)
{
    (void)m;
    PtlLocalState *tls = ptl_tls();
    int old = tls->trace_dispatch;
    int on = PyObject_IsTrue(arg);
    if (on < 0) {
        return NULL;
    }
    tls->trace_dispatch = on;
    return PyBool_FromLong(old);
}

/* {"aten::add.Tensor": {"CPU": 3, ...}, ...} for ops that ran since the last reset */
static PyObject *
py_dispatch_stats(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    PyObject *d = PyDict_New();
    for (int i = 0; d != NULL && i < ptl_dispatcher_num_ops(); i++) {
        const PtlOperator *op = ptl_dispatcher_op_at(i);
        PyObject *per = NULL;
        for (int k = 0; k < PTL_KEY_COUNT; k++) {
            if (op->calls[k] == 0) {
                continue;
            }
            if (per == NULL && (per = PyDict_New()) == NULL) {
                Py_CLEAR(d);
                return NULL;
            }
            PyObject *v = PyLong_FromUnsignedLongLong(op->calls[k]);
            PyDict_SetItemString(per, ptl_dispatch_key_name((PtlDispatchKey)k), v);
            Py_XDECREF(v);
        }
        if (per != NULL) {
            char name[128];
            snprintf(name, sizeof(name), "%s%s%s", op->schema.name, op->schema.overload[0] ? "." : "",
                     op->schema.overload);
            PyDict_SetItemString(d, name, per);
            Py_DECREF(per);
        }
    }
    return d;
}

static PyObject *
py_dispatch_reset_stats(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    ptl_dispatcher_reset_stats();
    Py_RETURN_NONE;
}

static PyObject *
py_schemas(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    PyObject *list = PyList_New(0);
    for (int i = 0; list != NULL && i < ptl_dispatcher_num_ops(); i++) {
        const PtlOperator *op = ptl_dispatcher_op_at(i);
        char buf[1024];
        if (op->schema.name[0] == '\0') {   /* removed (ptl_dispatcher_remove_op) */
            continue;
        }
        ptl_schema_format(&op->schema, buf, sizeof(buf));
        PyObject *keys = PyList_New(0);
        for (int k = 0; keys != NULL && k < PTL_KEY_COUNT; k++) {
            if (op->kernels[k]) {
                PyObject *s = PyUnicode_FromString(ptl_dispatch_key_name((PtlDispatchKey)k));
                PyList_Append(keys, s);
                Py_XDECREF(s);
            }
        }
        PyObject *item = Py_BuildValue("{s:s,s:N,s:I}", "schema", buf, "kernels", keys, "flags",
                                       op->flags);
        if (item == NULL || PyList_Append(list, item) < 0) {
            Py_XDECREF(item);
            Py_CLEAR(list);
            break;
        }
        Py_DECREF(item);
    }
    return list;
}

/* _parse_schema(text) -> canonical text; for the schema parser's tests */
static PyObject *
py_parse_schema(PyObject *m, PyObject *arg)
{
    (void)m;
    const char *text = PyUnicode_AsUTF8(arg);
    PtlSchema s;
    char buf[2048];
    if (text == NULL) {
        return NULL;
    }
    if (ptl_schema_parse(text, &s) < 0) {
        return ptlpy_raise();
    }
    ptl_schema_format(&s, buf, sizeof(buf));
    return PyUnicode_FromString(buf);
}

/* _register_op(schema): declares an operator with no kernel; calls to it raise the no-kernel
 * error (tests of the dispatcher's error paths) */
static PyObject *
py_register_op(PyObject *m, PyObject *arg)
{
    (void)m;
    const char *text = PyUnicode_AsUTF8(arg);
    if (text == NULL) {
        return NULL;
    }
    if (ptl_dispatcher_add_op(text, PTL_OPF_FUNCTION) == NULL) {
        return ptlpy_raise();
    }
    Py_RETURN_NONE;
}

static PyObject *
py_live_counts(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return Py_BuildValue("{s:L,s:L,s:L}", "TensorImpl",
                         (long long)atomic_load(&ptl_live_counts[PTL_COUNT_TENSOR_IMPL]),
                         "Storage", (long long)atomic_load(&ptl_live_counts[PTL_COUNT_STORAGE]),
                         "Node", (long long)atomic_load(&ptl_live_counts[PTL_COUNT_NODE]));
}

static PyObject *
py_pool_counts(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    PtlPoolCounts c;
    ptl_parallel_pool_counts(&c);
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L}", "jobs", (long long)c.jobs, "long_spins",
                         (long long)c.long_spins, "worker_sleeps",
                         (long long)c.worker_sleeps, "caller_sleeps", (long long)c.caller_sleeps,
                         "chunks_by_caller", (long long)c.chunks_by_caller, "spins_lost",
                         (long long)c.spins_lost, "workers", (long long)c.workers,
                         "workers_asleep", (long long)c.workers_asleep);
}

static PyObject *
py_alloc_stats(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    PtlCpuAllocStats s = ptl_cpu_alloc_stats();
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:O}", "allocated_bytes",
                         (long long)s.allocated_bytes, "cached_bytes", (long long)s.cached_bytes,
                         "alloc_count", (long long)s.alloc_count, "cache_hits",
                         (long long)s.cache_hits, "caching", s.caching ? Py_True : Py_False);
}

static PyObject *
py_empty_cache(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    ptl_cpu_alloc_empty_cache();
    Py_RETURN_NONE;
}

static PyObject *
py_fail_alloc_after(PyObject *m, PyObject *arg)
{
    (void)m;
    long long n = PyLong_AsLongLong(arg);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    ptl_cpu_alloc_fail_after(n);
    Py_RETURN_NONE;
}

static PyObject *
py_config(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
#if defined(__clang__)
    const char *compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
    const char *compiler = "gcc " __VERSION__;
#else
    const char *compiler = "unknown";
#endif
    return Py_BuildValue("{s:s,s:s,s:i,s:O,s:O,s:i,s:s,s:i,s:O,s:O}", "compiler", compiler,
                         "cpu_capability", ptl_cpu_capability_name(ptl_cpu_capability()),
                         "num_threads", ptl_get_num_threads(), "cuda_built",
                         ptl_cuda_is_built() ? Py_True : Py_False, "cuda_available",
                         ptl_cuda_is_available() ? Py_True : Py_False, "cuda_device_count",
                         ptl_cuda_device_count(), "cuda_unavailable_reason",
                         ptl_cuda_unavailable_reason(), "cuda_runtime_version",
                         ptl_cuda_runtime_version(), "debug",
#ifdef PTL_DEBUG
                         Py_True,
#else
                         Py_False,
#endif
                         "sanitize",
#ifdef PTL_SANITIZE
                         Py_True
#else
                         Py_False
#endif
    );
}

/* Note [CUDA availability] (src/cuda/lazy_init.c): the devices pytorchlite can use, so 0
 * without a CUDA backend even where a GPU is visible. */
static PyObject *
py_cuda_device_count(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyLong_FromLong(ptl_cuda_is_available() ? ptl_cuda_device_count() : 0);
}

static PyObject *
py_cuda_is_available(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyBool_FromLong(ptl_cuda_is_available());
}

/* torch.autocast's per-thread state for device_type "cpu" or "cuda" (Note [Autocast]);
 * pytorchlite/amp checks the device type first.  Returns -1 with a Python error for others. */
static int
autocast_device(const char *device_type)
{
    if (strcmp(device_type, "cpu") == 0 || strcmp(device_type, "cuda") == 0) {
        return device_type[1] == 'p' ? PTL_DEVICE_CPU : PTL_DEVICE_CUDA;
    }
    PyErr_Format(PyExc_RuntimeError, "autocast is not supported for device type '%s'",
                 device_type);
    return -1;
}

/* _autocast_state(device_type) -> (enabled, dtype) */
static PyObject *
py_autocast_state(PyObject *m, PyObject *arg)
{
    (void)m;
    const char *name = PyUnicode_AsUTF8(arg);
    int dev = name != NULL ? autocast_device(name) : -1;
    if (dev < 0) {
        return NULL;
    }
    const PtlLocalState *tls = ptl_tls();
    int on = dev == PTL_DEVICE_CPU ? (tls->included & PTL_KEYSET(PTL_KEY_AUTOCAST_CPU)) != 0
                                   : tls->autocast_cuda_enabled;
    PtlDtype dt = dev == PTL_DEVICE_CPU ? tls->autocast_cpu_dtype : tls->autocast_cuda_dtype;
    return Py_BuildValue("(OO)", on ? Py_True : Py_False, ptlpy_dtype_object(dt));
}

/* _set_autocast_state(device_type, enabled, dtype) */
static PyObject *
py_set_autocast_state(PyObject *m, PyObject *args)
{
    (void)m;
    const char *name;
    int on;
    PyObject *dtype_o;
    if (!PyArg_ParseTuple(args, "spO:_set_autocast_state", &name, &on, &dtype_o)) {
        return NULL;
    }
    int dev = autocast_device(name);
    PtlDtype dt = dev < 0 ? PTL_DTYPE_UNDEFINED : ptlpy_parse_dtype(dtype_o, 1);
    if (dt == PTL_DTYPE_UNDEFINED) {
        return NULL;
    }
    PtlLocalState *tls = ptl_tls();
    if (dev == PTL_DEVICE_CPU) {
        tls->included = on ? tls->included | PTL_KEYSET(PTL_KEY_AUTOCAST_CPU)
                           : tls->included & ~PTL_KEYSET(PTL_KEY_AUTOCAST_CPU);
        tls->autocast_cpu_dtype = dt;
    }
    else {
        tls->autocast_cuda_enabled = on;
        tls->autocast_cuda_dtype = dt;
    }
    Py_RETURN_NONE;
}

/* _suggest_memory_format(tensor): the format its strides suggest (Note [Memory formats]) */
static PyObject *
py_suggest_memory_format(PyObject *m, PyObject *arg)
{
    (void)m;
    PyObject *o;
    if (!PtlPyTensor_Check(arg)) {
        return PyErr_Format(PyExc_TypeError, "_suggest_memory_format(): expected a Tensor, "
                            "not %s", Py_TYPE(arg)->tp_name);
    }
    o = ptlpy_memory_format_object(ptl_tensor_impl_suggest_memory_format(PTLPY_IMPL(arg)));
    Py_INCREF(o);
    return o;
}

static PyMethodDef module_methods[] = {
    {"tensor", (PyCFunction)(void (*)(void))ptlpy_tensor_new, METH_VARARGS | METH_KEYWORDS,
     "tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False)"},
    {"as_tensor", (PyCFunction)(void (*)(void))ptlpy_as_tensor, METH_VARARGS | METH_KEYWORDS,
     "as_tensor(data, dtype=None, device=None)"},
    {"from_numpy", ptlpy_from_numpy, METH_O, "from_numpy(ndarray): shares the array's memory"},
    {"set_default_device", ptlpy_set_default_device, METH_O,
     "set_default_device(device): the device of factory calls without one (None: the CPU)"},
    {"get_default_device", ptlpy_get_default_device, METH_NOARGS,
     "get_default_device() -> device"},
    {"_to_dlpack", ptlpy_to_dlpack, METH_VARARGS, "_to_dlpack(tensor, versioned=False)"},
    {"_from_dlpack", ptlpy_from_dlpack, METH_O, "_from_dlpack(capsule) -> Tensor"},
    {"_tensor_bytes", ptlpy_tensor_bytes, METH_O, "the elements as bytes, row-major"},
    {"_tensor_from_bytes", ptlpy_tensor_from_bytes, METH_VARARGS, "inverse of _tensor_bytes"},
    {"_set_tensor_class", py_set_tensor_class, METH_O, NULL},
    {"_suggest_memory_format", py_suggest_memory_format, METH_O, NULL},
    {"get_num_threads", py_get_num_threads, METH_NOARGS, NULL},
    {"set_num_threads", py_set_num_threads, METH_O, NULL},
    {"_set_flush_denormal", py_set_flush_denormal, METH_O, NULL},
    {"_conv_winograd_mode", py_conv_winograd_mode, METH_O, NULL},
    {"get_default_dtype", py_get_default_dtype, METH_NOARGS, NULL},
    {"set_default_dtype", py_set_default_dtype, METH_O, NULL},
    {"promote_types", py_promote_types, METH_VARARGS, NULL},
    {"can_cast", py_can_cast, METH_VARARGS, NULL},
    {"result_type", py_result_type, METH_VARARGS, NULL},
    {"_dispatch_dump", py_dispatch_dump, METH_O, "the kernel registered for each dispatch key"},
    {"_dispatch_trace", py_dispatch_trace, METH_O, "turn the dispatch trace on/off; returns the old state"},
    {"_dispatch_stats", py_dispatch_stats, METH_NOARGS, "calls per operator and dispatch key"},
    {"_dispatch_reset_stats", py_dispatch_reset_stats, METH_NOARGS, NULL},
    {"_schemas", py_schemas, METH_NOARGS, "every operator: schema, keys with kernels, flags"},
    {"_parse_schema", py_parse_schema, METH_O, NULL},
    {"_register_op", py_register_op, METH_O, "declare an operator from its schema"},
    {"_live_counts", py_live_counts, METH_NOARGS, NULL},
    {"_pool_counts", py_pool_counts, METH_NOARGS, NULL},
    {"_alloc_stats", py_alloc_stats, METH_NOARGS, NULL},
    {"_empty_cache", py_empty_cache, METH_NOARGS, NULL},
    {"_fail_alloc_after", py_fail_alloc_after, METH_O, NULL},
    {"_config", py_config, METH_NOARGS, NULL},
    {"_cuda_device_count", py_cuda_device_count, METH_NOARGS, NULL},
    {"_cuda_is_available", py_cuda_is_available, METH_NOARGS, NULL},
    {"_share_memory_", ptlpy_share_memory, METH_O, "moves a tensor's storage to shared memory"},
    {"_is_shared", ptlpy_is_shared, METH_O, NULL},
    {"_shared_fd", ptlpy_shared_fd, METH_O, "(fd, nbytes) of a shared tensor's segment"},
    {"_tensor_from_shared_fd", ptlpy_tensor_from_shared_fd, METH_VARARGS,
     "_tensor_from_shared_fd(fd, nbytes): maps a received segment (steals fd)"},
    {"_new_shared", ptlpy_new_shared, METH_VARARGS, "_new_shared(sizes, dtype)"},
    {"_tensor_on_storage", ptlpy_tensor_on_storage, METH_VARARGS,
     "_tensor_on_storage(src, dtype, sizes, strides, offset)"},
    {"_cuda_lazy_init", ptlpy_cuda_lazy_init, METH_NOARGS, NULL},
    {"_cuda_mark_initialized", ptlpy_cuda_mark_initialized, METH_NOARGS, NULL},
    {"_cuda_is_initialized", ptlpy_cuda_is_initialized, METH_NOARGS, NULL},
    {"_cuda_in_bad_fork", ptlpy_cuda_in_bad_fork, METH_NOARGS, NULL},
    {"_autocast_state", py_autocast_state, METH_O, "(enabled, dtype) of autocast on a device"},
    {"_set_autocast_state", py_set_autocast_state, METH_VARARGS, NULL},
    {NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "pytorchlite._C", "pytorchlite's C core", -1, module_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__C(void)
{
    if (ptl_dispatcher_init() < 0 || ptl_autocast_init() < 0) {
        return ptlpy_raise();
    }
    for (size_t i = 0; i < sizeof(kernel_files) / sizeof(kernel_files[0]); i++) {
        if (kernel_files[i]() < 0) {
            return ptlpy_raise();
        }
    }
    const char *trace = getenv("PTL_SHOW_DISPATCH_TRACE");
    ptl_tls_set_trace_default(trace != NULL && trace[0] != '\0' && trace[0] != '0');
    const char *fail = getenv("PTL_FAIL_ALLOC_AFTER");
    if (fail != NULL) {
        ptl_cpu_alloc_fail_after(atoll(fail));
    }
    ptl_gil_release_hook = gil_release;
    ptl_gil_acquire_hook = gil_acquire;

    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL) {
        return NULL;
    }
    if (ptlpy_dtype_init_types(m) < 0 || ptlpy_size_init_type(m) < 0 || ptlpy_tensor_init_type(m) < 0 ||
        ptlpy_ops_init(m) < 0 || ptlpy_autograd_init(m) < 0 || ptlpy_generator_init(m) < 0 ||
        ptlpy_errors_init(m) < 0 || ptlpy_library_init(m) < 0 || ptlpy_memory_init(m) < 0 ||
        ptlpy_cuda_init(m) < 0 || ptlpy_cuda_stream_init(m) < 0 || ptlpy_c_api_init(m) < 0 ||
        ptlpy_tracer_init(m) < 0 || ptlpy_python_dispatch_init(m) < 0 ||
        ptlpy_pointwise_program_init(m) < 0 || ptlpy_profiler_init(m) < 0 ||
        ptlpy_storage_init(m) < 0 || ptlpy_jit_exec_init(m) < 0 ||
        ptlpy_reducer_init(m) < 0 || ptlpy_cuda_graph_init(m) < 0 ||
        ptlpy_torch_function_init(m) < 0 || ptlpy_module_getattr_init(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
