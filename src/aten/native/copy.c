/* copy.c -- copy_ with dtype conversion and broadcasting, casts, clone, contiguous, fill_.
 * Mirrors ATen/native/Copy.cpp and ATen/native/Fill.cpp. */
#include <math.h>
#include <string.h>

#include "../../c10/allocator.h"
#include "../../c10/cpu_features.h"
#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "../complex_math.h"
#include "../dispatcher.h"
#include "../scalar_math.h"
#include "../tensor_iterator.h"
#include "../transpose_block.h"
#include "native.h"
#include "vec_math.h"

/* ---- conversion loops: one per (destination, source) dtype pair ---- */

/* Every value goes through the widest type of its kind: double for floats, int64 for
 * integers (so int64 -> float64 -> int64 keeps 2^53+1 exact), then to the destination. */
#define LOAD_AS_D_b1(X) ((double)((X) != 0))
#define LOAD_AS_D_u1(X) ((double)(X))
#define LOAD_AS_D_i1(X) ((double)(X))
#define LOAD_AS_D_i2(X) ((double)(X))
#define LOAD_AS_D_i4(X) ((double)(X))
#define LOAD_AS_D_i8(X) ((double)(X))
#define LOAD_AS_D_f2(X) ((double)ptl_half_to_f(X))
#define LOAD_AS_D_bf(X) ((double)ptl_bf16_to_f(X))
#define LOAD_AS_D_f4(X) ((double)(X))
#define LOAD_AS_D_f8(X) (X)
#define LOAD_AS_D_c8(X) ((double)crealf(X))   /* complex -> real keeps the real part */
#define LOAD_AS_D_c16(X) (creal(X))

#define SRC_IS_INT_b1 1
#define SRC_IS_INT_u1 1
#define SRC_IS_INT_i1 1
#define SRC_IS_INT_i2 1
#define SRC_IS_INT_i4 1
#define SRC_IS_INT_i8 1
#define SRC_IS_INT_f2 0
#define SRC_IS_INT_bf 0
#define SRC_IS_INT_f4 0
#define SRC_IS_INT_f8 0
#define SRC_IS_INT_c8 0
#define SRC_IS_INT_c16 0

#define STORE_b1(V) ((uint8_t)((V) != 0))
#define STORE_u1(V) ((uint8_t)ptl_d_to_i32(V))
#define STORE_i1(V) ((int8_t)ptl_d_to_i32(V))
#define STORE_i2(V) ((int16_t)ptl_d_to_i32(V))
#define STORE_i4(V) (ptl_d_to_i32(V))
#define STORE_i8(V) (ptl_d_to_i64(V))
#define STORE_f2(V) (ptl_f_to_half((float)(V)))
#define STORE_bf(V) (ptl_f_to_bf16((float)(V)))
#define STORE_f4(V) ((float)(V))
#define STORE_f8(V) ((double)(V))

/* int -> int stores keep every bit through int64 (no double rounding) */
#define ISTORE_b1(V) ((uint8_t)((V) != 0))
#define ISTORE_u1(V) ((uint8_t)(V))
#define ISTORE_i1(V) ((int8_t)(V))
#define ISTORE_i2(V) ((int16_t)(V))
#define ISTORE_i4(V) ((int32_t)(V))
#define ISTORE_i8(V) ((int64_t)(V))
#define ISTORE_f2(V) (ptl_f_to_half((float)(V)))
#define ISTORE_bf(V) (ptl_f_to_bf16((float)(V)))
#define ISTORE_f4(V) ((float)(V))
#define ISTORE_f8(V) ((double)(V))
/* the narrower integers load as int32: the same value, and gcc vectorizes int32 -> float
 * where it keeps int64 -> float scalar or goes through int64 lanes (Note [Vectorized casts]) */
#define LOAD_AS_I_b1(X) ((int32_t)((X) != 0))
#define LOAD_AS_I_u1(X) ((int32_t)(X))
#define LOAD_AS_I_i1(X) ((int32_t)(X))
#define LOAD_AS_I_i2(X) ((int32_t)(X))
#define LOAD_AS_I_i4(X) ((int32_t)(X))
#define LOAD_AS_I_i8(X) ((int64_t)(X))
#define LOAD_AS_I_f2(X) 0
#define LOAD_AS_I_bf(X) 0
#define LOAD_AS_I_f4(X) 0
#define LOAD_AS_I_f8(X) 0
#define LOAD_AS_I_c8(X) 0
#define LOAD_AS_I_c16(X) 0

/* into a complex dtype: reals become (x, 0), complex values keep both parts */
#define LOAD_AS_Z_b1(X) ((double)((X) != 0))
#define LOAD_AS_Z_u1(X) ((double)(X))
#define LOAD_AS_Z_i1(X) ((double)(X))
#define LOAD_AS_Z_i2(X) ((double)(X))
#define LOAD_AS_Z_i4(X) ((double)(X))
#define LOAD_AS_Z_i8(X) ((double)(X))
#define LOAD_AS_Z_f2(X) ((double)ptl_half_to_f(X))
#define LOAD_AS_Z_bf(X) ((double)ptl_bf16_to_f(X))
#define LOAD_AS_Z_f4(X) ((double)(X))
#define LOAD_AS_Z_f8(X) (X)
#define LOAD_AS_Z_c8(X) ((ptl_complex128)(X))
#define LOAD_AS_Z_c16(X) (X)

