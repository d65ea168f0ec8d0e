/* unary.c -- unary pointwise kernels (functional, in-place and out=).  Mirrors
 * ATen/native/UnaryOps.cpp and ATen/native/cpu/UnaryOpsKernel.cpp.
 *
 * One macro stamps a loop per (op, dtype): o = STORE(F(LOAD(a), extra)), with a
 * contiguous path the compiler vectorizes and a strided fallback.  Floating functions
 * compute integer and bool inputs in the default float dtype (TensorIterator's
 * int_to_float); sign, abs, neg, floor & co. keep the input dtype and, as in PyTorch,
 * demand an out= of exactly that dtype.  float32 exp, expm1, log, log1p, erf, erfinv, sigmoid,
 * tanh, sinh, cosh, sin, cos, exp2, log2, tan, atan, asin, acos, asinh, acosh, erfc, i0,
 * special_i0e, special_i1 and special_i1e and float64 exp, expm1, log, log1p, sigmoid, tanh,
 * sin, cos, log2, tan, exp2, asin, acos, atan, asinh, acosh, erf, erfc and erfinv have AVX2
 * and AVX-512 loops chosen at run time (DispatchStub's cpu capability); float32 / float64
 * lgamma, digamma and polygamma(0 or 1, .) and float64 i0, special_i0e, special_i1 and
 * special_i1e send contiguous data to unary_special.c's (Note [Vector lgamma and digamma],
 * Note [Float64 lgamma and Bessel lanes]). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "../../c10/cpu_features.h"
#include "../../c10/error.h"
#include "../resize_output.h"
#include "../scalar_math.h"
#include "../special_math.h"
#include "device_compose.h"
#include "native.h"
#include "unary_f8_erf.h"
#include "unary_f8_math.h"
#include "unary_f8_trig.h"
#include "unary_half.h"
#include "unary_loops.h"
#include "vec_math.h"

/* Floating loops only: FF computes float (float16/bfloat16/float32), FD double. */
#define DEFINE_UNARY_FLOAT(NAME, FF, FD)                                                  \
    DEFINE_UNARY_LOOP(NAME, ptl_half, ptl_half, f2, PTL_LOAD_f2, PTL_STORE_f2, FF)        \
    DEFINE_UNARY_LOOP(NAME, ptl_bf16, ptl_bf16, bf, PTL_LOAD_bf, PTL_STORE_bf, FF)        \
    DEFINE_UNARY_LOOP(NAME, float, float, f4, PTL_ID, PTL_ID, FF)                         \
    DEFINE_UNARY_LOOP(NAME, double, double, f8, PTL_ID, PTL_ID, FD)

/* A floating function and its table (NULL for integer and bool dtypes). */
#define DEFINE_FLOAT_OP(NAME, FF, FD)                                                     \
    DEFINE_UNARY_FLOAT(NAME, FF, FD)                                                      \
    static const PtlLoop NAME##_loops[PTL_DTYPE_COUNT] = {FLOAT_ENTRIES(NAME)};

/* Integer loops computing in int64 (the store truncates, i.e. wraps like PyTorch). */
#define I64(X) ((int64_t)(X))
#define UNARY_INT_LOOP(NAME, T, DT, FI) DEFINE_UNARY_LOOP(NAME, T, T, DT, I64, (T), FI)
#define DEFINE_UNARY_INT(NAME, FI) PTL_INT_LOOPS(UNARY_INT_LOOP, NAME, FI)

/* Loops from any dtype to bool (isnan, logical_not): F gets the value in float/double/int64. */
#define PRED_STORE(X) ((uint8_t)((X) != 0))
#define DEFINE_UNARY_PRED(NAME, FI, FF)                                                   \
    DEFINE_UNARY_LOOP(NAME, uint8_t, uint8_t, b1, PTL_ID, PRED_STORE, FI)                 \
    DEFINE_UNARY_LOOP(NAME, uint8_t, uint8_t, u1, PTL_ID, PRED_STORE, FI)                 \
    DEFINE_UNARY_LOOP(NAME, int8_t, uint8_t, i1, PTL_ID, PRED_STORE, FI)                  \
    DEFINE_UNARY_LOOP(NAME, int16_t, uint8_t, i2, PTL_ID, PRED_STORE, FI)                 \
    DEFINE_UNARY_LOOP(NAME, int32_t, uint8_t, i4, PTL_ID, PRED_STORE, FI)                 \
    DEFINE_UNARY_LOOP(NAME, int64_t, uint8_t, i8, PTL_ID, PRED_STORE, FI)                 \
    DEFINE_UNARY_LOOP(NAME, ptl_half, uint8_t, f2, PTL_LOAD_f2, PRED_STORE, FF)           \
    DEFINE_UNARY_LOOP(NAME, ptl_bf16, uint8_t, bf, PTL_LOAD_bf, PRED_STORE, FF)           \
    DEFINE_UNARY_LOOP(NAME, float, uint8_t, f4, PTL_ID, PRED_STORE, FF)                   \
    DEFINE_UNARY_LOOP(NAME, double, uint8_t, f8, PTL_ID, PRED_STORE, FF)                  \
    static const PtlLoop NAME##_loops[PTL_DTYPE_COUNT] = {                                \
        [PTL_DTYPE_BOOL] = NAME##_loop_b1, INT_ENTRIES(NAME), FLOAT_ENTRIES(NAME)};

/* ---- formulas (X: the loaded value, E: the extra pointer) ---- */

#define EXP_F(X, E) ptl_vm_expf(X)
#define EXP_D(X, E) ptl_vm_exp(X)
#define EXP2_F(X, E) ptl_exp2_f(X)
#define EXP2_D(X, E) ptl_exp2_d(X)
#define EXPM1_F(X, E) ptl_expm1_f(X)
#define EXPM1_D(X, E) ptl_expm1_d(X)
#define LOG_F(X, E) logf(X)
#define LOG_D(X, E) log(X)
#define LOG2_F(X, E) ptl_log2_f(X)
#define LOG2_D(X, E) ptl_log2_d(X)
#define LOG10_F(X, E) ptl_log10_f(X)
#define LOG10_D(X, E) ptl_log10_d(X)
#define LOG1P_F(X, E) ptl_log1p_f(X)
#define LOG1P_D(X, E) ptl_log1p_d(X)
#define SQRT_F(X, E) sqrtf(X)
#define SQRT_D(X, E) sqrt(X)
#define RSQRT_F(X, E) ptl_rsqrt_f(X)
#define RSQRT_D(X, E) ptl_rsqrt_d(X)
#define SIN_F(X, E) ptl_sin_f(X)
#define SIN_D(X, E) ptl_sin_d(X)
#define COS_F(X, E) ptl_cos_f(X)
#define COS_D(X, E) ptl_cos_d(X)
#define TAN_F(X, E) ptl_tan_f(X)
#define TAN_D(X, E) ptl_tan_d(X)
#define ASIN_F(X, E) ptl_asin_f(X)
#define ASIN_D(X, E) ptl_asin_d(X)
#define ACOS_F(X, E) ptl_acos_f(X)
#define ACOS_D(X, E) ptl_acos_d(X)
#define ATAN_F(X, E) ptl_atan_f(X)
#define ATAN_D(X, E) ptl_atan_d(X)
#define SINH_F(X, E) ptl_sinh_f(X)
#define SINH_D(X, E) ptl_sinh_d(X)
#define COSH_F(X, E) ptl_cosh_f(X)
#define COSH_D(X, E) ptl_cosh_d(X)
#define TANH_F(X, E) tanhf(X)
#define TANH_D(X, E) tanh(X)
#define SIGMOID_F(X, E) ptl_sigmoid_f(X)
#define SIGMOID_D(X, E) ptl_sigmoid_d(X)
#define ERF_F(X, E) ptl_vm_erff(X)
#define ERF_D(X, E) ptl_erf_d(X)
#define ERFINV_F(X, E) ((float)ptl_erfinv_d(X))
#define ERFINV_D(X, E) ptl_erfinv_d(X)
#define RECIPROCAL_F(X, E) (1.0f / (X))
#define RECIPROCAL_D(X, E) (1.0 / (X))
#define FRAC_F(X, E) ptl_frac_f(X)
#define FRAC_D(X, E) ptl_frac_d(X)

DEFINE_FLOAT_OP(exp, EXP_F, EXP_D)
DEFINE_FLOAT_OP(exp2, EXP2_F, EXP2_D)
DEFINE_FLOAT_OP(expm1, EXPM1_F, EXPM1_D)
DEFINE_FLOAT_OP(log, LOG_F, LOG_D)
DEFINE_FLOAT_OP(log2, LOG2_F, LOG2_D)
DEFINE_FLOAT_OP(log10, LOG10_F, LOG10_D)
DEFINE_FLOAT_OP(log1p, LOG1P_F, LOG1P_D)
DEFINE_FLOAT_OP(sqrt, SQRT_F, SQRT_D)
DEFINE_FLOAT_OP(rsqrt, RSQRT_F, RSQRT_D)
DEFINE_FLOAT_OP(sin, SIN_F, SIN_D)
DEFINE_FLOAT_OP(cos, COS_F, COS_D)
DEFINE_FLOAT_OP(tan, TAN_F, TAN_D)
DEFINE_FLOAT_OP(asin, ASIN_F, ASIN_D)
DEFINE_FLOAT_OP(acos, ACOS_F, ACOS_D)
DEFINE_FLOAT_OP(atan, ATAN_F, ATAN_D)
DEFINE_FLOAT_OP(sinh, SINH_F, SINH_D)
DEFINE_FLOAT_OP(cosh, COSH_F, COSH_D)
DEFINE_FLOAT_OP(tanh, TANH_F, TANH_D)
DEFINE_FLOAT_OP(sigmoid, SIGMOID_F, SIGMOID_D)
DEFINE_FLOAT_OP(erf, ERF_F, ERF_D)
DEFINE_FLOAT_OP(erfinv, ERFINV_F, ERFINV_D)
DEFINE_FLOAT_OP(reciprocal, RECIPROCAL_F, RECIPROCAL_D)
DEFINE_FLOAT_OP(frac, FRAC_F, FRAC_D)

/* ops that keep integer dtypes: a float formula and an int64 one (a float formula in float,
 * not through double: relu's select took 2.3x PyTorch's time on 1e6 float32 values as a
 * double one, at half the vector width) */
#define NEG_I(X, E) ((int64_t)(0 - (uint64_t)(X)))
#define NEG_F(X, E) (-(X))
#define ABS_I(X, E) ptl_abs_i(X)
#define ABS_F(X, E) fabsf(X)
#define ABS_D(X, E) fabs(X)
#define SIGN_I(X, E) ptl_sign_i(X)
#define SIGN_F(X, E) ((float)((0 < (X)) - ((X) < 0)))
#define SIGN_D(X, E) ptl_sign_d(X)
#define SQUARE_I(X, E) ptl_square_i(X)
#define SQUARE_F(X, E) ((X) * (X))
#define RELU_I(X, E) ptl_relu_i(X)
#define RELU_F(X, E) ((X) < 0 ? 0.0f : (X))
#define RELU_D(X, E) ptl_relu_d(X)
#define ID_I(X, E) (X)
#define FLOOR_F(X, E) ptl_floor_f(X)
#define FLOOR_D(X, E) ptl_floor_d(X)
#define CEIL_F(X, E) ptl_ceil_f(X)
#define CEIL_D(X, E) ptl_ceil_d(X)
#define TRUNC_F(X, E) ptl_trunc_f(X)
#define TRUNC_D(X, E) ptl_trunc_d(X)
/* round.decimals: the decimals and 10^|decimals| in float and in double */
typedef struct RoundDecimals {
    int64_t decimals;
    float pf;
    double pd;
} RoundDecimals;
#define ROUND_DECIMALS(E) (((const RoundDecimals *)(E))->decimals)
#define ROUND_F(X, E) ptl_round_decimals_f((X), ROUND_DECIMALS(E), ((const RoundDecimals *)(E))->pf)
#define ROUND_D(X, E) ptl_round_decimals_d((X), ROUND_DECIMALS(E), ((const RoundDecimals *)(E))->pd)
#define BITWISE_NOT_I(X, E) (~(X))

#define DEFINE_INT_FLOAT_OP(NAME, FI, FF, FD)                                             \
    DEFINE_UNARY_INT(NAME, FI)                                                            \
    DEFINE_UNARY_FLOAT(NAME, FF, FD)                                                      \
    static const PtlLoop NAME##_loops[PTL_DTYPE_COUNT] = {INT_ENTRIES(NAME),              \
                                                          FLOAT_ENTRIES(NAME)};

