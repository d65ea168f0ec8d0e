/* ternary.c -- where, clamp/clip, lerp, addcmul and addcdiv.  Mirrors
 * ATen/native/TensorCompare.cpp (where, clamp), ATen/native/Lerp.cpp,
 * ATen/native/PointwiseOps.cpp and their cpu/ kernels.
 *
 * The loops follow binary.c: a macro stamps one loop per dtype with a contiguous path and
 * a strided fallback; the formulas live in scalar_math.h. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../../c10/error.h"
#include "../scalar_math.h"
#include "index_impl.h"
#include "native.h"
#include "unary_loops.h"

/* o = STORE(F(LOAD(a), extra)) */
#define DEFINE_LOOP1(NAME, T, DT, LOAD, STORE, F) \
    DEFINE_UNARY_LOOP(NAME, T, T, DT, LOAD, STORE, F)

/* o = STORE(F(LOAD(a), LOAD(b), extra)); CLONES the loop's target clones */
#define DEFINE_LOOP2(NAME, T, DT, LOAD, STORE, F)                                         \
    DEFINE_LOOP2_CLONES(PTL_LOOP_CLONES, NAME, T, DT, LOAD, STORE, F)
#define DEFINE_LOOP2_CLONES(CLONES, NAME, T, DT, LOAD, STORE, F)                          \
    CLONES static void                                                                    \
    NAME##_loop_##DT(char **d, const int64_t *s, int64_t n, const void *extra)            \
    {                                                                                     \
        (void)extra;                                                                      \
        if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == sizeof(T)) {                \
            T *o = (T *)d[0];                                                             \
            const T *a = (const T *)d[1], *b = (const T *)d[2];                           \
            for (int64_t i = 0; i < n; i++) {                                             \
                o[i] = STORE(F(LOAD(a[i]), LOAD(b[i]), extra));                           \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                 \
            const T a = *(const T *)(d[1] + i * s[1]), b = *(const T *)(d[2] + i * s[2]); \
            *(T *)(d[0] + i * s[0]) = STORE(F(LOAD(a), LOAD(b), extra));                  \
        }                                                                                 \
    }

/* o = STORE(F(LOAD(a), LOAD(b), LOAD(c), extra)).  Contiguous operands and broadcast ones
 * (stride 0, as a [1, C, 1, 1] operand's inner run) take the vectorized contiguous loop: a
 * broadcast operand is read from a block of LOOP3_BLOCK copies of its value, so one counted
 * loop serves every mix of the two (binary_loops.h spells out its two mixes instead). */
#define LOOP3_BLOCK 256
#define DEFINE_LOOP3(NAME, T, DT, LOAD, STORE, F)                                         \
    DEFINE_LOOP3_CLONES(PTL_LOOP_CLONES, NAME, T, DT, LOAD, STORE, F)
