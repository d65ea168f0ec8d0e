/* derivatives_gridgg.h -- formulas of the grid sampler backwards (derivatives_gridgg.c). */
#ifndef PTL_AUTOGRAD_DERIVATIVES_GRIDGG_H
#define PTL_AUTOGRAD_DERIVATIVES_GRIDGG_H

#include "autograd.h"

int grid_sampler_backward_backward(PtlNode *n, PtlTensorImpl **grads_in,
                                   PtlTensorImpl **grads_out);

#endif
