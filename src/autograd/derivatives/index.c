/* derivatives/index.c -- derivative formulas of the ops of aten/native/index.c: index,
 * index_put, index_select/add/copy/fill, masked_fill, masked_scatter (take's is in take.c).
 * Mirrors their rows of tools/autograd/derivatives.yaml and their helpers in
 * FunctionsManual.cpp.
 *
 * Edges follow the forward's tensor inputs flattened: for index_put(self, indices, values)
 * edge 0 is self, edges 1..k the indices and edge k+1 values.  A saved Tensor?[] sits after
 * the other saved slots, one slot per element (derivatives.h). */
#include "../formula.h"

/* Unpacks the k saved index tensors starting at slot `first` into idx[] (new refs). */
static int
saved_list(PtlNode *n, int first, int k, PtlTensorImpl **idx)
{
    for (int i = 0; i < k; i++) {
        idx[i] = NULL;
    }
    for (int i = 0; i < k; i++) {
        if (saved(n, first + i, &idx[i]) < 0) {
            return -1;
        }
    }
    return 0;
}

static void
release_list(PtlTensorImpl **idx, int k)
{
    for (int i = 0; i < k; i++) {
        ptl_xdecref(idx[i]);
    }
}

/* index(self, indices): self gets zeros.index_put(indices, g, accumulate=True) */
int
index_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *idx[PTL_MAX_DIMS], *z;
    int k = n->num_next - 1, rc = -1;
    if (!NEEDS(0)) {
        return 0;
    }
    if (saved_list(n, 0, k, idx) == 0 && (z = input_zeros(n, 0, gi[0]->dtype)) != NULL) {
        PtlIValue a[4] = {ptl_iv_tensor(z), ptl_iv_tensorlist(idx, k), ptl_iv_tensor(gi[0]),
                          ptl_iv_bool(1)};
        rc = put(n, go, 0, callv(PTL_OP_index_put, 4, a));
        ptl_decref(z);
    }
    release_list(idx, k);
    return rc;
}

/* index_put(self, indices, values, accumulate): self gets g (with the written positions
 * zeroed unless accumulating), values gets g[indices] */
int
index_put_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *idx[PTL_MAX_DIMS], *z = NULL;
    int k = n->num_next - 2, rc = -1;
    if (saved_list(n, 0, k, idx) < 0) {
        goto done;
    }
    if (NEEDS(0)) {
        if (n->args[3].u.b) {
            if (put_same(n, go, 0, gi[0]) < 0) {
                goto done;
            }
        }
        else {
            if ((z = ptl_scalar_tensor(0.0, gi[0]->dtype, gi[0]->device)) == NULL) {
                goto done;
            }
            PtlIValue a[4] = {ptl_iv_tensor(gi[0]), ptl_iv_tensorlist(idx, k), ptl_iv_tensor(z),
                              ptl_iv_bool(0)};
            if (put(n, go, 0, callv(PTL_OP_index_put, 4, a)) < 0) {
                goto done;
            }
        }
    }
    if (NEEDS(k + 1)) {
        PtlIValue a[2] = {ptl_iv_tensor(gi[0]), ptl_iv_tensorlist(idx, k)};
        if (put(n, go, k + 1, callv(PTL_OP_index_Tensor, 2, a)) < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    ptl_xdecref(z);
    release_list(idx, k);
    return rc;
}

/* index_select(self, dim, index): self gets zeros.index_add(dim, index, g) */
int
index_select_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return give_accumulated_at_index(n, gi, go, PTL_OP_index_add);
}

/* g.index_select(dim, index) for the source-like edge 2 (times alpha), new ref or NULL */
static PtlTensorImpl *
select_of(PtlNode *n, PtlTensorImpl *g, PtlTensorImpl *index)
{
    PtlIValue a[3] = {ptl_iv_tensor(g), n->args[1], ptl_iv_tensor(index)};
    return callv(PTL_OP_index_select, 3, a);
}

/* g.index_fill(dim, index, 0), new ref or NULL */
static PtlTensorImpl *
fill_zero(PtlNode *n, PtlTensorImpl *g, PtlTensorImpl *index)
{
    PtlIValue a[4] = {ptl_iv_tensor(g), n->args[1], ptl_iv_tensor(index), ptl_iv_int(0)};
    return callv(PTL_OP_index_fill_int_Scalar, 4, a);
}

/* index_add(self, dim, index, source, alpha): self gets g, source gets
 * conj(alpha) * g.index_select(dim, index) (PyTorch 2.13 scales by alpha unconjugated, which
 * fails its own gradcheck for a complex alpha; its other alpha formulas conjugate) */
