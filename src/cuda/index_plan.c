/* index_plan.c -- the host side of the gather, scatter, advanced-indexing and cat kernels,
 * in every build: the plans (Note [CUDA index and sort kernels] in index_plan.h), the entry
 * points scatter_gather.c, index.c and join.c call for CUDA tensors through device_index.h's
 * hooks, and the kernels' emulation on the host (the same per-thread functions and grid
 * loops as index.cu). */
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

/* ---- advanced indexing (index.c's offset tables) ---- */

typedef struct {
    int64_t off, b;
} OffsetOf;

static int
by_offset(const void *x, const void *y)
{
    const OffsetOf *p = x, *q = y;
    if (p->off != q->off) {
        return p->off < q->off ? -1 : 1;
    }
    return p->b < q->b ? -1 : p->b > q->b;
}

typedef struct {
    const PtlDeviceAdvIndexArgs *a;
    const int64_t *perm, *group;
} GroupJob;

static void
adv_gather_at(const void *a, int64_t q, int64_t *ws)
{
    (void)ws;
    ptl_adv_gather_at(a, q);
}

static void
adv_scatter_group(const void *ctx, int64_t u, int64_t *ws)
{
    const GroupJob *j = ctx;
    const int64_t na = j->a->nafter, nb = j->a->nbefore;
    (void)ws;
    ptl_adv_scatter_group(j->a, j->perm, j->group, u / (na * nb), u / na % nb, u % na);
}

/* The tables the kernels read, in one host array (*tables, free() it): off, off_before,
 * off_after, then for a scatter the walk's b sorted by offset (stably) and the groups'
 * starts; *len its length, *ngroups the groups.  0, or -1 with the error set. */
static int
adv_tables(const PtlDeviceAdvIndexArgs *a, int64_t **tables, int64_t *len, int64_t *ngroups)
{
    const int64_t nb = a->bnumel, n0 = nb + a->nbefore + a->nafter;
    OffsetOf *order = NULL;
    *ngroups = 0;
    *len = n0 + (a->scatter ? 2 * nb + 1 : 0);
    *tables = malloc(sizeof(int64_t) * (size_t)*len);
    if (*tables == NULL ||
        (a->scatter && (order = malloc(sizeof(OffsetOf) * (size_t)(nb + 1))) == NULL)) {
        free(*tables);
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory");
    }
    int64_t *t = *tables, *perm = t + n0, *group = perm + nb;
    memcpy(t, a->off, sizeof(int64_t) * (size_t)nb);
    memcpy(t + nb, a->off_before, sizeof(int64_t) * (size_t)a->nbefore);
    memcpy(t + nb + a->nbefore, a->off_after, sizeof(int64_t) * (size_t)a->nafter);
    if (!a->scatter) {
        return 0;
    }
    for (int64_t b = 0; b < nb; b++) {
        order[b].off = a->off[b];
        order[b].b = b;
    }
    qsort(order, (size_t)nb, sizeof(OffsetOf), by_offset);
    for (int64_t k = 0; k < nb; k++) {
        perm[k] = order[k].b;
        if (k == 0 || order[k].off != order[k - 1].off) {
            group[(*ngroups)++] = k;
        }
    }
    group[*ngroups] = nb;
    free(order);
    return 0;
}

