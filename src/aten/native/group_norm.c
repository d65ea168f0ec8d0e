/* group_norm.c -- native_group_norm and native_group_norm_backward on the CPU.  Mirrors
 * ATen/native/group_norm.cpp and ATen/native/cpu/group_norm_kernel.cpp.
 *
 * Note [Group norm groups]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * The input is made contiguous [N, C, HxW] (in float for the float32 family, double for
 * float64: nn_work_dtype), so group (n, g) is the L = D HxW contiguous elements of its D = C /
 * G channels; each group is one item of ptl_parallel_for, so the results do not depend on
 * the thread count.  The forward reads a group once for its statistics: the sums of x - K
 * and (x - K)^2 in double, K the group's first element for float64 (the shift keeps the
 * variance sum(d^2)/L - mean(d)^2 free of the cancellation a large mean would bring) and 0
 * for float32 (x^2 is exact in double, and the 53-bit sums leave the variance of a float32
 * group well inside its precision), in sixteen partial sums (four vectors of four, so that
 * the adds' latency does not bound the loop); rstd = 1 / sqrt(max(var, 0) + eps).  A second
 * read (of data still in cache) writes y = (x - mean) a[c] + bias[c], a[c] = rstd w[c]
 * per channel in double, rounded to the work dtype: subtracting the mean first keeps the
 * error at the output's scale (PyTorch's x a[c] + (bias[c] - mean a[c]) loses digits to
 * the cancellation when rstd is large, a group of nearly equal values).
 *
 * The backward of group (n, g), with s = D HxW, g = dy w[c]:
 *   pass 1, per channel c of the group: db[n, c] = sum(dy), ds[n, c] = sum(dy (x - mean))
 *           over HxW in double (float64 subtracts the mean first; float32 takes
 *           sum(dy x) - mean sum(dy), its products exact in double);
 *   pass 2: with dbg = sum_c db w, dsg = sum_c ds w over the group,
 *           dx = rstd w[c] dy + c2 (x - mean) + c3,  c2 = -dsg rstd^3 / s,  c3 = -dbg rstd / s
 *           (x - mean as the forward's, to the work dtype's precision).
 * The weight and bias gradients are then sums over n of ds[n, c] rstd[n, g] and db[n, c],
 * in that order on one thread ([N, C] work, next to the passes over the data). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/cpu_features.h"
#include "../../c10/parallel.h"
#include "nn_common.h"
#include "vec_math.h"

typedef struct {
    const char *x, *w, *b, *dy, *smean, *srstd;
    char *y, *mean, *rstd, *dx;
    double *ds, *db;            /* backward: the per-(n, c) sums, [N, C] */
    int64_t g, d, hw;           /* groups, channels a group, elements a channel */
    double eps;
} GnJob;

typedef double GnVec __attribute__((vector_size(32)));

/* p[i..i+4) as doubles (through a pointer: a vector return value would differ between the
 * baseline and AVX2 ABIs).  Built element by element: gcc turns that into one vcvtps2pd,
 * but __builtin_convertvector into two halves and a vinsertf128 (pool_global.c). */
static inline __attribute__((always_inline)) void
gn_load4(int f8, const char *p, int64_t i, GnVec *v)
{
    if (f8) {
        memcpy(v, p + (size_t)i * sizeof(double), sizeof *v);
    }
    else {
        const float *f = (const float *)p + i;
        GnVec u = {f[0], f[1], f[2], f[3]};
        *v = u;
    }
}

/* tail + the sixteen partial sums v[0..4)[0..4) */
static inline __attribute__((always_inline)) double
gn_hsum(double tail, const GnVec *v)
{
    GnVec s = (v[0] + v[2]) + (v[1] + v[3]);
    return tail + ((s[0] + s[2]) + (s[1] + s[3]));
}

/* the sums of p - k and of (p - k)^2 over p[0..n), in double (k is 0 for float32: p^2 is
 * exact in double, Note [Group norm groups]) */
