/* derivatives/grid_sampler.c -- derivative formulas of grid_sampler_2d/3d and of their
 * backward ops (aten/native/grid_sampler.c).  Mirrors their rows of
 * tools/autograd/derivatives.yaml.  PyTorch writes the backwards' own derivative as a
 * composite of other ops; here one hidden op, _grid_sampler_backward_backward
 * (aten/native/grid_sampler.c, Note [Grid sampler taps]), gives all three gradients.
 * Edges of the backwards: grad_output 0, input 1, grid 2. */
#include "../formula.h"

/* grid_sampler_2d / grid_sampler_3d: one backward call gives the input and grid gradients. */
int
grid_sampler_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *x = NULL, *grid = NULL, *r[2] = {NULL, NULL};
    int64_t mask[2] = {NEEDS(0) != 0, NEEDS(1) != 0};
    int rc = -1;
    if (gi[0] == NULL) {
        return 0;
    }
    if (saved(n, 0, &x) < 0 || saved(n, 1, &grid) < 0) {
        goto done;
    }
    PtlIValue a[7] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(x), ptl_iv_tensor(grid), n->args[2],
                      n->args[3], n->args[4], ptl_iv_intlist(mask, 2)};
    PtlOpId bwd = n->op->id == PTL_OP_grid_sampler_3d ? PTL_OP_grid_sampler_3d_backward
                                                      : PTL_OP_grid_sampler_2d_backward;
    if (call_multi(bwd, 7, a, 2, r) < 0) {
        goto done;
    }
    rc = 0;
    for (int i = 0; i < 2; i++) {
        if (r[i] != NULL && put(n, go, i, r[i]) < 0) {
            rc = -1;
        }
    }
done:
    ptl_xdecref(x);
    ptl_xdecref(grid);
    return rc;
}

/* grid_sampler_{2,3}d_backward(grad_output, input, grid, mode, padding, align, mask) ->
 * (grad_input, grad_grid): the incoming gradients of those two outputs (either may be
 * undefined) go to _grid_sampler_backward_backward. */
int
grid_sampler_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *g = NULL, *x = NULL, *grid = NULL, *r[3] = {NULL, NULL, NULL};
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
    if (call_multi(PTL_OP__grid_sampler_backward_backward, 9, a, 3, r) < 0) {
        goto done;
    }
    rc = 0;
    for (int i = 0; i < 3; i++) {
        if (r[i] != NULL && put(n, go, i, r[i]) < 0) {
            rc = -1;
        }
    }
done:
    ptl_xdecref(g);
    ptl_xdecref(x);
    ptl_xdecref(grid);
    return rc;
}
