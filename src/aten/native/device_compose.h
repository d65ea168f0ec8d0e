/* device_compose.h -- helpers of the ops whose CUDA path is a composition of other ops'
 * device kernels around a value read back to the host (Note [Device one_hot and bincount]
 * in summary.c; repeat_interleave in shape.c): the switch, the read-back, zeros; and of
 * those that walk a host copy (Note [Host walks for data-dependent sizes]). */
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

/* The temporaries of a composition of device ops, dropped together (frexp's, the longest,
 * keeps 34). */
#define PTL_TEMPS_MAX 48
typedef struct PtlTemps {
    PtlTensorImpl *t[PTL_TEMPS_MAX];
    int n;
} PtlTemps;

/* t kept in k (NULL passes through: the caller's error check sees it) */
static inline PtlTensorImpl *
ptl_temps_keep(PtlTemps *k, PtlTensorImpl *t)
{
    if (t != NULL) {
        k->t[k->n++] = t;
    }
    return t;
}

static inline void
ptl_temps_drop(PtlTemps *k)
{
    for (int i = 0; i < k->n; i++) {
        ptl_decref(k->t[i]);
    }
    k->n = 0;
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

/* Note [Host walks for data-dependent sizes]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * nonzero and unique size their output by the data and walk it in order; on CUDA they go
 * masked_select's way (index.c reads a device mask through a host copy to build its index
 * tables): the tensor arguments are copied to the host (a synchronisation, which PyTorch's
 * CUDA nonzero and unique also have, and a copy of the input, which they do not), the CPU
 * kernel runs there, and its tensor results are copied to the device.  The results are the
 * CPU's exactly.  A device count-and-compact (nonzero) and a device sort (unique) are the
 * next step where the copy matters. */
static inline int
ptl_run_on_host(int (*fn)(const PtlOperator *, PtlDispatchKeySet, PtlIValue *),
                const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *held[PTL_SCHEMA_MAX_ARGS] = {NULL};
    PtlDevice cpu = ptl_device_cpu(), dev = cpu;
    int nargs = op->schema.nargs, rc = -1;
    for (int i = 0; i < nargs; i++) {
        if (s[i].tag == PTL_IV_TENSOR) {
            dev = s[i].u.t->device.type != PTL_DEVICE_CPU ? s[i].u.t->device : dev;
            if ((held[i] = ptl_to_copy(s[i].u.t, PTL_DTYPE_UNDEFINED, &cpu)) == NULL) {
                goto done;
            }
            s[i] = ptl_iv_tensor(held[i]);   /* borrowed by the kernel, as the input was */
        }
    }
    if ((rc = fn(op, ks, s)) < 0) {
        goto done;
    }
    for (int i = 0; i < op->schema.nrets; i++) {
        if (s[i].tag == PTL_IV_TENSOR) {
            PtlTensorImpl *host = s[i].u.t, *moved = ptl_to_copy(host, PTL_DTYPE_UNDEFINED, &dev);
            ptl_decref(host);
            s[i] = moved != NULL ? ptl_iv_tensor(moved) : ptl_iv_none();
            rc = moved != NULL ? rc : -1;
        }
    }
done:
    for (int i = 0; i < nargs; i++) {
        ptl_xdecref(held[i]);
    }
    return rc;
}

#endif
