/* nn_plan.h -- the per-element and per-thread arithmetic of the layer norm, nll_loss and
 * embedding kernels, compiled by nvcc for the device (nn.cu) and by gcc for the host
 * (nn_plan.c), whose emulation runs exactly these functions in the kernels' order.
 * Mirrors ATen/native/cuda/layer_norm_kernel.cu, Loss.cu and Embedding.cu in behaviour.
 *
 * Note [CUDA nn kernels]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * - layer norm, forward and input gradient: one block per row (block = the row length
 *   rounded up to a power of two, 32 to max_threads; rows x, x + grid, ...).  Thread t sums
 *   elements t, t + block, ... in double and the block combines the threads through
 *   reduce.cu's fixed tree (Note [CUDA reduction plan]), so a row's sums are the same run
 *   after run; the mean and the variance are two passes (x, then (x - mean)^2), as on the
 *   CPU.  Double accumulation: float32 rows of 10^5 elements keep float64 accuracy, which
 *   the CPU kernel also gives, and the rows are read from memory either way.  The
 *   elementwise outputs are computed in the row's dtype with the CPU kernel's formulas.
 * - layer norm weight and bias gradients: one thread per column (neighbouring threads read
 *   neighbouring columns), summing its column over the rows in order, in double.  When the
 *   columns give fewer blocks than target_blocks, the rows are split into chunks (blocks
 *   (x, y): chunk y), each chunk's sums go to a workspace and a second pass adds each
 *   column's chunks in order: no atomics, deterministic.
 * - nll_loss: reduction none is one thread per target; mean and sum are one block whose
 *   threads sum targets t, t + block, ... (loss and weight), combined by the same tree.  The
 *   backward is one thread per input-gradient element (zero unless its class is the target),
 *   after a one-block pass for the mean's total weight.
 * - embedding: the forward is one thread per output element (a gather); the backward gives
 *   each thread one column d of a chunk of rows [v0, v1): it walks all the indices in order
 *   and adds the gradient rows of its own rows, so every output element has one writer and
 *   sums in index order, the CPU kernel's order (no atomics, the CPU's bits).  With
 *   scale_grad_by_freq a first pass counts each row (integer atomics: exact).
 * - batch norm (Note [Batch norm channels] in batch_norm.c): each channel's M = n hw values
 *   are split into nsplit chunks (one when the channels alone fill target_blocks, else
 *   enough for target_blocks, of min_chunk values at least); one block per (channel,
 *   chunk) task (tasks x, x + grid, ...) sums its values in double with the block tree
 *   (forward: x - K and (x - K)^2, K the channel's first value, as the CPU's shifted sums;
 *   backward: dy and dy (x - mean)) into a workspace; one thread per channel adds its
 *   chunks in order and computes the channel's statistics and coefficients with the CPU
 *   kernel's formulas (saved statistics, running statistics updated in place, parameter
 *   gradients); one thread per element writes y = a x + k or dx = a dy + b x + k in the
 *   dtype.  No atomics: the same sums run after run.
 * A bad target or index cannot raise on the device: the thread that meets it records it in
 * a status word, which the host reads back after the kernels (a synchronisation) and turns
 * into the CPU kernel's IndexError. */
#ifndef PTL_CUDA_NN_PLAN_H
#define PTL_CUDA_NN_PLAN_H

#include "../aten/native/device_nn.h"
#include "reduce_plan.h"

/* status[0] 1 once a bad index is met, status[1] that index */
PTL_HD static inline void
ptl_nn_flag(int64_t *status, int64_t v)
{
    status[1] = v;
    status[0] = 1;
}

/* ---- layer norm ---- */

