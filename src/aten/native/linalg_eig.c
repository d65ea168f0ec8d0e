/* linalg_eig.c -- the eigenvalues and right eigenvectors of a real square matrix:
 * _linalg_eig_split.  Mirrors ATen/native/BatchLinearAlgebra.cpp's linalg_eig, which calls
 * LAPACK's geev; pytorchlite computes it itself, in float64 (Note [Float64 linear algebra]
 * in linalg_solve.c), and returns each complex result as its real and imaginary parts
 * (there is no complex dtype yet).
 *
 * Note [Nonsymmetric eigensolver]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The steps of LAPACK's dgeev, in its small-matrix (unblocked) form:
 * 1. Scaling: A is multiplied by the power of two that brings its largest entry into
 *    [1/2, 1) (exact: the eigenvalues are scaled back by the same power, and the
 *    eigenvectors do not change), so the back-substitution below works on entries of order
 *    one.
 * 2. Balancing (gebal, LAPACK 3.12's search order): a permutation P moves each row that is
 *    zero off the diagonal (within the rows and columns not yet moved) to the bottom and
 *    each such column to the left; their diagonal entries are eigenvalues, exactly, and the
 *    rest of the work is on the block ilo..ihi between them.  A diagonal D of powers of two
 *    then makes the rows and columns of that block of comparable 2-norms, which reduces the
 *    rounding error of the eigenvalues of badly scaled matrices.  The eigenvectors of A are
 *    P D times those of the balanced matrix (gebak).
 * 3. Hessenberg reduction (gehd2 + orghr): ihi - ilo - 1 Householder reflections, each
 *    applied from both sides, give H = Q^T A Q, zero below the subdiagonal (the right
 *    side's products A v by the GEMM: a dot product a row would be one dependent chain of
 *    adds); Q is accumulated when the eigenvectors are asked for.
 * 4. Francis double-shift QR (lahqr) on rows and columns ilo..ihi: sweeps chase a 3 x 3
 *    bulge down the active block H[l..i] until a subdiagonal entry is negligible (lahqr's
 *    test, which also weighs the neighbouring entries), then the block splits.  The shifts
 *    are the eigenvalues of the trailing 2 x 2 block, replaced by the exceptional shifts of
 *    lahqr every 10th and 20th sweep without a split.  A 1 x 1 block is a real
 *    eigenvalue; a 2 x 2 block is put in the standard form of lanv2 (equal diagonal
 *    entries and off-diagonal entries of opposite signs for a complex pair, else
 *    triangular) by one rotation, applied to the rest of H and to Q.  The result is the
 *    real Schur form T = Z^T A Z (Z = Q times the sweeps' reflections; kept as Z^T, whose
 *    rows the sweeps update contiguously).  Within a sweep, reflection k must reach the
 *    rows and columns near the bulge at once (the next reflection is made from them), but
 *    not the rest: the rows' part right of the active block (when T is wanted) and Z^T
 *    take the whole sweep after it, SWEEP_COLS columns at a time, so that the two rows one
 *    reflection shares with the next stay in L1 (and the rows' part inside the block,
 *    beyond a run of SWEEP_NEAR reflections, takes the run after it the same way); and the
 *    columns' part above row k (rows no later step reads) takes it after the sweep too, by
 *    blocks of EIG_COL_BLOCK rows transposed (8 x 8 tiles in registers) so that each
 *    reflection updates contiguous rows (two of them carried in registers).  The
 *    arithmetic of each entry's update is unchanged.  30 max(10, nh) sweeps per eigenvalue
 *    without convergence (nh = ihi - ilo + 1) set info to the 1-based index of the last
 *    unconverged one, as lahqr does.  Active blocks of EIG_AED_MIN rows and more (in
 *    matrices of EIG_AED_MIN_N and more) also deflate early and take their shifts from a
 *    window (Note [Aggressive early deflation]).
 * 5. Eigenvectors (trevc + the normalisation of geev): for each eigenvalue, from the last
 *    block up, x solves (T - lambda I) x = 0 by back-substitution over the blocks above it,
 *    in complex arithmetic for a complex pair; a pivot below smin = max(eps |lambda|,
 *    tiny) is replaced by smin, and x is rescaled before it could overflow.  v = Z x
 *    (all the x at once, by the GEMM), then P D v (balancing undone), then v / |v|_2 (a
 *    row at a time for all the columns); a complex v is further multiplied by the unit
 *    complex number that makes its largest component real, keeping the sign of that
 *    component's real part (geev's lartg rotation).
 * Eigenvalues come in the order of T's diagonal blocks; a complex pair is given as
 * (re + i im, re - i im) with im > 0, its eigenvectors as (u + i w, u - i w).  The work is
 * about 10 n^3 for the eigenvalues and 25 n^3 with the eigenvectors without early
 * deflation, which removes about half of the sweeps' work at n = 256; LAPACK's multishift
 * QR also chases its shifts in chains of small bulges, applied outside by the GEMM. */
#include <complex.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "../../c10/cpu_features.h"
#include "../loops.h"
#include "gemm.h"
#include "linalg_eig_impl.h"
#include "linalg_impl.h"

/* lahqr's: an exceptional shift every EIG_EXCEPTIONAL_SWEEPS sweeps without a split */
#define EIG_EXCEPTIONAL_SWEEPS 10
/* a sum of squares at least this large lost nothing that matters to squares that underflow
 * (each below DBL_MIN, a relative eps of it) */
#define EIG_SQUARES_MIN (DBL_MIN / DBL_EPSILON)
/* Note [Aggressive early deflation]: active blocks of EIG_AED_MIN rows or more of matrices
 * of EIG_AED_MIN_N or more look for converged eigenvalues in their last EIG_AED_WINDOW */
#define EIG_AED_MIN 75
#define EIG_AED_MIN_N 160
#define EIG_AED_WINDOW 24
/* the shifts of the next sweeps: the last undeflated eigenvalues of the window */
#define EIG_AED_SHIFTS 8
_Static_assert(EIG_AED_WINDOW < EIG_AED_MIN && EIG_AED_MIN <= EIG_AED_MIN_N,
               "the window's own Schur form must not recurse");

#define AT(M, N, R, C) ((M)[(R) * (N) + (C)])

/* ---- Householder reflections ---- */

/* The 2-norm of x (len entries, stride inc), without overflow or underflow. */
static double
norm2(const double *x, int64_t len, int64_t inc)
{
    double scale = 0, ss = 0;
    for (int64_t i = 0; i < len; i++) {
        double ax = fabs(x[i * inc]);
        scale = ax > scale ? ax : scale;   /* fmax, inlined (a libm call otherwise) */
    }
    if (scale == 0) {
        return 0;
    }
    for (int64_t i = 0; i < len; i++) {
        double t = x[i * inc] / scale;
        ss += t * t;
    }
    return scale * sqrt(ss);
}

/* larfg: makes the reflection I - tau v v^T taking x (len entries, stride inc) to beta e1;
 * x becomes (beta, v[1:]) with v0 = 1 implied.  Returns tau (0: x is beta e1 already). */
static double
reflector(double *x, int64_t len, int64_t inc)
{
    /* the squares summed as they are unless that could have underflowed or overflowed:
     * norm2's scaling divides every entry, and a sweep's reflections of 3 entries were a
     * fifth of eigvals' time at n = 64 */
    double ss = 0, x0 = x[0], xnorm, beta;
    for (int64_t i = 1; i < len; i++) {
        ss += x[i * inc] * x[i * inc];
    }
    double all = ss + x0 * x0;
    if (ss >= EIG_SQUARES_MIN && all <= DBL_MAX) {
        beta = -copysign(sqrt(all), x0);
    } else {
        xnorm = len > 1 ? norm2(x + inc, len - 1, inc) : 0;
        if (xnorm == 0) {
            return 0;
        }
        /* sqrt(x0^2 + xnorm^2) without overflow, lapy2's form */
        double a0 = fabs(x0);
        double big = a0 > xnorm ? a0 : xnorm, small = a0 > xnorm ? xnorm : a0, q = small / big;
        beta = -copysign(big * sqrt(1 + q * q), x0);
    }
    double f = 1 / (x0 - beta);   /* larfg scales by the reciprocal too */
    for (int64_t i = 1; i < len; i++) {
        x[i * inc] *= f;
    }
    x[0] = beta;
    return (beta - x0) / beta;
}

