/* sort_plan.c -- the host side of the sort kernels (sort, argsort, topk), in every build:
 * the entry point sort.c calls for CUDA tensors through device_index.h's hook, and the
 * kernels' emulation on the host (the same per-element functions and passes as sort.cu).
 * See Note [CUDA sort] in sort_plan.h. */
#include "sort_plan.h"

#include <stdlib.h>

#include "../aten/native/native.h"

typedef struct {
    const PtlDeviceSortArgs *a;
    int64_t w;
    int src;                   /* the buffer the pass reads: (k[src], ix[src]) */
    uint64_t *k[2];
    int64_t *ix[2];
} SortJob;

static void
keys_at(const void *ctx, int64_t q, int64_t *ws)
{
    const SortJob *j = ctx;
    (void)ws;
    ptl_sort_keys_at(j->a, q, j->k[0], j->ix[0]);
}

static void
merge_at(const void *ctx, int64_t q, int64_t *ws)
{
    const SortJob *j = ctx;
    (void)ws;
    ptl_sort_merge_at(j->a, j->w, q, j->k[j->src], j->ix[j->src], j->k[1 - j->src],
                      j->ix[1 - j->src]);
}

static void
emit_at(const void *ctx, int64_t q, int64_t *ws)
{
    const SortJob *j = ctx;
    (void)ws;
    ptl_sort_emit_at(j->a, q, j->ix[j->src]);
}

int
ptl_cuda_sort(const PtlDeviceSortArgs *a)
{
    PtlCudaReduceTuning tuning = ptl_cuda_reduce_tuning();
    const int64_t n = a->nlanes * a->len;
    int64_t *host = NULL, *ws;
    PtlTensorImpl *dev = NULL;
    int rc = 0;
    if (n == 0 || a->nsel == 0) {
        return 0;
    }
    PtlCudaNnPlan elems = ptl_cuda_elems_plan(n, &tuning);
    PtlCudaNnPlan outs = ptl_cuda_elems_plan(a->nlanes * a->nsel, &tuning);
    /* the keys and indices, twice (ping-pong) */
    if ((ws = ptl_cuda_status_workspace(4 * n, &host, &dev)) == NULL) {
        free(host);
        ptl_xdecref(dev);
        return -1;
    }
    SortJob j = {a, 1, 0, {(uint64_t *)ws, (uint64_t *)ws + n}, {ws + 2 * n, ws + 3 * n}};
    if (!ptl_device_reduce_emulation) {
        rc = ptl_cuda_sort_launch(a, &elems, &outs, ws);
        ptl_decref(dev);   /* reused only by later work on the same stream */
        return rc;
    }
    ptl_cuda_kernel_emulation_ran(PTL_CUDA_EMU_SORT);
    ptl_cuda_emulate_elems(&elems, n, keys_at, &j, NULL);
    for (; j.w < a->len; j.w *= 2, j.src = 1 - j.src) {
        ptl_cuda_emulate_elems(&elems, n, merge_at, &j, NULL);
    }
    ptl_cuda_emulate_elems(&outs, a->nlanes * a->nsel, emit_at, &j, NULL);
    free(host);
    return 0;
}
