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

/* temporaries live in a Scope (Note [Formula scope] in formula.h) */

static PtlTensorImpl *
num(Scope *sc, double v)
{
    return own(sc, ptl_wrapped_double(v));
}

#define MUL(A, B) f2(sc, PTL_OP_mul_Tensor, (A), (B))
#define DIV(A, B) f2(sc, PTL_OP_div_Tensor, (A), (B))
#define ADD(A, B) f2(sc, PTL_OP_add_Tensor, (A), (B))
#define SUB(A, B) f2(sc, PTL_OP_sub_Tensor, (A), (B))
#define NEG(A) f1(sc, PTL_OP_neg, (A))
#define LT(A, B) f2(sc, PTL_OP_lt_Tensor, (A), (B))
#define AND(A, B) f2(sc, PTL_OP_logical_and, (A), (B))
#define WHERE(C, A, B) f3(sc, PTL_OP_where_self, (C), (A), (B))
#define MULN(A, V) MUL((A), num(sc, (V)))
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

/* grads_out[i] = finish(g); g is borrowed (the scope owns it).  -1 when g is NULL. */
static int
give(PtlNode *n, PtlTensorImpl **go, int i, PtlTensorImpl *g)
{
    if (g == NULL) {
        return -1;
    }
    go[i] = finish(n, i, g);
    return go[i] ? 0 : -1;
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

/* max_pool{2,3}d_with_indices_backward(gO, self, ..., indices) and
 * adaptive_max_pool2d_backward(gO, self, indices); saved: indices.
 * grad_output: the incoming gradient gathered at the indices; self: zeros. */
int
max_pool_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope s = {.n = 0}, *sc = &s;
    PtlTensorImpl *idx = NULL;
    int nsp = n->op->id == PTL_OP_max_pool3d_with_indices_backward ? 3 : 2;
    int rc = -1;
    if (gi[0] == NULL) {
        return 0;
    }
    if (sv(sc, n, 0, &idx) < 0) {
        goto done;
    }
    if (NEEDS(0) && give(n, go, 0, gather_at(sc, gi[0], idx, nsp)) < 0) {
        goto done;
    }
    rc = give_zeros(sc, n, go, 1, gi[0]);
done:
    return scope_end(sc, rc);
}

/* avg_pool{2,3}d_backward(gO, self, kernel_size, ..., divisor_override) and
 * _adaptive_avg_pool2d_backward(gO, self).  grad_output: the pooling of the incoming
 * gradient with the same arguments; self: zeros. */
int
avg_pool_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope s = {.n = 0}, *sc = &s;
    PtlOpId id = n->op->id;
    int rc = -1;
    if (gi[0] == NULL) {
        return 0;
    }
    if (NEEDS(0)) {
        PtlTensorImpl *r;
        if (id == PTL_OP__adaptive_avg_pool2d_backward) {
            const PtlInputMeta *m = &n->input_meta[0];
            PtlIValue a[2] = {ptl_iv_tensor(gi[0]), ptl_iv_intlist(m->sizes + m->dim - 2, 2)};
            r = fv(sc, PTL_OP__adaptive_avg_pool2d, 2, a);
        }
        else {
            r = forward_on(sc, n,
                           id == PTL_OP_avg_pool2d_backward ? PTL_OP_avg_pool2d : PTL_OP_avg_pool3d,
                           gi[0], 2, 8);
        }
        if (give(n, go, 0, r) < 0) {
            goto done;
        }
    }
    rc = give_zeros(sc, n, go, 1, gi[0]);
done:
    return scope_end(sc, rc);
}

/* max_unpool2d_backward(gO, self, indices, output_size); saved: indices.
 * grad_output: max_unpool2d of the incoming gradient; self: zeros. */
int
max_unpool2d_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope s = {.n = 0}, *sc = &s;
    PtlTensorImpl *idx = NULL;
    int rc = -1;
    if (gi[0] == NULL) {
        return 0;
    }
    if (sv(sc, n, 0, &idx) < 0) {
        goto done;
    }
    if (NEEDS(0)) {
        PtlIValue a[3] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(idx), n->args[3]};
        if (give(n, go, 0, fv(sc, PTL_OP_max_unpool2d, 3, a)) < 0) {
            goto done;
        }
    }
    rc = give_zeros(sc, n, go, 1, gi[0]);
done:
    return scope_end(sc, rc);
}

/* reflection / replication / circular pad backward(gO, self, padding).
 * grad_output: the same pad of the incoming gradient; self: zeros. */
