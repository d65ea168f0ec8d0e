/* conv.c -- convolution (1-D, 2-D, 3-D, plain and transposed, grouped, dilated), its
 * backward, and im2col/col2im (unfold/fold).  Mirrors ATen/native/Convolution.cpp,
 * ATen/native/ConvolutionMM2d.cpp, ATen/native/NaiveConvolutionTranspose2d.cpp and
 * ATen/native/Im2Col.cpp / Col2Im.cpp.
 *
 * Note [Convolution as GEMM]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Everything is three primitives over one geometry (ConvGeom) that relates an "image" side
 * (the larger, padded tensor) to a "column" side (one entry per kernel placement):
 *   col_fwd:   y(N, Co, cols)  = W(Co, Ci/G * K) @ im2col(x(N, Ci, image))
 *   img_fwd:   y(N, Co, image) = col2im(W(Ci, Co/G * K)^T @ x(N, Ci, cols))
 *   wgrad:     gW(Ca, Ci/G * K) = a(N, Ca, cols) @ im2col(img(N, Ci, image))^T
 * (K = kernel volume, G = groups, per group).  A convolution is col_fwd, a transposed
 * convolution img_fwd; the input gradient of either is the other primitive applied to the
 * output gradient, and the weight gradient is wgrad with the roles of input and output
 * gradient swapped for the transposed case.  The column buffer is laid out (G, Ci/G * K,
 * batch, cols), so one GEMM per group covers a whole batch chunk: col_fwd and img_fwd use
 * batched views with a stride-0 weight, wgrad a single 2-D product over batch * cols.
 * Chunks keep the buffer under COL_BUDGET elements.  Spatial dims are padded to three
 * (nn_common.h); float16/bfloat16 compute in float, integers in double.  On AVX2 and
 * AVX-512, float work (float32, float16, bfloat16) skips the column buffer: col_fwd and the
 * input gradient of a plain convolution run conv_packed.c, wgrad conv_packed_wgrad.c (Note
 * [Packed float32 convolution], Note [Input gradient by output phases]); img_fwd (a transposed convolution, the input
 * gradient of a dilated strided one) stays here.  On a CUDA device (and in the tests'
 * emulation of its kernels) the three primitives are implicit GEMMs that build no column
 * buffer (device_conv.h; Note [CUDA convolution] in src/cuda/conv_plan.h).  The argument
 * checks are conv_args.c's. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/parallel.h"
#include "conv_impl.h"
#include "device_conv.h"
#include "gemm.h"
#include "nn_common.h"

#define COL_BUDGET ((int64_t)1 << 24)

int (*ptl_device_conv_hook)(const PtlDeviceConvArgs *a);

/* 1 when t's primitives run on the CUDA kernels (nn_on_device); the bias gradient takes
 * the device reduction, whose hook the backend sets with this one */
static int
conv_on_device(const PtlTensorImpl *t)
{
    return nn_on_device(t, ptl_device_conv_hook != NULL && ptl_device_reduce_hook != NULL);
}

/* One primitive of device_conv.h on the device: a, b, bias (or NULL) -> out, all contiguous
 * in the work dtype; c_img, c_col the channels of the image and the column side. */
static int
device_conv(int kind, PtlTensorImpl *a, PtlTensorImpl *b, PtlTensorImpl *bias,
            PtlTensorImpl *out, const ConvGeom *g, int64_t n, int64_t c_img, int64_t c_col)
{
    PtlDeviceConvArgs d;
    memset(&d, 0, sizeof(d));
    d.kind = kind;
    d.dtype = out->dtype;
    d.a = ptl_tensor_data(a);
    d.b = ptl_tensor_data(b);
    d.bias = bias != NULL ? ptl_tensor_data(bias) : NULL;
    d.out = ptl_tensor_data(out);
    d.n = n;
    d.groups = g->groups;
    d.c_img = c_img;
    d.c_col = c_col;
    for (int i = 0; i < NN_SPATIAL; i++) {
        d.img[i] = g->img[i];
        d.col[i] = g->col[i];
        d.k[i] = g->k[i];
        d.s[i] = g->s[i];
        d.p[i] = g->p[i];
        d.d[i] = g->d[i];
    }
    return ptl_device_conv_hook(&d);
}

static void
geom_finish(ConvGeom *g)
{
    g->img_numel = g->img[0] * g->img[1] * g->img[2];
    g->col_numel = g->col[0] * g->col[1] * g->col[2];
    g->kvol = g->k[0] * g->k[1] * g->k[2];
}

/* ---- typed inner loops ---- */

typedef void (*AddRunFn)(char *dst, int64_t dstride, const char *src, int64_t n);

/* dst[i * dstride] += src[i] for i < n: col2im's inner loop, typed so that it vectorizes */
#define DEFINE_ADD_RUN(T, SUF)                                                               \
    static void                                                                              \
    add_run_##SUF(char *dst, int64_t dstride, const char *src, int64_t n)                    \
    {                                                                                        \
        T *restrict o = (T *)dst;                                                            \
        const T *restrict v = (const T *)src;                                                \
        if (dstride == 1) {                                                                  \
            for (int64_t i = 0; i < n; i++) {                                                \
                o[i] += v[i];                                                                \
            }                                                                                \
            return;                                                                          \
        }                                                                                    \
        for (int64_t i = 0; i < n; i++) {                                                    \
            o[i * dstride] += v[i];                                                          \
        }                                                                                    \
    }

DEFINE_ADD_RUN(float, f4)
DEFINE_ADD_RUN(double, f8)
#undef DEFINE_ADD_RUN

/* y(N, C, L) += bias(C), float64 (f8) or float32 */
static void
add_bias(int f8, char *y, const char *bias, int64_t n, int64_t c, int64_t l)
{
    for (int64_t i = 0; i < n * c; i++) {
        double bv = nn_load(f8, bias, i % c);
        for (int64_t j = i * l; j < (i + 1) * l; j++) {
            nn_store(f8, y, j, nn_load(f8, y, j) + bv);
        }
    }
}

/* The sum of v[0, l) in double: eight partial sums, so that the loop vectorizes. */
#define DEFINE_ROW_SUM(T, SUF)                                                               \
    static double                                                                            \
    row_sum_##SUF(const T *v, int64_t l)                                                     \
    {                                                                                        \
        double acc[8] = {0};                                                                 \
        int64_t j = 0;                                                                       \
        for (; j + 8 <= l; j += 8) {                                                         \
            for (int k = 0; k < 8; k++) {                                                    \
                acc[k] += (double)v[j + k];                                                  \
            }                                                                                \
        }                                                                                    \
        for (; j < l; j++) {                                                                 \
            acc[0] += (double)v[j];                                                          \
        }                                                                                    \
        return ((acc[0] + acc[1]) + (acc[2] + acc[3])) +                                     \
               ((acc[4] + acc[5]) + (acc[6] + acc[7]));                                      \
    }

DEFINE_ROW_SUM(float, f4)
DEFINE_ROW_SUM(double, f8)
#undef DEFINE_ROW_SUM

typedef struct BiasGradJob {
    int f8;
    char *gb;
    const char *gy;
    int64_t n, c, l;
} BiasGradJob;

/* gb[ch] for ch in [begin, end): the sum over n and l of g(N, C, L), accumulated in double
 * in the same order whatever the split */
static int
bias_grad_channels(void *ctx, int64_t begin, int64_t end)
{
    const BiasGradJob *j = ctx;
    for (int64_t ch = begin; ch < end; ch++) {
        double acc = 0.0;
        for (int64_t i = 0; i < j->n; i++) {
            acc += j->f8 ? row_sum_f8((const double *)j->gy + (i * j->c + ch) * j->l, j->l)
                         : row_sum_f4((const float *)j->gy + (i * j->c + ch) * j->l, j->l);
        }
        nn_store(j->f8, j->gb, ch, acc);
    }
    return 0;
}

/* gb(C) = sum over n and l of g(N, C, L), the channels split over the threads (serial, it
 * was a tenth of conv 3->32's forward+backward and the worker slept through it: Note [Spin
 * before sleeping]) */
static int
bias_grad(int f8, char *gb, const char *gy, int64_t n, int64_t c, int64_t l)
{
    BiasGradJob j = {f8, gb, gy, n, c, l};
    int64_t per = n * l;                  /* elements one channel sums */
    void *tok = per * c >= PTL_GRAIN_SIZE ? ptl_nogil_begin() : NULL;
    int rc = ptl_parallel_for(0, c, PTL_GRAIN_SIZE / (per + 1) + 1, bias_grad_channels, &j);
    ptl_nogil_end(tok);
    return rc;
}