/* reflector for a sweep's 2 or 3 contiguous entries, its common case written out inline (the
 * same operations and bits; the call and its loops were a fifth of a sweep step's wait) */
static inline __attribute__((always_inline)) double
reflector_small(double *x, int nr)
{
    double x0 = x[0], x1 = x[1], x2 = nr == 3 ? x[2] : 0;
    double ss = nr == 3 ? x1 * x1 + x2 * x2 : x1 * x1, all = ss + x0 * x0;
    if (!(ss >= EIG_SQUARES_MIN && all <= DBL_MAX)) {
        return reflector(x, nr, 1);
    }
    double beta = -copysign(sqrt(all), x0), f = 1 / (x0 - beta);
    x[1] = x1 * f;
    if (nr == 3) {
        x[2] = x2 * f;
    }
    x[0] = beta;
    return (beta - x0) / beta;
}

/* ---- steps 1 and 2: scaling and balancing ---- */

/* Multiplies a (n x n) by the power of two that brings its largest |entry| into [1/2, 1);
 * returns that power's exponent negated (a == 0: 0). */
static int
scale_unit(double *a, int64_t n)
{
    double amax = 0;
    for (int64_t i = 0; i < n * n; i++) {
        amax = fmax(amax, fabs(a[i]));
    }
    if (amax == 0) {
        return 0;
    }
    int e;
    frexp(amax, &e);
    for (int64_t i = 0; i < n * n; i++) {
        a[i] = ldexp(a[i], -e);
    }
    return e;
}

/* Swaps rows and columns i and j of a (n x n): a becomes P a P for the transposition P. */
static void
swap_index(double *a, int64_t n, int64_t i, int64_t j)
{
    if (i == j) {
        return;
    }
    for (int64_t k = 0; k < n; k++) {
        double t = AT(a, n, k, i);
        AT(a, n, k, i) = AT(a, n, k, j);
        AT(a, n, k, j) = t;
    }
    for (int64_t k = 0; k < n; k++) {
        double t = AT(a, n, i, k);
        AT(a, n, i, k) = AT(a, n, j, k);
        AT(a, n, j, k) = t;
    }
}

/* Whether row (by_col = 0) or column (by_col = 1) i of a (n x n) is zero in lo..hi apart
 * from its diagonal entry. */
static int
isolated(const double *a, int64_t n, int64_t i, int64_t lo, int64_t hi, int by_col)
{
    for (int64_t k = lo; k <= hi; k++) {
        if (k != i && (by_col ? AT(a, n, k, i) : AT(a, n, i, k)) != 0) {
            return 0;
        }
    }
    return 1;
}

/* gebal: a (n x n) becomes D^-1 P^T a P D.  The permutation P moves the rows that isolate
 * an eigenvalue to the bottom and the columns that do to the left, so that a is upper
 * triangular outside rows and columns *ilo..*ihi; d[i] outside them is the index swapped
 * with i.  Inside, D = diag(d) (powers of two) makes the 2-norms of each row and column of
 * comparable size. */
static void
balance(double *a, int64_t n, double *d, int64_t *ilo, int64_t *ihi)
{
    const double sfmin1 = DBL_MIN / (DBL_EPSILON / 2) / 2, sfmax1 = 1 / sfmin1;
    const double sfmin2 = sfmin1 * 2, sfmax2 = 1 / sfmin2;
    int64_t lo = 0, hi = n - 1;
    for (int64_t i = 0; i < n; i++) {
        d[i] = 1;
    }
    for (int swapped = 1; swapped && hi > 0;) {
        swapped = 0;
        for (int64_t i = hi; i >= 0 && hi > 0; i--) {
            if (isolated(a, n, i, lo, hi, 0)) {
                d[hi] = (double)i;
                swap_index(a, n, i, hi);
                hi--;
                swapped = 1;
            }
        }
    }
    for (int swapped = 1; swapped && hi > 0;) {
        swapped = 0;
        for (int64_t j = lo; j <= hi; j++) {
            if (isolated(a, n, j, lo, hi, 1)) {
                d[lo] = (double)j;
                swap_index(a, n, j, lo);
                lo++;
                swapped = 1;
            }
        }
    }
    *ilo = lo;
    *ihi = hi;
    for (int64_t i = lo; i <= hi; i++) {
        d[i] = 1;
    }
    int64_t len = hi - lo + 1;
    for (int noconv = lo < hi; noconv;) {
        noconv = 0;
        for (int64_t i = lo; i <= hi; i++) {
            double c = norm2(a + lo * n + i, len, n), r = norm2(a + i * n + lo, len, 1);
            double ca = 0, ra = 0;
            for (int64_t k = 0; k <= hi; k++) {
                ca = fmax(ca, fabs(AT(a, n, k, i)));
            }
            for (int64_t k = lo; k < n; k++) {
                ra = fmax(ra, fabs(AT(a, n, i, k)));
            }
            if (c == 0 || r == 0) {
                continue;
            }
            double g = r / 2, f = 1, s = c + r;
            while (c < g && fmax(f, fmax(c, ca)) < sfmax2 && fmin(r, fmin(g, ra)) > sfmin2) {
                f *= 2;
                c *= 2;
                ca *= 2;
                r /= 2;
                g /= 2;
                ra /= 2;
            }
            g = c / 2;
            while (g >= r && fmax(r, ra) < sfmax2 &&
                   fmin(fmin(f, c), fmin(g, ca)) > sfmin2) {
                f /= 2;
                c /= 2;
                g /= 2;
                ca /= 2;
                r *= 2;
                ra *= 2;
            }
            if (c + r >= 0.95 * s || (f < 1 && d[i] < 1 && f * d[i] <= sfmin1) ||
                (f > 1 && d[i] > 1 && d[i] >= sfmax1 / f)) {
                continue;
            }
            d[i] *= f;
            noconv = 1;
            for (int64_t k = 0; k < n; k++) {
                AT(a, n, i, k) /= f;
                AT(a, n, k, i) *= f;
            }
        }
    }
}

/* ---- step 3: Hessenberg reduction ---- */

/* Applies I - tau v v^T (v0 = 1, v[i] = vs[i * n] for 1 <= i < len) from the left to rows
 * r0..r0+len-1 and columns c0..n-1 of m (n x n).  w: n scratch. */
static PTL_LOOP_CLONES_WIDE void
reflect_left(double *m, int64_t n, int64_t r0, int64_t c0, int64_t len, const double *vs,
             double tau, double *w)
{
    for (int64_t j = c0; j < n; j++) {
        w[j] = AT(m, n, r0, j);
    }
    for (int64_t i = 1; i < len; i++) {
        const double *row = m + (r0 + i) * n;
        double vi = vs[i * n];
        for (int64_t j = c0; j < n; j++) {
            w[j] += vi * row[j];
        }
    }
    for (int64_t i = 0; i < len; i++) {
        double *row = m + (r0 + i) * n, f = tau * (i == 0 ? 1 : vs[i * n]);
        for (int64_t j = c0; j < n; j++) {
            row[j] -= f * w[j];
        }
    }
}

/* sum x[i] y[i] over len entries, in eight interleaved partial sums (vector lanes; one
 * chain of dependent adds would wait on each add's latency) */
