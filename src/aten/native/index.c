/* index.c -- advanced indexing and the index family: index, index_put_, index_select,
 * index_add_, index_copy_, index_fill_, masked_*, nonzero, argwhere, where(condition);
 * gather and scatter* are in scatter_gather.c, take and take_along_dim in take.c.  Mirrors
 * ATen/native/TensorAdvancedIndexing.cpp and ATen/native/IndexingUtils.h.
 *
 * Note [Advanced indexing]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * index(self, indices) takes one optional index tensor per leading dimension of self.  Bool
 * (and uint8) masks become their nonzero() columns, one long index per masked dimension;
 * the defined indices broadcast to one shape B.  When the indexed dimensions are adjacent, B
 * replaces them in place; when None separates them, B goes first, followed by every
 * unindexed dimension in order (NumPy's rule).  Every kernel here reduces to one walk:
 *     out[before, b, after] = self[off_before + off_index[b] + off_after]
 * with the element offsets of the three parts computed once (AdvIndex), so any layout of
 * self, of the indices and of the values works without copies.  index_select, index_add_,
 * index_copy_ and index_fill_ are the same walk with [None] * dim + [index]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/error.h"
#include "../resize_output.h"
#include "device_compose.h"
#include "device_index.h"
#include "device_reduce.h"
#include "index_complex.h"
#include "index_flat.h"
#include "index_impl.h"
#include "native.h"

int (*ptl_device_adv_index_hook)(const PtlDeviceAdvIndexArgs *a);

/* Strides (elements) of t broadcast to (dim, sizes), aligned right; t must fit. */
static void
expanded_strides(const PtlTensorImpl *t, int dim, const int64_t *sizes, int64_t *strides)
{
    for (int d = 0; d < dim; d++) {
        int td = d - (dim - t->dim);
        strides[d] = (td < 0 || t->sizes[td] != sizes[d]) ? 0 : t->strides[td];
    }
}

/* Broadcasts shape (dim, sizes) into (*bdim, bshape); 0, or -1 when they clash. */
static int
broadcast_into(int *bdim, int64_t *bshape, int dim, const int64_t *sizes)
{
    int nd = dim > *bdim ? dim : *bdim;
    int64_t out[PTL_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        int a = d - (nd - *bdim), b = d - (nd - dim);
        int64_t sa = a >= 0 ? bshape[a] : 1, sb = b >= 0 ? sizes[b] : 1;
        if (sa != sb && sa != 1 && sb != 1) {
            return -1;
        }
        out[d] = sa == 1 ? sb : sa;
    }
    memcpy(bshape, out, sizeof(int64_t) * (size_t)nd);
    *bdim = nd;
    return 0;
}

/* For a and b whose shapes clash (broadcast_into failed): -1 with PyTorch's error, which
 * names the first clashing dimension from the right, a's size then b's (ATen's infer_size). */
static int
broadcast_error(const PtlTensorImpl *a, const PtlTensorImpl *b)
{
    int nd;
    int64_t shape[PTL_MAX_DIMS];
    ptl_broadcast_shapes(a->dim, a->sizes, b->dim, b->sizes, &nd, shape);
    return -1;
}

/* ---- nonzero ---- */

/* Note [Mask rows]
 * ~~~~~~~~~~~~~~~~
 * nonzero and a boolean mask in an index visit the mask's elements in row-major order, a
 * row of its last dim (at most MASK_CHUNK elements) at a time.  The row becomes one byte per
 * element, 0 or not (a contiguous one-byte row is used as it is); a first pass counts the
 * set bytes and sizes the output, a second writes one entry per element at slot k and
 * advances k by the element's byte, without a branch on the (random) mask.  Writing stops
 * once k reaches the count, so the unconditional write never lands past the output.  An
 * entry is the element's coordinates (nonzero) or its element offset in the indexed tensor
 * (Note [Advanced indexing]), computed from the row's start.  1024 x 1024 float32 at half
 * density, one thread: nonzero 16.8 ms -> 1.0-3.2 ms; x[x > 0] 19 ms -> 1.2-3.3 ms. */
#define MASK_CHUNK 4096

#define ROW_FLAGS(T, NONZERO_BITS)                                                        \
    for (int64_t j = 0; j < n; j++) {                                                     \
        T u;                                                                              \
        memcpy(&u, p + j * st, sizeof(u));                                                \
        flags[j] = (u & (NONZERO_BITS)) != 0;                                             \
    }                                                                                     \
    break;

/* The n elements at p, st bytes apart, as bytes that are 0 where the element is zero: p
 * itself when it already is such a row, else flags[0..n) (a float's sign bit is ignored, so
 * -0.0 is zero and NaN is not). */
static const uint8_t *
row_flags(const char *p, int64_t st, int64_t n, PtlDtype dt, uint8_t *flags)
{
    int fl = ptl_dtype_is_floating(dt);
    switch (ptl_dtype_itemsize(dt)) {
    case 1:
        if (st == 1) {
            return (const uint8_t *)p;
        }
        ROW_FLAGS(uint8_t, 0xFFu)
    case 2: ROW_FLAGS(uint16_t, fl ? 0x7FFFu : 0xFFFFu)
    case 4: ROW_FLAGS(uint32_t, fl ? 0x7FFFFFFFu : 0xFFFFFFFFu)
    default: ROW_FLAGS(uint64_t, fl ? ~((uint64_t)1 << 63) : ~(uint64_t)0)
    }
    return flags;
}
#undef ROW_FLAGS

/* Walks t's rows (Note [Mask rows]).  out == NULL: returns the number of nonzero elements.
 * Else writes the first `total` entries to out and returns how many it wrote: coordinates
 * when strides is NULL (t->dim >= 1; column-major, dim d's of entry k at out[d * total + k]),
 * else element offsets with t's dim d mapped to strides[d]. */
static int64_t
mask_rows(const PtlTensorImpl *t, const int64_t *strides, int64_t *out, int64_t total)
{
    int nd = t->dim;
    int64_t last = nd ? t->sizes[nd - 1] : 1, rows = last ? t->numel / last : 0;
    int64_t isz = (int64_t)ptl_tensor_itemsize(t), lst = nd ? t->strides[nd - 1] * isz : 0;
    int64_t step = strides != NULL && nd ? strides[nd - 1] : 0, idx[PTL_MAX_DIMS] = {0}, k = 0;
    const char *base = ptl_tensor_data(t);
    uint8_t buf[MASK_CHUNK];
    for (int64_t r = 0; r < rows; r++) {
        const char *rp = base;
        int64_t roff = 0;
        for (int d = 0; d < nd - 1; d++) {
            rp += idx[d] * t->strides[d] * isz;
            roff += strides != NULL ? idx[d] * strides[d] : 0;
        }
        for (int64_t j0 = 0; j0 < last; j0 += MASK_CHUNK) {
            int64_t n = last - j0 < MASK_CHUNK ? last - j0 : MASK_CHUNK;
            const uint8_t *f = row_flags(rp + j0 * lst, lst, n, t->dtype, buf);
            if (out == NULL) {
                for (int64_t j = 0; j < n; j++) {
                    k += f[j] != 0;
                }
            }
            else if (strides == NULL) {
                /* the last coordinate per element, then the row's others per entry written */
                int64_t k0 = k, *last_col = out + (nd - 1) * total;
                for (int64_t j = 0; j < n && k < total; j++) {
                    last_col[k] = j0 + j;
                    k += f[j] != 0;
                }
                for (int d = 0; d < nd - 1; d++) {
                    for (int64_t q = k0; q < k; q++) {
                        out[d * total + q] = idx[d];
                    }
                }
            }
            else {
                for (int64_t j = 0; j < n && k < total; j++) {
                    out[k] = roff + (j0 + j) * step;
                    k += f[j] != 0;
                }
            }
        }
        for (int d = nd - 2; d >= 0; d--) {
            if (++idx[d] < t->sizes[d]) {
                break;
            }
            idx[d] = 0;
        }
    }
    return k;
}

