/* attention.c -- _scaled_dot_product_flash_attention_for_cpu and its backward.  Mirrors
 * ATen/native/transformers/attention.cpp and ATen/native/cpu/FlashAttentionKernel.cpp.
 *
 * Note [Flash attention on the CPU]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * query [B, H, L, E], key [B, H, S, E], value [B, H, S, E] -> out [B, H, L, E] and
 * logsumexp [B, H, L], with s_ij = scale q_i . k_j + mask_ij (-inf above the diagonal j > i
 * when causal: PyTorch's top-left alignment) and out_i = sum_j softmax_j(s_i) v_j.  No
 * [L, S] matrix is ever made:
 *
 * - Forward, one task per (batch, head, block of SDPA_BQ queries): the keys are walked in
 *   blocks of SDPA_BK (the blocks above the diagonal skipped when causal); each block's
 *   scores come from a register-tiled product (sdpa_mm) with the head's keys packed
 *   transposed (once per task and head, for all its query blocks), then an online softmax
 *   keeps the running max m_i and sum l_i, rescaling the accumulated output when the max
 *   grows: out_i = acc_i / l_i, logsumexp_i = m_i + log l_i.  A row cut by the causal
 *   diagonal computes scores and exponentials only up to it (rounded up to a vector).
 * - Backward, one task per (batch, head): with D_i = dout_i . out_i, for each key block and
 *   each query block that sees it, the probabilities are recomputed from the saved
 *   logsumexp, p_ij = exp(s_ij - lse_i), and dV += P^T dO, dS = P (dO V^T - D) scale,
 *   dQ += dS K, dK += dS^T Q.  Every sum runs in a fixed order, whatever the thread count.
 *   The first product that reaches a gradient row writes it (dQ's: key block 0; dK's and
 *   dV's: the first query block that sees their key block) instead of adding to zeros
 *   stored beforehand, which is the same sum; only rows no block reaches (a causal key past
 *   every query, L or S zero) are zeroed.  The zeroing was a memset per row: 192 calls per
 *   GPT head, a tenth of the backward (one thread, strided heads: 1.00-1.08 -> 0.84-0.92 ms
 *   on a loaded machine).
 * - A row's step, float32 on AVX2 without a mask, runs fused with the bits of the separate
 *   passes: forward, the scaling, -inf past the causal cut and the row maximum in one pass,
 *   then the exponentials and their sum; backward, scores, probabilities and score gradients
 *   in one pass.  Past its width a row's probabilities are 0 in one vector of zeros (the
 *   band's tiles read at most SDPA_MR - 1 columns past it), and the logsumexp of a query
 *   block's rows comes from the vector log, eight rows at a time.  Together: the forward
 *   0.44 -> 0.36 ms, the backward 0.74 -> 0.67 ms (a GPT block's attention, d128 T64 batch
 *   16, one thread, warm caches).
 * - When causal, the products of a block that the diagonal crosses skip what it cuts off
 *   (SdpaBand): the score tiles wholly above it, and the terms of exact-zero probability in
 *   the sums over keys (P V, dS K) and over queries (P^T dO, dS^T Q).  Leaving out adds of
 *   exact zeros keeps the bits; in a GPT block (T64, blocks of 32 queries and 64 keys) the
 *   forward did half again the products it needed and the backward twice.
 * - Each task asks the cache for the next item's rows before computing its own: in a
 *   transformer the heads are views of one projection ([B, L, 3, H, E]), so a head's rows are
 *   a few cache lines each, kilobytes apart, and read on demand every line was a miss the
 *   loop stalled on (a GPT block's attention, d128 T64 batch 16, one thread: 0.43 ms per
 *   forward warm; inside the training step 0.72-0.76 ms with the prefetch, 0.79-0.94 ms
 *   without).
 *
 * A row whose every key is masked (-inf) gives zeros and a logsumexp of +inf, so that the
 * recomputed probabilities of that row are zeros too (PyTorch stores 0 there).  float32
 * accumulates in float, float64 in double; float16 and bfloat16 run in float32.  The inner
 * loops are compiled twice, for the baseline and for AVX2 with FMA (Note [Loop clones] in
 * loops.h describes the trick), and chosen by ptl_cpu_capability().  CUDA tensors share these
 * kernels' checks, casts and outputs, and their last step goes to device_attention.h's hook
 * (Note [CUDA flash attention] in src/cuda/attention_plan.h).
 *
 * Note [Attention with NaN]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~
 * A nan score (a nan in the query row, in a key, or in the mask) makes the row's sum l nan,
 * so its output and logsumexp are nan, as softmax gives (and PyTorch's math attention).  The
 * exponentials make l nan where the block has a number; a block whose scores are all -inf
 * or nan (the row maximum skips nan, so it looks masked) sets l to nan where a score is nan.
 * PyTorch's flash kernel agrees where the row has a number (nan, nan), but a row whose every
 * score is nan it takes for a masked one: output 0, logsumexp 0. */
#include <math.h>
#include <stdlib.h>

#include "../../c10/cpu_features.h"
#include "../../c10/parallel.h"
#include "device_attention.h"
#include "gemm.h"
#include "nn_common.h"
#include "vec_math.h"

#define SDPA_BQ 32
#define SDPA_BK 64
#define SDPA_MR 4
#define SDPA_INLINE static inline __attribute__((always_inline))

/* The job's operands and sizes: device_attention.h's, which the CUDA kernels share. */
typedef PtlDeviceAttnMat SdpaMat;
typedef PtlDeviceAttnJob SdpaJob;

/* The causal band of a product C (= or +=) A B: row i of C reads A's column (B's row) p only
 * when i - klo <= p <= i + khi, and needs C's column j only when j <= i + nhi; whatever lies
 * outside is a probability or score gradient that is exactly 0, or a score past the causal
 * cut.  Tiles compute whole vectors, so a needed row is computed at least up to its limit
 * rounded up to 8 columns (the width sdpa_row_scores pads to); past that its columns are left
 * unwritten.  SDPA_NO_BAND: no limit (not causal). */
typedef struct {
    int64_t klo, khi, nhi;
} SdpaBand;
#define SDPA_FAR ((int64_t)1 << 40)
#define SDPA_NO_BAND ((SdpaBand){SDPA_FAR, SDPA_FAR, SDPA_FAR})

/* The k range [*p0, *p1) of the rows [i, i + R) under band bd. */
SDPA_INLINE void
sdpa_band_k(SdpaBand bd, int64_t i, int64_t R, int64_t k, int64_t *p0, int64_t *p1)
{
    *p0 = i - bd.klo > 0 ? i - bd.klo : 0;
    *p1 = i + R + bd.khi < k ? i + R + bd.khi : k;
}

/* The width of a row that sees nv of a block's n columns: nv rounded up to whole vectors of
 * 8, at most n (sdpa_row_scores). */
SDPA_INLINE int64_t
sdpa_width(int64_t nv, int64_t n)
{
    return (nv + 7) / 8 * 8 < n ? (nv + 7) / 8 * 8 : n;
}

/* ---- typed inner loops, stamped for float (f4) and double (f8) ---- */

/* C[m x n] (= or +=) A[m x k] B[k x n] within band bd: A read through (ars, acs), B rows of
 * stride ldb, C rows of stride ldc, both contiguous along n.  Full tiles of SDPA_MR rows by NR
 * columns keep their sums in registers; `fma` (a constant after inlining) selects fused
 * multiply-adds for the AVX2 twin. */
#define DEFINE_SDPA_MM(T, DT, NR)                                                          \
    SDPA_INLINE void sdpa_mm_##DT(int fma, int64_t m, int64_t n, int64_t k, const T *a,   \
                                  int64_t ars, int64_t acs, const T *b, int64_t ldb, T *c, \
                                  int64_t ldc, int acc, SdpaBand bd)                      \
    {                                                                                     \
        int64_t i = 0, p0, p1;                                                            \
        for (; i + SDPA_MR <= m; i += SDPA_MR) {                                          \
            int64_t j = 0;                                                                \
            sdpa_band_k(bd, i, SDPA_MR, k, &p0, &p1);                                     \
            for (; j + NR <= n && j < i + SDPA_MR + bd.nhi; j += NR) {                    \
                T t[SDPA_MR][NR];                                                         \
                for (int r = 0; r < SDPA_MR; r++) {                                       \
                    for (int x = 0; x < NR; x++) {                                        \
                        t[r][x] = acc ? c[(i + r) * ldc + j + x] : 0;                     \
                    }                                                                     \
                }                                                                         \
                for (int64_t p = p0; p < p1; p++) {                                       \
                    const T *bp = b + p * ldb + j;                                        \
                    for (int r = 0; r < SDPA_MR; r++) {                                   \
                        const T ar = a[(i + r) * ars + p * acs];                          \
                        for (int x = 0; x < NR; x++) {                                    \
                            t[r][x] = mad_##DT(fma, ar, bp[x], t[r][x]);                  \
                        }                                                                 \
                    }                                                                     \
                }                                                                         \
                for (int r = 0; r < SDPA_MR; r++) {                                       \
                    for (int x = 0; x < NR; x++) {                                        \
                        c[(i + r) * ldc + j + x] = t[r][x];                               \
                    }                                                                     \
                }                                                                         \
            }                                                                             \
            if (j < n && j < i + SDPA_MR + bd.nhi) {                                      \
                sdpa_rows_##DT(fma, i, i + SDPA_MR, j, n, p0, p1, a, ars, acs, b, ldb, c, \
                               ldc, acc);                                                 \
            }                                                                             \
        }                                                                                 \
        for (; i < m; i++) {                                                              \
            sdpa_band_k(bd, i, 1, k, &p0, &p1);                                           \
            sdpa_rows_##DT(fma, i, i + 1, 0, n, p0, p1, a, ars, acs, b, ldb, c, ldc, acc); \
        }                                                                                 \
    }

