/* nn_plan.c -- the host side of the layer norm, nll_loss, embedding and batch norm kernels,
 * in every build: the plans (Note [CUDA nn kernels] in nn_plan.h), the entry points
 * layer_norm.c, nn.c and batch_norm.c call for CUDA tensors through device_nn.h's hooks,
 * and the kernels' emulation on the host (the same per-thread functions, block tree and grid
 * loops as nn.cu). */
#include "nn_plan.h"

#include <stdlib.h>
#include <string.h>

#include "../aten/native/native.h"
#include "../c10/error.h"

static int64_t
pow2_block(int64_t n, const PtlCudaReduceTuning *t)
{
    int64_t p = PTL_CUDA_WARP;
    while (p < n && p < t->max_threads) {
        p *= 2;
    }
    return p;
}

static int64_t
min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

PtlCudaNnPlan
ptl_cuda_rows_plan(int64_t rows, int64_t len, const PtlCudaReduceTuning *t)
{
    PtlCudaNnPlan p = {(int32_t)pow2_block(len, t), min64(rows, t->max_grid), 1, 0};
    return p;
}

PtlCudaNnPlan
ptl_cuda_elems_plan(int64_t n, const PtlCudaReduceTuning *t)
{
    PtlCudaNnPlan p = {(int32_t)pow2_block(n, t), 0, 1, 0};
    p.grid = min64((n + p.block - 1) / p.block, t->max_grid);
    return p;
}

PtlCudaNnPlan
ptl_cuda_columns_plan(int64_t m, int64_t n, const PtlCudaReduceTuning *t)
{
    PtlCudaNnPlan p = ptl_cuda_elems_plan(n, t);
    /* a chunk has min_chunk / 256 rows at least (16 on a device: a block reads 16 x 512
     * columns), the chunks make up target_blocks with the column blocks */
    const int64_t blocks = (n + p.block - 1) / p.block, min_rows = t->min_chunk / 256 + 1;
    if (blocks > 0 && blocks < t->target_blocks && m >= 2 * min_rows) {
        p.nsplit = min64(min64(m / min_rows, (t->target_blocks + blocks - 1) / blocks), 65535);
    }
    p.chunk = m > 0 ? (m + p.nsplit - 1) / p.nsplit : 0;
    p.nsplit = p.chunk > 0 ? (m + p.chunk - 1) / p.chunk : 1;
    return p;
}

int64_t
ptl_cuda_embedding_chunk(int64_t V, int64_t D, const PtlCudaReduceTuning *t)
{
    /* enough (chunk, column) threads to fill target_blocks full blocks */
    int64_t want = t->target_blocks * t->max_threads / (D > 0 ? D : 1);
    int64_t nchunk = want < 1 ? 1 : want > V ? V : want;
    return nchunk > 0 ? (V + nchunk - 1) / nchunk : 1;
}

PtlCudaNnPlan
ptl_cuda_batch_norm_plan(int64_t c, int64_t m, const PtlCudaReduceTuning *t)
{
    /* chunks of min_chunk values at least, enough (channel, chunk) blocks for target_blocks */
    int64_t nsplit = 1;
    if (c < t->target_blocks && m >= 2 * t->min_chunk) {
        nsplit = min64((t->target_blocks + c - 1) / c, m / t->min_chunk);
    }
    PtlCudaNnPlan p = {0, 0, 0, (m + nsplit - 1) / nsplit};
    p.nsplit = (m + p.chunk - 1) / p.chunk;
    p.block = (int32_t)pow2_block(p.chunk, t);
    p.grid = min64(c * p.nsplit, t->max_grid);
    return p;
}

/* ---- the emulation: nn.cu's kernels, block by block and thread by thread ---- */

void
ptl_cuda_emulate_elems(const PtlCudaNnPlan *p, int64_t n, PtlCudaElemFn fn, const void *ctx,
                       int64_t *ws)
{
    for (int64_t bx = 0; bx < p->grid; bx++) {
        for (int64_t t = 0; t < p->block; t++) {
            for (int64_t j = bx * p->block + t; j < n; j += p->grid * p->block) {
                fn(ctx, j, ws);
            }
        }
    }
}