#define DEFINE_LOOP3_CLONES(CLONES, NAME, T, DT, LOAD, STORE, F)                          \
    CLONES static void                                                                    \
    NAME##_loop_##DT(char **d, const int64_t *s, int64_t n, const void *extra)            \
    {                                                                                     \
        (void)extra;                                                                      \
        int dense = s[0] == sizeof(T), bcast = 0;                                         \
        for (int k = 1; k < 4; k++) {                                                     \
            dense = dense && (s[k] == sizeof(T) || s[k] == 0);                            \
            bcast = bcast || s[k] == 0;                                                   \
        }                                                                                 \
        if (dense && !bcast) {                                                            \
            T *o = (T *)d[0];                                                             \
            const T *a = (const T *)d[1], *b = (const T *)d[2], *c = (const T *)d[3];     \
            for (int64_t i = 0; i < n; i++) {                                             \
                o[i] = STORE(F(LOAD(a[i]), LOAD(b[i]), LOAD(c[i]), extra));               \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        if (dense) {                                                                      \
            T copies[3][LOOP3_BLOCK];                                                     \
            for (int k = 0; k < 3; k++) {                                                 \
                for (int64_t i = 0; s[k + 1] == 0 && i < LOOP3_BLOCK && i < n; i++) {     \
                    copies[k][i] = *(const T *)d[k + 1];                                  \
                }                                                                         \
            }                                                                             \
            for (int64_t i0 = 0; i0 < n; i0 += LOOP3_BLOCK) {                             \
                int64_t m = n - i0 < LOOP3_BLOCK ? n - i0 : LOOP3_BLOCK;                  \
                T *o = (T *)d[0] + i0;                                                    \
                const T *a = s[1] ? (const T *)d[1] + i0 : copies[0];                     \
                const T *b = s[2] ? (const T *)d[2] + i0 : copies[1];                     \
                const T *c = s[3] ? (const T *)d[3] + i0 : copies[2];                     \
                for (int64_t i = 0; i < m; i++) {                                         \
                    o[i] = STORE(F(LOAD(a[i]), LOAD(b[i]), LOAD(c[i]), extra));           \
                }                                                                         \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                 \
            const T a = *(const T *)(d[1] + i * s[1]), b = *(const T *)(d[2] + i * s[2]); \
            const T c = *(const T *)(d[3] + i * s[3]);                                    \
            *(T *)(d[0] + i * s[0]) = STORE(F(LOAD(a), LOAD(b), LOAD(c), extra));         \
        }                                                                                 \
    }

#define I64(X) ((int64_t)(X))

/* Stamps LOOPK for every integer (FI, in int64) and floating (FF, in float/double) dtype
 * and the table NAME_loops; bool stays NULL ("not implemented for 'Bool'"). */
#define DEFINE_ALL(LOOPK, NAME, FI, FF)                                                   \
    DEFINE_ALL_LOOPS(LOOPK, NAME, FI, FF)                                                 \
    static const PtlLoop NAME##_loops[PTL_DTYPE_COUNT] = {INT_ENTRIES(NAME),              \
                                                          FLOAT_ENTRIES(NAME)};
#define DEFINE_ALL_LOOPS(LOOPK, NAME, FI, FF)                                             \
    LOOPK(NAME, uint8_t, u1, I64, (uint8_t), FI)                                          \
    LOOPK(NAME, int8_t, i1, I64, (int8_t), FI)                                            \
    LOOPK(NAME, int16_t, i2, I64, (int16_t), FI)                                          \
    LOOPK(NAME, int32_t, i4, I64, (int32_t), FI)                                          \
    LOOPK(NAME, int64_t, i8, PTL_ID, PTL_ID, FI)                                          \
    DEFINE_FLOATS(LOOPK, NAME, FF)

#define DEFINE_FLOATS(LOOPK, NAME, FF)                                                    \
    LOOPK(NAME, ptl_half, f2, PTL_LOAD_f2, PTL_STORE_f2, FF)                              \
    LOOPK(NAME, ptl_bf16, bf, PTL_LOAD_bf, PTL_STORE_bf, FF)                              \
    LOOPK(NAME, float, f4, PTL_ID, PTL_ID, FF)                                            \
    LOOPK(NAME, double, f8, PTL_ID, PTL_ID, FF)

#define DEFINE_FLOAT_ONLY(LOOPK, NAME, FF)                                                \
    DEFINE_FLOATS(LOOPK, NAME, FF)                                                        \
    static const PtlLoop NAME##_loops[PTL_DTYPE_COUNT] = {FLOAT_ENTRIES(NAME)};

/* ---- where ---- */

/* [*] cond (bool/uint8), self, other -> out; only the element size matters.  Both inputs
 * are read and one is kept by a bit mask: a branch on a random condition mispredicts half
 * the time (where was 9 ms for 1e6 float32, 60x PyTorch), and the contiguous loop
 * vectorizes.  A number or other 0-dim operand (`where(c, x, 0.5)`) comes with byte stride
 * 0: it is read once and the contiguous loop keeps it in a register.  Through the strided
 * loop, which gcc vectorizes with gathers, it took 1.9 ms for 1M float32, 16x the
 * two-tensor loop. */
#define WHERE_SELECT(T, C, A, B) \
    ((T)(((A) & (T)(0 - (T)((C) != 0))) | ((B) & (T)((T)((C) != 0) - 1))))
#define WHERE_RUN(T, A_I, B_I)                                                            \
    do {                                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                 \
            o[i] = WHERE_SELECT(T, c[i], A_I, B_I);                                       \
        }                                                                                 \
    } while (0)
#define DEFINE_WHERE_LOOP(T, SZ)                                                          \
    PTL_LOOP_CLONES static void                                                           \
    where_loop_##SZ(char **d, const int64_t *s, int64_t n, const void *extra)             \
    {                                                                                     \
        (void)extra;                                                                      \
        if (s[0] == SZ && s[1] == 1 && (s[2] == SZ || s[2] == 0) &&                       \
            (s[3] == SZ || s[3] == 0)) {                                                  \
            T *o = (T *)d[0];                                                             \
            const uint8_t *c = (const uint8_t *)d[1];                                     \
            const T *a = (const T *)d[2], *b = (const T *)d[3];                           \
            if (n <= 0) {                                                                 \
                return;                                                                   \
            }                                                                             \
            const T a0 = *a, b0 = *b;                                                     \
            if (s[2] && s[3]) {                                                           \
                WHERE_RUN(T, a[i], b[i]);                                                 \
            }                                                                             \
            else if (s[2]) {                                                              \
                WHERE_RUN(T, a[i], b0);                                                   \
            }                                                                             \
            else if (s[3]) {                                                              \
                WHERE_RUN(T, a0, b[i]);                                                   \
            }                                                                             \
            else {                                                                        \
                WHERE_RUN(T, a0, b0);                                                     \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                 \
            uint8_t c = *(const uint8_t *)(d[1] + i * s[1]);                              \
            T a = *(const T *)(d[2] + i * s[2]), b = *(const T *)(d[3] + i * s[3]);       \
            *(T *)(d[0] + i * s[0]) = WHERE_SELECT(T, c, a, b);                           \
        }                                                                                 \
    }
DEFINE_WHERE_LOOP(uint8_t, 1)
DEFINE_WHERE_LOOP(uint16_t, 2)
DEFINE_WHERE_LOOP(uint32_t, 4)
DEFINE_WHERE_LOOP(uint64_t, 8)
#undef WHERE_RUN

/* complex128 (the Complex key passes where through): a 16-byte element as two 8-byte
 * halves, each picked by WHERE_SELECT's mask */
static void
where_loop_16(char **d, const int64_t *s, int64_t n, const void *extra)
{
    (void)extra;
    for (int64_t i = 0; i < n; i++) {
        uint8_t c = *(const uint8_t *)(d[1] + i * s[1]);
        const uint64_t *a = (const uint64_t *)(d[2] + i * s[2]);
        const uint64_t *b = (const uint64_t *)(d[3] + i * s[3]);
        uint64_t *o = (uint64_t *)(d[0] + i * s[0]);
        uint64_t lo = WHERE_SELECT(uint64_t, c, a[0], b[0]);
        uint64_t hi = WHERE_SELECT(uint64_t, c, a[1], b[1]);
        o[0] = lo;
        o[1] = hi;
    }
}

static const PtlLoop where_loops[PTL_DTYPE_COUNT] = {   /* ORDER DTYPE */
    where_loop_1, where_loop_1, where_loop_1, where_loop_2, where_loop_4,
    where_loop_8, where_loop_2, where_loop_2, where_loop_4, where_loop_8,
    where_loop_8, where_loop_16,
};

/* where.self(Tensor condition, Tensor self, Tensor other) -> Tensor (also .self_out) */
static int
where_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    static const int idx[3] = {0, 1, 2};
    PtlTensorImpl *cond = s[0].u.t, *out = ptl_kernel_out(op, s);
    PtlIterConfig cfg = ptl_iter_config();
    (void)ks;

    if (cond->dtype == PTL_DTYPE_UINT8) {
        ptl_warn("where received a uint8 condition tensor. This behavior is deprecated and "
                 "will be removed in a future version of PyTorch. Use a boolean condition "
                 "instead.");
    }
    else if (cond->dtype != PTL_DTYPE_BOOL) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "where expected condition to be a boolean tensor, but got a "
                             "tensor with dtype %s",
                             ptl_dtype_legacy_name(cond->dtype));
    }
    PtlTensorImpl *ab[2] = {s[1].u.t, s[2].u.t};
    PtlDtype rt = ptl_result_type(ab, 2);
    if (out != NULL && out->dtype != rt) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Expected out type to be %s but got %s",
                             ptl_dtype_legacy_name(rt), ptl_dtype_legacy_name(out->dtype));
    }
    cfg.no_promote = 1u;
    if (!index_on_device(cond) && !index_on_device(ab[0]) && !index_on_device(ab[1])) {
        return ptl_pointwise(op, s, 3, idx, cfg, where_loops, NULL);
    }
    /* the select kernel (Note [CUDA masked_fill and take] in src/cuda/index_plan.h) */
    static const int order[3] = {1, 2, 3};
    PtlTensorIter it;
    if (ptl_pointwise_iter(op, s, 3, idx, &cfg, &it) < 0) {
        return -1;
    }
    if (index_select_device(&it, PTL_DEVICE_SEL_WHERE, order, NULL) < 0) {
        ptl_iter_release(&it);
        return -1;
    }
    return ptl_pointwise_return(&it, &cfg, s);
}

