/* gemm_plan.c -- the host side of the GEMM kernels, in every build: the plan (Note [CUDA GEMM
 * plan] in gemm_plan.h), the hook gemm.c calls for CUDA products, and the kernels' emulation
 * on the host that the CPU tests run (the same tile loads, thread and warp ownership, edge
 * masks and grid loops as gemm.cu, over host memory). */
#include "gemm_plan.h"

#include <stdlib.h>
#include <string.h>

#include "../c10/error.h"
#include "cuda_api.h"

static int64_t emulation_sms, emulation_max_grid;
static int64_t emulation_counts[PTL_CUDA_GEMM_KINDS];

void
ptl_cuda_set_gemm_emulation(int64_t sms, int64_t max_grid_yz)
{
    ptl_device_gemm_emulation = sms > 0;
    ptl_device_gemm_hook = ptl_cuda_gemm;
    emulation_sms = sms;
    emulation_max_grid = max_grid_yz;
    memset(emulation_counts, 0, sizeof(emulation_counts));
}

void
ptl_cuda_gemm_emulation_counts(int64_t counts[PTL_CUDA_GEMM_KINDS])
{
    memcpy(counts, emulation_counts, sizeof(emulation_counts));
}

static int64_t
ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

PtlCudaGemmPlan
ptl_cuda_gemm_plan(const PtlDeviceGemmArgs *a, int64_t sms, int64_t max_grid_yz)
{
    PtlCudaGemmPlan p;
    memset(&p, 0, sizeof(p));
    if (a->dtype == PTL_DTYPE_FLOAT16 || a->dtype == PTL_DTYPE_BFLOAT16) {
        p = (PtlCudaGemmPlan){.kind = PTL_CUDA_GEMM_TENSOR_CORE, .bm = 64, .bn = 64, .bk = 32,
                              .tm = 0, .tn = 0, .threads = 128};
    }
    else if (a->dtype == PTL_DTYPE_FLOAT32 &&
             ceil_div(a->m, 128) * ceil_div(a->n, 64) * a->batch >= sms) {
        p = (PtlCudaGemmPlan){.kind = PTL_CUDA_GEMM_SIMT_LARGE, .bm = 128, .bn = 64, .bk = 16,
                              .tm = 8, .tn = 4, .threads = 256};
    }
    else {
        p = (PtlCudaGemmPlan){.kind = PTL_CUDA_GEMM_SIMT_SMALL, .bm = 64, .bn = 64, .bk = 16,
                              .tm = 4, .tn = 4, .threads = 256};
    }
    /* the layout flags: walk the unit-stride dimension (k for a row-major A, n for B) */
    p.a_k_unit = a->acs == 1 || a->ars != 1;
    p.b_n_unit = a->bcs == 1 || a->brs != 1;
    p.grid_x = ceil_div(a->n, p.bn);
    p.grid_y = ceil_div(a->m, p.bm) < max_grid_yz ? ceil_div(a->m, p.bm) : max_grid_yz;
    p.grid_z = a->batch < max_grid_yz ? a->batch : max_grid_yz;
    return p;
}

static void
store(char *base, int dt, int64_t off, double v)
{
    switch (dt) {
    case PTL_DTYPE_FLOAT16: ((ptl_half *)base)[off] = ptl_f_to_half((float)v); break;
    case PTL_DTYPE_BFLOAT16: ((ptl_bf16 *)base)[off] = ptl_f_to_bf16((float)v); break;
    case PTL_DTYPE_FLOAT32: ((float *)base)[off] = (float)v; break;
    default: ((double *)base)[off] = v; break;
    }
}

static double
load(const char *base, int dt, int64_t off)
{
    return off < 0 ? 0.0 : ptl_load_double(base + off * (int64_t)ptl_dtype_itemsize(dt),
                                           (PtlDtype)dt);
}

/* The block's tiles and accumulators, in host memory (the kernels' shared memory and
 * registers): ta[kk bm + r], tb[kk bn + cn], acc[r bn + c]. */
typedef struct EmuBlock {
    double *ta, *tb, *acc;
} EmuBlock;

/* one k-step's loads of block (z, y, x): every thread's elements of both tiles */
static void
emu_load(const PtlDeviceGemmArgs *a, const PtlCudaGemmPlan *p, EmuBlock *blk, int64_t z,
         int64_t row0, int64_t col0, int64_t k0)
{
    const int64_t abo = ptl_gemm_batch_offset(a, a->a_bs, z);
    const int64_t bbo = ptl_gemm_batch_offset(a, a->b_bs, z);
    for (int tid = 0; tid < p->threads; tid++) {
        for (int e = tid; e < p->bm * p->bk; e += p->threads) {
            int r, kk;
            ptl_gemm_tile_a(p, e, &r, &kk);
            blk->ta[kk * p->bm + r] = load(a->a, a->dtype, ptl_gemm_a_at(a, abo, row0 + r, k0 + kk));
        }
        for (int e = tid; e < p->bk * p->bn; e += p->threads) {
            int kk, cn;
            ptl_gemm_tile_b(p, e, &kk, &cn);
            blk->tb[kk * p->bn + cn] = load(a->b, a->dtype, ptl_gemm_b_at(a, bbo, k0 + kk, col0 + cn));
        }
    }
}

