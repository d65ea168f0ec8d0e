/* shape.c -- shape and ordering operators that move data: flip, roll, rot90, repeat,
 * repeat_interleave, tril/triu, diag_embed, linalg_cross, trace; the views diagonal and
 * unfold; and the composites built on them (fliplr, flipud, tile, diag, cross, kron, diff,
 * broadcast_tensors, meshgrid, tensor_split).  Mirrors ATen/native/TensorShape.cpp,
 * TensorTransformations.cpp, Repeat.cpp, TriangularOps.cpp, Cross.cpp and
 * ReduceOps.cpp (trace).
 *
 * Note [Gather by offset tables]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * flip, roll and repeat all read output index (i0, ..., ik) from the source at a byte
 * offset that is a sum of one term per output dimension: tab[d][i_d].  Flipping dim d is
 * tab[d][i] = (n - 1 - i) * stride; rolling it by s is ((i - s) mod n) * stride; repeating
 * it is (i mod n) * stride (rot90 is a flip, and a transposed view).  One dtype-generic
 * loop (copying elements by their size) serves them all.  On the CPU a flip (and rot90's)
 * whose dims include the innermost one has no table for that dim: its rows are
 * read back from their last element (flip_new; Note [Flip of the innermost dim] in
 * shape_gather.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/allocator.h"
#include "../../c10/error.h"
#include "../../c10/memory_format.h"
#include "../../c10/parallel.h"
#include "../complex_math.h"
#include "../loops.h"
#include "device_compose.h"
#include "shape_impl.h"

/* Per-output-dimension byte offsets into the source: tab[d][0..sizes[d]).  The buffer comes
 * from the CPU allocator, whose cache keeps big blocks: glibc's malloc maps a table of
 * 128 KiB or more afresh at every call until some free has raised its threshold, and
 * faulting its pages in was most of flip(0) of 65536 float32 (212 us, against 33 us where
 * PyTorch's frees in the same process had raised the threshold; PyTorch 9 us). */
typedef struct Tables {
    int64_t *buf;
    size_t nbytes;
    int64_t *tab[PTL_MAX_DIMS];
} Tables;

static int
tables_new(Tables *t, int dim, const int64_t *sizes)
{
    int64_t total = 0;
    for (int d = 0; d < dim; d++) {
        total += sizes[d];
    }
    const PtlAllocator *a = ptl_cpu_allocator();
    t->nbytes = sizeof(int64_t) * (size_t)(total > 0 ? total : 1);
    if ((t->buf = a->alloc(a->ctx, t->nbytes)) == NULL) {
        return -1;
    }
    for (int64_t d = 0, off = 0; d < dim; off += sizes[d], d++) {
        t->tab[d] = t->buf + off;
    }
    return 0;
}

static void
tables_free(Tables *t)
{
    const PtlAllocator *a = ptl_cpu_allocator();
    a->free(a->ctx, t->buf, t->nbytes);
}

/* tab[i] = first + i step (i < n), and the identity table of t's dim d: tab[i] = i * stride
 * (bytes).  A loop of its own, with the AVX2 clone: stores to tab might alias t's sizes and
 * strides, so the loops that read them at every element stayed scalar. */
PTL_LOOP_CLONES static void
table_line(int64_t *tab, int64_t n, int64_t first, int64_t step)
{
    for (int64_t i = 0; i < n; i++) {
        tab[i] = first + i * step;
    }
}

static void
table_identity(int64_t *tab, const PtlTensorImpl *t, int d)
{
    table_line(tab, t->sizes[d], 0, t->strides[d] * (int64_t)ptl_tensor_itemsize(t));
}

/* Fills out (contiguous, of `sizes`, t's dtype) with the element at index I read from t
 * through the tables filled by fill(tab, ctx) (Note [Gather by offset tables]).  0 or -1. */
typedef void (*FillTables)(int64_t **tab, const PtlTensorImpl *t, const int64_t *sizes,
                           const void *ctx);

static int
gather_into(PtlTensorImpl *out, PtlTensorImpl *t, int dim, const int64_t *sizes,
            FillTables fill, const void *ctx)
{
    Tables tb;
    if (out->numel == 0) {
        return 0;
    }
    if (tables_new(&tb, dim, sizes) < 0) {
        return -1;
    }
    fill(tb.tab, t, sizes, ctx);
    int rc = 0;
    if (shape_on_device(t)) {
        rc = shape_gather_device(out, t, tb.buf, dim, sizes);
        tables_free(&tb);
        return rc;
    }
    void *gil = out->numel >= PTL_GRAIN_SIZE ? ptl_nogil_begin() : NULL;
    shape_gather_copy(ptl_tensor_data(out), out->strides, ptl_tensor_data(t), tb.tab, dim,
                      sizes, ptl_tensor_itemsize(t));
    ptl_nogil_end(gil);
    tables_free(&tb);
    return rc;
}

/* A new contiguous tensor of `sizes` gathered as gather_into does. */
static PtlTensorImpl *
gather_new(PtlTensorImpl *t, int dim, const int64_t *sizes, FillTables fill, const void *ctx)
{
    PtlTensorImpl *out = ptl_empty(dim, sizes, t->dtype, t->device);
    if (out != NULL && gather_into(out, t, dim, sizes, fill, ctx) < 0) {
        PTL_CLEAR(out);
    }
    return out;
}

static int
set_result(PtlIValue *s, PtlTensorImpl *out)
{
    if (out == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(out);
    return 0;
}

/* ---- flip ---- */

/* the tables of t's dims [0, ndims) for a flip of the dims marked in ctx (an int per dim) */
static void
flip_fill(int64_t **tab, const PtlTensorImpl *t, const int64_t *sizes, const void *ctx,
          int ndims)
{
    const int *flipped = ctx;
    for (int d = 0; d < ndims; d++) {
        const int64_t step = t->strides[d] * (int64_t)ptl_tensor_itemsize(t);
        if (flipped[d]) {
            table_line(tab[d], sizes[d], (sizes[d] - 1) * step, -step);
        }
        else {
            table_identity(tab[d], t, d);
        }
    }
}

static void
flip_fill_all(int64_t **tab, const PtlTensorImpl *t, const int64_t *sizes, const void *ctx)
{
    flip_fill(tab, t, sizes, ctx, t->dim);
}

/* flip of t along the dims marked in flipped, into out (contiguous, of `sizes`: t's, or
 * rot90's copy of them).  With the innermost dim flipped on the CPU, that dim has no table:
 * it is a line read back from its last element (Note [Flip of the innermost dim] in
 * shape_gather.c).  0 or -1. */
static int
flip_into(PtlTensorImpl *out, PtlTensorImpl *t, const int64_t *sizes, const int *flipped)
{
    const int dim = t->dim;
    if (dim == 0 || !flipped[dim - 1] || shape_on_device(t)) {
        return gather_into(out, t, dim, sizes, flip_fill_all, flipped);
    }
    if (out->numel == 0) {
        return 0;
    }
    Tables tb;
    const size_t isz = ptl_tensor_itemsize(t);
    const int64_t step = t->strides[dim - 1] * (int64_t)isz;
    if (tables_new(&tb, dim - 1, sizes) < 0) {
        return -1;
    }
    flip_fill(tb.tab, t, sizes, flipped, dim - 1);
    void *gil = out->numel >= PTL_GRAIN_SIZE ? ptl_nogil_begin() : NULL;
    shape_gather_line(ptl_tensor_data(out), out->strides,
                      (const char *)ptl_tensor_data(t) + (sizes[dim - 1] - 1) * step, tb.tab,
                      dim, sizes, isz, -step);
    ptl_nogil_end(gil);
    tables_free(&tb);
    return 0;
}

static PtlTensorImpl *
flip_new(PtlTensorImpl *t, const int64_t *sizes, const int *flipped)
{
    PtlTensorImpl *out = ptl_empty(t->dim, sizes, t->dtype, t->device);
    if (out != NULL && flip_into(out, t, sizes, flipped) < 0) {
        PTL_CLEAR(out);
    }
    return out;
}

/* Note [Flip keeps the layout]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * flip's result is laid out as empty_like lays out its input (PyTorch's TensorIterator
 * output: x.t().flip(1) has strides (1, n)), so the copy walks both tensors in the input's
 * memory order: the dims sorted by the result's strides, as views of both, over which the
 * result is contiguous.  Walking a transposed input in the result's row-major order read
 * every element from another cache line: flip(1) of a transposed 1024 x 1024 float32 took
 * 3.35 ms, PyTorch's 0.47 (docs/performance.md, flip of a transposed input). */
static PtlTensorImpl *
flip_like_input(PtlTensorImpl *t, const int *flipped)
{
    const int dim = t->dim;
    int64_t like[PTL_MAX_DIMS];
    int perm[PTL_MAX_DIMS];
    if (dim < 2 || ptl_memory_format_like_strides(t, PTL_MEMORY_FORMAT_PRESERVE, like) < 0) {
        ptl_error_clear();
        return flip_new(t, t->sizes, flipped);
    }
    if (shape_dims_in_memory_order(like, dim, perm)) {
        return flip_new(t, t->sizes, flipped);
    }
    PtlTensorImpl *out = ptl_empty_strided(dim, t->sizes, like, t->dtype, t->device);
    if (out == NULL) {
        return NULL;
    }
    int64_t sizes[PTL_MAX_DIMS], t_strides[PTL_MAX_DIMS], out_strides[PTL_MAX_DIMS];
    int pflipped[PTL_MAX_DIMS];
    for (int i = 0; i < dim; i++) {
        sizes[i] = t->sizes[perm[i]];
        t_strides[i] = t->strides[perm[i]];
        out_strides[i] = like[perm[i]];
        pflipped[i] = flipped[perm[i]];
    }
    PtlTensorImpl *tp = ptl_tensor_impl_view(t, dim, sizes, t_strides, t->storage_offset);
    PtlTensorImpl *op = tp == NULL ? NULL
                                   : ptl_tensor_impl_view(out, dim, sizes, out_strides,
                                                          out->storage_offset);
    if (op == NULL || flip_into(op, tp, sizes, pflipped) < 0) {
        PTL_CLEAR(out);
    }
    ptl_xdecref(tp);
    ptl_xdecref(op);
    return out;
}

/* flip(Tensor self, int[] dims) -> Tensor: [*] -> [*], reversed along every dim of dims */
static int
flip_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int flipped[PTL_MAX_DIMS] = {0};
    for (int64_t i = 0; i < s[1].u.il.n; i++) {
        int64_t d = s[1].u.il.data[i];
        if (ptl_wrap_dim(&d, self->dim) < 0) {
            return -1;
        }
        if (flipped[d]++) {
            return ptl_error_set(PTL_ERR_RUNTIME, "dim %lld appears multiple times in the list "
                                                  "of dims", (long long)d);
        }
    }
    return set_result(s, flip_like_input(self, flipped));
}