/* gb (C) = the sum over n and l of gy (N, C, L) on the device: its reduction kernels (Note
 * [CUDA reduction plan]), which sum in double in a fixed order */
static int
bias_grad_device(PtlTensorImpl *gb, PtlTensorImpl *gy, int64_t n, int64_t c, int64_t l)
{
    const int64_t isz = (int64_t)ptl_tensor_itemsize(gy);
    PtlDeviceReduceArgs r;
    if (c == 0) {
        return 0;
    }
    if (n * l == 0) {
        PtlIValue zero = ptl_iv_double(0.0);
        return ptl_fill_scalar(gb, &zero);
    }
    memset(&r, 0, sizeof(r));
    r.kind = PTL_DEVICE_RED_SUM;
    r.dtype = gy->dtype;
    r.odt0 = gb->dtype;
    r.odt1 = PTL_DTYPE_UNDEFINED;
    r.in = ptl_tensor_data(gy);
    r.out0 = ptl_tensor_data(gb);
    r.nk = 1;
    r.ksize[0] = c;
    r.kstride[0] = l * isz;
    r.nr = 2;
    r.rsize[0] = n;
    r.rstride[0] = c * l * isz;
    r.rsize[1] = l;
    r.rstride[1] = isz;
    r.nout = c;
    r.R = n * l;
    return ptl_device_reduce_hook(&r);
}

/* ---- im2col / col2im of one plane ---- */

/* The column range [lo, hi) whose source ox * s + off lies in [0, size). */
static void
valid_range(int64_t size, int64_t s, int64_t off, int64_t ncol, int64_t *lo, int64_t *hi)
{
    int64_t a = off >= 0 ? 0 : (-off + s - 1) / s;
    int64_t b = size - off <= 0 ? 0 : (size - off + s - 1) / s;
    *lo = a < ncol ? a : ncol;
    *hi = b < *lo ? *lo : (b < ncol ? b : ncol);
}

/* One row of im2col: dst[ox] = src[ox * s + off] for ox in [lo, hi), zero for the other
 * ox < n.  The rows are short (a 3x3 conv on 16x16 copies 14 to 16 elements per row), so a
 * contiguous run of at least 8 goes through fixed-size 8-element copies that compile to
 * vector moves, the last one overlapping the one before, after the zeros were laid the same
 * way; libc's memcpy/memset (which gcc also makes of plain loops) cost as much in call
 * overhead as the copy itself. */
#define DEFINE_COPY_ROW(SUF, T)                                                              \
    static inline void                                                                       \
    copy_row_##SUF(T *restrict dst, const T *restrict src, int64_t n, int64_t lo, int64_t hi, \
                   int64_t s, int64_t off)                                                   \
    {                                                                                        \
        static const T zeros[8];                                                             \
        if (s == 1 && hi - lo >= 8) {                                                        \
            for (int64_t i = 0; i < n && (lo > 0 || hi < n); i += 8) {                       \
                memcpy(dst + (i < n - 8 ? i : n - 8), zeros, sizeof(zeros));                 \
            }                                                                                \
            for (int64_t i = lo; i < hi; i += 8) {                                           \
                int64_t j = i < hi - 8 ? i : hi - 8;                                         \
                memcpy(dst + j, src + j + off, sizeof(zeros));                               \
            }                                                                                \
            return;                                                                          \
        }                                                                                    \
        memset(dst, 0, (size_t)n * sizeof(T));                                               \
        for (int64_t ox = lo; ox < hi; ox++) {                                               \
            dst[ox] = src[ox * s + off];                                                     \
        }                                                                                    \
    }

typedef struct Elem16 {   /* a complex128 as raw bytes */
    uint64_t w[2];
} Elem16;
DEFINE_COPY_ROW(u4, uint32_t)
DEFINE_COPY_ROW(u8, uint64_t)
DEFINE_COPY_ROW(u16, Elem16)
#undef DEFINE_COPY_ROW

/* Copies the kvol patches of one image plane into kvol rows of col (row kk at
 * col + kk * ld elements, one entry per column position); zeros where the patch reads
 * padding.  Works on raw elements of isz bytes: no arithmetic. */
static void
im2col_plane(const char *img, char *col, int64_t ld, const ConvGeom *g, size_t isz)
{
    int64_t kk = 0;
    for (int64_t kz = 0; kz < g->k[0]; kz++) {
        for (int64_t ky = 0; ky < g->k[1]; ky++) {
            for (int64_t kx = 0; kx < g->k[2]; kx++, kk++) {
                int64_t offx = kx * g->d[2] - g->p[2], lo, hi;
                valid_range(g->img[2], g->s[2], offx, g->col[2], &lo, &hi);
                char *row = col + (size_t)(kk * ld) * isz;
                for (int64_t oz = 0; oz < g->col[0]; oz++) {
                    int64_t iz = oz * g->s[0] - g->p[0] + kz * g->d[0];
                    for (int64_t oy = 0; oy < g->col[1]; oy++) {
                        int64_t iy = oy * g->s[1] - g->p[1] + ky * g->d[1];
                        char *dst = row + (size_t)((oz * g->col[1] + oy) * g->col[2]) * isz;
                        if (iz < 0 || iz >= g->img[0] || iy < 0 || iy >= g->img[1]) {
                            memset(dst, 0, (size_t)g->col[2] * isz);
                            continue;
                        }
                        const char *src = img + (size_t)((iz * g->img[1] + iy) * g->img[2]) * isz;
                        if (isz == 4) {
                            copy_row_u4((uint32_t *)dst, (const uint32_t *)src, g->col[2], lo, hi,
                                        g->s[2], offx);
                        }
                        else if (isz == 8) {
                            copy_row_u8((uint64_t *)dst, (const uint64_t *)src, g->col[2], lo, hi,
                                        g->s[2], offx);
                        }
                        else if (isz == 16) {
                            copy_row_u16((Elem16 *)dst, (const Elem16 *)src, g->col[2], lo, hi,
                                         g->s[2], offx);
                        }
                        else {
                            memset(dst, 0, (size_t)g->col[2] * isz);
                            for (int64_t ox = lo; ox < hi; ox++) {
                                memcpy(dst + (size_t)ox * isz,
                                       src + (size_t)(ox * g->s[2] + offx) * isz, isz);
                            }
                        }
                    }
                }
            }
        }
    }
}

/* The adjoint of im2col_plane: adds the kvol rows of col back into the image plane (which
 * the caller zeroed). */
static void
col2im_plane(char *img, const char *col, int64_t ld, const ConvGeom *g, size_t isz,
             AddRunFn add)
{
    int64_t kk = 0;
    for (int64_t kz = 0; kz < g->k[0]; kz++) {
        for (int64_t ky = 0; ky < g->k[1]; ky++) {
            for (int64_t kx = 0; kx < g->k[2]; kx++, kk++) {
                int64_t offx = kx * g->d[2] - g->p[2], lo, hi;
                valid_range(g->img[2], g->s[2], offx, g->col[2], &lo, &hi);
                const char *row = col + (size_t)(kk * ld) * isz;
                for (int64_t oz = 0; oz < g->col[0]; oz++) {
                    int64_t iz = oz * g->s[0] - g->p[0] + kz * g->d[0];
                    if (iz < 0 || iz >= g->img[0]) {
                        continue;
                    }
                    for (int64_t oy = 0; oy < g->col[1]; oy++) {
                        int64_t iy = oy * g->s[1] - g->p[1] + ky * g->d[1];
                        if (iy < 0 || iy >= g->img[1] || hi <= lo) {
                            continue;
                        }
                        const char *src = row + (size_t)((oz * g->col[1] + oy) * g->col[2] + lo) * isz;
                        char *dst = img + (size_t)((iz * g->img[1] + iy) * g->img[2] + lo * g->s[2] + offx) * isz;
                        add(dst, g->s[2], src, hi - lo);
                    }
                }
            }
        }
    }
}

/* ---- batch-chunk jobs (ptl_parallel_for) ---- */

typedef struct ColJob {
    const ConvGeom *g;
    const char *x;      /* im2col: the image tensor (N, C, image) */
    char *y;            /* col2im: the image tensor (N, C, image), written */
    char *cb;           /* the column buffer (G, cpg * kvol, b, cols) */
    int64_t n0, b, c, cpg;
    size_t isz;
    AddRunFn add;
} ColJob;

