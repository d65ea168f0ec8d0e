/* derivatives_elures.h -- formulas of celu and of the in-place elu family, which save their
 * result (derivatives_elures.c). */
#ifndef PTL_AUTOGRAD_DERIVATIVES_ELURES_H
#define PTL_AUTOGRAD_DERIVATIVES_ELURES_H

#include "autograd.h"

int elu_result_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int celu_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int celu_result_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);

#endif
