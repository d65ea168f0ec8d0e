// gemm.cu -- the GEMM kernels: float32 / float64 products on 16-byte vectors, double
// buffered, with 8 x 8 register micro-tiles (simt_vector); tiled shared-memory products of
// any strides with register micro-tiles, and tensor-core (wmma) float16 / bfloat16 products
// of any strides with float accumulation (the fallbacks); and the launcher of every kernel,
// the mma.sync one of gemm_tensor_core.cu among them.  The plan comes from gemm_plan.c and
// the index arithmetic (tile loads, edge masks, which thread or warp owns which C element,
// the epilogue) from gemm_plan.h (Note [CUDA GEMM plan] there), which the host emulation
// runs in the CPU tests; what is only here is the shared memory, the registers and the wmma
// fragments.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>
#include <stdint.h>

#include "../c10/error.h"
#include "gemm_kernels.cuh"
#include "gemm_plan.h"
#include "launch_check.h"

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

// A 16-byte vector of T (float4, double2) and its element e (e a constant once unrolled)
template <typename T> struct Vector16;
template <> struct Vector16<float> { typedef float4 type; };
template <> struct Vector16<double> { typedef double2 type; };

__device__ inline float
vector_elem(const float4 &v, int e)
{
    return e == 0 ? v.x : e == 1 ? v.y : e == 2 ? v.z : v.w;
}

__device__ inline double
vector_elem(const double2 &v, int e)
{
    return e == 0 ? v.x : v.y;
}

__device__ inline void
vector_set(float4 &v, int e, float x)
{
    if (e == 0) {
        v.x = x;
    }
    else if (e == 1) {
        v.y = x;
    }
    else if (e == 2) {
        v.z = x;
    }
    else {
        v.w = x;
    }
}

__device__ inline void
vector_set(double2 &v, int e, double x)
{
    if (e == 0) {
        v.x = x;
    }
    else {
        v.y = x;
    }
}

// four consecutive T of shared memory (16-byte aligned) into out[0..3]
__device__ inline void
load_quad(const float *p, float *out)
{
    const float4 v = *(const float4 *)p;
    out[0] = v.x;
    out[1] = v.y;
    out[2] = v.z;
    out[3] = v.w;
}

__device__ inline void
load_quad(const double *p, double *out)
{
    const double2 v0 = *(const double2 *)p, v1 = *(const double2 *)(p + 2);
    out[0] = v0.x;
    out[1] = v0.y;
    out[2] = v1.x;
    out[3] = v1.y;
}

// The simt_vector tile geometry as a plan, for gemm_plan.h's functions (constants here).
__device__ inline PtlCudaGemmPlan
simt_vector_geometry(int a_k_unit, int b_n_unit, int vec)
{
    PtlCudaGemmPlan q = {};
    q.kind = PTL_CUDA_GEMM_SIMT_VECTOR;
    q.bm = PTL_GEMM_VECTOR_BM;
    q.bn = PTL_GEMM_VECTOR_BN;
    q.bk = PTL_GEMM_VECTOR_BK;
    q.tm = PTL_GEMM_VECTOR_TM;
    q.tn = PTL_GEMM_VECTOR_TN;
    q.threads = 256;
    q.vec = vec;
    q.a_k_unit = a_k_unit;
    q.b_n_unit = b_n_unit;
    return q;
}

