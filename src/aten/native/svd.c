/* svd.c -- the singular value decomposition: _linalg_svd, linalg_svd, linalg_svdvals and the
 * legacy svd.  Mirrors ATen/native/BatchLinearAlgebra.cpp (linalg_svd, linalg_svdvals, svd
 * and the structured _linalg_svd), which calls LAPACK's gesdd; pytorchlite computes it
 * itself.
 *
 * Note [One-sided Jacobi]
 * ~~~~~~~~~~~~~~~~~~~~~~~
 * Each matrix is copied in float64 into W (r x c, column-major, r = max(m, n), c = min(m,
 * n): A itself when m >= n, else A^T).  Hestenes' one-sided Jacobi rotates pairs of W's
 * columns, each rotation making its pair orthogonal, and sweeps over all pairs until every
 * pair is orthogonal to working precision; the same rotations applied to V (c x c, starting
 * as I) keep W = A V.  Then the column norms of W are the singular values (sorted
 * descending here) and W's normalised columns the singular vectors on the long side: A =
 * (W S^-1) S V^T.  The method has high relative accuracy (about 1e-15 times the condition
 * of each column scaling) and is simple, at a few times LAPACK's cost for large matrices.
 * The long side's basis is re-orthonormalised by two Gram-Schmidt passes; a column whose
 * singular value is zero (or lost in rounding) and, for full_matrices, the columns past c
 * are completed by the Householder QR of the others (Note [Householder QR] in
 * linalg_decomp.c).  For m < n the roles swap: U is V
 * and Vh is the transposed long-side basis. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "../../c10/tls.h"
#include "linalg_impl.h"
#include "native.h"

#define MAX_SWEEPS 80

/* x . y with four partial sums, so the compiler can keep them in one vector register
 * (a single running sum is a chain of dependent adds it may not reorder). */
static double
dot(const double *x, const double *y, int64_t n)
{
    double acc[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        for (int k = 0; k < 4; k++) {
            acc[k] += x[i + k] * y[i + k];
        }
    }
    for (; i < n; i++) {
        acc[0] += x[i] * y[i];
    }
    return (acc[0] + acc[2]) + (acc[1] + acc[3]);
}

/* Rotates the c columns of w (r rows) pairwise until they are orthogonal, applying each
 * rotation to the columns of v (c rows) too when v is not NULL.  nrm (c entries) holds the
 * squared column norms: recomputed every sweep, updated by each rotation in between. */
static void
jacobi(double *w, double *v, double *nrm, int64_t r, int64_t c)
{
    for (int sweep = 0; sweep < MAX_SWEEPS; sweep++) {
        int rotated = 0;
        for (int64_t j = 0; j < c; j++) {
            nrm[j] = dot(w + j * r, w + j * r, r);
        }
        for (int64_t p = 0; p + 1 < c; p++) {
            for (int64_t q = p + 1; q < c; q++) {
                double *wp = w + p * r, *wq = w + q * r;
                double alpha = nrm[p], beta = nrm[q], gamma = dot(wp, wq, r);
                if (gamma == 0 || fabs(gamma) <= DBL_EPSILON * sqrt(alpha) * sqrt(beta)) {
                    continue;
                }
                rotated = 1;
                /* tan of the angle that zeroes the pair's inner product (the smaller root
                 * of t^2 + 2 zeta t - 1 = 0) */
                double zeta = (beta - alpha) / (2 * gamma);
                double t = copysign(1.0, zeta) / (fabs(zeta) + hypot(1.0, zeta));
                double cs = 1 / sqrt(1 + t * t), sn = cs * t;
                for (int64_t i = 0; i < r; i++) {
                    double x = wp[i], y = wq[i];
                    wp[i] = cs * x - sn * y;
                    wq[i] = sn * x + cs * y;
                }
                nrm[p] = alpha - t * gamma;
                nrm[q] = beta + t * gamma;
                if (v != NULL) {
                    double *vp = v + p * c, *vq = v + q * c;
                    for (int64_t i = 0; i < c; i++) {
                        double x = vp[i], y = vq[i];
                        vp[i] = cs * x - sn * y;
                        vq[i] = sn * x + cs * y;
                    }
                }
            }
        }
        if (!rotated) {
            break;
        }
    }
}

/* Makes column j of q (r rows) orthogonal to columns 0..j-1 (two Gram-Schmidt passes) and
 * of unit norm; returns the norm it had after the passes (0: left as is). */
