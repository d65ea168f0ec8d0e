/* tracer.c -- the Tracer dispatch key's boxed fallback, which hands every top-level call to
 * pytorchlite.jit's recorder.  Mirrors torch/csrc/jit/frontend/tracer.cpp and the
 * TraceType kernels (torch/csrc/autograd/generated/TraceType*.cpp).
 *
 * Note [Tracing]
 * ~~~~~~~~~~~~~~
 * _C._jit_tracer_start(record, warning) includes PTL_KEY_TRACER in the calling thread's key
 * set, so every operator called on that thread reaches tracer_fallback first (Tracer sits
 * above Autograd: Note [Dispatch key order]).  The fallback boxes the arguments as Python
 * objects, excludes Tracer while the operator runs below it (so the calls a kernel makes --
 * a composite's pieces, autograd's -- are not recorded, as PyTorch's tracer records only
 * what the program called) and while it calls record("aten::add", "Tensor", args, returns)
 * (whose own calls, such as detaching a constant, are not the program's either).
 * Tensors keep their identity: a tensor's Python object is impl->pyobj (ptlpy_wrap), and
 * the recorder holds it for the whole trace, so the object the program sees later is the
 * one the recorder saw.  Where the program turns a tensor into a Python value (bool(t),
 * t.item(), ...), tensor_object.c calls ptlpy_tracer_python_value, which issues the
 * recorder's TracerWarning: the value becomes a constant of the trace.  Tracing is one
 * trace at a time per process; the recorder is a Python callable owned here. */
#include "ptlpy.h"

#include "../c10/tls.h"

static PyObject *recorder;        /* owned; NULL when no trace runs */
static PyObject *warning_class;   /* owned; pytorchlite.jit.TracerWarning */

/* Slot i of a stack as a new object. */
static PyObject *
stack_item(const void *stack, int i)
{
    return ptlpy_ivalue_to_py(&((const PtlIValue *)stack)[i]);
}

/* The slots stack[0..n) as a tuple of new objects; NULL with an exception set. */
static PyObject *
stack_to_tuple(const PtlIValue *stack, int n)
{
    return ptlpy_tuple_from(n, stack_item, stack);
}

/* The boxed Tracer kernel of every operator (Note [Tracing]).  Called with the GIL held on
 * the tracing thread: only that thread includes the key. */
static int
tracer_fallback(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *stack)
{
    const PtlDispatchKeySet below = ks & ptl_keyset_below(PTL_KEY_TRACER);
    if (recorder == NULL) {
        return ptl_dispatcher_redispatch(op, below, stack);
    }
    const PtlSchema *s = &op->schema;
    PyObject *args = stack_to_tuple(stack, s->nargs);
    if (args == NULL) {
        return ptl_error_set(PTL_ERR_PYTHON, "the tracer could not box the arguments");
    }
    PtlLocalState *tls = ptl_tls();
    const PtlDispatchKeySet excluded = tls->excluded;
    tls->excluded |= PTL_KEYSET(PTL_KEY_TRACER);
    int rc = ptl_dispatcher_redispatch(op, below, stack);
    if (rc < 0) {
        tls->excluded = excluded;
        Py_DECREF(args);
        return rc;
    }
    PyObject *rets = stack_to_tuple(stack, s->nrets);
    PyObject *res = NULL;
    if (rets != NULL) {
        res = PyObject_CallFunction(recorder, "ssOO", s->name, s->overload, args, rets);
    }
    tls->excluded = excluded;
    Py_DECREF(args);
    Py_XDECREF(rets);
    if (res == NULL) {
        for (int i = 0; i < s->nrets; i++) {
            ptl_ivalue_release(&stack[i]);
        }
        return ptl_error_set(PTL_ERR_PYTHON, "the tracer failed");
    }
    Py_DECREF(res);
    return 0;
}

int
ptlpy_tracer_python_value(const char *what)
{
    const PtlLocalState *tls = ptl_tls();
    if (recorder == NULL || !(tls->included & PTL_KEYSET(PTL_KEY_TRACER)) ||
        (tls->excluded & PTL_KEYSET(PTL_KEY_TRACER))) {
        return 0;
    }
    return PyErr_WarnFormat(warning_class, 1,
                            "Converting a tensor to a Python %s might cause the trace to be "
                            "incorrect. We can't record the data flow of Python values, so this "
                            "value will be treated as a constant in the future. This means "
                            "that the trace might not generalize to other inputs!",
                            what);
}

/* _C._jit_tracer_start(record, warning_class): records this thread's calls. */
static PyObject *
py_tracer_start(PyObject *m, PyObject *args)
{
    PyObject *rec, *warn;
    (void)m;
    if (!PyArg_ParseTuple(args, "OO:_jit_tracer_start", &rec, &warn)) {
        return NULL;
    }
    if (recorder != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "a trace is already running");
        return NULL;
    }
    Py_INCREF(rec);
    Py_INCREF(warn);
    recorder = rec;
    Py_XSETREF(warning_class, warn);
    ptl_tls()->included |= PTL_KEYSET(PTL_KEY_TRACER);
    Py_RETURN_NONE;
}

/* _C._jit_tracer_stop(): ends the running trace (a no-op when none runs). */
static PyObject *
py_tracer_stop(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    ptl_tls()->included &= ~PTL_KEYSET(PTL_KEY_TRACER);
    Py_CLEAR(recorder);
    Py_RETURN_NONE;
}

/* _C._jit_is_tracing(): whether this thread records its calls. */
static PyObject *
py_is_tracing(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyBool_FromLong(recorder != NULL &&
                           (ptl_tls()->included & PTL_KEYSET(PTL_KEY_TRACER)) != 0);
}

static PyMethodDef tracer_methods[] = {
    {"_jit_tracer_start", py_tracer_start, METH_VARARGS,
     "_jit_tracer_start(record, warning_class): record(name, overload, args, returns) sees "
     "every call this thread makes until _jit_tracer_stop()"},
    {"_jit_tracer_stop", py_tracer_stop, METH_NOARGS, NULL},
    {"_jit_is_tracing", py_is_tracing, METH_NOARGS, NULL},
    {NULL},
};

int
ptlpy_tracer_init(PyObject *module)
{
    ptl_dispatcher_register_fallback(PTL_KEY_TRACER, tracer_fallback);
    return PyModule_AddFunctions(module, tracer_methods);
}
