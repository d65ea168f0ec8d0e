/* tensor_from_data.c -- tensor(), as_tensor(), from_numpy(): tensors from Python data.
 * Mirrors torch/csrc/utils/tensor_new.cpp and tensor_numpy.cpp.  NumPy is reached only
 * through the buffer protocol, so the runtime does not need NumPy installed. */
#include "ptlpy.h"

#include <string.h>

/* ---- buffers (NumPy arrays and scalars, memoryviews) ---- */

typedef struct BufferOwner {
    Py_buffer view;
} BufferOwner;

/* Storage deleter for memory owned by a Python buffer exporter; takes the GIL. */
static void
release_buffer(void *ctx, void *data)
{
    (void)data;
    BufferOwner *bo = ctx;
    PyGILState_STATE st = PyGILState_Ensure();
    PyBuffer_Release(&bo->view);
    PyGILState_Release(st);
    PyMem_RawFree(bo);
}

static PtlDtype
dtype_from_format(const char *fmt, Py_ssize_t itemsize)
{
    if (fmt == NULL) {
        return PTL_DTYPE_UINT8;
    }
    if (*fmt == '<' || *fmt == '=' || *fmt == '@' || *fmt == '|') {
        fmt++;
    }
    if (fmt[0] == 'Z' && fmt[1] != '\0' && fmt[2] == '\0') {   /* NumPy's complex64/128 */
        return fmt[1] == 'f' ? PTL_DTYPE_COMPLEX64
               : fmt[1] == 'd' ? PTL_DTYPE_COMPLEX128 : PTL_DTYPE_UNDEFINED;
    }
    if (fmt[0] == '\0' || fmt[1] != '\0') {
        return PTL_DTYPE_UNDEFINED;
    }
    switch (*fmt) {
    case '?': return PTL_DTYPE_BOOL;
    case 'B': return PTL_DTYPE_UINT8;
    case 'b': return PTL_DTYPE_INT8;
    case 'h': return PTL_DTYPE_INT16;
    case 'i': return itemsize == 4 ? PTL_DTYPE_INT32 : PTL_DTYPE_UNDEFINED;
    case 'l':
    case 'q': return itemsize == 8 ? PTL_DTYPE_INT64 : itemsize == 4 ? PTL_DTYPE_INT32
                                                                     : PTL_DTYPE_UNDEFINED;
    case 'e': return PTL_DTYPE_FLOAT16;
    case 'f': return PTL_DTYPE_FLOAT32;
    case 'd': return PTL_DTYPE_FLOAT64;
    default: return PTL_DTYPE_UNDEFINED;
    }
}

/* A buffer format with an explicit byte order other than this machine's ('>d' on x86). */
static int
is_foreign_byte_order(const char *fmt)
{
    const uint16_t one = 1;
    int little = *(const uint8_t *)&one == 1;
    return fmt != NULL && (fmt[0] == (little ? '>' : '<') || (little && fmt[0] == '!'));
}

/* A tensor over obj's buffer (new ref; the Storage holds the buffer).  `share`: the caller
 * hands the memory to the user (from_numpy, as_tensor), so a read-only buffer warns. */
