/* layer_norm.c -- native_layer_norm and native_layer_norm_backward.  Mirrors
 * ATen/native/layer_norm.cpp and ATen/native/cpu/layer_norm_kernel.cpp.
 *
 * Note [Layer norm rows]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * The input is viewed as M rows of N = prod(normalized_shape) contiguous elements.  Each
 * row is normalized by one task of ptl_parallel_for: its mean and biased variance are two
 * passes over the row (still in cache) summed in double with eight independent partial
 * sums, so the compiler vectorizes them and float32 rows keep float64 accuracy.  The output
 * is (x - mean) * rstd * weight + bias in the input's dtype (float for float16/bfloat16).
 * The backward of row r, with g = dy * weight, is
 *
 *     dx = rstd * g + b * x + c,   b = (sum(g) mean - sum(g x)) rstd^3 / N,
 *                                  c = -b mean - sum(g) rstd / N
 *
 * The row sums of the backward are sum(g) and sum(g (x - mean)) (= sum(g x) - sum(g) mean,
 * without the cancellation when the mean is large): float64 rows sum in double as the
 * forward does; float32 rows in float, in sixteen partial sums each (two vectors of eight),
 * as PyTorch does, added up in double (docs/decisions.md, "Layer norm's input gradient in
 * float").  The weight and bias gradients are column sums over the rows, computed by column
 * blocks so that every block is summed in the same order whatever the thread count. */
#include <math.h>
#include <string.h>

#include "../../c10/cpu_features.h"
#include "../../c10/parallel.h"
#include "device_nn.h"
#include "device_reduce.h"
#include "vec_math.h"
#include "nn_common.h"

typedef struct {
    const char *x, *w, *b, *dy;
    char *y, *mean, *rstd, *dx, *dw, *db;
    int64_t m, n;
    double eps;
} LnJob;

/* The row passes of Note [Layer norm rows] are plain functions over byte pointers, f8
 * picking float64 over float32 (nn_load, nn_store), instantiated by the thin typed wrappers
 * at the end; with f8 a constant the loops vectorize as typed loops would.  The eight
 * partial sums are two vectors of four doubles (GCC's vector types: SSE2 pairs in the
 * baseline build, one AVX2 register each in the AVX2 one, the same sums either way). */
typedef double LnVec __attribute__((vector_size(32)));
typedef float LnVecF __attribute__((vector_size(16)));

/* p[i..i+4) as doubles (through a pointer: a vector return value would differ between the
 * baseline and AVX2 ABIs) */
static inline __attribute__((always_inline)) void
ln_load4(int f8, const char *p, int64_t i, LnVec *v)
{
    if (f8) {
        memcpy(v, p + (size_t)i * sizeof(double), sizeof *v);
    }
    else {
        LnVecF f;
        memcpy(&f, p + (size_t)i * sizeof(float), sizeof f);
        *v = __builtin_convertvector(f, LnVec);
    }
}

/* tail + the eight partial sums lo[0..4) hi[0..4), paired as ((0+4)+(1+5))+((2+6)+(3+7)) */
static inline __attribute__((always_inline)) double
ln_hsum(double tail, LnVec lo, LnVec hi)
{
    return tail + ((lo[0] + hi[0]) + (lo[1] + hi[1])) + ((lo[2] + hi[2]) + (lo[3] + hi[3]));
}

/* sum of p[0..n) in double, with eight independent partial sums */
static inline __attribute__((always_inline)) double
row_sum(int f8, const char *restrict p, int64_t n)
{
    LnVec lo = {0, 0, 0, 0}, hi = {0, 0, 0, 0};
    double s = 0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        LnVec v0, v1;
        ln_load4(f8, p, i, &v0);
        ln_load4(f8, p, i + 4, &v1);
        lo += v0;
        hi += v1;
    }
    for (; i < n; i++) {
        s += nn_load(f8, p, i);
    }
    return ln_hsum(s, lo, hi);
}

/* sum of (p - mean)^2 over p[0..n) in double */
static inline __attribute__((always_inline)) double
row_sq(int f8, const char *restrict p, int64_t n, double mean)
{
    LnVec lo = {0, 0, 0, 0}, hi = {0, 0, 0, 0};
    double s = 0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        LnVec d0, d1;
        ln_load4(f8, p, i, &d0);
        ln_load4(f8, p, i + 4, &d1);
        d0 -= mean;
        d1 -= mean;
        lo += d0 * d0;
        hi += d1 * d1;
    }
    for (; i < n; i++) {
        double d = nn_load(f8, p, i) - mean;
        s += d * d;
    }
    return ln_hsum(s, lo, hi);
}

