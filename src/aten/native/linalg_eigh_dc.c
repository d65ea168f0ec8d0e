/* linalg_eigh_dc.c -- the symmetric tridiagonal eigenproblem for linalg_decomp.c's eigh: the
 * implicit QL (Note [Symmetric eigensolver] in linalg_decomp.c), the root-free QL of float32
 * eigvalsh, and divide and conquer for eigh with vectors (LAPACK's stedc does the same for
 * syevd; this is our own code, from the mathematics below).
 *
 * Note [Tridiagonal divide and conquer]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * eigh's vectors above LINALG_DC_LEAF rows (Cuppen's method): T = diag(T1, T2) + |b| v v^T,
 * b = e[n1 - 1], v = e_{n1-1} + sign(b) e_{n1} (T1's last and T2's first diagonal entries
 * less |b|).  With T1 = Z1 D1 Z1^T and T2 = Z2 D2 Z2^T solved (recursively; at most
 * LINALG_DC_LEAF rows by the QL iteration from I), T = Z (D + rho z z^T) Z^T, Z = diag(Z1,
 * Z2), z = Z^T v / sqrt 2 (|z| = 1), rho = 2 |b|.  The merge, on the poles d_i sorted:
 * - deflation, tol = 8 eps max(|d|max, rho): a pole with rho |z_i| <= tol keeps its value
 *   and vector; of two neighbouring kept poles whose rotation G (zeroing the first one's z)
 *   has |(d_j - d_i) c s| <= tol, the first is deflated (G rotates their vectors, their
 *   values become c^2 d_i + s^2 d_j and s^2 d_i + c^2 d_j).  Each drops a term of at most
 *   tol: backward stable.
 * - the k kept poles' roots of 1 + sum rho z_i^2 / (d_i - x) (secular_root), one in each gap
 *   and one above the last pole; each kept as an offset from its nearer pole, so that d_i -
 *   lambda_j, which the vectors divide by, is exact to a rounding even for a root at a
 *   pole's edge.
 * - z recomputed from the roots (Gu and Eisenstat: the z^ for which D + rho z^ z^T has the
 *   computed roots exactly, by Loewner's formula) and u_j = (D - lambda_j)^-1 z^ / |.|:
 *   orthogonal to working precision however close the roots (vectors from the computed z
 *   need not be).
 * - the merged vectors Z [kept columns] U by one GEMM per half of Z's rows: the kept
 *   columns ordered (first half only, both halves (rotated), second half only), each half
 *   multiplies only the columns not zero in it (about half the flops of one product).
 * Vectors are kept as rows (Z^T), as the QL keeps them.  eigh (linalg_decomp.c) scales T
 * by a power of two near its largest entry first (exact; the secular equation's terms stay
 * far from overflow) and leaves a T that is not finite to the QL.  At n = 256 the merges'
 * GEMMs are about n^3 flops and the rest O(k^2) a merge, where the QL's rotations were 3 n^3
 * outside the GEMM.  eigh's eigenvalues come from the merges, eigvalsh's from the QL: the
 * same to O(n eps |T|), no longer bit for bit above LINALG_DC_LEAF rows. */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "../../c10/cpu_features.h"
#include "../loops.h"
#include "gemm.h"
#include "linalg_impl.h"

#define EIGH_MAX_ITERATIONS 60
#define SWEEP_CHUNK 32
#define SECULAR_MAX_ITERATIONS 100
#define SQRT_HALF 0.70710678118654752440

/* half a LinalgVec8 or LinalgVec4: apply_sweep's vectors below AVX-512 */
typedef double EighHalf8 __attribute__((vector_size(32)));
typedef float EighHalf4 __attribute__((vector_size(32)));

/* in elements of T: both instances keep five int64_t arrays of n after the 3 n^2 + 7 n */
int64_t
ptl_linalg_tridiagonal_dc_scratch(int64_t n)
{
    return 3 * n * n + 18 * n + 8;
}

/* The eigenvalues (unsorted, into d) of the symmetric tridiagonal (d, e) without vectors, for
 * float32 eigvalsh: its float d and e in double, by the root-free QL of Pal, Walker and Kahan
 * on e's squares (LAPACK's sterf).  A step of tridiagonal_ql's sweep took a square root and
 * two divisions in a chain (half of float32 eigvalsh's time at n = 256); here, with q = e_i^2,
 * r = p + q and u = p (d_i - sigma) - q gamma, gamma' = u / r and p' = gamma'^2 / c = gamma'
 * (u / p) (c = p / r): two divisions side by side.  Squares of float32's range keep far from
 * double's limits, so T needs no scaling.  The same shift as tridiagonal_ql's, and deflation
 * at float32's eps (e_i^2 <= (FLT_EPSILON (|d_i| + |d_i+1|))^2).  0, -1 when an eigenvalue
 * does not converge, or 1 when T is not finite (left to tridiagonal_ql: e is then left squared
 * up to the first value that is not finite; the caller keeps its own copy). */