/* one value of source tag STAG converted to destination tag DTAG */
#define CONV_ONE(DTAG, STAG, X)                                                           \
    (SRC_IS_INT_##STAG ? ISTORE_##DTAG(LOAD_AS_I_##STAG(X)) : STORE_##DTAG(LOAD_AS_D_##STAG(X)))

#define DEFINE_CONV(DT, DTAG, ST, STAG)                                                   \
    static void                                                                           \
    conv_##DTAG##_##STAG(char **d, const int64_t *s, int64_t n, const void *extra)        \
    {                                                                                     \
        (void)extra;                                                                      \
        if (s[0] == (int64_t)sizeof(DT) && s[1] == (int64_t)sizeof(ST)) {                 \
            DT *o = (DT *)d[0];                                                           \
            const ST *a = (const ST *)d[1];                                               \
            for (int64_t i = 0; i < n; i++) {                                             \
                o[i] = CONV_ONE(DTAG, STAG, a[i]);                                        \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                 \
            const ST a = *(const ST *)(d[1] + i * s[1]);                                  \
            *(DT *)(d[0] + i * s[0]) = CONV_ONE(DTAG, STAG, a);                           \
        }                                                                                 \
    }

/* complex -> bool: true when either part is nonzero (no part is discarded) */
#define ZBOOL(T)                                                                          \
    static void                                                                           \
    conv_b1_z_##T(char **d, const int64_t *s, int64_t n, const void *extra)               \
    {                                                                                     \
        (void)extra;                                                                      \
        for (int64_t i = 0; i < n; i++) {                                                 \
            *(uint8_t *)(d[0] + i * s[0]) = *(const T *)(d[1] + i * s[1]) != 0;           \
        }                                                                                 \
    }
ZBOOL(ptl_complex64)
ZBOOL(ptl_complex128)
#undef ZBOOL

#define DEFINE_CONV_Z(DT, DTAG, ST, STAG)                                                 \
    static void                                                                           \
    conv_##DTAG##_##STAG(char **d, const int64_t *s, int64_t n, const void *extra)        \
    {                                                                                     \
        (void)extra;                                                                      \
        for (int64_t i = 0; i < n; i++) {                                                 \
            const ST a = *(const ST *)(d[1] + i * s[1]);                                  \
            *(DT *)(d[0] + i * s[0]) = (DT)LOAD_AS_Z_##STAG(a);                           \
        }                                                                                 \
    }

#define DEFINE_CONV_FROM(E, ST, STAG, NAME, LEGACY, FMT)                                  \
    DEFINE_CONV(uint8_t, b1, ST, STAG) DEFINE_CONV(uint8_t, u1, ST, STAG)                 \
    DEFINE_CONV(int8_t, i1, ST, STAG) DEFINE_CONV(int16_t, i2, ST, STAG)                  \
    DEFINE_CONV(int32_t, i4, ST, STAG) DEFINE_CONV(int64_t, i8, ST, STAG)                 \
    DEFINE_CONV(ptl_half, f2, ST, STAG) DEFINE_CONV(ptl_bf16, bf, ST, STAG)               \
    DEFINE_CONV(float, f4, ST, STAG) DEFINE_CONV(double, f8, ST, STAG)                    \
    DEFINE_CONV_Z(ptl_complex64, c8, ST, STAG) DEFINE_CONV_Z(ptl_complex128, c16, ST, STAG)
PTL_FORALL_DTYPES(DEFINE_CONV_FROM)
#undef DEFINE_CONV_FROM

/* ORDER DTYPE, [dst][src] */
#define CONV_ROW(E, DT, DTAG, NAME, LEGACY, FMT)                                          \
    {conv_##DTAG##_b1, conv_##DTAG##_u1, conv_##DTAG##_i1, conv_##DTAG##_i2,              \
     conv_##DTAG##_i4, conv_##DTAG##_i8, conv_##DTAG##_f2, conv_##DTAG##_bf,              \
     conv_##DTAG##_f4, conv_##DTAG##_f8, conv_##DTAG##_c8, conv_##DTAG##_c16},
static const PtlLoop conv_loops[PTL_DTYPE_COUNT][PTL_DTYPE_COUNT] = {
    PTL_FORALL_DTYPES(CONV_ROW)
};
#undef CONV_ROW

/* Fills n contiguous elements of `item` bytes with the value v: zero bytes by memset, any
 * other value as a 64-byte pattern of it stored line after line (zeros() and ones() of 1e6
 * values went element by element at 2 GB/s, a tenth of PyTorch's fill; then by doubling the
 * filled prefix with memcpy, 4 KiB at a time, whose `rep movsq` filled 4 MB at 55% of
 * PyTorch's vector stores: fill_ of 1024 x 1024 float32 80 us against 45; now 43).  The bytes
 * are v's, whichever of the three store loops runs. */
#define FILL_PATTERN_BYTES 64
#ifdef PTL_HAVE_AVX2_KERNELS
__attribute__((target("avx2"))) static void
fill_lines_avx2(char *o, const char *pattern, size_t total)
{
    const __m256i lo = _mm256_loadu_si256((const __m256i *)pattern);
    const __m256i hi = _mm256_loadu_si256((const __m256i *)(pattern + 32));
    size_t i = 0;
    for (; i + FILL_PATTERN_BYTES <= total; i += FILL_PATTERN_BYTES) {
        _mm256_storeu_si256((__m256i *)(o + i), lo);
        _mm256_storeu_si256((__m256i *)(o + i + 32), hi);
    }
    memcpy(o + i, pattern, total - i);
}

__attribute__((target("avx512f"))) static void
fill_lines_avx512(char *o, const char *pattern, size_t total)
{
    const __m512i p = _mm512_loadu_si512(pattern);
    size_t i = 0;
    for (; i + FILL_PATTERN_BYTES <= total; i += FILL_PATTERN_BYTES) {
        _mm512_storeu_si512(o + i, p);
    }
    memcpy(o + i, pattern, total - i);
}

#endif

static void
fill_lines(char *o, const char *pattern, size_t total)
{
#ifdef PTL_HAVE_AVX2_KERNELS
    PtlCpuCapability cap = ptl_cpu_capability();
    if (cap >= PTL_CPU_AVX512) {
        fill_lines_avx512(o, pattern, total);
        return;
    }
    if (cap >= PTL_CPU_AVX2) {
        fill_lines_avx2(o, pattern, total);
        return;
    }
#endif
    size_t i = 0;
    for (; i + FILL_PATTERN_BYTES <= total; i += FILL_PATTERN_BYTES) {
        memcpy(o + i, pattern, FILL_PATTERN_BYTES);
    }
    memcpy(o + i, pattern, total - i);
}

static void
fill_run(char *o, const char *v, size_t item, int64_t n)
{
    size_t total = (size_t)n * item;
    size_t k = 0;
    while (k < item && v[k] == 0) {
        k++;
    }
    if (k == item) {
        memset(o, 0, total);
        return;
    }
    if (total == 0) {
        return;
    }
    if (FILL_PATTERN_BYTES % item == 0) {
        _Alignas(64) char pattern[FILL_PATTERN_BYTES];
        for (size_t i = 0; i < FILL_PATTERN_BYTES; i += item) {
            memcpy(pattern + i, v, item);
        }
        fill_lines(o, pattern, total);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        memcpy(o + (size_t)i * item, v, item);
    }
}

/* A strided copy of n elements of ITEM bytes (a fixed size, so each move is one load and one
 * store, not a call): a broadcast source (stride 0) becomes a fill, a contiguous destination
 * a gather.  Expanding a sum's gradient or making a transposed head contiguous runs here. */
#define DEFINE_STRIDED_COPY(ITEM)                                                         \
    static void                                                                           \
    copy_strided_##ITEM(char *o, const char *a, int64_t so, int64_t sa, int64_t n)        \
    {                                                                                     \
        if (sa == 0) {                                                                    \
            char v[ITEM];                                                                 \
            memcpy(v, a, ITEM);                                                           \
            if (so == ITEM) {                                                             \
                fill_run(o, v, ITEM, n);                                                  \
                return;                                                                   \
            }                                                                             \
            for (int64_t i = 0; i < n; i++) {                                             \
                memcpy(o + i * so, v, ITEM);                                              \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        if (so == ITEM) {                                                                 \
            for (int64_t i = 0; i < n; i++) {                                             \
                memcpy(o + i * ITEM, a + i * sa, ITEM);                                   \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                 \
            memcpy(o + i * so, a + i * sa, ITEM);                                         \
        }                                                                                 \
    }
DEFINE_STRIDED_COPY(1)
DEFINE_STRIDED_COPY(2)
DEFINE_STRIDED_COPY(4)
DEFINE_STRIDED_COPY(8)
DEFINE_STRIDED_COPY(16)
#undef DEFINE_STRIDED_COPY

/* Note [Half-precision conversions]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * float32 <-> float16 and float32 <-> bfloat16 are the casts of mixed-precision training;
 * the table's loops go element by element through double and the bit-twiddling of dtype.h
 * (1e6 float32 -> float16 in 1.1-2.9 ms, 15-40x PyTorch).  Contiguous runs take these loops
 * instead.  float16 uses the F16C instructions (round to nearest even, exact the other way)
 * where the CPU has them and the run-time capability is at least AVX2, 16 values a block with
 * AVX-512 (8 with AVX2: 1e6 values took 1.1-2x PyTorch's time); a block holding a
 * NaN is redone by dtype.h's functions, so NaN payloads come out as before.  Every other
 * value is the same number either way: both are IEEE conversions with the same rounding.
 * bfloat16 runs dtype.h's own functions in a loop the compiler vectorizes, for AVX2 or
 * AVX-512 (Note [Vectorized casts]).  float64 <-> float16 take 8-value F16C blocks too
 * (float64 -> float16 16-value blocks with AVX-512), and
 * float64 <-> bfloat16 the vectorized loops (element by element through double they ran at
 * 0.09x, 0.36x and 0.54x PyTorch's speed). */
#ifdef PTL_HAVE_AVX2_KERNELS
#define HAVE_F16C_LOOPS 1

/* The loops for vectors of kind S (Note [Vector twins]): ps, 8 values with F16C, or ps512,
 * 16 with AVX-512 (vcvtps2ph zmm); the conversions are IEEE ones, the same bits at either
 * width.  F16C_H_##S is the vector of as many halves. */
#define F16C_ATTR_ps __attribute__((target("avx2,f16c")))
#define F16C_ATTR_ps512 PTL_AVX512
#define F16C_H_ps __m128i
#define F16C_H_ps512 __m256i
#define F16C_TO_HALF_ps(v) _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)
#define F16C_TO_HALF_ps512(v) _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)
#define F16C_TO_FLOAT_ps(h) _mm256_cvtph_ps(h)
#define F16C_TO_FLOAT_ps512(h) _mm512_cvtph_ps(h)
/* the halves stored from a register: gcc folds a memcpy of them into vcvtps2ph's memory form,
 * slow on Zen 4 (1e6 float32 -> float16: 75 -> 68-71 us without it), but not a store
 * intrinsic */
#define F16C_STORE_HALF_ps(p, h) _mm_storeu_si128((__m128i *)(p), h)
#define F16C_STORE_HALF_ps512(p, h) _mm256_storeu_si256((__m256i *)(p), h)
#define DEFINE_F16C_LOOPS(S)                                                              \
    F16C_ATTR_##S static void                                                             \
    half_from_float_##S(ptl_half *o, const float *a, int64_t n)                           \
    {                                                                                     \
        int64_t i = 0;                                                                    \
        for (; i + PTL_VLANES(S) <= n; i += PTL_VLANES(S)) {                              \
            PTL_VT(S) v = PTL_VLOADF(S, a + i);                                           \
            if (PTL_VBITS(S, PTL_VCMP(S, v, v, _CMP_UNORD_Q)) != 0) {                     \
                for (int k = 0; k < PTL_VLANES(S); k++) {                                 \
                    o[i + k] = ptl_f_to_half(a[i + k]);                                   \
                }                                                                         \
                continue;                                                                 \
            }                                                                             \
            F16C_STORE_HALF_##S(o + i, F16C_TO_HALF_##S(v));                              \
        }                                                                                 \
        for (; i < n; i++) {                                                              \
            o[i] = ptl_f_to_half(a[i]);                                                   \
        }                                                                                 \
    }                                                                                     \
    F16C_ATTR_##S static void                                                             \
    float_from_half_##S(float *o, const ptl_half *a, int64_t n)                           \
    {                                                                                     \
        int64_t i = 0;                                                                    \
        for (; i + PTL_VLANES(S) <= n; i += PTL_VLANES(S)) {                              \
            F16C_H_##S h;                                                                 \
            memcpy(&h, a + i, sizeof h);                                                  \
            PTL_VT(S) v = F16C_TO_FLOAT_##S(h);                                           \
            if (PTL_VBITS(S, PTL_VCMP(S, v, v, _CMP_UNORD_Q)) != 0) {                     \
                for (int k = 0; k < PTL_VLANES(S); k++) {                                 \
                    o[i + k] = ptl_half_to_f(a[i + k]);                                   \
                }                                                                         \
                continue;                                                                 \
            }                                                                             \
            PTL_VSTOREF(S, o + i, v);                                                     \
        }                                                                                 \
        for (; i < n; i++) {                                                              \
            o[i] = ptl_half_to_f(a[i]);                                                   \
        }                                                                                 \
    }
DEFINE_F16C_LOOPS(ps)
DEFINE_F16C_LOOPS(ps512)
#undef DEFINE_F16C_LOOPS
#undef F16C_ATTR_ps
#undef F16C_ATTR_ps512
#undef F16C_H_ps
#undef F16C_H_ps512
#undef F16C_TO_HALF_ps
#undef F16C_TO_HALF_ps512
#undef F16C_TO_FLOAT_ps
#undef F16C_TO_FLOAT_ps512
#undef F16C_STORE_HALF_ps
#undef F16C_STORE_HALF_ps512

/* float64 <-> float16 go through float32 as the table's loops do (PyTorch's Half is made
 * from a float), 8 values a block: two vcvtpd2ps and one vcvtps2ph, or one vcvtph2ps and two
 * vcvtps2pd.  A block holding a NaN is redone one by one, as in the float32 loops. */
__attribute__((target("avx2,f16c"))) static void
half_from_double_ps(ptl_half *o, const double *a, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_set_m128(_mm256_cvtpd_ps(_mm256_loadu_pd(a + i + 4)),
                                   _mm256_cvtpd_ps(_mm256_loadu_pd(a + i)));
        if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0) {
            for (int k = 0; k < 8; k++) {
                o[i + k] = ptl_f_to_half((float)a[i + k]);
            }
            continue;
        }
        _mm_storeu_si128((__m128i *)(o + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
    for (; i < n; i++) {
        o[i] = ptl_f_to_half((float)a[i]);
    }
}

/* the same, 16 values a block with AVX-512 (1e6 float64 -> float16: 117 -> 103 us in a C
 * loop, one thread) */
PTL_AVX512 static void
half_from_double_ps512(ptl_half *o, const double *a, int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_insertf32x8(
            _mm512_castps256_ps512(_mm512_cvtpd_ps(_mm512_loadu_pd(a + i))),
            _mm512_cvtpd_ps(_mm512_loadu_pd(a + i + 8)), 1);
        if (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) != 0) {
            for (int k = 0; k < 16; k++) {
                o[i + k] = ptl_f_to_half((float)a[i + k]);
            }
            continue;
        }
        _mm256_storeu_si256((__m256i *)(o + i), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
    for (; i < n; i++) {
        o[i] = ptl_f_to_half((float)a[i]);
    }
}

__attribute__((target("avx2,f16c"))) static void
double_from_half_ps(double *o, const ptl_half *a, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(a + i)));
        if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0) {
            for (int k = 0; k < 8; k++) {
                o[i + k] = (double)ptl_half_to_f(a[i + k]);
            }
            continue;
        }
        _mm256_storeu_pd(o + i, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
        _mm256_storeu_pd(o + i + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    }
    for (; i < n; i++) {
        o[i] = (double)ptl_half_to_f(a[i]);
    }
}

#endif

#define DEFINE_HALF_CONV(NAME, DT, ST, ONE, F16C)                                         \
    PTL_LOOP_CLONES static void                                                           \
    NAME(char **d, const int64_t *s, int64_t n, const void *extra)                         \
    {                                                                                     \
        (void)extra;                                                                      \
        if (s[0] == sizeof(DT) && s[1] == sizeof(ST)) {                                   \
            DT *o = (DT *)d[0];                                                           \
            const ST *a = (const ST *)d[1];                                               \
            F16C;                                                                         \
            for (int64_t i = 0; i < n; i++) {                                             \
                o[i] = ONE(a[i]);                                                         \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                 \
            *(DT *)(d[0] + i * s[0]) = ONE(*(const ST *)(d[1] + i * s[1]));               \
        }                                                                                 \
    }
#ifdef HAVE_F16C_LOOPS
#define TRY_F16C(NAME)                                                                    \
    if (ptl_cpu_has_f16c()) {                                                     \
        (ptl_cpu_capability() >= PTL_CPU_AVX512 ? NAME##_ps512 : NAME##_ps)(o, a, n);      \
        return;                                                                           \
    }
#define TRY_F16C_PS(NAME)                                                                 \
    if (ptl_cpu_has_f16c()) {                                                     \
        NAME##_ps(o, a, n);                                                               \
        return;                                                                           \
    }
#else
#define TRY_F16C(CALL)
#define TRY_F16C_PS(CALL)
#endif
#define HALF_FROM_DOUBLE(X) ptl_f_to_half((float)(X))
#define DOUBLE_FROM_HALF(X) ((double)ptl_half_to_f(X))
DEFINE_HALF_CONV(half_from_float, ptl_half, float, ptl_f_to_half,
                 TRY_F16C(half_from_float))
DEFINE_HALF_CONV(float_from_half, float, ptl_half, ptl_half_to_f,
                 TRY_F16C(float_from_half))
DEFINE_HALF_CONV(half_from_double, ptl_half, double, HALF_FROM_DOUBLE,
                 TRY_F16C(half_from_double))
DEFINE_HALF_CONV(double_from_half, double, ptl_half, DOUBLE_FROM_HALF,
                 TRY_F16C_PS(double_from_half))
#undef HALF_FROM_DOUBLE
#undef DOUBLE_FROM_HALF
#undef TRY_F16C_PS
#undef TRY_F16C
#undef DEFINE_HALF_CONV

/* Note [Vectorized casts]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * The table's loops compile for the baseline x86-64, where gcc keeps the casts of training
 * scalar: float32 -> int64 / int32 (a.long(), labels), int64 / uint8 / bool -> float32
 * (labels, images, masks) and float32 <-> float64 ran at 0.25-0.7x PyTorch's speed;
 * float32 <-> bfloat16 had an AVX2 clone only.  Their
 * contiguous runs take the same formula (CONV_ONE) compiled again for AVX2 and for AVX-512,
 * chosen by ptl_cpu_capability(); gcc vectorizes it there (AVX-512 DQ has the float <-> int64
 * conversions, AVX2 has not: Note [AVX2 casts into int64]).  The formula is the same C
 * expression with its range checks (float32 -> int32: an equivalent one, F4_TO_I4), so every
 * value converts to the same bits at every width: out of range and NaN still give INT64_MIN /
 * INT32_MIN, PyTorch's results on x86.  Strided runs keep the table's loop.  Every other pair of real dtypes (but float16 <->
 * float32 / float64: Note [Half-precision conversions]) is listed too: a sweep of all pairs
 * found 40 of them at 0.14-0.5x PyTorch's speed (float32 -> int8, the small integers ->
 * bfloat16, int64 -> bool, float16 -> the integers); from float32 and bfloat16 into the
 * integers of 32 bits and less they take F4_TO_I4's check (F4_TO_INT). */
#ifdef PTL_HAVE_AVX2_KERNELS
#define DEFINE_VEC_CONV_ISA(DT, DTAG, ST, STAG, F, ISA, ATTR)                             \
    ATTR static void                                                                      \
    vconv_##DTAG##_##STAG##_##ISA(DT *o, const ST *a, int64_t n)                          \
    {                                                                                     \
        for (int64_t i = 0; i < n; i++) {                                                 \
            o[i] = F(DTAG, STAG, a[i]);                                                   \
        }                                                                                 \
    }
/* the pair's AVX-512 loop and its contiguous dispatch, AVX2's loop being AVX2_LOOP */
#define DEFINE_VEC_CONV_WITH(DT, DTAG, ST, STAG, F, AVX2_LOOP)                            \
    DEFINE_VEC_CONV_ISA(DT, DTAG, ST, STAG, F, avx512, PTL_AVX512)                        \
    static void                                                                           \
    vconv_##DTAG##_##STAG(char **d, const int64_t *s, int64_t n, const void *extra)       \
    {                                                                                     \
        PtlCpuCapability cap = ptl_cpu_capability();                                      \
        if (s[0] != (int64_t)sizeof(DT) || s[1] != (int64_t)sizeof(ST) ||                 \
            cap == PTL_CPU_DEFAULT) {                                                     \
            conv_##DTAG##_##STAG(d, s, n, extra);                                         \
            return;                                                                       \
        }                                                                                 \
        (cap >= PTL_CPU_AVX512 ? vconv_##DTAG##_##STAG##_avx512 : AVX2_LOOP)(             \
            (DT *)d[0], (const ST *)d[1], n);                                             \
    }
#define DEFINE_VEC_CONV(DT, DTAG, ST, STAG, F)                                            \
    DEFINE_VEC_CONV_ISA(DT, DTAG, ST, STAG, F, avx2, PTL_AVX2)                            \
    DEFINE_VEC_CONV_WITH(DT, DTAG, ST, STAG, F, vconv_##DTAG##_##STAG##_avx2)
/* float32 -> int32 with the range check in float: x > -2^31 - 1 in double is x >= -2^31 for
 * a float (the float below -2^31 is -2^31 - 256), and both truncate the same value, so it is
 * CONV_ONE's result without a widening to double of every value (1.8x PyTorch's time) */
#define F4_TO_I4(DTAG, STAG, X) ((X) >= -0x1p31f && (X) < 0x1p31f ? (int32_t)(X) : INT32_MIN)
/* float32 and bfloat16 into the integers of 32 bits and less: F4_TO_I4, then wrapped as
 * CONV_ONE's int32 (float32 -> int8 and bfloat16 -> int32 through double ran at 0.35x) */
#define AS_F_f4(X) (X)
#define AS_F_bf(X) ptl_bf16_to_f(X)
#define F4_TO_INT(DTAG, STAG, X) ISTORE_##DTAG(F4_TO_I4(DTAG, STAG, AS_F_##STAG(X)))
/* the vectorized pairs: destination C type, tag, dtype; source C type, tag, dtype; formula */
#define VEC_CONV_PAIRS(_)                                                                 \
    _(int32_t, i4, INT32, float, f4, FLOAT32, F4_TO_I4)                                   \
    _(float, f4, FLOAT32, int64_t, i8, INT64, CONV_ONE)                                   \
    _(float, f4, FLOAT32, int32_t, i4, INT32, CONV_ONE)                                   \
    _(float, f4, FLOAT32, uint8_t, u1, UINT8, CONV_ONE)                                   \
    _(float, f4, FLOAT32, uint8_t, b1, BOOL, CONV_ONE)                                    \
    _(float, f4, FLOAT32, double, f8, FLOAT64, CONV_ONE)                                  \
    _(double, f8, FLOAT64, float, f4, FLOAT32, CONV_ONE)                                  \
    _(double, f8, FLOAT64, int64_t, i8, INT64, CONV_ONE)                                  \
    _(float, f4, FLOAT32, ptl_bf16, bf, BFLOAT16, CONV_ONE)                               \
    _(double, f8, FLOAT64, ptl_bf16, bf, BFLOAT16, CONV_ONE)                              \
    _(int8_t, i1, INT8, float, f4, FLOAT32, F4_TO_INT)                                    \
    _(int16_t, i2, INT16, float, f4, FLOAT32, F4_TO_INT)                                  \
    _(uint8_t, u1, UINT8, float, f4, FLOAT32, F4_TO_INT)                                  \
    _(uint8_t, b1, BOOL, float, f4, FLOAT32, CONV_ONE)                                    \
    _(int8_t, i1, INT8, double, f8, FLOAT64, CONV_ONE)                                    \
    _(int16_t, i2, INT16, double, f8, FLOAT64, CONV_ONE)                                  \
    _(int32_t, i4, INT32, double, f8, FLOAT64, CONV_ONE)                                  \
    _(uint8_t, u1, UINT8, double, f8, FLOAT64, CONV_ONE)                                  \
    _(uint8_t, b1, BOOL, double, f8, FLOAT64, CONV_ONE)                                   \
    _(int8_t, i1, INT8, ptl_bf16, bf, BFLOAT16, F4_TO_INT)                                \
    _(int16_t, i2, INT16, ptl_bf16, bf, BFLOAT16, F4_TO_INT)                              \
    _(int32_t, i4, INT32, ptl_bf16, bf, BFLOAT16, F4_TO_INT)                              \
    _(int64_t, i8, INT64, ptl_bf16, bf, BFLOAT16, CONV_ONE)                               \
    _(uint8_t, u1, UINT8, ptl_bf16, bf, BFLOAT16, F4_TO_INT)                              \
    _(int8_t, i1, INT8, ptl_half, f2, FLOAT16, CONV_ONE)                                  \
    _(int16_t, i2, INT16, ptl_half, f2, FLOAT16, CONV_ONE)                                \
    _(int32_t, i4, INT32, ptl_half, f2, FLOAT16, CONV_ONE)                                \
    _(int64_t, i8, INT64, ptl_half, f2, FLOAT16, CONV_ONE)                                \
    _(uint8_t, u1, UINT8, ptl_half, f2, FLOAT16, CONV_ONE)                                \
    _(uint8_t, b1, BOOL, ptl_half, f2, FLOAT16, CONV_ONE)                                 \
    _(ptl_bf16, bf, BFLOAT16, uint8_t, u1, UINT8, CONV_ONE)                               \
    _(ptl_bf16, bf, BFLOAT16, int8_t, i1, INT8, CONV_ONE)                                 \
    _(ptl_bf16, bf, BFLOAT16, int16_t, i2, INT16, CONV_ONE)                               \
    _(ptl_bf16, bf, BFLOAT16, int32_t, i4, INT32, CONV_ONE)                               \
    _(ptl_bf16, bf, BFLOAT16, int64_t, i8, INT64, CONV_ONE)                               \
    _(ptl_half, f2, FLOAT16, int64_t, i8, INT64, CONV_ONE)                                \
    _(ptl_half, f2, FLOAT16, int32_t, i4, INT32, CONV_ONE)                                \
    _(uint8_t, b1, BOOL, int64_t, i8, INT64, CONV_ONE)                                    \
    _(uint8_t, b1, BOOL, uint8_t, u1, UINT8, CONV_ONE)                                    \
    _(uint8_t, b1, BOOL, int8_t, i1, INT8, CONV_ONE)                                      \
    _(int8_t, i1, INT8, uint8_t, b1, BOOL, CONV_ONE)                                      \
    _(ptl_half, f2, FLOAT16, ptl_bf16, bf, BFLOAT16, CONV_ONE)                            \
    _(uint8_t, b1, BOOL, int16_t, i2, INT16, CONV_ONE)                                    \
    _(uint8_t, b1, BOOL, int32_t, i4, INT32, CONV_ONE)                                    \
    _(uint8_t, b1, BOOL, ptl_bf16, bf, BFLOAT16, CONV_ONE)                                \
    _(uint8_t, u1, UINT8, uint8_t, b1, BOOL, CONV_ONE)                                    \
    _(uint8_t, u1, UINT8, int8_t, i1, INT8, CONV_ONE)                                     \
    _(uint8_t, u1, UINT8, int16_t, i2, INT16, CONV_ONE)                                   \
    _(uint8_t, u1, UINT8, int32_t, i4, INT32, CONV_ONE)                                   \
    _(uint8_t, u1, UINT8, int64_t, i8, INT64, CONV_ONE)                                   \
    _(int8_t, i1, INT8, uint8_t, u1, UINT8, CONV_ONE)                                     \
    _(int8_t, i1, INT8, int16_t, i2, INT16, CONV_ONE)                                     \
    _(int8_t, i1, INT8, int32_t, i4, INT32, CONV_ONE)                                     \
    _(int8_t, i1, INT8, int64_t, i8, INT64, CONV_ONE)                                     \
    _(int16_t, i2, INT16, uint8_t, b1, BOOL, CONV_ONE)                                    \
    _(int16_t, i2, INT16, uint8_t, u1, UINT8, CONV_ONE)                                   \
    _(int16_t, i2, INT16, int8_t, i1, INT8, CONV_ONE)                                     \
    _(int16_t, i2, INT16, int32_t, i4, INT32, CONV_ONE)                                   \
    _(int16_t, i2, INT16, int64_t, i8, INT64, CONV_ONE)                                   \
    _(int32_t, i4, INT32, uint8_t, b1, BOOL, CONV_ONE)                                    \
    _(int32_t, i4, INT32, uint8_t, u1, UINT8, CONV_ONE)                                   \
    _(int32_t, i4, INT32, int8_t, i1, INT8, CONV_ONE)                                     \
    _(int32_t, i4, INT32, int16_t, i2, INT16, CONV_ONE)                                   \
    _(int32_t, i4, INT32, int64_t, i8, INT64, CONV_ONE)                                   \
    _(int64_t, i8, INT64, uint8_t, b1, BOOL, CONV_ONE)                                    \
    _(int64_t, i8, INT64, uint8_t, u1, UINT8, CONV_ONE)                                   \
    _(int64_t, i8, INT64, int8_t, i1, INT8, CONV_ONE)                                     \
    _(int64_t, i8, INT64, int16_t, i2, INT16, CONV_ONE)                                   \
    _(int64_t, i8, INT64, int32_t, i4, INT32, CONV_ONE)                                   \
    _(ptl_half, f2, FLOAT16, uint8_t, b1, BOOL, CONV_ONE)                                 \
    _(ptl_half, f2, FLOAT16, uint8_t, u1, UINT8, CONV_ONE)                                \
    _(ptl_half, f2, FLOAT16, int8_t, i1, INT8, CONV_ONE)                                  \
    _(ptl_half, f2, FLOAT16, int16_t, i2, INT16, CONV_ONE)                                \
    _(ptl_bf16, bf, BFLOAT16, uint8_t, b1, BOOL, CONV_ONE)                                \
    _(ptl_bf16, bf, BFLOAT16, ptl_half, f2, FLOAT16, CONV_ONE)                            \
    _(float, f4, FLOAT32, int8_t, i1, INT8, CONV_ONE)                                     \
    _(float, f4, FLOAT32, int16_t, i2, INT16, CONV_ONE)                                   \
    _(double, f8, FLOAT64, uint8_t, b1, BOOL, CONV_ONE)                                   \
    _(double, f8, FLOAT64, uint8_t, u1, UINT8, CONV_ONE)                                  \
    _(double, f8, FLOAT64, int8_t, i1, INT8, CONV_ONE)                                    \
    _(double, f8, FLOAT64, int16_t, i2, INT16, CONV_ONE)                                  \
    _(double, f8, FLOAT64, int32_t, i4, INT32, CONV_ONE)

#define STAMP_VEC_CONV(DT, DTAG, DE, ST, STAG, SE, F) DEFINE_VEC_CONV(DT, DTAG, ST, STAG, F)
VEC_CONV_PAIRS(STAMP_VEC_CONV)
#undef STAMP_VEC_CONV
#undef DEFINE_VEC_CONV

/* Note [AVX2 casts into int64]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * AVX2 has no conversion between floating point and int64 lanes (AVX-512 DQ's vcvttpd2qq),
 * so gcc keeps the AVX2 clone of float32 / float64 -> int64 scalar: a.long() of 1024 x 1024
 * float32 ran at 0.6-0.75x PyTorch's time on a Zen 3, float64 at 0.6-0.8x.  These loops
 * truncate four doubles (float32 widens exactly) and read the integers out of the mantissa:
 * t + 1.5 * 2^52 for an integral |t| < 2^51 is exact, and its bits minus those of 1.5 * 2^52
 * are t.  A block of four with a value outside that range or a NaN takes CONV_ONE lane by
 * lane, as does the tail, so every value gives the bits of the other clones. */
#define I64_MAGIC 0x1.8p52     /* 2^52 + 2^51: its mantissa's last bit weighs 1 */
#define I64_EXACT_BELOW 0x1p51 /* |t| below this: t + I64_MAGIC is exact */

/* (int64) trunc(x) of four doubles, all of magnitude below I64_EXACT_BELOW */
PTL_AVX2 static inline __m256i
i64_from_pd_in_range(__m256d x)
{
    const __m256d magic = _mm256_set1_pd(I64_MAGIC);
    __m256d t = _mm256_round_pd(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    return _mm256_sub_epi64(_mm256_castpd_si256(_mm256_add_pd(t, magic)),
                            _mm256_castpd_si256(magic));
}

/* o[i] = CONV_ONE(i8, STAG, a[i]) for i < n, LOAD4 reading four values as doubles; a block
 * with a lane of magnitude I64_EXACT_BELOW or more (or NaN: the compare is false) lane by
 * lane */
#define DEFINE_I64_FROM_AVX2(STAG, ST, LOAD4)                                             \
    PTL_AVX2 static void                                                                  \
    i64_from_##STAG##_avx2(int64_t *o, const ST *a, int64_t n)                            \
    {                                                                                     \
        const __m256d sign = _mm256_set1_pd(-0.0), lim = _mm256_set1_pd(I64_EXACT_BELOW); \
        int64_t i = 0;                                                                    \
        for (; i + 4 <= n; i += 4) {                                                      \
            __m256d x = LOAD4(a + i);                                                     \
            __m256d ok = _mm256_cmp_pd(_mm256_andnot_pd(sign, x), lim, _CMP_LT_OQ);       \
            if (_mm256_movemask_pd(ok) == 0xf) {                                          \
                _mm256_storeu_si256((__m256i *)(o + i), i64_from_pd_in_range(x));         \
                continue;                                                                 \
            }                                                                             \
            for (int k = 0; k < 4; k++) {                                                 \
                o[i + k] = CONV_ONE(i8, STAG, a[i + k]);                                  \
            }                                                                             \
        }                                                                                 \
        for (; i < n; i++) {                                                              \
            o[i] = CONV_ONE(i8, STAG, a[i]);                                              \
        }                                                                                 \
    }
#define LOAD4_F4_AS_PD(P) _mm256_cvtps_pd(_mm_loadu_ps(P))
DEFINE_I64_FROM_AVX2(f8, double, _mm256_loadu_pd)
DEFINE_I64_FROM_AVX2(f4, float, LOAD4_F4_AS_PD)
#undef LOAD4_F4_AS_PD
#undef DEFINE_I64_FROM_AVX2
#undef I64_MAGIC
#undef I64_EXACT_BELOW

#include "copy_bf16.h"

/* the pairs whose AVX2 loop is written by hand (Note [AVX2 casts into int64], copy_bf16.h) */
#define VEC_CONV_HAND_PAIRS(_)                                                            \
    _(int64_t, i8, INT64, float, f4, FLOAT32, CONV_ONE, i64_from_f4_avx2)                 \
    _(int64_t, i8, INT64, double, f8, FLOAT64, CONV_ONE, i64_from_f8_avx2)               \
    _(ptl_bf16, bf, BFLOAT16, float, f4, FLOAT32, CONV_ONE, bf16_from_f4_avx2)            \
    _(ptl_bf16, bf, BFLOAT16, double, f8, FLOAT64, CONV_ONE, bf16_from_f8_avx2)
#define STAMP_HAND_CONV(DT, DTAG, DE, ST, STAG, SE, F, AVX2_LOOP)                         \
    DEFINE_VEC_CONV_WITH(DT, DTAG, ST, STAG, F, AVX2_LOOP)
VEC_CONV_HAND_PAIRS(STAMP_HAND_CONV)
#undef STAMP_HAND_CONV
#undef DEFINE_VEC_CONV_WITH
#undef F4_TO_I4
#undef AS_F_f4
#undef AS_F_bf
#undef F4_TO_INT
#undef DEFINE_VEC_CONV_ISA

static const struct {
    PtlDtype dt, st;
    PtlLoop loop;
} vec_convs[] = {
#define VEC_CONV_ROW(DT, DTAG, DE, ST, STAG, SE, F)                                       \
    {PTL_DTYPE_##DE, PTL_DTYPE_##SE, vconv_##DTAG##_##STAG},
#define HAND_CONV_ROW(DT, DTAG, DE, ST, STAG, SE, F, AVX2_LOOP)                           \
    VEC_CONV_ROW(DT, DTAG, DE, ST, STAG, SE, F)
    VEC_CONV_PAIRS(VEC_CONV_ROW)
    VEC_CONV_HAND_PAIRS(HAND_CONV_ROW)
#undef HAND_CONV_ROW
#undef VEC_CONV_ROW
};
#undef VEC_CONV_PAIRS
#undef VEC_CONV_HAND_PAIRS
#endif

/* The conversion loop from st to dt: the table, except complex -> bool (both parts count),
 * the half-precision casts (Note [Half-precision conversions]) and the vectorized ones
 * (Note [Vectorized casts]) */
static PtlLoop
conv_loop(PtlDtype dt, PtlDtype st)
{
    if (st == PTL_DTYPE_FLOAT32 && dt == PTL_DTYPE_FLOAT16) {
        return half_from_float;
    }
    if (st == PTL_DTYPE_FLOAT16 && dt == PTL_DTYPE_FLOAT32) {
        return float_from_half;
    }
    if (st == PTL_DTYPE_FLOAT64 && dt == PTL_DTYPE_FLOAT16) {
        return half_from_double;
    }
    if (st == PTL_DTYPE_FLOAT16 && dt == PTL_DTYPE_FLOAT64) {
        return double_from_half;
    }
#ifdef PTL_HAVE_AVX2_KERNELS
    for (size_t k = 0; k < sizeof(vec_convs) / sizeof(vec_convs[0]); k++) {
        if (vec_convs[k].dt == dt && vec_convs[k].st == st) {
            return vec_convs[k].loop;
        }
    }
#endif
    if (dt == PTL_DTYPE_BOOL && st == PTL_DTYPE_COMPLEX64) {
        return conv_b1_z_ptl_complex64;
    }
    if (dt == PTL_DTYPE_BOOL && st == PTL_DTYPE_COMPLEX128) {
        return conv_b1_z_ptl_complex128;
    }
    return conv_loops[dt][st];
}

PtlLoop
ptl_cast_loop(PtlDtype dt, PtlDtype st)
{
    return conv_loop(dt, st);
}

#define COPY_ROW_INLINE 1024

#ifdef PTL_HAVE_AVX2_KERNELS
/* A contiguous run of 32 to COPY_ROW_INLINE bytes by 32-byte moves, the last one ending at
 * the run's end (overlapping the one before): a copy of short rows (cat of column chunks:
 * rows of 400 bytes) had spent a fifth of its time calling memcpy once per row. */
static PTL_AVX2 void
copy_row_avx2(char *d, const char *s, size_t n)
{
    for (size_t k = 0; k + 32 < n; k += 32) {
        _mm256_storeu_si256((__m256i *)(d + k), _mm256_loadu_si256((const __m256i *)(s + k)));
    }
    _mm256_storeu_si256((__m256i *)(d + n - 32),
                        _mm256_loadu_si256((const __m256i *)(s + n - 32)));
}
#endif

static void
memcpy_loop(char **d, const int64_t *s, int64_t n, const void *extra)
{
    size_t item = *(const size_t *)extra;
    if (s[0] == (int64_t)item && s[1] == (int64_t)item) {
        size_t bytes = (size_t)n * item;
#ifdef PTL_HAVE_AVX2_KERNELS
        if (bytes >= 32 && bytes <= COPY_ROW_INLINE && ptl_cpu_capability() >= PTL_CPU_AVX2) {
            copy_row_avx2(d[0], d[1], bytes);
            return;
        }
#endif
        memcpy(d[0], d[1], bytes);
        return;
    }
    switch (item) {
    case 1:
        copy_strided_1(d[0], d[1], s[0], s[1], n);
        return;
    case 2:
        copy_strided_2(d[0], d[1], s[0], s[1], n);
        return;
    case 4:
        copy_strided_4(d[0], d[1], s[0], s[1], n);
        return;
    case 8:
        copy_strided_8(d[0], d[1], s[0], s[1], n);
        return;
    case 16:
        copy_strided_16(d[0], d[1], s[0], s[1], n);
        return;
    default:
        for (int64_t i = 0; i < n; i++) {
            memcpy(d[0] + i * s[0], d[1] + i * s[1], item);
        }
    }
}

/* Note [Transposed copies]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * A copy whose destination runs along one dim and whose source runs along another
 * (`x.t().contiguous()`, attention's head permutes, the layout changes of convolutions)
 * walked the source a cache line per element: 7-8 ns an element on a 1024 x 1024 float32
 * transpose, 3.5x PyTorch's time.  Such copies go through tiles instead: TILE_I values of
 * the destination's run (TILE_I source lines) by TILE_J of the source's.  The source lines
 * of a tile stay in L1 while the tile is written out, so each is loaded once; TILE_I is 8
 * because at a power-of-two stride every one of those lines falls in the same set of an
 * 8-way L1.  Work units are (outer index, band of TILE_J along the source's run), split over
 * the threads; the bytes moved are the same, so the result is too. */
#define TILE_I 8
#define TILE_J 64

typedef struct TransposeJob {
    const PtlTensorIter *it;
    int k;                    /* the iteration dim the source is contiguous along */
    int64_t bands;            /* bands of TILE_J along dim k */
} TransposeJob;

#define DEFINE_TRANSPOSE_TILES(T)                                                         \
    static void                                                                           \
    transpose_tiles_##T(char *d, const char *s, int64_t n0, int64_t j0, int64_t j1,       \
                        int64_t dk, int64_t s0)                                           \
    {                                                                                     \
        for (int64_t i0 = 0; i0 < n0; i0 += TILE_I) {                                     \
            int64_t i1 = i0 + TILE_I < n0 ? i0 + TILE_I : n0;                             \
            for (int64_t j = j0; j < j1; j++) {                                           \
                T *o = (T *)(d + j * dk);                                                 \
                const char *a = s + j * (int64_t)sizeof(T);                               \
                for (int64_t i = i0; i < i1; i++) {                                       \
                    o[i] = *(const T *)(a + i * s0);                                      \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
    }
DEFINE_TRANSPOSE_TILES(uint8_t)
DEFINE_TRANSPOSE_TILES(uint16_t)
DEFINE_TRANSPOSE_TILES(uint32_t)
DEFINE_TRANSPOSE_TILES(uint64_t)
#undef DEFINE_TRANSPOSE_TILES

#ifdef PTL_HAVE_TRANSPOSE_BLOCK
/* transpose_tiles_uint32_t's whole 8 x 8 blocks as register transposes (same bytes); the
 * rows and columns past them go through the scalar tiles.  Returns the rows done (i). */
__attribute__((target("avx2"))) static int64_t
transpose_blocks_4_avx2(char *d, const char *s, int64_t n0, int64_t j0, int64_t j1, int64_t dk,
                        int64_t s0)
{
    int64_t i0 = 0, jb = j0 + (j1 - j0) / 8 * 8;
    for (; i0 + 8 <= n0; i0 += 8) {
        for (int64_t j = j0; j < jb; j += 8) {
            ptl_transpose_block_4(d + j * dk + i0 * 4, dk, s + j * 4 + i0 * s0, s0);
        }
        if (jb < j1) {
            transpose_tiles_uint32_t(d + i0 * 4, s + i0 * s0, 8, jb, j1, dk, s0);
        }
    }
    return i0;
}
#endif

static int
transpose_units(void *ctx, int64_t b, int64_t e)
{
    const TransposeJob *job = ctx;
    const PtlTensorIter *it = job->it;
    int k = job->k;
    int64_t item = it->strides[0][0], n0 = it->shape[0], nk = it->shape[k];
    for (int64_t u = b; u < e; u++) {
        int64_t band = u % job->bands, outer = u / job->bands;
        char *d = it->data[0];
        const char *s = it->data[1];
        for (int dim = 1; dim < it->ndim; dim++) {   /* the outer index over dims != 0, k */
            if (dim == k) {
                continue;
            }
            int64_t idx = outer % it->shape[dim];
            outer /= it->shape[dim];
            d += idx * it->strides[0][dim];
            s += idx * it->strides[1][dim];
        }
        int64_t j0 = band * TILE_J, j1 = j0 + TILE_J < nk ? j0 + TILE_J : nk;
        int64_t dk = it->strides[0][k], s0 = it->strides[1][0];
        switch (item) {
        case 1:
            transpose_tiles_uint8_t(d, s, n0, j0, j1, dk, s0);
            break;
        case 2:
            transpose_tiles_uint16_t(d, s, n0, j0, j1, dk, s0);
            break;
        case 4: {
            int64_t done = 0;
#ifdef PTL_HAVE_TRANSPOSE_BLOCK
            if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
                done = transpose_blocks_4_avx2(d, s, n0, j0, j1, dk, s0);
            }
#endif
            transpose_tiles_uint32_t(d + done * 4, s + done * s0, n0 - done, j0, j1, dk, s0);
            break;
        }
        default:
            transpose_tiles_uint64_t(d, s, n0, j0, j1, dk, s0);
            break;
        }
    }
    return 0;
}

/* A copy between tensors of one dtype: tiles when the source is transposed to the
 * destination (Note [Transposed copies]), else memcpy_loop over the iteration. */
static int
copy_same_dtype(PtlTensorIter *it, size_t item)
{
    int k = 0;
    if (it->ndim >= 2 && it->numel >= TILE_I * TILE_J && (item == 1 || item == 2 || item == 4 ||
                                                      item == 8) &&
        it->strides[0][0] == (int64_t)item && it->strides[1][0] != (int64_t)item &&
        it->strides[1][0] != 0) {
        for (int dim = 1; dim < it->ndim && k == 0; dim++) {
            k = it->strides[1][dim] == (int64_t)item ? dim : 0;
        }
    }
    if (k == 0) {
        return ptl_iter_run_direct(it, memcpy_loop, &item);
    }
    TransposeJob job = {it, k, (it->shape[k] + TILE_J - 1) / TILE_J};
    int64_t units = it->numel / (it->shape[0] * it->shape[k]) * job.bands;
    int64_t grain = PTL_GRAIN_SIZE / (it->shape[0] * TILE_J) + 1;
    void *tok = ptl_nogil_begin();
    int rc = ptl_parallel_for(0, units, grain, transpose_units, &job);
    ptl_nogil_end(tok);
    return rc;
}
#undef TILE_I
#undef TILE_J

int
ptl_copy_iter_build(PtlTensorIter *it, PtlTensorImpl *dst, PtlTensorImpl *src)
{
    PtlIterConfig cfg = ptl_iter_config();
    cfg.out = dst;
    cfg.is_inplace = 1;
    cfg.ninputs = 1;
    cfg.inputs[0] = src;
    cfg.no_promote = 1;
    cfg.out_dtype = dst->dtype;
    return ptl_iter_build(it, &cfg);
}

int
ptl_copy_into(PtlTensorImpl *dst, PtlTensorImpl *src)
{
    PtlTensorIter it;
    if (src->device.type == PTL_DEVICE_META && dst->device.type != PTL_DEVICE_META) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "Cannot copy out of meta tensor; no data!");
    }
    if (dst->device.type == PTL_DEVICE_META) {
        /* anything may be copied into a meta tensor: the shapes must broadcast, and no
         * byte moves (Note [Meta tensors] in c10/device.h) */
        int nd = 0;
        int64_t shape[PTL_MAX_DIMS];
        char b1[128], b2[128];
        if (ptl_broadcast_shapes(dst->dim, dst->sizes, src->dim, src->sizes, &nd, shape) < 0) {
            return -1;
        }
        if (nd != dst->dim || memcmp(shape, dst->sizes, sizeof(int64_t) * (size_t)nd) != 0) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "output with shape %s doesn't match the broadcast shape %s",
                                 ptl_format_sizes(b1, sizeof(b1), dst->dim, dst->sizes),
                                 ptl_format_sizes(b2, sizeof(b2), nd, shape));
        }
        return 0;
    }
    if (dst->device.type != PTL_DEVICE_CPU || src->device.type != PTL_DEVICE_CPU) {
        /* the CUDA copy_ kernel moves data onto, off and within the device; without one,
         * the dispatcher's "Could not run 'aten::copy_' ... 'CUDA' backend" error */
        PtlIValue st[3] = {ptl_iv_tensor(dst), ptl_iv_tensor(src), ptl_iv_bool(0)};
        if (ptl_dispatcher_redispatch(ptl_op(PTL_OP_copy_), PTL_KEYSET(PTL_KEY_CUDA), st) < 0) {
            return -1;
        }
        ptl_ivalue_release(&st[0]);
        return 0;
    }
    if (dst == src) {
        return 0;
    }
    if (ptl_dtype_is_complex(src->dtype) && !ptl_dtype_is_complex(dst->dtype) &&
        dst->dtype != PTL_DTYPE_BOOL) {
        ptl_warn("Casting complex values to real discards the imaginary part");
    }
    if (ptl_copy_iter_build(&it, dst, src) < 0) {
        return -1;
    }
    size_t item = ptl_dtype_itemsize(dst->dtype);
    int rc = dst->dtype == src->dtype
                 ? copy_same_dtype(&it, item)
                 : ptl_iter_run_direct(&it, conv_loop(dst->dtype, src->dtype), NULL);
    ptl_iter_release(&it);
    /* bytes moved between a conj view and a plain tensor (a caller above the Conjugate key):
     * dst's values must be src's (Note [Conjugate views] in conjugate.c) */
    if (rc == 0 && ptl_tensor_is_conj(dst) != ptl_tensor_is_conj(src) &&
        ptl_dtype_is_complex(dst->dtype) && ptl_dtype_is_complex(src->dtype)) {
        rc = ptl_conj_memory(dst);
    }
    return rc;
}

PtlTensorImpl *
ptl_cast(PtlTensorImpl *t, PtlDtype dtype)
{
    PtlTensorImpl *out = ptl_empty(t->dim, t->sizes, dtype, t->device);
    if (out == NULL) {
        return NULL;
    }
    if (ptl_copy_into(out, t) < 0) {
        ptl_decref(out);
        return NULL;
    }
    return out;
}

PtlTensorImpl *
ptl_contiguous(PtlTensorImpl *t)
{
    if (ptl_tensor_is_contiguous(t)) {
        ptl_incref(t);
        return t;
    }
    return ptl_cast(t, t->dtype);
}

static PtlTensorImpl *
wrapped(PtlDtype dt)
{
    PtlTensorImpl *t = ptl_empty(0, NULL, dt, ptl_device_cpu());
    if (t != NULL) {
        t->flags |= PTL_TF_WRAPPED_NUMBER;
    }
    return t;
}

PtlTensorImpl *
ptl_wrapped_double(double v)
{
    PtlTensorImpl *t = wrapped(PTL_DTYPE_FLOAT64);
    if (t != NULL) {
        *(double *)ptl_tensor_data(t) = v;
    }
    return t;
}

PtlTensorImpl *
ptl_wrapped_complex(double re, double im)
{
    PtlTensorImpl *t = wrapped(PTL_DTYPE_COMPLEX128);
    if (t != NULL) {
        *(ptl_complex128 *)ptl_tensor_data(t) = ptl_cmplx(re, im);
    }
    return t;
}

PtlTensorImpl *
ptl_wrapped_int(int64_t v)
{
    PtlTensorImpl *t = wrapped(PTL_DTYPE_INT64);
    if (t != NULL) {
        *(int64_t *)ptl_tensor_data(t) = v;
    }
    return t;
}

PtlTensorImpl *
ptl_wrapped_bool(int v)
{
    PtlTensorImpl *t = wrapped(PTL_DTYPE_BOOL);
    if (t != NULL) {
        *(uint8_t *)ptl_tensor_data(t) = (uint8_t)(v != 0);
    }
    return t;
}

void
ptl_convert_scalar(char *dst, PtlDtype dt, const char *src, PtlDtype st)
{
    char *d[2] = {dst, (char *)src};
    int64_t s[2] = {0, 0};
    conv_loop(dt, st)(d, s, 1, NULL);
}

void
ptl_store_double(char *p, PtlDtype dtype, double v)
{
    char *d[2] = {p, (char *)&v};
    int64_t s[2] = {0, 0};
    conv_loops[dtype][PTL_DTYPE_FLOAT64](d, s, 1, NULL);
}

void
ptl_store_int(char *p, PtlDtype dtype, int64_t v)
{
    char *d[2] = {p, (char *)&v};
    int64_t s[2] = {0, 0};
    conv_loops[dtype][PTL_DTYPE_INT64](d, s, 1, NULL);
}

PtlTensorImpl *
ptl_scalar_tensor(double v, PtlDtype dtype, PtlDevice device)
{
    PtlTensorImpl *t = ptl_empty(0, NULL, dtype, device);
    if (t != NULL) {
        ptl_store_double(ptl_tensor_data(t), dtype, v);
    }
    return t;
}

/* Converts t's first element into *out, of type dtype. */
static void
item_as(PtlTensorImpl *t, PtlDtype dtype, void *out)
{
    char *d[2] = {(char *)out, ptl_tensor_data(t)};
    int64_t s[2] = {0, 0};
    conv_loop(dtype, t->dtype)(d, s, 1, NULL);
}

int
ptl_item_readable(const PtlTensorImpl *t)
{
    return t->device.type == PTL_DEVICE_CPU;
}

double
ptl_item_double(PtlTensorImpl *t)
{
    double v = 0;
    item_as(t, PTL_DTYPE_FLOAT64, &v);
    return v;
}

int64_t
ptl_item_int(PtlTensorImpl *t)
{
    int64_t v = 0;
    item_as(t, PTL_DTYPE_INT64, &v);
    return v;
}

/* ---- fill ---- */

/* 0 when the Scalar v fits dt, else -1 with PyTorch's overflow error (c10's
 * checked_convert: unsigned types also take -max..-1, which wrap; a complex with a nonzero
 * imaginary part fits no real dtype). */
int
ptl_scalar_check_range(const PtlIValue *v, PtlDtype dt)
{
    /* a complex: the type PyTorch's check names (fill_ of one half element names double
     * there, of more c10::Half: the general case here); bool takes any complex (true when
     * either part is nonzero) */
    static const char *const c_names[PTL_DTYPE_COUNT] = {
        [PTL_DTYPE_UINT8] = "uint8_t", [PTL_DTYPE_INT8] = "int8_t", [PTL_DTYPE_INT16] = "int16_t",
        [PTL_DTYPE_INT32] = "int", [PTL_DTYPE_INT64] = "int64_t",
        [PTL_DTYPE_FLOAT16] = "c10::Half", [PTL_DTYPE_BFLOAT16] = "c10::BFloat16",
        [PTL_DTYPE_FLOAT32] = "float",
        [PTL_DTYPE_FLOAT64] = "double",
    };
    if (v->tag == PTL_IV_COMPLEX && dt == PTL_DTYPE_COMPLEX64 &&
        ((isfinite(v->u.z.re) && fabs(v->u.z.re) > 3.4028234663852886e38) ||
         (isfinite(v->u.z.im) && fabs(v->u.z.im) > 3.4028234663852886e38))) {
        return ptl_error_set(PTL_ERR_RUNTIME, "value cannot be converted to type "
                             "c10::complex<float> without overflow");
    }
    if (ptl_iv_imag(v) != 0 && c_names[dt] != NULL) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "value cannot be converted to type %s without overflow",
                             c_names[dt]);
    }
    if (v->tag == PTL_IV_COMPLEX && ptl_dtype_is_complex(dt)) {
        return 0;
    }
    static const struct {
        const char *name;
        double lo, hi;
    } range[PTL_DTYPE_COUNT] = {
        [PTL_DTYPE_UINT8] = {"uint8_t", -255.0, 255.0},
        [PTL_DTYPE_INT8] = {"int8_t", -128.0, 127.0},
        [PTL_DTYPE_INT16] = {"int16_t", -32768.0, 32767.0},
        [PTL_DTYPE_INT32] = {"int", -2147483648.0, 2147483647.0},
        [PTL_DTYPE_INT64] = {"int64_t", -9223372036854775808.0, 9223372036854775807.0},
        [PTL_DTYPE_FLOAT16] = {"c10::Half", -65504.0, 65504.0},
        [PTL_DTYPE_BFLOAT16] = {"c10::BFloat16", -3.3895313892515355e38, 3.3895313892515355e38},
        [PTL_DTYPE_FLOAT32] = {"float", -3.4028234663852886e38, 3.4028234663852886e38},
    };
    double x = ptl_iv_to_double(v);
    if (range[dt].name == NULL || v->tag == PTL_IV_BOOL ||
        (ptl_dtype_is_floating(dt) && !isfinite(x))) {
        return 0;
    }
    if (!(x >= range[dt].lo && x <= range[dt].hi)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "value cannot be converted to type %s without overflow",
                             range[dt].name);
    }
    return 0;
}


void
ptl_store_scalar(char *p, PtlDtype dtype, const PtlIValue *v)
{
    if (v->tag == PTL_IV_DOUBLE) {
        ptl_store_double(p, dtype, v->u.d);
    }
    else if (v->tag == PTL_IV_COMPLEX) {   /* a real dtype keeps the real part, bool both */
        ptl_complex128 z = ptl_cmplx(v->u.z.re, v->u.z.im);
        ptl_convert_scalar(p, dtype, (const char *)&z, PTL_DTYPE_COMPLEX128);
    }
    else {
        ptl_store_int(p, dtype, ptl_iv_to_int(v));
    }
}

PtlTensorImpl *
ptl_wrapped_scalar(const PtlIValue *v)
{
    switch (v->tag) {
    case PTL_IV_DOUBLE: return ptl_wrapped_double(v->u.d);
    case PTL_IV_BOOL: return ptl_wrapped_bool(v->u.b);
    case PTL_IV_COMPLEX: return ptl_wrapped_complex(v->u.z.re, v->u.z.im);
    default: return ptl_wrapped_int(ptl_iv_to_int(v));
    }
}

/* Copies the one element of src into every element of t.  fill_ and zero_ write one value,
 * so PyTorch lets them write a tensor whose elements overlap (their iterator skips the
 * overlap check): the copy goes to t without its stride-0 repeats.  0 or -1. */
static int
fill_into(PtlTensorImpl *t, PtlTensorImpl *src)
{
    int64_t sizes[PTL_MAX_DIMS];
    int repeats = 0;
    for (int d = 0; d < t->dim; d++) {
        sizes[d] = t->strides[d] == 0 && t->sizes[d] > 1 ? 1 : t->sizes[d];
        repeats |= sizes[d] != t->sizes[d];
    }
    if (!repeats) {
        return ptl_copy_into(t, src);
    }
    PtlTensorImpl *v = ptl_tensor_impl_view(t, t->dim, sizes, t->strides, t->storage_offset);
    if (v == NULL) {
        return -1;
    }
    int rc = ptl_copy_into(v, src);
    ptl_decref(v);
    return rc;
}

int
ptl_fill_scalar(PtlTensorImpl *t, const PtlIValue *value)
{
    char buf[16];
    size_t item = ptl_dtype_itemsize(t->dtype);
    ptl_store_scalar(buf, t->dtype, value);
    PtlTensorImpl *src = ptl_empty(0, NULL, t->dtype, ptl_device_cpu());
    if (src == NULL) {
        return -1;
    }
    memcpy(ptl_tensor_data(src), buf, item);
    int rc = fill_into(t, src);
    ptl_decref(src);
    if (rc == 0) {
        ptl_tensor_bump_version(t);
    }
    return rc;
}

/* ---- kernels ---- */

/* copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!) */
static int
copy__cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    if (ptl_copy_into(self, s[1].u.t) < 0) {
        return -1;
    }
    return ptl_kernel_return_self(s);
}

/* _to_copy(Tensor self, *, ScalarType? dtype=None, ..., Device? device=None, ...,
 * MemoryFormat? memory_format=None): the layout of empty_like (None is preserve_format) */
static int
to_copy_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    PtlDtype dt = s[1].tag == PTL_IV_DTYPE ? s[1].u.dtype : self->dtype;
    PtlDevice dev = s[3].tag == PTL_IV_DEVICE ? s[3].u.device : self->device;
    PtlMemoryFormat f = ptl_iv_memory_format_or(&s[6], PTL_MEMORY_FORMAT_PRESERVE);
    int64_t strides[PTL_MAX_DIMS];
    if (ptl_memory_format_like_strides(self, f, strides) < 0) {
        return -1;
    }
    PtlTensorImpl *out = ptl_empty_strided(self->dim, self->sizes, strides, dt, dev);
    if (out == NULL) {
        return -1;
    }
    if (ptl_copy_into(out, self) < 0) {
        ptl_decref(out);
        return -1;
    }
    s[0] = ptl_iv_tensor(out);
    return 0;
}

PtlStorage *(*ptl_device_pinned_storage_hook)(size_t nbytes);

/* _pin_memory(Tensor self, Device? device=None) -> Tensor: a copy of self in pinned host
 * memory, with self's strides when it is dense and non-overlapping (as PyTorch keeps them),
 * else contiguous.  Tensor.pin_memory checks the accelerator and returns an already pinned
 * tensor itself; this op always copies, and autograd records it (PinMemoryBackward0). */
static int
pin_memory_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *out = NULL;
    int64_t strides[PTL_MAX_DIMS];
    size_t nbytes = 0;
    const int64_t *st = ptl_tensor_impl_dense_strides(self, strides) ? strides : NULL;
    if (ptl_device_pinned_storage_hook == NULL) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Cannot access accelerator device when none is "
                                              "available.");
    }
    if (ptl_storage_nbytes(self->dim, self->sizes, st, 0, ptl_dtype_itemsize(self->dtype),
                           &nbytes) < 0) {
        return -1;
    }
    PtlStorage *storage = ptl_device_pinned_storage_hook(nbytes);
    if (storage == NULL) {
        return -1;
    }
    out = ptl_tensor_impl_new(storage, self->dtype, self->dim, self->sizes, st, 0);
    if (out == NULL || ptl_copy_into(out, self) < 0) {
        ptl_xdecref(out);
        return -1;
    }
    s[0] = ptl_iv_tensor(out);
    return 0;
}

