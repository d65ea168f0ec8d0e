/* arg_errors.c -- the TypeError for a call that no overload of a binding accepts: the fault
 * of one signature, or the general "received an invalid combination of arguments" form.
 * Mirrors print_error and FunctionSignature::parse's messages in
 * torch/csrc/utils/python_arg_parser.cpp.  See Note [Bad call messages]. */
#include "ptlpy.h"
#include "arg_parse_impl.h"

#include <string.h>

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
 * another overload's is that overload's optional `out` (PyTorch merges them: a tuple of
 * Tensors when the overload has several out= parameters or one Tensor[], as frexp's and the
 * PyTorch schemas of the functions written in Python spell it), and the hidden
 * signatures are the deprecated forms of deprecated.yaml (add(Tensor self, Scalar alpha,
 * Tensor other) ...), which PyTorch also gives to the in-place methods, plus copy_'s; they
 * are a table here (hidden_signatures) because no schema of ours spells them.  PyTorch also
 * shows signatures that we fold into one overload (a Number twin of a Tensor parameter,
 * linspace's Tensor start and end): a second table (twin_signatures) derives each from one of
 * ours, to show and count it; and a third (torch_out_overloads) names the overloads whose
 * PyTorch function takes an out= that we lack, with its dtype rule.  The first fault is found
 * in the order PyTorch's FunctionSignature::parse looks: too many positional arguments, then
 * each parameter in turn (missing, or of the wrong type), then the keywords left over
 * (unknown, or naming a parameter a positional argument filled).  The messages keep
 * PyTorch's words, "missing 1 required positional arguments" included; a method without
 * parameters has CPython's METH_NOARGS words.  The general form prints PyTorch's signature
 * strings (Note [Signature strings]).  Accepted calls never come here. */

/* The type a parameter wants, as PyTorch's "argument 'x' must be T" and its signature strings
 * name it */
static const char *
wanted_type_name(const PtlArg *a)
{
    switch ((PtlArgKind)a->kind) {
    case PTL_ARG_DTYPE: return "torch.dtype";
    case PTL_ARG_DEVICE: return "torch.device";
    case PTL_ARG_LAYOUT: return "torch.layout";
    case PTL_ARG_MEMFORMAT: return "torch.memory_format";
    case PTL_ARG_GENERATOR: return "torch.Generator";
    case PTL_ARG_SCALAR: return "Number";
    case PTL_ARG_TENSORLIST: return "tuple of Tensors";
    case PTL_ARG_INTLIST: return "tuple of ints";
    case PTL_ARG_FLOATLIST: return "tuple of floats";
    default: return ptl_arg_kind_name((PtlArgKind)a->kind);
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

/* PyTorch's signatures that no overload of ours spells, each derived from one of ours
 * (`base`: its overload name) by edits: `name:Type` gives a parameter another type (Scalar,
 * Tensor, int[]), `name:positional` makes a keyword-only one positional, `+name:Type@i`
 * (`+*` keyword-only) inserts a required parameter at schema index i.  `out`: PyTorch's has
 * out= (a function's).  They are shown and counted, never blamed.  Note [Bad call
 * messages]. */
enum { TWIN_F = 1, TWIN_M = 2 };
static const struct {
    const char *name;
    int where;
    const char *base, *edits;
    int out;
} twin_signatures[] = {
    {"linspace", TWIN_F, "", "start:Tensor,end:Tensor", 1},
    {"linspace", TWIN_F, "", "end:Tensor", 1},
    {"linspace", TWIN_F, "", "start:Tensor", 1},
    {"logspace", TWIN_F, "", "start:Tensor,end:Tensor", 1},
    {"logspace", TWIN_F, "", "end:Tensor", 1},
    {"logspace", TWIN_F, "", "start:Tensor", 1},
    {"rsub", TWIN_F, "Tensor", "other:Scalar,alpha:positional", 0},
    {"where", TWIN_F, "self", "self:Scalar", 0},
    {"where", TWIN_F | TWIN_M, "self", "other:Scalar", 0},
    {"where", TWIN_F, "self", "self:Scalar,other:Scalar", 0},
    {"moveaxis", TWIN_F | TWIN_M, "int", "source:int[],destination:int[]", 0},
    {"narrow", TWIN_F | TWIN_M, "", "start:Tensor", 0},
    {"div", TWIN_F | TWIN_M, "Tensor_mode", "other:Scalar", 0},
    {"div_", TWIN_M, "Tensor_mode", "other:Scalar", 0},
    {"floor_divide", TWIN_F | TWIN_M, "", "other:Scalar", 0},
    {"floor_divide_", TWIN_M, "", "other:Scalar", 0},
#define NUMBER_SELF_TWIN(NAME)                                    \
    {#NAME, TWIN_F, "Tensor", "self:Scalar", 0},                  \
    {#NAME, TWIN_F | TWIN_M, "Tensor", "other:Scalar", 1},        \
    {#NAME "_", TWIN_M, "Tensor", "other:Scalar", 0},
#define NUMBER_OTHER_TWIN(NAME)                                   \
    {#NAME, TWIN_F | TWIN_M, "Tensor", "other:Scalar", 1},        \
    {#NAME "_", TWIN_M, "Tensor", "other:Scalar", 0},
    NUMBER_SELF_TWIN(bitwise_and) NUMBER_SELF_TWIN(bitwise_or) NUMBER_SELF_TWIN(bitwise_xor)
    NUMBER_SELF_TWIN(bitwise_left_shift) NUMBER_SELF_TWIN(bitwise_right_shift)
    NUMBER_SELF_TWIN(remainder)
    NUMBER_OTHER_TWIN(eq) NUMBER_OTHER_TWIN(ne) NUMBER_OTHER_TWIN(ge) NUMBER_OTHER_TWIN(gt)
    NUMBER_OTHER_TWIN(le) NUMBER_OTHER_TWIN(lt) NUMBER_OTHER_TWIN(fmod)
#undef NUMBER_SELF_TWIN
#undef NUMBER_OTHER_TWIN
};

#include "torch_out_overloads.h"

/* Whether the schema is name.overload (a bare name when overload is "") */
static int
schema_is(const PtlSchema *s, const char *name, const char *overload)
{
    const char *n = strncmp(s->name, "aten::", 6) == 0 ? s->name + 6 : s->name;
    return strcmp(n, name) == 0 && strcmp(s->overload, overload) == 0;
}

/* The row of torch_out_overloads for overload s, one without out parameters, or NULL when
 * PyTorch's function takes no out= there (the table's rows of our out overloads are for the
 * tests: their kernels check out's dtype themselves) */
static const TorchOutOverload *
torch_out_overload(const PtlSchema *s)
{
    size_t n = s->out_index < 0 ? sizeof(torch_out_overloads) / sizeof(*torch_out_overloads) : 0;
    for (size_t i = 0; i < n; i++) {
        const char *q = torch_out_overloads[i].name, *dot = strchr(q, '.');
        char name[64];
        snprintf(name, sizeof(name), "%.*s", dot ? (int)(dot - q) : (int)strlen(q), q);
        if (schema_is(s, name, dot ? dot + 1 : "")) {
            return &torch_out_overloads[i];
        }
    }
    return NULL;
}

static int
torch_has_out(const PtlSchema *s)
{
    return torch_out_overload(s) != NULL;
}

/* Applies a twin's edits to a copy of its base schema (twin_signatures) */
static void
apply_twin_edits(PtlSchema *t, const char *edits)
{
    const char *p = edits;
    while (*p != '\0') {
        char item[64], name[32], type[32];
        size_t len = strcspn(p, ",");
        snprintf(item, sizeof(item), "%.*s", (int)len, p);
        p += len + (p[len] == ',');
        int insert = item[0] == '+', kwarg = insert && item[1] == '*', at = 0;
        if (sscanf(item + insert + kwarg, "%31[^:]:%31[^@]@%d", name, type, &at) < 2) {
            continue;
        }
        PtlArg *a = NULL;
        if (insert && at <= t->nargs && t->nargs < PTL_SCHEMA_MAX_ARGS) {
            memmove(&t->args[at + 1], &t->args[at], sizeof(PtlArg) * (size_t)(t->nargs - at));
            a = &t->args[at];
            memset(a, 0, sizeof(*a));
            snprintf(a->name, sizeof(a->name), "%s", name);
            a->kwarg_only = (uint8_t)kwarg;
            t->nargs++;
        }
        for (int i = 0; !insert && i < t->nargs; i++) {
            a = strcmp(t->args[i].name, name) == 0 ? &t->args[i] : a;
        }
        if (a == NULL) {
            continue;
        }
        if (strcmp(type, "positional") == 0) {
            a->kwarg_only = 0;
            continue;
        }
        a->symint = 0;
        a->kind = strcmp(type, "Scalar") == 0       ? PTL_ARG_SCALAR
                  : strcmp(type, "Tensor") == 0     ? PTL_ARG_TENSOR
                  : strcmp(type, "int[]") == 0      ? PTL_ARG_INTLIST
                  : strcmp(type, "ScalarType") == 0 ? PTL_ARG_DTYPE
                                                    : PTL_ARG_GENERATOR;
    }
}

/* The number of out= parameters of out overload o when it is overload s with them added
 * (PyTorch's one Python signature for both), else 0 */
static int
out_twin_count(const PtlSchema *o, const PtlSchema *s)
{
    if (o->out_index < 0 || s->out_index >= 0 || o->nargs <= s->nargs ||
        o->out_index != s->nargs) {
        return 0;
    }
    for (int i = 0; i < s->nargs; i++) {
        if (strcmp(o->args[i].name, s->args[i].name) != 0 || o->args[i].kind != s->args[i].kind) {
            return 0;
        }
    }
    for (int i = o->out_index; i < o->nargs; i++) {
        if (!o->args[i].alias_write || !o->args[i].kwarg_only) {
            return 0;
        }
    }
    return o->nargs - s->nargs;
}

/* Whether out overload o's one out= parameter is a Tensor[]: the tuple of tensors PyTorch's
 * binding takes (frexp(x, out=(m, e)), qr, histogram, unbind_copy) */
static int
out_is_list(const PtlSchema *o)
{
    return o->out_index == o->nargs - 1 && o->args[o->out_index].kind == PTL_ARG_TENSORLIST;
}

/* One Python signature: an overload (or a twin derived from one), and how many outputs its
 * out= parameter takes (0: none; a tuple's size when out_list) */
typedef struct PySignature {
    const PtlOperator *op;
    const PtlSchema *schema;   /* op's, or the twin's */
    int has_out;
    int nouts;
    int out_list;              /* out= is a tuple of Tensors (nouts > 1, or a Tensor[] out) */
    int twin;                  /* one of twin_signatures */
    PtlSchema twin_schema;
} PySignature;

/* Fills sigs (room for MAX_OVERLOADS) with f's Python signatures: its overloads with their
 * out overloads merged, then PyTorch's twins of them */
static int
python_signatures(const PtlPyOpFunc *f, PySignature *sigs)
{
    int n = 0;
    for (int k = 0; k < f->n; k++) {
        const PtlOperator *op = ptl_dispatcher_op_at(f->ids[k]);
        int twin = -1;
        for (int j = 0; j < f->n && twin < 0; j++) {
            if (j != k && out_twin_count(&op->schema, &ptl_dispatcher_op_at(f->ids[j])->schema)) {
                twin = j;
            }
        }
        if (twin < 0) {
            sigs[n].op = op;
            sigs[n].schema = &op->schema;
            sigs[n].twin = 0;
            sigs[n].nouts = 0;
            sigs[n].out_list = 0;
            for (int j = 0; j < f->n && sigs[n].nouts == 0 && !sigs[n].out_list; j++) {
                const PtlSchema *o = &ptl_dispatcher_op_at(f->ids[j])->schema;
                sigs[n].nouts = j != k ? out_twin_count(o, &op->schema) : 0;
                if (sigs[n].nouts > 0 && out_is_list(o)) {
                    sigs[n].nouts = o->nrets;
                    sigs[n].out_list = 1;
                }
            }
            if (sigs[n].nouts == 0 && !sigs[n].out_list && !f->method &&
                torch_has_out(&op->schema)) {
                sigs[n].nouts = op->schema.nrets;
            }
            sigs[n].has_out = sigs[n].nouts > 0 || sigs[n].out_list;
            sigs[n].out_list |= sigs[n].nouts > 1;
            n++;
        }
    }
    const char *name = PyUnicode_AsUTF8(f->name);
    int nours = n;
    for (size_t i = 0; name != NULL && i < sizeof(twin_signatures) / sizeof(*twin_signatures) &&
                       n < MAX_OVERLOADS;
         i++) {
        if (strcmp(name, twin_signatures[i].name) != 0 ||
            !(twin_signatures[i].where & (f->method ? TWIN_M : TWIN_F))) {
            continue;
        }
        for (int k = 0; k < nours; k++) {
            const PtlSchema *base = sigs[k].schema;
            const char *n0 = strncmp(base->name, "aten::", 6) == 0 ? base->name + 6 : base->name;
            if (!schema_is(base, n0, twin_signatures[i].base) || strcmp(n0, name) != 0) {
                continue;
            }
            sigs[n] = sigs[k];
            sigs[n].twin_schema = *base;
            apply_twin_edits(&sigs[n].twin_schema, twin_signatures[i].edits);
            sigs[n].schema = &sigs[n].twin_schema;
            sigs[n].twin = 1;
            sigs[n].nouts = !f->method && twin_signatures[i].out;
            sigs[n].has_out = sigs[n].nouts;
            sigs[n].out_list = 0;
            n++;
            break;
        }
    }
    return n;
}

/* PyTorch's min_args (required parameters, keyword-only ones included) and max_args (all
 * parameters: a factory's requires_grad, a merged out) of a signature, a method's self aside */
static void
signature_arg_counts(const PySignature *sig, int method, int *min_args, int *max_args)
{
    const PtlSchema *s = sig->schema;
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
    const PtlSchema *s = sig->schema;
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
    const PtlSchema *s = sig->schema;
    if (i == s->nargs && sig->out_list && (PyTuple_Check(v) || PyList_Check(v))) {
        for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(v); k++) {
            if (!PtlPyTensor_Check(PySequence_Fast_GET_ITEM(v, k))) {
                return 0;
            }
        }
        return 1;
    }
    if (i == s->nargs) {
        return v == Py_None || (!sig->out_list && PtlPyTensor_Check(v));
    }
    if (i == s->nargs + 1) {
        return PyBool_Check(v);
    }
    return ptlpy_arg_accepts(sig->op, i, v, 0);
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
 * wrong (*unpack is set then), as PyTorch reads the list after the signature matched.  An
 * item of a tensor list that is no Tensor sets *unpack too: PyTorch raises that at once. */
static PyObject *
signature_error(PtlPyOpFunc *f, const PySignature *sig, PyObject *const *args, Py_ssize_t nargs,
                PyObject *kwnames, int *unpack)
{
    const char *unpack_name = NULL;
    PyObject *unpack_item = NULL;
    Py_ssize_t unpack_at = 0;
    const PtlSchema *s = sig->schema;
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
        int tensors = extra ? sig->out_list : s->args[i].kind == PTL_ARG_TENSORLIST;
        if (r == 0 && tensors && (PyList_Check(v) || PyTuple_Check(v))) {
            /* PyTorch checks every item of a tensor list as it matches the signature, and
             * raises at once (*unpack: whichever signature it tries) */
            for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(v); k++) {
                PyObject *item = PySequence_Fast_GET_ITEM(v, k);
                if (!PtlPyTensor_Check(item) &&
                    !(item == Py_None && !extra && s->args[i].elem_optional)) {
                    *unpack = 1;
                    return PyErr_Format(PyExc_TypeError,
                                        "expected Tensor as element %zd in argument %d, but got "
                                        "%s",
                                        k, i - first, given_type_name(item));
                }
            }
        }
        if (r == 0) {
            const char *pname = extra ? "out" : param_name(s, i);
            const char *want = !extra        ? wanted_type_name(&s->args[i])
                               : sig->out_list ? "tuple of Tensors"
                                               : "Tensor";
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
    if (nsigs == 1 && !has_hidden_signature(f->name)) {
        return 0;
    }
    Py_ssize_t given = nargs - (f->method ? 1 : 0) + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    int blamed = -1, plausible = 0;
    for (int k = 0; k < nsigs; k++) {
        int min_args, max_args;
        signature_arg_counts(&sigs[k], f->method, &min_args, &max_args);
        if (given >= min_args && given <= max_args) {
            blamed = sigs[k].twin ? blamed : k;
            plausible++;
        }
    }
    return plausible == 1 ? blamed : -1;
}

/* Note [Signature strings]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * The general form lists PyTorch's Python signatures as its FunctionSignature::toString
 * prints them, and we derive each from a schema (an overload's, or a twin's: Note [Bad call
 * messages]): the parameters in order (a method's self left out, a function's Tensor self
 * named input), each as `type name` with PyTorch's type words (Number, tuple of ints,
 * torch.dtype; no `?`: a Tensor? or int? prints as Tensor, int), ` = default` where the
 * schema has one (native_functions.yaml's text through PyTorch's codegen: [] and None are
 * None, [0, 1] is {0,1}, "mean" keeps its quotes, Mean is at::Reduction::Mean), `*, `
 * before the first keyword-only one.  An out= (ours merged, or PyTorch's that we lack)
 * adds `Tensor out = None` (`tuple of Tensors out = None` for several outputs) after the
 * schema's parameters, in functions only; a factory's dtype, layout, device and
 * pin_memory move behind it as PyTorch's TensorOptions, with requires_grad after them.
 *
 * The order is PyTorch's codegen's (sort_overloads): the signatures sorted by their C++
 * parse strings ("std(Tensor input, IntArrayRef[1]? dim, ...)"), then a stable topological
 * sort that puts a signature after any of the same length whose every parameter type is
 * equal or preferred to its own (Tensor before Scalar, int before int[], Tensor before int,
 * any list before Tensor[], int[] before SymInt[]).
 *
 * Under each signature whose parameter count (its `*` counted as one, as PyTorch's
 * invalid_arguments.cpp reparses the printed string) equals the number of arguments given
 * comes one "didn't match because" line: the keywords that name none of its last
 * parameters, or else the arguments with the mismatching ones between `!`.  The reparse
 * takes the word after the last space as the parameter's name and the words before it as
 * its type, so a parameter with a default (`bool keepdim = False`) never matches and a
 * keyword never names it; a type matches a value whose type is named the same (float
 * takes an int as well).  We keep those outcomes: they are PyTorch's text.  With one shown
 * signature (the others hidden) the message takes PyTorch's single form. */

enum { MAX_FORMALS = PTL_SCHEMA_MAX_ARGS + 6, FORMAL_LEN = 128, SIG_LEN = 2048 };

/* One parameter of a Python signature */
typedef struct Formal {
    char shown[FORMAL_LEN];   /* "tuple of ints dim = None" */
    char key[FORMAL_LEN];     /* "IntArrayRef[1]? dim=None": the codegen's, to sort by */
    char type[48];            /* "int[1]?": the schema's type, for the partial order */
    int kwarg_only;
    int out;
} Formal;

typedef struct SignatureText {
    int n;
    Formal f[MAX_FORMALS];
    char shown[SIG_LEN];      /* "(Tensor input, *, torch.dtype dtype = None)" */
    char key[SIG_LEN];
} SignatureText;

/* A parameter's C++ type in PyTorch's parse strings (key 1) and its schema type (key 0) */
static void
formal_type(const PtlArg *a, int cpp, char *buf, size_t n)
{
    static const char *const cpp_names[PTL_ARG_KIND_COUNT] = {   /* ORDER PtlArgKind */
        "Tensor", "int64_t", "double", "bool", "c10::string_view", "Scalar", "ScalarType",
        "Device", "Layout", "MemoryFormat", "Generator", "TensorList", "IntArrayRef",
        "ArrayRef<double>",
    };
    const char *q = a->optional ? "?" : "";
    int list = a->kind == PTL_ARG_TENSORLIST || a->kind == PTL_ARG_INTLIST ||
               a->kind == PTL_ARG_FLOATLIST;
    char size[16] = "";
    if (a->list_len > 0) {
        snprintf(size, sizeof(size), "[%d]", (int)a->list_len);
    }
    if (cpp) {
        if (a->symint) {
            snprintf(buf, n, "%s%s%s", list ? "SymIntArrayRef" : "SymInt", size, q);
        }
        else if (a->kind == PTL_ARG_TENSORLIST && a->elem_optional) {
            snprintf(buf, n, "c10::List<::std::optional<Tensor>>%s", q);
        }
        else if (a->kind == PTL_ARG_INTLIST && a->elem_bool) {
            snprintf(buf, n, "::std::array<bool,%d>%s", (int)a->list_len, q);
        }
        else {
            snprintf(buf, n, "%s%s%s", cpp_names[a->kind], a->kind == PTL_ARG_FLOATLIST ? "" : size,
                     q);
        }
        return;
    }
    if (!list) {
        snprintf(buf, n, "%s%s", a->symint ? "SymInt" : ptl_arg_kind_name((PtlArgKind)a->kind), q);
        return;
    }
    const char *elem = a->kind == PTL_ARG_TENSORLIST ? (a->elem_optional ? "Tensor?" : "Tensor")
                       : a->kind == PTL_ARG_FLOATLIST ? "float"
                       : a->elem_bool                 ? "bool"
                       : a->symint                    ? "SymInt"
                                                      : "int";
    snprintf(buf, n, "%s%s%s", elem, a->list_len > 0 ? size : "[]", q);
}

/* A default as PyTorch's signatures print it (the schema's text through its codegen) */
static void
default_text(const PtlArg *a, char *buf, size_t n)
{
    const char *d = a->def_str;
    if (a->def.tag == PTL_IV_NONE || strcmp(d, "[]") == 0) {
        snprintf(buf, n, "None");
    }
    else if (a->kind == PTL_ARG_STR) {
        snprintf(buf, n, "\"%s\"", d);
    }
    else if (strcmp(d, "Mean") == 0) {
        snprintf(buf, n, "at::Reduction::Mean");
    }
    else if (a->kind == PTL_ARG_DTYPE && strcmp(d, "long") == 0) {
        snprintf(buf, n, "torch.int64");
    }
    else if (d[0] == '[') {   /* [0, 1] -> {0,1} */
        size_t k = 0;
        for (const char *c = d; *c != '\0' && k + 1 < n; c++) {
            if (*c != ' ') {
                buf[k++] = *c == '[' ? '{' : *c == ']' ? '}' : *c;
            }
        }
        buf[k] = '\0';
    }
    else {
        snprintf(buf, n, "%s", d);
    }
}

static void
add_formal(SignatureText *t, const char *shown_type, const char *cpp_type, const char *type,
           const char *name, const char *def, int kwarg_only, int out)
{
    Formal *f = &t->f[t->n++];
    snprintf(f->shown, sizeof(f->shown), "%s %s%s%s", shown_type, name, def ? " = " : "",
             def ? def : "");
    snprintf(f->key, sizeof(f->key), "%s %s%s%s", cpp_type, name, def ? "=" : "", def ? def : "");
    snprintf(f->type, sizeof(f->type), "%s", type);
    f->kwarg_only = kwarg_only;
    f->out = out;
}

/* Whether a factory's parameter is one of PyTorch's TensorOptions */
static int
is_tensor_option(const PtlArg *a)
{
    return a->kwarg_only &&
           ((a->kind == PTL_ARG_DTYPE && strcmp(a->name, "dtype") == 0) ||
            a->kind == PTL_ARG_LAYOUT ||
            (a->kind == PTL_ARG_DEVICE && strcmp(a->name, "device") == 0) ||
            (a->kind == PTL_ARG_BOOL && strcmp(a->name, "pin_memory") == 0));
}

/* Appends text to buf (of size n, holding *off characters), cutting what does not fit */
static void
append_text(char *buf, size_t n, size_t *off, const char *text)
{
    int k = snprintf(buf + *off, n - *off, "%s", text);
    *off += k < 0 ? 0 : (size_t)k < n - *off ? (size_t)k : n - *off - 1;
}

/* Joins the formals into "(a, *, b)"; with name, the codegen's "name(a, *, b)" to sort by */
static void
join_formals(SignatureText *t, const char *name, char *buf, size_t n)
{
    size_t off = 0;
    int star = 0;
    buf[0] = '\0';
    append_text(buf, n, &off, name ? name : "");
    append_text(buf, n, &off, "(");
    for (int i = 0; i < t->n; i++) {
        append_text(buf, n, &off, i ? ", " : "");
        if (t->f[i].kwarg_only && !star) {
            append_text(buf, n, &off, "*, ");
            star = 1;
        }
        append_text(buf, n, &off, name ? t->f[i].key : t->f[i].shown);
    }
    append_text(buf, n, &off, ")");
}

/* The Python signature's parameters and strings (Note [Signature strings]) */
static void
signature_text(const PtlPyOpFunc *f, const PySignature *sig, SignatureText *t)
{
    const PtlSchema *s = sig->schema;
    const char *name = PyUnicode_AsUTF8(f->name);
    int factory = 0;
    for (int i = 0; i < s->nargs; i++) {
        factory |= s->args[i].kind == PTL_ARG_DEVICE && s->args[i].kwarg_only &&
                   strcmp(s->args[i].name, "device") == 0;
    }
    int self = 0;
    for (int i = 0; f->method && i < s->nargs; i++) {
        self = strcmp(s->args[i].name, "self") == 0 ? i : self;
    }
    t->n = 0;
    for (int i = 0; i < s->nargs; i++) {
        const PtlArg *a = &s->args[i];
        char cpp[64], type[48], def[48];
        if ((f->method && i == self) || (factory && is_tensor_option(a))) {
            continue;
        }
        formal_type(a, 1, cpp, sizeof(cpp));
        formal_type(a, 0, type, sizeof(type));
        if (a->has_default) {
            default_text(a, def, sizeof(def));
        }
        add_formal(t, wanted_type_name(a), cpp, type,
                   a->kind == PTL_ARG_SCALAR ? a->name : param_name(s, i),
                   a->has_default ? def : NULL, a->kwarg_only, 0);
    }
    if (sig->has_out && !f->method) {
        char cpp[32];
        snprintf(cpp, sizeof(cpp), sig->nouts > 1 ? "TensorList[%d]" : "TensorList", sig->nouts);
        add_formal(t, sig->out_list ? "tuple of Tensors" : "Tensor",
                   sig->out_list ? cpp : "Tensor", "Tensor", "out", "None", 1, 1);
    }
    if (factory) {
        add_formal(t, "torch.dtype", "ScalarType?", "ScalarType?", "dtype", "None", 1, 0);
        add_formal(t, "torch.layout", "Layout?", "Layout?", "layout", "None", 1, 0);
        add_formal(t, "torch.device", "Device?", "Device?", "device", "None", 1, 0);
        add_formal(t, "bool", "bool?", "bool?", "pin_memory", "False", 1, 0);
        add_formal(t, "bool", "bool", "bool", "requires_grad", "False", 1, 0);
    }
    join_formals(t, NULL, t->shown, sizeof(t->shown));
    join_formals(t, name ? name : "", t->key, sizeof(t->key));
}

/* Whether PyTorch's codegen prefers a parameter of type t2 to one of type t1 */
static int
is_arg_smaller(const char *t1, const char *t2)
{
    return (strcmp(t1, "Scalar") == 0 && strcmp(t2, "Tensor") == 0) ||
           (strcmp(t1, "Scalar?") == 0 && strcmp(t2, "Tensor?") == 0) ||
           (strcmp(t1, "int[]") == 0 && (strcmp(t2, "int") == 0 || strcmp(t2, "int?") == 0)) ||
           (strcmp(t1, "Tensor[]") == 0 && strstr(t2, "[]") != NULL) ||
           (strcmp(t1, "SymInt[]") == 0 && strcmp(t2, "int[]") == 0) ||
           ((strcmp(t1, "int") == 0 || strcmp(t1, "SymInt") == 0) && strcmp(t2, "Tensor") == 0);
}

/* Whether signature a comes after signature b in PyTorch's partial order */
static int
is_smaller(const SignatureText *a, const SignatureText *b)
{
    int i = 0, j = 0, equal = 1;
    for (;;) {
        while (i < a->n && a->f[i].out) {
            i++;
        }
        while (j < b->n && b->f[j].out) {
            j++;
        }
        if (i == a->n || j == b->n) {
            return i == a->n && j == b->n && !equal;
        }
        if (strcmp(a->f[i].type, b->f[j].type) != 0) {
            if (!is_arg_smaller(a->f[i].type, b->f[j].type)) {
                return 0;
            }
            equal = 0;
        }
        i++;
        j++;
    }
}

/* Orders t[0..n) as PyTorch's codegen does (Note [Signature strings]) into order[] */
static void
sort_signatures(SignatureText *const *t, int n, int *order)
{
    int by_key[MAX_OVERLOADS], done = 0, left[MAX_OVERLOADS] = {0};
    int larger[MAX_OVERLOADS][MAX_OVERLOADS] = {{0}};
    for (int k = 0; k < n; k++) {   /* insertion sort by the parse string */
        int j = k;
        while (j > 0 && strcmp(t[by_key[j - 1]]->key, t[k]->key) > 0) {
            by_key[j] = by_key[j - 1];
            j--;
        }
        by_key[j] = k;
    }
    for (int a = 0; a < n; a++) {
        for (int b = 0; b < n; b++) {
            larger[a][b] = is_smaller(t[by_key[a]], t[by_key[b]]);
            left[a] += larger[a][b];
        }
    }
    for (int a = 0; a < n; a++) {
        if (left[a] == 0) {
            order[done++] = a;
        }
    }
    for (int idx = 0; idx < done; idx++) {
        for (int a = 0; a < n; a++) {
            if (left[a] > 0 && larger[a][order[idx]]) {
                larger[a][order[idx]] = 0;
                if (--left[a] == 0) {
                    order[done++] = a;
                }
            }
        }
    }
    for (int k = 0; k < done; k++) {
        order[k] = by_key[order[k]];
    }
}

/* Appends a value's description as PyTorch's general form gives it: its type's tp_name, or
 * with items a list's or tuple's item types */
static void
append_value(PyObject **out, PyObject *o, int items)
{
    int tuple = PyTuple_Check(o);
    if (!items || (!tuple && !PyList_Check(o))) {
        PyUnicode_AppendAndDel(out, PyUnicode_FromString(Py_TYPE(o)->tp_name));
        return;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    PyUnicode_AppendAndDel(out, PyUnicode_FromFormat("%s of %s", Py_TYPE(o)->tp_name,
                                                     tuple ? "(" : "["));
    for (Py_ssize_t k = 0; *out != NULL && k < n; k++) {
        PyUnicode_AppendAndDel(out, PyUnicode_FromFormat(
                                        "%s%s", k ? ", " : "",
                                        Py_TYPE(PySequence_Fast_GET_ITEM(o, k))->tp_name));
    }
    PyUnicode_AppendAndDel(out, PyUnicode_FromString(tuple ? (n == 1 ? ",)" : ")") : "]"));
}

/* A parameter of a printed signature as PyTorch reparses it: the word after the last space
 * is its name, the words before it its type */
typedef struct Token {
    char type[FORMAL_LEN];
    char name[FORMAL_LEN];
} Token;

static int
reparse_signature(const char *shown, Token *tok, int max)
{
    int n = 0;
    const char *p = shown + 1, *end = shown + strlen(shown) - 1;
    while (n < max) {
        const char *comma = strstr(p, ", ");
        const char *stop = comma != NULL && comma < end ? comma : end;
        const char *space = NULL;
        for (const char *c = p; c < stop; c++) {
            space = *c == ' ' ? c : space;
        }
        int tlen = (int)((space ? space : stop) - p);
        snprintf(tok[n].type, sizeof(tok[n].type), "%.*s", tlen, p);
        snprintf(tok[n].name, sizeof(tok[n].name), "%.*s", (int)(stop - (space ? space + 1 : p)),
                 space ? space + 1 : p);
        n++;
        if (stop == end) {
            break;
        }
        p = stop + 2;
    }
    return n;
}

/* Whether a reparsed type accepts a value (invalid_arguments.cpp's matching) */
static int
type_matches(const char *type, PyObject *o)
{
    const char *tp = Py_TYPE(o)->tp_name;
    if (strcmp(type, "float") == 0 && strcmp(tp, "int") == 0) {
        return 1;
    }
    if (strncmp(type, "torch.", 6) == 0 && strncmp(tp, "pytorchlite.", 12) == 0) {
        return strcmp(type + 6, tp + 12) == 0;
    }
    return strcmp(type, tp) == 0;
}

/* PyTorch lists the keyword arguments in the order its std::unordered_map<std::string, ...>
 * iterates them, and libstdc++'s (64-bit) decides it: the keys hash with _Hash_bytes
 * (MurmurHash2-64A, seed 0xc70f6907) into 13 buckets (its first allocation, up to 13 keys);
 * each new key goes before the first key of its bucket, or in front of all when its bucket
 * is empty.  With more keys we keep the order given.  A marked description lists them in
 * the signature's order instead. */
enum { KW_BUCKETS = 13 };

static uint64_t
murmur_shift_mix(uint64_t v)
{
    return v ^ (v >> 47);
}

static uint64_t
libstdcxx_string_hash(const char *s, size_t len)
{
    const uint64_t mul = ((uint64_t)0xc6a4a793u << 32) + 0x5bd1e995u;
    uint64_t h = 0xc70f6907u ^ (len * mul);
    size_t aligned = len & ~(size_t)7;
    for (size_t i = 0; i < aligned; i += 8) {
        uint64_t d = 0;
        for (int b = 7; b >= 0; b--) {
            d = (d << 8) | (unsigned char)s[i + (size_t)b];
        }
        h = (h ^ (murmur_shift_mix(d * mul) * mul)) * mul;
    }
    if (len & 7) {
        uint64_t d = 0;
        for (size_t b = len; b > aligned; b--) {
            d = (d << 8) | (unsigned char)s[b - 1];
        }
        h = (h ^ d) * mul;
    }
    return murmur_shift_mix(murmur_shift_mix(h) * mul);
}

/* The index in kwnames of the keyword PyTorch lists pos-th */
static Py_ssize_t
keyword_at(PyObject *kwnames, Py_ssize_t pos)
{
    Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames), order[KW_BUCKETS];
    int bucket[KW_BUCKETS];
    if (nkw > KW_BUCKETS) {
        return pos;
    }
    for (Py_ssize_t k = 0; k < nkw; k++) {
        Py_ssize_t len = 0, at = 0;
        const char *kw = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(kwnames, k), &len);
        if (kw == NULL) {
            PyErr_Clear();
            return pos;
        }
        bucket[k] = (int)(libstdcxx_string_hash(kw, (size_t)len) % KW_BUCKETS);
        while (at < k && bucket[order[at]] != bucket[k]) {
            at++;
        }
        at = at == k ? 0 : at;   /* an empty bucket: in front of all */
        memmove(&order[at + 1], &order[at], sizeof(*order) * (size_t)(k - at));
        order[at] = k;
    }
    return order[pos];
}

/* The keyword argument named kw, or NULL */
static PyObject *
kwarg_named(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, const char *kw)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
        if (name != NULL && strcmp(name, kw) == 0) {
            return args[nargs + k];
        }
    }
    return NULL;
}

/* "(Tensor, str, dim=int)", or with tokens "(Tensor, !str!, dim=int)": the arguments with
 * those that do not match the signature marked.  Like PyTorch's, it keeps the trailing
 * ", " after keyword arguments when no positional one was given. */
static PyObject *
describe_arguments(PyObject *const *args, Py_ssize_t first, Py_ssize_t nargs,
                   PyObject *kwnames, const Token *tok)
{
    PyObject *out = PyUnicode_FromString("(");
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, npos = nargs - first;
    for (Py_ssize_t i = 0; out != NULL && i < npos + nkw; i++) {
        int kw = i >= npos;
        Py_ssize_t k = kw ? keyword_at(kwnames, i - npos) : 0;
        PyObject *v = kw && tok ? kwarg_named(args, nargs, kwnames, tok[i].name) : NULL;
        if (v == NULL) {   /* positional, or a keyword no parameter name of the tail names */
            v = kw ? args[nargs + k] : args[first + i];
        }
        const char *mark = tok != NULL && !type_matches(tok[i].type, v) ? "!" : "";
        PyUnicode_AppendAndDel(&out, PyUnicode_FromString(mark));
        if (kw) {
            PyUnicode_AppendAndDel(&out, tok ? PyUnicode_FromFormat("%s=", tok[i].name)
                                             : PyUnicode_FromFormat(
                                                   "%U=", PyTuple_GET_ITEM(kwnames, k)));
        }
        if (out != NULL) {
            append_value(&out, v, tok != NULL);
        }
        PyUnicode_AppendAndDel(&out, PyUnicode_FromFormat("%s, ", mark));
    }
    if (out != NULL && npos > 0) {
        Py_SETREF(out, PyUnicode_Substring(out, 0, PyUnicode_GET_LENGTH(out) - 2));
    }
    PyUnicode_AppendAndDel(&out, PyUnicode_FromString(")"));
    return out;
}

/* The keywords that name none of the signature's last parameters, "a, b", or "" */
static PyObject *
unmatched_keywords(PyObject *kwnames, const Token *tok, int ntok)
{
    PyObject *out = PyUnicode_FromString("");
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    Py_ssize_t start = ntok - nkw > 0 ? ntok - nkw : 0;
    for (Py_ssize_t pos = 0; out != NULL && pos < nkw; pos++) {
        Py_ssize_t k = keyword_at(kwnames, pos);
        const char *kw = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
        int found = 0;
        for (Py_ssize_t j = start; kw != NULL && j < ntok && !found; j++) {
            found = strcmp(tok[j].name, kw) == 0;
        }
        if (!found) {
            PyUnicode_AppendAndDel(&out, PyUnicode_FromFormat("%s%U",
                                                              PyUnicode_GET_LENGTH(out) ? ", " : "",
                                                              PyTuple_GET_ITEM(kwnames, k)));
        }
    }
    return out;
}

/* Raises the general message: PyTorch's format_invalid_args over its shown signatures */
static PyObject *
general_error(PtlPyOpFunc *f, const PySignature *psigs, int npsigs, PyObject *const *args,
              Py_ssize_t nargs, PyObject *kwnames)
{
    SignatureText *texts[MAX_OVERLOADS] = {NULL};
    Token *tok = PyMem_Malloc(sizeof(Token) * MAX_FORMALS);
    PyObject *msg = NULL;
    int order[MAX_OVERLOADS];
    Py_ssize_t first = f->method ? 1 : 0, nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    Py_ssize_t given = nargs - first + nkw;
    for (int k = 0; k < npsigs; k++) {
        texts[k] = PyMem_Malloc(sizeof(SignatureText));
        if (texts[k] == NULL) {
            goto done;
        }
        signature_text(f, &psigs[k], texts[k]);
    }
    if (tok == NULL) {
        goto done;
    }
    sort_signatures(texts, npsigs, order);
    if (npsigs == 1) {
        int ntok = reparse_signature(texts[0]->shown, tok, MAX_FORMALS);
        PyObject *unmatched = unmatched_keywords(kwnames, tok, ntok);
        PyObject *desc = unmatched == NULL ? NULL
                         : PyUnicode_GET_LENGTH(unmatched) > 0
                             ? NULL
                             : describe_arguments(args, first, nargs, kwnames,
                                                  given == ntok ? tok : NULL);
        if (unmatched != NULL && PyUnicode_GET_LENGTH(unmatched) > 0) {
            msg = PyUnicode_FromFormat("%U() received an invalid combination of arguments - got "
                                       "unrecognized keyword arguments: %U",
                                       f->name, unmatched);
        }
        else if (desc != NULL) {
            msg = PyUnicode_FromFormat("%U() received an invalid combination of arguments - got "
                                       "%U, but expected %s",
                                       f->name, desc, texts[0]->shown);
        }
        Py_XDECREF(unmatched);
        Py_XDECREF(desc);
        goto done;
    }
    PyObject *got = describe_arguments(args, first, nargs, kwnames, NULL);
    if (got != NULL) {
        msg = PyUnicode_FromFormat("%U() received an invalid combination of arguments - got %U, "
                                   "but expected one of:\n",
                                   f->name, got);
        Py_DECREF(got);
    }
    for (int k = 0; msg != NULL && k < npsigs; k++) {
        const SignatureText *t = texts[order[k]];
        PyUnicode_AppendAndDel(&msg, PyUnicode_FromFormat(" * %s\n", t->shown));
        int ntok = reparse_signature(t->shown, tok, MAX_FORMALS);
        if (msg == NULL || given != ntok) {
            continue;
        }
        PyObject *unmatched = nkw > 0 ? unmatched_keywords(kwnames, tok, ntok)
                                      : PyUnicode_FromString("");
        if (unmatched != NULL && PyUnicode_GET_LENGTH(unmatched) > 0) {
            PyUnicode_AppendAndDel(&msg, PyUnicode_FromFormat(
                                             "      didn't match because some of the keywords "
                                             "were incorrect: %U\n",
                                             unmatched));
        }
        else if (unmatched != NULL) {
            PyObject *desc = describe_arguments(args, first, nargs, kwnames, tok);
            if (desc != NULL) {
                PyUnicode_AppendAndDel(&msg, PyUnicode_FromFormat(
                                                 "      didn't match because some of the "
                                                 "arguments have invalid types: %U\n",
                                                 desc));
                Py_DECREF(desc);
            }
        }
        else {
            Py_CLEAR(msg);
        }
        Py_XDECREF(unmatched);
    }
done:
    if (msg != NULL) {
        PyErr_SetObject(PyExc_TypeError, msg);
        Py_DECREF(msg);
    }
    else if (!PyErr_Occurred()) {
        PyErr_NoMemory();
    }
    for (int k = 0; k < npsigs; k++) {
        PyMem_Free(texts[k]);
    }
    PyMem_Free(tok);
    return NULL;
}

PyObject *
ptlpy_bad_call_error(PtlPyOpFunc *f, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PySignature *psigs = PyMem_Malloc(sizeof(PySignature) * MAX_OVERLOADS);
    if (psigs == NULL) {
        return PyErr_NoMemory();
    }
    int npsigs = python_signatures(f, psigs);
    int blamed = blamed_signature(f, psigs, npsigs, nargs, kwnames);
    /* PyTorch tries every signature before it reports: one that passes its checks but for
     * an int list's later item fails reading the list, one that meets a tensor list with an
     * item that is no Tensor fails at once */
    for (int k = 0; npsigs > 1 && k < npsigs; k++) {
        int unpack = 0;
        if (psigs[k].twin) {
            continue;
        }
        signature_error(f, &psigs[k], args, nargs, kwnames, &unpack);
        if (unpack || (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_TypeError))) {
            PyMem_Free(psigs);
            return NULL;
        }
        PyErr_Clear();
    }
    if (blamed >= 0) {
        int unpack = 0;
        signature_error(f, &psigs[blamed], args, nargs, kwnames, &unpack);
    }
    if (!PyErr_Occurred()) {
        general_error(f, psigs, npsigs, args, nargs, kwnames);
    }
    PyMem_Free(psigs);
    return NULL;
}

/* Note [Operator docstrings]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * help(torch.add) and torch.add.__doc__ show what a binding takes and where a call goes: its
 * Python signatures as the bad-call TypeError lists them (Note [Signature strings], PyTorch's
 * order), then the dispatcher operators it parses a call into, in the order it tries them
 * (the first that accepts the arguments is called).  The text is built on each read from the
 * schemas, so an operator registered from Python shows up too. */
PyObject *
ptlpy_op_doc(PtlPyOpFunc *f)
{
    PySignature *psigs = PyMem_Malloc(sizeof(PySignature) * MAX_OVERLOADS);
    SignatureText *texts[MAX_OVERLOADS] = {NULL};
    int order[MAX_OVERLOADS], npsigs = 0;
    PyObject *doc = NULL;
    if (psigs == NULL) {
        return PyErr_NoMemory();
    }
    npsigs = python_signatures(f, psigs);
    for (int k = 0; k < npsigs; k++) {
        texts[k] = PyMem_Malloc(sizeof(SignatureText));
        if (texts[k] == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        signature_text(f, &psigs[k], texts[k]);
    }
    sort_signatures(texts, npsigs, order);
    doc = PyUnicode_FromString("");
    for (int k = 0; doc != NULL && k < npsigs; k++) {
        PyUnicode_AppendAndDel(&doc,
                               PyUnicode_FromFormat("%U%s\n", f->name, texts[order[k]]->shown));
    }
    if (doc != NULL) {
        PyUnicode_AppendAndDel(&doc, PyUnicode_FromString(
                                         "\nDispatcher operators, tried in this order:\n"));
    }
    for (int k = 0; doc != NULL && k < f->n; k++) {
        char buf[1024];
        ptl_schema_format(&ptl_dispatcher_op_at(f->ids[k])->schema, buf, sizeof(buf));
        PyUnicode_AppendAndDel(&doc, PyUnicode_FromFormat("    %s\n", buf));
    }
done:
    for (int k = 0; k < npsigs; k++) {
        PyMem_Free(texts[k]);
    }
    PyMem_Free(psigs);
    return doc;
}

int
ptlpy_torch_has_out(const PtlSchema *s)
{
    return torch_has_out(s);
}

PyObject *
ptlpy_torch_out_rule(const PtlSchema *s)
{
    const TorchOutOverload *o = torch_out_overload(s);
    PyObject *strict = PyTuple_New(s->nrets);
    for (int i = 0; strict != NULL && i < s->nrets; i++) {
        const char *t = o != NULL && i < 3 ? o->strict[i] : NULL;
        PyObject *v = t != NULL ? PyUnicode_FromString(t) : Py_NewRef(Py_None);
        if (v == NULL) {
            Py_CLEAR(strict);
            break;
        }
        PyTuple_SET_ITEM(strict, i, v);
    }
    if (strict == NULL) {
        return NULL;
    }
    return Py_BuildValue("(zN)", o != NULL ? o->also : NULL, strict);
}
