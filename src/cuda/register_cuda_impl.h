/* register_cuda_impl.h -- what register_cuda.c shares with register_cuda_math.c: the run of
 * one elementwise.cu kernel through a TensorIterator built as the CPU kernels build theirs,
 * and PyTorch's dtype error named for the CUDA kernel.  Private to src/cuda. */
#ifndef PTL_CUDA_REGISTER_CUDA_IMPL_H
#define PTL_CUDA_REGISTER_CUDA_IMPL_H

#include "cuda_api.h"

#include "../aten/dispatcher.h"
#include "../aten/tensor_iterator.h"

/* The inputs are stack slots idx[0..ninputs), the output comes from the schema, in the dtype
 * cfg and the inputs give (ptl_cuda_pointwise_takes refuses the others); stack[0] gets the
 * result (new reference).  0, or -1 with an error set. */
int ptl_cuda_pointwise_run(const PtlOperator *op, PtlIValue *s, int ninputs, const int *idx,
                           PtlIterConfig cfg, PtlCudaPointwiseOp cop, const double *p);
/* "\"<kernel>_cuda\" not implemented for '<dtype>'" for op; always -1 */
int ptl_cuda_dtype_not_implemented(const PtlOperator *op, PtlDtype dt);
/* Registers register_cuda_math.c's kernels on the CUDA key; 0 or -1. */
int ptl_register_cuda_math_kernels(void);

#endif
