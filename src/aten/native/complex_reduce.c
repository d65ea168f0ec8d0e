/* complex_reduce.c -- the complex64/complex128 kernels of the scans and folds at the Complex
 * dispatch key: cumsum, cumprod, prod, trace, count_nonzero, nonzero, all, any, var and
 * std (and var_mean, std_mean), logsumexp.  Mirrors the
 * complex paths of ATen/native/ReduceOps.cpp (cumsum, cumprod, prod, trace) and
 * TensorAdvancedIndexing.cpp (count_nonzero, nonzero).  See Note [Complex dtypes] in
 * complex.c, and Note [Complex folds] below.
 *
 * Note [Complex folds]
 * ~~~~~~~~~~~~~~~~~~~~
 * The linear ones reuse the real kernels where those are fast: cumsum along a dim of stride
 * other than 1 runs the real scan on view_as_real(self) (the parts scan independently, and
 * the scan's tiles walk rows in memory order), var and std add the parts' variances, and
 * logsumexp is PyTorch's composite.  trace sums the diagonal where it lies (on the CPU; the
 * view and sum's dispatch cost more than a short diagonal).  count_nonzero, nonzero, all and
 * any ask self != 0 first (on the CPU a bool mask of the parts' bits, or the count itself):
 * a NaN part counts as nonzero, -0.0 as zero, as PyTorch's `!= 0`.
 * The scans along a unit-stride dim and cumprod along any walk self's rows where they lie
 * (any strides); prod folds self made contiguous, a row in interleaved partial products,
 * columns a block of them at a time.
 * Sums, scans and complex128 products are accumulated in complex128, products by the
 * textbook formula (ptl_cmul, as PyTorch's).  A complex64 prod runs, where the CPU has AVX2,
 * in 32 float lanes (a row) or a float lane a column, as PyTorch's, whose complex<float>
 * product accumulates in complex<float>; a row's lanes are joined in complex128.  A lane
 * whose partial product left float's normal range (an overflow, an underflow, a zero or NaN
 * factor) has its row or column refolded in complex128 and rounded once, so a complex64
 * product overflows only where its result does (PyTorch's prod of 1e30, 1e30, 1e-30 is inf,
 * ours 1e30); an underflow on the way that later factors undo is not seen (PyTorch's
 * class).  Without AVX2, and for cumprod, complex64 accumulates in complex128 throughout.
 * A dtype= argument converts self first; a real one takes the real parts (PyTorch's cast,
 * with copy_'s warning) and runs the real kernel. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef __x86_64__
#include <immintrin.h>
#endif

#include "../../c10/cpu_features.h"
#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "../complex_math.h"
#include "native.h"

/* The real kernel's "\"<op>_cuda\" not implemented" for a complex tensor off the CPU (none
 * has a complex kernel there yet: Note [Complex dtypes]). */
static int
off_cpu_refusal(const PtlOperator *op, const PtlTensorImpl *self)
{
    char kname[80];
    ptl_kernel_name(op, kname, sizeof(kname));
    memcpy(kname + strlen(kname) - 3, "cuda", 5);
    return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'", kname,
                         ptl_dtype_legacy_name(self->dtype));
}

/* op called with its arguments s but self (s[0]) replaced by t (borrowed); its results in
 * s on success.  0 or -1. */
static int
call_with_self(const PtlOperator *op, PtlIValue *s, PtlTensorImpl *t)
{
    PtlIValue st[PTL_SCHEMA_MAX_ARGS];
    for (int i = 0; i < op->schema.nargs; i++) {
        st[i] = s[i];
    }
    st[0] = ptl_iv_tensor(t);
    if (ptl_dispatcher_call(op, st) < 0) {
        return -1;
    }
    for (int i = 0; i < op->schema.nrets; i++) {
        s[i] = st[i];
    }
    return 0;
}

/* The op's dtype= argument (at `at`) applied: 1 when a real dtype sent the call to the real
 * kernel (its status in *rc), else 0 with *x a new reference to self in the complex dtype
 * to fold (NULL, with *rc = -1, on error). */
static int
apply_dtype(const PtlOperator *op, PtlIValue *s, int at, PtlTensorImpl **x, int *rc)
{
    PtlTensorImpl *self = s[0].u.t;
    PtlDtype dt = s[at].tag == PTL_IV_DTYPE ? s[at].u.dtype : self->dtype;
    *rc = -1;
    *x = NULL;
    if (dt == self->dtype) {
        ptl_incref(self);
        *x = self;
        return 0;
    }
    PtlTensorImpl *c = ptl_cast(self, dt);
    if (c == NULL) {
        return 1;
    }
    if (ptl_dtype_is_complex(dt)) {
        *x = c;
        return 0;
    }
    *rc = call_with_self(op, s, c);   /* dtype= kept: an integral one is the result's */
    ptl_decref(c);
    return 1;
}

/* The start of prod, cumsum and cumprod: the dim at s[1] wrapped into *d (has_dim), dtype=
 * at `at` applied (apply_dtype) and a tensor off the CPU refused.  0 with *x a new
 * reference to fold, or 1 with *rc the call's status (the real kernel ran, or an error). */
static int
fold_input(const PtlOperator *op, PtlIValue *s, int has_dim, int at, int64_t *d,
           PtlTensorImpl **x, int *rc)
{
    *rc = -1;
    *d = has_dim ? s[1].u.i : 0;
    if ((has_dim && ptl_wrap_dim(d, s[0].u.t->dim) < 0) || apply_dtype(op, s, at, x, rc)) {
        return 1;
    }
    if ((*x)->device.type != PTL_DEVICE_CPU) {
        *rc = off_cpu_refusal(op, *x);
        PTL_CLEAR(*x);
        return 1;
    }
    return 0;
}

