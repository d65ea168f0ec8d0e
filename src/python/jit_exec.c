/* jit_exec.c -- _C._jit_program, the binding of the graph executor (jit/graph_exec.h, Note
 * [Graph programs]), and the C API's ptl_api_jit_* (Note [C API graph programs]).
 *
 * A _C._JitProgram is built by pytorchlite/jit/_interpreter.py from a parsed Graph and called
 * like the graph: program(*inputs).  A module's graph reads its parameters through
 * prim::GetAttr; the program holds the tensors it found while lowering and, to notice a
 * module whose attributes were replaced since, guards: the module object it was lowered for
 * and, per attribute, (table, name, object) that must still hold.  A call whose guards fail
 * returns NotImplemented and the interpreter lowers the graph again. */
#include "ptlpy.h"

#include "pytorchlite/ptl_api.h"

#include "../autograd/autograd.h"
#include "../c10/error.h"
#include "../jit/graph_exec.h"

#define OUTPUTS_INLINE 8

typedef struct PtlPyJitProgram {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PtlJitProgram *prog;
    PyObject *held;     /* tuple of every object the program borrows (GC-visited) */
    PyObject *self_obj; /* the module a module graph was lowered for (in held), or NULL */
    PyObject *guards;   /* tuple of (table, name, object) (in held) */
    int tuple_output;   /* the outputs are returned as one tuple */
} PtlPyJitProgram;

static PyTypeObject PtlPyJitProgram_Type;
static PyObject *program_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                    PyObject *kwnames);

/* ---- lowering ---- */

static int
lower_error(const char *what, PyObject *o)
{
    PyErr_Format(PyExc_RuntimeError, "jit executor: cannot lower %s (%R)", what, o);
    return -1;
}

/* The constant `value` of graph type `type` as an IValue borrowing from value. */
static int
constant_value(PyObject *type, PyObject *value, PtlIValue *v, int64_t *buf, Py_ssize_t cap)
{
    const char *ty = PyUnicode_AsUTF8(type);
    if (ty == NULL) {
        return -1;
    }
    if (value == Py_None) {
        *v = ptl_iv_none();
    }
    else if (PtlPyTensor_Check(value)) {
        *v = ptl_iv_tensor(PTLPY_IMPL(value));
    }
    else if (strcmp(ty, "ScalarType") == 0) {
        PtlDtype dt = ptlpy_parse_dtype(value, 1);
        if (dt == PTL_DTYPE_UNDEFINED) {
            return -1;
        }
        *v = ptl_iv_dtype(dt);
    }
    else if (strcmp(ty, "Device") == 0) {
        *v = (PtlIValue){.tag = PTL_IV_DEVICE};
        return ptlpy_parse_device(value, &v->u.device, 1);
    }
    else if (strcmp(ty, "Layout") == 0) {
        *v = (PtlIValue){.tag = PTL_IV_LAYOUT, .u.p = value};
    }
    else if (strcmp(ty, "MemoryFormat") == 0) {
        if (!Py_IS_TYPE(value, &PtlPyMemoryFormat_Type)) {
            PyErr_Format(PyExc_TypeError, "a MemoryFormat constant must be a "
                         "torch.memory_format, not %s", Py_TYPE(value)->tp_name);
            return -1;
        }
        *v = ptl_iv_memory_format(((PtlPyMemoryFormat *)value)->format);
    }
    else if (PyBool_Check(value)) {
        *v = ptl_iv_bool(value == Py_True);
    }
    else if (PyLong_Check(value)) {
        *v = ptl_iv_int(PyLong_AsLongLong(value));
    }
    else if (PyFloat_Check(value)) {
        *v = ptl_iv_double(PyFloat_AS_DOUBLE(value));
    }
    else if (PyComplex_Check(value)) {   /* Note [Complex Scalars] */
        *v = ptl_iv_complex(PyComplex_RealAsDouble(value), PyComplex_ImagAsDouble(value));
    }
    else if (PyUnicode_Check(value)) {
        *v = ptl_iv_string(PyUnicode_AsUTF8(value));
    }
    else if ((PyList_Check(value) || PyTuple_Check(value)) &&
             (strcmp(ty, "int[]") == 0 || strcmp(ty, "float[]") == 0)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(value);
        if (n > cap) {
            return lower_error("a constant list this long", value);
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *e = PySequence_Fast_GET_ITEM(value, i);
            if (ty[0] == 'i') {
                buf[i] = PyLong_AsLongLong(e);
            }
            else {
                ((double *)buf)[i] = PyFloat_AsDouble(e);
            }
        }
        *v = ty[0] == 'i' ? ptl_iv_intlist(buf, n)
                          : (PtlIValue){.tag = PTL_IV_DOUBLELIST,
                                        .u.dl = {(const double *)buf, n}};
    }
    else {
        return lower_error("a constant of this type", type);
    }
    return PyErr_Occurred() ? -1 : 0;
}

