// gemm_tensor_core.cu -- the float16 / bfloat16 GEMM kernel on tensor cores through inline
// PTX (sm_80 and later): mma.sync m16n8k16 with float accumulators, its operands from shared
// memory by ldmatrix, the shared tiles filled by a 4-stage cp.async pipeline.  The plan
// ("mma") and the index arithmetic (which thread copies which 16-byte vector, the shared
// layout, ldmatrix's lane addresses, the fragments' layouts, the edges) are gemm_plan.h's,
// emulated on the host by gemm_plan.c; see Note [CUDA GEMM plan] there.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "../c10/error.h"
#include "gemm_kernels.cuh"
#include "gemm_plan.h"
#include "launch_check.h"

#define MMA_STAGE_ELEMS(A_K_UNIT, B_K_UNIT) \
    (PTL_GEMM_MMA_TILE_ELEMS(A_K_UNIT) + PTL_GEMM_MMA_TILE_ELEMS(B_K_UNIT))

// the shared-memory address (the .shared window) of p
__device__ inline uint32_t
shared_address(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

// 16 bytes from global src to shared dst, of which the first bytes are read and the rest
// zero-filled (bytes 0: nothing is read); completes at cp.async.wait_group
__device__ inline void
copy_async_16(void *dst, const void *src, int bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)),
                 "l"(__cvta_generic_to_global(src)), "r"(bytes)
                 : "memory");
}

__device__ inline void
copy_async_commit(void)
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// wait until at most PENDING of this thread's committed groups are in flight
template <int PENDING>
__device__ inline void
copy_async_wait(void)
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
}

// ldmatrix.x4 from the row this lane supplies (gemm_plan.h's ptl_gemm_ldmatrix_a / _b)
template <int TRANS>
__device__ inline void
load_matrix_x4(uint32_t r[4], const void *row)
{
    if (TRANS) {
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(shared_address(row)));
    }
    else {
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(shared_address(row)));
    }
}

// c += a b for one m16n8k16 fragment triple of T (__half or __nv_bfloat16)
template <typename T>
__device__ inline void mma_16x8x16(float c[4], const uint32_t a[4], const uint32_t b[2]);

template <>
__device__ inline void
mma_16x8x16<__half>(float c[4], const uint32_t a[4], const uint32_t b[2])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <>
__device__ inline void
mma_16x8x16<__nv_bfloat16>(float c[4], const uint32_t a[4], const uint32_t b[2])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Thread tid's cp.async copies of one operand's tile of the k-tile at k0 into the stage's
// shared tile t (is_b: B's, rows of n, else A's, rows of m): 128 x 32 elements in 512
// vectors of 8, two per thread, each zero-filled past the operand's edges.
template <typename T, int K_UNIT>
__device__ inline void
copy_tile_async(const PtlDeviceGemmArgs &a, int is_b, int64_t boff, int64_t mn0, int64_t k0,
                int tid, T *t)
{
    constexpr int VEC = 8, MN = PTL_GEMM_MMA_BM, BK = PTL_GEMM_MMA_BK;
    const T *src = (const T *)(is_b ? a.b : a.a);
    const int64_t mn_size = is_b ? a.n : a.m;
#pragma unroll
    for (int l = 0; l < MN * BK / VEC / PTL_GEMM_MMA_THREADS; l++) {
        int mn, kk;
        ptl_gemm_tile_vector(tid + l * PTL_GEMM_MMA_THREADS, K_UNIT, MN, BK, VEC, &mn, &kk);
        const int valid = ptl_gemm_vector_valid(mn0 + mn, k0 + kk, K_UNIT, mn_size, a.k, VEC);
        const int64_t off = valid == 0 ? 0
                            : is_b     ? ptl_gemm_b_at(&a, boff, k0 + kk, mn0 + mn)
                                       : ptl_gemm_a_at(&a, boff, mn0 + mn, k0 + kk);
        copy_async_16(t + ptl_gemm_mma_smem_index(K_UNIT, mn, kk), src + off,
                      valid * (int)sizeof(T));
    }
}

