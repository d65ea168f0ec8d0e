/* linalg_solve.c -- the LU family: linalg_lu_factor(_ex), _linalg_solve_ex / linalg_solve(_ex),
 * linalg_inv(_ex) / inverse, _linalg_det / linalg_det / det, _linalg_slogdet /
 * linalg_slogdet / slogdet and linalg_solve_triangular.  Mirrors
 * ATen/native/BatchLinearAlgebra.cpp and LinearAlgebra.cpp, which call LAPACK's getrf,
 * getrs and trsm; pytorchlite computes them itself.
 *
 * Note [Float64 linear algebra]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The dense factorisations (here, linalg_decomp.c and svd.c) work on contiguous copies of
 * their inputs (broadcasting batch dims where the op broadcasts), one row-major matrix at a
 * time through linalg_batch_run (the matrices of a batch spread over the thread pool,
 * without the GIL).  The working dtype:
 *
 * - float32 inputs of the LU family here (lu_factor, solve, inv, det, slogdet,
 *   solve_triangular), of Cholesky, QR and eigh/eigvalsh (linalg_decomp.c,
 *   linalg_eigh_dc.c), float32 singular vectors (svd and pinv, svd.c) and lstsq's QR
 *   drivers (linalg_lstsq.c) are factored in float32: the same code, instantiated for float
 *   (DEFINE_LU_KERNELS, DEFINE_CHOLESKY, DEFINE_QR, DEFINE_EIGH, DEFINE_TRIDIAGONAL_QL,
 *   DEFINE_TRIDIAGONAL_DC, DEFINE_SVD_KERNELS, DEFINE_SVD_VECTORS and DEFINE_LSTSQ), with
 *   float panels and the float32 GEMM, as PyTorch's LAPACK sgetrf, sgetrs, strsm, spotrf,
 *   sgeqrf/sorgqr, ssyevd and sgesdd do (the SVD's bidiagonal QR steps, lstsq's rank proof
 *   and float32 eigvalsh's root-free QL on the float tridiagonal stay in double: Note
 *   [Singular vectors], Note [Least squares by one QR], Note [Symmetric eigensolver]).
 *   That halves the memory traffic and doubles the GEMM's lanes; the results then carry
 *   float32 accuracy (errors of order n eps_f32 cond(A), as PyTorch's; eigh's eigenvalues
 *   within a few eps_f32 |A|), not float64's.  Only det and slogdet accumulate the product
 *   of U's diagonal in double.  solve_triangular works in the promoted dtype of A and B.
 * - Everything else computes in float64 and casts the results back to the input's dtype:
 *   eig and svdvals/matrix_rank, so their float32 results keep float64 accuracy (and
 *   float64's cost).
 * - Complex matrices take linalg_complex.c's kernels (Note [Complex linear algebra]): the
 *   LU family here runs its checks and outputs on them with complex64/complex128 working
 *   copies (lu_kernel), slogdet's logabsdet real.
 *
 * The float64 instances are the code they were before float32 had its own (the same bits;
 * lstsq's back substitution for one right-hand side now sums each row in eight partial
 * sums, a rounding's difference).
 * Singular and non-positive-definite inputs set an `info` per matrix as LAPACK does, in
 * either dtype: the _ex ops return it, the others raise torch.linalg.LinAlgError
 * (PTL_ERR_LINALG) with PyTorch's text for the first bad matrix.
 *
 * LU is Doolittle's with partial pivoting (LAPACK's getrf, blocked): L unit lower, U upper,
 * stored together in LU, pivots 1-based (row i was swapped with row pivots[i] - 1).  A zero
 * pivot does not stop the factorisation; info is the 1-based index of the first one. */
#include <math.h>
#include <stdlib.h>

#include "../../c10/cpu_features.h"
#include "gemm.h"
#include "../loops.h"
#include "linalg_impl.h"
#include "linalg_lu.h"

/* Note [Blocked LU and triangular solves]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Right-looking, in column blocks of LINALG_BLOCK (LAPACK's getrf and blocked trsm): the
 * panel (the block's columns, from its diagonal down) is factored unblocked, swapping whole
 * rows; U12 = L11^-1 A12 by row axpys; the trailing matrix loses L21 U12 in one GEMM.  A
 * triangular solve goes a block of rows at a time: the rows already solved are subtracted
 * from the block's right-hand sides with the GEMM, then the block's triangle is solved by
 * substitution.  Matrices of one block take the unblocked loops alone.  Most of the n^3/3
 * (LU) and n^2 nrhs (solves) multiply-adds then run in the GEMM's tiles; unblocked, inv of
 * a 256 x 256 matrix took 2x LAPACK's time. */
#define LINALG_BLOCK 64