/* A sequence of ints into out[0..cap); returns the count, or -1 with an exception set. */
static int
int_array(PyObject *seq, int *out, int cap)
{
    PyObject *f = PySequence_Fast(seq, "expected a sequence of slots");
    if (f == NULL) {
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
    if (n > cap) {
        Py_DECREF(f);
        return lower_error("a node with this many inputs or outputs", seq);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = (int)PyLong_AsLong(PySequence_Fast_GET_ITEM(f, i));
    }
    Py_DECREF(f);
    return PyErr_Occurred() ? -1 : (int)n;
}

static int
add_op_step(PtlJitProgram *p, PyObject *step)
{
    const char *kind, *name, *overload;
    PyObject *args_o, *rets_o;
    int args[PTL_SCHEMA_MAX_ARGS], rets[PTL_SCHEMA_MAX_RETS];
    if (!PyArg_ParseTuple(step, "sssOO", &kind, &name, &overload, &args_o, &rets_o)) {
        return -1;
    }
    const PtlOperator *op = ptl_dispatcher_find(name, overload);
    if (op == NULL) {
        PyErr_Format(PyExc_RuntimeError, "jit executor: unknown operator %s.%s", name,
                     overload);
        return -1;
    }
    int nargs = int_array(args_o, args, PTL_SCHEMA_MAX_ARGS);
    int nrets = nargs < 0 ? -1 : int_array(rets_o, rets, PTL_SCHEMA_MAX_RETS);
    if (nrets < 0) {
        return -1;
    }
    return ptl_jit_program_add_op(p, op, args, nargs, rets, nrets) < 0 ? ptlpy_raise_int() : 0;
}

static int
add_fused_step(PtlJitProgram *p, PyObject *step, PyObject *held)
{
    const char *kind;
    PyObject *prog_o, *scal_o, *sub, *ins_o;
    int out, nin, ni, ns, ins[PTL_PROGRAM_MAX_REGS];
    PtlProgramInstr prog[PTL_PROGRAM_MAX_REGS];
    double scalars[PTL_PROGRAM_MAX_REGS];
    if (!PyArg_ParseTuple(step, "sOOO!Oi", &kind, &prog_o, &scal_o, &PtlPyJitProgram_Type,
                          &sub, &ins_o, &out) || PyList_Append(held, sub) < 0 ||
        (nin = int_array(ins_o, ins, PTL_PROGRAM_MAX_REGS)) < 0 ||
        ptlpy_pointwise_program_parse(prog_o, scal_o, nin, prog, &ni, scalars, &ns) < 0) {
        return -1;
    }
    return ptl_jit_program_add_fusion(p, prog, ni, scalars, ns, ((PtlPyJitProgram *)sub)->prog,
                                      ins, nin, out) < 0 ? ptlpy_raise_int() : 0;
}

static int
add_step(PtlJitProgram *p, PyObject *step, PyObject *held)
{
    if (!PyTuple_Check(step) || PyTuple_GET_SIZE(step) < 1 ||
        !PyUnicode_Check(PyTuple_GET_ITEM(step, 0))) {
        return lower_error("a step that is not a (kind, ...) tuple", step);
    }
    const char *kind = PyUnicode_AsUTF8(PyTuple_GET_ITEM(step, 0));
    int slots[PTL_SCHEMA_MAX_ARGS * 4], n, slot;
    PyObject *seq;
    const char *tag;
    if (strcmp(kind, "op") == 0) {
        return add_op_step(p, step);
    }
    if (strcmp(kind, "fused") == 0) {
        return add_fused_step(p, step, held);
    }
    if (strcmp(kind, "list") == 0) {
        if (!PyArg_ParseTuple(step, "ssOi", &kind, &tag, &seq, &slot) ||
            (n = int_array(seq, slots, PTL_SCHEMA_MAX_ARGS * 4)) < 0) {
            return -1;
        }
        int t = strcmp(tag, "int[]") == 0     ? PTL_IV_INTLIST
                : strcmp(tag, "float[]") == 0 ? PTL_IV_DOUBLELIST
                : strcmp(tag, "Tensor[]") == 0 || strcmp(tag, "Tensor?[]") == 0
                    ? PTL_IV_TENSORLIST : PTL_IV_NONE;
        return ptl_jit_program_add_list(p, t, slots, n, slot) < 0 ? ptlpy_raise_int() : 0;
    }
    if (strcmp(kind, "unpack") == 0) {
        if (!PyArg_ParseTuple(step, "siO", &kind, &slot, &seq) ||
            (n = int_array(seq, slots, PTL_SCHEMA_MAX_ARGS * 4)) < 0) {
            return -1;
        }
        return ptl_jit_program_add_unpack(p, slot, slots, n) < 0 ? ptlpy_raise_int() : 0;
    }
    return lower_error("a step of this kind", step);
}

static int
set_constants(PtlJitProgram *p, PyObject *constants, PyObject *held)
{
    PyObject *f = PySequence_Fast(constants, "constants must be a sequence");
    int64_t buf[PTL_MAX_DIMS * 8];
    for (Py_ssize_t i = 0; f != NULL && i < PySequence_Fast_GET_SIZE(f); i++) {
        PyObject *c = PySequence_Fast_GET_ITEM(f, i), *type, *value;
        int slot;
        PtlIValue v;
        if (!PyArg_ParseTuple(c, "iUO", &slot, &type, &value) ||
            constant_value(type, value, &v, buf, PTL_MAX_DIMS * 8) < 0 ||
            (v.tag == PTL_IV_LAYOUT && PyList_Append(held, value) < 0)) {
            Py_CLEAR(f);
            break;
        }
        if (ptl_jit_program_set_constant(p, slot, v) < 0) {
            Py_CLEAR(f);
            ptlpy_raise();
        }
    }
    Py_XDECREF(f);
    return PyErr_Occurred() ? -1 : 0;
}

/* _C._jit_program(nslots, ninputs, constants, steps, outputs, tuple_output, self, guards):
 * constants are (slot, type, value); steps ("op", name, overload, args, rets),
 * ("list", type, items, out), ("unpack", list, outs), ("fused", program, scalars,
 * subprogram, inputs, out); guards (table, name, object).  RuntimeError when a part
 * cannot be lowered. */
static PyObject *
py_jit_program(PyObject *m, PyObject *args)
{
    int nslots, ninputs, tuple_output;
    PyObject *constants, *steps, *outputs, *self_obj, *guards;
    int outs[PTL_SCHEMA_MAX_ARGS * 4];
    (void)m;
    if (!PyArg_ParseTuple(args, "iiOOOpOO!:_jit_program", &nslots, &ninputs, &constants,
                          &steps, &outputs, &tuple_output, &self_obj, &PyTuple_Type,
                          &guards)) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(guards); i++) {
        PyObject *g = PyTuple_GET_ITEM(guards, i);
        if (!PyTuple_Check(g) || PyTuple_GET_SIZE(g) != 3 ||
            !PyDict_Check(PyTuple_GET_ITEM(g, 0))) {
            PyErr_SetString(PyExc_TypeError, "a guard is a (dict, name, object) tuple");
            return NULL;
        }
    }
    PyObject *held = PyList_New(0);
    PtlPyJitProgram *res = NULL;
    PtlJitProgram *p = held ? ptl_jit_program_new(nslots, ninputs) : NULL;
    PyObject *sf = NULL;
    int nout;
    if (p == NULL) {
        if (held != NULL) {
            ptlpy_raise();
        }
        goto done;
    }
    if (PyList_Append(held, self_obj) < 0 || PyList_Append(held, guards) < 0 ||
        set_constants(p, constants, held) < 0 ||
        (sf = PySequence_Fast(steps, "steps must be a sequence")) == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(sf); i++) {
        if (add_step(p, PySequence_Fast_GET_ITEM(sf, i), held) < 0) {
            goto done;
        }
    }
    if ((nout = int_array(outputs, outs, PTL_SCHEMA_MAX_ARGS * 4)) < 0) {
        goto done;
    }
    if (ptl_jit_program_set_outputs(p, outs, nout) < 0) {
        ptlpy_raise();
        goto done;
    }
    if (!tuple_output && nout != 1) {
        lower_error("a graph without one output", outputs);
        goto done;
    }
    res = PyObject_GC_New(PtlPyJitProgram, &PtlPyJitProgram_Type);
    if (res == NULL) {
        goto done;
    }
    res->vectorcall = NULL;
    res->held = PyList_AsTuple(held);
    res->prog = p;
    res->self_obj = self_obj == Py_None ? NULL : self_obj;
    res->guards = guards;
    res->tuple_output = tuple_output;
    p = NULL;
    if (res->held == NULL) {
        Py_CLEAR(res);
        goto done;
    }
    res->vectorcall = program_vectorcall;
    PyObject_GC_Track(res);
done:
    ptl_jit_program_free(p);
    Py_XDECREF(sf);
    Py_XDECREF(held);
    return (PyObject *)res;
}

