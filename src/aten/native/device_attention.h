/* device_attention.h -- how attention.c hands the fused attention of
 * _scaled_dot_product_flash_attention_for_cpu (and its backward) to the CUDA backend's
 * kernels without including it: the backend (src/cuda/attention_plan.c) sets the hook.  The
 * argument checks, the casts to the work dtype and the outputs' allocation stay attention.c's;
 * what arrives here is the job with every operand's strides.  See Note [CUDA flash attention]
 * in src/cuda/attention_plan.h. */
#ifndef PTL_ATEN_NATIVE_DEVICE_ATTENTION_H
#define PTL_ATEN_NATIVE_DEVICE_ATTENTION_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An operand seen as [B, H, rows, cols]: its data and the element strides of the four dims,
 * 0 where it broadcasts (a mask of 2 dims or with size-1 dims; logsumexp's cols). */
typedef struct PtlDeviceAttnMat {
    char *data;
    int64_t st[4];
} PtlDeviceAttnMat;

/* query [B, H, L, E], key [B, H, S, E], value [B, H, S, Ev] (and an additive mask that
 * broadcasts to [B, H, L, S]) -> out [B, H, L, Ev], logsumexp [B, H, L]; the backward reads
 * dout and o (the forward's out) and lse and writes dq, dk, dv.  Every operand is in one
 * dtype, float32 or float64; scores are scale q . k + mask, -inf past the causal diagonal
 * (key j > query i) when causal. */
typedef struct PtlDeviceAttnJob {
    PtlDeviceAttnMat q, k, v, mask, out, lse, dout, o, dq, dk, dv;
    int has_mask, causal;
    int64_t B, H, L, S, E, Ev;
    double scale;
} PtlDeviceAttnJob;

/* Set by the CUDA backend (NULL until then): the forward (backward 0) or the backward of the
 * job in float64 (f8) or float32; 0, or -1 with an error set.  It runs for CUDA tensors and,
 * while ptl_device_reduce_emulation is on, for CPU tensors too. */
extern int (*ptl_device_attention_hook)(const PtlDeviceAttnJob *j, int backward, int f8);

#ifdef __cplusplus
}
#endif
#endif
