/* resample_gather.c -- the gathers of the reflection, replication and circular pads and of
 * nearest upsampling on the CPU (Note [Gathers by runs]): output rows copied from x where it
 * lies, through the index maps of resample.c (Note [Index maps]).  Mirrors the forward
 * kernels of ATen/native/cpu/PaddingKernel.cpp and UpSampleKernel.cpp's nearest. */
#include <stdlib.h>
#include <string.h>

#include "../../c10/cpu_features.h"
#include "../../c10/parallel.h"
#include "resample_impl.h"
#include "vec_math.h"

/* Note [Gathers by runs]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * The maps' gathers (the pads, nearest upsampling) on the CPU read x where it lies, at any
 * strides, and move whole elements of any size (complex ones too: the pads' Complex key
 * kernel sends its CPU calls here).  Along W an output row is a few runs of outputs whose
 * input positions step by a fixed amount (a reflection pad's row: the left pad stepping -1,
 * the interior +1, the right pad -1; a replication pad's edges step 0), found once from the
 * W map; a row is then a few loops, the interior of a pad one in-order vector copy
 * (copy_run_avx512, copy_run_avx2; memcpy in the portable build) where x's rows are
 * unit-strided.  Where the runs are short (under 4 elements on average: nearest upsampling
 * by 2 repeats each input twice), a row is one loop over byte offsets found once instead.
 * What it replaces, x made contiguous then one memcpy call an element, ran at 0.1-0.5x
 * PyTorch's speed on a strided float32 input, and the complex pads (run on each part's
 * strided view) at 0.05-0.15x.  The units of the parallel loop are output rows, so every
 * split writes the same bytes. */

int64_t
resample_gather_runs(const Maps *m, int64_t b, int64_t e, GatherRun *runs)
{
    const int64_t *idx = m->idx[2];
    int64_t n = 0;
    for (int64_t o = b; o < e;) {
        int64_t step = o + 1 < e ? idx[(o + 1) * MAX_TAPS] - idx[o * MAX_TAPS] : 1, k = 1;
        while (o + k < e && idx[(o + k) * MAX_TAPS] - idx[(o + k - 1) * MAX_TAPS] == step) {
            k++;
        }
        runs[n++] = (GatherRun){o, idx[o * MAX_TAPS], k, step};
        o += k;
    }
    return n;
}

/* y[k] = the element at x + off[k], for k < n, 4 a step (one a step ran at 1.7x the time
 * where its 3 instructions straddled a 64-byte line) */
#define GATHER_AT(W)                                                  \
    for (int64_t k = 0; k + 4 <= n; k += 4) {                         \
        for (int u = 0; u < 4; u++) {                                 \
            memcpy(y + (k + u) * (W), x + off[k + u], (W));           \
        }                                                             \
    }                                                                 \
    for (int64_t k = n & ~(int64_t)3; k < n; k++) {                   \
        memcpy(y + k * (W), x + off[k], (W));                         \
    }                                                                 \
    break;
static inline void
gather_at(char *y, const char *x, const int64_t *off, int64_t n, size_t item)
{
    switch (item) {
    case 1: GATHER_AT(1)
    case 2: GATHER_AT(2)
    case 4: GATHER_AT(4)
    case 8: GATHER_AT(8)
    case 16: GATHER_AT(16)
    default:
        for (int64_t k = 0; k < n; k++) {
            memcpy(y + (size_t)k * item, x + off[k], item);
        }
    }
}
#undef GATHER_AT

/* A contiguous run of n > 64 bytes.  libc's memcpy loads the run's last 256 bytes before
 * its first ones, which costs the stream prefetch of a row just read in: the pads' rows went
 * 10% faster (896 bytes, float32 1x3x224x224) to 12% (1 KiB, complex128 2x16x64x64) by
 * vectors in order, four loads before four stores, the last vector ending at the run's end
 * (Note [Gathers by runs]). */
static inline void
copy_run_default(char *d, const char *s, int64_t n)
{
    memcpy(d, s, (size_t)n);
}

