// graph.cu -- CUDA graphs: stream capture, instantiation and launch.  Mirrors the runtime
// calls of at/cuda/CUDAGraph.cpp.
//
// Note [CUDA graphs]
// ~~~~~~~~~~~~~~~~~~
// A CUDA graph records the kernels and copies queued on a stream between begin and end of
// a capture, and a replay launches them all with one call, with the arguments they were
// captured with: the same addresses, the same scalars.  pytorchlite/cuda/graphs.py builds
// PyTorch's CUDAGraph on these calls, and three things make a replay right:
// - Memory: while a stream is captured, its allocations come from the graph's private pool
//   (Note [Private pools] in src/c10/caching_allocator.c), so no other tensor is ever given
//   an address that a replay writes to.
// - Random numbers: a random launch captured while its generator is in the graph reads its
//   seed and offset from memory that replay() rewrites (Note [Graph-safe Philox] in
//   src/aten/philox.h), so each replay draws fresh numbers, those eager launches from the
//   same generator state would draw.
// - The host: work that needs the host in the middle (a copy back and a wait, host-side
//   sampling, the status words of the index kernels) cannot be captured.  The CUDA runtime
//   refuses a synchronisation on a capturing stream ("operation not permitted when stream
//   is capturing", and the capture is invalidated, as in PyTorch), and the host-side
//   samplers refuse a generator that a graph captures with the same message; nothing is
//   silently baked into the graph.
// The capture mode is the runtime's: "global" (the default, PyTorch's) makes any thread's
// unsafe call (cudaMalloc is allowed, cudaFree and synchronisations are not) an error
// during the capture.  Every call here reports a CUDA error through ptl_error_set.
#include <cuda_runtime.h>

#include "../c10/error.h"
#include "graph_api.h"
#include "stream_api.h"

static int
check(cudaError_t err, const char *what)
{
    return ptl_cuda_check((int)err, what);
}

// ORDER CAPTURE_MODE
static const cudaStreamCaptureMode capture_modes[] = {
    cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal,
    cudaStreamCaptureModeRelaxed};

extern "C" int ptl_cuda_stream_begin_capture(PtlStreamId stream, int mode)
{
    if (mode < PTL_CUDA_CAPTURE_GLOBAL || mode > PTL_CUDA_CAPTURE_RELAXED) {
        return ptl_error_set(PTL_ERR_VALUE, "unknown capture mode %d", mode);
    }
    return check(cudaStreamBeginCapture((cudaStream_t)stream, capture_modes[mode]),
                 "cudaStreamBeginCapture");
}

extern "C" int ptl_cuda_stream_end_capture(PtlStreamId stream, void **graph)
{
    cudaGraph_t g = NULL;
    int status = check(cudaStreamEndCapture((cudaStream_t)stream, &g), "cudaStreamEndCapture");
    *graph = (void *)g;
    return status;
}

extern "C" int ptl_cuda_stream_is_capturing(PtlStreamId stream, int *capturing)
{
    cudaStreamCaptureStatus s = cudaStreamCaptureStatusNone;
    int status = check(cudaStreamIsCapturing((cudaStream_t)stream, &s), "cudaStreamIsCapturing");
    *capturing = s == cudaStreamCaptureStatusActive;
    return status;
}

extern "C" int ptl_cuda_graph_instantiate(void *graph, void **exec)
{
    cudaGraphExec_t e = NULL;
    int status = check(cudaGraphInstantiateWithFlags(&e, (cudaGraph_t)graph, 0),
                       "cudaGraphInstantiate");
    *exec = (void *)e;
    return status;
}

extern "C" int ptl_cuda_graph_launch(void *exec, PtlStreamId stream)
{
    return check(cudaGraphLaunch((cudaGraphExec_t)exec, (cudaStream_t)stream),
                 "cudaGraphLaunch");
}

extern "C" int ptl_cuda_graph_debug_dump(void *graph, const char *path)
{
    return check(cudaGraphDebugDotPrint((cudaGraph_t)graph, path,
                                        cudaGraphDebugDotFlagsVerbose),
                 "cudaGraphDebugDotPrint");
}

extern "C" void ptl_cuda_graph_destroy(void *graph)
{
    if (graph != NULL && cudaGraphDestroy((cudaGraph_t)graph) != cudaSuccess) {
        cudaGetLastError();
    }
}

extern "C" void ptl_cuda_graph_exec_destroy(void *exec)
{
    if (exec != NULL && cudaGraphExecDestroy((cudaGraphExec_t)exec) != cudaSuccess) {
        cudaGetLastError();
    }
}
