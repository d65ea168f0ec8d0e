/* rnn.c -- the fused recurrent cells: _thnn_fused_lstm_cell, _thnn_fused_gru_cell and their
 * backward kernels.  Mirrors ATen/native/cuda/RNN.cu (PyTorch has these only for CUDA; the
 * CPU versions here let nn.LSTM / nn.GRU run one GEMM and one fused kernel per time step).
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
 * biases get it; two for GRU, where the n gate differs, stacked in one [2, 3H] tensor).  Every input
 * is used contiguous (a copy when it is not); outputs are new contiguous tensors. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../c10/cpu_features.h"
#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "../scalar_math.h"
#include "native.h"
#include "vec_math.h"

/* ---- nonlinearities over an array, in place ---- */

#ifdef PTL_HAVE_AVX2_KERNELS
/* y = f(y) on n floats, 8 at a time, the tail through a masked load and store */
#define DEFINE_ARRAY_AVX2(NAME, VF)                                         \
    PTL_AVX2 static void                                                    \
    NAME(void *p, int64_t n)                                                \
    {                                                                       \
        float *y = p;                                                       \
        int64_t i = 0;                                                      \
        for (; i + 8 <= n; i += 8) {                                        \
            _mm256_storeu_ps(y + i, VF(_mm256_loadu_ps(y + i)));            \
        }                                                                   \
        if (i < n) {                                                        \
            __m256i m = ptl_vm_tail_mask(n - i);                            \
            _mm256_maskstore_ps(y + i, m, VF(_mm256_maskload_ps(y + i, m))); \
        }                                                                   \
    }
DEFINE_ARRAY_AVX2(sigmoid_f_avx2, ptl_vm_sigmoid_ps)
DEFINE_ARRAY_AVX2(tanh_f_avx2, ptl_vm_tanh_ps)
#endif

static void
sigmoid_f_portable(void *p, int64_t n)
{
    float *y = p;
    for (int64_t i = 0; i < n; i++) {
        y[i] = ptl_sigmoid_f(y[i]);
    }
}

static void
tanh_f_portable(void *p, int64_t n)
{
    float *y = p;
    for (int64_t i = 0; i < n; i++) {
        y[i] = tanhf(y[i]);
    }
}

static void
sigmoid_d(void *p, int64_t n)
{
    double *y = p;
    for (int64_t i = 0; i < n; i++) {
        y[i] = ptl_sigmoid_d(y[i]);
    }
}

static void
tanh_d(void *p, int64_t n)
{
    double *y = p;
    for (int64_t i = 0; i < n; i++) {
        y[i] = tanh(y[i]);
    }
}

/* ---- the cells' formulas over one batch row, typed so that they vectorize ---- */

/* gate_sum: w = ig + hg (+ bi + bh), n elements: the gates before their nonlinearities.
 * mul: y = o y. */
