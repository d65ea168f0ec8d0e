/* linalg_eig_vectors.c -- the eigenvectors of a real square matrix from its real Schur
 * form (step 5 of Note [Nonsymmetric eigensolver] in linalg_eig.c: LAPACK's trevc and the
 * normalisation of geev), for _linalg_eig_split.  Mirrors the part of
 * ATen/native/BatchLinearAlgebra.cpp's linalg_eig that LAPACK's geev does after hseqr. */
#include <complex.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "../../c10/error.h"
#include "../loops.h"
#include "gemm.h"
#include "linalg_eig_impl.h"

/* the back-substitution keeps its entries below this (trevc's overflow guard) */
#define EIG_BIG 1e100

#define AT(M, N, R, C) ((M)[(R) * (N) + (C)])

static double
cabs1(double complex x)
{
    return fabs(creal(x)) + fabs(cimag(x));
}

/* Multiplies x[0..len) by f. */
static void
cscale(double complex *x, int64_t len, double f)
{
    for (int64_t k = 0; k < len; k++) {
        x[k] *= f;
    }
}

/* Solves the complex 2 x 2 system m y = r in place of r by elimination with complete
 * pivoting, pivots below smin replaced by smin (laln2). */
static void
solve_2x2(double complex m[2][2], double complex r[2], double smin)
{
    int pr = 0, pc = 0;
    for (int a = 0; a < 2; a++) {
        for (int b = 0; b < 2; b++) {
            if (cabs1(m[a][b]) > cabs1(m[pr][pc])) {
                pr = a;
                pc = b;
            }
        }
    }
    double complex p = m[pr][pc], off = m[pr][1 - pc], low = m[1 - pr][pc];
    double complex u = m[1 - pr][1 - pc], r0 = r[pr], r1 = r[1 - pr];
    if (cabs1(p) < smin) {
        p = smin;
    }
    double complex f = low / p;
    u -= f * off;
    r1 -= f * r0;
    if (cabs1(u) < smin) {
        u = smin;
    }
    double complex y1 = r1 / u, y0 = (r0 - off * y1) / p;
    r[pc] = y0;
    r[1 - pc] = y1;
}

/* sum t[c] x[c] over len entries, in four interleaved partial sums of each part (one chain
 * of dependent adds waited on each add: 5% of eig's time at n = 256) */
static inline __attribute__((always_inline)) double complex
dot_real_complex(const double *t, const double complex *x, int64_t len)
{
    const double *xd = (const double *)x;
    double re[4] = {0}, im[4] = {0}, sr = 0, si = 0;
    int64_t c = 0;
    for (; c + 4 <= len; c += 4) {
        for (int q = 0; q < 4; q++) {
            re[q] += t[c + q] * xd[2 * (c + q)];
            im[q] += t[c + q] * xd[2 * (c + q) + 1];
        }
    }
    for (; c < len; c++) {
        sr += t[c] * xd[2 * c];
        si += t[c] * xd[2 * c + 1];
    }
    return CMPLX((re[0] + re[2]) + (re[1] + re[3]) + sr, (im[0] + im[2]) + (im[1] + im[3]) + si);
}

/* The eigenvector x[0..kend] of the quasi-triangular t (n x n) for the eigenvalue lam of
 * the block at k0..kend (x[k0..kend] set already), by back-substitution.  See Note
 * [Nonsymmetric eigensolver]. */
static PTL_LOOP_CLONES_WIDE void
back_substitute(const double *t, int64_t n, double complex lam, int64_t k0, int64_t kend,
                double complex *x)
{
    const double smin = fmax(DBL_EPSILON * cabs1(lam), DBL_MIN * ((double)n / DBL_EPSILON));
    for (int64_t j = k0 - 1; j >= 0; j--) {
        int pair = j > 0 && AT(t, n, j, j - 1) != 0;
        int64_t top = pair ? j - 1 : j;
        double complex r[2] = {0, 0};
        for (int64_t row = top; row <= j; row++) {
            r[row - top] = -dot_real_complex(t + row * n + j + 1, x + j + 1, kend - j);
        }
        /* keep the solution finite: its size is at most |r| / smin^2 */
        double rmax = fmax(cabs1(r[0]), cabs1(r[1]));
        if (rmax > smin * EIG_BIG) {
            cscale(x + j + 1, kend - j, 1 / rmax);
            r[0] /= rmax;
            r[1] /= rmax;
        }
        if (pair) {
            double complex m[2][2] = {{AT(t, n, j - 1, j - 1) - lam, AT(t, n, j - 1, j)},
                                      {AT(t, n, j, j - 1), AT(t, n, j, j) - lam}};
            solve_2x2(m, r, smin);
            x[j - 1] = r[0];
            x[j] = r[1];
        } else {
            double complex d = AT(t, n, j, j) - lam;
            if (cabs1(d) < smin) {
                d = smin;
            }
            x[j] = r[0] / d;
        }
        double xmax = fmax(cabs1(x[j]), cabs1(x[top]));
        if (xmax > EIG_BIG) {
            cscale(x + top, kend - top + 1, 1 / xmax);
        }
        j = top;
    }
}

/* The eigenvectors of A from its Schur form t = Z^T B Z (zt = Z^T; B = D^-1 A D balanced,
 * d = D): column j of vr + i vi (n x n, row-major) for eigenvalue wr[j] + i wi[j].  x, y: n
 * complex scratch each.  The eigenvectors x of t go into the columns of vi (a pair's real
 * and imaginary parts into its two columns, as trevc stores them), vr = Z vi by the GEMM,
 * and then each column is finished on its own.  0, or -1 with the error set. */
