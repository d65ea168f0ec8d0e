/* gemm_kernels.c -- the engines of gemm.c's blocked product: packing operands into slivers,
 * the portable micro-kernels, the AVX2 and AVX-512 tiles, the C update and the dot and axpy
 * loops of matrix-vector products, and the table that picks them per dtype and CPU (Note
 * [GEMM blocking] in gemm.c and Note [GEMM packing of B] below describe the design). */
#include <immintrin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/cpu_features.h"
#include "../loops.h"
#include "gemm.h"
#include "gemm_impl.h"

/* ---- packing: rows x kc of src into w-wide slivers, dst[(i0 * kc) + p * w + r] ----
 * When the rows are adjacent in memory (rs == 1: B's columns, A transposed) the source is
 * read line by line along p, so each contiguous run of `rows` elements is streamed once; going
 * sliver by sliver instead would touch a new cache line in a new page for every p (a miss per
 * 16 floats that was a third of the time of a 64 x 288 x 7744 product). */

#define DEFINE_PACK(ETAG, T, STAG, ST, LOAD)                                              \
    static void                                                                           \
    pack_##ETAG##_##STAG(const char *src_, int64_t rs, int64_t cs, int64_t rows,          \
                         int64_t kc, int64_t w, void *dst_)                               \
    {                                                                                     \
        const ST *src = (const ST *)src_;                                                 \
        T *dst = (T *)dst_;                                                               \
        if (rs == 1) {                                                                    \
            for (int64_t p = 0; p < kc; p++) {                                            \
                const ST *sp = src + p * cs;                                              \
                for (int64_t i0 = 0; i0 < rows; i0 += w) {                                \
                    int64_t h = rows - i0 < w ? rows - i0 : w;                            \
                    T *d = dst + i0 * kc + p * w;                                         \
                    for (int64_t r = 0; r < h; r++) {                                     \
                        d[r] = LOAD(sp[i0 + r]);                                          \
                    }                                                                     \
                    for (int64_t r = h; r < w; r++) {                                     \
                        d[r] = (T)0;                                                      \
                    }                                                                     \
                }                                                                         \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        for (int64_t i0 = 0; i0 < rows; i0 += w) {                                        \
            int64_t h = rows - i0 < w ? rows - i0 : w;                                    \
            T *d = dst + i0 * kc;                                                         \
            const ST *s = src + i0 * rs;                                                  \
            for (int64_t r = 0; r < h; r++) {                                             \
                for (int64_t p = 0; p < kc; p++) {                                        \
                    d[p * w + r] = LOAD(s[r * rs + p * cs]);                              \
                }                                                                         \
            }                                                                             \
            for (int64_t p = 0; h < w && p < kc; p++) {                                   \
                for (int64_t r = h; r < w; r++) {                                         \
                    d[p * w + r] = (T)0;                                                  \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
    }

#define LOAD_U64(X) ((uint64_t)(int64_t)(X))
DEFINE_PACK(f4, float, f4, float, PTL_ID)
DEFINE_PACK(f4, float, f2, ptl_half, ptl_half_to_f)
DEFINE_PACK(f4, float, bf, ptl_bf16, ptl_bf16_to_f)
DEFINE_PACK(f8, double, f8, double, PTL_ID)
DEFINE_PACK(i8, uint64_t, u1, uint8_t, LOAD_U64)
DEFINE_PACK(i8, uint64_t, i1, int8_t, LOAD_U64)
DEFINE_PACK(i8, uint64_t, i2, int16_t, LOAD_U64)
DEFINE_PACK(i8, uint64_t, i4, int32_t, LOAD_U64)
DEFINE_PACK(i8, uint64_t, i8, int64_t, LOAD_U64)
#undef LOAD_U64

/* ---- AVX2 packing of float32 into float32 slivers ----
 * The four layouts that matter for float32: a row-major B and a transposed A (rs == 1, a
 * weight gradient's g^T: a copy of each sliver's w elements per p, in pieces of 8, 4 and 1),
 * a transposed B (cs == 1: 8 x 8 transposes) and a row-major A (cs == 1, 6 or 12 tall: 8 x 8
 * transposes, the rows past the sliver read as zeros and not stored).  A last sliver of
 * fewer rows is packed the same way, its padding stored as zeros (the scalar packing of a
 * 10-row sliver had made a 10 x 128 @ 128 x 256 product slower than a 12-row one); the rest
 * (other layouts, k < 8) goes to pack_f4_f4, and the bytes are the same.  The AVX-512 engine
 * uses them too (its slivers are 32 wide and 12 tall). */

/* Note [GEMM packing of B]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * Packing B costs a read of B and a write of a KC x NC block; for the small m of an LSTM
 * step or an MLP batch (32 x 128 @ 128 x 512) it was a third of the product.  So: when A is
 * one MC block every B sliver meets A once, and its KC x NR sliver is packed just before use
 * into a buffer that stays in L1; with several A blocks the whole block is packed once.  An
 * engine with a tile (AVX2 and AVX-512) does not pack a row-major B at all in products of at
 * most direct_b_max_m rows (AVX2: float32 12, float64 64; AVX-512 24), nor in products of
 * at most 64 rows whose K block of B spans at most GEMM_DIRECT_B_SPAN bytes: the tile reads
 * its NR columns in place, row after row; a last sliver of exactly NR / 2 or NR / 4 columns
 * too, by the
 * half or quarter tile, which reads no column past it (others are packed and zero-padded: 16
 * x 784 @ 784 x 16 spent two fifths of its time packing, 12.2 -> 9.2 us on one Zen 4 core,
 * 784 x 8 9.8 -> 6.9; docs/performance.md, GEMM: narrow last slivers of B in place).
 * Taller products pack it,
 * since each sliver is then read by many A slivers and B's rows, a power of two apart,
 * collide in L1 (64 x 4096 @ 4096 x 1024 ran at 0.65x OpenBLAS reading B in place with the
 * 32-wide AVX-512 tile, 0.95x packing it), unless K is at most GEMM_DIRECT_B_SMALL_K: a
 * sliver is then at most 32 rows of which the span limit keeps at most 8 in one L1 set
 * (8-way), and packing was a twentieth of a 128 x 10 @ 10 x 256 input gradient.
 * The float32 AVX-512 engine reads a row-major B in place at any height (its direct_b_max_m
 * is INT64_MAX): its tiles fetch the two lines of each row of B they read GEMM_AHEAD_K rows
 * ahead (gemm_kernels.c), and B then streams from L2 into L1 in time, rows a power of two
 * apart or not; unless several A blocks read a K block of B that spans more than
 * GEMM_DIRECT_B_L2_SPAN bytes (half of L2): B's rows far apart then crowd L2's sets, and the
 * packed block, contiguous, stays in L2 (2048^3: 106 packed, 76-89 in place).  Against packing, on one Zen 4 core, GFLOP/s: 64 x 4096 @ 4096 x 1024 98 ->
 * 104, 4096 x 256 @ 256 x 256 107 -> 114, 256^3 112 -> 115, 512^3 110 -> 112, 1024^3 even;
 * the weight gradients g^T @ x 128 x 1024 @ 1024 x 128 108 -> 113, 128 x 1024 @ 1024 x 512
 * 107 -> 112.  AVX2 (a row of B is one line per k step of 6 cycles, not two per 24) and
 * float64 keep the limits above: in place ran slower (AVX2 512^3 105 -> 92; float64 on
 * AVX-512 512^3 48 -> 28).  The tiles also store whole tiles of a row-major C themselves
 * (alpha and beta with update_f4/_f8's roundings, after prefetching C's rows unless C is only
 * written by a tile of few k steps: GEMM_FETCH_C_KC in gemm_kernels.c), and pack_f4_avx2
 * packs float32 with vector copies and 8 x 8 transposes.  None of this changes the order
 * of the sums: the result has the same bits as through the generic packing and update, on
 * any number of threads.
 *
 * A B that many products share (a recurrent layer's W_hh^T, one 32 x 128 @ 128 x 512 product
 * per time step) is packed once instead, by ptl_gemm_pack_b: every K block (gemm_kc, the
 * same cut) of all of B's columns as NR-wide zero-padded slivers, which ptl_gemm_packed hands
 * to gemm_step as a packed block, its columns split among threads as Note [GEMM threads]
 * allows.  The same bits again.  It saves the per-step packing, though on Zen 4 little time:
 * a row-major B's packing is a copy, and the tile then reads the panel from L2 instead of
 * the freshly packed sliver from L1 (docs/performance.md, Recurrent layers). */

/* Note [GEMM transposed A packed by its first tiles]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A transposed A that the AVX2 tiles do not read in place (Note [GEMM direct A]: k steps
 * piled in L1's sets, g [1024, 512] of a GPT's 512 x 1024 @ 1024 x 128 weight gradient, or
 * more than 16 B slivers) was packed in a pass of its own: a copy with nothing to overlap,
 * which waited on every line of A, 2 KiB apart, from L3 (a fifth of that product's samples,
 * the tiles half).  Now the first B sliver's tiles read A's whole slivers in place, as
 * direct_at does (fetching each k step ahead), and store each k step's elements into the
 * packed slivers as they go (direct_at_pack2: two slivers a tile, the tile's own and the
 * next one, which the next tile then reads packed; direct_at_pack: a last odd one); the
 * other B slivers read the packed A as before, and a last sliver of fewer than MR rows and
 * the 4-row pair past `split` are packed before the tiles.  A first B sliver of at most
 * NR / 2 columns (the half and quarter tiles read a packed A) keeps the packing pass.  The
 * FMAs and their order do not change: the same bits. */

/* Note [GEMM B packed by its first tile]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The same for a row-major B that is packed (Note [GEMM packing of B]): each whole sliver
 * is packed by the first A sliver's tile that meets it, which reads the sliver's NR
 * columns in place (ldb apart, fetched GEMM_AHEAD_K rows ahead) and stores the two vectors
 * it loads each k step into the packed sliver (AVX2: tile_bpack on a packed A, and
 * direct_a_bpack and direct_at_bpack on an A read in place): a sliver packed just before
 * use, or, for a block of B packed once, on the first A block's pass (only a last narrower
 * sliver, zero-padded, is packed before).  Not when that first tile is an edge tile (fewer
 * than MR rows) or packs A (the first B sliver of Note [GEMM transposed A packed by its
 * first tiles]): those slivers are packed before use.  The same bits again.  One Zen 3
 * core, both builds' products alternating in one process (benchmarks/
 * interleaved_gemm_builds.py; docs/performance.md, "GEMM on AVX2: operands packed by the
 * tiles"): the GPT's weight gradients 1.05-1.16x, its input gradients up to 1.07x.  Since
 * packing a sliver now costs its first tile little, the float32 AVX2 engine reads a B with
 * a large K block in place only in products of at most 12 rows (direct_b_max_m, was 64): at
 * 13 to 64 rows each sliver is read by 3 to 11 tiles, and B's rows, 4 KiB apart in a 64 x
 * 4096 @ 4096 x 1024 product, piled in L1's sets (43 -> 55-72 GFLOP/s; 48 x 1024 @ 1024 x
 * 1024 1.27-1.47x, 64 x 512 @ 512 x 512 1.18-1.31x, 32 x 128 @ 128 x 512 1.06-1.12x).  At
 * 7 to 12 rows the first tile is a 4-row pair's or the sliver is read twice, and in place
 * stays faster (8 x 512 @ 512 x 512 ran at 0.44x packed). */

/* rows r of an 8 x 8 block <- columns r: the usual unpack / shuffle / permute network */
__attribute__((target("avx2,fma"))) static inline void
transpose8_ps(__m256 *v)
{
    __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
    __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
    __m256 t4 = _mm256_unpacklo_ps(v[4], v[5]), t5 = _mm256_unpackhi_ps(v[4], v[5]);
    __m256 t6 = _mm256_unpacklo_ps(v[6], v[7]), t7 = _mm256_unpackhi_ps(v[6], v[7]);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    v[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
    v[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
    v[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
    v[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
    v[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
    v[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    v[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
    v[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

/* d[0:h] = v[0:h] for h <= 8, with plain stores of 4, 2 and 1 lanes (vmaskmovps stores are
 * slow on AMD) */
__attribute__((target("avx2,fma"))) static inline void
store_head_ps(float *d, __m256 v, int64_t h)
{
    __m128 x = _mm256_castps256_ps128(v);
    if (h == 8) {
        _mm256_storeu_ps(d, v);
        return;
    }
    if (h >= 4) {
        _mm_storeu_ps(d, x);
        x = _mm256_extractf128_ps(v, 1);
        d += 4;
        h -= 4;
    }
    if (h >= 2) {
        _mm_storel_pi((__m64 *)d, x);
        x = _mm_movehl_ps(x, x);
        d += 2;
        h -= 2;
    }
    if (h == 1) {
        _mm_store_ss(d, x);
    }
}

/* One sliver of h <= 8 rows (rs apart, contiguous along p) into dst[p * w + r], r < hs, for
 * the first kc8 (a multiple of 8) columns, the rows from h to hs (h <= hs <= 8) as zeros.  With `spill` (a whole sliver under 8 wide, h ==
 * w: a row-major A's 6 or 4 rows) each column is stored as a whole vector whose last 8 - w
 * lanes land on the next column's first rows, stored next; the last column exactly.  One
 * store per column instead of a 4- and a 2-lane one (a 1024 x 128 @ 128 x 65 product spent
 * 15% of its time here).
 * With `ahead` (a transposed B's NR-wide slivers: the rows of a Linear's weight W of x @ W^T)
 * the 8 rows' elements PACK_AHEAD columns on are fetched into L1, one line a row every 16
 * columns; past kc8 that is the next 8 rows' first columns (h rows on: the same sliver's next
 * rows or the next sliver's first), so the fetches run on from one call to the next.  Each row
 * is one K block long (784 floats in 4 blocks of 196: 13 lines), too short a run for the
 * hardware prefetcher, and in a training step W comes from L3 (the optimizer's step and the
 * other layers went through L2 since): the transposes waited on every line.  One Zen 4 core,
 * x [128, 784] @ W^T [784, 512], W and x in L3: 1060 -> 975 us; in L2 972 -> 960 (the fetch
 * distance: 48 1005, 96 995, 160 972, 256 983, 384 988 us).  Only loads move: the bytes
 * packed are the same. */
#define PACK_AHEAD 160
__attribute__((target("avx2,fma"))) static inline void
pack_rows8(const float *src, int64_t rs, int64_t h, int64_t hs, int64_t kc8, int64_t w,
           float *dst, int spill, int ahead)
{
    for (int64_t p = 0; p < kc8; p += 8) {
        __m256 v[8];
        if (ahead && p % 16 == 0) {
            /* addresses as integers: they may lie past the matrix (a prefetch does not
             * fault) */
            int64_t q = p + PACK_AHEAD, at = q < kc8 ? q : h * rs + (q - kc8);
            for (int r = 0; r < 8; r++) {
                _mm_prefetch((const char *)((uintptr_t)src +
                                            (uintptr_t)(at + r * rs) * sizeof(float)),
                             _MM_HINT_T0);
            }
        }
        for (int r = 0; r < 8; r++) {
            v[r] = r < h ? _mm256_loadu_ps(src + r * rs + p) : _mm256_setzero_ps();
        }
        transpose8_ps(v);
        for (int j = 0; j < 8; j++) {
            if (spill && p + j + 1 < kc8) {
                _mm256_storeu_ps(dst + (p + j) * w, v[j]);
            }
            else {
                store_head_ps(dst + (p + j) * w, v[j], hs);
            }
        }
    }
}

/* (gemm.h) */
__attribute__((target("avx2,fma"))) void
ptl_gemm_pack_rows8_f4(const float *src, int64_t rs, int64_t h, int64_t kc8, int64_t w,
                       float *dst)
{
    pack_rows8(src, rs, h, h, kc8, w, dst, 0, 0);
}

/* A transposed A (or a row-major B) is packed PACK_KROWS rows of K at a time, sliver by
 * sliver: each sliver's part of the block is PACK_KROWS * w contiguous floats written in one
 * run.  Row by row across all the slivers, a transposed A's 24 slivers of 6 were 24
 * interleaved write streams of 24 bytes each (a weight gradient's g^T spent a quarter of its
 * time packing); the block's 16 rows of the source stay in L1 from one sliver to the next. */
#define PACK_KROWS 16

/* d[0:w] = s[0:w] in vectors of 8, then 4 and 1 lanes; or, when `spill`, in vectors of 8
 * only: up to 7 floats past w are read from s and written to d */
__attribute__((target("avx2,fma"))) static inline void
copy_row_ps(const float *s, float *d, int64_t w, int spill)
{
    int64_t v = 0;
    for (; v + 8 <= w; v += 8) {
        _mm256_storeu_ps(d + v, _mm256_loadu_ps(s + v));
    }
    if (v < w && spill) {
        _mm256_storeu_ps(d + v, _mm256_loadu_ps(s + v));
        return;
    }
    /* the end of a sliver not a multiple of 8 wide (a transposed A's 12 or 6 rows):
     * vmaskmovps stores were most of the packing's time on Zen 4 */
    for (; v + 4 <= w; v += 4) {
        _mm_storeu_ps(d + v, _mm_loadu_ps(s + v));
    }
    for (; v < w; v++) {
        d[v] = s[v];
    }
}

__attribute__((target("avx2,fma"))) static void
pack_f4_avx2(const char *src_, int64_t rs, int64_t cs, int64_t rows, int64_t kc, int64_t w,
             void *dst_)
{
    const float *src = (const float *)src_;
    float *dst = (float *)dst_;
    int64_t full = rows / w * w;

    /* (gemv's vectors, w = 1, are left to pack_f4_f4) */
    if (rs == 1 && w >= 4) {
        /* a sliver not a multiple of 8 wide copies whole vectors where the reads past it
         * stay inside the row's stride (so inside the matrix, before row p + 1), and the
         * next row's copy overwrites what spilled past its w floats; its last row copies
         * exactly */
        int64_t wv = w / 8 * 8 + 8;
        for (int64_t p0 = 0; p0 < kc; p0 += PACK_KROWS) {
            int64_t p1 = kc - p0 < PACK_KROWS ? kc : p0 + PACK_KROWS;
            /* the next sliver of B, packed after this one's tiles: its rows are in as many
             * pages as they are long, which the hardware prefetcher does not follow; each
             * of its lines in the row (the second line of a 32-wide sliver missed: a weight
             * gradient's 128 x 1024 @ 1024 x 512 ran 10-20% faster fetching it too) */
            for (int64_t p = p0; p < p1; p++) {
                for (int64_t i = 0; i < w; i += 16) {
                    _mm_prefetch((const char *)(src + p * cs + rows + i), _MM_HINT_T1);
                }
            }
            for (int64_t i0 = 0; i0 < full; i0 += w) {
                int spill = w % 8 != 0 && i0 + wv <= cs;
                for (int64_t p = p0; p < p1; p++) {
                    copy_row_ps(src + p * cs + i0, dst + i0 * kc + p * w, w,
                                spill && p + 1 < kc);
                }
            }
        }
        /* a last sliver of fewer rows (a weight gradient's 10 classes): copies of its rows,
         * then zeros */
        if (full < rows) {
            float *d = dst + full * kc;
            for (int64_t p = 0; p < kc; p++) {
                copy_row_ps(src + p * cs + full, d + p * w, rows - full, 0);
                for (int64_t r = rows - full; r < w; r++) {
                    d[p * w + r] = 0.0f;
                }
            }
            full = rows;
        }
    }
    else if (cs == 1 && kc >= 8) {
        int64_t kc8 = kc / 8 * 8;
        for (int64_t i0 = 0; i0 < full; i0 += w) {
            const float *s = src + i0 * rs;
            float *d = dst + i0 * kc;
            for (int64_t r0 = 0; r0 < w; r0 += 8) {
                int64_t h = w - r0 < 8 ? w - r0 : 8;
                pack_rows8(s + r0 * rs, rs, h, h, kc8, w, d + r0, w < 8, w >= 16);
            }
            /* the last kc - kc8 columns */
            pack_f4_f4((const char *)(s + kc8), rs, cs, w, kc - kc8, w, d + kc8 * w);
        }
        /* a last sliver of fewer rows (the 10 classes of an MLP head transposed, Note [GEMM
         * narrow N]): the same transposes, the rows past it stored as zeros */
        if (full < rows) {
            const float *s = src + full * rs;
            float *d = dst + full * kc;
            for (int64_t r0 = 0; r0 < w; r0 += 8) {
                int64_t h = rows - full - r0, hs = w - r0 < 8 ? w - r0 : 8;
                h = h < 0 ? 0 : h < hs ? h : hs;
                pack_rows8(h > 0 ? s + r0 * rs : s, rs, h, hs, kc8, w, d + r0, 0, 0);
            }
            pack_f4_f4((const char *)(s + kc8), rs, cs, rows - full, kc - kc8, w, d + kc8 * w);
            full = rows;
        }
    }
    else {
        full = 0;
    }
    if (full < rows) {
        pack_f4_f4((const char *)(src + full * rs), rs, cs, rows - full, kc, w, dst + full * kc);
    }
}

/* ---- portable micro-kernels: acc (MR x NR, row-major) = sum_p a[p, :] (x) b[p, :] ----
 * One row of acc at a time: its NR accumulators fit the 16 SSE registers of baseline x86-64
 * (all MR rows would spill), and the NR loop vectorizes. */

#define DEFINE_KERNEL(ETAG, T, MR, NR)                                                    \
    static void                                                                           \
    kernel_##ETAG(int64_t kc, const void *ap_, const void *bp_, void *acc_)               \
    {                                                                                     \
        const T *ap = (const T *)ap_, *bp = (const T *)bp_;                               \
        T *out = (T *)acc_;                                                               \
        for (int r = 0; r < MR; r++) {                                                    \
            T acc[NR] = {0};                                                              \
            for (int64_t p = 0; p < kc; p++) {                                            \
                const T a = ap[p * MR + r];                                               \
                for (int j = 0; j < NR; j++) {                                            \
                    acc[j] += a * bp[p * NR + j];                                         \
                }                                                                         \
            }                                                                             \
            memcpy(out + r * NR, acc, sizeof(acc));                                       \
        }                                                                                 \
    }

#define F4_MR 6
#define F4_NR 16
#define F8_MR 6
#define F8_NR 8
#define I8_MR 4
#define I8_NR 8
#define F4_AVX512_MR 12
#define F4_AVX512_NR 32
#define F8_AVX512_MR 12
#define F8_AVX512_NR 16
_Static_assert(F4_AVX512_MR * F4_AVX512_NR * sizeof(float) <= GEMM_ACC_BYTES, "f4 tile");
_Static_assert(F8_AVX512_MR * F8_AVX512_NR * sizeof(double) <= GEMM_ACC_BYTES, "f8 tile");
_Static_assert(I8_MR * I8_NR * sizeof(uint64_t) <= GEMM_ACC_BYTES, "i8 tile");
DEFINE_KERNEL(f4, float, F4_MR, F4_NR)
DEFINE_KERNEL(f8, double, F8_MR, F8_NR)
DEFINE_KERNEL(i8, uint64_t, I8_MR, I8_NR)

/* ---- SIMD tiles (TileFn): MR rows of two vectors each ----
 * AVX2+FMA: 6 x 16 floats or 6 x 8 doubles in 12 ymm accumulators; AVX-512: 12 x 32 floats
 * or 12 x 16 doubles in 24 zmm accumulators.  Two registers hold B's row, and A's element is
 * broadcast from memory.  The rows are unrolled with named accumulators (gcc keeps an array
 * of vectors in registers but also stores it back on every iteration); each macro takes
 * the row, the element type, the intrinsics' prefix (_mm256 or _mm512), the vector type and
 * the suffix (ps or pd).  Each C element is one chain of FMAs over p from zero, in order,
 * and the store rounds alpha * acc + beta * S as update_f4/_f8 do (mul, mul, add), so every
 * tile of one type gives the same bits (Note [GEMM blocking]).  With alpha = beta = 1 (every
 * K block after the first, and the accumulating products of conv and rnn) it stores acc + S,
 * which is the same sum without the two exact multiplies by 1.  B is a packed sliver
 * (ldb = NR) or B itself (Note [GEMM packing of B]).  A is an MR-tall packed sliver, of
 * which a tile computes its first ROWS rows: the AVX-512 engines also have tiles of 4, 8 and
 * 10 rows for a last sliver of at most that many (32 = 12 + 12 + 8 rows, not 36 of which 4
 * are padding; an MLP head's 10 classes in a weight gradient), the AVX2
 * engines one of 4 rows (an LSTM step's batch of 16 is 6 + 6 + 4, not 18 rows) and pair4_,
 * the same 4 rows on an A sliver packed 4 wide, for a last 7 or 8 rows packed as two such
 * slivers (a 128-row block is 20 x 6 + 4 + 4, not 21 x 6 + 2 of which the last sliver
 * computed 4 rows for 2 and stored them through the accumulator).  The narrow
 * tiles (half_, quarter_) keep MR rows but one vector per row, of the engine's width or half
 * of it, for a last B sliver of at most NR / 2 or NR / 4 columns; they read the first columns
 * of the NR-wide packed sliver. */
#define AVX2 __attribute__((target("avx2,fma")))
#define AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")))
#define ROWS_4(X, ...) X(0, __VA_ARGS__) X(1, __VA_ARGS__) X(2, __VA_ARGS__) X(3, __VA_ARGS__)
#define ROWS_6(X, ...) ROWS_4(X, __VA_ARGS__) X(4, __VA_ARGS__) X(5, __VA_ARGS__)
#define ROWS_8(X, ...) ROWS_6(X, __VA_ARGS__) X(6, __VA_ARGS__) X(7, __VA_ARGS__)
#define ROWS_10(X, ...) ROWS_8(X, __VA_ARGS__) X(8, __VA_ARGS__) X(9, __VA_ARGS__)
#define ROWS_12(X, ...) ROWS_10(X, __VA_ARGS__) X(10, __VA_ARGS__) X(11, __VA_ARGS__)
/* VECS(X, R, ...) applies X to each of a row's vectors J: two for a whole tile, one for the
 * narrow tiles of a last sliver of at most NR / 2 or NR / 4 columns */
#define VECS_1(X, R, ...) X(R, 0, __VA_ARGS__)
#define VECS_2(X, R, ...) X(R, 0, __VA_ARGS__) X(R, 1, __VA_ARGS__)
/* the row's accumulators, and C's row (and S's, when beta reads one apart) fetched while
 * they fill.  A C that is only written (beta == 0) is not fetched by a tile of fewer than
 * GEMM_FETCH_C_KC steps: its loop is too short to hide the fetches, which then only take
 * load slots (without them a 128 x 10 @ 10 x 256 product ran 7% faster, 64 x 64 x 64 3%). */
#define GEMM_FETCH_C_KC 128
#define DECL_VEC(R, J, T, P, V, S)                                                        \
    V c##R##J = P##_setzero_##S();                                                        \
    if (fetch_c) {                                                                        \
        _mm_prefetch((const char *)(c + (R) * ldc + (J) * lanes), _MM_HINT_T0);           \
    }                                                                                     \
    if (fetch_s) {                                                                        \
        _mm_prefetch((const char *)(src + (R) * lds + (J) * lanes), _MM_HINT_T0);         \
    }
#define LOAD_B(R, J, T, P, V, S) const V b##J = P##_loadu_##S(bp + (J) * lanes);
#define FMA_VEC(R, J, T, P, V, S) c##R##J = P##_fmadd_##S(a, b##J, c##R##J);
#define STORE_VEC(R, J, T, P, V, S)                                                       \
    if (plain) {                                                                          \
        P##_storeu_##S(cr + (J) * lanes, c##R##J);                                        \
    }                                                                                     \
    else if (beta == 0) {                                                                 \
        P##_storeu_##S(cr + (J) * lanes, P##_mul_##S(al, c##R##J));                       \
    }                                                                                     \
    else if (accumulate) {                                                                \
        P##_storeu_##S(cr + (J) * lanes, P##_add_##S(c##R##J, P##_loadu_##S(sr + (J) * lanes))); \
    }                                                                                     \
    else {                                                                                \
        P##_storeu_##S(cr + (J) * lanes,                                                  \
                       P##_add_##S(P##_mul_##S(al, c##R##J),                              \
                                   P##_mul_##S(be, P##_loadu_##S(sr + (J) * lanes))));    \
    }
#define DECL_ROW(R, VECS, T, P, V, S) VECS(DECL_VEC, R, T, P, V, S)
#define FMA_ROW(R, VECS, T, P, V, S, AROW)                                                \
    {                                                                                     \
        const V a = P##_set1_##S(AROW(R));                                                \
        VECS(FMA_VEC, R, T, P, V, S)                                                      \
    }
#define STORE_ROW(R, VECS, T, P, V, S)                                                    \
    if ((R) < rows) {                                                                     \
        T *cr = c + (R) * ldc;                                                            \
        const T *sr = src + (R) * lds;                                                    \
        VECS(STORE_VEC, R, T, P, V, S)                                                    \
    }

/* An operand read in place with its rows far apart (a transposed A's k steps lda apart, the
 * AVX-512 tiles' B rows ldb apart) is fetched into L1 GEMM_AHEAD_K k steps before use: the
 * hardware prefetchers did not keep up with rows a few hundred bytes to kilobytes apart
 * (Note [GEMM direct A], Note [GEMM packing of B]).  FETCH_RUN fetches the lines of the
 * first and last of N bytes from address X (an integer: the address may lie past the
 * operand, and a prefetch does not fault). */
#define GEMM_AHEAD_K 16
#define FETCH_RUN(X, N)                                                                   \
    _mm_prefetch((const char *)(X), _MM_HINT_T0);                                         \
    _mm_prefetch((const char *)((X) + (N) - 1), _MM_HINT_T0);
/* A's element of row R at the current k: in a packed sliver, or (A_ROWS3) in row R of a
 * row-major A, addressed from four row pointers three rows apart (a0 + 0, 1 or 2 lda): twelve
 * row offsets did not fit the general registers, and the two spilled ones cost the 64 x 64 x
 * 64 batch and the 1024 x 128 @ 128 x 64 head 3-4% */
#define A_PACKED(R) ap[((R) < clamp ? (R) : 0) * ars]
#define A_ROWS3(R)                                                                        \
    ((R) >= clamp ? a0[0]                                                                 \
     : (R) < 3    ? a0[((R) % 3) * ars]                                                   \
     : (R) < 6    ? a3[((R) % 3) * ars]                                                   \
     : (R) < 9    ? a6[((R) % 3) * ars]                                                   \
                  : a9[((R) % 3) * ars])
#define DEFINE_TILE_A(NAME, TARGET, T, P, V, S, ARS, ACS, CLAMP, AROW, ROWS, VECS, AHEAD) \
    DEFINE_TILE_APS(NAME, TARGET, T, P, V, S, ARS, ACS, CLAMP, AROW, ROWS, VECS, AHEAD, ,    \
                    NO_COPY, STORE_ROWS)
#define STORE_ROWS(ROWS, VECS, T, P, V, S) ROWS(STORE_ROW, VECS, T, P, V, S)
#define DEFINE_TILE_APS(NAME, TARGET, T, P, V, S, ARS, ACS, CLAMP, AROW, ROWS, VECS, AHEAD,  \
                        PK_PARAM, COPY, STORES)                                           \
    TARGET static void                                                                    \
    NAME(int64_t kc, const void *ap_, int64_t lda PK_PARAM, const void *bp_, int64_t ldb, \
         void *c_, int64_t ldc, const void *src_, int64_t lds, double alpha_,             \
         double beta_, int64_t rows)                                                      \
    {                                                                                     \
        const T *ap = (const T *)ap_, *bp = (const T *)bp_, *src = (const T *)src_;       \
        const int64_t ars = (ARS), acs = (ACS), clamp = (CLAMP);                          \
        T *c = (T *)c_;                                                                   \
        (void)lda;                                                                        \
        const T alpha = (T)alpha_, beta = (T)beta_;                                       \
        const int plain = alpha == 1 && beta == 0, fetch_s = beta != 0 && src != c;       \
        const int fetch_c = beta != 0 || kc >= GEMM_FETCH_C_KC;                           \
        const int accumulate = alpha == 1 && beta == 1;                                   \
        const int64_t lanes = (int64_t)(sizeof(V) / sizeof(T));                           \
        const int fetch_b = sizeof(V) == 64 && ldb > 4 * lanes;                           \
        const V al = P##_set1_##S(alpha), be = P##_set1_##S(beta);                        \
        ROWS(DECL_ROW, VECS, T, P, V, S)                                                  \
        const T *a0 = ap, *a3 = ap + 3 * ars, *a6 = ap + 6 * ars, *a9 = ap + 9 * ars;     \
        for (int64_t p = 0; p < kc; p++) {                                                \
            AHEAD(T)                                                                      \
            if (fetch_b) {                                                                \
                FETCH_RUN((uintptr_t)bp + (uintptr_t)(GEMM_AHEAD_K * ldb) * sizeof(T),    \
                          2 * sizeof(V));                                                 \
            }                                                                             \
            VECS(LOAD_B, 0, T, P, V, S)                                                   \
            ROWS(FMA_ROW, VECS, T, P, V, S, AROW)                                         \
            COPY(T, P, S)                                                                 \
            ap += acs;                                                                    \
            a0 += acs;                                                                    \
            a3 += acs;                                                                    \
            a6 += acs;                                                                    \
            a9 += acs;                                                                    \
            bp += ldb;                                                                    \
        }                                                                                 \
        STORES(ROWS, VECS, T, P, V, S)                                                    \
    }
/* a tile on a packed A sliver, one that reads a row-major A in place (lda apart), and one
 * for a last sliver of A read in place, which reads only the first `rows` rows (the others
 * compute on row 0 and are not stored: they may lie past A's end) */
#define NO_AHEAD(T)
#define NO_COPY(T, P, S)
#define AT_AHEAD(T) FETCH_RUN((uintptr_t)ap + (uintptr_t)(GEMM_AHEAD_K * acs) * sizeof(T),   \
                              clamp * sizeof(T))
#define DEFINE_TILE(NAME, TARGET, T, P, V, S, MR, ROWS, VECS)                             \
    DEFINE_TILE_A(NAME, TARGET, T, P, V, S, 1, MR, MR, A_PACKED, ROWS, VECS, NO_AHEAD)
#define DEFINE_DIRECT_A_TILE(NAME, TARGET, T, P, V, S, ROWS, VECS)                        \
    DEFINE_TILE_A(NAME, TARGET, T, P, V, S, lda, 1, 64, A_ROWS3, ROWS, VECS, NO_AHEAD)
#define DEFINE_DIRECT_EDGE_TILE(NAME, TARGET, T, P, V, S, ROWS, VECS)                     \
    DEFINE_TILE_A(NAME, TARGET, T, P, V, S, lda, 1, rows, A_ROWS3, ROWS, VECS, NO_AHEAD)
/* a tile that reads MR rows of a transposed A in place: each k's MR elements are
 * consecutive, as in a packed sliver, and the next k's lda elements on (Note [GEMM direct A]) */
#define DEFINE_DIRECT_AT_TILE(NAME, TARGET, T, P, V, S, MR, ROWS, VECS)                   \
    DEFINE_TILE_A(NAME, TARGET, T, P, V, S, 1, lda, MR, A_PACKED, ROWS, VECS, AT_AHEAD)

DEFINE_TILE(tile_f4_avx2, AVX2, float, _mm256, __m256, ps, F4_MR, ROWS_6, VECS_2)
DEFINE_TILE(tile_f8_avx2, AVX2, double, _mm256, __m256d, pd, F8_MR, ROWS_6, VECS_2)
DEFINE_TILE(tile4_f4_avx2, AVX2, float, _mm256, __m256, ps, F4_MR, ROWS_4, VECS_2)
DEFINE_TILE(tile4_f8_avx2, AVX2, double, _mm256, __m256d, pd, F8_MR, ROWS_4, VECS_2)
DEFINE_TILE(pair4_f4_avx2, AVX2, float, _mm256, __m256, ps, 4, ROWS_4, VECS_2)
DEFINE_TILE(pair4_f8_avx2, AVX2, double, _mm256, __m256d, pd, 4, ROWS_4, VECS_2)
DEFINE_TILE(tile_f4_avx512, AVX512, float, _mm512, __m512, ps, F4_AVX512_MR, ROWS_12, VECS_2)
DEFINE_TILE(tile_f8_avx512, AVX512, double, _mm512, __m512d, pd, F8_AVX512_MR, ROWS_12, VECS_2)
DEFINE_TILE(tile4_f4_avx512, AVX512, float, _mm512, __m512, ps, F4_AVX512_MR, ROWS_4, VECS_2)
DEFINE_TILE(tile4_f8_avx512, AVX512, double, _mm512, __m512d, pd, F8_AVX512_MR, ROWS_4, VECS_2)
DEFINE_TILE(tile8_f4_avx512, AVX512, float, _mm512, __m512, ps, F4_AVX512_MR, ROWS_8, VECS_2)
DEFINE_TILE(tile8_f8_avx512, AVX512, double, _mm512, __m512d, pd, F8_AVX512_MR, ROWS_8, VECS_2)
DEFINE_TILE(tile10_f4_avx512, AVX512, float, _mm512, __m512, ps, F4_AVX512_MR, ROWS_10, VECS_2)
DEFINE_TILE(tile10_f8_avx512, AVX512, double, _mm512, __m512d, pd, F8_AVX512_MR, ROWS_10,
            VECS_2)
/* narrow tiles: one vector per row, NR / 2 and NR / 4 columns */
DEFINE_TILE(half_f4_avx2, AVX2, float, _mm256, __m256, ps, F4_MR, ROWS_6, VECS_1)
DEFINE_TILE(half_f8_avx2, AVX2, double, _mm256, __m256d, pd, F8_MR, ROWS_6, VECS_1)
DEFINE_TILE(half_f4_avx512, AVX512, float, _mm512, __m512, ps, F4_AVX512_MR, ROWS_12, VECS_1)
DEFINE_TILE(half_f8_avx512, AVX512, double, _mm512, __m512d, pd, F8_AVX512_MR, ROWS_12, VECS_1)
DEFINE_TILE(quarter_f4_avx2, AVX2, float, _mm, __m128, ps, F4_MR, ROWS_6, VECS_1)
DEFINE_TILE(quarter_f8_avx2, AVX2, double, _mm, __m128d, pd, F8_MR, ROWS_6, VECS_1)
DEFINE_TILE(quarter_f4_avx512, AVX512, float, _mm256, __m256, ps, F4_AVX512_MR, ROWS_12, VECS_1)
DEFINE_TILE(quarter_f8_avx512, AVX512, double, _mm256, __m256d, pd, F8_AVX512_MR, ROWS_12,
            VECS_1)
DEFINE_DIRECT_A_TILE(direct_a_f4_avx2, AVX2, float, _mm256, __m256, ps, ROWS_6, VECS_2)
DEFINE_DIRECT_A_TILE(direct_a_f8_avx2, AVX2, double, _mm256, __m256d, pd, ROWS_6, VECS_2)
DEFINE_DIRECT_A_TILE(direct_a_f4_avx512, AVX512, float, _mm512, __m512, ps, ROWS_12, VECS_2)
DEFINE_DIRECT_A_TILE(direct_a_f8_avx512, AVX512, double, _mm512, __m512d, pd, ROWS_12, VECS_2)
DEFINE_DIRECT_EDGE_TILE(direct_a4_f4_avx2, AVX2, float, _mm256, __m256, ps, ROWS_4, VECS_2)
DEFINE_DIRECT_EDGE_TILE(direct_a4_f8_avx2, AVX2, double, _mm256, __m256d, pd, ROWS_4, VECS_2)
DEFINE_DIRECT_EDGE_TILE(direct_a4_f4_avx512, AVX512, float, _mm512, __m512, ps, ROWS_4, VECS_2)
DEFINE_DIRECT_EDGE_TILE(direct_a4_f8_avx512, AVX512, double, _mm512, __m512d, pd, ROWS_4,
                        VECS_2)
DEFINE_DIRECT_EDGE_TILE(direct_a8_f4_avx512, AVX512, float, _mm512, __m512, ps, ROWS_8, VECS_2)
DEFINE_DIRECT_EDGE_TILE(direct_a8_f8_avx512, AVX512, double, _mm512, __m512d, pd, ROWS_8,
                        VECS_2)
/* the AVX2 direct_at tile that also copies each k step's 6 elements of A into a packed
 * sliver at pk (Note [GEMM transposed A packed by its first tiles]) */
#define PK_PARAM , void *pk_
#define COPY_A6(T, P, S)                                                                  \
    {                                                                                     \
        T *pk = (T *)pk_ + p * 6;                                                         \
        if (sizeof(T) == 4) {                                                             \
            _mm_storeu_ps((float *)pk, _mm_loadu_ps((const float *)ap));                  \
            _mm_storeu_si64(pk + 4, _mm_loadu_si64(ap + 4));                              \
        }                                                                                 \
        else {                                                                            \
            _mm256_storeu_pd((double *)pk, _mm256_loadu_pd((const double *)ap));          \
            _mm_storeu_pd((double *)(pk + 4), _mm_loadu_pd((const double *)(ap + 4)));   \
        }                                                                                 \
    }
/* the same, and the next sliver's 6 elements into the next packed sliver, kc * 6 on */
#define COPY_A12(T, P, S)                                                                 \
    {                                                                                     \
        T *pk = (T *)pk_ + p * 6, *pk1 = pk + kc * 6;                                     \
        if (sizeof(T) == 4) {                                                             \
            __m256 v = _mm256_loadu_ps((const float *)ap);                                \
            __m128 hi = _mm256_extractf128_ps(v, 1);                                      \
            _mm_storeu_ps((float *)pk, _mm256_castps256_ps128(v));                        \
            _mm_storel_pi((__m64 *)(pk + 4), hi);                                         \
            _mm_storeh_pi((__m64 *)pk1, hi);                                              \
            _mm_storeu_ps((float *)(pk1 + 2), _mm_loadu_ps((const float *)(ap + 8)));     \
        }                                                                                 \
        else {                                                                            \
            __m256d v = _mm256_loadu_pd((const double *)(ap + 4));                        \
            _mm256_storeu_pd((double *)pk, _mm256_loadu_pd((const double *)ap));          \
            _mm_storeu_pd((double *)(pk + 4), _mm256_castpd256_pd128(v));                 \
            _mm_storeu_pd((double *)pk1, _mm256_extractf128_pd(v, 1));                    \
            _mm256_storeu_pd((double *)(pk1 + 2), _mm256_loadu_pd((const double *)(ap + 8))); \
        }                                                                                 \
    }
#define DEFINE_AT_PACK_TILE(NAME, T, P, V, S, COPY)                                       \
    DEFINE_TILE_APS(NAME, AVX2, T, P, V, S, 1, lda, 6, A_PACKED, ROWS_6, VECS_2, AT_AHEAD, \
                    PK_PARAM, COPY, STORE_ROWS)
DEFINE_AT_PACK_TILE(direct_at_pack_f4_avx2, float, _mm256, __m256, ps, COPY_A6)
DEFINE_AT_PACK_TILE(direct_at_pack_f8_avx2, double, _mm256, __m256d, pd, COPY_A6)
DEFINE_AT_PACK_TILE(direct_at_pack2_f4_avx2, float, _mm256, __m256, ps, COPY_A12)
DEFINE_AT_PACK_TILE(direct_at_pack2_f8_avx2, double, _mm256, __m256d, pd, COPY_A12)
/* tiles that read a row-major B's NR columns in place (ldb apart) and store each k step's
 * two B vectors into the packed sliver pk (Note [GEMM B packed by its first tile]),
 * fetching B's rows GEMM_AHEAD_K steps ahead: on a packed A, a row-major A read in place and
 * a transposed one */
#define COPY_B(T, P, S)                                                                   \
    FETCH_RUN((uintptr_t)bp + (uintptr_t)(GEMM_AHEAD_K * ldb) * sizeof(T), 2 * lanes * sizeof(T)) \
    P##_storeu_##S((T *)pk_ + p * 2 * lanes, b0);                                         \
    P##_storeu_##S((T *)pk_ + p * 2 * lanes + lanes, b1);
#define DEFINE_B_PACK_TILES(ETAG, T, P, V, S)                                             \
    DEFINE_TILE_APS(tile_bpack_##ETAG##_avx2, AVX2, T, P, V, S, 1, 6, 6, A_PACKED, ROWS_6, \
                    VECS_2, NO_AHEAD, PK_PARAM, COPY_B, STORE_ROWS)                       \
    DEFINE_TILE_APS(direct_a_bpack_##ETAG##_avx2, AVX2, T, P, V, S, lda, 1, 64, A_ROWS3,   \
                    ROWS_6, VECS_2, NO_AHEAD, PK_PARAM, COPY_B, STORE_ROWS)               \
    DEFINE_TILE_APS(direct_at_bpack_##ETAG##_avx2, AVX2, T, P, V, S, 1, lda, 6, A_PACKED,  \
                    ROWS_6, VECS_2, AT_AHEAD, PK_PARAM, COPY_B, STORE_ROWS)
DEFINE_B_PACK_TILES(f4, float, _mm256, __m256, ps)
DEFINE_B_PACK_TILES(f8, double, _mm256, __m256d, pd)
/* Note [GEMM C stored transposed]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A product computed as C^T = B^T @ A^T (Note [GEMM narrow N] in gemm.c: an MLP's
 * classifier head) or written into a transposed C (out=, addmm_) has C's rows one element
 * apart (row stride 1, columns ldc apart).  Through the accumulator and the update each
 * element was a scalar store.  The float32 AVX2 tiles tile_ct, direct_a_ct and pair4_ct
 * store such a tile themselves: its rows, padded to 8 with zeros, are transposed 8 x 8 at a
 * time in registers, and each of C's 16 columns gets its `rows` elements by vector stores of
 * 4, 2 and 1 lanes; the beta source is read the same way (its rows one element apart too: a
 * bias row of addmm is then a column, lds 0).  alpha * acc + beta * S is rounded as
 * STORE_VEC and the update round it, lane by lane: the same bits.  The head's 128 x 256 @
 * (10 x 256)^T + b ran 1.12-1.15x faster (docs/performance.md, "GEMM on AVX2: transposed C
 * stores and the driver's runs of tiles").  Computing a wide x @ W^T as W @ x^T too, so that
 * W is read in place and not packed, did not pay on Zen 3 (128 x 784 @ (512 x 784)^T
 * 0.98-1.00x): W's rows read in place and the transposed stores cost what the packing had. */

/* the first h <= 8 of s's floats, the other lanes 0 (no read past them) */
AVX2 static inline __m128
load_few_ps(const float *s, int64_t h)
{
    return h >= 4   ? _mm_loadu_ps(s)
           : h == 3 ? _mm_movelh_ps(_mm_loadl_pi(_mm_setzero_ps(), (const __m64 *)s),
                                    _mm_load_ss(s + 2))
           : h == 2 ? _mm_loadl_pi(_mm_setzero_ps(), (const __m64 *)s)
           : h == 1 ? _mm_load_ss(s)
                    : _mm_setzero_ps();
}

/* C's 8 columns j (ldc apart, `rows` <= 8 elements each) = alpha * v's lane j + beta * S's
 * column j (lds apart), v[r] the tile's row r (Note [GEMM C stored transposed]) */
AVX2 static inline void
store_ct_ps(__m256 *v, float *c, int64_t ldc, const float *src, int64_t lds, float alpha,
            float beta, int64_t rows)
{
    const __m256 al = _mm256_set1_ps(alpha), be = _mm256_set1_ps(beta);
    transpose8_ps(v);
    for (int64_t j = 0; j < 8; j++) {
        __m256 x = v[j], sj = _mm256_setzero_ps();
        if (beta != 0) {
            const float *sr = src + j * lds;
            sj = _mm256_set_m128(load_few_ps(sr + 4, rows - 4), load_few_ps(sr, rows));
        }
        x = alpha == 1 && beta == 0 ? x
            : beta == 0             ? _mm256_mul_ps(al, x)
            : alpha == 1 && beta == 1
                ? _mm256_add_ps(x, sj)
                : _mm256_add_ps(_mm256_mul_ps(al, x), _mm256_mul_ps(be, sj));
        store_head_ps(c + j * ldc, x, rows);
    }
}
#define CT_ROW(R, VECS, T, P, V, S)                                                       \
    lo[R] = c##R##0;                                                                      \
    hi[R] = c##R##1;
#define STORE_CT(ROWS, VECS, T, P, V, S)                                                  \
    {                                                                                     \
        __m256 lo[8], hi[8];                                                              \
        (void)plain;                                                                      \
        (void)accumulate;                                                                 \
        (void)al;                                                                         \
        (void)be;                                                                         \
        for (int r = 0; r < 8; r++) {                                                     \
            lo[r] = hi[r] = _mm256_setzero_ps();                                          \
        }                                                                                 \
        ROWS(CT_ROW, VECS, T, P, V, S)                                                    \
        store_ct_ps(lo, c, ldc, src, lds, alpha, beta, rows);                             \
        store_ct_ps(hi, c + 8 * ldc, ldc, src + 8 * lds, lds, alpha, beta, rows);         \
    }
DEFINE_TILE_APS(tile_ct_f4_avx2, AVX2, float, _mm256, __m256, ps, 1, F4_MR, F4_MR, A_PACKED,
                ROWS_6, VECS_2, NO_AHEAD, , NO_COPY, STORE_CT)
DEFINE_TILE_APS(direct_a_ct_f4_avx2, AVX2, float, _mm256, __m256, ps, lda, 1, 64, A_ROWS3,
                ROWS_6, VECS_2, NO_AHEAD, , NO_COPY, STORE_CT)
DEFINE_TILE_APS(pair4_ct_f4_avx2, AVX2, float, _mm256, __m256, ps, 1, 4, 4, A_PACKED, ROWS_4,
                VECS_2, NO_AHEAD, , NO_COPY, STORE_CT)
DEFINE_DIRECT_AT_TILE(direct_at_f4_avx2, AVX2, float, _mm256, __m256, ps, F4_MR, ROWS_6, VECS_2)
DEFINE_DIRECT_AT_TILE(direct_at_f8_avx2, AVX2, double, _mm256, __m256d, pd, F8_MR, ROWS_6,
                      VECS_2)
DEFINE_DIRECT_AT_TILE(direct_at_f4_avx512, AVX512, float, _mm512, __m512, ps, F4_AVX512_MR,
                      ROWS_12, VECS_2)
DEFINE_DIRECT_AT_TILE(direct_at_f8_avx512, AVX512, double, _mm512, __m512d, pd, F8_AVX512_MR,
                      ROWS_12, VECS_2)
#undef DEFINE_TILE_A
#undef DEFINE_TILE_APS
#undef STORE_ROWS
#undef CT_ROW
#undef STORE_CT
#undef DEFINE_AT_PACK_TILE
#undef PK_PARAM
#undef COPY_A6
#undef COPY_A12
#undef COPY_B
#undef DEFINE_B_PACK_TILES
#undef NO_COPY
#undef DEFINE_TILE
#undef DEFINE_DIRECT_A_TILE
#undef DEFINE_DIRECT_EDGE_TILE
#undef DEFINE_DIRECT_AT_TILE
#undef GEMM_AHEAD_K
#undef FETCH_RUN
#undef NO_AHEAD
#undef AT_AHEAD
#undef ROWS_4
#undef ROWS_6
#undef ROWS_8
#undef ROWS_10
#undef ROWS_12
#undef VECS_1
#undef VECS_2
#undef DECL_VEC
#undef LOAD_B
#undef FMA_VEC
#undef STORE_VEC
#undef DECL_ROW
#undef FMA_ROW
#undef A_PACKED
#undef A_ROWS3
#undef STORE_ROW

/* ---- C tile update: C[r, j] = alpha * acc[r, j] + beta * C[r, j] (C not read if beta 0) ---- */

#define DEFINE_UPDATE(ETAG, T, CONV)                                                      \
    static void                                                                           \
    update_##ETAG(const void *acc_, int64_t ld, int64_t mr, int64_t nr, char *c_,         \
                  int64_t rs, int64_t cs, double alpha, double beta)                      \
    {                                                                                     \
        const T *acc = (const T *)acc_;                                                   \
        const T al = CONV(alpha), be = CONV(beta);                                        \
        for (int64_t r = 0; r < mr; r++) {                                                \
            T *c = (T *)c_ + r * rs;                                                      \
            const T *a = acc + r * ld;                                                    \
            if (be == 0) {                                                                \
                for (int64_t j = 0; j < nr; j++) {                                        \
                    c[j * cs] = al * a[j];                                                \
                }                                                                         \
            }                                                                             \
            else if (cs == 1) {                                                           \
                for (int64_t j = 0; j < nr; j++) {                                        \
                    c[j] = al * a[j] + be * c[j];                                         \
                }                                                                         \
            }                                                                             \
            else {                                                                        \
                for (int64_t j = 0; j < nr; j++) {                                        \
                    c[j * cs] = al * a[j] + be * c[j * cs];                               \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
    }

#define CONV_F4(X) ((float)(X))
#define CONV_F8(X) ((double)(X))
DEFINE_UPDATE(f4, float, CONV_F4)
DEFINE_UPDATE(f8, double, CONV_F8)
DEFINE_UPDATE(i8, uint64_t, ptl_gemm_scalar_to_u64)
#undef CONV_F4
#undef CONV_F8

/* ---- dot products of contiguous engine-typed vectors, for gemv: out[r] = a_r . b ----
 * Rows lda elements apart, one call for a block of them (the call and the C update once per
 * block, not once per row).  16 independent partial sums let gcc vectorize without
 * reassociating a float sum. */

#define DEFINE_DOT(ETAG, T)                                                               \
    static void                                                                           \
    dot_##ETAG(const void *a_, int64_t lda, const void *b_, int64_t k, int64_t rows,      \
               void *out)                                                                 \
    {                                                                                     \
        const T *b = (const T *)b_;                                                       \
        for (int64_t r = 0; r < rows; r++) {                                              \
            const T *a = (const T *)a_ + r * lda;                                         \
            T acc[16] = {0}, sum = 0;                                                     \
            int64_t p = 0;                                                                \
            for (; p + 16 <= k; p += 16) {                                                \
                for (int j = 0; j < 16; j++) {                                            \
                    acc[j] += a[p + j] * b[p + j];                                        \
                }                                                                         \
            }                                                                             \
            for (int j = 0; j < 16; j++) {                                                \
                sum += acc[j];                                                            \
            }                                                                             \
            for (; p < k; p++) {                                                          \
                sum += a[p] * b[p];                                                       \
            }                                                                             \
            ((T *)out)[r] = sum;                                                          \
        }                                                                                 \
    }

DEFINE_DOT(f4, float)
DEFINE_DOT(f8, double)
DEFINE_DOT(i8, uint64_t)

/* The four partial sums of one float32 row added as dot_f4_fma adds them. */
__attribute__((target("avx2,fma"))) static inline float
sum_f4_fma(__m256 s0, __m256 s1, __m256 s2, __m256 s3)
{
    __m256 s = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

/* The same for the AVX2 and AVX-512 float32 engines (one function, so both give the same
 * bits): per row, 32 partial sums in four vectors of FMAs, then 8, added pairwise, then the
 * last k % 8 products one by one.  Two rows a pass share b's loads (an odd last row is
 * computed as a pair with itself); each row's sums are in the one-row order, so the bits do
 * not depend on the row count.  The portable loop, compiled for SSE2, took 80 cycles a row of
 * 128 (a GPT head's 65th column, Note [GEMM last columns] in gemm.c); one row a call, with
 * its C update, 31 ns a row of 64 (8192 x 64 @ 64 x 1, 0.25x PyTorch's time on Zen 3). */
__attribute__((target("avx2,fma"))) static void
dot_f4_fma(const void *a_, int64_t lda, const void *b_, int64_t k, int64_t rows, void *out_)
{
    const float *b = (const float *)b_;
    float *out = (float *)out_;
    for (int64_t r = 0; r < rows; r += 2) {
        const float *a = (const float *)a_ + r * lda, *c = r + 1 < rows ? a + lda : a;
        __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps();
        __m256 s3 = _mm256_setzero_ps(), t0 = _mm256_setzero_ps(), t1 = _mm256_setzero_ps();
        __m256 t2 = _mm256_setzero_ps(), t3 = _mm256_setzero_ps();
        int64_t p = 0;
        for (; p + 32 <= k; p += 32) {
            __m256 x0 = _mm256_loadu_ps(b + p), x1 = _mm256_loadu_ps(b + p + 8);
            __m256 x2 = _mm256_loadu_ps(b + p + 16), x3 = _mm256_loadu_ps(b + p + 24);
            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + p), x0, s0);
            t0 = _mm256_fmadd_ps(_mm256_loadu_ps(c + p), x0, t0);
            s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + p + 8), x1, s1);
            t1 = _mm256_fmadd_ps(_mm256_loadu_ps(c + p + 8), x1, t1);
            s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + p + 16), x2, s2);
            t2 = _mm256_fmadd_ps(_mm256_loadu_ps(c + p + 16), x2, t2);
            s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + p + 24), x3, s3);
            t3 = _mm256_fmadd_ps(_mm256_loadu_ps(c + p + 24), x3, t3);
        }
        for (; p + 8 <= k; p += 8) {
            __m256 x0 = _mm256_loadu_ps(b + p);
            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + p), x0, s0);
            t0 = _mm256_fmadd_ps(_mm256_loadu_ps(c + p), x0, t0);
        }
        float sa = sum_f4_fma(s0, s1, s2, s3), sc = sum_f4_fma(t0, t1, t2, t3);
        for (; p < k; p++) {
            sa = fmaf(a[p], b[p], sa);
            sc = fmaf(c[p], b[p], sc);
        }
        out[r] = sa;
        if (r + 1 < rows) {
            out[r + 1] = sc;
        }
    }
}

/* acc[i] += sum over p < k of x[p] * a[p * lda + i] for i < n: a matrix-vector product whose
 * columns are contiguous, four columns per pass over acc. */
#define DEFINE_AXPY(ETAG, T)                                                              \
    static void                                                                           \
    axpy_##ETAG(const char *a_, int64_t lda, const void *x_, int64_t k, int64_t n,        \
                void *acc_)                                                               \
    {                                                                                     \
        const T *a = (const T *)a_, *x = (const T *)x_;                                   \
        T *acc = (T *)acc_;                                                               \
        int64_t p = 0;                                                                    \
        for (; p + 4 <= k; p += 4) {                                                      \
            const T *a0 = a + p * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;    \
            const T x0 = x[p], x1 = x[p + 1], x2 = x[p + 2], x3 = x[p + 3];               \
            for (int64_t i = 0; i < n; i++) {                                             \
                acc[i] += x0 * a0[i] + x1 * a1[i] + x2 * a2[i] + x3 * a3[i];              \
            }                                                                             \
        }                                                                                 \
        for (; p < k; p++) {                                                              \
            const T *ap = a + p * lda, xp = x[p];                                         \
            for (int64_t i = 0; i < n; i++) {                                             \
                acc[i] += xp * ap[i];                                                     \
            }                                                                             \
        }                                                                                 \
    }

DEFINE_AXPY(f4, float)
DEFINE_AXPY(f8, double)
DEFINE_AXPY(i8, uint64_t)

/* Block sizes: an MC x KC block of A fits L2, a KC x NR sliver of B streams from L2 (Note
 * [GEMM K block] in gemm.c).  Every engine of one type cuts K at the same KC, so they all
 * give the same bits (Note [GEMM blocking]). */
#define F4_PACKS(F4)                                                                      \
    {[PTL_DTYPE_FLOAT32] = F4, [PTL_DTYPE_FLOAT16] = pack_f4_f2,                          \
     [PTL_DTYPE_BFLOAT16] = pack_f4_bf}
static const GemmEngine engine_f4 = {
    F4_MR, F4_NR, 512, 144, 2048, 0, sizeof(float), PTL_DTYPE_FLOAT32,
    kernel_f4, NULL, update_f4, dot_f4, axpy_f4, F4_PACKS(pack_f4_f4), NULL, NULL, NULL, NULL,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    NULL, NULL, NULL,
};
static const GemmEngine engine_f4_avx2 = {
    F4_MR, F4_NR, 512, 144, 2048, 12, sizeof(float), PTL_DTYPE_FLOAT32,
    NULL, tile_f4_avx2, update_f4, dot_f4_fma, axpy_f4, F4_PACKS(pack_f4_avx2), tile4_f4_avx2,
    NULL, NULL, pair4_f4_avx2, half_f4_avx2, quarter_f4_avx2, direct_a_f4_avx2, direct_a4_f4_avx2,
    NULL, direct_at_f4_avx2, direct_at_pack_f4_avx2, direct_at_pack2_f4_avx2,
    tile_bpack_f4_avx2, direct_a_bpack_f4_avx2, direct_at_bpack_f4_avx2, tile_ct_f4_avx2,
    direct_a_ct_f4_avx2, pair4_ct_f4_avx2,
};
static const GemmEngine engine_f4_avx512 = {
    F4_AVX512_MR, F4_AVX512_NR, 512, 192, 1024, INT64_MAX, sizeof(float), PTL_DTYPE_FLOAT32,
    NULL, tile_f4_avx512, update_f4, dot_f4_fma, axpy_f4, F4_PACKS(pack_f4_avx2),
    tile4_f4_avx512, tile8_f4_avx512, tile10_f4_avx512, NULL, half_f4_avx512, quarter_f4_avx512,
    direct_a_f4_avx512, direct_a4_f4_avx512, direct_a8_f4_avx512, direct_at_f4_avx512, NULL,
    NULL, NULL, NULL, NULL,
    NULL, NULL, NULL,
};
#undef F4_PACKS
static const GemmEngine engine_f8 = {
    F8_MR, F8_NR, 256, 72, 1024, 0, sizeof(double), PTL_DTYPE_FLOAT64,
    kernel_f8, NULL, update_f8, dot_f8, axpy_f8, {[PTL_DTYPE_FLOAT64] = pack_f8_f8}, NULL, NULL,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    NULL, NULL, NULL,
};
static const GemmEngine engine_f8_avx2 = {
    F8_MR, F8_NR, 256, 72, 1024, 64, sizeof(double), PTL_DTYPE_FLOAT64,
    NULL, tile_f8_avx2, update_f8, dot_f8, axpy_f8, {[PTL_DTYPE_FLOAT64] = pack_f8_f8},
    tile4_f8_avx2, NULL, NULL, pair4_f8_avx2, half_f8_avx2, quarter_f8_avx2, direct_a_f8_avx2,
    direct_a4_f8_avx2, NULL, direct_at_f8_avx2, direct_at_pack_f8_avx2, direct_at_pack2_f8_avx2,
    tile_bpack_f8_avx2, direct_a_bpack_f8_avx2, direct_at_bpack_f8_avx2,
    NULL, NULL, NULL,
};
static const GemmEngine engine_f8_avx512 = {
    F8_AVX512_MR, F8_AVX512_NR, 256, 96, 1024, 24, sizeof(double), PTL_DTYPE_FLOAT64,
    NULL, tile_f8_avx512, update_f8, dot_f8, axpy_f8, {[PTL_DTYPE_FLOAT64] = pack_f8_f8},
    tile4_f8_avx512, tile8_f8_avx512, tile10_f8_avx512, NULL, half_f8_avx512, quarter_f8_avx512,
    direct_a_f8_avx512, direct_a4_f8_avx512, direct_a8_f8_avx512, direct_at_f8_avx512, NULL,
    NULL, NULL, NULL, NULL,
    NULL, NULL, NULL,
};
static const GemmEngine engine_i8 = {
    I8_MR, I8_NR, 256, 64, 1024, 0, sizeof(uint64_t), PTL_DTYPE_INT64,
    kernel_i8, NULL, update_i8, dot_i8, axpy_i8,
    {[PTL_DTYPE_UINT8] = pack_i8_u1, [PTL_DTYPE_INT8] = pack_i8_i1,
     [PTL_DTYPE_INT16] = pack_i8_i2, [PTL_DTYPE_INT32] = pack_i8_i4,
     [PTL_DTYPE_INT64] = pack_i8_i8},
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    NULL, NULL, NULL,
};

/* The engine for C's dtype on this CPU (PTL_CPU_CAPABILITY lowers the choice), or NULL. */
const GemmEngine *
ptl_gemm_engine(PtlDtype dtype)
{
    PtlCpuCapability cap = ptl_cpu_capability();
    if (dtype == PTL_DTYPE_FLOAT64) {
        return cap >= PTL_CPU_AVX512 ? &engine_f8_avx512
               : cap >= PTL_CPU_AVX2 ? &engine_f8_avx2
                                     : &engine_f8;
    }
    if (ptl_dtype_is_floating(dtype)) {
        return cap >= PTL_CPU_AVX512 ? &engine_f4_avx512
               : cap >= PTL_CPU_AVX2 ? &engine_f4_avx2
                                     : &engine_f4;
    }
    return ptl_dtype_is_integral(dtype, 0) ? &engine_i8 : NULL;
}
