/* conv_packed_wgrad.c -- the float32 convolution weight gradient straight from the image, on
 * AVX-512 and AVX2, over the column windows of the packed forward (conv_packed.c, Note
 * [Packed float32 convolution]).  Plays the role of oneDNN's direct convolution
 * backward-weights kernels under ATen/native/mkldnn/Conv.cpp.
 *
 * Note [Packed weight gradient]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * gw[o][p] = sum over samples and pixels q of gy[o][q] * col[p][q], as tiles of WG_MR taps x
 * WG_NR output channels (WG_NARROW_MR x WG_NARROW_NR where a group has at most 16 output
 * channels): per pixel, the tile's taps broadcast from the columns and the output gradient
 * of its channels, transposed once per sample into gt[q][o] by 16 x 16 register transposes
 * (zeros at the dropped flat indices).  The AVX2 engine runs the same driver with WG2_MR x
 * WG2_NR tiles (WG2_NARROW_MR x WG2_NARROW_NR up to 8 channels a group) and 8 x 8
 * transposes.  A tile sums up to WG_BATCH_PIXELS pixels (several samples of one block)
 * before it adds into the gradient.
 *
 * The tasks go into partial gradients, chunk c taking the c-th share of the tasks in
 * order: chunk 0 sums into gw itself, the others into their own buffers, added into gw in
 * chunk order at the end.  There is a chunk per batch of tasks (a chunk's ends cut
 * batches short, and a tile that stores after fewer pixels spends more of its time on the
 * store: 8 chunks of one 8x8 sample each made the 64 -> 64 weight gradient 1.3x slower
 * than 2 of four), at least WG_CHUNKS_MIN (two threads both work) and at most WG_CHUNKS,
 * fewer where the buffers would pass WG_CHUNK_BYTES (never fewer than WG_CHUNKS_MIN), and
 * never more than the tasks.  Blocks, batches and chunks depend only on the shape, never
 * on the thread count, so neither does the result.  Where the output rows fill its vectors
 * (for a stride of 1 or 2 along them) the AVX-512 engine runs by rows instead
 * (conv_wgrad_rows.c, Note [Weight gradient by rows]), and stride-2 outputs 8 wide (and
 * 16 wide under 3-wide kernels) by row pairs (Note [Weight gradient by row pairs]). */
#include <stdlib.h>
#include <string.h>

#include "../../c10/cpu_features.h"
#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "../transpose_block.h"
#include "conv_packed.h"

#define WG_MR 8                          /* taps per weight-gradient tile */
#define WG_NR 32                         /* output channels per weight-gradient tile */
#define WG_NARROW_MR 16                  /* the same where a group has at most 16 output */
#define WG_NARROW_NR 16                  /* channels */
#define WG_BATCH_PIXELS 1024             /* pixels a weight-gradient tile sums at most */
#define WG_CHUNKS 8                      /* partial weight gradients at most */
#define WG_CHUNKS_MIN 2                  /* at least, where there are as many tasks */
#define WG_CHUNK_BYTES ((int64_t)1 << 25)  /* their total size at most (then fewer chunks) */
#define WG2_MR 6                         /* taps per AVX2 weight-gradient tile */
#define WG2_NR 16                        /* output channels per AVX2 tile: two 8-float vectors */
#define WG2_NARROW_MR 12                 /* the same where a group has at most 8 output */
#define WG2_NARROW_NR 8                  /* channels */

int
conv_packed_wgrad_available(void)
{
    return ptl_cpu_capability() >= PTL_CPU_AVX2;
}

/* The weight-gradient tile of MR taps x 16 * NV output channels (8 x 32, or 16 x 16 for a
 * group of at most 16 output channels, which would leave half of every 32-wide tile's
 * multiply-adds on zeros): for taps r < MR and channels o,
 *   acc[r][o] = sum over segments e < nseg and pixels q < nq of
 *               arow[r][e * aseg + q] * gt[e * gseg + q * 16 * NV + o]
 * (the column of tap r at pixel q times the transposed output gradient; a segment is one
 * sample), then part[o * ldp + r] += acc[r][o] for r < mr and o < nr.  MR and NV are
 * constants at each call, so the loops unroll and the MR * NV accumulators stay in
 * registers. */