/* float64 rows: sum of g x and of g over a row, g = dy w (w may be NULL); the loop is
 * compiled once with w and once without (has_w a constant), so neither tests w per element */
static inline __attribute__((always_inline)) void
row_dot_w(int has_w, const char *restrict dy, const char *restrict x,
          const char *restrict w, int64_t n, double *sgx, double *sg)
{
    LnVec a0 = {0, 0, 0, 0}, a1 = {0, 0, 0, 0}, b0 = {0, 0, 0, 0}, b1 = {0, 0, 0, 0};
    double ta = 0, tb = 0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        LnVec g0, g1, w0, w1, x0, x1;
        ln_load4(1, dy, i, &g0);
        ln_load4(1, dy, i + 4, &g1);
        if (has_w) {
            ln_load4(1, w, i, &w0);
            ln_load4(1, w, i + 4, &w1);
            g0 *= w0;
            g1 *= w1;
        }
        ln_load4(1, x, i, &x0);
        ln_load4(1, x, i + 4, &x1);
        a0 += g0 * x0;
        a1 += g1 * x1;
        b0 += g0;
        b1 += g1;
    }
    for (; i < n; i++) {
        double g = nn_load(1, dy, i) * (has_w ? nn_load(1, w, i) : 1.0);
        ta += g * nn_load(1, x, i);
        tb += g;
    }
    *sgx = ln_hsum(ta, a0, a1);
    *sg = ln_hsum(tb, b0, b1);
}

/* float32 rows: sum of g (x - mean) and of g over a row in float, g = dy w (w may be NULL),
 * in two vectors of eight partial sums each (Note [Layer norm rows]), added in double at the
 * end; the loop is compiled with w and without, as row_dot_w's */
typedef float LnVecF8 __attribute__((vector_size(32)));

static inline __attribute__((always_inline)) double
ln_hsum_f(float tail, LnVecF8 lo, LnVecF8 hi)
{
    double s = tail;
    for (int k = 0; k < 8; k++) {
        s += (double)lo[k] + (double)hi[k];
    }
    return s;
}

static inline __attribute__((always_inline)) void
row_dev_dot_w(int has_w, const float *restrict dy, const float *restrict x,
              const float *restrict w, int64_t n, float mean, double *sgd, double *sg)
{
    LnVecF8 a0 = {0}, a1 = {0}, b0 = {0}, b1 = {0};
    float ta = 0, tb = 0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        LnVecF8 g0, g1, x0, x1;
        memcpy(&g0, dy + i, sizeof g0);
        memcpy(&g1, dy + i + 8, sizeof g1);
        if (has_w) {
            LnVecF8 w0, w1;
            memcpy(&w0, w + i, sizeof w0);
            memcpy(&w1, w + i + 8, sizeof w1);
            g0 *= w0;
            g1 *= w1;
        }
        memcpy(&x0, x + i, sizeof x0);
        memcpy(&x1, x + i + 8, sizeof x1);
        a0 += g0 * (x0 - mean);
        a1 += g1 * (x1 - mean);
        b0 += g0;
        b1 += g1;
    }
    for (; i < n; i++) {
        float g = has_w ? dy[i] * w[i] : dy[i];
        ta += g * (x[i] - mean);
        tb += g;
    }
    *sgd = ln_hsum_f(ta, a0, a1);
    *sg = ln_hsum_f(tb, b0, b1);
}

/* sum of g (x - mean) and of g over a row: float64 rows through row_dot_w (as
 * sum(g x) - sum(g) mean), float32 rows through row_dev_dot_w */
