/* derivatives.c -- the derivative formulas of derivatives.def.  Mirrors
 * tools/autograd/derivatives.yaml and torch/csrc/autograd/FunctionsManual.cpp.
 *
 * Each formula is written with dispatcher ops, so under create_graph=True the gradient
 * itself is recorded and can be differentiated again.  A formula fills grads_out[i] for
 * every next edge i that needs a gradient (n->needs bit i); finish() reduces a broadcast
 * gradient back to the input's shape and dtype (PyTorch's sum_to + validate_outputs). */
#include <math.h>
#include <stdlib.h>

#include "derivatives_rng.h"
#include "formula.h"

#define LN2 0.693147180559945309417232121458176568
#define LN10 2.30258509299404568401799145468436421
#define TWO_OVER_SQRTPI 1.12837916709551257389615890312154517

/* ---- binary ---- */

static int
add_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    double alpha = ptl_iv_to_double(&n->args[2]);
    if (NEEDS(0) && put_same(n, go, 0, gi[0]) < 0) {
        return -1;
    }
    if (NEEDS(1)) {
        return alpha == 1.0 ? put_same(n, go, 1, gi[0]) : put(n, go, 1, mul_num(gi[0], alpha));
    }
    return 0;
}

static int
sub_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    double alpha = ptl_iv_to_double(&n->args[2]);
    if (NEEDS(0) && put_same(n, go, 0, gi[0]) < 0) {
        return -1;
    }
    return NEEDS(1) ? put(n, go, 1, mul_num(gi[0], -alpha)) : 0;
}

/* rsub(self, other, alpha) = other - alpha * self */
static int
rsub_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    double alpha = ptl_iv_to_double(&n->args[2]);
    if (NEEDS(0) && put(n, go, 0, mul_num(gi[0], -alpha)) < 0) {
        return -1;
    }
    return NEEDS(1) ? put_same(n, go, 1, gi[0]) : 0;
}

static int
mul_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *self = NULL, *other = NULL;
    int rc = -1;
    if (saved(n, 0, &self) < 0 || saved(n, 1, &other) < 0) {
        goto done;
    }
    if (NEEDS(0) && put(n, go, 0, op2(PTL_OP_mul_Tensor, gi[0], other)) < 0) {
        goto done;
    }
    if (NEEDS(1) && put(n, go, 1, op2(PTL_OP_mul_Tensor, gi[0], self)) < 0) {
        goto done;
    }
    rc = 0;
done:
    ptl_xdecref(self);
    ptl_xdecref(other);
    return rc;
}

/* d(a/b) = g/b, -g*a/b^2.  With a rounding mode (div.Tensor_mode 'trunc' or 'floor', whose
 * string argument the node keeps) the result is piecewise constant: zeros for both. */
static int
div_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *self = NULL, *other = NULL, *t1 = NULL, *t2 = NULL;
    int rc = -1;
    if (n->nargs > 2 && n->args[2].tag == PTL_IV_STRING) {
        return random_backward(n, gi, go);
    }
    if (saved(n, 0, &self) < 0 || saved(n, 1, &other) < 0) {
        goto done;
    }
    if (NEEDS(0) && put(n, go, 0, op2(PTL_OP_div_Tensor, gi[0], other)) < 0) {
        goto done;
    }
    if (NEEDS(1)) {
        if ((t1 = op2(PTL_OP_mul_Tensor, other, other)) == NULL ||
            (t2 = op2(PTL_OP_div_Tensor, self, t1)) == NULL) {
            goto done;
        }
        PTL_CLEAR(t1);
        if ((t1 = op2(PTL_OP_mul_Tensor, gi[0], t2)) == NULL ||
            put(n, go, 1, op1(PTL_OP_neg, t1)) < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    ptl_xdecref(self);
    ptl_xdecref(other);
    ptl_xdecref(t1);
    ptl_xdecref(t2);
    return rc;
}

/* d(a^b) = g * b * a^(b-1), g * a^b * log(a) (0 where a == 0 and b >= 0, as PyTorch) */
static int
pow_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *self = NULL, *ex = NULL, *res = NULL, *t1 = NULL, *t2 = NULL, *t3 = NULL;
    PtlTensorImpl *one = NULL, *zero = NULL;
    int rc = -1;
    if (saved(n, 0, &self) < 0 || saved(n, 1, &ex) < 0 || saved(n, 2, &res) < 0 ||
        (one = ptl_wrapped_int(1)) == NULL || (zero = ptl_wrapped_int(0)) == NULL) {
        goto done;
    }
    if (NEEDS(0)) {
        /* g * b * a^(b - 1) */
        if ((t1 = op2(PTL_OP_sub_Tensor, ex, one)) == NULL ||
            (t2 = op2(PTL_OP_pow_Tensor_Tensor, self, t1)) == NULL) {
            goto done;
        }
        PTL_CLEAR(t1);
        if ((t1 = op2(PTL_OP_mul_Tensor, t2, ex)) == NULL ||
            put(n, go, 0, op2(PTL_OP_mul_Tensor, gi[0], t1)) < 0) {
            goto done;
        }
        PTL_CLEAR(t1);
        PTL_CLEAR(t2);
    }
    if (NEEDS(1)) {
        /* g * a^b * log(a), with the a == 0 entries set to 0 */
        if ((t1 = op1(PTL_OP_log, self)) == NULL ||
            (t2 = op2(PTL_OP_mul_Tensor, res, t1)) == NULL ||
            (t3 = op2(PTL_OP_eq_Tensor, self, zero)) == NULL) {
            goto done;
        }
        PTL_CLEAR(t1);
        PtlIValue w[3] = {ptl_iv_tensor(t3), ptl_iv_tensor(zero), ptl_iv_tensor(t2)};
        if ((t1 = callv(PTL_OP_where_self, 3, w)) == NULL ||
            put(n, go, 1, op2(PTL_OP_mul_Tensor, gi[0], t1)) < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    ptl_xdecref(self);
    ptl_xdecref(ex);
    ptl_xdecref(res);
    ptl_xdecref(t1);
    ptl_xdecref(t2);
    ptl_xdecref(t3);
    ptl_xdecref(one);
    ptl_xdecref(zero);
    return rc;
}

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

/* (r > 0) from r = relu(x) */
static PtlTensorImpl *
relu_factor(PtlTensorImpl *r)
{
    PtlTensorImpl *zero = ptl_wrapped_int(0), *f;
    if (zero == NULL) {
        return NULL;
    }
    f = op2(PTL_OP_gt_Tensor, r, zero);
    ptl_decref(zero);
    return f;
}

static PtlTensorImpl *
sign_of(PtlTensorImpl *x)
{
    return op1(PTL_OP_sign, x);
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

static int
neg_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return NEEDS(0) ? put(n, go, 0, op1(PTL_OP_neg, gi[0])) : 0;
}

#define UNARY_BACKWARD(NAME, MAKE)                                        \
    static int                                                            \
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
UNARY_BACKWARD(relu_backward, relu_factor)
UNARY_BACKWARD(abs_backward, sign_of)
UNARY_BACKWARD(reciprocal_backward, reciprocal_factor)
UNARY_BACKWARD(square_backward, twice)
#undef UNARY_BACKWARD

/* ---- reductions ---- */

static PtlTensorImpl *
expand_to_input(PtlNode *n, PtlTensorImpl *g)
{
    PtlIValue a[2] = {ptl_iv_tensor(g), ptl_iv_intlist(n->input_meta[0].sizes, n->input_meta[0].dim)};
    return callv(PTL_OP_expand, 2, a);
}

static int
sum_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return NEEDS(0) ? put(n, go, 0, expand_to_input(n, gi[0])) : 0;
}

/* Re-inserts the reduced dims (keepdim=False) so g broadcasts against the input. */
static PtlTensorImpl *
unsqueeze_reduced(PtlNode *n, PtlTensorImpl *g)
{
    const PtlInputMeta *m = &n->input_meta[0];
    int keepdim = n->args[2].tag == PTL_IV_BOOL && n->args[2].u.b;
    int reduced[PTL_MAX_DIMS] = {0};
    if (n->args[1].tag != PTL_IV_INTLIST || n->args[1].u.il.n == 0) {
        for (int d = 0; d < m->dim; d++) {
            reduced[d] = 1;
        }
    }
    else {
        for (int64_t k = 0; k < n->args[1].u.il.n; k++) {
            int64_t d = n->args[1].u.il.data[k];
            reduced[d < 0 ? d + m->dim : d] = 1;
        }
    }
    ptl_incref(g);
    if (keepdim) {
        return g;
    }
    for (int d = 0; d < m->dim; d++) {
        if (!reduced[d]) {
            continue;
        }
        PtlIValue a[2] = {ptl_iv_tensor(g), ptl_iv_int(d)};
        PtlTensorImpl *u = callv(PTL_OP_unsqueeze, 2, a);
        ptl_decref(g);
        if ((g = u) == NULL) {
            return NULL;
        }
    }
    return g;
}

static int
sum_dim_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    if (!NEEDS(0)) {
        return 0;
    }
    PtlTensorImpl *u = unsqueeze_reduced(n, gi[0]);
    if (u == NULL) {
        return -1;
    }
    int rc = put(n, go, 0, expand_to_input(n, u));
    ptl_decref(u);
    return rc;
}