/* ---- roll ---- */

static void
roll_fill(int64_t **tab, const PtlTensorImpl *t, const int64_t *sizes, const void *ctx)
{
    const int64_t *shift = ctx;
    for (int d = 0; d < t->dim; d++) {
        /* j = (i - shift) mod n, stepped (two divisions an entry cost roll(3, 1) 5%) */
        int64_t n = sizes[d], j = n > 0 ? (n - shift[d] % n) % n : 0;
        for (int64_t i = 0; i < n; i++, j = j + 1 < n ? j + 1 : 0) {
            tab[d][i] = j * t->strides[d] * (int64_t)ptl_tensor_itemsize(t);
        }
    }
}

/* roll of self along its dims by shift[d] each, laid out in self's suggested memory format
 * as PyTorch's (a channels-last input rolls into a channels-last result; any other into a
 * contiguous one): the gather runs over views in that format's memory order, into a result
 * contiguous in that order, which then takes self's dims back. */
static PtlTensorImpl *
roll_in_format(PtlTensorImpl *self, const int64_t *shift)
{
    PtlMemoryFormat f = ptl_tensor_impl_suggest_memory_format(self);
    int64_t like[PTL_MAX_DIMS], sizes[PTL_MAX_DIMS], strides[PTL_MAX_DIMS];
    int64_t pshift[PTL_MAX_DIMS];
    int dim = self->dim, perm[PTL_MAX_DIMS];
    if (f == PTL_MEMORY_FORMAT_CONTIGUOUS) {
        return gather_new(self, dim, self->sizes, roll_fill, shift);
    }
    ptl_memory_format_strides(f, dim, self->sizes, like);
    shape_dims_in_memory_order(like, dim, perm);
    for (int i = 0; i < dim; i++) {
        sizes[i] = self->sizes[perm[i]];
        strides[i] = self->strides[perm[i]];
        pshift[i] = shift[perm[i]];
    }
    PtlTensorImpl *v = ptl_tensor_impl_view(self, dim, sizes, strides, self->storage_offset);
    PtlTensorImpl *out = v != NULL ? gather_new(v, dim, sizes, roll_fill, pshift) : NULL;
    ptl_xdecref(v);
    if (out != NULL) {
        ptl_tensor_impl_set_sizes(out, dim, self->sizes, like);
    }
    return out;
}

/* roll(Tensor self, int[1] shifts, int[1] dims=[]) -> Tensor: [*] -> [*]; out[i] =
 * self[i - shift] along each rolled dim (cyclically); without dims the flattened tensor
 * rolls */
static int
roll_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *flat, *out;
    int64_t nshift = s[1].u.il.n, ndims = s[2].u.il.n, shift[PTL_MAX_DIMS] = {0};
    if (nshift == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "`shifts` required");
    }
    if (ndims == 0 && nshift == 1) {
        /* the flattened roll: a 1-D contiguous view of self, rolled, given self's shape */
        PtlTensorImpl *c = ptl_contiguous(self);
        if (c == NULL) {
            return -1;
        }
        flat = ptl_tensor_impl_view(c, 1, &c->numel, NULL, c->storage_offset);
        ptl_decref(c);
        if (flat == NULL) {
            return -1;
        }
        shift[0] = s[1].u.il.data[0];
        out = flat->numel > 0 ? gather_new(flat, 1, flat->sizes, roll_fill, shift)
                              : ptl_empty(1, flat->sizes, flat->dtype, flat->device);
        ptl_decref(flat);
        if (out != NULL) {
            ptl_tensor_impl_set_sizes(out, self->dim, self->sizes, NULL);
        }
        return set_result(s, out);
    }
    if (nshift != ndims) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "shifts and dimensions must align. shifts: %lld, dims:%lld",
                             (long long)nshift, (long long)ndims);
    }
    if (self->dim == 0) {
        return ptl_error_set(PTL_ERR_INDEX, "Dimension specified as 0 but tensor has no "
                                            "dimensions");
    }
    for (int64_t i = 0; i < ndims; i++) {
        int64_t d = s[2].u.il.data[i];
        if (ptl_wrap_dim(&d, self->dim) < 0) {
            return -1;
        }
        if (self->sizes[d] > 0) {
            shift[d] = (shift[d] + s[1].u.il.data[i] % self->sizes[d]) % self->sizes[d];
        }
    }
    return set_result(s, roll_in_format(self, shift));
}

/* ---- rot90 ---- */

/* rot90(Tensor self, int k=1, int[] dims=[0, 1]) -> Tensor: [.., n0 @d0, .., n1 @d1, ..] ->
 * the same with n0 and n1 swapped when k is odd; turns from dims[0] towards dims[1].  As
 * PyTorch, an odd k gives a transposed view of a flipped copy (flip(d1), or flip(d0) for
 * k = 3, then d0 and d1 swapped), k = 2 the flip of both dims and k = 0 a contiguous copy:
 * the flips keep self's layout (Note [Flip keeps the layout]), so the strides are PyTorch's
 * for a permuted self too, and the copy reads and writes in memory order, where gathering
 * the rotation into a contiguous result read every value across rows (0.13x PyTorch's time
 * on 1000x1000, issue 16). */