/* a b + c, fused when `fma` (a constant after inlining) */
#define DEFINE_SDPA_MAD(T, DT, FMA_FN)                                                     \
    SDPA_INLINE T mad_##DT(int fma, T a, T b, T c)                                        \
    {                                                                                     \
        return fma ? FMA_FN(a, b, c) : a * b + c;                                         \
    }

/* The edges of sdpa_mm: rows [i0, i1), columns [j0, j1), k range [p0, p1), one row at a
 * time. */
#define DEFINE_SDPA_ROWS(T, DT)                                                            \
    SDPA_INLINE void sdpa_rows_##DT(int fma, int64_t i0, int64_t i1, int64_t j0,           \
                                    int64_t j1, int64_t p0, int64_t p1, const T *a,       \
                                    int64_t ars, int64_t acs, const T *b, int64_t ldb,    \
                                    T *c, int64_t ldc, int acc)                           \
    {                                                                                     \
        for (int64_t i = i0; i < i1; i++) {                                               \
            T *restrict ci = c + i * ldc;                                                 \
            if (!acc) {                                                                   \
                for (int64_t j = j0; j < j1; j++) {                                       \
                    ci[j] = 0;                                                            \
                }                                                                         \
            }                                                                             \
            for (int64_t p = p0; p < p1; p++) {                                           \
                const T ap = a[i * ars + p * acs];                                        \
                const T *restrict bp = b + p * ldb;                                       \
                for (int64_t j = j0; j < j1; j++) {                                       \
                    ci[j] = mad_##DT(fma, ap, bp[j], ci[j]);                              \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
    }

/* dst[c * ld + r] = src[r * rs + c]: `rows` rows of `cols` contiguous elements, packed
 * transposed (the key or value block as the right operand of a product). */
#define DEFINE_SDPA_PACK_T(T, DT)                                                          \
    SDPA_INLINE void sdpa_pack_t_##DT(const T *src, int64_t rs, int64_t rows, int64_t cols, \
                                      T *dst, int64_t ld, int fma)                        \
    {                                                                                     \
        (void)fma;                                                                        \
        for (int64_t r = 0; r < rows; r++) {                                              \
            for (int64_t c = 0; c < cols; c++) {                                          \
                dst[c * ld + r] = src[r * rs + c];                                        \
            }                                                                             \
        }                                                                                 \
    }

/* The scores s[0..n) of one row in place: s scale + mask (mask may be NULL, read with
 * stride ms).  Columns past a causal cut are never computed: the callers give them
 * probability 0. */
#define DEFINE_SDPA_SCORES(T, DT)                                                          \
    SDPA_INLINE void sdpa_scores_##DT(T *restrict s, int64_t n, T scale, const T *mask,    \
                                      int64_t ms)                                         \
    {                                                                                     \
        if (mask != NULL && ms == 1) {                                                    \
            for (int64_t j = 0; j < n; j++) {                                             \
                s[j] = s[j] * scale + mask[j];                                            \
            }                                                                             \
        }                                                                                 \
        else if (mask != NULL) {                                                          \
            for (int64_t j = 0; j < n; j++) {                                             \
                s[j] = s[j] * scale + mask[j * ms];                                       \
            }                                                                             \
        }                                                                                 \
        else {                                                                            \
            for (int64_t j = 0; j < n; j++) {                                             \
                s[j] = s[j] * scale;                                                      \
            }                                                                             \
        }                                                                                 \
    }

/* One row's online-softmax step over a block of scores s[0..n): the running max *m and
 * sum *l advance, acc[0..ev) is rescaled, and s becomes the block's exp(s - m). */
#define DEFINE_SDPA_ONLINE(T, DT, EXP)                                                     \
    SDPA_INLINE void sdpa_online_##DT(T *restrict s, int64_t n, T *m, T *l,                \
                                      T *restrict acc, int64_t ev, int fma)               \
    {                                                                                     \
        (void)fma;                                                                        \
        T mx = *m;                                                                        \
        for (int64_t j = 0; j < n; j++) {                                                 \
            mx = s[j] > mx ? s[j] : mx;                                                   \
        }                                                                                 \
        if (mx == -(T)INFINITY) { /* every score -inf or nan: Note [Attention with NaN] */ \
            for (int64_t j = 0; j < n; j++) {                                             \
                *l = s[j] == s[j] ? *l : (T)NAN;                                          \
                s[j] = 0;                                                                 \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        T sum = 0;                                                                        \
        for (int64_t j = 0; j < n; j++) {                                                 \
            s[j] = EXP(s[j] - mx);                                                        \
            sum += s[j];                                                                  \
        }                                                                                 \
        if (mx != *m) {                                                                   \
            T alpha = EXP(*m - mx);                                                       \
            for (int64_t e = 0; e < ev; e++) {                                            \
                acc[e] *= alpha;                                                          \
            }                                                                             \
            *l *= alpha;                                                                  \
        }                                                                                 \
        *l += sum;                                                                        \
        *m = mx;                                                                          \
    }

/* The backward's block of one row: p = exp(s - lse) in s (s already holds the scores),
 * then dp becomes dS = p (dp - d) scale. */
#define DEFINE_SDPA_DSCORES(T, DT, EXP)                                                    \
    SDPA_INLINE void sdpa_dscores_##DT(T *restrict s, T *restrict dp, int64_t n, T lse,    \
                                       T d, T scale, int fma)                             \
    {                                                                                     \
        (void)fma;                                                                        \
        for (int64_t j = 0; j < n; j++) {                                                 \
            s[j] = EXP(s[j] - lse);                                                       \
            dp[j] = s[j] * (dp[j] - d) * scale;                                           \
        }                                                                                 \
    }

/* d[r] = sum over e of g[r e] o[r e] for the rows r < n (the backward's D = dO . O) */
#define DEFINE_SDPA_ROWDOTS(T, DT)                                                         \
    SDPA_INLINE void sdpa_rowdots_##DT(const T *g, int64_t grs, const T *o, int64_t ors,   \
                                       int64_t n, int64_t ev, T *d, T *tmp, int fma)      \
    {                                                                                     \
        (void)tmp;                                                                        \
        (void)fma;                                                                        \
        for (int64_t r = 0; r < n; r++) {                                                 \
            T sum = 0;                                                                    \
            for (int64_t e = 0; e < ev; e++) {                                            \
                sum += g[r * grs + e] * o[r * ors + e];                                   \
            }                                                                             \
            d[r] = sum;                                                                   \
        }                                                                                 \
    }

/* lse[r] = m[r] + log l[r] over the rows r < n, +inf where l[r] is 0 (no key seen), nan
 * where it is nan */
#define DEFINE_SDPA_LSE(T, DT, LOG)                                                        \
    SDPA_INLINE void sdpa_lse_##DT(const T *m, const T *l, int64_t n, T *lse, int fma)     \
    {                                                                                     \
        (void)fma;                                                                        \
        for (int64_t r = 0; r < n; r++) {                                                 \
            lse[r] = l[r] == 0 ? (T)INFINITY : m[r] + LOG(l[r]);                          \
        }                                                                                 \
    }

DEFINE_SDPA_MAD(float, f4p, __builtin_fmaf)
DEFINE_SDPA_MAD(double, f8, __builtin_fma)
DEFINE_SDPA_ROWS(float, f4p)
DEFINE_SDPA_ROWS(double, f8)
DEFINE_SDPA_MM(float, f4p, 16)
DEFINE_SDPA_MM(double, f8, 8)
DEFINE_SDPA_PACK_T(float, f4p)
DEFINE_SDPA_PACK_T(double, f8)
DEFINE_SDPA_SCORES(float, f4)
DEFINE_SDPA_SCORES(double, f8)
DEFINE_SDPA_ONLINE(float, f4p, ptl_vm_expf)
DEFINE_SDPA_ONLINE(double, f8, ptl_vm_exp)
DEFINE_SDPA_DSCORES(float, f4p, ptl_vm_expf)
DEFINE_SDPA_DSCORES(double, f8, ptl_vm_exp)
DEFINE_SDPA_ROWDOTS(float, f4p)
DEFINE_SDPA_ROWDOTS(double, f8)
DEFINE_SDPA_LSE(float, f4p, logf)
DEFINE_SDPA_LSE(double, f8, log)
#undef DEFINE_SDPA_MAD
#undef DEFINE_SDPA_MM
#undef DEFINE_SDPA_ROWS
#undef DEFINE_SDPA_PACK_T
#undef DEFINE_SDPA_SCORES
#undef DEFINE_SDPA_ONLINE
#undef DEFINE_SDPA_DSCORES
#undef DEFINE_SDPA_ROWDOTS
#undef DEFINE_SDPA_LSE

/* ---- float32 with AVX2 and FMA: the product's tiles, row maxima and exponentials ---- */

#ifdef PTL_HAVE_AVX2_KERNELS
/* C[R x 16-column chunk] (= or +=) A B over k range [p0, p1), as sdpa_mm, R <= SDPA_MR rows
 * (a constant after inlining).  A chunk that crosses the matrix edge (`full` 0) masks its
 * lanes with m0, m1; full chunks use plain loads and stores (masked stores are slow on AMD's
 * cores). */