/* Note [nonzero is column-major]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * nonzero(self) is the (N, self.dim()) int64 coordinates of the nonzero elements in
 * row-major order, laid out column-major as PyTorch's is: strides (1, N), so each column (a
 * dim's coordinates: where(cond)'s tensors, the indices a mask in an index becomes) is
 * contiguous, and code that reads x.nonzero().stride() or hands the result to a kernel
 * that cares sees torch's layout. */
static PtlTensorImpl *
nonzero_impl(PtlTensorImpl *self)
{
    int64_t sizes[2] = {mask_rows(self, NULL, NULL, 0), self->dim};
    int64_t strides[2] = {1, sizes[0]};
    PtlTensorImpl *out = ptl_empty_strided(2, sizes, strides, PTL_DTYPE_INT64, self->device);
    if (out != NULL && self->dim > 0) {
        mask_rows(self, NULL, (int64_t *)ptl_tensor_data(out), sizes[0]);
    }
    return out;
}

static int
nonzero_host(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *r = nonzero_impl(s[0].u.t);
    if (r == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(r);
    return 0;
}

/* nonzero: on CUDA (or while the tests emulate it) a walk of a host copy (Note [Host walks
 * for data-dependent sizes] in device_compose.h), whose move to the device is row-major:
 * laid out column-major again there (Note [nonzero is column-major]) */
static int
nonzero_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    if (!ptl_on_device_path(s[0].u.t)) {
        return nonzero_host(op, ks, s);
    }
    if (ptl_run_on_host(nonzero_host, op, ks, s) < 0) {
        return -1;
    }
    PtlTensorImpl *r = s[0].u.t, *c;
    int64_t strides[2] = {1, r->sizes[0]};
    if ((c = ptl_empty_strided(2, r->sizes, strides, r->dtype, r->device)) != NULL &&
        ptl_copy_into(c, r) < 0) {
        PTL_CLEAR(c);
    }
    ptl_decref(r);
    s[0] = c != NULL ? ptl_iv_tensor(c) : ptl_iv_none();
    return c != NULL ? 0 : -1;
}

/* argwhere(Tensor self) = nonzero(self) */
static int
argwhere_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    return ptl_dispatcher_call(ptl_op(PTL_OP_nonzero), s);
}

/* where(Tensor condition) -> Tensor[]: the columns of nonzero(condition) (a 0-dim condition
 * counts as 1-D) */
static int
where_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *cond = s[0].u.t, *nz;
    PtlIValue a[2];
    int64_t one = 1;
    a[0] = ptl_iv_tensor(cond);
    a[1] = ptl_iv_intlist(&one, 1);
    if (cond->dim == 0) {
        PtlTensorImpl *c1 = ptl_call_tensor(PTL_OP_reshape, a);
        if (c1 == NULL) {
            return -1;
        }
        a[0] = ptl_iv_tensor(c1);
        nz = ptl_call_tensor(PTL_OP_nonzero, a);
        ptl_decref(c1);
    }
    else {
        nz = ptl_call_tensor(PTL_OP_nonzero, a);
    }
    if (nz == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(nz);
    s[1] = ptl_iv_int(1);
    int rc = ptl_dispatcher_call(ptl_op(PTL_OP_unbind_int), s);
    ptl_decref(nz);
    return rc;
}

/* ---- the advanced-index walk (Note [Advanced indexing]) ---- */

/* Which error a bad index gets; index, index_put_ and index_fill_ also accept negative
 * indices (counted from the end), the others reject them as PyTorch does. */
typedef enum Flavor {
    FL_INDEX,    /* index / index_put_: IndexError naming the index tensor's position */
    FL_SELECT,   /* index_select: "index out of range in self" */
    FL_ADD,      /* index_add_: RuntimeError naming the dimension */
    FL_COPY,     /* index_copy_: IndexError with the op's prefix */
    FL_FILL,     /* index_fill_: IndexError naming the dimension */
    FL_SHAPE,    /* index_put_ about to raise: the result's shape only, no index read */
} Flavor;

typedef struct AdvIndex {
    int64_t *off;                  /* owned: [bnumel] offset into self of each index tuple */
    int64_t *off_before;           /* owned: offsets of the leading unindexed dims */
    int64_t *off_after;            /* owned: offsets of the trailing unindexed dims */
    int64_t bnumel, nbefore, nafter;
    int out_dim;
    int64_t out_sizes[PTL_MAX_DIMS];
} AdvIndex;

static void
adv_release(AdvIndex *ai)
{
    free(ai->off);
    free(ai->off_before);
    free(ai->off_after);
    ai->off = ai->off_before = ai->off_after = NULL;
}

static int
mask_error(const PtlTensorImpl *mask, int j, const PtlTensorImpl *self, int at)
{
    char b1[256], b2[256];
    ptl_format_sizes(b1, sizeof(b1), mask->dim, mask->sizes);
    ptl_format_sizes(b2, sizeof(b2), self->dim, self->sizes);
    return ptl_error_set(PTL_ERR_INDEX,
                         "The shape of the mask %s at index %d does not match the shape of the "
                         "indexed tensor %s at index %d",
                         b1, j, b2, at);
}

static int
range_error(Flavor fl, int64_t v, int k, int dim, int64_t size)
{
    switch (fl) {
    case FL_SELECT:
        return ptl_error_set(PTL_ERR_INDEX, "index out of range in self");
    case FL_ADD:
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "index %lld is out of bounds for dimension %d with size %lld",
                             (long long)v, dim, (long long)size);
    case FL_COPY:
        return ptl_error_set(PTL_ERR_INDEX,
                             "index_copy_(): index %lld is out of bounds for dimension %d with "
                             "size %lld",
                             (long long)v, dim, (long long)size);
    case FL_FILL:
        return ptl_error_set(PTL_ERR_INDEX,
                             "index %lld is out of bounds for dimension %d with size %lld",
                             (long long)v, dim, (long long)size);
    default:
        return ptl_error_set(PTL_ERR_INDEX,
                             "index %lld is out of bounds for dimension %d with size %lld",
                             (long long)v, k, (long long)size);
    }
}

/* The output's layout around the broadcast index shape B (bdim dims bshape) of the nidx
 * indexed dims of self: ai's out sizes and the offset walks of the dims before and after B.
 * B lands in place when the indexed dims are adjacent, else in front. */
static int
adv_layout(AdvIndex *ai, const PtlTensorImpl *self, const int *dims, int nidx, int bdim,
           const int64_t *bshape)
{
    int adjacent = nidx == 0 || dims[nidx - 1] - dims[0] == nidx - 1;
    int first = adjacent && nidx > 0 ? dims[0] : 0;
    int64_t bsz[PTL_MAX_DIMS], bst[PTL_MAX_DIMS], asz[PTL_MAX_DIMS], ast[PTL_MAX_DIMS];
    int nb = 0, na = 0;
    for (int d = 0; d < self->dim; d++) {
        int indexed = 0;
        for (int k = 0; k < nidx; k++) {
            indexed |= dims[k] == d;
        }
        if (indexed) {
            continue;
        }
        if (d < first) {
            bsz[nb] = self->sizes[d];
            bst[nb++] = self->strides[d];
        }
        else {
            asz[na] = self->sizes[d];
            ast[na++] = self->strides[d];
        }
    }
    if (nb + bdim + na > PTL_MAX_DIMS) {
        return ptl_error_set(PTL_ERR_RUNTIME, "pytorchlite supports at most %d dimensions",
                             PTL_MAX_DIMS);
    }
    ai->out_dim = nb + bdim + na;
    memcpy(ai->out_sizes, bsz, sizeof(int64_t) * (size_t)nb);
    memcpy(ai->out_sizes + nb, bshape, sizeof(int64_t) * (size_t)bdim);
    memcpy(ai->out_sizes + nb + bdim, asz, sizeof(int64_t) * (size_t)na);
    ai->nbefore = 1;
    ai->nafter = 1;
    for (int d = 0; d < nb; d++) {
        ai->nbefore *= bsz[d];
    }
    for (int d = 0; d < na; d++) {
        ai->nafter *= asz[d];
    }
    if ((ai->off_before = walk_offsets(nb, bsz, bst)) == NULL ||
        (ai->off_after = walk_offsets(na, asz, ast)) == NULL) {
        return -1;
    }
    return 0;
}