static PtlTensorImpl *
impl_from_buffer(PyObject *obj, int share)
{
    BufferOwner *bo = PyMem_RawMalloc(sizeof(BufferOwner));
    if (bo == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    if (PyObject_GetBuffer(obj, &bo->view, PyBUF_RECORDS) < 0) {
        PyErr_Clear();
        if (PyObject_GetBuffer(obj, &bo->view, PyBUF_RECORDS_RO) < 0) {
            PyMem_RawFree(bo);
            return NULL;
        }
        if (share && PyErr_WarnEx(PyExc_UserWarning,
                         "The given NumPy array is not writable, and PyTorch does not support "
                         "non-writable tensors. This means writing to this tensor will result "
                         "in undefined behavior. You may want to copy the array to protect its "
                         "data or make it writable before converting it to a tensor.",
                         1) < 0) {
            PyBuffer_Release(&bo->view);
            PyMem_RawFree(bo);
            return NULL;
        }
    }
    Py_buffer *v = &bo->view;
    PtlDtype dt = dtype_from_format(v->format, v->itemsize);
    int64_t sizes[PTL_MAX_DIMS], strides[PTL_MAX_DIMS];
    int64_t extent = 0;
    if (is_foreign_byte_order(v->format)) {
        PyErr_SetString(PyExc_ValueError,
                        "given numpy array has byte order different from the native byte order. "
                        "Conversion between byte orders is currently not supported.");
        goto error;
    }
    if (dt == PTL_DTYPE_UNDEFINED) {
        /* NumPy names the scalar type: arr.dtype.type.__name__ ("str_", "complex128") */
        PyObject *npdt = PyObject_GetAttrString(obj, "dtype");
        PyObject *sctype = npdt ? PyObject_GetAttrString(npdt, "type") : NULL;
        PyObject *name = sctype ? PyObject_GetAttrString(sctype, "__name__") : NULL;
        Py_XDECREF(npdt);
        Py_XDECREF(sctype);
        PyErr_Clear();
        if (name != NULL) {
            PyErr_Format(PyExc_TypeError,
                         "can't convert np.ndarray of type numpy.%S. The only supported types "
                         "are: float64, float32, float16, complex64, complex128, int64, int32, "
                         "int16, int8, uint8, and "
                         "bool.",
                         name);
            Py_DECREF(name);
        }
        else {
            PyErr_Format(PyExc_TypeError, "unsupported buffer format '%s'",
                         v->format ? v->format : "B");
        }
        goto error;
    }
    if (v->ndim > PTL_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "pytorchlite supports at most %d dimensions, got %d",
                     PTL_MAX_DIMS, v->ndim);
        goto error;
    }
    int any_zero = 0;
    for (int i = 0; i < v->ndim; i++) {
        sizes[i] = v->shape[i];
        any_zero |= sizes[i] == 0;
        if (v->strides[i] < 0) {
            PyErr_SetString(PyExc_ValueError,
                            "At least one stride in the given numpy array is negative, and "
                            "tensors with negative strides are not currently supported. (You "
                            "can probably work around this by making a copy of your array  with "
                            "array.copy().) ");
            goto error;
        }
        if (v->strides[i] % v->itemsize != 0) {
            PyErr_SetString(PyExc_ValueError,
                            "given numpy array strides not a multiple of the element byte size. "
                            "Copy the numpy array to reallocate the memory.");
            goto error;
        }
        strides[i] = v->strides[i] / v->itemsize;
        extent += (sizes[i] - 1) * strides[i];
    }
    size_t nbytes = any_zero ? 0 : (size_t)(extent + 1) * (size_t)v->itemsize;
    PtlStorage *st = ptl_storage_new_foreign(v->buf, nbytes, ptl_device_cpu(), release_buffer,
                                             bo);
    if (st == NULL) {
        ptlpy_raise();
        goto error;
    }
    PtlTensorImpl *t = ptl_tensor_impl_new(st, dt, v->ndim, sizes, strides, 0);
    if (t == NULL) {
        ptlpy_raise();
    }
    return t;
error:
    PyBuffer_Release(&bo->view);
    PyMem_RawFree(bo);
    return NULL;
}

static int
is_numpy_array(PyObject *o)
{
    return PyObject_CheckBuffer(o) && PyObject_HasAttrString(o, "__array_interface__") &&
           PyObject_HasAttrString(o, "ndim");
}

PyObject *
ptlpy_from_numpy(PyObject *module, PyObject *arr)
{
    (void)module;
    if (!is_numpy_array(arr) || PtlPyTensor_Check(arr)) {
        PyErr_Format(PyExc_TypeError, "expected np.ndarray (got %.100s)", Py_TYPE(arr)->tp_name);
        return NULL;
    }
    PtlTensorImpl *t = impl_from_buffer(arr, 1);
    return t ? ptlpy_wrap(t) : NULL;
}

/* ---- nested sequences ----
 * As in PyTorch's internal_new_from_data: the shape comes from the first element at each
 * depth, the dtype (when not given) is the promotion of every leaf's dtype, and storing
 * checks each leaf against the shape and converts it with PyTorch's per-dtype rules. */

