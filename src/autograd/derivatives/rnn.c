/* derivatives/rnn.c -- derivative formulas of the fused recurrent cells and of the recurrent
 * layer of aten/native/rnn.c.  The cells mirror the _thnn_fused_lstm_cell /
 * _thnn_fused_gru_cell entries of tools/autograd/derivatives.yaml: without grad mode the
 * backward kernels (_thnn_fused_*_backward*) give every gradient in one pass; with grad mode
 * (create_graph) the formulas of _thnn_differentiable_{lstm,gru}_cell_backward in
 * FunctionsManual.cpp are written with dispatcher ops, so they are differentiable again.
 * The layer (_ptl_rnn_layer) mirrors the _cudnn_rnn entry: its backward kernel gives every
 * gradient, and has no derivative itself (Note [Recurrent layer]).
 *
 * The cells' edges are the forward's five tensor inputs (input_gates, hidden_gates, cx or hx,
 * input_bias, hidden_bias); saved slots 0..4 hold them, slot 5 LSTM's cy or GRU's
 * workspace, slot 6 LSTM's workspace.  A bias gradient is the gate gradient reduced to [G]
 * by finish(). */
#include <math.h>

#include "../formula.h"

/* Gives gradient g (borrowed, may be NULL) to every edge in edges[0..k) that wants one
 * (AccumulateGrad copies a buffer that more than one edge holds). */
