/* linalg_eig_impl.h -- what linalg_eig.c (the real Schur form) and linalg_eig_vectors.c
 * (the eigenvectors from it) share: step 5 of Note [Nonsymmetric eigensolver] in
 * linalg_eig.c. */
#ifndef PTL_ATEN_NATIVE_LINALG_EIG_IMPL_H
#define PTL_ATEN_NATIVE_LINALG_EIG_IMPL_H

#include <complex.h>
#include <stdint.h>

/* The eigenvectors of A from its Schur form t = Z^T B Z (zt = Z^T; B = D^-1 A D balanced,
 * d = D): column j of vr + i vi (n x n, row-major) for eigenvalue wr[j] + i wi[j].  x, y: n
 * complex scratch each.  0, or -1 with the error set (out of memory). */
int ptl_linalg_eig_vectors(const double *t, int64_t n, int64_t ilo, int64_t ihi,
                           const double *zt, const double *d, const double *wr,
                           const double *wi, double *vr, double *vi, double complex *x,
                           double complex *y);

#endif