#define SDPA_LD(P, M) (full ? _mm256_loadu_ps(P) : _mm256_maskload_ps(P, M))
SDPA_INLINE PTL_AVX2 void
sdpa_tile_f4_avx2(int R, int full, int64_t p0, int64_t p1, const float *a, int64_t ars,
                  int64_t acs, const float *b, int64_t ldb, float *c, int64_t ldc, int acc,
                  __m256i m0, __m256i m1)
{
    __m256 t0[SDPA_MR], t1[SDPA_MR];
    for (int r = 0; r < R; r++) {
        t0[r] = acc ? SDPA_LD(c + r * ldc, m0) : _mm256_setzero_ps();
        t1[r] = acc ? SDPA_LD(c + r * ldc + 8, m1) : _mm256_setzero_ps();
    }
    for (int64_t p = p0; p < p1; p++) {
        __m256 b0 = SDPA_LD(b + p * ldb, m0), b1 = SDPA_LD(b + p * ldb + 8, m1);
        for (int r = 0; r < R; r++) {
            __m256 ar = _mm256_broadcast_ss(a + r * ars + p * acs);
            t0[r] = _mm256_fmadd_ps(ar, b0, t0[r]);
            t1[r] = _mm256_fmadd_ps(ar, b1, t1[r]);
        }
    }
    for (int r = 0; r < R; r++) {
        if (full) {
            _mm256_storeu_ps(c + r * ldc, t0[r]);
            _mm256_storeu_ps(c + r * ldc + 8, t1[r]);
        }
        else {
            _mm256_maskstore_ps(c + r * ldc, m0, t0[r]);
            _mm256_maskstore_ps(c + r * ldc + 8, m1, t1[r]);
        }
    }
}
#undef SDPA_LD

/* The rows of the 16-column chunk j, in tiles of SDPA_MR rows and a last tile of fewer; the
 * tiles whose rows all end before column j under band bd are skipped. */
SDPA_INLINE PTL_AVX2 void
sdpa_chunk_f4_avx2(int full, int64_t m, int64_t j, int64_t k, const float *a, int64_t ars,
                   int64_t acs, const float *b, int64_t ldb, float *c, int64_t ldc, int acc,
                   SdpaBand bd, __m256i m0, __m256i m1)
{
    /* the first tile [i, i + SDPA_MR) with j < i + SDPA_MR + bd.nhi */
    const int64_t first = j - bd.nhi - SDPA_MR + 1;
    int64_t i = first > 0 ? (first + SDPA_MR - 1) / SDPA_MR * SDPA_MR : 0, p0, p1;
    b += j;
    c += j;
    for (; i + SDPA_MR <= m; i += SDPA_MR) {
        sdpa_band_k(bd, i, SDPA_MR, k, &p0, &p1);
        sdpa_tile_f4_avx2(SDPA_MR, full, p0, p1, a + i * ars, ars, acs, b, ldb, c + i * ldc,
                          ldc, acc, m0, m1);
    }
    if (i >= m) {
        return;
    }
    sdpa_band_k(bd, i, m - i, k, &p0, &p1);
    a += i * ars;
    c += i * ldc;
    switch (m - i) {
    case 3:
        sdpa_tile_f4_avx2(3, full, p0, p1, a, ars, acs, b, ldb, c, ldc, acc, m0, m1);
        break;
    case 2:
        sdpa_tile_f4_avx2(2, full, p0, p1, a, ars, acs, b, ldb, c, ldc, acc, m0, m1);
        break;
    default:
        sdpa_tile_f4_avx2(1, full, p0, p1, a, ars, acs, b, ldb, c, ldc, acc, m0, m1);
        break;
    }
}

static PTL_AVX2 void
sdpa_mm_f4_avx2(int64_t m, int64_t n, int64_t k, const float *a, int64_t ars, int64_t acs,
                const float *b, int64_t ldb, float *c, int64_t ldc, int acc, SdpaBand bd)
{
    __m256i ones = _mm256_set1_epi32(-1);
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        sdpa_chunk_f4_avx2(1, m, j, k, a, ars, acs, b, ldb, c, ldc, acc, bd, ones, ones);
    }
    if (j < n) {
        __m256i m0 = ptl_vm_tail_mask(n - j >= 8 ? 8 : n - j);
        __m256i m1 = ptl_vm_tail_mask(n - j > 8 ? n - j - 8 : 0);
        sdpa_chunk_f4_avx2(0, m, j, k, a, ars, acs, b, ldb, c, ldc, acc, bd, m0, m1);
    }
}

/* max(init, s[0..n)) */
SDPA_INLINE PTL_AVX2 float
sdpa_rowmax_f4_avx2(const float *s, int64_t n, float init)
{
    __m256 mv = _mm256_set1_ps(init);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        mv = _mm256_max_ps(mv, _mm256_loadu_ps(s + j));
    }
    mv = _mm256_max_ps(mv, _mm256_permute2f128_ps(mv, mv, 1));
    mv = _mm256_max_ps(mv, _mm256_shuffle_ps(mv, mv, 0x4e));
    mv = _mm256_max_ps(mv, _mm256_shuffle_ps(mv, mv, 0xb1));
    float mx = _mm256_cvtss_f32(mv);
    for (; j < n; j++) {
        mx = s[j] > mx ? s[j] : mx;
    }
    return mx;
}

/* exp(x) with ptl_vm_exp_ps's bits, on its fast path also when some lanes are -inf (exp 0):
 * the scores past a causal cut or under a -inf mask, which otherwise sent the vector of
 * every row's diagonal through the clamps and blends of the general path. */
SDPA_INLINE PTL_AVX2 __m256
sdpa_exp_f4_avx2(__m256 x)
{
    const __m256 lo = _mm256_set1_ps(PTL_VM_NORMAL_LO_ps);
    const __m256 inside = _mm256_and_ps(_mm256_cmp_ps(x, lo, _CMP_GE_OQ),
                                        _mm256_cmp_ps(x, _mm256_set1_ps(PTL_VM_NORMAL_HI_ps),
                                                      _CMP_LE_OQ));
    const __m256 ninf = _mm256_cmp_ps(x, _mm256_set1_ps(-INFINITY), _CMP_EQ_OQ);
    if (_mm256_movemask_ps(_mm256_or_ps(inside, ninf)) != 0xff) {
        return ptl_vm_exp_ps(x);
    }
    return _mm256_and_ps(ptl_vm_exp_normal_ps(_mm256_max_ps(x, lo)), inside);
}

/* s[j] = exp(s[j] - sub) over s[0..n); returns their sum */
SDPA_INLINE PTL_AVX2 float
sdpa_expsum_f4_avx2(float *s, int64_t n, float sub)
{
    __m256 sv = _mm256_setzero_ps(), subv = _mm256_set1_ps(sub);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 e = sdpa_exp_f4_avx2(_mm256_sub_ps(_mm256_loadu_ps(s + j), subv));
        _mm256_storeu_ps(s + j, e);
        sv = _mm256_add_ps(sv, e);
    }
    float lanes[8], tail = 0;
    _mm256_storeu_ps(lanes, sv);
    for (; j < n; j++) {
        s[j] = ptl_vm_expf(s[j] - sub);
        tail += s[j];
    }
    return tail + ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) +
           ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
}

/* A block of a row whose scores s[0..n) are all -inf or nan: probabilities 0, and *l nan
 * where a score is nan (Note [Attention with NaN]) */
SDPA_INLINE void
sdpa_empty_block_f4(float *s, int64_t n, float *l)
{
    for (int64_t j = 0; j < n; j++) {
        *l = s[j] == s[j] ? *l : NAN;
        s[j] = 0;
    }
}

/* sdpa_online_f4p with the AVX2 row maximum and exponentials */
static PTL_AVX2 void
sdpa_online_f4_avx2(float *restrict s, int64_t n, float *m, float *l, float *restrict acc,
                    int64_t ev)
{
    float mx = sdpa_rowmax_f4_avx2(s, n, *m);
    if (mx == -INFINITY) {
        sdpa_empty_block_f4(s, n, l);
        return;
    }
    float sum = sdpa_expsum_f4_avx2(s, n, mx);
    if (mx != *m) {
        float alpha = ptl_vm_expf(*m - mx);
        for (int64_t e = 0; e < ev; e++) {
            acc[e] *= alpha;
        }
        *l *= alpha;
    }
    *l += sum;
    *m = mx;
}

/* sdpa_dscores_f4p with AVX2 */
static PTL_AVX2 void
sdpa_dscores_f4_avx2(float *restrict s, float *restrict dp, int64_t n, float lse, float d,
                     float scale)
{
    __m256 lv = _mm256_set1_ps(lse), dv = _mm256_set1_ps(d), sc = _mm256_set1_ps(scale);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 p = sdpa_exp_f4_avx2(_mm256_sub_ps(_mm256_loadu_ps(s + j), lv));
        __m256 g = _mm256_sub_ps(_mm256_loadu_ps(dp + j), dv);
        _mm256_storeu_ps(s + j, p);
        _mm256_storeu_ps(dp + j, _mm256_mul_ps(_mm256_mul_ps(p, g), sc));
    }
    sdpa_dscores_f4p(s + j, dp + j, n - j, lse, d, scale, 1);
}

/* sdpa_lse_f4p eight rows at a time by the vector log (a scalar logf per row was a tenth of
 * the forward's own time) */