static int
is_sequence(PyObject *o)
{
    return PyList_Check(o) || PyTuple_Check(o);
}

static int
is_string(PyObject *o)
{
    return PyUnicode_Check(o) || PyBytes_Check(o);
}

/* Any other object with the sequence protocol (a deque, a range, a user class), which nests
 * like a list as under PyTorch's PySequence_Check.  Strings, tensors and buffers (NumPy
 * arrays and scalars) are not: they have their own paths. */
static int
is_other_sequence(PyObject *o)
{
    return !is_sequence(o) && !is_string(o) && !PtlPyTensor_Check(o) &&
           !PyObject_CheckBuffer(o) && PySequence_Check(o);
}

/* A NumPy array of at least one dimension, which nests like a list of its rows. */
static int
is_numpy_rows(PyObject *o)
{
    if (!is_numpy_array(o) || PtlPyTensor_Check(o)) {
        return 0;
    }
    PyObject *nd = PyObject_GetAttrString(o, "ndim");
    long ndim = nd != NULL ? PyLong_AsLong(nd) : 0;
    Py_XDECREF(nd);
    PyErr_Clear();
    return ndim > 0;
}

/* o as a list or tuple (new ref): itself, its items, or a NumPy array's rows; NULL without
 * an error when o does not nest, NULL with an error when reading its items failed. */
static PyObject *
as_rows(PyObject *o)
{
    if (is_sequence(o)) {
        Py_INCREF(o);
        return o;
    }
    return is_other_sequence(o) || is_numpy_rows(o) ? PySequence_Fast(o, "not a sequence")
                                                     : NULL;
}

/* A NumPy scalar or array (np.float32(1), np.bool_(True)): its dtype, else
 * PTL_DTYPE_UNDEFINED. */
static PtlDtype
numpy_scalar_dtype(PyObject *o)
{
    if (!PyObject_CheckBuffer(o) || PyObject_HasAttrString(o, "ndim") == 0 ||
        !PyObject_HasAttrString(o, "dtype") || PtlPyTensor_Check(o)) {
        return PTL_DTYPE_UNDEFINED;
    }
    Py_buffer v;
    if (PyObject_GetBuffer(o, &v, PyBUF_RECORDS_RO) < 0) {
        PyErr_Clear();
        return PTL_DTYPE_UNDEFINED;
    }
    PtlDtype dt = dtype_from_format(v.format, v.itemsize);
    PyBuffer_Release(&v);
    return dt;
}

/* PyTorch's infer_scalar_type: the dtype of a leaf, or the promoted dtype of a nested
 * sequence.  PTL_DTYPE_UNDEFINED with an exception set on failure. */
static PtlDtype
infer_dtype(PyObject *o)
{
    PtlDtype dt = numpy_scalar_dtype(o);
    if (dt != PTL_DTYPE_UNDEFINED) {
        return dt;
    }
    if (PyFloat_Check(o)) {
        return ptl_default_dtype();
    }
    if (PyComplex_Check(o)) {   /* the default complex dtype, complex64 under float32 */
        return ptl_dtype_to_complex(ptl_default_dtype());
    }
    if (PyBool_Check(o)) {
        return PTL_DTYPE_BOOL;
    }
    if (PyLong_Check(o)) {
        return PTL_DTYPE_INT64;
    }
    if (PtlPyTensor_Check(o)) {
        return PTLPY_IMPL(o)->dtype;
    }
    if (is_string(o)) {
        PyErr_Format(PyExc_TypeError, "new(): invalid data type '%.100s'", Py_TYPE(o)->tp_name);
        return PTL_DTYPE_UNDEFINED;
    }
    if (is_sequence(o) || is_other_sequence(o)) {
        PyObject *rows = PySequence_Fast(o, "not a sequence");
        if (rows == NULL) {
            return PTL_DTYPE_UNDEFINED;
        }
        Py_ssize_t n = PySequence_Fast_GET_SIZE(rows);
        dt = n == 0 ? ptl_default_dtype() : PTL_DTYPE_UNDEFINED;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *item = PySequence_Fast_GET_ITEM(rows, i);
            PtlDtype it = PTL_DTYPE_UNDEFINED;
            if (item == o) {
                PyErr_SetString(PyExc_TypeError,
                                "new(): self-referential lists are incompatible");
            }
            else {
                it = infer_dtype(item);
            }
            if (it == PTL_DTYPE_UNDEFINED) {
                Py_DECREF(rows);
                return PTL_DTYPE_UNDEFINED;
            }
            dt = i == 0 ? it : ptl_promote_types(dt, it);
        }
        Py_DECREF(rows);
        return dt;
    }
    PyErr_Format(PyExc_RuntimeError, "Could not infer dtype of %.100s", Py_TYPE(o)->tp_name);
    return PTL_DTYPE_UNDEFINED;
}

