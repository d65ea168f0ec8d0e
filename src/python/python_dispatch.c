/* python_dispatch.c -- the Python dispatch key: its boxed fallback, which hands every call
 * that reaches it to the innermost TorchDispatchMode or to the __torch_dispatch__ of the
 * tensor subclasses among its arguments, and the tensors that carry the key (wrapper
 * subclasses).  Mirrors the Python key's fallback of torch/csrc/utils/python_dispatch.cpp and
 * aten/src/ATen/core/PythonFallbackKernel.cpp, and _make_wrapper_subclass of
 * torch/csrc/autograd/python_variable.cpp.
 *
 * Note [Python dispatch key]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A call reaches PTL_KEY_PYTHON in two ways.  (1) A mode: pytorchlite.utils._python_dispatch
 * keeps each thread's stack of dispatch modes in Python (a threading.local list) and calls
 * _C._set_python_dispatch(on) whenever the stack turns non-empty or empty, so the key sits
 * in a thread's included set only while that thread has a mode (the Profiler key's model,
 * Note [Profiler]), and a mode on one thread sees nothing of another's.  (2) A tensor whose
 * own key set holds it (Note [Python tensors]).  With neither, no call ever reaches this
 * file: plain tensors pay nothing.  The key sits below Autograd and CompositeImplicit (Note
 * [Dispatch key order]), so a mode or a subclass sees the operators that reach the kernels:
 * a composite's pieces rather than the composite, and the ops of the backward's formulas,
 * which the engine runs on the calling thread.
 *
 * python_fallback boxes the arguments as PyTorch's Python key does (positional arguments
 * up to the first keyword-only one, trailing ones that hold their default left out; the
 * keyword-only ones that differ from their default as kwargs) and calls the handler that
 * the Python module registered, handler("aten::add.Tensor", *args, **kwargs).  The handler
 * follows PyTorch's order: the innermost mode first, popped while it runs (so a func(*args)
 * inside it reaches the next mode out, the subclasses, or the kernels); then, when there is
 * no mode or it returned NotImplemented, the __torch_dispatch__ of each overloaded type
 * (the types of the arguments that carry the key, subclasses before their bases, else left
 * to right), with func the OpOverload torch.ops.aten.add.Tensor and types all of them; a
 * TypeError "Multiple dispatch failed ..." when every one returned NotImplemented.  While
 * the handler runs the thread excludes Autograd (PyTorch's AutoDispatchBelowADInplaceOrView):
 * the call was already recorded above this key, and the handler's own calls are below it.
 * The handler's result is boxed back into the stack per the schema (library.c's
 * ptlpy_call_boxed), so a mode or a subclass may replace any result; one of the wrong type or
 * count is a RuntimeError naming the operator.  An exception in the handler leaves the
 * stack's arguments to their owner and propagates as itself (PTL_ERR_PYTHON).  Rejected: a
 * C-level mode stack, which would need its own references and thread-exit cleanup for what
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
 * handler's setter (a reference swapped in a static), too short to share a helper.
 *
 * Note [Python tensors]
 * ~~~~~~~~~~~~~~~~~~~~~
 * Every object of a Tensor subclass that defines __torch_dispatch__ carries PTL_KEY_PYTHON
 * in its impl's key set: ptlpy_wrap_as adds it when it makes such an object, whether through
 * Tensor._make_subclass (over its data's storage), as_subclass, or _make_wrapper_subclass
 * (a tensor with the given sizes, strides, dtype and device and NO data: its storage holds 0
 * bytes, so the Python layer refuses numpy, tolist, the buffer protocol, storage, DLPack and
 * shared memory before reading it, data_ptr is 0, and no kernel ever sees it, every operator
 * on it stopping at this key).  item(), bool(), int(), float() and index() of a tensor with
 * the key (or on a thread with a dispatch mode: ptlpy_python_item) read its value through
 * aten::_local_scalar_dense, as PyTorch's do, so the subclass or the mode gives it; a plain
 * tensor's read stays direct.  Views of it inherit the key with its keys; aliases
 * (ptl_tensor_impl_alias) and a _make_subclass over a wrapper (nn.Parameter(w)) keep it, so
 * a Tensor-typed alias raises "Multiple dispatch failed" rather than reading nothing; .data
 * is the subclass's detach(), as PyTorch's.
 * The subclass's state (the wrapped `elem`) lives in its Python object, so the object must
 * live as long as its impl, which C holds in places Python cannot see: the dispatcher's
 * stack while a result returns from __torch_dispatch__, saved variables, .grad.  So the impl
 * owns its object (AutogradMeta.py_self, Note [Tensor GC]) from birth and the object is a
 * tracked GC object: tensor_traverse reports that self-reference once the object holds the
 * impl's only reference, and the cycle collector frees the pair when nothing else reaches
 * the object.  Such a tensor is freed by the collector, not when its last name goes, and a
 * wrapper that only another wrapper holds (its elem) by the collection after that one's.
 * A saved output of such a tensor is its detach() through the subclass (autograd/node.c), as
 * PyTorch's shallow_copy_and_detach, and AccumulateGrad stores a detach() of it as .grad:
 * both keep the Python object.
 * Rejected: PyTorch's resurrection in tp_dealloc (Note [PyObject preservation]), which needs
 * a tp_dealloc of our own on every subclass, redoing subtype_dealloc's slot and managed-dict
 * teardown through CPython internals.  Freeing a wrapper at its last `del` needs three
 * things, all missing today.  (1) The object owns the impl while Python holds the object
 * (no py_self), and only when the object's count reaches 0 while the impl's is above 1 does
 * ownership flip: the object is resurrected and py_self owns it.  tp_finalize (PEP 442) can
 * resurrect from subtype_dealloc without our own tp_dealloc, but CPython runs it once per
 * object, so a second flip (x.grad handed out again, then dropped) needs the finalized bit
 * reset, a CPython internal.  (2) The flip back: when the impl's count falls to the one
 * reference its own object holds, ptl_decref (c10) must call a hook that src/python installs
 * (PyTorch's PyInterpreter decref), which takes the GIL, clears py_self and drops the
 * object; it runs on any thread that drops an impl, autograd's workers included, and must
 * not run under a lock that a thread holding the GIL waits on.  (3) tensor_traverse and
 * tensor_clear then report py_self only in the flipped state, and helpers.collect_all goes
 * from the tests. */
