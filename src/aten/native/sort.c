/* sort.c -- sorting, selection and cumulative ops: sort, argsort, msort, topk, kthvalue,
 * median, nanmedian, mode, quantile / nanquantile, cummax / cummin, logcumsumexp.
 * Mirrors ATen/native/Sorting.cpp, ATen/native/TensorCompare.cpp (mode),
 * ATen/native/ReduceOps.cpp (cummax / cummin / logcumsumexp) and their cpu/ kernels.
 *
 * Note [Sort keys]
 * ~~~~~~~~~~~~~~~~
 * Every op works on 1-D lanes along one dim.  A lane's elements become unsigned keys whose
 * unsigned order is the wanted order: integers are offset by their minimum, floats have
 * their sign bit flipped (negative floats all bits), -0.0 becomes +0.0 and every NaN the
 * largest key (NaN sorts after +inf, as in PyTorch); descending order inverts the keys.
 * One- to four-byte dtypes (float16 and bfloat16 through float) use 32-bit keys, packed
 * with the element's index into one uint64 (key << 32 | index: half the memory traffic of
 * separate arrays), int64 and float64 64-bit keys beside an index array.  Keys are sorted
 * by an LSD radix sort, one byte per pass, skipping the passes in which every key has the
 * same byte (so an int8 lane takes one pass); short lanes use insertion sort.  Both are stable, so every sort here is stable:
 * ties keep their input order, which also fixes the indices median and mode report.
 * Lanes are split over the threads.  sort, argsort and topk of CUDA tensors (and of CPU
 * tensors under kernel emulation) take device_index.h's hook after the checks and the
 * outputs: Note [CUDA sort] in src/cuda/sort_plan.h.  kthvalue, median, nanmedian, mode,
 * cummax, cummin and logcumsumexp take sort_device.c's path there (Note [Device selections
 * and scans]). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "device_index.h"
#include "device_reduce.h"
#include "native.h"
#include "sort_impl.h"

int (*ptl_device_sort_hook)(const PtlDeviceSortArgs *a);

#define SMALL_LANE 32


/* ---- keys (Note [Sort keys]) ---- */