/* Fills ai for self[items] (items: n optional index tensors on the CPU, borrowed).  0 or
 * -1. */
static int
adv_build_host(AdvIndex *ai, PtlTensorImpl *self, PtlTensorImpl *const *items, int64_t n,
          Flavor fl)
{
    PtlTensorImpl *idx[PTL_MAX_DIMS] = {NULL}, *masks[PTL_MAX_DIMS] = {NULL};
    int dims[PTL_MAX_DIMS], nidx = 0, nmasks = 0, bdim = 0, used = 0, defined = 0, direct = 0;
    int64_t bshape[PTL_MAX_DIMS], *walk = NULL;
    int rc = -1;
    memset(ai, 0, sizeof(*ai));
    for (int64_t i = 0; i < n; i++) {
        PtlTensorImpl *t = items[i];
        int is_mask = t != NULL && (t->dtype == PTL_DTYPE_BOOL || t->dtype == PTL_DTYPE_UINT8);
        used += is_mask ? t->dim : 1;
        defined += t != NULL;
    }
    if (used > self->dim) {
        return ptl_error_set(PTL_ERR_INDEX, "too many indices for tensor of dimension %d (got %d)",
                             self->dim, used);
    }
    for (int64_t i = 0, d = 0; i < n; i++) {
        PtlTensorImpl *t = items[i];
        if (t == NULL) {
            d++;
        }
        else if (t->dtype == PTL_DTYPE_BOOL || t->dtype == PTL_DTYPE_UINT8) {
            for (int j = 0; j < t->dim; j++) {
                if (t->sizes[j] != self->sizes[d + j]) {
                    mask_error(t, j, self, (int)(d + j));
                    goto done;
                }
            }
            direct = defined == 1 && t->dim > 0;
            if (direct) {
                /* the only index: the offsets of its set elements are the index tuples'
                 * (Note [Mask rows]), with no coordinates in between */
                bdim = 1;
                bshape[0] = ai->bnumel = mask_rows(t, NULL, NULL, 0);
                if ((ai->off = malloc(sizeof(int64_t) * (size_t)(bshape[0] + 1))) == NULL) {
                    ptl_error_set(PTL_ERR_MEMORY, "out of memory");
                    goto done;
                }
                mask_rows(t, self->strides + d, ai->off, bshape[0]);
                for (int j = 0; j < t->dim; j++) {
                    dims[nidx++] = (int)(d + j);
                }
                d += t->dim;
                continue;
            }
            PtlTensorImpl *nz = nonzero_impl(t);
            if (nz == NULL) {
                goto done;
            }
            masks[nmasks++] = nz;
            for (int j = 0; j < t->dim; j++) {
                int64_t col_size = nz->sizes[0], col_stride = 1;
                idx[nidx] = ptl_tensor_impl_view(nz, 1, &col_size, &col_stride, j * col_size);
                if (idx[nidx] == NULL) {
                    goto done;
                }
                dims[nidx++] = (int)(d + j);
            }
            d += t->dim;
        }
        else if (t->dtype == PTL_DTYPE_INT64 || t->dtype == PTL_DTYPE_INT32) {
            ptl_incref(t);
            idx[nidx] = t;
            dims[nidx++] = (int)d++;
        }
        else {
            ptl_error_set(PTL_ERR_INDEX, "tensors used as indices must be long, int, byte or "
                                         "bool tensors");
            goto done;
        }
    }
    for (int k = 0; k < nidx && !direct; k++) {
        if (broadcast_into(&bdim, bshape, idx[k]->dim, idx[k]->sizes) < 0) {
            char msg[1024], b[256];
            size_t off = (size_t)snprintf(msg, sizeof(msg), "shape mismatch: indexing tensors "
                                                             "could not be broadcast together "
                                                             "with shapes ");
            for (int q = 0; q < nidx && off < sizeof(msg); q++) {
                ptl_format_sizes(b, sizeof(b), idx[q]->dim, idx[q]->sizes);
                off += (size_t)snprintf(msg + off, sizeof(msg) - off, "%s%s", q ? ", " : "", b);
            }
            ptl_error_set(PTL_ERR_INDEX, "%s", msg);
            goto done;
        }
    }
    ai->bnumel = 1;
    for (int d = 0; d < bdim; d++) {
        ai->bnumel *= bshape[d];
    }
    if (!direct &&
        (ai->off = calloc((size_t)(ai->bnumel > 0 ? ai->bnumel : 1), sizeof(int64_t))) == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "out of memory");
        goto done;
    }
    for (int k = 0; k < nidx && !direct && fl != FL_SHAPE; k++) {
        int64_t st[PTL_MAX_DIMS], size = self->sizes[dims[k]], stride = self->strides[dims[k]];
        int64_t lo = fl == FL_INDEX || fl == FL_FILL ? -size : 0, bad;
        expanded_strides(idx[k], bdim, bshape, st);
        if (bdim == 1) {   /* Note [One-dim index offsets] */
            if (index_offsets_1d(ai->off, idx[k], st[0], ai->bnumel, lo, size, stride, &bad)) {
                range_error(fl, bad, k, dims[k], size);
                goto done;
            }
            continue;
        }
        if ((walk = walk_offsets(bdim, bshape, st)) == NULL) {
            goto done;
        }
        const char *data = ptl_tensor_data(idx[k]);
        size_t item = ptl_tensor_itemsize(idx[k]);
        for (int64_t b = 0; b < ai->bnumel; b++) {
            int64_t v = ptl_load_int(data + walk[b] * (int64_t)item, idx[k]->dtype);
            if (v < lo || v >= size) {
                range_error(fl, v, k, dims[k], size);
                goto done;
            }
            ai->off[b] += (v < 0 ? v + size : v) * stride;
        }
        free(walk);
        walk = NULL;
    }
    if (adv_layout(ai, self, dims, nidx, bdim, bshape) < 0) {
        goto done;
    }
    rc = 0;
done:
    free(walk);
    for (int k = 0; k < nidx; k++) {
        ptl_xdecref(idx[k]);
    }
    for (int k = 0; k < nmasks; k++) {
        ptl_decref(masks[k]);
    }
    if (rc < 0) {
        adv_release(ai);
    }
    return rc;
}

/* Fills ai for self[items] (items: n optional index tensors, borrowed).  Indices on the
 * device are read through host copies (a synchronisation): the tables are built and every
 * index checked on the host, and the device kernels take the tables (Note [CUDA index and
 * sort kernels] in src/cuda/index_plan.h).  0 or -1. */
static int
adv_build(AdvIndex *ai, PtlTensorImpl *self, PtlTensorImpl *const *items, int64_t n,
          Flavor fl)
{
    PtlTensorImpl *host[PTL_MAX_DIMS] = {NULL};
    const PtlDevice cpu = ptl_device_cpu();
    int on_device = 0, rc = -1;
    for (int64_t i = 0; i < n && n <= PTL_MAX_DIMS; i++) {
        on_device |= items[i] != NULL && items[i]->device.type == PTL_DEVICE_CUDA;
    }
    if (!on_device) {
        return adv_build_host(ai, self, items, n, fl);
    }
    for (int64_t i = 0; i < n; i++) {
        if (items[i] != NULL && items[i]->device.type == PTL_DEVICE_CUDA) {
            if ((host[i] = ptl_to_copy(items[i], PTL_DTYPE_UNDEFINED, &cpu)) == NULL) {
                goto done;
            }
        }
        else if ((host[i] = items[i]) != NULL) {
            ptl_incref(host[i]);
        }
    }
    rc = adv_build_host(ai, self, host, n, fl);
done:
    for (int64_t i = 0; i < n; i++) {
        ptl_xdecref(host[i]);
    }
    return rc;
}

