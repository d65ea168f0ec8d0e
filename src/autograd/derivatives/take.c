/* derivatives/take.c -- the derivative formula of aten/native/take.c's take.  Mirrors its
 * row of tools/autograd/derivatives.yaml. */
#include "../formula.h"

/* take(self, index): self gets zeros(numel).index_put([index.flatten()], g.flatten(),
 * accumulate=True) reshaped to self's shape */
int
take_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    const PtlInputMeta *m = &n->input_meta[0];
    PtlTensorImpl *index = NULL, *z = NULL, *fi = NULL, *fg = NULL, *acc = NULL;
    PtlIValue zero = ptl_iv_int(0);
    int64_t numel = 1, minus1 = -1;
    int rc = -1;
    if (!NEEDS(0)) {
        return 0;
    }
    for (int d = 0; d < m->dim; d++) {
        numel *= m->sizes[d];
    }
    if (saved(n, 0, &index) < 0 || (z = ptl_empty(1, &numel, gi[0]->dtype, m->device)) == NULL ||
        ptl_fill_scalar(z, &zero) < 0) {
        goto done;
    }
    PtlIValue a[2] = {ptl_iv_tensor(index), ptl_iv_intlist(&minus1, 1)};
    if ((fi = callv(PTL_OP_reshape, 2, a)) == NULL) {
        goto done;
    }
    a[0] = ptl_iv_tensor(gi[0]);
    if ((fg = callv(PTL_OP_reshape, 2, a)) == NULL) {
        goto done;
    }
    PtlTensorImpl *list[1] = {fi};
    PtlIValue b[4] = {ptl_iv_tensor(z), ptl_iv_tensorlist(list, 1), ptl_iv_tensor(fg),
                      ptl_iv_bool(1)};
    if ((acc = callv(PTL_OP_index_put, 4, b)) == NULL) {
        goto done;
    }
    PtlIValue r[2] = {ptl_iv_tensor(acc), ptl_iv_intlist(m->sizes, m->dim)};
    rc = put(n, go, 0, callv(PTL_OP_reshape, 2, r));
done:
    ptl_xdecref(index);
    ptl_xdecref(z);
    ptl_xdecref(fi);
    ptl_xdecref(fg);
    ptl_xdecref(acc);
    return rc;
}