static int64_t
input_numel(const PtlInputMeta *m)
{
    int64_t k = 1;
    for (int d = 0; d < m->dim; d++) {
        k *= m->sizes[d];
    }
    return k;
}

static int
mean_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    if (!NEEDS(0)) {
        return 0;
    }
    PtlTensorImpl *s = mul_num(gi[0], 1.0 / (double)input_numel(&n->input_meta[0]));
    if (s == NULL) {
        return -1;
    }
    int rc = put(n, go, 0, expand_to_input(n, s));
    ptl_decref(s);
    return rc;
}

static int
mean_dim_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    if (!NEEDS(0)) {
        return 0;
    }
    const PtlInputMeta *m = &n->input_meta[0];
    int64_t count = 1;
    if (n->args[1].tag != PTL_IV_INTLIST || n->args[1].u.il.n == 0) {
        count = input_numel(m);
    }
    else {
        for (int64_t k = 0; k < n->args[1].u.il.n; k++) {
            int64_t d = n->args[1].u.il.data[k];
            count *= m->sizes[d < 0 ? d + m->dim : d];
        }
    }
    PtlTensorImpl *u = unsqueeze_reduced(n, gi[0]), *s;
    if (u == NULL) {
        return -1;
    }
    s = mul_num(u, 1.0 / (double)count);
    ptl_decref(u);
    if (s == NULL) {
        return -1;
    }
    int rc = put(n, go, 0, expand_to_input(n, s));
    ptl_decref(s);
    return rc;
}

/* ---- views ---- */

static int
reshape_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    if (!NEEDS(0)) {
        return 0;
    }
    PtlIValue a[2] = {ptl_iv_tensor(gi[0]),
                      ptl_iv_intlist(n->input_meta[0].sizes, n->input_meta[0].dim)};
    return put(n, go, 0, callv(PTL_OP_reshape, 2, a));
}

static int
t_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return NEEDS(0) ? put(n, go, 0, op1(PTL_OP_t, gi[0])) : 0;
}

static int
transpose_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlIValue a[3] = {ptl_iv_tensor(gi[0]), n->args[1], n->args[2]};
    return NEEDS(0) ? put(n, go, 0, callv(PTL_OP_transpose_int, 3, a)) : 0;
}

static int
permute_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    int64_t inv[PTL_MAX_DIMS];
    int dim = n->input_meta[0].dim;
    if (!NEEDS(0)) {
        return 0;
    }
    for (int i = 0; i < dim; i++) {
        int64_t d = n->args[1].u.il.data[i];
        inv[d < 0 ? d + dim : d] = i;
    }
    PtlIValue a[2] = {ptl_iv_tensor(gi[0]), ptl_iv_intlist(inv, dim)};
    return put(n, go, 0, callv(PTL_OP_permute, 2, a));
}

static int
expand_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return NEEDS(0) ? put_same(n, go, 0, gi[0]) : 0;   /* finish() sums to the input shape */
}

static int
unsqueeze_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return reshape_backward(n, gi, go);
}

/* select/slice: scatter g into zeros of the input's shape */
static int
scatter_into_zeros(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go, PtlOpId view_op, int nview)
{
    const PtlInputMeta *m = &n->input_meta[0];
    PtlTensorImpl *z, *v;
    PtlIValue a[5];
    if (!NEEDS(0)) {
        return 0;
    }
    if ((z = ptl_empty(m->dim, m->sizes, gi[0]->dtype, m->device)) == NULL) {
        return -1;
    }
    PtlIValue zero = ptl_iv_int(0);
    a[0] = ptl_iv_tensor(z);
    for (int i = 1; i < nview; i++) {
        a[i] = n->args[i];
    }
    if (ptl_fill_scalar(z, &zero) < 0 || (v = callv(view_op, nview, a)) == NULL) {
        ptl_decref(z);
        return -1;
    }
    PtlIValue c[2] = {ptl_iv_tensor(v), ptl_iv_tensor(gi[0])};
    PtlTensorImpl *r = callv(PTL_OP_copy_, 2, c);
    ptl_decref(v);
    ptl_xdecref(r);
    if (r == NULL) {
        ptl_decref(z);
        return -1;
    }
    return put(n, go, 0, z);
}

static int
select_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return scatter_into_zeros(n, gi, go, PTL_OP_select_int, 3);
}

static int
slice_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return scatter_into_zeros(n, gi, go, PTL_OP_slice_Tensor, 5);
}

static int
identity_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return NEEDS(0) ? put_same(n, go, 0, gi[0]) : 0;
}

/* copy_(self, src): self's old value does not matter; src gets g */
static int
copy_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return NEEDS(1) ? put_same(n, go, 1, gi[0]) : 0;
}

static int
zero_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    (void)n;
    (void)gi;
    (void)go;
    return 0;
}

/* ---- linear algebra ---- */

