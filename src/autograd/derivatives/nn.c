/* derivatives/nn.c -- derivative formulas of the ops of aten/native/nn.c (softmax,
 * log_softmax, nll_loss, binary_cross_entropy) and of their backward ops (double
 * backward).  Mirrors their rows of tools/autograd/derivatives.yaml and FunctionsManual.cpp
 * (softmax_double_backward, binary_cross_entropy_target_backward, ...): first derivatives
 * call the op's backward kernel through the dispatcher; second derivatives are written with
 * dispatcher ops.  Also the function names the generated check_no_requires_grad prints for
 * the nll_loss ops (the PTL_NONDIFF rows). */
#include <math.h>

#include "../formula.h"

/* _softmax_backward_data(g, result, dim, input_dtype) */
static int
softmax_grad(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go, PtlOpId id)
{
    PtlTensorImpl *y;
    if (!NEEDS(0)) {
        return 0;
    }
    if (saved(n, 0, &y) < 0) {
        return -1;
    }
    PtlIValue a[4] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(y), n->args[1],
                      ptl_iv_dtype(n->input_meta[0].dtype)};
    int rc = put(n, go, 0, callv(id, 4, a));
    ptl_decref(y);
    return rc;
}

int
softmax_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return softmax_grad(n, gi, go, PTL_OP__softmax_backward_data);
}

int
log_softmax_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return softmax_grad(n, gi, go, PTL_OP__log_softmax_backward_data);
}

/* nll_loss_nd(self, target, weight, reduction, ignore_index); saved: self, target, weight.
 * self gets nll_loss_nd_backward(g, self, target, weight, reduction, ignore_index); target
 * is an index and weight is refused when the call is recorded (derivatives.def). */
int
nll_loss_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *x = NULL, *t = NULL, *w = NULL;
    int rc = -1;
    if (!NEEDS(0)) {
        return 0;
    }
    if (saved(n, 0, &x) == 0 && saved(n, 1, &t) == 0 && saved(n, 2, &w) == 0) {
        PtlIValue a[6] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(x), ptl_iv_tensor(t),
                          w ? ptl_iv_tensor(w) : ptl_iv_none(), n->args[3], n->args[4]};
        rc = put(n, go, 0, callv(PTL_OP_nll_loss_nd_backward, 6, a));
    }
    ptl_xdecref(x);
    ptl_xdecref(t);
    ptl_xdecref(w);
    return rc;
}

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

/* sum over `dim`, keeping it */
static PtlTensorImpl *
sum_keepdim(Scope *sc, PtlTensorImpl *a, int64_t dim)
{
    PtlIValue v[3] = {ptl_iv_tensor(a), ptl_iv_intlist(&dim, 1), ptl_iv_bool(1)};
    return fv(sc, PTL_OP_sum_dim_IntList, 3, v);
}

/* ---- softmax, log_softmax ---- */

/* _softmax_backward_data(gO, y, dim, input_dtype) = y (gO - sum(gO y)); its Jacobian in gO
 * is symmetric.  grad_output: the same op on gg; y: gg (gO - sum(gO y)) - gO sum(gg y).
 * _log_softmax_backward_data(gO, y, dim, input_dtype) = gO - exp(y) sum(gO).
 * grad_output: gg - sum(gg exp(y)); y: -gg exp(y) sum(gO).  Saved: gO, y. */
