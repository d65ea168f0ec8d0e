/* linalg_complex_vec.c -- the vector loops under linalg_complex.c's Householder updates
 * (linalg_complex_vec.h): eigh's tridiagonalisation and back-transform and the QR's
 * reflector updates, which had run element by element in baseline SSE2 and were most of
 * those ops' time. */
#include <string.h>

#include "../complex_math.h"
#include "../loops.h"
#include "linalg_complex_vec.h"

/* zdotu: sum x[q] y[q] over len complex numbers, in 16 lanes of reals (re: the even lanes
 * of x y less the odd ones; im: every lane of x times y with its parts swapped), summed in
 * a fixed order;
 * zher2_row: b[q] -= conj(y[q]) vr + conj(v[q]) yr, conj(x) s being x (Re s, -Re s) +
 * swap(x) (Im s, Im s) on interleaved parts, 4 complex numbers a GCC vector;
 * zaxpy: x[q] += s z[q], s z being z (Re s, Re s) + swap(z) (-Im s, Im s), 4 complex128
 * or 8 complex64 numbers a vector. */
typedef double ZVec8 __attribute__((vector_size(64)));
typedef int64_t ZIdx8 __attribute__((vector_size(64)));

PTL_LOOP_CLONES_WIDE __attribute__((optimize("fp-contract=fast"))) ptl_complex128
ptl_zdotu_c16(const ptl_complex128 *xc, const ptl_complex128 *yc, int64_t len)
{
    const double *x = (const double *)xc, *y = (const double *)yc;
    double a[16] = {0}, b[16] = {0};
    int64_t nr = 2 * len, l0 = 0;
    for (; l0 + 16 <= nr; l0 += 16) {
        for (int l = 0; l < 16; l++) {
            a[l] += x[l0 + l] * y[l0 + l];
            b[l] += x[l0 + l] * y[l0 + (l ^ 1)];
        }
    }
    for (int l = 0; l0 + l < nr; l++) {
        a[l] += x[l0 + l] * y[l0 + l];
        b[l] += x[l0 + l] * y[l0 + (l ^ 1)];
    }
    double re = 0, im = 0;
    for (int l = 0; l < 16; l += 2) {
        re += a[l] - a[l + 1];
        im += b[l] + b[l + 1];
    }
    return ptl_cmplx(re, im);
}

PTL_LOOP_CLONES_WIDE __attribute__((optimize("fp-contract=fast"))) void
ptl_zher2_row_c16(ptl_complex128 *bc, const ptl_complex128 *yc, const ptl_complex128 *vc,
              ptl_complex128 vr, ptl_complex128 yr, int64_t len)
{
    double *b = (double *)bc;
    const double *y = (const double *)yc, *v = (const double *)vc;
    const double var = creal(vr), vai = cimag(vr), yar = creal(yr), yai = cimag(yr);
    const ZIdx8 swap = {1, 0, 3, 2, 5, 4, 7, 6};
    const ZVec8 vre = {var, -var, var, -var, var, -var, var, -var};
    const ZVec8 vim = {vai, vai, vai, vai, vai, vai, vai, vai};
    const ZVec8 yre = {yar, -yar, yar, -yar, yar, -yar, yar, -yar};
    const ZVec8 yim = {yai, yai, yai, yai, yai, yai, yai, yai};
    int64_t nr = 2 * len, l0 = 0;
    for (; l0 + 8 <= nr; l0 += 8) {
        ZVec8 bv, yv, vv;
        memcpy(&bv, b + l0, sizeof(bv));
        memcpy(&yv, y + l0, sizeof(yv));
        memcpy(&vv, v + l0, sizeof(vv));
        bv -= yv * vre + __builtin_shuffle(yv, swap) * vim;
        bv -= vv * yre + __builtin_shuffle(vv, swap) * yim;
        memcpy(b + l0, &bv, sizeof(bv));
    }
    for (; l0 < nr; l0 += 2) {
        ptl_complex128 *bq = (ptl_complex128 *)(b + l0);
        const ptl_complex128 yq = ptl_cmplx(y[l0], y[l0 + 1]), vq = ptl_cmplx(v[l0], v[l0 + 1]);
        *bq -= ptl_cmul(conj(yq), vr) + ptl_cmul(conj(vq), yr);
    }
}


/* x[q] += s z[q] on T (real part R), s = sr + i si (as two reals: a complex64 argument read
 * back by parts stalled on its store), in vectors V of 64 bytes with index vectors I */
#define ZAXPY(SUF, T, R, V, I, SWAP, SIGN)                                                         \
    PTL_LOOP_CLONES_WIDE __attribute__((optimize("fp-contract=fast"))) void                    \
    ptl_zaxpy_##SUF(T *xc, const T *zc, R sr, R si, int64_t len)                               \
    {                                                                                          \
        R *x = (R *)xc;                                                                        \
        const R *z = (const R *)zc;                                                            \
        const I swap = SWAP;                                                                   \
        const V sign = SIGN;                                                                   \
        const V re = sign * 0 + sr, im = sign * si;                                            \
        const int64_t step = (int64_t)(sizeof(V) / sizeof(R));                                 \
        int64_t nr = 2 * len, l0 = 0;                                                          \
        for (; l0 + step <= nr; l0 += step) {                                                  \
            V xv, zv;                                                                          \
            memcpy(&xv, x + l0, sizeof(xv));                                                   \
            memcpy(&zv, z + l0, sizeof(zv));                                                   \
            xv += zv * re + __builtin_shuffle(zv, swap) * im;                                  \
            memcpy(x + l0, &xv, sizeof(xv));                                                   \
        }                                                                                      \
        for (; l0 < nr; l0 += 2) {                                                             \
            R zr = z[l0], zi = z[l0 + 1];                                                      \
            x[l0] += sr * zr - si * zi;                                                        \
            x[l0 + 1] += sr * zi + si * zr;                                                    \
        }                                                                                      \
    }
typedef float ZVec16f __attribute__((vector_size(64)));
typedef int32_t ZIdx16 __attribute__((vector_size(64)));
#define ZSWAP16 {1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14}
#define ZSIGN16 {-1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1}
#define ZSWAP8 {1, 0, 3, 2, 5, 4, 7, 6}
#define ZSIGN8 {-1, 1, -1, 1, -1, 1, -1, 1}
ZAXPY(c8, ptl_complex64, float, ZVec16f, ZIdx16, ZSWAP16, ZSIGN16)
ZAXPY(c16, ptl_complex128, double, ZVec8, ZIdx8, ZSWAP8, ZSIGN8)