static int
mm_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *self = NULL, *other = NULL, *tt = NULL;
    int rc = -1;
    if (saved(n, 0, &self) < 0 || saved(n, 1, &other) < 0) {
        goto done;
    }
    if (NEEDS(0)) {
        if ((tt = op1(PTL_OP_t, other)) == NULL ||
            put(n, go, 0, op2(PTL_OP_mm, gi[0], tt)) < 0) {
            goto done;
        }
        PTL_CLEAR(tt);
    }
    if (NEEDS(1)) {
        if ((tt = op1(PTL_OP_t, self)) == NULL || put(n, go, 1, op2(PTL_OP_mm, tt, gi[0])) < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    ptl_xdecref(self);
    ptl_xdecref(other);
    ptl_xdecref(tt);
    return rc;
}

/* The Scope helpers (own, scope_end, f1, f2, f3, fv), num, give and the op shorthands
 * (MUL, ADD, ...): see Note [Formula scope] in formula.h. */

static PtlTensorImpl *
inum(Scope *sc, int64_t v)
{
    return own(sc, ptl_wrapped_int(v));
}

/* saved slot k (must be defined) */
static PtlTensorImpl *
sv(Scope *sc, PtlNode *n, int k)
{
    PtlTensorImpl *t;
    if (saved(n, k, &t) < 0) {
        return NULL;
    }
    if (t == NULL) {
        ptl_error_set(PTL_ERR_RUNTIME, "derivative formula: saved tensor %d is undefined", k);
        return NULL;
    }
    return own(sc, t);
}

static PtlTensorImpl *
zeros_of(Scope *sc, PtlTensorImpl *like)
{
    return f1(sc, PTL_OP_zeros_like, like);
}

static PtlTensorImpl *
zeros_sized(Scope *sc, const int64_t *sizes, int dim, PtlDtype dt)
{
    PtlIValue v[2] = {ptl_iv_intlist(sizes, dim), ptl_iv_dtype(dt)};
    return own(sc, callv(PTL_OP_zeros, 2, v));
}

/* zeros of input i's shape in dtype dt */
static PtlTensorImpl *
zeros_input(Scope *sc, PtlNode *n, int i, PtlDtype dt)
{
    return zeros_sized(sc, n->input_meta[i].sizes, n->input_meta[i].dim, dt);
}

static PtlTensorImpl *
reshape_to(Scope *sc, PtlTensorImpl *a, const int64_t *sizes, int dim)
{
    PtlIValue v[2] = {ptl_iv_tensor(a), ptl_iv_intlist(sizes, dim)};
    return fv(sc, PTL_OP_reshape, 2, v);
}

static PtlTensorImpl *
expand_to(Scope *sc, PtlTensorImpl *a, const PtlInputMeta *m)
{
    PtlIValue v[2] = {ptl_iv_tensor(a), ptl_iv_intlist(m->sizes, m->dim)};
    return fv(sc, PTL_OP_expand, 2, v);
}

static PtlTensorImpl *
transpose_last(Scope *sc, PtlTensorImpl *a)
{
    PtlIValue v[3] = {ptl_iv_tensor(a), ptl_iv_int(-2), ptl_iv_int(-1)};
    return fv(sc, PTL_OP_transpose_int, 3, v);
}

static PtlTensorImpl *
unsq(Scope *sc, PtlTensorImpl *a, int64_t d)
{
    PtlIValue v[2] = {ptl_iv_tensor(a), ptl_iv_int(d)};
    return fv(sc, PTL_OP_unsqueeze, 2, v);
}

/* ---- reduced dimensions: which input dims a reduction removed ---- */

typedef struct Reduced {
    int mask[PTL_MAX_DIMS];       /* 1: reduced */
    int64_t dims[PTL_MAX_DIMS];   /* the reduced dims, ascending */
    int ndims;
    int64_t count;                /* elements per reduced slice */
    int keepdim;
} Reduced;

/* From a dim argument (int, int[] (empty: all) or None: all) of an input with meta m. */
static void
reduced_from(Reduced *r, const PtlInputMeta *m, const PtlIValue *dim, int keepdim)
{
    memset(r->mask, 0, sizeof(r->mask));
    if (dim->tag == PTL_IV_INT) {
        int64_t d = dim->u.i;
        if (m->dim > 0) {
            r->mask[d < 0 ? d + m->dim : d] = 1;
        }
    }
    else if (dim->tag == PTL_IV_INTLIST && dim->u.il.n > 0) {
        for (int64_t k = 0; k < dim->u.il.n; k++) {
            int64_t d = dim->u.il.data[k];
            if (m->dim > 0) {
                r->mask[d < 0 ? d + m->dim : d] = 1;
            }
        }
    }
    else {
        for (int d = 0; d < m->dim; d++) {
            r->mask[d] = 1;
        }
    }
    r->ndims = 0;
    r->count = 1;
    for (int d = 0; d < m->dim; d++) {
        if (r->mask[d]) {
            r->dims[r->ndims++] = d;
            r->count *= m->sizes[d];
        }
    }
    r->keepdim = keepdim;
}

/* a reduction's output (or its gradient) with the reduced dims put back as size 1 */
static PtlTensorImpl *
keep(Scope *sc, PtlTensorImpl *a, const Reduced *r)
{
    if (a == NULL || r->keepdim) {
        return a;
    }
    for (int k = 0; k < r->ndims; k++) {
        a = unsq(sc, a, r->dims[k]);
    }
    return a;
}

static PtlTensorImpl *
sum_keep(Scope *sc, PtlTensorImpl *a, const Reduced *r)
{
    PtlIValue v[3] = {ptl_iv_tensor(a), ptl_iv_intlist(r->dims, r->ndims), ptl_iv_bool(1)};
    return r->ndims == 0 ? a : fv(sc, PTL_OP_sum_dim_IntList, 3, v);
}

static PtlTensorImpl *
mean_keep(Scope *sc, PtlTensorImpl *a, const Reduced *r)
{
    PtlIValue v[3] = {ptl_iv_tensor(a), ptl_iv_intlist(r->dims, r->ndims), ptl_iv_bool(1)};
    return r->ndims == 0 ? a : fv(sc, PTL_OP_mean_dim, 3, v);
}

/* ---- unary: g * factor(saved slot 0) ---- */

typedef PtlTensorImpl *(*FactorFn)(Scope *sc, PtlTensorImpl *x);

static int
unary_factor(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go, FactorFn factor)
{
    Scope scope = {0}, *sc = &scope;
    if (!NEEDS(0)) {
        return 0;
    }
    return scope_end(sc, give(n, go, 0, MUL(gi[0], factor(sc, sv(sc, n, 0)))));
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

#define FACTOR_BACKWARD(NAME, FACTOR)                                     \
    static int                                                            \
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
#undef FACTOR_BACKWARD

/* floor, ceil, trunc, round, sign: piecewise constant, so PyTorch returns zeros */
static int
zeros_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    return NEEDS(0) ? scope_end(sc, give(n, go, 0, zeros_of(sc, gi[0]))) : 0;
}

/* floor_divide: PyTorch records a node that refuses backward */
static int
floor_divide_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    (void)n;
    (void)gi;
    (void)go;
    return ptl_error_set(PTL_ERR_RUNTIME, "derivative for aten::floor_divide is not implemented");
}

/* ---- binary ---- */

/* remainder / fmod(self, other) = self - other * q with q = floor / trunc of self / other:
 * g, -g q (q is piecewise constant; its own gradient is zero) */
static int
rounded_mod_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go, PtlOpId round)
{
    Scope scope = {0}, *sc = &scope;
    if (NEEDS(0) && give(n, go, 0, gi[0]) < 0) {
        return -1;
    }
    if (NEEDS(1)) {
        PtlTensorImpl *q = f1(sc, round, DIV(sv(sc, n, 0), sv(sc, n, 1)));
        return scope_end(sc, give(n, go, 1, NEG(MUL(gi[0], q))));
    }
    return 0;
}

static int
remainder_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return rounded_mod_backward(n, gi, go, PTL_OP_floor);
}

static int
fmod_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return rounded_mod_backward(n, gi, go, PTL_OP_trunc);
}