/* ---- running ---- */

/* Whether the module and the attributes the program was lowered with are still there. */
static int
guards_hold(const PtlPyJitProgram *self, PyObject *module)
{
    if (module != self->self_obj) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self->guards); i++) {
        PyObject *g = PyTuple_GET_ITEM(self->guards, i);
        PyObject *found = PyDict_GetItemWithError(PyTuple_GET_ITEM(g, 0), PyTuple_GET_ITEM(g, 1));
        if (found != PyTuple_GET_ITEM(g, 2)) {
            return PyErr_Occurred() ? -1 : 0;
        }
    }
    return 1;
}

static int
input_value(PyObject *o, Py_ssize_t i, PtlIValue *v)
{
    if (PtlPyTensor_Check(o)) {
        *v = ptl_iv_tensor(PTLPY_IMPL(o));
    }
    else if (o == Py_None) {
        *v = ptl_iv_none();
    }
    else if (PyBool_Check(o)) {
        *v = ptl_iv_bool(o == Py_True);
    }
    else if (PyLong_Check(o)) {
        *v = ptl_iv_int(PyLong_AsLongLong(o));
        return PyErr_Occurred() ? -1 : 0;
    }
    else if (PyFloat_Check(o)) {
        *v = ptl_iv_double(PyFloat_AS_DOUBLE(o));
    }
    else if (PyComplex_Check(o)) {
        *v = ptl_iv_complex(PyComplex_RealAsDouble(o), PyComplex_ImagAsDouble(o));
    }
    else {
        PyErr_Format(PyExc_TypeError, "expected a Tensor or a number for input %zd of the "
                     "graph, got %s", i, Py_TYPE(o)->tp_name);
        return -1;
    }
    return 0;
}

