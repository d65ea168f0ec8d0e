/* rnn_cells.c -- the fused recurrent cells (_thnn_fused_lstm_cell, _thnn_fused_gru_cell, their
 * backward kernels; ATen/native/cuda/RNN.cu, CUDA-only in PyTorch), registered with the
 * recurrent layer that runs their row formulas over time in rnn.c (Note [Recurrent layer]).
 *
 * Note [Fused cells]
 * ~~~~~~~~~~~~~~~~~~
 * The caller computes the gate projections input_gates = x W_ih^T and hidden_gates =
 * h W_hh^T ([B, G], G = 4H for LSTM, 3H for GRU); the kernel adds the biases, applies the
 * nonlinearities and the state update in one pass per batch row, and keeps a workspace
 * that its backward needs:
 *   LSTM  workspace [B, 4H] = the activated gates (i, f, g, o) = (s(.), s(.), tanh(.), s(.))
 *         cy = f cx + i g,  hy = o tanh(cy)
 *   GRU   workspace [B, 5H] = (r, z, n, hx, hn), r, z = s(.), hn = hidden_n + b_hn,
 *         n = tanh(input_n + b_in + r hn),  hy = n + z (hx - n)
 * The bias gradients are the batch sums of the gate gradients (one for LSTM, where both
 * biases get it; two for GRU, where the n gate differs, stacked in one [2, 3H] tensor).
 * Every input is used contiguous (a copy when it is not); outputs are new contiguous
 * tensors.  The formulas over one batch row, per dtype and (float32) per vector width, are
 * in rnn_rows.c (rnn_impl.h). */
#include <stdio.h>
#include <string.h>

#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "../../c10/tls.h"
#include "device_nn.h"
#include "gemm.h"
#include "native.h"
#include "nn_common.h"
#include "rnn_impl.h"

/* Note [CUDA fused cells]
 * ~~~~~~~~~~~~~~~~~~~~~~~
 * The fused cells and their backwards of CUDA tensors (and of CPU ones while the tests
 * emulate the CUDA kernels) keep the CPU kernels' checks (rnn_checks.c), contiguous
 * copies and outputs and run one launch of the recurrent layer's cell kernel (device_nn.h's
 * rnn step hook, Note [CUDA recurrent layer] in src/cuda/rnn_plan.h) over every row (n = B,
 * P = H): its forward takes LSTM's input and hidden gates apart (summed as the CPU's
 * gate_sum) and GRU's as the layer gives them; its backward takes LSTM's grad_hy and
 * grad_cy, each may be None.  The bias gradients are the device's sum over the rows
 * (device_sum_rows). */

/* out's elements [off, off + cols) = the sums over the rows of v [rows, cols] on the
 * device (the sum kernel, into out's dtype).  0 or -1. */
static int
device_sum_rows(PtlTensorImpl *v, PtlTensorImpl *out, int64_t off)
{
    int64_t d = 0, cols = v->sizes[1], one = 1;
    PtlIValue a[2] = {ptl_iv_tensor(v), ptl_iv_intlist(&d, 1)};
    PtlTensorImpl *sum = ptl_call_k(PTL_OP_sum_dim_IntList, 2, a);
    PtlTensorImpl *part = ptl_tensor_impl_view(out, 1, &cols, &one, out->storage_offset + off);
    int rc = sum != NULL && part != NULL ? ptl_copy_into(part, sum) : -1;
    ptl_xdecref(sum);
    ptl_xdecref(part);
    return rc;
}

/* The cells' device path (Note [CUDA fused cells]) */
static int
cell_on_device(const PtlTensorImpl *t)
{
    return nn_on_device(t, ptl_device_rnn_step_hook != NULL);
}

/* The step hook's arguments for a fused cell over rows rows of h units */
static PtlDeviceRnnStepArgs
cell_args(int pass, int mode, const PtlTensorImpl *like, int64_t rows, int64_t h)
{
    PtlDeviceRnnStepArgs a = {.pass = pass, .mode = mode, .dtype = (int32_t)like->dtype,
                              .n = rows, .B = rows, .H = h, .P = h};
    return a;
}

/* The cells' argument names, in their device checks' order (the workspace first in the
 * backwards, whose outputs take its device) */
static const char *const cell_names_lstm[5] = {"input_gates", "hidden_gates", "cx",
                                               "input_bias", "hidden_bias"};
static const char *const cell_names_gru[5] = {"input_gates", "hidden_gates", "hx",
                                              "input_bias", "hidden_bias"};
static const char *const lstm_backward_names[5] = {"workspace", "grad_hy", "grad_cy", "cx",
                                                   "cy"};
static const char *const gru_backward_names[2] = {"workspace", "grad_hy"};

/* ---- the LSTM cell ---- */