/* Whether the walk over self runs on the device's kernels (device_index.h): self a CUDA
 * tensor, or the kernels emulated. */
static int
adv_on_device(const PtlTensorImpl *self)
{
    return (self->device.type == PTL_DEVICE_CUDA || ptl_device_reduce_emulation) &&
           ptl_device_adv_index_hook != NULL && !ptl_tensor_is_meta(self);
}

/* The device kernels' view of ai over self */
static void
adv_args(PtlDeviceAdvIndexArgs *a, const AdvIndex *ai, PtlTensorImpl *self, int scatter)
{
    memset(a, 0, sizeof(*a));
    a->scatter = scatter;
    a->dtype = self->dtype;
    a->out_dim = ai->out_dim;
    a->self = ptl_tensor_data(self);
    a->off = ai->off;
    a->off_before = ai->off_before;
    a->off_after = ai->off_after;
    a->bnumel = ai->bnumel;
    a->nbefore = ai->nbefore;
    a->nafter = ai->nafter;
    a->itemsize = (int64_t)ptl_tensor_itemsize(self);
    a->alpha = 1.0;
    memcpy(a->out_sizes, ai->out_sizes, sizeof(int64_t) * (size_t)ai->out_dim);
}

/* Whether off[0..n) = 0, 1, ..., n - 1: a contiguous run (Note [Contiguous index rows]) */
static int
is_run(const int64_t *off, int64_t n)
{
    for (int64_t j = 0; j < n; j++) {
        if (off[j] != j) {
            return 0;
        }
    }
    return 1;
}

/* Note [Contiguous index rows]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The walk of Note [Advanced indexing] moves one element per step through offset tables.
 * When the trailing unindexed dims are one contiguous run of self (index_select(0, ...),
 * x[idx] of a contiguous x, embedding-like gathers) each index moves a whole row: one
 * memcpy, or for index_put_ / index_add_ with contiguous values a typed row loop (floats add
 * in double and round once, as combine() does, so the bits are the same; complex rows add
 * their parts, row_add in index_complex.h).  1024 rows of 1024 float32: index_select 1.3 ms
 * -> 0.1 ms, index_add_ 6.4 ms -> 0.3 ms. */

/* out (contiguous, ai->out_sizes) = self[ai].  0, or -1 with the error set. */
static int
adv_gather(const AdvIndex *ai, PtlTensorImpl *self, PtlTensorImpl *out)
{
    if (adv_on_device(self)) {
        PtlDeviceAdvIndexArgs a;
        adv_args(&a, ai, self, 0);
        a.other = ptl_tensor_data(out);
        return ptl_device_adv_index_hook(&a);
    }
    size_t item = ptl_tensor_itemsize(self);
    const char *src = ptl_tensor_data(self);
    char *dst = ptl_tensor_data(out);
    if (ai->nafter > 1 && is_run(ai->off_after, ai->nafter)) {
        size_t row = (size_t)ai->nafter * item;
        for (int64_t i = 0; i < ai->nbefore; i++) {
            for (int64_t b = 0; b < ai->bnumel; b++, dst += row) {
                memcpy(dst, src + (ai->off_before[i] + ai->off[b]) * (int64_t)item, row);
            }
        }
        return 0;
    }
    if (ai->nafter == 1) {
        /* one element per index (index_select along the last dim): one typed row per leading
         * position, taking the index offsets themselves */
        for (int64_t i = 0; i < ai->nbefore; i++, dst += ai->bnumel * (int64_t)item) {
            take_row(dst, 1, src + (ai->off_before[i] + ai->off_after[0]) * (int64_t)item,
                     ai->off, ai->bnumel, item);
        }
        return 0;
    }
    for (int64_t i = 0; i < ai->nbefore; i++) {
        for (int64_t b = 0; b < ai->bnumel; b++, dst += ai->nafter * (int64_t)item) {
            take_row(dst, 1, src + (ai->off_before[i] + ai->off[b]) * (int64_t)item,
                     ai->off_after, ai->nafter, item);
        }
    }
    return 0;
}


/* 0 when values broadcast to the indexing result of ai, else -1 with PyTorch's error */
static int
values_fit(const AdvIndex *ai, const PtlTensorImpl *values)
{
    int ok = values->dim <= ai->out_dim;
    for (int d = 0; ok && d < values->dim; d++) {
        int64_t want = ai->out_sizes[d + ai->out_dim - values->dim];
        ok = values->sizes[d] == want || values->sizes[d] == 1;
    }
    if (!ok) {
        char b1[256], b2[256];
        ptl_format_sizes(b1, sizeof(b1), values->dim, values->sizes);
        ptl_format_sizes(b2, sizeof(b2), ai->out_dim, ai->out_sizes);
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "shape mismatch: value tensor of shape %s cannot be broadcast to "
                             "indexing result of shape %s",
                             b1, b2);
    }
    return 0;
}

/* self[ai] (op)= values, values broadcast to the indexing result (same dtype as self);
 * alpha_im: the imaginary part of a complex self's alpha (index_add's). */
static int
adv_scatter(const AdvIndex *ai, PtlTensorImpl *self, PtlTensorImpl *values, Reduce r,
            double alpha, double alpha_im)
{
    int64_t vst[PTL_MAX_DIMS], *voff = NULL;
    if (values_fit(ai, values) < 0) {
        return -1;
    }
    expanded_strides(values, ai->out_dim, ai->out_sizes, vst);
    if (adv_on_device(self)) {
        /* a one-element value from another device (x[idx] = a CPU scalar) goes by value */
        int by_value = values->numel == 1 && !ptl_device_equal(values->device, self->device);
        PtlDeviceAdvIndexArgs a;
        if (!by_value && same_device(self, values) < 0) {
            return -1;
        }
        adv_args(&a, ai, self, 1);
        a.reduce = (int32_t)r;
        a.alpha = alpha;
        if (by_value) {
            memcpy(&a.value, ptl_tensor_data(values), ptl_tensor_itemsize(values));
        }
        else {
            a.other = ptl_tensor_data(values);
            memcpy(a.vst, vst, sizeof(int64_t) * (size_t)ai->out_dim);
        }
        if (ptl_device_adv_index_hook(&a) < 0) {
            return -1;
        }
        ptl_tensor_bump_version(self);
        return 0;
    }
    size_t item = ptl_tensor_itemsize(self);
    char *dst = ptl_tensor_data(self);
    const char *src = ptl_tensor_data(values);
    int64_t q = 0, n = ai->nafter;
    /* values laid out exactly as the indexing result: no offset walk is needed */
    int whole = values->numel == ai->nbefore * ai->bnumel * n && ptl_tensor_is_contiguous(values);
    int rows = whole && n > 1 && is_run(ai->off_after, n) &&
               (r == RED_NONE || (r == RED_SUM && row_add_ok(self->dtype)));
    if (!rows && ai->nbefore == 1 && n == 1 && (whole || values->numel == 1) &&
        flat_scatter(dst + (ai->off_before[0] + ai->off_after[0]) * (int64_t)item, ai->off,
                     ai->bnumel, src, whole, self->dtype, r, alpha)) {
        ptl_tensor_bump_version(self);   /* Note [One-dim index offsets] */
        return 0;
    }
    if (!rows && (voff = walk_offsets(ai->out_dim, ai->out_sizes, vst)) == NULL) {
        return -1;
    }
    for (int64_t i = 0; rows && i < ai->nbefore; i++) {
        for (int64_t b = 0; b < ai->bnumel; b++, q += n) {
            char *d = dst + (ai->off_before[i] + ai->off[b]) * (int64_t)item;
            const char *v = src + q * (int64_t)item;
            if (r == RED_NONE) {
                memcpy(d, v, (size_t)n * item);
            }
            else {
                row_add(d, v, n, self->dtype, alpha, alpha_im);
            }
        }
    }
    for (int64_t i = 0; !rows && i < ai->nbefore; i++) {
        for (int64_t b = 0; b < ai->bnumel; b++) {
            int64_t base = ai->off_before[i] + ai->off[b];
            for (int64_t j = 0; j < ai->nafter; j++, q++) {
                char *d = dst + (base + ai->off_after[j]) * (int64_t)item;
                const char *v = src + voff[q] * (int64_t)item;
                if (r == RED_NONE) {
                    copy_elem(d, v, item);
                }
                else {
                    combine_any(d, v, self->dtype, r, alpha, alpha_im);
                }
            }
        }
    }
    if (!rows) {
        free(voff);
    }
    ptl_tensor_bump_version(self);
    return 0;
}

