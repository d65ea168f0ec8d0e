/* linalg_complex_eigh.c -- the Hermitian eigensolver's matrix kernels (linalg.eigh,
 * eigvalsh on complex64 and complex128; linalg_complex.c's eigh_complex runs them over the
 * batch): zhetd2's reduction to a real tridiagonal T, T's eigenproblem (linalg_eigh_dc.c)
 * and the back-transform, each in the input's precision.  See Note [Complex linear
 * algebra] in linalg_complex.c. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../complex_math.h"
#include "linalg_complex_vec.h"
#include "linalg_impl.h"

/* complex_math.h's textbook products under the kernels' suffixes */
#define zmul_c16 ptl_cmul
#define zmul_c8 ptl_cmulf

/* Matrix i of a Hermitian eigenproblem in T's precision (Note [Complex linear algebra]):
 * A (the triangle UPLO names and its mirror image, the diagonal's real part) = Q T Q^H by
 * zhetd2's reflectors (each found in complex128, applied in T), T's eigenvalues and
 * vectors in R by DC_FN above LINALG_DC_LEAF rows, else (and for a T that is not finite)
 * by QL_FN; V = Q Z; values ascending into vals, V into vecs when set.  The values alone
 * by the root-free QL in double on T (as linalg_decomp.c's float32 eigvalsh and LAPACK's
 * sterf under zheevd's jobz = N), QL_FN for a T that is not finite.  0, or -1. */
