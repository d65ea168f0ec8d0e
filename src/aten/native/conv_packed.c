/* conv_packed.c -- float32 convolution forward on AVX-512 and AVX2, straight from the image
 * (no column buffer for the batch), and the column windows that the weight gradient
 * (conv_packed_wgrad.c) shares; the AVX2 engine runs PK2_MR x 16 tiles under the same
 * driver (docs/decisions.md "The packed float32 forward on AVX2").  Plays the role of
 * oneDNN's direct convolution kernels under ATen/native/mkldnn/Conv.cpp (PyTorch's CPU
 * convolution).
 *
 * Note [Packed float32 convolution]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The im2col path (Note [Convolution as GEMM]) writes a column buffer for a whole batch
 * chunk, laid out (kdim, batch * cols), then runs a GEMM over it: the buffer goes to memory
 * and back, its rows are batch * cols apart (a power of two for most images: they collide
 * in L1), and the threads meet at every KC step.  Here a task is one block of output pixels
 * of one sample and one group, and does everything for it on its own thread.  Its columns
 * (kdim = ci/G * kvol taps by the block's pixels) are windows of the padded image (Cols):
 * per input channel and per phase of the stride (the elements at the same coordinates
 * modulo the stride: one phase for stride 1, four for a 2-D stride 2), flattened, so that
 * tap p of output pixel q is at q + off[p]: PK_NR consecutive pixels are one 32-float load,
 * and each image element is copied once.  The flat indices past the output's width
 * (about d * (k - 1) / s per row) are computed and dropped (on small images the rows are
 * cut to the output's width instead: Note [Compact windows for small images]).  (Im2col columns would copy
 * an image element kvol / s^2 times, one short run per tap and output row: for ResNet's
 * stride-2 layers such a copy cost as much as the tiles.)
 * Forward: the weight is packed once per call into PK_MR-row slivers; each tile is PK_MR
 * output channels x PK_NR pixels, 16 accumulators started at the bias and summed over the
 * taps in order, so blocks and threads change no bit of the result.  A batch too small to
 * give every thread two tasks is cut into more blocks; where the dropped indices' copy
 * would cost more than the tiles, the blocks are whole output rows (Note [Row-aligned
 * slivers]).
 *
 * Input gradient: the convolution of the output gradient with the kernel reversed, each
 * group's weight block transposed, and padding d * (k - 1) - p (CONV_PACKED_W_FLIPPED),
 * for stride 1; for a stride s, one such convolution per output phase with its sub-kernel
 * (Note [Input gradient by output phases] in conv.c), all phases over windows filled once
 * per task, each phase's tiles then copied to every s-th element of the input gradient.
 *
 * Weight gradient: tiles over the same windows, in conv_packed_wgrad.c (Note [Packed weight
 * gradient]). */
#include <stdlib.h>
#include <string.h>

#include "../../c10/cpu_features.h"
#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "conv_packed.h"

#define PK_MR 8                          /* output channels per forward tile */
#define PK_NR 32                         /* output pixels per sliver: two 16-float vectors */
#define PK_BLOCK_BYTES (256 * 1024)      /* one task's columns at most */
#define COMPACT_NUM 9                    /* compact windows where they compute at most */
#define COMPACT_DEN 10                   /* 9/10 of the lanes (Note [Compact windows...]) */
#define FWD_ROWS_NUM 9                   /* blocks of rows where they compute at most */
#define FWD_ROWS_DEN 8                   /* 9/8 of the lanes (Note [Row-aligned slivers]) */

#define PACK_PREFETCH_ROWS 8             /* pack_pair_pad1 prefetches the image row this
                                          * many rows below the one it reads */
#define PK2_MR 6                         /* output channels per AVX2 forward tile */

int
conv_packed_available(void)
{
    return ptl_cpu_capability() >= PTL_CPU_AVX2;
}

int
conv_packed_wide(void)
{
    return ptl_cpu_capability() >= PTL_CPU_AVX512;
}

/* ---- filling the windows of one block ---- */

/* dst[j] = src[ix0 + j * sx] for j < len where that index lies in the image row
 * [0, width), zero elsewhere: one row of a phase plane's window.  Stride 1 goes through
 * masked loads, stride 2 (every downsampling convolution of a ResNet) through two masked
 * loads of 16 and a permute that keeps the even lanes of the pair. */
AVX512 static inline void
pack_run(float *dst, const float *src, int64_t ix0, int64_t sx, int64_t width, int64_t len)
{
    if (sx == 1) {
        for (int64_t j0 = 0; j0 < len; j0 += 16) {
            int64_t m = len - j0 < 16 ? len - j0 : 16;
            __mmask16 valid = lane_mask(-(ix0 + j0), width - (ix0 + j0));
            valid &= lane_mask(0, m);
            /* masked-off lanes are not read, so the address may lie outside the row */
            __m512 v = _mm512_maskz_loadu_ps(valid, (const char *)src + (ix0 + j0) * 4);
            _mm512_mask_storeu_ps(dst + j0, lane_mask(0, m), v);
        }
        return;
    }
    if (sx == 2) {
        const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24,
                                                26, 28, 30);
        for (int64_t j0 = 0; j0 < len; j0 += 16) {
            int64_t m = len - j0 < 16 ? len - j0 : 16, i0 = ix0 + 2 * j0;
            /* source lanes [0, 2m - 1) of the pair are the ones kept */
            __mmask16 v0 = lane_mask(-i0, width - i0) & lane_mask(0, 2 * m - 1);
            __mmask16 v1 = lane_mask(-(i0 + 16), width - (i0 + 16)) & lane_mask(0, 2 * m - 17);
            __m512 lo = _mm512_maskz_loadu_ps(v0, (const char *)src + i0 * 4);
            __m512 hi = _mm512_maskz_loadu_ps(v1, (const char *)src + (i0 + 16) * 4);
            _mm512_mask_storeu_ps(dst + j0, lane_mask(0, m),
                                  _mm512_permutex2var_ps(lo, evens, hi));
        }
        return;
    }
    for (int64_t j = 0; j < len; j++) {
        int64_t ix = ix0 + j * sx;
        dst[j] = ix >= 0 && ix < width ? src[ix] : 0.0f;
    }
}

/* dst0[j] = src[ix0 + 2 j] and dst1[j] = src[ix0 + 2 j + 1] for j < len, zero where that
 * index lies outside the image row [0, width): the rows of the stride-2 phase planes px
 * and px + 1 from one read of the padded row, two masked loads per 16 of each and a
 * permute to the even lanes, another to the odd. */
AVX512 static inline void
pack_run_pair(float *dst0, float *dst1, const float *src, int64_t ix0, int64_t width,
              int64_t len)
{
    const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                            28, 30);
    const __m512i odds = _mm512_add_epi32(evens, _mm512_set1_epi32(1));
    for (int64_t j0 = 0; j0 < len; j0 += 16) {
        int64_t m = len - j0 < 16 ? len - j0 : 16, i0 = ix0 + 2 * j0;
        __mmask16 v0 = lane_mask(-i0, width - i0) & lane_mask(0, 2 * m);
        __mmask16 v1 = lane_mask(-(i0 + 16), width - (i0 + 16)) & lane_mask(0, 2 * m - 16);
        /* masked-off lanes are not read, so the address may lie outside the row */
        __m512 lo = _mm512_maskz_loadu_ps(v0, (const char *)src + i0 * 4);
        __m512 hi = _mm512_maskz_loadu_ps(v1, (const char *)src + (i0 + 16) * 4);
        _mm512_mask_storeu_ps(dst0 + j0, lane_mask(0, m), _mm512_permutex2var_ps(lo, evens, hi));
        _mm512_mask_storeu_ps(dst1 + j0, lane_mask(0, m), _mm512_permutex2var_ps(lo, odds, hi));
    }
}

