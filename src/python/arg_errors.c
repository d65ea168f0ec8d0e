/* arg_errors.c -- the TypeError for a call that no overload of a binding accepts: the fault
 * of one signature, or the general "received an invalid combination of arguments" form.
 * Mirrors print_error and FunctionSignature::parse's messages in
 * torch/csrc/utils/python_arg_parser.cpp.  See Note [Bad call messages]. */
#include "ptlpy.h"
#include "arg_parse_impl.h"

#include <string.h>

static const char *
py_type_name(PyObject *o)
{
    if (PtlPyTensor_Check(o)) {
        return "Tensor";
    }
    if (Py_IS_TYPE(o, &PtlPyDtype_Type)) {
        return "dtype";
    }
    return Py_TYPE(o)->tp_name;
}

static const char *
arg_type_name(const PtlArg *a)
{
    switch ((PtlArgKind)a->kind) {
    case PTL_ARG_SCALAR: return "Number";
    case PTL_ARG_DTYPE: return "dtype";
    case PTL_ARG_TENSORLIST: return "tuple of Tensors";
    case PTL_ARG_INTLIST: return "tuple of ints";
    case PTL_ARG_FLOATLIST: return "tuple of floats";
    default: return ptl_arg_kind_name((PtlArgKind)a->kind);
    }
}

static void
append_signature(PyObject *parts, const PtlOperator *op, int method)
{
    const PtlSchema *s = &op->schema;
    PyObject *sig = PyUnicode_FromString(" * (");
    int first = 1, star = 0;
    for (int i = method ? 1 : 0; sig != NULL && i < s->nargs; i++) {
        const PtlArg *a = &s->args[i];
        PyObject *piece;
        if (a->kwarg_only && !star) {
            piece = PyUnicode_FromFormat("%s*", first ? "" : ", ");
            PyUnicode_AppendAndDel(&sig, piece);
            star = 1;
            first = 0;
        }
        const char *name = (i == 0 && strcmp(a->name, "self") == 0) ? "input" : a->name;
        piece = PyUnicode_FromFormat("%s%s%s %s", first ? "" : ", ", arg_type_name(a),
                                     a->optional ? "?" : "", name);
        PyUnicode_AppendAndDel(&sig, piece);
        first = 0;
    }
    PyUnicode_AppendAndDel(&sig, PyUnicode_FromString(")\n"));
    if (sig != NULL) {
        PyList_Append(parts, sig);
        Py_DECREF(sig);
    }
}

/* Note [Bad call messages]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * A call that no overload accepts gets the message PyTorch's python_arg_parser gives it, and
 * PyTorch chooses between two forms by counting its Python signatures:
 * - a function with one signature in all names the first fault of the call against it;
 * - otherwise the signatures shown in its messages (all but the hidden, deprecated ones)
 *   whose parameter count admits the number of arguments given (positional plus keyword)
 *   are "plausible": when exactly one is, it names the fault against that one;
 * - otherwise the general "received an invalid combination of arguments" form lists them.
 * A Python signature is not an overload here: an out= overload whose other parameters are
 * another overload's is that overload's optional `out` (PyTorch merges them), and the hidden
 * signatures are the deprecated forms of deprecated.yaml (add(Tensor self, Scalar alpha,
 * Tensor other) ...), which PyTorch also gives to the in-place methods, plus copy_'s; they
 * are a table here (hidden_signatures) because no schema of ours spells them.  PyTorch also
 * shows signatures that we fold into one overload (a Number twin of a Tensor parameter, an
 * out_dtype or generator form): a second table (twin_signatures) counts them.  The first
 * fault is found in the order PyTorch's FunctionSignature::parse looks: too many positional
 * arguments, then each parameter in turn (missing, or of the wrong type), then the keywords
 * left over (unknown, or naming a parameter a positional argument filled).  The messages
 * keep PyTorch's words, "missing 1 required positional arguments" included; a method without
 * parameters has CPython's METH_NOARGS words.  The general form lists our overloads, not
 * PyTorch's text of its signatures (no defaults, no "didn't match because" lines), and
 * tests/python/test_bad_call_messages.py compares only its head.  Accepted calls never come
 * here. */

