/* linalg_ldl.c -- linalg_ldl_factor(_ex) and linalg_ldl_solve: the LDL^T (LDL^H) factors of
 * symmetric or Hermitian, possibly indefinite, matrices and solves with them.  Mirrors
 * ldl_factor / ldl_solve of ATen/native/BatchLinearAlgebra.cpp, which call LAPACK's sytrf /
 * hetrf and sytrs / hetrs; pytorchlite computes them itself.
 *
 * Note [Bunch-Kaufman LDL]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * A = P L D L^T P^T (L^H with hermitian), from A's lower triangle, by LAPACK's unblocked
 * Bunch-Kaufman partial pivoting (sytf2 / hetf2 with uplo 'L'), so that LD and pivots are
 * PyTorch's: at column k, with alpha = (1 + sqrt(17)) / 8, colmax the largest |Re| + |Im|
 * below the diagonal (in row imax) and rowmax the largest off-diagonal one of row/column
 * imax, the pivot is a 1 x 1 block a_kk when |a_kk| >= alpha colmax or |a_kk| colmax >=
 * alpha colmax^2 / rowmax, else the 1 x 1 block a_imax,imax (rows k and imax swapped) when
 * |a_imax,imax| >= alpha rowmax, else the 2 x 2 block of rows k, k + 1 (rows k + 1 and imax
 * swapped).  LD holds D's blocks on the diagonal (and the first subdiagonal for a 2 x 2
 * block) and L's multipliers below them, zeros above; pivots are 1-based, pivots[k] =
 * imax + 1 for a 1 x 1 block and pivots[k] = pivots[k + 1] = -(imax + 1) for a 2 x 2 one.
 * A zero column (|a_kk| and colmax 0) sets info to k + 1 (the first such) and goes on.
 * Hermitian factors read and keep D's diagonal real; for real matrices hermitian changes
 * nothing.  Every dtype works on complex128 copies (real matrices in them have zero
 * imaginary parts, and complex arithmetic on those is real arithmetic, to the bit), cast
 * back at the end: no derivatives (PyTorch has none either). */
#include <math.h>
#include <stdlib.h>

#include "../complex_math.h"
#include "linalg_impl.h"

#define AT(I, J) a[(I) * n + (J)]

static inline double
cabs1(ptl_complex128 z)
{
    return fabs(creal(z)) + fabs(cimag(z));
}

static inline void
swap_z(ptl_complex128 *x, ptl_complex128 *y)
{
    ptl_complex128 t = *x;
    *x = *y;
    *y = t;
}

/* Bunch-Kaufman on a (n x n, row-major, the lower triangle read) in place (Note
 * [Bunch-Kaufman LDL]); piv gets the n 1-based pivots.  Returns info. */
