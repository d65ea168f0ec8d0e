/* derivatives/resample.c -- derivative formulas of the ops of aten/native/resample.c: the
 * reflection, replication and circular pads, upsample_* and affine_grid_generator.  Mirrors
 * their rows of tools/autograd/derivatives.yaml; each formula calls the op's *_backward
 * kernel through the dispatcher with the forward's arguments (node->args).  Their backward
 * ops' own derivatives are in derivatives/pool.c (linear_backward_backward). */
#include "../formula.h"

/* reflection / replication / circular pads: *_backward(grad, self, padding). */
int
pad_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    static const struct {
        PtlOpId fwd, bwd;
    } table[] = {
        {PTL_OP_reflection_pad1d, PTL_OP_reflection_pad1d_backward},
        {PTL_OP_reflection_pad2d, PTL_OP_reflection_pad2d_backward},
        {PTL_OP_reflection_pad3d, PTL_OP_reflection_pad3d_backward},
        {PTL_OP_replication_pad1d, PTL_OP_replication_pad1d_backward},
        {PTL_OP_replication_pad2d, PTL_OP_replication_pad2d_backward},
        {PTL_OP_replication_pad3d, PTL_OP_replication_pad3d_backward},
        {PTL_OP__pad_circular, PTL_OP__pad_circular_backward},
    };
    static const int from[1] = {1};
    PtlTensorImpl *self = NULL;
    PtlOpId bwd = PTL_OP__pad_circular_backward;
    int rc = -1;
    if (!NEEDS(0) || gi[0] == NULL) {
        return 0;
    }
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (n->op->id == (int)table[i].fwd) {
            bwd = table[i].bwd;
        }
    }
    if (saved(n, 0, &self) == 0) {
        rc = call_into(n, go, 0, bwd, gi[0], &self, 1, from, 1);
    }
    ptl_xdecref(self);
    return rc;
}

/* upsample_*: *_backward(grad, output_size, input_size, [align_corners,] scales...). */
int
upsample_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    static const struct {
        PtlOpId fwd, bwd;
    } table[] = {
        {PTL_OP_upsample_nearest1d, PTL_OP_upsample_nearest1d_backward},
        {PTL_OP_upsample_nearest2d, PTL_OP_upsample_nearest2d_backward},
        {PTL_OP_upsample_nearest3d, PTL_OP_upsample_nearest3d_backward},
        {PTL_OP_upsample_linear1d, PTL_OP_upsample_linear1d_backward},
        {PTL_OP_upsample_bilinear2d, PTL_OP_upsample_bilinear2d_backward},
        {PTL_OP_upsample_trilinear3d, PTL_OP_upsample_trilinear3d_backward},
        {PTL_OP_upsample_bicubic2d, PTL_OP_upsample_bicubic2d_backward},
    };
    const PtlInputMeta *m = &n->input_meta[0];
    PtlIValue a[PTL_SCHEMA_MAX_ARGS];
    PtlOpId bwd = PTL_OP_upsample_nearest1d_backward;
    int k = 0;
    if (!NEEDS(0) || gi[0] == NULL) {
        return 0;
    }
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (n->op->id == (int)table[i].fwd) {
            bwd = table[i].bwd;
        }
    }
    a[k++] = ptl_iv_tensor(gi[0]);
    a[k++] = n->args[1];
    a[k++] = ptl_iv_intlist(m->sizes, m->dim);
    for (int i = 2; i < n->nargs; i++) {
        a[k++] = n->args[i];
    }
    return put(n, go, 0, callv(bwd, k, a));
}

/* affine_grid_generator: affine_grid_generator_backward(grad, size, align_corners). */
int
affine_grid_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    static const int from[2] = {1, 2};
    if (!NEEDS(0) || gi[0] == NULL) {
        return 0;
    }
    return call_into(n, go, 0, PTL_OP_affine_grid_generator_backward, gi[0], NULL, 0, from, 2);
}
