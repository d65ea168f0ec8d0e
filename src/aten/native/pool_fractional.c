/* pool_fractional.c -- fractional max pooling (2-D and 3-D) and its backward.  Mirrors
 * ATen/native/FractionalMaxPool2d.cpp and FractionalMaxPool3d.cpp.
 *
 * Note [Fractional pooling windows]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Each plane (n, c) pools k-wide windows whose starts along a dim of input size `in` and
 * output size `out` come from one random sample u in [0, 1) of that plane (Graham's
 * pseudo-random sequence): alpha = (in - k) / (out - 1), start[i] = int((i + u) * alpha) -
 * int(u * alpha) for i < out - 1, and start[out - 1] = in - k, so the windows span the
 * input.  PyTorch evaluates this in the input's dtype (float16 arithmetic for a float16
 * input), and so do we, rounding after every operation, so that the same random_samples
 * give the same windows, values and indices bit for bit.  random_samples is (N', C, nd)
 * with N' >= N; 2-D planes take sample 0 for the width and 1 for the height, 3-D ones 0, 1,
 * 2 for time, height, width.  The maximum of a window and the flat index of the winner
 * within its plane follow max pooling (`v > max || isnan(v)` from -inf, the window's first
 * position when nothing wins), taken as a compare mask, not a branch (frac_row: on random
 * data the branch was a coin toss; with it and one output's comparisons in a chain the
 * float32 8x32x64x64, k 3 -> 32x32 forward took 8.4 ms, PyTorch's time, and 3.4 without,
 * one thread).  Planes run in parallel after the sequences are drawn up.
 * The backward adds grad_output into grad_input at the recorded indices, output by output,
 * in grad_output's dtype (float16 sums rounded to float16), as PyTorch's does. */
#include <emmintrin.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "../../c10/parallel.h"
#include "pool_impl.h"

/* One fractional pooling: 3 spatial dims (time, height, width; 2-D has time 1). */
typedef struct Frac {
    int64_t planes;
    int64_t in[3], out[3], k[3];
    int64_t *seq;            /* planes x (out[0] + out[1] + out[2]) window starts */
    const char *x;           /* forward input / backward grad_output, the work dtype */
    char *y;                 /* forward output / backward grad_input */
    int64_t *idx;            /* forward: written */
    const int64_t *cidx;     /* backward: read */
    PtlDtype dt;             /* backward: grad_output's dtype, whose arithmetic the sums take */
} Frac;

/* v rounded to dt's precision (float16 and bfloat16 through float, as their arithmetic) */
static double
rnd(PtlDtype dt, double v)
{
    switch (dt) {
    case PTL_DTYPE_FLOAT32: return (double)(float)v;
    case PTL_DTYPE_FLOAT16: return (double)ptl_half_to_f(ptl_f_to_half((float)v));
    case PTL_DTYPE_BFLOAT16: return (double)ptl_bf16_to_f(ptl_f_to_bf16((float)v));
    default: return v;
    }
}

/* C++'s static_cast<int> of v; INT64_MIN (a start no window has) for NaN or out of range */
static int64_t
to_int(double v)
{
    return v > (double)INT_MIN - 1.0 && v < (double)INT_MAX + 1.0 ? (int64_t)(int)v : INT64_MIN;
}

/* The window starts seq[0..out) of one dim from sample u (Note [Fractional pooling
 * windows]), computed in dt. */
static void
intervals(PtlDtype dt, double u, int64_t in, int64_t out, int64_t k, int64_t *seq)
{
    if (out > 1) {
        double alpha = rnd(dt, rnd(dt, (double)(in - k)) / rnd(dt, (double)(out - 1)));
        int64_t first = to_int(rnd(dt, u * alpha));
        for (int64_t i = 0; i < out - 1; i++) {
            int64_t at = to_int(rnd(dt, rnd(dt, rnd(dt, (double)i) + u) * alpha));
            seq[i] = at == INT64_MIN || first == INT64_MIN ? INT64_MIN : at - first;
        }
    }
    if (out > 0) {
        seq[out - 1] = in - k;
    }
}

/* One output row (t, h) of a plane: each window row (t2, h2) in turn meets every output
 * of the row, so that the outputs' comparisons are independent chains (one output's nine
 * comparisons in a row, each waiting for the last, took most of the time); each output
 * still sees its window's elements in the order (t2, h2, w2).  m and best: out[2] each. */
