/* linalg_complex_vec.h -- the vector loops under linalg_complex.c's Householder updates
 * (QR, eigh's reduction and back-transform): complex axpys, B v for a Hermitian B as a
 * sum of its rows conjugated, and Hermitian rank-2 updates of rows, on interleaved parts in
 * GCC vectors, as loop clones fused on purpose (loops.h; the bits depend on the CPU, as the
 * complex GEMM's do); the reflector of one column; linalg_complex_eigh.c's kernels.  See
 * Note [Complex linear algebra] in linalg_complex.c. */
#ifndef PTL_ATEN_NATIVE_LINALG_COMPLEX_VEC_H
#define PTL_ATEN_NATIVE_LINALG_COMPLEX_VEC_H

#include <stdint.h>

#include "../../c10/dtype.h"

/* x[q] += s z[q], q < len, s = sr + i si */
void ptl_zaxpy_c8(ptl_complex64 *x, const ptl_complex64 *z, float sr, float si, int64_t len);
void ptl_zaxpy_c16(ptl_complex128 *x, const ptl_complex128 *z, double sr, double si,
                   int64_t len);
/* The rows b_k = b + k ldb, k < rows, len a multiple of 8 (complex64) or 4 (complex128):
 * zgemv_conj: y[q] += sum_k conj(b_k[q]) s[k]; zgemv_rows: y[q] += sum_k s[k] b_k[q];
 * zger_rows: b_k[q] += s[k] x[q]; zher2_rows: b_k[q] -= conj(y[q]) vk[k] + conj(v[q]) yk[k] */
void ptl_zgemv_conj_c8(ptl_complex64 *y, const ptl_complex64 *b, int64_t ldb, int64_t rows,
                       const ptl_complex64 *s, int64_t len);
void ptl_zgemv_conj_c16(ptl_complex128 *y, const ptl_complex128 *b, int64_t ldb, int64_t rows,
                        const ptl_complex128 *s, int64_t len);
void ptl_zgemv_rows_c8(ptl_complex64 *y, const ptl_complex64 *b, int64_t ldb, int64_t rows,
                       const ptl_complex64 *s, int64_t len);
void ptl_zgemv_rows_c16(ptl_complex128 *y, const ptl_complex128 *b, int64_t ldb, int64_t rows,
                        const ptl_complex128 *s, int64_t len);
void ptl_zger_rows_c8(ptl_complex64 *b, int64_t ldb, int64_t rows, const ptl_complex64 *x,
                      const ptl_complex64 *s, int64_t len);
void ptl_zger_rows_c16(ptl_complex128 *b, int64_t ldb, int64_t rows, const ptl_complex128 *x,
                       const ptl_complex128 *s, int64_t len);
void ptl_zher2_rows_c8(ptl_complex64 *b, int64_t ldb, int64_t rows, const ptl_complex64 *y,
                       const ptl_complex64 *v, const ptl_complex64 *yk,
                       const ptl_complex64 *vk, int64_t len);
void ptl_zher2_rows_c16(ptl_complex128 *b, int64_t ldb, int64_t rows, const ptl_complex128 *y,
                        const ptl_complex128 *v, const ptl_complex128 *yk,
                        const ptl_complex128 *vk, int64_t len);

/* zlarfg: the reflector H = I - tau v v^H (v[0] = 1, v[1..len) returned in x[1..len) with
 * stride st) with H^H x = beta e_1, beta real; returns beta, tau in *tau (0 when x[1..) is
 * zero and x[0] real: H = I, beta = x[0]).  linalg_complex.c's QR and eig, and eigh's. */
double ptl_zlarfg_c16(ptl_complex128 *x, int64_t len, int64_t st, ptl_complex128 *tau);

/* linalg_complex_eigh.c: matrix i of a Hermitian eigenproblem (linalg_batch_run's
 * LinalgMatrixFn) in A's precision: a [B, n, n] contiguous, the triangle upper names read;
 * values [B, n] ascending (float / double), vecs [B, n, n] or NULL.  0, or -1. */
typedef struct PtlZEighJob {
    const void *a;
    void *vals, *vecs;
    int64_t n;
    int upper;
} PtlZEighJob;
int ptl_zeigh_matrix_c8(void *ctx, int64_t i);
int ptl_zeigh_matrix_c16(void *ctx, int64_t i);

/* linalg_complex_svd.c: matrix i of _linalg_svd (linalg_batch_run's LinalgMatrixFn) in A's
 * precision: a [B, m, n] contiguous and finite; s [B, k] (float / double, descending); u
 * [B, m, ucols] and vh [B, vrows, n], or both NULL for the values alone.  0, or -1. */
typedef struct PtlZSvdJob {
    const void *a;
    void *s, *u, *vh;
    int64_t m, n, ucols, vrows;
} PtlZSvdJob;
int ptl_zsvd_matrix_c8(void *ctx, int64_t i);
int ptl_zsvd_matrix_c16(void *ctx, int64_t i);

#endif
