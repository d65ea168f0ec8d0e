/* dtype.h -- scalar types, their C types, names and the promotion rules.
 * Mirrors c10/core/ScalarType.h.  See Note [Type promotion] in dtype.c. */
#ifndef PTL_C10_DTYPE_H
#define PTL_C10_DTYPE_H

#include <stdint.h>
#include <string.h>

#include "macros.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ptl_half { uint16_t x; } ptl_half;
typedef struct ptl_bf16 { uint16_t x; } ptl_bf16;

/* complex64 / complex128: C99's complex types in C; nvcc (C++) has no `_Complex`, so the .cu
 * files see a struct of the same layout (C11 6.2.5: a complex is an array of two reals,
 * real part first).  No CUDA kernel takes a complex dtype yet. */
#ifdef __cplusplus
typedef struct ptl_complex64 { float re, im; } ptl_complex64;
typedef struct ptl_complex128 { double re, im; } ptl_complex128;
#else
typedef float _Complex ptl_complex64;
typedef double _Complex ptl_complex128;
#endif

/* ORDER DTYPE: the promotion table and serialization rely on it.
 * _(ENUM, C type, tag, name, PyTorch legacy name, buffer format) */
#define PTL_FORALL_REAL_DTYPES(_)                                     \
    _(BOOL, uint8_t, b1, "bool", "Bool", "?")                          \
    _(UINT8, uint8_t, u1, "uint8", "Byte", "B")                        \
    _(INT8, int8_t, i1, "int8", "Char", "b")                           \
    _(INT16, int16_t, i2, "int16", "Short", "h")                       \
    _(INT32, int32_t, i4, "int32", "Int", "i")                         \
    _(INT64, int64_t, i8, "int64", "Long", "q")                        \
    _(FLOAT16, ptl_half, f2, "float16", "Half", "e")                   \
    _(BFLOAT16, ptl_bf16, bf, "bfloat16", "BFloat16", NULL)            \
    _(FLOAT32, float, f4, "float32", "Float", "f")                     \
    _(FLOAT64, double, f8, "float64", "Double", "d")
#define PTL_FORALL_DTYPES(_)                                               \
    PTL_FORALL_REAL_DTYPES(_)                                              \
    _(COMPLEX64, ptl_complex64, c8, "complex64", "ComplexFloat", "Zf")     \
    _(COMPLEX128, ptl_complex128, c16, "complex128", "ComplexDouble", "Zd")

typedef enum PtlDtype {
#define PTL_DT_ENUM(E, T, TAG, NAME, LEGACY, FMT) PTL_DTYPE_##E,
    PTL_FORALL_DTYPES(PTL_DT_ENUM)
#undef PTL_DT_ENUM
    PTL_DTYPE_COUNT,
    PTL_DTYPE_UNDEFINED = -1,
} PtlDtype;

const char *ptl_dtype_name(PtlDtype dt);          /* "float32" */
const char *ptl_dtype_legacy_name(PtlDtype dt);   /* "Float", as in "not implemented for 'Float'" */
const char *ptl_dtype_cpp_name(PtlDtype dt);      /* "float", "long int", "c10::Half": C++'s
                                                    name, as some PyTorch errors print it */
const char *ptl_dtype_buffer_format(PtlDtype dt); /* struct-module format, or NULL */
PtlDtype ptl_dtype_from_name(const char *name);   /* PTL_DTYPE_UNDEFINED when unknown */

extern const size_t ptl_dtype_sizes[PTL_DTYPE_COUNT];

static inline size_t
ptl_dtype_itemsize(PtlDtype dt)
{
    return (dt >= 0 && dt < PTL_DTYPE_COUNT) ? ptl_dtype_sizes[dt] : 0;
}

static inline int
ptl_dtype_is_floating(PtlDtype dt)
{
    return dt == PTL_DTYPE_FLOAT16 || dt == PTL_DTYPE_BFLOAT16 || dt == PTL_DTYPE_FLOAT32 ||
           dt == PTL_DTYPE_FLOAT64;
}

static inline int
ptl_dtype_is_complex(PtlDtype dt)
{
    return dt == PTL_DTYPE_COMPLEX64 || dt == PTL_DTYPE_COMPLEX128;
}

/* Floating or complex: the dtypes whose tensors can require grad (c10's
 * isDifferentiableType). */
static inline int
ptl_dtype_is_differentiable(PtlDtype dt)
{
    return ptl_dtype_is_floating(dt) || ptl_dtype_is_complex(dt);
}

/* The dtype of a complex dtype's real and imaginary parts (c10's toRealValueType); other
 * dtypes are their own. */
static inline PtlDtype
ptl_dtype_to_real(PtlDtype dt)
{
    return dt == PTL_DTYPE_COMPLEX64 ? PTL_DTYPE_FLOAT32
           : dt == PTL_DTYPE_COMPLEX128 ? PTL_DTYPE_FLOAT64 : dt;
}

/* The complex dtype whose parts are the floating dtype dt (c10's toComplexType): float16,
 * bfloat16 and float32 give complex64 (there is no complex32), float64 complex128. */