// Both tiles of k-tile kt (if there is one) into stage kt % STAGES, then a commit: every
// thread commits one group per call, empty or not, so the wait counts stay uniform.
template <typename T, int A_K_UNIT, int B_K_UNIT>
__device__ inline void
copy_stage_async(const PtlDeviceGemmArgs &a, int64_t abo, int64_t bbo, int64_t row0,
                 int64_t col0, int64_t kt, int64_t ktiles, int tid, T *smem)
{
    if (kt < ktiles) {
        T *stage = smem + (kt % PTL_GEMM_MMA_STAGES) * MMA_STAGE_ELEMS(A_K_UNIT, B_K_UNIT);
        const int64_t k0 = kt * PTL_GEMM_MMA_BK;
        copy_tile_async<T, A_K_UNIT>(a, 0, abo, row0, k0, tid, stage);
        copy_tile_async<T, B_K_UNIT>(a, 1, bbo, col0, k0, tid,
                                     stage + PTL_GEMM_MMA_TILE_ELEMS(A_K_UNIT));
    }
    copy_async_commit();
}

// mma (Note [CUDA GEMM plan]): block tile 128 x 128 of 8 warps, k-tile 32, STAGES k-tiles in
// flight; warp w multiplies its 64 x 32 sub-tile as 4 x 4 m16n8k16 products per 16 of k.
// Two blocks per SM (128 registers a thread; measured on an H200 at 4096^3, bfloat16: 0.86
// ms with one block of 170 registers, 0.65 ms with two).
// A_K_UNIT: A's unit stride is along k (else m; its ldmatrix is .trans); B_K_UNIT: B's is
// along k (else n; .trans).  Dynamic shared memory: STAGES x MMA_STAGE_ELEMS elements.
template <typename T, int A_K_UNIT, int B_K_UNIT>
__global__ void
__launch_bounds__(PTL_GEMM_MMA_THREADS, 2)
gemm_mma(PtlDeviceGemmArgs a)
{
    constexpr int STAGES = PTL_GEMM_MMA_STAGES, BM = PTL_GEMM_MMA_BM, BN = PTL_GEMM_MMA_BN;
    constexpr int BK = PTL_GEMM_MMA_BK;
    extern __shared__ __align__(16) unsigned char gemm_mma_smem[];
    T *smem = (T *)gemm_mma_smem;
    const int tid = (int)threadIdx.x, lane = tid % 32, w = tid / 32;
    const int wr = ptl_gemm_mma_warp_row(w), wc = ptl_gemm_mma_warp_col(w);
    // this lane's ldmatrix rows within a stage, per 16 of k at ks = 0 (ks adds ks or
    // ks * row length to them)
    int a_rows[4], b_rows[2];
#pragma unroll
    for (int mi = 0; mi < 4; mi++) {
        int m, kk;
        ptl_gemm_ldmatrix_a(lane, A_K_UNIT, wr + mi * 16, 0, &m, &kk);
        a_rows[mi] = ptl_gemm_mma_smem_index(A_K_UNIT, m, kk);
    }
#pragma unroll
    for (int pair = 0; pair < 2; pair++) {
        int n, kk;
        ptl_gemm_ldmatrix_b(lane, B_K_UNIT, wc + pair * 16, 0, &n, &kk);
        b_rows[pair] = PTL_GEMM_MMA_TILE_ELEMS(A_K_UNIT) + ptl_gemm_mma_smem_index(B_K_UNIT, n, kk);
    }
    const int64_t ktiles = (a.k + BK - 1) / BK;
    for (int64_t z = blockIdx.z; z < a.batch; z += gridDim.z) {
        const int64_t abo = ptl_gemm_batch_offset(&a, a.a_bs, z);
        const int64_t bbo = ptl_gemm_batch_offset(&a, a.b_bs, z);
        for (int64_t y = blockIdx.y; y * BM < a.m; y += gridDim.y) {
            const int64_t row0 = y * BM, col0 = (int64_t)blockIdx.x * BN;
            float acc[4][4][4];
#pragma unroll
            for (int f = 0; f < 16; f++) {
#pragma unroll
                for (int r = 0; r < 4; r++) {
                    acc[f / 4][f % 4][r] = 0.0f;
                }
            }
            // prologue: k-tiles 0 .. STAGES - 2 in flight, one group each
#pragma unroll
            for (int s = 0; s < STAGES - 1; s++) {
                copy_stage_async<T, A_K_UNIT, B_K_UNIT>(a, abo, bbo, row0, col0, s, ktiles, tid,
                                                        smem);
            }
            for (int64_t kt = 0; kt < ktiles; kt++) {
                // kt + STAGES - 1 groups committed: at most STAGES - 2 pending means k-tile
                // kt has landed (for this thread; the barrier makes it every thread's), and
                // every warp is done with the stage of k-tile kt - 1, refilled next
                copy_async_wait<STAGES - 2>();
                __syncthreads();
                copy_stage_async<T, A_K_UNIT, B_K_UNIT>(a, abo, bbo, row0, col0,
                                                        kt + STAGES - 1, ktiles, tid, smem);
                const T *stage = smem + (kt % STAGES) * MMA_STAGE_ELEMS(A_K_UNIT, B_K_UNIT);
#pragma unroll
                for (int ks = 0; ks < BK; ks += 16) {
                    uint32_t af[4][4], bf[4][2];
#pragma unroll
                    for (int mi = 0; mi < 4; mi++) {
                        load_matrix_x4<!A_K_UNIT>(
                            af[mi], stage + a_rows[mi] + ptl_gemm_mma_smem_index(A_K_UNIT, 0, ks));
                    }
#pragma unroll
                    for (int pair = 0; pair < 2; pair++) {
                        uint32_t r[4];
                        load_matrix_x4<!B_K_UNIT>(
                            r, stage + b_rows[pair] + ptl_gemm_mma_smem_index(B_K_UNIT, 0, ks));
                        bf[2 * pair][0] = r[0];
                        bf[2 * pair][1] = r[1];
                        bf[2 * pair + 1][0] = r[2];
                        bf[2 * pair + 1][1] = r[3];
                    }
#pragma unroll
                    for (int f = 0; f < 16; f++) {
                        mma_16x8x16<T>(acc[f / 4][f % 4], af[f / 4], bf[f % 4]);
                    }
                }
            }
            // drain the (empty) groups and let every warp leave the last stage before the
            // next tile's prologue refills the stages
            copy_async_wait<0>();
            __syncthreads();
            const int64_t cbo = ptl_gemm_batch_offset(&a, a.c_bs, z);
            const int64_t sbo = ptl_gemm_batch_offset(&a, a.s_bs, z);
#pragma unroll
            for (int f = 0; f < 16; f++) {
#pragma unroll
                for (int r = 0; r < 4; r++) {
                    int cr, cc;
                    ptl_gemm_mma_c_elem(lane, r, &cr, &cc);
                    write_c<T>(a, cbo, sbo, row0 + wr + (f / 4) * 16 + cr,
                               col0 + wc + (f % 4) * 8 + cc, (double)acc[f / 4][f % 4][r]);
                }
            }
        }
    }
}