/* ---- products along one dim ---- */

/* o[k * os] = the sum or product of x[0..k], read xs bytes apart, for k < n */
typedef void (*RowFold)(char *o, int64_t os, const char *x, int64_t xs, int64_t n);

/* The product of n contiguous complex numbers in four interleaved partial products (one
 * chain of dependent multiplications ran at a quarter of the multiplier's rate: 0.1x
 * PyTorch's time on rows of 1024), joined at the end. */
#define DEFINE_PROD_ROW(NAME, T)                                                           \
    static ptl_complex128                                                                  \
    NAME(const T *x, int64_t n)                                                            \
    {                                                                                      \
        ptl_complex128 p0 = 1, p1 = 1, p2 = 1, p3 = 1;                                     \
        int64_t i = 0;                                                                     \
        for (; i + 4 <= n; i += 4) {                                                       \
            p0 = ptl_cmul(p0, (ptl_complex128)x[i]);                                       \
            p1 = ptl_cmul(p1, (ptl_complex128)x[i + 1]);                                   \
            p2 = ptl_cmul(p2, (ptl_complex128)x[i + 2]);                                   \
            p3 = ptl_cmul(p3, (ptl_complex128)x[i + 3]);                                   \
        }                                                                                  \
        for (; i < n; i++) {                                                               \
            p0 = ptl_cmul(p0, (ptl_complex128)x[i]);                                       \
        }                                                                                  \
        return ptl_cmul(ptl_cmul(p0, p1), ptl_cmul(p2, p3));                               \
    }
DEFINE_PROD_ROW(prod_row_c8, ptl_complex64)
DEFINE_PROD_ROW(prod_row_c16, ptl_complex128)
#undef DEFINE_PROD_ROW

#ifdef __x86_64__
#define PROD_AVX2 __attribute__((target("avx2,fma")))

/* The product in complex128 of the n complex64 at x, `stride` elements apart (a column
 * whose float lane left float's range is refolded so: Note [Complex folds]) */
static ptl_complex128
prod_strided_c8(const ptl_complex64 *x, int64_t n, int64_t stride)
{
    ptl_complex128 p = 1;
    for (int64_t i = 0; i < n; i++) {
        p = ptl_cmul(p, (ptl_complex128)x[i * stride]);
    }
    return p;
}

/* Whether a float lane's partial product (re, im) lies in float's normal range */
static inline int
lane_in_range(float re, float im)
{
    float a = fabsf(re) + fabsf(im);
    return a >= FLT_MIN && a <= FLT_MAX;
}

/* (ar, ai) *= (br, bi), lane by lane, by the textbook formula */
PROD_AVX2 static inline void
cmul_ps(__m256 *ar, __m256 *ai, __m256 br, __m256 bi)
{
    __m256 r = _mm256_fmsub_ps(*ar, br, _mm256_mul_ps(*ai, bi));
    *ai = _mm256_fmadd_ps(*ar, bi, _mm256_mul_ps(*ai, br));
    *ar = r;
}

PROD_AVX2 static inline void
cmul_pd(__m256d *ar, __m256d *ai, __m256d br, __m256d bi)
{
    __m256d r = _mm256_fmsub_pd(*ar, br, _mm256_mul_pd(*ai, bi));
    *ai = _mm256_fmadd_pd(*ar, bi, _mm256_mul_pd(*ai, br));
    *ar = r;
}

/* Four sets of lanes (r[k], m[k]): their real and imaginary parts, set to 1 or stored */
PROD_AVX2 static inline void
lanes_one_ps(__m256 *r, __m256 *m)
{
    for (int k = 0; k < 4; k++) {
        r[k] = _mm256_set1_ps(1.0f);
        m[k] = _mm256_setzero_ps();
    }
}

PROD_AVX2 static inline void
lanes_store_ps(const __m256 *r, const __m256 *m, float *re, float *im)
{
    for (int k = 0; k < 4; k++) {
        _mm256_storeu_ps(re + 8 * k, r[k]);
        _mm256_storeu_ps(im + 8 * k, m[k]);
    }
}

PROD_AVX2 static inline void
lanes_one_pd(__m256d *r, __m256d *m)
{
    for (int k = 0; k < 4; k++) {
        r[k] = _mm256_set1_pd(1.0);
        m[k] = _mm256_setzero_pd();
    }
}

PROD_AVX2 static inline void
lanes_store_pd(const __m256d *r, const __m256d *m, double *re, double *im)
{
    for (int k = 0; k < 4; k++) {
        _mm256_storeu_pd(re + 4 * k, r[k]);
        _mm256_storeu_pd(im + 4 * k, m[k]);
    }
}

/* The lanes times 16 complex64 at f (32 floats): their parts split by two shuffles, lane k
 * of (r[0], m[0]) taking element PERM_C8[k], lane k of (r[1], m[1]) element 8 + PERM_C8[k] */
static const int PERM_C8[8] = {0, 1, 4, 5, 2, 3, 6, 7};
PROD_AVX2 static inline void
mul16_c8(const float *f, __m256 *r, __m256 *m)
{
    __m256 v0 = _mm256_loadu_ps(f), v1 = _mm256_loadu_ps(f + 8);
    __m256 v2 = _mm256_loadu_ps(f + 16), v3 = _mm256_loadu_ps(f + 24);
    cmul_ps(&r[0], &m[0], _mm256_shuffle_ps(v0, v1, 0x88), _mm256_shuffle_ps(v0, v1, 0xDD));
    cmul_ps(&r[1], &m[1], _mm256_shuffle_ps(v2, v3, 0x88), _mm256_shuffle_ps(v2, v3, 0xDD));
}