int
ptl_linalg_tridiagonal_values(double *d, double *e, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(d[i]) || !isfinite(e[i])) {
            return 1;
        }
        e[i] *= e[i];
    }
    for (int64_t l = 0; l < n; l++) {
        for (int iter = 0;; iter++) {
            int64_t m = l;
            while (m + 1 < n) {
                double t = FLT_EPSILON * (fabs(d[m]) + fabs(d[m + 1]));
                if (e[m] <= t * t) {
                    break;
                }
                m++;
            }
            if (m == l) {
                break;
            }
            if (iter == EIGH_MAX_ITERATIONS) {
                return -1;
            }
            /* the shift sigma: the eigenvalue of the leading 2 x 2 block nearer d[l] */
            double el = sqrt(e[l]), g = (d[l + 1] - d[l]) / (2 * el);
            double sigma = d[l] - el / (g + copysign(sqrt(g * g + 1), g));
            double c = 1, s = 0, gamma = d[m] - sigma, p = gamma * gamma;
            for (int64_t i = m - 1; i >= l; i--) {
                double q = e[i], r = p + q, u = p * (d[i] - sigma) - q * gamma;
                double inv = 1 / r, next = u * inv;
                if (i != m - 1) {
                    e[i + 1] = s * r;
                }
                d[i + 1] = gamma + (d[i] - next);
                double cn = p * inv;
                s = q * inv;
                p = p != 0 ? next * (u / p) : c * q;
                c = cn;
                gamma = next;
            }
            e[l] = s * p;
            d[l] = sigma + gamma;
        }
    }
    return 0;
}

/* NAME applies the rotations of one QL sweep to the rows of zt (n x n): for i from hi - 1
 * down to lo, (row i, row i + 1) <- (c_i row i - s_i row i+1, s_i row i + c_i row i+1).  Row
 * i + 1 of one rotation is row i of the next, so it is carried down the chain, SWEEP_CHUNK
 * columns at a time, in registers: a row is loaded once and stored once a rotation, not
 * twice each.  See Note [Symmetric eigensolver].  VEC is 64 bytes on AVX-512 and 32
 * elsewhere (DEFINE_TRIDIAGONAL_QL's VH): the AVX2 clone kept 64-byte vectors in memory
 * (float64 eigh 64x64 at 0.8 of PyTorch's speed on a Zen 3); the operations are lane-wise
 * and the bits the same at either width. */
#define DEFINE_APPLY_SWEEP(T, NAME, VEC)                                                      \
static PTL_LOOP_CLONES_WIDE void                                                              \
NAME(T *zt, int64_t n, int64_t lo, int64_t hi, const T *cs, const T *sn)                      \
{                                                                                             \
    int64_t k0 = 0;                                                                           \
    for (; k0 + SWEEP_CHUNK <= n; k0 += SWEEP_CHUNK) {                                        \
        VEC carry[SWEEP_CHUNK * sizeof(T) / sizeof(VEC)];                                     \
        memcpy(carry, zt + hi * n + k0, sizeof(carry));                                       \
        for (int64_t i = hi - 1; i >= lo; i--) {                                              \
            T *zi = zt + i * n + k0, c = cs[i], s = sn[i];                                    \
            for (size_t v = 0; v < sizeof(carry) / sizeof(VEC); v++) {                        \
                VEC t, u;                                                                     \
                memcpy(&t, zi + v * sizeof(VEC) / sizeof(T), sizeof(t));                      \
                u = s * t + c * carry[v];                                                     \
                carry[v] = c * t - s * carry[v];                                              \
                memcpy(zi + n + v * sizeof(VEC) / sizeof(T), &u, sizeof(u));                  \
            }                                                                                 \
        }                                                                                     \
        memcpy(zt + lo * n + k0, carry, sizeof(carry));                                       \
    }                                                                                         \
    if (k0 < n) {                                                                             \
        T carry[SWEEP_CHUNK];                                                                 \
        int64_t w = n - k0;                                                                   \
        memcpy(carry, zt + hi * n + k0, sizeof(T) * (size_t)w);                               \
        for (int64_t i = hi - 1; i >= lo; i--) {                                              \
            T *zi = zt + i * n + k0, *zj = zi + n, c = cs[i], s = sn[i];                      \
            for (int64_t k = 0; k < w; k++) {                                                 \
                T t = zi[k];                                                                  \
                zj[k] = s * t + c * carry[k];                                                 \
                carry[k] = c * t - s * carry[k];                                              \
            }                                                                                 \
        }                                                                                     \
        memcpy(zt + lo * n + k0, carry, sizeof(T) * (size_t)w);                               \
    }                                                                                         \
}

/* The implicit QL (Note [Symmetric eigensolver] in linalg_decomp.c) comes in two instances
 * from one template, DEFINE_TRIDIAGONAL_QL(T, SUF, F, EPS, VEC, VH, NORM_LO, NORM_HI): _f8
 * on double, whose bits it keeps, and _f4 on float (the f-suffixed functions, FLT_EPSILON in
 * the deflation, T scaled near 1 first), float32 eigh's.  VEC is eight doubles or sixteen
 * floats, VH half of VEC (apply_sweep's vectors below AVX-512);
 * rotation_norm's plain formula holds for NORM_LO < max(|f|, |g|) < NORM_HI.  In the
 * template's order: */
