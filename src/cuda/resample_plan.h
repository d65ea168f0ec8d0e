/* resample_plan.h -- the per-element arithmetic of the pad and upsampling kernels, compiled
 * by nvcc for the device (resample.cu) and by gcc for the host (resample_plan.c), whose
 * emulation runs exactly these functions in the kernels' order.  Mirrors
 * ATen/native/cuda/ReflectionPad.cu, ReplicationPadding.cu and UpSample*.cu in behaviour.
 *
 * Note [CUDA resampling]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * resample.c builds its index maps on the host (Note [Index maps]: for each of three dims,
 * each output position's taps, an input position and a weight) for every pad and every
 * upsampling mode; the device kernels read the same maps, so the pads' and the modes'
 * index arithmetic (reflection, replication, circular wrap, nearest, align_corners, the
 * scales, the cubic coefficients, PyTorch's clamps) is written once, in resample.c.
 * - The maps (and, for a backward, their inverse) travel in one int64 array through pinned
 *   memory and one asynchronous copy on the current stream: no synchronisation.
 * - Forward: one thread per output element, which sums its taps in double in the CPU's
 *   general order (the emulation gives its bits; the device may fuse multiply-adds; the
 *   CPU's separable float32/float64 rows, Note [Separable resampling], differ in the last
 *   bit), or copies its one input element raw (the pads, any dtype: the CPU's bits).
 * - Backward: a gather, not atomics: one thread per input-gradient element walks the output
 *   positions that read it, per dim the inverse map's list of (output, tap) in output order
 *   (off[d][i] .. off[d][i + 1] of ent[d], built on the host by a counting pass), and sums
 *   w g in double.  Every element has one writer: deterministic, no zero fill, and no float
 *   atomics (whose order, and so whose bits, would change run to run).  The sum's order is
 *   the CPU's scatter order but for two taps of one output landing on one input (the
 *   clamped edges), where the terms of that output come in tap order rather than after
 *   each other: a last-bit difference at those edges only. */
#ifndef PTL_CUDA_RESAMPLE_PLAN_H
#define PTL_CUDA_RESAMPLE_PLAN_H

#include <math.h>

#include "../aten/native/device_nn.h"
#include "../c10/macros.h"
#include "cuda_api.h"

/* The job the kernels take: the op's sizes and buffers, and the maps where they read them
 * (device memory, or the emulation's host copy). */
typedef struct PtlCudaResampleJob {
    PtlDeviceResampleArgs a;   /* a.idx and a.wt: the host maps, not read here */
    const int64_t *idx[3];
    const double *wt[3];
    const int64_t *off[3], *ent[3];   /* the backward's inverse maps */
} PtlCudaResampleJob;

/* output element e (plane-major) of the forward */
PTL_HD static inline void
ptl_rs_forward_at(const PtlCudaResampleJob *j, int64_t e)
{
    const PtlDeviceResampleArgs *a = &j->a;
    const int64_t ovol = a->out[0] * a->out[1] * a->out[2], ivol = a->in[0] * a->in[1] * a->in[2];
    const int64_t pl = e / ovol, r = e % ovol, ox = r % a->out[2];
    const int64_t oy = r / a->out[2] % a->out[1], oz = r / (a->out[2] * a->out[1]);
    const int T = PTL_DEVICE_MAX_TAPS;
    if (!a->weighted) {
        const int64_t i = (j->idx[0][oz * T] * a->in[1] + j->idx[1][oy * T]) * a->in[2] +
                          j->idx[2][ox * T];
        const char *s = a->x + (pl * ivol + i) * a->itemsize;
        char *o = a->y + e * a->itemsize;
        for (int b = 0; b < a->itemsize; b++) {
            o[b] = s[b];
        }
        return;
    }
    const double *x = (const double *)a->x + pl * ivol;
    double acc = 0.0;
    for (int p = 0; p < a->ntaps[0]; p++) {
        const int64_t iz = j->idx[0][oz * T + p];
        const double wz = j->wt[0][oz * T + p];
        for (int c = 0; c < a->ntaps[1]; c++) {
            const int64_t row = (iz * a->in[1] + j->idx[1][oy * T + c]) * a->in[2];
            const double wzy = wz * j->wt[1][oy * T + c];
            for (int q = 0; q < a->ntaps[2]; q++) {
                acc += wzy * j->wt[2][ox * T + q] * x[row + j->idx[2][ox * T + q]];
            }
        }
    }
    if (a->weighted == 2) {
        acc = acc < 0 ? 0 : (acc > 255 ? 255 : nearbyint(acc));
    }
    ((double *)a->y)[e] = acc;
}

/* input-gradient element e (plane-major) of the backward: the gather of Note [CUDA
 * resampling] */
PTL_HD static inline void
ptl_rs_backward_at(const PtlCudaResampleJob *j, int64_t e)
{
    const PtlDeviceResampleArgs *a = &j->a;
    const int64_t ovol = a->out[0] * a->out[1] * a->out[2], ivol = a->in[0] * a->in[1] * a->in[2];
    const int64_t pl = e / ivol, r = e % ivol, ix = r % a->in[2];
    const int64_t iy = r / a->in[2] % a->in[1], iz = r / (a->in[2] * a->in[1]);
    const double *g = (const double *)a->x + pl * ovol;
    const int T = PTL_DEVICE_MAX_TAPS;
    double acc = 0.0;
    for (int64_t p = j->off[0][iz]; p < j->off[0][iz + 1]; p++) {
        const int64_t s0 = j->ent[0][p], oz = s0 / T;
        const double wz = j->wt[0][s0];
        for (int64_t c = j->off[1][iy]; c < j->off[1][iy + 1]; c++) {
            const int64_t s1 = j->ent[1][c], row = (oz * a->out[1] + s1 / T) * a->out[2];
            const double wzy = wz * j->wt[1][s1];
            for (int64_t q = j->off[2][ix]; q < j->off[2][ix + 1]; q++) {
                const int64_t s2 = j->ent[2][q];
                acc += wzy * j->wt[2][s2] * g[row + s2 / T];
            }
        }
    }
    ((double *)a->y)[e] = acc;
}

#ifdef __cplusplus
extern "C" {
#endif
/* Runs the pad or upsampling job on the device, or emulated on the host while kernel
 * emulation is on.  0, or -1 with an error set. */
int ptl_cuda_resample(const PtlDeviceResampleArgs *a);
/* The device launch (resample.cu): elems covers the job's output (forward) or input
 * (backward) elements. */
int ptl_cuda_resample_launch(const PtlCudaResampleJob *j, const PtlCudaNnPlan *elems);
#ifdef __cplusplus
}
#endif

#endif
