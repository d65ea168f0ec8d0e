/* rnn_plan.h -- the per-thread work of the recurrent layer's cell kernels, compiled by nvcc
 * for the device (rnn.cu) and by gcc for the host (rnn_plan.c), whose emulation runs
 * exactly these functions in the kernels' order.  Mirrors the cell kernels of
 * ATen/native/cuda/RNN.cu in behaviour.
 *
 * Note [CUDA recurrent layer]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * _ptl_rnn_layer and its backward run rnn.c's CPU kernel on the CUDA key: its checks, its
 * time loop and its workspace layout (Note [Recurrent layer] there).  On the device a step
 * is the matrix products through the device GEMM (gemm.cu, ptl_gemm_add: h_{t-1} W_hh^T
 * plus input_gates[t], stored straight into the gates as on the CPU; LSTM's projection;
 * the backward's dgates W_hh and dh W_hr) and one launch of a fused pointwise kernel
 * (PtlDeviceRnnStepArgs in device_nn.h): the cell over the running rows and the carry of
 * the others, one thread per (row, hidden unit), with rnn_cell_math.h's formulas, the
 * CPU's scalar rows.  The backward adds grad_output[t] to dh in a launch of its own when
 * there is one (or LSTM projects: its dh W_hr needs the sum first).  The weights' gradients
 * are the CPU's GEMMs over all steps, through the device GEMM, and the biases' column sums
 * are one more (ones[1, T B] times the gates' gradients: the loop calls no dispatcher op, as
 * it runs without the GIL).  The input projection of every step is the caller's one GEMM
 * (nn/modules/rnn.py).
 * Nothing synchronises: the launches queue on the current stream in step order.  float32
 * computes in float (sigmoid and tanh of scalar_math.h / CUDA's tanhf), float64 in double;
 * results differ from the CPU's in the last bits only (the CPU's float rows are vector code
 * and the device fuses multiply-adds).  The fused cells (_thnn_fused_lstm_cell,
 * _thnn_fused_gru_cell and their backwards) are one launch of the same kernel over every row,
 * LSTM's gates given apart (Note [CUDA fused cells] in rnn_cells.c). */
#ifndef PTL_CUDA_RNN_PLAN_H
#define PTL_CUDA_RNN_PLAN_H

#include "../aten/native/device_nn.h"
#include "../aten/native/rnn_cell_math.h"
#include "cuda_api.h"

enum { PTL_RNN_RELU = 0, PTL_RNN_TANH = 1, PTL_RNN_LSTM = 2, PTL_RNN_GRU = 3 };   /* ORDER MODE */

/* The elements one launch covers: [B, P] for BACKWARD_ADD, else [B, H]. */
PTL_HD static inline int64_t
ptl_rnn_step_elems(const PtlDeviceRnnStepArgs *a)
{
    return a->B * (a->pass == PTL_DEVICE_RNN_BACKWARD_ADD ? a->P : a->H);
}

/* The gates a mode has per hidden unit (G = gates H). */
PTL_HD static inline int64_t
ptl_rnn_gates(int mode)
{
    return mode == PTL_RNN_LSTM ? 4 : mode == PTL_RNN_GRU ? 3 : 1;
}

