/* register_cuda_math.c -- the CUDA kernels of the pointwise math ops that elementwise.cu's
 * math family and predicates run (PTL_CUDA_OP_MATH, MATH2, MATH3, PREDICATE; cuda_api.h's
 * PtlCudaMathFn): unary.c's exp2 ... digamma, polygamma, frac, floor, ceil, trunc, round,
 * square, nan_to_num, bitwise_not, isnan, isinf, isfinite and logical_not; binary.c's atan2,
 * maximum / minimum / fmax / fmin, pow, the rounding divisions, remainder and fmod;
 * compare.c's bitwise ops, shifts, isclose and allclose; ternary.c's lerp, addcmul and
 * addcdiv; activation.c's threshold.  Mirrors the CUDA entries of native_functions.yaml's
 * dispatch sections for them.  Each kernel makes the CPU kernel's checks and dtype choices,
 * with its messages (named for the CUDA kernel where PyTorch's names the kernel), then
 * launches once; the per-element formulas are scalar_math.h's, the functions the CPU loops
 * call (Note [CUDA elementwise launch] in elementwise.cu). */
#include "register_cuda_impl.h"

#include <math.h>
#include <string.h>

#include "../aten/native/native.h"
#include "../c10/error.h"

#ifdef PTL_WITH_CUDA

static const int first[1] = {0};
static const int first_two[2] = {0, 1};
static const int first_three[3] = {0, 1, 2};

/* The dtypes a function takes: the non-NULL entries of the CPU op's loop table */
enum { T_FLOAT = 1, T_INT = 2, T_BOOL = 4, T_ALL = 7 };

static int
takes(int mask, PtlDtype dt)
{
    if (ptl_dtype_is_floating(dt)) {
        return mask & T_FLOAT;
    }
    if (dt == PTL_DTYPE_BOOL) {
        return mask & T_BOOL;
    }
    return ptl_dtype_is_integral(dt, 0) ? mask & T_INT : 0;
}

/* PyTorch's dtype error for the CUDA kernel `name`; always -1 */
static int
not_implemented(const char *name, PtlDtype dt)
{
    return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s_cuda\" not implemented for '%s'", name,
                         ptl_dtype_legacy_name(dt));
}

/* ---- unary ops (unary.c's unary_run) ---- */

enum {
    U_FLOAT = 1,    /* integer and bool inputs compute in the default float dtype */
    U_STRICT = 2,   /* out= must have self's dtype */
};

typedef struct MathUnary {
    PtlOpId op[3];  /* functional, in-place, out= */
    PtlCudaMathFn fn;
    int flags, takes;
} MathUnary;

