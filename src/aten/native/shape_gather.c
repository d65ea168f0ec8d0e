/* shape_gather.c -- the copy of shape.c's gathers by offset tables (flip, roll, rot90,
 * repeat, diag_embed; Note [Gather by offset tables] in shape.c): the rows of the innermost
 * dim one after the other, each a copy per contiguous run of the source, a reversed copy or
 * a typed gather, split over the threads.  Mirrors the copies of ATen/native/
 * TensorTransformations.cpp and Repeat.cpp. */
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "../../c10/cpu_features.h"
#include "../../c10/parallel.h"
#include "../loops.h"
#include "shape_impl.h"

static void
copy_elem(char *dst, const char *src, size_t isz)
{
    switch (isz) {
    case 1: *(uint8_t *)dst = *(const uint8_t *)src; break;
    case 2: *(uint16_t *)dst = *(const uint16_t *)src; break;
    case 4: *(uint32_t *)dst = *(const uint32_t *)src; break;
    case 8: *(uint64_t *)dst = *(const uint64_t *)src; break;
    default: memcpy(dst, src, isz); break;
    }
}

/* Note [Flip of the innermost dim]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A flip whose dims include the innermost one reads each output row backwards from the
 * source.  Its table (Note [Gather by offset tables] in shape.c) would be as long as the row,
 * filled, scanned for the reversed walk and read once more than the data: flip(0) of 65536
 * float32 took 33 us against PyTorch's 10.  shape.c's flip_new passes that dim as a line
 * instead (shape_gather_line: the last element and a negative step; tables for the outer
 * dims only), and a row whose step is minus one element is reverse_copy: with AVX-512 64
 * bytes a step, loaded from the row's end and reversed in the register (a lane permute for
 * elements of 2, 4, 8 and 16 bytes; bytes reversed within 16-byte lanes by a shuffle, then
 * the lanes), the AVX2 build gcc's vectorization of the plain loop, the baseline build the
 * plain loop.  Where the row's end is not on a 64-byte boundary (NumPy's arrays sit 16 bytes
 * off one) and the elements are wider than a byte, each output vector comes from the two
 * aligned source blocks that hold it by one two-source lane permute, so no load splits a
 * cache line (reverse_blocks_aligned_avx512; 5% off the kernel's time on 1024 x 1024
 * float32).  With AVX2 alone, rows of a run that steps evenly go four to a loop
 * (reverse_rows4_avx2): four streams of loads and stores in flight, where a row at a time
 * kept one (flip(1) of 1024 x 1024 float32 from DRAM 560-630 -> 436 us in a C driver on Zen
 * 3).  Other steps (a transposed or sliced source) go element by element. */

/* o[i] = a[-i] for n elements of T: flip of the innermost dim.  The baseline build reverses 16
 * bytes per step; the AVX2 build permutes 32 (flip(1) of 1024x1024 float32 took 2.3x
 * PyTorch's time with 16); AVX-512 64 (Note [Flip of the innermost dim]).  cap: the capability,
 * read once by the caller. */
typedef struct Elem16 {
    uint64_t lo, hi;
} Elem16;

#if defined(__x86_64__) && defined(__GNUC__)
#define REVERSE_AVX512 __attribute__((target("avx512f,avx512bw")))

/* The AVX-512 reversal of 64 bytes of elements of isz bytes */
REVERSE_AVX512 static inline __m512i
reverse_vec(__m512i v, size_t isz)
{
    switch (isz) {
    case 1: {
        const __m512i bytes = _mm512_set_epi64(
            0x0001020304050607LL, 0x08090a0b0c0d0e0fLL, 0x0001020304050607LL,
            0x08090a0b0c0d0e0fLL, 0x0001020304050607LL, 0x08090a0b0c0d0e0fLL,
            0x0001020304050607LL, 0x08090a0b0c0d0e0fLL);
        return _mm512_shuffle_i64x2(_mm512_shuffle_epi8(v, bytes),
                                    _mm512_shuffle_epi8(v, bytes), 0x1b);
    }
    case 2:
        return _mm512_permutexvar_epi16(
            _mm512_set_epi16(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
                             19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31), v);
    case 4:
        return _mm512_castps_si512(_mm512_permutexvar_ps(
            _mm512_set_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
            _mm512_castsi512_ps(v)));
    case 8:
        return _mm512_castpd_si512(_mm512_permutexvar_pd(
            _mm512_set_epi64(0, 1, 2, 3, 4, 5, 6, 7), _mm512_castsi512_pd(v)));
    default:
        return _mm512_permutexvar_epi64(_mm512_set_epi64(1, 0, 3, 2, 5, 4, 7, 6), v);
    }
}

