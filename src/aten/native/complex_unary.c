/* complex_unary.c -- the complex64/complex128 kernels of the unary pointwise math ops
 * (trigonometric and hyperbolic functions and their inverses, sigmoid, silu, rsqrt, log1p,
 * expm1, log10, log2, exp2, square, nan_to_num), of silu_backward and of the logical ops,
 * registered at the Complex key.  Mirrors the complex branches of
 * ATen/native/cpu/UnaryOpsKernel.cpp and c10/util/complex_math.h.  See Note [Complex
 * dtypes] in complex.c and Note [Complex elementwise math] below.
 *
 * Note [Complex elementwise math]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Each function is written once, for complex128; a complex64 element widens exactly to
 * complex128, goes through the same function and is rounded once (PyTorch computes in
 * float, a few ulp less accurate; the cost is small next to the libm calls).
 *   - sin, cos, tan, their hyperbolic twins and the six inverses are C99's (Annex G): their
 *     branch cuts, signed zeros and infinities are the ones NumPy and PyTorch give, and
 *     tanh of a large real part is +-1, not NaN;
 *   - log1p(z) = log|1 + z| + i arg(1 + z) with log|1 + z| = log1p(2x + x^2 + y^2) / 2 near
 *     0, the sum compensated (its products' and its sum's rounding errors added back), so
 *     that z on the circle |1 + z| = 1 keeps its relative accuracy (NumPy takes log(1 + z)
 *     and loses it all there);
 *   - expm1(z) = expm1(x) cos y - 2 sin^2(y/2) + i e^x sin y: no cancellation near 0;
 *   - sigmoid(z) = 1 / (1 + e^-z) for Re z >= 0, e^z / (1 + e^z) otherwise, so that a large
 *     negative real part gives a tiny value rather than PyTorch's NaN (its 1 / (inf + inf i)
 *     division): the simple correct answer, as docs/ says of such accidents; silu(z) is
 *     z sigmoid(z);
 *   - exp2(z) = 2^x e^{i y ln 2}, log2 and log10 scale clog's parts: exact on the real axis
 *     (2^x is exp2(x), not exp(x ln 2));
 *   - rsqrt(z) = 1 / sqrt(z) with C99's division (inf + nan i at 0, as PyTorch); square is
 *     the exception to the widening: the textbook z z in the tensor's dtype, as mul computes
 *     it (complex_math.h's ptl_cmul / ptl_cmulf);
 *   - a real part or an imaginary part at +-inf with y = 0 keeps y exact: expm1(inf + 0i) is
 *     inf + 0i (PyTorch gives inf + nan i from inf * 0).
 * nan_to_num replaces the parts separately (their dtype's largest value for +-inf), and the
 * logical ops read a complex value as true when either part is nonzero, as PyTorch does. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "../../c10/error.h"
#include "../complex_math.h"
#include "binary_loops.h"
#include "native.h"

#define LN2 0.693147180559945309417232121458176568
#define LN10 2.30258509299404568401799145468436421

/* ---- the formulas (complex128) ---- */

static inline ptl_complex128
zsigmoid(ptl_complex128 z)
{
    if (creal(z) >= 0) {
        return 1.0 / (1.0 + cexp(-z));
    }
    ptl_complex128 e = cexp(z);
    return e / (1.0 + e);
}

static inline ptl_complex128
zrsqrt(ptl_complex128 z)
{
    return 1.0 / csqrt(z);
}

static inline ptl_complex128
zexpm1(ptl_complex128 z)
{
    double x = creal(z), y = cimag(z);
    if (y == 0) {
        return ptl_cmplx(expm1(x), y);
    }
    if (!isfinite(x) || !isfinite(y)) {
        return cexp(z) - 1.0;
    }
    double s = sin(0.5 * y);
    return ptl_cmplx(expm1(x) * cos(y) - 2.0 * s * s, exp(x) * sin(y));
}

static inline ptl_complex128
zexp2(ptl_complex128 z)
{
    double x = creal(z), y = cimag(z);
    if (y == 0) {
        return ptl_cmplx(exp2(x), y);
    }
    double r = exp2(x), t = y * LN2;
    return ptl_cmplx(r * cos(t), r * sin(t));
}

