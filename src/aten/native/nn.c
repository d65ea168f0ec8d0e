/* nn.c -- softmax, log_softmax, nll_loss and binary_cross_entropy.  Mirrors
 * ATen/native/SoftMax.cpp (+ cpu/SoftMaxKernel.cpp), LossNLL.cpp and Loss.cpp (embedding.c
 * has the embeddings).
 *
 * Softmax views its (contiguous) input as [outer, n, inner] with the reduced dim in the
 * middle: inner == 1 is the last-dim fast path (one unit-stride row per line), otherwise
 * each [n, inner] block is walked row by row keeping a max and a sum per column, so the
 * strided case reads memory in order too.  Rows subtract their max before
 * exponentiating, so large inputs do not overflow.  float16/bfloat16 compute in float32.
 * The losses compute in float64 on contiguous copies and round once at the end. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/cpu_features.h"
#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "../loops.h"
#include "../scalar_math.h"
#include "device_nn.h"
#include "device_reduce.h"
#include "loss_impl.h"
#include "native.h"
#include "nn_common.h"
#include "vec_math.h"

/* ---- softmax family ---- */

typedef struct SoftmaxJob {
    char *out;
    const char *in;      /* softmax: the input; backward: grad_output */
    const char *y;       /* backward: the forward's output */
    int64_t n, inner;
    int lg, f8;
} SoftmaxJob;

/* e^v in the block's dtype (v already in it), as double */
static inline double
softmax_exp(int f8, double v)
{
    return f8 ? ptl_vm_exp(v) : (double)ptl_vm_expf((float)v);
}

/* The strided case (inner > 1) without AVX2 (with it, Note [Softmax columns]): one
 * [n, inner] block per outer index, walked row by row so every pass reads unit-stride
 * memory; acc holds a max and a sum per column.  One plain
 * function over byte pointers for both dtypes (nn_load, nn_store, nn_round), instantiated
 * by the two thin wrappers below. */
static inline int
softmax_block_chunk(const SoftmaxJob *j, int f8, int64_t b, int64_t e)
{
    const int64_t n = j->n, in = j->inner, es = f8 ? 8 : 4;
    double *acc = malloc(sizeof(double) * (size_t)(2 * in));
    if (acc == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "softmax: out of memory");
    }
    double *mx = acc, *sum = acc + in;
    for (int64_t r = b; r < e; r++) {
        char *o = j->out + r * n * in * es;
        const char *x = j->in + r * n * in * es;
        const char *y = j->y ? j->y + r * n * in * es : NULL;
        for (int64_t c = 0; c < in; c++) {
            mx[c] = -INFINITY;
            sum[c] = 0;
        }
        if (y != NULL) {
            /* backward: x is grad_output, y the forward's output */
            for (int64_t k = 0; k < n; k++) {
                for (int64_t c = 0; c < in; c++) {
                    double g = nn_load(f8, x, k * in + c);
                    sum[c] += j->lg ? g : g * nn_load(f8, y, k * in + c);
                }
            }
            for (int64_t k = 0; k < n; k++) {
                for (int64_t c = 0; c < in; c++) {
                    double g = nn_load(f8, x, k * in + c);
                    double yv = nn_load(f8, y, k * in + c);
                    nn_store(f8, o, k * in + c,
                                  j->lg ? g - softmax_exp(f8, yv) * sum[c] : yv * (g - sum[c]));
                }
            }
            continue;
        }
        for (int64_t k = 0; k < n; k++) {
            for (int64_t c = 0; c < in; c++) {
                double v = nn_load(f8, x, k * in + c);
                mx[c] = v > mx[c] || v != v ? v : mx[c];
            }
        }
        for (int64_t c = 0; c < in; c++) {
            mx[c] = mx[c] == -INFINITY ? 0 : mx[c];
        }
        for (int64_t k = 0; k < n; k++) {
            for (int64_t c = 0; c < in; c++) {
                double d = nn_load(f8, x, k * in + c) - mx[c];
                d = nn_round(f8, d);
                double ev = softmax_exp(f8, d);
                sum[c] += ev;
                nn_store(f8, o, k * in + c, j->lg ? d : ev);
            }
        }
        for (int64_t c = 0; c < in; c++) {
            sum[c] = j->lg ? log(sum[c]) : 1.0 / sum[c];
        }
        for (int64_t k = 0; k < n; k++) {
            for (int64_t c = 0; c < in; c++) {
                double v = nn_load(f8, o, k * in + c);
                nn_store(f8, o, k * in + c, j->lg ? v - sum[c] : v * sum[c]);
            }
        }
    }
    free(acc);
    return 0;
}

static int
softmax_block_chunk_f4(void *ctx, int64_t b, int64_t e)
{
    return softmax_block_chunk(ctx, 0, b, e);
}

static int
softmax_block_chunk_f8(void *ctx, int64_t b, int64_t e)
{
    return softmax_block_chunk(ctx, 1, b, e);
}

/* Contiguous rows (the softmax dim is the last): one pass for the max (nan anywhere makes
 * it nan), one writing e^(x - max) -- or x - max for log_softmax -- and summing, one
 * scaling by 1 / sum (or subtracting log(sum)).  Sums run in 8 lanes; the portable loops
 * are written so that gcc vectorizes them. */
#define DEFINE_SOFTMAX_ROW(T, EXP, DT)                                                    \
    static void                                                                           \
    softmax_row_##DT(T *o, const T *x, int64_t n, int lg)                                 \
    {                                                                                     \
        T mx = -INFINITY, acc[8] = {0};                                                   \
        int nan = 0;                                                                      \
        int64_t k = 0;                                                                    \
        for (k = 0; k < n; k++) {                                                         \
            mx = x[k] > mx ? x[k] : mx;                                                   \
            nan |= x[k] != x[k];                                                          \
        }                                                                                 \
        mx = nan ? (T)NAN : mx == -INFINITY ? 0 : mx;                                     \
        for (k = 0; k + 8 <= n; k += 8) {                                                 \
            for (int l = 0; l < 8; l++) {                                                 \
                T d = x[k + l] - mx, e = EXP(d);                                          \
                acc[l] += e;                                                              \
                o[k + l] = lg ? d : e;                                                    \
            }                                                                             \
        }                                                                                 \
        for (; k < n; k++) {                                                              \
            T d = x[k] - mx, e = EXP(d);                                                  \
            acc[0] += e;                                                                  \
            o[k] = lg ? d : e;                                                            \
        }                                                                                 \
        double sum = 0;                                                                   \
        for (int l = 0; l < 8; l++) {                                                     \
            sum += acc[l];                                                                \
        }                                                                                 \
        T c = (T)(lg ? log(sum) : 1.0 / sum);                                             \
        for (k = 0; k < n; k++) {                                                         \
            o[k] = lg ? o[k] - c : o[k] * c;                                              \
        }                                                                                 \
    }

DEFINE_SOFTMAX_ROW(float, ptl_vm_expf, f4)
DEFINE_SOFTMAX_ROW(double, ptl_vm_exp, f8)

#ifdef PTL_HAVE_AVX2_KERNELS
/* Note [Softmax row sums]
 * The vector rows (AVX2 and AVX-512, Note [Vector twins]) sum in sixteen partial sums
 * whatever the width: element k goes to partial k mod 16 (A = 16 / lanes accumulators), a
 * row's tail through masked loads (lanes past the row add 0), and the sixteen partials are
 * added in the same order (sm_sum_S); the max is exact in any order.  So both widths give the same
 * bits, and the tail needs no scalar exp.  The sixteen partials are added as a tree in the
 * row's dtype (p[l] + p[l + 8], then the same on eight and four, then two: a dependency
 * chain of four adds; adding them one by one in double made a row of 65 slower than the
 * eight-lane AVX2 loop it replaced).  The tails are stored through a buffer with AVX2
 * (its masked store is microcoded on AMD cores: a row of 65 took 1.2x as long with it), with
 * a masked store with AVX-512. */