/* the block tree over acc[0..block) of .a (and of .b when both) */
static void
block_sums(PtlRedAcc *acc, int block, int both, double *a, double *b)
{
    if (both) {
        PtlRedAcc *bs = acc + block;
        for (int t = 0; t < block; t++) {
            bs[t] = acc[t];
            bs[t].a = acc[t].b;
        }
        *b = ptl_cuda_block_tree(PTL_DEVICE_RED_SUM, 0, 0, bs, block).a;
    }
    *a = ptl_cuda_block_tree(PTL_DEVICE_RED_SUM, 0, 0, acc, block).a;
}

typedef struct {
    const PtlDeviceLayerNormArgs *a;
    const PtlCudaNnPlan *p;
    int64_t y;
    double *ws;
} LnColumns;

static void
ln_column(const void *ctx, int64_t c, int64_t *status)
{
    const LnColumns *j = ctx;
    (void)status;
    ptl_ln_column(j->a, c, j->y, j->p->chunk, j->p->nsplit, j->ws);
}

static void
ln_column_finish(const void *ctx, int64_t c, int64_t *status)
{
    const LnColumns *j = ctx;
    (void)status;
    ptl_ln_column_finish(j->a, c, j->p->nsplit, j->ws);
}

static void
emulate_layer_norm(const PtlDeviceLayerNormArgs *a, const PtlCudaNnPlan *p, PtlRedAcc *acc,
                   double *ws)
{
    const int block = p->block;
    if (a->pass == PTL_DEVICE_LN_BACKWARD_DW) {
        LnColumns j = {a, p, 0, ws};
        for (j.y = 0; j.y < p->nsplit; j.y++) {
            ptl_cuda_emulate_elems(p, a->n, ln_column, &j, NULL);
        }
        if (p->nsplit > 1) {
            ptl_cuda_emulate_elems(p, a->n, ln_column_finish, &j, NULL);
        }
        return;
    }
    for (int64_t bx = 0; bx < p->grid; bx++) {
        for (int64_t r = bx; r < a->m; r += p->grid) {
            double s0, s1;
            if (a->pass == PTL_DEVICE_LN_FORWARD) {
                for (int t = 0; t < block; t++) {
                    acc[t] = ptl_ln_thread_sum(a, 0, r, 0, t, block);
                }
                block_sums(acc, block, 0, &s0, NULL);
                const double mean = s0 / (double)a->n;
                for (int t = 0; t < block; t++) {
                    acc[t] = ptl_ln_thread_sum(a, 1, r, mean, t, block);
                }
                block_sums(acc, block, 0, &s1, NULL);
                const double rs = 1.0 / sqrt(s1 / (double)a->n + a->eps);
                for (int t = 0; t < block; t++) {
                    ptl_ln_write_row(a, r, mean, rs, t, block);
                }
                continue;
            }
            for (int t = 0; t < block; t++) {
                acc[t] = ptl_ln_thread_sum(a, 2, r, 0, t, block);
            }
            block_sums(acc, block, 1, &s0, &s1);
            for (int t = 0; t < block; t++) {
                ptl_ln_write_dx(a, r, s0, s1, t, block);
            }
        }
    }
}

static void
nll_forward_none(const void *a, int64_t e, int64_t *ws)
{
    double wt;
    ((double *)((const PtlDeviceNllArgs *)a)->out)[e] = ptl_nll_loss_at(a, e, &wt, ws);
}

static void
nll_grad(const void *a, int64_t j, int64_t *ws)
{
    double total;
    memcpy(&total, ws + 2, sizeof(double));
    ptl_nll_grad_at(a, j, total, ws);
}

static void
emulate_nll(const PtlDeviceNllArgs *a, const PtlCudaNnPlan *block, const PtlCudaNnPlan *elems,
            PtlRedAcc *acc, int64_t *ws)
{
    const int64_t n = a->N * a->S;
    if (!a->backward && a->reduction == 0) {
        ptl_cuda_emulate_elems(elems, n, nll_forward_none, a, ws);
        return;
    }
    if (a->reduction != 0) {
        double loss, total;
        for (int t = 0; t < block->block; t++) {
            acc[t] = ptl_nll_thread_sum(a, t, block->block, ws);
        }
        block_sums(acc, block->block, 1, &loss, &total);
        if (a->backward) {
            memcpy(ws + 2, &total, sizeof(double));
        }
        else {
            ((double *)a->out)[0] = a->reduction == 1 ? loss / total : loss;
            return;
        }
    }
    ptl_cuda_emulate_elems(elems, n * a->C, nll_grad, a, ws);
}

