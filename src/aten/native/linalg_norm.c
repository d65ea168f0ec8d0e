/* linalg_norm.c -- linalg_vector_norm, cdist, pdist and renorm.  Mirrors linalg_vector_norm of
 * ATen/native/LinearAlgebra.cpp, cdist of ATen/native/Distance.cpp and renorm of
 * ATen/native/Normalization.cpp.
 *
 * linalg_vector_norm is a CPU kernel over norm's reduction, with the derivative row
 * LinalgVectorNormBackward0 (derivatives.def; the formula of norm); renorm is a CPU kernel
 * over redispatched ops with RenormBackward0.  cdist is composite: it checks its arguments
 * with PyTorch's texts and then calls other ops through the dispatcher.  Its direct path
 * is the CPU kernel _cdist_forward (loops over every row pair, with CdistBackward0 and
 * _cdist_backward, PyTorch's formulas); its matmul path for p = 2 is composite.  pdist's
 * CPU kernels _pdist_forward / _pdist_backward (PdistBackward0) are Note [Pdist loops].
 *
 * Note [Norm of one element]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Where every reduced dimension has size 1, PyTorch's linalg_vector_norm (which its norm
 * calls) returns |x| (x != 0 for p = 0) without the powers: (|x|^p)^(1/p) underflows or
 * overflows for a large |p| or |x| (0.09 for p = 2^32 gave 0, 1e200 for p = 2 gave inf)
 * and a nan p gave nan.  reduce.c's plan takes such a norm (linalg_vector_norm's and
 * norm's, real or of a complex |z|) as the 1-norm, whose sum of one |x| is that answer. */
#include <math.h>
#include <stdlib.h>

#include "../../c10/cpu_features.h"
#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "device_compose.h"
#include "linalg_impl.h"
#include "native.h"
#include "vec_math.h"

static PtlTensorImpl *
call2(PtlOpId id, PtlTensorImpl *a, PtlTensorImpl *b)
{
    PtlIValue args[3] = {ptl_iv_tensor(a), ptl_iv_tensor(b), ptl_iv_int(1)};
    return ptl_call_tensor(id, args);
}

static PtlTensorImpl *
call1(PtlOpId id, PtlTensorImpl *a)
{
    PtlIValue args[1] = {ptl_iv_tensor(a)};
    return ptl_call_tensor(id, args);
}

PtlTensorImpl *
ptl_vector_norm_input(PtlDispatchKeySet ks, PtlTensorImpl *self, const PtlIValue *dtype)
{
    if (dtype->tag == PTL_IV_NONE || dtype->u.dtype == self->dtype) {
        ptl_incref(self);
        return self;
    }
    PtlDtype dt = dtype->u.dtype;
    if (ptl_dtype_is_complex(self->dtype) && !ptl_dtype_is_complex(dt)) {
        ptl_error_set(PTL_ERR_RUNTIME, "linalg.vector_norm: dtype should be complex for "
                      "complex inputs, but got %s", ptl_dtype_legacy_name(dt));
        return NULL;
    }
    if (!ptl_dtype_is_complex(self->dtype) && ptl_dtype_is_complex(dt)) {
        ptl_error_set(PTL_ERR_RUNTIME, "linalg.vector_norm: dtype should be real for real "
                      "inputs, but got %s", ptl_dtype_legacy_name(dt));
        return NULL;
    }
    if (!ptl_dtype_is_differentiable(dt)) {
        ptl_error_set(PTL_ERR_RUNTIME, "linalg.vector_norm: dtype should be floating point or "
                      "complex, but got %s", ptl_dtype_legacy_name(dt));
        return NULL;
    }
    if (ptl_promote_types(self->dtype, dt) != dt) {
        ptl_error_set(PTL_ERR_RUNTIME, "linalg.vector_norm: the dtype of the input (%s) should "
                      "be convertible without narrowing to the specified dtype (%s)",
                      ptl_dtype_legacy_name(self->dtype), ptl_dtype_legacy_name(dt));
        return NULL;
    }
    PtlIValue c[7] = {ptl_iv_tensor(self), ptl_iv_dtype(dt), ptl_iv_none(), ptl_iv_none(),
                      ptl_iv_none(), ptl_iv_bool(0), ptl_iv_none()};
    return ptl_dispatcher_redispatch(ptl_op(PTL_OP__to_copy), ks, c) < 0 ? NULL : c[0].u.t;
}

/* linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *,
 * ScalarType? dtype=None) -> Tensor
 * [*] -> the reduced shape; dtype: the input is first converted (without narrowing).  A CPU
 * kernel with its own derivative (LinalgVectorNormBackward0): the conversion and the norm
 * are redispatched below autograd (PyTorch's at::redispatch). */
static int
linalg_vector_norm_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    PtlTensorImpl *self = s[0].u.t, *x;
    int64_t n = s[2].tag == PTL_IV_NONE ? 0 : s[2].u.il.n;

    if (!ptl_dtype_is_floating(self->dtype)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "linalg.vector_norm: Expected a floating point or "
                             "complex tensor as input. Got %s",
                             ptl_dtype_legacy_name(self->dtype));
    }
    if ((x = ptl_vector_norm_input(ks, self, &s[4])) == NULL) {
        return -1;
    }
    PtlIValue args[4] = {ptl_iv_tensor(x), s[1], ptl_iv_intlist(n ? s[2].u.il.data : NULL, n),
                         ptl_iv_bool(s[3].u.b)};
    int rc = ptl_dispatcher_redispatch(ptl_op(PTL_OP_norm_ScalarOpt_dim), ks, args);
    ptl_decref(x);
    if (rc < 0) {
        return -1;
    }
    s[0] = args[0];
    return 0;
}

/* sqrt(clamp_min(|x1|^2 + |x2|^2 - 2 x1 x2^T, 0)): [*, P, M], [*, R, M] -> [*, P, R]
 * (PyTorch's _euclidean_dist: one matmul instead of P*R differences) */
