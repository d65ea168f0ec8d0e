/* svd.c -- the singular value decomposition: _linalg_svd, linalg_svd, linalg_svdvals and the
 * legacy svd.  Mirrors ATen/native/BatchLinearAlgebra.cpp (linalg_svd, linalg_svdvals, svd
 * and the structured _linalg_svd), which calls LAPACK's gesdd; pytorchlite computes it
 * itself.
 *
 * Note [Singular vectors]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * Each matrix is copied into W (r x c, row-major, r = max(m, n), c = min(m, n):
 * A itself when m >= n, else A^T) and scaled by a power of two as for the values (Note
 * [Bidiagonal singular values]), as LAPACK's gesvd does with vectors: when r >= 5c/3 the
 * blocked Householder QR (Note [Blocked QR], linalg_decomp.c) first reduces W to its R;
 * the bidiagonalization keeps its reflections, and U_B (the left ones, the first qcols
 * columns) and V (the right ones, diag(1, Q2)) are formed from them by the blocked Q
 * formation (its GEMMs), not one reflection at a time.  The bidiagonal's QR steps then
 * rotate the rows of U_B^T and V^T: each step's 2 (hi - lo) rotations are recorded (the
 * closed-form rotations give their cosines and sines from quantities they already have)
 * and applied as one batch per side, in column blocks that keep the carried row in
 * registers (rotate_rows_f4; float64's rows are scaled, fast_rotate_rows: Note [Scaled
 * rotations]).  Those rows (ut and vt) start on a 64-byte line (aligned_alloc), and
 * float64's lie an odd number of lines apart (row_ld): at 256, rows 2048 bytes apart made
 * each load wait on the store two rows back that aliases it, and the heap's 16-byte
 * alignment split the vectors across lines by chance (one build's svd 256x256 took 10.4 to
 * 13.8 ms by the process).  A block is two vectors for double (sixteen doubles: 21 KB for a
 * 164-row sweep, which stays in L1; four vectors ran at 1.8 ns a vector rotation against
 * 1.3, one load, one store and four multiplies each) and four for float (two were
 * slower).  The values are sorted descending with their vectors, a negative
 * value's V column negated; with the QR, U = Q [U_R 0; 0 I] (one GEMM).  For m < n the roles
 * swap: U is V and Vh the transposed long-side basis.  The vectors are orthonormal to O(eps)
 * and U diag(S) V^T reproduces A to O(eps ||A||), as gesdd's; a repeated or zero singular
 * value's vectors are some orthonormal basis of its space.
 * The one-sided Jacobi sweeps this replaced cost 4-14 times PyTorch's gesdd.
 *
 * W is float64 for float64 inputs and float32 for float32 ones (Note [Float64 linear
 * algebra] in linalg_solve.c): the reflections, their GEMMs and the rotations of the
 * vectors run in float (sixteen lanes a vector, half the memory traffic), as LAPACK's
 * sgesdd does for PyTorch, and the results carry float32 accuracy (U diag(S) V^T - A and
 * U^T U - I of order eps_f32 times a small multiple of n).  The bidiagonal's QR steps (the
 * scalars d, e and the rotations' cosines and sines) stay in double, rounded to float only
 * where they meet the vectors, and deflate at FLT_EPSILON relative to the neighbouring
 * diagonal or to ||B|| (sbdsqr's test is about ten times looser): twelve percent fewer
 * steps at 256 than at DBL_EPSILON, which float32's vectors could not use.  The float
 * bidiagonalization updates the trailing rows two at a time (PAIRS: acc, u and y loaded
 * once for both, two independent sums).  float32's values without vectors (svdvals,
 * matrix_rank) stay in float64. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/cpu_features.h"
#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "../../c10/tls.h"
#include "../loops.h"
#include "gemm.h"
#include "linalg_impl.h"
#include "native.h"
#include "svd_bidiagonal.h"

typedef struct SvdJob {
    const void *a;            /* [B, m, n] contiguous, float64 (float32 when f32) */
    void *u, *s, *vh;         /* [B, m, ucols], [B, k], [B, vrows, n]; u, vh NULL: values only */
    int64_t m, n, ucols, vrows;
    int full, f32;
} SvdJob;

/* Note [Bidiagonal singular values]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Without the vectors (svdvals, lstsq's rank count, matrix_rank, cond, the 2 and nuclear
 * norms: every _linalg_svd with compute_uv=False) they come from the
 * Golub-Kahan-Reinsch method.  W (r x c, row-major, r >= c: A or A^T, scaled by a power of
 * two to a largest entry in [0.5, 1) as above) is reduced to an upper bidiagonal B = U^T W
 * V (diagonal d, superdiagonal e) by alternating Householder reflections: one from the
 * left zeroes column k below the diagonal, one from the right row k right of the
 * superdiagonal; both updates of a trailing row happen in one pass while it is in cache.
 * When r >= 5c/3 a Householder QR (the same loop without the right reflections; Note
 * [Householder QR]) first reduces W to its c x c R, which is cheaper to bidiagonalize.
 * B's singular values then come from implicit Wilkinson-shifted QR steps on B^T B, done on
 * B itself (each step chases a bulge down the block with Givens rotations); a
 * superdiagonal entry below eps (|d_k| + |d_k+1|) or below eps ||B|| splits the problem,
 * and a diagonal entry below eps ||B|| is set to zero and its row's superdiagonal rotated
 * away, which splits it too.  The values have absolute error
 * O(eps sigma_max) (not a Jacobi method's relative accuracy for the small ones), as gesdd
 * has for values only, at O(r c^2) for the reduction and O(c^2) for the QR steps.  Each
 * matrix is done by one thread, so the bits do not depend on the thread count.
 *
 * The QR steps are a chain of dependent rotations, two per position k: (y, z) -> rho1 on
 * columns k, k+1, then (dk, bulge) -> rho2 on rows k, k+1, each a sqrt and a division.
 * Written out, with q1 = y^2 + z^2, num = y d_k + z e_k = rho1 dk and bz = z d_k+1 = rho1
 * bulge: rho2^2 = (num^2 + bz^2) / q1, the new d_k+1 = d_k d_k+1 / rho2 (the determinant
 * is kept), the new e_k = (num (y e_k - z d_k) + y z d_k+1^2) / (q1 rho2), and the new e_k+1
 * and next bulge are num e_k+1 and bz e_k+1 over rho1 rho2.  The next pair is carried
 * times rho2, (m / q1, bz e_k+1 / rho1): the scale cancels in the next position's ratios
 * and only enters its outputs (as 1 / rho2, known by then).  So the chain from one pair to
 * the next is 1 / q1 beside sqrt(q1), where the plain rotations had two sqrt-then-divide
 * steps: about a third of their latency, and the QR steps are the bulk of svdvals at 64
 * (pairs so small that q1 or rho2^2 would underflow take the plain rotations). */

/* the rotations' vectors: 64 bytes (eight doubles, sixteen floats) in the AVX-512 kernels,
 * 32 in the others: the AVX2 clones had kept 64-byte vectors in memory, a store and a reload
 * each step (svd 256x256 float64 at 0.14 of PyTorch's speed on a Zen 3); a column's
 * operations do not depend on the width, nor do the bits */
typedef double RotD8 __attribute__((vector_size(64)));
typedef float RotF16 __attribute__((vector_size(64)));
typedef double RotD4 __attribute__((vector_size(32)));
typedef float RotF8 __attribute__((vector_size(32)));
#define ROT_AVX512 __attribute__((target("avx512f")))

/* The kernels on one matrix come in two instances from one template, DEFINE_SVD_KERNELS(T,
 * SUF, FABS, SQRT, HYPOT, NSUM, PAIRS, SS_LO): _f8 on double and _f4 on float, for
 * float32's singular vectors (Note [Singular vectors]).  NSUM partial sums in update_row
 * (eight doubles, sixteen floats: one wide vector), PAIRS 1 where bidiagonalize updates
 * the rows below the first two at a time (update_rows2: float only, float64 keeps its
 * bits), SS_LO the sum of squares below which bidiagonalize's shortcut may have
 * underflowed.  In the template's order:
 *
 * reflector: makes the reflection H = I - tau v v^T of x (len entries, stride inc) onto beta
 * e1: x becomes (beta, v[1:]) with v0 = 1 implied, v[1:] = f x[1:] with f in fs; returns tau
 * (0 when x[1:] is zero, beta = x0).
 *
 * sub_row: w -= a b (n entries), then y[0:n-1] += w[0] w[1:] when y is not NULL; returns the
 * new w[0].
 *
 * sub_rows2, update_rows2: sub_row and update_row on two rows wa, wb at once, their new
 * first entries in x0a, x0b; y takes both rows' terms in one addition.
 *
 * update_row: row w (n entries) of a bidiagonalization step: w -= v acc (the left
 * reflection, v its entry of the column), then w -= tr (w . u) u (the right one, u[0] = 1),
 * then y[0:n-1] += w[0] w[1:] when y is not NULL; returns the new w[0].  Two passes: the dot
 * product rides on the first (NSUM partial sums in a fixed order), y on the second.
 *
 * bidiagonalize: reduces w (r x c, row-major, r >= c) in place to the upper bidiagonal d
 * (c), e (c - 1) (Note [Bidiagonal singular values]).  One pass over the trailing rows per
 * column: row i takes the left and the right reflection of step k, and then, its column k+1
 * final, adds w[i, k+1] w[i, k+2:] into y; the next left reflection's v is that column times
 * its scale f, so v^T W = w[k+1, :] + f y without another pass; the same pass sums the
 * column's squares for that reflection.  acc, y: c scratch each.  Without right (e
 * untouched) it is the Householder QR: R in the upper triangle, its diagonal in d.  With
 * taus (2c) the reflections are kept for the vectors: the left ones' v below the diagonal
 * (v0 = 1 implied) with their taus in taus[0:c], the right ones' v in row k from column k+1
 * on (w[k, k+1] = 1) with their taus in taus[c:2c].
 *
 * rotate_pair: rows i, k of x (len entries, stride ld) -> cs x_i + sn x_k, cs x_k - sn x_i.
 *
 * load_scaled: w (r x c) = a (row-major, n columns; transposed when not tall) times 2^-e2,
 * e2 the exponent of its largest |entry| (0 for a zero matrix), so that the entries lie
 * below 1; returns e2.  The scaling goes by two exact halves (2^-e2 alone may not be a T). */
