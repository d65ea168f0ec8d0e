/* library.c -- the dispatcher seen from Python: DispatchKey, DispatchKeySet, the key sets of
 * tensors and of the thread, and kernels written in Python (pytorchlite.library).  Mirrors
 * torch/csrc/utils/python_dispatch.cpp (its PythonKernelHolder is our python_kernel) and the
 * DispatchKey/DispatchKeySet bindings of torch/csrc/Module.cpp.
 *
 * Note [Python kernels]
 * ~~~~~~~~~~~~~~~~~~~~~
 * library.impl stores a Python callable in the operator's own per-key table with
 * ptl_dispatcher_set_kernel: the kernel is a C trampoline (python_kernel) and the callable
 * is its data, so a call of a user operator takes the same route as a built-in one and no
 * Python dict sits in front of the dispatcher.  The table owns one reference to the callable
 * for each slot that holds it.  The trampoline takes the GIL, turns the borrowed arguments
 * into Python objects, calls, bumps the version of every Tensor(a!) argument once, below
 * Autograd (PyTorch's ADInplaceOrView), and boxes the results back as the schema says; a result of the wrong count
 * or type is a RuntimeError naming the operator.  CompositeExplicitAutograd is an alias
 * key, as in PyTorch: its kernel fills the CPU and CUDA slots, and its origin says so. */
#include "ptlpy.h"

#include <string.h>

#include "../c10/tls.h"

#define ALIAS_EXPLICIT " [CompositeExplicitAutograd]"

typedef struct PtlPyDispatchKeySet {
    PyObject_HEAD
    PtlDispatchKeySet bits;
} PtlPyDispatchKeySet;

static PyObject *dispatch_key_enum = NULL;   /* pytorchlite._C.DispatchKey */
static PyTypeObject PtlPyDispatchKeySet_Type;

/* ---- DispatchKey ---- */

/* A DispatchKey member or a key's name as a key; -1 with PyTorch's RuntimeError otherwise.
 * AutogradCPU and AutogradCUDA name our one Autograd key. */
static int
parse_key(PyObject *o, PtlDispatchKey *out)
{
    const char *name;
    if (PyObject_IsInstance(o, dispatch_key_enum) == 1) {
        PyObject *v = PyObject_GetAttrString(o, "value");
        long k = v ? PyLong_AsLong(v) : -1;
        Py_XDECREF(v);
        if (k < 0) {
            return -1;
        }
        *out = (PtlDispatchKey)k;
        return 0;
    }
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "expected a DispatchKey or a str, got %s",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    if ((name = PyUnicode_AsUTF8(o)) == NULL) {
        return -1;
    }
    for (int k = 0; k < PTL_KEY_COUNT; k++) {
        if (strcmp(name, ptl_dispatch_key_name((PtlDispatchKey)k)) == 0) {
            *out = (PtlDispatchKey)k;
            return 0;
        }
    }
    if (strcmp(name, "AutogradCPU") == 0 || strcmp(name, "AutogradCUDA") == 0) {
        *out = PTL_KEY_AUTOGRAD;
        return 0;
    }
    PyErr_Format(PyExc_RuntimeError, "could not parse dispatch key: %s", name);
    return -1;
}

/* The DispatchKey member of k; new ref. */
static PyObject *
key_object(PtlDispatchKey k)
{
    return PyObject_CallFunction(dispatch_key_enum, "i", (int)k);
}

static int
make_key_enum(PyObject *module)
{
    PyObject *enum_mod = NULL, *members = NULL;
    int rc = -1;
    if ((enum_mod = PyImport_ImportModule("enum")) == NULL ||
        (members = PyList_New(0)) == NULL) {
        goto done;
    }
    for (int k = 0; k < PTL_KEY_COUNT; k++) {
        PyObject *item = Py_BuildValue("(si)", ptl_dispatch_key_name((PtlDispatchKey)k), k);
        if (item == NULL || PyList_Append(members, item) < 0) {
            Py_XDECREF(item);
            goto done;
        }
        Py_DECREF(item);
    }
    PyObject *cls = PyObject_GetAttrString(enum_mod, "Enum");
    PyObject *pos = cls ? Py_BuildValue("(sO)", "DispatchKey", members) : NULL;
    PyObject *kw = pos ? Py_BuildValue("{ss}", "module", "pytorchlite._C") : NULL;
    dispatch_key_enum = kw ? PyObject_Call(cls, pos, kw) : NULL;
    Py_XDECREF(cls);
    Py_XDECREF(pos);
    Py_XDECREF(kw);
    if (dispatch_key_enum == NULL) {
        goto done;
    }
    Py_INCREF(dispatch_key_enum);
    rc = PyModule_AddObject(module, "DispatchKey", dispatch_key_enum);
    if (rc < 0) {
        Py_DECREF(dispatch_key_enum);
    }
done:
    Py_XDECREF(enum_mod);
    Py_XDECREF(members);
    return rc;
}

