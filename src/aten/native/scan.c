/* scan.c -- the cumulative scans cumsum and cumprod.  Mirrors the cumsum / cumprod parts of
 * ATen/native/ReduceOps.cpp and ATen/native/cpu/ReduceOpsKernel.cpp.  Each line along the
 * scanned dim runs on one thread, a block at a time through a double (or, for integer
 * results, an int64) buffer; lines are split over the threads. */
#include <string.h>

#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "block_load.h"
#include "device_reduce.h"
#include "native.h"

#define SCAN_BLOCK 256

typedef struct ScanJob {
    PtlTensorImpl *src, *out;   /* same shape and dtype; out contiguous */
    int dim;                    /* scanned dim, or -1 for a 0-dim tensor */
    int is_prod;
} ScanJob;

int (*ptl_device_scan_hook)(const PtlDeviceScanArgs *a);

/* The lines of job on the CUDA kernel (Note [CUDA scans] in src/cuda/reduce_plan.h). */
static int
scan_device(const ScanJob *job)
{
    PtlDeviceScanArgs a;
    const PtlTensorImpl *src = job->src, *out = job->out;
    memset(&a, 0, sizeof(a));
    a.dtype = src->dtype;
    a.use_int = ptl_dtype_is_integral(src->dtype, 1);
    a.kind = job->is_prod ? PTL_DEVICE_SCAN_PROD : PTL_DEVICE_SCAN_SUM;
    a.ndim = src->dim;
    a.dim = job->dim >= 0 ? job->dim : 0;
    a.src = ptl_tensor_data(src);
    a.out = ptl_tensor_data(out);
    for (int d = 0; d < src->dim; d++) {
        a.sizes[d] = src->sizes[d];
        a.sst[d] = src->strides[d];
        a.ost[d] = out->strides[d];
    }
    a.len = src->dim > 0 ? src->sizes[job->dim] : 1;
    a.nlines = a.len > 0 ? src->numel / a.len : 0;
    a.itemsize = (int64_t)ptl_tensor_itemsize(src);
    return ptl_device_scan_hook(&a);
}

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

/* Note [Scan tiles]
 * ~~~~~~~~~~~~~~~~~
 * scan_lines runs one line at a time, and a line is a chain of dependent adds (a double add
 * a step, as PyTorch's CPU cumsum, whose accumulator is at::acc_type<float, false> =
 * double): the latency of the add bounds it, and a line along an outer dim walks the
 * memory a row apart at every step.  For a contiguous float32, float64 or int64 source,
 * view it as [outer, len, inner] and scan a tile of lines together, each still with its
 * own accumulator in the same order, so every result has the bits scan_lines gives:
 *   inner > 1: up to TILE_COLS neighbouring lines of one outer index, i.e. a row segment
 *              at every step (contiguous loads and stores that vectorize);
 *   inner = 1: up to TILE_LINES consecutive lines, len apart (independent add chains that
 *              overlap in the pipeline); int64 lines go one at a time, four elements a step
 *              of the chain (scan_line_i8: exact in any order).
 * Tiles are split over the threads.  1024 x 1024 float32, one thread: cumsum(0) 10.1 ms ->
 * 0.3-0.6 ms, cumsum(-1) 1.9 ms -> 0.5 ms. */
#define TILE_COLS 256
#define TILE_LINES 8

typedef struct TileJob {
    const char *src;
    char *dst;
    PtlDtype dt;
    int64_t outer, len, inner;
    int64_t ntile;               /* tiles per outer index (inner > 1) */
    int is_prod;
} TileJob;