static inline __attribute__((always_inline)) void
gn_moments(int f8, const char *restrict p, int64_t n, double k, double *s1, double *s2)
{
    GnVec a[4] = {{0}}, q[4] = {{0}};
    double ta = 0, tq = 0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int u = 0; u < 4; u++) {
            GnVec v;
            gn_load4(f8, p, i + 4 * u, &v);
            if (f8) {
                v -= k;
            }
            a[u] += v;
            q[u] += v * v;
        }
    }
    for (; i < n; i++) {
        double v = nn_load(f8, p, i) - k;
        ta += v;
        tq += v * v;
    }
    *s1 = gn_hsum(ta, a);
    *s2 = gn_hsum(tq, q);
}

/* the sums of dy and of dy (x - mean) over [0, n), in double (mean is 0 for float32) */
static inline __attribute__((always_inline)) void
gn_dot(int f8, const char *restrict dy, const char *restrict x, int64_t n, double mean,
       double *sdy, double *sdx)
{
    GnVec a[4] = {{0}}, q[4] = {{0}};
    double ta = 0, tq = 0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int u = 0; u < 4; u++) {
            GnVec g, v;
            gn_load4(f8, dy, i + 4 * u, &g);
            gn_load4(f8, x, i + 4 * u, &v);
            if (f8) {
                v -= mean;
            }
            a[u] += g;
            q[u] += g * v;
        }
    }
    for (; i < n; i++) {
        double g = nn_load(f8, dy, i);
        ta += g;
        tq += g * (nn_load(f8, x, i) - mean);
    }
    *sdy = gn_hsum(ta, a);
    *sdx = gn_hsum(tq, q);
}

/* y = (x - m) a + b and dx = a dy + b (x - m) + c over one channel, in the work dtype T, with
 * the mean m as the pair m_hi + m_lo of T values: x - m_hi is exact for x near the mean, so
 * (x - m_hi) - m_lo is x - m to T's precision even where the mean's rounding to T would
 * dwarf x - m (Note [Group norm groups]) */
#define DEFINE_GN_ROWS(T, DT)                                                             \
    static inline __attribute__((always_inline)) void                                     \
    gn_affine_##DT(const char *xp, char *yp, int64_t n, double m_d, double a_d,           \
                   double b_d)                                                            \
    {                                                                                     \
        const T *restrict x = (const T *)xp;                                              \
        T *restrict y = (T *)yp;                                                          \
        const T mh = (T)m_d, ml = (T)(m_d - (double)mh), a = (T)a_d, b = (T)b_d;          \
        for (int64_t i = 0; i < n; i++) {                                                 \
            y[i] = ((x[i] - mh) - ml) * a + b;                                            \
        }                                                                                 \
    }                                                                                     \
    static inline __attribute__((always_inline)) void                                     \
    gn_dx_##DT(const char *dyp, const char *xp, char *dxp, int64_t n, double m_d,         \
               double a_d, double b_d, double c_d)                                        \
    {                                                                                     \
        const T *restrict dy = (const T *)dyp, *restrict x = (const T *)xp;               \
        T *restrict dx = (T *)dxp;                                                        \
        const T mh = (T)m_d, ml = (T)(m_d - (double)mh), a = (T)a_d, b = (T)b_d;          \
        const T c = (T)c_d;                                                               \
        for (int64_t i = 0; i < n; i++) {                                                 \
            dx[i] = a * dy[i] + b * ((x[i] - mh) - ml) + c;                               \
        }                                                                                 \
    }
DEFINE_GN_ROWS(float, f4)
DEFINE_GN_ROWS(double, f8)
#undef DEFINE_GN_ROWS