static double
orthonormalize(double *q, int64_t r, int64_t j)
{
    double *x = q + j * r;
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t i = 0; i < j; i++) {
            double d = dot(q + i * r, x, r);
            for (int64_t e = 0; e < r; e++) {
                x[e] -= d * q[i * r + e];
            }
        }
    }
    double nrm = sqrt(dot(x, x, r));
    if (nrm > 0) {
        for (int64_t e = 0; e < r; e++) {
            x[e] /= nrm;
        }
    }
    return nrm;
}

/* Completes q (r x qcols, column-major) whose columns fail[0..nfail) are zero and whose
 * others are orthonormal: the Householder QR of the g = qcols - nfail good columns gives Q
 * (r x r), whose columns g.. span their orthogonal complement; they fill the failed
 * columns.  O(r qcols g), where trying unit vectors one by one was O(r qcols^3).  0 or -1. */
static int
complete_columns(double *q, int64_t r, int64_t qcols, const int64_t *fail, int64_t nfail)
{
    int64_t g = qcols - nfail;
    double *a = malloc(sizeof(double) * (size_t)(r * g + r * qcols + g + qcols + 1));
    if (a == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "linalg.svd: out of memory");
    }
    double *f = a + r * g, *tau = f + r * qcols, *w = tau + g;
    /* a: the good columns, row-major r x g */
    for (int64_t j = 0, t = 0, k = 0; j < qcols; j++) {
        if (t < nfail && fail[t] == j) {
            t++;
            continue;
        }
        for (int64_t e = 0; e < r; e++) {
            a[e * g + k] = q[j * r + e];
        }
        k++;
    }
    ptl_linalg_qr_factor(a, r, g, tau, w);
    ptl_linalg_qr_form_q(a, r, g, tau, f, qcols, w);
    for (int64_t t = 0; t < nfail; t++) {
        for (int64_t e = 0; e < r; e++) {
            q[fail[t] * r + e] = f[e * qcols + g + t];
        }
    }
    free(a);
    return 0;
}

typedef struct SvdJob {
    const double *a;          /* [B, m, n] contiguous */
    double *u, *s, *vh;       /* [B, m, ucols], [B, k], [B, vrows, n]; u, vh NULL: values only */
    int64_t m, n, ucols, vrows;
    int full;
} SvdJob;

/* One matrix: a (m x n, row-major) -> u, s, vh (row-major). */
static int
svd_one(const SvdJob *job, const double *a, double *u, double *s, double *vh)
{
    int64_t m = job->m, n = job->n, tall = m >= n;
    int64_t r = tall ? m : n, c = tall ? n : m;
    int64_t qcols = job->full ? r : c;
    int uv = u != NULL;
    double *w = malloc(sizeof(double) * (size_t)(r * c + c * c + r * qcols + 2 * c + 1));
    double amax = 0;
    int e2 = 0;
    if (w == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "linalg.svd: out of memory");
    }
    double *v = w + r * c, *q = v + c * c, *sig = q + r * qcols, *nrm = sig + c;
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)(c + 1));
    int64_t *fail = malloc(sizeof(int64_t) * (size_t)(qcols + 1));
    if (idx == NULL || fail == NULL) {
        free(fail);
        free(idx);
        free(w);
        return ptl_error_set(PTL_ERR_MEMORY, "linalg.svd: out of memory");
    }
    /* W[j * r + i] = A[i, j] (tall) or A[j, i] (wide) */
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            w[tall ? j * r + i : i * r + j] = a[i * n + j];
        }
    }
    /* scaled by a power of two (exact) to a largest entry in [0.5, 1): the squared norms
     * neither overflow nor underflow */
    for (int64_t i = 0; i < r * c; i++) {
        amax = fmax(amax, fabs(w[i]));
    }
    if (amax > 0) {
        frexp(amax, &e2);
        for (int64_t i = 0; i < r * c; i++) {
            w[i] = ldexp(w[i], -e2);
        }
    }
    if (uv) {
        memset(v, 0, sizeof(double) * (size_t)(c * c));
        for (int64_t j = 0; j < c; j++) {
            v[j * c + j] = 1;
        }
    }
    jacobi(w, uv ? v : NULL, nrm, r, c);
    /* singular values, sorted descending (insertion sort: stable) */
    for (int64_t j = 0; j < c; j++) {
        sig[j] = sqrt(dot(w + j * r, w + j * r, r));
        int64_t p = j;
        while (p > 0 && sig[idx[p - 1]] < sig[j]) {
            idx[p] = idx[p - 1];
            p--;
        }
        idx[p] = j;
    }
    for (int64_t j = 0; j < c; j++) {
        s[j] = ldexp(sig[idx[j]], e2);
    }
    if (uv) {
        /* the long side's basis: normalised columns of W, orthonormalised again; those
         * whose singular value is zero or lost in rounding and those past c are completed */
        int64_t nfail = 0;
        for (int64_t j = 0; j < qcols; j++) {
            double *x = q + j * r;
            double sj = j < c ? sig[idx[j]] : 0;
            if (sj > 0) {
                const double *wj = w + idx[j] * r;
                for (int64_t e = 0; e < r; e++) {
                    x[e] = wj[e] / sj;
                }
            }
            if (!(sj > 0) || orthonormalize(q, r, j) < 0.5) {
                memset(x, 0, sizeof(double) * (size_t)r);
                fail[nfail++] = j;
            }
        }
        if (nfail > 0 && complete_columns(q, r, qcols, fail, nfail) < 0) {
            free(fail);
            free(idx);
            free(w);
            return -1;
        }
        /* tall: U = Q (m x qcols), Vh[j, :] = V[:, idx j]; wide: U[:, j] = V[:, idx j],
         * Vh = Q^T (qcols x n) */
        double *ql = tall ? u : vh, *vs = tall ? vh : u;
        for (int64_t j = 0; j < qcols; j++) {
            for (int64_t e = 0; e < r; e++) {
                if (tall) {
                    ql[e * qcols + j] = q[j * r + e];
                }
                else {
                    ql[j * r + e] = q[j * r + e];
                }
            }
        }
        for (int64_t j = 0; j < c; j++) {
            const double *vj = v + idx[j] * c;
            for (int64_t e = 0; e < c; e++) {
                if (tall) {
                    vs[j * c + e] = vj[e];
                }
                else {
                    vs[e * c + j] = vj[e];
                }
            }
        }
    }
    free(fail);
    free(idx);
    free(w);
    return 0;
}

