/* derivatives_trainperf2.h -- formulas of native_layer_norm and of its backward
 * (derivatives_trainperf2.c). */
#ifndef PTL_AUTOGRAD_DERIVATIVES_TRAINPERF2_H
#define PTL_AUTOGRAD_DERIVATIVES_TRAINPERF2_H

#include "autograd.h"

int native_layer_norm_grad(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int native_layer_norm_double_grad(PtlNode *n, PtlTensorImpl **grads_in,
                                  PtlTensorImpl **grads_out);

#endif
