/* derivatives_agrad2.c -- derivative formulas of div.Tensor_mode / div_.Tensor_mode
 * (DivBackward2).  Mirrors their derivatives.yaml entry: with a rounding mode ('trunc' or
 * 'floor') the result is piecewise constant, so both inputs get zeros; with rounding_mode
 * None it is true division.  The node keeps the string argument (autograd_kernel.c's
 * keep_args copies strings into the node). */
#include "derivatives_agrad2.h"

#include "derivatives_rng.h"
#include "formula.h"

/* rounding_mode: zeros_like for both; None: g/b and -g*a/b^2 */
int
div_mode_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *self = NULL, *other = NULL, *t1 = NULL, *t2 = NULL;
    int rc = -1;
    if (n->args[2].tag == PTL_IV_STRING) {
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
