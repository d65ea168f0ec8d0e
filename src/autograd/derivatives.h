/* derivatives.h -- the formula table built from derivatives.def, and the formulas it names.
 * The formulas live in derivatives/<family>.c (see formula.h). */
#ifndef PTL_AUTOGRAD_DERIVATIVES_H
#define PTL_AUTOGRAD_DERIVATIVES_H

#include "autograd.h"

#define PTL_SAVE_ARG(I) (1u << (I))
#define PTL_SAVE_RESULT (1u << 16)
/* output 1 (the indices of sort, topk, median.dim, ...), saved after output 0 */
#define PTL_SAVE_RESULT1 (1u << 17)
/* output 2 (the workspace of _thnn_fused_lstm_cell, native_layer_norm's rstd), saved after
 * output 1 */
#define PTL_SAVE_RESULT2 (1u << 18)
/* PTL_SAVE_ARG(i) of a Tensor?[] argument saves its elements after every other slot. */

typedef struct PtlGradRow {
    int op;                 /* PtlOpId */
    PtlNodeKind kind;       /* name + formula */
    uint32_t save;
} PtlGradRow;

extern const PtlGradRow ptl_grad_rows[];
extern const int ptl_grad_row_count;

/* Arguments PyTorch does not differentiate (derivatives.yaml lists no formula for them): the
 * call is refused when one of them requires grad, as the generated VariableType kernels'
 * check_no_requires_grad does.  `name` gives the function name PyTorch prints (NULL: the
 * schema's name), which for our fused ops depends on the arguments. */
typedef struct PtlNondiffRow {
    int op;                 /* PtlOpId */
    uint32_t args;          /* mask of PTL_SAVE_ARG(i): arguments that must not require grad */
    const char *(*name)(const PtlIValue *args);
} PtlNondiffRow;

extern const PtlNondiffRow ptl_nondiff_rows[];
extern const int ptl_nondiff_row_count;

/* Every formula of derivatives.def (a formula named by several rows is declared again,
 * which C allows). */
#define PTL_GRAD(OP, NAME, SAVE, FN) \
    int FN(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
#define PTL_NONDIFF(OP, ARGS, NAME)
#include "derivatives.def"
#undef PTL_NONDIFF
#undef PTL_GRAD

/* The function names of PTL_NONDIFF rows that depend on the arguments (derivatives/nn.c). */
const char *nll_loss_forward_name(const PtlIValue *args);
const char *nll_loss_backward_name(const PtlIValue *args);

#endif