static inline ptl_complex128
zlog2(ptl_complex128 z)
{
    ptl_complex128 l = clog(z);
    return ptl_cmplx(creal(l) / LN2, cimag(l) / LN2);
}

static inline ptl_complex128
zlog10(ptl_complex128 z)
{
    ptl_complex128 l = clog(z);
    return ptl_cmplx(creal(l) / LN10, cimag(l) / LN10);
}

/* ---- loops: o = F(a) over complex64 (through complex128) and complex128 ---- */

/* NAME_loops: FN (a function of a complex128) as unary_loops.h's loops, complex64 widened */
#define Z_WIDEN(A) ((ptl_complex128)(A))
#define Z_NARROW(A) ((ptl_complex64)(A))
#define Z_MATH_LOOPS(NAME, FN)                                                             \
    static inline ptl_complex128 NAME##_of(ptl_complex128 z, const void *extra)            \
    {                                                                                      \
        (void)extra;                                                                       \
        return FN(z);                                                                      \
    }                                                                                      \
    DEFINE_UNARY_LOOP(NAME, ptl_complex64, ptl_complex64, c8, Z_WIDEN, Z_NARROW, NAME##_of) \
    DEFINE_UNARY_LOOP(NAME, ptl_complex128, ptl_complex128, c16, PTL_ID, PTL_ID, NAME##_of) \
    static const PtlLoop NAME##_loops[PTL_DTYPE_COUNT] = {                                 \
        [PTL_DTYPE_COMPLEX64] = NAME##_loop_c8, [PTL_DTYPE_COMPLEX128] = NAME##_loop_c16};

Z_MATH_LOOPS(zsin, csin)
Z_MATH_LOOPS(zcos, ccos)
Z_MATH_LOOPS(ztan, ctan)
Z_MATH_LOOPS(zsinh, csinh)
Z_MATH_LOOPS(zcosh, ccosh)
Z_MATH_LOOPS(ztanh, ctanh)
Z_MATH_LOOPS(zasin, casin)
Z_MATH_LOOPS(zacos, cacos)
Z_MATH_LOOPS(zatan, catan)
Z_MATH_LOOPS(zasinh, casinh)
Z_MATH_LOOPS(zacosh, cacosh)
Z_MATH_LOOPS(zatanh, catanh)
Z_MATH_LOOPS(zsigmoid, zsigmoid)
Z_MATH_LOOPS(zrsqrt, zrsqrt)
Z_MATH_LOOPS(zlog1p, ptl_clog1p)
Z_MATH_LOOPS(zexpm1, zexpm1)
Z_MATH_LOOPS(zexp2, zexp2)
Z_MATH_LOOPS(zlog2, zlog2)
Z_MATH_LOOPS(zlog10, zlog10)
#define ZSILU(A) ptl_cmul((A), zsigmoid(A))
Z_MATH_LOOPS(zsilu, ZSILU)

/* silu_backward(g, x) = g s (1 + x (1 - s)), s = sigmoid(x): PyTorch's kernel, whose
 * derivative factor is not conjugated (autograd's silu conjugates it instead:
 * derivatives/activation.c) */
static inline ptl_complex128
zsilu_backward(ptl_complex128 g, ptl_complex128 x)
{
    ptl_complex128 s = zsigmoid(x);
    return ptl_cmul(ptl_cmul(g, s), 1.0 + ptl_cmul(x, 1.0 - s));
}
#define ZSILU_BACKWARD(G, X, E) zsilu_backward((G), (X))
DEFINE_BINARY_LOOP(zsilu_backward, ptl_complex64, c8, ptl_complex128, Z_WIDEN, Z_NARROW,
                   ZSILU_BACKWARD)
DEFINE_BINARY_LOOP(zsilu_backward, ptl_complex128, c16, ptl_complex128, PTL_ID, PTL_ID,
                   ZSILU_BACKWARD)
static const PtlLoop zsilu_backward_loops[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_COMPLEX64] = zsilu_backward_loop_c8,
    [PTL_DTYPE_COMPLEX128] = zsilu_backward_loop_c16};

/* square: z z in the tensor's own dtype, as mul computes it (complex_math.h's textbook
 * product) */
#define ZSQUARE_C8(A, E) ptl_cmulf((A), (A))
#define ZSQUARE_C16(A, E) ptl_cmul((A), (A))
DEFINE_UNARY_LOOP(zsquare, ptl_complex64, ptl_complex64, c8, PTL_ID, PTL_ID, ZSQUARE_C8)
DEFINE_UNARY_LOOP(zsquare, ptl_complex128, ptl_complex128, c16, PTL_ID, PTL_ID, ZSQUARE_C16)
static const PtlLoop zsquare_loops[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_COMPLEX64] = zsquare_loop_c8, [PTL_DTYPE_COMPLEX128] = zsquare_loop_c16};