static PTL_AVX2 void
sdpa_lse_f4_avx2(const float *m, const float *l, int64_t n, float *lse)
{
    for (int64_t r = 0; r < n; r += 8) {
        float lt[8] = {1, 1, 1, 1, 1, 1, 1, 1}, mt[8] = {0}, out[8];
        const int64_t k = n - r < 8 ? n - r : 8;
        memcpy(lt, l + r, sizeof(float) * (size_t)k);
        memcpy(mt, m + r, sizeof(float) * (size_t)k);
        __m256 lv = _mm256_loadu_ps(lt);
        __m256 y = _mm256_add_ps(_mm256_loadu_ps(mt), ptl_vm_log_ps(lv));
        y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY),
                             _mm256_cmp_ps(lv, _mm256_setzero_ps(), _CMP_EQ_OQ));
        _mm256_storeu_ps(out, y);
        memcpy(lse + r, out, sizeof(float) * (size_t)k);
    }
}

/* The lanes of the columns j..j + 7 at or past nv, as a mask */
SDPA_INLINE PTL_AVX2 __m256
sdpa_past_f4_avx2(int64_t j, int64_t nv)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i left = _mm256_set1_epi32((int)(nv - j < 8 ? nv - j : 8));
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_add_epi32(lane, _mm256_set1_epi32(1)),
                                                  left));
}

/* A row's width w (sdpa_row_scores) and its scores s scale in place, -inf past nv, for the
 * whole vectors below w; returns the maximum of those and init.  The portable functions do
 * the rest (the columns past the last whole vector: only where w == n is not a multiple of
 * 8). */
SDPA_INLINE PTL_AVX2 float
sdpa_scale_max_f4_avx2(float *s, int64_t nv, int64_t w, float scale, float init)
{
    const __m256 sc = _mm256_set1_ps(scale), ninf = _mm256_set1_ps(-INFINITY);
    __m256 mv = _mm256_set1_ps(init);
    for (int64_t j = 0; j + 8 <= w; j += 8) {
        __m256 x = _mm256_mul_ps(_mm256_loadu_ps(s + j), sc);
        x = _mm256_blendv_ps(x, ninf, sdpa_past_f4_avx2(j, nv));
        _mm256_storeu_ps(s + j, x);
        mv = _mm256_max_ps(mv, x);
    }
    mv = _mm256_max_ps(mv, _mm256_permute2f128_ps(mv, mv, 1));
    mv = _mm256_max_ps(mv, _mm256_shuffle_ps(mv, mv, 0x4e));
    mv = _mm256_max_ps(mv, _mm256_shuffle_ps(mv, mv, 0xb1));
    return _mm256_cvtss_f32(mv);
}

/* sdpa_row_forward_f4 without a mask, with its bits: the scores' scaling and the row
 * maximum in one pass, then the exponentials */
static PTL_AVX2 void
sdpa_row_forward_f4_avx2(float *restrict s, int64_t nv, int64_t n, float scale, float *m,
                         float *l, float *restrict acc, int64_t ev)
{
    const int64_t w = sdpa_width(nv, n), wv = w / 8 * 8;
    float mx = sdpa_scale_max_f4_avx2(s, nv, w, scale, *m);
    for (int64_t c = wv; c < w; c++) {
        s[c] = c < nv ? s[c] * scale : -INFINITY;
        mx = s[c] > mx ? s[c] : mx;
    }
    if (mx == -INFINITY) {
        sdpa_empty_block_f4(s, w, l);
    }
    else {
        float sum = sdpa_expsum_f4_avx2(s, w, mx);
        if (mx != *m) {
            float alpha = ptl_vm_expf(*m - mx);
            for (int64_t e = 0; e < ev; e++) {
                acc[e] *= alpha;
            }
            *l *= alpha;
        }
        *l += sum;
        *m = mx;
    }
    if (w < n) {
        _mm256_storeu_ps(s + w, _mm256_setzero_ps());
    }
}

/* sdpa_row_backward_f4 without a mask, with its bits: the scores, probabilities and score
 * gradients in one pass */
static PTL_AVX2 void
sdpa_row_backward_f4_avx2(float *restrict s, float *restrict dp, int64_t nv, int64_t n,
                          float scale, float lse, float d)
{
    const int64_t w = sdpa_width(nv, n);
    const __m256 sc = _mm256_set1_ps(scale), ninf = _mm256_set1_ps(-INFINITY);
    const __m256 lv = _mm256_set1_ps(lse), dv = _mm256_set1_ps(d);
    int64_t j = 0;
    for (; j + 8 <= w; j += 8) {
        __m256 x = _mm256_mul_ps(_mm256_loadu_ps(s + j), sc);
        x = _mm256_blendv_ps(x, ninf, sdpa_past_f4_avx2(j, nv));
        __m256 p = sdpa_exp_f4_avx2(_mm256_sub_ps(x, lv));
        __m256 g = _mm256_sub_ps(_mm256_loadu_ps(dp + j), dv);
        _mm256_storeu_ps(s + j, p);
        _mm256_storeu_ps(dp + j, _mm256_mul_ps(_mm256_mul_ps(p, g), sc));
    }
    for (; j < w; j++) {
        s[j] = j < nv ? s[j] * scale : -INFINITY;
    }
    sdpa_dscores_f4p(s + w / 8 * 8, dp + w / 8 * 8, w - w / 8 * 8, lse, d, scale, 1);
    if (w < n) {
        _mm256_storeu_ps(s + w, _mm256_setzero_ps());
        _mm256_storeu_ps(dp + w, _mm256_setzero_ps());
    }
}

/* sdpa_rowdots_f4p with its bits (each row's products summed in order) eight rows at a time:
 * the rows' products are transposed by gemm's 8 x 8 transposes so that each lane sums one
 * row; tmp holds 2 * 8 * 64 floats.  The scalar loop's serial sums were a third of the
 * backward's own time. */
static PTL_AVX2 void
sdpa_rowdots_f4_avx2(const float *g, int64_t grs, const float *o, int64_t ors, int64_t n,
                     int64_t ev, float *d, float *tmp)
{
    const int64_t ev8 = ev / 8 * 8;
    float *prod = tmp, *cols = tmp + 8 * 64;
    int64_t r0 = 0;
    for (; r0 + 8 <= n && ev8 > 0; r0 += 8) {
        const float *gr = g + r0 * grs, *orow = o + r0 * ors;
        __m256 acc = _mm256_setzero_ps();
        for (int64_t c0 = 0; c0 < ev8; c0 += 64) {
            const int64_t nc = ev8 - c0 < 64 ? ev8 - c0 : 64;
            for (int r = 0; r < 8; r++) {
                for (int64_t c = 0; c < nc; c += 8) {
                    __m256 pr = _mm256_mul_ps(_mm256_loadu_ps(gr + r * grs + c0 + c),
                                              _mm256_loadu_ps(orow + r * ors + c0 + c));
                    _mm256_storeu_ps(prod + r * 64 + c, pr);
                }
            }
            ptl_gemm_pack_rows8_f4(prod, 64, 8, nc, 8, cols);
            for (int64_t c = 0; c < nc; c++) {
                acc = _mm256_add_ps(acc, _mm256_loadu_ps(cols + c * 8));
            }
        }
        _mm256_storeu_ps(d + r0, acc);
        for (int r = 0; r < 8; r++) {
            for (int64_t e = ev8; e < ev; e++) {
                d[r0 + r] += gr[r * grs + e] * orow[r * ors + e];
            }
        }
    }
    sdpa_rowdots_f4p(g + r0 * grs, grs, o + r0 * ors, ors, n - r0, ev, d + r0, tmp, 1);
}

/* sdpa_pack_t_f4p by gemm's 8 x 8 transposes */
static PTL_AVX2 void
sdpa_pack_t_f4_avx2(const float *src, int64_t rs, int64_t rows, int64_t cols, float *dst,
                    int64_t ld)
{
    const int64_t c8 = cols / 8 * 8;
    for (int64_t r0 = 0; r0 < rows; r0 += 8) {
        ptl_gemm_pack_rows8_f4(src + r0 * rs, rs, rows - r0 < 8 ? rows - r0 : 8, c8, ld,
                               dst + r0);
    }
    sdpa_pack_t_f4p(src + c8, rs, rows, cols - c8, dst + c8 * ld, ld, 1);
}
#define SDPA_F4_AVX2(FMA, AVX2_CALL, PORTABLE_CALL) ((FMA) ? (AVX2_CALL) : (PORTABLE_CALL))
#else
#define SDPA_F4_AVX2(FMA, AVX2_CALL, PORTABLE_CALL) (PORTABLE_CALL)
#endif

/* The float32 helpers: the AVX2 twin's (fma) or the portable ones; float64 runs the
 * portable ones in both twins. */
SDPA_INLINE void
sdpa_mm_f4(int fma, int64_t m, int64_t n, int64_t k, const float *a, int64_t ars, int64_t acs,
           const float *b, int64_t ldb, float *c, int64_t ldc, int acc, SdpaBand bd)
{
    SDPA_F4_AVX2(fma, sdpa_mm_f4_avx2(m, n, k, a, ars, acs, b, ldb, c, ldc, acc, bd),
                 sdpa_mm_f4p(0, m, n, k, a, ars, acs, b, ldb, c, ldc, acc, bd));
}

SDPA_INLINE void
sdpa_pack_t_f4(const float *src, int64_t rs, int64_t rows, int64_t cols, float *dst, int64_t ld,
               int fma)
{
    SDPA_F4_AVX2(fma, sdpa_pack_t_f4_avx2(src, rs, rows, cols, dst, ld),
                 sdpa_pack_t_f4p(src, rs, rows, cols, dst, ld, 0));
}

