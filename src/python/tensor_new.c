/* tensor_new.c -- tensor(), as_tensor(), from_numpy(): tensors from Python data.
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

static PtlTensorImpl *
impl_from_buffer(PyObject *obj, int numpy_errors)
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
        if (PyErr_WarnEx(PyExc_UserWarning,
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
    if (dt == PTL_DTYPE_UNDEFINED) {
        PyObject *npdt = PyObject_GetAttrString(obj, "dtype");
        PyErr_Clear();
        if (npdt != NULL) {
            PyErr_Format(PyExc_TypeError,
                         "can't convert np.ndarray of type numpy.%S. The only supported types "
                         "are: float64, float32, float16, int64, int32, int16, int8, uint8, and "
                         "bool.",
                         npdt);
            Py_DECREF(npdt);
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
    (void)numpy_errors;
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

/* ---- nested sequences ---- */

static int
is_sequence(PyObject *o)
{
    return PyList_Check(o) || PyTuple_Check(o);
}

/* Category of a leaf: 0 bool, 1 int, 2 float; -1 not a number (TypeError set). */
static int
leaf_category(PyObject *o, PtlDtype *tensor_dt)
{
    if (PyBool_Check(o)) {
        return 0;
    }
    if (PyLong_Check(o)) {
        return 1;
    }
    if (PyFloat_Check(o)) {
        return 2;
    }
    if (PtlPyTensor_Check(o)) {
        PtlTensorImpl *t = PTLPY_IMPL(o);
        if (t->numel != 1) {
            PyErr_SetString(PyExc_ValueError,
                            "only one element tensors can be converted to Python scalars");
            return -1;
        }
        *tensor_dt = ptl_promote_types(*tensor_dt, t->dtype);
        return ptl_dtype_is_floating(t->dtype) ? 2 : t->dtype == PTL_DTYPE_BOOL ? 0 : 1;
    }
    if (PyObject_CheckBuffer(o) && PyObject_HasAttrString(o, "dtype")) {   /* NumPy scalar */
        PyObject *f = PyObject_GetAttrString(o, "dtype");
        PyObject *kind = f ? PyObject_GetAttrString(f, "kind") : NULL;
        Py_XDECREF(f);
        const char *k = kind ? PyUnicode_AsUTF8(kind) : NULL;
        int cat = k == NULL ? -1 : k[0] == 'b' ? 0 : (k[0] == 'i' || k[0] == 'u') ? 1
                                 : k[0] == 'f' ? 2 : -1;
        Py_XDECREF(kind);
        if (cat >= 0) {
            return cat;
        }
        PyErr_Clear();
    }
    PyErr_Format(PyExc_TypeError, "new(): invalid data type '%.100s'", Py_TYPE(o)->tp_name);
    return -1;
}

typedef struct Fill {
    int dim;
    int64_t sizes[PTL_MAX_DIMS];
    PtlDtype dtype;
    size_t item;
    char *p;
} Fill;

static int
infer(PyObject *o, int depth, Fill *f, int *maxcat, PtlDtype *tensor_dt)
{
    if (is_sequence(o)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        if (depth >= PTL_MAX_DIMS) {
            PyErr_Format(PyExc_ValueError, "too many dimensions (more than %d)", PTL_MAX_DIMS);
            return -1;
        }
        if (depth == f->dim) {
            f->sizes[f->dim++] = n;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            if (infer(PySequence_Fast_GET_ITEM(o, i), depth + 1, f, maxcat, tensor_dt) < 0) {
                return -1;
            }
        }
        return 0;
    }
    int cat = leaf_category(o, tensor_dt);
    if (cat < 0) {
        return -1;
    }
    if (cat > *maxcat) {
        *maxcat = cat;
    }
    return 0;
}

static int
store_leaf(PyObject *o, Fill *f)
{
    if (PtlPyTensor_Check(o)) {
        PtlTensorImpl *t = PTLPY_IMPL(o);
        if (ptl_dtype_is_floating(t->dtype)) {
            ptl_store_double(f->p, f->dtype, ptl_item_double(t));
        }
        else {
            ptl_store_int(f->p, f->dtype, ptl_item_int(t));
        }
    }
    else if (PyFloat_Check(o)) {
        ptl_store_double(f->p, f->dtype, PyFloat_AS_DOUBLE(o));
    }
    else if (PyLong_Check(o)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow) {
            PyErr_SetString(PyExc_RuntimeError, "Overflow when unpacking long");
            return -1;
        }
        ptl_store_int(f->p, f->dtype, v);
    }
    else {
        PyObject *idx = PyNumber_Index(o);
        if (idx != NULL) {
            long long v = PyLong_AsLongLong(idx);
            Py_DECREF(idx);
            if (v == -1 && PyErr_Occurred()) {
                return -1;
            }
            ptl_store_int(f->p, f->dtype, v);
        }
        else {
            PyErr_Clear();
            double d = PyFloat_AsDouble(o);
            if (d == -1.0 && PyErr_Occurred()) {
                return -1;
            }
            ptl_store_double(f->p, f->dtype, d);
        }
    }
    f->p += f->item;
    return 0;
}

