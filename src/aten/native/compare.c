/* compare.c -- comparison, logical and bitwise kernels, isclose, allclose, equal.
 * Mirrors ATen/native/BinaryOps.cpp (comparison_op, logical ops, bitwise ops),
 * ATen/native/TensorCompare.cpp (isclose, allclose) and ATen/native/ReduceOps.cpp (equal).
 *
 * Comparisons and logical ops compute in the promoted dtype and write bool (an in-place
 * form writes through a bool temporary into self's dtype; see Note [TensorIterator]).
 * Bitwise ops and shifts take integers and bool only.  Every pointwise kernel here is
 * (a: [*sa], b: [*sb]) -> out: [broadcast(sa, sb)]. */
#include <math.h>
#include <string.h>

#include "../../c10/error.h"
#include "../scalar_math.h"
#include "binary_loops.h"
#include "index_impl.h"
#include "native.h"

static const int self_other[2] = {0, 1};

/* ---- comparisons and logical ops: bool output, every dtype ---- */

#define TO_BOOL(X) ((uint8_t)(X))
#define DEFINE_PREDICATE_LOOPS(NAME, F)                                                       \
    DEFINE_BINARY_LOOP_OUT(NAME, uint8_t, uint8_t, b1, int64_t, PTL_ID, TO_BOOL, F)           \
    DEFINE_BINARY_LOOP_OUT(NAME, uint8_t, uint8_t, u1, int64_t, PTL_ID, TO_BOOL, F)           \
    DEFINE_BINARY_LOOP_OUT(NAME, int8_t, uint8_t, i1, int64_t, PTL_ID, TO_BOOL, F)            \
    DEFINE_BINARY_LOOP_OUT(NAME, int16_t, uint8_t, i2, int64_t, PTL_ID, TO_BOOL, F)           \
    DEFINE_BINARY_LOOP_OUT(NAME, int32_t, uint8_t, i4, int64_t, PTL_ID, TO_BOOL, F)           \
    DEFINE_BINARY_LOOP_OUT(NAME, int64_t, uint8_t, i8, int64_t, PTL_ID, TO_BOOL, F)           \
    DEFINE_BINARY_LOOP_OUT(NAME, ptl_half, uint8_t, f2, float, PTL_LOAD_f2, TO_BOOL, F)       \
    DEFINE_BINARY_LOOP_OUT(NAME, ptl_bf16, uint8_t, bf, float, PTL_LOAD_bf, TO_BOOL, F)       \
    DEFINE_BINARY_LOOP_OUT(NAME, float, uint8_t, f4, float, PTL_ID, TO_BOOL, F)               \
    DEFINE_BINARY_LOOP_OUT(NAME, double, uint8_t, f8, double, PTL_ID, TO_BOOL, F)             \
    static const PtlLoop NAME##_loops[PTL_DTYPE_COUNT] = {                                    \
        [PTL_DTYPE_BOOL] = NAME##_loop_b1, INT_ENTRIES(NAME), FLOAT_ENTRIES(NAME),               \
    };

#define EQ(A, B, X) ((A) == (B))
#define NE(A, B, X) ((A) != (B))
#define LT(A, B, X) ((A) < (B))
#define LE(A, B, X) ((A) <= (B))
#define GT(A, B, X) ((A) > (B))
#define GE(A, B, X) ((A) >= (B))
#define LAND(A, B, X) ((A) != 0 && (B) != 0)
#define LOR(A, B, X) ((A) != 0 || (B) != 0)
#define LXOR(A, B, X) (((A) != 0) != ((B) != 0))

DEFINE_PREDICATE_LOOPS(eq, EQ)
DEFINE_PREDICATE_LOOPS(ne, NE)
DEFINE_PREDICATE_LOOPS(lt, LT)
DEFINE_PREDICATE_LOOPS(le, LE)
DEFINE_PREDICATE_LOOPS(gt, GT)
DEFINE_PREDICATE_LOOPS(ge, GE)
DEFINE_PREDICATE_LOOPS(logical_and, LAND)
DEFINE_PREDICATE_LOOPS(logical_or, LOR)
DEFINE_PREDICATE_LOOPS(logical_xor, LXOR)