static int32_t
ldl_factor_z(ptl_complex128 *a, int32_t *piv, int64_t n, int herm)
{
    const double alpha = (1 + sqrt(17.0)) / 8;
    int32_t info = 0;
    for (int64_t k = 0; k < n;) {
        int64_t kstep = 1, kp = k, imax = k;
        double absakk = herm ? fabs(creal(AT(k, k))) : cabs1(AT(k, k)), colmax = 0;
        for (int64_t i = k + 1; i < n; i++) {
            if (cabs1(AT(i, k)) > colmax) {
                colmax = cabs1(AT(i, k));
                imax = i;
            }
        }
        if ((absakk > colmax ? absakk : colmax) == 0 || isnan(absakk)) {
            info = info ? info : (int32_t)(k + 1);
            if (herm) {
                AT(k, k) = creal(AT(k, k));
            }
            piv[k] = (int32_t)(k + 1);
            k++;
            continue;
        }
        if (absakk < alpha * colmax) {
            double rowmax = 0;
            for (int64_t j = k; j < imax; j++) {
                rowmax = fmax(rowmax, cabs1(AT(imax, j)));
            }
            for (int64_t i = imax + 1; i < n; i++) {
                rowmax = fmax(rowmax, cabs1(AT(i, imax)));
            }
            double aii = herm ? fabs(creal(AT(imax, imax))) : cabs1(AT(imax, imax));
            if (absakk < alpha * colmax * (colmax / rowmax)) {
                kp = imax;
                kstep = aii >= alpha * rowmax ? 1 : 2;
            }
        }
        int64_t kk = k + kstep - 1;
        if (kp != kk) {
            /* rows and columns kk and kp of the trailing matrix (its lower triangle) */
            for (int64_t i = kp + 1; i < n; i++) {
                swap_z(&AT(i, kk), &AT(i, kp));
            }
            for (int64_t j = kk + 1; j < kp; j++) {
                ptl_complex128 t = AT(j, kk);
                AT(j, kk) = herm ? conj(AT(kp, j)) : AT(kp, j);
                AT(kp, j) = herm ? conj(t) : t;
            }
            if (herm) {
                AT(kp, kk) = conj(AT(kp, kk));
            }
            swap_z(&AT(kk, kk), &AT(kp, kp));
            if (kstep == 2) {
                swap_z(&AT(k + 1, k), &AT(kp, k));
            }
        }
        if (herm) {
            AT(k, k) = creal(AT(k, k));
            AT(kk, kk) = creal(AT(kk, kk));
        }
        if (kstep == 1 && k < n - 1) {
            /* A22 -= x d^-1 x^T (x^H), then L's column x / d */
            ptl_complex128 d11 = herm ? 1 / creal(AT(k, k)) : 1 / AT(k, k);
            for (int64_t j = k + 1; j < n; j++) {
                ptl_complex128 xj = -d11 * (herm ? conj(AT(j, k)) : AT(j, k));
                for (int64_t i = j; i < n; i++) {
                    AT(i, j) += AT(i, k) * xj;
                }
                if (herm) {
                    AT(j, j) = creal(AT(j, j));
                }
            }
            for (int64_t i = k + 1; i < n; i++) {
                AT(i, k) *= d11;
            }
        }
        else if (kstep == 2 && k < n - 2) {
            /* A22 -= [x y] D^-1 [x y]^T (^H): W = [x y] D^-1 row by row */
            if (herm) {
                double d = cabs(AT(k + 1, k));
                double d11 = creal(AT(k + 1, k + 1)) / d, d22 = creal(AT(k, k)) / d;
                double tt = 1 / (d11 * d22 - 1);
                ptl_complex128 d21 = AT(k + 1, k) / d;
                d = tt / d;
                for (int64_t j = k + 2; j < n; j++) {
                    ptl_complex128 wk = d * (d11 * AT(j, k) - d21 * AT(j, k + 1));
                    ptl_complex128 wkp1 = d * (d22 * AT(j, k + 1) - conj(d21) * AT(j, k));
                    for (int64_t i = j; i < n; i++) {
                        AT(i, j) = AT(i, j) - AT(i, k) * conj(wk) - AT(i, k + 1) * conj(wkp1);
                    }
                    AT(j, k) = wk;
                    AT(j, k + 1) = wkp1;
                    AT(j, j) = creal(AT(j, j));
                }
            }
            else {
                ptl_complex128 d21 = AT(k + 1, k);
                ptl_complex128 d11 = AT(k + 1, k + 1) / d21, d22 = AT(k, k) / d21;
                ptl_complex128 t = 1 / (d11 * d22 - 1);
                d21 = t / d21;
                for (int64_t j = k + 2; j < n; j++) {
                    ptl_complex128 wk = d21 * (d11 * AT(j, k) - AT(j, k + 1));
                    ptl_complex128 wkp1 = d21 * (d22 * AT(j, k + 1) - AT(j, k));
                    for (int64_t i = j; i < n; i++) {
                        AT(i, j) = AT(i, j) - AT(i, k) * wk - AT(i, k + 1) * wkp1;
                    }
                    AT(j, k) = wk;
                    AT(j, k + 1) = wkp1;
                }
            }
        }
        if (kstep == 1) {
            piv[k] = (int32_t)(kp + 1);
        }
        else {
            piv[k] = piv[k + 1] = (int32_t)-(kp + 1);
        }
        k += kstep;
    }
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = i + 1; j < n; j++) {
            AT(i, j) = 0;
        }
    }
    return info;
}

static void
swap_rows(ptl_complex128 *b, int64_t nrhs, int64_t r, int64_t s)
{
    for (int64_t c = 0; r != s && c < nrhs; c++) {
        swap_z(&b[r * nrhs + c], &b[s * nrhs + c]);
    }
}

/* A X = B in place of b (n x nrhs) from ldl_factor_z's a and piv (LAPACK's sytrs / hetrs,
 * lower): P L D L^T P^T X = B, L's and D's blocks in factoring order. */
