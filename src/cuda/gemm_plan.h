/* gemm_plan.h -- the index arithmetic of the GEMM kernels (mm, addmm, bmm, baddbmm and
 * through them matmul and linear), compiled twice: by nvcc for the device (gemm.cu) and by
 * gcc for the host (gemm_plan.c), whose emulation of the kernels runs exactly these functions
 * in the kernels' order.  Plays the role of the cuBLAS calls of ATen/native/cuda/Blas.cpp.
 *
 * Note [CUDA GEMM plan]
 * ~~~~~~~~~~~~~~~~~~~~~
 * gemm.c hands the product over as a PtlDeviceGemmArgs (device_gemm.h), with every stride;
 * ptl_cuda_gemm_plan (gemm_plan.c) picks a kernel by dtype, layout and shape.  The fast paths
 * take operands whose rows or columns are unit-stride and 16-byte vectors: each of A and B
 * has a unit stride along k or along its other dim (m for A, n for B), and its pointer, its
 * other stride and every batch stride of a batch dim longer than 1 are multiples of 16 bytes
 * (ptl_gemm_vector_aligned):
 *  - float32 / float64, "simt_vector" (gemm.cu): 128 x 128 blocks of 256 threads, k-tile 8,
 *    each thread an 8 x 8 register micro-tile made of 2 x 2 quads of 4 x 4 (rows
 *    ty 4 + i and 64 + ty 4 + i, columns likewise with tx, ptl_gemm_quad_row / _col), so the
 *    inner loop reads shared memory in 16-byte vectors.  Each k-step thread tid loads the A
 *    and B tiles' 16-byte vectors tid + l 256 (ptl_gemm_tile_vector) from global memory into
 *    registers while the block multiplies the other of two shared buffers;
 *  - float16 / bfloat16, "mma" (gemm_tensor_core.cu): 128 x 128 blocks of 8 warps, k-tile
 *    32, a 4-stage cp.async pipeline of 16-byte vectors (ptl_gemm_tile_vector again, zero
 *    filled past the edges by cp.async's source size), warp w the 64 x 32 sub-tile at
 *    (ptl_gemm_mma_warp_row, _col): per 16-wide k-step 4 x 4 mma.sync m16n8k16 with float
 *    accumulators, fed by ldmatrix.x4 (.trans for an operand whose unit stride is not k) from
 *    padded shared rows (ptl_gemm_mma_smem_index), whose lane addresses and fragment layouts
 *    are ptl_gemm_ldmatrix_a / _b and ptl_gemm_mma_a_elem / _b_elem / _c_elem.
 * Any other layout falls back to the strided kernels:
 *  - float32: 128 x 64 blocks (each of 256 threads an 8 x 4 register micro-tile) when they
 *    give at least one block per SM, else 64 x 64 (4 x 4 micro-tiles) for more blocks;
 *  - float64: 64 x 64 blocks, 4 x 4 micro-tiles;
 *  - float16 / bfloat16: 64 x 64 blocks of 4 warps, each warp 2 x 2 tensor-core 16 x 16 x 16
 *    products (wmma, float accumulation), k-tile 32.
 * Block (x, y, z) computes C's columns [x bn, x bn + bn), rows [y bm, y bm + bm) of batch z;
 * the kernels loop y and z by the grid's size past its 65535 limit.  The strided kernels'
 * threads load the A tile (bm x bk) and the B tile (bk x bn) into shared memory element by
 * element: e = tid + l * threads of the tile, walked along the operand's unit-stride
 * dimension (the layout flag: a transposed operand is read coalesced without a copy; any
 * other strides are read as they are), zero past the edges of m, n and k.  A strided SIMT
 * thread (ty, tx) = (tid / (bn / tn), tid % (bn / tn)) owns rows ty + i bm / tm and columns
 * tx + j bn / tn; a wmma block stages its float accumulators in shared memory and thread tid
 * writes the tile's elements tid + l * threads.  C = alpha acc + beta S is written only
 * inside m x n, per element with any strides; S is not read when beta == 0; k = 0 gives
 * beta S.  No split of K: every C element is one thread's (or one warp's) fixed-order sum,
 * so results repeat run after run.  The host emulation checks that every tile element is
 * loaded exactly once and every C element of a block written exactly once. */
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
       PTL_CUDA_GEMM_SIMT_VECTOR, PTL_CUDA_GEMM_MMA, PTL_CUDA_GEMM_KINDS };

