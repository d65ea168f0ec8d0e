/* derivatives/layer_norm.c -- derivative formulas of native_layer_norm and
 * native_layer_norm_backward (aten/native/layer_norm.c).  Mirrors the
 * native_layer_norm and native_layer_norm_backward entries of
 * tools/autograd/derivatives.yaml and layer_norm_double_backward in FunctionsManual.cpp.
 *
 * Note [Layer norm double backward]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Per row of N normalized elements, with r = rstd, xhat = (x - mean) r, w the weight (1 when
 * None) and Pi(c) = c - mean(c) - xhat mean(c xhat) (means over the row), the backward is
 * gI = r Pi(g w), gW = sum over rows of g xhat, gB = sum over rows of g.  Its derivative
 * along incoming gradients (ggI, ggW, ggB) is, with a = g w, A = sum(a (ggI - mean(ggI))),
 * P = sum(a xhat), Q = mean(xhat ggI):
 *
 *     d/dg = r Pi(ggI) w + xhat ggW + ggB
 *     d/dw = sum over rows of g r Pi(ggI)
 *     d/dx = r Pi(g ggW) - r^2 ((A - P Q) / N xhat + Q Pi(a) + P / N Pi(ggI))
 *
 * d/dx already holds the paths through mean(x) and rstd(x), so the saved mean and rstd
 * inputs get no gradient (as in PyTorch).  Every step is a dispatcher op, so the result is
 * differentiable again.
 *
 * Edges: native_layer_norm: input 0, weight 1, bias 2;
 *        native_layer_norm_backward: grad_out 0, input 1, mean 2, rstd 3, weight 4, bias 5. */
#include "../formula.h"

/* the normalized dims [dim - k, dim) of x */
static NormDims
ln_dims(PtlTensorImpl *x, const PtlIValue *normalized_shape)
{
    NormDims d;
    d.k = (int)normalized_shape->u.il.n;
    d.count = 1;
    for (int i = 0; i < d.k; i++) {
        d.dims[i] = x->dim - d.k + i;
        d.count *= (double)x->sizes[x->dim - d.k + i];
    }
    return d;
}

/* Pi(c) = c - mean(c) - xhat mean(c xhat) */
static PtlTensorImpl *
proj(Scope *sc, PtlTensorImpl *c, PtlTensorImpl *xhat, const NormDims *d)
{
    return SUB(SUB(c, norm_mean(sc, c, d)), MUL(xhat, norm_mean(sc, MUL(c, xhat), d)));
}

int
norm_grad_finish(PtlNode *n, PtlTensorImpl **go, Scope *sc, const NormDims *d,
                 PtlTensorImpl *x, PtlTensorImpl *mean, PtlTensorImpl *rstd,
                 PtlTensorImpl *gmean, PtlTensorImpl *grstd, const int64_t *mask,
                 PtlTensorImpl **r)
{
    int rc = 0;
    if (mask[0] && (gmean != NULL || grstd != NULL)) {
        PtlTensorImpl *extra = gmean != NULL ? scaled(sc, gmean, 1.0 / d->count) : NULL;
        if (grstd != NULL) {
            PtlTensorImpl *coef = scaled(sc, MUL(grstd, MUL(MUL(rstd, rstd), rstd)),
                                         -1.0 / d->count);
            PtlTensorImpl *t = MUL(SUB(x, mean), coef);
            extra = extra != NULL ? ADD(extra, t) : t;
        }
        /* broadcast against x (gmean alone has the statistics' shape) */
        PtlTensorImpl *sum = ADD(r[0] != NULL ? r[0] : zeros_of(sc, x), extra);
        if (sum != NULL) {
            ptl_incref(sum);
        }
        ptl_xdecref(r[0]);
        if ((r[0] = sum) == NULL) {
            rc = -1;
        }
    }
    for (int i = 0; i < 3; i++) {
        if (rc == 0 && r[i] != NULL && mask[i]) {
            rc = put(n, go, i, r[i]);   /* consumes r[i] */
        }
        else {
            ptl_xdecref(r[i]);
        }
        r[i] = NULL;
    }
    return rc;
}

/* native_layer_norm(input, normalized_shape, weight, bias, eps) -> (out, mean, rstd):
 * the out gradient goes to native_layer_norm_backward; gradients of mean and rstd (rarely
 * used) add to the input's (norm_grad_finish). */
int
native_layer_norm_grad(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *x = NULL, *w = NULL, *b = NULL, *mean = NULL, *rstd = NULL;
    PtlTensorImpl *r[3] = {NULL, NULL, NULL};
    Scope scope = {.n = 0}, *sc = &scope;
    int64_t mask[3] = {NEEDS(0) != 0, NEEDS(1) != 0, NEEDS(2) != 0};
    int rc = -1;
    if (saved(n, 0, &x) < 0 || saved(n, 1, &w) < 0 || saved(n, 2, &b) < 0 ||
        saved(n, 3, &mean) < 0 || saved(n, 4, &rstd) < 0) {
        goto done;
    }
    if (gi[0] != NULL) {
        PtlIValue a[8] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(x), n->args[1],
                          ptl_iv_tensor(mean), ptl_iv_tensor(rstd), ptl_iv_tensor(w),
                          ptl_iv_tensor(b), ptl_iv_intlist(mask, 3)};
        if (call_multi(PTL_OP_native_layer_norm_backward, 8, a, 3, r) < 0) {
            goto done;
        }
    }
    NormDims d = ln_dims(x, &n->args[1]);
    rc = norm_grad_finish(n, go, sc, &d, x, mean, rstd, gi[1], gi[2], mask, r);
