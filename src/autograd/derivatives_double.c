/* derivatives_double.c -- derivatives of the NN *_backward ops, so gradients of the NN ops
 * can be differentiated again (create_graph=True).  Mirrors the *_backward rows of
 * tools/autograd/derivatives.yaml and their helpers in FunctionsManual.cpp
 * (_convolution_double_backward, max_pool_double_backward, softmax_double_backward, ...).
 *
 * A backward op is linear in grad_output.  Its derivative for grad_output is the adjoint of
 * that linear map: the forward op itself for ops linear in their input (pooling, padding,
 * upsampling, nll_loss, embedding, affine_grid), a gather at the argmax indices for max
 * pooling, the same backward op for pointwise activations (their Jacobian is diagonal).
 * The derivative for the saved input is zero where the first derivative is piecewise
 * constant, and the activation's second derivative times grad_output otherwise.  Every
 * formula calls dispatcher ops, so a third derivative works too. */
#include <math.h>

#include "derivatives_double.h"
#include "formula.h"

#define INV_SQRT_2PI 0.398942280401432677939946059934381868
#define SQRT_2_OVER_PI 0.797884560802865355879892119868763737
#define GELU_TANH_C 0.044715

/* temporaries live in a Scope (Note [Formula scope] in formula.h, with num, give and the
 * op shorthands) */
#define ADDN(A, V) ADD((A), num(sc, (V)))
/* v - a */
#define RSUBN(V, A) ADDN(NEG(A), (V))

/* saved slot k; an undefined tensor (an absent optional one) is NULL without an error */
static int
sv(Scope *sc, PtlNode *n, int k, PtlTensorImpl **t)
{
    if (saved(n, k, t) < 0) {
        return -1;
    }
    if (*t != NULL) {
        own(sc, *t);
    }
    return 0;
}

/* zeros for edge i when it needs a gradient (PyTorch's zeros_like(grad)), else nothing */
static int
give_zeros(Scope *sc, PtlNode *n, PtlTensorImpl **go, int i, PtlTensorImpl *like)
{
    return NEEDS(i) ? give(n, go, i, f1(sc, PTL_OP_zeros_like, like)) : 0;
}

/* sum over `dim`, keeping it */
static PtlTensorImpl *
sum_keep(Scope *sc, PtlTensorImpl *a, int64_t dim)
{
    PtlIValue v[3] = {ptl_iv_tensor(a), ptl_iv_intlist(&dim, 1), ptl_iv_bool(1)};
    return fv(sc, PTL_OP_sum_dim_IntList, 3, v);
}

/* the node's own op again with grad_output replaced by g and the tensor argument at
 * self_pos by self: [g, args[1..]] */
static PtlTensorImpl *
same_op(Scope *sc, PtlNode *n, PtlTensorImpl *g, PtlTensorImpl *self, int self_pos)
{
    PtlIValue a[PTL_SCHEMA_MAX_ARGS];
    a[0] = ptl_iv_tensor(g);
    for (int i = 1; i < n->nargs; i++) {
        a[i] = n->args[i];
    }
    a[self_pos] = ptl_iv_tensor(self);
    return g && self ? fv(sc, n->op->id, n->nargs, a) : NULL;
}

/* forward op `id` on [g, n->args[from..to)] */
static PtlTensorImpl *
forward_on(Scope *sc, PtlNode *n, PtlOpId id, PtlTensorImpl *g, int from, int to)
{
    PtlIValue a[PTL_SCHEMA_MAX_ARGS];
    int k = 0;
    a[k++] = ptl_iv_tensor(g);
    for (int i = from; i < to; i++) {
        a[k++] = n->args[i];
    }
    return fv(sc, id, k, a);
}

/* Calls op `id` on a[0..k) (the rest defaulted) and returns its return `which` (owned by
 * the scope); the other returns are released. */