/* ---- clamp / clip ---- */


#define CLAMP_S_I(X, E)                                                                   \
    ptl_clamp_i((X), ((const PtlClampBounds *)(E))->ilo, ((const PtlClampBounds *)(E))->ihi)
#define CLAMP_S_F(X, E)                                                                   \
    ptl_clamp_d((X), ((const PtlClampBounds *)(E))->lo, ((const PtlClampBounds *)(E))->hi)
DEFINE_LOOP1(clamp_scalar, uint8_t, u1, I64, (uint8_t), CLAMP_S_I)
DEFINE_LOOP1(clamp_scalar, int8_t, i1, I64, (int8_t), CLAMP_S_I)
DEFINE_LOOP1(clamp_scalar, int16_t, i2, I64, (int16_t), CLAMP_S_I)
DEFINE_LOOP1(clamp_scalar, int32_t, i4, I64, (int32_t), CLAMP_S_I)
DEFINE_LOOP1(clamp_scalar, int64_t, i8, PTL_ID, PTL_ID, CLAMP_S_I)
DEFINE_LOOP1(clamp_scalar, ptl_half, f2, PTL_LOAD_f2, PTL_STORE_f2, CLAMP_S_F)
DEFINE_LOOP1(clamp_scalar, ptl_bf16, bf, PTL_LOAD_bf, PTL_STORE_bf, CLAMP_S_F)