static int
rot90_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int64_t sizes[PTL_MAX_DIMS];
    int64_t d0, d1, k;
    if (s[2].u.il.n != 2) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "expected total rotation dims == 2, but got dims = %lld",
                             (long long)s[2].u.il.n);
    }
    if (self->dim < 2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "expected total dims >= 2, but got total dims = %d",
                             self->dim);
    }
    d0 = s[2].u.il.data[0];
    d1 = s[2].u.il.data[1];
    if (d0 == d1 || llabs(d0 - d1) == self->dim) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "expected rotation dims to be different, but got dim0 = %lld and "
                             "dim1 = %lld",
                             (long long)d0, (long long)d1);
    }
    if (ptl_wrap_dim(&d0, self->dim) < 0 || ptl_wrap_dim(&d1, self->dim) < 0) {
        return -1;
    }
    k = ((s[1].u.i % 4) + 4) % 4;
    memcpy(sizes, self->sizes, sizeof(sizes));
    if (k % 2 == 1) {
        int flipped[PTL_MAX_DIMS] = {0};
        int64_t strides[PTL_MAX_DIMS];
        flipped[k == 1 ? d1 : d0] = 1;
        PtlTensorImpl *out = flip_like_input(self, flipped);
        if (out == NULL) {
            return -1;
        }
        memcpy(strides, out->strides, sizeof(strides));
        sizes[d0] = self->sizes[d1];
        sizes[d1] = self->sizes[d0];
        strides[d0] = out->strides[d1];
        strides[d1] = out->strides[d0];
        ptl_tensor_impl_set_sizes(out, out->dim, sizes, strides);
        return set_result(s, out);
    }
    if (k == 2) {
        int flipped[PTL_MAX_DIMS] = {0};
        flipped[d0] = flipped[d1] = 1;
        return set_result(s, flip_like_input(self, flipped));
    }
    PtlTensorImpl *out = ptl_empty(self->dim, sizes, self->dtype, self->device);
    if (out != NULL && ptl_copy_into(out, self) < 0) {
        PTL_CLEAR(out);
    }
    return set_result(s, out);
}

/* ---- repeat ---- */

static void
repeat_fill(int64_t **tab, const PtlTensorImpl *t, const int64_t *sizes, const void *ctx)
{
    int lead = *(const int *)ctx;
    for (int d = 0; d < lead; d++) {
        memset(tab[d], 0, sizeof(int64_t) * (size_t)sizes[d]);
    }
    for (int d = lead; d < lead + t->dim; d++) {
        int64_t n = t->sizes[d - lead];
        for (int64_t i = 0, j = 0; i < sizes[d]; i++, j = j + 1 < n ? j + 1 : 0) {  /* i % n */
            tab[d][i] = j * t->strides[d - lead] * (int64_t)ptl_tensor_itemsize(t);
        }
    }
}

/* repeat(Tensor self, int[] repeats) -> Tensor: [s0..sk] -> [r0, .., r_lead * s0, ..]: self
 * tiled repeats[i] times along dim i (leading repeats add dims) */
static int
repeat_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int64_t n = s[1].u.il.n, sizes[PTL_MAX_DIMS], numel;
    const int64_t *r = s[1].u.il.data;
    if (n < self->dim) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Number of dimensions of repeat dims can not be "
                                              "smaller than number of dimensions of tensor");
    }
    if (n > PTL_MAX_DIMS) {
        return ptl_error_set(PTL_ERR_RUNTIME, "pytorchlite supports at most %d dimensions",
                             PTL_MAX_DIMS);
    }
    int lead = (int)n - self->dim;
    for (int d = 0; d < n; d++) {
        int64_t size = d < lead ? 1 : self->sizes[d - lead];
        /* a negative product is left to ptl_check_sizes' message; an overflow would wrap */
        if (__builtin_mul_overflow(r[d], size, &sizes[d])) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "repeat: dimension %d of the result, %lld repeats of size "
                                 "%lld, has more elements than int64 can count",
                                 d, (long long)r[d], (long long)size);
        }
    }
    if (ptl_check_sizes((int)n, sizes, &numel) < 0) {
        return -1;
    }
    return set_result(s, gather_new(self, (int)n, sizes, repeat_fill, &lead));
}

/* ---- tril / triu ---- */

/* Zeroes the elements of every matrix of t (the last two dims) that tril (lower != 0) or
 * triu drops: column j of row i goes when j - i > k (tril) or j - i < k (triu).  0, or -1. */
static int
zero_triangle(PtlTensorImpl *t, int64_t k, int lower)
{
    if (ptl_tensor_is_meta(t)) {   /* no data (Note [Meta kernels] in meta.c) */
        return 0;
    }
    int nb = t->dim - 2;
    int64_t rows = t->sizes[nb], cols = t->sizes[nb + 1], batches = 1, idx[PTL_MAX_DIMS] = {0};
    /* past a corner every element stays or goes; i + k must not overflow (diagonal=2**63-1) */
    k = k > cols ? cols : k < -rows ? -rows : k;
    if (shape_on_device(t)) {
        return shape_triangle_device(t, k, lower);
    }
    int64_t isz = (int64_t)ptl_tensor_itemsize(t);
    int64_t sr = t->strides[nb] * isz, sc = t->strides[nb + 1] * isz;
    char *data = ptl_tensor_data(t);
    if (t->numel == 0) {
        return 0;
    }
    for (int d = 0; d < nb; d++) {
        batches *= t->sizes[d];
    }
    for (int64_t b = 0; b < batches; b++) {
        char *m = data;
        for (int d = 0; d < nb; d++) {
            m += idx[d] * t->strides[d] * isz;
        }
        for (int64_t i = 0; i < rows; i++) {
            /* the dropped columns: [i + k + 1, cols) for tril, [0, i + k) for triu */
            int64_t lo = lower ? i + k + 1 : 0, hi = lower ? cols : i + k;
            lo = lo < 0 ? 0 : lo > cols ? cols : lo;
            hi = hi < 0 ? 0 : hi > cols ? cols : hi;
            if (sc == isz && hi > lo) {   /* contiguous rows: one memset a row */
                memset(m + i * sr + lo * sc, 0, (size_t)((hi - lo) * isz));
                continue;
            }
            for (int64_t j = lo; j < hi; j++) {
                memset(m + i * sr + j * sc, 0, (size_t)isz);
            }
        }
        for (int d = nb - 1; d >= 0; d--) {
            if (++idx[d] < t->sizes[d]) {
                break;
            }
            idx[d] = 0;
        }
    }
    return 0;
}

/* tril/triu(Tensor self, int diagonal=0) and tril_/triu_: [*, m, n] -> [*, m, n], the
 * elements on and below (tril) / above (triu) the diagonal-th diagonal kept, others 0 */
static int
triangle_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *out;
    int lower = op->id == PTL_OP_tril || op->id == PTL_OP_tril_;
    if (self->dim < 2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: input tensor must have at least 2 dimensions",
                             lower ? "tril" : "triu");
    }
    if (op->schema.inplace) {
        return zero_triangle(self, s[1].u.i, lower) < 0 ? -1 : ptl_kernel_return_self(s);
    }
    if ((out = ptl_cast(self, self->dtype)) == NULL) {
        return -1;
    }
    if (zero_triangle(out, s[1].u.i, lower) < 0) {
        ptl_decref(out);
        return -1;
    }
    s[0] = ptl_iv_tensor(out);
    return 0;
}

/* ---- diagonals ---- */

/* The geometry of t.diagonal(offset, d1, d2) (d1 != d2 wrapped): the other dims in order,
 * then the diagonal.  Returns the view's dim; *off gets the storage offset. */
static int
diagonal_geometry(const PtlTensorImpl *t, int64_t offset, int64_t d1, int64_t d2,
                  int64_t *sizes, int64_t *strides, int64_t *off)
{
    int k = 0;
    int64_t len;
    *off = t->storage_offset;
    if (offset >= 0) {
        len = t->sizes[d1] < t->sizes[d2] - offset ? t->sizes[d1] : t->sizes[d2] - offset;
    }
    else {
        len = t->sizes[d1] + offset < t->sizes[d2] ? t->sizes[d1] + offset : t->sizes[d2];
    }
    len = len > 0 ? len : 0;
    if (len > 0) {
        *off += offset >= 0 ? offset * t->strides[d2] : -offset * t->strides[d1];
    }
    for (int d = 0; d < t->dim; d++) {
        if (d != d1 && d != d2) {
            sizes[k] = t->sizes[d];
            strides[k++] = t->strides[d];
        }
    }
    sizes[k] = len;
    strides[k++] = t->strides[d1] + t->strides[d2];
    return k;
}

