/* loss_impl.h -- what loss.c's regression losses and nn.c's binary_cross_entropy share with
 * their CUDA kernels (src/cuda/register_cuda.c): PyTorch's argument checks and kernel names. */
#ifndef PTL_ATEN_NATIVE_LOSS_IMPL_H
#define PTL_ATEN_NATIVE_LOSS_IMPL_H

#include "native.h"

/* ORDER RegLoss (loss.c) and PtlCudaRegLoss (cuda_api.h) */
typedef enum PtlRegLoss { PTL_REG_MSE, PTL_REG_SMOOTH_L1, PTL_REG_HUBER } PtlRegLoss;

/* The loss of mse_loss, smooth_l1_loss, huber_loss and their backward ops */
PtlRegLoss ptl_reg_loss_kind(const PtlOperator *op);
/* PyTorch's checks of smooth_l1_loss's beta and huber_loss's delta, which the backward ops
 * do not make (Note [Regression loss derivatives at a negative beta or delta]): 0, or -1
 * with the error set. */
int ptl_reg_loss_check(PtlRegLoss k, double p);
/* The backward ops' gradient is in self's (in[1]'s) dtype, the promoted dtype of
 * grad_output, self and target (in[0..2]) cast into it when it can be (PyTorch's grad_input,
 * empty like self, is its TensorIterator's output): a float16 self with a bfloat16
 * grad_output computes in float32 and returns float16; an integer self with a floating
 * operand is refused with PyTorch's cast error.  0, or -1 with the error set. */
int ptl_reg_loss_backward_check(PtlTensorImpl *const *in);
/* "mse", "smooth_l1", "huber": the names of PyTorch's kernels in its dtype errors */
const char *ptl_reg_loss_name(PtlRegLoss k);
/* binary_cross_entropy's checks of input x and target t (PyTorch's errors): 0, or -1 with the
 * error set. */
int ptl_bce_check(const PtlTensorImpl *x, const PtlTensorImpl *t);

#endif