/* atan2(a, b): g b / (a^2 + b^2), -g a / (a^2 + b^2) */
static int
atan2_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *a = sv(sc, n, 0), *b = sv(sc, n, 1);
    PtlTensorImpl *q = DIV(gi[0], ADD(MUL(a, a), MUL(b, b)));
    int rc = -1;
    if (NEEDS(0) && give(n, go, 0, MUL(q, b)) < 0) {
        goto done;
    }
    if (NEEDS(1) && give(n, go, 1, NEG(MUL(q, a))) < 0) {
        goto done;
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

/* maximum/minimum: the larger (smaller) side gets g; ties split it in half */
static int
extremum_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go, int is_max)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *a = sv(sc, n, 0), *b = sv(sc, n, 1), *zero = inum(sc, 0);
    PtlTensorImpl *half = WHERE(EQ(a, b), MULN(gi[0], 0.5), gi[0]);
    int rc = -1;
    if (NEEDS(0) && give(n, go, 0, WHERE(is_max ? LT(a, b) : GT(a, b), zero, half)) < 0) {
        goto done;
    }
    if (NEEDS(1) && give(n, go, 1, WHERE(is_max ? LT(b, a) : GT(b, a), zero, half)) < 0) {
        goto done;
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

static int
maximum_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return extremum_backward(n, gi, go, 1);
}

static int
minimum_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return extremum_backward(n, gi, go, 0);
}

/* fmax/fmin: self wins ties and wins where other is NaN (PyTorch's rule) */
static int
fextremum_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go, int is_max)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *a = sv(sc, n, 0), *b = sv(sc, n, 1), *zero = inum(sc, 0);
    PtlTensorImpl *self_wins = OR(is_max ? GE(a, b) : LE(a, b), f1(sc, PTL_OP_isnan, b));
    int rc = -1;
    if (NEEDS(0) && give(n, go, 0, WHERE(self_wins, gi[0], zero)) < 0) {
        goto done;
    }
    if (NEEDS(1) && give(n, go, 1, WHERE(self_wins, zero, gi[0])) < 0) {
        goto done;
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

static int
fmax_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return fextremum_backward(n, gi, go, 1);
}

static int
fmin_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return fextremum_backward(n, gi, go, 0);
}

/* lerp(self, end, w) = self + w (end - self): g (1 - w), g w, g (end - self) */
static int
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
static int
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
static int
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
static int
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
static int
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
static int
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

/* ---- reductions ---- */

/* 1 where x equals the kept-dim extremum e (NaN matches NaN: a NaN wins max/min) */
static PtlTensorImpl *
hits(Scope *sc, PtlTensorImpl *x, PtlTensorImpl *e)
{
    return OR(EQ(x, e), AND(f1(sc, PTL_OP_isnan, x), f1(sc, PTL_OP_isnan, e)));
}

/* g spread evenly over the elements of x equal to the kept-dim extremum e */
static PtlTensorImpl *
evenly(Scope *sc, PtlTensorImpl *g, PtlTensorImpl *x, PtlTensorImpl *e, const Reduced *r)
{
    PtlTensorImpl *mask = hits(sc, x, e);
    return DIV(MUL(g, mask), sum_keep(sc, mask, r));
}

/* amax/amin(self, dim=[], keepdim), max(), min(): evenly among ties */
static int
amax_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    Reduced r;
    int full = n->op->id == PTL_OP_max || n->op->id == PTL_OP_min;
    if (!NEEDS(0)) {
        return 0;
    }
    reduced_from(&r, &n->input_meta[0], full ? &(PtlIValue){.tag = PTL_IV_NONE} : &n->args[1],
                 !full && ptl_iv_to_int(&n->args[2]));
    PtlTensorImpl *x = sv(sc, n, 0);
    return scope_end(sc, give(n, go, 0, evenly(sc, keep(sc, gi[0], &r), x,
                                               keep(sc, sv(sc, n, 1), &r), &r)));
}

/* max.dim/min.dim(self, dim, keepdim): all of g to the index, the first extremum */
static int
max_dim_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    Reduced r;
    if (!NEEDS(0) || gi[0] == NULL) {
        return 0;
    }
    reduced_from(&r, &n->input_meta[0], &n->args[1], ptl_iv_to_int(&n->args[2]));
    PtlTensorImpl *mask = hits(sc, sv(sc, n, 0), keep(sc, sv(sc, n, 1), &r));
    PtlTensorImpl *first = mask;
    if (n->input_meta[0].dim > 0) {
        PtlIValue v[2] = {ptl_iv_tensor(mask), ptl_iv_int(r.dims[0])};
        first = AND(mask, EQ(fv(sc, PTL_OP_cumsum, 2, v), inum(sc, 1)));
    }
    return scope_end(sc, give(n, go, 0, WHERE(first, keep(sc, gi[0], &r), inum(sc, 0))));
}

/* aminmax(self, *, dim?, keepdim) -> (min, max): each output's g evenly among its ties */
static int
aminmax_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    Reduced r;
    PtlTensorImpl *x, *total = NULL;
    if (!NEEDS(0)) {
        return 0;
    }
    reduced_from(&r, &n->input_meta[0], &n->args[1], ptl_iv_to_int(&n->args[2]));
    x = sv(sc, n, 0);
    for (int k = 0; k < 2; k++) {
        if (gi[k] == NULL) {
            continue;
        }
        /* the extremum only picks the mask: computed from a detached x, it records nothing */
        PtlIValue v[3] = {ptl_iv_tensor(f1(sc, PTL_OP_detach, x)), ptl_iv_intlist(r.dims, r.ndims),
                          ptl_iv_bool(1)};
        PtlTensorImpl *e = fv(sc, k == 0 ? PTL_OP_amin : PTL_OP_amax, 3, v);
        PtlTensorImpl *part = evenly(sc, keep(sc, gi[k], &r), x, e, &r);
        total = total ? ADD(total, part) : part;
    }
    return scope_end(sc, give(n, go, 0, total));
}

/* prod of x along `dim` (kept) differentiated: g r / x without zeros; with zeros only a
 * lone zero gets a gradient, the product of the others (PyTorch's prod_backward) */
static PtlTensorImpl *
prod_grad(Scope *sc, PtlTensorImpl *g, PtlTensorImpl *x, PtlTensorImpl *r, int64_t dim)
{
    PtlTensorImpl *zero = inum(sc, 0), *one = inum(sc, 1);
    PtlTensorImpl *z = EQ(x, zero), *any = f1(sc, PTL_OP_any, z);
    if (any == NULL) {
        return NULL;
    }
    if (!ptl_item_double(any)) {
        return MUL(g, DIV(r, x));
    }
    PtlIValue zv[3] = {ptl_iv_tensor(z), ptl_iv_intlist(&dim, 1), ptl_iv_bool(1)};
    PtlTensorImpl *nz = fv(sc, PTL_OP_sum_dim_IntList, 3, zv), *xs = WHERE(z, one, x);
    PtlIValue pv[3] = {ptl_iv_tensor(xs), ptl_iv_int(dim), ptl_iv_bool(1)};
    PtlTensorImpl *ps = fv(sc, PTL_OP_prod_dim_int, 3, pv);
    PtlTensorImpl *others = WHERE(z, WHERE(EQ(nz, one), ps, zero),
                                  WHERE(EQ(nz, zero), DIV(ps, xs), zero));
    return MUL(g, others);
}

static int
prod_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    const PtlInputMeta *m = &n->input_meta[0];
    int64_t flat = -1;
    if (!NEEDS(0)) {
        return 0;
    }
    PtlTensorImpl *x = reshape_to(sc, sv(sc, n, 0), &flat, 1);
    PtlTensorImpl *g = prod_grad(sc, reshape_to(sc, gi[0], (int64_t[]){1}, 1), x,
                                 reshape_to(sc, sv(sc, n, 1), (int64_t[]){1}, 1), 0);
    return scope_end(sc, give(n, go, 0, reshape_to(sc, g, m->sizes, m->dim)));
}

