/* binary.c -- binary arithmetic kernels: add, sub, rsub, mul, div (true, trunc, floor),
 * floor_divide, remainder, fmod, pow, atan2, maximum/minimum, fmax/fmin.  Mirrors
 * ATen/native/BinaryOps.cpp, ATen/native/Pow.cpp and ATen/native/cpu/BinaryOpsKernel.cpp.
 * Comparison, logical and bitwise ops live in compare.c.
 *
 * Each formula is stamped into one loop per dtype by binary_loops.h (contiguous,
 * broadcast-scalar and strided paths); the loop tables are indexed by compute dtype and a
 * NULL entry is PyTorch's "not implemented for" error.  float32 floor division, remainder,
 * fmod and atan2 have AVX2 and AVX-512 loops (vec_math.h's Note [Vector float32 division]
 * and Note [Vector atan2 and erfinv]) chosen at run time.  Every kernel here is
 * (a: [*sa], b: [*sb]) -> out: [broadcast(sa, sb)]. */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "../../c10/cpu_features.h"
#include "../../c10/error.h"
#include "../resize_output.h"
#include "../scalar_math.h"
#include "../special_math.h"
#include "binary_loops.h"
#include "igamma_density.h"
#include "igamma_forward.h"
#include "native.h"
#include "unary_f8_trig.h"
#include "vec_math.h"

/* Stamps the loops of one formula for every integer and floating dtype. */
#define DEFINE_BINARY_ALL(NAME, FI, FF)                                                   \
    DEFINE_BINARY_INT_LOOPS(NAME, FI)                                                     \
    DEFINE_BINARY_FLOAT_LOOPS(NAME, FF, FF)                                               \
    static const PtlLoop NAME##_loops[PTL_DTYPE_COUNT] = {                                \
        INT_ENTRIES(NAME), FLOAT_ENTRIES(NAME),                                           \
    };

#define ADD_I(A, B, X) ptl_add_i((A), (B), (X))
#define ADD_F(A, B, X) ((A) + (X) * (B))
#define SUB_I(A, B, X) ptl_add_i((A), (B), -(X))
#define SUB_F(A, B, X) ((A) - (X) * (B))
#define MUL_I(A, B, X) ((int64_t)((uint64_t)(A) * (uint64_t)(B)))
#define MUL_F(A, B, X) ((A) * (B))

DEFINE_BINARY_ALL(add, ADD_I, ADD_F)
DEFINE_BINARY_ALL(sub, SUB_I, SUB_F)
DEFINE_BINARY_ALL(mul, MUL_I, MUL_F)

/* true division: integers compute in the default float dtype */
#define DIV_F(A, B, X) ((A) / (B))
DEFINE_BINARY_FLOAT_LOOPS(div_true, DIV_F, DIV_F)
static const PtlLoop div_true_loops[PTL_DTYPE_COUNT] = {FLOAT_ENTRIES(div_true)};

/* bool: add is logical or, mul logical and (PyTorch's results for bool tensors) */
static void
add_loop_b1(char **d, const int64_t *s, int64_t n, const void *extra)
{
    /* self or (alpha and other): alpha (a double) false makes the sum self, as in PyTorch */
    const uint8_t alpha = *(const double *)extra != 0;
    for (int64_t i = 0; i < n; i++) {
        *(uint8_t *)(d[0] + i * s[0]) =
            *(uint8_t *)(d[1] + i * s[1]) | (*(uint8_t *)(d[2] + i * s[2]) & alpha);
    }
}

static void
and_loop_b1(char **d, const int64_t *s, int64_t n, const void *extra)
{
    (void)extra;
    for (int64_t i = 0; i < n; i++) {
        *(uint8_t *)(d[0] + i * s[0]) = *(uint8_t *)(d[1] + i * s[1]) & *(uint8_t *)(d[2] + i * s[2]);
    }
}

static const int self_other[2] = {0, 1};

/* Note [Float16 arithmetic in registers]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * add, sub, mul and true division of float16 tensors ran through float32 blocks (Note
 * [Half-precision pointwise through float32] in native.c): every value converted and stored,
 * loaded by the float32 loop, its result stored, loaded and converted back (1e6 values:
 * 0.37-0.45x PyTorch's speed).  Where the CPU has F16C and the capability is AVX2 or more,
 * their float16 loops convert 8 (AVX2) or 16 (AVX-512) halves of each input in registers,
 * apply the float32 loop's formula with the same IEEE operations in the same order (a +
 * alpha * b rounds twice: the build's -std=c11 keeps gcc from contracting it into an FMA),
 * and convert the results back before one store.  So every result has the bits of the
 * float32 result rounded to nearest even, as before and as PyTorch computes half types; a
 * vector with a NaN result stores its lanes through ptl_f_to_half (the quiet NaN of its
 * sign, as the blocks gave), and the values past the last whole vector are done one by one
 * with dtype.h's conversions, which round alike.  Runs whose output is not contiguous or
 * whose input is neither contiguous nor one broadcast value (rare: the iterator stages
 * strided operands, Note [Staged strided runs]) take the float16 loop, element by element.
 * The conversion back is stored from a register: gcc folds a memcpy of it into vcvtps2ph's
 * memory form, which is slower on Zen 4 (Note [Half-precision conversions] in copy.c). */
#ifdef PTL_HAVE_AVX2_KERNELS
#define HALF_ATTR_ps __attribute__((target("avx2,f16c")))
#define HALF_ATTR_ps512 PTL_AVX512
#define HALF_LOAD_ps(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))
#define HALF_LOAD_ps512(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p)))
#define HALF_STORE_ps(p, v) \
    _mm_storeu_si128((__m128i *)(p), _mm256_cvtps_ph((v), _MM_FROUND_TO_NEAREST_INT))
#define HALF_STORE_ps512(p, v) \
    _mm256_storeu_si256((__m256i *)(p), _mm512_cvtps_ph((v), _MM_FROUND_TO_NEAREST_INT))
/* the vector forms of ADD_F, SUB_F, MUL_F, DIV_F: the same operations in the same order */
#define ADD_V(S, A, B, X) PTL_V(S, add)((A), PTL_V(S, mul)((X), (B)))
#define SUB_V(S, A, B, X) PTL_V(S, sub)((A), PTL_V(S, mul)((X), (B)))
#define MUL_V(S, A, B, X) PTL_V(S, mul)((A), (B))
#define DIV_V(S, A, B, X) PTL_V(S, div)((A), (B))
/* o = F(a, b, x) over n float16 values in vectors of kind S; sa, sb: the inputs' element
 * strides, 1 or 0 (one broadcast value); b NULL: the float bv, broadcast (sb 0; a number,
 * Note [Half-precision tensor times a number]) */