static inline __attribute__((always_inline)) void
row_dot(int f8, const char *restrict dy, const char *restrict x, const char *restrict w,
        int64_t n, double mean, double *sgd, double *sg)
{
    if (f8) {
        double sgx;
        if (w != NULL) {
            row_dot_w(1, dy, x, w, n, &sgx, sg);
        }
        else {
            row_dot_w(0, dy, x, NULL, n, &sgx, sg);
        }
        *sgd = sgx - *sg * mean;
    }
    else if (w != NULL) {
        row_dev_dot_w(1, (const float *)dy, (const float *)x, (const float *)w, n,
                      (float)mean, sgd, sg);
    }
    else {
        row_dev_dot_w(0, (const float *)dy, (const float *)x, NULL, n, (float)mean, sgd, sg);
    }
}

/* The elementwise passes over one row compute in the row's dtype T, so they stay typed:
 * y = (x scale + shift) w + b (w, b may be NULL); dx = a (dy w) + bb x + c (w may be NULL);
 * dw += dy ((x - mean) rs) and db += dy over columns [c0, c1) (dw, db may be NULL). */
#define DEFINE_LN_AFFINE_ROW(T, DT)                                                             \
    static inline __attribute__((always_inline)) void                                     \
    ln_affine_row_##DT(const char *xp, char *yp, const char *wp, const char *bp,          \
                       int64_t n, double scale_d, double mean_d)                          \
    {                                                                                     \
        const T *restrict x = (const T *)xp, *w = (const T *)wp, *b = (const T *)bp;      \
        T *restrict y = (T *)yp;                                                          \
        /* -mean * scale rounds in T like x * scale, so x == mean normalizes to 0 */      \
        const T scale = (T)scale_d, shift = -(T)mean_d * scale;                           \
        if (w != NULL && b != NULL) {                                                     \
            for (int64_t i = 0; i < n; i++) {                                             \
                y[i] = (x[i] * scale + shift) * w[i] + b[i];                              \
            }                                                                             \
        }                                                                                 \
        else if (w != NULL) {                                                             \
            for (int64_t i = 0; i < n; i++) {                                             \
                y[i] = (x[i] * scale + shift) * w[i];                                     \
            }                                                                             \
        }                                                                                 \
        else if (b != NULL) {                                                             \
            for (int64_t i = 0; i < n; i++) {                                             \
                y[i] = (x[i] * scale + shift) + b[i];                                     \
            }                                                                             \
        }                                                                                 \
        else {                                                                            \
            for (int64_t i = 0; i < n; i++) {                                             \
                y[i] = x[i] * scale + shift;                                              \
            }                                                                             \
        }                                                                                 \
    }
DEFINE_LN_AFFINE_ROW(float, f4)
DEFINE_LN_AFFINE_ROW(double, f8)
#undef DEFINE_LN_AFFINE_ROW

#define DEFINE_LN_DX_ROW(T, DT)                                                           \
    static inline __attribute__((always_inline)) void                                     \
    ln_dx_row_##DT(const char *dyp, const char *xp, const char *wp, char *dxp, int64_t n, \
                   double a_d, double bb_d, double c_d)                                   \
    {                                                                                     \
        const T *restrict dy = (const T *)dyp, *restrict x = (const T *)xp;               \
        const T *w = (const T *)wp;                                                       \
        T *restrict dx = (T *)dxp;                                                        \
        const T a = (T)a_d, bb = (T)bb_d, c = (T)c_d;                                     \
        if (w != NULL) {                                                                  \
            for (int64_t i = 0; i < n; i++) {                                             \
                dx[i] = a * (dy[i] * w[i]) + bb * x[i] + c;                               \
            }                                                                             \
        }                                                                                 \
        else {                                                                            \
            for (int64_t i = 0; i < n; i++) {                                             \
                dx[i] = a * dy[i] + bb * x[i] + c;                                        \
            }                                                                             \
        }                                                                                 \
    }
DEFINE_LN_DX_ROW(float, f4)
DEFINE_LN_DX_ROW(double, f8)
#undef DEFINE_LN_DX_ROW

#define DEFINE_LN_DW_ROW(T, DT)                                                          \
    static inline __attribute__((always_inline)) void                                     \
    ln_dw_row_##DT(const char *dyp, const char *xp, const char *meanp, const char *rstdp, \
                   char *dwp, char *dbp, int64_t c0, int64_t c1)                          \
    {                                                                                     \
        const T *restrict x = (const T *)xp, *restrict dy = (const T *)dyp;               \
        T *restrict dw = (T *)dwp, *restrict db = (T *)dbp;                               \
        if (dw != NULL) {                                                                 \
            const T mean = *(const T *)meanp, rs = *(const T *)rstdp;                     \
            for (int64_t c = c0; c < c1; c++) {                                           \
                dw[c] += dy[c] * ((x[c] - mean) * rs);                                    \
            }                                                                             \
        }                                                                                 \
        if (db != NULL) {                                                                 \
            for (int64_t c = c0; c < c1; c++) {                                           \
                db[c] += dy[c];                                                           \
            }                                                                             \
        }                                                                                 \
    }