/* dst[0, n) = src[0, n) through masked vector moves: the runs copied here are a few dozen
 * floats, where a libc call costs as much as the copy. */
AVX512 static inline void
copy_run(float *dst, const float *src, int64_t n)
{
    for (int64_t j = 0; j < n; j += 16) {
        __mmask16 m = lane_mask(0, n - j);
        _mm512_mask_storeu_ps(dst + j, m, _mm512_maskz_loadu_ps(m, src + j));
    }
}

/* The even lanes of the pair (lo, hi), then the odd ones: [lo0 lo2 .. lo6 hi0 .. hi6] and
 * [lo1 lo3 .. lo7 hi1 .. hi7] (in-lane shuffles, then the 64-bit quarters in order). */
AVX2 static inline __m256
evens8(__m256 lo, __m256 hi)
{
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi,
                                                                                      0x88)),
                                                  0xd8));
}

AVX2 static inline __m256
odds8(__m256 lo, __m256 hi)
{
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi,
                                                                                      0xdd)),
                                                  0xd8));
}

/* The lanes l of 8 whose image column c0 + l lies in the row [0, width): a mask for
 * _mm256_maskload_ps. */
AVX2 static inline __m256i
row_lanes(int64_t c0, int64_t width)
{
    const __m256i col = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                         _mm256_set1_epi32((int)c0));
    return _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), col),
                               _mm256_cmpgt_epi32(_mm256_set1_epi32((int)width), col));
}

/* src[c0, c0 + 8) of an image row of `width` floats, zeros at the columns outside [0,
 * width): one load where they all lie inside; where the 8 cross one end of a row of 8 or
 * more, a load of the row's first (last) 8 and a permute of its lanes into place; else one
 * element at a time.  (Masked loads there, whose masked-off lanes lay before the row, took
 * 70% of the fill of a stride-2 3x3 weight gradient on 32 x 32, at the loads of each 4 KiB
 * channel plane's first row: on the page before.  Building the vector on the stack stalls
 * its load on the stores.  fill_compact2 keeps its masked loads: this was slower there.) */
AVX2 static inline __m256
row_load8(const float *src, int64_t c0, int64_t width)
{
    if (c0 >= 0 && c0 + 8 <= width) {
        return _mm256_loadu_ps(src + c0);
    }
    if (c0 >= width || c0 + 8 <= 0) {
        return _mm256_setzero_ps();
    }
    if (width >= 8) {
        /* lane l is element c0 + l = at + idx[l], kept where 0 <= idx[l] < 8 */
        const int64_t at = c0 < 0 ? 0 : width - 8;
        const __m256i idx = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                             _mm256_set1_epi32((int)(c0 - at)));
        const __m256i keep = _mm256_andnot_si256(
            _mm256_cmpgt_epi32(_mm256_setzero_si256(), idx),
            _mm256_cmpgt_epi32(_mm256_set1_epi32(8), idx));
        return _mm256_and_ps(_mm256_permutevar8x32_ps(_mm256_loadu_ps(src + at), idx),
                             _mm256_castsi256_ps(keep));
    }
    float t[8];
    for (int l = 0; l < 8; l++) {
        t[l] = c0 + l >= 0 && c0 + l < width ? src[c0 + l] : 0.0f;
    }
    return _mm256_loadu_ps(t);
}

/* dst[0, n) = 0: a loop that each engine's wrapper vectorizes for its ISA. */
static inline __attribute__((always_inline)) void
zero_run(float *dst, int64_t n)
{
    for (int64_t j = 0; j < n; j++) {
        dst[j] = 0.0f;
    }
}

/* pack_run (and with dst1, pack_run_pair) for the AVX2 engine: dst[j] = src[ix0 + j * sx]
 * and dst1[j] = src[ix0 + j * sx + 1] where the index lies in the image row [0, width),
 * zero elsewhere.  Stride 1 is zeros, a copy of the row's part and zeros; stride 2 goes 8
 * lanes at a time through two row_load8 and a shuffle to the even (odd) lanes, the last len
 * % 8 one at a time; larger strides one element at a time. */
AVX2 static void
pack_run2(float *dst, float *dst1, const float *src, int64_t ix0, int64_t sx, int64_t width,
          int64_t len)
{
    if (sx == 1) {
        int64_t lo = ix0 < 0 ? -ix0 : 0, hi = width - ix0;
        lo = lo < len ? lo : len;
        hi = hi < lo ? lo : hi < len ? hi : len;
        zero_run(dst, lo);
        if (hi > lo) {
            memcpy(dst + lo, src + ix0 + lo, (size_t)(hi - lo) * sizeof(float));
        }
        zero_run(dst + hi, len - hi);
        return;
    }
    int64_t j = 0;
    for (; j + 8 <= len && sx == 2; j += 8) {
        const int64_t i = ix0 + 2 * j;
        const __m256 lo = row_load8(src, i, width), hi = row_load8(src, i + 8, width);
        _mm256_storeu_ps(dst + j, evens8(lo, hi));
        if (dst1 != NULL) {
            _mm256_storeu_ps(dst1 + j, odds8(lo, hi));
        }
    }
    for (; j < len; j++) {
        const int64_t i = ix0 + j * sx;
        dst[j] = i >= 0 && i < width ? src[i] : 0.0f;
        if (dst1 != NULL) {
            dst1[j] = i + 1 >= 0 && i + 1 < width ? src[i + 1] : 0.0f;
        }
    }
}

/* pack_run2 with dst1 for ix0 = -1 (one column of padding) over an image row whose width
 * is a multiple of 16, len = width / 2 + 1 (a whole row of a 3-wide kernel's phase planes):
 * dst is a zero and the odd columns, dst1 the even columns and a zero.  Each 16 columns are
 * two loads inside the row, their odd and even lanes stored where they land, and the row
 * PACK_PREFETCH_ROWS below is prefetched.  The windows' fill was 23% of the 16 -> 32 3x3
 * stride-2 weight gradient on 32 x 32 (perf, Zen 3), half of it waiting on the image rows'
 * loads; pack_run2 there tests both ends of each 8 (row_load8), permutes a load across the
 * last and copies one element at a time at the end. */
AVX2 static inline void
pack_pair_pad1(float *dst, float *dst1, const float *src, int64_t width)
{
    dst[0] = 0.0f;
    for (int64_t c = 0; c < width; c += 16) {
        _mm_prefetch((const char *)(src + PACK_PREFETCH_ROWS * width + c), _MM_HINT_T0);
        const __m256 lo = _mm256_loadu_ps(src + c), hi = _mm256_loadu_ps(src + c + 8);
        _mm256_storeu_ps(dst + 1 + c / 2, odds8(lo, hi));
        _mm256_storeu_ps(dst1 + c / 2, evens8(lo, hi));
    }
    dst1[width / 2] = 0.0f;
}

/* ---- the forward tile ---- */

#define FWD_FMA(R)                                                                        \
    do {                                                                                  \
        const __m512 a = _mm512_set1_ps(ap[(R)]);                                        \
        c##R##0 = _mm512_fmadd_ps(a, b0, c##R##0);                                        \
        c##R##1 = _mm512_fmadd_ps(a, b1, c##R##1);                                        \
    } while (0)
#define FWD_FMA_HALF(R) c##R##0 = _mm512_fmadd_ps(_mm512_set1_ps(ap[(R)]), b0, c##R##0)
#define FWD_INIT(R)                                                                       \
    __m512 c##R##0 = _mm512_set1_ps(bias != NULL && (R) < mr ? bias[(R)] : 0.0f);         \
    __m512 c##R##1 = c##R##0