#define DEFINE_SVD_KERNELS(T, SUF, FABS, SQRT, HYPOT, NSUM, PAIRS, SS_LO)                         \
    static T                                                                                      \
    reflector_##SUF(T *x, int64_t len, int64_t inc, T *fs)                                        \
    {                                                                                             \
        *fs = 0;                                                                                  \
        T scale = 0, ss = 0;                                                                      \
        for (int64_t i = 1; i < len; i++) {                                                       \
            T t = FABS(x[i * inc]);                                                               \
            scale = t > scale ? t : scale;                                                        \
        }                                                                                         \
        if (scale == 0) {                                                                         \
            return 0;                                                                             \
        }                                                                                         \
        for (int64_t i = 1; i < len; i++) {                                                       \
            T t = x[i * inc] / scale;                                                             \
            ss += t * t;                                                                          \
        }                                                                                         \
        T x0 = x[0], nrm = HYPOT(x0, scale * SQRT(ss));                                           \
        T beta = x0 >= 0 ? -nrm : nrm, f = 1 / (x0 - beta);                                       \
        for (int64_t i = 1; i < len; i++) {                                                       \
            x[i * inc] *= f;                                                                      \
        }                                                                                         \
        *fs = f;                                                                                  \
        x[0] = beta;                                                                              \
        return (beta - x0) / beta;                                                                \
    }                                                                                             \
                                                                                                  \
    static inline T                                                                               \
    sub_row_##SUF(T *w, T a, const T *b, T *y, int64_t n)                                         \
    {                                                                                             \
        T x0 = w[0] - a * b[0];                                                                   \
        w[0] = x0;                                                                                \
        if (y == NULL) {                                                                          \
            for (int64_t j = 1; j < n; j++) {                                                     \
                w[j] -= a * b[j];                                                                 \
            }                                                                                     \
            return x0;                                                                            \
        }                                                                                         \
        for (int64_t j = 1; j < n; j++) {                                                         \
            T x = w[j] - a * b[j];                                                                \
            w[j] = x;                                                                             \
            y[j - 1] += x0 * x;                                                                   \
        }                                                                                         \
        return x0;                                                                                \
    }                                                                                             \
                                                                                                  \
    static inline T                                                                               \
    update_row_##SUF(T *w, T v, const T *acc, const T *u, T tr, T *y, int64_t n)                  \
    {                                                                                             \
        if (tr == 0) {                                                                            \
            return sub_row_##SUF(w, v, acc, y, n);                                                \
        }                                                                                         \
        T p[NSUM] = {0};                                                                          \
        int64_t j = 0;                                                                            \
        for (; j + NSUM <= n; j += NSUM) {                                                        \
            for (int l = 0; l < NSUM; l++) {                                                      \
                T x = w[j + l] - v * acc[j + l];                                                  \
                w[j + l] = x;                                                                     \
                p[l] += x * u[j + l];                                                             \
            }                                                                                     \
        }                                                                                         \
        for (; j < n; j++) {                                                                      \
            T x = w[j] - v * acc[j];                                                              \
            w[j] = x;                                                                             \
            p[0] += x * u[j];                                                                     \
        }                                                                                         \
        for (int l = 8; l < NSUM; l++) {                                                          \
            p[l & 7] += p[l];                                                                     \
        }                                                                                         \
        T t = tr * (((p[0] + p[4]) + (p[2] + p[6])) + ((p[1] + p[5]) + (p[3] + p[7])));           \
        return sub_row_##SUF(w, t, u, y, n);                                                      \
    }                                                                                             \
                                                                                                  \
    static inline void                                                                            \
    sub_rows2_##SUF(T *restrict wa, T a, T *restrict wb, T b, const T *restrict u,                \
                    T *restrict y, int64_t n, T *x0a, T *x0b)                                     \
    {                                                                                             \
        T ya = wa[0] - a * u[0], yb = wb[0] - b * u[0];                                           \
        wa[0] = ya;                                                                               \
        wb[0] = yb;                                                                               \
        for (int64_t j = 1; j < n; j++) {                                                         \
            T xa = wa[j] - a * u[j], xb = wb[j] - b * u[j];                                       \
            wa[j] = xa;                                                                           \
            wb[j] = xb;                                                                           \
            y[j - 1] += ya * xa + yb * xb;                                                        \
        }                                                                                         \
        *x0a = ya;                                                                                \
        *x0b = yb;                                                                                \
    }                                                                                             \
                                                                                                  \
    static inline void                                                                            \
    update_rows2_##SUF(T *restrict wa, T va, T *restrict wb, T vb, const T *restrict acc,         \
                       const T *restrict u, T tr, T *restrict y, int64_t n, T *x0a, T *x0b)       \
    {                                                                                             \
        if (tr == 0) {                                                                            \
            sub_rows2_##SUF(wa, va, wb, vb, acc, y, n, x0a, x0b);                                 \
            return;                                                                               \
        }                                                                                         \
        T p[NSUM] = {0}, q[NSUM] = {0};                                                           \
        int64_t j = 0;                                                                            \
        for (; j + NSUM <= n; j += NSUM) {                                                        \
            for (int l = 0; l < NSUM; l++) {                                                      \
                T xa = wa[j + l] - va * acc[j + l], xb = wb[j + l] - vb * acc[j + l];             \
                wa[j + l] = xa;                                                                   \
                wb[j + l] = xb;                                                                   \
                p[l] += xa * u[j + l];                                                            \
                q[l] += xb * u[j + l];                                                            \
            }                                                                                     \
        }                                                                                         \
        for (; j < n; j++) {                                                                      \
            T xa = wa[j] - va * acc[j], xb = wb[j] - vb * acc[j];                                 \
            wa[j] = xa;                                                                           \
            wb[j] = xb;                                                                           \
            p[0] += xa * u[j];                                                                    \
            q[0] += xb * u[j];                                                                    \
        }                                                                                         \
        for (int l = 8; l < NSUM; l++) {                                                          \
            p[l & 7] += p[l];                                                                     \
            q[l & 7] += q[l];                                                                     \
        }                                                                                         \
        T ta = tr * (((p[0] + p[4]) + (p[2] + p[6])) + ((p[1] + p[5]) + (p[3] + p[7])));          \
        T tb = tr * (((q[0] + q[4]) + (q[2] + q[6])) + ((q[1] + q[5]) + (q[3] + q[7])));          \
        sub_rows2_##SUF(wa, ta, wb, tb, u, y, n, x0a, x0b);                                       \
    }                                                                                             \
    static PTL_LOOP_CLONES_WIDE void                                                              \
    bidiagonalize_##SUF(T *w, int64_t r, int64_t c, T *d, T *e, T *acc, T *y, int right, T *taus) \
    {                                                                                             \
        int have_y = 0;                                                                           \
        T ss = 0;                                                                                 \
        for (int64_t k = 0; k < c; k++) {                                                         \
            T *wk = w + k * c, f, vs = 1, tl;                                                     \
            /* the left reflection of column k, applied to columns k+1.. of rows k..: from the    \
             * squared norm below the pivot that the last pass summed (v = vs times the column,   \
             * left unscaled in w), unless that may have underflowed */                           \
            if (have_y && ss > SS_LO) {                                                           \
                T x0 = wk[k], nrm = SQRT(x0 * x0 + ss), beta = x0 >= 0 ? -nrm : nrm;              \
                f = vs = 1 / (x0 - beta);                                                         \
                tl = (beta - x0) / beta;                                                          \
                wk[k] = beta;                                                                     \
                if (taus != NULL) {                                                               \
                    /* v stored scaled, as the vectors' Q is formed from it */                    \
                    for (int64_t i = k + 1; i < r; i++) {                                         \
                        w[i * c + k] *= vs;                                                       \
                    }                                                                             \
                    vs = 1;                                                                       \
                }                                                                                 \
            }                                                                                     \
            else {                                                                                \
                tl = reflector_##SUF(wk + k, r - k, c, &f);                                       \
            }                                                                                     \
            d[k] = wk[k];                                                                         \
            if (taus != NULL) {                                                                   \
                taus[k] = tl;                                                                     \
                taus[c + k] = 0;                                                                  \
            }                                                                                     \
            int64_t nc = c - k - 1;                                                               \
            if (nc == 0) {                                                                        \
                break;                                                                            \
            }                                                                                     \
            T *rk = wk + k + 1;                                                                   \
            if (tl != 0) {                                                                        \
                if (have_y) {                                                                     \
                    for (int64_t j = 0; j < nc; j++) {                                            \
                        acc[j] = rk[j] + f * y[j];                                                \
                    }                                                                             \
                }                                                                                 \
                else {                                                                            \
                    memcpy(acc, rk, sizeof(T) * (size_t)nc);                                      \
                    for (int64_t i = k + 1; i < r; i++) {                                         \
                        const T *wi = w + i * c + k + 1;                                          \
                        T vi = vs * wi[-1];                                                       \
                        for (int64_t j = 0; j < nc; j++) {                                        \
                            acc[j] += vi * wi[j];                                                 \
                        }                                                                         \
                    }                                                                             \
                }                                                                                 \
                for (int64_t j = 0; j < nc; j++) {                                                \
                    acc[j] *= tl;                                                                 \
                    rk[j] -= acc[j];                                                              \
                }                                                                                 \
            }                                                                                     \
            /* the right reflection of row k's columns k+1.., fused with the left update of       \
             * each row below it and the next step's sum */                                       \
            T tr = 0;                                                                             \
            if (right) {                                                                          \
                tr = reflector_##SUF(rk, nc, 1, &f);                                              \
                e[k] = rk[0];                                                                     \
                rk[0] = 1;                                                                        \
                if (taus != NULL) {                                                               \
                    taus[c + k] = tr;                                                             \
                }                                                                                 \
            }                                                                                     \
            int64_t ny = nc - 1;                                                                  \
            memset(y, 0, sizeof(T) * (size_t)(ny + 1));                                           \
            if (tl == 0) {                                                                        \
                memset(acc, 0, sizeof(T) * (size_t)nc);                                           \
            }                                                                                     \
            ss = 0;                                                                               \
            int64_t i = k + 1;                                                                    \
            for (int64_t i2 = k + 2; PAIRS && i2 + 1 < r; i2 += 2) {                              \
                /* rows i2, i2 + 1 in one pass (acc, u and y loaded once for both); row k + 1     \
                 * first alone, as it adds nothing to y */                                        \
                if (i == k + 1) {                                                                 \
                    T *wi = w + i * c + k + 1;                                                    \
                    update_row_##SUF(wi, vs * wi[-1], acc, rk, tr, NULL, nc);                     \
                }                                                                                 \
                T *wa = w + i2 * c + k + 1, *wb = wa + c, x0a, x0b;                               \
                update_rows2_##SUF(wa, vs * wa[-1], wb, vs * wb[-1], acc, rk, tr, y, nc, &x0a,    \
                                   &x0b);                                                         \
                ss += x0a * x0a;                                                                  \
                ss += x0b * x0b;                                                                  \
                i = i2 + 2;                                                                       \
            }                                                                                     \
            for (; i < r; i++) {                                                                  \
                T *wi = w + i * c + k + 1;                                                        \
                T x0 = update_row_##SUF(wi, vs * wi[-1], acc, rk, tr, i > k + 1 ? y : NULL, nc);  \
                if (i > k + 1) {                                                                  \
                    ss += x0 * x0;                                                                \
                }                                                                                 \
            }                                                                                     \
            have_y = 1;                                                                           \
        }                                                                                         \
    }                                                                                             \
                                                                                                  \
    static void                                                                                   \
    rotate_pair_##SUF(T *x, int64_t ld, int64_t len, int64_t i, int64_t k, double c, double s)    \
    {                                                                                             \
        T *p = x + i * ld, *q = x + k * ld, cs = (T)c, sn = (T)s;                                 \
        for (int64_t j = 0; j < len; j++) {                                                       \
            T a = p[j], b = q[j];                                                                 \
            p[j] = cs * a + sn * b;                                                               \
            q[j] = cs * b - sn * a;                                                               \
        }                                                                                         \
    }                                                                                             \
                                                                                                  \
    static int                                                                                    \
    load_scaled_##SUF(T *w, const T *a, int64_t n, int64_t r, int64_t c, int64_t tall)            \
    {                                                                                             \
        T amax = 0;                                                                               \
        int e2 = 0;                                                                               \
        for (int64_t i = 0; i < r; i++) {                                                         \
            for (int64_t j = 0; j < c; j++) {                                                     \
                T x = tall ? a[i * n + j] : a[j * n + i];                                         \
                w[i * c + j] = x;                                                                 \
                amax = FABS(x) > amax ? FABS(x) : amax;                                           \
            }                                                                                     \
        }                                                                                         \
        if (amax > 0) {                                                                           \
            frexp(amax, &e2);                                                                     \
            T h1 = (T)ldexp(1.0, -e2 / 2), h2 = (T)ldexp(1.0, -e2 - -e2 / 2);                     \
            for (int64_t i = 0; i < r * c; i++) {                                                 \
                w[i] = w[i] * h1 * h2;                                                            \
            }                                                                                     \
        }                                                                                         \
        return e2;                                                                                \
    }