typedef struct Fill {
    int dim;
    int64_t sizes[PTL_MAX_DIMS];
    PtlDtype dtype;
    size_t item;
    char *p;
} Fill;

/* PyTorch's compute_sizes: follows the first element down while it nests. */
static int
compute_sizes(PyObject *data, Fill *f)
{
    PyObject *rows = as_rows(data);   /* owned */
    f->dim = 0;
    if (rows == NULL && PyErr_Occurred()) {
        return -1;
    }
    while (rows != NULL) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(rows);
        f->sizes[f->dim++] = n;
        if (n == 0) {
            break;
        }
        PyObject *first = PySequence_Fast_GET_ITEM(rows, 0);
        PyObject *next = is_string(first) ? NULL : as_rows(first);
        /* a string nests in itself forever (its items are str), so PyTorch runs out of
         * dimensions on it */
        if (is_string(first) || (next != NULL && f->dim == PTL_MAX_DIMS)) {
            PyErr_Format(PyExc_ValueError, "too many dimensions '%.100s'",
                         PyUnicode_Check(first) ? "str" : Py_TYPE(first)->tp_name);
            Py_XDECREF(next);
            Py_DECREF(rows);
            return -1;
        }
        Py_DECREF(rows);
        rows = next;
        if (rows == NULL && PyErr_Occurred()) {
            return -1;
        }
    }
    return 0;
}

/* C's conversion range of a float for an integral dtype, with PyTorch's message. */
static int
check_float_range(double d, PtlDtype dt)
{
    static const double lo[PTL_DTYPE_COUNT] = {
        [PTL_DTYPE_UINT8] = 0.0, [PTL_DTYPE_INT8] = -128.0, [PTL_DTYPE_INT16] = -32768.0,
        [PTL_DTYPE_INT32] = -2147483648.0, [PTL_DTYPE_INT64] = -9223372036854775808.0,
    };
    static const double hi[PTL_DTYPE_COUNT] = {
        [PTL_DTYPE_UINT8] = 255.0, [PTL_DTYPE_INT8] = 127.0, [PTL_DTYPE_INT16] = 32767.0,
        [PTL_DTYPE_INT32] = 2147483647.0, [PTL_DTYPE_INT64] = 9223372036854775807.0,
    };
    if (d != d || d < lo[dt] || d > hi[dt]) {
        PyErr_Format(PyExc_RuntimeError, "value cannot be converted to type %s without overflow",
                     ptl_dtype_name(dt));
        return -1;
    }
    return 0;
}

