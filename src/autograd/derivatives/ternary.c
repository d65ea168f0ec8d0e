/* derivatives/ternary.c -- derivative formulas of the ops of aten/native/ternary.c: lerp,
 * addcmul, addcdiv, where, clamp and clip.  Mirrors their rows of
 * tools/autograd/derivatives.yaml and FunctionsManual.cpp. */
#include "../formula.h"

/* lerp(self, end, w) = self + w (end - self): g (1 - w), g w, g (end - self) */
int
lerp_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *w;
    int rc = -1;
    if (n->op->id == PTL_OP_lerp_Scalar || n->op->id == PTL_OP_lerp__Scalar) {
        w = num(sc, ptl_iv_to_double(&n->args[2]));
    }
    else {
        w = sv(sc, n, 2);
    }
    if (NEEDS(0) && give(n, go, 0, MUL(gi[0], f2(sc, PTL_OP_rsub_Tensor, w, inum(sc, 1)))) < 0) {
        goto done;
    }
    if (NEEDS(1) && give(n, go, 1, MUL(gi[0], w)) < 0) {
        goto done;
    }
    if (NEEDS(2) && give(n, go, 2, MUL(gi[0], SUB(sv(sc, n, 1), sv(sc, n, 0)))) < 0) {
        goto done;
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

/* addcmul(self, t1, t2, value) = self + value t1 t2 */
int
addcmul_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *gv = MULN(gi[0], ptl_iv_to_double(&n->args[3]));
    int rc = -1;
    if (NEEDS(0) && give(n, go, 0, gi[0]) < 0) {
        goto done;
    }
    if (NEEDS(1) && give(n, go, 1, MUL(gv, sv(sc, n, 1))) < 0) {
        goto done;
    }
    if (NEEDS(2) && give(n, go, 2, MUL(gv, sv(sc, n, 0))) < 0) {
        goto done;
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

/* addcdiv(self, t1, t2, value) = self + value t1 / t2 */
int
addcdiv_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *t1 = sv(sc, n, 0), *t2 = sv(sc, n, 1);
    PtlTensorImpl *gv = DIV(MULN(gi[0], ptl_iv_to_double(&n->args[3])), t2);
    int rc = -1;
    if (NEEDS(0) && give(n, go, 0, gi[0]) < 0) {
        goto done;
    }
    if (NEEDS(1) && give(n, go, 1, gv) < 0) {
        goto done;
    }
    if (NEEDS(2) && give(n, go, 2, NEG(DIV(MUL(gv, t1), t2))) < 0) {
        goto done;
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

/* where(condition, self, other): inputs are (condition, self, other) */
int
where_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *c = sv(sc, n, 0), *zero = inum(sc, 0);
    int rc = -1;
    if (NEEDS(1) && give(n, go, 1, WHERE(c, gi[0], zero)) < 0) {
        goto done;
    }
    if (NEEDS(2) && give(n, go, 2, WHERE(c, zero, gi[0])) < 0) {
        goto done;
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

/* clamp(self, Scalar? min, Scalar? max), clamp_min, clamp_max: g where min <= x <= max */
int
clamp_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *x = sv(sc, n, 0), *mask = NULL;
    const PtlIValue *lo = &n->args[1], *hi = &n->args[2];
    int id = n->op->id;
    if (!NEEDS(0)) {
        return scope_end(sc, 0);
    }
    if (id == PTL_OP_clamp_max) {
        hi = lo;
        lo = NULL;
    }
    else if (id == PTL_OP_clamp_min) {
        hi = NULL;
    }
    if (lo != NULL && lo->tag != PTL_IV_NONE) {
        mask = GE(x, num(sc, ptl_iv_to_double(lo)));
    }
    if (hi != NULL && hi->tag != PTL_IV_NONE) {
        PtlTensorImpl *m = LE(x, num(sc, ptl_iv_to_double(hi)));
        mask = mask ? AND(mask, m) : m;
    }
    if (mask == NULL) {
        return scope_end(sc, give(n, go, 0, gi[0]));
    }
    return scope_end(sc, give(n, go, 0, WHERE(mask, gi[0], inum(sc, 0))));
}

/* clamp(self, Tensor? min, Tensor? max) = min(max(self, min), max): the gradient goes to
 * whichever of the three the output equals (max wins where max < min, as PyTorch) */
int
clamp_tensor_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *x = sv(sc, n, 0), *lo = NULL, *hi = NULL, *zero = inum(sc, 0);
    PtlTensorImpl *self_mask = NULL;
    int rc = -1;
    if (saved(n, 1, &lo) < 0 || saved(n, 2, &hi) < 0) {
        goto done;
    }
    own(sc, lo);
    own(sc, hi);
    if (lo != NULL) {
        self_mask = GE(x, lo);
    }
    if (hi != NULL) {
        self_mask = self_mask ? AND(self_mask, LE(x, hi)) : LE(x, hi);
    }
    if (NEEDS(0)) {
        PtlTensorImpl *g = self_mask ? WHERE(self_mask, gi[0], zero) : gi[0];
        if (give(n, go, 0, g) < 0) {
            goto done;
        }
    }
    if (NEEDS(1) && lo != NULL) {
        PtlTensorImpl *m = LT(x, lo);
        if (hi != NULL) {
            m = AND(m, LE(lo, hi));
        }
        if (give(n, go, 1, WHERE(m, gi[0], zero)) < 0) {
            goto done;
        }
    }
    if (NEEDS(2) && hi != NULL) {
        PtlTensorImpl *m = GT(x, hi);
        if (lo != NULL) {
            m = OR(m, LT(hi, lo));
        }
        if (give(n, go, 2, WHERE(m, gi[0], zero)) < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}