static int
svd_chunk(void *ctx, int64_t b, int64_t e)
{
    const SvdJob *job = ctx;
    int64_t k = job->m < job->n ? job->m : job->n;
    for (int64_t i = b; i < e; i++) {
        double *u = job->u ? job->u + i * job->m * job->ucols : NULL;
        double *vh = job->vh ? job->vh + i * job->vrows * job->n : NULL;
        if (svd_one(job, job->a + i * job->m * job->n, u, job->s + i * k, vh) < 0) {
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
 * compute_uv U and Vh are empty [0].  Computed in float64 (Note [One-sided Jacobi]). */
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
    SvdJob job = {NULL, NULL, NULL, NULL, m, n, full ? m : k, full ? n : k, full};
    if ((a = ptl_cast(A, PTL_DTYPE_FLOAT64)) == NULL) {
        return -1;
    }
    const double *ad = (const double *)ptl_tensor_data(a);
    for (int64_t i = 0; i < a->numel; i++) {
        if (!isfinite(ad[i])) {
            ptl_error_set(PTL_ERR_RUNTIME, "linalg.svd: The algorithm failed to converge "
                          "because the input matrix contained non-finite values.");
            goto error;
        }
    }
    memcpy(sz, A->sizes, sizeof(int64_t) * (size_t)nd);
    int64_t zero = 0;
    sz[nd - 1] = job.ucols;
    out[0] = uv ? ptl_empty(nd, sz, PTL_DTYPE_FLOAT64, A->device) : ptl_empty(1, &zero, A->dtype,
                                                                         A->device);
    sz[nd - 2] = k;
    out[1] = ptl_empty(nd - 1, sz, PTL_DTYPE_FLOAT64, A->device);
    sz[nd - 2] = job.vrows;
    sz[nd - 1] = n;
    out[2] = uv ? ptl_empty(nd, sz, PTL_DTYPE_FLOAT64, A->device) : ptl_empty(1, &zero, A->dtype,
                                                                         A->device);
    if (out[0] == NULL || out[1] == NULL || out[2] == NULL) {
        goto error;
    }
    job.a = ad;
    job.s = (double *)ptl_tensor_data(out[1]);
    job.u = uv ? (double *)ptl_tensor_data(out[0]) : NULL;
    job.vh = uv ? (double *)ptl_tensor_data(out[2]) : NULL;
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
 * The legacy torch.svd: [*, m, n] -> U [*, m, k or m], S [*, k], V [*, n, k or n] (V, not
 * Vh); without compute_uv, U [*, m, m] and V [*, n, n] are zeros.  Composite over
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
