/* cuda_module.c -- the device model's bindings: _C._cuda_current_device, _cuda_set_device,
 * _cuda_synchronize, _cuda_get_device_properties.  Mirrors torch/csrc/cuda/Module.cpp.  Each
 * initialises CUDA first (Note [CUDA availability] in src/cuda/lazy_init.c), so without a CUDA
 * backend each raises the no-CUDA error.  Also the host hooks of the pointwise kernels'
 * offset calculator and launch geometry (_cuda_offsets_for_testing, _cuda_launch_for_testing),
 * their dtype table (_cuda_pointwise_dtypes_for_testing), and the reduction kernels' host
 * emulation (_cuda_kernel_emulation), which need no device. */
#include "ptlpy.h"

#include "../cuda/cuda_api.h"
#include "../cuda/gemm_plan.h"

static PyObject *
py_current_device(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    int device = 0;
    if (ptl_cuda_lazy_init() < 0 || ptl_cuda_current_device(&device) < 0) {
        return ptlpy_raise();
    }
    return PyLong_FromLong(device);
}

static PyObject *
py_set_device(PyObject *m, PyObject *arg)
{
    (void)m;
    int device = PyLong_AsLong(arg);
    if (device == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (ptl_cuda_lazy_init() < 0 || ptl_cuda_set_device(device) < 0) {
        return ptlpy_raise();
    }
    Py_RETURN_NONE;
}

static PyObject *
py_synchronize(PyObject *m, PyObject *arg)
{
    (void)m;
    int device = PyLong_AsLong(arg);
    int status;
    if (device == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (ptl_cuda_lazy_init() < 0) {
        return ptlpy_raise();
    }
    Py_BEGIN_ALLOW_THREADS
    status = ptl_cuda_synchronize(device);
    Py_END_ALLOW_THREADS
    if (status < 0) {
        return ptlpy_raise();
    }
    Py_RETURN_NONE;
}

/* A dict of cudaDeviceProp's fields that torch.cuda's _CudaDeviceProperties shows. */
static PyObject *
py_get_device_properties(PyObject *m, PyObject *arg)
{
    (void)m;
    PtlCudaDeviceProperties p;
    int device = PyLong_AsLong(arg);
    if (device == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (ptl_cuda_lazy_init() < 0 || ptl_cuda_get_device_properties(device, &p) < 0) {
        return ptlpy_raise();
    }
    return Py_BuildValue("{s:s,s:n,s:i,s:i,s:i,s:i,s:i,s:i}", "name", p.name, "total_memory",
                         (Py_ssize_t)p.total_memory, "major", p.major, "minor", p.minor,
                         "multi_processor_count", p.multi_processor_count, "L2_cache_size",
                         p.l2_cache_size, "warp_size", p.warp_size,
                         "max_threads_per_multi_processor", p.max_threads_per_multi_processor);
}


/* A PtlCudaLoopArgs from Python lists in the tensor's order (outermost dim first): sizes, one
 * stride list per operand, and optionally one address per operand.  0, or -1 with a Python
 * error set. */
static int
loop_args_from_lists(PyObject *sizes, PyObject *strides, PyObject *addresses,
                     PtlCudaLoopArgs *a)
{
    memset(a, 0, sizeof(*a));
    Py_ssize_t ndim = PySequence_Size(sizes), nt = PySequence_Size(strides);
    if (ndim < 0 || nt < 0) {
        return -1;
    }
    if (ndim > PTL_CUDA_MAX_DIMS || nt < 1 || nt > PTL_CUDA_MAX_OPERANDS) {
        PyErr_SetString(PyExc_ValueError, "too many dimensions or operands");
        return -1;
    }
    a->ndim = (int32_t)ndim;
    a->ntensors = (int32_t)nt;
    a->numel = 1;
    for (Py_ssize_t d = 0; d < ndim; d++) {
        PyObject *v = PySequence_GetItem(sizes, d);
        a->sizes[ndim - 1 - d] = v != NULL ? PyLong_AsLongLong(v) : -1;
        Py_XDECREF(v);
        a->numel *= a->sizes[ndim - 1 - d];
    }
    for (Py_ssize_t t = 0; t < nt; t++) {
        PyObject *row = PySequence_GetItem(strides, t);
        if (row == NULL || PySequence_Size(row) != ndim) {
            Py_XDECREF(row);
            PyErr_SetString(PyExc_ValueError, "each operand needs one stride per dimension");
            return -1;
        }
        for (Py_ssize_t d = 0; d < ndim; d++) {
            PyObject *v = PySequence_GetItem(row, d);
            a->strides[t][ndim - 1 - d] = v != NULL ? PyLong_AsLongLong(v) : -1;
            Py_XDECREF(v);
        }
        Py_DECREF(row);
        if (addresses != NULL) {
            PyObject *v = PySequence_GetItem(addresses, t);
            a->data[t] = v != NULL ? (char *)(uintptr_t)PyLong_AsUnsignedLongLong(v) : NULL;
            Py_XDECREF(v);
        }
    }
    return PyErr_Occurred() ? -1 : 0;
}

/* _cuda_offsets_for_testing(sizes, strides, linear) -> the byte offset of each operand at
 * element `linear` (row-major over sizes), from the offset calculator the kernels run. */
static PyObject *
py_offsets_for_testing(PyObject *m, PyObject *args)
{
    (void)m;
    PyObject *sizes, *strides;
    long long linear;
    PtlCudaLoopArgs a;
    int64_t off[PTL_CUDA_MAX_OPERANDS];
    if (!PyArg_ParseTuple(args, "OOL", &sizes, &strides, &linear) ||
        loop_args_from_lists(sizes, strides, NULL, &a) < 0) {
        return NULL;
    }
    if (linear < 0 || linear >= a.numel) {
        PyErr_SetString(PyExc_IndexError, "linear index out of range");
        return NULL;
    }
    ptl_cuda_offsets(&a, linear, off);
    PyObject *out = PyTuple_New(a.ntensors);
    for (int t = 0; out != NULL && t < a.ntensors; t++) {
        PyTuple_SET_ITEM(out, t, PyLong_FromLongLong(off[t]));
    }
    return out;
}

/* _cuda_launch_for_testing(sizes, strides, addresses, itemsize, max_blocks) ->
 * (grid, block, vec): the launch of a pointwise kernel over operands at those addresses. */
static PyObject *
py_launch_for_testing(PyObject *m, PyObject *args)
{
    (void)m;
    PyObject *sizes, *strides, *addresses;
    long long itemsize, max_blocks;
    PtlCudaLoopArgs a;
    if (!PyArg_ParseTuple(args, "OOOLL", &sizes, &strides, &addresses, &itemsize,
                          &max_blocks) ||
        loop_args_from_lists(sizes, strides, addresses, &a) < 0) {
        return NULL;
    }
    if (itemsize < 1 || itemsize > 16 || max_blocks < 1) {
        PyErr_SetString(PyExc_ValueError, "itemsize must be in [1, 16] and max_blocks >= 1");
        return NULL;
    }
    PtlCudaLaunch l = ptl_cuda_launch_geometry(&a, itemsize, max_blocks);
    return Py_BuildValue("(Lii)", (long long)l.grid, l.block, l.vec);
}

/* _cuda_pointwise_dtypes_for_testing() -> one tuple per pointwise kernel (cuda_api.h's
 * PtlCudaPointwiseOp order) of the dtype names ptl_cuda_pointwise_takes accepts for it. */
static PyObject *
py_pointwise_dtypes_for_testing(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    PyObject *all = PyList_New(PTL_CUDA_OP_COUNT);
    for (int op = 0; all != NULL && op < PTL_CUDA_OP_COUNT; op++) {
        PyObject *names = PyList_New(0);
        for (int dt = 0; names != NULL && dt < PTL_DTYPE_COUNT; dt++) {
            if (!ptl_cuda_pointwise_takes((PtlCudaPointwiseOp)op, dt)) {
                continue;
            }
            PyObject *name = PyUnicode_FromString(ptl_dtype_name((PtlDtype)dt));
            if (name == NULL || PyList_Append(names, name) < 0) {
                Py_CLEAR(names);
            }
            Py_XDECREF(name);
        }
        PyObject *t = names != NULL ? PyList_AsTuple(names) : NULL;
        Py_XDECREF(names);
        if (t == NULL) {
            Py_CLEAR(all);
            break;
        }
        PyList_SET_ITEM(all, op, t);
    }
    return all;
}

/* The plans' names in the dict of what ran, in cuda_api.h's PTL_CUDA_EMU_* order */
static const char *const emulation_names[PTL_CUDA_EMU_COUNT] = {
    "block_per_output", "thread_per_output", "split", "softmax_block_per_line",
    "softmax_thread_per_line", "layer_norm", "layer_norm_split", "nll_loss", "embedding",
    "random", "optim", "gather", "scatter", "scatter_chunked", "index_gather", "index_scatter",
    "cat", "conv", "conv_split", "pool", "attention", "sort",
    "unpool", "select", "take", "shape_gather", "triangle", "scan", "batch_norm",
    "batch_norm_split", "resample", "fold", "grid_sampler", "rnn_cell", "search",
};

/* _cuda_kernel_emulation(tuning) with tuning (max_threads, target_blocks, max_grid,
 * min_chunk): reductions, softmax, layer norm, nll_loss, embedding, the random fills, the
 * fused optimizer steps, gather, scatter, advanced indexing, cat, the convolutions, the
 * poolings and the fused attention of CPU tensors run the CUDA kernels (reduce.cu, nn.cu,
 * random.cu, optim.cu, index.cu, conv.cu, pool.cu, attention.cu) emulated on the host under
 * that tuning, until _cuda_kernel_emulation(None), which returns what ran (a dict of counts
 * by plan).  For the tests of the plans. */
static PyObject *
py_kernel_emulation(PyObject *m, PyObject *arg)
{
    (void)m;
    PtlCudaReduceTuning t;
    long long max_threads;
    if (arg == Py_None) {
        int64_t c[PTL_CUDA_EMU_COUNT];
        ptl_cuda_kernel_emulation_counts(c);
        ptl_cuda_set_kernel_emulation(NULL);
        PyObject *ran = PyDict_New();
        for (int i = 0; ran != NULL && i < PTL_CUDA_EMU_COUNT; i++) {
            PyObject *v = PyLong_FromLongLong((long long)c[i]);
            if (v == NULL || PyDict_SetItemString(ran, emulation_names[i], v) < 0) {
                Py_XDECREF(v);
                Py_CLEAR(ran);
                break;
            }
            Py_DECREF(v);
        }
        return ran;
    }
    if (!PyArg_ParseTuple(arg, "LLLL", &max_threads, &t.target_blocks, &t.max_grid,
                          &t.min_chunk)) {
        return NULL;
    }
    if (max_threads < 32 || max_threads > 1024 || (max_threads & (max_threads - 1)) != 0 ||
        t.target_blocks < 1 || t.max_grid < 1 || t.min_chunk < 1) {
        PyErr_SetString(PyExc_ValueError, "max_threads must be a power of two in [32, 1024] "
                                          "and the other figures positive");
        return NULL;
    }
    t.max_threads = (int32_t)max_threads;
    ptl_cuda_set_kernel_emulation(&t);
    Py_RETURN_NONE;
}

/* _cuda_gemm_emulation((sms, max_grid_yz)): matrix products of CPU tensors run gemm.cu's
 * kernels emulated on the host, planned for a device of sms multiprocessors and a grid of at
 * most max_grid_yz blocks in y and z, until _cuda_gemm_emulation(None), which returns what
 * ran (a dict of counts by kernel).  For the tests of the plan. */
static PyObject *
py_gemm_emulation(PyObject *m, PyObject *arg)
{
    (void)m;
    long long sms, max_grid;
    if (arg == Py_None) {
        int64_t c[PTL_CUDA_GEMM_KINDS];
        ptl_cuda_gemm_emulation_counts(c);
        ptl_cuda_set_gemm_emulation(0, 0);
        return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L}", "simt_large",
                             (long long)c[PTL_CUDA_GEMM_SIMT_LARGE], "simt_small",
                             (long long)c[PTL_CUDA_GEMM_SIMT_SMALL], "tensor_core",
                             (long long)c[PTL_CUDA_GEMM_TENSOR_CORE], "simt_vector",
                             (long long)c[PTL_CUDA_GEMM_SIMT_VECTOR], "mma",
                             (long long)c[PTL_CUDA_GEMM_MMA]);
    }
    if (!PyArg_ParseTuple(arg, "LL", &sms, &max_grid)) {
        return NULL;
    }
    if (sms < 1 || max_grid < 1 || max_grid > PTL_CUDA_GEMM_MAX_GRID_YZ) {
        PyErr_SetString(PyExc_ValueError, "sms must be positive and max_grid_yz in [1, 65535]");
        return NULL;
    }
    ptl_cuda_set_gemm_emulation(sms, max_grid);
    Py_RETURN_NONE;
}

static PyMethodDef cuda_functions[] = {
    {"_cuda_kernel_emulation", py_kernel_emulation, METH_O, NULL},
    {"_cuda_gemm_emulation", py_gemm_emulation, METH_O, NULL},
    {"_cuda_current_device", py_current_device, METH_NOARGS, NULL},
    {"_cuda_set_device", py_set_device, METH_O, NULL},
    {"_cuda_synchronize", py_synchronize, METH_O, NULL},
    {"_cuda_get_device_properties", py_get_device_properties, METH_O, NULL},
    {"_cuda_offsets_for_testing", py_offsets_for_testing, METH_VARARGS, NULL},
    {"_cuda_launch_for_testing", py_launch_for_testing, METH_VARARGS, NULL},
    {"_cuda_pointwise_dtypes_for_testing", py_pointwise_dtypes_for_testing, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

int
ptlpy_cuda_init(PyObject *module)
{
    return PyModule_AddFunctions(module, cuda_functions);
}
