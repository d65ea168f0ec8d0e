/* derivatives/svd.c -- the derivative of _linalg_svd (aten/native/svd.c).
 * Mirrors svd_backward of torch/csrc/autograd/FunctionsManual.cpp.
 *
 * The node saves A, not its factors (a node saves at most outputs 0 and 1): the formula
 * recomputes U, S, Vh = _linalg_svd(A, full_matrices=False) through the dispatcher.  The
 * computation is deterministic, so the factors equal the forward's (the signs of the
 * singular vectors included), and with create_graph they carry A's history, so the formula
 * is differentiable again (double backward of svdvals).  A forward with full_matrices=True
 * gets the gradients of the first k columns of U and rows of Vh only, as in PyTorch. */
#include "../formula.h"

/* The first len entries of x along dim. */
static PtlTensorImpl *
head(Scope *sc, PtlTensorImpl *x, int64_t dim, int64_t len)
{
    PtlIValue v[4] = {ptl_iv_tensor(x), ptl_iv_int(dim), ptl_iv_int(0), ptl_iv_int(len)};
    return fv(sc, PTL_OP_narrow, 4, v);
}

/* x - x^H */
static PtlTensorImpl *
skew(Scope *sc, PtlTensorImpl *x)
{
    PtlTensorImpl *xt = x ? MH(x) : NULL;
    return xt ? f2(sc, PTL_OP_sub_Tensor, x, xt) : NULL;
}

/* a + b where either may be NULL (zero); the scope owns b already. */
static PtlTensorImpl *
add_opt(Scope *sc, PtlTensorImpl *a, PtlTensorImpl *b)
{
    return a == NULL ? b : f2(sc, PTL_OP_add_Tensor, a, b);
}

/* inner with its diagonal replaced by i Im(diag(U^H gU) - diag(V^H gV)) / (2 S) (a term
 * whose gradient is undefined drops out), for a complex A (linalg_svd_backward); NULL with
 * PyTorch's error when Im(diag(U^H gU) + diag(V^H gV)) is not 0 (a loss that depends on the
 * singular vectors' phases). */
static PtlTensorImpl *
complex_phase_diagonal(Scope *sc, PtlTensorImpl *inner, PtlTensorImpl *U, PtlTensorImpl *gU,
                       PtlTensorImpl *Vh, PtlTensorImpl *gVh, PtlTensorImpl *S)
{
    PtlTensorImpl *im = NULL, *u = NULL, *v = NULL;
    if (gU != NULL) {
        im = u = f1(sc, PTL_OP_imag, diag_of(sc, MATMUL(MH(U), gU)));
    }
    if (gVh != NULL) {
        /* diag(V^H gV) = conj(diag(gVh V)) */
        v = NEG(f1(sc, PTL_OP_imag, diag_of(sc, MATMUL(gVh, MH(Vh)))));
        im = im != NULL ? SUB(im, v) : NEG(v);
    }
    if (check_phase_free(sc, u != NULL ? u : v, u != NULL ? v : NULL,
                         "svd_backward: The singular vectors in the complex case are specified "
                         "up to multiplication by e^{i phi}. The specified loss function "
                         "depends on this phase term, making it ill-defined.") < 0) {
        return NULL;
    }
    PtlTensorImpl *d = DIV(im, MULN(S, 2.0));
    d = f2(sc, PTL_OP_complex, zeros_of(sc, d), d);
    inner = SUB(inner, f1(sc, PTL_OP_diag_embed, diag_of(sc, inner)));
    return ADD(inner, f1(sc, PTL_OP_diag_embed, d));
}

/* With A = U S Vh (k = len S), gV = gVh^H, J = skew(U^H gU), K = skew(V^H gV) and
 * E[i, j] = S[j]^2 - S[i]^2 (1 on the diagonal):
 *   gA = U ((J S + S K) / E + diag(gS)) Vh
 *        + (I - U U^H) gU S^-1 Vh         (m > k)
 *        + U S^-1 gVh (I - V Vh)          (n > k)
 * where the terms of undefined gradients drop out.  For a complex A, (J S + S K) / E's
 * diagonal (2i S Im(diag(U^H gU) + diag(V^H gV)), zero for a loss that does not depend on
 * the vectors' common phases, which PyTorch's check demands) becomes i Im(diag(U^H gU) -
 * diag(V^H gV)) / (2 S), the phase term of PyTorch's formula. */