/* o[i] = a[-i] for the whole 64-byte blocks of n elements of isz bytes; the count done */
REVERSE_AVX512 static int64_t
reverse_blocks_avx512(char *o, const char *a, int64_t n, size_t isz)
{
    const int64_t w = 64 / (int64_t)isz;
    const char *end = a + (int64_t)isz; /* one past the row's first element read */
    int64_t i = 0;
    for (; i + 2 * w <= n; i += 2 * w) {
        __m512i x = _mm512_loadu_si512(end - (i + w) * (int64_t)isz);
        __m512i y = _mm512_loadu_si512(end - (i + 2 * w) * (int64_t)isz);
        _mm512_storeu_si512(o + i * (int64_t)isz, reverse_vec(x, isz));
        _mm512_storeu_si512(o + (i + w) * (int64_t)isz, reverse_vec(y, isz));
    }
    for (; i + w <= n; i += w) {
        __m512i x = _mm512_loadu_si512(end - (i + w) * (int64_t)isz);
        _mm512_storeu_si512(o + i * (int64_t)isz, reverse_vec(x, isz));
    }
    return i;
}

/* The lanes of a block's reversal from two aligned blocks (reverse_blocks_aligned_avx512) for
 * elements of isz = 2, 4, 8 or 16 bytes in lanes of min(isz, 8) bytes: output lane l takes
 * lane base[l] + s of (lo, hi), s the lanes of the row's end past its 64-byte boundary */