/* ---- index / index_put_ ---- */

/* Puts out (a new ref) in s[0] and returns 0 when rc is 0; releases out and returns -1
 * otherwise. */
static int
set_out(PtlIValue *s, PtlTensorImpl *out, int rc)
{
    if (rc < 0) {
        ptl_decref(out);
        return -1;
    }
    s[0] = ptl_iv_tensor(out);
    return 0;
}

/* index.Tensor(Tensor self, Tensor?[] indices): shape per Note [Advanced indexing] */
static int
index_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *out;
    AdvIndex ai;
    if (s[1].u.tl.n == 0) {   /* PyTorch's index_put_ takes [] (puts everywhere); index not */
        return ptl_error_set(PTL_ERR_INDEX, "at least one index must be provided");
    }
    if (adv_build(&ai, self, s[1].u.tl.data, s[1].u.tl.n, FL_INDEX) < 0) {
        return -1;
    }
    if ((out = ptl_empty(ai.out_dim, ai.out_sizes, self->dtype, self->device)) == NULL) {
        adv_release(&ai);
        return -1;
    }
    int rc = adv_gather(&ai, self, out);
    adv_release(&ai);
    return set_out(s, out, rc);
}

/* Note [Index put of one value through a mask]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * index_put_ wants values of self's dtype ("Index put requires the source and destination
 * dtypes match"), checked after the indices and the values' shape, as PyTorch's
 * make_index_put_iterator does; x[idx] = v passes a tensor v as it is (src/python/
 * indexing.c), so x_c64[idx] = float_tensor raises too.  One case takes any dtype: without
 * accumulate, a one-element CPU value put through a single bool (or uint8) index among
 * Nones is PyTorch's masked_fill_(mask, value.item()) (can_dispatch_to_masked_fill), so the
 * value converts to self's dtype with masked_fill's range check and a uint8 mask gets
 * masked_fill_'s refusal.  Here the value becomes a 0-dim tensor of self's dtype and the put
 * runs as usual (the same elements change). */

/* The one value of v (a one-element CPU tensor) as a Scalar, as Tensor.item() reads it */
static PtlIValue
item_of(PtlTensorImpl *v)
{
    if (ptl_dtype_is_complex(v->dtype)) {
        double z[2];   /* complex128's layout: real, imaginary */
        ptl_convert_scalar((char *)z, PTL_DTYPE_COMPLEX128, ptl_tensor_data(v), v->dtype);
        return ptl_iv_complex(z[0], z[1]);
    }
    if (v->dtype == PTL_DTYPE_BOOL) {
        return ptl_iv_bool(*(const uint8_t *)ptl_tensor_data(v) != 0);
    }
    return ptl_dtype_is_floating(v->dtype) ? ptl_iv_double(ptl_item_double(v))
                                           : ptl_iv_int(ptl_item_int(v));
}

/* For index_put_(self, items, values, accumulate): 1 with *fill values' one element as a
 * 0-dim tensor of self's dtype when the put is PyTorch's masked_fill_ (Note [Index put of
 * one value through a mask]), 0 when it is not, -1 with the error set (the mask's shape, a
 * uint8 mask, a value out of self's range). */
static int
mask_fill_value(PtlTensorImpl *self, PtlTensorImpl *const *items, int64_t n,
                PtlTensorImpl *values, int accumulate, PtlTensorImpl **fill)
{
    const PtlTensorImpl *mask = NULL;
    int64_t d = 0;
    *fill = NULL;
    if (accumulate || values->numel != 1 || !ptl_item_readable(values) ||
        values->device.type != PTL_DEVICE_CPU) {
        return 0;
    }
    for (int64_t i = 0; i < n; i++) {
        const PtlTensorImpl *t = items[i];
        if (t == NULL) {
            d++;
            continue;
        }
        if ((t->dtype != PTL_DTYPE_BOOL && t->dtype != PTL_DTYPE_UINT8) || mask != NULL ||
            !ptl_device_equal(t->device, self->device)) {
            return 0;
        }
        mask = t;
        for (int j = 0; j < t->dim; j++) {
            if (d + j >= self->dim) {
                return 0;   /* adv_build's "too many indices" */
            }
            if (t->sizes[j] != self->sizes[d + j]) {
                return mask_error(t, j, self, (int)(d + j));
            }
        }
        d += t->dim;
    }
    if (mask == NULL) {
        return 0;
    }
    if (mask->dtype != PTL_DTYPE_BOOL) {
        return ptl_error_set(PTL_ERR_RUNTIME, "masked_fill_ only supports boolean masks, but got "
                                              "mask with dtype unsigned char");
    }
    PtlIValue v = item_of(values);
    if (ptl_scalar_check_range(&v, self->dtype) < 0 ||
        (*fill = scalar_of(&v, self->dtype)) == NULL) {
        return -1;
    }
    return 1;
}

/* index_put[_](Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) */
static int
index_put_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *values = s[2].u.t, *fill = NULL, *out = NULL;
    AdvIndex ai;
    int filled = mask_fill_value(self, s[1].u.tl.data, s[1].u.tl.n, values, s[3].u.b, &fill);
    if (filled < 0) {
        return -1;
    }
    values = filled ? fill : values;
    /* an integer index that shares self's bytes is refused as PyTorch does; a mask becomes
     * integer indices before anything is written (PyTorch sends it to masked_fill_) */
    for (int k = 0; op->schema.inplace && k < s[1].u.tl.n; k++) {
        const PtlTensorImpl *ix = s[1].u.tl.data[k];
        if (ix != NULL && ix->dtype != PTL_DTYPE_BOOL && ix->dtype != PTL_DTYPE_UINT8 &&
            ptl_check_no_overlap(self, ix) < 0) {
            goto error;
        }
    }
    if ((out = target_reading(op, self, values, NULL, 1)) == NULL) {
        goto error;
    }
    /* a value of another dtype raises before any index is read (PyTorch's kernel checks the
     * indices' range, after the iterator's dtype check) */
    if (adv_build(&ai, out, s[1].u.tl.data, s[1].u.tl.n,
                  values->dtype == self->dtype ? FL_INDEX : FL_SHAPE) < 0) {
        goto error;
    }
    int rc = values_fit(&ai, values);
    if (rc == 0 && values->dtype != self->dtype) {
        rc = ptl_error_set(PTL_ERR_RUNTIME,
                           "Index put requires the source and destination dtypes match, got %s "
                           "for the destination and %s for the source.",
                           ptl_dtype_legacy_name(self->dtype),
                           ptl_dtype_legacy_name(values->dtype));
    }
    if (rc == 0) {
        rc = adv_scatter(&ai, out, values, s[3].u.b ? RED_SUM : RED_NONE, 1.0, 0.0);
    }
    adv_release(&ai);
    ptl_xdecref(fill);
    return set_out(s, out, rc);
error:
    ptl_xdecref(fill);
    ptl_xdecref(out);
    return -1;
}

/* ---- index_select, index_add_, index_copy_, index_fill_ (one index along dim) ---- */

/* Builds the walk for self[(:,) * dim + (index,)] with dim wrapped; 0-dim self counts as
 * 1-D (PyTorch allows dim 0 / -1 there). */
