/* repeat_interleave.c -- repeat_interleave.Tensor, the index form the other overloads
 * (shape.c's composites) are built on.  Mirrors ATen/native/Repeat.cpp and Repeat.cu. */
#include <stdint.h>

#include "../../c10/error.h"
#include "device_compose.h"
#include "native.h"

/* repeat_interleave.Tensor's output on the device, total > 0 elements for the repeats rep
 * (contiguous): element p is the number of repeats starting at or before p, less one.  The
 * starts (an exclusive cumsum) are counted into total + 1 slots by index_add_, the first
 * slot preset to -1, and a cumsum of the slots gives each element its index: the device's
 * scan, index and fill kernels, no host loop.  New ref, in rep's dtype. */
static PtlTensorImpl *
repeat_interleave_device(PtlTensorImpl *rep, int64_t total)
{
    PtlTensorImpl *cs = NULL, *starts = NULL, *slots = NULL, *ones = NULL, *first = NULL;
    PtlTensorImpl *idx = NULL, *out = NULL, *res = NULL;
    int64_t nslots = total + 1, n = rep->numel;
    PtlIValue minus_one = ptl_iv_int(-1);
    /* each call's own arguments: the dispatcher leaves the results in them */
    PtlIValue a0[3] = {ptl_iv_tensor(rep), ptl_iv_int(0), ptl_iv_dtype(PTL_DTYPE_INT64)};
    if ((cs = ptl_call_tensor(PTL_OP_cumsum, a0)) == NULL) {
        goto done;
    }
    PtlIValue a1[3] = {ptl_iv_tensor(cs), ptl_iv_tensor(rep), ptl_iv_int(1)};
    if ((starts = ptl_call_tensor(PTL_OP_sub_Tensor, a1)) == NULL ||
        (slots = ptl_device_full(1, &nslots, PTL_DTYPE_INT64, rep->device, 0)) == NULL ||
        (ones = ptl_device_full(1, &n, PTL_DTYPE_INT64, rep->device, 1)) == NULL) {
        goto done;
    }
    PtlIValue a2[4] = {ptl_iv_tensor(slots), ptl_iv_int(0), ptl_iv_int(0), ptl_iv_int(1)};
    if ((first = ptl_call_tensor(PTL_OP_narrow, a2)) == NULL ||
        ptl_fill_scalar(first, &minus_one) < 0) {
        goto done;
    }
    PtlIValue a3[5] = {ptl_iv_tensor(slots), ptl_iv_int(0), ptl_iv_tensor(starts),
                       ptl_iv_tensor(ones), ptl_iv_int(1)};
    if (ptl_call_inplace(PTL_OP_index_add_, a3) < 0) {
        goto done;
    }
    PtlIValue a4[3] = {ptl_iv_tensor(slots), ptl_iv_int(0), ptl_iv_none()};
    if ((idx = ptl_call_tensor(PTL_OP_cumsum, a4)) == NULL) {
        goto done;
    }
    PtlIValue a5[4] = {ptl_iv_tensor(idx), ptl_iv_int(0), ptl_iv_int(0), ptl_iv_int(total)};
    if ((out = ptl_call_tensor(PTL_OP_narrow, a5)) != NULL) {
        res = ptl_to_copy(out, rep->dtype, &rep->device);
    }
done:
    ptl_xdecref(cs);
    ptl_xdecref(starts);
    ptl_xdecref(slots);
    ptl_xdecref(ones);
    ptl_xdecref(first);
    ptl_xdecref(idx);
    ptl_xdecref(out);
    return res;
}

/* repeat_interleave.Tensor(Tensor repeats, *, int? output_size=None) -> Tensor:
 * [n] -> [sum(repeats)]: i appears repeats[i] times */
static int
repeat_interleave_tensor_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *rep = s[0].u.t, *c, *out;
    int64_t total = 0;
    if (rep->dim != 1) {
        return ptl_error_set(PTL_ERR_RUNTIME, "repeat_interleave only accept 1D vector as repeat");
    }
    if (rep->dtype != PTL_DTYPE_INT32 && rep->dtype != PTL_DTYPE_INT64) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED,
                             "\"repeat_interleave_cpu\" not implemented for '%s'",
                             ptl_dtype_legacy_name(rep->dtype));
    }
    if ((c = ptl_contiguous(rep)) == NULL) {
        return -1;
    }
    const char *p = ptl_tensor_data(c);
    size_t isz = ptl_tensor_itemsize(c);
    int dev = ptl_on_device_path(c), ok = 1;
    int64_t lo = 0;
    for (int64_t i = 0; ok && i < (dev ? 0 : c->numel); i++) {
        int64_t k = ptl_load_int(p + (size_t)i * isz, c->dtype);
        lo = k < lo ? k : lo;
        ok = k >= 0 && k <= INT64_MAX - total;
        total += ok ? k : 0;
    }
    /* the device's sum wraps: a wrapped total below the largest repeat is caught only when
     * it turns negative */
    if (dev && c->numel > 0 && (ptl_device_reduce_read(PTL_OP_amin, c, &lo) < 0 ||
                                ptl_device_reduce_read(PTL_OP_sum, c, &total) < 0)) {
        ptl_decref(c);
        return -1;
    }
    if (lo < 0) {
        ptl_decref(c);
        return ptl_error_set(PTL_ERR_RUNTIME, "repeats can not be negative");
    }
    if (!ok || total < 0) {
        ptl_decref(c);
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "repeat_interleave: the sum of repeats overflows int64");
    }
    if (s[1].tag == PTL_IV_INT && s[1].u.i != total) {
        ptl_decref(c);
        return ptl_error_set(PTL_ERR_RUNTIME, "allocated size does not match required size");
    }
    if (dev) {
        out = total > 0 ? repeat_interleave_device(c, total)
                        : ptl_empty(1, &total, c->dtype, c->device);
        ptl_decref(c);
        if (out == NULL) {
            return -1;
        }
        s[0] = ptl_iv_tensor(out);
        return 0;
    }
    if ((out = ptl_empty(1, &total, c->dtype, c->device)) != NULL) {
        char *o = ptl_tensor_data(out);
        for (int64_t i = 0, at = 0; i < c->numel; i++) {
            int64_t k = ptl_load_int(p + (size_t)i * isz, c->dtype);
            for (int64_t j = 0; j < k; j++, at++) {
                if (c->dtype == PTL_DTYPE_INT32) {
                    ((int32_t *)o)[at] = (int32_t)i;
                }
                else {
                    ((int64_t *)o)[at] = i;
                }
            }
        }
    }
    ptl_decref(c);
    if (out == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(out);
    return 0;
}

static const PtlKernelReg repeat_interleave_cpu[] = {
    {PTL_OP_repeat_interleave_Tensor, PTL_KEY_CPU, repeat_interleave_tensor_cpu},
};
PTL_DEFINE_REGISTER(repeat_interleave_cpu)
