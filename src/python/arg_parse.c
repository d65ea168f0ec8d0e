/* arg_parse.c -- schema-driven Python bindings: one callable per operator name, its
 * overloads tried in ops.def order but for PyTorch's Tensor-before-Scalar rule
 * (group_add).  Mirrors torch/csrc/utils/python_arg_parser.cpp.
 *
 * Note [Binding from schemas]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * There is no generated binding code: at import every operator name becomes a PtlPyOpFunc
 * (a vectorcall object) for pytorchlite.<name> and, when flagged M, a method descriptor of
 * TensorBase (Py_TPFLAGS_METHOD_DESCRIPTOR, so `x.add(y)` costs no bound-method object).
 * A call walks the overloads, converting Python arguments straight onto a stack of
 * PtlIValue (no tuple or dict is built), and dispatches the first overload that accepts
 * them.  Conversions borrow: tensors stay owned by their Python objects, strings by their
 * str objects; only numbers turned into wrapped 0-dim tensors and long int lists are owned
 * by the call's scratch space and released after it. */
#include "ptlpy.h"
#include "arg_parse_impl.h"
#include "../aten/resize_output.h"
#include "../autograd/autograd.h"

#include <string.h>


typedef struct Scratch {
    int64_t lists[PTL_SCHEMA_MAX_ARGS][PTL_MAX_DIMS];
    void *heap[PTL_SCHEMA_MAX_ARGS];
    int nheap;
    PtlTensorImpl *owned[PTL_SCHEMA_MAX_ARGS];
    int nowned;
    int requires_grad;   /* factory kwarg, -1 when absent */
    int pin_memory;      /* factory kwarg pin_memory=True: the result is pinned */
    int overloaded;      /* a tensor argument's type has __torch_function__ (Note [Torch
                          * function]): the call goes there instead */
    int boxed;           /* a call of pytorchlite.ops (torch.ops' conversions) */
} Scratch;

static void
scratch_init(Scratch *sc, int boxed)
{
    sc->boxed = boxed;
    sc->nheap = 0;
    sc->nowned = 0;
    sc->requires_grad = -1;
    sc->pin_memory = 0;
    sc->overloaded = 0;
}

static void
scratch_clear(Scratch *sc)
{
    for (int i = 0; i < sc->nheap; i++) {
        PyMem_Free(sc->heap[i]);
    }
    for (int i = 0; i < sc->nowned; i++) {
        ptl_decref(sc->owned[i]);
    }
    sc->nheap = 0;
    sc->nowned = 0;
    sc->requires_grad = -1;
}

void
ptlpy_fill_defaults(const PtlOperator *op, PtlIValue *stack, int from)
{
    for (int i = from; i < op->schema.nargs; i++) {
        stack[i] = op->schema.args[i].def;
    }
}

/* ---- conversions: 1 accepted, 0 not this type, -1 Python error ---- */

static int
is_int_like(PyObject *o)
{
    if (PyLong_Check(o)) {
        return !PyBool_Check(o);
    }
    if (PtlPyTensor_Check(o)) {
        return 0;
    }
    return Py_TYPE(o)->tp_as_number != NULL && Py_TYPE(o)->tp_as_number->nb_index != NULL &&
           !PyFloat_Check(o);
}

static int
to_int(PyObject *o, int64_t *out)
{
    if (!is_int_like(o)) {
        return 0;
    }
    int overflow = 0;
    PyObject *idx = PyNumber_Index(o);
    if (idx == NULL) {
        return -1;
    }
    long long v = PyLong_AsLongLongAndOverflow(idx, &overflow);
    Py_DECREF(idx);
    if (overflow) {
        PyErr_SetString(PyExc_RuntimeError, "Overflow when unpacking long");
        return -1;
    }
    *out = v;
    return 1;
}

static int
to_scalar(PyObject *o, PtlIValue *out)
{
    if (PyBool_Check(o)) {
        *out = ptl_iv_bool(o == Py_True);
        return 1;
    }
    if (PyFloat_Check(o)) {
        *out = ptl_iv_double(PyFloat_AS_DOUBLE(o));
        return 1;
    }
    if (PyComplex_Check(o)) {   /* Note [Complex Scalars] */
        Py_complex z = PyComplex_AsCComplex(o);
        if (z.real == -1.0 && PyErr_Occurred()) {
            return -1;
        }
        *out = ptl_iv_complex(z.real, z.imag);
        return 1;
    }
    int64_t i;
    if (PyLong_Check(o)) {   /* Note [Huge int Scalars] */
        if (ptlpy_unpack_scalar_long(o, &i) < 0) {
            return -1;
        }
        *out = ptl_iv_int(i);
        return 1;
    }
    int r = to_int(o, &i);
    if (r != 0) {
        *out = ptl_iv_int(i);
        return r;
    }
    if (PtlPyTensor_Check(o)) {
        /* a 0-dim tensor stands for a number only when no gradient has to reach it (PyTorch's
         * parser rule): one that requires grad takes the Tensor overload, so fill_(v),
         * masked_fill(m, v) ... differentiate with respect to v */
        PtlTensorImpl *t = PTLPY_IMPL(o);
        if (t->numel != 1 || t->dim != 0 || ptl_requires_grad(t) || t->sparse != NULL ||
            t->device.type != PTL_DEVICE_CPU) {  /* no value to read here (meta) */
            return 0;
        }
        if (ptl_dtype_is_complex(t->dtype)) {
            double z[2];   /* complex128's layout: real, imaginary */
            ptl_convert_scalar((char *)z, PTL_DTYPE_COMPLEX128, ptl_tensor_data(t), t->dtype);
            *out = ptl_iv_complex(z[0], ptl_tensor_is_conj(t) ? -z[1] : z[1]);
        }
        else if (ptl_dtype_is_floating(t->dtype)) {
            *out = ptl_iv_double(ptl_item_double(t));
        }
        else if (t->dtype == PTL_DTYPE_BOOL) {
            *out = ptl_iv_bool(ptl_item_int(t) != 0);
        }
        else {
            *out = ptl_iv_int(ptl_item_int(t));
        }
        return 1;
    }
    if (Py_TYPE(o)->tp_as_number != NULL && Py_TYPE(o)->tp_as_number->nb_float != NULL &&
        !PyUnicode_Check(o)) {
        double d = PyFloat_AsDouble(o);
        if (d == -1.0 && PyErr_Occurred()) {
            return -1;
        }
        *out = ptl_iv_double(d);
        return 1;
    }
    return 0;
}

/* Room for n 8-byte list items of argument `slot`: its scratch row, or (past PTL_MAX_DIMS)
 * a heap block the scratch releases; NULL with MemoryError set */
