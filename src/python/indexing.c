/* indexing.c -- Tensor.__getitem__ / __setitem__ for basic indexing (ints, slices, None,
 * Ellipsis, bools).  Mirrors torch/csrc/autograd/python_variable_indexing.cpp.  Each index
 * element becomes a dispatcher call (select, slice, unsqueeze), so the result is a view and
 * autograd sees ordinary view ops. */
#include "ptlpy.h"

/* Calls a view op on t (borrowed) with int arguments; new ref or NULL (error set). */
static PtlTensorImpl *
call_view(PtlOpId id, PtlTensorImpl *t, int nint, const PtlIValue *ints)
{
    PtlIValue stack[PTL_SCHEMA_MAX_ARGS];
    const PtlOperator *op = ptl_op(id);
    stack[0] = ptl_iv_tensor(t);
    for (int i = 0; i < nint; i++) {
        stack[1 + i] = ints[i];
    }
    ptlpy_fill_defaults(op, stack, 1 + nint);
    if (ptl_dispatcher_call(op, stack) < 0) {
        ptlpy_raise();
        return NULL;
    }
    return stack[0].u.t;
}

static int
is_advanced(PyObject *o)
{
    if (PtlPyTensor_Check(o)) {
        PtlTensorImpl *t = PTLPY_IMPL(o);
        return !(t->dim == 0 && ptl_dtype_is_integral(t->dtype, 0));
    }
    return PyList_Check(o) || (PySequence_Check(o) && !PyUnicode_Check(o) && !PyTuple_Check(o) &&
                               !PyLong_Check(o) && Py_TYPE(o)->tp_as_number == NULL);
}

/* Returns the view self[index] as a new impl reference. */
static PtlTensorImpl *
apply_index(PtlTensorImpl *self, PyObject *index)
{
    PyObject *items;
    if (PyTuple_Check(index)) {
        items = index;
        Py_INCREF(items);
    }
    else if ((items = PyTuple_Pack(1, index)) == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    int consumed = 0, ellipsis = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyTuple_GET_ITEM(items, i);
        if (o == Py_Ellipsis) {
            if (ellipsis++) {
                PyErr_SetString(PyExc_IndexError, "an index can only have a single ellipsis ('...')");
                goto error;
            }
        }
        else if (o != Py_None && !PyBool_Check(o)) {
            if (is_advanced(o)) {
                PyErr_SetString(PyExc_NotImplementedError,
                                "advanced indexing (indexing with tensors or lists) is not "
                                "supported yet; use index_select or masked_select");
                goto error;
            }
            consumed++;
        }
    }
    if (consumed > self->dim) {
        PyErr_Format(PyExc_IndexError, "too many indices for tensor of dimension %d", self->dim);
        goto error;
    }
    PtlTensorImpl *cur = self, *next;
    ptl_incref(cur);
    int64_t d = 0, selected = 0;   /* torch names dimension d + selected in its IndexError */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyTuple_GET_ITEM(items, i);
        PtlIValue a[4];
        if (o == Py_Ellipsis) {
            d += self->dim - consumed;
            continue;
        }
        if (o == Py_None || PyBool_Check(o)) {
            a[0] = ptl_iv_int(d);
            next = call_view(PTL_OP_unsqueeze, cur, 1, a);
            if (next != NULL && o == Py_False) {
                PtlTensorImpl *e;
                a[0] = ptl_iv_int(d);
                a[1] = ptl_iv_int(0);
                a[2] = ptl_iv_int(0);
                a[3] = ptl_iv_int(1);
                e = call_view(PTL_OP_slice_Tensor, next, 4, a);
                ptl_decref(next);
                next = e;
            }
            d++;
        }
        else if (PySlice_Check(o)) {
            Py_ssize_t start, stop, step;
            if (PySlice_Unpack(o, &start, &stop, &step) < 0) {
                ptl_decref(cur);
                goto error;
            }
            if (step <= 0) {
                PyErr_SetString(PyExc_ValueError, "step must be greater than zero");
                ptl_decref(cur);
                goto error;
            }
            a[0] = ptl_iv_int(d);
            a[1] = ptl_iv_int(start);
            a[2] = ptl_iv_int(stop);
            a[3] = ptl_iv_int(step);
            next = call_view(PTL_OP_slice_Tensor, cur, 4, a);
            d++;
        }
        else {
            Py_ssize_t v = PyNumber_AsSsize_t(o, PyExc_IndexError);
            if (v == -1 && PyErr_Occurred()) {
                ptl_decref(cur);
                goto error;
            }
            if (v < -cur->sizes[d] || v >= cur->sizes[d]) {
                PyErr_Format(PyExc_IndexError,
                             "index %zd is out of bounds for dimension %lld with size %lld", v,
                             (long long)(d + selected), (long long)cur->sizes[d]);
                ptl_decref(cur);
                goto error;
            }
            a[0] = ptl_iv_int(d);
            a[1] = ptl_iv_int(v);
            next = call_view(PTL_OP_select_int, cur, 2, a);
            selected++;
        }
        ptl_decref(cur);
        if (next == NULL) {
            goto error;
        }
        cur = next;
    }
    if (cur == self) {   /* x[...] and x[()] are views too */
        next = call_view(PTL_OP_alias, cur, 0, NULL);
        ptl_decref(cur);
        cur = next;
    }
    Py_DECREF(items);
    return cur;
error:
    Py_DECREF(items);
    return NULL;
}

PyObject *
ptlpy_getitem(PyObject *self, PyObject *index)
{
    PtlTensorImpl *t = apply_index(PTLPY_IMPL(self), index);
    return t ? ptlpy_wrap(t) : NULL;
}

int
ptlpy_setitem(PyObject *self, PyObject *index, PyObject *value)
{
    if (value == NULL) {
        PyErr_SetString(PyExc_TypeError, "Tensor does not support item deletion");
        return -1;
    }
    PtlTensorImpl *view = apply_index(PTLPY_IMPL(self), index);
    if (view == NULL) {
        return -1;
    }
    PtlIValue stack[PTL_SCHEMA_MAX_ARGS];
    const PtlOperator *op;
    stack[0] = ptl_iv_tensor(view);
    if (PtlPyTensor_Check(value)) {
        op = ptl_op(PTL_OP_copy_);
        stack[1] = ptl_iv_tensor(PTLPY_IMPL(value));
        ptlpy_fill_defaults(op, stack, 2);
    }
    else if (PyBool_Check(value) || PyLong_Check(value) || PyFloat_Check(value)) {
        op = ptl_op(PTL_OP_fill__Scalar);
        stack[1] = PyFloat_Check(value) ? ptl_iv_double(PyFloat_AS_DOUBLE(value))
                   : PyBool_Check(value) ? ptl_iv_bool(value == Py_True)
                                         : ptl_iv_int(PyLong_AsLongLong(value));
        if (PyErr_Occurred()) {
            ptl_decref(view);
            return -1;
        }
    }
    else {
        PyObject *args = PyTuple_Pack(1, value);
        PyObject *t = args ? ptlpy_tensor_new(NULL, args, NULL) : NULL;
        int rc = -1;
        Py_XDECREF(args);
        if (t != NULL) {
            rc = ptlpy_setitem(self, index, t);
            Py_DECREF(t);
        }
        ptl_decref(view);
        return rc;
    }
    int rc = ptl_dispatcher_call(op, stack);
    ptl_decref(view);
    if (rc < 0) {
        return ptlpy_raise_int();
    }
    ptl_ivalue_release(&stack[0]);
    return 0;
}
