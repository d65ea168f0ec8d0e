/* derivatives/linalg_solve.c -- derivative formulas of the LU family of
 * aten/native/linalg_solve.c: _linalg_solve_ex, linalg_inv_ex, _linalg_det, _linalg_slogdet
 * and linalg_solve_triangular.  Mirrors their rows of tools/autograd/derivatives.yaml and
 * linalg_solve_backward, linalg_det_backward, slogdet_backward and
 * linalg_solve_triangular_backward of FunctionsManual.cpp.  The formulas solve and invert
 * through the dispatcher (linalg_solve, linalg_inv, linalg_solve_triangular), so they are
 * differentiable again (the permutation of lu_factor_ex is a constant).  Complex inputs take
 * the same formulas with conjugate transposes (MH) in place of transposes and conjugated
 * factors (Note [Complex autograd] in derivatives/complex.c); their products need complex
 * matmul (gemm).  The
 * determinant's gradient, the cofactor matrix, is det(A) A^-T for an invertible A and goes
 * through the SVD when a matrix of the batch is singular (see linalg_det_backward). */
#include <float.h>
#include <stdlib.h>

#include "../formula.h"

/* Whether linalg.solve took B (input 1) as a vector (PyTorch's linalg_solve_is_vector_rhs) */
static int
vector_rhs(const PtlNode *n)
{
    const PtlInputMeta *a = &n->input_meta[0], *b = &n->input_meta[1];
    return b->dim == 1 || (b->dim == a->dim - 1 &&
                           memcmp(a->sizes, b->sizes, sizeof(int64_t) * (size_t)b->dim) == 0);
}

/* _linalg_solve_ex(A, B, left) -> X with A X = B (left) or X A = B:
 *   gB = A^-H gX (left) or gX A^-H,  gA = -gB X^H (left) or -X^H gB
 * (for a vector B, gA = -gB x^H, an outer product).  Saved: A, result. */
int
linalg_solve_ex_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    int left = n->args[2].u.b, rc = 0;
    if (gi[0] == NULL) {
        return 0;
    }
    PtlTensorImpl *A = sv(sc, n, 0), *X = sv(sc, n, 1);
    PtlTensorImpl *gB = solve(sc, MH(A), gi[0], left);
    if (NEEDS(1)) {
        rc = give(n, go, 1, gB);
    }
    if (rc == 0 && NEEDS(0)) {
        PtlTensorImpl *gA;
        if (vector_rhs(n)) {
            gA = MUL(unsq(sc, gB, -1), unsq(sc, CONJ(X), -2));
        }
        else if (left) {
            gA = f2(sc, PTL_OP_matmul, gB, MH(X));
        }
        else {
            gA = f2(sc, PTL_OP_matmul, MH(X), gB);
        }
        rc = give(n, go, 0, NEG(gA));
    }
    return scope_end(sc, rc);
}

/* linalg_inv_ex(A) -> A^-1:  gA = -A^-H g A^-H.  Saved: inverse. */
int
linalg_inv_ex_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    if (gi[0] == NULL || !NEEDS(0)) {
        return 0;
    }
    PtlTensorImpl *Rt = MH(sv(sc, n, 0));
    PtlTensorImpl *gA = f2(sc, PTL_OP_matmul, f2(sc, PTL_OP_matmul, Rt, gi[0]), Rt);
    return scope_end(sc, give(n, go, 0, NEG(gA)));
}

/* g[..., None, None] * A^-H */
static PtlTensorImpl *
scaled_inverse_t(Scope *sc, PtlTensorImpl *g, PtlTensorImpl *A)
{
    PtlTensorImpl *inv = A ? own(sc, op1(PTL_OP_linalg_inv, A)) : NULL;
    return MUL(unsq(sc, unsq(sc, g, -1), -1), MH(inv));
}

/* out[..., i] = the product of S[..., j] over j != i (k = S's last size >= 1), from the
 * exclusive cumulative products from both ends, so a zero needs no division (PyTorch's
 * prod_safe_zeros_backward). */