#define DEFINE_GATE_ROWS(T, SUF)                                                             \
    static void                                                                              \
    gate_sum_##SUF(void *wp, const void *igp, const void *hgp, const void *bip,              \
                   const void *bhp, int64_t n)                                               \
    {                                                                                        \
        T *w = wp;                                                                           \
        const T *ig = igp, *hg = hgp, *bi = bip, *bh = bhp;                                  \
        for (int64_t k = 0; k < n; k++) {                                                    \
            w[k] = ig[k] + hg[k];                                                            \
        }                                                                                    \
        if (bi != NULL) {                                                                    \
            for (int64_t k = 0; k < n; k++) {                                                \
                w[k] = w[k] + bi[k] + bh[k];                                                 \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
    static void                                                                              \
    mul_##SUF(void *yp, const void *op, int64_t n)                                           \
    {                                                                                        \
        T *y = yp;                                                                           \
        const T *o = op;                                                                     \
        for (int64_t j = 0; j < n; j++) {                                                    \
            y[j] = o[j] * y[j];                                                              \
        }                                                                                    \
    }

/* lstm_state: cy = f cx + i g and hy = cy from the activated gates w = (i, f, g, o).
 * lstm_grad: the gates' grads and gcx (Note [Fused cells]); gcx holds tanh(cy) on entry. */
#define DEFINE_LSTM_ROWS(T, SUF)                                                             \
    static void                                                                              \
    lstm_state_##SUF(void *cyp, void *hyp, const void *wp, const void *cxp, int64_t h)       \
    {                                                                                        \
        T *cy = cyp, *hy = hyp;                                                              \
        const T *w = wp, *cx = cxp;                                                          \
        for (int64_t j = 0; j < h; j++) {                                                    \
            cy[j] = w[h + j] * cx[j] + w[j] * w[2 * h + j];                                  \
            hy[j] = cy[j];                                                                   \
        }                                                                                    \
    }                                                                                        \
    static void                                                                              \
    lstm_grad_##SUF(void *ggp, void *gcxp, const void *wp, const void *cxp,                  \
                    const void *ghyp, const void *gcyp, int64_t h)                           \
    {                                                                                        \
        T *gg = ggp, *gcx = gcxp;                                                            \
        const T *w = wp, *cx = cxp, *ghy = ghyp, *gcy = gcyp;                                \
        for (int64_t j = 0; j < h; j++) {                                                    \
            T i = w[j], f = w[h + j], gt = w[2 * h + j], o = w[3 * h + j], tc = gcx[j];      \
            T gh = ghy ? ghy[j] : 0, gct = gh * o * (1 - tc * tc) + (gcy ? gcy[j] : 0);      \
            gg[j] = gct * gt * i * (1 - i);                                                  \
            gg[h + j] = gct * cx[j] * f * (1 - f);                                           \
            gg[2 * h + j] = gct * i * (1 - gt * gt);                                         \
            gg[3 * h + j] = gh * tc * o * (1 - o);                                           \
            gcx[j] = gct * f;                                                                \
        }                                                                                    \
    }

/* gru_new: the workspace's n (before its tanh), hx and hn from the activated r.  gru_out:
 * hy = n + z (hx - n).  gru_grad: the input and hidden gates' grads and ghx. */
#define DEFINE_GRU_ROWS(T, SUF)                                                              \
    static void                                                                              \
    gru_new_##SUF(void *wp, const void *igp, const void *hgp, const void *hxp,               \
                  const void *bip, const void *bhp, int64_t h)                               \
    {                                                                                        \
        T *w = wp;                                                                           \
        const T *ig = igp, *hg = hgp, *hx = hxp, *bi = bip, *bh = bhp;                       \
        for (int64_t j = 0; j < h; j++) {                                                    \
            T hn = bi != NULL ? hg[2 * h + j] + bh[2 * h + j] : hg[2 * h + j];               \
            T xn = bi != NULL ? ig[2 * h + j] + bi[2 * h + j] : ig[2 * h + j];               \
            w[2 * h + j] = xn + w[j] * hn;                                                   \
            w[3 * h + j] = hx[j];                                                            \
            w[4 * h + j] = hn;                                                               \
        }                                                                                    \
    }                                                                                        \
    static void                                                                              \
    gru_out_##SUF(void *hyp, const void *wp, const void *hxp, int64_t h)                     \
    {                                                                                        \
        T *hy = hyp;                                                                         \
        const T *w = wp, *hx = hxp;                                                          \
        for (int64_t j = 0; j < h; j++) {                                                    \
            hy[j] = w[2 * h + j] + w[h + j] * (hx[j] - w[2 * h + j]);                        \
        }                                                                                    \
    }                                                                                        \
    static void                                                                              \
    gru_grad_##SUF(void *gip, void *ghp, void *ghxp, const void *wp, const void *ghyp,       \
                   int64_t h)                                                                \
    {                                                                                        \
        T *gi = gip, *gh = ghp, *ghx = ghxp;                                                 \
        const T *w = wp, *ghy = ghyp;                                                        \
        for (int64_t j = 0; j < h; j++) {                                                    \
            T r = w[j], z = w[h + j], n = w[2 * h + j], go = ghy[j];                         \
            T gn = go * (1 - z) * (1 - n * n), gr = gn * w[4 * h + j] * r * (1 - r);         \
            gi[j] = gh[j] = gr;                                                              \
            gi[h + j] = gh[h + j] = go * (w[3 * h + j] - n) * z * (1 - z);                   \
            gi[2 * h + j] = gn;                                                              \
            gh[2 * h + j] = gn * r;                                                          \
            ghx[j] = go * z;                                                                 \
        }                                                                                    \
    }