DEFINE_LN_DW_ROW(float, f4)
DEFINE_LN_DW_ROW(double, f8)
#undef DEFINE_LN_DW_ROW

/* rows [r0, r1): mean and rstd in double, stored in the dtype; y = the affine pass */
static inline __attribute__((always_inline)) int
ln_forward(const LnJob *j, int f8, int64_t r0, int64_t r1)
{
    const int64_t n = j->n;
    const size_t isz = f8 ? sizeof(double) : sizeof(float);
    for (int64_t r = r0; r < r1; r++) {
        const char *x = j->x + (size_t)(r * n) * isz;
        double mean = row_sum(f8, x, n) / (double)n;
        double var = row_sq(f8, x, n, mean) / (double)n;
        double rs = 1.0 / sqrt(var + j->eps);
        nn_store(f8, j->mean, r, mean);
        nn_store(f8, j->rstd, r, rs);
        (f8 ? ln_affine_row_f8 : ln_affine_row_f4)(x, j->y + (size_t)(r * n) * isz, j->w, j->b,
                                                   n, rs, mean);
    }
    return 0;
}

/* rows [r0, r1) of dx = a (dy w) + b x + c, with the row sums of g x and g in double */
static inline __attribute__((always_inline)) int
ln_backward_dx(const LnJob *j, int f8, int64_t r0, int64_t r1)
{
    const int64_t n = j->n;
    const size_t isz = f8 ? sizeof(double) : sizeof(float);
    for (int64_t r = r0; r < r1; r++) {
        size_t off = (size_t)(r * n) * isz;
        double mean = nn_load(f8, j->mean, r), rs = nn_load(f8, j->rstd, r), sgd, sg;
        row_dot(f8, j->dy + off, j->x + off, j->w, n, mean, &sgd, &sg);
        double bd = -sgd * rs * rs * rs / (double)n;
        (f8 ? ln_dx_row_f8 : ln_dx_row_f4)(j->dy + off, j->x + off, j->w, j->dx + off, n, rs,
                                           bd, -bd * mean - sg * rs / (double)n);
    }
    return 0;
}

/* columns [c0, c1) of the weight and bias gradients, summed over the rows */
static inline __attribute__((always_inline)) int
ln_backward_dw(const LnJob *j, int f8, int64_t c0, int64_t c1)
{
    const size_t isz = f8 ? sizeof(double) : sizeof(float);
    for (int64_t c = c0; c < c1; c++) {
        if (j->dw != NULL) {
            nn_store(f8, j->dw, c, 0);
        }
        if (j->db != NULL) {
            nn_store(f8, j->db, c, 0);
        }
    }
    for (int64_t r = 0; r < j->m; r++) {
        size_t off = (size_t)(r * j->n) * isz;
        (f8 ? ln_dw_row_f8 : ln_dw_row_f4)(j->dy + off, j->x + off, j->mean + (size_t)r * isz,
                                           j->rstd + (size_t)r * isz, j->dw, j->db, c0, c1);
    }
    return 0;
}

/* Each pass twice: for the baseline and, where the CPU has it, AVX2 (without FMA, so both
 * give the same bits); ln_pass picks one. */
#define DEFINE_LN(NAME, ATTR, F8)                                                         \
    ATTR static int                                                                       \
    ln_forward_##NAME(void *ctx, int64_t r0, int64_t r1)                                  \
    {                                                                                     \
        return ln_forward(ctx, F8, r0, r1);                                               \
    }                                                                                     \
    ATTR static int                                                                       \
    ln_backward_dx_##NAME(void *ctx, int64_t r0, int64_t r1)                              \
    {                                                                                     \
        return ln_backward_dx(ctx, F8, r0, r1);                                           \
    }                                                                                     \
    ATTR static int                                                                       \
    ln_backward_dw_##NAME(void *ctx, int64_t c0, int64_t c1)                              \
    {                                                                                     \
        return ln_backward_dw(ctx, F8, c0, c1);                                           \
    }