static void *
list_buffer(Scratch *sc, int slot, Py_ssize_t n)
{
    if (n <= PTL_MAX_DIMS) {
        return sc->lists[slot];
    }
    void *buf = PyMem_Malloc(sizeof(int64_t) * (size_t)n);
    if (buf == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    sc->heap[sc->nheap++] = buf;
    return buf;
}

/* PyTorch's double: a float, an int (of any size), a bool or a 0-dim tensor no gradient has
 * to reach (to_scalar's rules), not a complex */
static int
to_double(PyObject *o, double *out)
{
    if (PyLong_CheckExact(o)) {
        double d = PyLong_AsDouble(o);
        if (d == -1.0 && PyErr_Occurred()) {
            return -1;
        }
        *out = d;
        return 1;
    }
    PtlIValue v;
    int r = to_scalar(o, &v);
    if (r != 1) {
        return r;
    }
    switch (v.tag) {
    case PTL_IV_DOUBLE:
        *out = v.u.d;
        return 1;
    case PTL_IV_INT:
        *out = (double)v.u.i;
        return 1;
    case PTL_IV_BOOL:
        *out = v.u.b ? 1.0 : 0.0;
        return 1;
    default:
        return 0;
    }
}

/* float[N]: a list or tuple of doubles, or (with a length N) one double for all N */
static int
to_floatlist(const PtlArg *a, PyObject *o, PtlIValue *out, Scratch *sc, int slot)
{
    double *buf = (double *)sc->lists[slot];   /* PTL_MAX_DIMS 8-byte slots */
    Py_ssize_t n;
    if (!PyTuple_Check(o) && !PyList_Check(o)) {
        if (a->list_len <= 0 || PtlPyTensor_Check(o)) {
            return 0;
        }
        double d;
        int r = to_double(o, &d);
        if (r <= 0) {
            return r;
        }
        for (int i = 0; i < a->list_len; i++) {
            buf[i] = d;
        }
        *out = (PtlIValue){.tag = PTL_IV_DOUBLELIST, .u.dl = {buf, a->list_len}};
        return 1;
    }
    n = PySequence_Fast_GET_SIZE(o);
    if ((buf = list_buffer(sc, slot, n)) == NULL) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int r = to_double(PySequence_Fast_GET_ITEM(o, i), &buf[i]);
        if (r <= 0) {
            return r;
        }
    }
    *out = (PtlIValue){.tag = PTL_IV_DOUBLELIST, .u.dl = {buf, n}};
    return 1;
}

static int
to_intlist(const PtlArg *a, PyObject *o, PtlIValue *out, Scratch *sc, int slot)
{
    int64_t v;
    int r = to_int(o, &v);
    if (r < 0) {
        return -1;
    }
    if (r == 1) {   /* a single int stands for [v] * N, only where the list has a length N */
        if (a->list_len <= 0) {
            return 0;
        }
        int n = a->list_len;
        for (int i = 0; i < n; i++) {
            sc->lists[slot][i] = v;
        }
        *out = ptl_iv_intlist(sc->lists[slot], n);
        return 1;
    }
    if (!PyTuple_Check(o) && !PyList_Check(o)) {
        return 0;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    int64_t *buf = list_buffer(sc, slot, n);
    if (buf == NULL) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *e = PySequence_Fast_GET_ITEM(o, i);
        if (a->elem_bool && PyBool_Check(e)) {   /* bool[N] takes bools, or ints as PyTorch */
            buf[i] = e == Py_True;
            continue;
        }
        r = to_int(e, &buf[i]);
        if (r <= 0) {
            return r;
        }
        buf[i] = a->elem_bool ? buf[i] != 0 : buf[i];
    }
    *out = ptl_iv_intlist(buf, n);
    return 1;
}

