/* nn.c -- softmax, log_softmax, nll_loss, binary_cross_entropy, the regression losses
 * (mse_loss, smooth_l1_loss, huber_loss; Note [Regression losses]) and embedding.  Mirrors
 * ATen/native/SoftMax.cpp (+ cpu/SoftMaxKernel.cpp), LossNLL.cpp, Loss.cpp and
 * Embedding.cpp.
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
#include "native.h"
#include "nn_common.h"
#include "reduce_kernels.h"
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

/* The strided case (inner > 1): one [n, inner] block per outer index, walked row by row
 * so every pass reads unit-stride memory; acc holds a max and a sum per column.  One plain
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
 * logsumexp over an outer dim (reduce.c) takes the first two passes without the stores,
 * and logsumexp over contiguous runs the row's max and sum. */
#define SM_COLS 128
#define SM_ROW_GROUP 32
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
        for (int64_t c = 0; c < w; c++) {                                                 \
            sum[c] = 0;                                                                   \
        }                                                                                 \
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
            if (k % SM_ROW_GROUP == 0) {                                                  \
                for (int64_t c = 0; c < w; c += L) {                                      \
                    PTL_V(S, storeu)(part + c, zero);                                     \
                }                                                                         \
            }                                                                             \
            for (int64_t c = 0; c < w; c += L) {                                          \
                PTL_VT(S) d = PTL_V(S, sub)(sm_load_##S(xr + c, w - c, t),                \
                                            PTL_V(S, loadu)(sh + c));                     \
                PTL_VT(S) e = PTL_VEXP(S)(d);                                             \
                PTL_V(S, storeu)(part + c, PTL_V(S, add)(PTL_V(S, loadu)(part + c), e));  \
                if (orow != NULL) {                                                       \
                    sm_store_##S(orow + c, t, w - c, lg ? d : e);                         \
                }                                                                         \
            }                                                                             \
            if (k % SM_ROW_GROUP == SM_ROW_GROUP - 1 || k == n - 1) {                     \
                for (int64_t c = 0; c < w; c++) {                                         \
                    sum[c] += (double)part[c];                                            \
                }                                                                         \
            }                                                                             \
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

#define DEFINE_SOFTMAX_VEC(T, S)                                                          \
    DEFINE_SM_MAX(T, S)                                                                   \
    DEFINE_SM_EXPSUM(T, S)                                                                \
    DEFINE_SOFTMAX_ROW_VEC(T, S)                                                          \
    DEFINE_SOFTMAX_COLS_VEC(T, S)
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
/* The forward over [n, inner] blocks (inner > 1), by columns (Note [Softmax columns]): work
 * unit u is the columns [c0, c0 + SM_COLS) of block u / ncb, ncb column groups a block. */
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
        if (j->f8) {
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
    if (j->y == NULL && ptl_cpu_capability() >= PTL_CPU_AVX2) {
        int64_t units = outer * ((j->inner + SM_COLS - 1) / SM_COLS);
        return ptl_parallel_for(0, units, PTL_GRAIN_SIZE / (j->n * SM_COLS) + 1,
                                softmax_cols_chunk, j);
    }
#endif
    return ptl_parallel_for(0, outer, PTL_GRAIN_SIZE / (j->n * j->inner) + 1,
                            f8 ? softmax_block_chunk_f8 : softmax_block_chunk_f4, j);
}

