/* derivatives.h -- the formula table built from derivatives.def. */
#ifndef PTL_AUTOGRAD_DERIVATIVES_H
#define PTL_AUTOGRAD_DERIVATIVES_H

#include "autograd.h"

#define PTL_SAVE_ARG(I) (1u << (I))
#define PTL_SAVE_RESULT (1u << 16)
/* output 1 (the indices of sort, topk, median.dim, ...), saved after output 0 */
#define PTL_SAVE_RESULT1 (1u << 17)
/* output 2 (native_layer_norm's rstd), saved after output 1 */
#define PTL_SAVE_RESULT2 (1u << 18)
/* PTL_SAVE_ARG(i) of a Tensor?[] argument saves its elements after every other slot. */

typedef struct PtlGradRow {
    int op;                 /* PtlOpId */
    PtlNodeKind kind;       /* name + formula */
    uint32_t save;
} PtlGradRow;

extern const PtlGradRow ptl_grad_rows[];
extern const int ptl_grad_row_count;

#endif