static PtlTensorImpl *
call_ret(Scope *sc, PtlOpId id, int k, const PtlIValue *given, int which)
{
    PtlIValue st[PTL_SCHEMA_MAX_ARGS];
    const PtlOperator *op = ptl_op(id);
    PtlTensorImpl *r = NULL;
    memcpy(st, given, sizeof(PtlIValue) * (size_t)k);
    for (int i = k; i < op->schema.nargs; i++) {
        st[i] = op->schema.args[i].def;
    }
    if (ptl_dispatcher_call(op, st) < 0) {
        return NULL;
    }
    for (int i = 0; i < op->schema.nrets; i++) {
        if (st[i].tag != PTL_IV_TENSOR) {
            continue;
        }
        if (i == which) {
            r = st[i].u.t;
        }
        else {
            ptl_decref(st[i].u.t);
        }
    }
    if (r == NULL) {
        ptl_error_set(PTL_ERR_RUNTIME, "derivative formula: %s returned no tensor",
                      op->schema.name);
    }
    return own(sc, r);
}

/* ---- convolution ---- */

/* convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
 * transposed, output_padding, groups, output_mask) -> (gI, gW, gB); saved gO, input,
 * weight.  With incoming ggI, ggW, ggB (PyTorch's _convolution_double_backward):
 *   grad_output: conv(ggI, W) + conv(I, ggW) + ggB
 *   input:       the input gradient of conv(I, ggW) against gO
 *   weight:      the weight gradient of conv(ggI, W) against gO */
