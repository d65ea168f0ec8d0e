/* derivatives/unary.c -- derivative formulas of the unary pointwise ops of
 * aten/native/unary.c: g * f'(x), with f' written from the saved input or result; zeros for
 * the piecewise constant ones (floor, ceil, trunc, round, sign).  Mirrors their rows of
 * tools/autograd/derivatives.yaml. */
#include <math.h>

#include "../formula.h"

#define LN2 0.693147180559945309417232121458176568
#define LN10 2.30258509299404568401799145468436421
#define TWO_OVER_SQRTPI 1.12837916709551257389615890312154517

/* ---- unary: g * f'(x) written with the saved input or result ---- */

/* grads_out[0] = g * factor, factor computed from the saved slot 0 by `make` */
static int
unary_chain(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go,
            PtlTensorImpl *(*make)(PtlTensorImpl *x))
{
    PtlTensorImpl *x = NULL, *f = NULL;
    int rc = -1;
    if (!NEEDS(0)) {
        return 0;
    }
    if (saved(n, 0, &x) < 0 || (f = make(x)) == NULL) {
        goto done;
    }
    if (ptl_dtype_is_complex(f->dtype)) {   /* holomorphic f: g * conj(f'(x)) */
        PtlTensorImpl *c = op1(PTL_OP_conj_physical, f);
        ptl_decref(f);
        if ((f = c) == NULL) {
            goto done;
        }
    }
    rc = put(n, go, 0, op2(PTL_OP_mul_Tensor, gi[0], f));
done:
    ptl_xdecref(x);
    ptl_xdecref(f);
    return rc;
}

static PtlTensorImpl *
same(PtlTensorImpl *x)
{
    ptl_incref(x);
    return x;
}

static PtlTensorImpl *
recip(PtlTensorImpl *x)
{
    return op1(PTL_OP_reciprocal, x);
}

/* 1 / (2 sqrt(x)) from the result r = sqrt(x) */
static PtlTensorImpl *
sqrt_factor(PtlTensorImpl *r)
{
    PtlTensorImpl *t = mul_num(r, 2.0), *f;
    if (t == NULL) {
        return NULL;
    }
    f = op1(PTL_OP_reciprocal, t);
    ptl_decref(t);
    return f;
}

static PtlTensorImpl *
cos_of(PtlTensorImpl *x)
{
    return op1(PTL_OP_cos, x);
}

static PtlTensorImpl *
neg_sin_of(PtlTensorImpl *x)
{
    PtlTensorImpl *s = op1(PTL_OP_sin, x), *f;
    if (s == NULL) {
        return NULL;
    }
    f = op1(PTL_OP_neg, s);
    ptl_decref(s);
    return f;
}

/* 1 - r^2 from r = tanh(x) */
static PtlTensorImpl *
tanh_factor(PtlTensorImpl *r)
{
    PtlTensorImpl *sq = op2(PTL_OP_mul_Tensor, r, r), *one, *f;
    if (sq == NULL || (one = ptl_wrapped_int(1)) == NULL) {
        ptl_xdecref(sq);
        return NULL;
    }
    f = op2(PTL_OP_rsub_Tensor, sq, one);
    ptl_decref(sq);
    ptl_decref(one);
    return f;
}

/* r (1 - r) from r = sigmoid(x) */
static PtlTensorImpl *
sigmoid_factor(PtlTensorImpl *r)
{
    PtlTensorImpl *one = ptl_wrapped_int(1), *omr, *f;
    if (one == NULL) {
        return NULL;
    }
    omr = op2(PTL_OP_rsub_Tensor, r, one);
    ptl_decref(one);
    if (omr == NULL) {
        return NULL;
    }
    f = op2(PTL_OP_mul_Tensor, r, omr);
    ptl_decref(omr);
    return f;
}

static PtlTensorImpl *
sign_of(PtlTensorImpl *x)
{
    return op1(PTL_OP_sign, x);
}

/* abs: g * sign(x), and for a complex x g * sgn(x) = g * x / |x| (0 at 0), which is not
 * holomorphic, so unary_chain's conjugate does not apply */
int
abs_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *x;
    if (!NEEDS(0)) {
        return 0;
    }
    if ((x = sv(sc, n, 0)) == NULL) {
        return scope_end(sc, -1);
    }
    if (!ptl_dtype_is_complex(x->dtype)) {
        return scope_end(sc, unary_chain(n, gi, go, sign_of));
    }
    PtlTensorImpl *a = f1(sc, PTL_OP_abs, x);
    return scope_end(sc, give(n, go, 0, MUL(gi[0], DIV(x, ADD(a, EQ(a, num(sc, 0.0)))))));
}