SDPA_INLINE void
sdpa_rowdots_f4(const float *g, int64_t grs, const float *o, int64_t ors, int64_t n, int64_t ev,
                float *d, float *tmp, int fma)
{
    SDPA_F4_AVX2(fma, sdpa_rowdots_f4_avx2(g, grs, o, ors, n, ev, d, tmp),
                 sdpa_rowdots_f4p(g, grs, o, ors, n, ev, d, tmp, 0));
}

SDPA_INLINE void
sdpa_lse_f4(const float *m, const float *l, int64_t n, float *lse, int fma)
{
    SDPA_F4_AVX2(fma, sdpa_lse_f4_avx2(m, l, n, lse), sdpa_lse_f4p(m, l, n, lse, 0));
}

SDPA_INLINE void
sdpa_online_f4(float *s, int64_t n, float *m, float *l, float *acc, int64_t ev, int fma)
{
    SDPA_F4_AVX2(fma, sdpa_online_f4_avx2(s, n, m, l, acc, ev),
                 sdpa_online_f4p(s, n, m, l, acc, ev, 0));
}

SDPA_INLINE void
sdpa_dscores_f4(float *s, float *dp, int64_t n, float lse, float d, float scale, int fma)
{
    SDPA_F4_AVX2(fma, sdpa_dscores_f4_avx2(s, dp, n, lse, d, scale),
                 sdpa_dscores_f4p(s, dp, n, lse, d, scale, 0));
}

/* ---- the per-task bodies, written once over T and stamped per dtype and target ---- */

/* How many of a key block's n columns row i sees: all, or when causal the keys up to the
 * row's own position, d = i - (the block's first key) (Note [Flash attention on the CPU]). */
SDPA_INLINE int64_t
sdpa_valid(int causal, int64_t d, int64_t n)
{
    return !causal || d + 1 >= n ? n : d + 1 > 0 ? d + 1 : 0;
}

/* The row's scores over the nv columns it sees, rounded up to whole vectors of 8 with
 * -inf past nv (the vector loops then need no scalar tail); returns that width. */
#define DEFINE_SDPA_ROW_SCORES(T, DT)                                                      \
    SDPA_INLINE int64_t sdpa_row_scores_##DT(T *s, int64_t nv, int64_t n, T scale,         \
                                             const T *mask, int64_t ms)                   \
    {                                                                                     \
        int64_t w = sdpa_width(nv, n);                                                    \
        sdpa_scores_##DT(s, nv, scale, mask, ms);                                         \
        for (int64_t c = nv; c < w; c++) {                                                \
            s[c] = -(T)INFINITY;                                                          \
        }                                                                                 \
        return w;                                                                         \
    }
/* Zeros s[w, min(n, w + 8)): past a row's width w (sdpa_row_scores) its probabilities are
 * 0, and the band's tiles read at most SDPA_MR - 1 columns past the first row's nv <= w, so
 * one vector's worth of zeros covers them (memset of the whole rest was a call per row). */
#define DEFINE_SDPA_PAD_ZERO(T, DT)                                                        \
    SDPA_INLINE void sdpa_pad_zero_##DT(T *s, int64_t w, int64_t n)                       \
    {                                                                                     \
        const int64_t end = w + 8 < n ? w + 8 : n;                                        \
        for (int64_t c = w; c < end; c++) {                                               \
            s[c] = 0;                                                                     \
        }                                                                                 \
    }

/* Zeros `rows` rows of `cols` elements, rs apart. */
#define DEFINE_SDPA_ZERO_ROWS(T, DT)                                                       \
    SDPA_INLINE void sdpa_zero_rows_##DT(T *p, int64_t rs, int64_t rows, int64_t cols)     \
    {                                                                                     \
        for (int64_t r = 0; r < rows; r++) {                                              \
            memset(p + r * rs, 0, sizeof(T) * (size_t)cols);                              \
        }                                                                                 \
    }
DEFINE_SDPA_ROW_SCORES(float, f4)
DEFINE_SDPA_ROW_SCORES(double, f8)
DEFINE_SDPA_PAD_ZERO(float, f4)
DEFINE_SDPA_PAD_ZERO(double, f8)
DEFINE_SDPA_ZERO_ROWS(float, f4)
DEFINE_SDPA_ZERO_ROWS(double, f8)
#undef DEFINE_SDPA_ROW_SCORES
#undef DEFINE_SDPA_PAD_ZERO
#undef DEFINE_SDPA_ZERO_ROWS

/* A forward row's step over a key block's n columns, of which it sees nv: its scores, the
 * online softmax and the zeros past its width.  float32 without a mask takes the AVX2
 * twin's fused loops, with the same bits. */
#define DEFINE_SDPA_ROW_STEPS(T, DT)                                                       \
    SDPA_INLINE void sdpa_row_forward_##DT##p(int fma, T *s, int64_t nv, int64_t n, T scale, \
                                             const T *mask, int64_t ms, T *m, T *l, T *acc, \
                                             int64_t ev)                                  \
    {                                                                                     \
        const int64_t w = sdpa_row_scores_##DT(s, nv, n, scale, mask, ms);                \
        sdpa_online_##DT(s, w, m, l, acc, ev, fma);                                       \
        sdpa_pad_zero_##DT(s, w, n);                                                      \
    }                                                                                     \
                                                                                          \
    /* The backward's step of one row: its probabilities in s and score gradients in dp */ \
    SDPA_INLINE void sdpa_row_backward_##DT##p(int fma, T *s, T *dp, int64_t nv, int64_t n, \
                                              T scale, const T *mask, int64_t ms, T lse,  \
                                              T d)                                        \
    {                                                                                     \
        const int64_t w = sdpa_row_scores_##DT(s, nv, n, scale, mask, ms);                \
        sdpa_dscores_##DT(s, dp, w, lse, d, scale, fma);                                  \
        sdpa_pad_zero_##DT(s, w, n);                                                      \
        sdpa_pad_zero_##DT(dp, w, n);                                                     \
    }
DEFINE_SDPA_ROW_STEPS(float, f4)
DEFINE_SDPA_ROW_STEPS(double, f8)
#undef DEFINE_SDPA_ROW_STEPS

SDPA_INLINE void
sdpa_row_forward_f4(int fma, float *s, int64_t nv, int64_t n, float scale, const float *mask,
                    int64_t ms, float *m, float *l, float *acc, int64_t ev)
{
#ifdef PTL_HAVE_AVX2_KERNELS
    if (fma && mask == NULL) {
        sdpa_row_forward_f4_avx2(s, nv, n, scale, m, l, acc, ev);
        return;
    }
#endif
    sdpa_row_forward_f4p(fma, s, nv, n, scale, mask, ms, m, l, acc, ev);
}

SDPA_INLINE void
sdpa_row_backward_f4(int fma, float *s, float *dp, int64_t nv, int64_t n, float scale,
                     const float *mask, int64_t ms, float lse, float d)
{
#ifdef PTL_HAVE_AVX2_KERNELS
    if (fma && mask == NULL) {
        sdpa_row_backward_f4_avx2(s, dp, nv, n, scale, lse, d);
        return;
    }
#endif
    sdpa_row_backward_f4p(fma, s, dp, nv, n, scale, mask, ms, lse, d);
}
#define sdpa_row_forward_f8 sdpa_row_forward_f8p
#define sdpa_row_backward_f8 sdpa_row_backward_f8p

/* Asks for `rows` rows of `bytes` bytes each, `rs` bytes apart, to be brought into the
 * cache.  The heads' rows are short and far apart (heads split from one projection's
 * features): read on demand, each line of the next head was a cache miss the loop waited
 * for (Note [Flash attention on the CPU]). */
SDPA_INLINE void
sdpa_prefetch(const void *p, int64_t rs, int64_t rows, int64_t bytes)
{
    for (int64_t r = 0; r < rows && bytes > 0; r++) {
        const char *row = (const char *)p + r * rs;
        for (int64_t x = 0; x < bytes; x += 64) {
            __builtin_prefetch(row + x);
        }
        __builtin_prefetch(row + bytes - 1);
    }
}

/* element (b, h, r, c) of m, as T */
#define AT(T, M, b, h, r, c)                                                               \
    ((T *)(M).data + (b) * (M).st[0] + (h) * (M).st[1] + (r) * (M).st[2] + (c) * (M).st[3])

/* The first byte of row r of head (b, h) of m, whose elements are `size` bytes. */
static const char *
sdpa_row(const SdpaMat *m, int64_t b, int64_t h, int64_t r, size_t size)
{
    return m->data + (b * m->st[0] + h * m->st[1] + r * m->st[2]) * (int64_t)size;
}

/* Prefetches what forward item `it` reads: its query rows, and its key and value rows from
 * row `from` on (the rows before were read by the item before it, of the same head). */
static void
sdpa_prefetch_forward(const SdpaJob *j, int64_t it, int64_t nqb, int64_t from, size_t size)
{
    const int64_t bh = it / nqb, b = bh / j->H, h = bh % j->H, q0 = it % nqb * SDPA_BQ;
    const int64_t nq = j->L - q0 < SDPA_BQ ? j->L - q0 : SDPA_BQ;
    const int64_t kend = j->causal && q0 + nq < j->S ? q0 + nq : j->S;
    const int64_t sz = (int64_t)size;
    sdpa_prefetch(sdpa_row(&j->q, b, h, q0, size), j->q.st[2] * sz, nq, j->E * sz);
    if (kend > from) {
        sdpa_prefetch(sdpa_row(&j->k, b, h, from, size), j->k.st[2] * sz, kend - from,
                      j->E * sz);
        sdpa_prefetch(sdpa_row(&j->v, b, h, from, size), j->v.st[2] * sz, kend - from,
                      j->Ev * sz);
    }
}

