/* sparse.c -- sparse COO tensors: construction, coalesce, to_dense / to_sparse, sparse_mask,
 * sparse @ dense products and the pointwise ops that keep the layout.  Mirrors
 * ATen/native/sparse/SparseTensor.cpp, SparseTensorMath.cpp and SparseTensorImpl.cpp.
 *
 * A sparse tensor is a TensorImpl with a PtlSparseMeta (Note [Sparse tensors] in
 * c10/tensor_impl.h).  Its indices are stored contiguous; its values too.  The tensors a
 * sparse tensor holds are aliases that carry no autograd history, so handing them out
 * (_values) never touches the tensors a user passed in.  The arithmetic runs through
 * dispatcher ops on the values (index_add_, index_select, mul, cat), so every dtype the dense
 * kernels take works here too.  Kernels register at SparseCPU; sparse_coo_tensor, whose
 * arguments are dense, registers at CPU.  The SparseCPU fallback raises PyTorch's "Could
 * not run ..." for every other operator. */
#include <stdlib.h>
#include <string.h>

#include "../../c10/error.h"
#include "../resize_output.h"
#include "native.h"

static PtlTensorImpl *
call1(PtlOpId id, PtlTensorImpl *a)
{
    PtlIValue v[1] = {ptl_iv_tensor(a)};
    return ptl_call_k(id, 1, v);
}

static PtlTensorImpl *
call2(PtlOpId id, PtlTensorImpl *a, PtlTensorImpl *b)
{
    PtlIValue v[2] = {ptl_iv_tensor(a), ptl_iv_tensor(b)};
    return ptl_call_k(id, 2, v);
}

/* An alias of t without autograd history, contiguous (new ref). */
static PtlTensorImpl *
plain(PtlTensorImpl *t)
{
    PtlTensorImpl *c = call1(PTL_OP_contiguous, t), *a;
    if (c == NULL) {
        return NULL;
    }
    a = ptl_tensor_impl_alias(c);
    ptl_decref(c);
    return a;
}

/* A sparse tensor of these sizes over indices and values (borrowed; stored as plain
 * aliases).  New ref. */
static PtlTensorImpl *
sparse_new(int dim, const int64_t *sizes, int sparse_dim, PtlTensorImpl *indices,
           PtlTensorImpl *values, int coalesced)
{
    PtlTensorImpl *i = plain(indices), *v = i ? plain(values) : NULL, *r = NULL;
    if (v != NULL) {
        r = ptl_sparse_tensor_impl_new(dim, sizes, sparse_dim, i, v, coalesced);
    }
    ptl_xdecref(i);
    ptl_xdecref(v);
    return r;
}

/* Returns a sparse tensor with t's indices and sizes and new values (stolen). */
static int
with_values(PtlIValue *s, PtlTensorImpl *t, PtlTensorImpl *values)
{
    if (values == NULL) {
        return -1;
    }
    PtlTensorImpl *r = sparse_new(t->dim, t->sizes, t->sparse->sparse_dim, t->sparse->indices,
                                  values, t->sparse->coalesced);
    ptl_decref(values);
    if (r == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(r);
    return 0;
}

static int64_t
nnz_of(const PtlTensorImpl *t)
{
    return t->sparse->indices->sizes[1];
}

/* A new 1-D int64 tensor of n elements (uninitialised). */
static PtlTensorImpl *
new_index(int64_t n)
{
    return ptl_empty(1, &n, PTL_DTYPE_INT64, (PtlDevice){PTL_DEVICE_CPU, 0});
}

/* The row-major position of every entry among the sparse dimensions (new 1-D int64). */
static PtlTensorImpl *
linear_index(const PtlTensorImpl *t)
{
    int64_t nnz = nnz_of(t), sd = t->sparse->sparse_dim;
    const int64_t *idx = (const int64_t *)ptl_tensor_data(t->sparse->indices);
    PtlTensorImpl *lin = new_index(nnz);
    if (lin == NULL) {
        return NULL;
    }
    int64_t *out = (int64_t *)ptl_tensor_data(lin);
    for (int64_t k = 0; k < nnz; k++) {
        int64_t p = 0;
        for (int64_t d = 0; d < sd; d++) {
            p = p * t->sizes[d] + idx[d * nnz + k];
        }
        out[k] = p;
    }
    return lin;
}

/* t (dense, contiguous) viewed as [prod(sizes[0..sd)), *sizes[sd..)] (new ref). */
static PtlTensorImpl *
flat_view(PtlTensorImpl *t, int sd)
{
    int64_t sizes[PTL_MAX_DIMS + 1], rows = 1;
    for (int d = 0; d < sd; d++) {
        rows *= t->sizes[d];
    }
    sizes[0] = rows;
    for (int d = sd; d < t->dim; d++) {
        sizes[d - sd + 1] = t->sizes[d];
    }
    return ptl_tensor_impl_view(t, t->dim - sd + 1, sizes, NULL, t->storage_offset);
}

/* Row d of a [sd, nnz] indices tensor as a 1-D view (new ref). */
static PtlTensorImpl *
index_row(PtlTensorImpl *indices, int64_t d)
{
    int64_t n = indices->sizes[1], one = 1;
    return ptl_tensor_impl_view(indices, 1, &n, &one, indices->storage_offset + d * n);
}

/* dst.index_add_(0, index, src) (dst, index, src borrowed); 0 or -1. */
static int
index_add_rows(PtlTensorImpl *dst, PtlTensorImpl *index, PtlTensorImpl *src)
{
    PtlIValue v[4] = {ptl_iv_tensor(dst), ptl_iv_int(0), ptl_iv_tensor(index),
                      ptl_iv_tensor(src)};
    PtlTensorImpl *r = ptl_call_k(PTL_OP_index_add_, 4, v);
    ptl_xdecref(r);
    return r ? 0 : -1;
}

static PtlTensorImpl *
index_select_rows(PtlTensorImpl *t, PtlTensorImpl *index)
{
    PtlIValue v[3] = {ptl_iv_tensor(t), ptl_iv_int(0), ptl_iv_tensor(index)};
    return ptl_call_k(PTL_OP_index_select, 3, v);
}

static PtlTensorImpl *
zeros(int dim, const int64_t *sizes, PtlDtype dt)
{
    PtlIValue v[2] = {ptl_iv_intlist(sizes, dim), ptl_iv_dtype(dt)};
    return ptl_call_k(PTL_OP_zeros, 2, v);
}

static PtlTensorImpl *
cast(PtlTensorImpl *t, PtlDtype dt)
{
    PtlIValue v[2] = {ptl_iv_tensor(t), ptl_iv_dtype(dt)};
    return ptl_call_k(PTL_OP__to_copy, 2, v);
}

/* ---- construction ---- */

/* The checks sparse_coo_tensor makes before it infers or checks the size. */
static int
check_coo_args(PtlTensorImpl *indices, PtlTensorImpl *values)
{
    char buf[256];
    if (indices->dim != 2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "indices must be sparse_dim x nnz, but got: %s",
                             ptl_format_sizes(buf, sizeof(buf), indices->dim, indices->sizes));
    }
    if (values->dim == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "values must have at least one dimension");
    }
    if (indices->sizes[1] != values->sizes[0]) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "indices and values must have same nnz, but got nnz from indices: "
                             "%lld, nnz from values: %lld",
                             (long long)indices->sizes[1], (long long)values->sizes[0]);
    }
    return 0;
}