#define DEFINE_HALF_VEC_LOOP(NAME, VF, F, S)                                              \
    HALF_ATTR_##S static void                                                             \
    NAME##_halves_##S(ptl_half *o, const ptl_half *a, const ptl_half *b, int64_t sa,      \
                      int64_t sb, int64_t n, float x, float bv)                           \
    {                                                                                     \
        const int64_t L = PTL_VLANES(S);                                                  \
        const PTL_VT(S) vx = PTL_V(S, set1)(x);                                           \
        (void)vx;                                                                         \
        const PTL_VT(S) a0 = PTL_V(S, set1)(ptl_half_to_f(a[0]));                         \
        const PTL_VT(S) b0 = PTL_V(S, set1)(b != NULL ? ptl_half_to_f(b[0]) : bv);         \
        int64_t i = 0;                                                                    \
        for (; i + L <= n; i += L) {                                                      \
            PTL_VT(S) r = VF(S, sa ? HALF_LOAD_##S(a + i) : a0,                           \
                             sb ? HALF_LOAD_##S(b + i) : b0, vx);                         \
            if (PTL_VBITS(S, PTL_VCMP(S, r, r, _CMP_UNORD_Q)) == 0) {                     \
                HALF_STORE_##S(o + i, r);                                                 \
                continue;                                                                 \
            }                                                                             \
            float buf[PTL_VLANES(S)];                                                     \
            PTL_V(S, storeu)(buf, r);                                                     \
            for (int64_t j = 0; j < L; j++) {                                             \
                o[i + j] = ptl_f_to_half(buf[j]);                                         \
            }                                                                             \
        }                                                                                 \
        for (; i < n; i++) {                                                              \
            float bi = b != NULL ? ptl_half_to_f(b[i * sb]) : bv;                         \
            o[i] = ptl_f_to_half(F(ptl_half_to_f(a[i * sa]), bi, x));                     \
        }                                                                                 \
    }
/* NAME_loop_f2_vec: NAME's float16 loop, in registers on contiguous and broadcast runs */
#define DEFINE_HALF_VEC_LOOPS(NAME, VF, F)                                                \
    DEFINE_HALF_VEC_LOOP(NAME, VF, F, ps)                                                 \
    DEFINE_HALF_VEC_LOOP(NAME, VF, F, ps512)                                              \
    static void                                                                           \
    NAME##_loop_f2_vec(char **d, const int64_t *s, int64_t n, const void *extra)          \
    {                                                                                     \
        const int64_t e = sizeof(ptl_half);                                               \
        if (n < 1 ||                                                                      \
            (n > 1 && (s[0] != e || (s[1] != e && s[1] != 0) || (s[2] != e && s[2] != 0)))) { \
            NAME##_loop_f2(d, s, n, extra);                                               \
            return;                                                                       \
        }                                                                                 \
        (ptl_cpu_capability() >= PTL_CPU_AVX512 ? NAME##_halves_ps512 : NAME##_halves_ps)( \
            (ptl_half *)d[0], (const ptl_half *)d[1], (const ptl_half *)d[2], s[1] / e,    \
            s[2] / e, n, (float)*(const double *)extra, 0.0f);                            \
    }
DEFINE_HALF_VEC_LOOPS(add, ADD_V, ADD_F)
DEFINE_HALF_VEC_LOOPS(sub, SUB_V, SUB_F)
DEFINE_HALF_VEC_LOOPS(mul, MUL_V, MUL_F)
DEFINE_HALF_VEC_LOOPS(div_true, DIV_V, DIV_F)
#undef DEFINE_HALF_VEC_LOOPS
#undef DEFINE_HALF_VEC_LOOP
#undef ADD_V
#undef SUB_V
#undef MUL_V
#undef DIV_V
#undef HALF_STORE_ps512
#undef HALF_STORE_ps
#undef HALF_LOAD_ps512
#undef HALF_LOAD_ps
#undef HALF_ATTR_ps512
#undef HALF_ATTR_ps

/* NAME's float16 loop in registers where ptl_cpu_has_f16c() */
#define HALF_VEC(NAME) (ptl_cpu_has_f16c() ? NAME##_loop_f2_vec : NULL)
#else
#define HALF_VEC(NAME) NULL
#endif

/* Note [Half-precision tensor times a number]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * PyTorch multiplies a float16 or bfloat16 tensor by a one-value second operand (a Python
 * number, a 0-dim tensor of any dtype) in float, from that operand's own value: x * 0.001 is
 * float(x) * 0.001f rounded once to the half type, and x / 1.1 is float(x) * (1 / 1.1f)
 * (BinaryOpsKernel.cpp's reduced-float scalar paths, `original_scalar_value<opmath_t>`).
 * The iterator had cast the number to the tensor's dtype first: x * 0.001 multiplied by
 * 0.0010004 and differed from PyTorch in half the values of a random float16 tensor, and
 * x / 70000.0 divided by inf and gave 0.  mul, true division and the floor and trunc
 * divisions (floor_divide too) take this path when self is the result's half dtype and other
 * has no dims: the last two as float32's ptl_div_floor_f / ptl_div_trunc_f of float(x) and
 * the number.  add and sub keep the number in the tensor's dtype, as PyTorch does, and so
 * does a number as the first operand (torch.tensor(0.1) * x).  The float16 product converts
 * in registers where the CPU has F16C (Note [Float16 arithmetic in registers]), a NaN lane
 * through ptl_f_to_half as there. */
typedef enum HalfNumberOp { HN_MUL, HN_DIV, HN_FLOOR, HN_TRUNC } HalfNumberOp;
typedef struct HalfNumber {
    float x;            /* the number in float (HN_DIV: its reciprocal, and how is HN_MUL) */
    HalfNumberOp how;
} HalfNumber;

static inline float
half_number_f(const HalfNumber *h, float a)
{
    return h->how == HN_MUL     ? a * h->x
           : h->how == HN_FLOOR ? ptl_div_floor_f(a, h->x)
                                : ptl_div_trunc_f(a, h->x);
}

/* o = half_number_f(a) for float16 a and the HalfNumber `extra` points to (rounded once) */
static void
number_loop_f2(char **d, const int64_t *s, int64_t n, const void *extra)
{
    const HalfNumber *h = extra;
#ifdef PTL_HAVE_AVX2_KERNELS
    if (h->how == HN_MUL && ptl_cpu_has_f16c() && s[0] == sizeof(ptl_half) &&
        s[1] == sizeof(ptl_half)) {
        (ptl_cpu_capability() >= PTL_CPU_AVX512 ? mul_halves_ps512 : mul_halves_ps)(
            (ptl_half *)d[0], (const ptl_half *)d[1], NULL, 1, 0, n, 0.0f, h->x);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) {
        const ptl_half a = *(const ptl_half *)(d[1] + i * s[1]);
        *(ptl_half *)(d[0] + i * s[0]) = ptl_f_to_half(half_number_f(h, ptl_half_to_f(a)));
    }
}

/* the same for bfloat16 a */
static void
number_loop_bf(char **d, const int64_t *s, int64_t n, const void *extra)
{
    const HalfNumber *h = extra;
    for (int64_t i = 0; i < n; i++) {
        const ptl_bf16 a = *(const ptl_bf16 *)(d[1] + i * s[1]);
        *(ptl_bf16 *)(d[0] + i * s[0]) = ptl_f_to_bf16(half_number_f(h, ptl_bf16_to_f(a)));
    }
}

/* s[0] op s[1] for a half-type s[0] and a one-value s[1], in float (Note [Half-precision
 * tensor times a number]): 1 when done, 0 when the call is not one, -1 on error. */
static int
half_by_number(const PtlOperator *op, PtlIValue *s, HalfNumberOp how)
{
    PtlTensorImpl *a = s[0].u.t, *b = s[1].u.t;
    if ((a->dtype != PTL_DTYPE_FLOAT16 && a->dtype != PTL_DTYPE_BFLOAT16) || b->dim != 0 ||
        a->device.type != PTL_DEVICE_CPU || b->device.type != PTL_DEVICE_CPU ||
        ptl_tensor_is_meta(a) || ptl_tensor_is_meta(b)) {
        return 0;
    }
    PtlTensorImpl *ab[2] = {a, b};
    if (ptl_result_type(ab, 2) != a->dtype) {
        return 0;
    }
    HalfNumber h = {ptl_dtype_is_floating(b->dtype) ? (float)ptl_item_double(b)
                                                    : (float)ptl_item_int(b), how};
    if (how == HN_DIV) {
        h.x = 1.0f / h.x;
        h.how = HN_MUL;
    }
    PtlLoop loops[PTL_DTYPE_COUNT] = {0};
    loops[PTL_DTYPE_FLOAT16] = number_loop_f2;
    loops[PTL_DTYPE_BFLOAT16] = number_loop_bf;
    static const int self_only[1] = {0};
    return ptl_pointwise(op, s, 1, self_only, ptl_iter_config(), loops, &h) < 0 ? -1 : 1;
}

/* Runs the binary op of `loops` on s[0], s[1]; float16 operands take f2, HALF_VEC(NAME)'s
 * loop, where there is one (Note [Float16 arithmetic in registers]), else float32 blocks */
static int
arith_pointwise(const PtlOperator *op, PtlIValue *s, PtlIterConfig cfg, PtlLoop *loops,
                PtlLoop f2, const void *extra)
{
    if (f2 != NULL) {
        loops[PTL_DTYPE_FLOAT16] = f2;
        return ptl_pointwise(op, s, 2, self_other, cfg, loops, extra);
    }
    return ptl_pointwise_halves_in_float(op, s, 2, self_other, cfg, loops, extra, 0);
}

/* add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor (also add_, add.out;
 * sub likewise).  alpha must be integral for integer results (PyTorch's check). */
static int
add_sub_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    const char *name = op->schema.name + 6;   /* skip "aten::" */
    int is_sub = name[0] == 's' || name[0] == 'r';
    double alpha = ptl_iv_to_double(&s[2]);
    PtlIterConfig cfg = ptl_iter_config();
    PtlTensorImpl *a = s[0].u.t, *b = s[1].u.t;
    PtlLoop loops[PTL_DTYPE_COUNT];

    if (a->dtype == PTL_DTYPE_BOOL && b->dtype == PTL_DTYPE_BOOL && is_sub) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Subtraction, the `-` operator, with two bool tensors is not "
                             "supported. Use the `^` or `logical_xor()` operator instead.");
    }
    if ((a->dtype == PTL_DTYPE_BOOL || b->dtype == PTL_DTYPE_BOOL) && is_sub) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Subtraction, the `-` operator, with a bool tensor is not "
                             "supported. If you are trying to invert a mask, use the `~` or "
                             "`logical_not()` operator instead.");
    }
    if (op->id == PTL_OP_rsub_Tensor) {   /* other - alpha * self */
        PtlIValue t = s[0];
        s[0] = s[1];
        s[1] = t;
    }
    memcpy(loops, is_sub ? sub_loops : add_loops, sizeof(loops));
    loops[PTL_DTYPE_BOOL] = is_sub ? NULL : add_loop_b1;
    PtlTensorImpl *ab[2] = {s[0].u.t, s[1].u.t};
    PtlDtype rt = ptl_result_type(ab, 2);
    if (s[2].tag == PTL_IV_BOOL && rt != PTL_DTYPE_BOOL) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Boolean alpha only supported for Boolean results.");
    }
    if (s[2].tag == PTL_IV_DOUBLE && !ptl_dtype_is_floating(rt)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "For integral input tensors, argument alpha must not be a "
                             "floating point number.");
    }
    return arith_pointwise(op, s, cfg, loops, is_sub ? HALF_VEC(sub) : HALF_VEC(add),
                           &alpha);
}