/* Note [Triangular substitution in solving order]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * tri_solve takes one of three paths by the number of right-hand sides.  Every row is
 * solved in solving order (ascending rows for a lower triangle, descending for an upper
 * one): its right-hand side less the unknowns solved before it, then divided by its diagonal.
 *
 * - One (tri_one), in one pass: TRI_GROUP rows at a time, each row's dot product with the
 *   unknowns solved before the group in vector lanes (the triangle's row and the unknowns
 *   are both contiguous; the group's sums independent chains), then the group's own
 *   triangle in solving order.  Blocked, the earlier blocks' share was a matrix-vector
 *   product (GEMV's float64 dot product is baseline SSE2 code) and each diagonal block a
 *   scalar substitution: 256 x 256 float64 took 0.74-0.82x PyTorch's time.
 * - From two to TRI_NARROW_RHS - 1 (tri_narrow), in one pass too: each row subtracts every
 *   unknown solved before it in the order they were solved, a vector of columns at a time
 *   (32 bytes when all the columns fit or the CPU has no AVX-512, else 64), TRI_GROUP rows'
 *   sums in registers over the rows solved before the group (independent chains), then the
 *   group's own triangle.  (The AVX2 clone kept eight 64-byte sums in memory: 256 x 256
 *   float64 with 8 to 63 columns ran at 0.23-0.34 of PyTorch's speed on a Zen 3; the
 *   columns' operations do not depend on the vector's width, nor do the bits.)
 *   Blocked, 4 to 8 columns had cost as much as 64: the GEMM packs the triangle's blocks for
 *   a thin product, and a block's rows went one after the other across the columns through
 *   memory (a load, a subtraction and a store a step, the store on the chain).
 * - TRI_NARROW_RHS and more: blocked (Note [Blocked LU and triangular solves]), a block's
 *   rows one after the other across the columns in vector lanes, each subtracting the
 *   block's unknowns in solving order.
 *
 * From two right-hand sides on, each value sees the same operations in the same order
 * whatever the number of columns, but for the GEMM's share of a blocked solve: a one-block
 * solve's bits depend neither on the number of columns nor on the group, nor do any solve's
 * from 2 to TRI_NARROW_RHS - 1 columns.  One right-hand side sums in lanes: a rounding's
 * difference from the same column solved among others.  The one-pass paths changed the bits
 * of one column and, past one block, of 2 to TRI_NARROW_RHS - 1 columns (the GEMM's share
 * was summed in its tiles' order), by roundings.  256 x 256, one thread, Zen 4: float32 8
 * columns 37.6 -> 9.5 us, 32 45.2 -> 26.4, 63 106.5 -> 51.4; float64 2 23.5 -> 10.2, 8 46.8
 * -> 14.6; one column float32 6.3 -> 4.0, float64 11.6 -> 4.7. */
#define TRI_GROUP 8
#define TRI_NARROW_RHS 64

/* tri_one's and tri_narrow's vectors (of a row or of right-hand side columns): eight
 * doubles or sixteen floats, or half as many below AVX-512 and for tri_narrow when all the
 * columns fit; tri_narrow's copy of b on the stack up to TRI_NARROW_STACK bytes */
typedef double TriVec_f8 __attribute__((vector_size(64)));
typedef float TriVec_f4 __attribute__((vector_size(64)));
typedef double TriHalf_f8 __attribute__((vector_size(32)));
typedef float TriHalf_f4 __attribute__((vector_size(32)));
#define TRI_NARROW_STACK 16384

/* tri_narrow: tri_solve for 1 < nrhs < TRI_NARROW_RHS in one pass, VT (a vector of T) wide
 * (Note [Triangular substitution in solving order]): b's rows in solving order in a copy
 * padded to whole vectors, then for each vector of columns, TRI_GROUP rows at a time, their
 * sums over every row solved before the group in TRI_GROUP registers, then the group's own
 * triangle.  0, or -1 with the error set. */
#define DEFINE_TRI_NARROW(T, VT, SUF)                                                         \
    static PTL_LOOP_CLONES_WIDE int tri_narrow_##SUF(const T *t, T *b, int64_t n,             \
                                                     int64_t nrhs, int upper, int unit)       \
    {                                                                                         \
        enum { LANES = sizeof(VT) / sizeof(T) };                                              \
        const int64_t dir = upper ? -1 : 1, first = upper ? n - 1 : 0;                        \
        const int64_t nv = (nrhs + LANES - 1) / LANES;                                        \
        VT xs[TRI_NARROW_STACK / sizeof(VT)], *x = xs;                                        \
        if (n * nv > (int64_t)(sizeof(xs) / sizeof(xs[0])) &&                                 \
            (x = aligned_alloc(sizeof(VT), sizeof(VT) * (size_t)(n * nv))) == NULL) {         \
            return ptl_error_set(PTL_ERR_MEMORY, "linalg.solve_triangular: out of memory");   \
        }                                                                                     \
        for (int64_t s = 0; s < n; s++) {                                                     \
            T *xr = (T *)(x + s * nv);                                                        \
            memcpy(xr, b + (first + dir * s) * nrhs, sizeof(T) * (size_t)nrhs);               \
            memset(xr + nrhs, 0, sizeof(T) * (size_t)(nv * LANES - nrhs));                    \
        }                                                                                     \
        for (int64_t v = 0; v < nv; v++) {                                                    \
            VT *xv = x + v;                                                                   \
            int64_t s = 0;                                                                    \
            for (; s + TRI_GROUP <= n; s += TRI_GROUP) {                                      \
                const T *tr[TRI_GROUP];                                                       \
                VT acc[TRI_GROUP];                                                            \
                for (int r = 0; r < TRI_GROUP; r++) {                                         \
                    tr[r] = t + (first + dir * (s + r)) * n;                                  \
                    acc[r] = xv[(s + r) * nv];                                                \
                }                                                                             \
                for (int64_t q = 0, k = first; q < s; q++, k += dir) {                        \
                    VT xq = xv[q * nv];                                                       \
                    for (int r = 0; r < TRI_GROUP; r++) {                                     \
                        acc[r] -= tr[r][k] * xq;                                              \
                    }                                                                         \
                }                                                                             \
                for (int r = 0; r < TRI_GROUP; r++) {                                         \
                    for (int q = 0; q < r; q++) {                                             \
                        acc[r] -= tr[r][first + dir * (s + q)] * acc[q];                      \
                    }                                                                         \
                    if (!unit) {                                                              \
                        acc[r] /= tr[r][first + dir * (s + r)];                               \
                    }                                                                         \
                    xv[(s + r) * nv] = acc[r];                                                \
                }                                                                             \
            }                                                                                 \
            for (; s < n; s++) {                                                              \
                const T *ts = t + (first + dir * s) * n;                                      \
                VT acc = xv[s * nv];                                                          \
                for (int64_t q = 0, k = first; q < s; q++, k += dir) {                        \
                    acc -= ts[k] * xv[q * nv];                                                \
                }                                                                             \
                if (!unit) {                                                                  \
                    acc /= ts[first + dir * s];                                               \
                }                                                                             \
                xv[s * nv] = acc;                                                             \
            }                                                                                 \
        }                                                                                     \
        for (int64_t s = 0; s < n; s++) {                                                     \
            memcpy(b + (first + dir * s) * nrhs, x + s * nv, sizeof(T) * (size_t)nrhs);       \
        }                                                                                     \
        if (x != xs) {                                                                        \
            free(x);                                                                          \
        }                                                                                     \
        return 0;                                                                             \
    }