/* ---- DispatchKeySet ---- */

/* A DispatchKeySet holding bits; new ref. */
static PyObject *
keyset_object(PtlDispatchKeySet bits)
{
    PtlPyDispatchKeySet *s = PyObject_New(PtlPyDispatchKeySet, &PtlPyDispatchKeySet_Type);
    if (s != NULL) {
        s->bits = bits;
    }
    return (PyObject *)s;
}

static PyObject *
keyset_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *key = NULL;
    PtlDispatchKey k;
    (void)type;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:DispatchKeySet", (char *[]){"key", NULL},
                                     &key)) {
        return NULL;
    }
    if (key == NULL) {
        return keyset_object(0);
    }
    if (parse_key(key, &k) < 0) {
        return NULL;
    }
    return keyset_object(PTL_KEYSET(k));
}

static PyObject *
keyset_repr(PtlPyDispatchKeySet *self)
{
    char buf[256];
    int off = snprintf(buf, sizeof(buf), "DispatchKeySet(");
    for (int k = 0, first = 1; k < PTL_KEY_COUNT; k++) {
        if (self->bits & PTL_KEYSET(k)) {
            off += snprintf(buf + off, sizeof(buf) - (size_t)off, "%s%s", first ? "" : ", ",
                            ptl_dispatch_key_name((PtlDispatchKey)k));
            first = 0;
        }
    }
    snprintf(buf + off, sizeof(buf) - (size_t)off, ")");
    return PyUnicode_FromString(buf);
}

