/* launch_geometry.h -- the offset calculator and launch geometry of the pointwise kernels,
 * compiled twice: by nvcc for the device (elementwise.cu) and by gcc for the host
 * (launch_geometry.c), so that host tests check the arithmetic the kernels run.  Mirrors
 * ATen/cuda/detail/OffsetCalculator.cuh and the launch of ATen/native/cuda/Loops.cuh.
 * See Note [CUDA elementwise launch] in elementwise.cu. */
#ifndef PTL_CUDA_LAUNCH_GEOMETRY_H
#define PTL_CUDA_LAUNCH_GEOMETRY_H

#include <stdint.h>

#include "../c10/macros.h"
#include "cuda_api.h"

#define PTL_CUDA_BLOCK_SIZE 256
/* the widest load: 16 bytes (float4, double2, eight halves) */
#define PTL_CUDA_MAX_VECTOR_BYTES 16

/* Byte offsets of every operand at element `linear`: linear = i0 + s0 (i1 + s1 (i2 + ...))
 * with dim 0 fastest, offset[t] = sum_d i_d strides[t][d].  Needs linear < a->numel (so
 * that no size is 0). */
PTL_HD static inline void
ptl_cuda_offsets_at(const PtlCudaLoopArgs *a, int64_t linear, int64_t *offsets)
{
    for (int t = 0; t < a->ntensors; t++) {
        offsets[t] = 0;
    }
    for (int d = 0; d < a->ndim; d++) {
        int64_t size = a->sizes[d];
        int64_t i = linear % size;
        linear /= size;
        for (int t = 0; t < a->ntensors; t++) {
            offsets[t] += i * a->strides[t][d];
        }
    }
}

/* 1 when every operand with data is one dense row-major run of `itemsize` elements: each
 * dimension's stride is the bytes of the dimensions inside it (size-1 dimensions, and a
 * single element, have any strides). */
PTL_HD static inline int
ptl_cuda_is_contiguous(const PtlCudaLoopArgs *a, int64_t itemsize)
{
    if (a->numel <= 1) {
        return 1;
    }
    for (int t = 0; t < a->ntensors; t++) {
        int64_t expected = itemsize;
        if (a->is_scalar & (1u << t)) {
            continue;
        }
        for (int d = 0; d < a->ndim; d++) {
            if (a->sizes[d] != 1 && a->strides[t][d] != expected) {
                return 0;
            }
            expected *= a->sizes[d];
        }
    }
    return 1;
}

/* Elements per load: the widest power of two whose bytes (at most 16) divide every data
 * address, when the operands are contiguous; 1 otherwise. */
PTL_HD static inline int
ptl_cuda_vector_width(const PtlCudaLoopArgs *a, int64_t itemsize)
{
    if (!ptl_cuda_is_contiguous(a, itemsize)) {
        return 1;
    }
    int vec = (int)(PTL_CUDA_MAX_VECTOR_BYTES / itemsize);
    for (; vec > 1; vec /= 2) {
        int aligned = 1;
        for (int t = 0; t < a->ntensors; t++) {
            if (!(a->is_scalar & (1u << t)) &&
                (uint64_t)(uintptr_t)a->data[t] % (uint64_t)(vec * itemsize) != 0) {
                aligned = 0;
            }
        }
        if (aligned) {
            return vec;
        }
    }
    return 1;
}

/* Blocks of PTL_CUDA_BLOCK_SIZE threads for `units` threads' work, at most max_blocks (the
 * kernels loop over the rest); 0 when there is nothing to do. */
PTL_HD static inline int64_t
ptl_cuda_grid_for(int64_t units, int64_t max_blocks)
{
    int64_t grid = (units + PTL_CUDA_BLOCK_SIZE - 1) / PTL_CUDA_BLOCK_SIZE;
    return grid < max_blocks ? grid : max_blocks;
}

/* The launch of a pointwise kernel: one thread per vector of `vec` elements (the last one
 * may be partial). */
PTL_HD static inline PtlCudaLaunch
ptl_cuda_launch_for(const PtlCudaLoopArgs *a, int64_t itemsize, int64_t max_blocks)
{
    PtlCudaLaunch l;
    l.block = PTL_CUDA_BLOCK_SIZE;
    l.vec = ptl_cuda_vector_width(a, itemsize);
    l.grid = ptl_cuda_grid_for((a->numel + l.vec - 1) / l.vec, max_blocks);
    return l;
}

#endif