#include "ptlpy.h"

#include "../aten/native/native.h"
#include "../autograd/autograd.h"
#include "../c10/tls.h"

static PyObject *handler;   /* owned; pytorchlite.utils._python_dispatch's, or NULL */
int ptlpy_dispatch_mode_threads;   /* under the GIL: py_set_python_dispatch's count */
static PyObject *name_td;   /* "__torch_dispatch__" */

int
ptlpy_python_tensor_type(PyTypeObject *type)
{
    return name_td != NULL && _PyType_Lookup(type, name_td) != NULL;
}

int
ptlpy_python_tensor_own(PyObject *o)
{
    PtlTensorImpl *t = PTLPY_IMPL(o);
    PtlAutogradMeta *m = ptl_autograd_meta(t, 1);
    if (m == NULL) {
        ptlpy_raise();
        return -1;
    }
    t->keys |= PTL_KEYSET(PTL_KEY_PYTHON);
    if (m->py_self == NULL) {
        Py_INCREF(o);
        m->py_self = o;
    }
    if (!PyObject_GC_IsTracked(o)) {
        PyObject_GC_Track(o);
    }
    return 0;
}

/* Fills written[i] with the argument (borrowed) that return i of s aliases and writes, as
 * self of add_ or out= of mul.out, or NULL. */
static void
written_args(const PtlSchema *s, const PtlIValue *stack, PtlTensorImpl **written)
{
    for (int i = 0; i < s->nrets; i++) {
        written[i] = NULL;
        for (int j = 0; s->rets[i].alias_write && j < s->nargs; j++) {
            if (s->args[j].alias_write && s->args[j].alias_set == s->rets[i].alias_set &&
                stack[j].tag == PTL_IV_TENSOR) {
                written[i] = stack[j].u.t;
                break;
            }
        }
    }
}

/* The boxed Python kernel of every operator (Note [Python dispatch key]).  An in-place or
 * out= call returns the tensors it wrote, whatever the handler returned for them, as
 * PyTorch's in-place autograd kernels return self. */
static int
python_fallback(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *stack)
{
    const PtlSchema *s = &op->schema;
    PtlTensorImpl *written[PTL_SCHEMA_MAX_RETS];
    (void)ks;
    if (handler == NULL) {   /* only a tensor brings the key before any mode was made */
        return ptl_error_set(PTL_ERR_RUNTIME, "%s reached the Python dispatch key before "
                             "pytorchlite.utils._python_dispatch registered its handler",
                             s->name);
    }
    PyGILState_STATE g = PyGILState_Ensure();
    int rc = -1;
    PyObject *name = PyUnicode_FromFormat("%s%s%s", s->name, s->overload[0] ? "." : "",
                                          s->overload);
    if (name != NULL) {
        PtlLocalState *tls = ptl_tls();
        const PtlDispatchKeySet excluded = tls->excluded;
        tls->excluded |= PTL_KEYSET(PTL_KEY_AUTOGRAD);
        written_args(s, stack, written);
        rc = ptlpy_call_boxed(op, PTL_KEY_PYTHON, handler, name, PTLPY_BOXED_SKIP_DEFAULTS,
                              stack);
        tls->excluded = excluded;
        Py_DECREF(name);
    }
    for (int i = 0; rc == 0 && i < s->nrets; i++) {
        if (written[i] != NULL) {
            ptl_ivalue_release(&stack[i]);
            ptl_incref(written[i]);
            stack[i] = ptl_iv_tensor(written[i]);
        }
    }
    if (rc < 0) {
        ptl_error_set(PTL_ERR_PYTHON, "__torch_dispatch__ failed");
    }
    PyGILState_Release(g);
    return rc;
}

