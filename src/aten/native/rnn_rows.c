/* rnn_rows.c -- the recurrent cells' formulas over one batch row, per dtype, and float32's
 * vector forms (ATen/native/cuda/RNN.cu's cell kernels, element by element there), and the
 * cells over ranges of rows: what rnn.c's fused cells and recurrent layer run.  See
 * Note [Fused cells] in rnn.c. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "../../c10/cpu_features.h"
#include "../scalar_math.h"
#include "rnn_cell_math.h"
#include "rnn_impl.h"
#include "vec_math.h"

/* ---- nonlinearities over an array, in place ---- */

#ifdef PTL_HAVE_AVX2_KERNELS
/* y = f(y) on n floats with vec_math.h's maps (AVX2 or AVX-512, the same bits) */
#define DEFINE_ARRAY_VEC(F, S)                                                            \
    static void F##_f_##S(void *p, int64_t n) { ptl_vm_map_##F##_##S(p, p, n); }
DEFINE_ARRAY_VEC(sigmoid, ps)
DEFINE_ARRAY_VEC(tanh, ps)
DEFINE_ARRAY_VEC(sigmoid, ps512)
DEFINE_ARRAY_VEC(tanh, ps512)
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

/* gate_sum: w = ig + hg (+ bi + bh), n elements: the gates before their nonlinearities; w
 * already holds ig + hg when ig is NULL (the layer's GEMM added them). */
#define DEFINE_GATE_ROWS(T, SUF)                                                             \
    static void                                                                              \
    gate_sum_##SUF(void *wp, const void *igp, const void *hgp, const void *bip,              \
                   const void *bhp, int64_t n)                                               \
    {                                                                                        \
        T *w = wp;                                                                           \
        const T *ig = igp, *hg = hgp, *bi = bip, *bh = bhp;                                  \
        for (int64_t k = 0; ig != NULL && k < n; k++) {                                      \
            w[k] = ig[k] + hg[k];                                                            \
        }                                                                                    \
        if (bi != NULL) {                                                                    \
            for (int64_t k = 0; k < n; k++) {                                                \
                w[k] = w[k] + bi[k] + bh[k];                                                 \
            }                                                                                \
        }                                                                                    \
    }

/* One batch row of the cells (Note [Fused cells]), unit by unit with rnn_cell_math.h's
 * formulas (the CUDA layer's cell kernels run them too): lstm_fwd_row the gates over k in
 * [0, 4h), then the states, lstm_bwd_row, gru_new, gru_out and gru_grad over j in [0, h);
 * rnn_grad over n elements.  The vector rows below compute the same operations in the
 * same order. */