int
convolution_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope s = {.n = 0}, *sc = &s;
    PtlTensorImpl *g = NULL, *x = NULL, *w = NULL, *ggi = gi[0], *ggw = gi[1], *ggb = gi[2];
    int rc = -1;
    if (sv(sc, n, 0, &g) < 0 || sv(sc, n, 1, &x) < 0 || sv(sc, n, 2, &w) < 0) {
        goto done;
    }
    if (NEEDS(0) && (ggi != NULL || ggw != NULL || ggb != NULL)) {
        PtlTensorImpl *t = NULL;
        if (ggi != NULL) {
            PtlIValue a[9] = {ptl_iv_tensor(ggi), ptl_iv_tensor(w),
                              ggb ? ptl_iv_tensor(ggb) : ptl_iv_none(), n->args[4], n->args[5],
                              n->args[6], n->args[7], n->args[8], n->args[9]};
            if ((t = fv(sc, PTL_OP_convolution, 9, a)) == NULL) {
                goto done;
            }
        }
        if (ggw != NULL) {
            PtlIValue a[9] = {ptl_iv_tensor(x), ptl_iv_tensor(ggw),
                              ggb && !ggi ? ptl_iv_tensor(ggb) : ptl_iv_none(), n->args[4],
                              n->args[5], n->args[6], n->args[7], n->args[8], n->args[9]};
            PtlTensorImpl *u = fv(sc, PTL_OP_convolution, 9, a);
            if ((t = t ? ADD(t, u) : u) == NULL) {
                goto done;
            }
        }
        if (t == NULL) {
            /* only the bias gradient is differentiated: ggB broadcast over grad_output */
            int64_t shape[PTL_MAX_DIMS];
            for (int d = 0; d < g->dim; d++) {
                shape[d] = d == 1 ? ggb->sizes[0] : 1;
            }
            PtlIValue a[2] = {ptl_iv_tensor(ggb), ptl_iv_intlist(shape, g->dim)};
            t = ADD(f1(sc, PTL_OP_zeros_like, g), fv(sc, PTL_OP_reshape, 2, a));
        }
        if (give(n, go, 0, t) < 0) {
            goto done;
        }
    }
    if (NEEDS(1) && ggw != NULL) {
        int64_t mask[3] = {1, 0, 0};
        PtlIValue a[11] = {ptl_iv_tensor(g), ptl_iv_tensor(x), ptl_iv_tensor(ggw), ptl_iv_none(),
                           n->args[4], n->args[5], n->args[6], n->args[7], n->args[8],
                           n->args[9], ptl_iv_intlist(mask, 3)};
        if (give(n, go, 1, call_ret(sc, PTL_OP_convolution_backward, 11, a, 0)) < 0) {
            goto done;
        }
    }
    if (NEEDS(2) && ggi != NULL) {
        int64_t mask[3] = {0, 1, 0};
        PtlIValue a[11] = {ptl_iv_tensor(g), ptl_iv_tensor(ggi), ptl_iv_tensor(w), ptl_iv_none(),
                           n->args[4], n->args[5], n->args[6], n->args[7], n->args[8],
                           n->args[9], ptl_iv_intlist(mask, 3)};
        if (give(n, go, 2, call_ret(sc, PTL_OP_convolution_backward, 11, a, 1)) < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

/* ---- pooling, padding, upsampling, affine_grid: linear maps ---- */

/* g gathered at the flat spatial positions idx points to (the last `nsp` dims):
 * g [..., *in_spatial], idx [..., *out_spatial] -> [..., *out_spatial] */
static PtlTensorImpl *
gather_at(Scope *sc, PtlTensorImpl *g, PtlTensorImpl *idx, int nsp)
{
    PtlIValue fg[3] = {ptl_iv_tensor(g), ptl_iv_int(g->dim - nsp), ptl_iv_int(-1)};
    PtlIValue fi[3] = {ptl_iv_tensor(idx), ptl_iv_int(idx->dim - nsp), ptl_iv_int(-1)};
    PtlTensorImpl *gf = fv(sc, PTL_OP_flatten_using_ints, 3, fg);
    PtlTensorImpl *xf = fv(sc, PTL_OP_flatten_using_ints, 3, fi);
    PtlIValue ga[3] = {ptl_iv_tensor(gf), ptl_iv_int(-1), ptl_iv_tensor(xf)};
    PtlTensorImpl *r = gf && xf ? fv(sc, PTL_OP_gather, 3, ga) : NULL;
    PtlIValue ra[2] = {ptl_iv_tensor(r), ptl_iv_intlist(idx->sizes, idx->dim)};
    return r ? fv(sc, PTL_OP_reshape, 2, ra) : NULL;
}

typedef struct LinearMap LinearMap;

/* The adjoint of a backward op's map gO -> grad_input, applied to the incoming gradient gg */
typedef PtlTensorImpl *(*AdjointFn)(Scope *sc, PtlNode *n, const LinearMap *m,
                                    PtlTensorImpl *gg);

/* A backward op linear in grad_output: the forward op `fwd` is its adjoint, called on
 * [gg, n->args[from..to)] unless `adjoint` computes it; self_edge is the edge of the saved
 * input (it gets zeros) or -1 when the op has none. */
struct LinearMap {
    PtlOpId bwd, fwd;
    int from, to, self_edge;
    AdjointFn adjoint;
};

/* max_pool{2,3}d_with_indices_backward(gO, self, ..., indices) and
 * adaptive_max_pool2d_backward(gO, self, indices); saved: indices.  gg gathered at them. */
static PtlTensorImpl *
max_pool_adjoint(Scope *sc, PtlNode *n, const LinearMap *m, PtlTensorImpl *gg)
{
    PtlTensorImpl *idx = NULL;
    (void)m;
    if (sv(sc, n, 0, &idx) < 0) {
        return NULL;
    }
    return gather_at(sc, gg, idx, n->op->id == PTL_OP_max_pool3d_with_indices_backward ? 3 : 2);
}

/* _adaptive_avg_pool2d_backward(gO, self): the pooling of gg to gO's spatial size */
static PtlTensorImpl *
adaptive_avg_pool_adjoint(Scope *sc, PtlNode *n, const LinearMap *m, PtlTensorImpl *gg)
{
    const PtlInputMeta *meta = &n->input_meta[0];
    PtlIValue a[2] = {ptl_iv_tensor(gg), ptl_iv_intlist(meta->sizes + meta->dim - 2, 2)};
    return fv(sc, m->fwd, 2, a);
}

/* max_unpool2d_backward(gO, self, indices, output_size); saved: indices */
static PtlTensorImpl *
max_unpool_adjoint(Scope *sc, PtlNode *n, const LinearMap *m, PtlTensorImpl *gg)
{
    PtlTensorImpl *idx = NULL;
    if (sv(sc, n, 0, &idx) < 0) {
        return NULL;
    }
    PtlIValue a[3] = {ptl_iv_tensor(gg), ptl_iv_tensor(idx), n->args[3]};
    return fv(sc, m->fwd, 3, a);
}

/* upsample_*_backward(gO, output_size, input_size, [align_corners,] scales...): the
 * upsampling of gg with (output_size, [align_corners,] scales...) */
static PtlTensorImpl *
upsample_adjoint(Scope *sc, PtlNode *n, const LinearMap *m, PtlTensorImpl *gg)
{
    PtlIValue a[PTL_SCHEMA_MAX_ARGS];
    int k = 0;
    a[k++] = ptl_iv_tensor(gg);
    a[k++] = n->args[1];
    for (int i = 3; i < n->nargs; i++) {
        a[k++] = n->args[i];
    }
    return fv(sc, m->fwd, k, a);
}

/* ORDER: any; looked up by bwd */
static const LinearMap linear_maps[] = {
    {PTL_OP_max_pool2d_with_indices_backward, PTL_OP_gather, 0, 0, 1, max_pool_adjoint},
    {PTL_OP_max_pool3d_with_indices_backward, PTL_OP_gather, 0, 0, 1, max_pool_adjoint},
    {PTL_OP_adaptive_max_pool2d_backward, PTL_OP_gather, 0, 0, 1, max_pool_adjoint},
    /* avg_pool{2,3}d_backward(gO, self, kernel_size, ..., divisor_override) */
    {PTL_OP_avg_pool2d_backward, PTL_OP_avg_pool2d, 2, 8, 1, NULL},
    {PTL_OP_avg_pool3d_backward, PTL_OP_avg_pool3d, 2, 8, 1, NULL},
    {PTL_OP__adaptive_avg_pool2d_backward, PTL_OP__adaptive_avg_pool2d, 0, 0, 1,
     adaptive_avg_pool_adjoint},
    {PTL_OP_max_unpool2d_backward, PTL_OP_max_unpool2d, 0, 0, 1, max_unpool_adjoint},
    /* reflection / replication / circular pad backward(gO, self, padding) */
    {PTL_OP_reflection_pad1d_backward, PTL_OP_reflection_pad1d, 2, 3, 1, NULL},
    {PTL_OP_reflection_pad2d_backward, PTL_OP_reflection_pad2d, 2, 3, 1, NULL},
    {PTL_OP_reflection_pad3d_backward, PTL_OP_reflection_pad3d, 2, 3, 1, NULL},
    {PTL_OP_replication_pad1d_backward, PTL_OP_replication_pad1d, 2, 3, 1, NULL},
    {PTL_OP_replication_pad2d_backward, PTL_OP_replication_pad2d, 2, 3, 1, NULL},
    {PTL_OP_replication_pad3d_backward, PTL_OP_replication_pad3d, 2, 3, 1, NULL},
    {PTL_OP__pad_circular_backward, PTL_OP__pad_circular, 2, 3, 1, NULL},
    {PTL_OP_upsample_nearest1d_backward, PTL_OP_upsample_nearest1d, 0, 0, -1, upsample_adjoint},
    {PTL_OP_upsample_nearest2d_backward, PTL_OP_upsample_nearest2d, 0, 0, -1, upsample_adjoint},
    {PTL_OP_upsample_nearest3d_backward, PTL_OP_upsample_nearest3d, 0, 0, -1, upsample_adjoint},
    {PTL_OP_upsample_linear1d_backward, PTL_OP_upsample_linear1d, 0, 0, -1, upsample_adjoint},
    {PTL_OP_upsample_bilinear2d_backward, PTL_OP_upsample_bilinear2d, 0, 0, -1,
     upsample_adjoint},
    {PTL_OP_upsample_trilinear3d_backward, PTL_OP_upsample_trilinear3d, 0, 0, -1,
     upsample_adjoint},
    {PTL_OP_upsample_bicubic2d_backward, PTL_OP_upsample_bicubic2d, 0, 0, -1, upsample_adjoint},
    /* affine_grid_generator_backward(grad, size, align_corners): theta -> grid is linear */
    {PTL_OP_affine_grid_generator_backward, PTL_OP_affine_grid_generator, 1, 3, -1, NULL},
};

/* The backward ops of linear_maps: grad_output gets the adjoint of the incoming gradient,
 * the saved input (when there is one) zeros. */
int
linear_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope s = {.n = 0}, *sc = &s;
    const LinearMap *m = NULL;
    int rc = -1;
    for (size_t i = 0; i < sizeof(linear_maps) / sizeof(linear_maps[0]); i++) {
        if (n->op->id == (int)linear_maps[i].bwd) {
            m = &linear_maps[i];
        }
    }
    if (m == NULL) {
        return ptl_error_set(PTL_ERR_RUNTIME, "derivative formula: %s is no linear map",
                             n->op->schema.name);
    }
    if (gi[0] == NULL) {
        return 0;
    }
    if (NEEDS(0)) {
        PtlTensorImpl *r = m->adjoint != NULL ? m->adjoint(sc, n, m, gi[0])
                                              : forward_on(sc, n, m->fwd, gi[0], m->from, m->to);
        if (give(n, go, 0, r) < 0) {
            goto done;
        }
    }
    rc = m->self_edge < 0 ? 0 : give_zeros(sc, n, go, m->self_edge, gi[0]);
done:
    return scope_end(sc, rc);
}

/* ---- pointwise activations: gO * f'(x) ---- */

/* f''(x) of an activation (x saved); NULL in the table means f'' = 0 (f' is piecewise
 * constant) */
typedef PtlTensorImpl *(*SecondFn)(Scope *sc, PtlNode *n, PtlTensorImpl *x);

/* s (1 - s) for s = sigmoid(z): the derivative of the sigmoid */
static PtlTensorImpl *
sigmoid_slope(Scope *sc, PtlTensorImpl *z)
{
    PtlTensorImpl *sg = f1(sc, PTL_OP_sigmoid, z);
    return MUL(sg, RSUBN(1.0, sg));
}

/* gelu'' = phi(x) (2 - x^2); tanh approximation, with u = k (x + c x^3) and t = tanh(u):
 * (1 - t^2) (u' + x/2 (u'' - 2 t u'^2)) */
static PtlTensorImpl *
gelu_second(Scope *sc, PtlNode *n, PtlTensorImpl *x)
{
    PtlTensorImpl *x2 = MUL(x, x);
    if (n->args[2].tag == PTL_IV_STRING && strcmp(n->args[2].u.s, "tanh") == 0) {
        const double k = SQRT_2_OVER_PI, c = GELU_TANH_C;
        PtlTensorImpl *t = f1(sc, PTL_OP_tanh, MULN(ADD(x, MULN(MUL(x2, x), c)), k));
        PtlTensorImpl *du = MULN(ADDN(MULN(x2, 3.0 * c), 1.0), k);
        PtlTensorImpl *d2u = MULN(x, 6.0 * k * c);
        PtlTensorImpl *inner = SUB(d2u, MULN(MUL(t, MUL(du, du)), 2.0));
        return MUL(RSUBN(1.0, MUL(t, t)), ADD(du, MUL(MULN(x, 0.5), inner)));
    }
    PtlTensorImpl *phi = MULN(f1(sc, PTL_OP_exp, MULN(x2, -0.5)), INV_SQRT_2PI);
    return MUL(phi, RSUBN(2.0, x2));
}

/* silu'' = s (1 - s) (2 + x (1 - 2 s)), s = sigmoid(x) */
static PtlTensorImpl *
silu_second(Scope *sc, PtlNode *n, PtlTensorImpl *x)
{
    PtlTensorImpl *sg = f1(sc, PTL_OP_sigmoid, x);
    (void)n;
    return MUL(sigmoid_slope(sc, x), ADDN(MUL(x, RSUBN(1.0, MULN(sg, 2.0))), 2.0));
}

/* mish'' = (1 - T^2) S (2 + x (1 - S - 2 T S)), T = tanh(softplus(x)), S = sigmoid(x) */
static PtlTensorImpl *
mish_second(Scope *sc, PtlNode *n, PtlTensorImpl *x)
{
    PtlTensorImpl *t = f1(sc, PTL_OP_tanh, f1(sc, PTL_OP_softplus, x));
    PtlTensorImpl *sg = f1(sc, PTL_OP_sigmoid, x);
    PtlTensorImpl *inner = SUB(RSUBN(1.0, sg), MULN(MUL(t, sg), 2.0));
    (void)n;
    return MUL(MUL(RSUBN(1.0, MUL(t, t)), sg), ADDN(MUL(x, inner), 2.0));
}

/* softplus'' = beta s (1 - s), s = sigmoid(beta x); 0 where beta x >= threshold (PyTorch's
 * double backward; its first derivative switches to 1 only above the threshold) */
static PtlTensorImpl *
softplus_second(Scope *sc, PtlNode *n, PtlTensorImpl *x)
{
    double beta = ptl_iv_to_double(&n->args[2]), thr = ptl_iv_to_double(&n->args[3]);
    PtlTensorImpl *bx = MULN(x, beta);
    return WHERE(LT(bx, num(sc, thr)), MULN(sigmoid_slope(sc, bx), beta), num(sc, 0.0));
}

/* hardswish'' = 1/3 on (-3, 3), 0 elsewhere */
static PtlTensorImpl *
hardswish_second(Scope *sc, PtlNode *n, PtlTensorImpl *x)
{
    PtlTensorImpl *in = AND(LT(num(sc, -3.0), x), LT(x, num(sc, 3.0)));
    (void)n;
    return WHERE(in, num(sc, 1.0 / 3.0), f1(sc, PTL_OP_zeros_like, x));
}

/* log_sigmoid'' = -s (1 - s), s = sigmoid(x) */
static PtlTensorImpl *
log_sigmoid_second(Scope *sc, PtlNode *n, PtlTensorImpl *x)
{
    (void)n;
    return NEG(sigmoid_slope(sc, x));
}

/* elu_backward(gO, alpha, scale, input_scale, is_result, self_or_result): from self x,
 * elu'' = scale alpha input_scale^2 exp(input_scale x) for x < 0; from the result y (its
 * slope input_scale (y + alpha scale)), the derivative in y is input_scale for y < 0.
 * 0 elsewhere. */
static PtlTensorImpl *
elu_second(Scope *sc, PtlNode *n, PtlTensorImpl *x)
{
    double alpha = ptl_iv_to_double(&n->args[1]), scale = ptl_iv_to_double(&n->args[2]);
    double is = ptl_iv_to_double(&n->args[3]);
    PtlTensorImpl *f = ptl_iv_to_int(&n->args[4])
                           ? num(sc, is)
                           : MULN(f1(sc, PTL_OP_exp, MULN(x, is)), scale * alpha * is * is);
    return WHERE(LT(x, num(sc, 0.0)), f, f1(sc, PTL_OP_zeros_like, x));
}

/* ORDER: any; looked up by op.  self_pos: the argument position of self (its edge is 1). */
static const struct {
    PtlOpId op;
    int self_pos;
    SecondFn second;
} activations[] = {
    {PTL_OP_gelu_backward, 1, gelu_second},
    {PTL_OP_silu_backward, 1, silu_second},
    {PTL_OP_mish_backward, 1, mish_second},
    {PTL_OP_softplus_backward, 1, softplus_second},
    {PTL_OP_hardswish_backward, 1, hardswish_second},
    {PTL_OP_log_sigmoid_backward, 1, log_sigmoid_second},
    {PTL_OP_elu_backward, 5, elu_second},
    {PTL_OP_leaky_relu_backward, 1, NULL},
    {PTL_OP_hardtanh_backward, 1, NULL},
    {PTL_OP_softshrink_backward, 1, NULL},
    {PTL_OP_hardshrink_backward, 1, NULL},
    {PTL_OP_threshold_backward, 1, NULL},
};

/* The two gradients of act_backward(gO, self, ...) = gO * f'(self) with incoming gg:
 * grad_output: act_backward(gg, self, ...); self: gg * gO * f''(self) (zeros where the table
 * has no f'').  Saved: gO (slot 0) and self (slot 1) when f'' is given, else self (slot 0). */
int
activation_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope s = {.n = 0}, *sc = &s;
    PtlTensorImpl *g = NULL, *x = NULL, *gg = gi[0];
    SecondFn second = NULL;
    int self_pos = 0, rc = -1;
    for (size_t i = 0; i < sizeof(activations) / sizeof(activations[0]); i++) {
        if (n->op->id == (int)activations[i].op) {
            second = activations[i].second;
            self_pos = activations[i].self_pos;
        }
    }
    if (self_pos == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "derivative formula: %s is no activation",
                             n->op->schema.name);
    }
    if (gg == NULL) {
        return 0;
    }
    if ((second != NULL && sv(sc, n, 0, &g) < 0) || sv(sc, n, second != NULL, &x) < 0) {
        goto done;
    }
    if (NEEDS(0) && give(n, go, 0, same_op(sc, n, gg, x, self_pos)) < 0) {
        goto done;
    }
    if (second == NULL) {
        rc = give_zeros(sc, n, go, 1, gg);
        goto done;
    }
    if (NEEDS(1) && give(n, go, 1, MUL(MUL(gg, g), second(sc, n, x))) < 0) {
        goto done;
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

/* PyTorch has no derivative for hardsigmoid_backward and raises. */
int
hardsigmoid_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    (void)n;
    (void)gi;
    (void)go;
    return ptl_error_set(PTL_ERR_RUNTIME,
                         "derivative for aten::hardsigmoid_backward is not implemented");
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
    if (sv(sc, n, 0, &g) < 0 || sv(sc, n, 1, &y) < 0) {
        goto done;
    }
    if (log && (ey = f1(sc, PTL_OP_exp, y)) == NULL) {
        goto done;
    }
    if (NEEDS(0)) {
        r = log ? SUB(gg, sum_keep(sc, MUL(gg, ey), dim)) : same_op(sc, n, gg, y, 1);
        if (give(n, go, 0, r) < 0) {
            goto done;
        }
    }
    if (NEEDS(1)) {
        if (log) {
            r = NEG(MUL(MUL(gg, ey), sum_keep(sc, g, dim)));
        }
        else {
            PtlTensorImpl *a = MUL(gg, SUB(g, sum_keep(sc, MUL(g, y), dim)));
            r = SUB(a, MUL(g, sum_keep(sc, MUL(gg, y), dim)));
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
    if (sv(sc, n, 0, &t) < 0 || sv(sc, n, 1, &w) < 0) {
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
    if (sv(sc, n, 0, &g) < 0 || sv(sc, n, 1, &x) < 0 || sv(sc, n, 2, &t) < 0 ||
        sv(sc, n, 3, &w) < 0) {
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
    if (sv(sc, n, 0, &idx) < 0) {
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