/* -r^2 from r = 1/x */
static PtlTensorImpl *
reciprocal_factor(PtlTensorImpl *r)
{
    PtlTensorImpl *sq = op2(PTL_OP_mul_Tensor, r, r), *f;
    if (sq == NULL) {
        return NULL;
    }
    f = op1(PTL_OP_neg, sq);
    ptl_decref(sq);
    return f;
}

static PtlTensorImpl *
twice(PtlTensorImpl *x)
{
    return mul_num(x, 2.0);
}

int
neg_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return NEEDS(0) ? put(n, go, 0, op1(PTL_OP_neg, gi[0])) : 0;
}

/* relu and relu_ (result saved): threshold_backward(g, result, 0), PyTorch's formula: one
 * pass, where g * (result > 0) took a comparison and a mixed-dtype multiply */
int
relu_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *r;
    if (!NEEDS(0)) {
        return 0;
    }
    if (saved(n, 0, &r) < 0) {
        return -1;
    }
    PtlIValue a[3] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(r), ptl_iv_int(0)};
    int rc = put(n, go, 0, callv(PTL_OP_threshold_backward, 3, a));
    ptl_decref(r);
    return rc;
}

#define UNARY_BACKWARD(NAME, MAKE)                                        \
    int                                                                   \
    NAME(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)              \
    {                                                                     \
        return unary_chain(n, gi, go, MAKE);                              \
    }
UNARY_BACKWARD(exp_backward, same)
UNARY_BACKWARD(log_backward, recip)
UNARY_BACKWARD(sqrt_backward, sqrt_factor)
UNARY_BACKWARD(sin_backward, cos_of)
UNARY_BACKWARD(cos_backward, neg_sin_of)
UNARY_BACKWARD(tanh_backward, tanh_factor)
UNARY_BACKWARD(sigmoid_backward, sigmoid_factor)
UNARY_BACKWARD(reciprocal_backward, reciprocal_factor)
UNARY_BACKWARD(square_backward, twice)
#undef UNARY_BACKWARD

/* ---- unary: g * factor(saved slot 0) ---- */

typedef PtlTensorImpl *(*FactorFn)(Scope *sc, PtlTensorImpl *x);

/* g * conj(factor) (a complex factor is that of a holomorphic f: Note [Complex autograd]) */
static int
unary_factor(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go, FactorFn factor)
{
    Scope scope = {0}, *sc = &scope;
    if (!NEEDS(0)) {
        return 0;
    }
    return scope_end(sc, give(n, go, 0, MUL(gi[0], CONJ(factor(sc, sv(sc, n, 0))))));
}

/* r ln 2 from r = 2^x */
static PtlTensorImpl *
exp2_factor(Scope *sc, PtlTensorImpl *r)
{
    return MULN(r, LN2);
}

/* r + 1 from r = e^x - 1 */
static PtlTensorImpl *
expm1_factor(Scope *sc, PtlTensorImpl *r)
{
    return ADD(r, inum(sc, 1));
}

static PtlTensorImpl *
log2_factor(Scope *sc, PtlTensorImpl *x)
{
    return f1(sc, PTL_OP_reciprocal, MULN(x, LN2));
}

static PtlTensorImpl *
log10_factor(Scope *sc, PtlTensorImpl *x)
{
    return f1(sc, PTL_OP_reciprocal, MULN(x, LN10));
}

static PtlTensorImpl *
log1p_factor(Scope *sc, PtlTensorImpl *x)
{
    return f1(sc, PTL_OP_reciprocal, ADD(x, inum(sc, 1)));
}

/* -r^3 / 2 from r = 1/sqrt(x) */
static PtlTensorImpl *
rsqrt_factor(Scope *sc, PtlTensorImpl *r)
{
    return MULN(MUL(MUL(r, r), r), -0.5);
}

/* 1 + r^2 from r = tan(x) */
static PtlTensorImpl *
tan_factor(Scope *sc, PtlTensorImpl *r)
{
    return ADD(MUL(r, r), inum(sc, 1));
}

/* 1 / sqrt(1 - x^2) */
static PtlTensorImpl *
asin_factor(Scope *sc, PtlTensorImpl *x)
{
    return f1(sc, PTL_OP_rsqrt, f2(sc, PTL_OP_rsub_Tensor, MUL(x, x), inum(sc, 1)));
}

