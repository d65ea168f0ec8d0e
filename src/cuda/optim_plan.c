/* optim_plan.c -- the host side of the fused optimizer step kernels, in every build: the
 * hooks optim.c calls for CUDA tensors and the kernels' emulation on the host (optim_step.h's
 * per-element steps in the kernels' grid-stride order, as optim.cu runs them). */
#include "cuda_api.h"

#include "../c10/dtype.h"
#include "../c10/error.h"

static void
sgd_element(const void *ctx, int64_t i, int64_t *ws)
{
    const PtlSgdStepArgs *a = ctx;
    (void)ws;
    if (a->dtype == PTL_DTYPE_FLOAT32) {
        const PtlSgdConsts_f4 c = ptl_sgd_consts_f4(a);
        ptl_sgd_step_f4(&c, (float *)a->p, (float *)a->buf, (const float *)a->g, i);
    }
    else {
        const PtlSgdConsts_f8 c = ptl_sgd_consts_f8(a);
        ptl_sgd_step_f8(&c, (double *)a->p, (double *)a->buf, (const double *)a->g, i);
    }
}

static void
adam_element(const void *ctx, int64_t i, int64_t *ws)
{
    const PtlAdamStepArgs *a = ctx;
    (void)ws;
    if (a->dtype == PTL_DTYPE_FLOAT32) {
        const PtlAdamConsts_f4 c = ptl_adam_consts_f4(a);
        ptl_adam_step_f4(&c, (float *)a->p, (float *)a->m, (float *)a->v, (float *)a->vmax,
                         (const float *)a->g, i);
    }
    else {
        const PtlAdamConsts_f8 c = ptl_adam_consts_f8(a);
        ptl_adam_step_f8(&c, (double *)a->p, (double *)a->m, (double *)a->v, (double *)a->vmax,
                         (const double *)a->g, i);
    }
}

/* One thread per element: the launcher of the step (sgd or adam, the other NULL) on the
 * device, or its emulation. */
static int
run_step(const PtlSgdStepArgs *sgd, const PtlAdamStepArgs *adam)
{
    PtlCudaReduceTuning tuning = ptl_cuda_reduce_tuning();
    const int64_t n = sgd != NULL ? sgd->n : adam->n;
    PtlCudaNnPlan p = ptl_cuda_elems_plan(n, &tuning);
    if (p.grid == 0) {
        return 0;
    }
    if (!ptl_device_reduce_emulation) {
        return sgd != NULL ? ptl_cuda_sgd_step_launch(sgd, &p)
                           : ptl_cuda_adam_step_launch(adam, &p);
    }
    ptl_cuda_kernel_emulation_ran(PTL_CUDA_EMU_OPTIM);
    if (sgd != NULL) {
        ptl_cuda_emulate_elems(&p, n, sgd_element, sgd, NULL);
    }
    else {
        ptl_cuda_emulate_elems(&p, n, adam_element, adam, NULL);
    }
    return 0;
}

int
ptl_cuda_sgd_step(const PtlSgdStepArgs *a)
{
    return run_step(a, NULL);
}

int
ptl_cuda_adam_step(const PtlAdamStepArgs *a)
{
    return run_step(NULL, a);
}
