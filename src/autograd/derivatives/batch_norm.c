/* derivatives/batch_norm.c -- derivative formulas of native_batch_norm and
 * native_batch_norm_backward (aten/native/batch_norm.c).  Mirrors the native_batch_norm
 * and native_batch_norm_backward entries of tools/autograd/derivatives.yaml and
 * batchnorm_double_backward in FunctionsManual.cpp.
 *
 * Note [Batch norm double backward]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * In training the backward is layer norm's with the statistics taken per channel over dims
 * 0, 2, 3, ... and the weight one factor per channel, so Note [Layer norm double backward]
 * applies as written (norm_double_backward), the [C] tensors viewed as [1, C, 1, ...]; only
 * the weight's gradient is summed over those dims instead.  In eval, with r = 1 /
 * sqrt(running_var + eps) and xhat = (x - running_mean) r constants, the backward
 * gI = g w r, gW = sum(g xhat), gB = sum(g) is linear in g, and its derivative is
 *
 *     d/dg = ggI w r + xhat ggW + ggB,   d/dx = g ggW r,   d/dw = sum(ggI g r).
 *
 * The saved statistics get no gradient (their paths through x are in d/dx, as in PyTorch);
 * the running statistics are not differentiable (derivatives.def).
 *
 * Edges: native_batch_norm: input 0, weight 1, bias 2, running_mean 3, running_var 4;
 *        native_batch_norm_backward: grad_out 0, input 1, weight 2, running_mean 3,
 *        running_var 4, save_mean 5, save_invstd 6. */
#include "../formula.h"

/* the dims batch norm reduces over for x [N, C, *]: all but 1 */
static NormDims
bn_dims(PtlTensorImpl *x)
{
    NormDims d = {.k = 0, .count = 1};
    for (int i = 0; i < x->dim; i++) {
        if (i != 1) {
            d.dims[d.k++] = i;
            d.count *= (double)x->sizes[i];
        }
    }
    return d;
}

/* the [C] tensor t as [1, C, 1, ...], to broadcast against x (NULL passes through) */
static PtlTensorImpl *
per_channel(Scope *sc, PtlTensorImpl *t, PtlTensorImpl *x)
{
    int64_t sizes[PTL_MAX_DIMS];
    for (int i = 0; i < x->dim; i++) {
        sizes[i] = i == 1 ? x->sizes[1] : 1;
    }
    return t != NULL ? reshape_to(sc, t, sizes, x->dim) : NULL;
}

/* t [*, C, *] summed over the batch norm dims to [C] */
static PtlTensorImpl *
channel_sum(Scope *sc, PtlTensorImpl *t, PtlTensorImpl *x, const NormDims *d)
{
    return reshape_to(sc, norm_sum(sc, t, d), &x->sizes[1], 1);
}

/* Unpacks the node's first k saved slots into t[0..k) (new refs, NULL when undefined).
 * 0 or -1. */