static PtlTensorImpl *
products_of_others(Scope *sc, PtlTensorImpl *S, int64_t k)
{
    PtlIValue h[4] = {ptl_iv_tensor(S), ptl_iv_int(-1), ptl_iv_int(0), ptl_iv_int(1)};
    PtlTensorImpl *one = f1(sc, PTL_OP_ones_like, fv(sc, PTL_OP_narrow, 4, h));
    PtlIValue lo[4] = {ptl_iv_tensor(S), ptl_iv_int(-1), ptl_iv_int(0), ptl_iv_int(k - 1)};
    PtlIValue hi[4] = {ptl_iv_tensor(S), ptl_iv_int(-1), ptl_iv_int(1), ptl_iv_int(k - 1)};
    PtlTensorImpl *before[2] = {one, fv(sc, PTL_OP_narrow, 4, lo)};
    PtlTensorImpl *after[2] = {fv(sc, PTL_OP_narrow, 4, hi), one};
    if (before[0] == NULL || before[1] == NULL || after[0] == NULL) {
        return NULL;
    }
    int64_t last = -1;
    PtlIValue cb[2] = {ptl_iv_tensorlist(before, 2), ptl_iv_int(-1)};
    PtlIValue ca[2] = {ptl_iv_tensorlist(after, 2), ptl_iv_int(-1)};
    PtlIValue l[2] = {ptl_iv_tensor(own(sc, callv(PTL_OP_cat, 2, cb))), ptl_iv_int(-1)};
    PtlIValue fa[2] = {ptl_iv_tensor(own(sc, callv(PTL_OP_cat, 2, ca))),
                       ptl_iv_intlist(&last, 1)};
    PtlIValue r[2] = {ptl_iv_tensor(fv(sc, PTL_OP_flip, 2, fa)), ptl_iv_int(-1)};
    PtlIValue fr[2] = {ptl_iv_tensor(fv(sc, PTL_OP_cumprod, 2, r)), ptl_iv_intlist(&last, 1)};
    return MUL(fv(sc, PTL_OP_cumprod, 2, l), fv(sc, PTL_OP_flip, 2, fr));
}

/* g[..., None, None] times the conjugated cofactor matrix of A, through A = U diag(S) Vh:
 * with alpha = det(U) det(Vh) (of modulus 1), det A = alpha prod S, so
 *   gA = U diag(g conj(alpha) prod_{j != i} S_j) Vh,
 * which holds at singular A as well (PyTorch's singular branch). */
static PtlTensorImpl *
scaled_cofactor_by_svd(Scope *sc, PtlTensorImpl *g, PtlTensorImpl *A)
{
    PtlIValue st[4] = {ptl_iv_tensor(A), ptl_iv_bool(0), ptl_iv_bool(1), ptl_iv_none()};
    PtlTensorImpl *usv[3] = {NULL, NULL, NULL};
    if (A == NULL || call_multi(PTL_OP__linalg_svd, 4, st, 3, usv) < 0) {
        return NULL;
    }
    PtlTensorImpl *U = own(sc, usv[0]), *S = own(sc, usv[1]), *Vh = own(sc, usv[2]);
    if (U == NULL || S == NULL || Vh == NULL) {
        return NULL;
    }
    PtlTensorImpl *alpha = MUL(f1(sc, PTL_OP_linalg_det, U), f1(sc, PTL_OP_linalg_det, Vh));
    alpha = CONJ(alpha);
    PtlTensorImpl *D = MUL(unsq(sc, MUL(g, alpha), -1),
                           products_of_others(sc, S, S->sizes[S->dim - 1]));
    return f2(sc, PTL_OP_matmul, MUL(U, unsq(sc, D, -2)), Vh);
}

/* _linalg_det(A) -> det:  gA = g conj(cofactor(A)) = g conj(det) A^-H.  Saved: A, result.
 * A matrix whose |det| is below 100 eps (PyTorch's test) takes the SVD formula and the
 * others the inverse, each computed with identities in the other's places, which a where
 * drops (their NaN second derivatives included).  This is PyTorch's create_graph branch;
 * without create_graph PyTorch solves with a perturbed LU instead, which gives zeros at an
 * exactly singular matrix (docs/decisions.md). */
