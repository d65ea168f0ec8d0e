/* derivatives_rng.h -- derivative formulas of the random ops (derivatives_rng.c). */
#ifndef PTL_AUTOGRAD_DERIVATIVES_RNG_H
#define PTL_AUTOGRAD_DERIVATIVES_RNG_H

#include "autograd.h"

/* derivatives.yaml's zeros_like(grad) for every input of a sampler. */
int random_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);

#endif