int
softmax_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope s = {.n = 0}, *sc = &s;
    PtlTensorImpl *g = NULL, *y = NULL, *ey = NULL, *gg = gi[0], *r;
    int64_t dim = n->args[2].u.i;
    int log = n->op->id == PTL_OP__log_softmax_backward_data;
    int rc = -1;
    if (gg == NULL) {
        return 0;
    }
    if (sv_opt(sc, n, 0, &g) < 0 || sv_opt(sc, n, 1, &y) < 0) {
        goto done;
    }
    if (log && (ey = f1(sc, PTL_OP_exp, y)) == NULL) {
        goto done;
    }
    if (NEEDS(0)) {
        r = log ? SUB(gg, sum_keepdim(sc, MUL(gg, ey), dim)) : same_op(sc, n, gg, y, 1);
        if (give(n, go, 0, r) < 0) {
            goto done;
        }
    }
    if (NEEDS(1)) {
        if (log) {
            r = NEG(MUL(MUL(gg, ey), sum_keepdim(sc, g, dim)));
        }
        else {
            PtlTensorImpl *a = MUL(gg, SUB(g, sum_keepdim(sc, MUL(g, y), dim)));
            r = SUB(a, MUL(g, sum_keepdim(sc, MUL(gg, y), dim)));
        }
        if (give(n, go, 1, r) < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

/* ---- losses ---- */

/* nll_loss_nd_backward(gO, self, target, weight, reduction, ignore_index); saved: target,
 * weight.  grad_output: nll_loss_nd of the incoming gradient; self: zeros; target is an
 * index; weight is refused when the call is recorded (derivatives.def). */
int
nll_loss_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope s = {.n = 0}, *sc = &s;
    PtlTensorImpl *t = NULL, *w = NULL;
    int rc = -1;
    if (gi[0] == NULL) {
        return 0;
    }
    if (sv_opt(sc, n, 0, &t) < 0 || sv_opt(sc, n, 1, &w) < 0) {
        goto done;
    }
    if (NEEDS(0)) {
        PtlIValue a[5] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(t),
                          w ? ptl_iv_tensor(w) : ptl_iv_none(), n->args[4], n->args[5]};
        if (give(n, go, 0, fv(sc, PTL_OP_nll_loss_nd, 5, a)) < 0) {
            goto done;
        }
    }
    rc = give_zeros(sc, n, go, 1, gi[0]);
done:
    return scope_end(sc, rc);
}

/* binary_cross_entropy_backward(gO, x, t, weight, reduction) = gO w (x - t) / (x (1 - x))
 * [/ numel for mean]; saved: gO, x, t, weight.  With incoming gg and PyTorch's eps = 1e-12
 * keeping the denominators finite at x = 0 and 1 (FunctionsManual.cpp's
 * binary_cross_entropy_double_backward*):
 *   grad_output: gg w (x - t) / ((x + eps) (1 - x + eps)) (summed to gO's shape by finish())
 *   x: gg gO w (x^2 - 2 t x + t) / ((x + eps)^2 (1 - x + eps)^2)
 *   t: -gg gO w / max(x (1 - x), eps)
 * weight is refused when the call is recorded (derivatives.def). */
int
binary_cross_entropy_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope s = {.n = 0}, *sc = &s;
    PtlTensorImpl *g = NULL, *x = NULL, *t = NULL, *w = NULL, *gg = gi[0], *de, *ggw;
    const double eps = 1e-12;
    int rc = -1;
    if (gg == NULL) {
        return 0;
    }
    if (sv_opt(sc, n, 0, &g) < 0 || sv_opt(sc, n, 1, &x) < 0 || sv_opt(sc, n, 2, &t) < 0 ||
        sv_opt(sc, n, 3, &w) < 0) {
        goto done;
    }
    if (ptl_iv_to_int(&n->args[4]) == 1) {
        /* mean: every term carries 1 / numel */
        gg = MULN(gg, 1.0 / (double)(x->numel > 0 ? x->numel : 1));
    }
    de = MUL(ADDN(x, eps), ADDN(RSUBN(1.0, x), eps));
    ggw = w ? MUL(gg, w) : gg;
    if (NEEDS(0) && give(n, go, 0, DIV(MUL(ggw, SUB(x, t)), de)) < 0) {
        goto done;
    }
    if (NEEDS(1)) {
        PtlTensorImpl *num2 = ADD(SUB(MUL(x, x), MULN(MUL(t, x), 2.0)), t);
        if (give(n, go, 1, DIV(MUL(MUL(ggw, g), num2), MUL(de, de))) < 0) {
            goto done;
        }
    }
    if (NEEDS(2)) {
        PtlIValue c[2] = {ptl_iv_tensor(MUL(x, RSUBN(1.0, x))), ptl_iv_double(eps)};
        PtlTensorImpl *d = fv(sc, PTL_OP_clamp_min, 2, c);
        if (give(n, go, 2, NEG(DIV(MUL(ggw, g), d))) < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