int
linalg_det_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    if (gi[0] == NULL || !NEEDS(0)) {
        return 0;
    }
    PtlTensorImpl *A = sv(sc, n, 0), *det = sv(sc, n, 1);
    if (A == NULL || det == NULL) {
        return scope_end(sc, -1);
    }
    if (A->numel == 0) {
        return scope_end(sc, give(n, go, 0, zeros_of(sc, A)));
    }
    double eps = ptl_dtype_to_real(A->dtype) == PTL_DTYPE_FLOAT64 ? DBL_EPSILON : FLT_EPSILON;
    PtlTensorImpl *singular = LT(f1(sc, PTL_OP_abs, f1(sc, PTL_OP_detach, det)),
                                 num(sc, 100 * eps));
    PtlTensorImpl *any = f1(sc, PTL_OP_any, singular);
    if (any == NULL) {
        return scope_end(sc, -1);
    }
    PtlTensorImpl *gdet = MUL(gi[0], CONJ(det));
    if (ptl_item_readable(any) && !ptl_item_double(any)) {
        return scope_end(sc, give(n, go, 0, scaled_inverse_t(sc, gdet, A)));
    }
    if (ptl_dtype_is_complex(A->dtype)) {
        /* no complex where: the SVD formula, which holds everywhere, for the whole batch */
        return scope_end(sc, give(n, go, 0, scaled_cofactor_by_svd(sc, gi[0], A)));
    }
    PtlIValue ev[2] = {ptl_iv_int(A->sizes[A->dim - 1]), ptl_iv_dtype(A->dtype)};
    PtlTensorImpl *eye = own(sc, callv(PTL_OP_eye, 2, ev));
    PtlTensorImpl *m = unsq(sc, unsq(sc, singular, -1), -1);
    PtlTensorImpl *by_svd = scaled_cofactor_by_svd(sc, gi[0], WHERE(m, A, eye));
    PtlTensorImpl *by_inverse = scaled_inverse_t(sc, gdet, WHERE(m, eye, A));
    return scope_end(sc, give(n, go, 0, WHERE(m, by_svd, by_inverse)));
}

/* _linalg_slogdet(A) -> (sign, logabsdet):  gA = c A^-H with c = g_logabsdet for a real A
 * (the sign is locally constant) and c = g_logabsdet - i Im(conj(g_sign) sign) for a complex
 * one (sign = det / |det| moves with the phase of det: d sign = i sign Im(tr(A^-1 dA))), as
 * linalg_solve(A^H, diag_embed(c)), whose error at a singular A is the one PyTorch raises
 * there under create_graph (without it PyTorch returns the infs and NaNs of a solve with the
 * singular LU).  Saved: A, sign. */
int
linalg_slogdet_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *A = sv(sc, n, 0), *c = gi[1];
    if (A == NULL) {
        return scope_end(sc, -1);
    }
    int cplx = ptl_dtype_is_complex(A->dtype);
    if ((gi[1] == NULL && !(cplx && gi[0] != NULL)) || !NEEDS(0)) {
        return scope_end(sc, 0);
    }
    if (cplx && gi[0] != NULL) {
        PtlTensorImpl *im = f1(sc, PTL_OP_imag, MUL(CONJ(gi[0]), sv(sc, n, 1)));
        c = f2(sc, PTL_OP_complex, c != NULL ? c : zeros_of(sc, im), NEG(im));
    }
    PtlIValue ev[2] = {ptl_iv_int(A->sizes[A->dim - 1]), ptl_iv_dtype(A->dtype)};
    PtlTensorImpl *eye = own(sc, callv(PTL_OP_eye, 2, ev));
    PtlTensorImpl *d = MUL(unsq(sc, unsq(sc, c, -1), -1), eye);
    return scope_end(sc, give(n, go, 0, solve(sc, MH(A), d, 1)));
}

/* linalg_solve_triangular(A, B, upper, left, unitriangular) -> X:
 *   gB = solve_triangular(A^H, gX, upper=!upper, left, unitriangular)
 *   gA = -gB X^H (left) or -X^H gB, kept to A's triangle (its strict part when unit).
 * Saved: self, result. */