#define SM_PARTS 16
#define SM_MASKED_STORE_ps 0
#define SM_MASKED_STORE_pd 0
#define SM_MASKED_STORE_ps512 1
#define SM_MASKED_STORE_pd512 1
#define DEFINE_SM_TAIL(T, S)                                                              \
    /* r elements from p: a whole vector when r >= lanes, else through the tail mask t */ \
    PTL_VATTR(S) static inline PTL_VT(S) sm_load_##S(const T *p, int64_t r, PTL_VTAILT(S) t) \
    {                                                                                     \
        return r < PTL_VLANES(S) ? PTL_VLOAD_TAIL(S, p, t) : PTL_V(S, loadu)(p);          \
    }                                                                                     \
    PTL_VATTR(S) static inline void                                                       \
        sm_store_tail_##S(T *p, PTL_VTAILT(S) t, int64_t r, PTL_VT(S) v)                  \
    {                                                                                     \
        if (SM_MASKED_STORE_##S) {                                                        \
            PTL_VSTORE_TAIL(S, p, t, v);                                                  \
        }                                                                                 \
        else {                                                                            \
            T buf[PTL_VLANES(S)];                                                         \
            PTL_V(S, storeu)(buf, v);                                                     \
            memcpy(p, buf, (size_t)r * sizeof(T));                                        \
        }                                                                                 \
    }                                                                                     \
    /* r elements to p: a whole vector when r >= lanes, else through the tail mask t */   \
    PTL_VATTR(S) static inline void sm_store_##S(T *p, PTL_VTAILT(S) t, int64_t r,        \
                                                 PTL_VT(S) v)                             \
    {                                                                                     \
        if (r < PTL_VLANES(S)) {                                                          \
            sm_store_tail_##S(p, t, r, v);                                                \
        }                                                                                 \
        else {                                                                            \
            PTL_V(S, storeu)(p, v);                                                       \
        }                                                                                 \
    }
/* The sixteen partials' tree: float ones in registers (the AVX-512 vector's halves are the
 * AVX2 pair), double ones through memory */
PTL_AVX2 static inline double
sm_sum8_ps(__m256 v)
{
    __m128 w = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    w = _mm_add_ps(w, _mm_movehl_ps(w, w));
    w = _mm_add_ss(w, _mm_shuffle_ps(w, w, 1));
    return _mm_cvtss_f32(w);
}

PTL_AVX2 static inline double
sm_sum_ps(const __m256 *acc)
{
    return sm_sum8_ps(_mm256_add_ps(acc[0], acc[1]));
}

PTL_AVX512 static inline double
sm_sum_ps512(const __m512 *acc)
{
    return sm_sum8_ps(
        _mm256_add_ps(_mm512_castps512_ps256(acc[0]), _mm512_extractf32x8_ps(acc[0], 1)));
}

#define DEFINE_SM_SUM_PD(S)                                                               \
    PTL_VATTR(S) static inline double sm_sum_##S(const PTL_VT(S) *acc)                    \
    {                                                                                     \
        double p[SM_PARTS];                                                               \
        for (int a = 0; a < SM_PARTS / PTL_VLANES(S); a++) {                              \
            PTL_V(S, storeu)(p + a * PTL_VLANES(S), acc[a]);                              \
        }                                                                                 \
        for (int w = SM_PARTS / 2; w >= 1; w /= 2) {                                      \
            for (int l = 0; l < w; l++) {                                                 \
                p[l] += p[l + w];                                                         \
            }                                                                             \
        }                                                                                 \
        return p[0];                                                                      \
    }
DEFINE_SM_SUM_PD(pd)
DEFINE_SM_SUM_PD(pd512)

DEFINE_SM_TAIL(float, ps)
DEFINE_SM_TAIL(double, pd)
DEFINE_SM_TAIL(float, ps512)
DEFINE_SM_TAIL(double, pd512)

/* The max of the row x[0..n) (NaN when the row holds one, -inf when it is empty). */
#define DEFINE_SM_MAX(T, S)                                                               \
    PTL_VATTR(S) static T sm_max_##S(const T *x, int64_t n)                               \
    {                                                                                     \
        enum { L = PTL_VLANES(S) };                                                       \
        PTL_VT(S) vmx = PTL_V(S, set1)(-INFINITY), vnan = PTL_V(S, setzero)();            \
        T lanes[SM_PARTS], mx;                                                            \
        int64_t k = 0;                                                                    \
        for (; k + L <= n; k += L) {                                                      \
            PTL_VT(S) v = PTL_V(S, loadu)(x + k);                                         \
            vmx = PTL_V(S, max)(vmx, v);                                                  \
            vnan = PTL_VSEL(S, PTL_VCMP(S, v, v, _CMP_UNORD_Q), vnan, PTL_V(S, set1)(1)); \
        }                                                                                 \
        PTL_V(S, storeu)(lanes, vmx);                                                     \
        mx = lanes[0];                                                                    \
        for (int l = 1; l < L; l++) {                                                     \
            mx = lanes[l] > mx ? lanes[l] : mx;                                           \
        }                                                                                 \
        PTL_V(S, storeu)(lanes, vnan);                                                    \
        int nan = 0;                                                                      \
        for (int l = 0; l < L; l++) {                                                     \
            nan |= lanes[l] != 0;                                                         \
        }                                                                                 \
        for (; k < n; k++) {                                                              \
            mx = x[k] > mx ? x[k] : mx;                                                   \
            nan |= x[k] != x[k];                                                          \
        }                                                                                 \
        return nan ? (T)NAN : mx;                                                         \
    }

/* The sum of e^(x - mx) over the row x[0..n), in the sixteen partials of Note [Softmax row
 * sums]; each e^(x - mx) (log_softmax: x - mx) is stored into o unless o is NULL. */