/* Moves the planes of jobs [begin, end) between the image tensor and the column buffer:
 * im2col (to_col) or col2im into the zeroed image plane. */
static int
col_planes(const ColJob *j, int64_t begin, int64_t end, int to_col)
{
    const ConvGeom *g = j->g;
    int64_t kdim = j->cpg * g->kvol, ld = j->b * g->col_numel;
    for (int64_t t = begin; t < end; t++) {
        int64_t bi = t / j->c, c = t % j->c, grp = c / j->cpg, cl = c % j->cpg;
        size_t img = (size_t)(((j->n0 + bi) * j->c + c) * g->img_numel) * j->isz;
        size_t col = (size_t)(((grp * kdim + cl * g->kvol) * j->b + bi) * g->col_numel) * j->isz;
        if (to_col) {
            im2col_plane(j->x + img, j->cb + col, ld, g, j->isz);
        }
        else {
            memset(j->y + img, 0, (size_t)g->img_numel * j->isz);
            col2im_plane(j->y + img, j->cb + col, ld, g, j->isz, j->add);
        }
    }
    return 0;
}

static int
im2col_job(void *ctx, int64_t begin, int64_t end)
{
    return col_planes(ctx, begin, end, 1);
}

static int
col2im_job(void *ctx, int64_t begin, int64_t end)
{
    return col_planes(ctx, begin, end, 0);
}

static int
run_jobs(PtlParallelFn fn, ColJob *j)
{
    int64_t per = j->g->kvol * j->g->col_numel;   /* elements one (sample, channel) moves */
    int64_t grain = per > 0 ? PTL_GRAIN_SIZE / per + 1 : 1;
    void *tok = ptl_nogil_begin();
    int rc = ptl_parallel_for(0, j->b * j->c, grain, fn, j);
    ptl_nogil_end(tok);
    return rc;
}

/* A 3-D view (new ref) of t's storage. */
static PtlTensorImpl *
view3(PtlTensorImpl *t, int64_t s0, int64_t s1, int64_t s2, int64_t st0, int64_t st1,
      int64_t st2, int64_t off)
{
    int64_t sizes[3] = {s0, s1, s2}, strides[3] = {st0, st1, st2};
    return ptl_tensor_impl_view(t, 3, sizes, strides, t->storage_offset + off);
}

static int
gemm3(PtlTensorImpl *c, PtlTensorImpl *a, PtlTensorImpl *b, double beta)
{
    int rc = c && a && b ? ptl_gemm(c, a, b, 1.0, beta) : -1;
    ptl_xdecref(c);
    ptl_xdecref(a);
    ptl_xdecref(b);
    return rc;
}

static int64_t
chunk_of(int64_t n, int64_t per_sample)
{
    int64_t b = per_sample > 0 ? COL_BUDGET / per_sample : n;
    b = b < 1 ? 1 : b;
    return b < n ? b : (n < 1 ? 1 : n);
}

static AddRunFn
add_fn(PtlDtype dt)
{
    return dt == PTL_DTYPE_FLOAT32 ? add_run_f4 : add_run_f8;
}

/* Whether the float32 kernels of conv_packed.c take a problem in dtype dt. */
static int
use_packed(PtlDtype dt)
{
    return dt == PTL_DTYPE_FLOAT32 && conv_packed_available();
}

/* col_fwd: x (N, Ci, image) and w (Co, Ci/G, k) contiguous work dtype -> y (N, Co, cols),
 * plus bias (Co) when not NULL. */
static PtlTensorImpl *
col_fwd(PtlTensorImpl *x, PtlTensorImpl *w, PtlTensorImpl *bias, const ConvGeom *g)
{
    int64_t n = x->sizes[0], ci = x->sizes[1], co = w->sizes[0], G = g->groups;
    int64_t cpg = ci / G, opg = co / G, kdim = cpg * g->kvol, L = g->col_numel;
    int64_t ysz[3] = {n, co, L}, b = chunk_of(n, G * kdim * L);
    PtlTensorImpl *y = ptl_empty(3, ysz, x->dtype, x->device), *cb = NULL;
    if (y == NULL || y->numel == 0) {
        return y;
    }
    if (conv_on_device(x)) {
        if (device_conv(PTL_DEVICE_CONV_COL_FWD, w, x, bias, y, g, n, ci, co) < 0) {
            goto error;
        }
        return y;
    }
    if (x->dtype == PTL_DTYPE_FLOAT32 && conv_winograd_fits(g, ci, co, CONV_WINOGRAD_DATA)) {
        int rc = conv_winograd_fwd((const float *)ptl_tensor_data(x),
                                   (const float *)ptl_tensor_data(w), CONV_PACKED_W_PLAIN,
                                   bias != NULL ? (const float *)ptl_tensor_data(bias) : NULL,
                                   (float *)ptl_tensor_data(y), g, n, ci, co);
        if (rc <= 0) {
            return rc < 0 ? (ptl_decref(y), NULL) : y;
        }
    }
    if (use_packed(x->dtype) && kdim > 0) {
        if (conv_packed_fwd((const float *)ptl_tensor_data(x), (const float *)ptl_tensor_data(w),
                            CONV_PACKED_W_PLAIN,
                            bias != NULL ? (const float *)ptl_tensor_data(bias) : NULL,
                            (float *)ptl_tensor_data(y), g, n, ci, co) < 0) {
            goto error;
        }
        return y;
    }
    if (kdim == 0) {
        memset(ptl_tensor_data(y), 0, (size_t)y->numel * ptl_tensor_itemsize(y));
        if (bias != NULL) {
            add_bias(x->dtype != PTL_DTYPE_FLOAT32, ptl_tensor_data(y), ptl_tensor_data(bias), n,
                     co, L);
        }
        return y;
    }
    int64_t cbsz[1] = {G * kdim * b * L};
    if ((cb = ptl_empty(1, cbsz, x->dtype, x->device)) == NULL) {
        goto error;
    }
    for (int64_t n0 = 0; n0 < n; n0 += b) {
        int64_t bb = n - n0 < b ? n - n0 : b;
        ColJob j = {g, ptl_tensor_data(x), NULL, ptl_tensor_data(cb), n0, bb, ci, cpg,
                    ptl_tensor_itemsize(x), NULL};
        if (run_jobs(im2col_job, &j) < 0) {
            goto error;
        }
        for (int64_t grp = 0; grp < G; grp++) {
            if (gemm3(view3(y, bb, opg, L, co * L, L, 1, (n0 * co + grp * opg) * L),
                      view3(w, bb, opg, kdim, 0, kdim, 1, grp * opg * kdim),
                      view3(cb, bb, kdim, L, L, bb * L, 1, grp * kdim * bb * L), 0.0) < 0) {
                goto error;
            }
        }
    }
    if (bias != NULL) {
        add_bias(x->dtype != PTL_DTYPE_FLOAT32, ptl_tensor_data(y), ptl_tensor_data(bias), n, co,
                 L);
    }
    ptl_decref(cb);
    return y;
error:
    ptl_xdecref(cb);
    ptl_decref(y);
    return NULL;
}

/* img_fwd: x (N, Ci, cols) and w (Ci, Co/G, k) contiguous work dtype -> y (N, Co, image),
 * plus bias (Co) when not NULL. */