#ifdef PTL_HAVE_AVX2_KERNELS
static inline PTL_AVX2 void
copy_run_avx2(char *d, const char *s, int64_t n)
{
    int64_t k = 0;
    for (; k + 128 <= n; k += 128) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(s + k));
        __m256i b = _mm256_loadu_si256((const __m256i *)(s + k + 32));
        __m256i c = _mm256_loadu_si256((const __m256i *)(s + k + 64));
        __m256i e = _mm256_loadu_si256((const __m256i *)(s + k + 96));
        _mm256_storeu_si256((__m256i *)(d + k), a);
        _mm256_storeu_si256((__m256i *)(d + k + 32), b);
        _mm256_storeu_si256((__m256i *)(d + k + 64), c);
        _mm256_storeu_si256((__m256i *)(d + k + 96), e);
    }
    for (; k + 32 < n; k += 32) {
        _mm256_storeu_si256((__m256i *)(d + k), _mm256_loadu_si256((const __m256i *)(s + k)));
    }
    _mm256_storeu_si256((__m256i *)(d + n - 32),
                        _mm256_loadu_si256((const __m256i *)(s + n - 32)));
}

static inline PTL_AVX512 void
copy_run_avx512(char *d, const char *s, int64_t n)
{
    int64_t k = 0;
    for (; k + 256 <= n; k += 256) {
        __m512i a = _mm512_loadu_si512(s + k), b = _mm512_loadu_si512(s + k + 64);
        __m512i c = _mm512_loadu_si512(s + k + 128), e = _mm512_loadu_si512(s + k + 192);
        _mm512_storeu_si512(d + k, a);
        _mm512_storeu_si512(d + k + 64, b);
        _mm512_storeu_si512(d + k + 128, c);
        _mm512_storeu_si512(d + k + 192, e);
    }
    for (; k + 64 < n; k += 64) {
        _mm512_storeu_si512(d + k, _mm512_loadu_si512(s + k));
    }
    _mm512_storeu_si512(d + n - 64, _mm512_loadu_si512(s + n - 64));
}
#endif

/* One output row from its input row through the runs, for elements of W bytes (a constant:
 * a run's copy is then a few moves).  A contiguous run of more than 64 bytes is ISA's
 * copy_run.  One of 32 to 64 bytes is two 32-byte moves, the second ending at its end (a
 * call cost a tenth of a circular pad of complex128 rows, whose edges are such runs).
 * Inlined in W's job (DEFINE_GATHER_ROWS_JOB). */
#define DEFINE_GATHER_ROW(W, ISA, ATTR)                                                     \
    static inline ATTR void                                                                \
    gather_row_##W##_##ISA(char *y, const char *row, const GatherRun *runs, int64_t nruns, \
                           size_t item)                                                    \
    {                                                                                      \
        (void)item;                                                                        \
        for (int64_t r = 0; r < nruns; r++) {                                              \
            char *yo = y + runs[r].o;                                                      \
            const char *xo = row + runs[r].i;                                              \
            const int64_t n = runs[r].n, sb = runs[r].step, bytes = n * (W);               \
            if (sb == (W) && bytes > 64) {                                                 \
                copy_run_##ISA(yo, xo, bytes);                                             \
                continue;                                                                  \
            }                                                                              \
            if (sb == (W) && bytes >= 32) {                                                \
                memcpy(yo, xo, 32);                                                        \
                memcpy(yo + bytes - 32, xo + bytes - 32, 32);                              \
                continue;                                                                  \
            }                                                                              \
            for (int64_t k = 0; k < n; k++) {                                              \
                memcpy(yo + k * (W), xo + k * sb, (W));                                    \
            }                                                                              \
        }                                                                                  \
    }
#define DEFINE_GATHER_ROWS_ISA(ISA, ATTR) \
    DEFINE_GATHER_ROW(1, ISA, ATTR)       \
    DEFINE_GATHER_ROW(2, ISA, ATTR)       \
    DEFINE_GATHER_ROW(4, ISA, ATTR)       \
    DEFINE_GATHER_ROW(8, ISA, ATTR)       \
    DEFINE_GATHER_ROW(16, ISA, ATTR)
DEFINE_GATHER_ROWS_ISA(default, )
#ifdef PTL_HAVE_AVX2_KERNELS
DEFINE_GATHER_ROWS_ISA(avx2, PTL_AVX2)
DEFINE_GATHER_ROWS_ISA(avx512, PTL_AVX512)
#endif
#undef DEFINE_GATHER_ROW

