/* reduce_lowp_block.h -- the AVX2 float32 sum of one block of float16 / bfloat16 values
 * (Note [Half-precision sums] in reduce_kernels.c), included once by reduce_kernels.c inside
 * its AVX2 section, after its LOWP_LANES, LOWP_ATTR_ps and LOWP_LOAD_ps. */
#ifndef PTL_ATEN_NATIVE_REDUCE_LOWP_BLOCK_H
#define PTL_ATEN_NATIVE_REDUCE_LOWP_BLOCK_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

/* The r < 8 halves at p, then 8 - r zeros.  With back (p - (8 - r) lies inside the data) one
 * load ending at p + r, its halves moved down by a pshufb; else a zero-padded copy (a vector
 * load of halves just stored one by one waits for them: the copy at every row left float16
 * sum(1) of 1000 x 1000 at 0.8-0.9x PyTorch's time). */
LOWP_ATTR_ps static inline __m128i
lowp_tail_halves(const uint16_t *p, int64_t r, int back)
{
    /* ctrl[b] = b + 2 (8 - r) while that is a byte of the load, else 0x80 (a zero byte) */
    static const int8_t slide[32] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                                     -128, -128, -128, -128, -128, -128, -128, -128,
                                     -128, -128, -128, -128, -128, -128, -128, -128};
    if (back) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + r - 8));
        return _mm_shuffle_epi8(v, _mm_loadu_si128((const __m128i *)(slide + 2 * (8 - r))));
    }
    uint16_t xt[8] = {0};
    memcpy(xt, p, (size_t)r * sizeof(uint16_t));
    return _mm_loadu_si128((const __m128i *)xt);
}

LOWP_ATTR_ps static inline float
block_sum_lowp_ps_as(const uint16_t *x, int64_t m, int bf)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0,
           a7 = a0;
    int64_t full = m / LOWP_LANES * LOWP_LANES;
    for (int64_t i = 0; i < full; i += LOWP_LANES) {
        a0 = _mm256_add_ps(a0, LOWP_LOAD_ps(x + i, bf));
        a1 = _mm256_add_ps(a1, LOWP_LOAD_ps(x + i + 8, bf));
        a2 = _mm256_add_ps(a2, LOWP_LOAD_ps(x + i + 16, bf));
        a3 = _mm256_add_ps(a3, LOWP_LOAD_ps(x + i + 24, bf));
        a4 = _mm256_add_ps(a4, LOWP_LOAD_ps(x + i + 32, bf));
        a5 = _mm256_add_ps(a5, LOWP_LOAD_ps(x + i + 40, bf));
        a6 = _mm256_add_ps(a6, LOWP_LOAD_ps(x + i + 48, bf));
        a7 = _mm256_add_ps(a7, LOWP_LOAD_ps(x + i + 56, bf));
    }
    if (full < m) {
        /* the last group's eight-value pieces: the missing ones +0, a partial one zero-padded
         * by lowp_tail_halves */
        __m256 t[8];
        for (int j = 0; j < 8; j++) {
            int64_t r = m - full - 8 * j;
            __m128i h = r >= 8  ? _mm_loadu_si128((const __m128i *)(x + full + 8 * j))
                        : r > 0 ? lowp_tail_halves(x + full + 8 * j, r, m >= 8)
                                : _mm_setzero_si128();
            t[j] = bf ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16))
                      : _mm256_cvtph_ps(h);
        }
        a0 = _mm256_add_ps(a0, t[0]);
        a1 = _mm256_add_ps(a1, t[1]);
        a2 = _mm256_add_ps(a2, t[2]);
        a3 = _mm256_add_ps(a3, t[3]);
        a4 = _mm256_add_ps(a4, t[4]);
        a5 = _mm256_add_ps(a5, t[5]);
        a6 = _mm256_add_ps(a6, t[6]);
        a7 = _mm256_add_ps(a7, t[7]);
    }
    a0 = _mm256_add_ps(_mm256_add_ps(a0, a4), _mm256_add_ps(a2, a6));
    a1 = _mm256_add_ps(_mm256_add_ps(a1, a5), _mm256_add_ps(a3, a7));
    a0 = _mm256_add_ps(a0, a1);
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(a0), _mm256_extractf128_ps(a0, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
    return _mm_cvtss_f32(q);
}

LOWP_ATTR_ps static float
block_sum_lowp_ps(const uint16_t *x, int64_t m, int bf)
{
    return bf ? block_sum_lowp_ps_as(x, m, 1) : block_sum_lowp_ps_as(x, m, 0);
}

#endif