/* check_invariants=True: every index lies inside its dimension. */
static int
check_bounds(PtlTensorImpl *t)
{
    const int64_t *idx = (const int64_t *)ptl_tensor_data(t->sparse->indices);
    int64_t nnz = nnz_of(t);
    for (int64_t d = 0; d < t->sparse->sparse_dim; d++) {
        for (int64_t k = 0; k < nnz; k++) {
            int64_t v = idx[d * nnz + k];
            if (v < 0) {
                return ptl_error_set(PTL_ERR_RUNTIME, "found negative index %lld for dim %lld",
                                     (long long)v, (long long)d);
            }
            if (v >= t->sizes[d]) {
                return ptl_error_set(PTL_ERR_RUNTIME,
                                     "size is inconsistent with indices: for dim %lld, size is "
                                     "%lld but found index %lld",
                                     (long long)d, (long long)t->sizes[d], (long long)v);
            }
        }
    }
    return 0;
}

/* sparse_coo_tensor.indices(Tensor indices, Tensor values, *, dtype, layout, device,
 * pin_memory, bool? check_invariants, bool? is_coalesced) and .indices_size(indices, values,
 * int[] size, *, ...): indices [sparse_dim, nnz] (int64), values [nnz, *dense sizes] ->
 * sparse tensor.  Without a size, each sparse size is one past the largest index (0 without
 * entries). */
static int
sparse_coo_tensor_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *indices = s[0].u.t, *values = s[1].u.t, *v = NULL, *ic = NULL, *r = NULL;
    /* the size argument, and the shift it gives the keyword arguments after it */
    const PtlIValue *size = op->id == PTL_OP_sparse_coo_tensor_indices_size ? &s[2] : NULL;
    const PtlIValue *kw = s + (size != NULL);
    int64_t sizes[PTL_MAX_DIMS];
    if (check_coo_args(indices, values) < 0) {
        return -1;
    }
    int64_t sd = indices->sizes[0], nnz = indices->sizes[1], dd = values->dim - 1;
    if (size != NULL && size->u.il.n != sd + dd) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) "
                             "= %lld, sparse_dim = %lld, dense_dim = %lld",
                             (long long)size->u.il.n, (long long)sd, (long long)dd);
    }
    if (sd + dd > PTL_MAX_DIMS) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "pytorchlite supports tensors of at most %d dimensions, got %lld",
                             PTL_MAX_DIMS, (long long)(sd + dd));
    }
    /* indices of another dtype are converted, as torch does */
    ic = indices->dtype == PTL_DTYPE_INT64 ? call1(PTL_OP_contiguous, indices)
                                           : cast(indices, PTL_DTYPE_INT64);
    if (ic == NULL) {
        return -1;
    }
    if (size != NULL) {
        memcpy(sizes, size->u.il.data, sizeof(int64_t) * (size_t)(sd + dd));
    }
    else {
        const int64_t *idx = (const int64_t *)ptl_tensor_data(ic);
        for (int64_t d = 0; d < sd; d++) {
            sizes[d] = 0;
            for (int64_t k = 0; k < nnz; k++) {
                sizes[d] = idx[d * nnz + k] + 1 > sizes[d] ? idx[d * nnz + k] + 1 : sizes[d];
            }
        }
        memcpy(sizes + sd, values->sizes + 1, sizeof(int64_t) * (size_t)dd);
    }
    int64_t numel, want[PTL_MAX_DIMS + 1] = {nnz};
    if (ptl_check_sizes((int)(sd + dd), sizes, &numel) < 0) {
        goto error;
    }
    memcpy(want + 1, sizes + sd, sizeof(int64_t) * (size_t)dd);
    if (memcmp(want + 1, values->sizes + 1, sizeof(int64_t) * (size_t)dd) != 0) {
        char a[256], b[256];
        ptl_error_set(PTL_ERR_RUNTIME, "values has incorrect size, expected %s, got %s",
                      ptl_format_sizes(a, sizeof(a), (int)dd + 1, want),
                      ptl_format_sizes(b, sizeof(b), values->dim, values->sizes));
        goto error;
    }
    v = kw[2].tag == PTL_IV_DTYPE ? cast(values, kw[2].u.dtype) : (ptl_incref(values), values);
    if (v == NULL) {
        goto error;
    }
    int coalesced = kw[7].tag == PTL_IV_BOOL && kw[7].u.b;
    r = sparse_new((int)(sd + dd), sizes, (int)sd, ic, v, coalesced || nnz < 2);
    if (r == NULL || (kw[6].tag == PTL_IV_BOOL && kw[6].u.b && check_bounds(r) < 0)) {
        goto error;
    }
    ptl_decref(ic);
    ptl_decref(v);
    s[0] = ptl_iv_tensor(r);
    return 0;
