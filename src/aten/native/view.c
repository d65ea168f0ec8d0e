/* view.c -- view and shape operators: a new TensorImpl over the same Storage, never a copy
 * (except reshape of a tensor that cannot be viewed).  Mirrors
 * ATen/native/TensorShape.cpp. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/error.h"
#include "native.h"

static int
set_view(PtlIValue *s, PtlTensorImpl *self, int dim, const int64_t *sizes,
         const int64_t *strides, int64_t offset)
{
    return ptl_kernel_return(s, ptl_tensor_impl_view(self, dim, sizes, strides, offset));
}

/* Resolves a -1 in `shape` against numel; fills out[] and returns 0, or -1 with PyTorch's
 * "shape '[...]' is invalid for input of size N". */
int
ptl_infer_size(const int64_t *shape, int64_t n, int64_t numel, int64_t *out)
{
    int64_t prod = 1, infer = -1;
    char buf[256];
    for (int64_t i = 0; i < n; i++) {
        if (shape[i] == -1) {
            if (infer >= 0) {
                return ptl_error_set(PTL_ERR_RUNTIME, "only one dimension can be inferred");
            }
            infer = i;
        }
        else if (shape[i] < 0) {
            return ptl_error_set(PTL_ERR_RUNTIME, "invalid shape dimension %lld",
                                 (long long)shape[i]);
        }
        else {
            prod *= shape[i];
        }
        out[i] = shape[i];
    }
    if (infer >= 0 && prod > 0 && numel % prod == 0) {
        out[infer] = numel / prod;
        return 0;
    }
    if (infer < 0 && prod == numel) {
        return 0;
    }
    ptl_format_sizes(buf, sizeof(buf), n, shape);
    if (infer >= 0 && prod == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "cannot reshape tensor of %lld elements into shape %s because the "
                             "unspecified dimension size -1 can be any value and is ambiguous",
                             (long long)numel, buf);
    }
    return ptl_error_set(PTL_ERR_RUNTIME, "shape '%s' is invalid for input of size %lld", buf,
                         (long long)numel);
}

/* Strides for viewing t as `shape` without copying, or 0 when impossible (PyTorch's
 * computeStride: each run of merged old dims must be contiguous with itself). */