#define FWD_STORE(R)                                                                      \
    do {                                                                                  \
        if ((R) < mr) {                                                                   \
            if (full) {                                                                   \
                _mm512_storeu_ps(y + (R) * ldy, c##R##0);                                 \
                _mm512_storeu_ps(y + (R) * ldy + 16, c##R##1);                            \
            }                                                                             \
            else {                                                                        \
                _mm512_mask_storeu_ps(y + (R) * ldy, m0, c##R##0);                        \
                _mm512_mask_storeu_ps(y + (R) * ldy + 16, m1, c##R##1);                   \
            }                                                                             \
        }                                                                                 \
    } while (0)

/* y[r][j] (rows ldy apart) = bias[r] + sum over p of ap[p][r] * bp[off[p] + j], for r < mr
 * and j < nr of an 8 x 32 tile. */
AVX512 static void
tile_fwd(int64_t kdim, const float *ap, const float *bp, const int64_t *off, const float *bias,
         float *y, int64_t ldy, int64_t mr, int64_t nr)
{
    FWD_INIT(0);
    FWD_INIT(1);
    FWD_INIT(2);
    FWD_INIT(3);
    FWD_INIT(4);
    FWD_INIT(5);
    FWD_INIT(6);
    FWD_INIT(7);
    /* a last sliver of at most 16 pixels: the first vector only */
    for (int64_t p = 0; nr <= 16 && p < kdim; p++) {
        const __m512 b0 = _mm512_loadu_ps(bp + off[p]);
        FWD_FMA_HALF(0);
        FWD_FMA_HALF(1);
        FWD_FMA_HALF(2);
        FWD_FMA_HALF(3);
        FWD_FMA_HALF(4);
        FWD_FMA_HALF(5);
        FWD_FMA_HALF(6);
        FWD_FMA_HALF(7);
        ap += PK_MR;
    }
    for (int64_t p = 0; nr > 16 && p < kdim; p++) {
        const float *b = bp + off[p];
        const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
        FWD_FMA(0);
        FWD_FMA(1);
        FWD_FMA(2);
        FWD_FMA(3);
        FWD_FMA(4);
        FWD_FMA(5);
        FWD_FMA(6);
        FWD_FMA(7);
        ap += PK_MR;
    }
    const int full = nr == PK_NR;
    const __mmask16 m0 = lane_mask(0, nr), m1 = lane_mask(0, nr - 16);
    FWD_STORE(0);
    FWD_STORE(1);
    FWD_STORE(2);
    FWD_STORE(3);
    FWD_STORE(4);
    FWD_STORE(5);
    FWD_STORE(6);
    FWD_STORE(7);
}
#undef FWD_FMA
#undef FWD_FMA_HALF
#undef FWD_INIT
#undef FWD_STORE

/* ---- the AVX2 forward tile ----
 * PK2_MR output channels x 16 pixels: 12 accumulators, two pixel vectors and a broadcast
 * weight fill 15 of the 16 ymm registers.  A last tile of fewer channels (a count that
 * PK2_MR does not divide, or the input gradient of a 3-channel image) computes only its
 * rows: the 3 -> 32 forward (5 tiles of 6 and one of 2) went from 778 to 735 us, the 32 -> 3
 * input gradient from 2.2 to 1.3 ms.  (The same rows over a whole sliver of 32 pixels, as
 * many accumulators as a full tile, ran that input gradient in 1.8 ms: a sliver's 288 taps
 * of 128 bytes do not stay in L1.)  Each output is the bias plus the taps in order, the
 * same sum as the AVX-512 tile's. */

/* y[r][j] (rows ldy apart) = bias[r] + sum over p of ap[p][r] * bp[off[p] + j], for r <
 * rows and j < nr <= 8 * nv; ap's taps PK2_MR floats apart. */
AVX2 static inline __attribute__((always_inline)) void
tile_fwd2_rows(int64_t kdim, const float *ap, const float *bp, const int64_t *off,
               const float *bias, float *y, int64_t ldy, const int rows, const int nv,
               int64_t nr)
{
    __m256 c[PK2_MR][2];
#pragma GCC unroll 6
    for (int r = 0; r < rows; r++) {
#pragma GCC unroll 2
        for (int v = 0; v < nv; v++) {
            c[r][v] = _mm256_set1_ps(bias != NULL ? bias[r] : 0.0f);
        }
    }
    for (int64_t p = 0; p < kdim; p++) {
        const float *b = bp + off[p];
        __m256 bv[2];
#pragma GCC unroll 2
        for (int v = 0; v < nv; v++) {
            bv[v] = _mm256_loadu_ps(b + 8 * v);
        }
#pragma GCC unroll 6
        for (int r = 0; r < rows; r++) {
            const __m256 a = _mm256_broadcast_ss(ap + r);
#pragma GCC unroll 2
            for (int v = 0; v < nv; v++) {
                c[r][v] = _mm256_fmadd_ps(a, bv[v], c[r][v]);
            }
        }
        ap += PK2_MR;
    }
    /* masked-off lanes are not written, so the address may lie past the row */
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
#pragma GCC unroll 2
    for (int v = 0; v < nv; v++) {
        const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(nr - 8 * v)), lanes);
#pragma GCC unroll 6
        for (int r = 0; r < rows; r++) {
            if (nr >= 8 * (v + 1)) {
                _mm256_storeu_ps(y + r * ldy + 8 * v, c[r][v]);
            }
            else {
                _mm256_maskstore_ps(y + r * ldy + 8 * v, m, c[r][v]);
            }
        }
    }
}

#define FWD2_ROWS(R, NV)                                                                      \
    case (R):                                                                                 \
        tile_fwd2_rows(kdim, ap, bp, off, bias, y, ldy, (R), (NV), nr);                       \
        return

/* tile_fwd2_v1, tile_fwd2_v2: the tile of mr rows for nr <= 8 * NV pixels */
#define FWD2_TILE(NV)                                                                         \
    AVX2 static void tile_fwd2_v##NV(int64_t kdim, const float *ap, const float *bp,          \
                                     const int64_t *off, const float *bias, float *y,         \
                                     int64_t ldy, int64_t mr, int64_t nr)                     \
    {                                                                                         \
        switch (mr) {                                                                         \
            FWD2_ROWS(1, (NV));                                                               \
            FWD2_ROWS(2, (NV));                                                               \
            FWD2_ROWS(3, (NV));                                                               \
            FWD2_ROWS(4, (NV));                                                               \
            FWD2_ROWS(5, (NV));                                                               \
        default:                                                                              \
            tile_fwd2_rows(kdim, ap, bp, off, bias, y, ldy, PK2_MR, (NV), nr);                \
        }                                                                                     \
    }
FWD2_TILE(1)
FWD2_TILE(2)
#undef FWD2_TILE
#undef FWD2_ROWS

/* The same for a sliver of nr <= PK_NR pixels: one or two halves of 16. */
static void
tile_fwd2(int64_t kdim, const float *ap, const float *bp, const int64_t *off, const float *bias,
          float *y, int64_t ldy, int64_t mr, int64_t nr)
{
    for (int64_t h = 0; h < nr; h += 16) {
        int64_t n = nr - h < 16 ? nr - h : 16;
        if (n > 8) {
            tile_fwd2_v2(kdim, ap, bp + h, off, bias, y + h, ldy, mr, n);
        }
        else {
            tile_fwd2_v1(kdim, ap, bp + h, off, bias, y + h, ldy, mr, n);
        }
    }
}

/* ---- the columns of one task ----
 * For each input channel c and each phase (pz, py, px) (pz < sz, py < sy, px < sx) that a
 * tap reads, a window of the padded image's phase plane: the padded elements whose
 * coordinates are (pz, py, px) modulo the stride, a (dq, hq, wq) = ceil(padded / stride)
 * grid, flattened.  The output pixel (oz, oy, ox) has flat index q = (oz * hq + oy) * wq +
 * ox in every plane, and tap p = (c, kz, ky, kx) of it, which reads the padded element
 * (oz * sz + kz * dz, ...), is at q - q0 + off[p], off[p] = (c * nph + ph) * winst +
 * ((kz * dz / sz) * hq + ky * dy / sy) * wq + kx * dx / sx, ph the slot of the phase
 * ((kz * dz) % sz, ...): PK_NR consecutive pixels are one 32-float load for any stride,
 * and each image element is copied once (an im2col buffer copies it kvol / stride^2
 * times).  Flat indices whose column lies past the output's width (ox >= cols) or row
 * past its height are computed and dropped: 2 of every 18 for a 16 x 16 image with
 * padding 1 and stride 1, 1 of every 9 with stride 2.
 *
 * Note [Compact windows for small images]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * On a small image the dropped indices and the rounding of the last sliver are a large
 * share of the tiles' lanes: a 13 x 13 output from a 15 x 15 padded image (the input
 * gradient of a 3 x 3 convolution on 13 x 13) has 193 flat indices for 169 pixels,
 * computed in 208 lanes; an 8 x 8 one with padding 1, 78 for 64 in 80.  There the rows are
 * cut to the output's width instead: one window per column offset of the kernel (kx * dx)
 * and phase (pz, py) of the other dims, whose row yq holds the padded elements
 * (.., yq * sy + py, ox * sx + kx * dx) for ox < cols, so that flat index q = (oz * hq +
 * oy) * cols + ox and tap p is at q - q0 + off[p] with off[p] = (c * nph + ph) * winst +
 * ((kz * dz / sz) * hq + ky * dy / sy) * cols.  No index is dropped within a row (169
 * pixels in 176 lanes, 64 in 64), at the price of writing each image element k[2] times
 * instead of once.  cols_init takes the compact layout where it computes at most
 * COMPACT_NUM / COMPACT_DEN of the phase planes' lanes and fill_compact can fill it (rows
 * of at most 16 pixels reading at most 32 padded elements): fill_compact reads each
 * padded row once and writes the k[2] windows' rows from it by permutes.  Filling each
 * window on its own, row by row like fill_window, made the fill take about as long as the
 * multiply-adds it saved (17% of the 13 x 13 input gradient instead of 6%).
 *
 * Note [Row-aligned slivers]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * In the phase planes the slivers run over flat indices, across the dropped ends of the
 * rows, so the forward's tiles store into a buffer whose output pixels are then copied to y
 * run by run.  With few taps that copy costs more than the tiles: in the 3 -> 32 forward on
 * 32 x 32 (27 taps, batch 32) it took 38% of the profile (masked stores of every channel's
 * rows), the tiles' dropped lanes 6% (1088 for 1024 pixels).  A forward into its (n, co,
 * cols) output (one phase, no `out`) of one output plane (col[0] = 1) instead cuts its
 * blocks at whole output rows and starts a sliver at each row's start and every PK_NR
 * pixels along it: the tiles store straight into y (a row's last sliver through masks),
 * computing its width rounded up to 16 per row, and a block's windows reach that far past
 * its last row's start.  cols_init takes it where those lanes are at most FWD_ROWS_NUM /
 * FWD_ROWS_DEN of the flat ones (both rounded up to 16), there are at least two rows and
 * min_blocks of them, and one row's windows fit PK_BLOCK_BYTES (else a long 1-D-like row
 * would have one block of any size).  Measured on Zen 4, one thread, the forward by rows
 * against by flat slivers: 32 x 32 3 -> 32 0.75 -> 0.57 ms; widths 28 and 56 (1.07 and
 * 1.10 times the flat lanes) faster for 27 and 288 taps; widths 24 and 40 (1.23 and 1.14)
 * faster for 27 taps, 5-15% slower for 288, hence 9/8.  Each output is the same sum (the
 * bias, then the taps in order) either way, so the layout changes no bit. */

/* The slot of window (pz, py, px) among those read, adding it when new. */
static int64_t
phase_slot(Cols *cl, int64_t pz, int64_t py, int64_t px)
{
    for (int64_t i = 0; i < cl->nph; i++) {
        if (cl->phase[3 * i] == pz && cl->phase[3 * i + 1] == py && cl->phase[3 * i + 2] == px) {
            return i;
        }
    }
    cl->phase[3 * cl->nph] = pz;
    cl->phase[3 * cl->nph + 1] = py;
    cl->phase[3 * cl->nph + 2] = px;
    return cl->nph++;
}

/* 1 + the flat index of the last output pixel for phase planes hq high and flat rows wq
 * wide. */
static int64_t
flat_span(const ConvGeom *g, int64_t hq, int64_t wq)
{
    return ((g->col[0] - 1) * hq + g->col[1] - 1) * wq + g->col[2];
}

/* The phase planes' extent along dim i: the padded image's, ceil((img + 2 p) / s), or more
 * where the last column's taps read past the image's end plus p (an input gradient's output
 * phase: Note [Input gradient by output phases]). */
static int64_t
plane_extent(const ConvGeom *g, int i)
{
    int64_t padded = g->img[i] + 2 * g->p[i];
    int64_t reached = (g->col[i] - 1) * g->s[i] + g->d[i] * (g->k[i] - 1) + 1;
    return ((padded > reached ? padded : reached) + g->s[i] - 1) / g->s[i];
}

/* Whether fill_compact can fill a compact layout: output rows of at most 16 pixels, each
 * reading at most 32 consecutive padded elements. */
static int
compact_fits(const ConvGeom *g)
{
    return g->col[2] <= 16 && (g->k[2] - 1) * g->d[2] + (g->col[2] - 1) * g->s[2] < 32;
}

/* Lays out the columns of one (sample, group) of cpg channels: compact or not (Note
 * [Compact windows for small images]), in blocks of slivers or, where rows_ok, of output
 * rows (Note [Row-aligned slivers]) that keep a task's windows within PK_BLOCK_BYTES, at
 * least min_blocks of them where there are enough slivers. */
int
conv_cols_init(Cols *cl, const ConvGeom *g, int64_t cpg, int64_t min_blocks, int rows_ok)
{
    const int64_t kdim = cpg * g->kvol, kvol = g->kvol;
    const int64_t wplane = plane_extent(g, 2);
    cl->hq = plane_extent(g, 1);
    /* the lanes the tiles compute (16 a vector) in either layout */
    int64_t lanes_plane = (flat_span(g, cl->hq, wplane) + 15) / 16;
    int64_t lanes_compact = (flat_span(g, cl->hq, g->col[2]) + 15) / 16;
    cl->compact = compact_fits(g) && lanes_compact * COMPACT_DEN <= lanes_plane * COMPACT_NUM;
    cl->wq = cl->compact ? g->col[2] : wplane;
    cl->span = flat_span(g, cl->hq, cl->wq);
    /* stride 1 and no padding: the one phase plane is the image (its extents are the
     * image's, as the last pixel's taps end at its end) */
    cl->flat = !cl->compact && g->s[0] == 1 && g->s[1] == 1 && g->s[2] == 1 && g->p[0] == 0 &&
               g->p[1] == 0 && g->p[2] == 0 && cl->hq == g->img[1] && cl->wq == g->img[2];
    /* off, then the phases (the kernel volume bounds their count), then each tap's slot
     * and offset in its plane */
    cl->off = conv_alloc((size_t)(kdim + 5 * kvol) * sizeof(int64_t));
    if (cl->off == NULL) {
        return -1;
    }
    cl->phase = cl->off + kdim;
    cl->nph = 0;
    int64_t *slot = cl->phase + 3 * kvol, *in_plane = slot + kvol;
    int64_t reach = 0, p = 0;
    for (int64_t kz = 0; kz < g->k[0]; kz++) {
        for (int64_t ky = 0; ky < g->k[1]; ky++) {
            for (int64_t kx = 0; kx < g->k[2]; kx++, p++) {
                int64_t z = kz * g->d[0], y = ky * g->d[1], x = kx * g->d[2];
                int64_t in = ((z / g->s[0]) * cl->hq + y / g->s[1]) * cl->wq;
                /* a compact window starts at the tap's padded column, a plane's at the
                 * phase's first */
                int64_t px = cl->compact ? x : x % g->s[2];
                in += cl->compact ? 0 : x / g->s[2];
                slot[p] = phase_slot(cl, z % g->s[0], y % g->s[1], px);
                in_plane[p] = in;
                reach = in > reach ? in : reach;
            }
        }
    }
    /* Note [Row-aligned slivers]: blocks of whole output rows where there are rows for
     * min_blocks, one row's windows fit PK_BLOCK_BYTES and the rows' lanes are at most
     * FWD_ROWS_NUM / FWD_ROWS_DEN of the flat ones */
    const int64_t row_lanes = (g->col[2] + 15) / 16 * 16, nrows = g->col[1];
    const int64_t room = PK_BLOCK_BYTES / (cpg * cl->nph * (int64_t)sizeof(float)) - reach;
    cl->by_rows = rows_ok && !cl->compact && g->col[0] == 1 && nrows >= 2 &&
                  nrows >= min_blocks && room >= row_lanes &&
                  nrows * row_lanes * FWD_ROWS_DEN <= (cl->span + 15) / 16 * 16 * FWD_ROWS_NUM;
    /* a block is whole slivers, or whole rows (read up to row_lanes past the last's start) */
    const int64_t unit = cl->by_rows ? cl->wq : PK_NR;
    const int64_t units = cl->by_rows ? nrows : (cl->span + PK_NR - 1) / PK_NR;
    const int64_t tail = cl->by_rows ? row_lanes - cl->wq : 0;
    int64_t per = (room - tail) / unit;
    per = per < 1 ? 1 : per;
    cl->nblk = (units + per - 1) / per;
    cl->nblk = cl->nblk < min_blocks ? min_blocks : cl->nblk;
    cl->nblk = cl->nblk < units ? cl->nblk : units;
    cl->nq = (units + cl->nblk - 1) / cl->nblk * unit;
    cl->nblk = ((cl->by_rows ? nrows * cl->wq : cl->span) + cl->nq - 1) / cl->nq;
    cl->winst = (cl->nq + tail + reach + 15) / 16 * 16;
    for (int64_t c = 0; c < cpg; c++) {
        for (int64_t kk = 0; kk < kvol; kk++) {
            cl->off[c * kvol + kk] = (c * cl->nph + slot[kk]) * cl->winst + in_plane[kk];
        }
    }
    return 0;
}
/* floats of one task's windows */
size_t
conv_cols_floats(const Cols *cl, int64_t cpg)
{
    return (size_t)(cpg * cl->nph * cl->winst);
}

/* win[f - q0] = the padded image plane's phase (pz, py, px) at flat index f, for f in
 * [q0, q0 + len): each row of the phase plane is one run (pack_run: every sx-th element of
 * a padded row from px), the padding read as zeros.  With win1, sx is 2 and win1 gets phase
 * (pz, py, px + 1) from the same reads (pack_run_pair). */
static inline __attribute__((always_inline)) void
fill_window(const int wide, const float *plane, const ConvGeom *g, const Cols *cl,
            const int64_t *phase, int64_t q0, int64_t len, float *win, float *win1)
{
    /* the plane's coordinates of flat index f, stepped along without divisions: the rows
     * are short (9 floats for stride 2 on 16 x 16), so a division per row was a good part
     * of the fill */
    int64_t row = q0 / cl->wq, x = q0 % cl->wq, zq = row / cl->hq, yq = row % cl->hq;
    for (int64_t f = q0; f < q0 + len;) {
        int64_t iz = zq * g->s[0] + phase[0] - g->p[0];
        int64_t iy = yq * g->s[1] + phase[1] - g->p[1];
        int64_t n = cl->wq - x < q0 + len - f ? cl->wq - x : q0 + len - f;
        float *d = win + (f - q0);
        const float *src = plane + (iz * g->img[1] + iy) * g->img[2];
        /* phase column x + j is padded column (x + j) * sx + px, image column p less */
        const int64_t ix0 = x * g->s[2] + phase[2] - g->p[2];
        if (iz < 0 || iz >= g->img[0] || iy < 0 || iy >= g->img[1]) {
            zero_run(d, n);
            if (win1 != NULL) {
                zero_run(win1 + (f - q0), n);
            }
        }
        else if (win1 != NULL && wide) {
            pack_run_pair(d, win1 + (f - q0), src, ix0, g->img[2], n);
        }
        else if (wide) {
            pack_run(d, src, ix0, g->s[2], g->img[2], n);
        }
        else if (win1 != NULL && ix0 == -1 && g->img[2] % 16 == 0 && n == g->img[2] / 2 + 1) {
            pack_pair_pad1(d, win1 + (f - q0), src, g->img[2]);
        }
        else {
            pack_run2(d, win1 != NULL ? win1 + (f - q0) : NULL, src, ix0, g->s[2], g->img[2], n);
        }
        f += n;
        x = 0;
        if (++yq == cl->hq) {
            yq = 0;
            zq++;
        }
    }
}

/* win + kx * winst (kx < k[2]) = the compact windows of phase (pz, py) (phase[0..1]) for
 * flat indices [q0, q0 + len) (Note [Compact windows for small images]): the padded row
 * that a row of the windows reads, at most 32 elements (compact_fits), is two masked
 * loads, and window kx's row is its lanes kx * dx + ox * sx for ox < cols, one permute. */
AVX512 static void
fill_compact(const float *plane, const ConvGeom *g, const Cols *cl, const int64_t *phase,
             int64_t q0, int64_t len, float *win)
{
    const int64_t wq = cl->wq, b = -g->p[2], width = g->img[2];
    const __mmask16 m0 = lane_mask(-b, width - b), m1 = lane_mask(-b - 16, width - b - 16);
    const __m512i step = _mm512_set1_epi32((int)g->d[2]);
    const __m512i first = _mm512_mullo_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
        _mm512_set1_epi32((int)g->s[2]));
    int64_t row = q0 / wq, zq = row / cl->hq, yq = row % cl->hq;
    for (int64_t at = row * wq - q0; at < len; at += wq) {
        int64_t iz = zq * g->s[0] + phase[0] - g->p[0];
        int64_t iy = yq * g->s[1] + phase[1] - g->p[1];
        __m512 lo = _mm512_setzero_ps(), hi = lo;
        if (iz >= 0 && iz < g->img[0] && iy >= 0 && iy < g->img[1]) {
            /* masked-off lanes are not read, so the address may lie outside the row */
            const char *src = (const char *)(plane + (iz * g->img[1] + iy) * width);
            lo = _mm512_maskz_loadu_ps(m0, src + b * 4);
            if (m1 != 0) {
                hi = _mm512_maskz_loadu_ps(m1, src + (b + 16) * 4);
            }
        }
        /* the row's lanes in [q0, q0 + len); a whole vector where it fits there (the lanes
         * past the row are the next row's, written next) */
        const int whole = at >= 0 && at + 16 <= len;
        const __mmask16 keep = lane_mask(-at, len - at) & lane_mask(0, wq);
        __m512i ix = first;
        for (int64_t kx = 0; kx < g->k[2]; kx++, ix = _mm512_add_epi32(ix, step)) {
            __m512 v = _mm512_permutex2var_ps(lo, ix, hi);
            char *d = (char *)(win + kx * cl->winst) + at * 4;
            if (whole) {
                _mm512_storeu_ps(d, v);
            }
            else {
                _mm512_mask_storeu_ps(d, keep, v);
            }
        }
        if (++yq == cl->hq) {
            yq = 0;
            zq++;
        }
    }
}

