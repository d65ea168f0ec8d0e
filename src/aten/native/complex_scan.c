/* complex_scan.c -- logcumsumexp of complex64/complex128 tensors, a Complex-key kernel (Note
 * [Complex dtypes] in complex.c).  Mirrors the complex branch of logcumsumexp in
 * ATen/native/ReduceOps.cpp and cpu/ReduceOpsKernel.cpp.  Its derivative:
 * LogcumsumexpBackward0 (autograd/derivatives/sort.c).
 *
 * Note [Complex logcumsumexp]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * r_j = log(e^r_{j-1} + e^x_j) from r_-1 = -inf + 0i, each step max + log1p(e^(min - max))
 * with min and max the two operands ordered by real part (r_{j-1} is min on a tie), in
 * complex128 for both dtypes (PyTorch accumulates complex64 in complex128 too), so the
 * imaginary part is not reduced to (-pi, pi].  PyTorch's special cases, kept:
 *   - a NaN in either part of either operand gives NaN + NaN i, from there to the lane's end;
 *   - two real parts of -inf give min (e^-inf is 0 whatever the imaginary part, so the
 *     running value's stays: -inf + 0i from the start);
 *   - two real parts of +inf give log(e^min + e^max), with no log1p to turn inf - inf into
 *     NaN.
 * The input is made contiguous and seen as [outer, len, inner]: row j of a block follows
 * from row j - 1 with the inner elements side by side (the loop runs along memory), the
 * running values of a chunk of CHUNK columns kept in complex128.  The (block, chunk) tasks
 * are split over threads by ptl_parallel_for, about SCAN_GRAIN elements a task; each lane
 * runs in one task in the same order, so the result does not depend on the split. */
#include <math.h>

#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "../complex_math.h"
#include "linalg_impl.h"
#include "native.h"

/* the columns of a task, and the elements (exp and log1p each) a task is given at least */
#define CHUNK 256
#define SCAN_GRAIN 4096

static inline int
znan(ptl_complex128 z)
{
    return isnan(creal(z)) || isnan(cimag(z));
}

/* log(e^acc + e^x) as Note [Complex logcumsumexp] */
static inline ptl_complex128
log_add_exp(ptl_complex128 acc, ptl_complex128 x)
{
    if (znan(acc) || znan(x)) {
        return ptl_cmplx(NAN, NAN);
    }
    int x_first = creal(x) < creal(acc);
    ptl_complex128 lo = x_first ? x : acc, hi = x_first ? acc : x;
    if (!isfinite(creal(lo)) && creal(lo) == creal(hi)) {
        return creal(lo) < 0 ? lo : clog(cexp(lo) + cexp(hi));
    }
    return ptl_clog1p(cexp(lo - hi)) + hi;
}

typedef struct ScanJob {
    const char *x; /* [outer, len, inner] contiguous, complex64 or complex128 */
    char *out;     /* likewise */
    int64_t len, inner, nchunks;
    int wide; /* complex128 */
} ScanJob;

static inline ptl_complex128
load(const ScanJob *j, int64_t i)
{
    return j->wide ? ((const ptl_complex128 *)j->x)[i]
                   : (ptl_complex128)((const ptl_complex64 *)j->x)[i];
}

static inline void
store(const ScanJob *j, int64_t i, ptl_complex128 v)
{
    if (j->wide) {
        ((ptl_complex128 *)j->out)[i] = v;
    }
    else {
        ((ptl_complex64 *)j->out)[i] = (ptl_complex64)v;
    }
}

/* tasks [b, e): task t is block t / nchunks, columns of chunk t % nchunks */
static int
scan_tasks(void *ctx, int64_t b, int64_t e)
{
    const ScanJob *j = ctx;
    ptl_complex128 acc[CHUNK];
    for (int64_t t = b; t < e; t++) {
        int64_t block = t / j->nchunks, c0 = (t % j->nchunks) * CHUNK;
        int64_t nc = j->inner - c0 < CHUNK ? j->inner - c0 : CHUNK;
        int64_t base = block * j->len * j->inner + c0;
        for (int64_t c = 0; c < nc; c++) {
            acc[c] = ptl_cmplx(-INFINITY, 0.0);
        }
        for (int64_t r = 0; r < j->len; r++) {
            int64_t row = base + r * j->inner;
            for (int64_t c = 0; c < nc; c++) {
                acc[c] = log_add_exp(acc[c], load(j, row + c));
                store(j, row + c, acc[c]);
            }
        }
    }
    return 0;
}

/* logcumsumexp(Tensor self, int dim) -> Tensor   [*] -> [*], self complex */
static int
logcumsumexp_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *self = s[0].u.t, *x = NULL, *out = NULL;
    int64_t d = s[1].u.i;
    if (ptl_linalg_refuse_cuda(op, ks, s) < 0 || ptl_wrap_dim(&d, self->dim) < 0) {
        return -1;
    }
    if ((x = ptl_contiguous(self)) == NULL ||
        (out = ptl_empty(self->dim, self->sizes, self->dtype, self->device)) == NULL) {
        goto error;
    }
    ScanJob j = {ptl_tensor_data(x), ptl_tensor_data(out), 1, 1, 1,
                 self->dtype == PTL_DTYPE_COMPLEX128};
    int64_t outer = 1;
    for (int i = 0; i < self->dim; i++) {
        int64_t n = self->sizes[i];
        if (i < d) {
            outer *= n;
        }
        else if (i == d) {
            j.len = n;
        }
        else {
            j.inner *= n;
        }
    }
    if (self->numel > 0 && !ptl_tensor_is_meta(self)) {
        j.nchunks = (j.inner + CHUNK - 1) / CHUNK;
        int64_t per_task = j.len * (j.inner < CHUNK ? j.inner : CHUNK);
        int64_t grain = per_task >= SCAN_GRAIN ? 1 : SCAN_GRAIN / per_task;
        void *tok = self->numel >= SCAN_GRAIN ? ptl_nogil_begin() : NULL;
        int rc = ptl_parallel_for(0, outer * j.nchunks, grain, scan_tasks, &j);
        ptl_nogil_end(tok);
        if (rc < 0) {
            goto error;
        }
    }
    ptl_decref(x);
    s[0] = ptl_iv_tensor(out);
    return 0;
error:
    ptl_xdecref(x);
    ptl_xdecref(out);
    return -1;
}

static const PtlKernelReg complex_scan_kernels[] = {
    {PTL_OP_logcumsumexp, PTL_KEY_COMPLEX, logcumsumexp_complex},
};
PTL_DEFINE_REGISTER(complex_scan_kernels)