#define PTL_RNN_STEP_FUNCTIONS(T, SUF, SIG, TANH)                                            \
    /* forward, element e = (row b, unit j) */                                               \
    PTL_HD static inline void                                                                \
    ptl_rnn_forward_##SUF(const PtlDeviceRnnStepArgs *a, int64_t e)                          \
    {                                                                                        \
        const int64_t H = a->H, P = a->P, G = ptl_rnn_gates(a->mode) * H;                    \
        const int64_t b = e / H, j = e % H;                                                  \
        const T *bi = (const T *)a->bi, *bh = (const T *)a->bh;                              \
        const T *hprev = (const T *)a->hprev + b * P, *cprev = (const T *)a->cprev;          \
        T *ht = (T *)a->ht + b * P;                                                          \
        if (b >= a->n) {                                                                     \
            if (j < P) {                                                                     \
                ht[j] = hprev[j];                                                            \
            }                                                                                \
            if (a->mode == PTL_RNN_LSTM) {                                                   \
                ((T *)a->ct)[b * H + j] = cprev[b * H + j];                                  \
            }                                                                                \
            if (a->r != NULL) {                                                              \
                ((T *)a->r)[b * H + j] = 0;                                                  \
            }                                                                                \
            return;                                                                          \
        }                                                                                    \
        if (a->mode == PTL_RNN_LSTM) {                                                       \
            T *w = (T *)a->ws + b * G, *hy = a->r != NULL ? (T *)a->r + b * H : ht;          \
            for (int q = 0; q < 4; q++) {                                                    \
                if (a->ig != NULL) {   /* the fused cell: the gates apart */                 \
                    w[q * H + j] = ((const T *)a->ig)[b * G + q * H + j] +                   \
                                   ((const T *)a->hg)[b * G + q * H + j];                    \
                }                                                                            \
                ptl_lstm_gate_##SUF(w, bi, bh, H, q * H + j);                                \
            }                                                                                \
            ptl_lstm_state_##SUF(w, (T *)a->ct + b * H, hy, cprev + b * H, H, j);            \
            return;                                                                          \
        }                                                                                    \
        if (a->mode == PTL_RNN_GRU) {                                                        \
            T *w = (T *)a->ws + b * 5 * H;                                                   \
            const T *ig = (const T *)a->ig + b * G, *hg = (const T *)a->hg + b * G;          \
            for (int q = 0; q < 2; q++) {                                                    \
                const int64_t k = q * H + j;                                                 \
                T s = ig[k] + hg[k];                                                         \
                w[k] = SIG(bi != NULL ? s + bi[k] + bh[k] : s);                              \
            }                                                                                \
            ptl_gru_new_##SUF(w, ig, hg, hprev, bi, bh, H, j);                               \
            w[2 * H + j] = TANH(w[2 * H + j]);                                               \
            ptl_gru_out_##SUF(ht, w, hprev, H, j);                                           \
            return;                                                                          \
        }                                                                                    \
        T s = bi != NULL ? ht[j] + bi[j] + bh[j] : ht[j];                                    \
        ht[j] = a->mode == PTL_RNN_RELU ? (s < 0 ? 0 : s) : TANH(s);                         \
    }                                                                                        \
    /* dh += gout and the projection's copy, element e of [B, P] */                          \
    PTL_HD static inline void                                                                \
    ptl_rnn_backward_add_##SUF(const PtlDeviceRnnStepArgs *a, int64_t e)                     \
    {                                                                                        \
        T *dh = (T *)a->dh;                                                                  \
        if (a->gout != NULL) {                                                               \
            dh[e] = dh[e] + ((const T *)a->gout)[e];                                         \
        }                                                                                    \
        if (a->dhp != NULL) {                                                                \
            ((T *)a->dhp)[e] = e / a->P < a->n ? dh[e] : 0;                                  \
        }                                                                                    \
    }                                                                                        \
    /* backward, element e = (row b, unit j) */                                              \
    PTL_HD static inline void                                                                \
    ptl_rnn_backward_##SUF(const PtlDeviceRnnStepArgs *a, int64_t e)                         \
    {                                                                                        \
        const int64_t H = a->H, P = a->P, G = ptl_rnn_gates(a->mode) * H;                    \
        const int64_t b = e / H, j = e % H;                                                  \
        T *dg = (T *)a->dg + b * G, *dgh = (T *)a->dgh + b * G;                              \
        if (b >= a->n) {                                                                     \
            if (j < P) {                                                                     \
                ((T *)a->dhn)[b * P + j] = ((const T *)a->dh)[b * P + j];                    \
            }                                                                                \
            if (a->mode == PTL_RNN_LSTM) {                                                   \
                ((T *)a->dcn)[b * H + j] = ((const T *)a->dc)[b * H + j];                    \
            }                                                                                \
            for (int64_t k = j; k < G; k += H) {                                             \
                dg[k] = 0;                                                                   \
                if (a->mode == PTL_RNN_GRU) {                                                \
                    dgh[k] = 0;                                                              \
                }                                                                            \
            }                                                                                \
            return;                                                                          \
        }                                                                                    \
        if (a->mode == PTL_RNN_LSTM) {                                                       \
            /* ghy is [B, H]: dh (P = H), or the projection's dh W_hr */                     \
            const T *ghy = a->ghy != NULL ? (const T *)a->ghy + b * H : NULL;                \
            const T *gcy = a->dc != NULL ? (const T *)a->dc + b * H : NULL;                  \
            ptl_lstm_bwd_##SUF(dg, (T *)a->dcn + b * H, (const T *)a->ws + b * G,            \
                               (const T *)a->cprev + b * H, (const T *)a->ct + b * H, ghy,   \
                               gcy, H, j);                                                   \
            return;                                                                          \
        }                                                                                    \
        if (a->mode == PTL_RNN_GRU) {                                                        \
            ptl_gru_grad_##SUF(dg, dgh, (T *)a->dhn + b * P, (const T *)a->ws + b * 5 * H,   \
                               (const T *)a->ghy + b * P, H, j);                             \
            return;                                                                          \
        }                                                                                    \
        dg[j] = ptl_rnn_grad_##SUF(((const T *)a->ghy)[b * P + j], ((const T *)a->ht)[b * P + j], \
                                   a->mode == PTL_RNN_RELU);                                 \
    }                                                                                        \
    PTL_HD static inline void                                                                \
    ptl_rnn_step_##SUF(const PtlDeviceRnnStepArgs *a, int64_t e)                             \
    {                                                                                        \
        if (a->pass == PTL_DEVICE_RNN_FORWARD) {                                             \
            ptl_rnn_forward_##SUF(a, e);                                                     \
        }                                                                                    \
        else if (a->pass == PTL_DEVICE_RNN_BACKWARD_ADD) {                                   \
            ptl_rnn_backward_add_##SUF(a, e);                                                \
        }                                                                                    \
        else {                                                                               \
            ptl_rnn_backward_##SUF(a, e);                                                    \
        }                                                                                    \
    }

PTL_RNN_STEP_FUNCTIONS(float, f4, ptl_sigmoid_f, tanhf)
PTL_RNN_STEP_FUNCTIONS(double, f8, ptl_sigmoid_d, tanh)
#undef PTL_RNN_STEP_FUNCTIONS

#endif