int
linalg_svd_backward(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out)
{
    PtlTensorImpl *gU = grads_in[0], *gS = grads_in[1], *gVh = grads_in[2];
    PtlTensorImpl *A = NULL, *U, *S, *Vh, *gA = NULL;
    Scope scope = {0}, *sc = &scope;
    int rc = -1;

    if (!NEEDS(0) || (gU == NULL && gS == NULL && gVh == NULL)) {
        return 0;
    }
    if (saved(n, 0, &A) < 0) {
        return -1;
    }
    PtlIValue st[4] = {ptl_iv_tensor(A), ptl_iv_bool(0), ptl_iv_bool(1), ptl_iv_none()};
    PtlTensorImpl *usv[3];
    if (call_multi(PTL_OP__linalg_svd, 4, st, 3, usv) < 0) {
        goto error;
    }
    U = own(sc, usv[0]);
    S = own(sc, usv[1]);
    Vh = own(sc, usv[2]);
    if (U == NULL || S == NULL || Vh == NULL) {
        goto error;
    }
    int64_t m = U->sizes[U->dim - 2], k = S->sizes[S->dim - 1], nn = Vh->sizes[Vh->dim - 1];
    if (gU != NULL && gU->sizes[gU->dim - 1] != k && (gU = head(sc, gU, -1, k)) == NULL) {
        goto error;
    }
    if (gVh != NULL && gVh->sizes[gVh->dim - 2] != k &&
        (gVh = head(sc, gVh, -2, k)) == NULL) {
        goto error;
    }
    PtlTensorImpl *Srow = unsq(sc, S, -2), *Scol = unsq(sc, S, -1), *inner = NULL;
    if (Srow == NULL || Scol == NULL) {
        goto error;
    }
    if (gU != NULL || gVh != NULL) {
        PtlTensorImpl *num = NULL, *Ut, *S2, *E, *eye, *x;
        if (gU != NULL) {
            if ((Ut = MH(U)) == NULL || (x = f2(sc, PTL_OP_matmul, Ut, gU)) == NULL ||
                (x = skew(sc, x)) == NULL ||
                (num = f2(sc, PTL_OP_mul_Tensor, x, Srow)) == NULL) {
                goto error;
            }
        }
        if (gVh != NULL) {
            PtlTensorImpl *gV;
            if ((gV = MH(gVh)) == NULL ||
                (x = f2(sc, PTL_OP_matmul, Vh, gV)) == NULL || (x = skew(sc, x)) == NULL ||
                (x = f2(sc, PTL_OP_mul_Tensor, Scol, x)) == NULL ||
                (num = add_opt(sc, num, x)) == NULL) {
                goto error;
            }
        }
        PtlIValue ev[2] = {ptl_iv_int(k), ptl_iv_dtype(S->dtype)};
        if ((S2 = f2(sc, PTL_OP_mul_Tensor, S, S)) == NULL ||
            (x = unsq(sc, S2, -2)) == NULL || (E = unsq(sc, S2, -1)) == NULL ||
            (E = f2(sc, PTL_OP_sub_Tensor, x, E)) == NULL ||
            (eye = own(sc, callv(PTL_OP_eye, 2, ev))) == NULL ||
            (E = f2(sc, PTL_OP_add_Tensor, E, eye)) == NULL ||
            (inner = f2(sc, PTL_OP_div_Tensor, num, E)) == NULL) {
            goto error;
        }
        if (ptl_dtype_is_complex(inner->dtype) &&
            (inner = complex_phase_diagonal(sc, inner, U, gU, Vh, gVh, S)) == NULL) {
            goto error;
        }
    }
    if (gS != NULL) {
        PtlTensorImpl *d = own(sc, op1(PTL_OP_diag_embed, gS));
        if (d == NULL || (inner = add_opt(sc, inner, d)) == NULL) {
            goto error;
        }
    }
    if (ptl_dtype_is_complex(U->dtype) && !ptl_dtype_is_complex(inner->dtype) &&
        (inner = f2(sc, PTL_OP_complex, inner, zeros_of(sc, inner))) == NULL) {
        goto error;   /* mm takes one dtype: diag(gS) alone is real */
    }
    if ((gA = f2(sc, PTL_OP_matmul, U, inner)) == NULL ||
        (gA = f2(sc, PTL_OP_matmul, gA, Vh)) == NULL) {
        goto error;
    }
    if (m > k && gU != NULL) {
        /* (I - U U^T) gU S^-1 Vh */
        PtlTensorImpl *y, *z;
        if ((y = f2(sc, PTL_OP_div_Tensor, gU, Srow)) == NULL ||
            (z = MH(U)) == NULL || (z = f2(sc, PTL_OP_matmul, z, y)) == NULL ||
            (z = f2(sc, PTL_OP_matmul, U, z)) == NULL ||
            (y = f2(sc, PTL_OP_sub_Tensor, y, z)) == NULL ||
            (y = f2(sc, PTL_OP_matmul, y, Vh)) == NULL ||
            (gA = f2(sc, PTL_OP_add_Tensor, gA, y)) == NULL) {
            goto error;
        }
    }
    if (nn > k && gVh != NULL) {
        /* U S^-1 gVh (I - V Vh) */
        PtlTensorImpl *y, *z;
        if ((y = f2(sc, PTL_OP_div_Tensor, gVh, Scol)) == NULL ||
            (z = MH(Vh)) == NULL || (z = f2(sc, PTL_OP_matmul, y, z)) == NULL ||
            (z = f2(sc, PTL_OP_matmul, z, Vh)) == NULL ||
            (y = f2(sc, PTL_OP_sub_Tensor, y, z)) == NULL ||
            (y = f2(sc, PTL_OP_matmul, U, y)) == NULL ||
            (gA = f2(sc, PTL_OP_add_Tensor, gA, y)) == NULL) {
            goto error;
        }
    }
    rc = put_same(n, grads_out, 0, gA);
error:
    ptl_xdecref(A);
    return scope_end(sc, rc);
}