static int
saved_all(PtlNode *n, int k, PtlTensorImpl **t)
{
    for (int i = 0; i < k; i++) {
        if (saved(n, i, &t[i]) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Releases t[0..k) and passes rc through, ending the scope. */
static int
release_all(Scope *sc, PtlTensorImpl **t, int k, int rc)
{
    for (int i = 0; i < k; i++) {
        ptl_xdecref(t[i]);
    }
    return scope_end(sc, rc);
}

/* native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
 * eps) -> (out, save_mean, save_invstd): the out gradient goes to
 * native_batch_norm_backward; in training, gradients of save_mean and save_invstd add to the
 * input's (norm_grad_finish).  Saved: input, weight, running_mean, running_var, save_mean,
 * save_invstd. */
int
native_batch_norm_grad(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *t[6] = {NULL, NULL, NULL, NULL, NULL, NULL}, *r[3] = {NULL, NULL, NULL};
    Scope scope = {.n = 0}, *sc = &scope;
    int64_t mask[3] = {NEEDS(0) != 0, NEEDS(1) != 0, NEEDS(2) != 0};
    int training = n->args[5].u.b, rc = -1;
    if (saved_all(n, 6, t) < 0) {
        goto done;
    }
    PtlTensorImpl *x = t[0], *mean = t[4], *invstd = t[5];
    if (gi[0] != NULL) {
        PtlIValue a[10] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(x), ptl_iv_tensor(t[1]),
                           ptl_iv_tensor(t[2]), ptl_iv_tensor(t[3]), ptl_iv_tensor(mean),
                           ptl_iv_tensor(invstd), n->args[5], n->args[7],
                           ptl_iv_intlist(mask, 3)};
        if (call_multi(PTL_OP_native_batch_norm_backward, 10, a, 3, r) < 0) {
            goto done;
        }
    }
    NormDims d = bn_dims(x);
    /* eval's saved statistics are empty and get no gradient */
    PtlTensorImpl *stats[4] = {NULL, NULL, NULL, NULL};
    if (training && (gi[1] != NULL || gi[2] != NULL)) {
        PtlTensorImpl *from[4] = {mean, invstd, gi[1], gi[2]};
        for (int i = 0; i < 4; i++) {
            if (from[i] != NULL && (stats[i] = per_channel(sc, from[i], x)) == NULL) {
                for (int k = 0; k < 3; k++) {
                    PTL_CLEAR(r[k]);
                }
                goto done;
            }
        }
    }
    rc = norm_grad_finish(n, go, sc, &d, x, stats[0], stats[1], stats[2], stats[3], mask, r);
done:
    return release_all(sc, t, 6, rc);
}

/* eval: Note [Batch norm double backward]; out as norm_double_backward's */
static int
bn_eval_double_backward(Scope *sc, const NormDims *d, PtlTensorImpl *g, PtlTensorImpl *x,
                        PtlTensorImpl *mean, PtlTensorImpl *rstd, PtlTensorImpl *w,
                        PtlTensorImpl *ggi, PtlTensorImpl *ggw, PtlTensorImpl *ggb,
                        const int *want, PtlTensorImpl **out)
{
    (void)d;
    out[0] = out[1] = out[2] = NULL;
    if (want[0] && (ggi != NULL || ggw != NULL || ggb != NULL)) {
        PtlTensorImpl *dg = NULL;
        if (ggi != NULL) {
            dg = MUL(ggi, w != NULL ? MUL(w, rstd) : rstd);
        }
        if (ggw != NULL) {
            PtlTensorImpl *t = MUL(MUL(SUB(x, mean), rstd), ggw);
            dg = dg != NULL ? ADD(dg, t) : t;
        }
        if (ggb != NULL) {
            dg = ADD(dg != NULL ? dg : zeros_of(sc, x), ggb);
        }
        if ((out[0] = dg) == NULL) {
            return -1;
        }
    }
    if (want[1] && ggw != NULL && (out[1] = MUL(g, MUL(ggw, rstd))) == NULL) {
        return -1;
    }
    if (want[2] && w != NULL && ggi != NULL && (out[2] = MUL(MUL(ggi, g), rstd)) == NULL) {
        return -1;
    }
    return 0;
}

/* native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean,
 * save_invstd, train, eps, output_mask) -> (gI, gW, gB): Note [Batch norm double
 * backward].  Saved: grad_out, input, weight, running_mean, running_var, save_mean,
 * save_invstd. */
int
native_batch_norm_double_grad(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *t[7] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL}, *out[3];
    Scope scope = {.n = 0}, *sc = &scope;
    int training = n->args[7].u.b, rc = -1;
    if (saved_all(n, 7, t) < 0) {
        goto done;
    }
    PtlTensorImpl *g = t[0], *x = t[1], *w = t[2];
    NormDims d = bn_dims(x);
    PtlTensorImpl *m = per_channel(sc, training ? t[5] : t[3], x);
    PtlTensorImpl *r = training ? t[6]
                                : f1(sc, PTL_OP_rsqrt,
                                     ADD(t[4], num(sc, ptl_iv_to_double(&n->args[8]))));
    r = per_channel(sc, r, x);
    PtlTensorImpl *wc = per_channel(sc, w, x);
    PtlTensorImpl *ggw = per_channel(sc, gi[1], x), *ggb = per_channel(sc, gi[2], x);
    int want[3] = {NEEDS(0) != 0, NEEDS(1) != 0, NEEDS(2) != 0};
    if (m == NULL || r == NULL || (w != NULL && wc == NULL) || (gi[1] != NULL && ggw == NULL) ||
        (gi[2] != NULL && ggb == NULL) ||
        (training ? norm_double_backward : bn_eval_double_backward)(
            sc, &d, g, x, m, r, wc, gi[0], ggw, ggb, want, out) < 0 ||
        (out[0] != NULL && give(n, go, 0, out[0]) < 0) ||
        (out[1] != NULL && give(n, go, 1, out[1]) < 0) ||
        (out[2] != NULL && give(n, go, 2, channel_sum(sc, out[2], x, &d)) < 0)) {
        goto done;
    }
    rc = 0;
done:
    return release_all(sc, t, 7, rc);
}