#define DEFINE_CELL_ROWS(T, SUF)                                                             \
    static void                                                                              \
    lstm_fwd_row_##SUF(void *w, void *cy, void *hy, const void *cx, const void *bi,          \
                       const void *bh, int64_t h)                                            \
    {                                                                                        \
        for (int64_t k = 0; k < 4 * h; k++) {                                                \
            ptl_lstm_gate_##SUF(w, bi, bh, h, k);                                            \
        }                                                                                    \
        for (int64_t j = 0; j < h; j++) {                                                    \
            ptl_lstm_state_##SUF(w, cy, hy, cx, h, j);                                       \
        }                                                                                    \
    }                                                                                        \
    static void                                                                              \
    lstm_bwd_row_##SUF(void *gg, void *gcx, const void *w, const void *cx, const void *cy,   \
                       const void *ghy, const void *gcy, int64_t h)                          \
    {                                                                                        \
        for (int64_t j = 0; j < h; j++) {                                                    \
            ptl_lstm_bwd_##SUF(gg, gcx, w, cx, cy, ghy, gcy, h, j);                          \
        }                                                                                    \
    }                                                                                        \
    static void                                                                              \
    gru_new_##SUF(void *w, const void *ig, const void *hg, const void *hx, const void *bi,   \
                  const void *bh, int64_t h)                                                 \
    {                                                                                        \
        for (int64_t j = 0; j < h; j++) {                                                    \
            ptl_gru_new_##SUF(w, ig, hg, hx, bi, bh, h, j);                                  \
        }                                                                                    \
    }                                                                                        \
    static void                                                                              \
    gru_out_##SUF(void *hy, const void *w, const void *hx, int64_t h)                        \
    {                                                                                        \
        for (int64_t j = 0; j < h; j++) {                                                    \
            ptl_gru_out_##SUF(hy, w, hx, h, j);                                              \
        }                                                                                    \
    }                                                                                        \
    static void                                                                              \
    gru_grad_##SUF(void *gi, void *gh, void *ghx, const void *w, const void *ghy, int64_t h) \
    {                                                                                        \
        for (int64_t j = 0; j < h; j++) {                                                    \
            ptl_gru_grad_##SUF(gi, gh, ghx, w, ghy, h, j);                                   \
        }                                                                                    \
    }                                                                                        \
    static void                                                                              \
    rnn_grad_##SUF(void *gp, const void *ghp, const void *hp, int relu, int64_t n)           \
    {                                                                                        \
        T *g = gp;                                                                           \
        const T *gh = ghp, *h = hp;                                                          \
        for (int64_t k = 0; k < n; k++) {                                                    \
            g[k] = ptl_rnn_grad_##SUF(gh[k], h[k], relu);                                    \
        }                                                                                    \
    }

/* The recurrent layer's relu in place, keeping NaN (clamp_min(y, 0), as ptl_relu_d). */
#define DEFINE_RELU_ROWS(T, SUF)                                                             \
    static void                                                                              \
    relu_##SUF(void *yp, int64_t n)                                                          \
    {                                                                                        \
        T *y = yp;                                                                           \
        for (int64_t k = 0; k < n; k++) {                                                    \
            y[k] = y[k] < 0 ? 0 : y[k];                                                      \
        }                                                                                    \
    }

DEFINE_GATE_ROWS(float, f4)
DEFINE_GATE_ROWS(double, f8)
DEFINE_CELL_ROWS(float, f4)
DEFINE_CELL_ROWS(double, f8)
DEFINE_RELU_ROWS(float, f4)
DEFINE_RELU_ROWS(double, f8)
#undef DEFINE_GATE_ROWS
#undef DEFINE_CELL_ROWS
#undef DEFINE_RELU_ROWS

#ifdef PTL_HAVE_AVX2_KERNELS
/* The float LSTM rows in vectors of kind S (Note [Vector twins]): lanes [j, j + L) of every
 * gate at once, so that a row is read and written once (not in passes of sums, sigmoids,
 * tanhs, state and output), and the backward's products vectorize (the scalar loop, with
 * its optional grads, did not).  vec_math.h's sigmoid and tanh (Note [LSTM row
 * nonlinearities]), then the operations of rnn_cell_math.h's ptl_lstm_gate, _state and _bwd
 * in the same order and without FMA: both widths give the same bits (tests/nn/test_rnn.py
 * compares them).  The last h % L lanes go through masked loads and stores (tail set).
 *
 * Note [LSTM row nonlinearities]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * vec_math.h's float sigmoid and tanh call its checked exp, which clamps its argument, tests
 * every lane against the normal range and branches to patch the lanes outside, in each of
 * the five nonlinearities of an LSTM unit's forward step.  The rows clamp the argument
 * themselves into exp's normal range, [-86, 88], and call ptl_vm_exp_normal, which gives the
 * same bits there: the sigmoid's -x (clamped below at -20 already) at 88 above, which
 * changes only x < -88, now sigmoid(-88) = 6.1e-39 instead of a smaller value or 0 (within
 * 6.1e-39 of the exact result either way); the tanh's |x| at 10, past which 1 - 2 / (e^2|x|
 * + 1) rounds to 1 in float either way (2 / (e^20 + 1) = 4.1e-9 is below half an ulp
 * under 1), so the bits do not change.  min and max return their second operand when one is
 * NaN: a NaN still goes through.  One Zen 4 core, the fused cell over 256 x 128 units
 * (its ig + hg in gate_sum's vector form too): forward 104 -> 89 us, backward 31.6 -> 30.3
 * us; a layer's forward of 64 steps of 16 x 128, whose step GEMMs take three quarters of
 * it, about 1%.  The tanh computes each lane both ways and keeps one (x + x z P(z) below
 * 0.625 in |x|); a vector whose lanes all take one way skips the other (an LSTM's g gates
 * and cells are mostly small): the same bits, tests/nn/test_rnn_vector_rows.py.  A layer's
 * forward of 64 steps of 16 x 128 units took 1.555 -> 1.47 ms. */