/* PyTorch's store_scalar: one Python number into *f->p as f->dtype. */
static int
store_leaf(PyObject *o, Fill *f)
{
    PtlDtype dt = f->dtype;
    if (ptl_dtype_is_complex(dt)) {
        Py_complex c = PyComplex_AsCComplex(o);
        if (c.real == -1.0 && PyErr_Occurred()) {
            return -1;
        }
        double parts[2] = {c.real, c.imag};
        ptl_convert_scalar(f->p, dt, (const char *)parts, PTL_DTYPE_COMPLEX128);
    }
    else if (ptl_dtype_is_floating(dt)) {
        double d = PyFloat_AsDouble(o);
        if (d == -1.0 && PyErr_Occurred()) {
            return -1;
        }
        ptl_store_double(f->p, dt, d);
    }
    else if (PyFloat_Check(o)) {
        double d = PyFloat_AS_DOUBLE(o);
        if (dt == PTL_DTYPE_BOOL) {
            ptl_store_int(f->p, dt, d != 0.0);
        }
        else if (check_float_range(d, dt) < 0) {
            return -1;
        }
        else if (d >= 9223372036854775808.0) {
            /* hi[int64] rounds up to 2**63, so PyTorch lets 2**63 through and x86 converts it
             * to INT64_MIN; C leaves that conversion undefined, so spell the result out */
            ptl_store_int(f->p, dt, INT64_MIN);
        }
        else {
            ptl_store_int(f->p, dt, (int64_t)d);
        }
    }
    else if (dt == PTL_DTYPE_BOOL && numpy_scalar_dtype(o) == PTL_DTYPE_BOOL) {
        int b = PyObject_IsTrue(o);
        if (b < 0) {
            return -1;
        }
        ptl_store_int(f->p, dt, b);
    }
    else {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (v == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (dt == PTL_DTYPE_BOOL) {
            ptl_store_int(f->p, dt, overflow != 0 || v != 0);
            f->p += f->item;
            return 0;
        }
        if (overflow) {
            PyErr_SetString(PyExc_ValueError, "Overflow when unpacking long long");
            return -1;
        }
        /* unsigned targets also take negatives down to -max, as C's conversion does */
        int bits = (int)ptl_dtype_itemsize(dt) * 8;
        long long max = bits == 64                ? INT64_MAX
                        : dt == PTL_DTYPE_UINT8 ? 255
                                                : (1LL << (bits - 1)) - 1;
        long long min = dt == PTL_DTYPE_UINT8 ? -255 : -max - 1;
        if (v < min || v > max) {
            PyErr_Format(PyExc_RuntimeError,
                         "value cannot be converted to type %s without overflow",
                         ptl_dtype_name(dt));
            return -1;
        }
        ptl_store_int(f->p, dt, v);
    }
    f->p += f->item;
    return 0;
}

/* PyTorch's recursive_store. */
static int
fill(PyObject *o, int depth, Fill *f)
{
    if (depth == f->dim) {
        return store_leaf(o, f);
    }
    PyObject *rows = as_rows(o);
    if (rows == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "not a sequence");
        }
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(rows);
    if (n != f->sizes[depth]) {
        PyErr_Format(PyExc_ValueError, "expected sequence of length %lld at dim %d (got %zd)",
                     (long long)f->sizes[depth], depth, n);
        Py_DECREF(rows);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (fill(PySequence_Fast_GET_ITEM(rows, i), depth + 1, f) < 0) {
            Py_DECREF(rows);
            return -1;
        }
    }
    Py_DECREF(rows);
    return 0;
}

PtlTensorImpl *
ptlpy_impl_from_data(PyObject *data, PtlDtype dtype, PtlDevice device)
{
    PtlTensorImpl *t = NULL, *src = NULL;
    if (device.type != PTL_DEVICE_CPU) {
        PyErr_SetString(PyExc_RuntimeError, PTL_NO_CUDA_MESSAGE);
        return NULL;
    }
    if (PtlPyTensor_Check(data)) {
        src = PTLPY_IMPL(data);
        t = ptl_cast(src, dtype == PTL_DTYPE_UNDEFINED ? src->dtype : dtype);
        return t ? t : (ptlpy_raise(), NULL);
    }
    if (!is_sequence(data) && !PyFloat_Check(data) && !PyLong_Check(data) &&
        PyObject_CheckBuffer(data) && !PyBytes_Check(data) && !PyByteArray_Check(data)) {
        if ((src = impl_from_buffer(data, 0)) == NULL) {
            return NULL;
        }
        t = ptl_cast(src, dtype == PTL_DTYPE_UNDEFINED ? src->dtype : dtype);
        ptl_decref(src);
        return t ? t : (ptlpy_raise(), NULL);
    }
    Fill f;
    if (is_string(data)) {
        PyErr_Format(PyExc_TypeError, "new(): invalid data type '%.100s'",
                     Py_TYPE(data)->tp_name);
        return NULL;
    }
    if (compute_sizes(data, &f) < 0) {
        return NULL;
    }
    if (dtype == PTL_DTYPE_UNDEFINED && (dtype = infer_dtype(data)) == PTL_DTYPE_UNDEFINED) {
        return NULL;
    }
    if ((t = ptl_empty(f.dim, f.sizes, dtype, device)) == NULL) {
        ptlpy_raise();
        return NULL;
    }
    f.dtype = dtype;
    f.item = ptl_dtype_itemsize(dtype);
    f.p = ptl_tensor_data(t);
    if (fill(data, 0, &f) < 0) {
        ptl_decref(t);
        return NULL;
    }
    return t;
}

