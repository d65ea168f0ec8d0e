/* cuda_stub.c -- the CUDA entry points of a CPU-only build (no nvcc): CUDA is never
 * available.  With nvcc, runtime.cu provides them and this file compiles to nothing. */
#include "attention_plan.h"
#include "cuda_api.h"
#include "gemm_plan.h"
#include "resample_plan.h"
#include "rnn_plan.h"
#include "search_plan.h"

#include "../c10/error.h"

#ifndef PTL_WITH_CUDA
int
ptl_cuda_is_built(void)
{
    return 0;
}

int
ptl_cuda_device_count(void)
{
    return 0;
}

const char *
ptl_cuda_no_device_reason(void)
{
    return "pytorchlite was built without CUDA: nvcc was not found at build time";
}

int
ptl_cuda_runtime_version(void)
{
    return 0;
}

static int
not_built(void)
{
    return ptl_error_set(PTL_ERR_RUNTIME, "Torch not compiled with CUDA enabled");
}

int
ptl_cuda_current_device(int *device)
{
    (void)device;
    return not_built();
}

int
ptl_cuda_set_device(int device)
{
    (void)device;
    return not_built();
}

int
ptl_cuda_synchronize(int device)
{
    (void)device;
    return not_built();
}

int
ptl_cuda_get_device_properties(int device, PtlCudaDeviceProperties *out)
{
    (void)device;
    (void)out;
    return not_built();
}

int
ptl_cuda_register_allocator(void)
{
    return not_built();
}

const struct PtlDeviceMemoryOps *
ptl_cuda_device_memory_ops(void)
{
    return NULL;
}

struct PtlCachingAllocator *
ptl_cuda_caching_allocator(int device)
{
    (void)device;
    return NULL;
}

int
ptl_cuda_reduce_launch(const PtlDeviceReduceArgs *a, const PtlCudaReducePlan *plan,
                       void *workspace)
{
    (void)a;
    (void)plan;
    (void)workspace;
    return not_built();
}

int
ptl_cuda_softmax_launch(const PtlDeviceSoftmaxArgs *a, const PtlCudaSoftmaxPlan *plan)
{
    (void)a;
    (void)plan;
    return not_built();
}

int
ptl_cuda_memcpy(void *dst, int dst_on_device, const void *src, int src_on_device,
                size_t nbytes)
{
    (void)dst;
    (void)dst_on_device;
    (void)src;
    (void)src_on_device;
    (void)nbytes;
    return not_built();
}

int
ptl_cuda_layer_norm_launch(const PtlDeviceLayerNormArgs *a, const PtlCudaNnPlan *plan,
                           double *ws)
{
    (void)a;
    (void)plan;
    (void)ws;
    return not_built();
}

int
ptl_cuda_nll_launch(const PtlDeviceNllArgs *a, const PtlCudaNnPlan *block,
                    const PtlCudaNnPlan *elems, int64_t *ws)
{
    (void)a;
    (void)block;
    (void)elems;
    (void)ws;
    return not_built();
}

int
ptl_cuda_embedding_launch(const PtlDeviceEmbeddingArgs *a, const PtlCudaNnPlan *count,
                          const PtlCudaNnPlan *elems, int64_t chunk, int64_t *ws)
{
    (void)a;
    (void)count;
    (void)elems;
    (void)chunk;
    (void)ws;
    return not_built();
}

int
ptl_cuda_batch_norm_launch(const PtlDeviceBatchNormArgs *a, const PtlCudaNnPlan *tasks,
                           const PtlCudaNnPlan *chans, const PtlCudaNnPlan *elems, double *ws)
{
    (void)a;
    (void)tasks;
    (void)chans;
    (void)elems;
    (void)ws;
    return not_built();
}

int
ptl_cuda_grid_sampler_launch(const PtlGridSampler *a, const PtlCudaNnPlan *elems)
{
    (void)a;
    (void)elems;
    return not_built();
}

int
ptl_cuda_rnn_step_launch(const PtlDeviceRnnStepArgs *a, const PtlCudaNnPlan *elems)
{
    (void)a;
    (void)elems;
    return not_built();
}

