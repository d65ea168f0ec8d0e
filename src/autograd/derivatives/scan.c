/* derivatives/scan.c -- derivative formulas of the scans of aten/native/scan.c (cumsum,
 * cumprod).  Mirrors their rows of tools/autograd/derivatives.yaml and FunctionsManual.cpp
 * (cumprod_backward). */
#include "../formula.h"

/* sum_{k >= i} a_k along dim, as flip(cumsum(flip(a))): total - prefix + a would cancel
 * catastrophically where the a_k after i are small next to those before */
static PtlTensorImpl *
reverse_cumsum(Scope *sc, PtlTensorImpl *a, int64_t dim)
{
    PtlIValue fa[2] = {ptl_iv_tensor(a), ptl_iv_intlist(&dim, 1)};
    PtlIValue cv[2] = {ptl_iv_tensor(fv(sc, PTL_OP_flip, 2, fa)), ptl_iv_int(dim)};
    PtlIValue fc[2] = {ptl_iv_tensor(fv(sc, PTL_OP_cumsum, 2, cv)), ptl_iv_intlist(&dim, 1)};
    return fv(sc, PTL_OP_flip, 2, fc);
}

int
cumsum_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    if (!NEEDS(0)) {
        return 0;
    }
    if (n->input_meta[0].dim == 0) {
        return give(n, go, 0, gi[0]);
    }
    return scope_end(sc, give(n, go, 0, reverse_cumsum(sc, gi[0], ptl_iv_to_int(&n->args[1]))));
}

/* cumprod(x)_k = prod_{j <= k} x_j.  Without zeros: revcumsum(g r) / x.  With zeros (z the
 * first zero of a slice): before z the same formula holds (r_k = 0 from z on); at z the
 * gradient is revcumsum(g cumprod(x with x_z = 1)); after z it is 0. */
int
cumprod_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    if (!NEEDS(0)) {
        return 0;
    }
    if (n->input_meta[0].dim == 0) {
        return give(n, go, 0, gi[0]);
    }
    int64_t dim = ptl_iv_to_int(&n->args[1]);
    /* complex: the conjugated factors (Note [Complex autograd]) */
    PtlTensorImpl *x = CONJ(sv(sc, n, 0)), *r = CONJ(sv(sc, n, 1));
    PtlTensorImpl *zero = inum(sc, 0), *one = inum(sc, 1);
    PtlTensorImpl *z = EQ(x, zero), *any = f1(sc, PTL_OP_any, z);
    PtlTensorImpl *gr = reverse_cumsum(sc, MUL(gi[0], r), dim);
    if (any == NULL) {
        return scope_end(sc, -1);
    }
    if (ptl_item_readable(any) && !ptl_item_double(any)) {
        return scope_end(sc, give(n, go, 0, DIV(gr, x)));
    }
    PtlIValue cz_args[2] = {ptl_iv_tensor(z), ptl_iv_int(dim)};
    PtlTensorImpl *cz = fv(sc, PTL_OP_cumsum, 2, cz_args);
    PtlTensorImpl *before = EQ(cz, zero), *first = AND(z, EQ(cz, one));
    PtlIValue cp_args[2] = {ptl_iv_tensor(WHERE(first, one, x)), ptl_iv_int(dim)};
    PtlTensorImpl *at_first = reverse_cumsum(sc, MUL(gi[0], fv(sc, PTL_OP_cumprod, 2, cp_args)), dim);
    PtlTensorImpl *g = WHERE(before, DIV(gr, WHERE(before, x, one)), WHERE(first, at_first, zero));
    return scope_end(sc, give(n, go, 0, g));
}
