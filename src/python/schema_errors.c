/* schema_errors.c -- the RuntimeError of pytorchlite.ops.<ns>.<op>[.<overload>] for a call
 * that no overload accepts.  Mirrors createStackForSchema and argumentToIValue in
 * torch/csrc/jit/python/pybind_utils.h, FunctionSchema::findErrorInKwargs and
 * formatTypeMismatchMsg in ATen/core/function_schema.  See Note [Boxed call messages]. */
#include "ptlpy.h"
#include "arg_parse_impl.h"

#include <string.h>

/* Note [Boxed call messages]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * PyTorch's torch.ops callables parse a call against the operator's schema (the boxed,
 * TorchScript parser), not against the Python signatures of torch.add and Tensor.add, and
 * refuse a bad call with a RuntimeError that names its first fault against the schema, in
 * the order createStackForSchema looks: more arguments than parameters, a positional
 * argument for a keyword-only parameter, each parameter's value (of the wrong type), a
 * parameter without a value or a default, then the keywords left over (unknown, or naming
 * a parameter a positional argument filled).  A None for a Tensor that is not optional
 * parses (as an undefined tensor) and fails at the kernel's "Expected a proper Tensor", so it
 * is reported only when nothing else is wrong.  An overload packet (ops.aten.add) tries each
 * overload and lists every overload's fault.  The bindings' parser decides what is accepted
 * (it converts more than torch.ops: a number for a Tensor); a call it refuses without any
 * fault found here gets the bindings' TypeError. */

/* The parameter's type as TorchScript's repr_str names it: SymInt is int, ScalarType,
 * Layout and MemoryFormat are int, Scalar is number */
static void
type_repr(const PtlArg *a, char *buf, size_t n)
{
    const char *t;
    switch ((PtlArgKind)a->kind) {
    case PTL_ARG_TENSOR: t = "Tensor"; break;
    case PTL_ARG_FLOAT: t = "float"; break;
    case PTL_ARG_BOOL: t = "bool"; break;
    case PTL_ARG_STR: t = "str"; break;
    case PTL_ARG_SCALAR: t = "number"; break;
    case PTL_ARG_DEVICE: t = "Device"; break;
    case PTL_ARG_GENERATOR: t = "Generator"; break;
    case PTL_ARG_TENSORLIST: t = a->elem_optional ? "List[Optional[Tensor]]" : "List[Tensor]";
        break;
    case PTL_ARG_INTLIST: t = a->elem_bool ? "List[bool]" : "List[int]"; break;
    case PTL_ARG_FLOATLIST: t = "List[float]"; break;
    default: t = "int"; break;
    }
    snprintf(buf, n, a->optional ? "Optional[%s]" : "%s", t);
}

/* The first item of list or tuple v that is not a Tensor or None (for a Tensor?[]) or not
 * an int (for a SymInt[]); v itself when v is no list or tuple or every item is */
static PyObject *
bad_item(const PtlArg *a, PyObject *v)
{
    if (!PyList_Check(v) && !PyTuple_Check(v)) {
        return v;
    }
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(v); i++) {
        PyObject *o = PySequence_Fast_ITEMS(v)[i];
        int ok = a->kind == PTL_ARG_TENSORLIST ? o == Py_None || PtlPyTensor_Check(o)
                                               : ptlpy_is_int_like(o);
        if (!ok) {
            return o;
        }
    }
    return v;
}

/* The class of o as pybind11's cast error names it: "<class 'str'>", PyTorch's
 * "<class 'torch.Tensor'>" for a tensor */
static PyObject *
class_text(PyObject *o)
{
    return PtlPyTensor_Check(o) ? PyUnicode_FromString("<class 'pytorchlite.Tensor'>")
                                : PyObject_Repr((PyObject *)Py_TYPE(o));
}

/* What follows the declaration in the message for a value v that parameter a refuses:
 * pybind11's cast error, toIValue's own for a Tensor and a number, or the TypeError of
 * iterating a value that a SymInt[] or Tensor?[] parameter iterates (an int list takes
 * pybind11's cast of the whole value, so its error names the list's class; a SymInt list
 * converts its items one by one, naming the first bad item's) */
