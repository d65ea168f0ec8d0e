/* scatter_gather.c -- gather, scatter, scatter_add and scatter_reduce: the index has self's
 * number of dimensions, and each index element names self's coordinate along dim.  Mirrors
 * ATen/native/TensorAdvancedIndexing.cpp (gather / scatter), ATen/native/
 * ScatterGatherChecks.h and ATen/native/cpu/ScatterGatherKernel.cpp. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/error.h"
#include "index_impl.h"
#include "native.h"

/* Walks every element of index: calls back with (self offset, other offset) where self's
 * coordinate along dim is the index value and other (src or out) follows index's
 * coordinates.  Checks the range; `other` may be NULL (scatter of a value). */
typedef struct DimWalk {
    int64_t *self_off;   /* owned: [index numel] */
    int64_t *other_off;  /* owned: [index numel], or NULL */
    int64_t n;
} DimWalk;

static int
dim_walk(DimWalk *w, PtlTensorImpl *self, int64_t dim, PtlTensorImpl *index,
         const int64_t *other_strides)
{
    int d1 = index->dim > 0 ? index->dim : 1;
    int64_t one = 1, zero = 0;
    const int64_t *isz = index->dim ? index->sizes : &one;
    const int64_t *ist = index->dim ? index->strides : &zero;
    int64_t sst[PTL_MAX_DIMS], size = self->dim ? self->sizes[dim] : 1;
    int64_t *ioff = NULL;
    memset(w, 0, sizeof(*w));
    w->n = index->numel;
    for (int d = 0; d < d1; d++) {
        sst[d] = d == dim ? 0 : (self->dim ? self->strides[d] : 0);
    }
    int64_t step = self->dim ? self->strides[dim] : 0;
    if ((ioff = walk_offsets(d1, isz, ist)) == NULL ||
        (w->self_off = walk_offsets(d1, isz, sst)) == NULL ||
        (other_strides != NULL && (w->other_off = walk_offsets(d1, isz, other_strides)) == NULL)) {
        goto error;
    }
    const char *data = ptl_tensor_data(index);
    size_t item = ptl_tensor_itemsize(index);
    for (int64_t i = 0; i < w->n; i++) {
        int64_t v = ptl_load_int(data + ioff[i] * (int64_t)item, index->dtype);
        if (v < 0 || v >= size) {
            ptl_error_set(PTL_ERR_RUNTIME, "index %lld is out of bounds for dimension %lld with "
                                           "size %lld",
                          (long long)v, (long long)dim, (long long)size);
            goto error;
        }
        w->self_off[i] += v * step;
    }
    free(ioff);
    return 0;
error:
    free(ioff);
    free(w->self_off);
    free(w->other_off);
    return -1;
}

static void
dim_walk_release(DimWalk *w)
{
    free(w->self_off);
    free(w->other_off);
}

static int
index_dtype_ok(const PtlTensorImpl *index)
{
    return index->dtype == PTL_DTYPE_INT64 || index->dtype == PTL_DTYPE_INT32;
}

/* gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False):
 *   out[i][j][k] = self[index[i][j][k]][j][k] (dim 0); out has index's shape */
static int
gather_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *index = s[2].u.t, *out;
    int64_t dim = s[1].u.i;
    char b1[256], b2[256];
    DimWalk w;
    if (ptl_wrap_dim(&dim, self->dim > 0 ? self->dim : 1) < 0) {
        return -1;
    }
    if (!index_dtype_ok(index)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "gather(): Expected dtype int32/int64 for index");
    }
    if ((index->dim > 0 ? index->dim : 1) != (self->dim > 0 ? self->dim : 1)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Index tensor must have the same number of "
                                              "dimensions as input tensor");
    }
    for (int d = 0; d < index->dim && self->dim; d++) {
        if (d != dim && index->sizes[d] > self->sizes[d]) {
            ptl_format_sizes(b1, sizeof(b1), index->dim, index->sizes);
            ptl_format_sizes(b2, sizeof(b2), self->dim, self->sizes);
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "Size does not match at dimension %d expected index %s to be no "
                                 "larger than self %s apart from dimension %lld",
                                 d, b1, b2, (long long)dim);
        }
    }
    if ((out = ptl_empty(index->dim, index->sizes, self->dtype, self->device)) == NULL) {
        return -1;
    }
    if (out->numel > 0) {
        if (dim_walk(&w, self, dim, index, NULL) < 0) {
            ptl_decref(out);
            return -1;
        }
        size_t item = ptl_tensor_itemsize(self);
        const char *src = ptl_tensor_data(self);
        char *dst = ptl_tensor_data(out);
        for (int64_t i = 0; i < w.n; i++) {
            copy_elem(dst + i * (int64_t)item, src + w.self_off[i] * (int64_t)item, item);
        }
        dim_walk_release(&w);
    }
    s[0] = ptl_iv_tensor(out);
    return 0;
}