REVERSE_AVX512 static inline __m512i
reverse_window_base(size_t isz)
{
    switch (isz) {
    case 2:
        return _mm512_set_epi16(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
                                18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
    case 4:
        return _mm512_set_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    case 8:
        return _mm512_set_epi64(0, 1, 2, 3, 4, 5, 6, 7);
    default:
        return _mm512_set_epi64(1, 0, 3, 2, 5, 4, 7, 6);
    }
}

/* reverse_blocks_avx512 for a row whose end (a + isz) lies e bytes past a 64-byte boundary,
 * e a whole number of lanes (reverse_window_base): each block of output from the two aligned
 * blocks that hold its bytes, one lane permute, so no load splits a cache line; the first
 * and last loads masked to the row's bytes.  The count done. */
REVERSE_AVX512 static int64_t
reverse_blocks_aligned_avx512(char *o, const char *a, int64_t n, size_t isz, int64_t e,
                              __m512i base)
{
    const int64_t nb = n * (int64_t)isz / 64, lane = isz < 8 ? (int64_t)isz : 8;
    const char *top = a + (int64_t)isz - e;
    __m512i hi = _mm512_maskz_loadu_epi8((1ULL << e) - 1, top), idx;
    switch (lane) {
    case 2:
        idx = _mm512_add_epi16(base, _mm512_set1_epi16((short)(e / 2)));
        break;
    case 4:
        idx = _mm512_add_epi32(base, _mm512_set1_epi32((int)(e / 4)));
        break;
    default:
        idx = _mm512_add_epi64(base, _mm512_set1_epi64(e / 8));
        break;
    }
    for (int64_t k = 0; k < nb; k++) {
        __m512i lo = k + 1 < nb ? _mm512_load_si512(top - 64 * (k + 1))
                                : _mm512_maskz_loadu_epi8(~0ULL << e, top - 64 * (k + 1));
        __m512i v = lane == 2   ? _mm512_permutex2var_epi16(lo, idx, hi)
                    : lane == 4 ? _mm512_permutex2var_epi32(lo, idx, hi)
                                : _mm512_permutex2var_epi64(lo, idx, hi);
        _mm512_storeu_si512(o + 64 * k, v);
        hi = lo;
    }
    return nb * 64 / (int64_t)isz;
}

/* `rows` rows of o[i] = a[-i] (n elements of isz bytes), the k-th at o + k o_row and
 * a + k a_row (bytes): the blocks (from aligned loads where the row's end allows, else
 * unaligned ones: rows 16 bytes off, as NumPy's arrays are, took 5% longer), then the tail by
 * one masked load and store (the bytes outside the row are masked off, which suppresses their
 * faults) */
REVERSE_AVX512 static void
reverse_rows_avx512(char *o, const char *a, int64_t n, size_t isz, int64_t rows,
                    int64_t o_row, int64_t a_row)
{
    const __m512i base = reverse_window_base(isz);
    const int64_t lane = isz < 8 ? (int64_t)isz : 8;
    for (int64_t k = 0; k < rows; k++, o += o_row, a += a_row) {
        int64_t e = (int64_t)((uintptr_t)(a + isz) & 63);
        int64_t i = isz > 1 && e != 0 && e % lane == 0
                        ? reverse_blocks_aligned_avx512(o, a, n, isz, e, base)
                        : reverse_blocks_avx512(o, a, n, isz);
        int64_t rb = (n - i) * (int64_t)isz; /* the tail's bytes, 0..63 */
        if (rb > 0) {
            const char *from = a + (int64_t)isz - n * (int64_t)isz - (64 - rb);
            __m512i v = _mm512_maskz_loadu_epi8(~0ULL << (64 - rb), from);
            _mm512_mask_storeu_epi8(o + i * (int64_t)isz, (1ULL << rb) - 1,
                                    reverse_vec(v, isz));
        }
    }
}
#define REVERSE_COPY_USE_AVX512(T)                                                        \
    if (cap >= PTL_CPU_AVX512) {                                                          \
        int64_t done = reverse_blocks_avx512((char *)o, (const char *)a, n, sizeof(T));   \
        o += done;                                                                        \
        a -= done;                                                                        \
        n -= done;                                                                        \
    }                                                                                     \
    else
#define REVERSE_COPY_AVX2(T)                                                              \
    __attribute__((target("avx2"))) static void                                           \
    reverse_copy_avx2_##T(T *o, const T *a, int64_t n)                                    \
    {                                                                                     \
        for (int64_t i = 0; i < n; i++) {                                                 \
            o[i] = a[-i];                                                                 \
        }                                                                                 \
    }                                                                                     \
    /* four rows, the k-th at o + k o_row and a + k a_row (elements), in one loop: four  \
     * streams from memory (Note [Flip of the innermost dim]) */                         \
    __attribute__((target("avx2"))) static void                                           \
    reverse_rows4_avx2_##T(T *restrict o, const T *restrict a, int64_t n, int64_t o_row,   \
                           int64_t a_row)                                                 \
    {                                                                                     \
        T *restrict o1 = o + o_row, *restrict o2 = o1 + o_row, *restrict o3 = o2 + o_row; \
        const T *a1 = a + a_row, *a2 = a1 + a_row, *a3 = a2 + a_row;                      \
        for (int64_t i = 0; i < n; i++) {                                                 \
            o[i] = a[-i];                                                                 \
            o1[i] = a1[-i];                                                               \
            o2[i] = a2[-i];                                                               \
            o3[i] = a3[-i];                                                               \
        }                                                                                 \
    }
#define REVERSE_COPY_USE_AVX2(T)                                                          \
    if (cap >= PTL_CPU_AVX2) {                                                            \
        reverse_copy_avx2_##T(o, a, n);                                                   \
        return;                                                                           \
    }
#else
#define REVERSE_COPY_AVX2(T)
#define REVERSE_COPY_USE_AVX2(T)
#define REVERSE_COPY_USE_AVX512(T)
#endif
#define DEFINE_REVERSE_COPY(T)                                                            \
    REVERSE_COPY_AVX2(T)                                                                  \
    static void                                                                           \
    reverse_copy_##T(T *o, const T *a, int64_t n, PtlCpuCapability cap)                   \
    {                                                                                     \
        REVERSE_COPY_USE_AVX512(T)                                                        \
        REVERSE_COPY_USE_AVX2(T)                                                          \
        for (int64_t i = 0; i < n; i++) {                                                 \
            o[i] = a[-i];                                                                 \
        }                                                                                 \
    }