error:
    ptl_xdecref(ic);
    ptl_xdecref(v);
    ptl_xdecref(r);
    return -1;
}

/* ---- accessors ---- */

/* _indices(Tensor self) / _values(Tensor self): aliases of what self holds; indices() and
 * values() first insist that self is coalesced, as PyTorch does. */
static int
indices_sparse(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *t = s[0].u.t;
    int vals = op->id == PTL_OP__values || op->id == PTL_OP_values;
    if ((op->id == PTL_OP_indices || op->id == PTL_OP_values) && !t->sparse->coalesced) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Cannot get %s on an uncoalesced tensor, please call .coalesce() "
                             "first",
                             vals ? "values" : "indices");
    }
    PtlTensorImpl *part = vals ? t->sparse->values : t->sparse->indices;
    return ptl_kernel_return(s, ptl_tensor_impl_alias(part));
}

/* ---- coalesce ---- */

typedef struct Entry {
    int64_t key;
    int64_t pos;
} Entry;

static int
entry_cmp(const void *a, const void *b)
{
    const Entry *x = a, *y = b;
    if (x->key != y->key) {
        return x->key < y->key ? -1 : 1;
    }
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* The coalesced form of t: entries sorted by position, duplicates summed (new ref; an
 * alias when t is coalesced). */
static PtlTensorImpl *
coalesce_impl(PtlTensorImpl *t)
{
    int64_t nnz = nnz_of(t), sd = t->sparse->sparse_dim, n = 0;
    PtlTensorImpl *lin = NULL, *group = NULL, *ind = NULL, *vals = NULL, *r = NULL;
    Entry *e = NULL;
    if (t->sparse->coalesced) {
        return ptl_tensor_impl_alias(t);
    }
    if ((lin = linear_index(t)) == NULL || (group = new_index(nnz)) == NULL) {
        goto done;
    }
    if ((e = malloc(sizeof(Entry) * (size_t)(nnz > 0 ? nnz : 1))) == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "coalesce: out of memory");
        goto done;
    }
    const int64_t *key = (const int64_t *)ptl_tensor_data(lin);
    int64_t *gid = (int64_t *)ptl_tensor_data(group);
    for (int64_t k = 0; k < nnz; k++) {
        e[k] = (Entry){key[k], k};
    }
    qsort(e, (size_t)nnz, sizeof(Entry), entry_cmp);
    for (int64_t k = 0; k < nnz; k++) {
        n += k == 0 || e[k].key != e[k - 1].key;
        gid[e[k].pos] = n - 1;
    }
    int64_t isz[2] = {sd, n};
    if ((ind = ptl_empty(2, isz, PTL_DTYPE_INT64, t->device)) == NULL) {
        goto done;
    }
    const int64_t *src = (const int64_t *)ptl_tensor_data(t->sparse->indices);
    int64_t *dst = (int64_t *)ptl_tensor_data(ind);
    for (int64_t k = 0; k < nnz; k++) {
        if (k == 0 || e[k].key != e[k - 1].key) {
            for (int64_t d = 0; d < sd; d++) {
                dst[d * n + gid[e[k].pos]] = src[d * nnz + e[k].pos];
            }
        }
    }
    PtlTensorImpl *v = t->sparse->values;
    int64_t vsz[PTL_MAX_DIMS];
    memcpy(vsz, v->sizes, sizeof(int64_t) * (size_t)v->dim);
    vsz[0] = n;
    if ((vals = zeros(v->dim, vsz, v->dtype)) == NULL || index_add_rows(vals, group, v) < 0) {
        goto done;
    }
    r = sparse_new(t->dim, t->sizes, (int)sd, ind, vals, 1);
done:
    free(e);
    ptl_xdecref(lin);
    ptl_xdecref(group);
    ptl_xdecref(ind);
    ptl_xdecref(vals);
    return r;
}

/* coalesce(Tensor self) -> Tensor: an alias of self when it is coalesced already. */
static int
coalesce_sparse(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    return ptl_kernel_return(s, coalesce_impl(s[0].u.t));
}

/* coalesce of a strided tensor: PyTorch's error. */
static int
coalesce_strided(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    (void)s;
    return ptl_error_set(PTL_ERR_RUNTIME,
                         "coalesce expected sparse coordinate tensor layout but got Strided");
}

/* ---- layout conversions ---- */

/* The dense tensor t stands for (new ref). */
static PtlTensorImpl *
to_dense_impl(PtlTensorImpl *t)
{
    PtlTensorImpl *dense = zeros(t->dim, t->sizes, t->dtype), *flat = NULL, *lin = NULL;
    int rc = -1;
    if (dense != NULL && (flat = flat_view(dense, t->sparse->sparse_dim)) != NULL &&
        (lin = linear_index(t)) != NULL) {
        rc = index_add_rows(flat, lin, t->sparse->values);
    }
    ptl_xdecref(flat);
    ptl_xdecref(lin);
    if (rc < 0) {
        PTL_CLEAR(dense);
    }
    return dense;
}

/* to_dense(Tensor self, ScalarType? dtype=None, *, bool? masked_grad=None) -> Tensor:
 * an alias of a strided self. */