DEFINE_GATE_ROWS(float, f4)
DEFINE_GATE_ROWS(double, f8)
DEFINE_LSTM_ROWS(float, f4)
DEFINE_LSTM_ROWS(double, f8)
DEFINE_GRU_ROWS(float, f4)
DEFINE_GRU_ROWS(double, f8)
#undef DEFINE_GATE_ROWS
#undef DEFINE_LSTM_ROWS
#undef DEFINE_GRU_ROWS

typedef void (*ArrayFn)(void *y, int64_t n);

/* One dtype's element size, nonlinearities (in place) and row formulas. */
typedef struct CellOps {
    size_t es;
    ArrayFn sigmoid, tanh;
    void (*gate_sum)(void *w, const void *ig, const void *hg, const void *bi, const void *bh,
                     int64_t n);
    void (*mul)(void *y, const void *o, int64_t n);
    void (*lstm_state)(void *cy, void *hy, const void *w, const void *cx, int64_t h);
    void (*lstm_grad)(void *gg, void *gcx, const void *w, const void *cx, const void *ghy,
                      const void *gcy, int64_t h);
    void (*gru_new)(void *w, const void *ig, const void *hg, const void *hx, const void *bi,
                    const void *bh, int64_t h);
    void (*gru_out)(void *hy, const void *w, const void *hx, int64_t h);
    void (*gru_grad)(void *gi, void *gh, void *ghx, const void *w, const void *ghy, int64_t h);
} CellOps;

static CellOps
cell_ops(PtlDtype dt)
{
    if (dt == PTL_DTYPE_FLOAT64) {
        return (CellOps){8, sigmoid_d, tanh_d, gate_sum_f8, mul_f8, lstm_state_f8,
                         lstm_grad_f8, gru_new_f8, gru_out_f8, gru_grad_f8};
    }
    CellOps ops = {4, sigmoid_f_portable, tanh_f_portable, gate_sum_f4, mul_f4,
                   lstm_state_f4, lstm_grad_f4, gru_new_f4, gru_out_f4, gru_grad_f4};
#ifdef PTL_HAVE_AVX2_KERNELS
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        ops.sigmoid = sigmoid_f_avx2;
        ops.tanh = tanh_f_avx2;
    }
#endif
    return ops;
}

/* Element i of the array at p (NULL stays NULL). */
static inline char *
elem(const void *p, int64_t i, size_t es)
{
    return p != NULL ? (char *)p + (size_t)i * es : NULL;
}

/* ---- argument checks (PyTorch's checkSizes in RNN.cu) ---- */

typedef struct Arg {
    PtlTensorImpl *t;   /* borrowed; NULL for None */
    const char *name;
    int pos;            /* 1-based, as in PyTorch's messages */
} Arg;

static int
check_dim(const char *fn, Arg a, int dim)
{
    if (a.t->dim != dim) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Expected %d-dimensional tensor, but got "
                             "%d-dimensional tensor for argument #%d '%s' (while checking "
                             "arguments for %s)", dim, a.t->dim, a.pos, a.name, fn);
    }
    return 0;
}

static int
check_same_size(const char *fn, Arg a, Arg b)
{
    if (a.t->dim != b.t->dim ||
        memcmp(a.t->sizes, b.t->sizes, sizeof(int64_t) * (size_t)a.t->dim) != 0) {
        char sa[128], sb[128];
        ptl_format_sizes(sa, sizeof(sa), a.t->dim, a.t->sizes);
        ptl_format_sizes(sb, sizeof(sb), b.t->dim, b.t->sizes);
        return ptl_error_set(PTL_ERR_RUNTIME, "Expected tensor for argument #%d '%s' to have "
                             "same size as tensor for argument #%d '%s'; but %s does not equal "
                             "%s (while checking arguments for %s)", a.pos, a.name, b.pos,
                             b.name, sa, sb, fn);
    }
    return 0;
}

static int
check_numel(const char *fn, Arg a, int64_t numel)
{
    if (a.t->numel != numel) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Expected tensor for argument #%d '%s' to have "
                             "%lld elements; but it actually has %lld elements (while checking "
                             "arguments for %s)", a.pos, a.name, (long long)numel,
                             (long long)a.t->numel, fn);
    }
    return 0;
}

