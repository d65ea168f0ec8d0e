/* autocast.h -- automatic mixed precision on the CPU.  Mirrors ATen/autocast_mode.h.
 *
 * Note [Autocast]
 * ~~~~~~~~~~~~~~~
 * torch.autocast("cpu") puts the AutocastCPU key into the thread's included set (tls.h), so
 * every operator call reaches autocast's boxed fallback first, above Autograd.  The fallback
 * looks the operator up in a policy table (autocast.c) built from PyTorch's CPU lists:
 *  - lower precision (mm, bmm, matmul, addmm, baddbmm, convolution): every float32 or
 *    float16/bfloat16 tensor argument is cast to the autocast dtype (bfloat16 by default);
 *  - float32 (losses, 3-d pooling, padding, prod, cdist, quantile, svd, ...): every
 *    float16/bfloat16 tensor argument is cast to float32;
 *  - every other operator: no cast.
 * float64 tensors are never cast (PyTorch's is_eligible).  The casts are _to_copy calls
 * through the dispatcher, so Autograd records them (ToCopyBackward0) and gradients come back
 * in the inputs' dtypes.  A listed operator runs with AutocastCPU excluded, so what it calls
 * inside is not cast again; an unlisted one redispatches with the key still included, so a
 * composite (einsum, tensordot) autocasts the matmuls it calls, as in PyTorch.
 * Unlike PyTorch, casts of weights are not cached across calls (cache_enabled is accepted
 * and ignored): the results are the same, each call pays for its casts. */
#ifndef PTL_ATEN_AUTOCAST_H
#define PTL_ATEN_AUTOCAST_H

/* Registers the AutocastCPU fallback and builds the policy table; 0, or -1 with the error
 * set.  Call after ptl_dispatcher_init. */
int ptl_autocast_init(void);

#endif