/* kind: the CUDA select kernel's predicate (Note [CUDA masked_fill and take]) */
static int
predicate(const PtlOperator *op, PtlIValue *s, const PtlLoop *loops, int kind)
{
    double unused = 0;
    PtlIterConfig cfg = ptl_iter_config();
    cfg.out_dtype = PTL_DTYPE_BOOL;
    if (!index_on_device(s[0].u.t) && !index_on_device(s[1].u.t)) {
        return ptl_pointwise(op, s, 2, self_other, cfg, loops, &unused);
    }
    static const int order[3] = {1, 2, 2};
    PtlTensorIter it;
    if (ptl_pointwise_iter(op, s, 2, self_other, &cfg, &it) < 0) {
        return -1;
    }
    if (index_select_device(&it, kind, order, NULL) < 0) {
        ptl_iter_release(&it);
        return -1;
    }
    return ptl_pointwise_return(&it, &cfg, s);
}

/* NAME.Tensor, NAME_.Tensor, NAME.out (one kernel each op) */
#define DEFINE_PREDICATE_KERNEL(NAME, KIND)                                 \
    static int                                                              \
    NAME##_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)   \
    {                                                                       \
        (void)ks;                                                           \
        return predicate(op, s, NAME##_loops, PTL_DEVICE_SEL_##KIND);           \
    }

DEFINE_PREDICATE_KERNEL(eq, EQ)
DEFINE_PREDICATE_KERNEL(ne, NE)
DEFINE_PREDICATE_KERNEL(lt, LT)
DEFINE_PREDICATE_KERNEL(le, LE)
DEFINE_PREDICATE_KERNEL(gt, GT)
DEFINE_PREDICATE_KERNEL(ge, GE)
DEFINE_PREDICATE_KERNEL(logical_and, AND)
DEFINE_PREDICATE_KERNEL(logical_or, OR)
DEFINE_PREDICATE_KERNEL(logical_xor, XOR)

/* ---- bitwise ops and shifts: integers and bool (bool for and/or/xor only) ---- */

#define BAND(A, B, X) ((A) & (B))
#define BOR(A, B, X) ((A) | (B))
#define BXOR(A, B, X) ((A) ^ (B))

#define DEFINE_BITWISE(NAME, F)                                                         \
    DEFINE_BINARY_INT_LOOPS(NAME, F)                                                    \
    DEFINE_BINARY_LOOP(NAME, uint8_t, b1, int64_t, PTL_ID, (uint8_t), F)                \
    static const PtlLoop NAME##_loops[PTL_DTYPE_COUNT] = {                              \
        [PTL_DTYPE_BOOL] = NAME##_loop_b1, INT_ENTRIES(NAME),                           \
    };

DEFINE_BITWISE(bitwise_and, BAND)
DEFINE_BITWISE(bitwise_or, BOR)
DEFINE_BITWISE(bitwise_xor, BXOR)

/* Shifts need the width of T (see ptl_lshift_i); no scalar paths, shifts are rare. */
#define DEFINE_SHIFT_LOOP(NAME, T, DT, F)                                                    \
    static void                                                                              \
    NAME##_loop_##DT(char **d, const int64_t *s, int64_t n, const void *extra)               \
    {                                                                                        \
        (void)extra;                                                                         \
        for (int64_t i = 0; i < n; i++) {                                                    \
            int64_t a = *(const T *)(d[1] + i * s[1]), b = *(const T *)(d[2] + i * s[2]);    \
            *(T *)(d[0] + i * s[0]) = (T)F(a, b, 8 * (int)sizeof(T));                        \
        }                                                                                    \
    }

#define DEFINE_SHIFT(NAME, F)                                                  \
    DEFINE_SHIFT_LOOP(NAME, uint8_t, u1, F)                                    \
    DEFINE_SHIFT_LOOP(NAME, int8_t, i1, F)                                     \
    DEFINE_SHIFT_LOOP(NAME, int16_t, i2, F)                                    \
    DEFINE_SHIFT_LOOP(NAME, int32_t, i4, F)                                    \
    DEFINE_SHIFT_LOOP(NAME, int64_t, i8, F)                                    \
    static const PtlLoop NAME##_loops[PTL_DTYPE_COUNT] = {INT_ENTRIES(NAME)};