/* The owned outputs as the graph's return (one value or a tuple); they are released. */
static PyObject *
outputs_to_py(const PtlPyJitProgram *self, PtlIValue *outs, int n)
{
    PyObject *tup = self->tuple_output ? PyTuple_New(n) : NULL;
    PyObject *res = tup;
    for (int k = 0; k < n; k++) {
        PyObject *o = NULL;
        if (outs[k].tag == PTL_IV_TENSOR) {
            o = ptlpy_wrap(outs[k].u.t);
            outs[k].tag = PTL_IV_NONE;
        }
        else if (tup != NULL || !self->tuple_output) {
            o = ptlpy_ivalue_to_py(&outs[k]);
        }
        ptl_jit_value_release(&outs[k]);
        if (!self->tuple_output) {
            res = o;
        }
        else if (o == NULL || tup == NULL) {
            Py_XDECREF(o);
            Py_CLEAR(tup);
            res = NULL;
        }
        else {
            PyTuple_SET_ITEM(tup, k, o);
        }
    }
    return res;
}

/* program(*inputs): the graph's return, or NotImplemented when a module graph's guards no
 * longer hold (the caller lowers it again). */
static PyObject *
program_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                   PyObject *kwnames)
{
    PtlPyJitProgram *self = (PtlPyJitProgram *)callable;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    const int ninputs = ptl_jit_program_num_inputs(self->prog);
    const int nout = ptl_jit_program_num_outputs(self->prog);
    PtlIValue inline_in[OUTPUTS_INLINE], inline_out[OUTPUTS_INLINE];
    PtlIValue *in = inline_in, *out = inline_out;
    PyObject *res = NULL;
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0) {
        PyErr_SetString(PyExc_TypeError, "a graph program takes no keyword arguments");
        return NULL;
    }
    if (n != ninputs) {
        PyErr_Format(PyExc_TypeError, "the graph takes %d inputs, %zd were given", ninputs, n);
        return NULL;
    }
    if (self->self_obj != NULL) {
        int ok = guards_hold(self, args[0]);
        if (ok <= 0) {
            return ok < 0 ? NULL : Py_NewRef(Py_NotImplemented);
        }
    }
    if ((ninputs > OUTPUTS_INLINE &&
         (in = PyMem_Malloc(sizeof(PtlIValue) * (size_t)ninputs)) == NULL) ||
        (nout > OUTPUTS_INLINE &&
         (out = PyMem_Malloc(sizeof(PtlIValue) * (size_t)nout)) == NULL)) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i == 0 && self->self_obj != NULL) {
            in[0] = ptl_iv_none();
        }
        else if (input_value(args[i], i, &in[i]) < 0) {
            goto done;
        }
    }
    if (PTL_UNLIKELY(ptlpy_profiler_with_stack) && ptlpy_profiler_note_stack() < 0) {
        goto done;
    }
    if (ptl_jit_program_run(self->prog, in, out) < 0) {
        ptlpy_raise();
        goto done;
    }
    res = outputs_to_py(self, out, nout);
    if (res != NULL && ptlpy_flush_warnings() < 0) {
        Py_CLEAR(res);
    }
