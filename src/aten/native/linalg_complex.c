/* linalg_complex.c -- torch.linalg on complex64 and complex128 matrices: the LU family's
 * kernels (lu_factor, solve, inv, det, slogdet, solve_triangular; their checks and outputs
 * are linalg_solve.c's), Cholesky, QR, the Hermitian eigensolver (eigh, eigvalsh) and the
 * SVD (svd, svdvals).  Mirrors what ATen/native/BatchLinearAlgebra.cpp asks of LAPACK's
 * zgetrf, zgetrs, ztrsm, zpotrf, zgeqrf/zungqr, zheevd and zgesdd; pytorchlite computes
 * them itself.
 *
 * Note [Complex linear algebra]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Every complex tensor carries the Complex dispatch key (Note [Complex dtypes] in complex.c),
 * whose fallback refuses the op.  This file registers a Complex-key kernel for each linalg
 * op that takes complex matrices: the LU family's goes on to the CPU kernel of
 * linalg_solve.c (complex_to_cpu), whose lu_kernel picks the LuJob kernels below; Cholesky,
 * QR, eigh, _linalg_svd and _linalg_eig_split (linalg.eig, eigvals) have kernels of their
 * own here.  On CUDA they raise the fallback's error.
 *
 * The kernels follow LAPACK's conventions, so that the factors match PyTorch's (and
 * NumPy's) and not only their products:
 *   - LU (zgetrf): partial pivoting on |Re| + |Im| (izamax), the column below a pivot times
 *     its reciprocal (zgetf2), pivots 1-based, info the first zero pivot; linalg_lu.h's
 *     template, the real dtypes' too, in blocks of ZLU_BLOCK (16) columns whose trailing
 *     update is one complex GEMM (gemm_complex.c); the triangular solves go ZLU_BLOCK rows
 *     at a time the same way, dividing by the diagonal as a product with its reciprocal.
 *     (Unblocked, with C's complex division per element, det of 64 x 64 ran at 0.5-0.6 of
 *     PyTorch's speed and inv at 0.2-0.8; blocked, 1.2-1.8 and 1.0-2.0, one thread.)
 *     det = (-1)^swaps prod U[r, r], slogdet's sign = det / |det| (0 for a singular matrix)
 *     and its logabsdet = sum log |U[r, r]|, real.
 *   - Cholesky (zpotrf): A = L L^H from A's lower triangle (upper: A = U^H U from its upper
 *     one); only the real part of A's diagonal is read, and info is the first order whose
 *     pivot Re(a_jj) - |l_j|^2 is not positive (or is NaN).  Left-looking in blocks of
 *     ZLU_BLOCK columns: a block first loses the earlier columns' part in one GEMM
 *     (conj(A) -= conj(L) L_b^T, the GEMM conjugating its A only), then zpotf2's loops over
 *     the block's own columns (64 x 64 37 -> 24 us complex64, 128 x 128 282 -> 114 us).
 *   - QR (zgeqr2, zung2r): reflectors H = I - tau v v^H with v[0] = 1 and R's diagonal real
 *     (zlarfg's beta = -sign(Re alpha) |x|), A = H_0 ... H_{k-1} R; each reflector's
 *     update is row axpys in vectors (linalg_complex_vec.c): 64 x 64 complex128 0.26 ->
 *     0.14 ms, one thread.
 *   - eigh (linalg_complex_eigh.c, in A's precision as cheevd / zheevd): zhetd2's
 *     reflectors give A = Q T Q^H with T real symmetric tridiagonal (each reflector's beta
 *     is real), T = Z diag(w) Z^T by linalg_eigh_dc.c (the divide and conquer above
 *     LINALG_DC_LEAF rows, else the QL; the values alone by the root-free QL in double, as
 *     LAPACK's sterf), V = Q Z; eigenvalues ascending.  Eigenvectors are unique up to a unit
 *     complex factor each (for distinct eigenvalues); PyTorch documents the same and so do
 *     the tests.  The reduction runs on rows padded to whole vectors (linalg_complex_vec.c:
 *     B v as B's rows conjugated, B being Hermitian, then the rank-2 update, each over all
 *     the rows in one call), and so does V's back-transform: 64 x 64 complex64 0.32 ->
 *     0.14-0.16 ms, eigvalsh 0.20 -> 0.07 ms, one thread.
 *   - SVD (linalg_complex_svd.c, in A's precision as cgesdd / zgesdd): zgebd2's reflectors
 *     reduce W = A (A^H when m < n, the factors then swapped) to a real upper bidiagonal B
 *     (zlarfg's betas are real), B's SVD by svd.c's bidiagonal QR, whose real rotations act
 *     on the complex vectors formed from the reflectors (Note [Complex SVD]).  Singular
 *     pairs are unique up to one unit complex factor each (u v^H is not), as PyTorch
 *     documents.
 *   - eig (zgehd2, then single-shift QR sweeps as zlahqr's, ztrevc, zgeev's normalisation):
 *     eigenvalues in the Schur form's diagonal order, each eigenvector of norm 1 with its
 *     largest component real and positive.  The order can differ from LAPACK's multishift
 *     QR's where eigenvalues converge in another order (the tests compare sorted values).
 * complex64 factors, eigh and the SVD in single precision (cgetrf's, cheevd's and cgesdd's
 * accuracy), except eig, which computes in complex128 and casts its results back (Note
 * [Float64 linear algebra] in linalg_solve.c).  QR, eigh, eig and the SVD are unblocked (no
 * complex GEMM under them), their inner loops in vectors (docs/performance.md).
 * Products of two complex numbers use the textbook formula (zmul), as complex.c does: C99's
 * `*` calls __muldc3. */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "../complex_math.h"
#include "../loops.h"
#include "gemm_complex.h"
#include "linalg_complex_vec.h"
#include "linalg_impl.h"
#include "linalg_lu.h"

/* complex_math.h's textbook products under the kernels' suffixes */
#define zmul_c16 ptl_cmul
#define zmul_c8 ptl_cmulf

/* linalg_lu.h's parameters: blocks of ZLU_BLOCK columns (LU) and rows (triangular solves),
 * the pivot's magnitude |Re| + |Im| (izamax), the column below a pivot times its reciprocal
 * (zgetf2), C -= A B through gemm_complex.c */
