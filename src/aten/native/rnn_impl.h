/* rnn_impl.h -- what the fused cells (rnn_cells.c) and the recurrent layer (rnn.c) share with
 * each other, with the cells' row formulas in rnn_rows.c (one dtype's nonlinearities and rows,
 * and the cells over a range of batch rows, Note [Fused cells]) and with their argument checks
 * in rnn_checks.c. */
#ifndef PTL_ATEN_NATIVE_RNN_IMPL_H
#define PTL_ATEN_NATIVE_RNN_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "../../c10/dtype.h"
#include "../../c10/parallel.h"
#include "native.h"

typedef void (*ArrayFn)(void *y, int64_t n);

/* the modes of the layer and of the cell kernel (cuDNN's numbers, Note [Recurrent layer] in
 * rnn.c) */
enum { MODE_RNN_RELU = 0, MODE_RNN_TANH = 1, MODE_LSTM = 2, MODE_GRU = 3 };
/* added to the layer's mode: its input form (LSTM and RNN, no gradient; Note [Recurrent
 * layer]) */
enum { MODE_INPUT_FORM = 8 };
/* added to an LSTM's mode: x, with W_ih in w_hr's place, projected step by step (Note [LSTM
 * step projections] in rnn.c) */
enum { MODE_STEP_PROJECTIONS = 16 };

/* One dtype's element size, nonlinearities (in place) and row formulas. */
typedef struct CellOps {
    size_t es;
    ArrayFn sigmoid, tanh;
    void (*gate_sum)(void *w, const void *ig, const void *hg, const void *bi, const void *bh,
                     int64_t n);
    void (*lstm_fwd_row)(void *w, void *cy, void *hy, const void *cx, const void *bi,
                         const void *bh, int64_t h);
    void (*lstm_bwd_row)(void *gg, void *gcx, const void *w, const void *cx, const void *cy,
                         const void *ghy, const void *gcy, int64_t h);
    void (*gru_new)(void *w, const void *ig, const void *hg, const void *hx, const void *bi,
                    const void *bh, int64_t h);
    void (*gru_out)(void *hy, const void *w, const void *hx, int64_t h);
    void (*gru_grad)(void *gi, void *gh, void *ghx, const void *w, const void *ghy, int64_t h);
    ArrayFn relu;
    void (*rnn_grad)(void *g, const void *gh, const void *h, int relu, int64_t n);
} CellOps;

/* The rows of dtype dt (float32 or float64), float32's vector forms chosen for this CPU. */
CellOps rnn_cell_ops(PtlDtype dt);

/* Element i of the array at p (NULL stays NULL). */
static inline char *
elem(const void *p, int64_t i, size_t es)
{
    return p != NULL ? (char *)p + (size_t)i * es : NULL;
}

/* The cells over batch rows [b0, b1), as ptl_parallel_for tasks (Note [Fused cells] in
 * rnn_cells.c): what the fused cell ops and the recurrent layer's steps run.  LSTM and GRU: a
 * forward and a backward each; RNN_TANH / RNN_RELU (plain): the same. */
typedef struct LstmCtx {
    const void *ig, *hg, *cx, *bi, *bh, *ghy, *gcy, *cy, *ws;
    void *hy, *cy_out, *ws_out, *gg, *gcx;
    int64_t h;
    int64_t ggs;                            /* gg's row stride; 0: 4h */
    /* the recurrent layer's backward: the next step's rows of ws, cx (rows 4h and h apart)
     * and grad_output (rows gout_w apart), fetched row by row ahead of use, or NULL (Note
     * [LSTM backward fetch] in rnn_rows.c); its forward: the next step's input gates in
     * next_ws */
    const void *next_ws, *next_cx, *next_gout;
    int64_t gout_w;
    CellOps ops;
} LstmCtx;

typedef struct GruCtx {
    const void *ig, *hg, *hx, *bi, *bh, *ghy, *ws;
    void *hy, *ws_out, *gig, *ghg, *ghx;
    int64_t h;
    CellOps ops;
} GruCtx;

typedef struct RnnCtx {
    const void *ig, *hg, *bi, *bh, *h, *gh;
    void *out, *gg;
    int64_t width;
    int relu;
    CellOps ops;
} RnnCtx;

int rnn_lstm_fwd(void *ctx, int64_t b0, int64_t b1);
int rnn_lstm_bwd(void *ctx, int64_t b0, int64_t b1);
int rnn_gru_fwd(void *ctx, int64_t b0, int64_t b1);
int rnn_gru_bwd(void *ctx, int64_t b0, int64_t b1);
int rnn_plain_fwd(void *ctx, int64_t b0, int64_t b1);
int rnn_plain_bwd(void *ctx, int64_t b0, int64_t b1);

