/* cuda_stream.c -- the bindings of CUDA streams, events and pinned memory: _C._cuda_stream_*,
 * _cuda_event_*, _cuda_current_stream / _cuda_set_current_stream and _is_pinned (the
 * copy into pinned memory is the aten::_pin_memory op, native/copy.c).  Mirrors
 * torch/csrc/cuda/Stream.cpp and Event.cpp.  Streams and events are plain integers here (the
 * cudaStream_t and cudaEvent_t); pytorchlite/cuda/streams.py wraps them in PyTorch's
 * classes.  See Note [Current stream] in src/cuda/stream_state.c. */
#include "ptlpy.h"

#include "../cuda/cuda_api.h"
#include "../cuda/stream_api.h"

/* A stream or event handle from a Python int (0 for the legacy default stream). */
static int
parse_handle(PyObject *o, uintptr_t *out)
{
    void *p = PyLong_AsVoidPtr(o);
    if (p == NULL && PyErr_Occurred()) {
        return 0;
    }
    *out = (uintptr_t)p;
    return 1;
}

static PyObject *
handle_to_py(uintptr_t h)
{
    return PyLong_FromUnsignedLongLong((unsigned long long)h);
}

/* _cuda_stream_from_pool(device, priority) -> the stream's handle (initialises CUDA) */
static PyObject *
py_stream_from_pool(PyObject *m, PyObject *args)
{
    (void)m;
    int device, priority;
    PtlStreamId s = 0;
    if (!PyArg_ParseTuple(args, "ii:_cuda_stream_from_pool", &device, &priority)) {
        return NULL;
    }
    if (ptl_cuda_lazy_init() < 0 || ptl_cuda_stream_from_pool(device, priority, &s) < 0) {
        return ptlpy_raise();
    }
    return handle_to_py(s);
}

static PyObject *
py_stream_query(PyObject *m, PyObject *arg)
{
    (void)m;
    uintptr_t s;
    int done = 0;
    if (!parse_handle(arg, &s)) {
        return NULL;
    }
    if (ptl_cuda_stream_query(s, &done) < 0) {
        return ptlpy_raise();
    }
    return PyBool_FromLong(done);
}

static PyObject *
py_stream_synchronize(PyObject *m, PyObject *arg)
{
    (void)m;
    uintptr_t s;
    int status;
    if (!parse_handle(arg, &s)) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    status = ptl_cuda_stream_synchronize(s);
    Py_END_ALLOW_THREADS
    if (status < 0) {
        return ptlpy_raise();
    }
    Py_RETURN_NONE;
}

static PyObject *
py_stream_priority(PyObject *m, PyObject *arg)
{
    (void)m;
    uintptr_t s;
    int priority = 0;
    if (!parse_handle(arg, &s)) {
        return NULL;
    }
    if (ptl_cuda_stream_priority(s, &priority) < 0) {
        return ptlpy_raise();
    }
    return PyLong_FromLong(priority);
}

/* _cuda_stream_priority_range() -> (least, greatest), PyTorch's Stream.priority_range() */
static PyObject *
py_stream_priority_range(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    int least = 0, greatest = 0;
    if (ptl_cuda_lazy_init() < 0 || ptl_cuda_stream_priority_range(&least, &greatest) < 0) {
        return ptlpy_raise();
    }
    return Py_BuildValue("(ii)", least, greatest);
}

static PyObject *
py_current_stream(PyObject *m, PyObject *arg)
{
    (void)m;
    int device = PyLong_AsLong(arg);
    if (device == -1 && PyErr_Occurred()) {
        return NULL;
    }
    return handle_to_py(ptl_cuda_current_stream(device));
}

static PyObject *
py_set_current_stream(PyObject *m, PyObject *args)
{
    (void)m;
    int device;
    PyObject *h;
    uintptr_t s;
    if (!PyArg_ParseTuple(args, "iO:_cuda_set_current_stream", &device, &h) ||
        !parse_handle(h, &s)) {
        return NULL;
    }
    ptl_cuda_set_current_stream(device, s);
    Py_RETURN_NONE;
}

/* _cuda_event_create(device, flags) -> the event's handle (PTL_CUDA_EVENT_* flags) */
static PyObject *
py_event_create(PyObject *m, PyObject *args)
{
    (void)m;
    int device, flags;
    void *ev = NULL;
    if (!PyArg_ParseTuple(args, "ii:_cuda_event_create", &device, &flags)) {
        return NULL;
    }
    if (ptl_cuda_lazy_init() < 0 || ptl_cuda_event_create(device, flags, &ev) < 0) {
        return ptlpy_raise();
    }
    return handle_to_py((uintptr_t)ev);
}

static PyObject *
py_event_destroy(PyObject *m, PyObject *arg)
{
    (void)m;
    uintptr_t ev;
    if (!parse_handle(arg, &ev)) {
        return NULL;
    }
    ptl_cuda_event_destroy((void *)ev);
    Py_RETURN_NONE;
}