static void
ldl_solve_z(const ptl_complex128 *a, const int32_t *piv, ptl_complex128 *b, int64_t n,
            int64_t nrhs, int herm)
{
    for (int64_t k = 0; k < n;) {
        ptl_complex128 *bk = b + k * nrhs;
        if (piv[k] > 0) {
            swap_rows(b, nrhs, k, piv[k] - 1);
            for (int64_t i = k + 1; i < n; i++) {
                for (int64_t c = 0; c < nrhs; c++) {
                    b[i * nrhs + c] -= AT(i, k) * bk[c];
                }
            }
            ptl_complex128 r = herm ? 1 / creal(AT(k, k)) : 1 / AT(k, k);
            for (int64_t c = 0; c < nrhs; c++) {
                bk[c] *= r;
            }
            k++;
            continue;
        }
        ptl_complex128 *bk1 = bk + nrhs;
        swap_rows(b, nrhs, k + 1, -piv[k] - 1);
        for (int64_t i = k + 2; i < n; i++) {
            for (int64_t c = 0; c < nrhs; c++) {
                b[i * nrhs + c] -= AT(i, k) * bk[c];
            }
            for (int64_t c = 0; c < nrhs; c++) {
                b[i * nrhs + c] -= AT(i, k + 1) * bk1[c];
            }
        }
        ptl_complex128 akm1k = AT(k + 1, k), lo = herm ? conj(akm1k) : akm1k;
        ptl_complex128 akm1 = AT(k, k) / lo, ak = AT(k + 1, k + 1) / akm1k;
        ptl_complex128 denom = akm1 * ak - 1;
        for (int64_t c = 0; c < nrhs; c++) {
            ptl_complex128 bkm1 = bk[c] / lo, bkk = bk1[c] / akm1k;
            bk[c] = (ak * bkm1 - bkk) / denom;
            bk1[c] = (akm1 * bkk - bkm1) / denom;
        }
        k += 2;
    }
    for (int64_t k = n - 1; k >= 0;) {
        int two = piv[k] < 0;
        for (int64_t s = 0; s <= two; s++) {
            ptl_complex128 *bk = b + (k - s) * nrhs;
            for (int64_t i = k + 1; i < n; i++) {
                ptl_complex128 l = herm ? conj(AT(i, k - s)) : AT(i, k - s);
                for (int64_t c = 0; c < nrhs; c++) {
                    bk[c] -= l * b[i * nrhs + c];
                }
            }
        }
        swap_rows(b, nrhs, k, (two ? -piv[k] : piv[k]) - 1);
        k -= 1 + two;
    }
}

typedef struct LdlJob {
    ptl_complex128 *a;   /* [B, n, n] in place: LD */
    int32_t *piv;        /* [B, n] */
    int32_t *info;       /* [B] (factor) */
    ptl_complex128 *b;   /* [B, n, nrhs] (solve) */
    int64_t n, nrhs;
    int herm;
} LdlJob;

static int
ldl_factor_matrix(void *ctx, int64_t i)
{
    const LdlJob *j = ctx;
    j->info[i] = ldl_factor_z(j->a + i * j->n * j->n, j->piv + i * j->n, j->n, j->herm);
    return 0;
}

static int
ldl_solve_matrix(void *ctx, int64_t i)
{
    const LdlJob *j = ctx;
    ldl_solve_z(j->a + i * j->n * j->n, j->piv + i * j->n, j->b + i * j->n * j->nrhs, j->n,
                j->nrhs, j->herm);
    return 0;
}

/* The complex128 working copy back in dtype dt: a real dtype takes the real parts (which
 * are all there is).  Replaces *t; 0 or -1. */
static int
from_work(PtlTensorImpl **t, PtlDtype dt)
{
    if (!ptl_dtype_is_complex(dt)) {
        PtlIValue v[1] = {ptl_iv_tensor(*t)};
        PtlTensorImpl *re = ptl_call_tensor(PTL_OP_real, v), *c;
        if (re == NULL) {
            return -1;
        }
        c = ptl_cast(re, dt);
        ptl_decref(re);
        if (c == NULL) {
            return -1;
        }
        ptl_decref(*t);
        *t = c;
        return 0;
    }
    return linalg_cast_to(t, dt);
}

/* ldl_factor_kernel_cpu's dtypes: float32/float64/complex64/complex128 */
static int
check_ldl_dtype(const char *fn, const PtlTensorImpl *A)
{
    if (!ptl_dtype_is_floating(A->dtype) && !ptl_dtype_is_complex(A->dtype)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: Expected a floating point or complex tensor "
                             "as input. Got %s", fn, ptl_dtype_legacy_name(A->dtype));
    }
    if (A->dtype == PTL_DTYPE_FLOAT16 || A->dtype == PTL_DTYPE_BFLOAT16) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"ldl_factor_kernel_cpu\" not "
                             "implemented for '%s'", ptl_dtype_legacy_name(A->dtype));
    }
    return 0;
}

