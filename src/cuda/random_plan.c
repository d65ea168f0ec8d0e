/* random_plan.c -- the host side of the random fill kernel, in every build: its plan, the
 * hook random.c calls for CUDA tensors, and the kernel's emulation on the host (the same
 * per-thread function, ptl_dist_fill_block, in the kernel's grid-stride order).  See Note
 * [CUDA random fills] in random.cu. */
#include "cuda_api.h"

#include "../c10/error.h"

PtlCudaNnPlan
ptl_cuda_random_plan(const PtlDistJob *j, const PtlCudaReduceTuning *t)
{
    const int64_t k = (int64_t)1 << j->block_shift;
    return ptl_cuda_elems_plan((j->n + k - 1) / k, t);
}

/* One emulated thread: it unpacks the job as the kernel's threads do. */
static void
fill_block(const void *j, int64_t blk, int64_t *ws)
{
    (void)ws;
    const PtlDistJob u = ptl_dist_job_unpack(j);
    ptl_dist_fill_block(&u, blk);
}

int
ptl_cuda_random(const PtlDistJob *j)
{
    PtlCudaReduceTuning tuning = ptl_cuda_reduce_tuning();
    PtlCudaNnPlan p = ptl_cuda_random_plan(j, &tuning);
    const int64_t k = (int64_t)1 << j->block_shift;
    if (p.grid == 0) {
        return 0;
    }
    if (!ptl_device_reduce_emulation) {
        return ptl_cuda_random_launch(j, &p);
    }
    ptl_cuda_kernel_emulation_ran(PTL_CUDA_EMU_RANDOM);
    ptl_cuda_emulate_elems(&p, (j->n + k - 1) / k, fill_block, j, NULL);
    return 0;
}
