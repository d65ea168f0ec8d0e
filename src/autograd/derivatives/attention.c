/* derivatives/attention.c -- the derivative of _scaled_dot_product_flash_attention_for_cpu
 * (aten/native/attention.c).  Mirrors its entry in tools/autograd/derivatives.yaml.
 *
 * Without grad mode the fused backward kernel gives the three gradients in one pass.  With
 * grad mode (create_graph), or when the logsumexp output has a gradient, the same
 * gradients are written with dispatcher ops from the recomputed probabilities, so they are
 * differentiable again (the fused backward has no derivative, as in PyTorch):
 *
 *     P = softmax(s), s = scale q k^T + mask (-inf above the diagonal when causal), rows
 *     whose every key is masked giving zeros;
 *     dV = P^T g,  dS = scale P (g v^T - rowsum(g v^T * P) + glse),
 *     dQ = dS k,   dK = dS^T q.
 *
 * Edges: query 0, key 1, value 2 (attn_mask 3 is not differentiable).  Saved slots: query 0,
 * key 1, value 2, attn_mask 3, output 4, logsumexp 5. */
#include <math.h>

#include "../formula.h"

/* The probabilities of the forward, from dispatcher ops. */
static PtlTensorImpl *
sdpa_probs(Scope *sc, PtlNode *n, PtlTensorImpl *q, PtlTensorImpl *k, PtlTensorImpl *mask,
           double scale)
{
    int causal = n->args[4].u.b;
    PtlTensorImpl *s = MULN(MATMUL(q, MT(k)), scale);
    if (s == NULL) {
        return NULL;
    }
    int64_t L = s->sizes[s->dim - 2], S = s->sizes[s->dim - 1];
    if (causal) {
        int64_t sizes[2] = {L, S};
        PtlIValue o[2] = {ptl_iv_intlist(sizes, 2), ptl_iv_dtype(PTL_DTYPE_BOOL)};
        PtlTensorImpl *ones = own(sc, callv(PTL_OP_ones, 2, o));
        PtlIValue u[2] = {ptl_iv_tensor(ones), ptl_iv_int(1)};
        PtlTensorImpl *upper = ones != NULL ? fv(sc, PTL_OP_triu, 2, u) : NULL;
        PtlIValue f[3] = {ptl_iv_tensor(s), ptl_iv_tensor(upper), ptl_iv_double(-INFINITY)};
        s = upper != NULL ? fv(sc, PTL_OP_masked_fill_Scalar, 3, f) : NULL;
    }
    if (mask != NULL) {
        s = ADD(s, mask);
    }
    PtlIValue sm[2] = {ptl_iv_tensor(s), ptl_iv_int(-1)};
    if (mask == NULL && (!causal || S > 0)) {
        /* every row keeps a key */
        return s != NULL ? fv(sc, PTL_OP_softmax_int, 2, sm) : NULL;
    }
    /* a row with no finite score gives zeros (Note [Flash attention on the CPU]) */
    PtlIValue a[3] = {ptl_iv_tensor(GT(s, num(sc, -INFINITY))), ptl_iv_int(-1), ptl_iv_bool(1)};
    PtlTensorImpl *live = a[0].u.t != NULL ? fv(sc, PTL_OP_any_dim, 3, a) : NULL;
    sm[0] = ptl_iv_tensor(WHERE(live, s, num(sc, 0.0)));
    PtlTensorImpl *p = sm[0].u.t != NULL ? fv(sc, PTL_OP_softmax_int, 2, sm) : NULL;
    return MUL(p, live);
}

/* The three gradients through dispatcher ops (the header's formulas). */
static int
sdpa_differentiable(PtlNode *n, PtlTensorImpl *g, PtlTensorImpl *glse, PtlTensorImpl **go)
{
    Scope scope = {.n = 0}, *sc = &scope;
    PtlTensorImpl *q = sv(sc, n, 0), *k = sv(sc, n, 1), *v = sv(sc, n, 2), *mask = NULL;
    if (q == NULL || k == NULL || v == NULL || saved(n, 3, &mask) < 0) {
        return scope_end(sc, -1);
    }
    own(sc, mask);
    double scale = n->args[6].tag == PTL_IV_NONE ? 1.0 / sqrt((double)q->sizes[q->dim - 1])
                                                 : ptl_iv_to_double(&n->args[6]);
    PtlTensorImpl *p = sdpa_probs(sc, n, q, k, mask, scale), *ds = NULL;
    if (g != NULL) {
        if (NEEDS(2) && give(n, go, 2, MATMUL(MT(p), g)) < 0) {
            return scope_end(sc, -1);
        }
        PtlTensorImpl *dp = MATMUL(g, MT(v));
        PtlIValue r[3] = {ptl_iv_tensor(MUL(dp, p)), ptl_iv_intlist((int64_t[]){-1}, 1),
                          ptl_iv_bool(1)};
        ds = SUB(dp, r[0].u.t != NULL ? fv(sc, PTL_OP_sum_dim_IntList, 3, r) : NULL);
    }
    if (glse != NULL) {
        PtlTensorImpl *gl = unsq(sc, glse, -1);
        ds = ds != NULL ? ADD(ds, gl) : gl;
    }
    ds = MULN(MUL(p, ds), scale);
    if ((NEEDS(0) && give(n, go, 0, MATMUL(ds, k)) < 0) ||
        (NEEDS(1) && give(n, go, 1, MATMUL(MT(ds), q)) < 0)) {
        return scope_end(sc, -1);
    }
    return scope_end(sc, 0);
}

/* _scaled_dot_product_flash_attention_for_cpu(query, key, value, dropout_p, is_causal, *,
 * attn_mask, scale) -> (output, logsumexp) */
int
sdpa_flash_attention_grad(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *t[6] = {NULL}, *r[3] = {NULL, NULL, NULL};
    int rc = -1;
    if (gi[0] == NULL && gi[1] == NULL) {
        return 0;
    }
    if (ptl_grad_mode_enabled() || gi[1] != NULL) {
        return sdpa_differentiable(n, gi[0], gi[1], go);
    }
    for (int i = 0; i < 6; i++) {
        if (saved(n, i, &t[i]) < 0) {
            goto done;
        }
    }
    PtlIValue a[10] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(t[0]), ptl_iv_tensor(t[1]),
                       ptl_iv_tensor(t[2]), ptl_iv_tensor(t[4]), ptl_iv_tensor(t[5]),
                       n->args[3], n->args[4], t[3] ? ptl_iv_tensor(t[3]) : ptl_iv_none(),
                       n->args[6]};
    if (call_multi(PTL_OP__scaled_dot_product_flash_attention_for_cpu_backward, 10, a, 3, r) < 0) {
        goto done;
    }
    rc = 0;
    for (int i = 0; i < 3; i++) {
        if (NEEDS(i) && put(n, go, i, r[i]) < 0) {
            rc = -1;
        }
        else if (!NEEDS(i)) {
            ptl_xdecref(r[i]);
        }
        r[i] = NULL;
    }
done:
    for (int i = 0; i < 6; i++) {
        ptl_xdecref(t[i]);
    }
    for (int i = 0; i < 3; i++) {
        ptl_xdecref(r[i]);
    }
    return rc;
}