static PtlTensorImpl *
img_fwd(PtlTensorImpl *x, PtlTensorImpl *w, PtlTensorImpl *bias, const ConvGeom *g)
{
    int64_t n = x->sizes[0], ci = x->sizes[1], G = g->groups, opg = w->sizes[1];
    int64_t co = opg * G, cpg = ci / G, kdim = opg * g->kvol, L = g->col_numel;
    int64_t ysz[3] = {n, co, g->img_numel}, b = chunk_of(n, G * kdim * L);
    PtlTensorImpl *y = NULL, *cb = NULL;
    if (conv_on_device(x)) {
        y = ptl_empty(3, ysz, x->dtype, x->device);
        if (y != NULL && y->numel > 0 &&
            device_conv(PTL_DEVICE_CONV_IMG_FWD, w, x, bias, y, g, n, co, ci) < 0) {
            goto error;
        }
        return y;
    }
    y = nn_zeros(3, ysz, x->dtype);
    if (y == NULL || y->numel == 0) {
        return y;
    }
    if (kdim * L == 0) {
        goto bias;
    }
    int64_t cbsz[1] = {G * kdim * b * L};
    if ((cb = ptl_empty(1, cbsz, x->dtype, x->device)) == NULL) {
        goto error;
    }
    for (int64_t n0 = 0; n0 < n; n0 += b) {
        int64_t bb = n - n0 < b ? n - n0 : b;
        for (int64_t grp = 0; grp < G; grp++) {
            if (gemm3(view3(cb, bb, kdim, L, L, bb * L, 1, grp * kdim * bb * L),
                      view3(w, bb, kdim, cpg, 0, 1, kdim, grp * cpg * kdim),
                      view3(x, bb, cpg, L, ci * L, L, 1, (n0 * ci + grp * cpg) * L), 0.0) < 0) {
                goto error;
            }
        }
        ColJob j = {g, NULL, ptl_tensor_data(y), ptl_tensor_data(cb), n0, bb, co, opg,
                    ptl_tensor_itemsize(x), add_fn(x->dtype)};
        if (run_jobs(col2im_job, &j) < 0) {
            goto error;
        }
    }
    ptl_decref(cb);
bias:
    if (bias != NULL) {
        add_bias(x->dtype != PTL_DTYPE_FLOAT32, ptl_tensor_data(y), ptl_tensor_data(bias), n, co,
                 g->img_numel);
    }
    return y;
error:
    ptl_xdecref(cb);
    ptl_decref(y);
    return NULL;
}

/* Note [Packed weight gradient and non-finite inputs]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The packed weight gradient's tiles (conv_packed_wgrad.c, Note [Packed weight gradient])
 * read the image in flat windows, where the columns past an output row hold the next row's
 * pixels and take a zero output gradient.  An Inf or NaN in the image then reaches taps
 * that never read it as 0 * Inf = NaN.  A finite result cannot have met one (a non-finite
 * product never cancels back to finite), so the result is scanned -- Ca * Ci/G * kvol
 * floats, nothing beside the convolution's work -- and only a non-finite one is computed
 * again by the column buffer, which holds exactly the pixels each tap reads, so Inf and NaN
 * land where the direct sum puts them (the scan: conv_any_nonfinite). */

/* wgrad: a (N, Ca, cols), img (N, Ci, image) contiguous -> gw (Ca, Ci/G, k), given as the
 * 2-D (Ca, Ci/G * kvol) result. */
static PtlTensorImpl *
wgrad(PtlTensorImpl *a, PtlTensorImpl *img, const ConvGeom *g)
{
    int64_t n = a->sizes[0], ca = a->sizes[1], ci = img->sizes[1], G = g->groups;
    int64_t cpg = ci / G, apg = ca / G, kdim = cpg * g->kvol, L = g->col_numel;
    int64_t gsz[2] = {ca, kdim}, b = chunk_of(n, G * kdim * L);
    PtlTensorImpl *gw = NULL, *cb = NULL, *ap = NULL;
    if (conv_on_device(a)) {
        gw = ptl_empty(2, gsz, a->dtype, a->device);
        if (gw != NULL && gw->numel > 0 &&
            device_conv(PTL_DEVICE_CONV_WGRAD, a, img, NULL, gw, g, n, ci, ca) < 0) {
            goto error;
        }
        return gw;
    }
    gw = nn_zeros(2, gsz, a->dtype);
    if (gw == NULL || gw->numel == 0 || n * L == 0) {
        return gw;
    }
    if (a->dtype == PTL_DTYPE_FLOAT32 && conv_winograd_fits(g, ci, ca, CONV_WINOGRAD_WGRAD)) {
        int rc = conv_winograd_wgrad((const float *)ptl_tensor_data(a),
                                     (const float *)ptl_tensor_data(img),
                                     (float *)ptl_tensor_data(gw), g, n, ci, ca);
        if (rc < 0) {
            goto error;
        }
        if (rc == 0) {
            return gw;
        }
    }
    if (use_packed(a->dtype) && conv_packed_wgrad_available()) {
        float *gwp = (float *)ptl_tensor_data(gw);
        if (conv_packed_wgrad((const float *)ptl_tensor_data(a),
                              (const float *)ptl_tensor_data(img), gwp, g, n, ci, ca) < 0) {
            goto error;
        }
        if (!conv_any_nonfinite(gwp, gw->numel)) {
            return gw;
        }
        /* Note [Packed weight gradient and non-finite inputs] */
        memset(gwp, 0, (size_t)gw->numel * sizeof(float));
    }
    int64_t cbsz[1] = {G * kdim * b * L};
    if ((cb = ptl_empty(1, cbsz, a->dtype, a->device)) == NULL) {
        goto error;
    }
    for (int64_t n0 = 0; n0 < n; n0 += b) {
        int64_t bb = n - n0 < b ? n - n0 : b;
        ColJob j = {g, ptl_tensor_data(img), NULL, ptl_tensor_data(cb), n0, bb, ci, cpg,
                    ptl_tensor_itemsize(a), NULL};
        PtlTensorImpl *av = view3(a, ca, bb, L, L, ca * L, 1, n0 * ca * L);
        ap = av ? ptl_contiguous(av) : NULL;   /* (Ca, bb * L) */
        ptl_xdecref(av);
        if (ap == NULL || run_jobs(im2col_job, &j) < 0) {
            goto error;
        }
        for (int64_t grp = 0; grp < G; grp++) {
            int64_t s1[2] = {apg, kdim}, t1[2] = {kdim, 1};
            int64_t s2[2] = {apg, bb * L}, t2[2] = {bb * L, 1};
            int64_t s3[2] = {bb * L, kdim}, t3[2] = {1, bb * L};
            /* ap may be a view of `a` itself (a one-sample chunk is already contiguous),
             * so its own storage offset counts */
            if (gemm3(ptl_tensor_impl_view(gw, 2, s1, t1, gw->storage_offset + grp * apg * kdim),
                      ptl_tensor_impl_view(ap, 2, s2, t2, ap->storage_offset + grp * apg * bb * L),
                      ptl_tensor_impl_view(cb, 2, s3, t3, cb->storage_offset + grp * kdim * bb * L),
                      1.0) < 0) {
                goto error;
            }
        }
        PTL_CLEAR(ap);
    }
    ptl_decref(cb);
    return gw;
error:
    ptl_xdecref(ap);
    ptl_xdecref(cb);
    ptl_decref(gw);
    return NULL;
}

/* Note [Input gradient by output phases]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The input gradient of a plain convolution, gx[i] = sum over taps kk and output pixels o
 * with i + p = o * s + kk * d of gy[o] * w[kk] (per dim; channels summed as usual), splits
 * by the phase r = (i + p) mod s of the input pixel when d = 1 or s = 1: the taps that
 * reach phase r are kk = r + s * j, j < nj = ceil((k - r) / s), and its pixels
 * i = s * a + r - p, a in [a_lo, a_hi], take gx = sum over j of gy[a - j] * w[r + s * j]:
 * a stride-1 convolution of gy with the sub-kernel of those taps reversed (d' = d where
 * s = 1, else 1), padding d' * (nj - 1) - a_lo before the dim, a_hi - a_lo + 1 columns.
 * All phases read the same gy, so conv_packed_fwd_phases runs them as one job over windows
 * filled once per task: the windows of a shared geometry (each dim's largest padding and
 * output; a kernel that holds every phase's sub-kernel shifted by that padding less its
 * own), each phase's taps a box of that kernel, its flipped sub-kernel packed on its own
 * (CONV_PACKED_W_FLIPPED), its tiles copied to its pixels of gx (ConvPackedOut: every s-th
 * element from the phase's first).  The phases cover gx once; a phase no tap reaches (r >=
 * k, as in a 1x1 stride-2 shortcut) is zeros.  Stride 1 is one phase whose sub-kernel is
 * the whole kernel and whose pixels are all of gx, in order: conv_packed_fwd.  This
 * replaces GEMM + col2im (img_fwd), whose column buffer is kvol / s^2 times gx's size and
 * whose col2im adds it back with strided scalar runs; img_fwd stays for d > 1 with s > 1,
 * for a phase that would need negative padding (p beyond the sub-kernel's reach:
 * a_lo > d' * (nj - 1)), and for a strided 1x1 kernel (a ResNet shortcut), whose one phase
 * is a plain GEMM and whose col2im a one-tap scatter: there the phase's window fill and
 * copies cost more (the 32x32x16x16 -> 64 input gradient took 238 us against 200). */

/* One dim of a phase of Note [Input gradient by output phases]: the sub-kernel's taps nj,
 * the first a and the count of a, and the sub-convolution's padding. */