static int
to_dense_kernel(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *t = s[0].u.t, *d;
    d = t->sparse == NULL ? ptl_tensor_impl_alias(t) : to_dense_impl(t);
    if (d != NULL && s[1].tag == PTL_IV_DTYPE && s[1].u.dtype != d->dtype) {
        PtlTensorImpl *c = cast(d, s[1].u.dtype);
        ptl_decref(d);
        d = c;
    }
    return ptl_kernel_return(s, d);
}

/* The rows of the [rows, cols] contiguous data p that hold a nonzero (new 1-D int64); a
 * complex element is nonzero when either of its parts is. */
static PtlTensorImpl *
nonzero_rows(const char *p, int64_t rows, int64_t cols, PtlDtype dt)
{
    if (ptl_dtype_is_complex(dt)) {   /* [rows, 2 * cols] of the parts' dtype */
        dt = ptl_dtype_to_real(dt);
        cols *= 2;
    }
    size_t isz = ptl_dtype_itemsize(dt);
    int64_t n = 0;
    PtlTensorImpl *r = new_index(rows);
    if (r == NULL) {
        return NULL;
    }
    int64_t *out = (int64_t *)ptl_tensor_data(r);
    for (int64_t i = 0; i < rows; i++) {
        for (int64_t j = 0; j < cols; j++) {
            if (ptl_load_double(p + (size_t)(i * cols + j) * isz, dt) != 0.0) {
                out[n++] = i;
                break;
            }
        }
    }
    ptl_tensor_impl_set_sizes(r, 1, &n, NULL);
    return r;
}

/* The sparse tensor with sparse_dim sparse dimensions that the dense t stands for. */
static PtlTensorImpl *
dense_to_sparse(PtlTensorImpl *t, int64_t sd)
{
    PtlTensorImpl *c = NULL, *flat = NULL, *rows = NULL, *ind = NULL, *vals = NULL, *r = NULL;
    int64_t nrows = 1, cols = 1;
    if (sd < 0 || sd > t->dim) {
        ptl_error_set(PTL_ERR_RUNTIME,
                      "dense_to_sparse: sparse_dim argument must be in [0,%d] range, but %lld "
                      "is given",
                      t->dim, (long long)sd);
        return NULL;
    }
    if (sd == 0 && t->dim > 0) {
        ptl_error_set(PTL_ERR_RUNTIME,
                      "dense_to_sparse: sparse_dim argument must be in >0 when self.dim()>0");
        return NULL;
    }
    for (int d = 0; d < t->dim; d++) {
        *(d < sd ? &nrows : &cols) *= t->sizes[d];
    }
    if ((c = call1(PTL_OP_contiguous, t)) == NULL || (flat = flat_view(c, (int)sd)) == NULL ||
        (rows = nonzero_rows(ptl_tensor_data(c), nrows, cols, c->dtype)) == NULL) {
        goto done;
    }
    int64_t n = rows->sizes[0], isz[2] = {sd, n};
    if ((ind = ptl_empty(2, isz, PTL_DTYPE_INT64, t->device)) == NULL) {
        goto done;
    }
    const int64_t *rp = (const int64_t *)ptl_tensor_data(rows);
    int64_t *ip = (int64_t *)ptl_tensor_data(ind);
    for (int64_t k = 0; k < n; k++) {
        int64_t rem = rp[k];
        for (int64_t d = sd - 1; d >= 0; d--) {
            ip[d * n + k] = rem % t->sizes[d];
            rem /= t->sizes[d];
        }
    }
    if ((vals = index_select_rows(flat, rows)) != NULL) {
        r = sparse_new(t->dim, t->sizes, (int)sd, ind, vals, 1);
    }
done:
    ptl_xdecref(c);
    ptl_xdecref(flat);
    ptl_xdecref(rows);
    ptl_xdecref(ind);
    ptl_xdecref(vals);
    return r;
}

/* to_sparse.sparse_dim(Tensor self, int sparse_dim) and to_sparse(Tensor self, *, Layout?
 * layout=None, int[1]? blocksize=None, int? dense_dim=None): a sparse self comes back as
 * an alias when the sparse dimensions agree. */
static int
to_sparse_kernel(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *t = s[0].u.t;
    int64_t sd = op->id == PTL_OP_to_sparse_sparse_dim ? s[1].u.i : t->dim;
    if (t->sparse == NULL) {
        return ptl_kernel_return(s, dense_to_sparse(t, sd));
    }
    if (op->id == PTL_OP_to_sparse_sparse_dim && sd != t->sparse->sparse_dim) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "to_sparse: conversion from Sparse to Sparse with sparse_dim "
                             "argument !=self.sparse_dim() is not supported");
    }
    return ptl_kernel_return(s, ptl_tensor_impl_alias(t));
}

/* self's entries at mask's (coalesced) indices, as a sparse tensor with mask's pattern
 * (new ref). */
static PtlTensorImpl *
mask_impl(PtlTensorImpl *self, PtlTensorImpl *mask)
{
    PtlTensorImpl *m = NULL, *d = NULL, *flat = NULL, *lin = NULL, *vals = NULL, *r = NULL;
    char a[256], b[256];
    if (mask->sparse == NULL) {
        ptl_error_set(PTL_ERR_RUNTIME, "sparse_mask expects mask to be sparse");
        return NULL;
    }
    if (self->dim != mask->dim ||
        memcmp(self->sizes, mask->sizes, sizeof(int64_t) * (size_t)self->dim) != 0) {
        ptl_error_set(PTL_ERR_RUNTIME,
                      "sparse_mask(): operands have incompatible sizes; self has size %s but "
                      "mask has size %s",
                      ptl_format_sizes(a, sizeof(a), self->dim, self->sizes),
                      ptl_format_sizes(b, sizeof(b), mask->dim, mask->sizes));
        return NULL;
    }
    d = self->sparse ? to_dense_impl(self) : call1(PTL_OP_contiguous, self);
    if (d != NULL && (m = coalesce_impl(mask)) != NULL &&
        (flat = flat_view(d, m->sparse->sparse_dim)) != NULL && (lin = linear_index(m)) != NULL &&
        (vals = index_select_rows(flat, lin)) != NULL) {
        r = sparse_new(m->dim, m->sizes, m->sparse->sparse_dim, m->sparse->indices, vals, 1);
    }
    ptl_xdecref(m);
    ptl_xdecref(d);
    ptl_xdecref(flat);
    ptl_xdecref(lin);
    ptl_xdecref(vals);
    return r;
}

