/* graph_api.h -- CUDA graphs as the C core sees them: stream capture, instantiation, launch
 * and destruction over opaque handles (cudaGraph_t, cudaGraphExec_t), extern "C" like
 * stream_api.h.  graph.cu holds the CUDA calls, graph_stub.c their CPU-only build.  Mirrors
 * the runtime calls of at/cuda/CUDAGraph.cpp; the bookkeeping (private pools, generators)
 * is pytorchlite/cuda/graphs.py's over caching_allocator.h and generator.h.  See Note [CUDA
 * graphs] in graph.cu. */
#ifndef PTL_CUDA_GRAPH_API_H
#define PTL_CUDA_GRAPH_API_H

#include "../c10/caching_allocator.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ORDER CAPTURE_MODE: cudaStreamCaptureMode's values and torch.cuda.graph's names
 * ("global", "thread_local", "relaxed") */
enum { PTL_CUDA_CAPTURE_GLOBAL, PTL_CUDA_CAPTURE_THREAD_LOCAL, PTL_CUDA_CAPTURE_RELAXED };

/* Starts capturing the work queued on stream (cudaStreamBeginCapture); 0 or -1. */
int ptl_cuda_stream_begin_capture(PtlStreamId stream, int mode);
/* Ends the capture: *graph receives the captured graph; 0, or -1 with an error (the
 * capture was invalidated by an operation it does not permit). */
int ptl_cuda_stream_end_capture(PtlStreamId stream, void **graph);
/* *capturing = 1 while stream is being captured (cudaStreamIsCapturing); 0 or -1. */
int ptl_cuda_stream_is_capturing(PtlStreamId stream, int *capturing);
/* An executable graph of graph (cudaGraphInstantiate); 0 or -1. */
int ptl_cuda_graph_instantiate(void *graph, void **exec);
/* Queues the executable graph's work on stream (cudaGraphLaunch); 0 or -1. */
int ptl_cuda_graph_launch(void *exec, PtlStreamId stream);
/* Writes graph as Graphviz dot to path (cudaGraphDebugDotPrint); 0 or -1. */
int ptl_cuda_graph_debug_dump(void *graph, const char *path);
void ptl_cuda_graph_destroy(void *graph);            /* NULL: nothing */
void ptl_cuda_graph_exec_destroy(void *exec);        /* NULL: nothing */

#ifdef __cplusplus
}
#endif
#endif