static int
prod_dim_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    Reduced r;
    if (!NEEDS(0)) {
        return 0;
    }
    if (n->input_meta[0].dim == 0) {
        return give(n, go, 0, gi[0]);
    }
    reduced_from(&r, &n->input_meta[0], &n->args[1], ptl_iv_to_int(&n->args[2]));
    PtlTensorImpl *g = prod_grad(sc, keep(sc, gi[0], &r), sv(sc, n, 0),
                                 keep(sc, sv(sc, n, 1), &r), r.dims[0]);
    return scope_end(sc, give(n, go, 0, g));
}

/* sum_{k >= i} a_k along dim: total - inclusive prefix + a (no flip needed) */
static PtlTensorImpl *
reverse_cumsum(Scope *sc, PtlTensorImpl *a, int64_t dim)
{
    PtlIValue cv[2] = {ptl_iv_tensor(a), ptl_iv_int(dim)};
    PtlIValue sv3[3] = {ptl_iv_tensor(a), ptl_iv_intlist(&dim, 1), ptl_iv_bool(1)};
    return ADD(SUB(fv(sc, PTL_OP_sum_dim_IntList, 3, sv3), fv(sc, PTL_OP_cumsum, 2, cv)), a);
}

static int
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
static int
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
    PtlTensorImpl *x = sv(sc, n, 0), *r = sv(sc, n, 1), *zero = inum(sc, 0), *one = inum(sc, 1);
    PtlTensorImpl *z = EQ(x, zero), *any = f1(sc, PTL_OP_any, z);
    PtlTensorImpl *gr = reverse_cumsum(sc, MUL(gi[0], r), dim);
    if (any == NULL) {
        return scope_end(sc, -1);
    }
    if (!ptl_item_double(any)) {
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

/* nansum: g where x is not NaN */
static int
nansum_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    Reduced r;
    if (!NEEDS(0)) {
        return 0;
    }
    reduced_from(&r, &n->input_meta[0], &n->args[1], ptl_iv_to_int(&n->args[2]));
    PtlTensorImpl *ok = NOT(f1(sc, PTL_OP_isnan, sv(sc, n, 0)));
    return scope_end(sc, give(n, go, 0, MUL(keep(sc, gi[0], &r), ok)));
}

/* logsumexp(self, dim, keepdim): g exp(x - r) */
static int
logsumexp_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    Reduced r;
    if (!NEEDS(0)) {
        return 0;
    }
    reduced_from(&r, &n->input_meta[0], &n->args[1], ptl_iv_to_int(&n->args[2]));
    PtlTensorImpl *e = f1(sc, PTL_OP_exp, SUB(sv(sc, n, 0), keep(sc, sv(sc, n, 1), &r)));
    return scope_end(sc, give(n, go, 0, MUL(keep(sc, gi[0], &r), e)));
}

/* The dims, correction and keepdim of var/std/var_mean/std_mean in their three overloads:
 * (self, unbiased), (self, dim?, unbiased, keepdim), (self, dim?, *, correction?, keepdim). */
static double
moments_args(PtlNode *n, Reduced *r)
{
    PtlIValue all = ptl_iv_none();
    double corr;
    switch (n->op->id) {
    case PTL_OP_var:
    case PTL_OP_std:
    case PTL_OP_var_mean:
    case PTL_OP_std_mean:
        reduced_from(r, &n->input_meta[0], &all, 0);
        return ptl_iv_to_int(&n->args[1]) ? 1.0 : 0.0;
    case PTL_OP_var_dim:
    case PTL_OP_std_dim:
    case PTL_OP_var_mean_dim:
    case PTL_OP_std_mean_dim:
        reduced_from(r, &n->input_meta[0], &n->args[1], ptl_iv_to_int(&n->args[3]));
        return ptl_iv_to_int(&n->args[2]) ? 1.0 : 0.0;
    default:
        reduced_from(r, &n->input_meta[0], &n->args[1], ptl_iv_to_int(&n->args[3]));
        corr = n->args[2].tag == PTL_IV_NONE ? 1.0 : ptl_iv_to_double(&n->args[2]);
        return corr;
    }
}

/* var: 2 g (x - mean) / (N - correction); std: the same with g / (2 std) (0 where std = 0);
 * var_mean/std_mean add g_mean / N.  Outputs without a gradient (NULL) are skipped. */
static int
moments_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go, int is_std, int with_mean)
{
    Scope scope = {0}, *sc = &scope;
    Reduced r;
    PtlTensorImpl *x, *total = NULL;
    if (!NEEDS(0)) {
        return 0;
    }
    double corr = moments_args(n, &r);
    x = sv(sc, n, 0);
    if (gi[0] != NULL) {
        PtlTensorImpl *g = keep(sc, gi[0], &r);
        if (is_std) {
            PtlTensorImpl *s = keep(sc, sv(sc, n, 1), &r), *zero = inum(sc, 0);
            g = WHERE(EQ(s, zero), zero, DIV(g, MULN(s, 2.0)));
        }
        total = MUL(MULN(g, 2.0 / ((double)r.count - corr)), SUB(x, mean_keep(sc, x, &r)));
    }
    if (with_mean && gi[1] != NULL) {
        PtlTensorImpl *part = expand_to(sc, MULN(keep(sc, gi[1], &r), 1.0 / (double)r.count),
                                        &n->input_meta[0]);
        total = total ? ADD(total, part) : part;
    }
    return scope_end(sc, give(n, go, 0, total));
}

static int
var_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return moments_backward(n, gi, go, 0, 0);
}

static int
std_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return moments_backward(n, gi, go, 1, 0);
}

static int
var_mean_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return moments_backward(n, gi, go, 0, 1);
}

static int
std_mean_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return moments_backward(n, gi, go, 1, 1);
}

/* norm(self, p, dims, keepdim) = (sum |x|^p)^(1/p).  p = 0: zeros; p = 1: g sign(x);
 * p = 2: g x / r; p = +-inf: g sign(x) evenly among the |x| equal to r; otherwise
 * g sign(x) |x|^(p-1) / r^(p-1).  Where r = 0 (and, for p < 1, where x = 0) the
 * gradient is 0, as PyTorch. */
static int
norm_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    Reduced r;
    PtlTensorImpl *x, *nr, *g, *res, *zero;
    double p = n->args[1].tag == PTL_IV_NONE ? 2.0 : ptl_iv_to_double(&n->args[1]);
    if (!NEEDS(0)) {
        return 0;
    }
    if (n->op->id == PTL_OP_norm_Scalar) {
        PtlIValue all = ptl_iv_none();
        reduced_from(&r, &n->input_meta[0], &all, 0);
    }
    else {
        reduced_from(&r, &n->input_meta[0], &n->args[2], ptl_iv_to_int(&n->args[3]));
    }
    x = sv(sc, n, 0);
    nr = keep(sc, sv(sc, n, 1), &r);
    g = keep(sc, gi[0], &r);
    zero = inum(sc, 0);
    if (p == 0.0) {
        res = zeros_of(sc, x);
    }
    else if (p == 1.0) {
        res = MUL(g, f1(sc, PTL_OP_sign, x));
    }
    else if (p == 2.0) {
        res = MUL(x, WHERE(EQ(nr, zero), zero, DIV(g, nr)));
    }
    else if (isinf(p)) {
        res = MUL(f1(sc, PTL_OP_sign, x), evenly(sc, g, f1(sc, PTL_OP_abs, x), nr, &r));
    }
    else {
        PtlTensorImpl *pw = f2(sc, PTL_OP_pow_Tensor_Tensor, f1(sc, PTL_OP_abs, x), num(sc, p - 1.0));
        PtlTensorImpl *den = f2(sc, PTL_OP_pow_Tensor_Tensor, nr, num(sc, p - 1.0));
        res = MUL(MUL(f1(sc, PTL_OP_sign, x), pw), WHERE(EQ(nr, zero), zero, DIV(g, den)));
        if (p < 1.0) {
            res = WHERE(EQ(x, zero), zero, res);
        }
    }
    return scope_end(sc, give(n, go, 0, res));
}