typedef struct {
    const PtlDeviceEmbeddingArgs *a;
    int64_t chunk;
} EmbJob;

static void
emb_gather(const void *a, int64_t j, int64_t *ws)
{
    ptl_emb_gather(a, j, ws);
}

static void
emb_count(const void *a, int64_t i, int64_t *ws)
{
    int64_t v = ptl_emb_row(a, i, ws);
    if (v >= 0) {
        ws[3 + v]++;
    }
}

static void
emb_accumulate(const void *ctx, int64_t u, int64_t *ws)
{
    const EmbJob *j = ctx;
    const int64_t D = j->a->D, v0 = u / D * j->chunk, v1 = v0 + j->chunk;
    ptl_emb_accumulate(j->a, v0, v1 < j->a->V ? v1 : j->a->V, u % D, ws + 3, ws);
}

static void
emulate_embedding(const PtlDeviceEmbeddingArgs *a, const PtlCudaNnPlan *count,
                  const PtlCudaNnPlan *elems, int64_t chunk, int64_t *ws)
{
    if (!a->backward) {
        ptl_cuda_emulate_elems(elems, a->L * a->D, emb_gather, a, ws);
        return;
    }
    if (a->scale) {
        ptl_cuda_emulate_elems(count, a->L, emb_count, a, ws);
    }
    EmbJob j = {a, chunk};
    ptl_cuda_emulate_elems(elems, (a->V + chunk - 1) / chunk * a->D, emb_accumulate, &j, ws);
}

typedef struct {
    const PtlDeviceBatchNormArgs *a;
    int64_t nsplit;
    double *ws;
} BnJob;

static void
bn_channel(const void *ctx, int64_t c, int64_t *status)
{
    const BnJob *j = ctx;
    (void)status;
    ptl_bn_channel(j->a, c, j->nsplit, j->ws, j->ws + 2 * j->a->c * j->nsplit);
}

static void
bn_affine(const void *ctx, int64_t e, int64_t *status)
{
    const BnJob *j = ctx;
    (void)status;
    ptl_bn_affine_at(j->a, e, j->ws + 2 * j->a->c * j->nsplit);
}

static void
emulate_batch_norm(const PtlDeviceBatchNormArgs *a, const PtlCudaNnPlan *tasks,
                   const PtlCudaNnPlan *chans, const PtlCudaNnPlan *elems, PtlRedAcc *acc,
                   double *ws)
{
    const int block = tasks->block;
    if (ptl_bn_has_sums(a)) {
        for (int64_t bx = 0; bx < tasks->grid; bx++) {
            for (int64_t u = bx; u < a->c * tasks->nsplit; u += tasks->grid) {
                for (int t = 0; t < block; t++) {
                    acc[t] = ptl_bn_thread_sum(a, u, tasks->chunk, tasks->nsplit, t, block);
                }
                block_sums(acc, block, 1, &ws[2 * u], &ws[2 * u + 1]);
            }
        }
    }
    BnJob j = {a, tasks->nsplit, ws};
    ptl_cuda_emulate_elems(chans, a->c, bn_channel, &j, NULL);
    if (a->y != 0) {
        ptl_cuda_emulate_elems(elems, a->n * a->c * a->hw, bn_affine, &j, NULL);
    }
}

/* ---- the entry points ---- */

int64_t *
ptl_cuda_status_workspace(int64_t n, int64_t **host, struct PtlTensorImpl **dev)
{
    if (ptl_device_reduce_emulation) {
        *host = calloc((size_t)n, sizeof(int64_t));
        if (*host == NULL) {
            ptl_error_set(PTL_ERR_MEMORY, "out of memory");
        }
        return *host;
    }
    PtlDevice d = {PTL_DEVICE_CUDA, 0};
    int device = 0;
    PtlIValue zero = ptl_iv_int(0);
    if (ptl_cuda_current_device(&device) < 0) {
        return NULL;
    }
    d.index = (int8_t)device;
    if ((*dev = ptl_empty(1, &n, PTL_DTYPE_INT64, d)) == NULL || ptl_fill_scalar(*dev, &zero) < 0) {
        return NULL;
    }
    return (int64_t *)ptl_tensor_data(*dev);
}