PtlTensorImpl *
ptl_copy_as(PtlTensorImpl *self, PtlMemoryFormat f)
{
    int64_t strides[PTL_MAX_DIMS];
    PtlTensorImpl *out;
    if (ptl_memory_format_like_strides(self, f, strides) < 0) {
        return NULL;
    }
    /* a named format is empty(memory_format=f), preserve empty_strided (their messages) */
    out = f == PTL_MEMORY_FORMAT_PRESERVE
              ? ptl_empty_strided(self->dim, self->sizes, strides, self->dtype, self->device)
              : ptl_empty_format(self->dim, self->sizes, f, self->dtype, self->device);
    if (out != NULL && ptl_copy_into(out, self) < 0) {
        PTL_CLEAR(out);
    }
    return out;
}

/* clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor.  None is PyTorch's
 * preserve_format: a dense non-overlapping input keeps its strides, another its dims' order;
 * any other format gives its strides. */
static int
clone_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlMemoryFormat f = ptl_iv_memory_format_or(&s[1], PTL_MEMORY_FORMAT_PRESERVE);
    PtlTensorImpl *out = ptl_copy_as(s[0].u.t, f);
    if (out == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(out);
    return 0;
}

/* contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format): self when it
 * is contiguous in that format, else a copy that is */