#define DEFINE_SM_EXPSUM(T, S)                                                            \
    PTL_VATTR(S) static double sm_expsum_##S(T *o, const T *x, int64_t n, T mx, int lg)   \
    {                                                                                     \
        enum { L = PTL_VLANES(S), A = SM_PARTS / PTL_VLANES(S) };                         \
        const PTL_VT(S) m = PTL_V(S, set1)(mx);                                           \
        PTL_VT(S) acc[A];                                                                 \
        for (int a = 0; a < A; a++) {                                                     \
            acc[a] = PTL_V(S, setzero)();                                                 \
        }                                                                                 \
        int64_t k = 0;                                                                    \
        for (; k + SM_PARTS <= n; k += SM_PARTS) {                                        \
            for (int a = 0; a < A; a++) {                                                 \
                PTL_VT(S) d = PTL_V(S, sub)(PTL_V(S, loadu)(x + k + a * L), m);           \
                PTL_VT(S) e = PTL_VEXP(S)(d);                                             \
                acc[a] = PTL_V(S, add)(acc[a], e);                                        \
                if (o != NULL) {                                                          \
                    PTL_V(S, storeu)(o + k + a * L, lg ? d : e);                          \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
        /* the tail, r < 16 elements (a constant trip count: acc stays in registers) */   \
        for (int a = 0; a < A; a++) {                                                     \
            const int64_t r = n - k - a * L;                                              \
            if (r <= 0) {                                                                 \
                continue;                                                                 \
            }                                                                             \
            const PTL_VTAILT(S) t = PTL_VTAIL(S, r < L ? r : 0);                          \
            PTL_VT(S) d = PTL_V(S, sub)(sm_load_##S(x + k + a * L, r, t), m);             \
            PTL_VT(S) e = PTL_VEXP(S)(d);                                                 \
            if (r < L) {                                                                  \
                acc[a] = PTL_V(S, add)(acc[a], PTL_VTAIL_ZERO(S, t, e));                  \
            }                                                                             \
            else {                                                                        \
                acc[a] = PTL_V(S, add)(acc[a], e);                                        \
            }                                                                             \
            if (o != NULL) {                                                              \
                sm_store_##S(o + k + a * L, t, r, lg ? d : e);                            \
            }                                                                             \
        }                                                                                 \
        return sm_sum_##S(acc);                                                           \
    }

#define DEFINE_SOFTMAX_ROW_VEC(T, S)                                                      \
    PTL_VATTR(S) static void softmax_row_##S(T *o, const T *x, int64_t n, int lg)         \
    {                                                                                     \
        enum { L = PTL_VLANES(S) };                                                       \
        T mx = sm_max_##S(x, n);                                                          \
        mx = mx == -INFINITY ? 0 : mx;                                                    \
        double sum = sm_expsum_##S(o, x, n, mx, lg);                                      \
        T cs = (T)(lg ? log(sum) : 1.0 / sum);                                            \
        PTL_VT(S) c = PTL_V(S, set1)(cs);                                                 \
        int64_t k = 0;                                                                    \
        for (; k + L <= n; k += L) {                                                      \
            PTL_VT(S) v = PTL_V(S, loadu)(o + k);                                         \
            PTL_V(S, storeu)(o + k, lg ? PTL_V(S, sub)(v, c) : PTL_V(S, mul)(v, c));      \
        }                                                                                 \
        if (k < n) {                                                                      \
            const PTL_VTAILT(S) t = PTL_VTAIL(S, n - k);                                  \
            PTL_VT(S) v = PTL_VLOAD_TAIL(S, o + k, t);                                    \
            sm_store_tail_##S(o + k, t, n - k,                                            \
                              lg ? PTL_V(S, sub)(v, c) : PTL_V(S, mul)(v, c));            \
        }                                                                                 \
    }

/* Note [Softmax columns]
 * A softmax dim that is not the last (inner > 1) is walked by columns: up to SM_COLS
 * neighbouring columns of one [n, inner] block at once, in vector lanes, row after row, so
 * that every pass reads memory in order -- one pass for each column's max, one writing
 * e^(x - max) (log_softmax: x - max) and adding it to the column's sum, one scaling by
 * 1 / sum (subtracting log(sum)).  Each column sums its terms one after the other in the
 * row's dtype, SM_ROW_GROUP rows at a time, and adds each group's sum into a double (a
 * scalar loop over the group's columns): PyTorch's vectorized softmax sums all n in the
 * dtype, which left logsumexp(0) of 1024 x 1024 float32 with 3x PyTorch's error.  So a
 * column's bits depend neither on the vector width (the last, partial vector of a group goes
 * through a masked load and the same formula), nor on how the columns are grouped into work
 * units, nor on the threads.
 * The backward walks the same units with the same grouped sums (of g y, log_softmax: of g),
 * so its bits are independent of the width and the threads too.
 * logsumexp over an outer dim (reduce.c) takes the first two passes without the stores,
 * and logsumexp over contiguous runs the row's max and sum. */
#define SM_COLS 128
#define SM_ROW_GROUP 32
#define DEFINE_SM_COLS_SUM(T, S)                                                          \
    /* The column sums' start: w partials (rounded up to whole vectors) and sums zero */  \
    PTL_VATTR(S) static inline void sm_cols_sum_init_##S(T *part, double *sum, int64_t w) \
    {                                                                                     \
        for (int64_t c = 0; c < w; c += PTL_VLANES(S)) {                                  \
            PTL_V(S, storeu)(part + c, PTL_V(S, setzero)());                              \
        }                                                                                 \
        for (int64_t c = 0; c < w; c++) {                                                 \
            sum[c] = 0;                                                                   \
        }                                                                                 \
    }                                                                                     \
    /* After row k of n: at the end of a row group adds each column's partial sum into    \
     * its double sum and clears it */                                                    \
    PTL_VATTR(S) static inline void sm_cols_group_end_##S(T *part, double *sum, int64_t w, \
                                                          int64_t k, int64_t n)           \
    {                                                                                     \
        if (k % SM_ROW_GROUP == SM_ROW_GROUP - 1 || k == n - 1) {                         \
            for (int64_t c = 0; c < w; c++) {                                             \
                sum[c] += (double)part[c];                                                \
                part[c] = 0;                                                              \
            }                                                                             \
        }                                                                                 \
    }
#define DEFINE_SOFTMAX_COLS_VEC(T, S)                                                     \
    /* Columns c < w (w <= SM_COLS) of the n rows x, x + rs bytes, ...: mx[c] the max (NaN \
     * when the column holds one), sum[c] the sum of e^(x - mx') (mx' = mx, 0 for -inf),   \
     * each stored into o (rows rs bytes apart too) unless o is NULL.  mx holds SM_COLS    \
     * elements. */                                                                       \
    PTL_VATTR(S) static void sm_cols_expsum_##S(T *o, const char *x, int64_t n, int64_t rs, \
                                                int64_t w, int lg, T *mx, double *sum)    \
    {                                                                                     \
        enum { L = PTL_VLANES(S) };                                                       \
        const PTL_VTAILT(S) t = PTL_VTAIL(S, w % L);                                      \
        const PTL_VT(S) ninf = PTL_V(S, set1)(-INFINITY), zero = PTL_V(S, setzero)();     \
        T sh[SM_COLS], part[SM_COLS];                                                     \
        for (int64_t c = 0; c < w; c += L) {                                              \
            PTL_V(S, storeu)(mx + c, ninf);                                               \
        }                                                                                 \
        sm_cols_sum_init_##S(part, sum, w);                                               \
        for (int64_t k = 0; k < n; k++) {                                                 \
            const T *xr = (const T *)(x + k * rs);                                        \
            for (int64_t c = 0; c < w; c += L) {                                          \
                PTL_VT(S) v = sm_load_##S(xr + c, w - c, t);                              \
                PTL_VT(S) m = PTL_V(S, max)(v, PTL_V(S, loadu)(mx + c));                  \
                PTL_V(S, storeu)(mx + c, PTL_VSEL(S, PTL_VCMP(S, v, v, _CMP_UNORD_Q), m, v)); \
            }                                                                             \
        }                                                                                 \
        for (int64_t c = 0; c < w; c += L) {                                              \
            PTL_VT(S) m = PTL_V(S, loadu)(mx + c);                                        \
            PTL_V(S, storeu)(sh + c, PTL_VSEL(S, PTL_VCMP(S, m, ninf, _CMP_EQ_OQ), m, zero)); \
        }                                                                                 \
        for (int64_t k = 0; k < n; k++) {                                                 \
            const T *xr = (const T *)(x + k * rs);                                        \
            T *orow = o != NULL ? (T *)((char *)o + k * rs) : NULL;                       \
            for (int64_t c = 0; c < w; c += L) {                                          \
                PTL_VT(S) d = PTL_V(S, sub)(sm_load_##S(xr + c, w - c, t),                \
                                            PTL_V(S, loadu)(sh + c));                     \
                PTL_VT(S) e = PTL_VEXP(S)(d);                                             \
                PTL_V(S, storeu)(part + c, PTL_V(S, add)(PTL_V(S, loadu)(part + c), e));  \
                if (orow != NULL) {                                                       \
                    sm_store_##S(orow + c, t, w - c, lg ? d : e);                         \
                }                                                                         \
            }                                                                             \
            sm_cols_group_end_##S(part, sum, w, k, n);                                    \
        }                                                                                 \
    }                                                                                     \
    /* softmax (lg: log_softmax) of the columns c < w of the [n, *] block x, rows rs bytes \
     * apart, into o (the same layout) */                                                 \
    PTL_VATTR(S) static void softmax_cols_##S(T *o, const char *x, int64_t n, int64_t rs, \
                                              int64_t w, int lg)                          \
    {                                                                                     \
        enum { L = PTL_VLANES(S) };                                                       \
        const PTL_VTAILT(S) t = PTL_VTAIL(S, w % L);                                      \
        T mx[SM_COLS], cs[SM_COLS] = {0};                                                 \
        double sum[SM_COLS];                                                              \
        sm_cols_expsum_##S(o, x, n, rs, w, lg, mx, sum);                                  \
        for (int64_t c = 0; c < w; c++) {                                                 \
            cs[c] = (T)(lg ? log(sum[c]) : 1.0 / sum[c]);                                 \
        }                                                                                 \
        for (int64_t k = 0; k < n; k++) {                                                 \
            T *orow = (T *)((char *)o + k * rs);                                          \
            for (int64_t c = 0; c < w; c += L) {                                          \
                PTL_VT(S) v = sm_load_##S(orow + c, w - c, t);                            \
                PTL_VT(S) cv = PTL_V(S, loadu)(cs + c);                                   \
                sm_store_##S(orow + c, t, w - c,                                          \
                             lg ? PTL_V(S, sub)(v, cv) : PTL_V(S, mul)(v, cv));           \
            }                                                                             \
        }                                                                                 \
    }


/* The backward over an outer dim walks the same column groups (Note [Softmax columns]):
 * one pass summing g y (log_softmax: g) per column, SM_ROW_GROUP rows in the dtype and the
 * groups in double, then one writing y (g - sum) (log_softmax: g - e^y sum), the products
 * g y and e^y sum fused into their sums (FMA: one rounding fewer, PyTorch's error at n = 21
 * where the separate product was 10% above it).  Columns c < w of the [n, *] blocks g and y
 * (rows rs bytes apart) into o (the same layout). */