static inline __attribute__((always_inline)) double
dot_lanes(const double *x, const double *y, int64_t len)
{
    double acc[8] = {0}, tail = 0;
    int64_t i = 0;
    for (; i + 8 <= len; i += 8) {
        for (int q = 0; q < 8; q++) {
            acc[q] += x[i + q] * y[i + q];
        }
    }
    for (; i < len; i++) {
        tail += x[i] * y[i];
    }
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) +
           tail;
}

/* a (n x n, upper triangular outside rows and columns ilo..ihi) becomes H = Q^T a Q,
 * upper Hessenberg (gehrd); zt = Q^T when not NULL.  w: 3n scratch. */
static PTL_LOOP_CLONES_WIDE void
hessenberg(double *a, int64_t n, int64_t ilo, int64_t ihi, double *zt, double *w)
{
    double *tau = w + n, *v = w + 2 * n;
    for (int64_t k = ilo; k + 2 <= ihi; k++) {
        double *x = a + (k + 1) * n + k;
        int64_t len = ihi - k;
        tau[k] = reflector(x, len, n);
        if (tau[k] == 0) {
            continue;
        }
        reflect_left(a, n, k + 1, k + 1, len, x, tau[k], w);
        v[0] = 1;
        for (int64_t i = 1; i < len; i++) {
            v[i] = x[i * n];
        }
        /* A[r, k+1:] -= (tau A[r, k+1:] v) v, row by row: the row is still in L1 for
         * its update (a GEMM for all the dot products, then the updates, read A twice) */
        for (int64_t r = 0; r <= ihi; r++) {
            double *row = a + r * n + k + 1, sr = tau[k] * dot_lanes(row, v, len);
            for (int64_t i = 0; i < len; i++) {
                row[i] -= sr * v[i];
            }
        }
    }
    if (zt != NULL) {
        memset(zt, 0, sizeof(double) * (size_t)(n * n));
        for (int64_t i = 0; i < n; i++) {
            AT(zt, n, i, i) = 1;
        }
        for (int64_t k = ihi - 2; k >= ilo; k--) {
            if (tau[k] != 0) {
                reflect_left(zt, n, k + 1, k + 1, ihi - k, a + (k + 1) * n + k, tau[k], w);
            }
        }
        for (int64_t r = 0; r < n; r++) {
            for (int64_t c = r + 1; c < n; c++) {
                double t = AT(zt, n, r, c);
                AT(zt, n, r, c) = AT(zt, n, c, r);
                AT(zt, n, c, r) = t;
            }
        }
    }
    for (int64_t r = 2; r < n; r++) {
        memset(a + r * n, 0, sizeof(double) * (size_t)(r - 1));
    }
}

/* ---- step 4: the real Schur form ---- */

/* lanv2: the standard form of [a b; c d] = [cs -sn; sn cs] [a' b'; c' d'] [cs sn; -sn cs]
 * (a' = d' and b' c' < 0 for a complex pair, else c' = 0), in place; its eigenvalues in
 * (wr[0] + i wi[0], wr[1] + i wi[1]), wi[0] >= 0. */
static void
standardize_2x2(double *a, double *b, double *c, double *d, double *cs, double *sn,
                double *wr, double *wi)
{
    *cs = 1;
    *sn = 0;
    if (*c == 0) {
        /* triangular already */
    } else if (*b == 0) {
        double t = *d;
        *cs = 0;
        *sn = 1;
        *d = *a;
        *a = t;
        *b = -*c;
        *c = 0;
    } else if (*a - *d == 0 && (*b > 0) != (*c > 0)) {
        /* a complex pair in standard form already */
    } else {
        double t = *a - *d, p = 0.5 * t;
        double bcmax = fmax(fabs(*b), fabs(*c));
        double bcmis = fmin(fabs(*b), fabs(*c)) * copysign(1, *b) * copysign(1, *c);
        double scale = fmax(fabs(p), bcmax);
        double zz = (p / scale) * p + (bcmax / scale) * bcmis;
        if (zz >= 4 * DBL_EPSILON) {
            /* real eigenvalues: triangularise */
            zz = p + copysign(sqrt(scale) * sqrt(zz), p);
            *a = *d + zz;
            *d -= (bcmax / zz) * bcmis;
            double tau = hypot(*c, zz);
            *cs = zz / tau;
            *sn = *c / tau;
            *b -= *c;
            *c = 0;
        } else {
            /* a complex pair or nearly equal real eigenvalues: equal diagonal entries */
            double sigma = *b + *c, tau = hypot(sigma, t);
            *cs = sqrt(0.5 * (1 + fabs(sigma) / tau));
            *sn = -(p / (tau * *cs)) * copysign(1, sigma);
            double aa = *a * *cs + *b * *sn, bb = -*a * *sn + *b * *cs;
            double cc = *c * *cs + *d * *sn, dd = -*c * *sn + *d * *cs;
            *a = aa * *cs + cc * *sn;
            *b = bb * *cs + dd * *sn;
            *c = -aa * *sn + cc * *cs;
            *d = -bb * *sn + dd * *cs;
            t = 0.5 * (*a + *d);
            *a = t;
            *d = t;
            if (*c != 0) {
                if (*b == 0) {
                    *b = -*c;
                    *c = 0;
                    t = *cs;
                    *cs = -*sn;
                    *sn = t;
                } else if ((*b > 0) == (*c > 0)) {
                    /* real eigenvalues after all: triangularise */
                    double sab = sqrt(fabs(*b)), sac = sqrt(fabs(*c));
                    p = copysign(sab * sac, *c);
                    tau = 1 / sqrt(fabs(*b + *c));
                    *a = t + p;
                    *d = t - p;
                    *b -= *c;
                    *c = 0;
                    double cs1 = sab * tau, sn1 = sac * tau;
                    t = *cs * cs1 - *sn * sn1;
                    *sn = *cs * sn1 + *sn * cs1;
                    *cs = t;
                }
            }
        }
    }
    wr[0] = *a;
    wr[1] = *d;
    wi[0] = *c == 0 ? 0 : sqrt(fabs(*b)) * sqrt(fabs(*c));
    wi[1] = -wi[0];
}

/* The rotation x' = cs x + sn y, y' = cs y - sn x on len pairs (strides inc). */
static void
rotate(double *x, double *y, int64_t len, int64_t inc, double cs, double sn)
{
    for (int64_t k = 0; k < len; k++) {
        double xv = x[k * inc], yv = y[k * inc];
        x[k * inc] = cs * xv + sn * yv;
        y[k * inc] = cs * yv - sn * xv;
    }
}

/* Applies I - t v v^T (v0 = 1, nr = 2 or 3 entries) from the left to rows k..k+nr-1,
 * columns c0..c1 of m (n x n). */
static PTL_LOOP_CLONES_WIDE void
reflect_rows(double *m, int64_t n, int64_t k, int nr, int64_t c0, int64_t c1, const double *v,
             double t)
{
    double *r0 = m + k * n, *r1 = r0 + n, t2 = t * v[1];
    if (nr == 2) {
        for (int64_t j = c0; j <= c1; j++) {
            double s = r0[j] + v[1] * r1[j];
            r0[j] -= s * t;
            r1[j] -= s * t2;
        }
        return;
    }
    double *r2 = r1 + n, t3 = t * v[2];
    for (int64_t j = c0; j <= c1; j++) {
        double s = r0[j] + v[1] * r1[j] + v[2] * r2[j];
        r0[j] -= s * t;
        r1[j] -= s * t2;
        r2[j] -= s * t3;
    }
}

/* The same from the right to columns k..k+nr-1, rows r0..r1 of m (n x n). */
static PTL_LOOP_CLONES_WIDE void
reflect_cols(double *m, int64_t n, int64_t r0, int64_t r1, int64_t k, int nr, const double *v,
             double t)
{
    double t2 = t * v[1];
    if (nr == 2) {
        for (int64_t r = r0; r <= r1; r++) {
            double *row = m + r * n + k, s = row[0] + v[1] * row[1];
            row[0] -= s * t;
            row[1] -= s * t2;
        }
        return;
    }
    double t3 = t * v[2];
    for (int64_t r = r0; r <= r1; r++) {
        double *row = m + r * n + k, s = row[0] + v[1] * row[1] + v[2] * row[2];
        row[0] -= s * t;
        row[1] -= s * t2;
        row[2] -= s * t3;
    }
}

