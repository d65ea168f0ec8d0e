/* pool_device.c -- pool.c's glue to the CUDA pooling kernels: the hook the backend sets,
 * the arguments it takes, and max pooling's backward as a gather (Note [CUDA pooling] in
 * src/cuda/pool_plan.h). */
#include <string.h>

#include "pool_impl.h"

int (*ptl_device_pool_hook)(const PtlDevicePoolArgs *a);

int
pool_on_device(const PtlTensorImpl *t)
{
    return nn_on_device(t, ptl_device_pool_hook != NULL);
}

int
pool_device(int kind, const PoolPlan *p, PtlTensorImpl *x, PtlTensorImpl *y,
            PtlTensorImpl *idx)
{
    PtlDevicePoolArgs a;
    memset(&a, 0, sizeof(a));
    a.kind = kind;
    a.dtype = x->dtype;
    a.how = p->how;
    a.count_include_pad = p->count_include_pad;
    a.x = ptl_tensor_data(x);
    a.y = ptl_tensor_data(y);
    a.idx = idx != NULL ? (int64_t *)ptl_tensor_data(idx) : NULL;
    a.planes = p->planes;
    a.divisor = p->divisor;
    for (int d = 0; d < NN_SPATIAL; d++) {
        a.in[d] = p->in[d];
        a.out[d] = p->out[d];
        a.k[d] = p->k[d];
        a.s[d] = p->s[d];
        a.p[d] = p->pad[d];
        a.d[d] = p->dil[d];
    }
    return ptl_device_pool_hook(&a);
}

PtlTensorImpl *
pool_gather_indices(PtlTensorImpl *go, PtlTensorImpl *self, PtlTensorImpl *idx,
                    const PoolArgs *a, PoolPlan *p)
{
    PtlDtype work = nn_work_dtype(go->dtype);
    PtlTensorImpl *gc = NULL, *ic = NULL, *gi = NULL;
    if (idx->dtype != PTL_DTYPE_INT64) {
        ptl_error_set(PTL_ERR_RUNTIME, "expected indices to have dtype Long, but got %s",
                      ptl_dtype_name(idx->dtype));
        pool_plan_free(p);
        return NULL;
    }
    if (a != NULL) {
        if (pool_plan_alloc(p) < 0) {
            return NULL;
        }
        for (int d = 0; d < NN_SPATIAL; d++) {
            pool_plan_strided(p, d, a->k[d], a->s[d], a->p[d], 0);
        }
    }
    if ((gc = nn_prepare(go, work)) == NULL || (ic = ptl_contiguous(idx)) == NULL ||
        (gi = ptl_empty(self->dim, self->sizes, work, self->device)) == NULL ||
        pool_device(PTL_DEVICE_POOL_MAX_BACKWARD, p, gc, gi, ic) < 0) {
        PTL_CLEAR(gi);
    }
    pool_plan_free(p);
    ptl_xdecref(gc);
    ptl_xdecref(ic);
    return nn_finish(gi, go->dtype);
}
