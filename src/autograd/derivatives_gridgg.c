/* derivatives_gridgg.c -- derivative formulas of the grid sampler backwards (the gridgg
 * section of derivatives.def; grid_sampler_3d shares grid_sampler_2d's formula).  PyTorch writes the backwards' own
 * derivative as a composite of other ops; here one hidden op, _grid_sampler_backward_backward
 * (ATen/native/grid_sampler.c, Note [Grid sampler taps]), gives all three gradients.
 *
 * Edges of the backwards: grad_output 0, input 1, grid 2. */
#include "derivatives_gridgg.h"
#include "formula.h"

/* grid_sampler_{2,3}d_backward(grad_output, input, grid, mode, padding, align, mask) ->
 * (grad_input, grad_grid): the incoming gradients of those two outputs (either may be
 * undefined) go to _grid_sampler_backward_backward. */
int
grid_sampler_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *g = NULL, *x = NULL, *grid = NULL;
    int64_t mask[3] = {NEEDS(0) != 0, NEEDS(1) != 0, NEEDS(2) != 0};
    int rc = -1;
    if (gi[0] == NULL && gi[1] == NULL) {
        return 0;
    }
    if (saved(n, 0, &g) < 0 || saved(n, 1, &x) < 0 || saved(n, 2, &grid) < 0) {
        goto done;
    }
    PtlIValue a[9] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(gi[1]), ptl_iv_tensor(g),
                      ptl_iv_tensor(x), ptl_iv_tensor(grid), n->args[3], n->args[4],
                      n->args[5], ptl_iv_intlist(mask, 3)};
    if (ptl_dispatcher_call(ptl_op(PTL_OP__grid_sampler_backward_backward), a) < 0) {
        goto done;
    }
    rc = 0;
    for (int i = 0; i < 3; i++) {
        PtlTensorImpl *r = a[i].tag == PTL_IV_TENSOR ? a[i].u.t : NULL;
        if (r != NULL && put(n, go, i, r) < 0) {
            rc = -1;
        }
    }
done:
    ptl_xdecref(g);
    ptl_xdecref(x);
    ptl_xdecref(grid);
    return rc;
}