/* fill_compact for the AVX2 engine: window kx's row holds the padded row's elements
 * kx * dx + ox * sx for ox < 16, read straight from the image row through masked loads
 * (zeros outside it; the masks are the same for every row): two for stride 1, four and two
 * shuffles to the even lanes for stride 2, one element at a time for larger strides.
 * (Reading them from a copy of the padded row on the stack stalled every load on the
 * stores just made to it.) */
AVX2 static void
fill_compact2(const float *plane, const ConvGeom *g, const Cols *cl, const int64_t *phase,
              int64_t q0, int64_t len, float *win)
{
    const int64_t wq = cl->wq, b = -g->p[2], width = g->img[2], sx = g->s[2];
    const int64_t nv = sx == 1 ? 2 : 4;
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    /* compact_fits: (k[2] - 1) * dx < 32, so k[2] <= 32 */
    __m256i m[32][4];
    for (int64_t kx = 0; kx < g->k[2] && sx <= 2; kx++) {
        for (int64_t v = 0; v < nv; v++) {
            m[kx][v] = row_lanes(b + kx * g->d[2] + 8 * v, width);
        }
    }
    int64_t row = q0 / wq, zq = row / cl->hq, yq = row % cl->hq;
    for (int64_t at = row * wq - q0; at < len; at += wq) {
        int64_t iz = zq * g->s[0] + phase[0] - g->p[0];
        int64_t iy = yq * g->s[1] + phase[1] - g->p[1];
        const float *src = plane + (iz * g->img[1] + iy) * width;
        const int inside = iz >= 0 && iz < g->img[0] && iy >= 0 && iy < g->img[1];
        /* the row's lanes in [at, at + wq) within [0, len); a whole 16 where they fit there
         * (the lanes past the row are the next row's, written next) */
        const int whole = at >= 0 && at + 16 <= len;
        const int64_t lo = at < 0 ? -at : 0, hi = len - at < wq ? len - at : wq;
        const __m256i k0 = _mm256_andnot_si256(
            _mm256_cmpgt_epi32(_mm256_set1_epi32((int)lo), lanes),
            _mm256_cmpgt_epi32(_mm256_set1_epi32((int)hi), lanes));
        const __m256i k1 = _mm256_andnot_si256(
            _mm256_cmpgt_epi32(_mm256_set1_epi32((int)lo - 8), lanes),
            _mm256_cmpgt_epi32(_mm256_set1_epi32((int)hi - 8), lanes));
        for (int64_t kx = 0; kx < g->k[2]; kx++) {
            /* masked-off lanes are not read, so the address may lie outside the row */
            const float *r = src + b + kx * g->d[2];
            float *d = win + kx * cl->winst + at;
            __m256 v0 = _mm256_setzero_ps(), v1 = v0;
            if (sx > 2) {
                for (int64_t ox = lo; ox < hi; ox++) {
                    int64_t ix = b + kx * g->d[2] + ox * sx;
                    d[ox] = inside && ix >= 0 && ix < width ? src[ix] : 0.0f;
                }
                continue;
            }
            if (inside && sx == 1) {
                v0 = _mm256_maskload_ps(r, m[kx][0]);
                v1 = _mm256_maskload_ps(r + 8, m[kx][1]);
            }
            else if (inside) {
                v0 = evens8(_mm256_maskload_ps(r, m[kx][0]), _mm256_maskload_ps(r + 8, m[kx][1]));
                v1 = evens8(_mm256_maskload_ps(r + 16, m[kx][2]),
                            _mm256_maskload_ps(r + 24, m[kx][3]));
            }
            if (whole) {
                _mm256_storeu_ps(d, v0);
                _mm256_storeu_ps(d + 8, v1);
            }
            else {
                /* masked-off lanes are not written, so the address may lie outside */
                _mm256_maskstore_ps(d, k0, v0);
                _mm256_maskstore_ps(d + 8, k1, v1);
            }
        }
        if (++yq == cl->hq) {
            yq = 0;
            zq++;
        }
    }
}