/* Wraps d1 and d2 against dim and rejects equal ones (named as given); 0 or -1. */
static int
wrap_diag_dims(int64_t *d1, int64_t *d2, int dim)
{
    int64_t given1 = *d1, given2 = *d2;
    if (ptl_wrap_dim(d1, dim) < 0 || ptl_wrap_dim(d2, dim) < 0) {
        return -1;
    }
    if (*d1 == *d2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "diagonal dimensions cannot be identical %lld, %lld",
                             (long long)given1, (long long)given2);
    }
    return 0;
}

/* diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a):
 * [.., n1 @dim1, .., n2 @dim2, ..] -> [.. the other dims .., len], a view */
static int
diagonal_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *v;
    int64_t d1 = s[2].u.i, d2 = s[3].u.i, sizes[PTL_MAX_DIMS], strides[PTL_MAX_DIMS], off;
    if (wrap_diag_dims(&d1, &d2, self->dim) < 0) {
        return -1;
    }
    int dim = diagonal_geometry(self, s[1].u.i, d1, d2, sizes, strides, &off);
    if ((v = ptl_tensor_impl_view(self, dim, sizes, strides, off)) == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(v);
    return 0;
}

/* diag_embed(Tensor self, int offset=0, int dim1=-2, int dim2=-1) -> Tensor:
 * [*, n] -> [*, n + |offset| @dim1, n + |offset| @dim2] (zeros), self on the diagonal */
static int
diag_embed_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *out;
    int64_t offset = s[1].u.i, d1 = s[2].u.i, d2 = s[3].u.i;
    int64_t sizes[PTL_MAX_DIMS], dsizes[PTL_MAX_DIMS], dstrides[PTL_MAX_DIMS], off;
    int dim = self->dim + 1;
    Tables tb;
    if (dim > PTL_MAX_DIMS) {
        return ptl_error_set(PTL_ERR_RUNTIME, "pytorchlite supports at most %d dimensions",
                             PTL_MAX_DIMS);
    }
    if (wrap_diag_dims(&d1, &d2, dim) < 0) {
        return -1;
    }
    int64_t n = self->dim > 0 ? self->sizes[self->dim - 1] : 1;
    int64_t len = n + (offset >= 0 ? offset : -offset);
    for (int d = 0, k = 0; d < dim; d++) {
        sizes[d] = d == d1 || d == d2 ? len : self->sizes[k++];
    }
    if ((out = ptl_empty(dim, sizes, self->dtype, self->device)) == NULL) {
        return -1;
    }
    int vdim;
    if (ptl_on_device_path(self)) {
        /* on the device: zeros, then self copied into the diagonal's view (the copy and
         * fill kernels); the view has self's shape */
        PtlIValue zero = ptl_iv_int(0);
        PtlTensorImpl *view = NULL;
        vdim = diagonal_geometry(out, offset, d1, d2, dsizes, dstrides, &off);
        if (ptl_fill_scalar(out, &zero) < 0 ||
            (view = ptl_tensor_impl_view(out, vdim, dsizes, dstrides, off)) == NULL ||
            ptl_copy_into(view, self) < 0) {
            ptl_xdecref(view);
            ptl_decref(out);
            return -1;
        }
        ptl_decref(view);
        s[0] = ptl_iv_tensor(out);
        return 0;
    }
    memset(ptl_tensor_data(out), 0, (size_t)out->numel * ptl_tensor_itemsize(out));
    vdim = diagonal_geometry(out, offset, d1, d2, dsizes, dstrides, &off);
    if (out->numel > 0 && self->numel > 0) {
        if (tables_new(&tb, self->dim, self->sizes) < 0) {
            ptl_decref(out);
            return -1;
        }
        for (int d = 0; d < self->dim; d++) {
            table_identity(tb.tab[d], self, d);
        }
        shape_gather_copy(out->storage->data + off * (int64_t)ptl_tensor_itemsize(out),
                          dstrides, ptl_tensor_data(self), tb.tab, vdim, dsizes,
                          ptl_tensor_itemsize(self));
        tables_free(&tb);
    }
    s[0] = ptl_iv_tensor(out);
    return 0;
}

/* unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a):
 * [.., n @d, ..] -> [.., (n - size) / step + 1 @d, .., size], a view of sliding windows */
static int
unfold_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *v;
    int64_t d = s[1].u.i, size = s[2].u.i, step = s[3].u.i;
    int64_t sizes[PTL_MAX_DIMS], strides[PTL_MAX_DIMS];
    if (ptl_wrap_dim(&d, self->dim) < 0) {
        return -1;
    }
    int64_t n = self->dim > 0 ? self->sizes[d] : 1, st = self->dim > 0 ? self->strides[d] : 1;
    if (size > n) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "maximum size for tensor at dimension %lld is %lld but size is %lld",
                             (long long)d, (long long)n, (long long)size);
    }
    if (size < 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "size is %lld but must be >= 0", (long long)size);
    }
    if (step <= 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "step is %lld but must be > 0", (long long)step);
    }
    if (self->dim + 1 > PTL_MAX_DIMS) {
        return ptl_error_set(PTL_ERR_RUNTIME, "pytorchlite supports at most %d dimensions",
                             PTL_MAX_DIMS);
    }
    memcpy(sizes, self->sizes, sizeof(int64_t) * (size_t)self->dim);
    memcpy(strides, self->strides, sizeof(int64_t) * (size_t)self->dim);
    if (self->dim > 0) {
        sizes[d] = (n - size) / step + 1;
        strides[d] = step * st;
    }
    sizes[self->dim] = size;
    strides[self->dim] = st;
    if ((v = ptl_tensor_impl_view(self, self->dim + 1, sizes, strides,
                                  self->storage_offset)) == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(v);
    return 0;
}

/* unfold_backward(Tensor grad_in, int[] input_sizes, int dim, int size, int step) -> Tensor:
 * [.., windows @dim, .., size] -> input_sizes: every window's gradient added back at its
 * place (overlapping windows sum) */
static int
unfold_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *g = s[0].u.t, *out;
    int64_t nd = s[1].u.il.n, d = s[2].u.i, size = s[3].u.i, step = s[4].u.i;
    int64_t idx[PTL_MAX_DIMS] = {0}, want[PTL_MAX_DIMS];
    const int64_t *in = s[1].u.il.data;
    char b1[128], b2[128];
    if (nd >= PTL_MAX_DIMS) {
        return ptl_error_set(PTL_ERR_RUNTIME, "unfold_backward: input_sizes has %lld "
                             "dimensions, more than %d", (long long)nd, PTL_MAX_DIMS - 1);
    }
    if (ptl_wrap_dim(&d, nd) < 0) {
        return -1;
    }
    /* grad_in must be unfold's output: input_sizes with dim d cut into windows, then size
     * (a 0-dim input gives [size]) */
    int64_t in_d = nd > 0 ? in[d] : 1, want_dim = nd > 0 ? nd + 1 : 1;
    if (step <= 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "step is %lld but must be > 0", (long long)step);
    }
    if (size < 0 || size > in_d) {
        return ptl_error_set(PTL_ERR_RUNTIME, "maximum size for tensor at dimension %lld is "
                             "%lld but size is %lld", (long long)d, (long long)in_d,
                             (long long)size);
    }
    memcpy(want, in, sizeof(int64_t) * (size_t)nd);
    want[d] = (in_d - size) / step + 1;
    want[want_dim - 1] = size;
    if (g->dim != want_dim || memcmp(g->sizes, want, sizeof(int64_t) * (size_t)want_dim) != 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "unfold_backward: expected grad_in of shape %s "
                             "but got %s", ptl_format_sizes(b1, sizeof(b1), want_dim, want),
                             ptl_format_sizes(b2, sizeof(b2), g->dim, g->sizes));
    }
    if (ptl_on_device_path(g)) {
        return set_result(s, shape_unfold_backward_device(g, (int)nd, in, d, size, step));
    }
    if ((out = ptl_empty((int)nd, in, g->dtype, g->device)) == NULL) {
        return -1;
    }
    memset(ptl_tensor_data(out), 0, (size_t)out->numel * ptl_tensor_itemsize(out));
    char *o = ptl_tensor_data(out);
    const char *gp = ptl_tensor_data(g);
    size_t isz = ptl_tensor_itemsize(g);
    for (int64_t e = 0; e < g->numel; e++) {
        int64_t goff = 0, ooff = 0;
        for (int k = 0; k < g->dim; k++) {
            goff += idx[k] * g->strides[k];
        }
        for (int k = 0; k < nd; k++) {
            int64_t i = k == d ? idx[k] * step + idx[g->dim - 1] : idx[k];
            ooff += i * out->strides[k];
        }
        double v = ptl_load_double(gp + goff * (int64_t)isz, g->dtype);
        char *p = o + ooff * (int64_t)isz;
        ptl_store_double(p, out->dtype, ptl_load_double(p, out->dtype) + v);
        for (int k = g->dim - 1; k >= 0; k--) {
            if (++idx[k] < g->sizes[k]) {
                break;
            }
            idx[k] = 0;
        }
    }
    s[0] = ptl_iv_tensor(out);
    return 0;
}

