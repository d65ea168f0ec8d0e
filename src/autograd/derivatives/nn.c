/* derivatives/nn.c -- derivative formulas of the ops of aten/native/nn.c (softmax,
 * log_softmax, nll_loss, binary_cross_entropy, the regression losses, embedding) and of their
 * backward ops (double backward).  Mirrors their rows of tools/autograd/derivatives.yaml and
 * FunctionsManual.cpp (softmax_double_backward, binary_cross_entropy_target_backward,
 * mse_loss_double_backward, ...): first derivatives
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

/* _ptl_embedding_bag(weight, indices, bag, scale, num_bags, mean); saved: the four tensors
 * (Note [Embedding bags]).  With rows = g.index_select(0, bag), g first divided by each
 * bag's row count (bincount(bag)) for mean:
 *   weight: zeros_like(weight).index_add(0, indices, rows [* scale.unsqueeze(1)])
 *   scale:  (rows * weight.index_select(0, indices)).sum(1) */
int
embedding_bag_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope s = {.n = 0}, *sc = &s;
    PtlTensorImpl *w = sv(sc, n, 0), *idx = sv(sc, n, 1), *bag = sv(sc, n, 2), *scale = NULL;
    int64_t one = 1;
    int rc = -1;
    if (w == NULL || idx == NULL || bag == NULL || sv_opt(sc, n, 3, &scale) < 0) {
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
        PtlIValue b[4] = {ptl_iv_tensor(z), ptl_iv_int(0), ptl_iv_tensor(idx), ptl_iv_tensor(r)};
        if (give(n, go, 0, fv(sc, PTL_OP_index_add, 4, b)) < 0) {
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

/* The regression losses (Note [Regression losses] in aten/native/nn.c): mse_loss(self,
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

/* ---- losses, embedding ---- */

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