int
ptlpy_python_dispatch_on(void)
{
    return (ptl_tls()->included & PTL_KEYSET(PTL_KEY_PYTHON)) != 0;
}

PtlTensorImpl *
ptlpy_local_scalar(PtlTensorImpl *t)
{
    PtlIValue s[1] = {ptl_iv_tensor(t)};
    if (ptl_dispatcher_call(ptl_op(PTL_OP__local_scalar_dense), s) < 0) {
        ptlpy_raise();
        return NULL;
    }
    PtlTensorImpl *host = ptl_wrapped_scalar(&s[0]);
    return host != NULL ? host : (ptlpy_raise(), NULL);
}

/* The n ints of a sequence into out (at most PTL_MAX_DIMS); n, or -1 with an error set. */
static int
int_list(PyObject *seq, const char *what, int64_t *out)
{
    PyObject *f = PySequence_Fast(seq, "");
    if (f == NULL) {
        PyErr_Format(PyExc_TypeError, "_make_wrapper_subclass(): argument '%s' must be a tuple "
                     "of ints, not %s", what, Py_TYPE(seq)->tp_name);
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
    if (n > PTL_MAX_DIMS) {
        Py_DECREF(f);
        PyErr_Format(PyExc_RuntimeError, "_make_wrapper_subclass(): %zd dimensions, at most %d "
                     "are supported", n, PTL_MAX_DIMS);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(f, i);
        out[i] = PyIndex_Check(item) ? PyLong_AsLongLong(item) : -1;
        if (!PyIndex_Check(item) || (out[i] == -1 && PyErr_Occurred())) {
            Py_DECREF(f);
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "_make_wrapper_subclass(): argument '%s' must be a "
                         "tuple of ints, but found element of type %s at pos %zd", what,
                         Py_TYPE(item)->tp_name, i);
            return -1;
        }
    }
    Py_DECREF(f);
    return (int)n;
}

/* _C._make_wrapper_subclass(cls, size, strides, storage_offset, dtype, device,
 * requires_grad): an object of type cls with this geometry and no data (Note [Python
 * tensors]); Tensor._make_wrapper_subclass has checked cls and filled the defaults. */
static PyObject *
py_make_wrapper_subclass(PyObject *m, PyObject *args)
{
    PyObject *cls, *size, *strides;
    PtlPyDtype *dtype;
    PtlPyDevice *device;
    long long offset;
    int requires_grad;
    int64_t sizes[PTL_MAX_DIMS], st[PTL_MAX_DIMS];
    (void)m;
    if (!PyArg_ParseTuple(args, "O!OOLO!O!p:_make_wrapper_subclass", &PyType_Type, &cls, &size,
                          &strides, &offset, &PtlPyDtype_Type, &dtype, &PtlPyDevice_Type,
                          &device, &requires_grad)) {
        return NULL;
    }
    int dim = int_list(size, "size", sizes);
    int nst = dim < 0 || strides == Py_None ? dim : int_list(strides, "strides", st);
    if (nst < 0) {
        return NULL;
    }
    if (nst != dim) {
        return PyErr_Format(PyExc_RuntimeError, "dimensionality of sizes (%d) must match "
                            "dimensionality of strides (%d)", dim, nst);
    }
    int64_t numel;
    if (ptl_check_sizes(dim, sizes, &numel) < 0) {
        return ptlpy_raise();
    }
    PtlStorage *storage = ptl_storage_new(0, device->device);
    PtlTensorImpl *t = storage == NULL ? NULL
                                       : ptl_tensor_impl_new(storage, dtype->dtype, dim, sizes,
                                                             strides == Py_None ? NULL : st,
                                                             offset);
    if (t == NULL) {
        return ptlpy_raise();
    }
    if (requires_grad && ptl_set_requires_grad(t, 1) < 0) {
        ptl_decref(t);
        return ptlpy_raise();
    }
    return ptlpy_wrap_as(t, (PyTypeObject *)cls);
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
    ptlpy_dispatch_mode_threads += flag - ((tls->included & PTL_KEYSET(PTL_KEY_PYTHON)) != 0);
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
    {"_make_wrapper_subclass", py_make_wrapper_subclass, METH_VARARGS,
     "_make_wrapper_subclass(cls, size, strides, storage_offset, dtype, device, "
     "requires_grad): a tensor of type cls without data"},
    {NULL},
};

int
ptlpy_python_dispatch_init(PyObject *module)
{
    name_td = PyUnicode_InternFromString("__torch_dispatch__");
    if (name_td == NULL) {
        return -1;
    }
    ptl_dispatcher_register_fallback(PTL_KEY_PYTHON, python_fallback);
    return PyModule_AddFunctions(module, python_dispatch_methods);
}