DEFINE_REVERSE_COPY(uint8_t)
DEFINE_REVERSE_COPY(uint16_t)
DEFINE_REVERSE_COPY(uint32_t)
DEFINE_REVERSE_COPY(uint64_t)
DEFINE_REVERSE_COPY(Elem16)
#undef DEFINE_REVERSE_COPY

#if defined(__x86_64__) && defined(__GNUC__)
/* reverse_rows4_avx2 for elements of isz bytes (1, 2, 4, 8 or 16); o_row, a_row in bytes */
static void
reverse_rows4_avx2(char *o, const char *a, int64_t n, size_t isz, int64_t o_row,
                   int64_t a_row)
{
    const int64_t e = (int64_t)isz;
    switch (isz) {
    case 1: reverse_rows4_avx2_uint8_t((uint8_t *)o, (const uint8_t *)a, n, o_row, a_row); break;
    case 2:
        reverse_rows4_avx2_uint16_t((uint16_t *)o, (const uint16_t *)a, n, o_row / e, a_row / e);
        break;
    case 4:
        reverse_rows4_avx2_uint32_t((uint32_t *)o, (const uint32_t *)a, n, o_row / e, a_row / e);
        break;
    case 8:
        reverse_rows4_avx2_uint64_t((uint64_t *)o, (const uint64_t *)a, n, o_row / e, a_row / e);
        break;
    default:
        reverse_rows4_avx2_Elem16((Elem16 *)o, (const Elem16 *)a, n, o_row / e, a_row / e);
        break;
    }
}
#endif
#undef REVERSE_COPY_USE_AVX512
#undef REVERSE_COPY_USE_AVX2
#undef REVERSE_COPY_AVX2

/* memcpy(dst, src, n) for gather_row's runs.  glibc's memcpy copies from 2 KiB on with
 * rep movsb, which this CPU (AMD Zen 4) runs at half speed when source and destination are
 * not aligned alike (roll(3, 1) of 1024 x 1024 float32, rows of 4084 bytes moved by 12: 0.81x
 * PyTorch's time); here runs of 256 bytes and more go by 32-byte vectors, 128 bytes a step,
 * the destination aligned (faster than aligning the source, or 64-byte vectors). */
typedef char CopyVec __attribute__((vector_size(32), aligned(1)));

PTL_LOOP_CLONES static void
copy_run(char *dst, const char *src, size_t n)
{
    if (n < 256) {
        memcpy(dst, src, n);
        return;
    }
    size_t head = (size_t)(-(uintptr_t)dst & 31), i = 0;
    memcpy(dst, src, head);
    dst += head;
    src += head;
    n -= head;
    for (; i + 128 <= n; i += 128) {
        CopyVec a = *(const CopyVec *)(src + i), b = *(const CopyVec *)(src + i + 32);
        CopyVec c = *(const CopyVec *)(src + i + 64), d = *(const CopyVec *)(src + i + 96);
        *(CopyVec *)(dst + i) = a;
        *(CopyVec *)(dst + i + 32) = b;
        *(CopyVec *)(dst + i + 64) = c;
        *(CopyVec *)(dst + i + 96) = d;
    }
    for (; i + 32 <= n; i += 32) {
        *(CopyVec *)(dst + i) = *(const CopyVec *)(src + i);
    }
    memcpy(dst + i, src + i, n - i);
}

/* n elements of isz bytes, dst_step apart, element i read at src + inner[i], or at
 * src + i * step when inner is NULL (shape_gather_line's rows); `reversed`: the reads walk
 * the source backwards element by element, so that a contiguous destination is
 * reverse_copy's from the first read (Note [Flip of the innermost dim]).  Always inlined:
 * each caller's loops are compiled for its own kind of row. */