/* The lanes times 8 complex128 at f (16 doubles), lane k of (r[0], m[0]) taking element
 * PERM_C16[k], of (r[1], m[1]) element 4 + PERM_C16[k] */
static const int PERM_C16[4] = {0, 2, 1, 3};
PROD_AVX2 static inline void
mul8_c16(const double *f, __m256d *r, __m256d *m)
{
    __m256d v0 = _mm256_loadu_pd(f), v1 = _mm256_loadu_pd(f + 4);
    __m256d v2 = _mm256_loadu_pd(f + 8), v3 = _mm256_loadu_pd(f + 12);
    cmul_pd(&r[0], &m[0], _mm256_unpacklo_pd(v0, v1), _mm256_unpackhi_pd(v0, v1));
    cmul_pd(&r[1], &m[1], _mm256_unpacklo_pd(v2, v3), _mm256_unpackhi_pd(v2, v3));
}

/* The product of n contiguous complex64 in 32 float lanes, joined in complex128 with the
 * tail's; 0 when a lane's partial left float's normal range (the caller refolds). */
PROD_AVX2 static int
prod_row_c8_avx2(const ptl_complex64 *x, int64_t n, ptl_complex128 *p)
{
    const float *f = (const float *)x;
    __m256 r[4], m[4];
    float re[32], im[32];
    int64_t i = 0;
    int ok = 1;
    lanes_one_ps(r, m);
    for (; i + 32 <= n; i += 32) {
        mul16_c8(f + 2 * i, r, m);
        mul16_c8(f + 2 * i + 32, r + 2, m + 2);
    }
    for (; i + 16 <= n; i += 16) {
        mul16_c8(f + 2 * i, r, m);
    }
    *p = prod_row_c8(x + i, n - i);
    lanes_store_ps(r, m, re, im);
    for (int k = 0; k < 32; k++) {
        ok &= lane_in_range(re[k], im[k]);
        *p = ptl_cmul(*p, ptl_cmplx(re[k], im[k]));
    }
    return ok;
}

/* The product of n contiguous complex128 in 16 double lanes, joined with the tail's */
PROD_AVX2 static ptl_complex128
prod_row_c16_avx2(const ptl_complex128 *x, int64_t n)
{
    const double *f = (const double *)x;
    __m256d r[4], m[4];
    double re[16], im[16];
    int64_t i = 0;
    lanes_one_pd(r, m);
    for (; i + 16 <= n; i += 16) {
        mul8_c16(f + 2 * i, r, m);
        mul8_c16(f + 2 * i + 16, r + 2, m + 2);
    }
    for (; i + 8 <= n; i += 8) {
        mul8_c16(f + 2 * i, r, m);
    }
    ptl_complex128 p = prod_row_c16(x + i, n - i);
    lanes_store_pd(r, m, re, im);
    for (int k = 0; k < 16; k++) {
        p = ptl_cmul(p, ptl_cmplx(re[k], im[k]));
    }
    return p;
}

/* out[c] = the product over i < n of x[i * inner + c], for the w (16 or 32) columns c < w:
 * a lane per column, float's; a column whose lane left float's normal range refolded */
PROD_AVX2 static void
prod_cols_c8_avx2(const ptl_complex64 *x, int64_t n, int64_t inner, int w, ptl_complex64 *out)
{
    __m256 r[4], m[4];
    float re[32], im[32];
    lanes_one_ps(r, m);
    for (int64_t i = 0; i < n; i++) {
        const float *f = (const float *)(x + i * inner);
        mul16_c8(f, r, m);
        if (w == 32) {
            mul16_c8(f + 32, r + 2, m + 2);
        }
    }
    lanes_store_ps(r, m, re, im);
    for (int k = 0; k < w; k++) {
        int c = k / 8 * 8 + PERM_C8[k % 8];
        out[c] = lane_in_range(re[k], im[k])
                     ? ptl_cmplxf(re[k], im[k])
                     : (ptl_complex64)prod_strided_c8(x + c, n, inner);
    }
}

/* As prod_cols_c8_avx2 for w (8 or 16) complex128 columns, in double lanes */
PROD_AVX2 static void
prod_cols_c16_avx2(const ptl_complex128 *x, int64_t n, int64_t inner, int w,
                   ptl_complex128 *out)
{
    __m256d r[4], m[4];
    double re[16], im[16];
    lanes_one_pd(r, m);
    for (int64_t i = 0; i < n; i++) {
        const double *f = (const double *)(x + i * inner);
        mul8_c16(f, r, m);
        if (w == 16) {
            mul8_c16(f + 16, r + 2, m + 2);
        }
    }
    lanes_store_pd(r, m, re, im);
    for (int k = 0; k < w; k++) {
        out[k / 4 * 4 + PERM_C16[k % 4]] = ptl_cmplx(re[k], im[k]);
    }
}

/* prod_columns' AVX2 path: each [n, inner] slab of x by blocks of 32 and 16 columns
 * (complex128: 16 and 8), the last few columns one at a time */
