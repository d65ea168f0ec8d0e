/* index_device.c -- index.c's glue to the CUDA masked_fill and take kernels: the hooks the
 * backend sets (src/cuda/index_plan.c) and the arguments they take.  See Note [CUDA
 * masked_fill and take] in src/cuda/index_plan.h.  masked_scatter's device path, a
 * composition of device kernels (Note [Device masked_scatter]). */
#include <string.h>

#include "device_compose.h"
#include "device_index.h"
#include "device_reduce.h"
#include "index_impl.h"

int (*ptl_device_select_hook)(const PtlDeviceSelectArgs *a);
int (*ptl_device_take_hook)(const PtlDeviceTakeArgs *a);

int
index_on_device(const PtlTensorImpl *t)
{
    return (t->device.type == PTL_DEVICE_CUDA || ptl_device_reduce_emulation) &&
           ptl_device_take_hook != NULL && !ptl_tensor_is_meta(t);
}

int
index_select_device(const PtlTensorIter *it, int kind, const int *order,
                    const PtlTensorImpl *val)
{
    PtlDeviceSelectArgs a;
    const PtlTensorImpl *out = it->ops[0];
    memset(&a, 0, sizeof(a));
    a.kind = kind;
    a.dtype = it->compute_dtype;
    a.ndim = it->ndim;
    a.itemsize = (int32_t)ptl_tensor_itemsize(out);
    a.numel = it->numel;
    a.out = it->data[0];
    memcpy(a.sizes, it->shape, sizeof(int64_t) * (size_t)it->ndim);
    memcpy(a.strides[0], it->strides[0], sizeof(int64_t) * (size_t)it->ndim);
    for (int t = 0; t < 3; t++) {
        const int k = order[t];
        int scalar = k < 0;   /* masked_fill's value */
        const char *bytes = scalar ? ptl_tensor_data(val) : it->data[k];
        if (!scalar && ((it->scalar_cast >> k) & 1u || it->ops[k]->device.type == PTL_DEVICE_CPU)) {
            /* in host memory: a CPU operand broadcast everywhere goes by value */
            scalar = 1;
            for (int d = 0; d < it->ndim; d++) {
                scalar &= it->strides[k][d] == 0;
            }
        }
        if (scalar) {
            PtlDtype dt = k < 0 ? out->dtype
                          : (it->scalar_cast >> k) & 1u ? it->compute_dtype : it->ops[k]->dtype;
            memcpy(&a.value[t], bytes, ptl_dtype_itemsize(dt));
            continue;
        }
        a.data[t] = bytes;
        memcpy(a.strides[t + 1], it->strides[k], sizeof(int64_t) * (size_t)it->ndim);
    }
    return ptl_device_select_hook(&a);
}

PtlTensorImpl *
index_take_device(PtlTensorImpl *self, PtlTensorImpl *index)
{
    PtlDeviceTakeArgs a;
    PtlTensorImpl *out;
    if (!ptl_device_equal(self->device, index->device)) {
        PtlTensorImpl *dev = self->device.type == PTL_DEVICE_CPU ? index : self;
        ptl_error_set(PTL_ERR_RUNTIME, "Expected all tensors to be on the same device, but found "
                      "at least two devices, %s:%d and cpu!",
                      ptl_device_type_name(dev->device.type), dev->device.index);
        return NULL;
    }
    if ((out = ptl_empty(index->dim, index->sizes, self->dtype, self->device)) == NULL) {
        return NULL;
    }
    memset(&a, 0, sizeof(a));
    a.sdim = self->dim;
    a.idim = index->dim;
    a.self = ptl_tensor_data(self);
    a.index = (const int64_t *)ptl_tensor_data(index);
    a.out = ptl_tensor_data(out);
    memcpy(a.ssizes, self->sizes, sizeof(int64_t) * (size_t)self->dim);
    memcpy(a.sst, self->strides, sizeof(int64_t) * (size_t)self->dim);
    memcpy(a.isizes, index->sizes, sizeof(int64_t) * (size_t)index->dim);
    memcpy(a.ist, index->strides, sizeof(int64_t) * (size_t)index->dim);
    a.snumel = self->numel;
    a.inumel = index->numel;
    a.itemsize = (int64_t)ptl_tensor_itemsize(self);
    if (ptl_device_take_hook(&a) < 0) {
        PTL_CLEAR(out);
    }
    return out;
}