/* dtype= and device= of tensor() and as_tensor(): *dev_set is 0 when neither device= nor a
 * default device (Note [The default device]) names one, so the data keeps its own. */
static int
parse_common(PyObject *dtype_o, PyObject *device_o, PtlDtype *dt, PtlDevice *dev, int *dev_set)
{
    *dt = PTL_DTYPE_UNDEFINED;
    *dev = ptl_device_cpu();
    if (dtype_o != NULL && dtype_o != Py_None &&
        (*dt = ptlpy_parse_dtype(dtype_o, 1)) == PTL_DTYPE_UNDEFINED) {
        return -1;
    }
    if (device_o == NULL || device_o == Py_None) {
        *dev_set = ptlpy_default_device(dev);
        return 0;
    }
    *dev_set = 1;
    return ptlpy_parse_device(device_o, dev, 1);
}

/* t (STOLEN) on device dev, through aten::_to_copy when it is elsewhere; NULL with a Python
 * error. */
static PtlTensorImpl *
to_device(PtlTensorImpl *t, PtlDevice dev)
{
    if (t == NULL || ptl_device_equal(t->device, dev)) {
        return t;
    }
    PtlTensorImpl *r = ptl_to_copy(t, PTL_DTYPE_UNDEFINED, &dev);
    ptl_decref(t);
    return r ? r : (ptlpy_raise(), NULL);
}

/* tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False) */
PyObject *
ptlpy_tensor_new(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"data", "dtype", "device", "requires_grad", "pin_memory", NULL};
    PyObject *data, *dtype_o = Py_None, *device_o = Py_None;
    int rg = 0, pin = 0, dev_set;
    PtlDtype dt;
    PtlDevice dev;
    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OOpp:tensor", kwlist, &data, &dtype_o,
                                     &device_o, &rg, &pin)) {
        return NULL;
    }
    if (parse_common(dtype_o, device_o, &dt, &dev, &dev_set) < 0 ||
        (pin && ptlpy_pin_memory_check() < 0)) {
        return NULL;
    }
    PtlTensorImpl *t = ptlpy_impl_from_data(data, dt, ptl_device_cpu());
    if (dev_set) {
        t = to_device(t, dev);
    }
    if (t == NULL) {
        return NULL;
    }
    PyObject *res = ptlpy_wrap(t);
    if (res != NULL && pin) {
        Py_SETREF(res, PyObject_CallMethod(res, "pin_memory", NULL));
    }
    if (res != NULL && rg && PyObject_SetAttrString(res, "requires_grad", Py_True) < 0) {
        Py_CLEAR(res);
    }
    return res;
}

/* as_tensor(data, dtype=None, device=None): shares memory with tensors and NumPy arrays
 * when no conversion is needed. */
