/* linalg_impl.h -- what the dense linear-algebra kernels of linalg_solve.c, linalg_decomp.c
 * and linalg_eigh_dc.c share: PyTorch's input checks and messages, the working copies
 * (float64, or float32 where a float32 input is factored in float32), the loop over the
 * matrices of a batch and the tridiagonal eigensolvers.  See Note [Float64 linear algebra]
 * in linalg_solve.c. */
#ifndef PTL_ATEN_NATIVE_LINALG_IMPL_H
#define PTL_ATEN_NATIVE_LINALG_IMPL_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "native.h"

/* "<fn>: The input tensor <arg> must have at least 2 dimensions."  0 or -1. */
static inline int
linalg_check_matrix(const char *fn, const PtlTensorImpl *t, const char *arg)
{
    if (t->dim < 2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: The input tensor %s must have at least 2 "
                             "dimensions.", fn, arg);
    }
    return 0;
}

/* A is at least 2-D and its matrices are square.  0 or -1. */
static inline int
linalg_check_square(const char *fn, const PtlTensorImpl *A)
{
    if (linalg_check_matrix(fn, A, "A") < 0) {
        return -1;
    }
    int64_t m = A->sizes[A->dim - 2], n = A->sizes[A->dim - 1];
    if (m != n) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: A must be batches of square matrices, but "
                             "they are %lld by %lld matrices", fn, (long long)m, (long long)n);
    }
    return 0;
}

/* A is float32 or float64, else the NotImplementedError of the LAPACK kernel `kernel`
 * ("lu_cpu").  0 or -1. */
static inline int
linalg_check_kernel_dtype(const char *kernel, const PtlTensorImpl *A)
{
    if (A->dtype != PTL_DTYPE_FLOAT32 && A->dtype != PTL_DTYPE_FLOAT64) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'", kernel,
                             ptl_dtype_legacy_name(A->dtype));
    }
    return 0;
}

/* A is float32 or float64: a non-floating A is PyTorch's RuntimeError, float16/bfloat16
 * the NotImplementedError of the LAPACK kernel `kernel` ("lu_cpu").  0 or -1. */
static inline int
linalg_check_dtype(const char *fn, const char *kernel, const PtlTensorImpl *A)
{
    if (!ptl_dtype_is_floating(A->dtype)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: Expected a floating point or complex tensor "
                             "as input. Got %s", fn, ptl_dtype_legacy_name(A->dtype));
    }
    if (A->dtype != PTL_DTYPE_FLOAT32 && A->dtype != PTL_DTYPE_FLOAT64) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'", kernel,
                             ptl_dtype_legacy_name(A->dtype));
    }
    return 0;
}

/* A Complex-key kernel's refusal of a call on CUDA (linalg_complex.c): the complex fallback's
 * "\"<op>_cuda\" not implemented for 'ComplexFloat'" and -1 when ks names CUDA, else 0. */
int ptl_linalg_refuse_cuda(const PtlOperator *op, PtlDispatchKeySet ks, const PtlIValue *s);

/* linalg_vector_norm's input in the dtype its `dtype` argument names (None: self itself),
 * converted with ks (linalg_norm.c): a new reference, or NULL with PyTorch's error for a
 * dtype that is not floating point or complex, not complex for a complex self (not real for
 * a real one) or narrower than self's. */
PtlTensorImpl *ptl_vector_norm_input(PtlDispatchKeySet ks, PtlTensorImpl *self,
                                     const PtlIValue *dtype);

/* cdist's first checks, in PyTorch's order and words (linalg_norm.c; _cdist_forward of a
 * complex tensor makes them too: complex_norm.c): both at least 2-D, one column count,
 * floating dtypes.  0, or -1 with the error set. */
int ptl_cdist_check(const PtlTensorImpl *x1, const PtlTensorImpl *x2);

/* renorm and renorm_'s kernel (linalg_norm.c); complex_norm.c's runs it for a complex self */
int ptl_renorm_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s);

/* The number of matrices in t: the product of its dims before the last `nlast`. */
static inline int64_t
linalg_batch_count(const PtlTensorImpl *t, int nlast)
{
    int64_t b = 1;
    for (int d = 0; d < t->dim - nlast; d++) {
        b *= t->sizes[d];
    }
    return b;
}

/* A new contiguous tensor of dtype dt and the given sizes holding t broadcast to them (new
 * ref). */
static inline PtlTensorImpl *
linalg_work_copy(PtlTensorImpl *t, PtlDtype dt, int dim, const int64_t *sizes)
{
    PtlTensorImpl *out = ptl_empty(dim, sizes, dt, t->device);
    if (out != NULL && ptl_copy_into(out, t) < 0) {
        PTL_CLEAR(out);
    }
    return out;
}