/* The windows of block [q0, q0 + nq) of one sample and group (cpg planes at x) into buf.  A
 * compact layout's windows come k[2] to a phase (pz, py), in consecutive slots (cols_init
 * meets every kx of a new phase at once). */
static inline __attribute__((always_inline)) void
cols_fill_body(const int wide, const Cols *cl, const float *x, const ConvGeom *g, int64_t cpg,
               int64_t q0, float *buf)
{
    for (int64_t c = 0; cl->flat && c < cpg; c++) {
        /* flat index f is image element f: one copy, zeros past the image */
        int64_t n = g->img_numel - q0 < cl->winst ? g->img_numel - q0 : cl->winst;
        n = n > 0 ? n : 0;
        if (n > 0) {
            memcpy(buf + c * cl->winst, x + c * g->img_numel + q0, (size_t)n * sizeof(float));
        }
        zero_run(buf + c * cl->winst + n, cl->winst - n);
    }
    for (int64_t c = 0; !cl->flat && c < cpg; c++) {
        for (int64_t ph = 0, step; ph < cl->nph; ph += step) {
            float *win = buf + (c * cl->nph + ph) * cl->winst;
            const int64_t *at = cl->phase + 3 * ph;
            if (cl->compact) {
                if (wide) {
                    fill_compact(x + c * g->img_numel, g, cl, at, q0, cl->winst, win);
                }
                else {
                    fill_compact2(x + c * g->img_numel, g, cl, at, q0, cl->winst, win);
                }
                step = g->k[2];
                continue;
            }
            /* stride 2 along the rows: phases px = 0 and 1 of one (pz, py), where the kernel
             * reads both, in consecutive slots (cols_init meets them so for a 3x3 kernel) */
            int pair = g->s[2] == 2 && at[2] == 0 && ph + 1 < cl->nph && at[3] == at[0] &&
                       at[4] == at[1] && at[5] == 1;
            fill_window(wide, x + c * g->img_numel, g, cl, at, q0, cl->winst, win,
                        pair ? win + cl->winst : NULL);
            step = pair ? 2 : 1;
        }
    }
}