/* _thnn_fused_lstm_cell(input_gates [B, 4H], hidden_gates [B, 4H], cx [B, H],
 *                       input_bias [4H]?, hidden_bias [4H]?) -> (hy [B, H], cy [B, H],
 *                       workspace [B, 4H]) */
int
rnn_lstm_cell_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *in[5], *c[5] = {NULL}, *hy = NULL, *cy = NULL, *ws = NULL;
    int64_t h, rows;
    LstmCtx ctx;
    (void)ks;
    for (int i = 0; i < 5; i++) {
        in[i] = s[i].tag == PTL_IV_TENSOR ? s[i].u.t : NULL;
    }
    if (rnn_check_cell(op, "_thnn_fused_lstm_cell", s, "cx", 4, &h) < 0 ||
        rnn_check_same_device("_thnn_fused_lstm_cell", in, cell_names_lstm, 5) < 0 ||
        contiguous_all(in, c, 5) < 0) {
        release_all(c, 5);
        return -1;
    }
    rows = in[0]->sizes[0];
    hy = new_2d(rows, h, in[0]);
    cy = new_2d(rows, h, in[0]);
    ws = new_2d(rows, 4 * h, in[0]);
    if (hy == NULL || cy == NULL || ws == NULL) {
        goto error;
    }
    if (cell_on_device(in[0])) {
        PtlDeviceRnnStepArgs a = cell_args(PTL_DEVICE_RNN_FORWARD, MODE_LSTM, in[0], rows, h);
        a.ig = DATA(char, c[0]);
        a.hg = DATA(char, c[1]);
        a.cprev = DATA(char, c[2]);
        a.bi = DATA(char, c[3]);
        a.bh = DATA(char, c[4]);
        a.hprev = DATA(char, hy);   /* read only for rows past n: none */
        a.ht = DATA(char, hy);
        a.ct = DATA(char, cy);
        a.ws = DATA(char, ws);
        if (ptl_device_rnn_step_hook(&a) < 0) {
            goto error;
        }
        goto done;
    }
    memset(&ctx, 0, sizeof(ctx));
    ctx.ig = DATA(void, c[0]);
    ctx.hg = DATA(void, c[1]);
    ctx.cx = DATA(void, c[2]);
    ctx.bi = DATA(void, c[3]);
    ctx.bh = DATA(void, c[4]);
    ctx.hy = DATA(void, hy);
    ctx.cy_out = DATA(void, cy);
    ctx.ws_out = DATA(void, ws);
    ctx.h = h;
    ctx.ops = rnn_cell_ops(in[0]->dtype);
    if (ptl_parallel_for(0, rows, row_grain(4 * h), rnn_lstm_fwd, &ctx) < 0) {
        goto error;
    }
done:
    release_all(c, 5);
    s[0] = ptl_iv_tensor(hy);
    s[1] = ptl_iv_tensor(cy);
    s[2] = ptl_iv_tensor(ws);
    return 0;
error:
    release_all(c, 5);
    ptl_xdecref(hy);
    ptl_xdecref(cy);
    ptl_xdecref(ws);
    return -1;
}

/* _thnn_fused_lstm_cell_backward_impl(grad_hy [B, H]?, grad_cy [B, H]?, cx [B, H],
 *     cy [B, H], workspace [B, 4H], bool has_bias) -> (grad_gates [B, 4H], grad_cx [B, H],
 *     grad_bias [4H] or None) */