DEFINE_TRI_NARROW(double, TriVec_f8, f8)
DEFINE_TRI_NARROW(double, TriHalf_f8, f8h)
DEFINE_TRI_NARROW(float, TriVec_f4, f4)
DEFINE_TRI_NARROW(float, TriHalf_f4, f4h)
#undef DEFINE_TRI_NARROW

/* tri_one: tri_solve for one right-hand side x, TRI_GROUP rows at a time: their dot
 * products with the unknowns solved before the group in LANES lanes (x's elements in memory
 * order, each lane's products summed in order, then the lanes in order, then the last
 * products one by one), then the group's own triangle in solving order (Note [Triangular
 * substitution in solving order]).  The lanes are NH vectors VH side by side, summed one
 * after the other over the unknowns (a pass each): one of 64 bytes on AVX-512 (NH = 1),
 * two of 32 elsewhere (NH = 2; the AVX2 clone had kept TRI_GROUP 64-byte sums in memory,
 * and 2 TRI_GROUP 32-byte ones would not fit its registers).  A lane's sum is the same at
 * either width, and so are the bits. */
#define DEFINE_TRI_ONE(T, VH, NH, SUF)                                                        \
    static PTL_LOOP_CLONES_WIDE void tri_one_##SUF(const T *t, T *x, int64_t n, int upper,    \
                                                   int unit)                                  \
    {                                                                                         \
        enum { HL = sizeof(VH) / sizeof(T), LANES = NH * HL };                                \
        const int64_t dir = upper ? -1 : 1, first = upper ? n - 1 : 0;                        \
        for (int64_t s = 0; s < n; s += TRI_GROUP) {                                          \
            const int64_t g = n - s < TRI_GROUP ? n - s : TRI_GROUP, lo = upper ? n - s : 0;  \
            const T *tr[TRI_GROUP];                                                           \
            T lane[TRI_GROUP][LANES], dot[TRI_GROUP];                                         \
            for (int r = 0; r < TRI_GROUP; r++) {                                             \
                tr[r] = t + (first + dir * (s + (r < g ? r : 0))) * n + lo;                   \
            }                                                                                 \
            const int64_t whole = s / LANES * LANES;                                          \
            for (int h = 0; h < NH; h++) {                                                    \
                VH acc[TRI_GROUP];                                                            \
                for (int r = 0; r < TRI_GROUP; r++) {                                         \
                    acc[r] = (VH){0};                                                         \
                }                                                                             \
                for (int64_t p = h * HL; p < whole; p += LANES) {                             \
                    VH xv;                                                                    \
                    memcpy(&xv, x + lo + p, sizeof(xv));                                      \
                    for (int r = 0; r < TRI_GROUP; r++) {                                     \
                        VH tv;                                                                \
                        memcpy(&tv, tr[r] + p, sizeof(tv));                                   \
                        acc[r] += tv * xv;                                                    \
                    }                                                                         \
                }                                                                             \
                for (int r = 0; r < TRI_GROUP; r++) {                                         \
                    memcpy(lane[r] + h * HL, &acc[r], sizeof(acc[r]));                        \
                }                                                                             \
            }                                                                                 \
            const int64_t p = whole;                                                          \
            for (int r = 0; r < g; r++) {                                                     \
                T d = lane[r][0];                                                             \
                for (int l = 1; l < LANES; l++) {                                             \
                    d += lane[r][l];                                                          \
                }                                                                             \
                for (int64_t q = p; q < s; q++) {                                             \
                    d += tr[r][q] * x[lo + q];                                                \
                }                                                                             \
                dot[r] = d;                                                                   \
            }                                                                                 \
            for (int r = 0; r < g; r++) {                                                     \
                const int64_t i = first + dir * (s + r);                                      \
                const T *ti = t + i * n;                                                      \
                T xi = x[i] - dot[r];                                                         \
                for (int64_t q = 0, k = first + dir * s; q < r; q++, k += dir) {              \
                    xi -= ti[k] * x[k];                                                       \
                }                                                                             \
                x[i] = unit ? xi : xi / ti[i];                                                \
            }                                                                                 \
        }                                                                                     \
    }

DEFINE_TRI_ONE(double, TriVec_f8, 1, f8)
DEFINE_TRI_ONE(double, TriHalf_f8, 2, f8h)
DEFINE_TRI_ONE(float, TriVec_f4, 1, f4)
DEFINE_TRI_ONE(float, TriHalf_f4, 2, f4h)
#undef DEFINE_TRI_ONE

/* The kernels below come in two instances from one template, DEFINE_LU_KERNELS(T, SUF,
 * GEMM, FABS): _f8 on double with ptl_gemm_f64 and _f4 on float with ptl_gemm_f32 (Note
 * [Float64 linear algebra]).  In the template's order:
 *
 * lu_panel, lu_factor: linalg_lu.h's LU (shared with the complex dtypes of
 * linalg_complex.c), in blocks of LINALG_BLOCK, |x| the pivot's magnitude, the column below
 * a pivot divided by it.
 *
 * tri_solve: solves the triangular system T X = B in place of b (n x nrhs), T the upper or
 * lower triangle of t (n x n, row-major), with ones on the diagonal when unit: tri_one,
 * tri_narrow or a block of rows at a time (Note [Triangular substitution in solving order]).
 * 0, or -1 with the error set.
 *
 * lu_det: the determinant (or the sign and log |det|) from the factors, accumulated in
 * double.
 *
 * lu_matrix, tri_matrix (LinalgMatrixFn on a LuJob): linalg_lu.h's (shared with the complex
 * dtypes): LU of matrix i into lu, piv, info, and the solve with b when set, and lu_det when
 * det is set; the triangular systems A X = B (left) or X A = B in place of b. */