/* The Complex fallback's error for a CUDA call: -1 when ks names CUDA, else 0. */
static int
refuse_cuda(const PtlOperator *op, PtlDispatchKeySet ks, const PtlTensorImpl *t)
{
    if (!(ks & PTL_KEYSET(PTL_KEY_CUDA))) {
        return 0;
    }
    char kname[80];
    ptl_kernel_name(op, kname, sizeof(kname));
    memcpy(kname + strlen(kname) - 3, "cuda", 5);
    return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'", kname,
                         ptl_dtype_legacy_name(t->dtype));
}

#define LDL_UNKNOWN "Unknown error code: %d."

/* linalg_ldl_factor_ex(Tensor self, *, bool hermitian=False, bool check_errors=False)
 * -> (Tensor LD, Tensor pivots, Tensor info)
 * [*, n, n] -> LD [*, n, n], pivots [*, n] int32, info [*] int32 (Note [Bunch-Kaufman
 * LDL]).  check_errors raises PyTorch's text for a zero pivot (its "Unknown error code"). */
static int
linalg_ldl_factor_ex_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *A = s[0].u.t, *t[3] = {NULL, NULL, NULL};
    const char *fn = "torch.linalg.ldl_factor_ex";
    if (refuse_cuda(op, ks, A) < 0 || linalg_check_matrix(fn, A, "A") < 0 ||
        linalg_check_square(fn, A) < 0 || check_ldl_dtype(fn, A) < 0) {
        return -1;
    }
    int nb = A->dim - 2;
    int64_t n = A->sizes[nb];
    LdlJob job = {.n = n, .herm = s[1].u.b && ptl_dtype_is_complex(A->dtype)};
    if ((t[0] = ptl_cast(A, PTL_DTYPE_COMPLEX128)) == NULL ||
        (t[1] = ptl_empty(nb + 1, A->sizes, PTL_DTYPE_INT32, A->device)) == NULL ||
        (t[2] = ptl_empty(nb, A->sizes, PTL_DTYPE_INT32, A->device)) == NULL) {
        return linalg_release_all(t, 3);
    }
    job.a = (ptl_complex128 *)ptl_tensor_data(t[0]);
    job.piv = (int32_t *)ptl_tensor_data(t[1]);
    job.info = (int32_t *)ptl_tensor_data(t[2]);
    if (linalg_batch_run(linalg_batch_count(A, 2), 4 * n * n * n / 3 + 1, ldl_factor_matrix,
                         &job) < 0 ||
        (s[2].u.b && linalg_check_info(fn, t[2], 0, PTL_ERR_RUNTIME, LDL_UNKNOWN) < 0) ||
        from_work(&t[0], A->dtype) < 0) {
        return linalg_release_all(t, 3);
    }
    for (int i = 0; i < 3; i++) {
        s[i] = ptl_iv_tensor(t[i]);
    }
    return 0;
}

/* linalg_ldl_factor(Tensor self, *, bool hermitian=False) -> (Tensor LD, Tensor pivots)
 * linalg_ldl_factor_ex, raising for a zero pivot. */
static int
linalg_ldl_factor_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    int keep[3] = {0, 1, 2};
    PtlIValue st[3] = {s[0], s[1], ptl_iv_bool(0)};
    if (linalg_call_keep(PTL_OP_linalg_ldl_factor_ex, st, 3, s, keep, 3) < 0 ||
        linalg_check_returns(s, 3, 2, "torch.linalg.ldl_factor", 0, PTL_ERR_RUNTIME,
                             LDL_UNKNOWN) < 0) {
        return -1;
    }
    ptl_ivalue_release(&s[2]);
    return 0;
}

/* linalg_ldl_solve(Tensor LD, Tensor pivots, Tensor B, *, bool hermitian=False) -> Tensor
 * LD [*, n, n], pivots [*, n] (any integer dtype), B [*, n, k] with broadcast batch dims
 * -> X [*, n, k] with A X = B. */