/* trace(Tensor self) -> Tensor: [m, n] -> [], the sum of the main diagonal (integers and
 * bools sum to int64) */
static int
trace_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *out;
    if (self->dim != 2) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "trace: expected a matrix, but got tensor with dim %d", self->dim);
    }
    if (self->dtype == PTL_DTYPE_BOOL) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"trace\" not implemented for 'Bool'");
    }
    if (ptl_on_device_path(self)) {
        /* on the device: the sum kernel over the diagonal's view (integers sum to int64) */
        PtlIValue v[1] = {ptl_iv_tensor(self)};
        PtlTensorImpl *diag = ptl_call_k(PTL_OP_diagonal, 1, v);
        if (diag == NULL) {
            return -1;
        }
        v[0] = ptl_iv_tensor(diag);
        out = ptl_call_k(PTL_OP_sum, 1, v);
        ptl_decref(diag);
        return set_result(s, out);
    }
    int64_t n = self->sizes[0] < self->sizes[1] ? self->sizes[0] : self->sizes[1];
    int64_t step = (self->strides[0] + self->strides[1]) * (int64_t)ptl_tensor_itemsize(self);
    const char *p = ptl_tensor_data(self);
    if (ptl_dtype_is_floating(self->dtype)) {
        double acc = 0.0;
        for (int64_t i = 0; i < n; i++) {
            acc += ptl_load_double(p + i * step, self->dtype);
        }
        out = ptl_scalar_tensor(acc, self->dtype, self->device);
    }
    else {
        uint64_t acc = 0;
        for (int64_t i = 0; i < n; i++) {
            acc += (uint64_t)ptl_load_int(p + i * step, self->dtype);
        }
        if ((out = ptl_empty(0, NULL, PTL_DTYPE_INT64, self->device)) != NULL) {
            *(int64_t *)ptl_tensor_data(out) = (int64_t)acc;
        }
    }
    return set_result(s, out);
}

/* ---- linalg_cross ---- */

/* Stores the integer v (wrapping like C's unsigned arithmetic) as dtype dt at p. */
static void
store_int(char *p, PtlDtype dt, uint64_t v)
{
    switch (dt) {
    case PTL_DTYPE_UINT8: *(uint8_t *)p = (uint8_t)v; break;
    case PTL_DTYPE_INT8: *(int8_t *)p = (int8_t)v; break;
    case PTL_DTYPE_INT16: *(int16_t *)p = (int16_t)v; break;
    case PTL_DTYPE_INT32: *(int32_t *)p = (int32_t)v; break;
    default: *(int64_t *)p = (int64_t)v; break;
    }
}

/* One complex 3-vector cross product (no conjugation, as PyTorch's), in complex128 with
 * complex_math.h's textbook products; complex64 values are widened and rounded back. */
static void
cross3_complex(char *o, int64_t so, const char *a, int64_t sa, const char *b, int64_t sb,
               PtlDtype dt)
{
    ptl_complex128 x[3], y[3], r[3];
    for (int i = 0; i < 3; i++) {
        if (dt == PTL_DTYPE_COMPLEX64) {
            x[i] = *(const ptl_complex64 *)(a + i * sa);
            y[i] = *(const ptl_complex64 *)(b + i * sb);
        }
        else {
            x[i] = *(const ptl_complex128 *)(a + i * sa);
            y[i] = *(const ptl_complex128 *)(b + i * sb);
        }
    }
    r[0] = ptl_cmul(x[1], y[2]) - ptl_cmul(x[2], y[1]);
    r[1] = ptl_cmul(x[2], y[0]) - ptl_cmul(x[0], y[2]);
    r[2] = ptl_cmul(x[0], y[1]) - ptl_cmul(x[1], y[0]);
    for (int i = 0; i < 3; i++) {
        if (dt == PTL_DTYPE_COMPLEX64) {
            *(ptl_complex64 *)(o + i * so) = (ptl_complex64)r[i];
        }
        else {
            *(ptl_complex128 *)(o + i * so) = r[i];
        }
    }
}

/* One 3-vector cross product: a, b, o at byte strides sa, sb, so along the cross dim. */
static void
cross3(char *o, int64_t so, const char *a, int64_t sa, const char *b, int64_t sb, PtlDtype dt)
{
    if (ptl_dtype_is_complex(dt)) {
        cross3_complex(o, so, a, sa, b, sb, dt);
        return;
    }
    if (ptl_dtype_is_floating(dt)) {
        double x[3], y[3];
        for (int i = 0; i < 3; i++) {
            x[i] = ptl_load_double(a + i * sa, dt);
            y[i] = ptl_load_double(b + i * sb, dt);
        }
        ptl_store_double(o, dt, x[1] * y[2] - x[2] * y[1]);
        ptl_store_double(o + so, dt, x[2] * y[0] - x[0] * y[2]);
        ptl_store_double(o + 2 * so, dt, x[0] * y[1] - x[1] * y[0]);
        return;
    }
    uint64_t x[3], y[3];
    for (int i = 0; i < 3; i++) {
        x[i] = (uint64_t)ptl_load_int(a + i * sa, dt);
        y[i] = (uint64_t)ptl_load_int(b + i * sb, dt);
    }
    store_int(o, dt, x[1] * y[2] - x[2] * y[1]);
    store_int(o + so, dt, x[2] * y[0] - x[0] * y[2]);
    store_int(o + 2 * so, dt, x[0] * y[1] - x[1] * y[0]);
}

/* Strides (elements) of t broadcast to `sizes` (dim equal to t's): 0 where t has size 1. */
static void
broadcast_strides(const PtlTensorImpl *t, int dim, const int64_t *sizes, int64_t *st)
{
    for (int d = 0; d < dim; d++) {
        st[d] = t->sizes[d] == sizes[d] ? t->strides[d] : 0;
    }
}

/* linalg_cross(Tensor self, Tensor other, *, int dim=-1) -> Tensor: [*, 3 @dim, *] x2 ->
 * the broadcast shape, the cross product along dim */