/* Prefetches the rows backward item bh reads (q, k, v, dout and out) and writes (dq, dk,
 * dv). */
static void
sdpa_prefetch_backward(const SdpaJob *j, int64_t bh, size_t size)
{
    const int64_t b = bh / j->H, h = bh % j->H, sz = (int64_t)size;
    const SdpaMat *in[5] = {&j->q, &j->k, &j->v, &j->dout, &j->o};
    const SdpaMat *out[3] = {&j->dq, &j->dk, &j->dv};
    const int64_t in_rows[5] = {j->L, j->S, j->S, j->L, j->L};
    const int64_t in_cols[5] = {j->E, j->E, j->Ev, j->Ev, j->Ev};
    const int64_t out_rows[3] = {j->L, j->S, j->S}, out_cols[3] = {j->E, j->E, j->Ev};
    for (int i = 0; i < 5; i++) {
        sdpa_prefetch(sdpa_row(in[i], b, h, 0, size), in[i]->st[2] * sz, in_rows[i],
                      in_cols[i] * sz);
    }
    for (int i = 0; i < 3; i++) {
        sdpa_prefetch(sdpa_row(out[i], b, h, 0, size), out[i]->st[2] * sz, out_rows[i],
                      out_cols[i] * sz);
    }
}

/* Forward items [i0, i1) of (batch, head, query block): Note [Flash attention on the CPU]. */
#define DEFINE_SDPA_FORWARD(T, DT)                                                         \
    SDPA_INLINE int sdpa_forward_##DT(int fma, const SdpaJob *j, int64_t i0, int64_t i1)   \
    {                                                                                     \
        const int64_t E = j->E, Ev = j->Ev, nqb = (j->L + SDPA_BQ - 1) / SDPA_BQ;         \
        const T scale = (T)j->scale;                                                      \
        /* the head's keys packed transposed [E, ldk], reused by its query blocks */     \
        const int64_t ldk = (j->S + SDPA_BK - 1) / SDPA_BK * SDPA_BK;                     \
        T *buf = malloc(sizeof(T) * (size_t)(E * ldk + SDPA_BQ * SDPA_BK + SDPA_BQ * Ev + \
                                             2 * SDPA_BQ));                               \
        if (buf == NULL) {                                                                \
            return ptl_error_set(PTL_ERR_MEMORY, "scaled_dot_product_attention: out of "  \
                                                 "memory");                               \
        }                                                                                 \
        T *kt = buf, *sb = kt + E * ldk, *acc = sb + SDPA_BQ * SDPA_BK;                   \
        T *mx = acc + SDPA_BQ * Ev, *sum = mx + SDPA_BQ;                                  \
        int64_t packed_bh = -1, packed = 0;                                               \
        for (int64_t it = i0; it < i1; it++) {                                            \
            const int64_t bh = it / nqb, b = bh / j->H, h = bh % j->H;                    \
            const int64_t q0 = it % nqb * SDPA_BQ;                                        \
            const int64_t nq = j->L - q0 < SDPA_BQ ? j->L - q0 : SDPA_BQ;                 \
            const int64_t kend = j->causal && q0 + nq < j->S ? q0 + nq : j->S;            \
            if (it + 1 < i1) {                                                            \
                sdpa_prefetch_forward(j, it + 1, nqb, (it + 1) / nqb == bh ? kend : 0,     \
                                      sizeof(T));                                         \
            }                                                                             \
            const T *q = AT(T, j->q, b, h, q0, 0), *k = AT(T, j->k, b, h, 0, 0);          \
            const T *v = AT(T, j->v, b, h, 0, 0);                                         \
            const int64_t qrs = j->q.st[2], krs = j->k.st[2], vrs = j->v.st[2];           \
            for (int64_t r = 0; r < nq; r++) {                                            \
                mx[r] = -(T)INFINITY;                                                     \
                sum[r] = 0;                                                               \
            }                                                                             \
            memset(acc, 0, sizeof(T) * (size_t)(nq * Ev));                                \
            for (int64_t k0 = 0; k0 < kend; k0 += SDPA_BK) {                              \
                const int64_t nk = kend - k0 < SDPA_BK ? kend - k0 : SDPA_BK;             \
                if (packed_bh != bh) {                                                    \
                    packed_bh = bh;                                                       \
                    packed = 0;                                                           \
                }                                                                         \
                if (packed < k0 + nk) {                                                   \
                    sdpa_pack_t_##DT(k + packed * krs, krs, k0 + nk - packed, E,          \
                                     kt + packed, ldk, fma);                              \
                    packed = k0 + nk;                                                     \
                }                                                                         \
                /* when causal, row r sees the keys k0 + c with c <= r + d */             \
                const int64_t d = j->causal ? q0 - k0 : SDPA_FAR;                         \
                const SdpaBand cols = {SDPA_FAR, SDPA_FAR, d}, keys = {SDPA_FAR, d, SDPA_FAR}; \
                sdpa_mm_##DT(fma, nq, nk, E, q, qrs, 1, kt + k0, ldk, sb, SDPA_BK, 0, cols); \
                for (int64_t r = 0; r < nq; r++) {                                        \
                    const T *mk = j->has_mask ? AT(T, j->mask, b, h, q0 + r, k0) : NULL;  \
                    const int64_t nv = sdpa_valid(j->causal, q0 + r - k0, nk);            \
                    sdpa_row_forward_##DT(fma, sb + r * SDPA_BK, nv, nk, scale, mk,       \
                                          j->mask.st[3], &mx[r], &sum[r], acc + r * Ev, Ev); \
                }                                                                         \
                sdpa_mm_##DT(fma, nq, Ev, nk, sb, SDPA_BK, 1, v + k0 * vrs, vrs, acc, Ev,  \
                             1, keys);                                                    \
            }                                                                             \
            for (int64_t r = 0; r < nq; r++) {                                            \
                T *o = AT(T, j->out, b, h, q0 + r, 0);                                    \
                const T inv = sum[r] == 0 ? 0 : 1 / sum[r];                               \
                for (int64_t e = 0; e < Ev; e++) {                                        \
                    o[e] = acc[r * Ev + e] * inv;                                         \
                }                                                                         \
            }                                                                             \
            sdpa_lse_##DT(mx, sum, nq, AT(T, j->lse, b, h, q0, 0), fma);                  \
        }                                                                                 \
        free(buf);                                                                        \
        return 0;                                                                         \
    }

/* Backward items [i0, i1) of (batch, head): Note [Flash attention on the CPU]. */
#define DEFINE_SDPA_BACKWARD(T, DT)                                                        \
    SDPA_INLINE int sdpa_backward_##DT(int fma, const SdpaJob *j, int64_t i0, int64_t i1)  \
    {                                                                                     \
        const int64_t E = j->E, Ev = j->Ev, L = j->L, S = j->S;                           \
        const T scale = (T)j->scale;                                                      \
        T *buf = malloc(sizeof(T) * (size_t)(E * SDPA_BK + Ev * SDPA_BK +                 \
                                             2 * SDPA_BQ * SDPA_BK + L + 1));             \
        if (buf == NULL) {                                                                \
            return ptl_error_set(PTL_ERR_MEMORY, "scaled_dot_product_attention: out of "  \
                                                 "memory");                               \
        }                                                                                 \
        T *kt = buf, *vt = kt + E * SDPA_BK, *sb = vt + Ev * SDPA_BK;                     \
        T *dp = sb + SDPA_BQ * SDPA_BK, *dd = dp + SDPA_BQ * SDPA_BK;                     \
        for (int64_t bh = i0; bh < i1; bh++) {                                            \
            const int64_t b = bh / j->H, h = bh % j->H;                                   \
            if (bh + 1 < i1) {                                                            \
                sdpa_prefetch_backward(j, bh + 1, sizeof(T));                             \
            }                                                                             \
            const T *q = AT(T, j->q, b, h, 0, 0), *k = AT(T, j->k, b, h, 0, 0);           \
            const T *v = AT(T, j->v, b, h, 0, 0), *go = AT(T, j->dout, b, h, 0, 0);       \
            T *dq = AT(T, j->dq, b, h, 0, 0), *dk = AT(T, j->dk, b, h, 0, 0);             \
            T *dv = AT(T, j->dv, b, h, 0, 0);                                             \
            const int64_t qrs = j->q.st[2], krs = j->k.st[2], vrs = j->v.st[2];           \
            const int64_t gors = j->dout.st[2], dqrs = j->dq.st[2];                       \
            const int64_t dkrs = j->dk.st[2], dvrs = j->dv.st[2];                         \
            sdpa_rowdots_##DT(go, gors, AT(T, j->o, b, h, 0, 0), j->o.st[2], L, Ev, dd, sb, \
                              fma);                                                       \
            /* dQ's rows are first written by key block 0, dK's and dV's by the first  */ \
            /* query block that sees them; rows no block reaches are zeros */              \
            sdpa_zero_rows_##DT(dq, dqrs, S > 0 ? 0 : L, E);                              \
            for (int64_t k0 = 0; k0 < S; k0 += SDPA_BK) {                                 \
                const int64_t nk = S - k0 < SDPA_BK ? S - k0 : SDPA_BK;                   \
                const int64_t qfirst = j->causal ? k0 / SDPA_BQ * SDPA_BQ : 0;            \
                sdpa_zero_rows_##DT(dk + k0 * dkrs, dkrs, qfirst < L ? 0 : nk, E);         \
                sdpa_zero_rows_##DT(dv + k0 * dvrs, dvrs, qfirst < L ? 0 : nk, Ev);        \
                sdpa_pack_t_##DT(k + k0 * krs, krs, nk, E, kt, SDPA_BK, fma);             \
                sdpa_pack_t_##DT(v + k0 * vrs, vrs, nk, Ev, vt, SDPA_BK, fma);            \
                for (int64_t q0 = qfirst; q0 < L; q0 += SDPA_BQ) {                        \
                    const int64_t nq = L - q0 < SDPA_BQ ? L - q0 : SDPA_BQ;               \
                    /* when causal, query q0 + r sees key k0 + c when c <= r + d: the  */  \
                    /* scores' columns, the sums over keys and those over queries */      \
                    const int64_t d = j->causal ? q0 - k0 : SDPA_FAR;                     \
                    const SdpaBand cols = {SDPA_FAR, SDPA_FAR, d};                        \
                    const SdpaBand keys = {SDPA_FAR, d, SDPA_FAR};                        \
                    const SdpaBand queries = {d, SDPA_FAR, SDPA_FAR};                     \
                    sdpa_mm_##DT(fma, nq, nk, E, q + q0 * qrs, qrs, 1, kt, SDPA_BK, sb,   \
                                 SDPA_BK, 0, cols);                                       \
                    sdpa_mm_##DT(fma, nq, nk, Ev, go + q0 * gors, gors, 1, vt, SDPA_BK,   \
                                 dp, SDPA_BK, 0, cols);                                   \
                    for (int64_t r = 0; r < nq; r++) {                                    \
                        const int64_t i = q0 + r, nv = sdpa_valid(j->causal, i - k0, nk); \
                        const T *mk = j->has_mask ? AT(T, j->mask, b, h, i, k0) : NULL;   \
                        sdpa_row_backward_##DT(fma, sb + r * SDPA_BK, dp + r * SDPA_BK, nv, \
                                               nk, scale, mk, j->mask.st[3],              \
                                               *AT(T, j->lse, b, h, i, 0), dd[i]);        \
                    }                                                                     \
                    sdpa_mm_##DT(fma, nk, Ev, nq, sb, 1, SDPA_BK, go + q0 * gors, gors,   \
                                 dv + k0 * dvrs, dvrs, q0 != qfirst, queries);            \
                    sdpa_mm_##DT(fma, nq, E, nk, dp, SDPA_BK, 1, k + k0 * krs, krs,       \
                                 dq + q0 * dqrs, dqrs, k0 != 0, keys);                    \
                    sdpa_mm_##DT(fma, nk, E, nq, dp, 1, SDPA_BK, q + q0 * qrs, qrs,       \
                                 dk + k0 * dkrs, dkrs, q0 != qfirst, queries);            \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
        free(buf);                                                                        \
        return 0;                                                                         \
    }

