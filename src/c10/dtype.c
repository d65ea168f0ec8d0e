/* dtype.c -- names and promotion of scalar types.  Mirrors c10/core/ScalarType.cpp.
 *
 * Note [Type promotion]
 * ~~~~~~~~~~~~~~~~~~~~~
 * promote_types is the lattice PyTorch documents: bool < unsigned/signed integers < floats,
 * where uint8 with a signed type goes to the next signed type that holds both (int16 for
 * int8), integers with a float go to that float, and float16 with bfloat16 meet at float32.
 * Complex sits above floats: anything with a complex dtype gives the complex dtype whose
 * real part is the wider of the two reals (float64 with complex64 is complex128).
 * How 0-dim tensors and Python numbers take part (they only move the result up a category)
 * lives in aten/tensor_iterator.c: ptl_result_type. */
#include "dtype.h"

static const char *const dtype_names[PTL_DTYPE_COUNT] = {
#define PTL_DT_NAME(E, T, TAG, NAME, LEGACY, FMT) NAME,
    PTL_FORALL_DTYPES(PTL_DT_NAME)
#undef PTL_DT_NAME
};

static const char *const dtype_legacy_names[PTL_DTYPE_COUNT] = {
#define PTL_DT_LEGACY(E, T, TAG, NAME, LEGACY, FMT) LEGACY,
    PTL_FORALL_DTYPES(PTL_DT_LEGACY)
#undef PTL_DT_LEGACY
};

static const char *const dtype_formats[PTL_DTYPE_COUNT] = {
#define PTL_DT_FMT(E, T, TAG, NAME, LEGACY, FMT) FMT,
    PTL_FORALL_DTYPES(PTL_DT_FMT)
#undef PTL_DT_FMT
};

const size_t ptl_dtype_sizes[PTL_DTYPE_COUNT] = {
#define PTL_DT_SIZE(E, T, TAG, NAME, LEGACY, FMT) sizeof(T),
    PTL_FORALL_DTYPES(PTL_DT_SIZE)
#undef PTL_DT_SIZE
};

const char *
ptl_dtype_name(PtlDtype dt)
{
    return (dt >= 0 && dt < PTL_DTYPE_COUNT) ? dtype_names[dt] : "undefined";
}

const char *
ptl_dtype_legacy_name(PtlDtype dt)
{
    return (dt >= 0 && dt < PTL_DTYPE_COUNT) ? dtype_legacy_names[dt] : "Undefined";
}

const char *
ptl_dtype_cpp_name(PtlDtype dt)
{
    switch (dt) {
    case PTL_DTYPE_BOOL: return "bool";
    case PTL_DTYPE_UINT8: return "unsigned char";
    case PTL_DTYPE_INT8: return "signed char";
    case PTL_DTYPE_INT16: return "short int";
    case PTL_DTYPE_INT32: return "int";
    case PTL_DTYPE_INT64: return "long int";
    case PTL_DTYPE_FLOAT16: return "c10::Half";
    case PTL_DTYPE_BFLOAT16: return "c10::BFloat16";
    case PTL_DTYPE_FLOAT32: return "float";
    case PTL_DTYPE_FLOAT64: return "double";
    case PTL_DTYPE_COMPLEX64: return "c10::complex<float>";
    case PTL_DTYPE_COMPLEX128: return "c10::complex<double>";
    default: return ptl_dtype_legacy_name(dt);
    }
}

const char *
ptl_dtype_buffer_format(PtlDtype dt)
{
    return (dt >= 0 && dt < PTL_DTYPE_COUNT) ? dtype_formats[dt] : NULL;
}

PtlDtype
ptl_dtype_from_name(const char *name)
{
    for (int i = 0; i < PTL_DTYPE_COUNT; i++) {
        if (strcmp(name, dtype_names[i]) == 0) {
            return (PtlDtype)i;
        }
    }
    return PTL_DTYPE_UNDEFINED;
}

#define b1 PTL_DTYPE_BOOL
#define u1 PTL_DTYPE_UINT8
#define i1 PTL_DTYPE_INT8
#define i2 PTL_DTYPE_INT16
#define i4 PTL_DTYPE_INT32
#define i8 PTL_DTYPE_INT64
#define f2 PTL_DTYPE_FLOAT16
#define bf PTL_DTYPE_BFLOAT16
#define f4 PTL_DTYPE_FLOAT32
#define f8 PTL_DTYPE_FLOAT64
#define c8 PTL_DTYPE_COMPLEX64
#define c16 PTL_DTYPE_COMPLEX128
/* ORDER DTYPE */
static const PtlDtype promote_table[PTL_DTYPE_COUNT][PTL_DTYPE_COUNT] = {
    /*        b1   u1   i1   i2   i4   i8   f2   bf   f4   f8   c8   c16 */
    /* b1 */ {b1,  u1,  i1,  i2,  i4,  i8,  f2,  bf,  f4,  f8,  c8,  c16},
    /* u1 */ {u1,  u1,  i2,  i2,  i4,  i8,  f2,  bf,  f4,  f8,  c8,  c16},
    /* i1 */ {i1,  i2,  i1,  i2,  i4,  i8,  f2,  bf,  f4,  f8,  c8,  c16},
    /* i2 */ {i2,  i2,  i2,  i2,  i4,  i8,  f2,  bf,  f4,  f8,  c8,  c16},
    /* i4 */ {i4,  i4,  i4,  i4,  i4,  i8,  f2,  bf,  f4,  f8,  c8,  c16},
    /* i8 */ {i8,  i8,  i8,  i8,  i8,  i8,  f2,  bf,  f4,  f8,  c8,  c16},
    /* f2 */ {f2,  f2,  f2,  f2,  f2,  f2,  f2,  f4,  f4,  f8,  c8,  c16},
    /* bf */ {bf,  bf,  bf,  bf,  bf,  bf,  f4,  bf,  f4,  f8,  c8,  c16},
    /* f4 */ {f4,  f4,  f4,  f4,  f4,  f4,  f4,  f4,  f4,  f8,  c8,  c16},
    /* f8 */ {f8,  f8,  f8,  f8,  f8,  f8,  f8,  f8,  f8,  f8,  c16, c16},
    /* c8 */ {c8,  c8,  c8,  c8,  c8,  c8,  c8,  c8,  c8,  c16, c8,  c16},
    /* c16*/ {c16, c16, c16, c16, c16, c16, c16, c16, c16, c16, c16, c16},
};
#undef b1
#undef u1
#undef i1
#undef i2
#undef i4
#undef i8
#undef f2
#undef bf
#undef f4
#undef f8
#undef c8
#undef c16

PtlDtype
ptl_promote_types(PtlDtype a, PtlDtype b)
{
    if (a == PTL_DTYPE_UNDEFINED) {
        return b;
    }
    if (b == PTL_DTYPE_UNDEFINED) {
        return a;
    }
    return promote_table[a][b];
}

int
ptl_can_cast(PtlDtype from, PtlDtype to)
{
    if (ptl_dtype_is_complex(from) && !ptl_dtype_is_complex(to)) {
        return 0;
    }
    if (ptl_dtype_is_floating(from) && !ptl_dtype_is_floating(to) && !ptl_dtype_is_complex(to)) {
        return 0;
    }
    if (from != PTL_DTYPE_BOOL && to == PTL_DTYPE_BOOL) {
        return 0;
    }
    return 1;
}

static PtlDtype default_dtype = PTL_DTYPE_FLOAT32;

PtlDtype
ptl_default_dtype(void)
{
    return default_dtype;
}

void
ptl_set_default_dtype(PtlDtype dt)
{
    default_dtype = dt;
}