static int
linalg_cross_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *a = s[0].u.t, *b = s[1].u.t, *out;
    int64_t d = s[2].u.i, sizes[PTL_MAX_DIMS], sa[PTL_MAX_DIMS], sb[PTL_MAX_DIMS];
    int64_t idx[PTL_MAX_DIMS] = {0};
    int dim;
    if (a->dim != b->dim) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "linalg.cross: inputs must have the same number of dimensions.");
    }
    if (ptl_wrap_dim(&d, a->dim) < 0) {
        return -1;
    }
    if (a->dim == 0 || a->sizes[d] != 3 || b->sizes[d] != 3) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "linalg.cross: inputs dimension %lld must have length 3. Got %lld "
                             "and %lld",
                             (long long)s[2].u.i, (long long)(a->dim ? a->sizes[d] : 1),
                             (long long)(b->dim ? b->sizes[d] : 1));
    }
    if (a->dtype != b->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME, "expected scalar type %s but found %s",
                             ptl_dtype_legacy_name(a->dtype), ptl_dtype_legacy_name(b->dtype));
    }
    if (a->dtype == PTL_DTYPE_BOOL) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"cross\" not implemented for 'Bool'");
    }
    if (ptl_broadcast_shapes(a->dim, a->sizes, b->dim, b->sizes, &dim, sizes) < 0) {
        return -1;
    }
    if (ptl_on_device_path(a) || ptl_on_device_path(b)) {
        return set_result(s, shape_cross_device(a, b, d));
    }
    if ((out = ptl_empty(dim, sizes, a->dtype, a->device)) == NULL) {
        return -1;
    }
    broadcast_strides(a, dim, sizes, sa);
    broadcast_strides(b, dim, sizes, sb);
    int64_t isz = (int64_t)ptl_tensor_itemsize(out), count = out->numel / 3;
    for (int64_t e = 0; e < count; e++) {
        int64_t oa = 0, ob = 0, oo = 0;
        for (int k = 0; k < dim; k++) {
            oa += idx[k] * sa[k];
            ob += idx[k] * sb[k];
            oo += idx[k] * out->strides[k];
        }
        cross3(ptl_tensor_data(out) + oo * isz, out->strides[d] * isz,
               ptl_tensor_data(a) + oa * isz, sa[d] * isz, ptl_tensor_data(b) + ob * isz,
               sb[d] * isz, a->dtype);
        for (int k = dim - 1; k >= 0; k--) {
            if (k == d) {
                continue;
            }
            if (++idx[k] < sizes[k]) {
                break;
            }
            idx[k] = 0;
        }
    }
    s[0] = ptl_iv_tensor(out);
    return 0;
}

/* ---- composites: compositions of dispatcher ops (autograd flows through them) ---- */

/* fliplr(Tensor self) / flipud(Tensor self): flip along dim 1 / dim 0 */
static int
flip_lr_ud_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int lr = op->id == PTL_OP_fliplr;
    int64_t d = lr ? 1 : 0;
    if (self->dim < (lr ? 2 : 1)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Input must be >= %d-d.", lr ? 2 : 1);
    }
    PtlIValue a[2] = {s[0], ptl_iv_intlist(&d, 1)};
    return set_result(s, ptl_call_k(PTL_OP_flip, 2, a));
}

/* tile(Tensor self, int[] dims): repeat with dims padded by leading ones to self's rank */
static int
tile_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int64_t n = s[1].u.il.n, reps[PTL_MAX_DIMS];
    if (n >= self->dim) {
        return set_result(s, ptl_call_k(PTL_OP_repeat, 2, s));
    }
    int lead = self->dim - (int)n;
    for (int d = 0; d < self->dim; d++) {
        reps[d] = d < lead ? 1 : s[1].u.il.data[d - lead];
    }
    PtlIValue a[2] = {s[0], ptl_iv_intlist(reps, self->dim)};
    return set_result(s, ptl_call_k(PTL_OP_repeat, 2, a));
}

/* repeat_interleave.self_Tensor / self_int (self, repeats, int? dim, *, int? output_size):
 * self.index_select(dim, repeat_interleave(repeats)) (self flattened when dim is None) */
static int
repeat_interleave_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *input = NULL, *rep = NULL, *idx = NULL, *out = NULL;
    int64_t d = 0, one = 1;
    if (s[2].tag == PTL_IV_INT) {
        d = s[2].u.i;
        input = self;
        ptl_incref(input);
        if (ptl_wrap_dim(&d, self->dim) < 0) {
            goto error;
        }
    }
    else {
        int64_t m1 = -1;
        PtlIValue a[2] = {s[0], ptl_iv_intlist(&m1, 1)};
        if ((input = ptl_call_k(PTL_OP_reshape, 2, a)) == NULL) {
            goto error;
        }
    }
    int64_t n = input->dim > 0 ? input->sizes[d] : 1;
    if (op->id == PTL_OP_repeat_interleave_self_int) {
        PTL_CHECK(s[1].u.i >= 0, PTL_ERR_RUNTIME, "Repeats must be non-negative");
        PtlIValue v = ptl_iv_int(s[1].u.i);
        if ((rep = ptl_empty(1, &n, PTL_DTYPE_INT64, self->device)) == NULL ||
            ptl_fill_scalar(rep, &v) < 0) {
            goto error;
        }
    }
    else {
        PtlTensorImpl *r = s[1].u.t;
        PTL_CHECK(r->dim <= 1, PTL_ERR_RUNTIME, "repeats must be 0-dim or 1-dim tensor");
        if (r->numel == 1) {
            PtlIValue a[2] = {s[1], ptl_iv_intlist(&one, 1)}, b[2];
            PtlTensorImpl *r1 = ptl_call_k(PTL_OP_reshape, 2, a);
            if (r1 == NULL) {
                goto error;
            }
            b[0] = ptl_iv_tensor(r1);
            b[1] = ptl_iv_intlist(&n, 1);
            rep = ptl_call_k(PTL_OP_expand, 2, b);
            ptl_decref(r1);
            if (rep == NULL) {
                goto error;
            }
        }
        else {
            PTL_CHECK(r->dim == 1 && r->sizes[0] == n, PTL_ERR_RUNTIME,
                      "repeats must have the same size as input along dim, but got "
                      "repeats.size(0) = %lld and input.size(%lld) = %lld",
                      (long long)(r->dim ? r->sizes[0] : 1), (long long)d, (long long)n);
            rep = r;
            ptl_incref(rep);
        }
    }
    PtlIValue ri[2] = {ptl_iv_tensor(rep), s[3]};
    if ((idx = ptl_call_k(PTL_OP_repeat_interleave_Tensor, 2, ri)) == NULL) {
        goto error;
    }
    PtlIValue is[3] = {ptl_iv_tensor(input), ptl_iv_int(d), ptl_iv_tensor(idx)};
    out = ptl_call_k(PTL_OP_index_select, 3, is);
error:
    ptl_xdecref(input);
    ptl_xdecref(rep);
    ptl_xdecref(idx);
    return set_result(s, out);
}

/* diag(Tensor self, int diagonal=0): a 1-D self becomes the diagonal of a square matrix
 * (diag_embed), a 2-D self gives a copy of its diagonal */
static int
diag_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *v, *out;
    if (self->dim != 1 && self->dim != 2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "diag(): Supports 1D or 2D tensors. Got %dD",
                             self->dim);
    }
    PtlIValue a[4] = {s[0], s[1], ptl_iv_int(0), ptl_iv_int(1)};
    if (self->dim == 1) {
        return set_result(s, ptl_call_k(PTL_OP_diag_embed, 4, a));
    }
    if ((v = ptl_call_k(PTL_OP_diagonal, 4, a)) == NULL) {
        return -1;
    }
    PtlIValue c[1] = {ptl_iv_tensor(v)};
    out = ptl_call_k(PTL_OP_clone, 1, c);
    ptl_decref(v);
    return set_result(s, out);
}

/* cross(Tensor self, Tensor other, int? dim=None): linalg_cross; without dim, the first
 * dimension of size 3 of the broadcast shape (deprecated, with PyTorch's warning) */
static int
cross_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *a = s[0].u.t, *b = s[1].u.t;
    int64_t d = -1, sizes[PTL_MAX_DIMS];
    int dim;
    if (s[2].tag == PTL_IV_INT) {
        d = s[2].u.i;
    }
    else {
        if (ptl_broadcast_shapes(a->dim, a->sizes, b->dim, b->sizes, &dim, sizes) < 0) {
            return -1;
        }
        for (int k = dim - 1; k >= 0; k--) {
            d = sizes[k] == 3 ? k : d;
        }
        if (d < 0) {
            return ptl_error_set(PTL_ERR_RUNTIME, "no dimension of size 3 in input");
        }
        ptl_warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease "
                 "either pass the dim explicitly or simply use torch.linalg.cross.\nThe "
                 "default value of dim will change to agree with that of linalg.cross in a "
                 "future release.");
    }
    PtlIValue c[3] = {s[0], s[1], ptl_iv_int(d)};
    return set_result(s, ptl_call_k(PTL_OP_linalg_cross, 3, c));
}