typedef struct PhaseDim {
    int64_t nj, a_lo, na, pad;
} PhaseDim;

static PhaseDim
phase_dim(const ConvGeom *g, int i, int64_t r)
{
    PhaseDim pd;
    int64_t s = g->s[i], d = s == 1 ? g->d[i] : 1;
    pd.nj = r < g->k[i] ? (g->k[i] - r + s - 1) / s : 0;
    pd.a_lo = (g->p[i] - r + s - 1) / s;   /* ceil((p - r) / s); p - r > -s */
    int64_t last = g->img[i] - 1 + g->p[i] - r;
    pd.na = last < 0 ? 0 : last / s - pd.a_lo + 1;
    pd.na = pd.na < 0 ? 0 : pd.na;
    pd.pad = d * (pd.nj - 1) - pd.a_lo;
    return pd;
}

/* Whether every phase can run as a packed stride-1 convolution (d = 1 where s > 1, no
 * negative padding). */
static int
phases_fit(const ConvGeom *g)
{
    for (int i = 0; i < NN_SPATIAL; i++) {
        if (g->s[i] > 1 && g->d[i] != 1) {
            return 0;
        }
        for (int64_t r = 0; r < g->s[i]; r++) {
            PhaseDim pd = phase_dim(g, i, r);
            if (pd.nj > 0 && pd.na > 0 && pd.pad < 0) {
                return 0;
            }
        }
    }
    return 1;
}

/* The input gradient of a plain convolution: gy (N, Co, cols), w (Co, Ci/G, k) -> (N, Ci,
 * image): by output phases (Note [Input gradient by output phases]) on the packed kernels
 * where they fit, else img_fwd. */
static PtlTensorImpl *
input_grad(PtlTensorImpl *gy, PtlTensorImpl *w, const ConvGeom *g)
{
    int64_t n = gy->sizes[0], co = gy->sizes[1], cpg = w->sizes[1], ci = cpg * g->groups;
    int strided = g->s[0] * g->s[1] * g->s[2] > 1;
    ConvGeom wg;   /* Note [Winograd convolution] */
    if (!conv_on_device(gy) && gy->dtype == PTL_DTYPE_FLOAT32 && conv_winograd_grad_geom(g, &wg) &&
        conv_winograd_fits(&wg, co, ci, CONV_WINOGRAD_DATA)) {
        int64_t gsz[3] = {n, ci, g->img_numel};
        PtlTensorImpl *y = ptl_empty(3, gsz, gy->dtype, gy->device);
        if (y == NULL || y->numel == 0) {
            return y;
        }
        int rc = conv_winograd_fwd((const float *)ptl_tensor_data(gy),
                                   (const float *)ptl_tensor_data(w), CONV_PACKED_W_FLIPPED,
                                   NULL, (float *)ptl_tensor_data(y), &wg, n, co, ci);
        if (rc <= 0) {
            return rc < 0 ? (ptl_decref(y), NULL) : y;
        }
        ptl_decref(y);
    }
    if (conv_on_device(gy) || !use_packed(gy->dtype) || co == 0 || !phases_fit(g) ||
        (strided && g->kvol == 1)) {
        return img_fwd(gy, w, NULL, g);
    }
    int64_t ysz[3] = {n, ci, g->img_numel};
    int untouched = 0;   /* some phase no tap reaches: zeros */
    for (int i = 0; i < NN_SPATIAL; i++) {
        untouched |= g->s[i] > g->k[i];
    }
    PtlTensorImpl *y = untouched ? nn_zeros(3, ysz, gy->dtype)
                                 : ptl_empty(3, ysz, gy->dtype, gy->device);
    if (y == NULL || y->numel == 0) {
        return y;
    }
    /* the phases' shared geometry: each dim's phases with taps and pixels, their sub-kernels
     * placed in one kernel at the largest padding, their outputs within the largest */
    ConvGeom t = *g;
    for (int i = 0; i < NN_SPATIAL; i++) {
        t.img[i] = g->col[i];
        t.col[i] = t.k[i] = t.p[i] = 0;
        t.s[i] = 1;
        t.d[i] = g->s[i] == 1 ? g->d[i] : 1;
        for (int64_t r = 0; r < g->s[i]; r++) {
            PhaseDim pd = phase_dim(g, i, r);
            if (pd.nj > 0 && pd.na > 0) {
                t.p[i] = pd.pad > t.p[i] ? pd.pad : t.p[i];
                t.col[i] = pd.na > t.col[i] ? pd.na : t.col[i];
            }
        }
        for (int64_t r = 0; r < g->s[i]; r++) {
            PhaseDim pd = phase_dim(g, i, r);
            int64_t reach = pd.nj + (t.p[i] - pd.pad) / t.d[i];
            if (pd.nj > 0 && pd.na > 0 && reach > t.k[i]) {
                t.k[i] = reach;
            }
        }
    }
    geom_finish(&t);
    int64_t nph = g->s[0] * g->s[1] * g->s[2];
    ConvPackedPhase *ph = NULL;
    ConvPackedOut *outs = NULL;
    float *ws = NULL;
    if (nph == 1) {   /* stride 1: the whole kernel, all of gx in order */
        if (conv_packed_fwd((const float *)ptl_tensor_data(gy), (const float *)ptl_tensor_data(w),
                            CONV_PACKED_W_FLIPPED, NULL, (float *)ptl_tensor_data(y), &t, n, co,
                            ci) < 0) {
            goto error;
        }
        return y;
    }
    ph = malloc((size_t)nph * sizeof(ConvPackedPhase));
    outs = malloc((size_t)nph * sizeof(ConvPackedOut));
    ws = malloc((size_t)(co * cpg * g->kvol) * sizeof(float));
    if (ph == NULL || outs == NULL || ws == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "conv: out of memory allocating the output phases");
        goto error;
    }
    const int64_t ist[NN_SPATIAL] = {g->img[1] * g->img[2], g->img[2], 1};
    const float *wd = (const float *)ptl_tensor_data(w);
    float *wsf = ws;
    int64_t used = 0;
    for (int64_t rz = 0; rz < g->s[0]; rz++) {
        for (int64_t ry = 0; ry < g->s[1]; ry++) {
            for (int64_t rx = 0; rx < g->s[2]; rx++) {
                const int64_t r[NN_SPATIAL] = {rz, ry, rx};
                ConvPackedPhase *f = &ph[used];
                ConvPackedOut *out = &outs[used];
                int empty = 0;
                *out = (ConvPackedOut){g->img_numel, 0, {0, 0, 0}};
                for (int i = 0; i < NN_SPATIAL; i++) {
                    PhaseDim pd = phase_dim(g, i, r[i]);
                    empty |= pd.nj == 0 || pd.na == 0;   /* zeros, or no pixel */
                    f->k[i] = pd.nj;
                    f->at[i] = (t.p[i] - pd.pad) / t.d[i];
                    f->col[i] = pd.na;
                    out->off += (g->s[i] * pd.a_lo + r[i] - g->p[i]) * ist[i];
                    out->st[i] = g->s[i] * ist[i];
                }
                if (empty) {
                    continue;
                }
                /* its weight (Co, Ci/G, nj) = w[.., .., r + s * j] */
                f->w = wsf;
                f->out = out;
                for (int64_t oc = 0; oc < co * cpg; oc++) {
                    const float *src = wd + oc * g->kvol;
                    for (int64_t jz = 0; jz < f->k[0]; jz++) {
                        for (int64_t jy = 0; jy < f->k[1]; jy++) {
                            for (int64_t jx = 0; jx < f->k[2]; jx++) {
                                *wsf++ = src[((rz + g->s[0] * jz) * g->k[1] + ry + g->s[1] * jy) *
                                             g->k[2] + rx + g->s[2] * jx];
                            }
                        }
                    }
                }
                used++;
            }
        }
    }
    if (used > 0 && conv_packed_fwd_phases((const float *)ptl_tensor_data(gy),
                                           (float *)ptl_tensor_data(y), ph, used, &t, n, co,
                                           ci) < 0) {
        goto error;
    }
    free(ph);
    free(outs);
    free(ws);
    return y;
error:
    free(ph);
    free(outs);
    free(ws);
    ptl_decref(y);
    return NULL;
}

/* The geometry of a (possibly transposed) convolution whose non-transposed input has
 * spatial sizes img (x for a plain conv, the output for a transposed one). */
