/* reduce_truth.c -- all and any of contiguous runs and of columns, for reduce.c's plans (Note
 * [Reduction plan]), on the values' bits (Note [Truth of bits]).  Mirrors the and/or
 * reductions of ATen/native/cpu/ReduceOpsKernel.cpp (and_stub, or_stub). */
#include <stdint.h>

#include "../loops.h"
#include "reduce_plan.h"

/* Note [Truth of bits]
 * ~~~~~~~~~~~~~~~~~~~~~
 * A value is true when it is not 0: for an integer or a bool when a bit is set, for a float
 * when a bit other than the sign is set (-0.0 is false, a NaN true), so all and any read the
 * values as unsigned integers of their width under a mask and need no conversion.  A run's
 * values or a column's rows are or-ed (any) or counted true (all) in typed loops that GCC
 * vectorizes, rows of up to 16 values with their length a constant.  The way through
 * reduce.c's accumulators (each value loaded into an int64 or a double block, folded, and
 * stored through a switch an output) had cost 900 us for any(1) of 65536 x 2 against
 * PyTorch's 210 (0.11-0.87x over int8 to float64, 2 to 16 values a row or rows a column, one
 * thread, measured with benchmarks/interleaved_reduce_rows.py). */

/* The mask of the bits that make a value of dtype dt true (Note [Truth of bits]) */
static uint64_t
truth_mask(PtlDtype dt)
{
    switch (dt) {
    case PTL_DTYPE_FLOAT16:
    case PTL_DTYPE_BFLOAT16: return 0x7fff;
    case PTL_DTYPE_FLOAT32: return 0x7fffffff;
    case PTL_DTYPE_FLOAT64: return 0x7fffffffffffffff;
    default: return ~(uint64_t)0;
    }
}

/* out[o] = all (is_all) or any of the run x + o * step, x[0..n) (o < m), for the unsigned
 * type T of the values' width; n a constant where the caller's switch makes it one */
