// sort.cu -- the sort kernels (sort, argsort, topk): keys, the merge passes and the emit of
// a stable merge sort of every lane at once, one thread per element.  The plans come from
// sort_plan.c and the per-element arithmetic from sort_plan.h (Note [CUDA sort] there),
// which the host emulation runs in the CPU tests; what is only here is the grid loops and
// the passes, which the emulation mirrors.  Mirrors ATen/native/cuda/Sort.cu and
// TensorTopK.cu in behaviour.
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_api.h"
#include "launch_check.h"
#include "sort_plan.h"

// one thread per element of the lanes
__global__ void
sort_keys_kernel(PtlDeviceSortArgs a, uint64_t *k, int64_t *ix)
{
    PTL_GRID_LOOP(q, a.nlanes * a.len)
    {
        ptl_sort_keys_at(&a, q, k, ix);
    }
}

// one thread per element: its place after merging the runs of w
__global__ void
sort_merge_kernel(PtlDeviceSortArgs a, int64_t w, const uint64_t *ks, const int64_t *is,
                  uint64_t *kd, int64_t *id)
{
    PTL_GRID_LOOP(q, a.nlanes * a.len)
    {
        ptl_sort_merge_at(&a, w, q, ks, is, kd, id);
    }
}

// one thread per output element
__global__ void
sort_emit_kernel(PtlDeviceSortArgs a, const int64_t *ix)
{
    PTL_GRID_LOOP(q, a.nlanes * a.nsel)
    {
        ptl_sort_emit_at(&a, q, ix);
    }
}

extern "C" int
ptl_cuda_sort_launch(const PtlDeviceSortArgs *a, const PtlCudaNnPlan *elems,
                     const PtlCudaNnPlan *outs, int64_t *ws)
{
    cudaStream_t stream = ptl_cuda_launch_stream();
    const int64_t n = a->nlanes * a->len;
    uint64_t *k[2] = {(uint64_t *)ws, (uint64_t *)ws + n};
    int64_t *ix[2] = {ws + 2 * n, ws + 3 * n};
    int src = 0;
    if (elems->grid == 0 || outs->grid == 0) {
        return 0;
    }
    sort_keys_kernel<<<(unsigned)elems->grid, (unsigned)elems->block, 0, stream>>>(*a, k[0],
                                                                                   ix[0]);
    PTL_CUDA_CHECK_LAUNCH();
    for (int64_t w = 1; w < a->len; w *= 2, src = 1 - src) {
        sort_merge_kernel<<<(unsigned)elems->grid, (unsigned)elems->block, 0, stream>>>(
            *a, w, k[src], ix[src], k[1 - src], ix[1 - src]);
        PTL_CUDA_CHECK_LAUNCH();
    }
    sort_emit_kernel<<<(unsigned)outs->grid, (unsigned)outs->block, 0, stream>>>(*a, ix[src]);
    PTL_CUDA_CHECK_LAUNCH();
    return 0;
}