/* Replaces *t by its cast to dt (nothing when it has that dtype already).  0 or -1. */
static inline int
linalg_cast_to(PtlTensorImpl **t, PtlDtype dt)
{
    if ((*t)->dtype == dt) {
        return 0;
    }
    PtlTensorImpl *c = ptl_cast(*t, dt);
    if (c == NULL) {
        return -1;
    }
    ptl_decref(*t);
    *t = c;
    return 0;
}

/* linalg_load_f8 (double) and linalg_load_f4 (float), and from LINALG_DEFINE_LOAD the complex
 * ones of linalg_complex.c (c8, c16): dst (r x c) = src (r x c) or src^T (src c x r), both
 * row-major */
#define LINALG_DEFINE_LOAD(T, SUF)                                                            \
    static inline void linalg_load_##SUF(T *dst, const T *src, int64_t r, int64_t c,         \
                                         int trans)                                           \
    {                                                                                         \
        if (!trans) {                                                                         \
            memcpy(dst, src, sizeof(T) * (size_t)(r * c));                                    \
            return;                                                                           \
        }                                                                                     \
        for (int64_t i = 0; i < r; i++) {                                                     \
            for (int64_t j = 0; j < c; j++) {                                                 \
                dst[i * c + j] = src[j * r + i];                                              \
            }                                                                                 \
        }                                                                                     \
    }
LINALG_DEFINE_LOAD(double, f8)
LINALG_DEFINE_LOAD(float, f4)

/* One job for every kernel of the LU family (linalg_solve.c, and its complex instances in
 * linalg_complex.c): the working tensors of matrix i (float64, or float32 for float32
 * inputs, or the complex input's own dtype) are base + i * (its size); NULL ones are not
 * computed. */
typedef struct LuJob {
    const void *a;      /* [B, m, n] the input (A, or the triangular matrix) */
    void *b;            /* [B, n, nrhs] right-hand sides, solved in place (or [B, nrhs, n]) */
    void *lu;           /* [B, m, n] */
    int32_t *piv;       /* [B, min(m, n)] */
    int32_t *info;      /* [B] */
    void *det, *sign;   /* [B]: det (or logabsdet, real for complex A, when sign is set) */
    int64_t m, n, nrhs;
    int left, upper, unit;
} LuJob;

/* The LuJob kernels of complex64 (_c8) and complex128 (_c16) matrices, in linalg_complex.c
 * (Note [Complex linear algebra] there): ptl_linalg_lu_matrix_* as linalg_solve.c's
 * lu_matrix, ptl_linalg_tri_matrix_* as its tri_matrix. */
int ptl_linalg_lu_matrix_c8(void *ctx, int64_t i);
int ptl_linalg_lu_matrix_c16(void *ctx, int64_t i);
int ptl_linalg_tri_matrix_c8(void *ctx, int64_t i);
int ptl_linalg_tri_matrix_c16(void *ctx, int64_t i);

/* Releases the tensors of t[0..n) (NULL ones skipped); returns -1. */
static inline int
linalg_release_all(PtlTensorImpl **t, int n)
{
    for (int i = 0; i < n; i++) {
        ptl_xdecref(t[i]);
    }
    return -1;
}

/* Householder QR (Note [Householder QR], linalg_decomp.c).  ptl_linalg_qr_factor: a (m x n,
 * row-major) -> R in its upper triangle, the reflections below it, their taus in tau
 * (min(m, n)); w: n scratch.  ptl_linalg_qr_form_q: q (m x qc, row-major) = the first qc
 * columns of Q from those; w: qc scratch. */
void ptl_linalg_qr_factor(double *a, int64_t m, int64_t n, double *tau, double *w);
void ptl_linalg_qr_form_q(const double *a, int64_t m, int64_t n, const double *tau, double *q,
                          int64_t qc, double *w);

/* The same in column blocks (Note [Blocked QR]).  ptl_linalg_qr_scratch: the doubles of
 * scratch for an m x n matrix whose Q has qc columns.  ptl_linalg_qr_blocked: the factor and,
 * when q is not NULL, the first qc columns of Q (row-major).  ptl_linalg_qr_form_q_blocked:
 * those columns from a and tau into q with row stride ldq.  0 or -1 (error set). */
int64_t ptl_linalg_qr_scratch(int64_t m, int64_t n, int64_t qc);
int ptl_linalg_qr_blocked(double *a, int64_t m, int64_t n, double *tau, double *q, int64_t qc,
                          double *scratch);
int ptl_linalg_qr_form_q_blocked(const double *a, int64_t m, int64_t n, const double *tau,
                                 double *q, int64_t ldq, int64_t qc, double *scratch);