/* t (borrowed) contiguous in dtype dt: t itself when it already is (new ref) */
static PtlTensorImpl *
contiguous_as(PtlTensorImpl *t, PtlDtype dt)
{
    return t->dtype == dt ? ptl_contiguous(t) : ptl_cast(t, dt);
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
    x = contiguous_as(self, work);
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
    if ((g = contiguous_as(s[0].u.t, work)) == NULL || (y = contiguous_as(y0, work)) == NULL ||
        (out = ptl_empty(y->dim, y->sizes, work, y->device)) == NULL) {
        goto error;
    }
    SoftmaxJob j = {ptl_tensor_data(out), ptl_tensor_data(g), ptl_tensor_data(y), 0, 0,
                    op->id == PTL_OP__log_softmax_backward_data, 0};
    if (!ptl_tensor_is_meta(out) && softmax_run(&j, y, dim) < 0) {
        goto error;
    }
    if (in_dt != work) {
        if ((res = ptl_cast(out, in_dt)) == NULL) {
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

/* 1 when t's kernel runs on the device through a set hook (has_hook): a CUDA tensor, or
 * the tests' emulation of the CUDA kernels (device_reduce.h) */
static int
on_device(const PtlTensorImpl *t, int has_hook)
{
    return (t->device.type == PTL_DEVICE_CUDA || ptl_device_reduce_emulation) && has_hook;
}

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
    d->t = contiguous_as(t, PTL_DTYPE_INT64);
    d->w = w != NULL ? contiguous_as(w, PTL_DTYPE_FLOAT64) : NULL;
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
    if (on_device(x, ptl_device_nll_hook != NULL)) {
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
        (g = contiguous_as(s[0].u.t, PTL_DTYPE_FLOAT64)) == NULL) {
        goto error;
    }
    if ((gi = ptl_empty(x->dim, x->sizes, x->dtype, x->device)) == NULL) {
        goto error;
    }
    if (ptl_tensor_is_meta(gi)) {
        goto done;
    }
    if (on_device(x, ptl_device_nll_hook != NULL)) {
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

/* Float64 contiguous copies of (self, target, weight expanded to self's shape), from the
 * slots s[first], s[first + 1], s[first + 2]. */
static int
bce_data(PtlIValue *s, int first, LossData *d)
{
    PtlTensorImpl *x = s[first].u.t, *t = s[first + 1].u.t;
    PtlTensorImpl *w = s[first + 2].tag == PTL_IV_TENSOR ? s[first + 2].u.t : NULL;
    if (x->dim != t->dim || memcmp(x->sizes, t->sizes, sizeof(int64_t) * (size_t)x->dim) != 0) {
        return ptl_error_set(PTL_ERR_VALUE,
                             "Using a target size that is different to the input size is not "
                             "supported. Please ensure they have the same size.");
    }
    if (!ptl_dtype_is_floating(x->dtype)) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED,
                             "\"binary_cross_entropy\" not implemented for '%s'",
                             ptl_dtype_legacy_name(x->dtype));
    }
    if ((d->x = ptl_cast(x, PTL_DTYPE_FLOAT64)) == NULL ||
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
 * [*] or [], [*], [*] -> [*] */
static int
bce_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *x = s[1].u.t, *g = NULL, *gi = NULL, *res = NULL;
    int64_t red = s[4].u.i, numel = x->numel;
    LossData d = {NULL, NULL, NULL};
    (void)op;
    (void)ks;

    if (bce_data(s, 1, &d) < 0 || (g = bce_grad_output(s[0].u.t, x)) == NULL ||
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
    if ((res = ptl_cast(gi, x->dtype)) == NULL) {
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
    return -1;
}

/* ---- mse_loss, smooth_l1_loss, huber_loss ---- */

/* Note [Regression losses]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * mse_loss, smooth_l1_loss and huber_loss, and their backward ops, make one pass over their
 * operands: input and target (and the backward's grad_output) are broadcast to one shape
 * and made contiguous in the dtype they promote to (no copy for the usual contiguous
 * operands of one shape and dtype; float16 and bfloat16 are widened to float32 copies and
 * the result rounded once).  The elementwise loss is computed in that dtype with the
 * formulas of scalar_math.h, in PyTorch's order of operations, so reduction 'none' and the
 * backward give PyTorch's float32 bits.  'mean' and 'sum' add the elementwise losses in
 * double without writing them out: REG_BLOCK losses a time go to a buffer in L1 and are
 * added by the contiguous sum of reduce.c (ptl_red_sum_contiguous).  The elements are cut
 * into chunks whose size depends on their count alone (REG_CHUNK, more when that would make
 * over REG_MAX_CHUNKS chunks), and the chunks' sums are added in order: the threads share
 * the chunks, and the result does not depend on their number.  A grad_output of one element
 * (the backward of 'mean' and 'sum') is read once, not expanded. */
#define REG_CHUNK 8192
#define REG_MAX_CHUNKS 256
#define REG_BLOCK 512

typedef enum RegLoss { REG_MSE, REG_SMOOTH_L1, REG_HUBER } RegLoss;

typedef struct RegJob {
    const char *x, *t, *g;   /* input, target, the backward's grad_output (contiguous) */
    char *out;               /* the elementwise losses or gradients; NULL: only their sum */
    int64_t n, chunk;
    double gv;               /* the backward's grad_output when g is NULL */
    double norm, p;          /* the derivative's norm; beta or delta */
    int backward;            /* the chunks compute the gradient, not the loss */
    double parts[REG_MAX_CHUNKS];
} RegJob;

/* the loss of one element, or its derivative, in float or double */
static inline float
reg_loss_f(RegLoss k, float x, float t, float p)
{
    return k == REG_MSE         ? ptl_mse_loss_f(x, t, p)
           : k == REG_SMOOTH_L1 ? ptl_smooth_l1_loss_f(x, t, p)
                                : ptl_huber_loss_f(x, t, p);
}

static inline double
reg_loss_d(RegLoss k, double x, double t, double p)
{
    return k == REG_MSE         ? ptl_mse_loss_d(x, t, p)
           : k == REG_SMOOTH_L1 ? ptl_smooth_l1_loss_d(x, t, p)
                                : ptl_huber_loss_d(x, t, p);
}

static inline float
reg_grad_f(RegLoss k, float g, float x, float t, float norm, float p)
{
    return k == REG_MSE         ? ptl_mse_loss_grad_f(g, x, t, norm, p)
           : k == REG_SMOOTH_L1 ? ptl_smooth_l1_loss_grad_f(g, x, t, norm, p)
                                : ptl_huber_loss_grad_f(g, x, t, norm, p);
}

static inline double
reg_grad_d(RegLoss k, double g, double x, double t, double norm, double p)
{
    return k == REG_MSE         ? ptl_mse_loss_grad_d(g, x, t, norm, p)
           : k == REG_SMOOTH_L1 ? ptl_smooth_l1_loss_grad_d(g, x, t, norm, p)
                                : ptl_huber_loss_grad_d(g, x, t, norm, p);
}

/* Chunk c of the forward: the losses into j->out, or their sum into j->parts[c] (the loss
 * loop vectorises, selects and all; Note [Select formulas] in activation.c). */
__attribute__((always_inline)) static inline void
reg_forward_chunk(RegJob *j, RegLoss k, int f8, int64_t c)
{
    int64_t b = c * j->chunk, e = b + j->chunk < j->n ? b + j->chunk : j->n;
    union {
        double d[REG_BLOCK];
        float f[REG_BLOCK];
    } buf;
    double acc = 0;
    for (int64_t i0 = b; i0 < e; i0 += REG_BLOCK) {
        int64_t m = e - i0 < REG_BLOCK ? e - i0 : REG_BLOCK;
        if (f8) {
            const double *x = (const double *)j->x + i0, *t = (const double *)j->t + i0;
            double *o = j->out != NULL ? (double *)j->out + i0 : buf.d, p = j->p;
            for (int64_t i = 0; i < m; i++) {
                o[i] = reg_loss_d(k, x[i], t[i], p);
            }
        }
        else {
            const float *x = (const float *)j->x + i0, *t = (const float *)j->t + i0;
            float *o = j->out != NULL ? (float *)j->out + i0 : buf.f, p = (float)j->p;
            for (int64_t i = 0; i < m; i++) {
                o[i] = reg_loss_f(k, x[i], t[i], p);
            }
        }
        if (j->out == NULL) {
            acc += ptl_red_sum_contiguous(f8 ? PTL_DTYPE_FLOAT64 : PTL_DTYPE_FLOAT32,
                                          (const char *)&buf, m);
        }
    }
    j->parts[c] = acc;
}

/* Chunk c of the backward: the gradients into j->out */
__attribute__((always_inline)) static inline void
reg_backward_chunk(RegJob *j, RegLoss k, int f8, int64_t c)
{
    int64_t b = c * j->chunk, e = b + j->chunk < j->n ? b + j->chunk : j->n;
    if (f8) {
        const double *x = (const double *)j->x, *t = (const double *)j->t;
        const double *g = (const double *)j->g, gv = j->gv, norm = j->norm, p = j->p;
        double *o = (double *)j->out;
        for (int64_t i = b; i < e; i++) {
            o[i] = reg_grad_d(k, g != NULL ? g[i] : gv, x[i], t[i], norm, p);
        }
    }
    else {
        const float *x = (const float *)j->x, *t = (const float *)j->t;
        const float *g = (const float *)j->g;
        float *o = (float *)j->out, gv = (float)j->gv, norm = (float)j->norm, p = (float)j->p;
        for (int64_t i = b; i < e; i++) {
            o[i] = reg_grad_f(k, g != NULL ? g[i] : gv, x[i], t[i], norm, p);
        }
    }
}

/* The parallel_for bodies of each loss and dtype: thin wrappers that make k and f8
 * constants of their own copy of the chunk loops, compiled for AVX2 and the baseline (Note
 * [Loop clones]; the chunk loops are inlined into each clone). */
#define DEFINE_REG_BODY(NAME, K, F8)                                                      \
    PTL_LOOP_CLONES static int                                                            \
    NAME##_chunks(void *ctx, int64_t b, int64_t e)                                        \
    {                                                                                     \
        RegJob *j = ctx;                                                                  \
        for (int64_t c = b; c < e; c++) {                                                 \
            if (j->backward) {                                                            \
                reg_backward_chunk(j, K, F8, c);                                          \
            }                                                                             \
            else {                                                                        \
                reg_forward_chunk(j, K, F8, c);                                           \
            }                                                                             \
        }                                                                                 \
        return 0;                                                                         \
    }
DEFINE_REG_BODY(mse_f4, REG_MSE, 0)
DEFINE_REG_BODY(mse_f8, REG_MSE, 1)
DEFINE_REG_BODY(smooth_l1_f4, REG_SMOOTH_L1, 0)
DEFINE_REG_BODY(smooth_l1_f8, REG_SMOOTH_L1, 1)
DEFINE_REG_BODY(huber_f4, REG_HUBER, 0)
DEFINE_REG_BODY(huber_f8, REG_HUBER, 1)
#undef DEFINE_REG_BODY

/* ORDER RegLoss, then float32 / float64 */
static const PtlParallelFn reg_fns[3][2] = {{mse_f4_chunks, mse_f8_chunks},
                                            {smooth_l1_f4_chunks, smooth_l1_f8_chunks},
                                            {huber_f4_chunks, huber_f8_chunks}};
/* the names of PyTorch's kernels in its dtype errors, ORDER RegLoss */
static const char *const reg_names[3] = {"mse", "smooth_l1", "huber"};

/* The loss's op: its kind from the op id */
static RegLoss
reg_kind(const PtlOperator *op)
{
    switch (op->id) {
    case PTL_OP_mse_loss:
    case PTL_OP_mse_loss_backward:
        return REG_MSE;
    case PTL_OP_smooth_l1_loss:
    case PTL_OP_smooth_l1_loss_backward:
        return REG_SMOOTH_L1;
    default:
        return REG_HUBER;
    }
}

/* PyTorch's checks of beta and delta */
static int
reg_check_param(RegLoss k, double p)
{
    if (k == REG_SMOOTH_L1 && p < 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "smooth_l1_loss does not support negative values for beta.");
    }
    if (k == REG_HUBER && p <= 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "huber_loss does not support non-positive values for delta.");
    }
    return 0;
}

/* The nin operands in[] (borrowed) broadcast to one shape (*dim, sizes) and made contiguous
 * in the work dtype of the dtype they promote to (*dt): prep[] (new refs; on error the ones
 * made are released).  An operand marked in `scalar` that holds one element is left NULL
 * (its value is read once).  0 or -1. */
static int
reg_prepare(RegLoss k, int backward, int nin, PtlTensorImpl **in, unsigned scalar,
            PtlTensorImpl **prep, PtlDtype *dt, int *dim, int64_t *sizes)
{
    *dt = in[0]->dtype;
    *dim = in[0]->dim;
    memcpy(sizes, in[0]->sizes, sizeof(int64_t) * (size_t)in[0]->dim);
    for (int i = 1; i < nin; i++) {
        *dt = ptl_promote_types(*dt, in[i]->dtype);
        if (ptl_broadcast_shapes(*dim, sizes, in[i]->dim, in[i]->sizes, dim, sizes) < 0) {
            return -1;
        }
    }
    if (!ptl_dtype_is_floating(*dt)) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s%s_cpu\" not implemented for '%s'",
                             reg_names[k], backward ? "_backward" : "",
                             ptl_dtype_legacy_name(*dt));
    }
    for (int i = 0; i < nin; i++) {
        prep[i] = NULL;
    }
    for (int i = 0; i < nin; i++) {
        PtlTensorImpl *e;
        if (((scalar >> i) & 1) && in[i]->numel == 1) {
            continue;
        }
        PtlIValue a[3] = {ptl_iv_tensor(in[i]), ptl_iv_intlist(sizes, *dim), ptl_iv_bool(0)};
        if ((e = ptl_call_tensor(PTL_OP_expand, a)) == NULL) {
            goto error;
        }
        prep[i] = nn_prepare(e, nn_work_dtype(*dt));
        ptl_decref(e);
        if (prep[i] == NULL) {
            goto error;
        }
    }
    return 0;
error:
    for (int i = 0; i < nin; i++) {
        PTL_CLEAR(prep[i]);
    }
    return -1;
}

/* Runs the chunks of job for loss k in dtype f8 (Note [Regression losses]); 0 or -1. */
static int
reg_run(RegJob *job, RegLoss k, int f8)
{
    int64_t nchunks = (job->n + REG_CHUNK - 1) / REG_CHUNK;
    job->chunk = nchunks > REG_MAX_CHUNKS ? (job->n + REG_MAX_CHUNKS - 1) / REG_MAX_CHUNKS
                                          : REG_CHUNK;
    nchunks = (job->n + job->chunk - 1) / job->chunk;
    void *token = job->n >= PTL_GRAIN_SIZE ? ptl_nogil_begin() : NULL;
    int rc = ptl_parallel_for(0, nchunks, PTL_GRAIN_SIZE / REG_CHUNK, reg_fns[k][f8], job);
    ptl_nogil_end(token);
    return rc;
}

/* mse_loss(self, target, reduction), smooth_l1_loss(self, target, reduction, beta),
 * huber_loss(self, target, reduction, delta): [*], [*] -> [*] (none) or [] (mean, sum);
 * and their backward ops <loss>_backward(grad_output, self, target, reduction[, beta or
 * delta]): [*] or [], [*], [*] -> [*].  The backward's arguments are the forward's after
 * grad_output (bw = 1). */
static int
reg_loss_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    RegLoss k = reg_kind(op);
    int bw = op->id == PTL_OP_mse_loss_backward || op->id == PTL_OP_smooth_l1_loss_backward ||
             op->id == PTL_OP_huber_loss_backward;
    PtlTensorImpl *in[3] = {s[0].u.t, s[1].u.t, bw ? s[2].u.t : NULL};
    PtlTensorImpl *prep[3] = {NULL, NULL, NULL}, *out = NULL;
    int64_t red = s[bw + 2].u.i, sizes[PTL_MAX_DIMS];
    double p = k == REG_MSE ? 0 : ptl_iv_to_double(&s[bw + 3]);
    int dim, rc = -1;
    PtlDtype dt;
    RegJob *job = NULL;
    (void)ks;

    if (reg_check_param(k, p) < 0 ||
        reg_prepare(k, bw, 2 + bw, in, (unsigned)bw, prep, &dt, &dim, sizes) < 0) {
        return -1;
    }
    red = red == RED_MEAN || red == RED_SUM ? red : RED_NONE;
    out = bw || red == RED_NONE ? ptl_empty(dim, sizes, prep[bw]->dtype, prep[bw]->device)
                                : ptl_empty(0, NULL, prep[bw]->dtype, prep[bw]->device);
    if (out == NULL || (job = malloc(sizeof(*job))) == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "%s_loss%s: out of memory", reg_names[k],
                      bw ? "_backward" : "");
        goto done;
    }
    *job = (RegJob){.x = ptl_tensor_data(prep[bw]), .t = ptl_tensor_data(prep[bw + 1]),
                    .g = bw && prep[0] ? ptl_tensor_data(prep[0]) : NULL,
                    .gv = bw && !prep[0] ? ptl_item_double(in[0]) : 0,
                    .out = bw || red == RED_NONE ? ptl_tensor_data(out) : NULL,
                    .n = prep[bw]->numel, .p = p, .backward = bw,
                    .norm = (k == REG_MSE ? 2.0 : 1.0) /
                            (red == RED_MEAN ? (double)prep[bw]->numel : 1.0)};
    if (reg_run(job, k, prep[bw]->dtype == PTL_DTYPE_FLOAT64) < 0) {
        goto done;
    }
    if (!bw && red != RED_NONE) {
        double acc = 0;
        for (int64_t c = 0; c * job->chunk < job->n; c++) {
            acc += job->parts[c];
        }
        ptl_store_double(ptl_tensor_data(out), out->dtype,
                         red == RED_MEAN ? acc / (double)job->n : acc);
    }
    s[0] = ptl_iv_tensor(nn_finish(out, dt));
    out = NULL;
    rc = s[0].u.t != NULL ? 0 : -1;
