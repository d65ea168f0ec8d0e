/* conv_nhwc.c -- float32 2-D convolution (groups 1, not transposed) and its backward on
 * channels-last tensors, computed in that layout instead of through NCHW copies at the kernel
 * boundary.  Plays the role of oneDNN's NHWC convolution under PyTorch's mkldnn_convolution.
 *
 * Note [Channels-last convolution]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * In NHWC a pixel's channels are one contiguous row, so a convolution is a GEMM over rows:
 *   y(M, Co) = A(M, K) @ Wt(K, Co),  M = N * OH * OW output pixels, K = KH * KW * Ci,
 * where row m of A holds, tap after tap (ky, kx), the Ci channels of the input pixel that
 * tap reads (zeros in the padding), and Wt's row (ky, kx, c) is the weight's (:, c, ky, kx):
 * exactly the memory of a channels-last weight (Co, KH, KW, Ci) read as K x Co with column
 * stride K, so ptl_gemm_pack_b packs it once per call without a transposing copy.  A 1x1
 * stride-1 unpadded convolution's A is the input itself (one GEMM on its memory).  Otherwise
 * A is built a tile of rows at a time (an implicit GEMM: the whole A never exists): each tap
 * of a row is a memcpy of Ci floats, and with dilation 1 a kernel row's KW taps inside the
 * image are one run of KW * Ci floats.  A tile holds about NHWC_TILE_FLOATS floats (a few
 * hundred rows: it stays in L2 while the GEMM streams it against the packed weight), the
 * GEMM writes its rows of y in place, rows Co apart, and adds the bias as its S operand.
 * Tiles are shared among the threads; each row is one GEMM's row whatever the tile, so the
 * result does not depend on the thread count.
 *
 * The input gradient is the transposed product, gA(M, K) = gy(M, Co) @ Wt^T, scattered back:
 * each row's taps are added into the input pixels they read (col2im in NHWC).  Tiles of one
 * sample overlap in the image, so samples are shared among the threads and each sample's tiles
 * run in order: every element's sum has one order.  1x1 stride 1 is again one GEMM into gx.
 * The weight gradient is gWt^T(Co, K) = gy^T(Co, M) @ A(M, K), accumulated over tiles of
 * NHWC_WGRAD_FLOATS floats of A in order, the GEMM splitting each product among the threads
 * by the shape (Note [GEMM K split]); it comes out as a channels-last weight, the layout the
 * boundary path would copy it to.  The bias gradient sums gy's rows in double.
 *
 * Taken when the input is a dense channels-last float32 CPU tensor of rank 4 and groups is 1,
 * for 1x1 kernels, for a forward of few input channels on AVX2 and AVX-512 (a direct kernel:
 * Note [Channels-last few-channel forward]), and for larger ones on a CPU without the packed
 * direct kernels
 * (conv_packed.c and Winograd run on AVX2 and better; not on the portable engine, which
 * PTL_CPU_CAPABILITY=default selects); everything else (float64, grouped, transposed, 1-d and
 * 3-d convolutions) runs through the NCHW kernels at the boundary.  Where the packed kernels
 * run, the boundary's two layout copies plus those kernels beat this file's implicit GEMM on
 * every kernel larger than 1x1 measured, and 1x1 kernels (one GEMM, or few copies) are even
 * or better here (Zen 4, one thread, batch 32, forward + backward, ms, this file / the
 * boundary: 3x3 16->16 on 32x32 12.5 / 6.7, 32->64 on 16x16 11.3 / 6.9, 64->64 on 8x8
 * 5.8 / 2.9, stride 2 32->64 3.6 / 2.9, the 3->32 first layer 4.9 / 4.6; 1x1 64->128 6.3 /
 * 5.8, stride 2 16->32 0.78 / 1.09). */
#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/cpu_features.h"
#include "../../c10/memory_format.h"
#include "../../c10/parallel.h"
#include "conv_impl.h"
#include "gemm.h"
#include "nn_common.h"

#define NHWC_TILE_FLOATS 16384
#define NHWC_WGRAD_FLOATS ((int64_t)1 << 20)

typedef struct NhwcGeom {
    int64_t n, h, w, ci, oh, ow, co, kh, kw, sh, sw, ph, pw, dh, dw, k, m;
} NhwcGeom;

/* Rows of A (Note [Channels-last convolution]) in a tile: shape-only, at least 8. */
static int64_t
nhwc_tile_rows(const NhwcGeom *g)
{
    int64_t t = NHWC_TILE_FLOATS / g->k;
    return t < 8 ? 8 : t;
}

/* 1 when A is the input itself */
static int
nhwc_pointwise(const NhwcGeom *g)
{
    return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
}

/* a (rows, K) = rows [m0, m0 + rows) of A, read from x (N, H, W, Ci) */
static void
nhwc_gather(const NhwcGeom *g, const float *x, int64_t m0, int64_t rows, float *a)
{
    int64_t ci = g->ci, plane = g->oh * g->ow;
    for (int64_t r = 0; r < rows; r++) {
        int64_t m = m0 + r, ni = m / plane, oy = m % plane / g->ow, ox = m % g->ow;
        int64_t ix0 = ox * g->sw - g->pw;
        int dense = g->dw == 1 && ix0 >= 0 && ix0 + g->kw <= g->w;
        float *row = a + r * g->k;
        for (int64_t ky = 0; ky < g->kh; ky++) {
            int64_t iy = oy * g->sh - g->ph + ky * g->dh;
            float *dst = row + ky * g->kw * ci;
            const float *src = x + ((ni * g->h + iy) * g->w) * ci;
            if (iy < 0 || iy >= g->h) {
                memset(dst, 0, sizeof(float) * (size_t)(g->kw * ci));
                continue;
            }
            if (dense) {
                memcpy(dst, src + ix0 * ci, sizeof(float) * (size_t)(g->kw * ci));
                continue;
            }
            for (int64_t kx = 0; kx < g->kw; kx++) {
                int64_t ix = ix0 + kx * g->dw;
                if (ix < 0 || ix >= g->w) {
                    memset(dst + kx * ci, 0, sizeof(float) * (size_t)ci);
                }
                else {
                    memcpy(dst + kx * ci, src + ix * ci, sizeof(float) * (size_t)ci);
                }
            }
        }
    }
}