static int
to_tensorlist(const PtlArg *a, PyObject *o, PtlIValue *out, Scratch *sc)
{
    if (!PyTuple_Check(o) && !PyList_Check(o)) {
        return 0;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    PtlTensorImpl **arr = PyMem_Malloc(sizeof(PtlTensorImpl *) * (size_t)(n ? n : 1));
    if (arr == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    sc->heap[sc->nheap++] = arr;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *e = PySequence_Fast_GET_ITEM(o, i);
        if (e == Py_None && a->elem_optional) {
            arr[i] = NULL;
        }
        else if (PtlPyTensor_Check(e)) {
            arr[i] = PTLPY_IMPL(e);
            if (PTL_UNLIKELY(Py_TYPE(e) != ptlpy_tensor_class) && ptlpy_tf_subclass(e)) {
                sc->overloaded = 1;
            }
        }
        else {
            return 0;
        }
    }
    *out = ptl_iv_tensorlist(arr, n);
    return 1;
}

/* A bool as torch.ops reads one (pybind11's converting bool cast): None is False, and an
 * object whose type has nb_bool (an int, a float, a one-element tensor) is its truth value;
 * anything else (a str, a list), or an nb_bool that raises, refuses: 1 or 0 */
static int
to_bool_boxed(PyObject *o, PtlIValue *out)
{
    int v = 0;
    if (o != Py_None) {
        PyNumberMethods *nb = Py_TYPE(o)->tp_as_number;
        if (nb == NULL || nb->nb_bool == NULL) {
            return 0;
        }
        if ((v = nb->nb_bool(o)) < 0) {
            PyErr_Clear();
            return 0;
        }
    }
    *out = ptl_iv_bool(v);
    return 1;
}

static int
convert(const PtlOperator *op, const PtlArg *a, PyObject *o, PtlIValue *out, Scratch *sc,
        int slot)
{
    if (o == Py_None && (a->optional || (a->has_default && a->def.tag == PTL_IV_NONE))) {
        *out = ptl_iv_none();
        return 1;
    }
    /* PyTorch's parser reads None for an int list whose default is [] as that default
     * (amax(x, None), roll(x, 1, None)); a list without a default, or with another, refuses
     * None (logsumexp(x, None), max_pool2d's padding=None) */
    if (o == Py_None && a->kind == PTL_ARG_INTLIST && a->has_default &&
        a->def.tag == PTL_IV_INTLIST && a->def.u.il.n == 0) {
        *out = a->def;
        return 1;
    }
    switch ((PtlArgKind)a->kind) {
    case PTL_ARG_TENSOR:
        if (PtlPyTensor_Check(o)) {
            *out = ptl_iv_tensor(PTLPY_IMPL(o));
            if (PTL_UNLIKELY(Py_TYPE(o) != ptlpy_tensor_class) && ptlpy_tf_subclass(o)) {
                sc->overloaded = 1;
            }
            return 1;
        }
        if ((op->flags & PTL_OPF_POINTWISE) &&
            (PyLong_Check(o) || PyFloat_Check(o) || PyComplex_Check(o))) {
            int overflow = 0;
            if (sc->boxed && PyLong_Check(o)) {
                PyLong_AsLongLongAndOverflow(o, &overflow);
            }
            if (overflow) {   /* torch.ops refuses an int for a Tensor: its RuntimeError */
                return 0;
            }
            PtlTensorImpl *t = ptlpy_to_impl(o);
            if (t == NULL) {
                return -1;
            }
            sc->owned[sc->nowned++] = t;
            *out = ptl_iv_tensor(t);
            return 1;
        }
        return 0;
    case PTL_ARG_INT: {
        int64_t v;
        int r = to_int(o, &v);
        if (r == 0 && PtlPyTensor_Check(o)) {
            /* PyTorch's int: also a 0-dim integer tensor (not bool) no gradient has to reach,
             * as torch.fft.fft(x, n=torch.tensor(4)) or x.sum(torch.tensor(0)) */
            PtlTensorImpl *t = PTLPY_IMPL(o);
            if (t->dim != 0 || ptl_dtype_is_floating(t->dtype) ||
                ptl_dtype_is_complex(t->dtype) || t->dtype == PTL_DTYPE_BOOL ||
                ptl_requires_grad(t) || t->sparse != NULL || t->device.type != PTL_DEVICE_CPU) {
                return 0;
            }
            v = ptl_item_int(t);
            r = 1;
        }
        if (r == 1) {
            *out = ptl_iv_int(v);
        }
        return r;
    }
    case PTL_ARG_FLOAT: {
        double d;
        int r = to_double(o, &d);
        if (r == 1) {
            *out = ptl_iv_double(d);
        }
        return r;
    }
    case PTL_ARG_BOOL:
        if (PyBool_Check(o)) {
            *out = ptl_iv_bool(o == Py_True);
            return 1;
        }
        return sc->boxed ? to_bool_boxed(o, out) : 0;
    case PTL_ARG_STR:
        if (PyUnicode_Check(o)) {
            const char *s = PyUnicode_AsUTF8(o);
            if (s == NULL) {
                return -1;
            }
            *out = ptl_iv_string(s);
            return 1;
        }
        return 0;
    case PTL_ARG_SCALAR:
        return to_scalar(o, out);
    case PTL_ARG_DTYPE: {
        PtlDtype dt = ptlpy_parse_dtype(o, 0);
        if (dt == PTL_DTYPE_UNDEFINED) {
            return 0;
        }
        *out = ptl_iv_dtype(dt);
        return 1;
    }
    case PTL_ARG_DEVICE: {
        PtlDevice d;
        if (!Py_IS_TYPE(o, &PtlPyDevice_Type) && !PyUnicode_Check(o) && !is_int_like(o)) {
            return 0;
        }
        if (ptlpy_parse_device(o, &d, 1) < 0) {
            return -1;
        }
        if (d.type == PTL_DEVICE_CPU) {   /* cpu:1 is a device object's; a tensor's is cpu */
            d.index = -1;
        }
        *out = ptl_iv_device(d);
        return 1;
    }
    case PTL_ARG_GENERATOR:
        return ptlpy_generator_unwrap(o, out);
    case PTL_ARG_LAYOUT:
        out->tag = PTL_IV_LAYOUT;
        out->owned = 0;
        out->u.p = o;
        return 1;
    case PTL_ARG_MEMFORMAT: {
        /* always keyword-only, so no other overload takes this value: PyTorch's message */
        const char *name = strrchr(op->schema.name, ':');
        if (Py_IS_TYPE(o, &PtlPyMemoryFormat_Type)) {
            *out = ptl_iv_memory_format(((PtlPyMemoryFormat *)o)->format);
            return 1;
        }
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be torch.memory_format, not %s",
                     name != NULL ? name + 1 : op->schema.name, a->name, Py_TYPE(o)->tp_name);
        return -1;
    }
    case PTL_ARG_TENSORLIST:
        return to_tensorlist(a, o, out, sc);
    case PTL_ARG_INTLIST:
        return to_intlist(a, o, out, sc, slot);
    case PTL_ARG_FLOATLIST:
        return to_floatlist(a, o, out, sc, slot);
    default:
        return 0;
    }
}

static int
name_matches(const PtlArg *a, int index, const char *kw)
{
    return strcmp(a->name, kw) == 0 || (index == 0 && strcmp(kw, "input") == 0 &&
                                         strcmp(a->name, "self") == 0);
}

/* A factory (a `device` argument and no tensor argument) called without a device, or with
 * device=None, takes the thread's default device when one is set (Note [The default
 * device]). */
static int
default_device_applies(const PtlOperator *op, PtlIValue *out)
{
    PtlDevice d;
    if (op->tensor_args != 0 || !ptlpy_default_device(&d) ||
        strcmp(op->schema.name, "aten::normal") == 0) {
        return 0;
    }
    *out = ptl_iv_device(d);
    return 1;
}

/* 1: the overload accepts the arguments (stack filled); 0: it does not; -1: error. */
static int
try_parse(const PtlOperator *op, int method, PyObject *const *args, Py_ssize_t nargs,
          PyObject *kwnames, PtlIValue *stack, Scratch *sc)
{
    const PtlSchema *s = &op->schema;
    uint32_t given = 0;
    int npos = 0;
    while (npos < s->nargs && !s->args[npos].kwarg_only) {
        npos++;
    }
    Py_ssize_t ai = 0;
    for (int i = 0; i < npos && ai < nargs; i++, ai++) {
        const PtlArg *a = &s->args[i];
        int r;
        if (a->kind == PTL_ARG_INTLIST && i == npos - 1 && npos == 1 + method &&
            is_int_like(args[ai])) {
            /* varargs form: x.view(2, 3), zeros(2), x.permute(0): only when the list is the
             * one positional parameter of the Python signature (self aside: PyTorch's
             * allow_varargs_intlist), so torch.permute(x, 0) refuses an int as PyTorch's */
            Py_ssize_t n = nargs - ai;
            int64_t *buf = list_buffer(sc, i, n);
            if (buf == NULL) {
                return -1;
            }
            for (Py_ssize_t k = 0; k < n; k++) {
                r = to_int(args[ai + k], &buf[k]);
                if (r <= 0) {
                    return r;
                }
            }
            stack[i] = ptl_iv_intlist(buf, n);
            given |= 1u << i;
            ai = nargs;
            break;
        }
        r = convert(op, a, args[ai], &stack[i], sc, i);
        if (r <= 0) {
            return r;
        }
        given |= 1u << i;
    }
    if (ai < nargs) {
        return 0;   /* too many positional arguments */
    }
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        const char *kw = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
        PyObject *v = args[nargs + k];
        int i;
        if (kw == NULL) {
            return -1;
        }
        if (strcmp(kw, "requires_grad") == 0 && op->device_arg >= 0 && PyBool_Check(v)) {
            sc->requires_grad = v == Py_True;
            continue;
        }
        for (i = 0; i < s->nargs; i++) {
            if (name_matches(&s->args[i], i, kw)) {
                break;
            }
        }
        if (i == s->nargs || (given & (1u << i))) {
            return 0;
        }
        sc->pin_memory |= v == Py_True && op->device_arg >= 0 && strcmp(kw, "pin_memory") == 0;
        int r = convert(op, &s->args[i], v, &stack[i], sc, i);
        if (r <= 0) {
            return r;
        }
        given |= 1u << i;
    }
    for (int i = 0; i < s->nargs; i++) {
        if (given & (1u << i)) {
            continue;
        }
        const PtlArg *a = &s->args[i];
        if (a->has_default) {
            stack[i] = a->def;
        }
        else if (a->optional && i != s->out_index) {
            stack[i] = ptl_iv_none();
        }
        else {
            return 0;
        }
    }
    if (op->device_arg >= 0 && stack[op->device_arg].tag == PTL_IV_NONE) {
        default_device_applies(op, &stack[op->device_arg]);
    }
    return 1;
}