static Reduce
parse_reduce(const char *name, int two, int *bad)
{
    *bad = 0;
    if (two) {
        if (strcmp(name, "sum") == 0) {
            return RED_SUM;
        }
        if (strcmp(name, "prod") == 0) {
            return RED_PROD;
        }
        if (strcmp(name, "mean") == 0) {
            return RED_MEAN;
        }
        if (strcmp(name, "amax") == 0) {
            return RED_AMAX;
        }
        if (strcmp(name, "amin") == 0) {
            return RED_AMIN;
        }
    }
    else {
        if (strcmp(name, "add") == 0) {
            return RED_SUM;
        }
        if (strcmp(name, "multiply") == 0) {
            return RED_PROD;
        }
    }
    *bad = 1;
    return RED_NONE;
}

/* scatter[_].src/.value/.reduce/.value_reduce, scatter_add[_], scatter_reduce[_].two:
 *   self[index[i][j]][j] (op)= src[i][j] (dim 0), for every element of index */
static int
scatter_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *index = s[2].u.t, *src = NULL, *out = NULL;
    PtlOpId id = op->id;
    int two = id == PTL_OP_scatter_reduce_two || id == PTL_OP_scatter_reduce__two;
    int is_add = id == PTL_OP_scatter_add || id == PTL_OP_scatter_add_;
    int64_t dim = s[1].u.i, sst[PTL_MAX_DIMS] = {0};
    int include_self = two ? s[5].u.b : 1, bad = 0;
    Reduce r = is_add ? RED_SUM : RED_NONE;
    char b1[256], b2[256], b3[256];
    int64_t *count = NULL;
    DimWalk w;
    if (ptl_wrap_dim(&dim, self->dim > 0 ? self->dim : 1) < 0) {
        return -1;
    }
    if (two || (op->schema.nargs > 4 && op->schema.args[4].kind == PTL_ARG_STR)) {
        r = parse_reduce(s[4].u.s, two, &bad);
        if (bad) {
            return two ? ptl_error_set(PTL_ERR_RUNTIME,
                                       "reduce argument must be either sum, prod, mean, amax or "
                                       "amin, got %s",
                                       s[4].u.s)
                       : ptl_error_set(PTL_ERR_RUNTIME,
                                       "reduce argument must be either add or multiply.");
        }
    }
    if (!index_dtype_ok(index)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "scatter(): Expected dtype int32/int64 for index");
    }
    if (r == RED_MEAN && self->dtype == PTL_DTYPE_BOOL) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED,
                             "\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for "
                             "'Bool'");
    }
    if (s[3].tag == PTL_IV_TENSOR) {
        src = s[3].u.t;
        ptl_incref(src);
        if (src->dtype != self->dtype) {
            ptl_decref(src);
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "scatter(): Expected self.dtype to be equal to src.dtype");
        }
    }
    else if ((src = scalar_of(&s[3], self->dtype)) == NULL) {
        return -1;
    }
    if ((index->dim > 0 ? index->dim : 1) != (self->dim > 0 ? self->dim : 1)) {
        ptl_error_set(PTL_ERR_RUNTIME, "Index tensor must have the same number of dimensions as "
                                       "self tensor");
        goto error;
    }
    if (src->dim != 0 && (index->dim > 0 ? index->dim : 1) != src->dim) {
        ptl_error_set(PTL_ERR_RUNTIME, "Index tensor must have the same number of dimensions as "
                                       "src tensor");
        goto error;
    }
    for (int d = 0; d < index->dim; d++) {
        if ((self->dim && d != dim && index->sizes[d] > self->sizes[d]) ||
            (src->dim && index->sizes[d] > src->sizes[d])) {
            ptl_format_sizes(b1, sizeof(b1), index->dim, index->sizes);
            ptl_format_sizes(b2, sizeof(b2), self->dim, self->sizes);
            ptl_format_sizes(b3, sizeof(b3), src->dim, src->sizes);
            if (src->dim) {
                ptl_error_set(PTL_ERR_RUNTIME,
                              "Expected index %s to be no larger than self %s apart from "
                              "dimension %lld and to be no larger size than src %s",
                              b1, b2, (long long)dim, b3);
            }
            else {
                ptl_error_set(PTL_ERR_RUNTIME,
                              "Expected index %s to be no larger than self %s apart from "
                              "dimension %lld",
                              b1, b2, (long long)dim);
            }
            goto error;
        }
    }
    if ((out = target_of(op, self)) == NULL) {
        goto error;
    }
    if (index->numel > 0) {
        if (src->dim) {
            for (int d = 0; d < src->dim; d++) {
                sst[d] = src->strides[d];
            }
        }
        if (dim_walk(&w, out, dim, index, sst) < 0) {
            goto error;
        }
        size_t item = ptl_tensor_itemsize(out);
        char *dst = ptl_tensor_data(out);
        const char *sp = ptl_tensor_data(src);
        if (r == RED_MEAN || !include_self) {
            /* count[k]: how many src values land on the element at offset k (0: untouched) */
            int64_t span = 0;
            for (int64_t i = 0; i < w.n; i++) {
                span = w.self_off[i] >= span ? w.self_off[i] + 1 : span;
            }
            if ((count = calloc((size_t)span, sizeof(int64_t))) == NULL) {
                dim_walk_release(&w);
                ptl_error_set(PTL_ERR_MEMORY, "out of memory");
                goto error;
            }
        }
        for (int64_t i = 0; i < w.n; i++) {
            char *d = dst + w.self_off[i] * (int64_t)item;
            const char *v = sp + w.other_off[i] * (int64_t)item;
            if (r == RED_NONE || (count != NULL && !include_self && count[w.self_off[i]] == 0)) {
                copy_elem(d, v, item);
            }
            else {
                combine(d, v, out->dtype, r, 1.0);
            }
            if (count != NULL) {
                count[w.self_off[i]]++;
            }
        }
        for (int64_t i = 0; r == RED_MEAN && i < w.n; i++) {
            int64_t k = w.self_off[i], c = count[k] + (include_self ? 1 : 0);
            char *d = dst + k * (int64_t)item;
            if (count[k] == 0) {
                continue;   /* already divided */
            }
            count[k] = 0;
            if (ptl_dtype_is_floating(out->dtype)) {
                ptl_store_double(d, out->dtype, ptl_load_double(d, out->dtype) / (double)c);
            }
            else {
                int64_t a = ptl_load_int(d, out->dtype), q = a / c;
                ptl_store_int(d, out->dtype, (a % c != 0 && a < 0) ? q - 1 : q);
            }
        }
        free(count);
        dim_walk_release(&w);
    }
    ptl_tensor_bump_version(out);
    ptl_decref(src);
    s[0] = ptl_iv_tensor(out);
    return 0;