/* The w entries of rows x0, x0 + ld (and x0 + 2 ld unless two) less sj (t, t2, t3), sj =
 * x0 + v1 x1 (+ v2 x2): one reflection of a sweep on contiguous rows (sweep_rows and
 * sweep_cols_above). */
static inline __attribute__((always_inline)) void
sweep_reflect(double *x0, int64_t ld, int64_t w, int two, double v1, double v2, double t,
              double t2, double t3)
{
    double *x1 = x0 + ld;
    if (two) {
        for (int64_t j = 0; j < w; j++) {
            double sj = x0[j] + v1 * x1[j];
            x0[j] -= sj * t;
            x1[j] -= sj * t2;
        }
        return;
    }
    double *x2 = x1 + ld;
    for (int64_t j = 0; j < w; j++) {
        double sj = x0[j] + v1 * x1[j] + v2 * x2[j];
        x0[j] -= sj * t;
        x1[j] -= sj * t2;
        x2[j] -= sj * t3;
    }
}

/* Applies the reflections k = m..e-1 of one sweep in order to columns c0..c1-1 of the
 * rows of mat (n x n): I - t v v^T on rows k..k+2 (k, k+1 for the sweep's last, k = e - 1
 * when two) with v = (1, sv[3k], sv[3k+1]), t = sv[3k+2] (the same arithmetic as
 * reflect_rows).  Two of the three
 * rows a reflection changes are the next one's, so SWEEP_LANES columns at a time the two
 * are carried down the sweep in registers: each row is loaded once and stored once (row k
 * is final after reflection k), not three times each.  The last columns go SWEEP_COLS at a
 * time through memory, whose rows stay in L1 from one reflection to the next. */
#define SWEEP_COLS 64
#define SWEEP_LANES 32

typedef double EigVec __attribute__((vector_size(64)));
typedef int64_t EigIdx __attribute__((vector_size(64)));
typedef int64_t EigIdx4 __attribute__((vector_size(32)));
#define SWEEP_VECS (SWEEP_LANES / 8)

/* sweep_rows' (and sweep_cols_above's) register path on the 8 nv columns from j0, nv <=
 * SWEEP_VECS: the 3-row reflections m..e3-1, then the 2-row one e3 when two */
static inline __attribute__((always_inline)) void
sweep_lanes(double *mat, int64_t n, int64_t m, int64_t e3, int two, const double *sv,
            int64_t j0, int nv)
{
    EigVec x0[SWEEP_VECS], x1[SWEEP_VECS];
    memcpy(x0, mat + m * n + j0, sizeof(EigVec) * (size_t)nv);
    memcpy(x1, mat + (m + 1) * n + j0, sizeof(EigVec) * (size_t)nv);
    for (int64_t k = m; k < e3; k++) {
        const double *r = sv + 3 * k;
        double t = r[2], t2 = t * r[0], t3 = t * r[1], v1 = r[0], v2 = r[1];
        double *r0 = mat + k * n + j0, *r2 = r0 + 2 * n;
        for (int v = 0; v < nv; v++) {
            EigVec x2;
            memcpy(&x2, r2 + 8 * v, sizeof(x2));
            if (t != 0) {
                EigVec sj = x0[v] + v1 * x1[v] + v2 * x2;
                x0[v] -= sj * t;
                x1[v] -= sj * t2;
                x2 -= sj * t3;
            }
            memcpy(r0 + 8 * v, &x0[v], sizeof(x2));
            x0[v] = x1[v];
            x1[v] = x2;
        }
    }
    if (two && sv[3 * e3 + 2] != 0) {
        const double *r = sv + 3 * e3;
        double t = r[2], t2 = t * r[0], v1 = r[0];
        for (int v = 0; v < nv; v++) {
            EigVec sj = x0[v] + v1 * x1[v];
            x0[v] -= sj * t;
            x1[v] -= sj * t2;
        }
    }
    memcpy(mat + e3 * n + j0, x0, sizeof(EigVec) * (size_t)nv);
    memcpy(mat + (e3 + 1) * n + j0, x1, sizeof(EigVec) * (size_t)nv);
}

static PTL_LOOP_CLONES_WIDE void
sweep_rows(double *mat, int64_t n, int64_t m, int64_t e, int two, const double *sv,
           int64_t c0, int64_t c1)
{
    if (m >= e) {
        return;
    }
    int64_t j0 = c0, e3 = two ? e - 1 : e;
    for (; j0 + SWEEP_LANES <= c1; j0 += SWEEP_LANES) {
        sweep_lanes(mat, n, m, e3, two, sv, j0, SWEEP_VECS);
    }
    for (; j0 < c1; j0 += SWEEP_COLS) {
        int64_t w = c1 - j0 < SWEEP_COLS ? c1 - j0 : SWEEP_COLS;
        for (int64_t k = m; k < e; k++) {
            const double *r = sv + 3 * k;
            double t = r[2], t2 = t * r[0], t3 = t * r[1], v1 = r[0], v2 = r[1];
            double *r0 = mat + k * n + j0;
            if (t == 0) {
                continue;
            }
            sweep_reflect(r0, n, w, two && k == e - 1, v1, v2, t, t2, t3);
        }
    }
}

/* The columns' part of one sweep's reflections (as reflect_cols) on the rows of h above
 * the bulge: reflection k reaches rows r < k (rows i1..k-1) only here, after the sweep --
 * no later step of the sweep reads them.  By blocks of EIG_COL_BLOCK rows, transposed into
 * ct (EIG_COL_BLOCK n scratch) so that each reflection updates three contiguous rows of it
 * (the same arithmetic as reflect_cols).  The copies go by tiles transposed in registers
 * (transpose_block), and the reflections that reach all of a block's rows by sweep_lanes. */
#define EIG_COL_BLOCK 32
_Static_assert(EIG_COL_BLOCK <= SWEEP_LANES, "a block's rows fit sweep_lanes' registers");

typedef double EigVec4 __attribute__((vector_size(32)));

/* dst[c * ld + r] = src[r * ls + c] on the 8 x 8 tile at src (rows of ls, dst's of ld) */
static inline __attribute__((always_inline)) void
transpose_tile8(double *dst, int64_t ld, const double *src, int64_t ls)
{
    const EigIdx lo1 = {0, 8, 2, 10, 4, 12, 6, 14}, hi1 = {1, 9, 3, 11, 5, 13, 7, 15};
    const EigIdx lo2 = {0, 1, 8, 9, 4, 5, 12, 13}, hi2 = {2, 3, 10, 11, 6, 7, 14, 15};
    const EigIdx lo4 = {0, 1, 2, 3, 8, 9, 10, 11}, hi4 = {4, 5, 6, 7, 12, 13, 14, 15};
    EigVec x[8], y[8];
    for (int q = 0; q < 8; q++) {
        memcpy(&x[q], src + q * ls, sizeof(EigVec));
    }
    for (int q = 0; q < 8; q += 2) {
        y[q] = __builtin_shuffle(x[q], x[q + 1], lo1);
        y[q + 1] = __builtin_shuffle(x[q], x[q + 1], hi1);
    }
    for (int q = 0; q < 8; q += (q & 1) ? 3 : 1) {   /* 0, 1, 4, 5 */
        x[q] = __builtin_shuffle(y[q], y[q + 2], lo2);
        x[q + 2] = __builtin_shuffle(y[q], y[q + 2], hi2);
    }
    for (int q = 0; q < 4; q++) {
        y[q] = __builtin_shuffle(x[q], x[q + 4], lo4);
        y[q + 4] = __builtin_shuffle(x[q], x[q + 4], hi4);
    }
    for (int q = 0; q < 8; q++) {
        memcpy(dst + q * ld, &y[q], sizeof(EigVec));
    }
}

