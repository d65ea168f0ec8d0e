/* derivatives/pool.c -- derivative formulas of the pooling ops of aten/native/pool.c
 * (max_pool*_with_indices, avg_pool*, the adaptive pools, max_unpool2d) and the double
 * backward of every linear NN backward op (pooling, padding, upsampling, affine_grid).
 * Mirrors their rows of tools/autograd/derivatives.yaml and max_pool_double_backward in
 * FunctionsManual.cpp.
 *
 * A backward op is linear in grad_output.  Its derivative for grad_output is the adjoint of
 * that linear map: the forward op itself for ops linear in their input (average pooling,
 * padding, upsampling, affine_grid), a gather at the argmax indices for max pooling. */
#include "../formula.h"

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

/* max_pool{2,3}d_with_indices and adaptive_max_pool{2,3}d: the gradient goes to the
 * winners. */
int
max_pool_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    static const int from[5] = {1, 2, 3, 4, 5};
    PtlTensorImpl *self = NULL, *idx = NULL;
    PtlOpId fwd = n->op->id, bwd;
    int adaptive = fwd == PTL_OP_adaptive_max_pool2d || fwd == PTL_OP_adaptive_max_pool3d;
    int rc = -1, nargs = adaptive ? 2 : 6;
    if (!NEEDS(0) || gi[0] == NULL) {
        return 0;
    }
    bwd = fwd == PTL_OP_max_pool2d_with_indices   ? PTL_OP_max_pool2d_with_indices_backward
          : fwd == PTL_OP_max_pool3d_with_indices ? PTL_OP_max_pool3d_with_indices_backward
          : fwd == PTL_OP_adaptive_max_pool3d     ? PTL_OP_adaptive_max_pool3d_backward
                                                  : PTL_OP_adaptive_max_pool2d_backward;
    if (saved(n, 0, &self) < 0 || (idx = recompute_indices(n, fwd, self, nargs)) == NULL) {
        goto done;
    }
    if (adaptive) {
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

/* forward op `id` on [g, n->args[from..to)] */
static PtlTensorImpl *
forward_on(Scope *sc, PtlNode *n, PtlOpId id, PtlTensorImpl *g, int from, int to)
{
    PtlIValue a[PTL_SCHEMA_MAX_ARGS];
    int k = 0;
    a[k++] = ptl_iv_tensor(g);
    for (int i = from; i < to; i++) {
        a[k++] = n->args[i];
    }
    return fv(sc, id, k, a);
}

/* ---- pooling, padding, upsampling, affine_grid: linear maps ---- */

/* g gathered at the flat spatial positions idx points to (the last `nsp` dims):
 * g [..., *in_spatial], idx [..., *out_spatial] -> [..., *out_spatial] */
static PtlTensorImpl *
gather_at(Scope *sc, PtlTensorImpl *g, PtlTensorImpl *idx, int nsp)
{
    PtlIValue fg[3] = {ptl_iv_tensor(g), ptl_iv_int(g->dim - nsp), ptl_iv_int(-1)};
    PtlIValue fi[3] = {ptl_iv_tensor(idx), ptl_iv_int(idx->dim - nsp), ptl_iv_int(-1)};
    PtlTensorImpl *gf = fv(sc, PTL_OP_flatten_using_ints, 3, fg);
    PtlTensorImpl *xf = fv(sc, PTL_OP_flatten_using_ints, 3, fi);
    PtlIValue ga[3] = {ptl_iv_tensor(gf), ptl_iv_int(-1), ptl_iv_tensor(xf)};
    PtlTensorImpl *r = gf && xf ? fv(sc, PTL_OP_gather, 3, ga) : NULL;
    PtlIValue ra[2] = {ptl_iv_tensor(r), ptl_iv_intlist(idx->sizes, idx->dim)};
    return r ? fv(sc, PTL_OP_reshape, 2, ra) : NULL;
}

typedef struct LinearMap LinearMap;

/* The adjoint of a backward op's map gO -> grad_input, applied to the incoming gradient gg */
typedef PtlTensorImpl *(*AdjointFn)(Scope *sc, PtlNode *n, const LinearMap *m,
                                    PtlTensorImpl *gg);

/* A backward op linear in grad_output: the forward op `fwd` is its adjoint, called on
 * [gg, n->args[from..to)] unless `adjoint` computes it; self_edge is the edge of the saved
 * input (it gets zeros) or -1 when the op has none. */
struct LinearMap {
    PtlOpId bwd, fwd;
    int from, to, self_edge;
    AdjointFn adjoint;
};

/* max_pool{2,3}d_with_indices_backward(gO, self, ..., indices),
 * adaptive_max_pool{2,3}d_backward(gO, self, indices) and
 * fractional_max_pool{2,3}d_backward(gO, self, ..., indices); saved: indices.  gg gathered
 * at them. */
static PtlTensorImpl *
max_pool_adjoint(Scope *sc, PtlNode *n, const LinearMap *m, PtlTensorImpl *gg)
{
    PtlTensorImpl *idx = NULL;
    (void)m;
    if (sv_opt(sc, n, 0, &idx) < 0) {
        return NULL;
    }
    PtlOpId id = n->op->id;
    int three = id == PTL_OP_max_pool3d_with_indices_backward ||
                id == PTL_OP_adaptive_max_pool3d_backward ||
                id == PTL_OP_fractional_max_pool3d_backward;
    return gather_at(sc, gg, idx, three ? 3 : 2);
}

/* _adaptive_avg_pool2d_backward(gO, self): the pooling of gg to gO's spatial size */
static PtlTensorImpl *
adaptive_avg_pool_adjoint(Scope *sc, PtlNode *n, const LinearMap *m, PtlTensorImpl *gg)
{
    const PtlInputMeta *meta = &n->input_meta[0];
    PtlIValue a[2] = {ptl_iv_tensor(gg), ptl_iv_intlist(meta->sizes + meta->dim - 2, 2)};
    return fv(sc, m->fwd, 2, a);
}

/* max_unpool2d_backward(gO, self, indices, output_size); saved: indices */
static PtlTensorImpl *
max_unpool_adjoint(Scope *sc, PtlNode *n, const LinearMap *m, PtlTensorImpl *gg)
{
    PtlTensorImpl *idx = NULL;
    if (sv_opt(sc, n, 0, &idx) < 0) {
        return NULL;
    }
    PtlIValue a[3] = {ptl_iv_tensor(gg), ptl_iv_tensor(idx), n->args[3]};
    return fv(sc, m->fwd, 3, a);
}

/* upsample_*_backward(gO, output_size, input_size, [align_corners,] scales...): the
 * upsampling of gg with (output_size, [align_corners,] scales...) */
static PtlTensorImpl *
upsample_adjoint(Scope *sc, PtlNode *n, const LinearMap *m, PtlTensorImpl *gg)
{
    PtlIValue a[PTL_SCHEMA_MAX_ARGS];
    int k = 0;
    a[k++] = ptl_iv_tensor(gg);
    a[k++] = n->args[1];
    for (int i = 3; i < n->nargs; i++) {
        a[k++] = n->args[i];
    }
    return fv(sc, m->fwd, k, a);
}

/* ORDER: any; looked up by bwd */
static const LinearMap linear_maps[] = {
    {PTL_OP_max_pool2d_with_indices_backward, PTL_OP_gather, 0, 0, 1, max_pool_adjoint},
    {PTL_OP_max_pool3d_with_indices_backward, PTL_OP_gather, 0, 0, 1, max_pool_adjoint},
    {PTL_OP_adaptive_max_pool2d_backward, PTL_OP_gather, 0, 0, 1, max_pool_adjoint},
    {PTL_OP_adaptive_max_pool3d_backward, PTL_OP_gather, 0, 0, 1, max_pool_adjoint},
    /* fractional_max_pool{2,3}d_backward(gO, self, kernel_size, output_size, indices) */
    {PTL_OP_fractional_max_pool2d_backward, PTL_OP_gather, 0, 0, 1, max_pool_adjoint},
    {PTL_OP_fractional_max_pool3d_backward, PTL_OP_gather, 0, 0, 1, max_pool_adjoint},
    /* avg_pool{2,3}d_backward(gO, self, kernel_size, ..., divisor_override) */
    {PTL_OP_avg_pool2d_backward, PTL_OP_avg_pool2d, 2, 8, 1, NULL},
    {PTL_OP_avg_pool3d_backward, PTL_OP_avg_pool3d, 2, 8, 1, NULL},
    {PTL_OP__adaptive_avg_pool2d_backward, PTL_OP__adaptive_avg_pool2d, 0, 0, 1,
     adaptive_avg_pool_adjoint},
    {PTL_OP_max_unpool2d_backward, PTL_OP_max_unpool2d, 0, 0, 1, max_unpool_adjoint},
    /* reflection / replication / circular pad backward(gO, self, padding) */
    {PTL_OP_reflection_pad1d_backward, PTL_OP_reflection_pad1d, 2, 3, 1, NULL},
    {PTL_OP_reflection_pad2d_backward, PTL_OP_reflection_pad2d, 2, 3, 1, NULL},
    {PTL_OP_reflection_pad3d_backward, PTL_OP_reflection_pad3d, 2, 3, 1, NULL},
    {PTL_OP_replication_pad1d_backward, PTL_OP_replication_pad1d, 2, 3, 1, NULL},
    {PTL_OP_replication_pad2d_backward, PTL_OP_replication_pad2d, 2, 3, 1, NULL},
    {PTL_OP_replication_pad3d_backward, PTL_OP_replication_pad3d, 2, 3, 1, NULL},
    {PTL_OP__pad_circular_backward, PTL_OP__pad_circular, 2, 3, 1, NULL},
    {PTL_OP_upsample_nearest1d_backward, PTL_OP_upsample_nearest1d, 0, 0, -1, upsample_adjoint},
    {PTL_OP_upsample_nearest2d_backward, PTL_OP_upsample_nearest2d, 0, 0, -1, upsample_adjoint},
    {PTL_OP_upsample_nearest3d_backward, PTL_OP_upsample_nearest3d, 0, 0, -1, upsample_adjoint},
    {PTL_OP_upsample_linear1d_backward, PTL_OP_upsample_linear1d, 0, 0, -1, upsample_adjoint},
    {PTL_OP_upsample_bilinear2d_backward, PTL_OP_upsample_bilinear2d, 0, 0, -1,
     upsample_adjoint},
    {PTL_OP_upsample_trilinear3d_backward, PTL_OP_upsample_trilinear3d, 0, 0, -1,
     upsample_adjoint},
    {PTL_OP_upsample_bicubic2d_backward, PTL_OP_upsample_bicubic2d, 0, 0, -1, upsample_adjoint},
    /* affine_grid_generator_backward(grad, size, align_corners): theta -> grid is linear */
    {PTL_OP_affine_grid_generator_backward, PTL_OP_affine_grid_generator, 1, 3, -1, NULL},
};

/* The backward ops of linear_maps: grad_output gets the adjoint of the incoming gradient,
 * the saved input (when there is one) zeros. */
int
linear_backward_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope s = {.n = 0}, *sc = &s;
    const LinearMap *m = NULL;
    int rc = -1;
    for (size_t i = 0; i < sizeof(linear_maps) / sizeof(linear_maps[0]); i++) {
        if (n->op->id == (int)linear_maps[i].bwd) {
            m = &linear_maps[i];
        }
    }
    if (m == NULL) {
        return ptl_error_set(PTL_ERR_RUNTIME, "derivative formula: %s is no linear map",
                             n->op->schema.name);
    }
    if (gi[0] == NULL) {
        return 0;
    }
    if (NEEDS(0)) {
        PtlTensorImpl *r = m->adjoint != NULL ? m->adjoint(sc, n, m, gi[0])
                                              : forward_on(sc, n, m->fwd, gi[0], m->from, m->to);
        if (give(n, go, 0, r) < 0) {
            goto done;
        }
    }
    rc = m->self_edge < 0 ? 0 : give_zeros(sc, n, go, m->self_edge, gi[0]);
done:
    return scope_end(sc, rc);
}