static int
give_each(PtlNode *n, PtlTensorImpl **go, PtlTensorImpl *g, const int *edges, int k)
{
    for (int e = 0; e < k; e++) {
        if (g != NULL && NEEDS(edges[e]) && put_same(n, go, edges[e], g) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Saved slots 0..4 (the forward's inputs) into t[] (new refs). */
static int
saved_inputs(PtlNode *n, PtlTensorImpl **t)
{
    for (int i = 0; i < 5; i++) {
        t[i] = NULL;
    }
    for (int i = 0; i < 5; i++) {
        if (saved(n, i, &t[i]) < 0) {
            return -1;
        }
    }
    return 0;
}

static void
release_n(PtlTensorImpl **t, int k)
{
    for (int i = 0; i < k; i++) {
        PTL_CLEAR(t[i]);
    }
}

/* ---- differentiable helpers (owned by the scope) ---- */

static PtlTensorImpl *
one_minus(Scope *sc, PtlTensorImpl *x)
{
    PtlTensorImpl *one = own(sc, ptl_wrapped_double(1.0));
    return f2(sc, PTL_OP_rsub_Tensor, x, one);
}

/* x[:, k h : (k + 1) h] */
static PtlTensorImpl *
chunk(Scope *sc, PtlTensorImpl *x, int64_t k, int64_t h)
{
    PtlIValue v[4] = {ptl_iv_tensor(x), ptl_iv_int(1), ptl_iv_int(k * h), ptl_iv_int(h)};
    return fv(sc, PTL_OP_narrow, 4, v);
}

/* x (1 - x): the derivative of a sigmoid whose value is x */
static PtlTensorImpl *
dsigmoid(Scope *sc, PtlTensorImpl *x)
{
    return f2(sc, PTL_OP_mul_Tensor, x, one_minus(sc, x));
}

/* 1 - x^2: the derivative of a tanh whose value is x */
static PtlTensorImpl *
dtanh(Scope *sc, PtlTensorImpl *x)
{
    return one_minus(sc, f2(sc, PTL_OP_mul_Tensor, x, x));
}

static PtlTensorImpl *
cat_cols(Scope *sc, PtlTensorImpl **parts, int k)
{
    for (int i = 0; i < k; i++) {
        if (parts[i] == NULL) {
            return NULL;
        }
    }
    PtlIValue v[2] = {ptl_iv_tensorlist(parts, k), ptl_iv_int(1)};
    return own(sc, callv(PTL_OP_cat, 2, v));
}

/* gates + biases (when given) */
static PtlTensorImpl *
with_bias(Scope *sc, PtlTensorImpl *gates, PtlTensorImpl *bias)
{
    return bias != NULL ? f2(sc, PTL_OP_add_Tensor, gates, bias) : gates;
}

/* LSTM with grad mode: recompute the gates from the saved inputs, then
 * gct = ghy o (1 - tanh(cy)^2) + gcy and the gates' gradients as in rnn.c. */
static int
lstm_differentiable(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go, PtlTensorImpl **t)
{
    Scope s = {.n = 0}, *sc = &s;
    PtlTensorImpl *ghy = gi[0], *gcy = gi[1], *gct = NULL, *gout;
    int64_t h = t[2]->sizes[1];
    PtlTensorImpl *gates = with_bias(sc, with_bias(sc, ADD(t[0], t[1]), t[3]), t[4]);
    PtlTensorImpl *i = f1(sc, PTL_OP_sigmoid, chunk(sc, gates, 0, h));
    PtlTensorImpl *f = f1(sc, PTL_OP_sigmoid, chunk(sc, gates, 1, h));
    PtlTensorImpl *g = f1(sc, PTL_OP_tanh, chunk(sc, gates, 2, h));
    PtlTensorImpl *o = f1(sc, PTL_OP_sigmoid, chunk(sc, gates, 3, h));
    PtlTensorImpl *tcy = f1(sc, PTL_OP_tanh, ADD(MUL(f, t[2]), MUL(i, g)));
    if (ghy != NULL) {
        gct = MUL(MUL(ghy, o), dtanh(sc, tcy));
        gout = MUL(MUL(ghy, tcy), dsigmoid(sc, o));
    }
    else {
        gout = f1(sc, PTL_OP_zeros_like, o);
    }
    if (gcy != NULL) {
        gct = gct != NULL ? ADD(gct, gcy) : gcy;
    }
    PtlTensorImpl *parts[4] = {MUL(MUL(gct, g), dsigmoid(sc, i)),
                               MUL(MUL(gct, t[2]), dsigmoid(sc, f)),
                               MUL(MUL(gct, i), dtanh(sc, g)), gout};
    PtlTensorImpl *grad_gates = cat_cols(sc, parts, 4);
    PtlTensorImpl *gcx = MUL(gct, f);
    static const int gate_edges[4] = {0, 1, 3, 4};
    if (grad_gates == NULL || gcx == NULL) {
        return scope_end(sc, -1);
    }
    if (give_each(n, go, grad_gates, gate_edges, t[3] != NULL ? 4 : 2) < 0 ||
        (NEEDS(2) && put_same(n, go, 2, gcx) < 0)) {
        return scope_end(sc, -1);
    }
    return scope_end(sc, 0);
}

/* _thnn_fused_lstm_cell(input_gates, hidden_gates, cx, input_bias, hidden_bias):
 * grads of (hy, cy); the workspace output has none. */
int
thnn_fused_lstm_cell_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *t[7] = {NULL}, *r[3] = {NULL, NULL, NULL};
    static const int gate_edges[4] = {0, 1, 3, 4};
    int rc = -1;
    if (gi[0] == NULL && gi[1] == NULL) {
        return 0;
    }
    if (saved_inputs(n, t) < 0 || saved(n, 5, &t[5]) < 0 || saved(n, 6, &t[6]) < 0) {
        goto done;
    }
    if (ptl_grad_mode_enabled()) {
        rc = lstm_differentiable(n, gi, go, t);
        goto done;
    }
    PtlIValue a[6] = {gi[0] ? ptl_iv_tensor(gi[0]) : ptl_iv_none(),
                      gi[1] ? ptl_iv_tensor(gi[1]) : ptl_iv_none(), ptl_iv_tensor(t[2]),
                      ptl_iv_tensor(t[5]), ptl_iv_tensor(t[6]), ptl_iv_bool(t[3] != NULL)};
    if (call_multi(PTL_OP__thnn_fused_lstm_cell_backward_impl, 6, a, 3, r) < 0) {
        goto done;
    }
    if (give_each(n, go, r[0], gate_edges, 2) < 0 ||
        give_each(n, go, r[2], gate_edges + 2, 2) < 0 ||
        give_each(n, go, r[1], (const int[]){2}, 1) < 0) {
        goto done;
    }
    rc = 0;
done:
    release_n(t, 7);
    release_n(r, 3);
    return rc;
}

/* GRU with grad mode: r, z, n recomputed from the saved inputs; gn = ghy (1-z)(1-n^2),
 * gz = ghy (hx - n) z(1-z), gr = gn hn r(1-r), ghx = ghy z. */
static int
gru_differentiable(PtlNode *n, PtlTensorImpl *ghy, PtlTensorImpl **go, PtlTensorImpl **t)
{
    Scope s = {.n = 0}, *sc = &s;
    int64_t h = t[2]->sizes[1];
    PtlTensorImpl *xg = with_bias(sc, t[0], t[3]), *hg = with_bias(sc, t[1], t[4]);
    PtlTensorImpl *r = f1(sc, PTL_OP_sigmoid, ADD(chunk(sc, xg, 0, h), chunk(sc, hg, 0, h)));
    PtlTensorImpl *z = f1(sc, PTL_OP_sigmoid, ADD(chunk(sc, xg, 1, h), chunk(sc, hg, 1, h)));
    PtlTensorImpl *hn = chunk(sc, hg, 2, h);
    PtlTensorImpl *nn = f1(sc, PTL_OP_tanh, ADD(chunk(sc, xg, 2, h), MUL(r, hn)));
    PtlTensorImpl *gn = MUL(MUL(ghy, one_minus(sc, z)), dtanh(sc, nn));
    PtlTensorImpl *gz = MUL(MUL(ghy, f2(sc, PTL_OP_sub_Tensor, t[2], nn)), dsigmoid(sc, z));
    PtlTensorImpl *gr = MUL(MUL(gn, hn), dsigmoid(sc, r));
    PtlTensorImpl *pi[3] = {gr, gz, gn}, *ph[3] = {gr, gz, MUL(gn, r)};
    PtlTensorImpl *gig = cat_cols(sc, pi, 3), *ghg = cat_cols(sc, ph, 3);
    PtlTensorImpl *ghx = MUL(ghy, z);
    static const int in_edges[2] = {0, 3}, hid_edges[2] = {1, 4};
    int k = t[3] != NULL ? 2 : 1;
    if (gig == NULL || ghg == NULL || ghx == NULL) {
        return scope_end(sc, -1);
    }
    if (give_each(n, go, gig, in_edges, k) < 0 || give_each(n, go, ghg, hid_edges, k) < 0 ||
        (NEEDS(2) && put_same(n, go, 2, ghx) < 0)) {
        return scope_end(sc, -1);
    }
    return scope_end(sc, 0);
}

/* _thnn_fused_gru_cell(input_gates, hidden_gates, hx, input_bias, hidden_bias): grad of hy */
int
thnn_fused_gru_cell_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *t[6] = {NULL}, *r[5] = {NULL, NULL, NULL, NULL, NULL};
    int rc = -1;
    if (gi[0] == NULL) {
        return 0;
    }
    if (saved_inputs(n, t) < 0 || saved(n, 5, &t[5]) < 0) {
        goto done;
    }
    if (ptl_grad_mode_enabled()) {
        rc = gru_differentiable(n, gi[0], go, t);
        goto done;
    }
    PtlIValue a[3] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(t[5]), ptl_iv_bool(t[3] != NULL)};
    if (call_multi(PTL_OP__thnn_fused_gru_cell_backward, 3, a, 4, r) < 0) {
        goto done;
    }
    /* r[3] stacks the two bias gradients ([2, 3H]): rows 0 and 1 go to edges 3 and 4 */
    if (r[3] != NULL) {
        PtlTensorImpl *gb = r[3];
        PtlIValue v[3] = {ptl_iv_tensor(gb), ptl_iv_int(0), ptl_iv_int(0)};
        r[3] = callv(PTL_OP_select_int, 3, v);
        v[2] = ptl_iv_int(1);
        r[4] = r[3] != NULL ? callv(PTL_OP_select_int, 3, v) : NULL;
        ptl_decref(gb);
        if (r[4] == NULL) {
            goto done;
        }
    }
    for (int e = 0; e < 5; e++) {
        if (give_each(n, go, r[e], &e, 1) < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    release_n(t, 6);
    release_n(r, 5);
    return rc;
}

/* _ptl_rnn_layer(input_gates, hx, cx, w_hh, b_ih, b_hh, w_hr, mode, reverse, batch_sizes):
 * grads of (output, workspace, hy, cy); the workspace has none.  Saved slots: hx 0, cx 1,
 * w_hh 2, b_ih 3, w_hr 4, batch_sizes 5, output 6, workspace 7; edges: the tensor arguments
 * in order (input_gates 0 .. w_hr 6).  One call of _ptl_rnn_layer_backward gives them all;
 * under create_graph it records a node that raises on a double backward. */
int
ptl_rnn_layer_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *t[8] = {NULL}, *r[3] = {NULL, NULL, NULL};
    PtlIValue st[PTL_SCHEMA_MAX_ARGS];
    const PtlOperator *op = ptl_op(PTL_OP__ptl_rnn_layer_backward);
    int rc = -1, called = 0;
    if (gi[0] == NULL && gi[2] == NULL && gi[3] == NULL) {
        return 0;
    }
    for (int i = 0; i < 8; i++) {
        if (saved(n, i, &t[i]) < 0) {
            goto done;
        }
    }
    PtlIValue a[13] = {gi[0] ? ptl_iv_tensor(gi[0]) : ptl_iv_none(),
                       gi[2] ? ptl_iv_tensor(gi[2]) : ptl_iv_none(),
                       gi[3] ? ptl_iv_tensor(gi[3]) : ptl_iv_none(), ptl_iv_tensor(t[0]),
                       t[1] ? ptl_iv_tensor(t[1]) : ptl_iv_none(), ptl_iv_tensor(t[2]),
                       t[4] ? ptl_iv_tensor(t[4]) : ptl_iv_none(), ptl_iv_tensor(t[6]),
                       ptl_iv_tensor(t[7]), n->args[7], n->args[8],
                       t[5] ? ptl_iv_tensor(t[5]) : ptl_iv_none(), ptl_iv_bool(t[3] != NULL)};
    fill_args(op, 13, a, st);
    if (ptl_dispatcher_call(op, st) < 0) {
        goto done;
    }
    called = 1;
    for (int i = 0; i < 3; i++) {
        r[i] = st[i].tag == PTL_IV_TENSOR ? st[i].u.t : NULL;
        st[i] = ptl_iv_none();
    }
    for (int e = 0; e < 3; e++) {
        if (r[e] != NULL && NEEDS(e) && put_same(n, go, e, r[e]) < 0) {
            goto done;
        }
    }
    /* grad_weights: w_hh's, then both biases' (when given), then w_hr's (when given) */
    for (int e = 3, k = 0; e < 7; e++) {
        if ((e == 4 || e == 5) && t[3] == NULL) {
            continue;
        }
        if (e == 6 && t[4] == NULL) {
            break;
        }
        if (NEEDS(e) && put_same(n, go, e, st[3].u.tl.data[k]) < 0) {
            goto done;
        }
        k++;
    }
    rc = 0;
done:
    if (called) {
        ptl_ivalue_release(&st[3]);
    }
    release_n(t, 8);
    release_n(r, 3);
    return rc;
}
