/* join.c -- joining tensors: cat/concat, stack, hstack, vstack.  Mirrors the cat and stack
 * parts of ATen/native/TensorShape.cpp.  Every input is copied (with its dtype converted to
 * the promoted one) into a narrow view of one new output; stack, hstack and vstack are cat
 * of reshaped views. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "../loops.h"
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

/* Note [Cat rows]
 * ~~~~~~~~~~~~~~~
 * cat moves a CPU input of the output's dtype whose last dim is contiguous as rows: the last
 * dim, with the dims before it that continue it in both the input and the output (all of a
 * contiguous input joined along dim 0: one row), the other dims walked by a counter, in one
 * typed loop (cat_rows_range) whose short rows are 32-byte moves, the last one ending at the
 * row's end.  When every input goes so with the same number of rows, the loop takes row r of
 * each input in turn, then row r + 1: inputs cut from one tensor (cat(chunk(A, 10, 1), 0))
 * read it in order, each line once, where input after input made ten strided passes that
 * each load the lines they share with the next (the same copy in C: 99 us one input after
 * another, 98 us in blocks of 5 rows, 84 us row after row, for 1000 x 1000 float32).
 * Through ptl_copy_into's iterator every row of 400 bytes had been a call of the row loop,
 * a capability check and a copy call, input after input: that cat had been 0.84-1.02x
 * PyTorch's time (issue 16).  Rows split over the threads, at least PTL_GRAIN_SIZE elements
 * a chunk; an input of one long row, when threads can split it, and any other input take
 * ptl_copy_into.  The bytes are the same. */
typedef struct CatRows {
    char *out;
    const char *in;
    int nd;                                       /* the walked dims */
    int64_t sizes[PTL_MAX_DIMS];
    int64_t ost[PTL_MAX_DIMS], ist[PTL_MAX_DIMS]; /* their strides in bytes */
    int64_t rows, bytes;                          /* rows and bytes a row */
} CatRows;

#define CAT_ROW_INLINE 1024

/* A row's place in the walk of its CatRows: the counter and the byte offsets */
typedef struct CatWalk {
    int64_t pos[PTL_MAX_DIMS], oo, io;
} CatWalk;

static void
cat_walk_init(const CatRows *c, CatWalk *w, int64_t row)
{
    w->oo = w->io = 0;
    for (int d = c->nd - 1; d >= 0; d--) {
        w->pos[d] = row % c->sizes[d];
        row /= c->sizes[d];
        w->oo += w->pos[d] * c->ost[d];
        w->io += w->pos[d] * c->ist[d];
    }
}

/* copies the row at w and steps w to the next */
static inline __attribute__((always_inline)) void
cat_row(const CatRows *c, CatWalk *w)
{
    char *dst = c->out + w->oo;
    const char *src = c->in + w->io;
    int64_t n = c->bytes;
    if (n < 32 || n > CAT_ROW_INLINE) {
        memcpy(dst, src, (size_t)n);
    }
    else {
        for (int64_t k = 0; k + 32 < n; k += 32) {
            memcpy(dst + k, src + k, 32);
        }
        memcpy(dst + n - 32, src + n - 32, 32);
    }
    for (int d = c->nd - 1; d >= 0; d--) {
        w->oo += c->ost[d];
        w->io += c->ist[d];
        if (++w->pos[d] < c->sizes[d]) {
            return;
        }
        w->oo -= w->pos[d] * c->ost[d];
        w->io -= w->pos[d] * c->ist[d];
        w->pos[d] = 0;
    }
}

/* rows [b, e) of each of plans[0..n), row after row, each row of every plan in turn */
static PTL_LOOP_CLONES void
cat_rows_range(const CatRows *plans, CatWalk *w, int64_t n, int64_t b, int64_t e)
{
    for (int64_t i = 0; i < n; i++) {
        cat_walk_init(&plans[i], &w[i], b);
    }
    for (int64_t row = b; row < e; row++) {
        for (int64_t i = 0; i < n; i++) {
            cat_row(&plans[i], &w[i]);
        }
    }
}

/* c for t into out's data at dst with out's strides (Note [Cat rows]): 1, or 0 when t does
 * not go by rows */