static inline PtlDtype
ptl_dtype_to_complex(PtlDtype dt)
{
    return dt == PTL_DTYPE_FLOAT64 || dt == PTL_DTYPE_COMPLEX128 ? PTL_DTYPE_COMPLEX128
                                                                 : PTL_DTYPE_COMPLEX64;
}

static inline int
ptl_dtype_is_integral(PtlDtype dt, int include_bool)
{
    return (dt >= PTL_DTYPE_UINT8 && dt <= PTL_DTYPE_INT64) ||
           (include_bool && dt == PTL_DTYPE_BOOL);
}

static inline int
ptl_dtype_is_signed(PtlDtype dt)
{
    return dt != PTL_DTYPE_BOOL && dt != PTL_DTYPE_UINT8;
}

PtlDtype ptl_promote_types(PtlDtype a, PtlDtype b);
/* Check that a computation in `from` may be written to an output of `to`:
 * complex -> real, floating -> integral and integral -> bool are refused (PyTorch's
 * canCast). */
int ptl_can_cast(PtlDtype from, PtlDtype to);

/* The default floating dtype (set_default_dtype); thread-global as in PyTorch. */
PtlDtype ptl_default_dtype(void);
void ptl_set_default_dtype(PtlDtype dt);

/* ---- float16 / bfloat16 <-> float (round to nearest even) ---- */

PTL_HD static inline float
ptl_bits_to_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

PTL_HD static inline uint32_t
ptl_f32_to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

PTL_HD static inline float
ptl_half_to_f(ptl_half h)
{
    uint32_t sign = (uint32_t)(h.x & 0x8000) << 16;
    uint32_t exp = (h.x >> 10) & 0x1f;
    uint32_t man = h.x & 0x3ff;
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24 */
        float f = (float)man * 5.9604644775390625e-8f;
        return sign ? -f : f;
    }
    if (exp == 31) {
        return ptl_bits_to_f32(sign | 0x7f800000u | (man << 13));
    }
    return ptl_bits_to_f32(sign | ((exp + 112) << 23) | (man << 13));
}

PTL_HD static inline ptl_half
ptl_f_to_half(float f)
{
    uint32_t u = ptl_f32_to_bits(f);
    uint32_t sign = (u >> 16) & 0x8000;
    uint32_t absu = u & 0x7fffffffu;
    ptl_half h;
    if (absu >= 0x7f800000u) {                /* inf or nan */
        h.x = (uint16_t)(sign | 0x7c00 | (absu > 0x7f800000u ? 0x200 : 0));
        return h;
    }
    if (absu >= 0x477ff000u) {                /* rounds to >= 65520: overflow to inf */
        h.x = (uint16_t)(sign | 0x7c00);
        return h;
    }
    if (absu < 0x38800000u) {                 /* below 2^-14: subnormal half */
        /* adding 0.5 shifts the mantissa so the FPU rounds to nearest even for us */
        float a = ptl_bits_to_f32(absu) + 0.5f;
        h.x = (uint16_t)(sign | (ptl_f32_to_bits(a) - 0x3f000000u));
        return h;
    }
    uint32_t mant_odd = (absu >> 13) & 1;
    absu += 0xc8000fffu + mant_odd;           /* rebias exponent (-112 << 23) and round */
    h.x = (uint16_t)(sign | (absu >> 13));
    return h;
}

PTL_HD static inline float
ptl_bf16_to_f(ptl_bf16 b)
{
    return ptl_bits_to_f32((uint32_t)b.x << 16);
}

PTL_HD static inline ptl_bf16
ptl_f_to_bf16(float f)
{
    uint32_t u = ptl_f32_to_bits(f);
    ptl_bf16 b;
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        b.x = (uint16_t)((u >> 16) | 0x40);   /* quiet nan */
        return b;
    }
    u += 0x7fffu + ((u >> 16) & 1);
    b.x = (uint16_t)(u >> 16);
    return b;
}

/* Reads one element of dtype dt at p as a double / an int64 (kernels that are generic over
 * dtype without a loop per dtype: indexing, histograms, sorting keys, the CUDA reductions). */
PTL_HD static inline double
ptl_load_double(const char *p, PtlDtype dt)
{
    switch (dt) {
    case PTL_DTYPE_BOOL: return *(const uint8_t *)p != 0;
    case PTL_DTYPE_UINT8: return *(const uint8_t *)p;
    case PTL_DTYPE_INT8: return *(const int8_t *)p;
    case PTL_DTYPE_INT16: return *(const int16_t *)p;
    case PTL_DTYPE_INT32: return *(const int32_t *)p;
    case PTL_DTYPE_INT64: return (double)*(const int64_t *)p;
    case PTL_DTYPE_FLOAT16: return ptl_half_to_f(*(const ptl_half *)p);
    case PTL_DTYPE_BFLOAT16: return ptl_bf16_to_f(*(const ptl_bf16 *)p);
    case PTL_DTYPE_FLOAT32: return *(const float *)p;
    default: return *(const double *)p;
    }
}

PTL_HD static inline int64_t
ptl_load_int(const char *p, PtlDtype dt)
{
    /* the integers of every dtype narrower than int64 are exact in a double */
    return dt == PTL_DTYPE_INT64 ? *(const int64_t *)p : (int64_t)ptl_load_double(p, dt);
}

#ifdef __cplusplus
}
#endif
#endif
