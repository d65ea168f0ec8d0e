/* take.c -- take (self.flatten()[index]) and take_along_dim (gather after broadcasting),
 * split from index.c.  Mirrors ATen/native/TensorAdvancedIndexing.cpp (take,
 * take_along_dim) and ATen/native/cpu/IndexKernel.cpp (take_kernel). */
#include <stdlib.h>
#include <string.h>

#include "../../c10/error.h"
#include "device_index.h"
#include "index_impl.h"
#include "native.h"

/* take(Tensor self, Tensor index): self.flatten()[index], index's shape */
static int
take_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *index = s[1].u.t, *out = NULL;
    int64_t *soff = NULL, *ioff = NULL;
    if (index->dtype != PTL_DTYPE_INT64) {
        return ptl_error_set(PTL_ERR_RUNTIME, "take(): Expected a long tensor for index, but got "
                                              "%s",
                             ptl_dtype_legacy_name(index->dtype));
    }
    if (index_on_device(self)) {
        return ptl_kernel_return(s, index_take_device(self, index));
    }
    if ((soff = walk_offsets(self->dim, self->sizes, self->strides)) == NULL ||
        (ioff = walk_offsets(index->dim, index->sizes, index->strides)) == NULL ||
        (out = ptl_empty(index->dim, index->sizes, self->dtype, self->device)) == NULL) {
        goto error;
    }
    size_t item = ptl_tensor_itemsize(self);
    const char *src = ptl_tensor_data(self);
    const int64_t *ip = (const int64_t *)ptl_tensor_data(index);
    char *dst = ptl_tensor_data(out);
    for (int64_t i = 0; i < index->numel; i++) {
        int64_t v = ip[ioff[i]];
        if (v < -self->numel || v >= self->numel) {
            ptl_error_set(PTL_ERR_INDEX, PTL_TAKE_INDEX_ERROR, (long long)v,
                          (long long)self->numel);
            goto error;
        }
        copy_elem(dst + i * (int64_t)item,
                  src + soff[v < 0 ? v + self->numel : v] * (int64_t)item, item);
    }
    free(soff);
    free(ioff);
    s[0] = ptl_iv_tensor(out);
    return 0;
error:
    free(soff);
    free(ioff);
    ptl_xdecref(out);
    return -1;
}

/* take_along_dim(Tensor self, Tensor indices, int? dim=None): gather along dim after
 * broadcasting self and indices everywhere else; dim None: take from the flattened self.
 * Composite, so autograd sees gather. */
static int
take_along_dim_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *idx = s[1].u.t, *se = NULL, *ie = NULL, *r = NULL;
    int64_t minus1 = -1, dim;
    PtlIValue a[4];
    if (idx->dtype != PTL_DTYPE_INT64 && idx->dtype != PTL_DTYPE_INT32) {
        return ptl_error_set(PTL_ERR_INDEX, "torch.take_along_dim(): dtype of indices should be "
                                            "int64 but got %s",
                             ptl_dtype_legacy_name(idx->dtype));
    }
    if (s[2].tag == PTL_IV_NONE) {
        a[1] = ptl_iv_intlist(&minus1, 1);
        a[0] = ptl_iv_tensor(self);
        if ((se = ptl_call_tensor(PTL_OP_reshape, a)) == NULL) {
            goto done;
        }
        a[0] = ptl_iv_tensor(idx);
        if ((ie = ptl_call_tensor(PTL_OP_reshape, a)) == NULL) {
            goto done;
        }
        dim = 0;
    }
    else {
        int64_t ss[PTL_MAX_DIMS], is[PTL_MAX_DIMS];
        dim = s[2].u.i;
        if (self->dim != idx->dim) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "torch.take_along_dim(): input and indices should have the same "
                                 "number of dimensions, but got %d dimensions for input, and %d "
                                 "dimensions for indices",
                                 self->dim, idx->dim);
        }
        if (ptl_wrap_dim(&dim, self->dim > 0 ? self->dim : 1) < 0) {
            return -1;
        }
        for (int d = 0; d < self->dim; d++) {
            int64_t a1 = self->sizes[d], b1 = idx->sizes[d];
            if (d != dim && a1 != b1 && a1 != 1 && b1 != 1) {
                return ptl_error_set(PTL_ERR_RUNTIME, "The size of tensor a (%lld) must match "
                                                      "the size of tensor b (%lld) at "
                                                      "non-singleton dimension %d",
                                     (long long)a1, (long long)b1, d);
            }
            ss[d] = d == dim ? a1 : (a1 == 1 ? b1 : a1);
            is[d] = d == dim ? b1 : ss[d];
        }
        a[0] = ptl_iv_tensor(self);
        a[1] = ptl_iv_intlist(ss, self->dim);
        a[2] = ptl_iv_bool(0);
        if ((se = ptl_call_tensor(PTL_OP_expand, a)) == NULL) {
            goto done;
        }
        a[0] = ptl_iv_tensor(idx);
        a[1] = ptl_iv_intlist(is, idx->dim);
        a[2] = ptl_iv_bool(0);
        if ((ie = ptl_call_tensor(PTL_OP_expand, a)) == NULL) {
            goto done;
        }
    }
    a[0] = ptl_iv_tensor(se);
    a[1] = ptl_iv_int(dim);
    a[2] = ptl_iv_tensor(ie);
    a[3] = ptl_iv_bool(0);
    r = ptl_call_tensor(PTL_OP_gather, a);
done:
    ptl_xdecref(se);
    ptl_xdecref(ie);
    if (r == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(r);
    return 0;
}

static const PtlKernelReg take_cpu_kernels[] = {
    {PTL_OP_take, PTL_KEY_CPU, take_cpu},
    {PTL_OP_take_along_dim, PTL_KEY_COMPOSITE_IMPLICIT, take_along_dim_composite},
};
PTL_DEFINE_REGISTER(take_cpu_kernels)