#define DEFINE_LSTM_VEC_ROWS(S)                                                              \
    PTL_VATTR(S) static inline PTL_VT(S)                                                     \
    lanes_load_##S(const float *p, PTL_VTAILT(S) m, int tail)                                \
    {                                                                                        \
        return tail ? PTL_VLOAD_TAIL(S, p, m) : PTL_V(S, loadu)(p);                          \
    }                                                                                        \
    PTL_VATTR(S) static inline void                                                          \
    lanes_store_##S(float *p, PTL_VTAILT(S) m, int tail, PTL_VT(S) v)                        \
    {                                                                                        \
        if (tail) {                                                                          \
            PTL_VSTORE_TAIL(S, p, m, v);                                                     \
        }                                                                                    \
        else {                                                                               \
            PTL_V(S, storeu)(p, v);                                                          \
        }                                                                                    \
    }                                                                                        \
    /* ptl_vm_sigmoid and ptl_vm_tanh through the unchecked exp (Note [LSTM row            \
     * nonlinearities]) */                                                                   \
    PTL_VATTR(S) static inline PTL_VT(S) lstm_sigmoid_##S(PTL_VT(S) x)                       \
    {                                                                                        \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0f);                                          \
        PTL_VT(S) negx = PTL_V(S, sub)(PTL_V(S, setzero)(), x);                              \
        negx = PTL_V(S, min)(PTL_V(S, set1)(88.0f),                                          \
                             PTL_V(S, max)(PTL_V(S, set1)(-20.0f), negx));                   \
        return PTL_V(S, div)(one, PTL_V(S, add)(one, ptl_vm_exp_normal_##S(negx)));          \
    }                                                                                        \
    PTL_VATTR(S) static inline PTL_VT(S) lstm_tanh_##S(PTL_VT(S) x)                          \
    {                                                                                        \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0f), sign = PTL_V(S, set1)(-0.0f);            \
        PTL_VT(S) ax = PTL_V(S, andnot)(sign, x);                                            \
        PTL_VT(S) t = x, small = x;                                                          \
        const int all = (1 << PTL_VLANES(S)) - 1;                                            \
        int bits = PTL_VBITS(S, PTL_VCMP(S, ax, PTL_V(S, set1)(0.625f), _CMP_LT_OQ));        \
        if (bits != all) {   /* the lanes of |x| >= 0.625 (or NaN): 1 - 2 / (e^2|x| + 1) */   \
            PTL_VT(S) a = PTL_V(S, min)(PTL_V(S, set1)(10.0f), ax);                          \
            PTL_VT(S) e = ptl_vm_exp_normal_##S(PTL_V(S, add)(a, a));                        \
            t = PTL_V(S, sub)(one, PTL_V(S, div)(PTL_V(S, set1)(2.0f), PTL_V(S, add)(e, one))); \
            t = PTL_V(S, or)(t, PTL_V(S, and)(sign, x));                                     \
        }                                                                                    \
        if (bits != 0) {     /* the others: x + x z P(z) */                                  \
            PTL_VT(S) z = PTL_V(S, mul)(x, x);                                               \
            small = PTL_V(S, fmadd)(PTL_V(S, mul)(PTL_VM_POLY(S, z, ptl_vm_tanh_coef), z),   \
                                    x, x);                                                   \
        }                                                                                    \
        return bits == all ? small : bits == 0 ? t : PTL_VSEL(S, PTL_VCMP(S, ax,             \
                                     PTL_V(S, set1)(0.625f), _CMP_LT_OQ), t, small);         \
    }                                                                                        \
    /* a gate's sums (+ bi + bh) */                                                          \
    PTL_VATTR(S) static inline PTL_VT(S)                                                     \
    lstm_gate_##S(const float *w, const float *bi, const float *bh, PTL_VTAILT(S) m, int tail) \
    {                                                                                        \
        PTL_VT(S) a = lanes_load_##S(w, m, tail);                                            \
        if (bi == NULL) {                                                                    \
            return a;                                                                        \
        }                                                                                    \
        return PTL_V(S, add)(PTL_V(S, add)(a, lanes_load_##S(bi, m, tail)),                  \
                             lanes_load_##S(bh, m, tail));                                   \
    }                                                                                        \
    PTL_VATTR(S) static inline void                                                          \
    lstm_fwd_lanes_##S(float *w, float *cy, float *hy, const float *cx, const float *bi,     \
                       const float *bh, int64_t h, PTL_VTAILT(S) m, int tail)                \
    {                                                                                        \
        PTL_VT(S) i = lstm_gate_##S(w, bi, bh, m, tail);                                     \
        PTL_VT(S) f = lstm_gate_##S(w + h, bi ? bi + h : NULL, bh ? bh + h : NULL, m, tail); \
        PTL_VT(S) g = lstm_gate_##S(w + 2 * h, bi ? bi + 2 * h : NULL, bh ? bh + 2 * h : NULL, \
                                    m, tail);                                                \
        PTL_VT(S) o = lstm_gate_##S(w + 3 * h, bi ? bi + 3 * h : NULL, bh ? bh + 3 * h : NULL, \
                                    m, tail);                                                \
        i = lstm_sigmoid_##S(i);                                                             \
        f = lstm_sigmoid_##S(f);                                                             \
        g = lstm_tanh_##S(g);                                                                \
        o = lstm_sigmoid_##S(o);                                                             \
        lanes_store_##S(w, m, tail, i);                                                      \
        lanes_store_##S(w + h, m, tail, f);                                                  \
        lanes_store_##S(w + 2 * h, m, tail, g);                                              \
        lanes_store_##S(w + 3 * h, m, tail, o);                                              \
        PTL_VT(S) c = PTL_V(S, add)(PTL_V(S, mul)(f, lanes_load_##S(cx, m, tail)),           \
                                    PTL_V(S, mul)(i, g));                                    \
        lanes_store_##S(cy, m, tail, c);                                                     \
        lanes_store_##S(hy, m, tail, PTL_V(S, mul)(o, lstm_tanh_##S(c)));                    \
    }                                                                                        \
    PTL_VATTR(S) static inline void                                                          \
    lstm_bwd_lanes_##S(float *gg, float *gcx, const float *w, const float *cx,               \
                       const float *cy, const float *ghy, const float *gcy, int64_t h,       \
                       PTL_VTAILT(S) m, int tail)                                            \
    {                                                                                        \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0f), zero = PTL_V(S, setzero)();              \
        PTL_VT(S) i = lanes_load_##S(w, m, tail), f = lanes_load_##S(w + h, m, tail);        \
        PTL_VT(S) gt = lanes_load_##S(w + 2 * h, m, tail);                                   \
        PTL_VT(S) o = lanes_load_##S(w + 3 * h, m, tail);                                    \
        PTL_VT(S) tc = lstm_tanh_##S(lanes_load_##S(cy, m, tail));                           \
        PTL_VT(S) gh = ghy != NULL ? lanes_load_##S(ghy, m, tail) : zero;                    \
        PTL_VT(S) gct = PTL_V(S, add)(                                                       \
            PTL_V(S, mul)(PTL_V(S, mul)(gh, o), PTL_V(S, sub)(one, PTL_V(S, mul)(tc, tc))),  \
            gcy != NULL ? lanes_load_##S(gcy, m, tail) : zero);                              \
        PTL_VT(S) xc = lanes_load_##S(cx, m, tail), di = PTL_V(S, sub)(one, i);              \
        PTL_VT(S) df = PTL_V(S, sub)(one, f), dout = PTL_V(S, sub)(one, o);                  \
        PTL_VT(S) dg = PTL_V(S, sub)(one, PTL_V(S, mul)(gt, gt));                            \
        lanes_store_##S(gg, m, tail,                                                         \
                        PTL_V(S, mul)(PTL_V(S, mul)(PTL_V(S, mul)(gct, gt), i), di));        \
        lanes_store_##S(gg + h, m, tail,                                                     \
                        PTL_V(S, mul)(PTL_V(S, mul)(PTL_V(S, mul)(gct, xc), f), df));        \
        lanes_store_##S(gg + 2 * h, m, tail, PTL_V(S, mul)(PTL_V(S, mul)(gct, i), dg));      \
        lanes_store_##S(gg + 3 * h, m, tail,                                                 \
                        PTL_V(S, mul)(PTL_V(S, mul)(PTL_V(S, mul)(gh, tc), o), dout));       \
        lanes_store_##S(gcx, m, tail, PTL_V(S, mul)(gct, f));                                \
    }                                                                                        \
    PTL_VATTR(S) static void                                                                 \
    lstm_fwd_row_##S(void *wp, void *cyp, void *hyp, const void *cxp, const void *bip,       \
                     const void *bhp, int64_t h)                                             \
    {                                                                                        \
        const int64_t L = PTL_VLANES(S);                                                     \
        float *w = wp, *cy = cyp, *hy = hyp;                                                 \
        const float *cx = cxp, *bi = bip, *bh = bhp;                                         \
        const PTL_VTAILT(S) none = {0};                                                      \
        int64_t j = 0;                                                                       \
        for (; j + L <= h; j += L) {                                                         \
            lstm_fwd_lanes_##S(w + j, cy + j, hy + j, cx + j, bi ? bi + j : NULL,            \
                               bh ? bh + j : NULL, h, none, 0);                              \
        }                                                                                    \
        if (j < h) {                                                                         \
            lstm_fwd_lanes_##S(w + j, cy + j, hy + j, cx + j, bi ? bi + j : NULL,            \
                               bh ? bh + j : NULL, h, PTL_VTAIL(S, h - j), 1);               \
        }                                                                                    \
    }                                                                                        \
    PTL_VATTR(S) static void                                                                 \
    lstm_bwd_row_##S(void *ggp, void *gcxp, const void *wp, const void *cxp,                 \
                     const void *cyp, const void *ghyp, const void *gcyp, int64_t h)         \
    {                                                                                        \
        const int64_t L = PTL_VLANES(S);                                                     \
        float *gg = ggp, *gcx = gcxp;                                                        \
        const float *w = wp, *cx = cxp, *cy = cyp, *ghy = ghyp, *gcy = gcyp;                 \
        const PTL_VTAILT(S) none = {0};                                                      \
        int64_t j = 0;                                                                       \
        for (; j + L <= h; j += L) {                                                         \
            lstm_bwd_lanes_##S(gg + j, gcx + j, w + j, cx + j, cy + j, ghy ? ghy + j : NULL, \
                               gcy ? gcy + j : NULL, h, none, 0);                            \
        }                                                                                    \
        if (j < h) {                                                                         \
            lstm_bwd_lanes_##S(gg + j, gcx + j, w + j, cx + j, cy + j, ghy ? ghy + j : NULL, \
                               gcy ? gcy + j : NULL, h, PTL_VTAIL(S, h - j), 1);             \
        }                                                                                    \
    }