static void
prod_columns_avx2(PtlTensorImpl *out, PtlTensorImpl *x, int64_t outer, int64_t n,
                  int64_t inner)
{
    const int c16 = x->dtype == PTL_DTYPE_COMPLEX128, w = c16 ? 16 : 32;
    for (int64_t o = 0; o < outer; o++) {
        int64_t j = 0;
        if (c16) {
            const ptl_complex128 *xs = (const ptl_complex128 *)ptl_tensor_data(x) + o * n * inner;
            ptl_complex128 *os = (ptl_complex128 *)ptl_tensor_data(out) + o * inner;
            while (j + w / 2 <= inner) {
                int step = j + w <= inner ? w : w / 2;
                prod_cols_c16_avx2(xs + j, n, inner, step, os + j);
                j += step;
            }
            for (; j < inner; j++) {
                ptl_complex128 p = 1;
                for (int64_t i = 0; i < n; i++) {
                    p = ptl_cmul(p, xs[i * inner + j]);
                }
                os[j] = p;
            }
        }
        else {
            const ptl_complex64 *xs = (const ptl_complex64 *)ptl_tensor_data(x) + o * n * inner;
            ptl_complex64 *os = (ptl_complex64 *)ptl_tensor_data(out) + o * inner;
            while (j + w / 2 <= inner) {
                int step = j + w <= inner ? w : w / 2;
                prod_cols_c8_avx2(xs + j, n, inner, step, os + j);
                j += step;
            }
            for (; j < inner; j++) {
                os[j] = (ptl_complex64)prod_strided_c8(xs + j, n, inner);
            }
        }
    }
}
#undef PROD_AVX2
#endif

static void
cumprod_row_c8(char *o, int64_t os, const char *x, int64_t xs, int64_t n)
{
    ptl_complex128 acc = 1;
    for (int64_t i = 0; i < n; i++) {
        const ptl_complex64 v = *(const ptl_complex64 *)(x + i * xs);
        acc = ptl_cmul(acc, (ptl_complex128)v);
        *(ptl_complex64 *)(o + i * os) = (ptl_complex64)acc;
    }
}

static void
cumprod_row_c16(char *o, int64_t os, const char *x, int64_t xs, int64_t n)
{
    ptl_complex128 acc = 1;
    for (int64_t i = 0; i < n; i++) {
        acc = ptl_cmul(acc, *(const ptl_complex128 *)(x + i * xs));
        *(ptl_complex128 *)(o + i * os) = acc;
    }
}

static void
cumsum_row_c8(char *o, int64_t os, const char *x, int64_t xs, int64_t n)
{
    ptl_complex128 acc = 0;
    for (int64_t i = 0; i < n; i++) {
        const ptl_complex64 v = *(const ptl_complex64 *)(x + i * xs);
        acc += (ptl_complex128)v;
        *(ptl_complex64 *)(o + i * os) = (ptl_complex64)acc;
    }
}

static void
cumsum_row_c16(char *o, int64_t os, const char *x, int64_t xs, int64_t n)
{
    ptl_complex128 acc = 0;
    for (int64_t i = 0; i < n; i++) {
        acc += *(const ptl_complex128 *)(x + i * xs);
        *(ptl_complex128 *)(o + i * os) = acc;
    }
}

/* fold(out's row, x's row) for every index of x's dims but d (out: x's dims, size 1 at d
 * for a product, x's size for a cumulative one); d = -1 folds a 0-dim x's one element. */
static void
for_each_row(PtlTensorImpl *out, PtlTensorImpl *x, int d, RowFold fold)
{
    const int64_t isz = (int64_t)ptl_tensor_itemsize(x);
    int64_t idx[PTL_MAX_DIMS] = {0}, rows = 1;
    int64_t n = d >= 0 ? x->sizes[d] : 1;
    int64_t xs = d >= 0 ? x->strides[d] * isz : 0, os = d >= 0 ? out->strides[d] * isz : 0;
    char *ob = ptl_tensor_data(out);
    const char *xb = ptl_tensor_data(x);
    for (int k = 0; k < x->dim; k++) {
        rows *= k != d ? x->sizes[k] : 1;
    }
    for (int64_t r = 0; r < rows; r++) {
        int64_t xo = 0, oo = 0;
        for (int k = 0; k < x->dim; k++) {
            xo += k != d ? idx[k] * x->strides[k] : 0;
            oo += k != d ? idx[k] * out->strides[k] : 0;
        }
        fold(ob + oo * isz, os, xb + xo * isz, xs, n);
        for (int k = x->dim - 1; k >= 0; k--) {
            if (k == d) {
                continue;
            }
            if (++idx[k] < x->sizes[k]) {
                break;
            }
            idx[k] = 0;
        }
    }
}

/* The product of n contiguous complex64 (complex128), in lanes where the CPU has AVX2 */
static ptl_complex128
prod_c8(const ptl_complex64 *x, int64_t n)
{
#ifdef __x86_64__
    ptl_complex128 p;
    if (ptl_cpu_capability() >= PTL_CPU_AVX2 && prod_row_c8_avx2(x, n, &p)) {
        return p;
    }
#endif
    return prod_row_c8(x, n);
}

static ptl_complex128
prod_c16(const ptl_complex128 *x, int64_t n)
{
#ifdef __x86_64__
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        return prod_row_c16_avx2(x, n);
    }
#endif
    return prod_row_c16(x, n);
}

/* out[o * inner + j] = the product over i < n of x[(o * n + i) * inner + j] (x contiguous,
 * [outer, n, inner]; out [outer, inner]): the rows of x in memory order, one partial
 * product per column in acc (inner of them), so the multiplications of a row are
 * independent.  0, or -1 out of memory. */
