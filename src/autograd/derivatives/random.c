/* derivatives/random.c -- derivative formulas of the random ops of aten/native/random.c:
 * uniform_, normal_, the normal overloads, random_, exponential_, geometric_, log_normal_,
 * cauchy_, bernoulli, bernoulli_, poisson and _standard_gamma.  Mirrors their
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
