/* indexing.c -- Tensor.__getitem__ / __setitem__.  Mirrors
 * torch/csrc/autograd/python_variable_indexing.cpp.
 *
 * Basic indices (ints, slices, None, Ellipsis, bools) become view ops (select, slice,
 * unsqueeze) applied left to right.  Tensor and list indices are collected on the way, each
 * at the dimension of the view it indexes, and applied at the end through one dispatcher
 * call: index.Tensor for reads, index_put_ for writes (Note [Advanced indexing] in
 * aten/native/index.c has the placement rule).  So autograd sees ordinary ops throughout. */
#include "ptlpy.h"

#include "../aten/native/native.h"

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

/* A 0-dim bool tensor indexes like a Python bool (a new dimension of size 1 or 0). */
static int
is_bool_scalar(PyObject *o)
{
    return PyBool_Check(o) || (PtlPyTensor_Check(o) && PTLPY_IMPL(o)->dim == 0 &&
                               PTLPY_IMPL(o)->dtype == PTL_DTYPE_BOOL);
}

static int
is_advanced(PyObject *o)
{
    if (PtlPyTensor_Check(o)) {
        PtlTensorImpl *t = PTLPY_IMPL(o);
        return !(t->dim == 0 && (ptl_dtype_is_integral(t->dtype, 0) || t->dtype == PTL_DTYPE_BOOL));
    }
    return PyList_Check(o) || PyRange_Check(o) ||
           (PySequence_Check(o) && !PyUnicode_Check(o) && !PyTuple_Check(o) &&
            !PyLong_Check(o) && Py_TYPE(o)->tp_as_number == NULL);
}

/* A list holding slices, None or Ellipsis is a tuple of indices (NumPy's legacy rule, kept
 * by PyTorch); any other list is one advanced index. */
static int
list_is_tuple(PyObject *o)
{
    if (!PyList_Check(o)) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(o); i++) {
        PyObject *e = PyList_GET_ITEM(o, i);
        if (e == Py_None || e == Py_Ellipsis || PySlice_Check(e)) {
            return 1;
        }
    }
    return 0;
}

/* The index tensor for a tensor or a sequence (new ref; an empty list indexes as int64). */
static PtlTensorImpl *
index_tensor(PyObject *o)
{
    if (PtlPyTensor_Check(o)) {
        PtlTensorImpl *t = PTLPY_IMPL(o);
        ptl_incref(t);
        return t;
    }
    PtlTensorImpl *t = ptlpy_impl_from_data(o, PTL_DTYPE_UNDEFINED, ptl_device_cpu());
    if (t != NULL && t->numel == 0 && ptl_dtype_is_floating(t->dtype)) {
        ptl_decref(t);
        t = ptlpy_impl_from_data(o, PTL_DTYPE_INT64, ptl_device_cpu());
    }
    return t;
}

/* The result of basic indexing: a view plus the advanced indices still to apply. */
typedef struct Indexed {
    PtlTensorImpl *view;                     /* owned */
    int nlist;                               /* entries of list (0: no advanced index) */
    PtlTensorImpl *list[PTL_MAX_DIMS];       /* owned; NULL entries: whole dimension */
} Indexed;

static void
indexed_release(Indexed *ix)
{
    PTL_CLEAR(ix->view);
    for (int i = 0; i < ix->nlist; i++) {
        PTL_CLEAR(ix->list[i]);
    }
    ix->nlist = 0;
}

/* Note [Bool indices]
 * ~~~~~~~~~~~~~~~~~~~
 * A bool index adds a dimension of size 1 and indexes it with [0] (true) or [] (false):
 * PyTorch's boolToIndexingTensor makes that an advanced index, so x[torch.tensor(True)] = v
 * and x[..., True] = v go through index_put_, which refuses a v of another dtype unless
 * it is one element through one mask (Note [Index put of one value through a mask] in
 * aten/native/index.c).  Only a Python bool that is the whole index stays a view (an
 * unsqueeze, sliced empty for False): PyTorch's fast path, which copies v into it. */

/* The advanced index of bool o, a Python bool or a 0-dim bool tensor (Note [Bool indices]):
 * int64 [0] or [] on `device` (new ref, or NULL with a Python error). */
static PtlTensorImpl *
bool_index(PyObject *o, PtlDevice device)
{
    int64_t n = o == Py_True || (PtlPyTensor_Check(o) && *ptl_tensor_data(PTLPY_IMPL(o)) != 0);
    PtlIValue zero = ptl_iv_int(0);
    PtlTensorImpl *t = ptl_empty(1, &n, PTL_DTYPE_INT64, device);
    if (t != NULL && ptl_fill_scalar(t, &zero) < 0) {
        PTL_CLEAR(t);
    }
    return t != NULL ? t : (ptlpy_raise(), NULL);
}