#define ZLU_BLOCK 16
#define ZMAG_c16(x) (fabs(creal(x)) + fabs(cimag(x)))
#define ZMAG_c8(x) (fabsf(crealf(x)) + fabsf(cimagf(x)))
#define ZRECIP_c16(x) (1.0 / (x))
#define ZRECIP_c8(x) (1.0f / (x))
static const double zlu_one[2] = {1, 0}, zlu_minus_one[2] = {-1, 0};
#define ZGEMM_SUB_c16(M, N, K, A, LDA, B, LDB, C, LDC)                                        \
    ptl_zgemm_c16(M, N, K, zlu_minus_one, A, LDA, 1, B, LDB, 1, zlu_one, C, LDC, 0)
#define ZGEMM_SUB_c8(M, N, K, A, LDA, B, LDB, C, LDC)                                         \
    ptl_zgemm_c8(M, N, K, zlu_minus_one, A, LDA, 1, B, LDB, 1, zlu_one, C, LDC, 0)

/* conj(a) b */
static inline ptl_complex128
zcmul_c16(ptl_complex128 a, ptl_complex128 b)
{
    return ptl_cmplx(creal(a) * creal(b) + cimag(a) * cimag(b),
                     creal(a) * cimag(b) - cimag(a) * creal(b));
}

static inline ptl_complex64
zcmul_c8(ptl_complex64 a, ptl_complex64 b)
{
    return ptl_cmplxf(crealf(a) * crealf(b) + cimagf(a) * cimagf(b),
                      crealf(a) * cimagf(b) - cimagf(a) * crealf(b));
}

static inline double
zabs2_c16(ptl_complex128 a)
{
    return creal(a) * creal(a) + cimag(a) * cimag(a);
}

static inline double
zabs2_c8(ptl_complex64 a)
{
    return (double)crealf(a) * crealf(a) + (double)cimagf(a) * cimagf(a);
}

/* The kernels on T (ptl_complex64 or ptl_complex128, real part R), in the template's order:
 *
 * zload: dst (r x c) = src (r x c) or src^T (src c x r), both row-major.
 * lu_factor: LU of a (m x n, row-major) in place, piv min(m, n) 1-based pivots; returns the
 *   first zero pivot (1-based) or 0.
 * tri_solve: T X = B in place of b (n x nrhs), T the upper or lower triangle of t (n x n),
 *   ones on its diagonal when unit; each row in solving order.
 * lu_det: the determinant (or the sign and log |det|) from the factors, in complex128.
 * ptl_linalg_lu_matrix / ptl_linalg_tri_matrix: linalg_lu.h's lu_matrix and tri_matrix
 *   (LinalgMatrixFn on a LuJob), as linalg_solve.c's.
 * cholesky: L (lower, row-major) in place of a's lower triangle; returns info. */
