/* nn_common.h -- helpers shared by the NN kernels of conv.c, pool.c, resample.c,
 * layer_norm.c, batch_norm.c and nn.c: the dtype they compute in, element access for kernels
 * written once for both work dtypes, and argument unpacking.
 * Plays the role of the small helpers at the top of ATen/native/ConvUtils.h and
 * ATen/native/Pool.h. */
#ifndef PTL_ATEN_NATIVE_NN_COMMON_H
#define PTL_ATEN_NATIVE_NN_COMMON_H

#include <stdio.h>
#include <string.h>

#include "../../c10/error.h"
#include "device_reduce.h"
#include "native.h"

/* 1 when t's kernel runs on the device through a set hook (has_hook): a CUDA tensor, or
 * the tests' emulation of the CUDA kernels (device_reduce.h) */
static inline int
nn_on_device(const PtlTensorImpl *t, int has_hook)
{
    return (t->device.type == PTL_DEVICE_CUDA || ptl_device_reduce_emulation) && has_hook;
}

/* t (borrowed) contiguous in dtype dt: t itself when it already is (new ref) */
static inline PtlTensorImpl *
nn_contiguous_as(PtlTensorImpl *t, PtlDtype dt)
{
    return t->dtype == dt ? ptl_contiguous(t) : ptl_cast(t, dt);
}

/* Spatial dims are always handled as three (depth, height, width); 1-D and 2-D problems
 * put size 1 in the leading ones. */
#define NN_SPATIAL 3

/* The dtype a kernel computes in: float for the float32 family (float16 and bfloat16 are
 * widened, as PyTorch's opmath type), double for float64 and for the integer dtypes that
 * some ops accept (exact below 2^53). */
static inline PtlDtype
nn_work_dtype(PtlDtype dt)
{
    return (dt == PTL_DTYPE_FLOAT32 || dt == PTL_DTYPE_FLOAT16 || dt == PTL_DTYPE_BFLOAT16)
               ? PTL_DTYPE_FLOAT32
               : PTL_DTYPE_FLOAT64;
}

/* Kernels written once for both work dtypes take byte pointers and f8 (float64 rather than
 * float32), and are `static inline`, so that each thin typed wrapper compiles its own copy
 * with f8 a constant: the accesses below become typed loads and stores.  A float32 value
 * passes through double exactly: comparisons agree, and one +, -, * or / in double rounded
 * back to float (nn_round) is float arithmetic's result. */
static inline double
nn_load(int f8, const char *p, int64_t i)
{
    return f8 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

static inline void
nn_store(int f8, char *p, int64_t i, double v)
{
    if (f8) {
        ((double *)p)[i] = v;
    }
    else {
        ((float *)p)[i] = (float)v;
    }
}

/* v rounded to the work dtype */
static inline double
nn_round(int f8, double v)
{
    return f8 ? v : (double)(float)v;
}

/* t (borrowed) as a contiguous tensor of dtype `work` (new ref). */
static inline PtlTensorImpl *
nn_prepare(PtlTensorImpl *t, PtlDtype work)
{
    return t->dtype == work ? ptl_contiguous(t) : ptl_cast(t, work);
}

/* res (stolen) converted to dtype dt (new ref; NULL passes through). */
static inline PtlTensorImpl *
nn_finish(PtlTensorImpl *res, PtlDtype dt)
{
    if (res == NULL || res->dtype == dt) {
        return res;
    }
    PtlTensorImpl *r = ptl_cast(res, dt);
    ptl_decref(res);
    return r;
}

/* The end of a kernel with n results r[] (stolen; NULL ones return None) and k prepared
 * inputs in[] (NULL ones skipped): where ok, each result is converted to dt[i] (nn_finish)
 * and put in s[i]; the inputs are released either way, the results too when !ok or a
 * conversion fails.  Returns 0 or -1. */
static inline int
nn_return(PtlIValue *s, PtlTensorImpl **r, const PtlDtype *dt, int n, PtlTensorImpl **in,
          int k, int ok)
{
    for (int i = 0; i < n && ok; i++) {
        if (r[i] != NULL && (r[i] = nn_finish(r[i], dt[i])) == NULL) {
            ok = 0;
        }
    }
    for (int i = 0; i < k; i++) {
        ptl_xdecref(in[i]);
    }
    for (int i = 0; i < n; i++) {
        if (ok) {
            s[i] = ptl_iv_tensor(r[i]);
        }
        else {
            ptl_xdecref(r[i]);
        }
    }
    return ok ? 0 : -1;
}

/* A new zero-filled contiguous tensor (new ref). */
static inline PtlTensorImpl *
nn_zeros(int dim, const int64_t *sizes, PtlDtype dt)
{
    PtlTensorImpl *t = ptl_empty(dim, sizes, dt, ptl_device_cpu());
    if (t != NULL && t->numel > 0) {
        memset(ptl_tensor_data(t), 0, (size_t)t->numel * ptl_tensor_itemsize(t));
    }
    return t;
}

/* The parameters params[0..k) (NULL ones skipped) of a normalization of x: float16/bfloat16
 * input with float32 parameters is allowed (mixed), as in PyTorch; any other dtype
 * difference is refused with PyTorch's two messages.  0 or -1. */
static inline int
nn_check_mixed_dtype(PtlTensorImpl *x, PtlTensorImpl *const *params, int k)
{
    for (int i = 0; i < k; i++) {
        PtlTensorImpl *t = params[i];
        if (t == NULL || t->dtype == x->dtype) {
            continue;
        }
        if (x->dtype == PTL_DTYPE_FLOAT64 && t->dtype == PTL_DTYPE_FLOAT32) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "mixed dtype (CPU): all inputs must share same datatype.");
        }
        int same = 1;
        for (int q = 0; q < k; q++) {
            same = same && (params[q] == NULL || params[q]->dtype == t->dtype);
        }
        if (t->dtype != PTL_DTYPE_FLOAT32 || nn_work_dtype(x->dtype) != PTL_DTYPE_FLOAT32 ||
            !same) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "mixed dtype (CPU): expect parameter to have scalar type of "
                                 "Float");
        }
    }
    return 0;
}

/* Refuses dtypes PyTorch's kernel `name` has no loop for ("\"name\" not implemented for
 * 'Long'"); `ints_ok` lets the integer dtypes through. */
static inline int
nn_check_dtype(const char *name, PtlDtype dt, int ints_ok)
{
    if (ptl_dtype_is_floating(dt) || (ints_ok && ptl_dtype_is_integral(dt, 0))) {
        return 0;
    }
    return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'", name,
                         ptl_dtype_legacy_name(dt));
}

#endif