/* ---- views and shape ---- */

/* movedim/moveaxis(self, source, destination): move them back */
static int
movedim_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlIValue v[3] = {ptl_iv_tensor(gi[0]), n->args[2], n->args[1]};
    if (!NEEDS(0)) {
        return 0;
    }
    return scope_end(sc, give(n, go, 0, fv(sc, n->op->id, 3, v)));
}

/* narrow(self, dim, start, length): g between zeros, joined with cat so that the gradient
 * stays differentiable */
static int
narrow_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    const PtlInputMeta *m = &n->input_meta[0];
    PtlTensorImpl *parts[3];
    int64_t sizes[PTL_MAX_DIMS], d = ptl_iv_to_int(&n->args[1]), start, len;
    if (!NEEDS(0)) {
        return 0;
    }
    d = d < 0 ? d + m->dim : d;
    start = ptl_iv_to_int(&n->args[2]);
    start = start < 0 ? start + m->sizes[d] : start;
    len = ptl_iv_to_int(&n->args[3]);
    memcpy(sizes, m->sizes, sizeof(int64_t) * (size_t)m->dim);
    sizes[d] = start;
    parts[0] = zeros_sized(sc, sizes, m->dim, gi[0]->dtype);
    parts[1] = gi[0];
    sizes[d] = m->sizes[d] - start - len;
    parts[2] = zeros_sized(sc, sizes, m->dim, gi[0]->dtype);
    if (parts[0] == NULL || parts[2] == NULL) {
        return scope_end(sc, -1);
    }
    PtlIValue v[2] = {ptl_iv_tensorlist(parts, 3), ptl_iv_int(d)};
    return scope_end(sc, give(n, go, 0, own(sc, callv(PTL_OP_cat, 2, v))));
}

/* the gradient of output k of a multi-output view, or zeros of `sizes` when none came (new
 * reference: the pieces can be more than a scope holds) */
static PtlTensorImpl *
grad_or_zeros(PtlTensorImpl **gi, int k, const int64_t *sizes, int dim, PtlDtype dt)
{
    PtlIValue v[2] = {ptl_iv_intlist(sizes, dim), ptl_iv_dtype(dt)};
    if (gi[k] != NULL) {
        ptl_incref(gi[k]);
        return gi[k];
    }
    return callv(PTL_OP_zeros, 2, v);
}

/* Joins pieces[0..k) with `join` (cat or stack) along d into grads_out[0]; releases them. */
static int
join_pieces(PtlNode *n, PtlTensorImpl **go, PtlOpId join, PtlTensorImpl **pieces, int k, int64_t d)
{
    Scope scope = {0}, *sc = &scope;
    PtlIValue v[2] = {ptl_iv_tensorlist(pieces, k), ptl_iv_int(d)};
    int rc = give(n, go, 0, own(sc, callv(join, 2, v)));
    for (int i = 0; i < k; i++) {
        ptl_decref(pieces[i]);
    }
    free(pieces);
    return scope_end(sc, rc);
}

static PtlDtype
some_grad_dtype(PtlNode *n, PtlTensorImpl **gi)
{
    for (int k = 0; k < n->num_outputs; k++) {
        if (gi[k] != NULL) {
            return gi[k]->dtype;
        }
    }
    return n->input_meta[0].dtype;
}

/* unbind(self, dim): stack the outputs' gradients back along dim */
static int
unbind_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    const PtlInputMeta *m = &n->input_meta[0];
    PtlTensorImpl **parts;
    int64_t sizes[PTL_MAX_DIMS], d = ptl_iv_to_int(&n->args[1]);
    int nd = 0;
    PtlDtype dt = some_grad_dtype(n, gi);
    if (!NEEDS(0)) {
        return 0;
    }
    d = d < 0 ? d + m->dim : d;
    for (int i = 0; i < m->dim; i++) {
        if (i != d) {
            sizes[nd++] = m->sizes[i];
        }
    }
    if ((parts = malloc(sizeof(PtlTensorImpl *) * (size_t)(n->num_outputs + 1))) == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory in unbind backward");
    }
    for (int k = 0; k < n->num_outputs; k++) {
        if ((parts[k] = grad_or_zeros(gi, k, sizes, nd, dt)) == NULL) {
            while (k > 0) {
                ptl_decref(parts[--k]);
            }
            free(parts);
            return -1;
        }
    }
    return join_pieces(n, go, PTL_OP_stack, parts, n->num_outputs, d);
}

/* split/split_with_sizes/chunk(self, ..., dim): concatenate the pieces' gradients */
static int
split_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    const PtlInputMeta *m = &n->input_meta[0];
    PtlTensorImpl **parts;
    int64_t sizes[PTL_MAX_DIMS], d = ptl_iv_to_int(&n->args[2]), step = 0, at = 0;
    PtlDtype dt = some_grad_dtype(n, gi);
    if (!NEEDS(0)) {
        return 0;
    }
    d = d < 0 ? d + m->dim : d;
    if (n->op->id == PTL_OP_split_Tensor) {
        step = ptl_iv_to_int(&n->args[1]);
    }
    else if (n->op->id == PTL_OP_chunk) {
        int64_t chunks = ptl_iv_to_int(&n->args[1]);
        step = (m->sizes[d] + chunks - 1) / chunks;
    }
    if ((parts = malloc(sizeof(PtlTensorImpl *) * (size_t)(n->num_outputs + 1))) == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory in split backward");
    }
    memcpy(sizes, m->sizes, sizeof(int64_t) * (size_t)m->dim);
    for (int k = 0; k < n->num_outputs; k++) {
        if (n->op->id == PTL_OP_split_sizes || n->op->id == PTL_OP_split_with_sizes) {
            sizes[d] = n->args[1].u.il.data[k];
        }
        else {
            sizes[d] = m->sizes[d] - at < step ? m->sizes[d] - at : step;
        }
        at += sizes[d];
        if ((parts[k] = grad_or_zeros(gi, k, sizes, m->dim, dt)) == NULL) {
            while (k > 0) {
                ptl_decref(parts[--k]);
            }
            free(parts);
            return -1;
        }
    }
    return join_pieces(n, go, PTL_OP_cat, parts, n->num_outputs, d);
}

/* cat/concat/hstack/vstack: input i's slice of g along the concatenation dim, reshaped to
 * the input (hstack and vstack first lift inputs to 1-D / 2-D) */