// Thread tid's vectors of one operand tile (is_b: B's, MN rows of n, else A's, rows of m) at
// k0 from global memory into registers: whole vectors where they lie inside the operand,
// else element by element with zeros past the edges (ptl_gemm_vector_valid).
template <typename T, int K_UNIT, int MN, int BK, int LOADS>
__device__ inline void
fetch_vectors(const PtlDeviceGemmArgs &a, int is_b, int64_t boff, int64_t mn0, int64_t k0,
              int tid, typename Vector16<T>::type *regs)
{
    typedef typename Vector16<T>::type V;
    constexpr int VEC = 16 / sizeof(T);
    const T *src = (const T *)(is_b ? a.b : a.a);
    const int64_t mn_size = is_b ? a.n : a.m;
#pragma unroll
    for (int l = 0; l < LOADS; l++) {
        int mn, kk;
        ptl_gemm_tile_vector(tid + l * 256, K_UNIT, MN, BK, VEC, &mn, &kk);
        const int valid = ptl_gemm_vector_valid(mn0 + mn, k0 + kk, K_UNIT, mn_size, a.k, VEC);
        const int64_t off = valid == 0 ? 0
                            : is_b     ? ptl_gemm_b_at(&a, boff, k0 + kk, mn0 + mn)
                                       : ptl_gemm_a_at(&a, boff, mn0 + mn, k0 + kk);
        if (valid == VEC) {
            regs[l] = *(const V *)(src + off);
        }
        else {
#pragma unroll
            for (int e = 0; e < VEC; e++) {
                vector_set(regs[l], e, e < valid ? src[off + e] : (T)0);
            }
        }
    }
}

// The fetched vectors into the shared tile t[BK][MN + PAD] (k-major): one store per element
// when the vectors run along k, else one vector store.
template <typename T, int K_UNIT, int MN, int BK, int LOADS>
__device__ inline void
store_vectors(T (*t)[MN + PTL_GEMM_VECTOR_PAD], int tid, const typename Vector16<T>::type *regs)
{
    typedef typename Vector16<T>::type V;
    constexpr int VEC = 16 / sizeof(T);
#pragma unroll
    for (int l = 0; l < LOADS; l++) {
        int mn, kk;
        ptl_gemm_tile_vector(tid + l * 256, K_UNIT, MN, BK, VEC, &mn, &kk);
        if (K_UNIT) {
#pragma unroll
            for (int e = 0; e < VEC; e++) {
                t[kk + e][mn] = vector_elem(regs[l], e);
            }
        }
        else {
            *(V *)&t[kk][mn] = regs[l];
        }
    }
}