/* ---- returns ---- */

static PyObject *return_types = NULL;   /* dict: "max" -> pytorchlite.return_types.max */

static PyObject *
ret_to_py(const PtlArg *r, PtlIValue *v)
{
    switch (v->tag) {
    case PTL_IV_NONE: Py_RETURN_NONE;
    case PTL_IV_TENSOR: {
        PtlTensorImpl *t = v->u.t;
        v->tag = PTL_IV_NONE;
        return ptlpy_wrap(t);
    }
    case PTL_IV_TENSORLIST: {
        PyObject *tup = PyTuple_New(v->u.tl.n);
        for (int64_t i = 0; i < v->u.tl.n; i++) {
            PtlTensorImpl *t = v->u.tl.data[i];
            v->u.tl.data[i] = NULL;
            PyObject *o = tup ? ptlpy_wrap(t) : NULL;
            if (o == NULL) {
                if (tup == NULL) {
                    ptl_decref(t);
                }
                Py_CLEAR(tup);
                continue;
            }
            PyTuple_SET_ITEM(tup, i, o);
        }
        if (v->owned) {
            free(v->u.tl.data);
        }
        v->tag = PTL_IV_NONE;
        return tup;
    }
    case PTL_IV_INT: return PyLong_FromLongLong(v->u.i);
    case PTL_IV_DOUBLE: return PyFloat_FromDouble(v->u.d);
    case PTL_IV_COMPLEX: return PyComplex_FromDoubles(v->u.z.re, v->u.z.im);
    case PTL_IV_BOOL: return PyBool_FromLong(v->u.b);
    default:
        (void)r;
        PyErr_SetString(PyExc_RuntimeError, "unsupported return type");
        return NULL;
    }
}

PyObject *
ptlpy_call_op(const PtlOperator *op, PtlIValue *stack)
{
    const PtlSchema *s = &op->schema;
    if (PTL_UNLIKELY(ptlpy_profiler_with_stack) && ptlpy_profiler_note_stack() < 0) {
        return NULL;
    }
    if (ptl_dispatcher_call(op, stack) < 0) {
        return ptlpy_raise();
    }
    if (ptlpy_flush_warnings() < 0) {
        for (int i = 0; i < s->nrets; i++) {
            ptl_ivalue_release(&stack[i]);
        }
        return NULL;
    }
    if (s->nrets == 0) {
        Py_RETURN_NONE;
    }
    if (s->nrets == 1) {
        return ret_to_py(&s->rets[0], &stack[0]);
    }
    PyObject *tup = PyTuple_New(s->nrets);
    for (int i = 0; i < s->nrets; i++) {
        PyObject *o = ret_to_py(&s->rets[i], &stack[i]);
        if (o == NULL || tup == NULL) {
            Py_XDECREF(o);
            Py_CLEAR(tup);
            continue;
        }
        PyTuple_SET_ITEM(tup, i, o);
    }
    if (tup == NULL) {
        for (int i = 0; i < s->nrets; i++) {
            ptl_ivalue_release(&stack[i]);
        }
        return NULL;
    }
    if (s->rets_named && return_types != NULL) {
        PyObject *cls = PyDict_GetItemString(return_types, s->name + 6);
        if (cls != NULL) {
            PyObject *res = PyObject_Call(cls, tup, NULL);
            Py_DECREF(tup);
            return res;
        }
    }
    return tup;
}

/* ---- for arg_errors.c ---- */

int
ptlpy_is_int_like(PyObject *o)
{
    return is_int_like(o);
}

int
ptlpy_arg_name_matches(const PtlArg *a, int index, const char *kw)
{
    return name_matches(a, index, kw);
}

int
ptlpy_arg_accepts(const PtlOperator *op, int i, PyObject *v, int boxed)
{
    Scratch sc;
    PtlIValue iv;
    scratch_init(&sc, boxed);
    int r = convert(op, &op->schema.args[i], v, &iv, &sc, i);
    scratch_clear(&sc);
    return r;
}

/* ---- the callable ---- */

/* The vectorcall arguments without keyword `at`: the values in buf (room for
 * PTL_SCHEMA_MAX_ARGS), the remaining keyword names in *names (NULL when none is left). */
static int
without_keyword(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, Py_ssize_t at,
                PyObject **buf, PyObject **names)
{
    Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
    *names = nkw > 1 ? PyTuple_New(nkw - 1) : NULL;
    if (nkw > 1 && *names == NULL) {
        return -1;
    }
    memcpy(buf, args, sizeof(PyObject *) * (size_t)nargs);
    for (Py_ssize_t k = 0, j = 0; k < nkw; k++) {
        if (k != at) {
            PyObject *name = PyTuple_GET_ITEM(kwnames, k);
            Py_INCREF(name);
            PyTuple_SET_ITEM(*names, j, name);
            buf[nargs + j++] = args[nargs + k];
        }
    }
    return 0;
}

/* PyTorch's Python signature of a function with an out= overload ends in `Tensor out=None`:
 * a call that passes out=None is the call without it.  Calls vc (the binding's or the
 * checker's vectorcall) without that keyword when f has an out overload and the call passes
 * out=None; NULL with *done = 0 otherwise. */
static PyObject *
call_without_out_none(PtlPyOpFunc *f, vectorcallfunc vc, PyObject *const *args,
                      Py_ssize_t nargs, PyObject *kwnames, int *done)
{
    Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames), at = -1;
    *done = 0;
    for (Py_ssize_t k = 0; k < nkw && at < 0; k++) {
        if (args[nargs + k] == Py_None &&
            PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, k), "out") == 0) {
            at = k;
        }
    }
    int has_out = 0;
    for (int k = 0; k < f->n && at >= 0; k++) {
        has_out |= ptl_dispatcher_op_at(f->ids[k])->schema.out_index >= 0;
    }
    PyObject *buf[PTL_SCHEMA_MAX_ARGS];
    if (!has_out || nargs + nkw > PTL_SCHEMA_MAX_ARGS) {
        return NULL;
    }
    PyObject *names;
    *done = 1;
    if (without_keyword(args, nargs, kwnames, at, buf, &names) < 0) {
        return NULL;
    }
    PyObject *res = vc((PyObject *)f, buf, (size_t)nargs, names);
    Py_XDECREF(names);
    return res;
}

