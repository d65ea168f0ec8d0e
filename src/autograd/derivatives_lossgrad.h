/* derivatives_lossgrad.h -- formulas and PyTorch function names of derivatives_lossgrad.c
 * (binary_cross_entropy's target, the names of the nll_loss refusals), named in
 * derivatives.def. */
#ifndef PTL_AUTOGRAD_DERIVATIVES_LOSSGRAD_H
#define PTL_AUTOGRAD_DERIVATIVES_LOSSGRAD_H

#include "autograd.h"

int binary_cross_entropy_backward(PtlNode *n, PtlTensorImpl **grads_in,
                                  PtlTensorImpl **grads_out);
const char *nll_loss_forward_name(const PtlIValue *args);
const char *nll_loss_backward_name(const PtlIValue *args);

#endif
