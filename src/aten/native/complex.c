/* complex.c -- complex64/complex128: the Complex dispatch key's kernels and fallback, and
 * the ops that move between complex and real tensors (real, imag, view_as_real,
 * view_as_complex, complex, polar, angle, conj).  Mirrors ATen/native/Complex.cpp,
 * ATen/native/UnaryOps.cpp (angle, conj) and TensorConversions' view_as_real/complex.
 *
 * Note [Complex dtypes]
 * ~~~~~~~~~~~~~~~~~~~~~
 * Every complex tensor carries the Complex dispatch key (c10's ptl_tensor_keys), just above
 * the backends, and a call whose ScalarType argument is complex gets it too (the
 * dispatcher's argument_keys), so any call with a complex argument or a complex result dtype
 * passes here before a CPU kernel runs.
 * The CPU kernels were written for real dtypes (many branch on "floating or else integer"),
 * so the key decides, per op, what a complex argument may reach:
 *   - ops with a complex kernel here (add, sub, mul, div, neg, exp, log, sqrt, reciprocal,
 *     abs, eq, ne, isclose, isnan, isinf, isfinite, sum, mean) run it: the complex
 *     arithmetic of C99's <complex.h>;
 *   - ops whose CPU kernel only moves bytes or converts through copy.c's conversion table
 *     (views, copy_, _to_copy, clone, cat, stack, index, fill_, the factories, eye, tril/triu,
 *     diagonal, diag_embed), allclose and equal (they call isclose and eq), the matrix
 *     products of linalg.c (their gemm calls take complex operands to gemm_complex.c, Note
 *     [Complex GEMM]) and the ops of this file fall through to the CPU kernel
 *     (`passthrough_ops`);
 *   - every other op raises PyTorch's error: its "not supported for complex" message for
 *     the ordering ops (`ordering_errors`), else "\"<op>_cpu\" not implemented for
 *     'ComplexFloat'".
 * linalg_complex.c registers the complex linear algebra's kernels at this key (Note
 * [Complex linear algebra]).
 * On CUDA nothing takes a complex tensor yet ("\"<op>_cuda\" not implemented for ...").
 * resize_ (out= arguments) and the FFT operators of native/fft.c, whose CPU kernels take
 * complex64/complex128 themselves, pass through too.
 * Their derivatives: Note [Complex autograd] in autograd/derivatives/complex.c. */
#include <math.h>
#include <string.h>

#include "../../c10/error.h"
#include "../complex_math.h"
#include "native.h"

/* ---- which ops a complex argument may reach ---- */

static const PtlOpId passthrough_ops[] = {
    PTL_OP_empty_memory_format, PTL_OP_empty_strided, PTL_OP_zeros, PTL_OP_ones, PTL_OP_full,
    PTL_OP_empty_like, PTL_OP_zeros_like, PTL_OP_ones_like, PTL_OP_full_like,
    PTL_OP_clone, PTL_OP_contiguous, PTL_OP_copy_, PTL_OP__to_copy, PTL_OP_alias,
    PTL_OP_fill__Scalar, PTL_OP_fill__Tensor, PTL_OP_zero_, PTL_OP_resize_, PTL_OP_resize_as_,
    PTL_OP__fft_c2c, PTL_OP__fft_r2c, PTL_OP__fft_c2r,   /* native/fft.c: complex kernels */
    PTL_OP_view, PTL_OP_view_dtype, PTL_OP_reshape, PTL_OP_expand, PTL_OP_expand_as, PTL_OP_t,
    PTL_OP_transpose_int, PTL_OP_permute, PTL_OP_select_int, PTL_OP_slice_Tensor,
    PTL_OP_squeeze, PTL_OP_squeeze_dim, PTL_OP_unsqueeze, PTL_OP_flatten_using_ints,
    PTL_OP_detach, PTL_OP_as_strided, PTL_OP_narrow, PTL_OP_unbind_int,
    PTL_OP_cat, PTL_OP_stack, PTL_OP_index_Tensor, PTL_OP_index_select,
    PTL_OP_real, PTL_OP_imag, PTL_OP_view_as_real, PTL_OP_view_as_complex, PTL_OP_complex,
    PTL_OP_polar, PTL_OP_angle, PTL_OP_conj, PTL_OP_conj_physical,
    PTL_OP_tril_indices, PTL_OP_triu_indices,   /* they refuse every dtype but int32/int64 */
    /* they move or zero whole elements of any size (linalg_complex.c's formulas use them) */
    PTL_OP_tril, PTL_OP_tril_, PTL_OP_triu, PTL_OP_triu_, PTL_OP_diagonal, PTL_OP_diag_embed,
    PTL_OP_eye, PTL_OP_eye_m,
    PTL_OP_allclose, PTL_OP_equal,   /* isclose(...).all() and eq(...).all(): complex below */
    /* linalg.c's matrix products: gemm_complex.c (Note [Complex GEMM]) */
    PTL_OP_mm, PTL_OP_mm_out, PTL_OP_bmm, PTL_OP_addmm, PTL_OP_baddbmm, PTL_OP_addmv,
    PTL_OP_mv, PTL_OP_dot, PTL_OP_vdot,
    /* random.c fills a complex tensor part by part (uniform, normal) and refuses it with
     * PyTorch's messages (exponential, cauchy) */
    PTL_OP_rand, PTL_OP_rand_generator, PTL_OP_randn, PTL_OP_randn_generator,
    PTL_OP_rand_like, PTL_OP_randn_like, PTL_OP_uniform_, PTL_OP_normal_,
    PTL_OP_normal_float_float, PTL_OP_exponential_, PTL_OP_cauchy_,
};

