/* derivatives_double.h -- the formulas of derivatives_double.c: derivatives of the NN
 * *_backward ops (double backward) for the derivatives.def table. */
#ifndef PTL_AUTOGRAD_DERIVATIVES_DOUBLE_H
#define PTL_AUTOGRAD_DERIVATIVES_DOUBLE_H

#include "autograd.h"

int convolution_backward_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int max_pool_backward_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int avg_pool_backward_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int max_unpool2d_backward_backward(PtlNode *n, PtlTensorImpl **grads_in,
                                   PtlTensorImpl **grads_out);
int pad_backward_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int upsample_backward_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int affine_grid_backward_backward(PtlNode *n, PtlTensorImpl **grads_in,
                                  PtlTensorImpl **grads_out);
int gelu_backward_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int silu_backward_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int mish_backward_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int elu_backward_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int piecewise_backward_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int softplus_backward_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int hardswish_backward_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int hardsigmoid_backward_backward(PtlNode *n, PtlTensorImpl **grads_in,
                                  PtlTensorImpl **grads_out);
int log_sigmoid_backward_backward(PtlNode *n, PtlTensorImpl **grads_in,
                                  PtlTensorImpl **grads_out);
int softmax_backward_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int log_softmax_backward_backward(PtlNode *n, PtlTensorImpl **grads_in,
                                  PtlTensorImpl **grads_out);
int nll_loss_backward_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int binary_cross_entropy_backward_backward(PtlNode *n, PtlTensorImpl **grads_in,
                                           PtlTensorImpl **grads_out);
int embedding_backward_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);

#endif
