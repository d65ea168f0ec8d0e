/* derivatives_lossgrad.c -- the gradients of a loss for its target (the lossgrad section
 * of derivatives.def).  Mirrors the binary_cross_entropy row of
 * tools/autograd/derivatives.yaml and binary_cross_entropy_target_backward in
 * FunctionsManual.cpp, and the function names the generated check_no_requires_grad calls
 * print for the nll_loss ops. */
#include "derivatives_lossgrad.h"
#include "formula.h"

/* binary_cross_entropy(self, target, weight, reduction); saved: self, target, weight.
 *   self:   binary_cross_entropy_backward(g, x, t, w, reduction)
 *   target: g w (log(1 - x) - log(x)) [/ numel for mean], i.e. -logit(x): no eps clamp, so
 *           x = 0 gives +inf and x = 1 gives -inf, as in PyTorch.
 * Both are written with dispatcher ops, so they differentiate again; weight is refused
 * when the call is recorded (derivatives.def). */
int
binary_cross_entropy_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope s = {.n = 0}, *sc = &s;
    PtlTensorImpl *x = NULL, *t = NULL, *w = NULL, *g = gi[0];
    int64_t reduction = ptl_iv_to_int(&n->args[3]);
    int rc = -1;
    if (saved(n, 0, &x) < 0 || own(sc, x) == NULL || saved(n, 1, &t) < 0 ||
        own(sc, t) == NULL || saved(n, 2, &w) < 0 || (w != NULL && own(sc, w) == NULL)) {
        goto done;
    }
    if (NEEDS(0)) {
        PtlIValue a[5] = {ptl_iv_tensor(g), ptl_iv_tensor(x), ptl_iv_tensor(t),
                          w ? ptl_iv_tensor(w) : ptl_iv_none(), n->args[3]};
        if (give(n, go, 0, fv(sc, PTL_OP_binary_cross_entropy_backward, 5, a)) < 0) {
            goto done;
        }
    }
    if (NEEDS(1)) {
        PtlTensorImpl *neg_logit = SUB(f1(sc, PTL_OP_log1p, f1(sc, PTL_OP_neg, x)),
                                       f1(sc, PTL_OP_log, x));
        PtlTensorImpl *r = MUL(neg_logit, g);
        if (w != NULL) {
            r = MUL(r, w);
        }
        if (reduction == 1) {
            /* mean: every term carries 1 / numel */
            PtlTensorImpl *cnt = own(sc, ptl_wrapped_double((double)t->numel));
            r = r && cnt ? f2(sc, PTL_OP_div_Tensor, r, cnt) : NULL;
        }
        if (give(n, go, 1, r) < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

/* nll_loss_nd runs PyTorch's nll_loss (1-d and 2-d input) or nll_loss2d (other shapes) */
const char *
nll_loss_forward_name(const PtlIValue *args)
{
    return args[0].u.t->dim <= 2 ? "nll_loss_forward" : "nll_loss2d_forward";
}

/* nll_loss_nd_backward(grad_output, self, ...) */
const char *
nll_loss_backward_name(const PtlIValue *args)
{
    return args[1].u.t->dim <= 2 ? "nll_loss_backward" : "nll_loss2d_backward";
}
