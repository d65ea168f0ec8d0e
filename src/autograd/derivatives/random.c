/* derivatives/random.c -- derivative formulas of the random ops of aten/native/random.c:
 * uniform_, normal_, the normal overloads, random_, exponential_, geometric_, log_normal_,
 * cauchy_, bernoulli, bernoulli_ and poisson.  Mirrors their derivatives.yaml entries, which
 * are all zeros_like: no gradient flows through a sample, but an input that asked for one
 * gets zeros (a leaf's .grad becomes a zero tensor, as in PyTorch, rather than staying
 * None). */
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
                          ptl_iv_none(), ptl_iv_none(), ptl_iv_none()};
        a[3].tag = PTL_IV_DEVICE;
        a[3].u.device = m->device;
        if (put(n, grads_out, i, callv(PTL_OP_zeros, 5, a)) < 0) {
            return -1;
        }
    }
    return 0;
}
