/* pool_impl.h -- what pool.c shares with pool_device.c, its CUDA kernels' glue: the plan of
 * a pooling (Note [Pooling windows] in pool.c) and the CUDA entry points. */
#ifndef PTL_ATEN_NATIVE_POOL_IMPL_H
#define PTL_ATEN_NATIVE_POOL_IMPL_H

#include <stdint.h>

#include "../../c10/parallel.h"
#include "device_pool.h"
#include "nn_common.h"

typedef PtlPoolWin Win;

/* The interior outputs [lo, hi) along one dim: their windows hold all k inputs, from
 * o * step - pad (Note [Pooling rows]); k of a plan without interior is its widest window. */
typedef struct Interior {
    int64_t k, lo, hi, step, pad;
} Interior;

typedef struct PoolPlan {
    int64_t planes;
    int64_t in[NN_SPATIAL], out[NN_SPATIAL], dil[NN_SPATIAL];
    Win *w[NN_SPATIAL];
    int how;                  /* PTL_POOL_WIN_*: how the windows were laid, from k, s, pad */
    int64_t k[NN_SPATIAL], s[NN_SPATIAL], pad[NN_SPATIAL];
    int64_t divisor;          /* avg: divisor_override, or 0 */
    int count_include_pad;
    Interior iy, ix;          /* height, width */
} PoolPlan;

/* What a pooling kernel's parallel_for body reads and writes, planes [b, e) */
typedef struct PoolJob {
    const PoolPlan *p;
    const char *x;        /* forward input / backward grad_output */
    char *y;              /* forward output / backward grad_input (average: zeroed) */
    int64_t *idx;         /* max: indices (forward writes, backward reads) */
    const int64_t *cidx;
    /* AVG_GLOBAL of a channels-last input: its C, plane n C + c being column c of sample n's
     * H W x C matrix in x (forward) or y (backward); 0: planes one after the other (Note
     * [Channels-last global average pooling]) */
    int64_t cl_channels;
} PoolJob;

/* The divisor of an average window: divisor_override, or its span (count_include_pad) or
 * count. */
static inline int64_t
win_div(const PoolPlan *p, const Win *wz, const Win *wy, const Win *wx)
{
    if (p->divisor) {
        return p->divisor;
    }
    return p->count_include_pad ? wz->span * wy->span * wx->span
                                : wz->count * wy->count * wx->count;
}

/* How the average pooling walks: window by window (avg_plane in pool.c), or, in
 * pool_global.c, whole planes (a 1 x 1 adaptive output), wide adaptive windows one at a time
 * (Note [Global average pooling]) or narrow adaptive ones row by row (Note [Adaptive average
 * rows]) */
typedef enum AvgWalk { AVG_WINDOWS, AVG_GLOBAL, AVG_WIDE, AVG_ADAPTIVE } AvgWalk;
/* adaptive windows at least this wide take AVG_WIDE */
#define WIDE_WINDOW 16
/* The parallel_for body (ctx: a PoolJob) of walk, not AVG_WINDOWS, for float64 (f8) or
 * float32 planes; bwd: AVG_GLOBAL's backward (the others are forward only) */
PtlParallelFn pool_avg_walk(AvgWalk walk, int f8, int bwd);

/* The kernel of a max or average pooling as pool_setup reads it (3 dims, right-aligned). */
typedef struct PoolArgs {
    int nd;                    /* 2 or 3 */
    int64_t k[3], s[3], p[3], d[3];
    int ceil_mode;
} PoolArgs;

/* The window tables: allocated for p's outputs (0, or -1 with the error set), freed. */
int pool_plan_alloc(PoolPlan *p);
void pool_plan_free(PoolPlan *p);
/* Windows of a strided (dilated) pooling along dim d (avg: an average pooling's). */
void pool_plan_strided(PoolPlan *p, int d, int64_t k, int64_t s, int64_t pad, int avg);

/* 1 when t's pooling runs on the CUDA kernels (nn_on_device) */
int pool_on_device(const PtlTensorImpl *t);
/* One pooling of plan p (windows laid) on the device: x -> y (and idx), contiguous in the
 * work dtype (device_pool.h says which is which for each kind).  0, or -1. */
int pool_device(int kind, const PoolPlan *p, PtlTensorImpl *x, PtlTensorImpl *y,
                PtlTensorImpl *idx);
/* max pooling's grad_input shaped like self on the device: each element gathers grad_output
 * from the windows that cover it whose index is its own (Note [CUDA pooling]); p from
 * pool_setup with a's kernel, whose windows are laid here, or (a NULL) an adaptive plan with
 * its windows laid.  Frees p's tables.  New reference, or NULL. */
PtlTensorImpl *pool_gather_indices(PtlTensorImpl *go, PtlTensorImpl *self, PtlTensorImpl *idx,
                                   const PoolArgs *a, PoolPlan *p);

#endif