static PtlTensorImpl *
euclidean_dist(PtlTensorImpl *x1, PtlTensorImpl *x2)
{
    int64_t last = -1;
    PtlTensorImpl *sq1 = NULL, *n1 = NULL, *sq2 = NULL, *n2 = NULL, *n2t = NULL, *x2t = NULL;
    PtlTensorImpl *prod = NULL, *sum = NULL, *d2 = NULL, *res = NULL;
    PtlIValue sum_args[4] = {ptl_iv_none(), ptl_iv_intlist(&last, 1), ptl_iv_bool(1),
                             ptl_iv_none()};
    PtlIValue tr[3];

    if ((sq1 = call2(PTL_OP_mul_Tensor, x1, x1)) == NULL ||
        (sq2 = call2(PTL_OP_mul_Tensor, x2, x2)) == NULL) {
        goto error;
    }
    sum_args[0] = ptl_iv_tensor(sq1);
    if ((n1 = ptl_call_tensor(PTL_OP_sum_dim_IntList, sum_args)) == NULL) {
        goto error;
    }
    sum_args[0] = ptl_iv_tensor(sq2);
    if ((n2 = ptl_call_tensor(PTL_OP_sum_dim_IntList, sum_args)) == NULL) {
        goto error;
    }
    tr[1] = ptl_iv_int(-2);
    tr[2] = ptl_iv_int(-1);
    tr[0] = ptl_iv_tensor(n2);
    if ((n2t = ptl_call_tensor(PTL_OP_transpose_int, tr)) == NULL) {
        goto error;
    }
    tr[0] = ptl_iv_tensor(x2);
    if ((x2t = ptl_call_tensor(PTL_OP_transpose_int, tr)) == NULL ||
        (prod = call2(PTL_OP_matmul, x1, x2t)) == NULL ||
        (sum = call2(PTL_OP_add_Tensor, n1, n2t)) == NULL) {
        goto error;
    }
    PtlIValue sub_args[3] = {ptl_iv_tensor(sum), ptl_iv_tensor(prod), ptl_iv_int(2)};
    if ((d2 = ptl_call_tensor(PTL_OP_sub_Tensor, sub_args)) == NULL) {
        goto error;
    }
    PtlIValue clamp_args[2] = {ptl_iv_tensor(d2), ptl_iv_int(0)};
    PtlTensorImpl *c = ptl_call_tensor(PTL_OP_clamp_min, clamp_args);
    if (c != NULL) {
        res = call1(PTL_OP_sqrt, c);
        ptl_decref(c);
    }
error:
    ptl_xdecref(sq1);
    ptl_xdecref(n1);
    ptl_xdecref(sq2);
    ptl_xdecref(n2);
    ptl_xdecref(n2t);
    ptl_xdecref(x2t);
    ptl_xdecref(prod);
    ptl_xdecref(sum);
    ptl_xdecref(d2);
    return res;
}

/* ---- _cdist_forward / _cdist_backward: the direct pairwise loops ---- */

/* p's kind: the loops special-case the orders with cheap formulas */
enum { P_ZERO, P_ONE, P_TWO, P_INF, P_LT_TWO, P_GENERAL };

static int
p_kind(double p)
{
    return p == 0 ? P_ZERO : p == 1 ? P_ONE : p == 2 ? P_TWO : isinf(p) ? P_INF
           : p < 2 ? P_LT_TWO : P_GENERAL;
}

typedef struct CdistCtx {
    const char *x1, *x2, *grad, *dist;   /* contiguous [B, P, M], [B, R, M], [B, P, R] x 2 */
    char *out;                           /* [B, P, R] (forward) or [B, P, M] (backward) */
    int64_t P, R, M;
    double p;
    int kind;
    PtlDtype dtype;
} CdistCtx;

static inline double
load(const char *base, int64_t i, PtlDtype dt)
{
    return dt == PTL_DTYPE_FLOAT32 ? ((const float *)base)[i] : ((const double *)base)[i];
}

static inline void
store(char *base, int64_t i, PtlDtype dt, double v)
{
    if (dt == PTL_DTYPE_FLOAT32) {
        ((float *)base)[i] = (float)v;
    }
    else {
        ((double *)base)[i] = v;
    }
}

/* rows [begin, end) of the flattened [B * P]: out[b, i, j] = ||x1[b, i] - x2[b, j]||_p,
 * accumulated in double */
static int
cdist_forward_rows(void *vctx, int64_t begin, int64_t end)
{
    const CdistCtx *c = vctx;
    int64_t P = c->P, R = c->R, M = c->M;
    for (int64_t row = begin; row < end; row++) {
        int64_t b = row / P, a = row * M;
        for (int64_t j = 0; j < R; j++) {
            int64_t o = (b * R + j) * M;
            double acc = 0;
            for (int64_t k = 0; k < M; k++) {
                double d = fabs(load(c->x1, a + k, c->dtype) - load(c->x2, o + k, c->dtype));
                switch (c->kind) {
                case P_ZERO: acc += d != 0; break;
                case P_ONE: acc += d; break;
                case P_TWO: acc += d * d; break;
                case P_INF: acc = d > acc || isnan(d) ? d : acc; break;
                default: acc += pow(d, c->p); break;
                }
            }
            double r = c->kind == P_TWO ? sqrt(acc)
                       : c->kind == P_LT_TWO || c->kind == P_GENERAL ? pow(acc, 1.0 / c->p) : acc;
            store(c->out, row * R + j, c->dtype, r);
        }
    }
    return 0;
}

/* |x1 - x2| as the dtype holds it: the distance it is compared with (p = inf) was rounded to
 * the dtype, so the exact double difference would rarely equal it in float32 (every gradient
 * of a float32 inf-norm cdist came out 0) */
static inline double
ad_in_dtype(double ad, PtlDtype dt)
{
    return dt == PTL_DTYPE_FLOAT32 ? (double)(float)ad : ad;
}

/* rows [begin, end) of [B * P]: out[b, i] = sum_j grad[b, i, j] * d dist[b, i, j] / d x1[b, i]
 * (PyTorch's formulas per p; a zero distance gives 0) */
static int
cdist_backward_rows(void *vctx, int64_t begin, int64_t end)
{
    const CdistCtx *c = vctx;
    int64_t P = c->P, R = c->R, M = c->M;
    double p = c->p;
    for (int64_t row = begin; row < end; row++) {
        int64_t b = row / P, a = row * M;
        for (int64_t k = 0; k < M; k++) {
            double acc = 0;
            double xa = load(c->x1, a + k, c->dtype);
            for (int64_t j = 0; j < R; j++) {
                double g = load(c->grad, row * R + j, c->dtype);
                double dist = load(c->dist, row * R + j, c->dtype);
                double diff = xa - load(c->x2, (b * R + j) * M + k, c->dtype);
                double s = (diff > 0) - (diff < 0), ad = fabs(diff);
                switch (c->kind) {
                case P_ZERO: break;
                case P_ONE: acc += g * s; break;
                case P_TWO: acc += dist == 0 ? 0 : g * diff / dist; break;
                case P_INF: acc += ad_in_dtype(ad, c->dtype) == dist ? g * s : 0; break;
                case P_LT_TWO:
                    acc += dist == 0 || (diff == 0 && p < 1)
                               ? 0 : s * pow(ad, p - 1) * g / pow(dist, p - 1);
                    break;
                default:
                    acc += dist == 0 ? 0 : diff * pow(ad, p - 2) * g / pow(dist, p - 1);
                    break;
                }
            }
            store(c->out, a + k, c->dtype, acc);
        }
    }
    return 0;
}