/* float32 and float64 with scalar bounds: the bounds in the input's dtype, in locals, and the
 * clamp as selects, so that the contiguous loop vectorizes (it reloaded both bounds through
 * `extra` and branched per element: 1e6 float32 in 0.8-2.3 ms, 7-20x PyTorch).  Comparing
 * with the bound rounded to the dtype picks the same result as comparing in double, as
 * rounding is monotonic; a NaN bound (every result NaN but a NaN input's) and strided
 * operands take ptl_clamp_d. */
#define DEFINE_CLAMP_FLOAT_LOOP(T, DT)                                                    \
    PTL_LOOP_CLONES static void                                                           \
    clamp_scalar_loop_##DT(char **d, const int64_t *s, int64_t n, const void *extra)       \
    {                                                                                     \
        const PtlClampBounds *b = extra;                                                     \
        const T lo = (T)b->lo, hi = (T)b->hi;                                             \
        if (s[0] == sizeof(T) && s[1] == sizeof(T) && lo == lo && hi == hi) {             \
            T *o = (T *)d[0];                                                             \
            const T *a = (const T *)d[1];                                                 \
            for (int64_t i = 0; i < n; i++) {                                             \
                T x = a[i], r = x < lo ? lo : x;                                          \
                r = r > hi ? hi : r;                                                      \
                o[i] = x != x ? x : r;                                                    \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                 \
            const T x = *(const T *)(d[1] + i * s[1]);                                    \
            *(T *)(d[0] + i * s[0]) = (T)ptl_clamp_d(x, b->lo, b->hi);                    \
        }                                                                                 \
    }
DEFINE_CLAMP_FLOAT_LOOP(float, f4)
DEFINE_CLAMP_FLOAT_LOOP(double, f8)

static const PtlLoop clamp_scalar_loops[PTL_DTYPE_COUNT] = {INT_ENTRIES(clamp_scalar),
                                                            FLOAT_ENTRIES(clamp_scalar)};

#define CLAMP_T_I(X, LO, HI, E) ptl_clamp_i((X), (LO), (HI))
#define CLAMP_T_F(X, LO, HI, E) ptl_clamp_d((X), (LO), (HI))
#define CLAMP_MIN_I(X, LO, E) ptl_clamp_i((X), (LO), INT64_MAX)
#define CLAMP_MIN_F(X, LO, E) ptl_clamp_d((X), (LO), INFINITY)
#define CLAMP_MAX_I(X, HI, E) ptl_clamp_i((X), INT64_MIN, (HI))
#define CLAMP_MAX_F(X, HI, E) ptl_clamp_d((X), -INFINITY, (HI))
DEFINE_ALL(DEFINE_LOOP3, clamp_tensor, CLAMP_T_I, CLAMP_T_F)
/* one bound: bool too (PyTorch's clamp_min and clamp_max kernels are maximum and minimum,
 * an or and an and of bools); both bounds: no bool, as PyTorch's clamp kernel */
DEFINE_ALL_LOOPS(DEFINE_LOOP2, clamp_min_tensor, CLAMP_MIN_I, CLAMP_MIN_F)
DEFINE_ALL_LOOPS(DEFINE_LOOP2, clamp_max_tensor, CLAMP_MAX_I, CLAMP_MAX_F)
DEFINE_LOOP2(clamp_min_tensor, uint8_t, b1, I64, (uint8_t), CLAMP_MIN_I)
DEFINE_LOOP2(clamp_max_tensor, uint8_t, b1, I64, (uint8_t), CLAMP_MAX_I)
static const PtlLoop clamp_min_tensor_loops[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_BOOL] = clamp_min_tensor_loop_b1, INT_ENTRIES(clamp_min_tensor),
    FLOAT_ENTRIES(clamp_min_tensor)};
static const PtlLoop clamp_max_tensor_loops[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_BOOL] = clamp_max_tensor_loop_b1, INT_ENTRIES(clamp_max_tensor),
    FLOAT_ENTRIES(clamp_max_tensor)};

/* C++ type names, which some of PyTorch's messages print (ORDER DTYPE) */
static const char *const cpp_names[PTL_DTYPE_COUNT] = {
    "bool", "unsigned char", "signed char", "short int", "int", "long int",
    "c10::Half", "c10::BFloat16", "float", "double",
};