/* Note [Device masked_scatter]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * masked_scatter of a CUDA tensor (and of a CPU one while the tests emulate the CUDA
 * kernels) keeps index.c's checks and composes device kernels: the count of set mask
 * elements is read back for the source's size check (a synchronisation, as PyTorch's CUDA
 * kernel's), the source position of every element is the inclusive cumsum of the flat
 * broadcast mask less one (row-major order, as the CPU's walk), take gathers the source
 * there (an unset element before the first set one asks for -1, source's last element,
 * which where then drops), and where(mask, taken, out) is copied into out. */
int
index_masked_scatter_device(PtlTensorImpl *out, PtlTensorImpl *mask, PtlTensorImpl *src)
{
    int64_t count = 0, flat = -1;
    PtlTensorImpl *t[6] = {NULL};   /* mask expanded, flat, positions, less one, taken, where */
    int rc = -1;
    if (same_device(out, mask) < 0 || same_device(out, src) < 0) {
        return -1;
    }
    PtlIValue ex[2] = {ptl_iv_tensor(mask), ptl_iv_intlist(out->sizes, out->dim)};
    if ((t[0] = ptl_call_k(PTL_OP_expand, 2, ex)) == NULL ||
        ptl_device_reduce_read(PTL_OP_sum, t[0], &count) < 0) {
        goto done;
    }
    if (count > src->numel) {
        ptl_error_set(PTL_ERR_RUNTIME, "Number of elements of source < number of ones in mask");
        goto done;
    }
    if (count == 0) {
        rc = 0;
        goto done;
    }
    PtlIValue r[2] = {ptl_iv_tensor(t[0]), ptl_iv_intlist(&flat, 1)};
    if ((t[1] = ptl_call_k(PTL_OP_reshape, 2, r)) == NULL) {
        goto done;
    }
    PtlIValue cs[3] = {ptl_iv_tensor(t[1]), ptl_iv_int(0), ptl_iv_dtype(PTL_DTYPE_INT64)};
    PtlTensorImpl *c1 = ptl_scalar_tensor(1, PTL_DTYPE_INT64, ptl_device_cpu());
    PtlIValue sub[3] = {ptl_iv_none(), ptl_iv_tensor(c1), ptl_iv_int(1)};
    if (c1 != NULL && (t[2] = ptl_call_k(PTL_OP_cumsum, 3, cs)) != NULL) {
        sub[0] = ptl_iv_tensor(t[2]);
        t[3] = ptl_call_k(PTL_OP_sub_Tensor, 3, sub);
    }
    ptl_xdecref(c1);
    PtlIValue tk[2] = {ptl_iv_tensor(src), ptl_iv_tensor(t[3])};
    if (t[3] == NULL || (t[4] = ptl_call_k(PTL_OP_take, 2, tk)) == NULL) {
        goto done;
    }
    PtlIValue back[2] = {ptl_iv_tensor(t[4]), ptl_iv_intlist(out->sizes, out->dim)};
    PtlTensorImpl *shaped = ptl_call_k(PTL_OP_reshape, 2, back);
    PtlIValue w[3] = {ptl_iv_tensor(t[0]), ptl_iv_tensor(shaped), ptl_iv_tensor(out)};
    t[5] = shaped != NULL ? ptl_call_k(PTL_OP_where_self, 3, w) : NULL;
    ptl_xdecref(shaped);
    rc = t[5] != NULL ? ptl_copy_into(out, t[5]) : -1;
done:
    for (int i = 0; i < 6; i++) {
        ptl_xdecref(t[i]);
    }
    return rc;
}
