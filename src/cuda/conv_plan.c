/* conv_plan.c -- the host side of the implicit-GEMM convolution kernels, in every build: the
 * plan (Note [CUDA convolution] in conv_plan.h), the entry point conv.c calls for CUDA
 * tensors through device_conv.h's hook, and the kernels' emulation on the host (the same
 * per-thread functions, shared-memory steps and grid loops as conv.cu). */
#include "conv_plan.h"

#include <stdlib.h>

#include "../aten/native/native.h"
#include "../c10/error.h"

PtlCudaConvPlan
ptl_cuda_conv_plan(const PtlDeviceConvArgs *a, const PtlCudaReduceTuning *t)
{
    PtlCudaConvPlan p;
    const int64_t G = a->groups;
    p.groups = G;
    p.kvol = a->k[0] * a->k[1] * a->k[2];
    p.cols = a->col[0] * a->col[1] * a->col[2];
    p.imgs = a->img[0] * a->img[1] * a->img[2];
    p.cpi = a->c_img / G;
    p.cpc = a->c_col / G;
    switch (a->kind) {
    case PTL_DEVICE_CONV_COL_FWD:
        p.M = p.cpc, p.K = p.cpi * p.kvol, p.J = a->n * p.cols;
        break;
    case PTL_DEVICE_CONV_IMG_FWD:
        p.M = p.cpi, p.K = p.cpc * p.kvol, p.J = a->n * p.imgs;
        break;
    default:
        p.M = p.cpc, p.K = a->n * p.cols, p.J = p.cpi * p.kvol;
        break;
    }
    p.mtiles = (p.M + PTL_CONV_BM - 1) / PTL_CONV_BM;
    p.jtiles = (p.J + PTL_CONV_BN - 1) / PTL_CONV_BN;
    /* WGRAD's few output tiles share out K's long sum: chunks of min_chunk at least */
    const int64_t out_tiles = G * p.mtiles * p.jtiles;
    const int64_t min_k = t->min_chunk;
    p.nsplit = 1;
    if (a->kind == PTL_DEVICE_CONV_WGRAD && out_tiles > 0 && out_tiles < t->target_blocks &&
        p.K >= 2 * min_k) {
        int64_t want = (t->target_blocks + out_tiles - 1) / out_tiles;
        p.nsplit = want < p.K / min_k ? want : p.K / min_k;
    }
    p.chunk = p.K > 0 ? (p.K + p.nsplit - 1) / p.nsplit : 0;
    p.nsplit = p.chunk > 0 ? (p.K + p.chunk - 1) / p.chunk : 1;
    p.tiles = p.nsplit * out_tiles;
    p.grid = p.tiles < t->max_grid ? p.tiles : t->max_grid;
    p.finish = ptl_cuda_elems_plan(p.nsplit > 1 ? G * p.M * p.J : 0, t);
    return p;
}

/* ---- the emulation: conv.cu's kernels, block by block and thread by thread ---- */

/* conv_gemm<T>: per block its tiles; per tile and K step every thread's load (before the
 * barrier), then every thread's products (before the next); then every thread's store.
 * acc: PTL_CONV_THREADS x 16 accumulators, the threads' registers. */
