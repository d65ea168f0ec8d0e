/* derivatives/view.c -- derivative formulas of the view ops of aten/native/view.c
 * (view, reshape, t, transpose, permute, movedim, expand, squeeze, unsqueeze, select, slice,
 * narrow, unbind, split, chunk, as_strided).  Mirrors their rows of
 * tools/autograd/derivatives.yaml and FunctionsManual.cpp. */
#include <stdlib.h>

#include "../formula.h"

int
reshape_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    if (!NEEDS(0)) {
        return 0;
    }
    PtlIValue a[2] = {ptl_iv_tensor(gi[0]),
                      ptl_iv_intlist(n->input_meta[0].sizes, n->input_meta[0].dim)};
    return put(n, go, 0, callv(PTL_OP_reshape, 2, a));
}

int
t_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return NEEDS(0) ? put(n, go, 0, op1(PTL_OP_t, gi[0])) : 0;
}

int
transpose_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlIValue a[3] = {ptl_iv_tensor(gi[0]), n->args[1], n->args[2]};
    return NEEDS(0) ? put(n, go, 0, callv(PTL_OP_transpose_int, 3, a)) : 0;
}

int
permute_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    int64_t inv[PTL_MAX_DIMS];
    int dim = n->input_meta[0].dim;
    if (!NEEDS(0)) {
        return 0;
    }
    for (int i = 0; i < dim; i++) {
        int64_t d = n->args[1].u.il.data[i];
        inv[d < 0 ? d + dim : d] = i;
    }
    PtlIValue a[2] = {ptl_iv_tensor(gi[0]), ptl_iv_intlist(inv, dim)};
    return put(n, go, 0, callv(PTL_OP_permute, 2, a));
}

int
expand_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return NEEDS(0) ? put_same(n, go, 0, gi[0]) : 0;   /* finish() sums to the input shape */
}

int
unsqueeze_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return reshape_backward(n, gi, go);
}

/* select/slice: scatter g into zeros of the input's shape */
static int
scatter_into_zeros(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go, PtlOpId view_op, int nview)
{
    const PtlInputMeta *m = &n->input_meta[0];
    PtlTensorImpl *z, *v;
    PtlIValue a[5];
    if (!NEEDS(0)) {
        return 0;
    }
    if ((z = ptl_empty(m->dim, m->sizes, gi[0]->dtype, m->device)) == NULL) {
        return -1;
    }
    PtlIValue zero = ptl_iv_int(0);
    a[0] = ptl_iv_tensor(z);
    for (int i = 1; i < nview; i++) {
        a[i] = n->args[i];
    }
    if (ptl_fill_scalar(z, &zero) < 0 || (v = callv(view_op, nview, a)) == NULL) {
        ptl_decref(z);
        return -1;
    }
    PtlIValue c[2] = {ptl_iv_tensor(v), ptl_iv_tensor(gi[0])};
    PtlTensorImpl *r = callv(PTL_OP_copy_, 2, c);
    ptl_decref(v);
    ptl_xdecref(r);
    if (r == NULL) {
        ptl_decref(z);
        return -1;
    }
    return put(n, go, 0, z);
}

int
select_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return scatter_into_zeros(n, gi, go, PTL_OP_select_int, 3);
}

int
slice_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return scatter_into_zeros(n, gi, go, PTL_OP_slice_Tensor, 5);
}

/* movedim/moveaxis(self, source, destination): move them back */
int
movedim_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlIValue v[3] = {ptl_iv_tensor(gi[0]), n->args[2], n->args[1]};
    if (!NEEDS(0)) {
        return 0;
    }
    return scope_end(sc, give(n, go, 0, fv(sc, n->op->id, 3, v)));
}

/* narrow(self, dim, start, length): g between zeros, joined with cat so that the gradient
 * stays differentiable */