int
ptl_clamp_bounds_check(const PtlOperator *op, const PtlIValue *s)
{
    const PtlArg *a = op->schema.args;
    if (op->schema.nargs >= 3 && strcmp(a[1].name, "min") == 0 && a[1].optional &&
        strcmp(a[2].name, "max") == 0 && a[2].optional && s[1].tag == PTL_IV_NONE &&
        s[2].tag == PTL_IV_NONE) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "torch.clamp: At least one of 'min' or 'max' must not be None");
    }
    return 0;
}

/* v as an integer of dtype dt holds it (two's-complement wrap); v itself for int64. */
static int64_t
wrap_to(PtlDtype dt, int64_t v)
{
    switch (dt) {
    case PTL_DTYPE_UINT8:
        return (uint8_t)v;
    case PTL_DTYPE_INT8:
        return (int8_t)v;
    case PTL_DTYPE_INT16:
        return (int16_t)v;
    case PTL_DTYPE_INT32:
        return (int32_t)v;
    default:
        return v;
    }
}

/* A wrapped-number tensor for a Scalar argument (new ref), for the result type. */
static PtlTensorImpl *
wrap_scalar(const PtlIValue *v)
{
    return ptl_wrapped_scalar(v);
}

/* The scalar forms: clamp(Tensor self, Scalar? min=None, Scalar? max=None) (also clamp_,
 * clamp.out, clip*), clamp_min(Tensor self, Scalar min), clamp_max(Tensor self, Scalar
 * max).  [*] -> [*] in result_type(self, min, max): the checks and the bounds, shared by the
 * CPU kernel and the CUDA one (device: "cpu" or "cuda", for the kernel's name in errors). */
int
ptl_clamp_scalar_prepare(const PtlOperator *op, const PtlIValue *s, const char *device,
                         PtlClampBounds *b, PtlDtype *result_type)
{
    PtlTensorImpl *self = s[0].u.t, *out = ptl_kernel_out(op, s);
    PtlTensorImpl *ts[3] = {self, NULL, NULL};
    const PtlIValue *lo = NULL, *hi = NULL;
    const char *kname = "clamp_scalar";
    int rc = -1;
    b->lo = -INFINITY;
    b->hi = INFINITY;
    b->ilo = INT64_MIN;
    b->ihi = INT64_MAX;

    if (op->id == PTL_OP_clamp_min) {
        lo = &s[1];
        kname = "clamp_min_scalar";
    }
    else if (op->id == PTL_OP_clamp_max) {
        hi = &s[1];
        kname = "clamp_max_scalar";
    }
    else {
        if (ptl_clamp_bounds_check(op, s) < 0) {
            return -1;
        }
        lo = s[1].tag == PTL_IV_NONE ? NULL : &s[1];
        hi = s[2].tag == PTL_IV_NONE ? NULL : &s[2];
    }
    if ((lo != NULL && (ts[1] = wrap_scalar(lo)) == NULL) ||
        (hi != NULL && (ts[2] = wrap_scalar(hi)) == NULL)) {
        goto done;
    }
    PtlDtype rt = ptl_result_type(ts, 3);
    if (op->schema.inplace && rt != self->dtype) {
        ptl_error_set(PTL_ERR_RUNTIME, "result type %s can't be cast to the desired output type %s",
                      ptl_dtype_legacy_name(rt), cpp_names[self->dtype]);
        goto done;
    }
    if (out != NULL && out->dtype != rt) {
        ptl_error_set(PTL_ERR_RUNTIME, "Found dtype %s but expected %s",
                      ptl_dtype_legacy_name(out->dtype), ptl_dtype_legacy_name(rt));
        goto done;
    }
    if (rt == PTL_DTYPE_BOOL) {
        ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s_%s\" not implemented for 'Bool'", kname,
                      device);
        goto done;
    }
    /* PyTorch converts each bound to the result type first (c10's checked_convert): out
     * of range raises, and an unsigned type takes -255..-1 wrapped (uint8 min=-1 is 255) */
    if ((lo != NULL && ptl_scalar_check_range(lo, rt) < 0) ||
        (hi != NULL && ptl_scalar_check_range(hi, rt) < 0)) {
        goto done;
    }
    if (lo != NULL) {
        b->lo = ptl_iv_to_double(lo);
        b->ilo = wrap_to(rt, ptl_iv_to_int(lo));
    }
    if (hi != NULL) {
        b->hi = ptl_iv_to_double(hi);
        b->ihi = wrap_to(rt, ptl_iv_to_int(hi));
    }
    *result_type = rt;
    rc = 0;
done:
    ptl_xdecref(ts[1]);
    ptl_xdecref(ts[2]);
    return rc;
}

