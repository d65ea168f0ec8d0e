/* derivatives/group_norm.c -- derivative formulas of native_group_norm and
 * native_group_norm_backward (aten/native/group_norm.c).  Mirrors the native_group_norm
 * entries of tools/autograd/derivatives.yaml.
 *
 * Note [Group norm double backward]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Group norm is layer norm over the view [N, G, D, HxW] (D = C / G channels a group) with
 * the statistics [N, G, 1, 1] and a weight that broadcasts as [1, G, D, 1], so its formulas
 * are layer norm's (Note [Layer norm double backward] in derivatives/layer_norm.c) on that
 * view, normalized over dims 2 and 3: the tensors are reshaped to it, norm_double_backward
 * runs there, and the results are reshaped back (the weight's gradient summed over dims 0
 * and 3 first).  The gradients of the mean and rstd outputs, when any flow, add to the
 * input's gradient as in norm_grad_finish, on the same view.  Every step is a dispatcher op,
 * so the result is differentiable again.
 *
 * Edges: native_group_norm: input 0, weight 1, bias 2;
 *        native_group_norm_backward: grad_out 0, input 1, mean 2, rstd 3, weight 4. */
#include "../formula.h"

/* The view of Note [Group norm double backward]: x [N, G, D, HxW], stats [N, G, 1, 1],
 * param [1, G, D, 1], from the schema's N, C, HxW and group at args[at..at+4). */
typedef struct {
    int64_t x[4], stats[4], param[4], c;
    NormDims d;
} GnView;

static GnView
gn_view(const PtlIValue *args, int at)
{
    int64_t n = ptl_iv_to_int(&args[at]), c = ptl_iv_to_int(&args[at + 1]);
    int64_t hw = ptl_iv_to_int(&args[at + 2]), g = ptl_iv_to_int(&args[at + 3]);
    int64_t dg = g > 0 ? c / g : 0;
    GnView v = {{n, g, dg, hw}, {n, g, 1, 1}, {1, g, dg, 1}, c, {.k = 2}};
    v.d.dims[0] = 2;
    v.d.dims[1] = 3;
    v.d.count = (double)dg * (double)hw;
    return v;
}

/* native_group_norm(input, weight, bias, N, C, HxW, group, eps) -> (out, mean, rstd): the
 * out gradient goes to native_group_norm_backward; gradients of mean and rstd add to the
 * input's (Note [Group norm double backward]). */
int
native_group_norm_grad(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *x = NULL, *w = NULL, *mean = NULL, *rstd = NULL;
    PtlTensorImpl *r[3] = {NULL, NULL, NULL};
    Scope scope = {.n = 0}, *sc = &scope;
    int64_t mask[3] = {NEEDS(0) != 0, NEEDS(1) != 0, NEEDS(2) != 0};
    int rc = -1;
    if (saved(n, 0, &x) < 0 || saved(n, 1, &w) < 0 || saved(n, 2, &mean) < 0 ||
        saved(n, 3, &rstd) < 0) {
        goto done;
    }
    if (gi[0] != NULL) {
        PtlIValue a[10] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(x), ptl_iv_tensor(mean),
                           ptl_iv_tensor(rstd), ptl_iv_tensor(w), n->args[3], n->args[4],
                           n->args[5], n->args[6], ptl_iv_intlist(mask, 3)};
        if (call_multi(PTL_OP_native_group_norm_backward, 10, a, 3, r) < 0) {
            goto done;
        }
    }
    if (mask[0] && (gi[1] != NULL || gi[2] != NULL)) {
        GnView v = gn_view(n->args, 3);
        PtlTensorImpl *x4 = reshape_to(sc, x, v.x, 4), *extra = NULL;
        if (gi[1] != NULL) {
            extra = scaled(sc, reshape_to(sc, gi[1], v.stats, 4), 1.0 / v.d.count);
        }
        if (gi[2] != NULL) {
            PtlTensorImpl *rs = reshape_to(sc, rstd, v.stats, 4);
            PtlTensorImpl *coef = scaled(sc, MUL(reshape_to(sc, gi[2], v.stats, 4),
                                                 MUL(MUL(rs, rs), rs)),
                                         -1.0 / v.d.count);
            PtlTensorImpl *t = MUL(SUB(x4, reshape_to(sc, mean, v.stats, 4)), coef);
            extra = extra != NULL ? ADD(extra, t) : t;
        }
        /* broadcast against the view (a mean gradient alone has the statistics' shape) */
        PtlTensorImpl *e = reshape_to(sc, ADD(zeros_of(sc, x4), extra), x->sizes, x->dim);
        PtlTensorImpl *sum = r[0] != NULL ? ADD(r[0], e) : e;
        if (sum != NULL) {
            ptl_incref(sum);
        }
        ptl_xdecref(r[0]);
        if ((r[0] = sum) == NULL) {
            goto done;
        }
    }
    rc = 0;
    for (int i = 0; i < 3; i++) {
        if (rc == 0 && r[i] != NULL && mask[i]) {
            rc = put(n, go, i, r[i]);   /* consumes r[i] */
        }
        else {
            ptl_xdecref(r[i]);
        }
        r[i] = NULL;
    }
