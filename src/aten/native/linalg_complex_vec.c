/* linalg_complex_vec.c -- the vector loops under linalg_complex.c's Householder updates
 * (linalg_complex_vec.h): eigh's tridiagonalisation (B v as a sum of B's rows conjugated,
 * since B is Hermitian, and the rank-2 update, each over a block of rows in one call) and
 * back-transform and the QR's reflector updates, which had run element by element in
 * baseline SSE2 and were most of those ops' time. */
#include <math.h>
#include <string.h>

#include "../../c10/cpu_features.h"
#include "../complex_math.h"
#include "../loops.h"
#include "linalg_complex_vec.h"

/* On interleaved parts, one GCC vector V at a time: 64 bytes (4 complex128 or 8 complex64
 * numbers) with AVX-512, 32 bytes otherwise (the AVX2 clones had kept 64-byte vectors in
 * memory: qr of 64 x 64 complex64 ran at 0.66 of PyTorch's speed on a Zen 3; every lane's
 * operations are the same at either width, and so are the bits), with swap(x) the vector's
 * parts swapped (index vectors I):
 * zaxpy: x[q] += s z[q], s z being z (Re s, Re s) + swap(z) (-Im s, Im s);
 * zgemv_conj: y[q] += sum_k conj(b_k[q]) s_k, conj(x) s being x (Re s, -Re s) +
 * swap(x) (Im s, Im s), two rows at a time; zgemv_rows: the same with s_k b_k[q];
 * zher2_rows: b_k[q] -= conj(y[q]) v_k + conj(v[q]) y_k, row by row.
 * The row scalars are read from memory: a complex64 argument read back by parts stalled on
 * its store (so zaxpy takes s as two reals). */
typedef double ZVec8 __attribute__((vector_size(64)));
typedef int64_t ZIdx8 __attribute__((vector_size(64)));
typedef float ZVec16f __attribute__((vector_size(64)));
typedef int32_t ZIdx16 __attribute__((vector_size(64)));
typedef double ZHalf4 __attribute__((vector_size(32)));
typedef int64_t ZHalfIdx4 __attribute__((vector_size(32)));
typedef float ZHalf8f __attribute__((vector_size(32)));
typedef int32_t ZHalfIdx8 __attribute__((vector_size(32)));
#define ZSWAP16 {1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14}
#define ZSIGN16 {-1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1}
#define ZSWAP8 {1, 0, 3, 2, 5, 4, 7, 6}
#define ZSIGN8 {-1, 1, -1, 1, -1, 1, -1, 1}
#define ZSWAP4 {1, 0, 3, 2}
#define ZSIGN4 {-1, 1, -1, 1}

/* x[q] += s z[q] on T (real part R), s = sr + i si */
#define ZAXPY(SUF, KIND, ATTR, T, R, V, I, SWAP, SIGN)                                             \
    static ATTR __attribute__((optimize("fp-contract=fast"))) void                                 \
    zaxpy_##SUF##_##KIND(T *xc, const T *zc, R sr, R si, int64_t len)                              \
    {                                                                                              \
        R *x = (R *)xc;                                                                            \
        const R *z = (const R *)zc;                                                                \
        const I swap = SWAP;                                                                       \
        const V sign = SIGN;                                                                       \
        const V re = sign * 0 + sr, im = sign * si;                                                \
        const int64_t step = (int64_t)(sizeof(V) / sizeof(R));                                     \
        int64_t nr = 2 * len, l0 = 0;                                                              \
        for (; l0 + step <= nr; l0 += step) {                                                      \
            V xv, zv;                                                                              \
            memcpy(&xv, x + l0, sizeof(xv));                                                       \
            memcpy(&zv, z + l0, sizeof(zv));                                                       \
            xv += zv * re + __builtin_shuffle(zv, swap) * im;                                      \
            memcpy(x + l0, &xv, sizeof(xv));                                                       \
        }                                                                                          \
        for (; l0 < nr; l0 += 2) {                                                                 \
            R zr = z[l0], zi = z[l0 + 1];                                                          \
            x[l0] += sr * zr - si * zi;                                                            \
            x[l0 + 1] += sr * zi + si * zr;                                                        \
        }                                                                                          \
    }

/* conj(x) s's (ZCONJ_MUL) or s x's (ZPLAIN_MUL) two multipliers from s at p (its parts p[0],
 * p[1]) */
#define ZCONJ_MUL(V, sign, p, re, im)                                                              \
    const V re = -(sign) * (p)[0], im = (sign) * 0 + (p)[1]
#define ZPLAIN_MUL(V, sign, p, re, im)                                                             \
    const V re = (sign) * 0 + (p)[0], im = (sign) * (p)[1]

/* y[q] += sum_k MUL(b_k[q], s_k) as ptl_zgemv_<NAME>_<SUF>; W: the vector's reals.  Two rows
 * at a time along them (one row's vectors down the rows, y in registers, had touched one
 * L1 set per row at strides of 1-2 KB: complex128 eigh at 128 lost a third) */
