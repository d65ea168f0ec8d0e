/* derivatives_convpool.h -- the formulas of derivatives_convpool.c (convolution, pooling,
 * padding, interpolation, fold, grid sampling) for the derivatives.def table. */
#ifndef PTL_AUTOGRAD_DERIVATIVES_CONVPOOL_H
#define PTL_AUTOGRAD_DERIVATIVES_CONVPOOL_H

#include "autograd.h"

int convolution_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);

#endif