error:
    ptl_xdecref(src);
    ptl_xdecref(out);
    return -1;
}

static const PtlKernelReg scatter_gather_cpu_kernels[] = {
    {PTL_OP_gather, PTL_KEY_CPU, gather_cpu},
    {PTL_OP_scatter_src, PTL_KEY_CPU, scatter_cpu},
    {PTL_OP_scatter_value, PTL_KEY_CPU, scatter_cpu},
    {PTL_OP_scatter_reduce, PTL_KEY_CPU, scatter_cpu},
    {PTL_OP_scatter_value_reduce, PTL_KEY_CPU, scatter_cpu},
    {PTL_OP_scatter__src, PTL_KEY_CPU, scatter_cpu},
    {PTL_OP_scatter__value, PTL_KEY_CPU, scatter_cpu},
    {PTL_OP_scatter__reduce, PTL_KEY_CPU, scatter_cpu},
    {PTL_OP_scatter__value_reduce, PTL_KEY_CPU, scatter_cpu},
    {PTL_OP_scatter_add, PTL_KEY_CPU, scatter_cpu},
    {PTL_OP_scatter_add_, PTL_KEY_CPU, scatter_cpu},
    {PTL_OP_scatter_reduce_two, PTL_KEY_CPU, scatter_cpu},
    {PTL_OP_scatter_reduce__two, PTL_KEY_CPU, scatter_cpu},
};
PTL_DEFINE_REGISTER(scatter_gather_cpu_kernels)
