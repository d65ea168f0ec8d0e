/* profiler.c -- _C's profiler functions: the session, its events as tuples, and
 * record_function's enter/exit.  Mirrors torch/csrc/autograd/init.cpp's profiler bindings.
 * See Note [Profiler] in autograd/profiler.h. */
#include "ptlpy.h"

#include "../autograd/profiler.h"

#define MAX_STACK_FRAMES 64

/* with_stack: the stacks captured this session (a list of tuples of "file(line): name",
 * innermost first), or NULL when stacks are not collected. */
static PyObject *stacks;
int ptlpy_profiler_with_stack;

int
ptlpy_profiler_note_stack(void)
{
    PyFrameObject *f = PyEval_GetFrame();
    PyObject *frames = PyList_New(0);
    if (frames == NULL) {
        return -1;
    }
    Py_XINCREF(f);
    for (int i = 0; f != NULL && i < MAX_STACK_FRAMES; i++) {
        PyCodeObject *code = PyFrame_GetCode(f);
        PyObject *entry = PyUnicode_FromFormat("%U(%d): %U", code->co_filename,
                                               PyFrame_GetLineNumber(f), code->co_name);
        Py_DECREF(code);
        if (entry == NULL || PyList_Append(frames, entry) < 0) {
            Py_XDECREF(entry);
            Py_DECREF(f);
            Py_DECREF(frames);
            return -1;
        }
        Py_DECREF(entry);
        PyFrameObject *back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    Py_XDECREF(f);
    PyObject *t = PyList_AsTuple(frames);
    Py_DECREF(frames);
    if (t == NULL || PyList_Append(stacks, t) < 0) {
        Py_XDECREF(t);
        return -1;
    }
    Py_DECREF(t);
    ptl_profiler_set_stack(PyList_GET_SIZE(stacks) - 1);
    return 0;
}

static PyObject *
py_profiler_enable(PyObject *m, PyObject *args)
{
    (void)m;
    PtlProfilerConfig config = {0, 0};
    int with_stack;
    if (!PyArg_ParseTuple(args, "ppp:_profiler_enable", &config.record_shapes,
                          &config.profile_memory, &with_stack)) {
        return NULL;
    }
    PyObject *fresh = PyList_New(0);
    if (fresh == NULL) {
        return NULL;
    }
    if (ptl_profiler_enable(&config) < 0) {
        Py_DECREF(fresh);
        return ptlpy_raise();
    }
    Py_XSETREF(stacks, fresh);
    ptlpy_profiler_with_stack = with_stack;
    Py_RETURN_NONE;
}

static PyObject *
py_profiler_disable(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    ptlpy_profiler_with_stack = 0;
    ptl_profiler_disable();
    Py_RETURN_NONE;
}

static PyObject *
py_profiler_enabled(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyBool_FromLong(ptl_profiler_is_enabled());
}

static PyObject *
py_profiler_enter_thread(PyObject *m, PyObject *arg)
{
    (void)m;
    int on = PyObject_IsTrue(arg);
    if (on < 0) {
        return NULL;
    }
    ptl_profiler_enter_thread(on && ptl_profiler_is_enabled());
    Py_RETURN_NONE;
}

/* One op's input record as (tuple of type codes, tuple of value tuples): see
 * PtlProfilerEvent.shapes. */
static PyObject *
inputs_tuple(const int64_t *p)
{
    int64_t nargs = *p++;
    PyObject *codes = PyTuple_New(nargs), *shapes = PyTuple_New(nargs);
    if (codes == NULL || shapes == NULL) {
        goto error;
    }
    for (int64_t i = 0; i < nargs; i++) {
        int64_t code = *p++, dim = *p++;
        PyObject *c = PyLong_FromLongLong(code), *s = PyTuple_New(dim);
        if (c == NULL || s == NULL) {
            Py_XDECREF(c);
            Py_XDECREF(s);
            goto error;
        }
        for (int64_t d = 0; d < dim; d++) {
            PyObject *v = PyLong_FromLongLong(*p++);
            if (v == NULL) {
                Py_DECREF(c);
                Py_DECREF(s);
                goto error;
            }
            PyTuple_SET_ITEM(s, d, v);
        }
        PyTuple_SET_ITEM(codes, i, c);
        PyTuple_SET_ITEM(shapes, i, s);
    }
    return Py_BuildValue("(NN)", codes, shapes);
error:
    Py_XDECREF(codes);
    Py_XDECREF(shapes);
    return NULL;
}

/* The last session's events: (kind, name, start_ns, end_ns, tid, seq, depth, bytes,
 * total_bytes, inputs or None, id, stack or None) each, in the order they were recorded. */
static PyObject *
py_profiler_events(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    int64_t n, nshapes;
    const PtlProfilerEvent *ev = ptl_profiler_events(&n);
    const int64_t *shapes = ptl_profiler_shapes(&nshapes);
    PyObject *list = PyList_New(n);
    if (list == NULL) {
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) {
        const PtlProfilerEvent *e = &ev[i];
        PyObject *inputs = Py_None;
        Py_INCREF(inputs);
        if (e->shapes >= 0 && e->shapes < nshapes) {
            Py_DECREF(inputs);
            if ((inputs = inputs_tuple(shapes + e->shapes)) == NULL) {
                Py_DECREF(list);
                return NULL;
            }
        }
        PyObject *stack = Py_None;
        if (e->stack >= 0 && stacks != NULL && e->stack < PyList_GET_SIZE(stacks)) {
            stack = PyList_GET_ITEM(stacks, e->stack);
        }
        PyObject *t = Py_BuildValue("(isLLKLiLLNLO)", e->kind, e->name, (long long)e->start_ns,
                                    (long long)e->end_ns, (unsigned long long)e->tid,
                                    (long long)e->seq, e->depth, (long long)e->bytes,
                                    (long long)e->total_bytes, inputs, (long long)e->id, stack);
        if (t == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, t);
    }
    return list;
}

static PyObject *
py_profiler_overhead_ns(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyFloat_FromDouble(ptl_profiler_overhead_ns());
}

static PyObject *
py_record_function_enter(PyObject *m, PyObject *name)
{
    (void)m;
    const char *s = PyUnicode_AsUTF8(name);
    if (s == NULL) {
        return NULL;
    }
    int64_t handle = ptl_profiler_range_enter(s);
    if (handle < 0) {
        return ptlpy_raise();
    }
    return PyLong_FromLongLong(handle);
}

static PyObject *
py_record_function_exit(PyObject *m, PyObject *handle)
{
    (void)m;
    long long h = PyLong_AsLongLong(handle);
    if (h == -1 && PyErr_Occurred()) {
        return NULL;
    }
    ptl_profiler_range_exit(h);
    Py_RETURN_NONE;
}

static PyMethodDef profiler_methods[] = {
    {"_profiler_enable", py_profiler_enable, METH_VARARGS,
     "_profiler_enable(record_shapes, profile_memory, with_stack): starts recording on this "
     "thread"},
    {"_profiler_disable", py_profiler_disable, METH_NOARGS, NULL},
    {"_profiler_enabled", py_profiler_enabled, METH_NOARGS, NULL},
    {"_profiler_enter_thread", py_profiler_enter_thread, METH_O,
     "records this thread's ops too while a profiler runs"},
    {"_profiler_events", py_profiler_events, METH_NOARGS, "the last session's events"},
    {"_profiler_overhead_ns", py_profiler_overhead_ns, METH_NOARGS,
     "nanoseconds the recorder costs per event"},
    {"_record_function_enter", py_record_function_enter, METH_O, NULL},
    {"_record_function_exit", py_record_function_exit, METH_O, NULL},
    {NULL},
};

int
ptlpy_profiler_init(PyObject *module)
{
    ptl_profiler_init();
    return PyModule_AddFunctions(module, profiler_methods);
}
