/* linalg_complex_svd.c -- the complex SVD's matrix kernels (linalg.svd, svdvals on complex64
 * and complex128; linalg_complex.c's svd_complex runs them over the batch), in the input's
 * precision, as LAPACK's cgesdd / zgesdd for PyTorch: Householder bidiagonalisation to a
 * real bidiagonal, svd.c's bidiagonal QR (svd_bidiagonal.h) with its real rotations applied
 * to the complex vectors, and the back-transforms.  See Note [Complex SVD]. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/cpu_features.h"
#include "../../c10/error.h"
#include "../complex_math.h"
#include "../loops.h"
#include "linalg_complex_vec.h"
#include "svd_bidiagonal.h"

/* Note [Complex SVD]
 * ~~~~~~~~~~~~~~~~~~
 * Each matrix is copied into W (r x c, r = max(m, n), c = min(m, n): A, or A^H when m < n,
 * whose factors then swap: A = V S U^H) and scaled by a power of two to a largest part in
 * [0.5, 1), as svd.c does (Note [Singular vectors]).  zgebd2's reflectors reduce W to an
 * upper bidiagonal B = U_B^H W V_B: column k's H_k = I - tau v v^H from the left, row k's
 * G_k from the right (zlarfg on the row conjugated), and zlarfg's beta is real, so B is real
 * without phase factors.  Each step is three passes over the trailing rows in whole
 * 64-byte vectors (zgemv_rows for v^H W, zdot_rows for the left update and W u, zger_rows
 * for the right update; linalg_complex_vec.c's and below):
 * W's rows are padded to ld, the reflector's vectors zero outside its columns, so that the
 * stored reflectors left of them and the padding right of them are not touched.  B = P S
 * Q^T by svd.c's bidiagonal QR (ptl_svd_bidiagonal_values): its rotations are real, so
 * they act on the rows of U_B^T and V_B^T (the columns of U_B and V_B, formed from the
 * reflectors backwards) as on rows of 2 len reals.  Then W = (U_B P) S (V_B Q)^H, the
 * values sorted descending, a negative one's right vector negated.  complex64 computes in
 * float throughout (the reflectors are found in complex128, ptl_zlarfg_c16), its QR
 * deflating at FLT_EPSILON as svd.c's float32 vectors, complex128 in double: U and V are
 * unitary to O(eps) and U S V^H reproduces A to O(eps ||A||), as gesdd's; the values have
 * absolute error O(eps sigma_max) (a Jacobi method's relative accuracy for the small ones is
 * gone, as in gesdd).  svdvals skips the vectors (the QR without rotations), and takes a
 * tall W's (r >= 5c/3) from its R's bidiagonal, zgeqr2's reflectors first.  This replaced
 * one-sided Jacobi on R^H after a column-sorted QR, in complex128 for both dtypes. */

typedef double ZsVec8 __attribute__((vector_size(64)));
typedef int64_t ZsIdx8 __attribute__((vector_size(64)));
typedef float ZsVec16f __attribute__((vector_size(64)));
typedef int32_t ZsIdx16 __attribute__((vector_size(64)));
typedef double ZsHalf4 __attribute__((vector_size(32)));
typedef int64_t ZsHalfIdx4 __attribute__((vector_size(32)));
typedef float ZsHalf8f __attribute__((vector_size(32)));
typedef int32_t ZsHalfIdx8 __attribute__((vector_size(32)));

/* OUT[0], OUT[1] = the sum of A's even lanes less its odd ones, the sum of C's lanes (V
 * vectors of R, I their index vectors), as a tree: pairs first (A - swap(A), C + swap(C)),
 * the real parts' kept in the even lanes and the imaginary parts' in the odd ones, then
 * halves */