/* Calls op on a parsed stack: the factory options the schema lacks (pin_memory,
 * requires_grad) applied to the result.  Clears sc. */
static PyObject *
call_parsed(const PtlOperator *op, PtlIValue *stack, Scratch *sc)
{
    int rg = sc->requires_grad, pin = sc->pin_memory;
    if (pin && ptlpy_pin_memory_check() < 0) {
        scratch_clear(sc);
        return NULL;
    }
    PyObject *res = ptlpy_call_op(op, stack);
    scratch_clear(sc);
    if (res != NULL && pin) {
        Py_SETREF(res, PyObject_CallMethod(res, "pin_memory", NULL));
    }
    if (res != NULL && rg == 1 && PtlPyTensor_Check(res)) {
        if (PyObject_SetAttrString(res, "requires_grad", Py_True) < 0) {
            Py_CLEAR(res);
        }
    }
    return res;
}

/* Note [Out through the functional overload]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * PyTorch's functions take out= on almost every overload that makes new tensors; many of our
 * operators have no out overload (cumsum, cat, matmul, sum over dims, argmax, zeros...).  When
 * no overload accepts a call that passes out=, and the overload that accepts it without out=
 * is one whose PyTorch function takes out= (torch_out_overloads.h, generated from torch's
 * binding stubs by tools/torch_out_overloads.py), the binding runs that overload and writes
 * the result into out as PyTorch's out= overloads do: refused when grad mode is on and an
 * input requires grad; a `dtype` parameter left None is out's dtype where the output is
 * cast (sum, cumsum, zeros compute in it, as PyTorch's do; softmax's strict out does not);
 * each output resized to its result (with PyTorch's warning
 * when it had elements) and the result copied in under PyTorch's dtype rule for that
 * output, which the table keeps as torch showed it to the generator: cast when the result's
 * dtype can be cast to out's (elementwise and reduction kernels, factories), or strict, out's
 * dtype the result's, with that kernel's message (mm, sort, softmax, the linalg functions:
 * pytorchlite._out_arguments.write_probed).  Returns out.  out=None is the call without out.
 * Our own out overloads, where they exist, are tried first and keep their in-kernel writes
 * and checks, which follow the same rule. */
static int
out_fits(const PtlSchema *s, PyObject *out)
{
    if (out == Py_None) {
        return 1;
    }
    if (s->nrets == 1) {
        return PtlPyTensor_Check(out);
    }
    if (!PyTuple_Check(out) && !PyList_Check(out)) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(out); i++) {
        if (!PtlPyTensor_Check(PySequence_Fast_ITEMS(out)[i])) {
            return 0;
        }
    }
    return 1;
}

static int
stack_requires_grad(const PtlSchema *s, const PtlIValue *stack)
{
    for (int i = 0; i < s->nargs; i++) {
        const PtlIValue *v = &stack[i];
        if (v->tag == PTL_IV_TENSOR && ptl_requires_grad(v->u.t)) {
            return 1;
        }
        for (int64_t j = 0; v->tag == PTL_IV_TENSORLIST && j < v->u.tl.n; j++) {
            if (v->u.tl.data[j] != NULL && ptl_requires_grad(v->u.tl.data[j])) {
                return 1;
            }
        }
    }
    return 0;
}

static PyObject *
call_with_functional_out(PtlPyOpFunc *f, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kwnames, int *done)
{
    static PyObject *write_out;
    Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames), at = -1;
    *done = 0;
    for (Py_ssize_t k = 0; k < nkw && at < 0; k++) {
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, k), "out") == 0) {
            at = k;
        }
    }
    PyObject *buf[PTL_SCHEMA_MAX_ARGS], *out = at >= 0 ? args[nargs + at] : NULL;
    if (at < 0 || nargs + nkw > PTL_SCHEMA_MAX_ARGS) {
        return NULL;
    }
    PyObject *names;
    if (without_keyword(args, nargs, kwnames, at, buf, &names) < 0) {
        *done = 1;
        return NULL;
    }
    PyObject *res = NULL;
    for (int k = 0; k < f->n && !*done; k++) {
        const PtlOperator *op = ptl_dispatcher_op_at(f->ids[k]);
        const PtlSchema *s = &op->schema;
        if (s->out_index >= 0 || !ptlpy_torch_has_out(s)) {
            continue;
        }
        PtlIValue stack[PTL_SCHEMA_MAX_ARGS];
        Scratch sc;
        scratch_init(&sc, f->boxed);
        int r = try_parse(op, f->method, buf, nargs, names, stack, &sc);
        if (r <= 0 || !out_fits(s, out)) {
            scratch_clear(&sc);
            *done = r < 0;
            continue;
        }
        *done = 1;
        if (PTL_UNLIKELY(sc.overloaded)) {
            scratch_clear(&sc);
            res = ptlpy_tf_dispatch((PyObject *)f, args, nargs, kwnames);
            break;
        }
        if (out == Py_None) {
            res = call_parsed(op, stack, &sc);
            break;
        }
        if (ptl_grad_mode_enabled() && stack_requires_grad(s, stack)) {
            scratch_clear(&sc);
            PyErr_Format(PyExc_RuntimeError,
                         "%U(): functions with out=... arguments don't support automatic "
                         "differentiation, but one of the arguments requires grad.",
                         f->name);
            break;
        }
        if (write_out == NULL) {
            PyObject *m = PyImport_ImportModule("pytorchlite._out_arguments");
            write_out = m != NULL ? PyObject_GetAttrString(m, "write_probed") : NULL;
            Py_XDECREF(m);
        }
        PyObject *rule = write_out != NULL ? ptlpy_torch_out_rule(s) : NULL;
        int cast = rule != NULL && PyTuple_GET_ITEM(PyTuple_GET_ITEM(rule, 1), 0) == Py_None;
        for (int i = 0; i < s->nargs && s->nrets == 1 && cast; i++) {
            if (s->args[i].kind == PTL_ARG_DTYPE && strcmp(s->args[i].name, "dtype") == 0 &&
                stack[i].tag == PTL_IV_NONE) {
                stack[i] = ptl_iv_dtype(PTLPY_IMPL(out)->dtype);
            }
        }
        PyObject *result = rule != NULL ? call_parsed(op, stack, &sc) : NULL;
        if (rule == NULL) {
            scratch_clear(&sc);
        }
        res = result != NULL ? PyObject_CallFunctionObjArgs(write_out, result, out,
                                                           PyTuple_GET_ITEM(rule, 0),
                                                           PyTuple_GET_ITEM(rule, 1), NULL)
                             : NULL;
        Py_XDECREF(result);
        Py_XDECREF(rule);
    }
    Py_XDECREF(names);
    return res;
}