DEFINE_SDPA_FORWARD(float, f4)
DEFINE_SDPA_FORWARD(double, f8)
DEFINE_SDPA_BACKWARD(float, f4)
DEFINE_SDPA_BACKWARD(double, f8)
#undef DEFINE_SDPA_FORWARD
#undef DEFINE_SDPA_BACKWARD

/* The parallel_for tasks: each body for the baseline and for AVX2 with FMA. */
#define DEFINE_SDPA_TASK(NAME, BODY, ATTR, FMA)                                            \
    ATTR static int NAME(void *ctx, int64_t i0, int64_t i1)                               \
    {                                                                                     \
        return BODY(FMA, ctx, i0, i1);                                                    \
    }
DEFINE_SDPA_TASK(sdpa_forward_task_f4, sdpa_forward_f4, , 0)
DEFINE_SDPA_TASK(sdpa_forward_task_f8, sdpa_forward_f8, , 0)
DEFINE_SDPA_TASK(sdpa_backward_task_f4, sdpa_backward_f4, , 0)
DEFINE_SDPA_TASK(sdpa_backward_task_f8, sdpa_backward_f8, , 0)
#ifdef PTL_HAVE_AVX2_KERNELS
DEFINE_SDPA_TASK(sdpa_forward_task_f4_avx2, sdpa_forward_f4, PTL_AVX2, 1)
DEFINE_SDPA_TASK(sdpa_forward_task_f8_avx2, sdpa_forward_f8, PTL_AVX2, 1)
DEFINE_SDPA_TASK(sdpa_backward_task_f4_avx2, sdpa_backward_f4, PTL_AVX2, 1)
DEFINE_SDPA_TASK(sdpa_backward_task_f8_avx2, sdpa_backward_f8, PTL_AVX2, 1)
#endif
#undef DEFINE_SDPA_TASK
#undef AT
#undef sdpa_row_forward_f8
#undef sdpa_row_backward_f8

/* The task for (backward?, float64?) on this CPU. */
static PtlParallelFn
sdpa_task(int backward, int f8)
{
    static const PtlParallelFn base[2][2] = {
        {sdpa_forward_task_f4, sdpa_forward_task_f8},
        {sdpa_backward_task_f4, sdpa_backward_task_f8}};
#ifdef PTL_HAVE_AVX2_KERNELS
    static const PtlParallelFn avx2[2][2] = {
        {sdpa_forward_task_f4_avx2, sdpa_forward_task_f8_avx2},
        {sdpa_backward_task_f4_avx2, sdpa_backward_task_f8_avx2}};
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        return avx2[backward][f8];
    }
#endif
    return base[backward][f8];
}

/* ---- argument checks and the operator kernels ---- */

#define SDPA_ERR "scaled_dot_product_attention_flash_attention: "

static PtlTensorImpl *
opt_tensor(const PtlIValue *v)
{
    return v->tag == PTL_IV_TENSOR ? v->u.t : NULL;
}

/* Checks query, key, value (and the mask) as PyTorch's flash kernel does, with the shape
 * checks it lacks; sets the sizes of j. */
static int
sdpa_check(PtlTensorImpl *q, PtlTensorImpl *k, PtlTensorImpl *v, PtlTensorImpl *mask,
           double dropout_p, SdpaJob *j)
{
    char b1[128], b2[128], b3[128];
    if (!ptl_dtype_is_floating(q->dtype)) {   /* PyTorch's first check */
        return ptl_error_set(PTL_ERR_RUNTIME,
                             SDPA_ERR "Expected data type in FP32, FP64, BF16, FP16, but got "
                                      "%s instead.",
                             ptl_dtype_legacy_name(q->dtype));
    }
    if (dropout_p != 0.0) {
        return ptl_error_set(PTL_ERR_RUNTIME, SDPA_ERR "Currently do not support dropout > 0");
    }
    if (q->dim != 4 || k->dim != 4 || v->dim != 4) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             SDPA_ERR "Accept only 4 dims inputs shape of {B, H, T, K}");
    }
    PtlTensorImpl *kv[2] = {k, v};
    for (int i = 0; i < 2; i++) {
        if (kv[i]->dtype != q->dtype) {
            return ptl_error_set(PTL_ERR_RUNTIME, "expected scalar type %s but found %s",
                                 ptl_dtype_legacy_name(q->dtype),
                                 ptl_dtype_legacy_name(kv[i]->dtype));
        }
    }
    if (k->sizes[3] != q->sizes[3] || v->sizes[3] != q->sizes[3]) {
        return ptl_error_set(PTL_ERR_RUNTIME, SDPA_ERR "Q/K/V should have the same head size");
    }
    if (k->sizes[0] != q->sizes[0] || v->sizes[0] != q->sizes[0] || k->sizes[1] != q->sizes[1] ||
        v->sizes[1] != q->sizes[1] || v->sizes[2] != k->sizes[2]) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             SDPA_ERR "expected query [B, H, L, E], key [B, H, S, E] and value "
                                      "[B, H, S, E], but got query %s, key %s and value %s",
                             ptl_format_sizes(b1, sizeof b1, 4, q->sizes),
                             ptl_format_sizes(b2, sizeof b2, 4, k->sizes),
                             ptl_format_sizes(b3, sizeof b3, 4, v->sizes));
    }
    j->B = q->sizes[0];
    j->H = q->sizes[1];
    j->L = q->sizes[2];
    j->S = k->sizes[2];
    j->E = q->sizes[3];
    j->Ev = v->sizes[3];
    if (mask == NULL) {
        return 0;
    }
    if (mask->dtype != q->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             SDPA_ERR "Attention mask is the same data type as query");
    }
    if (mask->dim != 2 && mask->dim != 4) {
        return ptl_error_set(PTL_ERR_RUNTIME, SDPA_ERR "Attention mask dim in {2, 4}");
    }
    int64_t target[4] = {j->B, j->H, j->L, j->S}, ms[4] = {1, 1, 1, 1};
    for (int d = 0; d < mask->dim; d++) {
        ms[4 - mask->dim + d] = mask->sizes[d];
    }
    for (int d = 0; d < 4; d++) {
        if (ms[d] != target[d] && ms[d] != 1) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "The expanded size of the tensor (%lld) must match the "
                                 "existing size (%lld) at non-singleton dimension %d.  Target "
                                 "sizes: %s.  Tensor sizes: %s",
                                 (long long)target[d], (long long)ms[d], d,
                                 ptl_format_sizes(b1, sizeof b1, 4, target),
                                 ptl_format_sizes(b2, sizeof b2, 4, ms));
        }
    }
    return 0;
}

/* t (borrowed) in dtype `work` with a unit last stride (new ref; t itself when it is). */
static PtlTensorImpl *
sdpa_prepare(PtlTensorImpl *t, PtlDtype work)
{
    if (t->dtype == work && (t->strides[t->dim - 1] == 1 || t->sizes[t->dim - 1] <= 1)) {
        ptl_incref(t);
        return t;
    }
    return nn_prepare(t, work);
}