/* the same on a 4 x 4 tile of 32-byte vectors (unpcklpd / unpckhpd, then vperm2f128), each
 * row a variable of its own (arrays of them went through the stack, their 16-byte copies
 * stalling the 32-byte loads) */
static inline __attribute__((always_inline)) void
transpose_tile4(double *dst, int64_t ld, const double *src, int64_t ls)
{
    const EigIdx4 lo1 = {0, 4, 2, 6}, hi1 = {1, 5, 3, 7}, lo2 = {0, 1, 4, 5}, hi2 = {2, 3, 6, 7};
    EigVec4 x0, x1, x2, x3;
    memcpy(&x0, src, sizeof x0);
    memcpy(&x1, src + ls, sizeof x1);
    memcpy(&x2, src + 2 * ls, sizeof x2);
    memcpy(&x3, src + 3 * ls, sizeof x3);
    EigVec4 y0 = __builtin_shuffle(x0, x1, lo1), y1 = __builtin_shuffle(x0, x1, hi1);
    EigVec4 y2 = __builtin_shuffle(x2, x3, lo1), y3 = __builtin_shuffle(x2, x3, hi1);
    x0 = __builtin_shuffle(y0, y2, lo2);
    x1 = __builtin_shuffle(y1, y3, lo2);
    x2 = __builtin_shuffle(y0, y2, hi2);
    x3 = __builtin_shuffle(y1, y3, hi2);
    memcpy(dst, &x0, sizeof x0);
    memcpy(dst + ld, &x1, sizeof x1);
    memcpy(dst + 2 * ld, &x2, sizeof x2);
    memcpy(dst + 3 * ld, &x3, sizeof x3);
}

/* dst[c * ld + r] = src[r * ls + c] for r < rows, c < cols: by 8 x 8 tiles with AVX-512, 4 x
 * 4 ones elsewhere (for AVX2, gcc lowers the 8 x 8 tile's 64-byte shuffles to scalar moves
 * through the stack: 38% of eigvals 64 on Zen 3), the edges element by element */
static inline __attribute__((always_inline)) void
transpose_block(double *dst, int64_t ld, const double *src, int64_t ls, int64_t rows,
                int64_t cols)
{
    const int wide = ptl_cpu_capability() >= PTL_CPU_AVX512;
    const int64_t t = wide ? 8 : 4;
    int64_t rt = rows & ~(t - 1), ctl = cols & ~(t - 1);
    for (int64_t r0 = 0; r0 < rt; r0 += t) {
        for (int64_t c0 = 0; c0 < ctl; c0 += t) {
            if (wide) {
                transpose_tile8(dst + c0 * ld + r0, ld, src + r0 * ls + c0, ls);
            }
            else {
                transpose_tile4(dst + c0 * ld + r0, ld, src + r0 * ls + c0, ls);
            }
        }
    }
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t c = r < rt ? ctl : 0; c < cols; c++) {
            dst[c * ld + r] = src[r * ls + c];
        }
    }
}

static PTL_LOOP_CLONES_WIDE void
sweep_cols_above(double *h, int64_t n, int64_t i1, int64_t m, int64_t i, const double *sv,
                 double *ct)
{
    const int64_t B = EIG_COL_BLOCK;
    for (int64_t r0 = i1; r0 + 1 < i; r0 += B) {
        int64_t r1 = r0 + B < i - 1 ? r0 + B : i - 1, c0 = m > r0 + 1 ? m : r0 + 1;
        transpose_block(ct, B, h + r0 * n + c0, n, r1 - r0, i - c0 + 1);
        /* the reflections before r1 reach part of the block's rows, the rest all of them:
         * those by sweep_lanes, with the lanes past the block's rows zero (not copied) */
        int64_t kf = r1 > c0 ? r1 : c0, nv = (r1 - r0 + 7) / 8, pad = 8 * nv - (r1 - r0);
        for (int64_t c = kf; c <= i && pad > 0; c++) {
            memset(ct + (c - c0) * B + (r1 - r0), 0, sizeof(double) * (size_t)pad);
        }
        for (int64_t k = c0; k < kf; k++) {
            const double *q = sv + 3 * k;
            double t = q[2], t2 = t * q[0], t3 = t * q[1], v1 = q[0], v2 = q[1];
            int64_t wk = (k < r1 ? k : r1) - r0;
            double *x0 = ct + (k - c0) * B;
            if (t == 0 || wk <= 0) {
                continue;
            }
            sweep_reflect(x0, B, wk, k == i - 1, v1, v2, t, t2, t3);
        }
        if (kf < i) {
            sweep_lanes(ct, B, kf - c0, i - 1 - c0, 1, sv + 3 * c0, 0, (int)nv);
        }
        transpose_block(h + r0 * n + c0, n, ct, B, i - c0 + 1, r1 - r0);
    }
}

/* One Francis double-shift sweep over rows/columns m..i of h (n x n), the bulge started
 * from the shifts (rt1r + i rt1i, rt2r + i rt2i) as v, l the top of the active block;
 * rows i1..i2 of the columns are updated (the whole of T, or only the block) and the
 * reflections are applied to zt's rows (Z's columns) when zt is not NULL.  The rows' part
 * right of column i (no later step of the sweep reads it) and zt take the whole sweep at
 * the end, by sweep_rows, and the columns' part above row k the same way, by
 * sweep_cols_above.  Inside the block, runs k0..k1-1 of SWEEP_NEAR reflections reach at
 * once only the columns up to k1 + 1 (those the run reads or updates from the right); the
 * columns beyond take the run after it by sweep_rows, before the next run's right updates
 * (the same bits; 8 measured best of 4 to 32).  sv: (3 + EIG_COL_BLOCK) n scratch. */
#define SWEEP_NEAR 8

static void
francis_sweep(double *h, int64_t n, double *zt, int64_t l, int64_t m, int64_t i, int64_t i1,
              int64_t i2, double *v, double *sv)
{
    int64_t ce = i2 < i ? i2 : i;
    for (int64_t k0 = m; k0 < i; k0 += SWEEP_NEAR) {
        int64_t k1 = i - k0 > SWEEP_NEAR ? k0 + SWEEP_NEAR : i, cn = k1 + 1 < ce ? k1 + 1 : ce;
        for (int64_t k = k0; k < k1; k++) {
            int nr = i - k + 1 < 3 ? (int)(i - k + 1) : 3;
            if (k > m) {
                for (int q = 0; q < nr; q++) {
                    v[q] = AT(h, n, k + q, k - 1);
                }
            }
            double t1 = reflector_small(v, nr);
            if (k > m) {
                AT(h, n, k, k - 1) = v[0];
                AT(h, n, k + 1, k - 1) = 0;
                if (k < i - 1) {
                    AT(h, n, k + 2, k - 1) = 0;
                }
            } else if (m > l) {
                /* lahqr's form of H(k, k-1) = -H(k, k-1): right when v[1..] underflow */
                AT(h, n, k, k - 1) *= 1 - t1;
            }
            sv[3 * k] = v[1];
            sv[3 * k + 1] = nr == 3 ? v[2] : 0;
            sv[3 * k + 2] = t1;
            if (t1 == 0) {
                continue;
            }
            reflect_rows(h, n, k, nr, k, cn, v, t1);
            reflect_cols(h, n, k > i1 ? k : i1, k + 3 < i ? k + 3 : i, k, nr, v, t1);
        }
        if (cn < ce) {
            sweep_rows(h, n, k0, k1, 0, sv, cn + 1, ce + 1);
        }
    }
    sweep_cols_above(h, n, i1, m, i, sv, sv + 3 * n);
    if (i2 > i) {
        sweep_rows(h, n, m, i, 1, sv, i + 1, i2 + 1);
    }
    if (zt != NULL) {
        sweep_rows(zt, n, m, i, 1, sv, 0, n);
    }
}