/* groups [r0, r1) of the forward (Note [Group norm groups]) */
static inline __attribute__((always_inline)) int
gn_forward(const GnJob *j, int f8, int64_t r0, int64_t r1)
{
    const int64_t len = j->d * j->hw;
    const size_t isz = f8 ? sizeof(double) : sizeof(float);
    for (int64_t r = r0; r < r1; r++) {
        const char *x = j->x + (size_t)(r * len) * isz;
        char *y = j->y + (size_t)(r * len) * isz;
        double k = f8 && len > 0 ? nn_load(f8, x, 0) : 0.0, s1, s2;
        gn_moments(f8, x, len, k, &s1, &s2);
        double m1 = len > 0 ? s1 / (double)len : 0.0;
        double var = len > 0 ? s2 / (double)len - m1 * m1 : 0.0;
        double mean = k + m1, rs = 1.0 / sqrt((var < 0 ? 0.0 : var) + j->eps);
        nn_store(f8, j->mean, r, mean);
        nn_store(f8, j->rstd, r, rs);
        const int64_t c0 = (r % j->g) * j->d;
        for (int64_t c = 0; c < j->d; c++) {
            double a = j->w != NULL ? rs * nn_load(f8, j->w, c0 + c) : rs;
            double b = j->b != NULL ? nn_load(f8, j->b, c0 + c) : 0.0;
            size_t off = (size_t)(c * j->hw) * isz;
            (f8 ? gn_affine_f8 : gn_affine_f4)(x + off, y + off, j->hw, mean, a, b);
        }
    }
    return 0;
}

/* groups [r0, r1) of the backward: the per-channel sums, then dx where wanted */
static inline __attribute__((always_inline)) int
gn_backward(const GnJob *j, int f8, int64_t r0, int64_t r1)
{
    const int64_t len = j->d * j->hw;
    const size_t isz = f8 ? sizeof(double) : sizeof(float);
    for (int64_t r = r0; r < r1; r++) {
        const size_t base = (size_t)(r * len) * isz;
        const char *x = j->x + base, *dy = j->dy + base;
        const int64_t c0 = (r % j->g) * j->d;
        double *ds = j->ds + r * j->d, *db = j->db + r * j->d;
        double mean = nn_load(f8, j->smean, r), rs = nn_load(f8, j->srstd, r);
        double dsg = 0, dbg = 0;
        for (int64_t c = 0; c < j->d; c++) {
            size_t off = (size_t)(c * j->hw) * isz;
            gn_dot(f8, dy + off, x + off, j->hw, f8 ? mean : 0.0, &db[c], &ds[c]);
            if (!f8) {
                ds[c] -= mean * db[c];
            }
            double w = j->w != NULL ? nn_load(f8, j->w, c0 + c) : 1.0;
            dsg += ds[c] * w;
            dbg += db[c] * w;
        }
        if (j->dx == NULL || len == 0) {
            continue;
        }
        double c2 = -dsg * rs * rs * rs / (double)len;
        double c3 = -dbg * rs / (double)len;
        for (int64_t c = 0; c < j->d; c++) {
            size_t off = (size_t)(c * j->hw) * isz;
            double a = j->w != NULL ? rs * nn_load(f8, j->w, c0 + c) : rs;
            (f8 ? gn_dx_f8 : gn_dx_f4)(dy + off, x + off, j->dx + base + off, j->hw, mean, a, c2,
                                       c3);
        }
    }
    return 0;
}

/* Each pass for the baseline and, where the CPU has it, AVX2 (without FMA: the same bits) */
#define DEFINE_GN(NAME, ATTR, F8)                                                         \
    ATTR static int                                                                       \
    gn_forward_##NAME(void *ctx, int64_t r0, int64_t r1)                                  \
    {                                                                                     \
        return gn_forward(ctx, F8, r0, r1);                                               \
    }                                                                                     \
    ATTR static int                                                                       \
    gn_backward_##NAME(void *ctx, int64_t r0, int64_t r1)                                 \
    {                                                                                     \
        return gn_backward(ctx, F8, r0, r1);                                              \
    }