DEFINE_LN(f4, , 0)
DEFINE_LN(f8, , 1)
#ifdef PTL_HAVE_AVX2_KERNELS
DEFINE_LN(f4_avx2, __attribute__((target("avx2"))), 0)
DEFINE_LN(f8_avx2, __attribute__((target("avx2"))), 1)
#endif
#undef DEFINE_LN

/* The pass (forward, dx or dw of the arrays below) for the work dtype and this CPU; the
 * passes are numbered as device_nn.h's */
enum { LN_FORWARD = PTL_DEVICE_LN_FORWARD, LN_BACKWARD_DX = PTL_DEVICE_LN_BACKWARD_DX,
       LN_BACKWARD_DW = PTL_DEVICE_LN_BACKWARD_DW };

static PtlParallelFn
ln_pass(int pass, int f4)
{
    static const PtlParallelFn base[3][2] = {{ln_forward_f8, ln_forward_f4},
                                             {ln_backward_dx_f8, ln_backward_dx_f4},
                                             {ln_backward_dw_f8, ln_backward_dw_f4}};
#ifdef PTL_HAVE_AVX2_KERNELS
    static const PtlParallelFn avx2[3][2] = {{ln_forward_f8_avx2, ln_forward_f4_avx2},
                                             {ln_backward_dx_f8_avx2, ln_backward_dx_f4_avx2},
                                             {ln_backward_dw_f8_avx2, ln_backward_dw_f4_avx2}};
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        return avx2[pass][f4];
    }
#endif
    return base[pass][f4];
}

/* Checks input, normalized_shape, weight and bias; sets *m, *n (rows, row length). */
static int
ln_check(PtlTensorImpl *x, const PtlIValue *shape, PtlTensorImpl *w, PtlTensorImpl *b,
         int64_t *m, int64_t *n)
{
    const int64_t *ns = shape->u.il.data;
    int64_t k = shape->u.il.n;
    char b1[256], b2[256], b3[256];
    if (k < 1) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Expected normalized_shape to be at least 1-dimensional, i.e., "
                             "containing at least one element, but got normalized_shape = []");
    }
    PtlTensorImpl *wb[2] = {w, b};
    const char *names[2] = {"weight", "bias"};
    for (int i = 0; i < 2; i++) {
        PtlTensorImpl *t = wb[i];
        if (t == NULL) {
            continue;
        }
        int same = t->dim == k;
        for (int d = 0; same && d < k; d++) {
            same = t->sizes[d] == ns[d];
        }
        if (!same) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "Expected %s to be of same shape as normalized_shape, but got "
                                 "%s of shape %s and normalized_shape = %s",
                                 names[i], names[i],
                                 ptl_format_sizes(b1, sizeof b1, t->dim, t->sizes),
                                 ptl_format_sizes(b2, sizeof b2, k, ns));
        }
    }
    int ok = x->dim >= k;
    for (int64_t d = 0; ok && d < k; d++) {
        ok = x->sizes[x->dim - k + d] == ns[d];
    }
    if (!ok) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Given normalized_shape=%s, expected input with shape [*, %s, but "
                             "got input of size%s",
                             ptl_format_sizes(b1, sizeof b1, k, ns),
                             ptl_format_sizes(b2, sizeof b2, k, ns) + 1,
                             ptl_format_sizes(b3, sizeof b3, x->dim, x->sizes));
    }
    if (!ptl_dtype_is_floating(x->dtype)) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED,
                             "\"LayerNormKernelImpl\" not implemented for '%s'",
                             ptl_dtype_legacy_name(x->dtype));
    }
    if (nn_check_mixed_dtype(x, wb, 2) < 0) {
        return -1;
    }
    *n = 1;
    for (int64_t d = 0; d < k; d++) {
        *n *= ns[d];
    }
    *m = 1;
    for (int d = 0; d < x->dim - k; d++) {
        *m *= x->sizes[d];
    }
    return 0;
}

/* [*, 1, ..., 1]: the shape of mean and rstd (normalized dims kept as 1) */
static void
stat_shape(PtlTensorImpl *x, int64_t k, int64_t *sizes)
{
    for (int d = 0; d < x->dim; d++) {
        sizes[d] = d < x->dim - k ? x->sizes[d] : 1;
    }
}