#define ROW(NAME, FN, FLAGS, TAKES) \
    {{PTL_OP_##NAME, PTL_OP_##NAME##_, PTL_OP_##NAME##_out}, PTL_CUDA_MATH_##FN, FLAGS, TAKES}
static const MathUnary math_unary[] = {
    ROW(exp2, EXP2, U_FLOAT, T_FLOAT),   ROW(expm1, EXPM1, U_FLOAT, T_FLOAT),
    ROW(log2, LOG2, U_FLOAT, T_FLOAT),   ROW(log10, LOG10, U_FLOAT, T_FLOAT),
    ROW(log1p, LOG1P, U_FLOAT, T_FLOAT), ROW(rsqrt, RSQRT, U_FLOAT, T_FLOAT),
    ROW(sin, SIN, U_FLOAT, T_FLOAT),     ROW(cos, COS, U_FLOAT, T_FLOAT),
    ROW(tan, TAN, U_FLOAT, T_FLOAT),     ROW(asin, ASIN, U_FLOAT, T_FLOAT),
    ROW(acos, ACOS, U_FLOAT, T_FLOAT),   ROW(atan, ATAN, U_FLOAT, T_FLOAT),
    ROW(sinh, SINH, U_FLOAT, T_FLOAT),   ROW(cosh, COSH, U_FLOAT, T_FLOAT),
    ROW(erf, ERF, U_FLOAT, T_FLOAT),     ROW(erfinv, ERFINV, U_FLOAT, T_FLOAT),
    ROW(lgamma, LGAMMA, U_FLOAT, T_FLOAT), ROW(digamma, DIGAMMA, U_FLOAT, T_FLOAT),
    ROW(frac, FRAC, U_STRICT, T_FLOAT),
    ROW(floor, FLOOR, U_STRICT, T_FLOAT | T_INT), ROW(ceil, CEIL, U_STRICT, T_FLOAT | T_INT),
    ROW(trunc, TRUNC, U_STRICT, T_FLOAT | T_INT),
    ROW(square, SQUARE, 0, T_FLOAT | T_INT),
    ROW(bitwise_not, BITWISE_NOT, U_STRICT, T_INT | T_BOOL),
};
#undef ROW

/* Runs unary function fn with parameters p[1..3] (p[0] is set here) over s[0] */
static int
run_unary(const PtlOperator *op, PtlIValue *s, PtlCudaMathFn fn, int flags, int mask,
          double *p)
{
    PtlTensorImpl *self = s[0].u.t, *out = ptl_kernel_out(op, s);
    PtlIterConfig cfg = ptl_iter_config();
    PtlDtype dt = self->dtype;
    if ((flags & U_STRICT) && out != NULL && out->dtype != self->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Found dtype %s but expected %s",
                             ptl_dtype_legacy_name(out->dtype),
                             ptl_dtype_legacy_name(self->dtype));
    }
    cfg.int_to_float = (flags & U_FLOAT) != 0;
    if (fn == PTL_CUDA_MATH_SQUARE && dt == PTL_DTYPE_BOOL) {
        /* square is pow(self, 2): bool promotes with the int 2 to int64 */
        dt = cfg.compute_dtype = PTL_DTYPE_INT64;
    }
    if (!cfg.int_to_float && !takes(mask, dt)) {
        return ptl_cuda_dtype_not_implemented(op, dt);
    }
    p[0] = dt == PTL_DTYPE_BOOL && fn == PTL_CUDA_MATH_BITWISE_NOT ? PTL_CUDA_MATH_BOOL_NOT
                                                                   : fn;
    return ptl_cuda_pointwise_run(op, s, 1, first, cfg, PTL_CUDA_OP_MATH, p);
}

static int
unary_math_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    for (size_t k = 0; k < sizeof(math_unary) / sizeof(math_unary[0]); k++) {
        const MathUnary *u = &math_unary[k];
        if ((int)u->op[0] == op->id || (int)u->op[1] == op->id || (int)u->op[2] == op->id) {
            double p[PTL_CUDA_MAX_PARAMS] = {0, 0, 0, 0};
            return run_unary(op, s, u->fn, u->flags, u->takes, p);
        }
    }
    return ptl_error_set(PTL_ERR_RUNTIME, "unary_math_cuda: unknown op");
}

/* round(Tensor self) and round.decimals(Tensor self, *, int decimals): unary.c's round_cpu,
 * 10^|decimals| in float and in double */
static int
round_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    double p[PTL_CUDA_MAX_PARAMS] = {0, 0, 1, 1};
    (void)ks;
    if (op->id == PTL_OP_round_decimals || op->id == PTL_OP_round__decimals ||
        op->id == PTL_OP_round_decimals_out) {
        double digits = s[1].u.i < 0 ? -(double)s[1].u.i : (double)s[1].u.i;
        p[1] = (double)s[1].u.i;
        p[2] = (double)powf(10.0f, (float)digits);
        p[3] = pow(10.0, digits);
        if (!ptl_dtype_is_floating(s[0].u.t->dtype)) {
            return not_implemented("round", s[0].u.t->dtype);
        }
    }
    return run_unary(op, s, PTL_CUDA_MATH_ROUND, U_STRICT, T_FLOAT | T_INT, p);
}

/* nan_to_num(Tensor self, float? nan, float? posinf, float? neginf): unary.c's checks and
 * defaults (ptl_nan_to_num_prepare); integers and bool pass through */
static int
nan_to_num_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    double p[PTL_CUDA_MAX_PARAMS];
    (void)ks;
    if (ptl_nan_to_num_prepare(op, s, p + 1) < 0) {
        return -1;
    }
    return run_unary(op, s, PTL_CUDA_MATH_NAN_TO_NUM, 0, T_ALL, p);
}

/* polygamma(int n, Tensor self), polygamma.out(int n, Tensor self, *, out) and
 * polygamma_(Tensor(a!) self, int n): unary.c's polygamma_cpu */