static int
compute_view_strides(const PtlTensorImpl *t, int n, const int64_t *shape, int64_t *out)
{
    if (t->numel == 0 || t->dim == 0) {
        int64_t st = 1;
        for (int i = n - 1; i >= 0; i--) {
            out[i] = st;
            st *= shape[i] > 1 ? shape[i] : 1;
        }
        return 1;
    }
    int view_d = n - 1;
    int64_t chunk = t->strides[t->dim - 1], tensor_numel = 1, view_numel = 1;
    for (int d = t->dim - 1; d >= 0; d--) {
        tensor_numel *= t->sizes[d];
        if (d == 0 || (t->sizes[d - 1] != 1 && t->strides[d - 1] != tensor_numel * chunk)) {
            while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
                out[view_d] = view_numel * chunk;
                view_numel *= shape[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel) {
                return 0;
            }
            if (d > 0) {
                chunk = t->strides[d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

/* The int[] shape argument `arg` of view/reshape with one -1 inferred from self's numel, into
 * shape; its dim count, or -1 (error set). */
static int
infer_shape_arg(const PtlTensorImpl *self, const PtlIValue *arg, int64_t *shape)
{
    int64_t n = arg->u.il.n;
    if (n > PTL_MAX_DIMS) {
        return ptl_error_set(PTL_ERR_RUNTIME, "pytorchlite supports at most %d dimensions",
                             PTL_MAX_DIMS);
    }
    if (ptl_infer_size(arg->u.il.data, n, self->numel, shape) < 0) {
        return -1;
    }
    return (int)n;
}

/* view(Tensor(a) self, int[] size) -> Tensor(a) */
static int
view_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int64_t shape[PTL_MAX_DIMS], strides[PTL_MAX_DIMS];
    int n = infer_shape_arg(self, &s[1], shape);
    if (n < 0) {
        return -1;
    }
    if (!compute_view_strides(self, n, shape, strides)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "view size is not compatible with input tensor's size and stride "
                             "(at least one dimension spans across two contiguous subspaces). "
                             "Use .reshape(...) instead.");
    }
    return set_view(s, self, n, shape, strides, self->storage_offset);
}

/* view.dtype(Tensor(a) self, ScalarType dtype) -> Tensor(a): self's bytes read as another
 * dtype.  With another element size the last dim (stride 1) holds ratio times more or fewer
 * elements and the other strides and the offset scale by the ratio, with PyTorch's checks
 * and messages.  As in PyTorch, the result shares self's storage and version counter but is
 * no view for autograd (no _base) and is not differentiable (ops.def's N). */
static int
view_dtype_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *v;
    PtlDtype dt = s[1].u.dtype;
    int64_t sizes[PTL_MAX_DIMS], strides[PTL_MAX_DIMS], offset = self->storage_offset;
    int64_t from = (int64_t)ptl_dtype_itemsize(self->dtype), to = (int64_t)ptl_dtype_itemsize(dt);
    const char *a = ptl_dtype_legacy_name(self->dtype), *b = ptl_dtype_legacy_name(dt);
    int last = self->dim - 1;
    memcpy(sizes, self->sizes, sizeof(int64_t) * (size_t)self->dim);
    memcpy(strides, self->strides, sizeof(int64_t) * (size_t)self->dim);
    if (from != to && self->dim == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "self.dim() cannot be 0 to view %s as %s (different element sizes)",
                             a, b);
    }
    int64_t r = from > to ? from / to : to / from;
    if (from < to && sizes[last] % r != 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "self.size(-1) must be divisible by %lld to view %s as %s (different "
                             "element sizes), but got %lld", (long long)r, a, b,
                             (long long)sizes[last]);
    }
    if (from < to && offset % r != 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "self.storage_offset() must be divisible by %lld to view %s as %s "
                             "(different element sizes), but got %lld", (long long)r, a, b,
                             (long long)offset);
    }
    if (from != to && strides[last] != 1) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "self.stride(-1) must be 1 to view %s as %s (different element "
                             "sizes), but got %lld", a, b, (long long)strides[last]);
    }
    for (int d = 0; from < to && d < last; d++) {
        if (strides[d] % r != 0) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "self.stride(%d) must be divisible by %lld to view %s as %s "
                                 "(different element sizes), but got %lld", d, (long long)r, a,
                                 b, (long long)strides[d]);
        }
    }
    for (int d = 0; from != to && d < last; d++) {
        strides[d] = from > to ? strides[d] * r : strides[d] / r;
    }
    if (from != to) {
        sizes[last] = from > to ? sizes[last] * r : sizes[last] / r;
        offset = from > to ? offset * r : offset / r;
    }
    if ((v = ptl_tensor_impl_alias(self)) != NULL) {
        v->dtype = dt;
        v->keys = ptl_tensor_keys(v->device, dt) |
                  (self->keys & ~ptl_tensor_keys(self->device, self->dtype));
        v->storage_offset = offset;
        ptl_tensor_impl_set_sizes(v, self->dim, sizes, strides);
    }
    return ptl_kernel_return(s, v);
}

/* reshape(Tensor(a) self, int[] shape): a view when possible, else a contiguous copy */
static int
reshape_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *self = s[0].u.t;
    int64_t shape[PTL_MAX_DIMS], strides[PTL_MAX_DIMS];
    int n = infer_shape_arg(self, &s[1], shape);
    if (n < 0) {
        return -1;
    }
    if (compute_view_strides(self, n, shape, strides)) {
        return view_cpu(op, ks, s);
    }
    /* self cannot be viewed, so it is not contiguous and c is a fresh copy that nothing else
     * holds: it takes the new shape itself (a plain tensor, not a view, as in PyTorch) */
    PtlTensorImpl *c = ptl_contiguous(self);
    if (c == NULL) {
        return -1;
    }
    ptl_tensor_impl_set_sizes(c, n, shape, NULL);
    s[0] = ptl_iv_tensor(c);
    return 0;
}

/* view_as / reshape_as / expand_as(Tensor(a) self, Tensor other): view / reshape / expand
 * to other's sizes.  Composite, as in PyTorch: autograd records the op they call, so only
 * self is differentiated (other gives a shape, not a value) */
static int
as_other_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *other = s[1].u.t;
    PtlOpId target = op->id == PTL_OP_view_as      ? PTL_OP_view
                     : op->id == PTL_OP_reshape_as ? PTL_OP_reshape
                                                   : PTL_OP_expand;
    (void)ks;
    s[1] = ptl_iv_intlist(other->sizes, other->dim);
    s[2] = ptl_iv_bool(0);
    return ptl_dispatcher_call(ptl_op(target), s);
}

