/* derivatives/activation.c -- derivative formulas of the activations of
 * aten/native/activation.c (gelu, silu, mish, elu, celu, leaky_relu, hardtanh, softplus,
 * hardswish, hardsigmoid, log_sigmoid, the shrinks, threshold) and of their *_backward ops.
 * Mirrors their rows of tools/autograd/derivatives.yaml.
 *
 * First derivatives call the op's *_backward kernel through the dispatcher with the saved
 * input (or result) and the forward's scalar arguments; the in-place elu_ and celu_ save
 * their result and call elu_backward(..., is_result=True, result), celu passing scale 1 and
 * input_scale 1 / alpha with alpha rounded to float, as PyTorch's alpha.toFloat() does.
 * Second derivatives: a *_backward op is linear in grad_output with a diagonal Jacobian, so
 * grad_output gets the same backward op again, and the saved input gets the activation's
 * second derivative times grad_output (zero where the first derivative is piecewise
 * constant).  Every formula calls dispatcher ops, so a third derivative works too. */
#include <math.h>

#include "../formula.h"

/* grads_out[0] = op(g, saved 0, n->args[params[0]], ...): the pattern of every pointwise
 * activation whose backward takes (grad_output, self, scalars...). */
static int
pointwise_grad(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go, PtlOpId id, int np,
               const int *params, PtlIValue tail)
{
    PtlTensorImpl *x;
    PtlIValue a[6];
    int k = 0;
    if (!NEEDS(0)) {
        return 0;
    }
    if (saved(n, 0, &x) < 0) {
        return -1;
    }
    a[k++] = ptl_iv_tensor(gi[0]);
    a[k++] = ptl_iv_tensor(x);
    for (int i = 0; i < np; i++) {
        a[k++] = n->args[params[i]];
    }
    if (tail.tag != PTL_IV_NONE) {
        a[k++] = tail;
    }
    int rc = put(n, go, 0, callv(id, k, a));
    ptl_decref(x);
    return rc;
}

static const int no_params[1] = {0};
static const int param1[1] = {1};
static const int param12[2] = {1, 2};

int
gelu_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    const char *mode = ptl_iv_to_int(&n->args[1]) ? "tanh" : "none";
    return pointwise_grad(n, gi, go, PTL_OP_gelu_backward, 0, no_params, ptl_iv_string(mode));
}

static PtlTensorImpl *sigmoid_slope(Scope *sc, PtlTensorImpl *z);

/* silu_backward(g, self); for a complex self (silu_: the functional silu refuses to
 * differentiate a complex result, as PyTorch's, in autograd_kernel.c) g * conj(s + x s (1 - s)),
 * s = sigmoid(x), written with dispatcher ops (silu_backward has no complex kernel; Note
 * [Complex autograd] in derivatives/complex.c), so that its own derivatives come from theirs.
 * PyTorch's in-place silu leaves the factor unconjugated (its gradcheck fails); this passes. */
int
silu_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *x = NEEDS(0) ? sv(sc, n, 0) : NULL;
    if (x == NULL || !ptl_dtype_is_complex(x->dtype)) {   /* a failed sv fails there again */
        scope_end(sc, 0);
        return pointwise_grad(n, gi, go, PTL_OP_silu_backward, 0, no_params, ptl_iv_none());
    }
    PtlTensorImpl *slope = ADD(f1(sc, PTL_OP_sigmoid, x), MUL(x, sigmoid_slope(sc, x)));
    return scope_end(sc, give(n, go, 0, MUL(gi[0], CONJ(slope))));
}

int
mish_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_grad(n, gi, go, PTL_OP_mish_backward, 0, no_params, ptl_iv_none());
}

/* elu_backward(grad_output, alpha, scale, input_scale, is_result=False, self) */
int
elu_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *x;
    if (!NEEDS(0)) {
        return 0;
    }
    if (saved(n, 0, &x) < 0) {
        return -1;
    }
    PtlIValue a[6] = {ptl_iv_tensor(gi[0]), n->args[1], n->args[2], n->args[3], ptl_iv_bool(0),
                      ptl_iv_tensor(x)};
    int rc = put(n, go, 0, callv(PTL_OP_elu_backward, 6, a));
    ptl_decref(x);
    return rc;
}

int
leaky_relu_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_grad(n, gi, go, PTL_OP_leaky_relu_backward, 1, param1, ptl_iv_bool(0));
}

/* leaky_relu_ saves its result, as PyTorch does (no copy of the input is kept) */
int
leaky_relu_result_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_grad(n, gi, go, PTL_OP_leaky_relu_backward, 1, param1, ptl_iv_bool(1));
}

int
hardtanh_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_grad(n, gi, go, PTL_OP_hardtanh_backward, 2, param12, ptl_iv_none());
}

int
softplus_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_grad(n, gi, go, PTL_OP_softplus_backward, 2, param12, ptl_iv_none());
}