static int
polygamma_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    static const int second[1] = {1};
    int inplace = op->id == PTL_OP_polygamma_;
    int64_t n = s[inplace ? 1 : 0].u.i;
    double p[PTL_CUDA_MAX_PARAMS] = {PTL_CUDA_MATH_POLYGAMMA, (double)n, 0, 0};
    PtlIterConfig cfg = ptl_iter_config();
    (void)ks;
    if (n < 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "polygamma(n, x) does not support negative n.");
    }
    cfg.int_to_float = 1;
    return ptl_cuda_pointwise_run(op, s, 1, inplace ? first : second, cfg, PTL_CUDA_OP_MATH, p);
}

/* torch.special's unary functions of special.c (its special_run): integer and bool inputs
 * compute in the default float dtype; the functional and out= overloads */
static const struct {
    PtlOpId op[2];
    PtlCudaMathFn fn;
} special_unary[] = {
#define SPECIAL_ROW(NAME, FN) \
    {{PTL_OP_special_##NAME, PTL_OP_special_##NAME##_out}, PTL_CUDA_MATH_##FN}
    SPECIAL_ROW(ndtr, NDTR), SPECIAL_ROW(log_ndtr, LOG_NDTR), SPECIAL_ROW(ndtri, NDTRI),
    SPECIAL_ROW(erfcx, ERFCX), SPECIAL_ROW(bessel_j0, BESSEL_J0),
    SPECIAL_ROW(bessel_j1, BESSEL_J1), SPECIAL_ROW(bessel_y0, BESSEL_Y0),
    SPECIAL_ROW(bessel_y1, BESSEL_Y1), SPECIAL_ROW(modified_bessel_k0, BESSEL_K0),
    SPECIAL_ROW(modified_bessel_k1, BESSEL_K1),
    SPECIAL_ROW(scaled_modified_bessel_k0, BESSEL_K0E),
    SPECIAL_ROW(scaled_modified_bessel_k1, BESSEL_K1E),
    SPECIAL_ROW(spherical_bessel_j0, SPHERICAL_J0), SPECIAL_ROW(airy_ai, AIRY_AI),
#undef SPECIAL_ROW
};

static int
special_unary_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    for (size_t k = 0; k < sizeof(special_unary) / sizeof(special_unary[0]); k++) {
        if ((int)special_unary[k].op[0] == op->id || (int)special_unary[k].op[1] == op->id) {
            double p[PTL_CUDA_MAX_PARAMS] = {special_unary[k].fn, 0, 0, 0};
            PtlIterConfig cfg = ptl_iter_config();
            cfg.int_to_float = 1;
            return ptl_cuda_pointwise_run(op, s, 1, first, cfg, PTL_CUDA_OP_MATH, p);
        }
    }
    return ptl_error_set(PTL_ERR_RUNTIME, "special_unary_cuda: unknown op");
}

/* threshold(Tensor self, Scalar threshold, Scalar value) (and threshold_): activation.c's
 * act_cpu, both parameters rounded to self's dtype; integers too */
static int
threshold_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlDtype dt = s[0].u.t->dtype;
    double p[PTL_CUDA_MAX_PARAMS] = {PTL_CUDA_MATH_THRESHOLD,
                                     ptl_activation_param(ptl_iv_to_double(&s[1]), dt, 1),
                                     ptl_activation_param(ptl_iv_to_double(&s[2]), dt, 1), 0};
    (void)ks;
    if (ptl_activation_check(op, s) < 0) {
        return -1;
    }
    if (!takes(T_FLOAT | T_INT, dt)) {
        return ptl_cuda_dtype_not_implemented(op, dt);
    }
    return ptl_cuda_pointwise_run(op, s, 1, first, ptl_iter_config(), PTL_CUDA_OP_MATH, p);
}

/* isnan, isinf, isfinite (functional) and logical_not (+ in-place, out=): unary.c's
 * U_BOOL_OUT ops, every dtype; an in-place form writes through a bool temporary into self's
 * dtype (Note [TensorIterator]) */
static int
predicate_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    const char *name = op->schema.name + strlen("aten::");
    PtlIterConfig cfg = ptl_iter_config();
    double p[PTL_CUDA_MAX_PARAMS] = {strcmp(name, "isnan") == 0      ? PTL_CUDA_MATH_ISNAN
                                     : strcmp(name, "isinf") == 0    ? PTL_CUDA_MATH_ISINF
                                     : strcmp(name, "isfinite") == 0 ? PTL_CUDA_MATH_ISFINITE
                                                                     : PTL_CUDA_MATH_LOGICAL_NOT,
                                     0, 0, 0};
    (void)ks;
    cfg.out_dtype = PTL_DTYPE_BOOL;
    return ptl_cuda_pointwise_run(op, s, 1, first, cfg, PTL_CUDA_OP_PREDICATE, p);
}

