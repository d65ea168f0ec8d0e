/* derivatives_sort.h -- formulas of the sorting, selection and scan ops
 * (derivatives_sort.c). */
#ifndef PTL_AUTOGRAD_DERIVATIVES_SORT_H
#define PTL_AUTOGRAD_DERIVATIVES_SORT_H

#include "autograd.h"

int value_selecting_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int evenly_distribute_backward(PtlNode *n, PtlTensorImpl **grads_in,
                               PtlTensorImpl **grads_out);
int logcumsumexp_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);

#endif