done:
    if (in != inline_in) {
        PyMem_Free(in);
    }
    if (out != inline_out) {
        PyMem_Free(out);
    }
    return res;
}

static int
program_traverse(PtlPyJitProgram *self, visitproc visit, void *arg)
{
    Py_VISIT(self->held);
    return 0;
}

static int
program_clear(PtlPyJitProgram *self)
{
    self->self_obj = NULL;
    self->guards = NULL;
    Py_CLEAR(self->held);
    return 0;
}

static void
program_dealloc(PtlPyJitProgram *self)
{
    PyObject_GC_UnTrack(self);
    program_clear(self);
    ptl_jit_program_free(self->prog);
    PyObject_GC_Del(self);
}

static PyTypeObject PtlPyJitProgram_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pytorchlite._C._JitProgram",
    .tp_basicsize = sizeof(PtlPyJitProgram),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A graph lowered into the C executor (Note [Graph programs]).",
    .tp_vectorcall_offset = offsetof(PtlPyJitProgram, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = (traverseproc)program_traverse,
    .tp_clear = (inquiry)program_clear,
    .tp_dealloc = (destructor)program_dealloc,
};

/* ---- the C API ----
 *
 * Note [C API graph programs]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * ptl_api_jit_load reads the file through pytorchlite.jit.load under the GIL (parsing and
 * checking it is Python code) and lowers its graph; the handle keeps the program and the
 * module it was lowered for.  ptl_api_jit_run then runs the program in C alone: it does not
 * take the GIL or touch a Python object (a kernel written in Python takes the GIL itself). */