static int
cat_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    int id = n->op->id, lift = 0;
    int64_t d, at = 0;
    if (id == PTL_OP_hstack) {
        d = gi[0]->dim == 1 ? 0 : 1;
        lift = 1;
    }
    else if (id == PTL_OP_vstack) {
        d = 0;
        lift = 2;
    }
    else {
        d = ptl_iv_to_int(&n->args[1]);
        d = d < 0 ? d + gi[0]->dim : d;
    }
    for (int i = 0; i < n->num_next; i++) {
        const PtlInputMeta *m = &n->input_meta[i];
        int64_t len;
        if (lift == 2) {
            len = m->dim < 2 ? 1 : m->sizes[0];
        }
        else if (lift == 1) {
            len = m->dim == 0 ? 1 : m->sizes[d];
        }
        else if (m->dim == 1 && m->sizes[0] == 0) {
            /* legacy cat skips 1-D empty inputs: their gradient is empty too */
            if (NEEDS(i) && give(n, go, i, zeros_input(sc, n, i, gi[0]->dtype)) < 0) {
                return scope_end(sc, -1);
            }
            continue;
        }
        else {
            len = m->sizes[d];
        }
        PtlIValue v[4] = {ptl_iv_tensor(gi[0]), ptl_iv_int(d), ptl_iv_int(at), ptl_iv_int(len)};
        if (NEEDS(i) &&
            give(n, go, i, reshape_to(sc, fv(sc, PTL_OP_narrow, 4, v), m->sizes, m->dim)) < 0) {
            return scope_end(sc, -1);
        }
        at += len;
    }
    return scope_end(sc, 0);
}

/* stack(tensors, dim): input i gets select(g, dim, i) */
static int
stack_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    int64_t d = ptl_iv_to_int(&n->args[1]);
    d = d < 0 ? d + gi[0]->dim : d;
    for (int i = 0; i < n->num_next; i++) {
        PtlIValue v[3] = {ptl_iv_tensor(gi[0]), ptl_iv_int(d), ptl_iv_int(i)};
        if (NEEDS(i) && give(n, go, i, fv(sc, PTL_OP_select_int, 3, v)) < 0) {
            return scope_end(sc, -1);
        }
    }
    return scope_end(sc, 0);
}

/* ---- as_strided ---- */

typedef struct Geometry {
    int dim;
    int64_t sizes[PTL_MAX_DIMS];
    int64_t strides[PTL_MAX_DIMS];
    int64_t offset;
} Geometry;

static int64_t
geometry_numel(const Geometry *g)
{
    int64_t k = 1;
    for (int d = 0; d < g->dim; d++) {
        k *= g->sizes[d];
    }
    return k;
}

/* the largest storage index the geometry reaches (strides are never negative) */
static int64_t
geometry_end(const Geometry *g)
{
    int64_t end = g->offset;
    for (int d = 0; d < g->dim; d++) {
        end += (g->sizes[d] - 1) * g->strides[d];
    }
    return end;
}

/* 1 when two elements of the geometry share a storage element */
static int
geometry_overlaps(const Geometry *g)
{
    int order[PTL_MAX_DIMS], n = 0;
    int64_t reach = 0;
    for (int d = 0; d < g->dim; d++) {
        if (g->sizes[d] > 1) {
            int k = n++;
            while (k > 0 && g->strides[order[k - 1]] > g->strides[d]) {
                order[k] = order[k - 1];
                k--;
            }
            order[k] = d;
        }
    }
    for (int k = 0; k < n; k++) {
        int d = order[k];
        if (g->strides[d] <= reach) {
            return 1;
        }
        reach += (g->sizes[d] - 1) * g->strides[d];
    }
    return 0;
}

/* buf[geometry] += src, accumulating where the geometry overlaps itself: overlapping
 * geometries are split along their first dim until each piece is overlap-free */
static int
scatter_add(PtlTensorImpl *buf, PtlTensorImpl *src, const Geometry *g)
{
    Scope scope = {0}, *sc = &scope;
    if (!geometry_overlaps(g)) {
        PtlIValue v[4] = {ptl_iv_tensor(buf), ptl_iv_intlist(g->sizes, g->dim),
                          ptl_iv_intlist(g->strides, g->dim), ptl_iv_int(g->offset)};
        PtlTensorImpl *view = fv(sc, PTL_OP_as_strided, 4, v);
        return scope_end(sc, view == NULL || f2(sc, PTL_OP_add__Tensor, view, src) == NULL ? -1 : 0);
    }
    Geometry sub = {.dim = g->dim - 1, .offset = g->offset};
    memcpy(sub.sizes, g->sizes + 1, sizeof(int64_t) * (size_t)sub.dim);
    memcpy(sub.strides, g->strides + 1, sizeof(int64_t) * (size_t)sub.dim);
    for (int64_t i = 0; i < g->sizes[0]; i++, sub.offset += g->strides[0]) {
        PtlIValue v[3] = {ptl_iv_tensor(src), ptl_iv_int(0), ptl_iv_int(i)};
        PtlTensorImpl *piece = fv(sc, PTL_OP_select_int, 3, v);
        if (piece == NULL || scatter_add(buf, piece, &sub) < 0) {
            return scope_end(sc, -1);
        }
    }
    return scope_end(sc, 0);
}

/* as_strided(self, size, stride, storage_offset?): g is added into a zero buffer covering
 * the storage both geometries touch, then read back through self's geometry (divided by
 * how often self sees each storage element, as PyTorch does for overlapping inputs). */
static int
as_strided_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *self, *buf, *res;
    Geometry in, out;
    int64_t lo, hi, len;
    if (!NEEDS(0)) {
        return 0;
    }
    /* only self's geometry is read, which in-place ops leave alone, so a self modified in
     * place since (an in-place op on another view of it) is no error, as in PyTorch, which
     * saves the geometry alone; a released slot still raises through sv() */
    self = n->saved[0].data != NULL ? n->saved[0].data : sv(sc, n, 0);
    if (self == NULL) {
        return scope_end(sc, -1);
    }
    in.dim = self->dim;
    memcpy(in.sizes, self->sizes, sizeof(int64_t) * (size_t)in.dim);
    memcpy(in.strides, self->strides, sizeof(int64_t) * (size_t)in.dim);
    in.offset = self->storage_offset;
    out.dim = (int)n->args[1].u.il.n;
    memcpy(out.sizes, n->args[1].u.il.data, sizeof(int64_t) * (size_t)out.dim);
    memcpy(out.strides, n->args[2].u.il.data, sizeof(int64_t) * (size_t)out.dim);
    out.offset = n->args[3].tag == PTL_IV_NONE ? in.offset : ptl_iv_to_int(&n->args[3]);
    if (geometry_numel(&in) == 0 || geometry_numel(&out) == 0) {
        return scope_end(sc, give(n, go, 0, zeros_input(sc, n, 0, gi[0]->dtype)));
    }
    lo = in.offset < out.offset ? in.offset : out.offset;
    hi = geometry_end(&in) > geometry_end(&out) ? geometry_end(&in) : geometry_end(&out);
    len = hi - lo + 1;
    in.offset -= lo;
    out.offset -= lo;
    if ((buf = zeros_sized(sc, &len, 1, gi[0]->dtype)) == NULL || scatter_add(buf, gi[0], &out) < 0) {
        return scope_end(sc, -1);
    }
    PtlIValue v[4] = {ptl_iv_tensor(buf), ptl_iv_intlist(in.sizes, in.dim),
                      ptl_iv_intlist(in.strides, in.dim), ptl_iv_int(in.offset)};
    res = fv(sc, PTL_OP_as_strided, 4, v);
    if (res != NULL && geometry_overlaps(&in)) {
        PtlTensorImpl *count = zeros_sized(sc, &len, 1, gi[0]->dtype);
        PtlTensorImpl *ones = f1(sc, PTL_OP_ones_like, res);
        if (count == NULL || ones == NULL || scatter_add(count, ones, &in) < 0) {
            return scope_end(sc, -1);
        }
        v[0] = ptl_iv_tensor(count);
        res = DIV(res, fv(sc, PTL_OP_as_strided, 4, v));
    }
    return scope_end(sc, give(n, go, 0, f1(sc, PTL_OP_clone, res)));
}

