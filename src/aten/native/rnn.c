/* rnn.c -- the recurrent layer (_ptl_rnn_layer and its backward: Note [Recurrent layer]): one
 * layer and direction of nn.RNN / LSTM / GRU over time in C, each step a GEMM and the fused
 * cells' row formulas; and the registration of the family's kernels, the fused cells' too
 * (rnn_cells.c, Note [Fused cells]). */
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

/* ---- the recurrent layer: the time loop of one layer and direction ---- */

/* Note [Recurrent layer]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * _ptl_rnn_layer runs one layer and direction of nn.RNN / LSTM / GRU.  The caller gives the
 * input projections of every step, input_gates = x W_ih^T ([T, B, G], no biases, one GEMM);
 * each step is then one GEMM h_{t-1} W_hh^T and the cell of Note [Fused cells] (RNN: gates
 * plus both biases through tanh or relu), which writes h_t into output[t]; an LSTM with
 * proj_size then projects, h_t = (o tanh(c_t)) W_hr^T.  W_hh^T and W_hr^T (the backward:
 * W_hh and W_hr) are packed once per call into the GEMM's slivers (ptl_gemm_pack_b, Note
 * [GEMM packing of B]), not once per step.  LSTM's and RNN's step GEMM also adds
 * input_gates[t] as it stores (ptl_gemm_packed's S), straight into the workspace's gates
 * (RNN: output[t]), so the cell only adds the biases, in the order the fused cell does (the
 * same bits); GRU's cell needs the hidden n gate apart, so its GEMM writes a scratch.  On
 * several threads the batch rows are cut once for the whole loop (Note [Recurrent layer
 * threads]).  reverse walks t from T - 1 down.  An hx of zeros (+0 or -0; nn.LSTM without a
 * state) on the CPU skips the first step's product, its sums being input_gates[t] (the same
 * bits but maybe a zero's sign), and dW_hh's hx term below (hx_zero), while W_hh (for the
 * term, which W_hh is not in, the first step's gate gradients) is finite: 0 * inf is nan.  An LSTM's loops
 * fetch the next step's cold rows as they go (Note [LSTM backward fetch] in rnn_rows.c).
 * batch_sizes (a packed sequence, padded, sorted by length) is the number of leading rows
 * that run at step t: the others keep their state, which output[t] repeats (the `keep`
 * masks of nn/modules/rnn.py's loop of ops).  The mode numbers are cuDNN's, as
 * aten::_cudnn_rnn's.
 * The input form (MODE_INPUT_FORM added to an LSTM's or RNN's mode; CPU tensors that need no
 * gradient: nn/modules/rnn.py's no_grad forward) takes x [T, B, I] for input_gates and
 * [W_ih, W_hh] [G, I + P] for w_hh: each step copies [x_t, h_{t-1}] into a [B, I + P]
 * scratch and runs one GEMM on [W_ih, W_hh]^T, packed once (K = I + P), so no [T, B, G]
 * projection is written and read back; its bits differ from the two products' (one chain of
 * FMAs over k instead of x W_ih^T added at the store), within rounding.  GRU has no input
 * form (its n gate needs x W_ih^T apart).  1 and 2 threads still give the same bits: the
 * rows of each step go through the same packed panel.
 *
 * The workspace is 1-D: regions of [T, B, width] in time order, what the backward needs
 * besides output and the initial states:
 *   LSTM  [T, B, 4H] activated gates, [T, B, H] c_t, with proj_size [T, B, H] o tanh(c_t),
 *         with step projections [T, B, I] x (Note [LSTM step projections])
 *   GRU   [T, B, 5H] the cell's workspace (r, z, n, h_{t-1}, hn)
 *   RNN   nothing: tanh' and relu' come from h_t (output)
 * When no gradient can be asked for (grad mode off, or no input that requires one; always
 * in the input form) the regions hold two steps instead of T, time t in step t % 2
 * (ws_step): the cells read only the step before, and the backward never runs.
 * _ptl_rnn_layer_backward walks the steps the other way carrying dh (LSTM: and dc): dh gets
 * grad_output[t], the cell's backward gives the running rows' gates' gradients (zero for
 * the others, whose dh and dc pass through), and dh_{t-1} = dgates W_hh (GRU: plus the
 * cell's z dh).  The weights' gradients are GEMMs over all steps at once: dW_hh = sum_t
 * dgates_t^T h_{t-1} is [G, T B] x [T B, P] over output (plus the step from hx), dW_hr =
 * sum_t dh_t^T (o tanh(c_t)); the biases' are column sums of the gates' gradients (GRU's hidden
 * gates differ from its input gates in n): on the CPU each step adds its rows into one row per
 * group of BSUM_ROWS batch rows while they are in the cache (bias_sums_add), and those rows are
 * summed at the end, so no pass reads the [T, B, G] gradients again and the order of the
 * additions does not depend on the threads (a part's rows are whole groups); the device sums
 * the columns at the end.  On the CPU an LSTM's gate gradients keep their rows an odd number of
 * cache lines apart (G padded by one line when its bytes are a multiple of two lines;
 * grad_input_gates is then a strided view), so that dW_hh's GEMM here and the input
 * projection's weight gradient after it read dgates^T in place (Note [GEMM direct A]: 4H = 512
 * floats, 2 KiB, kept it packed): a 2-layer nn.LSTM(64, 128) backward over 64 x 16 steps took
 * 9.75 -> 9.23 ms on one Zen 4 core.  The backward op has no derivative: a double backward
 * raises "the derivative for ... is not implemented".  Inputs are used contiguous; the loop
 * runs without the GIL when it has enough work. */

/* Note [LSTM step projections]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * With MODE_STEP_PROJECTIONS added to an LSTM's mode (no proj_size; CPU; nn/modules/rnn.py
 * when x and W_ih both want gradients) the layer takes x [T, B, I] for input_gates and W_ih
 * [G, I] in w_hr's place, and projects x W_ih^T itself, PROJ_STEPS_MAX steps at a time into
 * a scratch of at most PROJ_BYTES_MAX that the next steps' GEMMs read as their S.  Before,
 * F.linear wrote the whole [T, B, G] projection (2 MiB for the language model's T 64, B 16,
 * H 128) and the loop read it back: on a core with 2 MiB of L2 and a step that touches about
 * 12 MiB, both went to L3 (the projection 0.60 ms warm, 0.73 in the step).  The buffer was not
 * fresh memory: the allocator's big-block cache handed back the same block every step (0.05
 * page faults a training step), so keeping it across steps could not help; it is cold by
 * capacity, and only writing fewer bytes before reading them does.
 * The bits are F.linear's: ptl_gemm_packed gives ptl_gemm's bits over any split of the rows
 * when ptl_gemm_packed_rows_exact says the whole product takes the plain blocked path
 * (proj_rows); otherwise the op computes the whole projection first, as mm would.  The
 * backward gives x's gradient dgates W_ih and W_ih's dgates^T x, each one product over every
 * step in mm's backward's layout (Note [Matrix product gradient layout]), so the same bits
 * again; W_ih's gradient leaves through w_hr's edge, so no torch.cat / split of [W_ih, W_hh]
 * as in the input form.  The node does not save input_gates, so the forward copies x into the
 * workspace (its last region) as it projects.  dgates_t W_ih step by step while its rows are
 * in L1 was measured slower than the one product (backward 9.36 -> 9.48 ms): that product
 * already reads dgates at the tiles' full rate.  Nothing outlives the call: the scratch is the
 * call's own, each part's thread writes only its own rows of it, and the outputs are new
 * tensors as before.  The device's steps (the CUDA kernels emulated on CPU tensors) project
 * the whole input first.  x is the copy, so an in-place change to x after the forward no longer
 * makes the backward raise (mm's node saved x); the gradient is that of the x the forward read. */

/* Loops of fewer multiply-adds keep the GIL. */
#define LAYER_NOGIL_FLOPS (1 << 18)

