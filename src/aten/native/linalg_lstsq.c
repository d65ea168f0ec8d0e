/* linalg_lstsq.c -- _linalg_lstsq_qr, the QR drivers of torch.linalg.lstsq ('gels' and
 * 'gelsy' when every matrix has full rank) in one call.  Mirrors the gels/gelsy branches of
 * ATen/native/BatchLinearAlgebra.cpp's linalg_lstsq, which call LAPACK; pytorchlite computes
 * them itself, float32 in float32 and float64 in float64 (Note [Float64 linear algebra] in
 * linalg_solve.c), with linalg_decomp.c's blocked Householder QR (Note [Blocked QR]).
 *
 * Note [Least squares by one QR]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Tall A (m >= n): the QR of [A B] (m x (n + nrhs), no Q formed) holds R in its first n
 * columns and Q^T B in the first n rows of the others, so X = R^-1 (Q^T B) by back
 * substitution.  The squared residual of column c of B is the squared norm of (Q^T B)[n:, c],
 * which the reflections of the columns after n leave as R_full[n : n + c + 1, n + c] (they
 * only rotate rows n on).  Factoring B's columns too costs about 2 m nrhs (n + nrhs) more:
 * above 0.6 n right-hand sides forming Q (about 2 m n^2) and Q^T B, B - Q Q^T B by the GEMM
 * costs less (lstsq_tall_many).  Wide A (m < n): the QR of A^T, Q (n x m) formed, gives the
 * minimum-norm X = Q R^-T B.
 *
 * 'gelsy' must answer the rank (LAPACK's gelsy counts it from a pivoted QR).  Full rank is
 * proved by bounding cond_2(R) = cond_2(A) below 1 / rcond, which with PyTorch's count
 * (singular values above rcond * the largest) means rank = min(m, n):
 * - first in O(k^2): ||R||_2 <= ||R||_F, and |R^-1| <= M(R)^-1 entrywise for the comparison
 *   matrix M(R) (|r_ii| on the diagonal, -|r_ij| above it; Higham, Accuracy and Stability of
 *   Numerical Algorithms, Thm. 8.12), so ||R^-1||_2 <= sqrt(||R^-1||_1 ||R^-1||_inf) <=
 *   sqrt(max(M^-T e) max(M^-1 e)), two triangular solves with positive terms.  The bound
 *   grows like exp(c sqrt(k)) for square Gaussian matrices (about 1e12 at k = 256) and
 *   stays small for tall ones, against 1 / rcond near 1e13;
 * - failing that, ||R||_F ||R^-1||_F with R^-1 formed (recursively, by the GEMM;
 *   linalg.py's old composite used this bound alone).  float32 inputs take it at every
 *   square size (their rcond is 2^29 times float64's).  Their R, factored in float32, is
 *   inverted in float32 first: the computed X satisfies |X R - I| <= c u |X| |R| with c
 *   about k (u = eps_f32 / 2), so ||X R - I||_2 <= c u ||X||_F ||R||_F; as rcond = eps_f32
 *   max(m, n) >= 2 u k, a product ||R||_F ||X||_F rcond below 1/2 leaves that residual
 *   below 1/4, ||R^-1|| <= (4/3) ||X|| and the true product below 2/3: proved.  Above 1/2,
 *   or for a caller's rcond below eps_f32 k, the float64 inverse decides (half the float64
 *   GEMM's time went to it at 256 x 256, whose product is 0.25).  R itself carries float32's
 *   rounding, as sgeqp3's does for PyTorch: an rcond far below eps_f32 proves the rank of R,
 *   not of A's float64 truth;
 * - failing both, rank is -1 for that matrix and the caller (linalg.py's lstsq) counts it
 *   from the singular values, taking the SVD path when some matrix is deficient.
 * 'gels' assumes full rank; an exactly zero diagonal of R is LAPACK trtrs's info, raised as
 * PyTorch raises it. */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "../tensor_iterator.h"
#include "gemm.h"
#include "linalg_impl.h"

#define LSTSQ_NOT_FULL_RANK                                                                  \
    "The least squares solution could not be computed because the input matrix does not " \
    "have full rank (error code: %d)."