AVX512 static inline __attribute__((always_inline)) void
tile_wgrad_body(const int MR, const int NV, const float *const *arow, int64_t aseg,
                const float *gt, int64_t gseg, int64_t nq, int64_t nseg, float *part,
                int64_t ldp, int64_t mr, int64_t nr)
{
    __m512 c[16][2];
    const float *a[16];
    for (int r = 0; r < MR; r++) {
        for (int v = 0; v < NV; v++) {
            c[r][v] = _mm512_setzero_ps();
        }
    }
    for (int64_t e = 0; e < nseg; e++) {
        for (int r = 0; r < MR; r++) {
            a[r] = arow[r] + e * aseg;
        }
        const float *b = gt + e * gseg;
        for (int64_t l = 0; l < nq; l++, b += 16 * NV) {
            __m512 b0 = _mm512_load_ps(b), b1 = NV > 1 ? _mm512_load_ps(b + 16) : b0;
            for (int r = 0; r < MR; r++) {
                const __m512 x = _mm512_set1_ps(a[r][l]);
                c[r][0] = _mm512_fmadd_ps(x, b0, c[r][0]);
                if (NV > 1) {
                    c[r][1] = _mm512_fmadd_ps(x, b1, c[r][1]);
                }
            }
        }
    }
    _Alignas(64) float t[16 * 32];
    for (int r = 0; r < MR; r++) {
        for (int v = 0; v < NV; v++) {
            _mm512_store_ps(t + (r * NV + v) * 16, c[r][v]);
        }
    }
    for (int64_t o = 0; o < nr; o++) {
        for (int64_t r = 0; r < mr; r++) {
            part[o * ldp + r] += t[r * 16 * NV + o];
        }
    }
}

AVX512 static void
tile_wgrad(const float *const *arow, int64_t aseg, const float *gt, int64_t gseg, int64_t nq,
           int64_t nseg, float *part, int64_t ldp, int64_t mr, int64_t nr)
{
    tile_wgrad_body(WG_MR, WG_NR / 16, arow, aseg, gt, gseg, nq, nseg, part, ldp, mr, nr);
}

AVX512 static void
tile_wgrad_narrow(const float *const *arow, int64_t aseg, const float *gt, int64_t gseg,
                  int64_t nq, int64_t nseg, float *part, int64_t ldp, int64_t mr, int64_t nr)
{
    tile_wgrad_body(WG_NARROW_MR, WG_NARROW_NR / 16, arow, aseg, gt, gseg, nq, nseg, part, ldp,
                    mr, nr);
}

/* ---- the AVX2 weight-gradient tiles ----
 * tile_wgrad_body's sums with 8-float vectors: WG2_MR taps x WG2_NR output channels (two
 * vectors), or WG2_NARROW_MR x WG2_NARROW_NR (one) for a group of at most 8 output
 * channels; either way 12 accumulators, the pixel's gradient vectors and a broadcast tap in
 * at most 15 of the 16 ymm registers.  The accumulators are named variables: as an array
 * indexed in unrolled loops (tile_wgrad_body) gcc stored them to the stack at every pixel. */