AVX512 void
conv_cols_fill(const Cols *cl, const float *x, const ConvGeom *g, int64_t cpg, int64_t q0,
               float *buf)
{
    cols_fill_body(1, cl, x, g, cpg, q0, buf);
}

AVX2 void
conv_cols_fill2(const Cols *cl, const float *x, const ConvGeom *g, int64_t cpg, int64_t q0,
                float *buf)
{
    cols_fill_body(0, cl, x, g, cpg, q0, buf);
}

/* The next run of output pixels at or after flat index *q and below end (*q moves to its
 * start), for an output of col[0] x col[1] x col[2] pixels; returns its length, 0 when there
 * is none, and sets *pix to its first pixel's index in the output. */
int64_t
conv_flat_next_run(const Cols *cl, const int64_t *col, int64_t *q, int64_t end, int64_t *pix)
{
    while (*q < end) {
        int64_t row = *q / cl->wq, x = *q % cl->wq, z = row / cl->hq, y = row % cl->hq;
        if (x < col[2] && y < col[1] && z < col[0]) {
            *pix = (z * col[1] + y) * col[2] + x;
            return col[2] - x < end - *q ? col[2] - x : end - *q;
        }
        *q += cl->wq - x;
    }
    return 0;
}

/* ---- forward ---- */

