/* errors.c -- the only place C error kinds become Python exceptions.  Mirrors
 * torch/csrc/Exceptions.h.  See Note [Error slot]. */
#include "ptlpy.h"

/* _C._LinAlgError, PyTorch's torch._C._LinAlgError: a RuntimeError subclass */
static PyObject *linalg_error;
/* _C.OutOfMemoryError, PyTorch's torch.OutOfMemoryError (torch.cuda.OutOfMemoryError): a
 * RuntimeError subclass raised by a device allocator */
static PyObject *out_of_memory_error;

int
ptlpy_errors_init(PyObject *module)
{
    linalg_error = PyErr_NewException("pytorchlite._C._LinAlgError", PyExc_RuntimeError, NULL);
    if (linalg_error == NULL) {
        return -1;
    }
    Py_INCREF(linalg_error);
    if (PyModule_AddObject(module, "_LinAlgError", linalg_error) < 0) {
        Py_DECREF(linalg_error);
        return -1;
    }
    out_of_memory_error = PyErr_NewException("pytorchlite.OutOfMemoryError",
                                             PyExc_RuntimeError, NULL);
    if (out_of_memory_error == NULL) {
        return -1;
    }
    Py_INCREF(out_of_memory_error);
    if (PyModule_AddObject(module, "OutOfMemoryError", out_of_memory_error) < 0) {
        Py_DECREF(out_of_memory_error);
        return -1;
    }
    return 0;
}

PyObject *
ptlpy_raise(void)
{
    PyObject *exc[PTL_ERR_PYTHON] = {
        /* ORDER ERR; unlisted -> RuntimeError */
        [PTL_ERR_INDEX] = PyExc_IndexError,
        [PTL_ERR_TYPE] = PyExc_TypeError,
        [PTL_ERR_VALUE] = PyExc_ValueError,
        [PTL_ERR_MEMORY] = PyExc_MemoryError,
        [PTL_ERR_NOT_IMPLEMENTED] = PyExc_NotImplementedError,
        [PTL_ERR_LINALG] = linalg_error,
        [PTL_ERR_OUT_OF_MEMORY] = out_of_memory_error,
    };
    PtlErrorKind k = ptl_error_kind();
    if (k != PTL_ERR_PYTHON) {
        PyObject *type = (k > PTL_ERR_NONE && k < PTL_ERR_PYTHON && exc[k]) ? exc[k]
                                                                           : PyExc_RuntimeError;
        PyErr_SetString(type, ptl_error_message());
    }
    ptl_error_clear();
    while (ptl_warning_take() != NULL) {
    }
    return NULL;
}

int
ptlpy_raise_int(void)
{
    ptlpy_raise();
    return -1;
}

int
ptlpy_flush_warnings(void)
{
    /* one warning each, in order; an exception from a filter drops the rest */
    const char *w;
    while ((w = ptl_warning_take()) != NULL) {
        if (PyErr_WarnEx(PyExc_UserWarning, w, ptlpy_user_stacklevel()) < 0) {
            while (ptl_warning_take() != NULL) {
            }
            return -1;
        }
    }
    return 0;
}