#define DEFINE_LU_KERNELS(T, SUF, GEMM, FABS)                                                 \
    LINALG_DEFINE_LU(PTL_LOOP_CLONES_WIDE, T, SUF, LINALG_BLOCK, FABS, PTL_ID, LU_DIV,        \
                     LU_MUL, LU_GEMM_SUB_##SUF)                                               \
    static PTL_LOOP_CLONES_WIDE int tri_solve_##SUF(const T *t, T *b, int64_t n,              \
                                                    int64_t nrhs, int upper, int unit)        \
    {                                                                                         \
        if (nrhs == 1) {                                                                      \
            (ptl_cpu_capability() < PTL_CPU_AVX512 ? tri_one_##SUF##h                         \
                                                    : tri_one_##SUF)(t, b, n, upper, unit);   \
            return 0;                                                                         \
        }                                                                                     \
        if (nrhs < TRI_NARROW_RHS) {                                                          \
            return nrhs * sizeof(T) <= sizeof(TriHalf_##SUF) ||                               \
                           ptl_cpu_capability() < PTL_CPU_AVX512                              \
                       ? tri_narrow_##SUF##h(t, b, n, nrhs, upper, unit)                      \
                       : tri_narrow_##SUF(t, b, n, nrhs, upper, unit);                        \
        }                                                                                     \
        for (int64_t s0 = 0; s0 < n; s0 += LINALG_BLOCK) {                                    \
            int64_t ib = n - s0 < LINALG_BLOCK ? n - s0 : LINALG_BLOCK;                       \
            int64_t i0 = upper ? n - s0 - ib : s0, i1 = i0 + ib;                              \
            T *bb = b + i0 * nrhs;                                                            \
            if (s0 > 0 && (upper ? GEMM(ib, nrhs, n - i1, -1.0, t + i0 * n + i1, n, 1,        \
                                        b + i1 * nrhs, nrhs, 1, 1.0, bb, nrhs)                \
                                 : GEMM(ib, nrhs, i0, -1.0, t + i0 * n, n, 1, b, nrhs, 1,     \
                                        1.0, bb, nrhs)) < 0) {                                \
                return -1;                                                                    \
            }                                                                                 \
            for (int64_t s = 0; s < ib; s++) {                                                \
                int64_t i = upper ? i1 - 1 - s : i0 + s, dir = upper ? -1 : 1;                \
                T *bi = b + i * nrhs;                                                         \
                /* the rows solved before row i, in the order they were solved */             \
                for (int64_t q = 0, k = upper ? i1 - 1 : i0; q < s; q++, k += dir) {          \
                    T f = t[i * n + k];                                                       \
                    const T *bk = b + k * nrhs;                                               \
                    for (int64_t c = 0; c < nrhs; c++) {                                      \
                        bi[c] -= f * bk[c];                                                   \
                    }                                                                         \
                }                                                                             \
                if (!unit) {                                                                  \
                    T d = t[i * n + i];                                                       \
                    for (int64_t c = 0; c < nrhs; c++) {                                      \
                        bi[c] /= d;                                                           \
                    }                                                                         \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
        return 0;                                                                             \
    }                                                                                         \
                                                                                              \
    /* matrix i's det = (-1)^swaps prod U[r, r] (or its sign and log |det|), in double */     \
    static void lu_det_##SUF(const LuJob *j, int64_t i, const T *lu, const int32_t *piv)      \
    {                                                                                         \
        double d = 1, logabs = 0;                                                             \
        int swaps = 0, neg = 0;                                                               \
        for (int64_t r = 0; r < j->n; r++) {                                                  \
            double u = lu[r * j->n + r];                                                      \
            swaps ^= piv[r] - 1 != r;                                                         \
            neg ^= u < 0;                                                                     \
            d *= u;                                                                           \
            logabs += log(fabs(u));                                                           \
        }                                                                                     \
        if (j->sign != NULL) {                                                                \
            ((T *)j->sign)[i] = j->info[i] ? 0 : ((swaps ^ neg) ? -1 : 1);                    \
            ((T *)j->det)[i] = (T)logabs;                                                     \
        }                                                                                     \
        else {                                                                                \
            ((T *)j->det)[i] = (T)(swaps ? -d : d);                                           \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    LINALG_DEFINE_LU_SOLVES(PTL_LOOP_CLONES_WIDE, T, SUF)

/* ---- the batched kernels ---- */

/* linalg_lu.h's parameters: the column below a pivot divided by it; C -= A B */
#define LU_DIV(x, f) ((x) / (f))
#define LU_MUL(f, x) ((f) * (x))
#define LU_GEMM_SUB_f8(M, N, K, A, LDA, B, LDB, C, LDC)                                       \
    ptl_gemm_f64(M, N, K, -1.0, A, LDA, 1, B, LDB, 1, 1.0, C, LDC)
#define LU_GEMM_SUB_f4(M, N, K, A, LDA, B, LDB, C, LDC)                                       \
    ptl_gemm_f32(M, N, K, -1.0, A, LDA, 1, B, LDB, 1, 1.0, C, LDC)
DEFINE_LU_KERNELS(double, f8, ptl_gemm_f64, fabs)
DEFINE_LU_KERNELS(float, f4, ptl_gemm_f32, fabsf)
#undef DEFINE_LU_KERNELS
#undef LU_GEMM_SUB_f8
#undef LU_GEMM_SUB_f4
#undef LU_MUL
#undef LU_DIV

/* The LuJob kernel for the working dtype dt: lu_matrix (or tri_matrix when triangular) on
 * float32 for float32, on double for float64 (Note [Float64 linear algebra]), on the complex
 * dtype itself for complex64 and complex128 (linalg_complex.c). */
static LinalgMatrixFn
lu_kernel(PtlDtype dt, int triangular)
{
    if (dt == PTL_DTYPE_COMPLEX64) {
        return triangular ? ptl_linalg_tri_matrix_c8 : ptl_linalg_lu_matrix_c8;
    }
    if (dt == PTL_DTYPE_COMPLEX128) {
        return triangular ? ptl_linalg_tri_matrix_c16 : ptl_linalg_lu_matrix_c16;
    }
    if (dt == PTL_DTYPE_FLOAT32) {
        return triangular ? tri_matrix_f4 : lu_matrix_f4;
    }
    return triangular ? tri_matrix_f8 : lu_matrix_f8;
}

/* linalg_check_dtype, with complex64 and complex128 accepted too (they reach these kernels
 * through linalg_complex.c's Complex-key entry).  0 or -1. */
static int
lu_check_dtype(const char *fn, const char *kernel, const PtlTensorImpl *A)
{
    return ptl_dtype_is_complex(A->dtype) ? 0 : linalg_check_dtype(fn, kernel, A);
}

#define LU_ZERO_PIVOT                                                                         \
    "U[%1$d,%1$d] is zero and using it on lu_solve would result in a division by zero. If " \
    "you still want to perform the factorization, consider calling linalg.lu(A, pivot) or "  \
    "linalg.lu_factor_ex(A, pivot)"
#define SOLVE_SINGULAR "The solver failed because the input matrix is singular."
#define INV_SINGULAR                                                                          \
    "The diagonal element %d is zero, the inversion could not be completed because the "     \
    "input matrix is singular."

/* Makes the LU (of the working dtype wt), the int32 pivots and infos of the job's [*bsz, m,
 * n] matrices (nb batch dims) and points the job at them.  0 or -1 (what was made is left to
 * the caller). */
static int
lu_outputs(LuJob *job, int nb, const int64_t *bsz, PtlDtype wt, PtlDevice dev,
           PtlTensorImpl **lu, PtlTensorImpl **piv, PtlTensorImpl **info)
{
    int64_t sz[PTL_MAX_DIMS];
    memcpy(sz, bsz, sizeof(int64_t) * (size_t)nb);
    sz[nb] = job->m;
    sz[nb + 1] = job->n;
    if ((*lu = ptl_empty(nb + 2, sz, wt, dev)) == NULL) {
        return -1;
    }
    sz[nb] = job->m < job->n ? job->m : job->n;
    if ((*piv = ptl_empty(nb + 1, sz, PTL_DTYPE_INT32, dev)) == NULL ||
        (*info = ptl_empty(nb, sz, PTL_DTYPE_INT32, dev)) == NULL) {
        return -1;
    }
    job->lu = ptl_tensor_data(*lu);
    job->piv = (int32_t *)ptl_tensor_data(*piv);
    job->info = (int32_t *)ptl_tensor_data(*info);
    return 0;
}

/* linalg_lu_factor_ex(Tensor A, *, bool pivot=True, bool check_errors=False)
 * -> (Tensor LU, Tensor pivots, Tensor info)
 * [*, m, n] -> LU [*, m, n], pivots [*, min(m, n)] int32, info [*] int32. */
static int
linalg_lu_factor_ex_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *A = s[0].u.t, *t[4] = {NULL, NULL, NULL, NULL};
    char buf[128];
    if (A->dim < 2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "torch.lu_factor: Expected tensor with 2 or more "
                             "dimensions. Got size: %s instead",
                             ptl_format_sizes(buf, sizeof(buf), A->dim, A->sizes));
    }
    if (!ptl_dtype_is_complex(A->dtype) && linalg_check_kernel_dtype("lu_cpu", A) < 0) {
        return -1;
    }
    if (!s[1].u.b) {
        return ptl_error_set(PTL_ERR_RUNTIME, "linalg.lu_factor: LU without pivoting is not "
                             "implemented on the CPU");
    }
    int nb = A->dim - 2;
    LuJob job = {.m = A->sizes[nb], .n = A->sizes[nb + 1], .left = 1};
    int64_t k = job.m < job.n ? job.m : job.n;
    if ((t[0] = ptl_contiguous(A)) == NULL ||
        lu_outputs(&job, nb, A->sizes, A->dtype, A->device, &t[1], &t[2], &t[3]) < 0) {
        return linalg_release_all(t, 4);
    }
    job.a = ptl_tensor_data(t[0]);
    if (linalg_batch_run(linalg_batch_count(A, 2), job.m * job.n * (k + 1),
                         lu_kernel(A->dtype, 0), &job) < 0 ||
        (s[2].u.b && linalg_check_info("torch.linalg.lu_factor_ex", t[3], nb > 0,
                                       PTL_ERR_RUNTIME, LU_ZERO_PIVOT) < 0)) {
        return linalg_release_all(t, 4);
    }
    ptl_decref(t[0]);
    for (int i = 0; i < 3; i++) {
        s[i] = ptl_iv_tensor(t[i + 1]);
    }
    return 0;
}

/* The batch shape of B's matrices (B has nbb batch dims) broadcast with A's into bsz (B
 * first, as PyTorch's error names them); returns its length or -1. */
static int
broadcast_batch(const PtlTensorImpl *A, const PtlTensorImpl *B, int nbb, int64_t *bsz)
{
    int nb;
    if (ptl_broadcast_shapes(nbb, B->sizes, A->dim - 2, A->sizes, &nb, bsz) < 0) {
        return -1;
    }
    return nb;
}

/* t [bsz (nb dims), inner dims], made for every matrix of A broadcast to bsz, reduced to
 * A's own batch (its A->dim - 2 dims): the copies of one matrix of A in B's batch have the
 * same factors, and PyTorch's LU, pivots and info keep A's batch.  Steals t; returns a new
 * reference or NULL. */
static PtlTensorImpl *
a_batch_only(PtlTensorImpl *t, int nb, const PtlTensorImpl *A)
{
    int na = A->dim - 2, ni = t->dim - nb;
    if (na == nb && memcmp(t->sizes, A->sizes, sizeof(int64_t) * (size_t)na) == 0) {
        return t;
    }
    int64_t sz[PTL_MAX_DIMS], st[PTL_MAX_DIMS];
    for (int i = 0; i < na + ni; i++) {
        int from = i < na ? nb - na + i : nb + i - na;
        sz[i] = i < na ? A->sizes[i] : t->sizes[from];
        st[i] = t->strides[from];
    }
    PtlIValue a[4] = {ptl_iv_tensor(t), ptl_iv_intlist(sz, na + ni),
                      ptl_iv_intlist(st, na + ni), ptl_iv_none()};
    PtlTensorImpl *v = ptl_call_tensor(PTL_OP_as_strided, a);
    PtlTensorImpl *r = v != NULL ? ptl_contiguous(v) : NULL;
    ptl_xdecref(v);
    ptl_decref(t);
    return r;
}

/* _linalg_solve_ex(Tensor A, Tensor B, *, bool left=True, bool check_errors=False)
 * -> (Tensor result, Tensor LU, Tensor pivots, Tensor info)
 * A [*, n, n], B [*, n, k] (left), [*, k, n] (right) or a vector [*, n] (left) with
 * broadcast batch dims -> X [batch, n, k] / [batch, k, n] / [batch, n]; LU and pivots are
 * the factors of A (of A^T when not left) and info int32, in A's own batch (each matrix is
 * factored once per matrix of B it meets, and the copies dropped). */
static int
linalg_solve_ex_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *A = s[0].u.t, *B = s[1].u.t, *t[5] = {NULL, NULL, NULL, NULL, NULL};
    int left = s[2].u.b;
    const char *fn = "linalg.solve";
    if (linalg_check_matrix(fn, A, "A") < 0 || lu_check_dtype(fn, "lu_cpu", A) < 0) {
        return -1;
    }
    if (A->dtype != B->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME, "linalg.solve: Expected A and B to have the same "
                             "dtype, but found A of type %s and B of type %s instead",
                             ptl_dtype_legacy_name(A->dtype), ptl_dtype_legacy_name(B->dtype));
    }
    if (linalg_check_square(fn, A) < 0) {
        return -1;
    }
    /* Note: PyTorch's linalg_solve_is_vector_rhs */
    int vec = B->dim == 1 || (B->dim == A->dim - 1 &&
                              memcmp(B->sizes, A->sizes, sizeof(int64_t) * (size_t)B->dim) == 0);
    if (!left && vec) {
        return ptl_error_set(PTL_ERR_RUNTIME, "linalg.solve: Vector broadcasting of the left "
                             "hand side is not supported for left=False. In this case "
                             "linalg.solve is equivalent to B / A.squeeze(-1)");
    }
    if (!vec && linalg_check_matrix(fn, B, "B") < 0) {
        return -1;
    }
    int64_t n = A->sizes[A->dim - 1];
    int64_t br = vec ? B->sizes[B->dim - 1] : B->sizes[B->dim - 2];
    int64_t bc = vec ? 1 : B->sizes[B->dim - 1];
    if ((left ? br : bc) != n) {
        return ptl_error_set(PTL_ERR_RUNTIME, "linalg.solve: Incompatible shapes of A and B for "
                             "the equation %s (%lldx%lld and %lldx%lld)",
                             left ? "AX = B" : "XA = B", (long long)n, (long long)n,
                             (long long)br, (long long)bc);
    }
    int64_t sz[PTL_MAX_DIMS];
    int nb = broadcast_batch(A, B, B->dim - (vec ? 1 : 2), sz);
    if (nb < 0) {
        return -1;
    }
    LuJob job = {.m = n, .n = n, .nrhs = left ? bc : br, .left = left};
    sz[nb] = sz[nb + 1] = n;
    if ((t[0] = linalg_work_copy(A, A->dtype, nb + 2, sz)) == NULL) {
        return -1;
    }
    sz[nb] = br;
    sz[nb + 1] = bc;
    if ((t[1] = linalg_work_copy(B, A->dtype, nb + (vec ? 1 : 2), sz)) == NULL ||
        lu_outputs(&job, nb, sz, A->dtype, A->device, &t[2], &t[3], &t[4]) < 0) {
        return linalg_release_all(t, 5);
    }
    job.a = ptl_tensor_data(t[0]);
    job.b = ptl_tensor_data(t[1]);
    if (linalg_batch_run(linalg_batch_count(t[2], 2), n * n * (n + 2 * job.nrhs + 1),
                         lu_kernel(A->dtype, 0), &job) < 0) {
        return linalg_release_all(t, 5);
    }
    for (int i = 2; i < 5; i++) {
        if ((t[i] = a_batch_only(t[i], nb, A)) == NULL) {
            return linalg_release_all(t, 5);
        }
    }
    if (s[3].u.b && linalg_check_info("torch.linalg.solve_ex", t[4], A->dim > 2, PTL_ERR_LINALG,
                                      SOLVE_SINGULAR) < 0) {
        return linalg_release_all(t, 5);
    }
    ptl_decref(t[0]);
    for (int i = 0; i < 4; i++) {
        s[i] = ptl_iv_tensor(t[i + 1]);
    }
    return 0;
}

/* linalg_inv_ex(Tensor A, *, bool check_errors=False) -> (Tensor inverse, Tensor info)
 * [*, n, n] -> inverse [*, n, n], info [*] int32: A X = I solved from A's LU. */
static int
linalg_inv_ex_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *A = s[0].u.t, *t[5] = {NULL, NULL, NULL, NULL, NULL};
    if (linalg_check_square("linalg.inv", A) < 0) {
        return -1;
    }
    if (A->dtype == PTL_DTYPE_FLOAT16 || A->dtype == PTL_DTYPE_BFLOAT16) {
        return ptl_error_set(PTL_ERR_RUNTIME, "linalg.inv: Low precision dtypes not supported. "
                             "Got %s", ptl_dtype_legacy_name(A->dtype));
    }
    if (lu_check_dtype("linalg.inv", "lu_cpu", A) < 0) {
        return -1;
    }
    int nb = A->dim - 2;
    int64_t n = A->sizes[nb], batch = linalg_batch_count(A, 2);
    LuJob job = {.m = n, .n = n, .nrhs = n, .left = 1};
    if ((t[0] = ptl_contiguous(A)) == NULL ||
        (t[1] = ptl_empty(A->dim, A->sizes, A->dtype, A->device)) == NULL ||
        lu_outputs(&job, nb, A->sizes, A->dtype, A->device, &t[2], &t[3], &t[4]) < 0) {
        return linalg_release_all(t, 5);
    }
    /* the identity in every matrix: row r of the batch has its 1 in column r % n */
    void *eye = ptl_tensor_data(t[1]);
    memset(eye, 0, ptl_dtype_itemsize(A->dtype) * (size_t)t[1]->numel);
    for (int64_t r = 0; r < batch * n; r++) {
        if (A->dtype == PTL_DTYPE_FLOAT32 || A->dtype == PTL_DTYPE_COMPLEX64) {
            ((float *)eye)[(r * n + r % n) * (A->dtype == PTL_DTYPE_COMPLEX64 ? 2 : 1)] = 1;
        }
        else if (A->dtype == PTL_DTYPE_COMPLEX128) {
            ((double *)eye)[2 * (r * n + r % n)] = 1;
        }
        else {
            ((double *)eye)[r * n + r % n] = 1;
        }
    }
    job.a = ptl_tensor_data(t[0]);
    job.b = eye;
    if (linalg_batch_run(batch, 3 * n * n * n + 1, lu_kernel(A->dtype, 0), &job) < 0 ||
        (s[1].u.b && linalg_check_info("linalg.inv_ex", t[4], nb > 0, PTL_ERR_LINALG,
                                       INV_SINGULAR) < 0)) {
        return linalg_release_all(t, 5);
    }
    ptl_decref(t[0]);
    ptl_decref(t[2]);
    ptl_decref(t[3]);
    s[0] = ptl_iv_tensor(t[1]);
    s[1] = ptl_iv_tensor(t[4]);
    return 0;
}

/* _linalg_det(Tensor A) -> (Tensor result, Tensor LU, Tensor pivots)
 * _linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet, Tensor LU, Tensor pivots)
 * [*, n, n] -> det [*] (or sign [*], 0 for a singular matrix, and log|det| [*], -inf),
 * LU [*, n, n], pivots [*, n] int32: the determinants from the LU factors. */
static int
linalg_det_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *A = s[0].u.t, *t[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    int logs = op->id == PTL_OP__linalg_slogdet;
    const char *fn = logs ? "linalg.slogdet" : "linalg.det";
    if (linalg_check_square(fn, A) < 0 || lu_check_dtype(fn, "lu_cpu", A) < 0) {
        return -1;
    }
    int nb = A->dim - 2;
    int64_t n = A->sizes[nb];
    LuJob job = {.m = n, .n = n, .left = 1};
    if ((t[0] = ptl_contiguous(A)) == NULL ||
        lu_outputs(&job, nb, A->sizes, A->dtype, A->device, &t[1], &t[2], &t[3]) < 0 ||
        (t[4] = ptl_empty(nb, A->sizes, logs ? ptl_dtype_to_real(A->dtype) : A->dtype,
                          A->device)) == NULL ||
        (logs && (t[5] = ptl_empty(nb, A->sizes, A->dtype, A->device)) == NULL)) {
        return linalg_release_all(t, 6);
    }
    job.a = ptl_tensor_data(t[0]);
    job.det = ptl_tensor_data(t[4]);
    job.sign = logs ? ptl_tensor_data(t[5]) : NULL;
    if (linalg_batch_run(linalg_batch_count(A, 2), n * n * n + 1, lu_kernel(A->dtype, 0),
                         &job) < 0) {
        return linalg_release_all(t, 6);
    }
    ptl_decref(t[0]);
    ptl_decref(t[3]);
    int k = 0;
    if (logs) {
        s[k++] = ptl_iv_tensor(t[5]);
    }
    s[k++] = ptl_iv_tensor(t[4]);
    s[k++] = ptl_iv_tensor(t[1]);
    s[k++] = ptl_iv_tensor(t[2]);
    return 0;
}

/* linalg_solve_triangular(Tensor self, Tensor B, *, bool upper, bool left=True,
 * bool unitriangular=False) -> Tensor
 * A [*, n, n] (only its upper or lower triangle is read), B [*, n, k] (left) or [*, k, n]
 * with broadcast batch dims -> X of B's matrix shape, in the promoted dtype. */
static int
linalg_solve_triangular_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *A = s[0].u.t, *B = s[1].u.t, *t[2] = {NULL, NULL};
    PtlTensorImpl *ab[2] = {A, B};
    int left = s[3].u.b;
    const char *fn = "linalg.solve_triangular";
    if (linalg_check_matrix(fn, A, "A") < 0 || linalg_check_matrix(fn, B, "B") < 0 ||
        linalg_check_square(fn, A) < 0) {
        return -1;
    }
    PtlDtype dt = ptl_result_type(ab, 2);
    if ((!ptl_dtype_is_floating(dt) && !ptl_dtype_is_complex(dt)) || dt == PTL_DTYPE_FLOAT16 ||
        dt == PTL_DTYPE_BFLOAT16) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"triangular_solve_cpu\" not "
                             "implemented for '%s'", ptl_dtype_legacy_name(dt));
    }
    int64_t n = A->sizes[A->dim - 1], br = B->sizes[B->dim - 2], bc = B->sizes[B->dim - 1];
    if ((left ? br : bc) != n) {
        return ptl_error_set(PTL_ERR_RUNTIME, "linalg.solve_triangular: Incompatible shapes of "
                             "A and B for the equation %s (%lldx%lld and %lldx%lld)",
                             left ? "AX = B" : "XA = B", (long long)n, (long long)n,
                             (long long)br, (long long)bc);
    }
    int64_t sz[PTL_MAX_DIMS];
    int nb = broadcast_batch(A, B, B->dim - 2, sz);
    if (nb < 0) {
        return -1;
    }
    LuJob job = {.m = n, .n = n, .nrhs = left ? bc : br, .left = left, .upper = s[2].u.b,
                 .unit = s[4].u.b};
    sz[nb] = sz[nb + 1] = n;
    /* A itself when it has the working dtype and every batch dim (it is only read) */
    int whole = A->dtype == dt && A->dim == nb + 2 &&
                memcmp(A->sizes, sz, sizeof(int64_t) * (size_t)(nb + 2)) == 0;
    if ((t[0] = whole ? ptl_contiguous(A) : linalg_work_copy(A, dt, nb + 2, sz)) == NULL) {
        return -1;
    }
    sz[nb] = br;
    sz[nb + 1] = bc;
    if ((t[1] = linalg_work_copy(B, dt, nb + 2, sz)) == NULL) {
        return linalg_release_all(t, 2);
    }
    job.a = ptl_tensor_data(t[0]);
    job.b = ptl_tensor_data(t[1]);
    if (linalg_batch_run(linalg_batch_count(t[1], 2), n * n * job.nrhs + 1,
                         lu_kernel(dt, 1), &job) < 0) {
        return linalg_release_all(t, 2);
    }
    ptl_decref(t[0]);
    s[0] = ptl_iv_tensor(t[1]);
    return 0;
}