static int
cat_rows_plan(CatRows *c, char *dst, const PtlTensorImpl *out, const PtlTensorImpl *t)
{
    int64_t item = (int64_t)ptl_tensor_itemsize(t);
    int last = t->dim - 1;
    if (t->dtype != out->dtype || t->device.type != PTL_DEVICE_CPU ||
        out->device.type != PTL_DEVICE_CPU || t->numel == 0 ||
        (t->strides[last] != 1 && t->sizes[last] != 1)) {
        return 0;
    }
    memset(c, 0, sizeof(*c));
    c->bytes = t->sizes[last] * item;
    c->rows = t->numel / t->sizes[last];
    for (int d = last - 1; d >= 0; d--) {   /* dims that continue the row, then the walk */
        if (t->sizes[d] == 1) {
            continue;
        }
        if (c->nd == 0 && t->strides[d] * item == c->bytes && out->strides[d] * item == c->bytes) {
            c->bytes *= t->sizes[d];
            c->rows /= t->sizes[d];
            continue;
        }
        c->nd++;
        memmove(c->sizes + 1, c->sizes, sizeof(int64_t) * (size_t)(c->nd - 1));
        memmove(c->ost + 1, c->ost, sizeof(int64_t) * (size_t)(c->nd - 1));
        memmove(c->ist + 1, c->ist, sizeof(int64_t) * (size_t)(c->nd - 1));
        c->sizes[0] = t->sizes[d];
        c->ost[0] = out->strides[d] * item;
        c->ist[0] = t->strides[d] * item;
    }
    c->out = dst;
    c->in = ptl_tensor_data(t);
    return c->rows > 1 || c->bytes / item < 2 * PTL_GRAIN_SIZE || ptl_get_num_threads() < 2;
}

typedef struct CatJob {
    const CatRows *plans;
    int64_t n;
} CatJob;

static int
cat_rows_chunk(void *ctx, int64_t b, int64_t e)
{
    const CatJob *job = ctx;
    CatWalk *w = malloc(sizeof(CatWalk) * (size_t)job->n);
    if (w == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory");
    }
    cat_rows_range(job->plans, w, job->n, b, e);
    free(w);
    return 0;
}

/* plans[0..np) (np > 0, as many rows each) together (Note [Cat rows]): 0 or -1 */
static int
cat_run_plans(const CatRows *plans, int64_t np, int64_t item)
{
    int64_t bytes = 0;
    for (int64_t i = 0; i < np; i++) {
        bytes += plans[i].bytes;
    }
    CatJob job = {plans, np};
    void *tok = ptl_nogil_begin();
    int rc = ptl_parallel_for(0, plans[0].rows, PTL_GRAIN_SIZE * item / bytes + 1,
                              cat_rows_chunk, &job);
    ptl_nogil_end(tok);
    return rc;
}

/* out[..., offset:offset + size_i, ...] = ts[i] on the CPU: by rows where they go so,
 * together when they all do with as many rows (Note [Cat rows]), else by ptl_copy_into of a
 * view; 0 or -1 */
static int
cat_cpu_copies(PtlTensorImpl *out, PtlTensorImpl *const *ts, int64_t n, int64_t dim)
{
    CatRows *plans = malloc(sizeof(CatRows) * (size_t)n);
    PtlTensorImpl *piece = NULL;
    int64_t sizes[PTL_MAX_DIMS], offset = 0, np = 0, item = (int64_t)ptl_tensor_itemsize(out);
    int *planned = calloc((size_t)n, sizeof(int)), together = 1, rc = -1;
    if (plans == NULL || planned == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "out of memory");
        goto done;
    }
    for (int64_t i = 0; i < n; i++) {
        if (cat_skipped(ts[i]) || ts[i]->numel == 0) {
            offset += cat_skipped(ts[i]) ? 0 : ts[i]->sizes[dim];
            continue;
        }
        char *dst = (char *)ptl_tensor_data(out) + offset * out->strides[dim] * item;
        planned[i] = cat_rows_plan(&plans[np], dst, out, ts[i]);
        together &= planned[i] && plans[np].rows == plans[0].rows;
        np += planned[i];
        offset += ts[i]->sizes[dim];
    }
    if (together && np > 0) {
        rc = cat_run_plans(plans, np, item);
        goto done;
    }
    offset = 0;
    for (int64_t i = 0, k = 0; i < n; i++) {
        PtlTensorImpl *t = ts[i];
        if (cat_skipped(t)) {
            continue;
        }
        if (planned[i] && cat_run_plans(&plans[k++], 1, item) < 0) {
            goto done;
        }
        if (!planned[i] && t->numel > 0) {
            memcpy(sizes, out->sizes, sizeof(sizes));
            sizes[dim] = t->sizes[dim];
            piece = ptl_tensor_impl_view(out, out->dim, sizes, out->strides,
                                         offset * out->strides[dim]);
            if (piece == NULL || ptl_copy_into(piece, t) < 0) {
                goto done;
            }
            PTL_CLEAR(piece);
        }
        offset += t->sizes[dim];
    }
    rc = 0;
