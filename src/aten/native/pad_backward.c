/* pad_backward.c -- the reflection, replication and circular pads' backward on the CPU by
 * input rows (Note [Pad backward by input rows]); the forwards and the other dtypes' backward
 * are resample.c's.  Mirrors the backward kernels of ATen/native/cpu/PaddingKernel.cpp. */
#include <stdlib.h>
#include <string.h>

#include "../../c10/parallel.h"
#include "resample_impl.h"

/* Note [Pad backward by input rows]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A pad's backward on the CPU, for float32, float64, complex64 and complex128 gradients, is
 * the transposed gather: each row of the input gradient (plane, z, y) is written once, by
 * one thread, as the sum of the output rows that read it (the D and H maps inverted into
 * lists: one row for the interior, two or a few at the borders).  Along W the outputs
 * [l, l + W) read the input row in order where both pads are >= 0: the first output row is
 * copied there and the others added in one unit-strided loop; the border runs of the W map
 * (Note [Gathers by runs]) are then added element by element.  Complex elements add as two
 * real scalars, so complex64 costs what float32 does with rows twice as long.  What it
 * replaces: the weighted maps' scatter through double planes (zeroed, summed, cast back;
 * 0.97-1.3x PyTorch's time on float32), and for complex the same on each part's strided
 * copy (0.3-0.5x).  Float16 and bfloat16 still go that way. */
typedef struct PadBwdJob {
    const Maps *m;
    const int64_t *zs, *zl, *ys, *yl;   /* the outputs reading input z: zl[zs[z] .. zs[z + 1]) */
    const GatherRun *runs;              /* the W map's runs outside [cover, cover + W) */
    int64_t nruns, cover;               /* cover: -1 where no outputs read the row in order */
    const char *g;
    char *gi;
    int64_t lanes;                      /* scalars to an element: 1, 2 (complex), times C
                                         * (channels-last: an element is a pixel) */
    size_t esz;                         /* an element's bytes */
    void (*add_row)(char *gi, const char *g, int assign, const struct PadBwdJob *j);
} PadBwdJob;

typedef void (*PadBwdRowFn)(char *gi, const char *g, int assign, const PadBwdJob *j);

/* gi (one input row) = (assign) or += what output row g gives it, in scalars of T */
#define DEFINE_PAD_BWD_ROW(DT, T)                                                          \
    static void                                                                            \
    pad_bwd_row_##DT(char *gi_, const char *g_, int assign, const PadBwdJob *j)            \
    {                                                                                      \
        T *restrict gi = (T *)gi_;                                                         \
        const T *restrict g = (const T *)g_;                                               \
        const int64_t L = j->lanes, w = j->m->in[2] * L, nruns = j->nruns;                 \
        if (j->cover >= 0 && assign) {                                                     \
            memcpy(gi, g + j->cover * L, (size_t)w * sizeof(T));                           \
        }                                                                                  \
        else if (j->cover >= 0) {                                                          \
            const T *restrict gc = g + j->cover * L;                                       \
            for (int64_t q = 0; q < w; q++) {                                              \
                gi[q] += gc[q];                                                            \
            }                                                                              \
        }                                                                                  \
        for (int64_t r = 0; r < nruns; r++) {                                              \
            const T *gs = g + j->runs[r].o * L;                                            \
            T *d = gi + j->runs[r].i * L;                                                  \
            const int64_t n = j->runs[r].n, st = j->runs[r].step * L;                      \
            for (int64_t k = 0; k < n; k++) {                                              \
                for (int64_t c = 0; c < L; c++) {                                          \
                    d[k * st + c] += gs[k * L + c];                                        \
                }                                                                          \
            }                                                                              \
        }                                                                                  \
    }
DEFINE_PAD_BWD_ROW(f4, float)
DEFINE_PAD_BWD_ROW(f8, double)
#undef DEFINE_PAD_BWD_ROW

/* The row function of dtype dt (complex: two lanes of its part's), or NULL (the weighted
 * maps' path) */
static PadBwdRowFn
pad_bwd_row_fn(PtlDtype dt)
{
    switch (dt) {
    case PTL_DTYPE_FLOAT32: case PTL_DTYPE_COMPLEX64: return pad_bwd_row_f4;
    case PTL_DTYPE_FLOAT64: case PTL_DTYPE_COMPLEX128: return pad_bwd_row_f8;
    default: return NULL;
    }
}

int
resample_pad_backward_supports(PtlDtype dt)
{
    return pad_bwd_row_fn(dt) != NULL;
}

