/* linalg_lu.h -- the LU factorisation with partial pivoting (LAPACK's getrf: getf2 panels,
 * blocked) and the solves of the LuJob kernels once, for the real dtypes (linalg_solve.c:
 * float32, float64) and the complex ones (linalg_complex.c: complex64, complex128).  Note
 * [Blocked LU and triangular solves] in linalg_solve.c describes the blocking. */
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

/* Defines, on T (suffix SUF) with the attribute ATTR, the LuJob kernels (linalg_impl.h) of
 * linalg_solve.c and linalg_complex.c, after LINALG_DEFINE_LU, linalg_impl.h's
 * linalg_load_SUF and the file's
 *   tri_solve_SUF(t, b, n, nrhs, upper, unit): b = T^-1 b in place for the upper or lower
 *     triangle of t, ones on its diagonal when unit; 0 or -1 (error set);
 *   lu_det_SUF(j, i, lu, piv): matrix i's det (or sign and log |det|) from its factors.
 *
 * lu_matrix_SUF(j, i) (a LinalgMatrixFn): LU of matrix i into lu, piv, info; when b is set,
 * the solve with it in place (transposed when not left: X A = B is A^T X^T = B^T, so LU then
 * holds A^T's factors): the rows swapped as piv says, then L^-1 and U^-1; when det is set,
 * lu_det.  0 or -1 (error set).
 *
 * tri_matrix_SUF(j, i) (a LinalgMatrixFn): solves matrix i of the triangular systems A X = B
 * (left) or X A = B in place of b.  0 or -1 (error set). */
#define LINALG_DEFINE_LU_SOLVES(ATTR, T, SUF)                                                 \
    static ATTR int lu_matrix_##SUF(void *ctx, int64_t i)                                     \
    {                                                                                         \
        const LuJob *j = ctx;                                                                 \
        int64_t m = j->m, n = j->n, k = m < n ? m : n;                                        \
        T *lu = (T *)j->lu + i * m * n;                                                       \
        int32_t *piv = j->piv + i * k;                                                        \
        linalg_load_##SUF(lu, (const T *)j->a + i * m * n, m, n, !j->left);                   \
        if (lu_factor_##SUF(lu, piv, m, n, &j->info[i]) < 0) {                                \
            return -1;                                                                        \
        }                                                                                     \
        if (j->b != NULL) {                                                                   \
            T *b = (T *)j->b + i * n * j->nrhs, *x = b;                                       \
            if (!j->left && (x = malloc(sizeof(T) * (size_t)(n * j->nrhs + 1))) == NULL) {    \
                return ptl_error_set(PTL_ERR_MEMORY, "linalg.solve: out of memory");          \
            }                                                                                 \
            linalg_load_##SUF(x, b, n, j->nrhs, !j->left);                                    \
            for (int64_t r = 0; r < n; r++) {                                                 \
                int64_t p = piv[r] - 1;                                                       \
                if (p != r) {                                                                 \
                    for (int64_t c = 0; c < j->nrhs; c++) {                                   \
                        T t = x[r * j->nrhs + c];                                             \
                        x[r * j->nrhs + c] = x[p * j->nrhs + c];                              \
                        x[p * j->nrhs + c] = t;                                               \
                    }                                                                         \
                }                                                                             \
            }                                                                                 \
            int rc = tri_solve_##SUF(lu, x, n, j->nrhs, 0, 1) < 0                             \
                         ? -1                                                                 \
                         : tri_solve_##SUF(lu, x, n, j->nrhs, 1, 0);                          \
            if (x != b) {                                                                     \
                linalg_load_##SUF(b, x, j->nrhs, n, 1);                                       \
                free(x);                                                                      \
            }                                                                                 \
            if (rc < 0) {                                                                     \
                return -1;                                                                    \
            }                                                                                 \
        }                                                                                     \
        if (j->det != NULL) {                                                                 \
            lu_det_##SUF(j, i, lu, piv);                                                      \
        }                                                                                     \
        return 0;                                                                             \
    }                                                                                         \
                                                                                              \
    static ATTR int tri_matrix_##SUF(void *ctx, int64_t i)                                    \
    {                                                                                         \
        const LuJob *j = ctx;                                                                 \
        int64_t n = j->n, nrhs = j->nrhs;                                                     \
        T *b = (T *)j->b + i * n * nrhs, *x = b, *at = NULL;                                  \
        const T *a = (const T *)j->a + i * n * n;                                             \
        if (!j->left) {                                                                       \
            /* X A = B is A^T X^T = B^T, solved on transposed copies */                       \
            if ((at = malloc(sizeof(T) * (size_t)(n * n + n * nrhs + 1))) == NULL) {          \
                return ptl_error_set(PTL_ERR_MEMORY,                                          \
                                     "linalg.solve_triangular: out of memory");               \
            }                                                                                 \
            x = at + n * n;                                                                   \
            linalg_load_##SUF(at, a, n, n, 1);                                                \
            linalg_load_##SUF(x, b, n, nrhs, 1);                                              \
            a = at;                                                                           \
        }                                                                                     \
        int rc = tri_solve_##SUF(a, x, n, nrhs, j->left ? j->upper : !j->upper, j->unit);     \
        if (!j->left) {                                                                       \
            linalg_load_##SUF(b, x, nrhs, n, 1);                                              \
            free(at);                                                                         \
        }                                                                                     \
        return rc;                                                                            \
    }

#endif