done:
    free(job);
    ptl_xdecref(out);
    for (int i = 0; i < 3; i++) {
        ptl_xdecref(prep[i]);
    }
    return rc;
}

/* ---- embedding ---- */

static int
check_indices(PtlTensorImpl *idx, const char *fn)
{
    if (idx->dtype != PTL_DTYPE_INT64 && idx->dtype != PTL_DTYPE_INT32) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Expected tensor for argument #1 'indices' to have one of the "
                             "following scalar types: Long, Int; but got torch.%sTensor instead "
                             "(while checking arguments for %s)",
                             ptl_dtype_legacy_name(idx->dtype), fn);
    }
    return 0;
}

/* embedding(Tensor weight, Tensor indices, ...) -> Tensor.  [V, D], [*] -> [*, D] */
static int
embedding_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *w = s[0].u.t, *idx = NULL, *wc = NULL, *out = NULL;
    int64_t sizes[PTL_MAX_DIMS + 1], numel = 1;
    (void)op;
    (void)ks;

    if (w->dim != 2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "'weight' must be 2-D");
    }
    if (check_indices(s[1].u.t, "embedding") < 0) {
        return -1;
    }
    if (s[1].u.t->dim >= PTL_MAX_DIMS) {
        return ptl_error_set(PTL_ERR_RUNTIME, "embedding: too many dimensions");
    }
    if ((idx = ptl_cast(s[1].u.t, PTL_DTYPE_INT64)) == NULL || (wc = ptl_contiguous(w)) == NULL) {
        goto error;
    }
    for (int d = 0; d < idx->dim; d++) {
        sizes[d] = idx->sizes[d];
        numel *= idx->sizes[d];
    }
    sizes[idx->dim] = w->sizes[1];
    if ((out = ptl_empty(idx->dim + 1, sizes, w->dtype, w->device)) == NULL) {
        goto error;
    }
    const int64_t *iv = (const int64_t *)ptl_tensor_data(idx);
    size_t row = ptl_tensor_itemsize(w) * (size_t)w->sizes[1];
    if (!ptl_tensor_is_meta(out) && on_device(w, ptl_device_embedding_hook != NULL)) {
        PtlDeviceEmbeddingArgs a = {0, w->dtype, 0, ptl_tensor_data(wc), iv,
                                    ptl_tensor_data(out), numel, w->sizes[0], w->sizes[1],
                                    -1, (int64_t)ptl_tensor_itemsize(w)};
        if (ptl_device_embedding_hook(&a) < 0) {
            goto error;
        }
        numel = 0;   /* gathered on the device */
    }
    for (int64_t i = 0; i < numel && !ptl_tensor_is_meta(out); i++) {
        if (iv[i] < 0 || iv[i] >= w->sizes[0]) {
            ptl_error_set(PTL_ERR_INDEX, "index out of range in self");
            goto error;
        }
        if (row > 0) {
            memcpy(ptl_tensor_data(out) + (size_t)i * row,
                   ptl_tensor_data(wc) + (size_t)iv[i] * row, row);
        }
    }
    ptl_decref(idx);
    ptl_decref(wc);
    s[0] = ptl_iv_tensor(out);
    return 0;
