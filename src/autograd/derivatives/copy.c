/* derivatives/copy.c -- derivative formulas of the ops of aten/native/copy.c: the copies
 * (clone, contiguous, _to_copy, which pass the gradient through; alias and frac share that
 * formula) and the in-place writes copy_, fill_ and zero_, whose old value gets a zero
 * gradient.
 * Mirrors their rows of tools/autograd/derivatives.yaml. */
#include "../formula.h"

int
identity_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return NEEDS(0) ? put_same(n, go, 0, gi[0]) : 0;
}

/* copy_(self, src): self's old value does not matter (zeros, as derivatives.yaml's
 * zeros_like(grad)); src gets g */
int
copy_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    if (gi[0] == NULL) {
        return 0;
    }
    if (give_zeros(sc, n, go, 0, gi[0]) < 0 || (NEEDS(1) && put_same(n, go, 1, gi[0]) < 0)) {
        return scope_end(sc, -1);
    }
    return scope_end(sc, 0);
}

/* fill_.Tensor(self, value): self gets zeros; every element is value, so value gets
 * grad.sum() */
int
fill_tensor_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    if (gi[0] == NULL) {
        return 0;
    }
    if (give_zeros(sc, n, go, 0, gi[0]) < 0 ||
        (NEEDS(1) && give(n, go, 1, f1(sc, PTL_OP_sum, gi[0])) < 0)) {
        return scope_end(sc, -1);
    }
    return scope_end(sc, 0);
}

/* zero_(self), fill_.Scalar(self, value): self gets zeros */
int
zero_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    if (gi[0] == NULL) {
        return 0;
    }
    return scope_end(sc, give_zeros(sc, n, go, 0, gi[0]));
}