#define WG2_LOAD(R) const float *a##R = arow[(R)] + e * aseg
#define WG2_FMA(R)                                                                        \
    do {                                                                                  \
        const __m256 x = _mm256_broadcast_ss(a##R + l);                                   \
        c##R##0 = _mm256_fmadd_ps(x, b0, c##R##0);                                        \
        c##R##1 = _mm256_fmadd_ps(x, b1, c##R##1);                                        \
    } while (0)
#define WG2_FMA_NARROW(R) c##R = _mm256_fmadd_ps(_mm256_broadcast_ss(a##R + l), b0, c##R)
#define WG2_STORE(R)                                                                      \
    do {                                                                                  \
        _mm256_store_ps(t + (R) * 16, c##R##0);                                           \
        _mm256_store_ps(t + (R) * 16 + 8, c##R##1);                                       \
    } while (0)

/* part[o * ldp + r] += t[r * ld + o] for r < mr and o < nr: a tile's sums into the
 * gradient. */
static inline void
tile_add(const float *t, int64_t ld, float *part, int64_t ldp, int64_t mr, int64_t nr)
{
    for (int64_t o = 0; o < nr; o++) {
        for (int64_t r = 0; r < mr; r++) {
            part[o * ldp + r] += t[r * ld + o];
        }
    }
}

/* tile_wgrad on AVX2: WG2_MR taps x WG2_NR channels. */
AVX2 static void
tile_wgrad2(const float *const *arow, int64_t aseg, const float *gt, int64_t gseg, int64_t nq,
            int64_t nseg, float *part, int64_t ldp, int64_t mr, int64_t nr)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    for (int64_t e = 0; e < nseg; e++) {
        WG2_LOAD(0);
        WG2_LOAD(1);
        WG2_LOAD(2);
        WG2_LOAD(3);
        WG2_LOAD(4);
        WG2_LOAD(5);
        const float *b = gt + e * gseg;
        for (int64_t l = 0; l < nq; l++, b += WG2_NR) {
            const __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
            WG2_FMA(0);
            WG2_FMA(1);
            WG2_FMA(2);
            WG2_FMA(3);
            WG2_FMA(4);
            WG2_FMA(5);
        }
    }
    _Alignas(32) float t[WG2_MR * WG2_NR];
    WG2_STORE(0);
    WG2_STORE(1);
    WG2_STORE(2);
    WG2_STORE(3);
    WG2_STORE(4);
    WG2_STORE(5);
    tile_add(t, WG2_NR, part, ldp, mr, nr);
}

/* tile_wgrad on AVX2 for narrow groups: WG2_NARROW_MR taps x WG2_NARROW_NR channels. */
AVX2 static void
tile_wgrad2_narrow(const float *const *arow, int64_t aseg, const float *gt, int64_t gseg,
                   int64_t nq, int64_t nseg, float *part, int64_t ldp, int64_t mr, int64_t nr)
{
    __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0;
    __m256 c7 = c0, c8 = c0, c9 = c0, c10 = c0, c11 = c0;
    for (int64_t e = 0; e < nseg; e++) {
        WG2_LOAD(0);
        WG2_LOAD(1);
        WG2_LOAD(2);
        WG2_LOAD(3);
        WG2_LOAD(4);
        WG2_LOAD(5);
        WG2_LOAD(6);
        WG2_LOAD(7);
        WG2_LOAD(8);
        WG2_LOAD(9);
        WG2_LOAD(10);
        WG2_LOAD(11);
        const float *b = gt + e * gseg;
        for (int64_t l = 0; l < nq; l++, b += WG2_NARROW_NR) {
            const __m256 b0 = _mm256_load_ps(b);
            WG2_FMA_NARROW(0);
            WG2_FMA_NARROW(1);
            WG2_FMA_NARROW(2);
            WG2_FMA_NARROW(3);
            WG2_FMA_NARROW(4);
            WG2_FMA_NARROW(5);
            WG2_FMA_NARROW(6);
            WG2_FMA_NARROW(7);
            WG2_FMA_NARROW(8);
            WG2_FMA_NARROW(9);
            WG2_FMA_NARROW(10);
            WG2_FMA_NARROW(11);
        }
    }
    _Alignas(32) float t[WG2_NARROW_MR * WG2_NARROW_NR];
    const __m256 c[WG2_NARROW_MR] = {c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11};
    for (int r = 0; r < WG2_NARROW_MR; r++) {
        _mm256_store_ps(t + r * WG2_NARROW_NR, c[r]);
    }
    tile_add(t, WG2_NARROW_NR, part, ldp, mr, nr);
}
#undef WG2_LOAD
#undef WG2_FMA
#undef WG2_FMA_NARROW
#undef WG2_STORE

typedef struct WgradJob {
    JobShape sh;
    const float *gy, *x;
    float *gw;                           /* co x kdim: chunk 0's sum, then the result */
    float *parts;                        /* the other chunks': (chunks - 1) x co x kdim */
    int64_t mr, nr;                      /* the tile: WG_MR x WG_NR, WG2_MR x WG2_NR or a
                                          * narrow one */
    int64_t n, nos;
    int wide;                            /* the AVX-512 engine, else the AVX2 one */
    int64_t ntasks, chunks, batch;       /* batch: samples a tile sums before it stores */
} WgradJob;

/* dst[j * ldd + r] = src[r * ld + j] for r < 16 and j < nj (nj <= 16), zero for rows
 * r >= nr: a 16 x 16 transpose in registers (pairs of lanes, then pairs of pairs, then
 * 128-bit quarters twice), the rows read through masked loads. */
AVX512 static void
transpose_to_gt(const float *src, int64_t ld, int64_t nr, int64_t nj, float *dst, int64_t ldd)
{
    const __mmask16 cols = lane_mask(0, nj);
    __m512 a[16], b[16];
    for (int r = 0; r < 16; r++) {
        a[r] = r < nr ? _mm512_maskz_loadu_ps(cols, src + r * ld) : _mm512_setzero_ps();
    }
    for (int r = 0; r < 16; r += 2) {
        b[r] = _mm512_unpacklo_ps(a[r], a[r + 1]);
        b[r + 1] = _mm512_unpackhi_ps(a[r], a[r + 1]);
    }
    for (int r = 0; r < 16; r += 4) {
        for (int h = 0; h < 2; h++) {
            __m512d x = _mm512_castps_pd(b[r + h]), y = _mm512_castps_pd(b[r + 2 + h]);
            a[r + 2 * h] = _mm512_castpd_ps(_mm512_unpacklo_pd(x, y));
            a[r + 2 * h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(x, y));
        }
    }
    for (int r = 0; r < 16; r += 8) {
        for (int h = 0; h < 4; h++) {
            b[r + h] = _mm512_shuffle_f32x4(a[r + h], a[r + 4 + h], 0x88);
            b[r + 4 + h] = _mm512_shuffle_f32x4(a[r + h], a[r + 4 + h], 0xdd);
        }
    }
    for (int h = 0; h < 8; h++) {
        a[h] = _mm512_shuffle_f32x4(b[h], b[8 + h], 0x88);
        a[8 + h] = _mm512_shuffle_f32x4(b[h], b[8 + h], 0xdd);
    }
    for (int64_t c = 0; c < nj; c++) {   /* a[c] is column c */
        _mm512_store_ps(dst + c * ldd, a[c]);
    }
}

/* transpose_to_gt for the AVX2 engine: dst[j * ldd + r] = src[r * ld + j] for r < 8 and
 * j < nj (nj <= 8), zero for rows r >= nr; an 8 x 8 transpose in registers
 * (transpose_block.h), the rows read through masked loads. */
AVX2 static void
transpose8_to_gt(const float *src, int64_t ld, int64_t nr, int64_t nj, float *dst, int64_t ldd)
{
    const __m256i cols = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)nj),
                                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256 a[8];
    for (int r = 0; r < 8; r++) {
        /* masked-off lanes are not read, so the address may lie past the row */
        a[r] = r < nr ? _mm256_maskload_ps(src + r * ld, cols) : _mm256_setzero_ps();
    }
    ptl_transpose8_ps(a);
    for (int64_t c = 0; c < nj; c++) {   /* a[c] is column c */
        _mm256_store_ps(dst + c * ldd, a[c]);
    }
}