/* The ordering and random ops' own messages (PyTorch 2.13's wording and exception type). */
static const struct {
    PtlOpId op;
    PtlErrorKind kind;
    const char *msg;
} ordering_errors[] = {
    {PTL_OP_max, PTL_ERR_NOT_IMPLEMENTED, "\"max_all\" not implemented for '%s'"},
    {PTL_OP_min, PTL_ERR_NOT_IMPLEMENTED, "\"min_all\" not implemented for '%s'"},
    {PTL_OP_max_dim, PTL_ERR_RUNTIME, "max(): does not support complex input"},
    {PTL_OP_min_dim, PTL_ERR_RUNTIME, "min(): does not support complex input"},
    {PTL_OP_argmax, PTL_ERR_RUNTIME, "argmax(): does not support complex input"},
    {PTL_OP_argmin, PTL_ERR_RUNTIME, "argmin(): does not support complex input"},
    {PTL_OP_maximum, PTL_ERR_RUNTIME, "maximum not implemented for complex tensors."},
    {PTL_OP_minimum, PTL_ERR_RUNTIME, "minimum not implemented for complex tensors."},
    /* PyTorch's sort and topk messages start with a space */
    {PTL_OP_sort, PTL_ERR_RUNTIME, " Sort does not support complex dtypes on CPU"},
    {PTL_OP_sort_stable, PTL_ERR_RUNTIME, " Sort does not support complex dtypes on CPU"},
    {PTL_OP_argsort, PTL_ERR_RUNTIME, " Sort does not support complex dtypes on CPU"},
    {PTL_OP_argsort_stable, PTL_ERR_RUNTIME, " Sort does not support complex dtypes on CPU"},
    {PTL_OP_msort, PTL_ERR_RUNTIME, " Sort does not support complex dtypes on CPU"},
    {PTL_OP_topk, PTL_ERR_RUNTIME, " topk does not support complex dtypes on CPU"},
    {PTL_OP_clamp, PTL_ERR_NOT_IMPLEMENTED, "clamp is not supported for complex types"},
    {PTL_OP_clamp_, PTL_ERR_NOT_IMPLEMENTED, "clamp is not supported for complex types"},
    {PTL_OP_clamp_min, PTL_ERR_NOT_IMPLEMENTED, "clamp is not supported for complex types"},
    {PTL_OP_clamp_max, PTL_ERR_NOT_IMPLEMENTED, "clamp is not supported for complex types"},
    {PTL_OP_relu, PTL_ERR_NOT_IMPLEMENTED, "clamp is not supported for complex types"},
    {PTL_OP_floor, PTL_ERR_NOT_IMPLEMENTED, "floor is not supported for complex inputs"},
    {PTL_OP_ceil, PTL_ERR_NOT_IMPLEMENTED, "ceil is not supported for complex inputs"},
    {PTL_OP_random_, PTL_ERR_NOT_IMPLEMENTED, "\"random_kernel_cpu\" not implemented for '%s'"},
    {PTL_OP_random__from, PTL_ERR_RUNTIME, "check_random_bounds handles only integral, "
     "floating-point and boolean types"},
    {PTL_OP_random__to, PTL_ERR_RUNTIME, "check_random_bounds handles only integral, "
     "floating-point and boolean types"},
    {PTL_OP_randint, PTL_ERR_RUNTIME, "check_random_bounds handles only integral, "
     "floating-point and boolean types"},
    {PTL_OP_randint_low, PTL_ERR_RUNTIME, "check_random_bounds handles only integral, "
     "floating-point and boolean types"},
    {PTL_OP_randint_generator, PTL_ERR_RUNTIME, "check_random_bounds handles only integral, "
     "floating-point and boolean types"},
    {PTL_OP_randint_low_generator, PTL_ERR_RUNTIME, "check_random_bounds handles only "
     "integral, floating-point and boolean types"},
    {PTL_OP_randint_like, PTL_ERR_RUNTIME, "check_random_bounds handles only integral, "
     "floating-point and boolean types"},
    {PTL_OP_randint_like_low_dtype, PTL_ERR_RUNTIME, "check_random_bounds handles only "
     "integral, floating-point and boolean types"},
    {PTL_OP_bernoulli__float, PTL_ERR_NOT_IMPLEMENTED,
     "\"bernoulli_scalar_cpu_\" not implemented for '%s'"},
    {PTL_OP_bernoulli__Tensor, PTL_ERR_NOT_IMPLEMENTED,
     "\"bernoulli_tensor_cpu_self_\" not implemented for '%s'"},
    {PTL_OP_bernoulli, PTL_ERR_NOT_IMPLEMENTED,
     "\"bernoulli_tensor_cpu_self_\" not implemented for '%s'"},
    {PTL_OP_sign, PTL_ERR_NOT_IMPLEMENTED,
     "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
     "torch.sgn instead."},
};

static uint8_t passthrough[PTL_OP_COUNT];

static PtlDtype
first_complex_dtype(const PtlOperator *op, const PtlIValue *s)
{
    for (int i = 0; i < op->schema.nargs; i++) {
        if (s[i].tag == PTL_IV_DTYPE && ptl_dtype_is_complex(s[i].u.dtype)) {
            return s[i].u.dtype;
        }
        if (s[i].tag == PTL_IV_TENSOR && ptl_dtype_is_complex(s[i].u.t->dtype)) {
            return s[i].u.t->dtype;
        }
        if (s[i].tag == PTL_IV_TENSORLIST) {
            for (int64_t j = 0; j < s[i].u.tl.n; j++) {
                if (s[i].u.tl.data[j] && ptl_dtype_is_complex(s[i].u.tl.data[j]->dtype)) {
                    return s[i].u.tl.data[j]->dtype;
                }
            }
        }
    }
    return PTL_DTYPE_COMPLEX64;
}