/* ---- composites ---- */

/* linalg_lu_factor(Tensor A, *, bool pivot=True) -> (Tensor LU, Tensor pivots)
 * linalg_lu_factor_ex, raising for a zero pivot. */
static int
linalg_lu_factor_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    int batched = s[0].u.t->dim > 2, keep[3] = {0, 1, 2};
    PtlIValue st[3] = {s[0], s[1], ptl_iv_bool(0)};
    if (linalg_call_keep(PTL_OP_linalg_lu_factor_ex, st, 3, s, keep, 3) < 0 ||
        linalg_check_returns(s, 3, 2, "torch.linalg.lu_factor", batched, PTL_ERR_RUNTIME,
                      LU_ZERO_PIVOT) < 0) {
        return -1;
    }
    ptl_ivalue_release(&s[2]);
    return 0;
}

/* linalg_solve_ex(Tensor A, Tensor B, *, bool left=True, bool check_errors=False)
 * -> (Tensor result, Tensor info): _linalg_solve_ex without the factors. */
static int
linalg_solve_ex_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    int keep[2] = {0, 3};
    PtlIValue st[4] = {s[0], s[1], s[2], s[3]};
    return linalg_call_keep(PTL_OP__linalg_solve_ex, st, 4, s, keep, 2);
}

/* linalg_solve(Tensor A, Tensor B, *, bool left=True) -> Tensor
 * _linalg_solve_ex, raising LinAlgError for a singular A. */
