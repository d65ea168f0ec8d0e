/* derivatives_linalg2.c -- derivative formulas of the linalg2 section of derivatives.def.
 * Mirrors the _cdist_forward and renorm entries of tools/autograd/derivatives.yaml and
 * renorm_backward / linalg_vector_norm_backward of FunctionsManual.cpp.  (linalg_vector_norm
 * shares norm's formula in derivatives.c; einsum, tensordot and cdist's matmul path are
 * composite.) */
#include "derivatives_linalg2.h"
#include "formula.h"

#include <math.h>

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

/* ---- renorm ---- */

/* The temporaries of one formula: every helper takes and returns borrowed pointers the
 * pool owns, and returns NULL without calling anything when an argument is NULL. */
#define POOL_MAX 48

typedef struct Pool {
    PtlTensorImpl *t[POOL_MAX];
    int n;
} Pool;

static PtlTensorImpl *
keep(Pool *pl, PtlTensorImpl *t)
{
    if (t == NULL) {
        return NULL;
    }
    if (pl->n == POOL_MAX) {
        ptl_decref(t);
        ptl_error_set(PTL_ERR_RUNTIME, "derivative formula: too many temporaries");
        return NULL;
    }
    return pl->t[pl->n++] = t;
}

static void
pool_end(Pool *pl)
{
    for (int i = 0; i < pl->n; i++) {
        ptl_decref(pl->t[i]);
    }
}

static PtlTensorImpl *
u1(Pool *pl, PtlOpId id, PtlTensorImpl *a)
{
    return a ? keep(pl, op1(id, a)) : NULL;
}

static PtlTensorImpl *
u2(Pool *pl, PtlOpId id, PtlTensorImpl *a, PtlTensorImpl *b)
{
    return a && b ? keep(pl, op2(id, a, b)) : NULL;
}

static PtlTensorImpl *
cst(Pool *pl, double v)
{
    return keep(pl, ptl_wrapped_double(v));
}

static PtlTensorImpl *
where3(Pool *pl, PtlTensorImpl *c, PtlTensorImpl *a, PtlTensorImpl *b)
{
    PtlIValue v[3] = {ptl_iv_tensor(c), ptl_iv_tensor(a), ptl_iv_tensor(b)};
    return c && a && b ? keep(pl, callv(PTL_OP_where_self, 3, v)) : NULL;
}

/* sum of a over dims[0..nd), keepdim */
static PtlTensorImpl *
sum_dims(Pool *pl, PtlTensorImpl *a, const int64_t *dims, int nd)
{
    PtlIValue v[3] = {ptl_iv_tensor(a), ptl_iv_intlist(dims, nd), ptl_iv_bool(1)};
    return a ? keep(pl, callv(PTL_OP_sum_dim_IntList, 3, v)) : NULL;
}

#define P_MUL(A, B) u2(pl, PTL_OP_mul_Tensor, (A), (B))
#define P_DIV(A, B) u2(pl, PTL_OP_div_Tensor, (A), (B))
#define P_SUB(A, B) u2(pl, PTL_OP_sub_Tensor, (A), (B))
#define P_EQ(A, B) u2(pl, PTL_OP_eq_Tensor, (A), (B))
#define P_POW(A, V) u2(pl, PTL_OP_pow_Tensor_Tensor, (A), cst(pl, (V)))

/* d norm / d x times G: the gradient of the p-norm `norm` of x over dims (keepdim), for an
 * incoming gradient G of norm's shape (linalg_vector_norm_backward, p > 0) */
static PtlTensorImpl *
vector_norm_grad(Pool *pl, PtlTensorImpl *G, PtlTensorImpl *x, double p, PtlTensorImpl *norm,
                 const int64_t *dims, int nd)
{
    PtlTensorImpl *zero = cst(pl, 0), *sg = u1(pl, PTL_OP_sign, x), *ax = u1(pl, PTL_OP_abs, x);
    if (p == 1) {
        return P_MUL(sg, G);
    }
    if (p == 2) {
        return P_MUL(x, where3(pl, P_EQ(norm, zero), zero, P_DIV(G, norm)));
    }
    if (isinf(p)) {
        PtlTensorImpl *mask = u2(pl, PTL_OP_logical_or, P_EQ(ax, norm), u1(pl, PTL_OP_isnan, ax));
        PtlTensorImpl *fm = P_MUL(mask, cst(pl, 1));
        return P_MUL(sg, P_MUL(P_DIV(G, sum_dims(pl, fm, dims, nd)), fm));
    }
    if (p < 1) {
        PtlTensorImpl *scaled = where3(pl, P_EQ(x, zero), zero, P_MUL(sg, P_POW(ax, p - 1)));
        return P_MUL(P_MUL(scaled, G), P_POW(norm, 1 - p));
    }
    PtlTensorImpl *scaled = p < 2 ? P_MUL(sg, P_POW(ax, p - 1)) : P_MUL(x, P_POW(ax, p - 2));
    PtlTensorImpl *scale = where3(pl, P_EQ(norm, zero), zero, P_DIV(G, P_POW(norm, p - 1)));
    return P_MUL(scaled, scale);
}

/* renorm(self, p, dim, maxnorm) = self * factor, factor = maxnorm / (norm + 1e-7) where the
 * slice norm exceeds maxnorm (else 1):
 *   grad = where(norm > maxnorm, factor g - factor / (norm + 1e-7) * nb, g)
 * with nb the norm's gradient for the incoming sum(self * g) over the slice.  Saved: self. */
int
renorm_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Pool pool = {{0}, 0}, *pl = &pool;
    PtlTensorImpl *x = NULL, *g = gi[0];
    double p = ptl_iv_to_double(&n->args[1]), maxnorm = ptl_iv_to_double(&n->args[3]);
    int64_t dim = ptl_iv_to_int(&n->args[2]), dims[PTL_MAX_DIMS];
    int nd = 0, rc = -1;

    if (!NEEDS(0)) {
        return 0;
    }
    if (saved(n, 0, &x) < 0 || keep(pl, x) == NULL) {
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
    PtlTensorImpl *norm = keep(pl, callv(PTL_OP_linalg_vector_norm, 4, nv));
    PtlTensorImpl *nb = vector_norm_grad(pl, sum_dims(pl, P_MUL(x, g), dims, nd), x, p, norm,
                                         dims, nd);
    PtlTensorImpl *inv = u1(pl, PTL_OP_reciprocal, u2(pl, PTL_OP_add_Tensor, norm, cst(pl, 1e-7)));
    PtlTensorImpl *factor = P_MUL(inv, cst(pl, maxnorm));
    PtlTensorImpl *res = where3(pl, u2(pl, PTL_OP_gt_Tensor, norm, cst(pl, maxnorm)),
                                P_SUB(P_MUL(factor, g), P_MUL(P_MUL(factor, inv), nb)), g);
    if (res != NULL) {
        ptl_incref(res);
        rc = put(n, go, 0, res);
    }
done:
    pool_end(pl);
    return rc;
}