error:
    ptl_xdecref(idx);
    ptl_xdecref(wc);
    ptl_xdecref(out);
    return -1;
}

/* Note [Embedding bags]
 * ~~~~~~~~~~~~~~~~~~~~~
 * F.embedding_bag (nn/functional.py) reduces bags of weight rows.  For sum and mean it gives
 * every kept index (padding_idx dropped) its bag and, for sum, its per_sample_weights as a
 * scale, and calls _ptl_embedding_bag, which adds
 *     out[bag[i]] += scale[i] * weight[indices[i]]      for i = 0, 1, ... in order,
 * in the weight's dtype, straight from weight's rows; mean then divides each bag by its
 * number of rows, as PyTorch's kernel does.  Neither the [n, D] gathered rows nor
 * the dense [bags, n] membership matrix of the composite (kept in functional.py as the
 * reference, and for devices without this kernel) is made.  A sum without weights adds each
 * bag's rows in index order, as the composite's matmul does within a block of its depth.
 * 64 bags of 16 rows of width 1024, float32, one thread: 2.8 ms -> 0.12 ms (PyTorch 0.1 ms;
 * what is left is reading the rows: prefetching the next row, or adding a bag's rows a column
 * block at a time, measured no faster).  The derivative
 * (derivatives/nn.c) is written with index_select / index_add, so it differentiates again. */