static int
linalg_solve_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    int keep[2] = {0, 3};
    PtlIValue st[4] = {s[0], s[1], s[2], ptl_iv_bool(0)};
    int batched = s[0].u.t->dim > 2 || s[1].u.t->dim > 2;
    if (linalg_call_keep(PTL_OP__linalg_solve_ex, st, 4, s, keep, 2) < 0 ||
        linalg_check_returns(s, 2, 1, "torch.linalg.solve", batched, PTL_ERR_LINALG,
                      SOLVE_SINGULAR) < 0) {
        return -1;
    }
    ptl_ivalue_release(&s[1]);
    return 0;
}

/* linalg_inv(Tensor A) -> Tensor and inverse(Tensor self) -> Tensor
 * linalg_inv_ex, raising LinAlgError for a singular A. */
static int
linalg_inv_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    int keep[2] = {0, 1}, batched = s[0].u.t->dim > 2;
    PtlIValue st[2] = {s[0], ptl_iv_bool(0)};
    if (linalg_call_keep(PTL_OP_linalg_inv_ex, st, 2, s, keep, 2) < 0 ||
        linalg_check_returns(s, 2, 1, "linalg.inv", batched, PTL_ERR_LINALG, INV_SINGULAR) < 0) {
        return -1;
    }
    ptl_ivalue_release(&s[1]);
    return 0;
}