/* The row copy for elements of any size (a channels-last pixel's C values): a call a run
 * or an element, worth it for elements of tens of bytes on. */
static void
gather_row_any(char *y, const char *row, const GatherRun *runs, int64_t nruns, size_t item)
{
    for (int64_t r = 0; r < nruns; r++) {
        char *yo = y + runs[r].o;
        const char *xo = row + runs[r].i;
        if (runs[r].step == (int64_t)item) {
            memcpy(yo, xo, (size_t)runs[r].n * item);
            continue;
        }
        for (int64_t k = 0; k < runs[r].n; k++) {
            memcpy(yo + (size_t)k * item, xo + k * runs[r].step, item);
        }
    }
}

/* The element offset in x of plane pl's first element, and its leading-dim index in at[] */
static int64_t
gather_plane(const GatherJob *j, int64_t pl, int64_t *at)
{
    int64_t off = 0;
    for (int d = j->lead - 1; d >= 0; d--) {
        at[d] = pl % j->sizes[d];
        off += at[d] * j->strides[d];
        pl /= j->sizes[d];
    }
    return off;
}

/* The element offset of the plane after the one at[] indexes (at[] moved to it): a carry
 * instead of a division a leading dim (rows of a 1-d pad are planes: 0.74x PyTorch's time
 * with the divisions) */
static int64_t
gather_next_plane(const GatherJob *j, int64_t off, int64_t *at)
{
    for (int d = j->lead - 1; d >= 0; d--) {
        off += j->strides[d];
        if (++at[d] < j->sizes[d]) {
            return off;
        }
        off -= at[d] * j->strides[d];
        at[d] = 0;
    }
    return off;
}

typedef void (*GatherRowFn)(char *, const char *, const GatherRun *, int64_t, size_t);
/* Output rows [b, e): row u is (plane, oz, oy) in C order.  The job's fields are read into
 * locals first: the stores through y (char *) may alias them, so they would be reloaded.
 * copy_row, a constant in each job below, is inlined (an indirect call a row took 10%). */
static inline __attribute__((always_inline)) int
gather_rows_loop(const GatherJob *j, int64_t b, int64_t e, GatherRowFn copy_row)
{
    const Maps *m = j->m;
    const GatherRun *runs = j->runs;
    const int64_t *off = j->off, *iz = m->idx[0], *iy = m->idx[1];
    const char *x = j->x;
    const size_t item = j->item;
    const int64_t oh = m->out[1], od = m->out[0], ow = m->out[2], nruns = j->nruns;
    const int64_t rowb = ow * (int64_t)item, zb = j->sp[0] * (int64_t)item;
    const int64_t yb = j->sp[1] * (int64_t)item;
    int64_t oy = b % oh, oz = b / oh % od, at[PTL_MAX_DIMS];
    int64_t plane = gather_plane(j, b / oh / od, at), base = plane * (int64_t)item;
    char *y = j->y + b * rowb;
    for (int64_t u = b; u < e; u++, y += rowb) {
        const char *row = x + base + iz[oz * MAX_TAPS] * zb + iy[oy * MAX_TAPS] * yb;
        if (off != NULL) {
            gather_at(y, row, off, ow, item);
        }
        else {
            copy_row(y, row, runs, nruns, item);
        }
        if (++oy == oh) {
            oy = 0;
            if (++oz == od) {
                oz = 0;
                plane = gather_next_plane(j, plane, at);
                base = plane * (int64_t)item;
            }
        }
    }
    return 0;
}

/* The row jobs of W-byte elements (gather_rows_loop, gather_row_W_ISA inlined), chosen by
 * item and the CPU's capability */