#define DEFINE_SOFTMAX_GRAD_COLS_VEC(T, S)                                                \
    PTL_VATTR(S) static void softmax_grad_cols_##S(T *o, const char *g, const char *y,    \
                                                   int64_t n, int64_t rs, int64_t w, int lg) \
    {                                                                                     \
        enum { L = PTL_VLANES(S) };                                                       \
        const PTL_VTAILT(S) t = PTL_VTAIL(S, w % L);                                      \
        T part[SM_COLS], cs[SM_COLS] = {0};                                               \
        double sum[SM_COLS];                                                              \
        sm_cols_sum_init_##S(part, sum, w);                                               \
        for (int64_t k = 0; k < n; k++) {                                                 \
            const T *gr = (const T *)(g + k * rs), *yr = (const T *)(y + k * rs);         \
            for (int64_t c = 0; c < w; c += L) {                                          \
                PTL_VT(S) gv = sm_load_##S(gr + c, w - c, t), pv = PTL_V(S, loadu)(part + c); \
                pv = lg ? PTL_V(S, add)(pv, gv)                                           \
                        : PTL_V(S, fmadd)(gv, sm_load_##S(yr + c, w - c, t), pv);         \
                PTL_V(S, storeu)(part + c, pv);                                           \
            }                                                                             \
            sm_cols_group_end_##S(part, sum, w, k, n);                                    \
        }                                                                                 \
        for (int64_t c = 0; c < w; c++) {                                                 \
            cs[c] = (T)sum[c];                                                            \
        }                                                                                 \
        for (int64_t k = 0; k < n; k++) {                                                 \
            const T *gr = (const T *)(g + k * rs), *yr = (const T *)(y + k * rs);         \
            T *orow = (T *)((char *)o + k * rs);                                          \
            for (int64_t c = 0; c < w; c += L) {                                          \
                PTL_VT(S) gv = sm_load_##S(gr + c, w - c, t);                             \
                PTL_VT(S) yv = sm_load_##S(yr + c, w - c, t);                             \
                PTL_VT(S) cv = PTL_V(S, loadu)(cs + c);                                   \
                sm_store_##S(orow + c, t, w - c,                                          \
                             lg ? PTL_V(S, fnmadd)(PTL_VEXP(S)(yv), cv, gv)               \
                                : PTL_V(S, mul)(yv, PTL_V(S, sub)(gv, cv)));              \
            }                                                                             \
        }                                                                                 \
    }

#define DEFINE_SOFTMAX_VEC(T, S)                                                          \
    DEFINE_SM_MAX(T, S)                                                                   \
    DEFINE_SM_EXPSUM(T, S)                                                                \
    DEFINE_SOFTMAX_ROW_VEC(T, S)                                                          \
    DEFINE_SM_COLS_SUM(T, S)                                                              \
    DEFINE_SOFTMAX_COLS_VEC(T, S)                                                         \
    DEFINE_SOFTMAX_GRAD_COLS_VEC(T, S)
DEFINE_SOFTMAX_VEC(float, ps)
DEFINE_SOFTMAX_VEC(double, pd)
DEFINE_SOFTMAX_VEC(float, ps512)
DEFINE_SOFTMAX_VEC(double, pd512)
#endif

/* Backward of contiguous rows: the sum (log_softmax: of g; softmax: of g y) in 8 lanes,
 * then one pass writing g - e^y sum or y (g - sum). */
#define DEFINE_SOFTMAX_GRAD_ROW(T, EXP, DT)                                               \
    static void                                                                           \
    softmax_grad_row_##DT(T *o, const T *g, const T *y, int64_t n, int lg)                \
    {                                                                                     \
        T acc[8] = {0};                                                                   \
        int64_t k = 0;                                                                    \
        for (; k + 8 <= n; k += 8) {                                                      \
            for (int l = 0; l < 8; l++) {                                                 \
                acc[l] += lg ? g[k + l] : g[k + l] * y[k + l];                            \
            }                                                                             \
        }                                                                                 \
        double sum = 0;                                                                   \
        for (; k < n; k++) {                                                              \
            sum += lg ? (double)g[k] : (double)g[k] * y[k];                               \
        }                                                                                 \
        for (int l = 0; l < 8; l++) {                                                     \
            sum += acc[l];                                                                \
        }                                                                                 \
        const T c = (T)sum;                                                               \
        if (lg) {                                                                         \
            for (k = 0; k < n; k++) {                                                     \
                o[k] = g[k] - EXP(y[k]) * c;                                              \
            }                                                                             \
        }                                                                                 \
        else {                                                                            \
            for (k = 0; k < n; k++) {                                                     \
                o[k] = y[k] * (g[k] - c);                                                 \
            }                                                                             \
        }                                                                                 \
    }

DEFINE_SOFTMAX_GRAD_ROW(float, ptl_vm_expf, f4)
DEFINE_SOFTMAX_GRAD_ROW(double, ptl_vm_exp, f8)

#ifdef PTL_HAVE_AVX2_KERNELS
/* The vector backward rows, summing as Note [Softmax row sums] says (masked lanes load 0 and
 * add 0) */
