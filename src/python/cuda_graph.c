/* cuda_graph.c -- the bindings of CUDA graphs: _C._cuda_stream_begin_capture,
 * _cuda_stream_end_capture, _cuda_stream_is_capturing and _cuda_graph_* over the handles of
 * src/cuda/graph_api.h (plain integers: the cudaGraph_t and cudaGraphExec_t).
 * pytorchlite/cuda/graphs.py builds PyTorch's CUDAGraph on them.  Mirrors the runtime part
 * of torch/csrc/cuda/Graph.cpp.  Each initialises CUDA first, so without a device it raises
 * the no-CUDA error.  See Note [CUDA graphs] in src/cuda/graph.cu. */
#include "ptlpy.h"

#include "../cuda/cuda_api.h"
#include "../cuda/graph_api.h"

static int
parse_handle(PyObject *o, void **out)
{
    void *p = PyLong_AsVoidPtr(o);
    if (p == NULL && PyErr_Occurred()) {
        return 0;
    }
    *out = p;
    return 1;
}

static PyObject *
handle_to_py(void *h)
{
    return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)h);
}

/* _cuda_stream_begin_capture(stream, mode): mode 0 global, 1 thread_local, 2 relaxed */
static PyObject *
py_begin_capture(PyObject *m, PyObject *args)
{
    (void)m;
    void *stream;
    int mode;
    if (!PyArg_ParseTuple(args, "O&i:_cuda_stream_begin_capture", parse_handle, &stream,
                          &mode)) {
        return NULL;
    }
    if (ptl_cuda_lazy_init() < 0 ||
        ptl_cuda_stream_begin_capture((PtlStreamId)stream, mode) < 0) {
        return ptlpy_raise();
    }
    Py_RETURN_NONE;
}

/* _cuda_stream_end_capture(stream) -> the captured graph's handle */
static PyObject *
py_end_capture(PyObject *m, PyObject *arg)
{
    (void)m;
    void *stream, *graph = NULL;
    if (!parse_handle(arg, &stream)) {
        return NULL;
    }
    if (ptl_cuda_lazy_init() < 0 || ptl_cuda_stream_end_capture((PtlStreamId)stream, &graph) < 0) {
        return ptlpy_raise();
    }
    return handle_to_py(graph);
}

/* _cuda_stream_is_capturing(stream) -> bool */
static PyObject *
py_is_capturing(PyObject *m, PyObject *arg)
{
    (void)m;
    void *stream;
    int capturing = 0;
    if (!parse_handle(arg, &stream)) {
        return NULL;
    }
    if (ptl_cuda_lazy_init() < 0 ||
        ptl_cuda_stream_is_capturing((PtlStreamId)stream, &capturing) < 0) {
        return ptlpy_raise();
    }
    return PyBool_FromLong(capturing);
}

/* _cuda_graph_instantiate(graph) -> the executable graph's handle */
static PyObject *
py_instantiate(PyObject *m, PyObject *arg)
{
    (void)m;
    void *graph, *exec = NULL;
    if (!parse_handle(arg, &graph)) {
        return NULL;
    }
    if (ptl_cuda_lazy_init() < 0 || ptl_cuda_graph_instantiate(graph, &exec) < 0) {
        return ptlpy_raise();
    }
    return handle_to_py(exec);
}

/* _cuda_graph_launch(exec, stream) */
static PyObject *
py_launch(PyObject *m, PyObject *args)
{
    (void)m;
    void *exec, *stream;
    if (!PyArg_ParseTuple(args, "O&O&:_cuda_graph_launch", parse_handle, &exec, parse_handle,
                          &stream)) {
        return NULL;
    }
    if (ptl_cuda_lazy_init() < 0 || ptl_cuda_graph_launch(exec, (PtlStreamId)stream) < 0) {
        return ptlpy_raise();
    }
    Py_RETURN_NONE;
}

/* _cuda_graph_debug_dump(graph, path) */
static PyObject *
py_debug_dump(PyObject *m, PyObject *args)
{
    (void)m;
    void *graph;
    const char *path;
    if (!PyArg_ParseTuple(args, "O&s:_cuda_graph_debug_dump", parse_handle, &graph, &path)) {
        return NULL;
    }
    if (ptl_cuda_lazy_init() < 0 || ptl_cuda_graph_debug_dump(graph, path) < 0) {
        return ptlpy_raise();
    }
    Py_RETURN_NONE;
}

/* _cuda_graph_destroy(graph), _cuda_graph_exec_destroy(exec): 0 handles do nothing */
static PyObject *
py_destroy(PyObject *m, PyObject *arg)
{
    (void)m;
    void *graph;
    if (!parse_handle(arg, &graph)) {
        return NULL;
    }
    ptl_cuda_graph_destroy(graph);
    Py_RETURN_NONE;
}

static PyObject *
py_exec_destroy(PyObject *m, PyObject *arg)
{
    (void)m;
    void *exec;
    if (!parse_handle(arg, &exec)) {
        return NULL;
    }
    ptl_cuda_graph_exec_destroy(exec);
    Py_RETURN_NONE;
}

static PyMethodDef graph_functions[] = {
    {"_cuda_stream_begin_capture", py_begin_capture, METH_VARARGS, NULL},
    {"_cuda_stream_end_capture", py_end_capture, METH_O, NULL},
    {"_cuda_stream_is_capturing", py_is_capturing, METH_O, NULL},
    {"_cuda_graph_instantiate", py_instantiate, METH_O, NULL},
    {"_cuda_graph_launch", py_launch, METH_VARARGS, NULL},
    {"_cuda_graph_debug_dump", py_debug_dump, METH_VARARGS, NULL},
    {"_cuda_graph_destroy", py_destroy, METH_O, NULL},
    {"_cuda_graph_exec_destroy", py_exec_destroy, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

int
ptlpy_cuda_graph_init(PyObject *module)
{
    return PyModule_AddFunctions(module, graph_functions);
}