/* isclose(Tensor self, Tensor other, float rtol, float atol, bool equal_nan): compare.c's
 * checks (ptl_isclose_check) */
static int
isclose_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlIterConfig cfg = ptl_iter_config();
    double p[PTL_CUDA_MAX_PARAMS] = {PTL_CUDA_MATH_ISCLOSE, s[2].u.d, s[3].u.d, s[4].u.b};
    (void)ks;
    if (ptl_isclose_check(s) < 0) {
        return -1;
    }
    cfg.out_dtype = PTL_DTYPE_BOOL;
    return ptl_cuda_pointwise_run(op, s, 2, first_two, cfg, PTL_CUDA_OP_PREDICATE, p);
}

/* ---- binary ops (binary.c, compare.c) ---- */

/* Runs binary function fn on (s[0], s[1]) in their result type, which `mask` must take
 * unless int_to_float; name: the kernel's in PyTorch's dtype error.  *dt gets the result
 * type. */
static int
run_binary(const PtlOperator *op, PtlIValue *s, PtlCudaMathFn fn, int mask, int int_to_float,
           const char *name, PtlDtype *dt)
{
    PtlTensorImpl *ab[2] = {s[0].u.t, s[1].u.t};
    PtlIterConfig cfg = ptl_iter_config();
    *dt = ptl_result_type(ab, 2);
    double p[PTL_CUDA_MAX_PARAMS] = {fn, 8.0 * (double)ptl_dtype_itemsize(*dt), 0, 0};
    cfg.int_to_float = int_to_float;
    if (!(int_to_float && !ptl_dtype_is_complex(*dt)) && !takes(mask, *dt)) {
        return not_implemented(name, *dt);
    }
    return ptl_cuda_pointwise_run(op, s, 2, first_two, cfg, PTL_CUDA_OP_MATH2, p);
}

static int
atan2_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlDtype dt;
    (void)ks;
    return run_binary(op, s, PTL_CUDA_MATH_ATAN2, T_FLOAT, 1, "atan2", &dt);
}

/* maximum, minimum, fmax, fmin (+ out=), max.other and min.other: every dtype */
static int
max_min_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    const char *name = op->schema.name + strlen("aten::");
    PtlCudaMathFn fn = strncmp(name, "max", 3) == 0   ? PTL_CUDA_MATH_MAXIMUM
                       : strncmp(name, "min", 3) == 0 ? PTL_CUDA_MATH_MINIMUM
                       : strcmp(name, "fmax") == 0    ? PTL_CUDA_MATH_FMAX
                                                      : PTL_CUDA_MATH_FMIN;
    PtlDtype dt;
    (void)ks;
    return run_binary(op, s, fn, T_ALL, 0, name, &dt);
}

/* bitwise_and/or/xor.Tensor (integers and bool) and the shifts (integers) (+ in-place,
 * out=), compare.c's kernel names */
static int
bitwise_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    const char *name = op->schema.name + strlen("aten::bitwise_");
    PtlCudaMathFn fn = name[0] == 'a'   ? PTL_CUDA_MATH_BITWISE_AND
                       : name[0] == 'o' ? PTL_CUDA_MATH_BITWISE_OR
                       : name[0] == 'x' ? PTL_CUDA_MATH_BITWISE_XOR
                       : name[0] == 'l' ? PTL_CUDA_MATH_LSHIFT
                                        : PTL_CUDA_MATH_RSHIFT;
    int shift = fn == PTL_CUDA_MATH_LSHIFT || fn == PTL_CUDA_MATH_RSHIFT;
    const char *kname = fn == PTL_CUDA_MATH_BITWISE_AND  ? "bitwise_and"
                        : fn == PTL_CUDA_MATH_BITWISE_OR ? "bitwise_or"
                        : fn == PTL_CUDA_MATH_BITWISE_XOR ? "bitwise_xor"
                        : fn == PTL_CUDA_MATH_LSHIFT      ? "lshift"
                                                          : "rshift";
    PtlDtype dt;
    (void)ks;
    return run_binary(op, s, fn, shift ? T_INT : T_INT | T_BOOL, 0, kname, &dt);
}