DEFINE_SHIFT(lshift, ptl_lshift_i)
DEFINE_SHIFT(rshift, ptl_rshift_i)

static int
bitwise(const PtlOperator *op, PtlIValue *s, const char *kname, const PtlLoop *loops)
{
    double unused = 0;
    return ptl_pointwise_named(op, s, 2, self_other, ptl_iter_config(), loops, &unused, kname);
}

#define DEFINE_BITWISE_KERNEL(NAME, KNAME)                                  \
    static int                                                              \
    NAME##_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)   \
    {                                                                       \
        (void)ks;                                                           \
        return bitwise(op, s, KNAME, NAME##_loops);                         \
    }

DEFINE_BITWISE_KERNEL(bitwise_and, "bitwise_and_cpu")
DEFINE_BITWISE_KERNEL(bitwise_or, "bitwise_or_cpu")
DEFINE_BITWISE_KERNEL(bitwise_xor, "bitwise_xor_cpu")
DEFINE_BITWISE_KERNEL(lshift, "lshift_cpu")
DEFINE_BITWISE_KERNEL(rshift, "rshift_cpu")

/* ---- isclose: |a - b| <= atol + |rtol * b|, or a == b (or both NaN with equal_nan).
 * Integers and bool compare exactly in double; float16/bfloat16 in float. ---- */

typedef struct IsCloseExtra {
    double rtol, atol;
    int equal_nan;
} IsCloseExtra;

#define DEFINE_ISCLOSE_LOOP(T, DT, ACC, LOAD, F)                                          \
    static void                                                                           \
    isclose_loop_##DT(char **d, const int64_t *s, int64_t n, const void *extra)           \
    {                                                                                     \
        const IsCloseExtra *e = extra;                                                    \
        const ACC rtol = (ACC)e->rtol, atol = (ACC)e->atol;                               \
        for (int64_t i = 0; i < n; i++) {                                                 \
            ACC a = LOAD(*(const T *)(d[1] + i * s[1]));                                  \
            ACC b = LOAD(*(const T *)(d[2] + i * s[2]));                                  \
            *(uint8_t *)(d[0] + i * s[0]) = (uint8_t)F(a, b, rtol, atol, e->equal_nan);   \
        }                                                                                 \
    }

#define TO_DOUBLE(X) ((double)(X))
DEFINE_ISCLOSE_LOOP(uint8_t, b1, double, TO_DOUBLE, ptl_isclose_d)
DEFINE_ISCLOSE_LOOP(uint8_t, u1, double, TO_DOUBLE, ptl_isclose_d)
DEFINE_ISCLOSE_LOOP(int8_t, i1, double, TO_DOUBLE, ptl_isclose_d)
DEFINE_ISCLOSE_LOOP(int16_t, i2, double, TO_DOUBLE, ptl_isclose_d)
DEFINE_ISCLOSE_LOOP(int32_t, i4, double, TO_DOUBLE, ptl_isclose_d)
DEFINE_ISCLOSE_LOOP(int64_t, i8, double, TO_DOUBLE, ptl_isclose_d)
DEFINE_ISCLOSE_LOOP(ptl_half, f2, float, PTL_LOAD_f2, ptl_isclose_f)
DEFINE_ISCLOSE_LOOP(ptl_bf16, bf, float, PTL_LOAD_bf, ptl_isclose_f)
DEFINE_ISCLOSE_LOOP(float, f4, float, PTL_ID, ptl_isclose_f)
DEFINE_ISCLOSE_LOOP(double, f8, double, PTL_ID, ptl_isclose_d)

static const PtlLoop isclose_loops[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_BOOL] = isclose_loop_b1, INT_ENTRIES(isclose), FLOAT_ENTRIES(isclose),
};

