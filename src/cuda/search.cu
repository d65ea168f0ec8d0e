// search.cu -- the searchsorted kernel (Note [CUDA searchsorted] in search_plan.h): one
// thread per value, running search_plan.h's per-thread function, which the host emulation
// runs too.
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_api.h"
#include "launch_check.h"
#include "search_plan.h"

__global__ void
search_kernel(PtlDeviceSearchArgs a)
{
    PTL_GRID_LOOP(i, a.n)
    {
        ptl_search_at(&a, i);
    }
}

extern "C" int
ptl_cuda_search_launch(const PtlDeviceSearchArgs *a, const PtlCudaNnPlan *elems)
{
    search_kernel<<<(unsigned)elems->grid, (unsigned)elems->block, 0, ptl_cuda_launch_stream()>>>(
        *a);
    PTL_CUDA_CHECK_LAUNCH();
    return 0;
}