static int
mul_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    double unused = 0;
    int rc = half_by_number(op, s, HN_MUL);
    if (rc != 0) {
        return rc < 0 ? -1 : 0;
    }
    PtlLoop loops[PTL_DTYPE_COUNT];
    memcpy(loops, mul_loops, sizeof(loops));
    loops[PTL_DTYPE_BOOL] = and_loop_b1;
    return arith_pointwise(op, s, ptl_iter_config(), loops, HALF_VEC(mul), &unused);
}

/* ---- rounding divisions, remainder, fmod ----
 *
 * The integer loops cannot raise, so they write 0 where the divisor is 0 and set the
 * flag that `extra` points to; the kernel then fails with PyTorch's "ZeroDivisionError"
 * (the output of an in-place or out= call is left partly written, as in PyTorch). */
typedef struct DivExtra {
    double x;                /* first: read by the float loops as their unused scalar */
    atomic_int *zero_div;
} DivExtra;

#define DEFINE_INT_DIV_LOOP(NAME, T, DT, F)                                                 \
    static void                                                                             \
    NAME##_loop_##DT(char **d, const int64_t *s, int64_t n, const void *extra)              \
    {                                                                                       \
        int zero = 0;                                                                       \
        for (int64_t i = 0; i < n; i++) {                                                   \
            int64_t a = *(const T *)(d[1] + i * s[1]), b = *(const T *)(d[2] + i * s[2]);   \
            zero |= b == 0;                                                                 \
            *(T *)(d[0] + i * s[0]) = (T)(b == 0 ? 0 : F(a, b));                            \
        }                                                                                   \
        if (zero) {                                                                         \
            atomic_store(((const DivExtra *)extra)->zero_div, 1);                           \
        }                                                                                   \
    }

#define DEFINE_DIV_FAMILY(NAME, FI, FF, FD)                                                 \
    DEFINE_INT_DIV_LOOP(NAME, uint8_t, u1, FI)                                              \
    DEFINE_INT_DIV_LOOP(NAME, int8_t, i1, FI)                                               \
    DEFINE_INT_DIV_LOOP(NAME, int16_t, i2, FI)                                              \
    DEFINE_INT_DIV_LOOP(NAME, int32_t, i4, FI)                                              \
    DEFINE_INT_DIV_LOOP(NAME, int64_t, i8, FI)                                              \
    DEFINE_BINARY_FLOAT_LOOPS(NAME, FF, FD)                                                 \
    static const PtlLoop NAME##_loops[PTL_DTYPE_COUNT] = {                                  \
        INT_ENTRIES(NAME), FLOAT_ENTRIES(NAME),                                             \
    };

#define TRUNC_F(A, B, X) ptl_div_trunc_f((A), (B))
#define TRUNC_D(A, B, X) ptl_div_trunc_d((A), (B))
#define FLOOR_F(A, B, X) ptl_div_floor_f((A), (B))
#define FLOOR_D(A, B, X) ptl_div_floor_d((A), (B))
#define REM_F(A, B, X) ptl_remainder_f((A), (B))
#define REM_D(A, B, X) ptl_remainder_d((A), (B))
#define FMOD_F(A, B, X) ptl_fmod_f((A), (B))
#define FMOD_D(A, B, X) ptl_fmod_d((A), (B))

DEFINE_DIV_FAMILY(div_trunc, ptl_div_trunc_i, TRUNC_F, TRUNC_D)
DEFINE_DIV_FAMILY(div_floor, ptl_div_floor_i, FLOOR_F, FLOOR_D)
DEFINE_DIV_FAMILY(remainder, ptl_remainder_i, REM_F, REM_D)
DEFINE_DIV_FAMILY(fmod, ptl_fmod_i, FMOD_F, FMOD_D)

/* ---- float32 vector loops ----
 *
 * NAME_loop_f4_S: o = F(a, b) over float32 data in vectors of kind S, where the output is
 * contiguous and each input contiguous or one broadcast value; other layouts take the
 * portable NAME_loop_f4.  F (vec_math.h) also returns the lanes it cannot compute, which
 * SCALAR (the portable loop's formula) redoes, as it does the tail past the last whole
 * vector: vector and scalar lanes give the same bits for the division family, and differ
 * within atan2's accuracy only on ordinary lanes, which the vector always computes.  A
 * vector with slow lanes is finished in a local buffer before it is stored, since the
 * output may be one of the inputs. */
#ifdef PTL_HAVE_AVX2_KERNELS
/* T, DT: float, f4 (loaded into double lanes: VLOADF, VSTOREF) or double, f8 (VLOADD,
 * VSTORED) */