static int
clamp_scalar_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlIterConfig cfg = ptl_iter_config();
    PtlClampBounds b;
    (void)ks;
    if (ptl_clamp_scalar_prepare(op, s, "cpu", &b, &cfg.compute_dtype) < 0) {
        return -1;
    }
    return ptl_pointwise(op, s, 1, (const int[1]){0}, cfg, clamp_scalar_loops, &b);
}

int
ptl_clamp_tensor_check(const PtlOperator *op, const PtlIValue *s, const char *device)
{
    int has_lo = s[1].tag == PTL_IV_TENSOR, has_hi = s[2].tag == PTL_IV_TENSOR;
    PtlTensorImpl *ts[3] = {s[0].u.t, has_lo ? s[1].u.t : NULL, has_hi ? s[2].u.t : NULL};
    if (ptl_clamp_bounds_check(op, s) < 0) {
        return -1;
    }
    if (has_lo && has_hi && ptl_result_type(ts, 3) == PTL_DTYPE_BOOL) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"clamp_%s\" not implemented for 'Bool'",
                             device);
    }
    return 0;
}

/* clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor (also clamp_,
 * clamp.Tensor_out, clip*): [*] self, min, max broadcast -> [*] in their result type */
static int
clamp_tensor_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlIterConfig cfg = ptl_iter_config();
    int has_lo = s[1].tag == PTL_IV_TENSOR, has_hi = s[2].tag == PTL_IV_TENSOR;
    (void)ks;

    if (ptl_clamp_tensor_check(op, s, "cpu") < 0) {
        return -1;
    }
    if (has_lo && has_hi) {
        return ptl_pointwise(op, s, 3, (const int[3]){0, 1, 2}, cfg, clamp_tensor_loops, NULL);
    }
    if (has_lo) {
        return ptl_pointwise(op, s, 2, (const int[2]){0, 1}, cfg, clamp_min_tensor_loops, NULL);
    }
    return ptl_pointwise(op, s, 2, (const int[2]){0, 2}, cfg, clamp_max_tensor_loops, NULL);
}

/* ---- lerp ---- */

/* scalar_math.h's fused form: the loops' clones with FMA (which implies AVX), where fma()
 * is one instruction ("arch=haswell" would keep GCC from inlining ptl_lerp_d into them) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(PTL_NO_LOOP_CLONES)
#define LERP_CLONES __attribute__((target_clones("fma", "default")))
#else
#define LERP_CLONES
#endif
#define LERP_S_F(A, B, E) ptl_lerp_f((A), (B), (float)*(const double *)(E))
#define LERP_S_D(A, B, E) ptl_lerp_d((A), (B), *(const double *)(E))
#define LERP_T_F(A, B, W, E) ptl_lerp_f((A), (B), (W))
#define LERP_T_D(A, B, W, E) ptl_lerp_d((A), (B), (W))
DEFINE_LOOP2_CLONES(LERP_CLONES, lerp_scalar, ptl_half, f2, PTL_LOAD_f2, PTL_STORE_f2, LERP_S_F)
DEFINE_LOOP2_CLONES(LERP_CLONES, lerp_scalar, ptl_bf16, bf, PTL_LOAD_bf, PTL_STORE_bf, LERP_S_F)
DEFINE_LOOP2_CLONES(LERP_CLONES, lerp_scalar, float, f4, PTL_ID, PTL_ID, LERP_S_F)
DEFINE_LOOP2_CLONES(LERP_CLONES, lerp_scalar, double, f8, PTL_ID, PTL_ID, LERP_S_D)
DEFINE_LOOP3_CLONES(LERP_CLONES, lerp_tensor, ptl_half, f2, PTL_LOAD_f2, PTL_STORE_f2, LERP_T_F)
DEFINE_LOOP3_CLONES(LERP_CLONES, lerp_tensor, ptl_bf16, bf, PTL_LOAD_bf, PTL_STORE_bf, LERP_T_F)
DEFINE_LOOP3_CLONES(LERP_CLONES, lerp_tensor, float, f4, PTL_ID, PTL_ID, LERP_T_F)
DEFINE_LOOP3_CLONES(LERP_CLONES, lerp_tensor, double, f8, PTL_ID, PTL_ID, LERP_T_D)
static const PtlLoop lerp_scalar_loops[PTL_DTYPE_COUNT] = {FLOAT_ENTRIES(lerp_scalar)};
static const PtlLoop lerp_tensor_loops[PTL_DTYPE_COUNT] = {FLOAT_ENTRIES(lerp_tensor)};

/* lerp.Scalar(Tensor self, Tensor end, Scalar weight) and lerp.Tensor(..., Tensor weight)
 * (and lerp_): [*] self, end, weight broadcast -> [*] self + weight * (end - self).
 * end (and a weight with dims) must have self's dtype; floating dtypes only. */