PTL_LOOP_CLONES_WIDE int
ptl_linalg_eig_vectors(const double *t, int64_t n, int64_t ilo, int64_t ihi, const double *zt,
                       const double *d, const double *wr, const double *wi, double *vr,
                       double *vi, double complex *x, double complex *y)
{
    for (int64_t k0 = 0; k0 < n; k0++) {
        int pair = wi[k0] != 0;
        int64_t kend = pair ? k0 + 1 : k0;
        double complex lam = CMPLX(wr[k0], wi[k0]);
        if (pair) {
            /* the block [a b; c a], b c < 0: (1, i wi / b) or (-wi / c, i) */
            double b = AT(t, n, k0, k0 + 1), c = AT(t, n, k0 + 1, k0);
            if (fabs(b) >= fabs(c)) {
                x[k0] = 1;
                x[k0 + 1] = CMPLX(0, wi[k0] / b);
            } else {
                x[k0] = -wi[k0] / c;
                x[k0 + 1] = CMPLX(0, 1);
            }
        } else {
            x[k0] = 1;
        }
        back_substitute(t, n, lam, k0, kend, x);
        for (int64_t r = 0; r < n; r++) {
            AT(vi, n, r, k0) = r <= kend ? creal(x[r]) : 0;
            if (pair) {
                AT(vi, n, r, k0 + 1) = r <= kend ? cimag(x[r]) : 0;
            }
        }
        k0 = kend;
    }
    if (ptl_gemm_f64(n, n, n, 1.0, zt, 1, n, vi, n, 1, 0.0, vr, n) < 0) {
        return -1;
    }
    /* v = P D Z x (gebak), then |v|_2 = 1, a row at a time for all the columns (column by
     * column, every pass strode across the rows).  Until the end a pair's real and
     * imaginary parts stay in its two columns of vr. */
    double *tmp = (double *)x, *cmax = (double *)x, *ss = cmax + n, *bigsq = (double *)y;
    int64_t *big = (int64_t *)(bigsq + n);
    for (int64_t r = ilo; r <= ihi; r++) {
        for (int64_t c = 0; c < n; c++) {
            AT(vr, n, r, c) *= d[r];
        }
    }
    for (int64_t r = 0; r < n; r++) {
        int64_t p = r < ilo ? ilo - 1 - r : r;   /* ilo-1 down to 0, then ihi+1 up */
        if ((p < ilo || p > ihi) && (int64_t)d[p] != p) {
            memcpy(tmp, vr + p * n, sizeof(double) * (size_t)n);
            memcpy(vr + p * n, vr + (int64_t)d[p] * n, sizeof(double) * (size_t)n);
            memcpy(vr + (int64_t)d[p] * n, tmp, sizeof(double) * (size_t)n);
        }
    }
    for (int64_t c = 0; c < n; c++) {
        cmax[c] = 0;
        ss[c] = 0;
        bigsq[c] = -1;
        big[c] = 0;
    }
    for (int64_t r = 0; r < n; r++) {
        const double *row = vr + r * n;
        for (int64_t c = 0; c < n; c += wi[c] != 0 ? 2 : 1) {
            double a = fabs(row[c]) + (wi[c] != 0 ? fabs(row[c + 1]) : 0);
            cmax[c] = fmax(cmax[c], a);
        }
    }
    for (int64_t r = 0; r < n; r++) {
        const double *row = vr + r * n;
        for (int64_t c = 0; c < n; c += wi[c] != 0 ? 2 : 1) {
            double a = row[c] / cmax[c], b = (wi[c] != 0 ? row[c + 1] : 0) / cmax[c];
            ss[c] += a * a + b * b;
        }
    }
    for (int64_t c = 0; c < n; c += wi[c] != 0 ? 2 : 1) {
        ss[c] = 1 / (cmax[c] * sqrt(ss[c]));
    }
    for (int64_t r = 0; r < n; r++) {
        double *row = vr + r * n;
        for (int64_t c = 0; c < n; c += wi[c] != 0 ? 2 : 1) {
            double a = row[c] * ss[c], b = (wi[c] != 0 ? row[c + 1] : 0) * ss[c];
            row[c] = a;
            if (wi[c] != 0) {
                row[c + 1] = b;
            }
            if (a * a + b * b > bigsq[c]) {
                bigsq[c] = a * a + b * b;
                big[c] = r;
            }
        }
    }
    /* geev's lartg: a pair's largest component becomes real, keeping its real part's sign
     * (the rotation's cosine and sine kept in cmax and ss) */
    for (int64_t c = 0; c < n; c += wi[c] != 0 ? 2 : 1) {
        if (wi[c] != 0) {
            double fr = AT(vr, n, big[c], c), gi = AT(vr, n, big[c], c + 1), rr = hypot(fr, gi);
            cmax[c] = fabs(fr) / rr;
            ss[c] = gi / copysign(rr, fr);
        }
    }
    for (int64_t r = 0; r < n; r++) {
        double *row = vr + r * n, *rowi = vi + r * n;
        for (int64_t c = 0; c < n; c++) {
            if (wi[c] == 0) {
                rowi[c] = 0;
                continue;
            }
            double xv = row[c], yv = row[c + 1];
            double re = cmax[c] * xv + ss[c] * yv, im = cmax[c] * yv - ss[c] * xv;
            if (big[c] == r) {
                im = 0;
            }
            row[c] = re;
            row[c + 1] = re;
            rowi[c] = im;
            rowi[c + 1] = -im;
            c++;
        }
    }
    return 0;
}

