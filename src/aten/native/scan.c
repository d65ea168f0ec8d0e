/* scan.c -- the cumulative scans cumsum and cumprod.  Mirrors the cumsum / cumprod parts of
 * ATen/native/ReduceOps.cpp and ATen/native/cpu/ReduceOpsKernel.cpp.  Each line along the
 * scanned dim runs on one thread, a block at a time through a double (or, for integer
 * results, an int64) buffer; lines are split over the threads. */
#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "block_load.h"
#include "native.h"

#define SCAN_BLOCK 256

typedef struct ScanJob {
    PtlTensorImpl *src, *out;   /* same shape and dtype; out contiguous */
    int dim;                    /* scanned dim, or -1 for a 0-dim tensor */
    int is_prod;
} ScanJob;

static int
scan_lines(void *ctx, int64_t b, int64_t e)
{
    const ScanJob *job = ctx;
    const PtlTensorImpl *src = job->src, *out = job->out;
    int64_t isz = (int64_t)ptl_tensor_itemsize(src);
    int64_t len = job->dim >= 0 ? src->sizes[job->dim] : 1;
    int64_t ist = job->dim >= 0 ? src->strides[job->dim] * isz : 0;
    int64_t ost = job->dim >= 0 ? out->strides[job->dim] * isz : 0;
    int use_int = ptl_dtype_is_integral(src->dtype, 1);
    double bd[SCAN_BLOCK];
    int64_t bi[SCAN_BLOCK];
    for (int64_t l = b; l < e; l++) {
        const char *p = ptl_tensor_data(src);
        char *q = ptl_tensor_data(out);
        int64_t rest = l;
        for (int d = src->dim - 1; d >= 0; d--) {
            if (d != job->dim) {
                p += (rest % src->sizes[d]) * src->strides[d] * isz;
                q += (rest % src->sizes[d]) * out->strides[d] * isz;
                rest /= src->sizes[d];
            }
        }
        double ad = job->is_prod ? 1 : 0;
        uint64_t ai = job->is_prod ? 1 : 0;
        for (int64_t k = 0; k < len; k += SCAN_BLOCK) {
            int64_t m = len - k < SCAN_BLOCK ? len - k : SCAN_BLOCK;
            if (use_int) {
                ptl_block_load_i[src->dtype](p + k * ist, ist, m, bi);
                for (int64_t t = 0; t < m; t++) {
                    ai = job->is_prod ? ai * (uint64_t)bi[t] : ai + (uint64_t)bi[t];
                    bi[t] = (int64_t)ai;
                }
                ptl_block_store_i[src->dtype](q + k * ost, ost, m, bi);
            }
            else {
                ptl_block_load_d[src->dtype](p + k * ist, ist, m, bd);
                for (int64_t t = 0; t < m; t++) {
                    ad = job->is_prod ? ad * bd[t] : ad + bd[t];
                    bd[t] = ad;
                }
                ptl_block_store_d[src->dtype](q + k * ost, ost, m, bd);
            }
        }
    }
    return 0;
}

/* cumsum / cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor
 * [*] -> [*]; integer and bool inputs accumulate in int64 unless dtype= is given */
static int
scan_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *src = NULL, *out = NULL;
    int64_t d = s[1].u.i;
    PtlDtype dt = s[2].tag == PTL_IV_DTYPE ? s[2].u.dtype : PTL_DTYPE_UNDEFINED;
    ScanJob job;
    if (ptl_wrap_dim(&d, self->dim) < 0) {
        return -1;
    }
    if (dt == PTL_DTYPE_UNDEFINED) {
        dt = ptl_dtype_is_integral(self->dtype, 1) ? PTL_DTYPE_INT64 : self->dtype;
    }
    src = dt != self->dtype ? ptl_cast(self, dt) : self;
    if (src == NULL) {
        return -1;
    }
    if (src == self) {
        ptl_incref(self);
    }
    if ((out = ptl_empty(self->dim, self->sizes, dt, self->device)) == NULL) {
        goto error;
    }
    job.src = src;
    job.out = out;
    job.dim = self->dim > 0 ? (int)d : -1;
    job.is_prod = op->id == PTL_OP_cumprod;
    int64_t len = self->dim > 0 ? self->sizes[d] : 1;
    if (self->numel > 0) {
        void *token = self->numel >= PTL_GRAIN_SIZE ? ptl_nogil_begin() : NULL;
        int rc = ptl_parallel_for(0, self->numel / len, PTL_GRAIN_SIZE / len + 1, scan_lines,
                                  &job);
        ptl_nogil_end(token);
        if (rc < 0) {
            goto error;
        }
    }
    ptl_decref(src);
    s[0] = ptl_iv_tensor(out);
    return 0;
error:
    ptl_xdecref(src);
    ptl_xdecref(out);
    return -1;
}

static const PtlKernelReg scan_cpu_kernels[] = {
    {PTL_OP_cumsum, PTL_KEY_CPU, scan_cpu},
    {PTL_OP_cumprod, PTL_KEY_CPU, scan_cpu},
};
PTL_DEFINE_REGISTER(scan_cpu_kernels)