/* kron(Tensor self, Tensor other): [a0..ak] x [b0..bk] -> [a0*b0, .., ak*bk] (the shorter
 * shape padded with leading ones): self viewed [a0, 1, a1, 1, ..] times other viewed
 * [1, b0, 1, b1, ..], merged pairwise */
static int
kron_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *a = s[0].u.t, *b = s[1].u.t, *ra = NULL, *rb = NULL, *prod = NULL;
    PtlTensorImpl *out = NULL;
    int nd = a->dim > b->dim ? a->dim : b->dim;
    int64_t sa[PTL_MAX_DIMS], sb[PTL_MAX_DIMS], so[PTL_MAX_DIMS];
    if (2 * nd > PTL_MAX_DIMS) {
        return ptl_error_set(PTL_ERR_RUNTIME, "kron: pytorchlite supports inputs of at most %d "
                                              "dimensions", PTL_MAX_DIMS / 2);
    }
    for (int d = 0; d < nd; d++) {
        int64_t x = d < nd - a->dim ? 1 : a->sizes[d - (nd - a->dim)];
        int64_t y = d < nd - b->dim ? 1 : b->sizes[d - (nd - b->dim)];
        sa[2 * d] = x;
        sa[2 * d + 1] = 1;
        sb[2 * d] = 1;
        sb[2 * d + 1] = y;
        so[d] = x * y;
    }
    PtlIValue x[2] = {s[0], ptl_iv_intlist(sa, 2 * nd)};
    PtlIValue y[2] = {s[1], ptl_iv_intlist(sb, 2 * nd)};
    if ((ra = ptl_call_k(PTL_OP_reshape, 2, x)) != NULL &&
        (rb = ptl_call_k(PTL_OP_reshape, 2, y)) != NULL) {
        PtlIValue m[2] = {ptl_iv_tensor(ra), ptl_iv_tensor(rb)};
        prod = ptl_call_k(PTL_OP_mul_Tensor, 2, m);
    }
    if (prod != NULL) {
        PtlIValue z[2] = {ptl_iv_tensor(prod), ptl_iv_intlist(so, nd)};
        out = ptl_call_k(PTL_OP_reshape, 2, z);
    }
    ptl_xdecref(ra);
    ptl_xdecref(rb);
    ptl_xdecref(prod);
    return set_result(s, out);
}

/* diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None): the
 * n-th forward difference along dim of cat([prepend, self, append]) (xor for bool) */
static int
diff_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *cur = NULL, *hi = NULL, *lo = NULL, *next;
    PtlTensorImpl *parts[3];
    int64_t n = s[1].u.i, d = s[2].u.i;
    int np = 0;
    if (self->dim == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "diff expects input to be at least "
                                              "one-dimensional");
    }
    if (n < 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "order must be non-negative but got %lld",
                             (long long)n);
    }
    for (int k = 3; k <= 4; k++) {
        if (s[k].tag == PTL_IV_TENSOR && s[k].u.t->dim != self->dim) {
            return ptl_error_set(PTL_ERR_RUNTIME, "diff expects prepend or append to be the "
                                                  "same dimension as input");
        }
    }
    if (ptl_wrap_dim(&d, self->dim) < 0) {
        return -1;
    }
    if (s[3].tag == PTL_IV_TENSOR) {
        parts[np++] = s[3].u.t;
    }
    parts[np++] = self;
    if (s[4].tag == PTL_IV_TENSOR) {
        parts[np++] = s[4].u.t;
    }
    if (np > 1) {
        PtlIValue c[2] = {ptl_iv_tensorlist(parts, np), ptl_iv_int(d)};
        cur = ptl_call_k(PTL_OP_cat, 2, c);
    }
    else {
        PtlIValue c[1] = {s[0]};
        cur = ptl_call_k(PTL_OP_clone, 1, c);
    }
    for (int64_t i = 0; cur != NULL && i < n && cur->sizes[d] > 0; i++) {
        int64_t len = cur->sizes[d] - 1;
        PtlIValue h[4] = {ptl_iv_tensor(cur), ptl_iv_int(d), ptl_iv_int(1), ptl_iv_int(len)};
        PtlIValue l[4] = {ptl_iv_tensor(cur), ptl_iv_int(d), ptl_iv_int(0), ptl_iv_int(len)};
        next = NULL;
        if ((hi = ptl_call_k(PTL_OP_narrow, 4, h)) != NULL &&
            (lo = ptl_call_k(PTL_OP_narrow, 4, l)) != NULL) {
            PtlIValue p[2] = {ptl_iv_tensor(hi), ptl_iv_tensor(lo)};
            next = ptl_call_k(cur->dtype == PTL_DTYPE_BOOL ? PTL_OP_logical_xor : PTL_OP_sub_Tensor, 2,
                          p);
        }
        PTL_CLEAR(hi);
        PTL_CLEAR(lo);
        ptl_decref(cur);
        cur = next;
    }
    return set_result(s, cur);
}

/* broadcast_tensors(Tensor[] tensors) -> Tensor[]: every tensor expanded to the common
 * broadcast shape */
static int
broadcast_tensors_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl **in = s[0].u.tl.data, **ts;
    int64_t n = s[0].u.tl.n, sizes[PTL_MAX_DIMS];
    int dim = 0;
    for (int64_t i = 0; i < n; i++) {
        if (ptl_broadcast_shapes(dim, sizes, in[i]->dim, in[i]->sizes, &dim, sizes) < 0) {
            return -1;
        }
    }
    if ((ts = ptl_tensorlist_new(n)) == NULL) {
        return -1;
    }
    int failed = 0;
    for (int64_t i = 0; i < n && !failed; i++) {
        PtlIValue a[2] = {ptl_iv_tensor(in[i]), ptl_iv_intlist(sizes, dim)};
        failed = (ts[i] = ptl_call_k(PTL_OP_expand, 2, a)) == NULL;
    }
    return ptl_set_tensorlist(s, ts, n, failed);
}

/* meshgrid.indexing(Tensor[] tensors, *, str indexing) / meshgrid(Tensor[] tensors):
 * n 0-D or 1-D tensors of sizes k0..kn -> n tensors of shape [k0, .., kn] ('ij'); 'xy' makes
 * the grids of the first two inputs swapped: shape [k1, k0, k2, ..] */
static int
meshgrid_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl **in = s[0].u.tl.data, **ts;
    int64_t n = s[0].u.tl.n, sizes[PTL_MAX_DIMS];
    const char *indexing = op->id == PTL_OP_meshgrid_indexing ? s[1].u.s : "ij";
    int xy = strcmp(indexing, "xy") == 0 && n >= 2;
    if (n == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "meshgrid expects a non-empty TensorList");
    }
    if (strcmp(indexing, "xy") != 0 && strcmp(indexing, "ij") != 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "torch.meshgrid: indexing must be one of \"xy\" or "
                                              "\"ij\", but received: %s", indexing);
    }
    if (n > PTL_MAX_DIMS) {
        return ptl_error_set(PTL_ERR_RUNTIME, "pytorchlite supports at most %d dimensions",
                             PTL_MAX_DIMS);
    }
    for (int64_t i = 0; i < n; i++) {
        if (in[i]->dim > 1) {
            return ptl_error_set(PTL_ERR_RUNTIME, "torch.meshgrid: Expected 0D or 1D tensor in "
                                                  "the tensor list but got a %dD tensor",
                                 in[i]->dim);
        }
        if (in[i]->dtype != in[0]->dtype || !ptl_device_equal(in[i]->device, in[0]->device)) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "meshgrid expects all tensors to have the same %s",
                                 in[i]->dtype != in[0]->dtype ? "dtype" : "device");
        }
    }
    /* 'xy' is 'ij' of the first two inputs swapped, its first two grids swapped back */
    for (int64_t i = 0; i < n; i++) {
        int64_t src = xy && i < 2 ? 1 - i : i;
        sizes[i] = in[src]->numel;
    }
    if ((ts = ptl_tensorlist_new(n)) == NULL) {
        return -1;
    }
    int failed = 0;
    for (int64_t i = 0; i < n && !failed; i++) {
        int64_t src = xy && i < 2 ? 1 - i : i, shape[PTL_MAX_DIMS];
        PtlTensorImpl *v, *e;
        for (int64_t k = 0; k < n; k++) {
            shape[k] = k == i ? -1 : 1;
        }
        PtlIValue a[2] = {ptl_iv_tensor(in[src]), ptl_iv_intlist(shape, n)};
        if ((v = ptl_call_k(PTL_OP_view, 2, a)) == NULL) {
            failed = 1;
            break;
        }
        PtlIValue b[2] = {ptl_iv_tensor(v), ptl_iv_intlist(sizes, n)};
        e = ptl_call_k(PTL_OP_expand, 2, b);
        ptl_decref(v);
        failed = (ts[src] = e) == NULL;
    }
    return ptl_set_tensorlist(s, ts, n, failed);
}

