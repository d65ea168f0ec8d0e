/* random_fill.c -- the fill engine of random.c's samplers: the elements [b, e) of a
 * PtlDistJob (distributions.h, whose per-element formulas random.cu shares), element by
 * element, or through the vector Philox and the vector Box-Muller transform where the CPU and
 * the job allow (Note [Vector Philox], Note [Vector Box-Muller]).  Every path gives element
 * i the value ptl_dist_value gives it, so the split and the vector width change no bit. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../../c10/cpu_features.h"
#include "../distributions.h"
#include "../philox.h"
#include "native.h"
#include "vec_math.h"

#define DIST_LOOP(DT)                          \
    for (int64_t i = b; i < e; i++) {          \
        ptl_dist_store(&j, &cur, i, (DT));     \
    }                                          \
    break

/* [b, e) of a job, element by element: a loop per dtype.  The job is copied to a local
 * whose address does not escape, so that its fields stay in registers across the stores. */
static int
dist_range(const PtlDistJob *job, int64_t b, int64_t e)
{
    const PtlDistJob j = *job;
    PtlDistCursor cur = ptl_dist_cursor();
    switch (j.dt) {
    case PTL_DTYPE_BOOL: DIST_LOOP(PTL_DTYPE_BOOL);
    case PTL_DTYPE_UINT8: DIST_LOOP(PTL_DTYPE_UINT8);
    case PTL_DTYPE_INT8: DIST_LOOP(PTL_DTYPE_INT8);
    case PTL_DTYPE_INT16: DIST_LOOP(PTL_DTYPE_INT16);
    case PTL_DTYPE_INT32: DIST_LOOP(PTL_DTYPE_INT32);
    case PTL_DTYPE_INT64: DIST_LOOP(PTL_DTYPE_INT64);
    case PTL_DTYPE_FLOAT16: DIST_LOOP(PTL_DTYPE_FLOAT16);
    case PTL_DTYPE_BFLOAT16: DIST_LOOP(PTL_DTYPE_BFLOAT16);
    case PTL_DTYPE_FLOAT32: DIST_LOOP(PTL_DTYPE_FLOAT32);
    default: DIST_LOOP(PTL_DTYPE_FLOAT64);
    }
    return 0;
}
#undef DIST_LOOP

#ifdef PTL_HAVE_AVX2_KERNELS
/* The first element at or after b (at most e) that starts a Philox block of `per` elements
 * (per = 2 or 4), the elements before it filled through dist_range: where a vector range
 * starts its whole blocks */
static int64_t
fill_to_block(const PtlDistJob *j, int64_t b, int64_t e, int64_t per)
{
    int64_t i = (b + per - 1) / per * per;
    if (i > e) {
        i = e;
    }
    dist_range(j, b, i);
    return i;
}

/* Note [Vector Philox]
 * The float32 uniforms (rand, rand_like, uniform_) and normals (randn, randn_like, normal_
 * with scalar mean and std) draw eight Philox blocks at once, one in each 32-bit lane of
 * AVX2 vectors: the rounds of ptl_philox4x32_10 on the same integers (the 32 x 32 -> 64-bit
 * products by _mm256_mul_epu32 on the even lanes and on the odd ones shifted down), so
 * every word is the scalar stream's.  A uniform word becomes its float as ptl_dist_value does
 * -- its top 24 bits times 2^-24, exact -- and then, unless the range is [0, 1), from + u
 * (to - from) in double, a multiply and an add as in ptl_transform_uniform; a 4 x 8
 * transpose puts word w of block k at element 4 k + w.  The float normals transform the
 * pairs in vectors too (Note [Vector Box-Muller]), and so do the float64 ones
 * (normal_doubles_##S); float32, float16 and bfloat16 log_normal_ and normals with tensor
 * mean or std take the vector standard normals and finish element by element
 * (normal_finish_floats).  So the values are the scalar path's bit for bit, for any seed,
 * offset and split. */

/* The high and low halves of the 32 x 32 -> 64-bit products a * m, lane by lane */
PTL_AVX2 static inline void
philox_mulhilo8(__m256i a, __m256i m, __m256i *hi, __m256i *lo)
{
    __m256i pe = _mm256_mul_epu32(a, m);
    __m256i po = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
    *hi = _mm256_blend_epi32(_mm256_srli_epi64(pe, 32), po, 0xAA);
    *lo = _mm256_blend_epi32(pe, _mm256_slli_epi64(po, 32), 0xAA);
}

/* The ten rounds of ptl_philox4x32_10 on the counter words c0..c3 (vectors of type T, one
 * block a 32-bit lane; MULHILO, XOR and SET1 the vector kind's operations), key seed */
#define PHILOX_ROUNDS(T, MULHILO, XOR, SET1, c0, c1, c2, c3, seed)                        \
    do {                                                                                  \
        const T m0_ = SET1((int)PTL_PHILOX_M0), m1_ = SET1((int)PTL_PHILOX_M1);           \
        uint32_t k0_ = (uint32_t)(seed), k1_ = (uint32_t)((seed) >> 32);                  \
        for (int r_ = 0; r_ < 10; r_++) {                                                 \
            if (r_ > 0) {                                                                 \
                k0_ += PTL_PHILOX_W0;                                                     \
                k1_ += PTL_PHILOX_W1;                                                     \
            }                                                                             \
            T hi0_, lo0_, hi1_, lo1_;                                                     \
            MULHILO(c0, m0_, &hi0_, &lo0_);                                               \
            MULHILO(c2, m1_, &hi1_, &lo1_);                                               \
            c0 = XOR(XOR(hi1_, c1), SET1((int)k0_));                                      \
            c2 = XOR(XOR(hi0_, c3), SET1((int)k1_));                                      \
            c1 = lo1_;                                                                    \
            c3 = lo0_;                                                                    \
        }                                                                                 \
    } while (0)

/* The words w[0..3] of draw `draw` of the blocks blk .. blk + 7 of the stream (seed,
 * offset): ptl_philox_draw lane by lane */
PTL_AVX2 static void
philox_draws8(uint64_t seed, uint64_t offset, int64_t blk, uint64_t draw, __m256i w[4])
{
    uint32_t lo[8], hi[8];
    for (int l = 0; l < 8; l++) {
        uint64_t e = offset + (uint64_t)blk + (uint64_t)l;
        lo[l] = (uint32_t)e;
        hi[l] = (uint32_t)(e >> 32);
    }
    __m256i c0 = _mm256_loadu_si256((const __m256i *)lo);
    __m256i c1 = _mm256_loadu_si256((const __m256i *)hi);
    __m256i c2 = _mm256_set1_epi32((int)(uint32_t)draw);
    __m256i c3 = _mm256_set1_epi32((int)(uint32_t)(draw >> 32));
    PHILOX_ROUNDS(__m256i, philox_mulhilo8, _mm256_xor_si256, _mm256_set1_epi32, c0, c1, c2, c3,
                  seed);
    w[0] = c0;
    w[1] = c1;
    w[2] = c2;
    w[3] = c3;
}

/* draw 0 of the blocks blk .. blk + 7 */
PTL_AVX2 static inline void
philox_draw8(uint64_t seed, uint64_t offset, int64_t blk, __m256i w[4])
{
    philox_draws8(seed, offset, blk, 0, w);
}

/* philox_mulhilo8 in 16 lanes */
PTL_AVX512 static inline void
philox_mulhilo16(__m512i a, __m512i m, __m512i *hi, __m512i *lo)
{
    __m512i pe = _mm512_mul_epu32(a, m);
    __m512i po = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m);
    *hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(pe, 32), po);
    *lo = _mm512_mask_blend_epi32(0xAAAA, pe, _mm512_slli_epi64(po, 32));
}

/* philox_draw8 for the sixteen blocks blk .. blk + 15, one a 32-bit lane of AVX-512 vectors
 * (the Box-Muller uniforms and the float64 uniforms: half the rounds' instructions) */
PTL_AVX512 static void
philox_draw16(uint64_t seed, uint64_t offset, int64_t blk, __m512i w[4])
{
    const __m512i iota = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
    __m512i e0 = _mm512_add_epi64(_mm512_set1_epi64((int64_t)(offset + (uint64_t)blk)), iota);
    __m512i e1 = _mm512_add_epi64(e0, _mm512_set1_epi64(8));
    __m512i c0 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi64_epi32(e0)),
                                    _mm512_cvtepi64_epi32(e1), 1);
    __m512i c1 = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm512_cvtepi64_epi32(_mm512_srli_epi64(e0, 32))),
        _mm512_cvtepi64_epi32(_mm512_srli_epi64(e1, 32)), 1);
    __m512i c2 = _mm512_setzero_si512(), c3 = _mm512_setzero_si512();
    PHILOX_ROUNDS(__m512i, philox_mulhilo16, _mm512_xor_si512, _mm512_set1_epi32, c0, c1, c2, c3,
                  seed);
    w[0] = c0;
    w[1] = c1;
    w[2] = c2;
    w[3] = c3;
}

/* o[k] = a + o[k] b for k < n (n a multiple of D's lanes) in double lanes of kind D (pd,
 * pd512), a multiply and an add, rounded back to float: the uniforms' from + u (to - from)
 * and the normals' mean + z std, as ptl_dist_value computes them */