/* g lines of len elements, element k of line i at i * gst + k * kst (elements) */
#define DEFINE_SCAN_TILE(T, ACC, DT)                                                      \
    static void                                                                           \
    scan_tile_##DT(const T *x, T *y, int64_t len, int64_t kst, int64_t gst, int64_t g,    \
                   int is_prod)                                                           \
    {                                                                                     \
        ACC acc[TILE_COLS];                                                               \
        for (int64_t i = 0; i < g; i++) {                                                 \
            acc[i] = is_prod ? 1 : 0;                                                     \
        }                                                                                 \
        for (int64_t k = 0; gst == 1 && k < len; k++) {                                  \
            const T *xk = x + k * kst;                                                    \
            T *yk = y + k * kst;                                                          \
            if (is_prod) {                                                                \
                for (int64_t i = 0; i < g; i++) {                                         \
                    acc[i] = acc[i] * (ACC)xk[i];                                         \
                    yk[i] = (T)acc[i];                                                    \
                }                                                                         \
            }                                                                             \
            else {                                                                        \
                for (int64_t i = 0; i < g; i++) {                                         \
                    acc[i] = acc[i] + (ACC)xk[i];                                         \
                    yk[i] = (T)acc[i];                                                    \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
        if (gst != 1 && g == 1) {  /* one line: one chain, without the tile's lanes */   \
            ACC r1 = is_prod ? 1 : 0;                                                     \
            for (int64_t k = 0; k < len; k++) {                                           \
                r1 = is_prod ? r1 * (ACC)x[k] : r1 + (ACC)x[k];                           \
                y[k] = (T)r1;                                                             \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        /* lines len apart: a constant count of chains, so that they stay in registers */ \
        ACC r[TILE_LINES];                                                                \
        for (int i = 0; i < TILE_LINES; i++) {                                            \
            r[i] = is_prod ? 1 : 0;                                                       \
        }                                                                                 \
        for (int64_t k = 0; gst != 1 && k < len; k++) {                                   \
            for (int i = 0; i < TILE_LINES; i++) {                                        \
                if (i < g) {                                                              \
                    ACC v = (ACC)x[i * gst + k];                                          \
                    r[i] = is_prod ? r[i] * v : r[i] + v;                                 \
                    y[i * gst + k] = (T)r[i];                                             \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
    }
/* float16 / bfloat16 tiles: each step's g values converted to float32 by the cast loops
 * (F16C, Note [Half-precision conversions]), added in double and rounded to float32 and then
 * to the dtype, as block_load's stores do, so the bits are scan_lines' too; lines len apart
 * go one at a time, SCAN_BLOCK values a conversion. */
static void
scan_tile_lowp(PtlDtype dt, const char *x, char *y, int64_t len, int64_t kst, int64_t gst,
               int64_t g, int is_prod)
{
    PtlLoop to_f = ptl_cast_loop(PTL_DTYPE_FLOAT32, dt);
    PtlLoop from_f = ptl_cast_loop(dt, PTL_DTYPE_FLOAT32);
    int64_t st_to[2] = {sizeof(float), 2}, st_from[2] = {2, sizeof(float)};
    float buf[TILE_COLS > SCAN_BLOCK ? TILE_COLS : SCAN_BLOCK];
    double acc[TILE_COLS];
    for (int64_t i = 0; i < g; i++) {
        acc[i] = is_prod ? 1 : 0;
    }
    /* gst = 1: one pass, a step is a row of g values, value t into acc[t]; else line l in
     * blocks of m values, all into acc[l] */
    for (int64_t l = 0; l < (gst == 1 ? 1 : g); l++) {
        int64_t steps = gst == 1 ? len : (len + SCAN_BLOCK - 1) / SCAN_BLOCK;
        double *chain = gst == 1 ? acc : acc + l;
        for (int64_t k = 0; k < steps; k++) {
            int64_t off = gst == 1 ? k * kst : l * gst + k * SCAN_BLOCK;
            int64_t m = gst == 1 ? g : (len - k * SCAN_BLOCK < SCAN_BLOCK ? len - k * SCAN_BLOCK
                                                                            : SCAN_BLOCK);
            char *d[2] = {(char *)buf, (char *)x + off * 2};
            to_f(d, st_to, m, NULL);
            if (gst == 1) {
                for (int64_t t = 0; t < m; t++) {
                    chain[t] = is_prod ? chain[t] * (double)buf[t] : chain[t] + (double)buf[t];
                    buf[t] = (float)chain[t];
                }
            }
            else {
                double a = *chain;
                for (int64_t t = 0; t < m && is_prod; t++) {
                    a *= (double)buf[t];
                    buf[t] = (float)a;
                }
                for (int64_t t = 0; t < m && !is_prod; t++) {
                    a += (double)buf[t];
                    buf[t] = (float)a;
                }
                *chain = a;
            }
            char *df[2] = {y + off * 2, (char *)buf};
            from_f(df, st_from, m, NULL);
        }
    }
}

DEFINE_SCAN_TILE(float, double, f4)
DEFINE_SCAN_TILE(double, double, f8)
DEFINE_SCAN_TILE(int64_t, uint64_t, i8)
#undef DEFINE_SCAN_TILE

/* One contiguous int64 line: wrapping adds and multiplies are associative, so the running
 * value r waits on one operation per four elements: each group's own prefix is formed apart
 * from r (independent of the previous group), then offset by it.  Exact, as scan_lines is.
 * Interleaving TILE_LINES lines a row apart instead left cumsum(1) of 1000 x 1000 at 0.6x
 * PyTorch's time (a load, an add and a store per element, on eight address streams). */
static void
scan_line_i8(const int64_t *x, int64_t *y, int64_t len, int is_prod)
{
    const uint64_t *u = (const uint64_t *)x;
    uint64_t *v = (uint64_t *)y;
    uint64_t r = is_prod ? 1 : 0;
    int64_t k = 0;
    if (is_prod) {
        for (; k + 4 <= len; k += 4) {
            uint64_t p1 = u[k], p2 = p1 * u[k + 1], p3 = p2 * u[k + 2], p4 = p3 * u[k + 3];
            v[k] = r * p1;
            v[k + 1] = r * p2;
            v[k + 2] = r * p3;
            r *= p4;
            v[k + 3] = r;
        }
        for (; k < len; k++) {
            r *= u[k];
            v[k] = r;
        }
        return;
    }
    for (; k + 4 <= len; k += 4) {
        uint64_t p1 = u[k], p2 = p1 + u[k + 1], p3 = p2 + u[k + 2], p4 = p3 + u[k + 3];
        v[k] = r + p1;
        v[k + 1] = r + p2;
        v[k + 2] = r + p3;
        r += p4;
        v[k + 3] = r;
    }
    for (; k < len; k++) {
        r += u[k];
        v[k] = r;
    }
}

static int
scan_tiles(void *ctx, int64_t b, int64_t e)
{
    const TileJob *job = ctx;
    int64_t isz = (int64_t)ptl_dtype_itemsize(job->dt), plane = job->len * job->inner;
    for (int64_t t = b; t < e; t++) {
        int64_t first, g, kst, gst;   /* first line's element offset, lines, strides */
        if (job->inner > 1) {
            int64_t c0 = (t % job->ntile) * TILE_COLS;
            first = (t / job->ntile) * plane + c0;
            g = job->inner - c0 < TILE_COLS ? job->inner - c0 : TILE_COLS;
            kst = job->inner;
            gst = 1;
        }
        else {
            first = t * TILE_LINES * job->len;
            g = job->outer - t * TILE_LINES < TILE_LINES ? job->outer - t * TILE_LINES
                                                         : TILE_LINES;
            kst = 1;
            gst = job->len;
        }
        const char *x = job->src + first * isz;
        char *y = job->dst + first * isz;
        switch (job->dt) {
        case PTL_DTYPE_FLOAT32:
            scan_tile_f4((const float *)x, (float *)y, job->len, kst, gst, g, job->is_prod);
            break;
        case PTL_DTYPE_FLOAT64:
            scan_tile_f8((const double *)x, (double *)y, job->len, kst, gst, g, job->is_prod);
            break;
        case PTL_DTYPE_FLOAT16:
        case PTL_DTYPE_BFLOAT16:
            scan_tile_lowp(job->dt, x, y, job->len, kst, gst, g, job->is_prod);
            break;
        default:
            if (gst != 1) {   /* g lines len apart, one after another */
                for (int64_t i = 0; i < g; i++) {
                    scan_line_i8((const int64_t *)x + i * gst, (int64_t *)y + i * gst, job->len,
                                 job->is_prod);
                }
                break;
            }
            scan_tile_i8((const int64_t *)x, (int64_t *)y, job->len, kst, gst, g, job->is_prod);
            break;
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
    if ((self->device.type == PTL_DEVICE_CUDA || ptl_device_reduce_emulation) &&
        ptl_device_scan_hook != NULL && !ptl_tensor_is_meta(self)) {
        if (scan_device(&job) < 0) {
            goto error;
        }
    }
    else if (self->numel > 0 && ptl_tensor_is_contiguous(src) &&
        (dt == PTL_DTYPE_FLOAT32 || dt == PTL_DTYPE_FLOAT64 || dt == PTL_DTYPE_INT64 ||
         dt == PTL_DTYPE_FLOAT16 || dt == PTL_DTYPE_BFLOAT16)) {
        /* Note [Scan tiles] */
        TileJob tj = {ptl_tensor_data(src), ptl_tensor_data(out), dt, 1, len, 1, 1, job.is_prod};
        for (int i = 0; i < self->dim; i++) {
            if (i < d) {
                tj.outer *= self->sizes[i];
            }
            else if (i > d) {
                tj.inner *= self->sizes[i];
            }
        }
        tj.ntile = tj.inner > 1 ? (tj.inner + TILE_COLS - 1) / TILE_COLS : 1;
        int64_t ntiles = tj.inner > 1 ? tj.outer * tj.ntile
                                      : (tj.outer + TILE_LINES - 1) / TILE_LINES;
        int64_t per_tile = len * (tj.inner > 1 ? TILE_COLS : TILE_LINES);
        void *token = self->numel >= PTL_GRAIN_SIZE ? ptl_nogil_begin() : NULL;
        int rc = ptl_parallel_for(0, ntiles, PTL_GRAIN_SIZE / per_tile + 1, scan_tiles, &tj);
        ptl_nogil_end(token);
        if (rc < 0) {
            goto error;
        }
    }
    else if (self->numel > 0) {
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
