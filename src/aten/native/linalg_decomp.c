/* linalg_decomp.c -- the factorisations: linalg_cholesky(_ex), linalg_qr, _linalg_eigh /
 * linalg_eigh / linalg_eigvalsh.  Mirrors ATen/native/BatchLinearAlgebra.cpp, which calls
 * LAPACK's potrf, geqrf + orgqr and syevd; pytorchlite computes them itself, float64 in
 * float64 and float32 in float32 (Note [Float64 linear algebra] in linalg_solve.c).
 *
 * Note [Householder QR]
 * ~~~~~~~~~~~~~~~~~~~~~
 * Column j of A (m x n) below the diagonal, x = A[j:, j], is reflected onto beta e1 with
 * beta = -sign(x0) |x| (LAPACK's larfg choice: no cancellation, and R's signs match
 * LAPACK's) by H = I - tau v v^T, v = (1, (x[1:]) / (x0 - beta)), tau = (beta - x0) / beta;
 * H is applied to the columns right of j.  Q = H_0 H_1 ... H_{k-1} applied to the first
 * columns of I (k = min(m, n)).  A zero column gives tau = 0 (H = I).  svd.c completes its
 * orthonormal bases with the same reflections.
 *
 * Note [Symmetric eigensolver]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * eigh reduces the symmetric matrix (built from the triangle UPLO names) to a tridiagonal
 * T = Q^T A Q by n - 2 Householder reflections and diagonalises T by the implicit QL
 * iteration with Wilkinson's shift; a subdiagonal element counts as zero once it is below
 * eps (|d[i]| + |d[i+1]|) (deflation).  Eigenvalues come out ascending; eigenvector signs
 * may differ from LAPACK's.  Three parts, each shaped for the cache and the GEMM:
 * - The reduction goes in panels of TRIDIAG_BLOCK steps (LAPACK's sytrd + latrd): step k
 *   brings row k up to date with the panel's earlier rank-2 terms, makes its reflection v
 *   and w = p - (tau / 2) (p . v) v, p = tau (S v - V W^T v - W V^T v) with S the trailing
 *   matrix as stored at the panel's start (one pass over it, as a sum of its rows);
 *   after the panel the trailing matrix takes A -= V W^T + W V^T in two GEMMs.  One pass
 *   over the trailing matrix a step where a rank-2 update a step made three, and half the
 *   flops in the GEMM.
 * - Q (only when the vectors are wanted) is diag(1, Q1), Q1 the Q of the QR whose columns
 *   hold the reflections, formed by blocks of QR_BLOCK as qr_matrix forms its Q (Note
 *   [Blocked QR]), then transposed: the QL works on Q^T's rows.
 * - The QL's scalar part (d, e, the rotations' c and s) needs no vectors: eigvalsh stops
 *   there (and gives eigh's eigenvalues bit for bit up to LINALG_DC_LEAF rows).  With
 *   vectors, each sweep's rotations (for i from m - 1 down to l, rows i and i + 1 of Q^T)
 *   are kept and applied after the sweep, SWEEP_CHUNK columns at a time: the row a rotation
 *   leaves for the next one is carried in registers, so a row is loaded and stored once a
 *   rotation instead of twice.  (Measured at n = 256: 32 columns as four 8-wide vectors
 *   did best of the widths tried, 8 to 64 columns in 4- or 8-wide vectors; batching
 *   several sweeps as a wavefront to keep the rows in L1, applying two sweeps in one pass,
 *   and a three-multiply form of the rotation were all no faster.)
 * The work is about 4/3 n^3 for the reduction, 4/3 n^3 for Q (GEMM) and 3 n^3 for the
 * rotations, which were half of eigh's time at n = 256.  So above LINALG_DC_LEAF rows the
 * vectors come from divide and conquer instead (Note [Tridiagonal divide and conquer] in
 * linalg_eigh_dc.c), T's own vectors Z, then Q Z by applying the blocks of reflections to Z
 * (2 n^3, GEMM; Q is never formed), as LAPACK's syevd does.  float64 eigvalsh keeps the QL
 * at every size.  The QL and the divide and conquer are in linalg_eigh_dc.c.
 * float32 runs the same code in float (DEFINE_EIGH; Note [Float64 linear algebra] in
 * linalg_solve.c), with these differences: the reduction's panels are TRIDIAG_BLOCK_F32 = 16
 * steps; vector lanes are summed as a tree (lanes_sum_f4; double keeps its order and bits);
 * eigvalsh's eigenvalues come from the root-free QL of Pal, Walker and Kahan (LAPACK's
 * sterf) on the float tridiagonal in double (ptl_linalg_tridiagonal_values: no square root
 * and its two divisions side by side, where the QL's chain of a square root and a division
 * was half of float32 eigvalsh's time); and, near float's underflow, householder_f4 scales
 * a column whose entries are all below 2^-60 by 2^64, the QL scales T near 1 and the
 * merges deflate below 2^-60 (ones(n, n)'s T has entries falling to 2^-130, where float's
 * subnormals had broken convergence and orthogonality).  Measured at 64 / 128 / 256 against
 * PyTorch's ssyevd (one thread): eigh 1.31 / 1.40 / 1.53, eigvalsh 1.35 / 1.38 / 1.47, where
 * the float64 route was 0.86 / 0.80 / 0.81 and 0.63 / 0.62 / 0.64.
 * A matrix with a nan or an inf in the triangle read gets nan for every value and vector
 * entry (the real and the complex eigh alike): the reduction's scaled norms and the QL's
 * deflation test (false for a nan) had turned some into finite values, a silent answer where
 * LAPACK gives nan in the block the nan couples or fails to converge; and a coupling of T
 * that is not finite makes its pair nan in the QL (tridiagonal_ql). */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "../../c10/cpu_features.h"
#include "../../c10/tls.h"
#include "../loops.h"
#include "gemm.h"
#include "linalg_impl.h"

/* ---- Cholesky ---- */

/* Note [Blocked Cholesky]
 * ~~~~~~~~~~~~~~~~~~~~~~~
 * The upper factor U (U^T U = A) in row blocks, right-looking (LAPACK's potrf with uplo 'U'):
 * factor the diagonal block U11; solve the panel U12 = U11^-T A12; subtract U12^T U12 from
 * the trailing matrix's upper triangle.  Row-major storage favours U: the panel is jb
 * contiguous rows, so the solve is axpys over whole rows, and no copy is transposed on the
 * way (the lower factor's panel is a column block, which had to be transposed into scratch
 * and back, and those strided copies and the solve's axpys were half of the time at n =
 * 256).  linalg.cholesky's default L is U^T: the load reads A's lower triangle transposed
 * into the upper one and the end transposes U back, by 8 x 8 tiles; upper=True reads and
 * writes U as it is.  Blocks of 64, whose diagonal blocks are factored the same way in blocks
 * of 16, whose diagonal blocks take the unblocked loop (rank-1 updates over rows).  The panel
 * solve goes in strips of 16 rows: the rows above a strip are subtracted from it by the GEMM,
 * then the strip is solved by axpys; the trailing update is the GEMM on block rows of the
 * upper triangle (only the diagonal blocks' lower halves are wasted).  A diagonal is
 * divided by as a reciprocal multiply.  The first diagonal that is not positive (or NaN)
 * stops the factorization at its order (LAPACK's info), as before. */
#define CHOLESKY_BLOCK 64
#define CHOLESKY_INNER_BLOCK 16
#define CHOLESKY_TILE 8

/* The Cholesky kernels come in two instances from one template, DEFINE_CHOLESKY(T, SUF,
 * GEMM, SQRT): _f8 on double with ptl_gemm_f64 and _f4 on float with ptl_gemm_f32 (Note
 * [Float64 linear algebra] in linalg_solve.c).  In the template's order:
 *
 * cholesky_unblocked: the upper Cholesky factor of the jb x jb symmetric matrix whose upper
 * triangle is at a (row stride lda), in place; the strict lower triangle is not touched.
 * Returns info: 0, or the order of the first leading minor that is not positive-definite
 * (LAPACK's potf2).
 *
 * cholesky_solve_rows: rows [c0, c1) of the panel x (r columns, rows lda apart) solved
 * against the upper factor u: x_c = (x_c - sum over t in [c0, c) of u[t, c] x_t) / u[c, c],
 * the rows above c0 already subtracted.
 *
 * cholesky_blocked: cholesky_unblocked's factor for n x n in row blocks of nb.  Returns
 * info as cholesky_unblocked's, or -1 with the error set (out of memory).
 *
 * cholesky_transpose: dst[r, c] = src[c, r] on dst's lower triangle (c <= r; src may be
 * dst, whose upper triangle is then read) or on its upper one (c >= r), n x n, by tiles.
 *
 * cholesky_matrix (a LinalgMatrixFn on a DecompJob): matrix i's factor into out0, L (from
 * A's lower triangle) or, with upper, U (from A's upper triangle); the other triangle
 * zeroed. */