int
ptl_isclose_check(const PtlIValue *s)
{
    PtlTensorImpl *a = s[0].u.t, *b = s[1].u.t;
    if (a->dtype != b->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s did not match %s",
                             ptl_dtype_legacy_name(a->dtype), ptl_dtype_legacy_name(b->dtype));
    }
    if (!(s[2].u.d >= 0)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "rtol must be greater than or equal to zero, but got %g", s[2].u.d);
    }
    if (!(s[3].u.d >= 0)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "atol must be greater than or equal to zero, but got %g", s[3].u.d);
    }
    return 0;
}

/* isclose(Tensor self, Tensor other, float rtol, float atol, bool equal_nan) -> Tensor */
static int
isclose_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    IsCloseExtra e = {s[2].u.d, s[3].u.d, s[4].u.b};
    PtlIterConfig cfg = ptl_iter_config();

    if (ptl_isclose_check(s) < 0) {
        return -1;
    }
    cfg.out_dtype = PTL_DTYPE_BOOL;
    return ptl_pointwise(op, s, 2, self_other, cfg, isclose_loops, &e);
}

/* ---- allclose, equal: one bool ---- */

int
ptl_all_nonzero(PtlTensorImpl *t)
{
    if (t->device.type != PTL_DEVICE_CPU || t->dtype != PTL_DTYPE_BOOL) {
        PtlDevice cpu = {PTL_DEVICE_CPU, -1};
        PtlIValue a[1] = {ptl_iv_tensor(t)};
        PtlTensorImpl *all = ptl_call_tensor(PTL_OP_all, a);
        PtlTensorImpl *host = all ? ptl_to_copy(all, PTL_DTYPE_BOOL, &cpu) : NULL;
        ptl_xdecref(all);
        if (host == NULL) {
            return -1;
        }
        int truth = *(const uint8_t *)ptl_tensor_data(host) != 0;
        ptl_decref(host);
        return truth;
    }
    PtlTensorImpl *c = ptl_contiguous(t);
    if (c == NULL) {
        return -1;
    }
    const uint8_t *p = (const uint8_t *)ptl_tensor_data(c);
    int all = 1;
    for (int64_t i = 0; i < c->numel && all; i++) {
        all = p[i] != 0;
    }
    ptl_decref(c);
    return all;
}

/* Calls the bool-valued pointwise op `id` on args and reduces it with ptl_all_nonzero into
 * s[0]. */
static int
reduce_all(PtlOpId id, PtlIValue *args, PtlIValue *s)
{
    PtlTensorImpl *r = ptl_call_tensor(id, args);
    if (r == NULL) {
        return -1;
    }
    int all = ptl_all_nonzero(r);
    ptl_decref(r);
    if (all < 0) {
        return -1;
    }
    s[0] = ptl_iv_bool(all);
    return 0;
}

/* allclose(Tensor self, Tensor other, float rtol, float atol, bool equal_nan) -> bool:
 * isclose(...).all(), with isclose's errors. */
static int
allclose_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlIValue args[5] = {s[0], s[1], s[2], s[3], s[4]};
    return reduce_all(PTL_OP_isclose, args, s);
}

/* equal(Tensor self, Tensor other) -> bool: same sizes (no broadcasting) and equal values
 * after type promotion (NaN is unequal). */
static int
equal_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *a = s[0].u.t, *b = s[1].u.t;
    if (a->dim != b->dim ||
        memcmp(a->sizes, b->sizes, sizeof(int64_t) * (size_t)a->dim) != 0) {
        s[0] = ptl_iv_bool(0);
        return 0;
    }
    PtlIValue args[2] = {s[0], s[1]};
    return reduce_all(PTL_OP_eq_Tensor, args, s);
}