/* the fast paths' tiles (Note [CUDA GEMM plan]); PAD: elements after each shared row */
#define PTL_GEMM_VECTOR_BM 128
#define PTL_GEMM_VECTOR_BN 128
#define PTL_GEMM_VECTOR_BK 8
#define PTL_GEMM_VECTOR_TM 8
#define PTL_GEMM_VECTOR_TN 8
#define PTL_GEMM_VECTOR_PAD 4
#define PTL_GEMM_MMA_BM 128
#define PTL_GEMM_MMA_BN 128
#define PTL_GEMM_MMA_BK 32
#define PTL_GEMM_MMA_PAD 8
#define PTL_GEMM_MMA_STAGES 4
#define PTL_GEMM_MMA_THREADS 256
/* one stage's shared tile of A or B (128 rows of m or n, 32 of k) in elements: rows of k
 * when k is the operand's unit stride, else rows of m or n; padded so that ldmatrix's eight
 * 16-byte rows fall in eight different bank groups */
#define PTL_GEMM_MMA_TILE_ELEMS(K_UNIT) \
    ((K_UNIT) ? PTL_GEMM_MMA_BM * (PTL_GEMM_MMA_BK + PTL_GEMM_MMA_PAD) \
              : PTL_GEMM_MMA_BK * (PTL_GEMM_MMA_BM + PTL_GEMM_MMA_PAD))

#define PTL_CUDA_GEMM_MAX_GRID_YZ 65535