static int
dim_build(AdvIndex *ai, PtlTensorImpl *self, int64_t *dim, PtlTensorImpl *index, Flavor fl,
          PtlTensorImpl **self1)
{
    PtlTensorImpl *items[PTL_MAX_DIMS] = {NULL};
    int64_t one = 1;
    if (ptl_wrap_dim(dim, self->dim > 0 ? self->dim : 1) < 0) {
        return -1;
    }
    if (self->dim == 0) {
        *self1 = ptl_tensor_impl_view(self, 1, &one, &one, self->storage_offset);
    }
    else {
        ptl_incref(self);
        *self1 = self;
    }
    if (*self1 == NULL) {
        return -1;
    }
    items[*dim] = index;
    if (adv_build(ai, *self1, items, *dim + 1, fl) < 0) {
        PTL_CLEAR(*self1);
        return -1;
    }
    return 0;
}

/* index_select(Tensor self, int dim, Tensor index) [out=]: self's shape with
 * sizes[dim] = index.numel() */
static int
index_select_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *index = s[2].u.t, *self1 = NULL, *res = NULL;
    PtlTensorImpl *dest = ptl_kernel_out(op, s);
    int64_t dim = s[1].u.i, flat = index->numel;
    AdvIndex ai;
    if (index->dim > 1) {
        return ptl_error_set(PTL_ERR_INDEX, "index_select(): Index is supposed to be a vector");
    }
    if (index->dtype != PTL_DTYPE_INT64 && index->dtype != PTL_DTYPE_INT32) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "index_select(): Expected dtype int32 or int64 for index");
    }
    if (dest != NULL && dest->dtype != self->dtype) {   /* strict, as PyTorch's */
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "index_select(): self and result must have the same scalar type");
    }
    PtlTensorImpl *idx1 = ptl_tensor_impl_view(index, 1, &flat,
                                               index->dim ? index->strides : &flat,
                                               index->storage_offset);
    if (idx1 == NULL) {
        return -1;
    }
    int rc = dim_build(&ai, self, &dim, idx1, FL_SELECT, &self1);
    ptl_decref(idx1);
    if (rc < 0) {
        return -1;
    }
    int odim = self->dim == 0 ? (index->dim ? 1 : 0) : self->dim;
    if ((res = ptl_empty(odim, ai.out_sizes, self->dtype, self->device)) == NULL) {
        goto error;
    }
    if (adv_gather(&ai, self1, res) < 0) {
        goto error;
    }
    if (dest != NULL) {
        if (ptl_resize_output(dest, res->dim, res->sizes) < 0 || ptl_copy_into(dest, res) < 0) {
            goto error;
        }
        ptl_tensor_bump_version(dest);
        ptl_decref(res);
        ptl_incref(dest);
        res = dest;
    }
    adv_release(&ai);
    ptl_decref(self1);
    s[0] = ptl_iv_tensor(res);
    return 0;
error:
    adv_release(&ai);
    ptl_decref(self1);
    ptl_xdecref(res);
    return -1;
}

/* Shape check shared by index_add_ / index_copy_: source is self with sizes[dim] = n. */
static int
source_fits(const PtlTensorImpl *self, const PtlTensorImpl *src, int64_t dim)
{
    int sd = self->dim > 0 ? self->dim : 1, rd = src->dim > 0 ? src->dim : 1;
    if (sd != rd) {
        return 0;
    }
    for (int d = 0; d < self->dim; d++) {
        if (d != dim && self->sizes[d] != src->sizes[d]) {
            return 0;
        }
    }
    return 1;
}

/* index_add[_](self, dim, index, source, *, alpha) / index_copy[_](self, dim, index, source):
 *   self[..., index[i], ...] (+)= alpha * source[..., i, ...] */
static int
index_add_copy_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *index = s[2].u.t, *src = s[3].u.t, *out = NULL;
    PtlTensorImpl *self1 = NULL;
    int is_add = op->id == PTL_OP_index_add || op->id == PTL_OP_index_add_;
    int64_t dim = s[1].u.i, nsrc;
    char b1[256], b2[256];
    AdvIndex ai;
    if (ptl_wrap_dim(&dim, self->dim > 0 ? self->dim : 1) < 0 ||
        (is_add && complex_scalar_check(&s[4], self->dtype) < 0) ||
        (op->schema.inplace && ptl_check_no_internal_overlap(self) < 0)) {
        return -1;
    }
    if (index->dim > 1) {
        return ptl_error_set(PTL_ERR_INDEX, "%s(): Index is supposed to be a vector",
                             is_add ? "index_add_" : "index_copy_");
    }
    if (index->dtype != PTL_DTYPE_INT64 && index->dtype != PTL_DTYPE_INT32) {
        return is_add ? ptl_error_set(PTL_ERR_RUNTIME,
                                      "index_add_(): Expected dtype int32/int64 for index but "
                                      "got: %s",
                                      ptl_dtype_legacy_name(index->dtype))
                      : ptl_error_set(PTL_ERR_RUNTIME,
                                      "index_copy_(): Expected a long tensor for index, but got "
                                      "%s",
                                      ptl_dtype_legacy_name(index->dtype));
    }
    if (src->dtype != self->dtype) {
        return is_add ? ptl_error_set(PTL_ERR_RUNTIME,
                                      "index_add_(): self (%s) and source (%s) must have the "
                                      "same scalar type",
                                      ptl_dtype_legacy_name(self->dtype),
                                      ptl_dtype_legacy_name(src->dtype))
                      : ptl_error_set(PTL_ERR_RUNTIME,
                                      "index_copy_(): self and source expected to have the same "
                                      "dtype, but got (self) %s and (source) %s",
                                      ptl_dtype_legacy_name(self->dtype),
                                      ptl_dtype_legacy_name(src->dtype));
    }
    if (!source_fits(self, src, dim)) {
        ptl_format_sizes(b1, sizeof(b1), self->dim, self->sizes);
        ptl_format_sizes(b2, sizeof(b2), src->dim, src->sizes);
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "source tensor shape must match self tensor shape, excluding the "
                             "specified dimension. Got self.shape = %s source.shape = %s",
                             b1, b2);
    }
    nsrc = src->dim > 0 ? src->sizes[dim] : 1;
    if (index->numel != nsrc) {
        return is_add ? ptl_error_set(PTL_ERR_RUNTIME,
                                      "index_add_(): Number of indices (%lld) should be equal to "
                                      "source.size(dim): (%lld), for dim: %lld",
                                      (long long)index->numel, (long long)nsrc, (long long)dim)
                      : ptl_error_set(PTL_ERR_INDEX,
                                      "index_copy_(): Number of indices (%lld) should be equal "
                                      "to source.size(dim) (%lld)",
                                      (long long)index->numel, (long long)nsrc);
    }
    if ((out = target_reading(op, self, src, index, 0)) == NULL) {
        return -1;
    }
    int64_t flat = index->numel;
    PtlTensorImpl *idx1 = ptl_tensor_impl_view(index, 1, &flat,
                                               index->dim ? index->strides : &flat,
                                               index->storage_offset);
    if (idx1 == NULL) {
        ptl_decref(out);
        return -1;
    }
    int rc = dim_build(&ai, out, &dim, idx1, is_add ? FL_ADD : FL_COPY, &self1);
    ptl_decref(idx1);
    if (rc == 0) {
        double im = 0.0, re = is_add ? scalar_parts(&s[4], &im) : 1.0;
        rc = adv_scatter(&ai, self1, src, is_add ? RED_SUM : RED_NONE, re, im);
        adv_release(&ai);
        ptl_decref(self1);
    }
    return set_out(s, out, rc);
}

/* A 0-dim value tensor (or Scalar) as a 0-dim tensor of dtype, on the CPU unless meta (its
 * bytes are the loops' and the kernels' argument); `name` for the error. */
static PtlTensorImpl *
value_of(const PtlIValue *v, PtlDtype dtype, const char *name)
{
    if (v->tag != PTL_IV_TENSOR) {
        return ptl_scalar_check_range(v, dtype) < 0 ? NULL : scalar_of(v, dtype);
    }
    if (v->u.t->dim != 0) {
        ptl_error_set(PTL_ERR_RUNTIME,
                      "%s only supports a 0-dimensional value tensor, but got tensor with %d "
                      "dimension(s).",
                      name, v->u.t->dim);
        return NULL;
    }
    if (complex_value_check(v->u.t, dtype) < 0) {
        return NULL;
    }
    if (v->u.t->device.type != PTL_DEVICE_CUDA) {   /* a meta value stays meta */
        return ptl_cast(v->u.t, dtype);
    }
    PtlDevice cpu = ptl_device_cpu();
    return ptl_to_copy(v->u.t, dtype, &cpu);
}