/* _C._resize_output(out, shape): out resized to shape (a tuple of ints, pytorchlite.Size
 * included) by ptl_resize_output, for the out= arguments written in Python
 * (pytorchlite._out_arguments), so that every out= resizes, and warns, by one rule and one
 * text (Note [Resizing out=]), the warning naming the user's line as the kernels' do.  True
 * when out changed shape. */
static PyObject *
py_resize_output(PyObject *m, PyObject *args)
{
    PyObject *out, *shape;
    int64_t sizes[PTL_MAX_DIMS];
    (void)m;
    if (!PyArg_ParseTuple(args, "O!O!:_resize_output", &PtlPyTensorBase_Type, &out,
                          &PyTuple_Type, &shape)) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(shape);
    if (n > PTL_MAX_DIMS) {
        return PyErr_Format(PyExc_RuntimeError, "_resize_output(): a shape of %zd dimensions; "
                            "pytorchlite supports at most %d", n, PTL_MAX_DIMS);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int r = to_int(PyTuple_GET_ITEM(shape, i), &sizes[i]);
        if (r == 0) {
            return PyErr_Format(PyExc_TypeError, "_resize_output(): shape must be a tuple of "
                                "ints, but got %s at position %zd",
                                Py_TYPE(PyTuple_GET_ITEM(shape, i))->tp_name, i);
        }
        if (r < 0) {
            return NULL;
        }
    }
    int changed = ptl_resize_output(PTLPY_IMPL(out), (int)n, sizes);
    if (changed < 0) {
        return ptlpy_raise();
    }
    if (ptlpy_flush_warnings() < 0) {
        return NULL;
    }
    return PyBool_FromLong(changed);
}

static PyObject *
opfunc_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PtlPyOpFunc *f = (PtlPyOpFunc *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (PTL_UNLIKELY(kwnames != NULL)) {
        int done;
        PyObject *res = call_without_out_none(f, opfunc_vectorcall, args, nargs, kwnames, &done);
        if (done) {
            return res;
        }
    }
    /* Note [Torch function]: a mode sees every call; an argument of a Tensor subclass with
     * __torch_function__ is found while parsing (sc.overloaded), any other object with one
     * when no overload accepts the call */
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    if (PTL_UNLIKELY(ptlpy_tf_modes) && ptlpy_tf_overloaded(args, nargs + nkw)) {
        return ptlpy_tf_dispatch(callable, args, nargs, kwnames);
    }
    PtlIValue stack[PTL_SCHEMA_MAX_ARGS];
    Scratch sc;
    scratch_init(&sc, f->boxed);
    for (int k = 0; k < f->n; k++) {
        const PtlOperator *op = ptl_dispatcher_op_at(f->ids[k]);
        sc.overloaded = 0;
        int r = try_parse(op, f->method, args, nargs, kwnames, stack, &sc);
        if (r < 0) {
            scratch_clear(&sc);
            return NULL;
        }
        if (r == 0) {
            scratch_clear(&sc);
            continue;
        }
        if (PTL_UNLIKELY(sc.overloaded)) {
            scratch_clear(&sc);
            return ptlpy_tf_dispatch(callable, args, nargs, kwnames);
        }
        return call_parsed(op, stack, &sc);
    }
    if (ptlpy_tf_overloaded(args, nargs + nkw)) {   /* a tensor-like that is no Tensor */
        return ptlpy_tf_dispatch(callable, args, nargs, kwnames);
    }
    if (kwnames != NULL && !f->method) {
        int done;
        PyObject *res = call_with_functional_out(f, args, nargs, kwnames, &done);
        if (done) {
            return res;
        }
    }
    return f->boxed ? ptlpy_schema_call_error(f, args, nargs, kwnames)
                    : ptlpy_bad_call_error(f, args, nargs, kwnames);
}

static void
opfunc_dealloc(PtlPyOpFunc *self)
{
    Py_XDECREF(self->name);
    PyObject_Free(self);
}

static PyObject *
opfunc_repr(PtlPyOpFunc *self)
{
    return PyUnicode_FromFormat("<built-in %s %U>", self->method ? "method" : "function",
                                self->name);
}

static PyObject *
opfunc_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)type;
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static PyObject *
opfunc_get_name(PtlPyOpFunc *self, void *c)
{
    (void)c;
    Py_INCREF(self->name);
    return self->name;
}

static PyObject *
opfunc_get_schemas(PtlPyOpFunc *self, void *c)
{
    (void)c;
    PyObject *list = PyList_New(self->n);
    for (int k = 0; list != NULL && k < self->n; k++) {
        char buf[1024];
        ptl_schema_format(&ptl_dispatcher_op_at(self->ids[k])->schema, buf, sizeof(buf));
        PyList_SET_ITEM(list, k, PyUnicode_FromString(buf));
    }
    return list;
}

static PyObject *
opfunc_get_doc(PtlPyOpFunc *self, void *c)
{
    (void)c;
    return ptlpy_op_doc(self);
}

static PyGetSetDef opfunc_getset[] = {
    {"__name__", (getter)opfunc_get_name, NULL, NULL, NULL},
    {"__doc__", (getter)opfunc_get_doc, NULL, NULL, NULL},
    {"_schemas", (getter)opfunc_get_schemas, NULL, "the schemas of the overloads", NULL},
    {NULL},
};

static PyTypeObject PtlPyOpFunc_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pytorchlite._C._OpFunction",
    .tp_basicsize = sizeof(PtlPyOpFunc),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_vectorcall_offset = offsetof(PtlPyOpFunc, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_dealloc = (destructor)opfunc_dealloc,
    .tp_repr = (reprfunc)opfunc_repr,
    .tp_descr_get = opfunc_descr_get,
    .tp_getset = opfunc_getset,
};

static PtlPyOpFunc *
opfunc_new(const char *name, int method)
{
    PtlPyOpFunc *f = PyObject_New(PtlPyOpFunc, &PtlPyOpFunc_Type);
    if (f == NULL) {
        return NULL;
    }
    f->vectorcall = opfunc_vectorcall;
    f->name = PyUnicode_FromString(name);
    f->method = method;
    f->boxed = 0;
    f->n = 0;
    if (f->name == NULL) {
        Py_DECREF(f);
        return NULL;
    }
    return f;
}

/* Whether parameter a ranks below b in PyTorch's overload order: a Scalar (Scalar?) or an
 * int where the other has a Tensor (Tensor?). */
