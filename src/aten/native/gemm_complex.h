/* gemm_complex.h -- the complex matrix-multiply engine (gemm_complex.c) under mm, bmm, addmm,
 * baddbmm, addmv, mv, dot, vdot and matmul of complex64 / complex128 tensors.  Plays the role
 * of cgemm/zgemm in ATen/native/CPUBlas.cpp.  See Note [Complex GEMM] in gemm_complex.c. */
#ifndef PTL_ATEN_NATIVE_GEMM_COMPLEX_H
#define PTL_ATEN_NATIVE_GEMM_COMPLEX_H

#include "../../c10/tensor_impl.h"

/* C = alpha * op(A) @ B + beta * S, alpha and beta complex ({re, im}), op(A) = conj(A) when
 * conj_a is set (vdot), else A.  Shapes, strides and batch dims as for ptl_gemm (gemm.h):
 * A (... x m x k), B (... x k x n), C and S (... x m x n), any strides.  S = NULL reads C
 * itself; S is not read when beta is 0 (NaN in it ignored, as PyTorch's addmm).  All of one
 * complex dtype.  Borrows every tensor; releases the GIL for large products.  Returns 0, or
 * -1 with the error set. */
int ptl_gemm_complex(PtlTensorImpl *c, PtlTensorImpl *a, PtlTensorImpl *b, const double alpha[2],
                     const double beta[2], PtlTensorImpl *src, int conj_a);

/* C = alpha * op(A) @ B + beta * C for one product on raw pointers, complex64 (c8) or
 * complex128 (c16), op(A) = conj(A) when conj_a is set: A m x k with element (i, p) at
 * a[i * ars + p * acs], B k x n at b[p * brs + j * bcs], C m x n with contiguous rows ldc
 * apart; strides in complex elements.  C is not read when beta is 0.  Splits over threads
 * outside a parallel region (the linear algebra's blocked updates: linalg_lu.h, the complex
 * Cholesky).  0, or -1 with the error set. */
int ptl_zgemm_c8(int64_t m, int64_t n, int64_t k, const double alpha[2], const void *a,
                 int64_t ars, int64_t acs, const void *b, int64_t brs, int64_t bcs,
                 const double beta[2], void *c, int64_t ldc, int conj_a);
int ptl_zgemm_c16(int64_t m, int64_t n, int64_t k, const double alpha[2], const void *a,
                  int64_t ars, int64_t acs, const void *b, int64_t brs, int64_t bcs,
                  const double beta[2], void *c, int64_t ldc, int conj_a);

#endif
