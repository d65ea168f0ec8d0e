/* index_device.c -- index.c's glue to the CUDA masked_fill and take kernels: the hooks the
 * backend sets (src/cuda/index_plan.c) and the arguments they take.  See Note [CUDA
 * masked_fill and take] in src/cuda/index_plan.h. */
#include <string.h>

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