int
narrow_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    const PtlInputMeta *m = &n->input_meta[0];
    PtlTensorImpl *parts[3];
    int64_t sizes[PTL_MAX_DIMS], d = ptl_iv_to_int(&n->args[1]), start, len;
    if (!NEEDS(0)) {
        return 0;
    }
    d = d < 0 ? d + m->dim : d;
    start = ptl_iv_to_int(&n->args[2]);
    start = start < 0 ? start + m->sizes[d] : start;
    len = ptl_iv_to_int(&n->args[3]);
    memcpy(sizes, m->sizes, sizeof(int64_t) * (size_t)m->dim);
    sizes[d] = start;
    parts[0] = zeros_sized(sc, sizes, m->dim, gi[0]->dtype);
    parts[1] = gi[0];
    sizes[d] = m->sizes[d] - start - len;
    parts[2] = zeros_sized(sc, sizes, m->dim, gi[0]->dtype);
    if (parts[0] == NULL || parts[2] == NULL) {
        return scope_end(sc, -1);
    }
    PtlIValue v[2] = {ptl_iv_tensorlist(parts, 3), ptl_iv_int(d)};
    return scope_end(sc, give(n, go, 0, own(sc, callv(PTL_OP_cat, 2, v))));
}

/* the gradient of output k of a multi-output view, or zeros of `sizes` when none came (new
 * reference: the pieces can be more than a scope holds) */
static PtlTensorImpl *
grad_or_zeros(PtlTensorImpl **gi, int k, const int64_t *sizes, int dim, PtlDtype dt)
{
    PtlIValue v[2] = {ptl_iv_intlist(sizes, dim), ptl_iv_dtype(dt)};
    if (gi[k] != NULL) {
        ptl_incref(gi[k]);
        return gi[k];
    }
    return callv(PTL_OP_zeros, 2, v);
}

/* Joins pieces[0..k) with `join` (cat or stack) along d into grads_out[0]; releases them. */
static int
join_pieces(PtlNode *n, PtlTensorImpl **go, PtlOpId join, PtlTensorImpl **pieces, int k, int64_t d)
{
    Scope scope = {0}, *sc = &scope;
    PtlIValue v[2] = {ptl_iv_tensorlist(pieces, k), ptl_iv_int(d)};
    int rc = give(n, go, 0, own(sc, callv(join, 2, v)));
    for (int i = 0; i < k; i++) {
        ptl_decref(pieces[i]);
    }
    free(pieces);
    return scope_end(sc, rc);
}

static PtlDtype
some_grad_dtype(PtlNode *n, PtlTensorImpl **gi)
{
    for (int k = 0; k < n->num_outputs; k++) {
        if (gi[k] != NULL) {
            return gi[k]->dtype;
        }
    }
    return n->input_meta[0].dtype;
}

/* unbind(self, dim): stack the outputs' gradients back along dim */
int
unbind_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    const PtlInputMeta *m = &n->input_meta[0];
    PtlTensorImpl **parts;
    int64_t sizes[PTL_MAX_DIMS], d = ptl_iv_to_int(&n->args[1]);
    int nd = 0;
    PtlDtype dt = some_grad_dtype(n, gi);
    if (!NEEDS(0)) {
        return 0;
    }
    d = d < 0 ? d + m->dim : d;
    for (int i = 0; i < m->dim; i++) {
        if (i != d) {
            sizes[nd++] = m->sizes[i];
        }
    }
    if ((parts = malloc(sizeof(PtlTensorImpl *) * (size_t)(n->num_outputs + 1))) == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory in unbind backward");
    }
    for (int k = 0; k < n->num_outputs; k++) {
        if ((parts[k] = grad_or_zeros(gi, k, sizes, nd, dt)) == NULL) {
            while (k > 0) {
                ptl_decref(parts[--k]);
            }
            free(parts);
            return -1;
        }
    }
    return join_pieces(n, go, PTL_OP_stack, parts, n->num_outputs, d);
}