static PyObject *
cast_details(const PtlArg *a, PyObject *v)
{
    int sequence = PyList_Check(v) || PyTuple_Check(v);
    int iterated = a->kind == PTL_ARG_TENSORLIST ? a->elem_optional
                   : a->kind == PTL_ARG_INTLIST && a->symint;
    if (iterated && !sequence && !PtlPyTensor_Check(v) && !PyUnicode_Check(v)) {
        PyObject *it = PyObject_GetIter(v);
        if (it == NULL) {
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            PyObject *text = type != NULL
                ? PyUnicode_FromFormat(" Python error details: %s: %S",
                                       ((PyTypeObject *)type)->tp_name, value ? value : Py_None)
                : NULL;
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            return text;
        }
        Py_DECREF(it);
    }
    if (a->kind == PTL_ARG_TENSOR || (a->kind == PTL_ARG_TENSORLIST && a->elem_optional)) {
        return PyUnicode_FromFormat("Cast error details: Unable to cast %S to Tensor",
                                    a->kind == PTL_ARG_TENSOR ? v : bad_item(a, v));
    }
    if (a->kind == PTL_ARG_SCALAR) {
        return PyUnicode_FromFormat("Cast error details: Cannot cast %S to number", v);
    }
    PyObject *cls = class_text(iterated ? bad_item(a, v) : v);
    PyObject *text = cls != NULL
        ? PyUnicode_FromFormat("Cast error details: Unable to cast Python instance of type %U "
                               "to C++ type '?' (#define PYBIND11_DETAILED_ERROR_MESSAGES or "
                               "compile in debug mode for details)", cls)
        : NULL;
    Py_XDECREF(cls);
    return text;
}

/* formatTypeMismatchMsg's message for value v at parameter i of s, with its cast details */
static PyObject *
type_mismatch(const PtlSchema *s, const char *decl, int i, PyObject *v)
{
    char want[48];
    type_repr(&s->args[i], want, sizeof(want));
    PyObject *found = PyObject_GetAttrString((PyObject *)Py_TYPE(v), "__name__");
    PyObject *details = found != NULL ? cast_details(&s->args[i], v) : NULL;
    PyObject *msg = details != NULL
        ? PyUnicode_FromFormat("%s() Expected a value of type '%s' for argument '%s' but "
                               "instead found type '%U'.\nPosition: %d\nValue: %R\n"
                               "Declaration: %s\n%U",
                               s->name, want, s->args[i].name, found, i, v, decl, details)
        : NULL;
    Py_XDECREF(found);
    Py_XDECREF(details);
    return msg;
}

/* The fault of value v at parameter i: a new message, Py_None (new) when it parses, NULL
 * with an error set.  *late is set to i for the first None of a Tensor that is not
 * optional (Note [Boxed call messages]). */
static PyObject *
value_fault(const PtlOperator *op, const char *decl, int i, PyObject *v, int *late)
{
    const PtlArg *a = &op->schema.args[i];
    if (v == Py_None && a->kind == PTL_ARG_TENSOR && !a->optional) {
        if (*late < 0) {
            *late = i;
        }
        Py_RETURN_NONE;
    }
    int r = ptlpy_arg_accepts(op, i, v, 1);
    if (r < 0) {
        return NULL;
    }
    if (r == 0) {
        return type_mismatch(&op->schema, decl, i, v);
    }
    Py_RETURN_NONE;
}

/* The keyword of kwnames named `name`, or -1 */
static Py_ssize_t
keyword_index(PyObject *kwnames, const char *name)
{
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, k), name) == 0) {
            return k;
        }
    }
    return -1;
}

/* findErrorInKwargs: the first unknown keyword, else the first parameter (in the schema's
 * order) that a keyword names again */
