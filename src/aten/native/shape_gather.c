/* shape_gather.c -- the copy of shape.c's gathers by offset tables (flip, roll, rot90,
 * repeat, diag_embed; Note [Gather by offset tables] in shape.c): the rows of the innermost
 * dim one after the other, each a copy per contiguous run of the source, a reversed copy or
 * a typed gather, split over the threads.  Mirrors the copies of ATen/native/
 * TensorTransformations.cpp and Repeat.cpp. */
#include <stdlib.h>
#include <string.h>

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

/* o[i] = a[-i] for n elements of T: flip of the innermost dim.  The baseline build reverses 16
 * bytes per step; the AVX2 build permutes 32 (flip(1) of 1024x1024 float32 took 2.3x
 * PyTorch's time with 16). */
#if defined(__x86_64__) && defined(__GNUC__)
#define REVERSE_COPY_AVX2(T)                                                              \
    __attribute__((target("avx2"))) static void                                           \
    reverse_copy_avx2_##T(T *o, const T *a, int64_t n)                                    \
    {                                                                                     \
        for (int64_t i = 0; i < n; i++) {                                                 \
            o[i] = a[-i];                                                                 \
        }                                                                                 \
    }
#define REVERSE_COPY_USE_AVX2(T)                                                          \
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {                                           \
        reverse_copy_avx2_##T(o, a, n);                                                   \
        return;                                                                           \
    }
#else
#define REVERSE_COPY_AVX2(T)
#define REVERSE_COPY_USE_AVX2(T)
#endif
#define DEFINE_REVERSE_COPY(T)                                                            \
    REVERSE_COPY_AVX2(T)                                                                  \
    static void                                                                           \
    reverse_copy_##T(T *o, const T *a, int64_t n)                                         \
    {                                                                                     \
        REVERSE_COPY_USE_AVX2(T)                                                          \
        for (int64_t i = 0; i < n; i++) {                                                 \
            o[i] = a[-i];                                                                 \
        }                                                                                 \
    }
DEFINE_REVERSE_COPY(uint8_t)
DEFINE_REVERSE_COPY(uint16_t)
DEFINE_REVERSE_COPY(uint32_t)
DEFINE_REVERSE_COPY(uint64_t)
#undef DEFINE_REVERSE_COPY
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

/* One inner row of gather_copy: n elements of isz bytes, dst_step apart, read at
 * src + inner[i]; `runs` (NULL: none) lists where the reads are contiguous: starts
 * runs[0] = 0 < runs[1] < ... < runs[nruns] = n, each run one memcpy when the destination
 * is contiguous too; `reversed`: the reads walk the source backwards element by element
 * (flip of the innermost dim, reverse_copy). */
static void
gather_row(char *dst, int64_t dst_step, const char *src, const int64_t *inner, int64_t n,
           size_t isz, const int64_t *runs, int64_t nruns, int reversed)
{
    if (runs != NULL) {
        for (int64_t r = 0; r < nruns; r++) {
            copy_run(dst + runs[r] * (int64_t)isz, src + inner[runs[r]],
                     (size_t)(runs[r + 1] - runs[r]) * isz);
        }
        return;
    }
#define GATHER_ROW(T)                                                                     \
    if (reversed && dst_step == (int64_t)sizeof(T)) {                                     \
        reverse_copy_##T((T *)dst, (const T *)(src + inner[0]), n);                       \
        return;                                                                           \
    }                                                                                     \
    for (int64_t i = 0; i < n; i++) {                                                     \
        *(T *)(dst + i * dst_step) = *(const T *)(src + inner[i]);                        \
    }                                                                                     \
    return
    switch (isz) {
    case 1: GATHER_ROW(uint8_t);
    case 2: GATHER_ROW(uint16_t);
    case 4: GATHER_ROW(uint32_t);
    case 8: GATHER_ROW(uint64_t);
    default:
        for (int64_t i = 0; i < n; i++) {
            memcpy(dst + i * dst_step, src + inner[i], isz);
        }
    }
#undef GATHER_ROW
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
                       j->isz, j->runs, j->nruns, j->reversed);
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
                     reversed};
    (void)ptl_parallel_for(0, outer, PTL_GRAIN_SIZE / n + 1, gather_rows, &job); /* no fail */
    free(runs);
}