int
ptl_cuda_adv_index(const PtlDeviceAdvIndexArgs *a)
{
    PtlCudaReduceTuning tuning = ptl_cuda_reduce_tuning();
    PtlDeviceAdvIndexArgs d = *a;
    PtlTensorImpl *dev = NULL;
    int64_t *tables = NULL, len, ngroups;
    if (a->bnumel * a->nbefore * a->nafter == 0) {
        return 0;
    }
    if (adv_tables(a, &tables, &len, &ngroups) < 0) {
        return -1;
    }
    const int64_t n = a->scatter ? ngroups * a->nbefore * a->nafter
                                 : a->bnumel * a->nbefore * a->nafter;
    const int64_t n0 = a->bnumel + a->nbefore + a->nafter;
    PtlCudaNnPlan elems = ptl_cuda_elems_plan(n, &tuning);
    int64_t *t = tables;
    if (!ptl_device_reduce_emulation) {
        PtlDevice device = {PTL_DEVICE_CUDA, 0};
        int index = 0;
        if (ptl_cuda_current_device(&index) < 0) {
            free(tables);
            return -1;
        }
        device.index = (int8_t)index;
        if ((dev = ptl_empty(1, &len, PTL_DTYPE_INT64, device)) == NULL ||
            ptl_cuda_memcpy(ptl_tensor_data(dev), 1, tables, 0,
                            sizeof(int64_t) * (size_t)len) < 0) {
            free(tables);
            ptl_xdecref(dev);
            return -1;
        }
        t = (int64_t *)ptl_tensor_data(dev);
    }
    d.off = t;
    d.off_before = t + a->bnumel;
    d.off_after = t + a->bnumel + a->nbefore;
    if (!ptl_device_reduce_emulation) {
        int rc = ptl_cuda_adv_index_launch(&d, &elems, t + n0, t + n0 + a->bnumel, ngroups);
        free(tables);
        ptl_decref(dev);   /* reused only by later work on the same stream */
        return rc;
    }
    if (a->scatter) {
        GroupJob j = {&d, t + n0, t + n0 + a->bnumel};
        ptl_cuda_kernel_emulation_ran(PTL_CUDA_EMU_INDEX_SCATTER);
        ptl_cuda_emulate_elems(&elems, n, adv_scatter_group, &j, NULL);
    }
    else {
        ptl_cuda_kernel_emulation_ran(PTL_CUDA_EMU_INDEX_GATHER);
        ptl_cuda_emulate_elems(&elems, n, adv_gather_at, &d, NULL);
    }
    free(tables);
    return 0;
}

/* ---- cat ---- */

static void
cat_at(const void *a, int64_t q, int64_t *ws)
{
    (void)ws;
    ptl_cat_at(a, q);
}

/* A host table of `words` int64 words on the current device, in one copy: a new int64
 * tensor, or NULL. */
static PtlTensorImpl *
device_table(const void *host, int64_t words)
{
    PtlDevice device = {PTL_DEVICE_CUDA, 0};
    PtlTensorImpl *table;
    int index = 0;
    if (ptl_cuda_current_device(&index) < 0) {
        return NULL;
    }
    device.index = (int8_t)index;
    if ((table = ptl_empty(1, &words, PTL_DTYPE_INT64, device)) != NULL &&
        ptl_cuda_memcpy(ptl_tensor_data(table), 1, host, 0,
                        sizeof(int64_t) * (size_t)words) < 0) {
        PTL_CLEAR(table);
    }
    return table;
}

int
ptl_cuda_cat(const PtlDeviceCatArgs *a)
{
    PtlCudaReduceTuning tuning = ptl_cuda_reduce_tuning();
    PtlCudaNnPlan elems = ptl_cuda_elems_plan(a->numel, &tuning);
    PtlDeviceCatArgs d = *a;
    PtlTensorImpl *table;
    if (a->numel == 0) {
        return 0;
    }
    if (ptl_device_reduce_emulation) {
        ptl_cuda_kernel_emulation_ran(PTL_CUDA_EMU_CAT);
        ptl_cuda_emulate_elems(&elems, a->numel, cat_at, a, NULL);
        return 0;
    }
    const int64_t words = a->ninputs * (int64_t)(sizeof(PtlDeviceCatInput) / sizeof(int64_t));
    if ((table = device_table(a->inputs, words)) == NULL) {
        return -1;
    }
    d.inputs = (const PtlDeviceCatInput *)ptl_tensor_data(table);
    int rc = ptl_cuda_cat_launch(&d, &elems);
    ptl_decref(table);   /* reused only by later work on the same stream */
    return rc;
}