static PyObject *
keyset_binop(PyObject *a, PyObject *b, int op)
{
    if (!PyObject_TypeCheck(a, &PtlPyDispatchKeySet_Type) ||
        !PyObject_TypeCheck(b, &PtlPyDispatchKeySet_Type)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    PtlDispatchKeySet x = ((PtlPyDispatchKeySet *)a)->bits, y = ((PtlPyDispatchKeySet *)b)->bits;
    return keyset_object(op == '|' ? x | y : op == '&' ? x & y : x & ~y);
}

static PyObject *
keyset_or(PyObject *a, PyObject *b)
{
    return keyset_binop(a, b, '|');
}

static PyObject *
keyset_and(PyObject *a, PyObject *b)
{
    return keyset_binop(a, b, '&');
}

static PyObject *
keyset_sub(PyObject *a, PyObject *b)
{
    return keyset_binop(a, b, '-');
}

static PyObject *
keyset_richcompare(PyObject *a, PyObject *b, int op)
{
    if (!PyObject_TypeCheck(b, &PtlPyDispatchKeySet_Type) || (op != Py_EQ && op != Py_NE)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    int eq = ((PtlPyDispatchKeySet *)a)->bits == ((PtlPyDispatchKeySet *)b)->bits;
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_hash_t
keyset_hash(PtlPyDispatchKeySet *self)
{
    return (Py_hash_t)self->bits + 1;   /* -1 is reserved for errors */
}

/* Iterates the keys lowest priority first, the order of the repr. */
static PyObject *
keyset_iter(PtlPyDispatchKeySet *self)
{
    PyObject *list = PyList_New(0);
    for (int k = 0; list != NULL && k < PTL_KEY_COUNT; k++) {
        if (self->bits & PTL_KEYSET(k)) {
            PyObject *o = key_object((PtlDispatchKey)k);
            if (o == NULL || PyList_Append(list, o) < 0) {
                Py_CLEAR(list);
            }
            Py_XDECREF(o);
        }
    }
    if (list == NULL) {
        return NULL;
    }
    PyObject *it = PyObject_GetIter(list);
    Py_DECREF(list);
    return it;
}

static PyObject *
keyset_has(PtlPyDispatchKeySet *self, PyObject *key)
{
    PtlDispatchKey k;
    if (parse_key(key, &k) < 0) {
        return NULL;
    }
    return PyBool_FromLong((self->bits & PTL_KEYSET(k)) != 0);
}

static PyObject *
keyset_add(PtlPyDispatchKeySet *self, PyObject *key)
{
    PtlDispatchKey k;
    if (parse_key(key, &k) < 0) {
        return NULL;
    }
    return keyset_object(self->bits | PTL_KEYSET(k));
}

static PyObject *
keyset_remove(PtlPyDispatchKeySet *self, PyObject *key)
{
    PtlDispatchKey k;
    if (parse_key(key, &k) < 0) {
        return NULL;
    }
    return keyset_object(self->bits & ~PTL_KEYSET(k));
}

/* The key whose kernel runs first; None for the empty set (PyTorch: DispatchKey.Undefined,
 * a key we do not have). */
static PyObject *
keyset_highest(PtlPyDispatchKeySet *self, PyObject *unused)
{
    (void)unused;
    if (self->bits == 0) {
        Py_RETURN_NONE;
    }
    return key_object(ptl_keyset_highest(self->bits));
}

static PyObject *
keyset_raw_repr(PtlPyDispatchKeySet *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromUnsignedLong(self->bits);
}

static PyMethodDef keyset_methods[] = {
    {"has", (PyCFunction)keyset_has, METH_O, "whether the set holds the key"},
    {"add", (PyCFunction)keyset_add, METH_O, "a new set with the key added"},
    {"remove", (PyCFunction)keyset_remove, METH_O, "a new set without the key"},
    {"highestPriorityTypeId", (PyCFunction)keyset_highest, METH_NOARGS,
     "the key whose kernel runs first"},
    {"raw_repr", (PyCFunction)keyset_raw_repr, METH_NOARGS, "the bits, one per key"},
    {NULL},
};

static PyNumberMethods keyset_as_number = {
    .nb_or = keyset_or,
    .nb_and = keyset_and,
    .nb_subtract = keyset_sub,
};

static PyTypeObject PtlPyDispatchKeySet_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pytorchlite._C.DispatchKeySet",
    .tp_basicsize = sizeof(PtlPyDispatchKeySet),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "DispatchKeySet(key=None): a set of dispatch keys",
    .tp_new = keyset_new,
    .tp_repr = (reprfunc)keyset_repr,
    .tp_hash = (hashfunc)keyset_hash,
    .tp_richcompare = keyset_richcompare,
    .tp_iter = (getiterfunc)keyset_iter,
    .tp_as_number = &keyset_as_number,
    .tp_methods = keyset_methods,
};

/* ---- the trampoline (Note [Python kernels]) ---- */

static const char *
qualname(const PtlOperator *op, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s%s", op->schema.name, op->schema.overload[0] ? "." : "",
             op->schema.overload);
    return buf;
}

/* A borrowed argument slot as a new Python object. */
static PyObject *
arg_to_py(const PtlIValue *v)
{
    if (v->tag == PTL_IV_GENERATOR) {
        PyErr_SetString(PyExc_NotImplementedError,
                        "a Python kernel can't take Generator arguments yet");
        return NULL;
    }
    return ptlpy_ivalue_to_py(v);
}

/* What returned the results being boxed: "the Python kernel registered for CPU", or a
 * dispatch mode's handler (Note [Python dispatch key]). */
static const char *
returner(PtlDispatchKey key, char *buf, size_t n)
{
    if (key == PTL_KEY_PYTHON) {
        return "__torch_dispatch__";
    }
    snprintf(buf, n, "the Python kernel registered for %s", ptl_dispatch_key_name(key));
    return buf;
}

static int
bad_return(const PtlOperator *op, PtlDispatchKey key, PyObject *o, const char *expected,
           int i)
{
    char name[160], who[96];
    PyErr_Format(PyExc_RuntimeError,
                 "%s: %s returned %R where its schema expects %s (return %d of %d)",
                 qualname(op, name, sizeof(name)), returner(key, who, sizeof(who)), o,
                 expected, i, op->schema.nrets);
    return -1;
}

/* Boxes o as return i of op into *out (a new reference); -1 with a Python error set. */
static int
ret_from_py(const PtlOperator *op, PtlDispatchKey key, int i, PyObject *o, PtlIValue *out)
{
    const PtlArg *r = &op->schema.rets[i];
    /* None for a Tensor is an undefined tensor, as the kernels return for a gradient that
     * output_mask did not ask for (convolution_backward), and as PyTorch accepts */
    if (o == Py_None && (r->optional || r->kind == PTL_ARG_TENSOR)) {
        *out = ptl_iv_none();
        return 0;
    }
    switch (r->kind) {
    case PTL_ARG_TENSOR:
        if (!PtlPyTensor_Check(o)) {
            return bad_return(op, key, o, "Tensor", i);
        }
        ptl_incref(PTLPY_IMPL(o));
        *out = ptl_iv_tensor(PTLPY_IMPL(o));
        return 0;
    case PTL_ARG_TENSORLIST: {
        if (!PyList_Check(o) && !PyTuple_Check(o)) {
            return bad_return(op, key, o, "Tensor[]", i);
        }
        PyObject *seq = PySequence_Fast(o, "");
        Py_ssize_t n = seq ? PySequence_Fast_GET_SIZE(seq) : 0;
        PtlTensorImpl **data = seq ? calloc((size_t)(n ? n : 1), sizeof(*data)) : NULL;
        if (data == NULL) {
            Py_XDECREF(seq);
            return seq ? (PyErr_NoMemory(), -1) : -1;
        }
        for (Py_ssize_t j = 0; j < n; j++) {
            PyObject *e = PySequence_Fast_GET_ITEM(seq, j);
            if (!PtlPyTensor_Check(e)) {
                while (j-- > 0) {
                    ptl_decref(data[j]);
                }
                free(data);
                Py_DECREF(seq);
                return bad_return(op, key, o, "Tensor[]", i);
            }
            ptl_incref(PTLPY_IMPL(e));
            data[j] = PTLPY_IMPL(e);
        }
        Py_DECREF(seq);
        *out = ptl_iv_tensorlist(data, n);
        out->owned = 1;
        return 0;
    }
    case PTL_ARG_BOOL:
        if (!PyBool_Check(o)) {
            return bad_return(op, key, o, "bool", i);
        }
        *out = ptl_iv_bool(o == Py_True);
        return 0;
    case PTL_ARG_INT:
        if (!PyLong_Check(o) || PyBool_Check(o)) {
            return bad_return(op, key, o, "int", i);
        }
        *out = ptl_iv_int(PyLong_AsLongLong(o));
        return PyErr_Occurred() ? -1 : 0;
    case PTL_ARG_FLOAT:
    case PTL_ARG_SCALAR:
        if (PyBool_Check(o) && r->kind == PTL_ARG_SCALAR) {
            *out = ptl_iv_bool(o == Py_True);
            return 0;
        }
        if (PyLong_Check(o) && !PyBool_Check(o) && r->kind == PTL_ARG_SCALAR) {
            *out = ptl_iv_int(PyLong_AsLongLong(o));
            return PyErr_Occurred() ? -1 : 0;
        }
        if (PyComplex_Check(o) && r->kind == PTL_ARG_SCALAR) {
            Py_complex z = PyComplex_AsCComplex(o);
            *out = ptl_iv_complex(z.real, z.imag);
            return PyErr_Occurred() ? -1 : 0;
        }
        if (!PyFloat_Check(o) && !(PyLong_Check(o) && !PyBool_Check(o))) {
            if (r->kind == PTL_ARG_SCALAR) {   /* PyTorch's IValue-to-Scalar message */
                PyErr_Format(PyExc_RuntimeError, "Cannot cast %S to number", o);
                return -1;
            }
            return bad_return(op, key, o, "float", i);
        }
        *out = ptl_iv_double(PyFloat_AsDouble(o));
        return 0;
    default:
        return bad_return(op, key, o, ptl_arg_kind_name((PtlArgKind)r->kind), i);
    }
}

/* Whether slot v of a call holds its argument's default, so PTLPY_BOXED_SKIP_DEFAULTS leaves
 * it out as PyTorch's boxed Python calls do (a tensor is never a default). */
static int
is_default(const PtlArg *a, const PtlIValue *v)
{
    const PtlIValue *d = &a->def;
    if (!a->has_default || v->tag != d->tag) {
        return 0;
    }
    switch (v->tag) {
    case PTL_IV_NONE:
        return 1;
    case PTL_IV_INT:
    case PTL_IV_MEMFORMAT:
        return v->u.i == d->u.i;
    case PTL_IV_DOUBLE:
        return v->u.d == d->u.d;
    case PTL_IV_BOOL:
        return v->u.b == d->u.b;
    case PTL_IV_INTLIST:
        if (v->u.il.n != d->u.il.n) {
            return 0;
        }
        for (int64_t i = 0; i < v->u.il.n; i++) {
            if (v->u.il.data[i] != d->u.il.data[i]) {
                return 0;
            }
        }
        return 1;
    default:
        return 0;
    }
}

int
ptlpy_call_boxed(const PtlOperator *op, PtlDispatchKey key, PyObject *fn, PyObject *lead,
                 int flags, PtlIValue *stack)
{
    const PtlSchema *sc = &op->schema;
    const int nlead = lead != NULL, skip = (flags & PTLPY_BOXED_SKIP_DEFAULTS) != 0;
    int npos = 0;
    while (npos < sc->nargs && !sc->args[npos].kwarg_only) {
        npos++;
    }
    int nargs = npos;   /* positional arguments passed: trailing defaults left out */
    while (skip && nargs > 0 && is_default(&sc->args[nargs - 1], &stack[nargs - 1])) {
        nargs--;
    }
    PyObject *args = PyTuple_New(nargs + nlead), *kwargs = NULL, *res = NULL, *seq = NULL;
    int filled = 0, rc = -1;
    if (args == NULL) {
        return -1;
    }
    if (lead != NULL) {
        Py_INCREF(lead);
        PyTuple_SET_ITEM(args, 0, lead);
    }
    /* keyword-only arguments go by name, in schema order (PyTorch's Python kernels) */
    for (int i = 0; i < sc->nargs; i++) {
        const int dropped = i < npos ? i >= nargs : skip && is_default(&sc->args[i], &stack[i]);
        if (dropped) {
            continue;
        }
        PyObject *o = arg_to_py(&stack[i]);
        if (o == NULL) {
            goto done;
        }
        if (i < npos) {
            PyTuple_SET_ITEM(args, i + nlead, o);
            continue;
        }
        if (kwargs == NULL && (kwargs = PyDict_New()) == NULL) {
            Py_DECREF(o);
            goto done;
        }
        int set = PyDict_SetItemString(kwargs, sc->args[i].name, o);
        Py_DECREF(o);
        if (set < 0) {
            goto done;
        }
    }
    if ((res = PyObject_Call(fn, args, kwargs)) == NULL) {
        goto done;
    }
    for (int i = 0; (flags & PTLPY_BOXED_BUMP_WRITES) && i < sc->nargs; i++) {
        if (sc->args[i].alias_write && stack[i].tag == PTL_IV_TENSOR) {
            ptl_tensor_bump_version(stack[i].u.t);
        }
    }
    if (sc->nrets == 0) {
        if (res != Py_None && !(PyTuple_Check(res) && PyTuple_GET_SIZE(res) == 0)) {
            bad_return(op, key, res, "None", 0);
            goto done;
        }
        rc = 0;
        goto done;
    }
    if (sc->nrets > 1) {
        if ((!PyTuple_Check(res) && !PyList_Check(res)) || PySequence_Size(res) != sc->nrets) {
            char name[160], who[96];
            PyErr_Format(PyExc_RuntimeError, "%s: %s returned %R where its schema expects a "
                         "tuple of %d values", qualname(op, name, sizeof(name)),
                         returner(key, who, sizeof(who)), res, sc->nrets);
            goto done;
        }
        if ((seq = PySequence_Fast(res, "")) == NULL) {
            goto done;
        }
    }
    for (; filled < sc->nrets; filled++) {
        PyObject *o = seq ? PySequence_Fast_GET_ITEM(seq, filled) : res;
        if (ret_from_py(op, key, filled, o, &stack[filled]) < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    if (rc < 0) {
        for (int i = 0; i < filled; i++) {
            ptl_ivalue_release(&stack[i]);
        }
    }
    Py_XDECREF(seq);
    Py_XDECREF(res);
    Py_XDECREF(kwargs);
    Py_DECREF(args);
    return rc;
}

/* Calls the Python kernel of op's running key, (keyset, *args) when with_keyset; 0, or -1
 * with a Python error set.  Holds the GIL. */
static int
call_python_kernel(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *stack,
                   int with_keyset)
{
    PtlDispatchKey key = ptl_keyset_highest(ks);
    PyObject *lead = with_keyset ? keyset_object(ks) : NULL;
    if (with_keyset && lead == NULL) {
        return -1;
    }
    int rc = ptlpy_call_boxed(op, key, ptl_dispatcher_kernel_data(op, ks), lead,
                              key != PTL_KEY_AUTOGRAD ? PTLPY_BOXED_BUMP_WRITES : 0, stack);
    Py_XDECREF(lead);
    return rc;
}

static int
run_python_kernel(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *stack,
                  int with_keyset)
{
    PyGILState_STATE g = PyGILState_Ensure();
    int rc = call_python_kernel(op, ks, stack, with_keyset);
    if (rc < 0) {
        ptl_error_set(PTL_ERR_PYTHON, "a Python kernel failed");
    }
    PyGILState_Release(g);
    return rc;
}

static int
python_kernel(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *stack)
{
    return run_python_kernel(op, ks, stack, 0);
}

static int
python_kernel_with_keyset(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *stack)
{
    return run_python_kernel(op, ks, stack, 1);
}

/* ---- registration (pytorchlite.library) ---- */

/* The operator named "ns::name" or "ns::name.overload"; NULL with a RuntimeError. */
static PtlOperator *
find_op(const char *name)
{
    PtlOperator *op = ptl_dispatcher_find(name, NULL);
    if (op == NULL) {
        PyErr_Format(PyExc_RuntimeError,
                     "operator %s does not exist; define it with Library.define first", name);
    }
    return op;
}

/* The slots a key names: one, or CPU and CUDA for the CompositeExplicitAutograd alias.
 * Returns how many, or -1 with an error set. */
static int
key_slots(PyObject *key, PtlDispatchKey *slots)
{
    if (PyUnicode_Check(key) &&
        PyUnicode_CompareWithASCIIString(key, "CompositeExplicitAutograd") == 0) {
        slots[0] = PTL_KEY_CPU;
        slots[1] = PTL_KEY_CUDA;
        return 2;
    }
    return parse_key(key, &slots[0]) < 0 ? -1 : 1;
}

static int
is_python_kernel(PtlKernel k)
{
    return k == python_kernel || k == python_kernel_with_keyset;
}

/* Sets one slot to fn (NULL: clears it), releasing the callable it held; 0 or -1. */
static int
set_slot(PtlOperator *op, PtlDispatchKey k, PyObject *fn, int with_keyset, const char *origin)
{
    PyObject *old = is_python_kernel(op->kernels[k]) ? op->kernel_data[k] : NULL;
    PtlKernel kernel = fn == NULL ? NULL : with_keyset ? python_kernel_with_keyset : python_kernel;
    if (ptl_dispatcher_set_kernel(op, k, kernel, fn, origin) < 0) {
        ptlpy_raise();
        return -1;
    }
    Py_XINCREF(fn);
    Py_XDECREF(old);
    return 0;
}

/* _dispatch_library_impl(name, key, fn, with_keyset, origin) -> the origin of the kernel it
 * replaced, or None */
static PyObject *
py_library_impl(PyObject *m, PyObject *args)
{
    const char *name, *origin;
    PyObject *key, *fn, *prev = NULL;
    int with_keyset;
    PtlDispatchKey slots[2];
    char where[512];
    (void)m;
    if (!PyArg_ParseTuple(args, "sOOps:_dispatch_library_impl", &name, &key, &fn, &with_keyset,
                          &origin)) {
        return NULL;
    }
    int n = key_slots(key, slots);
    PtlOperator *op = n < 0 ? NULL : find_op(name);
    if (op == NULL) {
        return NULL;
    }
    if (!PyCallable_Check(fn)) {
        return PyErr_Format(PyExc_TypeError, "expected a callable kernel, got %s",
                            Py_TYPE(fn)->tp_name);
    }
    snprintf(where, sizeof(where), "%s%s", origin, n == 2 ? ALIAS_EXPLICIT : "");
    for (int i = 0; i < n; i++) {
        if (op->kernels[slots[i]] != NULL && prev == NULL &&
            (prev = PyUnicode_FromString(op->kernel_origin[slots[i]])) == NULL) {
            return NULL;
        }
        if (set_slot(op, slots[i], fn, with_keyset, where) < 0) {
            Py_XDECREF(prev);
            return NULL;
        }
    }
    if (prev == NULL) {
        Py_RETURN_NONE;
    }
    return prev;
}

/* _dispatch_library_remove(name, key, fn): clears the slots of key that still hold fn */
static PyObject *
py_library_remove(PyObject *m, PyObject *args)
{
    const char *name;
    PyObject *key, *fn;
    PtlDispatchKey slots[2];
    (void)m;
    if (!PyArg_ParseTuple(args, "sOO:_dispatch_library_remove", &name, &key, &fn)) {
        return NULL;
    }
    int n = key_slots(key, slots);
    PtlOperator *op = n < 0 ? NULL : ptl_dispatcher_find(name, NULL);
    for (int i = 0; op != NULL && i < n; i++) {
        if (is_python_kernel(op->kernels[slots[i]]) && op->kernel_data[slots[i]] == fn &&
            set_slot(op, slots[i], NULL, 0, "") < 0) {
            return NULL;
        }
    }
    if (n < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* _dispatch_library_define(schema) -> "name" or "name.overload" */
static PyObject *
py_library_define(PyObject *m, PyObject *arg)
{
    (void)m;
    const char *text = PyUnicode_AsUTF8(arg);
    PtlOperator *op = text ? ptl_dispatcher_add_op(text, PTL_OPF_FUNCTION) : NULL;
    if (op == NULL) {
        return text ? ptlpy_raise() : NULL;
    }
    const char *name = strstr(op->schema.name, "::");
    return PyUnicode_FromFormat("%s%s%s", name ? name + 2 : op->schema.name,
                                op->schema.overload[0] ? "." : "", op->schema.overload);
}

/* _dispatch_library_undefine(name): releases the operator's Python kernels and removes it */
static PyObject *
py_library_undefine(PyObject *m, PyObject *arg)
{
    (void)m;
    const char *name = PyUnicode_AsUTF8(arg);
    PtlOperator *op = name ? ptl_dispatcher_find(name, NULL) : NULL;
    if (op == NULL) {
        return name ? (PyErr_Format(PyExc_RuntimeError, "operator %s does not exist", name), NULL)
                    : NULL;
    }
    for (int k = 0; k < PTL_KEY_COUNT; k++) {
        PyObject *old = is_python_kernel(op->kernels[k]) ? op->kernel_data[k] : NULL;
        ptl_dispatcher_set_kernel(op, (PtlDispatchKey)k, NULL, NULL, "");
        Py_XDECREF(old);
    }
    if (ptl_dispatcher_remove_op(op) < 0) {
        return ptlpy_raise();
    }
    Py_RETURN_NONE;
}

/* _dispatch_schema(name) -> the operator's canonical schema, or None when there is none */
static PyObject *
py_dispatch_schema(PyObject *m, PyObject *arg)
{
    (void)m;
    const char *name = PyUnicode_AsUTF8(arg);
    char buf[2048];
    if (name == NULL) {
        return NULL;
    }
    const PtlOperator *op = ptl_dispatcher_find(name, NULL);
    if (op == NULL) {
        Py_RETURN_NONE;
    }
    ptl_schema_format(&op->schema, buf, sizeof(buf));
    return PyUnicode_FromString(buf);
}

/* _dispatch_has_kernel_for_dispatch_key(name, key) */
static PyObject *
py_has_kernel_for_key(PyObject *m, PyObject *args)
{
    const char *name;
    PyObject *key;
    PtlDispatchKey slots[2];
    (void)m;
    if (!PyArg_ParseTuple(args, "sO:_dispatch_has_kernel_for_dispatch_key", &name, &key)) {
        return NULL;
    }
    int n = key_slots(key, slots);
    const PtlOperator *op = n < 0 ? NULL : find_op(name);
    if (op == NULL) {
        return NULL;
    }
    if (n == 2) {   /* the alias: a CPU kernel registered through it */
        const char *o = op->kernel_origin[PTL_KEY_CPU];
        size_t len = o ? strlen(o) : 0, tail = strlen(ALIAS_EXPLICIT);
        return PyBool_FromLong(len >= tail && strcmp(o + len - tail, ALIAS_EXPLICIT) == 0);
    }
    return PyBool_FromLong(op->kernels[slots[0]] != NULL);
}

/* _dispatch_keys(tensor=None) -> the tensor's DispatchKeySet, or without a tensor every
 * dispatch key's name, lowest priority first (Note [Dispatch key order]) */
static PyObject *
py_dispatch_keys(PyObject *m, PyObject *args)
{
    PyObject *t = NULL;
    (void)m;
    if (!PyArg_ParseTuple(args, "|O:_dispatch_keys", &t)) {
        return NULL;
    }
    if (t != NULL) {
        if (!PtlPyTensor_Check(t)) {
            return PyErr_Format(PyExc_TypeError, "_dispatch_keys(): expected a Tensor, got %s",
                                Py_TYPE(t)->tp_name);
        }
        return keyset_object(PTLPY_IMPL(t)->keys);
    }
    PyObject *list = PyList_New(PTL_KEY_COUNT);
    for (int k = 0; list != NULL && k < PTL_KEY_COUNT; k++) {
        PyObject *s = PyUnicode_FromString(ptl_dispatch_key_name((PtlDispatchKey)k));
        if (s == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, k, s);
    }
    return list;
}

static PyObject *
py_tls_include_set(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return keyset_object(ptl_tls()->included);
}

static PyObject *
py_tls_exclude_set(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return keyset_object(ptl_tls()->excluded);
}

static PyMethodDef library_methods[] = {
    {"_dispatch_keys", py_dispatch_keys, METH_VARARGS,
     "_dispatch_keys(tensor): its DispatchKeySet; _dispatch_keys(): every key, lowest first"},
    {"_dispatch_has_kernel_for_dispatch_key", py_has_kernel_for_key, METH_VARARGS, NULL},
    {"_dispatch_tls_local_include_set", py_tls_include_set, METH_NOARGS, NULL},
    {"_dispatch_tls_local_exclude_set", py_tls_exclude_set, METH_NOARGS, NULL},
    {"_dispatch_schema", py_dispatch_schema, METH_O, "an operator's schema, or None"},
    {"_dispatch_library_define", py_library_define, METH_O, "define an operator from a schema"},
    {"_dispatch_library_undefine", py_library_undefine, METH_O, NULL},
    {"_dispatch_library_impl", py_library_impl, METH_VARARGS,
     "_dispatch_library_impl(name, key, fn, with_keyset, origin): a Python kernel"},
    {"_dispatch_library_remove", py_library_remove, METH_VARARGS, NULL},
    {NULL},
};

int
ptlpy_library_init(PyObject *module)
{
    if (PyType_Ready(&PtlPyDispatchKeySet_Type) < 0 || make_key_enum(module) < 0 ||
        PyModule_AddFunctions(module, library_methods) < 0) {
        return -1;
    }
    Py_INCREF(&PtlPyDispatchKeySet_Type);
    if (PyModule_AddObject(module, "DispatchKeySet", (PyObject *)&PtlPyDispatchKeySet_Type) < 0) {
        Py_DECREF(&PtlPyDispatchKeySet_Type);
        return -1;
    }
    return 0;
}
