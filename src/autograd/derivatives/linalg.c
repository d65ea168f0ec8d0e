/* derivatives/linalg.c -- derivative formulas of the matrix products of
 * aten/native/linalg.c (mm, bmm, matmul, dot, vdot, mv, outer, addmm, addmv, baddbmm).
 * Mirrors their rows of tools/autograd/derivatives.yaml and FunctionsManual.cpp. */
#include "../formula.h"

/* Note [Matrix product gradient layout]
 * A gradient of mm/addmm takes the layout of the input it belongs to when that input is
 * column-major (a transposed contiguous matrix, like the weight.t() that nn.Linear hands to
 * addmm): it is computed as the transpose of the product that gives a row-major result,
 * (b g^T)^T for a and (g^T a)^T for b, as FunctionsManual.cpp's mm_mat1_backward and
 * mm_mat2_backward do.  The weight's gradient then arrives contiguous through the
 * transpose's backward, AccumulateGrad stores it without a copy, and the optimizers' fused
 * steps (which take contiguous tensors) apply to it; otherwise every Linear weight's .grad is
 * transposed and the step runs op by op on strided memory.  matmul of two matrices follows
 * the same rule (PyTorch's matmul decomposes into mm); batched products keep the plain ones.
 * Complex operands take PyTorch's conjugates (Note [Complex autograd]): g b^H and a^H g for
 * the products, g conj(b) and g conj(a) for dot and the vector cases of matmul, the
 * conjugate copied by CONJ (a no-op for real tensors). */
static int
is_column_major(const PtlTensorImpl *t)
{
    return t->sparse == NULL && t->dim == 2 && t->sizes[0] > 1 && t->sizes[1] > 1 &&
           t->strides[0] == 1 && t->strides[1] == t->sizes[0];
}

/* a's gradient of the product a b through `mm` (mm, bmm or matmul): g b^H, or (conj(b) g^T)^T
 * for a column-major 2-D a.  Borrowed from the scope; NULL on error. */
static PtlTensorImpl *
product_grad_first(Scope *sc, PtlOpId mm, PtlTensorImpl *g, PtlTensorImpl *a, PtlTensorImpl *b)
{
    if (is_column_major(a) && b->dim == 2 && b->sparse == NULL) {
        return transpose_last(sc, f2(sc, mm, CONJ(b), transpose_last(sc, g)));
    }
    return f2(sc, mm, g, transpose_last(sc, CONJ(b)));
}

/* b's gradient of a b: a^H g, or (g^T conj(a))^T for a column-major 2-D b */
static PtlTensorImpl *
product_grad_second(Scope *sc, PtlOpId mm, PtlTensorImpl *g, PtlTensorImpl *a, PtlTensorImpl *b)
{
    if (is_column_major(b) && a->dim == 2 && a->sparse == NULL) {
        return transpose_last(sc, f2(sc, mm, transpose_last(sc, g), CONJ(a)));
    }
    return f2(sc, mm, transpose_last(sc, CONJ(a)), g);
}

/* bmm(a, b) (and mm): g b^H, a^H g (Note [Matrix product gradient layout]); baddbmm/addmm
 * scale them by alpha and self by beta */
static int
batched_mm_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go, PtlOpId mm, int first,
                    const PtlIValue *alpha)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *g = alpha == NULL ? gi[0] : MULS(gi[0], alpha);   /* g conj(alpha) */
    PtlTensorImpl *a = sv(sc, n, 0), *b = a ? sv(sc, n, 1) : NULL, *ga, *gb;
    int rc = -1;
    if (b == NULL) {
        goto done;
    }
    if (NEEDS(first)) {
        ga = product_grad_first(sc, mm, g, a, b);
        if (give(n, go, first, ga ? own(sc, ptl_grad_mask_like((ptl_incref(ga), ga), a))
                                  : NULL) < 0) {
            goto done;
        }
    }
    if (NEEDS(first + 1)) {
        gb = product_grad_second(sc, mm, g, a, b);
        if (give(n, go, first + 1, gb) < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

int
mm_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return batched_mm_backward(n, gi, go, PTL_OP_mm, 0, NULL);
}

int
bmm_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return batched_mm_backward(n, gi, go, PTL_OP_bmm, 0, NULL);
}

/* self's part of addmm/addmv/baddbmm: g conj(beta) (finish() sums the broadcast) */
static int
beta_part(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    if (!NEEDS(0)) {
        return 0;
    }
    return scope_end(sc, give(n, go, 0, MULS(gi[0], &n->args[3])));
}

int
addmm_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    if (beta_part(n, gi, go) < 0) {
        return -1;
    }
    return batched_mm_backward(n, gi, go, PTL_OP_mm, 1, &n->args[4]);
}

int
baddbmm_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    if (beta_part(n, gi, go) < 0) {
        return -1;
    }
    return batched_mm_backward(n, gi, go, PTL_OP_bmm, 1, &n->args[4]);
}