/* split/split_with_sizes/chunk(self, ..., dim): concatenate the pieces' gradients */
int
split_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    const PtlInputMeta *m = &n->input_meta[0];
    PtlTensorImpl **parts;
    int64_t sizes[PTL_MAX_DIMS], d = ptl_iv_to_int(&n->args[2]), step = 0, at = 0;
    PtlDtype dt = some_grad_dtype(n, gi);
    if (!NEEDS(0)) {
        return 0;
    }
    d = d < 0 ? d + m->dim : d;
    if (n->op->id == PTL_OP_split_Tensor) {
        step = ptl_iv_to_int(&n->args[1]);
    }
    else if (n->op->id == PTL_OP_chunk) {
        int64_t chunks = ptl_iv_to_int(&n->args[1]);
        step = (m->sizes[d] + chunks - 1) / chunks;
    }
    if ((parts = malloc(sizeof(PtlTensorImpl *) * (size_t)(n->num_outputs + 1))) == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory in split backward");
    }
    memcpy(sizes, m->sizes, sizeof(int64_t) * (size_t)m->dim);
    for (int k = 0; k < n->num_outputs; k++) {
        if (n->op->id == PTL_OP_split_sizes || n->op->id == PTL_OP_split_with_sizes) {
            sizes[d] = n->args[1].u.il.data[k];
        }
        else {
            sizes[d] = m->sizes[d] - at < step ? m->sizes[d] - at : step;
        }
        at += sizes[d];
        if ((parts[k] = grad_or_zeros(gi, k, sizes, m->dim, dt)) == NULL) {
            while (k > 0) {
                ptl_decref(parts[--k]);
            }
            free(parts);
            return -1;
        }
    }
    return join_pieces(n, go, PTL_OP_cat, parts, n->num_outputs, d);
}

/* ---- as_strided ---- */

typedef struct Geometry {
    int dim;
    int64_t sizes[PTL_MAX_DIMS];
    int64_t strides[PTL_MAX_DIMS];
    int64_t offset;
} Geometry;

static int64_t
geometry_numel(const Geometry *g)
{
    int64_t k = 1;
    for (int d = 0; d < g->dim; d++) {
        k *= g->sizes[d];
    }
    return k;
}

/* the largest storage index the geometry reaches (strides are never negative) */
static int64_t
geometry_end(const Geometry *g)
{
    int64_t end = g->offset;
    for (int d = 0; d < g->dim; d++) {
        end += (g->sizes[d] - 1) * g->strides[d];
    }
    return end;
}

/* 1 when two elements of the geometry share a storage element */
static int
geometry_overlaps(const Geometry *g)
{
    int order[PTL_MAX_DIMS], n = 0;
    int64_t reach = 0;
    for (int d = 0; d < g->dim; d++) {
        if (g->sizes[d] > 1) {
            int k = n++;
            while (k > 0 && g->strides[order[k - 1]] > g->strides[d]) {
                order[k] = order[k - 1];
                k--;
            }
            order[k] = d;
        }
    }
    for (int k = 0; k < n; k++) {
        int d = order[k];
        if (g->strides[d] <= reach) {
            return 1;
        }
        reach += (g->sizes[d] - 1) * g->strides[d];
    }
    return 0;
}

/* buf[geometry] += src, accumulating where the geometry overlaps itself: overlapping
 * geometries are split along their first dim until each piece is overlap-free */