int
rnn_lstm_cell_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    const char *fn = "_thnn_fused_lstm_cell_backward_impl";
    PtlTensorImpl *in[5], *c[5] = {NULL}, *gg = NULL, *gcx = NULL, *gb = NULL;
    RnnArg a[5];
    int64_t h, rows;
    LstmCtx ctx;
    (void)ks;
    for (int i = 0; i < 5; i++) {
        in[i] = s[i].tag == PTL_IV_TENSOR ? s[i].u.t : NULL;
    }
    a[0] = (RnnArg){in[4], "workspace", 5};
    a[1] = (RnnArg){in[0], "grad_hy", 1};
    a[2] = (RnnArg){in[1], "grad_cy", 2};
    a[3] = (RnnArg){in[2], "cx", 3};
    a[4] = (RnnArg){in[3], "cy", 4};
    if (rnn_check_dtypes(op, a, 5) < 0 || rnn_check_dim(fn, a[0], 2) < 0 ||
        rnn_check_dim(fn, a[3], 2) < 0) {
        return -1;
    }
    h = in[2]->sizes[1];
    rows = in[2]->sizes[0];
    if (in[4]->sizes[0] != rows || in[4]->sizes[1] != 4 * h) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: workspace must have size [%lld, %lld]", fn,
                             (long long)rows, (long long)(4 * h));
    }
    for (int i = 1; i < 5; i++) {
        if (i != 3 && a[i].t != NULL && rnn_check_same_size(fn, a[i], a[3]) < 0) {
            return -1;
        }
    }
    PtlTensorImpl *by_ws[5] = {in[4], in[0], in[1], in[2], in[3]};
    if (rnn_check_same_device(fn, by_ws, lstm_backward_names, 5) < 0 ||
        contiguous_all(in, c, 5) < 0) {
        goto error;
    }
    gg = new_2d(rows, 4 * h, in[4]);
    gcx = new_2d(rows, h, in[4]);
    if (gg == NULL || gcx == NULL) {
        goto error;
    }
    if (cell_on_device(in[4])) {
        PtlDeviceRnnStepArgs d = cell_args(PTL_DEVICE_RNN_BACKWARD, MODE_LSTM, in[4], rows, h);
        d.ghy = DATA(char, c[0]);
        d.dc = DATA(char, c[1]);
        d.cprev = DATA(char, c[2]);
        d.ct = DATA(char, c[3]);
        d.ws = DATA(char, c[4]);
        d.dg = DATA(char, gg);
        d.dgh = DATA(char, gg);    /* GRU's alone */
        d.dcn = DATA(char, gcx);
        if (ptl_device_rnn_step_hook(&d) < 0) {
            goto error;
        }
        if (s[5].u.b && ((gb = new_1d(4 * h, in[4])) == NULL || device_sum_rows(gg, gb, 0) < 0)) {
            goto error;
        }
        goto done;
    }
    memset(&ctx, 0, sizeof(ctx));
    ctx.ghy = DATA(void, c[0]);
    ctx.gcy = DATA(void, c[1]);
    ctx.cx = DATA(void, c[2]);
    ctx.cy = DATA(void, c[3]);
    ctx.ws = DATA(void, c[4]);
    ctx.gg = DATA(void, gg);
    ctx.gcx = DATA(void, gcx);
    ctx.h = h;
    ctx.ops = rnn_cell_ops(in[4]->dtype);
    if (ptl_parallel_for(0, rows, row_grain(4 * h), rnn_lstm_bwd, &ctx) < 0) {
        goto error;
    }
    if (s[5].u.b) {
        if ((gb = new_1d(4 * h, in[4])) == NULL) {
            goto error;
        }
        rnn_sum_rows(gg, DATA(char, gb));
    }
done:
    release_all(c, 5);
    s[0] = ptl_iv_tensor(gg);
    s[1] = ptl_iv_tensor(gcx);
    s[2] = gb != NULL ? ptl_iv_tensor(gb) : ptl_iv_none();
    return 0;
error:
    release_all(c, 5);
    ptl_xdecref(gg);
    ptl_xdecref(gcx);
    ptl_xdecref(gb);
    return -1;
}

/* ---- the GRU cell ---- */

/* _thnn_fused_gru_cell(input_gates [B, 3H], hidden_gates [B, 3H], hx [B, H],
 *                      input_bias [3H]?, hidden_bias [3H]?) -> (hy [B, H],
 *                      workspace [B, 5H]) */
int
rnn_gru_cell_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *in[5], *c[5] = {NULL}, *hy = NULL, *ws = NULL;
    int64_t h, rows;
    GruCtx ctx;
    (void)ks;
    for (int i = 0; i < 5; i++) {
        in[i] = s[i].tag == PTL_IV_TENSOR ? s[i].u.t : NULL;
    }
    if (rnn_check_cell(op, "_thnn_fused_gru_cell", s, "hx", 3, &h) < 0 ||
        rnn_check_same_device("_thnn_fused_gru_cell", in, cell_names_gru, 5) < 0 ||
        contiguous_all(in, c, 5) < 0) {
        release_all(c, 5);
        return -1;
    }
    rows = in[0]->sizes[0];
    hy = new_2d(rows, h, in[0]);
    ws = new_2d(rows, 5 * h, in[0]);
    if (hy == NULL || ws == NULL) {
        goto error;
    }
    if (cell_on_device(in[0])) {
        PtlDeviceRnnStepArgs a = cell_args(PTL_DEVICE_RNN_FORWARD, MODE_GRU, in[0], rows, h);
        a.ig = DATA(char, c[0]);
        a.hg = DATA(char, c[1]);
        a.hprev = DATA(char, c[2]);
        a.bi = DATA(char, c[3]);
        a.bh = DATA(char, c[4]);
        a.ht = DATA(char, hy);
        a.ws = DATA(char, ws);
        if (ptl_device_rnn_step_hook(&a) < 0) {
            goto error;
        }
        goto done;
    }
    memset(&ctx, 0, sizeof(ctx));
    ctx.ig = DATA(void, c[0]);
    ctx.hg = DATA(void, c[1]);
    ctx.hx = DATA(void, c[2]);
    ctx.bi = DATA(void, c[3]);
    ctx.bh = DATA(void, c[4]);
    ctx.hy = DATA(void, hy);
    ctx.ws_out = DATA(void, ws);
    ctx.h = h;
    ctx.ops = rnn_cell_ops(in[0]->dtype);
    if (ptl_parallel_for(0, rows, row_grain(5 * h), rnn_gru_fwd, &ctx) < 0) {
        goto error;
    }