// simt_vector (Note [CUDA GEMM plan]): block tile 128 x 128, k-tile 8, 256 threads of 8 x 8;
// A_K_UNIT: A's unit stride is along k (else m); B_K_UNIT: B's is along k (else n).  The
// next k-tile's vectors are fetched into registers while the block multiplies the current
// shared buffer, then stored into the other one: one barrier per k-step.
template <typename T, int A_K_UNIT, int B_K_UNIT>
__global__ void
__launch_bounds__(256)
gemm_simt_vector(PtlDeviceGemmArgs a)
{
    typedef typename Vector16<T>::type V;
    constexpr int BM = PTL_GEMM_VECTOR_BM, BN = PTL_GEMM_VECTOR_BN, BK = PTL_GEMM_VECTOR_BK;
    constexpr int TM = PTL_GEMM_VECTOR_TM, TN = PTL_GEMM_VECTOR_TN, PAD = PTL_GEMM_VECTOR_PAD;
    constexpr int VEC = 16 / sizeof(T);
    constexpr int LOADS_A = BM * BK / VEC / 256, LOADS_B = BN * BK / VEC / 256;
    static_assert(LOADS_A * VEC * 256 == BM * BK && LOADS_B * VEC * 256 == BN * BK, "tile");
    __shared__ __align__(16) T ta[2][BK][BM + PAD];
    __shared__ __align__(16) T tb[2][BK][BN + PAD];
    const int tid = (int)threadIdx.x;
    const PtlCudaGemmPlan q = simt_vector_geometry(A_K_UNIT, !B_K_UNIT, VEC);
    const int row_lo = ptl_gemm_quad_row(&q, tid, 0), row_hi = ptl_gemm_quad_row(&q, tid, TM / 2);
    const int col_lo = ptl_gemm_quad_col(&q, tid, 0), col_hi = ptl_gemm_quad_col(&q, tid, TN / 2);
    for (int64_t z = blockIdx.z; z < a.batch; z += gridDim.z) {
        const int64_t abo = ptl_gemm_batch_offset(&a, a.a_bs, z);
        const int64_t bbo = ptl_gemm_batch_offset(&a, a.b_bs, z);
        for (int64_t y = blockIdx.y; y * BM < a.m; y += gridDim.y) {
            const int64_t row0 = y * BM, col0 = (int64_t)blockIdx.x * BN;
            T acc[TM][TN];
#pragma unroll
            for (int i = 0; i < TM; i++) {
#pragma unroll
                for (int j = 0; j < TN; j++) {
                    acc[i][j] = 0;
                }
            }
            V ra[LOADS_A], rb[LOADS_B];
            int buf = 0;
            if (a.k > 0) {
                fetch_vectors<T, A_K_UNIT, BM, BK, LOADS_A>(a, 0, abo, row0, 0, tid, ra);
                fetch_vectors<T, B_K_UNIT, BN, BK, LOADS_B>(a, 1, bbo, col0, 0, tid, rb);
                store_vectors<T, A_K_UNIT, BM, BK, LOADS_A>(ta[0], tid, ra);
                store_vectors<T, B_K_UNIT, BN, BK, LOADS_B>(tb[0], tid, rb);
                __syncthreads();
            }
            for (int64_t k0 = 0; k0 < a.k; k0 += BK) {
                const int more = k0 + BK < a.k;
                if (more) {
                    fetch_vectors<T, A_K_UNIT, BM, BK, LOADS_A>(a, 0, abo, row0, k0 + BK, tid, ra);
                    fetch_vectors<T, B_K_UNIT, BN, BK, LOADS_B>(a, 1, bbo, col0, k0 + BK, tid, rb);
                }
#pragma unroll
                for (int kk = 0; kk < BK; kk++) {
                    T av[TM], bv[TN];
                    load_quad(&ta[buf][kk][row_lo], av);
                    load_quad(&ta[buf][kk][row_hi], av + TM / 2);
                    load_quad(&tb[buf][kk][col_lo], bv);
                    load_quad(&tb[buf][kk][col_hi], bv + TN / 2);
#pragma unroll
                    for (int i = 0; i < TM; i++) {
#pragma unroll
                        for (int j = 0; j < TN; j++) {
                            acc[i][j] += av[i] * bv[j];
                        }
                    }
                }
                if (more) {
                    store_vectors<T, A_K_UNIT, BM, BK, LOADS_A>(ta[buf ^ 1], tid, ra);
                    store_vectors<T, B_K_UNIT, BN, BK, LOADS_B>(tb[buf ^ 1], tid, rb);
                }
                __syncthreads();
                buf ^= 1;
            }
            const int64_t cbo = ptl_gemm_batch_offset(&a, a.c_bs, z);
            const int64_t sbo = ptl_gemm_batch_offset(&a, a.s_bs, z);
#pragma unroll
            for (int i = 0; i < TM; i++) {
#pragma unroll
                for (int j = 0; j < TN; j++) {
                    write_c<T>(a, cbo, sbo, row0 + ptl_gemm_quad_row(&q, tid, i),
                               col0 + ptl_gemm_quad_col(&q, tid, j), (double)acc[i][j]);
                }
            }
        }
    }
}

// The simt_vector kernel for the plan's layout flags.
template <typename T>
static void
launch_simt_vector(const PtlDeviceGemmArgs *a, const PtlCudaGemmPlan *p, dim3 grid,
                   cudaStream_t stream)
{
    if (p->a_k_unit && p->b_n_unit) {
        gemm_simt_vector<T, 1, 0><<<grid, 256, 0, stream>>>(*a);
    }
    else if (p->a_k_unit) {
        gemm_simt_vector<T, 1, 1><<<grid, 256, 0, stream>>>(*a);
    }
    else if (p->b_n_unit) {
        gemm_simt_vector<T, 0, 0><<<grid, 256, 0, stream>>>(*a);
    }
    else {
        gemm_simt_vector<T, 0, 1><<<grid, 256, 0, stream>>>(*a);
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
    case PTL_CUDA_GEMM_MMA:
        return ptl_cuda_gemm_mma_launch(a, p, stream);
    case PTL_CUDA_GEMM_SIMT_VECTOR:
        if (a->dtype == PTL_DTYPE_FLOAT32) {
            launch_simt_vector<float>(a, p, grid, stream);
        }
        else {
            launch_simt_vector<double>(a, p, grid, stream);
        }
        break;
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