DEFINE_LSTM_VEC_ROWS(ps)
DEFINE_LSTM_VEC_ROWS(ps512)
#undef DEFINE_LSTM_VEC_ROWS

/* gate_sum_f4 in vectors of kind S: the same additions in the same order (each element's
 * ig + hg, then + bi, then + bh), so the same bits; the scalar loop compiled to 4-wide SSE,
 * and the layer runs it on every step's rows (the bias gradients' running sums, dh +=
 * grad_output[t], the forward's ig + hg). */
#define DEFINE_GATE_SUM_VEC(S)                                                               \
    PTL_VATTR(S) static inline void                                                          \
    gate_sum_lanes_##S(float *w, const float *ig, const float *hg, const float *bi,          \
                       const float *bh, PTL_VTAILT(S) m, int tail)                           \
    {                                                                                        \
        PTL_VT(S) v = ig != NULL ? PTL_V(S, add)(lanes_load_##S(ig, m, tail),                \
                                                 lanes_load_##S(hg, m, tail))                \
                                 : lanes_load_##S(w, m, tail);                               \
        if (bi != NULL) {                                                                    \
            v = PTL_V(S, add)(PTL_V(S, add)(v, lanes_load_##S(bi, m, tail)),                 \
                              lanes_load_##S(bh, m, tail));                                  \
        }                                                                                    \
        lanes_store_##S(w, m, tail, v);                                                      \
    }                                                                                        \
    PTL_VATTR(S) static void                                                                 \
    gate_sum_##S(void *wp, const void *igp, const void *hgp, const void *bip,                \
                 const void *bhp, int64_t n)                                                 \
    {                                                                                        \
        const int64_t L = PTL_VLANES(S);                                                     \
        float *w = wp;                                                                       \
        const float *ig = igp, *hg = hgp, *bi = bip, *bh = bhp;                              \
        const PTL_VTAILT(S) none = {0};                                                      \
        int64_t k = 0;                                                                       \
        for (; k + L <= n; k += L) {                                                         \
            gate_sum_lanes_##S(w + k, ig ? ig + k : NULL, hg ? hg + k : NULL,                \
                               bi ? bi + k : NULL, bh ? bh + k : NULL, none, 0);             \
        }                                                                                    \
        if (k < n) {                                                                         \
            gate_sum_lanes_##S(w + k, ig ? ig + k : NULL, hg ? hg + k : NULL,                \
                               bi ? bi + k : NULL, bh ? bh + k : NULL, PTL_VTAIL(S, n - k), 1); \
        }                                                                                    \
    }
