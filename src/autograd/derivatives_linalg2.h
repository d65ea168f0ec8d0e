/* derivatives_linalg2.h -- formulas of the linalg2 ops (derivatives_linalg2.c). */
#ifndef PTL_AUTOGRAD_DERIVATIVES_LINALG2_H
#define PTL_AUTOGRAD_DERIVATIVES_LINALG2_H

#include "autograd.h"

int renorm_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int cdist_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);

#endif