#define VLOADD(S, p) PTL_V(S, loadu)(p)
#define VSTORED(S, p, v) PTL_V(S, storeu)(p, v)
#define DEFINE_BINARY_VEC_LOOP(NAME, F, SCALAR, S, ISA, T, DT, LOAD, STORE)               \
    PTL_VATTR(S) static void                                                              \
    NAME##_loop_##DT##_##ISA(char **d, const int64_t *s, int64_t n, const void *extra)    \
    {                                                                                     \
        const int64_t e = sizeof(T);                                                      \
        if (n > 1 && (s[0] != e || (s[1] != e && s[1] != 0) || (s[2] != e && s[2] != 0))) { \
            NAME##_loop_##DT(d, s, n, extra);                                             \
            return;                                                                       \
        }                                                                                 \
        const int64_t L = PTL_VLANES(S), sa = s[1] / e, sb = s[2] / e;                    \
        T *o = (T *)d[0];                                                                 \
        const T *a = (const T *)d[1], *b = (const T *)d[2];                               \
        const PTL_VT(S) a0 = PTL_V(S, set1)(a[0]), b0 = PTL_V(S, set1)(b[0]);             \
        int64_t i = 0;                                                                    \
        for (; i + L <= n; i += L) {                                                      \
            PTL_VMT(S) slow;                                                              \
            PTL_VT(S) r = F##_##S(sa ? LOAD(S, a + i) : a0, sb ? LOAD(S, b + i) : b0, &slow); \
            int bits = PTL_VBITS(S, slow);                                                \
            if (bits == 0) {                                                              \
                STORE(S, o + i, r);                                                       \
                continue;                                                                 \
            }                                                                             \
            T buf[PTL_VLANES(S)];                                                         \
            STORE(S, buf, r);                                                             \
            for (int64_t j = 0; j < L; j++) {                                             \
                if (bits >> j & 1) {                                                      \
                    buf[j] = SCALAR(a[(i + j) * sa], b[(i + j) * sb], 0);                 \
                }                                                                         \
            }                                                                             \
            memcpy(o + i, buf, sizeof buf);                                               \
        }                                                                                 \
        for (; i < n; i++) {                                                              \
            o[i] = SCALAR(a[i * sa], b[i * sb], 0);                                       \
        }                                                                                 \
    }
/* the AVX2 and AVX-512 loops of F over float32 data (F4) or float64 data (F8), computed in
 * double lanes (PD) or float lanes (PS) */
#define DEFINE_BINARY_VEC_LOOPS_PD(NAME, F, SCALAR)                                       \
    DEFINE_BINARY_VEC_LOOP(NAME, F, SCALAR, pd, avx2, float, f4, PTL_VLOADF, PTL_VSTOREF) \
    DEFINE_BINARY_VEC_LOOP(NAME, F, SCALAR, pd512, avx512, float, f4, PTL_VLOADF, PTL_VSTOREF)
#define DEFINE_BINARY_VEC_LOOPS_PS(NAME, F, SCALAR)                                       \
    DEFINE_BINARY_VEC_LOOP(NAME, F, SCALAR, ps, avx2, float, f4, PTL_VLOADF, PTL_VSTOREF) \
    DEFINE_BINARY_VEC_LOOP(NAME, F, SCALAR, ps512, avx512, float, f4, PTL_VLOADF, PTL_VSTOREF)
#define DEFINE_BINARY_VEC_LOOPS_F8(NAME, F, SCALAR)                                       \
    DEFINE_BINARY_VEC_LOOP(NAME, F, SCALAR, pd, avx2, double, f8, VLOADD, VSTORED)        \
    DEFINE_BINARY_VEC_LOOP(NAME, F, SCALAR, pd512, avx512, double, f8, VLOADD, VSTORED)
DEFINE_BINARY_VEC_LOOPS_PD(div_floor, ptl_vm_div_floorf, FLOOR_F)
DEFINE_BINARY_VEC_LOOPS_PD(remainder, ptl_vm_remainderf, REM_F)
DEFINE_BINARY_VEC_LOOPS_PD(fmod, ptl_vm_fmodf, FMOD_F)
/* Note [Vector float64 division] */
DEFINE_BINARY_VEC_LOOPS_F8(div_floor, ptl_vm_div_floor, FLOOR_D)
DEFINE_BINARY_VEC_LOOPS_F8(remainder, ptl_vm_remainder, REM_D)
DEFINE_BINARY_VEC_LOOPS_F8(fmod, ptl_vm_fmod, FMOD_D)

/* NAME's float32 (DT f4) or float64 (f8) loop for the widest vectors the CPU has */
#define PICK_VEC(NAME, DT)                                                                \
    (ptl_cpu_capability() >= PTL_CPU_AVX512 ? NAME##_loop_##DT##_avx512                   \
     : ptl_cpu_capability() >= PTL_CPU_AVX2 ? NAME##_loop_##DT##_avx2                     \
                                             : NAME##_loop_##DT)
#else
#define PICK_VEC(NAME, DT) (NAME##_loop_##DT)
#endif
#define PICK_VEC_F4(NAME) PICK_VEC(NAME, f4)

/* Runs a rounding division on s[0], s[1] (integers stay integers) with `loops`, `f4` for
 * float32 and `f8` for float64; `kname` is PyTorch's kernel name for its dtype error. */
static int
div_family(const PtlOperator *op, PtlIValue *s, const char *kname, const PtlLoop *portable,
           PtlLoop f4, PtlLoop f8)
{
    atomic_int zero_div = 0;
    DivExtra e = {0, &zero_div};
    PtlLoop loops[PTL_DTYPE_COUNT];

    memcpy(loops, portable, sizeof(loops));
    loops[PTL_DTYPE_FLOAT32] = f4;
    loops[PTL_DTYPE_FLOAT64] = f8;
    if (ptl_pointwise_named(op, s, 2, self_other, ptl_iter_config(), loops, &e, kname) < 0) {
        return -1;
    }
    if (atomic_load(&zero_div)) {
        ptl_ivalue_release(&s[0]);
        return ptl_error_set(PTL_ERR_RUNTIME, "ZeroDivisionError");
    }
    return 0;
}

/* div.Tensor / div.Tensor_mode (+ in-place, out=): rounding_mode None is true division
 * (integers give the default float dtype), "trunc" and "floor" keep integer dtypes. */
static int
div_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    const char *mode = op->schema.nargs > 2 && s[2].tag == PTL_IV_STRING ? s[2].u.s : NULL;
    int floor = mode != NULL && strcmp(mode, "floor") == 0;
    int trunc = mode != NULL && strcmp(mode, "trunc") == 0;
    double unused = 0;

    if (mode != NULL && !floor && !trunc) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                             "but found '%s'",
                             mode);
    }
    int rc = half_by_number(op, s, floor ? HN_FLOOR : trunc ? HN_TRUNC : HN_DIV);
    if (rc != 0) {
        return rc < 0 ? -1 : 0;
    }
    if (trunc) {
        return div_family(op, s, "div_trunc_cpu", div_trunc_loops, div_trunc_loop_f4,
                          div_trunc_loop_f8);
    }
    if (floor) {
        return div_family(op, s, "div_floor_cpu", div_floor_loops, PICK_VEC_F4(div_floor),
                          PICK_VEC(div_floor, f8));
    }
    PtlIterConfig cfg = ptl_iter_config();
    cfg.int_to_float = 1;
    PtlLoop loops[PTL_DTYPE_COUNT];
    memcpy(loops, div_true_loops, sizeof(loops));
    return arith_pointwise(op, s, cfg, loops, HALF_VEC(div_true), &unused);
}

static int
floor_divide_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int rc = half_by_number(op, s, HN_FLOOR);
    if (rc != 0) {
        return rc < 0 ? -1 : 0;
    }
    return div_family(op, s, "div_floor_cpu", div_floor_loops, PICK_VEC_F4(div_floor),
                      PICK_VEC(div_floor, f8));
}

static int
remainder_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    return div_family(op, s, "remainder_cpu", remainder_loops, PICK_VEC_F4(remainder),
                      PICK_VEC(remainder, f8));
}

static int
fmod_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    return div_family(op, s, "fmod_cpu", fmod_loops, PICK_VEC_F4(fmod),
                      PICK_VEC(fmod, f8));
}

/* ---- pow ---- */

#define POW_I(A, B, X) ptl_pow_i((A), (B))
#define POW_F(A, B, X) ptl_pow_f((A), (B))
#define POW_D(A, B, X) ptl_pow_d((A), (B))
#define POWS_F(A, B, X) ((void)(B), ptl_pow_scalar_f((A), (X)))
#define POWS_D(A, B, X) ((void)(B), ptl_pow_scalar_d((A), (X)))
/* the same, taking the exponent from the broadcast operand (the vector loops' slow lanes) */
#define POWB_F(A, B, X) ((void)(X), ptl_pow_scalar_f((A), (B)))
DEFINE_BINARY_INT_LOOPS(pow, POW_I)
DEFINE_BINARY_FLOAT_LOOPS(pow, POW_F, POW_D)
DEFINE_BINARY_LOOP(pow_scalar, ptl_bf16, bf, float, PTL_LOAD_bf, PTL_STORE_bf, POWS_F)
DEFINE_BINARY_LOOP(pow_scalar, float, f4, float, PTL_ID, PTL_ID, POWS_F)
DEFINE_BINARY_LOOP(pow_scalar, double, f8, double, PTL_ID, PTL_ID, POWS_D)
/* float32 to a number exponent that float flushes to zero (5e-324): in double, as PyTorch's
 * scalar loop (its vector lanes take the flushed 0) */