static int
arg_ranks_below(const PtlArg *a, const PtlArg *b)
{
    return b->kind == PTL_ARG_TENSOR && a->optional == b->optional &&
           (a->kind == PTL_ARG_SCALAR || (a->kind == PTL_ARG_INT && !a->optional));
}

static int
is_out_arg(const PtlArg *a)
{
    return a->kwarg_only && a->alias_write;
}

/* Whether overload x ranks below overload y (PyTorch's sort_overloads in
 * gen_python_functions.py): outputs aside, the same number of parameters, each of the same
 * type as y's or ranked below it, and not all the same.  A 0-dim tensor that does not
 * require grad fits both a Scalar and a Tensor parameter, so fill_, clamp and lerp try
 * their Tensor overload first, as PyTorch does (FillBackward3, ClampBackward0, ...). */
static int
overload_ranks_below(const PtlSchema *x, const PtlSchema *y)
{
    int i = 0, j = 0, below = 0;
    for (;;) {
        while (i < x->nargs && is_out_arg(&x->args[i])) {
            i++;
        }
        while (j < y->nargs && is_out_arg(&y->args[j])) {
            j++;
        }
        if (i == x->nargs || j == y->nargs) {
            return below && i == x->nargs && j == y->nargs;
        }
        const PtlArg *a = &x->args[i++], *b = &y->args[j++];
        if (arg_ranks_below(a, b)) {
            below = 1;
        }
        else if (a->kind != b->kind || a->optional != b->optional) {
            return 0;
        }
    }
}

/* Adds overload `id` to the group `name` in dict d (creating it), before the first
 * overload that ranks below it, else last (ops.def order). */
static int
group_add(PyObject *d, const char *name, int id, int method)
{
    PtlPyOpFunc *f = (PtlPyOpFunc *)PyDict_GetItemString(d, name);
    if (f == NULL) {
        if ((f = opfunc_new(name, method)) == NULL) {
            return -1;
        }
        int rc = PyDict_SetItemString(d, name, (PyObject *)f);
        Py_DECREF(f);
        if (rc < 0) {
            return -1;
        }
    }
    if (f->n == MAX_OVERLOADS) {
        PyErr_Format(PyExc_RuntimeError, "too many overloads for %s", name);
        return -1;
    }
    const PtlSchema *s = &ptl_dispatcher_op_at(id)->schema;
    int at = f->n;
    for (int k = 0; k < f->n; k++) {
        if (overload_ranks_below(&ptl_dispatcher_op_at(f->ids[k])->schema, s)) {
            at = k;
            break;
        }
    }
    memmove(&f->ids[at + 1], &f->ids[at], sizeof(int) * (size_t)(f->n - at));
    f->ids[at] = id;
    f->n++;
    return 0;
}

/* _C._op(name, overload=None, boxed=False): a callable for "aten::add" (all overloads) or
 * one overload; a boxed one refuses a bad call with torch.ops' RuntimeError (Note [Boxed call
 * messages]), else with the bindings' TypeError. */
static PyObject *
py_get_op(PyObject *module, PyObject *args)
{
    const char *name, *overload = NULL;
    int boxed = 0;
    (void)module;
    if (!PyArg_ParseTuple(args, "s|zp:_op", &name, &overload, &boxed)) {
        return NULL;
    }
    const char *short_name = strstr(name, "::") ? strstr(name, "::") + 2 : name;
    PtlPyOpFunc *f = opfunc_new(short_name, 0);
    if (f == NULL) {
        return NULL;
    }
    f->boxed = boxed;
    for (int i = 0; i < ptl_dispatcher_num_ops(); i++) {
        const PtlOperator *op = ptl_dispatcher_op_at(i);
        if (strcmp(op->schema.name, name) != 0 ||
            (overload != NULL && strcmp(op->schema.overload, overload) != 0)) {
            continue;
        }
        if (f->n < MAX_OVERLOADS) {
            f->ids[f->n++] = i;
        }
    }
    if (f->n == 0) {
        Py_DECREF(f);
        PyErr_Format(PyExc_AttributeError, "no operator named '%s%s%s'", name,
                     overload ? "." : "", overload ? overload : "");
        return NULL;
    }
    return (PyObject *)f;
}

/* Note [Native signatures]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * Some functions written in Python here (F.conv1d, torch.addbmm, ...) are native functions
 * in PyTorch, whose argument parser refuses a bad call with a TypeError naming the fault
 * ("addbmm(): argument 'batch1' (position 2) must be Tensor, not str").  Such a function
 * declares PyTorch's schemas (pytorchlite/_native_signature.py), which are defined as
 * operators without kernels in the `native_signature` namespace, and checks each call with
 * the object _C._signature(qualname) returns: the binding's parser run over the overloads,
 * in the bindings' order, without a dispatch.  It answers None when an overload accepts the
 * call (the Python function then runs with its own arguments: nothing converted is kept),
 * and raises the bindings' TypeError (Note [Bad call messages]) when none does.  A
 * tensor-like that is no Tensor passes: its __torch_function__ answers the function. */