/* gt[(os * nq + q) * nr + o % nr] = the output gradient of channel o (of the group,
 * os = o / nr, nr the tile's channels) at the block's flat index q (gyg: the group's first
 * channel of one sample), zero at the dropped indices and past opg: 16 x 16 transposes (8 x
 * 8 on AVX2) over each run of output pixels. */
static inline __attribute__((always_inline)) void
fill_gt_body(const int wide, const WgradJob *j, const float *gyg, int64_t q0, int64_t nq,
             float *gt)
{
    const Cols *cl = j->sh.cl;
    const int64_t L = j->sh.g->col_numel, opg = j->sh.opg, V = wide ? 16 : 8;
    memset(gt, 0, (size_t)(j->nos * cl->nq * j->nr) * sizeof(float));
    int64_t pix, len;
    for (int64_t q = q0; (len = conv_flat_next_run(cl, j->sh.g->col, &q, q0 + nq, &pix)) > 0;
         q += len) {
        for (int64_t o = 0; o < opg; o += V) {
            float *d = gt + ((o / j->nr) * cl->nq + (q - q0)) * j->nr + o % j->nr;
            for (int64_t i = 0; i < len; i += V) {
                if (wide) {
                    transpose_to_gt(gyg + o * L + pix + i, L, opg - o, len - i < 16 ? len - i : 16,
                                    d + i * j->nr, j->nr);
                }
                else {
                    transpose8_to_gt(gyg + o * L + pix + i, L, opg - o, len - i < 8 ? len - i : 8,
                                     d + i * j->nr, j->nr);
                }
            }
        }
    }
}

/* Chunks [c0, c1): chunk c sums its share of the tasks (group, block, sample), in order,
 * into its own partial gradient (chunk 0 into gw itself), up to `batch` samples of one block
 * at a time. */
static inline __attribute__((always_inline)) int
wgrad_chunks_body(const int wide, const WgradJob *j, int64_t c0, int64_t c1)
{
    const ConvGeom *g = j->sh.g;
    const Cols *cl = j->sh.cl;
    const int64_t L = g->col_numel, len = j->sh.co * j->sh.kdim;
    const size_t cfl = conv_cols_floats(cl, j->sh.cpg), gfl = (size_t)(j->nos * cl->nq * j->nr);
    float *cols = conv_alloc((size_t)j->batch * cfl * sizeof(float));
    float *gt = conv_alloc((size_t)j->batch * gfl * sizeof(float));
    if (cols == NULL || gt == NULL) {
        free(cols);
        free(gt);
        return -1;
    }
    for (int64_t c = c0; c < c1; c++) {
        float *part = c == 0 ? j->gw : j->parts + (c - 1) * len;
        int64_t t1 = (c + 1) * j->ntasks / j->chunks;
        memset(part, 0, (size_t)len * sizeof(float));
        for (int64_t t = c * j->ntasks / j->chunks, nb; t < t1; t += nb) {
            int64_t n0 = t % j->n, blk = (t / j->n) % cl->nblk, grp = t / (j->n * cl->nblk);
            int64_t q0 = blk * cl->nq, nq = cl->span - q0 < cl->nq ? cl->span - q0 : cl->nq;
            nb = j->batch < t1 - t ? j->batch : t1 - t;
            nb = nb < j->n - n0 ? nb : j->n - n0;
            for (int64_t e = 0; e < nb; e++) {
                int64_t n = n0 + e;
                const float *xg = j->x + (n * j->sh.ci + grp * j->sh.cpg) * g->img_numel;
                const float *gyg = j->gy + (n * j->sh.co + grp * j->sh.opg) * L;
                if (wide) {
                    conv_cols_fill(cl, xg, g, j->sh.cpg, q0, cols + e * cfl);
                }
                else {
                    conv_cols_fill2(cl, xg, g, j->sh.cpg, q0, cols + e * cfl);
                }
                fill_gt_body(wide, j, gyg, q0, nq, gt + e * gfl);
            }
            for (int64_t os = 0; os < j->nos; os++) {
                int64_t nr = j->sh.opg - os * j->nr < j->nr ? j->sh.opg - os * j->nr : j->nr;
                for (int64_t p = 0; p < j->sh.kdim; p += j->mr) {
                    int64_t mr = j->sh.kdim - p < j->mr ? j->sh.kdim - p : j->mr;
                    /* taps past the last repeat it (computed, not stored) */
                    const float *arow[WG_NARROW_MR];
                    for (int r = 0; r < j->mr; r++) {
                        arow[r] = cols + cl->off[p + (r < mr ? r : mr - 1)];
                    }
                    float *pt = part + (grp * j->sh.opg + os * j->nr) * j->sh.kdim + p;
                    const float *gts = gt + os * cl->nq * j->nr;
                    if (wide) {
                        (j->nr == WG_NR ? tile_wgrad : tile_wgrad_narrow)(
                            arow, (int64_t)cfl, gts, (int64_t)gfl, nq, nb, pt, j->sh.kdim, mr,
                            nr);
                    }
                    else {
                        (j->nr == WG2_NR ? tile_wgrad2 : tile_wgrad2_narrow)(
                            arow, (int64_t)cfl, gts, (int64_t)gfl, nq, nb, pt, j->sh.kdim, mr,
                            nr);
                    }
                }
            }
        }
    }
    free(cols);
    free(gt);
    return 0;
}