/* binary.c's div_family: a rounding division, remainder or fmod of s[0] by s[1]; integers
 * stay integers, and a zero integer divisor gives PyTorch's "ZeroDivisionError" once the
 * kernel has run (the output of an in-place or out= call left written, as on the CPU) */
static int
div_family(const PtlOperator *op, PtlIValue *s, PtlCudaMathFn fn, const char *name)
{
    PtlTensorImpl *other = s[1].u.t;
    PtlDtype dt;
    int rc, nonzero = 1;
    ptl_incref(other);
    rc = run_binary(op, s, fn, T_FLOAT | T_INT, 0, name, &dt);
    if (rc == 0 && !ptl_dtype_is_floating(dt) && s[0].u.t->numel > 0 &&
        (nonzero = ptl_all_nonzero(other)) != 1) {
        ptl_ivalue_release(&s[0]);
        rc = nonzero < 0 ? -1 : ptl_error_set(PTL_ERR_RUNTIME, "ZeroDivisionError");
    }
    ptl_decref(other);
    return rc;
}

/* div.Tensor_mode (+ in-place, out=): rounding_mode None is true division (integers give
 * the default float dtype), "trunc" and "floor" keep integer dtypes */
static int
div_mode_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    const char *mode = s[2].tag == PTL_IV_STRING ? s[2].u.s : NULL;
    (void)ks;
    if (mode == NULL) {
        PtlIterConfig cfg = ptl_iter_config();
        cfg.int_to_float = 1;
        return ptl_cuda_pointwise_run(op, s, 2, first_two, cfg, PTL_CUDA_OP_DIV, NULL);
    }
    if (strcmp(mode, "trunc") == 0) {
        return div_family(op, s, PTL_CUDA_MATH_DIV_TRUNC, "div_trunc");
    }
    if (strcmp(mode, "floor") == 0) {
        return div_family(op, s, PTL_CUDA_MATH_DIV_FLOOR, "div_floor");
    }
    return ptl_error_set(PTL_ERR_RUNTIME,
                         "div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                         "but found '%s'",
                         mode);
}

/* floor_divide, remainder.Tensor, fmod.Tensor (+ in-place, out=) */
static int
div_like_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    const char *name = op->schema.name + strlen("aten::");
    (void)ks;
    if (name[0] == 'f' && name[1] == 'l') {
        return div_family(op, s, PTL_CUDA_MATH_DIV_FLOOR, "div_floor");
    }
    return name[0] == 'r' ? div_family(op, s, PTL_CUDA_MATH_REMAINDER, "remainder")
                          : div_family(op, s, PTL_CUDA_MATH_FMOD, "fmod");
}

/* pow.Tensor_Tensor (+ in-place, out=): binary.c's pow_cpu for a tensor exponent; integers
 * by squaring (a negative exponent: 1 / a truncated), bool refused */
static int
pow_tensor_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlDtype dt;
    (void)ks;
    return run_binary(op, s, PTL_CUDA_MATH_POW, T_FLOAT | T_INT, 0, "pow", &dt);
}

/* pow.Scalar(Scalar self, Tensor exponent) (+ out=): the number becomes a wrapped 0-dim
 * tensor, as in binary.c's pow_number_cpu, and pow's tensor kernel runs */
static int
pow_number_base_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *w;
    switch (s[0].tag) {
    case PTL_IV_BOOL: w = ptl_wrapped_bool(s[0].u.b); break;
    case PTL_IV_INT: w = ptl_wrapped_int(s[0].u.i); break;
    default: w = ptl_wrapped_double(ptl_iv_to_double(&s[0])); break;
    }
    if (w == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(w);
    int rc = pow_tensor_cuda(op, ks, s);
    ptl_decref(w);
    return rc;
}

/* ---- lerp, addcmul, addcdiv (ternary.c) ---- */

/* lerp.Scalar(self, end, weight) and lerp.Tensor (and lerp_): ternary.c's checks
 * (ptl_lerp_check), in self's dtype */