static inline uint32_t
key_f32(float x)
{
    uint32_t u;
    if (isnan(x)) {
        return 0xFFFFFFFFu;
    }
    if (x == 0.0f) {
        x = 0.0f;
    }
    memcpy(&u, &x, sizeof(u));
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

static inline uint64_t
key_f64(double x)
{
    uint64_t u;
    if (isnan(x)) {
        return ~(uint64_t)0;
    }
    if (x == 0.0) {
        x = 0.0;
    }
    memcpy(&u, &x, sizeof(u));
    return (u >> 63) ? ~u : (u | ((uint64_t)1 << 63));
}

#define FILL_KEYS(T, EXPR)                                                                \
    for (int64_t i = 0; i < n; i++) {                                                     \
        T x = *(const T *)(p + i * st);                                                   \
        k[i] = (EXPR) ^ flip;                                                             \
    }

/* 32-bit keys packed with the element's index: key << 32 | index */
#define FILL_PACKED(T, EXPR)                                                              \
    for (int64_t i = 0; i < n; i++) {                                                     \
        T x = *(const T *)(p + i * st);                                                   \
        k[i] = (uint64_t)((EXPR) ^ flip) << 32 | (uint64_t)i;                             \
    }

static void
keys32(const char *p, int64_t st, int64_t n, PtlDtype dt, int descending, uint64_t *k)
{
    uint32_t flip = descending ? 0xFFFFFFFFu : 0;
    switch (dt) {
    case PTL_DTYPE_BOOL: FILL_PACKED(uint8_t, (uint32_t)(x != 0)) break;
    case PTL_DTYPE_UINT8: FILL_PACKED(uint8_t, (uint32_t)x) break;
    case PTL_DTYPE_INT8: FILL_PACKED(int8_t, (uint32_t)(x + 128)) break;
    case PTL_DTYPE_INT16: FILL_PACKED(int16_t, (uint32_t)(x + 32768)) break;
    case PTL_DTYPE_INT32: FILL_PACKED(int32_t, (uint32_t)x ^ 0x80000000u) break;
    case PTL_DTYPE_FLOAT16: FILL_PACKED(ptl_half, key_f32(ptl_half_to_f(x))) break;
    case PTL_DTYPE_BFLOAT16: FILL_PACKED(ptl_bf16, key_f32(ptl_bf16_to_f(x))) break;
    default: FILL_PACKED(float, key_f32(x)) break;
    }
}

static void
keys64(const char *p, int64_t st, int64_t n, PtlDtype dt, int descending, uint64_t *k)
{
    uint64_t flip = descending ? ~(uint64_t)0 : 0;
    if (dt == PTL_DTYPE_INT64) {
        FILL_KEYS(int64_t, (uint64_t)x ^ ((uint64_t)1 << 63))
    }
    else {
        FILL_KEYS(double, key_f64(x))
    }
}

/* Sorts (k, ix)[0..n) by key, stably; k2/ix2 are scratch of the same size.  Sets *kres /
 * *ires to whichever buffers hold the result. */
static void
radix64(uint64_t *k, int64_t *ix, uint64_t *k2, int64_t *ix2, int64_t n, uint64_t **kres,
        int64_t **ires)
{
    if (n <= SMALL_LANE) {
        for (int64_t i = 1; i < n; i++) {
            uint64_t kv = k[i];
            int64_t iv = ix[i], j = i;
            for (; j > 0 && k[j - 1] > kv; j--) {
                k[j] = k[j - 1];
                ix[j] = ix[j - 1];
            }
            k[j] = kv;
            ix[j] = iv;
        }
        *kres = k;
        *ires = ix;
        return;
    }
    int64_t (*cnt)[256] = calloc(8, sizeof(*cnt));
    if (cnt == NULL) {
        *kres = NULL;
        return;
    }
    /* the keys less the smallest (the same order), sorted on the bytes of the largest
     * difference and back at the end: int64 lanes of small values of both signs have two or
     * three (their keys differ in every byte: eight passes, 0.79x PyTorch's argsort) */
    uint64_t lo = k[0], hi = k[0];
    for (int64_t i = 0; i < n; i++) {
        lo = k[i] < lo ? k[i] : lo;
        hi = k[i] > hi ? k[i] : hi;
    }
    int nb = 0;
    for (uint64_t r = hi - lo; r != 0; r >>= 8) {
        nb++;
    }
    for (int64_t i = 0; i < n; i++) {
        k[i] -= lo;
        for (int b = 0; b < nb; b++) {
            cnt[b][(k[i] >> 8 * b) & 255]++;
        }
    }
    for (int b = 0; b < nb; b++) {
        int sh = 8 * b;
        if (cnt[b][(k[0] >> sh) & 255] == n) {
            continue;
        }
        int64_t off[256], sum = 0;
        for (int d = 0; d < 256; d++) {
            off[d] = sum;
            sum += cnt[b][d];
        }
        for (int64_t i = 0; i < n; i++) {
            int64_t j = off[(k[i] >> sh) & 255]++;
            k2[j] = k[i];
            ix2[j] = ix[i];
        }
        uint64_t *tk = k;
        int64_t *ti = ix;
        k = k2;
        ix = ix2;
        k2 = tk;
        ix2 = ti;
    }
    free(cnt);
    for (int64_t i = 0; i < n; i++) {
        k[i] += lo;
    }
    *kres = k;
    *ires = ix;
}

/* Sorts packed keys (FILL_PACKED) by their key bytes; a[0..n) starts in index order, so an
 * LSD pass per key byte leaves equal keys in index order.  Returns the buffer holding the
 * result (a or b).  Short lanes: insertion sort of the whole values (all distinct). */
static uint64_t *
radix_packed(uint64_t *a, uint64_t *b, int64_t n)
{
    int64_t cnt[4][256];
    if (n <= SMALL_LANE) {
        for (int64_t i = 1; i < n; i++) {
            uint64_t v = a[i];
            int64_t j = i;
            for (; j > 0 && a[j - 1] > v; j--) {
                a[j] = a[j - 1];
            }
            a[j] = v;
        }
        return a;
    }
    memset(cnt, 0, sizeof(cnt));
    for (int64_t i = 0; i < n; i++) {
        uint64_t v = a[i] >> 32;
        cnt[0][v & 255]++;
        cnt[1][(v >> 8) & 255]++;
        cnt[2][(v >> 16) & 255]++;
        cnt[3][v >> 24]++;
    }
    for (int byte = 0; byte < 4; byte++) {
        int sh = 32 + 8 * byte;
        int64_t *c = cnt[byte], sum = 0;
        if (c[(a[0] >> sh) & 255] == n) {
            continue;
        }
        for (int d = 0; d < 256; d++) {
            int64_t here = c[d];
            c[d] = sum;
            sum += here;
        }
        for (int64_t i = 0; i < n; i++) {
            uint64_t v = a[i];
            b[c[(v >> sh) & 255]++] = v;
        }
        uint64_t *tmp = a;
        a = b;
        b = tmp;
    }
    return a;
}

/* Sifts v down from the root of the max-heap a[0..k). */
static inline void
sift_down(uint64_t *a, int64_t k, uint64_t v)
{
    int64_t c = 0;
    while (2 * c + 1 < k) {
        int64_t m = 2 * c + 1;
        if (m + 1 < k && a[m + 1] > a[m]) {
            m++;
        }
        if (a[m] <= v) {
            break;
        }
        a[c] = a[m];
        c = m;
    }
    a[c] = v;
}

/* Moves the k smallest of the packed values a[0..n) to a[0..k), ascending: a max-heap of
 * the best k so far (one comparison per element for topk with k much smaller than the
 * lane), then heapsort.  The values are distinct (the index is part of them), so this is
 * the first k of the stable order. */
static void
smallest_k(uint64_t *a, int64_t n, int64_t k)
{
    for (int64_t i = 0; i < n; i++) {
        uint64_t v = a[i];
        int64_t c;
        if (i >= k && v >= a[0]) {
            continue;
        }
        if (i < k) {    /* sift up */
            for (c = i; c > 0 && a[(c - 1) / 2] < v; c = (c - 1) / 2) {
                a[c] = a[(c - 1) / 2];
            }
            a[c] = v;
            continue;
        }
        sift_down(a, k, v);    /* replaces the root */
    }
    for (int64_t end = k - 1; end > 0; end--) {
        uint64_t v = a[end];
        a[end] = a[0];
        sift_down(a, end, v);
    }
}

/* Note [Selection by partition]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * kthvalue, median and nanmedian of a 32-bit-key dtype report one position of the lane's
 * stable order, which is that position of the packed values (key, index) in plain order:
 * they are distinct, so quickselect on them finds the element a stable sort puts there,
 * without sorting the lane.  Sorting it (radix_packed, four passes of scatter) had kept
 * kthvalue(5, -1) of 1024 x 1024 float32 at 0.73x PyTorch's time, 16384 x 64 at 0.63x (one
 * thread, Zen 3).  A lane that has not settled after 2 log2(n) + 8 partitions (pivots the
 * median of three that keep hitting an end) takes smallest_k for the rest, O(n log n). */

/* The value at position pos (< n) of a[0..n) in ascending order, the distinct values
 * partly reordered (Note [Selection by partition]) */
static uint64_t
select_packed(uint64_t *a, int64_t n, int64_t pos)
{
    int64_t lo = 0, hi = n - 1, rounds = 8;
    for (int64_t m = n; m > 1; m >>= 1) {
        rounds += 2;
    }
    while (hi - lo > SMALL_LANE) {
        if (rounds-- == 0) {
            smallest_k(a + lo, hi - lo + 1, pos - lo + 1);
            return a[pos];
        }
        uint64_t x = a[lo], y = a[lo + (hi - lo) / 2], z = a[hi];
        uint64_t pv = x < y ? (y < z ? y : x < z ? z : x) : (x < z ? x : y < z ? z : y);
        int64_t i = lo, j = hi;
        while (i <= j) {   /* pv is in [lo, hi]: both scans stop at it */
            while (a[i] < pv) {
                i++;
            }
            while (a[j] > pv) {
                j--;
            }
            if (i <= j) {
                uint64_t t = a[i];
                a[i++] = a[j];
                a[j--] = t;
            }
        }
        if (pos <= j) {
            hi = j;
        }
        else if (pos >= i) {
            lo = i;
        }
        else {
            return a[pos];   /* j < pos < i: the pivot */
        }
    }
    for (int64_t i = lo + 1; i <= hi; i++) {
        uint64_t v = a[i];
        int64_t j = i;
        for (; j > lo && a[j - 1] > v; j--) {
            a[j] = a[j - 1];
        }
        a[j] = v;
    }
    return a[pos];
}

static inline void
copy_elem(char *dst, const char *src, int64_t isz)
{
    switch (isz) {
    case 1: *(uint8_t *)dst = *(const uint8_t *)src; break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    default: memcpy(dst, src, 8); break;
    }
}

/* ---- one lane ---- */

/* The position, in the lane sorted ascending, of the element a selecting op reports, for
 * a lane of n elements of which nnan are NaN (their keys, all ones, sort last). */
static int64_t
select_pos_of(const LaneJob *job, int64_t nnan, int64_t n)
{
    if (job->kind == L_KTH) {
        return job->pos;
    }
    if (job->kind == L_MEDIAN) {
        return nnan > 0 ? n - nnan : (n - 1) / 2;
    }
    /* nanmedian: the lower median of the numbers; the first NaN when there are none */
    return nnan == n ? 0 : (n - nnan - 1) / 2;
}

/* select_pos_of for a sorted lane, its NaN keys (all ones) at the end */
static int64_t
select_pos(const LaneJob *job, const uint32_t *k32, const uint64_t *k64, int64_t n)
{
    int64_t nnan = 0;
    if (job->kind != L_KTH && ptl_dtype_is_floating(job->dt)) {
        while (nnan < n && (k32 ? k32[n - 1 - nnan] == 0xFFFFFFFFu
                                : k64[n - 1 - nnan] == ~(uint64_t)0)) {
            nnan++;
        }
    }
    return select_pos_of(job, nnan, n);
}

/* Note [Mode with NaN]
 * ~~~~~~~~~~~~~~~~~~~~
 * mode is PyTorch's CPU algorithm: sort the lane, walk its runs of equal values (compared
 * with ==, so each NaN is a run of its own, as torch.unique counts them), report the first
 * longest run (the smallest value among equally long runs) and the last input index in it.
 * PyTorch sorts with std::sort and `<`, which is no ordering once a NaN is in the lane: the
 * NaNs land anywhere and can split the runs of equal numbers, so its answer depends on
 * where the NaNs were and on the row's length (a NaN first in a short row is reported as
 * the mode of distinct numbers).  We sort in sort's order (stable, NaN last), which is where
 * PyTorch's sort leaves trailing NaNs: the mode is the most frequent number, and NaN only
 * when the lane is all NaN (then its first NaN, index 0, as PyTorch's).  The same holds on
 * the device (Note [Device selections and scans]). */

/* mode: the longest run of equal keys (the smallest value among equally long runs; each NaN
 * key of a floating lane a run of its own) and the last input index in it */
static int64_t
mode_pos(const uint32_t *k32, const uint64_t *k64, int64_t n, int floating)
{
    int64_t best = 0, best_len = 0;
    for (int64_t i = 0; i < n;) {
        int64_t j = i + 1;
        int nan = floating && (k32 ? k32[i] == 0xFFFFFFFFu : k64[i] == ~(uint64_t)0);
        while (j < n && !nan && (k32 ? k32[j] == k32[i] : k64[j] == k64[i])) {
            j++;
        }
        if (j - i > best_len) {
            best_len = j - i;
            best = j - 1;
        }
        i = j;
    }
    return best;
}

static void
emit_sorted(const LaneJob *job, const char *p, const int64_t *ix, int64_t l, int64_t isz)
{
    int64_t o = (l / job->inner) * job->nsel * job->inner + l % job->inner;
    int64_t pos;
    if (job->kind != L_SORT) {
        pos = job->pos;
        if (job->vals) {
            copy_elem(job->vals + l * isz, p + ix[pos] * job->st, isz);
        }
        job->idx[l] = ix[pos];
        return;
    }
    for (int64_t j = 0; j < job->nsel; j++, o += job->inner) {
        if (job->vals) {
            copy_elem(job->vals + o * isz, p + ix[j] * job->st, isz);
        }
        job->idx[o] = ix[j];
    }
}

static inline float
unkey_f32(uint32_t key)
{
    uint32_t u = (key & 0x80000000u) ? (key ^ 0x80000000u) : ~key;
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

#define DECODE(KT, T, EXPR, SPECIAL)                                                      \
    for (int64_t j = 0; j < job->nsel; j++, o += job->inner) {                            \
        KT key = k[j] ^ flip;                                                             \
        T *dst = (T *)job->vals + o;                                                      \
        if (SPECIAL) {                                                                    \
            memcpy(dst, p + ix[j] * job->st, sizeof(T));                                  \
        }                                                                                 \
        else {                                                                            \
            *dst = EXPR;                                                                  \
        }                                                                                 \
        job->idx[o] = ix[j];                                                              \
    }                                                                                     \
    break;

/* the keys of zeros and NaNs dropped the sign / the payload */
#define F_SPECIAL (key == 0xFFFFFFFFu || key == 0x80000000u)

/* sort / topk values of a 32-bit-key dtype decoded from the sorted keys: a sequential
 * pass instead of gathering the input at the sorted indices (zeros and NaNs are gathered) */
static void
emit_from_keys(const LaneJob *job, const char *p, const uint32_t *k, const int64_t *ix,
               int64_t l)
{
    uint32_t flip = job->descending ? 0xFFFFFFFFu : 0;
    int64_t o = (l / job->inner) * job->nsel * job->inner + l % job->inner;
    switch (job->dt) {
    case PTL_DTYPE_BOOL:
    case PTL_DTYPE_UINT8: DECODE(uint32_t, uint8_t, (uint8_t)key, 0)
    case PTL_DTYPE_INT8: DECODE(uint32_t, int8_t, (int8_t)((int32_t)key - 128), 0)
    case PTL_DTYPE_INT16: DECODE(uint32_t, int16_t, (int16_t)((int32_t)key - 32768), 0)
    case PTL_DTYPE_INT32: DECODE(uint32_t, int32_t, (int32_t)(key ^ 0x80000000u), 0)
    case PTL_DTYPE_FLOAT16:
        DECODE(uint32_t, ptl_half, ptl_f_to_half(unkey_f32(key)), F_SPECIAL)
    case PTL_DTYPE_BFLOAT16:
        DECODE(uint32_t, ptl_bf16, ptl_f_to_bf16(unkey_f32(key)), F_SPECIAL)
    default: DECODE(uint32_t, float, unkey_f32(key), F_SPECIAL)
    }
}

static inline double
unkey_f64(uint64_t key)
{
    uint64_t top = (uint64_t)1 << 63, u = (key & top) ? (key ^ top) : ~key;
    double f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

/* the keys of zeros and NaNs of the 64-bit-key dtypes */
#define F_SPECIAL64 (key == ~(uint64_t)0 || key == (uint64_t)1 << 63)

/* emit_from_keys for the 64-bit-key dtypes, int64 and float64 */
static void
emit_from_keys64(const LaneJob *job, const char *p, const uint64_t *k, const int64_t *ix,
                 int64_t l)
{
    uint64_t flip = job->descending ? ~(uint64_t)0 : 0;
    int64_t o = (l / job->inner) * job->nsel * job->inner + l % job->inner;
    switch (job->dt) {
    case PTL_DTYPE_INT64: DECODE(uint64_t, int64_t, (int64_t)(key ^ ((uint64_t)1 << 63)), 0)
    default: DECODE(uint64_t, double, unkey_f64(key), F_SPECIAL64)
    }
}
#undef DECODE
#undef F_SPECIAL
#undef F_SPECIAL64

/* cummax / cummin: NaN propagates (each NaN becomes the running extremum), equal values
 * move the index to the later one (PyTorch's cummax_cummin_helper with >= / <=).  One typed
 * loop per dtype, keeping the running extremum as the element itself, compared in ACC.
 * While it is not NaN, "x is NaN or x >= it" is the one comparison !(x < it), and a block
 * of CUM_BLOCK elements all strictly below it (the usual case once a lane is under way)
 * repeats it without a test per element; after a block that fails the lane goes one element
 * at a time for a stretch of CUM_BLOCK elements, doubled (up to CUM_STRETCH) after every
 * further failure.  From the first NaN on only a later NaN takes over, which the
 * last loop checks alone.  1024 x 1024 float32 cummax(1), one thread: 3.9 ms -> 0.9-1.2 ms
 * (PyTorch 1.0-1.2 ms), about the same for sorted rows. */
#define CUM_BLOCK 16
#define CUM_STRETCH 1024
#define CUM_EXTREME(T, ACC, LOAD)                                                         \
    {                                                                                     \
        T best = *(const T *)p, *vals = (T *)job->vals;                                   \
        ACC bv = LOAD(best);                                                              \
        int64_t j = 0, stretch = CUM_BLOCK;                                               \
        while (j < len && bv == bv) {                                                     \
            const T *q = (const T *)(p + j * st);                                         \
            /* the first element decides at once in a rising (falling) lane */            \
            int keep = len - j >= CUM_BLOCK && (is_max ? LOAD(*q) < bv : LOAD(*q) > bv);  \
            if (keep && st == (int64_t)sizeof(T)) {                                       \
                /* a constant count and no early exit: the test vectorizes */             \
                for (int k = 0; k < CUM_BLOCK; k++) {                                     \
                    keep &= is_max ? LOAD(q[k]) < bv : LOAD(q[k]) > bv;                   \
                }                                                                         \
            }                                                                             \
            for (int k = 1; keep && st != (int64_t)sizeof(T) && k < CUM_BLOCK; k++) {     \
                ACC v = LOAD(*(const T *)((const char *)q + k * st));                     \
                keep = is_max ? v < bv : v > bv;                                          \
            }                                                                             \
            if (keep) {                                                                   \
                for (int k = 0; k < CUM_BLOCK; k++, o += inner) {                         \
                    vals[o] = best;                                                       \
                    idx[o] = bi;                                                          \
                }                                                                         \
                j += CUM_BLOCK;                                                           \
                stretch = CUM_BLOCK;                                                      \
                continue;                                                                 \
            }                                                                             \
            /* one element at a time for a stretch that doubles while blocks keep        \
             * failing, so that a rising lane runs through long plain loops */            \
            int64_t end = len - j < stretch ? len : j + stretch;                          \
            stretch = stretch < CUM_STRETCH ? 2 * stretch : stretch;                      \
            for (; j < end && bv == bv; j++, o += inner) {                                \
                T x = *(const T *)(p + j * st);                                           \
                ACC v = LOAD(x);                                                          \
                if (is_max ? !(v < bv) : !(v > bv)) {                                     \
                    best = x;                                                             \
                    bv = v;                                                               \
                    bi = j;                                                               \
                }                                                                         \
                vals[o] = best;                                                           \
                idx[o] = bi;                                                              \
            }                                                                             \
        }                                                                                 \
        for (; j < len; j++, o += inner) {                                                \
            T x = *(const T *)(p + j * st);                                               \
            if (LOAD(x) != LOAD(x)) {                                                     \
                best = x;                                                                 \
                bi = j;                                                                   \
            }                                                                             \
            vals[o] = best;                                                               \
            idx[o] = bi;                                                                  \
        }                                                                                 \
    }                                                                                     \
    break;

static void
cum_extreme(const LaneJob *job, const char *p, int64_t l)
{
    /* locals: stores through idx could otherwise alias the job's fields */
    int is_max = job->kind == L_CUMMAX;
    int64_t len = job->len, inner = job->inner, st = job->st, *idx = job->idx, bi = 0;
    int64_t o = (l / inner) * len * inner + l % inner;
    switch (job->dt) {
    PTL_REAL_DTYPE_CASES(CUM_EXTREME)
    }
}
#undef CUM_EXTREME
#undef CUM_BLOCK
#undef CUM_STRETCH

static void
store_double(char *q, PtlDtype dt, double v)
{
    switch (dt) {
    case PTL_DTYPE_FLOAT16: *(ptl_half *)q = ptl_f_to_half((float)v); break;
    case PTL_DTYPE_BFLOAT16: *(ptl_bf16 *)q = ptl_f_to_bf16((float)v); break;
    case PTL_DTYPE_FLOAT32: *(float *)q = (float)v; break;
    default: *(double *)q = v; break;
    }
}

/* logcumsumexp: r = log(exp(r) + exp(x)) as max + log1p(exp(min - max)), in double */
static void
log_cum_sum_exp(const LaneJob *job, const char *p, int64_t l, int64_t isz)
{
    int64_t o = (l / job->inner) * job->len * job->inner + l % job->inner;
    double r = -INFINITY;
    for (int64_t j = 0; j < job->len; j++, o += job->inner) {
        double x = ptl_load_double(p + j * job->st, job->dt);
        double hi = r > x ? r : x, lo = r > x ? x : r;
        if (isnan(x) || isnan(r)) {
            r = NAN;
        }
        else if (!isinf(hi) || hi < 0 || !isinf(lo) || lo > 0) {
            r = isinf(hi) ? hi : hi + log1p(exp(lo - hi));
        }
        else {
            r = hi;
        }
        store_double(job->vals + o * isz, job->dt, r);
    }
}

static int
run_lanes(void *ctx, int64_t b, int64_t e)
{
    const LaneJob *job = ctx;
    int64_t n = job->len, isz = (int64_t)ptl_dtype_itemsize(job->dt);
    int wide = isz == 8, sorting = job->kind <= L_MODE;
    size_t ksz = wide ? 8 : 4;
    char *mem = job->scratch;
    if (sorting && mem == NULL) {
        mem = malloc((size_t)n * 2 * (ksz + sizeof(int64_t)) + 1);
        if (mem == NULL) {
            return ptl_error_set(PTL_ERR_RUNTIME, "sort: out of memory");
        }
    }
    void *ka = mem, *kb = mem + n * ksz;
    int64_t *ia = (int64_t *)(mem + 2 * n * ksz), *ib = ia + n;
    for (int64_t l = b; l < e; l++) {
        const char *p = job->base;
        int64_t rest = l;
        for (int d = job->nd - 1; d >= 0; d--) {
            p += (rest % job->osize[d]) * job->ostride[d];
            rest /= job->osize[d];
        }
        if (!sorting) {
            if (job->kind == L_LOGCUMSUMEXP) {
                log_cum_sum_exp(job, p, l, isz);
            }
            else {
                cum_extreme(job, p, l);
            }
            continue;
        }
        uint32_t *k32 = NULL;
        uint64_t *k64 = NULL;
        int64_t *ix = NULL;
        if (wide) {
            for (int64_t i = 0; i < n; i++) {
                ia[i] = i;
            }
            keys64(p, job->st, n, job->dt, job->descending, ka);
            radix64(ka, ia, kb, ib, n, &k64, &ix);
        }
        else {
            /* packed in mem[0, 16n); unpacked into the other half of it and mem[16n, 24n) */
            uint64_t *pa = (uint64_t *)mem, *pb = pa + n;
            int64_t m = n;
            keys32(p, job->st, n, job->dt, job->descending, pa);
            uint64_t *res = pa;
            if (job->kind == L_KTH || job->kind == L_MEDIAN || job->kind == L_NANMEDIAN) {
                int64_t nnan = 0, at;
                int nan_keys = job->kind != L_KTH && ptl_dtype_is_floating(job->dt);
                for (int64_t i = 0; nan_keys && i < n; i++) {
                    nnan += pa[i] >> 32 == 0xFFFFFFFFu;
                }
                at = (int64_t)(uint32_t)select_packed(pa, n, select_pos_of(job, nnan, n));
                LaneJob one = *job;
                one.pos = 0;
                emit_sorted(&one, p, &at, l, isz);
                continue;
            }
            if (job->kind == L_SORT && job->nsel < n / 16) {
                smallest_k(pa, n, job->nsel);
                m = job->nsel;
            }
            else {
                res = radix_packed(pa, pb, n);
            }
            ix = (int64_t *)(res == pa ? pb : pa);
            k32 = (uint32_t *)(pb + n);
            for (int64_t i = 0; i < m; i++) {
                ix[i] = (int64_t)(uint32_t)res[i];
                k32[i] = (uint32_t)(res[i] >> 32);
            }
        }
        if (k32 == NULL && k64 == NULL) {
            if (mem != job->scratch) {
                free(mem);
            }
            return ptl_error_set(PTL_ERR_RUNTIME, "sort: out of memory");
        }
        if (job->kind == L_SORT) {
            if (k32 != NULL && job->vals != NULL) {
                emit_from_keys(job, p, k32, ix, l);
            }
            else if (job->vals != NULL) {
                emit_from_keys64(job, p, k64, ix, l);
            }
            else {
                emit_sorted(job, p, ix, l, isz);
            }
            continue;
        }
        LaneJob one = *job;
        one.pos = job->kind == L_MODE ? mode_pos(k32, k64, n, ptl_dtype_is_floating(job->dt))
                                      : select_pos(job, k32, k64, n);
        emit_sorted(&one, p, ix, l, isz);
    }
    if (mem != job->scratch) {
        free(mem);
    }
    return 0;
}

/* Fills the lane geometry of `job` for src along dim d (-1: src is one lane, contiguous). */
void
lane_setup(LaneJob *job, const PtlTensorImpl *src, int64_t d)
{
    int64_t isz = (int64_t)ptl_tensor_itemsize(src);
    job->dt = src->dtype;
    job->base = ptl_tensor_data(src);
    job->nd = 0;
    job->inner = 1;
    if (d < 0 || src->dim == 0) {
        job->len = d < 0 ? src->numel : 1;
        job->st = isz;
        return;
    }
    job->len = src->sizes[d];
    job->st = src->strides[d] * isz;
    for (int i = 0; i < src->dim; i++) {
        if (i != d) {
            job->osize[job->nd] = src->sizes[i];
            job->ostride[job->nd++] = src->strides[i] * isz;
        }
        if (i > d) {
            job->inner *= src->sizes[i];
        }
    }
}

static int
lanes_go(LaneJob *job)
{
    int64_t nlanes = 1;
    for (int i = 0; i < job->nd; i++) {
        nlanes *= job->osize[i];
    }
    if (nlanes == 0 || job->len == 0) {
        return 0;
    }
    if (job->kind <= L_MODE && ptl_dtype_itemsize(job->dt) < 8 && job->len > UINT32_MAX) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "sort: a lane of more than 2^32 - 1 elements is not supported");
    }
    int64_t work = nlanes * job->len;
    void *token = work >= PTL_GRAIN_SIZE ? ptl_nogil_begin() : NULL;
    int rc = ptl_parallel_for(0, nlanes, PTL_GRAIN_SIZE / job->len + 1, run_lanes, job);
    ptl_nogil_end(token);
    return rc;
}

/* Runs the sort `job` (geometry and outputs set) on the device (device_index.h's hook).
 * 0, or -1 with the error set. */
int
lanes_on_device(const LaneJob *job)
{
    PtlDeviceSortArgs a = {
        .dtype = job->dt, .descending = job->descending, .nd = job->nd, .base = job->base,
        .vals = job->vals, .idx = job->idx, .len = job->len, .st = job->st, .nlanes = 1,
        .nsel = job->nsel, .inner = job->inner,
        .itemsize = (int64_t)ptl_dtype_itemsize(job->dt),
    };
    for (int i = 0; i < job->nd; i++) {
        a.nlanes *= job->osize[i];
    }
    memcpy(a.osize, job->osize, sizeof(a.osize));
    memcpy(a.ostride, job->ostride, sizeof(a.ostride));
    return ptl_device_sort_hook(&a);
}

/* Runs `job` (geometry set) into new outputs of shape `sizes`; values when want_vals,
 * indices unless kind is logcumsumexp.  Writes them to s[0] / s[1] (argsort: indices to
 * s[0]). */
static int
lanes_into(LaneJob *job, PtlIValue *s, int dim, const int64_t *sizes, int want_vals,
           PtlDevice device)
{
    PtlTensorImpl *vals = NULL, *idx = NULL, *scratch = NULL;
    if (want_vals && (vals = ptl_empty(dim, sizes, job->dt, device)) == NULL) {
        return -1;
    }
    if (job->kind != L_LOGCUMSUMEXP &&
        (idx = ptl_empty(dim, sizes, PTL_DTYPE_INT64, device)) == NULL) {
        goto error;
    }
    job->vals = vals ? ptl_tensor_data(vals) : NULL;
    job->idx = idx ? (int64_t *)ptl_tensor_data(idx) : NULL;
    if (job->kind == L_SORT && ptl_device_sort_hook != NULL && !ptl_tensor_is_meta(idx) &&
        (device.type == PTL_DEVICE_CUDA || ptl_device_reduce_emulation)) {
        if (lanes_on_device(job) < 0) {
            goto error;
        }
        goto done;
    }
    /* a single long lane sorts in buffers from the tensor allocator, which keeps big
     * blocks for reuse: no fresh pages to fault in when the same size is sorted again */
    int64_t nlanes = 1;
    for (int i = 0; i < job->nd; i++) {
        nlanes *= job->osize[i];
    }
    if (job->kind <= L_MODE && nlanes == 1 && job->len > SMALL_LANE) {
        int64_t bytes = job->len * 2 * (8 + (int64_t)sizeof(int64_t));
        if ((scratch = ptl_empty(1, &bytes, PTL_DTYPE_UINT8, device)) == NULL) {
            goto error;
        }
        job->scratch = ptl_tensor_data(scratch);
    }
    if (lanes_go(job) < 0) {
        goto error;
    }
    ptl_xdecref(scratch);
done:
    if (vals == NULL) {
        s[0] = ptl_iv_tensor(idx);
        return 0;
    }
    s[0] = ptl_iv_tensor(vals);
    if (idx != NULL) {
        s[1] = ptl_iv_tensor(idx);
    }
    return 0;
error:
    ptl_xdecref(scratch);
    ptl_xdecref(vals);
    ptl_xdecref(idx);
    return -1;
}

/* ---- sort, argsort, msort, topk ---- */

/* sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)
 * sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (...)
 * argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor
 * argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> Tensor
 * [*] -> [*] (always stable: Note [Sort keys]) */
static int
sort_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int has_stable = op->id == PTL_OP_sort_stable || op->id == PTL_OP_argsort_stable;
    int is_arg = op->id == PTL_OP_argsort || op->id == PTL_OP_argsort_stable;
    int64_t d = s[has_stable ? 2 : 1].u.i;
    LaneJob job = {0};
    if (ptl_wrap_dim(&d, self->dim) < 0) {
        return -1;
    }
    job.kind = L_SORT;
    job.descending = s[has_stable ? 3 : 2].u.b;
    lane_setup(&job, self, d);
    job.nsel = job.len;
    return lanes_into(&job, s, self->dim, self->sizes, !is_arg, self->device);
}