typedef struct LstsqJob {
    const char *a, *b;   /* A's and B's data (their dtype, strided) */
    PtlDtype dtype;
    int64_t m, n, nrhs;
    int64_t as[2], bs[2];   /* the matrices' row and column strides, in elements */
    int nb;                 /* broadcast batch dims */
    int64_t bsz[PTL_MAX_DIMS], abst[PTL_MAX_DIMS], bbst[PTL_MAX_DIMS];
    int64_t aist[PTL_MAX_DIMS];   /* A's matrix index: its contiguous batch strides */
    double rcond;
    int residuals;
    char *x, *res;          /* [batch, n, nrhs], [batch, nrhs] (res NULL when not wanted) */
    int64_t *rank;          /* [batch] or NULL (A's batch: reduced after) */
    int32_t *info;          /* [batch] */
} LstsqJob;

/* The element offsets of batch matrix i in A (*ao) and B (*bo), and the index of its A
 * among A's matrices (*ai). */
static void
batch_offsets(const LstsqJob *j, int64_t i, int64_t *ao, int64_t *bo, int64_t *ai)
{
    *ao = *bo = *ai = 0;
    for (int d = j->nb - 1; d >= 0; d--) {
        int64_t q = i % j->bsz[d];
        i /= j->bsz[d];
        *ao += q * j->abst[d];
        *bo += q * j->bbst[d];
        *ai += q * j->aist[d];
    }
}

#define INVERT_LEAF 16

/* invert_upper_f8 (double) and invert_upper_f4 (float, with the float32 GEMM): x (k x k, row
 * stride ldx) = R^-1 for the upper triangle of r (row stride ld; what is below
 * its diagonal is not read), recursively: R^-1 = [X11, -X11 (R12 X22); 0, X22], the products
 * by the GEMM; leaves of INVERT_LEAF rows by substitution, row i of R^-1 being (e_i -
 * sum_{c > i} r_ic (row c)) / r_ii.  t: k * k / 4 scratch.  0 or -1. */
#define DEFINE_INVERT_UPPER(T, SUF, GEMM)                                                         \
    static int                                                                                    \
    invert_upper_##SUF(const T *r, int64_t ld, int64_t k, T *x, int64_t ldx, T *t)                \
    {                                                                                             \
        if (k <= INVERT_LEAF) {                                                                   \
            for (int64_t i = k - 1; i >= 0; i--) {                                                \
                const T *ri = r + i * ld;                                                         \
                T *xi = x + i * ldx, d = 1 / ri[i];                                               \
                memset(xi, 0, sizeof(T) * (size_t)k);                                             \
                xi[i] = d;                                                                        \
                for (int64_t c = i + 1; c < k; c++) {                                             \
                    const T *xc = x + c * ldx;                                                    \
                    T f = -ri[c] * d;                                                             \
                    for (int64_t q = c; q < k; q++) {                                             \
                        xi[q] += f * xc[q];                                                       \
                    }                                                                             \
                }                                                                                 \
            }                                                                                     \
            return 0;                                                                             \
        }                                                                                         \
        int64_t h = k / 2, h2 = k - h;                                                            \
        if (invert_upper_##SUF(r, ld, h, x, ldx, t) < 0 ||                                        \
            invert_upper_##SUF(r + h * ld + h, ld, h2, x + h * ldx + h, ldx, t) < 0 ||            \
            GEMM(h, h2, h2, 1.0, r + h, ld, 1, x + h * ldx + h, ldx, 1, 0.0, t, h2) < 0 ||        \
            GEMM(h, h2, h, -1.0, x, ldx, 1, t, h2, 1, 0.0, x + h, ldx) < 0) {                     \
            return -1;                                                                            \
        }                                                                                         \
        for (int64_t i = h; i < k; i++) {                                                         \
            memset(x + i * ldx, 0, sizeof(T) * (size_t)h);                                        \
        }                                                                                         \
        return 0;                                                                                 \
    }

DEFINE_INVERT_UPPER(double, f8, ptl_gemm_f64)
DEFINE_INVERT_UPPER(float, f4, ptl_gemm_f32)
#undef DEFINE_INVERT_UPPER

/* sum |a_c b_c| over n entries, in eight partial sums (the sums below were chains of dependent
 * additions, a tenth of lstsq 64x64's time). */