typedef struct PtlCudaGemmPlan {
    int32_t kind, bm, bn, bk, tm, tn, threads;
    int32_t vec;                  /* the fast paths' elements per 16-byte vector, else 0 */
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

/* 1 when the operand at base (unit stride along one dim, ld the other dim's stride, bs its
 * batch strides) can be read in vectors of vec elements of itemsize bytes: base, ld (unless
 * the other dim has one index) and every batch stride of a batch dim longer than 1 are
 * multiples of the vector. */
PTL_HD static inline int
ptl_gemm_vector_aligned(const PtlDeviceGemmArgs *a, const char *base, int64_t unit_stride,
                        int64_t ld, int64_t other_size, const int64_t *bs, int vec,
                        int itemsize)
{
    if (unit_stride != 1 || ((uintptr_t)base % (uintptr_t)(vec * itemsize)) != 0 ||
        (other_size > 1 && ld % vec != 0)) {
        return 0;
    }
    for (int d = 0; d < a->nbd; d++) {
        if (a->bsizes[d] > 1 && bs[d] % vec != 0) {
            return 0;
        }
    }
    return 1;
}

/* Vector v of an operand tile of mn_tile rows of m (or n) by bk of k: its first element
 * (*mn, *kk); its vec elements run along k when k_unit, else along m (or n). */
PTL_HD static inline void
ptl_gemm_tile_vector(int v, int k_unit, int mn_tile, int bk, int vec, int *mn, int *kk)
{
    if (k_unit) {
        *mn = v / (bk / vec);
        *kk = (v % (bk / vec)) * vec;
    }
    else {
        *kk = v / (mn_tile / vec);
        *mn = (v % (mn_tile / vec)) * vec;
    }
}

/* How many of the vector at (mn, kk) (operand coordinates) lie inside the mn_size x k_size
 * operand: the first that many load, the rest are zero. */
PTL_HD static inline int
ptl_gemm_vector_valid(int64_t mn, int64_t kk, int k_unit, int64_t mn_size, int64_t k_size,
                      int vec)
{
    if (mn >= mn_size || kk >= k_size) {
        return 0;
    }
    const int64_t left = k_unit ? k_size - kk : mn_size - mn;
    return left < vec ? (int)left : vec;
}

/* simt_vector thread tid's i-th row (j-th column) of the block tile: quads of tm / 2 rows,
 * the second bm / 2 below the first */
PTL_HD static inline int
ptl_gemm_quad_row(const PtlCudaGemmPlan *p, int tid, int i)
{
    const int half = p->tm / 2;
    return (tid / (p->bn / p->tn)) * half + i % half + (i / half) * (p->bm / 2);
}

PTL_HD static inline int
ptl_gemm_quad_col(const PtlCudaGemmPlan *p, int tid, int j)
{
    const int half = p->tn / 2;
    return (tid % (p->bn / p->tn)) * half + j % half + (j / half) * (p->bn / 2);
}

/* the mma block's warp w (of 8, 2 x 4): its 64 x 32 sub-tile's first row and column */
PTL_HD static inline int
ptl_gemm_mma_warp_row(int w)
{
    return (w / 4) * 64;
}

PTL_HD static inline int
ptl_gemm_mma_warp_col(int w)
{
    return (w % 4) * 32;
}

/* The element index in one stage's shared tile of the operand element at tile row mn (of m
 * or n) and k index kk. */
PTL_HD static inline int
ptl_gemm_mma_smem_index(int k_unit, int mn, int kk)
{
    return k_unit ? mn * (PTL_GEMM_MMA_BK + PTL_GEMM_MMA_PAD) + kk
                  : kk * (PTL_GEMM_MMA_BM + PTL_GEMM_MMA_PAD) + mn;
}

/* ldmatrix.x4 for A's 16 x 16 fragment at tile (m0, k0): the shared row (8 contiguous
 * elements) whose start lane supplies, as tile (*m, *kk).  Matrix q = lane / 8 is the
 * fragment's register q: rows m0 + 8 (q % 2), k from k0 + 8 (q / 2).  A row runs along k when
 * k_unit, else along m (the load is .trans). */
PTL_HD static inline void
ptl_gemm_ldmatrix_a(int lane, int k_unit, int m0, int k0, int *m, int *kk)
{
    const int q = lane / 8, r = lane % 8;
    *m = m0 + (q % 2) * 8 + (k_unit ? r : 0);
    *kk = k0 + (q / 2) * 8 + (k_unit ? 0 : r);
}

/* ldmatrix.x4 for two of B's 16 x 8 fragments, columns n0 .. n0 + 15 at k0: matrix q holds
 * columns n0 + 8 (q / 2), k from k0 + 8 (q % 2), so registers 0, 1 are the first fragment's
 * and 2, 3 the second's.  A row runs along k when k_unit, else along n (.trans). */
PTL_HD static inline void
ptl_gemm_ldmatrix_b(int lane, int k_unit, int n0, int k0, int *n, int *kk)
{
    const int q = lane / 8, r = lane % 8;
    *n = n0 + (q / 2) * 8 + (k_unit ? r : 0);
    *kk = k0 + (q % 2) * 8 + (k_unit ? 0 : r);
}

/* The PTX ISA's fragment layouts of mma.m16n8k16 (.f16 / .bf16 inputs, .f32 accumulators),
 * group g = lane / 4, t = lane % 4: A's register reg (of 4), half h: row g + 8 (reg % 2),
 * k 2 t + h + 8 (reg / 2); B's register reg (of 2), half h: k 2 t + h + 8 reg, column g;
 * C's register reg (of 4): row g + 8 (reg / 2), column 2 t + reg % 2. */
PTL_HD static inline void
ptl_gemm_mma_a_elem(int lane, int reg, int h, int *row, int *kk)
{
    *row = lane / 4 + 8 * (reg % 2);
    *kk = 2 * (lane % 4) + h + 8 * (reg / 2);
}

PTL_HD static inline void
ptl_gemm_mma_b_elem(int lane, int reg, int h, int *kk, int *col)
{
    *kk = 2 * (lane % 4) + h + 8 * reg;
    *col = lane / 4;
}

PTL_HD static inline void
ptl_gemm_mma_c_elem(int lane, int reg, int *row, int *col)
{
    *row = lane / 4 + 8 * (reg / 2);
    *col = 2 * (lane % 4) + reg % 2;
}

/* alpha acc + beta S at (row, col) of batch z (S unread when beta == 0) */
PTL_HD static inline double
ptl_gemm_result(const PtlDeviceGemmArgs *a, double acc, double s)
{
    return a->beta == 0 ? a->alpha * acc : a->alpha * acc + a->beta * s;
}

#endif
