/* derivatives_linalg2.c -- derivative formulas of the linalg2 section of derivatives.def.
 * Mirrors the _cdist_forward entry of tools/autograd/derivatives.yaml.  (linalg_vector_norm
 * shares norm's formula in derivatives.c; einsum, tensordot, cdist's matmul path and renorm
 * are composite.) */
#include "derivatives_linalg2.h"
#include "formula.h"

/* The last two dims of t swapped (new ref). */
static PtlTensorImpl *
mT(PtlTensorImpl *t)
{
    PtlIValue v[3] = {ptl_iv_tensor(t), ptl_iv_int(-2), ptl_iv_int(-1)};
    return callv(PTL_OP_transpose_int, 3, v);
}

/* _cdist_forward(x1, x2, p, mode) -> dist: x1 gets _cdist_backward(g, x1, x2, p, dist), x2
 * the same with the roles swapped (g and dist transposed).  Saved: x1, x2, dist. */
int
cdist_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *x1 = NULL, *x2 = NULL, *dist = NULL, *gt = NULL, *dt = NULL;
    int rc = -1;

    if (saved(n, 0, &x1) < 0 || saved(n, 1, &x2) < 0 || saved(n, 2, &dist) < 0) {
        goto done;
    }
    if (NEEDS(0)) {
        PtlIValue v[5] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(x1), ptl_iv_tensor(x2), n->args[2],
                          ptl_iv_tensor(dist)};
        if (put(n, go, 0, callv(PTL_OP__cdist_backward, 5, v)) < 0) {
            goto done;
        }
    }
    if (NEEDS(1)) {
        if ((gt = mT(gi[0])) == NULL || (dt = mT(dist)) == NULL) {
            goto done;
        }
        PtlIValue v[5] = {ptl_iv_tensor(gt), ptl_iv_tensor(x2), ptl_iv_tensor(x1), n->args[2],
                          ptl_iv_tensor(dt)};
        if (put(n, go, 1, callv(PTL_OP__cdist_backward, 5, v)) < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    ptl_xdecref(x1);
    ptl_xdecref(x2);
    ptl_xdecref(dist);
    ptl_xdecref(gt);
    ptl_xdecref(dt);
    return rc;
}
