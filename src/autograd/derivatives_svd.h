/* derivatives_svd.h -- formulas of the singular value decomposition (derivatives_svd.c). */
#ifndef PTL_AUTOGRAD_DERIVATIVES_SVD_H
#define PTL_AUTOGRAD_DERIVATIVES_SVD_H

#include "autograd.h"

int linalg_svd_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);

#endif