/* sparse_mask(Tensor self, Tensor mask) -> Tensor */
static int
sparse_mask_sparse(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    return ptl_kernel_return(s, mask_impl(s[0].u.t, s[1].u.t));
}

/* ---- products ---- */

/* The checks of a sparse (m, k) @ dense (k, n) product, in torch.sparse.mm's words. */
static int
check_spmm(PtlTensorImpl *a, PtlTensorImpl *b)
{
    if (a->dim != 2 || a->sparse->sparse_dim != 2) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "addmm: matrices expected, got %dD tensor", a->dim);
    }
    if (b->dim != 2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "addmm: matrices expected, got %dD tensor",
                             b->dim);
    }
    if (a->sizes[1] != b->sizes[0]) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "addmm: Argument #3 (dense): Expected dim 0 size %lld, got %lld",
                             (long long)a->sizes[1], (long long)b->sizes[0]);
    }
    if (a->dtype != b->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME, "expected scalar type %s but found %s",
                             ptl_dtype_legacy_name(a->dtype), ptl_dtype_legacy_name(b->dtype));
    }
    return 0;
}

/* sparse a (m, k) @ dense b (k, n) -> dense (m, n): row r of the result gathers
 * v * b[c, :] for every entry (r, c, v) of a. */
static PtlTensorImpl *
spmm(PtlTensorImpl *a, PtlTensorImpl *b)
{
    PtlTensorImpl *out = NULL, *rows = NULL, *cols = NULL, *picked = NULL, *v = NULL;
    PtlTensorImpl *scaled = NULL;
    if (check_spmm(a, b) < 0) {
        return NULL;
    }
    int64_t osz[2] = {a->sizes[0], b->sizes[1]}, vsz[2] = {nnz_of(a), 1};
    PtlIValue vv[2] = {ptl_iv_tensor(a->sparse->values), ptl_iv_intlist(vsz, 2)};
    if ((out = zeros(2, osz, a->dtype)) == NULL ||
        (rows = index_row(a->sparse->indices, 0)) == NULL ||
        (cols = index_row(a->sparse->indices, 1)) == NULL ||
        (picked = index_select_rows(b, cols)) == NULL ||
        (v = ptl_call_k(PTL_OP_reshape, 2, vv)) == NULL ||
        (scaled = call2(PTL_OP_mul_Tensor, picked, v)) == NULL ||
        index_add_rows(out, rows, scaled) < 0) {
        PTL_CLEAR(out);
    }
    ptl_xdecref(rows);
    ptl_xdecref(cols);
    ptl_xdecref(picked);
    ptl_xdecref(v);
    ptl_xdecref(scaled);
    return out;
}

/* A product with at least one sparse side: sparse @ dense directly, dense @ sparse as
 * (s^T @ d^T)^T, sparse @ sparse through the dense right side (new ref). */
static PtlTensorImpl *
product(PtlTensorImpl *a, PtlTensorImpl *b)
{
    PtlTensorImpl *x = NULL, *y = NULL, *p = NULL, *r = NULL;
    if (a->sparse != NULL && b->sparse == NULL) {
        return spmm(a, b);
    }
    if (a->sparse != NULL) {
        if ((x = to_dense_impl(b)) != NULL) {
            r = spmm(a, x);
        }
        ptl_xdecref(x);
        return r;
    }
    if (a->dim != 2) {
        ptl_error_set(PTL_ERR_RUNTIME, "addmm: matrices expected, got %dD tensor", a->dim);
        return NULL;
    }
    if ((x = call1(PTL_OP_t, b)) != NULL && (y = call1(PTL_OP_t, a)) != NULL &&
        (p = spmm(x, y)) != NULL) {
        PtlTensorImpl *pt = call1(PTL_OP_t, p);
        r = pt ? call1(PTL_OP_contiguous, pt) : NULL;
        ptl_xdecref(pt);
    }
    ptl_xdecref(x);
    ptl_xdecref(y);
    ptl_xdecref(p);
    return r;
}

/* mm(Tensor self, Tensor mat2) -> Tensor with a sparse side (torch.sparse.mm, torch.spmm). */
static int
mm_sparse(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    return ptl_kernel_return(s, product(s[0].u.t, s[1].u.t));
}

/* mv(Tensor self, Tensor vec) with a sparse self: (m, k) @ (k,) -> (m,), through the
 * (m, k) @ (k, 1) product. */
static int
mv_sparse(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *a = s[0].u.t, *v = s[1].u.t, *col = NULL, *p = NULL, *r = NULL;
    if (a->sparse == NULL || v->sparse != NULL || v->dim != 1) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "mv: a sparse matrix times a dense vector expected");
    }
    int64_t csz[2] = {v->sizes[0], 1}, m = a->sizes[0];
    PtlIValue cv[2] = {ptl_iv_tensor(v), ptl_iv_intlist(csz, 2)};
    if ((col = ptl_call_k(PTL_OP_reshape, 2, cv)) != NULL && (p = product(a, col)) != NULL) {
        PtlIValue rv[2] = {ptl_iv_tensor(p), ptl_iv_intlist(&m, 1)};
        r = ptl_call_k(PTL_OP_reshape, 2, rv);
    }
    ptl_xdecref(col);
    ptl_xdecref(p);
    return ptl_kernel_return(s, r);
}