DEFINE_BINARY_LOOP(pow_scalar_wide, float, f4, double, PTL_ID, (float), POWS_D)
static const PtlLoop pow_loops[PTL_DTYPE_COUNT] = {
    INT_ENTRIES(pow), FLOAT_ENTRIES(pow),
};
/* bool ** False is all true and bool ** True a copy; other bool powers are refused */
DEFINE_BINARY_LOOP(pow, uint8_t, b1, int64_t, PTL_ID, (uint8_t), POW_I)
static const PtlLoop pow_bool_loops[PTL_DTYPE_COUNT] = {[PTL_DTYPE_BOOL] = pow_loop_b1};
/* float16 takes plain pow in PyTorch (its fast paths skip Half: (-inf) ** 0.5 is inf) */
static const PtlLoop pow_scalar_loops[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_FLOAT16] = pow_loop_f2, [PTL_DTYPE_BFLOAT16] = pow_scalar_loop_bf,
    [PTL_DTYPE_FLOAT32] = pow_scalar_loop_f4, [PTL_DTYPE_FLOAT64] = pow_scalar_loop_f8,
};

#ifdef PTL_HAVE_AVX2_KERNELS
DEFINE_BINARY_VEC_LOOPS_PD(pow_scalar, ptl_vm_powf, POWB_F)
/* a float32 tensor exponent: the same vector lanes, powf on the slow ones and the tail
 * (libm's powf per element took 2.3x PyTorch's time on 1e6 values) */
DEFINE_BINARY_VEC_LOOPS_PD(pow, ptl_vm_powf, POW_F)
#endif

/* float32 x ** e for a number e: the vector loop (Note [Vector float32 pow]), but for the
 * exponents that ptl_pow_scalar_f computes by multiplications and square roots and those
 * that float flushes to zero */
static PtlLoop
pow_scalar_f4_loop(double e)
{
    if (e == 2 || e == 3 || e == 0.5 || e == -0.5 || e == -1 || e == -2) {
        return pow_scalar_loop_f4;
    }
    if (e != 0 && (float)e == 0) {
        return pow_scalar_wide_loop_f4;
    }
    return PICK_VEC_F4(pow_scalar);
}

/* pow.Tensor_Tensor (+ in-place, out=).  A Python-number exponent is pow.Tensor_Scalar in
 * PyTorch: a negative integer one is refused for integer bases, a float one takes the
 * fast paths above. */
static int
pow_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *e = s[1].u.t;
    PtlTensorImpl *ab[2] = {s[0].u.t, e};
    PtlDtype dt = ptl_result_type(ab, 2);
    double x = 0;

    if (e->flags & PTL_TF_WRAPPED_NUMBER) {
        x = ptl_item_double(e);
        if (dt == PTL_DTYPE_BOOL && (x == 0 || x == 1)) {   /* PyTorch's fill_(1) / copy_ */
            return ptl_pointwise(op, s, 2, self_other, ptl_iter_config(), pow_bool_loops, &x);
        }
        if (!ptl_dtype_is_floating(dt) && !ptl_dtype_is_floating(e->dtype) && x < 0) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "Integers to negative integer powers are not allowed.");
        }
        if (ptl_dtype_is_floating(dt)) {
            /* PyTorch converts a float exponent to the base's dtype: 1e10 overflows Half */
            PtlIValue exponent = ptl_iv_double(x);
            if (dt == PTL_DTYPE_FLOAT16 && ptl_scalar_check_range(&exponent, dt) < 0) {
                return -1;
            }
            if (dt == PTL_DTYPE_BFLOAT16) {   /* the exponent in bfloat16, as PyTorch's */
                x = ptl_bf16_to_f(ptl_f_to_bf16((float)x));
            }
            PtlLoop loops[PTL_DTYPE_COUNT];
            memcpy(loops, pow_scalar_loops, sizeof(loops));
            loops[PTL_DTYPE_FLOAT32] = pow_scalar_f4_loop(x);
            return ptl_pointwise(op, s, 2, self_other, ptl_iter_config(), loops, &x);
        }
    }
    PtlLoop loops[PTL_DTYPE_COUNT];
    memcpy(loops, pow_loops, sizeof(loops));
    loops[PTL_DTYPE_FLOAT32] = PICK_VEC_F4(pow);
    return ptl_pointwise_named(op, s, 2, self_other, ptl_iter_config(), loops, &x, "pow");
}

/* pow.Tensor_Scalar, pow_.Scalar, pow.Scalar (+ out=): the number becomes a wrapped 0-dim
 * tensor, which type promotion treats as the number it is, and pow_cpu runs.  pow.Scalar_out
 * first resizes out to the exponent's shape, as PyTorch's meta function does, so an
 * expanded out of another shape is no overlap. */
static int
pow_number_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    int k = op->id == PTL_OP_pow_Scalar || op->id == PTL_OP_pow_Scalar_out ? 0 : 1;
    PtlTensorImpl *w;
    if (op->id == PTL_OP_pow_Scalar_out &&
        ptl_resize_output(s[2].u.t, s[1].u.t->dim, s[1].u.t->sizes) < 0) {
        return -1;
    }
    switch (s[k].tag) {
    case PTL_IV_BOOL: w = ptl_wrapped_bool(s[k].u.b); break;
    case PTL_IV_INT: w = ptl_wrapped_int(s[k].u.i); break;
    default: w = ptl_wrapped_double(ptl_iv_to_double(&s[k])); break;
    }
    if (w == NULL) {
        return -1;
    }
    s[k] = ptl_iv_tensor(w);
    int rc = pow_cpu(op, ks, s);
    ptl_decref(w);
    return rc;
}

/* ---- atan2: integers compute in the default float dtype ---- */

#define ATAN2_F(A, B, X) ptl_atan2_f((A), (B))
#define ATAN2_D(A, B, X) ptl_atan2_d((A), (B))
DEFINE_BINARY_FLOAT_LOOPS(atan2, ATAN2_F, ATAN2_D)
#ifdef PTL_HAVE_AVX2_KERNELS
DEFINE_BINARY_VEC_LOOPS_PS(atan2, ptl_vm_atan2, ATAN2_F)
DEFINE_VEC_ATAN2_D(pd)   /* float64: unary_f8_trig.h */
DEFINE_VEC_ATAN2_D(pd512)
DEFINE_BINARY_VEC_LOOPS_F8(atan2, ptl_vm_atan2d, ATAN2_D)
#endif

static int
atan2_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    double unused = 0;
    PtlIterConfig cfg = ptl_iter_config();
    PtlLoop loops[PTL_DTYPE_COUNT] = {FLOAT_ENTRIES(atan2)};
    loops[PTL_DTYPE_FLOAT32] = PICK_VEC_F4(atan2);
    loops[PTL_DTYPE_FLOAT64] = PICK_VEC(atan2, f8);
    cfg.int_to_float = 1;
    return ptl_pointwise(op, s, 2, self_other, cfg, loops, &unused);
}

/* ---- hypot, nextafter, igamma, igammac: floating dtypes only (integers are PyTorch's
 * "not implemented" error); gcd, lcm: integer dtypes only.  The formulas are
 * special_math.h's, which the CUDA kernels call too. ---- */