/* out[k] = sum over rows of x[r, k] (x [rows, cols] contiguous), in x's dtype */
void rnn_sum_rows(const PtlTensorImpl *x, char *out);
/* Whether the n elements at p (float when es is 4, else double) are all +0 or -0: the
 * recurrent layer's zero initial state (Note [Recurrent layer]). */
int rnn_all_zero(const void *p, int64_t n, size_t es);
/* Whether the rows x cols elements at p, rows stride elements apart, are all finite: a zero
 * state's product may be skipped only then (0 * inf is nan) */
int rnn_all_finite(const void *p, int64_t rows, int64_t cols, int64_t stride, size_t es);

/* ---- the argument checks (rnn_checks.c); each 0, or -1 with PyTorch's error ---- */

/* One tensor argument of fn, as PyTorch's messages name it */
typedef struct RnnArg {
    PtlTensorImpl *t;   /* borrowed; NULL for None */
    const char *name;
    int pos;            /* 1-based, as in PyTorch's messages */
} RnnArg;
int rnn_check_dim(const char *fn, RnnArg a, int dim);
int rnn_check_same_size(const char *fn, RnnArg a, RnnArg b);
int rnn_check_numel(const char *fn, RnnArg a, int64_t numel);
/* args[0..n) (NULL tensors skipped) share args[0]'s dtype, float32 or float64 */
int rnn_check_dtypes(const PtlOperator *op, const RnnArg *args, int n);
/* the forward cells' checks (s: the op's stack); *hidden gets the hidden size */
int rnn_check_cell(const PtlOperator *op, const char *fn, const PtlIValue *s,
                   const char *state_name, int64_t factor, int64_t *hidden);
/* t[0..k) (NULL skipped) on t[0]'s device; names[i] names t[i] in the message */
int rnn_check_same_device(const char *fn, PtlTensorImpl *const *t, const char *const *names,
                          int k);
/* PyTorch's checkSize: a has exactly these sizes */
int rnn_check_size(const char *fn, RnnArg a, int dim, const int64_t *sizes);
/* a given (wanted) or None (!wanted), else the error "fn: msg" */
int rnn_check_given(const char *fn, RnnArg a, int wanted, const char *msg);
/* The checks both layer ops share, for mode (without MODE_INPUT_FORM), batch B, gates G and
 * input width I (the input form's; else 0): hx [B, P], cx [B, H] (LSTM only), w_hh
 * [G, I + P], w_hr [P, H] (LSTM only; without it P = H).  Sets *H and *P. */
int rnn_check_layer(const char *fn, int mode, int64_t B, int64_t G, int64_t I, RnnArg hx,
                    RnnArg cx, RnnArg w_hh, RnnArg w_hr, int64_t *H, int64_t *P);
/* batch_sizes: None (*c = NULL), or int64 [T] of values in [0, B]: *c its contiguous copy
 * (new ref) */
int rnn_check_batch_sizes(const char *fn, RnnArg a, int64_t T, int64_t B, PtlTensorImpl **c);

/* ---- what the cells (rnn_cells.c) and the layer (rnn.c) share ---- */

/* The fused cells' CPU kernels (rnn_cells.c), registered in rnn.c's table */
int rnn_lstm_cell_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s);
int rnn_lstm_cell_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s);
int rnn_gru_cell_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s);
int rnn_gru_cell_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s);

/* Contiguous versions of the k tensors t[i] (NULL stays NULL): new refs in c[]. */
static inline int
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

static inline void
release_all(PtlTensorImpl **t, int k)
{
    for (int i = 0; i < k; i++) {
        PTL_CLEAR(t[i]);
    }
}

static inline PtlTensorImpl *
new_2d(int64_t rows, int64_t cols, const PtlTensorImpl *like)
{
    int64_t sizes[2] = {rows, cols};
    return ptl_empty(2, sizes, like->dtype, like->device);
}

static inline PtlTensorImpl *
new_1d(int64_t n, const PtlTensorImpl *like)
{
    return ptl_empty(1, &n, like->dtype, like->device);
}

#define DATA(T, X) ((X) != NULL ? (T *)ptl_tensor_data(X) : NULL)

/* Rows per parallel chunk for rows of `width` elements. */
static inline int64_t
row_grain(int64_t width)
{
    return width > 0 ? PTL_GRAIN_SIZE / width + 1 : 1;
}

#endif
