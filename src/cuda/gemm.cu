// gemm.cu -- the GEMM kernels: tiled shared-memory float32 / float64 products with register
// micro-tiles, and tensor-core (wmma) float16 / bfloat16 products with float accumulation.
// The plan comes from gemm_plan.c and the index arithmetic (tile loads, edge masks, which
// thread or warp owns which C element, the epilogue) from gemm_plan.h (Note [CUDA GEMM plan]
// there), which the host emulation runs in the CPU tests; what is only here is the shared
// memory, the registers and the wmma fragments.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>
#include <stdint.h>

#include "../c10/error.h"
#include "gemm_plan.h"
#include "launch_check.h"

__device__ inline double to_d(float v) { return v; }
__device__ inline double to_d(double v) { return v; }
__device__ inline double to_d(__half v) { return __half2float(v); }
__device__ inline double to_d(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ inline T from_d(double v) { return (T)v; }
template <> __device__ inline __half from_d<__half>(double v) { return __float2half((float)v); }
template <> __device__ inline __nv_bfloat16
from_d<__nv_bfloat16>(double v) { return __float2bfloat16((float)v); }

// C's element (row, col) of the batch at offsets cbo, sbo := alpha acc + beta S
template <typename T>
__device__ inline void
write_c(const PtlDeviceGemmArgs &a, int64_t cbo, int64_t sbo, int64_t row, int64_t col,
        double acc)
{
    if (row >= a.m || col >= a.n) {
        return;
    }
    double s = a.beta == 0 ? 0.0 : to_d(((const T *)a.s)[sbo + row * a.srs + col * a.scs]);
    ((T *)a.c)[cbo + row * a.crs + col * a.ccs] = from_d<T>(ptl_gemm_result(&a, acc, s));
}

// The block's part of one operand's tile for this k-step (is_b: B's, else A's): thread tid
// loads the tile's elements tid, tid + THREADS, ... and hands put(i, j, value) their tile
// coordinates, A's (row, k) or B's (k, column), with zero past the edges.
template <typename T, int THREADS, typename Put>
__device__ inline void
load_tile(const PtlDeviceGemmArgs &a, const PtlCudaGemmPlan &q, int is_b, int64_t boff,
          int64_t r0, int64_t c0, int tid, T zero, Put put)
{
    const T *src = (const T *)(is_b ? a.b : a.a);
    const int count = q.bk * (is_b ? q.bn : q.bm);
#pragma unroll 4
    for (int e = tid; e < count; e += THREADS) {
        int i, j;
        int64_t off;
        if (is_b) {
            ptl_gemm_tile_b(&q, e, &i, &j);
            off = ptl_gemm_b_at(&a, boff, r0 + i, c0 + j);
        }
        else {
            ptl_gemm_tile_a(&q, e, &i, &j);
            off = ptl_gemm_a_at(&a, boff, r0 + i, c0 + j);
        }
        put(i, j, off < 0 ? zero : src[off]);
    }
}

// SIMT block tile BM x BN, k-tile BK, TM x TN per thread; T the dtype, accumulated in T
template <typename T, int BM, int BN, int BK, int TM, int TN>
__global__ void
__launch_bounds__((BM / TM) * (BN / TN))
gemm_simt(PtlDeviceGemmArgs a, PtlCudaGemmPlan p)
{
    constexpr int THREADS = (BM / TM) * (BN / TN);
    __shared__ T ta[BK][BM];
    __shared__ T tb[BK][BN];
    const int tid = (int)threadIdx.x;
    PtlCudaGemmPlan q = p;   // the tile's figures as constants (the layout flags stay p's)
    q.bm = BM;
    q.bn = BN;
    q.bk = BK;
    q.tm = TM;
    q.tn = TN;
    q.threads = THREADS;
    for (int64_t z = blockIdx.z; z < a.batch; z += gridDim.z) {
        const int64_t abo = ptl_gemm_batch_offset(&a, a.a_bs, z);
        const int64_t bbo = ptl_gemm_batch_offset(&a, a.b_bs, z);
        for (int64_t y = blockIdx.y; y * BM < a.m; y += gridDim.y) {
            const int64_t row0 = y * BM, col0 = (int64_t)blockIdx.x * BN;
            T acc[TM][TN] = {};
            for (int64_t k0 = 0; k0 < a.k; k0 += BK) {
                load_tile<T, THREADS>(a, q, 0, abo, row0, k0, tid, (T)0,
                                      [&](int r, int kk, T v) { ta[kk][r] = v; });
                load_tile<T, THREADS>(a, q, 1, bbo, k0, col0, tid, (T)0,
                                      [&](int kk, int cn, T v) { tb[kk][cn] = v; });
                __syncthreads();
#pragma unroll
                for (int kk = 0; kk < BK; kk++) {
                    T av[TM], bv[TN];
#pragma unroll
                    for (int i = 0; i < TM; i++) {
                        av[i] = ta[kk][ptl_gemm_thread_row(&q, tid, i)];
                    }
#pragma unroll
                    for (int j = 0; j < TN; j++) {
                        bv[j] = tb[kk][ptl_gemm_thread_col(&q, tid, j)];
                    }
#pragma unroll
                    for (int i = 0; i < TM; i++) {
#pragma unroll
                        for (int j = 0; j < TN; j++) {
                            acc[i][j] += av[i] * bv[j];
                        }
                    }
                }
                __syncthreads();
            }
            const int64_t cbo = ptl_gemm_batch_offset(&a, a.c_bs, z);
            const int64_t sbo = ptl_gemm_batch_offset(&a, a.s_bs, z);
#pragma unroll
            for (int i = 0; i < TM; i++) {
#pragma unroll
                for (int j = 0; j < TN; j++) {
                    write_c<T>(a, cbo, sbo, row0 + ptl_gemm_thread_row(&q, tid, i),
                               col0 + ptl_gemm_thread_col(&q, tid, j), (double)acc[i][j]);
                }
            }
        }
    }
}

// tensor-core block: 64 x 64 tile of 4 warps, each 2 x 2 fragments of 16 x 16, k-tile 32;
// T __half or __nv_bfloat16, accumulated in float
template <typename T>
__global__ void
__launch_bounds__(128)
gemm_tensor_core(PtlDeviceGemmArgs a, PtlCudaGemmPlan p)
{
    using namespace nvcuda;
    constexpr int BM = 64, BN = 64, BK = 32, THREADS = 128, PAD = 8;
    __shared__ __align__(32) T ta[BM][BK + PAD];
    __shared__ __align__(32) T tb[BK][BN + PAD];
    __shared__ __align__(32) float tc[BM][BN + 4];
    const int tid = (int)threadIdx.x, w = tid / 32;
    PtlCudaGemmPlan q = p;
    q.bm = BM;
    q.bn = BN;
    q.bk = BK;
    q.threads = THREADS;
    const T zero = from_d<T>(0.0);
    for (int64_t z = blockIdx.z; z < a.batch; z += gridDim.z) {
        const int64_t abo = ptl_gemm_batch_offset(&a, a.a_bs, z);
        const int64_t bbo = ptl_gemm_batch_offset(&a, a.b_bs, z);
        for (int64_t y = blockIdx.y; y * BM < a.m; y += gridDim.y) {
            const int64_t row0 = y * BM, col0 = (int64_t)blockIdx.x * BN;
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
            for (int f = 0; f < 4; f++) {
                wmma::fill_fragment(acc[f / 2][f % 2], 0.0f);
            }
            for (int64_t k0 = 0; k0 < a.k; k0 += BK) {
                load_tile<T, THREADS>(a, q, 0, abo, row0, k0, tid, zero,
                                      [&](int r, int kk, T v) { ta[r][kk] = v; });
                load_tile<T, THREADS>(a, q, 1, bbo, k0, col0, tid, zero,
                                      [&](int kk, int cn, T v) { tb[kk][cn] = v; });
                __syncthreads();
#pragma unroll
                for (int ks = 0; ks < BK; ks += 16) {
                    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[2];
                    wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb[2];
#pragma unroll
                    for (int f = 0; f < 2; f++) {
                        wmma::load_matrix_sync(fa[f], &ta[ptl_gemm_warp_row(w, f)][ks], BK + PAD);
                        wmma::load_matrix_sync(fb[f], &tb[ks][ptl_gemm_warp_col(w, f)], BN + PAD);
                    }
#pragma unroll
                    for (int f = 0; f < 4; f++) {
                        wmma::mma_sync(acc[f / 2][f % 2], fa[f / 2], fb[f % 2], acc[f / 2][f % 2]);
                    }
                }
                __syncthreads();
            }
#pragma unroll
            for (int f = 0; f < 4; f++) {
                wmma::store_matrix_sync(&tc[ptl_gemm_warp_row(w, f / 2)][ptl_gemm_warp_col(w, f % 2)],
                                        acc[f / 2][f % 2], BN + 4, wmma::mem_row_major);
            }
            __syncthreads();
            const int64_t cbo = ptl_gemm_batch_offset(&a, a.c_bs, z);
            const int64_t sbo = ptl_gemm_batch_offset(&a, a.s_bs, z);
            for (int e = tid; e < BM * BN; e += THREADS) {
                write_c<T>(a, cbo, sbo, row0 + e / BN, col0 + e % BN, (double)tc[e / BN][e % BN]);
            }
            __syncthreads();
        }
    }
}

extern "C" int
ptl_cuda_gemm_launch(const PtlDeviceGemmArgs *a, const PtlCudaGemmPlan *p)
{
    cudaStream_t stream = ptl_cuda_launch_stream();
    dim3 grid((unsigned)p->grid_x, (unsigned)p->grid_y, (unsigned)p->grid_z);
    if (p->grid_x > INT32_MAX) {
        return ptl_error_set(PTL_ERR_RUNTIME, "mm: %lld columns are too many for one launch",
                             (long long)a->n);
    }
    switch (p->kind) {
    case PTL_CUDA_GEMM_TENSOR_CORE:
        if (a->dtype == PTL_DTYPE_FLOAT16) {
            gemm_tensor_core<__half><<<grid, p->threads, 0, stream>>>(*a, *p);
        }
        else {
            gemm_tensor_core<__nv_bfloat16><<<grid, p->threads, 0, stream>>>(*a, *p);
        }
        break;
    case PTL_CUDA_GEMM_SIMT_LARGE:
        gemm_simt<float, 128, 64, 16, 8, 4><<<grid, p->threads, 0, stream>>>(*a, *p);
        break;
    default:
        if (a->dtype == PTL_DTYPE_FLOAT32) {
            gemm_simt<float, 64, 64, 16, 4, 4><<<grid, p->threads, 0, stream>>>(*a, *p);
        }
        else {
            gemm_simt<double, 64, 64, 16, 4, 4><<<grid, p->threads, 0, stream>>>(*a, *p);
        }
        break;
    }
    PTL_CUDA_CHECK_LAUNCH();
    return 0;
}