/* linalg_det(Tensor A) -> Tensor and det(Tensor self) -> Tensor: _linalg_det's result */
static int
linalg_det_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    int keep[1] = {0};
    PtlIValue st[1] = {s[0]};
    return linalg_call_keep(PTL_OP__linalg_det, st, 1, s, keep, 1);
}

/* linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet) and slogdet(Tensor self):
 * _linalg_slogdet without the factors */
static int
linalg_slogdet_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    int keep[2] = {0, 1};
    PtlIValue st[1] = {s[0]};
    return linalg_call_keep(PTL_OP__linalg_slogdet, st, 1, s, keep, 2);
}

static const PtlKernelReg linalg_solve_kernels[] = {
    {PTL_OP_linalg_lu_factor_ex, PTL_KEY_CPU, linalg_lu_factor_ex_cpu},
    {PTL_OP_linalg_lu_factor, PTL_KEY_COMPOSITE_IMPLICIT, linalg_lu_factor_composite},
    {PTL_OP__linalg_solve_ex, PTL_KEY_CPU, linalg_solve_ex_cpu},
    {PTL_OP_linalg_solve_ex, PTL_KEY_COMPOSITE_IMPLICIT, linalg_solve_ex_composite},
    {PTL_OP_linalg_solve, PTL_KEY_COMPOSITE_IMPLICIT, linalg_solve_composite},
    {PTL_OP_linalg_inv_ex, PTL_KEY_CPU, linalg_inv_ex_cpu},
    {PTL_OP_linalg_inv, PTL_KEY_COMPOSITE_IMPLICIT, linalg_inv_composite},
    {PTL_OP_inverse, PTL_KEY_COMPOSITE_IMPLICIT, linalg_inv_composite},
    {PTL_OP__linalg_det, PTL_KEY_CPU, linalg_det_cpu},
    {PTL_OP_linalg_det, PTL_KEY_COMPOSITE_IMPLICIT, linalg_det_composite},
    {PTL_OP_det, PTL_KEY_COMPOSITE_IMPLICIT, linalg_det_composite},
    {PTL_OP__linalg_slogdet, PTL_KEY_CPU, linalg_det_cpu},
    {PTL_OP_linalg_slogdet, PTL_KEY_COMPOSITE_IMPLICIT, linalg_slogdet_composite},
    {PTL_OP_slogdet, PTL_KEY_COMPOSITE_IMPLICIT, linalg_slogdet_composite},
    {PTL_OP_linalg_solve_triangular, PTL_KEY_CPU, linalg_solve_triangular_cpu},
};
PTL_DEFINE_REGISTER(linalg_solve_kernels)