/* Their float32 instances, for the float32 work of svd.c and linalg_lstsq.c (Note [Float64
 * linear algebra] in linalg_solve.c): the same arguments in floats, the scratch
 * ptl_linalg_qr_scratch(m, n, qc) floats. */
int ptl_linalg_qr_blocked_f32(float *a, int64_t m, int64_t n, float *tau, float *q, int64_t qc,
                              float *scratch);
int ptl_linalg_qr_form_q_blocked_f32(const float *a, int64_t m, int64_t n, const float *tau,
                                     float *q, int64_t ldq, int64_t qc, float *scratch);

/* The symmetric tridiagonal eigenproblem (d, e on n rows, e[i] coupling i and i + 1), in
 * linalg_eigh_dc.c.  ptl_linalg_tridiagonal_ql (Note [Symmetric eigensolver],
 * linalg_decomp.c): d -> the eigenvalues unsorted, the rotations applied to the rows of zt
 * (n x n) when not NULL; rot: 2n scratch; 0, or -1 when it does not converge.
 * ptl_linalg_tridiagonal_values (float32 eigvalsh's, in double): d -> the eigenvalues
 * unsorted, by the root-free QL; 0, -1 when it does not converge, or 1 when T is not finite
 * (e then clobbered).  ptl_linalg_tridiagonal_dc (Note
 * [Tridiagonal divide and conquer], linalg_eigh_dc.c): d -> the eigenvalues ascending, row c
 * of zt (row stride ldz) the eigenvector of d[c]; work: ptl_linalg_tridiagonal_dc_scratch(n)
 * elements; 0, -1 (error set) or -2 (a leaf's QL did not converge).  eigh takes it above
 * LINALG_DC_LEAF rows, its leaves' size.  The _f32 instances: the same in floats, for
 * float32 eigh (Note [Float64 linear algebra] in linalg_solve.c). */
#define LINALG_DC_LEAF 32
int ptl_linalg_tridiagonal_ql(double *d, double *e, double *zt, int64_t n, double *rot);
int ptl_linalg_tridiagonal_ql_f32(float *d, float *e, float *zt, int64_t n, float *rot);
int ptl_linalg_tridiagonal_values(double *d, double *e, int64_t n);
int64_t ptl_linalg_tridiagonal_dc_scratch(int64_t n);
int ptl_linalg_tridiagonal_dc(double *d, double *e, int64_t n, double *zt, int64_t ldz,
                              double *work);
int ptl_linalg_tridiagonal_dc_f32(float *d, float *e, int64_t n, float *zt, int64_t ldz,
                                  float *work);

/* Before the divide and conquer (linalg_decomp.c's eigh_dc, linalg_complex_eigh.c's): T (d, e
 * on n rows) scaled by 2^-ex, ex the exponent of its largest entry (frexp's; 0 for a zero T),
 * which is exact and keeps the secular equation's terms far from overflow; 0, or 1 when an
 * entry is not finite (d, e untouched).  linalg_tridiagonal_scale (double) and
 * linalg_tridiagonal_scalef (float), named as libm's functions, for the F of the kernels'
 * macros. */
#define LINALG_DEFINE_TRIDIAGONAL_SCALE(T, F)                                                 \
    static inline int linalg_tridiagonal_scale##F(T *d, T *e, int64_t n, int *ex)            \
    {                                                                                         \
        T big = 0;                                                                            \
        for (int64_t i = 0; i < n; i++) {                                                     \
            if (!isfinite(d[i]) || !isfinite(e[i])) {                                         \
                return 1;                                                                     \
            }                                                                                 \
            big = fmax##F(big, fmax##F(fabs##F(d[i]), fabs##F(e[i])));                        \
        }                                                                                     \
        *ex = 0;                                                                              \
        if (big > 0) {                                                                        \
            frexp##F(big, ex);                                                                \
        }                                                                                     \
        for (int64_t i = 0; i < n; i++) {                                                     \
            d[i] = ldexp##F(d[i], -*ex);                                                      \
            e[i] = ldexp##F(e[i], -*ex);                                                      \
        }                                                                                     \
        return 0;                                                                             \
    }
LINALG_DEFINE_TRIDIAGONAL_SCALE(double, )
LINALG_DEFINE_TRIDIAGONAL_SCALE(float, f)
#undef LINALG_DEFINE_TRIDIAGONAL_SCALE

/* The work on one matrix of a batch: 0, or -1 with the error set. */
typedef int (*LinalgMatrixFn)(void *ctx, int64_t i);

typedef struct LinalgBatchJob {
    LinalgMatrixFn fn;
    void *ctx;
} LinalgBatchJob;

