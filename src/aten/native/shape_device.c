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

/* ---- linalg_cross and unfold_backward: compositions of device kernels ---- */

/* Note [Device cross and unfold_backward]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * On CUDA tensors (and under the kernel emulation) these two CPU kernels, which walk their
 * operands' memory, become compositions of the device's kernels.  linalg_cross is
 * a1 b2 - a2 b1 with a1, a2 (b1, b2) the operand rolled by -1 and -2 along dim, so row i
 * meets rows i + 1 and i + 2 (mod 3); the products are rounded in the dtype, where the CPU
 * loop rounds once from double.  unfold_backward starts from zeros of the input's shape
 * and adds grad_in into the windows: one add into the unfold view when the windows do not
 * overlap (step >= size), else one add per window position j, from the last to the first,
 * into the strided view of every window's j-th element (no element twice in one launch).
 * An element at p is reached from its windows (w, p - w step) in increasing w, the CPU
 * loop's order, so the sums have its bits. */

/* op(self, other) of the mul/sub/add kind (alpha 1 where the schema has one); new ref */
static PtlTensorImpl *
device_call2(PtlOpId id, PtlTensorImpl *a, PtlTensorImpl *b)
{
    PtlIValue args[3] = {ptl_iv_tensor(a), ptl_iv_tensor(b), ptl_iv_int(1)};
    return ptl_call_tensor(id, args);
}

PtlTensorImpl *
shape_cross_device(PtlTensorImpl *a, PtlTensorImpl *b, int64_t dim)
{
    PtlTensorImpl *r[4] = {NULL, NULL, NULL, NULL}, *p = NULL, *q = NULL, *out = NULL;
    for (int i = 0; i < 4; i++) {
        int64_t shift = i % 2 == 0 ? -1 : -2;
        PtlIValue args[3] = {ptl_iv_tensor(i < 2 ? a : b), ptl_iv_intlist(&shift, 1),
                             ptl_iv_intlist(&dim, 1)};
        if ((r[i] = ptl_call_tensor(PTL_OP_roll, args)) == NULL) {
            goto done;
        }
    }
    /* r = {a1, a2, b1, b2} */
    if ((p = device_call2(PTL_OP_mul_Tensor, r[0], r[3])) != NULL &&
        (q = device_call2(PTL_OP_mul_Tensor, r[1], r[2])) != NULL) {
        out = device_call2(PTL_OP_sub_Tensor, p, q);
    }
done:
    for (int i = 0; i < 4; i++) {
        ptl_xdecref(r[i]);
    }
    ptl_xdecref(p);
    ptl_xdecref(q);
    return out;
}

/* out (viewed through sizes, strides and offset) += src; 0 or -1 */
static int
add_into_view(PtlTensorImpl *out, int dim, const int64_t *sizes, const int64_t *strides,
              int64_t offset, PtlTensorImpl *src)
{
    PtlTensorImpl *view = ptl_tensor_impl_view(out, dim, sizes, strides, offset), *r;
    if (view == NULL) {
        return -1;
    }
    PtlIValue args[3] = {ptl_iv_tensor(view), ptl_iv_tensor(src), ptl_iv_int(1)};
    r = ptl_call_tensor(PTL_OP_add__Tensor, args);
    ptl_decref(view);
    ptl_xdecref(r);
    return r != NULL ? 0 : -1;
}

PtlTensorImpl *
shape_unfold_backward_device(PtlTensorImpl *g, int nd, const int64_t *in, int64_t d,
                             int64_t size, int64_t step)
{
    int64_t sizes[PTL_MAX_DIMS], strides[PTL_MAX_DIMS];
    PtlIValue zero = ptl_iv_int(0);
    PtlTensorImpl *out = ptl_empty(nd, in, g->dtype, g->device);
    if (out == NULL || ptl_fill_scalar(out, &zero) < 0) {
        ptl_xdecref(out);
        return NULL;
    }
    /* the windows' view: grad_in's shape over out (a 0-dim input: its one element) */
    for (int k = 0; k < nd; k++) {
        sizes[k] = g->sizes[k];
        strides[k] = k == d ? out->strides[k] * step : out->strides[k];
    }
    int64_t st_d = nd > 0 ? out->strides[d] : 0;
    if (step >= size) {
        sizes[nd] = size;
        strides[nd] = st_d;
        if (add_into_view(out, nd + 1, sizes, strides, out->storage_offset, g) < 0) {
            ptl_decref(out);
            return NULL;
        }
        return out;
    }
    for (int64_t j = size - 1; j >= 0; j--) {
        PtlIValue args[3] = {ptl_iv_tensor(g), ptl_iv_int(g->dim - 1), ptl_iv_int(j)};
        PtlTensorImpl *col = ptl_call_tensor(PTL_OP_select_int, args);
        int rc = col != NULL ? add_into_view(out, nd, sizes, strides,
                                             out->storage_offset + j * st_d, col)
                             : -1;
        ptl_xdecref(col);
        if (rc < 0) {
            ptl_decref(out);
            return NULL;
        }
    }
    return out;
}