/* Runs fn over the B * P rows of c (work per row: R * M) without the GIL. */
static int
cdist_run(CdistCtx *c, int64_t rows, PtlParallelFn fn)
{
    int64_t per_row = c->R * c->M + 1;
    int64_t grain = PTL_GRAIN_SIZE / per_row > 0 ? PTL_GRAIN_SIZE / per_row : 1;
    void *tok = rows * per_row > PTL_GRAIN_SIZE ? ptl_nogil_begin() : NULL;
    int rc = ptl_parallel_for(0, rows, grain, fn, c);
    ptl_nogil_end(tok);
    return rc;
}

static int
cdist_dtype_check(PtlDtype dt)
{
    if (dt != PTL_DTYPE_FLOAT32 && dt != PTL_DTYPE_FLOAT64) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"cdist\" not implemented for '%s'",
                             ptl_dtype_legacy_name(dt));
    }
    return 0;
}

/* ---- _pdist_forward / _pdist_backward ---- */

/* Note [Pdist loops]
 * ~~~~~~~~~~~~~~~~~~
 * pdist(x [N, M]) is the distance of every row pair i < j, row-major: the pair (i, j) is
 * out[i N - i (i + 1) / 2 + j - i - 1].  The forward splits the N (N - 1) / 2 pairs into
 * ranges (each thread walks its range row by row) and computes each distance directly from
 * the differences, as PyTorch does (no Gram matrix, whose cancellation would lose the small
 * distances).  For float32 with p = 2 or 1 on AVX2 it takes PDIST_ROWS rows j at a time
 * against row i: 8 columns per step in float lanes (each pair's own lanes, one load of row
 * i for the group), the lanes and the column tail (M % 8) summed in double at the end;
 * that is PyTorch's accuracy (float sums of M / 8 terms per lane).  Every other case (p = 0,
 * inf, other p, float64, no AVX2) accumulates each pair in double, one column at a time.
 * The backward adds each pair's gradient to both of its rows (+ to i, - to j) in a double
 * buffer, serially, with cdist's formulas per p. */

#define PDIST_ROWS 4

typedef struct PdistCtx {
    const char *x;
    char *out;
    int64_t N, M;
    double p;
    int kind;
    PtlDtype dtype;
} PdistCtx;

/* The first pair index of row i. */
static inline int64_t
pdist_row_start(int64_t i, int64_t N)
{
    return i * N - i * (i + 1) / 2;
}

/* ||x_i - x_j||_p accumulated in double (the general loop). */
static double
pdist_pair(const PdistCtx *c, int64_t i, int64_t j)
{
    int64_t M = c->M;
    const char *x = c->x;
    double acc = 0;
    for (int64_t k = 0; k < M; k++) {
        double d = fabs(load(x, i * M + k, c->dtype) - load(x, j * M + k, c->dtype));
        switch (c->kind) {
        case P_ZERO: acc += d != 0; break;
        case P_ONE: acc += d; break;
        case P_TWO: acc += d * d; break;
        case P_INF: acc = d > acc || isnan(d) ? d : acc; break;
        default: acc += pow(d, c->p); break;
        }
    }
    return c->kind == P_TWO ? sqrt(acc)
           : c->kind == P_LT_TWO || c->kind == P_GENERAL ? pow(acc, 1.0 / c->p) : acc;
}

#ifdef PTL_HAVE_AVX2_KERNELS
/* The sums in double of the 8 float lanes of each of v[0..4), as one vector. */
static inline PTL_AVX2 __m256d
pdist_hsum4(const __m256 *v)
{
    __m256d s[4];
    for (int r = 0; r < 4; r++) {
        s[r] = _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v[r])),
                             _mm256_cvtps_pd(_mm256_extractf128_ps(v[r], 1)));
    }
    __m256d h01 = _mm256_hadd_pd(s[0], s[1]), h23 = _mm256_hadd_pd(s[2], s[3]);
    return _mm256_add_pd(_mm256_permute2f128_pd(h01, h23, 0x20),
                         _mm256_permute2f128_pd(h01, h23, 0x31));
}

/* out[0..n) = the p = 2 (l1 = 0) or p = 1 (l1 = 1) distances of float row a to the n <= 4
 * rows b[0..n) (missing rows repeat b[0]; Note [Pdist loops]). */
static inline PTL_AVX2 void
pdist_rows_f4_avx2(const float *a, const float *const *b, int n, int64_t M, int l1,
                   float *out)
{
    __m256 acc[PDIST_ROWS], sign = _mm256_set1_ps(-0.0f);
    const float *b0 = b[0], *b1 = n > 1 ? b[1] : b0, *b2 = n > 2 ? b[2] : b0;
    const float *b3 = n > 3 ? b[3] : b0;
    double tail[PDIST_ROWS] = {0, 0, 0, 0};
    int64_t k = 0;
    for (int r = 0; r < PDIST_ROWS; r++) {
        acc[r] = _mm256_setzero_ps();
    }
#define PDIST_STEP(R, B)                                                                    \
    do {                                                                                    \
        __m256 d = _mm256_sub_ps(va, _mm256_loadu_ps((B) + k));                             \
        acc[R] = l1 ? _mm256_add_ps(acc[R], _mm256_andnot_ps(sign, d))                      \
                    : _mm256_fmadd_ps(d, d, acc[R]);                                        \
    } while (0)
    for (; k + 8 <= M; k += 8) {
        __m256 va = _mm256_loadu_ps(a + k);
        PDIST_STEP(0, b0);
        PDIST_STEP(1, b1);
        PDIST_STEP(2, b2);
        PDIST_STEP(3, b3);
    }
#undef PDIST_STEP
    const float *bs[PDIST_ROWS] = {b0, b1, b2, b3};
    for (int r = 0; r < PDIST_ROWS; r++) {
        for (int64_t t = k; t < M; t++) {
            float d = a[t] - bs[r][t];
            tail[r] += l1 ? fabsf(d) : (double)d * d;
        }
    }
    __m256d sum = _mm256_add_pd(pdist_hsum4(acc), _mm256_loadu_pd(tail));
    __m128 res = _mm256_cvtpd_ps(l1 ? sum : _mm256_sqrt_pd(sum));
    if (n == PDIST_ROWS) {
        _mm_storeu_ps(out, res);
        return;
    }
    float r4[PDIST_ROWS];
    _mm_storeu_ps(r4, res);
    for (int r = 0; r < n; r++) {
        out[r] = r4[r];
    }
}

/* The pairs [begin, end) of a float32 p = 1 or 2 pdist, row i's from pair j. */
static PTL_AVX2 void
pdist_range_f4_avx2(const PdistCtx *c, int64_t i, int64_t j, int64_t begin, int64_t end)
{
    const float *x = (const float *)c->x;
    float *out = (float *)c->out;
    int64_t N = c->N, M = c->M;
    int l1 = c->kind == P_ONE;
    for (int64_t o = begin; o < end;) {
        const float *b[PDIST_ROWS] = {x, x, x, x};
        int n = 0;
        while (n < PDIST_ROWS && j < N && o + n < end) {
            b[n++] = x + (j++) * M;
        }
        pdist_rows_f4_avx2(x + i * M, b, n, M, l1, out + o);
        o += n;
        if (j == N) {
            i++;
            j = i + 1;
        }
    }
}
#endif