static int
prod_columns(PtlTensorImpl *out, PtlTensorImpl *x, int64_t outer, int64_t n, int64_t inner)
{
    const int c16 = x->dtype == PTL_DTYPE_COMPLEX128;
#ifdef __x86_64__
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        prod_columns_avx2(out, x, outer, n, inner);
        return 0;
    }
#endif
    ptl_complex128 *acc = malloc(sizeof(ptl_complex128) * (size_t)inner);
    if (acc == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory for %lld partial products",
                             (long long)inner);
    }
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t j = 0; j < inner; j++) {
            acc[j] = 1;
        }
        for (int64_t i = 0; i < n; i++) {
            int64_t at = (o * n + i) * inner;
            if (c16) {
                const ptl_complex128 *r = (const ptl_complex128 *)ptl_tensor_data(x) + at;
                for (int64_t j = 0; j < inner; j++) {
                    acc[j] = ptl_cmul(acc[j], r[j]);
                }
            }
            else {
                const ptl_complex64 *r = (const ptl_complex64 *)ptl_tensor_data(x) + at;
                for (int64_t j = 0; j < inner; j++) {
                    acc[j] = ptl_cmul(acc[j], (ptl_complex128)r[j]);
                }
            }
        }
        for (int64_t j = 0; j < inner; j++) {
            if (c16) {
                ((ptl_complex128 *)ptl_tensor_data(out))[o * inner + j] = acc[j];
            }
            else {
                ((ptl_complex64 *)ptl_tensor_data(out))[o * inner + j] = (ptl_complex64)acc[j];
            }
        }
    }
    free(acc);
    return 0;
}

/* prod(Tensor self, *, ScalarType? dtype=None) -> Tensor: [*] -> [];
 * prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None): [*]
 * without dim (size 1 with keepdim); an empty product is 1.  self contiguous (copied so
 * where it is not) as [outer, n, inner]: rows of n (inner = 1, all of self one row) fold in
 * four partial products, columns (inner > 1) row by row (prod_columns). */
static int
prod_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int has_dim = op->id == PTL_OP_prod_dim_int, rc;
    int64_t d, sizes[PTL_MAX_DIMS];
    PtlTensorImpl *x, *c = NULL, *out = NULL;
    if (fold_input(op, s, has_dim, has_dim ? 3 : 1, &d, &x, &rc)) {
        return rc;
    }
    int by_dim = has_dim && x->dim > 0, dim = 0;
    int64_t outer = 1, n = by_dim ? x->sizes[d] : x->numel, inner = 1;
    for (int i = 0; by_dim && i < x->dim; i++) {   /* the result's sizes: d dropped or 1 */
        outer *= i < d ? x->sizes[i] : 1;
        inner *= i > d ? x->sizes[i] : 1;
        if (i != d || s[2].u.b) {
            sizes[dim++] = i != d ? x->sizes[i] : 1;
        }
    }
    if ((c = ptl_contiguous(x)) != NULL) {
        out = ptl_empty(dim, sizes, x->dtype, x->device);
    }
    if (out != NULL && inner > 1 && prod_columns(out, c, outer, n, inner) < 0) {
        PTL_CLEAR(out);
    }
    for (int64_t o = 0; out != NULL && inner == 1 && o < outer; o++) {
        if (x->dtype == PTL_DTYPE_COMPLEX128) {
            const ptl_complex128 *r = (const ptl_complex128 *)ptl_tensor_data(c) + o * n;
            ((ptl_complex128 *)ptl_tensor_data(out))[o] = prod_c16(r, n);
        }
        else {
            const ptl_complex64 *r = (const ptl_complex64 *)ptl_tensor_data(c) + o * n;
            ((ptl_complex64 *)ptl_tensor_data(out))[o] = (ptl_complex64)prod_c8(r, n);
        }
    }
    ptl_decref(x);
    ptl_xdecref(c);
    return ptl_kernel_return(s, out);
}

/* ---- cumsum, cumprod and trace ---- */

/* cumsum / cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor: [*] -> [*].
 * A product, or a sum along a dim of unit stride, row by row here; a sum along any other
 * dim: the parts scanned by the real kernel on view_as_real(self), whose tiles walk the
 * rows in memory order (a 0-dim self is its own sum or product) */
static int
scan_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *x, *r = NULL, *scanned = NULL, *c = NULL, *out = NULL;
    int64_t d;
    int rc, is_prod = op->id == PTL_OP_cumprod;
    if (fold_input(op, s, 1, 2, &d, &x, &rc)) {
        return rc;
    }
    PtlIValue a[3] = {ptl_iv_tensor(x), ptl_iv_int(d), ptl_iv_none()};
    if (x->dim == 0 || is_prod || x->strides[d] == 1) {
        /* along rows in memory, the real scan would see rows of 2 (0.25x PyTorch's time) */
        static const RowFold folds[2][2] = {{cumsum_row_c8, cumsum_row_c16},
                                            {cumprod_row_c8, cumprod_row_c16}};
        if ((out = ptl_empty(x->dim, x->sizes, x->dtype, x->device)) != NULL) {
            for_each_row(out, x, x->dim > 0 ? (int)d : -1,
                         folds[is_prod][x->dtype == PTL_DTYPE_COMPLEX128]);
        }
    }
    else if ((r = ptl_call_k(PTL_OP_view_as_real, 1, a)) != NULL) {
        a[0] = ptl_iv_tensor(r);
        if ((scanned = ptl_call_tensor(PTL_OP_cumsum, a)) != NULL &&
            (c = ptl_contiguous(scanned)) != NULL) {
            a[0] = ptl_iv_tensor(c);
            out = ptl_call_k(PTL_OP_view_as_complex, 1, a);
        }
    }
    ptl_decref(x);
    ptl_xdecref(r);
    ptl_xdecref(scanned);
    ptl_xdecref(c);
    return ptl_kernel_return(s, out);
}

