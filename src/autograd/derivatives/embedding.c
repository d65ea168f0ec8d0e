/* derivatives/embedding.c -- derivative formulas of the ops of aten/native/embedding.c
 * (embedding, _ptl_embedding_bag) and of embedding_dense_backward (double backward).
 * Mirrors their rows of tools/autograd/derivatives.yaml. */
#include "../formula.h"

/* embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse) */
int
embedding_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *idx;
    if (!NEEDS(0)) {
        return 0;
    }
    if (saved(n, 0, &idx) < 0) {
        return -1;
    }
    PtlIValue a[5] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(idx),
                      ptl_iv_int(n->input_meta[0].sizes[0]), n->args[2], n->args[3]};
    int rc = put(n, go, 0, callv(PTL_OP_embedding_dense_backward, 5, a));
    ptl_decref(idx);
    return rc;
}

/* _ptl_embedding_bag(weight, indices, offsets, scale, num_bags, mean); saved: the four
 * tensors (Note [Embedding bags]).  With bag = _ptl_embedding_bag_offsets(offsets, n, offsets
 * has num_bags + 1 entries), each index's bag, and rows = g.index_select(0, bag), g first
 * divided by each bag's row count (bincount(bag)) for mean:
 *   weight: zeros_like(weight).index_add_(0, indices, rows [* scale.unsqueeze(1)])
 *   scale:  (rows * weight.index_select(0, indices)).sum(1) */
int
embedding_bag_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope s = {.n = 0}, *sc = &s;
    PtlTensorImpl *w = sv(sc, n, 0), *idx = sv(sc, n, 1), *offs = sv(sc, n, 2), *scale = NULL;
    int64_t one = 1;
    int rc = -1;
    if (w == NULL || idx == NULL || offs == NULL || sv_opt(sc, n, 3, &scale) < 0) {
        goto done;
    }
    PtlIValue o[3] = {ptl_iv_tensor(offs), ptl_iv_int(idx->numel),
                      ptl_iv_bool(offs->numel > n->args[4].u.i)};
    PtlTensorImpl *bag = fv(sc, PTL_OP__ptl_embedding_bag_offsets, 3, o);
    if (bag == NULL) {
        goto done;
    }
    PtlTensorImpl *g = gi[0];
    if (n->args[5].u.b) {
        PtlIValue m[3] = {ptl_iv_tensor(bag), ptl_iv_none(), n->args[4]};
        g = DIV(g, unsq(sc, fv(sc, PTL_OP_bincount, 3, m), 1));
    }
    PtlIValue a[3] = {ptl_iv_tensor(g), ptl_iv_int(0), ptl_iv_tensor(bag)};
    PtlTensorImpl *rows = fv(sc, PTL_OP_index_select, 3, a);
    if (NEEDS(0)) {
        PtlTensorImpl *r = scale != NULL ? MUL(rows, unsq(sc, scale, 1)) : rows;
        PtlTensorImpl *z = zeros_of(sc, w);
        if (r == NULL || z == NULL) {
            goto done;
        }
        /* into the fresh zeros in place: the out-of-place index_add copied them first */
        PtlIValue b[4] = {ptl_iv_tensor(z), ptl_iv_int(0), ptl_iv_tensor(idx), ptl_iv_tensor(r)};
        if (give(n, go, 0, fv(sc, PTL_OP_index_add_, 4, b)) < 0) {
            goto done;
        }
    }
    if (scale != NULL && NEEDS(3)) {
        PtlIValue c[3] = {ptl_iv_tensor(w), ptl_iv_int(0), ptl_iv_tensor(idx)};
        PtlIValue d[2] = {ptl_iv_tensor(MUL(rows, fv(sc, PTL_OP_index_select, 3, c))),
                          ptl_iv_intlist(&one, 1)};
        if (give(n, go, 3, fv(sc, PTL_OP_sum_dim_IntList, 2, d)) < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

/* embedding_dense_backward(gO, indices, num_weights, padding_idx, scale_grad_by_freq);
 * saved: indices.  grad_output: the rows of the incoming gradient at the indices, zero at
 * padding_idx and divided by each index's count under scale_grad_by_freq. */
int
embedding_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope s = {.n = 0}, *sc = &s;
    PtlTensorImpl *idx = NULL, *r;
    int64_t pad = ptl_iv_to_int(&n->args[3]);
    int rc = -1;
    if (gi[0] == NULL || !NEEDS(0)) {
        return 0;
    }
    if (sv_opt(sc, n, 0, &idx) < 0) {
        goto done;
    }
    r = f2(sc, PTL_OP_embedding, gi[0], idx);
    if (pad >= 0) {
        PtlTensorImpl *p = own(sc, ptl_wrapped_int(pad));
        PtlIValue u[2] = {ptl_iv_tensor(f2(sc, PTL_OP_eq_Tensor, idx, p)), ptl_iv_int(-1)};
        PtlTensorImpl *mask = fv(sc, PTL_OP_unsqueeze, 2, u);
        PtlIValue m[3] = {ptl_iv_tensor(r), ptl_iv_tensor(mask), ptl_iv_int(0)};
        r = r && mask ? fv(sc, PTL_OP_masked_fill_Scalar, 3, m) : NULL;
    }
    if (n->args[4].u.b) {
        PtlIValue fl[1] = {ptl_iv_tensor(idx)};
        PtlTensorImpl *flat = fv(sc, PTL_OP_flatten_using_ints, 1, fl);
        PtlIValue b[3] = {ptl_iv_tensor(flat), ptl_iv_none(), n->args[2]};
        PtlTensorImpl *cnt = f2(sc, PTL_OP_take, fv(sc, PTL_OP_bincount, 3, b), idx);
        PtlIValue u[2] = {ptl_iv_tensor(cnt), ptl_iv_int(-1)};
        r = r && cnt ? DIV(r, fv(sc, PTL_OP_unsqueeze, 2, u)) : NULL;
    }
    rc = give(n, go, 0, r);
done:
    return scope_end(sc, rc);
}