typedef struct Layer {
    int mode, reverse;
    int dev;                                /* the device's steps (Note [CUDA recurrent layer]
                                             * in src/cuda/rnn_plan.h): CUDA tensors, and CPU
                                             * ones while the tests emulate the kernels */
    int64_t T, B, H, P, G;                  /* P: h's width (proj_size, else H) */
    int input_form;                         /* MODE_INPUT_FORM was added to the mode */
    int step_proj;                          /* MODE_STEP_PROJECTIONS was (Note [LSTM step
                                             * projections]) */
    int proj_rows;                          /* step_proj: x W_ih^T computed step by step */
    int64_t proj_steps;                     /* proj_rows: the steps projected at a time */
    int64_t I;                              /* the input form and step_proj: x's width;
                                             * else 0 */
    int64_t wt;                             /* the workspace's steps: T, or 2 when no
                                             * gradient is wanted (Note [Recurrent layer]) */
    int hx_zero;                            /* CPU: hx is all zeros, its products skipped */
    CellOps ops;
    const int64_t *batch_sizes;             /* [T], or NULL: every row runs */
    PtlTensorImpl *hx, *cx, *w_hh, *w_hr;   /* contiguous; cx and w_hr may be NULL */
    PtlTensorImpl *w_ih, *x;                /* step_proj: W_ih [G, I] and (forward) x
                                             * [T, B, I], contiguous; else NULL */
    PtlGemmPackedB *w_hh_p, *w_hr_p;        /* packed W_hh^T, W_hr^T (backward: W_hh,
                                             * W_hr); CPU */
    PtlGemmPackedB *w_ih_p;                 /* proj_rows: packed W_ih^T */
    const void *b_ih, *b_hh;
    PtlTensorImpl *out, *ws;                /* output [T, B, P], workspace (Note) */
} Layer;

/* The workspace's layout (Note [Recurrent layer]): the width of its first region; where
 * LSTM's c_t (region 1) and o tanh(c_t) (region 2) start. */
static int64_t
gates_width(const Layer *l)
{
    return l->mode == MODE_LSTM ? 4 * l->H : l->mode == MODE_GRU ? 5 * l->H : 0;
}

static int64_t
region_at(const Layer *l, int region)
{
    return l->wt * l->B * (gates_width(l) + (region - 1) * l->H);
}

static int64_t
workspace_numel(const Layer *l)
{
    int64_t w = gates_width(l) + (l->mode == MODE_LSTM ? l->H : 0) + (l->w_hr ? l->H : 0);
    return l->wt * l->B * (w + (l->step_proj ? l->I : 0));
}

/* step_proj: where the workspace's copy of x ([T, B, I], after c_t) starts */
static int64_t
x_region(const Layer *l)
{
    return region_at(l, 2);
}

/* proj_rows: how many steps' projections the scratch holds (Note [LSTM step projections]) */
#define PROJ_STEPS_MAX 4
#define PROJ_BYTES_MAX ((int64_t)128 << 10)
static int64_t
proj_steps(const Layer *l)
{
    int64_t step = l->B * l->G * (int64_t)l->ops.es;
    int64_t n = step > 0 ? PROJ_BYTES_MAX / step : PROJ_STEPS_MAX;
    n = n < PROJ_STEPS_MAX ? n : PROJ_STEPS_MAX;
    n = n < l->T ? n : l->T;
    return n > 1 ? n : 1;
}

/* The workspace's step that holds time t's rows: t, or t % 2 when it keeps two steps. */
static int64_t
ws_step(const Layer *l, int64_t t)
{
    return l->wt == l->T ? t : t % 2;
}

/* The time index of the s-th step taken, and the rows that run at time t. */
static int64_t
step_time(const Layer *l, int64_t s)
{
    return l->reverse ? l->T - 1 - s : s;
}

static int64_t
running_rows(const Layer *l, int64_t t)
{
    return l->batch_sizes != NULL ? l->batch_sizes[t] : l->B;
}

/* dst[0..n) = src[0..n), n elements of es bytes (nothing when n is 0: src may be NULL) */
static void
copy_elems(void *dst, const void *src, int64_t n, size_t es)
{
    if (n > 0) {
        memcpy(dst, src, (size_t)n * es);
    }
}

/* A rows x cols matrix inside t's elements: from element `off` (past t's own offset), rows
 * `rs` and columns `cs` elements apart. */
typedef struct Mat {
    PtlTensorImpl *t;
    int64_t off, rows, cols, rs, cs;
} Mat;

/* rows x cols, row-major, from element off */
static Mat
rows_at(PtlTensorImpl *t, int64_t off, int64_t rows, int64_t cols)
{
    return (Mat){t, off, rows, cols, cols, 1};
}

/* the transpose of the row-major cols x rows matrix at element off */
static Mat
transposed_at(PtlTensorImpl *t, int64_t off, int64_t rows, int64_t cols)
{
    return (Mat){t, off, rows, cols, 1, rows};
}

static PtlTensorImpl *
mat_view(Mat m)
{
    int64_t sizes[2] = {m.rows, m.cols}, strides[2] = {m.rs, m.cs};
    return ptl_tensor_impl_view(m.t, 2, sizes, strides, m.t->storage_offset + m.off);
}

/* c = a b (beta 0) or c += a b (beta 1).  0 or -1. */
static int
mat_gemm(Mat c, Mat a, Mat b, double beta)
{
    PtlTensorImpl *v[3] = {mat_view(c), mat_view(a), mat_view(b)};
    int rc = v[0] && v[1] && v[2] ? ptl_gemm(v[0], v[1], v[2], 1.0, beta) : -1;
    for (int i = 0; i < 3; i++) {
        ptl_xdecref(v[i]);
    }
    return rc;
}

/* c = a b + s (s: c's sizes, not overlapping it).  0 or -1. */
static int
mat_gemm_add(Mat c, Mat a, Mat b, Mat s)
{
    PtlTensorImpl *v[4] = {mat_view(c), mat_view(a), mat_view(b), mat_view(s)};
    int rc = v[0] && v[1] && v[2] && v[3] ? ptl_gemm_add(v[0], v[1], v[2], 1.0, 1.0, v[3]) : -1;
    for (int i = 0; i < 4; i++) {
        ptl_xdecref(v[i]);
    }
    return rc;
}

/* The address of element off of t's (es-byte) elements; NULL for a NULL t. */
static char *
at(PtlTensorImpl *t, int64_t off, size_t es)
{
    return t != NULL ? DATA(char, t) + (size_t)off * es : NULL;
}

/* dst (contiguous) = src's dst->numel elements from element off, on any device.  0 or -1. */
static int
copy_from(PtlTensorImpl *dst, PtlTensorImpl *src, int64_t off)
{
    int64_t strides[PTL_MAX_DIMS], st = 1;
    for (int i = dst->dim - 1; i >= 0; i--) {
        strides[i] = st;
        st *= dst->sizes[i];
    }
    PtlTensorImpl *v = ptl_tensor_impl_view(src, dst->dim, dst->sizes, strides,
                                            src->storage_offset + off);
    int rc = v != NULL ? ptl_copy_into(dst, v) : -1;
    ptl_xdecref(v);
    return rc;
}

/* dst's rows x cols elements from element off = src's first rows x cols, on any device.  0 or
 * -1. */
static int
copy_rows(PtlTensorImpl *dst, int64_t off, PtlTensorImpl *src, int64_t rows, int64_t cols)
{
    PtlTensorImpl *d = mat_view(rows_at(dst, off, rows, cols));
    PtlTensorImpl *v = d != NULL ? mat_view(rows_at(src, 0, rows, cols)) : NULL;
    int rc = v != NULL ? ptl_copy_into(d, v) : -1;
    ptl_xdecref(d);
    ptl_xdecref(v);
    return rc;
}

/* step_proj: the steps [s0, s1) of the rows [r0, r1) (Note [LSTM step projections]): x_t
 * into the workspace for dW_ih, and with proj_rows x_t W_ih^T into hg, [s1 - s0, B, G] in
 * time order from the chunk's earliest time *lo.  0 or -1. */