DEFINE_SVD_KERNELS(double, f8, fabs, sqrt, hypot, 8, 0, 1e-280)
DEFINE_SVD_KERNELS(float, f4, fabsf, sqrtf, hypotf, 16, 1, 1e-30f)
#undef DEFINE_SVD_KERNELS

/* rotate_block_f4, rotate_rows_f4: rows x_t, x_t+1 (ld apart, len entries) -> cs x_t + sn
 * x_t+1, cs x_t+1 - sn x_t for t = 0, 1, .. cnt - 1 in turn, (cs, sn) of t at rot[4 t],
 * rot[4 t + 1] (doubles: the QR steps' scalars, rounded to float).  In column blocks of nv
 * vectors of sixteen floats (four, then one, then the scalar tail): the block of the row
 * carried from one rotation to the next stays in registers, so each rotation loads and
 * stores one row's block.  (Plain loops were left scalar by the compiler: 6 operations an
 * entry.)  float32's vectors; float64's rotate scaled rows (fast_rotate_rows).  NAME: the
 * rows of V (LANES floats) at most NVMAX vectors a block. */
#define DEFINE_ROTATE_ROWS_F4(NAME, ATTR, V, LANES, NVMAX)                                   \
    static inline __attribute__((always_inline)) void                                         \
        NAME##_block(float *x, int64_t ld, int64_t cnt, const double *rot, int nv)             \
    {                                                                                         \
        V a[NVMAX];                                                                           \
        for (int v = 0; v < nv; v++) {                                                        \
            memcpy(&a[v], x + LANES * v, sizeof(V));                                          \
        }                                                                                     \
        for (int64_t t = 0; t < cnt; t++) {                                                   \
            float *p = x + t * ld, cs = (float)rot[4 * t], sn = (float)rot[4 * t + 1];        \
            for (int v = 0; v < nv; v++) {                                                    \
                V b, av = a[v];                                                               \
                memcpy(&b, p + ld + LANES * v, sizeof(V));                                    \
                V y = cs * av + sn * b;                                                       \
                a[v] = cs * b - sn * av;                                                      \
                memcpy(p + LANES * v, &y, sizeof(V));                                         \
            }                                                                                 \
        }                                                                                     \
        for (int v = 0; v < nv; v++) {                                                        \
            memcpy(x + cnt * ld + LANES * v, &a[v], sizeof(V));                               \
        }                                                                                     \
    }                                                                                         \
    static ATTR __attribute__((optimize("fp-contract=fast"))) void                            \
    NAME(float *x, int64_t ld, int64_t len, int64_t cnt, const double *rot)                   \
    {                                                                                         \
        int64_t j0 = 0;                                                                       \
        for (; j0 + LANES * NVMAX <= len; j0 += LANES * NVMAX) {                              \
            NAME##_block(x + j0, ld, cnt, rot, NVMAX);                                        \
        }                                                                                     \
        for (; j0 + LANES <= len; j0 += LANES) {                                              \
            NAME##_block(x + j0, ld, cnt, rot, 1);                                            \
        }                                                                                     \
        for (int64_t t = 0; t < cnt && j0 < len; t++) {                                       \
            float *p = x + t * ld, *q = p + ld, cs = (float)rot[4 * t];                       \
            float sn = (float)rot[4 * t + 1];                                                 \
            for (int64_t j = j0; j < len; j++) {                                              \
                float a = p[j], b = q[j];                                                     \
                p[j] = cs * a + sn * b;                                                       \
                q[j] = cs * b - sn * a;                                                       \
            }                                                                                 \
        }                                                                                     \
    }