DEFINE_INT_FLOAT_OP(neg, NEG_I, NEG_F, NEG_F)
/* abs of float16 and bfloat16 clears the sign bit in place of the float32 round trip of Note
 * [Half-precision pointwise through float32] (U_HALF_BITS): the same value, exactly, and a
 * NaN keeps its payload as PyTorch's conversions keep it (the round trip made it the
 * canonical NaN).  1e6 float16, one thread: 213 -> 42 us (PyTorch 44 us). */
#define CLEAR_SIGN_H(X, E) ((uint16_t)((X) & 0x7fffu))
DEFINE_UNARY_INT(abs, ABS_I)
DEFINE_UNARY_LOOP(abs, uint16_t, uint16_t, f2, PTL_ID, PTL_ID, CLEAR_SIGN_H)
DEFINE_UNARY_LOOP(abs, uint16_t, uint16_t, bf, PTL_ID, PTL_ID, CLEAR_SIGN_H)
DEFINE_UNARY_LOOP(abs, float, float, f4, PTL_ID, PTL_ID, ABS_F)
DEFINE_UNARY_LOOP(abs, double, double, f8, PTL_ID, PTL_ID, ABS_D)
static const PtlLoop abs_loops[PTL_DTYPE_COUNT] = {INT_ENTRIES(abs), FLOAT_ENTRIES(abs)};
DEFINE_INT_FLOAT_OP(sign, SIGN_I, SIGN_F, SIGN_D)
DEFINE_INT_FLOAT_OP(square, SQUARE_I, SQUARE_F, SQUARE_F)
DEFINE_INT_FLOAT_OP(relu, RELU_I, RELU_F, RELU_D)
DEFINE_INT_FLOAT_OP(floor, ID_I, FLOOR_F, FLOOR_D)
DEFINE_INT_FLOAT_OP(ceil, ID_I, CEIL_F, CEIL_D)
DEFINE_INT_FLOAT_OP(trunc, ID_I, TRUNC_F, TRUNC_D)

/* float32/float64 loops whose parameters (a PT at `extra`) are first copied into a local:
 * under -fno-strict-aliasing every store to the output might change what `extra` points at,
 * so a formula reading it there reloads it for every element and the loop does not
 * vectorize (round: 0.4 ms for 1e6 float32, 4x PyTorch; nan_to_num 1.7 ms, 20x). */
#define DEFINE_PARAM_LOOP(NAME, T, DT, PT, F)                                             \
    PTL_LOOP_CLONES static void                                                           \
    NAME##_loop_##DT(char **d, const int64_t *s, int64_t n, const void *extra)            \
    {                                                                                     \
        const PT param = *(const PT *)extra;                                              \
        if (s[0] == sizeof(T) && s[1] == sizeof(T)) {                                     \
            T *o = (T *)d[0];                                                             \
            const T *a = (const T *)d[1];                                                 \
            for (int64_t i = 0; i < n; i++) {                                             \
                o[i] = F(a[i], &param);                                                   \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                 \
            *(T *)(d[0] + i * s[0]) = F(*(const T *)(d[1] + i * s[1]), &param);           \
        }                                                                                 \
    }

DEFINE_UNARY_INT(round, ID_I)
DEFINE_UNARY_LOOP(round, ptl_half, ptl_half, f2, PTL_LOAD_f2, PTL_STORE_f2, ROUND_F)
DEFINE_UNARY_LOOP(round, ptl_bf16, ptl_bf16, bf, PTL_LOAD_bf, PTL_STORE_bf, ROUND_F)
DEFINE_PARAM_LOOP(round, float, f4, RoundDecimals, ROUND_F)
DEFINE_PARAM_LOOP(round, double, f8, RoundDecimals, ROUND_D)
static const PtlLoop round_loops[PTL_DTYPE_COUNT] = {INT_ENTRIES(round), FLOAT_ENTRIES(round)};
DEFINE_UNARY_INT(bitwise_not, BITWISE_NOT_I)

/* bool: sign and nan_to_num are the identity, bitwise_not is logical not */
#define NOT_B(X, E) ((X) ^ 1)
DEFINE_UNARY_LOOP(bool_id, uint8_t, uint8_t, b1, PTL_ID, PTL_ID, ID_I)
DEFINE_UNARY_LOOP(bool_not, uint8_t, uint8_t, b1, PTL_ID, PTL_ID, NOT_B)

static const PtlLoop bitwise_not_loops[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_BOOL] = bool_not_loop_b1, INT_ENTRIES(bitwise_not)};

/* predicates; integer and bool inputs are never nan or inf */
#define ISNAN_I(X, E) ((X) * 0)
#define ISNAN_F(X, E) isnan(X)
#define ISINF_I(X, E) ((X) * 0)
#define ISINF_F(X, E) isinf(X)
#define ISFINITE_I(X, E) ((X) * 0 + 1)
#define ISFINITE_F(X, E) isfinite(X)
#define LOGICAL_NOT(X, E) ((X) == 0)

DEFINE_UNARY_PRED(isnan, ISNAN_I, ISNAN_F)
DEFINE_UNARY_PRED(isinf, ISINF_I, ISINF_F)
DEFINE_UNARY_PRED(isfinite, ISFINITE_I, ISFINITE_F)
DEFINE_UNARY_PRED(logical_not, LOGICAL_NOT, LOGICAL_NOT)

/* nan_to_num: the replacements arrive as doubles and are converted to the tensor's dtype */
typedef struct NanToNum {
    double nan, posinf, neginf;
} NanToNum;

/* nan_to_num: scalar_math.h's, the replacements converted to the computing type (float32
 * computes in float: the same values, each replacement rounded once) */
#define NAN_TO_NUM_ARGS(T, E)                                                             \
    (T)((const NanToNum *)(E))->nan, (T)((const NanToNum *)(E))->posinf,                  \
        (T)((const NanToNum *)(E))->neginf
#define NAN_TO_NUM_F(X, E) ((float)ptl_nan_to_num_d((X), NAN_TO_NUM_ARGS(double, E)))
#define NAN_TO_NUM_D(X, E) ptl_nan_to_num_d((X), NAN_TO_NUM_ARGS(double, E))
#define NAN_TO_NUM_F4(X, E) ptl_nan_to_num_f((X), NAN_TO_NUM_ARGS(float, E))
DEFINE_UNARY_LOOP(nan_to_num, ptl_half, ptl_half, f2, PTL_LOAD_f2, PTL_STORE_f2, NAN_TO_NUM_F)
DEFINE_UNARY_LOOP(nan_to_num, ptl_bf16, ptl_bf16, bf, PTL_LOAD_bf, PTL_STORE_bf, NAN_TO_NUM_F)

DEFINE_PARAM_LOOP(nan_to_num, float, f4, NanToNum, NAN_TO_NUM_F4)
DEFINE_PARAM_LOOP(nan_to_num, double, f8, NanToNum, NAN_TO_NUM_D)
DEFINE_UNARY_INT(int_id, ID_I)

static const PtlLoop nan_to_num_loops[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_BOOL] = bool_id_loop_b1, INT_ENTRIES(int_id), FLOAT_ENTRIES(nan_to_num)};

/* ---- vector loops: float32 exp, expm1, erf, erfinv, log, log1p, sigmoid, tanh, sinh, cosh,
 * sin, cos, exp2, log2, tan, atan, asin, acos, asinh, acosh, erfc, i0, i0e, i1, i1e; float64 exp,
 * expm1, log, log1p, sigmoid, tanh, sin, cos, log2, tan, exp2, asin, acos, atan, asinh, acosh,
 * erf, erfc, erfinv
 *
 * The formulas are vec_math.h's, at the widest vector kind the CPU has (AVX-512 or AVX2,
 * the same bits either way); strided data takes the portable loop. */
#ifdef PTL_HAVE_AVX2_KERNELS

/* NAME_loop_DT_S: F's map over contiguous data of kind S (any one element counts as such,
 * whatever its strides), else the portable NAME_loop_DT */
#define DEFINE_VEC_LOOP(NAME, F, DT, S)                                                   \
    static void                                                                           \
    NAME##_loop_##DT##_##S(char **d, const int64_t *s, int64_t n, const void *extra)      \
    {                                                                                     \
        if (n > 1 && (s[0] != sizeof(PTL_VE(S)) || s[1] != sizeof(PTL_VE(S)))) {          \
            NAME##_loop_##DT(d, s, n, extra);                                             \
            return;                                                                       \
        }                                                                                 \
        ptl_vm_map_##F##_##S((PTL_VE(S) *)d[0], (const PTL_VE(S) *)d[1], n);              \
    }

/* The loop table of a float32-only vector op for kind S (the 64-bit and half loops
 * portable), and exp's, which has a float64 vector loop too. */
#define DEFINE_VEC_TABLE(NAME, S, F8)                                                     \
    static const PtlLoop NAME##_loops_##S[PTL_DTYPE_COUNT] = {                            \
        [PTL_DTYPE_FLOAT16] = NAME##_loop_f2, [PTL_DTYPE_BFLOAT16] = NAME##_loop_bf,      \
        [PTL_DTYPE_FLOAT32] = NAME##_loop_f4_##S, [PTL_DTYPE_FLOAT64] = F8};