/* as_strided(Tensor(a) self, int[] size, int[] stride, int? storage_offset=None) */
static int
as_strided_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int64_t n = s[1].u.il.n;
    int64_t off = s[3].tag == PTL_IV_INT ? s[3].u.i : self->storage_offset;
    if (s[2].u.il.n != n) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "mismatch in length of strides and shape");
    }
    size_t need;
    if (ptl_storage_nbytes((int)n, s[1].u.il.data, s[2].u.il.data, off,
                           ptl_tensor_itemsize(self), &need) < 0) {
        return -1;
    }
    if (need > self->storage->nbytes) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "setStorage: sizes, strides and storage offset out of bounds of a "
                             "storage of %zu bytes",
                             self->storage->nbytes);
    }
    return set_view(s, self, (int)n, s[1].u.il.data, s[2].u.il.data, off);
}

/* transpose.int / swapaxes / swapdims(Tensor(a) self, int dim0, int dim1) */
static int
transpose_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int64_t d0 = s[1].u.i, d1 = s[2].u.i;
    int64_t sizes[PTL_MAX_DIMS], strides[PTL_MAX_DIMS], t;
    if (ptl_wrap_dim(&d0, self->dim) < 0 || ptl_wrap_dim(&d1, self->dim) < 0) {
        return -1;
    }
    memcpy(sizes, self->sizes, sizeof(sizes));
    memcpy(strides, self->strides, sizeof(strides));
    if (self->dim > 0) {
        t = sizes[d0], sizes[d0] = sizes[d1], sizes[d1] = t;
        t = strides[d0], strides[d0] = strides[d1], strides[d1] = t;
    }
    return set_view(s, self, self->dim, sizes, strides, self->storage_offset);
}

/* t(Tensor(a) self): transpose of a <= 2-D tensor */
static int
t_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *self = s[0].u.t;
    if (self->dim > 2) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "t() expects a tensor with <= 2 dimensions, but self is %dD",
                             self->dim);
    }
    s[1] = ptl_iv_int(0);
    s[2] = ptl_iv_int(self->dim == 2 ? 1 : 0);
    return transpose_cpu(op, ks, s);
}

/* permute(Tensor(a) self, int[] dims) */
static int
permute_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int64_t sizes[PTL_MAX_DIMS], strides[PTL_MAX_DIMS];
    int seen[PTL_MAX_DIMS] = {0};
    if (s[1].u.il.n != self->dim) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "permute(sparse_coo): number of dimensions in the tensor input does "
                             "not match the length of the desired ordering of dimensions i.e. "
                             "input.dim() = %d is not equal to len(dims) = %lld",
                             self->dim, (long long)s[1].u.il.n);
    }
    for (int i = 0; i < self->dim; i++) {
        int64_t d = s[1].u.il.data[i];
        if (ptl_wrap_dim(&d, self->dim) < 0) {
            return -1;
        }
        if (seen[d]++) {
            return ptl_error_set(PTL_ERR_RUNTIME, "permute(): duplicate dims are not allowed.");
        }
        sizes[i] = self->sizes[d];
        strides[i] = self->strides[d];
    }
    return set_view(s, self, self->dim, sizes, strides, self->storage_offset);
}

/* expand(Tensor(a) self, int[] size, *, bool implicit=False) */
static int
expand_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int64_t n = s[1].u.il.n;
    const int64_t *want = s[1].u.il.data;
    int64_t sizes[PTL_MAX_DIMS], strides[PTL_MAX_DIMS];
    char b1[128], b2[128];
    if (n < self->dim) {
        ptl_format_sizes(b1, sizeof(b1), n, want);
        ptl_format_sizes(b2, sizeof(b2), self->dim, self->sizes);
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "expand(torch.FloatTensor{%s}, size=%s): the number of sizes "
                             "provided (%lld) must be greater or equal to the number of "
                             "dimensions in the tensor (%d)",
                             b2, b1, (long long)n, self->dim);
    }
    if (n > PTL_MAX_DIMS) {
        return ptl_error_set(PTL_ERR_RUNTIME, "pytorchlite supports at most %d dimensions",
                             PTL_MAX_DIMS);
    }
    for (int64_t i = n - 1; i >= 0; i--) {
        int64_t od = i - (n - self->dim);
        int64_t have = od >= 0 ? self->sizes[od] : 1;
        int64_t st = od >= 0 ? self->strides[od] : 0;
        int64_t w = want[i];
        if (w == -1) {
            if (od < 0) {
                return ptl_error_set(PTL_ERR_RUNTIME,
                                     "The expanded size of the tensor (-1) isn't allowed in a "
                                     "leading, non-existing dimension %lld",
                                     (long long)i);
            }
            w = have;
        }
        if (have != w) {
            if (have != 1) {
                ptl_format_sizes(b1, sizeof(b1), n, want);
                ptl_format_sizes(b2, sizeof(b2), self->dim, self->sizes);
                return ptl_error_set(PTL_ERR_RUNTIME,
                                     "The expanded size of the tensor (%lld) must match the "
                                     "existing size (%lld) at non-singleton dimension %lld.  "
                                     "Target sizes: %s.  Tensor sizes: %s",
                                     (long long)w, (long long)have, (long long)i, b1, b2);
            }
            if (w < 0) {
                return ptl_error_set(PTL_ERR_RUNTIME, "invalid expanded size %lld",
                                     (long long)w);
            }
            st = 0;
        }
        sizes[i] = w;
        strides[i] = st;
    }
    return set_view(s, self, (int)n, sizes, strides, self->storage_offset);
}

