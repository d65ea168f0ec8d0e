/* derivatives/pool_fractional.c -- derivative formulas of the fractional max poolings of
 * aten/native/pool_fractional.c.  Mirrors their rows of tools/autograd/derivatives.yaml:
 * the gradient goes to the winners the forward recorded (its saved indices, not a rerun:
 * the windows depend on random_samples).  The backward ops' own derivative is the gather
 * of derivatives/pool.c's linear maps. */
#include "../formula.h"

/* derivatives.yaml  fractional_max_pool{2,3}d:  self: fractional_max_pool{2,3}d_backward(
 * grad, self, kernel_size, output_size, result1); random_samples: not differentiable */
int
fractional_max_pool_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *t[2] = {NULL, NULL};
    PtlOpId bwd = n->op->id == PTL_OP_fractional_max_pool2d
                      ? PTL_OP_fractional_max_pool2d_backward
                      : PTL_OP_fractional_max_pool3d_backward;
    int rc = -1;
    if (!NEEDS(0) || gi[0] == NULL) {
        return 0;
    }
    if (saved(n, 0, &t[0]) == 0 && saved(n, 1, &t[1]) == 0) {
        PtlIValue a[5] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(t[0]), n->args[1],
                          n->args[2], ptl_iv_tensor(t[1])};
        rc = put(n, go, 0, callv(bwd, 5, a));
    }
    ptl_xdecref(t[0]);
    ptl_xdecref(t[1]);
    return rc;
}
