/* copy_bf16.h -- copy.c's AVX2 loops of float32 / float64 -> bfloat16 (its vec_convs
 * table's hand-written pairs), included once by copy.c inside its AVX2 section.  PyTorch's
 * counterpart is the float -> BFloat16 conversion of aten/src/ATen/cpu/vec/vec256/. */
#ifndef PTL_ATEN_NATIVE_COPY_BF16_H
#define PTL_ATEN_NATIVE_COPY_BF16_H

#include <immintrin.h>

#include "../../c10/dtype.h"
#include "vec_math.h"

/* float32 -> bfloat16 eight lanes at a time, ptl_f_to_bf16's bits: the 32-bit lanes hold
 * the bfloat16 bits, round half to even (u + 0x7fff + the last kept bit) or a NaN's top half
 * with its quiet bit set.  The compiler's vectorization of ptl_f_to_bf16 packed and permuted
 * both results before a blend, 31 instructions for 16 values (1e6 values at 0.7-0.8x
 * PyTorch's time on a Zen 3); this one packs once. */
PTL_AVX2 static inline __m256i
bf16_bits_in_epi32(__m256 v)
{
    __m256i u = _mm256_castps_si256(v), hi = _mm256_srli_epi32(u, 16);
    __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)),
                                 _mm256_and_si256(hi, _mm256_set1_epi32(1)));
    __m256i nan = _mm256_or_si256(hi, _mm256_set1_epi32(0x40));
    return _mm256_blendv_epi8(_mm256_srli_epi32(r, 16), nan,
                              _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
}

/* o[0..16) = the bfloat16 bits of the 32-bit lanes of lo and hi */
PTL_AVX2 static inline void
bf16_store16(ptl_bf16 *o, __m256i lo, __m256i hi)
{
    __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8);
    _mm256_storeu_si256((__m256i *)o, p);
}

PTL_AVX2 static void
bf16_from_f4_avx2(ptl_bf16 *o, const float *a, int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        bf16_store16(o + i, bf16_bits_in_epi32(_mm256_loadu_ps(a + i)),
                     bf16_bits_in_epi32(_mm256_loadu_ps(a + i + 8)));
    }
    for (; i < n; i++) {
        o[i] = ptl_f_to_bf16(a[i]);
    }
}

/* float64 -> bfloat16 through float32, as copy.c's scalar loop rounds it */
PTL_AVX2 static void
bf16_from_f8_avx2(ptl_bf16 *o, const double *a, int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 lo = _mm256_set_m128(_mm256_cvtpd_ps(_mm256_loadu_pd(a + i + 4)),
                                    _mm256_cvtpd_ps(_mm256_loadu_pd(a + i)));
        __m256 hi = _mm256_set_m128(_mm256_cvtpd_ps(_mm256_loadu_pd(a + i + 12)),
                                    _mm256_cvtpd_ps(_mm256_loadu_pd(a + i + 8)));
        bf16_store16(o + i, bf16_bits_in_epi32(lo), bf16_bits_in_epi32(hi));
    }
    for (; i < n; i++) {
        o[i] = ptl_f_to_bf16((float)a[i]);
    }
}

#endif