/* ---- linear algebra ---- */

/* bmm(a, b) (and mm): g b^T, a^T g; baddbmm/addmm scale them by alpha and self by beta */
static int
batched_mm_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go, PtlOpId mm, int first,
                    double alpha)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *g = alpha == 1.0 ? gi[0] : MULN(gi[0], alpha);
    int rc = -1;
    if (NEEDS(first) &&
        give(n, go, first, f2(sc, mm, g, transpose_last(sc, sv(sc, n, 1)))) < 0) {
        goto done;
    }
    if (NEEDS(first + 1) &&
        give(n, go, first + 1, f2(sc, mm, transpose_last(sc, sv(sc, n, 0)), g)) < 0) {
        goto done;
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

static int
bmm_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return batched_mm_backward(n, gi, go, PTL_OP_bmm, 0, 1.0);
}

/* self's part of addmm/addmv/baddbmm: beta g (finish() sums the broadcast) */
static int
beta_part(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    double beta = ptl_iv_to_double(&n->args[3]);
    if (!NEEDS(0)) {
        return 0;
    }
    return scope_end(sc, give(n, go, 0, beta == 1.0 ? gi[0] : MULN(gi[0], beta)));
}

static int
addmm_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    if (beta_part(n, gi, go) < 0) {
        return -1;
    }
    return batched_mm_backward(n, gi, go, PTL_OP_mm, 1, ptl_iv_to_double(&n->args[4]));
}

static int
baddbmm_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    if (beta_part(n, gi, go) < 0) {
        return -1;
    }
    return batched_mm_backward(n, gi, go, PTL_OP_bmm, 1, ptl_iv_to_double(&n->args[4]));
}

/* mv(a, v) (and addmv's a, v scaled by alpha): outer(g, v), a^T g */
static int
mv_part(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go, int first, double alpha)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *g = alpha == 1.0 ? gi[0] : MULN(gi[0], alpha);
    int rc = -1;
    if (NEEDS(first) && give(n, go, first, f2(sc, PTL_OP_outer, g, sv(sc, n, 1))) < 0) {
        goto done;
    }
    if (NEEDS(first + 1) &&
        give(n, go, first + 1, f2(sc, PTL_OP_mv, f1(sc, PTL_OP_t, sv(sc, n, 0)), g)) < 0) {
        goto done;
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

static int
mv_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return mv_part(n, gi, go, 0, 1.0);
}

static int
addmv_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    if (beta_part(n, gi, go) < 0) {
        return -1;
    }
    return mv_part(n, gi, go, 1, ptl_iv_to_double(&n->args[4]));
}

/* dot/vdot(a, b) (real): g b, g a */
static int
dot_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    int rc = -1;
    if (NEEDS(0) && give(n, go, 0, MUL(gi[0], sv(sc, n, 1))) < 0) {
        goto done;
    }
    if (NEEDS(1) && give(n, go, 1, MUL(gi[0], sv(sc, n, 0))) < 0) {
        goto done;
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

/* outer(a, b): g b, g^T a */
static int
outer_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    int rc = -1;
    if (NEEDS(0) && give(n, go, 0, f2(sc, PTL_OP_mv, gi[0], sv(sc, n, 1))) < 0) {
        goto done;
    }
    if (NEEDS(1) && give(n, go, 1, f2(sc, PTL_OP_mv, f1(sc, PTL_OP_t, gi[0]), sv(sc, n, 0))) < 0) {
        goto done;
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

/* matmul(a, b) in its four shapes; finish() sums broadcast batch dims back:
 *   1-D . 1-D: g b, g a
 *   N-D @ 1-D: g[..., None] * b, a * g[..., None]            (summed to b's shape)
 *   1-D @ N-D: b * g[..., None, :] (summed over its last dim), a[:, None] * g[..., None, :]
 *   N-D @ N-D: g @ b^T, a^T @ g */
static int
matmul_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *a = sv(sc, n, 0), *b = sv(sc, n, 1), *g = gi[0], *ga = NULL, *gb = NULL;
    int da = n->input_meta[0].dim, db = n->input_meta[1].dim, rc = -1;
    if (da == 1 && db == 1) {
        ga = NEEDS(0) ? MUL(g, b) : NULL;
        gb = NEEDS(1) ? MUL(g, a) : NULL;
    }
    else if (db == 1) {
        PtlTensorImpl *gu = unsq(sc, g, -1);
        ga = NEEDS(0) ? MUL(gu, b) : NULL;
        gb = NEEDS(1) ? MUL(a, gu) : NULL;
    }
    else if (da == 1) {
        PtlTensorImpl *gu = unsq(sc, g, -2);
        if (NEEDS(0)) {
            int64_t last = -1;
            PtlIValue v[3] = {ptl_iv_tensor(MUL(b, gu)), ptl_iv_intlist(&last, 1), ptl_iv_bool(0)};
            ga = fv(sc, PTL_OP_sum_dim_IntList, 3, v);
        }
        gb = NEEDS(1) ? MUL(unsq(sc, a, -1), gu) : NULL;
    }
    else {
        ga = NEEDS(0) ? f2(sc, PTL_OP_matmul, g, transpose_last(sc, b)) : NULL;
        gb = NEEDS(1) ? f2(sc, PTL_OP_matmul, transpose_last(sc, a), g) : NULL;
    }
    if (NEEDS(0) && give(n, go, 0, ga) < 0) {
        goto done;
    }
    if (NEEDS(1) && give(n, go, 1, gb) < 0) {
        goto done;
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

/* ---- the table ---- */

/* formulas of other files: derivatives_<topic>.c, declared in derivatives_<topic>.h */
#include "derivatives_rng.h"
#include "derivatives_convpool.h"
#include "derivatives_indexing.h"
#include "derivatives_nnops.h"
#include "derivatives_double.h"
#include "derivatives_scatred.h"
#include "derivatives_shape2.h"
#include "derivatives_sort.h"
#include "derivatives_linalg2.h"
#include "derivatives_svd.h"
#include "derivatives_gridgg.h"
#include "derivatives_elures.h"
#include "derivatives_lossgrad.h"
#include "derivatives_rnnperf.h"
#include "derivatives_trainperf2.h"

const PtlGradRow ptl_grad_rows[] = {
#define PTL_GRAD(OP, NAME, SAVE, FN) {PTL_OP_##OP, {NAME, FN, 0}, SAVE},
#define PTL_NONDIFF(OP, ARGS, NAME)
#include "derivatives.def"
#undef PTL_NONDIFF
#undef PTL_GRAD
};
const int ptl_grad_row_count = (int)(sizeof(ptl_grad_rows) / sizeof(ptl_grad_rows[0]));

const PtlNondiffRow ptl_nondiff_rows[] = {
#define PTL_GRAD(OP, NAME, SAVE, FN)
#define PTL_NONDIFF(OP, ARGS, NAME) {PTL_OP_##OP, ARGS, NAME},
#include "derivatives.def"
#undef PTL_NONDIFF
#undef PTL_GRAD
};
const int ptl_nondiff_row_count = (int)(sizeof(ptl_nondiff_rows) / sizeof(ptl_nondiff_rows[0]));