static PtlTensorImpl *
opt_tensor(const PtlIValue *v)
{
    return v->tag == PTL_IV_TENSOR ? v->u.t : NULL;
}

/* fn over [0, range) (rows or columns) with about PTL_GRAIN_SIZE elements a task */
static int
ln_run(int64_t range, int64_t per_item, PtlParallelFn fn, LnJob *j)
{
    void *tok = range * per_item >= PTL_GRAIN_SIZE ? ptl_nogil_begin() : NULL;
    int rc = ptl_parallel_for(0, range, PTL_GRAIN_SIZE / (per_item + 1) + 1, fn, j);
    ptl_nogil_end(tok);
    return rc;
}

int (*ptl_device_layer_norm_hook)(const PtlDeviceLayerNormArgs *a);

/* The pass over the job: on the device for a CUDA tensor (or while the tests emulate the
 * CUDA kernels: device_reduce.h), else on the CPU threads; range and per_item as ln_run's. */
static int
ln_dispatch(int pass, const PtlTensorImpl *x, PtlDtype work, LnJob *j, int64_t range,
            int64_t per_item)
{
    if ((x->device.type == PTL_DEVICE_CUDA || ptl_device_reduce_emulation) &&
        ptl_device_layer_norm_hook != NULL) {
        PtlDeviceLayerNormArgs a = {pass, work, j->x, j->w, j->b, j->dy, j->y, j->mean,
                                    j->rstd, j->dx, j->dw, j->db, j->m, j->n, j->eps};
        return ptl_device_layer_norm_hook(&a);
    }
    return ln_run(range, per_item, ln_pass(pass, work == PTL_DTYPE_FLOAT32), j);
}

/* native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias,
 *                   float eps) -> (Tensor, Tensor, Tensor)
 * input [*, N...] -> out [*, N...], mean [*, 1...], rstd [*, 1...] */
static int
native_layer_norm_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *x = s[0].u.t, *w = opt_tensor(&s[2]), *b = opt_tensor(&s[3]);
    PtlTensorImpl *xc = NULL, *wc = NULL, *bc = NULL, *r[3] = {NULL, NULL, NULL};
    int64_t m, n, ssz[PTL_MAX_DIMS];
    if (ln_check(x, &s[1], w, b, &m, &n) < 0) {
        return -1;
    }
    PtlDtype work = nn_work_dtype(x->dtype);
    stat_shape(x, s[1].u.il.n, ssz);
    if ((xc = nn_prepare(x, work)) == NULL || (w != NULL && (wc = nn_prepare(w, work)) == NULL) ||
        (b != NULL && (bc = nn_prepare(b, work)) == NULL) ||
        (r[0] = ptl_empty(x->dim, x->sizes, work, x->device)) == NULL ||
        (r[1] = ptl_empty(x->dim, ssz, work, x->device)) == NULL ||
        (r[2] = ptl_empty(x->dim, ssz, work, x->device)) == NULL) {
        goto error;
    }
    LnJob j = {ptl_tensor_data(xc), wc ? ptl_tensor_data(wc) : NULL,
               bc ? ptl_tensor_data(bc) : NULL, NULL, ptl_tensor_data(r[0]),
               ptl_tensor_data(r[1]), ptl_tensor_data(r[2]), NULL, NULL, NULL, m, n,
               ptl_iv_to_double(&s[4])};
    if (!ptl_tensor_is_meta(x) && ln_dispatch(LN_FORWARD, x, work, &j, m, n) < 0) {
        goto error;
    }
    /* mixed float16/bfloat16 input and float32 parameters: float32 mean and rstd */
    PtlDtype stat_dt = (w != NULL ? w : b != NULL ? b : x)->dtype;
    if ((r[0] = nn_finish(r[0], x->dtype)) == NULL ||
        (r[1] = nn_finish(r[1], stat_dt)) == NULL || (r[2] = nn_finish(r[2], stat_dt)) == NULL) {
        goto error;
    }
    ptl_decref(xc);
    ptl_xdecref(wc);
    ptl_xdecref(bc);
    for (int i = 0; i < 3; i++) {
        s[i] = ptl_iv_tensor(r[i]);
    }
    return 0;
