/* derivatives_indexing.h -- formulas of the index ops (derivatives_indexing.c). */
#ifndef PTL_AUTOGRAD_DERIVATIVES_INDEXING_H
#define PTL_AUTOGRAD_DERIVATIVES_INDEXING_H

#include "autograd.h"

int index_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int index_put_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int index_select_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int index_add_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int index_copy_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int index_fill_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int gather_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int scatter_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int scatter_add_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int masked_fill_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int masked_scatter_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);
int take_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);

#endif