/* The type a parameter wants, as PyTorch's "argument 'x' must be T" names it */
static const char *
wanted_type_name(const PtlArg *a)
{
    switch ((PtlArgKind)a->kind) {
    case PTL_ARG_DTYPE: return "torch.dtype";
    case PTL_ARG_DEVICE: return "torch.device";
    case PTL_ARG_LAYOUT: return "torch.layout";
    case PTL_ARG_MEMFORMAT: return "torch.memory_format";
    case PTL_ARG_GENERATOR: return "torch.Generator";
    default: return arg_type_name(a);
    }
}

/* The Python type of a value as PyTorch's messages name it (Py_TYPE(o)->tp_name) */
static const char *
given_type_name(PyObject *o)
{
    return PtlPyTensor_Check(o) ? "Tensor" : Py_TYPE(o)->tp_name;
}

/* A parameter's name in PyTorch's Python signatures, where self is input */
static const char *
param_name(const PtlSchema *s, int i)
{
    return strcmp(s->args[i].name, "self") == 0 ? "input" : s->args[i].name;
}

/* Whether PyTorch's Python signature requires the parameter: it has no default (a `Tensor?
 * bias` without one is required, though None may be passed) */
static int
arg_required(const PtlSchema *s, int i)
{
    return !s->args[i].has_default;
}

/* Functions and methods with hidden signatures in PyTorch (Note [Bad call messages]) */
static const char *const hidden_signatures[] = {
    "add", "add_", "sub", "sub_", "addbmm", "addbmm_", "addcdiv", "addcdiv_", "addcmul",
    "addcmul_", "addmm", "addmm_", "addmv", "addmv_", "addr", "addr_", "baddbmm", "baddbmm_",
    "sspaddmm", "copy_",
};