/* Tensors args[0..n) (NULL entries skipped) share args[0]'s dtype, float32 or float64. */
static int
check_dtypes(const PtlOperator *op, const Arg *args, int n)
{
    PtlDtype dt = args[0].t->dtype;
    if (dt != PTL_DTYPE_FLOAT32 && dt != PTL_DTYPE_FLOAT64) {
        return ptl_dtype_not_implemented(op, dt);
    }
    for (int i = 1; i < n; i++) {
        if (args[i].t != NULL && args[i].t->dtype != dt) {
            return ptl_error_set(PTL_ERR_RUNTIME, "expected scalar type %s but found %s",
                                 ptl_dtype_legacy_name(dt),
                                 ptl_dtype_legacy_name(args[i].t->dtype));
        }
    }
    return 0;
}

/* The forward cells' checks: gates [B, G] alike, biases [G] both or neither, the state
 * with B * G / factor elements.  Sets *hidden = G / factor. */
static int
check_cell(const PtlOperator *op, const char *fn, const PtlIValue *s, const char *state_name,
           int64_t factor, int64_t *hidden)
{
    Arg a[5] = {{s[0].u.t, "input_gates", 1}, {s[1].u.t, "hidden_gates", 2},
                {s[2].u.t, state_name, 3},
                {s[3].tag == PTL_IV_TENSOR ? s[3].u.t : NULL, "input_bias", 4},
                {s[4].tag == PTL_IV_TENSOR ? s[4].u.t : NULL, "hidden_bias", 5}};
    int64_t g;
    if (check_dtypes(op, a, 5) < 0 || check_dim(fn, a[0], 2) < 0 ||
        check_same_size(fn, a[0], a[1]) < 0) {
        return -1;
    }
    g = a[0].t->sizes[1];
    if (g % factor != 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: the gates' size %lld is not a multiple of "
                             "%lld", fn, (long long)g, (long long)factor);
    }
    if ((a[3].t == NULL) != (a[4].t == NULL)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: input_bias and hidden_bias must be given "
                             "together", fn);
    }
    if (a[3].t != NULL && (check_dim(fn, a[3], 1) < 0 || check_numel(fn, a[3], g) < 0 ||
                           check_same_size(fn, a[3], a[4]) < 0)) {
        return -1;
    }
    if (check_dim(fn, a[2], 2) < 0 || check_numel(fn, a[2], a[0].t->sizes[0] * (g / factor)) < 0) {
        return -1;
    }
    *hidden = g / factor;
    return 0;
}

/* Contiguous versions of the k tensors t[i] (NULL stays NULL): new refs in c[]. */
static int
contiguous_all(PtlTensorImpl *const *t, PtlTensorImpl **c, int k)
{
    for (int i = 0; i < k; i++) {
        c[i] = NULL;
    }
    for (int i = 0; i < k; i++) {
        if (t[i] != NULL && (c[i] = ptl_contiguous(t[i])) == NULL) {
            return -1;
        }
    }
    return 0;
}

static void
release_all(PtlTensorImpl **t, int k)
{
    for (int i = 0; i < k; i++) {
        PTL_CLEAR(t[i]);
    }
}

static PtlTensorImpl *
new_2d(int64_t rows, int64_t cols, const PtlTensorImpl *like)
{
    int64_t sizes[2] = {rows, cols};
    return ptl_empty(2, sizes, like->dtype, like->device);
}

static PtlTensorImpl *
new_1d(int64_t n, const PtlTensorImpl *like)
{
    return ptl_empty(1, &n, like->dtype, like->device);
}

#define DATA(T, X) ((X) != NULL ? (T *)ptl_tensor_data(X) : NULL)

/* Rows per parallel chunk for rows of `width` elements. */
static int64_t
row_grain(int64_t width)
{
    return width > 0 ? PTL_GRAIN_SIZE / width + 1 : 1;
}

/* ---- the LSTM cell ---- */

typedef struct LstmCtx {
    const void *ig, *hg, *cx, *bi, *bh, *ghy, *gcy, *cy, *ws;
    void *hy, *cy_out, *ws_out, *gg, *gcx;
    int64_t h;
    CellOps ops;
} LstmCtx;