int
ptl_cuda_status_load(const int64_t *p, const int64_t *host, int64_t *v)
{
    if (host != NULL) {
        *v = *p;
        return 0;
    }
    return ptl_cuda_memcpy(v, 0, p, 1, sizeof(*v));
}

/* After the kernels: rc, or -1 with the CPU kernel's IndexError when one flagged an index
 * (the device's status word is copied back: a synchronisation); frees the workspace. */
static int
finish(int rc, int is_nll, int64_t *ws, int64_t *host, PtlTensorImpl *dev)
{
    int64_t status[2] = {0, 0};
    if (rc == 0 && ws != NULL) {
        if (host != NULL) {
            memcpy(status, host, sizeof(status));
        }
        else {
            rc = ptl_cuda_memcpy(status, 0, ws, 1, sizeof(status));
        }
    }
    free(host);
    ptl_xdecref(dev);
    if (rc == 0 && status[0] != 0) {
        return is_nll ? ptl_error_set(PTL_ERR_INDEX, "Target %lld is out of bounds.",
                                      (long long)status[1])
                      : ptl_error_set(PTL_ERR_INDEX, "index out of range in self");
    }
    return ws == NULL ? -1 : rc;
}

int
ptl_cuda_layer_norm(const PtlDeviceLayerNormArgs *a)
{
    PtlCudaReduceTuning tuning = ptl_cuda_reduce_tuning();
    PtlCudaNnPlan p = a->pass == PTL_DEVICE_LN_BACKWARD_DW
                          ? ptl_cuda_columns_plan(a->m, a->n, &tuning)
                          : ptl_cuda_rows_plan(a->m, a->n, &tuning);
    const int64_t nws = p.nsplit > 1 ? 2 * a->n * p.nsplit : 0;
    if (p.grid == 0) {
        return 0;
    }
    if (!ptl_device_reduce_emulation) {
        PtlTensorImpl *ws = NULL;
        PtlDevice dev = {PTL_DEVICE_CUDA, 0};
        int device = 0, rc;
        if (nws > 0) {
            if (ptl_cuda_current_device(&device) < 0) {
                return -1;
            }
            dev.index = (int8_t)device;
            if ((ws = ptl_empty(1, &nws, PTL_DTYPE_FLOAT64, dev)) == NULL) {
                return -1;
            }
        }
        rc = ptl_cuda_layer_norm_launch(a, &p, ws != NULL ? (double *)ptl_tensor_data(ws) : NULL);
        ptl_xdecref(ws);   /* reused only by later work on the same stream */
        return rc;
    }
    PtlRedAcc *acc = malloc(sizeof(PtlRedAcc) * 2 * (size_t)p.block);
    double *ws = nws > 0 ? malloc(sizeof(double) * (size_t)nws) : NULL;
    if (acc == NULL || (nws > 0 && ws == NULL)) {
        free(acc);
        free(ws);
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory");
    }
    ptl_cuda_kernel_emulation_ran(p.nsplit > 1 ? PTL_CUDA_EMU_LAYER_NORM_SPLIT
                                               : PTL_CUDA_EMU_LAYER_NORM);
    emulate_layer_norm(a, &p, acc, ws);
    free(acc);
    free(ws);
    return 0;
}