void
conv_job_shape_init(JobShape *sh, const ConvGeom *g, const Cols *cl, int64_t ci, int64_t co)
{
    sh->g = g;
    sh->cl = cl;
    sh->ci = ci;
    sh->co = co;
    sh->cpg = ci / g->groups;
    sh->opg = co / g->groups;
    sh->kdim = sh->cpg * g->kvol;
}

/* One convolution that a forward job runs over the shared windows: the whole kernel, or
 * an output phase's sub-kernel (Note [Input gradient by output phases]). */
typedef struct FwdPhase {
    const float *wp;                     /* the packed weight (pack_weight) */
    int64_t kdim;                        /* its taps: cpg x its kernel */
    int64_t *off;                        /* their offsets in the windows */
    const int64_t *col;                  /* its output size (at most the windows') */
    const ConvPackedOut *out;            /* NULL: y is (n, co, cols) */
} FwdPhase;

typedef struct FwdJob {
    JobShape sh;
    const float *x, *bias;
    float *y;
    const FwdPhase *ph;
    int64_t nph, nis;
    int64_t mr;                          /* output channels per tile: PK_MR, or PK2_MR */
    int wide;                            /* the AVX-512 engine, else the AVX2 one */
} FwdJob;

/* The packed weight of a kernel of kvol taps: wp[((grp * nis + i) * kdim + p) * mr + r]
 * = the weight of output channel grp * opg + i * mr + r at column p (kdim = cpg * kvol, mr
 * the engine's tile rows), zero past opg. */
static void
pack_weight(const float *w, ConvPackedWeight wkind, const FwdJob *j, int64_t kvol, float *wp)
{
    const int64_t G = j->sh.g->groups, kdim = j->sh.cpg * kvol;
    for (int64_t grp = 0; grp < G; grp++) {
        for (int64_t i = 0; i < j->nis; i++) {
            for (int64_t p = 0; p < kdim; p++) {
                float *dst = wp + ((grp * j->nis + i) * kdim + p) * j->mr;
                for (int64_t r = 0; r < j->mr; r++) {
                    int64_t o = i * j->mr + r;
                    float v = 0.0f;
                    if (o < j->sh.opg && wkind == CONV_PACKED_W_PLAIN) {
                        v = w[(grp * j->sh.opg + o) * kdim + p];
                    }
                    else if (o < j->sh.opg) {
                        /* w is (ci, co/G, k) in this convolution's terms: entry
                         * [grp * cpg + c][o][kvol - 1 - kk] for p = c * kvol + kk */
                        int64_t c = p / kvol, kk = p % kvol;
                        v = w[((grp * j->sh.cpg + c) * j->sh.opg + o) * kvol + kvol - 1 - kk];
                    }
                    dst[r] = v;
                }
            }
        }
    }
}

/* dst[m * step] = src[m] for m < n (step > 1): a run of output pixels into an output
 * phase of an input gradient (Note [Input gradient by output phases]).  Step 2 (every
 * stride-2 convolution's phases) spreads 16 floats over the even lanes of two vectors by
 * permutes and stores those lanes through masks; the odd lanes are another phase's. */
AVX512 static void
copy_run_strided(float *dst, int64_t step, const float *src, int64_t n)
{
    if (step == 2) {
        const __m512i lo = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
        const __m512i hi = _mm512_setr_epi32(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14,
                                             14, 15, 15);
        for (int64_t m = 0; m < n; m += 16) {
            __mmask16 in = lane_mask(0, n - m);
            __m512 v = _mm512_maskz_loadu_ps(in, src + m);
            /* even lanes of the first vector: sources 0..7; of the second: 8..15 */
            __mmask16 e0 = (__mmask16)(0x5555u & lane_mask(0, 2 * (n - m)));
            __mmask16 e1 = (__mmask16)(0x5555u & lane_mask(0, 2 * (n - m - 8)));
            _mm512_mask_storeu_ps(dst + 2 * m, e0, _mm512_permutexvar_ps(lo, v));
            if (e1 != 0) {
                _mm512_mask_storeu_ps(dst + 2 * m + 16, e1, _mm512_permutexvar_ps(hi, v));
            }
        }
        return;
    }
    for (int64_t m = 0; m < n; m++) {
        dst[m * step] = src[m];
    }
}

/* The tiles of every output channel of group grp for one sliver of nr pixels at bp in the
 * windows: the channels i * mr.. of the group into y + i * mr * ldy, rows ldy apart. */
static inline __attribute__((always_inline)) void
run_tiles(const int wide, const FwdJob *j, const FwdPhase *ph, int64_t grp, const float *bp,
          float *y, int64_t ldy, int64_t nr)
{
    const int64_t MR = wide ? PK_MR : PK2_MR;
    for (int64_t i = 0; i < j->nis; i++) {
        int64_t o0 = grp * j->sh.opg + i * MR;
        int64_t mr = j->sh.opg - i * MR < MR ? j->sh.opg - i * MR : MR;
        const float *ap = ph->wp + (grp * j->nis + i) * ph->kdim * MR;
        const float *b = j->bias != NULL ? j->bias + o0 : NULL;
        if (wide) {
            tile_fwd(ph->kdim, ap, bp, ph->off, b, y + i * MR * ldy, ldy, mr, nr);
        }
        else {
            tile_fwd2(ph->kdim, ap, bp, ph->off, b, y + i * MR * ldy, ldy, mr, nr);
        }
    }
}

/* Tasks (sample, group, block): the windows are filled once, then for each phase the tiles
 * store into tmp (nis * mr rows of nq), whose output pixels are copied to y (laid out as
 * the phase's `out` says, when set); or straight into y where there is one phase, y is (n,
 * co, cols) and every flat index is an output pixel, its own (a compact 2-D layout, 1-D),
 * or the blocks are rows (Note [Row-aligned slivers]). */