static int
complex_fallback(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlDispatchKeySet below = ks & ptl_keyset_below(PTL_KEY_COMPLEX);
    int cuda = (below & PTL_KEYSET(PTL_KEY_CUDA)) != 0;
    if (!cuda && op->id < PTL_OP_COUNT && passthrough[op->id]) {
        return ptl_dispatcher_redispatch(op, below, s);
    }
    PtlDtype dt = first_complex_dtype(op, s);
    for (size_t i = 0; !cuda && i < sizeof(ordering_errors) / sizeof(ordering_errors[0]); i++) {
        if ((int)ordering_errors[i].op == op->id) {
            return ptl_error_set(ordering_errors[i].kind, ordering_errors[i].msg,
                                 ptl_dtype_legacy_name(dt));
        }
    }
    char kname[80];
    ptl_kernel_name(op, kname, sizeof(kname));
    if (cuda) {
        memcpy(kname + strlen(kname) - 3, "cuda", 5);
    }
    return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'", kname,
                         ptl_dtype_legacy_name(dt));
}

/* ---- pointwise arithmetic ---- */

/* Each family's loop is written once, over the complex type T (and its real type R), and
 * stamped for complex64 (c8) and complex128 (c16); Z_LOOPS tables the pair by dtype. */
#define Z_STAMP(LOOP, NAME, F)                                                             \
    LOOP(NAME, c8, ptl_complex64, float, F)                                                \
    LOOP(NAME, c16, ptl_complex128, double, F)                                             \
    static const PtlLoop NAME##_loops[PTL_DTYPE_COUNT] = {                                 \
        [PTL_DTYPE_COMPLEX64] = NAME##_loop_c8, [PTL_DTYPE_COMPLEX128] = NAME##_loop_c16};

/* o = F(a, b, x) with x the real scalar `extra` points to (add and sub's alpha; the parser
 * has no complex Scalar yet). */
#define Z_BINARY_LOOP(NAME, SUF, T, R, F)                                                  \
    static void NAME##_loop_##SUF(char **d, const int64_t *s, int64_t n, const void *extra) \
    {                                                                                      \
        const R x = (R) * (const double *)extra;                                           \
        (void)x;                                                                           \
        if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == sizeof(T)) {                 \
            T *o = (T *)d[0]; /* contiguous: gcc vectorizes it */                          \
            const T *a = (const T *)d[1];                                                  \
            const T *b = (const T *)d[2];                                                  \
            for (int64_t i = 0; i < n; i++) {                                              \
                o[i] = F(a[i], b[i], x);                                                   \
            }                                                                              \
            return;                                                                        \
        }                                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                  \
            const T a = *(const T *)(d[1] + i * s[1]);                                     \
            const T b = *(const T *)(d[2] + i * s[2]);                                     \
            *(T *)(d[0] + i * s[0]) = F(a, b, x);                                          \
        }                                                                                  \
    }
#define DEFINE_Z_BINARY(NAME, F) Z_STAMP(Z_BINARY_LOOP, NAME, F)

/* A real x times a complex scales both parts.  The product of two complex numbers is
 * complex_math.h's textbook ptl_cmul / ptl_cmulf; division keeps C99's scaled division,
 * which PyTorch's also scales. */
#define ZADD(A, B, X) ((A) + (X) * (B))
#define ZSUB(A, B, X) ((A) - (X) * (B))
#define ZMUL(A, B, X) _Generic((A), ptl_complex64: ptl_cmulf, default: ptl_cmul)(A, B)
#define ZDIV(A, B, X) ((A) / (B))
DEFINE_Z_BINARY(zadd, ZADD)
DEFINE_Z_BINARY(zsub, ZSUB)
DEFINE_Z_BINARY(zmul, ZMUL)
DEFINE_Z_BINARY(zdiv, ZDIV)

/* eq / ne: complex inputs, bool output */
#define Z_COMPARE_LOOP(NAME, SUF, T, R, OPR)                                               \
    static void NAME##_loop_##SUF(char **d, const int64_t *s, int64_t n, const void *extra) \
    {                                                                                      \
        (void)extra;                                                                       \
        for (int64_t i = 0; i < n; i++) {                                                  \
            *(uint8_t *)(d[0] + i * s[0]) =                                                \
                *(const T *)(d[1] + i * s[1]) OPR * (const T *)(d[2] + i * s[2]);          \
        }                                                                                  \
    }
#define DEFINE_Z_COMPARE(NAME, OPR) Z_STAMP(Z_COMPARE_LOOP, NAME, OPR)
DEFINE_Z_COMPARE(zeq, ==)
DEFINE_Z_COMPARE(zne, !=)

/* isclose: |a - b| <= atol + rtol |b| with the complex modulus, or a == b (equal infinities),
 * or, with equal_nan, a NaN part in each; the tolerances come in as {rtol, atol, equal_nan}. */