done:
    release_all(c, 5);
    s[0] = ptl_iv_tensor(hy);
    s[1] = ptl_iv_tensor(ws);
    return 0;
error:
    release_all(c, 5);
    ptl_xdecref(hy);
    ptl_xdecref(ws);
    return -1;
}

/* _thnn_fused_gru_cell_backward(grad_hy [B, H], workspace [B, 5H], bool has_bias) ->
 *     (grad_input_gates [B, 3H], grad_hidden_gates [B, 3H], grad_hx [B, H],
 *      grad_biases [2, 3H] (input_bias's, hidden_bias's) or None) */
int
rnn_gru_cell_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    const char *fn = "_thnn_fused_gru_cell_backward";
    PtlTensorImpl *in[2] = {s[0].u.t, s[1].u.t}, *c[2] = {NULL, NULL};
    PtlTensorImpl *gig = NULL, *ghg = NULL, *ghx = NULL, *gb = NULL;
    RnnArg a[2] = {{in[1], "workspace", 2}, {in[0], "grad_hy", 1}};
    int64_t h, rows;
    GruCtx ctx;
    (void)ks;
    if (rnn_check_dtypes(op, a, 2) < 0 || rnn_check_dim(fn, a[0], 2) < 0 ||
        rnn_check_dim(fn, a[1], 2) < 0) {
        return -1;
    }
    h = in[0]->sizes[1];
    rows = in[0]->sizes[0];
    if (in[1]->sizes[0] != rows || in[1]->sizes[1] != 5 * h) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: workspace must have size [%lld, %lld]", fn,
                             (long long)rows, (long long)(5 * h));
    }
    PtlTensorImpl *by_ws[2] = {in[1], in[0]};
    if (rnn_check_same_device(fn, by_ws, gru_backward_names, 2) < 0 ||
        contiguous_all(in, c, 2) < 0) {
        goto error;
    }
    gig = new_2d(rows, 3 * h, in[1]);
    ghg = new_2d(rows, 3 * h, in[1]);
    ghx = new_2d(rows, h, in[1]);
    if (gig == NULL || ghg == NULL || ghx == NULL) {
        goto error;
    }
    if (cell_on_device(in[1])) {
        PtlDeviceRnnStepArgs d = cell_args(PTL_DEVICE_RNN_BACKWARD, MODE_GRU, in[1], rows, h);
        d.ghy = DATA(char, c[0]);
        d.ws = DATA(char, c[1]);
        d.dg = DATA(char, gig);
        d.dgh = DATA(char, ghg);
        d.dhn = DATA(char, ghx);
        if (ptl_device_rnn_step_hook(&d) < 0) {
            goto error;
        }
        if (s[2].u.b && ((gb = new_2d(2, 3 * h, in[1])) == NULL ||
                         device_sum_rows(gig, gb, 0) < 0 || device_sum_rows(ghg, gb, 3 * h) < 0)) {
            goto error;
        }
        goto done;
    }
    memset(&ctx, 0, sizeof(ctx));
    ctx.ghy = DATA(void, c[0]);
    ctx.ws = DATA(void, c[1]);
    ctx.gig = DATA(void, gig);
    ctx.ghg = DATA(void, ghg);
    ctx.ghx = DATA(void, ghx);
    ctx.h = h;
    ctx.ops = rnn_cell_ops(in[1]->dtype);
    if (ptl_parallel_for(0, rows, row_grain(5 * h), rnn_gru_bwd, &ctx) < 0) {
        goto error;
    }
    if (s[2].u.b) {
        if ((gb = new_2d(2, 3 * h, in[1])) == NULL) {
            goto error;
        }
        rnn_sum_rows(gig, DATA(char, gb));
        rnn_sum_rows(ghg, DATA(char, gb) + 3 * h * (int64_t)ptl_dtype_itemsize(gb->dtype));
    }
done:
    release_all(c, 2);
    s[0] = ptl_iv_tensor(gig);
    s[1] = ptl_iv_tensor(ghg);
    s[2] = ptl_iv_tensor(ghx);
    s[3] = gb != NULL ? ptl_iv_tensor(gb) : ptl_iv_none();
    return 0;
error:
    release_all(c, 2);
    ptl_xdecref(gig);
    ptl_xdecref(ghg);
    ptl_xdecref(ghx);
    ptl_xdecref(gb);
    return -1;
}
