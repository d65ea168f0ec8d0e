/* device_gemm.h -- how gemm.c hands a matrix product to the CUDA backend's kernels without
 * including it: the backend (src/cuda/gemm_plan.c) sets the hook.  See Note [CUDA GEMM plan]
 * in src/cuda/gemm_plan.h. */
#ifndef PTL_ATEN_NATIVE_DEVICE_GEMM_H
#define PTL_ATEN_NATIVE_DEVICE_GEMM_H

#include <stdint.h>

#include "../../c10/macros.h"

#ifdef __cplusplus
extern "C" {
#endif

/* C = alpha * A @ B + beta * S (S is C itself unless addmm's bias is given; not read when
 * beta == 0), all of one dtype, batched over nbd leading dims of sizes bsizes.  Strides in
 * elements: *_bs the batch dims', *rs and *cs a matrix's rows' and columns'. */
typedef struct PtlDeviceGemmArgs {
    int32_t dtype, nbd;
    const char *a, *b, *s;
    char *c;
    int64_t batch, m, n, k;
    int64_t bsizes[PTL_MAX_DIMS];
    int64_t a_bs[PTL_MAX_DIMS], b_bs[PTL_MAX_DIMS], c_bs[PTL_MAX_DIMS], s_bs[PTL_MAX_DIMS];
    int64_t ars, acs, brs, bcs, crs, ccs, srs, scs;
    double alpha, beta;
} PtlDeviceGemmArgs;

/* Set by the CUDA backend (NULL until then); 0, or -1 with an error set. */
extern int (*ptl_device_gemm_hook)(const PtlDeviceGemmArgs *a);
/* 1 while the tests emulate the CUDA GEMM kernels: CPU products take the hook too. */
extern int ptl_device_gemm_emulation;

#ifdef __cplusplus
}
#endif
#endif
