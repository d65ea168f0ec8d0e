/* linalg_complex_vec.h -- the vector loops under linalg_complex.c's Householder updates
 * (QR, eigh's reduction and back-transform): complex axpys, dot products and Hermitian
 * rank-2 row updates on interleaved parts in GCC vectors, as loop clones fused on purpose
 * (loops.h; the bits depend on the CPU, as the complex GEMM's do).  See Note [Complex
 * linear algebra] in linalg_complex.c. */
#ifndef PTL_ATEN_NATIVE_LINALG_COMPLEX_VEC_H
#define PTL_ATEN_NATIVE_LINALG_COMPLEX_VEC_H

#include <stdint.h>

#include "../../c10/dtype.h"

/* x[q] += s z[q], q < len, s = sr + i si */
void ptl_zaxpy_c8(ptl_complex64 *x, const ptl_complex64 *z, float sr, float si, int64_t len);
void ptl_zaxpy_c16(ptl_complex128 *x, const ptl_complex128 *z, double sr, double si,
                   int64_t len);
/* sum x[q] y[q] (no conjugate) */
ptl_complex128 ptl_zdotu_c16(const ptl_complex128 *x, const ptl_complex128 *y, int64_t len);
/* b[q] -= conj(y[q]) vr + conj(v[q]) yr */
void ptl_zher2_row_c16(ptl_complex128 *b, const ptl_complex128 *y, const ptl_complex128 *v,
                       ptl_complex128 vr, ptl_complex128 yr, int64_t len);

#endif
