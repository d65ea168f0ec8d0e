/* shape_impl.h -- what shape.c shares with shape_device.c, its glue to the CUDA kernels of
 * its data movers (Note [CUDA masked_fill and take] in src/cuda/index_plan.h) and its
 * compositions of device kernels. */
#ifndef PTL_ATEN_NATIVE_SHAPE_IMPL_H
#define PTL_ATEN_NATIVE_SHAPE_IMPL_H

#include <stdint.h>

#include "native.h"

/* 1 when t's mover runs on the CUDA kernels: a CUDA tensor, or the kernels emulated */
int shape_on_device(const PtlTensorImpl *t);
/* out (contiguous, dim sizes, not empty) gathered from t through the offset tables tab (the
 * dims' tables one after the other; Note [Gather by offset tables]).  0, or -1. */
int shape_gather_device(PtlTensorImpl *out, const PtlTensorImpl *t, const int64_t *tab,
                        int dim, const int64_t *sizes);
/* dst[i0..ik] (element strides dst_strides) = *(src + sum_d tab[d][i_d]) for every index of
 * `sizes` (dim of them), elements of isz bytes (shape_gather.c; Note [Gather by offset
 * tables]) */
void shape_gather_copy(char *dst, const int64_t *dst_strides, const char *src,
                       int64_t *const *tab, int dim, const int64_t *sizes, size_t isz);
/* shape_gather_copy without a table for the innermost dim: its element i is read at
 * src + sum_{d < dim - 1} tab[d][i_d] + i * step (bytes; flip of that dim passes src at its
 * last element and a negative step).  Rows with step == -isz go by reversing permutes
 * (Note [Flip of the innermost dim] in shape_gather.c). */
void shape_gather_line(char *dst, const int64_t *dst_strides, const char *src,
                       int64_t *const *tab, int dim, const int64_t *sizes, size_t isz,
                       int64_t step);
/* perm = the dims of a tensor with strides `like` from the outermost in memory to the
 * innermost (descending strides, stable; shape_gather.c); 1 when that is the identity. */
int shape_dims_in_memory_order(const int64_t *like, int dim, int *perm);
/* Zeroes the elements of t that tril (lower) or triu with diagonal k drops.  0, or -1. */
int shape_triangle_device(PtlTensorImpl *t, int64_t k, int lower);
/* linalg_cross of a and b (checked: dim wrapped, size 3 there, one dtype) and unfold_backward
 * of g (checked) by device kernels (Note [Device cross and unfold_backward]); new ref or
 * NULL */
PtlTensorImpl *shape_cross_device(PtlTensorImpl *a, PtlTensorImpl *b, int64_t dim);
PtlTensorImpl *shape_unfold_backward_device(PtlTensorImpl *g, int nd, const int64_t *in,
                                            int64_t d, int64_t size, int64_t step);

#endif