static int
scatter_add(PtlTensorImpl *buf, PtlTensorImpl *src, const Geometry *g)
{
    Scope scope = {0}, *sc = &scope;
    if (!geometry_overlaps(g)) {
        PtlIValue v[4] = {ptl_iv_tensor(buf), ptl_iv_intlist(g->sizes, g->dim),
                          ptl_iv_intlist(g->strides, g->dim), ptl_iv_int(g->offset)};
        PtlTensorImpl *view = fv(sc, PTL_OP_as_strided, 4, v);
        return scope_end(sc, view == NULL || f2(sc, PTL_OP_add__Tensor, view, src) == NULL ? -1 : 0);
    }
    Geometry sub = {.dim = g->dim - 1, .offset = g->offset};
    memcpy(sub.sizes, g->sizes + 1, sizeof(int64_t) * (size_t)sub.dim);
    memcpy(sub.strides, g->strides + 1, sizeof(int64_t) * (size_t)sub.dim);
    for (int64_t i = 0; i < g->sizes[0]; i++, sub.offset += g->strides[0]) {
        PtlIValue v[3] = {ptl_iv_tensor(src), ptl_iv_int(0), ptl_iv_int(i)};
        PtlTensorImpl *piece = fv(sc, PTL_OP_select_int, 3, v);
        if (piece == NULL || scatter_add(buf, piece, &sub) < 0) {
            return scope_end(sc, -1);
        }
    }
    return scope_end(sc, 0);
}

/* as_strided(self, size, stride, storage_offset?): g is added into a zero buffer covering
 * the storage both geometries touch, then read back through self's geometry (divided by
 * how often self sees each storage element, as PyTorch does for overlapping inputs). */
int
as_strided_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *self, *buf, *res;
    Geometry in, out;
    int64_t lo, hi, len;
    if (!NEEDS(0)) {
        return 0;
    }
    /* only self's geometry is read, which in-place ops leave alone, so a self modified in
     * place since (an in-place op on another view of it) is no error, as in PyTorch, which
     * saves the geometry alone; a released slot still raises through sv() */
    self = n->saved[0].data != NULL ? n->saved[0].data : sv(sc, n, 0);
    if (self == NULL) {
        return scope_end(sc, -1);
    }
    in.dim = self->dim;
    memcpy(in.sizes, self->sizes, sizeof(int64_t) * (size_t)in.dim);
    memcpy(in.strides, self->strides, sizeof(int64_t) * (size_t)in.dim);
    in.offset = self->storage_offset;
    out.dim = (int)n->args[1].u.il.n;
    memcpy(out.sizes, n->args[1].u.il.data, sizeof(int64_t) * (size_t)out.dim);
    memcpy(out.strides, n->args[2].u.il.data, sizeof(int64_t) * (size_t)out.dim);
    out.offset = n->args[3].tag == PTL_IV_NONE ? in.offset : ptl_iv_to_int(&n->args[3]);
    if (geometry_numel(&in) == 0 || geometry_numel(&out) == 0) {
        return scope_end(sc, give(n, go, 0, zeros_input(sc, n, 0, gi[0]->dtype)));
    }
    lo = in.offset < out.offset ? in.offset : out.offset;
    hi = geometry_end(&in) > geometry_end(&out) ? geometry_end(&in) : geometry_end(&out);
    len = hi - lo + 1;
    in.offset -= lo;
    out.offset -= lo;
    if ((buf = zeros_sized(sc, &len, 1, gi[0]->dtype)) == NULL || scatter_add(buf, gi[0], &out) < 0) {
        return scope_end(sc, -1);
    }
    PtlIValue v[4] = {ptl_iv_tensor(buf), ptl_iv_intlist(in.sizes, in.dim),
                      ptl_iv_intlist(in.strides, in.dim), ptl_iv_int(in.offset)};
    res = fv(sc, PTL_OP_as_strided, 4, v);
    if (res != NULL && geometry_overlaps(&in)) {
        PtlTensorImpl *count = zeros_sized(sc, &len, 1, gi[0]->dtype);
        PtlTensorImpl *ones = f1(sc, PTL_OP_ones_like, res);
        if (count == NULL || ones == NULL || scatter_add(count, ones, &in) < 0) {
            return scope_end(sc, -1);
        }
        v[0] = ptl_iv_tensor(count);
        res = DIV(res, fv(sc, PTL_OP_as_strided, 4, v));
    }
    return scope_end(sc, give(n, go, 0, f1(sc, PTL_OP_clone, res)));
}
