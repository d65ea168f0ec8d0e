/* svd_bidiagonal.h -- svd.c's singular values of a real upper bidiagonal with the rotations
 * applied to vectors, shared with the complex SVD (linalg_complex_svd.c): see Note
 * [Bidiagonal singular values] and Note [Singular vectors] in svd.c. */
#ifndef PTL_ATEN_NATIVE_SVD_BIDIAGONAL_H
#define PTL_ATEN_NATIVE_SVD_BIDIAGONAL_H

#include <stdint.h>

/* The singular vectors that ptl_svd_bidiagonal_values rotates: row j of ut (nu entries, ldu
 * apart) is column j of U, row j of vt (nv entries, ldv apart) column j of V, for B = U^T W
 * V, in floats when f32 (else doubles); rot: 4n scratch.  Doubles are rotated with scaled
 * rows (Note [Scaled rotations] in svd.c): row j of ut is gu[j] times U's column j, of vt
 * gv[j] times V's (n each, 1 to begin with), form: n bytes of scratch; f32 leaves them NULL.
 * The rotations are real, so a row of n complex numbers is a row of 2n reals (their parts
 * interleaved). */
typedef struct PtlSvdVecs {
    void *ut, *vt;
    double *rot, *gu, *gv;
    unsigned char *form;
    int64_t nu, nv, ldu, ldv;
    int f32;
} PtlSvdVecs;

/* The singular values of the upper bidiagonal (d, e) (n > 0) into d, unsorted and of either
 * sign; e is destroyed.  With vec, every rotation is applied to its vectors too.  0, or -1
 * with LAPACK's bdsqr error when the QR steps do not converge.  eps: the deflation's relative
 * tolerance (DBL_EPSILON; FLT_EPSILON for float vectors). */
int ptl_svd_bidiagonal_values(double *d, double *e, int64_t n, const PtlSvdVecs *vec,
                              double eps);

#endif
