/* derivatives/loss.c -- derivative formulas of the regression losses of aten/native/loss.c
 * (mse_loss, smooth_l1_loss, huber_loss) and of their backward ops (double backward).
 * Mirrors their rows of tools/autograd/derivatives.yaml and FunctionsManual.cpp
 * (mse_loss_double_backward, smooth_l1_loss_double_backward, huber_loss_double_backward). */
#include "../formula.h"

/* The regression losses (Note [Regression losses] in aten/native/loss.c): mse_loss(self,
 * target, reduction), smooth_l1_loss(..., beta), huber_loss(..., delta); saved: self, target.
 *   self:   <loss>_backward(g, self, target, reduction[, beta or delta])
 *   target: <loss>_backward(g, target, self, reduction[, beta or delta])
 * nargs: the loss's schema arguments (3, or 4 with beta or delta). */
static int
reg_loss_grad(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go, PtlOpId backward, int nargs)
{
    Scope s = {.n = 0}, *sc = &s;
    PtlTensorImpl *x = NULL, *t = NULL;
    int rc = -1;
    if (sv_opt(sc, n, 0, &x) < 0 || sv_opt(sc, n, 1, &t) < 0) {
        goto done;
    }
    for (int i = 0; i < 2; i++) {
        PtlIValue a[5] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(i ? t : x),
                          ptl_iv_tensor(i ? x : t), n->args[2],
                          nargs > 3 ? n->args[3] : ptl_iv_none()};
        if (NEEDS(i) && give(n, go, i, fv(sc, backward, nargs + 1, a)) < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

int
mse_loss_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return reg_loss_grad(n, gi, go, PTL_OP_mse_loss_backward, 3);
}

int
smooth_l1_loss_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return reg_loss_grad(n, gi, go, PTL_OP_smooth_l1_loss_backward, 4);
}

int
huber_loss_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return reg_loss_grad(n, gi, go, PTL_OP_huber_loss_backward, 4);
}

/* <loss>_backward(gO, self, target, reduction[, p]); saved: gO, self, target.  With incoming
 * gg (FunctionsManual.cpp's mse_loss_double_backward, smooth_l1_loss_double_backward* and
 * huber_loss_double_backward*; the backward is linear in gO):
 *   grad_output: <loss>_backward(gg, self, target, ...) (summed to gO's shape by finish())
 *   self:   gg gO c [/ numel for mean], c = 2 (mse), [|self - target| < beta] / beta
 *           (smooth_l1; 0 when beta == 0) or [|self - target| < delta] (huber)
 *   target: minus self's
 * The mean's numel is gg's (the broadcast shape the backward's output has). */
static int
reg_loss_backward_grad(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go, PtlOpId backward,
                       int nargs)
{
    Scope s = {.n = 0}, *sc = &s;
    PtlTensorImpl *g = NULL, *x = NULL, *t = NULL, *gg = gi[0], *c;
    double p = nargs > 4 ? ptl_iv_to_double(&n->args[4]) : 0, scale = 1;
    int rc = -1;
    if (gg == NULL) {
        return 0;
    }
    if (sv_opt(sc, n, 0, &g) < 0 || sv_opt(sc, n, 1, &x) < 0 || sv_opt(sc, n, 2, &t) < 0) {
        goto done;
    }
    PtlIValue a[5] = {ptl_iv_tensor(gg), ptl_iv_tensor(x), ptl_iv_tensor(t), n->args[3],
                      nargs > 4 ? n->args[4] : ptl_iv_none()};
    if (NEEDS(0) && give(n, go, 0, fv(sc, backward, nargs, a)) < 0) {
        goto done;
    }
    if (!NEEDS(1) && !NEEDS(2)) {
        rc = 0;
        goto done;
    }
    if (ptl_iv_to_int(&n->args[3]) == 1 && gg->numel > 0) {
        scale = 1.0 / (double)gg->numel;
    }
    c = MUL(gg, g);
    if (backward == PTL_OP_mse_loss_backward) {
        c = MULN(c, 2.0 * scale);
    }
    else if (p == 0) {
        c = zeros_of(sc, c);
    }
    else {
        PtlTensorImpl *inside = LT(f1(sc, PTL_OP_abs, SUB(x, t)), num(sc, p));
        c = MULN(MUL(c, inside),
                 (backward == PTL_OP_smooth_l1_loss_backward ? 1.0 / p : 1.0) * scale);
    }
    if ((NEEDS(1) && give(n, go, 1, c) < 0) || (NEEDS(2) && give(n, go, 2, NEG(c)) < 0)) {
        goto done;
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

int
mse_loss_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return reg_loss_backward_grad(n, gi, go, PTL_OP_mse_loss_backward, 4);
}

int
smooth_l1_loss_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return reg_loss_backward_grad(n, gi, go, PTL_OP_smooth_l1_loss_backward, 5);
}

int
huber_loss_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return reg_loss_backward_grad(n, gi, go, PTL_OP_huber_loss_backward, 5);
}