DEFINE_ROTATE_ROWS_F4(rotate_rows_f4, PTL_LOOP_CLONES, RotF8, 8, 8)
#ifdef __x86_64__
DEFINE_ROTATE_ROWS_F4(rotate_rows_f4_avx512, ROT_AVX512, RotF16, 16, 4)
#endif
#undef DEFINE_ROTATE_ROWS_F4

/* (c, s) with c y + s z = rho and c z - s y = 0 (sqrt without hypot's care: the entries
 * are scaled to at most about 1, and pairs below 1e-150 are far below eps ||B||). */
static inline void
givens(double y, double z, double *cs, double *sn, double *rho)
{
    double r = sqrt(y * y + z * z);
    if (r == 0) {
        *cs = 1;
        *sn = 0;
        *rho = y;
        return;
    }
    double inv = 1 / r;
    *cs = y * inv;
    *sn = z * inv;
    *rho = r;
}

/* One implicit Wilkinson-shifted QR step on the unreduced block lo..hi of the bidiagonal
 * (d, e).  rot, when not NULL, receives position k's two rotations as (cs, sn) of the
 * columns and (cs, sn) of the rows at rot[4 (k - lo)]. */
static void
bidiagonal_qr_step(double *d, double *e, int64_t lo, int64_t hi, double *rot)
{
    double ep = hi - 1 > lo ? e[hi - 2] : 0;
    double t11 = d[hi - 1] * d[hi - 1] + ep * ep, t12 = d[hi - 1] * e[hi - 1];
    double t22 = d[hi] * d[hi] + e[hi - 1] * e[hi - 1];
    double delta = (t11 - t22) / 2, mu = t22;
    if (t12 != 0) {
        mu = t22 - t12 * t12 / (delta + copysign(sqrt(delta * delta + t12 * t12), delta));
    }
    /* (y, z) is the pair to rotate, the true one times rho2 of the previous position (gp =
     * 1 / that rho2): the scale cancels in the rotations and keeps the sqrt off the chain */
    double y = d[lo] * d[lo] - mu, z = d[lo] * e[lo], gp = 1, cs, sn, rho;
    for (int64_t k = lo; k < hi; k++) {
        double dk0 = d[k], ek0 = e[k], dk1 = d[k + 1], ek1 = k + 1 < hi ? e[k + 1] : 0;
        /* the two rotations below in closed form (Note [Bidiagonal singular values]):
         * q1 = rho1^2, num = rho1 dk, bz = rho1 bulge, n2 = q1 rho2^2, m = q1 rho2 e[k]'
         * (q1, num, bz, n2 and m in the scale of (y, z)) */
        double q1 = y * y + z * z, num = y * dk0 + z * ek0, bz = z * dk1;
        double n2 = num * num + bz * bz;
        if (q1 > 1e-250 && n2 > 1e-250 * q1) {
            /* g = 1 / rho2 with the division beside the sqrt, not after it */
            double iq1 = 1 / q1, sq1 = sqrt(q1), q2 = n2 * iq1, r2 = sqrt(q2);
            double g = r2 * (1 / q2), m = num * (y * ek0 - z * dk0) + y * z * dk1 * dk1;
            double h = sq1 * iq1;
            if (rot != NULL) {
                /* cs1 = y / rho1 and sn1 = z / rho1 (in the scale of (y, z)), cs2 and sn2
                 * = (num, bz) / (rho1 rho2) */
                double *rk = rot + 4 * (k - lo);
                rk[0] = y * h;
                rk[1] = z * h;
                rk[2] = num * h * g;
                rk[3] = bz * h * g;
            }
            if (k > lo) {
                e[k - 1] = sq1 * gp;
            }
            d[k] = r2;
            e[k] = m * iq1 * g;
            d[k + 1] = dk0 * dk1 * g;
            if (k + 1 < hi) {
                e[k + 1] = num * ek1 * h * g;
                z = bz * ek1 * h;
                y = m * iq1;
                gp = g;
            }
            continue;
        }
        y *= gp;
        z *= gp;
        gp = 1;
        /* columns k, k+1: zero z (the shift's start, then the bulge at (k-1, k+1)) */
        givens(y, z, &cs, &sn, &rho);
        if (rot != NULL) {
            rot[4 * (k - lo)] = cs;
            rot[4 * (k - lo) + 1] = sn;
        }
        if (k > lo) {
            e[k - 1] = rho;
        }
        double dk = cs * dk0 + sn * ek0, ek = cs * ek0 - sn * dk0;
        double bulge = sn * dk1, dk1r = cs * dk1;
        /* rows k, k+1: zero the bulge at (k+1, k), making one at (k, k+2) */
        givens(dk, bulge, &cs, &sn, &rho);
        if (rot != NULL) {
            rot[4 * (k - lo) + 2] = cs;
            rot[4 * (k - lo) + 3] = sn;
        }
        d[k] = rho;
        e[k] = cs * ek + sn * dk1r;
        d[k + 1] = cs * dk1r - sn * ek;
        if (k + 1 < hi) {
            y = e[k];
            z = sn * ek1;
            e[k + 1] = cs * ek1;
        }
    }
}

/* The singular vectors that bidiagonal_values rotates (svd_bidiagonal.h). */
typedef PtlSvdVecs SvdVecs;

/* Note [Scaled rotations]
 * ~~~~~~~~~~~~~~~~~~~~~~~
 * A rotation of rows x_i, x_k (x_i' = c x_i + s x_k, x_k' = c x_k - s x_i) costs four
 * multiplies an entry; float64's vectors rotate scaled rows X_j = x_j / g_j instead, two
 * fused multiply-adds an entry (the square-root-free "fast Givens" of Gentleman and
 * Hammarling).  With |c| >= |s|: X_i' = X_i + a X_k, X_k' = X_k - b X_i, a = s g_k / (c g_i),
 * b = s g_i / (c g_k), g_i' = c g_i, g_k' = c g_k; with |s| > |c| the rows trade places in
 * the formulas: X_i' = X_k + a X_i, X_k' = X_i - b X_k, a = c g_i / (s g_k), b = c g_k /
 * (s g_i), g_i' = s g_k, g_k' = -s g_i.  Each new entry is one multiply-add of the old
 * ones, so its error is a few eps (|c x_i| + |s x_k|), as the plain rotation's: U and V stay
 * orthonormal to O(eps) (tests/aten/test_svd_f64_rotations.py measures it against NumPy).
 * |g| shrinks by at most 1/sqrt(2) a rotation, two rotations of a row a QR step: a row whose
 * |g| falls below 2^-24 is multiplied by it and its g set to 1 after the step (entries stay
 * below 2^25; without it |g| reached 2^-51 at 256 and 2^-143 at 512; with it svd 256x256
 * multiplies about 290 rows, 128x128 a dozen, so the tests reach it), as are the two rows of
 * a rotation that zeroes a diagonal entry (rotate_pair, plain), and every row at the end.
 * The coefficients are made from the step's (c, s) by a chain of one multiply a rotation
 * (fast_coefs).  At 256 a rotation of eight doubles went from 1.3 to 0.96 ns (a standalone
 * loop of the two kernels), svd 256x256 10.4-10.9 -> 9.3-9.7 ms on one thread. */

/* Row j of side's doubles times its scale, which becomes 1 (Note [Scaled rotations]). */
static void
vec_unscale(const SvdVecs *vec, int side, int64_t j)
{
    int64_t ld = side ? vec->ldv : vec->ldu, len = side ? vec->nv : vec->nu;
    double *g = side ? vec->gv : vec->gu, *x = (double *)(side ? vec->vt : vec->ut) + j * ld;
    if (g[j] != 1) {
        for (int64_t i = 0; i < len; i++) {
            x[i] *= g[j];
        }
        g[j] = 1;
    }
}

/* The rotations of bidiagonal_values on the vectors of vec: rows i, k (rotate_pair), or the
 * rows lo..hi in turn (rotate_rows) of vt (side 1) or ut (side 0), in their dtype. */
static void
vec_rotate_pair(const SvdVecs *vec, int side, int64_t i, int64_t k, double cs, double sn)
{
    int64_t ld = side ? vec->ldv : vec->ldu, len = side ? vec->nv : vec->nu;
    void *x = side ? vec->vt : vec->ut;
    if (vec->gu != NULL) {
        vec_unscale(vec, side, i);
        vec_unscale(vec, side, k);
    }
    if (vec->f32) {
        rotate_pair_f4(x, ld, len, i, k, cs, sn);
    }
    else {
        rotate_pair_f8(x, ld, len, i, k, cs, sn);
    }
}

/* rot's rotations (c, s) of rows lo + t, lo + t + 1 (t < cnt, rot[4 t], rot[4 t + 1]) ->
 * the coefficients (a, b) of the scaled rows in their place and the formula in form[t] (1:
 * |s| > |c|), their scales g[lo..lo + cnt] updated (Note [Scaled rotations]). */