/* msort(Tensor self) -> Tensor: sort(self, dim=0).values */
static int
msort_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    s[1] = ptl_iv_int(0);
    s[2] = ptl_iv_bool(0);
    PtlTensorImpl *v = ptl_call_tensor(PTL_OP_sort, s);
    if (v == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(v);
    return 0;
}

/* topk(Tensor self, int k, int dim=-1, bool largest=True, bool sorted=True)
 * -> (Tensor values, Tensor indices)   [*, n, *] -> [*, k, *], always sorted */
static int
topk_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int64_t k = s[1].u.i, d = s[2].u.i, sizes[PTL_MAX_DIMS];
    LaneJob job = {0};
    if (ptl_wrap_dim(&d, self->dim) < 0) {
        return -1;
    }
    if (self->dtype == PTL_DTYPE_BOOL) {
        return ptl_error_set(PTL_ERR_RUNTIME, "topk does not support bool dtypes on CPU");
    }
    job.kind = L_SORT;
    job.descending = s[3].u.b;
    lane_setup(&job, self, d);
    if (k < 0 || k > job.len) {
        return ptl_error_set(PTL_ERR_RUNTIME, "selected index k out of range");
    }
    /* a 0-dim self is its one-element lane whatever k (0 or 1), as in PyTorch */
    job.nsel = self->dim == 0 ? 1 : k;
    memcpy(sizes, self->sizes, sizeof(int64_t) * (size_t)self->dim);
    if (self->dim > 0) {
        sizes[d] = k;
    }
    return lanes_into(&job, s, self->dim, sizes, 1, self->device);
}