static int
contiguous_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *out;
    PtlMemoryFormat f = ptl_iv_memory_format_or(&s[1], PTL_MEMORY_FORMAT_CONTIGUOUS);
    if (ptl_tensor_impl_is_contiguous_as(self, f)) {
        ptl_incref(self);
        out = self;
    }
    else if (f == PTL_MEMORY_FORMAT_PRESERVE) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "preserve memory format is unsupported by the contiguous operator");
    }
    else if ((out = ptl_copy_as(self, f)) == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(out);
    return 0;
}

/* fill_.Scalar(Tensor(a!) self, Scalar value) / fill_.Tensor(Tensor(a!) self, Tensor value) */
static int
fill__cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    if (op->id == PTL_OP_fill__Tensor) {
        PtlTensorImpl *v = s[1].u.t;
        if (v->dim != 0) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "fill_ only supports 0-dimension value tensor but got tensor "
                                 "with %d dimensions.",
                                 v->dim);
        }
        if (fill_into(self, v) < 0) {
            return -1;
        }
        ptl_tensor_bump_version(self);
    }
    else if (ptl_scalar_check_range(&s[1], self->dtype) < 0 ||
             ptl_fill_scalar(self, &s[1]) < 0) {
        return -1;
    }
    ptl_incref(self);
    s[0] = ptl_iv_tensor(self);
    return 0;
}

