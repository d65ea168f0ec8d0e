/* pointwise_program.c -- _C._jit_run_pointwise_program, the binding of
 * aten/pointwise_program.h (Note [Pointwise programs]) that runs a prim::FusionGroup. */
#include "ptlpy.h"

#include "../aten/pointwise_program.h"

/* _C._jit_pointwise_program_ops(): the instruction names, in opcode order. */
static PyObject *
py_program_ops(PyObject *m, PyObject *unused)
{
    static const char *const names[] = {
#define PTL_PROGRAM_NAME(E, NAME, ARITY) NAME,
        PTL_FORALL_PROGRAM_OPS(PTL_PROGRAM_NAME)
#undef PTL_PROGRAM_NAME
    };
    (void)m;
    (void)unused;
    PyObject *list = PyList_New(PTL_PROGRAM_OP_COUNT);
    for (int i = 0; list != NULL && i < PTL_PROGRAM_OP_COUNT; i++) {
        PyObject *s = PyUnicode_FromString(names[i]);
        if (s == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, s);
    }
    return list;
}

int
ptlpy_pointwise_program_parse(PyObject *program, PyObject *scalars, int ntensors,
                              PtlProgramInstr *prog, int *ninstr, double *values, int *nscalars)
{
    PyObject *prog_f = PySequence_Fast(program, "program must be a sequence");
    PyObject *scal_f = prog_f ? PySequence_Fast(scalars, "scalars must be a sequence") : NULL;
    int rc = -1;
    if (scal_f == NULL) {
        goto done;
    }
    Py_ssize_t ni = PySequence_Fast_GET_SIZE(prog_f), ns = PySequence_Fast_GET_SIZE(scal_f);
    if (ni + ntensors + ns > PTL_PROGRAM_MAX_REGS) {
        PyErr_Format(PyExc_ValueError, "a pointwise program has at most %d registers",
                     PTL_PROGRAM_MAX_REGS);
        goto done;
    }
    for (Py_ssize_t i = 0; i < ni; i++) {
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(prog_f, i), "iii", &prog[i].op,
                              &prog[i].a, &prog[i].b)) {
            goto done;
        }
    }
    for (Py_ssize_t i = 0; i < ns; i++) {
        values[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(scal_f, i));
        if (values[i] == -1.0 && PyErr_Occurred()) {
            goto done;
        }
    }
    *ninstr = (int)ni;
    *nscalars = (int)ns;
    rc = 0;
done:
    Py_XDECREF(prog_f);
    Py_XDECREF(scal_f);
    return rc;
}

/* _C._jit_run_pointwise_program(program, tensors, scalars): program is a sequence of
 * (opcode, a, b); returns the output tensor, or None when the tensors are not eligible (the
 * caller then runs the nodes one by one). */
static PyObject *
py_run_program(PyObject *m, PyObject *args)
{
    PyObject *prog_o, *tensors_o, *scalars_o;
    PtlProgramInstr prog[PTL_PROGRAM_MAX_REGS];
    PtlTensorImpl *ts[PTL_PROGRAM_MAX_REGS];
    double scalars[PTL_PROGRAM_MAX_REGS];
    int ni, ns;
    (void)m;
    if (!PyArg_ParseTuple(args, "OOO:_jit_run_pointwise_program", &prog_o, &tensors_o,
                          &scalars_o)) {
        return NULL;
    }
    PyObject *tens_f = PySequence_Fast(tensors_o, "tensors must be a sequence");
    PyObject *res = NULL;
    if (tens_f == NULL) {
        return NULL;
    }
    Py_ssize_t nt = PySequence_Fast_GET_SIZE(tens_f);
    if (ptlpy_pointwise_program_parse(prog_o, scalars_o, (int)Py_MIN(nt, PTL_PROGRAM_MAX_REGS + 1),
                                      prog, &ni, scalars, &ns) < 0) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < nt; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(tens_f, i);
        if (!PtlPyTensor_Check(o)) {
            PyErr_SetString(PyExc_TypeError, "tensors must hold tensors");
            goto done;
        }
        ts[i] = PTLPY_IMPL(o);
    }
    if (nt == 0 || !ptl_pointwise_program_accepts(ts, (int)nt)) {
        res = Py_NewRef(Py_None);
        goto done;
    }
    PtlTensorImpl *out = ptl_pointwise_program_run(prog, ni, ts, (int)nt, scalars, ns);
    res = out != NULL ? ptlpy_wrap(out) : ptlpy_raise();
done:
    Py_DECREF(tens_f);
    return res;
}

static PyMethodDef program_methods[] = {
    {"_jit_pointwise_program_ops", py_program_ops, METH_NOARGS, NULL},
    {"_jit_run_pointwise_program", py_run_program, METH_VARARGS,
     "_jit_run_pointwise_program(program, tensors, scalars) -> Tensor or None"},
    {NULL},
};

int
ptlpy_pointwise_program_init(PyObject *module)
{
    return PyModule_AddFunctions(module, program_methods);
}