#define Z_ISCLOSE_LOOP(NAME, SUF, T, R, F)                                                 \
    static void NAME##_loop_##SUF(char **d, const int64_t *s, int64_t n, const void *extra) \
    {                                                                                      \
        const double *tol = extra;                                                         \
        for (int64_t i = 0; i < n; i++) {                                                  \
            const T a = *(const T *)(d[1] + i * s[1]);                                     \
            const T b = *(const T *)(d[2] + i * s[2]);                                     \
            *(uint8_t *)(d[0] + i * s[0]) = (uint8_t)F(a, b, tol);                         \
        }                                                                                  \
    }
#define ZNAN(A) (isnan(creal(A)) || isnan(cimag(A)))
static inline int
zisclose(ptl_complex128 a, ptl_complex128 b, const double *tol)
{
    if (a == b) {
        return 1;
    }
    if (ZNAN(a) || ZNAN(b)) {
        return tol[2] != 0 && ZNAN(a) && ZNAN(b);
    }
    double diff = cabs(a - b);
    return isfinite(diff) && diff <= tol[1] + fabs(tol[0]) * cabs(b);
}
/* complex64 widens exactly to complex128, the modulus computed once in double */
#define ZISCLOSE(A, B, TOL) zisclose((ptl_complex128)(A), (ptl_complex128)(B), TOL)
Z_STAMP(Z_ISCLOSE_LOOP, zisclose, ZISCLOSE)

/* isnan / isinf / isfinite: a predicate of either part (NaN or infinite), bool output */
#define Z_PREDICATE_LOOP(NAME, SUF, T, R, F)                                               \
    static void NAME##_loop_##SUF(char **d, const int64_t *s, int64_t n, const void *extra) \
    {                                                                                      \
        (void)extra;                                                                       \
        for (int64_t i = 0; i < n; i++) {                                                  \
            const T a = *(const T *)(d[1] + i * s[1]);                                     \
            *(uint8_t *)(d[0] + i * s[0]) = (uint8_t)F(creal(a), cimag(a));                \
        }                                                                                  \
    }
#define ZISNAN(X, Y) (isnan(X) || isnan(Y))
#define ZISINF(X, Y) (isinf(X) || isinf(Y))
#define ZISFINITE(X, Y) (isfinite(X) && isfinite(Y))
Z_STAMP(Z_PREDICATE_LOOP, zisnan, ZISNAN)
Z_STAMP(Z_PREDICATE_LOOP, zisinf, ZISINF)
Z_STAMP(Z_PREDICATE_LOOP, zisfinite, ZISFINITE)

/* Unary loops: o = F(a), F being a type-generic macro of the complex type. */
#define Z_UNARY_LOOP(NAME, SUF, T, R, F)                                                   \
    static void NAME##_loop_##SUF(char **d, const int64_t *s, int64_t n, const void *extra) \
    {                                                                                      \
        (void)extra;                                                                       \
        for (int64_t i = 0; i < n; i++) {                                                  \
            *(T *)(d[0] + i * s[0]) = F(*(const T *)(d[1] + i * s[1]));                    \
        }                                                                                  \
    }
#define DEFINE_Z_UNARY(NAME, F) Z_STAMP(Z_UNARY_LOOP, NAME, F)

#define ZNEG(A) (-(A))
#define ZEXP(A) _Generic((A), ptl_complex64: cexpf, default: cexp)(A)
#define ZLOG(A) _Generic((A), ptl_complex64: clogf, default: clog)(A)
#define ZSQRT(A) _Generic((A), ptl_complex64: csqrtf, default: csqrt)(A)
#define ZCONJ(A) _Generic((A), ptl_complex64: conjf, default: conj)(A)
#define ZRECIPROCAL(A) (1 / (A))
DEFINE_Z_UNARY(zneg, ZNEG)
DEFINE_Z_UNARY(zexp, ZEXP)
DEFINE_Z_UNARY(zlog, ZLOG)
DEFINE_Z_UNARY(zsqrt, ZSQRT)
DEFINE_Z_UNARY(zconj, ZCONJ)
DEFINE_Z_UNARY(zreciprocal, ZRECIPROCAL)

/* complex -> real: abs and angle write the real dtype R of their input */
#define Z_TO_REAL_LOOP(NAME, SUF, T, R, F)                                                 \
    static void NAME##_loop_##SUF(char **d, const int64_t *s, int64_t n, const void *extra) \
    {                                                                                      \
        (void)extra;                                                                       \
        for (int64_t i = 0; i < n; i++) {                                                  \
            *(R *)(d[0] + i * s[0]) = F(*(const T *)(d[1] + i * s[1]));                    \
        }                                                                                  \
    }
#define DEFINE_Z_TO_REAL(NAME, F) Z_STAMP(Z_TO_REAL_LOOP, NAME, F)
/* |z| of a complex64 through double: no overflow or underflow on the way, rounded once */
static inline float
zabsf(ptl_complex64 z)
{
    return (float)sqrt((double)crealf(z) * crealf(z) + (double)cimagf(z) * cimagf(z));
}
#define ZABS(A) _Generic((A), ptl_complex64: zabsf, default: cabs)(A)
#define ZANGLE(A) _Generic((A), ptl_complex64: cargf, default: carg)(A)
DEFINE_Z_TO_REAL(zabs, ZABS)
DEFINE_Z_TO_REAL(zangle, ZANGLE)

static const int self_other[2] = {0, 1};

static int
add_sub_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    /* alpha is a real Scalar: the parser has no complex Scalar yet */
    double alpha = ptl_iv_to_double(&s[2]);
    const char *name = op->schema.name + 6;
    int is_sub = name[0] == 's' || name[0] == 'r';
    if (op->id == PTL_OP_rsub_Tensor) {   /* other - alpha * self */
        PtlIValue t = s[0];
        s[0] = s[1];
        s[1] = t;
    }
    return ptl_pointwise(op, s, 2, self_other, ptl_iter_config(), is_sub ? zsub_loops : zadd_loops,
                         &alpha);
}

