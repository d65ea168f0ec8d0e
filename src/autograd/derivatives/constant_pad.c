/* derivatives/constant_pad.c -- the derivative formula of aten/native/constant_pad.c's
 * constant_pad_nd.  Mirrors its row of tools/autograd/derivatives.yaml. */
#include "../formula.h"

/* constant_pad_nd: the gradient is the same pad with the pads negated (a crop). */
int
constant_pad_nd_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    int64_t neg[2 * PTL_MAX_DIMS];
    int64_t np = n->args[1].u.il.n;
    if (!NEEDS(0) || gi[0] == NULL) {
        return 0;
    }
    for (int64_t i = 0; i < np && i < 2 * PTL_MAX_DIMS; i++) {
        neg[i] = -n->args[1].u.il.data[i];
    }
    PtlIValue a[2] = {ptl_iv_tensor(gi[0]), ptl_iv_intlist(neg, np)};
    return put(n, go, 0, callv(PTL_OP_constant_pad_nd, 2, a));
}
