/* device_random.h -- how random.c hands a fill to the CUDA backend's kernel without
 * including it: the backend (src/cuda/random_plan.c) sets the hook.  The argument checks,
 * the generator's reservation and the contiguous temporary stay the CPU kernel's; what
 * arrives here is a PtlDistJob over contiguous device memory.  See Note [CUDA random
 * fills] in src/cuda/random.cu. */
#ifndef PTL_ATEN_NATIVE_DEVICE_RANDOM_H
#define PTL_ATEN_NATIVE_DEVICE_RANDOM_H

#include "../distributions.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Set by the CUDA backend (NULL until then); 0, or -1 with an error set.  It runs for CUDA
 * tensors and, while ptl_device_reduce_emulation is on, for CPU tensors too. */
extern int (*ptl_device_random_hook)(const PtlDistJob *j);

#ifdef __cplusplus
}
#endif
#endif
