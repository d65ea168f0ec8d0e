/* index_complex.h -- the complex64/complex128 element folds of the scatter and index
 * kernels (scatter_gather.c, index.c): index_impl.h's combine() reads real dtypes only.
 * A sum adds the real and imaginary parts, a product is the complex product of
 * complex_math.h (the textbook formula, as PyTorch's c10::complex); PyTorch has no order
 * on complex values, so amax/amin refuse a complex tensor before any fold.  Private to
 * native/. */
#ifndef PTL_ATEN_NATIVE_INDEX_COMPLEX_H
#define PTL_ATEN_NATIVE_INDEX_COMPLEX_H
#include "../complex_math.h"
#include "index_impl.h"

/* *dst = dst (op) alpha * src for a complex dtype, op a sum (RED_SUM, RED_MEAN) or a
 * product (RED_PROD); alpha = alpha_re + alpha_im i (1 for scatter), applied in dt's
 * precision as PyTorch's complex alpha is. */
static inline void
combine_complex(char *dst, const char *src, PtlDtype dt, Reduce r, double alpha_re,
                double alpha_im)
{
    if (dt == PTL_DTYPE_COMPLEX64) {
        ptl_complex64 a, b;
        memcpy(&a, dst, sizeof(a));
        memcpy(&b, src, sizeof(b));
        if (alpha_re != 1.0 || alpha_im != 0.0) {
            b = ptl_cmulf(b, ptl_cmplxf((float)alpha_re, (float)alpha_im));
        }
        a = r == RED_PROD ? ptl_cmulf(a, b) : ptl_cmplxf(crealf(a) + crealf(b),
                                                          cimagf(a) + cimagf(b));
        memcpy(dst, &a, sizeof(a));
        return;
    }
    ptl_complex128 a, b;
    memcpy(&a, dst, sizeof(a));
    memcpy(&b, src, sizeof(b));
    if (alpha_re != 1.0 || alpha_im != 0.0) {
        b = ptl_cmul(b, ptl_cmplx(alpha_re, alpha_im));
    }
    a = r == RED_PROD ? ptl_cmul(a, b) : ptl_cmplx(creal(a) + creal(b), cimag(a) + cimag(b));
    memcpy(dst, &a, sizeof(a));
}

/* *dst /= c (a mean's count) for a complex dtype: both parts divided */
static inline void
divide_complex(char *dst, PtlDtype dt, int64_t c)
{
    if (dt == PTL_DTYPE_COMPLEX64) {
        float *p = (float *)dst;
        p[0] = p[0] / (float)c;
        p[1] = p[1] / (float)c;
        return;
    }
    double *p = (double *)dst;
    p[0] = p[0] / (double)c;
    p[1] = p[1] / (double)c;
}

/* combine() for a real dt, combine_complex for a complex one */
static inline void
combine_any(char *dst, const char *src, PtlDtype dt, Reduce r, double alpha, double alpha_im)
{
    if (ptl_dtype_is_complex(dt)) {
        combine_complex(dst, src, dt, r, alpha, alpha_im);
    }
    else {
        combine(dst, src, dt, r, alpha);
    }
}

/* 0, or -1 with c10's checked_convert error when the Scalar v is complex with an imaginary
 * part and dt real (x.scatter_(1, i, 1 + 2j) of a float x, index_add's alpha): the Complex
 * key passes such a call through to the CPU kernel (Note [Complex dtypes]) */
static inline int
complex_scalar_check(const PtlIValue *v, PtlDtype dt)
{
    return v->tag == PTL_IV_COMPLEX ? ptl_scalar_check_range(v, dt) : 0;
}

/* A Scalar argument's real part, its imaginary part (0 for a real one) in *im */
static inline double
scalar_parts(const PtlIValue *v, double *im)
{
    if (v->tag == PTL_IV_COMPLEX) {
        *im = v->u.z.im;
        return v->u.z.re;
    }
    *im = 0.0;
    return ptl_iv_to_double(v);
}

/* Whether row_add adds rows of dt: float32/float64 and the complex dtypes */
static inline int
row_add_ok(PtlDtype dt)
{
    return dt == PTL_DTYPE_FLOAT32 || dt == PTL_DTYPE_FLOAT64 || ptl_dtype_is_complex(dt);
}

/* d[j] += v[j] * (alpha + alpha_im i) (j < n complex elements, c8: complex128, else
 * complex64) for index_add_'s rows with a complex alpha: the textbook product of
 * combine_complex in the element's precision (scatter_gather.c) */
void index_add_row_complex(char *d, const char *v, int64_t n, int c8, double alpha,
                           double alpha_im);

/* d[j] += v[j] * alpha (j < n elements of dt), for row_add_ok's dtypes: index_add_row, a
 * complex sum with alpha 1 as rows of twice as many reals */
static inline void
row_add(char *d, const char *v, int64_t n, PtlDtype dt, double alpha, double alpha_im)
{
    int z = ptl_dtype_is_complex(dt), f4 = dt == PTL_DTYPE_FLOAT32 || dt == PTL_DTYPE_COMPLEX64;
    if (z && (alpha != 1.0 || alpha_im != 0.0)) {
        index_add_row_complex(d, v, n, !f4, alpha, alpha_im);
        return;
    }
    index_add_row(d, v, z ? 2 * n : n, f4, alpha);
}
#endif
