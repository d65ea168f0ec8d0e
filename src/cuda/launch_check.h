// launch_check.h -- the check after a kernel launch in the .cu launchers: a launch error
// (bad configuration, no kernel image for the device) becomes the project's error and the
// launcher returns -1; a fault inside a kernel surfaces at the next synchronising call.
// Also the grid-stride loop of the one-unit-per-thread kernels (ptl_cuda_emulate_elems is
// its host emulation).
#ifndef PTL_CUDA_LAUNCH_CHECK_H
#define PTL_CUDA_LAUNCH_CHECK_H

#include <cuda_runtime.h>

#include "../c10/error.h"
#include "stream_api.h"

#define PTL_CUDA_CHECK_LAUNCH()                                                            \
    do {                                                                                   \
        cudaError_t err_ = cudaGetLastError();                                             \
        if (err_ != cudaSuccess) {                                                         \
            return ptl_error_set(PTL_ERR_RUNTIME, "CUDA error: %s (%s:%d)",                \
                                 cudaGetErrorString(err_), __FILE__, __LINE__);            \
        }                                                                                  \
    } while (0)

// The stream kernels launch on: the calling thread's current stream of the current device
// (Note [Current stream] in stream_state.c).
static inline cudaStream_t
ptl_cuda_launch_stream(void)
{
    return (cudaStream_t)ptl_cuda_current_stream_here();
}

// j over [0, n) as a grid-stride loop: thread t of block x takes x block + t, then a grid's
// width of threads further on
#define PTL_GRID_LOOP(j, n)                                                                \
    for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < (n);             \
         j += (int64_t)gridDim.x * blockDim.x)

#endif