static void
fast_coefs(double *rot, unsigned char *form, double *g, int64_t cnt)
{
    /* gi, the scale of row t, is carried in a register (through memory each rotation
     * waited on its store); the division is off that chain */
    double gi = g[0];
    for (int64_t t = 0; t < cnt; t++) {
        double c = rot[4 * t], s = rot[4 * t + 1], gk = g[t + 1];
        int swap = fabs(s) > fabs(c);
        double p = swap ? s : c, q = swap ? c : s, inv = q / (p * gi * gk);
        double ai = gi * gi * inv, ak = gk * gk * inv;
        rot[4 * t] = swap ? ai : ak;
        rot[4 * t + 1] = swap ? ak : ai;
        g[t] = swap ? s * gk : c * gi;
        gi = swap ? -s * gi : c * gk;
        form[t] = (unsigned char)swap;
    }
    g[cnt] = gi;
}

/* NAME_block, NAME (fast_rotate_rows and its AVX-512 twin): rotate_rows on scaled rows with
 * fast_coefs' (a, b) at coef[4 t], coef[4 t + 1] and its form: two multiply-adds an entry,
 * in blocks of at most NVMAX vectors V of LANES doubles. */
#define DEFINE_FAST_ROTATE_ROWS(NAME, ATTR, V, LANES, NVMAX)                                  \
    static inline __attribute__((always_inline)) void                                         \
        NAME##_block(double *x, int64_t ld, int64_t cnt, const double *coef,                  \
                     const unsigned char *form, int nv)                                       \
    {                                                                                         \
        V a[NVMAX];                                                                           \
        for (int v = 0; v < nv; v++) {                                                        \
            memcpy(&a[v], x + LANES * v, sizeof(V));                                          \
        }                                                                                     \
        for (int64_t t = 0; t < cnt; t++) {                                                   \
            double *p = x + t * ld, ca = coef[4 * t], cb = coef[4 * t + 1];                   \
            if (form[t]) {                                                                    \
                for (int v = 0; v < nv; v++) {                                                \
                    V b, av = a[v];                                                           \
                    memcpy(&b, p + ld + LANES * v, sizeof(V));                                \
                    V y = b + ca * av;                                                        \
                    a[v] = av - cb * b;                                                       \
                    memcpy(p + LANES * v, &y, sizeof(V));                                     \
                }                                                                             \
            }                                                                                 \
            else {                                                                            \
                for (int v = 0; v < nv; v++) {                                                \
                    V b, av = a[v];                                                           \
                    memcpy(&b, p + ld + LANES * v, sizeof(V));                                \
                    V y = av + ca * b;                                                        \
                    a[v] = b - cb * av;                                                       \
                    memcpy(p + LANES * v, &y, sizeof(V));                                     \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
        for (int v = 0; v < nv; v++) {                                                        \
            memcpy(x + cnt * ld + LANES * v, &a[v], sizeof(V));                               \
        }                                                                                     \
    }                                                                                         \
    static ATTR __attribute__((optimize("fp-contract=fast"))) void                            \
    NAME(double *x, int64_t ld, int64_t len, int64_t cnt, const double *coef,                 \
         const unsigned char *form)                                                           \
    {                                                                                         \
        int64_t j0 = 0;                                                                       \
        for (; j0 + LANES * NVMAX <= len; j0 += LANES * NVMAX) {                              \
            NAME##_block(x + j0, ld, cnt, coef, form, NVMAX);                                 \
        }                                                                                     \
        for (; j0 + LANES <= len; j0 += LANES) {                                              \
            NAME##_block(x + j0, ld, cnt, coef, form, 1);                                     \
        }                                                                                     \
        for (int64_t t = 0; t < cnt && j0 < len; t++) {                                       \
            double *p = x + t * ld, *q = p + ld, ca = coef[4 * t], cb = coef[4 * t + 1];      \
            for (int64_t j = j0; j < len; j++) {                                              \
                double a = p[j], b = q[j];                                                    \
                p[j] = form[t] ? b + ca * a : a + ca * b;                                     \
                q[j] = form[t] ? a - cb * b : b - cb * a;                                     \
            }                                                                                 \
        }                                                                                     \
    }
DEFINE_FAST_ROTATE_ROWS(fast_rotate_rows, PTL_LOOP_CLONES, RotD4, 4, 4)
#ifdef __x86_64__
DEFINE_FAST_ROTATE_ROWS(fast_rotate_rows_avx512, ROT_AVX512, RotD8, 8, 2)
#endif
#undef DEFINE_FAST_ROTATE_ROWS
#undef ROT_AVX512

static void
vec_rotate_rows(const SvdVecs *vec, int side, int64_t lo, int64_t hi, double *rot)
{
    int64_t ld = side ? vec->ldv : vec->ldu, len = side ? vec->nv : vec->nu;
    if (vec->f32) {
        float *x = (float *)(side ? vec->vt : vec->ut) + lo * ld;
#ifdef __x86_64__
        if (ptl_cpu_capability() >= PTL_CPU_AVX512) {
            rotate_rows_f4_avx512(x, ld, len, hi - lo, rot);
            return;
        }
#endif
        rotate_rows_f4(x, ld, len, hi - lo, rot);
        return;
    }
    double *g = side ? vec->gv : vec->gu, *x = (double *)(side ? vec->vt : vec->ut) + lo * ld;
    fast_coefs(rot, vec->form, g + lo, hi - lo);
#ifdef __x86_64__
    if (ptl_cpu_capability() >= PTL_CPU_AVX512) {
        fast_rotate_rows_avx512(x, ld, len, hi - lo, rot, vec->form);
    }
    else
#endif
    {
        fast_rotate_rows(x, ld, len, hi - lo, rot, vec->form);
    }
    for (int64_t j = lo; j <= hi; j++) {
        if (fabs(g[j]) < 0x1p-24) {
            vec_unscale(vec, side, j);
        }
    }
}

/* The singular values of the upper bidiagonal (d, e) (n > 0) into d, unsorted and of
 * either sign; e is destroyed.  With vec, every rotation is applied to its vectors too (a
 * QR step's rotations in one batch).  0, or -1 with LAPACK's bdsqr error (the number of
 * superdiagonals left) when 40 n + 40 QR steps do not converge.  An entry of e counts as
 * zero below eps relative to its neighbours or to ||B|| (DBL_EPSILON, FLT_EPSILON for
 * float32's vectors: LAPACK's sbdsqr deflates at about 10 FLT_EPSILON). */
static int
bidiagonal_values(double *d, double *e, int64_t n, const SvdVecs *vec, double eps)
{
    double bnorm = 0;
    for (int64_t i = 0; i < n; i++) {
        bnorm = fmax(bnorm, fabs(d[i]));
        if (i + 1 < n) {
            bnorm = fmax(bnorm, fabs(e[i]));
        }
    }
    double tol = eps * bnorm;
    int64_t steps = 0, max_steps = 40 * n + 40, hi = n - 1;
    while (hi > 0 && steps < max_steps) {
        if (fabs(e[hi - 1]) <= tol ||
            fabs(e[hi - 1]) <= eps * (fabs(d[hi - 1]) + fabs(d[hi]))) {
            e[hi - 1] = 0;
            hi--;
            continue;
        }
        int64_t lo = hi - 1;
        while (lo > 0) {
            double f = fabs(e[lo - 1]);
            if (f <= tol || f <= eps * (fabs(d[lo - 1]) + fabs(d[lo]))) {
                e[lo - 1] = 0;
                break;
            }
            lo--;
        }
        int64_t z = -1;
        for (int64_t i = lo; i <= hi; i++) {
            if (fabs(d[i]) <= tol) {
                d[i] = 0;
                z = i;
                break;
            }
        }
        double cs, sn, rho;
        if (z >= 0 && z < hi) {
            /* row z's superdiagonal f rotated into the rows below (rows z, j) */
            double f = e[z];
            e[z] = 0;
            for (int64_t j = z + 1; j <= hi && f != 0; j++) {
                givens(d[j], f, &cs, &sn, &rho);
                if (vec != NULL) {
                    vec_rotate_pair(vec, 0, j, z, cs, sn);
                }
                d[j] = rho;
                if (j < hi) {
                    f = -sn * e[j];
                    e[j] *= cs;
                }
            }
        }
        else if (z == hi) {
            /* column hi's superdiagonal f rotated into the columns left (columns j, hi) */
            double f = e[hi - 1];
            e[hi - 1] = 0;
            for (int64_t j = hi - 1; j >= lo && f != 0; j--) {
                givens(d[j], f, &cs, &sn, &rho);
                if (vec != NULL) {
                    vec_rotate_pair(vec, 1, j, hi, cs, sn);
                }
                d[j] = rho;
                if (j > lo) {
                    f = -sn * e[j - 1];
                    e[j - 1] *= cs;
                }
            }
        }
        else {
            bidiagonal_qr_step(d, e, lo, hi, vec != NULL ? vec->rot : NULL);
            if (vec != NULL) {
                vec_rotate_rows(vec, 1, lo, hi, vec->rot);
                vec_rotate_rows(vec, 0, lo, hi, vec->rot + 2);
            }
            steps++;
        }
    }
    for (int64_t j = 0; vec != NULL && vec->gu != NULL && j < n; j++) {
        vec_unscale(vec, 0, j);
        vec_unscale(vec, 1, j);
    }
    if (hi > 0) {
        return ptl_error_set(PTL_ERR_LINALG, "linalg.svd: The algorithm failed to converge "
                             "because the input matrix is ill-conditioned or has too many "
                             "repeated singular values (error code: %lld).", (long long)hi);
    }
    return 0;
}

int
ptl_svd_bidiagonal_values(double *d, double *e, int64_t n, const PtlSvdVecs *vec, double eps)
{
    return bidiagonal_values(d, e, n, vec, eps);
}

static int
cmp_desc(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a < b) - (a > b);
}

static int
svd_values(const SvdJob *job, const double *a, double *s)
{
    int64_t m = job->m, n = job->n, tall = m >= n;
    int64_t r = tall ? m : n, c = tall ? n : m;
    if (c == 0) {
        return 0;
    }
    int qr = 3 * r >= 5 * c;
    double *w = malloc(sizeof(double) * (size_t)(r * c + (qr ? c * c : 0) + 5 * c + 1));
    if (w == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "linalg.svd: out of memory");
    }
    double *rr = w + r * c, *d = rr + (qr ? c * c : 0), *e = d + c, *acc = e + c;
    int e2 = load_scaled_f8(w, a, n, r, c, tall);
    double *b = w;
    if (qr) {
        bidiagonalize_f8(w, r, c, d, e, acc, acc + c, 0, NULL);
        for (int64_t i = 0; i < c; i++) {
            for (int64_t j = 0; j < c; j++) {
                rr[i * c + j] = j >= i ? w[i * c + j] : 0;
            }
        }
        b = rr;
    }
    bidiagonalize_f8(b, qr ? c : r, c, d, e, acc, acc + c, 1, NULL);
    if (bidiagonal_values(d, e, c, NULL, DBL_EPSILON) < 0) {
        free(w);
        return -1;
    }
    for (int64_t j = 0; j < c; j++) {
        d[j] = fabs(d[j]);
    }
    qsort(d, (size_t)c, sizeof(double), cmp_desc);
    double g1 = ldexp(1.0, e2 / 2), g2 = ldexp(1.0, e2 - e2 / 2);
    for (int64_t j = 0; j < c; j++) {
        s[j] = d[j] * g1 * g2;
    }
    free(w);
    return 0;
}
typedef struct SvdOrder {
    double v;
    int64_t i;
} SvdOrder;

static int
cmp_order(const void *x, const void *y)
{
    const SvdOrder *a = x, *b = y;
    return a->v != b->v ? (a->v < b->v) - (a->v > b->v) : (a->i > b->i) - (a->i < b->i);
}

/* the side of transpose's square tiles */
#define TRANSPOSE_TILE 16

/* The leading dimension of ut and vt for rows of len entries, per_line to a 64-byte line (0:
 * len): a whole number of lines is made odd, so that rows two apart (the rotations store one
 * row while they load the next) do not share their address bits below 4096 (256 doubles are
 * 2048 bytes: the loads waited on the stores they alias).  Other lengths keep len (float32
 * pads nothing: its 256-float rows ran slower padded, 5.3 against 4.9 ms at 256x256). */
static int64_t
row_ld(int64_t len, int64_t per_line)
{
    return per_line == 0 || len % per_line != 0 ? len : (len / per_line | 1) * per_line;
}

/* The vectors' scratch for r x c (r >= c) with qcols columns of U, in elements (rows of ut
 * and vt padded as row_ld does with per_line; 32 more to start them on a 64-byte line). */
static int64_t
svd_scratch(int64_t r, int64_t c, int64_t qcols, int qr, int64_t per_line)
{
    int64_t br = qr ? c : r, ubc = qr ? c : qcols;
    int64_t sc = ptl_linalg_qr_scratch(br, c, ubc), s2 = ptl_linalg_qr_scratch(c, c, c);
    sc = s2 > sc ? s2 : sc;
    if (qr) {
        s2 = ptl_linalg_qr_scratch(r, c, qcols);
        sc = s2 > sc ? s2 : sc;
    }
    return r * c + 7 * c + br * ubc + c * row_ld(br, per_line) + 2 * c * c +
           c * row_ld(c, per_line) + (qr ? r * qcols : 0) + r * qcols + sc + 1 + 32;
}

/* The vectors come in two instances from one template, DEFINE_SVD_VECTORS(T, SUF, GEMM,
 * QR_BLOCKED, QR_FORM_Q, EPS, PAD): _f8 on double and _f4 on float (Note [Singular vectors]),
 * the rows of ut and vt padded as row_ld does with PAD entries a line (0: not padded):
 *
 * form_v: vq (c x c, row-major) = V = diag(1, Q2) from the right reflections that
 * bidiagonalize left in b (c columns) with their taus: Q2 formed from them laid out as the
 * columns of a (c - 1) x (c - 1) matrix in t.  0 or -1.
 *
 * svd_one: one matrix, a (m x n, row-major) -> u, s, vh (row-major); the bidiagonal's QR
 * steps in double, deflating at EPS.  0 or -1. */
#define DEFINE_SVD_VECTORS(T, SUF, GEMM, QR_BLOCKED, QR_FORM_Q, EPS, PAD)                         \
    static T *                                                                                    \
    line_up_##SUF(T *p)                                                                           \
    {                                                                                             \
        return (T *)(((uintptr_t)p + 63) & ~(uintptr_t)63);                                       \
    }                                                                                             \
                                                                                                  \
    static int                                                                                    \
    form_v_##SUF(const T *b, int64_t c, const T *taus, T *vq, T *t, T *scr)                       \
    {                                                                                             \
        memset(vq, 0, sizeof(T) * (size_t)c);                                                     \
        vq[0] = 1;                                                                                \
        for (int64_t i = 1; i < c; i++) {                                                         \
            vq[i * c] = 0;                                                                        \
        }                                                                                         \
        if (c < 2) {                                                                              \
            return 0;                                                                             \
        }                                                                                         \
        int64_t c1 = c - 1;                                                                       \
        for (int64_t i = 0; i < c1; i++) {                                                        \
            for (int64_t k = 0; k < i; k++) {                                                     \
                t[i * c1 + k] = b[k * c + i + 1];                                                 \
            }                                                                                     \
        }                                                                                         \
        return QR_FORM_Q(t, c1, c1, taus, vq + c + 1, c, c1, scr);                                \
    }                                                                                             \
                                                                                                  \
    /* dst[i * ldd + j] = sg_j src[p_j * lds + i] for j < nj, i < ni, p_j = ord[j].i (j when      \
     * ord is NULL), sg_j = -1 where sgn[p_j] < 0 (1 when sgn is NULL): a transpose of the        \
     * rows listed, in TRANSPOSE_TILE squares, so that neither side is walked down a column. */   \
    static void                                                                                   \
    transpose_##SUF(T *dst, int64_t ldd, const T *src, int64_t lds, int64_t nj, int64_t ni,       \
                    const SvdOrder *ord, const double *sgn)                                       \
    {                                                                                             \
        for (int64_t j0 = 0; j0 < nj; j0 += TRANSPOSE_TILE) {                                     \
            int64_t j1 = j0 + TRANSPOSE_TILE < nj ? j0 + TRANSPOSE_TILE : nj;                     \
            for (int64_t i0 = 0; i0 < ni; i0 += TRANSPOSE_TILE) {                                 \
                int64_t i1 = i0 + TRANSPOSE_TILE < ni ? i0 + TRANSPOSE_TILE : ni;                 \
                for (int64_t j = j0; j < j1; j++) {                                               \
                    int64_t pj = ord != NULL ? ord[j].i : j;                                      \
                    const T *x = src + pj * lds;                                                  \
                    T sg = sgn != NULL && sgn[pj] < 0 ? -1 : 1;                                   \
                    for (int64_t i = i0; i < i1; i++) {                                           \
                        dst[i * ldd + j] = sg * x[i];                                             \
                    }                                                                             \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
                                                                                                  \
    static int                                                                                    \
    svd_one_##SUF(const SvdJob *job, const T *a, T *u, T *s, T *vh)                               \
    {                                                                                             \
        int64_t m = job->m, n = job->n, tall = m >= n;                                            \
        int64_t r = tall ? m : n, c = tall ? n : m, qcols = job->full ? r : c;                    \
        if (c == 0) {                                                                             \
            /* U (or Vh) is I when full_matrices asks for its r columns */                        \
            T *q = tall ? u : vh;                                                                 \
            for (int64_t i = 0; i < r * qcols; i++) {                                             \
                q[i] = i / qcols == i % qcols;                                                    \
            }                                                                                     \
            return 0;                                                                             \
        }                                                                                         \
        int qr = 3 * r >= 5 * c;                                                                  \
        int64_t br = qr ? c : r, ubc = qr ? c : qcols, lu = row_ld(br, PAD), lv = row_ld(c, PAD); \
        size_t wsz = sizeof(T) * (size_t)svd_scratch(r, c, qcols, qr, PAD);                       \
        T *w = aligned_alloc(64, (wsz + 63) & ~(size_t)63);                                       \
        double *dd = malloc(sizeof(double) * (size_t)(9 * c));                                    \
        SvdOrder *ord = malloc(sizeof(SvdOrder) * (size_t)c);                                     \
        if (w == NULL || dd == NULL || ord == NULL) {                                             \
            free(ord);                                                                            \
            free(dd);                                                                             \
            free(w);                                                                              \
            return ptl_error_set(PTL_ERR_MEMORY, "linalg.svd: out of memory");                    \
        }                                                                                         \
        T *tau = w + r * c, *d = tau + 3 * c, *e = d + c, *acc = e + c;                           \
        T *ub = acc + 2 * c, *ut = line_up_##SUF(ub + br * ubc), *rr = ut + c * lu;               \
        /* uo: U itself when tall */                                                              \
        T *vq = rr + c * c, *vt = line_up_##SUF(vq + c * c), *q = vt + c * lv;                    \
        T *uo = tall ? u : q + (qr ? r * qcols : 0);                                              \
        T *scr = q + (qr ? r * qcols : 0) + r * qcols;                                            \
        double *ee = dd + c, *rot = ee + c, *gu = rot + 4 * c, *gv = gu + c;                      \
        int e2 = load_scaled_##SUF(w, a, n, r, c, tall), rc = -1;                                 \
        T *b = w;                                                                                 \
        if (qr) {                                                                                 \
            if (QR_BLOCKED(w, r, c, tau + 2 * c, NULL, 0, scr) < 0) {                             \
                goto done;                                                                        \
            }                                                                                     \
            for (int64_t i = 0; i < c; i++) {                                                     \
                for (int64_t j = 0; j < c; j++) {                                                 \
                    rr[i * c + j] = j >= i ? w[i * c + j] : 0;                                    \
                }                                                                                 \
            }                                                                                     \
            b = rr;                                                                               \
        }                                                                                         \
        bidiagonalize_##SUF(b, br, c, d, e, acc, acc + c, 1, tau);                                \
        /* U_B from the left reflections, V from the right ones (vt is free until the             \
         * transpose below) */                                                                    \
        if (QR_FORM_Q(b, br, c, tau, ub, ubc, ubc, scr) < 0 ||                                    \
            form_v_##SUF(b, c, tau + c, vq, vt, scr) < 0) {                                       \
            goto done;                                                                            \
        }                                                                                         \
        transpose_##SUF(ut, lu, ub, ubc, br, c, NULL, NULL);                                      \
        transpose_##SUF(vt, lv, vq, c, c, c, NULL, NULL);                                         \
        for (int64_t j = 0; j < c; j++) {                                                         \
            dd[j] = d[j];                                                                         \
            ee[j] = j + 1 < c ? e[j] : 0;                                                         \
        }                                                                                         \
        int f32 = sizeof(T) == sizeof(float);                                                     \
        for (int64_t j = 0; j < c; j++) {                                                         \
            gu[j] = gv[j] = 1;                                                                    \
        }                                                                                         \
        SvdVecs vec = {ut, vt, rot, f32 ? NULL : gu, f32 ? NULL : gv,                             \
                       f32 ? NULL : (unsigned char *)(gv + c), br, c, lu, lv, f32};               \
        if (bidiagonal_values(dd, ee, c, &vec, EPS) < 0) {                                        \
            goto done;                                                                            \
        }                                                                                         \
        for (int64_t j = 0; j < c; j++) {                                                         \
            ord[j].v = fabs(dd[j]);                                                               \
            ord[j].i = j;                                                                         \
        }                                                                                         \
        qsort(ord, (size_t)c, sizeof(SvdOrder), cmp_order);                                       \
        double g1 = ldexp(1.0, e2 / 2), g2 = ldexp(1.0, e2 - e2 / 2);                             \
        /* uo (r x qcols, row-major): the long side's vectors; rr: the sorted rows of ut */       \
        T *us = qr ? rr : uo;                                                                     \
        for (int64_t j = 0; j < c; j++) {                                                         \
            s[j] = (T)(ord[j].v * g1 * g2);                                                       \
            if (qr) {                                                                             \
                memcpy(us + j * c, ut + ord[j].i * lu, sizeof(T) * (size_t)c);                    \
            }                                                                                     \
        }                                                                                         \
        if (!qr) {                                                                                \
            transpose_##SUF(uo, qcols, ut, lu, c, br, ord, NULL);                                 \
        }                                                                                         \
        for (int64_t i = 0; i < br && !qr; i++) {                                                 \
            for (int64_t j = c; j < qcols; j++) {                                                 \
                uo[i * qcols + j] = ub[i * ubc + j];                                              \
            }                                                                                     \
        }                                                                                         \
        if (qr) {                                                                                 \
            /* U = Q [U_R 0; 0 I] */                                                              \
            if (QR_FORM_Q(w, r, c, tau + 2 * c, q, qcols, qcols, scr) < 0 ||                      \
                GEMM(r, c, c, 1.0, q, qcols, 1, us, 1, c, 0.0, uo, qcols) < 0) {                  \
                goto done;                                                                        \
            }                                                                                     \
            for (int64_t i = 0; i < r; i++) {                                                     \
                for (int64_t j = c; j < qcols; j++) {                                             \
                    uo[i * qcols + j] = q[i * qcols + j];                                         \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
        /* tall: U = uo, Vh[j, :] = V[:, j]; wide (W = A^T): U[:, j] = V[:, j], Vh = uo^T */      \
        for (int64_t j = 0; j < c && tall; j++) {                                                 \
            const T *x = vt + ord[j].i * lv;                                                      \
            T sg = dd[ord[j].i] < 0 ? -1 : 1;                                                     \
            for (int64_t i = 0; i < c; i++) {                                                     \
                vh[j * c + i] = sg * x[i];                                                        \
            }                                                                                     \
        }                                                                                         \
        if (!tall) {                                                                              \
            transpose_##SUF(u, c, vt, lv, c, c, ord, dd);                                         \
            transpose_##SUF(vh, r, uo, qcols, r, qcols, NULL, NULL);                              \
        }                                                                                         \
        rc = 0;                                                                                   \
    done:                                                                                         \
        free(ord);                                                                                \
        free(dd);                                                                                 \
        free(w);                                                                                  \
        return rc;                                                                                \
    }

DEFINE_SVD_VECTORS(double, f8, ptl_gemm_f64, ptl_linalg_qr_blocked,
                   ptl_linalg_qr_form_q_blocked, DBL_EPSILON, 8)
DEFINE_SVD_VECTORS(float, f4, ptl_gemm_f32, ptl_linalg_qr_blocked_f32,
                   ptl_linalg_qr_form_q_blocked_f32, FLT_EPSILON, 0)
#undef DEFINE_SVD_VECTORS


static int
svd_chunk(void *ctx, int64_t b, int64_t e)
{
    const SvdJob *job = ctx;
    int64_t k = job->m < job->n ? job->m : job->n;
    size_t isz = job->f32 ? sizeof(float) : sizeof(double);
    for (int64_t i = b; i < e; i++) {
        char *u = job->u ? (char *)job->u + isz * (size_t)(i * job->m * job->ucols) : NULL;
        char *vh = job->vh ? (char *)job->vh + isz * (size_t)(i * job->vrows * job->n) : NULL;
        const char *a = (const char *)job->a + isz * (size_t)(i * job->m * job->n);
        char *s = (char *)job->s + isz * (size_t)(i * k);
        int rc = u == NULL  ? svd_values(job, (const double *)a, (double *)s)
                 : job->f32 ? svd_one_f4(job, (const float *)a, (float *)u, (float *)s,
                                         (float *)vh)
                            : svd_one_f8(job, (const double *)a, (double *)u, (double *)s,
                                         (double *)vh);
        if (rc < 0) {
            return -1;
        }
    }
    return 0;
}

/* Checks A for linalg.svd / linalg.svdvals: float32/float64, at least 2-D, no driver (a
 * cuSOLVER option). */
static int
check_input(const PtlTensorImpl *A, const PtlIValue *driver)
{
    if (A->dim < 2) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "linalg.svd: The input tensor A must have at least 2 dimensions.");
    }
    if (!ptl_dtype_is_floating(A->dtype)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "linalg.svd: Expected a floating point or "
                             "complex tensor as input. Got %s", ptl_dtype_legacy_name(A->dtype));
    }
    if (A->dtype != PTL_DTYPE_FLOAT32 && A->dtype != PTL_DTYPE_FLOAT64) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"linalg_svd_cpu\" not implemented for "
                             "'%s'", ptl_dtype_legacy_name(A->dtype));
    }
    if (driver->tag != PTL_IV_NONE) {
        return ptl_error_set(PTL_ERR_RUNTIME, "torch.linalg.svd: keyword argument `driver=` is "
                             "only supported on CUDA inputs with cuSOLVER backend.");
    }
    return 0;
}

/* _linalg_svd(Tensor A, bool full_matrices=False, bool compute_uv=True, *, str? driver=None)
 * -> (Tensor U, Tensor S, Tensor Vh)
 * [*, m, n] -> U [*, m, m or k], S [*, k], Vh [*, n or k, n] with k = min(m, n); without
 * compute_uv U and Vh are empty [0].  Computed in float64, except float32's vectors (and
 * their values), which are computed in float32 (Note [Singular vectors]). */
static int
linalg_svd_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *A = s[0].u.t, *a = NULL, *out[3] = {NULL, NULL, NULL};
    int full = s[1].u.b, uv = s[2].u.b;
    if (check_input(A, &s[3]) < 0) {
        return -1;
    }
    int nd = A->dim;
    int64_t m = A->sizes[nd - 2], n = A->sizes[nd - 1], k = m < n ? m : n;
    int64_t batch = 1, sz[PTL_MAX_DIMS];
    for (int d = 0; d < nd - 2; d++) {
        batch *= A->sizes[d];
    }
    int f32 = uv && A->dtype == PTL_DTYPE_FLOAT32;
    PtlDtype wd = f32 ? PTL_DTYPE_FLOAT32 : PTL_DTYPE_FLOAT64;
    SvdJob job = {NULL, NULL, NULL, NULL, m, n, full ? m : k, full ? n : k, full, f32};
    if ((a = ptl_cast(A, wd)) == NULL) {
        return -1;
    }
    const double *ad = (const double *)ptl_tensor_data(a);
    const float *af = (const float *)ad;
    for (int64_t i = 0; i < a->numel; i++) {
        if (!isfinite(f32 ? af[i] : ad[i])) {
            ptl_error_set(PTL_ERR_LINALG, "linalg.svd: The algorithm failed to converge "
                          "because the input matrix contained non-finite values.");
            goto error;
        }
    }
    memcpy(sz, A->sizes, sizeof(int64_t) * (size_t)nd);
    int64_t zero = 0;
    sz[nd - 1] = job.ucols;
    out[0] = uv ? ptl_empty(nd, sz, wd, A->device) : ptl_empty(1, &zero, A->dtype, A->device);
    sz[nd - 2] = k;
    out[1] = ptl_empty(nd - 1, sz, wd, A->device);
    sz[nd - 2] = job.vrows;
    sz[nd - 1] = n;
    out[2] = uv ? ptl_empty(nd, sz, wd, A->device) : ptl_empty(1, &zero, A->dtype, A->device);
    if (out[0] == NULL || out[1] == NULL || out[2] == NULL) {
        goto error;
    }
    job.a = ad;
    job.s = ptl_tensor_data(out[1]);
    job.u = uv ? ptl_tensor_data(out[0]) : NULL;
    job.vh = uv ? ptl_tensor_data(out[2]) : NULL;
    int64_t work = m * n * (k + 1) + 1;
    void *token = batch * work >= PTL_GRAIN_SIZE ? ptl_nogil_begin() : NULL;
    int rc = ptl_parallel_for(0, batch, work >= PTL_GRAIN_SIZE ? 1 : PTL_GRAIN_SIZE / work,
                              svd_chunk, &job);
    if (token != NULL) {
        ptl_nogil_end(token);
    }
    if (rc < 0) {
        goto error;
    }
    for (int i = 0; i < 3; i++) {
        if (out[i]->dtype != A->dtype) {
            PtlTensorImpl *c = ptl_cast(out[i], A->dtype);
            if (c == NULL) {
                goto error;
            }
            ptl_decref(out[i]);
            out[i] = c;
        }
    }
    ptl_decref(a);
    for (int i = 0; i < 3; i++) {
        s[i] = ptl_iv_tensor(out[i]);
    }
    return 0;
error:
    ptl_xdecref(a);
    for (int i = 0; i < 3; i++) {
        ptl_xdecref(out[i]);
    }
    return -1;
}

/* linalg_svd(Tensor A, bool full_matrices=True, *, str? driver=None)
 * -> (Tensor U, Tensor S, Tensor Vh)
 * Composite: _linalg_svd with compute_uv, so autograd records LinalgSvdBackward0. */
static int
linalg_svd_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlIValue st[4] = {s[0], s[1], ptl_iv_bool(1), s[2]};
    if (ptl_dispatcher_call(ptl_op(PTL_OP__linalg_svd), st) < 0) {
        return -1;
    }
    memcpy(s, st, sizeof(PtlIValue) * 3);
    return 0;
}