/* The dense result r (released) of addmm_ / addmm.out written into their destination d,
 * checked first (ptl_check_output); a new reference to d, or NULL with the error set. */
static PtlTensorImpl *
write_destination(const PtlOperator *op, PtlTensorImpl *d, PtlTensorImpl *r)
{
    int rc = ptl_check_output(d, op->schema.inplace, r->dim, r->sizes, r->dtype);
    if (rc == 0) {
        rc = ptl_copy_into(d, r);
    }
    ptl_decref(r);
    if (rc < 0) {
        return NULL;
    }
    ptl_tensor_bump_version(d);
    ptl_incref(d);
    return d;
}

/* addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1):
 * beta * self + alpha * (mat1 @ mat2) with a sparse side; dense result, also written into
 * the dense self of addmm_ or the out of addmm.out. */
static int
addmm_sparse(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *p = NULL, *d = NULL, *scaled = NULL, *beta = NULL;
    PtlTensorImpl *r = NULL;
    double b = ptl_iv_to_double(&s[3]);
    if ((p = product(s[1].u.t, s[2].u.t)) == NULL) {
        return -1;
    }
    d = self->sparse ? to_dense_impl(self) : (ptl_incref(self), self);
    if (d != NULL && b != 0.0 && (beta = ptl_wrapped_double(b)) != NULL) {
        scaled = call2(PTL_OP_mul_Tensor, d, beta);
    }
    else if (d != NULL && b == 0.0) {
        scaled = call1(PTL_OP_zeros_like, p);
    }
    if (scaled != NULL) {
        PtlIValue v[3] = {ptl_iv_tensor(scaled), ptl_iv_tensor(p), s[4]};
        r = ptl_call_k(PTL_OP_add_Tensor, 3, v);
    }
    ptl_xdecref(p);
    ptl_xdecref(d);
    ptl_xdecref(beta);
    ptl_xdecref(scaled);
    if (r != NULL && ptl_kernel_out(op, s) != NULL) {
        r = write_destination(op, ptl_kernel_out(op, s), r);
    }
    return ptl_kernel_return(s, r);
}

/* ---- pointwise ops that keep the pattern ---- */

static int
check_same_sizes(PtlTensorImpl *a, PtlTensorImpl *b)
{
    char x[256], y[256];
    if (a->dim != b->dim || memcmp(a->sizes, b->sizes, sizeof(int64_t) * (size_t)a->dim)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "add: expected 'self' and 'other' to have same size, but self has "
                             "size %s while other has size %s (FYI: dense-sparse addition does "
                             "not currently support broadcasting)",
                             ptl_format_sizes(x, sizeof(x), a->dim, a->sizes),
                             ptl_format_sizes(y, sizeof(y), b->dim, b->sizes));
    }
    return 0;
}

/* a + alpha * b for two sparse tensors of one shape: the entries of both, coalesced. */
static PtlTensorImpl *
add_sparse_sparse(PtlTensorImpl *a, PtlTensorImpl *b, const PtlIValue *alpha)
{
    PtlTensorImpl *bv = NULL, *alpha_t = NULL, *ind = NULL, *vals = NULL, *u = NULL, *r = NULL;
    if (check_same_sizes(a, b) < 0) {
        return NULL;
    }
    if (a->sparse->sparse_dim != b->sparse->sparse_dim) {
        ptl_error_set(PTL_ERR_RUNTIME,
                      "add: expected 'self' and 'other' to have same sparse dimensions, but "
                      "got %d and %d", a->sparse->sparse_dim, b->sparse->sparse_dim);
        return NULL;
    }
    PtlDtype dt = ptl_promote_types(a->dtype, b->dtype);
    alpha_t = alpha->tag == PTL_IV_DOUBLE ? ptl_wrapped_double(alpha->u.d)
                                          : ptl_wrapped_int(ptl_iv_to_int(alpha));
    PtlTensorImpl *il[2] = {a->sparse->indices, b->sparse->indices};
    PtlIValue ci[2] = {ptl_iv_tensorlist(il, 2), ptl_iv_int(1)};
    if (alpha_t == NULL || (bv = call2(PTL_OP_mul_Tensor, b->sparse->values, alpha_t)) == NULL ||
        (ind = ptl_call_k(PTL_OP_cat, 2, ci)) == NULL) {
        goto done;
    }
    PtlTensorImpl *av = a->sparse->values, *ac = av->dtype == dt ? (ptl_incref(av), av)
                                                                 : cast(av, dt);
    PtlTensorImpl *bc = ac == NULL ? NULL : bv->dtype == dt ? (ptl_incref(bv), bv) : cast(bv, dt);
    if (bc != NULL) {
        PtlTensorImpl *vl[2] = {ac, bc};
        PtlIValue cv[2] = {ptl_iv_tensorlist(vl, 2), ptl_iv_int(0)};
        vals = ptl_call_k(PTL_OP_cat, 2, cv);
    }
    ptl_xdecref(ac);
    ptl_xdecref(bc);
    if (vals != NULL &&
        (u = sparse_new(a->dim, a->sizes, a->sparse->sparse_dim, ind, vals, 0)) != NULL) {
        r = coalesce_impl(u);
    }
done:
    ptl_xdecref(alpha_t);
    ptl_xdecref(bv);
    ptl_xdecref(ind);
    ptl_xdecref(vals);
    ptl_xdecref(u);
    return r;
}

/* add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) with a sparse side: sparse +
 * sparse stays sparse; dense + sparse is dense; sparse + dense is refused, as in PyTorch. */