static inline void
frac_row(const Frac *f, int f8, const char *x, int64_t t0, int64_t h0, const int64_t *sw,
         double *m, int64_t *best)
{
    int64_t ow = f->out[2], kw = f->k[2];
    for (int64_t w = 0; w < ow; w++) {
        m[w] = -INFINITY;
        best[w] = (t0 * f->in[1] + h0) * f->in[2] + sw[w];
    }
    for (int64_t t2 = t0; t2 < t0 + f->k[0]; t2++) {
        for (int64_t h2 = h0; h2 < h0 + f->k[1]; h2++) {
            int64_t row = (t2 * f->in[1] + h2) * f->in[2];
            for (int64_t w = 0; w < ow; w++) {
                __m128d mw = _mm_set_sd(m[w]);
                int64_t bw = best[w];
                for (int64_t w2 = row + sw[w]; w2 < row + sw[w] + kw; w2++) {
                    /* v > mw || isnan(v) as an all-ones mask, not a branch: on random data
                     * the branch was a coin toss, and the compiler turns a C select back
                     * into one */
                    __m128d v = _mm_set_sd(nn_load(f8, x, w2));
                    __m128d take = _mm_or_pd(_mm_cmpgt_sd(v, mw), _mm_cmpunord_sd(v, v));
                    int64_t t = _mm_cvtsi128_si64(_mm_castpd_si128(take));
                    mw = _mm_or_pd(_mm_and_pd(take, v), _mm_andnot_pd(take, mw));
                    bw = (bw & ~t) | (w2 & t);
                }
                m[w] = _mm_cvtsd_f64(mw);
                best[w] = bw;
            }
        }
    }
}

/* Max of each window of planes [b, e) (f8: float64, else float32) */
static inline int
frac_fwd(const Frac *f, int f8, int64_t b, int64_t e)
{
    int64_t ivol = f->in[0] * f->in[1] * f->in[2], ovol = f->out[0] * f->out[1] * f->out[2];
    int64_t nseq = f->out[0] + f->out[1] + f->out[2], ow = f->out[2];
    double *m = malloc(sizeof(double) * (size_t)(ow > 0 ? ow : 1));
    int64_t *best = malloc(sizeof(int64_t) * (size_t)(ow > 0 ? ow : 1));
    if (m == NULL || best == NULL) {
        free(m);
        free(best);
        return ptl_error_set(PTL_ERR_MEMORY, "can't allocate fractional pooling rows");
    }
    for (int64_t pl = b; pl < e; pl++) {
        const int64_t *st = f->seq + pl * nseq, *sh = st + f->out[0], *sw = sh + f->out[1];
        const char *x = f->x + (size_t)(pl * ivol) * (f8 ? 8 : 4);
        char *y = f->y + (size_t)(pl * ovol) * (f8 ? 8 : 4);
        int64_t *ix = f->idx + pl * ovol, o = 0;
        for (int64_t t = 0; t < f->out[0]; t++) {
            for (int64_t h = 0; h < f->out[1]; h++, o += ow) {
                frac_row(f, f8, x, st[t], sh[h], sw, m, best);
                for (int64_t w = 0; w < ow; w++) {
                    nn_store(f8, y, o + w, m[w]);
                    ix[o + w] = best[w];
                }
            }
        }
    }
    free(m);
    free(best);
    return 0;
}

/* grad_input (zeroed) of planes [b, e) += grad_output at the indices, each sum rounded to
 * f->dt as PyTorch adds in float16 / bfloat16 for those dtypes */
static inline int
frac_bwd(const Frac *f, int f8, int64_t b, int64_t e)
{
    int64_t ivol = f->in[0] * f->in[1] * f->in[2], ovol = f->out[0] * f->out[1] * f->out[2];
    for (int64_t pl = b; pl < e; pl++) {
        const char *g = f->x + (size_t)(pl * ovol) * (f8 ? 8 : 4);
        char *gi = f->y + (size_t)(pl * ivol) * (f8 ? 8 : 4);
        const int64_t *ix = f->cidx + pl * ovol;
        for (int64_t o = 0; o < ovol; o++) {
            if (ix[o] < 0 || ix[o] >= ivol) {
                return ptl_error_set(PTL_ERR_RUNTIME,
                                     "fractional max pooling backward: index %lld is out of "
                                     "bounds for an input plane of %lld elements",
                                     (long long)ix[o], (long long)ivol);
            }
            nn_store(f8, gi, ix[o], rnd(f->dt, nn_load(f8, gi, ix[o]) + nn_load(f8, g, o)));
        }
    }
    return 0;
}