/* ---- kthvalue, median, nanmedian, mode: one element per lane ---- */

static int
dtype_error(const char *kname, PtlDtype dt)
{
    return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'", kname,
                         ptl_dtype_legacy_name(dt));
}

/* Runs a selecting `job` along dim d of self into (values, indices) of the reduced shape. */
static int
select_into(LaneJob *job, PtlIValue *s, PtlTensorImpl *self, int64_t d, int keepdim)
{
    int64_t sizes[PTL_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < self->dim; i++) {
        if (i != d) {
            sizes[nd++] = self->sizes[i];
        }
        else if (keepdim) {
            sizes[nd++] = 1;
        }
    }
    job->nsel = 1;
    return lanes_into(job, s, nd, sizes, 1, self->device);
}

/* kthvalue(Tensor self, int k, int dim=-1, bool keepdim=False) -> (values, indices)
 * median.dim / nanmedian.dim(Tensor self, int dim, bool keepdim=False) -> (values, indices)
 * mode(Tensor self, int dim=-1, bool keepdim=False) -> (values, indices)
 * [*, n, *] -> [*, *] (keepdim: [*, 1, *]) */
static int
select_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int is_kth = op->id == PTL_OP_kthvalue;
    int64_t d = s[is_kth ? 2 : 1].u.i;
    const char *name = is_kth ? "kthvalue" : op->id == PTL_OP_mode ? "mode" : "median";
    LaneJob job = {0};
    job.kind = is_kth ? L_KTH : op->id == PTL_OP_mode ? L_MODE
               : op->id == PTL_OP_median_dim ? L_MEDIAN : L_NANMEDIAN;
    if (self->dtype == PTL_DTYPE_BOOL && job.kind != L_MODE) {
        return dtype_error(is_kth ? "kthvalue_cpu" : "median_out", self->dtype);
    }
    if (ptl_wrap_dim(&d, self->dim) < 0) {
        return -1;
    }
    lane_setup(&job, self, d);
    if (job.len == 0) {
        return ptl_error_set(PTL_ERR_INDEX,
                             "%s(): Expected reduction dim %lld to have non-zero size.", name,
                             (long long)d);
    }
    if (is_kth) {
        int64_t k = s[1].u.i;
        if (k < 1 || k > job.len) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "kthvalue(): selected number k out of range for dimension %lld",
                                 (long long)d);
        }
        job.pos = k - 1;
    }
    if (selects_on_device(self, ptl_device_sort_hook != NULL)) {
        return select_on_device(job.kind, self, d, job.pos, s[is_kth ? 3 : 2].u.b, s);
    }
    return select_into(&job, s, self, d, s[is_kth ? 3 : 2].u.b);
}

