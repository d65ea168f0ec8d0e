/* binary.c -- binary pointwise kernels.  Mirrors ATen/native/BinaryOps.cpp and
 * ATen/native/cpu/BinaryOpsKernel.cpp.
 *
 * One macro stamps a loop per dtype: the formula F(a, b, extra) is applied in the
 * accumulation type ACC (float for float16/bfloat16), with a contiguous path the compiler
 * vectorizes, a path for a broadcast scalar second operand, and a strided fallback. */
#include <math.h>
#include <string.h>

#include "../../c10/error.h"
#include "../scalar_math.h"
#include "native.h"

#define DEFINE_BINARY_LOOP(NAME, T, DT, ACC, LOAD, STORE, F)                              \
    static void                                                                           \
    NAME##_loop_##DT(char **d, const int64_t *s, int64_t n, const void *extra)            \
    {                                                                                     \
        const ACC x = (ACC)(*(const double *)extra);                                      \
        (void)x;                                                                          \
        if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == sizeof(T)) {                \
            T *o = (T *)d[0];                                                             \
            const T *a = (const T *)d[1], *b = (const T *)d[2];                           \
            for (int64_t i = 0; i < n; i++) {                                             \
                o[i] = STORE(F(LOAD(a[i]), LOAD(b[i]), x));                               \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == 0) {                        \
            T *o = (T *)d[0];                                                             \
            const T *a = (const T *)d[1];                                                 \
            const ACC b = LOAD(*(const T *)d[2]);                                         \
            for (int64_t i = 0; i < n; i++) {                                             \
                o[i] = STORE(F(LOAD(a[i]), b, x));                                        \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                 \
            const T a = *(const T *)(d[1] + i * s[1]), b = *(const T *)(d[2] + i * s[2]); \
            *(T *)(d[0] + i * s[0]) = STORE(F(LOAD(a), LOAD(b), x));                      \
        }                                                                                 \
    }

/* Stamps the loops of one formula for every integer and floating dtype. */
#define DEFINE_BINARY_ALL(NAME, FI, FF)                                                   \
    DEFINE_BINARY_LOOP(NAME, uint8_t, u1, int64_t, PTL_ID, (uint8_t), FI)                 \
    DEFINE_BINARY_LOOP(NAME, int8_t, i1, int64_t, PTL_ID, (int8_t), FI)                   \
    DEFINE_BINARY_LOOP(NAME, int16_t, i2, int64_t, PTL_ID, (int16_t), FI)                 \
    DEFINE_BINARY_LOOP(NAME, int32_t, i4, int64_t, PTL_ID, (int32_t), FI)                 \
    DEFINE_BINARY_LOOP(NAME, int64_t, i8, int64_t, PTL_ID, PTL_ID, FI)                    \
    DEFINE_BINARY_LOOP(NAME, ptl_half, f2, float, PTL_LOAD_f2, PTL_STORE_f2, FF)          \
    DEFINE_BINARY_LOOP(NAME, ptl_bf16, bf, float, PTL_LOAD_bf, PTL_STORE_bf, FF)          \
    DEFINE_BINARY_LOOP(NAME, float, f4, float, PTL_ID, PTL_ID, FF)                        \
    DEFINE_BINARY_LOOP(NAME, double, f8, double, PTL_ID, PTL_ID, FF)                      \
    static const PtlLoop NAME##_loops[PTL_DTYPE_COUNT] = {                                \
        [PTL_DTYPE_UINT8] = NAME##_loop_u1,   [PTL_DTYPE_INT8] = NAME##_loop_i1,          \
        [PTL_DTYPE_INT16] = NAME##_loop_i2,   [PTL_DTYPE_INT32] = NAME##_loop_i4,         \
        [PTL_DTYPE_INT64] = NAME##_loop_i8,   [PTL_DTYPE_FLOAT16] = NAME##_loop_f2,       \
        [PTL_DTYPE_BFLOAT16] = NAME##_loop_bf, [PTL_DTYPE_FLOAT32] = NAME##_loop_f4,      \
        [PTL_DTYPE_FLOAT64] = NAME##_loop_f8,                                             \
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

/* bool: add is logical or, mul logical and (PyTorch's results for bool tensors) */
static void
or_loop_b1(char **d, const int64_t *s, int64_t n, const void *extra)
{
    (void)extra;
    for (int64_t i = 0; i < n; i++) {
        *(uint8_t *)(d[0] + i * s[0]) = *(uint8_t *)(d[1] + i * s[1]) | *(uint8_t *)(d[2] + i * s[2]);
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
    if (op->id == PTL_OP_rsub_Tensor) {   /* other - alpha * self */
        PtlIValue t = s[0];
        s[0] = s[1];
        s[1] = t;
    }
    memcpy(loops, is_sub ? sub_loops : add_loops, sizeof(loops));
    loops[PTL_DTYPE_BOOL] = is_sub ? NULL : (alpha != 0 ? or_loop_b1 : NULL);
    PtlTensorImpl *ab[2] = {s[0].u.t, s[1].u.t};
    if (s[2].tag == PTL_IV_DOUBLE && !ptl_dtype_is_floating(ptl_result_type(ab, 2)) &&
        alpha != floor(alpha)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "For integral input tensors, argument alpha must not be a "
                             "floating point number.");
    }
    return ptl_pointwise(op, s, 2, self_other, cfg, loops, &alpha);
}

static int
mul_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    double unused = 0;
    PtlLoop loops[PTL_DTYPE_COUNT];
    memcpy(loops, mul_loops, sizeof(loops));
    loops[PTL_DTYPE_BOOL] = and_loop_b1;
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
};
PTL_DEFINE_REGISTER(binary_cpu)