struct PtlApiJitModule {
    PyObject *program;   /* PtlPyJitProgram */
    int has_self;        /* input 0 is the module */
};

/* Sets the C error from the pending Python exception (cleared). */
static void
error_from_python(void)
{
    PyObject *type, *exc, *tb;
    PyErr_Fetch(&type, &exc, &tb);
    PyErr_NormalizeException(&type, &exc, &tb);
    PyObject *text = exc != NULL ? PyObject_Str(exc) : NULL;
    const char *msg = text != NULL ? PyUnicode_AsUTF8(text) : NULL;
    PtlErrorKind kind = type != NULL && PyErr_GivenExceptionMatches(type, PyExc_ValueError)
                            ? PTL_ERR_VALUE : PTL_ERR_RUNTIME;
    ptl_error_set(kind, "%s", msg != NULL ? msg : "pytorchlite.jit.load failed");
    PyErr_Clear();
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(exc);
    Py_XDECREF(tb);
}

PtlApiJitModule *
ptl_api_jit_load(const char *path)
{
    PyGILState_STATE gil = PyGILState_Ensure();
    PtlApiJitModule *m = NULL;
    PyObject *mod = PyImport_ImportModule("pytorchlite.jit._interpreter");
    PyObject *prog = mod ? PyObject_CallMethod(mod, "lower_file", "s", path) : NULL;
    Py_XDECREF(mod);
    if (prog != NULL && !Py_IS_TYPE(prog, &PtlPyJitProgram_Type)) {
        Py_CLEAR(prog);
        PyErr_SetString(PyExc_RuntimeError, "lower_file did not return a graph program");
    }
    if (prog == NULL) {
        error_from_python();
    }
    else if ((m = malloc(sizeof(*m))) == NULL) {
        Py_DECREF(prog);
        ptl_error_set(PTL_ERR_MEMORY, "out of memory");
    }
    else {
        m->program = prog;
        m->has_self = ((PtlPyJitProgram *)prog)->self_obj != NULL;
    }
    PyGILState_Release(gil);
    return m;
}

int
ptl_api_jit_num_inputs(const PtlApiJitModule *m)
{
    return ptl_jit_program_num_inputs(((PtlPyJitProgram *)m->program)->prog) - m->has_self;
}

int
ptl_api_jit_num_outputs(const PtlApiJitModule *m)
{
    return ptl_jit_program_num_outputs(((PtlPyJitProgram *)m->program)->prog);
}