static double
abs_dot(const double *a, const double *b, int64_t n)
{
    double p[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t c = 0;
    for (; c + 8 <= n; c += 8) {
        for (int l = 0; l < 8; l++) {
            p[l] += fabs(a[c + l]) * fabs(b[c + l]);
        }
    }
    for (; c < n; c++) {
        p[0] += fabs(a[c]) * fabs(b[c]);
    }
    return ((p[0] + p[4]) + (p[2] + p[6])) + ((p[1] + p[5]) + (p[3] + p[7]));
}

/* 1 when cond_2(R) < 1 / rcond is proved for the upper triangular R (k x k, row stride ld),
 * else 0, or -1 on error (Note [Least squares by one QR]).  w: 2 k^2 + 2 k scratch.  rf (row
 * stride ldf), when not NULL, is R in float, whose float32 inverse is tried first. */
static int
full_rank_proved(const double *r, int64_t ld, int64_t k, double rcond, double *w, const float *rf,
                 int64_t ldf)
{
    double fro = 0;
    for (int64_t i = 0; i < k; i++) {
        if (r[i * ld + i] == 0 || !isfinite(r[i * ld + i])) {
            return 0;
        }
        fro += abs_dot(r + i * ld + i, r + i * ld + i, k - i);
    }
    fro = sqrt(fro);
    /* xi = M^-1 e from the bottom up (rows of R); x1 = M^-T e from the top down, the terms
     * of row i added to the later entries */
    double *xi = w, *x1 = w + k, maxi = 0, max1 = 0;
    for (int64_t i = k - 1; i >= 0; i--) {
        const double *ri = r + i * ld;
        xi[i] = (1 + abs_dot(ri + i + 1, xi + i + 1, k - i - 1)) / fabs(ri[i]);
        maxi = xi[i] > maxi ? xi[i] : maxi;
    }
    for (int64_t i = 0; i < k; i++) {
        x1[i] = 1;
    }
    for (int64_t i = 0; i < k; i++) {
        const double *ri = r + i * ld;
        x1[i] /= fabs(ri[i]);
        max1 = x1[i] > max1 ? x1[i] : max1;
        for (int64_t c = i + 1; c < k; c++) {
            x1[c] += fabs(ri[c]) * x1[i];
        }
    }
    double bound = fro * sqrt(maxi) * sqrt(max1);
    if (bound * rcond < 1) {
        return 1;
    }
    if (rf != NULL && rcond >= FLT_EPSILON * (double)k) {
        /* float R: first its inverse in float32 (Note [Least squares by one QR]; the margin
         * needs rcond of at least eps_f32 k, as the default eps_f32 max(m, n) is) */
        float *xf = malloc(sizeof(float) * (size_t)(k * k + k * k / 4 + 1));
        double nrm = 0;
        if (xf == NULL) {
            return ptl_error_set(PTL_ERR_MEMORY, "torch.linalg.lstsq: out of memory");
        }
        int rc = invert_upper_f4(rf, ldf, k, xf, k, xf + k * k);
        double p[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (int64_t i = 0; i + 8 <= k * k && rc == 0; i += 8) {
            for (int l = 0; l < 8; l++) {
                p[l] += (double)xf[i + l] * xf[i + l];
            }
        }
        for (int64_t i = k * k / 8 * 8; i < k * k && rc == 0; i++) {
            p[0] += (double)xf[i] * xf[i];
        }
        nrm = ((p[0] + p[4]) + (p[2] + p[6])) + ((p[1] + p[5]) + (p[3] + p[7]));
        free(xf);
        if (rc < 0) {
            return -1;
        }
        if (fro * sqrt(nrm) * rcond < 0.5) {
            return 1;
        }
    }
    double *inv = w + 2 * k, nrm = 0;
    if (invert_upper_f8(r, ld, k, inv, k, inv + k * k) < 0) {
        return -1;
    }
    for (int64_t i = 0; i < k; i++) {
        nrm += abs_dot(inv + i * k + i, inv + i * k + i, k - i);
    }
    return fro * sqrt(nrm) * rcond < 1;
}

/* full_rank_proved for a double R */
static int
full_rank_proved_f8(const double *r, int64_t ld, int64_t k, double rcond, double *w)
{
    return full_rank_proved(r, ld, k, rcond, w, NULL, 0);
}

/* full_rank_proved for a float R (k x k, row stride ld): R copied to double first, its
 * inverse tried in float32 before double.  w: 2 k^2 + 2 k floats, unused (the doubles are
 * allocated here). */
static int
full_rank_proved_f4(const float *r, int64_t ld, int64_t k, double rcond, float *w)
{
    (void)w;
    double *rd = malloc(sizeof(double) * (size_t)(3 * k * k + 2 * k + 1));
    if (rd == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "torch.linalg.lstsq: out of memory");
    }
    for (int64_t i = 0; i < k; i++) {
        for (int64_t c = i; c < k; c++) {
            rd[i * k + c] = r[i * ld + c];
        }
    }
    int rc = full_rank_proved(rd, k, k, rcond, rd + k * k, r, ld);
    free(rd);
    return rc;
}

/* The per-matrix work comes in two instances from one template, DEFINE_LSTSQ(T, SUF, GEMM,
 * QR_BLOCKED, RANK_PROVED): _f8 on double and _f4 on float, float32 inputs factored in float32
 * with linalg_decomp.c's float QR and the float32 GEMM, as LAPACK's sgeqrf does for PyTorch
 * (Note [Float64 linear algebra] in linalg_solve.c); the rank proof takes R in double either
 * way (full_rank_proved_f4 copies it).  In the template's order:
 *
 * load: dst (rows x cols, row stride ld) = the matrix at src (T, element strides rs, cs).
 *
 * store: dst (contiguous) = src (rows x cols, row stride ld).
 *
 * triangular_solve: X (k x nrhs, row stride ldx) = R^-1 X (upper: back substitution) or
 * R^-T X (forward), R k x k with row stride ld.
 *
 * zero_diagonal: the first exactly zero diagonal entry of R (1-based), or 0.
 *
 * lstsq_tall_many: tall A with many right-hand sides (lstsq_matrix): the QR of A alone with
 * Q formed, Q^T B and the residual B - Q Q^T B by the GEMM.  0 or -1.
 *
 * lstsq_matrix (a LinalgMatrixFn on a LstsqJob): matrix i's solution, its residuals and its
 * rank or info (Note [Least squares by one QR]).  0 or -1. */
#define DEFINE_LSTSQ(T, SUF, GEMM, QR_BLOCKED, RANK_PROVED)                                       \
    static void                                                                                   \
    load_##SUF(T *dst, int64_t ld, const char *src, int64_t rows, int64_t cols, int64_t rs,       \
               int64_t cs)                                                                        \
    {                                                                                             \
        for (int64_t r = 0; r < rows; r++) {                                                      \
            T *d = dst + r * ld;                                                                  \
            const T *s = (const T *)src + r * rs;                                                 \
            if (cs == 1) {                                                                        \
                memcpy(d, s, sizeof(T) * (size_t)cols);                                           \
                continue;                                                                         \
            }                                                                                     \
            for (int64_t c = 0; c < cols; c++) {                                                  \
                d[c] = s[c * cs];                                                                 \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
                                                                                                  \
    static void                                                                                   \
    store_##SUF(char *dst, const T *src, int64_t ld, int64_t rows, int64_t cols)                  \
    {                                                                                             \
        for (int64_t r = 0; r < rows; r++) {                                                      \
            memcpy((T *)dst + r * cols, src + r * ld, sizeof(T) * (size_t)cols);                  \
        }                                                                                         \
    }                                                                                             \
                                                                                                  \
    static void                                                                                   \
    triangular_solve_##SUF(const T *r, int64_t ld, int64_t k, T *x, int64_t ldx, int64_t nrhs,    \
                           int transpose)                                                         \
    {                                                                                             \
        if (!transpose && nrhs == 1) {                                                            \
            /* one column: row i's sum in eight partial sums, not a chain of subtractions */      \
            for (int64_t i = k - 1; i >= 0; i--) {                                                \
                const T *ri = r + i * ld;                                                         \
                T p[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                \
                int64_t c = i + 1;                                                                \
                for (; c + 8 <= k; c += 8) {                                                      \
                    for (int l = 0; l < 8; l++) {                                                 \
                        p[l] += ri[c + l] * x[(c + l) * ldx];                                     \
                    }                                                                             \
                }                                                                                 \
                for (; c < k; c++) {                                                              \
                    p[0] += ri[c] * x[c * ldx];                                                   \
                }                                                                                 \
                T sum = ((p[0] + p[4]) + (p[2] + p[6])) + ((p[1] + p[5]) + (p[3] + p[7]));        \
                x[i * ldx] = (x[i * ldx] - sum) * (1 / ri[i]);                                    \
            }                                                                                     \
            return;                                                                               \
        }                                                                                         \
        if (!transpose) {                                                                         \
            for (int64_t i = k - 1; i >= 0; i--) {                                                \
                T *xi = x + i * ldx;                                                              \
                const T *ri = r + i * ld;                                                         \
                for (int64_t c = i + 1; c < k; c++) {                                             \
                    const T *xc = x + c * ldx;                                                    \
                    T f = ri[c];                                                                  \
                    for (int64_t q = 0; q < nrhs; q++) {                                          \
                        xi[q] -= f * xc[q];                                                       \
                    }                                                                             \
                }                                                                                 \
                T d = 1 / ri[i];                                                                  \
                for (int64_t q = 0; q < nrhs; q++) {                                              \
                    xi[q] *= d;                                                                   \
                }                                                                                 \
            }                                                                                     \
            return;                                                                               \
        }                                                                                         \
        /* R^T lower: row i of X is final once divided; it then leaves the rows after it */       \
        for (int64_t i = 0; i < k; i++) {                                                         \
            T *xi = x + i * ldx;                                                                  \
            const T *ri = r + i * ld;                                                             \
            T d = 1 / ri[i];                                                                      \
            for (int64_t q = 0; q < nrhs; q++) {                                                  \
                xi[q] *= d;                                                                       \
            }                                                                                     \
            for (int64_t c = i + 1; c < k; c++) {                                                 \
                T *xc = x + c * ldx, f = ri[c];                                                   \
                for (int64_t q = 0; q < nrhs; q++) {                                              \
                    xc[q] -= f * xi[q];                                                           \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
                                                                                                  \
    static int32_t                                                                                \
    zero_diagonal_##SUF(const T *r, int64_t ld, int64_t k)                                        \
    {                                                                                             \
        for (int64_t i = 0; i < k; i++) {                                                         \
            if (r[i * ld + i] == 0) {                                                             \
                return (int32_t)(i + 1);                                                          \
            }                                                                                     \
        }                                                                                         \
        return 0;                                                                                 \
    }                                                                                             \
                                                                                                  \
    static int                                                                                    \
    lstsq_tall_many_##SUF(const LstsqJob *j, int64_t i, const char *asrc, const char *bsrc)       \
    {                                                                                             \
        int64_t m = j->m, n = j->n, nrhs = j->nrhs, isz = (int64_t)ptl_dtype_itemsize(j->dtype);  \
        int64_t qs = ptl_linalg_qr_scratch(m, n, n);                                              \
        T *a = malloc(sizeof(T) * (size_t)(2 * m * n + n + qs + m * nrhs + n * nrhs +             \
                                                     2 * n * n + 2 * n + nrhs + 1));              \
        if (a == NULL) {                                                                          \
            return ptl_error_set(PTL_ERR_MEMORY, "torch.linalg.lstsq: out of memory");            \
        }                                                                                         \
        T *tau = a + m * n, *scratch = tau + n, *q = scratch + qs, *bw = q + m * n;               \
        T *c = bw + m * nrhs, *cw = c + n * nrhs, *acc = cw + 2 * n * n + 2 * n + 1;              \
        load_##SUF(a, n, asrc, m, n, j->as[0], j->as[1]);                                         \
        load_##SUF(bw, nrhs, bsrc, m, nrhs, j->bs[0], j->bs[1]);                                  \
        int rc = QR_BLOCKED(a, m, n, tau, q, n, scratch);                                         \
        /* C = Q^T B; then B - Q C */                                                             \
        if (rc == 0) {                                                                            \
            rc = GEMM(n, nrhs, m, 1.0, q, 1, n, bw, nrhs, 1, 0.0, c, nrhs);                       \
        }                                                                                         \
        if (rc == 0 && j->res != NULL) {                                                          \
            rc = GEMM(m, nrhs, n, -1.0, q, n, 1, c, nrhs, 1, 1.0, bw, nrhs);                      \
        }                                                                                         \
        if (rc == 0 && j->rank != NULL) {                                                         \
            rc = RANK_PROVED(a, n, n, j->rcond, cw);                                              \
            j->rank[i] = rc == 1 ? n : -1;                                                        \
            rc = rc < 0 ? -1 : 0;                                                                 \
        } else if (rc == 0) {                                                                     \
            j->info[i] = zero_diagonal_##SUF(a, n, n);                                            \
        }                                                                                         \
        if (rc == 0) {                                                                            \
            triangular_solve_##SUF(a, n, n, c, nrhs, nrhs, 0);                                    \
            store_##SUF(j->x + i * n * nrhs * isz, c, nrhs, n, nrhs);                             \
            if (j->res != NULL) {                                                                 \
                for (int64_t col = 0; col < nrhs; col++) {                                        \
                    acc[col] = 0;                                                                 \
                }                                                                                 \
                for (int64_t r = 0; r < m; r++) {                                                 \
                    for (int64_t col = 0; col < nrhs; col++) {                                    \
                        acc[col] += bw[r * nrhs + col] * bw[r * nrhs + col];                      \
                    }                                                                             \
                }                                                                                 \
                store_##SUF(j->res + i * nrhs * isz, acc, nrhs, 1, nrhs);                         \
            }                                                                                     \
        }                                                                                         \
        free(a);                                                                                  \
        return rc;                                                                                \
    }                                                                                             \
                                                                                                  \
    static int                                                                                    \
    lstsq_matrix_##SUF(void *ctx, int64_t i)                                                      \
    {                                                                                             \
        const LstsqJob *j = ctx;                                                                  \
        int64_t m = j->m, n = j->n, nrhs = j->nrhs, k = m < n ? m : n, ao, bo, ai;                \
        int tall = m >= n;                                                                        \
        if (tall && 5 * nrhs > 3 * n) {                                                           \
            batch_offsets(j, i, &ao, &bo, &ai);                                                   \
            int64_t isz = (int64_t)ptl_dtype_itemsize(j->dtype);                                  \
            return lstsq_tall_many_##SUF(j, i, j->a + ao * isz, j->b + bo * isz);                 \
        }                                                                                         \
        /* tall: [A B] (m x w); wide: A^T (n x m), Q (n x m) and B (m x nrhs) */                  \
        int64_t rows = tall ? m : n, w = tall ? n + nrhs : m, kk = rows < w ? rows : w;           \
        int64_t need = rows * w + kk + ptl_linalg_qr_scratch(rows, w, tall ? 0 : m) +             \
                       (tall ? nrhs : n * m + m * nrhs + n * nrhs) + 2 * k * k + 2 * k + 1;       \
        T *a = malloc(sizeof(T) * (size_t)need);                                                  \
        if (a == NULL) {                                                                          \
            return ptl_error_set(PTL_ERR_MEMORY, "torch.linalg.lstsq: out of memory");            \
        }                                                                                         \
        T *tau = a + rows * w, *scratch = tau + kk;                                               \
        T *q = scratch + ptl_linalg_qr_scratch(rows, w, tall ? 0 : m);                            \
        T *bw = tall ? NULL : q + n * m, *xw = tall ? NULL : bw + m * nrhs;                       \
        T *cw = tall ? q : xw + n * nrhs;   /* the rank check's scratch */                        \
        batch_offsets(j, i, &ao, &bo, &ai);                                                       \
        int64_t isz = (int64_t)ptl_dtype_itemsize(j->dtype);                                      \
        const char *asrc = j->a + ao * isz, *bsrc = j->b + bo * isz;                              \
        if (tall) {                                                                               \
            load_##SUF(a, w, asrc, m, n, j->as[0], j->as[1]);                                     \
            load_##SUF(a + n, w, bsrc, m, nrhs, j->bs[0], j->bs[1]);                              \
        } else {                                                                                  \
            load_##SUF(a, w, asrc, n, m, j->as[1], j->as[0]);                                     \
            load_##SUF(bw, nrhs, bsrc, m, nrhs, j->bs[0], j->bs[1]);                              \
        }                                                                                         \
        if (QR_BLOCKED(a, rows, w, tau, tall ? NULL : q, tall ? 0 : m, scratch) < 0) {            \
            free(a);                                                                              \
            return -1;                                                                            \
        }                                                                                         \
        /* R: the k x k upper triangle at a (row stride w) */                                     \
        if (j->rank != NULL) {                                                                    \
            int rc = RANK_PROVED(a, w, k, j->rcond, cw);                                          \
            if (rc < 0) {                                                                         \
                free(a);                                                                          \
                return -1;                                                                        \
            }                                                                                     \
            j->rank[i] = rc ? k : -1;                                                             \
        } else {                                                                                  \
            j->info[i] = zero_diagonal_##SUF(a, w, k);                                            \
        }                                                                                         \
        char *x = j->x + i * n * nrhs * isz;                                                      \
        if (tall) {                                                                               \
            triangular_solve_##SUF(a, w, n, a + n, w, nrhs, 0);                                   \
            store_##SUF(x, a + n, w, n, nrhs);                                                    \
            if (j->res != NULL) {                                                                 \
                T *acc = q;                                                                       \
                for (int64_t c = 0; c < nrhs; c++) {                                              \
                    acc[c] = 0;                                                                   \
                    for (int64_t r = n; r < m && r <= n + c; r++) {                               \
                        acc[c] += a[r * w + n + c] * a[r * w + n + c];                            \
                    }                                                                             \
                }                                                                                 \
                store_##SUF(j->res + i * nrhs * isz, acc, nrhs, 1, nrhs);                         \
            }                                                                                     \
        } else {                                                                                  \
            triangular_solve_##SUF(a, w, m, bw, nrhs, nrhs, 1);                                   \
            if (GEMM(n, nrhs, m, 1.0, q, m, 1, bw, nrhs, 1, 0.0, xw, nrhs) < 0) {                 \
                free(a);                                                                          \
                return -1;                                                                        \
            }                                                                                     \
            store_##SUF(x, xw, nrhs, n, nrhs);                                                    \
        }                                                                                         \
        free(a);                                                                                  \
        return 0;                                                                                 \
    }

DEFINE_LSTSQ(double, f8, ptl_gemm_f64, ptl_linalg_qr_blocked, full_rank_proved_f8)
DEFINE_LSTSQ(float, f4, ptl_gemm_f32, ptl_linalg_qr_blocked_f32, full_rank_proved_f4)
#undef DEFINE_LSTSQ


/* _linalg_lstsq_qr(Tensor A, Tensor B, float? rcond=None)
 * -> (Tensor solution, Tensor residuals, Tensor rank)
 * A [*, m, n], B [*, m, nrhs] or a vector (1-D, or A's sizes but the last), float32 or
 * float64 alike, batch dims broadcast -> solution [batch, n, nrhs] ([batch, n]);
 * residuals: without rcond ('gels') and m > n, the squared residual norms [batch, nrhs]
 * (nrhs 1 for a vector B), else [0]; rank: with rcond ('gelsy'), int64 of A's batch shape
 * (PyTorch's), min(m, n) where full rank was proved and -1 where not (the caller decides
 * then; 0 when nrhs is 0, as LAPACK returns first), else [0].  linalg.py checks the
 * arguments first (PyTorch's order); the checks here keep a direct call safe.  See Note
 * [Least squares by one QR]. */
static int
linalg_lstsq_qr_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *A = s[0].u.t, *B = s[1].u.t, *t[5] = {NULL, NULL, NULL, NULL, NULL};
    if (A->dim < 2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "torch.linalg.lstsq: input must have at least 2 "
                             "dimensions.");
    }
    if (A->dtype != B->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME, "torch.linalg.lstsq: Expected input and other to "
                             "have the same dtype, but got input's dtype %s and other's dtype "
                             "%s", ptl_dtype_legacy_name(A->dtype),
                             ptl_dtype_legacy_name(B->dtype));
    }
    if (B->dim > A->dim || A->dim - B->dim > 1) {
        return ptl_error_set(PTL_ERR_RUNTIME, "torch.linalg.lstsq: input.dim() must be greater "
                             "or equal to other.dim() and (input.dim() - other.dim()) <= 1");
    }
    /* PyTorch's linalg_solve_is_vector_rhs */
    int vec = B->dim == 1 || (B->dim == A->dim - 1 &&
                              memcmp(B->sizes, A->sizes, sizeof(int64_t) * (size_t)B->dim) == 0);
    int na = A->dim - 2, nbb = B->dim - (vec ? 1 : 2);
    if (B->sizes[nbb] != A->sizes[na]) {
        return ptl_error_set(PTL_ERR_RUNTIME, "torch.linalg.lstsq: input.size(-2) should match "
                             "other.size(%d)", vec ? -1 : -2);
    }
    LstsqJob job = {.dtype = A->dtype, .m = A->sizes[na], .n = A->sizes[na + 1],
                    .nrhs = vec ? 1 : B->sizes[B->dim - 1],
                    .rcond = s[2].tag == PTL_IV_DOUBLE ? s[2].u.d : 0};
    if (linalg_check_kernel_dtype("linalg_lstsq", A) < 0 ||
        ptl_broadcast_shapes(na, A->sizes, nbb, B->sizes, &job.nb, job.bsz) < 0) {
        return -1;
    }
    int nb = job.nb;
    int64_t acount = 1;
    for (int d = nb - 1; d >= 0; d--) {
        int da = d - (nb - na), db = d - (nb - nbb);
        job.abst[d] = da >= 0 && A->sizes[da] != 1 ? A->strides[da] : 0;
        job.bbst[d] = db >= 0 && B->sizes[db] != 1 ? B->strides[db] : 0;
        job.aist[d] = da >= 0 && A->sizes[da] != 1 ? acount : 0;
        acount *= da >= 0 ? A->sizes[da] : 1;
    }
    job.as[0] = A->strides[na];
    job.as[1] = A->strides[na + 1];
    job.bs[0] = B->strides[B->dim - (vec ? 1 : 2)];
    job.bs[1] = vec ? 0 : B->strides[B->dim - 1];
    int64_t m = job.m, n = job.n, nrhs = job.nrhs, k = m < n ? m : n, sz[PTL_MAX_DIMS], zero = 0;
    int64_t batch = 1;
    memcpy(sz, job.bsz, sizeof(int64_t) * (size_t)nb);
    for (int d = 0; d < nb; d++) {
        batch *= sz[d];
    }
    sz[nb] = n;
    sz[nb + 1] = nrhs;
    int gels = s[2].tag != PTL_IV_DOUBLE;
    job.residuals = gels && m > n;
    if ((t[0] = ptl_empty(nb + (vec ? 1 : 2), sz, A->dtype, A->device)) == NULL) {
        return -1;
    }
    sz[nb] = nrhs;
    t[1] = job.residuals ? ptl_empty(nb + 1, sz, A->dtype, A->device)
                         : ptl_empty(1, &zero, A->dtype, A->device);
    /* rank has A's batch shape, as PyTorch's; the per-matrix ranks go to t[4] first */
    t[2] = gels ? ptl_empty(1, &zero, PTL_DTYPE_INT64, A->device)
                : ptl_empty(na, A->sizes, PTL_DTYPE_INT64, A->device);
    t[3] = ptl_empty(nb, sz, PTL_DTYPE_INT32, A->device);
    t[4] = ptl_empty(nb, sz, PTL_DTYPE_INT64, A->device);
    if (t[1] == NULL || t[2] == NULL || t[3] == NULL || t[4] == NULL) {
        return linalg_release_all(t, 5);
    }
    job.a = ptl_tensor_data(A);
    job.b = ptl_tensor_data(B);
    job.x = ptl_tensor_data(t[0]);
    job.res = job.residuals ? ptl_tensor_data(t[1]) : NULL;
    job.rank = gels ? NULL : (int64_t *)ptl_tensor_data(t[4]);
    job.info = (int32_t *)ptl_tensor_data(t[3]);
    memset(job.info, 0, sizeof(int32_t) * (size_t)batch);
    if (k == 0) {
        /* no equations or no unknowns: X = 0, the residuals ||B||^2 as LAPACK leaves them
         * (0: PyTorch returns zeros), rank 0 */
        memset(job.x, 0, (size_t)t[0]->numel * ptl_dtype_itemsize(A->dtype));
        if (job.res != NULL) {
            memset(job.res, 0, (size_t)t[1]->numel * ptl_dtype_itemsize(A->dtype));
        }
        if (job.rank != NULL) {
            memset(job.rank, 0, sizeof(int64_t) * (size_t)batch);
        }
    } else if (nrhs > 0 && linalg_batch_run(batch, 2 * m * n * (n + nrhs) + 1,
                                            A->dtype == PTL_DTYPE_FLOAT32 ? lstsq_matrix_f4
                                                                          : lstsq_matrix_f8,
                                            &job) < 0) {
        return linalg_release_all(t, 5);
    }
    if (nrhs == 0 && job.rank != NULL) {
        /* LAPACK returns before the factorization: PyTorch's rank is 0 */
        memset(job.rank, 0, sizeof(int64_t) * (size_t)batch);
    }
    if (job.rank != NULL) {
        /* A's matrices not met (a B batch of size 0) count as unproved */
        int64_t *rank = (int64_t *)ptl_tensor_data(t[2]);
        for (int64_t i = 0; i < t[2]->numel; i++) {
            rank[i] = batch == 0 && k > 0 && nrhs > 0 ? -1 : (nrhs > 0 ? k : 0);
        }
        for (int64_t i = 0, ao, bo, ai; i < batch; i++) {
            batch_offsets(&job, i, &ao, &bo, &ai);
            rank[ai] = job.rank[i] < rank[ai] ? job.rank[i] : rank[ai];
        }
    }
    if (gels && linalg_check_info("torch.linalg.lstsq", t[3], nb > 0, PTL_ERR_LINALG,
                                  LSTSQ_NOT_FULL_RANK) < 0) {
        return linalg_release_all(t, 5);
    }
    ptl_decref(t[3]);
    ptl_decref(t[4]);
    for (int i = 0; i < 3; i++) {
        s[i] = ptl_iv_tensor(t[i]);
    }
    return 0;
}

static const PtlKernelReg linalg_lstsq_kernels[] = {
    {PTL_OP__linalg_lstsq_qr, PTL_KEY_CPU, linalg_lstsq_qr_cpu},
};
PTL_DEFINE_REGISTER(linalg_lstsq_kernels)