/* pairs [begin, end) */
static int
pdist_forward_range(void *vctx, int64_t begin, int64_t end)
{
    const PdistCtx *c = vctx;
    int64_t N = c->N, i = 0;
    /* row i holds pairs [start(i), start(i + 1)): a first guess from the quadratic, then
     * corrected */
    double n2 = (double)(2 * N - 1);
    i = (int64_t)((n2 - sqrt(n2 * n2 - 8.0 * (double)begin)) / 2);
    i = i < 0 ? 0 : i > N - 2 ? N - 2 : i;
    while (i > 0 && pdist_row_start(i, N) > begin) {
        i--;
    }
    while (i < N - 2 && pdist_row_start(i + 1, N) <= begin) {
        i++;
    }
    int64_t j = i + 1 + (begin - pdist_row_start(i, N));
#ifdef PTL_HAVE_AVX2_KERNELS
    if (c->dtype == PTL_DTYPE_FLOAT32 && (c->kind == P_TWO || c->kind == P_ONE) &&
        ptl_cpu_capability() >= PTL_CPU_AVX2) {
        pdist_range_f4_avx2(c, i, j, begin, end);
        return 0;
    }
#endif
    for (int64_t o = begin; o < end; o++) {
        store(c->out, o, c->dtype, pdist_pair(c, i, j));
        if (++j == N) {
            i++;
            j = i + 1;
        }
    }
    return 0;
}

static int
pdist_check(const PtlTensorImpl *x, const char *what)
{
    if (x->dim != 2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "pdist only supports 2D tensors, got: %dD",
                             x->dim);
    }
    if (x->dtype != PTL_DTYPE_FLOAT32 && x->dtype != PTL_DTYPE_FLOAT64) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'", what,
                             ptl_dtype_legacy_name(x->dtype));
    }
    return 0;
}

/* _pdist_forward(Tensor self, float p=2) -> Tensor: self [N, M] -> [N (N - 1) / 2] */
static int
_pdist_forward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *x = NULL, *out = NULL;
    double p = ptl_iv_to_double(&s[1]);
    int64_t none = 0;
    /* PyTorch's _pdist_forward wants a contiguous self, reads N = size(0), returns an empty
     * result for N <= 1 (any dtype, any p), and then reads size(1) (torch.pdist checks the
     * rest in Python and passes a contiguous input) */
    if (!ptl_tensor_is_contiguous(self)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "_pdist_forward requires contiguous input");
    }
    if (self->dim == 0) {
        return ptl_error_set(PTL_ERR_INDEX, "Dimension specified as 0 but tensor has no "
                                            "dimensions");
    }
    if (self->sizes[0] <= 1) {
        out = ptl_empty(1, &none, self->dtype, self->device);
        s[0] = out != NULL ? ptl_iv_tensor(out) : ptl_iv_none();
        return out != NULL ? 0 : -1;
    }
    if (self->dim == 1) {
        return ptl_error_set(PTL_ERR_INDEX, "Dimension out of range (expected to be in range of "
                                            "[-1, 0], but got 1)");
    }
    if (pdist_check(self, "pdist") < 0) {
        return -1;
    }
    if (p < 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "pdist only supports non-negative p values");
    }
    int64_t N = self->sizes[0], pairs = N >= 2 ? N * (N - 1) / 2 : 0;
    if ((x = ptl_contiguous(self)) == NULL ||
        (out = ptl_empty(1, &pairs, self->dtype, self->device)) == NULL) {
        goto error;
    }
    PdistCtx c = {ptl_tensor_data(x), ptl_tensor_data(out), N, self->sizes[1], p, p_kind(p),
                  self->dtype};
    int64_t per = c.M + 1, grain = PTL_GRAIN_SIZE / per > 0 ? PTL_GRAIN_SIZE / per : 1;
    void *tok = pairs * per > PTL_GRAIN_SIZE ? ptl_nogil_begin() : NULL;
    int rc = pairs > 0 ? ptl_parallel_for(0, pairs, grain, pdist_forward_range, &c) : 0;
    ptl_nogil_end(tok);
    if (rc < 0) {
        goto error;
    }
    ptl_decref(x);
    s[0] = ptl_iv_tensor(out);
    return 0;
error:
    ptl_xdecref(x);
    ptl_xdecref(out);
    return -1;
}

/* d dist / d x_i for one pair and column: diff = x_i - x_j (cdist_backward_rows' formulas) */
static inline double
pdist_grad_term(int kind, double p, double g, double dist, double diff, PtlDtype dt)
{
    double sg = (diff > 0) - (diff < 0), ad = fabs(diff);
    switch (kind) {
    case P_ZERO: return 0;
    case P_ONE: return g * sg;
    case P_TWO: return dist == 0 ? 0 : g * diff / dist;
    case P_INF: return ad_in_dtype(ad, dt) == dist ? g * sg : 0;
    case P_LT_TWO:
        return dist == 0 || (diff == 0 && p < 1) ? 0 : sg * pow(ad, p - 1) * g / pow(dist, p - 1);
    default: return dist == 0 ? 0 : diff * pow(ad, p - 2) * g / pow(dist, p - 1);
    }
}

/* _pdist_backward(Tensor grad, Tensor self, float p, Tensor pdist) -> Tensor: the gradient
 * of self [N, M] (Note [Pdist loops]) */
static int
_pdist_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *t[3] = {NULL, NULL, NULL}, *out = NULL;
    PtlTensorImpl *in[3] = {s[0].u.t, s[1].u.t, s[3].u.t};
    double p = ptl_iv_to_double(&s[2]), *acc = NULL;
    if (pdist_check(in[1], "pdist_backward") < 0) {
        return -1;
    }
    int64_t N = in[1]->sizes[0], M = in[1]->sizes[1], pairs = N >= 2 ? N * (N - 1) / 2 : 0;
    for (int i = 0; i < 3; i += 2) {
        if (in[i]->dtype != in[1]->dtype || in[i]->numel != pairs) {
            return ptl_error_set(PTL_ERR_RUNTIME, "_pdist_backward: expected %s of %lld "
                                 "elements and self's dtype", i == 0 ? "grad" : "pdist",
                                 (long long)pairs);
        }
    }
    for (int i = 0; i < 3; i++) {
        if ((t[i] = ptl_contiguous(in[i])) == NULL) {
            goto error;
        }
    }
    if ((out = ptl_empty(2, in[1]->sizes, in[1]->dtype, in[1]->device)) == NULL ||
        (N * M > 0 && (acc = calloc((size_t)(N * M), sizeof(double))) == NULL)) {
        if (out != NULL) {
            ptl_error_set(PTL_ERR_MEMORY, "pdist_backward: out of memory");
        }
        goto error;
    }
    const char *g = ptl_tensor_data(t[0]), *x = ptl_tensor_data(t[1]);
    const char *dist = ptl_tensor_data(t[2]);
    PtlDtype dt = in[1]->dtype;
    int kind = p_kind(p);
    for (int64_t i = 0, o = 0; i < N; i++) {
        for (int64_t j = i + 1; j < N; j++, o++) {
            double go = load(g, o, dt), d = load(dist, o, dt);
            for (int64_t k = 0; k < M; k++) {
                double diff = load(x, i * M + k, dt) - load(x, j * M + k, dt);
                double v = pdist_grad_term(kind, p, go, d, diff, dt);
                acc[i * M + k] += v;
                acc[j * M + k] -= v;
            }
        }
    }
    for (int64_t e = 0; e < N * M; e++) {
        store(ptl_tensor_data(out), e, dt, acc[e]);
    }
    free(acc);
    for (int i = 0; i < 3; i++) {
        ptl_decref(t[i]);
    }
    s[0] = ptl_iv_tensor(out);
    return 0;