static inline __attribute__((always_inline)) void
typed_row(char *dst, int64_t dst_step, const char *src, const int64_t *inner, int64_t step,
          int64_t n, size_t isz, int reversed, PtlCpuCapability cap)
{
#define TYPED_ROW(T)                                                                      \
    if (reversed && dst_step == (int64_t)sizeof(T)) {                                     \
        reverse_copy_##T((T *)dst, (const T *)(inner != NULL ? src + inner[0] : src), n,  \
                         cap);                                                            \
        return;                                                                           \
    }                                                                                     \
    for (int64_t i = 0; i < n; i++) {                                                     \
        const char *at = src + (inner != NULL ? inner[i] : i * step);                     \
        *(T *)(dst + i * dst_step) = *(const T *)at;                                      \
    }                                                                                     \
    return
    switch (isz) {
    case 1: TYPED_ROW(uint8_t);
    case 2: TYPED_ROW(uint16_t);
    case 4: TYPED_ROW(uint32_t);
    case 8: TYPED_ROW(uint64_t);
    case 16: TYPED_ROW(Elem16);
    default:
        for (int64_t i = 0; i < n; i++) {
            memcpy(dst + i * dst_step, src + (inner != NULL ? inner[i] : i * step), isz);
        }
    }
#undef TYPED_ROW
}

/* One inner row of gather_copy: n elements of isz bytes, dst_step apart, read at
 * src + inner[i]; `runs` (NULL: none) lists where the reads are contiguous: starts
 * runs[0] = 0 < runs[1] < ... < runs[nruns] = n, each run one memcpy when the destination
 * is contiguous too; `reversed`: the reads walk the source backwards element by element
 * (flip of the innermost dim, reverse_copy). */
static void
gather_row(char *dst, int64_t dst_step, const char *src, const int64_t *inner, int64_t n,
           size_t isz, const int64_t *runs, int64_t nruns, int reversed, PtlCpuCapability cap)
{
    if (runs != NULL) {
        for (int64_t r = 0; r < nruns; r++) {
            copy_run(dst + runs[r] * (int64_t)isz, src + inner[runs[r]],
                     (size_t)(runs[r + 1] - runs[r]) * isz);
        }
        return;
    }
    typed_row(dst, dst_step, src, inner, 0, n, isz, reversed, cap);
}

/* The runs of contiguous reads of an inner table (see gather_row), or NULL when they are
 * too short for memcpy to pay (fewer than 16 elements a run on average) or memory is short;
 * free() the result. */
static int64_t *
contiguous_runs(const int64_t *inner, int64_t n, size_t isz, int64_t *nruns)
{
    int64_t count = 1;
    for (int64_t i = 1; i < n; i++) {
        count += inner[i] != inner[i - 1] + (int64_t)isz;
    }
    int64_t *runs = count * 16 <= n ? malloc(sizeof(int64_t) * (size_t)(count + 1)) : NULL;
    if (runs == NULL) {
        return NULL;
    }
    runs[0] = 0;
    for (int64_t i = 1, r = 1; i < n; i++) {
        if (inner[i] != inner[i - 1] + (int64_t)isz) {
            runs[r++] = i;
        }
    }
    runs[count] = n;
    *nruns = count;
    return runs;
}

/* What gather_rows reads: gather_copy's arguments and its inner row's runs */
typedef struct GatherJob {
    char *dst;
    const int64_t *dst_strides;
    const char *src;
    int64_t *const *tab;
    int dim;
    const int64_t *sizes;
    size_t isz;
    const int64_t *runs;
    int64_t nruns, n, dst_step;
    int reversed;
    int64_t step;  /* shape_gather_line: no inner table; element i at row + i * step */
    int even;      /* shape_gather_line: the last outer dim's table steps evenly */
    PtlCpuCapability cap;   /* read once a call, not once a row */
} GatherJob;

/* The inner rows [b, e) of gather_copy (row-major over the outer dims).  A row that is one
 * contiguous run joins the previous row's copy when it continues it in the source and the
 * destination (repeat(2, 1) of 1024 x 1024: two copies of 4 MiB, not 2048 of 4 KiB). */