#define DEFINE_FRAC(SUF, F8)                                                              \
    static int                                                                            \
    frac_fwd_##SUF(void *ctx, int64_t b, int64_t e)                                       \
    {                                                                                     \
        return frac_fwd(ctx, F8, b, e);                                                   \
    }                                                                                     \
    static int                                                                            \
    frac_bwd_##SUF(void *ctx, int64_t b, int64_t e)                                       \
    {                                                                                     \
        return frac_bwd(ctx, F8, b, e);                                                   \
    }
DEFINE_FRAC(f4, 0)
DEFINE_FRAC(f8, 1)
#undef DEFINE_FRAC

/* Runs fn over the planes of f in parallel without the GIL. */
static int
run_planes(const Frac *f, PtlParallelFn fn)
{
    int64_t per = f->in[0] * f->in[1] * f->in[2] + f->out[0] * f->out[1] * f->out[2];
    int64_t grain = per > 0 ? PTL_GRAIN_SIZE / per + 1 : 1;
    void *tok = ptl_nogil_begin();
    int rc = ptl_parallel_for(0, f->planes, grain, fn, (void *)f);
    ptl_nogil_end(tok);
    return rc;
}

/* The names PyTorch's messages use: [nd == 3] */
static const char *const op_name[2] = {"fractional_max_pool2d", "fractional_max_pool3d"};
static const char *const fwd_name[2] = {"fractional_max_pool2d()", "fractional_max_pool3d_out()"};
static const char *const dim_name[3] = {"time", "height", "width"};

/* Reads kernel_size and output_size (int[nd] each) and checks x as PyTorch's forward does,
 * filling f's sizes.  0 or -1. */
static int
frac_setup(int nd, PtlTensorImpl *x, const PtlIValue *ks, const PtlIValue *os, Frac *f)
{
    int three = nd == 3;
    char buf[128];
    if (ks->u.il.n != nd || os->u.il.n != nd) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: %s must either be a single Int or tuple of %s",
                             op_name[three], ks->u.il.n != nd ? "kernel_size" : "output_size",
                             three ? "three Ints" : "Ints");
    }
    if (x->dim != nd + 1 && x->dim != nd + 2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: Expected %dD or %dD tensor, but got: %s",
                             fwd_name[three], nd + 1, nd + 2,
                             ptl_format_sizes(buf, sizeof(buf), x->dim, x->sizes));
    }
    for (int i = 1; i < x->dim; i++) {
        if (x->sizes[i] == 0) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "%s: Expected input to have non-zero size for non-batch "
                                 "dimensions, but got%s with dimension %d being empty.",
                                 fwd_name[three],
                                 ptl_format_sizes(buf, sizeof(buf), x->dim, x->sizes), i);
        }
    }
    f->planes = 1;
    for (int i = 0; i < x->dim - nd; i++) {
        f->planes *= x->sizes[i];
    }
    for (int i = 0; i < 3; i++) {
        int u = i - (3 - nd);
        f->in[i] = u < 0 ? 1 : x->sizes[x->dim - nd + u];
        f->out[i] = u < 0 ? 1 : os->u.il.data[u];
        f->k[i] = u < 0 ? 1 : ks->u.il.data[u];
    }
    for (int i = 3 - nd; i < 3; i++) {
        /* 2-D: the last window may end at the input's end; 3-D: strictly before it */
        int64_t end = f->out[i] + f->k[i] - 1;
        if (three ? end >= f->in[i] : end > f->in[i]) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "%s: pool %s %lld too large relative to input %s %lld",
                                 fwd_name[three], dim_name[i], (long long)f->k[i], dim_name[i],
                                 (long long)f->in[i]);
        }
    }
    return 0;
}

/* PyTorch's fractional_max_pool_check_shape: random_samples r against x */
static int
check_samples(int nd, const PtlTensorImpl *x, const PtlTensorImpl *r)
{
    int batched = x->dim == nd + 2;
    if (r->dtype != x->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Expect _random_samples to have the same dtype as input");
    }
    if (r->dim != 3) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Expect _random_samples to have 3 dimensions, got %d",
                             r->dim);
    }
    if (r->sizes[0] < (batched ? x->sizes[0] : 1)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Expect _random_samples.size(0) no less then input batch size.");
    }
    if (r->sizes[1] != x->sizes[batched ? 1 : 0]) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Expect _random_samples.size(1) equals to input channel size.");
    }
    if (r->sizes[2] != nd) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Expect _random_samples.size(2) equals to %d; got %lld.", nd,
                             (long long)r->sizes[2]);
    }
    return 0;
}