static void
conv_geom(const ConvArgs *a, const PtlTensorImpl *w, const int64_t *xsp, ConvGeom *g)
{
    int nd = a->nd;
    g->groups = a->groups;
    for (int i = 0; i < 3; i++) {
        int u = i - (3 - nd);
        int64_t k = u < 0 ? 1 : w->sizes[2 + u], in = u < 0 ? 1 : xsp[u];
        g->k[i] = k;
        g->s[i] = a->stride[i];
        g->p[i] = a->pad[i];
        g->d[i] = a->dil[i];
        if (a->transposed) {
            g->col[i] = in;
            g->img[i] = (in - 1) * a->stride[i] - 2 * a->pad[i] + a->dil[i] * (k - 1) + a->opad[i] + 1;
        }
        else {
            g->img[i] = in;
            g->col[i] = (in + 2 * a->pad[i] - a->dil[i] * (k - 1) - 1) / a->stride[i] + 1;
        }
    }
    geom_finish(g);
}

/* The parts of a convolution a dtype check names: the forward and the three gradients. */
enum { CONV_FORWARD, CONV_GRAD_INPUT, CONV_GRAD_WEIGHT, CONV_GRAD_BIAS };

/* Refuses the dtypes PyTorch's CPU convolution has no loop for (complex and bool; the
 * integers pass), naming the kernel of `part` that PyTorch's backend choice reaches for
 * these arguments: the transposed ones, the dilated one, else the 2-D (1-D: 2-D) or 3-D
 * im2col ones.  Its bias gradient is a sum every dtype takes, except in the dilated and the
 * 3-D transposed kernels.  0 or -1. */
static int
conv_dtype_check(const ConvArgs *a, PtlDtype dt, int part)
{
    static const char *const transposed[2][4] = {   /* [3-D][part] */
        {"slow_conv_transpose2d_out_cpu", "slow_conv_transpose2d_backward_out_cpu",
         "slow_conv_transpose2d_acc_grad_parameters_cpu", NULL},
        {"slow_conv_transpose3d_out_cpu", "slow_conv_transpose3d_backward_out_cpu",
         "slow_conv_transpose3d_acc_grad_parameters_cpu",
         "slow_conv_transpose3d_acc_grad_parameters_cpu"}};
    static const char *const direct[2][4] = {
        {"slow_conv2d_cpu", "slow_conv2d_cpu_grad_input", "slow_conv2d_cpu", NULL},
        {"compute_columns3d", "slow_conv3d_cpu_grad_input", "compute_columns3d", NULL}};
    int dilated = a->dil[0] != 1 || a->dil[1] != 1 || a->dil[2] != 1;
    const char *name = a->transposed ? transposed[a->nd == 3][part]
                       : dilated     ? "slow_conv_dilated<>"
                                     : direct[a->nd == 3][part];
    return name == NULL ? 0 : nn_check_dtype(name, dt, 1);
}

/* convolution(Tensor input, Tensor weight, Tensor? bias, stride, padding, dilation,
 * bool transposed, output_padding, groups):
 * (N, Ci, *in) x (Co, Ci/G, *k) -> (N, Co, *out); transposed: weight (Ci, Co/G, *k) */
static int
convolution_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *x = s[0].u.t, *w = s[1].u.t;
    PtlTensorImpl *bias = s[2].tag == PTL_IV_TENSOR ? s[2].u.t : NULL;
    PtlTensorImpl *xc = NULL, *wc = NULL, *bc = NULL, *y = NULL, *res = NULL;
    ConvArgs a;
    ConvGeom g;

    if (ptl_conv_check(x, w, bias, s, &a) < 0 ||
        conv_dtype_check(&a, x->dtype, CONV_FORWARD) < 0) {
        return -1;
    }
    PtlDtype work = nn_work_dtype(x->dtype);
    conv_geom(&a, w, x->sizes + 2, &g);
    if (ptl_tensor_is_meta(x)) {   /* the output's geometry alone (Note [Meta kernels]) */
        int64_t msz[5] = {x->sizes[0], a.transposed ? w->sizes[1] * g.groups : w->sizes[0]};
        for (int i = 0; i < a.nd; i++) {
            msz[2 + i] = a.transposed ? g.img[3 - a.nd + i] : g.col[3 - a.nd + i];
        }
        if ((res = ptl_empty(a.nd + 2, msz, x->dtype, x->device)) == NULL) {
            return -1;
        }
        s[0] = ptl_iv_tensor(res);
        return 0;
    }
    if ((xc = nn_prepare(x, work)) == NULL || (wc = nn_prepare(w, work)) == NULL ||
        (bias != NULL && (bc = nn_prepare(bias, work)) == NULL)) {
        goto error;
    }
    y = a.transposed ? img_fwd(xc, wc, bc, &g) : col_fwd(xc, wc, bc, &g);
    if (y == NULL) {
        goto error;
    }
    int64_t osz[5] = {x->sizes[0], y->sizes[1]};
    for (int i = 0; i < a.nd; i++) {
        osz[2 + i] = a.transposed ? g.img[3 - a.nd + i] : g.col[3 - a.nd + i];
    }
    ptl_tensor_impl_set_sizes(y, a.nd + 2, osz, NULL);
    if ((res = nn_finish(y, x->dtype)) == NULL) {
        y = NULL;
        goto error;
    }
    y = NULL;
    ptl_decref(xc);
    ptl_decref(wc);
    ptl_xdecref(bc);
    s[0] = ptl_iv_tensor(res);
    return 0;
error:
    ptl_xdecref(xc);
    ptl_xdecref(wc);
    ptl_xdecref(bc);
    ptl_xdecref(y);
    return -1;
}

/* convolution_backward's (None, None, grad_bias) of a complex grad_output go (N, C, *):
 * its sum over every dim but the channels', where the mask asks for it (else None). */
static int
complex_bias_grad(PtlIValue *s, PtlTensorImpl *go, int want)
{
    int64_t dims[PTL_MAX_DIMS], n = 0;
    for (int d = 0; d < go->dim; d++) {
        if (d != 1) {
            dims[n++] = d;
        }
    }
    PtlIValue v[4] = {ptl_iv_tensor(go), ptl_iv_intlist(dims, n), ptl_iv_bool(0), ptl_iv_none()};
    PtlTensorImpl *gb = want ? ptl_call_tensor(PTL_OP_sum_dim_IntList, v) : NULL;
    if (want && gb == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(NULL);
    s[1] = ptl_iv_tensor(NULL);
    s[2] = ptl_iv_tensor(gb);
    return 0;
}

/* convolution_backward(grad_output, input, weight, bias_sizes?, stride, padding, dilation,
 * transposed, output_padding, groups, output_mask) -> (grad_input, grad_weight, grad_bias);
 * undefined (None) where output_mask is 0. */
static int
convolution_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *go = s[0].u.t, *x = s[1].u.t, *w = s[2].u.t;
    PtlTensorImpl *gc = NULL, *xc = NULL, *wc = NULL, *out[3] = {NULL, NULL, NULL};
    const int64_t *mask = s[10].u.il.data;
    ConvArgs a;
    ConvGeom g;
    PtlIValue cs[9];

    /* the forward's checks, with the arguments at convolution's positions */
    cs[0] = s[1];
    cs[1] = s[2];
    cs[2] = ptl_iv_none();
    for (int i = 3; i < 9; i++) {
        cs[i] = s[i + 1];
    }
    if (ptl_conv_check(x, w, NULL, cs, &a) < 0 ||
        (mask[0] && conv_dtype_check(&a, x->dtype, CONV_GRAD_INPUT) < 0) ||
        (mask[1] && conv_dtype_check(&a, x->dtype, CONV_GRAD_WEIGHT) < 0) ||
        (mask[2] && conv_dtype_check(&a, x->dtype, CONV_GRAD_BIAS) < 0)) {
        return -1;
    }
    if (ptl_dtype_is_complex(x->dtype)) {   /* the bias's gradient alone got here */
        return complex_bias_grad(s, go, (int)mask[2]);
    }
    PtlDtype work = nn_work_dtype(x->dtype);
    conv_geom(&a, w, x->sizes + 2, &g);
    if (ptl_tensor_is_meta(go)) {   /* the gradients' geometry alone */
        int64_t c = go->sizes[1];
        if ((mask[0] && (out[0] = ptl_empty(x->dim, x->sizes, go->dtype, go->device)) == NULL) ||
            (mask[1] && (out[1] = ptl_empty(w->dim, w->sizes, go->dtype, go->device)) == NULL) ||
            (mask[2] && (out[2] = ptl_empty(1, &c, go->dtype, go->device)) == NULL)) {
            goto error;
        }
        for (int i = 0; i < 3; i++) {
            s[i] = ptl_iv_tensor(out[i]);
        }
        return 0;
    }
    if ((gc = nn_prepare(go, work)) == NULL || (xc = nn_prepare(x, work)) == NULL ||
        (wc = nn_prepare(w, work)) == NULL) {
        goto error;
    }
    /* the primitives read only sizes[0..1] and the data of their tensor arguments */
    if (mask[0]) {
        out[0] = a.transposed ? col_fwd(gc, wc, NULL, &g) : input_grad(gc, wc, &g);
        if (out[0] == NULL) {
            goto error;
        }
        ptl_tensor_impl_set_sizes(out[0], x->dim, x->sizes, NULL);
    }
    if (mask[1]) {
        out[1] = a.transposed ? wgrad(xc, gc, &g) : wgrad(gc, xc, &g);
        if (out[1] == NULL) {
            goto error;
        }
        ptl_tensor_impl_set_sizes(out[1], w->dim, w->sizes, NULL);
    }
    if (mask[2]) {
        int64_t c = go->sizes[1];
        if ((out[2] = ptl_empty(1, &c, work, x->device)) == NULL) {
            goto error;
        }
        int64_t l = c > 0 && go->sizes[0] > 0 ? go->numel / (go->sizes[0] * c) : 0;
        if (!conv_on_device(gc)) {
            if (bias_grad(work != PTL_DTYPE_FLOAT32, ptl_tensor_data(out[2]),
                          ptl_tensor_data(gc), go->sizes[0], c, l) < 0) {
                goto error;
            }
        }
        else if (bias_grad_device(out[2], gc, go->sizes[0], c, l) < 0) {
            goto error;
        }
    }
    for (int i = 0; i < 3; i++) {
        if (out[i] != NULL && (out[i] = nn_finish(out[i], go->dtype)) == NULL) {
            goto error;
        }
    }
    ptl_decref(gc);
    ptl_decref(xc);
    ptl_decref(wc);
    for (int i = 0; i < 3; i++) {
        s[i] = ptl_iv_tensor(out[i]);
    }
    return 0;
error:
    ptl_xdecref(gc);
    ptl_xdecref(xc);
    ptl_xdecref(wc);
    for (int i = 0; i < 3; i++) {
        ptl_xdecref(out[i]);
    }
    return -1;
}

