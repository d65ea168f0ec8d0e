/* unary_loops.h -- the loop skeleton of the one-input pointwise kernels (unary.c, and
 * ternary.c's clamp with scalar bounds) and the dtype-table initializers of every pointwise
 * kernel.  Mirrors ATen/native/cpu/Loops.h (cpu_kernel_vec's contiguous specialization).
 *
 * DEFINE_UNARY_LOOP stamps `static void NAME_loop_DT(char **d, const int64_t *s, int64_t n,
 * const void *extra)` (the PtlLoop ABI of loops.h): o = STORE(F(LOAD(a), extra)) for an
 * input of C type TI and an output of TO, with a contiguous path the compiler vectorizes
 * and a strided fallback. */
#ifndef PTL_ATEN_NATIVE_UNARY_LOOPS_H
#define PTL_ATEN_NATIVE_UNARY_LOOPS_H

#include "native.h"

#define DEFINE_UNARY_LOOP(NAME, TI, TO, DT, LOAD, STORE, F)                               \
    PTL_LOOP_CLONES static void                                                           \
    NAME##_loop_##DT(char **d, const int64_t *s, int64_t n, const void *extra)            \
    {                                                                                     \
        (void)extra;                                                                      \
        if (s[0] == sizeof(TO) && s[1] == sizeof(TI)) {                                   \
            TO *o = (TO *)d[0];                                                           \
            const TI *a = (const TI *)d[1];                                               \
            for (int64_t i = 0; i < n; i++) {                                             \
                o[i] = STORE(F(LOAD(a[i]), extra));                                       \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                 \
            const TI a = *(const TI *)(d[1] + i * s[1]);                                  \
            *(TO *)(d[0] + i * s[0]) = STORE(F(LOAD(a), extra));                          \
        }                                                                                 \
    }

/* The loops of formula F for the integer dtypes: DEF(NAME, T, DT, F) for each C type T and
 * its tag DT (INT_ENTRIES names the same loops). */
#define PTL_INT_LOOPS(DEF, NAME, F)                                                       \
    DEF(NAME, uint8_t, u1, F)                                                             \
    DEF(NAME, int8_t, i1, F)                                                              \
    DEF(NAME, int16_t, i2, F)                                                             \
    DEF(NAME, int32_t, i4, F)                                                             \
    DEF(NAME, int64_t, i8, F)

/* Table initializers (ORDER DTYPE is implied by the designators). */
#define INT_ENTRIES(NAME)                                                                 \
    [PTL_DTYPE_UINT8] = NAME##_loop_u1, [PTL_DTYPE_INT8] = NAME##_loop_i1,                \
    [PTL_DTYPE_INT16] = NAME##_loop_i2, [PTL_DTYPE_INT32] = NAME##_loop_i4,               \
    [PTL_DTYPE_INT64] = NAME##_loop_i8
#define FLOAT_ENTRIES(NAME)                                                               \
    [PTL_DTYPE_FLOAT16] = NAME##_loop_f2, [PTL_DTYPE_BFLOAT16] = NAME##_loop_bf,          \
    [PTL_DTYPE_FLOAT32] = NAME##_loop_f4, [PTL_DTYPE_FLOAT64] = NAME##_loop_f8

/* unary_special.c: lgamma, digamma, trigamma (polygamma(1, .)) and, float64 only, the
 * modified Bessel functions i0, i0e, i1, i1e in vector lanes (Note [Vector lgamma and
 * digamma], Note [Float64 lgamma and Bessel lanes]) over n contiguous float32 (is_double 0)
 * or float64 elements, o[i] = F(a[i]): 0 when done, -1 when the CPU has no AVX2 or the
 * formula no loop for the dtype (the caller runs its portable loop). */
enum {
    PTL_SPECIAL_LGAMMA,
    PTL_SPECIAL_DIGAMMA,
    PTL_SPECIAL_TRIGAMMA,
    PTL_SPECIAL_I0,
    PTL_SPECIAL_I0E,
    PTL_SPECIAL_I1,
    PTL_SPECIAL_I1E
};
int ptl_unary_special_map(int fn, int is_double, void *o, const void *a, int64_t n);

#endif