#define HYPOT_F(A, B, X) ptl_hypot_f((A), (B))
#define HYPOT_D(A, B, X) ptl_hypot_d((A), (B))
#define NEXTAFTER_F(A, B, X) ptl_nextafter_f((A), (B))
#define NEXTAFTER_D(A, B, X) ptl_nextafter_d((A), (B))
#define IGAMMA_F(A, B, X) ((float)ptl_igamma_d((A), (B)))
#define IGAMMAC_F(A, B, X) ((float)ptl_igammac_d((A), (B)))
#define GCD_I(A, B, X) ptl_gcd_i((A), (B))
#define LCM_I(A, B, X) ptl_lcm_i((A), (B))

DEFINE_BINARY_FLOAT_LOOPS(hypot, HYPOT_F, HYPOT_D)
/* igamma and igammac in float32 and float64 blocks: the series and the continued fraction
 * of special_math.h's ptl_igamma_pq (the CUDA kernels' too) run over a block's elements
 * together, one step of every element a pass (a loop gcc vectorizes: the continued
 * fraction's two divisions a step were a serial chain per element), each element frozen
 * from the step where its own loop stops: the same operations in the same order (no fma),
 * so the same bits, whatever the block; the special arguments stay per element, and the
 * loops' prefactor and Temme's expansion (large a near x) run on vector lanes
 * (igamma_forward.c). */
#define IGAMMA_BLOCK 128

/* every 8 steps the lanes still running move to the front (the others' results out by
 * their index): a pass costs the running elements, not the block */
#define IGAMMA_COMPACT 8

/* out[l] = ptl_igamma_series's sum at a[l], x[l] */
PTL_LOOP_CLONES_WIDE static void
igamma_series_lanes(const double *a0, const double *x0, double *out, int m)
{
    double a[IGAMMA_BLOCK], x[IGAMMA_BLOCK], t[IGAMMA_BLOCK], sum[IGAMMA_BLOCK];
    double live[IGAMMA_BLOCK];
    int idx[IGAMMA_BLOCK];
    for (int l = 0; l < m; l++) {
        a[l] = a0[l];
        x[l] = x0[l];
        t[l] = 1.0 / a[l];
        sum[l] = t[l];
        live[l] = 1.0;
        idx[l] = l;
    }
    for (int n = 1; n < 100000 && m > 0; n++) {
        double dn = (double)n;
        for (int l = 0; l < m; l++) {
            double tn = t[l] * (x[l] / (a[l] + dn)), sn = sum[l] + tn;
            int go = live[l] != 0.0;
            t[l] = go ? tn : t[l];
            sum[l] = go ? sn : sum[l];
            live[l] = go && !(tn <= sn * 1e-17) ? 1.0 : 0.0;
        }
        if (n % IGAMMA_COMPACT == 0) {
            int w = 0;
            for (int l = 0; l < m; l++) {   /* (a running lane's out is written again) */
                out[idx[l]] = sum[l];
                a[w] = a[l], x[w] = x[l], t[w] = t[l], sum[w] = sum[l], idx[w] = idx[l];
                w += live[l] != 0.0;
            }
            for (int l = 0; l < w; l++) {
                live[l] = 1.0;
            }
            m = w;
        }
    }
    for (int l = 0; l < m; l++) {
        out[idx[l]] = sum[l];
    }
}

/* out[l] = ptl_igammac_fraction's continued fraction at a[l], x[l] */
PTL_LOOP_CLONES_WIDE static void
igamma_fraction_lanes(const double *a0, const double *x0, double *out, int m)
{
    const double tiny = 1e-300;
    double a[IGAMMA_BLOCK], b[IGAMMA_BLOCK], c[IGAMMA_BLOCK], d[IGAMMA_BLOCK];
    double h[IGAMMA_BLOCK], live[IGAMMA_BLOCK];
    int idx[IGAMMA_BLOCK];
    for (int l = 0; l < m; l++) {
        a[l] = a0[l];
        b[l] = x0[l] + 1.0 - a[l];
        c[l] = 1.0 / tiny;
        d[l] = 1.0 / b[l];
        h[l] = d[l];
        live[l] = 1.0;
        idx[l] = l;
    }
    for (int i = 1; i < 100000 && m > 0; i++) {
        double di = (double)i;
        for (int l = 0; l < m; l++) {
            double an = -di * (di - a[l]), bn = b[l] + 2.0;
            double dn = an * d[l] + bn;
            dn = fabs(dn) < tiny ? tiny : dn;
            double cn = bn + an / c[l];
            cn = fabs(cn) < tiny ? tiny : cn;
            dn = 1.0 / dn;
            double step = dn * cn, hn = h[l] * step;
            int go = live[l] != 0.0;
            b[l] = go ? bn : b[l];
            c[l] = go ? cn : c[l];
            d[l] = go ? dn : d[l];
            h[l] = go ? hn : h[l];
            live[l] = go && !(fabs(step - 1.0) <= 1e-16) ? 1.0 : 0.0;
        }
        if (i % IGAMMA_COMPACT == 0) {
            int w = 0;
            for (int l = 0; l < m; l++) {   /* (a running lane's out is written again) */
                out[idx[l]] = h[l];
                a[w] = a[l], b[w] = b[l], c[w] = c[l], d[w] = d[l], h[w] = h[l];
                idx[w] = idx[l];
                w += live[l] != 0.0;
            }
            for (int l = 0; l < w; l++) {
                live[l] = 1.0;
            }
            m = w;
        }
    }
    for (int l = 0; l < m; l++) {
        out[idx[l]] = h[l];
    }
}

/* whether a, x is a special argument of ptl_igamma_pq (0, inf, NaN, negative) */
static inline int
igamma_special(double a, double x)
{
    return !(a > 0.0 && x > 0.0 && a < INFINITY && x < INFINITY);
}

/* A block's elements, by index j in the block: the special arguments (ptl_igamma_pq), Temme's
 * region (ptl_igamma_temme_lanes) and the loops' (their prefactor by
 * ptl_igamma_prefactor_lanes; one of 0 makes the loop's side 0 and the other 1, as in
 * ptl_igamma_pq, and so does in float32 a side that surely rounds to 0 there), then the
 * series' and the continued fraction's: the lists' a, x, index, prefactor and result (Note
 * [Incomplete gamma forward lanes]) */
typedef struct IgammaList {
    double a[IGAMMA_BLOCK], x[IGAMMA_BLOCK], pre[IGAMMA_BLOCK], r[IGAMMA_BLOCK];
    int at[IGAMMA_BLOCK], n;
} IgammaList;

/* appends element j (a, x, prefactor pre) to list l */
static inline void
igamma_list_add(IgammaList *l, int j, double a, double x, double pre)
{
    l->at[l->n] = j;
    l->a[l->n] = a;
    l->x[l->n] = x;
    l->pre[l->n++] = pre;
}

/* whether the series' side (ser) or the continued fraction's, pre times the loop's result,
 * is surely below half float's smallest subnormal, so that it rounds to 0 and its complement
 * to 1 in float32: the series' sum is at most (a + 1) / (a (a + 1 - x)) (its terms fall
 * faster than x / (a + 1) from 1 / a), the continued fraction at most 1 (Q(a, x) <= x^(a-1)
 * e^-x max(1, x / (x + 1 - a)) for x >= a + 1) */
static inline int
igamma_float_zero(double a, double x, double pre, int ser)
{
    return pre * (ser ? (a + 1.0) / (a * (a + 1.0 - x)) : 1.0) < 1e-46;
}

