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

/* native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
 * eps) -> (out, save_mean, save_invstd): the out gradient goes to
 * native_batch_norm_backward; in training, gradients of save_mean and save_invstd add
 * gmean / M - ginvstd invstd^3 (x - mean) / M to the input's. */
int
native_batch_norm_grad(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *x = NULL, *w = NULL, *rm = NULL, *rv = NULL, *mean = NULL, *invstd = NULL;
    PtlTensorImpl *r[3] = {NULL, NULL, NULL};
    Scope scope = {.n = 0}, *sc = &scope;
    int64_t mask[3] = {NEEDS(0) != 0, NEEDS(1) != 0, NEEDS(2) != 0};
    int training = n->args[5].u.b, rc = -1;
    if (saved(n, 0, &x) < 0 || saved(n, 1, &w) < 0 || saved(n, 2, &rm) < 0 ||
        saved(n, 3, &rv) < 0 || saved(n, 4, &mean) < 0 || saved(n, 5, &invstd) < 0) {
        goto done;
    }
    if (gi[0] != NULL) {
        PtlIValue a[10] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(x), ptl_iv_tensor(w),
                           ptl_iv_tensor(rm), ptl_iv_tensor(rv), ptl_iv_tensor(mean),
                           ptl_iv_tensor(invstd), n->args[5], n->args[7],
                           ptl_iv_intlist(mask, 3)};
        if (call_multi(PTL_OP_native_batch_norm_backward, 10, a, 3, r) < 0) {
            goto done;
        }
    }
    if (training && mask[0] && (gi[1] != NULL || gi[2] != NULL)) {
        NormDims d = bn_dims(x);
        PtlTensorImpl *extra = scaled(sc, per_channel(sc, gi[1], x), 1.0 / d.count);
        if (gi[2] != NULL) {
            PtlTensorImpl *is = per_channel(sc, invstd, x);
            PtlTensorImpl *coef = scaled(sc, MUL(per_channel(sc, gi[2], x), MUL(MUL(is, is), is)),
                                         -1.0 / d.count);
            PtlTensorImpl *t = MUL(SUB(x, per_channel(sc, mean, x)), coef);
            extra = extra != NULL ? ADD(extra, t) : t;
        }
        PtlTensorImpl *sum = ADD(r[0] != NULL ? r[0] : zeros_of(sc, x), extra);
        if (sum == NULL) {
            goto done;
        }
        ptl_incref(sum);
        ptl_xdecref(r[0]);
        r[0] = sum;
    }
    rc = 0;
    for (int i = 0; i < 3; i++) {
        if (r[i] != NULL && mask[i] && put(n, go, i, r[i]) < 0) {
            rc = -1;
        }
        else if (r[i] != NULL && !mask[i]) {
            ptl_decref(r[i]);
        }
        r[i] = NULL;
    }
done:
    for (int i = 0; i < 3; i++) {
        ptl_xdecref(r[i]);
    }
    ptl_xdecref(x);
    ptl_xdecref(w);
    ptl_xdecref(rm);
    ptl_xdecref(rv);
    ptl_xdecref(mean);
    ptl_xdecref(invstd);
    return scope_end(sc, rc);
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
 * backward]. */
int
native_batch_norm_double_grad(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *g = NULL, *x = NULL, *w = NULL, *rm = NULL, *rv = NULL, *mean = NULL;
    PtlTensorImpl *invstd = NULL, *out[3];
    Scope scope = {.n = 0}, *sc = &scope;
    int training = n->args[7].u.b, rc = -1;
    if (saved(n, 0, &g) < 0 || saved(n, 1, &x) < 0 || saved(n, 2, &w) < 0 ||
        saved(n, 3, &rm) < 0 || saved(n, 4, &rv) < 0 || saved(n, 5, &mean) < 0 ||
        saved(n, 6, &invstd) < 0) {
        goto done;
    }
    NormDims d = bn_dims(x);
    PtlTensorImpl *m = per_channel(sc, training ? mean : rm, x);
    PtlTensorImpl *r = training ? invstd
                                : f1(sc, PTL_OP_rsqrt,
                                     ADD(rv, num(sc, ptl_iv_to_double(&n->args[8]))));
    r = per_channel(sc, r, x);
    PtlTensorImpl *wc = per_channel(sc, w, x);
    int want[3] = {NEEDS(0) != 0, NEEDS(1) != 0, NEEDS(2) != 0};
    if (m == NULL || r == NULL || (w != NULL && wc == NULL) ||
        (training ? norm_double_backward : bn_eval_double_backward)(
            sc, &d, g, x, m, r, wc, gi[0], per_channel(sc, gi[1], x), per_channel(sc, gi[2], x),
            want, out) < 0 ||
        (out[0] != NULL && give(n, go, 0, out[0]) < 0) ||
        (out[1] != NULL && give(n, go, 1, out[1]) < 0) ||
        (out[2] != NULL && give(n, go, 2, channel_sum(sc, out[2], x, &d)) < 0)) {
        goto done;
    }
    rc = 0;
done:
    ptl_xdecref(g);
    ptl_xdecref(x);
    ptl_xdecref(w);
    ptl_xdecref(rm);
    ptl_xdecref(rv);
    ptl_xdecref(mean);
    ptl_xdecref(invstd);
    return scope_end(sc, rc);
}