static int
project_steps(const Layer *l, PtlTensorImpl *hg, int64_t s0, int64_t s1, int64_t r0, int64_t r1,
              int64_t *lo)
{
    int64_t B = l->B, G = l->G, I = l->I, m = r1 - r0;
    size_t es = l->ops.es;
    int64_t ta = step_time(l, s0), tb = step_time(l, s1 - 1);
    *lo = ta < tb ? ta : tb;
    for (int64_t t = *lo; t < *lo + s1 - s0; t++) {
        copy_elems(at(l->ws, x_region(l) + (ws_step(l, t) * B + r0) * I, es),
                   at(l->x, (t * B + r0) * I, es), m * I, es);
    }
    if (!l->proj_rows) {
        return 0;
    }
    if (m == B) {   /* whole steps: one product over the chunk's consecutive rows */
        return ptl_gemm_packed(l->w_ih_p, (s1 - s0) * B, at(l->x, *lo * B * I, es), I,
                               DATA(char, hg), G, NULL, 0, 0.0);
    }
    for (int64_t t = *lo; t < *lo + s1 - s0; t++) {
        if (ptl_gemm_packed(l->w_ih_p, m, at(l->x, (t * B + r0) * I, es), I,
                            at(hg, ((t - *lo) * B + r0) * G, es), G, NULL, 0, 0.0) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Step t of the forward over the batch rows [r0, r1) (tp: the time of the step before, -1
 * for the first): h_{t-1} W_hh^T over the running rows among them (plus input_gates[t] but
 * for GRU), the cell, LSTM's projection, then the other rows' states carried over.  hg:
 * [B, G] scratch for GRU.  proj (proj_rows): x_t W_ih^T's rows [r0, r1), for input_gates[t].
 * 0 or -1. */
static int
layer_forward_step(const Layer *l, const char *gates, PtlTensorImpl *hg, const char *proj,
                   int64_t t, int64_t tp, int64_t r0, int64_t r1)
{
    int64_t B = l->B, H = l->H, P = l->P, G = l->G, run = running_rows(l, t);
    int64_t m = r1 - r0, n = run < r1 ? (run > r0 ? run - r0 : 0) : m;
    int64_t wt = ws_step(l, t), wp = ws_step(l, tp);
    size_t es = l->ops.es;
    char *ws = DATA(char, l->ws), *ht = at(l->out, (t * B + r0) * P, es);
    char *hgr = at(hg, r0 * (l->input_form ? l->I + P : G), es);
    const char *ig = l->input_form ? NULL
                     : proj != NULL ? proj : gates + (size_t)((t * B + r0) * G) * es;
    const char *hprev = tp < 0 ? at(l->hx, r0 * P, es) : at(l->out, (tp * B + r0) * P, es);
    char *cprev = NULL, *ct = NULL;
    if (l->mode == MODE_LSTM) {
        cprev = tp < 0 ? at(l->cx, r0 * H, es) : at(l->ws, region_at(l, 1) + (wp * B + r0) * H, es);
        ct = at(l->ws, region_at(l, 1) + (wt * B + r0) * H, es);
    }
    char *sum = l->mode == MODE_LSTM ? at(l->ws, (wt * B + r0) * G, es)
                : l->mode == MODE_GRU    ? NULL : ht;
    if (l->input_form) {   /* the input form: [x_t, h_{t-1}] [W_ih, W_hh]^T, one product */
        int64_t K = l->I + P;
        for (int64_t r = 0; r < n; r++) {
            copy_elems(hgr + (size_t)(r * K) * es, gates + (size_t)((t * B + r0 + r) * l->I) * es,
                       l->I, es);
            copy_elems(hgr + (size_t)(r * K + l->I) * es, hprev + (size_t)(r * P) * es, P, es);
        }
        if (n > 0 && ptl_gemm_packed(l->w_hh_p, n, hgr, K, sum, G, NULL, 0, 0.0) < 0) {
            return -1;
        }
    }
    else if (tp < 0 && l->hx_zero && sum != NULL) {   /* 0 W_hh^T + input_gates[t] */
        copy_elems(sum, ig, n * G, es);
    }
    else if (n > 0 && ptl_gemm_packed(l->w_hh_p, n, hprev, P, sum ? sum : hgr, G,
                                      sum ? ig : NULL, G, sum ? 1.0 : 0.0) < 0) {
        return -1;
    }
    if (n > 0 && l->mode == MODE_LSTM) {
        LstmCtx c = {.cx = cprev, .bi = l->b_ih, .bh = l->b_hh, .cy_out = ct, .ws_out = sum,
                     .h = H, .ops = l->ops};
        c.hy = l->w_hr ? at(l->ws, region_at(l, 2) + (wt * B + r0) * H, es) : ht;
        int64_t tn = 2 * t - tp;   /* the next step (Note [LSTM backward fetch]) */
        if (ig != NULL && proj == NULL && tp >= 0 && tn >= 0 && tn < l->T) {
            c.next_ws = gates + (size_t)((tn * B + r0) * G) * es;
        }
        if (ptl_parallel_for(0, n, row_grain(4 * H), rnn_lstm_fwd, &c) < 0 ||
            (l->w_hr && ptl_gemm_packed(l->w_hr_p, n, c.hy, H, ht, P, NULL, 0, 0.0) < 0)) {
            return -1;
        }
    }
    else if (n > 0 && l->mode == MODE_GRU) {
        GruCtx c = {.ig = ig, .hg = hgr, .hx = hprev, .bi = l->b_ih, .bh = l->b_hh,
                    .hy = ht, .ws_out = at(l->ws, (wt * B + r0) * 5 * H, es), .h = H,
                    .ops = l->ops};
        if (ptl_parallel_for(0, n, row_grain(5 * H), rnn_gru_fwd, &c) < 0) {
            return -1;
        }
    }
    else if (n > 0) {
        RnnCtx c = {.bi = l->b_ih, .bh = l->b_hh, .out = ht,
                    .width = H, .relu = l->mode == MODE_RNN_RELU, .ops = l->ops};
        if (ptl_parallel_for(0, n, row_grain(H), rnn_plain_fwd, &c) < 0) {
            return -1;
        }
    }
    if (n < m) {
        copy_elems(ht + (size_t)(n * P) * es, hprev + (size_t)(n * P) * es, (m - n) * P, es);
        if (ct != NULL) {
            copy_elems(ct + (size_t)(n * H) * es, cprev + (size_t)(n * H) * es, (m - n) * H, es);
        }
        if (l->w_hr != NULL) {   /* read by dW_hr's GEMM (times a zero dh) */
            memset(ws + (size_t)(region_at(l, 2) + (wt * B + r0 + n) * H) * es, 0,
                   (size_t)((m - n) * H) * es);
        }
    }
    return 0;
}

int (*ptl_device_rnn_step_hook)(const PtlDeviceRnnStepArgs *a);

/* The cell hook's arguments common to a step's passes. */
static PtlDeviceRnnStepArgs
step_args(const Layer *l, int pass, int64_t t)
{
    PtlDeviceRnnStepArgs a = {.pass = pass, .mode = l->mode, .dtype = (int32_t)l->out->dtype,
                              .n = running_rows(l, t), .B = l->B, .H = l->H, .P = l->P};
    return a;
}

/* layer_forward_step on the device: the step's GEMMs through the device GEMM (LSTM and RNN
 * add input_gates[t] as they store), then one cell launch over every row (the running
 * rows' cells, the others' carries), then LSTM's projection. */
static int
layer_forward_step_device(const Layer *l, PtlTensorImpl *gates, PtlTensorImpl *hg, int64_t t,
                          int64_t tp)
{
    int64_t B = l->B, H = l->H, P = l->P, G = l->G;
    size_t es = l->ops.es;
    PtlDeviceRnnStepArgs a = step_args(l, PTL_DEVICE_RNN_FORWARD, t);
    int64_t n = a.n, hoff = tp < 0 ? 0 : tp * B * P;
    PtlTensorImpl *hsrc = tp < 0 ? l->hx : l->out;
    Mat hprev = rows_at(hsrc, hoff, n, P), w_hh = transposed_at(l->w_hh, 0, P, G);
    Mat ig = rows_at(gates, t * B * G, n, G);
    a.bi = l->b_ih;
    a.bh = l->b_hh;
    a.hprev = at(hsrc, hoff, es);
    a.ht = at(l->out, t * B * P, es);
    int rc = 0;
    if (l->mode == MODE_LSTM) {
        a.cprev = tp < 0 ? DATA(char, l->cx) : at(l->ws, region_at(l, 1) + tp * B * H, es);
        a.ct = at(l->ws, region_at(l, 1) + t * B * H, es);
        a.ws = at(l->ws, t * B * G, es);
        a.r = l->w_hr != NULL ? at(l->ws, region_at(l, 2) + t * B * H, es) : NULL;
        rc = n > 0 ? mat_gemm_add(rows_at(l->ws, t * B * G, n, G), hprev, w_hh, ig) : 0;
    }
    else if (l->mode == MODE_GRU) {
        a.ig = at(gates, t * B * G, es);
        a.hg = DATA(char, hg);
        a.ws = at(l->ws, t * B * 5 * H, es);
        rc = n > 0 ? mat_gemm(rows_at(hg, 0, n, G), hprev, w_hh, 0.0) : 0;
    }
    else {
        rc = n > 0 ? mat_gemm_add(rows_at(l->out, t * B * P, n, P), hprev, w_hh, ig) : 0;
    }
    if (rc < 0 || ptl_device_rnn_step_hook(&a) < 0) {
        return -1;
    }
    if (n > 0 && l->w_hr != NULL) {
        return mat_gemm(rows_at(l->out, t * B * P, n, P),
                        rows_at(l->ws, region_at(l, 2) + t * B * H, n, H),
                        transposed_at(l->w_hr, 0, H, P), 0.0);
    }
    return 0;
}

/* The carried and per-step gradients of _ptl_rnn_layer_backward. */
typedef struct LayerGrads {
    PtlTensorImpl *gout;            /* grad_output [T, B, P], contiguous, or NULL */
    PtlTensorImpl *dh[2], *dc[2];   /* [B, P] and LSTM's [B, H]: this step's and the next */
    PtlTensorImpl *dr;              /* LSTM with proj_size: [B, H], the grad of o tanh(c_t) */
    PtlTensorImpl *dg, *dgh;        /* [T, B, G] input / hidden gates' grads (GRU: apart),
                                     * rows gs apart */
    int64_t gs;                     /* G, or an LSTM's on the CPU padded (layer_grads_new) */
    PtlTensorImpl *dhp;             /* LSTM with proj_size: [T, B, P], each step's dh */
    PtlTensorImpl *dx;              /* step_proj: [T, B, I], x's gradient dgates W_ih */
    PtlTensorImpl *bsum[2];         /* CPU, with biases: [ceil(B / BSUM_ROWS), G] dg's (GRU:
                                     * dgh's) sums by groups of rows (Note [Recurrent layer]) */
} LayerGrads;

/* Note [Recurrent layer threads]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The batch rows of a recurrent layer never meet: row b of every step reads only row b of
 * the step before (W_hh is shared, not mixed across rows).  So on several threads the CPU
 * loop runs whole: the rows are cut once into parts (one per thread, multiples of
 * LAYER_PART_ROWS rows, the GEMM's shortest tile) and each thread walks every step of its
 * part, one fork and one join per layer call, forward and backward.  Cutting each step
 * instead (its GEMM's columns, or its rows) met the other thread twice per step, and a
 * step of 32 x 128 @ 128 x 512 is 40 us: the pool's round trips ate the gain
 * (docs/performance.md, Recurrent layers).  A part's rows are computed by the same
 * formulas in the same order as on one thread, so the results do not depend on the number
 * of threads: every product in the loop goes through a packed panel (ptl_gemm_packed),
 * whose bits do not depend on how many rows a product has (Note [GEMM blocking]; ptl_gemm
 * takes its matrix-vector path for one row).  A layer of fewer than LAYER_SPLIT_MACS
 * multiply-adds per part (W_hh's, over every step) stays on one thread, as does the
 * device's loop. */

/* Rows per part: a multiple of this. */
#define LAYER_PART_ROWS 4
/* Batch rows a row of the bias sums holds (bias_sums_add): parts never split a group. */
#define BSUM_ROWS LAYER_PART_ROWS
/* Each part's hidden GEMMs have at least this many multiply-adds (about 70 us here). */
#define LAYER_SPLIT_MACS (1 << 21)

/* How many parts the CPU loop's rows are cut into (Note [Recurrent layer threads]). */
static int64_t
layer_parts(const Layer *l)
{
    if (l->dev || ptl_in_parallel_region()) {
        return 1;
    }
    double macs = (double)l->T * (double)l->B * (double)l->G * (double)l->P;
    int64_t parts = ptl_get_num_threads(), rows = l->B / LAYER_PART_ROWS;
    parts = rows < parts ? rows : parts;
    parts = macs / LAYER_SPLIT_MACS < (double)parts ? (int64_t)(macs / LAYER_SPLIT_MACS) : parts;
    return parts > 1 ? parts : 1;
}

/* The first row of part p of `parts` (p = parts: B). */
static int64_t
part_row(const Layer *l, int64_t parts, int64_t p)
{
    int64_t units = (l->B + LAYER_PART_ROWS - 1) / LAYER_PART_ROWS;
    int64_t r = p * units / parts * LAYER_PART_ROWS;
    return r < l->B ? r : l->B;
}

/* One layer call's loop over the parts (Note [Recurrent layer threads]). */
typedef struct LayerJob {
    const Layer *l;
    int64_t parts;
    const char *gates;      /* forward: input_gates' data */
    PtlTensorImpl *hg;      /* forward: GRU's scratch */
    LayerGrads *g;          /* backward */
} LayerJob;

static int
layer_forward_parts(void *ctx, int64_t p0, int64_t p1)
{
    const LayerJob *j = ctx;
    const Layer *l = j->l;
    int64_t r0 = part_row(l, j->parts, p0), r1 = part_row(l, j->parts, p1), lo = 0;
    for (int64_t s = 0; s < l->T; s++) {
        int64_t t = step_time(l, s), tp = s > 0 ? step_time(l, s - 1) : -1;
        if (l->step_proj && s % l->proj_steps == 0 &&
            project_steps(l, j->hg, s, s + l->proj_steps < l->T ? s + l->proj_steps : l->T,
                          r0, r1, &lo) < 0) {
            return -1;
        }
        const char *proj = l->proj_rows ? at(j->hg, ((t - lo) * l->B + r0) * l->G, l->ops.es)
                                        : NULL;
        if (layer_forward_step(l, j->gates, j->hg, proj, t, tp, r0, r1) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Every step, then hy (and LSTM's cy): the last step's states, or hx (cx) when T = 0. */
static int
layer_forward(const Layer *l, PtlTensorImpl *gates, PtlTensorImpl *hg, PtlTensorImpl *hy,
              PtlTensorImpl *cy)
{
    int64_t last = step_time(l, l->T - 1);
    if (l->dev) {
        for (int64_t s = 0; s < l->T; s++) {
            int64_t t = step_time(l, s), tp = s > 0 ? step_time(l, s - 1) : -1;
            if (layer_forward_step_device(l, gates, hg, t, tp) < 0) {
                return -1;
            }
        }
        if (l->step_proj && copy_rows(l->ws, x_region(l), l->x, l->T * l->B, l->I) < 0) {
            return -1;
        }
    }
    else {
        LayerJob j = {.l = l, .parts = layer_parts(l), .gates = DATA(char, gates), .hg = hg};
        if ((j.parts > 1 ? ptl_parallel_for(0, j.parts, 1, layer_forward_parts, &j)
                         : layer_forward_parts(&j, 0, 1)) < 0) {
            return -1;
        }
    }
    if (copy_from(hy, l->T > 0 ? l->out : l->hx, l->T > 0 ? last * l->B * l->P : 0) < 0) {
        return -1;
    }
    return cy == NULL ? 0 : copy_from(cy, l->T > 0 ? l->ws : l->cx,
                                      l->T > 0 ? region_at(l, 1) + ws_step(l, last) * l->B * l->H
                                               : 0);
}

/* The cells' backward of step t over the n running rows from row r0, into dg and dgh (and
 * dhp). */
static int
cell_backward(const Layer *l, LayerGrads *g, int k, int64_t t, int64_t tp, int64_t r0,
              int64_t n)
{
    int64_t B = l->B, H = l->H, P = l->P, G = l->G;
    size_t es = l->ops.es;
    char *dh = at(g->dh[k], r0 * P, es), *dg = at(g->dg, (t * B + r0) * g->gs, es);
    if (l->mode == MODE_LSTM) {
        LstmCtx c = {.ghy = dh, .gcy = at(g->dc[k], r0 * H, es), .gg = dg, .ggs = g->gs,
                     .cy = at(l->ws, region_at(l, 1) + (t * B + r0) * H, es),
                     .ws = at(l->ws, (t * B + r0) * G, es), .gcx = at(g->dc[1 - k], r0 * H, es),
                     .h = H, .ops = l->ops};
        c.cx = tp < 0 ? at(l->cx, r0 * H, es)
                      : at(l->ws, region_at(l, 1) + (tp * B + r0) * H, es);
        if (tp >= 0) {   /* the next step's rows (Note [LSTM backward fetch]); after it: tq */
            int64_t tq = 2 * tp - t;
            c.next_ws = at(l->ws, (tp * B + r0) * G, es);
            c.next_cx = tq >= 0 && tq < l->T ? at(l->ws, region_at(l, 1) + (tq * B + r0) * H, es)
                                             : NULL;
            c.next_gout = g->gout != NULL ? at(g->gout, (tp * B + r0) * P, es) : NULL;
            c.gout_w = P;
        }
        if (l->w_hr != NULL) {
            copy_elems(at(g->dhp, (t * B + r0) * P, es), dh, n * P, es);
            char *dr = at(g->dr, r0 * H, es);
            if (ptl_gemm_packed(l->w_hr_p, n, dh, P, dr, H, NULL, 0, 0.0) < 0) {
                return -1;
            }
            c.ghy = dr;
        }
        return ptl_parallel_for(0, n, row_grain(4 * H), rnn_lstm_bwd, &c);
    }
    if (l->mode == MODE_GRU) {
        GruCtx c = {.ghy = dh, .ws = at(l->ws, (t * B + r0) * 5 * H, es), .gig = dg,
                    .ghg = at(g->dgh, (t * B + r0) * G, es), .ghx = at(g->dh[1 - k], r0 * P, es),
                    .h = H, .ops = l->ops};
        return ptl_parallel_for(0, n, row_grain(5 * H), rnn_gru_bwd, &c);
    }
    RnnCtx c = {.gh = dh, .h = at(l->out, (t * B + r0) * P, es), .gg = dg,
                .width = H, .relu = l->mode == MODE_RNN_RELU, .ops = l->ops};
    return ptl_parallel_for(0, n, row_grain(H), rnn_plain_bwd, &c);
}

/* Bias sums: bsum's row q += step t's gate gradients of the rows [q, q + 1) BSUM_ROWS among
 * [r0, r0 + n), in row order, ((acc + a) + b) + c a pass, while they are cached.  Always 0. */
static int
bias_sums_add(const Layer *l, const LayerGrads *g, int64_t t, int64_t r0, int64_t n)
{
    size_t es = l->ops.es;
    int64_t off = t * l->B * g->gs, G = l->G;
    for (int i = 0; i < 2 && g->bsum[i] != NULL; i++) {
        PtlTensorImpl *v = i == 0 ? g->dg : g->dgh;
        for (int64_t r = r0, end; r < r0 + n; r = end) {
            end = (r / BSUM_ROWS + 1) * BSUM_ROWS < r0 + n ? (r / BSUM_ROWS + 1) * BSUM_ROWS
                                                          : r0 + n;
            char *acc = at(g->bsum[i], r / BSUM_ROWS * G, es);
            for (int64_t q = r; q < end; q += end - q >= 3 ? 3 : 1) {
                int three = end - q >= 3;
                l->ops.gate_sum(acc, acc, at(v, off + q * g->gs, es),
                                three ? at(v, off + (q + 1) * g->gs, es) : NULL,
                                three ? at(v, off + (q + 2) * g->gs, es) : NULL, G);
            }
        }
    }
    return 0;
}

/* Step t of the backward over the batch rows [r0, r1) (tp: the time of the forward's step
 * before it, -1 for the first), from dh[k] (dc[k]) to dh[1 - k] (dc[1 - k]): grad_output[t]
 * joins dh, the cell's backward over the running rows, dh_{t-1} = dgates W_hh there (GRU:
 * added to the cell's z dh); the other rows pass dh and dc through and get zero gate
 * gradients. */
static int
layer_backward_step(const Layer *l, LayerGrads *g, int k, int64_t t, int64_t tp, int64_t r0,
                    int64_t r1)
{
    int64_t B = l->B, H = l->H, P = l->P, G = l->G, run = running_rows(l, t);
    int64_t m = r1 - r0, n = run < r1 ? (run > r0 ? run - r0 : 0) : m;
    size_t es = l->ops.es;
    char *dh = at(g->dh[k], r0 * P, es), *dhn = at(g->dh[1 - k], r0 * P, es);
    PtlTensorImpl *dgh = l->mode == MODE_GRU ? g->dgh : g->dg;
    if (g->gout != NULL) {   /* dh += grad_output[t] */
        l->ops.gate_sum(dh, dh, at(g->gout, (t * B + r0) * P, es), NULL, NULL, m * P);
    }
    if (n > 0 && (cell_backward(l, g, k, t, tp, r0, n) < 0 ||
                  bias_sums_add(l, g, t, r0, n) < 0 ||
                  ptl_gemm_packed(l->w_hh_p, n, at(dgh, (t * B + r0) * g->gs, es), g->gs, dhn,
                                  P, NULL, 0, l->mode == MODE_GRU ? 1.0 : 0.0) < 0)) {
        return -1;
    }
    if (n < m) {
        int64_t first = t * B + r0 + n;   /* the first resting row of step t */
        copy_elems(dhn + (size_t)(n * P) * es, dh + (size_t)(n * P) * es, (m - n) * P, es);
        memset(at(g->dg, first * g->gs, es), 0, (size_t)((m - n) * g->gs) * es);
        if (l->mode == MODE_GRU) {
            memset(at(g->dgh, first * G, es), 0, (size_t)((m - n) * G) * es);
        }
        if (l->mode == MODE_LSTM) {
            copy_elems(at(g->dc[1 - k], (r0 + n) * H, es), at(g->dc[k], (r0 + n) * H, es),
                       (m - n) * H, es);
        }
        if (l->w_hr != NULL) {
            memset(at(g->dhp, first * P, es), 0, (size_t)((m - n) * P) * es);
        }
    }
    return 0;
}

/* The backward's loop over the rows of parts [p0, p1) (Note [Recurrent layer threads]); every
 * part ends in dh[T % 2]. */
static int
layer_backward_parts(void *ctx, int64_t p0, int64_t p1)
{
    const LayerJob *j = ctx;
    const Layer *l = j->l;
    int64_t r0 = part_row(l, j->parts, p0), r1 = part_row(l, j->parts, p1);
    int k = 0;
    for (int64_t i = l->T - 1; i >= 0; i--, k = 1 - k) {
        int64_t t = step_time(l, i), tp = i > 0 ? step_time(l, i - 1) : -1;
        if (layer_backward_step(l, j->g, k, t, tp, r0, r1) < 0) {
            return -1;
        }
    }
    return 0;
}

/* layer_backward_step on the device: grad_output[t] into dh (and LSTM's projected dh
 * kept) in a launch of its own, LSTM's dh W_hr, one cell launch over every row, then
 * dh_{t-1} = dgates W_hh over the running rows (Note [CUDA recurrent layer]). */
static int
layer_backward_step_device(const Layer *l, LayerGrads *g, int k, int64_t t, int64_t tp)
{
    int64_t B = l->B, H = l->H, P = l->P, G = l->G;
    size_t es = l->ops.es;
    PtlDeviceRnnStepArgs a = step_args(l, PTL_DEVICE_RNN_BACKWARD_ADD, t);
    int64_t n = a.n;
    PtlTensorImpl *ghy = g->dh[k];
    a.dh = DATA(char, g->dh[k]);
    if (g->gout != NULL || l->w_hr != NULL) {
        a.gout = at(g->gout, t * B * P, es);
        a.dhp = at(g->dhp, t * B * P, es);
        if (ptl_device_rnn_step_hook(&a) < 0) {
            return -1;
        }
    }
    if (n > 0 && l->w_hr != NULL) {
        if (mat_gemm(rows_at(g->dr, 0, n, H), rows_at(g->dh[k], 0, n, P),
                     rows_at(l->w_hr, 0, P, H), 0.0) < 0) {
            return -1;
        }
        ghy = g->dr;
    }
    a.pass = PTL_DEVICE_RNN_BACKWARD;
    a.ghy = DATA(char, ghy);
    a.dhn = DATA(char, g->dh[1 - k]);
    a.dc = DATA(char, g->dc[k]);
    a.dcn = DATA(char, g->dc[1 - k]);
    a.dg = at(g->dg, t * B * G, es);
    a.dgh = at(g->dgh, t * B * G, es);
    if (l->mode == MODE_LSTM) {
        a.ws = at(l->ws, t * B * G, es);
        a.ct = at(l->ws, region_at(l, 1) + t * B * H, es);
        a.cprev = tp < 0 ? DATA(char, l->cx) : at(l->ws, region_at(l, 1) + tp * B * H, es);
    }
    else if (l->mode == MODE_GRU) {
        a.ws = at(l->ws, t * B * 5 * H, es);
    }
    else {
        a.ht = at(l->out, t * B * P, es);
    }
    if (ptl_device_rnn_step_hook(&a) < 0) {
        return -1;
    }
    return n == 0 ? 0 : mat_gemm(rows_at(g->dh[1 - k], 0, n, P),
                                 rows_at(l->mode == MODE_GRU ? g->dgh : g->dg, t * B * G, n, G),
                                 rows_at(l->w_hh, 0, G, P), l->mode == MODE_GRU ? 1.0 : 0.0);
}

/* dst = src (any strides), or zeros when src is NULL, on any device.  0 or -1. */
static int
fill_from(PtlTensorImpl *dst, PtlTensorImpl *src)
{
    PtlIValue zero = ptl_iv_double(0.0);
    return src != NULL ? ptl_copy_into(dst, src) : ptl_fill_scalar(dst, &zero);
}

/* out [cols] = the column sums of v [rows, cols] (contiguous), in v's dtype: on the CPU in
 * row order, on the device as ones[1, rows] v through the device GEMM (no dispatcher call,
 * as the loop runs without the GIL).  0 or -1. */
static int
column_sums(const Layer *l, PtlTensorImpl *v, PtlTensorImpl *out)
{
    if (!l->dev) {
        rnn_sum_rows(v, DATA(char, out));
        return 0;
    }
    PtlIValue one = ptl_iv_double(1.0);
    int64_t rows = v->sizes[0], cols = v->sizes[1];
    PtlTensorImpl *ones = new_1d(rows, v);
    int rc = ones != NULL && ptl_fill_scalar(ones, &one) == 0
                 ? mat_gemm(rows_at(out, 0, 1, cols), rows_at(ones, 0, 1, rows),
                            rows_at(v, 0, rows, cols), 0.0)
                 : -1;
    ptl_xdecref(ones);
    return rc;
}

/* The weights' gradients, each over all steps at once (Note [Recurrent layer]); gb_ih,
 * gb_hh and gw_hr may be NULL, and gw_hr is W_ih's with step_proj (dgates^T x, the product
 * nn.functional.linear's backward takes: Note [LSTM step projections]). */
static int
layer_weight_grads(const Layer *l, const LayerGrads *g, PtlTensorImpl *gw_hh,
                   PtlTensorImpl *gb_ih, PtlTensorImpl *gb_hh, PtlTensorImpl *gw_hr)
{
    int64_t T = l->T, B = l->B, H = l->H, P = l->P, G = l->G;
    /* the steps after the first taken start from output[t - 1] (reverse: output[t + 1]) */
    int64_t first = step_time(l, 0), rest = l->reverse ? 0 : 1;
    PtlTensorImpl *grads[4] = {gw_hh, gb_ih, gb_hh, gw_hr}, *v;
    if (T == 0) {
        for (int i = 0; i < 4; i++) {
            if (grads[i] != NULL && fill_from(grads[i], NULL) < 0) {
                return -1;
            }
        }
        return 0;
    }
    int64_t gs = g->gs;   /* dgates^T, read in place (Note [Recurrent layer]) */
    Mat gw = rows_at(gw_hh, 0, G, P);   /* hx's term is zero when hx is and its gates finite */
    int hx_term = !l->hx_zero || !rnn_all_finite(DATA(char, g->dgh) + first * B * gs * l->ops.es,
                                                 B, G, gs, l->ops.es);
    if (mat_gemm(gw, (Mat){g->dgh, rest * B * gs, G, (T - 1) * B, 1, gs},
                 rows_at(l->out, (1 - rest) * B * P, (T - 1) * B, P), 0.0) < 0 ||
        (hx_term && mat_gemm(gw, (Mat){g->dgh, first * B * gs, G, B, 1, gs},
                             rows_at(l->hx, 0, B, P), 1.0) < 0)) {
        return -1;
    }
    if (gw_hr != NULL && l->step_proj &&
        mat_gemm(rows_at(gw_hr, 0, G, l->I), (Mat){g->dg, 0, G, T * B, 1, g->gs},
                 rows_at(l->ws, x_region(l), T * B, l->I), 0.0) < 0) {
        return -1;
    }
    if (gw_hr != NULL && !l->step_proj &&
        mat_gemm(rows_at(gw_hr, 0, P, H), transposed_at(g->dhp, 0, P, T * B),
                 rows_at(l->ws, region_at(l, 2), T * B, H), 0.0) < 0) {
        return -1;
    }
    for (int i = 1; i < 3; i++) {
        if (grads[i] == NULL) {
            continue;
        }
        /* LSTM's and RNN's biases get the same gradient (dgh is dg): one column sum */
        if (i == 2 && g->dgh == g->dg && grads[1] != NULL) {
            if (ptl_copy_into(grads[2], grads[1]) < 0) {
                return -1;
            }
            continue;
        }
        if (g->bsum[0] != NULL) {
            rnn_sum_rows(g->bsum[i == 2 && g->bsum[1] != NULL], DATA(char, grads[i]));
            continue;
        }
        if ((v = mat_view(rows_at(i == 1 ? g->dg : g->dgh, 0, T * B, G))) == NULL) {
            return -1;
        }
        int rc = column_sums(l, v, grads[i]);
        ptl_decref(v);
        if (rc < 0) {
            return -1;
        }
    }
    return 0;
}

/* ---- the recurrent layer's checks and kernels ---- */

/* Whether the hidden GEMMs' multiply-adds make the loop worth dropping the GIL. */
static void *
layer_nogil_begin(const Layer *l)
{
    return (double)l->T * l->B * l->G * l->P >= LAYER_NOGIL_FLOPS ? ptl_nogil_begin() : NULL;
}

/* Whether the forward's caller may want its gradient (grad mode on and an input that
 * requires one): only then is the workspace kept for every step (Note [Recurrent layer]). */
static int
layer_wants_grad(PtlTensorImpl *const *in, int k)
{
    for (int i = 0; ptl_tls()->grad_enabled && i < k; i++) {
        if (in[i] != NULL && in[i]->autograd_meta != NULL) {
            return 1;
        }
    }
    return 0;
}

/* _ptl_rnn_layer(input_gates [T, B, G], hx [B, P], cx [B, H]?, w_hh [G, P], b_ih [G]?,
 *                b_hh [G]?, w_hr [P, H]?, int mode, bool reverse, batch_sizes [T]?) ->
 *     (output [T, B, P], workspace (Note [Recurrent layer]), hy [B, P], cy [B, H] or None);
 *     mode + MODE_INPUT_FORM: x [T, B, I] for input_gates, [W_ih, W_hh] [G, I + P] for w_hh;
 *     LSTM + MODE_STEP_PROJECTIONS: x [T, B, I] for input_gates, W_ih [G, I] for w_hr */
static int
rnn_layer_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    const char *fn = "_ptl_rnn_layer";
    PtlTensorImpl *in[7], *c[7] = {NULL}, *bs = NULL, *hg = NULL, *out = NULL, *ws = NULL;
    PtlTensorImpl *hy = NULL, *cy = NULL, *gates = NULL;
    Layer l;
    (void)ks;
    for (int i = 0; i < 7; i++) {
        in[i] = s[i].tag == PTL_IV_TENSOR ? s[i].u.t : NULL;
    }
    RnnArg a[7] = {{in[0], "input_gates", 1}, {in[1], "hx", 2}, {in[2], "cx", 3},
                {in[3], "w_hh", 4}, {in[4], "b_ih", 5}, {in[5], "b_hh", 6}, {in[6], "w_hr", 7}};
    memset(&l, 0, sizeof(l));
    l.mode = (int)s[7].u.i;
    l.reverse = s[8].u.b;
    int input_form = l.mode >= MODE_INPUT_FORM && l.mode < MODE_INPUT_FORM + MODE_GRU;
    l.step_proj = l.mode == MODE_STEP_PROJECTIONS + MODE_LSTM;
    l.mode -= input_form ? MODE_INPUT_FORM : l.step_proj ? MODE_STEP_PROJECTIONS : 0;
    l.input_form = input_form;
    if (rnn_check_dtypes(op, a, 7) < 0 || rnn_check_dim(fn, a[0], 3) < 0 ||
        ((input_form || l.step_proj) && rnn_check_dim(fn, a[3], 2) < 0)) {
        return -1;
    }
    l.T = in[0]->sizes[0];
    l.B = in[0]->sizes[1];
    l.G = input_form || l.step_proj ? in[3]->sizes[0] : in[0]->sizes[2];
    l.I = input_form || l.step_proj ? in[0]->sizes[2] : 0;
    if (input_form && (layer_wants_grad(in, 7) || in[0]->device.type != PTL_DEVICE_CPU)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: the input form (mode %d) is for CPU "
                             "tensors that need no gradient", fn, (int)s[7].u.i);
    }
    if (l.step_proj && in[0]->device.type != PTL_DEVICE_CPU) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: the step projections (mode %d) are for "
                             "CPU tensors", fn, (int)s[7].u.i);
    }
    int64_t ih_sizes[2] = {l.G, l.I};
    RnnArg none = {NULL, "w_hr", 7};
    if (rnn_check_layer(fn, l.mode, l.B, l.G, input_form ? l.I : 0, a[1], a[2], a[3],
                        l.step_proj ? none : a[6], &l.H, &l.P) < 0 ||
        (l.step_proj && rnn_check_size(fn, a[6], 2, ih_sizes) < 0) ||
        rnn_check_given(fn, a[5], a[4].t != NULL, "b_ih and b_hh must be given together") < 0 ||
        (a[4].t != NULL && (rnn_check_size(fn, a[4], 1, &l.G) < 0 ||
                            rnn_check_size(fn, a[5], 1, &l.G) < 0))) {
        return -1;
    }
    if (rnn_check_batch_sizes(fn, (RnnArg){s[9].tag == PTL_IV_TENSOR ? s[9].u.t : NULL,
                                           "batch_sizes", 10}, l.T, l.B, &bs) < 0 ||
        contiguous_all(in, c, 7) < 0) {
        goto error;
    }
    l.batch_sizes = bs != NULL ? DATA(const int64_t, bs) : NULL;
    l.hx = c[1];
    l.cx = c[2];
    l.w_hh = c[3];
    l.b_ih = DATA(void, c[4]);
    l.b_hh = DATA(void, c[5]);
    l.w_hr = l.step_proj ? NULL : c[6];
    l.w_ih = l.step_proj ? c[6] : NULL;
    l.x = l.step_proj ? c[0] : NULL;
    l.ops = rnn_cell_ops(in[0]->dtype);
    l.dev = !input_form && nn_on_device(in[0], ptl_device_rnn_step_hook != NULL);
    l.proj_rows = l.step_proj && !l.dev &&
                  ptl_gemm_packed_rows_exact(in[0]->dtype, l.T * l.B, l.G, l.I);
    l.hx_zero = !l.dev && rnn_all_zero(DATA(void, l.hx), l.B * l.P, l.ops.es) &&
                rnn_all_finite(DATA(void, l.w_hh), 1, l.w_hh->numel, 0, l.ops.es);
    l.wt = l.dev || l.T <= 2 || (!input_form && layer_wants_grad(in, 7)) ? l.T : 2;
    if (!l.dev) {
        int64_t k = input_form ? l.I + l.P : l.P;
        l.w_hh_p = ptl_gemm_pack_b(in[0]->dtype, k, l.G, DATA(void, l.w_hh), 1, k);
        l.w_hr_p = l.w_hr != NULL
                       ? ptl_gemm_pack_b(in[0]->dtype, l.H, l.P, DATA(void, l.w_hr), 1, l.H)
                       : NULL;
        l.w_ih_p = l.proj_rows
                       ? ptl_gemm_pack_b(in[0]->dtype, l.I, l.G, DATA(void, l.w_ih), 1, l.I)
                       : NULL;
    }
    if (l.step_proj && !l.proj_rows) {   /* x W_ih^T as one product, as F.linear's */
        int64_t g_sizes[3] = {l.T, l.B, l.G};
        if ((gates = ptl_empty(3, g_sizes, in[0]->dtype, in[0]->device)) == NULL ||
            mat_gemm(rows_at(gates, 0, l.T * l.B, l.G), rows_at(l.x, 0, l.T * l.B, l.I),
                     transposed_at(l.w_ih, 0, l.I, l.G), 0.0) < 0) {
            goto error;
        }
    }
    int64_t out_sizes[3] = {l.T, l.B, l.P}, ws_numel = workspace_numel(&l);
    out = ptl_empty(3, out_sizes, in[0]->dtype, in[0]->device);
    ws = new_1d(ws_numel, in[0]);
    l.proj_steps = l.proj_rows ? proj_steps(&l) : 1;
    hg = new_2d(l.proj_steps * l.B, input_form ? l.I + l.P : l.G, in[0]);
    hy = new_2d(l.B, l.P, in[0]);
    cy = l.mode == MODE_LSTM ? new_2d(l.B, l.H, in[0]) : NULL;
    if (out == NULL || ws == NULL || hg == NULL || hy == NULL ||
        (!l.dev && (l.w_hh_p == NULL || (l.w_hr != NULL && l.w_hr_p == NULL) ||
                    (l.proj_rows && l.w_ih_p == NULL))) ||
        (l.mode == MODE_LSTM && cy == NULL)) {
        goto error;
    }
    l.out = out;
    l.ws = ws;
    void *token = layer_nogil_begin(&l);
    int rc = layer_forward(&l, gates != NULL ? gates : c[0], hg, hy, cy);
    ptl_nogil_end(token);
    if (rc < 0) {
        goto error;
    }
    ptl_xdecref(gates);
    release_all(c, 7);
    ptl_gemm_packed_b_free(l.w_hh_p);
    ptl_gemm_packed_b_free(l.w_hr_p);
    ptl_gemm_packed_b_free(l.w_ih_p);
    ptl_xdecref(bs);
    ptl_decref(hg);
    s[0] = ptl_iv_tensor(out);
    s[1] = ptl_iv_tensor(ws);
    s[2] = ptl_iv_tensor(hy);
    s[3] = cy != NULL ? ptl_iv_tensor(cy) : ptl_iv_none();
    return 0;
error:
    ptl_xdecref(gates);
    release_all(c, 7);
    ptl_gemm_packed_b_free(l.w_hh_p);
    ptl_gemm_packed_b_free(l.w_hr_p);
    ptl_gemm_packed_b_free(l.w_ih_p);
    ptl_xdecref(bs);
    ptl_xdecref(hg);
    ptl_xdecref(out);
    ptl_xdecref(ws);
    ptl_xdecref(hy);
    ptl_xdecref(cy);
    return -1;
}

static void
layer_grads_release(LayerGrads *g)
{
    PtlTensorImpl **all[12] = {&g->gout, &g->dh[0], &g->dh[1], &g->dc[0], &g->dc[1], &g->dr,
                               &g->dg, &g->dgh, &g->dhp, &g->bsum[0], &g->bsum[1], &g->dx};
    for (int i = 0; i < 12; i++) {
        PTL_CLEAR(*all[i]);
    }
}

/* The backward's buffers (new refs in g): dh and dc start as copies of grad_hy and grad_cy
 * (zeros for None), since they are written in place. */
static int
layer_grads_new(const Layer *l, LayerGrads *g, PtlTensorImpl *ghy, PtlTensorImpl *gcy,
                const PtlTensorImpl *like, int has_bias)
{
    int64_t sizes[3] = {l->T, l->B, l->G}, psizes[3] = {l->T, l->B, l->P};
    int lstm = l->mode == MODE_LSTM;
    g->dh[0] = new_2d(l->B, l->P, like);
    g->dh[1] = new_2d(l->B, l->P, like);
    if (lstm) {
        g->dc[0] = new_2d(l->B, l->H, like);
        g->dc[1] = new_2d(l->B, l->H, like);
    }
    /* an LSTM's gate gradients on the CPU: rows an odd number of cache lines apart, so that
     * the weights' GEMMs read dgates^T in place (Note [Recurrent layer]) */
    g->gs = lstm && !l->dev && l->G * (int64_t)l->ops.es % 128 == 0
                ? l->G + 64 / (int64_t)l->ops.es : l->G;
    int64_t rows[3] = {l->T, l->B, g->gs}, strides[3] = {l->B * g->gs, g->gs, 1};
    PtlTensorImpl *buf = ptl_empty(3, rows, like->dtype, like->device);
    g->dg = buf != NULL ? ptl_tensor_impl_view(buf, 3, sizes, strides, 0) : NULL;
    ptl_xdecref(buf);
    if (l->mode == MODE_GRU) {
        g->dgh = ptl_empty(3, sizes, like->dtype, like->device);
    }
    else if (g->dg != NULL) {
        ptl_incref(g->dg);
        g->dgh = g->dg;
    }
    if (l->w_hr != NULL) {
        g->dr = new_2d(l->B, l->H, like);
        g->dhp = ptl_empty(3, psizes, like->dtype, like->device);
    }
    if (g->dh[0] == NULL || g->dh[1] == NULL || g->dg == NULL || g->dgh == NULL ||
        (lstm && (g->dc[0] == NULL || g->dc[1] == NULL)) ||
        (l->w_hr != NULL && (g->dr == NULL || g->dhp == NULL))) {
        return -1;
    }
    for (int i = 0; has_bias && !l->dev && i < (l->mode == MODE_GRU ? 2 : 1); i++) {
        int64_t groups = (l->B + BSUM_ROWS - 1) / BSUM_ROWS;
        if ((g->bsum[i] = new_2d(groups, l->G, like)) == NULL) {
            return -1;
        }
        if (groups * l->G > 0) {
            memset(ptl_tensor_data(g->bsum[i]), 0, (size_t)(groups * l->G) * l->ops.es);
        }
    }
    return fill_from(g->dh[0], ghy) < 0 || (lstm && fill_from(g->dc[0], gcy) < 0) ? -1 : 0;
}

/* _ptl_rnn_layer_backward(grad_output [T, B, P]?, grad_hy [B, P]?, grad_cy [B, H]?, hx, cx?,
 *     w_hh, w_hr?, output, workspace, int mode, bool reverse, batch_sizes?, bool has_bias)
 *     -> (grad_input_gates [T, B, G], grad_hx [B, P], grad_cx [B, H] or None,
 *         grad_weights [w_hh, then b_ih and b_hh with has_bias, then w_hr when given]):
 *     the forward's arguments and outputs as _ptl_rnn_layer took and returned them (with step
 *     projections: x's gradient for grad_input_gates, W_ih's for w_hr's). */
static int
rnn_layer_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    const char *fn = "_ptl_rnn_layer_backward";
    PtlTensorImpl *in[9], *c[9] = {NULL}, *bs = NULL, *w[4] = {NULL, NULL, NULL, NULL};
    PtlTensorImpl **list = NULL;
    LayerGrads g;
    Layer l;
    int k = 0, has_bias = s[12].u.b, nw = 0;
    (void)ks;
    for (int i = 0; i < 9; i++) {
        in[i] = s[i].tag == PTL_IV_TENSOR ? s[i].u.t : NULL;
    }
    RnnArg a[9] = {{in[7], "output", 8}, {in[0], "grad_output", 1}, {in[1], "grad_hy", 2},
                {in[2], "grad_cy", 3}, {in[3], "hx", 4}, {in[4], "cx", 5}, {in[5], "w_hh", 6},
                {in[6], "w_hr", 7}, {in[8], "workspace", 9}};
    memset(&l, 0, sizeof(l));
    memset(&g, 0, sizeof(g));
    l.mode = (int)s[9].u.i;
    l.reverse = s[10].u.b;
    l.step_proj = l.mode == MODE_STEP_PROJECTIONS + MODE_LSTM;
    l.mode -= l.step_proj ? MODE_STEP_PROJECTIONS : 0;
    if (rnn_check_dtypes(op, a, 9) < 0 || rnn_check_dim(fn, a[0], 3) < 0 ||
        rnn_check_dim(fn, a[6], 2) < 0 || (l.step_proj && rnn_check_dim(fn, a[7], 2) < 0)) {
        return -1;
    }
    if (l.step_proj && in[7]->device.type != PTL_DEVICE_CPU) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: the step projections (mode %d) are for "
                             "CPU tensors", fn, (int)s[9].u.i);
    }
    l.T = in[7]->sizes[0];
    l.B = in[7]->sizes[1];
    l.G = in[5]->sizes[0];
    l.I = l.step_proj ? in[6]->sizes[1] : 0;
    l.wt = l.T;
    int64_t ih_sizes[2] = {l.G, l.I};
    RnnArg none = {NULL, "w_hr", 7};
    if (rnn_check_layer(fn, l.mode, l.B, l.G, 0, a[4], a[5], a[6], l.step_proj ? none : a[7],
                        &l.H, &l.P) < 0 ||
        (l.step_proj && rnn_check_size(fn, a[7], 2, ih_sizes) < 0)) {
        return -1;
    }
    int64_t out_sizes[3] = {l.T, l.B, l.P}, h_sizes[2] = {l.B, l.P}, c_sizes[2] = {l.B, l.H};
    /* its contiguous copy below; workspace_numel asks whether it is given */
    l.w_hr = l.step_proj ? NULL : in[6];
    int64_t ws_numel = workspace_numel(&l);
    if (rnn_check_size(fn, a[0], 3, out_sizes) < 0 || rnn_check_size(fn, a[8], 1, &ws_numel) < 0 ||
        (in[0] != NULL && rnn_check_size(fn, a[1], 3, out_sizes) < 0) ||
        (in[1] != NULL && rnn_check_size(fn, a[2], 2, h_sizes) < 0) ||
        (l.mode != MODE_LSTM && rnn_check_given(fn, a[3], 0, "grad_cy is for LSTM only") < 0) ||
        (in[2] != NULL && rnn_check_size(fn, a[3], 2, c_sizes) < 0)) {
        return -1;
    }
    if (rnn_check_batch_sizes(fn, (RnnArg){s[11].tag == PTL_IV_TENSOR ? s[11].u.t : NULL,
                                           "batch_sizes", 12}, l.T, l.B, &bs) < 0 ||
        contiguous_all(in, c, 9) < 0) {
        goto error;
    }
    l.batch_sizes = bs != NULL ? DATA(const int64_t, bs) : NULL;
    l.hx = c[3];
    l.cx = c[4];
    l.w_hh = c[5];
    l.w_hr = l.step_proj ? NULL : c[6];
    l.w_ih = l.step_proj ? c[6] : NULL;
    l.out = c[7];
    l.ws = c[8];
    l.ops = rnn_cell_ops(in[7]->dtype);
    g.gout = c[0];
    c[0] = NULL;
    w[0] = new_2d(l.G, l.P, in[7]);
    if (has_bias) {
        w[1] = new_1d(l.G, in[7]);
        w[2] = new_1d(l.G, in[7]);
    }
    if (l.w_hr != NULL || l.step_proj) {
        w[3] = l.step_proj ? new_2d(l.G, l.I, in[7]) : new_2d(l.P, l.H, in[7]);
    }
    if (l.step_proj) {
        int64_t x_sizes[3] = {l.T, l.B, l.I};
        g.dx = ptl_empty(3, x_sizes, in[7]->dtype, in[7]->device);
    }
    l.dev = nn_on_device(in[7], ptl_device_rnn_step_hook != NULL);
    /* W_hh is not in dW_hh's hx term: only the first step's gate gradients are checked */
    l.hx_zero = !l.dev && rnn_all_zero(DATA(void, l.hx), l.B * l.P, l.ops.es);
    if (!l.dev) {
        l.w_hh_p = ptl_gemm_pack_b(in[7]->dtype, l.G, l.P, DATA(void, l.w_hh), l.P, 1);
        l.w_hr_p = l.w_hr != NULL
                       ? ptl_gemm_pack_b(in[7]->dtype, l.P, l.H, DATA(void, l.w_hr), l.H, 1)
                       : NULL;
    }
    if (layer_grads_new(&l, &g, c[1], c[2], in[7], has_bias) < 0 || w[0] == NULL ||
        (!l.dev && (l.w_hh_p == NULL || (l.w_hr != NULL && l.w_hr_p == NULL) ||
                    (l.step_proj && g.dx == NULL))) ||
        (has_bias && (w[1] == NULL || w[2] == NULL)) ||
        ((l.w_hr != NULL || l.step_proj) && w[3] == NULL)) {
        goto error;
    }
    void *token = layer_nogil_begin(&l);
    int rc = 0;
    if (l.dev) {
        for (int64_t i = l.T - 1; i >= 0 && rc == 0; i--, k = 1 - k) {
            int64_t t = step_time(&l, i), tp = i > 0 ? step_time(&l, i - 1) : -1;
            rc = layer_backward_step_device(&l, &g, k, t, tp);
        }
    }
    else {
        LayerJob j = {.l = &l, .parts = layer_parts(&l), .g = &g};
        rc = j.parts > 1 ? ptl_parallel_for(0, j.parts, 1, layer_backward_parts, &j)
                         : layer_backward_parts(&j, 0, 1);
        k = (int)(l.T % 2);
    }
    rc = rc < 0 ? -1 : layer_weight_grads(&l, &g, w[0], w[1], w[2], w[3]);
    if (rc == 0 && l.step_proj && l.T * l.B > 0) {   /* dx = dgates W_ih, F.linear's product */
        rc = mat_gemm(rows_at(g.dx, 0, l.T * l.B, l.I), (Mat){g.dg, 0, l.T * l.B, l.G, g.gs, 1},
                      rows_at(l.w_ih, 0, l.G, l.I), 0.0);
    }
    ptl_nogil_end(token);
    if (rc < 0 || (list = ptl_tensorlist_new(4)) == NULL) {
        goto error;
    }
    for (int i = 0; i < 4; i++) {
        if (w[i] != NULL) {
            list[nw++] = w[i];
            w[i] = NULL;
        }
    }
    s[0] = ptl_iv_tensor(l.step_proj ? g.dx : g.dg);
    s[1] = ptl_iv_tensor(g.dh[k]);
    s[2] = l.mode == MODE_LSTM ? ptl_iv_tensor(g.dc[k]) : ptl_iv_none();
    *(l.step_proj ? &g.dx : &g.dg) = NULL;
    g.dh[k] = g.dc[k] = NULL;
    release_all(c, 9);
    ptl_gemm_packed_b_free(l.w_hh_p);
    ptl_gemm_packed_b_free(l.w_hr_p);
    ptl_xdecref(bs);
    layer_grads_release(&g);
    return ptl_set_tensorlist(&s[3], list, nw, 0);
error:
    release_all(c, 9);
    ptl_gemm_packed_b_free(l.w_hh_p);
    ptl_gemm_packed_b_free(l.w_hr_p);
    ptl_xdecref(bs);
    layer_grads_release(&g);
    release_all(w, 4);
    return -1;
}

static const PtlKernelReg rnn_kernels[] = {
    {PTL_OP__thnn_fused_lstm_cell, PTL_KEY_CPU, rnn_lstm_cell_cpu},
    {PTL_OP__thnn_fused_lstm_cell_backward_impl, PTL_KEY_CPU, rnn_lstm_cell_backward_cpu},
    {PTL_OP__thnn_fused_gru_cell, PTL_KEY_CPU, rnn_gru_cell_cpu},
    {PTL_OP__thnn_fused_gru_cell_backward, PTL_KEY_CPU, rnn_gru_cell_backward_cpu},
    {PTL_OP__ptl_rnn_layer, PTL_KEY_CPU, rnn_layer_cpu},
    {PTL_OP__ptl_rnn_layer_backward, PTL_KEY_CPU, rnn_layer_backward_cpu},
};
PTL_DEFINE_REGISTER(rnn_kernels)