#define DEFINE_IGAMMA_BLOCKS(NAME, UPPER, T, DT)                                          \
    static void NAME##_loop_##DT(char **d, const int64_t *s, int64_t n, const void *extra) \
    {                                                                                     \
        IgammaList special, temme, loops, series, fraction;                               \
        (void)extra;                                                                      \
        for (int64_t i = 0; i < n; i += IGAMMA_BLOCK) {                                   \
            int m = (int)(n - i < IGAMMA_BLOCK ? n - i : IGAMMA_BLOCK);                   \
            special.n = temme.n = loops.n = series.n = fraction.n = 0;                    \
            for (int j = 0; j < m; j++) {                                                 \
                double a = (double)*(const T *)(d[1] + (i + j) * s[1]);                   \
                double x = (double)*(const T *)(d[2] + (i + j) * s[2]);                   \
                igamma_list_add(igamma_special(a, x)            ? &special                \
                                : ptl_igamma_uses_temme(a, x) ? &temme                    \
                                                                : &loops,                 \
                                j, a, x, 0.0);                                            \
            }                                                                             \
            ptl_igamma_prefactor_lanes(loops.a, loops.x, loops.pre, loops.n);             \
            for (int t = 0; t < loops.n; t++) {                                           \
                double a = loops.a[t], x = loops.x[t], pre = loops.pre[t];                \
                int ser = x < a + 1.0;                                                    \
                int zero = pre == 0.0 ||                                                  \
                           (sizeof(T) == sizeof(float) && igamma_float_zero(a, x, pre, ser)); \
                if (!zero) {                                                              \
                    igamma_list_add(ser ? &series : &fraction, loops.at[t], a, x, pre);   \
                } else {                                                                  \
                    *(T *)(d[0] + (i + loops.at[t]) * s[0]) =                             \
                        (T)(ser == (UPPER) ? 1.0 : 0.0);                                  \
                }                                                                         \
            }                                                                             \
            ptl_igamma_temme_lanes(temme.a, temme.x, temme.r, temme.n, (UPPER),             \
                                   sizeof(T) == sizeof(float) ? PTL_IGAMMA_TEMME_ZERO_F4      \
                                                              : PTL_IGAMMA_TEMME_ZERO_F8);    \
            igamma_series_lanes(series.a, series.x, series.r, series.n);                  \
            igamma_fraction_lanes(fraction.a, fraction.x, fraction.r, fraction.n);        \
            for (int t = 0; t < special.n; t++) {                                         \
                *(T *)(d[0] + (i + special.at[t]) * s[0]) =                               \
                    (T)ptl_igamma_pq(special.a[t], special.x[t], (UPPER));                \
            }                                                                             \
            for (int t = 0; t < temme.n; t++) {                                           \
                *(T *)(d[0] + (i + temme.at[t]) * s[0]) = (T)temme.r[t];                  \
            }                                                                             \
            for (int t = 0; t < series.n; t++) {                                          \
                double p = series.pre[t] * series.r[t];                                   \
                *(T *)(d[0] + (i + series.at[t]) * s[0]) = (T)((UPPER) ? 1.0 - p : p);    \
            }                                                                             \
            for (int t = 0; t < fraction.n; t++) {                                        \
                double p = fraction.pre[t] * fraction.r[t];                               \
                *(T *)(d[0] + (i + fraction.at[t]) * s[0]) = (T)((UPPER) ? p : 1.0 - p);  \
            }                                                                             \
        }                                                                                 \
    }
DEFINE_IGAMMA_BLOCKS(igamma, 0, float, f4)
DEFINE_IGAMMA_BLOCKS(igamma, 0, double, f8)
DEFINE_IGAMMA_BLOCKS(igammac, 1, float, f4)
DEFINE_IGAMMA_BLOCKS(igammac, 1, double, f8)
#undef DEFINE_IGAMMA_BLOCKS
DEFINE_BINARY_LOOP(igamma, ptl_half, f2, float, PTL_LOAD_f2, PTL_STORE_f2, IGAMMA_F)
DEFINE_BINARY_LOOP(igamma, ptl_bf16, bf, float, PTL_LOAD_bf, PTL_STORE_bf, IGAMMA_F)
DEFINE_BINARY_LOOP(igammac, ptl_half, f2, float, PTL_LOAD_f2, PTL_STORE_f2, IGAMMAC_F)
DEFINE_BINARY_LOOP(igammac, ptl_bf16, bf, float, PTL_LOAD_bf, PTL_STORE_bf, IGAMMAC_F)
DEFINE_BINARY_INT_LOOPS(gcd, GCD_I)
DEFINE_BINARY_INT_LOOPS(lcm, LCM_I)
/* nextafter steps in the dtype itself: float16 and bfloat16 on their bits, in a plain
 * strided loop (the skeleton's loads go through float) */
#define DEFINE_NEXTAFTER_16(DT, T, F)                                                     \
    static void                                                                           \
    nextafter_loop_##DT(char **d, const int64_t *s, int64_t n, const void *extra)         \
    {                                                                                     \
        (void)extra;                                                                      \
        for (int64_t i = 0; i < n; i++) {                                                 \
            *(T *)(d[0] + i * s[0]) =                                                     \
                F(*(const T *)(d[1] + i * s[1]), *(const T *)(d[2] + i * s[2]));          \
        }                                                                                 \
    }
DEFINE_NEXTAFTER_16(f2, ptl_half, ptl_nextafter_f2)
DEFINE_NEXTAFTER_16(bf, ptl_bf16, ptl_nextafter_bf)
#undef DEFINE_NEXTAFTER_16
DEFINE_BINARY_LOOP(nextafter, float, f4, float, PTL_ID, PTL_ID, NEXTAFTER_F)
DEFINE_BINARY_LOOP(nextafter, double, f8, double, PTL_ID, PTL_ID, NEXTAFTER_D)

static const PtlLoop hypot_loops[PTL_DTYPE_COUNT] = {FLOAT_ENTRIES(hypot)};
static const PtlLoop nextafter_loops[PTL_DTYPE_COUNT] = {FLOAT_ENTRIES(nextafter)};
static const PtlLoop igamma_loops[PTL_DTYPE_COUNT] = {FLOAT_ENTRIES(igamma)};
static const PtlLoop igammac_loops[PTL_DTYPE_COUNT] = {FLOAT_ENTRIES(igammac)};
static const PtlLoop gcd_loops[PTL_DTYPE_COUNT] = {INT_ENTRIES(gcd)};
static const PtlLoop lcm_loops[PTL_DTYPE_COUNT] = {INT_ENTRIES(lcm)};

/* Stamps NAME_cpu: the binary op over self and other with NAME_loops, in the common dtype */
#define DEFINE_BINARY_KERNEL(NAME)                                                        \
    static int                                                                            \
    NAME##_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)                 \
    {                                                                                     \
        double unused = 0;                                                                \
        (void)ks;                                                                         \
        return ptl_pointwise(op, s, 2, self_other, ptl_iter_config(), NAME##_loops,       \
                             &unused);                                                    \
    }
DEFINE_BINARY_KERNEL(hypot)
DEFINE_BINARY_KERNEL(nextafter)
DEFINE_BINARY_KERNEL(igamma)
DEFINE_BINARY_KERNEL(igammac)
DEFINE_BINARY_KERNEL(gcd)
DEFINE_BINARY_KERNEL(lcm)
#undef DEFINE_BINARY_KERNEL

/* ---- maximum/minimum (NaN propagating), fmax/fmin (NaN ignoring); integers and bool
 * share one loop ---- */

#define MAX_I(A, B, X) ((A) > (B) ? (A) : (B))
#define MIN_I(A, B, X) ((A) < (B) ? (A) : (B))
#define MAX_F(A, B, X) ptl_maximum_f((A), (B))
#define MAX_D(A, B, X) ptl_maximum_d((A), (B))
#define MIN_F(A, B, X) ptl_minimum_f((A), (B))
#define MIN_D(A, B, X) ptl_minimum_d((A), (B))
#define FMAX_F(A, B, X) ptl_fmax_f((A), (B))
#define FMAX_D(A, B, X) ptl_fmax_d((A), (B))
#define FMIN_F(A, B, X) ptl_fmin_f((A), (B))
#define FMIN_D(A, B, X) ptl_fmin_d((A), (B))
DEFINE_BINARY_INT_LOOPS(max_int, MAX_I)
DEFINE_BINARY_INT_LOOPS(min_int, MIN_I)
DEFINE_BINARY_LOOP(max_int, uint8_t, b1, int64_t, PTL_ID, (uint8_t), MAX_I)
DEFINE_BINARY_LOOP(min_int, uint8_t, b1, int64_t, PTL_ID, (uint8_t), MIN_I)
DEFINE_BINARY_FLOAT_LOOPS(maximum, MAX_F, MAX_D)
DEFINE_BINARY_FLOAT_LOOPS(minimum, MIN_F, MIN_D)
DEFINE_BINARY_FLOAT_LOOPS(fmax, FMAX_F, FMAX_D)
DEFINE_BINARY_FLOAT_LOOPS(fmin, FMIN_F, FMIN_D)