/* Forward rows [b0, b1): the gates, their nonlinearities, cy and hy = o tanh(cy), the
 * activated gates kept as the workspace.  Backward: tanh(cy), then the gates' and cx's grads. */
static int
lstm_fwd(void *ctx, int64_t b0, int64_t b1)
{
    const LstmCtx *c = ctx;
    const CellOps *op = &c->ops;
    int64_t h = c->h, g = 4 * h;
    size_t es = op->es;
    for (int64_t b = b0; b < b1; b++) {
        char *w = elem(c->ws_out, b * g, es), *hy = elem(c->hy, b * h, es);
        op->gate_sum(w, elem(c->ig, b * g, es), elem(c->hg, b * g, es), c->bi, c->bh, g);
        op->sigmoid(w, 2 * h);
        op->tanh(elem(w, 2 * h, es), h);
        op->sigmoid(elem(w, 3 * h, es), h);
        op->lstm_state(elem(c->cy_out, b * h, es), hy, w, elem(c->cx, b * h, es), h);
        op->tanh(hy, h);
        op->mul(hy, elem(w, 3 * h, es), h);
    }
    return 0;
}

static int
lstm_bwd(void *ctx, int64_t b0, int64_t b1)
{
    const LstmCtx *c = ctx;
    const CellOps *op = &c->ops;
    int64_t h = c->h, g = 4 * h;
    size_t es = op->es;
    for (int64_t b = b0; b < b1; b++) {
        char *gcx = elem(c->gcx, b * h, es);
        memcpy(gcx, elem(c->cy, b * h, es), es * (size_t)h);
        op->tanh(gcx, h);
        op->lstm_grad(elem(c->gg, b * g, es), gcx, elem(c->ws, b * g, es), elem(c->cx, b * h, es),
                      elem(c->ghy, b * h, es), elem(c->gcy, b * h, es), h);
    }
    return 0;
}

/* out[k] = sum over rows of x[r, k] (x [rows, cols] contiguous), in x's dtype */
static void
sum_rows(const PtlTensorImpl *x, char *out)
{
    int64_t rows = x->dim ? x->sizes[0] : 0, cols = x->dim == 2 ? x->sizes[1] : 0;
    if (x->dtype == PTL_DTYPE_FLOAT32) {
        const float *p = DATA(const float, x);
        float *o = (float *)out;
        memset(o, 0, sizeof(float) * (size_t)cols);
        for (int64_t r = 0; r < rows; r++) {
            for (int64_t k = 0; k < cols; k++) {
                o[k] += p[r * cols + k];
            }
        }
    }
    else {
        const double *p = DATA(const double, x);
        double *o = (double *)out;
        memset(o, 0, sizeof(double) * (size_t)cols);
        for (int64_t r = 0; r < rows; r++) {
            for (int64_t k = 0; k < cols; k++) {
                o[k] += p[r * cols + k];
            }
        }
    }
}

/* _thnn_fused_lstm_cell(input_gates [B, 4H], hidden_gates [B, 4H], cx [B, H],
 *                       input_bias [4H]?, hidden_bias [4H]?) -> (hy [B, H], cy [B, H],
 *                       workspace [B, 4H]) */