// The mma kernel of one dtype and layout: its dynamic shared memory allowed past 48 KiB
// (once per process is enough, but the call is cheap), then the launch.
template <typename T, int A_K_UNIT, int B_K_UNIT>
static int
launch_mma(const PtlDeviceGemmArgs *a, dim3 grid, cudaStream_t stream)
{
    const int bytes = PTL_GEMM_MMA_STAGES * MMA_STAGE_ELEMS(A_K_UNIT, B_K_UNIT) * (int)sizeof(T);
    cudaError_t err = cudaFuncSetAttribute(gemm_mma<T, A_K_UNIT, B_K_UNIT>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (err != cudaSuccess) {
        return ptl_error_set(PTL_ERR_RUNTIME, "CUDA error: %s (%s:%d)", cudaGetErrorString(err),
                             __FILE__, __LINE__);
    }
    gemm_mma<T, A_K_UNIT, B_K_UNIT><<<grid, PTL_GEMM_MMA_THREADS, bytes, stream>>>(*a);
    PTL_CUDA_CHECK_LAUNCH();
    return 0;
}

template <typename T>
static int
launch_mma_layout(const PtlDeviceGemmArgs *a, const PtlCudaGemmPlan *p, dim3 grid,
                  cudaStream_t stream)
{
    if (p->a_k_unit && p->b_n_unit) {
        return launch_mma<T, 1, 0>(a, grid, stream);
    }
    if (p->a_k_unit) {
        return launch_mma<T, 1, 1>(a, grid, stream);
    }
    if (p->b_n_unit) {
        return launch_mma<T, 0, 0>(a, grid, stream);
    }
    return launch_mma<T, 0, 1>(a, grid, stream);
}

int
ptl_cuda_gemm_mma_launch(const PtlDeviceGemmArgs *a, const PtlCudaGemmPlan *p,
                         cudaStream_t stream)
{
    dim3 grid((unsigned)p->grid_x, (unsigned)p->grid_y, (unsigned)p->grid_z);
    if (a->dtype == PTL_DTYPE_FLOAT16) {
        return launch_mma_layout<__half>(a, p, grid, stream);
    }
    return launch_mma_layout<__nv_bfloat16>(a, p, grid, stream);
}