/* Note [Aggressive early deflation]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * (Braman, Byers and Mathias; LAPACK's laqr3.)  Before each sweep on an active block
 * l..i of at least EIG_AED_MIN rows, the trailing window W = H[kw..i, kw..i] of nw =
 * EIG_AED_WINDOW rows is brought to real Schur form T = V^T W V on a copy, by schur_form
 * itself (the window is too small to recurse).  The subdiagonal entry s = H[kw, kw-1]
 * that joins W to the rest becomes the spike s V^T e1 down column kw-1.  A diagonal block
 * of T at the bottom whose spike entries are negligible (laqr3's test: |s v| <= max(smlnum,
 * ulp |block|)) has converged, as if the subdiagonal above it were zero; blocks are split
 * off from the bottom up to the first that is not.  The spike's entries fall well before
 * the subdiagonal entries the sweep's tests watch, so one window often gives several
 * eigenvalues where those tests give none, and each saves the sweeps it would have taken.
 * When something deflated, the ns rows left of T and their spike go back to Hessenberg
 * form (a reflection taking the spike to beta e1, then gehrd; V follows), T replaces W,
 * and V is applied outside the window by the GEMM: from the right to the rows above it,
 * from the left to the columns right of it (when T is wanted) and to Z^T's rows.  When
 * nothing deflated, H is left as it was.  laqr3 also moves a block that fails the test to
 * the top of the window (trexc) and goes on testing the blocks under it; here the test
 * stops at the first failure.  Only matrices of EIG_AED_MIN_N rows or more take windows:
 * below, lahqr's shifts alone were faster (eigvals of 90 to 144 rows by 15-25%, eig by
 * 5-20%), while a larger matrix's blocks gain from them down to EIG_AED_MIN rows. */

static int32_t schur_form(double *h, int64_t n, int64_t ilo, int64_t ihi, double *zt,
                          double *wr, double *wi, double *sv, double *aed);

/* The doubles of scratch aggressive_deflation needs for an n x n matrix. */
static int64_t
aed_scratch(int64_t n)
{
    const int64_t nw = EIG_AED_WINDOW;
    return n < EIG_AED_MIN_N ? 0 : 3 * nw * nw + (9 + EIG_COL_BLOCK) * nw + n * nw;
}

/* Applies I - tau v v^T (v0 = 1, v[1..len)) from the left to rows 0..len-1, columns
 * 0..cols-1 of m (ld columns a row). */
static void
reflect_block_left(double *m, int64_t ld, int64_t len, int64_t cols, const double *v,
                   double tau)
{
    for (int64_t c = 0; c < cols; c++) {
        double d = m[c];
        for (int64_t r = 1; r < len; r++) {
            d += v[r] * m[r * ld + c];
        }
        m[c] -= tau * d;
        for (int64_t r = 1; r < len; r++) {
            m[r * ld + c] -= tau * v[r] * d;
        }
    }
}

/* m[0..rows, 0..cols) (row stride ldm) = the product in t (row stride cols). */
static void
copy_back(double *m, int64_t ldm, const double *t, int64_t rows, int64_t cols)
{
    for (int64_t r = 0; r < rows; r++) {
        memcpy(m + r * ldm, t + r * cols, sizeof(double) * (size_t)cols);
    }
}

/* Note [Aggressive early deflation] for the active block l..i of h (n x n): rows i1..i2 of
 * the columns updated as in francis_sweep, zt (Z^T) too when not NULL.  Returns how many
 * eigenvalues deflated at the bottom (their wr, wi set), 0 (h unchanged), or -1 with the
 * error set.  ws: aed_scratch(n) doubles. */
static int64_t
aggressive_deflation(double *h, int64_t n, int64_t l, int64_t i, int64_t i1, int64_t i2,
                     double *zt, double *wr, double *wi, double *ws, double *shr, double *shi,
                     int *nsh)
{
    const int64_t nw = i - l < EIG_AED_WINDOW ? i - l : EIG_AED_WINDOW, kw = i - nw + 1;
    const double ulp = DBL_EPSILON, smlnum = DBL_MIN * ((double)(i - l + 1) / ulp);
    double *tw = ws, *vt = tw + nw * nw, *qt = vt + nw * nw, *wrw = qt + nw * nw;
    double *wiw = wrw + nw, *sp = wiw + nw, *hw = sp + nw, *svw = hw + 3 * nw;
    double *tmp = svw + (3 + EIG_COL_BLOCK) * nw;
    for (int64_t r = 0; r < nw; r++) {
        memcpy(tw + r * nw, h + (kw + r) * n + kw, sizeof(double) * (size_t)nw);
        memset(vt + r * nw, 0, sizeof(double) * (size_t)nw);
        vt[r * nw + r] = 1;
    }
    if (schur_form(tw, nw, 0, nw - 1, vt, wrw, wiw, svw, NULL) != 0) {
        return 0;
    }
    const double s = AT(h, n, kw, kw - 1);
    int64_t ns = nw;
    while (ns > 0) {
        int two = ns >= 2 && AT(tw, nw, ns - 1, ns - 2) != 0;
        double foo = fabs(AT(tw, nw, ns - 1, ns - 1)), spike = fabs(s * vt[(ns - 1) * nw]);
        if (two) {
            foo += sqrt(fabs(AT(tw, nw, ns - 1, ns - 2))) *
                   sqrt(fabs(AT(tw, nw, ns - 2, ns - 1)));
            spike = fmax(spike, fabs(s * vt[(ns - 2) * nw]));
        }
        if (spike > fmax(smlnum, ulp * (foo == 0 ? fabs(s) : foo))) {
            break;
        }
        ns -= two ? 2 : 1;
    }
    int64_t j0 = ns - EIG_AED_SHIFTS > 0 ? ns - EIG_AED_SHIFTS : 0;
    if (j0 > 0 && wiw[j0] < 0) {
        j0++;
    }
    *nsh = (int)(ns - j0);
    memcpy(shr, wrw + j0, sizeof(double) * (size_t)*nsh);
    memcpy(shi, wiw + j0, sizeof(double) * (size_t)*nsh);
    if (ns == nw) {
        return 0;
    }
    for (int64_t j = 0; j < ns; j++) {
        sp[j] = s * vt[j * nw];
    }
    if (ns > 1) {
        double tau = reflector(sp, ns, 1);
        if (tau != 0) {
            double beta = sp[0];
            sp[0] = 1;
            reflect_block_left(tw, nw, ns, nw, sp, tau);
            reflect_block_left(vt, nw, ns, nw, sp, tau);
            for (int64_t r = 0; r < ns; r++) {
                double *row = tw + r * nw, d = row[0];
                for (int64_t c = 1; c < ns; c++) {
                    d += sp[c] * row[c];
                }
                row[0] -= tau * d;
                for (int64_t c = 1; c < ns; c++) {
                    row[c] -= tau * d * sp[c];
                }
            }
            sp[0] = beta;
        }
        /* T's first ns rows back to Hessenberg form: tw = Q^T tw Q, V^T = Q^T V^T */
        hessenberg(tw, nw, 0, ns - 1, qt, hw);
        if (ptl_gemm_f64(ns, nw, ns, 1.0, qt, nw, 1, vt, nw, 1, 0.0, tmp, nw) < 0) {
            return -1;
        }
        copy_back(vt, nw, tmp, ns, nw);
    }
    copy_back(h + kw * n + kw, n, tw, nw, nw);
    for (int64_t r = kw; r <= i; r++) {
        AT(h, n, r, kw - 1) = r == kw && ns > 0 ? sp[0] : 0;
    }
    /* V outside the window: H[i1:kw, kw:i+1] V, V^T H[kw:i+1, i+1:i2+1], V^T Z^T[kw:i+1] */
    if (kw > i1) {
        if (ptl_gemm_f64(kw - i1, nw, nw, 1.0, h + i1 * n + kw, n, 1, vt, 1, nw, 0.0, tmp,
                         nw) < 0) {
            return -1;
        }
        copy_back(h + i1 * n + kw, n, tmp, kw - i1, nw);
    }
    if (i2 > i) {
        if (ptl_gemm_f64(nw, i2 - i, nw, 1.0, vt, nw, 1, h + kw * n + i + 1, n, 1, 0.0, tmp,
                         i2 - i) < 0) {
            return -1;
        }
        copy_back(h + kw * n + i + 1, n, tmp, nw, i2 - i);
    }
    if (zt != NULL) {
        if (ptl_gemm_f64(nw, n, nw, 1.0, vt, nw, 1, zt + kw * n, n, 1, 0.0, tmp, n) < 0) {
            return -1;
        }
        copy_back(zt + kw * n, n, tmp, nw, n);
    }
    for (int64_t j = ns; j < nw; j++) {
        wr[kw + j] = wrw[j];
        wi[kw + j] = wiw[j];
    }
    return nw - ns;
}