/* broadcast_to(Tensor(a) self, int[] size) */
static int
broadcast_to_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    s[2] = ptl_iv_bool(0);
    return ptl_dispatcher_call(ptl_op(PTL_OP_expand), s);
}

/* unsqueeze(Tensor(a) self, int dim) */
static int
unsqueeze_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int64_t d = s[1].u.i;
    int64_t sizes[PTL_MAX_DIMS], strides[PTL_MAX_DIMS];
    if (ptl_wrap_dim(&d, self->dim + 1) < 0) {
        return -1;
    }
    if (self->dim + 1 > PTL_MAX_DIMS) {
        return ptl_error_set(PTL_ERR_RUNTIME, "pytorchlite supports at most %d dimensions",
                             PTL_MAX_DIMS);
    }
    for (int i = 0, j = 0; i <= self->dim; i++) {
        if (i == d) {
            sizes[i] = 1;
            strides[i] = d < self->dim ? self->sizes[d] * self->strides[d] : 1;
        }
        else {
            sizes[i] = self->sizes[j];
            strides[i] = self->strides[j];
            j++;
        }
    }
    return set_view(s, self, self->dim + 1, sizes, strides, self->storage_offset);
}

/* self's sizes and strides with dim d left out (select, unbind) */
static void
without_dim(const PtlTensorImpl *self, int64_t d, int64_t *sizes, int64_t *strides)
{
    for (int i = 0, j = 0; i < self->dim; i++) {
        if (i != d) {
            sizes[j] = self->sizes[i];
            strides[j++] = self->strides[i];
        }
    }
}

/* Wraps the dim d that select/slice index into (0-dim self: IndexError naming op_name);
 * 0 or -1. */
static int
wrap_indexed_dim(const PtlTensorImpl *self, int64_t *d, const char *op_name)
{
    if (self->dim == 0) {
        return ptl_error_set(PTL_ERR_INDEX, "%s() cannot be applied to a 0-dim tensor.", op_name);
    }
    return ptl_wrap_dim(d, self->dim);
}

/* select.int(Tensor(a) self, int dim, int index) */
static int
select_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int64_t d = s[1].u.i, idx = s[2].u.i;
    int64_t sizes[PTL_MAX_DIMS], strides[PTL_MAX_DIMS];
    if (wrap_indexed_dim(self, &d, "select") < 0) {
        return -1;
    }
    int64_t size = self->sizes[d];
    if (idx < -size || idx >= size) {
        return ptl_error_set(PTL_ERR_INDEX,
                             "index %lld is out of bounds for dimension %lld with size %lld",
                             (long long)idx, (long long)d, (long long)size);
    }
    if (idx < 0) {
        idx += size;
    }
    without_dim(self, d, sizes, strides);
    return set_view(s, self, self->dim - 1, sizes, strides,
                    self->storage_offset + idx * self->strides[d]);
}

/* slice.Tensor(Tensor(a) self, int dim=0, int? start=None, int? end=None, int step=1):
 * start/end clamp to [0, size] after adding size to negatives, as Python slices do. */
