/* derivatives.c -- the derivative formulas of derivatives.def.  Mirrors
 * tools/autograd/derivatives.yaml and torch/csrc/autograd/FunctionsManual.cpp.
 *
 * Each formula is written with dispatcher ops, so under create_graph=True the gradient
 * itself is recorded and can be differentiated again.  A formula fills grads_out[i] for
 * every next edge i that needs a gradient (n->needs bit i); finish() reduces a broadcast
 * gradient back to the input's shape and dtype (PyTorch's sum_to + validate_outputs). */
#include "formula.h"

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

/* d(a/b) = g/b, -g*a/b^2 */
static int
div_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *self = NULL, *other = NULL, *t1 = NULL, *t2 = NULL;
    int rc = -1;
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

/* ---- the table ---- */

/* formulas of other files: derivatives_<topic>.c, declared in derivatives_<topic>.h */
#include "derivatives_nnops.h"

const PtlGradRow ptl_grad_rows[] = {
#define PTL_GRAD(OP, NAME, SAVE, FN) {PTL_OP_##OP, {NAME, FN, 0}, SAVE},
#include "derivatives.def"
#undef PTL_GRAD
};
const int ptl_grad_row_count = (int)(sizeof(ptl_grad_rows) / sizeof(ptl_grad_rows[0]));