static void
nhwc_add(float *dst, const float *src, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        dst[i] += src[i];
    }
}

/* gx (N, H, W, Ci) += rows [m0, m0 + rows) of a (rows, K), each tap into the pixel it reads */
static void
nhwc_scatter(const NhwcGeom *g, float *gx, int64_t m0, int64_t rows, const float *a)
{
    int64_t ci = g->ci, plane = g->oh * g->ow;
    for (int64_t r = 0; r < rows; r++) {
        int64_t m = m0 + r, ni = m / plane, oy = m % plane / g->ow, ox = m % g->ow;
        int64_t ix0 = ox * g->sw - g->pw;
        int dense = g->dw == 1 && ix0 >= 0 && ix0 + g->kw <= g->w;
        const float *row = a + r * g->k;
        for (int64_t ky = 0; ky < g->kh; ky++) {
            int64_t iy = oy * g->sh - g->ph + ky * g->dh;
            const float *src = row + ky * g->kw * ci;
            float *dst = gx + ((ni * g->h + iy) * g->w) * ci;
            if (iy < 0 || iy >= g->h) {
                continue;
            }
            if (dense) {
                nhwc_add(dst + ix0 * ci, src, g->kw * ci);
                continue;
            }
            for (int64_t kx = 0; kx < g->kw; kx++) {
                int64_t ix = ix0 + kx * g->dw;
                if (ix >= 0 && ix < g->w) {
                    nhwc_add(dst + ix * ci, src + kx * ci, ci);
                }
            }
        }
    }
}

static float *
nhwc_alloc(int64_t nfloats)
{
    float *p = malloc(sizeof(float) * (size_t)(nfloats > 0 ? nfloats : 1));
    if (p == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "conv: out of memory allocating %lld floats",
                      (long long)nfloats);
    }
    return p;
}

typedef struct NhwcJob {
    const NhwcGeom *g;
    const float *x, *bias;      /* forward: the input; backward: gy */
    float *y;                   /* forward: the output; backward: gx */
    const PtlGemmPackedB *pb;   /* Wt (forward) or Wt^T (input gradient) */
    int64_t tile;
} NhwcJob;

/* forward tiles [t0, t1) */
static int
nhwc_fwd_tiles(void *ctx, int64_t t0, int64_t t1)
{
    const NhwcJob *j = ctx;
    const NhwcGeom *g = j->g;
    float *a = nhwc_alloc(j->tile * g->k);
    if (a == NULL) {
        return -1;
    }
    for (int64_t t = t0; t < t1; t++) {
        int64_t m0 = t * j->tile, rows = g->m - m0 < j->tile ? g->m - m0 : j->tile;
        nhwc_gather(g, j->x, m0, rows, a);
        if (ptl_gemm_packed(j->pb, rows, a, g->k, j->y + m0 * g->co, g->co, j->bias, 0,
                            j->bias != NULL ? 1.0 : 0.0) < 0) {
            free(a);
            return -1;
        }
    }
    free(a);
    return 0;
}

/* input gradient of samples [n0, n1): each sample's tiles in order */
static int
nhwc_dgrad_samples(void *ctx, int64_t n0, int64_t n1)
{
    const NhwcJob *j = ctx;
    const NhwcGeom *g = j->g;
    int64_t plane = g->oh * g->ow;
    float *a = nhwc_alloc(j->tile * g->k);
    if (a == NULL) {
        return -1;
    }
    for (int64_t ni = n0; ni < n1; ni++) {
        for (int64_t m0 = ni * plane; m0 < (ni + 1) * plane; m0 += j->tile) {
            int64_t rows = (ni + 1) * plane - m0 < j->tile ? (ni + 1) * plane - m0 : j->tile;
            if (ptl_gemm_packed(j->pb, rows, j->x + m0 * g->co, g->co, a, g->k, NULL, 0,
                                0.0) < 0) {
                free(a);
                return -1;
            }
            nhwc_scatter(g, j->y, m0, rows, a);
        }
    }
    free(a);
    return 0;
}

typedef struct NhwcGatherJob {
    const NhwcGeom *g;
    const float *x;
    float *a;
    int64_t m0;
} NhwcGatherJob;

static int
nhwc_gather_rows(void *ctx, int64_t r0, int64_t r1)
{
    const NhwcGatherJob *j = ctx;
    nhwc_gather(j->g, j->x, j->m0 + r0, r1 - r0, j->a + r0 * j->g->k);
    return 0;
}

/* ---- few input channels: a direct kernel (Note [Channels-last few-channel forward]) ---- */

