/* linalg_lu.h -- the LU factorisation with partial pivoting (LAPACK's getrf: getf2 panels,
 * blocked) once, for the real dtypes (linalg_solve.c: float32, float64) and the complex ones
 * (linalg_complex.c: complex64, complex128).  Note [Blocked LU and triangular solves] in
 * linalg_solve.c describes the blocking. */
#ifndef PTL_ATEN_NATIVE_LINALG_LU_H
#define PTL_ATEN_NATIVE_LINALG_LU_H

#include <stdint.h>

/* Defines, on T (suffix SUF), with the attribute ATTR (loop clones or none):
 *
 * lu_panel_SUF(a, piv, m, n, j0, jb, cend): eliminates columns j0..j0+jb of a (m x n,
 * row-major), rows j0 on, with partial pivoting: the row of the largest MAG in the column
 * (the first one on ties) is the pivot row, whole rows are swapped, the rows below the pivot
 * are scaled by PIVF(pivot) through SCALE and updated in columns up to cend.  Sets piv[j]
 * (1-based) for those columns and returns the 1-based index of the first zero pivot (0 if
 * none: that column is left as it is, and the factorisation goes on, as LAPACK's).
 *
 * lu_factor_SUF(a, piv, m, n, info): LU of a in place in column blocks of BLOCK (one panel
 * when min(m, n) <= BLOCK): the panel, U12 = L11^-1 A12 by row updates, then the trailing
 * matrix loses L21 U12 through GEMM_SUB(rows, cols, depth, A21, lda, U12, ldb, A22, ldc)
 * (C -= A @ B on row-major blocks; < 0 on an error).  piv gets min(m, n) pivots, *info the
 * first zero pivot.  0, or -1 with the error set.
 *
 * MAG(x): the pivot's magnitude (|x|; |Re| + |Im| for complex, LAPACK's izamax);
 * PIVF(p): what the column below a pivot p is scaled with, SCALE(x, f) (the real dtypes
 * divide by p; the complex ones multiply by 1 / p, as zgetf2 does); MUL(f, x): f x. */
#define LINALG_DEFINE_LU(ATTR, T, SUF, BLOCK, MAG, PIVF, SCALE, MUL, GEMM_SUB)                \
    static ATTR int32_t lu_panel_##SUF(T *a, int32_t *piv, int64_t m, int64_t n, int64_t j0, \
                                       int64_t jb, int64_t cend)                              \
    {                                                                                         \
        int32_t info = 0;                                                                     \
        for (int64_t j = j0; j < j0 + jb; j++) {                                              \
            int64_t p = j;                                                                    \
            for (int64_t i = j + 1; i < m; i++) {                                             \
                if (MAG(a[i * n + j]) > MAG(a[p * n + j])) {                                  \
                    p = i;                                                                    \
                }                                                                             \
            }                                                                                 \
            piv[j] = (int32_t)(p + 1);                                                        \
            if (a[p * n + j] == 0) {                                                          \
                info = info ? info : (int32_t)(j + 1);                                        \
                continue;                                                                     \
            }                                                                                 \
            if (p != j) {                                                                     \
                for (int64_t c = 0; c < n; c++) {                                             \
                    T t = a[j * n + c];                                                       \
                    a[j * n + c] = a[p * n + c];                                              \
                    a[p * n + c] = t;                                                         \
                }                                                                             \
            }                                                                                 \
            const T *rj = a + j * n;                                                          \
            const T f = PIVF(rj[j]);                                                          \
            for (int64_t i = j + 1; i < m; i++) {                                             \
                T *ri = a + i * n;                                                            \
                T l = ri[j] = SCALE(ri[j], f);                                                \
                for (int64_t c = j + 1; c < cend; c++) {                                      \
                    ri[c] -= MUL(l, rj[c]);                                                   \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
        return info;                                                                          \
    }                                                                                         \
                                                                                              \
    static ATTR int lu_factor_##SUF(T *a, int32_t *piv, int64_t m, int64_t n, int32_t *info)  \
    {                                                                                         \
        int64_t k = m < n ? m : n;                                                            \
        *info = 0;                                                                            \
        if (k <= (BLOCK)) {                                                                   \
            *info = lu_panel_##SUF(a, piv, m, n, 0, k, n);                                    \
            return 0;                                                                         \
        }                                                                                     \
        for (int64_t j0 = 0; j0 < k; j0 += (BLOCK)) {                                         \
            int64_t jb = k - j0 < (BLOCK) ? k - j0 : (BLOCK), c0 = j0 + jb;                   \
            int32_t bad = lu_panel_##SUF(a, piv, m, n, j0, jb, c0);                           \
            *info = *info ? *info : bad;                                                      \
            if (c0 == n) {                                                                    \
                continue;                                                                     \
            }                                                                                 \
            /* U12 = L11^-1 A12: row j0+r of the block loses L11[r, t] times row j0+t */      \
            for (int64_t r = 1; r < jb; r++) {                                                \
                T *ur = a + (j0 + r) * n;                                                     \
                for (int64_t t = 0; t < r; t++) {                                             \
                    T f = ur[j0 + t];                                                         \
                    const T *ut = a + (j0 + t) * n;                                           \
                    for (int64_t c = c0; c < n; c++) {                                        \
                        ur[c] -= MUL(f, ut[c]);                                               \
                    }                                                                         \
                }                                                                             \
            }                                                                                 \
            if (c0 < m && GEMM_SUB(m - c0, n - c0, jb, a + c0 * n + j0, n, a + j0 * n + c0,   \
                                   n, a + c0 * n + c0, n) < 0) {                              \
                return -1;                                                                    \
            }                                                                                 \
        }                                                                                     \
        return 0;                                                                             \
    }

#endif
