/* derivatives_agrad2.h -- derivative formulas of derivatives_agrad2.c. */
#ifndef PTL_AUTOGRAD_DERIVATIVES_AGRAD2_H
#define PTL_AUTOGRAD_DERIVATIVES_AGRAD2_H

#include "autograd.h"

/* div.Tensor_mode: zeros with a rounding mode, true division's gradient without one. */
int div_mode_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);

#endif