/* Note [Channels-last few-channel forward]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A network's first convolution has few input channels (3 for RGB) and a large output: for
 * 3 -> 32 on 32x32 images the output is 11 times the input.  At the boundary its output is
 * computed in NCHW and then copied to channels-last, a copy that cost a third of the kernel;
 * the implicit GEMM above has K = 27, too short a product to run near the FMA rate.  Here
 * each output pixel's channels are one row of y, in vectors of 16: a tile is FEW_PIX(nv)
 * consecutive pixels of one output row by a block of nv vectors (at most FEW_MAX_NV, 64
 * channels), its accumulators started at the bias, and for each of the kdim = ci * KH * KW
 * taps, in the NCHW weight's order (c, ky, kx), the tap's weight row (nv vectors, packed
 * once per call, zeros past co) times each pixel's input element broadcast.  That is the
 * packed NCHW kernel's sum in its order (Note [Packed float32 convolution]), so the two
 * layouts give the same bits.  A task is FEW_TASK_ROWS output rows of one sample (a shape
 * only split); it copies the input rows it reads into a zero-padded buffer, so the taps read
 * without bounds checks, at offsets off[t] from the pixel's first tap and s * ci apart from
 * pixel to pixel.  A row's last tile is moved back to end at the row's end (it computes some
 * pixels twice, with the same bits); a row narrower than a tile runs tiles of one pixel.
 *
 * Taken on AVX-512 for ci <= FEW_MAX_CI where co fills 7/8 of its vectors' lanes at least
 * (24 channels in two vectors lost to the boundary: 608 / 570 us); the forward alone (the
 * backward still runs at the boundary).  Zen 4, one thread, batch 32, 32x32 images, 3x3 pad
 * 1, us, this path / the boundary: 1 -> 32 219 / 236, 2 -> 32 435 / 554, 3 -> 16 355 / 398,
 * 3 -> 32 610 / 744, 3 -> 64 1230 / 2370, 4 -> 32 785 / 950, 6 -> 32 1150 / 1470, 8 -> 32
 * 1520 / 1900; 7x7 stride 2 3 -> 64 on 56x56 8740 / 10600.  The packed NCHW kernel itself
 * runs 3 -> 32 in 565 us: the tile's inner loop is the same 16 FMAs and 10 loads per tap,
 * yet runs some 5% slower here (unexplained; the loads' addresses are not the cause).
 *
 * On AVX2 the vectors hold 8 channels and the tile (few_tile2) is FEW2_PIX(nv) pixels by nv
 * <= FEW2_MAX_NV vectors (12 x 8 or 6 x 16 channels: 12 accumulators), taken where co fills
 * 7/8 of its 8-lane vectors; a row's pixels past its last whole tile run as one shorter
 * tile (its fewer accumulators cost less than a tile moved back over computed pixels).  The
 * same order of the taps, so again the NCHW kernels' bits.  Zen 3, one thread, batch 32,
 * 32x32 images, 3x3 pad 1, us, this path / the boundary: 3 -> 7 374 / 437, 3 -> 16 358 /
 * 550, 3 -> 24 655 / 730, 3 -> 32 700 / 1100, 3 -> 64 1400 / 2900-3700, 8 -> 32 1730 /
 * 2400-2800; the tile runs at about the FMA units' peak at the core's 2.45 GHz. */
#define FEW_MAX_CI 8
#define FEW_MAX_NV 4
#define FEW_TASK_ROWS 8
#define FEW_PIX(NV) ((NV) == 1 ? 16 : (NV) <= 3 ? 8 : 6)

#define FEW2_MAX_NV 2
#define FEW2_PIX(NV) ((NV) == 1 ? 12 : 6)

#define NHWC_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")))
#define NHWC_AVX2 __attribute__((target("avx2,fma")))

typedef struct FewJob {
    const NhwcGeom *g;
    const float *x, *wp, *bias;  /* wp (kdim, cop); bias (cop) or NULL */
    float *y;
    const int64_t *off;          /* kdim tap offsets in the padded rows */
    int64_t cop, wp_cols, rows;  /* co rounded up to a vector; padded row width; task rows */
    int wide;                    /* the AVX-512 engine (vectors of 16), else AVX2's (8) */
} FewJob;

/* y[p * co + o] for p < np, o in [o0, o0 + 16 * nv) (below co) = bias + sum over taps t of
 * xr[p * xs + off[t]] * wp[t * cop + o] */
NHWC_AVX512 static inline __attribute__((always_inline)) void
few_tile(const FewJob *j, const float *xr, int64_t xs, int64_t o0, float *y, int nv, int np)
{
    const NhwcGeom *g = j->g;
    int64_t kdim = g->k, cop = j->cop;
    __m512 acc[16][FEW_MAX_NV], wv[FEW_MAX_NV];
    __mmask16 last = (__mmask16)(g->co - o0 - 16 * (nv - 1) >= 16
                                     ? 0xffff
                                     : (1u << (g->co - o0 - 16 * (nv - 1))) - 1u);
#pragma GCC unroll 16
    for (int p = 0; p < np; p++) {
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            acc[p][v] = j->bias != NULL ? _mm512_loadu_ps(j->bias + o0 + 16 * v)
                                        : _mm512_setzero_ps();
        }
    }
    const float *w = j->wp + o0;
    for (int64_t t = 0; t < kdim; t++) {
        const float *xt = xr + j->off[t];
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            wv[v] = _mm512_loadu_ps(w + t * cop + 16 * v);
        }
#pragma GCC unroll 16
        for (int p = 0; p < np; p++) {
            __m512 b = _mm512_set1_ps(xt[p * xs]);
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++) {
                acc[p][v] = _mm512_fmadd_ps(b, wv[v], acc[p][v]);
            }
        }
    }
    /* a masked store costs more than a plain one on Zen 4 */
    if (last == 0xffff) {
#pragma GCC unroll 16
        for (int p = 0; p < np; p++) {
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++) {
                _mm512_storeu_ps(y + p * g->co + o0 + 16 * v, acc[p][v]);
            }
        }
        return;
    }