static int
gather_rows(void *ctx, int64_t b, int64_t e)
{
    const GatherJob *j = ctx;
    const int64_t isz = (int64_t)j->isz, row = j->n * isz;
    int64_t idx[PTL_MAX_DIMS] = {0}, rest = b, len = 0;
    int whole = j->runs != NULL && j->nruns == 1;
    char *at = NULL;
    const char *from = NULL;
    for (int d = j->dim - 2; d >= 0; d--) {
        idx[d] = rest % j->sizes[d];
        rest /= j->sizes[d];
    }
    for (int64_t o = b; o < e; o++) {
        int64_t soff = 0, doff = 0;
        for (int d = 0; d < j->dim - 1; d++) {
            soff += j->tab[d][idx[d]];
            doff += idx[d] * j->dst_strides[d] * isz;
        }
        if (!whole) {
            gather_row(j->dst + doff, j->dst_step, j->src + soff, j->tab[j->dim - 1], j->n,
                       j->isz, j->runs, j->nruns, j->reversed, j->cap);
        }
        else if (len > 0 && j->dst + doff == at + len &&
                 j->src + soff + j->tab[j->dim - 1][0] == from + len) {
            len += row;
        }
        else {
            if (len > 0) {
                copy_run(at, from, (size_t)len);
            }
            at = j->dst + doff;
            from = j->src + soff + j->tab[j->dim - 1][0];
            len = row;
        }
        for (int d = j->dim - 2; d >= 0; d--) {
            if (++idx[d] < j->sizes[d]) {
                break;
            }
            idx[d] = 0;
        }
    }
    if (len > 0) {
        copy_run(at, from, (size_t)len);
    }
    return 0;
}

/* The rows [b, e) of shape_gather_line (row-major over the outer dims), a run along the last
 * outer dim at a time when its table steps evenly: one call of the AVX-512 kernel for the run
 * (per row, 4096 rows of 64 float32 took 33 us against 24 as one row) */
static int
line_rows(void *ctx, int64_t b, int64_t e)
{
    const GatherJob *j = ctx;
    const int64_t isz = (int64_t)j->isz;
    const int last = j->dim - 2; /* -1: one row */
    int64_t idx[PTL_MAX_DIMS] = {0}, rest = b;
    for (int d = last; d >= 0; d--) {
        idx[d] = rest % j->sizes[d];
        rest /= j->sizes[d];
    }
    const int64_t src_row = last >= 0 && j->sizes[last] > 1 ? j->tab[last][1] - j->tab[last][0]
                                                            : 0;
    const int64_t dst_row = last >= 0 ? j->dst_strides[last] * isz : 0;
#if defined(__x86_64__) && defined(__GNUC__)
    const int rev = j->step == -isz && j->dst_step == isz &&
                    (isz == 1 || isz == 2 || isz == 4 || isz == 8 || isz == 16);
    const int vec = rev && j->cap >= PTL_CPU_AVX512, four = rev && !vec &&
                                                           j->cap >= PTL_CPU_AVX2;
#else
    const int vec = 0, four = 0;
#endif
    for (int64_t o = b; o < e;) {
        int64_t soff = 0, doff = 0;
        for (int d = 0; d <= last; d++) {
            soff += j->tab[d][idx[d]];
            doff += idx[d] * j->dst_strides[d] * isz;
        }
        int64_t count = last >= 0 && j->even ? j->sizes[last] - idx[last] : 1;
        count = count < e - o ? count : e - o;
#if defined(__x86_64__) && defined(__GNUC__)
        if (vec) {
            reverse_rows_avx512(j->dst + doff, j->src + soff, j->n, j->isz, count, dst_row,
                                src_row);
        }
#endif
        int64_t k = 0;
#if defined(__x86_64__) && defined(__GNUC__)
        for (; four && k + 4 <= count; k += 4) {
            reverse_rows4_avx2(j->dst + doff + k * dst_row, j->src + soff + k * src_row, j->n,
                               j->isz, dst_row, src_row);
        }
#endif
        for (; !vec && k < count; k++) {
            typed_row(j->dst + doff + k * dst_row, j->dst_step, j->src + soff + k * src_row,
                      NULL, j->step, j->n, j->isz, j->step == -isz, j->cap);
        }
        o += count;
        if (last >= 0) {
            idx[last] += count;
            for (int d = last; d > 0 && idx[d] == j->sizes[d]; d--) {
                idx[d] = 0;
                idx[d - 1]++;
            }
        }
    }
    return 0;
}