static int
add_sparse(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *a = s[0].u.t, *b = s[1].u.t, *d = NULL, *r = NULL;
    if (a->sparse != NULL && b->sparse != NULL) {
        return ptl_kernel_return(s, add_sparse_sparse(a, b, &s[2]));
    }
    if (a->sparse != NULL) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "add(sparse, dense) is not supported. Use add(dense, sparse) "
                             "instead.");
    }
    if (check_same_sizes(a, b) < 0 || (d = to_dense_impl(b)) == NULL) {
        return -1;
    }
    PtlIValue v[3] = {ptl_iv_tensor(a), ptl_iv_tensor(d), s[2]};
    r = ptl_call_k(PTL_OP_add_Tensor, 3, v);
    ptl_decref(d);
    return ptl_kernel_return(s, r);
}

/* add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) with a sparse side: a sparse
 * self takes the sum's indices and values (what AccumulateGrad does with sparse grads). */
static int
add_inplace_sparse(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *a = s[0].u.t, *b = s[1].u.t, *r;
    if (a->sparse == NULL) {
        PtlTensorImpl *d = check_same_sizes(a, b) < 0 ? NULL : to_dense_impl(b);
        if (d == NULL) {
            return -1;
        }
        PtlIValue v[3] = {ptl_iv_tensor(a), ptl_iv_tensor(d), s[2]};
        r = ptl_call_k(PTL_OP_add__Tensor, 3, v);
        ptl_decref(d);
        return ptl_kernel_return(s, r);
    }
    if (b->sparse == NULL) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "add(sparse, dense) is not supported. Use add(dense, sparse) "
                             "instead.");
    }
    if ((r = add_sparse_sparse(a, b, &s[2])) == NULL) {
        return -1;
    }
    if (r->dtype != a->dtype) {
        ptl_decref(r);
        return ptl_error_set(PTL_ERR_RUNTIME, "result type %s can't be cast to the desired "
                             "output type %s", ptl_dtype_legacy_name(r->dtype),
                             ptl_dtype_legacy_name(a->dtype));
    }
    PtlSparseMeta *m = a->sparse;
    a->sparse = r->sparse;
    r->sparse = m;
    ptl_decref(r);
    ptl_tensor_bump_version(a);
    ptl_incref(a);
    return ptl_kernel_return(s, a);
}

/* mul.Tensor / div.Tensor of a sparse tensor and a 0-dim dense one (a Python number): the
 * values scaled; mul by a dense tensor of the same shape keeps the sparse pattern. */
static int
scale_sparse(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *a = s[0].u.t, *b = s[1].u.t, *c = NULL, *m = NULL, *v = NULL;
    int div = op->id == PTL_OP_div_Tensor;
    if (!div && a->sparse == NULL) {   /* number * sparse */
        PtlTensorImpl *t = a;
        a = b;
        b = t;
    }
    if (a->sparse != NULL && b->sparse == NULL && b->dim == 0) {
        return with_values(s, a, call2(op->id, a->sparse->values, b));
    }
    if (!div && a->sparse != NULL && b->sparse == NULL) {
        if ((c = coalesce_impl(a)) != NULL && (m = mask_impl(b, c)) != NULL) {
            v = call2(PTL_OP_mul_Tensor, c->sparse->values, m->sparse->values);
        }
        int rc = with_values(s, c ? c : a, v);
        ptl_xdecref(c);
        ptl_xdecref(m);
        return rc;
    }
    return ptl_error_set(PTL_ERR_RUNTIME,
                         "%s: a sparse tensor can be %s only by a number, a 0-dim tensor%s",
                         div ? "div" : "mul", div ? "divided" : "multiplied",
                         div ? "" : " or a dense tensor of its shape");
}

/* neg(Tensor self) -> Tensor */
static int
neg_sparse(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    return with_values(s, s[0].u.t, call1(PTL_OP_neg, s[0].u.t->sparse->values));
}

/* clone(Tensor self, *, MemoryFormat? memory_format=None): new indices and values. */
static int
clone_sparse(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *t = s[0].u.t, *i = call1(PTL_OP_clone, t->sparse->indices);
    PtlTensorImpl *v = i ? call1(PTL_OP_clone, t->sparse->values) : NULL, *r = NULL;
    if (v != NULL) {
        r = sparse_new(t->dim, t->sizes, t->sparse->sparse_dim, i, v, t->sparse->coalesced);
    }
    ptl_xdecref(i);
    ptl_xdecref(v);
    return ptl_kernel_return(s, r);
}

/* detach(Tensor self): the same indices and values under a new tensor without history. */
static int
detach_sparse(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    return ptl_kernel_return(s, ptl_tensor_impl_alias(s[0].u.t));
}

/* _to_copy(Tensor self, *, dtype, layout, device, pin_memory, non_blocking, memory_format):
 * the values converted (dtype); sparse tensors live on the CPU. */
static int
to_copy_sparse(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *t = s[0].u.t;
    if (s[3].tag == PTL_IV_DEVICE && s[3].u.device.type != PTL_DEVICE_CPU) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED,
                             "sparse tensors are only supported on the CPU in pytorchlite");
    }
    PtlDtype dt = s[1].tag == PTL_IV_DTYPE ? s[1].u.dtype : t->dtype;
    return with_values(s, t, cast(t->sparse->values, dt));
}

/* t(Tensor self) and transpose.int(Tensor self, int dim0, int dim1): two sparse dimensions
 * swap their index rows, two dense ones transpose the values. */