#pragma GCC unroll 16
    for (int p = 0; p < np; p++) {
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            _mm512_mask_storeu_ps(y + p * g->co + o0 + 16 * v, v == nv - 1 ? last : 0xffff,
                                  acc[p][v]);
        }
    }
}

/* One output row of channels [o0, o0 + 16 * nv): tiles of FEW_PIX(nv) pixels, the last one
 * moved back to the row's end; tiles of one pixel in a row narrower than that. */
#define FEW_ROW(NV)                                                                          \
    NHWC_AVX512 static void few_row_##NV(const FewJob *j, const float *xr, int64_t o0,         \
                                         float *y)                                           \
    {                                                                                        \
        const NhwcGeom *g = j->g;                                                            \
        int64_t xs = g->sw * g->ci, ow = g->ow;                                              \
        if (ow < FEW_PIX(NV)) {                                                              \
            for (int64_t q = 0; q < ow; q++) {                                               \
                few_tile(j, xr + q * xs, xs, o0, y + q * g->co, (NV), 1);                    \
            }                                                                                \
            return;                                                                          \
        }                                                                                    \
        for (int64_t q0 = 0; q0 < ow; q0 += FEW_PIX(NV)) {                                   \
            int64_t q = q0 + FEW_PIX(NV) <= ow ? q0 : ow - FEW_PIX(NV);                     \
            few_tile(j, xr + q * xs, xs, o0, y + q * g->co, (NV), FEW_PIX(NV));              \
        }                                                                                    \
    }
FEW_ROW(1)
FEW_ROW(2)
FEW_ROW(3)
FEW_ROW(4)
#undef FEW_ROW

/* The AVX2 engine's tile: y[p * co + o] for p < np, o in [o0, o0 + 8 * nv) (below co), the
 * same sums as few_tile's in vectors of 8: np * nv <= 12 accumulators, nv weight vectors and
 * a broadcast pixel fill 15 of the 16 ymm registers.  A last vector past co is stored
 * through a buffer (AVX2's masked stores are slow on AMD's cores). */
NHWC_AVX2 static inline __attribute__((always_inline)) void
few_tile2(const FewJob *j, const float *xr, int64_t xs, int64_t o0, float *y, int nv, int np)
{
    const NhwcGeom *g = j->g;
    int64_t kdim = g->k, cop = j->cop, co = g->co;
    __m256 acc[FEW2_PIX(1)][FEW2_MAX_NV], wv[FEW2_MAX_NV];
#pragma GCC unroll 12
    for (int p = 0; p < np; p++) {
#pragma GCC unroll 2
        for (int v = 0; v < nv; v++) {
            acc[p][v] = j->bias != NULL ? _mm256_loadu_ps(j->bias + o0 + 8 * v)
                                        : _mm256_setzero_ps();
        }
    }
    const float *w = j->wp + o0;
    for (int64_t t = 0; t < kdim; t++) {
        const float *xt = xr + j->off[t];
#pragma GCC unroll 2
        for (int v = 0; v < nv; v++) {
            wv[v] = _mm256_loadu_ps(w + t * cop + 8 * v);
        }
#pragma GCC unroll 12
        for (int p = 0; p < np; p++) {
            __m256 b = _mm256_broadcast_ss(xt + p * xs);
#pragma GCC unroll 2
            for (int v = 0; v < nv; v++) {
                acc[p][v] = _mm256_fmadd_ps(b, wv[v], acc[p][v]);
            }
        }
    }
    int64_t tail = co - o0 - 8 * (nv - 1);   /* the last vector's channels below co */
#pragma GCC unroll 12
    for (int p = 0; p < np; p++) {
#pragma GCC unroll 2
        for (int v = 0; v < nv; v++) {
            float *dst = y + p * co + o0 + 8 * v;
            if (v < nv - 1 || tail >= 8) {
                _mm256_storeu_ps(dst, acc[p][v]);
                continue;
            }
            _Alignas(32) float buf[8];
            _mm256_store_ps(buf, acc[p][v]);
            memcpy(dst, buf, sizeof(float) * (size_t)tail);
        }
    }
}

/* One output row of channels [o0, o0 + 8 * nv) on AVX2: tiles of FEW2_PIX(nv) pixels, then
 * one tile of the rest of the row (each pixel once: a short tile's fewer chains cost less
 * than computing pixels twice). */
#define FEW2_REST(NV, R)                                                                      \
    case (R):                                                                                 \
        few_tile2(j, xr + q * xs, xs, o0, y + q * g->co, (NV), (R));                          \
        break
#define FEW2_ROW(NV, ...)                                                                     \
    NHWC_AVX2 static void few2_row_##NV(const FewJob *j, const float *xr, int64_t o0,         \
                                        float *y)                                             \
    {                                                                                         \
        const NhwcGeom *g = j->g;                                                             \
        int64_t xs = g->sw * g->ci, q = 0;                                                    \
        for (; q + FEW2_PIX(NV) <= g->ow; q += FEW2_PIX(NV)) {                                \
            few_tile2(j, xr + q * xs, xs, o0, y + q * g->co, (NV), FEW2_PIX(NV));             \
        }                                                                                     \
        switch (g->ow - q) {                                                                  \
            __VA_ARGS__;                                                                      \
        default:                                                                              \
            break;                                                                            \
        }                                                                                     \
    }