/* nan_to_num: each part's NaN, +inf and -inf replaced by r[0], r[1], r[2] */
static inline double
part_to_num(double v, const double *r)
{
    return isnan(v) ? r[0] : v == INFINITY ? r[1] : v == -INFINITY ? r[2] : v;
}

#define Z_NAN_TO_NUM_LOOP(SUF, T, R)                                                       \
    static void znan_to_num_loop_##SUF(char **d, const int64_t *s, int64_t n,              \
                                       const void *extra)                                  \
    {                                                                                      \
        const double *r = extra;                                                           \
        for (int64_t i = 0; i < n; i++) {                                                  \
            T a = *(const T *)(d[1] + i * s[1]), o;                                        \
            __real__ o = (R)part_to_num(__real__ a, r);                                    \
            __imag__ o = (R)part_to_num(__imag__ a, r);                                    \
            *(T *)(d[0] + i * s[0]) = o;                                                   \
        }                                                                                  \
    }
Z_NAN_TO_NUM_LOOP(c8, ptl_complex64, float)
Z_NAN_TO_NUM_LOOP(c16, ptl_complex128, double)
static const PtlLoop znan_to_num_loops[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_COMPLEX64] = znan_to_num_loop_c8, [PTL_DTYPE_COMPLEX128] = znan_to_num_loop_c16};

/* logical_not (one input) and logical_and / or / xor (two): bool results, a complex value
 * true when either part is nonzero */
#define ZTRUE(A) (__real__(A) != 0 || __imag__(A) != 0)
#define ZNOT(A, B) ((void)(B), !ZTRUE(A))
#define ZAND(A, B) (ZTRUE(A) && ZTRUE(B))
#define ZOR(A, B) (ZTRUE(A) || ZTRUE(B))
#define ZXOR(A, B) (ZTRUE(A) != ZTRUE(B))
#define Z_LOGICAL_LOOP(NAME, SUF, T, F, NIN)                                               \
    static void NAME##_loop_##SUF(char **d, const int64_t *s, int64_t n, const void *extra) \
    {                                                                                      \
        (void)extra;                                                                       \
        if (s[0] == 1 && s[1] == sizeof(T) && (NIN == 1 || s[NIN] == sizeof(T))) {         \
            uint8_t *o = (uint8_t *)d[0];                                                  \
            const T *a = (const T *)d[1], *b = (const T *)d[NIN];                          \
            for (int64_t i = 0; i < n; i++) {                                              \
                o[i] = (uint8_t)F(a[i], b[i]);                                             \
            }                                                                              \
            return;                                                                        \
        }                                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                  \
            T a = *(const T *)(d[1] + i * s[1]);                                           \
            T b = *(const T *)(d[NIN] + i * s[NIN]);                                       \
            *(uint8_t *)(d[0] + i * s[0]) = (uint8_t)F(a, b);                              \
        }                                                                                  \
    }
#define Z_LOGICAL(NAME, F, NIN)                                                            \
    Z_LOGICAL_LOOP(NAME, c8, ptl_complex64, F, NIN)                                        \
    Z_LOGICAL_LOOP(NAME, c16, ptl_complex128, F, NIN)                                      \
    static const PtlLoop NAME##_loops[PTL_DTYPE_COUNT] = {                                 \
        [PTL_DTYPE_COMPLEX64] = NAME##_loop_c8, [PTL_DTYPE_COMPLEX128] = NAME##_loop_c16};
Z_LOGICAL(znot, ZNOT, 1)
Z_LOGICAL(zand, ZAND, 2)
Z_LOGICAL(zor, ZOR, 2)
Z_LOGICAL(zxor, ZXOR, 2)