static int
lerp_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlIterConfig cfg = ptl_iter_config();
    int scalar = op->id == PTL_OP_lerp_Scalar || op->id == PTL_OP_lerp__Scalar;
    (void)ks;
    if (ptl_lerp_check(s, scalar) < 0) {
        return -1;
    }
    cfg.compute_dtype = s[0].u.t->dtype;
    if (scalar) {
        double p[PTL_CUDA_MAX_PARAMS] = {PTL_CUDA_MATH_LERP_SCALAR, ptl_iv_to_double(&s[2]), 0,
                                         0};
        return ptl_cuda_pointwise_run(op, s, 2, first_two, cfg, PTL_CUDA_OP_MATH2, p);
    }
    double p[PTL_CUDA_MAX_PARAMS] = {PTL_CUDA_MATH_LERP, 0, 0, 0};
    return ptl_cuda_pointwise_run(op, s, 3, first_three, cfg, PTL_CUDA_OP_MATH3, p);
}

/* addcmul(self, tensor1, tensor2, *, value=1) and addcdiv (+ in-place, out=): ternary.c's
 * addc_cpu; integer results take the value truncated */
static int
addc_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    int is_div = strstr(op->schema.name, "addcdiv") != NULL;
    PtlTensorImpl *ts[3] = {s[0].u.t, s[1].u.t, s[2].u.t};
    (void)ks;
    if (is_div && ptl_addcdiv_check(s) < 0) {
        return -1;
    }
    PtlDtype rt = ptl_result_type(ts, 3);
    if (!takes(is_div ? T_FLOAT : T_FLOAT | T_INT, rt)) {
        return not_implemented(is_div ? "addcdiv" : "addcmul", rt);
    }
    double p[PTL_CUDA_MAX_PARAMS] = {is_div ? PTL_CUDA_MATH_ADDCDIV : PTL_CUDA_MATH_ADDCMUL,
                                     ptl_dtype_is_floating(rt) ? ptl_iv_to_double(&s[3])
                                                               : (double)ptl_iv_to_int(&s[3]),
                                     0, 0};
    return ptl_cuda_pointwise_run(op, s, 3, first_three, ptl_iter_config(), PTL_CUDA_OP_MATH3,
                                  p);
}