/* trace(Tensor self) -> Tensor: [m, n] -> [], the diagonal's sum: on the CPU in complex128
 * here (the diagonal view and sum's dispatch cost more than a short diagonal's sum), else
 * sum's kernel on the diagonal */
static int
trace_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *diag, *out;
    if (self->dim != 2) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "trace: expected a matrix, but got tensor with dim %d", self->dim);
    }
    if (self->device.type == PTL_DEVICE_CPU) {
        const int64_t k = self->sizes[0] < self->sizes[1] ? self->sizes[0] : self->sizes[1];
        const int64_t step = self->strides[0] + self->strides[1];
        ptl_complex128 acc = 0;
        if ((out = ptl_empty(0, NULL, self->dtype, self->device)) == NULL) {
            return -1;
        }
        if (self->dtype == PTL_DTYPE_COMPLEX128) {
            const ptl_complex128 *x = (const ptl_complex128 *)ptl_tensor_data(self);
            for (int64_t i = 0; i < k; i++) {
                acc += x[i * step];
            }
            *(ptl_complex128 *)ptl_tensor_data(out) = acc;
        }
        else {
            const ptl_complex64 *x = (const ptl_complex64 *)ptl_tensor_data(self);
            for (int64_t i = 0; i < k; i++) {
                acc += (ptl_complex128)x[i * step];
            }
            *(ptl_complex64 *)ptl_tensor_data(out) = (ptl_complex64)acc;
        }
        return ptl_kernel_return(s, out);
    }
    PtlIValue a[1] = {ptl_iv_tensor(self)};
    if ((diag = ptl_call_k(PTL_OP_diagonal, 1, a)) == NULL) {
        return -1;
    }
    a[0] = ptl_iv_tensor(diag);
    out = ptl_call_k(PTL_OP_sum, 1, a);
    ptl_decref(diag);
    return ptl_kernel_return(s, out);
}

/* ---- count_nonzero, nonzero, all and any: through ne(self, 0) ---- */

/* The count of the n complex numbers at x (2 n parts of U's width, float's or double's
 * bits) with a part != 0, or with mask != NULL mask[i] = whether x[i] has one.  A part is
 * nonzero when its bits but the sign are (NaN included, -0.0 not: as `!= 0`), tested on
 * integers, which vectorize (double's `!=` did not: 0.46x PyTorch's time), the 64-bit ones
 * with AVX2's compares (the _avx2 twins). */
#define DEFINE_NONZERO_PARTS(NAME, U, ATTR)                                                \
    ATTR static int64_t                                                                    \
    NAME(const char *x, int64_t n, uint8_t *mask)                                          \
    {                                                                                      \
        const U *u = (const U *)x;                                                         \
        int64_t count = 0;                                                                 \
        if (mask != NULL) {                                                                \
            for (int64_t i = 0; i < n; i++) {                                              \
                mask[i] = (U)((u[2 * i] | u[2 * i + 1]) << 1) != 0;                        \
            }                                                                              \
            return 0;                                                                      \
        }                                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                  \
            count += (U)((u[2 * i] | u[2 * i + 1]) << 1) != 0;                             \
        }                                                                                  \
        return count;                                                                      \
    }
DEFINE_NONZERO_PARTS(nonzero_parts_c8, uint32_t, )
DEFINE_NONZERO_PARTS(nonzero_parts_c16, uint64_t, )
#ifdef __x86_64__
DEFINE_NONZERO_PARTS(nonzero_parts_c8_avx2, uint32_t, __attribute__((target("avx2"))))
DEFINE_NONZERO_PARTS(nonzero_parts_c16_avx2, uint64_t, __attribute__((target("avx2"))))
#endif
#undef DEFINE_NONZERO_PARTS

/* self != 0 on the CPU (any layout): with mask NULL the count of nonzero elements of self
 * in *count, else *mask a new bool tensor of self's shape holding self != 0.  0 or -1. */
static int
nonzero_count(PtlTensorImpl *self, int64_t *count, PtlTensorImpl **mask)
{
    PtlTensorImpl *c = ptl_contiguous(self);
    if (c == NULL) {
        return -1;
    }
    if (mask != NULL && (*mask = ptl_empty(self->dim, self->sizes, PTL_DTYPE_BOOL,
                                           self->device)) == NULL) {
        ptl_decref(c);
        return -1;
    }
    uint8_t *m = mask != NULL ? (uint8_t *)ptl_tensor_data(*mask) : NULL;
    int64_t (*parts)(const char *, int64_t, uint8_t *) =
        c->dtype == PTL_DTYPE_COMPLEX128 ? nonzero_parts_c16 : nonzero_parts_c8;
#ifdef __x86_64__
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        parts = c->dtype == PTL_DTYPE_COMPLEX128 ? nonzero_parts_c16_avx2 : nonzero_parts_c8_avx2;
    }
#endif
    void *tok = ptl_nogil_begin();
    *count = parts(ptl_tensor_data(c), c->numel, m);
    ptl_nogil_end(tok);
    ptl_decref(c);
    return 0;
}