int
pad_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    static const struct {
        PtlOpId bwd, fwd;
    } table[] = {
        {PTL_OP_reflection_pad1d_backward, PTL_OP_reflection_pad1d},
        {PTL_OP_reflection_pad2d_backward, PTL_OP_reflection_pad2d},
        {PTL_OP_reflection_pad3d_backward, PTL_OP_reflection_pad3d},
        {PTL_OP_replication_pad1d_backward, PTL_OP_replication_pad1d},
        {PTL_OP_replication_pad2d_backward, PTL_OP_replication_pad2d},
        {PTL_OP_replication_pad3d_backward, PTL_OP_replication_pad3d},
        {PTL_OP__pad_circular_backward, PTL_OP__pad_circular},
    };
    Scope s = {.n = 0}, *sc = &s;
    PtlOpId fwd = PTL_OP__pad_circular;
    int rc = -1;
    if (gi[0] == NULL) {
        return 0;
    }
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (n->op->id == (int)table[i].bwd) {
            fwd = table[i].fwd;
        }
    }
    if (NEEDS(0) && give(n, go, 0, forward_on(sc, n, fwd, gi[0], 2, 3)) < 0) {
        goto done;
    }
    rc = give_zeros(sc, n, go, 1, gi[0]);
done:
    return scope_end(sc, rc);
}

/* upsample_*_backward(gO, output_size, input_size, [align_corners,] scales...).
 * grad_output: the upsampling of the incoming gradient (output_size, [align_corners,]
 * scales...). */
int
upsample_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    static const struct {
        PtlOpId bwd, fwd;
    } table[] = {
        {PTL_OP_upsample_nearest1d_backward, PTL_OP_upsample_nearest1d},
        {PTL_OP_upsample_nearest2d_backward, PTL_OP_upsample_nearest2d},
        {PTL_OP_upsample_nearest3d_backward, PTL_OP_upsample_nearest3d},
        {PTL_OP_upsample_linear1d_backward, PTL_OP_upsample_linear1d},
        {PTL_OP_upsample_bilinear2d_backward, PTL_OP_upsample_bilinear2d},
        {PTL_OP_upsample_trilinear3d_backward, PTL_OP_upsample_trilinear3d},
        {PTL_OP_upsample_bicubic2d_backward, PTL_OP_upsample_bicubic2d},
    };
    Scope s = {.n = 0}, *sc = &s;
    PtlIValue a[PTL_SCHEMA_MAX_ARGS];
    PtlOpId fwd = PTL_OP_upsample_nearest1d;
    int k = 0;
    if (gi[0] == NULL || !NEEDS(0)) {
        return 0;
    }
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (n->op->id == (int)table[i].bwd) {
            fwd = table[i].fwd;
        }
    }
    a[k++] = ptl_iv_tensor(gi[0]);
    a[k++] = n->args[1];
    for (int i = 3; i < n->nargs; i++) {
        a[k++] = n->args[i];
    }
    return scope_end(sc, give(n, go, 0, fv(sc, fwd, k, a)));
}

/* affine_grid_generator_backward(grad, size, align_corners): the generator of the
 * incoming gradient (the map theta -> grid is linear). */
int
affine_grid_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope s = {.n = 0}, *sc = &s;
    if (gi[0] == NULL || !NEEDS(0)) {
        return 0;
    }
    return scope_end(sc, give(n, go, 0, forward_on(sc, n, PTL_OP_affine_grid_generator, gi[0],
                                                   1, 3)));
}

/* ---- pointwise activations: gO * f'(x) ---- */

/* The two gradients of act_backward(gO, self, ...) = gO * f'(self) with incoming gg:
 * grad_output: act_backward(gg, self, ...); self: gg * gO * f''(self) (`second`; NULL
 * means f'' = 0, and self gets zeros).  Saved: gO (slot 0) and self (slot 1) when it is
 * given, else self (slot 0). */
typedef PtlTensorImpl *(*SecondFn)(Scope *sc, PtlNode *n, PtlTensorImpl *x);

static int
pointwise_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go, int self_pos,
                            int self_edge, SecondFn second)
{
    Scope s = {.n = 0}, *sc = &s;
    PtlTensorImpl *g = NULL, *x = NULL, *gg = gi[0];
    int rc = -1;
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
        rc = give_zeros(sc, n, go, self_edge, gg);
        goto done;
    }
    if (NEEDS(self_edge) && give(n, go, self_edge, MUL(MUL(gg, g), second(sc, n, x))) < 0) {
        goto done;
    }
    rc = 0;
