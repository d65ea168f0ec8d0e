// optim.cu -- the fused optimizer steps (_fused_sgd_step_, _fused_adam_step_) on CUDA
// tensors: one thread per element, optim_step.h's step, the same PTL_HD source the CPU
// kernel (optim.c) runs, with its products rounded apart (Note [Products rounded apart] in
// c10/macros.h) and IEEE square root and division (nvcc's defaults), so a step gives the
// CPU's bits.  The checks and the bias corrections (in double) stay the CPU kernel's; the
// CUDA key runs it and its last step calls these launchers through optim_step.h's hooks.
// Mirrors ATen/native/cuda/fused_adam_impl.cu and FusedSgdKernel.cu.
#include <cuda_runtime.h>
#include <stdint.h>

#include "../c10/dtype.h"
#include "cuda_api.h"
#include "launch_check.h"

template <typename T> struct Steps;
template <> struct Steps<float> {
    typedef PtlSgdConsts_f4 Sgd;
    typedef PtlAdamConsts_f4 Adam;
    __device__ static Sgd sgd(const PtlSgdStepArgs &a) { return ptl_sgd_consts_f4(&a); }
    __device__ static Adam adam(const PtlAdamStepArgs &a) { return ptl_adam_consts_f4(&a); }
    __device__ static void sgd_step(const Sgd &c, float *p, float *b, const float *g, int64_t i)
    {
        ptl_sgd_step_f4(&c, p, b, g, i);
    }
    __device__ static void adam_step(const Adam &c, float *p, float *m, float *v, float *vmax,
                                     const float *g, int64_t i)
    {
        ptl_adam_step_f4(&c, p, m, v, vmax, g, i);
    }
};
template <> struct Steps<double> {
    typedef PtlSgdConsts_f8 Sgd;
    typedef PtlAdamConsts_f8 Adam;
    __device__ static Sgd sgd(const PtlSgdStepArgs &a) { return ptl_sgd_consts_f8(&a); }
    __device__ static Adam adam(const PtlAdamStepArgs &a) { return ptl_adam_consts_f8(&a); }
    __device__ static void sgd_step(const Sgd &c, double *p, double *b, const double *g,
                                    int64_t i)
    {
        ptl_sgd_step_f8(&c, p, b, g, i);
    }
    __device__ static void adam_step(const Adam &c, double *p, double *m, double *v,
                                     double *vmax, const double *g, int64_t i)
    {
        ptl_adam_step_f8(&c, p, m, v, vmax, g, i);
    }
};

template <typename T>
__global__ void
sgd_step(PtlSgdStepArgs a)
{
    const typename Steps<T>::Sgd c = Steps<T>::sgd(a);
    PTL_GRID_LOOP(i, a.n)
    {
        Steps<T>::sgd_step(c, (T *)a.p, (T *)a.buf, (const T *)a.g, i);
    }
}

template <typename T>
__global__ void
adam_step(PtlAdamStepArgs a)
{
    const typename Steps<T>::Adam c = Steps<T>::adam(a);
    PTL_GRID_LOOP(i, a.n)
    {
        Steps<T>::adam_step(c, (T *)a.p, (T *)a.m, (T *)a.v, (T *)a.vmax, (const T *)a.g, i);
    }
}

extern "C" int
ptl_cuda_sgd_step_launch(const PtlSgdStepArgs *a, const PtlCudaNnPlan *plan)
{
    const cudaStream_t stream = ptl_cuda_launch_stream();
    if (a->dtype == PTL_DTYPE_FLOAT32) {
        sgd_step<float><<<(unsigned)plan->grid, (unsigned)plan->block, 0, stream>>>(*a);
    }
    else {
        sgd_step<double><<<(unsigned)plan->grid, (unsigned)plan->block, 0, stream>>>(*a);
    }
    PTL_CUDA_CHECK_LAUNCH();
    return 0;
}

extern "C" int
ptl_cuda_adam_step_launch(const PtlAdamStepArgs *a, const PtlCudaNnPlan *plan)
{
    const cudaStream_t stream = ptl_cuda_launch_stream();
    if (a->dtype == PTL_DTYPE_FLOAT32) {
        adam_step<float><<<(unsigned)plan->grid, (unsigned)plan->block, 0, stream>>>(*a);
    }
    else {
        adam_step<double><<<(unsigned)plan->grid, (unsigned)plan->block, 0, stream>>>(*a);
    }
    PTL_CUDA_CHECK_LAUNCH();
    return 0;
}
