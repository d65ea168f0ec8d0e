/* shared_memory.c -- the Python bindings of shared-memory storages and of the CUDA fork
 * guard, used by pytorchlite.multiprocessing and pytorchlite.utils.data.  Mirrors
 * torch/csrc/StorageSharing.cpp (_share_fd_cpu_, _new_shared_fd_cpu) and the fork half of
 * torch/csrc/cuda/Module.cpp.  See Note [Shared memory lifetime] (src/c10/storage_shm.c) and
 * Note [CUDA and fork] (src/cuda/lazy_init.c). */
#include "ptlpy.h"

#include <unistd.h>

#include "../c10/storage_shm.h"
#include "../cuda/cuda_api.h"

static PtlTensorImpl *
tensor_arg(PyObject *o, const char *fname)
{
    if (!PtlPyTensor_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s(): expected a Tensor, got %s", fname,
                     Py_TYPE(o)->tp_name);
        return NULL;
    }
    return PTLPY_IMPL(o);
}

/* Reads a sequence of at most PTL_MAX_DIMS ints; its length, or -1 with an error set. */
static int
int_list(PyObject *o, int64_t *out, const char *what)
{
    PyObject *seq = PySequence_Fast(o, "expected a sequence of ints");
    if (seq == NULL) {
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > PTL_MAX_DIMS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "%s: at most %d dimensions are supported, got %zd",
                     what, PTL_MAX_DIMS, n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
        if (out[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    return (int)n;
}

/* _share_memory_(tensor): moves the tensor's storage into shared memory, in place. */
PyObject *
ptlpy_share_memory(PyObject *m, PyObject *arg)
{
    (void)m;
    PtlTensorImpl *t = tensor_arg(arg, "_share_memory_");
    if (t == NULL) {
        return NULL;
    }
    if (ptl_storage_share(t->storage) < 0) {
        return ptlpy_raise();
    }
    Py_RETURN_NONE;
}

PyObject *
ptlpy_is_shared(PyObject *m, PyObject *arg)
{
    (void)m;
    PtlTensorImpl *t = tensor_arg(arg, "_is_shared");
    if (t == NULL) {
        return NULL;
    }
    return PyBool_FromLong(ptl_storage_is_shared(t->storage));
}

/* _shared_fd(tensor) -> (fd, storage nbytes); fd is owned by the storage (dup to keep). */
PyObject *
ptlpy_shared_fd(PyObject *m, PyObject *arg)
{
    (void)m;
    PtlTensorImpl *t = tensor_arg(arg, "_shared_fd");
    if (t == NULL) {
        return NULL;
    }
    if (!ptl_storage_is_shared(t->storage)) {
        PyErr_SetString(PyExc_RuntimeError, "_shared_fd(): the tensor is not in shared memory; "
                        "call share_memory_() first");
        return NULL;
    }
    return Py_BuildValue("(in)", ptl_storage_shared_fd(t->storage),
                         (Py_ssize_t)t->storage->nbytes);
}

/* _tensor_from_shared_fd(fd, nbytes) -> a 1-D uint8 tensor over the whole segment; the fd is
 * stolen (closed on error too). */
PyObject *
ptlpy_tensor_from_shared_fd(PyObject *m, PyObject *args)
{
    int fd;
    Py_ssize_t nbytes;
    (void)m;
    if (!PyArg_ParseTuple(args, "in:_tensor_from_shared_fd", &fd, &nbytes)) {
        return NULL;
    }
    if (nbytes < 0) {
        if (fd >= 0) {
            close(fd);
        }
        PyErr_Format(PyExc_ValueError, "_tensor_from_shared_fd(): negative size %zd", nbytes);
        return NULL;
    }
    PtlStorage *s = ptl_storage_from_shared_fd(fd, (size_t)nbytes);
    if (s == NULL) {
        return ptlpy_raise();
    }
    int64_t n = nbytes;
    PtlTensorImpl *t = ptl_tensor_impl_new(s, PTL_DTYPE_UINT8, 1, &n, NULL, 0);
    if (t == NULL) {
        return ptlpy_raise();
    }
    return ptlpy_wrap(t);
}

/* _new_shared(sizes, dtype) -> a zero-filled contiguous tensor in a new segment. */
PyObject *
ptlpy_new_shared(PyObject *m, PyObject *args)
{
    PyObject *sizes_o, *dtype_o;
    int64_t sizes[PTL_MAX_DIMS];
    size_t nbytes;
    (void)m;
    if (!PyArg_ParseTuple(args, "OO:_new_shared", &sizes_o, &dtype_o)) {
        return NULL;
    }
    int dim = int_list(sizes_o, sizes, "_new_shared");
    PtlDtype dt = ptlpy_parse_dtype(dtype_o, 1);
    if (dim < 0 || dt == PTL_DTYPE_UNDEFINED) {
        return NULL;
    }
    if (ptl_storage_nbytes(dim, sizes, NULL, 0, ptl_dtype_itemsize(dt), &nbytes) < 0) {
        return ptlpy_raise();
    }
    PtlStorage *s = ptl_storage_new_shared(nbytes);
    if (s == NULL) {
        return ptlpy_raise();
    }
    PtlTensorImpl *t = ptl_tensor_impl_new(s, dt, dim, sizes, NULL, 0);
    if (t == NULL) {
        return ptlpy_raise();
    }
    return ptlpy_wrap(t);
}

/* _tensor_on_storage(src, dtype, sizes, strides, offset) -> a tensor on src's storage with
 * that geometry (the receiving half of a shared tensor), checked against the storage size. */
PyObject *
ptlpy_tensor_on_storage(PyObject *m, PyObject *args)
{
    PyObject *src_o, *dtype_o, *sizes_o, *strides_o;
    long long offset;
    int64_t sizes[PTL_MAX_DIMS], strides[PTL_MAX_DIMS], numel;
    (void)m;
    if (!PyArg_ParseTuple(args, "OOOOL:_tensor_on_storage", &src_o, &dtype_o, &sizes_o,
                          &strides_o, &offset)) {
        return NULL;
    }
    PtlTensorImpl *src = tensor_arg(src_o, "_tensor_on_storage");
    if (src == NULL) {
        return NULL;
    }
    int dim = int_list(sizes_o, sizes, "_tensor_on_storage");
    int sdim = dim < 0 ? -1 : int_list(strides_o, strides, "_tensor_on_storage");
    PtlDtype dt = sdim < 0 ? PTL_DTYPE_UNDEFINED : ptlpy_parse_dtype(dtype_o, 1);
    if (dt == PTL_DTYPE_UNDEFINED) {
        return NULL;
    }
    if (sdim != dim) {
        PyErr_Format(PyExc_ValueError, "_tensor_on_storage(): %d sizes but %d strides", dim,
                     sdim);
        return NULL;
    }
    if (ptl_check_sizes(dim, sizes, &numel) < 0) {
        return ptlpy_raise();
    }
    /* The last element's index, in elements from the storage start. */
    uint64_t last = 0;
    int bad = offset < 0 || offset > ((int64_t)1 << 56);
    for (int i = 0; i < dim && !bad && numel > 0; i++) {
        bad = strides[i] < 0 || strides[i] > ((int64_t)1 << 56);
        last += (uint64_t)(sizes[i] - 1) * (uint64_t)strides[i];
        bad = bad || last > ((uint64_t)1 << 60);
    }
    size_t item = ptl_dtype_itemsize(dt);
    if (bad || (numel > 0 && ((uint64_t)offset + last + 1) * item > src->storage->nbytes)) {
        PyErr_Format(PyExc_RuntimeError, "_tensor_on_storage(): the geometry (offset %lld) is "
                     "out of bounds for a storage of %zu bytes", offset, src->storage->nbytes);
        return NULL;
    }
    ptl_storage_incref(src->storage);
    PtlTensorImpl *t = ptl_tensor_impl_new(src->storage, dt, dim, sizes, strides, offset);
    if (t == NULL) {
        return ptlpy_raise();
    }
    return ptlpy_wrap(t);
}

PyObject *
ptlpy_cuda_lazy_init(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    if (ptl_cuda_lazy_init() < 0) {
        return ptlpy_raise();
    }
    Py_RETURN_NONE;
}

/* Test hook: sets the "CUDA initialised" flag without a device (Note [CUDA and fork]). */
PyObject *
ptlpy_cuda_mark_initialized(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    ptl_cuda_mark_initialized();
    Py_RETURN_NONE;
}

PyObject *
ptlpy_cuda_is_initialized(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyBool_FromLong(ptl_cuda_is_initialized());
}

PyObject *
ptlpy_cuda_in_bad_fork(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyBool_FromLong(ptl_cuda_in_bad_fork());
}