static const PtlLoop maximum_loops[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_BOOL] = max_int_loop_b1, INT_ENTRIES(max_int),
    FLOAT_ENTRIES(maximum),
};
static const PtlLoop minimum_loops[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_BOOL] = min_int_loop_b1, INT_ENTRIES(min_int),
    FLOAT_ENTRIES(minimum),
};
static const PtlLoop fmax_loops[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_BOOL] = max_int_loop_b1, INT_ENTRIES(max_int), FLOAT_ENTRIES(fmax),
};
static const PtlLoop fmin_loops[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_BOOL] = min_int_loop_b1, INT_ENTRIES(min_int), FLOAT_ENTRIES(fmin),
};

/* maximum, minimum, fmax, fmin (+ out=), and max.other / min.other, which are maximum and
 * minimum: the op's name picks the table. */
static int
max_min_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    double unused = 0;
    const PtlLoop *loops = op->id == PTL_OP_maximum || op->id == PTL_OP_maximum_out ||
                                   op->id == PTL_OP_max_other
                               ? maximum_loops
                           : op->id == PTL_OP_minimum || op->id == PTL_OP_minimum_out ||
                                   op->id == PTL_OP_min_other
                               ? minimum_loops
                           : op->id == PTL_OP_fmax || op->id == PTL_OP_fmax_out ? fmax_loops
                                                                                  : fmin_loops;
    return ptl_pointwise(op, s, 2, self_other, ptl_iter_config(), loops, &unused);
}

static const PtlKernelReg binary_cpu[] = {
    {PTL_OP_add_Tensor, PTL_KEY_CPU, add_sub_cpu},
    {PTL_OP_add__Tensor, PTL_KEY_CPU, add_sub_cpu},
    {PTL_OP_add_out, PTL_KEY_CPU, add_sub_cpu},
    {PTL_OP_sub_Tensor, PTL_KEY_CPU, add_sub_cpu},
    {PTL_OP_sub__Tensor, PTL_KEY_CPU, add_sub_cpu},
    {PTL_OP_sub_out, PTL_KEY_CPU, add_sub_cpu},
    {PTL_OP_rsub_Tensor, PTL_KEY_CPU, add_sub_cpu},
    {PTL_OP_mul_Tensor, PTL_KEY_CPU, mul_cpu},
    {PTL_OP_mul__Tensor, PTL_KEY_CPU, mul_cpu},
    {PTL_OP_mul_out, PTL_KEY_CPU, mul_cpu},
    {PTL_OP_div_Tensor, PTL_KEY_CPU, div_cpu},
    {PTL_OP_div__Tensor, PTL_KEY_CPU, div_cpu},
    {PTL_OP_div_out, PTL_KEY_CPU, div_cpu},
    {PTL_OP_div_Tensor_mode, PTL_KEY_CPU, div_cpu},
    {PTL_OP_div__Tensor_mode, PTL_KEY_CPU, div_cpu},
    {PTL_OP_div_Tensor_mode_out, PTL_KEY_CPU, div_cpu},
    {PTL_OP_floor_divide, PTL_KEY_CPU, floor_divide_cpu},
    {PTL_OP_floor_divide_, PTL_KEY_CPU, floor_divide_cpu},
    {PTL_OP_floor_divide_out, PTL_KEY_CPU, floor_divide_cpu},
    {PTL_OP_remainder_Tensor, PTL_KEY_CPU, remainder_cpu},
    {PTL_OP_remainder__Tensor, PTL_KEY_CPU, remainder_cpu},
    {PTL_OP_remainder_out, PTL_KEY_CPU, remainder_cpu},
    {PTL_OP_fmod_Tensor, PTL_KEY_CPU, fmod_cpu},
    {PTL_OP_fmod__Tensor, PTL_KEY_CPU, fmod_cpu},
    {PTL_OP_fmod_out, PTL_KEY_CPU, fmod_cpu},
    {PTL_OP_pow_Tensor_Tensor, PTL_KEY_CPU, pow_cpu},
    {PTL_OP_pow__Tensor_Tensor, PTL_KEY_CPU, pow_cpu},
    {PTL_OP_pow_Tensor_Tensor_out, PTL_KEY_CPU, pow_cpu},
    {PTL_OP_pow_Tensor_Scalar, PTL_KEY_CPU, pow_number_cpu},
    {PTL_OP_pow__Scalar, PTL_KEY_CPU, pow_number_cpu},
    {PTL_OP_pow_Tensor_Scalar_out, PTL_KEY_CPU, pow_number_cpu},
    {PTL_OP_pow_Scalar, PTL_KEY_CPU, pow_number_cpu},
    {PTL_OP_pow_Scalar_out, PTL_KEY_CPU, pow_number_cpu},
    {PTL_OP_atan2, PTL_KEY_CPU, atan2_cpu},
    {PTL_OP_atan2_, PTL_KEY_CPU, atan2_cpu},
    {PTL_OP_atan2_out, PTL_KEY_CPU, atan2_cpu},
    {PTL_OP_hypot, PTL_KEY_CPU, hypot_cpu},
    {PTL_OP_hypot_, PTL_KEY_CPU, hypot_cpu},
    {PTL_OP_hypot_out, PTL_KEY_CPU, hypot_cpu},
    {PTL_OP_nextafter, PTL_KEY_CPU, nextafter_cpu},
    {PTL_OP_nextafter_, PTL_KEY_CPU, nextafter_cpu},
    {PTL_OP_nextafter_out, PTL_KEY_CPU, nextafter_cpu},
    {PTL_OP_igamma, PTL_KEY_CPU, igamma_cpu},
    {PTL_OP_igamma_, PTL_KEY_CPU, igamma_cpu},
    {PTL_OP_igamma_out, PTL_KEY_CPU, igamma_cpu},
    {PTL_OP_igammac, PTL_KEY_CPU, igammac_cpu},
    {PTL_OP_igammac_, PTL_KEY_CPU, igammac_cpu},
    {PTL_OP_igammac_out, PTL_KEY_CPU, igammac_cpu},
    {PTL_OP__ptl_igamma_density, PTL_KEY_CPU, ptl_igamma_density_cpu},
    {PTL_OP_gcd, PTL_KEY_CPU, gcd_cpu},
    {PTL_OP_gcd_, PTL_KEY_CPU, gcd_cpu},
    {PTL_OP_gcd_out, PTL_KEY_CPU, gcd_cpu},
    {PTL_OP_lcm, PTL_KEY_CPU, lcm_cpu},
    {PTL_OP_lcm_, PTL_KEY_CPU, lcm_cpu},
    {PTL_OP_lcm_out, PTL_KEY_CPU, lcm_cpu},
    {PTL_OP_maximum, PTL_KEY_CPU, max_min_cpu},
    {PTL_OP_maximum_out, PTL_KEY_CPU, max_min_cpu},
    {PTL_OP_minimum, PTL_KEY_CPU, max_min_cpu},
    {PTL_OP_minimum_out, PTL_KEY_CPU, max_min_cpu},
    {PTL_OP_max_other, PTL_KEY_CPU, max_min_cpu},
    {PTL_OP_min_other, PTL_KEY_CPU, max_min_cpu},
    {PTL_OP_fmax, PTL_KEY_CPU, max_min_cpu},
    {PTL_OP_fmax_out, PTL_KEY_CPU, max_min_cpu},
    {PTL_OP_fmin, PTL_KEY_CPU, max_min_cpu},
    {PTL_OP_fmin_out, PTL_KEY_CPU, max_min_cpu},
};
PTL_DEFINE_REGISTER(binary_cpu)