/* o[:d] += scale * row[:d] (or + row[:d]), compiled for AVX2 too (Note [Loop clones] in
 * loops.h: no FMA, so the bits do not depend on the CPU) */
PTL_LOOP_CLONES static void
bag_row_add(char *o, const char *row, double scale, int has_scale, int64_t d, PtlDtype dt)
{
    if (dt == PTL_DTYPE_FLOAT32) {
        float *of = (float *)o, sf = (float)scale;
        const float *rf = (const float *)row;
        if (has_scale) {
            for (int64_t j = 0; j < d; j++) {
                of[j] += sf * rf[j];
            }
            return;
        }
        for (int64_t j = 0; j < d; j++) {
            of[j] += rf[j];
        }
        return;
    }
    if (dt == PTL_DTYPE_FLOAT64) {
        double *od = (double *)o;
        const double *rd = (const double *)row;
        for (int64_t j = 0; j < d; j++) {
            od[j] += has_scale ? scale * rd[j] : rd[j];
        }
        return;
    }
    size_t item = ptl_dtype_itemsize(dt);
    for (int64_t j = 0; j < d; j++) {
        double v = ptl_load_double(row + (size_t)j * item, dt);
        double a = ptl_load_double(o + (size_t)j * item, dt);
        ptl_store_double(o + (size_t)j * item, dt, a + (has_scale ? scale * v : v));
    }
}

