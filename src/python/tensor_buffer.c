/* tensor_buffer.c -- the buffer protocol of _C.TensorBase (NumPy interop without importing
 * NumPy): a CPU strided tensor's memory as a Py_buffer with its shape and byte strides;
 * PyTorch's errors for the tensors whose values are not in host memory. */
#include "ptlpy.h"

static int
tensor_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    PtlTensorImpl *t = PTLPY_IMPL(self);
    const char *fmt = ptl_dtype_buffer_format(t->dtype);
    if (ptlpy_check_strided(t) < 0) {
        return -1;
    }
    if (ptl_tensor_is_conj(t)) {   /* its memory holds the conjugates of its values */
        PyErr_SetString(PyExc_BufferError, "Can't export tensors with the conjugate bit set");
        return -1;
    }
    if (t->device.type == PTL_DEVICE_META) {
        return ptlpy_meta_has_no_data("numpy");
    }
    if (ptlpy_no_data(t)) {
        return ptlpy_no_data_error();
    }
    if (t->device.type != PTL_DEVICE_CPU) {
        PyErr_SetString(PyExc_BufferError,
                        "can't export a CUDA tensor's buffer; use Tensor.cpu() first");
        return -1;
    }
    if (fmt == NULL) {
        PyErr_Format(PyExc_BufferError, "Got unsupported ScalarType %s",
                     ptl_dtype_legacy_name(t->dtype));
        return -1;
    }
    if (!(flags & PyBUF_STRIDES) && !ptl_tensor_is_contiguous(t)) {
        PyErr_SetString(PyExc_BufferError, "the tensor is not contiguous");
        return -1;
    }
    Py_ssize_t *arr = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(2 * t->dim + 1));
    if (arr == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    size_t item = ptl_tensor_itemsize(t);
    for (int i = 0; i < t->dim; i++) {
        arr[i] = (Py_ssize_t)t->sizes[i];
        arr[t->dim + i] = (Py_ssize_t)(t->strides[i] * (int64_t)item);
    }
    view->buf = t->numel ? ptl_tensor_data(t) : t->storage->data;
    view->obj = self;
    Py_INCREF(self);
    view->len = (Py_ssize_t)(t->numel * (int64_t)item);
    view->readonly = 0;
    view->itemsize = (Py_ssize_t)item;
    view->format = (flags & PyBUF_FORMAT) ? (char *)fmt : NULL;
    view->ndim = t->dim;
    view->shape = arr;
    view->strides = (flags & PyBUF_STRIDES) ? arr + t->dim : NULL;
    view->suboffsets = NULL;
    view->internal = arr;
    return 0;
}

static void
tensor_releasebuffer(PyObject *self, Py_buffer *view)
{
    (void)self;
    PyMem_Free(view->internal);
}

PyBufferProcs ptlpy_tensor_as_buffer = {
    .bf_getbuffer = tensor_getbuffer,
    .bf_releasebuffer = tensor_releasebuffer,
};