/* mv(a, v) (and addmv's a, v scaled by alpha): outer(g, conj(v)), a^H g */
static int
mv_part(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go, int first, const PtlIValue *alpha)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *g = alpha == NULL ? gi[0] : MULS(gi[0], alpha);   /* g conj(alpha) */
    int rc = -1;
    if (NEEDS(first) && give(n, go, first, f2(sc, PTL_OP_outer, g, CONJ(sv(sc, n, 1)))) < 0) {
        goto done;
    }
    if (NEEDS(first + 1) &&
        give(n, go, first + 1, f2(sc, PTL_OP_mv, f1(sc, PTL_OP_t, CONJ(sv(sc, n, 0))), g)) < 0) {
        goto done;
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

int
mv_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return mv_part(n, gi, go, 0, NULL);
}

int
addmv_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    if (beta_part(n, gi, go) < 0) {
        return -1;
    }
    return mv_part(n, gi, go, 1, &n->args[4]);
}

/* dot(a, b): g conj(b), g conj(a); vdot(a, b) = dot(conj(a), b): conj(g) b, g a */
int
dot_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    int vdot = n->op->id == PTL_OP_vdot, rc = -1;
    PtlTensorImpl *g = gi[0];
    if (NEEDS(0) &&
        give(n, go, 0, vdot ? MUL(CONJ(g), sv(sc, n, 1)) : MUL(g, CONJ(sv(sc, n, 1)))) < 0) {
        goto done;
    }
    if (NEEDS(1) && give(n, go, 1, MUL(g, vdot ? sv(sc, n, 0) : CONJ(sv(sc, n, 0)))) < 0) {
        goto done;
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

/* outer(a, b): g conj(b), g^T conj(a) */
int
outer_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    int rc = -1;
    if (NEEDS(0) && give(n, go, 0, f2(sc, PTL_OP_mv, gi[0], CONJ(sv(sc, n, 1)))) < 0) {
        goto done;
    }
    if (NEEDS(1) &&
        give(n, go, 1, f2(sc, PTL_OP_mv, f1(sc, PTL_OP_t, gi[0]), CONJ(sv(sc, n, 0)))) < 0) {
        goto done;
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}

/* matmul(a, b) in its four shapes; finish() sums broadcast batch dims back (conj() of a
 * real tensor is the tensor):
 *   1-D . 1-D: g conj(b), g conj(a)
 *   N-D @ 1-D: g[..., None] * conj(b), conj(a) * g[..., None]      (summed to b's shape)
 *   1-D @ N-D: conj(b) * g[..., None, :] (summed over its last dim),
 *              conj(a)[:, None] * g[..., None, :]
 *   N-D @ N-D: g @ b^H, a^H @ g */
int
matmul_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *a = sv(sc, n, 0), *b = sv(sc, n, 1), *g = gi[0], *ga = NULL, *gb = NULL;
    int da = n->input_meta[0].dim, db = n->input_meta[1].dim, rc = -1;
    if (da == 1 && db == 1) {
        ga = NEEDS(0) ? MUL(g, CONJ(b)) : NULL;
        gb = NEEDS(1) ? MUL(g, CONJ(a)) : NULL;
    }
    else if (db == 1) {
        PtlTensorImpl *gu = unsq(sc, g, -1);
        ga = NEEDS(0) ? MUL(gu, CONJ(b)) : NULL;
        /* a sparse a: a^T g through mv (a sparse tensor does not broadcast) */
        gb = !NEEDS(1) ? NULL : a && a->sparse ? f2(sc, PTL_OP_mv, f1(sc, PTL_OP_t, a), g)
                                               : MUL(CONJ(a), gu);
    }
    else if (da == 1) {
        PtlTensorImpl *gu = unsq(sc, g, -2);
        if (NEEDS(0)) {
            int64_t last = -1;
            PtlIValue v[3] = {ptl_iv_tensor(MUL(CONJ(b), gu)), ptl_iv_intlist(&last, 1),
                              ptl_iv_bool(0)};
            ga = fv(sc, PTL_OP_sum_dim_IntList, 3, v);
        }
        gb = NEEDS(1) ? MUL(unsq(sc, CONJ(a), -1), gu) : NULL;
    }
    else {
        ga = NEEDS(0) && a && b ? product_grad_first(sc, PTL_OP_matmul, g, a, b) : NULL;
        gb = NEEDS(1) && a && b ? product_grad_second(sc, PTL_OP_matmul, g, a, b) : NULL;
    }
    if (ga != NULL && a != NULL && a->sparse != NULL) {   /* see ptl_grad_mask_like */
        ga = own(sc, ptl_grad_mask_like((ptl_incref(ga), ga), a));
    }
    if (NEEDS(0) && give(n, go, 0, ga) < 0) {
        goto done;
    }
    if (NEEDS(1) && give(n, go, 1, gb) < 0) {
        goto done;
    }
    rc = 0;
done:
    return scope_end(sc, rc);
}