int
ptl_lerp_check(const PtlIValue *s, int scalar)
{
    PtlTensorImpl *self = s[0].u.t, *end = s[1].u.t;
    if (end->dtype != self->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME, "expected dtype %s for `end` but got dtype %s",
                             cpp_names[self->dtype], cpp_names[end->dtype]);
    }
    if (!scalar && s[2].u.t->dim > 0 && s[2].u.t->dtype != self->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME, "expected dtype %s for `weight` but got dtype %s",
                             cpp_names[self->dtype], cpp_names[s[2].u.t->dtype]);
    }
    if (!ptl_dtype_is_floating(self->dtype)) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'",
                             scalar ? "lerp_kernel_scalar" : "lerp_kernel_tensor",
                             ptl_dtype_legacy_name(self->dtype));
    }
    /* a Scalar weight reaches the kernel in the opmath type, with c10's overflow check */
    PtlDtype opmath = self->dtype == PTL_DTYPE_FLOAT64 ? PTL_DTYPE_FLOAT64 : PTL_DTYPE_FLOAT32;
    return scalar ? ptl_scalar_check_range(&s[2], opmath) : 0;
}

static int
lerp_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlIterConfig cfg = ptl_iter_config();
    int scalar = op->id == PTL_OP_lerp_Scalar || op->id == PTL_OP_lerp__Scalar;
    (void)ks;

    if (ptl_lerp_check(s, scalar) < 0) {
        return -1;
    }
    cfg.compute_dtype = s[0].u.t->dtype;
    if (scalar) {
        double w = ptl_iv_to_double(&s[2]);
        return ptl_pointwise(op, s, 2, (const int[2]){0, 1}, cfg, lerp_scalar_loops, &w);
    }
    return ptl_pointwise(op, s, 3, (const int[3]){0, 1, 2}, cfg, lerp_tensor_loops, NULL);
}

/* ---- addcmul / addcdiv ---- */

/* the value arrives as {double, float, int64}: float64 computes with the double, the float
 * family with the float (as PyTorch's opmath: float arithmetic, which vectorizes), integer
 * dtypes with the truncated integer */
typedef struct AddcValue {
    double d;
    float f;
    int64_t i;
} AddcValue;

#define ADDCMUL_I(A, B, C, E)                                                             \
    ((int64_t)((uint64_t)(A) +                                                            \
               (uint64_t)((const AddcValue *)(E))->i * (uint64_t)(B) * (uint64_t)(C)))
#define ADDC_VALUE(A, E) _Generic((A), float: ((const AddcValue *)(E))->f, \
                                  default: ((const AddcValue *)(E))->d)
/* PyTorch's CPU order, (value * b) * c and (value * b) / c: float32 1e10 * 1e30 / 1e30 is
 * inf there too */
#define ADDCMUL_F(A, B, C, E) ((A) + (ADDC_VALUE(A, E) * (B)) * (C))
#define ADDCDIV_F(A, B, C, E) ((A) + (ADDC_VALUE(A, E) * (B)) / (C))
DEFINE_ALL(DEFINE_LOOP3, addcmul, ADDCMUL_I, ADDCMUL_F)
DEFINE_FLOAT_ONLY(DEFINE_LOOP3, addcdiv, ADDCDIV_F)

int
ptl_addcdiv_check(const PtlIValue *s)
{
    if (ptl_dtype_is_integral(s[1].u.t->dtype, 1) && ptl_dtype_is_integral(s[2].u.t->dtype, 1)) {
        return ptl_error_set(
            PTL_ERR_RUNTIME,
            "Integer division with addcdiv is no longer supported, and in a future  release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / "
            "tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
            "tensor2) for float inputs. The future addcdiv behavior is just the latter "
            "implementation: (input + value * tensor1 / tensor2), for all dtypes.");
    }
    return 0;
}

/* addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor
 * (also addcmul_, addcmul.out; addcdiv likewise):
 * [*] self, tensor1, tensor2 broadcast -> [*] self + value * tensor1 (* or /) tensor2 */
static int
addc_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    int is_div = strstr(op->schema.name, "addcdiv") != NULL;
    AddcValue v = {ptl_iv_to_double(&s[3]), (float)ptl_iv_to_double(&s[3]),
                   ptl_iv_to_int(&s[3])};
    (void)ks;

    if (is_div && ptl_addcdiv_check(s) < 0) {
        return -1;
    }
    PtlTensorImpl *ts[3] = {s[0].u.t, s[1].u.t, s[2].u.t};
    PtlDtype rt = ptl_result_type(ts, 3);
    if (!is_div && rt == PTL_DTYPE_BOOL) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED,
                             "\"addcmul_cpu_out\" not implemented for 'Bool'");
    }
    /* value reaches PyTorch's kernel as the opmath type, with c10's overflow check */
    PtlDtype vt = ptl_dtype_is_floating(rt) && rt != PTL_DTYPE_FLOAT64 ? PTL_DTYPE_FLOAT32 : rt;
    if (ptl_scalar_check_range(&s[3], vt) < 0) {
        return -1;
    }
    return ptl_pointwise(op, s, 3, (const int[3]){0, 1, 2}, ptl_iter_config(),
                         is_div ? addcdiv_loops : addcmul_loops, &v);
}

