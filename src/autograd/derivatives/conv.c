/* derivatives/conv.c -- derivative formulas of the ops of aten/native/conv.c
 * (convolution, im2col, col2im) and of convolution_backward (double backward).  Mirrors
 * their rows of tools/autograd/derivatives.yaml and _convolution_double_backward in
 * FunctionsManual.cpp.  The first derivatives call the op's backward kernel through the
 * dispatcher with the forward's arguments (node->args). */
#include "../formula.h"

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

/* im2col's gradient is col2im to the input's spatial size, and the other way round. */
int
im2col_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    const PtlInputMeta *m = &n->input_meta[0];
    if (!NEEDS(0) || gi[0] == NULL) {
        return 0;
    }
    PtlIValue a[6] = {ptl_iv_tensor(gi[0]), ptl_iv_intlist(m->sizes + m->dim - 2, 2),
                      n->args[1], n->args[2], n->args[3], n->args[4]};
    return put(n, go, 0, callv(PTL_OP_col2im, 6, a));
}

int
col2im_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    if (!NEEDS(0) || gi[0] == NULL) {
        return 0;
    }
    PtlIValue a[5] = {ptl_iv_tensor(gi[0]), n->args[2], n->args[3], n->args[4], n->args[5]};
    return put(n, go, 0, callv(PTL_OP_im2col, 5, a));
}

/* Calls op `id` on a[0..k) (the rest defaulted) and returns its return `which` (owned by
 * the scope); the other returns are released. */
static PtlTensorImpl *
call_ret(Scope *sc, PtlOpId id, int k, const PtlIValue *given, int which)
{
    PtlTensorImpl *r[PTL_SCHEMA_MAX_RETS] = {NULL};
    int nrets = ptl_op(id)->schema.nrets;
    if (call_multi(id, k, given, nrets, r) < 0) {
        return NULL;
    }
    for (int i = 0; i < nrets; i++) {
        if (i != which) {
            ptl_xdecref(r[i]);
        }
    }
    if (r[which] == NULL) {
        ptl_error_set(PTL_ERR_RUNTIME, "derivative formula: %s returned no tensor",
                      ptl_op(id)->schema.name);
    }
    return own(sc, r[which]);
}

/* ---- convolution_backward (double backward) ---- */

/* convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
 * transposed, output_padding, groups, output_mask) -> (gI, gW, gB); saved gO, input,
 * weight.  With incoming ggI, ggW, ggB (PyTorch's _convolution_double_backward):
 *   grad_output: conv(ggI, W) + conv(I, ggW) + ggB
 *   input:       the input gradient of conv(I, ggW) against gO
 *   weight:      the weight gradient of conv(ggI, W) against gO */
int
convolution_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope s = {.n = 0}, *sc = &s;
    PtlTensorImpl *g = NULL, *x = NULL, *w = NULL, *ggi = gi[0], *ggw = gi[1], *ggb = gi[2];
    int rc = -1;
    if (sv_opt(sc, n, 0, &g) < 0 || sv_opt(sc, n, 1, &x) < 0 || sv_opt(sc, n, 2, &w) < 0) {
        goto done;
    }
    if (NEEDS(0) && (ggi != NULL || ggw != NULL || ggb != NULL)) {
        PtlTensorImpl *t = NULL;
        if (ggi != NULL) {
            PtlIValue a[9] = {ptl_iv_tensor(ggi), ptl_iv_tensor(w),
                              ggb ? ptl_iv_tensor(ggb) : ptl_iv_none(), n->args[4], n->args[5],
                              n->args[6], n->args[7], n->args[8], n->args[9]};
            if ((t = fv(sc, PTL_OP_convolution, 9, a)) == NULL) {
                goto done;
            }
        }
        if (ggw != NULL) {
            PtlIValue a[9] = {ptl_iv_tensor(x), ptl_iv_tensor(ggw),
                              ggb && !ggi ? ptl_iv_tensor(ggb) : ptl_iv_none(), n->args[4],
                              n->args[5], n->args[6], n->args[7], n->args[8], n->args[9]};
            PtlTensorImpl *u = fv(sc, PTL_OP_convolution, 9, a);
            if ((t = t ? ADD(t, u) : u) == NULL) {
                goto done;
            }
        }
        if (t == NULL) {
            /* only the bias gradient is differentiated: ggB broadcast over grad_output */
            int64_t shape[PTL_MAX_DIMS];
            for (int d = 0; d < g->dim; d++) {
                shape[d] = d == 1 ? ggb->sizes[0] : 1;
            }
            PtlIValue a[2] = {ptl_iv_tensor(ggb), ptl_iv_intlist(shape, g->dim)};
            t = ADD(f1(sc, PTL_OP_zeros_like, g), fv(sc, PTL_OP_reshape, 2, a));
        }
        if (give(n, go, 0, t) < 0) {
            goto done;
        }
    }
    if (NEEDS(1) && ggw != NULL) {
        int64_t mask[3] = {1, 0, 0};
        PtlIValue a[11] = {ptl_iv_tensor(g), ptl_iv_tensor(x), ptl_iv_tensor(ggw), ptl_iv_none(),
                           n->args[4], n->args[5], n->args[6], n->args[7], n->args[8],
                           n->args[9], ptl_iv_intlist(mask, 3)};
        if (give(n, go, 1, call_ret(sc, PTL_OP_convolution_backward, 11, a, 0)) < 0) {
            goto done;
        }
    }
    if (NEEDS(2) && ggi != NULL) {
        int64_t mask[3] = {0, 1, 0};
        PtlIValue a[11] = {ptl_iv_tensor(g), ptl_iv_tensor(ggi), ptl_iv_tensor(w), ptl_iv_none(),
                           n->args[4], n->args[5], n->args[6], n->args[7], n->args[8],
                           n->args[9], ptl_iv_intlist(mask, 3)};
        if (give(n, go, 2, call_ret(sc, PTL_OP_convolution_backward, 11, a, 1)) < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}
