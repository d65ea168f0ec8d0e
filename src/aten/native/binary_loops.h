/* binary_loops.h -- the loop skeleton of the binary pointwise kernels (binary.c,
 * compare.c).  Mirrors ATen/native/cpu/Loops.h (cpu_kernel_vec's contiguous and
 * scalar-operand specializations).
 *
 * DEFINE_BINARY_LOOP_OUT stamps `static void NAME_loop_DT(char **d, const int64_t *s,
 * int64_t n, const void *extra)` (the PtlLoop ABI of loops.h): inputs of C type T are
 * loaded into the accumulation type ACC, F(a, b, x) is applied, and the result is stored
 * as TO.  x is the double that `extra` points to, converted to ACC (alpha, or unused).
 * The contiguous path and the two broadcast-scalar paths are plain counted loops over
 * restrict-free pointers, which gcc -O3 vectorizes (with a run-time alias check).  The
 * loop tables use unary_loops.h's INT_ENTRIES / FLOAT_ENTRIES. */
#ifndef PTL_ATEN_NATIVE_BINARY_LOOPS_H
#define PTL_ATEN_NATIVE_BINARY_LOOPS_H

#include "native.h"
#include "unary_loops.h"

#define DEFINE_BINARY_LOOP_OUT(NAME, T, TO, DT, ACC, LOAD, STORE, F)                      \
    PTL_LOOP_CLONES static void                                                           \
    NAME##_loop_##DT(char **d, const int64_t *s, int64_t n, const void *extra)            \
    {                                                                                     \
        const ACC x = (ACC)(*(const double *)extra);                                      \
        (void)x;                                                                          \
        if (s[0] == sizeof(TO) && s[1] == sizeof(T) && s[2] == sizeof(T)) {               \
            TO *o = (TO *)d[0];                                                           \
            const T *a = (const T *)d[1], *b = (const T *)d[2];                           \
            for (int64_t i = 0; i < n; i++) {                                             \
                o[i] = STORE(F(LOAD(a[i]), LOAD(b[i]), x));                               \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        if (s[0] == sizeof(TO) && s[1] == sizeof(T) && s[2] == 0) {                       \
            TO *o = (TO *)d[0];                                                           \
            const T *a = (const T *)d[1];                                                 \
            const ACC b = LOAD(*(const T *)d[2]);                                         \
            for (int64_t i = 0; i < n; i++) {                                             \
                o[i] = STORE(F(LOAD(a[i]), b, x));                                        \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        if (s[0] == sizeof(TO) && s[1] == 0 && s[2] == sizeof(T)) {                       \
            TO *o = (TO *)d[0];                                                           \
            const ACC a = LOAD(*(const T *)d[1]);                                         \
            const T *b = (const T *)d[2];                                                 \
            for (int64_t i = 0; i < n; i++) {                                             \
                o[i] = STORE(F(a, LOAD(b[i]), x));                                        \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                 \
            const T a = *(const T *)(d[1] + i * s[1]), b = *(const T *)(d[2] + i * s[2]); \
            *(TO *)(d[0] + i * s[0]) = STORE(F(LOAD(a), LOAD(b), x));                     \
        }                                                                                 \
    }

#define DEFINE_BINARY_LOOP(NAME, T, DT, ACC, LOAD, STORE, F) \
    DEFINE_BINARY_LOOP_OUT(NAME, T, T, DT, ACC, LOAD, STORE, F)

/* The loops of one formula for the integer dtypes (computed in int64_t and truncated on
 * store) and for the floating dtypes (float16/bfloat16 through float). */
#define PTL_BINARY_INT_LOOP(NAME, T, DT, F) \
    DEFINE_BINARY_LOOP(NAME, T, DT, int64_t, PTL_ID, (T), F)
#define DEFINE_BINARY_INT_LOOPS(NAME, F) PTL_INT_LOOPS(PTL_BINARY_INT_LOOP, NAME, F)

#define DEFINE_BINARY_FLOAT_LOOPS(NAME, FF, FD)                                    \
    DEFINE_BINARY_LOOP(NAME, ptl_half, f2, float, PTL_LOAD_f2, PTL_STORE_f2, FF)  \
    DEFINE_BINARY_LOOP(NAME, ptl_bf16, bf, float, PTL_LOAD_bf, PTL_STORE_bf, FF)  \
    DEFINE_BINARY_LOOP(NAME, float, f4, float, PTL_ID, PTL_ID, FF)                \
    DEFINE_BINARY_LOOP(NAME, double, f8, double, PTL_ID, PTL_ID, FD)

#endif
