/* transpose_block.h -- an 8 x 8 block of 4-byte items transposed in AVX2 registers: the inner
 * step of the copies and gathers that read one layout and write another (tensor_iterator.c's
 * tiles of transposed inputs, copy.c's transposed copies).  It only moves bits, so it serves
 * every 4-byte type (conv_packed_wgrad.c's gradient transposes use the register step).
 * Callers are compiled for AVX2 (target attribute) and check
 * ptl_cpu_capability() first. */
#ifndef PTL_ATEN_TRANSPOSE_BLOCK_H
#define PTL_ATEN_TRANSPOSE_BLOCK_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <stdint.h>

#define PTL_HAVE_TRANSPOSE_BLOCK 1

/* The 8 rows v[0..8) of an 8 x 8 block of floats become its columns (v[q] = column q):
 * unpacking pairs of rows, then 4-row columns within each 128-bit half, then joining the
 * halves of rows 0-3 and 4-7. */
__attribute__((target("avx2"))) static inline void
ptl_transpose8_ps(__m256 v[8])
{
    __m256 t[8], u[8];
    for (int p = 0; p < 8; p += 2) {
        t[p] = _mm256_unpacklo_ps(v[p], v[p + 1]);
        t[p + 1] = _mm256_unpackhi_ps(v[p], v[p + 1]);
    }
    for (int p = 0; p < 8; p += 4) {
        u[p] = _mm256_shuffle_ps(t[p], t[p + 2], 0x44);
        u[p + 1] = _mm256_shuffle_ps(t[p], t[p + 2], 0xEE);
        u[p + 2] = _mm256_shuffle_ps(t[p + 1], t[p + 3], 0x44);
        u[p + 3] = _mm256_shuffle_ps(t[p + 1], t[p + 3], 0xEE);
    }
    for (int q = 0; q < 4; q++) {
        v[q] = _mm256_permute2f128_ps(u[q], u[q + 4], 0x20);
        v[q + 4] = _mm256_permute2f128_ps(u[q], u[q + 4], 0x31);
    }
}

/* dst + q * dst_stride (bytes), q = 0..7, receives the 8 items at column q of the block whose
 * rows p = 0..7 are the 8 items at src + p * src_stride. */
__attribute__((target("avx2"))) static inline void
ptl_transpose_block_4(char *dst, int64_t dst_stride, const char *src, int64_t src_stride)
{
    __m256 v[8];
    for (int p = 0; p < 8; p++) {
        v[p] = _mm256_loadu_ps((const float *)(src + p * src_stride));
    }
    ptl_transpose8_ps(v);
    for (int q = 0; q < 8; q++) {
        _mm256_storeu_ps((float *)(dst + q * dst_stride), v[q]);
    }
}
#endif

#endif
