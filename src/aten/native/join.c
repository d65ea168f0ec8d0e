/* join.c -- joining tensors: cat/concat, stack, hstack, vstack.  Mirrors the cat and stack
 * parts of ATen/native/TensorShape.cpp.  Every input is copied (with its dtype converted to
 * the promoted one) into a narrow view of one new output; stack, hstack and vstack are cat
 * of reshaped views. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/error.h"
#include "device_index.h"
#include "device_reduce.h"
#include "native.h"

int (*ptl_device_cat_hook)(const PtlDeviceCatArgs *a);

/* Legacy rule kept by PyTorch: a 1-D tensor of size 0 takes no part in cat's shape checks. */
static int
cat_skipped(const PtlTensorImpl *t)
{
    return t->dim == 1 && t->sizes[0] == 0;
}

/* out = ts[0..n) (borrowed, checked) joined along dim by the device's kernel (device_index.h;
 * Note [CUDA index and sort kernels] in src/cuda/index_plan.h): inputs of another dtype or
 * device are converted first.  0, or -1 with the error set. */
static int
cat_on_device(PtlTensorImpl *out, PtlTensorImpl *const *ts, int64_t n, int64_t dim)
{
    PtlDeviceCatInput *table = malloc(sizeof(PtlDeviceCatInput) * (size_t)n);
    PtlTensorImpl **conv = calloc((size_t)n, sizeof(PtlTensorImpl *));
    PtlDeviceCatArgs a;
    int64_t start = 0;
    int rc = -1;
    memset(&a, 0, sizeof(a));
    if (table == NULL || conv == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "out of memory");
        goto done;
    }
    for (int64_t i = 0; i < n; i++) {
        PtlTensorImpl *t = ts[i];
        if (cat_skipped(t) || t->sizes[dim] == 0) {
            continue;
        }
        if (t->dtype != out->dtype || !ptl_device_equal(t->device, out->device)) {
            if ((conv[i] = ptl_to_copy(t, out->dtype, &out->device)) == NULL) {
                goto done;
            }
            t = conv[i];
        }
        table[a.ninputs].data = ptl_tensor_data(t);
        table[a.ninputs].start = start;
        memcpy(table[a.ninputs].strides, t->strides, sizeof(int64_t) * (size_t)t->dim);
        a.ninputs++;
        start += t->sizes[dim];
    }
    a.ndim = out->dim;
    a.dim = (int32_t)dim;
    a.out = ptl_tensor_data(out);
    a.inputs = table;
    a.numel = out->numel;
    a.itemsize = (int64_t)ptl_tensor_itemsize(out);
    memcpy(a.sizes, out->sizes, sizeof(int64_t) * (size_t)out->dim);
    rc = ptl_device_cat_hook(&a);
done:
    for (int64_t i = 0; conv != NULL && i < n; i++) {
        ptl_xdecref(conv[i]);
    }
    free(conv);
    free(table);
    return rc;
}

/* cat of ts[0..n) (borrowed) along dim: the checks and messages of torch.cat, the promoted
 * dtype of every input.  Returns a new tensor or NULL with the error set. */
