/* device_nn.h -- how layer_norm.c, nn.c, batch_norm.c, resample.c, grid_sampler.c, rnn.c and
 * rnn_cells.c hand layer norm, nll_loss, embedding, batch norm, the pads, upsampling, grid
 * sampling and the recurrent layer's cells to the CUDA backend's kernels without including
 * it: the backend (src/cuda/nn_plan.c, resample_plan.c, grid_sampler_plan.c, rnn_plan.c)
 * sets the hooks.  The argument checks, casts and contiguous copies stay the CPU kernels';
 * what arrives here is contiguous data.  See Note [CUDA nn kernels] in src/cuda/nn_plan.h,
 * Note [CUDA resampling] in src/cuda/resample_plan.h, Note [CUDA grid sampler] in
 * src/cuda/grid_sampler_plan.c and Note [CUDA recurrent layer] in src/cuda/rnn_plan.h. */
#ifndef PTL_ATEN_NATIVE_DEVICE_NN_H
#define PTL_ATEN_NATIVE_DEVICE_NN_H

#include <stdint.h>

#include "grid_sampler_taps.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { PTL_DEVICE_LN_FORWARD, PTL_DEVICE_LN_BACKWARD_DX, PTL_DEVICE_LN_BACKWARD_DW };

/* layer_norm.c's job: m rows of n elements, float32 or float64 (dtype); w, b, dw, db may
 * be NULL.  Forward: x, w, b -> y, mean, rstd.  Backward: dy, x, mean, rstd, w -> dx (pass
 * DX) or dw, db (pass DW). */
typedef struct PtlDeviceLayerNormArgs {
    int32_t pass, dtype;
    const char *x, *w, *b, *dy;
    char *y, *mean, *rstd, *dx, *dw, *db;
    int64_t m, n;
    double eps;
} PtlDeviceLayerNormArgs;

/* nll_loss over input [N, C, S] (contiguous, dtype), target [N S] int64, weight [C] float64
 * or NULL.  Forward: out float64, [N S] (reduction none) or [1].  Backward: grad float64
 * ([N S] or [1]) -> out, the input gradient [N, C, S] in dtype. */
typedef struct PtlDeviceNllArgs {
    int32_t backward, dtype;
    const char *x;
    const int64_t *target;
    const double *weight, *grad;
    char *out;
    int64_t N, C, S, reduction, ignore_index;
} PtlDeviceNllArgs;

/* embedding over L int64 indices.  Forward: src the weight [V, D] (contiguous, any dtype of
 * itemsize bytes) -> out [L, D].  Backward: src the gradient [L, D] (float32 or float64:
 * dtype) -> out float64 [V, D]; rows at padding_idx get nothing, scale divides each term by
 * its row's count. */
typedef struct PtlDeviceEmbeddingArgs {
    int32_t backward, dtype, scale;
    const char *src;
    const int64_t *idx;
    char *out;
    int64_t L, V, D, padding_idx, itemsize;
} PtlDeviceEmbeddingArgs;

/* batch_norm.c's job (Note [Batch norm channels] there): x, and dy for the backward, are
 * [n, c, hw] contiguous in dtype (float32 or float64).  The per-channel tensors p[k] (k in
 * PTL_DEVICE_BN_* order; NULL when None) are 1-D of any float dtype pdt[k] and element
 * stride ps[k]: weight, bias, running_mean, running_var in the forward; weight, -, the
 * mean and the invstd (training: save_mean, save_invstd) or the variance (eval:
 * running_mean, running_var) in the backward.  Forward: y, and in training save_mean and
 * save_invstd into out0, out1 ([c] contiguous in odt) and the running statistics updated
 * in place.  Backward: dx into y, grad_weight and grad_bias into out0, out1 (each NULL
 * when not wanted). */
enum { PTL_DEVICE_BN_W, PTL_DEVICE_BN_B, PTL_DEVICE_BN_MEAN, PTL_DEVICE_BN_VAR };
typedef struct PtlDeviceBatchNormArgs {
    int32_t backward, training, dtype, odt;
    const char *x, *dy;
    char *y, *out0, *out1;
    char *p[4];
    int64_t ps[4];
    int32_t pdt[4];
    int64_t n, c, hw;
    double momentum, eps;
} PtlDeviceBatchNormArgs;

