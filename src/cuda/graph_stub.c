/* graph_stub.c -- the CUDA graph entry points of a CPU-only build (no nvcc): each fails
 * with PyTorch's error.  With nvcc, graph.cu provides them and this file compiles to
 * nothing. */
#include "graph_api.h"

#include "../c10/error.h"

#ifndef PTL_WITH_CUDA
static int
not_built(void)
{
    return ptl_error_set(PTL_ERR_RUNTIME, "Torch not compiled with CUDA enabled");
}

int
ptl_cuda_stream_begin_capture(PtlStreamId stream, int mode)
{
    (void)stream;
    (void)mode;
    return not_built();
}

int
ptl_cuda_stream_end_capture(PtlStreamId stream, void **graph)
{
    (void)stream;
    *graph = NULL;
    return not_built();
}

int
ptl_cuda_stream_is_capturing(PtlStreamId stream, int *capturing)
{
    (void)stream;
    *capturing = 0;
    return not_built();
}

int
ptl_cuda_graph_instantiate(void *graph, void **exec)
{
    (void)graph;
    *exec = NULL;
    return not_built();
}

int
ptl_cuda_graph_launch(void *exec, PtlStreamId stream)
{
    (void)exec;
    (void)stream;
    return not_built();
}

int
ptl_cuda_graph_debug_dump(void *graph, const char *path)
{
    (void)graph;
    (void)path;
    return not_built();
}

void
ptl_cuda_graph_destroy(void *graph)
{
    (void)graph;
}

void
ptl_cuda_graph_exec_destroy(void *exec)
{
    (void)exec;
}
#endif
