/* derivatives_shape2.h -- formulas of the shape and ordering ops (derivatives_shape2.c). */
#ifndef PTL_AUTOGRAD_DERIVATIVES_SHAPE2_H
#define PTL_AUTOGRAD_DERIVATIVES_SHAPE2_H

#include "autograd.h"

int flip_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int roll_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int rot90_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int repeat_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int tril_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int triu_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int diag_embed_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int diagonal_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int trace_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int unfold_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int unfold_backward_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int linalg_cross_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);

#endif
