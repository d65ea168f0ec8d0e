/* derivatives_elures.c -- derivative formulas of celu and of the in-place elu family (the
 * elures section of derivatives.def).  Mirrors the elu_, celu and celu_ entries of
 * tools/autograd/derivatives.yaml: the in-place ops save their result rather than a copy of
 * self and call elu_backward(..., is_result=True, result); celu passes scale 1 and
 * input_scale 1 / alpha with alpha rounded to float, as PyTorch's alpha.toFloat() does. */
#include "derivatives_elures.h"
#include "formula.h"

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
