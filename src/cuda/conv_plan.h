/* conv_plan.h -- the index arithmetic and per-thread work of the implicit-GEMM convolution
 * kernels, compiled by nvcc for the device (conv.cu) and by gcc for the host (conv_plan.c),
 * whose emulation runs exactly these functions in the kernels' block and thread order.
 * Mirrors ATen/native/cuda/ConvolutionMM2d.cu and NaiveConvolutionTranspose2d.cu in
 * behaviour (cuDNN's implicit GEMM in method).
 *
 * Note [CUDA convolution]
 * ~~~~~~~~~~~~~~~~~~~~~~~
 * conv.c reduces every convolution, transposed convolution and their gradients to three
 * primitives (Note [Convolution as GEMM]); on the device each is one GEMM per group,
 * C (M x J) = A (M x K) B (K x J), whose operands are never built: a thread that loads
 * A(m, k) or B(k, j) into shared memory computes the element's place in the contiguous
 * input, or that it is zero (padding, a stride's gap, outside the tile):
 *   COL_FWD  M = c_col / G, K = (c_img / G) kvol, J = n cols:  A the weight row m,
 *            B(k, j) the image element under tap k % kvol of channel k / kvol at column
 *            position j (im2col's entry: ptl_conv_img_index).
 *   IMG_FWD  M = c_img / G, K = (c_col / G) kvol, J = n img:  A(m, k) the weight of
 *            column channel k / kvol, tap k % kvol, image channel m; B(k, j) the column
 *            element whose tap k % kvol lands on image position j, zero where none does
 *            (ptl_conv_col_index).  Each image element is computed by the one thread that
 *            owns it, gathering from the windows that cover it: no scatter, no atomics
 *            (col2im's adds become a gather).
 *   WGRAD    M = c_col / G, K = n cols, J = (c_img / G) kvol:  A the column gradient,
 *            B im2col's entry as in COL_FWD, the roles of k and j exchanged.
 * K's index k of a weight is (channel, kz, ky, kx) row-major, the weight's own layout, so
 * A of COL_FWD is the weight's memory.  A block of PTL_CONV_THREADS threads owns a tile of
 * PTL_CONV_BM x PTL_CONV_BN outputs of one group: per step of PTL_CONV_BK along K each
 * thread loads four elements of A's and four of B's tile into shared memory (neighbouring
 * threads neighbouring m or j: B's image and column reads are coalesced along the pixels),
 * then adds its 4 x 4 outputs' products in k order with one fused multiply-add each (fma,
 * on the host too: the emulation has the device's bits).  Every output is therefore one
 * sum in k order, whatever the grid: deterministic.  Tiles are numbered (split, group, m
 * tile, j tile), j fastest, and blocks take tiles x, x + grid, ... .
 * WGRAD's K (n cols) is long and its output small: when the output tiles do not fill the
 * device (target_blocks) K is cut into nsplit chunks of min_chunk at least; each chunk's
 * sums go to a workspace and a second pass (one thread per output) adds the chunks in
 * order.  The split depends on the device's figures only, so a run on a device repeats its
 * bits; float32 accumulates in float32 as cuDNN does (the tests' tolerance covers K up to a
 * few thousand terms), float64 in float64.  The bias of COL_FWD and IMG_FWD is added to
 * the finished sum, as the CPU kernel does; its gradient is a reduction (reduce.cu).
 * im2col and col2im themselves (unfold, fold) are one thread per output element with the
 * same index functions: im2col a raw copy (any dtype), col2im a gather over the taps in
 * tap order from zero, the CPU's order and bits, with no atomics. */
#ifndef PTL_CUDA_CONV_PLAN_H
#define PTL_CUDA_CONV_PLAN_H

#include <math.h>
#include <stdint.h>

#include "../aten/native/device_conv.h"
#include "../c10/macros.h"
#include "cuda_api.h"

#define PTL_CONV_BM 64
#define PTL_CONV_BN 64
#define PTL_CONV_BK 16
#define PTL_CONV_THREADS 256
#define PTL_CONV_TN 16   /* threads along j in a tile; PTL_CONV_THREADS / PTL_CONV_TN along m */
#define PTL_CONV_MICRO 4 /* outputs per thread along m and along j */