static int
lstm_cell_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *in[5], *c[5] = {NULL}, *hy = NULL, *cy = NULL, *ws = NULL;
    int64_t h, rows;
    LstmCtx ctx;
    (void)ks;
    for (int i = 0; i < 5; i++) {
        in[i] = s[i].tag == PTL_IV_TENSOR ? s[i].u.t : NULL;
    }
    if (check_cell(op, "_thnn_fused_lstm_cell", s, "cx", 4, &h) < 0 ||
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
    ctx.ops = cell_ops(in[0]->dtype);
    if (ptl_parallel_for(0, rows, row_grain(4 * h), lstm_fwd, &ctx) < 0) {
        goto error;
    }
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
static int
lstm_cell_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    const char *fn = "_thnn_fused_lstm_cell_backward_impl";
    PtlTensorImpl *in[5], *c[5] = {NULL}, *gg = NULL, *gcx = NULL, *gb = NULL;
    Arg a[5];
    int64_t h, rows;
    LstmCtx ctx;
    (void)ks;
    for (int i = 0; i < 5; i++) {
        in[i] = s[i].tag == PTL_IV_TENSOR ? s[i].u.t : NULL;
    }
    a[0] = (Arg){in[4], "workspace", 5};
    a[1] = (Arg){in[0], "grad_hy", 1};
    a[2] = (Arg){in[1], "grad_cy", 2};
    a[3] = (Arg){in[2], "cx", 3};
    a[4] = (Arg){in[3], "cy", 4};
    if (check_dtypes(op, a, 5) < 0 || check_dim(fn, a[0], 2) < 0 || check_dim(fn, a[3], 2) < 0) {
        return -1;
    }
    h = in[2]->sizes[1];
    rows = in[2]->sizes[0];
    if (in[4]->sizes[0] != rows || in[4]->sizes[1] != 4 * h) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: workspace must have size [%lld, %lld]", fn,
                             (long long)rows, (long long)(4 * h));
    }
    for (int i = 1; i < 5; i++) {
        if (i != 3 && a[i].t != NULL && check_same_size(fn, a[i], a[3]) < 0) {
            return -1;
        }
    }
    if (contiguous_all(in, c, 5) < 0) {
        goto error;
    }
    gg = new_2d(rows, 4 * h, in[4]);
    gcx = new_2d(rows, h, in[4]);
    if (gg == NULL || gcx == NULL) {
        goto error;
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
    ctx.ops = cell_ops(in[4]->dtype);
    if (ptl_parallel_for(0, rows, row_grain(4 * h), lstm_bwd, &ctx) < 0) {
        goto error;
    }
    if (s[5].u.b) {
        if ((gb = new_1d(4 * h, in[4])) == NULL) {
            goto error;
        }
        sum_rows(gg, DATA(char, gb));
    }
    release_all(c, 5);
    s[0] = ptl_iv_tensor(gg);
    s[1] = ptl_iv_tensor(gcx);
    s[2] = gb != NULL ? ptl_iv_tensor(gb) : ptl_iv_none();
    return 0;
error:
    release_all(c, 5);
    ptl_xdecref(gg);
    ptl_xdecref(gcx);
    return -1;
}

/* ---- the GRU cell ---- */

typedef struct GruCtx {
    const void *ig, *hg, *hx, *bi, *bh, *ghy, *ws;
    void *hy, *ws_out, *gig, *ghg, *ghx;
    int64_t h;
    CellOps ops;
} GruCtx;

/* Forward rows [b0, b1): workspace (r, z, n, hx, hn) and hy = n + z (hx - n).  Backward:
 * gz = ghy (hx - n) z(1-z), gn = ghy (1-z)(1-n^2), gr = gn hn r(1-r), ghx = ghy z; input
 * gates get (gr, gz, gn), hidden gates (gr, gz, gn r). */
static int
gru_fwd(void *ctx, int64_t b0, int64_t b1)
{
    const GruCtx *c = ctx;
    const CellOps *op = &c->ops;
    int64_t h = c->h, g = 3 * h;
    size_t es = op->es;
    for (int64_t b = b0; b < b1; b++) {
        char *w = elem(c->ws_out, b * 5 * h, es);
        const char *ig = elem(c->ig, b * g, es), *hg = elem(c->hg, b * g, es);
        const char *hx = elem(c->hx, b * h, es);
        op->gate_sum(w, ig, hg, c->bi, c->bh, 2 * h);
        op->sigmoid(w, 2 * h);
        op->gru_new(w, ig, hg, hx, c->bi, c->bh, h);
        op->tanh(elem(w, 2 * h, es), h);
        op->gru_out(elem(c->hy, b * h, es), w, hx, h);
    }
    return 0;
}

static int
gru_bwd(void *ctx, int64_t b0, int64_t b1)
{
    const GruCtx *c = ctx;
    const CellOps *op = &c->ops;
    int64_t h = c->h, g = 3 * h;
    size_t es = op->es;
    for (int64_t b = b0; b < b1; b++) {
        op->gru_grad(elem(c->gig, b * g, es), elem(c->ghg, b * g, es), elem(c->ghx, b * h, es),
                     elem(c->ws, b * 5 * h, es), elem(c->ghy, b * h, es), h);
    }
    return 0;
}