/* m's view of t: its data and its strides aligned to [B, H, rows, cols], 0 where t
 * broadcasts (a mask of 2 dims or with size-1 dims). */
static void
sdpa_mat(SdpaMat *m, PtlTensorImpl *t)
{
    m->data = ptl_tensor_data(t);
    for (int d = 0; d < 4; d++) {
        int td = d - (4 - t->dim);
        m->st[d] = td >= 0 && t->sizes[td] != 1 ? t->strides[td] : 0;
    }
}

/* An empty [B, H, rows, cols] tensor laid out as `like` is: [B, rows, H, cols] transposed
 * when like's heads are closer than its rows (attention's heads split from the features),
 * contiguous otherwise. */
static PtlTensorImpl *
sdpa_empty_like(PtlTensorImpl *like, int64_t rows, int64_t cols, PtlDtype dt)
{
    int64_t B = like->sizes[0], H = like->sizes[1];
    int64_t sizes[4] = {B, H, rows, cols};
    if (like->strides[1] < like->strides[2] && H > 1 && rows > 1) {
        int64_t st[4] = {rows * H * cols, cols, H * cols, 1};
        return ptl_empty_strided(4, sizes, st, dt, like->device);
    }
    return ptl_empty(4, sizes, dt, like->device);
}

static double
sdpa_scale(const PtlIValue *scale, int64_t E)
{
    return scale->tag == PTL_IV_NONE ? 1.0 / sqrt((double)E) : ptl_iv_to_double(scale);
}

int (*ptl_device_attention_hook)(const PtlDeviceAttnJob *j, int backward, int f8);

/* Runs the forward (backward = 0) or backward task over its items: on the device for CUDA
 * tensors (like q's) or while the tests emulate the CUDA kernels, else on the CPU threads. */
static int
sdpa_run(SdpaJob *j, int backward, int f8, const PtlTensorImpl *like)
{
    if (nn_on_device(like, ptl_device_attention_hook != NULL)) {
        return ptl_device_attention_hook(j, backward, f8);
    }
    int64_t nqb = (j->L + SDPA_BQ - 1) / SDPA_BQ;
    int64_t items = backward ? j->B * j->H : j->B * j->H * nqb;
    int64_t per_item = (backward ? j->L : SDPA_BQ) * j->S * (j->E + j->Ev) + 1;
    void *tok = items * per_item >= PTL_GRAIN_SIZE ? ptl_nogil_begin() : NULL;
    int rc = ptl_parallel_for(0, items, PTL_GRAIN_SIZE / per_item + 1, sdpa_task(backward, f8),
                              j);
    ptl_nogil_end(tok);
    return rc;
}

/* _scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key, Tensor value,
 *     float dropout_p=0., bool is_causal=False, *, Tensor? attn_mask=None,
 *     float? scale=None) -> (Tensor output, Tensor logsumexp)
 * [B, H, L, E], [B, H, S, E], [B, H, S, E] -> [B, H, L, E], [B, H, L] */
static int
sdpa_flash_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *q = s[0].u.t, *k = s[1].u.t, *v = s[2].u.t, *mask = opt_tensor(&s[5]);
    PtlTensorImpl *in[4] = {NULL, NULL, NULL, NULL}, *r[2] = {NULL, NULL};
    SdpaJob j = {.causal = s[4].u.b, .has_mask = mask != NULL};
    if (sdpa_check(q, k, v, mask, ptl_iv_to_double(&s[3]), &j) < 0) {
        return -1;
    }
    PtlDtype work = nn_work_dtype(q->dtype);
    PtlTensorImpl *src[4] = {q, k, v, mask};
    for (int i = 0; i < 4; i++) {
        if (src[i] != NULL && (in[i] = sdpa_prepare(src[i], work)) == NULL) {
            goto error;
        }
    }
    int64_t lse_sizes[3] = {j.B, j.H, j.L};
    if ((r[0] = sdpa_empty_like(in[0], j.L, j.Ev, work)) == NULL ||
        (r[1] = ptl_empty(3, lse_sizes, work, q->device)) == NULL) {
        goto error;
    }
    j.scale = sdpa_scale(&s[6], j.E);
    sdpa_mat(&j.q, in[0]);
    sdpa_mat(&j.k, in[1]);
    sdpa_mat(&j.v, in[2]);
    if (mask != NULL) {
        sdpa_mat(&j.mask, in[3]);
    }
    sdpa_mat(&j.out, r[0]);
    j.lse.data = ptl_tensor_data(r[1]);
    j.lse.st[0] = j.H * j.L;
    j.lse.st[1] = j.L;
    j.lse.st[2] = 1;
    j.lse.st[3] = 0;
    if (!ptl_tensor_is_meta(q) && sdpa_run(&j, 0, work == PTL_DTYPE_FLOAT64, q) < 0) {
        goto error;
    }
    PtlDtype out_dt[2] = {q->dtype, q->dtype};
    return nn_return(s, r, out_dt, 2, in, 4, 1);
error:
    return nn_return(s, r, NULL, 2, in, 4, 0);
}

/* _scaled_dot_product_flash_attention_for_cpu_backward(Tensor grad_out, Tensor query,
 *     Tensor key, Tensor value, Tensor out, Tensor logsumexp, float dropout_p,
 *     bool is_causal, *, Tensor? attn_mask=None, float? scale=None)
 *     -> (Tensor grad_query, Tensor grad_key, Tensor grad_value) */
static int
sdpa_flash_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *g = s[0].u.t, *q = s[1].u.t, *k = s[2].u.t, *v = s[3].u.t, *o = s[4].u.t;
    PtlTensorImpl *lse = s[5].u.t, *mask = opt_tensor(&s[8]);
    PtlTensorImpl *in[7] = {NULL}, *r[3] = {NULL, NULL, NULL};
    SdpaJob j = {.causal = s[7].u.b, .has_mask = mask != NULL};
    char b1[128], b2[128];
    if (sdpa_check(q, k, v, mask, ptl_iv_to_double(&s[6]), &j) < 0) {
        return -1;
    }
    int64_t want[4] = {j.B, j.H, j.L, j.Ev};
    PtlTensorImpl *same[2] = {g, o};
    for (int i = 0; i < 2; i++) {
        if (same[i]->dim != 4 || memcmp(same[i]->sizes, want, sizeof want) != 0 ||
            same[i]->dtype != q->dtype) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 SDPA_ERR "expected grad_out and out of size %s and dtype %s, "
                                          "but got %s",
                                 ptl_format_sizes(b1, sizeof b1, 4, want),
                                 ptl_dtype_name(q->dtype),
                                 ptl_format_sizes(b2, sizeof b2, same[i]->dim, same[i]->sizes));
        }
    }
    if (lse->dim != 3 || lse->sizes[0] != j.B || lse->sizes[1] != j.H || lse->sizes[2] != j.L) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             SDPA_ERR "expected logsumexp of size %s, but got %s",
                             ptl_format_sizes(b1, sizeof b1, 3, want),
                             ptl_format_sizes(b2, sizeof b2, lse->dim, lse->sizes));
    }
    PtlDtype work = nn_work_dtype(q->dtype);
    PtlTensorImpl *src[7] = {g, q, k, v, o, lse, mask};
    for (int i = 0; i < 7; i++) {
        if (src[i] != NULL && (in[i] = sdpa_prepare(src[i], work)) == NULL) {
            goto error;
        }
    }
    if ((r[0] = sdpa_empty_like(in[1], j.L, j.E, work)) == NULL ||
        (r[1] = sdpa_empty_like(in[2], j.S, j.E, work)) == NULL ||
        (r[2] = sdpa_empty_like(in[3], j.S, j.Ev, work)) == NULL) {
        goto error;
    }
    j.scale = sdpa_scale(&s[9], j.E);
    SdpaMat *mats[7] = {&j.dout, &j.q, &j.k, &j.v, &j.o, NULL, &j.mask};
    for (int i = 0; i < 7; i++) {
        if (mats[i] != NULL && in[i] != NULL) {
            sdpa_mat(mats[i], in[i]);
        }
    }
    j.lse.data = ptl_tensor_data(in[5]);
    j.lse.st[0] = in[5]->sizes[0] != 1 ? in[5]->strides[0] : 0;
    j.lse.st[1] = in[5]->sizes[1] != 1 ? in[5]->strides[1] : 0;
    j.lse.st[2] = 1;
    j.lse.st[3] = 0;
    sdpa_mat(&j.dq, r[0]);
    sdpa_mat(&j.dk, r[1]);
    sdpa_mat(&j.dv, r[2]);
    if (!ptl_tensor_is_meta(q) && sdpa_run(&j, 1, work == PTL_DTYPE_FLOAT64, q) < 0) {
        goto error;
    }
    PtlDtype out_dt[3] = {q->dtype, q->dtype, q->dtype};
    return nn_return(s, r, out_dt, 3, in, 7, 1);
error:
    return nn_return(s, r, NULL, 3, in, 7, 0);
}

static const PtlKernelReg attention_cpu[] = {
    {PTL_OP__scaled_dot_product_flash_attention_for_cpu, PTL_KEY_CPU, sdpa_flash_cpu},
    {PTL_OP__scaled_dot_product_flash_attention_for_cpu_backward, PTL_KEY_CPU,
     sdpa_flash_backward_cpu},
};
PTL_DEFINE_REGISTER(attention_cpu)