static PtlTensorImpl *
cat_impl(PtlTensorImpl *const *ts, int64_t n, int64_t dim)
{
    const PtlTensorImpl *ref = NULL;
    PtlTensorImpl *out = NULL, *piece = NULL;
    int64_t sizes[PTL_MAX_DIMS], offset = 0;
    if (n == 0) {
        ptl_error_set(PTL_ERR_VALUE, "torch.cat(): expected a non-empty list of Tensors");
        return NULL;
    }
    PtlDtype dt = ts[0]->dtype;
    for (int64_t i = 0; i < n; i++) {
        dt = ptl_promote_types(dt, ts[i]->dtype);
        PTL_CHECK(ts[i]->dim > 0, PTL_ERR_RUNTIME,
                  "zero-dimensional tensor (at position %lld) cannot be concatenated",
                  (long long)i);
        if (ref == NULL && !cat_skipped(ts[i])) {
            ref = ts[i];
        }
    }
    if (ref == NULL) {   /* only [0]-shaped inputs */
        int64_t zero = 0;
        return ptl_empty(1, &zero, dt, ts[0]->device);
    }
    if (ptl_wrap_dim(&dim, ref->dim) < 0) {
        return NULL;
    }
    memcpy(sizes, ref->sizes, sizeof(sizes));
    sizes[dim] = 0;
    for (int64_t i = 0; i < n; i++) {
        const PtlTensorImpl *t = ts[i];
        if (cat_skipped(t)) {
            continue;
        }
        PTL_CHECK(t->dim == ref->dim, PTL_ERR_RUNTIME,
                  "Tensors must have same number of dimensions: got %d and %d", ref->dim,
                  t->dim);
        for (int d = 0; d < ref->dim; d++) {
            PTL_CHECK(d == dim || t->sizes[d] == ref->sizes[d], PTL_ERR_RUNTIME,
                      "Sizes of tensors must match except in dimension %lld. Expected size "
                      "%lld but got size %lld for tensor number %lld in the list.",
                      (long long)dim, (long long)ref->sizes[d], (long long)t->sizes[d],
                      (long long)i);
        }
        sizes[dim] += t->sizes[dim];
    }
    if ((out = ptl_empty(ref->dim, sizes, dt, ref->device)) == NULL) {
        goto error;
    }
    if ((out->device.type == PTL_DEVICE_CUDA || ptl_device_reduce_emulation) &&
        ptl_device_cat_hook != NULL && !ptl_tensor_is_meta(out)) {
        if (cat_on_device(out, ts, n, dim) < 0) {
            goto error;
        }
        return out;
    }
    /* out[..., offset:offset + size_i, ...] = ts[i] */
    for (int64_t i = 0; i < n; i++) {
        PtlTensorImpl *t = ts[i];
        if (cat_skipped(t)) {
            continue;
        }
        memcpy(sizes, out->sizes, sizeof(sizes));
        sizes[dim] = t->sizes[dim];
        piece = ptl_tensor_impl_view(out, out->dim, sizes, out->strides,
                                     offset * out->strides[dim]);
        if (piece == NULL || ptl_copy_into(piece, t) < 0) {
            goto error;
        }
        PTL_CLEAR(piece);
        offset += t->sizes[dim];
    }
    return out;
error:
    ptl_xdecref(piece);
    ptl_xdecref(out);
    return NULL;
}

/* cat / concat(Tensor[] tensors, int dim=0) -> Tensor */
static int
cat_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *out = cat_impl(s[0].u.tl.data, s[0].u.tl.n, s[1].u.i);
    if (out == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(out);
    return 0;
}

/* Views of ts[0..n) reshaped by `shape_of`, then cat along dim; puts the result on the
 * stack.  The views are released whatever happens. */
typedef PtlTensorImpl *(*ReshapeFn)(PtlTensorImpl *t, int64_t arg);

