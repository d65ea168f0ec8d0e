/* shape_device.c -- shape.c's glue to the CUDA kernels of flip, roll, rot90, repeat, tril and
 * triu: the hook the backend sets (src/cuda/index_plan.c) and the arguments it takes (Note
 * [CUDA masked_fill and take] in src/cuda/index_plan.h). */
#include <string.h>

#include "device_index.h"
#include "device_reduce.h"
#include "shape_impl.h"

int (*ptl_device_shape_hook)(const PtlDeviceShapeArgs *a);

int
shape_on_device(const PtlTensorImpl *t)
{
    return (t->device.type == PTL_DEVICE_CUDA || ptl_device_reduce_emulation) &&
           ptl_device_shape_hook != NULL && !ptl_tensor_is_meta(t);
}

int
shape_gather_device(PtlTensorImpl *out, const PtlTensorImpl *t, const int64_t *tab, int dim,
                    const int64_t *sizes)
{
    PtlDeviceShapeArgs a;
    memset(&a, 0, sizeof(a));
    a.kind = PTL_DEVICE_SHAPE_GATHER;
    a.ndim = dim;
    a.src = ptl_tensor_data(t);
    a.out = ptl_tensor_data(out);
    a.tab = tab;
    for (int d = 0; d < dim; d++) {
        a.sizes[d] = sizes[d];
        a.start[d] = a.ntab;
        a.ntab += sizes[d];
    }
    a.numel = out->numel;
    a.itemsize = (int64_t)ptl_tensor_itemsize(t);
    return ptl_device_shape_hook(&a);
}

int
shape_triangle_device(PtlTensorImpl *t, int64_t k, int lower)
{
    PtlDeviceShapeArgs a;
    memset(&a, 0, sizeof(a));
    a.kind = PTL_DEVICE_SHAPE_TRIANGLE;
    a.ndim = t->dim;
    a.lower = lower;
    a.out = ptl_tensor_data(t);
    a.itemsize = (int64_t)ptl_tensor_itemsize(t);
    for (int d = 0; d < t->dim; d++) {
        a.sizes[d] = t->sizes[d];
        a.strides[d] = t->strides[d] * a.itemsize;
    }
    a.numel = t->numel;
    a.diagonal = k;
    return ptl_device_shape_hook(&a);
}