/* Where tile t of plan p sits: its group, first m and j, its K range [k0, k1), its split. */
typedef struct PtlConvTile {
    int64_t g, m0, j0, k0, k1, split;
} PtlConvTile;

PTL_HD static inline PtlConvTile
ptl_conv_tile(const PtlCudaConvPlan *p, int64_t t)
{
    PtlConvTile tl;
    tl.j0 = t % p->jtiles * PTL_CONV_BN;
    t /= p->jtiles;
    tl.m0 = t % p->mtiles * PTL_CONV_BM;
    t /= p->mtiles;
    tl.g = t % p->groups;
    tl.split = t / p->groups;
    tl.k0 = tl.split * p->chunk;
    tl.k1 = tl.k0 + p->chunk < p->K ? tl.k0 + p->chunk : p->K;
    return tl;
}

/* v as the (z, y, x) index of a row-major box of sizes sz */
PTL_HD static inline void
ptl_conv_split3(int64_t v, const int64_t *sz, int64_t *o)
{
    o[2] = v % sz[2];
    o[1] = v / sz[2] % sz[1];
    o[0] = v / (sz[2] * sz[1]);
}

/* The image element (sample n, channel c) that tap kk reads for column position q, or -1
 * where the tap lies in the padding. */
PTL_HD static inline int64_t
ptl_conv_img_index(const PtlDeviceConvArgs *a, int64_t n, int64_t c, int64_t kk, int64_t q)
{
    int64_t o[3], t[3], at = n * a->c_img + c;
    ptl_conv_split3(q, a->col, o);
    ptl_conv_split3(kk, a->k, t);
    for (int i = 0; i < 3; i++) {
        const int64_t x = o[i] * a->s[i] - a->p[i] + t[i] * a->d[i];
        if (x < 0 || x >= a->img[i]) {
            return -1;
        }
        at = at * a->img[i] + x;
    }
    return at;
}

/* The column element (sample n, channel c) whose tap kk lands on image position q, or -1
 * where none does (q + p - kk d not a multiple of the stride, or outside the columns). */
PTL_HD static inline int64_t
ptl_conv_col_index(const PtlDeviceConvArgs *a, int64_t n, int64_t c, int64_t kk, int64_t q)
{
    int64_t x[3], t[3], at = n * a->c_col + c;
    ptl_conv_split3(q, a->img, x);
    ptl_conv_split3(kk, a->k, t);
    for (int i = 0; i < 3; i++) {
        const int64_t u = x[i] + a->p[i] - t[i] * a->d[i];
        if (u < 0 || u % a->s[i] != 0 || u / a->s[i] >= a->col[i]) {
            return -1;
        }
        at = at * a->col[i] + u / a->s[i];
    }
    return at;
}

/* im2col's output element e of (n, c_col, cols): the isz bytes of the image element its tap
 * reads (conv.c's im2col_plane, element by element), zero in the padding */
PTL_HD static inline void
ptl_conv_im2col_at(const PtlDeviceConvArgs *a, int64_t e, int64_t isz)
{
    const int64_t cols = a->col[0] * a->col[1] * a->col[2], kvol = a->k[0] * a->k[1] * a->k[2];
    const int64_t q = e % cols, kk = e / cols % kvol, c = e / (cols * kvol) % a->c_img;
    const int64_t at = ptl_conv_img_index(a, e / (cols * a->c_col), c, kk, q);
    char *o = a->out + e * isz;
    for (int64_t b = 0; b < isz; b++) {
        o[b] = at < 0 ? 0 : a->b[at * isz + b];
    }
}

/* col2im's output element e of (n, c_img, img) in T: from zero, the column elements whose
 * taps land on it added in tap order, as conv.c's col2im_plane adds its rows (its bits) */
#define PTL_CONV_COL2IM(T)                                                                  \
    do {                                                                                    \
        T acc = 0;                                                                          \
        for (int64_t kk = 0; kk < kvol; kk++) {                                             \
            const int64_t at = ptl_conv_col_index(a, n, c * kvol + kk, kk, q);              \
            acc = at < 0 ? acc : acc + ((const T *)a->b)[at];                               \
        }                                                                                   \
        ((T *)a->out)[e] = acc;                                                             \
    } while (0)