/* resample.c's index maps (Note [Index maps] there) over planes x in[3] -> planes x out[3],
 * contiguous.  Forward: y[pl][o] = the sum over o's taps of w x[pl][i], in double
 * (weighted 1; 2: rounded to the nearest integer and clamped to [0, 255], for a uint8
 * result), or x[pl][i] copied raw (weighted 0, itemsize bytes; the pads).  Backward: x the output
 * gradient [planes, out] in double -> y [planes, in] in double, every element written.
 * idx[d], wt[d]: the maps in host memory, ntaps[d] of PTL_DEVICE_MAX_TAPS slots an output
 * position. */
#define PTL_DEVICE_MAX_TAPS 4
typedef struct PtlDeviceResampleArgs {
    int32_t backward, weighted, itemsize, ntaps[3];
    const char *x;
    char *y;
    int64_t planes, in[3], out[3];
    const int64_t *idx[3];
    const double *wt[3];
} PtlDeviceResampleArgs;

/* One step of rnn.c's recurrent layer on the device, after its GEMMs (Note [CUDA recurrent
 * layer] in src/cuda/rnn_plan.h): B rows of which the first n run, H hidden units, h of
 * width P, contiguous rows of dtype (float32 or float64), mode rnn.c's (cuDNN's numbers).
 * FORWARD, one thread per (row, unit): the cell of the running rows from the gates' sums
 * (LSTM: ws, [B, 4H], holds x W_ih^T + h W_hh^T, or gets ig + hg when ig is set, the fused
 * cell's; GRU: ig and hg apart, ws [B, 5H] the
 * workspace out; RNN: ht holds them) plus bi and bh (NULL: none) into ht [B, P] (LSTM
 * with a projection: r [B, H]) and LSTM's ct [B, H] from cprev; the other rows carry
 * hprev into ht and cprev into ct, and zero r.
 * BACKWARD_ADD, one thread per element of [B, P]: dh += gout (NULL: nothing), and with a
 * projection dhp = dh on the running rows, 0 on the others.
 * BACKWARD, one thread per (row, unit): the cell's backward of the running rows into dg
 * (GRU: and dgh, and dhn = z dh), LSTM's dcn, from ghy (dh, or LSTM's projected grad),
 * dc, ws, cprev and ct (RNN: ht, the step's output; LSTM's ghy and dc may be NULL, zero
 * gradients: the fused cell's None); the other rows carry dh into dhn and
 * dc into dcn and zero dg (and dgh). */
enum { PTL_DEVICE_RNN_FORWARD, PTL_DEVICE_RNN_BACKWARD_ADD, PTL_DEVICE_RNN_BACKWARD };
typedef struct PtlDeviceRnnStepArgs {
    int32_t pass, mode, dtype;
    int64_t n, B, H, P;
    const char *ig, *hg, *bi, *bh, *hprev, *cprev, *gout, *ghy, *dc;
    char *ht, *ct, *ws, *r, *dh, *dhn, *dcn, *dg, *dgh, *dhp;
} PtlDeviceRnnStepArgs;

/* Set by the CUDA backend (NULL until then); 0, or -1 with an error set.  They run for CUDA
 * tensors and, while ptl_device_reduce_emulation is on, for CPU tensors too. */
extern int (*ptl_device_layer_norm_hook)(const PtlDeviceLayerNormArgs *a);
extern int (*ptl_device_nll_hook)(const PtlDeviceNllArgs *a);
extern int (*ptl_device_embedding_hook)(const PtlDeviceEmbeddingArgs *a);
extern int (*ptl_device_batch_norm_hook)(const PtlDeviceBatchNormArgs *a);
extern int (*ptl_device_resample_hook)(const PtlDeviceResampleArgs *a);
/* grid_sampler.c's job (grid_sampler_taps.h): forward when a->y is set, else backward */
extern int (*ptl_device_grid_sampler_hook)(const PtlGridSampler *a);
extern int (*ptl_device_rnn_step_hook)(const PtlDeviceRnnStepArgs *a);

#ifdef __cplusplus
}
#endif
#endif