#define KERNEL(ID, FN) {PTL_OP_##ID, PTL_KEY_CUDA, FN}
/* an op's three overloads: NAME, NAME_, NAME.out */
#define OVERLOADS(NAME, FN) KERNEL(NAME, FN), KERNEL(NAME##_, FN), KERNEL(NAME##_out, FN)
/* a binary op's: NAME.Tensor, NAME_.Tensor, NAME.out */
#define TENSOR_OVERLOADS(NAME, FN) \
    KERNEL(NAME##_Tensor, FN), KERNEL(NAME##__Tensor, FN), KERNEL(NAME##_out, FN)

static const PtlKernelReg cuda_math_kernels[] = {
    OVERLOADS(exp2, unary_math_cuda), OVERLOADS(expm1, unary_math_cuda),
    OVERLOADS(log2, unary_math_cuda), OVERLOADS(log10, unary_math_cuda),
    OVERLOADS(log1p, unary_math_cuda), OVERLOADS(rsqrt, unary_math_cuda),
    OVERLOADS(sin, unary_math_cuda), OVERLOADS(cos, unary_math_cuda),
    OVERLOADS(tan, unary_math_cuda), OVERLOADS(asin, unary_math_cuda),
    OVERLOADS(acos, unary_math_cuda), OVERLOADS(atan, unary_math_cuda),
    OVERLOADS(sinh, unary_math_cuda), OVERLOADS(cosh, unary_math_cuda),
    OVERLOADS(erf, unary_math_cuda), OVERLOADS(erfinv, unary_math_cuda),
    OVERLOADS(lgamma, unary_math_cuda), OVERLOADS(digamma, unary_math_cuda),
    OVERLOADS(frac, unary_math_cuda), OVERLOADS(floor, unary_math_cuda),
    OVERLOADS(ceil, unary_math_cuda), OVERLOADS(trunc, unary_math_cuda),
    OVERLOADS(square, unary_math_cuda), OVERLOADS(bitwise_not, unary_math_cuda),
    OVERLOADS(round, round_cuda), KERNEL(round_decimals, round_cuda),
    KERNEL(round__decimals, round_cuda), KERNEL(round_decimals_out, round_cuda),
    OVERLOADS(nan_to_num, nan_to_num_cuda), OVERLOADS(polygamma, polygamma_cuda),
    KERNEL(threshold, threshold_cuda), KERNEL(threshold_, threshold_cuda),
    OVERLOADS(atan2, atan2_cuda),
    KERNEL(maximum, max_min_cuda), KERNEL(maximum_out, max_min_cuda),
    KERNEL(minimum, max_min_cuda), KERNEL(minimum_out, max_min_cuda),
    KERNEL(max_other, max_min_cuda), KERNEL(min_other, max_min_cuda),
    KERNEL(fmax, max_min_cuda), KERNEL(fmax_out, max_min_cuda),
    KERNEL(fmin, max_min_cuda), KERNEL(fmin_out, max_min_cuda),
    TENSOR_OVERLOADS(bitwise_and, bitwise_cuda), TENSOR_OVERLOADS(bitwise_or, bitwise_cuda),
    TENSOR_OVERLOADS(bitwise_xor, bitwise_cuda),
    TENSOR_OVERLOADS(bitwise_left_shift, bitwise_cuda),
    TENSOR_OVERLOADS(bitwise_right_shift, bitwise_cuda),
    KERNEL(div_Tensor_mode, div_mode_cuda), KERNEL(div__Tensor_mode, div_mode_cuda),
    KERNEL(div_Tensor_mode_out, div_mode_cuda),
    OVERLOADS(floor_divide, div_like_cuda), TENSOR_OVERLOADS(remainder, div_like_cuda),
    TENSOR_OVERLOADS(fmod, div_like_cuda),
    KERNEL(pow_Tensor_Tensor, pow_tensor_cuda), KERNEL(pow__Tensor_Tensor, pow_tensor_cuda),
    KERNEL(pow_Tensor_Tensor_out, pow_tensor_cuda), KERNEL(pow_Scalar, pow_number_base_cuda),
    KERNEL(pow_Scalar_out, pow_number_base_cuda),
    KERNEL(lerp_Scalar, lerp_cuda), KERNEL(lerp_Tensor, lerp_cuda),
    KERNEL(lerp__Scalar, lerp_cuda), KERNEL(lerp__Tensor, lerp_cuda),
    OVERLOADS(addcmul, addc_cuda), OVERLOADS(addcdiv, addc_cuda),
    KERNEL(isnan, predicate_cuda), KERNEL(isinf, predicate_cuda),
    KERNEL(isfinite, predicate_cuda), OVERLOADS(logical_not, predicate_cuda),
    KERNEL(isclose, isclose_cuda),
#define SPECIAL_OVERLOADS(NAME) \
    KERNEL(special_##NAME, special_unary_cuda), KERNEL(special_##NAME##_out, special_unary_cuda)
    SPECIAL_OVERLOADS(ndtr), SPECIAL_OVERLOADS(log_ndtr), SPECIAL_OVERLOADS(ndtri),
    SPECIAL_OVERLOADS(erfcx), SPECIAL_OVERLOADS(bessel_j0), SPECIAL_OVERLOADS(bessel_j1),
    SPECIAL_OVERLOADS(bessel_y0), SPECIAL_OVERLOADS(bessel_y1),
    SPECIAL_OVERLOADS(modified_bessel_k0), SPECIAL_OVERLOADS(modified_bessel_k1),
    SPECIAL_OVERLOADS(scaled_modified_bessel_k0), SPECIAL_OVERLOADS(scaled_modified_bessel_k1),
    SPECIAL_OVERLOADS(spherical_bessel_j0), SPECIAL_OVERLOADS(airy_ai),
#undef SPECIAL_OVERLOADS
};
#undef TENSOR_OVERLOADS
#undef OVERLOADS
#undef KERNEL

/* ... and allclose's CPU kernel, isclose (the kernel above on a device tensor) reduced by
 * aten::all, its one value read on the host (compare.c) */
int
ptl_register_cuda_math_kernels(void)
{
    PtlKernelReg allclose = {PTL_OP_allclose, PTL_KEY_CUDA,
                             ptl_op(PTL_OP_allclose)->kernels[PTL_KEY_CPU]};
    if (ptl_dispatcher_register(&allclose, 1, __FILE__) < 0) {
        return -1;
    }
    return ptl_dispatcher_register(cuda_math_kernels,
                                   sizeof(cuda_math_kernels) / sizeof(cuda_math_kernels[0]),
                                   __FILE__);
}

#endif