#define DEFINE_SOFTMAX_GRAD_ROW_VEC(T, S)                                                 \
    PTL_VATTR(S) static void                                                              \
        softmax_grad_row_##S(T *o, const T *g, const T *y, int64_t n, int lg)             \
    {                                                                                     \
        enum { L = PTL_VLANES(S), A = SM_PARTS / PTL_VLANES(S) };                         \
        PTL_VT(S) acc[A];                                                                 \
        for (int a = 0; a < A; a++) {                                                     \
            acc[a] = PTL_V(S, setzero)();                                                 \
        }                                                                                 \
        int64_t k = 0;                                                                    \
        for (; k + SM_PARTS <= n; k += SM_PARTS) {                                        \
            for (int a = 0; a < A; a++) {                                                 \
                PTL_VT(S) gv = PTL_V(S, loadu)(g + k + a * L);                            \
                acc[a] = PTL_V(S, add)(                                                   \
                    acc[a], lg ? gv : PTL_V(S, mul)(gv, PTL_V(S, loadu)(y + k + a * L))); \
            }                                                                             \
        }                                                                                 \
        for (int a = 0; a < A; a++) {                                                     \
            const int64_t r = n - k - a * L;                                              \
            if (r <= 0) {                                                                 \
                continue;                                                                 \
            }                                                                             \
            const PTL_VTAILT(S) t = PTL_VTAIL(S, r < L ? r : 0);                          \
            PTL_VT(S) gv = sm_load_##S(g + k + a * L, r, t);                              \
            acc[a] = PTL_V(S, add)(                                                       \
                acc[a], lg ? gv : PTL_V(S, mul)(gv, sm_load_##S(y + k + a * L, r, t)));   \
        }                                                                                 \
        double sum = sm_sum_##S(acc);                                                     \
        const PTL_VT(S) c = PTL_V(S, set1)((T)sum);                                       \
        for (k = 0; k + L <= n; k += L) {                                                 \
            PTL_VT(S) gv = PTL_V(S, loadu)(g + k), yv = PTL_V(S, loadu)(y + k);           \
            PTL_V(S, storeu)(o + k, lg ? PTL_V(S, sub)(gv, PTL_V(S, mul)(PTL_VEXP(S)(yv), c)) \
                                       : PTL_V(S, mul)(yv, PTL_V(S, sub)(gv, c)));        \
        }                                                                                 \
        if (k < n) {                                                                      \
            const PTL_VTAILT(S) t = PTL_VTAIL(S, n - k);                                  \
            PTL_VT(S) gv = PTL_VLOAD_TAIL(S, g + k, t), yv = PTL_VLOAD_TAIL(S, y + k, t); \
            sm_store_tail_##S(o + k, t, n - k,                                            \
                              lg ? PTL_V(S, sub)(gv, PTL_V(S, mul)(PTL_VEXP(S)(yv), c))   \
                                 : PTL_V(S, mul)(yv, PTL_V(S, sub)(gv, c)));              \
        }                                                                                 \
    }

DEFINE_SOFTMAX_GRAD_ROW_VEC(float, ps)
DEFINE_SOFTMAX_GRAD_ROW_VEC(double, pd)
DEFINE_SOFTMAX_GRAD_ROW_VEC(float, ps512)
DEFINE_SOFTMAX_GRAD_ROW_VEC(double, pd512)
#endif

typedef void (*SoftmaxRowF4)(float *, const float *, int64_t, int);
typedef void (*SoftmaxRowF8)(double *, const double *, int64_t, int);
typedef void (*SoftmaxGradRowF4)(float *, const float *, const float *, int64_t, int);
typedef void (*SoftmaxGradRowF8)(double *, const double *, const double *, int64_t, int);

/* Rows [b, e) of n elements: the forward (j->y NULL) or the backward, in the widest vector
 * form this CPU has, else portable. */
static int
softmax_rows_chunk(void *ctx, int64_t b, int64_t e)
{
    const SoftmaxJob *j = ctx;
    SoftmaxRowF4 f4 = softmax_row_f4;
    SoftmaxRowF8 f8 = softmax_row_f8;
    SoftmaxGradRowF4 g4 = softmax_grad_row_f4;
    SoftmaxGradRowF8 g8 = softmax_grad_row_f8;
#ifdef PTL_HAVE_AVX2_KERNELS
    PtlCpuCapability cap = ptl_cpu_capability();
    if (cap >= PTL_CPU_AVX512) {
        f4 = softmax_row_ps512, f8 = softmax_row_pd512;
        g4 = softmax_grad_row_ps512, g8 = softmax_grad_row_pd512;
    }
    else if (cap >= PTL_CPU_AVX2) {
        f4 = softmax_row_ps, f8 = softmax_row_pd;
        g4 = softmax_grad_row_ps, g8 = softmax_grad_row_pd;
    }
#endif
    for (int64_t r = b; r < e; r++) {
        int64_t off = r * j->n;
        if (j->y == NULL && j->f8) {
            f8((double *)j->out + off, (const double *)j->in + off, j->n, j->lg);
        }
        else if (j->y == NULL) {
            f4((float *)j->out + off, (const float *)j->in + off, j->n, j->lg);
        }
        else if (j->f8) {
            g8((double *)j->out + off, (const double *)j->in + off, (const double *)j->y + off,
               j->n, j->lg);
        }
        else {
            g4((float *)j->out + off, (const float *)j->in + off, (const float *)j->y + off,
               j->n, j->lg);
        }
    }
    return 0;
}

#ifdef PTL_HAVE_AVX2_KERNELS
/* The forward (j->y NULL) or the backward over [n, inner] blocks (inner > 1), by columns
 * (Note [Softmax columns]): work unit u is the columns [c0, c0 + SM_COLS) of block u / ncb,
 * ncb column groups a block. */
static int
softmax_cols_chunk(void *ctx, int64_t b, int64_t e)
{
    const SoftmaxJob *j = ctx;
    const int64_t es = j->f8 ? 8 : 4, rs = j->inner * es;
    const int64_t ncb = (j->inner + SM_COLS - 1) / SM_COLS;
    int wide = ptl_cpu_capability() >= PTL_CPU_AVX512;
    for (int64_t u = b; u < e; u++) {
        int64_t c0 = (u % ncb) * SM_COLS;
        int64_t w = j->inner - c0 < SM_COLS ? j->inner - c0 : SM_COLS;
        int64_t off = ((u / ncb) * j->n * j->inner + c0) * es;
        char *o = j->out + off;
        const char *x = j->in + off;
        if (j->y != NULL && j->f8) {
            (wide ? softmax_grad_cols_pd512 : softmax_grad_cols_pd)((double *)o, x, j->y + off,
                                                                    j->n, rs, w, j->lg);
        }
        else if (j->y != NULL) {
            (wide ? softmax_grad_cols_ps512 : softmax_grad_cols_ps)((float *)o, x, j->y + off,
                                                                    j->n, rs, w, j->lg);
        }
        else if (j->f8) {
            (wide ? softmax_cols_pd512 : softmax_cols_pd)((double *)o, x, j->n, rs, w, j->lg);
        }
        else {
            (wide ? softmax_cols_ps512 : softmax_cols_ps)((float *)o, x, j->n, rs, w, j->lg);
        }
    }
    return 0;
}
#endif

/* See native.h: the max and sum of e^(x - max) of a contiguous run, for logsumexp. */
int
ptl_softmax_expsum_row(PtlDtype dt, const char *x, int64_t n, double *m, double *s)
{
#ifdef PTL_HAVE_AVX2_KERNELS
    PtlCpuCapability cap = ptl_cpu_capability();
    int wide = cap >= PTL_CPU_AVX512;
    if (cap < PTL_CPU_AVX2 || (dt != PTL_DTYPE_FLOAT32 && dt != PTL_DTYPE_FLOAT64)) {
        return 0;
    }
    if (dt == PTL_DTYPE_FLOAT64) {
        const double *p = (const double *)x;
        double mx = (wide ? sm_max_pd512 : sm_max_pd)(p, n);
        *m = mx;
        *s = (wide ? sm_expsum_pd512 : sm_expsum_pd)(NULL, p, n, mx == -INFINITY ? 0 : mx, 0);
    }
    else {
        const float *p = (const float *)x;
        float mx = (wide ? sm_max_ps512 : sm_max_ps)(p, n);
        *m = mx;
        *s = (wide ? sm_expsum_ps512 : sm_expsum_ps)(NULL, p, n, mx == -INFINITY ? 0 : mx, 0);
    }
    return 1;
#else
    (void)dt, (void)x, (void)n, (void)m, (void)s;
    return 0;
#endif
}

/* See native.h: the same for each of w columns of n rows rs bytes apart. */
int
ptl_softmax_expsum_cols(PtlDtype dt, const char *x, int64_t n, int64_t rs, int64_t w,
                        double *m, double *s)
{
#ifdef PTL_HAVE_AVX2_KERNELS
    PtlCpuCapability cap = ptl_cpu_capability();
    int wide = cap >= PTL_CPU_AVX512, f8 = dt == PTL_DTYPE_FLOAT64;
    if (cap < PTL_CPU_AVX2 || (dt != PTL_DTYPE_FLOAT32 && !f8)) {
        return 0;
    }
    for (int64_t c0 = 0; c0 < w; c0 += SM_COLS) {
        int64_t g = w - c0 < SM_COLS ? w - c0 : SM_COLS;
        const char *p = x + c0 * (f8 ? 8 : 4);
        if (f8) {
            double mx[SM_COLS];
            (wide ? sm_cols_expsum_pd512 : sm_cols_expsum_pd)(NULL, p, n, rs, g, 0, mx, s + c0);
            memcpy(m + c0, mx, sizeof(double) * (size_t)g);
        }
        else {
            float mx[SM_COLS];
            (wide ? sm_cols_expsum_ps512 : sm_cols_expsum_ps)(NULL, p, n, rs, g, 0, mx, s + c0);
            for (int64_t c = 0; c < g; c++) {
                m[c0 + c] = mx[c];
            }
        }
    }
    return 1;
#else
    (void)dt, (void)x, (void)n, (void)rs, (void)w, (void)m, (void)s;
    return 0;
#endif
}

/* Runs the softmax job over every (outer, inner) line of x (contiguous, float or double). */
static int
softmax_run(SoftmaxJob *j, PtlTensorImpl *x, int64_t dim)
{
    int64_t outer = 1, lines;
    j->n = x->dim > 0 ? x->sizes[dim] : 1;
    j->inner = 1;
    for (int d = 0; d < x->dim; d++) {
        if (d < dim) {
            outer *= x->sizes[d];
        }
        else if (d > dim) {
            j->inner *= x->sizes[d];
        }
    }
    lines = outer * j->inner;
    if (lines == 0 || j->n == 0) {
        return 0;
    }
    if ((x->device.type == PTL_DEVICE_CUDA || ptl_device_reduce_emulation) &&
        ptl_device_softmax_hook != NULL) {
        /* a CUDA tensor, or the tests' host emulation of the CUDA kernels (device_reduce.h) */
        PtlDeviceSoftmaxArgs a = {j->out, j->in, j->y, outer, j->n, j->inner, j->lg, x->dtype};
        return ptl_device_softmax_hook(&a);
    }
    int f8 = j->f8 = x->dtype == PTL_DTYPE_FLOAT64;
    if (j->inner == 1) {
        return ptl_parallel_for(0, lines, PTL_GRAIN_SIZE / j->n + 1, softmax_rows_chunk, j);
    }
#ifdef PTL_HAVE_AVX2_KERNELS
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        int64_t units = outer * ((j->inner + SM_COLS - 1) / SM_COLS);
        return ptl_parallel_for(0, units, PTL_GRAIN_SIZE / (j->n * SM_COLS) + 1,
                                softmax_cols_chunk, j);
    }
#endif
    return ptl_parallel_for(0, outer, PTL_GRAIN_SIZE / (j->n * j->inner) + 1,
                            f8 ? softmax_block_chunk_f8 : softmax_block_chunk_f4, j);
}

/* _softmax(Tensor self, int dim, bool half_to_float) -> Tensor (and _log_softmax).
 * [*, n, *] -> [*, n, *] */