#define ZREDUCE(V, I, R, A, C, OUT)                                                                \
    do {                                                                                           \
        enum { LANES_ = sizeof(V) / sizeof(R) };                                                   \
        I swap_, pick_, half_;                                                                     \
        for (int l_ = 0; l_ < LANES_; l_++) {                                                      \
            swap_[l_] = l_ ^ 1;                                                                    \
            pick_[l_] = l_ & 1 ? l_ + LANES_ : l_;                                                 \
        }                                                                                          \
        V r_ = __builtin_shuffle((A) - __builtin_shuffle((A), swap_),                              \
                                 (C) + __builtin_shuffle((C), swap_), pick_);                      \
        for (int h_ = LANES_ / 2; h_ >= 2; h_ /= 2) {                                              \
            for (int l_ = 0; l_ < LANES_; l_++) {                                                  \
                half_[l_] = l_ ^ h_;                                                               \
            }                                                                                      \
            r_ += __builtin_shuffle(r_, half_);                                                    \
        }                                                                                          \
        (OUT)[0] = r_[0];                                                                          \
        (OUT)[1] = r_[1];                                                                          \
    } while (0)

/* out[k] = sum_q b_k[q] x[q] (no conjugate) for the rows b_k = b + k ldb, k < rows, len a
 * multiple of the vector, after b_k += s[k] y when y is not NULL (the left reflector's
 * update riding on the right one's pass: svdvals 128 x 128 1.04 -> 0.94 ms complex128,
 * 0.64 -> 0.59 ms complex64, one thread).  Lane-wise products with x and with x's parts
 * swapped, the real part the even lanes less the odd ones of the first, the imaginary part
 * all of the second; two rows at a time (two chains of additions), each row's lanes summed
 * as a tree (ZREDUCE; a chain of scalar additions, on rows a few vectors long: svd 64 x 64
 * complex64 270 -> 247 us, 128 x 128 1.60 -> 1.52 ms, one thread).  NAME's vectors are V (64
 * bytes) on AVX-512 (NH = 1) and two halves VH of V elsewhere (NH = 2; HALVES: ZDR_H1 or
 * ZDR_H2), joined into V for ZREDUCE: the AVX2 clone had kept 64-byte sums in memory (svd
 * of 64 x 64 complex128 at 0.3 of PyTorch's speed on a Zen 3); a lane's operations, the
 * tree and so the bits are the same.  zdot_rows_SUF picks one. */