done:
    ptl_xdecref(piece);
    free(plans);
    free(planned);
    return rc;
}

/* cat of ts[0..n) (borrowed) along dim: the checks and messages of torch.cat, the promoted
 * dtype of every input.  Returns a new tensor or NULL with the error set. */
static PtlTensorImpl *
cat_impl(PtlTensorImpl *const *ts, int64_t n, int64_t dim)
{
    const PtlTensorImpl *ref = NULL;
    PtlTensorImpl *out = NULL;
    int64_t sizes[PTL_MAX_DIMS];
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
    if (cat_cpu_copies(out, ts, n, dim) < 0) {
        goto error;
    }
    return out;
error:
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

/* The memory format of cat's result: the one every input suggests, contiguous when they
 * differ (PyTorch's compute_output_memory_format; Note [Channels-last at the kernel
 * boundary]). */
static PtlMemoryFormat
cat_format(PtlTensorImpl *const *ts, int64_t n)
{
    PtlMemoryFormat f = PTL_MEMORY_FORMAT_CONTIGUOUS;
    for (int64_t i = 0; i < n; i++) {
        PtlMemoryFormat fi = ptl_tensor_impl_suggest_memory_format(ts[i]);
        if (fi == PTL_MEMORY_FORMAT_CONTIGUOUS || (i > 0 && fi != f)) {
            return PTL_MEMORY_FORMAT_CONTIGUOUS;
        }
        f = fi;
    }
    return f;
}

/* stack of ts[0..n) (n > 0, one shape) along dim < their rank, as PyTorch's: cat along dim,
 * laid out as cat lays it out, and that dim split into (n, its size) by a view, so that a
 * channels-last input gives a channels-last slice layout.  A new reference, or NULL. */
static PtlTensorImpl *
stack_by_cat(PtlTensorImpl *const *ts, int64_t n, int64_t dim)
{
    PtlMemoryFormat f = cat_format(ts, n);
    PtlTensorImpl *c = cat_impl(ts, n, dim), *r;
    int64_t sizes[PTL_MAX_DIMS], strides[PTL_MAX_DIMS], k = ts[0]->sizes[dim];
    if (c != NULL && f != PTL_MEMORY_FORMAT_CONTIGUOUS) {
        PtlTensorImpl *laid = ptl_copy_as(c, f);
        ptl_decref(c);
        c = laid;
    }
    if (c == NULL) {
        return NULL;
    }
    for (int i = 0, j = 0; i <= c->dim; i++) {
        sizes[i] = i == dim ? n : i == dim + 1 ? k : c->sizes[j];
        strides[i] = i == dim ? c->strides[dim] * k : c->strides[j];
        j += i != dim;
    }
    r = ptl_tensor_impl_view(c, c->dim + 1, sizes, strides, c->storage_offset);
    ptl_decref(c);
    return r;
}

/* stack(Tensor[] tensors, int dim=0): every tensor (all of one shape) joined along a new
 * dim: stack_by_cat below their rank, else each unsqueezed at dim, then cat */
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
    if (dim < ts[0]->dim) {
        return ptl_kernel_return(s, stack_by_cat(ts, n, dim));
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

/* cat's result laid out in cat_format */
static int
cat_as_inputs(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    return ptl_kernel_run_as(cat_cpu, op, ks, s, cat_format(s[0].u.tl.data, s[0].u.tl.n));
}

static const PtlKernelReg join_kernels[] = {
    {PTL_OP_cat, PTL_KEY_CPU, cat_as_inputs},
    {PTL_OP_concat, PTL_KEY_CPU, cat_as_inputs},
    {PTL_OP_stack, PTL_KEY_CPU, stack_cpu},
    {PTL_OP_hstack, PTL_KEY_CPU, hstack_cpu},
    {PTL_OP_vstack, PTL_KEY_CPU, vstack_cpu},
};
PTL_DEFINE_REGISTER(join_kernels)