#define DEFINE_CHOLESKY(T, SUF, GEMM, SQRT)                                                   \
    static PTL_LOOP_CLONES_WIDE int32_t cholesky_unblocked_##SUF(T *a, int64_t jb,           \
                                                                 int64_t lda)                 \
    {                                                                                         \
        for (int64_t j = 0; j < jb; j++) {                                                    \
            T *rj = a + j * lda, d = rj[j];                                                   \
            if (!(d > 0)) {                                                                   \
                return (int32_t)(j + 1);                                                      \
            }                                                                                 \
            d = SQRT(d);                                                                      \
            rj[j] = d;                                                                        \
            T s = 1 / d;                                                                      \
            for (int64_t c = j + 1; c < jb; c++) {                                            \
                rj[c] *= s;                                                                   \
            }                                                                                 \
            for (int64_t i = j + 1; i < jb; i++) {                                            \
                T f = rj[i], *ri = a + i * lda;                                               \
                for (int64_t c = i; c < jb; c++) {                                            \
                    ri[c] -= f * rj[c];                                                       \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
        return 0;                                                                             \
    }                                                                                         \
                                                                                              \
    static PTL_LOOP_CLONES_WIDE void cholesky_solve_rows_##SUF(const T *u, int64_t lda,      \
                                                               T *x, int64_t c0, int64_t c1, \
                                                               int64_t r)                     \
    {                                                                                         \
        for (int64_t c = c0; c < c1; c++) {                                                   \
            T *xc = x + c * lda;                                                              \
            int64_t t = c0;                                                                   \
            for (; t + 1 < c; t += 2) {                                                       \
                T f0 = u[t * lda + c], f1 = u[(t + 1) * lda + c];                             \
                const T *x0 = x + t * lda, *x1 = x0 + lda;                                    \
                for (int64_t i = 0; i < r; i++) {                                             \
                    xc[i] -= f0 * x0[i] + f1 * x1[i];                                         \
                }                                                                             \
            }                                                                                 \
            if (t < c) {                                                                      \
                T f0 = u[t * lda + c];                                                        \
                const T *x0 = x + t * lda;                                                    \
                for (int64_t i = 0; i < r; i++) {                                             \
                    xc[i] -= f0 * x0[i];                                                      \
                }                                                                             \
            }                                                                                 \
            T s = 1 / u[c * lda + c];                                                         \
            for (int64_t i = 0; i < r; i++) {                                                 \
                xc[i] *= s;                                                                   \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    static int32_t cholesky_blocked_##SUF(T *a, int64_t n, int64_t lda, int64_t nb)          \
    {                                                                                         \
        for (int64_t j0 = 0; j0 < n; j0 += nb) {                                              \
            int64_t jb = n - j0 < nb ? n - j0 : nb, r = n - j0 - jb;                          \
            T *u11 = a + j0 * lda + j0, *u12 = u11 + jb, *a22 = u12 + jb * lda;               \
            int32_t bad = nb > CHOLESKY_INNER_BLOCK && jb > CHOLESKY_INNER_BLOCK              \
                              ? cholesky_blocked_##SUF(u11, jb, lda, CHOLESKY_INNER_BLOCK)    \
                              : cholesky_unblocked_##SUF(u11, jb, lda);                       \
            if (bad != 0) {                                                                   \
                return bad < 0 ? -1 : (int32_t)j0 + bad;                                      \
            }                                                                                 \
            /* U12 = U11^-T A12 by strips of rows: the GEMM subtracts the rows above */       \
            for (int64_t c0 = 0; c0 < jb && r > 0; c0 += CHOLESKY_INNER_BLOCK) {              \
                int64_t c1 = jb - c0 < CHOLESKY_INNER_BLOCK ? jb : c0 + CHOLESKY_INNER_BLOCK; \
                if (c0 > 0 && GEMM(c1 - c0, r, c0, -1.0, u11 + c0, 1, lda, u12, lda, 1, 1.0,  \
                                   u12 + c0 * lda, lda) < 0) {                                \
                    return -1;                                                                \
                }                                                                             \
                cholesky_solve_rows_##SUF(u11, lda, u12, c0, c1, r);                          \
            }                                                                                 \
            /* A22[i0:i1, i0:r] -= U12[:, i0:i1]^T U12[:, i0:r]: the upper triangle */        \
            for (int64_t i0 = 0; i0 < r; i0 += nb) {                                          \
                int64_t i1 = r - i0 < nb ? r : i0 + nb;                                       \
                if (GEMM(i1 - i0, r - i0, jb, -1.0, u12 + i0, 1, lda, u12 + i0, lda, 1, 1.0,  \
                         a22 + i0 * lda + i0, lda) < 0) {                                     \
                    return -1;                                                                \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
        return 0;                                                                             \
    }                                                                                         \
                                                                                              \
    static void cholesky_transpose_##SUF(T *dst, const T *src, int64_t n, int lower)         \
    {                                                                                         \
        for (int64_t r0 = 0; r0 < n; r0 += CHOLESKY_TILE) {                                   \
            int64_t r1 = n - r0 < CHOLESKY_TILE ? n : r0 + CHOLESKY_TILE;                     \
            for (int64_t c0 = lower ? 0 : r0; c0 < (lower ? r1 : n); c0 += CHOLESKY_TILE) {   \
                int64_t c1 = n - c0 < CHOLESKY_TILE ? n : c0 + CHOLESKY_TILE;                 \
                for (int64_t r = r0; r < r1; r++) {                                           \
                    int64_t cb = lower || c0 > r ? c0 : r, ce = lower && c1 > r ? r + 1 : c1; \
                    for (int64_t c = cb; c < ce; c++) {                                       \
                        dst[r * n + c] = src[c * n + r];                                      \
                    }                                                                         \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    static int cholesky_matrix_##SUF(void *ctx, int64_t i)                                    \
    {                                                                                         \
        const DecompJob *j = ctx;                                                             \
        int64_t n = j->n;                                                                     \
        T *u = (T *)j->out0 + i * n * n;                                                      \
        const T *a = (const T *)j->a + i * n * n;                                             \
        if (j->upper) {                                                                       \
            memcpy(u, a, sizeof(T) * (size_t)(n * n));                                        \
        } else {                                                                              \
            cholesky_transpose_##SUF(u, a, n, 0);                                             \
        }                                                                                     \
        j->info[i] = cholesky_blocked_##SUF(u, n, n, CHOLESKY_BLOCK);                         \
        if (j->info[i] < 0) {                                                                 \
            return -1;                                                                        \
        }                                                                                     \
        if (!j->upper) {                                                                      \
            cholesky_transpose_##SUF(u, u, n, 1);                                             \
        }                                                                                     \
        for (int64_t r = 0; r < n; r++) {                                                     \
            if (j->upper) {                                                                   \
                memset(u + r * n, 0, sizeof(T) * (size_t)r);                                  \
            } else {                                                                          \
                memset(u + r * n + r + 1, 0, sizeof(T) * (size_t)(n - r - 1));                \
            }                                                                                 \
        }                                                                                     \
        return 0;                                                                             \
    }

/* ---- Householder reflections and QR ---- */

/* Note [Blocked QR]
 * ~~~~~~~~~~~~~~~~~
 * qr_matrix works in column blocks of QR_BLOCK (LAPACK's geqrf and orgqr): the block's
 * reflections are made and applied to the block's own columns one by one (as above), then
 * their product H_j0 ... H_j0+jb-1 = I - V T V^T (V unit lower trapezoidal, T upper
 * triangular: LAPACK's larft) is applied to the trailing columns at once, C -= V (T^T (V^T
 * C)), two GEMMs; Q is formed backwards the same way, Q -= V (T (V^T Q)).  T's entries
 * above the diagonal start as V^T V, one more GEMM (a dot product down V's strided columns
 * per entry had been a fifth of qr 256).  The block's own columns are factored in a
 * column-major copy (qr_panel): each reflection's dot products and updates then run down
 * whole columns in wide vectors, where on the row-major matrix they ran across the block's
 * few columns (reflect_rows was a third of qr 256x65's time, lstsq's QR of [A b]).  In the
 * float instance a last block followed by at most QR_WIDE_TAIL columns copies them into its
 * panel and updates them there, reflection by reflection, instead of building V and T for
 * them (lstsq's [A b] built a block reflector for b alone: lstsq f32 1.08 -> 1.2 of
 * PyTorch's speed at 64x64).  Matrices of at most one block take the loops above alone
 * (svd.c calls those directly); eigh forms its Q by blocks at every size. */
#define QR_BLOCK 32

/* the vectors of the panel's sums: eight doubles or sixteen floats, or their halves
 * (DEFINE_QR_PANEL) */
typedef double QrVec8 __attribute__((vector_size(64)));
typedef float QrVec4 __attribute__((vector_size(64)));
typedef double QrHalf8 __attribute__((vector_size(32)));
typedef float QrHalf4 __attribute__((vector_size(32)));

/* The float QR's last panel takes up to this many trailing columns into its column-major
 * copy (qr_blocked): lstsq's [A b] had built a block reflector for b alone. */
#define QR_WIDE_TAIL 8

/* Scratch for the blocked QR of an m x n matrix whose Q has qc columns, in elements. */
int64_t
ptl_linalg_qr_scratch(int64_t m, int64_t n, int64_t qc)
{
    int64_t wn = n > qc ? n : qc;
    return m * (QR_BLOCK + QR_WIDE_TAIL) + QR_BLOCK * QR_BLOCK + QR_BLOCK * wn + wn;
}

/* householder_unit and qr_panel of DEFINE_QR's instance SUF, named with HS: their sums in
 * NH vectors VH of T side by side, one vector of 64 bytes (NH = 1, HS = w) on AVX-512, two
 * of 32 (NH = 2, HS = h) elsewhere: the AVX2 clone kept 64-byte vectors in memory (lstsq
 * 256x64 float64 at 0.63-0.71 of PyTorch's speed on a Zen 3).  Every lane sees the same
 * operations at either width and the halves' lanes are summed in the 64-byte vector's
 * order, so the bits do not depend on the width. */
#define DEFINE_QR_PANEL(T, SUF, VH, NH, HS, SQRT, HYPOT, SS_LO, SS_HI)                        \
    /* householder for a contiguous x: the sum of squares unscaled, in wide vectors, and the  \
     * division by x0 - beta one reciprocal (LAPACK's larfg scales by it too); a sum that may \
     * have overflowed or lost its terms to underflow (or is 0 or NaN) takes householder. */  \
    static PTL_LOOP_CLONES_WIDE T                                                             \
    householder_unit_##SUF##_##HS(T *x, int64_t len)                                          \
    {                                                                                         \
        enum { HL = sizeof(VH) / sizeof(T), LANES = NH * HL };                                \
        VH acc[NH];                                                                           \
        memset(acc, 0, sizeof(acc));                                                          \
        int64_t i = 1;                                                                        \
        for (; i + LANES <= len; i += LANES) {                                                \
            for (int h = 0; h < NH; h++) {                                                    \
                VH v;                                                                         \
                memcpy(&v, x + i + h * HL, sizeof(v));                                        \
                acc[h] += v * v;                                                              \
            }                                                                                 \
        }                                                                                     \
        T ss = 0;                                                                             \
        for (int h = 0; h < NH; h++) {                                                        \
            for (int l = 0; l < HL; l++) {                                                    \
                ss += acc[h][l];                                                              \
            }                                                                                 \
        }                                                                                     \
        for (; i < len; i++) {                                                                \
            ss += x[i] * x[i];                                                                \
        }                                                                                     \
        if (!(ss > SS_LO && ss < SS_HI)) {                                                    \
            return householder_##SUF(x, len, 1);                                              \
        }                                                                                     \
        T x0 = x[0], nrm = HYPOT(x0, SQRT(ss));                                               \
        T beta = x0 >= 0 ? -nrm : nrm, f = 1 / (x0 - beta);                                   \
        for (i = 1; i < len; i++) {                                                           \
            x[i] *= f;                                                                        \
        }                                                                                     \
        x[0] = beta;                                                                          \
        return (beta - x0) / beta;                                                            \
    }                                                                                         \
                                                                                              \
    /* The QR of the block at a (rows x jb, row stride n) in place, as qr_factor makes it,    \
     * through the column-major copy p (nc x rows): its reflections, applied to the nc - jb   \
     * columns after it too. */                                                               \
    static PTL_LOOP_CLONES_WIDE void                                                          \
    qr_panel_##SUF##_##HS(T *a, int64_t n, int64_t rows, int64_t jb, int64_t nc, T *tau,      \
                          T *p)                                                               \
    {                                                                                         \
        enum { HL = sizeof(VH) / sizeof(T), LANES = NH * HL };                                \
        panel_copy_##SUF(a, n, rows, nc, p, 0);                                               \
        for (int64_t c = 0; c < jb; c++) {                                                    \
            T *x = p + c * rows + c;                                                          \
            int64_t len = rows - c;                                                           \
            tau[c] = householder_unit_##SUF##_##HS(x, len);                                   \
            for (int64_t d = c + 1; d < nc && tau[c] != 0; d++) {                             \
                /* y -= tau (v . y) v, v = (1, x[1:]); two sums, for the adds' latency */     \
                T *y = p + d * rows + c;                                                      \
                VH acc[NH], acc2[NH];                                                         \
                memset(acc, 0, sizeof(acc));                                                  \
                memset(acc2, 0, sizeof(acc2));                                                \
                int64_t i = 1;                                                                \
                for (; i + 2 * LANES <= len; i += 2 * LANES) {                                \
                    for (int h = 0; h < NH; h++) {                                            \
                        VH xv, yv, xv2, yv2;                                                  \
                        memcpy(&xv, x + i + h * HL, sizeof(xv));                              \
                        memcpy(&yv, y + i + h * HL, sizeof(yv));                              \
                        memcpy(&xv2, x + i + LANES + h * HL, sizeof(xv2));                    \
                        memcpy(&yv2, y + i + LANES + h * HL, sizeof(yv2));                    \
                        acc[h] += xv * yv;                                                    \
                        acc2[h] += xv2 * yv2;                                                 \
                    }                                                                         \
                }                                                                             \
                T lane[LANES];                                                                \
                for (int h = 0; h < NH; h++) {                                                \
                    acc[h] += acc2[h];                                                        \
                    memcpy(lane + h * HL, &acc[h], sizeof(acc[h]));                           \
                }                                                                             \
                T w = 0;                                                                      \
                if (sizeof(T) == sizeof(float)) {                                             \
                    /* float: the tail in four sums and the lanes added as a tree (sixteen    \
                     * dependent additions and the tail's chain had been most of the panel's  \
                     * time); double keeps its order and bits */                              \
                    T t[4] = {0, 0, 0, 0};                                                    \
                    for (; i + 4 <= len; i += 4) {                                            \
                        for (int l = 0; l < 4; l++) {                                         \
                            t[l] += x[i + l] * y[i + l];                                      \
                        }                                                                     \
                    }                                                                         \
                    for (; i < len; i++) {                                                    \
                        t[0] += x[i] * y[i];                                                  \
                    }                                                                         \
                    T __attribute__((vector_size(32))) h8, h8b;                               \
                    T __attribute__((vector_size(16))) h4, h4b;                               \
                    T r4[16 / sizeof(T)];                                                     \
                    memcpy(&h8, lane, sizeof(h8));                                            \
                    memcpy(&h8b, (char *)lane + sizeof(h8), sizeof(h8b));                     \
                    h8 += h8b;                                                                \
                    memcpy(&h4, &h8, sizeof(h4));                                             \
                    memcpy(&h4b, (char *)&h8 + sizeof(h4), sizeof(h4b));                      \
                    h4 += h4b;                                                                \
                    memcpy(r4, &h4, sizeof(r4));                                              \
                    w = (t[0] + t[1]) + (t[2] + t[3]);                                        \
                    for (int l = 0; l < (int)(16 / sizeof(T)); l++) {                         \
                        w += r4[l];                                                           \
                    }                                                                         \
                }                                                                             \
                for (int l = 0; l < LANES && sizeof(T) != sizeof(float); l++) {               \
                    w += lane[l];                                                             \
                }                                                                             \
                for (; i < len; i++) {                                                        \
                    w += x[i] * y[i];                                                         \
                }                                                                             \
                w = tau[c] * (w + y[0]);                                                      \
                y[0] -= w;                                                                    \
                for (i = 1; i < len; i++) {                                                   \
                    y[i] -= w * x[i];                                                         \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
        panel_copy_##SUF(a, n, rows, nc, p, 1);                                               \
    }

/* The QR kernels come in two instances from one template, DEFINE_QR(T, SUF, GEMM, FABS,
 * SQRT, HYPOT, VT, VH, SS_LO, SS_HI): _f8 on double with ptl_gemm_f64 (svd.c and eigh use
 * them through the ptl_linalg_qr_* wrappers below) and _f4 on float with ptl_gemm_f32, for
 * float32 qr (Note [Float64 linear algebra] in linalg_solve.c).  Scratch sizes count elements of T.  In the
 * template's order:
 *
 * householder: makes the reflection of x (len entries, stride inc) onto beta e1: x becomes
 * (beta, v[1:]) with v0 = 1 implied; returns tau.
 *
 * householder_unit, panel_copy, qr_panel: the same reflections on a contiguous column, a
 * block's column-major copy and the block's QR through it (Note [Blocked QR]), their sums
 * in VT's lanes, or VH's two halves below AVX-512 (DEFINE_QR_PANEL: the same bits; the float
 * instance adds qr_panel's lanes as a tree and its tail in four sums: sixteen dependent
 * additions a column pair were most of lstsq 256x64's panel time; the double instance keeps
 * its order and bits); SS_LO and SS_HI bound the sums of squares that need no scaling.
 *
 * reflect_rows: applies I - tau v v^T to columns c0..c1 of the len rows at c (row stride
 * ld): v[0] = 1 and v[i] = vs[i * vinc] for i >= 1.  w: c1 scratch.
 *
 * qr_factor: QR of a (m x n, row-major) in place: R in the upper triangle, the
 * reflections' v below it and their taus in tau (min(m, n)).  w: n scratch.  See Note
 * [Householder QR].
 *
 * qr_form_q: q (m x qc, row-major) = the first qc columns of H_0 ... H_{k-1} from the a
 * and tau of qr_factor.  w: qc scratch.
 *
 * qr_block_reflector: V (rows x jb, row-major) with ones on the diagonal and zeros above,
 * from the reflections stored below the diagonal of the block at a (row stride n); T (jb x
 * jb, upper) such that H_0 ... H_{jb-1} = I - V T V^T (LAPACK's larft, forward and
 * columnwise), from V^T V by the GEMM.  0 or -1.
 *
 * qr_apply_block: C (rows x nc, row stride ldc) -= V (op(T) (V^T C)) with op(T) = T^T when
 * trans (applying Q^T), T otherwise (applying Q).  w: jb x nc scratch.  0 or -1.  Cloned
 * for the wide vectors: inlined into its two callers, its w = op(T) w loops ran in the
 * baseline's 16-byte vectors, a sixth of qr 64x64's time (0.92-0.98x PyTorch's).
 *
 * qr_form_q_blocked: q (m x qc, row stride ldq) = the first qc columns of H_0 ...
 * H_{k-1}, the reflections below the diagonal of a (m x n, row stride n) with their taus
 * (k = min(m, n)), applied block by block from the last (Note [Blocked QR]).  scratch:
 * ptl_linalg_qr_scratch(m, n, qc) elements.  0 or -1.
 *
 * qr_blocked: qr_factor and, when q is not NULL, qr_form_q, in column blocks (Note
 * [Blocked QR]).  scratch: ptl_linalg_qr_scratch(m, n, qc) elements.  0 or -1. */
#define DEFINE_QR(T, SUF, GEMM, FABS, SQRT, HYPOT, VT, VH, SS_LO, SS_HI)                      \
    static PTL_LOOP_CLONES_WIDE T                                                             \
    householder_##SUF(T *x, int64_t len, int64_t inc)                                         \
    {                                                                                         \
        T scale = 0, ss = 0;                                                                  \
        for (int64_t i = 1; i < len; i++) {                                                   \
            T t = FABS(x[i * inc]);                                                           \
            scale = t > scale ? t : scale;   /* fmax, inline (a NaN is skipped either way) */ \
        }                                                                                     \
        if (scale == 0) {                                                                     \
            return 0;                                                                         \
        }                                                                                     \
        /* float: a column whose entries are all below 2^-60 is scaled up by 2^64 (exact; v   \
         * and tau do not change, beta is scaled back), or its v, beta and tau, computed near \
         * the subnormals, made an H far from orthogonal (float32 eigh of ones(n, n) lost     \
         * its vectors' orthogonality); double never takes it and keeps its bits */           \
        int up = 0;                                                                           \
        while (sizeof(T) == sizeof(float) && up < 3 && scale < (T)0x1p-60 &&                  \
               FABS(x[0]) < (T)0x1p-60) {                                                     \
            for (int64_t i = 0; i < len; i++) {                                               \
                x[i * inc] *= (T)0x1p64;                                                      \
            }                                                                                 \
            scale *= (T)0x1p64;                                                               \
            up++;                                                                             \
        }                                                                                     \
        for (int64_t i = 1; i < len; i++) {                                                   \
            T t = x[i * inc] / scale;                                                         \
            ss += t * t;                                                                      \
        }                                                                                     \
        T x0 = x[0], nrm = HYPOT(x0, scale * SQRT(ss));                                       \
        T beta = x0 >= 0 ? -nrm : nrm;                                                        \
        for (int64_t i = 1; i < len; i++) {                                                   \
            x[i * inc] /= x0 - beta;                                                          \
        }                                                                                     \
        x[0] = beta;                                                                          \
        for (int u = 0; u < up; u++) {                                                        \
            x[0] *= (T)0x1p-64;                                                               \
        }                                                                                     \
        return (beta - x0) / beta;                                                            \
    }                                                                                         \
                                                                                              \
    static PTL_LOOP_CLONES_WIDE void                                                          \
    reflect_rows_##SUF(T *c, int64_t ld, int64_t c0, int64_t c1, int64_t len, const T *vs,    \
                 int64_t vinc, T tau, T *w)                                                   \
    {                                                                                         \
        if (tau == 0) {                                                                       \
            return;                                                                           \
        }                                                                                     \
        for (int64_t j = c0; j < c1; j++) {                                                   \
            w[j] = c[j];                                                                      \
        }                                                                                     \
        for (int64_t i = 1; i < len; i++) {                                                   \
            const T *ri = c + i * ld;                                                         \
            T vi = vs[i * vinc];                                                              \
            for (int64_t j = c0; j < c1; j++) {                                               \
                w[j] += vi * ri[j];                                                           \
            }                                                                                 \
        }                                                                                     \
        for (int64_t i = 0; i < len; i++) {                                                   \
            T *ri = c + i * ld;                                                               \
            T f = tau * (i == 0 ? 1 : vs[i * vinc]);                                          \
            for (int64_t j = c0; j < c1; j++) {                                               \
                ri[j] -= f * w[j];                                                            \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    /* p (jb x rows) = the block at a (rows x jb, row stride n) transposed, or back (back != 0),\
     * eight rows at a time. */                                                               \
    static void                                                                               \
    panel_copy_##SUF(T *a, int64_t n, int64_t rows, int64_t jb, T *p, int back)               \
    {                                                                                         \
        int64_t i = 0;                                                                        \
        for (; i + 8 <= rows; i += 8) {                                                       \
            for (int64_t c = 0; c < jb; c++) {                                                \
                T *pc = p + c * rows + i, *ac = a + i * n + c;                                \
                for (int r = 0; r < 8; r++) {                                                 \
                    if (back) {                                                               \
                        ac[r * n] = pc[r];                                                    \
                    } else {                                                                  \
                        pc[r] = ac[r * n];                                                    \
                    }                                                                         \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
        for (; i < rows; i++) {                                                               \
            for (int64_t c = 0; c < jb; c++) {                                                \
                if (back) {                                                                   \
                    a[i * n + c] = p[c * rows + i];                                           \
                } else {                                                                      \
                    p[c * rows + i] = a[i * n + c];                                           \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    DEFINE_QR_PANEL(T, SUF, VT, 1, w, SQRT, HYPOT, SS_LO, SS_HI)                              \
    DEFINE_QR_PANEL(T, SUF, VH, 2, h, SQRT, HYPOT, SS_LO, SS_HI)                              \
                                                                                              \
    static void                                                                               \
    qr_panel_##SUF(T *a, int64_t n, int64_t rows, int64_t jb, int64_t nc, T *tau, T *p)       \
    {                                                                                         \
        (ptl_cpu_capability() >= PTL_CPU_AVX512 ? qr_panel_##SUF##_w                          \
                                                 : qr_panel_##SUF##_h)(a, n, rows, jb, nc,    \
                                                                       tau, p);               \
    }                                                                                         \
                                                                                              \
    static void                                                                               \
    qr_factor_##SUF(T *a, int64_t m, int64_t n, T *tau, T *w)                                 \
    {                                                                                         \
        int64_t k = m < n ? m : n;                                                            \
        for (int64_t j = 0; j < k; j++) {                                                     \
            T *ajj = a + j * n + j;                                                           \
            tau[j] = householder_##SUF(ajj, m - j, n);                                        \
            reflect_rows_##SUF(a + j * n, n, j + 1, n, m - j, ajj, n, tau[j], w);             \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    static void                                                                               \
    qr_form_q_##SUF(const T *a, int64_t m, int64_t n, const T *tau, T *q,                     \
                         int64_t qc, T *w)                                                    \
    {                                                                                         \
        int64_t k = m < n ? m : n;                                                            \
        memset(q, 0, sizeof(T) * (size_t)(m * qc));                                           \
        for (int64_t i = 0; i < m && i < qc; i++) {                                           \
            q[i * qc + i] = 1;                                                                \
        }                                                                                     \
        for (int64_t j = k - 1; j >= 0; j--) {                                                \
            reflect_rows_##SUF(q + j * qc, qc, 0, qc, m - j, a + j * n + j, n, tau[j], w);    \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    static PTL_LOOP_CLONES_WIDE int                                                           \
    qr_block_reflector_##SUF(const T *a, int64_t n, int64_t rows, int64_t jb, const T *tau,   \
                       T *v, T *t)                                                            \
    {                                                                                         \
        for (int64_t i = 0; i < rows; i++) {                                                  \
            for (int64_t c = 0; c < jb; c++) {                                                \
                v[i * jb + c] = i > c ? a[i * n + c] : (i == c ? 1.0 : 0.0);                  \
            }                                                                                 \
        }                                                                                     \
        /* T = V^T V first: its column c above the diagonal is V[:, 0:c]^T v_c */             \
        if (GEMM(jb, jb, rows, 1.0, v, 1, jb, v, jb, 1, 0.0, t, jb) < 0) {                    \
            return -1;                                                                        \
        }                                                                                     \
        for (int64_t c = 0; c < jb; c++) {                                                    \
            /* T[0:c, c] = -tau_c T[0:c, 0:c] (V[:, 0:c]^T v_c), top down in place */         \
            T *tc = t + c;                                                                    \
            for (int64_t r = 0; r < c; r++) {                                                 \
                T acc = 0;                                                                    \
                for (int64_t q = r; q < c; q++) {                                             \
                    acc += t[r * jb + q] * tc[q * jb];                                        \
                }                                                                             \
                tc[r * jb] = -tau[c] * acc;                                                   \
            }                                                                                 \
            for (int64_t r = c + 1; r < jb; r++) {                                            \
                tc[r * jb] = 0;                                                               \
            }                                                                                 \
            tc[c * jb] = tau[c];                                                              \
        }                                                                                     \
        return 0;                                                                             \
    }                                                                                         \
                                                                                              \
    static PTL_LOOP_CLONES_WIDE int                                                           \
    qr_apply_block_##SUF(const T *v, const T *t, int64_t rows, int64_t jb, T *c,              \
                   int64_t ldc, int64_t nc, int trans, T *w)                                  \
    {                                                                                         \
        if (GEMM(jb, nc, rows, 1.0, v, 1, jb, c, ldc, 1, 0.0, w, nc) < 0) {                   \
            return -1;                                                                        \
        }                                                                                     \
        /* w = op(T) w in place: T^T lower (rows bottom up), T upper (top down) */            \
        for (int64_t s = 0; s < jb; s++) {                                                    \
            int64_t r = trans ? jb - 1 - s : s;                                               \
            T *wr = w + r * nc;                                                               \
            T d = t[r * jb + r];                                                              \
            for (int64_t j = 0; j < nc; j++) {                                                \
                wr[j] *= d;                                                                   \
            }                                                                                 \
            int64_t q0 = trans ? 0 : r + 1, q1 = trans ? r : jb;                              \
            for (int64_t q = q0; q < q1; q++) {                                               \
                T f = trans ? t[q * jb + r] : t[r * jb + q];                                  \
                const T *wq = w + q * nc;                                                     \
                for (int64_t j = 0; j < nc; j++) {                                            \
                    wr[j] += f * wq[j];                                                       \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
        return GEMM(rows, nc, jb, -1.0, v, jb, 1, w, nc, 1, 1.0, c, ldc);                     \
    }                                                                                         \
                                                                                              \
    static int                                                                                \
    qr_form_q_blocked_##SUF(const T *a, int64_t m, int64_t n, const T *tau,                   \
                                 T *q, int64_t ldq, int64_t qc, T *scratch)                   \
    {                                                                                         \
        int64_t k = m < n ? m : n;                                                            \
        T *v = scratch, *t = v + m * QR_BLOCK, *w = t + QR_BLOCK * QR_BLOCK;                  \
        for (int64_t i = 0; i < m; i++) {                                                     \
            memset(q + i * ldq, 0, sizeof(T) * (size_t)qc);                                   \
            if (i < qc) {                                                                     \
                q[i * ldq + i] = 1;                                                           \
            }                                                                                 \
        }                                                                                     \
        for (int64_t j0 = (k - 1) / QR_BLOCK * QR_BLOCK; j0 >= 0; j0 -= QR_BLOCK) {           \
            int64_t jb = k - j0 < QR_BLOCK ? k - j0 : QR_BLOCK;                               \
            if (j0 >= qc) {                                                                   \
                continue;                                                                     \
            }                                                                                 \
            /* the rows from j0 on of Q's columns before j0 are still zero */                 \
            if (qr_block_reflector_##SUF(a + j0 * n + j0, n, m - j0, jb, tau + j0, v,         \
                                         t) < 0 ||                                            \
                qr_apply_block_##SUF(v, t, m - j0, jb, q + j0 * ldq + j0, ldq, qc - j0, 0,    \
                                     w) < 0) {                                                \
                return -1;                                                                    \
            }                                                                                 \
        }                                                                                     \
        return 0;                                                                             \
    }                                                                                         \
                                                                                              \
    static int                                                                                \
    qr_blocked_##SUF(T *a, int64_t m, int64_t n, T *tau, T *q, int64_t qc,                    \
                          T *scratch)                                                         \
    {                                                                                         \
        int64_t k = m < n ? m : n;                                                            \
        T *v = scratch, *t = v + m * (QR_BLOCK + QR_WIDE_TAIL), *w = t + QR_BLOCK * QR_BLOCK; \
        T *row = w + QR_BLOCK * (n > qc ? n : qc);                                            \
        if (k <= QR_BLOCK) {                                                                  \
            qr_factor_##SUF(a, m, n, tau, row);                                               \
            if (q != NULL) {                                                                  \
                qr_form_q_##SUF(a, m, n, tau, q, qc, row);                                    \
            }                                                                                 \
            return 0;                                                                         \
        }                                                                                     \
        for (int64_t j0 = 0; j0 < k; j0 += QR_BLOCK) {                                        \
            int64_t jb = k - j0 < QR_BLOCK ? k - j0 : QR_BLOCK, c1 = j0 + jb;                 \
            /* float: a last block with at most QR_WIDE_TAIL columns after it takes them into \
             * its panel (double keeps its block update and bits) */                          \
            int wide = sizeof(T) == sizeof(float) && n - c1 <= QR_WIDE_TAIL &&                \
                       c1 + QR_BLOCK >= k;                                                    \
            qr_panel_##SUF(a + j0 * n + j0, n, m - j0, jb, wide ? n - j0 : jb, tau + j0, v);  \
            if (c1 < n && !wide) {                                                            \
                if (qr_block_reflector_##SUF(a + j0 * n + j0, n, m - j0, jb, tau + j0, v,     \
                                             t) < 0 ||                                        \
                    qr_apply_block_##SUF(v, t, m - j0, jb, a + j0 * n + c1, n, n - c1, 1,     \
                                         w) < 0) {                                            \
                    return -1;                                                                \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
        return q == NULL ? 0 : qr_form_q_blocked_##SUF(a, m, n, tau, q, qc, qc, scratch);     \
    }

DEFINE_QR(double, f8, ptl_gemm_f64, fabs, sqrt, hypot, QrVec8, QrHalf8, 1e-280, 1e280)
DEFINE_QR(float, f4, ptl_gemm_f32, fabsf, sqrtf, hypotf, QrVec4, QrHalf4, 1e-30f, 1e30f)
#undef DEFINE_QR
#undef DEFINE_QR_PANEL

/* The float64 instances for svd.c (linalg_impl.h) */
void
ptl_linalg_qr_factor(double *a, int64_t m, int64_t n, double *tau, double *w)
{
    qr_factor_f8(a, m, n, tau, w);
}

void
ptl_linalg_qr_form_q(const double *a, int64_t m, int64_t n, const double *tau, double *q,
                     int64_t qc, double *w)
{
    qr_form_q_f8(a, m, n, tau, q, qc, w);
}

int
ptl_linalg_qr_form_q_blocked(const double *a, int64_t m, int64_t n, const double *tau,
                             double *q, int64_t ldq, int64_t qc, double *scratch)
{
    return qr_form_q_blocked_f8(a, m, n, tau, q, ldq, qc, scratch);
}

int
ptl_linalg_qr_blocked(double *a, int64_t m, int64_t n, double *tau, double *q, int64_t qc,
                      double *scratch)
{
    return qr_blocked_f8(a, m, n, tau, q, qc, scratch);
}

/* The float32 instances for svd.c and linalg_lstsq.c (linalg_impl.h) */
int
ptl_linalg_qr_form_q_blocked_f32(const float *a, int64_t m, int64_t n, const float *tau,
                                 float *q, int64_t ldq, int64_t qc, float *scratch)
{
    return qr_form_q_blocked_f4(a, m, n, tau, q, ldq, qc, scratch);
}

int
ptl_linalg_qr_blocked_f32(float *a, int64_t m, int64_t n, float *tau, float *q, int64_t qc,
                          float *scratch)
{
    return qr_blocked_f4(a, m, n, tau, q, qc, scratch);
}

/* ---- symmetric eigensolver ---- */

/* The panels of the reduction (tridiagonalize; float32's of 16 steps: 1.35x float32 eigvalsh
 * at n = 64 and 1.1x at 256 over panels of 32, and 8 no better) and the tiles of the
 * transposes: see the template's functions. */
#define TRIDIAG_BLOCK 32
#define TRIDIAG_BLOCK_F32 16
#define TRANSPOSE_TILE 16

/* tridiagonalize's scratch, in elements */
static int64_t
tridiagonalize_scratch(int64_t n)
{
    return 2 * TRIDIAG_BLOCK * (n + 1);
}

/* The symmetric eigensolver comes in two instances from one template, DEFINE_EIGH(T, SUF, F,
 * VEC, GEMM, TRIDIAG_QL, TRIDIAG_DC, BLOCK), instantiated after DecompJob: _f8 on double
 * (math functions without suffix, ptl_gemm_f64, the tridiagonal QL and divide and conquer of
 * linalg_eigh_dc.c, panels of TRIDIAG_BLOCK), float64 eigh's, whose bits it keeps, and _f4 on
 * float (the f-suffixed functions, the _f32 GEMM, QL and divide and conquer, panels of
 * TRIDIAG_BLOCK_F32), float32 eigh's (Note [Float64 linear algebra] in linalg_solve.c).  VEC
 * is eight doubles or sixteen floats.  In the template's order: */
#define DEFINE_EIGH(T, SUF, F, VEC, GEMM, TRIDIAG_QL, TRIDIAG_DC, BLOCK)                      \
    /* *xy = x . y and *zy = z . y over n: VEC's lanes, then their total, then the tail (one  \
     * order at every width). */                                                              \
    static inline __attribute__((always_inline)) void                                         \
    dot_pair_##SUF(const T *x, const T *z, const T *y, int64_t n, T *xy, T *zy)               \
    {                                                                                         \
        const int64_t lanes = (int64_t)(sizeof(VEC) / sizeof(T));                             \
        VEC ax = {0}, az = {0};                                                               \
        int64_t c = 0;                                                                        \
        for (; c + lanes <= n; c += lanes) {                                                  \
            VEC xv, zv, yv;                                                                   \
            memcpy(&xv, x + c, sizeof(xv));                                                   \
            memcpy(&zv, z + c, sizeof(zv));                                                   \
            memcpy(&yv, y + c, sizeof(yv));                                                   \
            ax += xv * yv;                                                                    \
            az += zv * yv;                                                                    \
        }                                                                                     \
        T sx = lanes_sum_##SUF(ax), sz = lanes_sum_##SUF(az);                                 \
        for (; c < n; c++) {                                                                  \
            sx += x[c] * y[c];                                                                \
            sz += z[c] * y[c];                                                                \
        }                                                                                     \
        *xy = sx;                                                                             \
        *zy = sz;                                                                             \
    }                                                                                         \
                                                                                              \
    /* Reduces the symmetric a (n x n, both triangles, row-major) to tridiagonal d (n), e (n, \
     * e[i] couples i and i + 1, e[n - 1] = 0), in panels of BLOCK steps.  Row k keeps the    \
     * reflection of step k right of its diagonal (v[0] = 1 implied) and tau[k] its factor.   \
     * scratch: tridiagonalize_scratch(n) elements.  0 or -1.  See Note [Symmetric            \
     * eigensolver]. */                                                                       \
    static PTL_LOOP_CLONES_WIDE int                                                           \
    tridiagonalize_##SUF(T *a, int64_t n, T *d, T *e, T *tau, T *scratch)                     \
    {                                                                                         \
        /* row q of vt / wt: the panel's v_q / w_q over all n indices (zero up to its step) */ \
        T *vt = scratch, *wt = vt + TRIDIAG_BLOCK * n, *x = wt + TRIDIAG_BLOCK * n;           \
        T *y = x + TRIDIAG_BLOCK;                                                             \
        for (int64_t k0 = 0; k0 + 2 < n; k0 += BLOCK) {                                       \
            int64_t k1 = k0 + BLOCK < n - 2 ? k0 + BLOCK : n - 2;                             \
            for (int64_t k = k0; k < k1; k++) {                                               \
                int64_t j = k - k0, r = n - k - 1;                                            \
                T *ak = a + k * n, *vj = vt + j * n, *wj = wt + j * n;                        \
                /* row k of A now: the stored row less the panel's earlier rank-2 terms */    \
                for (int64_t q = 0; q < j; q++) {                                             \
                    const T *vq = vt + q * n, *wq = wt + q * n;                               \
                    T fv = vq[k], fw = wq[k];                                                 \
                    for (int64_t c = k; c < n; c++) {                                         \
                        ak[c] -= fv * wq[c] + fw * vq[c];                                     \
                    }                                                                         \
                }                                                                             \
                T *v = ak + k + 1;                                                            \
                tau[k] = householder_##SUF(v, r, 1);                                          \
                d[k] = ak[k];                                                                 \
                e[k] = v[0];                                                                  \
                memset(vj, 0, sizeof(T) * (size_t)n);                                         \
                memset(wj, 0, sizeof(T) * (size_t)n);                                         \
                if (tau[k] == 0) {                                                            \
                    continue;   /* H = I: w_j = 0 adds nothing */                             \
                }                                                                             \
                T *vv = vj + k + 1, *p = wj + k + 1, pv = 0;                                  \
                vv[0] = 1;                                                                    \
                memcpy(vv + 1, v + 1, sizeof(T) * (size_t)(r - 1));                           \
                /* p = tau (S v - V (W^T v) - W (V^T v)), S the stored A[k+1:, k+1:] (symmetric: \
                 * S v as a sum of its rows, axpys that vectorise; four rows a pass over p, added \
                 * in the same order) */                                                      \
                int64_t i = 0;                                                                \
                for (; i + 4 <= r; i += 4) {                                                  \
                    const T *s0 = a + (k + 1 + i) * n + k + 1, *s1 = s0 + n, *s2 = s1 + n;    \
                    const T *s3 = s2 + n;                                                     \
                    T v0 = vv[i], v1 = vv[i + 1], v2 = vv[i + 2], v3 = vv[i + 3];             \
                    for (int64_t c = 0; c < r; c++) {                                         \
                        T t = p[c] + v0 * s0[c];                                              \
                        t += v1 * s1[c];                                                      \
                        t += v2 * s2[c];                                                      \
                        p[c] = t + v3 * s3[c];                                                \
                    }                                                                         \
                }                                                                             \
                for (; i < r; i++) {                                                          \
                    const T *si = a + (k + 1 + i) * n + k + 1;                                \
                    T vi = vv[i];                                                             \
                    for (int64_t c = 0; c < r; c++) {                                         \
                        p[c] += vi * si[c];                                                   \
                    }                                                                         \
                }                                                                             \
                for (int64_t q = 0; q < j; q++) {                                             \
                    dot_pair_##SUF(wt + q * n + k + 1, vt + q * n + k + 1, vv, r, &x[q], &y[q]); \
                }                                                                             \
                for (int64_t q = 0; q < j; q++) {                                             \
                    const T *vq = vt + q * n + k + 1, *wq = wt + q * n + k + 1;               \
                    for (int64_t c = 0; c < r; c++) {                                         \
                        p[c] -= x[q] * vq[c] + y[q] * wq[c];                                  \
                    }                                                                         \
                }                                                                             \
                /* w = p - (tau / 2) (p . v) v: then H A H = A - v w^T - w v^T (float: p . v  \
                 * in VEC's lanes; double keeps its order and bits) */                        \
                int64_t c0 = 0;                                                               \
                if (sizeof(T) == sizeof(float)) {                                             \
                    VEC acc = {0};                                                            \
                    for (; c0 + (int64_t)(sizeof(VEC) / sizeof(T)) <= r;                      \
                         c0 += (int64_t)(sizeof(VEC) / sizeof(T))) {                          \
                        VEC pc, vc;                                                           \
                        memcpy(&pc, p + c0, sizeof(pc));                                      \
                        memcpy(&vc, vv + c0, sizeof(vc));                                     \
                        pc *= tau[k];                                                         \
                        memcpy(p + c0, &pc, sizeof(pc));                                      \
                        acc += pc * vc;                                                       \
                    }                                                                         \
                    pv = lanes_sum_##SUF(acc);                                                \
                }                                                                             \
                for (int64_t c = c0; c < r; c++) {                                            \
                    p[c] *= tau[k];                                                           \
                    pv += p[c] * vv[c];                                                       \
                }                                                                             \
                for (int64_t c = 0; c < r; c++) {                                             \
                    p[c] -= (T)0.5 * tau[k] * pv * vv[c];                                     \
                }                                                                             \
            }                                                                                 \
            /* the trailing A[k1:, k1:] -= V W^T + W V^T: two GEMMs of depth k1 - k0 */       \
            int64_t r = n - k1, nb = k1 - k0;                                                 \
            T *s = a + k1 * n + k1;                                                           \
            if (GEMM(r, r, nb, -1.0, vt + k1, 1, n, wt + k1, n, 1, 1.0, s, n) < 0 ||          \
                GEMM(r, r, nb, -1.0, wt + k1, 1, n, vt + k1, n, 1, 1.0, s, n) < 0) {          \
                return -1;                                                                    \
            }                                                                                 \
        }                                                                                     \
        if (n >= 2) {                                                                         \
            d[n - 2] = a[(n - 2) * n + n - 2];                                                \
            e[n - 2] = a[(n - 2) * n + n - 1];                                                \
        }                                                                                     \
        if (n >= 1) {                                                                         \
            d[n - 1] = a[(n - 1) * n + n - 1];                                                \
            e[n - 1] = 0;                                                                     \
        }                                                                                     \
        return 0;                                                                             \
    }                                                                                         \
                                                                                              \
    /* dst[r * n + c] = src[(rows ? rows[c] : c) * n + r] for r, c < n: a transpose (of the   \
     * rows listed, in that order), in TRANSPOSE_TILE square tiles so that neither side is    \
     * walked down a column of the whole matrix. */                                           \
    static void                                                                               \
    transpose_rows_##SUF(T *dst, const T *src, int64_t n, const int64_t *rows)                \
    {                                                                                         \
        for (int64_t c0 = 0; c0 < n; c0 += TRANSPOSE_TILE) {                                  \
            int64_t c1 = c0 + TRANSPOSE_TILE < n ? c0 + TRANSPOSE_TILE : n;                   \
            for (int64_t r0 = 0; r0 < n; r0 += TRANSPOSE_TILE) {                              \
                int64_t r1 = r0 + TRANSPOSE_TILE < n ? r0 + TRANSPOSE_TILE : n;               \
                for (int64_t c = c0; c < c1; c++) {                                           \
                    const T *sc = src + (rows != NULL ? rows[c] : c) * n;                     \
                    for (int64_t r = r0; r < r1; r++) {                                       \
                        dst[r * n + c] = sc[r];                                               \
                    }                                                                         \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    /* Copies the upper (upper) or lower triangle of a (n x n) onto the other one, by tiles. */ \
    static void                                                                               \
    mirror_triangle_##SUF(T *a, int64_t n, int upper)                                         \
    {                                                                                         \
        for (int64_t r0 = 0; r0 < n; r0 += TRANSPOSE_TILE) {                                  \
            int64_t r1 = r0 + TRANSPOSE_TILE < n ? r0 + TRANSPOSE_TILE : n;                   \
            for (int64_t c0 = 0; c0 <= r0; c0 += TRANSPOSE_TILE) {                            \
                for (int64_t r = r0; r < r1; r++) {                                           \
                    int64_t c1 = c0 + TRANSPOSE_TILE < r ? c0 + TRANSPOSE_TILE : r;           \
                    for (int64_t c = c0; c < c1; c++) {                                       \
                        if (upper) {                                                          \
                            a[r * n + c] = a[c * n + r];                                      \
                        } else {                                                              \
                            a[c * n + r] = a[r * n + c];                                      \
                        }                                                                     \
                    }                                                                         \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    /* The reflections' vectors from a (tridiagonalize's rows, right of the diagonal) as the  \
     * columns below the diagonal of b ((n - 1) x (n - 2), row-major): the matrix whose QR has \
     * Q1 for its Q. */                                                                       \
    static void                                                                               \
    tridiagonal_reflections_##SUF(const T *a, int64_t n, T *b)                                \
    {                                                                                         \
        int64_t m = n - 1, c = n - 2;                                                         \
        for (int64_t i = 1; i < m; i++) {                                                     \
            for (int64_t k = 0; k < i && k < c; k++) {                                        \
                b[i * c + k] = a[k * n + i + 1];                                              \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    /* qt (n x n) = Q^T for tridiagonalize's reflections in a (which it overwrites): Q =      \
     * diag(1, Q1) with Q1 = H_0 ... H_{n-3} on the indices 1.., which is the Q of the QR of the \
     * (n - 1) x (n - 2) matrix whose column k below its diagonal holds v_k -- formed by blocks \
     * as qr_matrix forms its Q.  0 or -1. */                                                 \
    static int                                                                                \
    tridiagonal_form_qt_##SUF(T *a, int64_t n, const T *tau, T *qt)                           \
    {                                                                                         \
        if (n < 3) {                                                                          \
            memset(qt, 0, sizeof(T) * (size_t)(n * n));                                       \
            for (int64_t i = 0; i < n; i++) {                                                 \
                qt[i * n + i] = 1;                                                            \
            }                                                                                 \
            return 0;                                                                         \
        }                                                                                     \
        int64_t m = n - 1, c = n - 2;                                                         \
        T *b = malloc(sizeof(T) * (size_t)(m * c + ptl_linalg_qr_scratch(m, c, m)));          \
        if (b == NULL) {                                                                      \
            return ptl_error_set(PTL_ERR_MEMORY, "linalg.eigh: out of memory");               \
        }                                                                                     \
        tridiagonal_reflections_##SUF(a, n, b);                                               \
        /* Q into a, which the reflections have left for b, then transposed into qt */        \
        memset(a, 0, sizeof(T) * (size_t)n);                                                  \
        a[0] = 1;                                                                             \
        for (int64_t i = 1; i < n; i++) {                                                     \
            a[i * n] = 0;                                                                     \
        }                                                                                     \
        int rc = qr_form_q_blocked_##SUF(b, m, c, tau, a + n + 1, n, m, b + m * c);           \
        free(b);                                                                              \
        transpose_rows_##SUF(qt, a, n, NULL);                                                 \
        return rc;                                                                            \
    }                                                                                         \
                                                                                              \
    /* vecs (n x n) = Q Z for tridiagonalize's reflections in a and Z = zt^T: the blocks of   \
     * reflections applied to Z's rows 1.. from the last block, as                            \
     * ptl_linalg_qr_form_q_blocked applies them to I (the same 2 n^3 flops as forming Q and one \
     * GEMM Q Z, less Q's 4/3 n^3).  scratch: (n - 1) (n - 2) + ptl_linalg_qr_scratch(n - 1,  \
     * n - 2, n) elements.  0 or -1. */                                                       \
    static int                                                                                \
    tridiagonal_apply_q_##SUF(const T *a, int64_t n, const T *tau, const T *zt,               \
                        T *vecs, T *scratch)                                                  \
    {                                                                                         \
        transpose_rows_##SUF(vecs, zt, n, NULL);                                              \
        if (n < 3) {                                                                          \
            return 0;                                                                         \
        }                                                                                     \
        int64_t m = n - 1, c = n - 2;                                                         \
        T *b = scratch, *v = b + m * c, *t = v + m * QR_BLOCK, *w = t + QR_BLOCK * QR_BLOCK;  \
        tridiagonal_reflections_##SUF(a, n, b);                                               \
        for (int64_t j0 = (c - 1) / QR_BLOCK * QR_BLOCK; j0 >= 0; j0 -= QR_BLOCK) {           \
            int64_t jb = c - j0 < QR_BLOCK ? c - j0 : QR_BLOCK;                               \
            if (qr_block_reflector_##SUF(b + j0 * c + j0, c, m - j0, jb, tau + j0, v, t) < 0 || \
                qr_apply_block_##SUF(v, t, m - j0, jb, vecs + (1 + j0) * n, n, n, 0, w) < 0) { \
                return -1;                                                                    \
            }                                                                                 \
        }                                                                                     \
        return 0;                                                                             \
    }                                                                                         \
                                                                                              \
    /* eigh's values and vectors above LINALG_DC_LEAF rows from tridiagonalize's a, tau, d and e: \
     * T's eigenvectors Z (into zt, n x n, as rows) by ptl_linalg_tridiagonal_dc on T scaled by \
     * linalg_tridiagonal_scale (linalg_impl.h), then vecs = Q Z by tridiagonal_apply_q.  0,  \
     * -1 (error set), -2 (a leaf's QL did not converge), or 1 when T is not finite (left to  \
     * the QL; d and e untouched). */                                                         \
    static int                                                                                \
    eigh_dc_##SUF(const T *a, const T *tau, T *d, T *e, T *zt, int64_t n,                     \
            T *vals, T *vecs)                                                                 \
    {                                                                                         \
        int ex;                                                                               \
        if (linalg_tridiagonal_scale##F(d, e, n, &ex)) {                                      \
            return 1;                                                                         \
        }                                                                                     \
        int64_t m = n - 1, qs = m * (n - 2) + ptl_linalg_qr_scratch(m, n - 2, n);             \
        int64_t ds = ptl_linalg_tridiagonal_dc_scratch(n);                                    \
        T *work = malloc(sizeof(T) * (size_t)(ds > qs ? ds : qs));                            \
        if (work == NULL) {                                                                   \
            return ptl_error_set(PTL_ERR_MEMORY, "linalg.eigh: out of memory");               \
        }                                                                                     \
        int rc = TRIDIAG_DC(d, e, n, zt, n, work);                                            \
        if (rc == 0) {                                                                        \
            rc = tridiagonal_apply_q_##SUF(a, n, tau, zt, vecs, work);                        \
        }                                                                                     \
        for (int64_t c = 0; c < n; c++) {                                                     \
            vals[c] = ldexp##F(d[c], ex);                                                     \
        }                                                                                     \
        free(work);                                                                           \
        return rc;                                                                            \
    }                                                                                         \
                                                                                              \
    static int                                                                                \
    eigh_matrix_##SUF(void *ctx, int64_t i)                                                   \
    {                                                                                         \
        const DecompJob *j = ctx;                                                             \
        int64_t n = j->n;                                                                     \
        const T *src = (const T *)j->a + i * n * n;                                           \
        T *a = malloc(sizeof(T) * (size_t)(2 * n * n + 5 * n + tridiagonalize_scratch(n) +    \
                                                     1));                                     \
        if (a == NULL) {                                                                      \
            return ptl_error_set(PTL_ERR_MEMORY, "linalg.eigh: out of memory");               \
        }                                                                                     \
        /* scratch (at an even offset: float32's eigvalsh keeps 2n doubles there) */          \
        T *zt = j->out1 != NULL ? a + n * n : NULL, *rot = a + 2 * n * n;                     \
        T *scratch = rot + 2 * n, *d = scratch + tridiagonalize_scratch(n), *e = d + n;       \
        T *tau = e + n;                                                                       \
        int64_t *idx = (int64_t *)rot;                                                        \
        /* a = the triangle UPLO names and its mirror image */                                \
        memcpy(a, src, sizeof(T) * (size_t)(n * n));                                          \
        mirror_triangle_##SUF(a, n, j->upper);                                                \
        int finite = 1;                                                                       \
        for (int64_t c = 0; c < n * n; c++) {                                                 \
            finite &= isfinite(a[c]) != 0;                                                    \
        }                                                                                     \
        if (!finite) {   /* Note [Symmetric eigensolver]: nan values and vectors */           \
            for (int64_t c = 0; c < n; c++) {                                                 \
                ((T *)j->out0)[i * n + c] = (T)NAN;                                           \
            }                                                                                 \
            for (int64_t c = 0; zt != NULL && c < n * n; c++) {                               \
                ((T *)j->out1)[i * n * n + c] = (T)NAN;                                       \
            }                                                                                 \
            free(a);                                                                          \
            return 0;                                                                         \
        }                                                                                     \
        if (tridiagonalize_##SUF(a, n, d, e, tau, scratch) < 0) {                             \
            free(a);                                                                          \
            return -1;                                                                        \
        }                                                                                     \
        /* the vectors above LINALG_DC_LEAF rows by divide and conquer, otherwise (and for a T \
         * that is not finite) Q^T and the QL's rotations */                                  \
        T *vals = (T *)j->out0 + i * n;                                                       \
        T *vecs = j->out1 != NULL ? (T *)j->out1 + i * n * n : NULL;                          \
        int rc = zt != NULL && n > LINALG_DC_LEAF ? eigh_dc_##SUF(a, tau, d, e, zt, n, vals, vecs) \
                                                  : 1;                                        \
        /* float32's values alone by ptl_linalg_tridiagonal_values, in double (float64 keeps  \
         * tridiagonal_ql and its bits): 2 when d holds them */                               \
        if (rc == 1 && zt == NULL && sizeof(T) == sizeof(float)) {                            \
            double *dd = (double *)scratch, *ee = dd + n;                                     \
            for (int64_t c = 0; c < n; c++) {                                                 \
                dd[c] = d[c];                                                                 \
                ee[c] = e[c];                                                                 \
            }                                                                                 \
            int vr = ptl_linalg_tridiagonal_values(dd, ee, n);                                \
            for (int64_t c = 0; vr == 0 && c < n; c++) {                                      \
                d[c] = (T)dd[c];                                                              \
            }                                                                                 \
            rc = vr < 0 ? -2 : vr == 0 ? 2 : 1;                                               \
        }                                                                                     \
        if (rc == 1) {                                                                        \
            if (zt != NULL && tridiagonal_form_qt_##SUF(a, n, tau, zt) < 0) {                 \
                rc = -1;                                                                      \
            } else if (TRIDIAG_QL(d, e, zt, n, rot) < 0) {                                    \
                rc = -2;                                                                      \
            }                                                                                 \
        }                                                                                     \
        if (rc < 0) {                                                                         \
            free(a);                                                                          \
            if (rc == -1) {                                                                   \
                return -1;                                                                    \
            }                                                                                 \
            return ptl_error_set(PTL_ERR_LINALG, "linalg.eigh: The algorithm failed to converge " \
                                 "because the input matrix is ill-conditioned or has too many " \
                                 "repeated eigenvalues (error code: %lld).", (long long)(i + 1)); \
        }                                                                                     \
        if (rc == 0) {                                                                        \
            free(a);                                                                          \
            return 0;                                                                         \
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
        if (vecs != NULL) {                                                                   \
            transpose_rows_##SUF(vecs, zt, n, idx);                                           \
        }                                                                                     \
        free(a);                                                                              \
        return 0;                                                                             \
    }

/* ---- the batched kernels ---- */

typedef struct DecompJob {
    const void *a;     /* [B, m, n]: double, or float for float32 input */
    void *out0;        /* cholesky: L [B, n, n]; qr: R [B, rr, n]; eigh: values [B, n] */
    void *out1;        /* qr: Q [B, m, qc] or NULL; eigh: vectors [B, n, n] or NULL */
    int32_t *info;     /* cholesky: [B] */
    int64_t m, n, rr, qc;
    int upper;         /* cholesky: U = L^T; eigh: read the upper triangle */
} DecompJob;

DEFINE_CHOLESKY(double, f8, ptl_gemm_f64, sqrt)
DEFINE_CHOLESKY(float, f4, ptl_gemm_f32, sqrtf)
#undef DEFINE_CHOLESKY

/* qr_matrix_f8 and qr_matrix_f4 (LinalgMatrixFn on a DecompJob): matrix i's R into out0
 * and, when out1 is set, its Q into out1, on double or on float */
#define DEFINE_QR_MATRIX(T, SUF)                                                              \
    static PTL_LOOP_CLONES_WIDE int qr_matrix_##SUF(void *ctx, int64_t i)                    \
    {                                                                                         \
        const DecompJob *j = ctx;                                                             \
        int64_t m = j->m, n = j->n, k = m < n ? m : n;                                        \
        int64_t need = m * n + k + ptl_linalg_qr_scratch(m, n, j->qc) + 1;                    \
        T *a = malloc(sizeof(T) * (size_t)need);                                              \
        if (a == NULL) {                                                                      \
            return ptl_error_set(PTL_ERR_MEMORY, "linalg.qr: out of memory");                 \
        }                                                                                     \
        T *tau = a + m * n, *r = (T *)j->out0 + i * j->rr * n;                                \
        memcpy(a, (const T *)j->a + i * m * n, sizeof(T) * (size_t)(m * n));                 \
        T *q = j->out1 != NULL ? (T *)j->out1 + i * m * j->qc : NULL;                         \
        if (qr_blocked_##SUF(a, m, n, tau, q, j->qc, tau + k) < 0) {                          \
            free(a);                                                                          \
            return -1;                                                                        \
        }                                                                                     \
        for (int64_t row = 0; row < j->rr; row++) {                                           \
            for (int64_t c = 0; c < n; c++) {                                                 \
                r[row * n + c] = c >= row && row < m ? a[row * n + c] : 0;                    \
            }                                                                                 \
        }                                                                                     \
        free(a);                                                                              \
        return 0;                                                                             \
    }
DEFINE_QR_MATRIX(double, f8)
DEFINE_QR_MATRIX(float, f4)
#undef DEFINE_QR_MATRIX

DEFINE_EIGH(double, f8, , LinalgVec8, ptl_gemm_f64, ptl_linalg_tridiagonal_ql,
            ptl_linalg_tridiagonal_dc, TRIDIAG_BLOCK)
DEFINE_EIGH(float, f4, f, LinalgVec4, ptl_gemm_f32, ptl_linalg_tridiagonal_ql_f32,
            ptl_linalg_tridiagonal_dc_f32, TRIDIAG_BLOCK_F32)
#undef DEFINE_EIGH

#define NOT_POSITIVE_DEFINITE                                                               \
    "The factorization could not be completed because the input is not positive-definite " \
    "(the leading minor of order %d is not positive-definite)."

/* Returns the results t[1], t[2] in s[0], s[1] and releases the working copy t[0]. */
static int
return_two(PtlTensorImpl **t, PtlIValue *s)
{
    ptl_decref(t[0]);
    s[0] = ptl_iv_tensor(t[1]);
    s[1] = ptl_iv_tensor(t[2]);
    return 0;
}

/* linalg_cholesky_ex(Tensor self, *, bool upper=False, bool check_errors=False)
 * -> (Tensor L, Tensor info)
 * [*, n, n] -> L [*, n, n] lower (U upper: A = U^T U), info [*] int32 (0, or the order of
 * the first leading minor that is not positive-definite).  Reads A's lower triangle (upper:
 * its upper one). */
static int
linalg_cholesky_ex_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *A = s[0].u.t, *t[3] = {NULL, NULL, NULL};
    const char *fn = "linalg.cholesky";
    if (linalg_check_square(fn, A) < 0 || linalg_check_dtype(fn, "cholesky_cpu", A) < 0) {
        return -1;
    }
    int nb = A->dim - 2;
    DecompJob job = {.m = A->sizes[nb], .n = A->sizes[nb], .upper = s[1].u.b};
    /* float32 is factored in float32 (Note [Float64 linear algebra] in linalg_solve.c) */
    if ((t[0] = ptl_contiguous(A)) == NULL ||
        (t[1] = ptl_empty(A->dim, A->sizes, A->dtype, A->device)) == NULL ||
        (t[2] = ptl_empty(nb, A->sizes, PTL_DTYPE_INT32, A->device)) == NULL) {
        return linalg_release_all(t, 3);
    }
    job.a = ptl_tensor_data(t[0]);
    job.out0 = ptl_tensor_data(t[1]);
    job.info = (int32_t *)ptl_tensor_data(t[2]);
    if (linalg_batch_run(linalg_batch_count(A, 2), job.n * job.n * job.n / 3 + 1,
                         A->dtype == PTL_DTYPE_FLOAT32 ? cholesky_matrix_f4
                                                       : cholesky_matrix_f8, &job) < 0 ||
        (s[2].u.b && linalg_check_info("linalg.cholesky_ex", t[2], nb > 0, PTL_ERR_LINALG,
                                       NOT_POSITIVE_DEFINITE) < 0)) {
        return linalg_release_all(t, 3);
    }
    return return_two(t, s);
}

/* linalg_cholesky(Tensor self, *, bool upper=False) -> Tensor
 * linalg_cholesky_ex, raising LinAlgError for a matrix that is not positive-definite. */
static int
linalg_cholesky_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    int batched = s[0].u.t->dim > 2, keep[2] = {0, 1};
    PtlIValue st[3] = {s[0], s[1], ptl_iv_bool(0)};
    if (linalg_call_keep(PTL_OP_linalg_cholesky_ex, st, 3, s, keep, 2) < 0 ||
        linalg_check_returns(s, 2, 1, "linalg.cholesky", batched, PTL_ERR_LINALG,
                             NOT_POSITIVE_DEFINITE) < 0) {
        return -1;
    }
    ptl_ivalue_release(&s[1]);
    return 0;
}

/* The end of the two-output kernels: runs fn over A's matrices from the working copy t[0]
 * (float64, or float32 where a float32 A is computed in float32), then returns the results
 * t[1], t[2] cast to A's dtype in s[0], s[1] (t[0] released).  0, or -1 with all of t
 * released. */
static int
run_two(PtlTensorImpl *A, int64_t work, LinalgMatrixFn fn, DecompJob *job, PtlTensorImpl **t,
        PtlIValue *s)
{
    job->a = ptl_tensor_data(t[0]);
    if (linalg_batch_run(linalg_batch_count(A, 2), work, fn, job) < 0 ||
        linalg_cast_to(&t[1], A->dtype) < 0 || linalg_cast_to(&t[2], A->dtype) < 0) {
        return linalg_release_all(t, 3);
    }
    return return_two(t, s);
}

/* linalg_qr(Tensor A, str mode='reduced') -> (Tensor Q, Tensor R)
 * [*, m, n] -> 'reduced': Q [*, m, k], R [*, k, n] (k = min(m, n)); 'complete': Q [*, m, m],
 * R [*, m, n]; 'r': Q [0], R [*, k, n].  See Note [Householder QR]. */
static int
linalg_qr_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *A = s[0].u.t, *t[3] = {NULL, NULL, NULL};
    const char *mode = s[1].u.s;
    int complete = strcmp(mode, "complete") == 0, ronly = strcmp(mode, "r") == 0;
    if (!complete && !ronly && strcmp(mode, "reduced") != 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "qr received unrecognized mode '%s' but expected "
                             "one of 'reduced' (default), 'r', or 'complete'", mode);
    }
    if (linalg_check_matrix("linalg.qr", A, "A") < 0 ||
        linalg_check_dtype("linalg.qr", "geqrf_cpu", A) < 0) {
        return -1;
    }
    int nb = A->dim - 2;
    int64_t m = A->sizes[nb], n = A->sizes[nb + 1], k = m < n ? m : n, sz[PTL_MAX_DIMS];
    DecompJob job = {.m = m, .n = n, .rr = complete ? m : k, .qc = complete ? m : k};
    memcpy(sz, A->sizes, sizeof(int64_t) * (size_t)nb);
    sz[nb] = job.rr;
    sz[nb + 1] = n;
    /* float32 is factored in float32 (Note [Float64 linear algebra] in linalg_solve.c) */
    if ((t[0] = ptl_contiguous(A)) == NULL ||
        (t[2] = ptl_empty(nb + 2, sz, A->dtype, A->device)) == NULL) {
        return linalg_release_all(t, 3);
    }
    sz[nb] = m;
    sz[nb + 1] = job.qc;
    int64_t zero = 0;
    t[1] = ronly ? ptl_empty(1, &zero, A->dtype, A->device)
                 : ptl_empty(nb + 2, sz, A->dtype, A->device);
    if (t[1] == NULL) {
        return linalg_release_all(t, 3);
    }
    job.out0 = ptl_tensor_data(t[2]);
    job.out1 = ronly ? NULL : ptl_tensor_data(t[1]);
    return run_two(A, 4 * m * n * (k + 1) + 1,
                   A->dtype == PTL_DTYPE_FLOAT32 ? qr_matrix_f4 : qr_matrix_f8, &job, t, s);
}

/* _linalg_eigh(Tensor A, str UPLO="L", bool compute_v=True)
 * -> (Tensor eigenvalues, Tensor eigenvectors)
 * [*, n, n] (symmetric; only the triangle UPLO names is read) -> eigenvalues [*, n]
 * ascending, eigenvectors [*, n, n] (column j for eigenvalue j; [0] without compute_v).
 * See Note [Symmetric eigensolver]. */
static int
linalg_eigh_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *A = s[0].u.t, *t[3] = {NULL, NULL, NULL};
    const char *uplo = s[1].u.s;
    int uv = s[2].u.b;
    if ((uplo[0] != 'L' && uplo[0] != 'U' && uplo[0] != 'l' && uplo[0] != 'u') ||
        uplo[1] != '\0') {
        return ptl_error_set(PTL_ERR_RUNTIME, "Expected UPLO argument to be 'L' or 'U', but "
                             "got %s", uplo);
    }
    if (linalg_check_square("linalg.eigh", A) < 0 ||
        linalg_check_kernel_dtype("linalg_eigh_cpu", A) < 0) {
        return -1;
    }
    int nb = A->dim - 2;
    int64_t n = A->sizes[nb], zero = 0;
    DecompJob job = {.m = n, .n = n, .upper = uplo[0] == 'U' || uplo[0] == 'u'};
    /* float32 is solved in float32 (Note [Float64 linear algebra] in linalg_solve.c) */
    int f32 = A->dtype == PTL_DTYPE_FLOAT32;
    PtlDtype dt = f32 ? PTL_DTYPE_FLOAT32 : PTL_DTYPE_FLOAT64;
    if ((t[0] = f32 ? ptl_contiguous(A) : ptl_cast(A, PTL_DTYPE_FLOAT64)) == NULL ||
        (t[1] = ptl_empty(nb + 1, A->sizes, dt, A->device)) == NULL) {
        return linalg_release_all(t, 3);
    }
    t[2] = uv ? ptl_empty(A->dim, A->sizes, dt, A->device)
              : ptl_empty(1, &zero, A->dtype, A->device);
    if (t[2] == NULL) {
        return linalg_release_all(t, 3);
    }
    job.out0 = ptl_tensor_data(t[1]);
    job.out1 = uv ? ptl_tensor_data(t[2]) : NULL;
    return run_two(A, 9 * n * n * n + 1, f32 ? eigh_matrix_f4 : eigh_matrix_f8, &job, t, s);
}

/* linalg_eigh(Tensor self, str UPLO="L") -> (Tensor eigenvalues, Tensor eigenvectors) */
static int
linalg_eigh_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    int keep[2] = {0, 1};
    PtlIValue st[3] = {s[0], s[1], ptl_iv_bool(1)};
    return linalg_call_keep(PTL_OP__linalg_eigh, st, 3, s, keep, 2);
}

/* linalg_eigvalsh(Tensor self, str UPLO="L") -> Tensor
 * _linalg_eigh's eigenvalues; the eigenvectors are computed only when A may need a
 * gradient (its backward uses them). */
static int
linalg_eigvalsh_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *A = s[0].u.t;
    int uv = ptl_tls()->grad_enabled && A->autograd_meta != NULL;
    int keep[1] = {0};
    PtlIValue st[3] = {s[0], s[1], ptl_iv_bool(uv)};
    return linalg_call_keep(PTL_OP__linalg_eigh, st, 3, s, keep, 1);
}

static const PtlKernelReg linalg_decomp_kernels[] = {
    {PTL_OP_linalg_cholesky_ex, PTL_KEY_CPU, linalg_cholesky_ex_cpu},
    {PTL_OP_linalg_cholesky, PTL_KEY_COMPOSITE_IMPLICIT, linalg_cholesky_composite},
    {PTL_OP_linalg_qr, PTL_KEY_CPU, linalg_qr_cpu},
    {PTL_OP__linalg_eigh, PTL_KEY_CPU, linalg_eigh_cpu},
    {PTL_OP_linalg_eigh, PTL_KEY_COMPOSITE_IMPLICIT, linalg_eigh_composite},
    {PTL_OP_linalg_eigvalsh, PTL_KEY_COMPOSITE_IMPLICIT, linalg_eigvalsh_composite},
};
PTL_DEFINE_REGISTER(linalg_decomp_kernels)