DEFINE_GATE_SUM_VEC(ps)
DEFINE_GATE_SUM_VEC(ps512)
#undef DEFINE_GATE_SUM_VEC
#endif

CellOps
rnn_cell_ops(PtlDtype dt)
{
    if (dt == PTL_DTYPE_FLOAT64) {
        return (CellOps){8, sigmoid_d, tanh_d, gate_sum_f8, lstm_fwd_row_f8, lstm_bwd_row_f8,
                         gru_new_f8, gru_out_f8, gru_grad_f8, relu_f8, rnn_grad_f8};
    }
    CellOps ops = {4, sigmoid_f_portable, tanh_f_portable, gate_sum_f4, lstm_fwd_row_f4,
                   lstm_bwd_row_f4, gru_new_f4, gru_out_f4, gru_grad_f4, relu_f4, rnn_grad_f4};
#ifdef PTL_HAVE_AVX2_KERNELS
    if (ptl_cpu_capability() >= PTL_CPU_AVX512) {
        ops.sigmoid = sigmoid_f_ps512;
        ops.tanh = tanh_f_ps512;
        ops.gate_sum = gate_sum_ps512;
        ops.lstm_fwd_row = lstm_fwd_row_ps512;
        ops.lstm_bwd_row = lstm_bwd_row_ps512;
    } else if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        ops.sigmoid = sigmoid_f_ps;
        ops.tanh = tanh_f_ps;
        ops.gate_sum = gate_sum_ps;
        ops.lstm_fwd_row = lstm_fwd_row_ps;
        ops.lstm_bwd_row = lstm_bwd_row_ps;
    }