/* clamp_min.Tensor(Tensor self, Tensor min), clamp_max.Tensor(Tensor self, Tensor max) and
 * their .Tensor_out: clamp.Tensor (.Tensor_out) with the other bound None, whose checks,
 * kernels on every device and derivative serve them (PyTorch's grad_fn is
 * ClampMinBackward1 / ClampMaxBackward1, ours clamp's ClampBackward0) */
static int
clamp_bound_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int is_max = op->id == PTL_OP_clamp_max_Tensor || op->id == PTL_OP_clamp_max_Tensor_out;
    int is_out = op->id == PTL_OP_clamp_min_Tensor_out || op->id == PTL_OP_clamp_max_Tensor_out;
    PtlIValue args[4] = {s[0], is_max ? ptl_iv_none() : s[1], is_max ? s[1] : ptl_iv_none(),
                         is_out ? s[2] : ptl_iv_none()};
    PtlTensorImpl *res =
        ptl_call_tensor(is_out ? PTL_OP_clamp_Tensor_out : PTL_OP_clamp_Tensor, args);
    if (res == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(res);
    return 0;
}

static const PtlKernelReg ternary_cpu[] = {
    {PTL_OP_where_self, PTL_KEY_CPU, where_cpu},
    {PTL_OP_where_self_out, PTL_KEY_CPU, where_cpu},
    {PTL_OP_clamp, PTL_KEY_CPU, clamp_scalar_cpu},
    {PTL_OP_clamp_, PTL_KEY_CPU, clamp_scalar_cpu},
    {PTL_OP_clamp_out, PTL_KEY_CPU, clamp_scalar_cpu},
    {PTL_OP_clip, PTL_KEY_CPU, clamp_scalar_cpu},
    {PTL_OP_clip_, PTL_KEY_CPU, clamp_scalar_cpu},
    {PTL_OP_clip_out, PTL_KEY_CPU, clamp_scalar_cpu},
    {PTL_OP_clamp_min, PTL_KEY_CPU, clamp_scalar_cpu},
    {PTL_OP_clamp_max, PTL_KEY_CPU, clamp_scalar_cpu},
    {PTL_OP_clamp_Tensor, PTL_KEY_CPU, clamp_tensor_cpu},
    {PTL_OP_clamp__Tensor, PTL_KEY_CPU, clamp_tensor_cpu},
    {PTL_OP_clamp_Tensor_out, PTL_KEY_CPU, clamp_tensor_cpu},
    {PTL_OP_clip_Tensor, PTL_KEY_CPU, clamp_tensor_cpu},
    {PTL_OP_clip__Tensor, PTL_KEY_CPU, clamp_tensor_cpu},
    {PTL_OP_clip_Tensor_out, PTL_KEY_CPU, clamp_tensor_cpu},
    {PTL_OP_clamp_min_Tensor, PTL_KEY_COMPOSITE_IMPLICIT, clamp_bound_composite},
    {PTL_OP_clamp_max_Tensor, PTL_KEY_COMPOSITE_IMPLICIT, clamp_bound_composite},
    {PTL_OP_clamp_min_Tensor_out, PTL_KEY_COMPOSITE_IMPLICIT, clamp_bound_composite},
    {PTL_OP_clamp_max_Tensor_out, PTL_KEY_COMPOSITE_IMPLICIT, clamp_bound_composite},
    {PTL_OP_lerp_Scalar, PTL_KEY_CPU, lerp_cpu},
    {PTL_OP_lerp_Tensor, PTL_KEY_CPU, lerp_cpu},
    {PTL_OP_lerp__Scalar, PTL_KEY_CPU, lerp_cpu},
    {PTL_OP_lerp__Tensor, PTL_KEY_CPU, lerp_cpu},
    {PTL_OP_addcmul, PTL_KEY_CPU, addc_cpu},
    {PTL_OP_addcmul_, PTL_KEY_CPU, addc_cpu},
    {PTL_OP_addcmul_out, PTL_KEY_CPU, addc_cpu},
    {PTL_OP_addcdiv, PTL_KEY_CPU, addc_cpu},
    {PTL_OP_addcdiv_, PTL_KEY_CPU, addc_cpu},
    {PTL_OP_addcdiv_out, PTL_KEY_CPU, addc_cpu},
};
PTL_DEFINE_REGISTER(ternary_cpu)