#define DEFINE_Z_EIGH(T, R, SUF, F, CMPLX, REAL, IMAG, QL_FN, DC_FN)                          \
    /* T's eigenvectors (zt's rows) and values ascending by DC_FN on T scaled by            \
     * linalg_tridiagonal_scale, as linalg_decomp.c's eigh_dc: 0, -1 (error set), -2 (a       \
     * leaf's QL did not converge), or 1 when T is not finite (d, e untouched: the QL's) */   \
    static int eigh_dc_##SUF(R *d, R *e, R *zt, int64_t n)                                    \
    {                                                                                         \
        int ex;                                                                               \
        if (linalg_tridiagonal_scale##F(d, e, n, &ex)) {                                      \
            return 1;                                                                         \
        }                                                                                     \
        R *work = malloc(sizeof(R) * (size_t)ptl_linalg_tridiagonal_dc_scratch(n));           \
        if (work == NULL) {                                                                   \
            return ptl_error_set(PTL_ERR_MEMORY, "linalg.eigh: out of memory");               \
        }                                                                                     \
        int rc = DC_FN(d, e, n, zt, n, work);                                                 \
        for (int64_t c = 0; c < n; c++) {                                                     \
            d[c] = ldexp##F(d[c], ex);                                                        \
        }                                                                                     \
        free(work);                                                                           \
        return rc;                                                                            \
    }                                                                                         \
                                                                                              \
    int ptl_zeigh_matrix_##SUF(void *ctx, int64_t i)                                          \
    {                                                                                         \
        const PtlZEighJob *j = ctx;                                                           \
        int64_t n = j->n;                                                                     \
        int vecs = j->vecs != NULL;                                                           \
        const T *src = (const T *)j->a + i * n * n;                                           \
        /* a: n rows of ld, zero past column n, so that the row updates run whole vectors */  \
        const int64_t w = (int64_t)(64 / sizeof(T)), ld = (n + w - 1) / w * w;                \
        T *a = malloc(sizeof(T) * (size_t)(n * ld + n + 2 * ld + (vecs ? n * ld + n : 0) + 1) + \
                      sizeof(ptl_complex128) * (size_t)(n + 1) +                              \
                      sizeof(double) * (size_t)((vecs ? n * n : 0) + 4 * n + 1) +             \
                      sizeof(int64_t) * (size_t)(n + 1));                                     \
        if (a == NULL) {                                                                      \
            return ptl_error_set(PTL_ERR_MEMORY, "linalg.eigh: out of memory");               \
        }                                                                                     \
        T *tau = a + n * ld, *y = tau + n, *v = y + ld, *wb = v + ld;                         \
        T *sv = wb + (vecs ? n * ld : 0);                                                     \
        ptl_complex128 *x = (ptl_complex128 *)(sv + (vecs ? n : 0));                          \
        double *dd = (double *)(x + n), *ee = dd + n;                                         \
        R *d = (R *)dd, *e = (R *)ee, *rot = (R *)(ee + n), *zt = (R *)(ee + 3 * n);          \
        int64_t *idx = (int64_t *)((double *)zt + (vecs ? n * n : 0));                        \
        int finite = 1;                                                                       \
        for (int64_t r = 0; r < n; r++) {                                                     \
            for (int64_t c = 0; c <= r; c++) {                                                \
                T xv = j->upper ? src[c * n + r] : src[r * n + c];                            \
                finite &= isfinite(REAL(xv)) && (c == r || isfinite(IMAG(xv)));               \
                R im = j->upper ? -IMAG(xv) : IMAG(xv);                                       \
                a[r * ld + c] = CMPLX(REAL(xv), c == r ? 0 : im);                             \
                a[c * ld + r] = CMPLX(REAL(xv), c == r ? 0 : -im);                            \
            }                                                                                 \
            for (int64_t c = n; c < ld; c++) {                                                \
                a[r * ld + c] = 0;                                                            \
            }                                                                                 \
        }                                                                                     \
        if (!finite) {   /* Note [Symmetric eigensolver]: nan values and vectors */           \
            for (int64_t c = 0; c < n; c++) {                                                 \
                ((R *)j->vals)[i * n + c] = (R)NAN;                                           \
            }                                                                                 \
            for (int64_t c = 0; vecs && c < n * n; c++) {                                     \
                ((T *)j->vecs)[i * n * n + c] = CMPLX((R)NAN, (R)NAN);                        \
            }                                                                                 \
            free(a);                                                                          \
            return 0;                                                                         \
        }                                                                                     \
        /* zhetd2 (lower): column c's reflector below the diagonal, then the trailing block   \
         * B = a[c+1:, c+1:] becomes H^H B H = B - v w^H - w v^H with y = tau B v,            \
         * w = y - tau (y^H v) / 2 v.  B v as the sum of B's rows conjugated times v (B is    \
         * Hermitian: no reduction across lanes); the vectors run from column s0 (c + 1       \
         * rounded down to whole vectors) to ld, v and y zero outside [c + 1, n), so that     \
         * a's columns before c + 1 (the reflectors) and past n lose exact zeros */           \
        for (int64_t c = 0; c + 1 < n; c++) {                                                 \
            int64_t nb = n - c - 1, s0 = (c + 1) / w * w, len = ld - s0;                      \
            ptl_complex128 t;                                                                 \
            for (int64_t r = 0; r < nb; r++) {                                                \
                x[r] = a[(c + 1 + r) * ld + c];                                               \
            }                                                                                 \
            e[c] = (R)ptl_zlarfg_c16(x, nb, 1, &t);                                           \
            for (int64_t q = s0; q < ld; q++) {                                               \
                v[q] = q > c + 1 && q < n ? (T)x[q - c - 1] : q == c + 1;                     \
            }                                                                                 \
            tau[c] = (T)t;                                                                    \
            d[c] = REAL(a[c * ld + c]);                                                       \
            for (int64_t r = 0; r < nb; r++) {                                                \
                a[(c + 1 + r) * ld + c] = r == 0 ? CMPLX(e[c], 0) : v[c + 1 + r];             \
            }                                                                                 \
            if (t == 0) {                                                                     \
                continue;                                                                     \
            }                                                                                 \
            T tc = tau[c], yhv = 0;                                                           \
            memset(y + s0, 0, sizeof(T) * (size_t)len);                                       \
            ptl_zgemv_conj_##SUF(y + s0, a + (c + 1) * ld + s0, ld, nb, v + c + 1, len);      \
            for (int64_t q = s0; q <= c; q++) {                                               \
                y[q] = 0;                                                                     \
            }                                                                                 \
            for (int64_t r = c + 1; r < n; r++) {                                             \
                y[r] = zmul_##SUF(tc, y[r]);                                                  \
                yhv += zmul_##SUF(CMPLX(REAL(y[r]), -IMAG(y[r])), v[r]);                      \
            }                                                                                 \
            T alpha = zmul_##SUF(CMPLX(-0.5f * REAL(tc), -0.5f * IMAG(tc)), yhv);             \
            for (int64_t r = c + 1; r < n; r++) {                                             \
                y[r] += zmul_##SUF(alpha, v[r]);                                              \
            }                                                                                 \
            ptl_zher2_rows_##SUF(a + (c + 1) * ld + s0, ld, nb, y + s0, v + s0, y + c + 1,    \
                                 v + c + 1, len);                                             \
        }                                                                                     \
        if (n > 0) {                                                                          \
            d[n - 1] = REAL(a[(n - 1) * ld + n - 1]);                                         \
            e[n - 1] = 0;                                                                     \
        }                                                                                     \
        R *vals = (R *)j->vals + i * n;                                                       \
        int rc = 1;                                                                           \
        if (!vecs) {                                                                          \
            for (int64_t c = n - 1; c >= 0; c--) {                                            \
                dd[c] = d[c];                                                                 \
                ee[c] = e[c];                                                                 \
            }                                                                                 \
            rc = ptl_linalg_tridiagonal_values(dd, ee, n);                                    \
            for (int64_t c = 0; rc == 0 && c < n; c++) {                                      \
                d[c] = (R)dd[c];                                                              \
            }                                                                                 \
            if (rc == 1) {                                                                    \
                for (int64_t c = 0; c < n; c++) {                                             \
                    d[c] = REAL(a[c * ld + c]);                                               \
                    e[c] = c + 1 < n ? REAL(a[(c + 1) * ld + c]) : 0;                         \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
        if (vecs) {                                                                           \
            memset(zt, 0, sizeof(R) * (size_t)(n * n));                                       \
            for (int64_t r = 0; r < n; r++) {                                                 \
                zt[r * n + r] = 1;                                                            \
            }                                                                                 \
        }                                                                                     \
        if (vecs && n > LINALG_DC_LEAF) {                                                     \
            rc = eigh_dc_##SUF(d, e, zt, n);                                                  \
            if (rc == -1) {                                                                   \
                free(a);                                                                      \
                return -1;                                                                    \
            }                                                                                 \
        }                                                                                     \
        if (rc < 0 || (rc == 1 && QL_FN(d, e, vecs ? zt : NULL, n, rot) < 0)) {               \
            free(a);                                                                          \
            return ptl_error_set(PTL_ERR_LINALG, "linalg.eigh: The algorithm failed to "      \
                                 "converge because the input matrix is ill-conditioned or "   \
                                 "has too many repeated eigenvalues (error code: %lld).",     \
                                 (long long)(i + 1));                                         \
        }                                                                                     \
        /* ascending (insertion sort on indices: n is small next to the n^3 above) */         \
        for (int64_t r = 0; r < n; r++) {                                                     \
            int64_t p = r;                                                                    \
            while (p > 0 && d[idx[p - 1]] > d[r]) {                                           \
                idx[p] = idx[p - 1];                                                          \
                p--;                                                                          \
            }                                                                                 \
            idx[p] = r;                                                                       \
        }                                                                                     \
        for (int64_t c = 0; c < n; c++) {                                                     \
            vals[c] = d[idx[c]];                                                              \
        }                                                                                     \
        if (vecs) {                                                                           \
            /* V = H_0 ... H_{n-2} Z, Z's column c the eigenvector of vals[c] (zt's row       \
             * idx[c]); H_c acts on rows c + 1 on, its v below a's diagonal in column c:      \
             * y = t v^H V's rows, then those rows less v y, in wb (n rows of ld) */          \
            for (int64_t r = 0; r < n; r++) {                                                 \
                for (int64_t c = 0; c < ld; c++) {                                            \
                    wb[r * ld + c] = c < n ? CMPLX(zt[idx[c] * n + r], 0) : 0;                \
                }                                                                             \
            }                                                                                 \
            for (int64_t c = n - 2; c >= 0; c--) {                                            \
                T t = tau[c];                                                                 \
                int64_t r0 = c + 1;                                                           \
                if (t == 0) {                                                                 \
                    continue;                                                                 \
                }                                                                             \
                for (int64_t r = r0 + 1; r < n; r++) {                                        \
                    sv[r - r0 - 1] = CMPLX(REAL(a[r * ld + c]), -IMAG(a[r * ld + c]));        \
                }                                                                             \
                memcpy(y, wb + r0 * ld, sizeof(T) * (size_t)ld);                              \
                ptl_zgemv_rows_##SUF(y, wb + (r0 + 1) * ld, ld, n - r0 - 1, sv, ld);          \
                for (int64_t q = 0; q < n; q++) {                                             \
                    y[q] = zmul_##SUF(t, y[q]);                                               \
                }                                                                             \
                for (int64_t r = r0; r < n; r++) {                                            \
                    sv[r - r0] = r == r0 ? -1 : -a[r * ld + c];                               \
                }                                                                             \
                ptl_zger_rows_##SUF(wb + r0 * ld, ld, n - r0, y, sv, ld);                     \
            }                                                                                 \
            T *out = (T *)j->vecs + i * n * n;                                                \
            for (int64_t r = 0; r < n; r++) {                                                 \
                memcpy(out + r * n, wb + r * ld, sizeof(T) * (size_t)n);                      \
            }                                                                                 \
        }                                                                                     \
        free(a);                                                                              \
        return 0;                                                                             \
    }

DEFINE_Z_EIGH(ptl_complex64, float, c8, f, ptl_cmplxf, crealf, cimagf,
              ptl_linalg_tridiagonal_ql_f32, ptl_linalg_tridiagonal_dc_f32)
DEFINE_Z_EIGH(ptl_complex128, double, c16, , ptl_cmplx, creal, cimag, ptl_linalg_tridiagonal_ql,
              ptl_linalg_tridiagonal_dc)
#undef DEFINE_Z_EIGH