#define DEFINE_VEC_OP(NAME, S)                                                            \
    DEFINE_VEC_LOOP(NAME, NAME, f4, S) DEFINE_VEC_TABLE(NAME, S, NAME##_loop_f8)
/* a vector op in float32 and float64 (kind D) */
#define DEFINE_VEC_OP2(NAME, S, D)                                                        \
    DEFINE_VEC_LOOP(NAME, NAME, f4, S)                                                    \
    DEFINE_VEC_LOOP(NAME, NAME, f8, D)                                                    \
    DEFINE_VEC_TABLE(NAME, S, NAME##_loop_f8_##D)
/* a vector op in float32 (vec_math.h's formula) and float64 (NAME##d, kind D) */
#define DEFINE_VEC_OP_D(NAME, S, D)                                                       \
    DEFINE_VEC_LOOP(NAME, NAME, f4, S)                                                    \
    DEFINE_VEC_LOOP(NAME, NAME##d, f8, D)                                                 \
    DEFINE_VEC_TABLE(NAME, S, NAME##_loop_f8_##D)
/* a float64-only vector op (kind D) */
#define DEFINE_VEC_OP_F8(NAME, S, D)                                                      \
    DEFINE_VEC_LOOP(NAME, NAME, f8, D)                                                    \
    static const PtlLoop NAME##_loops_##S[PTL_DTYPE_COUNT] = {                            \
        [PTL_DTYPE_FLOAT16] = NAME##_loop_f2, [PTL_DTYPE_BFLOAT16] = NAME##_loop_bf,      \
        [PTL_DTYPE_FLOAT32] = NAME##_loop_f4, [PTL_DTYPE_FLOAT64] = NAME##_loop_f8_##D};
/* Note [Vector exp2, log2, tan, atan, asin]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * libm's scalar exp2f, log2f, tanf and atanf per element made these 3-14x slower than
 * PyTorch's Sleef loops (1e6 float32, one thread).
 *
 * exp2: n = round(x), r = x - n (exact, |r| <= 1/2), e^(r ln2) with r ln2 as th + tl (th =
 * r ln2_hi rounded, ln2_hi ln2 rounded to the element type, tl the FMA rounding error plus
 * r ln2_lo: |tl| < ulp(1) / 4, so e^th tl = tl + th tl leaves out under 0.03 ulp) and the
 * polynomial of Note [Vector exp] in th (float32's fit, float64's Taylor terms): 1 + th +
 * th^2 P(th) + tl; then 2^n as in ptl_vm_exp (one product inside the normal range, two
 * halves outside, so subnormal results round once).  x is clamped to [-151, 128] in float32,
 * [-1076, 1024] in float64 (0 at the bottom, inf at the top); NaN stays NaN.
 *
 * log2: x = m 2^e, m in [sqrt(1/2), sqrt(2)), and e + log(m) log2(e) (log(m) has no e ln2
 * part, so powers of two give e exactly).  float32: log(m) = f + y, f = m - 1, y = f^3 P(f)
 * - f^2 / 2 with the polynomial of vec_math.h's float log (subnormals scaled by 2^23 first),
 * and e + (f l_hi + (f l_lo + y l_hi)), log2(e) = l_hi + l_lo, so that f's product is
 * rounded once (at most 1.03 ulp, exhaustive on [0.5, 2)).  float64: log(m) by vec_math.h's
 * double log (ptl_vm_log_normal), times log2(e) in one FMA with e; its subnormal lanes take
 * libm's log2.  x = inf gives inf, +-0 -inf, x < 0 and NaN give NaN.
 *
 * tan, float64: the sine and cosine of ptl_vm_sincos_fast (Note [Vector float64 sin, cos,
 * tanh, sigmoid]) divided; its slow lanes take libm's tan (under 2 ulp).  float32, in double
 * lanes: q = round(x 2/pi), r = x - q pi/2 with pi/2 in three parts (q C1 exact for
 * |x| <= 2^20), tan r = r + r^3 P(r^2) (fit to 7.5e-11), -1 / tan r for odd q, rounded once
 * to float32 (measured 0.5 ulp); |x| > 2^20, inf and NaN take libm's tan.
 *
 * atan, float32 lanes: Cephes' atanf reduction, |x| > tan(3pi/8) to pi/2 + atan(-1/|x|) and
 * |x| > tan(pi/8) to pi/4 + atan((|x| - 1) / (|x| + 1)), the polynomial of Note [Vector
 * atan2 and erfinv] on the reduced argument plus the float32 rounding error of pi/4 or pi/2
 * (the tail), then pi/4 or pi/2 in float32 added last, x's sign put back (-0 stays -0, +-inf gives
 * +-pi/2, NaN propagates).
 *
 * asin, float32 lanes: on a = |x|, a + a^3 P(a^2) for a <= 1/2, else pi/2 - 2 asin(sqrt(z))
 * with z = (1 - a) / 2 (exact): with s = sqrt(z) rounded, (pi/2 - 2 s) (exact where it
 * matters, Sterbenz) - 2 ((z - s^2) / (2 s) + s z P(z)) + the tail of pi/2, so that neither
 * sqrt's rounding nor that of s + s z P doubles into the result; x's sign put back (-0 stays
 * -0); |x| > 1 gives sqrt's NaN. */
/* (asin(x) - x) / x^3 = P(x^2) for x^2 in [0, 1/4], a degree-5 Chebyshev fit converted to
 * powers (max error 1.3e-5 absolute, under 2^-24 of asin), the highest power first */
static const float asin_coef[] = {0.0339273787949418f,  0.01692512296062091f,
                                  0.031171924070539658f, 0.04458999137594574f,
                                  0.07500143218062927f,  0.16666665663191685f};
/* exp2's constants per element type: 0 at and below LO, inf from HI on, one product by 2^n
 * for x in [NORMAL_LO, NORMAL_HI], ln2 as its rounding (LN2_HI) plus the rest */
#define EXP2_HI_ps 128.0f
#define EXP2_LO_ps -151.0f
#define EXP2_NORMAL_LO_ps -126.0f
#define EXP2_NORMAL_HI_ps 127.0f
#define EXP2_LN2_HI_ps 0.693147182464599609375f
#define EXP2_LN2_LO_ps -1.904654323148236e-09f
#define EXP2_HI_pd 1024.0
#define EXP2_LO_pd -1076.0
#define EXP2_NORMAL_LO_pd -1022.0
#define EXP2_NORMAL_HI_pd 1023.0
#define EXP2_LN2_HI_pd 0.6931471805599453
#define EXP2_LN2_LO_pd 2.3190468138462996e-17
#define DEFINE_UNARY_VEC_EXP2(S)                                                          \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_exp2_##S(PTL_VT(S) x)                     \
    {                                                                                     \
        const PTL_VT(S) hi = PTL_V(S, set1)(PTL_VK(S, EXP2_HI));                     \
        const PTL_VT(S) lo = PTL_V(S, set1)(PTL_VK(S, EXP2_LO));                          \
        const PTL_VT(S) ln2h = PTL_V(S, set1)(PTL_VK(S, EXP2_LN2_HI));                     \
        PTL_VT(S) xc = PTL_V(S, max)(PTL_V(S, min)(x, hi), lo);                           \
        PTL_VT(S) n = PTL_VROUND(S, xc), r = PTL_V(S, sub)(xc, n);                        \
        PTL_VT(S) th = PTL_V(S, mul)(r, ln2h);                                            \
        PTL_VT(S) tl = PTL_V(S, fmadd)(r, PTL_V(S, set1)(PTL_VK(S, EXP2_LN2_LO)),          \
                                       PTL_V(S, fmsub)(r, ln2h, th));                     \
        PTL_VT(S) p = PTL_VM_POLY(S, th, PTL_VK(S, ptl_vm_exp_coef));                      \
        PTL_VT(S) y = PTL_V(S, add)(PTL_V(S, fmadd)(p, PTL_V(S, mul)(th, th), tl), th);   \
        y = PTL_V(S, add)(y, PTL_V(S, set1)(1.0f));                                       \
        const PTL_VMT(S) inside = PTL_VMAND(                                              \
            S, PTL_VCMP(S, x, PTL_V(S, set1)(PTL_VK(S, EXP2_NORMAL_LO)), _CMP_GE_OQ),      \
            PTL_VCMP(S, x, PTL_V(S, set1)(PTL_VK(S, EXP2_NORMAL_HI)), _CMP_LE_OQ));       \
        if (PTL_VBITS(S, inside) == (1 << PTL_VLANES(S)) - 1) {                           \
            return PTL_V(S, mul)(y, ptl_vm_pow2i_##S(n));                                 \
        }                                                                                 \
        PTL_VT(S) n1 = PTL_VFLOOR(S, PTL_V(S, mul)(n, PTL_V(S, set1)(0.5f)));             \
        PTL_VT(S) n2 = PTL_V(S, sub)(n, n1);                                              \
        y = PTL_V(S, mul)(PTL_V(S, mul)(y, ptl_vm_pow2i_##S(n1)), ptl_vm_pow2i_##S(n2));  \
        y = PTL_VSEL(S, PTL_VCMP(S, x, hi, _CMP_GE_OQ), y, PTL_V(S, set1)(INFINITY));     \
        y = PTL_VSEL(S, PTL_VCMP(S, x, lo, _CMP_LE_OQ), y, PTL_V(S, setzero)());          \
        return PTL_VSEL(S, PTL_VCMP(S, x, x, _CMP_UNORD_Q), y, x);                        \
    }                                                                                     \
    PTL_VM_DEFINE_MAP(exp2, S)
PTL_VM_FOR_ALL_KINDS(DEFINE_UNARY_VEC_EXP2)

#define DEFINE_UNARY_VEC_FLOAT_FORMULAS(S)                                                \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_atan_##S(PTL_VT(S) x)                     \
    {                                                                                     \
        const PTL_VT(S) sign = PTL_V(S, set1)(-0.0f), one = PTL_V(S, set1)(1.0f);         \
        const PTL_VT(S) zero = PTL_V(S, setzero)();                                       \
        PTL_VT(S) ax = PTL_V(S, andnot)(sign, x);                                         \
        PTL_VMT(S) big = PTL_VCMP(S, ax, PTL_V(S, set1)(2.414213562373095f), _CMP_GT_OQ); \
        PTL_VMT(S) mid = PTL_VCMP(S, ax, PTL_V(S, set1)(0.4142135623730950f), _CMP_GT_OQ); \
        PTL_VT(S) num = PTL_VSEL(S, mid, ax, PTL_V(S, sub)(ax, one));                     \
        PTL_VT(S) den = PTL_VSEL(S, mid, one, PTL_V(S, add)(ax, one));                    \
        num = PTL_VSEL(S, big, num, PTL_V(S, sub)(zero, one));                            \
        den = PTL_VSEL(S, big, den, ax);                                                  \
        PTL_VT(S) z = PTL_V(S, div)(num, den), z2 = PTL_V(S, mul)(z, z);                  \
        PTL_VT(S) off = PTL_VSEL(S, mid, zero, PTL_V(S, set1)(0.785398163397448f));       \
        off = PTL_VSEL(S, big, off, PTL_V(S, set1)(1.57079632679490f));                   \
        PTL_VT(S) tail = PTL_VSEL(S, mid, zero, PTL_V(S, set1)(-2.1855694e-08f));         \
        tail = PTL_VSEL(S, big, tail, PTL_V(S, set1)(-4.3711388e-08f));                   \
        PTL_VT(S) r = PTL_V(S, fmadd)(PTL_V(S, mul)(PTL_VM_POLY(S, z2, ptl_vm_atan_coef), z2), \
                                      z, z);                                              \
        r = PTL_V(S, add)(off, PTL_V(S, add)(r, tail));                                   \
        return PTL_V(S, or)(r, PTL_V(S, and)(sign, x));                                   \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_log2_##S(PTL_VT(S) x)                     \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0f), zero = PTL_V(S, setzero)();           \
        PTL_VMT(S) sub = PTL_VCMP(S, x, PTL_V(S, set1)(FLT_MIN), _CMP_LT_OQ);             \
        PTL_VT(S) xs = PTL_VSEL(S, sub, x, PTL_V(S, mul)(x, PTL_V(S, set1)(8388608.0f))); \
        PTL_VIT(S) bits = PTL_VTOI(S, xs);                                                \
        PTL_VIT(S) ei = PTL_VI(S, sub)(PTL_VI(S, srli)(bits, 23), PTL_VI_SET1(S)(127));   \
        PTL_VT(S) m = PTL_VFROMI(S, PTL_VSI(S, or)(                                       \
            PTL_VSI(S, and)(bits, PTL_VI_SET1(S)(0x7fffff)), PTL_VI_SET1(S)(0x3f800000))); \
        PTL_VT(S) e = PTL_V(S, sub)(PTL_V(S, cvtepi32)(ei),                               \
                                    PTL_VSEL(S, sub, zero, PTL_V(S, set1)(23.0f)));       \
        PTL_VMT(S) big = PTL_VCMP(S, m, PTL_V(S, set1)(1.41421356237f), _CMP_GT_OQ);      \
        m = PTL_VSEL(S, big, m, PTL_V(S, mul)(m, PTL_V(S, set1)(0.5f)));                  \
        e = PTL_V(S, add)(e, PTL_VSEL(S, big, zero, one));                                \
        PTL_VT(S) f = PTL_V(S, sub)(m, one), z = PTL_V(S, mul)(f, f);                     \
        PTL_VT(S) y = PTL_V(S, mul)(PTL_V(S, mul)(PTL_VM_POLY(S, f, ptl_vm_log_coef), f), z); \
        y = PTL_V(S, fnmadd)(PTL_V(S, set1)(0.5f), z, y);                                 \
        PTL_VT(S) t = PTL_V(S, fmadd)(f, PTL_V(S, set1)(1.9259629891e-08f),               \
                                      PTL_V(S, mul)(y, PTL_V(S, set1)(1.44269502163f)));  \
        y = PTL_V(S, add)(e, PTL_V(S, fmadd)(f, PTL_V(S, set1)(1.44269502163f), t));      \
        y = PTL_VSEL(S, PTL_VCMP(S, x, zero, _CMP_EQ_OQ), y, PTL_V(S, set1)(-INFINITY));  \
        y = PTL_VSEL(S, PTL_VCMP(S, x, PTL_V(S, set1)(INFINITY), _CMP_EQ_OQ), y, x);      \
        return PTL_VSEL(S, PTL_VCMP(S, x, zero, _CMP_NGE_UQ), y, PTL_V(S, set1)(NAN));    \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_asin_##S(PTL_VT(S) x)                     \
    {                                                                                     \
        const PTL_VT(S) sign = PTL_V(S, set1)(-0.0f), half = PTL_V(S, set1)(0.5f);        \
        PTL_VT(S) ax = PTL_V(S, andnot)(sign, x);                                         \
        PTL_VMT(S) big = PTL_VCMP(S, ax, half, _CMP_GT_OQ);                              \
        PTL_VT(S) zb = PTL_V(S, mul)(PTL_V(S, sub)(PTL_V(S, set1)(1.0f), ax), half);      \
        PTL_VT(S) z = PTL_VSEL(S, big, PTL_V(S, mul)(ax, ax), zb);                        \
        PTL_VT(S) sq = PTL_V(S, sqrt)(zb), v = PTL_VSEL(S, big, ax, sq);                  \
        PTL_VT(S) vzp = PTL_V(S, mul)(PTL_V(S, mul)(v, z), PTL_VM_POLY(S, z, asin_coef)); \
        /* sqrt's rounding error, (zb - sq^2) / (2 sq), and the polynomial term */        \
        PTL_VT(S) two_sq = PTL_V(S, add)(sq, sq);                                         \
        PTL_VT(S) corr = PTL_V(S, add)(                                                   \
            PTL_V(S, div)(PTL_V(S, fnmadd)(sq, sq, zb),                                   \
                          PTL_V(S, max)(two_sq, PTL_V(S, set1)(FLT_MIN))), vzp);          \
        PTL_VT(S) far = PTL_V(S, sub)(PTL_V(S, set1)(1.57079637050628662f), two_sq);      \
        far = PTL_V(S, fnmadd)(PTL_V(S, set1)(2.0f), corr, far);                          \
        far = PTL_V(S, add)(far, PTL_V(S, set1)(-4.3711388e-08f));                        \
        PTL_VT(S) near = PTL_V(S, add)(v, vzp);                                           \
        return PTL_V(S, or)(PTL_VSEL(S, big, near, far), PTL_V(S, and)(sign, x));         \
    }                                                                                     \
    PTL_VM_DEFINE_MAP(asin, S)                                                            \
    PTL_VM_DEFINE_MAP(atan, S)                                                            \
    PTL_VM_DEFINE_MAP(log2, S)

/* (tan(r) - r) / r^3 = P(r^2) for |r| <= pi/4 (+ 1e-3), a degree-8 Chebyshev fit converted
 * to powers (7.5e-11 relative in tan), the highest power first */
static const double tanf_coef[] = {
    0.000809640822657722, -0.00020242625359693427, 0.001989180494319375,
    0.0033916105536168804, 0.008906552459318902,   0.021864300020970766,
    0.05396856313171222,  0.13333332621978575,     0.3333333333622987};
#define DEFINE_UNARY_VEC_DOUBLE_FORMULAS(S)                                               \
    DEFINE_UNARY_VEC_LOG_PARTS_D(S)                                                       \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_log2_##S(PTL_VT(S) x)                     \
    {                                                                                     \
        PTL_VT(S) e, m = ptl_vm_log_split_d_##S(x, &e);                                   \
        PTL_VT(S) y = PTL_V(S, fmadd)(ptl_vm_log_normal_##S(m),                           \
                                      PTL_V(S, set1)(1.4426950408889634), e);             \
        return ptl_vm_log_edges_d_##S(y, x, log2);                                        \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_tan_##S(PTL_VT(S) x)                      \
    {                                                                                     \
        PTL_VT(S) s, c;                                                                   \
        PTL_VMT(S) slow = ptl_vm_sincos_fast_##S(x, &s, &c);                              \
        return ptl_vm_patch_##S(PTL_V(S, div)(s, c), x, slow, tan);                       \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_tanf_##S(PTL_VT(S) x)                     \
    {                                                                                     \
        const PTL_VT(S) magic = PTL_V(S, set1)(PTL_SINCOS2PI_MAGIC);                      \
        PTL_VT(S) k = PTL_V(S, fmadd)(x, PTL_V(S, set1)(0.63661977236758134308), magic);  \
        PTL_VT(S) q = PTL_V(S, sub)(k, magic);                                            \
        PTL_VT(S) r = PTL_V(S, fnmadd)(q, PTL_V(S, set1)(PTL_VM_PIO2_C1), x);             \
        r = PTL_V(S, fnmadd)(q, PTL_V(S, set1)(PTL_VM_PIO2_C2), r);                       \
        r = PTL_V(S, fnmadd)(q, PTL_V(S, set1)(PTL_VM_PIO2_C3), r);                       \
        PTL_VT(S) z = PTL_V(S, mul)(r, r);                                                \
        PTL_VT(S) t = PTL_V(S, fmadd)(PTL_V(S, mul)(r, z), PTL_VM_POLY(S, z, tanf_coef), r); \
        PTL_VT(S) qh = PTL_V(S, mul)(q, PTL_V(S, set1)(0.5));                             \
        PTL_VMT(S) odd = PTL_VCMP(S, PTL_VFLOOR(S, qh), qh, _CMP_NEQ_OQ);                 \
        t = PTL_VSEL(S, odd, t, PTL_V(S, div)(PTL_V(S, set1)(-1.0), t));                  \
        PTL_VMT(S) slow = PTL_VCMP(S, PTL_V(S, andnot)(PTL_V(S, set1)(-0.0), x),          \
                                   PTL_V(S, set1)(0x1p20), _CMP_NLE_UQ);                  \
        return ptl_vm_patch_##S(t, x, slow, tan);                                         \
    }                                                                                     \
    PTL_VM_DEFINE_MAP(log2, S)                                                            \
    PTL_VM_DEFINE_MAP(tan, S)                                                             \
    DEFINE_F4_IN_DOUBLE_MAP(tan, tanf, S)                                                 \
    DEFINE_UNARY_VEC_LOG1P_EXPM1_D(S)                                                     \
    DEFINE_UNARY_VEC_ERF_D(S)                                                             \
    DEFINE_UNARY_VEC_TRIG_D(S)

/* o[i] = G(a[i]) for float32 data computed in double lanes of kind S; the tail goes through
 * a zero-padded buffer, so every element takes the same vector formula */
#define DEFINE_F4_IN_DOUBLE_MAP(F, G, S)                                                  \
    PTL_VATTR(S) static void ptl_vm_map_f4_##F##_##S(float *o, const float *a, int64_t n) \
    {                                                                                     \
        const int64_t L = PTL_VLANES(S);                                                  \
        int64_t i = 0;                                                                    \
        for (; i + 2 * L <= n; i += 2 * L) {                                              \
            PTL_VT(S) y0 = ptl_vm_##G##_##S(PTL_VLOADF(S, a + i));                        \
            PTL_VT(S) y1 = ptl_vm_##G##_##S(PTL_VLOADF(S, a + i + L));                    \
            PTL_VSTOREF(S, o + i, y0);                                                    \
            PTL_VSTOREF(S, o + i + L, y1);                                                \
        }                                                                                 \
        for (; i + L <= n; i += L) {                                                      \
            PTL_VSTOREF(S, o + i, ptl_vm_##G##_##S(PTL_VLOADF(S, a + i)));                \
        }                                                                                 \
        if (i < n) {                                                                      \
            float buf[PTL_VLANES(S)] = {0};                                               \
            memcpy(buf, a + i, (size_t)(n - i) * sizeof(float));                          \
            PTL_VSTOREF(S, buf, ptl_vm_##G##_##S(PTL_VLOADF(S, buf)));                    \
            memcpy(o + i, buf, (size_t)(n - i) * sizeof(float));                          \
        }                                                                                 \
    }

PTL_VM_FOR_FLOAT_KINDS(DEFINE_UNARY_VEC_FLOAT_FORMULAS)

/* erfc, float32 in double lanes: a = |x| clamped at 10.0625 (erfc rounds to 0 in float32
 * from 10.0546875 on), erfc(a) = e^(-a^2) P(t) / (a + 3) with t = (a - 3) / (a + 3) in
 * [-1, 0.54] (one division), P a degree-11 fit of (a + 3) erfcx(a) (3e-11 relative, minimax
 * against mpmath).  a^2 is exact in double, so e^(-a^2) = 2^n e^r, n = round(-a^2 log2(e)),
 * r = -a^2 - n ln2 (ln2 in two parts), e^r = 1 + r + r^2 Q(r) with Q a degree-5 fit (2e-10
 * relative), and 2^n a normal double (n >= -146): the float32 result, subnormal ones
 * included, rounds once from within 3e-10 relative, so it is correctly rounded unless it
 * lies that close to a rounding boundary.  x < 0: 2 - erfc(|x|); NaN propagates.  The
 * degree-16 and degree-14 fits of log(erfc) it replaces, with the full double exp, had been
 * 0.68x PyTorch's time on 1e6 values in [-3, 3] (issue 16). */
/* (a + 3) erfcx(a) = sum c[k] t^k, t = (a - 3) / (a + 3), a in [0, 10.0625] */
static const double erfcx_t_coef[] = {
    3.998863924689984e-05, 9.684010489895336e-05, -0.00028706680664360504,
    -0.0005463592332894271, 0.0030375901933922113, -0.0012124223756879995,
    -0.02682776769260133, 0.11952773875389391, -0.31046722795134407, 0.5902283581773993,
    -0.8833944537930091, 1.0740069070840539};
/* (e^r - 1 - r) / r^2 = sum c[k] r^k, |r| <= ln2 / 2 + 1e-3 */
static const double erfc_exp_coef[] = {
    0.00019857893088356, 0.0013933862929358264, 0.00833336104714519, 0.04166646313512395,
    0.1666666652994322, 0.5000000013618743};
#define DEFINE_UNARY_VEC_ERFC(S)                                                          \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_erfcf_##S(PTL_VT(S) x)                    \
    {                                                                                     \
        const PTL_VT(S) three = PTL_V(S, set1)(3.0);                                      \
        PTL_VT(S) a = PTL_V(S, andnot)(PTL_V(S, set1)(-0.0), x);                          \
        a = PTL_V(S, min)(a, PTL_V(S, set1)(10.0625));   /* NaN: 10.0625 */               \
        PTL_VT(S) rc = PTL_V(S, div)(PTL_V(S, set1)(1.0), PTL_V(S, add)(a, three));       \
        PTL_VT(S) t = PTL_V(S, mul)(PTL_V(S, sub)(a, three), rc);                         \
        PTL_VT(S) e = PTL_V(S, mul)(PTL_VM_POLY(S, t, erfcx_t_coef), rc);                 \
        PTL_VT(S) a2 = PTL_V(S, mul)(a, a);                                               \
        PTL_VT(S) n = PTL_VROUND(S, PTL_V(S, mul)(a2, PTL_V(S, set1)(-PTL_VM_LOG2E_pd))); \
        PTL_VT(S) r = PTL_V(S, fnmsub)(n, PTL_V(S, set1)(PTL_VM_LN2_HI_pd), a2);          \
        r = PTL_V(S, fnmadd)(n, PTL_V(S, set1)(PTL_VM_LN2_LO_pd), r);                     \
        PTL_VT(S) em1 = PTL_V(S, fmadd)(PTL_VM_POLY(S, r, erfc_exp_coef),                 \
                                        PTL_V(S, mul)(r, r), r);                          \
        PTL_VT(S) y = PTL_V(S, mul)(PTL_V(S, fmadd)(e, em1, e), ptl_vm_pow2i_##S(n));     \
        y = PTL_VSEL(S, PTL_VCMP(S, x, PTL_V(S, setzero)(), _CMP_LT_OQ), y,               \
                     PTL_V(S, sub)(PTL_V(S, set1)(2.0), y));                              \
        return PTL_VSEL(S, PTL_VCMP(S, x, x, _CMP_UNORD_Q), y, x);                        \
    }                                                                                     \
    DEFINE_F4_IN_DOUBLE_MAP(erfc, erfcf, S)
DEFINE_UNARY_VEC_ERFC(pd)
DEFINE_UNARY_VEC_ERFC(pd512)

/* i0, float32 in double lanes: for |x| <= 8 the series sum (x^2 / 4)^k / (k!)^2 up to k = 20
 * (positive terms, no cancellation; the rest is below 1e-12 relative), above it
 * e^|x| / sqrt|x| R(1 / |x|), R a degree-7 Chebyshev fit of sqrt(x) i0e(x) on [8, 92.5]
 * converted to powers (2.8e-10 relative), |x| clamped at 100 (float32 overflows from 91.9);
 * the second branch runs only for vectors with a lane above 8.  +-inf gives NaN (Note
 * [Special functions at the infinities] in special_math.h), NaN propagates. */
static const double i0_series_coef[] = {
    1.6894710964510562e-37, 6.757884385804225e-35, 2.4395962632753253e-32,
    7.904291893012054e-30, 2.2843403570804838e-27, 5.8479113141260385e-25,
    1.3157800456783586e-22, 2.5789288895295828e-20, 4.358389823304995e-18,
    6.276081345559193e-16, 7.594058428126623e-14, 7.594058428126624e-12,
    6.151187326782565e-10, 3.936759889140842e-08, 1.9290123456790124e-06,
    6.944444444444444e-05, 0.001736111111111111, 0.027777777777777776, 0.25, 1.0, 1.0};
static const double i0_asym_coef[] = {
    9.437285672114657,    -2.336983434035605,   0.41972470954031016, 0.021991181880523222,
    0.030113140350613576, 0.028031015424268294, 0.049868004792975255, 0.3989422794395084};
#define DEFINE_UNARY_VEC_I0(S)                                                            \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_i0_##S(PTL_VT(S) x)                       \
    {                                                                                     \
        const PTL_VT(S) eight = PTL_V(S, set1)(8.0);                                      \
        PTL_VT(S) ax = PTL_V(S, andnot)(PTL_V(S, set1)(-0.0), x);                         \
        PTL_VT(S) as = PTL_V(S, min)(ax, eight);                                          \
        PTL_VT(S) q = PTL_V(S, mul)(PTL_V(S, mul)(as, as), PTL_V(S, set1)(0.25));         \
        PTL_VT(S) y = PTL_VM_POLY(S, q, i0_series_coef);                                  \
        PTL_VMT(S) big = PTL_VCMP(S, ax, eight, _CMP_GT_OQ);                              \
        if (PTL_VBITS(S, big) != 0) {                                                     \
            PTL_VT(S) ab = PTL_V(S, min)(PTL_V(S, max)(ax, eight), PTL_V(S, set1)(100.0)); \
            PTL_VT(S) r = PTL_VM_POLY(S, PTL_V(S, div)(PTL_V(S, set1)(1.0), ab), i0_asym_coef); \
            r = PTL_V(S, div)(PTL_V(S, mul)(r, ptl_vm_exp_##S(ab)), PTL_V(S, sqrt)(ab));  \
            y = PTL_VSEL(S, big, y, r);                                                   \
        }                                                                                 \
        y = PTL_VSEL(S, PTL_VCMP(S, ax, PTL_V(S, set1)(INFINITY), _CMP_EQ_OQ), y,         \
                     PTL_V(S, set1)(NAN));                                                \
        return PTL_VSEL(S, PTL_VCMP(S, x, x, _CMP_UNORD_Q), y, x);                        \
    }                                                                                     \
    DEFINE_F4_IN_DOUBLE_MAP(i0, i0, S)
DEFINE_UNARY_VEC_I0(pd)
DEFINE_UNARY_VEC_I0(pd512)

/* i0e, i1 and i1e, float32 in double lanes, as i0 above: for |x| <= 8 the series of i0 or
 * of i1(x) = x/2 sum (x^2 / 4)^k / (k! (k + 1)!) up to k = 20, times e^-|x| for i0e; i1e as
 * |x| S(|x| / 4 - 1), S = i1e(x) / x of degree 22 (2.2e-12 relative, tools/fit_bessel_scaled.py),
 * without the exp (the series times e^-|x| had kept i1e of 1e6 at 0.57-0.61x PyTorch's time
 * on a Zen 3, a third of it in the exp); above it sqrt(x) i0e(x) or sqrt(x) i1e(x) as R(1 / x), R a degree-9 Chebyshev fit
 * on [0, 1/8] converted to powers (4e-11 relative), times sqrt(1 / x), times e^|x| (|x| clamped at
 * 100) for i1; i1 and i1e are odd (x's sign put back: -0 stays -0).  i1(+-inf) is NaN (Note
 * [Special functions at the infinities] in special_math.h), NaN propagates. */
static const double i1_series_coef[] = {
    8.045100459290744e-39, 3.3789421929021126e-36, 1.2839980333028028e-33,
    4.391273273895586e-31, 1.3437296218120491e-28, 3.654944571328774e-26,
    8.771866971189057e-24, 1.842092063949702e-21, 3.352607556388458e-19,
    5.230067787965994e-17, 6.903689480115112e-15, 7.594058428126623e-13,
    6.834652585313961e-11, 4.920949861426052e-09, 2.755731922398589e-07,
    1.1574074074074073e-05, 0.00034722222222222224, 0.006944444444444444,
    0.08333333333333333, 0.5, 1.0};
static const double i1e_small_coef[] = {
    6.587926454022122e-07, -2.0786313183160257e-06, 2.5294197178521703e-06,
    -6.554995944379294e-06, 2.5362860346040577e-05, -6.526450771043134e-05,
    0.00014739227616745586, -0.00033765124843283627, 0.0007451178288840267,
    -0.001540964459842318, 0.0030055304556597657, -0.00553375993353328,
    0.009584018870479879, -0.015571509121214359, 0.023686008547380046,
    -0.033671325385009665, 0.04467457330572154, -0.055280041746630565, 0.06376740368841236,
    -0.06848260610874451, 0.06805759990975097, -0.06112433803076989, 0.04468770987560916};
static const double i0e_asym_coef[] = {
    -554.1391327647963, 318.2393891601361, -67.83562519460773, 8.00710896363179,
    -0.4155692498129988, 0.06388301568148588, 0.02881614929370219, 0.028054853572677018,
    0.049867768141316854, 0.39894228041247615};
static const double i1e_asym_coef[] = {
    572.2040120502078, -332.29634956317767, 71.04974262623338, -8.451609101398525,
    0.4229375072024102, -0.07774537157945671, -0.04048049796053689, -0.04675552438936545,
    -0.1496033372138444, 0.3989422803897054};
/* the Bessel function of order ORDER (0, 1) at x, times e^-|x| when SCALED; the series'
 * polynomial as two Horner chains in q^2 (even and odd powers: half the latency) */
#define DEFINE_UNARY_VEC_BESSEL(S)                                                        \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        ptl_vm_bessel_##S(PTL_VT(S) x, int order, int scaled)                             \
    {                                                                                     \
        const PTL_VT(S) eight = PTL_V(S, set1)(8.0), sign = PTL_V(S, set1)(-0.0);         \
        PTL_VT(S) ax = PTL_V(S, andnot)(sign, x);                                         \
        PTL_VT(S) as = PTL_V(S, min)(ax, eight);                                          \
        PTL_VT(S) q = PTL_V(S, mul)(PTL_V(S, mul)(as, as), PTL_V(S, set1)(0.25));         \
        PTL_VT(S) y =                                                                     \
            order == 0 ? ptl_vm_poly_split_##S(q, i0_series_coef, PTL_VM_COUNT(i0_series_coef)) \
            : scaled   ? PTL_V(S, mul)(as, ptl_vm_poly_split_##S(                         \
                             PTL_V(S, fmsub)(as, PTL_V(S, set1)(0.25), PTL_V(S, set1)(1.0)), \
                             i1e_small_coef, PTL_VM_COUNT(i1e_small_coef)))              \
                       : PTL_V(S, mul)(PTL_V(S, mul)(as, PTL_V(S, set1)(0.5)),             \
                                       ptl_vm_poly_split_##S(q, i1_series_coef,           \
                                                             PTL_VM_COUNT(i1_series_coef))); \
        if (scaled && order == 0) {                                                       \
            y = PTL_V(S, mul)(y, ptl_vm_exp_##S(PTL_V(S, sub)(PTL_V(S, setzero)(), as))); \
        }                                                                                 \
        PTL_VMT(S) big = PTL_VCMP(S, ax, eight, _CMP_GT_OQ);                              \
        if (PTL_VBITS(S, big) != 0) {                                                     \
            PTL_VT(S) ab = PTL_V(S, max)(ax, eight);                                      \
            ab = scaled ? ab : PTL_V(S, min)(ab, PTL_V(S, set1)(100.0));                  \
            PTL_VT(S) t = PTL_V(S, div)(PTL_V(S, set1)(1.0), ab);                         \
            PTL_VT(S) r = order == 0 ? PTL_VM_POLY(S, t, i0e_asym_coef)                   \
                                     : PTL_VM_POLY(S, t, i1e_asym_coef);                  \
            r = PTL_V(S, mul)(r, PTL_V(S, sqrt)(t));                                      \
            r = scaled ? r : PTL_V(S, mul)(r, ptl_vm_exp_##S(ab));                        \
            y = PTL_VSEL(S, big, y, r);                                                   \
        }                                                                                 \
        y = order == 0 ? y : PTL_V(S, or)(y, PTL_V(S, and)(sign, x));                     \
        if (!scaled) {                                                                    \
            y = PTL_VSEL(S, PTL_VCMP(S, ax, PTL_V(S, set1)(INFINITY), _CMP_EQ_OQ), y,     \
                         PTL_V(S, set1)(NAN));                                            \
        }                                                                                 \
        return PTL_VSEL(S, PTL_VCMP(S, x, x, _CMP_UNORD_Q), y, x);                        \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_special_i0e_##S(PTL_VT(S) x)              \
    {                                                                                     \
        return ptl_vm_bessel_##S(x, 0, 1);                                                \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_special_i1_##S(PTL_VT(S) x)               \
    {                                                                                     \
        return ptl_vm_bessel_##S(x, 1, 0);                                                \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_special_i1e_##S(PTL_VT(S) x)              \
    {                                                                                     \
        return ptl_vm_bessel_##S(x, 1, 1);                                                \
    }                                                                                     \
    DEFINE_F4_IN_DOUBLE_MAP(special_i0e, special_i0e, S)                                  \
    DEFINE_F4_IN_DOUBLE_MAP(special_i1, special_i1, S)                                    \
    DEFINE_F4_IN_DOUBLE_MAP(special_i1e, special_i1e, S)
DEFINE_VM_POLY_SPLIT(pd)
DEFINE_VM_POLY_SPLIT(pd512)
DEFINE_UNARY_VEC_BESSEL(pd)
DEFINE_UNARY_VEC_BESSEL(pd512)
DEFINE_UNARY_VEC_DOUBLE_FORMULAS(pd)
DEFINE_UNARY_VEC_DOUBLE_FORMULAS(pd512)

/* NAME's float32 loop in double lanes of kind D (ptl_vm_map_f4_NAME_D) */
#define DEFINE_VEC_LOOP_F4_IN_D(NAME, D)                                                  \
    static void NAME##_loop_f4_##D(char **d, const int64_t *s, int64_t n, const void *extra) \
    {                                                                                     \
        if (n > 1 && (s[0] != sizeof(float) || s[1] != sizeof(float))) {                 \
            NAME##_loop_f4(d, s, n, extra);                                               \
            return;                                                                       \
        }                                                                                 \
        ptl_vm_map_f4_##NAME##_##D((float *)d[0], (const float *)d[1], n);                \
    }
/* a float32-only op computed in double lanes of kind D (table named by S) */
#define DEFINE_VEC_OP_F4_IN_D(NAME, S, D)                                                 \
    DEFINE_VEC_LOOP_F4_IN_D(NAME, D)                                                      \
    static const PtlLoop NAME##_loops_##S[PTL_DTYPE_COUNT] = {                            \
        [PTL_DTYPE_FLOAT16] = NAME##_loop_f2, [PTL_DTYPE_BFLOAT16] = NAME##_loop_bf,      \
        [PTL_DTYPE_FLOAT32] = NAME##_loop_f4_##D, [PTL_DTYPE_FLOAT64] = NAME##_loop_f8};
/* an op computed in double lanes of kind D for float32 and float64 (F8's formula; table
 * named by S) */
#define DEFINE_VEC_OP_IN_D(NAME, F8, S, D)                                                \
    DEFINE_VEC_LOOP_F4_IN_D(NAME, D)                                                      \
    DEFINE_VEC_LOOP(NAME, F8, f8, D)                                                      \
    static const PtlLoop NAME##_loops_##S[PTL_DTYPE_COUNT] = {                            \
        [PTL_DTYPE_FLOAT16] = NAME##_loop_f2, [PTL_DTYPE_BFLOAT16] = NAME##_loop_bf,      \
        [PTL_DTYPE_FLOAT32] = NAME##_loop_f4_##D, [PTL_DTYPE_FLOAT64] = NAME##_loop_f8_##D};

#define DEFINE_VEC_OPS(S, D)                                                              \
    DEFINE_VEC_OP2(exp, S, D)                                                             \
    DEFINE_VEC_OP_D(expm1, S, D)                                                          \
    DEFINE_VEC_OP_D(erf, S, D)                                                            \
    DEFINE_VEC_OP_D(log, S, D)                                                            \
    DEFINE_VEC_OP_D(log1p, S, D)                                                          \
    DEFINE_VEC_OP_D(sinh, S, D)                                                           \
    DEFINE_VEC_OP_D(cosh, S, D)                                                           \
    DEFINE_VEC_OP_F8(log10, S, D)                                                         \
    DEFINE_VEC_OP2(sigmoid, S, D)                                                         \
    DEFINE_VEC_OP2(tanh, S, D)                                                            \
    DEFINE_VEC_OP_D(erfinv, S, D)                                                         \
    DEFINE_VEC_OP2(sin, S, D)                                                             \
    DEFINE_VEC_OP2(cos, S, D)                                                             \
    DEFINE_VEC_OP2(exp2, S, D)                                                            \
    DEFINE_VEC_OP2(atan, S, D)                                                            \
    DEFINE_VEC_OP2(asin, S, D)                                                            \
    DEFINE_VEC_OP_IN_D(acos, acos, S, D)                                                  \
    DEFINE_VEC_OP2(log2, S, D)                                                            \
    DEFINE_VEC_OP_IN_D(tan, tan, S, D)

DEFINE_VEC_OPS(ps, pd)
DEFINE_VEC_OPS(ps512, pd512)

/* the loop table of the widest vector kind the CPU has */
#define PICK_VEC(NAME)                                                                    \
    (ptl_cpu_capability() >= PTL_CPU_AVX512 ? NAME##_loops_ps512                          \
     : ptl_cpu_capability() >= PTL_CPU_AVX2 ? NAME##_loops_ps                             \
                                             : NAME##_loops)

#else
#define PICK_VEC(NAME) (NAME##_loops)
#endif
/* NAME's float16 loop in registers, or NULL (unary_half.c) */
#define HALF_VEC(NAME) ptl_unary_half_loop(PTL_HALF_UNARY_##NAME)

/* ---- kernels ---- */

static const int self_only[1] = {0};

/* How a unary op treats dtypes. */
enum {
    U_FLOAT = 1,      /* integer and bool inputs compute in the default float dtype */
    U_STRICT = 2,     /* out= must have self's dtype ("Found dtype Long but expected Float") */
    U_BOOL_OUT = 4,   /* the result is bool */
    U_VEC_F4 = 8,     /* the float32 loop is a vector formula: bfloat16 runs it too (Note
                       * [Half-precision pointwise through float32] in native.c) */
    U_HALF_BITS = 16, /* the half types' loops work on their bits: no float32 round trip */
};

static int unary_run(const PtlOperator *op, PtlIValue *s, const PtlLoop *loops, int flags,
                     const char *vml, const void *extra);

/* unary_run with float16 self taking f2 where it is not NULL (Note [Float16 unary formulas
 * in registers]) */
static int
unary_run_halves(const PtlOperator *op, PtlIValue *s, const PtlLoop *loops, int flags,
                 PtlLoop f2)
{
    PtlLoop with_f2[PTL_DTYPE_COUNT];
    if (f2 == NULL || s[0].u.t->dtype != PTL_DTYPE_FLOAT16) {
        return unary_run(op, s, loops, flags, NULL, NULL);
    }
    memcpy(with_f2, loops, sizeof(with_f2));
    with_f2[PTL_DTYPE_FLOAT16] = f2;
    return unary_run(op, s, with_f2, flags | U_HALF_BITS, NULL, NULL);
}

/* Runs the unary op `op` (functional, in-place or out=) on s[0] with `loops`; `vml`
 * names the kernel in the error for bool input when it differs from "<op>_cpu". */
static int
unary_run(const PtlOperator *op, PtlIValue *s, const PtlLoop *loops, int flags,
          const char *vml, const void *extra)
{
    PtlTensorImpl *self = s[0].u.t, *out = ptl_kernel_out(op, s);
    PtlIterConfig cfg = ptl_iter_config();

    if ((flags & U_STRICT) && out != NULL && out->dtype != self->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Found dtype %s but expected %s",
                             ptl_dtype_legacy_name(out->dtype),
                             ptl_dtype_legacy_name(self->dtype));
    }
    if (vml != NULL && self->dtype == PTL_DTYPE_BOOL) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for 'Bool'", vml);
    }
    cfg.int_to_float = (flags & U_FLOAT) != 0;
    if (flags & U_BOOL_OUT) {
        cfg.out_dtype = PTL_DTYPE_BOOL;
    }
    if (op->id == PTL_OP_square || op->id == PTL_OP_square_ || op->id == PTL_OP_square_out) {
        /* square is pow(self, 2): bool promotes with the int 2 to int64 */
        if (self->dtype == PTL_DTYPE_BOOL) {
            cfg.compute_dtype = PTL_DTYPE_INT64;
        }
    }
    if (flags & U_HALF_BITS) {
        return ptl_pointwise(op, s, 1, self_only, cfg, loops, extra);
    }
    return ptl_pointwise_halves_in_float(op, s, 1, self_only, cfg, loops, extra,
                                         (flags & U_VEC_F4) != 0);
}

/* Stamps NAME_cpu(op, ks, s) -> unary_run with the given loop table and flags. */
#define DEFINE_UNARY_KERNEL(NAME, LOOPS, FLAGS, VML)                                      \
    static int                                                                            \
    NAME##_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)                 \
    {                                                                                     \
        (void)ks;                                                                         \
        return unary_run(op, s, (LOOPS), (FLAGS), (VML), NULL);                           \
    }

/* NAME_cpu for the ops with a float16 loop in registers (HALF_VEC) */
#define DEFINE_UNARY_KERNEL_HALVES(NAME)                                                  \
    static int                                                                            \
    NAME##_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)                 \
    {                                                                                     \
        (void)ks;                                                                         \
        return unary_run_halves(op, s, PICK_VEC(NAME), U_FLOAT | U_VEC_F4, HALF_VEC(NAME)); \
    }

/* [*] -> [*] float (integer and bool inputs promote to the default dtype) */
DEFINE_UNARY_KERNEL_HALVES(exp)
DEFINE_UNARY_KERNEL(exp2, PICK_VEC(exp2), U_FLOAT | U_VEC_F4, NULL)
DEFINE_UNARY_KERNEL_HALVES(expm1)
DEFINE_UNARY_KERNEL_HALVES(log)
DEFINE_UNARY_KERNEL(log2, PICK_VEC(log2), U_FLOAT | U_VEC_F4, NULL)
DEFINE_UNARY_KERNEL(log10, PICK_VEC(log10), U_FLOAT, NULL)
DEFINE_UNARY_KERNEL_HALVES(log1p)
DEFINE_UNARY_KERNEL(sqrt, sqrt_loops, U_FLOAT, NULL)
DEFINE_UNARY_KERNEL(rsqrt, rsqrt_loops, U_FLOAT, NULL)
DEFINE_UNARY_KERNEL(sin, PICK_VEC(sin), U_FLOAT | U_VEC_F4, NULL)
DEFINE_UNARY_KERNEL(cos, PICK_VEC(cos), U_FLOAT | U_VEC_F4, NULL)
DEFINE_UNARY_KERNEL(tan, PICK_VEC(tan), U_FLOAT | U_VEC_F4, NULL)
DEFINE_UNARY_KERNEL(asin, PICK_VEC(asin), U_FLOAT | U_VEC_F4, NULL)
DEFINE_UNARY_KERNEL(acos, PICK_VEC(acos), U_FLOAT | U_VEC_F4, NULL)
DEFINE_UNARY_KERNEL(atan, PICK_VEC(atan), U_FLOAT | U_VEC_F4, NULL)
DEFINE_UNARY_KERNEL_HALVES(sinh)
DEFINE_UNARY_KERNEL_HALVES(cosh)
DEFINE_UNARY_KERNEL_HALVES(tanh)
DEFINE_UNARY_KERNEL_HALVES(sigmoid)
DEFINE_UNARY_KERNEL_HALVES(erf)
DEFINE_UNARY_KERNEL(erfinv, PICK_VEC(erfinv), U_FLOAT | U_VEC_F4, NULL)
DEFINE_UNARY_KERNEL(reciprocal, reciprocal_loops, U_FLOAT, NULL)
/* [*] -> [*] same dtype */
DEFINE_UNARY_KERNEL(abs, abs_loops, U_STRICT | U_HALF_BITS, NULL)
DEFINE_UNARY_KERNEL(square, square_loops, 0, NULL)
DEFINE_UNARY_KERNEL(frac, frac_loops, U_STRICT, NULL)
DEFINE_UNARY_KERNEL(floor, floor_loops, U_STRICT, "floor_vml_cpu")
DEFINE_UNARY_KERNEL(ceil, ceil_loops, U_STRICT, "ceil_vml_cpu")
DEFINE_UNARY_KERNEL(trunc, trunc_loops, U_STRICT, "trunc_vml_cpu")
DEFINE_UNARY_KERNEL(bitwise_not, bitwise_not_loops, U_STRICT, NULL)
/* [*] -> [*] bool */
DEFINE_UNARY_KERNEL(isnan, isnan_loops, U_BOOL_OUT, NULL)
DEFINE_UNARY_KERNEL(isinf, isinf_loops, U_BOOL_OUT, NULL)
DEFINE_UNARY_KERNEL(isfinite, isfinite_loops, U_BOOL_OUT, NULL)
DEFINE_UNARY_KERNEL(logical_not, logical_not_loops, U_BOOL_OUT, NULL)

/* neg(Tensor self) -> Tensor; bool is refused before anything else, as in PyTorch */
static int
neg_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    if (s[0].u.t->dtype == PTL_DTYPE_BOOL) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Negation, the `-` operator, on a bool tensor is not supported. "
                             "If you are trying to invert a mask, use the `~` or "
                             "`logical_not()` operator instead.");
    }
    return unary_run(op, s, neg_loops, U_STRICT, NULL, NULL);
}

/* sign(Tensor self) -> Tensor; sign of a bool is itself */
static int
sign_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlLoop loops[PTL_DTYPE_COUNT];
    (void)ks;
    memcpy(loops, sign_loops, sizeof(loops));
    loops[PTL_DTYPE_BOOL] = bool_id_loop_b1;
    return unary_run(op, s, loops, U_STRICT, NULL, NULL);
}

/* relu(Tensor self) -> Tensor; relu.out demands an out= of self's dtype, as PyTorch */
static int
relu_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *out = ptl_kernel_out(op, s);
    if (s[0].u.t->dtype == PTL_DTYPE_BOOL) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Boolean inputs not supported for relu");
    }
    if (out != NULL && out->dtype != s[0].u.t->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Expected out tensor to have dtype %s, but got %s instead",
                             ptl_dtype_cpp_name(s[0].u.t->dtype),
                             ptl_dtype_cpp_name(out->dtype));
    }
    return unary_run(op, s, relu_loops, 0, NULL, NULL);
}

/* round(Tensor self) and round.decimals(Tensor self, *, int decimals): half to even;
 * integers are their own round, but only without `decimals` ("round_cpu" otherwise). */
static int
round_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    RoundDecimals r = {0, 1, 1};
    (void)ks;
    int with_decimals = op->id == PTL_OP_round_decimals || op->id == PTL_OP_round__decimals ||
                        op->id == PTL_OP_round_decimals_out;
    if (with_decimals) {
        r.decimals = s[1].u.i;
        double digits = r.decimals < 0 ? -(double)r.decimals : (double)r.decimals;
        r.pf = powf(10.0f, (float)digits);
        r.pd = pow(10.0, digits);
        PtlDtype dt = s[0].u.t->dtype;
        if (!ptl_dtype_is_floating(dt)) {
            return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"round_cpu\" not implemented for '%s'",
                                 ptl_dtype_legacy_name(dt));
        }
    }
    return unary_run(op, s, round_loops, U_STRICT, "round_vml_cpu", &r);
}

/* nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None):
 * defaults 0, the dtype's largest and lowest finite values; integers pass through. */
int
ptl_nan_to_num_prepare(const PtlOperator *op, const PtlIValue *s, double *r)
{
    PtlTensorImpl *self = s[0].u.t, *out = ptl_kernel_out(op, s);
    double big;

    if (out != NULL && out->dtype != self->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "nan_to_num: dtype of out: %s should be same as input: %s",
                             ptl_dtype_legacy_name(out->dtype),
                             ptl_dtype_legacy_name(self->dtype));
    }
    switch (self->dtype) {
    case PTL_DTYPE_FLOAT16: big = 65504.0; break;
    case PTL_DTYPE_BFLOAT16: big = 3.3895313892515355e38; break;
    case PTL_DTYPE_FLOAT32: big = FLT_MAX; break;
    default: big = DBL_MAX; break;
    }
    r[0] = s[1].tag == PTL_IV_NONE ? 0.0 : ptl_iv_to_double(&s[1]);
    r[1] = s[2].tag == PTL_IV_NONE ? big : ptl_iv_to_double(&s[2]);
    r[2] = s[3].tag == PTL_IV_NONE ? -big : ptl_iv_to_double(&s[3]);
    return 0;
}

static int
nan_to_num_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    double v[3];
    (void)ks;
    if (ptl_nan_to_num_prepare(op, s, v) < 0) {
        return -1;
    }
    NanToNum r = {v[0], v[1], v[2]};
    return unary_run(op, s, nan_to_num_loops, 0, NULL, &r);
}

/* ---- the gamma function family: lgamma, digamma, polygamma(n, .) ---- */

#define LGAMMA_F(X, E) ptl_lgamma_f(X)
#define LGAMMA_D(X, E) ptl_lgamma_d(X)
#define DIGAMMA_F(X, E) ((float)ptl_digamma_d(X))
#define DIGAMMA_D(X, E) ptl_digamma_d(X)
#define POLYGAMMA_F(X, E) ptl_polygamma_f(*(const int64_t *)(E), (X))
#define POLYGAMMA_D(X, E) ptl_polygamma_d(*(const int64_t *)(E), (X))

DEFINE_UNARY_FLOAT(lgamma, LGAMMA_F, LGAMMA_D)
DEFINE_UNARY_FLOAT(digamma, DIGAMMA_F, DIGAMMA_D)
DEFINE_UNARY_FLOAT(polygamma, POLYGAMMA_F, POLYGAMMA_D)

/* NAME's loop of dtype tag DT (C type T) that sends contiguous data to the vector formula
 * FN (an expression in `extra`) of unary_special.c (Note [Vector lgamma and digamma]);
 * strided data, other FN, and CPUs without AVX2 take the portable loop */
#define DEFINE_SPECIAL_LOOP(NAME, FN, DT, T)                                              \
    static void                                                                           \
    NAME##_loop_##DT##_vec(char **d, const int64_t *s, int64_t n, const void *extra)      \
    {                                                                                     \
        if ((n <= 1 || (s[0] == sizeof(T) && s[1] == sizeof(T))) &&                      \
            ptl_unary_special_map(FN, sizeof(T) == sizeof(double), d[0], d[1], n) == 0) { \
            return;                                                                       \
        }                                                                                 \
        NAME##_loop_##DT(d, s, n, extra);                                                 \
    }
DEFINE_SPECIAL_LOOP(lgamma, PTL_SPECIAL_LGAMMA, f4, float)
DEFINE_SPECIAL_LOOP(lgamma, PTL_SPECIAL_LGAMMA, f8, double)
DEFINE_SPECIAL_LOOP(digamma, PTL_SPECIAL_DIGAMMA, f4, float)
DEFINE_SPECIAL_LOOP(digamma, PTL_SPECIAL_DIGAMMA, f8, double)
/* polygamma(0, .) is digamma, polygamma(1, .) trigamma; higher orders have no vector loop */
#define POLYGAMMA_FN(E)                                                                   \
    (*(const int64_t *)(E) == 0   ? PTL_SPECIAL_DIGAMMA                                   \
     : *(const int64_t *)(E) == 1 ? PTL_SPECIAL_TRIGAMMA                                  \
                                  : -1)
DEFINE_SPECIAL_LOOP(polygamma, POLYGAMMA_FN(extra), f4, float)
DEFINE_SPECIAL_LOOP(polygamma, POLYGAMMA_FN(extra), f8, double)
#undef POLYGAMMA_FN
static const PtlLoop lgamma_vec_loops[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_FLOAT16] = lgamma_loop_f2, [PTL_DTYPE_BFLOAT16] = lgamma_loop_bf,
    [PTL_DTYPE_FLOAT32] = lgamma_loop_f4_vec, [PTL_DTYPE_FLOAT64] = lgamma_loop_f8_vec};
static const PtlLoop digamma_vec_loops[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_FLOAT16] = digamma_loop_f2, [PTL_DTYPE_BFLOAT16] = digamma_loop_bf,
    [PTL_DTYPE_FLOAT32] = digamma_loop_f4_vec, [PTL_DTYPE_FLOAT64] = digamma_loop_f8_vec};
static const PtlLoop polygamma_vec_loops[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_FLOAT16] = polygamma_loop_f2, [PTL_DTYPE_BFLOAT16] = polygamma_loop_bf,
    [PTL_DTYPE_FLOAT32] = polygamma_loop_f4_vec, [PTL_DTYPE_FLOAT64] = polygamma_loop_f8_vec};

DEFINE_UNARY_KERNEL(lgamma, lgamma_vec_loops, U_FLOAT, NULL)
DEFINE_UNARY_KERNEL(digamma, digamma_vec_loops, U_FLOAT, NULL)

/* polygamma(int n, Tensor self), polygamma.out(int n, Tensor self, *, out) and the method
 * polygamma_(Tensor(a!) self, int n): the tensor is argument 1, or 0 in place. */
static int
polygamma_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    static const int self_second[1] = {1};
    int inplace = op->id == PTL_OP_polygamma_;
    int64_t n = s[inplace ? 1 : 0].u.i;
    PtlIterConfig cfg = ptl_iter_config();
    (void)ks;

    if (n < 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "polygamma(n, x) does not support negative n.");
    }
    cfg.int_to_float = 1;
    return ptl_pointwise(op, s, 1, inplace ? self_only : self_second, cfg, polygamma_vec_loops,
                         &n);
}

/* ---- inverse hyperbolic functions, erfc and the modified Bessel functions (special_math.h,
 * the CUDA kernels' formulas); the Bessel functions compute float in double ---- */

#define ACOSH_F(X, E) ptl_acosh_f(X)
#define ACOSH_D(X, E) ptl_acosh_d(X)
#define ASINH_F(X, E) ptl_asinh_f(X)
#define ASINH_D(X, E) ptl_asinh_d(X)
#define ATANH_F(X, E) ptl_atanh_f(X)
#define ATANH_D(X, E) ptl_atanh_d(X)
#define ERFC_F(X, E) ptl_erfc_f(X)
#define ERFC_D(X, E) ptl_erfc_d(X)
#define I0_F(X, E) ((float)ptl_i0_d(X))
#define I0_D(X, E) ptl_i0_d(X)
#define I0E_F(X, E) ((float)ptl_i0e_d(X))
#define I0E_D(X, E) ptl_i0e_d(X)
#define I1_F(X, E) ((float)ptl_i1_d(X))
#define I1_D(X, E) ptl_i1_d(X)
#define I1E_F(X, E) ((float)ptl_i1e_d(X))
#define I1E_D(X, E) ptl_i1e_d(X)

DEFINE_FLOAT_OP(acosh, ACOSH_F, ACOSH_D)
DEFINE_FLOAT_OP(asinh, ASINH_F, ASINH_D)
DEFINE_FLOAT_OP(atanh, ATANH_F, ATANH_D)
DEFINE_FLOAT_OP(erfc, ERFC_F, ERFC_D)
#ifdef PTL_HAVE_AVX2_KERNELS
/* float32 erfc in double lanes (vector section), float64 by Note [Vector float64 erf, erfc,
 * erfinv] */
DEFINE_VEC_OP_IN_D(erfc, erfcd, ps, pd)
DEFINE_VEC_OP_IN_D(erfc, erfcd, ps512, pd512)
#endif
DEFINE_FLOAT_OP(i0, I0_F, I0_D)
DEFINE_FLOAT_OP(special_i0e, I0E_F, I0E_D)
DEFINE_FLOAT_OP(special_i1, I1_F, I1_D)
DEFINE_FLOAT_OP(special_i1e, I1E_F, I1E_D)
#ifdef PTL_HAVE_AVX2_KERNELS
/* float32 in double lanes (vector section), float64 in unary_special.c's lanes (Note
 * [Float64 lgamma and Bessel lanes]) */
#define DEFINE_VEC_OP_BESSEL(NAME, FN)                                                    \
    DEFINE_SPECIAL_LOOP(NAME, FN, f8, double)                                             \
    DEFINE_VEC_LOOP_F4_IN_D(NAME, pd)                                                     \
    DEFINE_VEC_LOOP_F4_IN_D(NAME, pd512)                                                  \
    static const PtlLoop NAME##_loops_ps[PTL_DTYPE_COUNT] = {                             \
        [PTL_DTYPE_FLOAT16] = NAME##_loop_f2, [PTL_DTYPE_BFLOAT16] = NAME##_loop_bf,      \
        [PTL_DTYPE_FLOAT32] = NAME##_loop_f4_pd, [PTL_DTYPE_FLOAT64] = NAME##_loop_f8_vec}; \
    static const PtlLoop NAME##_loops_ps512[PTL_DTYPE_COUNT] = {                          \
        [PTL_DTYPE_FLOAT16] = NAME##_loop_f2, [PTL_DTYPE_BFLOAT16] = NAME##_loop_bf,      \
        [PTL_DTYPE_FLOAT32] = NAME##_loop_f4_pd512, [PTL_DTYPE_FLOAT64] = NAME##_loop_f8_vec};
DEFINE_VEC_OP_BESSEL(i0, PTL_SPECIAL_I0)
DEFINE_VEC_OP_BESSEL(special_i0e, PTL_SPECIAL_I0E)
DEFINE_VEC_OP_BESSEL(special_i1, PTL_SPECIAL_I1)
DEFINE_VEC_OP_BESSEL(special_i1e, PTL_SPECIAL_I1E)
#undef DEFINE_VEC_OP_BESSEL
DEFINE_VEC_OP_F8(atanh, ps, pd)   /* float64 in vector lanes (vector section) */
DEFINE_VEC_OP_F8(atanh, ps512, pd512)
/* float32 in double lanes, float64 (unary_f8_trig.h) */
DEFINE_VEC_OP_IN_D(acosh, acosh, ps, pd)
DEFINE_VEC_OP_IN_D(acosh, acosh, ps512, pd512)
DEFINE_VEC_OP_IN_D(asinh, asinh, ps, pd)
DEFINE_VEC_OP_IN_D(asinh, asinh, ps512, pd512)
#endif

DEFINE_UNARY_KERNEL(acosh, PICK_VEC(acosh), U_FLOAT | U_VEC_F4, NULL)
DEFINE_UNARY_KERNEL(asinh, PICK_VEC(asinh), U_FLOAT | U_VEC_F4, NULL)
DEFINE_UNARY_KERNEL(atanh, PICK_VEC(atanh), U_FLOAT, NULL)
DEFINE_UNARY_KERNEL(erfc, PICK_VEC(erfc), U_FLOAT | U_VEC_F4, NULL)
DEFINE_UNARY_KERNEL(i0, PICK_VEC(i0), U_FLOAT | U_VEC_F4, NULL)
DEFINE_UNARY_KERNEL(special_i0e, PICK_VEC(special_i0e), U_FLOAT | U_VEC_F4, NULL)
DEFINE_UNARY_KERNEL(special_i1, PICK_VEC(special_i1), U_FLOAT | U_VEC_F4, NULL)
DEFINE_UNARY_KERNEL(special_i1e, PICK_VEC(special_i1e), U_FLOAT | U_VEC_F4, NULL)
#undef DEFINE_SPECIAL_LOOP

/* ---- frexp: [*] float -> mantissa [*] (self's dtype), exponent [*] int32 ---- */

#define FREXP_MANTISSA_F(X, E) ((float)ptl_frexp_mantissa_d(X))
#define FREXP_MANTISSA_D(X, E) ptl_frexp_mantissa_d(X)
#define FREXP_EXPONENT(X, E) ptl_frexp_exponent_d(X)
DEFINE_FLOAT_OP(frexp_mantissa, FREXP_MANTISSA_F, FREXP_MANTISSA_D)
DEFINE_UNARY_LOOP(frexp_exponent, ptl_half, int32_t, f2, PTL_LOAD_f2, PTL_ID, FREXP_EXPONENT)
DEFINE_UNARY_LOOP(frexp_exponent, ptl_bf16, int32_t, bf, PTL_LOAD_bf, PTL_ID, FREXP_EXPONENT)
DEFINE_UNARY_LOOP(frexp_exponent, float, int32_t, f4, PTL_ID, PTL_ID, FREXP_EXPONENT)
DEFINE_UNARY_LOOP(frexp_exponent, double, int32_t, f8, PTL_ID, PTL_ID, FREXP_EXPONENT)
static const PtlLoop frexp_exponent_loops[PTL_DTYPE_COUNT] = {FLOAT_ENTRIES(frexp_exponent)};

/* One output of frexp: self mapped by loops[self's dtype] into out (borrowed; NULL:
 * allocated) of dtype out_dtype.  The result (new reference) or NULL with the error set. */
static PtlTensorImpl *
frexp_part(PtlTensorImpl *self, PtlTensorImpl *out, PtlDtype out_dtype, const PtlLoop *loops)
{
    PtlIterConfig cfg = ptl_iter_config();
    PtlTensorIter it;
    PtlTensorImpl *r;
    cfg.ninputs = 1;
    cfg.inputs[0] = self;
    cfg.out = out;
    cfg.out_dtype = out_dtype;
    if (ptl_iter_build(&it, &cfg) < 0) {
        return NULL;
    }
    if (ptl_iter_run(&it, loops[it.compute_dtype], NULL) < 0) {
        ptl_iter_release(&it);
        return NULL;
    }
    if ((r = ptl_iter_finish(&it)) != NULL && out != NULL) {
        ptl_tensor_bump_version(r);
    }
    return r;
}

/* Note [Device frexp]
 * ~~~~~~~~~~~~~~~~~~~
 * On CUDA tensors (and under the kernel emulation) frexp is a composition of device kernels
 * on self's bits, viewed as the integer of its width: a subnormal is first scaled into the
 * normal range by 2^SCALE (exactly), then the exponent field gives the exponent (less the
 * bias, and less SCALE where scaled) and the mantissa is the bits with the field set to the
 * bias (a value in [0.5, 1)).  Zeros, infinities and NaN keep their value and get exponent
 * 0, as the CPU loops' frexp.  The results are the CPU's bits. */
typedef struct FrexpBits {
    PtlDtype dt, bits;                   /* the float dtype, the integer of its width */
    int mbits;                           /* mantissa bits */
    int64_t emask, bias, scale;          /* exponent field mask, frexp's bias, 2^scale */
} FrexpBits;

static const FrexpBits frexp_bits[] = {
    {PTL_DTYPE_FLOAT16, PTL_DTYPE_INT16, 10, 0x1f, 14, 11},
    {PTL_DTYPE_BFLOAT16, PTL_DTYPE_INT16, 7, 0xff, 126, 8},
    {PTL_DTYPE_FLOAT32, PTL_DTYPE_INT32, 23, 0xff, 126, 24},
    {PTL_DTYPE_FLOAT64, PTL_DTYPE_INT64, 52, 0x7ff, 1022, 54},
};

/* op(a, b) kept in k; b a host integer when bt is NULL: a 0-dim CPU tensor of the bits'
 * integer dtype (exact, as a double would not be for float64's masks; and of that dtype, so
 * that a 0-dim self's bits are not promoted to int64) */
static PtlTensorImpl *
frexp_op(PtlTemps *k, const FrexpBits *fb, PtlOpId id, PtlTensorImpl *a, PtlTensorImpl *bt,
         int64_t b)
{
    if (bt == NULL) {
        if ((bt = ptl_temps_keep(k, ptl_empty(0, NULL, fb->bits, ptl_device_cpu()))) == NULL) {
            return NULL;
        }
        void *p = ptl_tensor_data(bt);
        if (fb->bits == PTL_DTYPE_INT16) {
            *(int16_t *)p = (int16_t)b;
        }
        else if (fb->bits == PTL_DTYPE_INT32) {
            *(int32_t *)p = (int32_t)b;
        }
        else {
            *(int64_t *)p = b;
        }
    }
    PtlIValue args[3] = {ptl_iv_tensor(a), ptl_iv_tensor(bt), ptl_iv_int(1)};
    return ptl_temps_keep(k, ptl_call_tensor(id, args));
}

static PtlTensorImpl *
frexp_view(PtlTemps *k, PtlTensorImpl *t, PtlDtype dt)
{
    PtlIValue args[2] = {ptl_iv_tensor(t), ptl_iv_dtype(dt)};
    return ptl_temps_keep(k, ptl_call_tensor(PTL_OP_view_dtype, args));
}

static PtlTensorImpl *
frexp_where(PtlTemps *k, PtlTensorImpl *c, PtlTensorImpl *a, PtlTensorImpl *b)
{
    PtlIValue args[3] = {ptl_iv_tensor(c), ptl_iv_tensor(a), ptl_iv_tensor(b)};
    return ptl_temps_keep(k, ptl_call_tensor(PTL_OP_where_self, args));
}

/* The exponent field of t's bits (kept in k). */
static PtlTensorImpl *
frexp_field(PtlTemps *k, const FrexpBits *fb, PtlTensorImpl *t)
{
    PtlTensorImpl *b = frexp_view(k, t, fb->bits);
    if (b != NULL) {
        b = frexp_op(k, fb, PTL_OP_bitwise_right_shift_Tensor, b, NULL, fb->mbits);
    }
    return b != NULL ? frexp_op(k, fb, PTL_OP_bitwise_and_Tensor, b, NULL, fb->emask) : NULL;
}

/* *m (self's dtype) and *e (int32), new references; 0 or -1 */
static int
frexp_device(PtlTensorImpl *self, PtlTensorImpl **m, PtlTensorImpl **e)
{
    const FrexpBits *fb = NULL;
    PtlTemps k = {.n = 0};
    PtlTensorImpl *f0, *sub, *scaled, *xs, *bits, *f, *ex, *adj, *zero, *special, *mb;
    PtlTensorImpl *pow2, *fzero, *izero;
    const PtlDevice cpu = ptl_device_cpu();
    for (size_t i = 0; i < sizeof(frexp_bits) / sizeof(frexp_bits[0]); i++) {
        fb = frexp_bits[i].dt == self->dtype ? &frexp_bits[i] : fb;
    }
    *m = *e = NULL;
    /* host scalars: 2^scale and 0 in self's dtype, 0 in the bits' */
    if ((pow2 = ptl_temps_keep(&k, ptl_scalar_tensor(ldexp(1.0, (int)fb->scale), self->dtype,
                                                     cpu))) == NULL ||
        (fzero = ptl_temps_keep(&k, ptl_scalar_tensor(0, self->dtype, cpu))) == NULL ||
        (izero = ptl_temps_keep(&k, ptl_scalar_tensor(0, fb->bits, cpu))) == NULL ||
        (f0 = frexp_field(&k, fb, self)) == NULL ||
        (sub = frexp_op(&k, fb, PTL_OP_eq_Tensor, f0, NULL, 0)) == NULL ||
        (scaled = frexp_op(&k, fb, PTL_OP_mul_Tensor, self, pow2, 0)) == NULL ||
        (xs = frexp_where(&k, sub, scaled, self)) == NULL ||
        (bits = frexp_view(&k, xs, fb->bits)) == NULL ||
        (f = frexp_field(&k, fb, xs)) == NULL ||
        /* exponent: field - bias - (scale where scaled), 0 for zeros, infinities, NaN */
        (ex = frexp_op(&k, fb, PTL_OP_sub_Tensor, f, NULL, fb->bias)) == NULL ||
        (adj = frexp_op(&k, fb, PTL_OP_mul_Tensor, sub, NULL, fb->scale)) == NULL ||
        (ex = frexp_op(&k, fb, PTL_OP_sub_Tensor, ex, adj, 0)) == NULL ||
        (zero = frexp_op(&k, fb, PTL_OP_eq_Tensor, xs, fzero, 0)) == NULL ||
        (special = frexp_op(&k, fb, PTL_OP_eq_Tensor, f, NULL, fb->emask)) == NULL ||
        (special = frexp_op(&k, fb, PTL_OP_logical_or, special, zero, 0)) == NULL ||
        (ex = frexp_where(&k, special, izero, ex)) == NULL ||
        /* mantissa: the bits with the exponent field set to the bias */
        (mb = frexp_op(&k, fb, PTL_OP_bitwise_and_Tensor, bits, NULL,
                       ~(fb->emask << fb->mbits))) == NULL ||
        (mb = frexp_op(&k, fb, PTL_OP_bitwise_or_Tensor, mb, NULL,
                       fb->bias << fb->mbits)) == NULL ||
        (mb = frexp_view(&k, mb, self->dtype)) == NULL ||
        (mb = frexp_where(&k, special, self, mb)) == NULL) {
        goto done;
    }
    if ((*e = ptl_cast(ex, PTL_DTYPE_INT32)) != NULL) {
        *m = ptl_contiguous(mb);
    }
done:
    ptl_temps_drop(&k);
    if (*m == NULL) {
        PTL_CLEAR(*e);
        return -1;
    }
    return 0;
}

/* out (given to frexp.Tensor_out) resized to r's shape (Note [Resizing out=]) and holding
 * r's values; a new reference to it, or NULL */
static PtlTensorImpl *
frexp_into(PtlTensorImpl *out, PtlTensorImpl *r)
{
    if (ptl_resize_output(out, r->dim, r->sizes) < 0 || ptl_copy_into(out, r) < 0) {
        return NULL;
    }
    ptl_tensor_bump_version(out);
    ptl_incref(out);
    return out;
}

/* frexp.Tensor(self) -> (mantissa, exponent) and frexp.Tensor_out(self, *, mantissa,
 * exponent): two runs over self, one per output (s[0], s[1]). */
static int
frexp_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *self = s[0].u.t, *mo = NULL, *eo = NULL, *m, *e;
    (void)ks;
    if (!ptl_dtype_is_floating(self->dtype)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "torch.frexp() only supports floating-point dtypes");
    }
    if (op->id == PTL_OP_frexp_Tensor_out) {
        mo = s[1].u.t;
        eo = s[2].u.t;
        if (mo->dtype != self->dtype) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "torch.frexp() expects mantissa to have dtype %s but got %s",
                                 ptl_dtype_cpp_name(self->dtype),
                                 ptl_dtype_cpp_name(mo->dtype));
        }
        if (eo->dtype != PTL_DTYPE_INT32) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "torch.frexp() expects exponent to have int dtype but got %s",
                                 ptl_dtype_cpp_name(eo->dtype));
        }
    }
    if (ptl_on_device_path(self)) {
        if (frexp_device(self, &m, &e) < 0) {
            return -1;
        }
        if (mo != NULL) {
            PtlTensorImpl *m2 = frexp_into(mo, m), *e2 = m2 != NULL ? frexp_into(eo, e) : NULL;
            ptl_decref(m);
            ptl_decref(e);
            if (e2 == NULL) {
                ptl_xdecref(m2);
                return -1;
            }
            m = m2;
            e = e2;
        }
        s[0] = ptl_iv_tensor(m);
        s[1] = ptl_iv_tensor(e);
        return 0;
    }
    if ((m = frexp_part(self, mo, self->dtype, frexp_mantissa_loops)) == NULL) {
        return -1;
    }
    if ((e = frexp_part(self, eo, PTL_DTYPE_INT32, frexp_exponent_loops)) == NULL) {
        ptl_decref(m);
        return -1;
    }
    s[0] = ptl_iv_tensor(m);
    s[1] = ptl_iv_tensor(e);
    return 0;
}