PTL_HD static inline void
ptl_conv_col2im_at(const PtlDeviceConvArgs *a, int64_t e)
{
    const int64_t imgs = a->img[0] * a->img[1] * a->img[2], kvol = a->k[0] * a->k[1] * a->k[2];
    const int64_t q = e % imgs, c = e / imgs % a->c_img, n = e / (imgs * a->c_img);
    if (a->dtype == PTL_DTYPE_FLOAT64) {
        PTL_CONV_COL2IM(double);
    }
    else {
        PTL_CONV_COL2IM(float);
    }
}
#undef PTL_CONV_COL2IM

/* A(m, k) of group g as an element of a->a, or -1 (zero) outside [0, M) x [0, k1) */
PTL_HD static inline int64_t
ptl_conv_a_index(const PtlDeviceConvArgs *a, const PtlCudaConvPlan *p, int64_t g, int64_t m,
                 int64_t k, int64_t k1)
{
    if (m >= p->M || k >= k1) {
        return -1;
    }
    switch (a->kind) {
    case PTL_DEVICE_CONV_COL_FWD:
        return (g * p->M + m) * p->K + k;
    case PTL_DEVICE_CONV_IMG_FWD:
        return ((g * p->cpc + k / p->kvol) * p->M + m) * p->kvol + k % p->kvol;
    default:
        return (k / p->cols * a->c_col + g * p->M + m) * p->cols + k % p->cols;
    }
}

/* B(k, j) of group g as an element of a->b, or -1 (zero) */
PTL_HD static inline int64_t
ptl_conv_b_index(const PtlDeviceConvArgs *a, const PtlCudaConvPlan *p, int64_t g, int64_t k,
                 int64_t j, int64_t k1)
{
    if (j >= p->J || k >= k1) {
        return -1;
    }
    switch (a->kind) {
    case PTL_DEVICE_CONV_COL_FWD:
        return ptl_conv_img_index(a, j / p->cols, g * p->cpi + k / p->kvol, k % p->kvol,
                                  j % p->cols);
    case PTL_DEVICE_CONV_IMG_FWD:
        return ptl_conv_col_index(a, j / p->imgs, g * p->cpc + k / p->kvol, k % p->kvol,
                                  j % p->imgs);
    default:
        return ptl_conv_img_index(a, k / p->cols, g * p->cpi + j / p->kvol, j % p->kvol,
                                  k % p->cols);
    }
}

/* C(m, j) of group g as an element of a->out; the bias' element in *bias_at */
PTL_HD static inline int64_t
ptl_conv_out_index(const PtlDeviceConvArgs *a, const PtlCudaConvPlan *p, int64_t g, int64_t m,
                   int64_t j, int64_t *bias_at)
{
    *bias_at = g * p->M + m;
    switch (a->kind) {
    case PTL_DEVICE_CONV_COL_FWD:
        return (j / p->cols * a->c_col + g * p->M + m) * p->cols + j % p->cols;
    case PTL_DEVICE_CONV_IMG_FWD:
        return (j / p->imgs * a->c_img + g * p->M + m) * p->imgs + j % p->imgs;
    default:
        return (g * p->M + m) * p->J + j;
    }
}

/* The per-thread work of the tile kernel in T (fused multiply-add FMA):
 *   load:   thread t's four elements of A's and of B's tile for the K step at k0, into the
 *           shared as[BK][BM] and bs[BK][BN] (zero outside the operands);
 *   mma:    thread t's 4 x 4 sums over the step's kn rows, in k order: outputs
 *           (tr + 16 i, tc + 16 j) of the tile, tr = t / 16, tc = t % 16;
 *   store:  thread t's outputs to out (+ bias), or, split, to ws[split][G M J];
 *   finish: output o of a split sum, its chunks added in order. */
