/* derivatives/linalg_eig.c -- the derivative of _linalg_eig_split (aten/native/linalg_eig.c),
 * the real kernel under linalg.eig and linalg.eigvals.  Mirrors linalg_eig_backward of
 * torch/csrc/autograd/FunctionsManual.cpp, written here from the math.
 *
 * The op returns the eigenvalues L and eigenvectors V as real and imaginary parts, so the
 * node receives the parts of their gradients (complex(re, im)'s backward splits linalg.eig's
 * complex gradients, Note [Complex autograd]) and computes in complex arithmetic held as
 * pairs of real tensors (Cx): every step is a real dispatcher op, so the formula is
 * differentiable again.  With A V = V diag(L), V^H the conjugate transpose,
 *   VhgV = V^H gV,  Im(diag(VhgV)) must be ~0 (else the loss depends on the eigenvectors'
 *                  phases, which eig leaves arbitrary: PyTorch's error),
 *   M    = VhgV - V^H V diag(Re(diag(VhgV))),
 *   E    = conj(L_j) - conj(L_i) off the diagonal, 1 on it,
 *   gA   = V^-H (M / E with diag(gL) on the diagonal) V^H,
 * and a real A gets Re(gA), a complex A (linalg_complex.c's kernel) gA itself.  Repeated
 * eigenvalues make E zero off the diagonal, so the gradient is inf or nan there, as in
 * PyTorch. */
#include "../formula.h"

typedef struct Cx {
    PtlTensorImpl *re, *im;
} Cx;

static Cx
cx_matmul(Scope *sc, Cx a, Cx b)
{
    Cx r = {SUB(MATMUL(a.re, b.re), MATMUL(a.im, b.im)),
            ADD(MATMUL(a.re, b.im), MATMUL(a.im, b.re))};
    return r;
}

/* a^H */
static Cx
cx_adjoint(Scope *sc, Cx a)
{
    Cx r = {MT(a.re), NEG(MT(a.im))};
    return r;
}

/* a / b elementwise */
static Cx
cx_div(Scope *sc, Cx a, Cx b)
{
    PtlTensorImpl *d = ADD(MUL(b.re, b.re), MUL(b.im, b.im));
    Cx r = {DIV(ADD(MUL(a.re, b.re), MUL(a.im, b.im)), d),
            DIV(SUB(MUL(a.im, b.re), MUL(a.re, b.im)), d)};
    return r;
}

/* m^-1 b for complex m [*, n, n], b [*, n, k]: the real system
 * [[Re m, -Im m], [Im m, Re m]] [x_re; x_im] = [Re b; Im b]; x_im only when want_im */
static Cx
cx_solve(Scope *sc, Cx m, Cx b, int64_t n, int want_im)
{
    PtlTensorImpl *big = cat2(sc, cat2(sc, m.re, NEG(m.im), -1), cat2(sc, m.im, m.re, -1), -2);
    PtlTensorImpl *x = solve(sc, big, cat2(sc, b.re, b.im, -2), 1);
    Cx r = {block(sc, x, -2, 0, n), want_im ? block(sc, x, -2, n, n) : NULL};
    return r;
}


/* Saved: values_real, values_imag, vectors_real, vectors_imag (slots 0-3). */
int
linalg_eig_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    int has_gL = gi[0] != NULL || gi[1] != NULL, has_gV = gi[2] != NULL || gi[3] != NULL;
    if (!NEEDS(0) || (!has_gL && !has_gV)) {
        return 0;
    }
    Cx L = {sv(sc, n, 0), sv(sc, n, 1)}, V = {sv(sc, n, 2), sv(sc, n, 3)};
    if (L.re == NULL || L.im == NULL || V.re == NULL || V.im == NULL) {
        return scope_end(sc, -1);
    }
    if (V.re->dim != L.re->dim + 1) {
        ptl_error_set(PTL_ERR_RUNTIME, "linalg_eig_backward: the eigenvectors were not "
                      "computed (compute_v=False), and the gradient needs them");
        return scope_end(sc, -1);
    }
    int64_t dim = L.re->sizes[L.re->dim - 1];
    Cx gL = {gi[0] ? gi[0] : zeros_of(sc, L.re), gi[1] ? gi[1] : zeros_of(sc, L.im)};
    Cx Vh = cx_adjoint(sc, V), inner;
    if (has_gV) {
        Cx gV = {gi[2] ? gi[2] : zeros_of(sc, V.re), gi[3] ? gi[3] : zeros_of(sc, V.im)};
        Cx VhgV = cx_matmul(sc, Vh, gV);
        if (VhgV.im == NULL ||
            check_phase_free(sc, diag_of(sc, VhgV.im), NULL,
                             "linalg_eig_backward: The eigenvectors in the complex case are "
                             "specified up to multiplication by e^{i phi}. The specified loss "
                             "function depends on this quantity, so it is ill-defined.") < 0) {
            return scope_end(sc, -1);
        }
        PtlTensorImpl *d = unsq(sc, diag_of(sc, VhgV.re), -2);
        Cx P = cx_matmul(sc, Vh, (Cx){MUL(V.re, d), MUL(V.im, d)});
        Cx M = {SUB(VhgV.re, P.re), SUB(VhgV.im, P.im)};
        PtlIValue ev[2] = {ptl_iv_int(dim), ptl_iv_dtype(L.re->dtype)};
        PtlTensorImpl *eye = own(sc, callv(PTL_OP_eye, 2, ev));
        Cx E = {ADD(SUB(unsq(sc, L.re, -2), unsq(sc, L.re, -1)), eye),
                SUB(unsq(sc, L.im, -1), unsq(sc, L.im, -2))};
        inner = cx_div(sc, M, E);
        if (has_gL) {
            PtlTensorImpl *off = RSUBN(1.0, eye);
            inner.re = ADD(MUL(inner.re, off), f1(sc, PTL_OP_diag_embed, gL.re));
            inner.im = ADD(MUL(inner.im, off), f1(sc, PTL_OP_diag_embed, gL.im));
        }
    }
    else {
        inner = (Cx){f1(sc, PTL_OP_diag_embed, gL.re), f1(sc, PTL_OP_diag_embed, gL.im)};
    }
    int cplx = ptl_dtype_is_complex(n->input_meta[0].dtype);
    Cx gA = cx_solve(sc, Vh, cx_matmul(sc, inner, Vh), dim, cplx);
    return scope_end(sc, give(n, go, 0, cplx ? f2(sc, PTL_OP_complex, gA.re, gA.im) : gA.re));
}
