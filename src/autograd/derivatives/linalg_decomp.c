/* derivatives/linalg_decomp.c -- derivative formulas of the factorisations of
 * aten/native/linalg_decomp.c: linalg_cholesky_ex, linalg_qr and _linalg_eigh.  Mirrors
 * their rows of tools/autograd/derivatives.yaml and cholesky_backward, linalg_qr_backward
 * and linalg_eig_backward (hermitian case) of FunctionsManual.cpp.  The formulas solve
 * through linalg_solve_triangular, so they are differentiable again.  Complex inputs take
 * them with conjugate transposes (MH, the transpose for a real input); their products need
 * complex matmul. */
#include "../formula.h"

/* linalg_solve_triangular(A, B, upper=upper, left=left) */
static PtlTensorImpl *
tri_solve(Scope *sc, PtlTensorImpl *A, PtlTensorImpl *B, int upper, int left)
{
    PtlIValue v[5] = {ptl_iv_tensor(A), ptl_iv_tensor(B), ptl_iv_bool(upper), ptl_iv_bool(left),
                      ptl_iv_bool(0)};
    return A && B ? fv(sc, PTL_OP_linalg_solve_triangular, 5, v) : NULL;
}

/* tril(x, k) */
static PtlTensorImpl *
tril(Scope *sc, PtlTensorImpl *x, int64_t k)
{
    PtlIValue v[2] = {ptl_iv_tensor(x), ptl_iv_int(k)};
    return fv(sc, PTL_OP_tril, 2, v);
}

/* x[..., start:start + len] along dim */
static PtlTensorImpl *
slice(Scope *sc, PtlTensorImpl *x, int64_t dim, int64_t start, int64_t len)
{
    PtlIValue v[4] = {ptl_iv_tensor(x), ptl_iv_int(dim), ptl_iv_int(start), ptl_iv_int(len)};
    return x ? fv(sc, PTL_OP_narrow, 4, v) : NULL;
}


/* linalg_cholesky_ex(A, upper) -> L with A = L L^H (upper: U^H U, L = U^H):
 *   M = tril(L^H gL),  Phi = (M + tril(M, -1)^H) / 2,  gA = L^-H Phi L^-1
 * (Phi is Hermitian but for its diagonal, diag(M) / 2).  A real A's gradient is symmetric; a
 * complex A's diagonal keeps the imaginary part of diag(M) / 2, as PyTorch's: the gradient is
 * not projected on Hermitian matrices, which only a loss of a Hermitian leaf itself would
 * see (an A built as X X^H projects it through its own backward).  Saved: L. */
int
linalg_cholesky_ex_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    int upper = n->args[1].u.b;
    if (gi[0] == NULL || !NEEDS(0)) {
        return 0;
    }
    PtlTensorImpl *L = sv(sc, n, 0), *gL = gi[0];
    if (upper) {
        L = MH(L);
        gL = MH(gL);
    }
    PtlTensorImpl *m = tril(sc, MATMUL(MH(L), gL), 0);
    PtlTensorImpl *phi = MULN(ADD(m, MH(tril(sc, m, -1))), 0.5);
    return scope_end(sc, give(n, go, 0, tri_solve(sc, L, tri_solve(sc, MH(L), phi, 1, 1), 0, 0)));
}

/* a + b where either may be NULL (zero) */
static PtlTensorImpl *
add_opt(Scope *sc, PtlTensorImpl *a, PtlTensorImpl *b)
{
    return a == NULL ? b : b == NULL ? a : ADD(a, b);
}

/* The gradient of A = Q R for m >= n (Q m x n, R n x n), gQ or gR possibly NULL:
 *   M = R gR^H - gQ^H Q,  gA = (gQ + Q copyltu(M)) R^-H
 * where copyltu(M) = tril(M) + tril(M, -1)^H; for a complex A (R's diagonal real) its
 * diagonal is Re(diag(M)), i.e. tril(M, -1) + tril(M, -1)^H + diag(Re diag(M)). */
static PtlTensorImpl *
qr_tall_backward(Scope *sc, PtlTensorImpl *Q, PtlTensorImpl *R, PtlTensorImpl *gQ,
                 PtlTensorImpl *gR)
{
    PtlTensorImpl *M = gR != NULL ? MATMUL(R, MH(gR)) : NULL;
    if (gQ != NULL) {
        PtlTensorImpl *t = MATMUL(MH(gQ), Q);
        M = M != NULL ? SUB(M, t) : NEG(t);
    }
    PtlTensorImpl *sym;
    if (M != NULL && ptl_dtype_is_complex(M->dtype)) {
        PtlTensorImpl *low = tril(sc, M, -1);
        sym = ADD(ADD(low, MH(low)),
                  f1(sc, PTL_OP_diag_embed, f1(sc, PTL_OP_real, diag_of(sc, M))));
    }
    else {
        sym = ADD(tril(sc, M, 0), MT(tril(sc, M, -1)));
    }
    PtlTensorImpl *b = add_opt(sc, gQ, MATMUL(Q, sym));
    return tri_solve(sc, MH(R), b, 0, 0);
}