int
index_add_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *index = NULL, *sel = NULL;
    int one = n->args[4].tag != PTL_IV_COMPLEX && ptl_iv_to_double(&n->args[4]) == 1.0;
    int rc = -1;
    if (NEEDS(0) && put_same(n, go, 0, gi[0]) < 0) {
        return -1;
    }
    if (!NEEDS(2)) {
        return 0;
    }
    if (saved(n, 0, &index) == 0 && (sel = select_of(n, gi[0], index)) != NULL) {
        rc = one ? put_same(n, go, 2, sel) : put(n, go, 2, mul_scalar_conj(sel, &n->args[4]));
    }
    ptl_xdecref(sel);
    ptl_xdecref(index);
    return rc;
}

/* index_copy(self, dim, index, source) and index_fill(self, dim, index, value): self gets g
 * with the written slices zeroed; source gets g.index_select(dim, index), a tensor value
 * the sum of that (sum_source) */
static int
index_write_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go, int sum_source)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *index = sv(sc, n, 0);
    if (index == NULL || (NEEDS(0) && give(n, go, 0, own(sc, fill_zero(n, gi[0], index))) < 0)) {
        return scope_end(sc, -1);
    }
    if (n->num_next > 2 && NEEDS(2)) {
        PtlTensorImpl *sel = own(sc, select_of(n, gi[0], index));
        if (give(n, go, 2, sum_source ? f1(sc, PTL_OP_sum, sel) : sel) < 0) {
            return scope_end(sc, -1);
        }
    }
    return scope_end(sc, 0);
}

int
index_copy_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return index_write_backward(n, gi, go, 0);
}

int
index_fill_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return index_write_backward(n, gi, go, 1);
}

/* self of masked_fill and masked_scatter gets g.masked_fill(mask, 0) */
static int
masked_zero_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go, PtlTensorImpl *mask)
{
    PtlIValue a[3] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(mask), ptl_iv_int(0)};
    return NEEDS(0) ? put(n, go, 0, callv(PTL_OP_masked_fill_Scalar, 3, a)) : 0;
}

/* masked_fill(self, mask, value): self gets g.masked_fill(mask, 0); a tensor value gets the
 * sum of g where mask is set */
int
masked_fill_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *mask = NULL;
    int rc = -1;
    if (saved(n, 0, &mask) < 0 || masked_zero_backward(n, gi, go, mask) < 0) {
        goto done;
    }
    if (n->num_next > 2 && NEEDS(2) && put(n, go, 2, op2(PTL_OP_mul_Tensor, gi[0], mask)) < 0) {
        goto done;
    }
    rc = 0;
done:
    ptl_xdecref(mask);
    return rc;
}

/* masked_scatter(self, mask, source): self gets g.masked_fill(mask, 0); source's leading
 * elements get g.masked_select(mask), the rest zero */
int
masked_scatter_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *mask = NULL, *sel = NULL, *z = NULL, *pos = NULL, *flat = NULL;
    PtlIValue zero = ptl_iv_int(0);
    int rc = -1;
    if (saved(n, 0, &mask) < 0 || masked_zero_backward(n, gi, go, mask) < 0) {
        goto done;
    }
    if (NEEDS(2)) {
        const PtlInputMeta *m = &n->input_meta[2];
        int64_t numel = 1;
        for (int d = 0; d < m->dim; d++) {
            numel *= m->sizes[d];
        }
        if ((sel = op2(PTL_OP_masked_select, gi[0], mask)) == NULL ||
            (z = ptl_empty(1, &numel, sel->dtype, sel->device)) == NULL ||
            ptl_fill_scalar(z, &zero) < 0 ||
            (pos = ptl_empty(1, &sel->numel, PTL_DTYPE_INT64, sel->device)) == NULL) {
            goto done;
        }
        for (int64_t i = 0; i < sel->numel; i++) {
            ((int64_t *)ptl_tensor_data(pos))[i] = i;
        }
        PtlTensorImpl *list[1] = {pos};
        PtlIValue b[4] = {ptl_iv_tensor(z), ptl_iv_tensorlist(list, 1), ptl_iv_tensor(sel),
                          ptl_iv_bool(0)};
        if ((flat = callv(PTL_OP_index_put, 4, b)) == NULL) {
            goto done;
        }
        PtlIValue r[2] = {ptl_iv_tensor(flat), ptl_iv_intlist(m->sizes, m->dim)};
        if (put(n, go, 2, callv(PTL_OP_reshape, 2, r)) < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    ptl_xdecref(mask);
    ptl_xdecref(sel);
    ptl_xdecref(z);
    ptl_xdecref(pos);
    ptl_xdecref(flat);
    return rc;
}
