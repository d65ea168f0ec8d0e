/* cuda_module.c -- the device model's bindings: _C._cuda_current_device, _cuda_set_device,
 * _cuda_synchronize, _cuda_get_device_properties.  Mirrors torch/csrc/cuda/Module.cpp.  Each
 * initialises CUDA first (Note [CUDA availability] in src/cuda/lazy_init.c), so without a CUDA
 * backend each raises the no-CUDA error. */
#include "ptlpy.h"

#include "../cuda/cuda_api.h"

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

static PyMethodDef cuda_functions[] = {
    {"_cuda_current_device", py_current_device, METH_NOARGS, NULL},
    {"_cuda_set_device", py_set_device, METH_O, NULL},
    {"_cuda_synchronize", py_synchronize, METH_O, NULL},
    {"_cuda_get_device_properties", py_get_device_properties, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

int
ptlpy_cuda_init(PyObject *module)
{
    return PyModule_AddFunctions(module, cuda_functions);
}