static int
transpose_sparse(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *t = s[0].u.t, *ind = NULL, *vals = NULL, *r = NULL;
    int64_t d0 = 0, d1 = t->dim > 1 ? 1 : 0, sd = t->sparse->sparse_dim;
    if (op->id == PTL_OP_t && t->dim > 2) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "t() expects a tensor with <= 2 sparse and 0 dense dimensions, but "
                             "got %lld sparse and %d dense dimensions",
                             (long long)sd, t->sparse->dense_dim);
    }
    if (op->id == PTL_OP_transpose_int) {
        d0 = s[1].u.i;
        d1 = s[2].u.i;
        if (ptl_wrap_dim(&d0, t->dim) < 0 || ptl_wrap_dim(&d1, t->dim) < 0) {
            return -1;
        }
    }
    if ((d0 < sd) != (d1 < sd)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "transpose(): can't transpose a sparse dimension with a dense one");
    }
    int64_t sizes[PTL_MAX_DIMS];
    memcpy(sizes, t->sizes, sizeof(int64_t) * (size_t)t->dim);
    sizes[d0] = t->sizes[d1];
    sizes[d1] = t->sizes[d0];
    if (d0 < sd) {
        if ((ind = call1(PTL_OP_clone, t->sparse->indices)) == NULL) {
            return -1;
        }
        int64_t n = nnz_of(t), *p = (int64_t *)ptl_tensor_data(ind);
        for (int64_t k = 0; k < n && d0 != d1; k++) {
            int64_t x = p[d0 * n + k];
            p[d0 * n + k] = p[d1 * n + k];
            p[d1 * n + k] = x;
        }
        r = sparse_new(t->dim, sizes, (int)sd, ind, t->sparse->values, d0 == d1 &&
                       t->sparse->coalesced);
    }
    else {
        PtlIValue v[3] = {ptl_iv_tensor(t->sparse->values), ptl_iv_int(d0 - sd + 1),
                          ptl_iv_int(d1 - sd + 1)};
        if ((vals = ptl_call_k(PTL_OP_transpose_int, 3, v)) != NULL) {
            r = sparse_new(t->dim, sizes, (int)sd, t->sparse->indices, vals,
                           t->sparse->coalesced);
        }
    }
    ptl_xdecref(ind);
    ptl_xdecref(vals);
    return ptl_kernel_return(s, r);
}

/* sum(Tensor self, *, ScalarType? dtype=None): the sum of the values (torch.sparse.sum). */
static int
sum_sparse(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlIValue v[2] = {ptl_iv_tensor(s[0].u.t->sparse->values), s[1]};
    return ptl_kernel_return(s, ptl_call_k(PTL_OP_sum, 2, v));
}

/* Every operator without a SparseCPU kernel: PyTorch's "Could not run ..." instead of a
 * fall through to a dense kernel that would read the sparse tensor's (empty) storage. */
static int
sparse_fallback(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)s;
    return ptl_dispatcher_no_kernel_error(op, ks);
}

static const PtlKernelReg sparse_kernels[] = {
    {PTL_OP_sparse_coo_tensor_indices, PTL_KEY_CPU, sparse_coo_tensor_cpu},
    {PTL_OP_sparse_coo_tensor_indices_size, PTL_KEY_CPU, sparse_coo_tensor_cpu},
    {PTL_OP__indices, PTL_KEY_SPARSE_CPU, indices_sparse},
    {PTL_OP__values, PTL_KEY_SPARSE_CPU, indices_sparse},
    {PTL_OP_indices, PTL_KEY_SPARSE_CPU, indices_sparse},
    {PTL_OP_values, PTL_KEY_SPARSE_CPU, indices_sparse},
    {PTL_OP_coalesce, PTL_KEY_SPARSE_CPU, coalesce_sparse},
    {PTL_OP_coalesce, PTL_KEY_CPU, coalesce_strided},
    {PTL_OP_to_dense, PTL_KEY_SPARSE_CPU, to_dense_kernel},
    {PTL_OP_to_dense, PTL_KEY_CPU, to_dense_kernel},
    {PTL_OP_to_sparse_sparse_dim, PTL_KEY_SPARSE_CPU, to_sparse_kernel},
    {PTL_OP_to_sparse_sparse_dim, PTL_KEY_CPU, to_sparse_kernel},
    {PTL_OP_to_sparse, PTL_KEY_SPARSE_CPU, to_sparse_kernel},
    {PTL_OP_to_sparse, PTL_KEY_CPU, to_sparse_kernel},
    {PTL_OP_sparse_mask, PTL_KEY_SPARSE_CPU, sparse_mask_sparse},
    {PTL_OP_mm, PTL_KEY_SPARSE_CPU, mm_sparse},
    {PTL_OP_mv, PTL_KEY_SPARSE_CPU, mv_sparse},
    {PTL_OP_addmm, PTL_KEY_SPARSE_CPU, addmm_sparse},
    {PTL_OP_addmm_, PTL_KEY_SPARSE_CPU, addmm_sparse},
    {PTL_OP_addmm_out, PTL_KEY_SPARSE_CPU, addmm_sparse},
    {PTL_OP_add_Tensor, PTL_KEY_SPARSE_CPU, add_sparse},
    {PTL_OP_add__Tensor, PTL_KEY_SPARSE_CPU, add_inplace_sparse},
    {PTL_OP_mul_Tensor, PTL_KEY_SPARSE_CPU, scale_sparse},
    {PTL_OP_div_Tensor, PTL_KEY_SPARSE_CPU, scale_sparse},
    {PTL_OP_neg, PTL_KEY_SPARSE_CPU, neg_sparse},
    {PTL_OP_clone, PTL_KEY_SPARSE_CPU, clone_sparse},
    {PTL_OP_detach, PTL_KEY_SPARSE_CPU, detach_sparse},
    {PTL_OP__to_copy, PTL_KEY_SPARSE_CPU, to_copy_sparse},
    {PTL_OP_t, PTL_KEY_SPARSE_CPU, transpose_sparse},
    {PTL_OP_transpose_int, PTL_KEY_SPARSE_CPU, transpose_sparse},
    {PTL_OP_sum, PTL_KEY_SPARSE_CPU, sum_sparse},
};

/* Registers the table and the SparseCPU fallback (native.def). */
int
ptl_register_sparse_kernels(void)
{
    ptl_dispatcher_register_fallback(PTL_KEY_SPARSE_CPU, sparse_fallback);
    return ptl_dispatcher_register(sparse_kernels,
                                   sizeof(sparse_kernels) / sizeof(sparse_kernels[0]), __FILE__);
}