/* ---- kernels ---- */

static const int self_other[2] = {0, 1};

/* Each op's loops, by op id (filled from `families` at registration) */
static const PtlLoop *op_loops[PTL_OP_COUNT];

/* A complex tensor on CUDA: PyTorch's "not implemented" with the CUDA kernel's name */
static int
cuda_refusal(const PtlOperator *op, const PtlIValue *s)
{
    char kname[80];
    ptl_kernel_name(op, kname, sizeof(kname));
    memcpy(kname + strlen(kname) - 3, "cuda", 5);
    PtlDtype dt = s[0].u.t->dtype;
    for (int i = 0; i < op->schema.nargs && !ptl_dtype_is_complex(dt); i++) {
        if (s[i].tag == PTL_IV_TENSOR) {
            dt = s[i].u.t->dtype;
        }
    }
    return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'", kname,
                         ptl_dtype_legacy_name(dt));
}

/* sin(Tensor self) -> Tensor and the other math ops of `families` (their _ and .out forms).
 * A real input with a complex out= tensor computes in its real dtype, as PyTorch's does
 * (log2 of -1 is nan, cast to nan + 0i): the real kernel writes the out= tensor. */
static int
unary_math_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    if (!ptl_dtype_is_complex(s[0].u.t->dtype)) {
        return ptl_dispatcher_redispatch(op, ks & ptl_keyset_below(PTL_KEY_COMPLEX), s);
    }
    if (ks & PTL_KEYSET(PTL_KEY_CUDA)) {
        return cuda_refusal(op, s);
    }
    return ptl_pointwise(op, s, 1, self_other, ptl_iter_config(), op_loops[op->id], NULL);
}

/* nan_to_num(Tensor self, float? nan, float? posinf, float? neginf): the defaults for +-inf
 * are the largest finite values of the parts' dtype */
static int
nan_to_num_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    double r[3];
    if (ks & PTL_KEYSET(PTL_KEY_CUDA)) {
        return cuda_refusal(op, s);
    }
    if (ptl_nan_to_num_prepare(op, s, r) < 0) {
        return -1;
    }
    if (s[0].u.t->dtype == PTL_DTYPE_COMPLEX64) {
        r[1] = s[2].tag == PTL_IV_NONE ? FLT_MAX : r[1];
        r[2] = s[3].tag == PTL_IV_NONE ? -FLT_MAX : r[2];
    }
    return ptl_pointwise(op, s, 1, self_other, ptl_iter_config(), znan_to_num_loops, r);
}

/* silu_backward(Tensor grad_output, Tensor self) -> Tensor with a complex operand */
static int
silu_backward_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    static const double unused = 0;
    if (ks & PTL_KEYSET(PTL_KEY_CUDA)) {
        return cuda_refusal(op, s);
    }
    return ptl_pointwise(op, s, 2, self_other, ptl_iter_config(), zsilu_backward_loops,
                         &unused);
}

/* logical_not / logical_and / logical_or / logical_xor (and their _ and .out forms) with a
 * complex operand: bool, written into an in-place or out= tensor in its own dtype */
static int
logical_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    if (ks & PTL_KEYSET(PTL_KEY_CUDA)) {
        return cuda_refusal(op, s);
    }
    int nin = op_loops[op->id] == znot_loops ? 1 : 2;
    PtlIterConfig cfg = ptl_iter_config();
    cfg.out_dtype = PTL_DTYPE_BOOL;
    int any_complex = 0;
    for (int i = 0; i < nin; i++) {
        any_complex |= ptl_dtype_is_complex(s[i].u.t->dtype);
    }
    if (!any_complex) {   /* only the out= tensor is complex: the real kernel writes it */
        return ptl_dispatcher_redispatch(op, ks & ptl_keyset_below(PTL_KEY_COMPLEX), s);
    }
    return ptl_pointwise(op, s, nin, self_other, cfg, op_loops[op->id], NULL);
}

/* ORDER: each family lists the functional op, its in-place form and its out= form (-1:
 * none) */
