/* derivatives.h -- the formula table built from derivatives.def, and the formulas it names.
 * The formulas live in derivatives/<family>.c (see formula.h). */
#ifndef PTL_AUTOGRAD_DERIVATIVES_H
#define PTL_AUTOGRAD_DERIVATIVES_H

#include "autograd.h"

/* What a node saves, as a mask resolved from a row's names (derivatives.def): bit i for
 * schema argument i (i < 16), and outputs 0 to 3, saved after the arguments.  A saved
 * Tensor?[] argument saves its elements after every other slot. */
#define PTL_SAVE_ARG(I) (1u << (I))
#define PTL_SAVE_ARG_MAX 16
#define PTL_SAVE_RESULT (1u << 16)
/* output 1 (the indices of sort, topk, median.dim, ...) */
#define PTL_SAVE_RESULT1 (1u << 17)
/* output 2 (the workspace of _thnn_fused_lstm_cell, native_layer_norm's rstd) */
#define PTL_SAVE_RESULT2 (1u << 18)
/* output 3 (the eigenvectors' imaginary parts of _linalg_eig_split) */
#define PTL_SAVE_RESULT3 (1u << 19)

typedef struct PtlGradRow {
    int op;                 /* PtlOpId */
    PtlNodeKind kind;       /* name + formula */
    const char *saves;      /* what the node saves, by name: "self, other" */
} PtlGradRow;

extern const PtlGradRow ptl_grad_rows[];
extern const int ptl_grad_row_count;

/* Arguments PyTorch does not differentiate (derivatives.yaml lists no formula for them): the
 * call is refused when one of them requires grad, as the generated VariableType kernels'
 * check_no_requires_grad does.  `name` gives the function name PyTorch prints (NULL: the
 * schema's name), which for our fused ops depends on the arguments. */
typedef struct PtlNondiffRow {
    int op;                 /* PtlOpId */
    const char *args;       /* the arguments that must not require grad, by name */
    const char *(*name)(const PtlIValue *args);
} PtlNondiffRow;

extern const PtlNondiffRow ptl_nondiff_rows[];
extern const int ptl_nondiff_row_count;

/* The mask of PTL_SAVE_* that `names` (comma-separated, as in derivatives.def) stand for in
 * the schema of op: argument names, `result`, `result1`, `result2`, `result3` and the names of named
 * returns.  0, or -1 with an error naming the unknown name. */
int ptl_grad_save_mask(int op, const char *names, uint32_t *mask);

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

/* The gradient g (stolen) of an input `like`, restricted to like's pattern when like is
 * sparse, as torch.sparse.mm documents; g itself otherwise.  New ref or NULL
 * (derivatives/sparse.c). */
PtlTensorImpl *ptl_grad_mask_like(PtlTensorImpl *g, PtlTensorImpl *like);

#endif