/* ---- masked_fill and take (Note [CUDA masked_fill and take] in index_plan.h) ---- */

static void
select_at(const void *a, int64_t j, int64_t *ws)
{
    (void)ws;
    ptl_select_at(a, j);
}

int
ptl_cuda_select(const PtlDeviceSelectArgs *a)
{
    PtlCudaReduceTuning tuning = ptl_cuda_reduce_tuning();
    PtlCudaNnPlan elems = ptl_cuda_elems_plan(a->numel, &tuning);
    if (a->numel == 0) {
        return 0;
    }
    if (!ptl_device_reduce_emulation) {
        return ptl_cuda_select_launch(a, &elems);
    }
    ptl_cuda_kernel_emulation_ran(PTL_CUDA_EMU_SELECT);
    ptl_cuda_emulate_elems(&elems, a->numel, select_at, a, NULL);
    return 0;
}

static void
take_at(const void *a, int64_t j, int64_t *ws)
{
    ptl_take_at(a, j, ws);
}

int
ptl_cuda_take(const PtlDeviceTakeArgs *a)
{
    PtlCudaReduceTuning tuning = ptl_cuda_reduce_tuning();
    PtlCudaNnPlan elems = ptl_cuda_elems_plan(a->inumel, &tuning);
    int64_t *host = NULL, *ws, status = 0, v = 0;
    PtlTensorImpl *dev = NULL;
    int rc = 0;
    if (a->inumel == 0) {
        return 0;
    }
    if ((ws = ptl_cuda_status_workspace(1, &host, &dev)) == NULL) {
        rc = -1;
    }
    else if (!ptl_device_reduce_emulation) {
        rc = ptl_cuda_take_launch(a, &elems, ws);
    }
    else {
        ptl_cuda_kernel_emulation_ran(PTL_CUDA_EMU_TAKE);
        ptl_cuda_emulate_elems(&elems, a->inumel, take_at, a, ws);
    }
    /* the first bad index: the status word and that index read back (a synchronisation) */
    if (rc == 0) {
        rc = ptl_cuda_status_load(ws, host, &status);
    }
    if (rc == 0 && status != 0) {
        const int64_t at = ptl_idx_walk(a->idim, a->isizes, a->ist, a->inumel - status);
        rc = ptl_cuda_status_load(a->index + at, host, &v);
        if (rc == 0) {
            rc = ptl_error_set(PTL_ERR_INDEX, PTL_TAKE_INDEX_ERROR, (long long)v,
                               (long long)a->snumel);
        }
    }
    free(host);
    ptl_xdecref(dev);
    return rc;
}

static void
shape_at(const void *a, int64_t j, int64_t *ws)
{
    (void)ws;
    ptl_shape_at(a, j);
}

int
ptl_cuda_shape(const PtlDeviceShapeArgs *a)
{
    PtlCudaReduceTuning tuning = ptl_cuda_reduce_tuning();
    PtlCudaNnPlan elems = ptl_cuda_elems_plan(a->numel, &tuning);
    PtlDeviceShapeArgs d = *a;
    PtlTensorImpl *table = NULL;
    if (a->numel == 0) {
        return 0;
    }
    if (ptl_device_reduce_emulation) {
        ptl_cuda_kernel_emulation_ran(a->kind == PTL_DEVICE_SHAPE_GATHER
                                          ? PTL_CUDA_EMU_SHAPE_GATHER
                                          : PTL_CUDA_EMU_TRIANGLE);
        ptl_cuda_emulate_elems(&elems, a->numel, shape_at, a, NULL);
        return 0;
    }
    if (a->kind == PTL_DEVICE_SHAPE_GATHER) {
        if ((table = device_table(a->tab, a->ntab)) == NULL) {
            return -1;
        }
        d.tab = (const int64_t *)ptl_tensor_data(table);
    }
    int rc = ptl_cuda_shape_launch(&d, &elems);
    ptl_xdecref(table);   /* reused only by later work on the same stream */
    return rc;
}
