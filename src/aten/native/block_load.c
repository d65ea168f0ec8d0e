/* block_load.c -- loading a run of elements of any dtype into a double or int64 buffer and
 * storing it back, for kernels that compute in double or exact int64 whatever the dtype
 * (the reductions and the scans).  See block_load.h. */
#include "block_load.h"

#include "../loops.h"

#define LD_b1(X) ((X) != 0)
#define LD_u1(X) (X)
#define LD_i1(X) (X)
#define LD_i2(X) (X)
#define LD_i4(X) (X)
#define LD_i8(X) (X)
#define LD_f2(X) ptl_half_to_f(X)
#define LD_bf(X) ptl_bf16_to_f(X)
#define LD_f4(X) (X)
#define LD_f8(X) (X)

#define DEFINE_LOAD_D(E, T, TAG, NAME, LEGACY, FMT)                                       \
    static void                                                                           \
    load_d_##TAG(const char *p, int64_t st, int64_t n, double *buf)                       \
    {                                                                                     \
        if (st == (int64_t)sizeof(T)) {                                                   \
            const T *x = (const T *)p;                                                    \
            for (int64_t k = 0; k < n; k++) {                                             \
                buf[k] = (double)LD_##TAG(x[k]);                                          \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        for (int64_t k = 0; k < n; k++) {                                                 \
            buf[k] = (double)LD_##TAG(*(const T *)(p + k * st));                          \
        }                                                                                 \
    }
PTL_FORALL_REAL_DTYPES(DEFINE_LOAD_D)
#undef DEFINE_LOAD_D

#define DEFINE_LOAD_I(T, TAG)                                                             \
    static void                                                                           \
    load_i_##TAG(const char *p, int64_t st, int64_t n, int64_t *buf)                      \
    {                                                                                     \
        for (int64_t k = 0; k < n; k++) {                                                 \
            buf[k] = (int64_t)LD_##TAG(*(const T *)(p + k * st));                         \
        }                                                                                 \
    }                                                                                     \
    static void                                                                           \
    store_i_##TAG(char *p, int64_t st, int64_t n, const int64_t *buf)                     \
    {                                                                                     \
        for (int64_t k = 0; k < n; k++) {                                                 \
            *(T *)(p + k * st) = (T)(buf[k]);                                             \
        }                                                                                 \
    }
DEFINE_LOAD_I(uint8_t, u1)
DEFINE_LOAD_I(int8_t, i1)
DEFINE_LOAD_I(int16_t, i2)
DEFINE_LOAD_I(int32_t, i4)
DEFINE_LOAD_I(int64_t, i8)
#undef DEFINE_LOAD_I

static void
load_i_b1(const char *p, int64_t st, int64_t n, int64_t *buf)
{
    for (int64_t k = 0; k < n; k++) {
        buf[k] = p[k * st] != 0;
    }
}

static void
store_i_b1(char *p, int64_t st, int64_t n, const int64_t *buf)
{
    for (int64_t k = 0; k < n; k++) {
        p[k * st] = (char)(buf[k] != 0);
    }
}

#define DEFINE_STORE_D(T, TAG, CONV)                                                      \
    static void                                                                           \
    store_d_##TAG(char *p, int64_t st, int64_t n, const double *buf)                      \
    {                                                                                     \
        for (int64_t k = 0; k < n; k++) {                                                 \
            *(T *)(p + k * st) = CONV(buf[k]);                                            \
        }                                                                                 \
    }
#define TO_HALF(V) ptl_f_to_half((float)(V))
#define TO_BF16(V) ptl_f_to_bf16((float)(V))
DEFINE_STORE_D(ptl_half, f2, TO_HALF)
DEFINE_STORE_D(ptl_bf16, bf, TO_BF16)
DEFINE_STORE_D(float, f4, (float))
DEFINE_STORE_D(double, f8, PTL_ID)
#undef DEFINE_STORE_D

/* ORDER DTYPE */
const PtlBlockLoadD ptl_block_load_d[PTL_DTYPE_COUNT] = {
    load_d_b1, load_d_u1, load_d_i1, load_d_i2, load_d_i4,
    load_d_i8, load_d_f2, load_d_bf, load_d_f4, load_d_f8,
};
const PtlBlockLoadI ptl_block_load_i[PTL_DTYPE_COUNT] = {
    load_i_b1, load_i_u1, load_i_i1, load_i_i2, load_i_i4, load_i_i8,
};
const PtlBlockStoreI ptl_block_store_i[PTL_DTYPE_COUNT] = {
    store_i_b1, store_i_u1, store_i_i1, store_i_i2, store_i_i4, store_i_i8,
};
const PtlBlockStoreD ptl_block_store_d[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_FLOAT16] = store_d_f2, [PTL_DTYPE_BFLOAT16] = store_d_bf,
    [PTL_DTYPE_FLOAT32] = store_d_f4, [PTL_DTYPE_FLOAT64] = store_d_f8,
};