error:
    free(acc);
    for (int i = 0; i < 3; i++) {
        ptl_xdecref(t[i]);
    }
    ptl_xdecref(out);
    return -1;
}

/* ---- _cdist_forward / _cdist_backward on the device path ---- */

/* Note [Device cdist]
 * ~~~~~~~~~~~~~~~~~~~
 * On CUDA tensors (and under the kernel emulation) the two ops are compositions of the
 * device's view, pointwise and reduction kernels over the differences
 * diff[.., i, j, :] = x1[.., i, :] - x2[.., j, :] ([*, P, R, M]): the forward is their vector
 * norm of order p over M, the backward the loops' formula per p (below) summed over j.  The
 * differences cost P R M elements of memory, which a kernel per row pair would not, and
 * float32 is computed in float where the CPU loops accumulate in double.  No columns
 * (M = 0) gives zero distances for every p, as the loops do. */

static PtlTensorImpl *
unsqueeze(PtlTensorImpl *t, int64_t dim)
{
    PtlIValue args[2] = {ptl_iv_tensor(t), ptl_iv_int(dim)};
    return ptl_call_tensor(PTL_OP_unsqueeze, args);
}

static PtlTensorImpl *
where(PtlTensorImpl *cond, PtlTensorImpl *a, PtlTensorImpl *b)
{
    PtlIValue args[3] = {ptl_iv_tensor(cond), ptl_iv_tensor(a), ptl_iv_tensor(b)};
    return ptl_call_tensor(PTL_OP_where_self, args);
}

static PtlTensorImpl *
pow_scalar(PtlTensorImpl *t, double e)
{
    PtlIValue args[2] = {ptl_iv_tensor(t), ptl_iv_double(e)};
    return ptl_call_tensor(PTL_OP_pow_Tensor_Scalar, args);
}

/* diff (kept in k), or NULL */
static PtlTensorImpl *
cdist_diff(PtlTemps *k, PtlTensorImpl *x1, PtlTensorImpl *x2)
{
    PtlTensorImpl *a = ptl_temps_keep(k, unsqueeze(x1, -2));
    PtlTensorImpl *b = a != NULL ? ptl_temps_keep(k, unsqueeze(x2, -3)) : NULL;
    return b != NULL ? ptl_temps_keep(k, call2(PTL_OP_sub_Tensor, a, b)) : NULL;
}

/* zeros of t's dtype and device shaped [*batch, rows, cols] after t's batch dims */
static PtlTensorImpl *
cdist_zeros(const PtlTensorImpl *t, int64_t rows, int64_t cols)
{
    int64_t sizes[PTL_MAX_DIMS];
    PtlIValue zero = ptl_iv_int(0);
    for (int d = 0; d < t->dim - 2; d++) {
        sizes[d] = t->sizes[d];
    }
    sizes[t->dim - 2] = rows;
    sizes[t->dim - 1] = cols;
    PtlTensorImpl *z = ptl_empty(t->dim, sizes, t->dtype, t->device);
    if (z != NULL && ptl_fill_scalar(z, &zero) < 0) {
        PTL_CLEAR(z);
    }
    return z;
}

static PtlTensorImpl *
cdist_forward_device(PtlTensorImpl *x1, PtlTensorImpl *x2, double p)
{
    PtlTemps k = {.n = 0};
    PtlTensorImpl *diff, *res = NULL;
    int64_t last = -1;
    if (x1->sizes[x1->dim - 1] == 0) {
        return cdist_zeros(x1, x1->sizes[x1->dim - 2], x2->sizes[x2->dim - 2]);
    }
    if ((diff = cdist_diff(&k, x1, x2)) != NULL) {
        PtlIValue args[5] = {ptl_iv_tensor(diff), ptl_iv_double(p), ptl_iv_intlist(&last, 1),
                             ptl_iv_bool(0), ptl_iv_none()};
        res = ptl_call_tensor(PTL_OP_linalg_vector_norm, args);
    }
    ptl_temps_drop(&k);
    return res;
}

/* The gradient of x1: sum over j of the term t[.., i, j, :] of p's kind, with s = sign(diff),
 * g and dist broadcast over M, and 0 where the loops give 0:
 *   p = 1: s g;  p = 2: diff g / dist;  p = inf: s g where |diff| = dist;
 *   p < 2: s |diff|^(p-1) g / dist^(p-1), also 0 where diff = 0 when p < 1;
 *   p > 2: diff |diff|^(p-2) g / dist^(p-1). */