FEW2_ROW(1, FEW2_REST(1, 1); FEW2_REST(1, 2); FEW2_REST(1, 3); FEW2_REST(1, 4);
         FEW2_REST(1, 5); FEW2_REST(1, 6); FEW2_REST(1, 7); FEW2_REST(1, 8); FEW2_REST(1, 9);
         FEW2_REST(1, 10); FEW2_REST(1, 11))
FEW2_ROW(2, FEW2_REST(2, 1); FEW2_REST(2, 2); FEW2_REST(2, 3); FEW2_REST(2, 4);
         FEW2_REST(2, 5))
#undef FEW2_ROW
#undef FEW2_REST

/* One output row of every channel block, by the engine's rows: AVX-512's FEW_MAX_NV vectors
 * of 16 at a time, AVX2's FEW2_MAX_NV vectors of 8. */
static void
few_row(const FewJob *j, const float *xr, float *yr)
{
    int64_t co = j->g->co;
    if (!j->wide) {
        for (int64_t o0 = 0; o0 < co; o0 += 8 * FEW2_MAX_NV) {
            if (co - o0 > 8) {
                few2_row_2(j, xr, o0, yr);
            }
            else {
                few2_row_1(j, xr, o0, yr);
            }
        }
        return;
    }
    for (int64_t o0 = 0; o0 < co; o0 += 16 * FEW_MAX_NV) {
        int64_t nv = (co - o0 + 15) / 16;
        switch (nv < FEW_MAX_NV ? nv : FEW_MAX_NV) {
        case 1:
            few_row_1(j, xr, o0, yr);
            break;
        case 2:
            few_row_2(j, xr, o0, yr);
            break;
        case 3:
            few_row_3(j, xr, o0, yr);
            break;
        default:
            few_row_4(j, xr, o0, yr);
            break;
        }
    }
}

/* tasks [t0, t1): FEW_TASK_ROWS output rows of one sample each */
static int
few_tasks(void *ctx, int64_t t0, int64_t t1)
{
    const FewJob *j = ctx;
    const NhwcGeom *g = j->g;
    int64_t per = (g->oh + j->rows - 1) / j->rows, ci = g->ci;
    int64_t span = (j->rows - 1) * g->sh + (g->kh - 1) * g->dh + 1, rowf = j->wp_cols * ci;
    float *buf = nhwc_alloc(span * rowf);
    if (buf == NULL) {
        return -1;
    }
    for (int64_t t = t0; t < t1; t++) {
        int64_t ni = t / per, oy0 = t % per * j->rows;
        int64_t oy1 = oy0 + j->rows < g->oh ? oy0 + j->rows : g->oh;
        int64_t iy0 = oy0 * g->sh - g->ph;
        int64_t nrow = (oy1 - oy0 - 1) * g->sh + (g->kh - 1) * g->dh + 1;
        for (int64_t r = 0; r < nrow; r++) {
            float *dst = buf + r * rowf;
            int64_t iy = iy0 + r;
            if (iy < 0 || iy >= g->h) {
                memset(dst, 0, sizeof(float) * (size_t)rowf);
                continue;
            }
            memset(dst, 0, sizeof(float) * (size_t)(g->pw * ci));
            if (g->w > 0) {   /* an image of no columns may have no data pointer */
                memcpy(dst + g->pw * ci, j->x + ((ni * g->h + iy) * g->w) * ci,
                       sizeof(float) * (size_t)(g->w * ci));
            }
            memset(dst + (g->pw + g->w) * ci, 0,
                   sizeof(float) * (size_t)((j->wp_cols - g->pw - g->w) * ci));
        }
        for (int64_t oy = oy0; oy < oy1; oy++) {
            const float *xr = buf + (oy - oy0) * g->sh * rowf;
            few_row(j, xr, j->y + ((ni * g->oh + oy) * g->ow) * g->co);
        }
    }
    free(buf);
    return 0;
}

/* Whether the few-channel kernel takes a convolution of ci input channels to co output
 * channels on this CPU: co must fill 7/8 of the vectors' lanes at least */
/* The few-channel kernel's vector width on this CPU: 16 floats on AVX-512, 8 on AVX2, 0
 * where it does not run. */
static int64_t
few_lanes(void)
{
    PtlCpuCapability cap = ptl_cpu_capability();
    return cap >= PTL_CPU_AVX512 ? 16 : cap >= PTL_CPU_AVX2 ? 8 : 0;
}

static int
few_takes(int64_t ci, int64_t co)
{
    int64_t lanes = few_lanes();
    return ci <= FEW_MAX_CI && lanes > 0 && co * 8 >= (co + lanes - 1) / lanes * lanes * 7;
}

/* y (N, OH, OW, Co) = conv(x, w) + bias by the few-channel kernel; x dense channels-last,
 * w float32 of any strides, bias contiguous or NULL.  0, or -1 with the error set. */