static int
has_hidden_signature(PyObject *name)
{
    const char *n = PyUnicode_AsUTF8(name);
    for (size_t i = 0; n != NULL && i < sizeof(hidden_signatures) / sizeof(*hidden_signatures);
         i++) {
        if (strcmp(n, hidden_signatures[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Functions (F) and methods (M) for which PyTorch has one more shown signature than we have
 * overloads: a twin of our widest signature (the one with the most parameters) that takes
 * `more` required parameters besides: a Number where we take a Tensor (more 0: eq(Tensor
 * input, Number other), bitwise_and(Number self, Tensor other), narrow(..., Tensor start,
 * ...), the Dimname forms of max and min), an out_dtype (addmm, mm: more 1) or a generator
 * (rand_like: more 1).  Note [Bad call messages]. */
enum { TWIN_F = 1, TWIN_M = 2 };
static const struct {
    const char *name;
    int where, more;
} twin_signatures[] = {
    {"addmm", TWIN_F, 1}, {"baddbmm", TWIN_F, 1}, {"bmm", TWIN_F, 1}, {"mm", TWIN_F, 1},
    {"rand_like", TWIN_F, 1}, {"randn_like", TWIN_F, 1}, {"linspace", TWIN_F, 0},
    {"logspace", TWIN_F, 0}, {"max", TWIN_F, 0}, {"min", TWIN_F, 0}, {"rsub", TWIN_F, 0},
    {"where", TWIN_F | TWIN_M, 0}, {"moveaxis", TWIN_F | TWIN_M, 0},
    {"narrow", TWIN_F | TWIN_M, 0}, {"clamp_max", TWIN_F | TWIN_M, 0},
    {"clamp_min", TWIN_F | TWIN_M, 0}, {"div", TWIN_M, 0}, {"div_", TWIN_M, 0},
    {"bitwise_and", TWIN_F | TWIN_M, 0}, {"bitwise_and_", TWIN_M, 0},
    {"bitwise_or", TWIN_F | TWIN_M, 0}, {"bitwise_or_", TWIN_M, 0},
    {"bitwise_xor", TWIN_F | TWIN_M, 0}, {"bitwise_xor_", TWIN_M, 0},
    {"bitwise_left_shift", TWIN_F | TWIN_M, 0}, {"bitwise_left_shift_", TWIN_M, 0},
    {"bitwise_right_shift", TWIN_F | TWIN_M, 0}, {"bitwise_right_shift_", TWIN_M, 0},
    {"eq", TWIN_F | TWIN_M, 0}, {"eq_", TWIN_M, 0}, {"ne", TWIN_F | TWIN_M, 0},
    {"ne_", TWIN_M, 0}, {"ge", TWIN_F | TWIN_M, 0}, {"ge_", TWIN_M, 0},
    {"gt", TWIN_F | TWIN_M, 0}, {"gt_", TWIN_M, 0}, {"le", TWIN_F | TWIN_M, 0},
    {"le_", TWIN_M, 0}, {"lt", TWIN_F | TWIN_M, 0}, {"lt_", TWIN_M, 0},
    {"floor_divide", TWIN_M, 0}, {"floor_divide_", TWIN_M, 0},
    {"fmod", TWIN_F | TWIN_M, 0}, {"fmod_", TWIN_M, 0}, {"remainder", TWIN_F | TWIN_M, 0},
    {"remainder_", TWIN_M, 0},
};

/* The twin's extra required parameters, or -1 when PyTorch has no twin */
static int
twin_signature(const PtlPyOpFunc *f)
{
    const char *n = PyUnicode_AsUTF8(f->name);
    for (size_t i = 0; n != NULL && i < sizeof(twin_signatures) / sizeof(*twin_signatures);
         i++) {
        if (strcmp(n, twin_signatures[i].name) == 0 &&
            (twin_signatures[i].where & (f->method ? TWIN_M : TWIN_F))) {
            return twin_signatures[i].more;
        }
    }
    return -1;
}

/* Whether out overload o is overload s with an out= parameter added (PyTorch's one Python
 * signature for both) */
static int
is_out_twin(const PtlSchema *o, const PtlSchema *s)
{
    if (o->out_index < 0 || s->out_index >= 0 || o->nargs != s->nargs + 1 ||
        o->out_index != s->nargs) {
        return 0;
    }
    for (int i = 0; i < s->nargs; i++) {
        if (strcmp(o->args[i].name, s->args[i].name) != 0 || o->args[i].kind != s->args[i].kind) {
            return 0;
        }
    }
    return 1;
}

/* One Python signature: an overload, and whether an out overload merged into it */
typedef struct PySignature {
    const PtlOperator *op;
    int has_out;
} PySignature;

static int
python_signatures(const PtlPyOpFunc *f, PySignature *sigs)
{
    int n = 0;
    for (int k = 0; k < f->n; k++) {
        const PtlOperator *op = ptl_dispatcher_op_at(f->ids[k]);
        int twin = -1;
        for (int j = 0; j < f->n && twin < 0; j++) {
            if (j != k && is_out_twin(&op->schema, &ptl_dispatcher_op_at(f->ids[j])->schema)) {
                twin = j;
            }
        }
        if (twin < 0) {
            sigs[n].op = op;
            sigs[n].has_out = 0;
            for (int j = 0; j < f->n; j++) {
                sigs[n].has_out |= j != k && is_out_twin(&ptl_dispatcher_op_at(f->ids[j])->schema,
                                                          &op->schema);
            }
            n++;
        }
    }
    return n;
}

/* PyTorch's min_args (required parameters, keyword-only ones included) and max_args (all
 * parameters: a factory's requires_grad, a merged out) of a signature, a method's self aside */
static void
signature_arg_counts(const PySignature *sig, int method, int *min_args, int *max_args)
{
    const PtlSchema *s = &sig->op->schema;
    *min_args = 0;
    *max_args = sig->has_out + (sig->op->device_arg >= 0);
    for (int i = method ? 1 : 0; i < s->nargs; i++) {
        *min_args += arg_required(s, i);
        (*max_args)++;
    }
}

/* "takes 2 positional arguments but 3 were given", counted without a method's self */
static PyObject *
too_many_error(PyObject *name, const PySignature *sig, int method, int max_pos, Py_ssize_t given)
{
    int min_args, max_args;
    signature_arg_counts(sig, method, &min_args, &max_args);
    if (min_args != max_pos) {
        return PyErr_Format(PyExc_TypeError,
                            "%U() takes from %d to %d positional arguments but %zd were given",
                            name, min_args, max_pos, given);
    }
    return PyErr_Format(PyExc_TypeError, "%U() takes %d positional argument%s but %zd %s given",
                        name, max_pos, max_pos == 1 ? "" : "s", given,
                        given == 1 ? "was" : "were");
}

/* "missing 1 required positional arguments: "other"": every required parameter from the
 * first missing one on, given by keyword or not (PyTorch's words, plural swapped) */
static PyObject *
missing_error(PyObject *name, const PtlSchema *s, int from)
{
    PyObject *names = PyUnicode_FromString("");
    int n = 0;
    for (int i = from; names != NULL && i < s->nargs; i++) {
        if (arg_required(s, i)) {
            PyUnicode_AppendAndDel(&names, PyUnicode_FromFormat("%s\"%s\"", n ? ", " : "",
                                                                 param_name(s, i)));
            n++;
        }
    }
    if (names != NULL) {
        PyErr_Format(PyExc_TypeError, "%U() missing %d required positional argument%s: %U",
                     name, n, n == 1 ? "s" : "", names);
        Py_DECREF(names);
    }
    return NULL;
}

/* The parameter index a keyword names in a signature (the merged out and a factory's
 * requires_grad count as parameters after the schema's), or -1 */
static int
keyword_index(const PySignature *sig, const char *kw)
{
    const PtlSchema *s = &sig->op->schema;
    for (int i = 0; i < s->nargs; i++) {
        if (ptlpy_arg_name_matches(&s->args[i], i, kw)) {
            return i;
        }
    }
    if (sig->has_out && strcmp(kw, "out") == 0) {
        return s->nargs;
    }
    if (sig->op->device_arg >= 0 && strcmp(kw, "requires_grad") == 0) {
        return s->nargs + 1;
    }
    return -1;
}

static PyObject *
keyword_value(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, const PySignature *sig,
              int index)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        const char *kw = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
        if (kw != NULL && keyword_index(sig, kw) == index) {
            return args[nargs + k];
        }
    }
    return NULL;
}

/* Whether v passes parameter i's check (the out and requires_grad parameters included):
 * 1 yes, 0 no, -1 error */
static int
param_accepts(const PySignature *sig, int i, PyObject *v)
{
    const PtlSchema *s = &sig->op->schema;
    if (i == s->nargs) {
        return v == Py_None || PtlPyTensor_Check(v);
    }
    if (i == s->nargs + 1) {
        return PyBool_Check(v);
    }
    return ptlpy_arg_accepts(sig->op, i, v);
}

/* The index of the first item that is not an int, or -1 */
static Py_ssize_t
first_non_int(PyObject *const *items, Py_ssize_t n)
{
    for (Py_ssize_t k = 0; k < n; k++) {
        if (!ptlpy_is_int_like(items[k])) {
            return k;
        }
    }
    return -1;
}

/* PyTorch checks an int list by its first item; a later item that is not an int fails when
 * the list is read, with these words (1-based position, no space after the comma) */
static PyObject *
unpack_error(PyObject *name, const char *pname, Py_ssize_t k, PyObject *item)
{
    return PyErr_Format(PyExc_TypeError,
                        "%U(): argument '%s' failed to unpack the object at pos %zd with error "
                        "\"type must be tuple of ints,but got %s\"",
                        name, pname, k + 1, given_type_name(item));
}

/* Raises PyTorch's message for the first fault of the call against one signature.  Returns
 * NULL, with no exception set when it finds none (the signature accepts what no overload
 * did): the caller gives the general message then.  An int list whose first item is an int
 * passes PyTorch's check, so a later item that is not is reported only when nothing else is
 * wrong (*unpack is set then), as PyTorch reads the list after the signature matched. */
static PyObject *
signature_error(PtlPyOpFunc *f, const PySignature *sig, PyObject *const *args, Py_ssize_t nargs,
                PyObject *kwnames, int *unpack)
{
    const char *unpack_name = NULL;
    PyObject *unpack_item = NULL;
    Py_ssize_t unpack_at = 0;
    const PtlSchema *s = &sig->op->schema;
    int first = f->method ? 1 : 0, max_pos = 0;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, left = nkw, pos = first;
    for (int i = first; i < s->nargs && !s->args[i].kwarg_only; i++) {
        max_pos++;
    }
    if (f->method && s->nargs == 1 && !sig->has_out) {
        /* PyTorch binds a method without parameters as METH_NOARGS: CPython's words */
        if (nkw > 0) {
            return PyErr_Format(PyExc_TypeError, "Tensor.%U() takes no keyword arguments",
                                f->name);
        }
        return PyErr_Format(PyExc_TypeError, "Tensor.%U() takes no arguments (%zd given)",
                            f->name, nargs - first);
    }
    int varargs = max_pos == 1 && s->args[first].kind == PTL_ARG_INTLIST;
    if (nargs - first > max_pos && !varargs) {
        return too_many_error(f->name, sig, f->method, max_pos, nargs - first);
    }
    int nparams = s->nargs + sig->has_out;
    for (int i = first; i < nparams; i++) {
        int extra = i >= s->nargs;   /* the merged out */
        int keyword = 0;
        PyObject *v;
        if (pos < nargs) {
            if (extra || s->args[i].kwarg_only) {
                return too_many_error(f->name, sig, f->method, max_pos, nargs - first);
            }
            v = args[pos];
        }
        else {
            v = keyword_value(args, nargs, kwnames, sig, i);
            keyword = 1;
        }
        int optional = extra || s->args[i].optional;
        if (v == NULL && (extra || !arg_required(s, i))) {
            continue;
        }
        if (v == NULL) {
            return missing_error(f->name, s, i);
        }
        if (varargs && pos == first && !keyword && nargs - pos > 1) {
            /* the varargs form, x.permute(0, 1): every positional argument is the list */
            if (!ptlpy_is_int_like(v)) {
                return too_many_error(f->name, sig, f->method, max_pos, nargs - first);
            }
            Py_ssize_t k = first_non_int(&args[pos], nargs - pos);
            if (k >= 0 && unpack_name == NULL) {
                unpack_name = param_name(s, i);
                unpack_at = k;
                unpack_item = args[pos + k];
            }
            pos = nargs;
            continue;
        }
        int r = (v == Py_None && optional) ? 1 : param_accepts(sig, i, v);
        if (r < 0) {
            return NULL;
        }
        Py_ssize_t k = (r == 0 && !extra && s->args[i].kind == PTL_ARG_INTLIST &&
                        (PyList_Check(v) || PyTuple_Check(v)))
                           ? first_non_int(PySequence_Fast_ITEMS(v), PySequence_Fast_GET_SIZE(v))
                           : -1;
        if (k > 0) {
            if (unpack_name == NULL) {
                unpack_name = param_name(s, i);
                unpack_at = k;
                unpack_item = PySequence_Fast_GET_ITEM(v, k);
            }
            r = 1;
        }
        if (r == 0) {
            const char *pname = extra ? "out" : param_name(s, i);
            const char *want = extra ? "Tensor" : wanted_type_name(&s->args[i]);
            if (k == 0 && !keyword) {
                return PyErr_Format(PyExc_TypeError,
                                    "%U(): argument '%s' (position %zd) must be %s, but found "
                                    "element of type %s at pos 0",
                                    f->name, pname, pos + 1 - first, want,
                                    given_type_name(PySequence_Fast_GET_ITEM(v, 0)));
            }
            if (keyword) {
                return PyErr_Format(PyExc_TypeError, "%U(): argument '%s' must be %s, not %s",
                                    f->name, pname, want, given_type_name(v));
            }
            return PyErr_Format(PyExc_TypeError,
                                "%U(): argument '%s' (position %zd) must be %s, not %s", f->name,
                                pname, pos + 1 - first, want, given_type_name(v));
        }
        if (!keyword) {
            pos++;
        }
        else {
            left--;
        }
    }
    if (pos < nargs) {
        return too_many_error(f->name, sig, f->method, max_pos, nargs - first);
    }
    PyObject *rg = sig->op->device_arg >= 0 ? keyword_value(args, nargs, kwnames, sig,
                                                            s->nargs + 1)
                                            : NULL;
    if (rg != NULL && !PyBool_Check(rg)) {
        return PyErr_Format(PyExc_TypeError, "%U(): argument 'requires_grad' must be bool, not %s",
                            f->name, given_type_name(rg));
    }
    left -= rg != NULL;
    for (Py_ssize_t k = 0; left > 0 && k < nkw; k++) {
        const char *kw = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
        if (kw == NULL) {
            return NULL;
        }
        int i = keyword_index(sig, kw);
        if (i < 0) {
            return PyErr_Format(PyExc_TypeError, "%U() got an unexpected keyword argument '%s'",
                                f->name, kw);
        }
        if (i < nargs) {
            return PyErr_Format(PyExc_TypeError, "%U() got multiple values for argument '%s'",
                                f->name, kw);
        }
    }
    if (unpack_name != NULL) {
        *unpack = 1;
        return unpack_error(f->name, unpack_name, unpack_at, unpack_item);
    }
    return NULL;
}

/* The signature PyTorch names the fault against (Note [Bad call messages]), or -1 for the
 * general message */
static int
blamed_signature(PtlPyOpFunc *f, const PySignature *sigs, int nsigs, Py_ssize_t nargs,
                 PyObject *kwnames)
{
    int more = twin_signature(f);
    if (nsigs == 1 && more < 0 && !has_hidden_signature(f->name)) {
        return 0;
    }
    Py_ssize_t given = nargs - (f->method ? 1 : 0) + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    int blamed = -1, plausible = 0, widest_min = 0, widest_max = -1;
    for (int k = 0; k < nsigs; k++) {
        int min_args, max_args;
        signature_arg_counts(&sigs[k], f->method, &min_args, &max_args);
        if (given >= min_args && given <= max_args) {
            blamed = k;
            plausible++;
        }
        if (max_args > widest_max) {
            widest_min = min_args;
            widest_max = max_args;
        }
    }
    if (more >= 0 && given >= widest_min + more && given <= widest_max + more) {
        plausible++;
    }
    return plausible == 1 ? blamed : -1;
}

PyObject *
ptlpy_bad_call_error(PtlPyOpFunc *f, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PySignature psigs[MAX_OVERLOADS];
    int npsigs = python_signatures(f, psigs);
    int blamed = blamed_signature(f, psigs, npsigs, nargs, kwnames);
    /* PyTorch tries every signature before it reports: one that passes its checks but for
     * an int list's later item fails reading the list */
    for (int k = 0; npsigs > 1 && k < npsigs; k++) {
        int unpack = 0;
        signature_error(f, &psigs[k], args, nargs, kwnames, &unpack);
        if (unpack || (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_TypeError))) {
            return NULL;
        }
        PyErr_Clear();
    }
    if (blamed >= 0) {
        int unpack = 0;
        signature_error(f, &psigs[blamed], args, nargs, kwnames, &unpack);
        if (PyErr_Occurred()) {
            return NULL;
        }
    }
    PyObject *parts = PyList_New(0);
    if (parts == NULL) {
        return NULL;
    }
    PyObject *got = PyUnicode_FromString("");
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = f->method ? 1 : 0; got != NULL && i < nargs + nkw; i++) {
        const char *sep = PyUnicode_GET_LENGTH(got) ? ", " : "";
        PyObject *piece = i < nargs ? PyUnicode_FromFormat("%s%s", sep, py_type_name(args[i]))
                                    : PyUnicode_FromFormat("%s%U=%s", sep,
                                                           PyTuple_GET_ITEM(kwnames, i - nargs),
                                                           py_type_name(args[i]));
        PyUnicode_AppendAndDel(&got, piece);
    }
    for (int k = 0; k < f->n; k++) {
        append_signature(parts, ptl_dispatcher_op_at(f->ids[k]), f->method);
    }
    PyObject *empty = PyUnicode_FromString("");
    PyObject *sigs = empty ? PyUnicode_Join(empty, parts) : NULL;
    if (got != NULL && sigs != NULL) {
        PyErr_Format(PyExc_TypeError,
                     "%U() received an invalid combination of arguments - got (%U), but "
                     "expected one of:\n%U",
                     f->name, got, sigs);
    }
    Py_XDECREF(empty);
    Py_XDECREF(sigs);
    Py_XDECREF(got);
    Py_DECREF(parts);
    return NULL;
}