done:
    ptl_xdecref(x);
    ptl_xdecref(w);
    ptl_xdecref(b);
    ptl_xdecref(mean);
    ptl_xdecref(rstd);
    return scope_end(sc, rc);
}

int
norm_double_backward(Scope *sc, const NormDims *d, PtlTensorImpl *g, PtlTensorImpl *x,
                     PtlTensorImpl *mean, PtlTensorImpl *rstd, PtlTensorImpl *w,
                     PtlTensorImpl *ggi, PtlTensorImpl *ggw, PtlTensorImpl *ggb,
                     const int *want, PtlTensorImpl **out)
{
    out[0] = out[1] = out[2] = NULL;
    PtlTensorImpl *xhat = MUL(SUB(x, mean), rstd);
    /* r Pi(ggI) */
    PtlTensorImpl *rpi = ggi != NULL ? MUL(rstd, proj(sc, ggi, xhat, d)) : NULL;
    if (xhat == NULL || (ggi != NULL && rpi == NULL)) {
        return -1;
    }
    if (want[0] && (rpi != NULL || ggw != NULL || ggb != NULL)) {
        PtlTensorImpl *dg = NULL;
        if (rpi != NULL) {
            dg = w != NULL ? MUL(rpi, w) : rpi;
        }
        if (ggw != NULL) {
            PtlTensorImpl *t = MUL(xhat, ggw);
            dg = dg != NULL ? ADD(dg, t) : t;
        }
        if (ggb != NULL) {
            /* ggB alone does not have x's shape: broadcast it */
            dg = ADD(dg != NULL ? dg : zeros_of(sc, x), ggb);
        }
        if ((out[0] = dg) == NULL) {
            return -1;
        }
    }
    if (want[1] && (ggw != NULL || ggi != NULL)) {
        PtlTensorImpl *dx = NULL;
        if (ggw != NULL) {
            dx = MUL(rstd, proj(sc, MUL(g, ggw), xhat, d));
        }
        if (ggi != NULL) {
            PtlTensorImpl *a = w != NULL ? MUL(g, w) : g;
            PtlTensorImpl *A = SUB(norm_sum(sc, MUL(a, ggi), d),
                                   MUL(norm_sum(sc, a, d), norm_mean(sc, ggi, d)));
            PtlTensorImpl *P = norm_sum(sc, MUL(a, xhat), d);
            PtlTensorImpl *Q = norm_mean(sc, MUL(xhat, ggi), d);
            PtlTensorImpl *t1 = MUL(scaled(sc, SUB(A, MUL(P, Q)), 1.0 / d->count), xhat);
            PtlTensorImpl *t2 = MUL(Q, proj(sc, a, xhat, d));
            PtlTensorImpl *t3 = MUL(scaled(sc, P, 1.0 / d->count), proj(sc, ggi, xhat, d));
            PtlTensorImpl *t = scaled(sc, MUL(MUL(rstd, rstd), ADD(ADD(t1, t2), t3)), -1.0);
            dx = dx != NULL ? ADD(dx, t) : t;
        }
        if ((out[1] = dx) == NULL) {
            return -1;
        }
    }
    if (want[2] && w != NULL && rpi != NULL && (out[2] = MUL(g, rpi)) == NULL) {
        return -1;
    }
    return 0;
}

/* native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias,
 * output_mask) -> (gI, gW, gB): Note [Layer norm double backward]. */
int
native_layer_norm_double_grad(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *g = NULL, *x = NULL, *mean = NULL, *rstd = NULL, *w = NULL, *out[3];
    Scope scope = {.n = 0}, *sc = &scope;
    int rc = -1;
    if (saved(n, 0, &g) < 0 || saved(n, 1, &x) < 0 || saved(n, 2, &mean) < 0 ||
        saved(n, 3, &rstd) < 0 || saved(n, 4, &w) < 0) {
        goto done;
    }
    NormDims d = ln_dims(x, &n->args[2]);
    int want[3] = {NEEDS(0) != 0, NEEDS(1) != 0, NEEDS(4) != 0};
    if (norm_double_backward(sc, &d, g, x, mean, rstd, w, gi[0], gi[1], gi[2], want, out) < 0 ||
        (out[0] != NULL && give(n, go, 0, out[0]) < 0) ||
        (out[1] != NULL && give(n, go, 1, out[1]) < 0) ||
        (out[2] != NULL && give(n, go, 4, out[2]) < 0)) {
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