static int
fill(PyObject *o, int depth, Fill *f)
{
    if (depth == f->dim) {
        if (is_sequence(o)) {
            PyErr_Format(PyExc_ValueError, "expected sequence of length %lld at dim %d (got %zd)",
                         (long long)(depth > 0 ? f->sizes[depth - 1] : 0), depth - 1,
                         PySequence_Fast_GET_SIZE(o));
            return -1;
        }
        return store_leaf(o, f);
    }
    if (!is_sequence(o)) {
        PyErr_Format(PyExc_ValueError, "expected sequence of length %lld at dim %d (got %s)",
                     (long long)f->sizes[depth], depth, Py_TYPE(o)->tp_name);
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    if (n != f->sizes[depth]) {
        PyErr_Format(PyExc_ValueError, "expected sequence of length %lld at dim %d (got %zd)",
                     (long long)f->sizes[depth], depth, n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (fill(PySequence_Fast_GET_ITEM(o, i), depth + 1, f) < 0) {
            return -1;
        }
    }
    return 0;
}

PtlTensorImpl *
ptlpy_impl_from_data(PyObject *data, PtlDtype dtype, PtlDevice device)
{
    PtlTensorImpl *t = NULL, *src = NULL;
    if (device.type != PTL_DEVICE_CPU) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Torch not compiled with CUDA enabled (pytorchlite was built without "
                        "nvcc, or no CUDA device is present)");
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
    int maxcat = -1;
    PtlDtype tensor_dt = PTL_DTYPE_UNDEFINED;
    f.dim = 0;
    if (infer(data, 0, &f, &maxcat, &tensor_dt) < 0) {
        return NULL;
    }
    if (dtype == PTL_DTYPE_UNDEFINED) {
        dtype = maxcat == 2   ? ptl_default_dtype()
                : maxcat == 1 ? PTL_DTYPE_INT64
                : maxcat == 0 ? PTL_DTYPE_BOOL
                              : ptl_default_dtype();
        if (tensor_dt != PTL_DTYPE_UNDEFINED) {
            int tcat = ptl_dtype_is_floating(tensor_dt) ? 2 : tensor_dt == PTL_DTYPE_BOOL ? 0 : 1;
            if (tcat == maxcat) {
                dtype = tensor_dt;
            }
        }
    }
    if ((t = ptl_empty(f.dim, f.sizes, dtype, device)) == NULL) {
        ptlpy_raise();
        return NULL;
    }
    f.dtype = dtype;
    f.item = ptl_dtype_itemsize(dtype);
    f.p = ptl_tensor_data(t);
    if (t->numel > 0 || f.dim == 0) {
        if (fill(data, 0, &f) < 0) {
            ptl_decref(t);
            return NULL;
        }
    }
    return t;
}

static int
parse_common(PyObject *dtype_o, PyObject *device_o, PtlDtype *dt, PtlDevice *dev)
{
    *dt = PTL_DTYPE_UNDEFINED;
    *dev = ptl_device_cpu();
    if (dtype_o != NULL && dtype_o != Py_None &&
        (*dt = ptlpy_parse_dtype(dtype_o, 1)) == PTL_DTYPE_UNDEFINED) {
        return -1;
    }
    if (device_o != NULL && device_o != Py_None && ptlpy_parse_device(device_o, dev, 1) < 0) {
        return -1;
    }
    return 0;
}

/* tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False) */
PyObject *
ptlpy_tensor_new(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"data", "dtype", "device", "requires_grad", "pin_memory", NULL};
    PyObject *data, *dtype_o = Py_None, *device_o = Py_None;
    int rg = 0, pin = 0;
    PtlDtype dt;
    PtlDevice dev;
    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OOpp:tensor", kwlist, &data, &dtype_o,
                                     &device_o, &rg, &pin)) {
        return NULL;
    }
    if (parse_common(dtype_o, device_o, &dt, &dev) < 0) {
        return NULL;
    }
    PtlTensorImpl *t = ptlpy_impl_from_data(data, dt, dev);
    if (t == NULL) {
        return NULL;
    }
    PyObject *res = ptlpy_wrap(t);
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
    PtlDtype dt;
    PtlDevice dev;
    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:as_tensor", kwlist, &data, &dtype_o,
                                     &device_o)) {
        return NULL;
    }
    if (parse_common(dtype_o, device_o, &dt, &dev) < 0) {
        return NULL;
    }
    if (PtlPyTensor_Check(data) && (dt == PTL_DTYPE_UNDEFINED || dt == PTLPY_IMPL(data)->dtype)) {
        Py_INCREF(data);
        return data;
    }
    if (is_numpy_array(data)) {
        PtlTensorImpl *t = impl_from_buffer(data, 1);
        if (t == NULL) {
            PyErr_Clear();
        }
        else if (dt == PTL_DTYPE_UNDEFINED || dt == t->dtype) {
            return ptlpy_wrap(t);
        }
        else {
            PtlTensorImpl *c = ptl_cast(t, dt);
            ptl_decref(t);
            return c ? ptlpy_wrap(c) : ptlpy_raise();
        }
    }
    PtlTensorImpl *t = ptlpy_impl_from_data(data, dt, dev);
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
    PtlTensorImpl *c = ptl_contiguous(t);
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