int
linalg_solve_triangular_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    int upper = n->args[2].u.b, left = n->args[3].u.b, unit = n->args[4].u.b, rc = 0;
    if (gi[0] == NULL) {
        return 0;
    }
    PtlTensorImpl *A = sv(sc, n, 0), *X = sv(sc, n, 1);
    PtlIValue v[5] = {ptl_iv_tensor(MH(A)), ptl_iv_tensor(gi[0]),
                      ptl_iv_bool(!upper), ptl_iv_bool(left), ptl_iv_bool(unit)};
    PtlTensorImpl *gB = fv(sc, PTL_OP_linalg_solve_triangular, 5, v);
    if (NEEDS(1)) {
        rc = give(n, go, 1, gB);
    }
    if (rc == 0 && NEEDS(0)) {
        PtlTensorImpl *gA = left ? f2(sc, PTL_OP_matmul, gB, MH(X))
                                 : f2(sc, PTL_OP_matmul, MH(X), gB);
        PtlIValue t[2] = {ptl_iv_tensor(NEG(gA)),
                          ptl_iv_int(upper ? (unit ? 1 : 0) : (unit ? -1 : 0))};
        rc = give(n, go, 0, fv(sc, upper ? PTL_OP_triu : PTL_OP_tril, 2, t));
    }
    return scope_end(sc, rc);
}

/* P (the dtype of like), m x m, from 1-based LAPACK pivots [*, k] (int32, k <= m): the
 * permutation matrix with A = P L U, i.e. the columns of I with the pivots' row swaps
 * applied in order.  A constant without history; new ref or NULL. */