/* tensor_split.sections / .indices / .tensor_indices_or_sections (Tensor(a -> *) self, ..,
 * int dim=0) -> Tensor(a)[]: views of self along dim, `sections` nearly equal pieces (the
 * first size % sections one longer) or the pieces between the indices (slice semantics) */
static int
tensor_split_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, **ts;
    int64_t d = s[2].u.i, sections = 0, nidx = 0, *idx = NULL, one_idx;
    int by_sections = op->id == PTL_OP_tensor_split_sections;
    if (self->dim == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "tensor_split expected at least a 1-dimensional "
                                              "tensor, but got a tensor with 0 dims");
    }
    if (op->id == PTL_OP_tensor_split_tensor_indices_or_sections) {
        PtlTensorImpl *t = s[1].u.t;
        if (t->dtype != PTL_DTYPE_INT64) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "tensor_split expected tensor_indices_or_sections to have dtype "
                                 "of long, but got %s",
                                 ptl_dtype_legacy_name(t->dtype));
        }
        if (t->dim > 1) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "tensor_split expected tensor_indices_or_sections to be a "
                                 "zero-dimensional or one-dimensional tensor, but got a tensor "
                                 "with %d dims",
                                 t->dim);
        }
        if (ptl_tensor_is_meta(t)) {   /* its values decide the outputs' shapes */
            return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED,
                                 "Cannot copy out of meta tensor; no data!");
        }
        by_sections = t->dim == 0;
        if (by_sections) {
            sections = *(const int64_t *)ptl_tensor_data(t);
        }
        else {
            PtlTensorImpl *c = ptl_contiguous(t);
            if (c == NULL) {
                return -1;
            }
            nidx = c->numel;
            if ((idx = malloc(sizeof(int64_t) * (size_t)(nidx > 0 ? nidx : 1))) == NULL) {
                ptl_decref(c);
                return ptl_error_set(PTL_ERR_MEMORY, "out of memory");
            }
            memcpy(idx, ptl_tensor_data(c), sizeof(int64_t) * (size_t)nidx);
            ptl_decref(c);
        }
    }
    else if (by_sections) {
        sections = s[1].u.i;
    }
    else {
        nidx = s[1].u.il.n;
        if ((idx = malloc(sizeof(int64_t) * (size_t)(nidx > 0 ? nidx : 1))) == NULL) {
            return ptl_error_set(PTL_ERR_MEMORY, "out of memory");
        }
        memcpy(idx, s[1].u.il.data, sizeof(int64_t) * (size_t)nidx);
    }
    if (by_sections && sections <= 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "number of sections must be larger than 0, got %lld",
                             (long long)sections);
    }
    if (ptl_wrap_dim(&d, self->dim) < 0) {
        free(idx);
        return -1;
    }
    int64_t n = by_sections ? sections : nidx + 1, size = self->sizes[d];
    if ((ts = ptl_tensorlist_new(n)) == NULL) {
        free(idx);
        return -1;
    }
    int failed = 0;
    for (int64_t i = 0, start = 0; i < n && !failed; i++) {
        PtlIValue a[5] = {ptl_iv_tensor(self), ptl_iv_int(d), ptl_iv_int(0), ptl_iv_none(),
                          ptl_iv_int(1)};
        if (by_sections) {
            int64_t len = size / sections + (i < size % sections ? 1 : 0);
            a[2] = ptl_iv_int(start);
            a[3] = ptl_iv_int(start + len);
            start += len;
        }
        else {
            a[2] = ptl_iv_int(i == 0 ? 0 : idx[i - 1]);
            one_idx = i < nidx ? idx[i] : 0;
            a[3] = i < nidx ? ptl_iv_int(one_idx) : ptl_iv_none();
        }
        failed = (ts[i] = ptl_call_k(PTL_OP_slice_Tensor, 5, a)) == NULL;
    }
    free(idx);
    return ptl_set_tensorlist(s, ts, n, failed);
}

static const PtlKernelReg shape_cpu_kernels[] = {
    {PTL_OP_flip, PTL_KEY_CPU, flip_cpu},
    {PTL_OP_roll, PTL_KEY_CPU, roll_cpu},
    {PTL_OP_rot90, PTL_KEY_CPU, rot90_cpu},
    {PTL_OP_repeat, PTL_KEY_CPU, repeat_cpu},
    {PTL_OP_tril, PTL_KEY_CPU, triangle_cpu},
    {PTL_OP_tril_, PTL_KEY_CPU, triangle_cpu},
    {PTL_OP_triu, PTL_KEY_CPU, triangle_cpu},
    {PTL_OP_triu_, PTL_KEY_CPU, triangle_cpu},
    {PTL_OP_diagonal, PTL_KEY_CPU, diagonal_cpu},
    {PTL_OP_diagonal, PTL_KEY_CUDA, diagonal_cpu},   /* views: no data touched */
    {PTL_OP_diag_embed, PTL_KEY_CPU, diag_embed_cpu},
    {PTL_OP_unfold, PTL_KEY_CPU, unfold_cpu},
    {PTL_OP_unfold, PTL_KEY_CUDA, unfold_cpu},
    {PTL_OP_unfold_backward, PTL_KEY_CPU, unfold_backward_cpu},
    {PTL_OP_trace, PTL_KEY_CPU, trace_cpu},
    {PTL_OP_linalg_cross, PTL_KEY_CPU, linalg_cross_cpu},
    {PTL_OP_fliplr, PTL_KEY_COMPOSITE_IMPLICIT, flip_lr_ud_composite},
    {PTL_OP_flipud, PTL_KEY_COMPOSITE_IMPLICIT, flip_lr_ud_composite},
    {PTL_OP_tile, PTL_KEY_COMPOSITE_IMPLICIT, tile_composite},
    {PTL_OP_repeat_interleave_self_Tensor, PTL_KEY_COMPOSITE_IMPLICIT,
     repeat_interleave_composite},
    {PTL_OP_repeat_interleave_self_int, PTL_KEY_COMPOSITE_IMPLICIT, repeat_interleave_composite},
    {PTL_OP_diag, PTL_KEY_COMPOSITE_IMPLICIT, diag_composite},
    {PTL_OP_cross, PTL_KEY_COMPOSITE_IMPLICIT, cross_composite},
    {PTL_OP_kron, PTL_KEY_COMPOSITE_IMPLICIT, kron_composite},
    {PTL_OP_diff, PTL_KEY_COMPOSITE_IMPLICIT, diff_composite},
    {PTL_OP_broadcast_tensors, PTL_KEY_COMPOSITE_IMPLICIT, broadcast_tensors_composite},
    {PTL_OP_meshgrid_indexing, PTL_KEY_COMPOSITE_IMPLICIT, meshgrid_composite},
    {PTL_OP_meshgrid, PTL_KEY_COMPOSITE_IMPLICIT, meshgrid_composite},
    {PTL_OP_tensor_split_sections, PTL_KEY_COMPOSITE_IMPLICIT, tensor_split_composite},
    {PTL_OP_tensor_split_indices, PTL_KEY_COMPOSITE_IMPLICIT, tensor_split_composite},
    {PTL_OP_tensor_split_tensor_indices_or_sections, PTL_KEY_COMPOSITE_IMPLICIT,
     tensor_split_composite},
};
PTL_DEFINE_REGISTER(shape_cpu_kernels)