static int
few_forward(const NhwcGeom *g, const float *x, const PtlTensorImpl *w, const float *bias,
            float *y)
{
    int64_t lanes = few_lanes(), cop = (g->co + lanes - 1) / lanes * lanes, kvol = g->kh * g->kw;
    /* the padded rows reach the last tile's last tap (past the image: zeros) */
    int64_t wp_cols = (g->ow - 1) * g->sw + (g->kw - 1) * g->dw + 1;
    wp_cols = wp_cols > g->w + g->pw ? wp_cols : g->w + g->pw;
    float *wp = conv_alloc(sizeof(float) * (size_t)(g->k * cop + cop));
    int64_t *off = malloc(sizeof(int64_t) * (size_t)g->k);
    int rc = -1;
    if (wp == NULL || off == NULL) {
        if (off == NULL && wp != NULL) {
            ptl_error_set(PTL_ERR_MEMORY, "conv: out of memory allocating %lld offsets",
                          (long long)g->k);
        }
        goto done;
    }
    const float *wd = (const float *)ptl_tensor_data(w);
    const int64_t *st = w->strides;
    float *bp = wp + g->k * cop;
    for (int64_t c = 0; c < g->ci; c++) {
        for (int64_t ky = 0; ky < g->kh; ky++) {
            for (int64_t kx = 0; kx < g->kw; kx++) {
                int64_t t = c * kvol + ky * g->kw + kx;
                off[t] = (ky * g->dh * wp_cols + kx * g->dw) * g->ci + c;
                for (int64_t o = 0; o < cop; o++) {
                    wp[t * cop + o] = o < g->co ? wd[o * st[0] + c * st[1] + ky * st[2] +
                                                     kx * st[3]]
                                                : 0.0f;
                }
            }
        }
    }
    for (int64_t o = 0; o < cop; o++) {
        bp[o] = bias != NULL && o < g->co ? bias[o] : 0.0f;
    }
    FewJob j = {g, x, wp, bias != NULL ? bp : NULL, y, off, cop, wp_cols, FEW_TASK_ROWS,
                lanes == 16};
    void *tok = ptl_nogil_begin();
    rc = ptl_parallel_for(0, g->n * ((g->oh + FEW_TASK_ROWS - 1) / FEW_TASK_ROWS), 1, few_tasks,
                          &j);
    ptl_nogil_end(tok);
done:
    free(wp);
    free(off);
    return rc;
}

/* The geometry of a plain 2-D convolution of x with w under a, or 0 when this file does not
 * take it (Note [Channels-last convolution]). */
static int
nhwc_geom(const PtlTensorImpl *x, const PtlTensorImpl *w, const ConvArgs *a, NhwcGeom *g)
{
    if (a->nd != 2 || a->transposed || a->groups != 1) {
        return 0;
    }
    g->n = x->sizes[0];
    g->ci = x->sizes[1];
    g->h = x->sizes[2];
    g->w = x->sizes[3];
    g->co = w->sizes[0];
    g->kh = w->sizes[2];
    g->kw = w->sizes[3];
    g->sh = a->stride[1];
    g->sw = a->stride[2];
    g->ph = a->pad[1];
    g->pw = a->pad[2];
    g->dh = a->dil[1];
    g->dw = a->dil[2];
    g->oh = (g->h + 2 * g->ph - g->dh * (g->kh - 1) - 1) / g->sh + 1;
    g->ow = (g->w + 2 * g->pw - g->dw * (g->kw - 1) - 1) / g->sw + 1;
    g->k = g->kh * g->kw * g->ci;
    g->m = g->n * g->oh * g->ow;
    return g->k > 0 && g->co > 0;
}

/* Whether x (the input) and w are what this file's GEMM paths take before the arguments are
 * checked (on this CPU: see the Note's last paragraph); the forward also takes few input
 * channels (few_takes). */
static int
nhwc_inputs(const PtlTensorImpl *x, const PtlTensorImpl *w)
{
    return x->dim == 4 && w->dim == 4 && x->dtype == PTL_DTYPE_FLOAT32 &&
           w->dtype == PTL_DTYPE_FLOAT32 && !ptl_tensor_is_meta(x) && !nn_on_device(x, 1) &&
           x->device.type == PTL_DEVICE_CPU && w->device.type == PTL_DEVICE_CPU &&
           ptl_tensor_impl_suggest_memory_format(x) == PTL_MEMORY_FORMAT_CHANNELS_LAST &&
           ptl_tensor_impl_is_contiguous_as(x, PTL_MEMORY_FORMAT_CHANNELS_LAST);
}

/* Whether the implicit GEMM runs a kernel of w's size on this CPU */
static int
nhwc_gemm_takes(const PtlTensorImpl *w)
{
    return (w->sizes[2] == 1 && w->sizes[3] == 1) || !conv_packed_available();
}

/* t (borrowed) contiguous in channels-last: t itself (new ref) when it already is */
static PtlTensorImpl *
nhwc_dense(PtlTensorImpl *t)
{
    if (ptl_tensor_impl_is_contiguous_as(t, PTL_MEMORY_FORMAT_CHANNELS_LAST)) {
        ptl_incref(t);
        return t;
    }
    return ptl_copy_as(t, PTL_MEMORY_FORMAT_CHANNELS_LAST);
}

#define NHWC_DATA(T) ((float *)ptl_tensor_data(T))