done:
    for (int i = 0; i < 3; i++) {
        ptl_xdecref(r[i]);
    }
    ptl_xdecref(x);
    ptl_xdecref(w);
    ptl_xdecref(mean);
    ptl_xdecref(rstd);
    return scope_end(sc, rc);
}

/* native_group_norm_backward(grad_out, input, mean, rstd, weight, N, C, HxW, group,
 * output_mask) -> (gI, gW, gB): Note [Group norm double backward]. */
int
native_group_norm_double_grad(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *g = NULL, *x = NULL, *mean = NULL, *rstd = NULL, *w = NULL, *out[3];
    Scope scope = {.n = 0}, *sc = &scope;
    int rc = -1;
    if (saved(n, 0, &g) < 0 || saved(n, 1, &x) < 0 || saved(n, 2, &mean) < 0 ||
        saved(n, 3, &rstd) < 0 || saved(n, 4, &w) < 0) {
        goto done;
    }
    GnView v = gn_view(n->args, 5);
    PtlTensorImpl *w4 = w != NULL ? reshape_to(sc, w, v.param, 4) : NULL;
    PtlTensorImpl *ggi = gi[0] != NULL ? reshape_to(sc, gi[0], v.x, 4) : NULL;
    PtlTensorImpl *ggw = gi[1] != NULL ? reshape_to(sc, gi[1], v.param, 4) : NULL;
    PtlTensorImpl *ggb = gi[2] != NULL ? reshape_to(sc, gi[2], v.param, 4) : NULL;
    PtlTensorImpl *g4 = reshape_to(sc, g, v.x, 4), *x4 = reshape_to(sc, x, v.x, 4);
    PtlTensorImpl *mean4 = reshape_to(sc, mean, v.stats, 4);
    PtlTensorImpl *rstd4 = reshape_to(sc, rstd, v.stats, 4);
    if ((w != NULL && w4 == NULL) || (gi[0] != NULL && ggi == NULL) ||
        (gi[1] != NULL && ggw == NULL) || (gi[2] != NULL && ggb == NULL) || g4 == NULL ||
        x4 == NULL || mean4 == NULL || rstd4 == NULL) {
        goto done;
    }
    int want[3] = {NEEDS(0) != 0, NEEDS(1) != 0, NEEDS(4) != 0};
    if (norm_double_backward(sc, &v.d, g4, x4, mean4, rstd4, w4, ggi, ggw, ggb, want, out) < 0) {
        goto done;
    }
    int64_t wdims[2] = {0, 3};
    PtlIValue ws[3] = {ptl_iv_tensor(out[2]), ptl_iv_intlist(wdims, 2), ptl_iv_bool(0)};
    if ((out[0] != NULL && give(n, go, 0, reshape_to(sc, out[0], x->sizes, x->dim)) < 0) ||
        (out[1] != NULL && give(n, go, 1, reshape_to(sc, out[1], x->sizes, x->dim)) < 0) ||
        (out[2] != NULL &&
         give(n, go, 4, reshape_to(sc, fv(sc, PTL_OP_sum_dim_IntList, 3, ws), &v.c, 1)) < 0)) {
        goto done;
    }
    rc = 0;
done:
    ptl_xdecref(g);
    ptl_xdecref(x);
    ptl_xdecref(mean);
    ptl_xdecref(rstd);
    ptl_xdecref(w);
    return scope_end(sc, rc);
}
