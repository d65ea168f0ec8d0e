/* unary_half.h -- float16 loops of vec_math.h's float32 formulas, converting in registers
 * (unary_half.c, Note [Float16 unary formulas in registers]), for unary.c. */
#ifndef PTL_ATEN_NATIVE_UNARY_HALF_H
#define PTL_ATEN_NATIVE_UNARY_HALF_H

#include "../loops.h"

typedef enum PtlHalfUnary {   /* ORDER HALF_UNARY: unary_half.c's table */
    PTL_HALF_UNARY_exp, PTL_HALF_UNARY_expm1, PTL_HALF_UNARY_tanh, PTL_HALF_UNARY_sigmoid,
    PTL_HALF_UNARY_log, PTL_HALF_UNARY_log1p, PTL_HALF_UNARY_erf, PTL_HALF_UNARY_sinh,
    PTL_HALF_UNARY_cosh, PTL_HALF_UNARY_COUNT
} PtlHalfUnary;

/* The float16 loop of f (half in, half out, any strides), or NULL where the CPU lacks F16C
 * or the capability is below AVX2 (the float32 blocks of native.c then) */
PtlLoop ptl_unary_half_loop(PtlHalfUnary f);

#endif