#endif
    return ops;
}

/* ---- the cells over batch rows (rnn_impl.h) ---- */

/* Note [LSTM backward fetch]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The recurrent layer's backward (rnn.c, Note [Recurrent layer]) reads, at each step, rows
 * that the forward wrote milliseconds before and that are out of the caches by then: the
 * step's activated gates (4h a row), c_{t-1} and grad_output[t] (64 x 16 rows of an LSTM
 * language model's 128 units: 48 KiB a step, a layer's 3 MiB).  perf put three quarters of
 * the cells' backward samples on the loads of those rows, and the cells at 5% of the 2-layer
 * step.  So each batch row of the cells' backward first fetches (into L2) the same row of
 * the next step's gates, of the c_{t-1} that step reads (the one after: that step's own c_t
 * is this step's c_{t-1}, just read) and of its grad_output: the lines then arrive while
 * this step's dh W_hh product runs.  Fetching into L1, after the row instead of before it,
 * two steps ahead, or also the next step's gate-gradient rows for writing, did no better.
 * The forward's rows fetch the next step's input_gates rows the same way (the input
 * projection wrote all T steps' before the loop, 2 MiB a layer here, out of L2 when the loop
 * reaches them): a layer's forward op after a 16 MiB pass, 1.68-1.79 -> 1.57-1.72 ms; warm,
 * no change; also fetching the rows the step's product writes was slower.  No value
 * changes.  docs/performance.md (LSTM ... the backward's next rows) has the timings. */
