/* shape_impl.h -- what shape.c shares with shape_device.c, its glue to the CUDA kernels of
 * its data movers (Note [CUDA masked_fill and take] in src/cuda/index_plan.h). */
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
/* Zeroes the elements of t that tril (lower) or triu with diagonal k drops.  0, or -1. */
int shape_triangle_device(PtlTensorImpl *t, int64_t k, int lower);

#endif
