/* derivatives_convpool.h -- the formulas of derivatives_convpool.c (convolution, pooling,
 * padding, interpolation, fold, grid sampling) for the derivatives.def table. */
#ifndef PTL_AUTOGRAD_DERIVATIVES_CONVPOOL_H
#define PTL_AUTOGRAD_DERIVATIVES_CONVPOOL_H

#include "autograd.h"

int convolution_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int max_pool_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int avg_pool_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int max_unpool2d_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int im2col_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int col2im_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int constant_pad_nd_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int pad_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int upsample_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int grid_sampler_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int affine_grid_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);

#endif