error:
    ptl_xdecref(xc);
    ptl_xdecref(wc);
    ptl_xdecref(bc);
    for (int i = 0; i < 3; i++) {
        ptl_xdecref(r[i]);
    }
    return -1;
}

/* native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape,
 *     Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask)
 *     -> (Tensor, Tensor, Tensor)
 * grad_out, input [*, N...]; mean, rstd [*, 1...] -> grad_input [*, N...], grad_weight and
 * grad_bias [N...] (each undefined when its mask entry is 0; the weight and bias gradients
 * also when weight / bias is None, as in PyTorch). */
static int
native_layer_norm_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *dy = s[0].u.t, *x = s[1].u.t, *w = opt_tensor(&s[5]);
    PtlTensorImpl *b = opt_tensor(&s[6]);
    PtlTensorImpl *in[5] = {NULL, NULL, NULL, NULL, NULL}, *r[3] = {NULL, NULL, NULL};
    const int64_t *mask = s[7].u.il.data;
    int64_t m, n, k = s[2].u.il.n;
    char b1[256], b2[256];
    if (ln_check(x, &s[2], w, b, &m, &n) < 0) {
        return -1;
    }
    if (dy->numel != x->numel || dy->dim != x->dim ||
        memcmp(dy->sizes, x->sizes, sizeof(int64_t) * (size_t)x->dim) != 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "native_layer_norm_backward: grad_out of size %s does not match "
                             "input of size %s",
                             ptl_format_sizes(b1, sizeof b1, dy->dim, dy->sizes),
                             ptl_format_sizes(b2, sizeof b2, x->dim, x->sizes));
    }
    if (s[3].u.t->numel != m || s[4].u.t->numel != m) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "native_layer_norm_backward: mean and rstd must have %lld elements",
                             (long long)m);
    }
    PtlDtype work = nn_work_dtype(x->dtype);
    int want[3] = {mask[0] != 0, mask[1] != 0 && w != NULL, mask[2] != 0 && b != NULL};
    PtlTensorImpl *src[5] = {dy, x, s[3].u.t, s[4].u.t, w};
    for (int i = 0; i < 5; i++) {
        if (src[i] != NULL && (in[i] = nn_prepare(src[i], work)) == NULL) {
            goto error;
        }
    }
    if ((want[0] && (r[0] = ptl_empty(x->dim, x->sizes, work, x->device)) == NULL) ||
        (want[1] && (r[1] = ptl_empty((int)k, x->sizes + x->dim - k, work, x->device)) == NULL) ||
        (want[2] && (r[2] = ptl_empty((int)k, x->sizes + x->dim - k, work, x->device)) == NULL)) {
        goto error;
    }
    LnJob j = {ptl_tensor_data(in[1]), in[4] ? ptl_tensor_data(in[4]) : NULL, NULL,
               ptl_tensor_data(in[0]), NULL, ptl_tensor_data(in[2]), ptl_tensor_data(in[3]),
               r[0] ? ptl_tensor_data(r[0]) : NULL, r[1] ? ptl_tensor_data(r[1]) : NULL,
               r[2] ? ptl_tensor_data(r[2]) : NULL, m, n, 0.0};
    if (want[0] && m * n > 0 && !ptl_tensor_is_meta(x) &&
        ln_dispatch(LN_BACKWARD_DX, x, work, &j, m, n) < 0) {
        goto error;
    }
    if ((want[1] || want[2]) && n > 0 && !ptl_tensor_is_meta(x) &&
        ln_dispatch(LN_BACKWARD_DW, x, work, &j, n, m) < 0) {
        goto error;
    }
    PtlDtype out_dt[3] = {x->dtype, w != NULL ? w->dtype : x->dtype, b != NULL ? b->dtype : x->dtype};
    return nn_return(s, r, out_dt, 3, in, 5, 1);
error:
    return nn_return(s, r, NULL, 3, in, 5, 0);
}

static const PtlKernelReg layer_norm_cpu[] = {
    {PTL_OP_native_layer_norm, PTL_KEY_CPU, native_layer_norm_cpu},
    {PTL_OP_native_layer_norm_backward, PTL_KEY_CPU, native_layer_norm_backward_cpu},
};
PTL_DEFINE_REGISTER(layer_norm_cpu)