int
conv_nhwc_forward(PtlIValue *s)
{
    PtlTensorImpl *x = s[0].u.t, *w = s[1].u.t;
    PtlTensorImpl *bias = s[2].tag == PTL_IV_TENSOR ? s[2].u.t : NULL;
    PtlTensorImpl *wl = NULL, *bc = NULL, *y = NULL;
    PtlGemmPackedB *pb = NULL;
    ConvArgs a;
    NhwcGeom g;

    if (!nhwc_inputs(x, w) || (bias != NULL && bias->dtype != PTL_DTYPE_FLOAT32)) {
        return 0;
    }
    int gemm = nhwc_gemm_takes(w), few = !gemm && few_takes(x->sizes[1], w->sizes[0]);
    if (!gemm && !few) {
        return 0;
    }
    if (ptl_conv_check(x, w, bias, s, &a) < 0) {
        return -1;
    }
    if (!nhwc_geom(x, w, &a, &g)) {
        return 0;
    }
    int64_t ysz[4] = {g.n, g.co, g.oh, g.ow};
    if ((y = ptl_empty_format(4, ysz, PTL_MEMORY_FORMAT_CHANNELS_LAST, PTL_DTYPE_FLOAT32,
                              x->device)) == NULL) {
        return -1;
    }
    if (g.m == 0) {
        s[0] = ptl_iv_tensor(y);
        return 1;
    }
    if (few) {
        if (bias != NULL && (bc = ptl_contiguous(bias)) == NULL) {
            goto error;
        }
        if (few_forward(&g, NHWC_DATA(x), w, bc != NULL ? NHWC_DATA(bc) : NULL,
                        NHWC_DATA(y)) < 0) {
            goto error;
        }
        ptl_xdecref(bc);
        s[0] = ptl_iv_tensor(y);
        return 1;
    }
    if ((wl = nhwc_dense(w)) == NULL ||
        (bias != NULL && (bc = ptl_contiguous(bias)) == NULL) ||
        (pb = ptl_gemm_pack_b(PTL_DTYPE_FLOAT32, g.k, g.co, NHWC_DATA(wl), 1, g.k)) == NULL) {
        goto error;
    }
    const float *bp = bc != NULL ? NHWC_DATA(bc) : NULL;
    void *tok = ptl_nogil_begin();
    int rc;
    if (nhwc_pointwise(&g)) {
        rc = ptl_gemm_packed(pb, g.m, NHWC_DATA(x), g.ci, NHWC_DATA(y), g.co, bp, 0,
                             bp != NULL ? 1.0 : 0.0);
    }
    else {
        NhwcJob j = {&g, NHWC_DATA(x), bp, NHWC_DATA(y), pb, nhwc_tile_rows(&g)};
        rc = ptl_parallel_for(0, (g.m + j.tile - 1) / j.tile, 1, nhwc_fwd_tiles, &j);
    }
    ptl_nogil_end(tok);
    if (rc < 0) {
        goto error;
    }
    ptl_gemm_packed_b_free(pb);
    ptl_decref(wl);
    ptl_xdecref(bc);
    s[0] = ptl_iv_tensor(y);
    return 1;
error:
    ptl_gemm_packed_b_free(pb);
    ptl_xdecref(wl);
    ptl_xdecref(bc);
    ptl_decref(y);
    return -1;
}

/* gx (N, Ci, H, W) channels-last from gy and the channels-last weight wl */
static PtlTensorImpl *
nhwc_input_grad(const NhwcGeom *g, PtlTensorImpl *gy, PtlTensorImpl *wl, PtlDevice dev)
{
    int64_t sz[4] = {g->n, g->ci, g->h, g->w};
    PtlTensorImpl *gx = ptl_empty_format(4, sz, PTL_MEMORY_FORMAT_CHANNELS_LAST,
                                         PTL_DTYPE_FLOAT32, dev);
    PtlGemmPackedB *pb = NULL;
    if (gx == NULL || gx->numel == 0) {
        return gx;
    }
    int pointwise = nhwc_pointwise(g);
    if (!pointwise) {
        memset(ptl_tensor_data(gx), 0, sizeof(float) * (size_t)gx->numel);
    }
    /* Wt^T (Co, K): row o is the weight's (o, ky, kx, c), K floats apart; for 1x1 the
     * product's K is Ci */
    if ((pb = ptl_gemm_pack_b(PTL_DTYPE_FLOAT32, g->co, g->k, NHWC_DATA(wl), g->k, 1)) == NULL) {
        goto error;
    }
    void *tok = ptl_nogil_begin();
    int rc;
    if (pointwise) {
        rc = ptl_gemm_packed(pb, g->m, NHWC_DATA(gy), g->co, NHWC_DATA(gx), g->ci, NULL, 0,
                             0.0);
    }
    else {
        NhwcJob j = {g, NHWC_DATA(gy), NULL, NHWC_DATA(gx), pb, nhwc_tile_rows(g)};
        rc = ptl_parallel_for(0, g->n, 1, nhwc_dgrad_samples, &j);
    }
    ptl_nogil_end(tok);
    if (rc < 0) {
        goto error;
    }
    ptl_gemm_packed_b_free(pb);
    return gx;
error:
    ptl_gemm_packed_b_free(pb);
    ptl_decref(gx);
    return NULL;
}

