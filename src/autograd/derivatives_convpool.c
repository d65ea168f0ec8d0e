/* derivatives_convpool.c -- derivative formulas of the NN ops of native/conv.c, pool.c and
 * resample.c.  Mirrors the rows of tools/autograd/derivatives.yaml for convolution,
 * max_pool*_with_indices, avg_pool*, adaptive pools, the pads, upsample_*, im2col/col2im,
 * grid_sampler_2d and affine_grid_generator.  Each formula calls the op's *_backward
 * kernel through the dispatcher with the forward's arguments (node->args). */
#include "derivatives_convpool.h"
#include "formula.h"

/* Calls op `id` with the `k` arguments given and collects its first `nret` returns into
 * out (new refs; undefined returns stay NULL).  0 or -1. */
static int
call_multi(PtlOpId id, int k, const PtlIValue *given, int nret, PtlTensorImpl **out)
{
    PtlIValue st[PTL_SCHEMA_MAX_ARGS];
    const PtlOperator *op = ptl_op(id);
    memcpy(st, given, sizeof(PtlIValue) * (size_t)k);
    for (int i = k; i < op->schema.nargs; i++) {
        st[i] = op->schema.args[i].def;
    }
    if (ptl_dispatcher_call(op, st) < 0) {
        return -1;
    }
    for (int i = 0; i < nret; i++) {
        out[i] = st[i].tag == PTL_IV_TENSOR ? st[i].u.t : NULL;
    }
    return 0;
}

/* convolution: one convolution_backward call yields the three gradients. */
int
convolution_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *x = NULL, *w = NULL, *r[3] = {NULL, NULL, NULL};
    int64_t mask[3] = {NEEDS(0) != 0, NEEDS(1) != 0, NEEDS(2) != 0};
    int64_t bsz;
    int rc = -1;
    if (gi[0] == NULL) {
        return 0;
    }
    if (saved(n, 0, &x) < 0 || saved(n, 1, &w) < 0) {
        goto done;
    }
    bsz = n->args[6].u.b ? w->sizes[1] * n->args[8].u.i : w->sizes[0];
    PtlIValue a[11] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(x), ptl_iv_tensor(w),
                       ptl_iv_intlist(&bsz, 1), n->args[3], n->args[4], n->args[5],
                       n->args[6], n->args[7], n->args[8], ptl_iv_intlist(mask, 3)};
    if (call_multi(PTL_OP_convolution_backward, 11, a, 3, r) < 0) {
        goto done;
    }
    rc = 0;
    for (int i = 0; i < 3; i++) {
        if (r[i] != NULL && put(n, go, i, r[i]) < 0) {
            rc = -1;
        }
        r[i] = NULL;
    }
done:
    ptl_xdecref(x);
    ptl_xdecref(w);
    return rc;
}