static int
mul_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    double unused = 0;
    return ptl_pointwise(op, s, 2, self_other, ptl_iter_config(), zmul_loops, &unused);
}

static int
div_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    double unused = 0;
    return ptl_pointwise(op, s, 2, self_other, ptl_iter_config(), zdiv_loops, &unused);
}

static int
compare_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    const char *name = op->schema.name + 6;
    PtlIterConfig cfg = ptl_iter_config();
    cfg.out_dtype = PTL_DTYPE_BOOL;
    if (op->schema.inplace) {   /* eq_: the result is written in self's dtype */
        return ptl_dtype_not_implemented(op, s[0].u.t->dtype);
    }
    return ptl_pointwise(op, s, 2, self_other, cfg, name[0] == 'e' ? zeq_loops : zne_loops,
                         NULL);
}

static const int self_only[1] = {0};

/* isclose(Tensor self, Tensor other, float rtol, float atol, bool equal_nan) -> Tensor */
static int
isclose_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    if (ptl_isclose_check(s) < 0) {
        return -1;
    }
    double tol[3] = {s[2].u.d, s[3].u.d, s[4].u.b ? 1.0 : 0.0};
    PtlIterConfig cfg = ptl_iter_config();
    cfg.out_dtype = PTL_DTYPE_BOOL;
    return ptl_pointwise(op, s, 2, self_other, cfg, zisclose_loops, tol);
}

/* isnan / isinf / isfinite of a complex tensor: bool */
static int
predicate_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlIterConfig cfg = ptl_iter_config();
    cfg.out_dtype = PTL_DTYPE_BOOL;
    const PtlLoop *loops = op->id == PTL_OP_isnan ? zisnan_loops
                           : op->id == PTL_OP_isinf ? zisinf_loops
                                                    : zisfinite_loops;
    return ptl_pointwise(op, s, 1, self_only, cfg, loops, NULL);
}

static int
unary_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    const char *name = op->schema.name + 6;
    const PtlLoop *loops = strncmp(name, "neg", 3) == 0    ? zneg_loops
                           : strncmp(name, "exp", 3) == 0  ? zexp_loops
                           : strncmp(name, "log", 3) == 0  ? zlog_loops
                           : strncmp(name, "reciprocal", 10) == 0 ? zreciprocal_loops
                                                           : zsqrt_loops;
    return ptl_pointwise(op, s, 1, self_only, ptl_iter_config(), loops, NULL);
}

/* abs / angle of a complex tensor: a real tensor of the parts' dtype */
static int
to_real_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s, const PtlLoop *loops)
{
    (void)ks;
    PtlIterConfig cfg = ptl_iter_config();
    if (op->schema.inplace) {
        return ptl_error_set(PTL_ERR_RUNTIME, "In-place %.*s is not supported for complex "
                             "tensors.", (int)strlen(op->schema.name + 6) - 1,
                             op->schema.name + 6);
    }
    cfg.out_dtype = ptl_dtype_to_real(s[0].u.t->dtype);
    return ptl_pointwise(op, s, 1, self_only, cfg, loops, NULL);
}

static int
abs_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    return to_real_complex(op, ks, s, zabs_loops);
}

/* ---- sum / mean: the real and imaginary parts reduce independently ---- */

static PtlTensorImpl *view_as_real_impl(PtlTensorImpl *self);
static PtlTensorImpl *view_as_complex_impl(PtlTensorImpl *self);

/* sum(self, dtype) / sum.dim_IntList(self, dim, keepdim, dtype), mean likewise: the
 * reduction runs on view_as_real(self) over self's dims (the last, size-2 dim is kept). */