/* median / nanmedian(Tensor self) -> Tensor: the lower median of all elements ([] -> NaN) */
static int
median_all_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *src;
    LaneJob job = {0};
    if (self->dtype == PTL_DTYPE_BOOL) {
        return dtype_error("median_cpu", self->dtype);
    }
    if (self->numel == 0) {
        PtlIValue nan = ptl_iv_double(NAN);
        PtlTensorImpl *r = ptl_empty(0, NULL, self->dtype, self->device);
        if (r == NULL || ptl_fill_scalar(r, &nan) < 0) {
            ptl_xdecref(r);
            return -1;
        }
        s[0] = ptl_iv_tensor(r);
        return 0;
    }
    if ((src = ptl_contiguous(self)) == NULL) {
        return -1;
    }
    job.kind = op->id == PTL_OP_median ? L_MEDIAN : L_NANMEDIAN;
    int rc;
    if (selects_on_device(self, ptl_device_sort_hook != NULL)) {
        int64_t n = src->numel;
        PtlTensorImpl *flat = ptl_tensor_impl_view(src, 1, &n, &(int64_t){1}, src->storage_offset);
        rc = flat != NULL ? select_on_device(job.kind, flat, 0, 0, 0, s) : -1;
        ptl_xdecref(flat);
        ptl_decref(src);
        if (rc == 0) {
            ptl_ivalue_release(&s[1]);
        }
        return rc;
    }
    lane_setup(&job, src, -1);
    rc = lanes_into(&job, s, 0, NULL, 1, self->device);
    ptl_decref(src);
    if (rc == 0) {
        ptl_ivalue_release(&s[1]);
    }
    return rc;
}