static int
softmax_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *self = s[0].u.t, *x = NULL, *out = NULL, *res = NULL;
    int64_t dim = s[1].u.i;
    int log = op->id == PTL_OP__log_softmax;
    int half_to_float = s[2].u.b;
    (void)ks;

    if (ptl_wrap_dim(&dim, self->dim) < 0) {
        return -1;
    }
    if (!ptl_dtype_is_floating(self->dtype)) {
        int last = self->dim == 0 || dim == self->dim - 1;
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED,
                             "\"%s%s_kernel_impl\" not implemented for '%s'",
                             log ? "log_softmax" : "softmax", last ? "_lastdim" : "",
                             ptl_dtype_legacy_name(self->dtype));
    }
    if (half_to_float && self->dtype != PTL_DTYPE_FLOAT16 && self->dtype != PTL_DTYPE_BFLOAT16) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "conversion is supported for Half type only");
    }
    PtlDtype work = self->dtype == PTL_DTYPE_FLOAT64 ? PTL_DTYPE_FLOAT64 : PTL_DTYPE_FLOAT32;
    x = nn_contiguous_as(self, work);
    if (x == NULL || (out = ptl_empty(x->dim, x->sizes, work, x->device)) == NULL) {
        goto error;
    }
    SoftmaxJob j = {ptl_tensor_data(out), ptl_tensor_data(x), NULL, 0, 0, log, 0};
    if (!ptl_tensor_is_meta(out) && softmax_run(&j, x, dim) < 0) {
        goto error;
    }
    if (work != self->dtype && !half_to_float) {
        if ((res = ptl_cast(out, self->dtype)) == NULL) {
            goto error;
        }
        PTL_CLEAR(out);
        out = res;
    }
    ptl_decref(x);
    s[0] = ptl_iv_tensor(out);
    return 0;
error:
    ptl_xdecref(x);
    ptl_xdecref(out);
    return -1;
}

/* _softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype)
 * (and the log_softmax one).  [*, n, *], [*, n, *] -> [*, n, *] */
static int
softmax_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *g = NULL, *y = NULL, *out = NULL, *res = NULL;
    PtlTensorImpl *y0 = s[1].u.t;
    int64_t dim = s[2].u.i;
    PtlDtype in_dt = s[3].u.dtype;
    (void)ks;

    PtlTensorImpl *g0 = s[0].u.t;
    if (g0->dim != y0->dim ||
        memcmp(g0->sizes, y0->sizes, sizeof(int64_t) * (size_t)y0->dim) != 0) {
        char b1[128], b2[128];
        return ptl_error_set(PTL_ERR_RUNTIME, "Expected tensor for argument #1 'grad' to have "
                             "same size as tensor for argument #2 'output'; but %s does not "
                             "equal %s (while checking arguments for %s)",
                             ptl_format_sizes(b1, sizeof(b1), g0->dim, g0->sizes),
                             ptl_format_sizes(b2, sizeof(b2), y0->dim, y0->sizes),
                             op->id == PTL_OP__log_softmax_backward_data ? "log_softmax_backward"
                                                                          : "softmax_backward");
    }
    if (ptl_wrap_dim(&dim, y0->dim) < 0) {
        return -1;
    }
    PtlDtype work = y0->dtype == PTL_DTYPE_FLOAT64 ? PTL_DTYPE_FLOAT64 : PTL_DTYPE_FLOAT32;
    if ((g = nn_contiguous_as(s[0].u.t, work)) == NULL || (y = nn_contiguous_as(y0, work)) == NULL ||
        (out = ptl_empty(y->dim, y->sizes, work, y->device)) == NULL) {
        goto error;
    }
    SoftmaxJob j = {ptl_tensor_data(out), ptl_tensor_data(g), ptl_tensor_data(y), 0, 0,
                    op->id == PTL_OP__log_softmax_backward_data, 0};
    if (!ptl_tensor_is_meta(out) && softmax_run(&j, y, dim) < 0) {
        goto error;
    }
    /* grad_output's dtype, as PyTorch's; Half for a Float grad_output of a Half input (its
     * half_to_float softmax): input_dtype had been the result's (uint8 for uint8) */
    PtlDtype res_dt = g0->dtype == PTL_DTYPE_FLOAT32 && in_dt == PTL_DTYPE_FLOAT16 ? in_dt
                                                                                   : g0->dtype;
    if (res_dt != work) {
        if ((res = ptl_cast(out, res_dt)) == NULL) {
            goto error;
        }
        PTL_CLEAR(out);
        out = res;
    }
    ptl_decref(g);
    ptl_decref(y);
    s[0] = ptl_iv_tensor(out);
    return 0;
error:
    ptl_xdecref(g);
    ptl_xdecref(y);
    ptl_xdecref(out);
    return -1;
}

/* softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor (log_softmax.int):
 * casts to dtype first, then calls the recorded _softmax. */
static int
softmax_int_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *x = s[0].u.t, *r;
    (void)ks;
    if (s[2].tag == PTL_IV_DTYPE && s[2].u.dtype != x->dtype) {
        PtlIValue c[7] = {ptl_iv_tensor(x), ptl_iv_none(), ptl_iv_none(), ptl_iv_none(),
                          ptl_iv_none(), ptl_iv_bool(0), ptl_iv_none()};
        c[1] = ptl_iv_dtype(s[2].u.dtype);
        if ((x = ptl_call_tensor(PTL_OP__to_copy, c)) == NULL) {
            return -1;
        }
    }
    else {
        ptl_incref(x);
    }
    PtlIValue a[3] = {ptl_iv_tensor(x), s[1], ptl_iv_bool(0)};
    r = ptl_call_tensor(op->id == PTL_OP_softmax_int ? PTL_OP__softmax : PTL_OP__log_softmax, a);
    ptl_decref(x);
    if (r == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(r);
    return 0;
}

/* ---- nll_loss ---- */

int (*ptl_device_nll_hook)(const PtlDeviceNllArgs *a);
int (*ptl_device_embedding_hook)(const PtlDeviceEmbeddingArgs *a);

enum { RED_NONE = 0, RED_MEAN = 1, RED_SUM = 2 };

/* The shapes of nll_loss_nd: input [N, C, S...] (or [C]), target [N, S...] (or []). */
typedef struct NllShape {
    int64_t N, C, S;
} NllShape;

/* PyTorch's checks of nll_loss_nd, in its order; fills sh. */
static int
nll_check(PtlTensorImpl *x, PtlTensorImpl *t, PtlTensorImpl *w, NllShape *sh)
{
    char a[256], b[256];
    if (x->dim < 1) {
        return ptl_error_set(PTL_ERR_VALUE, "Expected 1 or more dimensions (got %d)", x->dim);
    }
    if (x->dim != 1 && t->dim >= 1 && x->sizes[0] != t->sizes[0]) {
        return ptl_error_set(PTL_ERR_VALUE,
                             "Expected input batch_size (%lld) to match target batch_size (%lld).",
                             (long long)x->sizes[0], (long long)t->sizes[0]);
    }
    if (t->dtype != PTL_DTYPE_INT64 && t->dtype != PTL_DTYPE_UINT8) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "expected target dtype to be Long or Byte, but got %s",
                             ptl_dtype_legacy_name(t->dtype));
    }
    if (x->dim <= 2 && t->dim > 1) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "0D or 1D target tensor expected, multi-target not supported");
    }
    if (x->dim == 1 && t->dim != 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "size mismatch (got input: [%lld], target: [%lld])",
                             (long long)x->sizes[0], (long long)(t->dim ? t->sizes[0] : 1));
    }
    if (x->dim > 2) {
        int same = t->dim == x->dim - 1;
        int64_t want[PTL_MAX_DIMS];
        want[0] = x->sizes[0];
        for (int d = 2; d < x->dim; d++) {
            want[d - 1] = x->sizes[d];
            same = same && t->sizes[d - 1] == x->sizes[d];
        }
        if (!same) {
            ptl_format_sizes(a, sizeof(a), x->dim - 1, want);
            ptl_format_sizes(b, sizeof(b), t->dim, t->sizes);
            return ptl_error_set(PTL_ERR_RUNTIME, "Expected target size %s, got %s", a, b);
        }
    }
    sh->N = x->dim == 1 ? 1 : x->sizes[0];
    sh->C = x->dim == 1 ? x->sizes[0] : x->sizes[1];
    sh->S = 1;
    for (int d = 2; d < x->dim; d++) {
        sh->S *= x->sizes[d];
    }
    if (w != NULL && (w->dim != 1 || w->sizes[0] != sh->C)) {
        ptl_format_sizes(b, sizeof(b), w->dim, w->sizes);
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "weight tensor should be defined either for all %lld classes or no "
                             "classes but got weight tensor of shape: %s",
                             (long long)sh->C, b);
    }
    if (!ptl_dtype_is_floating(x->dtype)) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED,
                             "\"nll_loss_out_frame\" not implemented for '%s'",
                             ptl_dtype_legacy_name(x->dtype));
    }
    return 0;
}

