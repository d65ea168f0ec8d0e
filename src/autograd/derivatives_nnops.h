/* derivatives_nnops.h -- the formulas of derivatives_nnops.c (nn operators: activations,
 * softmax, losses, embedding), named in derivatives.def. */
#ifndef PTL_AUTOGRAD_DERIVATIVES_NNOPS_H
#define PTL_AUTOGRAD_DERIVATIVES_NNOPS_H

#include "autograd.h"

int gelu_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int silu_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int mish_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int elu_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int leaky_relu_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int leaky_relu_result_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int hardtanh_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int softplus_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int hardswish_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int hardsigmoid_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int log_sigmoid_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int softshrink_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int hardshrink_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int threshold_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int softmax_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int log_softmax_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int nll_loss_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int embedding_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);

#endif