DEFINE_GN(f4, , 0)
DEFINE_GN(f8, , 1)
#ifdef PTL_HAVE_AVX2_KERNELS
DEFINE_GN(f4_avx2, __attribute__((target("avx2"))), 0)
DEFINE_GN(f8_avx2, __attribute__((target("avx2"))), 1)
#endif
#undef DEFINE_GN

/* the pass (0 forward, 1 backward) for the work dtype and this CPU */
static PtlParallelFn
gn_pass(int pass, int f4)
{
    static const PtlParallelFn base[2][2] = {{gn_forward_f8, gn_forward_f4},
                                             {gn_backward_f8, gn_backward_f4}};
#ifdef PTL_HAVE_AVX2_KERNELS
    static const PtlParallelFn avx2[2][2] = {{gn_forward_f8_avx2, gn_forward_f4_avx2},
                                             {gn_backward_f8_avx2, gn_backward_f4_avx2}};
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        return avx2[pass][f4];
    }
#endif
    return base[pass][f4];
}

/* fn over the groups [0, groups), about PTL_GRAIN_SIZE elements a task */
static int
gn_run(int64_t groups, int64_t per_group, PtlParallelFn fn, GnJob *j)
{
    void *tok = groups * per_group >= PTL_GRAIN_SIZE ? ptl_nogil_begin() : NULL;
    int rc = ptl_parallel_for(0, groups, PTL_GRAIN_SIZE / (per_group + 1) + 1, fn, j);
    ptl_nogil_end(tok);
    return rc;
}

static PtlTensorImpl *
opt_tensor(const PtlIValue *v)
{
    return v->tag == PTL_IV_TENSOR ? v->u.t : NULL;
}

/* PyTorch's checks of input against N, C, HxW and group, and of the weight and bias
 * (params[0..k), NULL ones skipped) against C.  0 or -1. */
static int
gn_check(PtlTensorImpl *x, PtlTensorImpl *const *params, const char *const *names, int k,
         int64_t n, int64_t c, int64_t hw, int64_t g)
{
    char b1[256], b2[256];
    if (g <= 0 || c % g != 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Expected number of channels in input to be divisible by "
                             "num_groups, but got input of shape %s and num_groups=%lld",
                             ptl_format_sizes(b1, sizeof b1, x->dim, x->sizes), (long long)g);
    }
    for (int i = 0; i < k; i++) {
        PtlTensorImpl *t = params[i];
        /* PyTorch's message prints the weight's shape for both ([0] when there is none) */
        int64_t none = 0;
        if (t != NULL && (t->dim != 1 || t->numel != c)) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "Expected %s to be a vector of size equal to the number of "
                                 "channels in input, but got %s of shape %s and input of "
                                 "shape %s",
                                 names[i], names[i],
                                 params[0] != NULL
                                     ? ptl_format_sizes(b1, sizeof b1, params[0]->dim,
                                                        params[0]->sizes)
                                     : ptl_format_sizes(b1, sizeof b1, 1, &none),
                                 ptl_format_sizes(b2, sizeof b2, x->dim, x->sizes));
        }
    }
    /* PyTorch checks the layout here.  The real kernels take any layout (nn_prepare
     * copies), so only a complex input, which they refuse below, gets its message. */
    if (ptl_dtype_is_complex(x->dtype) &&
        !ptl_tensor_impl_is_contiguous_as(x, ptl_tensor_impl_suggest_memory_format(x))) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Expected X.is_contiguous(memory_format) to be true, but got "
                             "false.  (Could this error message be improved?  If so, please "
                             "report an enhancement request to PyTorch.)");
    }
    if (!ptl_dtype_is_floating(x->dtype)) {   /* PyTorch's kernel checks the size after */
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED,
                             "\"GroupNormKernelImpl\" not implemented for '%s'",
                             ptl_dtype_legacy_name(x->dtype));
    }
    if (n < 0 || hw < 0 || x->numel != n * c * hw) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Expected X.numel() == N * C * HxW to be true, but got false.  "
                             "(Could this error message be improved?  If so, please report an "
                             "enhancement request to PyTorch.)");
    }
    return nn_check_mixed_dtype(x, params, k);
}