#define DEFINE_AFFINE_F4(D)                                                               \
    PTL_VATTR(D) static inline void                                                       \
    affine_f4_##D(float *o, int64_t n, double a, double b)                                \
    {                                                                                     \
        const PTL_VT(D) av = PTL_V(D, set1)(a), bv = PTL_V(D, set1)(b);                   \
        for (int64_t k = 0; k < n; k += PTL_VLANES(D)) {                                  \
            PTL_VT(D) x = PTL_VLOADF(D, o + k);                                           \
            PTL_VSTOREF(D, o + k, PTL_V(D, add)(PTL_V(D, mul)(x, bv), av));               \
        }                                                                                 \
    }
DEFINE_AFFINE_F4(pd)
DEFINE_AFFINE_F4(pd512)
#undef DEFINE_AFFINE_F4

/* out[i .. i + n) of dtype dt (float16 or bfloat16) = the floats f[0 .. n), rounded as
 * ptl_f_to_half and ptl_f_to_bf16 round them, eight at a time: float16 through F16C's
 * conversion (IEEE's, the same bits; a group holding a nan goes one by one, since
 * ptl_f_to_half's nan is the quiet one without the payload), bfloat16 by the same integer
 * steps as ptl_f_to_bf16 in 32-bit lanes.  Element by element, these stores were a third
 * of a float16 normal_ (1e6 values, one thread: 3.56 ms, PyTorch 3.52). */
__attribute__((target("avx2,f16c"))) static void
store_halves(PtlDtype dt, void *out, int64_t i, const float *f, int64_t n)
{
    int64_t k = 0;
    if (dt == PTL_DTYPE_FLOAT16 && ptl_cpu_has_f16c()) {
        ptl_half *o = (ptl_half *)out + i;
        for (; k + 8 <= n; k += 8) {
            __m256 v = _mm256_loadu_ps(f + k);
            if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0) {
                for (int l = 0; l < 8; l++) {
                    o[k + l] = ptl_f_to_half(f[k + l]);
                }
                continue;
            }
            _mm_storeu_si128((__m128i *)(o + k), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
        }
        for (; k < n; k++) {
            o[k] = ptl_f_to_half(f[k]);
        }
        return;
    }
    if (dt == PTL_DTYPE_BFLOAT16) {
        ptl_bf16 *o = (ptl_bf16 *)out + i;
        const __m256i abs = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
        const __m256i half_ulp = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
        const __m256i quiet = _mm256_set1_epi32(0x40);
        for (; k + 8 <= n; k += 8) {
            __m256i u = _mm256_loadu_si256((const __m256i *)(f + k));
            __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs), inf);
            __m256i r = _mm256_add_epi32(
                u, _mm256_add_epi32(half_ulp, _mm256_and_si256(_mm256_srli_epi32(u, 16), one)));
            r = _mm256_blendv_epi8(_mm256_srli_epi32(r, 16),
                                   _mm256_or_si256(_mm256_srli_epi32(u, 16), quiet), nan);
            /* the low halves of the eight lanes, in order: packus works within 128-bit
             * lanes, so its 64-bit words 0 and 2 hold them */
            __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
            _mm_storeu_si128((__m128i *)(o + k), _mm256_castsi256_si128(p));
        }
        for (; k < n; k++) {
            o[k] = ptl_f_to_bf16(f[k]);
        }
        return;
    }
    for (; k < n; k++) {
        ((ptl_half *)out)[i + k] = ptl_f_to_half(f[k]);
    }
}

/* Stores the 32 values f[w] lane l (word w of Philox block l of philox_draw8) to o in element
 * order, element 4 l + w: the 4 x 8 transposed */
PTL_AVX2 static inline void
store_in_element_order(const __m256 f[4], float *o)
{
    __m256 t[4], u[4];
    t[0] = _mm256_unpacklo_ps(f[0], f[1]);
    t[1] = _mm256_unpackhi_ps(f[0], f[1]);
    t[2] = _mm256_unpacklo_ps(f[2], f[3]);
    t[3] = _mm256_unpackhi_ps(f[2], f[3]);
    u[0] = _mm256_shuffle_ps(t[0], t[2], 0x44);
    u[1] = _mm256_shuffle_ps(t[0], t[2], 0xEE);
    u[2] = _mm256_shuffle_ps(t[1], t[3], 0x44);
    u[3] = _mm256_shuffle_ps(t[1], t[3], 0xEE);
    _mm256_storeu_ps(o, _mm256_permute2f128_ps(u[0], u[1], 0x20));
    _mm256_storeu_ps(o + 8, _mm256_permute2f128_ps(u[2], u[3], 0x20));
    _mm256_storeu_ps(o + 16, _mm256_permute2f128_ps(u[0], u[1], 0x31));
    _mm256_storeu_ps(o + 24, _mm256_permute2f128_ps(u[2], u[3], 0x31));
}

/* The uniforms of the n elements from element i (both multiples of 4; n of 32) of a job of
 * one word an element (block_shift 2, bits <= 24) into o, as floats (Note [Vector Philox]):
 * u = (word >> (32 - bits)) 2^-bits, exact in float, then from + u (to - from) in double
 * (affine_f4_pd) unless the range is [0, 1) */
PTL_AVX2 static void
uniform_floats_avx2(const PtlDistJob *j, int64_t i, int64_t n, float *o)
{
    const __m256 scale = _mm256_set1_ps(ldexpf(1.0f, -j->bits));
    const __m128i shift = _mm_cvtsi32_si128(32 - j->bits);
    const int unit = j->a == 0.0 && j->b == 1.0;
    for (int64_t k = 0; k < n; k += 32) {
        __m256i w[4];
        __m256 f[4];
        philox_draw8(j->seed, j->offset, (i + k) / 4, w);
        for (int l = 0; l < 4; l++) {
            f[l] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srl_epi32(w[l], shift)), scale);
        }
        store_in_element_order(f, o + k);
        if (!unit) {
            affine_f4_pd(o + k, 32, j->a, j->b - j->a);
        }
    }
}

/* [b, e) of a float32, float16 or bfloat16 uniform job with scalar bounds (Note [Vector
 * Philox]): whole groups of eight blocks through uniform_floats_avx2 (float16 and bfloat16
 * through a float buffer and store_halves, rounded as ptl_dist_store rounds: element by
 * element, rand of 1e6 float16 values was 0.44x PyTorch), the elements before the first
 * block boundary and after the last group through dist_range */
PTL_AVX2 static void
uniform_range_f4_avx2(const PtlDistJob *j, int64_t b, int64_t e)
{
    float buf[512];
    int64_t i = fill_to_block(j, b, e, 4);
    while (i + 32 <= e) {
        int64_t n = (e - i) / 32 * 32;
        float *o = (float *)j->out + i;
        if (j->dt != PTL_DTYPE_FLOAT32) {
            n = n < 512 ? n : 512;
            o = buf;
        }
        uniform_floats_avx2(j, i, n, o);
        if (j->dt != PTL_DTYPE_FLOAT32) {
            store_halves(j->dt, j->out, i, buf, n);
        }
        i += n;
    }
    dist_range(j, i, e);
}

/* Note [Integer draws in vectors]
 * A random_ / randint job whose range is at most 2^32 takes one 32-bit word x an element and
 * stores from + x mod range.  Element by element, a 64-bit division each made randint 0.66x
 * PyTorch (1e6 int64 values, one thread).  Here eight blocks' words are drawn at once
 * (philox_draw8, the 4 x 8 transposed into element order), and x mod range comes from the
 * double reciprocal inv of d = range: with x = q d + f (0 <= f < d), (x + 1/2) / d lies
 * 1 / (2 d) or more from the integers q and q + 1, while the two roundings of
 * (x + 1/2) inv (x + 1/2 is exact) move it by at most 2^-51 (q + 1) <= 2^-18 / d (x and d
 * are at most 2^32, so q d < 2^32): q = floor((x + 1/2) inv) exactly, and x - q d is exact
 * in double (integers below 2^53).  No division, and no correction step: the loop is a
 * vector one.  The values are then stored as ptl_dist_store stores them. */

/* vals[k] = from + (x[k] mod range) for k < n, every x below 2^32, range at most 2^32
 * (Note [Integer draws in vectors]) */
static inline __attribute__((always_inline)) void
draws_mod_range(const uint32_t *x, int64_t n, int64_t from, uint64_t range, int64_t *vals)
{
    const double d = (double)range, inv = 1.0 / d;
    for (int64_t k = 0; k < n; k++) {
        double v = (double)x[k];
        double r = v - floor((v + 0.5) * inv) * d;
        vals[k] = (int64_t)((uint64_t)from + (uint64_t)(int64_t)r);
    }
}

PTL_AVX512 static void
draws_mod_range_avx512(const uint32_t *x, int64_t n, int64_t from, uint64_t range,
                       int64_t *vals)
{
    draws_mod_range(x, n, from, range, vals);
}

PTL_AVX2 static void
draws_mod_range_avx2(const uint32_t *x, int64_t n, int64_t from, uint64_t range, int64_t *vals)
{
    draws_mod_range(x, n, from, range, vals);
}