static int
slice_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int64_t d = s[1].u.i, step = s[4].u.i;
    int64_t sizes[PTL_MAX_DIMS], strides[PTL_MAX_DIMS];
    if (wrap_indexed_dim(self, &d, "slice") < 0) {
        return -1;
    }
    if (step <= 0) {
        return ptl_error_set(PTL_ERR_VALUE, "step must be greater than zero");
    }
    int64_t size = self->sizes[d];
    int64_t start = s[2].tag == PTL_IV_INT ? s[2].u.i : 0;
    int64_t end = s[3].tag == PTL_IV_INT ? s[3].u.i : size;
    if (start < 0) {
        start = start + size < 0 ? 0 : start + size;
    }
    if (end < 0) {
        end = end + size < 0 ? 0 : end + size;
    }
    if (start > size) {
        start = size;
    }
    if (end > size) {
        end = size;
    }
    if (end < start) {
        end = start;
    }
    memcpy(sizes, self->sizes, sizeof(sizes));
    memcpy(strides, self->strides, sizeof(strides));
    sizes[d] = end == start ? 0 : (end - start - 1) / step + 1;   /* ceil, without overflow */
    /* stride * step overflows only for a step past the dim's end, which keeps one element:
     * any stride serves it */
    if (__builtin_mul_overflow(self->strides[d], step, &strides[d])) {
        strides[d] = self->strides[d];
    }
    return set_view(s, self, self->dim, sizes, strides,
                    self->storage_offset + start * self->strides[d]);
}

/* alias (Tensor(a) self): the same data under a new TensorImpl, a view */
static int
alias_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    return set_view(s, self, self->dim, self->sizes, self->strides, self->storage_offset);
}

/* detach (Tensor(a) self): the same data and version counter under a new TensorImpl that,
 * as in PyTorch, is not a view (no _base), so autograd never links it back to self */
static int
detach_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    return ptl_kernel_return(s, ptl_tensor_impl_alias(s[0].u.t));
}

/* ---- squeeze, flatten, narrow, movedim ---- */

/* squeeze / squeeze.dim / squeeze.dims (Tensor(a) self[, dims]): drops the chosen size-1
 * dimensions; a chosen dimension whose size is not 1 stays. */
static int
squeeze_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int64_t sizes[PTL_MAX_DIMS], strides[PTL_MAX_DIMS];
    int chosen[PTL_MAX_DIMS] = {0};
    int n = 0;
    if (op->id == PTL_OP_squeeze) {
        for (int i = 0; i < self->dim; i++) {
            chosen[i] = 1;
        }
    }
    else {
        const int64_t *dims = op->id == PTL_OP_squeeze_dim ? &s[1].u.i : s[1].u.il.data;
        int64_t ndims = op->id == PTL_OP_squeeze_dim ? 1 : s[1].u.il.n;
        for (int64_t i = 0; i < ndims; i++) {
            int64_t d = dims[i];
            if (ptl_wrap_dim(&d, self->dim) < 0) {
                return -1;
            }
            if (chosen[d] && self->dim > 0) {
                return ptl_error_set(PTL_ERR_RUNTIME,
                                     "dim %lld appears multiple times in the list of dims",
                                     (long long)d);
            }
            chosen[d] = 1;
        }
    }
    for (int i = 0; i < self->dim; i++) {
        if (!(chosen[i] && self->sizes[i] == 1)) {
            sizes[n] = self->sizes[i];
            strides[n] = self->strides[i];
            n++;
        }
    }
    return set_view(s, self, n, sizes, strides, self->storage_offset);
}

/* flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1): dims start..end
 * merged into one, through reshape (a copy when they cannot be viewed as one, as in
 * PyTorch); a 0-dim tensor becomes 1-D. */
static int
flatten_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int64_t start = s[1].u.i, end = s[2].u.i;
    int64_t shape[PTL_MAX_DIMS];
    int n = 0;
    if (ptl_wrap_dim(&start, self->dim) < 0 || ptl_wrap_dim(&end, self->dim) < 0) {
        return -1;
    }
    if (start > end) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "flatten() has invalid args: start_dim cannot come after end_dim");
    }
    if (self->dim == 0) {
        shape[n++] = 1;
    }
    for (int64_t i = 0; i < self->dim; i++) {
        if (i <= start || i > end) {
            shape[n++] = self->sizes[i];
        }
        else {
            shape[n - 1] *= self->sizes[i];
        }
    }
    s[1] = ptl_iv_intlist(shape, n);
    return ptl_dispatcher_call(ptl_op(PTL_OP_reshape), s);
}

/* unflatten.int(Tensor(a) self, int dim, int[] sizes): dim split into `sizes` (one -1
 * allowed).  Splitting one dimension is always a view. */