static PtlTensorImpl *
permutation_of(PtlTensorImpl *pivots, int64_t m, PtlTensorImpl *like)
{
    PtlTensorImpl *piv = ptl_contiguous(pivots), *P;
    int64_t k = pivots->sizes[pivots->dim - 1], batch = 1;
    int64_t sz[PTL_MAX_DIMS];
    if (piv == NULL) {
        return NULL;
    }
    for (int d = 0; d < pivots->dim - 1; d++) {
        batch *= pivots->sizes[d];
        sz[d] = pivots->sizes[d];
    }
    sz[pivots->dim - 1] = m;
    sz[pivots->dim] = m;
    P = ptl_empty(pivots->dim + 1, sz, PTL_DTYPE_FLOAT64, like->device);
    int64_t *perm = malloc(sizeof(int64_t) * (size_t)(m + 1));
    if (P == NULL || perm == NULL) {
        free(perm);
        ptl_decref(piv);
        ptl_xdecref(P);
        return P == NULL ? NULL : (ptl_error_set(PTL_ERR_MEMORY, "out of memory"), NULL);
    }
    const int32_t *pv = (const int32_t *)ptl_tensor_data(piv);
    double *pd = (double *)ptl_tensor_data(P);
    memset(pd, 0, sizeof(double) * (size_t)P->numel);
    for (int64_t b = 0; b < batch; b++) {
        /* row i of P^T A is row perm[i] of A; P[perm[i], i] = 1 */
        for (int64_t i = 0; i < m; i++) {
            perm[i] = i;
        }
        for (int64_t i = 0; i < k; i++) {
            int64_t j = pv[b * k + i] - 1, t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        for (int64_t i = 0; i < m; i++) {
            pd[(b * m + perm[i]) * m + i] = 1;
        }
    }
    free(perm);
    ptl_decref(piv);
    if (like->dtype != PTL_DTYPE_FLOAT64) {
        PtlTensorImpl *c = ptl_cast(P, like->dtype);
        ptl_decref(P);
        P = c;
    }
    return P;
}

/* x.tril(d) (id PTL_OP_tril) or x.triu(d) (PTL_OP_triu) */
static PtlTensorImpl *
triangle(Scope *sc, PtlOpId id, PtlTensorImpl *x, int64_t d)
{
    PtlIValue v[2] = {ptl_iv_tensor(x), ptl_iv_int(d)};
    return fv(sc, id, 2, v);
}

/* linalg_solve_triangular(A^H, B, upper=upper, left=left, unitriangular=unit) */
static PtlTensorImpl *
solve_transposed(Scope *sc, PtlTensorImpl *A, PtlTensorImpl *B, int upper, int left,
                 int unit)
{
    PtlIValue v[5] = {ptl_iv_tensor(MH(A)), ptl_iv_tensor(B),
                      ptl_iv_bool(upper), ptl_iv_bool(left), ptl_iv_bool(unit)};
    return B ? fv(sc, PTL_OP_linalg_solve_triangular, 5, v) : NULL;
}

/* linalg_lu_factor_ex(A) -> (LU, pivots) with A = P L U, A m x n, k = min(m, n), L m x k
 * unit lower, U k x n upper; gL = gLU[..., :, :k], gU = gLU[..., :k, :].
 *   m <= n (U = [U1 U2], U1 k x k):
 *     X = tril(L^H gL - triu(gU) U^H, -1) U1^-H,  gA = P L^-H [X + triu(gU1), gU2]
 *   m > n (L = [L1; L2], L1 k x k):
 *     Y = L1^-H triu(gU U^H - L^H tril(gL, -1)),  gA = P [Y + tril(gL1, -1); gL2] U^-H
 * (for m = n both read L^-H (tril(L^H gL, -1) + triu(gU U^H)) U^-H; ^H is ^T for real
 * inputs).  Saved: LU, pivots. */
int
linalg_lu_factor_ex_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    if (gi[0] == NULL || !NEEDS(0)) {
        return 0;
    }
    PtlTensorImpl *LU = sv(sc, n, 0), *piv = sv(sc, n, 1), *g = gi[0], *y;
    if (LU == NULL || piv == NULL) {
        return scope_end(sc, -1);
    }
    int64_t m = LU->sizes[LU->dim - 2], nc = LU->sizes[LU->dim - 1], k = m < nc ? m : nc;
    PtlIValue ev[3] = {ptl_iv_int(m), ptl_iv_int(k), ptl_iv_dtype(LU->dtype)};
    PtlTensorImpl *L = ADD(triangle(sc, PTL_OP_tril, block(sc, LU, -1, 0, k), -1),
                           own(sc, callv(PTL_OP_eye_m, 3, ev)));
    PtlTensorImpl *U = triangle(sc, PTL_OP_triu, block(sc, LU, -2, 0, k), 0);
    PtlTensorImpl *gL = block(sc, g, -1, 0, k), *gU = block(sc, g, -2, 0, k);
    if (m <= nc) {
        PtlTensorImpl *phi = SUB(f2(sc, PTL_OP_matmul, MH(L), gL),
                                 f2(sc, PTL_OP_matmul, triangle(sc, PTL_OP_triu, gU, 0),
                                    MH(U)));
        PtlTensorImpl *x = solve_transposed(sc, block(sc, U, -1, 0, k),
                                            triangle(sc, PTL_OP_tril, phi, -1), 0, 0, 0);
        x = ADD(x, triangle(sc, PTL_OP_triu, block(sc, gU, -1, 0, k), 0));
        if (nc > k) {
            x = cat2(sc, x, block(sc, gU, -1, k, nc - k), -1);
        }
        y = solve_transposed(sc, L, x, 1, 1, 1);
    }
    else {
        PtlTensorImpl *phi = SUB(f2(sc, PTL_OP_matmul, gU, MH(U)),
                                 f2(sc, PTL_OP_matmul, MH(L),
                                    triangle(sc, PTL_OP_tril, gL, -1)));
        PtlTensorImpl *x = solve_transposed(sc, block(sc, L, -2, 0, k),
                                            triangle(sc, PTL_OP_triu, phi, 0), 1, 1, 1);
        x = ADD(x, triangle(sc, PTL_OP_tril, block(sc, gL, -2, 0, k), -1));
        x = cat2(sc, x, block(sc, gL, -2, k, m - k), -2);
        y = solve_transposed(sc, U, x, 0, 0, 0);
    }
    PtlTensorImpl *P = own(sc, permutation_of(piv, m, LU));
    return scope_end(sc, give(n, go, 0, f2(sc, PTL_OP_matmul, P, y)));
}