AVX512 static int
wgrad_chunks(void *ctx, int64_t c0, int64_t c1)
{
    return wgrad_chunks_body(1, (const WgradJob *)ctx, c0, c1);
}

AVX2 static int
wgrad_chunks2(void *ctx, int64_t c0, int64_t c1)
{
    return wgrad_chunks_body(0, (const WgradJob *)ctx, c0, c1);
}

/* ---- the weight gradient by row pairs ----
 *
 * Note [Weight gradient by row pairs]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A stride-2 convolution with outputs 8 pixels wide (a 16-wide image halved: ResNet's
 * downsampling to 8 x 8) fills half of the rows' 16-lane vectors, so the weight gradient by
 * rows (conv_wgrad_rows.c) does not take it, and the tiles above spent two fifths of its
 * time filling the columns and transposing the output gradient (32 -> 64 1x1).  Here a vector
 * is two output rows, pixels (2v, 0..7) and (2v + 1, 0..7) in order, which is also the output
 * gradient's memory: gy's vector v of a channel is one load.  A tap's input at those pixels
 * is every second element of two image rows (input columns 2 * ox + kx * dx - px, rows
 * 4v + ky * dy - py and two below), at most 16 columns each (the image is at most 16 wide):
 * two masked loads of the rows (zeros outside the image) and one two-source permute, read
 * from the image in place.  Outputs 16 wide take the same code with a vector of one output
 * row, whose image row (at most 32 wide) is the two loads; there only for kernels 3 wide,
 * where a tile's three taps are one kernel row and permute the same two loads (the rows
 * path, which copies the image into its stride phases, beat this on 1x1 kernels).
 *
 * Each of the co x kdim pairs of (output channel, tap) sums its products in a vector of 16
 * lanes, WP_MO channels by WP_MT taps of them (24 accumulators) at a time, vector by vector
 * and in each the samples of a block (WP_BLOCK_BYTES of input and output gradient), and keeps
 * the lanes in a buffer between blocks (the buffer's loads and stores once a block cost more
 * than the blocks' reuse of L2 won: 16 -> 32 3x3 on 32 x 32 ran 5% slower in blocks of
 * 1 MiB); the lanes are added at the end (_mm512_reduce_add_ps).  Threads take whole blocks
 * of WP_MO output channels, every sample block in order, so every sum has one order whatever
 * the thread count.  Taken where the lanes' buffer fits WP_ACC_BYTES (32 -> 64 3x3 on
 * 16 x 16, whose buffer is 1.2 MB, ran no faster here than on the tiles). */
#define WP_MO 8                          /* output channels per tile */
#define WP_MT 3                          /* taps per tile */
#define WP_BLOCK_BYTES (4096 * 1024)     /* input and output gradient per sample block */
#define WP_ACC_BYTES (512 * 1024)        /* the lanes' buffer at most */

typedef struct PairsJob {
    const float *gy, *x;
    float *gw, *acc;                     /* acc: co x kdim x 16 lanes */
    int64_t n, ci, co, kdim, nb, nv;     /* nb: samples per block; nv: vectors a channel */
    int64_t *tap;                        /* kdim x 2: the tap's channel plane offset, ky */
    int64_t *row;                        /* nv x kh x 2: the offsets of rows A and B */
    __mmask16 *rmask;                    /* nv x kh x 2: their loads' lanes (0: no row) */
    _Alignas(64) int32_t idx[32][16];    /* by kx: the permute's lanes */
    __mmask16 kmask[32], last;           /* by kx: the lanes inside the image; gy's last */
    const ConvGeom *g;
} PairsJob;