/* one k-step's products: each SIMT thread's micro-tile, or each warp's 16 x 16 fragments */
static void
emu_products(const PtlCudaGemmPlan *p, EmuBlock *blk)
{
    if (p->kind != PTL_CUDA_GEMM_TENSOR_CORE) {
        for (int tid = 0; tid < p->threads; tid++) {
            for (int i = 0; i < p->tm; i++) {
                for (int j = 0; j < p->tn; j++) {
                    int r = ptl_gemm_thread_row(p, tid, i), c = ptl_gemm_thread_col(p, tid, j);
                    for (int kk = 0; kk < p->bk; kk++) {
                        blk->acc[r * p->bn + c] += blk->ta[kk * p->bm + r] * blk->tb[kk * p->bn + c];
                    }
                }
            }
        }
        return;
    }
    for (int w = 0; w < p->threads / 32; w++) {
        for (int f = 0; f < 4; f++) {
            int r0 = ptl_gemm_warp_row(w, f / 2), c0 = ptl_gemm_warp_col(w, f % 2);
            for (int r = r0; r < r0 + 16; r++) {
                for (int c = c0; c < c0 + 16; c++) {
                    float s = (float)blk->acc[r * p->bn + c];
                    for (int kk = 0; kk < p->bk; kk++) {
                        s += (float)blk->ta[kk * p->bm + r] * (float)blk->tb[kk * p->bn + c];
                    }
                    blk->acc[r * p->bn + c] = s;
                }
            }
        }
    }
}

/* C's element (row0 + r, col0 + c) of batch z from the block's accumulator, inside m x n */
static void
emu_write(const PtlDeviceGemmArgs *a, const PtlCudaGemmPlan *p, const EmuBlock *blk, int64_t z,
          int64_t row0, int64_t col0, int r, int c)
{
    if (row0 + r >= a->m || col0 + c >= a->n) {
        return;
    }
    const int64_t cbo = ptl_gemm_batch_offset(a, a->c_bs, z);
    const int64_t sbo = ptl_gemm_batch_offset(a, a->s_bs, z);
    double s = a->beta == 0 ? 0.0
                            : load(a->s, a->dtype, sbo + (row0 + r) * a->srs + (col0 + c) * a->scs);
    store(a->c, a->dtype, cbo + (row0 + r) * a->crs + (col0 + c) * a->ccs,
          ptl_gemm_result(a, blk->acc[r * p->bn + c], s));
}

static void
emu_block(const PtlDeviceGemmArgs *a, const PtlCudaGemmPlan *p, EmuBlock *blk, int64_t z,
          int64_t by, int64_t bx)
{
    const int64_t row0 = by * p->bm, col0 = bx * p->bn;
    memset(blk->acc, 0, sizeof(double) * (size_t)(p->bm * p->bn));
    for (int64_t k0 = 0; k0 < a->k; k0 += p->bk) {
        emu_load(a, p, blk, z, row0, col0, k0);
        emu_products(p, blk);
    }
    for (int tid = 0; tid < p->threads; tid++) {
        if (p->kind == PTL_CUDA_GEMM_TENSOR_CORE) {
            for (int e = tid; e < p->bm * p->bn; e += p->threads) {
                emu_write(a, p, blk, z, row0, col0, e / p->bn, e % p->bn);
            }
            continue;
        }
        for (int i = 0; i < p->tm; i++) {
            for (int j = 0; j < p->tn; j++) {
                emu_write(a, p, blk, z, row0, col0, ptl_gemm_thread_row(p, tid, i),
                          ptl_gemm_thread_col(p, tid, j));
            }
        }
    }
}

/* the kernels' grid: block (x, y, z) of the launch loops y and z by the grid's size */
static int
emulate(const PtlDeviceGemmArgs *a, const PtlCudaGemmPlan *p)
{
    EmuBlock blk;
    blk.ta = malloc(sizeof(double) * (size_t)(p->bm * p->bk));
    blk.tb = malloc(sizeof(double) * (size_t)(p->bk * p->bn));
    blk.acc = malloc(sizeof(double) * (size_t)(p->bm * p->bn));
    if (blk.ta == NULL || blk.tb == NULL || blk.acc == NULL) {
        free(blk.ta);
        free(blk.tb);
        free(blk.acc);
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory");
    }
    for (int64_t gz = 0; gz < p->grid_z; gz++) {
        for (int64_t gy = 0; gy < p->grid_y; gy++) {
            for (int64_t x = 0; x < p->grid_x; x++) {
                for (int64_t z = gz; z < a->batch; z += p->grid_z) {
                    for (int64_t y = gy; y * p->bm < a->m; y += p->grid_y) {
                        emu_block(a, p, &blk, z, y, x);
                    }
                }
            }
        }
    }
    emulation_counts[p->kind]++;
    free(blk.ta);
    free(blk.tb);
    free(blk.acc);
    return 0;
}

int
ptl_cuda_gemm(const PtlDeviceGemmArgs *a)
{
    if (a->dtype != PTL_DTYPE_FLOAT32 && a->dtype != PTL_DTYPE_FLOAT64 &&
        a->dtype != PTL_DTYPE_FLOAT16 && a->dtype != PTL_DTYPE_BFLOAT16) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"addmm_cuda\" not implemented for '%s'",
                             ptl_dtype_legacy_name((PtlDtype)a->dtype));
    }
    if (ptl_device_gemm_emulation) {
        PtlCudaGemmPlan p = ptl_cuda_gemm_plan(a, emulation_sms, emulation_max_grid);
        return emulate(a, &p);
    }
    /* the reductions' tuning knows the device's SM count (a quarter of its target blocks) */
    PtlCudaGemmPlan p = ptl_cuda_gemm_plan(a, ptl_cuda_reduce_tuning().target_blocks / 4,
                                           PTL_CUDA_GEMM_MAX_GRID_YZ);
    return ptl_cuda_gemm_launch(a, &p);
}