static PtlTensorImpl *
cdist_backward_device(PtlTensorImpl *grad, PtlTensorImpl *x1, PtlTensorImpl *x2,
                      PtlTensorImpl *dist, double p)
{
    PtlTemps k = {.n = 0};
    PtlTensorImpl *res = NULL, *diff, *g, *d, *zero, *t = NULL, *q, *zd;
    int kind = p_kind(p);
    int64_t rows_dim = -2;
    if (kind == P_ZERO || x1->numel == 0 || x2->numel == 0) {
        return cdist_zeros(x1, x1->sizes[x1->dim - 2], x1->sizes[x1->dim - 1]);
    }
    if ((diff = cdist_diff(&k, x1, x2)) == NULL ||
        (g = ptl_temps_keep(&k, unsqueeze(grad, -1))) == NULL ||
        (d = ptl_temps_keep(&k, unsqueeze(dist, -1))) == NULL ||
        (zero = ptl_temps_keep(&k, ptl_scalar_tensor(0, x1->dtype, ptl_device_cpu()))) == NULL ||
        (zd = ptl_temps_keep(&k, call2(PTL_OP_eq_Tensor, d, zero))) == NULL) {
        goto done;
    }
    if (kind == P_TWO) {
        if ((q = ptl_temps_keep(&k, call2(PTL_OP_div_Tensor, g, d))) != NULL &&
            (q = ptl_temps_keep(&k, where(zd, zero, q))) != NULL) {
            t = ptl_temps_keep(&k, call2(PTL_OP_mul_Tensor, diff, q));
        }
    }
    else {
        PtlTensorImpl *sg = ptl_temps_keep(&k, call1(PTL_OP_sign, diff)), *ad = NULL, *den = NULL;
        if (sg == NULL || (sg = ptl_temps_keep(&k, call2(PTL_OP_mul_Tensor, sg, g))) == NULL ||
            (ad = ptl_temps_keep(&k, call1(PTL_OP_abs, diff))) == NULL) {
            goto done;
        }
        if (kind == P_ONE) {
            t = sg;
        }
        else if (kind == P_INF) {
            PtlTensorImpl *on = ptl_temps_keep(&k, call2(PTL_OP_eq_Tensor, ad, d));
            t = on != NULL ? ptl_temps_keep(&k, where(on, sg, zero)) : NULL;
        }
        else if ((den = ptl_temps_keep(&k, pow_scalar(d, p - 1))) != NULL) {
            /* p < 2: s g |diff|^(p-1); p > 2: s g |diff| |diff|^(p-2), diff's own formula
             * through s |diff| = diff */
            PtlTensorImpl *num = kind == P_LT_TWO
                                     ? ptl_temps_keep(&k, pow_scalar(ad, p - 1))
                                     : ptl_temps_keep(&k, pow_scalar(ad, p - 2));
            PtlTensorImpl *mask = zd;
            if (num != NULL && kind == P_GENERAL) {
                num = ptl_temps_keep(&k, call2(PTL_OP_mul_Tensor, num, diff));
                q = num != NULL ? ptl_temps_keep(&k, call2(PTL_OP_mul_Tensor, num, g)) : NULL;
            }
            else {
                q = num != NULL ? ptl_temps_keep(&k, call2(PTL_OP_mul_Tensor, sg, num)) : NULL;
            }
            if (q != NULL && kind == P_LT_TWO && p < 1) {
                PtlTensorImpl *z = ptl_temps_keep(&k, call2(PTL_OP_eq_Tensor, diff, zero));
                mask = z != NULL ? ptl_temps_keep(&k, call2(PTL_OP_logical_or, zd, z)) : NULL;
            }
            if (q != NULL && mask != NULL &&
                (q = ptl_temps_keep(&k, call2(PTL_OP_div_Tensor, q, den))) != NULL) {
                t = ptl_temps_keep(&k, where(mask, zero, q));
            }
        }
    }
    if (t != NULL) {
        PtlIValue args[4] = {ptl_iv_tensor(t), ptl_iv_intlist(&rows_dim, 1), ptl_iv_bool(0),
                             ptl_iv_none()};
        res = ptl_call_tensor(PTL_OP_sum_dim_IntList, args);
    }
done:
    ptl_temps_drop(&k);
    return res;
}

/* The product of t's batch dims (all but the last two). */
static int64_t
batch_numel(const PtlTensorImpl *t)
{
    int64_t B = 1;
    for (int d = 0; d < t->dim - 2; d++) {
        B *= t->sizes[d];
    }
    return B;
}

/* a and b are [*, X, M] / [*, Y, M] with one batch shape and dtype */
static int
same_batch(const PtlTensorImpl *a, const PtlTensorImpl *b)
{
    if (a->dim < 2 || a->dim != b->dim || a->dtype != b->dtype) {
        return 0;
    }
    for (int d = 0; d < a->dim - 2; d++) {
        if (a->sizes[d] != b->sizes[d]) {
            return 0;
        }
    }
    return 1;
}

/* _cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode) -> Tensor
 * x1 [*, P, M], x2 [*, R, M] (one batch shape and dtype: cdist expanded them) -> [*, P, R] */
static int
_cdist_forward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *x1 = NULL, *x2 = NULL, *out = NULL;
    PtlTensorImpl *a = s[0].u.t, *b = s[1].u.t;
    int64_t sizes[PTL_MAX_DIMS];
    if (!same_batch(a, b) || a->sizes[a->dim - 1] != b->sizes[b->dim - 1]) {
        return ptl_error_set(PTL_ERR_RUNTIME, "_cdist_forward: expected x1 [*, P, M] and x2 "
                             "[*, R, M] of one batch shape and dtype");
    }
    if (cdist_dtype_check(a->dtype) < 0) {
        return -1;
    }
    if (ptl_on_device_path(a) || ptl_on_device_path(b)) {
        if ((out = cdist_forward_device(a, b, ptl_iv_to_double(&s[2]))) == NULL) {
            return -1;
        }
        s[0] = ptl_iv_tensor(out);
        return 0;
    }
    int nd = a->dim;
    for (int d = 0; d < nd - 1; d++) {
        sizes[d] = a->sizes[d];
    }
    sizes[nd - 1] = b->sizes[nd - 2];
    if ((x1 = ptl_contiguous(a)) == NULL || (x2 = ptl_contiguous(b)) == NULL ||
        (out = ptl_empty(nd, sizes, a->dtype, a->device)) == NULL) {
        goto error;
    }
    double p = ptl_iv_to_double(&s[2]);
    CdistCtx c = {ptl_tensor_data(x1), ptl_tensor_data(x2), NULL, NULL, ptl_tensor_data(out),
                  a->sizes[nd - 2], b->sizes[nd - 2], a->sizes[nd - 1], p, p_kind(p), a->dtype};
    if (cdist_run(&c, batch_numel(a) * c.P, cdist_forward_rows) < 0) {
        goto error;
    }
    ptl_decref(x1);
    ptl_decref(x2);
    s[0] = ptl_iv_tensor(out);
    return 0;
error:
    ptl_xdecref(x1);
    ptl_xdecref(x2);
    ptl_xdecref(out);
    return -1;
}

/* _cdist_backward(Tensor grad, Tensor x1, Tensor x2, float p, Tensor cdist) -> Tensor
 * grad, cdist [*, P, R]; x1 [*, P, M]; x2 [*, R, M] -> the gradient of x1 [*, P, M] */