/* ---- scans ---- */

/* cummax / cummin(Tensor self, int dim) -> (Tensor values, Tensor indices)
 * logcumsumexp(Tensor self, int dim) -> Tensor   [*] -> [*] */
static int
cum_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int64_t d = s[1].u.i;
    LaneJob job = {0};
    if (ptl_wrap_dim(&d, self->dim) < 0) {
        return -1;
    }
    job.kind = op->id == PTL_OP_cummax ? L_CUMMAX : op->id == PTL_OP_cummin ? L_CUMMIN
               : L_LOGCUMSUMEXP;
    if (job.kind == L_LOGCUMSUMEXP && !ptl_dtype_is_floating(self->dtype)) {
        return dtype_error("logcumsumexp_out_cpu", self->dtype);
    }
    if (selects_on_device(self, ptl_device_scan_hook != NULL)) {
        return cum_on_device(job.kind, self, d, s);
    }
    lane_setup(&job, self, d);
    job.nsel = job.len;
    return lanes_into(&job, s, self->dim, self->sizes, 1, self->device);
}

/* ---- quantile / nanquantile ---- */

static const char *const interpolations[] = {"linear", "lower", "higher", "midpoint",
                                             "nearest"};

/* The gather positions (lo, hi) and lerp weight w of every (lane, q) pair: idx tensors
 * [lanes..., nq] int64, w [lanes..., nq] of x's dtype; `sorted` is [lanes..., n] with NaN
 * last.  With `scale` ([lanes..., 1] of x's dtype) and `nan_lane` ([lanes..., 1] bool) also
 * each lane's rank per unit of q (the count of values that count, less one) and whether the
 * lane's result is NaN (a NaN in quantile, only NaN in nanquantile). */
static int
quantile_ranks(PtlTensorImpl *sorted, const double *q, int64_t nq, int mode, int ignore_nan,
               PtlTensorImpl *lo, PtlTensorImpl *hi, PtlTensorImpl *w, PtlTensorImpl *scale,
               PtlTensorImpl *nan_lane)
{
    int64_t n = sorted->sizes[sorted->dim - 1], nl = n > 0 ? sorted->numel / n : 0;
    int64_t isz = (int64_t)ptl_tensor_itemsize(sorted);
    int64_t *plo = (int64_t *)ptl_tensor_data(lo), *phi = (int64_t *)ptl_tensor_data(hi);
    char *pw = ptl_tensor_data(w);
    for (int64_t l = 0; l < nl; l++) {
        const char *p = ptl_tensor_data(sorted);
        int64_t rest = l, nnan = 0;
        for (int d = sorted->dim - 2; d >= 0; d--) {
            p += (rest % sorted->sizes[d]) * sorted->strides[d] * isz;
            rest /= sorted->sizes[d];
        }
        int64_t st = sorted->strides[sorted->dim - 1] * isz;
        while (nnan < n && isnan(ptl_load_double(p + (n - 1 - nnan) * st, sorted->dtype))) {
            nnan++;
        }
        int64_t valid = ignore_nan ? n - nnan : (nnan > 0 ? 0 : n);
        if (scale != NULL) {
            store_double((char *)ptl_tensor_data(scale) + l * isz, scale->dtype,
                         valid > 0 ? (double)(valid - 1) : 0.0);
            ((uint8_t *)ptl_tensor_data(nan_lane))[l] = valid == 0;
        }
        for (int64_t j = 0; j < nq; j++) {
            /* a NaN lane takes a NaN: the last value (quantile) or the first (nanquantile,
             * all NaN), the one PyTorch picks and gives the gradient to */
            int64_t o = l * nq + j;
            double r = valid > 0 ? q[j] * (double)(valid - 1) : ignore_nan ? 0.0 : (double)(n - 1);
            double f, c, wt;
            if (mode == 1) {
                r = floor(r);
            }
            else if (mode == 2) {
                r = ceil(r);
            }
            else if (mode == 4) {
                r = nearbyint(r);
            }
            f = floor(r);
            c = ceil(r);
            wt = mode == 3 ? 0.5 : r - f;
            plo[o] = (int64_t)f;
            phi[o] = (int64_t)c;
            store_double(pw + o * isz, w->dtype, wt);
        }
    }
    return 0;
}