PyObject *
ptlpy_as_tensor(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"data", "dtype", "device", NULL};
    PyObject *data, *dtype_o = Py_None, *device_o = Py_None;
    int dev_set;
    PtlDtype dt;
    PtlDevice dev;
    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:as_tensor", kwlist, &data, &dtype_o,
                                     &device_o)) {
        return NULL;
    }
    if (parse_common(dtype_o, device_o, &dt, &dev, &dev_set) < 0) {
        return NULL;
    }
    if (PtlPyTensor_Check(data) && (dt == PTL_DTYPE_UNDEFINED || dt == PTLPY_IMPL(data)->dtype) &&
        (!dev_set || ptl_device_equal(dev, PTLPY_IMPL(data)->device))) {
        Py_INCREF(data);
        return data;
    }
    PtlTensorImpl *t = NULL;
    if (is_numpy_array(data) && (!dev_set || dev.type == PTL_DEVICE_CPU)) {
        t = impl_from_buffer(data, 1);
        if (t == NULL) {
            PyErr_Clear();
        }
        else if (dt != PTL_DTYPE_UNDEFINED && dt != t->dtype) {
            PtlTensorImpl *c = ptl_cast(t, dt);
            ptl_decref(t);
            return c ? ptlpy_wrap(c) : ptlpy_raise();
        }
    }
    if (t == NULL) {
        t = ptlpy_impl_from_data(data, dt, ptl_device_cpu());
        t = dev_set ? to_device(t, dev) : t;
    }
    return t ? ptlpy_wrap(t) : NULL;
}

/* ---- raw bytes (pickling) ---- */

/* _tensor_bytes(tensor) -> bytes: a CPU tensor's elements in row-major order (a copy). */
PyObject *
ptlpy_tensor_bytes(PyObject *module, PyObject *arg)
{
    (void)module;
    if (!PtlPyTensor_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "_tensor_bytes() expected a Tensor (got %.100s)",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    PtlTensorImpl *t = PTLPY_IMPL(arg);
    if (t->device.type != PTL_DEVICE_CPU) {
        PyErr_SetString(PyExc_TypeError, "_tensor_bytes() expects a CPU tensor");
        return NULL;
    }
    PtlTensorImpl *r = ptlpy_resolve_conj(t), *c;
    if (r == NULL) {
        return NULL;
    }
    c = ptl_contiguous(r);
    ptl_decref(r);
    if (c == NULL) {
        return ptlpy_raise();
    }
    Py_ssize_t n = (Py_ssize_t)(c->numel * (int64_t)ptl_tensor_itemsize(c));
    PyObject *b = PyBytes_FromStringAndSize(n ? ptl_tensor_data(c) : NULL, n);
    ptl_decref(c);
    return b;
}

/* _tensor_from_bytes(data, dtype, shape) -> a new CPU tensor holding a copy of data, the
 * inverse of _tensor_bytes. */
PyObject *
ptlpy_tensor_from_bytes(PyObject *module, PyObject *args)
{
    PyObject *dtype_o, *shape;
    Py_buffer buf;
    int64_t sizes[PTL_MAX_DIMS];
    (void)module;
    if (!PyArg_ParseTuple(args, "y*OO!:_tensor_from_bytes", &buf, &dtype_o, &PyTuple_Type,
                          &shape)) {
        return NULL;
    }
    PtlTensorImpl *t = NULL;
    PtlDtype dt = ptlpy_parse_dtype(dtype_o, 1);
    Py_ssize_t dim = PyTuple_GET_SIZE(shape);
    if (dt == PTL_DTYPE_UNDEFINED) {
        goto error;
    }
    if (dim > PTL_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "pytorchlite supports at most %d dimensions, got %zd",
                     PTL_MAX_DIMS, dim);
        goto error;
    }
    for (Py_ssize_t i = 0; i < dim; i++) {
        sizes[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
        if (sizes[i] == -1 && PyErr_Occurred()) {
            goto error;
        }
    }
    if ((t = ptl_empty((int)dim, sizes, dt, ptl_device_cpu())) == NULL) {
        ptlpy_raise();
        goto error;
    }
    size_t nbytes = (size_t)t->numel * ptl_tensor_itemsize(t);
    if ((size_t)buf.len != nbytes) {
        PyErr_Format(PyExc_ValueError, "_tensor_from_bytes(): expected %zu bytes, got %zd",
                     nbytes, buf.len);
        goto error;
    }
    if (nbytes) {
        memcpy(ptl_tensor_data(t), buf.buf, nbytes);
    }
    PyBuffer_Release(&buf);
    return ptlpy_wrap(t);
error:
    ptl_xdecref(t);
    PyBuffer_Release(&buf);
    return NULL;
}
