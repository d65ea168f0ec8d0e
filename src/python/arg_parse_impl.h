/* arg_parse_impl.h -- what arg_parse.c (the bindings), arg_errors.c (their TypeError for a
 * call no overload accepts) and schema_errors.c (the RuntimeError of the ops.<ns>.<op>
 * callables) share.  Private to src/python. */
#ifndef PTL_PYTHON_ARG_PARSE_IMPL_H
#define PTL_PYTHON_ARG_PARSE_IMPL_H

#include "ptlpy.h"

#define MAX_OVERLOADS 12

/* One callable per operator name: pytorchlite.add, TensorBase.add (Note [Binding from
 * schemas]) */
typedef struct PtlPyOpFunc {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *name;          /* "add" */
    int method;              /* args[0] is self */
    int boxed;               /* ops.<ns>.<op>: torch.ops' errors (Note [Boxed call messages]) */
    int n;
    int ids[MAX_OVERLOADS];  /* operator indices */
} PtlPyOpFunc;

/* Whether o is an int to the parser (an index, not a bool, float or tensor) */
int ptlpy_is_int_like(PyObject *o);
/* Whether keyword kw names parameter `index` (input for a leading self) */
int ptlpy_arg_name_matches(const PtlArg *a, int index, const char *kw);
/* Whether parameter i of op takes v (as pytorchlite.ops converts it when boxed): 1 yes, 0
 * no, -1 with a Python error set */
int ptlpy_arg_accepts(const PtlOperator *op, int i, PyObject *v, int boxed);
/* Raises the TypeError for a call no overload of f accepts; always NULL */
PyObject *ptlpy_bad_call_error(PtlPyOpFunc *f, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames);
/* Raises torch.ops' RuntimeError for a call no overload of f accepts, or the TypeError of
 * ptlpy_bad_call_error where no fault against the schemas is found; always NULL */
PyObject *ptlpy_schema_call_error(PtlPyOpFunc *f, PyObject *const *args, Py_ssize_t nargs,
                                  PyObject *kwnames);
/* Whether PyTorch's function takes out= on overload s (torch_out_overloads.h) */
int ptlpy_torch_has_out(const PtlSchema *s);
/* The dtype rule of PyTorch's out= on overload s: a new tuple (the dtype name a strict output
 * also accepts or None, a tuple of each output's strict message template or None where its
 * result is cast), the arguments of pytorchlite._out_arguments.write_probed after out */
PyObject *ptlpy_torch_out_rule(const PtlSchema *s);
/* f's docstring: its Python signatures and dispatcher operators (Note [Operator docstrings]) */
PyObject *ptlpy_op_doc(PtlPyOpFunc *f);

#endif