/* native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C,
 *     SymInt HxW, int group, float eps) -> (Tensor, Tensor, Tensor)
 * input [N, C, *] -> out [N, C, *] (contiguous; registered as_input, so a channels-last
 * input gets a channels-last out: Note [Channels-last at the kernel boundary]),
 * mean [N, group], rstd [N, group] */
static int
native_group_norm_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *x = s[0].u.t, *w = opt_tensor(&s[1]), *b = opt_tensor(&s[2]);
    PtlTensorImpl *in[3] = {NULL, NULL, NULL}, *r[3] = {NULL, NULL, NULL};
    int64_t n = ptl_iv_to_int(&s[3]), c = ptl_iv_to_int(&s[4]), hw = ptl_iv_to_int(&s[5]);
    int64_t g = ptl_iv_to_int(&s[6]);
    PtlTensorImpl *params[2] = {w, b};
    static const char *const names[2] = {"weight", "bias"};
    if (gn_check(x, params, names, 2, n, c, hw, g) < 0) {
        return -1;
    }
    PtlDtype work = nn_work_dtype(x->dtype);
    int64_t ssz[2] = {n, g};
    PtlTensorImpl *src[3] = {x, w, b};
    for (int i = 0; i < 3; i++) {
        if (src[i] != NULL && (in[i] = nn_prepare(src[i], work)) == NULL) {
            goto error;
        }
    }
    if ((r[0] = ptl_empty(x->dim, x->sizes, work, x->device)) == NULL ||
        (r[1] = ptl_empty(2, ssz, work, x->device)) == NULL ||
        (r[2] = ptl_empty(2, ssz, work, x->device)) == NULL) {
        goto error;
    }
    GnJob j = {ptl_tensor_data(in[0]), in[1] ? ptl_tensor_data(in[1]) : NULL,
               in[2] ? ptl_tensor_data(in[2]) : NULL, NULL, NULL, NULL, ptl_tensor_data(r[0]),
               ptl_tensor_data(r[1]), ptl_tensor_data(r[2]), NULL, NULL, NULL, g, c / g, hw,
               ptl_iv_to_double(&s[7])};
    if (!ptl_tensor_is_meta(x) && n * g > 0 &&
        gn_run(n * g, c / g * hw, gn_pass(0, work == PTL_DTYPE_FLOAT32), &j) < 0) {
        goto error;
    }
    /* mixed float16/bfloat16 input and float32 parameters: float32 mean and rstd */
    PtlDtype stat_dt = (w != NULL ? w : b != NULL ? b : x)->dtype;
    PtlDtype out_dt[3] = {x->dtype, stat_dt, stat_dt};
    return nn_return(s, r, out_dt, 3, in, 3, 1);
error:
    return nn_return(s, r, NULL, 3, in, 3, 0);
}

/* native_group_norm_backward(Tensor grad_out, Tensor input, Tensor mean, Tensor rstd,
 *     Tensor? weight, SymInt N, SymInt C, SymInt HxW, int group, bool[3] output_mask)
 *     -> (Tensor, Tensor, Tensor)
 * grad_input like input, grad_weight and grad_bias [C], each undefined where its mask entry
 * is 0 (Note [Group norm groups]). */
