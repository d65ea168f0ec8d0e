/* pointwise_dtypes.h -- which dtypes each pointwise kernel takes (Note [CUDA integer
 * pointwise] in elementwise.cu): one list, expanded by elementwise.cu into the integer
 * kernels' instantiations and by pointwise_dtypes.c into ptl_cuda_pointwise_takes, which
 * register_cuda.c asks before a launch and the CPU tests check (in every build). */
#ifndef PTL_CUDA_POINTWISE_DTYPES_H
#define PTL_CUDA_POINTWISE_DTYPES_H

#include "cuda_api.h"

/* _(op, whether it takes the float dtypes too): the ops that take uint8, int8, int16, int32
 * and int64 (bool: PTL_FORALL_BOOL_OPS); every op not listed takes the float dtypes alone */
#define PTL_FORALL_INT_OPS(_)                                                             \
    _(PTL_CUDA_OP_ADD, 1) _(PTL_CUDA_OP_MUL, 1) _(PTL_CUDA_OP_NEG, 1) _(PTL_CUDA_OP_RELU, 1) \
    _(PTL_CUDA_OP_ABS, 1) _(PTL_CUDA_OP_SIGN, 1) _(PTL_CUDA_OP_GCD, 0) _(PTL_CUDA_OP_LCM, 0) \
    _(PTL_CUDA_OP_MATH, 1) _(PTL_CUDA_OP_MATH2, 1) _(PTL_CUDA_OP_MATH3, 1)                 \
    _(PTL_CUDA_OP_PREDICATE, 1)

/* _(op): the integer ops that take bool too, run by their uint8 kernel (bool is 0 or 1) */
#define PTL_FORALL_BOOL_OPS(_)                                                            \
    _(PTL_CUDA_OP_MATH) _(PTL_CUDA_OP_MATH2) _(PTL_CUDA_OP_MATH3) _(PTL_CUDA_OP_PREDICATE)

#endif