static int
_cdist_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *t[4] = {NULL, NULL, NULL, NULL}, *out = NULL;
    PtlTensorImpl *in[4] = {s[0].u.t, s[1].u.t, s[2].u.t, s[4].u.t};
    double p = ptl_iv_to_double(&s[3]);

    if (cdist_dtype_check(in[1]->dtype) < 0) {
        return -1;
    }
    for (int i = 0; i < 4; i++) {
        if (!same_batch(in[i], in[1])) {
            return ptl_error_set(PTL_ERR_RUNTIME, "_cdist_backward: expected tensors of one "
                                 "batch shape and dtype");
        }
        if ((t[i] = ptl_contiguous(in[i])) == NULL) {
            goto error;
        }
    }
    int nd = in[1]->dim;
    const int64_t *x1s = in[1]->sizes + nd - 2, *x2s = in[2]->sizes + nd - 2;
    for (int i = 0; i < 4; i += 3) {
        const int64_t *gs = in[i]->sizes + nd - 2;
        if (gs[0] != x1s[0] || gs[1] != x2s[0]) {
            ptl_error_set(PTL_ERR_RUNTIME,
                          "_cdist_backward: expected %s of size [..., %lld, %lld] (x1's rows by "
                          "x2's rows), but got [..., %lld, %lld]",
                          i == 0 ? "grad" : "cdist", (long long)x1s[0], (long long)x2s[0],
                          (long long)gs[0], (long long)gs[1]);
            goto error;
        }
    }
    if (x1s[1] != x2s[1]) {
        ptl_error_set(PTL_ERR_RUNTIME,
                      "_cdist_backward: X1 and X2 must have the same number of columns. X1: %lld "
                      "X2: %lld",
                      (long long)x1s[1], (long long)x2s[1]);
        goto error;
    }
    if (ptl_on_device_path(in[1]) || ptl_on_device_path(in[2])) {
        if ((out = cdist_backward_device(t[0], t[1], t[2], t[3], p)) == NULL) {
            goto error;
        }
    }
    else {
        if ((out = ptl_empty(nd, in[1]->sizes, in[1]->dtype, in[1]->device)) == NULL) {
            goto error;
        }
        CdistCtx c = {ptl_tensor_data(t[1]), ptl_tensor_data(t[2]), ptl_tensor_data(t[0]),
                      ptl_tensor_data(t[3]), ptl_tensor_data(out), in[1]->sizes[nd - 2],
                      in[2]->sizes[nd - 2], in[1]->sizes[nd - 1], p, p_kind(p), in[1]->dtype};
        if (cdist_run(&c, batch_numel(in[1]) * c.P, cdist_backward_rows) < 0) {
            goto error;
        }
    }
    for (int i = 0; i < 4; i++) {
        ptl_decref(t[i]);
    }
    s[0] = ptl_iv_tensor(out);
    return 0;
error:
    for (int i = 0; i < 4; i++) {
        ptl_xdecref(t[i]);
    }
    ptl_xdecref(out);
    return -1;
}

/* _cdist_forward on x1 [*, P, M], x2 [*, R, M] whose batch dims broadcast: both expanded
 * to the common batch shape first when they differ (new ref) */
static PtlTensorImpl *
cdist_direct(PtlTensorImpl *x1, PtlTensorImpl *x2, double p)
{
    int64_t e1[PTL_MAX_DIMS], e2[PTL_MAX_DIMS];
    int nb1 = x1->dim - 2, nb2 = x2->dim - 2, nb = nb1 > nb2 ? nb1 : nb2;
    PtlTensorImpl *a = NULL, *b = NULL, *res = NULL;

    if (same_batch(x1, x2)) {
        PtlIValue args[4] = {ptl_iv_tensor(x1), ptl_iv_tensor(x2), ptl_iv_double(p),
                             ptl_iv_none()};
        return ptl_call_tensor(PTL_OP__cdist_forward, args);
    }
    for (int k = 0; k < nb; k++) {
        int64_t s1 = k - (nb - nb1) >= 0 ? x1->sizes[k - (nb - nb1)] : 1;
        int64_t s2 = k - (nb - nb2) >= 0 ? x2->sizes[k - (nb - nb2)] : 1;
        if (s1 != s2 && s1 != 1 && s2 != 1) {
            ptl_error_set(PTL_ERR_RUNTIME, "The size of tensor a (%lld) must match the size of "
                          "tensor b (%lld) at non-singleton dimension %d", (long long)s1,
                          (long long)s2, k);
            return NULL;
        }
        e1[k] = e2[k] = s1 == 1 ? s2 : s1;
    }
    e1[nb] = x1->sizes[nb1];
    e1[nb + 1] = x1->sizes[nb1 + 1];
    e2[nb] = x2->sizes[nb2];
    e2[nb + 1] = x2->sizes[nb2 + 1];
    PtlIValue ex1[3] = {ptl_iv_tensor(x1), ptl_iv_intlist(e1, nb + 2), ptl_iv_bool(0)};
    PtlIValue ex2[3] = {ptl_iv_tensor(x2), ptl_iv_intlist(e2, nb + 2), ptl_iv_bool(0)};
    if ((a = ptl_call_tensor(PTL_OP_expand, ex1)) != NULL &&
        (b = ptl_call_tensor(PTL_OP_expand, ex2)) != NULL) {
        PtlIValue args[4] = {ptl_iv_tensor(a), ptl_iv_tensor(b), ptl_iv_double(p),
                             ptl_iv_none()};
        res = ptl_call_tensor(PTL_OP__cdist_forward, args);
    }
    ptl_xdecref(a);
    ptl_xdecref(b);
    return res;
}

/* cdist(Tensor x1, Tensor x2, float p=2, int? compute_mode=None) -> Tensor
 * x1 [*, P, M], x2 [*, R, M] -> [*, P, R]: the p-norm distance of every row pair, the batch
 * dims broadcast.  compute_mode: None/0 uses the matmul path for p = 2 when P > 25 or
 * R > 25, 1 always for p = 2, 2 never (torch.cdist maps its strings to these). */
int
ptl_cdist_check(const PtlTensorImpl *x1, const PtlTensorImpl *x2)
{
    if (x1->dim < 2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "cdist only supports at least 2D tensors, X1 got: "
                             "%dD", x1->dim);
    }
    if (x2->dim < 2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "cdist only supports at least 2D tensors, X2 got: "
                             "%dD", x2->dim);
    }
    int64_t c1 = x1->sizes[x1->dim - 1], c2 = x2->sizes[x2->dim - 1];
    if (c1 != c2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "X1 and X2 must have the same number of columns. "
                             "X1: %lld X2: %lld", (long long)c1, (long long)c2);
    }
    if (!ptl_dtype_is_floating(x1->dtype)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "cdist only supports floating-point dtypes, X1 "
                             "got: %s", ptl_dtype_legacy_name(x1->dtype));
    }
    if (!ptl_dtype_is_floating(x2->dtype)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "cdist only supports floating-point dtypes, X2 "
                             "got: %s", ptl_dtype_legacy_name(x2->dtype));
    }
    return 0;
}

