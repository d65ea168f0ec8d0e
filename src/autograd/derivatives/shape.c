/* derivatives/shape.c -- derivative formulas of the shape and ordering ops of
 * aten/native/shape.c: flip, roll, rot90, repeat, tril, triu, diag_embed, diagonal, trace,
 * unfold, unfold_backward and linalg_cross.  Mirrors their rows of
 * tools/autograd/derivatives.yaml and their helpers in FunctionsManual.cpp (repeat_backward,
 * unfold_backward).  repeat_interleave, tile, diag, cross, kron, diff, fliplr/flipud,
 * meshgrid, broadcast_tensors and tensor_split are composites: autograd flows through the
 * ops they call. */
#include "../formula.h"

/* flip(self, dims): flip(g, dims) */
int
flip_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlIValue a[2] = {ptl_iv_tensor(gi[0]), n->args[1]};
    return NEEDS(0) ? put(n, go, 0, callv(PTL_OP_flip, 2, a)) : 0;
}

/* roll(self, shifts, dims): roll(g, -shifts, dims) */
int
roll_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    int64_t neg[PTL_MAX_DIMS];
    int64_t k = n->args[1].u.il.n;
    if (!NEEDS(0)) {
        return 0;
    }
    if (k > PTL_MAX_DIMS) {
        return ptl_error_set(PTL_ERR_RUNTIME, "roll: at most %d shifts", PTL_MAX_DIMS);
    }
    for (int64_t i = 0; i < k; i++) {
        neg[i] = -n->args[1].u.il.data[i];
    }
    PtlIValue a[3] = {ptl_iv_tensor(gi[0]), ptl_iv_intlist(neg, k), n->args[2]};
    return put(n, go, 0, callv(PTL_OP_roll, 3, a));
}

/* rot90(self, k, dims): rot90(g, -k, dims) */
int
rot90_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlIValue a[3] = {ptl_iv_tensor(gi[0]), ptl_iv_int(-n->args[1].u.i), n->args[2]};
    return NEEDS(0) ? put(n, go, 0, callv(PTL_OP_rot90, 3, a)) : 0;
}

/* repeat(self, repeats): output dim d holds repeats[d] copies of input dim d, so g viewed
 * with dim d split into [repeats[d], size_d] is summed over the copies, one dim at a time
 * (finish() drops the leading size-1 dims left by repeats beyond self's rank) */
int
repeat_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    const PtlInputMeta *m = &n->input_meta[0];
    const int64_t *r = n->args[1].u.il.data;
    int64_t nr = n->args[1].u.il.n, shape[PTL_MAX_DIMS + 1];
    int lead = (int)nr - m->dim;
    PtlTensorImpl *g = gi[0], *v, *sum;
    if (!NEEDS(0)) {
        return 0;
    }
    ptl_incref(g);
    for (int d = 0; d < nr; d++) {
        int64_t size = d < lead ? 1 : m->sizes[d - lead];
        if (r[d] == 1) {
            continue;
        }
        for (int k = 0, j = 0; k < g->dim; k++) {
            if (k == d) {
                shape[j++] = r[d];
            }
            shape[j++] = k == d ? size : g->sizes[k];
        }
        PtlIValue a[2] = {ptl_iv_tensor(g), ptl_iv_intlist(shape, g->dim + 1)};
        v = callv(PTL_OP_reshape, 2, a);
        ptl_decref(g);
        if (v == NULL) {
            return -1;
        }
        int64_t dd = d;
        PtlIValue b[3] = {ptl_iv_tensor(v), ptl_iv_intlist(&dd, 1), ptl_iv_bool(0)};
        sum = callv(PTL_OP_sum_dim_IntList, 3, b);
        ptl_decref(v);
        if (sum == NULL) {
            return -1;
        }
        g = sum;
    }
    return put(n, go, 0, g);
}

/* tril(self, k): tril(g, k); triu likewise */
int
tril_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlIValue a[2] = {ptl_iv_tensor(gi[0]), n->args[1]};
    return NEEDS(0) ? put(n, go, 0, callv(PTL_OP_tril, 2, a)) : 0;
}

int
triu_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlIValue a[2] = {ptl_iv_tensor(gi[0]), n->args[1]};
    return NEEDS(0) ? put(n, go, 0, callv(PTL_OP_triu, 2, a)) : 0;
}