/* The window starts of every plane from the samples r (contiguous, x's dtype dt), checked
 * to lie inside the input.  0 or -1. */
static int
draw_windows(Frac *f, int nd, PtlDtype dt, const PtlTensorImpl *r)
{
    int64_t nseq = f->out[0] + f->out[1] + f->out[2];
    size_t n = (size_t)(f->planes * nseq);
    f->seq = malloc(n > 0 ? n * sizeof(int64_t) : 1);
    if (f->seq == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "can't allocate fractional pooling windows");
    }
    const char *rp = ptl_tensor_data(r);
    size_t isz = ptl_tensor_itemsize(r);
    for (int64_t pl = 0; pl < f->planes; pl++) {
        int64_t *seq = f->seq + pl * nseq;
        /* 2-D: the one window along time starts at 0 */
        if (nd == 2) {
            *seq++ = 0;
        }
        for (int i = 3 - nd; i < 3; i++) {
            /* 2-D: sample 0 is the width's, 1 the height's; 3-D: in dim order */
            int64_t j = nd == 2 ? 2 - i : i;
            double u = ptl_load_double(rp + (size_t)(pl * nd + j) * isz, dt);
            intervals(dt, u, f->in[i], f->out[i], f->k[i], seq);
            for (int64_t o = 0; o < f->out[i] && f->k[i] > 0; o++) {
                if (seq[o] < 0 || seq[o] > f->in[i] - f->k[i]) {
                    return ptl_error_set(PTL_ERR_RUNTIME,
                                         "%s: the random sample %g puts a pooling window "
                                         "outside the input along its %s",
                                         op_name[nd == 3], u, dim_name[i]);
                }
            }
            seq += f->out[i];
        }
    }
    return 0;
}

/* fractional_max_pool{2,3}d(Tensor self, int[nd] kernel_size, int[nd] output_size,
 * Tensor random_samples) -> (Tensor, Tensor):  (N, C, *in) -> (N, C, *output_size) twice */
static int
fractional_max_pool_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int nd = op == ptl_op(PTL_OP_fractional_max_pool3d) ? 3 : 2;
    PtlTensorImpl *x = s[0].u.t, *r = s[3].u.t, *xc = NULL, *rc = NULL, *y = NULL, *ix = NULL;
    Frac f = {0};
    int64_t osz[PTL_MAX_DIMS];
    PtlDtype work = nn_work_dtype(x->dtype);
    if (frac_setup(nd, x, &s[1], &s[2], &f) < 0) {
        return -1;
    }
    for (int i = 0; i < x->dim - nd; i++) {
        osz[i] = x->sizes[i];
    }
    for (int i = 0; i < nd; i++) {
        osz[x->dim - nd + i] = f.out[3 - nd + i];
    }
    if ((y = ptl_empty(x->dim, osz, work, x->device)) == NULL ||
        (ix = ptl_empty(x->dim, osz, PTL_DTYPE_INT64, x->device)) == NULL ||
        check_samples(nd, x, r) < 0 ||
        nn_check_dtype(nd == 2 ? "fractional_max_pool2d_out_frame"
                               : "fractional_max_pool3d_out_frame", x->dtype, 0) < 0 ||
        (rc = ptl_contiguous(r)) == NULL || draw_windows(&f, nd, x->dtype, rc) < 0 ||
        (xc = nn_prepare(x, work)) == NULL) {
        goto error;
    }
    f.x = ptl_tensor_data(xc);
    f.y = ptl_tensor_data(y);
    f.idx = (int64_t *)ptl_tensor_data(ix);
    if (run_planes(&f, work == PTL_DTYPE_FLOAT32 ? frac_fwd_f4 : frac_fwd_f8) < 0 ||
        (y = nn_finish(y, x->dtype)) == NULL) {
        goto error;
    }
    free(f.seq);
    ptl_decref(xc);
    ptl_decref(rc);
    s[0] = ptl_iv_tensor(y);
    s[1] = ptl_iv_tensor(ix);
    return 0;