/* The loop of store_draws and store_values for one dtype: out[i + k] = CONV, k < n */
#define STORE_EACH(T, CONV)                          \
    for (int64_t k = 0; k < n; k++) {                \
        ((T *)out)[i + k] = CONV;                    \
    }                                                \
    break

/* out[i + k] = vals[k] (k < n) converted as ptl_dist_store converts a PTL_DIST_RANDOM
 * value to dt */
PTL_AVX2 static void
store_draws(PtlDtype dt, void *out, int64_t i, const int64_t *vals, int64_t n)
{
    switch (dt) {
    case PTL_DTYPE_BOOL: STORE_EACH(uint8_t, (uint8_t)(vals[k] != 0));
    case PTL_DTYPE_UINT8: STORE_EACH(uint8_t, (uint8_t)vals[k]);
    case PTL_DTYPE_INT8: STORE_EACH(int8_t, (int8_t)vals[k]);
    case PTL_DTYPE_INT16: STORE_EACH(int16_t, (int16_t)vals[k]);
    case PTL_DTYPE_INT32: STORE_EACH(int32_t, (int32_t)vals[k]);
    case PTL_DTYPE_INT64: STORE_EACH(int64_t, vals[k]);
    case PTL_DTYPE_FLOAT16: STORE_EACH(ptl_half, ptl_f_to_half((float)vals[k]));
    case PTL_DTYPE_BFLOAT16: STORE_EACH(ptl_bf16, ptl_f_to_bf16((float)vals[k]));
    case PTL_DTYPE_FLOAT32: STORE_EACH(float, (float)vals[k]);
    default: STORE_EACH(double, (double)vals[k]);
    }
}

/* The words of the elements [i, i + n) of a job of one word an element (block_shift 2), in
 * element order: i a multiple of 4, n of 32 (eight Philox blocks a draw) */
PTL_AVX2 static void
words_in_order(const PtlDistJob *j, int64_t i, int64_t n, uint32_t *x)
{
    for (int64_t k = 0; k < n; k += 32) {
        __m256i w[4];
        __m256 f[4];
        philox_draw8(j->seed, j->offset, (i + k) / 4, w);
        for (int l = 0; l < 4; l++) {
            f[l] = _mm256_castsi256_ps(w[l]);
        }
        store_in_element_order(f, (float *)(x + k));
    }
}

/* [b, e) of a PTL_DIST_RANDOM job of one word an element (Note [Integer draws in vectors]):
 * 512 elements a chunk; the elements before the first block boundary and after the last
 * whole group of eight blocks go through dist_range */
PTL_AVX2 static void
random_range_words(const PtlDistJob *j, int64_t b, int64_t e)
{
    uint32_t x[512];
    int64_t vals[512];
    const int wide = ptl_cpu_capability() >= PTL_CPU_AVX512;
    int64_t i = fill_to_block(j, b, e, 4);
    while (i + 32 <= e) {
        int64_t n = (e - i) / 32 * 32 < 512 ? (e - i) / 32 * 32 : 512;
        words_in_order(j, i, n, x);
        if (wide) {
            draws_mod_range_avx512(x, n, j->from, j->range, vals);
        }
        else {
            draws_mod_range_avx2(x, n, j->from, j->range, vals);
        }
        store_draws(j->dt, j->out, i, vals, n);
        i += n;
    }
    dist_range(j, i, e);
}

/* Words 0 and 2 of the blocks blk .. blk + L - 1, as the Box-Muller uniforms of
 * ptl_dist_value: u1 = (w0 >> 8) 2^-24 in [0, 1), u2 = 1 - (w2 >> 8) 2^-24 in (0, 1] */
PTL_AVX2 static inline void
normal_uniforms_ps(const PtlDistJob *j, int64_t blk, __m256 *u1, __m256 *u2)
{
    const __m256 scale = _mm256_set1_ps(0x1p-24f);
    __m256i w[4];
    philox_draw8(j->seed, j->offset, blk, w);
    *u1 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(w[0], 8)), scale);
    *u2 = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(w[2], 8)), scale,
                           _mm256_set1_ps(1.0f));
}

PTL_AVX512 static inline void
normal_uniforms_ps512(const PtlDistJob *j, int64_t blk, __m512 *u1, __m512 *u2)
{
    const __m512 scale = _mm512_set1_ps(0x1p-24f);
    __m512i w[4];
    philox_draw16(j->seed, j->offset, blk, w);
    *u1 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(w[0], 8)), scale);
    *u2 = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(w[2], 8)), scale,
                           _mm512_set1_ps(1.0f));
}

/* z0 = (a0 a1 ...), z1 = (b0 b1 ...) stored as a0 b0 a1 b1 ... at o[0 .. 2L) */
#define DEFINE_STORE_INTERLEAVED(S)                                                       \
    PTL_VATTR(S) static inline void                                                       \
    store_interleaved_##S(PTL_VE(S) *o, PTL_VT(S) z0, PTL_VT(S) z1)                       \
    {                                                                                     \
        PTL_VT(S) lo = PTL_V(S, unpacklo)(z0, z1), hi = PTL_V(S, unpackhi)(z0, z1);       \
        PTL_V(S, storeu)(o, PTL_V(S, permute2f128)(lo, hi, 0x20));                        \
        PTL_V(S, storeu)(o + PTL_VLANES(S), PTL_V(S, permute2f128)(lo, hi, 0x31));        \
    }
DEFINE_STORE_INTERLEAVED(ps)
DEFINE_STORE_INTERLEAVED(pd)
#undef DEFINE_STORE_INTERLEAVED

PTL_AVX512 static inline void
store_interleaved_ps512(float *o, __m512 z0, __m512 z1)
{
    const __m512i first = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22,
                                            7, 23);
    const __m512i second = _mm512_add_epi32(first, _mm512_set1_epi32(8));
    _mm512_storeu_ps(o, _mm512_permutex2var_ps(z0, first, z1));
    _mm512_storeu_ps(o + 16, _mm512_permutex2var_ps(z0, second, z1));
}

/* Note [Vector Box-Muller]
 * The normals of n elements (n a multiple of 2 L, L the lanes of S) from element i (even):
 * block i / 2 + l in lane l, its two uniforms (normal_uniforms_##S), the pair r cos, r sin
 * with r = sqrt(-2 log u2) and the angle 2 pi u1 (vec_math.h's log and sincos2pi, the twins
 * of scalar_math.h's formulas that ptl_box_muller_f calls), cosines to even elements and
 * sines to odd ones, then a + z b in double as ptl_dist_value does (z + 0 when a = +0 and
 * b = 1: the same bits, -0 included).  So every element is ptl_dist_value's, at either
 * width, on any split, and on the CUDA device (Note [CUDA random fills]).  The float64
 * normals take the same steps in double lanes with the double formulas (normal_doubles_##S;
 * a + z b needs no special case there: it is ptl_dist_value's float64 step as it stands). */
