// conv.cu -- the implicit-GEMM convolution kernels: conv.c's three primitives (a
// convolution's columns, a transposed convolution's or an input gradient's image, a weight
// gradient) as one tiled shared-memory GEMM per group, and the second pass of a split weight
// gradient.  The plan comes from conv_plan.c and the index arithmetic and per-thread work
// from conv_plan.h (Note [CUDA convolution] there), which the host emulation runs in the CPU
// tests; what is only here is the tile loop and the barriers, which the emulation mirrors
// (emulate_gemm_* in conv_plan.c).
#include <cuda_runtime.h>
#include <stdint.h>

#include "conv_plan.h"
#include "launch_check.h"

// the typed per-thread functions of conv_plan.h, by T
template <typename T> struct ConvOps;

template <> struct ConvOps<float> {
    static __device__ void load(const PtlDeviceConvArgs *a, const PtlCudaConvPlan *p,
                                const PtlConvTile *tl, int64_t k0, int t, float *as, float *bs)
    {
        ptl_conv_load_f4(a, p, tl, k0, t, as, bs);
    }
    static __device__ void mma(const float *as, const float *bs, int64_t kn, int t, float *acc)
    {
        ptl_conv_mma_f4(as, bs, kn, t, acc);
    }
    static __device__ void store(const PtlDeviceConvArgs *a, const PtlCudaConvPlan *p,
                                 const PtlConvTile *tl, int t, const float *acc, float *ws)
    {
        ptl_conv_store_f4(a, p, tl, t, acc, ws);
    }
    static __device__ void finish(const PtlDeviceConvArgs *a, const PtlCudaConvPlan *p,
                                  int64_t o, const float *ws)
    {
        ptl_conv_finish_f4(a, p, o, ws);
    }
};

template <> struct ConvOps<double> {
    static __device__ void load(const PtlDeviceConvArgs *a, const PtlCudaConvPlan *p,
                                const PtlConvTile *tl, int64_t k0, int t, double *as, double *bs)
    {
        ptl_conv_load_f8(a, p, tl, k0, t, as, bs);
    }
    static __device__ void mma(const double *as, const double *bs, int64_t kn, int t,
                               double *acc)
    {
        ptl_conv_mma_f8(as, bs, kn, t, acc);
    }
    static __device__ void store(const PtlDeviceConvArgs *a, const PtlCudaConvPlan *p,
                                 const PtlConvTile *tl, int t, const double *acc, double *ws)
    {
        ptl_conv_store_f8(a, p, tl, t, acc, ws);
    }
    static __device__ void finish(const PtlDeviceConvArgs *a, const PtlCudaConvPlan *p,
                                  int64_t o, const double *ws)
    {
        ptl_conv_finish_f8(a, p, o, ws);
    }
};

// block x takes tiles x, x + gridDim.x, ...; per K step: load, barrier, products, barrier
template <typename T>
__global__ void __launch_bounds__(PTL_CONV_THREADS)
conv_gemm(PtlDeviceConvArgs a, PtlCudaConvPlan p, T *ws)
{
    __shared__ T as[PTL_CONV_BK * PTL_CONV_BM], bs[PTL_CONV_BK * PTL_CONV_BN];
    const int t = threadIdx.x;
    for (int64_t tile = blockIdx.x; tile < p.tiles; tile += gridDim.x) {
        const PtlConvTile tl = ptl_conv_tile(&p, tile);
        T acc[PTL_CONV_MICRO * PTL_CONV_MICRO];
        for (int i = 0; i < PTL_CONV_MICRO * PTL_CONV_MICRO; i++) {
            acc[i] = 0;
        }
        for (int64_t k0 = tl.k0; k0 < tl.k1; k0 += PTL_CONV_BK) {
            const int64_t kn = tl.k1 - k0 < PTL_CONV_BK ? tl.k1 - k0 : PTL_CONV_BK;
            ConvOps<T>::load(&a, &p, &tl, k0, t, as, bs);
            __syncthreads();
            ConvOps<T>::mma(as, bs, kn, t, acc);
            __syncthreads();
        }
        ConvOps<T>::store(&a, &p, &tl, t, acc, ws);
    }
}

// a split weight gradient's second pass: one thread per output, its chunks in order
template <typename T>
__global__ void
conv_finish(PtlDeviceConvArgs a, PtlCudaConvPlan p, const T *ws)
{
    PTL_GRID_LOOP(o, p.groups * p.M * p.J)
    {
        ConvOps<T>::finish(&a, &p, o, ws);
    }
}

template <typename T>
static int
launch(const PtlDeviceConvArgs *a, const PtlCudaConvPlan *p, T *ws)
{
    cudaStream_t stream = ptl_cuda_launch_stream();
    conv_gemm<T><<<(unsigned)p->grid, PTL_CONV_THREADS, 0, stream>>>(*a, *p, ws);
    PTL_CUDA_CHECK_LAUNCH();
    if (p->nsplit > 1) {
        conv_finish<T><<<(unsigned)p->finish.grid, (unsigned)p->finish.block, 0, stream>>>(
            *a, *p, ws);
        PTL_CUDA_CHECK_LAUNCH();
    }
    return 0;
}

extern "C" int
ptl_cuda_conv_launch(const PtlDeviceConvArgs *a, const PtlCudaConvPlan *plan, void *ws)
{
    if (a->dtype == PTL_DTYPE_FLOAT64) {
        return launch(a, plan, (double *)ws);
    }
    return launch(a, plan, (float *)ws);
}

// im2col (unfold): one thread per column element, a raw copy of isz bytes
__global__ void
im2col_elems(PtlDeviceConvArgs a, int64_t n, int64_t isz)
{
    PTL_GRID_LOOP(e, n)
    {
        ptl_conv_im2col_at(&a, e, isz);
    }
}

// col2im (fold): one thread per image element, gathering the taps that land on it
__global__ void
col2im_elems(PtlDeviceConvArgs a, int64_t n)
{
    PTL_GRID_LOOP(e, n)
    {
        ptl_conv_col2im_at(&a, e);
    }
}

extern "C" int
ptl_cuda_fold_launch(const PtlDeviceConvArgs *a, const PtlCudaNnPlan *elems, int64_t isz)
{
    cudaStream_t stream = ptl_cuda_launch_stream();
    if (a->kind == PTL_DEVICE_CONV_IM2COL) {
        const int64_t n = a->n * a->c_col * a->col[0] * a->col[1] * a->col[2];
        im2col_elems<<<(unsigned)elems->grid, (unsigned)elems->block, 0, stream>>>(*a, n, isz);
    }
    else {
        const int64_t n = a->n * a->c_img * a->img[0] * a->img[1] * a->img[2];
        col2im_elems<<<(unsigned)elems->grid, (unsigned)elems->block, 0, stream>>>(*a, n);
    }
    PTL_CUDA_CHECK_LAUNCH();
    return 0;
}