/* ---- im2col / col2im (unfold / fold) ---- */

/* Reads kernel_size, dilation, padding, stride (2-D) starting at stack slot k0. */
static int
fold_params(const PtlIValue *s, int k0, ConvGeom *g)
{
    static const char *const names[4] = {"kernel_size", "dilation", "padding", "stride"};
    int64_t *dst[4] = {g->k, g->d, g->p, g->s};
    for (int i = 0; i < 4; i++) {
        const PtlIValue *iv = &s[k0 + i];
        if (iv->u.il.n != 2) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "It is expected %s equals to 2, but got size %lld", names[i],
                                 (long long)iv->u.il.n);
        }
        dst[i][0] = i == 2 ? 0 : 1;
        dst[i][1] = iv->u.il.data[0];
        dst[i][2] = iv->u.il.data[1];
    }
    if (g->k[1] <= 0 || g->k[2] <= 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "kernel size should be greater than zero, but got kernel_height: "
                             "%lld kernel_width: %lld",
                             (long long)g->k[1], (long long)g->k[2]);
    }
    if (g->s[1] <= 0 || g->s[2] <= 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "stride should be greater than zero, but got stride_height: %lld "
                             "stride_width: %lld",
                             (long long)g->s[1], (long long)g->s[2]);
    }
    if (g->d[1] <= 0 || g->d[2] <= 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "dilation should be greater than zero, but got dilation_height: "
                             "%lld dilation_width: %lld",
                             (long long)g->d[1], (long long)g->d[2]);
    }
    if (g->p[1] < 0 || g->p[2] < 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "padding should be non-negative, but got pad_height: %lld "
                             "pad_width: %lld",
                             (long long)g->p[1], (long long)g->p[2]);
    }
    int64_t kvol;
    if (__builtin_mul_overflow(g->k[1], g->k[2], &kvol)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Given kernel_width = %lld and kernel_height = %lld the product of "
                             "kernel_width and kernel_height overflowed.",
                             (long long)g->k[2], (long long)g->k[1]);
    }
    g->groups = 1;
    return 0;
}

/* The number of sliding blocks along one dim (truncating division, as PyTorch) in *n; -1 with
 * an error when the padded size or the dilated kernel does not fit in int64. */
static int
fold_nblocks(const ConvGeom *g, int i, int64_t size, int64_t *n)
{
    int64_t padded, reach, span;
    if (__builtin_mul_overflow(g->p[i], 2, &padded) ||
        __builtin_add_overflow(padded, size, &padded) ||
        __builtin_mul_overflow(g->d[i], g->k[i] - 1, &reach) ||
        __builtin_sub_overflow(padded, reach, &span) || __builtin_sub_overflow(span, 1, &span)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "the size %lld with padding %lld, dilation %lld and kernel size "
                             "%lld overflows int64",
                             (long long)size, (long long)g->p[i], (long long)g->d[i],
                             (long long)g->k[i]);
    }
    /* rounded down, as PyTorch's div_rtn: a kernel wider than the padded image has no block */
    *n = (span >= 0 ? span / g->s[i] : -((-span + g->s[i] - 1) / g->s[i])) + 1;
    return 0;
}

/* Sets the image (h, w) of im2col/col2im and the grid of sliding blocks over it; 1 when the
 * grid has at least one block each way, 0 when not, -1 with an error on overflow. */
static int
fold_blocks(ConvGeom *g, int64_t h, int64_t w)
{
    g->img[0] = 1;
    g->img[1] = h;
    g->img[2] = w;
    g->col[0] = 1;
    int64_t blocks;
    if (fold_nblocks(g, 1, h, &g->col[1]) < 0 || fold_nblocks(g, 2, w, &g->col[2]) < 0) {
        return -1;
    }
    if (g->col[1] >= 1 && g->col[2] >= 1 &&
        __builtin_mul_overflow(g->col[1], g->col[2], &blocks)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "the number of sliding blocks, %lld * %lld, overflows int64",
                             (long long)g->col[1], (long long)g->col[2]);
    }
    return g->col[1] >= 1 && g->col[2] >= 1;
}

/* "kernel_size=(.., ..), dilation=(.., ..), padding=(.., ..)[, stride=(.., ..)]" of g, for
 * the messages of im2col and col2im; returns buf. */
static const char *
fold_args_text(const ConvGeom *g, int with_stride, char *buf, size_t n)
{
    int len = snprintf(buf, n, "kernel_size=(%lld, %lld), dilation=(%lld, %lld), padding=(%lld, "
                       "%lld)", (long long)g->k[1], (long long)g->k[2], (long long)g->d[1],
                       (long long)g->d[2], (long long)g->p[1], (long long)g->p[2]);
    if (with_stride && len > 0 && (size_t)len < n) {
        snprintf(buf + len, n - (size_t)len, ", stride=(%lld, %lld)", (long long)g->s[1],
                 (long long)g->s[2]);
    }
    return buf;
}

/* im2col(Tensor self, kernel_size, dilation, padding, stride):
 * (N, C, H, W) -> (N, C * kh * kw, L) or (C, H, W) -> (C * kh * kw, L) */