static const PtlKernelReg compare_cpu[] = {
    {PTL_OP_eq_Tensor, PTL_KEY_CPU, eq_cpu},
    {PTL_OP_eq__Tensor, PTL_KEY_CPU, eq_cpu},
    {PTL_OP_eq_out, PTL_KEY_CPU, eq_cpu},
    {PTL_OP_ne_Tensor, PTL_KEY_CPU, ne_cpu},
    {PTL_OP_ne__Tensor, PTL_KEY_CPU, ne_cpu},
    {PTL_OP_ne_out, PTL_KEY_CPU, ne_cpu},
    {PTL_OP_lt_Tensor, PTL_KEY_CPU, lt_cpu},
    {PTL_OP_lt__Tensor, PTL_KEY_CPU, lt_cpu},
    {PTL_OP_lt_out, PTL_KEY_CPU, lt_cpu},
    {PTL_OP_le_Tensor, PTL_KEY_CPU, le_cpu},
    {PTL_OP_le__Tensor, PTL_KEY_CPU, le_cpu},
    {PTL_OP_le_out, PTL_KEY_CPU, le_cpu},
    {PTL_OP_gt_Tensor, PTL_KEY_CPU, gt_cpu},
    {PTL_OP_gt__Tensor, PTL_KEY_CPU, gt_cpu},
    {PTL_OP_gt_out, PTL_KEY_CPU, gt_cpu},
    {PTL_OP_ge_Tensor, PTL_KEY_CPU, ge_cpu},
    {PTL_OP_ge__Tensor, PTL_KEY_CPU, ge_cpu},
    {PTL_OP_ge_out, PTL_KEY_CPU, ge_cpu},
    {PTL_OP_logical_and, PTL_KEY_CPU, logical_and_cpu},
    {PTL_OP_logical_and_, PTL_KEY_CPU, logical_and_cpu},
    {PTL_OP_logical_and_out, PTL_KEY_CPU, logical_and_cpu},
    {PTL_OP_logical_or, PTL_KEY_CPU, logical_or_cpu},
    {PTL_OP_logical_or_, PTL_KEY_CPU, logical_or_cpu},
    {PTL_OP_logical_or_out, PTL_KEY_CPU, logical_or_cpu},
    {PTL_OP_logical_xor, PTL_KEY_CPU, logical_xor_cpu},
    {PTL_OP_logical_xor_, PTL_KEY_CPU, logical_xor_cpu},
    {PTL_OP_logical_xor_out, PTL_KEY_CPU, logical_xor_cpu},
    {PTL_OP_bitwise_and_Tensor, PTL_KEY_CPU, bitwise_and_cpu},
    {PTL_OP_bitwise_and__Tensor, PTL_KEY_CPU, bitwise_and_cpu},
    {PTL_OP_bitwise_and_out, PTL_KEY_CPU, bitwise_and_cpu},
    {PTL_OP_bitwise_or_Tensor, PTL_KEY_CPU, bitwise_or_cpu},
    {PTL_OP_bitwise_or__Tensor, PTL_KEY_CPU, bitwise_or_cpu},
    {PTL_OP_bitwise_or_out, PTL_KEY_CPU, bitwise_or_cpu},
    {PTL_OP_bitwise_xor_Tensor, PTL_KEY_CPU, bitwise_xor_cpu},
    {PTL_OP_bitwise_xor__Tensor, PTL_KEY_CPU, bitwise_xor_cpu},
    {PTL_OP_bitwise_xor_out, PTL_KEY_CPU, bitwise_xor_cpu},
    {PTL_OP_bitwise_left_shift_Tensor, PTL_KEY_CPU, lshift_cpu},
    {PTL_OP_bitwise_left_shift__Tensor, PTL_KEY_CPU, lshift_cpu},
    {PTL_OP_bitwise_left_shift_out, PTL_KEY_CPU, lshift_cpu},
    {PTL_OP_bitwise_right_shift_Tensor, PTL_KEY_CPU, rshift_cpu},
    {PTL_OP_bitwise_right_shift__Tensor, PTL_KEY_CPU, rshift_cpu},
    {PTL_OP_bitwise_right_shift_out, PTL_KEY_CPU, rshift_cpu},
    {PTL_OP_isclose, PTL_KEY_CPU, isclose_cpu},
    {PTL_OP_allclose, PTL_KEY_CPU, allclose_cpu},
    {PTL_OP_equal, PTL_KEY_CPU, equal_cpu},
};
PTL_DEFINE_REGISTER(compare_cpu)