int
ptl_api_jit_run(const PtlApiJitModule *m, PtlApiTensor *const *inputs, int64_t n,
                PtlApiTensor **outputs)
{
    const PtlJitProgram *p = ((PtlPyJitProgram *)m->program)->prog;
    const int ninputs = ptl_jit_program_num_inputs(p), nout = ptl_jit_program_num_outputs(p);
    if (n != ninputs - m->has_self) {
        return ptl_error_set(PTL_ERR_VALUE, "the graph takes %d inputs, %lld were given",
                             ninputs - m->has_self, (long long)n);
    }
    PtlIValue *in = malloc(sizeof(PtlIValue) * (size_t)(ninputs + nout + 1));
    if (in == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory");
    }
    PtlIValue *out = in + ninputs;
    if (m->has_self) {
        in[0] = ptl_iv_none();
    }
    for (int64_t i = 0; i < n; i++) {
        in[i + m->has_self] = ptl_iv_tensor((PtlTensorImpl *)inputs[i]);
    }
    int rc = ptl_jit_program_run(p, in, out);
    for (int k = 0; rc == 0 && k < nout; k++) {
        if (out[k].tag != PTL_IV_TENSOR) {
            rc = ptl_error_set(PTL_ERR_TYPE, "output %d of the graph is not a tensor", k);
            for (int j = 0; j < nout; j++) {
                ptl_jit_value_release(&out[j]);
            }
        }
    }
    for (int k = 0; rc == 0 && k < nout; k++) {
        outputs[k] = (PtlApiTensor *)out[k].u.t;
    }
    free(in);
    return rc;
}

void
ptl_api_jit_free(PtlApiJitModule *m)
{
    if (m == NULL) {
        return;
    }
    PyGILState_STATE gil = PyGILState_Ensure();
    Py_DECREF(m->program);
    PyGILState_Release(gil);
    free(m);
}

/* _C._jit_guard_signature(inputs): for a tuple of tensors, bytes that are equal for two
 * tuples exactly when their tensors agree, one by one, in sizes, dtype, device and
 * requires_grad: what a trace's guard key holds for tensor inputs (Note [Trace guards]),
 * compared without building that key.  None when an input is not a tensor. */
static PyObject *
py_jit_guard_signature(PyObject *m, PyObject *inputs)
{
    (void)m;
    if (!PyTuple_Check(inputs)) {
        PyErr_SetString(PyExc_TypeError, "_jit_guard_signature expects a tuple");
        return NULL;
    }
    const Py_ssize_t n = PyTuple_GET_SIZE(inputs);
    Py_ssize_t words = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyTuple_GET_ITEM(inputs, i);
        if (!PtlPyTensor_Check(o)) {
            Py_RETURN_NONE;
        }
        words += 2 + PTLPY_IMPL(o)->dim;
    }
    PyObject *sig = PyBytes_FromStringAndSize(NULL, words * (Py_ssize_t)sizeof(int64_t));
    if (sig == NULL) {
        return NULL;
    }
    int64_t *w = (int64_t *)PyBytes_AS_STRING(sig);
    for (Py_ssize_t i = 0; i < n; i++) {
        const PtlTensorImpl *t = PTLPY_IMPL(PyTuple_GET_ITEM(inputs, i));
        int rg = ptl_requires_grad(t);
        *w++ = t->dim;
        *w++ = (int64_t)t->dtype | (int64_t)(uint8_t)t->device.type << 8 |
               (int64_t)(uint8_t)t->device.index << 16 | (int64_t)(rg != 0) << 24;
        for (int d = 0; d < t->dim; d++) {
            *w++ = t->sizes[d];
        }
    }
    return sig;
}

static PyMethodDef jit_exec_methods[] = {
    {"_jit_guard_signature", py_jit_guard_signature, METH_O,
     "_jit_guard_signature(inputs) -> bytes or None"},
    {"_jit_program", py_jit_program, METH_VARARGS,
     "_jit_program(nslots, ninputs, constants, steps, outputs, tuple_output, self, guards)"},
    {NULL},
};

int
ptlpy_jit_exec_init(PyObject *module)
{
    if (PyType_Ready(&PtlPyJitProgram_Type) < 0) {
        return -1;
    }
    Py_INCREF(&PtlPyJitProgram_Type);
    if (PyModule_AddObject(module, "_JitProgram", (PyObject *)&PtlPyJitProgram_Type) < 0) {
        Py_DECREF(&PtlPyJitProgram_Type);
        return -1;
    }
    return PyModule_AddFunctions(module, jit_exec_methods);
}