static int
unflatten_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int64_t d = s[1].u.i, n = s[2].u.il.n;
    const int64_t *want = s[2].u.il.data;
    int64_t split[PTL_MAX_DIMS], sizes[PTL_MAX_DIMS], strides[PTL_MAX_DIMS];
    int64_t prod = 1, ninfer = 0;
    char buf[256];
    if (self->dim == 0) {
        return ptl_error_set(PTL_ERR_INDEX, "Dimension specified as 0 but tensor has no "
                                            "dimensions");
    }
    if (ptl_wrap_dim(&d, self->dim) < 0) {
        return -1;
    }
    if (n == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "unflatten: sizes must be non-empty");
    }
    if (self->dim - 1 + n > PTL_MAX_DIMS) {
        return ptl_error_set(PTL_ERR_RUNTIME, "pytorchlite supports at most %d dimensions",
                             PTL_MAX_DIMS);
    }
    for (int64_t i = 0; i < n; i++) {
        if (want[i] == -1) {
            ninfer++;
        }
        else {
            prod *= want[i];
        }
    }
    if ((ninfer == 0 && prod != self->sizes[d]) ||
        (ninfer == 1 && prod != 0 && self->sizes[d] % prod != 0)) {
        ptl_format_sizes(buf, sizeof(buf), n, want);
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "unflatten: Provided sizes %s don't multiply up to the size of "
                             "dim %lld (%lld) in the input tensor",
                             buf, (long long)d, (long long)self->sizes[d]);
    }
    if (ptl_infer_size(want, n, self->sizes[d], split) < 0) {
        return -1;
    }
    int k = 0;
    for (int i = 0; i < self->dim; i++) {
        if (i != d) {
            sizes[k] = self->sizes[i];
            strides[k++] = self->strides[i];
            continue;
        }
        /* innermost piece keeps the stride of dim d; outer pieces step over inner ones */
        int64_t st = self->strides[i];
        for (int64_t j = n - 1; j >= 0; j--) {
            sizes[k + j] = split[j];
            strides[k + j] = st;
            st *= split[j];
        }
        k += (int)n;
    }
    return set_view(s, self, k, sizes, strides, self->storage_offset);
}

/* Checks narrow's arguments against self and wraps dim and start; 0 or -1. */
static int
narrow_check(PtlTensorImpl *self, int64_t *d, int64_t *start, int64_t length)
{
    if (self->dim == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "narrow() cannot be applied to a 0-dim tensor.");
    }
    if (length < 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "narrow(): length must be non-negative.");
    }
    if (ptl_wrap_dim(d, self->dim) < 0) {
        return -1;
    }
    int64_t size = self->sizes[*d];
    if (*start < -size || *start > size) {
        return ptl_error_set(PTL_ERR_INDEX,
                             "start out of range (expected to be in range of [%lld, %lld], but "
                             "got %lld)",
                             (long long)-size, (long long)size, (long long)*start);
    }
    if (*start < 0) {
        *start += size;
    }
    if (*start > size - length) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "start (%lld) + length (%lld) exceeds dimension size (%lld).",
                             (long long)*start, (long long)length, (long long)size);
    }
    return 0;
}

/* The view self.narrow(d, start, length) for checked arguments (new ref or NULL). */
static PtlTensorImpl *
narrow_view(PtlTensorImpl *self, int64_t d, int64_t start, int64_t length)
{
    int64_t sizes[PTL_MAX_DIMS];
    memcpy(sizes, self->sizes, sizeof(sizes));
    sizes[d] = length;
    return ptl_tensor_impl_view(self, self->dim, sizes, self->strides,
                                self->storage_offset + start * self->strides[d]);
}

/* narrow(Tensor(a) self, int dim, int start, int length): self[..., start:start+length] */
static int
narrow_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int64_t d = s[1].u.i, start = s[2].u.i, length = s[3].u.i;
    if (narrow_check(self, &d, &start, length) < 0) {
        return -1;
    }
    return ptl_kernel_return(s, narrow_view(self, d, start, length));
}

/* movedim.int / moveaxis.int / movedim.intlist (Tensor(a) self, source, destination):
 * the permutation that puts dim source[i] at destination[i], the other dims keeping their
 * order. */