/* o[:d] /= c: the mean of a bag of c rows, in the stored type as PyTorch's (a float division
 * rounds as the double one rounded to float) */
static void
bag_row_div(char *o, int64_t c, int64_t d, PtlDtype dt)
{
    if (dt == PTL_DTYPE_FLOAT32) {
        float *of = (float *)o, cf = (float)c;
        for (int64_t j = 0; j < d; j++) {
            of[j] /= cf;
        }
        return;
    }
    size_t item = ptl_dtype_itemsize(dt);
    for (int64_t j = 0; j < d; j++) {
        ptl_store_double(o + (size_t)j * item, dt,
                         ptl_load_double(o + (size_t)j * item, dt) / (double)c);
    }
}

/* _ptl_embedding_bag(weight [V, D], indices [n], bag [n], scale [n]?, num_bags, mean)
 * -> [num_bags, D] (Note [Embedding bags]); indices and bag are int64, scale has weight's
 * dtype; mean divides each bag's sum by its number of rows. */
static int
embedding_bag_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *w = s[0].u.t, *scale = s[3].tag == PTL_IV_TENSOR ? s[3].u.t : NULL;
    PtlTensorImpl *wc = NULL, *ic = NULL, *bc = NULL, *sc = NULL, *out = NULL;
    int64_t nbags = s[4].u.i, n = s[1].u.t->numel, sizes[2], *count = NULL;
    (void)op;
    (void)ks;
    if (w->dim != 2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "'weight' must be 2-D");
    }
    if (!ptl_dtype_is_floating(w->dtype)) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED,
                             "\"embedding_bag_cpu\" not implemented for '%s'",
                             ptl_dtype_legacy_name(w->dtype));
    }
    if (check_indices(s[1].u.t, "embedding_bag") < 0) {
        return -1;
    }
    if (s[1].u.t->dim != 1 || s[2].u.t->dim != 1 || s[2].u.t->numel != n || nbags < 0 ||
        s[2].u.t->dtype != PTL_DTYPE_INT64 ||
        (scale != NULL && (scale->dim != 1 || scale->numel != n || scale->dtype != w->dtype))) {
        return ptl_error_set(PTL_ERR_RUNTIME, "_ptl_embedding_bag: expected 1-D indices, bag "
                                              "(int64) and scale (weight's dtype) of one length");
    }
    sizes[0] = nbags;
    sizes[1] = w->sizes[1];
    if ((wc = ptl_contiguous(w)) == NULL || (ic = ptl_cast(s[1].u.t, PTL_DTYPE_INT64)) == NULL ||
        (bc = ptl_contiguous(s[2].u.t)) == NULL ||
        (scale != NULL && (sc = ptl_contiguous(scale)) == NULL) ||
        (out = ptl_empty(2, sizes, w->dtype, w->device)) == NULL) {
        goto error;
    }
    if (s[5].u.b && (count = calloc((size_t)(nbags > 0 ? nbags : 1), sizeof(int64_t))) == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "out of memory");
        goto error;
    }
    size_t row = ptl_tensor_itemsize(w) * (size_t)sizes[1];
    const int64_t *iv = (const int64_t *)ptl_tensor_data(ic);
    const int64_t *bv = (const int64_t *)ptl_tensor_data(bc);
    const char *sv = sc != NULL ? ptl_tensor_data(sc) : NULL;
    memset(ptl_tensor_data(out), 0, (size_t)nbags * row);   /* +0.0 in every float dtype */
    for (int64_t i = 0; i < n; i++) {
        if (iv[i] < 0 || iv[i] >= w->sizes[0] || bv[i] < 0 || bv[i] >= nbags) {
            ptl_error_set(PTL_ERR_INDEX, "index out of range in self");
            goto error;
        }
        bag_row_add(ptl_tensor_data(out) + (size_t)bv[i] * row,
                    ptl_tensor_data(wc) + (size_t)iv[i] * row,
                    sv != NULL ? ptl_load_double(sv + (size_t)i * ptl_tensor_itemsize(w),
                                                 w->dtype)
                               : 1.0,
                    sv != NULL, sizes[1], w->dtype);
        if (count != NULL) {
            count[bv[i]]++;
        }
    }
    for (int64_t b = 0; count != NULL && b < nbags; b++) {
        if (count[b] > 1) {
            bag_row_div(ptl_tensor_data(out) + (size_t)b * row, count[b], sizes[1], w->dtype);
        }
    }
    free(count);
    ptl_decref(wc);
    ptl_decref(ic);
    ptl_decref(bc);
    ptl_xdecref(sc);
    s[0] = ptl_iv_tensor(out);
    return 0;