static inline int
linalg_batch_chunk(void *ctx, int64_t b, int64_t e)
{
    const LinalgBatchJob *job = ctx;
    for (int64_t i = b; i < e; i++) {
        if (job->fn(job->ctx, i) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Runs fn on matrices 0..batch-1 over the thread pool, without the GIL when the batch
 * (`work` flops per matrix) is worth it.  0 or -1. */
static inline int
linalg_batch_run(int64_t batch, int64_t work, LinalgMatrixFn fn, void *ctx)
{
    LinalgBatchJob job = {fn, ctx};
    work = work > 0 ? work : 1;
    void *token = batch * work >= PTL_GRAIN_SIZE ? ptl_nogil_begin() : NULL;
    int rc = ptl_parallel_for(0, batch, work >= PTL_GRAIN_SIZE ? 1 : PTL_GRAIN_SIZE / work,
                              linalg_batch_chunk, &job);
    if (token != NULL) {
        ptl_nogil_end(token);
    }
    return rc;
}

/* Raises PyTorch's error for the first matrix whose info (int32, one per matrix) is not
 * zero: "<fn>: [(Batch element i): ]<detail>" where `detail` is a printf format taking the
 * info value (an int) at most once and `batched` says whether A had batch dims.  0 when
 * every info is zero, else -1 with an error of `kind`. */
static inline int
linalg_check_info(const char *fn, const PtlTensorImpl *info, int batched, PtlErrorKind kind,
                  const char *detail)
{
    const int32_t *d = (const int32_t *)ptl_tensor_data(info);
    for (int64_t i = 0; i < info->numel; i++) {
        if (d[i] != 0) {
            char text[400], where[64] = "";
            snprintf(text, sizeof(text), detail, (int)d[i]);
            if (batched) {
                snprintf(where, sizeof(where), "(Batch element %lld): ", (long long)i);
            }
            return ptl_error_set(kind, "%s: %s%s", fn, where, text);
        }
    }
    return 0;
}

/* Calls op id with the nargs arguments args (on a stack of its own, with room for every
 * return); then keeps the returns listed in keep[0..nkeep) in s[0..nkeep) and releases the
 * others.  0 or -1. */
static inline int
linalg_call_keep(PtlOpId id, const PtlIValue *args, int nargs, PtlIValue *s, const int *keep,
                 int nkeep)
{
    const PtlOperator *op = ptl_op(id);
    PtlIValue st[PTL_SCHEMA_MAX_ARGS];
    memcpy(st, args, sizeof(PtlIValue) * (size_t)nargs);
    if (ptl_dispatcher_call(op, st) < 0) {
        return -1;
    }
    PtlIValue out[PTL_SCHEMA_MAX_ARGS];
    for (int i = 0; i < nkeep; i++) {
        out[i] = st[keep[i]];
        st[keep[i]] = ptl_iv_none();
    }
    for (int i = 0; i < op->schema.nrets; i++) {
        ptl_ivalue_release(&st[i]);
    }
    memcpy(s, out, sizeof(PtlIValue) * (size_t)nkeep);
    return 0;
}

/* Raises for s[info_slot] as linalg_check_info does and releases s[0..nret) then. */
static inline int
linalg_check_returns(PtlIValue *s, int nret, int info_slot, const char *fn, int batched,
                     PtlErrorKind kind, const char *detail)
{
    if (linalg_check_info(fn, s[info_slot].u.t, batched, kind, detail) < 0) {
        for (int i = 0; i < nret; i++) {
            ptl_ivalue_release(&s[i]);
        }
        return -1;
    }
    return 0;
}

/* One 64-byte vector of doubles or floats (gcc's vector extension), for the symmetric
 * eigensolver's loops (linalg_decomp.c's reduction, linalg_eigh_dc.c's secular equations). */
typedef double LinalgVec8 __attribute__((vector_size(64)));
typedef float LinalgVec4 __attribute__((vector_size(64)));

/* The sum of a vector's lanes: double's eight in order (the order, and so the bits, float64
 * has always had), float's sixteen as a tree (sixteen dependent additions were a tenth of
 * float32 eigh's time at n = 64). */
static inline __attribute__((always_inline)) double
lanes_sum_f8(LinalgVec8 v)
{
    double s = 0;
    for (int l = 0; l < 8; l++) {
        s += v[l];
    }
    return s;
}

static inline __attribute__((always_inline)) float
lanes_sum_f4(LinalgVec4 v)
{
    typedef float Half __attribute__((vector_size(32)));
    typedef float Quarter __attribute__((vector_size(16)));
    Half a, b;
    Quarter c, d;
    memcpy(&a, &v, sizeof(a));
    memcpy(&b, (const char *)&v + sizeof(a), sizeof(b));
    a += b;
    memcpy(&c, &a, sizeof(c));
    memcpy(&d, (const char *)&a + sizeof(c), sizeof(d));
    c += d;
    return (c[0] + c[2]) + (c[1] + c[3]);
}

#endif