#define DEFINE_NORMAL_FLOATS(S, D)                                                        \
    PTL_VATTR(S) static void                                                              \
    normal_floats_##S(const PtlDistJob *j, int64_t i, int64_t n, float *o)                \
    {                                                                                     \
        const int64_t L = PTL_VLANES(S);                                                  \
        const int unit = j->a == 0.0 && !signbit(j->a) && j->b == 1.0;                    \
        for (int64_t k = 0; k < n; k += 2 * L) {                                          \
            PTL_VT(S) u1, u2, sn, cs;                                                     \
            normal_uniforms_##S(j, (i + k) / 2, &u1, &u2);                                \
            PTL_VT(S) r = PTL_V(S, sqrt)(PTL_V(S, mul)(                                   \
                PTL_V(S, set1)(-2.0f), ptl_vm_log_scaled_##S(u2, PTL_V(S, setzero)()))); \
            ptl_vm_sincos2pi_##S(u1, &sn, &cs);                                           \
            PTL_VT(S) z0 = PTL_V(S, mul)(r, cs), z1 = PTL_V(S, mul)(r, sn);               \
            if (unit) {                                                                   \
                z0 = PTL_V(S, add)(z0, PTL_V(S, setzero)());                              \
                z1 = PTL_V(S, add)(z1, PTL_V(S, setzero)());                              \
            }                                                                             \
            store_interleaved_##S(o + k, z0, z1);                                         \
            if (!unit) {                                                                  \
                affine_f4_##D(o + k, 2 * L, j->a, j->b);                                  \
            }                                                                             \
        }                                                                                 \
    }
DEFINE_NORMAL_FLOATS(ps, pd)
DEFINE_NORMAL_FLOATS(ps512, pd512)
#undef DEFINE_NORMAL_FLOATS

/* [b, e) of a float32, float16 or bfloat16 normal job with scalar mean and std: the whole
 * groups of L blocks through normal_floats_##S (Note [Vector Box-Muller]; float16 and
 * bfloat16 through a float buffer, rounded as ptl_dist_store rounds), the elements before
 * the first pair and after the last group through dist_range */
PTL_AVX2 static void
normal_range_vec(const PtlDistJob *j, int64_t b, int64_t e)
{
    const int wide = ptl_cpu_capability() >= PTL_CPU_AVX512;
    const int64_t step = wide ? 32 : 16;
    float buf[512];
    int64_t i = fill_to_block(j, b, e, 2);
    while (i + step <= e) {
        int64_t n = (e - i) / step * step;
        float *o = (float *)j->out + i;
        if (j->dt != PTL_DTYPE_FLOAT32) {
            n = n < 512 ? n : 512;
            o = buf;
        }
        if (wide) {
            normal_floats_ps512(j, i, n, o);
        }
        else {
            normal_floats_ps(j, i, n, o);
        }
        if (j->dt != PTL_DTYPE_FLOAT32) {
            store_halves(j->dt, j->out, i, buf, n);
        }
        i += n;
    }
    dist_range(j, i, e);
}

/* The words wlo:whi (word 0 and 1, or 2 and 3, of eight blocks, a block a lane) as 53-bit
 * uniforms (ptl_uniform_bits): the 53 top bits v of each word pair times 2^-53, in [0, 1);
 * the blocks of lanes 0-3 in u[0], of lanes 4-7 in u[1].  uniforms53_pd: words 0-1 and 2-3
 * of the blocks blk .. blk + 7 (draw 0), blocks blk .. blk + 3 in u01[0], u23[0] and the
 * next four in u01[1], u23[1].  AVX2 has no 64-bit integer to double
 * conversion: v's low 52 bits become a double under 2^52's exponent, less 2^52, and its top
 * bit 2^52 is added (exact: the sum is an integer below 2^53). */
PTL_AVX2 static inline void
uniforms53_words(__m256i wlo, __m256i whi, __m256d u[2])
{
    const __m256i low52 = _mm256_set1_epi64x(0xfffffffffffffLL);
    const __m256i two52 = _mm256_castpd_si256(_mm256_set1_pd(0x1p52));
    const __m256d scale = _mm256_set1_pd(0x1p-53);
    /* the 64-bit words hi:lo of blocks (0 1 4 5) and (2 3 6 7), then in block order */
    __m256i lo = _mm256_unpacklo_epi32(wlo, whi);
    __m256i hi = _mm256_unpackhi_epi32(wlo, whi);
    /* each permute's selector a literal: an immediate computed from h compiled only where the
     * loop was unrolled (not at -O0, nor in the sanitized build with -fno-wrapv) */
    const __m256i halves[2] = {_mm256_permute2x128_si256(lo, hi, 0x20),
                               _mm256_permute2x128_si256(lo, hi, 0x31)};
    for (int h = 0; h < 2; h++) {
        __m256i v = _mm256_srli_epi64(halves[h], 11);
        __m256i top = _mm256_sub_epi64(_mm256_setzero_si256(), _mm256_srli_epi64(v, 52));
        __m256d d = _mm256_sub_pd(
            _mm256_castsi256_pd(_mm256_or_si256(_mm256_and_si256(v, low52), two52)),
            _mm256_set1_pd(0x1p52));
        d = _mm256_add_pd(d, _mm256_castsi256_pd(_mm256_and_si256(top, two52)));
        u[h] = _mm256_mul_pd(d, scale);
    }
}

PTL_AVX2 static inline void
uniforms53_pd(const PtlDistJob *j, int64_t blk, __m256d u01[2], __m256d u23[2])
{
    __m256i w[4];
    philox_draw8(j->seed, j->offset, blk, w);
    uniforms53_words(w[0], w[1], u01);
    uniforms53_words(w[2], w[3], u23);
}

/* The float64 Box-Muller uniforms of ptl_dist_value for blocks blk .. blk + 7: u1 from words
 * 0-1, u2 = 1 - (words 2-3's uniform) in (0, 1] (ptl_uniform_open0) */
PTL_AVX2 static inline void
normal_uniforms_pd(const PtlDistJob *j, int64_t blk, __m256d u1[2], __m256d u2[2])
{
    uniforms53_pd(j, blk, u1, u2);
    for (int h = 0; h < 2; h++) {
        u2[h] = _mm256_sub_pd(_mm256_set1_pd(1.0), u2[h]);
    }
}

PTL_AVX512 static inline void
normal_uniforms_pd512(const PtlDistJob *j, int64_t blk, __m512d u1[2], __m512d u2[2])
{
    __m256d a1[2], a2[2];
    normal_uniforms_pd(j, blk, a1, a2);
    u1[0] = _mm512_insertf64x4(_mm512_castpd256_pd512(a1[0]), a1[1], 1);
    u2[0] = _mm512_insertf64x4(_mm512_castpd256_pd512(a2[0]), a2[1], 1);
}

PTL_AVX512 static inline void
store_interleaved_pd512(double *o, __m512d z0, __m512d z1)
{
    const __m512i first = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11);
    const __m512i second = _mm512_add_epi64(first, _mm512_set1_epi64(4));
    _mm512_storeu_pd(o, _mm512_permutex2var_pd(z0, first, z1));
    _mm512_storeu_pd(o + 8, _mm512_permutex2var_pd(z0, second, z1));
}

/* The float64 normals of n elements (n a multiple of 16) from element i (even), as Note
 * [Vector Box-Muller] computes the float ones: eight blocks' uniforms at a time
 * (normal_uniforms_##S), the pairs through vec_math.h's double log and sincos2pi (the twins
 * of the formulas ptl_box_muller_pair calls), then a + b z as ptl_dist_value computes it. */
#define DEFINE_NORMAL_DOUBLES(S)                                                          \
    PTL_VATTR(S) static void                                                              \
    normal_doubles_##S(const PtlDistJob *j, int64_t i, int64_t n, double *o)              \
    {                                                                                     \
        const int64_t L = PTL_VLANES(S);                                                  \
        const PTL_VT(S) a = PTL_V(S, set1)(j->a), b = PTL_V(S, set1)(j->b);               \
        for (int64_t k = 0; k < n; k += 16) {                                             \
            PTL_VT(S) u1[2], u2[2];                                                       \
            normal_uniforms_##S(j, (i + k) / 2, u1, u2);                                  \
            for (int64_t g = 0; g < 8 / L; g++) {                                         \
                PTL_VT(S) sn, cs;                                                         \
                PTL_VT(S) r = PTL_V(S, sqrt)(PTL_V(S, mul)(                               \
                    PTL_V(S, set1)(-2.0), ptl_vm_log_normal_##S(u2[g])));                 \
                ptl_vm_sincos2pi_##S(u1[g], &sn, &cs);                                    \
                PTL_VT(S) z0 = PTL_V(S, add)(a, PTL_V(S, mul)(b, PTL_V(S, mul)(r, cs)));  \
                PTL_VT(S) z1 = PTL_V(S, add)(a, PTL_V(S, mul)(b, PTL_V(S, mul)(r, sn)));  \
                store_interleaved_##S(o + k + 2 * L * g, z0, z1);                         \
            }                                                                             \
        }                                                                                 \
    }
DEFINE_NORMAL_DOUBLES(pd)
DEFINE_NORMAL_DOUBLES(pd512)
#undef DEFINE_NORMAL_DOUBLES

/* The float64 uniforms u of the n elements from element i (i even, n a multiple of 32) as
 * from + u (to - from) into o: words 2 s, 2 s + 1 of block k for element 2 k + s, sixteen
 * blocks a vector (AVX-512 DQ converts the 53-bit integers itself) */
PTL_AVX512 static void
uniform_doubles_pd512(const PtlDistJob *j, int64_t i, int64_t n, double *o)
{
    /* the 64-bit words of unpack{lo,hi}(w0, w1) hold blocks 0 1 4 5 8 9 12 13 and 2 3 6 7
     * 10 11 14 15: back into block order */
    const __m512i first8 = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
    const __m512i last8 = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
    const __m512d scale = _mm512_set1_pd(0x1p-53);
    const __m512d from = _mm512_set1_pd(j->a), width = _mm512_set1_pd(j->b - j->a);
    for (int64_t k = 0; k < n; k += 32) {
        __m512i w[4];
        __m512d u[2][2];
        philox_draw16(j->seed, j->offset, (i + k) / 2, w);
        for (int p = 0; p < 2; p++) {
            __m512i lo = _mm512_unpacklo_epi32(w[2 * p], w[2 * p + 1]);
            __m512i hi = _mm512_unpackhi_epi32(w[2 * p], w[2 * p + 1]);
            for (int h = 0; h < 2; h++) {
                __m512i v = _mm512_permutex2var_epi64(lo, h ? last8 : first8, hi);
                __m512d d = _mm512_mul_pd(_mm512_cvtepu64_pd(_mm512_srli_epi64(v, 11)), scale);
                u[p][h] = _mm512_add_pd(_mm512_mul_pd(d, width), from);
            }
        }
        for (int h = 0; h < 2; h++) {
            store_interleaved_pd512(o + k + 16 * h, u[0][h], u[1][h]);
        }
    }
}

/* [b, e) of a float64 uniform job with scalar bounds: element 2 k + s is block k's words
 * 2 s, 2 s + 1 (uniforms53_pd, eight blocks at a time, or sixteen with AVX-512), then
 * from + u (to - from), a multiply and an add as ptl_transform_uniform computes them; the
 * elements before the first pair and after the last group go through dist_range.  Element
 * by element, rand of 1e6 float64 values was 0.43x PyTorch. */
PTL_AVX2 static void
uniform_range_f8(const PtlDistJob *j, int64_t b, int64_t e)
{
    const __m256d from = _mm256_set1_pd(j->a), width = _mm256_set1_pd(j->b - j->a);
    double *o = (double *)j->out;
    int64_t i = fill_to_block(j, b, e, 2);
    if (ptl_cpu_capability() >= PTL_CPU_AVX512) {
        int64_t n = (e - i) / 32 * 32;
        uniform_doubles_pd512(j, i, n, o + i);
        i += n;
    }
    for (; i + 16 <= e; i += 16) {
        __m256d u01[2], u23[2];
        uniforms53_pd(j, i / 2, u01, u23);
        for (int h = 0; h < 2; h++) {
            store_interleaved_pd(o + i + 8 * h,
                                 _mm256_add_pd(_mm256_mul_pd(u01[h], width), from),
                                 _mm256_add_pd(_mm256_mul_pd(u23[h], width), from));
        }
    }
    dist_range(j, i, e);
}

/* out[i + k] = v[k] (k < n) converted to dt as ptl_dist_store converts ptl_dist_value's
 * double */
PTL_AVX2 static void
store_values(PtlDtype dt, void *out, int64_t i, const double *v, int64_t n)
{
    switch (dt) {
    case PTL_DTYPE_BOOL: STORE_EACH(uint8_t, (uint8_t)(v[k] != 0));
    case PTL_DTYPE_UINT8: STORE_EACH(uint8_t, (uint8_t)ptl_dist_sat_i64(v[k]));
    case PTL_DTYPE_INT8: STORE_EACH(int8_t, (int8_t)ptl_dist_sat_i64(v[k]));
    case PTL_DTYPE_INT16: STORE_EACH(int16_t, (int16_t)ptl_dist_sat_i64(v[k]));
    case PTL_DTYPE_INT32: STORE_EACH(int32_t, (int32_t)ptl_dist_sat_i64(v[k]));
    case PTL_DTYPE_INT64: STORE_EACH(int64_t, ptl_dist_sat_i64(v[k]));
    case PTL_DTYPE_FLOAT16: STORE_EACH(ptl_half, ptl_f_to_half((float)v[k]));
    case PTL_DTYPE_BFLOAT16: STORE_EACH(ptl_bf16, ptl_f_to_bf16((float)v[k]));
    case PTL_DTYPE_FLOAT32: STORE_EACH(float, (float)v[k]);
    default: STORE_EACH(double, v[k]);
    }
}
#undef STORE_EACH

/* The values of an exponential_, geometric_ or cauchy_ job with scalar parameters a and b
 * from its 53-bit uniforms u, as distributions.h's transforms compute them through the
 * twins of scalar_math.h's log and sincos2pi: -log(1 - u) / lambda; ceil(log(1 - u) / c)
 * at least 1, c = log1p(-p); median + sigma sin / cos of 2 pi (u - 1/2) / 2 */
PTL_AVX2 static inline __m256d
transform_pd(int kind, __m256d u, double a, double b, double c)
{
    const __m256d one = _mm256_set1_pd(1.0);
    if (kind == PTL_DIST_CAUCHY) {
        __m256d sn, cs;
        ptl_vm_sincos2pi_pd(_mm256_mul_pd(_mm256_sub_pd(u, _mm256_set1_pd(0.5)),
                                          _mm256_set1_pd(0.5)),
                            &sn, &cs);
        return _mm256_add_pd(_mm256_set1_pd(a),
                             _mm256_mul_pd(_mm256_set1_pd(b), _mm256_div_pd(sn, cs)));
    }
    __m256d l = ptl_vm_log_normal_pd(_mm256_sub_pd(one, u));
    if (kind == PTL_DIST_GEOMETRIC) {
        return _mm256_max_pd(one, _mm256_ceil_pd(_mm256_div_pd(l, _mm256_set1_pd(c))));
    }
    return _mm256_div_pd(_mm256_sub_pd(_mm256_setzero_pd(), l), _mm256_set1_pd(a));
}

/* [b, e) of an exponential_, geometric_ or cauchy_ job with scalar parameters: the 53-bit
 * uniforms of sixteen elements at a time (uniforms53_pd) through transform_pd, 512 values
 * a chunk, stored as ptl_dist_store stores ptl_dist_value's double; the elements before the
 * first pair and after the last group through dist_range.  Element by element (libm's log
 * and tan), geometric_ and cauchy_ were 0.63x and 0.78x PyTorch (1e6 float32 values, one
 * thread). */
PTL_AVX2 static void
transform_range(const PtlDistJob *j, int64_t b, int64_t e)
{
    const double c = j->kind == PTL_DIST_GEOMETRIC ? log1p(-j->a) : 0.0;
    double v[512];
    int64_t i = fill_to_block(j, b, e, 2);
    while (i + 16 <= e) {
        int64_t n = (e - i) / 16 * 16 < 512 ? (e - i) / 16 * 16 : 512;
        for (int64_t k = 0; k < n; k += 16) {
            __m256d u[2][2];
            uniforms53_pd(j, (i + k) / 2, u[0], u[1]);
            for (int h = 0; h < 2; h++) {
                store_interleaved_pd(v + k + 8 * h, transform_pd(j->kind, u[0][h], j->a, j->b, c),
                                     transform_pd(j->kind, u[1][h], j->a, j->b, c));
            }
        }
        store_values(j->dt, j->out, i, v, n);
        i += n;
    }
    dist_range(j, i, e);
}

/* [b, e) of a bernoulli job (one word an element): element i is 1 when its word times 2^-32
 * is below p (j->a, or p[i] for a tensor p), the comparison of ptl_dist_value, 512 elements
 * a chunk from words_in_order; the elements before the first block boundary and after the
 * last whole group of eight blocks through dist_range.  Element by element, bernoulli_ and
 * dropout's mask ran at 0.76-0.81x PyTorch (1e6 values, one thread). */
PTL_AVX2 static void
bernoulli_range(const PtlDistJob *j, int64_t b, int64_t e)
{
    uint32_t x[512];
    double v[512];
    int64_t i = fill_to_block(j, b, e, 4);
    while (i + 32 <= e) {
        int64_t n = (e - i) / 32 * 32 < 512 ? (e - i) / 32 * 32 : 512;
        words_in_order(j, i, n, x);
        if (j->pa != NULL) {
            for (int64_t k = 0; k < n; k++) {
                v[k] = (double)x[k] * 0x1p-32 < j->pa[i + k] ? 1.0 : 0.0;
            }
        }
        else {
            for (int64_t k = 0; k < n; k++) {
                v[k] = (double)x[k] * 0x1p-32 < j->a ? 1.0 : 0.0;
            }
        }
        store_values(j->dt, j->out, i, v, n);
        i += n;
    }
    dist_range(j, i, e);
}

/* [b, e) of a float64 normal job with scalar mean and std: the whole groups of eight blocks
 * through normal_doubles_##S, the elements before the first pair and after the last group
 * through dist_range */
PTL_AVX2 static void
normal_range_f8(const PtlDistJob *j, int64_t b, int64_t e)
{
    int64_t i = fill_to_block(j, b, e, 2);
    int64_t n = i < e ? (e - i) / 16 * 16 : 0;
    if (ptl_cpu_capability() >= PTL_CPU_AVX512) {
        normal_doubles_pd512(j, i, n, (double *)j->out + i);
    }
    else {
        normal_doubles_pd(j, i, n, (double *)j->out + i);
    }
    dist_range(j, i + n, e);
}

/* [b, e) of a float64 log_normal_ job with scalar mean and std: a + b z of the whole groups
 * of eight blocks through normal_doubles_##S (ptl_dist_value's v, bit for bit), 512 at a
 * time, then exp(v) of each by libm's exp, as ptl_dist_value takes it; the elements before
 * the first pair and after the last group through dist_range.  Element by element (its
 * Box-Muller pair in scalar double log, sin and cos) this was 0.8x PyTorch. */
PTL_AVX2 static void
log_normal_range_f8(const PtlDistJob *j, int64_t b, int64_t e)
{
    const int wide = ptl_cpu_capability() >= PTL_CPU_AVX512;
    int64_t i = fill_to_block(j, b, e, 2);
    while (i + 16 <= e) {
        int64_t m = (e - i) / 16 * 16 < 512 ? (e - i) / 16 * 16 : 512;
        double *o = (double *)j->out + i;
        if (wide) {
            normal_doubles_pd512(j, i, m, o);
        }
        else {
            normal_doubles_pd(j, i, m, o);
        }
        for (int64_t k = 0; k < m; k++) {
            o[k] = exp(o[k]);
        }
        i += m;
    }
    dist_range(j, i, e);
}

/* Note [Poisson draws in vectors]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * poisson draws element i's uniforms from its own counter (offset + i, draws 0, 1, ...: Note
 * [Philox streams]), as many as its sampler asks, and those Philox rounds, one block at a
 * time, were most of its time (0.75-0.94x PyTorch).  Eight elements at a time, the first
 * blocks of each are drawn in the lanes of vectors (philox_draws8), as many as the largest
 * rate of the eight usually takes (poisson_blocks: Knuth's product below rate 10 takes
 * rate + 1 uniforms on average, two a block; the transformed rejection above takes two a
 * try and rarely a third try), and each element's sampler reads them through its stream
 * (PtlPhiloxStream.pre) before it draws any further block itself: the same uniforms in the
 * same order, so the scalar stream's values.  What depends on the rate alone (e^-rate
 * below 10, a square root and two logs above: PtlPoissonRate) is computed again only where
 * the rate changes from one element to the next: libm's exp and log took a third to a half
 * of the time where every rate is the same.  Groups of eight whose rates all lie in (0, 10)
 * run Knuth's product itself in double lanes (poisson_knuth8): draw by draw, the products of
 * the lanes still above e^-rate take their next uniforms, in the scalar loop's order, so its
 * counts (0.87x PyTorch at rate 4 with the product element by element). */
#define POISSON_MAX_BLOCKS 8

/* The blocks drawn ahead for rates up to lam: the mean uniforms plus two standard
 * deviations, two a block, below rate 10; two tries above */
static int
poisson_blocks(double lam)
{
    if (!(lam > 0.0)) {
        return 0;
    }
    if (lam >= 10.0) {
        return 2;
    }
    int k = (int)((lam + 1.0) / 2.0) + 1;
    return k < POISSON_MAX_BLOCKS ? k : POISSON_MAX_BLOCKS;
}

/* Knuth's product of poisson (ptl_sample_poisson_rate below rate 10) for the eight elements
 * blk .. blk + 7, every rate in (0, 10) with e^-rate in limit: draw d of the eight streams at
 * a time, its two uniforms multiplied in lane by lane where the product is still above the
 * limit (the scalar loop's products, in its order), until every lane is done; a lane still
 * going after POISSON_KNUTH_DRAWS draws is left to the scalar sampler.  The counts into k;
 * 1 bit per lane done. */
#define POISSON_KNUTH_DRAWS 32
PTL_AVX2 static int
poisson_knuth8(const PtlDistJob *j, int64_t blk, const double limit[8], double k[8])
{
    __m256d lim[2], prod[2], cnt[2], run[2];
    const __m256d one = _mm256_set1_pd(1.0);
    for (int h = 0; h < 2; h++) {
        lim[h] = _mm256_loadu_pd(limit + 4 * h);
        prod[h] = one;
        cnt[h] = _mm256_set1_pd(-1.0);
        run[h] = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
    }
    int going = 0xff;
    for (int d = 0; d < POISSON_KNUTH_DRAWS && going; d++) {
        __m256i w[4];
        __m256d u[2][2];
        philox_draws8(j->seed, j->offset, blk, (uint64_t)d, w);
        uniforms53_words(w[0], w[1], u[0]);
        uniforms53_words(w[2], w[3], u[1]);
        going = 0;
        for (int h = 0; h < 2; h++) {
            for (int q = 0; q < 2; q++) {
                /* the first uniform starts the product (1 u, exact) and counts from -1 */
                prod[h] = _mm256_blendv_pd(prod[h], _mm256_mul_pd(prod[h], u[q][h]), run[h]);
                cnt[h] = _mm256_add_pd(cnt[h], _mm256_and_pd(run[h], one));
                run[h] = _mm256_and_pd(run[h], _mm256_cmp_pd(prod[h], lim[h], _CMP_GT_OQ));
            }
            going |= _mm256_movemask_pd(run[h]) << (4 * h);
        }
    }
    _mm256_storeu_pd(k, cnt[0]);
    _mm256_storeu_pd(k + 4, cnt[1]);
    return ~going & 0xff;
}

/* [b, e) of a poisson job (per-element rates pa), eight elements at a time (Note [Poisson
 * draws in vectors]), stored 512 at a time as ptl_dist_store stores */
PTL_AVX2 static void
poisson_range(const PtlDistJob *j, int64_t b, int64_t e)
{
    double v[512];
    PtlPhiloxBlock pre[8][POISSON_MAX_BLOCKS];
    PtlPoissonRate rate = ptl_poisson_rate(0.0);
    for (int64_t c = b; c < e; c += 512) {
        int64_t m = e - c < 512 ? e - c : 512;
        for (int64_t k = 0; k < m; k += 8) {
            int64_t g = m - k < 8 ? m - k : 8;
            double top = 0.0, low = INFINITY;
            for (int64_t l = 0; l < g; l++) {
                top = j->pa[c + k + l] > top ? j->pa[c + k + l] : top;
                low = j->pa[c + k + l] < low ? j->pa[c + k + l] : low;
            }
            if (g == 8 && low > 0.0 && top < 10.0) {
                double limit[8];
                for (int64_t l = 0; l < 8; l++) {
                    if (j->pa[c + k + l] != rate.lambda) {
                        rate = ptl_poisson_rate(j->pa[c + k + l]);
                    }
                    limit[l] = rate.limit;
                }
                int done = poisson_knuth8(j, c + k, limit, v + k);
                for (int64_t l = 0; l < 8; l++) {
                    if (!(done >> l & 1)) {
                        PtlPhiloxStream st = ptl_philox_stream(j->seed, j->offset,
                                                               (uint64_t)(c + k + l));
                        v[k + l] = ptl_sample_poisson(j->pa[c + k + l], &st);
                    }
                }
                continue;
            }
            int nb = poisson_blocks(top);
            for (int d = 0; d < nb; d++) {
                __m256i w[4];
                uint32_t words[4][8];
                philox_draws8(j->seed, j->offset, c + k, (uint64_t)d, w);
                for (int q = 0; q < 4; q++) {
                    _mm256_storeu_si256((__m256i *)words[q], w[q]);
                }
                for (int64_t l = 0; l < g; l++) {
                    for (int q = 0; q < 4; q++) {
                        pre[l][d].w[q] = words[q][l];
                    }
                }
            }
            for (int64_t l = 0; l < g; l++) {
                PtlPhiloxStream st = ptl_philox_stream(j->seed, j->offset, (uint64_t)(c + k + l));
                st.pre = pre[l];
                st.npre = (uint64_t)nb;
                if (j->pa[c + k + l] != rate.lambda) {
                    rate = ptl_poisson_rate(j->pa[c + k + l]);
                }
                v[k + l] = ptl_sample_poisson_rate(&rate, &st);
            }
        }
        store_values(j->dt, j->out, c, v, m);
    }
}

/* Note [Gamma draws in vectors]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * _standard_gamma (and _sample_dirichlet, Dirichlet and Beta through it) drew element by
 * element with libm's log and cos for the normal: 0.69x PyTorch at alpha 2.5, 0.89 at 0.5
 * (1e6 float32 draws, one thread).  Marsaglia and Tsang's first try is accepted for about 98%
 * of the elements at any alpha, and it has a fixed place in each element's stream
 * (ptl_sample_gamma, distributions.h): draw 0 gives the normal (words 0-1 the angle, 2-3 the
 * radius), words 0-1 of draw 1 the try's u, and words 2-3 of draw 1 the u of u^(1/alpha)
 * below alpha 1, drawn after the accepted try.  So eight elements at a time take draws 0 and
 * 1 of their eight counters in vector lanes (philox_draws8), run the first try in double
 * lanes (gamma_try_##S, AVX2 or AVX-512) with the twins of scalar_math.h's log and sincos2pi
 * that the scalar sampler calls, every product rounded apart as it rounds them, and the
 * elements accepted are d v^3, or u^(1/alpha) d v^3 by libm's pow (as the scalar sampler
 * computes it).  An element whose first try failed, or whose alpha is not positive, runs
 * ptl_sample_gamma from its stream's start.  Every element therefore gets the scalar
 * sampler's bits, which the CUDA kernel shares; the fill script of tests/aten/test_random.py
 * compares the paths on 1 and 2 threads.  The stream changed with this: the
 * normal used libm's log and cos, and the u of u^(1/alpha) came first. */

/* The first try of ptl_sample_gamma for the elements (a lane each) whose draws 0 and 1 give
 * the uniforms u1, u2 (the normal's angle and radius) and uu (the try's u), alphas al: the
 * same operations in the same order in double lanes (Note [Gamma draws in vectors]).  dd and
 * v3 get d and v^3 of each lane (d v^3 is the draw for alpha >= 1); the lanes accepted come
 * back as bits. */
#define DEFINE_GAMMA_TRY(S)                                                                \
    PTL_VATTR(S) static inline int                                                         \
    gamma_try_##S(PTL_VT(S) al, PTL_VT(S) u1, PTL_VT(S) u2, PTL_VT(S) uu, double *dd,      \
                  double *v3)                                                              \
    {                                                                                      \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0);                                         \
        PTL_VT(S) a = PTL_VSEL(S, PTL_VCMP(S, al, one, _CMP_LT_OQ), al,                    \
                               PTL_V(S, add)(al, one));                                    \
        PTL_VT(S) d = PTL_V(S, sub)(a, PTL_V(S, set1)(1.0 / 3.0));                         \
        PTL_VT(S) c = PTL_V(S, div)(                                                       \
            one, PTL_V(S, sqrt)(PTL_V(S, mul)(PTL_V(S, set1)(9.0), d)));                   \
        PTL_VT(S) sn, cs;                                                                  \
        PTL_VT(S) r = PTL_V(S, sqrt)(PTL_V(S, mul)(                                        \
            PTL_V(S, set1)(-2.0), ptl_vm_log_normal_##S(PTL_V(S, sub)(one, u2))));         \
        ptl_vm_sincos2pi_##S(u1, &sn, &cs);                                                \
        PTL_VT(S) z = PTL_V(S, mul)(r, cs);                                                \
        PTL_VT(S) v = PTL_V(S, add)(one, PTL_V(S, mul)(c, z));                             \
        int pos = PTL_VBITS(S, PTL_VCMP(S, v, PTL_V(S, setzero)(), _CMP_GT_OQ));           \
        v = PTL_V(S, mul)(PTL_V(S, mul)(v, v), v);                                         \
        PTL_VT(S) u = PTL_V(S, sub)(one, uu), z2 = PTL_V(S, mul)(z, z);                    \
        PTL_VT(S) q = PTL_V(S, mul)(PTL_V(S, mul)(PTL_V(S, set1)(0.0331), z2), z2);        \
        int m = PTL_VBITS(S, PTL_VCMP(S, u, PTL_V(S, sub)(one, q), _CMP_LT_OQ)) & pos;     \
        if (m != pos) {                                                                    \
            /* log of v^3 <= 0 in a lane not taken is a wrong number, never used */       \
            PTL_VT(S) w = PTL_V(S, add)(PTL_V(S, sub)(one, v), ptl_vm_log_normal_##S(v));  \
            PTL_VT(S) rhs = PTL_V(S, add)(PTL_V(S, mul)(PTL_V(S, set1)(0.5), z2),          \
                                          PTL_V(S, mul)(d, w));                            \
            m |= PTL_VBITS(S, PTL_VCMP(S, ptl_vm_log_normal_##S(u), rhs, _CMP_LT_OQ)) & pos; \
        }                                                                                  \
        PTL_V(S, storeu)(dd, d);                                                           \
        PTL_V(S, storeu)(v3, v);                                                           \
        return m;                                                                          \
    }
DEFINE_GAMMA_TRY(pd)
DEFINE_GAMMA_TRY(pd512)
#undef DEFINE_GAMMA_TRY

/* gamma_try_pd512 on the two halves of each uniform */
PTL_AVX512 static int
gamma_try8(const double *al, const __m256d u1[2], const __m256d u2[2], const __m256d uu[2],
           double *dd, double *v3)
{
#define JOIN(x) _mm512_insertf64x4(_mm512_castpd256_pd512((x)[0]), (x)[1], 1)
    return gamma_try_pd512(_mm512_loadu_pd(al), JOIN(u1), JOIN(u2), JOIN(uu), dd, v3);
#undef JOIN
}

/* The first tries of the eight elements from blk (gamma_try_##S at either width): their
 * accepted lanes as bits, d and v^3 of each into dd and v3, and the uniforms of words 2-3 of
 * draw 1 (u^(1/alpha) below 1) into us */
PTL_AVX2 static int
gamma_first_tries(const PtlDistJob *j, int64_t blk, int wide, double *dd, double *v3,
                  double *us)
{
    __m256i w0[4], w1[4];
    __m256d u1[2], u2[2], uu[2], s[2];
    const double *al = j->pa + blk;
    philox_draws8(j->seed, j->offset, blk, 0, w0);
    philox_draws8(j->seed, j->offset, blk, 1, w1);
    uniforms53_words(w0[0], w0[1], u1);
    uniforms53_words(w0[2], w0[3], u2);
    uniforms53_words(w1[0], w1[1], uu);
    uniforms53_words(w1[2], w1[3], s);
    _mm256_storeu_pd(us, s[0]);
    _mm256_storeu_pd(us + 4, s[1]);
    if (wide) {
        return gamma_try8(al, u1, u2, uu, dd, v3);
    }
    int ok = 0;
    for (int h = 0; h < 2; h++) {
        ok |= gamma_try_pd(_mm256_loadu_pd(al + 4 * h), u1[h], u2[h], uu[h], dd + 4 * h,
                           v3 + 4 * h)
              << (4 * h);
    }
    return ok;
}

/* [b, e) of a _standard_gamma job (alphas pa, the floor b), eight elements at a time (Note
 * [Gamma draws in vectors]): draws 0 and 1 of their streams in vectors, the first try in
 * double lanes (gamma_try_##S), then element by element d v^3 for alpha >= 1, u^(1/alpha) d v^3
 * (libm's pow, ptl_gamma_scale) below 1, and ptl_sample_gamma from the start where the first
 * try failed (about 2% of the elements at alpha 2.5, or alpha not positive); stored 512 at
 * a time as ptl_dist_store stores ptl_dist_value's double.  Element by element (libm's log
 * and cos for the normal) this ran at 0.69-0.89x PyTorch. */
PTL_AVX2 static void
gamma_range(const PtlDistJob *j, int64_t b, int64_t e)
{
    const int wide = ptl_cpu_capability() >= PTL_CPU_AVX512;
    double v[512], dd[8], v3[8], us[8];
    for (int64_t c = b; c < e; c += 512) {
        int64_t m = e - c < 512 ? e - c : 512, k = 0;
        for (; k + 8 <= m; k += 8) {
            const double *al = j->pa + c + k;
            int ok = gamma_first_tries(j, c + k, wide, dd, v3, us);
            int small = 0;
            for (int l = 0; l < 8; l++) {
                small |= (al[l] < 1.0) << l;
                ok &= ~(!(al[l] > 0.0) << l);   /* 0, negative or nan: the scalar's answer */
            }
            for (int l = 0; l < 8; l++) {
                double x;
                if (!(ok >> l & 1)) {
                    PtlPhiloxStream st = ptl_philox_stream(j->seed, j->offset,
                                                           (uint64_t)(c + k + l));
                    x = ptl_sample_gamma(al[l], &st);
                }
                else if (small >> l & 1) {
                    x = pow(1.0 - us[l], 1.0 / al[l]) * dd[l] * v3[l];
                }
                else {
                    x = dd[l] * v3[l];
                }
                v[k + l] = x < j->b ? j->b : x;
            }
        }
        for (; k < m; k++) {
            PtlPhiloxStream st = ptl_philox_stream(j->seed, j->offset, (uint64_t)(c + k));
            double x = ptl_sample_gamma(j->pa[c + k], &st);
            v[k] = x < j->b ? j->b : x;
        }
        store_values(j->dt, j->out, c, v, m);
    }
}

/* The standard normals of the elements [b, e) (at most 512) of j's stream into z[0 .. e - b),
 * each the float z of ptl_dist_value: the whole groups through normal_floats_##S as a job
 * with mean -0 and std 1 (whose affine step -0 + z keeps every z, -0 included), the
 * elements before the first pair and after the last group one by one */
PTL_AVX2 static void
unit_normals(const PtlDistJob *j, int64_t b, int64_t e, float *z)
{
    PtlDistJob u = *j;
    u.kind = PTL_DIST_NORMAL;
    u.dt = PTL_DTYPE_FLOAT32;
    u.a = -0.0;
    u.b = 1.0;
    u.pa = u.pb = NULL;
    const int wide = ptl_cpu_capability() >= PTL_CPU_AVX512;
    const int64_t step = wide ? 32 : 16;
    int64_t i = (b + 1) / 2 * 2 < e ? (b + 1) / 2 * 2 : e, n = (e - i) / step * step;
    PtlDistCursor c = ptl_dist_cursor();
    for (int64_t k = b; k < i; k++) {
        z[k - b] = (float)ptl_dist_value(&u, &c, k);
    }
    if (wide) {
        normal_floats_ps512(&u, i, n, z + (i - b));
    }
    else {
        normal_floats_ps(&u, i, n, z + (i - b));
    }
    c = ptl_dist_cursor();
    for (int64_t k = i + n; k < e; k++) {
        z[k - b] = (float)ptl_dist_value(&u, &c, k);
    }
}

/* The per-element mean and std of the elements [c, c + m) of a job (m at most 512): j's
 * arrays, or ab (2 x 512 scratch) filled with its scalars */
static void
job_mean_std(const PtlDistJob *j, int64_t c, int64_t m, double *ab, const double **a,
             const double **b)
{
    *a = j->pa ? j->pa + c : ab;
    *b = j->pb ? j->pb + c : ab + 512;
    for (int64_t k = 0; k < m && (!j->pa || !j->pb); k++) {
        ab[k] = j->a;
        ab[512 + k] = j->b;
    }
}

/* [b, e) of a float32, float16 or bfloat16 log_normal_ job, or a normal one with
 * per-element mean or std: the standard normals z of unit_normals, then a + z b in double
 * (a multiply and an add, in vectors for normal) and, for log_normal_, its exp, rounded to
 * float and stored as ptl_dist_store stores ptl_dist_value's double (store_halves) */
PTL_AVX2 static void
normal_finish_floats(const PtlDistJob *j, int64_t b, int64_t e)
{
    float z[512], f[512];
    double ab[1024];
    for (int64_t c = b; c < e; c += 512) {
        int64_t m = e - c < 512 ? e - c : 512;
        const double *pa, *pb;
        float *o = j->dt == PTL_DTYPE_FLOAT32 ? (float *)j->out + c : f;
        unit_normals(j, c, c + m, z);
        job_mean_std(j, c, m, ab, &pa, &pb);
        if (j->kind == PTL_DIST_NORMAL) {
            for (int64_t k = 0; k < m; k++) {
                o[k] = (float)(pa[k] + pb[k] * (double)z[k]);
            }
        }
        else {
            for (int64_t k = 0; k < m; k++) {
                o[k] = (float)exp(pa[k] + pb[k] * (double)z[k]);
            }
        }
        if (j->dt != PTL_DTYPE_FLOAT32) {
            store_halves(j->dt, j->out, c, f, m);
        }
    }
}

/* [b, e) of a float64 normal job with per-element mean or std: the standard normals of
 * normal_doubles_##S (a job with mean -0 and std 1, whose -0 + 1 z keeps every z), then
 * a + z b, a multiply and an add as ptl_dist_value computes them; the elements before the
 * first pair and after the last group of eight blocks go through dist_range.  Element by
 * element this was 0.54x PyTorch (1e6 values, one thread). */
PTL_AVX2 static void
normal_finish_doubles(const PtlDistJob *j, int64_t b, int64_t e)
{
    PtlDistJob u = *j;
    u.a = -0.0;
    u.b = 1.0;
    u.pa = u.pb = NULL;
    double z[512], ab[1024];
    const int wide = ptl_cpu_capability() >= PTL_CPU_AVX512;
    int64_t i = fill_to_block(j, b, e, 2);
    while (i + 16 <= e) {
        int64_t m = (e - i) / 16 * 16 < 512 ? (e - i) / 16 * 16 : 512;
        const double *pa, *pb;
        double *o = (double *)j->out + i;
        if (wide) {
            normal_doubles_pd512(&u, i, m, z);
        }
        else {
            normal_doubles_pd(&u, i, m, z);
        }
        job_mean_std(j, i, m, ab, &pa, &pb);
        for (int64_t k = 0; k < m; k++) {
            o[k] = pa[k] + pb[k] * z[k];
        }
        i += m;
    }
    dist_range(j, i, e);
}
#endif

#ifdef PTL_HAVE_AVX2_KERNELS
/* out[k] = words 0-1 of block first + k (draw 0), k < n (a multiple of 8), eight blocks a
 * vector */
PTL_AVX2 static void
philox_words64_avx2(uint64_t seed, uint64_t offset, int64_t first, int64_t n, uint64_t *out)
{
    for (int64_t k = 0; k < n; k += 8) {
        __m256i w[4];
        philox_draw8(seed, offset, first + k, w);
        __m256i lo = _mm256_unpacklo_epi32(w[0], w[1]), hi = _mm256_unpackhi_epi32(w[0], w[1]);
        /* lanes 0 1 4 5 and 2 3 6 7 of the blocks, as 64-bit words: back into block order */
        _mm256_storeu_si256((__m256i *)(out + k), _mm256_permute2x128_si256(lo, hi, 0x20));
        _mm256_storeu_si256((__m256i *)(out + k + 4), _mm256_permute2x128_si256(lo, hi, 0x31));
    }
}
#endif

#ifdef PTL_HAVE_AVX2_KERNELS
/* out[k] = words 0-1 of block first + k (draw 0), k < n (a multiple of 16), sixteen blocks
 * a vector: philox_draw8's rounds in AVX-512 lanes (randperm's draws took half its time) */
PTL_AVX512 static void
philox_words64_avx512(uint64_t seed, uint64_t offset, int64_t first, int64_t n, uint64_t *out)
{
    const __m512i iota = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
    /* the 64-bit words of unpack{lo,hi}(w0, w1) hold blocks 0 1 4 5 8 9 12 13 and 2 3 6 7
     * 10 11 14 15: back into block order */
    const __m512i first8 = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
    const __m512i last8 = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
    for (int64_t k = 0; k < n; k += 16) {
        __m512i e0 = _mm512_add_epi64(_mm512_set1_epi64((int64_t)(offset + (uint64_t)(first + k))),
                                      iota);
        __m512i e1 = _mm512_add_epi64(e0, _mm512_set1_epi64(8));
        __m512i c0 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi64_epi32(e0)),
                                        _mm512_cvtepi64_epi32(e1), 1);
        __m512i c1 = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm512_cvtepi64_epi32(_mm512_srli_epi64(e0, 32))),
            _mm512_cvtepi64_epi32(_mm512_srli_epi64(e1, 32)), 1);
        __m512i c2 = _mm512_setzero_si512(), c3 = _mm512_setzero_si512();
        PHILOX_ROUNDS(__m512i, philox_mulhilo16, _mm512_xor_si512, _mm512_set1_epi32, c0, c1, c2,
                      c3, seed);
        __m512i lo = _mm512_unpacklo_epi32(c0, c1), hi = _mm512_unpackhi_epi32(c0, c1);
        _mm512_storeu_si512(out + k, _mm512_permutex2var_epi64(lo, first8, hi));
        _mm512_storeu_si512(out + k + 8, _mm512_permutex2var_epi64(lo, last8, hi));
    }
}
#undef PHILOX_ROUNDS
#endif

void
ptl_philox_words64(uint64_t seed, uint64_t offset, int64_t first, int64_t n, uint64_t *out)
{
    int64_t k = 0;
#ifdef PTL_HAVE_AVX2_KERNELS
    if (ptl_cpu_capability() >= PTL_CPU_AVX512) {
        k = n / 16 * 16;
        philox_words64_avx512(seed, offset, first, k, out);
    }
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        int64_t m = (n - k) / 8 * 8;
        philox_words64_avx2(seed, offset, first + k, m, out + k);
        k += m;
    }
#endif
    for (; k < n; k++) {
        PtlPhiloxBlock r = ptl_philox_draw(seed, offset, (uint64_t)(first + k), 0);
        out[k] = (uint64_t)r.w[1] << 32 | r.w[0];
    }
}

int
ptl_random_fill_range(void *ctx, int64_t b, int64_t e)
{
    const PtlDistJob *j = ctx;
#ifdef PTL_HAVE_AVX2_KERNELS
    int vec = j->pa == NULL && j->pb == NULL && ptl_cpu_capability() >= PTL_CPU_AVX2;
    if (j->kind == PTL_DIST_RANDOM && j->block_shift == 2 &&
        ptl_cpu_capability() >= PTL_CPU_AVX2) {
        random_range_words(j, b, e);
        return 0;
    }
    if (j->kind == PTL_DIST_BERNOULLI && j->block_shift == 2 &&
        ptl_cpu_capability() >= PTL_CPU_AVX2) {
        bernoulli_range(j, b, e);
        return 0;
    }
    if (vec && j->kind == PTL_DIST_UNIFORM && j->block_shift == 2 &&
        (j->dt == PTL_DTYPE_FLOAT32 || j->dt == PTL_DTYPE_FLOAT16 ||
         j->dt == PTL_DTYPE_BFLOAT16)) {
        uniform_range_f4_avx2(j, b, e);
        return 0;
    }
    if (vec && j->kind == PTL_DIST_UNIFORM && j->block_shift == 1 && j->bits == 53 &&
        j->dt == PTL_DTYPE_FLOAT64) {
        uniform_range_f8(j, b, e);
        return 0;
    }
    if (vec && j->kind == PTL_DIST_NORMAL && j->block_shift == 1 &&
        (j->dt == PTL_DTYPE_FLOAT32 || j->dt == PTL_DTYPE_FLOAT16 ||
         j->dt == PTL_DTYPE_BFLOAT16)) {
        normal_range_vec(j, b, e);
        return 0;
    }
    if (vec && j->kind == PTL_DIST_NORMAL && j->dt == PTL_DTYPE_FLOAT64) {
        normal_range_f8(j, b, e);
        return 0;
    }
    if (j->kind == PTL_DIST_POISSON && j->pa != NULL && ptl_cpu_capability() >= PTL_CPU_AVX2) {
        poisson_range(j, b, e);
        return 0;
    }
    if (j->kind == PTL_DIST_GAMMA && j->pa != NULL && ptl_cpu_capability() >= PTL_CPU_AVX2) {
        gamma_range(j, b, e);
        return 0;
    }
    if (vec && j->kind == PTL_DIST_LOG_NORMAL && j->dt == PTL_DTYPE_FLOAT64) {
        log_normal_range_f8(j, b, e);
        return 0;
    }
    if (vec && (j->kind == PTL_DIST_EXPONENTIAL || j->kind == PTL_DIST_GEOMETRIC ||
                j->kind == PTL_DIST_CAUCHY)) {
        transform_range(j, b, e);
        return 0;
    }
    if (ptl_cpu_capability() >= PTL_CPU_AVX2 && j->kind == PTL_DIST_NORMAL &&
        j->dt == PTL_DTYPE_FLOAT64) {
        normal_finish_doubles(j, b, e);
        return 0;
    }
    if (ptl_cpu_capability() >= PTL_CPU_AVX2 &&
        (j->dt == PTL_DTYPE_FLOAT32 || j->dt == PTL_DTYPE_FLOAT16 ||
         j->dt == PTL_DTYPE_BFLOAT16) &&
        (j->kind == PTL_DIST_NORMAL || j->kind == PTL_DIST_LOG_NORMAL)) {
        normal_finish_floats(j, b, e);
        return 0;
    }
#endif
    return dist_range(j, b, e);
}