/* Input-gradient rows [b, e): row u is (plane, z, y) in C order */
static int
pad_bwd_job(void *ctx, int64_t b, int64_t e)
{
    const PadBwdJob *j = ctx;
    const Maps *m = j->m;
    const PadBwdRowFn add_row = j->add_row;
    const int64_t ih = m->in[1], id = m->in[0], oh = m->out[1], od = m->out[0];
    const size_t orow = (size_t)m->out[2] * j->esz, irow = (size_t)m->in[2] * j->esz;
    int64_t iy = b % ih, iz = b / ih % id, pl = b / ih / id;
    for (int64_t u = b; u < e; u++) {
        char *gi = j->gi + (size_t)u * irow;
        int64_t nz = j->zs[iz + 1] - j->zs[iz], ny = j->ys[iy + 1] - j->ys[iy];
        int first = 1;
        if (j->cover < 0 || nz * ny == 0) {
            memset(gi, 0, irow);
            first = 0;
        }
        for (int64_t a = j->zs[iz]; a < j->zs[iz + 1]; a++) {
            for (int64_t c = j->ys[iy]; c < j->ys[iy + 1]; c++, first = 0) {
                add_row(gi, j->g + (size_t)((pl * od + j->zl[a]) * oh + j->yl[c]) * orow,
                        first, j);
            }
        }
        if (++iy == ih) {
            iy = 0;
            if (++iz == id) {
                iz = 0;
                pl++;
            }
        }
    }
    return 0;
}

/* The lists of the outputs of map idx (out positions over in inputs) reading each input:
 * list[start[i] .. start[i + 1]); start has in + 1 entries, list out. */
static void
pad_bwd_lists(const int64_t *idx, int64_t out, int64_t in, int64_t *start, int64_t *list)
{
    memset(start, 0, sizeof(int64_t) * (size_t)(in + 1));
    for (int64_t o = 0; o < out; o++) {
        start[idx[o * MAX_TAPS] + 1]++;
    }
    for (int64_t i = 0; i < in; i++) {
        start[i + 1] += start[i];
    }
    for (int64_t o = 0; o < out; o++) {
        list[start[idx[o * MAX_TAPS]]++] = o;
    }
    for (int64_t i = in; i > 0; i--) {
        start[i] = start[i - 1];
    }
    start[0] = 0;
}

PtlTensorImpl *
resample_pad_backward_rows(const Maps *m, PtlTensorImpl *g, int dim, const int64_t *in_sizes,
                  PtlMemoryFormat f)
{
    PtlTensorImpl *gc = NULL, *gi = NULL;
    const int64_t id = m->in[0], ih = m->in[1], iw = m->in[2], ow = m->out[2];
    const int cl = f != PTL_MEMORY_FORMAT_CONTIGUOUS;
    const int64_t pix = cl ? in_sizes[1] : 1, planes = cl ? in_sizes[0] : m->planes;
    int64_t *lists = malloc(sizeof(int64_t) * (size_t)(id + 1 + m->out[0] + ih + 1 + m->out[1]));
    GatherRun *runs = malloc(sizeof(GatherRun) * (size_t)(ow > 0 ? ow : 1));
    if (lists == NULL || runs == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "can't allocate resampling maps");
        goto error;
    }
    if ((gc = resample_dense_as(g, f)) == NULL ||
        (gi = ptl_empty_format(dim, in_sizes, f, g->dtype, g->device)) == NULL) {
        goto error;
    }
    PadBwdJob j = {m, lists, lists + id + 1, lists + id + 1 + m->out[0],
                   lists + id + 1 + m->out[0] + ih + 1, runs, 0, -1, ptl_tensor_data(gc),
                   ptl_tensor_data(gi), pix * (ptl_dtype_is_complex(g->dtype) ? 2 : 1),
                   (size_t)pix * ptl_tensor_itemsize(gc), pad_bwd_row_fn(g->dtype)};
    pad_bwd_lists(m->idx[0], m->out[0], id, (int64_t *)j.zs, (int64_t *)j.zl);
    pad_bwd_lists(m->idx[1], m->out[1], ih, (int64_t *)j.ys, (int64_t *)j.yl);
    /* the outputs reading the row in order: the first o reading inputs 0 and 1, if it and
     * the W - 1 after it read 0 .. W - 1 */
    for (int64_t o = 0; o + iw <= ow; o++) {
        if (m->idx[2][o * MAX_TAPS] == 0 && (iw < 2 || m->idx[2][(o + 1) * MAX_TAPS] == 1)) {
            int64_t k = 0;
            while (k < iw && m->idx[2][(o + k) * MAX_TAPS] == k) {
                k++;
            }
            j.cover = k == iw ? o : -1;
            break;
        }
    }
    if (j.cover >= 0) {
        j.nruns = resample_gather_runs(m, 0, j.cover, runs);
        j.nruns += resample_gather_runs(m, j.cover + iw, ow, runs + j.nruns);
    }
    else {
        j.nruns = resample_gather_runs(m, 0, ow, runs);
    }
    int64_t rows = gi->numel > 0 ? planes * id * ih : 0;
    int64_t per = (m->out[0] * m->out[1] * ow * pix) / (id * ih > 0 ? id * ih : 1) + 1;
    void *tok = ptl_nogil_begin();
    int rc = ptl_parallel_for(0, rows, PTL_GRAIN_SIZE / per + 1, pad_bwd_job, &j);
    ptl_nogil_end(tok);
    if (rc < 0) {
        goto error;
    }
    free(lists);
    free(runs);
    ptl_decref(gc);
    return gi;
error:
    free(lists);
    free(runs);
    ptl_xdecref(gc);
    ptl_xdecref(gi);
    return NULL;
}