#define PTL_CONV_DEFINE(T, SUF, FMA)                                                        \
    PTL_HD static inline void                                                               \
    ptl_conv_load_##SUF(const PtlDeviceConvArgs *a, const PtlCudaConvPlan *p,               \
                        const PtlConvTile *tl, int64_t k0, int t, T *as, T *bs)             \
    {                                                                                       \
        const T *A = (const T *)a->a, *B = (const T *)a->b;                                 \
        for (int r = 0; r < PTL_CONV_BK * PTL_CONV_BM / PTL_CONV_THREADS; r++) {            \
            const int e = t + r * PTL_CONV_THREADS;                                         \
            int64_t i = ptl_conv_a_index(a, p, tl->g, tl->m0 + e % PTL_CONV_BM,             \
                                         k0 + e / PTL_CONV_BM, tl->k1);                     \
            as[e] = i >= 0 ? A[i] : (T)0;                                                   \
            i = ptl_conv_b_index(a, p, tl->g, k0 + e / PTL_CONV_BN, tl->j0 + e % PTL_CONV_BN, \
                                 tl->k1);                                                   \
            bs[e] = i >= 0 ? B[i] : (T)0;                                                   \
        }                                                                                   \
    }                                                                                       \
                                                                                            \
    PTL_HD static inline void                                                               \
    ptl_conv_mma_##SUF(const T *as, const T *bs, int64_t kn, int t, T *acc)                 \
    {                                                                                       \
        const int tr = t / PTL_CONV_TN, tc = t % PTL_CONV_TN;                               \
        for (int64_t k = 0; k < kn; k++) {                                                  \
            T av[PTL_CONV_MICRO], bv[PTL_CONV_MICRO];                                       \
            for (int i = 0; i < PTL_CONV_MICRO; i++) {                                      \
                av[i] = as[k * PTL_CONV_BM + tr + i * (PTL_CONV_THREADS / PTL_CONV_TN)];    \
                bv[i] = bs[k * PTL_CONV_BN + tc + i * PTL_CONV_TN];                         \
            }                                                                               \
            for (int i = 0; i < PTL_CONV_MICRO; i++) {                                      \
                for (int j = 0; j < PTL_CONV_MICRO; j++) {                                  \
                    acc[i * PTL_CONV_MICRO + j] = FMA(av[i], bv[j], acc[i * PTL_CONV_MICRO + j]); \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
                                                                                            \
    PTL_HD static inline void                                                               \
    ptl_conv_store_##SUF(const PtlDeviceConvArgs *a, const PtlCudaConvPlan *p,              \
                         const PtlConvTile *tl, int t, const T *acc, T *ws)                 \
    {                                                                                       \
        const int tr = t / PTL_CONV_TN, tc = t % PTL_CONV_TN;                               \
        for (int i = 0; i < PTL_CONV_MICRO; i++) {                                          \
            const int64_t m = tl->m0 + tr + i * (PTL_CONV_THREADS / PTL_CONV_TN);           \
            for (int jj = 0; jj < PTL_CONV_MICRO; jj++) {                                   \
                const int64_t j = tl->j0 + tc + jj * PTL_CONV_TN;                           \
                const T v = acc[i * PTL_CONV_MICRO + jj];                                   \
                int64_t at, bias_at;                                                        \
                if (m >= p->M || j >= p->J) {                                               \
                    continue;                                                               \
                }                                                                           \
                at = ptl_conv_out_index(a, p, tl->g, m, j, &bias_at);                       \
                if (p->nsplit > 1) {                                                        \
                    ws[tl->split * p->groups * p->M * p->J + at] = v;                       \
                }                                                                           \
                else {                                                                      \
                    ((T *)a->out)[at] = a->bias != 0 ? v + ((const T *)a->bias)[bias_at] : v; \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
                                                                                            \
    PTL_HD static inline void                                                               \
    ptl_conv_finish_##SUF(const PtlDeviceConvArgs *a, const PtlCudaConvPlan *p, int64_t o,  \
                          const T *ws)                                                      \
    {                                                                                       \
        const int64_t total = p->groups * p->M * p->J;                                      \
        T v = ws[o];                                                                        \
        for (int64_t s = 1; s < p->nsplit; s++) {                                           \
            v += ws[s * total + o];                                                         \
        }                                                                                   \
        ((T *)a->out)[o] = v;                                                               \
    }

PTL_CONV_DEFINE(float, f4, fmaf)
PTL_CONV_DEFINE(double, f8, fma)
#undef PTL_CONV_DEFINE

#endif