done:
    return scope_end(sc, rc);
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
    return MUL(MUL(sg, RSUBN(1.0, sg)), ADDN(MUL(x, RSUBN(1.0, MULN(sg, 2.0))), 2.0));
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
    PtlTensorImpl *sg = f1(sc, PTL_OP_sigmoid, bx);
    PtlTensorImpl *f = MULN(MUL(sg, RSUBN(1.0, sg)), beta);
    return WHERE(LT(bx, num(sc, thr)), f, num(sc, 0.0));
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
    PtlTensorImpl *sg = f1(sc, PTL_OP_sigmoid, x);
    (void)n;
    return NEG(MUL(sg, RSUBN(1.0, sg)));
}

int
gelu_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_backward_backward(n, gi, go, 1, 1, gelu_second);
}

int
silu_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_backward_backward(n, gi, go, 1, 1, silu_second);
}

int
mish_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_backward_backward(n, gi, go, 1, 1, mish_second);
}

int
softplus_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_backward_backward(n, gi, go, 1, 1, softplus_second);
}

int
hardswish_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_backward_backward(n, gi, go, 1, 1, hardswish_second);
}

int
log_sigmoid_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_backward_backward(n, gi, go, 1, 1, log_sigmoid_second);
}

/* leaky_relu, hardtanh, softshrink, hardshrink, threshold: f' is piecewise constant */
int
piecewise_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_backward_backward(n, gi, go, 1, 1, NULL);
}

/* elu_backward(gO, alpha, scale, input_scale, is_result, self): for x < 0,
 * elu'' = scale alpha input_scale^2 exp(input_scale x); 0 elsewhere. */
static PtlTensorImpl *
elu_second(Scope *sc, PtlNode *n, PtlTensorImpl *x)
{
    double alpha = ptl_iv_to_double(&n->args[1]), scale = ptl_iv_to_double(&n->args[2]);
    double is = ptl_iv_to_double(&n->args[3]);
    PtlTensorImpl *f = MULN(f1(sc, PTL_OP_exp, MULN(x, is)), scale * alpha * is * is);
    return WHERE(LT(x, num(sc, 0.0)), f, f1(sc, PTL_OP_zeros_like, x));
}

int
elu_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_backward_backward(n, gi, go, 5, 1, elu_second);
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

/* _softmax_backward_data(gO, y, dim, input_dtype) = y (gO - sum(gO y)); the Jacobian in
 * gO is symmetric.  grad_output: the same op on gg; y: gg (gO - sum(gO y)) - gO sum(gg y). */
int
softmax_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope s = {.n = 0}, *sc = &s;
    PtlTensorImpl *g = NULL, *y = NULL, *gg = gi[0];
    int64_t dim = n->args[2].u.i;
    int rc = -1;
    if (gg == NULL) {
        return 0;
    }
    if (sv(sc, n, 0, &g) < 0 || sv(sc, n, 1, &y) < 0) {
        goto done;
    }
    if (NEEDS(0) && give(n, go, 0, same_op(sc, n, gg, y, 1)) < 0) {
        goto done;
    }
    if (NEEDS(1)) {
        PtlTensorImpl *a = MUL(gg, SUB(g, sum_keep(sc, MUL(g, y), dim)));
        if (give(n, go, 1, SUB(a, MUL(g, sum_keep(sc, MUL(gg, y), dim)))) < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

/* _log_softmax_backward_data(gO, y, dim, input_dtype) = gO - exp(y) sum(gO).
 * grad_output: gg - sum(gg exp(y)); y: -gg exp(y) sum(gO). */
int
log_softmax_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope s = {.n = 0}, *sc = &s;
    PtlTensorImpl *g = NULL, *y = NULL, *ey, *gg = gi[0];
    int64_t dim = n->args[2].u.i;
    int rc = -1;
    if (gg == NULL) {
        return 0;
    }
    if (sv(sc, n, 0, &g) < 0 || sv(sc, n, 1, &y) < 0) {
        goto done;
    }
    ey = f1(sc, PTL_OP_exp, y);
    if (NEEDS(0) && give(n, go, 0, SUB(gg, sum_keep(sc, MUL(gg, ey), dim))) < 0) {
        goto done;
    }
    if (NEEDS(1) && give(n, go, 1, NEG(MUL(MUL(gg, ey), sum_keep(sc, g, dim)))) < 0) {
        goto done;
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
