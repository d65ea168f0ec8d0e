/* derivatives/special.c -- derivative formulas of the special functions of
 * aten/native/special.c that PyTorch differentiates: zeta (in its second argument only),
 * entr, ndtr, log_ndtr, ndtri and erfcx.  Mirrors their rows of
 * tools/autograd/derivatives.yaml (ndtr is a composite there: its derivative is the normal
 * density either way).  The Bessel and Airy functions are not differentiable in PyTorch
 * (PTL_OPF_NONDIFF in ops.def). */
#include <math.h>

#include "../formula.h"

#define SQRT_2PI 2.50662827463100050241576528481104525
#define TWO_OVER_SQRTPI 1.12837916709551257389615890312154517

/* zeta(x, q): d/dq = -x zeta(x + 1, q); the derivative in x is PyTorch's
 * not_implemented("zeta") */
int
special_zeta_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    if (NEEDS(0)) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED,
                             "the derivative for 'zeta' is not implemented.");
    }
    if (!NEEDS(1)) {
        return 0;
    }
    PtlTensorImpl *x = sv(sc, n, 0), *q = sv(sc, n, 1);
    PtlTensorImpl *z = f2(sc, PTL_OP_special_zeta, ADD(x, inum(sc, 1)), q);
    return scope_end(sc, give(n, go, 1, MUL(gi[0], NEG(MUL(x, z)))));
}

/* entr(x) = -x log x: g (-(1 + log x)) */
int
special_entr_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    if (!NEEDS(0)) {
        return 0;
    }
    PtlTensorImpl *x = sv(sc, n, 0);
    PtlTensorImpl *d = NEG(ADD(f1(sc, PTL_OP_log, x), inum(sc, 1)));
    return scope_end(sc, give(n, go, 0, MUL(gi[0], d)));
}

/* ndtr: g e^(-x^2/2) / sqrt(2 pi) */
int
special_ndtr_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    if (!NEEDS(0)) {
        return 0;
    }
    PtlTensorImpl *x = sv(sc, n, 0);
    PtlTensorImpl *d = MULN(f1(sc, PTL_OP_exp, MULN(MUL(x, x), -0.5)), 1.0 / SQRT_2PI);
    return scope_end(sc, give(n, go, 0, MUL(gi[0], d)));
}

/* log_ndtr (r its result): g e^(-(r + x^2/2)) / sqrt(2 pi) */
int
special_log_ndtr_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    if (!NEEDS(0)) {
        return 0;
    }
    PtlTensorImpl *x = sv(sc, n, 0), *r = sv(sc, n, 1);
    PtlTensorImpl *e = f1(sc, PTL_OP_exp, NEG(ADD(r, MULN(MUL(x, x), 0.5))));
    return scope_end(sc, give(n, go, 0, MUL(gi[0], MULN(e, 1.0 / SQRT_2PI))));
}

/* ndtri (r its result): g sqrt(2 pi) e^(r^2/2) */
int
special_ndtri_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    if (!NEEDS(0)) {
        return 0;
    }
    PtlTensorImpl *r = sv(sc, n, 0);
    PtlTensorImpl *e = f1(sc, PTL_OP_exp, MULN(MUL(r, r), 0.5));
    return scope_end(sc, give(n, go, 0, MUL(gi[0], MULN(e, SQRT_2PI))));
}

/* erfcx (r its result): g (2 x r - 2 / sqrt(pi)) */
int
special_erfcx_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    if (!NEEDS(0)) {
        return 0;
    }
    PtlTensorImpl *x = sv(sc, n, 0), *r = sv(sc, n, 1);
    PtlTensorImpl *d = SUB(MULN(MUL(x, r), 2.0), num(sc, TWO_OVER_SQRTPI));
    return scope_end(sc, give(n, go, 0, MUL(gi[0], d)));
}
