/* derivatives/linalg_norm.c -- derivative formulas of _cdist_forward, _pdist_forward and renorm
 * (aten/native/linalg_norm.c).  Mirrors their rows of tools/autograd/derivatives.yaml and
 * renorm_backward / linalg_vector_norm_backward of FunctionsManual.cpp.  linalg_vector_norm
 * shares norm's formula (derivatives/reduce.c); einsum, tensordot and cdist's matmul path
 * are composite. */
#include <math.h>

#include "../formula.h"

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

/* _pdist_forward(self, p) -> dist: self gets _pdist_backward(g, self, p, dist).  Saved: self,
 * dist. */
int
pdist_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *self = NULL, *dist = NULL;
    int rc = -1;

    if (saved(n, 0, &self) < 0 || saved(n, 1, &dist) < 0) {
        goto done;
    }
    if (NEEDS(0)) {
        PtlIValue v[4] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(self), n->args[1],
                          ptl_iv_tensor(dist)};
        if (put(n, go, 0, callv(PTL_OP__pdist_backward, 4, v)) < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    ptl_xdecref(self);
    ptl_xdecref(dist);
    return rc;
}

/* ---- renorm ---- */

/* sum of a over dims[0..nd), keepdim */
static PtlTensorImpl *
sum_dims(Scope *sc, PtlTensorImpl *a, const int64_t *dims, int nd)
{
    PtlIValue v[3] = {ptl_iv_tensor(a), ptl_iv_intlist(dims, nd), ptl_iv_bool(1)};
    return fv(sc, PTL_OP_sum_dim_IntList, 3, v);
}

/* a^v for a number v */
#define POW(A, V) f2(sc, PTL_OP_pow_Tensor_Tensor, (A), num(sc, (V)))

/* d norm / d x times G: the gradient of the p-norm `norm` of x over dims (keepdim), for an
 * incoming gradient G of norm's shape (linalg_vector_norm_backward, p > 0); sgn for sign
 * when x is complex */
static PtlTensorImpl *
vector_norm_grad(Scope *sc, PtlTensorImpl *G, PtlTensorImpl *x, double p, PtlTensorImpl *norm,
                 const int64_t *dims, int nd)
{
    PtlTensorImpl *zero = num(sc, 0), *sg = sign_or_sgn(sc, x), *ax = f1(sc, PTL_OP_abs, x);
    if (p == 1) {
        return MUL(sg, G);
    }
    if (p == 2) {
        return MUL(x, WHERE(EQ(norm, zero), zero, DIV(G, norm)));
    }
    if (isinf(p)) {
        PtlTensorImpl *mask = OR(EQ(ax, norm), f1(sc, PTL_OP_isnan, ax));
        PtlTensorImpl *fm = MUL(mask, num(sc, 1));
        return MUL(sg, MUL(DIV(G, sum_dims(sc, fm, dims, nd)), fm));
    }
    if (p < 1) {
        PtlTensorImpl *scaled = WHERE(EQ(x, zero), zero, MUL(sg, POW(ax, p - 1)));
        return MUL(MUL(scaled, G), POW(norm, 1 - p));
    }
    PtlTensorImpl *scaled = p < 2 ? MUL(sg, POW(ax, p - 1)) : MUL(x, POW(ax, p - 2));
    PtlTensorImpl *scale = WHERE(EQ(norm, zero), zero, DIV(G, POW(norm, p - 1)));
    return MUL(scaled, scale);
}

/* renorm(self, p, dim, maxnorm) = self * factor, factor = maxnorm / (norm + 1e-7) where the
 * slice norm exceeds maxnorm (else 1):
 *   grad = where(norm > maxnorm, factor g - factor / (norm + 1e-7) * nb, g)
 * with nb the norm's gradient for the incoming sum(real(conj(self) g)) over the slice (the
 * real norm's share of a complex g: Note [Complex autograd]).  Saved: self. */
int
renorm_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *x = NULL, *g = gi[0];
    double p = ptl_iv_to_double(&n->args[1]), maxnorm = ptl_iv_to_double(&n->args[3]);
    int64_t dim = ptl_iv_to_int(&n->args[2]), dims[PTL_MAX_DIMS];
    int nd = 0, rc = -1;

    if (!NEEDS(0)) {
        return 0;
    }
    if (saved(n, 0, &x) < 0 || own(sc, x) == NULL) {
        goto done;
    }
    if (dim < 0) {
        dim += x->dim;
    }
    for (int d = 0; d < x->dim; d++) {
        if (d != dim) {
            dims[nd++] = d;
        }
    }
    PtlIValue nv[4] = {ptl_iv_tensor(x), n->args[1], ptl_iv_intlist(dims, nd), ptl_iv_bool(1)};
    PtlTensorImpl *norm = own(sc, callv(PTL_OP_linalg_vector_norm, 4, nv));
    PtlTensorImpl *xg = f1(sc, PTL_OP_real, MUL(CONJ(x), g));
    PtlTensorImpl *nb = vector_norm_grad(sc, sum_dims(sc, xg, dims, nd), x, p, norm, dims, nd);
    PtlTensorImpl *inv = f1(sc, PTL_OP_reciprocal, ADD(norm, num(sc, 1e-7)));
    PtlTensorImpl *factor = MUL(inv, num(sc, maxnorm));
    PtlTensorImpl *res = WHERE(GT(norm, num(sc, maxnorm)),
                               SUB(MUL(factor, g), MUL(MUL(factor, inv), nb)), g);
    rc = give(n, go, 0, res);
done:
    return scope_end(sc, rc);
}
