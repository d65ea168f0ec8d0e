/* pointwise_dtypes.c -- ptl_cuda_pointwise_takes from pointwise_dtypes.h's list, in every
 * build (with or without nvcc), so that the CPU tests check the table register_cuda.c asks. */
#include "pointwise_dtypes.h"

int
ptl_cuda_pointwise_takes(PtlCudaPointwiseOp op, int dtype)
{
    int ints = 0, floats = 1, bools = 0;
    switch (op) {
#define TAKES_BOOL(OP)                                                                    \
    case OP:                                                                              \
        bools = 1;                                                                        \
        break;
        PTL_FORALL_BOOL_OPS(TAKES_BOOL)
#undef TAKES_BOOL
    default:
        break;
    }
    switch (op) {
#define TAKES(OP, FLOATS)                                                                 \
    case OP:                                                                              \
        ints = 1;                                                                         \
        floats = (FLOATS);                                                                \
        break;
        PTL_FORALL_INT_OPS(TAKES)
#undef TAKES
    default:
        break;
    }
    switch (dtype) {
    case PTL_DTYPE_FLOAT32: case PTL_DTYPE_FLOAT64: case PTL_DTYPE_FLOAT16:
    case PTL_DTYPE_BFLOAT16:
        return floats;
    case PTL_DTYPE_UINT8: case PTL_DTYPE_INT8: case PTL_DTYPE_INT16: case PTL_DTYPE_INT32:
    case PTL_DTYPE_INT64:
        return ints;
    case PTL_DTYPE_BOOL:
        return bools;
    default:
        return 0;
    }
}