/* _cuda_event_record(event, stream) */
static PyObject *
py_event_record(PyObject *m, PyObject *args)
{
    (void)m;
    PyObject *e, *st;
    uintptr_t ev, s;
    if (!PyArg_ParseTuple(args, "OO:_cuda_event_record", &e, &st) || !parse_handle(e, &ev) ||
        !parse_handle(st, &s)) {
        return NULL;
    }
    if (ptl_cuda_event_record((void *)ev, s) < 0) {
        return ptlpy_raise();
    }
    Py_RETURN_NONE;
}

static PyObject *
py_event_query(PyObject *m, PyObject *arg)
{
    (void)m;
    uintptr_t ev;
    int done = 0;
    if (!parse_handle(arg, &ev)) {
        return NULL;
    }
    if (ptl_cuda_event_query((void *)ev, &done) < 0) {
        return ptlpy_raise();
    }
    return PyBool_FromLong(done);
}

static PyObject *
py_event_synchronize(PyObject *m, PyObject *arg)
{
    (void)m;
    uintptr_t ev;
    int status;
    if (!parse_handle(arg, &ev)) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    status = ptl_cuda_event_synchronize((void *)ev);
    Py_END_ALLOW_THREADS
    if (status < 0) {
        return ptlpy_raise();
    }
    Py_RETURN_NONE;
}

/* _cuda_stream_wait_event(stream, event) */
static PyObject *
py_stream_wait_event(PyObject *m, PyObject *args)
{
    (void)m;
    PyObject *st, *e;
    uintptr_t s, ev;
    if (!PyArg_ParseTuple(args, "OO:_cuda_stream_wait_event", &st, &e) ||
        !parse_handle(st, &s) || !parse_handle(e, &ev)) {
        return NULL;
    }
    if (ptl_cuda_stream_wait_event(s, (void *)ev) < 0) {
        return ptlpy_raise();
    }
    Py_RETURN_NONE;
}

/* _cuda_event_elapsed_time(start, end) -> milliseconds */
static PyObject *
py_event_elapsed_time(PyObject *m, PyObject *args)
{
    (void)m;
    PyObject *a, *b;
    uintptr_t start, end;
    float ms = 0;
    if (!PyArg_ParseTuple(args, "OO:_cuda_event_elapsed_time", &a, &b) ||
        !parse_handle(a, &start) || !parse_handle(b, &end)) {
        return NULL;
    }
    if (ptl_cuda_event_elapsed_time((void *)start, (void *)end, &ms) < 0) {
        return ptlpy_raise();
    }
    return PyFloat_FromDouble(ms);
}

/* The tensor o (borrowed), or NULL with a TypeError. */
static PtlTensorImpl *
tensor_arg(PyObject *o)
{
    if (!PtlPyTensor_Check(o)) {
        PyErr_Format(PyExc_TypeError, "expected a Tensor, got %s", Py_TYPE(o)->tp_name);
        return NULL;
    }
    return PTLPY_IMPL(o);
}

static PyObject *
py_is_pinned(PyObject *m, PyObject *arg)
{
    (void)m;
    PtlTensorImpl *t = tensor_arg(arg);
    if (t == NULL) {
        return NULL;
    }
    return PyBool_FromLong(t->storage != NULL && ptl_storage_is_pinned(t->storage));
}

int
ptlpy_pin_memory_check(void)
{
    if (ptl_cuda_host_allocator() == NULL) {
        ptl_error_clear();
        PyErr_SetString(PyExc_RuntimeError,
                        "pin_memory=True requires a CUDA or other accelerator backend; no pinned "
                        "memory allocator is available on this system.");
        return -1;
    }
    return 0;
}

static PyMethodDef stream_functions[] = {
    {"_cuda_stream_from_pool", py_stream_from_pool, METH_VARARGS, NULL},
    {"_cuda_stream_query", py_stream_query, METH_O, NULL},
    {"_cuda_stream_synchronize", py_stream_synchronize, METH_O, NULL},
    {"_cuda_stream_priority", py_stream_priority, METH_O, NULL},
    {"_cuda_stream_priority_range", py_stream_priority_range, METH_NOARGS, NULL},
    {"_cuda_current_stream", py_current_stream, METH_O, "the thread's stream on a device"},
    {"_cuda_set_current_stream", py_set_current_stream, METH_VARARGS, NULL},
    {"_cuda_event_create", py_event_create, METH_VARARGS, NULL},
    {"_cuda_event_destroy", py_event_destroy, METH_O, NULL},
    {"_cuda_event_record", py_event_record, METH_VARARGS, NULL},
    {"_cuda_event_query", py_event_query, METH_O, NULL},
    {"_cuda_event_synchronize", py_event_synchronize, METH_O, NULL},
    {"_cuda_stream_wait_event", py_stream_wait_event, METH_VARARGS, NULL},
    {"_cuda_event_elapsed_time", py_event_elapsed_time, METH_VARARGS, NULL},
    {"_is_pinned", py_is_pinned, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

int
ptlpy_cuda_stream_init(PyObject *module)
{
    return PyModule_AddFunctions(module, stream_functions);
}