static void
fetch_lines(const void *p, int64_t row, int64_t width, size_t es)
{
    if (p == NULL) {
        return;
    }
    const char *r = (const char *)p + (size_t)(row * width) * es;
    for (size_t o = 0; o < (size_t)width * es; o += 64) {
        __builtin_prefetch(r + o, 0, 2);
    }
}

/* Forward rows [b0, b1): the gates (ig + hg, unless the layer's GEMM summed them into the
 * workspace already: ig NULL), their nonlinearities, cy and hy = o tanh(cy), the activated
 * gates kept as the workspace.  Backward: the gates' and cx's grads. */
int
rnn_lstm_fwd(void *ctx, int64_t b0, int64_t b1)
{
    const LstmCtx *c = ctx;
    const CellOps *op = &c->ops;
    int64_t h = c->h, g = 4 * h;
    size_t es = op->es;
    for (int64_t b = b0; b < b1; b++) {
        char *w = elem(c->ws_out, b * g, es);
        fetch_lines(c->next_ws, b, g, es);   /* Note [LSTM backward fetch] */
        if (c->ig != NULL) {
            op->gate_sum(w, elem(c->ig, b * g, es), elem(c->hg, b * g, es), NULL, NULL, g);
        }
        op->lstm_fwd_row(w, elem(c->cy_out, b * h, es), elem(c->hy, b * h, es),
                         elem(c->cx, b * h, es), c->bi, c->bh, h);
    }
    return 0;
}

int
rnn_lstm_bwd(void *ctx, int64_t b0, int64_t b1)
{
    const LstmCtx *c = ctx;
    const CellOps *op = &c->ops;
    int64_t h = c->h, g = 4 * h;
    size_t es = op->es;
    for (int64_t b = b0; b < b1; b++) {
        fetch_lines(c->next_ws, b, g, es);
        fetch_lines(c->next_cx, b, h, es);
        fetch_lines(c->next_gout, b, c->gout_w, es);
        op->lstm_bwd_row(elem(c->gg, b * (c->ggs ? c->ggs : g), es), elem(c->gcx, b * h, es),
                         elem(c->ws, b * g, es), elem(c->cx, b * h, es), elem(c->cy, b * h, es),
                         elem(c->ghy, b * h, es), elem(c->gcy, b * h, es), h);
    }
    return 0;
}