#define ZGEMV(NAME, MUL, SUF, KIND, ATTR, T, R, V, I, W)                                       \
    static ATTR __attribute__((optimize("fp-contract=fast"))) void                             \
    zgemv_##NAME##_##SUF##_##KIND(T *yc, const T *bc, int64_t ldb, int64_t rows, const T *sc,  \
                                  int64_t len)                                                 \
    {                                                                                          \
        R *y = (R *)yc;                                                                        \
        const R *b = (const R *)bc, *s = (const R *)sc;                                        \
        const I swap = ZSWAP##W;                                                               \
        const V sign = ZSIGN##W;                                                               \
        const int64_t step = (int64_t)(sizeof(V) / sizeof(R));                                 \
        int64_t k = 0;                                                                         \
        for (; k + 2 <= rows; k += 2) {                                                        \
            MUL(V, sign, s + 2 * k, re0, im0);                                                 \
            MUL(V, sign, s + 2 * k + 2, re1, im1);                                             \
            const R *b0 = b + 2 * k * ldb, *b1 = b0 + 2 * ldb;                                 \
            for (int64_t l0 = 0; l0 < 2 * len; l0 += step) {                                   \
                V acc, z0, z1;                                                                 \
                memcpy(&acc, y + l0, sizeof(acc));                                             \
                memcpy(&z0, b0 + l0, sizeof(z0));                                              \
                memcpy(&z1, b1 + l0, sizeof(z1));                                              \
                acc += z0 * re0 + __builtin_shuffle(z0, swap) * im0;                           \
                acc += z1 * re1 + __builtin_shuffle(z1, swap) * im1;                           \
                memcpy(y + l0, &acc, sizeof(acc));                                             \
            }                                                                                  \
        }                                                                                      \
        if (k < rows) {                                                                        \
            MUL(V, sign, s + 2 * k, re0, im0);                                                 \
            const R *b0 = b + 2 * k * ldb;                                                     \
            for (int64_t l0 = 0; l0 < 2 * len; l0 += step) {                                   \
                V acc, z0;                                                                     \
                memcpy(&acc, y + l0, sizeof(acc));                                             \
                memcpy(&z0, b0 + l0, sizeof(z0));                                              \
                acc += z0 * re0 + __builtin_shuffle(z0, swap) * im0;                           \
                memcpy(y + l0, &acc, sizeof(acc));                                             \
            }                                                                                  \
        }                                                                                      \
    }

