/* ivalue.h -- boxed values on the dispatcher stack.  Mirrors ATen/core/ivalue.h.
 *
 * Note [Stack ownership]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * A boxed call passes its arguments in schema order on a caller-owned array of PtlIValue.
 * Inputs are BORROWED: tensors, strings and list buffers stay owned by the caller for the
 * duration of the call.  A kernel writes its returns to stack[0..nrets) as NEW references
 * (a returned tensor list owns its malloc'd array and every element); the caller releases
 * them with ptl_ivalue_release().  A kernel that fails returns -1 and leaves no owned
 * values on the stack.
 *
 * Note [Complex Scalars]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * A Scalar argument is an int, a double, a bool or a complex (PTL_IV_COMPLEX: u.z, two
 * doubles, as c10::Scalar holds a complex<double>).  The parser makes one from a Python
 * complex, or from a 0-dim complex tensor that needs no gradient.  Its promotion category is
 * "complex": with a real tensor it asks for the default complex dtype, as PyTorch's.
 * The dispatcher adds the Complex key to a call with a complex Scalar (as to one with a
 * complex ScalarType), so a kernel written for real values never sees one: the Complex key
 * (native/complex.c) runs its complex kernels, passes through the ops whose CPU kernels
 * read a complex Scalar (fill_, full, masked_fill, the addmm family ...), and refuses the
 * rest with PyTorch's "value cannot be converted to type float without overflow".
 * ptl_iv_to_double / ptl_iv_to_int read a complex's real part; ptl_iv_imag its imaginary
 * part (0 for the real kinds). */
#ifndef PTL_ATEN_IVALUE_H
#define PTL_ATEN_IVALUE_H

#include <stdint.h>
#include <stdlib.h>

#include "../c10/device.h"
#include "../c10/dtype.h"
#include "../c10/memory_format.h"
#include "../c10/tensor_impl.h"

typedef enum PtlIValueTag {
    PTL_IV_NONE = 0,
    PTL_IV_TENSOR,
    PTL_IV_INT,
    PTL_IV_DOUBLE,
    PTL_IV_BOOL,
    PTL_IV_STRING,
    PTL_IV_INTLIST,
    PTL_IV_DOUBLELIST,
    PTL_IV_TENSORLIST,   /* entries may be NULL for Tensor?[] */
    PTL_IV_DTYPE,
    PTL_IV_DEVICE,
    PTL_IV_LAYOUT,
    PTL_IV_MEMFORMAT,    /* u.i: a PtlMemoryFormat */
    PTL_IV_GENERATOR,    /* opaque pointer, owned by src/python */
    PTL_IV_COMPLEX,      /* a complex Scalar: u.z (Note [Complex Scalars]) */
} PtlIValueTag;

typedef struct PtlIValue {
    int32_t tag;
    int32_t owned;   /* output lists: the array (and its tensors) belong to the slot */
    union {
        PtlTensorImpl *t;
        int64_t i;
        double d;
        struct {
            double re, im;
        } z;
        int b;
        const char *s;
        struct {
            const int64_t *data;
            int64_t n;
        } il;
        struct {
            const double *data;
            int64_t n;
        } dl;
        struct {
            PtlTensorImpl **data;
            int64_t n;
        } tl;
        PtlDtype dtype;
        PtlDevice device;
        void *p;
    } u;
} PtlIValue;

/* The constructors; the members they do not name are zero (owned = 0: the slot owns
 * nothing). */
static inline PtlIValue
ptl_iv_tensor(PtlTensorImpl *t)
{
    return (PtlIValue){.tag = t ? PTL_IV_TENSOR : PTL_IV_NONE, .u.t = t};
}

static inline PtlIValue
ptl_iv_int(int64_t i)
{
    return (PtlIValue){.tag = PTL_IV_INT, .u.i = i};
}

static inline PtlIValue
ptl_iv_double(double d)
{
    return (PtlIValue){.tag = PTL_IV_DOUBLE, .u.d = d};
}

static inline PtlIValue
ptl_iv_complex(double re, double im)
{
    return (PtlIValue){.tag = PTL_IV_COMPLEX, .u.z = {re, im}};
}

static inline PtlIValue
ptl_iv_bool(int b)
{
    return (PtlIValue){.tag = PTL_IV_BOOL, .u.b = b};
}

static inline PtlIValue
ptl_iv_none(void)
{
    return (PtlIValue){.tag = PTL_IV_NONE};
}

static inline PtlIValue
ptl_iv_intlist(const int64_t *data, int64_t n)
{
    return (PtlIValue){.tag = PTL_IV_INTLIST, .u.il = {data, n}};
}

static inline PtlIValue
ptl_iv_tensorlist(PtlTensorImpl **data, int64_t n)
{
    return (PtlIValue){.tag = PTL_IV_TENSORLIST, .u.tl = {data, n}};
}

static inline PtlIValue
ptl_iv_dtype(PtlDtype dt)
{
    return (PtlIValue){.tag = dt == PTL_DTYPE_UNDEFINED ? PTL_IV_NONE : PTL_IV_DTYPE,
                       .u.dtype = dt};
}

static inline PtlIValue
ptl_iv_memory_format(PtlMemoryFormat f)
{
    return (PtlIValue){.tag = PTL_IV_MEMFORMAT, .u.i = f};
}

/* A MemoryFormat? argument: its value, or dflt for None */
static inline PtlMemoryFormat
ptl_iv_memory_format_or(const PtlIValue *v, PtlMemoryFormat dflt)
{
    return v->tag == PTL_IV_MEMFORMAT ? (PtlMemoryFormat)v->u.i : dflt;
}

static inline PtlIValue
ptl_iv_device(PtlDevice d)
{
    return (PtlIValue){.tag = PTL_IV_DEVICE, .u.device = d};
}

static inline PtlIValue
ptl_iv_string(const char *s)
{
    return (PtlIValue){.tag = s ? PTL_IV_STRING : PTL_IV_NONE, .u.s = s};
}

/* A Scalar argument (int, float, bool or complex: its real part) as a double / int64. */
static inline double
ptl_iv_to_double(const PtlIValue *v)
{
    return v->tag == PTL_IV_DOUBLE    ? v->u.d
           : v->tag == PTL_IV_BOOL    ? (double)v->u.b
           : v->tag == PTL_IV_COMPLEX ? v->u.z.re
                                      : (double)v->u.i;
}

static inline int64_t
ptl_iv_to_int(const PtlIValue *v)
{
    return v->tag == PTL_IV_DOUBLE    ? (int64_t)v->u.d
           : v->tag == PTL_IV_BOOL    ? v->u.b
           : v->tag == PTL_IV_COMPLEX ? (int64_t)v->u.z.re
                                      : v->u.i;
}

/* A Scalar argument's imaginary part: 0 unless it is complex. */
static inline double
ptl_iv_imag(const PtlIValue *v)
{
    return v->tag == PTL_IV_COMPLEX ? v->u.z.im : 0.0;
}

/* Releases what an OUTPUT slot owns and sets it to None. */
static inline void
ptl_ivalue_release(PtlIValue *v)
{
    if (v->tag == PTL_IV_TENSOR) {
        ptl_xdecref(v->u.t);
    }
    else if (v->tag == PTL_IV_TENSORLIST && v->owned) {
        for (int64_t i = 0; i < v->u.tl.n; i++) {
            ptl_xdecref(v->u.tl.data[i]);
        }
        free(v->u.tl.data);
    }
    v->tag = PTL_IV_NONE;
    v->owned = 0;
}

#endif