/* count_nonzero(Tensor self, int? dim=None), count_nonzero.dim_IntList(Tensor self, int[]
 * dim), nonzero(Tensor self) and all / any in their three overloads: the real kernels on
 * self != 0 (a CPU self's count of all its elements counted here) */
static int
nonzero_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *zero, *ne = NULL, *out;
    int64_t count;
    if (self->device.type == PTL_DEVICE_CPU) {
        if (op->id == PTL_OP_count_nonzero && s[1].tag == PTL_IV_NONE) {
            if (nonzero_count(self, &count, NULL) < 0 ||
                (out = ptl_empty(0, NULL, PTL_DTYPE_INT64, self->device)) == NULL) {
                return -1;
            }
            *(int64_t *)ptl_tensor_data(out) = count;
            return ptl_kernel_return(s, out);
        }
        if (nonzero_count(self, &count, &ne) < 0) {
            return -1;
        }
    }
    else {
        if ((zero = ptl_empty(0, NULL, self->dtype, self->device)) == NULL) {
            return -1;
        }
        memset(ptl_tensor_data(zero), 0, ptl_tensor_itemsize(zero));
        PtlIValue a[2] = {ptl_iv_tensor(self), ptl_iv_tensor(zero)};
        ne = ptl_call_k(PTL_OP_ne_Tensor, 2, a);
        ptl_decref(zero);
        if (ne == NULL) {
            return -1;
        }
    }
    int rc = call_with_self(op, s, ne);
    ptl_decref(ne);
    return rc;
}

/* ---- var and std: the parts' variances add up ---- */

/* The var op of the same overload as op (std -> var, std_mean.dim -> var_mean.dim, ...). */
static PtlOpId
var_of(int op)
{
    static const PtlOpId pairs[][2] = {
        {PTL_OP_std, PTL_OP_var}, {PTL_OP_std_dim, PTL_OP_var_dim},
        {PTL_OP_std_correction, PTL_OP_var_correction}, {PTL_OP_std_mean, PTL_OP_var_mean},
        {PTL_OP_std_mean_dim, PTL_OP_var_mean_dim},
        {PTL_OP_std_mean_correction, PTL_OP_var_mean_correction},
    };
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        if ((int)pairs[i][0] == op) {
            return pairs[i][1];
        }
    }
    return (PtlOpId)op;
}

/* var / std / var_mean / std_mean in their three overloads, of a complex self: the variance
 * is E|x - E x|^2 = var(real) + var(imag), a real tensor (std its square root), and the mean
 * joins the parts' means, as PyTorch's */
static int
var_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    if (!ptl_dtype_is_complex(s[0].u.t->dtype)) {
        /* a real self with a complex correction: the Complex key's fallback converts it */
        return ptl_dispatcher_fallback(PTL_KEY_COMPLEX)(op, ks, s);
    }
    const PtlOperator *vop = ptl_op(var_of(op->id));
    const int is_std = vop->id != op->id, with_mean = op->schema.nrets == 2;
    PtlIValue st[2][PTL_SCHEMA_MAX_ARGS];
    PtlTensorImpl *parts[2] = {NULL, NULL}, *var = NULL, *mean = NULL;
    int done[2] = {0, 0}, rc = -1;
    for (int p = 0; p < 2; p++) {
        for (int i = 0; i < op->schema.nargs; i++) {
            st[p][i] = s[i];
        }
        if ((parts[p] = ptl_call_k(p ? PTL_OP_imag : PTL_OP_real, 1, s)) == NULL) {
            goto done;
        }
        st[p][0] = ptl_iv_tensor(parts[p]);
        if (ptl_dispatcher_call(vop, st[p]) < 0) {
            goto done;
        }
        done[p] = 1;
    }
    PtlIValue a[3] = {st[0][0], st[1][0], ptl_iv_int(1)};
    if ((var = ptl_call_k(PTL_OP_add_Tensor, 3, a)) == NULL) {
        goto done;
    }
    if (is_std) {
        PtlTensorImpl *v = var;
        a[0] = ptl_iv_tensor(v);
        var = ptl_call_k(PTL_OP_sqrt, 1, a);
        ptl_decref(v);
        if (var == NULL) {
            goto done;
        }
    }
    if (with_mean) {
        PtlIValue m[2] = {st[0][1], st[1][1]};
        if ((mean = ptl_call_k(PTL_OP_complex, 2, m)) == NULL) {
            PTL_CLEAR(var);
            goto done;
        }
        s[1] = ptl_iv_tensor(mean);
    }
    s[0] = ptl_iv_tensor(var);
    rc = 0;
done:
    for (int p = 0; p < 2; p++) {
        ptl_xdecref(parts[p]);
        for (int i = 0; done[p] && i < vop->schema.nrets; i++) {
            ptl_ivalue_release(&st[p][i]);
        }
    }
    return rc;
}

/* ---- logsumexp ---- */

/* logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor, self complex: PyTorch's
 * composite, log(sum(exp(self - m))) + m with m the largest real part along dim (0 where
 * it is infinite), so no exp overflows; the imaginary part is the principal log's. */