PTL_HD static inline double
ptl_ln_load(const PtlDeviceLayerNormArgs *a, const char *p, int64_t i)
{
    return a->dtype == PTL_DTYPE_FLOAT64 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

/* One thread's sum over row r's elements t, t + step, ...: of x (pass 0), of (x - mean)^2
 * (pass 1); of g x in a and g in b with g = dy w (the backward, pass 2). */
PTL_HD static inline PtlRedAcc
ptl_ln_thread_sum(const PtlDeviceLayerNormArgs *a, int pass, int64_t r, double mean, int64_t t,
                  int64_t step)
{
    PtlRedAcc acc = ptl_red_init(PTL_DEVICE_RED_SUM, 0);
    for (int64_t k = t; k < a->n; k += step) {
        double x = ptl_ln_load(a, a->x, r * a->n + k);
        if (pass == 0) {
            acc.a += x;
        }
        else if (pass == 1) {
            acc.a += (x - mean) * (x - mean);
        }
        else {
            double g = ptl_ln_load(a, a->dy, r * a->n + k);
            g = a->w != 0 ? g * ptl_ln_load(a, a->w, k) : g;
            acc.a += g * x;
            acc.b += g;
        }
    }
    return acc;
}

/* y = (x scale + shift) w + b over row r's elements t, t + step, ..., in T */
#define PTL_LN_AFFINE(T)                                                                  \
    do {                                                                                  \
        const T *x = (const T *)a->x + r * a->n, *w = (const T *)a->w, *b = (const T *)a->b; \
        T *y = (T *)a->y + r * a->n;                                                      \
        const T scale = (T)rs, shift = -(T)mean * scale;                                  \
        for (int64_t k = t; k < a->n; k += step) {                                        \
            T v = x[k] * scale + shift;                                                   \
            v = w != 0 ? v * w[k] : v;                                                    \
            y[k] = b != 0 ? v + b[k] : v;                                                 \
        }                                                                                 \
    } while (0)

PTL_HD static inline void
ptl_ln_write_row(const PtlDeviceLayerNormArgs *a, int64_t r, double mean, double rs, int64_t t,
                 int64_t step)
{
    if (t == 0) {
        ptl_red_store_d(a->mean + r * ptl_red_itemsize(a->dtype), a->dtype, mean);
        ptl_red_store_d(a->rstd + r * ptl_red_itemsize(a->dtype), a->dtype, rs);
    }
    if (a->dtype == PTL_DTYPE_FLOAT64) {
        PTL_LN_AFFINE(double);
    }
    else {
        PTL_LN_AFFINE(float);
    }
}
#undef PTL_LN_AFFINE

/* dx = rs (dy w) + bd x + c over row r's elements t, t + step, ..., in T (Note [Layer norm
 * rows] in layer_norm.c), from the row's sums of g x and g */
#define PTL_LN_DX(T)                                                                      \
    do {                                                                                  \
        const T *x = (const T *)a->x + r * a->n, *dy = (const T *)a->dy + r * a->n;       \
        const T *w = (const T *)a->w;                                                     \
        T *dx = (T *)a->dx + r * a->n;                                                    \
        const T ta = (T)rs, tb = (T)bd, tc = (T)c;                                        \
        for (int64_t k = t; k < a->n; k += step) {                                        \
            dx[k] = ta * (w != 0 ? dy[k] * w[k] : dy[k]) + tb * x[k] + tc;                \
        }                                                                                 \
    } while (0)

PTL_HD static inline void
ptl_ln_write_dx(const PtlDeviceLayerNormArgs *a, int64_t r, double sgx, double sg, int64_t t,
                int64_t step)
{
    const double mean = ptl_ln_load(a, a->mean, r), rs = ptl_ln_load(a, a->rstd, r);
    const double bd = (sg * mean - sgx) * rs * rs * rs / (double)a->n;
    const double c = -bd * mean - sg * rs / (double)a->n;
    if (a->dtype == PTL_DTYPE_FLOAT64) {
        PTL_LN_DX(double);
    }
    else {
        PTL_LN_DX(float);
    }
}
#undef PTL_LN_DX

/* column c of the weight and bias gradients, stored in the dtype */
PTL_HD static inline void
ptl_ln_column_store(const PtlDeviceLayerNormArgs *a, int64_t c, double dw, double db)
{
    if (a->dw != 0) {
        ptl_red_store_d(a->dw + c * ptl_red_itemsize(a->dtype), a->dtype, dw);
    }
    if (a->db != 0) {
        ptl_red_store_d(a->db + c * ptl_red_itemsize(a->dtype), a->dtype, db);
    }
}

/* Column c's sums over the rows of chunk y ([y chunk, (y + 1) chunk)), in order, in double:
 * of dy xhat (the weight's) and of dy (the bias').  Unsplit (nsplit 1) they are the
 * gradients; split, they go to ws[2 (y n + c)] and the next double for the second pass. */
PTL_HD static inline void
ptl_ln_column(const PtlDeviceLayerNormArgs *a, int64_t c, int64_t y, int64_t chunk,
              int64_t nsplit, double *ws)
{
    const int64_t r0 = y * chunk, r1 = r0 + chunk < a->m ? r0 + chunk : a->m;
    double dw = 0, db = 0;
    for (int64_t r = r0; r < r1; r++) {
        double dy = ptl_ln_load(a, a->dy, r * a->n + c);
        double xhat = (ptl_ln_load(a, a->x, r * a->n + c) - ptl_ln_load(a, a->mean, r)) *
                      ptl_ln_load(a, a->rstd, r);
        dw += dy * xhat;
        db += dy;
    }
    if (nsplit == 1) {
        ptl_ln_column_store(a, c, dw, db);
        return;
    }
    ws[2 * (y * a->n + c)] = dw;
    ws[2 * (y * a->n + c) + 1] = db;
}

/* The second pass of split column sums: column c's chunks combined in order. */
PTL_HD static inline void
ptl_ln_column_finish(const PtlDeviceLayerNormArgs *a, int64_t c, int64_t nsplit,
                     const double *ws)
{
    double dw = 0, db = 0;
    for (int64_t y = 0; y < nsplit; y++) {
        dw += ws[2 * (y * a->n + c)];
        db += ws[2 * (y * a->n + c) + 1];
    }
    ptl_ln_column_store(a, c, dw, db);
}

/* ---- nll_loss: target e is (batch e / S, position e % S) ---- */

/* target e's weight: 0 for ignore_index (and a bad target, flagged) */
PTL_HD static inline double
ptl_nll_weight(const PtlDeviceNllArgs *a, int64_t e, int64_t *status)
{
    const int64_t t = a->target[e];
    if (t == a->ignore_index) {
        return 0;
    }
    if (t < 0 || t >= a->C) {
        ptl_nn_flag(status, t);
        return 0;
    }
    return a->weight != 0 ? a->weight[t] : 1.0;
}

/* byte offset of input element (batch i, class c, position k) */
PTL_HD static inline int64_t
ptl_nll_offset(const PtlDeviceNllArgs *a, int64_t e, int64_t c)
{
    return ((e / a->S * a->C + c) * a->S + e % a->S) * ptl_red_itemsize(a->dtype);
}

/* target e's loss -w x[target] (0 when its weight is 0), its weight in *wt */
PTL_HD static inline double
ptl_nll_loss_at(const PtlDeviceNllArgs *a, int64_t e, double *wt, int64_t *status)
{
    *wt = ptl_nll_weight(a, e, status);
    if (*wt == 0) {
        return 0;
    }
    return -*wt * ptl_load_double(a->x + ptl_nll_offset(a, e, a->target[e]), (PtlDtype)a->dtype);
}

/* One thread's sums over targets t, t + step, ...: the loss in a, the weight in b (the
 * backward, which has no x, sums the weight only). */
PTL_HD static inline PtlRedAcc
ptl_nll_thread_sum(const PtlDeviceNllArgs *a, int64_t t, int64_t step, int64_t *status)
{
    PtlRedAcc acc = ptl_red_init(PTL_DEVICE_RED_SUM, 0);
    double wt;
    for (int64_t e = t; e < a->N * a->S; e += step) {
        if (a->backward) {
            acc.b += ptl_nll_weight(a, e, status);
        }
        else {
            acc.a += ptl_nll_loss_at(a, e, &wt, status);
            acc.b += wt;
        }
    }
    return acc;
}

/* input-gradient element j: -w g at the target's class, else 0 (total: the mean's weight) */
PTL_HD static inline void
ptl_nll_grad_at(const PtlDeviceNllArgs *a, int64_t j, double total, int64_t *status)
{
    const int64_t k = j % a->S, c = j / a->S % a->C, e = j / (a->S * a->C) * a->S + k;
    double v = 0;
    if (a->target[e] == c) {
        double wt = ptl_nll_weight(a, e, status);
        double g = a->reduction == 0 ? a->grad[e] : a->reduction == 1 ? a->grad[0] / total
                                                                       : a->grad[0];
        v = wt == 0 ? 0 : -wt * g;
    }
    else if (c == 0) {
        ptl_nll_weight(a, e, status);   /* a bad target is flagged once per target */
    }
    ptl_red_store_d(a->out + j * ptl_red_itemsize(a->dtype), a->dtype, v);
}

/* ---- embedding ---- */

/* index i's row, or -1 (flagged) when out of range */
PTL_HD static inline int64_t
ptl_emb_row(const PtlDeviceEmbeddingArgs *a, int64_t i, int64_t *status)
{
    const int64_t v = a->idx[i];
    if (v < 0 || v >= a->V) {
        ptl_nn_flag(status, v);
        return -1;
    }
    return v;
}

/* output element j = (index j / D, column j % D) of the forward: a copy of itemsize bytes */
PTL_HD static inline void
ptl_emb_gather(const PtlDeviceEmbeddingArgs *a, int64_t j, int64_t *status)
{
    const int64_t v = ptl_emb_row(a, j / a->D, status), isz = a->itemsize;
    if (v < 0) {
        return;
    }
    const char *s = a->src + (v * a->D + j % a->D) * isz;
    char *o = a->out + j * isz;
    for (int64_t b = 0; b < isz; b++) {
        o[b] = s[b];
    }
}

/* rows [v0, v1) of column d of the backward's float64 output: zeroed, then every index's
 * gradient in index order (count: each row's index count, for scale_grad_by_freq) */
PTL_HD static inline void
ptl_emb_accumulate(const PtlDeviceEmbeddingArgs *a, int64_t v0, int64_t v1, int64_t d,
                   const int64_t *count, int64_t *status)
{
    double *out = (double *)a->out;
    for (int64_t v = v0; v < v1; v++) {
        out[v * a->D + d] = 0;
    }
    for (int64_t i = 0; i < a->L; i++) {
        const int64_t v = ptl_emb_row(a, i, status);
        if (v < v0 || v >= v1 || v == a->padding_idx) {
            continue;
        }
        double g = a->dtype == PTL_DTYPE_FLOAT32 ? (double)((const float *)a->src)[i * a->D + d]
                                                 : ((const double *)a->src)[i * a->D + d];
        double f = a->scale ? 1.0 / (double)count[v] : 1.0;
        out[v * a->D + d] += f * g;
    }
}

/* ---- batch norm ---- */

/* value i of the [n, c, hw] array p in the job's dtype, as a double */
PTL_HD static inline double
ptl_bn_load(const PtlDeviceBatchNormArgs *a, const char *p, int64_t i)
{
    return a->dtype == PTL_DTYPE_FLOAT64 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

/* channel c of per-channel tensor k, dflt when it is None */
PTL_HD static inline double
ptl_bn_param(const PtlDeviceBatchNormArgs *a, int k, int64_t c, double dflt)
{
    if (a->p[k] == 0) {
        return dflt;
    }
    return ptl_load_double(a->p[k] + c * a->ps[k] * ptl_red_itemsize(a->pdt[k]),
                           (PtlDtype)a->pdt[k]);
}

/* whether the job sums over the channels: the training forward; the backward in training
 * or when a parameter gradient is wanted */
PTL_HD static inline int
ptl_bn_has_sums(const PtlDeviceBatchNormArgs *a)
{
    return a->training || (a->backward && (a->out0 != 0 || a->out1 != 0));
}

/* the value channel c's sums are taken about: its first value (forward), its mean */
PTL_HD static inline double
ptl_bn_ref(const PtlDeviceBatchNormArgs *a, int64_t c)
{
    return a->backward ? ptl_bn_param(a, PTL_DEVICE_BN_MEAN, c, 0)
                       : ptl_bn_load(a, a->x, c * a->hw);
}

/* One thread's sums over values t, t + step, ... of task u (chunk u % nsplit of channel
 * u / nsplit, `chunk` values a chunk): of d = x - ref in a and d^2 in b (forward), of dy in
 * a and dy d in b (backward). */
PTL_HD static inline PtlRedAcc
ptl_bn_thread_sum(const PtlDeviceBatchNormArgs *a, int64_t u, int64_t chunk, int64_t nsplit,
                  int64_t t, int64_t step)
{
    const int64_t c = u / nsplit, m = a->n * a->hw, i0 = u % nsplit * chunk;
    const int64_t i1 = i0 + chunk < m ? i0 + chunk : m;
    const double ref = ptl_bn_ref(a, c);
    PtlRedAcc acc = ptl_red_init(PTL_DEVICE_RED_SUM, 0);
    for (int64_t i = i0 + t; i < i1; i += step) {
        const int64_t off = (i / a->hw * a->c + c) * a->hw + i % a->hw;
        const double d = ptl_bn_load(a, a->x, off) - ref;
        const double v = a->backward ? ptl_bn_load(a, a->dy, off) : d;
        acc.a += v;
        acc.b += v * d;
    }
    return acc;
}

/* Channel c: its chunks' sums (ws[2 (c nsplit + q)], [.. + 1]) added in order, then its
 * coefficients a, b, k into coef[3 c ..] (the elementwise pass: out = a p + b x + k) and
 * its per-channel outputs, with batch_norm.c's formulas. */
PTL_HD static inline void
ptl_bn_channel(const PtlDeviceBatchNormArgs *a, int64_t c, int64_t nsplit, const double *ws,
               double *coef)
{
    const double m = (double)(a->n * a->hw), w = ptl_bn_param(a, PTL_DEVICE_BN_W, c, 1.0);
    const int64_t osz = ptl_red_itemsize(a->odt);
    double s1 = 0, s2 = 0, mean, inv;
    if (ptl_bn_has_sums(a)) {
        for (int64_t q = 0; q < nsplit; q++) {
            s1 += ws[2 * (c * nsplit + q)];
            s2 += ws[2 * (c * nsplit + q) + 1];
        }
    }
    if (a->backward) {
        mean = ptl_bn_param(a, PTL_DEVICE_BN_MEAN, c, 0);
        inv = ptl_bn_param(a, PTL_DEVICE_BN_VAR, c, 1);
        inv = a->training ? inv : 1.0 / sqrt(inv + a->eps);
        const double ca = w * inv, cb = a->training ? -ca * inv * inv * s2 / m : 0.0;
        coef[3 * c] = ca;
        coef[3 * c + 1] = cb;
        coef[3 * c + 2] = a->training ? -ca * s1 / m - cb * mean : 0.0;
        if (a->out0 != 0) {
            ptl_red_store_d(a->out0 + c * osz, a->odt, s2 * inv);
        }
        if (a->out1 != 0) {
            ptl_red_store_d(a->out1 + c * osz, a->odt, s1);
        }
        return;
    }
    double var;
    if (a->training) {
        const double d = s1 / m, v = s2 / m - d * d;
        mean = ptl_bn_ref(a, c) + d;
        var = v > 0 ? v : 0;
    }
    else {
        mean = ptl_bn_param(a, PTL_DEVICE_BN_MEAN, c, 0);
        var = ptl_bn_param(a, PTL_DEVICE_BN_VAR, c, 1);
    }
    inv = 1.0 / sqrt(var + a->eps);
    coef[3 * c] = w * inv;
    coef[3 * c + 1] = 0;
    coef[3 * c + 2] = ptl_bn_param(a, PTL_DEVICE_BN_B, c, 0) - mean * coef[3 * c];
    if (!a->training) {
        return;
    }
    ptl_red_store_d(a->out0 + c * osz, a->odt, mean);
    ptl_red_store_d(a->out1 + c * osz, a->odt, inv);
    const double mom = a->momentum, unbiased = var * m / (m - 1);
    for (int k = PTL_DEVICE_BN_MEAN; k <= PTL_DEVICE_BN_VAR; k++) {
        if (a->p[k] != 0) {
            char *p = a->p[k] + c * a->ps[k] * ptl_red_itemsize(a->pdt[k]);
            const double v = k == PTL_DEVICE_BN_MEAN ? mean : unbiased;
            ptl_red_store_d(p, a->pdt[k], (1 - mom) * ptl_load_double(p, (PtlDtype)a->pdt[k]) +
                                              mom * v);
        }
    }
}

/* out element j = a p + b x + k in T, p = x (forward) or dy (backward; x only where b) */
#define PTL_BN_AFFINE(T)                                                                  \
    do {                                                                                  \
        const T *x = (const T *)a->x, *p = a->backward ? (const T *)a->dy : x;            \
        const T ca = (T)coef[3 * c], cb = (T)coef[3 * c + 1], ck = (T)coef[3 * c + 2];    \
        ((T *)a->y)[j] = coef[3 * c + 1] != 0 ? ca * p[j] + cb * x[j] + ck : ca * p[j] + ck; \
    } while (0)

PTL_HD static inline void
ptl_bn_affine_at(const PtlDeviceBatchNormArgs *a, int64_t j, const double *coef)
{
    const int64_t c = j / a->hw % a->c;
    if (a->dtype == PTL_DTYPE_FLOAT64) {
        PTL_BN_AFFINE(double);
    }
    else {
        PTL_BN_AFFINE(float);
    }
}
#undef PTL_BN_AFFINE

#endif
