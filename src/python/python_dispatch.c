/* python_dispatch.c -- the Python dispatch key's boxed fallback, which hands every call that
 * reaches it to the innermost TorchDispatchMode.  Mirrors the Python key's fallback of
 * torch/csrc/utils/python_dispatch.cpp and aten/src/ATen/core/PythonFallbackKernel.cpp, for
 * modes only (no tensor subclass carries the key here).
 *
 * Note [Python dispatch key]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * pytorchlite.utils._python_dispatch keeps each thread's stack of dispatch modes in Python
 * (a threading.local list) and calls _C._set_python_dispatch(on) whenever the stack turns
 * non-empty or empty, so PTL_KEY_PYTHON sits in a thread's included set only while that
 * thread has a mode: with none, no call ever reaches this file (the Profiler key's model,
 * Note [Profiler]), and a mode on one thread sees nothing of another's.  The key sits below
 * Autograd and CompositeImplicit (Note [Dispatch key order]), so a mode sees the operators
 * that reach the kernels: a composite's pieces rather than the composite, and the ops of the
 * backward's formulas, which the engine runs on the calling thread.
 *
 * python_fallback boxes the arguments as PyTorch's Python key does (positional arguments
 * up to the first keyword-only one, trailing ones that hold their default left out; the
 * keyword-only ones that differ from their default as kwargs) and calls the handler that
 * the Python module registered, handler("aten::add.Tensor", *args, **kwargs).  The handler
 * pops the innermost mode, calls mode.__torch_dispatch__(func, (), args, kwargs) with func
 * the OpOverload torch.ops.aten.add.Tensor, and pushes the mode back, so a func(*args)
 * inside the handler reaches the next mode out, or the kernels once none is left.  While the
 * handler runs the thread excludes Autograd (PyTorch's AutoDispatchBelowADInplaceOrView):
 * the call was already recorded above this key, and the handler's own calls are below it.
 * The handler's result is boxed back into the stack per the schema (library.c's
 * ptlpy_call_boxed), so a mode may replace any result; one of the wrong type or count is a
 * RuntimeError naming the operator.  An exception in the handler leaves the stack's
 * arguments to their owner and propagates as itself (PTL_ERR_PYTHON).  Rejected: a C-level
 * mode stack, which would need its own references and thread-exit cleanup for what
 * threading.local already does.
 *
 * TorchFunctionModes (torch_function.c, Note [Torch function]) also keep their stack in a
 * threading.local list with a C mirror and a handler, but the mirror differs for a reason.
 * A function mode is consulted at the Python boundary, before any dispatch, for the callable
 * the user called: its mirror is this thread's depth plus a count over all threads that the
 * operator slots test as one int with no thread-local read (ptlpy_tf_plain1).  A dispatch
 * mode is consulted by the dispatcher, for every operator that reaches the kernels, those
 * that C calls (backward formulas, composites' pieces) included: its mirror must be a key in
 * the thread's included set, the one thing the dispatcher reads.  What is alike is only the
 * handler's setter (a reference swapped in a static), too short to share a helper. */
#include "ptlpy.h"

#include "../c10/tls.h"

static PyObject *handler;   /* owned; pytorchlite.utils._python_dispatch's, or NULL */

/* The boxed Python kernel of every operator (Note [Python dispatch key]). */
static int
python_fallback(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *stack)
{
    const PtlSchema *s = &op->schema;
    if (handler == NULL) {
        return ptl_dispatcher_redispatch(op, ks & ptl_keyset_below(PTL_KEY_PYTHON), stack);
    }
    PyGILState_STATE g = PyGILState_Ensure();
    int rc = -1;
    PyObject *name = PyUnicode_FromFormat("%s%s%s", s->name, s->overload[0] ? "." : "",
                                          s->overload);
    if (name != NULL) {
        PtlLocalState *tls = ptl_tls();
        const PtlDispatchKeySet excluded = tls->excluded;
        tls->excluded |= PTL_KEYSET(PTL_KEY_AUTOGRAD);
        rc = ptlpy_call_boxed(op, PTL_KEY_PYTHON, handler, name, PTLPY_BOXED_SKIP_DEFAULTS,
                              stack);
        tls->excluded = excluded;
        Py_DECREF(name);
    }
    if (rc < 0) {
        ptl_error_set(PTL_ERR_PYTHON, "__torch_dispatch__ failed");
    }
    PyGILState_Release(g);
    return rc;
}

/* _C._set_dispatch_mode_handler(fn): fn(qualname, *args, **kwargs) serves the Python key. */
static PyObject *
py_set_handler(PyObject *m, PyObject *fn)
{
    (void)m;
    if (!PyCallable_Check(fn)) {
        return PyErr_Format(PyExc_TypeError, "expected a callable, got %s",
                            Py_TYPE(fn)->tp_name);
    }
    Py_INCREF(fn);
    Py_XSETREF(handler, fn);
    Py_RETURN_NONE;
}

/* _C._set_python_dispatch(on): includes (on) or removes the Python key on this thread. */
static PyObject *
py_set_python_dispatch(PyObject *m, PyObject *on)
{
    (void)m;
    int flag = PyObject_IsTrue(on);
    if (flag < 0) {
        return NULL;
    }
    PtlLocalState *tls = ptl_tls();
    if (flag) {
        tls->included |= PTL_KEYSET(PTL_KEY_PYTHON);
    } else {
        tls->included &= ~PTL_KEYSET(PTL_KEY_PYTHON);
    }
    Py_RETURN_NONE;
}

static PyMethodDef python_dispatch_methods[] = {
    {"_set_dispatch_mode_handler", py_set_handler, METH_O,
     "_set_dispatch_mode_handler(fn): fn(qualname, *args, **kwargs) runs the innermost mode"},
    {"_set_python_dispatch", py_set_python_dispatch, METH_O,
     "_set_python_dispatch(on): whether this thread's calls reach the Python key"},
    {NULL},
};

int
ptlpy_python_dispatch_init(PyObject *module)
{
    ptl_dispatcher_register_fallback(PTL_KEY_PYTHON, python_fallback);
    return PyModule_AddFunctions(module, python_dispatch_methods);
}