/* _thnn_fused_gru_cell(input_gates [B, 3H], hidden_gates [B, 3H], hx [B, H],
 *                      input_bias [3H]?, hidden_bias [3H]?) -> (hy [B, H],
 *                      workspace [B, 5H]) */
static int
gru_cell_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *in[5], *c[5] = {NULL}, *hy = NULL, *ws = NULL;
    int64_t h, rows;
    GruCtx ctx;
    (void)ks;
    for (int i = 0; i < 5; i++) {
        in[i] = s[i].tag == PTL_IV_TENSOR ? s[i].u.t : NULL;
    }
    if (check_cell(op, "_thnn_fused_gru_cell", s, "hx", 3, &h) < 0 ||
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
    memset(&ctx, 0, sizeof(ctx));
    ctx.ig = DATA(void, c[0]);
    ctx.hg = DATA(void, c[1]);
    ctx.hx = DATA(void, c[2]);
    ctx.bi = DATA(void, c[3]);
    ctx.bh = DATA(void, c[4]);
    ctx.hy = DATA(void, hy);
    ctx.ws_out = DATA(void, ws);
    ctx.h = h;
    ctx.ops = cell_ops(in[0]->dtype);
    if (ptl_parallel_for(0, rows, row_grain(5 * h), gru_fwd, &ctx) < 0) {
        goto error;
    }
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
static int
gru_cell_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    const char *fn = "_thnn_fused_gru_cell_backward";
    PtlTensorImpl *in[2] = {s[0].u.t, s[1].u.t}, *c[2] = {NULL, NULL};
    PtlTensorImpl *gig = NULL, *ghg = NULL, *ghx = NULL, *gb = NULL;
    Arg a[2] = {{in[1], "workspace", 2}, {in[0], "grad_hy", 1}};
    int64_t h, rows;
    GruCtx ctx;
    (void)ks;
    if (check_dtypes(op, a, 2) < 0 || check_dim(fn, a[0], 2) < 0 || check_dim(fn, a[1], 2) < 0) {
        return -1;
    }
    h = in[0]->sizes[1];
    rows = in[0]->sizes[0];
    if (in[1]->sizes[0] != rows || in[1]->sizes[1] != 5 * h) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: workspace must have size [%lld, %lld]", fn,
                             (long long)rows, (long long)(5 * h));
    }
    if (contiguous_all(in, c, 2) < 0) {
        goto error;
    }
    gig = new_2d(rows, 3 * h, in[1]);
    ghg = new_2d(rows, 3 * h, in[1]);
    ghx = new_2d(rows, h, in[1]);
    if (gig == NULL || ghg == NULL || ghx == NULL) {
        goto error;
    }
    memset(&ctx, 0, sizeof(ctx));
    ctx.ghy = DATA(void, c[0]);
    ctx.ws = DATA(void, c[1]);
    ctx.gig = DATA(void, gig);
    ctx.ghg = DATA(void, ghg);
    ctx.ghx = DATA(void, ghx);
    ctx.h = h;
    ctx.ops = cell_ops(in[1]->dtype);
    if (ptl_parallel_for(0, rows, row_grain(5 * h), gru_bwd, &ctx) < 0) {
        goto error;
    }
    if (s[2].u.b) {
        if ((gb = new_2d(2, 3 * h, in[1])) == NULL) {
            goto error;
        }
        sum_rows(gig, DATA(char, gb));
        sum_rows(ghg, DATA(char, gb) + 3 * h * (int64_t)ptl_dtype_itemsize(gb->dtype));
    }
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

static const PtlKernelReg rnn_kernels[] = {
    {PTL_OP__thnn_fused_lstm_cell, PTL_KEY_CPU, lstm_cell_cpu},
    {PTL_OP__thnn_fused_lstm_cell_backward_impl, PTL_KEY_CPU, lstm_cell_backward_cpu},
    {PTL_OP__thnn_fused_gru_cell, PTL_KEY_CPU, gru_cell_cpu},
    {PTL_OP__thnn_fused_gru_cell_backward, PTL_KEY_CPU, gru_cell_backward_cpu},
};
PTL_DEFINE_REGISTER(rnn_kernels)