/* The linear interpolation weight as PyTorch computes it, rank - floor(rank) with
 * rank = q * scale, so that it carries q's history: q [nq] or [] is laid along the last of
 * `dim` dims, scale and nan_lane are [lanes..., 1], lo [lanes..., nq].  A lane whose result
 * is NaN gets the weight 0, with no gradient (PyTorch's masked_fill of its ranks).  Replaces
 * *w (a new reference). */
static int
quantile_weight(PtlTensorImpl *q, int dim, PtlTensorImpl *scale, PtlTensorImpl *nan_lane,
                PtlTensorImpl *lo, PtlTensorImpl **w)
{
    int64_t qsizes[PTL_MAX_DIMS + 1];
    PtlTensorImpl *qrow = NULL, *rank = NULL, *base = NULL, *frac = NULL, *r;
    for (int i = 0; i < dim - 1; i++) {
        qsizes[i] = 1;
    }
    qsizes[dim - 1] = q->numel;
    PtlIValue a[2] = {ptl_iv_tensor(q), ptl_iv_intlist(qsizes, dim)};
    if ((qrow = ptl_call_tensor(PTL_OP_reshape, a)) == NULL) {
        goto error;
    }
    PtlIValue m[2] = {ptl_iv_tensor(qrow), ptl_iv_tensor(scale)};
    if ((rank = ptl_call_tensor(PTL_OP_mul_Tensor, m)) == NULL ||
        (base = ptl_cast(lo, scale->dtype)) == NULL) {
        goto error;
    }
    PtlIValue d[3] = {ptl_iv_tensor(rank), ptl_iv_tensor(base), ptl_iv_int(1)};
    if ((frac = ptl_call_tensor(PTL_OP_sub_Tensor, d)) == NULL) {
        goto error;
    }
    PtlIValue f[3] = {ptl_iv_tensor(frac), ptl_iv_tensor(nan_lane), ptl_iv_double(0.0)};
    if ((r = ptl_call_tensor(PTL_OP_masked_fill_Scalar, f)) == NULL) {
        goto error;
    }
    ptl_decref(*w);
    *w = r;
    ptl_decref(frac);
    ptl_decref(base);
    ptl_decref(rank);
    ptl_decref(qrow);
    return 0;
error:
    ptl_xdecref(frac);
    ptl_xdecref(base);
    ptl_xdecref(rank);
    ptl_xdecref(qrow);
    return -1;
}

/* quantile's argument checks, in PyTorch's order; sets *mode (an index into
 * interpolations) and *d (the wrapped dim, 0 for dim=None).  -1 with the error set. */
