/* rnn_cell_math.h -- the recurrent cells' formulas for one hidden unit j of a batch row
 * (Note [Fused cells] in rnn_cells.c), per dtype: what rnn_rows.c's scalar rows loop over, and
 * what the CUDA recurrent layer's cell kernels (src/cuda/rnn_plan.h) run per thread.  One
 * source, two compilers, as scalar_math.h; rnn_rows.c's vector rows compute the same
 * operations in the same order.  Rows: w the gates (LSTM 4h, GRU's workspace 5h), others
 * h wide; bi and bh may be NULL (no bias). */
#ifndef PTL_ATEN_NATIVE_RNN_CELL_MATH_H
#define PTL_ATEN_NATIVE_RNN_CELL_MATH_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "../../c10/macros.h"
#include "../scalar_math.h"

/* lstm_gate: w[k] holds gate element k's sum (k in [0, 4h)) and gets (+ bi + bh, then) its
 * activation (i, f, g, o: tanh for g, the sigmoid for the others); lstm_state, from the
 * activated gates at j, h + j, 2h + j, 3h + j: cy = f cx + i g, hy = o tanh(cy).
 * lstm_bwd: from w, cx, cy and the grads of hy and cy (NULL: zero), the gates' grads gg
 * and gcx.
 * gru_new: the workspace's n (before its tanh), hx and hn from the activated r; gru_out:
 * hy = n + z (hx - n); gru_grad: the input and hidden gates' grads and ghx.
 * rnn_grad: the RNN cells' pre-activation gradient from h = act(.): gh (1 - h^2) for tanh,
 * gh [h > 0] for relu. */
#define PTL_RNN_CELL_FORMULAS(T, SUF, SIG, TANH)                                             \
    PTL_HD static inline void                                                                \
    ptl_lstm_gate_##SUF(T *w, const T *bi, const T *bh, int64_t h, int64_t k)                \
    {                                                                                        \
        T a = bi != NULL ? w[k] + bi[k] + bh[k] : w[k];                                      \
        w[k] = k >= 2 * h && k < 3 * h ? TANH(a) : SIG(a);                                   \
    }                                                                                        \
    PTL_HD static inline void                                                                \
    ptl_lstm_state_##SUF(const T *w, T *cy, T *hy, const T *cx, int64_t h, int64_t j)        \
    {                                                                                        \
        cy[j] = w[h + j] * cx[j] + w[j] * w[2 * h + j];                                      \
        hy[j] = w[3 * h + j] * TANH(cy[j]);                                                  \
    }                                                                                        \
    PTL_HD static inline void                                                                \
    ptl_lstm_bwd_##SUF(T *gg, T *gcx, const T *w, const T *cx, const T *cy, const T *ghy,    \
                       const T *gcy, int64_t h, int64_t j)                                   \
    {                                                                                        \
        T i = w[j], f = w[h + j], gt = w[2 * h + j], o = w[3 * h + j], tc = TANH(cy[j]);     \
        T gh = ghy ? ghy[j] : 0, gct = gh * o * (1 - tc * tc) + (gcy ? gcy[j] : 0);          \
        gg[j] = gct * gt * i * (1 - i);                                                      \
        gg[h + j] = gct * cx[j] * f * (1 - f);                                               \
        gg[2 * h + j] = gct * i * (1 - gt * gt);                                             \
        gg[3 * h + j] = gh * tc * o * (1 - o);                                               \
        gcx[j] = gct * f;                                                                    \
    }                                                                                        \
    PTL_HD static inline void                                                                \
    ptl_gru_new_##SUF(T *w, const T *ig, const T *hg, const T *hx, const T *bi, const T *bh, \
                      int64_t h, int64_t j)                                                  \
    {                                                                                        \
        T hn = bi != NULL ? hg[2 * h + j] + bh[2 * h + j] : hg[2 * h + j];                   \
        T xn = bi != NULL ? ig[2 * h + j] + bi[2 * h + j] : ig[2 * h + j];                   \
        w[2 * h + j] = xn + w[j] * hn;                                                       \
        w[3 * h + j] = hx[j];                                                                \
        w[4 * h + j] = hn;                                                                   \
    }                                                                                        \
    PTL_HD static inline void                                                                \
    ptl_gru_out_##SUF(T *hy, const T *w, const T *hx, int64_t h, int64_t j)                  \
    {                                                                                        \
        hy[j] = w[2 * h + j] + w[h + j] * (hx[j] - w[2 * h + j]);                            \
    }                                                                                        \
    PTL_HD static inline void                                                                \
    ptl_gru_grad_##SUF(T *gi, T *gh, T *ghx, const T *w, const T *ghy, int64_t h, int64_t j) \
    {                                                                                        \
        T r = w[j], z = w[h + j], n = w[2 * h + j], go = ghy[j];                             \
        T gn = go * (1 - z) * (1 - n * n), gr = gn * w[4 * h + j] * r * (1 - r);             \
        gi[j] = gh[j] = gr;                                                                  \
        gi[h + j] = gh[h + j] = go * (w[3 * h + j] - n) * z * (1 - z);                       \
        gi[2 * h + j] = gn;                                                                  \
        gh[2 * h + j] = gn * r;                                                              \
        ghx[j] = go * z;                                                                     \
    }                                                                                        \
    PTL_HD static inline T                                                                   \
    ptl_rnn_grad_##SUF(T gh, T h, int relu)                                                  \
    {                                                                                        \
        return relu ? (h > 0 ? gh : 0) : gh * (1 - h * h);                                   \
    }

PTL_RNN_CELL_FORMULAS(float, f4, ptl_sigmoid_f, tanhf)
PTL_RNN_CELL_FORMULAS(double, f8, ptl_sigmoid_d, tanh)
#undef PTL_RNN_CELL_FORMULAS

#endif