static int
linalg_ldl_solve_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *LD = s[0].u.t, *P = s[1].u.t, *B = s[2].u.t, *t[3] = {NULL, NULL, NULL};
    const char *fn = "torch.linalg.ldl_solve";
    char buf[128];
    if (refuse_cuda(op, ks, LD) < 0 || linalg_check_matrix(fn, LD, "A") < 0 ||
        linalg_check_square(fn, LD) < 0) {
        return -1;
    }
    if (B->dim < 2) {
        return ptl_error_set(PTL_ERR_INDEX, "Dimension out of range (expected to be in range "
                             "of [%d, %d], but got -2)", B->dim ? -B->dim : -1,
                             B->dim ? B->dim - 1 : 0);
    }
    if (P->dim != LD->dim - 1 ||
        memcmp(P->sizes, LD->sizes, sizeof(int64_t) * (size_t)P->dim) != 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "torch.linalg.ldl_solve: Expected LD.shape[:-1] "
                             "and pivots.shape to be the same, but got pivots with shape %s "
                             "instead", ptl_format_sizes(buf, sizeof(buf), P->dim, P->sizes));
    }
    if (B->dtype != LD->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Expected b and A to have the same dtype, but "
                             "found b of type %s and A of type %s instead.",
                             ptl_dtype_legacy_name(B->dtype), ptl_dtype_legacy_name(LD->dtype));
    }
    int64_t n = LD->sizes[LD->dim - 1], br = B->sizes[B->dim - 2], bc = B->sizes[B->dim - 1];
    if (br != n) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Incompatible matrix sizes for "
                             "torch.linalg.ldl_solve: each A matrix is %lld by %lld but each b "
                             "matrix is %lld by %lld", (long long)n, (long long)n,
                             (long long)br, (long long)bc);
    }
    if (check_ldl_dtype(fn, LD) < 0) {
        return -1;
    }
    int64_t sz[PTL_MAX_DIMS];
    int nb;
    if (ptl_broadcast_shapes(B->dim - 2, B->sizes, LD->dim - 2, LD->sizes, &nb, sz) < 0) {
        return -1;
    }
    LdlJob job = {.n = n, .nrhs = bc, .herm = s[3].u.b && ptl_dtype_is_complex(LD->dtype)};
    sz[nb] = sz[nb + 1] = n;
    if ((t[0] = linalg_work_copy(LD, PTL_DTYPE_COMPLEX128, nb + 2, sz)) == NULL ||
        (t[1] = linalg_work_copy(P, PTL_DTYPE_INT32, nb + 1, sz)) == NULL) {
        return linalg_release_all(t, 3);
    }
    sz[nb + 1] = bc;
    if ((t[2] = linalg_work_copy(B, PTL_DTYPE_COMPLEX128, nb + 2, sz)) == NULL) {
        return linalg_release_all(t, 3);
    }
    job.a = (ptl_complex128 *)ptl_tensor_data(t[0]);
    job.piv = (int32_t *)ptl_tensor_data(t[1]);
    job.b = (ptl_complex128 *)ptl_tensor_data(t[2]);
    const int32_t *pv = job.piv;
    for (int64_t i = 0; i < t[1]->numel; i++) {
        int64_t p = pv[i] > 0 ? pv[i] : -(int64_t)pv[i];
        if (pv[i] == 0 || p > n) {
            ptl_error_set(PTL_ERR_RUNTIME, "torch.linalg.ldl_solve: invalid pivot %d",
                          (int)pv[i]);
            return linalg_release_all(t, 3);
        }
    }
    if (linalg_batch_run(linalg_batch_count(t[2], 2), 2 * n * n * bc + 1, ldl_solve_matrix,
                         &job) < 0 ||
        from_work(&t[2], B->dtype) < 0) {
        return linalg_release_all(t, 3);
    }
    ptl_decref(t[0]);
    ptl_decref(t[1]);
    s[0] = ptl_iv_tensor(t[2]);
    return 0;
}

static const PtlKernelReg linalg_ldl_kernels[] = {
    {PTL_OP_linalg_ldl_factor_ex, PTL_KEY_CPU, linalg_ldl_factor_ex_cpu},
    {PTL_OP_linalg_ldl_factor_ex, PTL_KEY_COMPLEX, linalg_ldl_factor_ex_cpu},
    {PTL_OP_linalg_ldl_factor, PTL_KEY_COMPOSITE_IMPLICIT, linalg_ldl_factor_composite},
    {PTL_OP_linalg_ldl_solve, PTL_KEY_CPU, linalg_ldl_solve_cpu},
    {PTL_OP_linalg_ldl_solve, PTL_KEY_COMPLEX, linalg_ldl_solve_cpu},
};
PTL_DEFINE_REGISTER(linalg_ldl_kernels)