#define DEFINE_Z_KERNELS(T, R, SUF, CMPLX, REAL, IMAG, SQRT)                                  \
    LINALG_DEFINE_LOAD(T, SUF)                                                                \
    LINALG_DEFINE_LU(, T, SUF, ZLU_BLOCK, ZMAG_##SUF, ZRECIP_##SUF, zmul_##SUF, zmul_##SUF,   \
                     ZGEMM_SUB_##SUF)                                                         \
                                                                                              \
    static int tri_solve_##SUF(const T *t, T *b, int64_t n, int64_t nrhs, int upper,          \
                               int unit)                                                      \
    {                                                                                         \
        for (int64_t s0 = 0; s0 < n; s0 += ZLU_BLOCK) {                                       \
            int64_t ib = n - s0 < ZLU_BLOCK ? n - s0 : ZLU_BLOCK;                             \
            int64_t i0 = upper ? n - s0 - ib : s0, i1 = i0 + ib;                              \
            T *bb = b + i0 * nrhs;                                                            \
            if (s0 > 0 && (upper ? ZGEMM_SUB_##SUF(ib, nrhs, n - i1, t + i0 * n + i1, n,      \
                                                   b + i1 * nrhs, nrhs, bb, nrhs)             \
                                 : ZGEMM_SUB_##SUF(ib, nrhs, i0, t + i0 * n, n, b, nrhs, bb,  \
                                                   nrhs)) < 0) {                              \
                return -1;                                                                    \
            }                                                                                 \
            for (int64_t s = 0; s < ib; s++) {                                                \
                int64_t i = upper ? i1 - 1 - s : i0 + s;                                      \
                T *bi = b + i * nrhs;                                                         \
                for (int64_t q = 0; q < s; q++) {                                             \
                    int64_t k = upper ? i1 - 1 - q : i0 + q;                                  \
                    T f = t[i * n + k];                                                       \
                    const T *bk = b + k * nrhs;                                               \
                    for (int64_t c = 0; c < nrhs; c++) {                                      \
                        bi[c] -= zmul_##SUF(f, bk[c]);                                        \
                    }                                                                         \
                }                                                                             \
                if (!unit) {                                                                  \
                    T d = ZRECIP_##SUF(t[i * n + i]);                                         \
                    for (int64_t c = 0; c < nrhs; c++) {                                      \
                        bi[c] = zmul_##SUF(bi[c], d);                                         \
                    }                                                                         \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
        return 0;                                                                             \
    }                                                                                         \
                                                                                              \
    /* matrix i's det = (-1)^swaps prod U[r, r] (or its sign and log |det|), in complex128 */ \
    static void lu_det_##SUF(const LuJob *j, int64_t i, const T *lu, const int32_t *piv)      \
    {                                                                                         \
        ptl_complex128 d = 1, ph = 1;                                                         \
        double logabs = 0;                                                                    \
        int swaps = 0;                                                                        \
        for (int64_t r = 0; r < j->n; r++) {                                                  \
            ptl_complex128 u = lu[r * j->n + r];                                              \
            double au = cabs(u);                                                              \
            swaps ^= piv[r] - 1 != r;                                                         \
            d = zmul_c16(d, u);                                                               \
            ph = au > 0 ? zmul_c16(ph, u / au) : 0;                                           \
            logabs += log(au);                                                                \
        }                                                                                     \
        if (j->sign != NULL) {                                                                \
            ((T *)j->sign)[i] = (T)(j->info[i] ? 0 : swaps ? -ph : ph);                       \
            ((R *)j->det)[i] = (R)logabs;                                                     \
        }                                                                                     \
        else {                                                                                \
            ((T *)j->det)[i] = (T)(swaps ? -d : d);                                           \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    LINALG_DEFINE_LU_SOLVES(, T, SUF)                                                         \
                                                                                              \
    int ptl_linalg_lu_matrix_##SUF(void *ctx, int64_t i)                                      \
    {                                                                                         \
        return lu_matrix_##SUF(ctx, i);                                                       \
    }                                                                                         \
                                                                                              \
    int ptl_linalg_tri_matrix_##SUF(void *ctx, int64_t i)                                     \
    {                                                                                         \
        return tri_matrix_##SUF(ctx, i);                                                      \
    }                                                                                         \
                                                                                              \
    /* the conjugates of a rows x cols block (row-major, ld apart) in place */                \
    static void conj_block_##SUF(T *a, int64_t rows, int64_t cols, int64_t ld)               \
    {                                                                                         \
        for (int64_t r = 0; r < rows; r++) {                                                  \
            for (int64_t c = 0; c < cols; c++) {                                              \
                a[r * ld + c] = CMPLX(REAL(a[r * ld + c]), -IMAG(a[r * ld + c]));             \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    static int cholesky_##SUF(T *a, int64_t n, int32_t *info)                                 \
    {                                                                                         \
        *info = 0;                                                                            \
        for (int64_t j0 = 0; j0 < n && *info == 0; j0 += ZLU_BLOCK) {                         \
            int64_t jb = n - j0 < ZLU_BLOCK ? n - j0 : ZLU_BLOCK;                             \
            /* A[j0:, j0:j0+jb] -= L[j0:, :j0] L[j0:j0+jb, :j0]^H, as conj(A) -= conj(L)      \
             * L_b^T on the block conjugated around it (the GEMM conjugates A only) */        \
            if (j0 > 0) {                                                                     \
                conj_block_##SUF(a + j0 * n + j0, n - j0, jb, n);                             \
                if (ptl_zgemm_##SUF(n - j0, jb, j0, zlu_minus_one, a + j0 * n, n, 1,          \
                                    a + j0 * n, 1, n, zlu_one, a + j0 * n + j0, n, 1) < 0) {  \
                    return -1;                                                                \
                }                                                                             \
                conj_block_##SUF(a + j0 * n + j0, n - j0, jb, n);                             \
            }                                                                                 \
            for (int64_t j = j0; j < j0 + jb; j++) {                                          \
                T *rj = a + j * n;                                                            \
                double d = REAL(rj[j]);                                                       \
                for (int64_t k = j0; k < j; k++) {                                            \
                    d -= zabs2_##SUF(rj[k]);                                                  \
                }                                                                             \
                if (!(d > 0)) {                                                               \
                    rj[j] = CMPLX((R)d, 0);                                                   \
                    *info = (int32_t)(j + 1);                                                 \
                    break;                                                                    \
                }                                                                             \
                R ljj = (R)SQRT(d);                                                           \
                rj[j] = CMPLX(ljj, 0);                                                        \
                for (int64_t i = j + 1; i < n; i++) {                                         \
                    T *ri = a + i * n, s = ri[j];                                             \
                    for (int64_t k = j0; k < j; k++) {                                        \
                        s -= zcmul_##SUF(rj[k], ri[k]);                                       \
                    }                                                                         \
                    ri[j] = CMPLX(REAL(s) / ljj, IMAG(s) / ljj);                              \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
        /* the GEMM's writes above the diagonal blocks' diagonal */                           \
        for (int64_t r = 0; n > ZLU_BLOCK && r < n; r++) {                                    \
            int64_t end = (r / ZLU_BLOCK + 1) * ZLU_BLOCK;                                    \
            for (int64_t c = r + 1; c < end && c < n; c++) {                                  \
                a[r * n + c] = 0;                                                             \
            }                                                                                 \
        }                                                                                     \
        return 0;                                                                             \
    }

DEFINE_Z_KERNELS(ptl_complex64, float, c8, ptl_cmplxf, crealf, cimagf, sqrt)
DEFINE_Z_KERNELS(ptl_complex128, double, c16, ptl_cmplx, creal, cimag, sqrt)
#undef DEFINE_Z_KERNELS

/* One job for the Cholesky and QR kernels below: matrix i's working tensors are
 * base + i * (its size); NULL ones are not computed. */
typedef struct ZJob {
    const void *a;     /* [B, m, n] the input, contiguous */
    void *out0;        /* cholesky: L [B, n, n]; qr: R [B, rr, n] */
    void *out1;        /* qr: Q [B, m, qc] or NULL */
    int32_t *info;     /* cholesky: [B] */
    int64_t m, n, rr, qc;
    int upper;         /* cholesky: U = L^H */
} ZJob;

/* qr_factor: Householder QR of a (m x n, row-major) in place (zgeqr2): R on and above the
 * diagonal, the reflectors' v below it, their taus in tau (min(m, n)); w: n scratch.
 * qr_form_q: q (m x qc, row-major) = the first qc columns of Q = H_0 ... H_{k-1}
 * (zung2r); w: qc scratch.  Both in T's precision; the reflector in complex128. */
#define DEFINE_Z_QR(T, R, SUF, CMPLX, REAL, IMAG)                                             \
    static void qr_factor_##SUF(T *a, int64_t m, int64_t n, T *tau, T *w)                     \
    {                                                                                         \
        int64_t k = m < n ? m : n;                                                            \
        ptl_complex128 *x = (ptl_complex128 *)(w + n);                                        \
        for (int64_t j = 0; j < k; j++) {                                                     \
            ptl_complex128 t;                                                                 \
            for (int64_t i = j; i < m; i++) {                                                 \
                x[i - j] = a[i * n + j];                                                      \
            }                                                                                 \
            double beta = ptl_zlarfg_c16(x, m - j, 1, &t);                                   \
            tau[j] = (T)t;                                                                    \
            a[j * n + j] = CMPLX((R)beta, 0);                                                 \
            for (int64_t i = j + 1; i < m; i++) {                                             \
                a[i * n + j] = (T)x[i - j];                                                   \
            }                                                                                 \
            if (t == 0) {                                                                     \
                continue;                                                                     \
            }                                                                                 \
            /* a[j:m, j+1:n] -= conj(tau) v (v^H a[j:m, j+1:n]) */                            \
            T ct = CMPLX(REAL(tau[j]), -IMAG(tau[j]));                                        \
            for (int64_t c = j + 1; c < n; c++) {                                             \
                w[c] = a[j * n + c];                                                          \
            }                                                                                 \
            for (int64_t i = j + 1; i < m; i++) {                                             \
                T vi = a[i * n + j];                                                          \
                ptl_zaxpy_##SUF(w + j + 1, a + i * n + j + 1, REAL(vi), -IMAG(vi), n - j - 1); \
            }                                                                                 \
            for (int64_t c = j + 1; c < n; c++) {                                             \
                w[c] = zmul_##SUF(ct, w[c]);                                                  \
                a[j * n + c] -= w[c];                                                         \
            }                                                                                 \
            for (int64_t i = j + 1; i < m; i++) {                                             \
                T vi = a[i * n + j];                                                          \
                ptl_zaxpy_##SUF(a + i * n + j + 1, w + j + 1, -REAL(vi), -IMAG(vi), n - j - 1); \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    static void qr_form_q_##SUF(const T *a, int64_t m, int64_t n, const T *tau, T *q,         \
                                int64_t qc, T *w)                                             \
    {                                                                                         \
        int64_t k = m < n ? m : n;                                                            \
        memset(q, 0, sizeof(T) * (size_t)(m * qc));                                           \
        for (int64_t i = 0; i < m && i < qc; i++) {                                           \
            q[i * qc + i] = 1;                                                                \
        }                                                                                     \
        for (int64_t j = k - 1; j >= 0; j--) {                                                \
            T t = tau[j];                                                                     \
            if (t == 0 || j >= qc) {                                                          \
                continue;                                                                     \
            }                                                                                 \
            /* q[j:m, j:qc] -= tau v (v^H q[j:m, j:qc]) */                                    \
            for (int64_t c = j; c < qc; c++) {                                                \
                w[c] = q[j * qc + c];                                                         \
            }                                                                                 \
            for (int64_t i = j + 1; i < m; i++) {                                             \
                T vi = a[i * n + j];                                                          \
                ptl_zaxpy_##SUF(w + j, q + i * qc + j, REAL(vi), -IMAG(vi), qc - j);          \
            }                                                                                 \
            for (int64_t c = j; c < qc; c++) {                                                \
                w[c] = zmul_##SUF(t, w[c]);                                                   \
                q[j * qc + c] -= w[c];                                                        \
            }                                                                                 \
            for (int64_t i = j + 1; i < m; i++) {                                             \
                T vi = a[i * n + j];                                                          \
                ptl_zaxpy_##SUF(q + i * qc + j, w + j, -REAL(vi), -IMAG(vi), qc - j);         \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    /* matrix i's R into out0 and, when out1 is set, its Q into out1 */                       \
    static int qr_matrix_##SUF(void *ctx, int64_t i)                                          \
    {                                                                                         \
        const ZJob *j = ctx;                                                                  \
        int64_t m = j->m, n = j->n, k = m < n ? m : n, wn = m > n ? m : n;                    \
        T *a = malloc(sizeof(T) * (size_t)(m * n + k + wn + 1) +                              \
                      sizeof(ptl_complex128) * (size_t)(m + 1));                              \
        if (a == NULL) {                                                                      \
            return ptl_error_set(PTL_ERR_MEMORY, "linalg.qr: out of memory");                 \
        }                                                                                     \
        T *tau = a + m * n, *w = tau + k, *r = (T *)j->out0 + i * j->rr * n;                  \
        memcpy(a, (const T *)j->a + i * m * n, sizeof(T) * (size_t)(m * n));                  \
        qr_factor_##SUF(a, m, n, tau, w);                                                     \
        for (int64_t row = 0; row < j->rr; row++) {                                           \
            for (int64_t c = 0; c < n; c++) {                                                 \
                r[row * n + c] = c >= row && row < m ? a[row * n + c] : 0;                    \
            }                                                                                 \
        }                                                                                     \
        if (j->out1 != NULL) {                                                                \
            qr_form_q_##SUF(a, m, n, tau, (T *)j->out1 + i * m * j->qc, j->qc, w);            \
        }                                                                                     \
        free(a);                                                                              \
        return 0;                                                                             \
    }                                                                                         \
                                                                                              \
    /* matrix i's L (or U = L^H) into out0 and its info */                                    \
    static int cholesky_matrix_##SUF(void *ctx, int64_t i)                                    \
    {                                                                                         \
        const ZJob *j = ctx;                                                                  \
        int64_t n = j->n;                                                                     \
        const T *src = (const T *)j->a + i * n * n;                                           \
        T *l = (T *)j->out0 + i * n * n;                                                      \
        for (int64_t r = 0; r < n; r++) {                                                     \
            for (int64_t c = 0; c < n; c++) {                                                 \
                T v = j->upper ? src[c * n + r] : src[r * n + c];                             \
                l[r * n + c] = c > r ? 0 : j->upper ? CMPLX(REAL(v), -IMAG(v)) : v;           \
            }                                                                                 \
        }                                                                                     \
        if (cholesky_##SUF(l, n, &j->info[i]) < 0) {                                          \
            return -1;                                                                        \
        }                                                                                     \
        for (int64_t r = 0; j->upper && r < n; r++) {                                         \
            for (int64_t c = r; c < n; c++) {                                                 \
                T v = l[c * n + r];                                                           \
                l[c * n + r] = c > r ? 0 : l[c * n + r];                                      \
                l[r * n + c] = CMPLX(REAL(v), -IMAG(v));                                      \
            }                                                                                 \
        }                                                                                     \
        return 0;                                                                             \
    }

DEFINE_Z_QR(ptl_complex64, float, c8, ptl_cmplxf, crealf, cimagf)
DEFINE_Z_QR(ptl_complex128, double, c16, ptl_cmplx, creal, cimag)
#undef DEFINE_Z_QR

/* ---- the nonsymmetric eigenproblem ---- */

static int refuse_cuda(const PtlOperator *op, PtlDispatchKeySet ks, const PtlIValue *s);
static inline double
cabs1_c16(ptl_complex128 z)
{
    return fabs(creal(z)) + fabs(cimag(z));
}

typedef struct ZEigJob {
    const ptl_complex128 *a;   /* [B, n, n] */
    ptl_complex128 *w;         /* [B, n] */
    ptl_complex128 *v;         /* [B, n, n] or NULL */
    int32_t *info;             /* [B] */
    int64_t n;
} ZEigJob;

/* The rotation G = [[c, s], [-conj(s), c]] (c real) with G [x; y] = [r; 0]. */
static void
zgivens(ptl_complex128 x, ptl_complex128 y, double *c, ptl_complex128 *s)
{
    double ax = cabs(x), nrm = hypot(ax, cabs(y));
    if (nrm == 0) {
        *c = 1;
        *s = 0;
    }
    else if (ax == 0) {
        *c = 0;
        *s = conj(y) / cabs(y);
    }
    else {
        *c = ax / nrm;
        *s = zmul_c16(x / ax, conj(y)) / nrm;
    }
}

/* Householder reduction of h (n x n) to Hessenberg form in place, H := P^H H P for each
 * column's reflector P, accumulated into z (Z := Z P, z the identity on entry); x: n
 * scratch. */
static void
hessenberg_c16(ptl_complex128 *h, ptl_complex128 *z, ptl_complex128 *x, int64_t n)
{
    for (int64_t c = 0; c + 2 < n; c++) {
        int64_t len = n - c - 1;
        ptl_complex128 t;
        for (int64_t r = 0; r < len; r++) {
            x[r] = h[(c + 1 + r) * n + c];
        }
        double beta = ptl_zlarfg_c16(x, len, 1, &t);
        x[0] = 1;
        h[(c + 1) * n + c] = beta;
        for (int64_t r = 1; r < len; r++) {
            h[(c + 1 + r) * n + c] = 0;
        }
        if (t == 0) {
            continue;
        }
        /* rows c+1..: H -= conj(t) v (v^H H) on columns c+1.. */
        for (int64_t q = c + 1; q < n; q++) {
            ptl_complex128 d = 0;
            for (int64_t r = 0; r < len; r++) {
                d += zcmul_c16(x[r], h[(c + 1 + r) * n + q]);
            }
            d = zmul_c16(conj(t), d);
            for (int64_t r = 0; r < len; r++) {
                h[(c + 1 + r) * n + q] -= zmul_c16(x[r], d);
            }
        }
        /* columns c+1..: M -= (M v) t v^H for M = H and Z, all rows */
        for (int side = 0; side < 2; side++) {
            ptl_complex128 *m = side ? z : h;
            for (int64_t r = 0; r < n; r++) {
                ptl_complex128 d = 0, *row = m + r * n + c + 1;
                for (int64_t q = 0; q < len; q++) {
                    d += zmul_c16(row[q], x[q]);
                }
                d = zmul_c16(d, t);
                for (int64_t q = 0; q < len; q++) {
                    row[q] -= zmul_c16(d, conj(x[q]));
                }
            }
        }
    }
}

/* The eigenvectors of A = Z T Z^H from its Schur form t (upper triangular) and w (T's
 * diagonal) into v's columns: T x = w_k x with x_k = 1 and x_r = 0 below k by back
 * substitution, V[:, k] = Z x of norm 1 with its largest component real; x, y: n scratch. */
static void
schur_vectors_c16(const ptl_complex128 *h, const ptl_complex128 *z, const ptl_complex128 *w,
                  ptl_complex128 *v, ptl_complex128 *x, ptl_complex128 *y, int64_t n)
{
    for (int64_t k = 0; k < n; k++) {
        double smin = fmax(DBL_EPSILON * cabs1_c16(w[k]), DBL_MIN / DBL_EPSILON);
        for (int64_t r = 0; r < n; r++) {
            x[r] = r == k;
        }
        for (int64_t r = k - 1; r >= 0; r--) {
            ptl_complex128 sum = 0;
            for (int64_t q = r + 1; q <= k; q++) {
                sum += zmul_c16(h[r * n + q], x[q]);
            }
            ptl_complex128 piv = h[r * n + r] - w[k];
            if (cabs1_c16(piv) < smin) {
                piv = smin;
            }
            x[r] = -sum / piv;
        }
        double nrm = 0, big = -1;
        int64_t at = 0;
        for (int64_t r = 0; r < n; r++) {
            ptl_complex128 sum = 0;
            for (int64_t q = 0; q <= k; q++) {
                sum += zmul_c16(z[r * n + q], x[q]);
            }
            y[r] = sum;
            nrm += zabs2_c16(sum);
        }
        for (int64_t r = 0; r < n; r++) {
            y[r] /= sqrt(nrm);
            if (zabs2_c16(y[r]) > big) {
                big = zabs2_c16(y[r]);
                at = r;
            }
        }
        ptl_complex128 ph = conj(y[at]) / cabs(y[at]);
        for (int64_t r = 0; r < n; r++) {
            v[r * n + k] = zmul_c16(y[r], ph);
        }
        v[at * n + k] = creal(v[at * n + k]);
    }
}

/* Matrix i of linalg.eig for a complex A, in complex128 (Note [Complex linear algebra]):
 * Householder reduction to Hessenberg form H = Q^H A Q, then single-shift QR sweeps
 * (Wilkinson shifts, exceptional ones at iterations 10 and 20 of an eigenvalue, zlahqr's
 * scheme) down to the Schur form T = Z^H A Z; eigenvalues T's diagonal in order; the
 * eigenvectors of T by back substitution (ztrevc: pivots below smin raised to it), times Z,
 * each normalised to norm 1 with its largest component real (zgeev).  info = 1 when an
 * eigenvalue takes more than 30 n sweeps. */
static int
eig_matrix_c16(void *ctx, int64_t i)
{
    const ZEigJob *j = ctx;
    int64_t n = j->n;
    int vecs = j->v != NULL;
    ptl_complex128 *h = malloc(sizeof(ptl_complex128) * (size_t)(2 * n * n + 3 * n + 1));
    if (h == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "linalg.eig: out of memory");
    }
    ptl_complex128 *z = h + n * n, *x = z + n * n, *y = x + n;
    memcpy(h, j->a + i * n * n, sizeof(ptl_complex128) * (size_t)(n * n));
    memset(z, 0, sizeof(ptl_complex128) * (size_t)(n * n));
    for (int64_t r = 0; r < n; r++) {
        z[r * n + r] = 1;
    }
    hessenberg_c16(h, z, x, n);
    /* shifted QR on the active block [lo, hi] of H, the whole Schur form kept */
    j->info[i] = 0;
    for (int64_t hi = n - 1, its = 0; hi >= 0;) {
        int64_t lo = hi;
        while (lo > 0) {
            double tst = cabs1_c16(h[(lo - 1) * n + lo - 1]) + cabs1_c16(h[lo * n + lo]);
            if (cabs1_c16(h[lo * n + lo - 1]) <= DBL_EPSILON * tst ||
                cabs1_c16(h[lo * n + lo - 1]) < DBL_MIN) {
                h[lo * n + lo - 1] = 0;
                break;
            }
            lo--;
        }
        if (lo == hi) {
            hi--;
            its = 0;
            continue;
        }
        if (++its > 30 * (n > 10 ? n : 10)) {
            j->info[i] = 1;
            break;
        }
        ptl_complex128 mu;
        if (its == 10 || its == 20) {
            mu = creal(h[lo * n + lo]) + 0.75 * cabs1_c16(h[(lo + 1) * n + lo]);
        }
        else {
            /* the eigenvalue of the trailing 2 x 2 block nearer its last diagonal entry */
            ptl_complex128 a = h[(hi - 1) * n + hi - 1], b = h[(hi - 1) * n + hi];
            ptl_complex128 cc = h[hi * n + hi - 1], d = h[hi * n + hi];
            ptl_complex128 half = 0.5 * (a - d);
            ptl_complex128 disc = csqrt(zmul_c16(half, half) + zmul_c16(b, cc));
            if (creal(half) * creal(disc) + cimag(half) * cimag(disc) < 0) {
                disc = -disc;
            }
            ptl_complex128 den = half + disc;
            mu = den == 0 ? d : d - zmul_c16(b, cc) / den;
        }
        /* the bulge chase: G_k on rows k, k+1 from the left, on columns from the right */
        ptl_complex128 xx = h[lo * n + lo] - mu, yy = h[(lo + 1) * n + lo];
        for (int64_t k = lo; k < hi; k++) {
            double c;
            ptl_complex128 sn;
            if (k > lo) {
                xx = h[k * n + k - 1];
                yy = h[(k + 1) * n + k - 1];
            }
            zgivens(xx, yy, &c, &sn);
            for (int64_t q = k > lo ? k - 1 : k; q < n; q++) {
                ptl_complex128 u = h[k * n + q], w = h[(k + 1) * n + q];
                h[k * n + q] = c * u + zmul_c16(sn, w);
                h[(k + 1) * n + q] = c * w - zcmul_c16(sn, u);
            }
            if (k > lo) {
                h[(k + 1) * n + k - 1] = 0;
            }
            int64_t rend = k + 2 < hi ? k + 2 : hi;
            for (int side = 0; side < 1 + vecs; side++) {
                ptl_complex128 *m = side ? z : h;
                int64_t rows = side ? n - 1 : rend;
                for (int64_t r = 0; r <= rows; r++) {
                    ptl_complex128 u = m[r * n + k], w = m[r * n + k + 1];
                    m[r * n + k] = c * u + zcmul_c16(sn, w);
                    m[r * n + k + 1] = c * w - zmul_c16(sn, u);
                }
            }
        }
    }
    ptl_complex128 *w = j->w + i * n;
    for (int64_t r = 0; r < n; r++) {
        w[r] = h[r * n + r];
    }
    if (!vecs || j->info[i]) {
        free(h);
        return 0;
    }
    schur_vectors_c16(h, z, w, j->v + i * n * n, x, y, n);
    free(h);
    return 0;
}

/* _linalg_eig_split(Tensor self, bool compute_v=True) -> (values_real, values_imag,
 * vectors_real, vectors_imag), complex A: linalg_eig.c's contract (the parts in A's real
 * dtype), by eig_matrix_c16. */
static int
eig_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *A = s[0].u.t, *t[4] = {NULL, NULL, NULL, NULL};
    int uv = s[1].u.b;
    if (refuse_cuda(op, ks, s) < 0) {
        return -1;
    }
    if ((t[0] = ptl_cast(A, PTL_DTYPE_COMPLEX128)) == NULL) {
        return -1;
    }
    const double *ad = (const double *)ptl_tensor_data(t[0]);
    for (int64_t k = 0; k < 2 * t[0]->numel; k++) {
        if (!isfinite(ad[k])) {
            linalg_release_all(t, 4);
            return ptl_error_set(PTL_ERR_RUNTIME, "torch.linalg.eig: input tensor should not "
                                 "contain infs or NaNs.");
        }
    }
    if (linalg_check_square("linalg.eig", A) < 0) {
        return linalg_release_all(t, 4);
    }
    int nb = A->dim - 2;
    int64_t n = A->sizes[nb];
    ZEigJob job = {.a = (const ptl_complex128 *)ad, .n = n};
    if ((t[1] = ptl_empty(nb + 1, A->sizes, PTL_DTYPE_COMPLEX128, A->device)) == NULL ||
        (t[2] = ptl_empty(A->dim, A->sizes, PTL_DTYPE_COMPLEX128, A->device)) == NULL ||
        (t[3] = ptl_empty(nb, A->sizes, PTL_DTYPE_INT32, A->device)) == NULL) {
        return linalg_release_all(t, 4);
    }
    job.w = (ptl_complex128 *)ptl_tensor_data(t[1]);
    job.v = uv ? (ptl_complex128 *)ptl_tensor_data(t[2]) : NULL;
    job.info = (int32_t *)ptl_tensor_data(t[3]);
    if (linalg_batch_run(linalg_batch_count(A, 2), 40 * n * n * n + 1, eig_matrix_c16,
                         &job) < 0 ||
        linalg_check_info("linalg.eig", t[3], nb > 0, PTL_ERR_LINALG,
                          "The algorithm failed to converge because the input matrix is "
                          "ill-conditioned or has too many repeated eigenvalues (error code: "
                          "%d).") < 0) {
        return linalg_release_all(t, 4);
    }
    PtlDtype rd = ptl_dtype_to_real(A->dtype);
    PtlTensorImpl *out[4] = {NULL, NULL, NULL, NULL};
    int64_t zero = 0;
    for (int k = 0; k < 4; k++) {
        PtlIValue v[1] = {ptl_iv_tensor(k < 2 ? t[1] : t[2])};
        if (k >= 2 && !uv) {
            out[k] = ptl_empty(1, &zero, A->dtype, A->device);
        }
        else {
            PtlTensorImpl *part = ptl_call_tensor(k % 2 ? PTL_OP_imag : PTL_OP_real, v);
            out[k] = part != NULL ? ptl_cast(part, rd) : NULL;
            ptl_xdecref(part);
        }
        if (out[k] == NULL) {
            linalg_release_all(out, 4);
            return linalg_release_all(t, 4);
        }
    }
    linalg_release_all(t, 4);
    for (int k = 0; k < 4; k++) {
        s[k] = ptl_iv_tensor(out[k]);
    }
    return 0;
}

/* ---- the Complex-key entries ---- */

/* The Complex fallback's error for a CUDA call (nothing takes complex CUDA matrices yet):
 * -1 when ks names CUDA, else 0. */
static int
refuse_cuda(const PtlOperator *op, PtlDispatchKeySet ks, const PtlIValue *s)
{
    if (!(ks & PTL_KEYSET(PTL_KEY_CUDA))) {
        return 0;
    }
    char kname[80];
    PtlDtype dt = PTL_DTYPE_COMPLEX64;
    for (int i = 0; i < op->schema.nargs; i++) {
        if (s[i].tag == PTL_IV_TENSOR && ptl_dtype_is_complex(s[i].u.t->dtype)) {
            dt = s[i].u.t->dtype;
            break;
        }
    }
    ptl_kernel_name(op, kname, sizeof(kname));
    memcpy(kname + strlen(kname) - 3, "cuda", 5);
    return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'", kname,
                         ptl_dtype_legacy_name(dt));
}

/* The LU family: linalg_solve.c's CPU kernels take complex matrices themselves. */
static int
complex_to_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    if (refuse_cuda(op, ks, s) < 0) {
        return -1;
    }
    return ptl_dispatcher_redispatch(op, ks & ptl_keyset_below(PTL_KEY_COMPLEX), s);
}

#define NOT_POSITIVE_DEFINITE                                                                 \
    "The factorization could not be completed because the input is not positive-definite "    \
    "(the leading minor of order %d is not positive-definite)."

/* Runs fn over A's matrices from the working copy t[0], casts the results t[1], t[2] to
 * d1 and d2 and returns them in s[0], s[1] (t[0] released).  0, or -1 with all of t
 * released. */
static int
run_two(PtlTensorImpl *A, int64_t work, LinalgMatrixFn fn, ZJob *job, PtlTensorImpl **t,
        PtlDtype d1, PtlDtype d2, PtlIValue *s)
{
    job->a = ptl_tensor_data(t[0]);
    if (linalg_batch_run(linalg_batch_count(A, 2), work, fn, job) < 0 ||
        linalg_cast_to(&t[1], d1) < 0 || linalg_cast_to(&t[2], d2) < 0) {
        return linalg_release_all(t, 3);
    }
    ptl_decref(t[0]);
    s[0] = ptl_iv_tensor(t[1]);
    s[1] = ptl_iv_tensor(t[2]);
    return 0;
}

/* linalg_cholesky_ex(Tensor self, *, bool upper=False, bool check_errors=False)
 * -> (Tensor L, Tensor info), complex: A = L L^H (upper: U^H U), linalg_decomp.c's
 * contract. */
static int
cholesky_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *A = s[0].u.t, *t[3] = {NULL, NULL, NULL};
    if (refuse_cuda(op, ks, s) < 0 || linalg_check_square("linalg.cholesky", A) < 0) {
        return -1;
    }
    int nb = A->dim - 2, c8 = A->dtype == PTL_DTYPE_COMPLEX64;
    ZJob job = {.m = A->sizes[nb], .n = A->sizes[nb], .upper = s[1].u.b};
    if ((t[0] = ptl_contiguous(A)) == NULL ||
        (t[1] = ptl_empty(A->dim, A->sizes, A->dtype, A->device)) == NULL ||
        (t[2] = ptl_empty(nb, A->sizes, PTL_DTYPE_INT32, A->device)) == NULL) {
        return linalg_release_all(t, 3);
    }
    job.out0 = ptl_tensor_data(t[1]);
    job.info = (int32_t *)ptl_tensor_data(t[2]);
    if (run_two(A, 4 * job.n * job.n * job.n / 3 + 1,
                c8 ? cholesky_matrix_c8 : cholesky_matrix_c16, &job, t, A->dtype,
                PTL_DTYPE_INT32, s) < 0) {
        return -1;
    }
    if (s[2].u.b && linalg_check_info("linalg.cholesky_ex", s[1].u.t, nb > 0, PTL_ERR_LINALG,
                                      NOT_POSITIVE_DEFINITE) < 0) {
        ptl_ivalue_release(&s[0]);
        ptl_ivalue_release(&s[1]);
        return -1;
    }
    return 0;
}

/* linalg_qr(Tensor A, str mode='reduced') -> (Tensor Q, Tensor R), complex: linalg_decomp.c's
 * contract, Q unitary. */
static int
qr_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *A = s[0].u.t, *t[3] = {NULL, NULL, NULL};
    const char *mode = s[1].u.s;
    int complete = strcmp(mode, "complete") == 0, ronly = strcmp(mode, "r") == 0;
    if (refuse_cuda(op, ks, s) < 0) {
        return -1;
    }
    if (!complete && !ronly && strcmp(mode, "reduced") != 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "qr received unrecognized mode '%s' but expected "
                             "one of 'reduced' (default), 'r', or 'complete'", mode);
    }
    if (linalg_check_matrix("linalg.qr", A, "A") < 0) {
        return -1;
    }
    int nb = A->dim - 2;
    int64_t m = A->sizes[nb], n = A->sizes[nb + 1], k = m < n ? m : n, sz[PTL_MAX_DIMS];
    int64_t zero = 0;
    ZJob job = {.m = m, .n = n, .rr = complete ? m : k, .qc = complete ? m : k};
    memcpy(sz, A->sizes, sizeof(int64_t) * (size_t)nb);
    sz[nb] = job.rr;
    sz[nb + 1] = n;
    if ((t[0] = ptl_contiguous(A)) == NULL ||
        (t[2] = ptl_empty(nb + 2, sz, A->dtype, A->device)) == NULL) {
        return linalg_release_all(t, 3);
    }
    sz[nb] = m;
    sz[nb + 1] = job.qc;
    t[1] = ronly ? ptl_empty(1, &zero, A->dtype, A->device)
                 : ptl_empty(nb + 2, sz, A->dtype, A->device);
    if (t[1] == NULL) {
        return linalg_release_all(t, 3);
    }
    job.out0 = ptl_tensor_data(t[2]);
    job.out1 = ronly ? NULL : ptl_tensor_data(t[1]);
    return run_two(A, 16 * m * n * (k + 1) + 1,
                   A->dtype == PTL_DTYPE_COMPLEX64 ? qr_matrix_c8 : qr_matrix_c16, &job, t,
                   A->dtype, A->dtype, s);
}

/* _linalg_eigh(Tensor A, str UPLO="L", bool compute_v=True)
 * -> (Tensor eigenvalues, Tensor eigenvectors), complex Hermitian A: real eigenvalues
 * ascending (float32 for complex64), complex eigenvectors; linalg_decomp.c's contract. */
static int
eigh_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *A = s[0].u.t, *t[3] = {NULL, NULL, NULL};
    const char *uplo = s[1].u.s;
    int uv = s[2].u.b;
    if (refuse_cuda(op, ks, s) < 0) {
        return -1;
    }
    if ((uplo[0] != 'L' && uplo[0] != 'U' && uplo[0] != 'l' && uplo[0] != 'u') ||
        uplo[1] != '\0') {
        return ptl_error_set(PTL_ERR_RUNTIME, "Expected UPLO argument to be 'L' or 'U', but "
                             "got %s", uplo);
    }
    if (linalg_check_square("linalg.eigh", A) < 0) {
        return -1;
    }
    int nb = A->dim - 2;
    int64_t n = A->sizes[nb], zero = 0;
    /* in A's precision (Note [Complex linear algebra]) */
    if ((t[0] = ptl_contiguous(A)) == NULL ||
        (t[1] = ptl_empty(nb + 1, A->sizes, ptl_dtype_to_real(A->dtype), A->device)) == NULL ||
        (t[2] = ptl_empty(uv ? A->dim : 1, uv ? A->sizes : &zero, A->dtype, A->device)) == NULL) {
        return linalg_release_all(t, 3);
    }
    PtlZEighJob job = {.a = ptl_tensor_data(t[0]), .vals = ptl_tensor_data(t[1]),
                       .vecs = uv ? ptl_tensor_data(t[2]) : NULL, .n = n,
                       .upper = uplo[0] == 'U' || uplo[0] == 'u'};
    if (linalg_batch_run(linalg_batch_count(A, 2), 20 * n * n * n + 1,
                         A->dtype == PTL_DTYPE_COMPLEX64 ? ptl_zeigh_matrix_c8
                                                         : ptl_zeigh_matrix_c16, &job) < 0) {
        return linalg_release_all(t, 3);
    }
    ptl_decref(t[0]);
    s[0] = ptl_iv_tensor(t[1]);
    s[1] = ptl_iv_tensor(t[2]);
    return 0;
}

/* _linalg_svd(Tensor A, bool full_matrices=False, bool compute_uv=True, *, str? driver=None)
 * -> (Tensor U, Tensor S, Tensor Vh), complex: svd.c's contract (S real, descending), in A's
 * precision (linalg_complex_svd.c, Note [Complex SVD]). */
static int
svd_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *A = s[0].u.t, *a = NULL, *out[3] = {NULL, NULL, NULL};
    int full = s[1].u.b, uv = s[2].u.b;
    if (refuse_cuda(op, ks, s) < 0) {
        return -1;
    }
    if (A->dim < 2) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "linalg.svd: The input tensor A must have at least 2 dimensions.");
    }
    if (s[3].tag != PTL_IV_NONE) {
        return ptl_error_set(PTL_ERR_RUNTIME, "torch.linalg.svd: keyword argument `driver=` is "
                             "only supported on CUDA inputs with cuSOLVER backend.");
    }
    int nd = A->dim, c8 = A->dtype == PTL_DTYPE_COMPLEX64;
    int64_t m = A->sizes[nd - 2], n = A->sizes[nd - 1], k = m < n ? m : n, sz[PTL_MAX_DIMS];
    int64_t zero = 0;
    PtlZSvdJob job = {NULL, NULL, NULL, NULL, m, n, full ? m : k, full ? n : k};
    if ((a = ptl_contiguous(A)) == NULL) {
        return -1;
    }
    const void *ad = ptl_tensor_data(a);
    for (int64_t i = 0; i < 2 * a->numel; i++) {
        if (!isfinite(c8 ? ((const float *)ad)[i] : ((const double *)ad)[i])) {
            ptl_error_set(PTL_ERR_LINALG, "linalg.svd: The algorithm failed to converge "
                          "because the input matrix contained non-finite values.");
            goto error;
        }
    }
    memcpy(sz, A->sizes, sizeof(int64_t) * (size_t)nd);
    sz[nd - 1] = job.ucols;
    out[0] = uv ? ptl_empty(nd, sz, A->dtype, A->device)
                : ptl_empty(1, &zero, A->dtype, A->device);
    sz[nd - 2] = k;
    out[1] = ptl_empty(nd - 1, sz, ptl_dtype_to_real(A->dtype), A->device);
    sz[nd - 2] = job.vrows;
    sz[nd - 1] = n;
    out[2] = uv ? ptl_empty(nd, sz, A->dtype, A->device)
                : ptl_empty(1, &zero, A->dtype, A->device);
    if (out[0] == NULL || out[1] == NULL || out[2] == NULL) {
        goto error;
    }
    job.a = ad;
    job.s = ptl_tensor_data(out[1]);
    job.u = uv ? ptl_tensor_data(out[0]) : NULL;
    job.vh = uv ? ptl_tensor_data(out[2]) : NULL;
    if (linalg_batch_run(linalg_batch_count(A, 2), 20 * m * n * (k + 1) + 1,
                         c8 ? ptl_zsvd_matrix_c8 : ptl_zsvd_matrix_c16, &job) < 0) {
        goto error;
    }
    ptl_decref(a);
    for (int i = 0; i < 3; i++) {
        s[i] = ptl_iv_tensor(out[i]);
    }
    return 0;
error:
    ptl_xdecref(a);
    linalg_release_all(out, 3);
    return -1;
}

static const PtlKernelReg linalg_complex_kernels[] = {
    {PTL_OP_linalg_lu_factor_ex, PTL_KEY_COMPLEX, complex_to_cpu},
    {PTL_OP__linalg_solve_ex, PTL_KEY_COMPLEX, complex_to_cpu},
    {PTL_OP_linalg_inv_ex, PTL_KEY_COMPLEX, complex_to_cpu},
    {PTL_OP__linalg_det, PTL_KEY_COMPLEX, complex_to_cpu},
    {PTL_OP__linalg_slogdet, PTL_KEY_COMPLEX, complex_to_cpu},
    {PTL_OP_linalg_solve_triangular, PTL_KEY_COMPLEX, complex_to_cpu},
    {PTL_OP_linalg_cholesky_ex, PTL_KEY_COMPLEX, cholesky_complex},
    {PTL_OP_linalg_qr, PTL_KEY_COMPLEX, qr_complex},
    {PTL_OP__linalg_eigh, PTL_KEY_COMPLEX, eigh_complex},
    {PTL_OP__linalg_svd, PTL_KEY_COMPLEX, svd_complex},
    {PTL_OP__linalg_eig_split, PTL_KEY_COMPLEX, eig_complex},
};
PTL_DEFINE_REGISTER(linalg_complex_kernels)
