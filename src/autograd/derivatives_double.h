/* derivatives_double.h -- the formulas of derivatives_double.c: derivatives of the NN
 * *_backward ops (double backward) for the derivatives.def table. */
#ifndef PTL_AUTOGRAD_DERIVATIVES_DOUBLE_H
#define PTL_AUTOGRAD_DERIVATIVES_DOUBLE_H

#include "autograd.h"

int convolution_backward_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int linear_backward_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int activation_backward_backward(PtlNode *n, PtlTensorImpl **grads_in,
                                 PtlTensorImpl **grads_out);
int hardsigmoid_backward_backward(PtlNode *n, PtlTensorImpl **grads_in,
                                  PtlTensorImpl **grads_out);
int softmax_backward_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int nll_loss_backward_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int binary_cross_entropy_backward_backward(PtlNode *n, PtlTensorImpl **grads_in,
                                           PtlTensorImpl **grads_out);
int embedding_backward_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);

#endif