#define DEFINE_TRIDIAGONAL_QL(T, SUF, F, EPS, VEC, VH, NORM_LO, NORM_HI)                      \
    /* hypot(f, g), by the plain formula where f^2 + g^2 can neither overflow nor lose f's and \
     * g's digits to underflow (libm's hypot, careful everywhere, was a third of eigvalsh's time \
     * at n = 256). */                                                                        \
    static inline T                                                                           \
    rotation_norm_##SUF(T f, T g)                                                             \
    {                                                                                         \
        T af = fabs##F(f), ag = fabs##F(g), big = af > ag ? af : ag;                          \
        if (big > NORM_LO && big < NORM_HI) {                                                 \
            return sqrt##F(f * f + g * g);                                                    \
        }                                                                                     \
        return hypot##F(f, g);                                                                \
    }                                                                                         \
                                                                                              \
    DEFINE_APPLY_SWEEP(T, apply_sweep_##SUF##_w, VEC)                                         \
    DEFINE_APPLY_SWEEP(T, apply_sweep_##SUF##_h, VH)                                          \
                                                                                              \
    static void                                                                               \
    apply_sweep_##SUF(T *zt, int64_t n, int64_t lo, int64_t hi, const T *cs, const T *sn)     \
    {                                                                                         \
        (ptl_cpu_capability() >= PTL_CPU_AVX512 ? apply_sweep_##SUF##_w                       \
                                                 : apply_sweep_##SUF##_h)(zt, n, lo, hi,      \
                                                                          cs, sn);            \
    }                                                                                         \
                                                                                              \
    /* Diagonalises the symmetric tridiagonal (d, e) by implicit QL steps with Wilkinson's    \
     * shift: d becomes the eigenvalues (unsorted) and every sweep's rotations are applied to \
     * the rows of zt (n x n) when not NULL.  rot: 2n scratch.  0, or -1 when an eigenvalue   \
     * does not converge.  (linalg_eigh_dc.c's leaves too.) */                                \
    static int                                                                                \
    tridiagonal_ql_##SUF(T *d, T *e, T *zt, int64_t n, T *rot)                                \
    {                                                                                         \
        T *cs = rot, *sn = rot + n, floor = 0;                                                \
        int ex = 0;                                                                           \
        /* a coupling that is not finite (a nan or inf in A) makes its pair's values and      \
         * vectors nan and is cut: the deflation test below, false for a nan, had read it as  \
         * negligible and returned finite values for A with a nan (LAPACK gives nan) */        \
        for (int64_t i = 0; i + 1 < n; i++) {                                                 \
            if (!isfinite(e[i])) {                                                            \
                d[i] = d[i + 1] = (T)NAN;                                                     \
                e[i] = 0;                                                                     \
                for (int64_t k = 0; zt != NULL && k < n; k++) {                               \
                    zt[i * n + k] = zt[(i + 1) * n + k] = (T)NAN;                             \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
        if (sizeof(T) == sizeof(float)) {                                                     \
            /* float: T scaled by a power of two near its largest entry, and an e below 2^-60 \
             * of it negligible: a leaf of the divide and conquer whose entries were all near \
             * float's underflow had rotated subnormals without converging (double keeps its  \
             * bits: no scaling, and floor 0 decides nothing) */                              \
            T big = 0;                                                                        \
            for (int64_t i = 0; i < n; i++) {                                                 \
                big = fmax##F(big, fmax##F(fabs##F(d[i]), fabs##F(e[i])));                    \
            }                                                                                 \
            if (big > 0 && isfinite(big)) {                                                   \
                frexp##F(big, &ex);                                                           \
                for (int64_t i = 0; i < n; i++) {                                             \
                    d[i] = ldexp##F(d[i], -ex);                                               \
                    e[i] = ldexp##F(e[i], -ex);                                               \
                }                                                                             \
                floor = (T)0x1p-60;                                                           \
            }                                                                                 \
        }                                                                                     \
        for (int64_t l = 0; l < n; l++) {                                                     \
            for (int iter = 0;; iter++) {                                                     \
                int64_t m = l;                                                                \
                while (m + 1 < n &&                                                           \
                       fabs##F(e[m]) > EPS * (fabs##F(d[m]) + fabs##F(d[m + 1])) &&           \
                       (sizeof(T) != sizeof(float) || fabs##F(e[m]) > floor)) {               \
                    m++;                                                                      \
                }                                                                             \
                if (m == l) {                                                                 \
                    break;                                                                    \
                }                                                                             \
                if (iter == EIGH_MAX_ITERATIONS) {                                            \
                    return -1;                                                                \
                }                                                                             \
                /* the shift: the eigenvalue of the leading 2 x 2 block nearer d[l] */        \
                T g = (d[l + 1] - d[l]) / (2 * e[l]);                                         \
                T r = rotation_norm_##SUF(g, (T)1);                                           \
                g = d[m] - d[l] + e[l] / (g + copysign##F(r, g));                             \
                T s = 1, c = 1, p = 0;                                                        \
                int64_t i;                                                                    \
                for (i = m - 1; i >= l; i--) {                                                \
                    T f = s * e[i], b = c * e[i];                                             \
                    r = rotation_norm_##SUF(f, g);                                            \
                    e[i + 1] = r;                                                             \
                    if (r == 0) {                                                             \
                        /* the chase underflowed: split here */                               \
                        d[i + 1] -= p;                                                        \
                        e[m] = 0;                                                             \
                        break;                                                                \
                    }                                                                         \
                    s = f / r;                                                                \
                    c = g / r;                                                                \
                    g = d[i + 1] - p;                                                         \
                    r = (d[i] - g) * s + 2 * c * b;                                           \
                    p = s * r;                                                                \
                    d[i + 1] = g + p;                                                         \
                    g = c * r - b;                                                            \
                    cs[i] = c;                                                                \
                    sn[i] = s;                                                                \
                }                                                                             \
                if (zt != NULL && i + 1 < m) {                                                \
                    apply_sweep_##SUF(zt, n, i + 1, m, cs, sn);                               \
                }                                                                             \
                if (r == 0 && i >= l) {                                                       \
                    continue;                                                                 \
                }                                                                             \
                d[l] -= p;                                                                    \
                e[l] = g;                                                                     \
                e[m] = 0;                                                                     \
            }                                                                                 \
        }                                                                                     \
        for (int64_t i = 0; ex != 0 && i < n; i++) {                                          \
            d[i] = ldexp##F(d[i], ex);                                                        \
        }                                                                                     \
        return 0;                                                                             \
    }

DEFINE_TRIDIAGONAL_QL(double, f8, , DBL_EPSILON, LinalgVec8, EighHalf8, 0x1p-500, 0x1p500)
DEFINE_TRIDIAGONAL_QL(float, f4, f, FLT_EPSILON, LinalgVec4, EighHalf4, 0x1p-50f, 0x1p50f)
#undef DEFINE_TRIDIAGONAL_QL
#undef DEFINE_APPLY_SWEEP

/* The QL's instances (linalg_impl.h): eigh's (linalg_decomp.c) and the leaves' here */
int
ptl_linalg_tridiagonal_ql(double *d, double *e, double *zt, int64_t n, double *rot)
{
    return tridiagonal_ql_f8(d, e, zt, n, rot);
}

int
ptl_linalg_tridiagonal_ql_f32(float *d, float *e, float *zt, int64_t n, float *rot)
{
    return tridiagonal_ql_f4(d, e, zt, n, rot);
}

/* The divide and conquer comes in two instances from one template,
 * DEFINE_TRIDIAGONAL_DC(T, SUF, F, EPS, VEC, GEMM, QL): _f8 on double (math functions
 * without suffix, ptl_gemm_f64, ptl_linalg_tridiagonal_ql), the float64 eigh's, whose bits
 * it keeps, and _f4 on float (the f-suffixed functions, sixteen lanes in the secular sums
 * added as a tree), float32 eigh's (Note [Float64 linear algebra] in linalg_solve.c).  EPS,
 * the deflation's and the secular iteration's unit, is float's at a quarter of FLT_EPSILON:
 * at FLT_EPSILON graded matrices' eigenvalues were off by 8 eps |A| where PyTorch's ssyevd
 * is off by 3 to 4, as they are at a quarter, at no time measurable.  FLOOR bounds the
 * deflation's tolerance from below (T is scaled near 1): 0 for double (its bits), 2^-60 for
 * float, so that no merge solves a secular equation among poles whose gaps are near float's
 * underflow (the entries of ones(n, n)'s T fall to 2^-130).  In the template's order: */
#define DEFINE_TRIDIAGONAL_DC(T, SUF, F, EPS, FLOOR, VEC, GEMM, QL)                           \
    /* order[0..n) = 0..n-1 sorted by ascending v[order[.]] (insertion sort, stable). */      \
    static void                                                                               \
    sort_indices_##SUF(const T *v, int64_t n, int64_t *order)                                 \
    {                                                                                         \
        for (int64_t r = 0; r < n; r++) {                                                     \
            int64_t p = r;                                                                    \
            while (p > 0 && v[order[p - 1]] > v[r]) {                                         \
                order[p] = order[p - 1];                                                      \
                p--;                                                                          \
            }                                                                                 \
            order[p] = r;                                                                     \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    /* The leaf: (d, e) on n <= LINALG_DC_LEAF rows by the QL iteration from the identity; d  \
     * ascending, row c of zt (stride ldz, n columns) the eigenvector of d[c].  0, or -2 when \
     * the QL fails. */                                                                       \
    static int                                                                                \
    dc_leaf_##SUF(T *d, T *e, int64_t n, T *zt, int64_t ldz, T *work)                         \
    {                                                                                         \
        T *q = work, *rot = q + n * n, *tmp = rot + 2 * n;                                    \
        int64_t *order = (int64_t *)(tmp + n);                                                \
        memset(q, 0, sizeof(T) * (size_t)(n * n));                                            \
        for (int64_t i = 0; i < n; i++) {                                                     \
            q[i * n + i] = 1;                                                                 \
        }                                                                                     \
        if (QL(d, e, q, n, rot) < 0) {                                                        \
            return -2;                                                                        \
        }                                                                                     \
        sort_indices_##SUF(d, n, order);                                                      \
        for (int64_t c = 0; c < n; c++) {                                                     \
            tmp[c] = d[order[c]];                                                             \
            memcpy(zt + c * ldz, q + order[c] * n, sizeof(T) * (size_t)n);                    \
        }                                                                                     \
        memcpy(d, tmp, sizeof(T) * (size_t)n);                                                \
        return 0;                                                                             \
    }                                                                                         \
                                                                                              \
    /* *sum, *dsum = the sums over i in [i0, i1) of rz[i] / x_i and rz[i] / x_i^2, x_i =      \
     * (dk[i] - base) - tau: its lanes (eight doubles or sixteen floats), then their          \
     * total, then the tail (one order at every width). */                                    \
    static inline __attribute__((always_inline)) void                                         \
    secular_sums_##SUF(const T *dk, const T *rz, int64_t i0, int64_t i1, T base,              \
                 T tau, T *sum, T *dsum)                                                      \
    {                                                                                         \
        const int64_t lanes = (int64_t)(sizeof(VEC) / sizeof(T));                             \
        VEC sv = {0}, dv = {0};                                                               \
        int64_t i = i0;                                                                       \
        for (; i + lanes <= i1; i += lanes) {                                                 \
            VEC x, r;                                                                         \
            memcpy(&x, dk + i, sizeof(x));                                                    \
            memcpy(&r, rz + i, sizeof(r));                                                    \
            VEC inv = 1 / ((x - base) - tau), t = r * inv;                                    \
            sv += t;                                                                          \
            dv += t * inv;                                                                    \
        }                                                                                     \
        T s = lanes_sum_##SUF(sv), ds = lanes_sum_##SUF(dv);                                  \
        for (; i < i1; i++) {                                                                 \
            T inv = 1 / ((dk[i] - base) - tau), t = rz[i] * inv;                              \
            s += t;                                                                           \
            ds += t * inv;                                                                    \
        }                                                                                     \
        *sum = s;                                                                             \
        *dsum = ds;                                                                           \
    }                                                                                         \
                                                                                              \
    /* Root j of the secular equation f(x) = 1 + sum_i rz[i] / (dk[i] - x) (dk ascending, rz > 0, \
     * k terms): x in (dk[j], dk[j + 1]), or in (dk[k - 1], dk[k - 1] + sum rz) for j = k - 1. \
     * x is kept as an offset tau from the nearer pole, and delta[i] = dk[i] - x is formed as \
     * (dk[i] - pole) - tau, accurate even where x is very close to the pole.  Each step fits \
     * f's two sums, over the poles up to p1 and from p1 + 1, each by a constant plus one pole \
     * at its nearest (value and slope matched: the "middle way"), and takes the model's root, \
     * or bisects where that leaves the bracket kept by f's sign.  Returns x. */              \
    static PTL_LOOP_CLONES_WIDE T                                                             \
    secular_root_##SUF(const T *dk, const T *rz, int64_t k, int64_t j, T *delta)              \
    {                                                                                         \
        int64_t p1 = j < k - 1 ? j : k - 2, o;                                                \
        T lo, hi, tau, psi = 0, dpsi = 0, phi = 0, dphi = 0;                                  \
        int have = j < k - 1;                                                                 \
        if (have) {                                                                           \
            /* the sums at the gap's middle choose the pole and serve the first step */       \
            T mid = (dk[j + 1] - dk[j]) / 2;                                                  \
            secular_sums_##SUF(dk, rz, 0, p1 + 1, dk[j], mid, &psi, &dpsi);                   \
            secular_sums_##SUF(dk, rz, p1 + 1, k, dk[j], mid, &phi, &dphi);                   \
            int left = 1 + psi + phi >= 0;                                                    \
            o = left ? j : j + 1;                                                             \
            lo = left ? 0 : -mid;                                                             \
            hi = left ? mid : 0;                                                              \
            tau = left ? mid : -mid;                                                          \
        } else {                                                                              \
            o = k - 1;                                                                        \
            lo = 0;                                                                           \
            hi = 0;                                                                           \
            for (int64_t i = 0; i < k; i++) {                                                 \
                hi += rz[i];                                                                  \
            }                                                                                 \
            tau = hi / 2;                                                                     \
        }                                                                                     \
        T base = dk[o];                                                                       \
        for (int it = 0; it < SECULAR_MAX_ITERATIONS; it++) {                                 \
            if (!have) {                                                                      \
                secular_sums_##SUF(dk, rz, 0, p1 + 1, base, tau, &psi, &dpsi);                \
                secular_sums_##SUF(dk, rz, p1 + 1, k, base, tau, &phi, &dphi);                \
            }                                                                                 \
            have = 0;                                                                         \
            T w = 1 + psi + phi;                                                              \
            if (fabs##F(w) <= 8 * EPS * (1 + fabs##F(psi) + fabs##F(phi))) {                  \
                break;                                                                        \
            }                                                                                 \
            if (w > 0) {                                                                      \
                hi = tau;                                                                     \
            } else {                                                                          \
                lo = tau;                                                                     \
            }                                                                                 \
            /* the model c + s / (d1 - eta) + S / (d2 - eta) = 0 as c eta^2 - a eta + b = 0 */ \
            T d1 = (dk[p1] - base) - tau, d2 = (dk[p1 + 1] - base) - tau;                     \
            T s = dpsi * d1 * d1, big_s = dphi * d2 * d2, c = w - dpsi * d1 - dphi * d2;      \
            T a = c * (d1 + d2) + s + big_s, b = d1 * w * d2, cand[2];                        \
            int nc = 0;                                                                       \
            if (c == 0) {                                                                     \
                if (a != 0) {                                                                 \
                    cand[nc++] = b / a;                                                       \
                }                                                                             \
            } else {                                                                          \
                T disc = a * a - 4 * b * c;                                                   \
                T q = (a + copysign##F(sqrt##F(disc > 0 ? disc : 0), a)) / 2;                 \
                if (q != 0) {                                                                 \
                    cand[nc++] = b / q;                                                       \
                }                                                                             \
                cand[nc++] = q / c;                                                           \
            }                                                                                 \
            T next = (lo + hi) / 2;                                                           \
            for (int m = 0; m < nc; m++) {                                                    \
                T tn = tau + cand[m];                                                         \
                if (tn > lo && tn < hi) {                                                     \
                    next = tn;                                                                \
                    break;                                                                    \
                }                                                                             \
            }                                                                                 \
            /* a step at the last digits of tau: no evaluation can tell better */             \
            int last = fabs##F(next - tau) <= 2 * EPS * fabs##F(next);                        \
            tau = next;                                                                       \
            if (last) {                                                                       \
                break;                                                                        \
            }                                                                                 \
        }                                                                                     \
        for (int64_t i = 0; i < k; i++) {                                                     \
            delta[i] = (dk[i] - base) - tau;                                                  \
        }                                                                                     \
        return base + tau;                                                                    \
    }                                                                                         \
                                                                                              \
    /* The k kept poles dk (ascending) with z components zk, rz = rho zk^2: lam = the roots and \
     * row j of dt (k x k) the unit eigenvector of lam[j], from the recomputed z (into zh). */ \
    static PTL_LOOP_CLONES_WIDE void                                                          \
    merge_vectors_##SUF(const T *dk, const T *zk, const T *rz, int64_t k, T rho,              \
                  T *lam, T *dt, T *zh)                                                       \
    {                                                                                         \
        if (k <= 1) {                                                                         \
            if (k == 1) {                                                                     \
                lam[0] = dk[0] + rz[0];                                                       \
                dt[0] = 1;                                                                    \
            }                                                                                 \
            return;                                                                           \
        }                                                                                     \
        for (int64_t j = 0; j < k; j++) {                                                     \
            lam[j] = secular_root_##SUF(dk, rz, k, j, dt + j * k);                            \
        }                                                                                     \
        /* zh_i^2 = prod_j (lam_j - d_i) / (rho prod_{j != i} (d_j - d_i)), the factors paired as \
         * (lam_j - d_i) / (d_j - d_i) for j < i, (lam_j - d_i) / (d_j+1 - d_i) for j >= i */ \
        for (int64_t i = 0; i < k; i++) {                                                     \
            zh[i] = -dt[(k - 1) * k + i] / rho;                                               \
        }                                                                                     \
        for (int64_t j = 0; j < k - 1; j++) {                                                 \
            const T *r = dt + j * k;                                                          \
            for (int64_t i = 0; i <= j; i++) {                                                \
                zh[i] *= r[i] / (dk[i] - dk[j + 1]);                                          \
            }                                                                                 \
            for (int64_t i = j + 1; i < k; i++) {                                             \
                zh[i] *= r[i] / (dk[i] - dk[j]);                                              \
            }                                                                                 \
        }                                                                                     \
        for (int64_t i = 0; i < k; i++) {                                                     \
            zh[i] = copysign##F(sqrt##F(fabs##F(zh[i])), zk[i]);                              \
        }                                                                                     \
        for (int64_t j = 0; j < k; j++) {                                                     \
            T *u = dt + j * k, norm = 0;                                                      \
            for (int64_t i = 0; i < k; i++) {                                                 \
                u[i] = zh[i] / u[i];                                                          \
                norm += u[i] * u[i];                                                          \
            }                                                                                 \
            norm = 1 / sqrt##F(norm);                                                         \
            for (int64_t i = 0; i < k; i++) {                                                 \
                u[i] *= norm;                                                                 \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    /* Merges the two solved halves of ptl_linalg_tridiagonal_dc: d[0..n1) and d[n1..n)       \
     * ascending with their vectors as the rows of zt's two diagonal blocks, T = diag(T1, T2) + \
     * |beta| v v^T.  Leaves d ascending and the rows of zt (n x n block) the merged vectors. \
     * 0 or -1. */                                                                            \
    static PTL_LOOP_CLONES_WIDE int                                                           \
    dc_merge_##SUF(T *d, int64_t n, int64_t n1, T beta, T *zt, int64_t ldz,                   \
             T *work)                                                                         \
    {                                                                                         \
        int64_t n2 = n - n1;                                                                  \
        T *qg = work, *dt = qg + n * n, *wt = dt + n * n;                                     \
        T *dl = wt + n * n, *zl = dl + n, *dk = zl + n, *zk = dk + n;                         \
        T *rz = zk + n, *lam = rz + n, *zh = lam + n;                                         \
        int64_t *perm = (int64_t *)(zh + n), *side = perm + n, *keep = side + n;              \
        int64_t *defl = keep + n, *ord = defl + n;                                            \
        T rho = 2 * fabs##F(beta), sgn = beta < 0 ? -1 : 1, dmax = 0;                         \
        /* the halves' rows sorted by eigenvalue, as full rows of n; z = v in their basis */  \
        for (int64_t t = 0, a = 0, b = n1; t < n; t++) {                                      \
            int64_t src = (b >= n || (a < n1 && d[a] <= d[b])) ? a++ : b++;                   \
            T *row = qg + t * n;                                                              \
            perm[t] = src;                                                                    \
            dl[t] = d[src];                                                                   \
            dmax = fmax##F(dmax, fabs##F(dl[t]));                                             \
            memset(row, 0, sizeof(T) * (size_t)n);                                            \
            if (src < n1) {                                                                   \
                memcpy(row, zt + src * ldz, sizeof(T) * (size_t)n1);                          \
                zl[t] = row[n1 - 1] * (T)SQRT_HALF;                                           \
                side[t] = 0;                                                                  \
            } else {                                                                          \
                memcpy(row + n1, zt + src * ldz + n1, sizeof(T) * (size_t)n2);                \
                zl[t] = sgn * row[n1] * (T)SQRT_HALF;                                         \
                side[t] = 1;                                                                  \
            }                                                                                 \
        }                                                                                     \
        /* deflation: a negligible z component, or two close poles rotated into one */        \
        T tol = fmax##F(8 * EPS * fmax##F(dmax, rho), FLOOR);                                 \
        int64_t k = 0, nd = 0, p = -1;                                                        \
        for (int64_t t = 0; t < n; t++) {                                                     \
            if (rho * fabs##F(zl[t]) <= tol) {                                                \
                defl[nd++] = t;                                                               \
                continue;                                                                     \
            }                                                                                 \
            if (p >= 0) {                                                                     \
                T r = hypot##F(zl[p], zl[t]), c = zl[t] / r, s = zl[p] / r;                   \
                if (fabs##F((dl[t] - dl[p]) * c * s) <= tol) {                                \
                    T *xp = qg + p * n, *xt = qg + t * n, dp = dl[p], dq = dl[t];             \
                    for (int64_t i = 0; i < n; i++) {                                         \
                        T x = xp[i], y = xt[i];                                               \
                        xp[i] = c * x - s * y;                                                \
                        xt[i] = s * x + c * y;                                                \
                    }                                                                         \
                    dl[p] = c * c * dp + s * s * dq;                                          \
                    dl[t] = s * s * dp + c * c * dq;                                          \
                    zl[t] = r;                                                                \
                    zl[p] = 0;                                                                \
                    side[t] = side[p] == side[t] ? side[t] : 2;                               \
                    defl[nd++] = p;                                                           \
                    p = t;                                                                    \
                    continue;                                                                 \
                }                                                                             \
                keep[k++] = p;                                                                \
            }                                                                                 \
            p = t;                                                                            \
        }                                                                                     \
        if (p >= 0) {                                                                         \
            keep[k++] = p;                                                                    \
        }                                                                                     \
        /* the secular equation's roots, then z recomputed from them (Gu and Eisenstat) so that \
         * the vectors u_j = D_j^-1 z^ are orthogonal to working precision */                 \
        for (int64_t i = 0; i < k; i++) {                                                     \
            dk[i] = dl[keep[i]];                                                              \
            zk[i] = zl[keep[i]];                                                              \
            rz[i] = rho * zk[i] * zk[i];                                                      \
        }                                                                                     \
        merge_vectors_##SUF(dk, zk, rz, k, rho, lam, dt, zh);                                 \
        /* merged rows = U^T (kept rows), the kept rows ordered by support (first half only,  \
         * both, second half only) so that each half of the columns is one GEMM over the rows \
         * not zero there */                                                                  \
        int64_t na = 0, nm = 0, q = 0;                                                        \
        for (int pass = 0; pass < 3; pass++) {                                                \
            int want = pass == 0 ? 0 : pass == 1 ? 2 : 1;                                     \
            for (int64_t i = 0; i < k; i++) {                                                 \
                if (side[keep[i]] == want) {                                                  \
                    ord[q++] = i;                                                             \
                    na += want == 0;                                                          \
                    nm += want == 2;                                                          \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
        /* the kept rows in that order into zt (free: qg holds the halves' rows), U^T's columns \
         * permuted to match, row by row through zh (done with) */                            \
        T *qnd = zt;                                                                          \
        for (int64_t c = 0; c < k; c++) {                                                     \
            memcpy(qnd + c * ldz, qg + keep[ord[c]] * n, sizeof(T) * (size_t)n);              \
        }                                                                                     \
        for (int64_t j = 0; j < k; j++) {                                                     \
            T *u = dt + j * k;                                                                \
            for (int64_t c = 0; c < k; c++) {                                                 \
                zh[c] = u[ord[c]];                                                            \
            }                                                                                 \
            memcpy(u, zh, sizeof(T) * (size_t)k);                                             \
        }                                                                                     \
        if (GEMM(k, n1, na + nm, 1.0, dt, k, 1, qnd, ldz, 1, 0.0, wt, n) < 0 ||               \
            GEMM(k, n2, k - na, 1.0, dt + na, k, 1, qnd + na * ldz + n1, ldz, 1, 0.0,         \
                         wt + n1, n) < 0) {                                                   \
            return -1;                                                                        \
        }                                                                                     \
        /* the eigenvalues ascending: the roots (ascending) merged with the deflated values */ \
        for (int64_t i = 0; i < nd; i++) {                                                    \
            zh[i] = dl[defl[i]];                                                              \
        }                                                                                     \
        sort_indices_##SUF(zh, nd, ord);                                                      \
        for (int64_t c = 0, a = 0, b = 0; c < n; c++) {                                       \
            if (b >= nd || (a < k && lam[a] <= zh[ord[b]])) {                                 \
                d[c] = lam[a];                                                                \
                memcpy(zt + c * ldz, wt + a * n, sizeof(T) * (size_t)n);                      \
                a++;                                                                          \
            } else {                                                                          \
                d[c] = zh[ord[b]];                                                            \
                memcpy(zt + c * ldz, qg + defl[ord[b]] * n, sizeof(T) * (size_t)n);           \
                b++;                                                                          \
            }                                                                                 \
        }                                                                                     \
        return 0;                                                                             \
    }                                                                                         \
                                                                                              \
    /* The eigenvalues (d, ascending) and eigenvectors (the rows of zt, stride ldz) of the    \
     * symmetric tridiagonal (d, e) on n rows, by Cuppen's divide and conquer.  work:         \
     * ptl_linalg_tridiagonal_dc_scratch(n) doubles.  0, -1 (error set) or -2 (a leaf's QL did \
     * not converge). */                                                                      \
    static int                                                                                \
    tridiagonal_dc_##SUF(T *d, T *e, int64_t n, T *zt, int64_t ldz, T *work)                  \
    {                                                                                         \
        if (n <= LINALG_DC_LEAF) {                                                            \
            return dc_leaf_##SUF(d, e, n, zt, ldz, work);                                     \
        }                                                                                     \
        int64_t n1 = n / 2;                                                                   \
        T beta = e[n1 - 1];                                                                   \
        d[n1 - 1] -= fabs##F(beta);                                                           \
        d[n1] -= fabs##F(beta);                                                               \
        int rc = tridiagonal_dc_##SUF(d, e, n1, zt, ldz, work);                               \
        if (rc == 0) {                                                                        \
            rc = tridiagonal_dc_##SUF(d + n1, e + n1, n - n1, zt + n1 * ldz + n1, ldz,        \
                                    work);                                                    \
        }                                                                                     \
        return rc == 0 ? dc_merge_##SUF(d, n, n1, beta, zt, ldz, work) : rc;                  \
    }

DEFINE_TRIDIAGONAL_DC(double, f8, , DBL_EPSILON, 0.0, LinalgVec8, ptl_gemm_f64,
                      ptl_linalg_tridiagonal_ql)
DEFINE_TRIDIAGONAL_DC(float, f4, f, FLT_EPSILON / 4, 0x1p-60f, LinalgVec4, ptl_gemm_f32,
                      ptl_linalg_tridiagonal_ql_f32)
#undef DEFINE_TRIDIAGONAL_DC

int
ptl_linalg_tridiagonal_dc(double *d, double *e, int64_t n, double *zt, int64_t ldz,
                          double *work)
{
    return tridiagonal_dc_f8(d, e, n, zt, ldz, work);
}

int
ptl_linalg_tridiagonal_dc_f32(float *d, float *e, int64_t n, float *zt, int64_t ldz,
                              float *work)
{
    return tridiagonal_dc_f4(d, e, n, zt, ldz, work);
}