#define DEFINE_GATHER_ROWS_JOB(W, ISA, ATTR)                            \
    static ATTR int                                                     \
    gather_rows_job_##W##_##ISA(void *ctx, int64_t b, int64_t e)        \
    {                                                                   \
        return gather_rows_loop(ctx, b, e, gather_row_##W##_##ISA);     \
    }
#define DEFINE_GATHER_JOBS_ISA(ISA, ATTR)                                                  \
    DEFINE_GATHER_ROWS_JOB(1, ISA, ATTR)                                                   \
    DEFINE_GATHER_ROWS_JOB(2, ISA, ATTR)                                                   \
    DEFINE_GATHER_ROWS_JOB(4, ISA, ATTR)                                                   \
    DEFINE_GATHER_ROWS_JOB(8, ISA, ATTR)                                                   \
    DEFINE_GATHER_ROWS_JOB(16, ISA, ATTR)                                                  \
    static const PtlParallelFn gather_jobs_##ISA[17] = {                                   \
        [1] = gather_rows_job_1_##ISA, [2] = gather_rows_job_2_##ISA,                      \
        [4] = gather_rows_job_4_##ISA, [8] = gather_rows_job_8_##ISA,                      \
        [16] = gather_rows_job_16_##ISA};
DEFINE_GATHER_JOBS_ISA(default, )
#ifdef PTL_HAVE_AVX2_KERNELS
DEFINE_GATHER_JOBS_ISA(avx2, PTL_AVX2)
DEFINE_GATHER_JOBS_ISA(avx512, PTL_AVX512)
#endif
#undef DEFINE_GATHER_JOBS_ISA
#undef DEFINE_GATHER_ROWS_JOB
#undef DEFINE_GATHER_ROWS_ISA

static int
gather_rows_job_any(void *ctx, int64_t b, int64_t e)
{
    return gather_rows_loop(ctx, b, e, gather_row_any);
}

static PtlParallelFn
gather_rows_job(size_t item)
{
    const PtlParallelFn *jobs = gather_jobs_default;
#ifdef PTL_HAVE_AVX2_KERNELS
    PtlCpuCapability cap = ptl_cpu_capability();
    jobs = cap >= PTL_CPU_AVX512 ? gather_jobs_avx512 : cap >= PTL_CPU_AVX2 ? gather_jobs_avx2
                                                                             : jobs;
#endif
    return item <= 16 && jobs[item] != NULL ? jobs[item] : gather_rows_job_any;
}

/* The gather of x's elements (y contiguous: x's leading dims, then m->out's last nd) */
GatherJob
resample_gather_of(const Maps *m, PtlTensorImpl *x, int nd, PtlTensorImpl *y)
{
    GatherJob j = {m, NULL, 0, NULL, ptl_tensor_data(x), ptl_tensor_data(y),
                   ptl_tensor_itemsize(x), x->dim - nd, x->sizes, x->strides, {0, 0, 0},
                   PTL_GRAIN_SIZE / (m->out[2] + 1) + 1};
    for (int i = 0; i < nd; i++) {
        j.sp[NN_SPATIAL - nd + i] = x->strides[x->dim - nd + i];
    }
    return j;
}

/* Runs gather j (its runs and offsets found here from j.m) over every output row, in place
 * through the maps (Note [Gathers by runs]).  0, or -1 out of memory. */
int
resample_gather_rows(GatherJob j)
{
    const Maps *m = j.m;
    const int64_t ow = m->out[2] > 0 ? m->out[2] : 1;
    GatherRun *runs = malloc(sizeof(GatherRun) * (size_t)ow);
    int64_t *off = malloc(sizeof(int64_t) * (size_t)ow);
    if (runs == NULL || off == NULL) {
        free(runs);
        free(off);
        return ptl_error_set(PTL_ERR_MEMORY, "can't allocate resampling maps");
    }
    j.runs = runs;
    j.nruns = resample_gather_runs(m, 0, m->out[2], runs);
    const int64_t item = (int64_t)j.item, wb = j.sp[2] * item;
    for (int64_t r = 1; r < j.nruns; r++) {   /* the longest run first: it streams x's row in */
        if (runs[r].n > runs[0].n) {
            GatherRun t = runs[0];
            runs[0] = runs[r];
            runs[r] = t;
        }
    }
    for (int64_t r = 0; r < j.nruns; r++) {
        runs[r].o *= item;
        runs[r].i *= wb;
        runs[r].step *= wb;
    }
    if (j.nruns * 4 > m->out[2]) {
        for (int64_t o = 0; o < m->out[2]; o++) {
            off[o] = m->idx[2][o * MAX_TAPS] * wb;
        }
        j.off = off;
    }
    int64_t rows = m->planes * m->out[0] * m->out[1];
    void *tok = ptl_nogil_begin();
    int rc = ptl_parallel_for(0, rows, j.grain, gather_rows_job(j.item), &j);
    ptl_nogil_end(tok);
    free(runs);
    free(off);
    return rc;
}