/* Whether the weight gradient by row pairs takes g (groups 1, float32, AVX-512): a 2-D
 * stride-2 convolution into outputs 8 wide, or 16 wide with a kernel 3 wide, of an image at
 * most twice as wide (a lane's column inside the image is then one of the two loads' 32),
 * its lanes' buffer within WP_ACC_BYTES. */
static int
wgrad_pairs_fit(const ConvGeom *g, int64_t ci, int64_t co)
{
    return g->groups == 1 && g->k[0] == 1 && g->img[0] == 1 && g->col[0] == 1 &&
           g->s[1] == 2 && g->s[2] == 2 && g->k[2] <= 32 && g->img[2] <= 2 * g->col[2] &&
           (g->col[2] == 8 || (g->col[2] == 16 && g->k[2] == WP_MT)) &&
           (double)co * (double)(ci * g->kvol) * 64.0 <= WP_ACC_BYTES;
}

/* Tile (o0, p0) over samples [n0, n1): WP_MO channels by WP_MT taps, clamped at the ends
 * (the repeats are computed, not stored); `first`: the lanes start at zero.  `row`: the taps
 * are kx = 0, 1, 2 of one kernel row of one channel, so they permute the same two loads. */
AVX512 static inline __attribute__((always_inline)) void
pairs_tile_body(const int row, const PairsJob *j, int64_t n0, int64_t n1, int64_t o0,
                int64_t p0, int first)
{
    const ConvGeom *g = j->g;
    const int64_t kh = g->k[1], P = g->col_numel, X = g->img_numel;
    const int64_t mo = j->co - o0 < WP_MO ? j->co - o0 : WP_MO;
    const int64_t mt = j->kdim - p0 < WP_MT ? j->kdim - p0 : WP_MT;
    __m512 acc[WP_MO][WP_MT];
    __m512i idx[WP_MT];
    __mmask16 km[WP_MT];
    int64_t plane[WP_MT], ky[WP_MT], orow[WP_MO];
    float *lanes[WP_MO][WP_MT];
    for (int t = 0; t < WP_MT; t++) {
        int64_t p = p0 + (t < mt ? t : mt - 1), kx = p % g->k[2];
        plane[t] = j->tap[2 * p];
        ky[t] = j->tap[2 * p + 1];
        idx[t] = _mm512_load_si512(j->idx[kx]);
        km[t] = j->kmask[kx];
    }
    for (int o = 0; o < WP_MO; o++) {
        int64_t oc = o0 + (o < mo ? o : mo - 1);
        orow[o] = oc * P;
        for (int t = 0; t < WP_MT; t++) {
            lanes[o][t] = j->acc + (oc * j->kdim + p0 + (t < mt ? t : mt - 1)) * 16;
        }
    }
#pragma GCC unroll 8
    for (int o = 0; o < WP_MO; o++) {
#pragma GCC unroll 3
        for (int t = 0; t < WP_MT; t++) {
            acc[o][t] = first ? _mm512_setzero_ps() : _mm512_load_ps(lanes[o][t]);
        }
    }
    /* vector by vector, the samples inside: a vector's rows, masks and offsets are the same
     * in every sample */
    const int64_t xs = j->ci * X, gs = j->co * P;
    for (int64_t v = 0; v < j->nv; v++) {
        const __mmask16 gm = v == j->nv - 1 ? j->last : (__mmask16)0xffff;
        const float *xa[WP_MT], *xb[WP_MT], *gn = j->gy + n0 * gs + v * 16;
        __mmask16 ma[WP_MT], mb[WP_MT];
        for (int t = 0; t < WP_MT; t++) {
            const int64_t r = (v * kh + ky[t]) * 2;
            xa[t] = j->x + n0 * xs + plane[t] + j->row[r];
            xb[t] = j->x + n0 * xs + plane[t] + j->row[r + 1];
            ma[t] = j->rmask[r];
            mb[t] = j->rmask[r + 1];
        }
        for (int64_t n = n0; n < n1; n++, gn += gs) {
            __m512 xv[WP_MT], a = _mm512_setzero_ps(), b = a;
            const int64_t at = (n - n0) * xs;
#pragma GCC unroll 3
            for (int t = 0; t < WP_MT; t++) {
                if (!row || t == 0) {
                    a = _mm512_maskz_loadu_ps(ma[t], xa[t] + at);
                    b = _mm512_maskz_loadu_ps(mb[t], xb[t] + at);
                }
                xv[t] = _mm512_maskz_permutex2var_ps(km[t], a, idx[t], b);
            }
#pragma GCC unroll 8
            for (int o = 0; o < WP_MO; o++) {
                const __m512 gv = _mm512_maskz_loadu_ps(gm, gn + orow[o]);
#pragma GCC unroll 3
                for (int t = 0; t < WP_MT; t++) {
                    acc[o][t] = _mm512_fmadd_ps(gv, xv[t], acc[o][t]);
                }
            }
        }
    }
    /* every accumulator through constant indices (a runtime bound on them would keep the
     * array on the stack, stored at every vector), then the tile's own */
    _Alignas(64) float out[WP_MO][WP_MT][16];
#pragma GCC unroll 8
    for (int o = 0; o < WP_MO; o++) {
#pragma GCC unroll 3
        for (int t = 0; t < WP_MT; t++) {
            _mm512_store_ps(out[o][t], acc[o][t]);
        }
    }
    for (int64_t o = 0; o < mo; o++) {
        for (int64_t t = 0; t < mt; t++) {
            _mm512_store_ps(lanes[o][t], _mm512_load_ps(out[o][t]));
        }
    }
}