static int
reduce_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int is_mean = strncmp(op->schema.name + 6, "mean", 4) == 0;
    int has_dim = op->schema.nargs == 4;
    PtlIValue dt = s[has_dim ? 3 : 1];
    PtlTensorImpl *self = s[0].u.t, *x = NULL, *r = NULL, *red = NULL, *out = NULL;
    int64_t dims[PTL_MAX_DIMS];
    int n = 0;
    int keepdim = has_dim ? s[2].u.b : 0;
    if (dt.tag == PTL_IV_DTYPE && !ptl_dtype_is_complex(dt.u.dtype)) {
        /* a real dtype: the real parts, converted (PyTorch's result, with copy_'s warning) */
        PtlTensorImpl *r = ptl_cast(self, dt.u.dtype);
        if (r == NULL) {
            return -1;
        }
        s[0] = ptl_iv_tensor(r);
        int rc = ptl_dispatcher_call(op, s);
        ptl_decref(r);
        return rc;
    }
    if (dt.tag == PTL_IV_DTYPE && dt.u.dtype != self->dtype) {
        x = ptl_cast(self, dt.u.dtype);
    }
    else {
        x = self;
        ptl_incref(x);
    }
    if (x == NULL) {
        return -1;
    }
    if (has_dim && s[1].tag == PTL_IV_INTLIST && s[1].u.il.n > 0) {
        uint32_t seen = 0;
        for (int64_t i = 0; i < s[1].u.il.n; i++) {
            int64_t d = s[1].u.il.data[i], nd = self->dim > 0 ? self->dim : 1;
            if (d < -nd || d >= nd) {
                ptl_decref(x);
                return ptl_error_set(PTL_ERR_INDEX, "Dimension out of range (expected to be in "
                                     "range of [%lld, %lld], but got %lld)", (long long)-nd,
                                     (long long)(nd - 1), (long long)d);
            }
            d = d < 0 ? d + nd : d;
            if (seen & (1u << d)) {
                ptl_decref(x);
                return ptl_error_set(PTL_ERR_RUNTIME, "dim %lld appears multiple times in the "
                                     "list of dims", (long long)d);
            }
            seen |= 1u << d;
            if (self->dim > 0) {
                dims[n++] = d;
            }
        }
    }
    else {
        for (int d = 0; d < self->dim; d++) {
            dims[n++] = d;
        }
    }
    if (n == 0) {   /* a 0-dim input, or nothing to reduce: the values themselves */
        PtlIValue a[2] = {ptl_iv_tensor(x), ptl_iv_none()};
        out = ptl_call_tensor(PTL_OP_clone, a);
        ptl_decref(x);
        if (out == NULL) {
            return -1;
        }
        s[0] = ptl_iv_tensor(out);
        return 0;
    }
    if ((r = view_as_real_impl(x)) != NULL) {
        PtlIValue a[4] = {ptl_iv_tensor(r), ptl_iv_intlist(dims, n), ptl_iv_bool(keepdim),
                          ptl_iv_none()};
        red = ptl_call_tensor(is_mean ? PTL_OP_mean_dim : PTL_OP_sum_dim_IntList, a);
    }
    if (red != NULL) {
        PtlTensorImpl *c = ptl_contiguous(red);
        if (c != NULL) {
            out = view_as_complex_impl(c);
            ptl_decref(c);
        }
    }
    ptl_decref(x);
    ptl_xdecref(r);
    ptl_xdecref(red);
    if (out == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(out);
    return 0;
}

/* ---- real, imag, view_as_real, view_as_complex ---- */

/* A view of self (a complex tensor) as its parts: strides and offset in real elements,
 * with dtype the real dtype (the dispatch keys follow the dtype). */
static PtlTensorImpl *
parts_view(PtlTensorImpl *self, int dim, const int64_t *sizes, const int64_t *strides,
           int64_t offset)
{
    PtlTensorImpl *v = ptl_tensor_impl_view(self, dim, sizes, strides, offset);
    if (v != NULL) {
        v->dtype = ptl_dtype_to_real(self->dtype);
        v->keys = ptl_tensor_keys(v->device, v->dtype) | (self->keys & ~ptl_tensor_keys(
                                                              self->device, self->dtype));
    }
    return v;
}

static PtlTensorImpl *
view_as_real_impl(PtlTensorImpl *self)
{
    int64_t sizes[PTL_MAX_DIMS + 1], strides[PTL_MAX_DIMS + 1];
    if (!ptl_dtype_is_complex(self->dtype)) {
        ptl_error_set(PTL_ERR_RUNTIME, "view_as_real is only supported for complex tensors");
        return NULL;
    }
    if (self->dim >= PTL_MAX_DIMS) {
        ptl_error_set(PTL_ERR_RUNTIME, "view_as_real: a tensor of %d dims has no room for the "
                      "last dim of size 2 (at most %d dims)", self->dim, PTL_MAX_DIMS);
        return NULL;
    }
    for (int d = 0; d < self->dim; d++) {
        sizes[d] = self->sizes[d];
        strides[d] = self->strides[d] * 2;
    }
    sizes[self->dim] = 2;
    strides[self->dim] = 1;
    return parts_view(self, self->dim + 1, sizes, strides, self->storage_offset * 2);
}

static PtlTensorImpl *
view_as_complex_impl(PtlTensorImpl *self)
{
    int64_t strides[PTL_MAX_DIMS];
    if (self->dtype != PTL_DTYPE_FLOAT32 && self->dtype != PTL_DTYPE_FLOAT64) {
        ptl_error_set(PTL_ERR_RUNTIME, "view_as_complex is only supported for float and double "
                      "tensors (pytorchlite has no complex32), but got a tensor of scalar type: "
                      "%s", ptl_dtype_legacy_name(self->dtype));
        return NULL;
    }
    if (self->dim == 0) {
        ptl_error_set(PTL_ERR_RUNTIME, "Input tensor must have one or more dimensions");
        return NULL;
    }
    if (self->sizes[self->dim - 1] != 2) {
        ptl_error_set(PTL_ERR_RUNTIME, "Tensor must have a last dimension of size 2");
        return NULL;
    }
    if (self->strides[self->dim - 1] != 1) {
        ptl_error_set(PTL_ERR_RUNTIME, "Tensor must have a last dimension with stride 1");
        return NULL;
    }
    for (int d = 0; d < self->dim - 1; d++) {
        if (self->strides[d] % 2 != 0) {
            ptl_error_set(PTL_ERR_RUNTIME,
                          "Tensor must have a stride divisible by 2 for all but last dimension");
            return NULL;
        }
        strides[d] = self->strides[d] / 2;
    }
    if (self->storage_offset % 2 != 0) {
        ptl_error_set(PTL_ERR_RUNTIME, "Tensor must have a storage_offset divisible by 2");
        return NULL;
    }
    PtlTensorImpl *v = ptl_tensor_impl_view(self, self->dim - 1, self->sizes, strides,
                                            self->storage_offset / 2);
    if (v != NULL) {
        v->dtype = ptl_dtype_to_complex(self->dtype);
        v->keys = ptl_tensor_keys(v->device, v->dtype) |
                  (self->keys & ~ptl_tensor_keys(self->device, self->dtype));
    }
    return v;
}