/* linalg_qr(A, mode) -> (Q, R).  m >= n: qr_tall_backward.  m < n: A = [X | Y] with X = Q U
 * square and Y = Q V (R = [U | V]): gY = Q gV and gX is the square case with gQ + Y gV^T
 * for gQ.  Not differentiable with mode 'r' (no Q) nor 'complete' with m > n, as in
 * PyTorch.  Saved: Q, R. */
int
linalg_qr_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    const char *mode = n->args[1].u.s;
    PtlTensorImpl *gQ = gi[0], *gR = gi[1];
    if ((gQ == NULL && gR == NULL) || !NEEDS(0)) {
        return 0;
    }
    if (strcmp(mode, "r") == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "The derivative of linalg.qr depends on Q, which "
                             "is not computed when mode='r'. Please use linalg.qr(A, "
                             "mode='reduced') if you are going to differentiate through "
                             "linalg.qr.");
    }
    PtlTensorImpl *Q = sv(sc, n, 0), *R = sv(sc, n, 1), *gA;
    if (Q == NULL || R == NULL) {
        return scope_end(sc, -1);
    }
    int64_t m = Q->sizes[Q->dim - 2], nc = R->sizes[R->dim - 1];
    if (strcmp(mode, "complete") == 0 && m > nc) {
        return scope_end(sc, ptl_error_set(PTL_ERR_RUNTIME, "The QR decomposition is not "
                                           "differentiable when mode='complete' and nrows > "
                                           "ncols."));
    }
    if (m >= nc) {
        gA = qr_tall_backward(sc, Q, R, gQ, gR);
    }
    else {
        PtlTensorImpl *U = slice(sc, R, -1, 0, m), *V = slice(sc, R, -1, m, nc - m);
        PtlTensorImpl *gU = slice(sc, gR, -1, 0, m), *gV = slice(sc, gR, -1, m, nc - m);
        PtlTensorImpl *gY = gV != NULL ? MATMUL(Q, gV) : zeros_of(sc, MATMUL(Q, V));
        if (gV != NULL) {
            gQ = add_opt(sc, gQ, MATMUL(MATMUL(Q, V), MH(gV)));
        }
        PtlTensorImpl *parts[2] = {qr_tall_backward(sc, Q, U, gQ, gU), gY};
        PtlIValue v[2] = {ptl_iv_tensorlist(parts, 2), ptl_iv_int(-1)};
        gA = parts[0] && parts[1] ? own(sc, callv(PTL_OP_cat, 2, v)) : NULL;
    }
    return scope_end(sc, give(n, go, 0, gA));
}

/* _linalg_eigh(A) -> (L, V) with A = V diag(L) V^H:
 *   gA = V (skew(V^H gV) / E + diag(gL)) V^H,  skew(K) = (K - K^H) / 2,
 * E[i, j] = L[j] - L[i] (1 on the diagonal).  skew(K)'s diagonal is 0 for a real A; for a
 * complex one it is i Im(K_ii), which a loss that does not depend on the eigenvectors'
 * phases leaves 0 (PyTorch's check: an error when Im(diag(V^H gV)) is not), and gL replaces
 * it when given (PyTorch's linalg_eig_backward).  Saved: eigenvalues, eigenvectors. */
int
linalg_eigh_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *gL = gi[0], *gV = gi[1], *inner = NULL;
    if ((gL == NULL && gV == NULL) || !NEEDS(0)) {
        return 0;
    }
    PtlTensorImpl *L = sv(sc, n, 0), *V = sv(sc, n, 1);
    if (L == NULL || V == NULL) {
        return scope_end(sc, -1);
    }
    if (gV != NULL) {
        PtlTensorImpl *K = MATMUL(MH(V), gV);
        if (K != NULL && ptl_dtype_is_complex(K->dtype) &&
            check_phase_free(sc, f1(sc, PTL_OP_imag, diag_of(sc, K)), NULL,
                             "linalg_eigh_backward: The eigenvectors in the complex case are "
                             "specified up to multiplication by e^{i phi}. The specified loss "
                             "function depends on this quantity, so it is ill-defined.") < 0) {
            return scope_end(sc, -1);
        }
        K = MULN(SUB(K, MH(K)), 0.5);
        PtlIValue ev[2] = {ptl_iv_int(L->sizes[L->dim - 1]), ptl_iv_dtype(L->dtype)};
        PtlTensorImpl *E = SUB(unsq(sc, L, -2), unsq(sc, L, -1));
        E = ADD(E, own(sc, callv(PTL_OP_eye, 2, ev)));
        inner = DIV(K, E);
        if (gL != NULL && K != NULL && ptl_dtype_is_complex(K->dtype)) {
            inner = SUB(inner, f1(sc, PTL_OP_diag_embed, diag_of(sc, inner)));
        }
    }
    if (gL != NULL) {
        inner = add_opt(sc, inner, f1(sc, PTL_OP_diag_embed, gL));
    }
    if (inner != NULL && ptl_dtype_is_complex(V->dtype) && !ptl_dtype_is_complex(inner->dtype)) {
        inner = f2(sc, PTL_OP_complex, inner, zeros_of(sc, inner));   /* mm takes one dtype */
    }
    return scope_end(sc, give(n, go, 0, MATMUL(MATMUL(V, inner), MH(V))));
}