static inline __attribute__((always_inline)) int
fwd_tasks_body(const int wide, const FwdJob *j, int64_t t0, int64_t t1)
{
    const int64_t MR = wide ? PK_MR : PK2_MR;
    const ConvGeom *g = j->sh.g;
    const Cols *cl = j->sh.cl;
    const int64_t G = g->groups;
    const int direct = j->nph == 1 && j->ph[0].out == NULL && cl->span == g->col_numel;
    const int into_y = direct || cl->by_rows;   /* the tiles store into y */
    float *cols = conv_alloc(conv_cols_floats(cl, j->sh.cpg) * sizeof(float));
    float *tmp = into_y ? NULL : conv_alloc((size_t)(j->nis * MR * cl->nq) * sizeof(float));
    if (cols == NULL || (tmp == NULL && !into_y)) {
        free(cols);
        free(tmp);
        return -1;
    }
    for (int64_t t = t0; t < t1; t++) {
        int64_t blk = t % cl->nblk, grp = (t / cl->nblk) % G, n = t / (cl->nblk * G);
        int64_t q0 = blk * cl->nq, nq = cl->span - q0 < cl->nq ? cl->span - q0 : cl->nq;
        const float *xg = j->x + (n * j->sh.ci + grp * j->sh.cpg) * g->img_numel;
        if (wide) {
            conv_cols_fill(cl, xg, g, j->sh.cpg, q0, cols);
        }
        else {
            conv_cols_fill2(cl, xg, g, j->sh.cpg, q0, cols);
        }
        for (int64_t r = q0 / cl->wq; cl->by_rows && r < g->col[1] && r * cl->wq < q0 + nq;
             r++) {
            /* Note [Row-aligned slivers]: one phase, y is (n, co, cols) */
            const int64_t L = g->col_numel, w = g->col[2];
            float *yr = j->y + (n * j->sh.co + grp * j->sh.opg) * L + r * w;
            for (int64_t x0 = 0; x0 < w; x0 += PK_NR) {
                run_tiles(wide, j, &j->ph[0], grp, cols + (r * cl->wq - q0) + x0, yr + x0, L,
                          w - x0 < PK_NR ? w - x0 : PK_NR);
            }
        }
        for (int64_t f = 0; !cl->by_rows && f < j->nph; f++) {
            const FwdPhase *ph = &j->ph[f];
            const ConvPackedOut *out = ph->out;
            const int64_t L = out != NULL ? out->plane : g->col_numel;
            float *yg = j->y + (n * j->sh.co + grp * j->sh.opg) * L;
            for (int64_t s = 0; s * PK_NR < nq; s++) {
                int64_t nr = nq - s * PK_NR < PK_NR ? nq - s * PK_NR : PK_NR;
                run_tiles(wide, j, ph, grp, cols + s * PK_NR,
                          direct ? yg + q0 + s * PK_NR : tmp + s * PK_NR, direct ? L : cl->nq,
                          nr);
            }
            int64_t pix, len;
            for (int64_t q = q0;
                 !direct && (len = conv_flat_next_run(cl, ph->col, &q, q0 + nq, &pix)) > 0;
                 q += len) {
                float *dst = yg + pix;
                int64_t step = 1;
                if (out != NULL) {
                    int64_t x = pix % ph->col[2], yz = pix / ph->col[2];
                    dst = yg + out->off + (yz / ph->col[1]) * out->st[0] +
                          (yz % ph->col[1]) * out->st[1] + x * out->st[2];
                    step = out->st[2];
                }
                for (int64_t o = 0; o < j->sh.opg; o++) {
                    if (step == 1 && wide) {
                        copy_run(dst + o * L, tmp + o * cl->nq + (q - q0), len);
                    }
                    else if (step == 1) {
                        memcpy(dst + o * L, tmp + o * cl->nq + (q - q0),
                               (size_t)len * sizeof(float));
                    }
                    else if (wide) {
                        copy_run_strided(dst + o * L, step, tmp + o * cl->nq + (q - q0), len);
                    }
                    else {
                        for (int64_t m = 0; m < len; m++) {
                            dst[o * L + m * step] = tmp[o * cl->nq + (q - q0) + m];
                        }
                    }
                }
            }
        }
    }
    free(cols);
    free(tmp);
    return 0;
}

AVX512 static int
fwd_tasks(void *ctx, int64_t t0, int64_t t1)
{
    return fwd_tasks_body(1, (const FwdJob *)ctx, t0, t1);
}

AVX2 static int
fwd_tasks2(void *ctx, int64_t t0, int64_t t1)
{
    return fwd_tasks_body(0, (const FwdJob *)ctx, t0, t1);
}

/* The forward over phases ph[0, nph) (their w, wkind's layout, kernel k at `at` in g's; the
 * plain convolution is one phase, the whole kernel at 0): packs each phase's weight and
 * tap offsets, then runs the tasks. */
static int
fwd_run(const float *x, ConvPackedWeight wkind, const float *bias, float *y,
        const ConvPackedPhase *phases, int64_t nph, const ConvGeom *g, int64_t n, int64_t ci,
        int64_t co)
{
    const int64_t G = g->groups;
    FwdJob j = {.x = x, .bias = bias, .y = y, .nph = nph};
    Cols cl = {0};
    FwdPhase *ph = NULL;
    float *wp = NULL;
    int64_t *off = NULL, kdims = 0;
    int rc = -1;
    conv_job_shape_init(&j.sh, g, &cl, ci, co);
    j.wide = conv_packed_wide();
    j.mr = j.wide ? PK_MR : PK2_MR;
    j.nis = (j.sh.opg + j.mr - 1) / j.mr;
    /* enough tasks for every thread: two per thread when the batch is small (the blocks
     * change no result: each output is one sum over the taps) */
    int64_t nthreads = ptl_get_num_threads();
    int64_t want = n * G >= 2 * nthreads ? 1 : (2 * nthreads + n * G - 1) / (n * G);
    if (conv_cols_init(&cl, g, j.sh.cpg, want, nph == 1 && phases[0].out == NULL) < 0) {
        return -1;
    }
    for (int64_t f = 0; f < nph; f++) {
        kdims += j.sh.cpg * phases[f].k[0] * phases[f].k[1] * phases[f].k[2];
    }
    ph = conv_alloc((size_t)nph * sizeof(FwdPhase));
    wp = conv_alloc((size_t)(G * j.nis * kdims * j.mr) * sizeof(float));
    off = conv_alloc((size_t)kdims * sizeof(int64_t));
    if (ph == NULL || wp == NULL || off == NULL) {
        goto done;
    }
    float *wpf = wp;
    int64_t *offf = off;
    for (int64_t f = 0; f < nph; f++) {
        const ConvPackedPhase *src = &phases[f];
        const int64_t *k = src->k, *at = src->at;
        int64_t kvol = k[0] * k[1] * k[2];
        ph[f] = (FwdPhase){wpf, j.sh.cpg * kvol, offf, src->col, src->out};
        pack_weight(src->w, wkind, &j, kvol, wpf);
        /* tap (c, kz, ky, kx) of the phase is tap (c, at + (kz, ky, kx)) of g's kernel */
        for (int64_t c = 0; c < j.sh.cpg; c++) {
            for (int64_t kz = 0; kz < k[0]; kz++) {
                for (int64_t ky = 0; ky < k[1]; ky++) {
                    for (int64_t kx = 0; kx < k[2]; kx++) {
                        *offf++ = cl.off[c * g->kvol + ((kz + at[0]) * g->k[1] + ky + at[1]) *
                                                         g->k[2] + kx + at[2]];
                    }
                }
            }
        }
        wpf += G * j.nis * ph[f].kdim * j.mr;
    }
    j.ph = ph;
    /* a task's multiply-adds; small problems stay on the calling thread */
    double per_task = (double)j.sh.opg * (double)kdims * (double)cl.nq;
    int64_t grain = per_task >= (1 << 18) ? 1 : (int64_t)((1 << 18) / (per_task + 1.0)) + 1;
    void *tok = ptl_nogil_begin();
    rc = ptl_parallel_for(0, n * G * cl.nblk, grain, j.wide ? fwd_tasks : fwd_tasks2, &j);
    ptl_nogil_end(tok);
done:
    free(ph);
    free(wp);
    free(off);
    free(cl.off);
    return rc;
}

int
conv_packed_fwd(const float *x, const float *w, ConvPackedWeight wkind, const float *bias,
                float *y, const ConvGeom *g, int64_t n, int64_t ci, int64_t co)
{
    ConvPackedPhase whole = {w, {g->k[0], g->k[1], g->k[2]}, {0, 0, 0},
                             {g->col[0], g->col[1], g->col[2]}, NULL};
    return fwd_run(x, wkind, bias, y, &whole, 1, g, n, ci, co);
}

int
conv_packed_fwd_phases(const float *x, float *y, const ConvPackedPhase *phases, int64_t nph,
                       const ConvGeom *g, int64_t n, int64_t ci, int64_t co)
{
    return fwd_run(x, CONV_PACKED_W_FLIPPED, NULL, y, phases, nph, g, n, ci, co);
}