static int
cat_of_views(PtlIValue *s, PtlTensorImpl *const *ts, int64_t n, ReshapeFn fn, int64_t arg,
             int64_t dim)
{
    PtlTensorImpl **views = calloc((size_t)(n > 0 ? n : 1), sizeof(PtlTensorImpl *));
    PtlTensorImpl *out = NULL;
    if (views == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory allocating a tensor list");
    }
    for (int64_t i = 0; i < n; i++) {
        if ((views[i] = fn(ts[i], arg)) == NULL) {
            goto done;
        }
    }
    out = cat_impl(views, n, dim);
done:
    for (int64_t i = 0; i < n; i++) {
        ptl_xdecref(views[i]);
    }
    free(views);
    if (out == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(out);
    return 0;
}

/* t with a size-1 dimension inserted at d (0 <= d <= t->dim) */
static PtlTensorImpl *
unsqueeze_view(PtlTensorImpl *t, int64_t d)
{
    int64_t sizes[PTL_MAX_DIMS], strides[PTL_MAX_DIMS];
    if (t->dim + 1 > PTL_MAX_DIMS) {
        ptl_error_set(PTL_ERR_RUNTIME, "pytorchlite supports at most %d dimensions",
                      PTL_MAX_DIMS);
        return NULL;
    }
    for (int i = 0, j = 0; i <= t->dim; i++) {
        if (i == d) {
            sizes[i] = 1;
            strides[i] = 1;
        }
        else {
            sizes[i] = t->sizes[j];
            strides[i] = t->strides[j];
            j++;
        }
    }
    return ptl_tensor_impl_view(t, t->dim + 1, sizes, strides, t->storage_offset);
}

/* torch.atleast_1d (ndim == 1) or atleast_2d (ndim == 2) as a view: 0-dim -> [1] or
 * [1, 1], 1-D [n] -> [1, n] */
static PtlTensorImpl *
atleast_view(PtlTensorImpl *t, int64_t ndim)
{
    if (t->dim >= ndim) {
        return ptl_tensor_impl_view(t, t->dim, t->sizes, t->strides, t->storage_offset);
    }
    PtlTensorImpl *v = unsqueeze_view(t, 0);
    if (v != NULL && v->dim < ndim) {
        PtlTensorImpl *w = unsqueeze_view(v, 0);
        ptl_decref(v);
        v = w;
    }
    return v;
}

/* stack(Tensor[] tensors, int dim=0): every tensor (all of one shape) unsqueezed at dim,
 * then cat */
static int
stack_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *const *ts = s[0].u.tl.data;
    int64_t n = s[0].u.tl.n, dim = s[1].u.i;
    char b1[256], b2[256];
    if (n == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "stack expects a non-empty TensorList");
    }
    if (ptl_wrap_dim(&dim, ts[0]->dim + 1) < 0) {
        return -1;
    }
    for (int64_t i = 1; i < n; i++) {
        if (ts[i]->dim != ts[0]->dim ||
            memcmp(ts[i]->sizes, ts[0]->sizes, sizeof(int64_t) * (size_t)ts[0]->dim) != 0) {
            ptl_format_sizes(b1, sizeof(b1), ts[0]->dim, ts[0]->sizes);
            ptl_format_sizes(b2, sizeof(b2), ts[i]->dim, ts[i]->sizes);
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "stack expects each tensor to be equal size, but got %s at "
                                 "entry 0 and %s at entry %lld",
                                 b1, b2, (long long)i);
        }
    }
    return cat_of_views(s, ts, n, unsqueeze_view, dim, dim);
}

/* hstack(Tensor[] tensors): atleast_1d, then cat along dim 0 for 1-D inputs, else dim 1 */
static int
hstack_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *const *ts = s[0].u.tl.data;
    int64_t n = s[0].u.tl.n;
    if (n == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "hstack expects a non-empty TensorList");
    }
    return cat_of_views(s, ts, n, atleast_view, 1, ts[0]->dim <= 1 ? 0 : 1);
}

/* vstack(Tensor[] tensors): atleast_2d, then cat along dim 0 */
static int
vstack_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    int64_t n = s[0].u.tl.n;
    if (n == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "vstack expects a non-empty TensorList");
    }
    return cat_of_views(s, s[0].u.tl.data, n, atleast_view, 2, 0);
}

/* cat's result is laid out in the format every input suggests, contiguous when they differ
 * (PyTorch's compute_output_memory_format; Note [Channels-last at the kernel boundary]). */
static int
cat_as_inputs(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlMemoryFormat f = PTL_MEMORY_FORMAT_CONTIGUOUS;
    for (int64_t i = 0; i < s[0].u.tl.n; i++) {
        PtlMemoryFormat fi = ptl_tensor_impl_suggest_memory_format(s[0].u.tl.data[i]);
        if (fi == PTL_MEMORY_FORMAT_CONTIGUOUS || (i > 0 && fi != f)) {
            f = PTL_MEMORY_FORMAT_CONTIGUOUS;
            break;
        }
        f = fi;
    }
    return ptl_kernel_run_as(cat_cpu, op, ks, s, f);
}

static const PtlKernelReg join_kernels[] = {
    {PTL_OP_cat, PTL_KEY_CPU, cat_as_inputs},
    {PTL_OP_concat, PTL_KEY_CPU, cat_as_inputs},
    {PTL_OP_stack, PTL_KEY_CPU, stack_cpu},
    {PTL_OP_hstack, PTL_KEY_CPU, hstack_cpu},
    {PTL_OP_vstack, PTL_KEY_CPU, vstack_cpu},
};
PTL_DEFINE_REGISTER(join_kernels)