/* Forward rows [b0, b1): workspace (r, z, n, hx, hn) and hy = n + z (hx - n).  Backward:
 * gz = ghy (hx - n) z(1-z), gn = ghy (1-z)(1-n^2), gr = gn hn r(1-r), ghx = ghy z; input
 * gates get (gr, gz, gn), hidden gates (gr, gz, gn r). */
int
rnn_gru_fwd(void *ctx, int64_t b0, int64_t b1)
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

int
rnn_gru_bwd(void *ctx, int64_t b0, int64_t b1)
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

/* The RNN cells' rows: forward h = act(ig + hg + b_ih + b_hh) into out; backward the gates'
 * gradient gg from h and its gradient gh. */

int
rnn_plain_fwd(void *ctx, int64_t b0, int64_t b1)
{
    const RnnCtx *c = ctx;
    int64_t w = c->width;
    size_t es = c->ops.es;
    for (int64_t b = b0; b < b1; b++) {
        char *y = elem(c->out, b * w, es);
        c->ops.gate_sum(y, elem(c->ig, b * w, es), elem(c->hg, b * w, es), c->bi, c->bh, w);
        (c->relu ? c->ops.relu : c->ops.tanh)(y, w);
    }
    return 0;
}

int
rnn_plain_bwd(void *ctx, int64_t b0, int64_t b1)
{
    const RnnCtx *c = ctx;
    int64_t w = c->width;
    size_t es = c->ops.es;
    for (int64_t b = b0; b < b1; b++) {
        c->ops.rnn_grad(elem(c->gg, b * w, es), elem(c->gh, b * w, es), elem(c->h, b * w, es),
                        c->relu, w);
    }
    return 0;
}

/* out[k] = sum over rows of x[r, k] (x [rows, cols] contiguous), in x's dtype */
void
rnn_sum_rows(const PtlTensorImpl *x, char *out)
{
    int64_t rows = x->dim ? x->sizes[0] : 0, cols = x->dim == 2 ? x->sizes[1] : 0;
    if (x->dtype == PTL_DTYPE_FLOAT32) {
        const float *p = (const float *)ptl_tensor_data(x);
        float *o = (float *)out;
        memset(o, 0, sizeof(float) * (size_t)cols);
        for (int64_t r = 0; r < rows; r++) {
            for (int64_t k = 0; k < cols; k++) {
                o[k] += p[r * cols + k];
            }
        }
    }
    else {
        const double *p = (const double *)ptl_tensor_data(x);
        double *o = (double *)out;
        memset(o, 0, sizeof(double) * (size_t)cols);
        for (int64_t r = 0; r < rows; r++) {
            for (int64_t k = 0; k < cols; k++) {
                o[k] += p[r * cols + k];
            }
        }
    }
}

int
rnn_all_zero(const void *p, int64_t n, size_t es)
{
    for (int64_t i = 0; i < n; i++) {
        if (es == sizeof(float) ? ((const float *)p)[i] != 0 : ((const double *)p)[i] != 0) {
            return 0;
        }
    }
    return 1;
}

int
rnn_all_finite(const void *p, int64_t rows, int64_t cols, int64_t stride, size_t es)
{
    int bad = 0;
    for (int64_t r = 0; r < rows && !bad; r++) {
        if (es == sizeof(float)) {
            const float *x = (const float *)p + r * stride;
            for (int64_t k = 0; k < cols; k++) {
                bad |= !(fabsf(x[k]) <= FLT_MAX);
            }
        }
        else {
            const double *x = (const double *)p + r * stride;
            for (int64_t k = 0; k < cols; k++) {
                bad |= !(fabs(x[k]) <= DBL_MAX);
            }
        }
    }
    return !bad;
}