static int
cdist_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *x1 = s[0].u.t, *x2 = s[1].u.t, *res;
    double p = ptl_iv_to_double(&s[2]);
    int64_t mode = s[3].tag == PTL_IV_NONE ? 0 : s[3].u.i;

    if (ptl_cdist_check(x1, x2) < 0) {
        return -1;
    }
    if (!(p >= 0)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "cdist only supports non-negative p values");
    }
    if (x1->dtype != x2->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME, "expected scalar type %s but found %s",
                             ptl_dtype_legacy_name(x1->dtype), ptl_dtype_legacy_name(x2->dtype));
    }
    if (cdist_dtype_check(x1->dtype) < 0) {
        return -1;
    }
    if (mode < 0 || mode > 2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%lld is not a valid value for compute_mode",
                             (long long)mode);
    }
    int64_t P = x1->sizes[x1->dim - 2], R = x2->sizes[x2->dim - 2];
    if (p == 2 && (mode == 1 || (mode == 0 && (P > 25 || R > 25)))) {
        res = euclidean_dist(x1, x2);
    }
    else {
        res = cdist_direct(x1, x2, p);
    }
    if (res == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(res);
    return 0;
}

/* op(a, b[, alpha=1]) redispatched with ks (below autograd); new ref or NULL */
static PtlTensorImpl *
redispatch2(PtlDispatchKeySet ks, PtlOpId id, PtlTensorImpl *a, PtlTensorImpl *b)
{
    PtlIValue args[3] = {ptl_iv_tensor(a), ptl_iv_tensor(b), ptl_iv_int(1)};
    return ptl_dispatcher_redispatch(ptl_op(id), ks, args) < 0 ? NULL : args[0].u.t;
}

/* self * where(norm > maxnorm, maxnorm / (norm + 1e-7), 1), the norm of each slice along
 * dim: the norm and the product redispatched with ks, the factor's ops (of the norm's real
 * dtype, a complex self's too) with the keys below Complex (new ref) */
static PtlTensorImpl *
renorm_of(PtlDispatchKeySet ks, PtlTensorImpl *self, const PtlIValue *s)
{
    double p = ptl_iv_to_double(&s[1]), maxnorm = ptl_iv_to_double(&s[3]);
    int64_t dim = s[2].u.i, dims[PTL_MAX_DIMS];
    PtlTensorImpl *nr = NULL, *den = NULL, *q = NULL, *big = NULL, *fac = NULL, *res = NULL;
    PtlTensorImpl *mx = NULL, *one = NULL, *eps = NULL;
    PtlDispatchKeySet real_ks = ks & ptl_keyset_below(PTL_KEY_COMPLEX);
    int n = 0;

    if (ptl_wrap_dim(&dim, self->dim) < 0) {
        return NULL;
    }
    if (!(p > 0)) {
        ptl_error_set(PTL_ERR_RUNTIME, "renorm: non-positive-norm not supported");
        return NULL;
    }
    if (maxnorm < 0) {
        ptl_error_set(PTL_ERR_RUNTIME, "renorm: expected maxnorm to be >= 0 but got %g", maxnorm);
        return NULL;
    }
    if (self->dim <= 1) {
        ptl_error_set(PTL_ERR_RUNTIME, "renorm: input needs at least 2 dimensions, got %d "
                      "dimensions", self->dim);
        return NULL;
    }
    for (int d = 0; d < self->dim; d++) {
        if (d != dim) {
            dims[n++] = d;
        }
    }
    PtlIValue nargs[5] = {ptl_iv_tensor(self), s[1], ptl_iv_intlist(dims, n), ptl_iv_bool(1),
                          ptl_iv_none()};
    if (ptl_dispatcher_redispatch(ptl_op(PTL_OP_linalg_vector_norm), ks, nargs) < 0) {
        return NULL;
    }
    nr = nargs[0].u.t;
    /* host scalars: 0-dim CPU operands, which a CUDA self's ops take by value */
    if ((mx = ptl_scalar_tensor(maxnorm, nr->dtype, ptl_device_cpu())) == NULL ||
        (one = ptl_scalar_tensor(1, nr->dtype, ptl_device_cpu())) == NULL ||
        (eps = ptl_scalar_tensor(1e-7, nr->dtype, ptl_device_cpu())) == NULL ||
        (den = redispatch2(real_ks, PTL_OP_add_Tensor, nr, eps)) == NULL ||
        (q = redispatch2(real_ks, PTL_OP_div_Tensor, mx, den)) == NULL ||
        (big = redispatch2(real_ks, PTL_OP_gt_Tensor, nr, mx)) == NULL) {
        goto error;
    }
    PtlIValue w[3] = {ptl_iv_tensor(big), ptl_iv_tensor(q), ptl_iv_tensor(one)};
    if (ptl_dispatcher_redispatch(ptl_op(PTL_OP_where_self), real_ks, w) < 0) {
        goto error;
    }
    fac = w[0].u.t;
    res = redispatch2(ks, PTL_OP_mul_Tensor, self, fac);
error:
    ptl_xdecref(mx);
    ptl_xdecref(one);
    ptl_xdecref(eps);
    ptl_xdecref(nr);
    ptl_xdecref(den);
    ptl_xdecref(q);
    ptl_xdecref(big);
    ptl_xdecref(fac);
    return res;
}

/* renorm(Tensor self, Scalar p, int dim, Scalar maxnorm) -> Tensor
 * renorm_(Tensor(a!) self, Scalar p, int dim, Scalar maxnorm) -> Tensor(a!)
 * [*] -> [*]: each slice along dim whose p-norm exceeds maxnorm scaled down to maxnorm.
 * Derivative: RenormBackward0 (autograd/derivatives/linalg_norm.c).  A complex self's
 * kernel (complex_norm.c) calls it with the Complex key in ks. */
int
ptl_renorm_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *self = s[0].u.t, *res;

    if ((res = renorm_of(ks, self, s)) == NULL) {
        return -1;
    }
    if (!op->schema.inplace) {
        s[0] = ptl_iv_tensor(res);
        return 0;
    }
    int rc = ptl_copy_into(self, res);
    ptl_decref(res);
    if (rc < 0) {
        return -1;
    }
    return ptl_kernel_return_self(s);
}

static const PtlKernelReg linalg_norm_kernels[] = {
    {PTL_OP_linalg_vector_norm, PTL_KEY_CPU, linalg_vector_norm_cpu},
    {PTL_OP_cdist, PTL_KEY_COMPOSITE_IMPLICIT, cdist_composite},
    {PTL_OP__cdist_forward, PTL_KEY_CPU, _cdist_forward_cpu},
    {PTL_OP__cdist_backward, PTL_KEY_CPU, _cdist_backward_cpu},
    {PTL_OP__pdist_forward, PTL_KEY_CPU, _pdist_forward_cpu},
    {PTL_OP__pdist_backward, PTL_KEY_CPU, _pdist_backward_cpu},
    {PTL_OP_renorm, PTL_KEY_CPU, ptl_renorm_cpu},
    {PTL_OP_renorm_, PTL_KEY_CPU, ptl_renorm_cpu},
};
PTL_DEFINE_REGISTER(linalg_norm_kernels)