AVX512 static void
pairs_tile(const PairsJob *j, int64_t n0, int64_t n1, int64_t o0, int64_t p0, int first)
{
    pairs_tile_body(0, j, n0, n1, o0, p0, first);
}

AVX512 static void
pairs_tile_row(const PairsJob *j, int64_t n0, int64_t n1, int64_t o0, int64_t p0, int first)
{
    pairs_tile_body(1, j, n0, n1, o0, p0, first);
}

/* Blocks [b0, b1) of WP_MO output channels: every sample block in order, then the lanes'
 * sums into gw. */
AVX512 static int
pairs_blocks(void *ctx, int64_t b0, int64_t b1)
{
    const PairsJob *j = ctx;
    /* a 3-wide kernel: every tile is one kernel row of one channel */
    const int row = j->g->k[2] == WP_MT;
    for (int64_t n0 = 0; n0 < j->n; n0 += j->nb) {
        int64_t n1 = j->n - n0 < j->nb ? j->n : n0 + j->nb;
        for (int64_t b = b0; b < b1; b++) {
            for (int64_t p0 = 0; p0 < j->kdim; p0 += WP_MT) {
                (row ? pairs_tile_row : pairs_tile)(j, n0, n1, b * WP_MO, p0, n0 == 0);
            }
        }
    }
    int64_t o1 = b1 * WP_MO < j->co ? b1 * WP_MO : j->co;
    for (int64_t i = b0 * WP_MO * j->kdim; i < o1 * j->kdim; i++) {
        j->gw[i] = _mm512_reduce_add_ps(_mm512_load_ps(j->acc + i * 16));
    }
    return 0;
}

/* conv_packed_wgrad by row pairs where wgrad_pairs_fit(g, ci, co) (n > 0). */
AVX512 static int
wgrad_pairs(const float *gy, const float *x, float *gw, const ConvGeom *g, int64_t n,
            int64_t ci, int64_t co)
{
    const int64_t kh = g->k[1], kw = g->k[2], H = g->img[1], W = g->img[2], OH = g->col[1];
    PairsJob j = {.gy = gy, .x = x, .gw = gw, .n = n, .ci = ci, .co = co, .g = g};
    j.kdim = ci * g->kvol;
    j.nv = (g->col_numel + 15) / 16;
    j.last = lane_mask(0, g->col_numel - (j.nv - 1) * 16);
    int64_t per = (ci * g->img_numel + co * g->col_numel) * (int64_t)sizeof(float);
    j.nb = WP_BLOCK_BYTES / per;
    j.nb = j.nb < 1 ? 1 : j.nb;
    j.acc = conv_alloc((size_t)(co * j.kdim * 16) * sizeof(float));
    j.tap = conv_alloc((size_t)(2 * j.kdim + 2 * j.nv * kh) * sizeof(int64_t));
    j.rmask = conv_alloc((size_t)(2 * j.nv * kh) * sizeof(__mmask16));
    if (j.acc == NULL || j.tap == NULL || j.rmask == NULL) {
        free(j.acc);
        free(j.tap);
        free(j.rmask);
        return -1;
    }
    j.row = j.tap + 2 * j.kdim;
    for (int64_t p = 0; p < j.kdim; p++) {
        j.tap[2 * p] = (p / g->kvol) * g->img_numel;
        j.tap[2 * p + 1] = (p % g->kvol) / kw;
    }
    /* outputs 8 wide: vector v holds output rows 2v (lanes 0-7) and 2v + 1 (lanes 8-15), and
     * loads A and B their image rows; 16 wide: output row v, and A and B load its image
     * row's columns 0-15 and 16-31 */
    const int64_t ow = g->col[2];
    for (int64_t v = 0; v < j.nv; v++) {
        for (int64_t ky = 0; ky < kh; ky++) {
            for (int64_t h = 0; h < 2; h++) {
                int64_t oy = ow == 8 ? 2 * v + h : v, iy = oy * 2 + ky * g->d[1] - g->p[1];
                int ok = oy < OH && iy >= 0 && iy < H;
                int64_t c0 = ow == 8 ? 0 : 16 * h;
                j.row[(v * kh + ky) * 2 + h] = ok ? iy * W + c0 : 0;
                j.rmask[(v * kh + ky) * 2 + h] = ok ? lane_mask(0, W - c0) : 0;
            }
        }
    }
    for (int64_t kx = 0; kx < kw; kx++) {
        j.kmask[kx] = 0;
        for (int l = 0; l < 16; l++) {
            int64_t col = 2 * (l % ow) + kx * g->d[2] - g->p[2];
            int in = col >= 0 && col < W;
            j.idx[kx][l] = in ? (int32_t)(col + (l / ow) * 16) : 0;
            j.kmask[kx] |= in ? (__mmask16)(1u << l) : 0;
        }
    }
    int64_t blocks = (co + WP_MO - 1) / WP_MO;
    double work = (double)n * (double)co * (double)j.kdim * (double)g->col_numel;
    void *tok = ptl_nogil_begin();
    int rc = work >= (1 << 18) ? ptl_parallel_for(0, blocks, 1, pairs_blocks, &j)
                               : pairs_blocks(&j, 0, blocks);
    ptl_nogil_end(tok);
    free(j.acc);
    free(j.tap);
    free(j.rmask);
    return rc;
}

