/* gemm_plan.h -- the index arithmetic of the GEMM kernels (mm, addmm, bmm, baddbmm and
 * through them matmul and linear), compiled twice: by nvcc for the device (gemm.cu) and by
 * gcc for the host (gemm_plan.c), whose emulation of the kernels runs exactly these functions
 * in the kernels' order.  Plays the role of the cuBLAS calls of ATen/native/cuda/Blas.cpp.
 *
 * Note [CUDA GEMM plan]
 * ~~~~~~~~~~~~~~~~~~~~~
 * gemm.c hands the product over as a PtlDeviceGemmArgs (device_gemm.h), with every stride;
 * ptl_cuda_gemm_plan (gemm_plan.c) picks a tile by dtype and shape:
 *  - float32: 128 x 64 blocks (each of 256 threads an 8 x 4 register micro-tile) when they
 *    give at least one block per SM, else 64 x 64 (4 x 4 micro-tiles) for more blocks;
 *  - float64: 64 x 64 blocks, 4 x 4 micro-tiles;
 *  - float16 / bfloat16: 64 x 64 blocks of 4 warps, each warp 2 x 2 tensor-core 16 x 16 x 16
 *    products (wmma, float accumulation), k-tile 32.
 * Block (x, y, z) computes C's columns [x bn, x bn + bn), rows [y bm, y bm + bm) of batch z;
 * the kernels loop y and z by the grid's size past its 65535 limit.  Each k-step the block's
 * threads load the A tile (bm x bk) and the B tile (bk x bn) into shared memory: element
 * e = tid + l * threads of the tile, walked along the operand's unit-stride dimension (the
 * layout flag: a transposed operand is read coalesced without a copy; any other strides are
 * read as they are), zero past the edges of m, n and k.  A SIMT thread (ty, tx) =
 * (tid / (bn / tn), tid % (bn / tn)) owns rows ty + i bm / tm and columns tx + j bn / tn;
 * a tensor-core block stages its float accumulators in shared memory and thread tid writes
 * the tile's elements tid + l * threads.  C = alpha acc + beta S is written only inside
 * m x n; S is not read when beta == 0; k = 0 gives beta S.  No split of K: every C element
 * is one thread's (or one warp's) fixed-order sum, so results repeat run after run. */
#ifndef PTL_CUDA_GEMM_PLAN_H
#define PTL_CUDA_GEMM_PLAN_H

#include <stdint.h>

#include "../aten/native/device_gemm.h"
#include "../c10/dtype.h"
#include "../c10/macros.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ORDER PtlCudaGemmKind: the launcher's switch, the emulation's counts */
enum { PTL_CUDA_GEMM_SIMT_LARGE, PTL_CUDA_GEMM_SIMT_SMALL, PTL_CUDA_GEMM_TENSOR_CORE,
       PTL_CUDA_GEMM_KINDS };

#define PTL_CUDA_GEMM_MAX_GRID_YZ 65535

typedef struct PtlCudaGemmPlan {
    int32_t kind, bm, bn, bk, tm, tn, threads;
    int32_t a_k_unit, b_n_unit;   /* the layout flags: A's k, B's n are its unit-stride dim */
    int64_t grid_x, grid_y, grid_z;
} PtlCudaGemmPlan;

/* sms: the device's multiprocessors; max_grid_yz: the grid's y and z limit (tests pass less) */
PtlCudaGemmPlan ptl_cuda_gemm_plan(const PtlDeviceGemmArgs *a, int64_t sms, int64_t max_grid_yz);
/* The hook: runs the product on the device, or its emulation on the host. */
int ptl_cuda_gemm(const PtlDeviceGemmArgs *a);
/* Emulation on (the plan's sms and grid limit) or off (sms 0); what ran, by kind. */
void ptl_cuda_set_gemm_emulation(int64_t sms, int64_t max_grid_yz);
void ptl_cuda_gemm_emulation_counts(int64_t counts[PTL_CUDA_GEMM_KINDS]);
/* gemm.cu (cuda_stub.c without nvcc) */
int ptl_cuda_gemm_launch(const PtlDeviceGemmArgs *a, const PtlCudaGemmPlan *plan);

#ifdef __cplusplus
}
#endif

/* Element offset of batch z's matrix (batch dims row-major). */
PTL_HD static inline int64_t
ptl_gemm_batch_offset(const PtlDeviceGemmArgs *a, const int64_t *bs, int64_t z)
{
    int64_t off = 0;
    for (int d = a->nbd - 1; d >= 0; d--) {
        off += (z % a->bsizes[d]) * bs[d];
        z /= a->bsizes[d];
    }
    return off;
}

/* Element e of the A tile: row *r, k index *kk (walking k when k is A's unit stride). */
PTL_HD static inline void
ptl_gemm_tile_a(const PtlCudaGemmPlan *p, int e, int *r, int *kk)
{
    if (p->a_k_unit) {
        *r = e / p->bk;
        *kk = e % p->bk;
    }
    else {
        *r = e % p->bm;
        *kk = e / p->bm;
    }
}

/* Element e of the B tile: k index *kk, column *cn (walking n when n is B's unit stride). */
PTL_HD static inline void
ptl_gemm_tile_b(const PtlCudaGemmPlan *p, int e, int *kk, int *cn)
{
    if (p->b_n_unit) {
        *kk = e / p->bn;
        *cn = e % p->bn;
    }
    else {
        *kk = e % p->bk;
        *cn = e / p->bk;
    }
}

/* A's element offset at (row, kidx) of batch offset boff, or -1 past an edge (load 0). */
PTL_HD static inline int64_t
ptl_gemm_a_at(const PtlDeviceGemmArgs *a, int64_t boff, int64_t row, int64_t kidx)
{
    return row < a->m && kidx < a->k ? boff + row * a->ars + kidx * a->acs : -1;
}

PTL_HD static inline int64_t
ptl_gemm_b_at(const PtlDeviceGemmArgs *a, int64_t boff, int64_t kidx, int64_t col)
{
    return kidx < a->k && col < a->n ? boff + kidx * a->brs + col * a->bcs : -1;
}

/* SIMT thread tid's i-th row and j-th column within the block tile */
PTL_HD static inline int
ptl_gemm_thread_row(const PtlCudaGemmPlan *p, int tid, int i)
{
    return tid / (p->bn / p->tn) + i * (p->bm / p->tm);
}

PTL_HD static inline int
ptl_gemm_thread_col(const PtlCudaGemmPlan *p, int tid, int j)
{
    return tid % (p->bn / p->tn) + j * (p->bn / p->tn);
}

/* the tensor-core block's warp w, fragment (fi, fj): its 16 x 16 tile's first row, column */
PTL_HD static inline int
ptl_gemm_warp_row(int w, int fi)
{
    return (w / 2) * 32 + fi * 16;
}

PTL_HD static inline int
ptl_gemm_warp_col(int w, int fj)
{
    return (w % 2) * 32 + fj * 16;
}

/* alpha acc + beta S at (row, col) of batch z (S unread when beta == 0) */
PTL_HD static inline double
ptl_gemm_result(const PtlDeviceGemmArgs *a, double acc, double s)
{
    return a->beta == 0 ? a->alpha * acc : a->alpha * acc + a->beta * s;
}

#endif
