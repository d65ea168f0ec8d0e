/* derivatives/sparse.c -- derivative formulas of the ops of aten/native/sparse.c: building a
 * sparse tensor from values, reading its values back, and the layout conversions.  Mirrors
 * their rows of tools/autograd/derivatives.yaml (values: sparse_coo_tensor's gradient is
 * the incoming gradient read at the indices; to_dense's is the gradient masked to the
 * sparse pattern, torch's default masked_grad).  See Note [Sparse tensors]. */
#include "../formula.h"

/* grad restricted to like's pattern when like is sparse (the gradient torch.sparse.mm
 * documents for its sparse argument; the pattern is not differentiated); g itself for a
 * strided like.  g is stolen; new ref. */
PtlTensorImpl *
ptl_grad_mask_like(PtlTensorImpl *g, PtlTensorImpl *like)
{
    if (g == NULL || like == NULL || like->sparse == NULL) {
        return g;
    }
    PtlTensorImpl *mask = op1(PTL_OP_detach, like);
    PtlTensorImpl *m = mask ? op2(PTL_OP_sparse_mask, g, mask) : NULL;
    ptl_decref(g);
    ptl_xdecref(mask);
    return m;
}

/* sparse_coo_tensor(indices, values[, size]): values gets grad at each entry's indices,
 * grad[indices[0][k], ..., indices[sd-1][k]] for entry k, duplicates each their own. */
int
sparse_coo_tensor_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *rows[PTL_MAX_DIMS], *g, *ind;
    if (!NEEDS(1)) {
        return 0;
    }
    g = gi[0]->sparse ? f1(sc, PTL_OP_to_dense, gi[0]) : gi[0];
    if ((ind = sv(sc, n, 0)) == NULL || g == NULL) {
        return scope_end(sc, -1);
    }
    int64_t sd = ind->sizes[0];
    if (sd == 0) {
        int64_t sizes[PTL_MAX_DIMS + 1] = {ind->sizes[1]};
        memcpy(sizes + 1, g->sizes, sizeof(int64_t) * (size_t)g->dim);
        PtlIValue v[2] = {ptl_iv_tensor(unsq(sc, g, 0)), ptl_iv_intlist(sizes, g->dim + 1)};
        return scope_end(sc, give(n, go, 1, fv(sc, PTL_OP_expand, 2, v)));
    }
    for (int64_t d = 0; d < sd; d++) {
        PtlIValue v[3] = {ptl_iv_tensor(ind), ptl_iv_int(0), ptl_iv_int(d)};
        if ((rows[d] = fv(sc, PTL_OP_select_int, 3, v)) == NULL) {
            return scope_end(sc, -1);
        }
    }
    PtlIValue v[2] = {ptl_iv_tensor(g), ptl_iv_tensorlist(rows, sd)};
    return scope_end(sc, give(n, go, 1, fv(sc, PTL_OP_index_Tensor, 2, v)));
}

/* _values(self) / values(self): the gradient of the values as a sparse tensor of self's
 * indices and size */
int
values_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *self, *ind;
    if (!NEEDS(0)) {
        return 0;
    }
    if ((self = sv(sc, n, 0)) == NULL || (ind = f1(sc, PTL_OP__indices, self)) == NULL) {
        return scope_end(sc, -1);
    }
    PtlIValue v[3] = {ptl_iv_tensor(ind), ptl_iv_tensor(gi[0]),
                      ptl_iv_intlist(self->sizes, self->dim)};
    return scope_end(sc, give(n, go, 0, fv(sc, PTL_OP_sparse_coo_tensor_indices_size, 3, v)));
}

/* to_dense(self): grad masked to self's pattern (a strided self: grad) */
int
to_dense_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *self;
    if (!NEEDS(0)) {
        return 0;
    }
    if ((self = sv(sc, n, 0)) == NULL) {
        return scope_end(sc, -1);
    }
    if (self->sparse == NULL) {
        return scope_end(sc, give(n, go, 0, gi[0]));
    }
    PtlTensorImpl *mask = f1(sc, PTL_OP_detach, self);   /* the pattern only */
    return scope_end(sc, give(n, go, 0, f2(sc, PTL_OP_sparse_mask, gi[0], mask)));
}

/* to_sparse(self), sparse_mask(self, mask) of a strided self: grad.to_dense() */
int
to_sparse_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    if (!NEEDS(0)) {
        return 0;
    }
    return scope_end(sc, give(n, go, 0, f1(sc, PTL_OP_to_dense, gi[0])));
}
