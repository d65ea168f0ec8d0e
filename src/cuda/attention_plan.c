/* attention_plan.c -- the host side of the fused attention kernels, in every build: the plan
 * (Note [CUDA flash attention] in attention_plan.h), the hook attention.c calls for CUDA
 * tensors (device_attention.h), and the kernels' emulation on the host (the same stage
 * functions in attention.cu's grid, item, stage and thread order, over host memory). */
#include "attention_plan.h"

#include <stdlib.h>
#include <string.h>

#include "../c10/error.h"

static int64_t
pow2_floor(int64_t n)
{
    int64_t p = 1;
    while (2 * p <= n) {
        p *= 2;
    }
    return p;
}

/* the elements of shared memory the largest of the three kernels takes */
static int64_t
largest_smem(int64_t bq, int64_t bk, int64_t ld)
{
    int64_t most = 0;
    for (int kind = 0; kind < PTL_ATTN_KINDS; kind++) {
        int64_t n = ptl_attn_smem(kind, bq, bk, ld).total;
        most = n > most ? n : most;
    }
    return most;
}

PtlCudaAttnPlan
ptl_cuda_attention_plan(const PtlDeviceAttnJob *j, int f8, const PtlCudaReduceTuning *t)
{
    PtlCudaAttnPlan p;
    const int64_t size = f8 ? 8 : 4, bh = j->B * j->H;
    memset(&p, 0, sizeof(p));
    p.block = t->max_threads < PTL_ATTN_MAX_THREADS ? t->max_threads : PTL_ATTN_MAX_THREADS;
    p.bq = pow2_floor(ptl_attn_min(t->min_chunk, PTL_ATTN_MAX_TILE));
    p.bk = ptl_attn_min(2 * p.bq, PTL_ATTN_MAX_TILE);
    p.ld = (j->E > j->Ev ? j->E : j->Ev) + 1;
    while (largest_smem(p.bq, p.bk, p.ld) * size > PTL_ATTN_SMEM_BYTES && p.bk > 1) {
        if (p.bk >= p.bq) {
            p.bk /= 2;
        }
        else {
            p.bq /= 2;
        }
    }
    p.smem_elems = largest_smem(p.bq, p.bk, p.ld);
    p.nqt = (j->L + p.bq - 1) / p.bq;
    p.nkt = (j->S + p.bk - 1) / p.bk;
    p.items[PTL_ATTN_FORWARD] = bh * p.nqt;
    p.items[PTL_ATTN_BACKWARD_KV] = bh * p.nkt;
    p.items[PTL_ATTN_BACKWARD_Q] = bh * p.nqt;
    for (int kind = 0; kind < PTL_ATTN_KINDS; kind++) {
        p.grid[kind] = ptl_attn_min(p.items[kind], t->max_grid);
    }
    return p;
}

/* ---- the emulation: attention.cu's kernel, block by block, stage by stage ---- */

/* one stage of an item, its threads one after another */
static void
emulate_stage(int f8, int kind, int stage, const PtlDeviceAttnJob *j, const PtlCudaAttnPlan *p,
              int64_t item, int64_t it, void *sm)
{
    for (int64_t t = 0; t < p->block; t++) {
        if (f8) {
            ptl_attn_step_f8(kind, stage, j, p, item, it, sm, t, p->block);
        }
        else {
            ptl_attn_step_f4(kind, stage, j, p, item, it, sm, t, p->block);
        }
    }
}

static void
emulate_kernel(int f8, int kind, const PtlDeviceAttnJob *j, const PtlCudaAttnPlan *p, void *sm)
{
    for (int64_t bx = 0; bx < p->grid[kind]; bx++) {
        for (int64_t item = bx; item < p->items[kind]; item += p->grid[kind]) {
            int64_t lo, hi;
            ptl_attn_loop_range(kind, j, p, item, &lo, &hi);
            emulate_stage(f8, kind, PTL_ATTN_INIT, j, p, item, -1, sm);
            emulate_stage(f8, kind, PTL_ATTN_INIT2, j, p, item, -1, sm);
            for (int64_t it = lo; it < hi; it++) {
                for (int stage = PTL_ATTN_LOAD; stage <= PTL_ATTN_ACC; stage++) {
                    emulate_stage(f8, kind, stage, j, p, item, it, sm);
                }
            }
            emulate_stage(f8, kind, PTL_ATTN_FINISH, j, p, item, -1, sm);
        }
    }
}

/* ---- the hook ---- */

int
ptl_cuda_attention(const PtlDeviceAttnJob *j, int backward, int f8)
{
    static const int kernels[2][2] = {{PTL_ATTN_FORWARD, -1},
                                      {PTL_ATTN_BACKWARD_KV, PTL_ATTN_BACKWARD_Q}};
    if (j->E > PTL_ATTN_MAX_HEAD_DIM || j->Ev > PTL_ATTN_MAX_HEAD_DIM) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "FlashAttention %s only supports head dimension at most %d",
                             backward ? "backward" : "forward", PTL_ATTN_MAX_HEAD_DIM);
    }
    PtlCudaReduceTuning tuning = ptl_cuda_reduce_tuning();
    PtlCudaAttnPlan p = ptl_cuda_attention_plan(j, f8, &tuning);
    const int *kinds = kernels[backward != 0];
    if (!ptl_device_reduce_emulation) {
        for (int i = 0; i < 2 && kinds[i] >= 0; i++) {
            if (p.items[kinds[i]] > 0 && ptl_cuda_attention_launch(j, &p, kinds[i], f8) < 0) {
                return -1;
            }
        }
        return 0;
    }
    /* shared memory starts as NaN: a stage that reads what no earlier stage wrote shows */
    const size_t bytes = (size_t)p.smem_elems * (f8 ? sizeof(double) : sizeof(float));
    void *sm = malloc(bytes);
    if (sm == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory");
    }
    memset(sm, 0xff, bytes);
    ptl_cuda_kernel_emulation_ran(PTL_CUDA_EMU_ATTENTION);
    for (int i = 0; i < 2 && kinds[i] >= 0; i++) {
        emulate_kernel(f8, kinds[i], j, &p, sm);
    }
    free(sm);
    return 0;
}