static int
logsumexp_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    enum { RE, MAX, INF, M, DIFF, EXP, SUM, LOG, MSQ, OUT, NT };
    PtlTensorImpl *t[NT] = {NULL};
    PtlIValue a[4] = {s[0]};
    if (s[0].u.t->numel == 0) {   /* no max to take: the sums are 0, their logs -inf */
        a[0] = s[0], a[1] = s[1], a[2] = s[2], a[3] = ptl_iv_none();
        if ((t[EXP] = ptl_call_k(PTL_OP_sum_dim_IntList, 4, a)) != NULL) {
            a[0] = ptl_iv_tensor(t[EXP]);
            t[OUT] = ptl_call_k(PTL_OP_log, 1, a);
        }
        goto done;
    }
    if ((t[RE] = ptl_call_k(PTL_OP_real, 1, a)) == NULL) {
        goto done;
    }
    a[0] = ptl_iv_tensor(t[RE]), a[1] = s[1], a[2] = ptl_iv_bool(1);
    if ((t[MAX] = ptl_call_k(PTL_OP_amax, 3, a)) == NULL) {
        goto done;
    }
    a[0] = ptl_iv_tensor(t[MAX]);
    if ((t[INF] = ptl_call_k(PTL_OP_isinf, 1, a)) == NULL) {
        goto done;
    }
    a[1] = ptl_iv_tensor(t[INF]), a[2] = ptl_iv_double(0);
    if ((t[M] = ptl_call_k(PTL_OP_masked_fill_Scalar, 3, a)) == NULL) {
        goto done;
    }
    a[0] = s[0], a[1] = ptl_iv_tensor(t[M]);
    if ((t[DIFF] = ptl_call_k(PTL_OP_sub_Tensor, 2, a)) == NULL) {
        goto done;
    }
    a[0] = ptl_iv_tensor(t[DIFF]);
    if ((t[EXP] = ptl_call_k(PTL_OP_exp, 1, a)) == NULL) {
        goto done;
    }
    a[0] = ptl_iv_tensor(t[EXP]), a[1] = s[1], a[2] = s[2], a[3] = ptl_iv_none();
    if ((t[SUM] = ptl_call_k(PTL_OP_sum_dim_IntList, 4, a)) == NULL) {
        goto done;
    }
    a[0] = ptl_iv_tensor(t[SUM]);
    if ((t[LOG] = ptl_call_k(PTL_OP_log, 1, a)) == NULL) {
        goto done;
    }
    /* m without the reduced dims (all of them for dim=[], as the real kernel) */
    a[0] = ptl_iv_tensor(t[M]), a[1] = s[1];
    if (s[2].u.b) {
        ptl_incref(t[M]);
        t[MSQ] = t[M];
    }
    else {
        t[MSQ] = ptl_call_k(s[1].u.il.n ? PTL_OP_squeeze_dims : PTL_OP_squeeze,
                            s[1].u.il.n ? 2 : 1, a);
    }
    if (t[MSQ] == NULL) {
        goto done;
    }
    a[0] = ptl_iv_tensor(t[LOG]), a[1] = ptl_iv_tensor(t[MSQ]);
    t[OUT] = ptl_call_k(PTL_OP_add_Tensor, 2, a);
done:
    for (int i = 0; i < OUT; i++) {
        ptl_xdecref(t[i]);
    }
    return ptl_kernel_return(s, t[OUT]);
}

static const PtlKernelReg complex_reduce_kernels[] = {
    {PTL_OP_cumsum, PTL_KEY_COMPLEX, scan_complex},
    {PTL_OP_cumprod, PTL_KEY_COMPLEX, scan_complex},
    {PTL_OP_prod, PTL_KEY_COMPLEX, prod_complex},
    {PTL_OP_prod_dim_int, PTL_KEY_COMPLEX, prod_complex},
    {PTL_OP_trace, PTL_KEY_COMPLEX, trace_complex},
    {PTL_OP_count_nonzero, PTL_KEY_COMPLEX, nonzero_complex},
    {PTL_OP_count_nonzero_dim_IntList, PTL_KEY_COMPLEX, nonzero_complex},
    {PTL_OP_nonzero, PTL_KEY_COMPLEX, nonzero_complex},
    {PTL_OP_all, PTL_KEY_COMPLEX, nonzero_complex},
    {PTL_OP_all_dim, PTL_KEY_COMPLEX, nonzero_complex},
    {PTL_OP_all_dims, PTL_KEY_COMPLEX, nonzero_complex},
    {PTL_OP_any, PTL_KEY_COMPLEX, nonzero_complex},
    {PTL_OP_any_dim, PTL_KEY_COMPLEX, nonzero_complex},
    {PTL_OP_any_dims, PTL_KEY_COMPLEX, nonzero_complex},
    {PTL_OP_var, PTL_KEY_COMPLEX, var_complex},
    {PTL_OP_var_dim, PTL_KEY_COMPLEX, var_complex},
    {PTL_OP_var_correction, PTL_KEY_COMPLEX, var_complex},
    {PTL_OP_std, PTL_KEY_COMPLEX, var_complex},
    {PTL_OP_std_dim, PTL_KEY_COMPLEX, var_complex},
    {PTL_OP_std_correction, PTL_KEY_COMPLEX, var_complex},
    {PTL_OP_var_mean, PTL_KEY_COMPLEX, var_complex},
    {PTL_OP_var_mean_dim, PTL_KEY_COMPLEX, var_complex},
    {PTL_OP_var_mean_correction, PTL_KEY_COMPLEX, var_complex},
    {PTL_OP_std_mean, PTL_KEY_COMPLEX, var_complex},
    {PTL_OP_std_mean_dim, PTL_KEY_COMPLEX, var_complex},
    {PTL_OP_std_mean_correction, PTL_KEY_COMPLEX, var_complex},
    {PTL_OP_logsumexp, PTL_KEY_COMPLEX, logsumexp_complex},
};
PTL_DEFINE_REGISTER(complex_reduce_kernels)