int
ptl_cuda_nll(const PtlDeviceNllArgs *a)
{
    PtlCudaReduceTuning tuning = ptl_cuda_reduce_tuning();
    const int64_t n = a->N * a->S;
    PtlCudaNnPlan block = ptl_cuda_rows_plan(1, n, &tuning);
    PtlCudaNnPlan elems = ptl_cuda_elems_plan(a->backward ? n * a->C : n, &tuning);
    int64_t *host = NULL, *ws;
    PtlTensorImpl *dev = NULL;
    if ((ws = ptl_cuda_status_workspace(3, &host, &dev)) == NULL) {
        return finish(-1, 1, NULL, host, dev);
    }
    if (!ptl_device_reduce_emulation) {
        return finish(ptl_cuda_nll_launch(a, &block, &elems, ws), 1, ws, host, dev);
    }
    PtlRedAcc *acc = malloc(sizeof(PtlRedAcc) * 2 * (size_t)block.block);
    if (acc == NULL) {
        return finish(ptl_error_set(PTL_ERR_MEMORY, "out of memory"), 1, ws, host, dev);
    }
    ptl_cuda_kernel_emulation_ran(PTL_CUDA_EMU_NLL);
    emulate_nll(a, &block, &elems, acc, ws);
    free(acc);
    return finish(0, 1, ws, host, dev);
}

int
ptl_cuda_embedding(const PtlDeviceEmbeddingArgs *a)
{
    PtlCudaReduceTuning tuning = ptl_cuda_reduce_tuning();
    int64_t chunk = a->backward ? ptl_cuda_embedding_chunk(a->V, a->D, &tuning) : 1;
    int64_t n = a->backward ? (a->V + chunk - 1) / chunk * a->D : a->L * a->D;
    PtlCudaNnPlan count = ptl_cuda_elems_plan(a->L, &tuning);
    PtlCudaNnPlan elems = ptl_cuda_elems_plan(n, &tuning);
    int64_t *host = NULL, *ws;
    PtlTensorImpl *dev = NULL;
    if (n == 0) {
        return 0;
    }
    const int64_t nws = 3 + (a->backward && a->scale ? a->V : 0);
    if ((ws = ptl_cuda_status_workspace(nws, &host, &dev)) == NULL) {
        return finish(-1, 0, NULL, host, dev);
    }
    if (!ptl_device_reduce_emulation) {
        return finish(ptl_cuda_embedding_launch(a, &count, &elems, chunk, ws), 0, ws, host, dev);
    }
    ptl_cuda_kernel_emulation_ran(PTL_CUDA_EMU_EMBEDDING);
    emulate_embedding(a, &count, &elems, chunk, ws);
    return finish(0, 0, ws, host, dev);
}

int
ptl_cuda_batch_norm(const PtlDeviceBatchNormArgs *a)
{
    PtlCudaReduceTuning tuning = ptl_cuda_reduce_tuning();
    PtlCudaNnPlan tasks = ptl_cuda_batch_norm_plan(a->c, a->n * a->hw, &tuning);
    PtlCudaNnPlan chans = ptl_cuda_elems_plan(a->c, &tuning);
    PtlCudaNnPlan elems = ptl_cuda_elems_plan(a->n * a->c * a->hw, &tuning);
    const int64_t nws = 2 * a->c * tasks.nsplit + 3 * a->c;
    if (!ptl_device_reduce_emulation) {
        PtlDevice dev = {PTL_DEVICE_CUDA, 0};
        PtlTensorImpl *ws;
        int device = 0, rc;
        if (ptl_cuda_current_device(&device) < 0) {
            return -1;
        }
        dev.index = (int8_t)device;
        if ((ws = ptl_empty(1, &nws, PTL_DTYPE_FLOAT64, dev)) == NULL) {
            return -1;
        }
        rc = ptl_cuda_batch_norm_launch(a, &tasks, &chans, &elems,
                                        (double *)ptl_tensor_data(ws));
        ptl_decref(ws);   /* reused only by later work on the same stream */
        return rc;
    }
    PtlRedAcc *acc = malloc(sizeof(PtlRedAcc) * 2 * (size_t)tasks.block);
    double *ws = malloc(sizeof(double) * (size_t)nws);
    if (acc == NULL || ws == NULL) {
        free(acc);
        free(ws);
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory");
    }
    ptl_cuda_kernel_emulation_ran(tasks.nsplit > 1 ? PTL_CUDA_EMU_BATCH_NORM_SPLIT
                                                   : PTL_CUDA_EMU_BATCH_NORM);
    emulate_batch_norm(a, &tasks, &chans, &elems, acc, ws);
    free(acc);
    free(ws);
    return 0;
}
