/* derivatives/ternary.c -- derivative formulas of the ops of aten/native/ternary.c: lerp,
 * addcmul, addcdiv, where, clamp and clip.  Mirrors their rows of
 * tools/autograd/derivatives.yaml and FunctionsManual.cpp. */
#include "../formula.h"

/* lerp(self, end, w) = self + w (end - self): g conj(1 - w), g conj(w), g conj(end - self)
 * (the conjugates matter for complex operands only) */
int
lerp_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *w_conj, *one_minus_w_conj;
    int rc = -1;
    if (n->op->id == PTL_OP_lerp_Scalar || n->op->id == PTL_OP_lerp__Scalar) {
        /* conj(w) and conj(1 - w) as numbers, in double (an op on wrapped numbers alone
         * would compute in the default dtype) */
        double re = ptl_iv_to_double(&n->args[2]), im = ptl_iv_imag(&n->args[2]);
        w_conj = im != 0.0 ? own(sc, ptl_wrapped_complex(re, -im)) : num(sc, re);
        one_minus_w_conj = im != 0.0 ? own(sc, ptl_wrapped_complex(1.0 - re, im))
                                     : num(sc, 1.0 - re);
    }
    else {
        PtlTensorImpl *w = sv(sc, n, 2);
        w_conj = CONJ(w);
        one_minus_w_conj = CONJ(f2(sc, PTL_OP_rsub_Tensor, w, inum(sc, 1)));
    }
    if (NEEDS(0) && give(n, go, 0, MUL(gi[0], one_minus_w_conj)) < 0) {
        goto done;
    }
    if (NEEDS(1) && give(n, go, 1, MUL(gi[0], w_conj)) < 0) {
        goto done;
    }
    if (NEEDS(2) && give(n, go, 2, MUL(gi[0], CONJ(SUB(sv(sc, n, 1), sv(sc, n, 0))))) < 0) {
        goto done;
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

/* addcmul(self, t1, t2, value) = self + value t1 t2: g, g conj(value t2), g conj(value t1) */
int
addcmul_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *gv = MULS(gi[0], &n->args[3]);
    int rc = -1;
    if (NEEDS(0) && give(n, go, 0, gi[0]) < 0) {
        goto done;
    }
    if (NEEDS(1) && give(n, go, 1, MUL(gv, CONJ(sv(sc, n, 1)))) < 0) {
        goto done;
    }
    if (NEEDS(2) && give(n, go, 2, MUL(gv, CONJ(sv(sc, n, 0)))) < 0) {
        goto done;
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

/* addcdiv(self, t1, t2, value) = self + value t1 / t2: g, g conj(value / t2),
 * -g conj(value t1 / t2^2) */
int
addcdiv_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *t1 = CONJ(sv(sc, n, 0)), *t2 = CONJ(sv(sc, n, 1));
    PtlTensorImpl *gv = DIV(MULS(gi[0], &n->args[3]), t2);
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