/* The two shifts of the next sweep on the active block l..i of h (n x n), (rt[0] + i rt[1],
 * rt[2] + i rt[3]): lahqr's exceptional shifts every EIG_EXCEPTIONAL_SWEEPS sweeps without a
 * deflation (kdefl of them), else the next pair of the last window's shifts (shr, shi; *nsh
 * of them left, Note [Aggressive early deflation]), else the eigenvalues of the trailing
 * 2 x 2 block (one of two real ones, the nearer to h22, twice). */
static void
sweep_shifts(const double *h, int64_t n, int64_t l, int64_t i, int64_t kdefl,
             const double *shr, const double *shi, int *nsh, double *rt)
{
    int exceptional = kdefl % EIG_EXCEPTIONAL_SWEEPS == 0;
    rt[0] = rt[1] = rt[2] = rt[3] = 0;
    if (!exceptional && *nsh > 0) {
        int k = *nsh;
        rt[0] = rt[2] = shr[k - 1];
        if (shi[k - 1] != 0) {
            rt[1] = fabs(shi[k - 1]);
            rt[3] = -rt[1];
            *nsh = k - 2;
        } else if (k >= 2 && shi[k - 2] == 0) {
            rt[2] = shr[k - 2];
            *nsh = k - 2;
        } else {
            *nsh = k - 1;
        }
        return;
    }
    double h11, h12, h21, h22;
    if (kdefl % (2 * EIG_EXCEPTIONAL_SWEEPS) == 0) {
        double s = fabs(AT(h, n, i, i - 1)) + fabs(AT(h, n, i - 1, i - 2));
        h11 = 0.75 * s + AT(h, n, i, i);
        h12 = -0.4375 * s;
        h21 = s;
        h22 = h11;
    } else if (exceptional) {
        double s = fabs(AT(h, n, l + 1, l)) + fabs(AT(h, n, l + 2, l + 1));
        h11 = 0.75 * s + AT(h, n, l, l);
        h12 = -0.4375 * s;
        h21 = s;
        h22 = h11;
    } else {
        h11 = AT(h, n, i - 1, i - 1);
        h21 = AT(h, n, i, i - 1);
        h12 = AT(h, n, i - 1, i);
        h22 = AT(h, n, i, i);
    }
    double s = fabs(h11) + fabs(h12) + fabs(h21) + fabs(h22);
    if (s == 0) {
        return;
    }
    h11 /= s;
    h21 /= s;
    h12 /= s;
    h22 /= s;
    double tr = (h11 + h22) / 2;
    double det = (h11 - tr) * (h22 - tr) - h12 * h21, rtdisc = sqrt(fabs(det));
    if (det >= 0) {
        rt[0] = rt[2] = tr * s;
        rt[1] = rtdisc * s;
        rt[3] = -rt[1];
    } else {
        double r1 = tr + rtdisc, r2 = tr - rtdisc;
        rt[0] = rt[2] = fabs(r1 - h22) <= fabs(r2 - h22) ? r1 * s : r2 * s;
    }
}

/* lahqr: h (n x n, upper Hessenberg, upper triangular outside rows and columns ilo..ihi)
 * becomes the real Schur form T (when zt is not NULL;
 * otherwise only its diagonal blocks are final) and zt = Z^T is multiplied by the
 * transformations (Z's columns are zt's rows, so the sweeps update contiguous rows);
 * the eigenvalues go to wr, wi.  sv: (3 + EIG_COL_BLOCK) n scratch; aed: aed_scratch(n)
 * doubles for Note [Aggressive early deflation], or NULL without it.  Returns 0, lahqr's
 * info (the 1-based index of the last eigenvalue that did not converge), or -1 with the
 * error set. */
static int32_t
schur_form(double *h, int64_t n, int64_t ilo, int64_t ihi, double *zt, double *wr,
           double *wi, double *sv, double *aed)
{
    const int64_t nh = ihi - ilo + 1, itmax = 30 * (nh > 10 ? nh : 10);
    const double ulp = DBL_EPSILON, smlnum = DBL_MIN * ((double)nh / ulp);
    int wantt = zt != NULL, nsh = 0;
    int64_t kdefl = 0;
    double shr[EIG_AED_SHIFTS], shi[EIG_AED_SHIFTS];
    for (int64_t i = 0; i < n; i++) {
        if (i < ilo || i > ihi) {
            wr[i] = AT(h, n, i, i);
            wi[i] = 0;
        }
    }
    for (int64_t i = ihi; i >= ilo;) {
        int64_t l = ilo, its;
        for (its = 0; its <= itmax; its++) {
            int64_t k;
            for (k = i; k > l; k--) {
                double hk = fabs(AT(h, n, k, k - 1));
                if (hk <= smlnum) {
                    break;
                }
                double tst = fabs(AT(h, n, k - 1, k - 1)) + fabs(AT(h, n, k, k));
                if (tst == 0) {
                    tst += (k - 2 >= ilo ? fabs(AT(h, n, k - 1, k - 2)) : 0) +
                           (k + 1 <= ihi ? fabs(AT(h, n, k + 1, k)) : 0);
                }
                if (hk <= ulp * tst) {
                    double up = fabs(AT(h, n, k - 1, k));
                    double diff = fabs(AT(h, n, k - 1, k - 1) - AT(h, n, k, k));
                    double ab = fmax(hk, up), ba = fmin(hk, up);
                    double aa = fmax(fabs(AT(h, n, k, k)), diff);
                    double bb = fmin(fabs(AT(h, n, k, k)), diff), s = aa + ab;
                    if (ba * (ab / s) <= fmax(smlnum, ulp * (bb * (aa / s)))) {
                        break;
                    }
                }
            }
            l = k;
            if (l > ilo) {
                AT(h, n, l, l - 1) = 0;
            }
            if (l >= i - 1) {
                break;
            }
            int64_t i1 = wantt ? 0 : l, i2 = wantt ? n - 1 : i;
            if (aed != NULL && i - l + 1 >= EIG_AED_MIN && nsh == 0) {
                int64_t nd = aggressive_deflation(h, n, l, i, i1, i2, zt, wr, wi, aed, shr,
                                                  shi, &nsh);
                if (nd < 0) {
                    return -1;
                }
                if (nd > 0) {
                    i -= nd;
                    kdefl = 0;
                    continue;
                }
            }
            kdefl++;
            double rt[4];
            sweep_shifts(h, n, l, i, kdefl, shr, shi, &nsh, rt);
            double rt1r = rt[0], rt1i = rt[1], rt2r = rt[2], rt2i = rt[3], s;
            /* the sweep starts at m, below two consecutive small subdiagonal entries */
            double v[3];
            int64_t m;
            for (m = i - 2; m >= l; m--) {
                double h21s = AT(h, n, m + 1, m);
                double hmm = AT(h, n, m, m);
                s = fabs(hmm - rt2r) + fabs(rt2i) + fabs(h21s);
                h21s /= s;
                v[0] = h21s * AT(h, n, m, m + 1) + (hmm - rt1r) * ((hmm - rt2r) / s) -
                       rt1i * (rt2i / s);
                v[1] = h21s * (hmm + AT(h, n, m + 1, m + 1) - rt1r - rt2r);
                v[2] = h21s * AT(h, n, m + 2, m + 1);
                s = fabs(v[0]) + fabs(v[1]) + fabs(v[2]);
                v[0] /= s;
                v[1] /= s;
                v[2] /= s;
                if (m == l) {
                    break;
                }
                double h00 = fabs(AT(h, n, m, m - 1)) * (fabs(v[1]) + fabs(v[2]));
                double h01 = fabs(v[0]) * (fabs(AT(h, n, m - 1, m - 1)) + fabs(hmm) +
                                           fabs(AT(h, n, m + 1, m + 1)));
                if (h00 <= ulp * h01) {
                    break;
                }
            }
            francis_sweep(h, n, zt, l, m, i, i1, i2, v, sv);
        }
        if (its > itmax) {
            return (int32_t)(i + 1);
        }
        if (l == i) {
            wr[i] = AT(h, n, i, i);
            wi[i] = 0;
        } else {
            double cs, sn;
            standardize_2x2(&AT(h, n, i - 1, i - 1), &AT(h, n, i - 1, i), &AT(h, n, i, i - 1),
                            &AT(h, n, i, i), &cs, &sn, wr + i - 1, wi + i - 1);
            if (wantt) {
                rotate(&AT(h, n, i - 1, i + 1), &AT(h, n, i, i + 1), n - i - 1, 1, cs, sn);
                rotate(&AT(h, n, 0, i - 1), &AT(h, n, 0, i), i - 1, n, cs, sn);
                rotate(&AT(zt, n, i - 1, 0), &AT(zt, n, i, 0), n, 1, cs, sn);
            }
        }
        kdefl = 0;
        i = l - 1;
    }
    return 0;
}

