/* ops.h -- operator ids, one per row of ops.def. */
#ifndef PTL_ATEN_OPS_H
#define PTL_ATEN_OPS_H

/* Row flags.  F: a function pytorchlite.<name>; M: a Tensor method; P: pointwise, so a
 * Python number may stand for a Tensor argument; N: not differentiable (no formula needed);
 * H: hidden (only pytorchlite.ops.aten...). */
enum {
    PTL_OPF_FUNCTION = 1,
    PTL_OPF_METHOD = 2,
    PTL_OPF_POINTWISE = 4,
    PTL_OPF_NONDIFF = 8,
    PTL_OPF_HIDDEN = 16,
};
#define F PTL_OPF_FUNCTION
#define M PTL_OPF_METHOD
#define P PTL_OPF_POINTWISE
#define N PTL_OPF_NONDIFF
#define H PTL_OPF_HIDDEN

typedef enum PtlOpId {
#define PTL_OP(ID, SCHEMA, FLAGS) PTL_OP_##ID,
#include "ops.def"
#undef PTL_OP
    PTL_OP_COUNT
} PtlOpId;

#undef F
#undef M
#undef P
#undef N
#undef H

#endif
