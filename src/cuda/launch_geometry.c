/* launch_geometry.c -- the host build of launch_geometry.h, in every build (with or without
 * nvcc), for the host tests of the arithmetic the pointwise kernels run on the device. */
#include "launch_geometry.h"

void
ptl_cuda_offsets(const PtlCudaLoopArgs *a, int64_t linear, int64_t *offsets)
{
    ptl_cuda_offsets_at(a, linear, offsets);
}

PtlCudaLaunch
ptl_cuda_launch_geometry(const PtlCudaLoopArgs *a, int64_t itemsize, int64_t max_blocks)
{
    return ptl_cuda_launch_for(a, itemsize, max_blocks);
}
