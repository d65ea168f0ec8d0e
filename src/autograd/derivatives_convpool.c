/* derivatives_convpool.c -- derivative formulas of the NN ops of native/conv.c, pool.c and
 * resample.c.  Mirrors the rows of tools/autograd/derivatives.yaml for convolution,
 * max_pool*_with_indices, avg_pool*, adaptive pools, the pads, upsample_*, im2col/col2im,
 * grid_sampler_2d and affine_grid_generator.  Each formula calls the op's *_backward
 * kernel through the dispatcher with the forward's arguments (node->args). */
#include "derivatives_convpool.h"
#include "formula.h"

/* convolution: one convolution_backward call yields the three gradients. */
int
convolution_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *x = NULL, *w = NULL, *r[3] = {NULL, NULL, NULL};
    int64_t mask[3] = {NEEDS(0) != 0, NEEDS(1) != 0, NEEDS(2) != 0};
    int64_t bsz;
    int rc = -1;
    if (gi[0] == NULL) {
        return 0;
    }
    if (saved(n, 0, &x) < 0 || saved(n, 1, &w) < 0) {
        goto done;
    }
    bsz = n->args[6].u.b ? w->sizes[1] * n->args[8].u.i : w->sizes[0];
    PtlIValue a[11] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(x), ptl_iv_tensor(w),
                       ptl_iv_intlist(&bsz, 1), n->args[3], n->args[4], n->args[5],
                       n->args[6], n->args[7], n->args[8], ptl_iv_intlist(mask, 3)};
    if (call_multi(PTL_OP_convolution_backward, 11, a, 3, r) < 0) {
        goto done;
    }
    rc = 0;
    for (int i = 0; i < 3; i++) {
        if (r[i] != NULL && put(n, go, i, r[i]) < 0) {
            rc = -1;
        }
        r[i] = NULL;
    }
done:
    ptl_xdecref(x);
    ptl_xdecref(w);
    return rc;
}

/* Builds the stack [grad, tensors[0..nt), node args at positions from[0..na)] and calls
 * op `id`; its first return goes to input `slot` of the node.  0 or -1. */
static int
call_into(PtlNode *n, PtlTensorImpl **go, int slot, PtlOpId id, PtlTensorImpl *g,
          PtlTensorImpl **tensors, int nt, const int *from, int na)
{
    PtlIValue a[PTL_SCHEMA_MAX_ARGS];
    int k = 0;
    a[k++] = ptl_iv_tensor(g);
    for (int i = 0; i < nt; i++) {
        a[k++] = ptl_iv_tensor(tensors[i]);
    }
    for (int i = 0; i < na; i++) {
        a[k++] = n->args[from[i]];
    }
    return put(n, go, slot, callv(id, k, a));
}

/* The indices a max pooling chose: the forward run again on the saved input (new ref). */
static PtlTensorImpl *
recompute_indices(PtlNode *n, PtlOpId fwd, PtlTensorImpl *self, int nargs)
{
    PtlIValue a[PTL_SCHEMA_MAX_ARGS];
    PtlTensorImpl *r[2] = {NULL, NULL};
    a[0] = ptl_iv_tensor(self);
    for (int i = 1; i < nargs; i++) {
        a[i] = n->args[i];
    }
    if (call_multi(fwd, nargs, a, 2, r) < 0) {
        return NULL;
    }
    ptl_xdecref(r[0]);
    return r[1];
}

/* max_pool{2,3}d_with_indices and adaptive_max_pool2d: the gradient goes to the winners. */
int
max_pool_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    static const int from[5] = {1, 2, 3, 4, 5};
    PtlTensorImpl *self = NULL, *idx = NULL;
    PtlOpId fwd = n->op->id, bwd;
    int rc = -1, nargs = fwd == PTL_OP_adaptive_max_pool2d ? 2 : 6;
    if (!NEEDS(0) || gi[0] == NULL) {
        return 0;
    }
    bwd = fwd == PTL_OP_max_pool2d_with_indices   ? PTL_OP_max_pool2d_with_indices_backward
          : fwd == PTL_OP_max_pool3d_with_indices ? PTL_OP_max_pool3d_with_indices_backward
                                                  : PTL_OP_adaptive_max_pool2d_backward;
    if (saved(n, 0, &self) < 0 || (idx = recompute_indices(n, fwd, self, nargs)) == NULL) {
        goto done;
    }
    if (bwd == PTL_OP_adaptive_max_pool2d_backward) {
        PtlTensorImpl *t[2] = {self, idx};
        rc = call_into(n, go, 0, bwd, gi[0], t, 2, from, 0);
    }
    else {
        PtlIValue a[8] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(self), n->args[1], n->args[2],
                          n->args[3], n->args[4], n->args[5], ptl_iv_tensor(idx)};
        rc = put(n, go, 0, callv(bwd, 8, a));
    }
done:
    ptl_xdecref(self);
    ptl_xdecref(idx);
    return rc;
}

/* avg_pool{2,3}d and _adaptive_avg_pool2d: *_backward(grad, self, forward args). */
int
avg_pool_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    static const int from[6] = {1, 2, 3, 4, 5, 6};
    PtlTensorImpl *self = NULL;
    PtlOpId fwd = n->op->id;
    int rc = -1;
    if (!NEEDS(0) || gi[0] == NULL) {
        return 0;
    }
    if (saved(n, 0, &self) == 0) {
        if (fwd == PTL_OP__adaptive_avg_pool2d) {
            rc = call_into(n, go, 0, PTL_OP__adaptive_avg_pool2d_backward, gi[0], &self, 1, from, 0);
        }
        else {
            rc = call_into(n, go, 0,
                           fwd == PTL_OP_avg_pool2d ? PTL_OP_avg_pool2d_backward
                                                    : PTL_OP_avg_pool3d_backward,
                           gi[0], &self, 1, from, 6);
        }
    }
    ptl_xdecref(self);
    return rc;
}

/* max_unpool2d: the gradient is gathered back through the indices. */
int
max_unpool2d_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    static const int from[1] = {2};
    PtlTensorImpl *t[2] = {NULL, NULL};
    int rc = -1;
    if (!NEEDS(0) || gi[0] == NULL) {
        return 0;
    }
    if (saved(n, 0, &t[0]) == 0 && saved(n, 1, &t[1]) == 0) {
        rc = call_into(n, go, 0, PTL_OP_max_unpool2d_backward, gi[0], t, 2, from, 1);
    }
    ptl_xdecref(t[0]);
    ptl_xdecref(t[1]);
    return rc;
}

/* im2col's gradient is col2im to the input's spatial size, and the other way round. */
int
im2col_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    const PtlInputMeta *m = &n->input_meta[0];
    if (!NEEDS(0) || gi[0] == NULL) {
        return 0;
    }
    PtlIValue a[6] = {ptl_iv_tensor(gi[0]), ptl_iv_intlist(m->sizes + m->dim - 2, 2),
                      n->args[1], n->args[2], n->args[3], n->args[4]};
    return put(n, go, 0, callv(PTL_OP_col2im, 6, a));
}

int
col2im_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    if (!NEEDS(0) || gi[0] == NULL) {
        return 0;
    }
    PtlIValue a[5] = {ptl_iv_tensor(gi[0]), n->args[2], n->args[3], n->args[4], n->args[5]};
    return put(n, go, 0, callv(PTL_OP_im2col, 5, a));
}

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