static PtlTensorImpl *
acos_factor(Scope *sc, PtlTensorImpl *x)
{
    return NEG(asin_factor(sc, x));
}

static PtlTensorImpl *
atan_factor(Scope *sc, PtlTensorImpl *x)
{
    return f1(sc, PTL_OP_reciprocal, ADD(MUL(x, x), inum(sc, 1)));
}

static PtlTensorImpl *
sinh_factor(Scope *sc, PtlTensorImpl *x)
{
    return f1(sc, PTL_OP_cosh, x);
}

static PtlTensorImpl *
cosh_factor(Scope *sc, PtlTensorImpl *x)
{
    return f1(sc, PTL_OP_sinh, x);
}

/* 2/sqrt(pi) e^(-x^2) */
static PtlTensorImpl *
erf_factor(Scope *sc, PtlTensorImpl *x)
{
    return MULN(f1(sc, PTL_OP_exp, NEG(MUL(x, x))), TWO_OVER_SQRTPI);
}

/* sqrt(pi)/2 e^(r^2) from r = erfinv(x) */
static PtlTensorImpl *
erfinv_factor(Scope *sc, PtlTensorImpl *r)
{
    return MULN(f1(sc, PTL_OP_exp, MUL(r, r)), 1.0 / TWO_OVER_SQRTPI);
}

/* 1 where x is finite: nan_to_num passes the gradient only there */
static PtlTensorImpl *
finite_factor(Scope *sc, PtlTensorImpl *x)
{
    return f1(sc, PTL_OP_isfinite, x);
}

/* polygamma(order, x), a new tensor the scope owns */
static PtlTensorImpl *
polygamma_of(Scope *sc, int64_t order, PtlTensorImpl *x)
{
    PtlIValue v[2] = {ptl_iv_int(order), ptl_iv_tensor(x)};
    return x ? own(sc, callv(PTL_OP_polygamma, 2, v)) : NULL;
}

/* d lgamma(x) = digamma(x) */
static PtlTensorImpl *
digamma_of(Scope *sc, PtlTensorImpl *x)
{
    return f1(sc, PTL_OP_digamma, x);
}

/* d digamma(x) = polygamma(1, x) */
static PtlTensorImpl *
trigamma_of(Scope *sc, PtlTensorImpl *x)
{
    return polygamma_of(sc, 1, x);
}

/* 1 / sqrt(x^2 - 1); for a complex x 1 / (sqrt(x - 1) sqrt(x + 1)), which is acosh's
 * derivative on both sides of the imaginary axis (sqrt(x^2 - 1) changes sign across it) */
static PtlTensorImpl *
acosh_factor(Scope *sc, PtlTensorImpl *x)
{
    if (x != NULL && ptl_dtype_is_complex(x->dtype)) {
        return MUL(f1(sc, PTL_OP_rsqrt, SUB(x, inum(sc, 1))),
                   f1(sc, PTL_OP_rsqrt, ADD(x, inum(sc, 1))));
    }
    return f1(sc, PTL_OP_rsqrt, SUB(MUL(x, x), inum(sc, 1)));
}

/* 1 / sqrt(x^2 + 1) */
static PtlTensorImpl *
asinh_factor(Scope *sc, PtlTensorImpl *x)
{
    return f1(sc, PTL_OP_rsqrt, ADD(MUL(x, x), inum(sc, 1)));
}

/* 1 / (1 - x^2) */
static PtlTensorImpl *
atanh_factor(Scope *sc, PtlTensorImpl *x)
{
    return f1(sc, PTL_OP_reciprocal, f2(sc, PTL_OP_rsub_Tensor, MUL(x, x), inum(sc, 1)));
}

/* -2/sqrt(pi) e^(-x^2) */
static PtlTensorImpl *
erfc_factor(Scope *sc, PtlTensorImpl *x)
{
    return MULN(f1(sc, PTL_OP_exp, NEG(MUL(x, x))), -TWO_OVER_SQRTPI);
}

/* d I0(x) = I1(x) */
static PtlTensorImpl *
i0_factor(Scope *sc, PtlTensorImpl *x)
{
    return f1(sc, PTL_OP_special_i1, x);
}