static int
movedim_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int list = op->id == PTL_OP_movedim_intlist;
    const int64_t *src = list ? s[1].u.il.data : &s[1].u.i;
    const int64_t *dst = list ? s[2].u.il.data : &s[2].u.i;
    int64_t nsrc = list ? s[1].u.il.n : 1, ndst = list ? s[2].u.il.n : 1;
    int64_t order[PTL_MAX_DIMS], sizes[PTL_MAX_DIMS], strides[PTL_MAX_DIMS];
    int src_used[PTL_MAX_DIMS] = {0}, dst_used[PTL_MAX_DIMS] = {0};
    char b1[256], b2[256];
    if (nsrc != ndst) {
        ptl_format_sizes(b1, sizeof(b1), nsrc, src);
        ptl_format_sizes(b2, sizeof(b2), ndst, dst);
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "movedim: Invalid source or destination dims: source (%s dims) "
                             "should contain the same number of dims as destination (%s dims)",
                             b1, b2);
    }
    for (int64_t i = 0; i < nsrc; i++) {
        int64_t a = src[i], b = dst[i];
        if (ptl_wrap_dim(&a, self->dim) < 0 || ptl_wrap_dim(&b, self->dim) < 0) {
            return -1;
        }
        if (src_used[a]++) {
            ptl_format_sizes(b1, sizeof(b1), nsrc, src);
            return ptl_error_set(PTL_ERR_RUNTIME, "movedim: repeated dim in `source` (%s)", b1);
        }
        if (dst_used[b]++) {
            ptl_format_sizes(b2, sizeof(b2), ndst, dst);
            return ptl_error_set(PTL_ERR_RUNTIME, "movedim: repeated dim in `destination` (%s)",
                                 b2);
        }
        order[b] = a;
    }
    for (int i = 0, next = 0; i < self->dim; i++) {
        if (dst_used[i]) {
            continue;
        }
        while (src_used[next]) {
            next++;
        }
        order[i] = next++;
    }
    for (int i = 0; i < self->dim; i++) {
        sizes[i] = self->sizes[order[i]];
        strides[i] = self->strides[order[i]];
    }
    return set_view(s, self, self->dim, sizes, strides, self->storage_offset);
}

/* ---- ops returning a list of views ---- */

/* Sets s[0] to the owned list of views of self along d with the given piece sizes
 * (which sum to self->sizes[d]); 0 or -1 (nothing left on the stack). */
static int
set_split(PtlIValue *s, PtlTensorImpl *self, int64_t d, int64_t n, const int64_t *pieces)
{
    PtlTensorImpl **list = ptl_tensorlist_new(n);
    int64_t start = 0;
    int failed = 0;
    if (list == NULL) {
        return -1;
    }
    for (int64_t i = 0; i < n && !failed; i++) {
        failed = (list[i] = narrow_view(self, d, start, pieces[i])) == NULL;
        start += pieces[i];
    }
    return ptl_set_tensorlist(s, list, n, failed);
}

/* Like set_split with every piece of size `piece` but the last, which takes the rest. */
static int
set_split_even(PtlIValue *s, PtlTensorImpl *self, int64_t d, int64_t n, int64_t piece)
{
    int64_t *pieces = calloc((size_t)(n > 0 ? n : 1), sizeof(int64_t));   /* checks n * 8 */
    if (pieces == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory allocating a tensor list");
    }
    for (int64_t i = 0; i < n; i++) {
        pieces[i] = i < n - 1 ? piece : self->sizes[d] - piece * (n - 1);
    }
    int rc = set_split(s, self, d, n, pieces);
    free(pieces);
    return rc;
}

/* unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]: every select along dim */
static int
unbind_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int64_t d = s[1].u.i, sizes[PTL_MAX_DIMS], strides[PTL_MAX_DIMS];
    if (self->dim == 0) {
        return ptl_error_set(PTL_ERR_INDEX, "Dimension specified as 0 but tensor has no "
                                            "dimensions");
    }
    if (ptl_wrap_dim(&d, self->dim) < 0) {
        return -1;
    }
    int64_t n = self->sizes[d];
    PtlTensorImpl **list = ptl_tensorlist_new(n);
    int failed = 0;
    if (list == NULL) {
        return -1;
    }
    without_dim(self, d, sizes, strides);
    for (int64_t i = 0; i < n && !failed; i++) {
        list[i] = ptl_tensor_impl_view(self, self->dim - 1, sizes, strides,
                                       self->storage_offset + i * self->strides[d]);
        failed = list[i] == NULL;
    }
    return ptl_set_tensorlist(s, list, n, failed);
}

/* split.Tensor(Tensor(a -> *) self, int split_size, int dim=0): pieces of split_size,
 * the last one smaller */
static int
split_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int64_t piece = s[1].u.i, d = s[2].u.i;
    if (self->dim == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "split expects at least a 1-dimensional tensor");
    }
    if (ptl_wrap_dim(&d, self->dim) < 0) {
        return -1;
    }
    int64_t size = self->sizes[d];
    if (piece < 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "split expects split_size be non-negative, but got split_size=%lld",
                             (long long)piece);
    }
    if (piece == 0 && size != 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "split_size can only be 0 if dimension size is 0, but got "
                             "dimension size of %lld",
                             (long long)size);
    }
    int64_t n = piece == 0 ? 1 : size / piece + (size % piece != 0);
    return set_split_even(s, self, d, n > 0 ? n : 1, piece);
}