static const struct {
    int ops[3];
    const PtlLoop *loops;
} families[] = {
    {{PTL_OP_sin, PTL_OP_sin_, PTL_OP_sin_out}, zsin_loops},
    {{PTL_OP_cos, PTL_OP_cos_, PTL_OP_cos_out}, zcos_loops},
    {{PTL_OP_tan, PTL_OP_tan_, PTL_OP_tan_out}, ztan_loops},
    {{PTL_OP_sinh, PTL_OP_sinh_, PTL_OP_sinh_out}, zsinh_loops},
    {{PTL_OP_cosh, PTL_OP_cosh_, PTL_OP_cosh_out}, zcosh_loops},
    {{PTL_OP_tanh, PTL_OP_tanh_, PTL_OP_tanh_out}, ztanh_loops},
    {{PTL_OP_asin, PTL_OP_asin_, PTL_OP_asin_out}, zasin_loops},
    {{PTL_OP_acos, PTL_OP_acos_, PTL_OP_acos_out}, zacos_loops},
    {{PTL_OP_atan, PTL_OP_atan_, PTL_OP_atan_out}, zatan_loops},
    {{PTL_OP_asinh, PTL_OP_asinh_, PTL_OP_asinh_out}, zasinh_loops},
    {{PTL_OP_acosh, PTL_OP_acosh_, PTL_OP_acosh_out}, zacosh_loops},
    {{PTL_OP_atanh, PTL_OP_atanh_, PTL_OP_atanh_out}, zatanh_loops},
    {{PTL_OP_sigmoid, PTL_OP_sigmoid_, PTL_OP_sigmoid_out}, zsigmoid_loops},
    {{PTL_OP_rsqrt, PTL_OP_rsqrt_, PTL_OP_rsqrt_out}, zrsqrt_loops},
    {{PTL_OP_log1p, PTL_OP_log1p_, PTL_OP_log1p_out}, zlog1p_loops},
    {{PTL_OP_expm1, PTL_OP_expm1_, PTL_OP_expm1_out}, zexpm1_loops},
    {{PTL_OP_exp2, PTL_OP_exp2_, PTL_OP_exp2_out}, zexp2_loops},
    {{PTL_OP_log2, PTL_OP_log2_, PTL_OP_log2_out}, zlog2_loops},
    {{PTL_OP_log10, PTL_OP_log10_, PTL_OP_log10_out}, zlog10_loops},
    {{PTL_OP_square, PTL_OP_square_, PTL_OP_square_out}, zsquare_loops},
    {{PTL_OP_silu, PTL_OP_silu_, -1}, zsilu_loops},
    {{PTL_OP_nan_to_num, PTL_OP_nan_to_num_, PTL_OP_nan_to_num_out}, znan_to_num_loops},
    {{PTL_OP_logical_not, PTL_OP_logical_not_, PTL_OP_logical_not_out}, znot_loops},
    {{PTL_OP_logical_and, PTL_OP_logical_and_, PTL_OP_logical_and_out}, zand_loops},
    {{PTL_OP_logical_or, PTL_OP_logical_or_, PTL_OP_logical_or_out}, zor_loops},
    {{PTL_OP_logical_xor, PTL_OP_logical_xor_, PTL_OP_logical_xor_out}, zxor_loops},
};

#define NFAMILIES (sizeof(families) / sizeof(families[0]))

/* Registers each family's three ops at the Complex key (native.def). */
int
ptl_register_complex_unary_kernels(void)
{
    PtlKernelReg regs[3 * NFAMILIES + 1];
    size_t nregs = 0;
    regs[nregs++] = (PtlKernelReg){PTL_OP_silu_backward, PTL_KEY_COMPLEX, silu_backward_complex};
    for (size_t f = 0; f < NFAMILIES; f++) {
        const PtlLoop *loops = families[f].loops;
        PtlKernel k = loops == znan_to_num_loops ? nan_to_num_complex
                      : (loops == znot_loops || loops == zand_loops || loops == zor_loops ||
                         loops == zxor_loops) ? logical_complex
                                              : unary_math_complex;
        for (int j = 0; j < 3 && families[f].ops[j] >= 0; j++) {
            op_loops[families[f].ops[j]] = loops;
            regs[nregs++] = (PtlKernelReg){families[f].ops[j], PTL_KEY_COMPLEX, k};
        }
    }
    return ptl_dispatcher_register(regs, nregs, __FILE__);
}
