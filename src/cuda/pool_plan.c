/* pool_plan.c -- the host side of the pooling kernels, in every build: the entry point
 * pool.c calls for CUDA tensors through device_pool.h's hook, and the kernels' emulation on
 * the host (the same per-element functions in pool.cu's grid-stride order).  Note [CUDA
 * pooling] in pool_plan.h. */
#include "pool_plan.h"

#include <stdlib.h>
#include <string.h>

#include "../aten/native/native.h"
#include "../c10/error.h"
#include "cuda_api.h"

static void
forward_at(const void *a, int64_t e, int64_t *ws)
{
    (void)ws;
    ptl_pool_forward_at(a, e);
}

static void
backward_at(const void *a, int64_t e, int64_t *ws)
{
    (void)ws;
    ptl_pool_backward_at(a, e);
}

static void
unpool_claim(const void *a, int64_t e, int64_t *ws)
{
    ptl_unpool_claim_at(a, e, ws);
}

static void
unpool_fill(const void *a, int64_t e, int64_t *ws)
{
    ptl_unpool_fill_at(a, e, ws);
}

static void
unpool_gather(const void *a, int64_t e, int64_t *ws)
{
    ptl_unpool_gather_at(a, e, ws);
}

/* After max_unpool's kernels: rc, or -1 with the CPU's error for the first bad index of the
 * n in idx (the status word and that index are copied back from the device: a
 * synchronisation); frees the workspace. */
static int
unpool_finish(int rc, const PtlDevicePoolArgs *a, int64_t n, int64_t *ws, int64_t *host,
              PtlTensorImpl *dev)
{
    int64_t status = 0, v = 0;
    if (rc == 0) {
        rc = ptl_cuda_status_load(ws, host, &status);
    }
    if (rc == 0 && status != 0) {
        rc = ptl_cuda_status_load(a->idx + (n - status), host, &v);
        if (rc == 0) {
            rc = ptl_error_set(PTL_ERR_RUNTIME, PTL_POOL_UNPOOL_INDEX_ERROR, (long long)v,
                               (long long)a->in[1], (long long)a->in[2]);
        }
    }
    free(host);
    ptl_xdecref(dev);
    return rc;
}

/* max_unpool and its backward (Note [CUDA max_unpool]) */
static int
unpool(const PtlDevicePoolArgs *a)
{
    PtlCudaReduceTuning tuning = ptl_cuda_reduce_tuning();
    const int fwd = a->kind == PTL_DEVICE_POOL_UNPOOL;
    const int64_t nsrc = a->planes * a->out[0] * a->out[1] * a->out[2];
    const int64_t ndst = a->planes * a->in[0] * a->in[1] * a->in[2];
    PtlCudaNnPlan src = ptl_cuda_elems_plan(nsrc, &tuning);
    PtlCudaNnPlan dst = ptl_cuda_elems_plan(ndst, &tuning);
    int64_t *host = NULL, *ws;
    PtlTensorImpl *dev = NULL;
    if ((ws = ptl_cuda_status_workspace(1 + (fwd ? ndst : 0), &host, &dev)) == NULL) {
        return unpool_finish(-1, a, nsrc, NULL, host, dev);
    }
    if (!ptl_device_reduce_emulation) {
        return unpool_finish(ptl_cuda_unpool_launch(a, &src, &dst, ws), a, nsrc, ws, host, dev);
    }
    ptl_cuda_kernel_emulation_ran(PTL_CUDA_EMU_UNPOOL);
    if (fwd) {
        ptl_cuda_emulate_elems(&src, nsrc, unpool_claim, a, ws);
        ptl_cuda_emulate_elems(&dst, ndst, unpool_fill, a, ws);
    }
    else {
        ptl_cuda_emulate_elems(&src, nsrc, unpool_gather, a, ws);
    }
    return unpool_finish(0, a, nsrc, ws, host, dev);
}

int
ptl_cuda_pool(const PtlDevicePoolArgs *a)
{
    if (a->kind == PTL_DEVICE_POOL_UNPOOL || a->kind == PTL_DEVICE_POOL_UNPOOL_BACKWARD) {
        return unpool(a);
    }
    PtlCudaReduceTuning tuning = ptl_cuda_reduce_tuning();
    const int backward = a->kind == PTL_DEVICE_POOL_MAX_BACKWARD ||
                         a->kind == PTL_DEVICE_POOL_AVG_BACKWARD;
    const int64_t *sz = backward ? a->in : a->out;
    const int64_t n = a->planes * sz[0] * sz[1] * sz[2];
    PtlCudaNnPlan p = ptl_cuda_elems_plan(n, &tuning);
    if (n == 0) {
        return 0;
    }
    if (!ptl_device_reduce_emulation) {
        return ptl_cuda_pool_launch(a, &p);
    }
    ptl_cuda_kernel_emulation_ran(PTL_CUDA_EMU_POOL);
    ptl_cuda_emulate_elems(&p, n, backward ? backward_at : forward_at, a, NULL);
    return 0;
}
