/* derivatives/random.c -- derivative formulas of the random ops of aten/native/random.c:
 * uniform_, normal_, the normal overloads, random_, exponential_, geometric_, log_normal_,
 * cauchy_, bernoulli, bernoulli_, poisson, binomial, _standard_gamma and native_dropout (+ its
 * backward).  Mirrors their
 * derivatives.yaml entries, which are zeros_like but for _standard_gamma: no gradient flows
 * through a sample, but an input that asked for one gets zeros (a leaf's .grad becomes a
 * zero tensor, as in PyTorch, rather than staying None).  A gamma sample is
 * reparameterised: it moves with its alpha at a fixed quantile. */
#include "../formula.h"

int
random_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out)
{
    (void)grads_in;
    for (int i = 0; i < n->num_next; i++) {
        if (!NEEDS(i)) {
            continue;
        }
        const PtlInputMeta *m = &n->input_meta[i];
        PtlIValue a[5] = {ptl_iv_intlist(m->sizes, m->dim), ptl_iv_dtype(m->dtype),
                          ptl_iv_none(), ptl_iv_device(m->device), ptl_iv_none()};
        if (put(n, grads_out, i, callv(PTL_OP_zeros, 5, a)) < 0) {
            return -1;
        }
    }
    return 0;
}

/* derivatives.yaml  binomial:  count, prob: not_implemented("binomial"), a node that raises
 * when the gradient reaches it */
int
binomial_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    (void)n;
    (void)gi;
    (void)go;
    return ptl_error_set(PTL_ERR_RUNTIME, "derivative for aten::binomial is not implemented");
}

/* derivatives.yaml  _standard_gamma:  self: grad * _standard_gamma_grad(self, result) */
int
standard_gamma_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    if (!NEEDS(0)) {
        return 0;
    }
    PtlTensorImpl *dx = f2(sc, PTL_OP__standard_gamma_grad, sv(sc, n, 0), sv(sc, n, 1));
    return scope_end(sc, give(n, go, 0, MUL(gi[0], dx)));
}

/* grad_output * mask * scale through native_dropout_backward (so create_graph goes on through
 * its own row) into input 0 */
static int
dropout_grad(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go, double scale)
{
    PtlTensorImpl *mask;
    if (!NEEDS(0) || gi[0] == NULL) {
        return 0;
    }
    if (saved(n, 0, &mask) < 0) {
        return -1;
    }
    PtlIValue a[3] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(mask), ptl_iv_double(scale)};
    int rc = put(n, go, 0, callv(PTL_OP_native_dropout_backward, 3, a));
    ptl_decref(mask);
    return rc;
}

/* derivatives.yaml  native_dropout:  input: native_dropout_backward(grad, result1, scale),
 * scale = 1 / (1 - p) (0 when p is 1) when the forward dropped, else 1.  PyTorch 2.13 takes
 * scale 1 for train=None although its forward drops and scales then (an accident of its
 * formula, `!train.has_value() || !train.value() ? 1 : ...`); we differentiate what the
 * forward computed (docs/decisions.md). */
int
native_dropout_grad(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    double p = ptl_iv_to_double(&n->args[1]);
    int train = n->args[2].tag == PTL_IV_NONE || n->args[2].u.b;
    return dropout_grad(n, gi, go, !train ? 1.0 : p == 1.0 ? 0.0 : 1.0 / (1.0 - p));
}

/* derivatives.yaml  native_dropout_backward:  grad_output: native_dropout_backward(grad,
 * mask, scale); mask: non_differentiable */
int
native_dropout_backward_grad(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return dropout_grad(n, gi, go, ptl_iv_to_double(&n->args[2]));
}