/* dst[i0..ik] (element strides dst_strides) = *(src + sum_d tab[d][i_d]) for every index of
 * `sizes`; see Note [Gather by offset tables].  The innermost dim's rows go through
 * gather_row: memcpy for each contiguous run of the source (repeat, roll, and flip of an
 * outer dim), a typed loop otherwise; the rows are split over the threads. */
void
shape_gather_copy(char *dst, const int64_t *dst_strides, const char *src, int64_t *const *tab,
                  int dim, const int64_t *sizes, size_t isz)
{
    int64_t outer = 1, nruns = 0;
    if (dim == 0) {
        copy_elem(dst, src, isz);
        return;
    }
    for (int d = 0; d < dim; d++) {
        if (sizes[d] == 0) {
            return;
        }
        outer *= d < dim - 1 ? sizes[d] : 1;
    }
    int64_t n = sizes[dim - 1], dst_step = dst_strides[dim - 1] * (int64_t)isz;
    const int64_t *inner = tab[dim - 1];
    /* whether the reads walk back element by element: blocks of 64 without exits, which
     * vectorize (element by element with an exit, it did not); a reversed row has no runs
     * of two, so contiguous_runs' pass over the table is left out */
    int64_t bad = 0, i = 1;
    for (; i + 64 <= n && bad == 0; i += 64) {
        for (int64_t k = i; k < i + 64; k++) {
            bad |= inner[k] - (inner[k - 1] - (int64_t)isz);
        }
    }
    for (; i < n && bad == 0; i++) {
        bad = inner[i] - (inner[i - 1] - (int64_t)isz);
    }
    int reversed = bad == 0;
    int64_t *runs = dst_step == (int64_t)isz && !reversed
                        ? contiguous_runs(inner, n, isz, &nruns) : NULL;
    GatherJob job = {dst, dst_strides, src, tab, dim, sizes, isz, runs, nruns, n, dst_step,
                     reversed, 0, 0, ptl_cpu_capability()};
    (void)ptl_parallel_for(0, outer, PTL_GRAIN_SIZE / n + 1, gather_rows, &job); /* no fail */
    free(runs);
}

/* shape_gather_copy with the innermost dim a line of step bytes (shape_impl.h; Note [Flip of
 * the innermost dim]); the rows split over the threads as there */
void
shape_gather_line(char *dst, const int64_t *dst_strides, const char *src, int64_t *const *tab,
                  int dim, const int64_t *sizes, size_t isz, int64_t step)
{
    int64_t outer = 1;
    for (int d = 0; d < dim; d++) {
        if (sizes[d] == 0) {
            return;
        }
        outer *= d < dim - 1 ? sizes[d] : 1;
    }
    int64_t n = sizes[dim - 1];
    int even = 1;
    for (int64_t i = 2; dim >= 2 && i < sizes[dim - 2]; i++) {
        even &= tab[dim - 2][i] - tab[dim - 2][i - 1] == tab[dim - 2][1] - tab[dim - 2][0];
    }
    GatherJob job = {dst, dst_strides, src, tab, dim, sizes, isz, NULL, 0, n,
                     dst_strides[dim - 1] * (int64_t)isz, 0, step, even, ptl_cpu_capability()};
    (void)ptl_parallel_for(0, outer, PTL_GRAIN_SIZE / n + 1, line_rows, &job); /* no fail */
}

/* shape_impl.h: flip's and roll's walk in the memory order of their result's layout */
int
shape_dims_in_memory_order(const int64_t *like, int dim, int *perm)
{
    int identity = 1;
    for (int i = 0; i < dim; i++) {   /* insertion sort */
        int j = i;
        for (; j > 0 && like[perm[j - 1]] < like[i]; j--) {
            perm[j] = perm[j - 1];
        }
        perm[j] = i;
    }
    for (int i = 0; i < dim; i++) {
        identity &= perm[i] == i;
    }
    return identity;
}