static PyObject *
keyword_fault(const PtlSchema *s, const char *decl, PyObject *kwnames)
{
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); k++) {
        PyObject *kw = PyTuple_GET_ITEM(kwnames, k);
        int known = 0;
        for (int i = 0; i < s->nargs && !known; i++) {
            known = PyUnicode_CompareWithASCIIString(kw, s->args[i].name) == 0;
        }
        if (!known) {
            return PyUnicode_FromFormat("Unknown keyword argument '%U' for operator '%s'. "
                                        "Schema: %s", kw, s->name, decl);
        }
    }
    for (int i = 0; i < s->nargs; i++) {
        if (keyword_index(kwnames, s->args[i].name) >= 0) {
            return PyUnicode_FromFormat("Argument '%s' specified both as positional and "
                                        "keyword argument. Schema: %s", s->args[i].name, decl);
        }
    }
    Py_RETURN_NONE;
}

/* The first fault of the call against op's schema (Note [Boxed call messages]): a new
 * message, Py_None (new) when none is found, NULL with an error set */
static PyObject *
schema_fault(const PtlOperator *op, PyObject *const *args, Py_ssize_t nargs,
             PyObject *kwnames)
{
    const PtlSchema *s = &op->schema;
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0, used = 0;
    char decl[1024];
    int late = -1;
    ptl_schema_format(s, decl, sizeof(decl));
    if (nargs + nkw > s->nargs) {
        return PyUnicode_FromFormat("%s() expected at most %d argument(s) but received %zd "
                                    "argument(s). Declaration: %s", s->name, s->nargs,
                                    nargs + nkw, decl);
    }
    for (int i = 0; i < s->nargs; i++) {
        Py_ssize_t k = i < nargs ? -1 : keyword_index(kwnames, s->args[i].name);
        PyObject *v = i < nargs ? args[i] : k >= 0 ? args[nargs + k] : NULL;
        if (i < nargs && s->args[i].kwarg_only) {
            return PyUnicode_FromFormat("%s() takes %d positional argument(s) but %zd was/were "
                                        "given.  Declaration: %s", s->name, i, nargs, decl);
        }
        if (v == NULL && !s->args[i].has_default) {
            return PyUnicode_FromFormat("%s() is missing value for argument '%s'. "
                                        "Declaration: %s", s->name, s->args[i].name, decl);
        }
        used += k >= 0;
        PyObject *fault = v != NULL ? value_fault(op, decl, i, v, &late) : Py_NewRef(Py_None);
        if (fault != Py_None) {
            return fault;
        }
        Py_DECREF(fault);
    }
    if (used != nkw) {
        return keyword_fault(s, decl, kwnames);
    }
    if (late >= 0) {
        return PyUnicode_FromFormat("Expected a proper Tensor but got None (or an undefined "
                                    "Tensor in C++) for argument #%d '%s'", late,
                                    s->args[late].name);
    }
    Py_RETURN_NONE;
}

PyObject *
ptlpy_schema_call_error(PtlPyOpFunc *f, PyObject *const *args, Py_ssize_t nargs,
                        PyObject *kwnames)
{
    PyObject *text = f->n == 1 ? PyUnicode_FromString("")
                               : PyUnicode_FromString("Overloaded torch operator invoked from "
                                                      "Python failed to match any schema:\n");
    for (int k = 0; text != NULL && k < f->n; k++) {
        PyObject *fault = schema_fault(ptl_dispatcher_op_at(f->ids[k]), args, nargs, kwnames);
        if (fault == Py_None) {
            Py_DECREF(fault);
            Py_DECREF(text);
            return ptlpy_bad_call_error(f, args, nargs, kwnames);
        }
        PyObject *part = fault != NULL && f->n > 1 ? PyUnicode_FromFormat("%U\n\n", fault)
                                                   : Py_XNewRef(fault);
        Py_XDECREF(fault);
        Py_SETREF(text, part != NULL ? PyUnicode_Concat(text, part) : NULL);
        Py_XDECREF(part);
    }
    if (text != NULL) {
        PyErr_SetObject(PyExc_RuntimeError, text);
        Py_DECREF(text);
    }
    return NULL;
}
