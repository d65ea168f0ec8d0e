/* derivatives_scatred.h -- formulas of scatter_reduce (derivatives_scatred.c). */
#ifndef PTL_AUTOGRAD_DERIVATIVES_SCATRED_H
#define PTL_AUTOGRAD_DERIVATIVES_SCATRED_H

#include "autograd.h"

int scatter_reduce_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int scatter_legacy_reduce_backward(PtlNode *n, PtlTensorImpl **grads_in,
                                   PtlTensorImpl **grads_out);

#endif
