/* derivatives_rnnperf.h -- formulas of the fused recurrent cells (derivatives_rnnperf.c). */
#ifndef PTL_AUTOGRAD_DERIVATIVES_RNNPERF_H
#define PTL_AUTOGRAD_DERIVATIVES_RNNPERF_H

#include "autograd.h"

int thnn_fused_lstm_cell_backward(PtlNode *n, PtlTensorImpl **grads_in,
                                  PtlTensorImpl **grads_out);
int thnn_fused_gru_cell_backward(PtlNode *n, PtlTensorImpl **grads_in,
                                 PtlTensorImpl **grads_out);

#endif