/* the rows' updates: zher2_rows, and zger_rows: b_k[q] += s_k x[q] */
#define ZHER2(SUF, KIND, ATTR, T, R, V, I, W)                                                      \
    ZAXPY(SUF, KIND, ATTR, T, R, V, I, ZSWAP##W, ZSIGN##W)                                         \
    ZGEMV(conj, ZCONJ_MUL, SUF, KIND, ATTR, T, R, V, I, W)                                         \
    ZGEMV(rows, ZPLAIN_MUL, SUF, KIND, ATTR, T, R, V, I, W)                                        \
                                                                                                   \
    static ATTR __attribute__((optimize("fp-contract=fast"))) void                                 \
    zger_rows_##SUF##_##KIND(T *bc, int64_t ldb, int64_t rows, const T *xc, const T *sc,           \
                             int64_t len)                                                          \
    {                                                                                              \
        R *b = (R *)bc;                                                                            \
        const R *x = (const R *)xc, *s = (const R *)sc;                                            \
        const I swap = ZSWAP##W;                                                                   \
        const V sign = ZSIGN##W;                                                                   \
        const int64_t step = (int64_t)(sizeof(V) / sizeof(R));                                     \
        for (int64_t k = 0; k < rows; k++) {                                                       \
            ZPLAIN_MUL(V, sign, s + 2 * k, re, im);                                                \
            R *bk = b + 2 * k * ldb;                                                               \
            for (int64_t l0 = 0; l0 < 2 * len; l0 += step) {                                       \
                V bv, xv;                                                                          \
                memcpy(&bv, bk + l0, sizeof(bv));                                                  \
                memcpy(&xv, x + l0, sizeof(xv));                                                   \
                bv += xv * re + __builtin_shuffle(xv, swap) * im;                                  \
                memcpy(bk + l0, &bv, sizeof(bv));                                                  \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    static ATTR __attribute__((optimize("fp-contract=fast"))) void                                 \
    zher2_rows_##SUF##_##KIND(T *bc, int64_t ldb, int64_t rows, const T *yc, const T *vc,          \
                              const T *ykc, const T *vkc, int64_t len)                             \
    {                                                                                              \
        R *b = (R *)bc;                                                                            \
        const R *y = (const R *)yc, *v = (const R *)vc;                                            \
        const R *yk = (const R *)ykc, *vk = (const R *)vkc;                                        \
        const I swap = ZSWAP##W;                                                                   \
        const V sign = ZSIGN##W;                                                                   \
        const int64_t step = (int64_t)(sizeof(V) / sizeof(R));                                     \
        for (int64_t k = 0; k < rows; k++) {                                                       \
            ZCONJ_MUL(V, sign, vk + 2 * k, vre, vim);                                              \
            ZCONJ_MUL(V, sign, yk + 2 * k, yre, yim);                                              \
            R *bk = b + 2 * k * ldb;                                                               \
            for (int64_t l0 = 0; l0 < 2 * len; l0 += step) {                                       \
                V bv, yv, vv;                                                                      \
                memcpy(&bv, bk + l0, sizeof(bv));                                                  \
                memcpy(&yv, y + l0, sizeof(yv));                                                   \
                memcpy(&vv, v + l0, sizeof(vv));                                                   \
                bv -= yv * vre + __builtin_shuffle(yv, swap) * vim;                                \
                bv -= vv * yre + __builtin_shuffle(vv, swap) * yim;                                \
                memcpy(bk + l0, &bv, sizeof(bv));                                                  \
            }                                                                                      \
        }                                                                                          \
    }
ZHER2(c8, halves, PTL_LOOP_CLONES, ptl_complex64, float, ZHalf8f, ZHalfIdx8, 8)
ZHER2(c16, halves, PTL_LOOP_CLONES, ptl_complex128, double, ZHalf4, ZHalfIdx4, 4)
#ifdef __x86_64__
ZHER2(c8, avx512, __attribute__((target("avx512f"))), ptl_complex64, float, ZVec16f, ZIdx16, 16)
ZHER2(c16, avx512, __attribute__((target("avx512f"))), ptl_complex128, double, ZVec8, ZIdx8, 8)
#endif

/* The entry points: the AVX-512 kernels when the CPU has them, else the halves */
#ifdef __x86_64__
#define ZPICK(NAME, SUF, PARAMS, ARGS)                                                             \
    void ptl_##NAME##_##SUF PARAMS                                                                 \
    {                                                                                              \
        if (ptl_cpu_capability() >= PTL_CPU_AVX512) {                                              \
            NAME##_##SUF##_avx512 ARGS;                                                            \
            return;                                                                                \
        }                                                                                          \
        NAME##_##SUF##_halves ARGS;                                                                \
    }
#else
#define ZPICK(NAME, SUF, PARAMS, ARGS)                                                             \
    void ptl_##NAME##_##SUF PARAMS { NAME##_##SUF##_halves ARGS; }
#endif
#define ZPICK_ALL(SUF, T, R)                                                                       \
    ZPICK(zaxpy, SUF, (T *x, const T *z, R sr, R si, int64_t len), (x, z, sr, si, len))            \
    ZPICK(zgemv_conj, SUF, (T *y, const T *b, int64_t ldb, int64_t rows, const T *s, int64_t len), \
          (y, b, ldb, rows, s, len))                                                               \
    ZPICK(zgemv_rows, SUF, (T *y, const T *b, int64_t ldb, int64_t rows, const T *s, int64_t len), \
          (y, b, ldb, rows, s, len))                                                               \
    ZPICK(zger_rows, SUF, (T *b, int64_t ldb, int64_t rows, const T *x, const T *s, int64_t len),  \
          (b, ldb, rows, x, s, len))                                                               \
    ZPICK(zher2_rows, SUF,                                                                         \
          (T *b, int64_t ldb, int64_t rows, const T *y, const T *v, const T *yk, const T *vk,      \
           int64_t len),                                                                           \
          (b, ldb, rows, y, v, yk, vk, len))
ZPICK_ALL(c8, ptl_complex64, float)
ZPICK_ALL(c16, ptl_complex128, double)
#undef ZPICK_ALL
#undef ZPICK
#undef ZHER2
#undef ZGEMV
#undef ZAXPY

/* zlarfg: the reflector H = I - tau v v^H (v[0] = 1, v[1..len) returned in x[1..len) with
 * stride st) with H^H x = beta e_1, beta real; returns beta, tau in *tau (0 when x[1..) is
 * zero and x[0] real: H = I, beta = x[0]). */
double
ptl_zlarfg_c16(ptl_complex128 *x, int64_t len, int64_t st, ptl_complex128 *tau)
{
    double xn2 = 0, ar = creal(x[0]), ai = cimag(x[0]);
    for (int64_t i = 1; i < len; i++) {
        xn2 += creal(x[i * st]) * creal(x[i * st]) + cimag(x[i * st]) * cimag(x[i * st]);
    }
    if (xn2 == 0 && ai == 0) {
        *tau = 0;
        return ar;
    }
    double beta = -copysign(sqrt(ar * ar + ai * ai + xn2), ar);
    *tau = ptl_cmplx((beta - ar) / beta, -ai / beta);
    ptl_complex128 scal = 1.0 / (x[0] - beta);
    for (int64_t i = 1; i < len; i++) {
        x[i * st] = ptl_cmul(x[i * st], scal);
    }
    return beta;
}