error:
    free(count);
    ptl_xdecref(wc);
    ptl_xdecref(ic);
    ptl_xdecref(bc);
    ptl_xdecref(sc);
    ptl_xdecref(out);
    return -1;
}

/* embedding_dense_backward(grad_output, indices, num_weights, padding_idx,
 * scale_grad_by_freq) -> Tensor.  [*, D], [*] -> [V, D]; rows at padding_idx get none. */
static int
embedding_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *g = NULL, *idx = NULL, *acc = NULL, *res = NULL;
    int64_t V = s[2].u.i, pad = s[3].u.i, numel = 1, *count = NULL;
    int scale = s[4].u.b;
    PtlDtype dt = s[0].u.t->dtype;
    (void)op;
    (void)ks;

    if (check_indices(s[1].u.t, "embedding_backward") < 0) {
        return -1;
    }
    /* float32 gradients are read as they are (summed in double); others go through float64 */
    if ((g = contiguous_as(s[0].u.t, dt == PTL_DTYPE_FLOAT32 ? dt : PTL_DTYPE_FLOAT64)) == NULL ||
        (idx = contiguous_as(s[1].u.t, PTL_DTYPE_INT64)) == NULL) {
        goto error;
    }
    for (int d = 0; d < idx->dim; d++) {
        numel *= idx->sizes[d];
    }
    int64_t D = g->dim > 0 ? g->sizes[g->dim - 1] : 1;
    int64_t sizes[2] = {V, D};
    if (numel * D != g->numel) {   /* PyTorch views grad as [numel, D] */
        ptl_error_set(PTL_ERR_RUNTIME, "shape '[%lld, %lld]' is invalid for input of size %lld",
                      (long long)numel, (long long)D, (long long)g->numel);
        goto error;
    }
    if ((acc = ptl_empty(2, sizes, PTL_DTYPE_FLOAT64, g->device)) == NULL ||
        (count = calloc((size_t)V + 1, sizeof(int64_t))) == NULL) {
        if (acc != NULL) {
            ptl_error_set(PTL_ERR_MEMORY, "embedding_backward: out of memory");
        }
        goto error;
    }
    double *av = (double *)ptl_tensor_data(acc);
    const double *gv = (const double *)ptl_tensor_data(g);
    const float *gf = (const float *)ptl_tensor_data(g);
    int f4 = g->dtype == PTL_DTYPE_FLOAT32;
    const int64_t *iv = (const int64_t *)ptl_tensor_data(idx);
    if (ptl_tensor_is_meta(acc)) {
        numel = 0;   /* no data to scatter: the shape is all */
    }
    else if (on_device(g, ptl_device_embedding_hook != NULL)) {
        PtlDeviceEmbeddingArgs a = {1, g->dtype, scale, ptl_tensor_data(g), iv,
                                    ptl_tensor_data(acc), numel, V, D, pad, 8};
        if (ptl_device_embedding_hook(&a) < 0) {
            goto error;
        }
        numel = 0;   /* accumulated on the device */
    }
    else {
        memset(av, 0, sizeof(double) * (size_t)(V * D));
    }
    for (int64_t i = 0; i < numel; i++) {
        if (iv[i] < 0 || iv[i] >= V) {
            ptl_error_set(PTL_ERR_INDEX, "index out of range in self");
            goto error;
        }
        count[iv[i]]++;
    }
    for (int64_t i = 0; i < numel; i++) {
        if (iv[i] == pad) {
            continue;
        }
        double f = scale ? 1.0 / (double)count[iv[i]] : 1.0;
        double *restrict row = av + iv[i] * D;
        if (f4) {
            for (int64_t k = 0; k < D; k++) {
                row[k] += f * (double)gf[i * D + k];
            }
        }
        else {
            for (int64_t k = 0; k < D; k++) {
                row[k] += f * gv[i * D + k];
            }
        }
    }
    if ((res = ptl_cast(acc, dt)) == NULL) {
        goto error;
    }
    free(count);
    ptl_decref(acc);
    ptl_decref(g);
    ptl_decref(idx);
    s[0] = ptl_iv_tensor(res);
    return 0;