static int
native_group_norm_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *dy = s[0].u.t, *x = s[1].u.t, *w = opt_tensor(&s[4]);
    PtlTensorImpl *in[5] = {NULL, NULL, NULL, NULL, NULL}, *r[3] = {NULL, NULL, NULL};
    int64_t n = ptl_iv_to_int(&s[5]), c = ptl_iv_to_int(&s[6]), hw = ptl_iv_to_int(&s[7]);
    int64_t g = ptl_iv_to_int(&s[8]);
    const int64_t *mask = s[9].u.il.data;
    double *sums = NULL;
    char b1[256], b2[256];
    static const char *const names[1] = {"weight"};
    if (gn_check(x, &w, names, 1, n, c, hw, g) < 0) {
        return -1;
    }
    if (dy->dim != x->dim ||
        memcmp(dy->sizes, x->sizes, sizeof(int64_t) * (size_t)x->dim) != 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "native_group_norm_backward: grad_out of size %s does not match "
                             "input of size %s",
                             ptl_format_sizes(b1, sizeof b1, dy->dim, dy->sizes),
                             ptl_format_sizes(b2, sizeof b2, x->dim, x->sizes));
    }
    if (s[2].u.t->numel != n * g || s[3].u.t->numel != n * g) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "native_group_norm_backward: mean and rstd must have %lld elements",
                             (long long)(n * g));
    }
    PtlDtype work = nn_work_dtype(x->dtype);
    PtlTensorImpl *src[5] = {dy, x, s[2].u.t, s[3].u.t, w};
    for (int i = 0; i < 5; i++) {
        if (src[i] != NULL && (in[i] = nn_prepare(src[i], work)) == NULL) {
            goto error;
        }
    }
    if ((mask[0] && (r[0] = ptl_empty(x->dim, x->sizes, work, x->device)) == NULL) ||
        (mask[1] && (r[1] = ptl_empty(1, &c, work, x->device)) == NULL) ||
        (mask[2] && (r[2] = ptl_empty(1, &c, work, x->device)) == NULL)) {
        goto error;
    }
    int f8 = work == PTL_DTYPE_FLOAT64;
    if (!ptl_tensor_is_meta(x) && (mask[0] || mask[1] || mask[2])) {
        if ((sums = malloc(sizeof(double) * (size_t)(2 * n * c + 1))) == NULL) {
            ptl_error_set(PTL_ERR_RUNTIME, "native_group_norm_backward: out of memory");
            goto error;
        }
        GnJob j = {ptl_tensor_data(in[1]), in[4] ? ptl_tensor_data(in[4]) : NULL, NULL,
                   ptl_tensor_data(in[0]), ptl_tensor_data(in[2]), ptl_tensor_data(in[3]),
                   NULL, NULL, NULL, r[0] ? ptl_tensor_data(r[0]) : NULL, sums, sums + n * c,
                   g, c / g, hw, 0.0};
        if (n * g > 0 && gn_run(n * g, c / g * hw, gn_pass(1, !f8), &j) < 0) {
            goto error;
        }
        const char *rstd = ptl_tensor_data(in[3]);
        for (int64_t ch = 0; ch < c; ch++) {
            double sw = 0, sb = 0;
            for (int64_t i = 0; i < n; i++) {
                sw += j.ds[i * c + ch] * nn_load(f8, rstd, i * g + ch / (c / g));
                sb += j.db[i * c + ch];
            }
            if (r[1] != NULL) {
                nn_store(f8, ptl_tensor_data(r[1]), ch, sw);
            }
            if (r[2] != NULL) {
                nn_store(f8, ptl_tensor_data(r[2]), ch, sb);
            }
        }
    }
    free(sums);
    PtlDtype pdt = w != NULL ? w->dtype : x->dtype;
    PtlDtype out_dt[3] = {x->dtype, pdt, pdt};
    return nn_return(s, r, out_dt, 3, in, 5, 1);
error:
    free(sums);
    return nn_return(s, r, NULL, 3, in, 5, 0);
}

PTL_KERNEL_AS_INPUT(native_group_norm_cpu)

static const PtlKernelReg group_norm_cpu[] = {
    {PTL_OP_native_group_norm, PTL_KEY_CPU, native_group_norm_cpu_as_input},
    {PTL_OP_native_group_norm_backward, PTL_KEY_CPU, native_group_norm_backward_cpu},
};
PTL_DEFINE_REGISTER(group_norm_cpu)