static int
quantile_check(const PtlIValue *s, int scalar_q, int *mode, int64_t *d)
{
    PtlTensorImpl *self = s[0].u.t;
    if (scalar_q && !(s[1].u.d >= 0 && s[1].u.d <= 1)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "quantile() q must be in the range [0, 1] but got %g", s[1].u.d);
    }
    *mode = -1;
    for (int i = 0; i < 5; i++) {
        if (strcmp(s[4].u.s, interpolations[i]) == 0) {
            *mode = i;
        }
    }
    if (*mode < 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "quantile() interpolation must be one of linear, lower, higher, "
                             "midpoint or nearest, but got %s", s[4].u.s);
    }
    if (self->numel == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "quantile() input tensor must be non-empty");
    }
    if (!scalar_q && s[1].u.t->dim > 1) {
        return ptl_error_set(PTL_ERR_RUNTIME, "quantile() q must be a scalar or 1D tensor");
    }
    if (self->dtype != PTL_DTYPE_FLOAT32 && self->dtype != PTL_DTYPE_FLOAT64) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "quantile() input tensor must be either float or double dtype");
    }
    if (!scalar_q && s[1].u.t->dtype != self->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "quantile() q tensor must be same dtype as the input tensor");
    }
    *d = 0;
    if (s[2].tag != PTL_IV_NONE) {
        *d = s[2].u.i;
        if (ptl_wrap_dim(d, self->dim) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The values of the q tensor (borrowed) as a malloc'd array of q->numel doubles, each
 * checked to lie in [0, 1]; NULL with the error set. */
static double *
quantile_q_values(PtlTensorImpl *q)
{
    PtlTensorImpl *qt = ptl_contiguous(q);
    double *v = NULL;
    if (qt == NULL) {
        return NULL;
    }
    if ((v = malloc(sizeof(double) * (size_t)(q->numel + 1))) == NULL) {
        ptl_error_set(PTL_ERR_RUNTIME, "quantile: out of memory");
        goto error;
    }
    for (int64_t j = 0; j < q->numel; j++) {
        v[j] = ptl_load_double((const char *)ptl_tensor_data(qt) +
                               j * (int64_t)ptl_tensor_itemsize(qt), qt->dtype);
        if (!(v[j] >= 0 && v[j] <= 1)) {
            ptl_error_set(PTL_ERR_RUNTIME, "quantile() q values must be in the range [0, 1]");
            goto error;
        }
    }
    ptl_decref(qt);
    return v;
error:
    free(v);
    ptl_decref(qt);
    return NULL;
}

/* The sort step: the lanes of self along dim d sorted (NaN last) and moved to the last dim;
 * `flatten` (dim=None or a 0-dim self) sorts one flattened lane.  [*, n, *] -> [*, *, n];
 * a new reference, or NULL with the error set. */
static PtlTensorImpl *
quantile_sorted_lanes(PtlTensorImpl *self, int flatten, int64_t d)
{
    PtlTensorImpl *x = NULL, *sorted = NULL, *moved = NULL;
    int64_t flat = -1;
    PtlIValue a[2] = {ptl_iv_tensor(self), ptl_iv_intlist(&flat, 1)};
    if (flatten) {
        if ((x = ptl_call_tensor(PTL_OP_reshape, a)) == NULL) {
            return NULL;
        }
    }
    else {
        x = self;
        ptl_incref(x);
    }
    PtlIValue so[3] = {ptl_iv_tensor(x), ptl_iv_int(d), ptl_iv_bool(0)};
    if ((sorted = ptl_call_tensor(PTL_OP_sort, so)) != NULL) {
        PtlIValue m[3] = {ptl_iv_tensor(sorted), ptl_iv_int(d), ptl_iv_int(-1)};
        moved = ptl_call_tensor(PTL_OP_movedim_int, m);
    }
    ptl_xdecref(sorted);
    ptl_decref(x);
    return moved;
}

/* The gather and lerp steps over sorted lanes `moved` [*, n]: the two neighbours of each
 * rank of q[0..nq) and the weight between them.  q_tensor (borrowed; NULL for a scalar q)
 * makes the linear weight by dispatcher ops, so that q gets a gradient.
 * [*, n] -> [nq, *]; a new reference, or NULL with the error set. */
static PtlTensorImpl *
quantile_interpolate(PtlTensorImpl *moved, const double *q, int64_t nq, int mode, int ignore_nan,
                     PtlTensorImpl *q_tensor)
{
    PtlTensorImpl *lo = NULL, *hi = NULL, *w = NULL, *vlo = NULL, *vhi = NULL, *r = NULL;
    PtlTensorImpl *rm = NULL, *scale = NULL, *nan_lane = NULL;
    int64_t sizes[PTL_MAX_DIMS + 1];
    memcpy(sizes, moved->sizes, sizeof(int64_t) * (size_t)moved->dim);
    sizes[moved->dim - 1] = nq;
    if ((lo = ptl_empty(moved->dim, sizes, PTL_DTYPE_INT64, moved->device)) == NULL ||
        (hi = ptl_empty(moved->dim, sizes, PTL_DTYPE_INT64, moved->device)) == NULL ||
        (w = ptl_empty(moved->dim, sizes, moved->dtype, moved->device)) == NULL) {
        goto done;
    }
    if (q_tensor != NULL && mode == 0) {
        /* linear: the weight depends on q, so it is computed from q with dispatcher ops */
        sizes[moved->dim - 1] = 1;
        if ((scale = ptl_empty(moved->dim, sizes, moved->dtype, moved->device)) == NULL ||
            (nan_lane = ptl_empty(moved->dim, sizes, PTL_DTYPE_BOOL, moved->device)) == NULL) {
            goto done;
        }
    }
    if (quantile_ranks(moved, q, nq, mode, ignore_nan, lo, hi, w, scale, nan_lane) < 0) {
        goto done;
    }
    if (scale != NULL && quantile_weight(q_tensor, moved->dim, scale, nan_lane, lo, &w) < 0) {
        goto done;
    }
    /* ptl_call_tensor reads every schema argument: sparse_grad too */
    PtlIValue g1[4] = {ptl_iv_tensor(moved), ptl_iv_int(-1), ptl_iv_tensor(lo), ptl_iv_bool(0)};
    PtlIValue g2[4] = {ptl_iv_tensor(moved), ptl_iv_int(-1), ptl_iv_tensor(hi), ptl_iv_bool(0)};
    if ((vlo = ptl_call_tensor(PTL_OP_gather, g1)) == NULL ||
        (vhi = ptl_call_tensor(PTL_OP_gather, g2)) == NULL) {
        goto done;
    }
    PtlIValue l3[3] = {ptl_iv_tensor(vlo), ptl_iv_tensor(vhi), ptl_iv_tensor(w)};
    if ((r = ptl_call_tensor(PTL_OP_lerp_Tensor, l3)) == NULL) {
        goto done;
    }
    PtlIValue m[3] = {ptl_iv_tensor(r), ptl_iv_int(-1), ptl_iv_int(0)};
    rm = ptl_call_tensor(PTL_OP_movedim_int, m);
done:
    ptl_xdecref(r);
    ptl_xdecref(nan_lane);
    ptl_xdecref(scale);
    ptl_xdecref(vhi);
    ptl_xdecref(vlo);
    ptl_xdecref(w);
    ptl_xdecref(hi);
    ptl_xdecref(lo);
    return rm;
}

/* quantile / nanquantile(Tensor self, Tensor q, int? dim=None, bool keepdim=False, *,
 *                        str interpolation="linear") -> Tensor
 * .scalar(Tensor self, float q, ...) -> Tensor
 * A composite: sort (NaN last), gather the two neighbours of each rank, lerp between them.
 * With a tensor q and linear interpolation the lerp weight is made from q by dispatcher ops
 * (quantile_weight), so q gets a gradient; the other modes leave q unconnected, as PyTorch.
 * [*, n, *] -> [nq, *, *] (scalar q: no nq dim; keepdim keeps the reduced dims as 1) */
static int
quantile_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *moved = NULL, *rm = NULL;
    int scalar_q = op->id == PTL_OP_quantile_scalar || op->id == PTL_OP_nanquantile_scalar;
    int ignore_nan = op->id == PTL_OP_nanquantile || op->id == PTL_OP_nanquantile_scalar;
    int keepdim = s[3].u.b, mode = 0, nd = 0;
    double qs = scalar_q ? s[1].u.d : 0, *q = &qs;
    int64_t nq = scalar_q ? 1 : s[1].u.t->numel, d = 0, sizes[PTL_MAX_DIMS + 1];
    if (quantile_check(s, scalar_q, &mode, &d) < 0) {
        return -1;
    }
    if (!scalar_q && ptl_tensor_is_meta(s[1].u.t)) {   /* its values are the quantiles */
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "Cannot copy out of meta tensor; no data!");
    }
    if (!scalar_q && (q = quantile_q_values(s[1].u.t)) == NULL) {
        return -1;
    }
    int flatten = s[2].tag == PTL_IV_NONE || self->dim == 0;
    if ((moved = quantile_sorted_lanes(self, flatten, flatten ? 0 : d)) == NULL ||
        (rm = quantile_interpolate(moved, q, nq, mode, ignore_nan,
                                   scalar_q ? NULL : s[1].u.t)) == NULL) {
        goto error;
    }
    /* the result's shape: [nq]? + self's shape without (or with 1 for) the reduced dims */
    if (!scalar_q && s[1].u.t->dim == 1) {
        sizes[nd++] = nq;
    }
    for (int i = 0; i < self->dim; i++) {
        if (s[2].tag == PTL_IV_NONE || i == d) {
            if (keepdim) {
                sizes[nd++] = 1;
            }
        }
        else {
            sizes[nd++] = self->sizes[i];
        }
    }
    PtlIValue a[2] = {ptl_iv_tensor(rm), ptl_iv_intlist(sizes, nd)};
    PtlTensorImpl *out = ptl_call_tensor(PTL_OP_reshape, a);
    if (out == NULL) {
        goto error;
    }
    s[0] = ptl_iv_tensor(out);
    ptl_decref(rm);
    ptl_decref(moved);
    if (!scalar_q) {
        free(q);
    }
    return 0;
error:
    ptl_xdecref(rm);
    ptl_xdecref(moved);
    if (!scalar_q) {
        free(q);
    }
    return -1;
}

static const PtlKernelReg sort_cpu_kernels[] = {
    {PTL_OP_sort, PTL_KEY_CPU, sort_cpu},
    {PTL_OP_sort_stable, PTL_KEY_CPU, sort_cpu},
    {PTL_OP_argsort, PTL_KEY_CPU, sort_cpu},
    {PTL_OP_argsort_stable, PTL_KEY_CPU, sort_cpu},
    {PTL_OP_msort, PTL_KEY_COMPOSITE_IMPLICIT, msort_composite},
    {PTL_OP_topk, PTL_KEY_CPU, topk_cpu},
    {PTL_OP_kthvalue, PTL_KEY_CPU, select_cpu},
    {PTL_OP_median_dim, PTL_KEY_CPU, select_cpu},
    {PTL_OP_nanmedian_dim, PTL_KEY_CPU, select_cpu},
    {PTL_OP_mode, PTL_KEY_CPU, select_cpu},
    {PTL_OP_median, PTL_KEY_CPU, median_all_cpu},
    {PTL_OP_nanmedian, PTL_KEY_CPU, median_all_cpu},
    {PTL_OP_cummax, PTL_KEY_CPU, cum_cpu},
    {PTL_OP_cummin, PTL_KEY_CPU, cum_cpu},
    {PTL_OP_logcumsumexp, PTL_KEY_CPU, cum_cpu},
    {PTL_OP_quantile, PTL_KEY_COMPOSITE_IMPLICIT, quantile_composite},
    {PTL_OP_quantile_scalar, PTL_KEY_COMPOSITE_IMPLICIT, quantile_composite},
    {PTL_OP_nanquantile, PTL_KEY_COMPOSITE_IMPLICIT, quantile_composite},
    {PTL_OP_nanquantile_scalar, PTL_KEY_COMPOSITE_IMPLICIT, quantile_composite},
};
PTL_DEFINE_REGISTER(sort_cpu_kernels)