#define DEFINE_EMULATE(T, SUF)                                                              \
    static void                                                                             \
    emulate_gemm_##SUF(const PtlDeviceConvArgs *a, const PtlCudaConvPlan *p, T *acc, T *ws) \
    {                                                                                       \
        T as[PTL_CONV_BK * PTL_CONV_BM], bs[PTL_CONV_BK * PTL_CONV_BN];                     \
        const int nacc = PTL_CONV_MICRO * PTL_CONV_MICRO;                                   \
        for (int64_t bx = 0; bx < p->grid; bx++) {                                          \
            for (int64_t tile = bx; tile < p->tiles; tile += p->grid) {                     \
                const PtlConvTile tl = ptl_conv_tile(p, tile);                              \
                for (int i = 0; i < PTL_CONV_THREADS * nacc; i++) {                         \
                    acc[i] = 0;                                                             \
                }                                                                           \
                for (int64_t k0 = tl.k0; k0 < tl.k1; k0 += PTL_CONV_BK) {                   \
                    const int64_t kn = tl.k1 - k0 < PTL_CONV_BK ? tl.k1 - k0 : PTL_CONV_BK; \
                    for (int t = 0; t < PTL_CONV_THREADS; t++) {                            \
                        ptl_conv_load_##SUF(a, p, &tl, k0, t, as, bs);                      \
                    }                                                                       \
                    for (int t = 0; t < PTL_CONV_THREADS; t++) {                            \
                        ptl_conv_mma_##SUF(as, bs, kn, t, acc + t * nacc);                  \
                    }                                                                       \
                }                                                                           \
                for (int t = 0; t < PTL_CONV_THREADS; t++) {                                \
                    ptl_conv_store_##SUF(a, p, &tl, t, acc + t * nacc, ws);                 \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
                                                                                            \
    static void                                                                             \
    finish_##SUF(const void *ctx, int64_t o, int64_t *status)                               \
    {                                                                                       \
        const void *const *c = ctx;                                                         \
        (void)status;                                                                       \
        ptl_conv_finish_##SUF(c[0], c[1], o, c[2]);                                         \
    }

DEFINE_EMULATE(float, f4)
DEFINE_EMULATE(double, f8)
#undef DEFINE_EMULATE

static int
emulate(const PtlDeviceConvArgs *a, const PtlCudaConvPlan *p)
{
    const int f8 = a->dtype == PTL_DTYPE_FLOAT64;
    const size_t isz = f8 ? sizeof(double) : sizeof(float);
    const int64_t nws = p->nsplit > 1 ? p->nsplit * p->groups * p->M * p->J : 0;
    void *acc = malloc(isz * PTL_CONV_THREADS * PTL_CONV_MICRO * PTL_CONV_MICRO);
    void *ws = nws > 0 ? malloc(isz * (size_t)nws) : NULL;
    if (acc == NULL || (nws > 0 && ws == NULL)) {
        free(acc);
        free(ws);
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory");
    }
    ptl_cuda_kernel_emulation_ran(p->nsplit > 1 ? PTL_CUDA_EMU_CONV_SPLIT : PTL_CUDA_EMU_CONV);
    const void *ctx[3] = {a, p, ws};
    if (f8) {
        emulate_gemm_f8(a, p, acc, ws);
    }
    else {
        emulate_gemm_f4(a, p, acc, ws);
    }
    if (nws > 0) {
        ptl_cuda_emulate_elems(&p->finish, p->groups * p->M * p->J, f8 ? finish_f8 : finish_f4,
                               ctx, NULL);
    }
    free(acc);
    free(ws);
    return 0;
}

/* ---- im2col and col2im: one thread per output element ---- */

static void
im2col_at(const void *a, int64_t e, int64_t *isz)
{
    ptl_conv_im2col_at(a, e, *isz);
}

static void
col2im_at(const void *a, int64_t e, int64_t *unused)
{
    (void)unused;
    ptl_conv_col2im_at(a, e);
}

static int
fold(const PtlDeviceConvArgs *a, const PtlCudaReduceTuning *tuning)
{
    const int im2col = a->kind == PTL_DEVICE_CONV_IM2COL;
    const int64_t *sz = im2col ? a->col : a->img;
    const int64_t n = a->n * (im2col ? a->c_col : a->c_img) * sz[0] * sz[1] * sz[2];
    int64_t isz = (int64_t)ptl_dtype_itemsize((PtlDtype)a->dtype);
    PtlCudaNnPlan elems = ptl_cuda_elems_plan(n, tuning);
    if (n == 0) {
        return 0;
    }
    if (!ptl_device_reduce_emulation) {
        return ptl_cuda_fold_launch(a, &elems, isz);
    }
    ptl_cuda_kernel_emulation_ran(PTL_CUDA_EMU_FOLD);
    ptl_cuda_emulate_elems(&elems, n, im2col ? im2col_at : col2im_at, a, &isz);
    return 0;
}

/* ---- the entry point ---- */

int
ptl_cuda_conv(const PtlDeviceConvArgs *a)
{
    PtlCudaReduceTuning tuning = ptl_cuda_reduce_tuning();
    if (a->kind == PTL_DEVICE_CONV_IM2COL || a->kind == PTL_DEVICE_CONV_COL2IM) {
        return fold(a, &tuning);
    }
    PtlCudaConvPlan p = ptl_cuda_conv_plan(a, &tuning);
    if (p.tiles == 0) {
        return 0;
    }
    if (ptl_device_reduce_emulation) {
        return emulate(a, &p);
    }
    PtlTensorImpl *ws = NULL;
    int64_t nws = p.nsplit > 1 ? p.nsplit * p.groups * p.M * p.J : 0;
    int rc;
    if (nws > 0) {
        PtlDevice dev = {PTL_DEVICE_CUDA, 0};
        int device = 0;
        if (ptl_cuda_current_device(&device) < 0) {
            return -1;
        }
        dev.index = (int8_t)device;
        if ((ws = ptl_empty(1, &nws, (PtlDtype)a->dtype, dev)) == NULL) {
            return -1;
        }
    }
    rc = ptl_cuda_conv_launch(a, &p, ws != NULL ? ptl_tensor_data(ws) : NULL);
    ptl_xdecref(ws);   /* reused only by later work on the same stream */
    return rc;
}