/* ---- the operator ---- */

typedef struct EigJob {
    const double *a;   /* [B, n, n] float64 */
    int64_t n;
    double *wr, *wi;   /* [B, n] */
    double *vr, *vi;   /* [B, n, n], or NULL without the eigenvectors */
    int32_t *info;     /* [B] */
} EigJob;

static PTL_LOOP_CLONES_WIDE int
eig_matrix(void *ctx, int64_t i)
{
    const EigJob *j = ctx;
    int64_t n = j->n;
    int uv = j->vr != NULL;
    /* h, zt: n x n; d, w: n, (3 + EIG_COL_BLOCK) n; x, y: n complex each; aed */
    double *h = malloc(sizeof(double) *
                       (size_t)(2 * n * n + (8 + EIG_COL_BLOCK) * n + aed_scratch(n) + 1));
    if (h == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "linalg.eig: out of memory");
    }
    double *zt = uv ? h + n * n : NULL, *d = h + 2 * n * n, *w = d + n;
    double complex *x = (double complex *)(w + (3 + EIG_COL_BLOCK) * n), *y = x + n;
    double *aed = aed_scratch(n) > 0 ? (double *)(y + n) : NULL;
    double *wr = j->wr + i * n, *wi = j->wi + i * n;
    memcpy(h, j->a + i * n * n, sizeof(double) * (size_t)(n * n));
    int e = scale_unit(h, n);
    int64_t ilo, ihi;
    balance(h, n, d, &ilo, &ihi);
    hessenberg(h, n, ilo, ihi, zt, w);
    j->info[i] = schur_form(h, n, ilo, ihi, zt, wr, wi, w, aed);
    if (j->info[i] < 0) {
        free(h);
        return -1;
    }
    if (j->info[i] == 0 && uv &&
        ptl_linalg_eig_vectors(h, n, ilo, ihi, zt, d, wr, wi, j->vr + i * n * n,
                               j->vi + i * n * n, x, y) < 0) {
        free(h);
        return -1;
    }
    for (int64_t k = 0; k < n; k++) {
        wr[k] = ldexp(wr[k], e);
        wi[k] = ldexp(wi[k], e);
    }
    free(h);
    return 0;
}

/* _linalg_eig_split(Tensor self, bool compute_v=True)
 * -> (Tensor values_real, Tensor values_imag, Tensor vectors_real, Tensor vectors_imag)
 * [*, n, n] -> the eigenvalues values_real + i values_imag [*, n] and the eigenvectors
 * vectors_real + i vectors_imag [*, n, n] (column j for eigenvalue j, |column|_2 = 1; [0]
 * without compute_v), in A's dtype: linalg.eig's complex results as real and imaginary
 * parts.  See Note [Nonsymmetric eigensolver]. */
static int
linalg_eig_split_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *A = s[0].u.t, *t[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    int uv = s[1].u.b;
    if (!ptl_dtype_is_floating(A->dtype)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Unknown Complex ScalarType for %s",
                             ptl_dtype_legacy_name(A->dtype));
    }
    if ((t[0] = ptl_cast(A, PTL_DTYPE_FLOAT64)) == NULL) {
        return -1;
    }
    const double *a = (const double *)ptl_tensor_data(t[0]);
    for (int64_t k = 0; k < t[0]->numel; k++) {
        if (!isfinite(a[k])) {
            linalg_release_all(t, 6);
            return ptl_error_set(PTL_ERR_RUNTIME, "torch.linalg.eig: input tensor should not "
                                 "contain infs or NaNs.");
        }
    }
    if (linalg_check_square("linalg.eig", A) < 0 ||
        linalg_check_kernel_dtype("linalg_eig_out_cpu", A) < 0) {
        return linalg_release_all(t, 6);
    }
    int nb = A->dim - 2;
    int64_t n = A->sizes[nb], zero = 0;
    EigJob job = {.a = a, .n = n};
    for (int k = 1; k <= 4; k++) {
        t[k] = k <= 2 ? ptl_empty(nb + 1, A->sizes, PTL_DTYPE_FLOAT64, A->device)
             : uv     ? ptl_empty(A->dim, A->sizes, PTL_DTYPE_FLOAT64, A->device)
                      : ptl_empty(1, &zero, A->dtype, A->device);
        if (t[k] == NULL) {
            return linalg_release_all(t, 6);
        }
    }
    if ((t[5] = ptl_empty(nb, A->sizes, PTL_DTYPE_INT32, A->device)) == NULL) {
        return linalg_release_all(t, 6);
    }
    job.wr = (double *)ptl_tensor_data(t[1]);
    job.wi = (double *)ptl_tensor_data(t[2]);
    job.vr = uv ? (double *)ptl_tensor_data(t[3]) : NULL;
    job.vi = uv ? (double *)ptl_tensor_data(t[4]) : NULL;
    job.info = (int32_t *)ptl_tensor_data(t[5]);
    if (linalg_batch_run(linalg_batch_count(A, 2), 25 * n * n * n + 1, eig_matrix, &job) < 0 ||
        linalg_check_info("linalg.eig", t[5], nb > 0, PTL_ERR_LINALG,
                          "The algorithm failed to converge because the input matrix is "
                          "ill-conditioned or has too many repeated eigenvalues (error code: "
                          "%d).") < 0) {
        return linalg_release_all(t, 6);
    }
    for (int k = 1; k <= 4; k++) {
        if (linalg_cast_to(&t[k], A->dtype) < 0) {
            return linalg_release_all(t, 6);
        }
    }
    ptl_decref(t[0]);
    ptl_decref(t[5]);
    for (int k = 0; k < 4; k++) {
        s[k] = ptl_iv_tensor(t[k + 1]);
    }
    return 0;
}

static const PtlKernelReg linalg_eig_kernels[] = {
    {PTL_OP__linalg_eig_split, PTL_KEY_CPU, linalg_eig_split_cpu},
};
PTL_DEFINE_REGISTER(linalg_eig_kernels)