#define DEFINE_TRUTH_RUNS(T)                                                                 \
    static inline __attribute__((always_inline)) void                                        \
    truth_runs_body_##T(uint8_t *out, const char *x, int64_t step, int64_t n, int64_t m,      \
                        T mask, int is_all)                                                   \
    {                                                                                         \
        for (int64_t o = 0; o < m; o++) {                                                     \
            const T *v = (const T *)(x + o * step);                                           \
            if (is_all) {                                                                     \
                int64_t t = 0;                                                                \
                for (int64_t k = 0; k < n; k++) {                                             \
                    t += (v[k] & mask) != 0;                                                  \
                }                                                                             \
                out[o] = t == n;                                                              \
            }                                                                                 \
            else {                                                                            \
                T t = 0;                                                                      \
                for (int64_t k = 0; k < n; k++) {                                             \
                    t |= v[k] & mask;                                                         \
                }                                                                             \
                out[o] = t != 0;                                                              \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
    PTL_LOOP_CLONES static void                                                              \
    truth_runs_##T(uint8_t *out, const char *x, int64_t step, int64_t n, int64_t m, T mask,   \
                   int is_all)                                                                \
    {                                                                                         \
        switch (n) {                                                                          \
        TRUTH_CASE(T, 1) TRUTH_CASE(T, 2) TRUTH_CASE(T, 3) TRUTH_CASE(T, 4)                  \
        TRUTH_CASE(T, 5) TRUTH_CASE(T, 6) TRUTH_CASE(T, 7) TRUTH_CASE(T, 8)                  \
        TRUTH_CASE(T, 16)                                                                     \
        default: truth_runs_body_##T(out, x, step, n, m, mask, is_all); return;               \
        }                                                                                     \
    }
#define TRUTH_CASE(T, N)                                                                      \
    case N: truth_runs_body_##T(out, x, step, N, m, mask, is_all); return;
DEFINE_TRUTH_RUNS(uint8_t)
DEFINE_TRUTH_RUNS(uint16_t)
DEFINE_TRUTH_RUNS(uint32_t)
DEFINE_TRUTH_RUNS(uint64_t)
#undef TRUTH_CASE
#undef DEFINE_TRUTH_RUNS

/* out[k] = all (is_all) or any of column k of the R rows x, x + rs, ... (k < m <= 2048),
 * for the unsigned type T of the values' width */
#define DEFINE_TRUTH_COLUMNS(T)                                                              \
    PTL_LOOP_CLONES static void                                                              \
    truth_columns_##T(uint8_t *out, const char *x, int64_t rs, int64_t R, int64_t m, T mask,  \
                      int is_all)                                                             \
    {                                                                                         \
        T acc[2048];                                                                          \
        const T *v = (const T *)x;                                                            \
        for (int64_t k = 0; k < m; k++) {                                                     \
            acc[k] = is_all ? (T)((v[k] & mask) != 0) : (T)(v[k] & mask);                     \
        }                                                                                     \
        for (int64_t r = 1; r < R; r++) {                                                     \
            v = (const T *)(x + r * rs);                                                      \
            if (is_all) {                                                                     \
                for (int64_t k = 0; k < m; k++) {                                             \
                    acc[k] &= (T)((v[k] & mask) != 0);                                        \
                }                                                                             \
            }                                                                                 \
            else {                                                                            \
                for (int64_t k = 0; k < m; k++) {                                             \
                    acc[k] |= v[k] & mask;                                                    \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
        for (int64_t k = 0; k < m; k++) {                                                     \
            out[k] = acc[k] != 0;                                                             \
        }                                                                                     \
    }
DEFINE_TRUTH_COLUMNS(uint8_t)
DEFINE_TRUTH_COLUMNS(uint16_t)
DEFINE_TRUTH_COLUMNS(uint32_t)
DEFINE_TRUTH_COLUMNS(uint64_t)
#undef DEFINE_TRUTH_COLUMNS

/* Whether pl is an all or any of a real dtype into one-byte outputs (bool, uint8) */
static int
is_truth(const Plan *pl)
{
    return (pl->kind == R_ALL || pl->kind == R_ANY) && !ptl_dtype_is_complex(pl->dt) &&
           ptl_dtype_itemsize(pl->odt0) == 1;
}

/* (reduce_plan.h) */
int
ptl_red_truth_runs(const Plan *pl, int64_t b, int64_t e)
{
    int64_t step, isz = (int64_t)ptl_dtype_itemsize(pl->dt);
    if (!is_truth(pl) || pl->nr != 1 || pl->rstride[0] != isz || !kept_even(pl, &step)) {
        return 0;
    }
    const char *x = pl->base + b * step;
    uint8_t *out = (uint8_t *)pl->out0 + b;
    uint64_t mask = truth_mask(pl->dt);
    int is_all = pl->kind == R_ALL;
    switch (isz) {
    case 1: truth_runs_uint8_t(out, x, step, pl->R, e - b, (uint8_t)mask, is_all); return 1;
    case 2: truth_runs_uint16_t(out, x, step, pl->R, e - b, (uint16_t)mask, is_all); return 1;
    case 4: truth_runs_uint32_t(out, x, step, pl->R, e - b, (uint32_t)mask, is_all); return 1;
    case 8: truth_runs_uint64_t(out, x, step, pl->R, e - b, mask, is_all); return 1;
    default: return 0;
    }
}

/* (reduce_plan.h) */
int
ptl_red_truth_columns(const Plan *pl, int64_t o0, const char *p, int64_t m)
{
    if (!is_truth(pl) || m > 2048) {
        return 0;
    }
    uint8_t *out = (uint8_t *)pl->out0 + o0;
    uint64_t mask = truth_mask(pl->dt);
    int64_t rs = pl->rstride[0];
    int is_all = pl->kind == R_ALL;
    switch (ptl_dtype_itemsize(pl->dt)) {
    case 1: truth_columns_uint8_t(out, p, rs, pl->R, m, (uint8_t)mask, is_all); return 1;
    case 2: truth_columns_uint16_t(out, p, rs, pl->R, m, (uint16_t)mask, is_all); return 1;
    case 4: truth_columns_uint32_t(out, p, rs, pl->R, m, (uint32_t)mask, is_all); return 1;
    case 8: truth_columns_uint64_t(out, p, rs, pl->R, m, mask, is_all); return 1;
    default: return 0;
    }
}