/* A loss's input, target and weight (NULL: none) as contiguous copies in the dtypes its
 * kernel reads (nll_data, bce_data); released by loss_data_release. */
typedef struct LossData {
    PtlTensorImpl *x, *t, *w;
} LossData;

/* Contiguous target (int64) and weight (float64), and x contiguous in its own dtype when
 * given (the forward reads one element per target; the backward never reads x). */
static int
nll_data(PtlTensorImpl *x, PtlTensorImpl *t, PtlTensorImpl *w, LossData *d)
{
    d->x = x != NULL ? ptl_contiguous(x) : NULL;
    d->t = nn_contiguous_as(t, PTL_DTYPE_INT64);
    d->w = w != NULL ? nn_contiguous_as(w, PTL_DTYPE_FLOAT64) : NULL;
    return (x != NULL && d->x == NULL) || d->t == NULL || (w != NULL && d->w == NULL) ? -1 : 0;
}

static void
loss_data_release(LossData *d)
{
    PTL_CLEAR(d->x);
    PTL_CLEAR(d->t);
    PTL_CLEAR(d->w);
}

/* The weight of each target (0 for ignore_index) in a new array (free it) and their total;
 * NULL (error set) for a bad target or without memory. */
static double *
nll_weights(const LossData *d, const NllShape *sh, int64_t ignore, double *total)
{
    const int64_t *t = (const int64_t *)ptl_tensor_data(d->t);
    const double *w = d->w ? (const double *)ptl_tensor_data(d->w) : NULL;
    double *wt = malloc(sizeof(double) * (size_t)(sh->N * sh->S + 1));
    if (wt == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "nll_loss: out of memory");
        return NULL;
    }
    *total = 0;
    for (int64_t i = 0; i < sh->N * sh->S; i++) {
        if (t[i] == ignore) {
            wt[i] = 0;
            continue;
        }
        if (t[i] < 0 || t[i] >= sh->C) {
            ptl_error_set(PTL_ERR_INDEX, "Target %lld is out of bounds.", (long long)t[i]);
            free(wt);
            return NULL;
        }
        wt[i] = w ? w[t[i]] : 1.0;
        *total += wt[i];
    }
    return wt;
}

/* The float64 output of a loss: shaped [dim]sizes for reduction none, else 0-dim (new ref). */
static PtlTensorImpl *
loss_output(int64_t red, int dim, const int64_t *sizes, PtlDevice device)
{
    return red == RED_NONE ? ptl_empty(dim, sizes, PTL_DTYPE_FLOAT64, device)
                           : ptl_empty(0, NULL, PTL_DTYPE_FLOAT64, device);
}

/* nll_loss_nd(Tensor self, Tensor target, Tensor? weight, int reduction, int ignore_index).
 * [N, C, S...], [N, S...] -> [N, S...] (none) or [] (mean, sum) */
static int
nll_loss_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *x = s[0].u.t, *t = s[1].u.t, *out = NULL, *res = NULL;
    PtlTensorImpl *w = s[2].tag == PTL_IV_TENSOR ? s[2].u.t : NULL;
    int64_t red = s[3].u.i, ignore = s[4].u.i;
    LossData d = {NULL, NULL, NULL};
    NllShape sh;
    double *wt = NULL, total, acc = 0;
    (void)op;
    (void)ks;

    if (nll_check(x, t, w, &sh) < 0 || nll_data(x, t, w, &d) < 0) {
        goto error;
    }
    if ((out = loss_output(red, t->dim, t->sizes, x->device)) == NULL) {
        goto error;
    }
    if (ptl_tensor_is_meta(out)) {
        goto done;
    }
    if (nn_on_device(x, ptl_device_nll_hook != NULL)) {
        PtlDeviceNllArgs a = {0, d.x->dtype, ptl_tensor_data(d.x),
                              (const int64_t *)ptl_tensor_data(d.t),
                              d.w ? (const double *)ptl_tensor_data(d.w) : NULL, NULL,
                              ptl_tensor_data(out), sh.N, sh.C, sh.S, red, ignore};
        if (ptl_device_nll_hook(&a) < 0) {
            goto error;
        }
        goto done;
    }
    if ((wt = nll_weights(&d, &sh, ignore, &total)) == NULL) {
        goto error;
    }
    const char *xv = (const char *)ptl_tensor_data(d.x);
    size_t xsz = ptl_tensor_itemsize(d.x);
    const int64_t *tv = (const int64_t *)ptl_tensor_data(d.t);
    double *ov = (double *)ptl_tensor_data(out);
    for (int64_t i = 0; i < sh.N; i++) {
        for (int64_t k = 0; k < sh.S; k++) {
            int64_t e = i * sh.S + k;
            size_t at = (size_t)((i * sh.C + tv[e]) * sh.S + k) * xsz;
            double l = wt[e] == 0 ? 0.0 : -wt[e] * ptl_load_double(xv + at, x->dtype);
            if (red == RED_NONE) {
                ov[e] = l;
            }
            acc += l;
        }
    }
    if (red != RED_NONE) {
        ov[0] = red == RED_MEAN ? acc / total : acc;
    }
done:
    if ((res = ptl_cast(out, x->dtype)) == NULL) {
        goto error;
    }
    ptl_decref(out);
    free(wt);
    loss_data_release(&d);
    s[0] = ptl_iv_tensor(res);
    return 0;
error:
    free(wt);
    loss_data_release(&d);
    ptl_xdecref(out);
    return -1;
}

/* nll_loss_nd_backward(grad_output, self, target, weight, reduction, ignore_index).
 * [N, S...] or [], [N, C, S...] -> [N, C, S...] */
static int
nll_loss_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *x = s[1].u.t, *t = s[2].u.t, *gi = NULL, *g = NULL;
    PtlTensorImpl *w = s[3].tag == PTL_IV_TENSOR ? s[3].u.t : NULL;
    int64_t red = s[4].u.i, ignore = s[5].u.i;
    LossData d = {NULL, NULL, NULL};
    NllShape sh;
    double *wt = NULL, total;
    (void)op;
    (void)ks;

    if (nll_check(x, t, w, &sh) < 0 || nll_data(NULL, t, w, &d) < 0 ||
        (g = nn_contiguous_as(s[0].u.t, PTL_DTYPE_FLOAT64)) == NULL) {
        goto error;
    }
    if ((gi = ptl_empty(x->dim, x->sizes, x->dtype, x->device)) == NULL) {
        goto error;
    }
    if (ptl_tensor_is_meta(gi)) {
        goto done;
    }
    if (nn_on_device(x, ptl_device_nll_hook != NULL)) {
        PtlDeviceNllArgs a = {1, x->dtype, NULL, (const int64_t *)ptl_tensor_data(d.t),
                              d.w ? (const double *)ptl_tensor_data(d.w) : NULL,
                              (const double *)ptl_tensor_data(g), ptl_tensor_data(gi), sh.N,
                              sh.C, sh.S, red, ignore};
        if (ptl_device_nll_hook(&a) < 0) {
            goto error;
        }
        goto done;
    }
    if ((wt = nll_weights(&d, &sh, ignore, &total)) == NULL) {
        goto error;
    }
    /* zeros, then -weight * grad at each target, rounded once to x's dtype */
    char *gv = (char *)ptl_tensor_data(gi);
    size_t gsz = ptl_tensor_itemsize(gi);
    const double *go = (const double *)ptl_tensor_data(g);
    const int64_t *tv = (const int64_t *)ptl_tensor_data(d.t);
    memset(gv, 0, gsz * (size_t)gi->numel);
    for (int64_t e = 0; e < sh.N * sh.S; e++) {
        if (wt[e] == 0) {
            continue;
        }
        double ge = red == RED_NONE ? go[e] : red == RED_MEAN ? go[0] / total : go[0];
        size_t at = (size_t)(((e / sh.S) * sh.C + tv[e]) * sh.S + e % sh.S) * gsz;
        ptl_store_double(gv + at, x->dtype, -wt[e] * ge);
    }
done:
    ptl_decref(g);
    free(wt);
    loss_data_release(&d);
    s[0] = ptl_iv_tensor(gi);
    return 0;
error:
    free(wt);
    loss_data_release(&d);
    ptl_xdecref(g);
    ptl_xdecref(gi);
    return -1;
}

/* ---- binary_cross_entropy ---- */

/* PyTorch's binary_cross_entropy kernels iterate their tensors (not the weight) in one
 * dtype, the first's: 0, or -1 with its TensorIterator's error */