/* Records t (owned) as the advanced index of the view's dimension *d, which spans `span`
 * dimensions; the dimensions between the last one listed and *d take NULL (whole). */
static void
add_advanced(Indexed *ix, PtlTensorImpl *t, int span, int64_t *d, int64_t *listed)
{
    while (*listed < *d) {
        ix->list[ix->nlist++] = NULL;
        (*listed)++;
    }
    ix->list[ix->nlist++] = t;
    *d += span;
    *listed += span;
}

/* Applies the basic part of self[index] and collects the advanced part; 0 or -1. */
static int
apply_index(PtlTensorImpl *self, PyObject *index, Indexed *ix)
{
    PyObject *items;
    /* a Python bool that is the whole index is a view (Note [Bool indices]) */
    int lone_bool = PyBool_Check(index);
    memset(ix, 0, sizeof(*ix));
    if (PyTuple_Check(index)) {
        items = index;
        Py_INCREF(items);
    }
    else if (list_is_tuple(index)) {
        items = PyList_AsTuple(index);
    }
    else {
        items = PyTuple_Pack(1, index);
    }
    if (items == NULL) {
        return -1;
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
        else if (o != Py_None && !is_bool_scalar(o)) {
            PtlTensorImpl *t = PtlPyTensor_Check(o) ? PTLPY_IMPL(o) : NULL;
            int mask = t != NULL && (t->dtype == PTL_DTYPE_BOOL || t->dtype == PTL_DTYPE_UINT8);
            consumed += mask ? t->dim : 1;
        }
    }
    if (consumed > self->dim) {
        PyErr_Format(PyExc_IndexError, "too many indices for tensor of dimension %d", self->dim);
        goto error;
    }
    PtlTensorImpl *cur = self, *next;
    ptl_incref(cur);
    int64_t d = 0, selected = 0;   /* torch names dimension d + selected in its IndexError */
    int64_t listed = 0;            /* dims of cur already covered by ix->list */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyTuple_GET_ITEM(items, i);
        PtlIValue a[4];
        if (o == Py_Ellipsis) {
            d += self->dim - consumed;
            continue;
        }
        if (is_bool_scalar(o) && !lone_bool) {
            a[0] = ptl_iv_int(d);
            next = call_view(PTL_OP_unsqueeze, cur, 1, a);
            ptl_decref(cur);
            PtlTensorImpl *t = (cur = next) != NULL ? bool_index(o, self->device) : NULL;
            if (t == NULL) {
                ptl_xdecref(cur);
                goto error;
            }
            add_advanced(ix, t, 1, &d, &listed);
            continue;
        }
        if (o == Py_None || PyBool_Check(o)) {
            int truth = o != Py_False;
            a[0] = ptl_iv_int(d);
            next = call_view(PTL_OP_unsqueeze, cur, 1, a);
            if (next != NULL && !truth) {
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
            Py_ssize_t s0 = start, s1 = stop;
            if (d < cur->dim && step == 1 &&
                PySlice_AdjustIndices((Py_ssize_t)cur->sizes[d], &s0, &s1, 1) == cur->sizes[d]) {
                d++;   /* a slice that keeps the whole dimension is skipped, as PyTorch does */
                continue;
            }
            a[0] = ptl_iv_int(d);
            a[1] = ptl_iv_int(start);
            a[2] = ptl_iv_int(stop);
            a[3] = ptl_iv_int(step);
            next = call_view(PTL_OP_slice_Tensor, cur, 4, a);
            d++;
        }
        else if (is_advanced(o)) {
            PtlTensorImpl *t = index_tensor(o);
            if (t == NULL) {
                ptl_decref(cur);
                goto error;
            }
            int mask = t->dtype == PTL_DTYPE_BOOL || t->dtype == PTL_DTYPE_UINT8;
            add_advanced(ix, t, mask ? t->dim : 1, &d, &listed);
            continue;
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
    if (cur == self && ix->nlist == 0) {   /* x[...] and x[()] are views too */
        next = call_view(PTL_OP_alias, cur, 0, NULL);
        ptl_decref(cur);
        if ((cur = next) == NULL) {
            goto error;
        }
    }
    ix->view = cur;
    Py_DECREF(items);
    return 0;
error:
    indexed_release(ix);
    Py_DECREF(items);
    return -1;
}

PyObject *
ptlpy_getitem(PyObject *self, PyObject *index)
{
    Indexed ix;
    if (apply_index(PTLPY_IMPL(self), index, &ix) < 0) {
        return NULL;
    }
    PtlTensorImpl *r = ix.view;
    if (ix.nlist > 0) {
        PtlIValue stack[PTL_SCHEMA_MAX_ARGS];
        stack[0] = ptl_iv_tensor(ix.view);
        stack[1] = ptl_iv_tensorlist(ix.list, ix.nlist);
        r = ptl_call_tensor(PTL_OP_index_Tensor, stack);
        indexed_release(&ix);
        if (r == NULL) {
            return ptlpy_raise();
        }
    }
    return ptlpy_wrap(r);
}

/* value as a tensor of dtype: a number (a numpy integer) is converted exactly, a tensor of
 * another dtype goes through _to_copy (so autograd sees the cast) unless `keep`: index_put_
 * takes it as it is and raises PyTorch's dtype error itself (Note [Index put of one value
 * through a mask] in aten/native/index.c).  New ref or NULL. */
static PtlTensorImpl *
value_tensor(PyObject *value, PtlDtype dtype, int keep)
{
    if (!PtlPyTensor_Check(value)) {
        return ptlpy_impl_from_data(value, dtype, ptl_device_cpu());
    }
    PtlTensorImpl *v = PTLPY_IMPL(value);
    if (v->dtype == dtype || keep) {
        ptl_incref(v);
        return v;
    }
    PtlTensorImpl *r = ptl_to_copy(v, dtype, NULL);
    return r ? r : (ptlpy_raise(), NULL);
}

/* v without its leading size-1 dimensions, as a view (new ref; v itself, increfed, when it
 * has none), or NULL with a Python error: PyTorch's slicePrefix1sSize, which lets
 * `x[0] = torch.ones(1, 3)` assign into a row of 3. */
static PtlTensorImpl *
strip_leading_ones(PtlTensorImpl *v)
{
    int lead = 0;
    while (lead < v->dim && v->sizes[lead] == 1) {
        lead++;
    }
    if (lead == 0) {
        ptl_incref(v);
        return v;
    }
    PtlIValue stack[PTL_SCHEMA_MAX_ARGS];
    stack[0] = ptl_iv_tensor(v);
    stack[1] = ptl_iv_intlist(v->sizes + lead, v->dim - lead);
    PtlTensorImpl *r = ptl_call_tensor(PTL_OP_view, stack);
    return r ? r : (ptlpy_raise(), NULL);
}

/* v as float16 or bfloat16 (dtype) holds it, back in a double: a value past the largest
 * finite one becomes inf, as PyTorch's conversion of a number for x[...] = v makes it (the
 * fill_ that x[...] = number runs would refuse it) */
static double
half_rounded(double v, PtlDtype dtype)
{
    uint16_t h;
    ptl_store_double((char *)&h, dtype, v);
    return ptl_load_double((const char *)&h, dtype);
}

/* A Python complex assigned into a tensor of dtype: for a real dtype its real part as a
 * Python float (for bool, whether the number is nonzero), else value itself (a new ref);
 * NULL with PyTorch's error when it does not fit: an imaginary part other than 0 in a real
 * dtype, or a part outside dtype's range, checked as a double for float16 and bfloat16
 * (whose overflow becomes inf there). */
static PyObject *
complex_value(PyObject *value, PtlDtype dtype)
{
    Py_complex z = PyComplex_AsCComplex(value);
    if (z.real == -1.0 && PyErr_Occurred()) {
        return NULL;
    }
    if (ptl_dtype_is_complex(dtype)) {
        PtlIValue v = ptl_iv_complex(z.real, z.imag);
        if (ptl_scalar_check_range(&v, dtype) < 0) {
            ptlpy_raise();
            return NULL;
        }
        Py_INCREF(value);
        return value;
    }
    if (dtype == PTL_DTYPE_BOOL) {
        return PyBool_FromLong(z.real != 0 || z.imag != 0);
    }
    PtlIValue v = ptl_iv_complex(z.real, z.imag);
    int half = dtype == PTL_DTYPE_FLOAT16 || dtype == PTL_DTYPE_BFLOAT16;
    if (ptl_scalar_check_range(&v, half ? PTL_DTYPE_FLOAT64 : dtype) < 0) {
        ptlpy_raise();
        return NULL;
    }
    return PyFloat_FromDouble(half ? half_rounded(z.real, dtype) : z.real);
}

static int setitem_value(PyObject *self, PyObject *index, PyObject *value);

/* 1 when self[...] = value may take value: a tensor, a Python number (bool, int, float,
 * complex, or a subclass such as numpy.float64) or a numpy integer scalar, as PyTorch's
 * THPVariable_setitem.  A list, a tuple or a numpy array is refused, not converted. */
static int
setitem_takes(PyObject *value)
{
    const char *name = Py_TYPE(value)->tp_name;
    return PtlPyTensor_Check(value) || PyLong_Check(value) || PyFloat_Check(value) ||
           PyComplex_Check(value) ||
           (PyIndex_Check(value) && strncmp(name, "numpy.", 6) == 0 &&
            strcmp(name, "numpy.ndarray") != 0 && strcmp(name, "numpy.bool") != 0 &&
            strcmp(name, "numpy.bool_") != 0);
}

int
ptlpy_setitem(PyObject *self, PyObject *index, PyObject *value)
{
    if (value == NULL) {
        PyErr_SetString(PyExc_TypeError, "Tensor does not support item deletion");
        return -1;
    }
    PtlDtype dtype = PTLPY_IMPL(self)->dtype;
    if (!setitem_takes(value)) {
        PyErr_Format(PyExc_TypeError, "can't assign a %s to a torch.%s%sTensor",
                     Py_TYPE(value)->tp_name,
                     PTLPY_IMPL(self)->device.type == PTL_DEVICE_CUDA ? "cuda." : "",
                     ptl_dtype_legacy_name(dtype));
        return -1;
    }
    if (PyFloat_Check(value) && (dtype == PTL_DTYPE_FLOAT16 || dtype == PTL_DTYPE_BFLOAT16)) {
        PyObject *h = PyFloat_FromDouble(half_rounded(PyFloat_AS_DOUBLE(value), dtype));
        int rc = h != NULL ? setitem_value(self, index, h) : -1;
        Py_XDECREF(h);
        return rc;
    }
    if (!PyComplex_Check(value)) {
        return setitem_value(self, index, value);
    }
    PyObject *v = complex_value(value, dtype);
    if (v == NULL) {
        return -1;
    }
    int rc = setitem_value(self, index, v);
    Py_DECREF(v);
    return rc;
}

/* self[index] = value (not NULL; a Python complex only into a complex self, in range) */
static int
setitem_value(PyObject *self, PyObject *index, PyObject *value)
{
    Indexed ix;
    if (apply_index(PTLPY_IMPL(self), index, &ix) < 0) {
        return -1;
    }
    PtlIValue stack[PTL_SCHEMA_MAX_ARGS];
    const PtlOperator *op;
    PtlTensorImpl *v = NULL;
    int rc;
    int number = PyBool_Check(value) || PyLong_Check(value) || PyFloat_Check(value);
    if (ix.nlist > 0 || !number) {
        PtlTensorImpl *given = value_tensor(value, ix.view->dtype, ix.nlist > 0);
        v = given != NULL ? strip_leading_ones(given) : NULL;
        ptl_xdecref(given);
        if (v == NULL) {
            indexed_release(&ix);
            return -1;
        }
    }
    if (ix.nlist > 0) {
        op = ptl_op(PTL_OP_index_put_);
        stack[0] = ptl_iv_tensor(ix.view);
        stack[1] = ptl_iv_tensorlist(ix.list, ix.nlist);
        stack[2] = ptl_iv_tensor(v);
        stack[3] = ptl_iv_bool(0);
    }
    else if (v != NULL) {
        op = ptl_op(PTL_OP_copy_);
        stack[0] = ptl_iv_tensor(ix.view);
        stack[1] = ptl_iv_tensor(v);
        ptlpy_fill_defaults(op, stack, 2);
    }
    else {
        op = ptl_op(PTL_OP_fill__Scalar);
        stack[0] = ptl_iv_tensor(ix.view);
        stack[1] = PyFloat_Check(value) ? ptl_iv_double(PyFloat_AS_DOUBLE(value))
                   : PyBool_Check(value) ? ptl_iv_bool(value == Py_True)
                                         : ptl_iv_int(PyLong_AsLongLong(value));
        if (PyErr_Occurred()) {
            indexed_release(&ix);
            return -1;
        }
    }
    rc = ptl_dispatcher_call(op, stack);
    indexed_release(&ix);
    ptl_xdecref(v);
    if (rc < 0) {
        return ptlpy_raise_int();
    }
    ptl_ivalue_release(&stack[0]);
    return 0;
}