int
conv_packed_wgrad(const float *gy, const float *x, float *gw, const ConvGeom *g, int64_t n,
                  int64_t ci, int64_t co)
{
    const int64_t G = g->groups;
    WgradJob j = {.gy = gy, .x = x, .gw = gw};
    Cols cl = {0};
    conv_job_shape_init(&j.sh, g, &cl, ci, co);
    j.wide = conv_packed_wide();
    if (j.wide) {
        j.nr = j.sh.opg <= WG_NARROW_NR ? WG_NARROW_NR : WG_NR;
        j.mr = j.sh.opg <= WG_NARROW_NR ? WG_NARROW_MR : WG_MR;
    }
    else {
        j.nr = j.sh.opg <= WG2_NARROW_NR ? WG2_NARROW_NR : WG2_NR;
        j.mr = j.sh.opg <= WG2_NARROW_NR ? WG2_NARROW_MR : WG2_MR;
    }
    j.nos = (j.sh.opg + j.nr - 1) / j.nr;
    int64_t len = co * j.sh.kdim;
    if (n == 0 || len == 0 || g->col_numel == 0) {
        memset(gw, 0, (size_t)len * sizeof(float));
        return 0;
    }
    if (j.wide && wgrad_pairs_fit(g, ci, co)) {
        return wgrad_pairs(gy, x, gw, g, n, ci, co);
    }
    if (j.wide && conv_wgrad_rows_fit(g)) {
        return conv_wgrad_rows(gy, x, gw, g, n, ci, co);
    }
    /* the blocks, batches and chunks depend on the shape only */
    if (conv_cols_init(&cl, g, j.sh.cpg, 1, 0) < 0) {
        return -1;
    }
    j.n = n;
    j.ntasks = n * G * cl.nblk;
    j.batch = WG_BATCH_PIXELS / cl.nq;
    j.batch = j.batch < 1 ? 1 : (j.batch < n ? j.batch : n);
    /* a chunk per batch of tasks (a chunk cuts the batches at its ends), from WG_CHUNKS_MIN
     * to WG_CHUNKS, and no more than WG_CHUNK_BYTES of partial gradients beyond
     * WG_CHUNKS_MIN */
    int64_t most = WG_CHUNK_BYTES / (len * (int64_t)sizeof(float));
    j.chunks = j.ntasks / j.batch < WG_CHUNKS ? j.ntasks / j.batch : WG_CHUNKS;
    j.chunks = j.chunks < most ? j.chunks : most;
    j.chunks = j.chunks > WG_CHUNKS_MIN ? j.chunks : WG_CHUNKS_MIN;
    j.chunks = j.chunks < j.ntasks ? j.chunks : j.ntasks;
    if (j.chunks > 1) {
        j.parts = conv_alloc((size_t)((j.chunks - 1) * len) * sizeof(float));
        if (j.parts == NULL) {
            free(cl.off);
            return -1;
        }
    }
    double work = (double)n * (double)co * (double)j.sh.kdim * (double)cl.span;
    PtlParallelFn fn = j.wide ? wgrad_chunks : wgrad_chunks2;
    void *tok = ptl_nogil_begin();
    int rc = work >= (1 << 18) ? ptl_parallel_for(0, j.chunks, 1, fn, &j) : fn(&j, 0, j.chunks);
    ptl_nogil_end(tok);
    /* the other chunks into chunk 0's sum, in chunk order */
    for (int64_t c = 1; rc == 0 && c < j.chunks; c++) {
        const float *part = j.parts + (c - 1) * len;
        for (int64_t i = 0; i < len; i++) {
            gw[i] += part[i];
        }
    }
    free(j.parts);
    free(cl.off);
    return rc;
}