/* index_fill[_](Tensor self, int dim, Tensor index, Scalar|Tensor value) */
static int
index_fill_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *index = s[2].u.t, *out = NULL, *val = NULL, *self1 = NULL;
    int64_t dim = s[1].u.i;
    AdvIndex ai;
    if (index->dtype != PTL_DTYPE_INT64) {
        return ptl_error_set(PTL_ERR_INDEX, "index_fill_(): Expected dtype int64 for index.");
    }
    if (index->dim > 1) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Index has to be a vector/scalar");
    }
    if ((val = value_of(&s[3], self->dtype, "index_fill_")) == NULL) {
        return -1;
    }
    if ((out = target_reading(op, self, index, NULL, 1)) == NULL) {
        ptl_decref(val);
        return -1;
    }
    int64_t flat = index->numel;
    PtlTensorImpl *idx1 = ptl_tensor_impl_view(index, 1, &flat,
                                               index->dim ? index->strides : &flat,
                                               index->storage_offset);
    int rc = idx1 ? dim_build(&ai, out, &dim, idx1, FL_FILL, &self1) : -1;
    ptl_xdecref(idx1);
    if (rc == 0) {
        rc = adv_scatter(&ai, self1, val, RED_NONE, 1.0, 0.0);
        adv_release(&ai);
        ptl_decref(self1);
    }
    ptl_decref(val);
    return set_out(s, out, rc);
}

/* ---- masked ops ---- */

/* 0 when mask broadcasts to self's shape and self has no internal overlap; else -1 */
static int
mask_check(PtlTensorImpl *self, PtlTensorImpl *mask)
{
    int bdim = self->dim;
    int64_t bshape[PTL_MAX_DIMS];
    memcpy(bshape, self->sizes, sizeof(int64_t) * (size_t)self->dim);
    if (ptl_check_no_internal_overlap(self) < 0) {
        return -1;
    }
    if (broadcast_into(&bdim, bshape, mask->dim, mask->sizes) < 0 || bdim != self->dim ||
        memcmp(bshape, self->sizes, sizeof(int64_t) * (size_t)bdim) != 0) {
        char b1[256], b2[256];
        if (broadcast_into(&bdim, bshape, mask->dim, mask->sizes) < 0) {
            return broadcast_error(self, mask);
        }
        ptl_format_sizes(b1, sizeof(b1), self->dim, self->sizes);
        ptl_format_sizes(b2, sizeof(b2), bdim, bshape);
        return ptl_error_set(PTL_ERR_RUNTIME, "output with shape %s doesn't match the broadcast "
                                              "shape %s",
                             b1, b2);
    }
    return 0;
}

/* Offsets of every element of self and of mask broadcast to self (in-place: mask must
 * broadcast to self's shape). */
static int
mask_walk(PtlTensorImpl *self, PtlTensorImpl *mask, int64_t **soff, int64_t **moff)
{
    int64_t mst[PTL_MAX_DIMS];
    if (mask_check(self, mask) < 0) {
        return -1;
    }
    expanded_strides(mask, self->dim, self->sizes, mst);
    if ((*soff = walk_offsets(self->dim, self->sizes, self->strides)) == NULL) {
        return -1;
    }
    if ((*moff = walk_offsets(self->dim, self->sizes, mst)) == NULL) {
        free(*soff);
        return -1;
    }
    return 0;
}

/* A new contiguous tensor of self's dtype, of the shape of self broadcast against mask. */
static PtlTensorImpl *
broadcast_empty(PtlTensorImpl *self, PtlTensorImpl *mask)
{
    int bdim = self->dim;
    int64_t bshape[PTL_MAX_DIMS];
    memcpy(bshape, self->sizes, sizeof(int64_t) * (size_t)self->dim);
    if (broadcast_into(&bdim, bshape, mask->dim, mask->sizes) < 0) {
        broadcast_error(mask, self);
        return NULL;
    }
    return ptl_empty(bdim, bshape, self->dtype, self->device);
}

/* self broadcast against mask, as a new contiguous tensor (masked_scatter's functional form). */
static PtlTensorImpl *
broadcast_copy(PtlTensorImpl *self, PtlTensorImpl *mask)
{
    PtlTensorImpl *out = broadcast_empty(self, mask);
    if (out != NULL && ptl_copy_into(out, self) < 0) {
        PTL_CLEAR(out);
    }
    return out;
}

/* out = mask ? *extra : self, by element size: [*] out, self, mask (bool) */
#define DEFINE_MASKED_FILL_LOOP(T, SZ)                                                    \
    static void                                                                           \
    masked_fill_loop_##SZ(char **d, const int64_t *s, int64_t n, const void *extra)       \
    {                                                                                     \
        const T v = *(const T *)extra;                                                    \
        if (s[0] == SZ && s[1] == SZ && s[2] == 1) {                                      \
            T *o = (T *)d[0];                                                             \
            const T *a = (const T *)d[1];                                                 \
            const uint8_t *m = (const uint8_t *)d[2];                                     \
            for (int64_t i = 0; i < n; i++) {                                             \
                T take = (T)0 - (T)(m[i] != 0);   /* all ones or zero: no branch */       \
                o[i] = (T)((v & take) | (a[i] & (T)~take));                               \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                 \
            T x = *(const T *)(d[1] + i * s[1]);                                          \
            *(T *)(d[0] + i * s[0]) = *(const uint8_t *)(d[2] + i * s[2]) ? v : x;        \
        }                                                                                 \
    }
DEFINE_MASKED_FILL_LOOP(uint8_t, 1)
DEFINE_MASKED_FILL_LOOP(uint16_t, 2)
DEFINE_MASKED_FILL_LOOP(uint32_t, 4)
DEFINE_MASKED_FILL_LOOP(uint64_t, 8)
#undef DEFINE_MASKED_FILL_LOOP

/* masked_fill[_](Tensor self, Tensor mask, Scalar|Tensor value) */
static int
masked_fill_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *mask = s[1].u.t, *out = NULL, *val = NULL;
    PtlLoop loop;
    if (mask->dtype != PTL_DTYPE_BOOL) {
        return ptl_error_set(PTL_ERR_RUNTIME, "masked_fill_ only supports boolean masks, but got "
                             "mask with dtype %s", mask->dtype == PTL_DTYPE_UINT8 ?
                             "unsigned char" : ptl_dtype_name(mask->dtype));
    }
    if (self->device.type == PTL_DEVICE_CUDA && mask->device.type != PTL_DEVICE_CUDA) {
        return ptl_error_set(PTL_ERR_RUNTIME, "expected self and mask to be on the same device, "
                             "but got mask on cpu and self on cuda:%d", self->device.index);
    }
    if ((val = value_of(&s[2], self->dtype, "masked_fill_")) == NULL) {
        return -1;
    }
    out = op->schema.inplace ? (ptl_incref(self), self) : broadcast_empty(self, mask);
    if (out == NULL || mask_check(out, mask) < 0) {
        goto error;
    }
    /* one elementwise pass (the functional form reads self as it writes out) */
    PtlIterConfig cfg = ptl_iter_config();
    PtlTensorIter it;
    cfg.out = out;
    cfg.is_inplace = op->schema.inplace;
    cfg.ninputs = 2;
    cfg.inputs[0] = self;
    cfg.inputs[1] = mask;
    cfg.no_promote = 2u;
    if (ptl_iter_build(&it, &cfg) < 0) {
        goto error;
    }
    switch (ptl_tensor_itemsize(out)) {
    case 1: loop = masked_fill_loop_1; break;
    case 2: loop = masked_fill_loop_2; break;
    case 4: loop = masked_fill_loop_4; break;
    case 8: loop = masked_fill_loop_8; break;
    default: loop = masked_fill_loop_16; break;
    }
    static const int order[3] = {2, -1, 1};   /* mask ? value : self */
    if ((index_on_device(out) ? index_select_device(&it, PTL_DEVICE_SEL_WHERE, order, val)
                               : ptl_iter_run(&it, loop, ptl_tensor_data(val))) < 0) {
        ptl_iter_release(&it);
        goto error;
    }
    PtlTensorImpl *res = ptl_iter_finish(&it);   /* out itself, or NULL */
    if (res == NULL) {
        goto error;
    }
    ptl_decref(res);
    ptl_decref(val);
    ptl_tensor_bump_version(out);
    s[0] = ptl_iv_tensor(out);
    return 0;
error:
    ptl_decref(val);
    ptl_xdecref(out);
    return -1;
}