static PyObject *
signature_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                     PyObject *kwnames)
{
    PtlPyOpFunc *f = (PtlPyOpFunc *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    if (kwnames != NULL) {
        int done;
        PyObject *res = call_without_out_none(f, signature_vectorcall, args, nargs, kwnames,
                                              &done);
        if (done) {
            return res;
        }
    }
    PtlIValue stack[PTL_SCHEMA_MAX_ARGS];
    Scratch sc;
    scratch_init(&sc, f->boxed);
    for (int k = 0; k < f->n; k++) {
        sc.overloaded = 0;
        int r = try_parse(ptl_dispatcher_op_at(f->ids[k]), f->method, args, nargs, kwnames,
                          stack, &sc);
        scratch_clear(&sc);
        if (r < 0) {
            return NULL;
        }
        if (r == 1) {
            Py_RETURN_NONE;
        }
    }
    if (ptlpy_tf_overloaded(args, nargs + nkw)) {
        Py_RETURN_NONE;
    }
    return ptlpy_bad_call_error(f, args, nargs, kwnames);
}

/* _C._signature(qualname, method=False): the checker of Note [Native signatures] for the
 * operators named qualname ("native_signature::addbmm"), every overload; a method's checker
 * takes self first and counts positions without it, as a Tensor method's binding does. */
static PyObject *
py_signature(PyObject *module, PyObject *args)
{
    (void)module;
    const char *name;
    int method = 0;
    if (!PyArg_ParseTuple(args, "s|p:_signature", &name, &method)) {
        return NULL;
    }
    const char *short_name = strstr(name, "::") ? strstr(name, "::") + 2 : name;
    PyObject *group = PyDict_New();
    if (group == NULL) {
        return NULL;
    }
    for (int i = 0; i < ptl_dispatcher_num_ops(); i++) {
        const PtlSchema *s = &ptl_dispatcher_op_at(i)->schema;
        int self_first = s->nargs > 0 && s->args[0].kind == PTL_ARG_TENSOR &&
                         strcmp(s->args[0].name, "self") == 0;
        /* a method has the overloads whose self is a Tensor (not xlogy.Scalar_Self) */
        if (strcmp(s->name, name) == 0 && (!method || self_first) &&
            group_add(group, short_name, i, method) < 0) {
            Py_DECREF(group);
            return NULL;
        }
    }
    PtlPyOpFunc *f = (PtlPyOpFunc *)PyDict_GetItemString(group, short_name);
    if (f == NULL) {
        Py_DECREF(group);
        PyErr_Format(PyExc_AttributeError, "no operator named '%s'", name);
        return NULL;
    }
    Py_INCREF(f);
    Py_DECREF(group);
    f->vectorcall = signature_vectorcall;
    return (PyObject *)f;
}

static PyMethodDef ops_module_methods[] = {
    {"_resize_output", py_resize_output, METH_VARARGS,
     "_resize_output(out, shape): out= resized to shape, warned when it had elements"},
    {"_op", py_get_op, METH_VARARGS, "the callable for an operator (and overload) by name"},
    {"_signature", py_signature, METH_VARARGS,
     "_signature(qualname, method=False): the argument checker of the operators named "
     "qualname (Note [Native signatures])"},
    {NULL},
};

int
ptlpy_ops_init(PyObject *module)
{
    PyObject *funcs = NULL, *methods = NULL, *named = NULL;
    if (PyType_Ready(&PtlPyOpFunc_Type) < 0) {
        return -1;
    }
    funcs = PyDict_New();
    methods = PyDict_New();
    named = PyList_New(0);
    return_types = PyDict_New();
    if (funcs == NULL || methods == NULL || named == NULL || return_types == NULL) {
        goto error;
    }
    for (int i = 0; i < ptl_dispatcher_num_ops(); i++) {
        const PtlOperator *op = ptl_dispatcher_op_at(i);
        const char *name = op->schema.name + 6;   /* "aten::" */
        if (strncmp(op->schema.name, "aten::", 6) != 0 || (op->flags & PTL_OPF_HIDDEN)) {
            continue;
        }
        if ((op->flags & PTL_OPF_FUNCTION) && group_add(funcs, name, i, 0) < 0) {
            goto error;
        }
        if ((op->flags & PTL_OPF_METHOD) && op->schema.out_index < 0 &&
            op->schema.nargs > 0 && op->schema.args[0].kind == PTL_ARG_TENSOR &&
            group_add(methods, name, i, 1) < 0) {
            goto error;
        }
        if (op->schema.rets_named) {
            PyObject *fields = PyTuple_New(op->schema.nrets);
            for (int r = 0; fields != NULL && r < op->schema.nrets; r++) {
                PyTuple_SET_ITEM(fields, r, PyUnicode_FromString(op->schema.rets[r].name));
            }
            PyObject *item = fields ? Py_BuildValue("(sN)", name, fields) : NULL;
            if (item == NULL || PyList_Append(named, item) < 0) {
                Py_XDECREF(item);
                goto error;
            }
            Py_DECREF(item);
        }
    }
    /* methods become attributes of TensorBase (a dict lookup like any C method) */
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(methods, &pos, &key, &value)) {
        if (PyDict_Contains(PtlPyTensorBase_Type.tp_dict, key)) {
            continue;   /* a hand-written method wins */
        }
        if (PyDict_SetItem(PtlPyTensorBase_Type.tp_dict, key, value) < 0) {
            goto error;
        }
    }
    PyType_Modified(&PtlPyTensorBase_Type);
    if (PyModule_AddObject(module, "_functions", funcs) < 0) {
        goto error;
    }
    funcs = NULL;
    if (PyModule_AddObject(module, "_named_returns", named) < 0) {
        goto error;
    }
    named = NULL;
    Py_INCREF(return_types);
    if (PyModule_AddObject(module, "_return_types", return_types) < 0) {
        Py_DECREF(return_types);
        goto error;
    }
    Py_DECREF(methods);
    return PyModule_AddFunctions(module, ops_module_methods);
error:
    Py_XDECREF(funcs);
    Py_XDECREF(methods);
    Py_XDECREF(named);
    return -1;
}

PyObject *
ptlpy_ivalue_to_py(const PtlIValue *v)
{
    switch ((PtlIValueTag)v->tag) {
    case PTL_IV_TENSOR:
        ptl_incref(v->u.t);
        return ptlpy_wrap(v->u.t);
    case PTL_IV_INT: return PyLong_FromLongLong(v->u.i);
    case PTL_IV_DOUBLE: return PyFloat_FromDouble(v->u.d);
    case PTL_IV_COMPLEX: return PyComplex_FromDoubles(v->u.z.re, v->u.z.im);
    case PTL_IV_BOOL: return PyBool_FromLong(v->u.b);
    case PTL_IV_STRING: return PyUnicode_FromString(v->u.s);
    case PTL_IV_DTYPE: {
        PyObject *o = ptlpy_dtype_object(v->u.dtype);
        Py_XINCREF(o);
        return o;
    }
    case PTL_IV_DEVICE: return ptlpy_device_object(v->u.device);
    case PTL_IV_LAYOUT: {
        PyObject *o = v->u.p != NULL ? (PyObject *)v->u.p : Py_None;
        Py_INCREF(o);
        return o;
    }
    case PTL_IV_MEMFORMAT: {
        PyObject *o = ptlpy_memory_format_object((PtlMemoryFormat)v->u.i);
        Py_INCREF(o);
        return o;
    }
    case PTL_IV_INTLIST:
    case PTL_IV_DOUBLELIST:
    case PTL_IV_TENSORLIST: {
        int64_t n = v->tag == PTL_IV_INTLIST ? v->u.il.n
                    : v->tag == PTL_IV_DOUBLELIST ? v->u.dl.n : v->u.tl.n;
        PyObject *list = PyList_New((Py_ssize_t)n);
        for (int64_t i = 0; list != NULL && i < n; i++) {
            PyObject *o;
            if (v->tag == PTL_IV_INTLIST) {
                o = PyLong_FromLongLong(v->u.il.data[i]);
            }
            else if (v->tag == PTL_IV_DOUBLELIST) {
                o = PyFloat_FromDouble(v->u.dl.data[i]);
            }
            else {
                PtlIValue e = ptl_iv_tensor(v->u.tl.data[i]);
                o = ptlpy_ivalue_to_py(&e);
            }
            if (o == NULL) {
                Py_CLEAR(list);
                break;
            }
            PyList_SET_ITEM(list, (Py_ssize_t)i, o);
        }
        return list;
    }
    case PTL_IV_NONE:
    case PTL_IV_GENERATOR:
    default:
        Py_RETURN_NONE;
    }
}