int
hardswish_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_grad(n, gi, go, PTL_OP_hardswish_backward, 0, no_params, ptl_iv_none());
}

int
hardsigmoid_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_grad(n, gi, go, PTL_OP_hardsigmoid_backward, 0, no_params, ptl_iv_none());
}

/* log_sigmoid_forward(self) -> (output, buffer): self gets log_sigmoid_backward(grad, self,
 * buffer) (saved 0 and 1); the buffer is no differentiable output (PyTorch's
 * output_differentiability [True, False]), so its gradient, if any, is dropped. */
int
log_sigmoid_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope s = {.n = 0}, *sc = &s;
    PtlTensorImpl *x, *buffer;
    if (!NEEDS(0) || gi[0] == NULL) {
        return 0;
    }
    if ((x = sv(sc, n, 0)) == NULL || (buffer = sv(sc, n, 1)) == NULL) {
        return scope_end(sc, -1);
    }
    PtlIValue a[3] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(x), ptl_iv_tensor(buffer)};
    return scope_end(sc, give(n, go, 0, fv(sc, PTL_OP_log_sigmoid_backward, 3, a)));
}

int
softshrink_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_grad(n, gi, go, PTL_OP_softshrink_backward, 1, param1, ptl_iv_none());
}

int
hardshrink_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_grad(n, gi, go, PTL_OP_hardshrink_backward, 1, param1, ptl_iv_none());
}

int
threshold_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_grad(n, gi, go, PTL_OP_threshold_backward, 1, param1, ptl_iv_none());
}

/* grads_out[0] = elu_backward(g, alpha, scale, input_scale, is_result, saved slot 0) */
static int
elu_grad(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go, PtlIValue alpha, PtlIValue scale,
         PtlIValue input_scale, int is_result)
{
    PtlTensorImpl *t;
    if (!NEEDS(0)) {
        return 0;
    }
    if (saved(n, 0, &t) < 0) {
        return -1;
    }
    PtlIValue a[6] = {ptl_iv_tensor(gi[0]), alpha, scale, input_scale, ptl_iv_bool(is_result),
                      ptl_iv_tensor(t)};
    int rc = put(n, go, 0, callv(PTL_OP_elu_backward, 6, a));
    ptl_decref(t);
    return rc;
}

/* elu_(self, alpha, scale, input_scale): result saved */
int
elu_result_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return elu_grad(n, gi, go, n->args[1], n->args[2], n->args[3], 1);
}

/* celu's input_scale: 1 / alpha with alpha rounded to float */
static PtlIValue
celu_input_scale(PtlNode *n)
{
    return ptl_iv_double(1.0 / (double)(float)ptl_iv_to_double(&n->args[1]));
}

/* celu(self, alpha): self saved */
int
celu_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return elu_grad(n, gi, go, n->args[1], ptl_iv_double(1.0), celu_input_scale(n), 0);
}

/* celu_(self, alpha): result saved */
int
celu_result_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return elu_grad(n, gi, go, n->args[1], ptl_iv_double(1.0), celu_input_scale(n), 1);
}

#define INV_SQRT_2PI 0.398942280401432677939946059934381868
#define SQRT_2_OVER_PI 0.797884560802865355879892119868763737
#define GELU_TANH_C 0.044715

/* ---- the activations' *_backward ops (double backward) ---- */

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
    if (ptl_dtype_is_complex(gg->dtype)) {   /* silu_backward's: PyTorch has none either */
        return ptl_error_set(PTL_ERR_RUNTIME, "derivative for %s is not implemented",
                             n->op->schema.name);
    }
    if ((second != NULL && sv_opt(sc, n, 0, &g) < 0) || sv_opt(sc, n, second != NULL, &x) < 0) {
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

/* log_sigmoid_backward(gO, self, buffer) with incoming gg (saved gO, self, buffer):
 * grad_output gets log_sigmoid_backward(gg, self, buffer), self gg gO log_sigmoid''(self);
 * the buffer is not differentiated (PTL_NONDIFF). */
int
log_sigmoid_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope s = {.n = 0}, *sc = &s;
    PtlTensorImpl *g, *x, *buffer, *gg = gi[0];
    if (gg == NULL) {
        return 0;
    }
    if ((g = sv(sc, n, 0)) == NULL || (x = sv(sc, n, 1)) == NULL ||
        (buffer = sv(sc, n, 2)) == NULL) {
        return scope_end(sc, -1);
    }
    PtlIValue a[3] = {ptl_iv_tensor(gg), ptl_iv_tensor(x), ptl_iv_tensor(buffer)};
    if (NEEDS(0) && give(n, go, 0, fv(sc, PTL_OP_log_sigmoid_backward, 3, a)) < 0) {
        return scope_end(sc, -1);
    }
    if (NEEDS(1) && give(n, go, 1, MUL(MUL(gg, g), log_sigmoid_second(sc, n, x))) < 0) {
        return scope_end(sc, -1);
    }
    return scope_end(sc, 0);
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