/* masked_scatter[_](Tensor self, Tensor mask, Tensor source): the masked positions of self,
 * in row-major order, take source's leading elements */
static int
masked_scatter_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *mask = s[1].u.t, *src = s[2].u.t, *out = NULL;
    int64_t *soff = NULL, *moff = NULL, *roff = NULL, count = 0;
    if (mask->dtype != PTL_DTYPE_BOOL) {
        return ptl_error_set(PTL_ERR_RUNTIME, "masked_scatter_ only supports boolean masks, but "
                             "got mask with dtype %s", ptl_dtype_legacy_name(mask->dtype));
    }
    if (src->dtype != self->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME, "masked_scatter: expected self and source to have "
                             "same dtypes but got%s and %s", ptl_dtype_legacy_name(self->dtype),
                             ptl_dtype_legacy_name(src->dtype));
    }
    out = op->schema.inplace ? (ptl_incref(self), self) : broadcast_copy(self, mask);
    if (out != NULL && index_on_device(out)) {   /* index_device.c */
        if (mask_check(out, mask) < 0 || index_masked_scatter_device(out, mask, src) < 0) {
            goto error;
        }
        ptl_tensor_bump_version(out);
        s[0] = ptl_iv_tensor(out);
        return 0;
    }
    if (out == NULL || mask_walk(out, mask, &soff, &moff) < 0) {
        goto error;
    }
    const char *m = ptl_tensor_data(mask);
    for (int64_t i = 0; i < out->numel; i++) {
        count += m[moff[i]] != 0;
    }
    if (count > src->numel) {
        ptl_error_set(PTL_ERR_RUNTIME, "Number of elements of source < number of ones in mask");
        goto error;
    }
    if ((roff = walk_offsets(src->dim, src->sizes, src->strides)) == NULL) {
        goto error;
    }
    size_t item = ptl_tensor_itemsize(out);
    char *dst = ptl_tensor_data(out);
    const char *sp = ptl_tensor_data(src);
    for (int64_t i = 0, k = 0; i < out->numel; i++) {
        if (m[moff[i]]) {
            copy_elem(dst + soff[i] * (int64_t)item, sp + roff[k++] * (int64_t)item, item);
        }
    }
    free(soff);
    free(moff);
    free(roff);
    ptl_tensor_bump_version(out);
    s[0] = ptl_iv_tensor(out);
    return 0;
error:
    free(soff);
    free(moff);
    ptl_xdecref(out);
    return -1;
}

/* masked_select(Tensor self, Tensor mask): 1-D, the elements of broadcast(self, mask) where
 * mask is true.  Composite: index(self', [mask']) so autograd sees index. */
static int
masked_select_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *mask = s[1].u.t, *se = NULL, *me = NULL, *r = NULL;
    int bdim = self->dim;
    int64_t bshape[PTL_MAX_DIMS];
    PtlIValue a[3];
    if (mask->dtype != PTL_DTYPE_BOOL) {
        return ptl_error_set(PTL_ERR_RUNTIME, "masked_select: expected BoolTensor for mask");
    }
    memcpy(bshape, self->sizes, sizeof(int64_t) * (size_t)self->dim);
    if (broadcast_into(&bdim, bshape, mask->dim, mask->sizes) < 0) {
        return broadcast_error(mask, self);
    }
    int64_t flat = 1;
    for (int d = 0; d < bdim; d++) {
        flat *= bshape[d];
    }
    a[0] = ptl_iv_tensor(self);
    a[1] = ptl_iv_intlist(bshape, bdim);
    a[2] = ptl_iv_bool(0);
    if ((se = ptl_call_tensor(PTL_OP_expand, a)) == NULL) {
        goto done;
    }
    a[0] = ptl_iv_tensor(mask);
    a[2] = ptl_iv_bool(0);
    if ((me = ptl_call_tensor(PTL_OP_expand, a)) == NULL) {
        goto done;
    }
    if (bdim == 0) {
        /* a 0-dim pair selects from its 1-element reshape */
        PtlTensorImpl *t;
        a[1] = ptl_iv_intlist(&flat, 1);
        a[0] = ptl_iv_tensor(se);
        t = ptl_call_tensor(PTL_OP_reshape, a);
        ptl_decref(se);
        if ((se = t) == NULL) {
            goto done;
        }
        a[0] = ptl_iv_tensor(me);
        t = ptl_call_tensor(PTL_OP_reshape, a);
        ptl_decref(me);
        if ((me = t) == NULL) {
            goto done;
        }
    }
    PtlTensorImpl *list[1] = {me};
    a[0] = ptl_iv_tensor(se);
    a[1] = ptl_iv_tensorlist(list, 1);
    r = ptl_call_tensor(PTL_OP_index_Tensor, a);
done:
    ptl_xdecref(se);
    ptl_xdecref(me);
    if (r == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(r);
    return 0;
}

static const PtlKernelReg index_cpu_kernels[] = {
    {PTL_OP_index_Tensor, PTL_KEY_CPU, index_cpu},
    {PTL_OP_index_put_, PTL_KEY_CPU, index_put_cpu},
    {PTL_OP_index_put, PTL_KEY_CPU, index_put_cpu},
    {PTL_OP_index_select, PTL_KEY_CPU, index_select_cpu},
    {PTL_OP_index_select_out, PTL_KEY_CPU, index_select_cpu},
    {PTL_OP_index_add_, PTL_KEY_CPU, index_add_copy_cpu},
    {PTL_OP_index_add, PTL_KEY_CPU, index_add_copy_cpu},
    {PTL_OP_index_copy_, PTL_KEY_CPU, index_add_copy_cpu},
    {PTL_OP_index_copy, PTL_KEY_CPU, index_add_copy_cpu},
    {PTL_OP_index_fill__int_Tensor, PTL_KEY_CPU, index_fill_cpu},
    {PTL_OP_index_fill__int_Scalar, PTL_KEY_CPU, index_fill_cpu},
    {PTL_OP_index_fill_int_Tensor, PTL_KEY_CPU, index_fill_cpu},
    {PTL_OP_index_fill_int_Scalar, PTL_KEY_CPU, index_fill_cpu},
    {PTL_OP_masked_fill_Tensor, PTL_KEY_CPU, masked_fill_cpu},
    {PTL_OP_masked_fill_Scalar, PTL_KEY_CPU, masked_fill_cpu},
    {PTL_OP_masked_fill__Tensor, PTL_KEY_CPU, masked_fill_cpu},
    {PTL_OP_masked_fill__Scalar, PTL_KEY_CPU, masked_fill_cpu},
    {PTL_OP_masked_select, PTL_KEY_COMPOSITE_IMPLICIT, masked_select_composite},
    {PTL_OP_masked_scatter_, PTL_KEY_CPU, masked_scatter_cpu},
    {PTL_OP_masked_scatter, PTL_KEY_CPU, masked_scatter_cpu},
    {PTL_OP_nonzero, PTL_KEY_CPU, nonzero_cpu},
    {PTL_OP_argwhere, PTL_KEY_COMPOSITE_IMPLICIT, argwhere_composite},
    {PTL_OP_where, PTL_KEY_COMPOSITE_IMPLICIT, where_composite},
};
PTL_DEFINE_REGISTER(index_cpu_kernels)
