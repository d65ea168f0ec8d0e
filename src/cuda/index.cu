// index.cu -- the gather and scatter kernels (scatter src and value, scatter_add,
// scatter_reduce), advanced indexing's gather and scatter (index, index_put_, index_select,
// index_add, index_copy, index_fill), cat, where, masked_fill, take and shape.c's movers (flip,
// roll, rot90, repeat, tril, triu).  The plans come from index_plan.c and the
// per-element and per-thread arithmetic from index_plan.h (Note [CUDA index and sort
// kernels] there), which the host emulation runs in the CPU tests; what is only here is the
// grid loops, which the emulation mirrors (ptl_cuda_emulate_elems).  Mirrors
// ATen/native/cuda/ScatterGatherKernel.cu, Indexing.cu and Shape.cu (cat).
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_api.h"
#include "index_plan.h"
#include "launch_check.h"

// one thread per index element
__global__ void
gather_kernel(PtlDeviceScatterArgs a, int64_t *ws)
{
    PTL_GRID_LOOP(j, a.numel)
    {
        ptl_gather_at(&a, j, ws);
    }
}

// thread u: fiber u % nfib, self's rows [u / nfib chunk, (u / nfib + 1) chunk) along dim
__global__ void
scatter_kernel(PtlDeviceScatterArgs a, int64_t nfib, int64_t chunk, int64_t n, int64_t *ws)
{
    int64_t *count = a.reduce == PTL_DEVICE_IDX_MEAN || !a.include_self ? ws + 1 : 0;
    PTL_GRID_LOOP(u, n)
    {
        const int64_t v0 = u / nfib * chunk, v1 = v0 + chunk;
        ptl_scatter_fiber(&a, u % nfib, v0, v1 < a.self_size ? v1 : a.self_size, count, ws);
    }
}

extern "C" int
ptl_cuda_scatter_gather_launch(const PtlDeviceScatterArgs *a, const PtlCudaNnPlan *elems,
                               int64_t nfib, int64_t chunk, int64_t *ws)
{
    cudaStream_t stream = ptl_cuda_launch_stream();
    if (elems->grid == 0) {
        return 0;
    }
    if (!a->scatter) {
        gather_kernel<<<(unsigned)elems->grid, (unsigned)elems->block, 0, stream>>>(*a, ws);
        PTL_CUDA_CHECK_LAUNCH();
        return 0;
    }
    const int64_t rows = a->self_size > 0 ? a->self_size : 1;
    scatter_kernel<<<(unsigned)elems->grid, (unsigned)elems->block, 0, stream>>>(
        *a, nfib, chunk, (rows + chunk - 1) / chunk * nfib, ws);
    PTL_CUDA_CHECK_LAUNCH();
    return 0;
}

// advanced indexing's gather: one thread per output element
__global__ void
adv_gather_kernel(PtlDeviceAdvIndexArgs a)
{
    PTL_GRID_LOOP(q, a.nbefore * a.bnumel * a.nafter)
    {
        ptl_adv_gather_at(&a, q);
    }
}

// advanced indexing's scatter: thread u takes (group u / (nafter nbefore), i, j), j fastest
__global__ void
adv_scatter_kernel(PtlDeviceAdvIndexArgs a, const int64_t *perm, const int64_t *group,
                   int64_t ngroups)
{
    PTL_GRID_LOOP(u, ngroups * a.nbefore * a.nafter)
    {
        const int64_t na = a.nafter, nb = a.nbefore;
        ptl_adv_scatter_group(&a, perm, group, u / (na * nb), u / na % nb, u % na);
    }
}

extern "C" int
ptl_cuda_adv_index_launch(const PtlDeviceAdvIndexArgs *a, const PtlCudaNnPlan *elems,
                          const int64_t *perm, const int64_t *group, int64_t ngroups)
{
    cudaStream_t stream = ptl_cuda_launch_stream();
    if (elems->grid == 0) {
        return 0;
    }
    if (!a->scatter) {
        adv_gather_kernel<<<(unsigned)elems->grid, (unsigned)elems->block, 0, stream>>>(*a);
    }
    else {
        adv_scatter_kernel<<<(unsigned)elems->grid, (unsigned)elems->block, 0, stream>>>(
            *a, perm, group, ngroups);
    }
    PTL_CUDA_CHECK_LAUNCH();
    return 0;
}

// cat: one thread per output element, its input found in the table
__global__ void
cat_kernel(PtlDeviceCatArgs a)
{
    PTL_GRID_LOOP(q, a.numel)
    {
        ptl_cat_at(&a, q);
    }
}

extern "C" int
ptl_cuda_cat_launch(const PtlDeviceCatArgs *a, const PtlCudaNnPlan *elems)
{
    if (elems->grid == 0) {
        return 0;
    }
    cat_kernel<<<(unsigned)elems->grid, (unsigned)elems->block, 0, ptl_cuda_launch_stream()>>>(
        *a);
    PTL_CUDA_CHECK_LAUNCH();
    return 0;
}

// where / masked_fill and take: one thread per element (Note [CUDA masked_fill and take])
__global__ void
select_kernel(PtlDeviceSelectArgs a)
{
    PTL_GRID_LOOP(j, a.numel)
    {
        ptl_select_at(&a, j);
    }
}

__global__ void
take_kernel(PtlDeviceTakeArgs a, int64_t *ws)
{
    PTL_GRID_LOOP(j, a.inumel)
    {
        ptl_take_at(&a, j, ws);
    }
}

extern "C" int
ptl_cuda_select_launch(const PtlDeviceSelectArgs *a, const PtlCudaNnPlan *elems)
{
    select_kernel<<<(unsigned)elems->grid, (unsigned)elems->block, 0, ptl_cuda_launch_stream()>>>(
        *a);
    PTL_CUDA_CHECK_LAUNCH();
    return 0;
}

extern "C" int
ptl_cuda_take_launch(const PtlDeviceTakeArgs *a, const PtlCudaNnPlan *elems, int64_t *ws)
{
    take_kernel<<<(unsigned)elems->grid, (unsigned)elems->block, 0, ptl_cuda_launch_stream()>>>(
        *a, ws);
    PTL_CUDA_CHECK_LAUNCH();
    return 0;
}

// shape.c's movers: one thread per output element (Note [CUDA masked_fill and take])
__global__ void
shape_kernel(PtlDeviceShapeArgs a)
{
    PTL_GRID_LOOP(j, a.numel)
    {
        ptl_shape_at(&a, j);
    }
}

extern "C" int
ptl_cuda_shape_launch(const PtlDeviceShapeArgs *a, const PtlCudaNnPlan *elems)
{
    shape_kernel<<<(unsigned)elems->grid, (unsigned)elems->block, 0, ptl_cuda_launch_stream()>>>(
        *a);
    PTL_CUDA_CHECK_LAUNCH();
    return 0;
}