static int
set_result(PtlIValue *s, PtlTensorImpl *t)
{
    if (t == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(t);
    return 0;
}

/* view_as_real(Tensor(a) self) -> Tensor(a) */
static int
view_as_real_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    return set_result(s, view_as_real_impl(s[0].u.t));
}

/* view_as_complex(Tensor(a) self) -> Tensor(a) */
static int
view_as_complex_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    return set_result(s, view_as_complex_impl(s[0].u.t));
}

/* real(Tensor(a) self) -> Tensor(a), imag likewise: a complex tensor's parts as a view with
 * doubled strides; real of a real tensor is the tensor (an alias), imag of one an error. */
static int
real_imag_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int is_imag = op->id == PTL_OP_imag;
    int64_t strides[PTL_MAX_DIMS];
    if (!ptl_dtype_is_complex(self->dtype)) {
        if (is_imag) {
            return ptl_error_set(PTL_ERR_RUNTIME, "imag is not implemented for tensors with "
                                 "non-complex dtypes.");
        }
        return set_result(s, ptl_tensor_impl_view(self, self->dim, self->sizes, self->strides,
                                                  self->storage_offset));
    }
    for (int d = 0; d < self->dim; d++) {
        strides[d] = self->strides[d] * 2;
    }
    return set_result(s, parts_view(self, self->dim, self->sizes, strides,
                                    self->storage_offset * 2 + is_imag));
}

/* ---- complex, polar: two real tensors into one complex ---- */

static void
complex_loop_f4(char **d, const int64_t *s, int64_t n, const void *extra)
{
    int polar = *(const int *)extra;
    for (int64_t i = 0; i < n; i++) {
        float a = *(const float *)(d[1] + i * s[1]), b = *(const float *)(d[2] + i * s[2]);
        *(ptl_complex64 *)(d[0] + i * s[0]) = polar ? ptl_cmplxf(a * cosf(b), a * sinf(b))
                                                    : ptl_cmplxf(a, b);
    }
}

static void
complex_loop_f8(char **d, const int64_t *s, int64_t n, const void *extra)
{
    int polar = *(const int *)extra;
    for (int64_t i = 0; i < n; i++) {
        double a = *(const double *)(d[1] + i * s[1]), b = *(const double *)(d[2] + i * s[2]);
        *(ptl_complex128 *)(d[0] + i * s[0]) = polar ? ptl_cmplx(a * cos(b), a * sin(b))
                                                     : ptl_cmplx(a, b);
    }
}

/* complex(Tensor real, Tensor imag) -> Tensor; polar(Tensor abs, Tensor angle) -> Tensor.
 * Both inputs float32 or both float64 (PyTorch's checks; float16 would give complex32). */
static int
complex_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    static const PtlLoop loops[PTL_DTYPE_COUNT] = {[PTL_DTYPE_FLOAT32] = complex_loop_f4,
                                                   [PTL_DTYPE_FLOAT64] = complex_loop_f8};
    PtlTensorImpl *a = s[0].u.t, *b = s[1].u.t;
    int polar = op->id == PTL_OP_polar;
    int ok_a = a->dtype == PTL_DTYPE_FLOAT32 || a->dtype == PTL_DTYPE_FLOAT64;
    int ok_b = b->dtype == PTL_DTYPE_FLOAT32 || b->dtype == PTL_DTYPE_FLOAT64;
    if (!ok_a || !ok_b) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Expected both inputs to be Float or Double "
                             "tensors (pytorchlite has no complex32) but got %s and %s",
                             ptl_dtype_legacy_name(a->dtype), ptl_dtype_legacy_name(b->dtype));
    }
    if (a->dtype != b->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Expected object of scalar type %s but got scalar "
                             "type %s for second argument", ptl_dtype_legacy_name(a->dtype),
                             ptl_dtype_legacy_name(b->dtype));
    }
    PtlIterConfig cfg = ptl_iter_config();
    cfg.compute_dtype = a->dtype;
    cfg.out_dtype = ptl_dtype_to_complex(a->dtype);
    return ptl_pointwise(op, s, 2, self_other, cfg, loops, &polar);
}

/* ---- angle, conj ---- */

/* angle of a real value: pi for negatives, 0 otherwise, nan stays nan */
static void
real_angle_f4(char **d, const int64_t *s, int64_t n, const void *extra)
{
    (void)extra;
    for (int64_t i = 0; i < n; i++) {
        float x = *(const float *)(d[1] + i * s[1]);
        *(float *)(d[0] + i * s[0]) = isnan(x) ? x : x < 0 ? 3.14159265358979323846f : 0.0f;
    }
}

static void
real_angle_f8(char **d, const int64_t *s, int64_t n, const void *extra)
{
    (void)extra;
    for (int64_t i = 0; i < n; i++) {
        double x = *(const double *)(d[1] + i * s[1]);
        *(double *)(d[0] + i * s[0]) = isnan(x) ? x : x < 0 ? 3.14159265358979323846 : 0.0;
    }
}

/* angle(Tensor self) -> Tensor: complex -> its argument (real dtype); real and integer
 * inputs -> pi or 0 in a floating dtype (integers in the default one). */
static int
angle_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    static const PtlLoop real_loops[PTL_DTYPE_COUNT] = {[PTL_DTYPE_FLOAT32] = real_angle_f4,
                                                        [PTL_DTYPE_FLOAT64] = real_angle_f8};
    if (ptl_dtype_is_complex(s[0].u.t->dtype)) {
        return to_real_complex(op, ks, s, zangle_loops);
    }
    PtlIterConfig cfg = ptl_iter_config();
    cfg.int_to_float = 1;
    return ptl_pointwise(op, s, 1, self_only, cfg, real_loops, NULL);
}