/* d i0e(x) = i1e(x) - sgn(x) i0e(x) */
static PtlTensorImpl *
i0e_factor(Scope *sc, PtlTensorImpl *x)
{
    return SUB(f1(sc, PTL_OP_special_i1e, x),
               MUL(f1(sc, PTL_OP_sign, x), f1(sc, PTL_OP_special_i0e, x)));
}

/* d I1(x) = I0(x) - I1(x) / x, 1/2 at 0 */
static PtlTensorImpl *
i1_factor(Scope *sc, PtlTensorImpl *x)
{
    PtlTensorImpl *d = SUB(f1(sc, PTL_OP_i0, x), DIV(f1(sc, PTL_OP_special_i1, x), x));
    return WHERE(EQ(x, inum(sc, 0)), num(sc, 0.5), d);
}

/* d i1e(x) = i0e(x) - i1e(x) (sgn(x) + 1 / x), 1/2 at 0 */
static PtlTensorImpl *
i1e_factor(Scope *sc, PtlTensorImpl *x)
{
    PtlTensorImpl *k = ADD(f1(sc, PTL_OP_sign, x), f1(sc, PTL_OP_reciprocal, x));
    PtlTensorImpl *d = SUB(f1(sc, PTL_OP_special_i0e, x), MUL(f1(sc, PTL_OP_special_i1e, x), k));
    return WHERE(EQ(x, inum(sc, 0)), num(sc, 0.5), d);
}

#define FACTOR_BACKWARD(NAME, FACTOR)                                     \
    int                                                                   \
    NAME(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)              \
    {                                                                     \
        return unary_factor(n, gi, go, FACTOR);                           \
    }
FACTOR_BACKWARD(exp2_backward, exp2_factor)
FACTOR_BACKWARD(expm1_backward, expm1_factor)
FACTOR_BACKWARD(log2_backward, log2_factor)
FACTOR_BACKWARD(log10_backward, log10_factor)
FACTOR_BACKWARD(log1p_backward, log1p_factor)
FACTOR_BACKWARD(rsqrt_backward, rsqrt_factor)
FACTOR_BACKWARD(tan_backward, tan_factor)
FACTOR_BACKWARD(asin_backward, asin_factor)
FACTOR_BACKWARD(acos_backward, acos_factor)
FACTOR_BACKWARD(atan_backward, atan_factor)
FACTOR_BACKWARD(sinh_backward, sinh_factor)
FACTOR_BACKWARD(cosh_backward, cosh_factor)
FACTOR_BACKWARD(erf_backward, erf_factor)
FACTOR_BACKWARD(erfinv_backward, erfinv_factor)
FACTOR_BACKWARD(nan_to_num_backward, finite_factor)
FACTOR_BACKWARD(lgamma_backward, digamma_of)
FACTOR_BACKWARD(digamma_backward, trigamma_of)
FACTOR_BACKWARD(acosh_backward, acosh_factor)
FACTOR_BACKWARD(asinh_backward, asinh_factor)
FACTOR_BACKWARD(atanh_backward, atanh_factor)
FACTOR_BACKWARD(erfc_backward, erfc_factor)
FACTOR_BACKWARD(i0_backward, i0_factor)
FACTOR_BACKWARD(special_i0e_backward, i0e_factor)
FACTOR_BACKWARD(special_i1_backward, i1_factor)
FACTOR_BACKWARD(special_i1e_backward, i1e_factor)
#undef FACTOR_BACKWARD

/* floor, ceil, trunc, round, sign: piecewise constant, so PyTorch returns zeros */
int
zeros_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    return NEEDS(0) ? scope_end(sc, give(n, go, 0, zeros_of(sc, gi[0]))) : 0;
}

/* polygamma(n, x) and x.polygamma_(n): g * polygamma(n + 1, x) */
int
polygamma_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    int64_t order = ptl_iv_to_int(&n->args[n->op->id == PTL_OP_polygamma_ ? 1 : 0]);
    if (!NEEDS(0)) {
        return 0;
    }
    return scope_end(sc, give(n, go, 0, MUL(gi[0], polygamma_of(sc, order + 1, sv(sc, n, 0)))));
}

/* frexp: the mantissa is x / 2^exponent, so g / 2^exponent (the exponent, saved slot 0, is
 * piecewise constant and an integer: no gradient) */
int
frexp_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    if (!NEEDS(0) || gi[0] == NULL) {
        return 0;
    }
    return scope_end(sc, give(n, go, 0, DIV(gi[0], f1(sc, PTL_OP_exp2, sv(sc, n, 0)))));
}