int
ptl_cuda_search_launch(const PtlDeviceSearchArgs *a, const PtlCudaNnPlan *elems)
{
    (void)a;
    (void)elems;
    return not_built();
}

int
ptl_cuda_resample_launch(const PtlCudaResampleJob *j, const PtlCudaNnPlan *elems)
{
    (void)j;
    (void)elems;
    return not_built();
}

int
ptl_cuda_scatter_gather_launch(const PtlDeviceScatterArgs *a, const PtlCudaNnPlan *elems,
                               int64_t nfib, int64_t chunk, int64_t *ws)
{
    (void)a;
    (void)elems;
    (void)nfib;
    (void)chunk;
    (void)ws;
    return not_built();
}

int
ptl_cuda_conv_launch(const PtlDeviceConvArgs *a, const PtlCudaConvPlan *plan, void *ws)
{
    (void)a;
    (void)plan;
    (void)ws;
    return not_built();
}

int
ptl_cuda_fold_launch(const PtlDeviceConvArgs *a, const PtlCudaNnPlan *elems, int64_t isz)
{
    (void)a;
    (void)elems;
    (void)isz;
    return not_built();
}

int
ptl_cuda_adv_index_launch(const PtlDeviceAdvIndexArgs *a, const PtlCudaNnPlan *elems,
                          const int64_t *perm, const int64_t *group, int64_t ngroups)
{
    (void)a;
    (void)elems;
    (void)perm;
    (void)group;
    (void)ngroups;
    return not_built();
}

int
ptl_cuda_cat_launch(const PtlDeviceCatArgs *a, const PtlCudaNnPlan *elems)
{
    (void)a;
    (void)elems;
    return not_built();
}

int
ptl_cuda_sort_launch(const PtlDeviceSortArgs *a, const PtlCudaNnPlan *elems,
                     const PtlCudaNnPlan *outs, int64_t *ws)
{
    (void)a;
    (void)elems;
    (void)outs;
    (void)ws;
    return not_built();
}

int
ptl_cuda_pool_launch(const PtlDevicePoolArgs *a, const PtlCudaNnPlan *plan)
{
    (void)a;
    (void)plan;
    return not_built();
}

int
ptl_cuda_random_launch(const PtlDistJob *j, const PtlCudaNnPlan *plan)
{
    (void)j;
    (void)plan;
    return not_built();
}

int
ptl_cuda_sgd_step_launch(const PtlSgdStepArgs *a, const PtlCudaNnPlan *plan)
{
    (void)a;
    (void)plan;
    return not_built();
}

int
ptl_cuda_adam_step_launch(const PtlAdamStepArgs *a, const PtlCudaNnPlan *plan)
{
    (void)a;
    (void)plan;
    return not_built();
}

int
ptl_cuda_gemm_launch(const PtlDeviceGemmArgs *a, const PtlCudaGemmPlan *plan)
{
    (void)a;
    (void)plan;
    return not_built();
}

int
ptl_cuda_attention_launch(const PtlDeviceAttnJob *j, const PtlCudaAttnPlan *p, int kind, int f8)
{
    (void)j;
    (void)p;
    (void)kind;
    (void)f8;
    return not_built();
}

int
ptl_cuda_unpool_launch(const PtlDevicePoolArgs *a, const PtlCudaNnPlan *src,
                       const PtlCudaNnPlan *dst, int64_t *ws)
{
    (void)a;
    (void)src;
    (void)dst;
    (void)ws;
    return not_built();
}

int
ptl_cuda_select_launch(const PtlDeviceSelectArgs *a, const PtlCudaNnPlan *elems)
{
    (void)a;
    (void)elems;
    return not_built();
}

int
ptl_cuda_take_launch(const PtlDeviceTakeArgs *a, const PtlCudaNnPlan *elems, int64_t *ws)
{
    (void)a;
    (void)elems;
    (void)ws;
    return not_built();
}

int
ptl_cuda_shape_launch(const PtlDeviceShapeArgs *a, const PtlCudaNnPlan *elems)
{
    (void)a;
    (void)elems;
    return not_built();
}

int
ptl_cuda_scan_launch(const PtlDeviceScanArgs *a, const PtlCudaNnPlan *elems)
{
    (void)a;
    (void)elems;
    return not_built();
}
#endif
