/* derivatives.c -- the table of derivatives.def.  Mirrors the generated
 * torch/csrc/autograd/generated/Functions.cpp registry: one row per differentiable op,
 * naming its node, what the node saves and its formula (derivatives/<family>.c). */
#include "derivatives.h"

const PtlGradRow ptl_grad_rows[] = {
#define PTL_GRAD(OP, NAME, SAVE, FN) {PTL_OP_##OP, {NAME, FN, 0}, SAVE},
#define PTL_NONDIFF(OP, ARGS, NAME)
#include "derivatives.def"
#undef PTL_NONDIFF
#undef PTL_GRAD
};
const int ptl_grad_row_count = (int)(sizeof(ptl_grad_rows) / sizeof(ptl_grad_rows[0]));

const PtlNondiffRow ptl_nondiff_rows[] = {
#define PTL_GRAD(OP, NAME, SAVE, FN)
#define PTL_NONDIFF(OP, ARGS, NAME) {PTL_OP_##OP, ARGS, NAME},
#include "derivatives.def"
#undef PTL_NONDIFF
#undef PTL_GRAD
};
const int ptl_nondiff_row_count = (int)(sizeof(ptl_nondiff_rows) / sizeof(ptl_nondiff_rows[0]));