/* functional, in-place and out= overloads of one op share its kernel */
#define UNARY_REGS(NAME)                                                                  \
    {PTL_OP_##NAME, PTL_KEY_CPU, NAME##_cpu}, {PTL_OP_##NAME##_, PTL_KEY_CPU, NAME##_cpu}, \
        {PTL_OP_##NAME##_out, PTL_KEY_CPU, NAME##_cpu}

/* i0's and special_i1's kernels (their vector lanes) for special.c, which registers them
 * as torch.special's modified_bessel_i0 and modified_bessel_i1 */
int
ptl_unary_i0_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    return i0_cpu(op, ks, s);
}

int
ptl_unary_special_i1_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    return special_i1_cpu(op, ks, s);
}

static const PtlKernelReg unary_cpu[] = {
    UNARY_REGS(neg), UNARY_REGS(abs), UNARY_REGS(sign), UNARY_REGS(exp), UNARY_REGS(exp2),
    UNARY_REGS(expm1), UNARY_REGS(log), UNARY_REGS(log2), UNARY_REGS(log10),
    UNARY_REGS(log1p), UNARY_REGS(sqrt), UNARY_REGS(rsqrt), UNARY_REGS(sin), UNARY_REGS(cos),
    UNARY_REGS(tan), UNARY_REGS(asin), UNARY_REGS(acos), UNARY_REGS(atan), UNARY_REGS(sinh),
    UNARY_REGS(cosh), UNARY_REGS(tanh), UNARY_REGS(sigmoid), UNARY_REGS(relu),
    UNARY_REGS(erf), UNARY_REGS(erfinv), UNARY_REGS(floor), UNARY_REGS(ceil),
    UNARY_REGS(trunc), UNARY_REGS(frac), UNARY_REGS(reciprocal), UNARY_REGS(square),
    UNARY_REGS(round), UNARY_REGS(logical_not), UNARY_REGS(bitwise_not),
    UNARY_REGS(nan_to_num), UNARY_REGS(lgamma), UNARY_REGS(digamma),
    UNARY_REGS(acosh), UNARY_REGS(asinh), UNARY_REGS(atanh), UNARY_REGS(erfc), UNARY_REGS(i0),
    {PTL_OP_special_i0e, PTL_KEY_CPU, special_i0e_cpu},
    {PTL_OP_special_i0e_out, PTL_KEY_CPU, special_i0e_cpu},
    {PTL_OP_special_i1, PTL_KEY_CPU, special_i1_cpu},
    {PTL_OP_special_i1_out, PTL_KEY_CPU, special_i1_cpu},
    {PTL_OP_special_i1e, PTL_KEY_CPU, special_i1e_cpu},
    {PTL_OP_special_i1e_out, PTL_KEY_CPU, special_i1e_cpu},
    {PTL_OP_frexp_Tensor, PTL_KEY_CPU, frexp_cpu},
    {PTL_OP_frexp_Tensor_out, PTL_KEY_CPU, frexp_cpu},
    {PTL_OP_polygamma, PTL_KEY_CPU, polygamma_cpu},
    {PTL_OP_polygamma_, PTL_KEY_CPU, polygamma_cpu},
    {PTL_OP_polygamma_out, PTL_KEY_CPU, polygamma_cpu},
    {PTL_OP_round_decimals, PTL_KEY_CPU, round_cpu},
    {PTL_OP_round__decimals, PTL_KEY_CPU, round_cpu},
    {PTL_OP_round_decimals_out, PTL_KEY_CPU, round_cpu},
    {PTL_OP_isnan, PTL_KEY_CPU, isnan_cpu},
    {PTL_OP_isinf, PTL_KEY_CPU, isinf_cpu},
    {PTL_OP_isfinite, PTL_KEY_CPU, isfinite_cpu},
};

#ifdef PTL_HAVE_AVX2_KERNELS
double ptl_erf_by_interval[16][16];
#endif

/* Registers unary_cpu after filling unary_f8_erf.h's ptl_erf_by_interval (the transpose of
 * ptl_erf_table_coef), which the AVX2 erf reads; 0 or -1 */
int
ptl_register_unary_cpu(void)
{
#ifdef PTL_HAVE_AVX2_KERNELS
    for (int i = 0; i < 16; i++) {
        for (int r = 0; r < 16; r++) {
            ptl_erf_by_interval[i][r] = ptl_erf_table_coef[r][i];
        }
    }
#endif
    return ptl_dispatcher_register(unary_cpu, sizeof unary_cpu / sizeof unary_cpu[0], __FILE__);
}