/* gw (Co, Ci, KH, KW) channels-last: gy^T (Co, M) @ A (M, K) */
static PtlTensorImpl *
nhwc_weight_grad(const NhwcGeom *g, PtlTensorImpl *gy, PtlTensorImpl *x)
{
    int64_t sz[4] = {g->co, g->ci, g->kh, g->kw};
    PtlTensorImpl *gw = ptl_empty_format(4, sz, PTL_MEMORY_FORMAT_CHANNELS_LAST,
                                         PTL_DTYPE_FLOAT32, x->device);
    PtlTensorImpl *c = NULL, *av = NULL, *bv = NULL, *buf = NULL;
    if (gw == NULL) {
        return NULL;
    }
    int64_t csz[2] = {g->co, g->k}, cst[2] = {g->k, 1};
    if ((c = ptl_tensor_impl_view(gw, 2, csz, cst, gw->storage_offset)) == NULL) {
        goto error;
    }
    if (g->m == 0) {
        memset(ptl_tensor_data(gw), 0, sizeof(float) * (size_t)gw->numel);
    }
    if (nhwc_pointwise(g) && g->m > 0) {
        int64_t asz[2] = {g->co, g->m}, ast[2] = {1, g->co};
        int64_t bsz[2] = {g->m, g->ci}, bst[2] = {g->ci, 1};
        if ((av = ptl_tensor_impl_view(gy, 2, asz, ast, gy->storage_offset)) == NULL ||
            (bv = ptl_tensor_impl_view(x, 2, bsz, bst, x->storage_offset)) == NULL ||
            ptl_gemm(c, av, bv, 1.0, 0.0) < 0) {
            goto error;
        }
    }
    else if (g->m > 0) {
        int64_t tile = NHWC_WGRAD_FLOATS / g->k, bsz[2] = {tile < 1 ? 1 : tile, g->k};
        tile = bsz[0];
        if ((buf = ptl_empty(2, bsz, PTL_DTYPE_FLOAT32, x->device)) == NULL) {
            goto error;
        }
        for (int64_t m0 = 0; m0 < g->m; m0 += tile) {
            int64_t rows = g->m - m0 < tile ? g->m - m0 : tile;
            int64_t asz[2] = {g->co, rows}, ast[2] = {1, g->co};
            int64_t vsz[2] = {rows, g->k}, vst[2] = {g->k, 1};
            NhwcGatherJob j = {g, NHWC_DATA(x), NHWC_DATA(buf), m0};
            void *tok = ptl_nogil_begin();
            int rc = ptl_parallel_for(0, rows, 64, nhwc_gather_rows, &j);
            ptl_nogil_end(tok);
            if (rc < 0 ||
                (av = ptl_tensor_impl_view(gy, 2, asz, ast,
                                           gy->storage_offset + m0 * g->co)) == NULL ||
                (bv = ptl_tensor_impl_view(buf, 2, vsz, vst, buf->storage_offset)) == NULL ||
                ptl_gemm(c, av, bv, 1.0, m0 == 0 ? 0.0 : 1.0) < 0) {
                goto error;
            }
            PTL_CLEAR(av);
            PTL_CLEAR(bv);
        }
    }
    ptl_xdecref(av);
    ptl_xdecref(bv);
    ptl_xdecref(buf);
    ptl_decref(c);
    return gw;
error:
    ptl_xdecref(av);
    ptl_xdecref(bv);
    ptl_xdecref(buf);
    ptl_xdecref(c);
    ptl_decref(gw);
    return NULL;
}

/* gb (Co) = the sum of gy's rows (M, Co), in double */
static PtlTensorImpl *
nhwc_bias_grad(const NhwcGeom *g, PtlTensorImpl *gy)
{
    PtlTensorImpl *gb = ptl_empty(1, &g->co, PTL_DTYPE_FLOAT32, gy->device);
    double *acc = NULL;
    if (gb == NULL) {
        return NULL;
    }
    if ((acc = calloc((size_t)g->co, sizeof(double))) == NULL) {
        ptl_decref(gb);
        ptl_error_set(PTL_ERR_MEMORY, "conv: out of memory allocating %lld doubles",
                      (long long)g->co);
        return NULL;
    }
    const float *p = NHWC_DATA(gy);
    for (int64_t m = 0; m < g->m; m++) {
        for (int64_t o = 0; o < g->co; o++) {
            acc[o] += p[m * g->co + o];
        }
    }
    for (int64_t o = 0; o < g->co; o++) {
        NHWC_DATA(gb)[o] = (float)acc[o];
    }
    free(acc);
    return gb;
}

int
conv_nhwc_backward(PtlIValue *s)
{
    PtlTensorImpl *go = s[0].u.t, *x = s[1].u.t, *w = s[2].u.t;
    PtlTensorImpl *gy = NULL, *wl = NULL, *out[3] = {NULL, NULL, NULL};
    const int64_t *mask = s[10].u.il.data;
    PtlIValue cs[9];
    ConvArgs a;
    NhwcGeom g;

    if (!nhwc_inputs(x, w) || !nhwc_gemm_takes(w) || go->dtype != PTL_DTYPE_FLOAT32 ||
        go->dim != 4 || go->device.type != PTL_DEVICE_CPU) {
        return 0;
    }
    /* the forward's checks, with the arguments at convolution's positions */
    cs[0] = s[1];
    cs[1] = s[2];
    cs[2] = ptl_iv_none();
    for (int i = 3; i < 9; i++) {
        cs[i] = s[i + 1];
    }
    if (ptl_conv_check(x, w, NULL, cs, &a) < 0) {
        return -1;
    }
    if (!nhwc_geom(x, w, &a, &g) || go->sizes[0] != g.n || go->sizes[1] != g.co ||
        go->sizes[2] != g.oh || go->sizes[3] != g.ow) {
        return 0;
    }
    if ((gy = nhwc_dense(go)) == NULL) {
        return -1;
    }
    if (mask[0] && ((wl = nhwc_dense(w)) == NULL ||
                    (out[0] = nhwc_input_grad(&g, gy, wl, x->device)) == NULL)) {
        goto error;
    }
    if (mask[1] && (out[1] = nhwc_weight_grad(&g, gy, x)) == NULL) {
        goto error;
    }
    if (mask[2] && (out[2] = nhwc_bias_grad(&g, gy)) == NULL) {
        goto error;
    }
    ptl_xdecref(wl);
    ptl_decref(gy);
    for (int i = 0; i < 3; i++) {
        s[i] = ptl_iv_tensor(out[i]);
    }
    return 1;
error:
    ptl_xdecref(wl);
    ptl_decref(gy);
    for (int i = 0; i < 3; i++) {
        ptl_xdecref(out[i]);
    }
    return -1;
}