/* linalg_svdvals(Tensor A, *, str? driver=None) -> Tensor
 * [*, m, n] -> [*, k].  Composite over _linalg_svd, which computes the singular vectors
 * only when A may need a gradient (its backward uses them). */
static int
linalg_svdvals_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *A = s[0].u.t;
    int uv = ptl_tls()->grad_enabled && A->autograd_meta != NULL;
    PtlIValue st[4] = {s[0], ptl_iv_bool(0), ptl_iv_bool(uv), s[1]};
    if (ptl_dispatcher_call(ptl_op(PTL_OP__linalg_svd), st) < 0) {
        return -1;
    }
    ptl_ivalue_release(&st[0]);
    ptl_ivalue_release(&st[2]);
    s[0] = st[1];
    return 0;
}

/* svd(Tensor self, bool some=True, bool compute_uv=True) -> (Tensor U, Tensor S, Tensor V)
 * The legacy torch.svd: [*, m, n] -> U [*, m, k or m], S [*, k], V [*, n, k or n] (V = Vh^H,
 * not Vh); without compute_uv, U [*, m, m] and V [*, n, n] are zeros.  Composite over
 * _linalg_svd and transpose. */
static int
svd_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *A = s[0].u.t;
    if (A->dim < 2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "linalg.svd: input should have at least 2 "
                             "dimensions, but has %d dimensions instead", A->dim);
    }
    if (!s[2].u.b) {
        PtlIValue vals[2] = {s[0], ptl_iv_none()}, zero = ptl_iv_int(0);
        PtlTensorImpl *S, *U = NULL, *V = NULL;
        int64_t sz[PTL_MAX_DIMS];
        if ((S = ptl_call_tensor(PTL_OP_linalg_svdvals, vals)) == NULL) {
            return -1;
        }
        memcpy(sz, A->sizes, sizeof(int64_t) * (size_t)A->dim);
        sz[A->dim - 1] = A->sizes[A->dim - 2];
        if ((U = ptl_empty(A->dim, sz, A->dtype, A->device)) == NULL ||
            ptl_fill_scalar(U, &zero) < 0) {
            goto error;
        }
        sz[A->dim - 2] = sz[A->dim - 1] = A->sizes[A->dim - 1];
        if ((V = ptl_empty(A->dim, sz, A->dtype, A->device)) == NULL ||
            ptl_fill_scalar(V, &zero) < 0) {
            goto error;
        }
        s[0] = ptl_iv_tensor(U);
        s[1] = ptl_iv_tensor(S);
        s[2] = ptl_iv_tensor(V);
        return 0;
error:
        ptl_decref(S);
        ptl_xdecref(U);
        ptl_xdecref(V);
        return -1;
    }
    PtlIValue st[4] = {s[0], ptl_iv_bool(!s[1].u.b), ptl_iv_bool(1), ptl_iv_none()};
    if (ptl_dispatcher_call(ptl_op(PTL_OP__linalg_svd), st) < 0) {
        return -1;
    }
    PtlIValue tr[3] = {st[2], ptl_iv_int(-2), ptl_iv_int(-1)};
    PtlTensorImpl *V = ptl_call_tensor(PTL_OP_transpose_int, tr);
    ptl_ivalue_release(&st[2]);
    if (V != NULL && ptl_dtype_is_complex(V->dtype)) {   /* V = Vh^H */
        PtlIValue cv[1] = {ptl_iv_tensor(V)};
        PtlTensorImpl *c = ptl_call_tensor(PTL_OP_conj_physical, cv);
        ptl_decref(V);
        V = c;
    }
    if (V == NULL) {
        ptl_ivalue_release(&st[0]);
        ptl_ivalue_release(&st[1]);
        return -1;
    }
    s[0] = st[0];
    s[1] = st[1];
    s[2] = ptl_iv_tensor(V);
    return 0;
}

static const PtlKernelReg svd_kernels[] = {
    {PTL_OP__linalg_svd, PTL_KEY_CPU, linalg_svd_cpu},
    {PTL_OP_linalg_svd, PTL_KEY_COMPOSITE_IMPLICIT, linalg_svd_composite},
    {PTL_OP_linalg_svdvals, PTL_KEY_COMPOSITE_IMPLICIT, linalg_svdvals_composite},
    {PTL_OP_svd, PTL_KEY_COMPOSITE_IMPLICIT, svd_composite},
};
PTL_DEFINE_REGISTER(svd_kernels)