/* diag_embed(self, offset, dim1, dim2): g.diagonal(offset, dim1, dim2) */
int
diag_embed_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlIValue a[4] = {ptl_iv_tensor(gi[0]), n->args[1], n->args[2], n->args[3]};
    return NEEDS(0) ? put(n, go, 0, callv(PTL_OP_diagonal, 4, a)) : 0;
}

/* zeros of input 0's shape with g copied into its diagonal(offset, d1, d2) view (new ref) */
static PtlTensorImpl *
into_diagonal(PtlNode *n, PtlTensorImpl *g, PtlIValue offset, PtlIValue d1, PtlIValue d2)
{
    const PtlInputMeta *m = &n->input_meta[0];
    PtlIValue zero = ptl_iv_int(0);
    PtlTensorImpl *z, *v, *r;
    if ((z = ptl_empty(m->dim, m->sizes, g->dtype, m->device)) == NULL) {
        return NULL;
    }
    PtlIValue a[4] = {ptl_iv_tensor(z), offset, d1, d2};
    if (ptl_fill_scalar(z, &zero) < 0 || (v = callv(PTL_OP_diagonal, 4, a)) == NULL) {
        ptl_decref(z);
        return NULL;
    }
    PtlIValue c[2] = {ptl_iv_tensor(v), ptl_iv_tensor(g)};
    r = callv(PTL_OP_copy_, 2, c);
    ptl_decref(v);
    if (r == NULL) {
        ptl_decref(z);
        return NULL;
    }
    ptl_decref(r);
    return z;
}

/* diagonal(self, offset, dim1, dim2): zeros with g written on that diagonal */
int
diagonal_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    if (!NEEDS(0)) {
        return 0;
    }
    return put(n, go, 0, into_diagonal(n, gi[0], n->args[1], n->args[2], n->args[3]));
}

/* trace(self): g (a 0-dim tensor) on the main diagonal of zeros */
int
trace_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    if (!NEEDS(0)) {
        return 0;
    }
    return put(n, go, 0, into_diagonal(n, gi[0], ptl_iv_int(0), ptl_iv_int(0), ptl_iv_int(1)));
}

/* unfold(self, dim, size, step): unfold_backward(g, self.sizes, dim, size, step) */
int
unfold_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    const PtlInputMeta *m = &n->input_meta[0];
    PtlIValue a[5] = {ptl_iv_tensor(gi[0]), ptl_iv_intlist(m->sizes, m->dim), n->args[1],
                      n->args[2], n->args[3]};
    return NEEDS(0) ? put(n, go, 0, callv(PTL_OP_unfold_backward, 5, a)) : 0;
}

/* unfold_backward(grad_in, input_sizes, dim, size, step): g.unfold(dim, size, step) */
int
unfold_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlIValue a[4] = {ptl_iv_tensor(gi[0]), n->args[2], n->args[3], n->args[4]};
    return NEEDS(0) ? put(n, go, 0, callv(PTL_OP_unfold, 4, a)) : 0;
}

/* linalg_cross(self, other, dim): self gets cross(other, g), other gets cross(g, self)
 * (finish() sums a broadcast gradient back to each input's shape) */
int
linalg_cross_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *self = sv(sc, n, 0), *other = sv(sc, n, 1);
    if (self != NULL && other != NULL && ptl_dtype_is_complex(self->dtype)) {
        /* PyTorch's: cross(conj(other), g) and cross(g, conj(self)) */
        self = f1(sc, PTL_OP_conj_physical, self);
        other = f1(sc, PTL_OP_conj_physical, other);
    }
    PtlIValue a0[3] = {ptl_iv_tensor(other), ptl_iv_tensor(gi[0]), n->args[2]};
    PtlIValue a1[3] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(self), n->args[2]};
    if (self == NULL || other == NULL ||
        (NEEDS(0) && give(n, go, 0, fv(sc, PTL_OP_linalg_cross, 3, a0)) < 0) ||
        (NEEDS(1) && give(n, go, 1, fv(sc, PTL_OP_linalg_cross, 3, a1)) < 0)) {
        return scope_end(sc, -1);
    }
    return scope_end(sc, 0);
}
