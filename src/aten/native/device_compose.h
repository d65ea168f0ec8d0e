/* device_compose.h -- helpers of the ops whose CUDA path is a composition of other ops'
 * device kernels around a value read back to the host (Note [Device one_hot and bincount]
 * in summary.c; repeat_interleave in shape.c): the switch, the read-back, zeros. */
#ifndef PTL_ATEN_NATIVE_DEVICE_COMPOSE_H
#define PTL_ATEN_NATIVE_DEVICE_COMPOSE_H

#include "device_reduce.h"
#include "native.h"

/* 1 when t takes the composed device path: a CUDA tensor, or any while the tests emulate
 * the CUDA kernels (device_reduce.h) */
static inline int
ptl_on_device_path(const PtlTensorImpl *t)
{
    return t->device.type == PTL_DEVICE_CUDA || ptl_device_reduce_emulation;
}

/* *v = op id (amin, amax; or sum, whose second argument is the dtype) of all of t, read
 * back to the host as an int64 (a synchronisation).  0 or -1. */
static inline int
ptl_device_reduce_read(PtlOpId id, PtlTensorImpl *t, int64_t *v)
{
    PtlIValue a[3] = {ptl_iv_tensor(t), ptl_iv_intlist(NULL, 0), ptl_iv_bool(0)};
    PtlDevice cpu = ptl_device_cpu();
    PtlTensorImpl *r, *h = NULL;
    if (id == PTL_OP_sum) {
        a[1] = ptl_iv_dtype(PTL_DTYPE_INT64);
    }
    if ((r = ptl_call_tensor(id, a)) != NULL &&
        (h = ptl_to_copy(r, PTL_DTYPE_INT64, &cpu)) != NULL) {
        *v = *(const int64_t *)ptl_tensor_data(h);
    }
    ptl_xdecref(r);
    ptl_xdecref(h);
    return h != NULL ? 0 : -1;
}

/* An in-place op (self first in args) called for its effect.  0 or -1. */
static inline int
ptl_call_inplace(PtlOpId id, PtlIValue *args)
{
    PtlTensorImpl *r = ptl_call_tensor(id, args);
    ptl_xdecref(r);
    return r != NULL ? 0 : -1;
}

/* A new contiguous tensor of dtype dt on device, every element v. */
static inline PtlTensorImpl *
ptl_device_full(int dim, const int64_t *sizes, PtlDtype dt, PtlDevice device, int64_t v)
{
    PtlIValue value = ptl_iv_int(v);
    PtlTensorImpl *t = ptl_empty(dim, sizes, dt, device);
    if (t != NULL && ptl_fill_scalar(t, &value) < 0) {
        PTL_CLEAR(t);
    }
    return t;
}

#endif