static int
im2col_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *x = s[0].u.t, *xc = NULL, *y = NULL;
    ConvGeom g;
    char buf[128], args[256];

    if (fold_params(s, 1, &g) < 0) {
        return -1;
    }
    int batched = x->dim == 4;
    if (!((x->dim == 3 && x->sizes[0] != 0) || (x->dim == 4 && x->sizes[1] != 0)) ||
        x->sizes[x->dim - 1] == 0 || x->sizes[x->dim - 2] == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size "
                             "and other non-zero dimensions for input, but got: %s",
                             ptl_format_sizes(buf, sizeof(buf), x->dim, x->sizes));
    }
    /* a raw copy: PyTorch's kernel takes the float and complex types and bool, not the
     * integers (complex comes from complex_parts.c's Complex key kernel) */
    if (x->dtype != PTL_DTYPE_BOOL && !ptl_dtype_is_complex(x->dtype) &&
        nn_check_dtype("im2col_out_cpu", x->dtype, 0) < 0) {
        return -1;
    }
    int64_t n = batched ? x->sizes[0] : 1, c = x->sizes[x->dim - 3];
    int positive = fold_blocks(&g, x->sizes[x->dim - 2], x->sizes[x->dim - 1]);
    if (positive < 0) {
        return -1;
    }
    if (!positive) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Given input with spatial size (%lld, %lld), %s, calculated shape of "
                             "the array of sliding blocks as (%lld, %lld), but its components "
                             "must be at least one.",
                             (long long)g.img[1], (long long)g.img[2],
                             fold_args_text(&g, 0, args, sizeof(args)), (long long)g.col[1],
                             (long long)g.col[2]);
    }
    geom_finish(&g);
    int64_t ysz[3] = {n, 0, g.col_numel};
    if (__builtin_mul_overflow(c, g.kvol, &ysz[1])) {
        return ptl_error_set(PTL_ERR_RUNTIME, "numel: integer multiplication overflow");
    }
    if ((xc = ptl_contiguous(x)) == NULL) {
        return -1;
    }
    if ((y = ptl_empty(3, ysz, x->dtype, x->device)) == NULL) {
        goto error;
    }
    /* each (sample, channel) writes its own kvol rows: batch chunk of one sample */
    for (int64_t i = 0; i < (conv_on_device(x) ? 0 : n); i++) {
        size_t isz = ptl_tensor_itemsize(x);
        ColJob j = {&g, ptl_tensor_data(xc) + (size_t)(i * c * g.img_numel) * isz, NULL,
                    ptl_tensor_data(y) + (size_t)(i * c * g.kvol * g.col_numel) * isz,
                    0, 1, c, c, isz, NULL};
        if (run_jobs(im2col_job, &j) < 0) {
            goto error;
        }
    }
    /* on the device: one launch over the batch (Note [CUDA convolution]) */
    if (conv_on_device(x) &&
        device_conv(PTL_DEVICE_CONV_IM2COL, xc, xc, NULL, y, &g, n, c, c * g.kvol) < 0) {
        goto error;
    }
    if (!batched) {
        ptl_tensor_impl_set_sizes(y, 2, ysz + 1, NULL);
    }
    ptl_decref(xc);
    s[0] = ptl_iv_tensor(y);
    return 0;
error:
    ptl_decref(xc);
    ptl_xdecref(y);
    return -1;
}

/* col2im(Tensor self, output_size, kernel_size, dilation, padding, stride):
 * (N, C * kh * kw, L) -> (N, C, H, W) or (C * kh * kw, L) -> (C, H, W) */
static int
col2im_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *x = s[0].u.t, *xc = NULL, *y = NULL;
    ConvGeom g;
    char buf[128], args[256];

    if (s[1].u.il.n != 2) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "It is expected output_size equals to 2, but got size %lld",
                             (long long)s[1].u.il.n);
    }
    if (fold_params(s, 2, &g) < 0) {
        return -1;
    }
    int batched = x->dim == 3;
    if (!((x->dim == 2 && x->sizes[0] != 0 && x->sizes[1] != 0) ||
          (x->dim == 3 && x->sizes[1] != 0 && x->sizes[2] != 0))) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                             "batch size and non-zero dimensions for input, but got: %s",
                             ptl_format_sizes(buf, sizeof(buf), x->dim, x->sizes));
    }
    int64_t rows = x->sizes[x->dim - 2], L = x->sizes[x->dim - 1];
    int64_t kvol = g.k[1] * g.k[2];
    if (rows % kvol != 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Expected size of input's dimension 1 to be divisible by the product "
                             "of kernel_size, but got input.size(1)=%lld and kernel_size=(%lld, "
                             "%lld).",
                             (long long)rows, (long long)g.k[1], (long long)g.k[2]);
    }
    /* PyTorch checks the block count against L before the grid's own size */
    int positive = fold_blocks(&g, s[1].u.il.data[0], s[1].u.il.data[1]);
    int64_t nblocks;
    if (positive < 0) {
        return -1;
    }
    /* counts whose product wraps are negative: the message below names them */
    if (!__builtin_mul_overflow(g.col[1], g.col[2], &nblocks) && L != nblocks) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Given output_size=(%lld, %lld), %s, expected size of input's "
                             "dimension 2 to match the calculated number of sliding blocks "
                             "%lld * %lld = %lld, but got input.size(2)=%lld.",
                             (long long)g.img[1], (long long)g.img[2],
                             fold_args_text(&g, 1, args, sizeof(args)), (long long)g.col[1],
                             (long long)g.col[2], (long long)nblocks, (long long)L);
    }
    if (!positive) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Given output_size=(%lld, %lld), %s, calculated shape of the array "
                             "of sliding blocks as (%lld, %lld), which is too small "
                             "(non-positive)",
                             (long long)g.img[1], (long long)g.img[2],
                             fold_args_text(&g, 1, args, sizeof(args)), (long long)g.col[1],
                             (long long)g.col[2]);
    }
    geom_finish(&g);
    if (nn_check_dtype("col2im_out_cpu", x->dtype, 0) < 0) {
        return -1;
    }
    PtlDtype work = nn_work_dtype(x->dtype);
    if ((xc = nn_prepare(x, work)) == NULL) {
        return -1;
    }
    int64_t n = batched ? x->sizes[0] : 1, c = rows / kvol;
    int64_t ysz[4] = {n, c, g.img[1], g.img[2]};
    if ((y = ptl_empty(4, ysz, work, x->device)) == NULL) {
        goto error;
    }
    for (int64_t i = 0; i < (conv_on_device(x) ? 0 : n); i++) {
        ColJob j = {&g, NULL, ptl_tensor_data(y) + (size_t)(i * c * g.img_numel) * ptl_tensor_itemsize(xc),
                    ptl_tensor_data(xc) + (size_t)(i * rows * L) * ptl_tensor_itemsize(xc),
                    0, 1, c, c, ptl_tensor_itemsize(xc), add_fn(work)};
        if (run_jobs(col2im_job, &j) < 0) {
            goto error;
        }
    }
    /* on the device: one launch over the batch, a gather per image element */
    if (conv_on_device(x) &&
        device_conv(PTL_DEVICE_CONV_COL2IM, xc, xc, NULL, y, &g, n, c, rows) < 0) {
        goto error;
    }
    if (!batched) {
        ptl_tensor_impl_set_sizes(y, 3, ysz + 1, NULL);
    }
    ptl_decref(xc);
    if ((y = nn_finish(y, x->dtype)) == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(y);
    return 0;
error:
    ptl_decref(xc);
    ptl_xdecref(y);
    return -1;
}

/* The layout of a convolution's results (and of its input and weight gradients): the
 * channels-last format the input or else the weight suggests, as PyTorch's CPU convolution
 * decides; 1-d convolutions stay contiguous.  See Note [Channels-last at the kernel boundary]. */
static PtlMemoryFormat
conv_format(const PtlTensorImpl *input, const PtlTensorImpl *weight)
{
    PtlMemoryFormat f = ptl_tensor_impl_suggest_memory_format(input);
    return f != PTL_MEMORY_FORMAT_CONTIGUOUS ? f : ptl_tensor_impl_suggest_memory_format(weight);
}

static int
convolution_as_input(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    int native = conv_nhwc_forward(s);
    if (native != 0) {
        return native < 0 ? -1 : 0;
    }
    return ptl_kernel_run_as(convolution_cpu, op, ks, s, conv_format(s[0].u.t, s[1].u.t));
}

/* convolution_backward(grad_output, input, weight, ...) */
static int
convolution_backward_as_input(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    int native = conv_nhwc_backward(s);
    if (native != 0) {
        return native < 0 ? -1 : 0;
    }
    return ptl_kernel_run_as(convolution_backward_cpu, op, ks, s,
                             conv_format(s[1].u.t, s[2].u.t));
}

static const PtlKernelReg conv_cpu[] = {
    {PTL_OP_convolution, PTL_KEY_CPU, convolution_as_input},
    {PTL_OP_convolution_backward, PTL_KEY_CPU, convolution_backward_as_input},
    {PTL_OP_im2col, PTL_KEY_CPU, im2col_cpu},
    {PTL_OP_col2im, PTL_KEY_CPU, col2im_cpu},
};
PTL_DEFINE_REGISTER(conv_cpu)