error:
    free(count);
    ptl_xdecref(acc);
    ptl_xdecref(g);
    ptl_xdecref(idx);
    return -1;
}

/* embedding_renorm_(Tensor(a!) self, Tensor indices, float max_norm, float norm_type):
 * rows named by indices whose norm exceeds max_norm are scaled to max_norm (in place). */
static int
embedding_renorm_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *w = s[0].u.t, *idx = NULL, *rowv = NULL, *scaled = NULL;
    double max_norm = s[2].u.d, p = s[3].u.d;
    int64_t numel = 1;
    (void)op;
    (void)ks;

    if (w->dim != 2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "'self' must be 2-D");
    }
    if (check_indices(s[1].u.t, "embedding_renorm_") < 0 ||
        (idx = ptl_cast(s[1].u.t, PTL_DTYPE_INT64)) == NULL) {
        goto error;
    }
    for (int d = 0; d < idx->dim; d++) {
        numel *= idx->sizes[d];
    }
    const int64_t *iv = (const int64_t *)ptl_tensor_data(idx);
    for (int64_t i = 0; i < numel; i++) {
        int seen = 0;
        for (int64_t k = 0; k < i && !seen; k++) {
            seen = iv[k] == iv[i];
        }
        if (iv[i] < 0 || iv[i] >= w->sizes[0]) {
            ptl_error_set(PTL_ERR_INDEX, "index out of range in self");
            goto error;
        }
        if (seen) {
            continue;
        }
        PtlIValue sel[3] = {ptl_iv_tensor(w), ptl_iv_int(0), ptl_iv_int(iv[i])};
        if ((rowv = ptl_call_tensor(PTL_OP_select_int, sel)) == NULL) {
            goto error;
        }
        PtlTensorImpl *r64 = ptl_cast(rowv, PTL_DTYPE_FLOAT64);
        if (r64 == NULL) {
            goto error;
        }
        const double *rv = (const double *)ptl_tensor_data(r64);
        double norm = 0;
        for (int64_t k = 0; k < w->sizes[1]; k++) {
            norm += p == 1 ? fabs(rv[k]) : p == 2 ? rv[k] * rv[k] : pow(fabs(rv[k]), p);
        }
        norm = p == 1 ? norm : p == 2 ? sqrt(norm) : pow(norm, 1.0 / p);
        ptl_decref(r64);
        if (norm > max_norm) {
            double f = max_norm / (norm + 1e-7);
            PtlIValue m[2] = {ptl_iv_tensor(rowv), ptl_iv_none()};
            PtlTensorImpl *fw = ptl_wrapped_double(f);
            if (fw == NULL) {
                goto error;
            }
            m[1] = ptl_iv_tensor(fw);
            scaled = ptl_call_tensor(PTL_OP_mul__Tensor, m);
            ptl_decref(fw);
            if (scaled == NULL) {
                goto error;
            }
            PTL_CLEAR(scaled);
        }
        PTL_CLEAR(rowv);
    }
    ptl_decref(idx);
    ptl_incref(w);
    s[0] = ptl_iv_tensor(w);
    return 0;
error:
    ptl_xdecref(idx);
    ptl_xdecref(rowv);
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
    {PTL_OP_mse_loss, PTL_KEY_CPU, reg_loss_cpu},
    {PTL_OP_mse_loss_backward, PTL_KEY_CPU, reg_loss_cpu},
    {PTL_OP_smooth_l1_loss, PTL_KEY_CPU, reg_loss_cpu},
    {PTL_OP_smooth_l1_loss_backward, PTL_KEY_CPU, reg_loss_cpu},
    {PTL_OP_huber_loss, PTL_KEY_CPU, reg_loss_cpu},
    {PTL_OP_huber_loss_backward, PTL_KEY_CPU, reg_loss_cpu},
    {PTL_OP_embedding, PTL_KEY_CPU, embedding_cpu},
    {PTL_OP_embedding_dense_backward, PTL_KEY_CPU, embedding_backward_cpu},
    {PTL_OP_embedding_renorm_, PTL_KEY_CPU, embedding_renorm_cpu},
    {PTL_OP__ptl_embedding_bag, PTL_KEY_CPU, embedding_bag_cpu},
};
PTL_DEFINE_REGISTER(nn_cpu)

