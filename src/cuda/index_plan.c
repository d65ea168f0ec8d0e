/* index_plan.c -- the host side of the gather and scatter kernels, in every build: the
 * plan (Note [CUDA index and sort kernels] in index_plan.h), the entry point
 * scatter_gather.c calls for CUDA tensors through device_index.h's hook, and the kernels'
 * emulation on the host (the same per-thread functions and grid loops as index.cu). */
#include "index_plan.h"

#include <stdlib.h>
#include <string.h>

#include "../aten/native/native.h"
#include "../c10/error.h"

typedef struct {
    const PtlDeviceScatterArgs *a;
    int64_t nfib, chunk, *count;
} FiberJob;

static void
gather_at(const void *a, int64_t j, int64_t *ws)
{
    ptl_gather_at(a, j, ws);
}

static void
scatter_fiber(const void *ctx, int64_t u, int64_t *ws)
{
    const FiberJob *j = ctx;
    const int64_t v0 = u / j->nfib * j->chunk, v1 = v0 + j->chunk;
    ptl_scatter_fiber(j->a, u % j->nfib, v0, v1 < j->a->self_size ? v1 : j->a->self_size,
                      j->count, ws);
}

/* After the kernel: rc, or -1 with the CPU kernel's error for the first bad index (the
 * status word and that index value are copied back from the device: a synchronisation);
 * frees the workspace. */
static int
finish(int rc, const PtlDeviceScatterArgs *a, int64_t *ws, int64_t *host, PtlTensorImpl *dev)
{
    int64_t status = 0, off[3], v = 0;
    const size_t isz = a->index_is64 ? 8 : 4;
    if (rc == 0) {
        rc = host != NULL ? (memcpy(&status, host, sizeof(status)), 0)
                          : ptl_cuda_memcpy(&status, 0, ws, 1, sizeof(status));
    }
    if (rc == 0 && status != 0) {
        ptl_idx_offsets(a, a->numel - status, 0, off);
        if (host != NULL) {
            v = ptl_idx_load(a, off[0]);
        }
        else if ((rc = ptl_cuda_memcpy(&v, 0, a->index + off[0] * (int64_t)isz, 1, isz)) == 0 &&
                 !a->index_is64) {
            int32_t v32;
            memcpy(&v32, &v, sizeof(v32));
            v = v32;
        }
        if (rc == 0) {
            rc = ptl_error_set(PTL_ERR_RUNTIME,
                               "index %lld is out of bounds for dimension %d with size %lld",
                               (long long)v, a->dim, (long long)a->self_size);
        }
    }
    free(host);
    ptl_xdecref(dev);
    return rc;
}

int
ptl_cuda_scatter_gather(const PtlDeviceScatterArgs *a)
{
    PtlCudaReduceTuning tuning = ptl_cuda_reduce_tuning();
    const int64_t rows = a->self_size > 0 ? a->self_size : 1;
    const int64_t nfib = a->numel > 0 ? a->numel / a->sizes[a->dim] : 0;
    const int64_t chunk = a->scatter ? ptl_cuda_embedding_chunk(rows, nfib, &tuning) : 1;
    const int64_t n = a->scatter ? (rows + chunk - 1) / chunk * nfib : a->numel;
    const int counts = a->scatter && (a->reduce == PTL_DEVICE_IDX_MEAN || !a->include_self);
    PtlCudaNnPlan elems = ptl_cuda_elems_plan(n, &tuning);
    int64_t *host = NULL, *ws;
    PtlTensorImpl *dev = NULL;
    if (a->numel == 0) {
        return 0;
    }
    if ((ws = ptl_cuda_status_workspace(1 + (counts ? a->self_span : 0), &host, &dev)) == NULL) {
        free(host);
        ptl_xdecref(dev);
        return -1;
    }
    if (!ptl_device_reduce_emulation) {
        return finish(ptl_cuda_scatter_gather_launch(a, &elems, nfib, chunk, ws), a, ws, host,
                      dev);
    }
    if (!a->scatter) {
        ptl_cuda_kernel_emulation_ran(PTL_CUDA_EMU_GATHER);
        ptl_cuda_emulate_elems(&elems, n, gather_at, a, ws);
        return finish(0, a, ws, host, dev);
    }
    FiberJob j = {a, nfib, chunk, counts ? ws + 1 : NULL};
    ptl_cuda_kernel_emulation_ran(chunk < rows ? PTL_CUDA_EMU_SCATTER_CHUNKED
                                               : PTL_CUDA_EMU_SCATTER);
    ptl_cuda_emulate_elems(&elems, n, scatter_fiber, &j, ws);
    return finish(0, a, ws, host, dev);
}