/* split.sizes / split_with_sizes(Tensor(a -> *) self, int[] split_sizes, int dim=0) */
static int
split_with_sizes_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    const int64_t *pieces = s[1].u.il.data;
    int64_t n = s[1].u.il.n, d = s[2].u.i, sum = 0;
    char buf[256];
    if (self->dim == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "split expects at least a 1-dimensional tensor");
    }
    if (ptl_wrap_dim(&d, self->dim) < 0) {
        return -1;
    }
    for (int64_t i = 0; i < n; i++) {
        if (pieces[i] < 0) {
            ptl_format_sizes(buf, sizeof(buf), n, pieces);
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "split_with_sizes expects split_sizes have only non-negative "
                                 "entries, but got split_sizes=%s",
                                 buf);
        }
        sum += pieces[i];
    }
    if (sum != self->sizes[d]) {
        ptl_format_sizes(buf, sizeof(buf), n, pieces);
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "split_with_sizes expects split_sizes to sum exactly to %lld "
                             "(input tensor's size at dimension %lld), but got split_sizes=%s",
                             (long long)self->sizes[d], (long long)d, buf);
    }
    return set_split(s, self, d, n, pieces);
}

/* chunk(Tensor(a -> *) self, int chunks, int dim=0): pieces of ceil(size / chunks), so
 * fewer than `chunks` pieces may come back; a size-0 dim gives `chunks` empty pieces */
static int
chunk_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int64_t chunks = s[1].u.i, d = s[2].u.i;
    if (self->dim == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "chunk expects at least a 1-dimensional tensor");
    }
    if (chunks <= 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "chunk expects `chunks` to be greater than 0, got: %lld",
                             (long long)chunks);
    }
    if (ptl_wrap_dim(&d, self->dim) < 0) {
        return -1;
    }
    int64_t size = self->sizes[d];
    if (size == 0) {
        return set_split_even(s, self, d, chunks, 0);
    }
    int64_t piece = size / chunks + (size % chunks != 0);   /* ceil, without overflow */
    return set_split_even(s, self, d, (size + piece - 1) / piece, piece);
}

/* The views and shape ops only make TensorImpls over self's storage (reshape's copy goes
 * through ptl_contiguous, whose copy_ is the device's): the same kernels serve CPU and CUDA
 * tensors, as the factories' do. */
#define VIEW(ID, FN) {PTL_OP_##ID, PTL_KEY_CPU, FN}, {PTL_OP_##ID, PTL_KEY_CUDA, FN}
static const PtlKernelReg view_kernels[] = {
    VIEW(view, view_cpu),
    VIEW(view_dtype, view_dtype_cpu),
    VIEW(reshape, reshape_cpu),
    {PTL_OP_view_as, PTL_KEY_COMPOSITE_IMPLICIT, as_other_composite},
    {PTL_OP_reshape_as, PTL_KEY_COMPOSITE_IMPLICIT, as_other_composite},
    {PTL_OP_expand_as, PTL_KEY_COMPOSITE_IMPLICIT, as_other_composite},
    VIEW(as_strided, as_strided_cpu),
    VIEW(transpose_int, transpose_cpu),
    VIEW(swapaxes, transpose_cpu),
    VIEW(swapdims, transpose_cpu),
    VIEW(t, t_cpu),
    VIEW(permute, permute_cpu),
    VIEW(expand, expand_cpu),
    VIEW(broadcast_to, broadcast_to_cpu),
    VIEW(unsqueeze, unsqueeze_cpu),
    VIEW(select_int, select_cpu),
    VIEW(slice_Tensor, slice_cpu),
    VIEW(alias, alias_cpu),
    VIEW(detach, detach_cpu),
    VIEW(squeeze, squeeze_cpu),
    VIEW(squeeze_dim, squeeze_cpu),
    VIEW(squeeze_dims, squeeze_cpu),
    VIEW(flatten_using_ints, flatten_cpu),
    VIEW(unflatten_int, unflatten_cpu),
    VIEW(narrow, narrow_cpu),
    VIEW(movedim_int, movedim_cpu),
    VIEW(moveaxis_int, movedim_cpu),
    VIEW(movedim_intlist, movedim_cpu),
    VIEW(unbind_int, unbind_cpu),
    VIEW(split_Tensor, split_cpu),
    VIEW(split_sizes, split_with_sizes_cpu),
    VIEW(split_with_sizes, split_with_sizes_cpu),
    VIEW(chunk, chunk_cpu),
};
#undef VIEW
PTL_DEFINE_REGISTER(view_kernels)