static int
bce_dtype_check(const PtlTensorImpl *t, PtlDtype want)
{
    if (t->dtype != want) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Found dtype %s but expected %s",
                             ptl_dtype_legacy_name(t->dtype), ptl_dtype_legacy_name(want));
    }
    return 0;
}

int
ptl_bce_check(const PtlTensorImpl *x, const PtlTensorImpl *t)
{
    if (x->dim != t->dim || memcmp(x->sizes, t->sizes, sizeof(int64_t) * (size_t)x->dim) != 0) {
        return ptl_error_set(PTL_ERR_VALUE,
                             "Using a target size that is different to the input size is not "
                             "supported. Please ensure they have the same size.");
    }
    if (bce_dtype_check(t, x->dtype) < 0) {
        return -1;
    }
    if (!ptl_dtype_is_floating(x->dtype)) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED,
                             "\"binary_cross_entropy\" not implemented for '%s'",
                             ptl_dtype_legacy_name(x->dtype));
    }
    return 0;
}

/* Float64 contiguous copies of (self, target, weight expanded to self's shape), from the
 * slots s[first], s[first + 1], s[first + 2]. */
static int
bce_data(PtlIValue *s, int first, LossData *d)
{
    PtlTensorImpl *x = s[first].u.t, *t = s[first + 1].u.t;
    PtlTensorImpl *w = s[first + 2].tag == PTL_IV_TENSOR ? s[first + 2].u.t : NULL;
    if (ptl_bce_check(x, t) < 0 || (d->x = ptl_cast(x, PTL_DTYPE_FLOAT64)) == NULL ||
        (d->t = ptl_cast(t, PTL_DTYPE_FLOAT64)) == NULL) {
        return -1;
    }
    if (w != NULL) {
        PtlIValue e[3] = {ptl_iv_tensor(w), ptl_iv_intlist(x->sizes, x->dim), ptl_iv_bool(0)};
        PtlTensorImpl *we = ptl_call_tensor(PTL_OP_expand, e);
        if (we == NULL) {
            return -1;
        }
        d->w = ptl_cast(we, PTL_DTYPE_FLOAT64);
        ptl_decref(we);
        if (d->w == NULL) {
            return -1;
        }
    }
    return 0;
}

/* binary_cross_entropy(Tensor self, Tensor target, Tensor? weight, int reduction)
 * [*], [*] -> [*] (none) or [] */
static int
bce_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *x = s[0].u.t, *out = NULL, *res = NULL;
    int64_t red = s[3].u.i, numel = x->numel;
    LossData d = {NULL, NULL, NULL};
    double acc = 0;
    (void)op;
    (void)ks;

    if (bce_data(s, 0, &d) < 0 || (out = loss_output(red, x->dim, x->sizes, x->device)) == NULL) {
        goto error;
    }
    const double *xv = (const double *)ptl_tensor_data(d.x);
    const double *tv = (const double *)ptl_tensor_data(d.t);
    const double *wv = d.w ? (const double *)ptl_tensor_data(d.w) : NULL;
    double *ov = (double *)ptl_tensor_data(out);
    for (int64_t i = 0; i < numel; i++) {
        if (!(xv[i] >= 0 && xv[i] <= 1)) {
            ptl_error_set(PTL_ERR_RUNTIME, "all elements of input should be between 0 and 1");
            goto error;
        }
        if (!(tv[i] >= 0 && tv[i] <= 1)) {   /* nan included, as PyTorch */
            ptl_error_set(PTL_ERR_RUNTIME, "all elements of target should be between 0 and 1");
            goto error;
        }
        double l = ptl_bce_d(xv[i], tv[i]) * (wv ? wv[i] : 1.0);
        if (red == RED_NONE) {
            ov[i] = l;
        }
        acc += l;
    }
    if (red != RED_NONE) {
        ov[0] = red == RED_MEAN ? acc / (double)numel : acc;
    }
    if ((res = ptl_cast(out, x->dtype)) == NULL) {
        goto error;
    }
    ptl_decref(out);
    loss_data_release(&d);
    s[0] = ptl_iv_tensor(res);
    return 0;
error:
    loss_data_release(&d);
    ptl_xdecref(out);
    return -1;
}

/* grad_output broadcast to x's shape, contiguous float64 (new ref): PyTorch's backward
 * multiplies it in elementwise, so a shape that does not broadcast to x's is an error */
static PtlTensorImpl *
bce_grad_output(PtlTensorImpl *g, PtlTensorImpl *x)
{
    int64_t shape[PTL_MAX_DIMS];
    int n;
    if (ptl_broadcast_shapes(g->dim, g->sizes, x->dim, x->sizes, &n, shape) < 0) {
        return NULL;
    }
    if (n != x->dim || memcmp(shape, x->sizes, sizeof(int64_t) * (size_t)n) != 0) {
        ptl_error_set(PTL_ERR_RUNTIME,
                      "binary_cross_entropy_backward: grad_output of %d dimensions does not "
                      "broadcast to the input's %d",
                      g->dim, x->dim);
        return NULL;
    }
    PtlIValue e[3] = {ptl_iv_tensor(g), ptl_iv_intlist(x->sizes, x->dim), ptl_iv_bool(0)};
    PtlTensorImpl *ge = ptl_call_tensor(PTL_OP_expand, e), *res;
    if (ge == NULL) {
        return NULL;
    }
    res = ptl_cast(ge, PTL_DTYPE_FLOAT64);
    ptl_decref(ge);
    return res;
}

/* binary_cross_entropy_backward(grad_output, self, target, weight, reduction)
 * [*] or [], [*], [*] -> [*], laid out as empty_like(self) (PyTorch's grad_input) */
static int
bce_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *x = s[1].u.t, *g = NULL, *gi = NULL, *res = NULL;
    int64_t red = s[4].u.i, numel = x->numel, strides[PTL_MAX_DIMS];
    LossData d = {NULL, NULL, NULL};
    (void)op;
    (void)ks;

    if (bce_dtype_check(x, s[0].u.t->dtype) < 0 || bce_data(s, 1, &d) < 0 ||
        (g = bce_grad_output(s[0].u.t, x)) == NULL ||
        (gi = ptl_empty(x->dim, x->sizes, PTL_DTYPE_FLOAT64, x->device)) == NULL) {
        goto error;
    }
    const double *xv = (const double *)ptl_tensor_data(d.x);
    const double *tv = (const double *)ptl_tensor_data(d.t);
    const double *wv = d.w ? (const double *)ptl_tensor_data(d.w) : NULL;
    const double *gv = (const double *)ptl_tensor_data(g);
    double *ov = (double *)ptl_tensor_data(gi);
    for (int64_t i = 0; i < numel; i++) {
        double ge = red == RED_MEAN ? gv[i] / (double)numel : gv[i];
        ov[i] = ptl_bce_grad_d(ge, xv[i], tv[i]) * (wv ? wv[i] : 1.0);
    }
    if (ptl_memory_format_like_strides(x, PTL_MEMORY_FORMAT_PRESERVE, strides) < 0 ||
        (res = ptl_empty_strided(x->dim, x->sizes, strides, x->dtype, x->device)) == NULL ||
        ptl_copy_into(res, gi) < 0) {
        goto error;
    }
    ptl_decref(gi);
    ptl_decref(g);
    loss_data_release(&d);
    s[0] = ptl_iv_tensor(res);
    return 0;
error:
    loss_data_release(&d);
    ptl_xdecref(g);
    ptl_xdecref(gi);
    ptl_xdecref(res);
    return -1;
}

static const PtlKernelReg nn_cpu[] = {
    {PTL_OP__softmax, PTL_KEY_CPU, softmax_cpu},
    {PTL_OP__log_softmax, PTL_KEY_CPU, softmax_cpu},
    {PTL_OP__softmax_backward_data, PTL_KEY_CPU, softmax_backward_cpu},
    {PTL_OP__log_softmax_backward_data, PTL_KEY_CPU, softmax_backward_cpu},
    {PTL_OP_softmax_int, PTL_KEY_COMPOSITE_IMPLICIT, softmax_int_composite},
    {PTL_OP_log_softmax_int, PTL_KEY_COMPOSITE_IMPLICIT, softmax_int_composite},
    {PTL_OP_nll_loss_nd, PTL_KEY_CPU, nll_loss_cpu},
    {PTL_OP_nll_loss_nd_backward, PTL_KEY_CPU, nll_loss_backward_cpu},
    {PTL_OP_binary_cross_entropy, PTL_KEY_CPU, bce_cpu},
    {PTL_OP_binary_cross_entropy_backward, PTL_KEY_CPU, bce_backward_cpu},
};
PTL_DEFINE_REGISTER(nn_cpu)