#define ZDR_H1(X, ...) X(0, __VA_ARGS__)
#define ZDR_H2(X, ...) X(0, __VA_ARGS__) X(1, __VA_ARGS__)
#define ZDR_ZERO(H, VH)                                                                            \
    VH a0_##H, c0_##H, a1_##H, c1_##H;                                                             \
    memset(&a0_##H, 0, sizeof(VH));                                                                \
    c0_##H = a1_##H = c1_##H = a0_##H;
#define ZDR_STEP(H, VH, HS)                                                                        \
    {                                                                                              \
        VH xv, xs, z0, z1;                                                                         \
        memcpy(&xv, x + l0 + H * (HS), sizeof(VH));                                                \
        memcpy(&z0, b0 + l0 + H * (HS), sizeof(VH));                                               \
        memcpy(&z1, b1 + l0 + H * (HS), sizeof(VH));                                               \
        if (y != NULL) {                                                                           \
            VH yv;                                                                                 \
            memcpy(&yv, y + l0 + H * (HS), sizeof(VH));                                            \
            VH ys = __builtin_shuffle(yv, swap);                                                   \
            z0 += yv * re0 + ys * im0;                                                             \
            z1 += yv * re1 + ys * im1;                                                             \
            memcpy(b0 + l0 + H * (HS), &z0, sizeof(VH));                                           \
            if (two) {                                                                             \
                memcpy(b1 + l0 + H * (HS), &z1, sizeof(VH));                                       \
            }                                                                                      \
        }                                                                                          \
        xs = __builtin_shuffle(xv, swap);                                                          \
        a0_##H += z0 * xv;                                                                         \
        c0_##H += z0 * xs;                                                                         \
        a1_##H += z1 * xv;                                                                         \
        c1_##H += z1 * xs;                                                                         \
    }
#define ZDR_SAVE(H, VH, HS)                                                                        \
    memcpy(sums + H * (HS), &a0_##H, sizeof(VH));                                                  \
    memcpy(sums + step + H * (HS), &c0_##H, sizeof(VH));                                           \
    memcpy(sums + 2 * step + H * (HS), &a1_##H, sizeof(VH));                                       \
    memcpy(sums + 3 * step + H * (HS), &c1_##H, sizeof(VH));
#define ZDOT_ROWS(NAME, ATTR, T, R, V, I, VH, IH, NH, HALVES, SWAP, SIGN)                          \
    static ATTR __attribute__((optimize("fp-contract=fast"))) void                                 \
    NAME(T *outc, T *bc, int64_t ldb, int64_t rows, const T *xc, const T *yc, const T *sc,         \
         int64_t len)                                                                              \
    {                                                                                              \
        R *out = (R *)outc, *b = (R *)bc;                                                          \
        const R *x = (const R *)xc, *y = (const R *)yc, *sk = (const R *)sc;                       \
        const VH sign = SIGN;                                                                      \
        const IH swap = SWAP;                                                                      \
        const int64_t step = (int64_t)(sizeof(V) / sizeof(R)), hstep = step / NH;                  \
        for (int64_t k = 0; k < rows; k += 2) {                                                    \
            int two = k + 1 < rows;                                                                \
            R *b0 = b + 2 * k * ldb, *b1 = two ? b0 + 2 * ldb : b0;                                \
            HALVES(ZDR_ZERO, VH)                                                                   \
            /* the rows' own updates first when y is set: b_k += s_k y */                          \
            R s0r = y ? sk[2 * k] : 0, s0i = y ? sk[2 * k + 1] : 0;                                \
            R s1r = y && two ? sk[2 * k + 2] : 0, s1i = y && two ? sk[2 * k + 3] : 0;              \
            const VH re0 = sign * 0 + s0r, im0 = sign * s0i, re1 = sign * 0 + s1r,                 \
                     im1 = sign * s1i;                                                             \
            for (int64_t l0 = 0; l0 < 2 * len; l0 += step) {                                       \
                HALVES(ZDR_STEP, VH, hstep)                                                        \
            }                                                                                      \
            R sums[4 * sizeof(V) / sizeof(R)], r1[2];                                              \
            V a0, c0, a1, c1;                                                                      \
            HALVES(ZDR_SAVE, VH, hstep)                                                            \
            memcpy(&a0, sums, sizeof(V));                                                          \
            memcpy(&c0, sums + step, sizeof(V));                                                   \
            memcpy(&a1, sums + 2 * step, sizeof(V));                                               \
            memcpy(&c1, sums + 3 * step, sizeof(V));                                               \
            ZREDUCE(V, I, R, a0, c0, out + 2 * k);                                                 \
            ZREDUCE(V, I, R, a1, c1, r1);                                                          \
            if (k + 1 < rows) {                                                                    \
                out[2 * k + 2] = r1[0];                                                            \
                out[2 * k + 3] = r1[1];                                                            \
            }                                                                                      \
        }                                                                                          \
    }
#define ZDR_SWAP16 {1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14}
#define ZDR_SIGN16 {-1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1}
#define ZDR_SWAP8 {1, 0, 3, 2, 5, 4, 7, 6}
#define ZDR_SIGN8 {-1, 1, -1, 1, -1, 1, -1, 1}
#define ZDR_SWAP4 {1, 0, 3, 2}
#define ZDR_SIGN4 {-1, 1, -1, 1}
ZDOT_ROWS(zdot_rows_c8_halves, PTL_LOOP_CLONES, ptl_complex64, float, ZsVec16f, ZsIdx16,
          ZsHalf8f, ZsHalfIdx8, 2, ZDR_H2, ((ZsHalfIdx8)ZDR_SWAP8), ((ZsHalf8f)ZDR_SIGN8))
ZDOT_ROWS(zdot_rows_c16_halves, PTL_LOOP_CLONES, ptl_complex128, double, ZsVec8, ZsIdx8,
          ZsHalf4, ZsHalfIdx4, 2, ZDR_H2, ((ZsHalfIdx4)ZDR_SWAP4), ((ZsHalf4)ZDR_SIGN4))
#ifdef __x86_64__
ZDOT_ROWS(zdot_rows_c8_avx512, __attribute__((target("avx512f"))), ptl_complex64, float,
          ZsVec16f, ZsIdx16, ZsVec16f, ZsIdx16, 1, ZDR_H1, ((ZsIdx16)ZDR_SWAP16),
          ((ZsVec16f)ZDR_SIGN16))
ZDOT_ROWS(zdot_rows_c16_avx512, __attribute__((target("avx512f"))), ptl_complex128, double,
          ZsVec8, ZsIdx8, ZsVec8, ZsIdx8, 1, ZDR_H1, ((ZsIdx8)ZDR_SWAP8), ((ZsVec8)ZDR_SIGN8))
#endif
#define ZDOT_ROWS_PICK(SUF, T)                                                                     \
    static void zdot_rows_##SUF(T *out, T *b, int64_t ldb, int64_t rows, const T *x, const T *y,   \
                                const T *s, int64_t len)                                           \
    {                                                                                              \
        ZDOT_ROWS_AVX512(SUF)                                                                      \
        zdot_rows_##SUF##_halves(out, b, ldb, rows, x, y, s, len);                                 \
    }
#ifdef __x86_64__
#define ZDOT_ROWS_AVX512(SUF)                                                                      \
    if (ptl_cpu_capability() >= PTL_CPU_AVX512) {                                                  \
        zdot_rows_##SUF##_avx512(out, b, ldb, rows, x, y, s, len);                                 \
        return;                                                                                    \
    }
#else
#define ZDOT_ROWS_AVX512(SUF)
#endif
ZDOT_ROWS_PICK(c8, ptl_complex64)
ZDOT_ROWS_PICK(c16, ptl_complex128)
#undef ZDOT_ROWS_PICK
#undef ZDOT_ROWS_AVX512
#undef ZDOT_ROWS
#undef ZDR_SAVE
#undef ZDR_STEP
#undef ZDR_ZERO
#undef ZDR_H2
#undef ZDR_H1
#undef ZDR_SWAP16
#undef ZDR_SIGN16
#undef ZDR_SWAP8
#undef ZDR_SIGN8
#undef ZDR_SWAP4
#undef ZDR_SIGN4

/* Matrix i of the complex SVD in T's precision (Note [Complex SVD]).  0, or -1. */
#define DEFINE_ZSVD(T, R, SUF, CMPLX, REAL, IMAG, F32, EPS)                                        \
    /* Step k of zgebd2 on W (rb x c, rows ld apart): the left reflector of column k into          \
     * dd[k], tl[k] (v below the diagonal), applied to columns k+1..; with right, row k's          \
     * into ee[k], tr[k] (v right of the superdiagonal), applied to the rows below.                \
     * Scratch: v1, v2, v3 (ld), sv (2 rb), x (rb). */                                             \
    static void bidiag_step_##SUF(T *a, int64_t rb, int64_t c, int64_t ld, int64_t k,              \
                                  int right, double *dd, double *ee, T *tl, T *tr, T *v1,          \
                                  T *v2, T *v3, T *sv, ptl_complex128 *x)                          \
    {                                                                                              \
        const int64_t w = (int64_t)(64 / sizeof(T));                                               \
        int64_t nr = rb - k, s0 = (k + 1) / w * w, len = ld - s0;                                  \
        T *rk = a + k * ld;                                                                        \
        ptl_complex128 t;                                                                          \
        for (int64_t p = 0; p < nr; p++) {                                                         \
            x[p] = a[(k + p) * ld + k];                                                            \
        }                                                                                          \
        dd[k] = ptl_zlarfg_c16(x, nr, 1, &t);                                                      \
        for (int64_t p = 1; p < nr; p++) {                                                         \
            a[(k + p) * ld + k] = (T)x[p];                                                         \
        }                                                                                          \
        rk[k] = (R)dd[k];                                                                          \
        tl[k] = (T)t;                                                                              \
        ee[k] = 0;                                                                                 \
        if (k + 1 == c) {                                                                          \
            return;                                                                                \
        }                                                                                          \
        int lt = t != 0;                                                                           \
        T *y = v1, *sl = sv + rb;                                                                  \
        if (lt) {                                                                                  \
            /* y = v^H W's columns k+1.. (zero before them); W -= conj(tau) v y, row k now,        \
             * the rows below with the right reflector's products */                               \
            T ct = CMPLX(REAL(tl[k]), -IMAG(tl[k]));                                               \
            memcpy(y + s0, rk + s0, sizeof(T) * (size_t)len);                                      \
            for (int64_t p = 1; p < nr; p++) {                                                     \
                T vp = a[(k + p) * ld + k];                                                        \
                sv[p - 1] = CMPLX(REAL(vp), -IMAG(vp));                                            \
            }                                                                                      \
            ptl_zgemv_rows_##SUF(y + s0, a + (k + 1) * ld + s0, ld, nr - 1, sv, len);              \
            for (int64_t q = s0; q <= k; q++) {                                                    \
                y[q] = 0;                                                                          \
            }                                                                                      \
            sl[0] = -ct;                                                                           \
            for (int64_t p = 1; p < nr; p++) {                                                     \
                sl[p] = -zmul_##SUF(ct, a[(k + p) * ld + k]);                                      \
            }                                                                                      \
            ptl_zger_rows_##SUF(rk + s0, ld, 1, y + s0, sl, len);                                  \
        }                                                                                          \
        int64_t nc = c - k - 1;                                                                    \
        T *u = v2, *uc = v3;                                                                       \
        if (right) {                                                                               \
            for (int64_t p = 0; p < nc; p++) {                                                     \
                x[p] = conj((ptl_complex128)rk[k + 1 + p]);                                        \
            }                                                                                      \
            ee[k] = ptl_zlarfg_c16(x, nc, 1, &t);                                                  \
            tr[k] = (T)t;                                                                          \
            rk[k + 1] = (R)ee[k];                                                                  \
            memset(u + s0, 0, sizeof(T) * (size_t)len);                                            \
            memset(uc + s0, 0, sizeof(T) * (size_t)len);                                           \
            u[k + 1] = uc[k + 1] = 1;                                                              \
            for (int64_t p = 1; p < nc; p++) {                                                     \
                u[k + 1 + p] = rk[k + 1 + p] = (T)x[p];                                            \
                uc[k + 1 + p] = CMPLX(REAL(u[k + 1 + p]), -IMAG(u[k + 1 + p]));                    \
            }                                                                                      \
        }                                                                                          \
        if (nr == 1) {                                                                             \
            return;                                                                                \
        }                                                                                          \
        T *below = a + (k + 1) * ld + s0;                                                          \
        if (right && t != 0) {                                                                     \
            /* the rows below k: w -= conj(tau_l) v_i y (when lt), then w -= tau (w u) u^H, the    \
             * left update riding on the dot product's pass */                                     \
            zdot_rows_##SUF(sv, below, ld, nr - 1, u + s0, lt ? y + s0 : NULL, sl + 1, len);       \
            for (int64_t p = 0; p < nr - 1; p++) {                                                 \
                sv[p] = -zmul_##SUF(tr[k], sv[p]);                                                 \
            }                                                                                      \
            ptl_zger_rows_##SUF(below, ld, nr - 1, uc + s0, sv, len);                              \
        }                                                                                          \
        else if (lt) {                                                                             \
            ptl_zger_rows_##SUF(below, ld, nr - 1, y + s0, sl + 1, len);                           \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    int ptl_zsvd_matrix_##SUF(void *ctx, int64_t i)                                                \
    {                                                                                              \
        const PtlZSvdJob *j = ctx;                                                                 \
        int64_t m = j->m, n = j->n, tall = m >= n, r = tall ? m : n, c = tall ? n : m;             \
        int vecs = j->u != NULL;                                                                   \
        /* the long side's columns: U's when tall, Vh's rows when wide */                          \
        int64_t qcols = tall ? j->ucols : j->vrows;                                                \
        const T *src = (const T *)j->a + i * m * n;                                                \
        R *s = (R *)j->s + i * c;                                                                  \
        T *uo = vecs ? (T *)j->u + i * m * j->ucols : NULL;                                        \
        T *vho = vecs ? (T *)j->vh + i * j->vrows * n : NULL;                                      \
        if (c == 0) {                                                                              \
            /* the long side's basis is I when full_matrices asks for its columns */               \
            T *q = tall ? uo : vho;                                                                \
            for (int64_t t = 0; vecs && t < r * qcols; t++) {                                      \
                q[t] = t / qcols == t % qcols;                                                     \
            }                                                                                      \
            return 0;                                                                              \
        }                                                                                          \
        /* w: complex numbers a vector; ld: W's rows; ldu, ldv: the rows of U_B^T (qcols of        \
         * r) and V_B^T (c of c), an odd number of vectors apart (svd.c's row_ld) */               \
        const int64_t w = (int64_t)(64 / sizeof(T)), ld = (c + w - 1) / w * w;                     \
        int64_t ldu = ((r + w - 1) / w | 1) * w, ldv = ((c + w - 1) / w | 1) * w;                  \
        size_t nt = (size_t)((vecs ? qcols * ldu + c * ldv : 0) + r * ld + 2 * c + 3 * ldu +       \
                            2 * r);                                                                \
        size_t bytes = sizeof(T) * nt + sizeof(double) * (size_t)(8 * c) +                         \
                       sizeof(int64_t) * (size_t)c + sizeof(ptl_complex128) * (size_t)r + c;       \
        T *ut = aligned_alloc(64, (bytes + 63) & ~(size_t)63);                                     \
        if (ut == NULL) {                                                                          \
            return ptl_error_set(PTL_ERR_MEMORY, "linalg.svd: out of memory");                     \
        }                                                                                          \
        T *vt = ut + (vecs ? qcols * ldu : 0), *a = vt + (vecs ? c * ldv : 0);                     \
        T *tl = a + r * ld, *tr = tl + c, *v1 = tr + c, *v2 = v1 + ldu, *v3 = v2 + ldu;            \
        T *sv = v3 + ldu;                                                                          \
        double *dd = (double *)(sv + 2 * r), *ee = dd + c, *rot = ee + c, *gu = rot + 4 * c;       \
        double *gv = gu + c;                                                                       \
        int64_t *ord = (int64_t *)(gv + c);                                                        \
        ptl_complex128 *x = (ptl_complex128 *)(ord + c);                                           \
        unsigned char *form = (unsigned char *)(x + r);                                            \
        /* W, scaled */                                                                            \
        R amax = 0;                                                                                \
        for (int64_t p = 0; p < r; p++) {                                                          \
            for (int64_t q = 0; q < ld; q++) {                                                     \
                T xv = q >= c ? 0 : tall ? src[p * n + q] : src[q * n + p];                        \
                xv = tall ? xv : CMPLX(REAL(xv), -IMAG(xv));                                       \
                a[p * ld + q] = xv;                                                                \
                R ab = fabs(REAL(xv)) > fabs(IMAG(xv)) ? fabs(REAL(xv)) : fabs(IMAG(xv));          \
                amax = ab > amax ? ab : amax;                                                      \
            }                                                                                      \
        }                                                                                          \
        int e2 = 0;                                                                                \
        if (amax > 0) {                                                                            \
            frexp((double)amax, &e2);                                                              \
            R h1 = (R)ldexp(1.0, -e2 / 2), h2 = (R)ldexp(1.0, -e2 - -e2 / 2);                      \
            for (int64_t p = 0; p < r * ld; p++) {                                                 \
                a[p] = a[p] * h1 * h2;                                                             \
            }                                                                                      \
        }                                                                                          \
        /* zgebd2: the left reflector of column k (v below the diagonal), then the right one       \
         * of row k (its v right of the superdiagonal).  The values of a tall W (r >= 5c/3,        \
         * as svd.c's) come from its R: zgeqr2's left reflectors alone first (pass 1), then        \
         * R's rows (rb = c) are bidiagonalised (pass 0) */                                        \
        int64_t rb = r, qr = !vecs && 3 * r >= 5 * c;                                              \
        for (int pass = (int)qr; pass >= 0; pass--) {                                              \
            if (pass == 0 && qr) {                                                                 \
                rb = c;                                                                            \
                for (int64_t p = 1; p < c; p++) {                                                  \
                    memset(a + p * ld, 0, sizeof(T) * (size_t)p);                                  \
                }                                                                                  \
            }                                                                                      \
            for (int64_t k = 0; k < c; k++) {                                                      \
                bidiag_step_##SUF(a, rb, c, ld, k, !pass, dd, ee, tl, tr, v1, v2, v3, sv, x);      \
            }                                                                                      \
        }                                                                                          \
        int rc = -1;                                                                               \
        if (!vecs) {                                                                               \
            if (ptl_svd_bidiagonal_values(dd, ee, c, NULL, EPS) < 0) {                             \
                goto done;                                                                         \
            }                                                                                      \
        }                                                                                          \
        else {                                                                                     \
            /* U_B's columns (ut's rows, qcols of them) and V_B's (vt's rows) from the             \
             * reflectors backwards, q -= tau v (v^H q) on the rows they reach */                  \
            memset(ut, 0, sizeof(T) * (size_t)(qcols * ldu + c * ldv));                            \
            for (int64_t p = 0; p < qcols; p++) {                                                  \
                ut[p * ldu + p] = 1;                                                               \
            }                                                                                      \
            for (int64_t p = 0; p < c; p++) {                                                      \
                vt[p * ldv + p] = 1;                                                               \
            }                                                                                      \
            for (int64_t k = c - 1; k >= 0; k--) {                                                 \
                int64_t s0 = k / w * w, len = ldu - s0;                                            \
                if (tl[k] == 0) {                                                                  \
                    continue;                                                                      \
                }                                                                                  \
                memset(v1 + s0, 0, sizeof(T) * (size_t)len);                                       \
                memset(v2 + s0, 0, sizeof(T) * (size_t)len);                                       \
                v1[k] = v2[k] = 1;                                                                 \
                for (int64_t p = k + 1; p < r; p++) {                                              \
                    v1[p] = a[p * ld + k];                                                         \
                    v2[p] = CMPLX(REAL(v1[p]), -IMAG(v1[p]));                                      \
                }                                                                                  \
                zdot_rows_##SUF(sv, ut + k * ldu + s0, ldu, qcols - k, v2 + s0, NULL, NULL,        \
                                len);                                                              \
                for (int64_t p = 0; p < qcols - k; p++) {                                          \
                    sv[p] = -zmul_##SUF(tl[k], sv[p]);                                             \
                }                                                                                  \
                ptl_zger_rows_##SUF(ut + k * ldu + s0, ldu, qcols - k, v1 + s0, sv, len);          \
            }                                                                                      \
            for (int64_t k = c - 2; k >= 0; k--) {                                                 \
                int64_t s0 = (k + 1) / w * w, len = ldv - s0;                                      \
                if (tr[k] == 0) {                                                                  \
                    continue;                                                                      \
                }                                                                                  \
                memset(v1 + s0, 0, sizeof(T) * (size_t)len);                                       \
                memset(v2 + s0, 0, sizeof(T) * (size_t)len);                                       \
                v1[k + 1] = v2[k + 1] = 1;                                                         \
                for (int64_t q = k + 2; q < c; q++) {                                              \
                    v1[q] = a[k * ld + q];                                                         \
                    v2[q] = CMPLX(REAL(v1[q]), -IMAG(v1[q]));                                      \
                }                                                                                  \
                zdot_rows_##SUF(sv, vt + (k + 1) * ldv + s0, ldv, c - k - 1, v2 + s0, NULL, NULL,  \
                                len);                                                              \
                for (int64_t p = 0; p < c - k - 1; p++) {                                          \
                    sv[p] = -zmul_##SUF(tr[k], sv[p]);                                             \
                }                                                                                  \
                ptl_zger_rows_##SUF(vt + (k + 1) * ldv + s0, ldv, c - k - 1, v1 + s0, sv, len);    \
            }                                                                                      \
            for (int64_t p = 0; p < c; p++) {                                                      \
                gu[p] = gv[p] = 1;                                                                 \
            }                                                                                      \
            PtlSvdVecs vec = {ut, vt, rot, F32 ? NULL : gu, F32 ? NULL : gv,                       \
                              F32 ? NULL : form, 2 * r, 2 * c, 2 * ldu, 2 * ldv, F32};             \
            if (ptl_svd_bidiagonal_values(dd, ee, c, &vec, EPS) < 0) {                             \
                goto done;                                                                         \
            }                                                                                      \
        }                                                                                          \
        /* descending (insertion sort on indices: c is small next to the c^3 above) */             \
        for (int64_t p = 0; p < c; p++) {                                                          \
            int64_t q = p;                                                                         \
            while (q > 0 && fabs(dd[ord[q - 1]]) < fabs(dd[p])) {                                  \
                ord[q] = ord[q - 1];                                                               \
                q--;                                                                               \
            }                                                                                      \
            ord[q] = p;                                                                            \
        }                                                                                          \
        for (int64_t p = 0; p < c; p++) {                                                          \
            s[p] = (R)ldexp(fabs(dd[ord[p]]), e2);                                                 \
        }                                                                                          \
        if (vecs) {                                                                                \
            /* tall: U = U_B P (qcols columns), Vh = (V_B Q)^H; wide: U = V_B Q, Vh = (U_B P)^H */ \
            T *lo = tall ? uo : vho, *sh = tall ? vho : uo;                                        \
            for (int64_t q = 0; q < qcols; q++) {                                                  \
                const T *col = ut + (q < c ? ord[q] : q) * ldu;                                    \
                for (int64_t p = 0; p < r; p++) {                                                  \
                    if (tall) {                                                                    \
                        lo[p * qcols + q] = col[p];                                                \
                    }                                                                              \
                    else {                                                                         \
                        lo[q * r + p] = CMPLX(REAL(col[p]), -IMAG(col[p]));                        \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
            for (int64_t q = 0; q < c; q++) {                                                      \
                const T *col = vt + ord[q] * ldv;                                                  \
                R sg = dd[ord[q]] < 0 ? -1 : 1;                                                    \
                for (int64_t p = 0; p < c; p++) {                                                  \
                    if (tall) {                                                                    \
                        sh[q * c + p] = CMPLX(sg * REAL(col[p]), -sg * IMAG(col[p]));              \
                    }                                                                              \
                    else {                                                                         \
                        sh[p * c + q] = CMPLX(sg * REAL(col[p]), sg * IMAG(col[p]));               \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        rc = 0;                                                                                    \
    done:                                                                                          \
        free(ut);                                                                                  \
        return rc;                                                                                 \
    }

#undef ZREDUCE

/* complex_math.h's textbook products under the kernels' suffixes */
#define zmul_c16 ptl_cmul
#define zmul_c8 ptl_cmulf

DEFINE_ZSVD(ptl_complex64, float, c8, ptl_cmplxf, crealf, cimagf, 1, FLT_EPSILON)
DEFINE_ZSVD(ptl_complex128, double, c16, ptl_cmplx, creal, cimag, 0, DBL_EPSILON)
#undef DEFINE_ZSVD