/* zero_(Tensor(a!) self) -> Tensor(a!) */
static int
zero__cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlIValue zero = ptl_iv_int(0);
    if (ptl_fill_scalar(s[0].u.t, &zero) < 0) {
        return -1;
    }
    ptl_incref(s[0].u.t);
    return 0;
}

static const PtlKernelReg copy_cpu[] = {
    {PTL_OP_copy_, PTL_KEY_CPU, copy__cpu},
    {PTL_OP__to_copy, PTL_KEY_CPU, to_copy_cpu},
    {PTL_OP_clone, PTL_KEY_CPU, clone_cpu},
    {PTL_OP__pin_memory, PTL_KEY_CPU, pin_memory_cpu},
    {PTL_OP_contiguous, PTL_KEY_CPU, contiguous_cpu},
    {PTL_OP_fill__Scalar, PTL_KEY_CPU, fill__cpu},
    {PTL_OP_fill__Tensor, PTL_KEY_CPU, fill__cpu},
    {PTL_OP_zero_, PTL_KEY_CPU, zero__cpu},
    /* device-generic: they allocate and copy through ptl_copy_into, which moves CUDA data
     * through the CUDA copy_ kernel */
    {PTL_OP__to_copy, PTL_KEY_CUDA, to_copy_cpu},
    {PTL_OP_contiguous, PTL_KEY_CUDA, contiguous_cpu},
    {PTL_OP_fill__Scalar, PTL_KEY_CUDA, fill__cpu},
    {PTL_OP_fill__Tensor, PTL_KEY_CUDA, fill__cpu},
    {PTL_OP_zero_, PTL_KEY_CUDA, zero__cpu},
    {PTL_OP_clone, PTL_KEY_CUDA, clone_cpu},
};
PTL_DEFINE_REGISTER(copy_cpu)