/* conj(Tensor(a) self) -> Tensor(a): PyTorch sets a lazy conjugate bit; here a complex
 * tensor gets an eager copy (is_conj() stays False) and a real one comes back as an alias.
 * conj_physical(Tensor self) -> Tensor: always a new tensor. */
static int
conj_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    if (ptl_dtype_is_complex(self->dtype)) {
        return ptl_pointwise(op, s, 1, self_only, ptl_iter_config(), zconj_loops, NULL);
    }
    if (op->id == PTL_OP_conj) {
        return set_result(s, ptl_tensor_impl_view(self, self->dim, self->sizes, self->strides,
                                                  self->storage_offset));
    }
    PtlIValue a[2] = {ptl_iv_tensor(self), ptl_iv_none()};
    return set_result(s, ptl_call_tensor(PTL_OP_clone, a));
}

static const PtlKernelReg complex_kernels[] = {
    {PTL_OP_add_Tensor, PTL_KEY_COMPLEX, add_sub_complex},
    {PTL_OP_add__Tensor, PTL_KEY_COMPLEX, add_sub_complex},
    {PTL_OP_add_out, PTL_KEY_COMPLEX, add_sub_complex},
    {PTL_OP_sub_Tensor, PTL_KEY_COMPLEX, add_sub_complex},
    {PTL_OP_sub__Tensor, PTL_KEY_COMPLEX, add_sub_complex},
    {PTL_OP_sub_out, PTL_KEY_COMPLEX, add_sub_complex},
    {PTL_OP_rsub_Tensor, PTL_KEY_COMPLEX, add_sub_complex},
    {PTL_OP_mul_Tensor, PTL_KEY_COMPLEX, mul_complex},
    {PTL_OP_mul__Tensor, PTL_KEY_COMPLEX, mul_complex},
    {PTL_OP_mul_out, PTL_KEY_COMPLEX, mul_complex},
    {PTL_OP_div_Tensor, PTL_KEY_COMPLEX, div_complex},
    {PTL_OP_div__Tensor, PTL_KEY_COMPLEX, div_complex},
    {PTL_OP_div_out, PTL_KEY_COMPLEX, div_complex},
    {PTL_OP_eq_Tensor, PTL_KEY_COMPLEX, compare_complex},
    {PTL_OP_eq__Tensor, PTL_KEY_COMPLEX, compare_complex},
    {PTL_OP_eq_out, PTL_KEY_COMPLEX, compare_complex},
    {PTL_OP_ne_Tensor, PTL_KEY_COMPLEX, compare_complex},
    {PTL_OP_ne__Tensor, PTL_KEY_COMPLEX, compare_complex},
    {PTL_OP_ne_out, PTL_KEY_COMPLEX, compare_complex},
    {PTL_OP_neg, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_neg_, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_neg_out, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_exp, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_exp_, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_exp_out, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_log, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_log_, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_log_out, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_sqrt, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_sqrt_, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_sqrt_out, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_reciprocal, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_reciprocal_, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_reciprocal_out, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_abs, PTL_KEY_COMPLEX, abs_complex},
    {PTL_OP_isclose, PTL_KEY_COMPLEX, isclose_complex},
    {PTL_OP_isnan, PTL_KEY_COMPLEX, predicate_complex},
    {PTL_OP_isinf, PTL_KEY_COMPLEX, predicate_complex},
    {PTL_OP_isfinite, PTL_KEY_COMPLEX, predicate_complex},
    {PTL_OP_abs_, PTL_KEY_COMPLEX, abs_complex},
    {PTL_OP_abs_out, PTL_KEY_COMPLEX, abs_complex},
    {PTL_OP_sum, PTL_KEY_COMPLEX, reduce_complex},
    {PTL_OP_sum_dim_IntList, PTL_KEY_COMPLEX, reduce_complex},
    {PTL_OP_mean, PTL_KEY_COMPLEX, reduce_complex},
    {PTL_OP_mean_dim, PTL_KEY_COMPLEX, reduce_complex},
    {PTL_OP_real, PTL_KEY_CPU, real_imag_cpu},
    {PTL_OP_imag, PTL_KEY_CPU, real_imag_cpu},
    {PTL_OP_view_as_real, PTL_KEY_CPU, view_as_real_cpu},
    {PTL_OP_view_as_complex, PTL_KEY_CPU, view_as_complex_cpu},
    {PTL_OP_complex, PTL_KEY_CPU, complex_cpu},
    {PTL_OP_polar, PTL_KEY_CPU, complex_cpu},
    {PTL_OP_angle, PTL_KEY_CPU, angle_cpu},
    {PTL_OP_conj, PTL_KEY_CPU, conj_cpu},
    {PTL_OP_conj_physical, PTL_KEY_CPU, conj_cpu},
};

/* Registers the table and the Complex fallback (native.def). */
int
ptl_register_complex_kernels(void)
{
    for (size_t i = 0; i < sizeof(passthrough_ops) / sizeof(passthrough_ops[0]); i++) {
        passthrough[passthrough_ops[i]] = 1;
    }
    ptl_dispatcher_register_fallback(PTL_KEY_COMPLEX, complex_fallback);
    return ptl_dispatcher_register(complex_kernels,
                                   sizeof(complex_kernels) / sizeof(complex_kernels[0]),
                                   __FILE__);
}