error:
    free(f.seq);
    ptl_xdecref(xc);
    ptl_xdecref(rc);
    ptl_xdecref(y);
    ptl_xdecref(ix);
    return -1;
}

/* The backward's checks of grad_output g and indices idx against the forward output's
 * shape (PyTorch's wording: 2-D compares whole shapes, 3-D time, height and width). */
static int
check_backward(int nd, const PtlTensorImpl *g, const PtlTensorImpl *x, const PtlTensorImpl *idx,
               const Frac *f)
{
    int64_t want[PTL_MAX_DIMS];
    for (int i = 0; i < x->dim; i++) {
        int u = i - (x->dim - nd);
        want[i] = u < 0 ? x->sizes[i] : f->out[3 - nd + u];
    }
    if (nd == 3) {
        for (int i = 0; i < 3; i++) {
            int at = x->dim - 3 + i;
            if (at >= g->dim || g->sizes[at] != want[at]) {
                return ptl_error_set(PTL_ERR_RUNTIME,
                                     "fractional_max_pool3d_backward_out(): gradOutput %s "
                                     "unexpected", dim_name[i]);
            }
        }
    }
    const PtlTensorImpl *t[2] = {g, idx};
    for (int k = 0; k < 2; k++) {
        if (t[k]->dim != x->dim ||
            memcmp(t[k]->sizes, want, sizeof(int64_t) * (size_t)x->dim) != 0) {
            return ptl_error_set(PTL_ERR_RUNTIME, "%s_backward(): %s sizes unexpected",
                                 op_name[nd == 3], k == 0 ? "gradOutput" : "indices");
        }
    }
    if (idx->dtype != PTL_DTYPE_INT64) {
        return ptl_error_set(PTL_ERR_RUNTIME, "expected scalar type Long but found %s",
                             ptl_dtype_legacy_name(idx->dtype));
    }
    if (g->dtype != x->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME, "expected scalar type %s but found %s",
                             ptl_dtype_legacy_name(x->dtype), ptl_dtype_legacy_name(g->dtype));
    }
    return 0;
}

/* fractional_max_pool{2,3}d_backward(grad_output, self, kernel_size, output_size, indices)
 * -> grad_input shaped like self */
static int
fractional_max_pool_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int nd = op == ptl_op(PTL_OP_fractional_max_pool3d_backward) ? 3 : 2;
    PtlTensorImpl *g = s[0].u.t, *x = s[1].u.t, *idx = s[4].u.t, *gc = NULL, *ic = NULL;
    PtlTensorImpl *gi = NULL;
    PtlDtype work = nn_work_dtype(g->dtype);
    Frac f = {0};
    if (frac_setup(nd, x, &s[2], &s[3], &f) < 0 || check_backward(nd, g, x, idx, &f) < 0 ||
        nn_check_dtype(nd == 2 ? "fractional_max_pool2d_backward_out_frame"
                               : "fractional_max_pool3d_backward_out_frame", g->dtype, 0) < 0) {
        return -1;
    }
    if ((gc = nn_prepare(g, work)) == NULL || (ic = ptl_contiguous(idx)) == NULL ||
        (gi = nn_zeros(x->dim, x->sizes, work)) == NULL) {
        goto error;
    }
    f.x = ptl_tensor_data(gc);
    f.y = ptl_tensor_data(gi);
    f.cidx = (const int64_t *)ptl_tensor_data(ic);
    f.dt = g->dtype;
    if (run_planes(&f, work == PTL_DTYPE_FLOAT32 ? frac_bwd_f4 : frac_bwd_f8) < 0) {
        goto error;
    }
    ptl_decref(gc);
    ptl_decref(ic);
    return ptl_kernel_return(s, nn_finish(gi, g->dtype));
error:
    ptl_xdecref(gc);
    ptl_xdecref(ic);
    ptl_xdecref(gi);
    return -1;
}

static const PtlKernelReg pool_fractional_cpu[] = {
    {PTL_OP_fractional_max_pool2d, PTL_KEY_CPU, fractional_max_pool_cpu},
    {PTL_OP_fractional_max_pool3d, PTL_KEY_CPU, fractional_max_pool_cpu},
    {PTL_OP_fractional_max_pool2d_backward, PTL_KEY_CPU, fractional_max_pool_backward_cpu},
    {PTL_OP_fractional_max_pool3d_backward, PTL_KEY_CPU, fractional_max_pool_backward_cpu},
};
PTL_DEFINE_REGISTER(pool_fractional_cpu)
