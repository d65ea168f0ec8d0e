/* resample.c -- padding (reflect, replicate, circular; the constant pad is constant_pad.c's),
 * upsampling (nearest, linear, bilinear, trilinear, bicubic) and affine_grid_generator, with
 * their backwards (grid_sampler_*d is in grid_sampler.c).  Mirrors ATen/native/PadNd.cpp, ReflectionPad.cpp,
 * ReplicationPadding.cpp, UpSample.h and UpSample*.cpp and AffineGridGenerator.cpp.
 *
 * Note [Index maps]
 * ~~~~~~~~~~~~~~~~~
 * Each op here is separable: along every spatial dim an output position reads a few input
 * positions with weights.  The pads read exactly one (a gather, done on raw elements so any
 * dtype works); upsampling reads 1 (nearest), 2 (linear) or 4 (cubic) taps per dim, and the
 * kernels sum over the product of the three tap lists.  Backwards scatter-add through the
 * same maps.  Weighted arithmetic runs in double (inputs are converted and the result cast
 * back), which covers float16/bfloat16/float32/float64 at no precision cost; float32 and
 * float64 skip the conversions and run separably on the CPU (Note [Separable resampling]). */
#include <math.h>
#include <stdlib.h>

#include "../../c10/memory_format.h"
#include "../../c10/parallel.h"
#include "device_compose.h"
#include "device_nn.h"
#include "nn_common.h"
#include "resample_impl.h"

/* ---- shared: planes x three spatial dims ---- */

static void
maps_free(Maps *m)
{
    for (int d = 0; d < NN_SPATIAL; d++) {
        free(m->idx[d]);
        free(m->wt[d]);
        m->idx[d] = NULL;
        m->wt[d] = NULL;
    }
}

static int
maps_alloc(Maps *m)
{
    for (int d = 0; d < NN_SPATIAL; d++) {
        int64_t out = m->out[d] > 0 ? m->out[d] : 1;
        if ((uint64_t)out > SIZE_MAX / (sizeof(double) * MAX_TAPS)) {
            maps_free(m);
            return ptl_error_set(PTL_ERR_MEMORY, "can't allocate resampling maps for an "
                                 "output size of %lld", (long long)out);
        }
        size_t n = (size_t)out * MAX_TAPS;
        m->idx[d] = malloc(sizeof(int64_t) * n);
        m->wt[d] = malloc(sizeof(double) * n);
        if (m->idx[d] == NULL || m->wt[d] == NULL) {
            maps_free(m);
            return ptl_error_set(PTL_ERR_MEMORY, "can't allocate resampling maps");
        }
        m->ntaps[d] = 1;
    }
    return 0;
}

typedef struct MapJob {
    const Maps *m;
    const char *x;
    char *y;
    size_t isz;   /* gather: element size */
} MapJob;

/* Weighted: forward y = sum of taps (bwd 0), or backward x += w * y (bwd 1); doubles. */
static void
taps_plane(const Maps *m, const double *src, double *dst, int bwd)
{
    int64_t o = 0;
    for (int64_t oz = 0; oz < m->out[0]; oz++) {
        for (int64_t oy = 0; oy < m->out[1]; oy++) {
            for (int64_t ox = 0; ox < m->out[2]; ox++, o++) {
                double acc = 0.0;
                for (int a = 0; a < m->ntaps[0]; a++) {
                    int64_t iz = m->idx[0][oz * MAX_TAPS + a];
                    double wz = m->wt[0][oz * MAX_TAPS + a];
                    for (int c = 0; c < m->ntaps[1]; c++) {
                        int64_t row = (iz * m->in[1] + m->idx[1][oy * MAX_TAPS + c]) * m->in[2];
                        double wzy = wz * m->wt[1][oy * MAX_TAPS + c];
                        for (int q = 0; q < m->ntaps[2]; q++) {
                            int64_t i = row + m->idx[2][ox * MAX_TAPS + q];
                            double w = wzy * m->wt[2][ox * MAX_TAPS + q];
                            if (bwd) {
                                dst[i] += w * src[o];
                            }
                            else {
                                acc += w * src[i];
                            }
                        }
                    }
                }
                if (!bwd) {
                    dst[o] = acc;
                }
            }
        }
    }
}

static int
taps_fwd_job(void *ctx, int64_t b, int64_t e)
{
    const MapJob *j = ctx;
    const Maps *m = j->m;
    int64_t ivol = m->in[0] * m->in[1] * m->in[2], ovol = m->out[0] * m->out[1] * m->out[2];
    for (int64_t pl = b; pl < e; pl++) {
        taps_plane(m, (const double *)j->x + pl * ivol, (double *)j->y + pl * ovol, 0);
    }
    return 0;
}

static int
taps_bwd_job(void *ctx, int64_t b, int64_t e)
{
    const MapJob *j = ctx;
    const Maps *m = j->m;
    int64_t ivol = m->in[0] * m->in[1] * m->in[2], ovol = m->out[0] * m->out[1] * m->out[2];
    for (int64_t pl = b; pl < e; pl++) {
        taps_plane(m, (const double *)j->x + pl * ovol, (double *)j->y + pl * ivol, 1);
    }
    return 0;
}

int (*ptl_device_resample_hook)(const PtlDeviceResampleArgs *a);

/* The maps' job on the device (Note [CUDA resampling] in src/cuda/resample_plan.h):
 * forward (bwd 0) x -> y, a gather of isz-byte elements (weighted 0), weighted (1), weighted
 * and rounded for uint8 (2); backward g -> y. */
static int
device_maps(const Maps *m, const void *x, void *y, int bwd, int weighted, size_t isz)
{
    PtlDeviceResampleArgs a = {.backward = bwd, .weighted = weighted, .itemsize = (int32_t)isz,
                               .x = x, .y = y, .planes = m->planes};
    for (int d = 0; d < NN_SPATIAL; d++) {
        a.ntaps[d] = m->ntaps[d];
        a.in[d] = m->in[d];
        a.out[d] = m->out[d];
        a.idx[d] = m->idx[d];
        a.wt[d] = m->wt[d];
    }
    return ptl_device_resample_hook(&a);
}

static int
run_maps(const Maps *m, PtlParallelFn fn, void *j)
{
    int64_t per = m->out[0] * m->out[1] * m->out[2] * m->ntaps[0] * m->ntaps[1] * m->ntaps[2];
    int64_t grain = per > 0 ? PTL_GRAIN_SIZE / per + 1 : 1;
    void *tok = ptl_nogil_begin();
    int rc = ptl_parallel_for(0, m->planes, grain, fn, j);
    ptl_nogil_end(tok);
    return rc;
}

/* ---- separable float path (Note [Separable resampling]) ----
 *
 * Note [Separable resampling]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * For float32/float64 on the CPU, the weighted maps run separably and read/write the
 * tensor's own dtype (no double copies of the tensors): an input row resampled along W once
 * (`hrow`, doubles), then each output row is the (D, H)-weighted sum of ntaps[0] * ntaps[1]
 * (at most MAX_TAPS) such rows, vectorised over the contiguous width.  The resampled rows
 * live in a cache of MAX_TAPS slots, row (iz, iy) in slot (iz mod ntaps[0], iy mod
 * ntaps[1]): the taps along a dim are consecutive clamped indices (linear: i, i + 1; cubic:
 * four), so distinct rows of one output row never share a slot, and a row evicted early is
 * only recomputed (forward) or flushed twice into the accumulating gradient (backward):
 * correct for any index order.
 * Arithmetic stays in double as in the general path; only the summation order differs (the
 * W taps summed first), so results can differ from it in the last bit of a float32. */
typedef struct SepJob {
    const Maps *m;
    const void *x;
    void *y;
    int f8;
} SepJob;

static int
sep_applies(const Maps *m, PtlDtype dt)
{
    return (dt == PTL_DTYPE_FLOAT32 || dt == PTL_DTYPE_FLOAT64) &&
           m->ntaps[0] * m->ntaps[1] <= MAX_TAPS;
}

/* The MAX_TAPS cached rows of m->out[2] doubles, h[k] the k-th, their tags -1 (empty): the
 * block to free, or NULL (error set) */
static double *
sep_cache(const Maps *m, int64_t *tag, double **h)
{
    double *cache = malloc(sizeof(double) * (size_t)(MAX_TAPS * m->out[2] + 1));
    if (cache == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "can't allocate resampling rows");
        return NULL;
    }
    for (int k = 0; k < MAX_TAPS; k++) {
        tag[k] = -1;
        h[k] = cache + k * m->out[2];
    }
    return cache;
}

/* h[ox] = sum over q of wt2[ox][q] * row[idx2[ox][q]], in q order from 0.0 */
#define SEP_HROW(T)                                                                         \
    static void sep_hrow_##T(const Maps *m, const T *restrict row, double *restrict h)      \
    {                                                                                       \
        const int64_t *ix = m->idx[2];                                                      \
        const double *wx = m->wt[2];                                                        \
        int nt = m->ntaps[2];                                                               \
        for (int64_t ox = 0; ox < m->out[2] && nt == 2; ox++) {                             \
            const int64_t *i = ix + ox * MAX_TAPS;                                          \
            const double *w = wx + ox * MAX_TAPS;                                           \
            h[ox] = (0.0 + w[0] * (double)row[i[0]]) + w[1] * (double)row[i[1]];            \
        }                                                                                   \
        for (int64_t ox = 0; ox < m->out[2] && nt != 2; ox++) {                             \
            double acc = 0.0;                                                               \
            for (int q = 0; q < nt; q++) {                                                  \
                acc += wx[ox * MAX_TAPS + q] * (double)row[ix[ox * MAX_TAPS + q]];          \
            }                                                                               \
            h[ox] = acc;                                                                    \
        }                                                                                   \
    }
SEP_HROW(float)
SEP_HROW(double)
#undef SEP_HROW

static void
sep_hrow(const Maps *m, const void *row, int f8, double *h)
{
    if (f8) {
        sep_hrow_double(m, row, h);
    }
    else {
        sep_hrow_float(m, row, h);
    }
}

#define SEP_VROW(T)                                                                         \
    static void sep_vrow_##T(int nt, const double *w, double *const *h, int64_t n,          \
                             T *restrict y)                                                 \
    {                                                                                       \
        const double *restrict h0 = h[0], *restrict h1 = h[1];                              \
        const double *restrict h2 = h[2], *restrict h3 = h[3];                              \
        if (nt == 1) {                                                                      \
            for (int64_t i = 0; i < n; i++) {                                               \
                y[i] = (T)(w[0] * h0[i]);                                                   \
            }                                                                               \
        }                                                                                   \
        else if (nt == 2) {                                                                 \
            for (int64_t i = 0; i < n; i++) {                                               \
                y[i] = (T)(w[0] * h0[i] + w[1] * h1[i]);                                    \
            }                                                                               \
        }                                                                                   \
        else {                                                                              \
            for (int64_t i = 0; i < n; i++) {                                               \
                y[i] = (T)(w[0] * h0[i] + w[1] * h1[i] + w[2] * h2[i] + w[3] * h3[i]);      \
            }                                                                               \
        }                                                                                   \
    }
SEP_VROW(float)
SEP_VROW(double)
#undef SEP_VROW

/* The input rows of output row (oz, oy): flat row indices iz * in[1] + iy, their cache
 * slots (iz mod ntaps[0], iy mod ntaps[1]: the taps along a dim are consecutive, so distinct
 * rows of one output row never share a slot) and weights wz * wy; returns their count. */
static int
sep_rows(const Maps *m, int64_t oz, int64_t oy, int64_t *row, int *slot, double *w)
{
    int n = 0, n1 = m->ntaps[1];
    for (int a = 0; a < m->ntaps[0]; a++) {
        int64_t iz = m->idx[0][oz * MAX_TAPS + a];
        double wz = m->wt[0][oz * MAX_TAPS + a];
        for (int c = 0; c < n1; c++, n++) {
            int64_t iy = m->idx[1][oy * MAX_TAPS + c];
            row[n] = iz * m->in[1] + iy;
            slot[n] = (int)(iz % m->ntaps[0]) * n1 + (int)(iy % n1);
            w[n] = wz * m->wt[1][oy * MAX_TAPS + c];
        }
    }
    return n;
}

static int
sep_fwd_job(void *ctx, int64_t b, int64_t e)
{
    const SepJob *j = ctx;
    const Maps *m = j->m;
    int64_t tag[MAX_TAPS], W = m->in[2], OW = m->out[2];
    size_t isz = j->f8 ? sizeof(double) : sizeof(float);
    double *h[MAX_TAPS], *cache = sep_cache(m, tag, h);
    if (cache == NULL) {
        return -1;
    }
    for (int64_t pl = b; pl < e; pl++) {
        const char *x = (const char *)j->x + (size_t)(pl * m->in[0] * m->in[1] * W) * isz;
        char *y = (char *)j->y + (size_t)(pl * m->out[0] * m->out[1] * OW) * isz;
        for (int k = 0; k < MAX_TAPS; k++) {
            tag[k] = -1;
        }
        for (int64_t oz = 0; oz < m->out[0]; oz++) {
            for (int64_t oy = 0; oy < m->out[1]; oy++, y += (size_t)OW * isz) {
                int64_t row[MAX_TAPS];
                int slot[MAX_TAPS];
                double w[MAX_TAPS], *hr[MAX_TAPS] = {h[0], h[0], h[0], h[0]};
                int nr = sep_rows(m, oz, oy, row, slot, w);
                for (int c = 0; c < nr; c++) {
                    if (tag[slot[c]] != row[c]) {
                        sep_hrow(m, x + (size_t)(row[c] * W) * isz, j->f8, h[slot[c]]);
                        tag[slot[c]] = row[c];
                    }
                    hr[c] = h[slot[c]];
                }
                if (j->f8) {
                    sep_vrow_double(nr, w, hr, OW, (double *)y);
                }
                else {
                    sep_vrow_float(nr, w, hr, OW, (float *)y);
                }
            }
        }
    }
    free(cache);
    return 0;
}

/* gi[row][idx2[ox][q]] += wt2[ox][q] * t[ox] */
static void
sep_flush(const Maps *m, const double *t, double *restrict gi)
{
    const int64_t *ix = m->idx[2];
    const double *wx = m->wt[2];
    int nt = m->ntaps[2];
    for (int64_t ox = 0; ox < m->out[2]; ox++, ix += MAX_TAPS, wx += MAX_TAPS) {
        for (int q = 0; q < nt; q++) {
            gi[ix[q]] += wx[q] * t[ox];
        }
    }
}

/* t[i] += w * g[i] */
#define SEP_AXPY(T)                                                                         \
    static void sep_axpy_##T(double w, const T *restrict g, int64_t n, double *restrict t)  \
    {                                                                                       \
        for (int64_t i = 0; i < n; i++) {                                                   \
            t[i] += w * (double)g[i];                                                       \
        }                                                                                   \
    }
SEP_AXPY(float)
SEP_AXPY(double)
#undef SEP_AXPY

/* Backward: j->x is the gradient (planes, out rows, out cols) in float/double, j->y the
 * zeroed double input gradient. */
static int
sep_bwd_job(void *ctx, int64_t b, int64_t e)
{
    const SepJob *j = ctx;
    const Maps *m = j->m;
    int64_t tag[MAX_TAPS], W = m->in[2], OW = m->out[2];
    size_t isz = j->f8 ? sizeof(double) : sizeof(float);
    double *h[MAX_TAPS], *cache = sep_cache(m, tag, h);
    if (cache == NULL) {
        return -1;
    }
    for (int64_t pl = b; pl < e; pl++) {
        const char *g = (const char *)j->x + (size_t)(pl * m->out[0] * m->out[1] * OW) * isz;
        double *gi = (double *)j->y + pl * m->in[0] * m->in[1] * W;
        for (int64_t oz = 0; oz < m->out[0]; oz++) {
            for (int64_t oy = 0; oy < m->out[1]; oy++, g += (size_t)OW * isz) {
                int64_t row[MAX_TAPS];
                int slot[MAX_TAPS];
                double w[MAX_TAPS];
                int nr = sep_rows(m, oz, oy, row, slot, w);
                for (int c = 0; c < nr; c++) {
                    int s = slot[c];
                    if (tag[s] != row[c]) {
                        if (tag[s] >= 0) {
                            sep_flush(m, h[s], gi + tag[s] * W);
                        }
                        memset(h[s], 0, sizeof(double) * (size_t)OW);
                        tag[s] = row[c];
                    }
                    if (j->f8) {
                        sep_axpy_double(w[c], (const double *)g, OW, h[s]);
                    }
                    else {
                        sep_axpy_float(w[c], (const float *)g, OW, h[s]);
                    }
                }
            }
        }
        for (int k = 0; k < MAX_TAPS; k++) {
            if (tag[k] >= 0) {
                sep_flush(m, h[k], gi + tag[k] * W);
            }
            tag[k] = -1;
        }
    }
    free(cache);
    return 0;
}

/* Forward through the maps: x (any layout) -> new tensor shaped (lead..., out...).  Gather
 * mode (weighted 0) copies raw elements in x's dtype (Note [Gathers by runs] on the CPU);
 * weighted mode computes in double and casts to out_dt (uint8 images: the double rounded to
 * the nearest value, clamped). */
static PtlTensorImpl *
maps_forward(const Maps *m, PtlTensorImpl *x, int nd, int weighted, PtlDtype out_dt)
{
    PtlTensorImpl *xc = NULL, *y = NULL;
    int64_t ysz[PTL_MAX_DIMS];
    int round_u8 = weighted && out_dt == PTL_DTYPE_UINT8;
    memcpy(ysz, x->sizes, sizeof(int64_t) * (size_t)x->dim);
    for (int i = 0; i < nd; i++) {
        ysz[x->dim - nd + i] = m->out[NN_SPATIAL - nd + i];
    }
    if (!weighted && !nn_on_device(x, ptl_device_resample_hook != NULL)) {
        if ((y = ptl_empty(x->dim, ysz, x->dtype, x->device)) == NULL ||
            resample_gather_rows(resample_gather_of(m, x, nd, y)) < 0) {
            goto error;
        }
        return y;
    }
    int sep = weighted && !round_u8 && !nn_on_device(x, ptl_device_resample_hook != NULL) &&
              sep_applies(m, x->dtype);
    xc = weighted && !sep ? nn_prepare(x, PTL_DTYPE_FLOAT64) : ptl_contiguous(x);
    if (xc == NULL || (y = ptl_empty(x->dim, ysz, xc->dtype, x->device)) == NULL) {
        goto error;
    }
    if (sep) {
        SepJob sj = {m, ptl_tensor_data(xc), ptl_tensor_data(y), xc->dtype == PTL_DTYPE_FLOAT64};
        if (run_maps(m, sep_fwd_job, &sj) < 0) {
            goto error;
        }
        ptl_decref(xc);
        return y;
    }
    MapJob j = {m, ptl_tensor_data(xc), ptl_tensor_data(y), ptl_tensor_itemsize(xc)};
    if (nn_on_device(x, ptl_device_resample_hook != NULL)) {
        if (device_maps(m, j.x, j.y, 0, weighted + round_u8, j.isz) < 0) {
            goto error;
        }
    }
    else {
        if (run_maps(m, taps_fwd_job, &j) < 0) {
            goto error;
        }
        for (int64_t i = 0; round_u8 && i < y->numel; i++) {
            double *v = (double *)j.y + i;
            *v = *v < 0 ? 0 : (*v > 255 ? 255 : nearbyint(*v));
        }
    }
    ptl_decref(xc);
    return nn_finish(y, out_dt);
error:
    ptl_xdecref(xc);
    ptl_xdecref(y);
    return NULL;
}

/* Backward through the maps: g (lead..., out...) -> zeros shaped in_sizes (dim dims) plus
 * the scattered gradient, in g's dtype. */
static PtlTensorImpl *
maps_backward(const Maps *m, PtlTensorImpl *g, int dim, const int64_t *in_sizes)
{
    PtlTensorImpl *gc = NULL, *gi = NULL;
    int on_device = nn_on_device(g, ptl_device_resample_hook != NULL);
    int sep = !on_device && sep_applies(m, g->dtype);
    if ((gc = sep ? ptl_contiguous(g) : nn_prepare(g, PTL_DTYPE_FLOAT64)) == NULL ||
        (gi = on_device ? ptl_empty(dim, in_sizes, PTL_DTYPE_FLOAT64, g->device)
                        : nn_zeros(dim, in_sizes, PTL_DTYPE_FLOAT64)) == NULL) {
        goto error;
    }
    MapJob j = {m, ptl_tensor_data(gc), ptl_tensor_data(gi), sizeof(double)};
    SepJob sj = {m, j.x, j.y, gc->dtype == PTL_DTYPE_FLOAT64};
    if (sep ? run_maps(m, sep_bwd_job, &sj) < 0
            : on_device ? device_maps(m, j.x, j.y, 1, 1, j.isz) < 0
                        : run_maps(m, taps_bwd_job, &j) < 0) {
        goto error;
    }
    ptl_decref(gc);
    return nn_finish(gi, g->dtype);
error:
    ptl_xdecref(gc);
    ptl_xdecref(gi);
    return NULL;
}

/* Whether a backward's grad g has the forward output's shape: x's leading dims (in_sizes),
 * then m->out for the last nd.  Fills *bad with the first dim that differs (-1: the rank)
 * and want[] with the expected shape; 1 when it matches, else 0. */
static int
grad_matches(const Maps *m, const PtlTensorImpl *g, int dim, const int64_t *in_sizes, int nd,
             int *bad, int64_t *want)
{
    for (int i = 0; i < dim; i++) {
        want[i] = i < dim - nd ? in_sizes[i] : m->out[NN_SPATIAL - (dim - i)];
    }
    *bad = -1;
    if (g->dim != dim) {
        return 0;
    }
    for (int i = 0; i < dim; i++) {
        if (g->sizes[i] != want[i]) {
            *bad = i;
            return 0;
        }
    }
    return 1;
}

/* Fills planes and in[] from x's last nd dims (leading spatial dims get 1). */
static void
maps_shape(Maps *m, int dim, const int64_t *sizes, int nd)
{
    m->planes = 1;
    for (int i = 0; i < dim - nd; i++) {
        m->planes *= sizes[i];
    }
    for (int d = 0; d < NN_SPATIAL; d++) {
        int u = d - (NN_SPATIAL - nd);
        m->in[d] = u < 0 ? 1 : sizes[dim - nd + u];
        m->out[d] = u < 0 ? 1 : m->out[d];
    }
}

/* ---- padding ---- */

enum { PAD_REFLECT, PAD_REPLICATE, PAD_CIRCULAR };

typedef struct PadInfo {
    int mode, nd;
    const char *name;
} PadInfo;

static PadInfo
pad_info(const PtlOperator *op)
{
    static const struct {
        PtlOpId fwd, bwd;
        PadInfo info;
    } table[] = {
        {PTL_OP_reflection_pad1d, PTL_OP_reflection_pad1d_backward, {PAD_REFLECT, 1, "reflection_pad1d"}},
        {PTL_OP_reflection_pad2d, PTL_OP_reflection_pad2d_backward, {PAD_REFLECT, 2, "reflection_pad2d"}},
        {PTL_OP_reflection_pad3d, PTL_OP_reflection_pad3d_backward, {PAD_REFLECT, 3, "reflection_pad3d"}},
        {PTL_OP_replication_pad1d, PTL_OP_replication_pad1d_backward, {PAD_REPLICATE, 1, "replication_pad1d"}},
        {PTL_OP_replication_pad2d, PTL_OP_replication_pad2d_backward, {PAD_REPLICATE, 2, "replication_pad2d"}},
        {PTL_OP_replication_pad3d, PTL_OP_replication_pad3d_backward, {PAD_REPLICATE, 3, "replication_pad3d"}},
        {PTL_OP__pad_circular, PTL_OP__pad_circular_backward, {PAD_CIRCULAR, 0, "_pad_circular"}},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (op->id == (int)table[i].fwd || op->id == (int)table[i].bwd) {
            return table[i].info;
        }
    }
    return table[0].info;
}

/* Checks x against the pads and builds the maps; a complex x passes (the gather moves whole
 * elements, Note [Gathers by runs]; the backward adds them, Note [Pad backward by input
 * rows]). */
static int
pad_setup(const PadInfo *pi, PtlTensorImpl *x, const PtlIValue *pad, Maps *m)
{
    static const char *const dn[3] = {"D", "H", "W"};
    char buf[128];
    int nd = pi->nd ? pi->nd : (int)(pad->u.il.n / 2);
    const int64_t *pv = pad->u.il.data;
    if (pi->nd != 0 && pad->u.il.n != 2 * nd) {   /* the schema's int[2 nd] is not enforced */
        return ptl_error_set(PTL_ERR_RUNTIME, "padding size is expected to be %d, but got: %lld",
                             2 * nd, (long long)pad->u.il.n);
    }
    if (pi->mode != PAD_CIRCULAR) {
        int ok = x->dim == nd + 1 || x->dim == nd + 2;
        for (int i = x->dim == nd + 2 ? 1 : 0; ok && i < x->dim; i++) {
            ok = x->sizes[i] != 0;
        }
        if (!ok) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "Expected %dD or %dD (batch mode) tensor with possibly 0 batch "
                                 "size and other non-zero dimensions for input, but got: %s",
                                 nd + 1, nd + 2,
                                 ptl_format_sizes(buf, sizeof(buf), x->dim, x->sizes));
        }
        if (!ptl_dtype_is_complex(x->dtype) && nn_check_dtype(pi->name, x->dtype, 1) < 0) {
            return -1;
        }
    }
    else if (pad->u.il.n % 2 != 0 || nd < 1 || nd > 3 || x->dim < nd) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Expected an even number of at most 6 pads");
    }
    memset(m, 0, sizeof(*m));
    for (int i = 0; i < nd; i++) {
        int d = NN_SPATIAL - 1 - i;
        if (__builtin_add_overflow(x->sizes[x->dim - 1 - i], pv[2 * i], &m->out[d])
            || __builtin_add_overflow(m->out[d], pv[2 * i + 1], &m->out[d])) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "padding (%lld, %lld) at dimension %d of input %s overflows "
                                 "the output size", (long long)pv[2 * i],
                                 (long long)pv[2 * i + 1], (int)(x->dim - 1 - i),
                                 ptl_format_sizes(buf, sizeof(buf), x->dim, x->sizes));
        }
    }
    maps_shape(m, x->dim, x->sizes, nd);
    for (int i = 0; i < nd; i++) {
        int d = NN_SPATIAL - 1 - i;
        int64_t in = m->in[d], l = pv[2 * i], r = pv[2 * i + 1];
        if (pi->mode == PAD_REFLECT && (l >= in || r >= in)) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "Argument #%d: Padding size should be less than the corresponding "
                                 "input dimension, but got: padding (%lld, %lld) at dimension %d "
                                 "of input %s",
                                 4 + 2 * i, (long long)l, (long long)r, (int)(x->dim - 1 - i),
                                 ptl_format_sizes(buf, sizeof(buf), x->dim, x->sizes));
        }
        if (pi->mode == PAD_CIRCULAR && (l > in || r > in)) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "Padding value causes wrapping around more than once.");
        }
    }
    /* PyTorch's pads refuse an output as too small only when all its padded sizes are below
     * 1, and circular padding never: a size of 0 makes an empty result, a negative one fails
     * as empty() does */
    int small = 0, negative = -1;
    for (int d = NN_SPATIAL - nd; d < NN_SPATIAL; d++) {
        small += m->out[d] < 1;
        negative = negative < 0 && m->out[d] < 0 ? d : negative;
    }
    if (small == nd && pi->mode != PAD_CIRCULAR) {
        size_t o1 = 0, o2 = 0;
        char b2[128];
        for (int e = NN_SPATIAL - nd; e < NN_SPATIAL; e++) {
            const char *sep = e == NN_SPATIAL - nd ? "" : (nd == 3 && e == 1 ? " " : ", ");
            o1 += (size_t)snprintf(buf + o1, sizeof(buf) - o1, "%s%s: %lld", sep, dn[e],
                                   (long long)m->in[e]);
            o2 += (size_t)snprintf(b2 + o2, sizeof(b2) - o2, "%s%s: %lld",
                                   e == NN_SPATIAL - nd ? "" : " ", dn[e], (long long)m->out[e]);
        }
        return ptl_error_set(PTL_ERR_RUNTIME, "input (%s) is too small. Calculated output %s",
                             buf, b2);
    }
    if (negative >= 0) {
        int64_t shape[PTL_MAX_DIMS];
        memcpy(shape, x->sizes, sizeof(int64_t) * (size_t)x->dim);
        for (int i = 0; i < nd; i++) {
            shape[x->dim - 1 - i] = m->out[NN_SPATIAL - 1 - i];
        }
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Trying to create tensor with negative dimension %lld: %s",
                             (long long)m->out[negative],
                             ptl_format_sizes(buf, sizeof(buf), x->dim, shape));
    }
    if (maps_alloc(m) < 0) {
        return -1;
    }
    for (int d = 0; d < NN_SPATIAL; d++) {
        int i = NN_SPATIAL - 1 - d;
        int64_t l = i < nd ? pv[2 * i] : 0, r = i < nd ? pv[2 * i + 1] : 0, in = m->in[d];
        /* circular wraps within what negative pads leave of the input; each cut is at most
         * the input (kept <= 0 alike), as a pad of INT64_MIN has no negation */
        int64_t cut = l < -in ? in : (l < 0 ? -l : 0);
        int64_t kept = in - cut - (r < -in ? in : (r < 0 ? -r : 0));
        for (int64_t o = 0; o < m->out[d]; o++) {
            /* only replication takes a left pad below -in (its right pad is unbounded): every
             * such output replicates the last input, and o - l could overflow */
            int64_t s = l < -in ? in : o - l;
            if (pi->mode == PAD_REFLECT) {
                s = s < 0 ? -s : s;
                s = s >= in ? 2 * (in - 1) - s : s;
            }
            else if (pi->mode == PAD_REPLICATE) {
                s = s < 0 ? 0 : (s >= in ? in - 1 : s);
            }
            else {
                int64_t t = o - (l > 0 ? l : 0);
                s = kept > 0 ? cut + ((t % kept) + kept) % kept : 0;
            }
            m->idx[d][o * MAX_TAPS] = s;
            m->wt[d][o * MAX_TAPS] = 1.0;
        }
    }
    return 0;
}

/* Note [Pads keep channels-last]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * PyTorch's reflection and replication pads of a batched channels-last input (4-d for the
 * 2-d pads, 5-d channels_last_3d for the 3-d ones) return channels-last results, and their
 * backwards lay the input gradient out as self suggests; _pad_circular (a composite there)
 * returns contiguous ones.  On the CPU a channels-last tensor is (N, [D,] H, W) pixels of C
 * values each, so the pads run on it as on a contiguous one whose elements are pixels: the
 * gather's runs copy whole pixels (Note [Gathers by runs]) and the backward adds them with
 * C (2 C for complex) lanes (Note [Pad backward by input rows]).  What it replaces: a gather
 * reading x along W at a stride of C (0.4-0.55x PyTorch's time on 8x16x64x64), a
 * contiguous result, and a contiguous copy of the channels-last gradient. */
static PtlMemoryFormat
pad_format(const PadInfo *pi, const PtlTensorImpl *x, int nd)
{
    if (pi->mode == PAD_CIRCULAR || x->dim != nd + 2 || x->device.type != PTL_DEVICE_CPU) {
        return PTL_MEMORY_FORMAT_CONTIGUOUS;
    }
    return ptl_tensor_impl_suggest_memory_format(x);
}

/* The pad of x (batched, format f channels-last) through the maps as a gather of its
 * pixels; the result in format f.  New ref, or NULL with the error set. */
static PtlTensorImpl *
pad_channels_last(const Maps *m, PtlTensorImpl *x, int nd, PtlMemoryFormat f)
{
    PtlTensorImpl *xc = NULL, *y = NULL;
    int64_t ysz[PTL_MAX_DIMS], plane_stride;
    ysz[0] = x->sizes[0];
    ysz[1] = x->sizes[1];
    for (int i = 0; i < nd; i++) {
        ysz[2 + i] = m->out[NN_SPATIAL - nd + i];
    }
    if ((xc = resample_dense_as(x, f)) == NULL ||
        (y = ptl_empty_format(x->dim, ysz, f, x->dtype, x->device)) == NULL) {
        goto error;
    }
    if (y->numel > 0) {
        const int64_t c = x->sizes[1];
        Maps pixels = *m;   /* N planes of pixels; the maps themselves stay m's */
        pixels.planes = x->sizes[0];
        plane_stride = xc->strides[0] / c;
        GatherJob j = {&pixels, NULL, 0, NULL, ptl_tensor_data(xc), ptl_tensor_data(y),
                       (size_t)c * ptl_tensor_itemsize(xc), 1, xc->sizes, &plane_stride,
                       {0, 0, 0}, PTL_GRAIN_SIZE / (m->out[2] * c + 1) + 1};
        for (int i = 0; i < nd; i++) {
            j.sp[NN_SPATIAL - nd + i] = xc->strides[2 + i] / c;
        }
        if (resample_gather_rows(j) < 0) {
            goto error;
        }
    }
    ptl_decref(xc);
    return y;
error:
    ptl_xdecref(xc);
    ptl_xdecref(y);
    return NULL;
}

/* reflection_pad{1,2,3}d / replication_pad{1,2,3}d(Tensor self, padding), _pad_circular:
 * (*, [D,] [H,] W) -> (*, [D + pd,] [H + ph,] W + pw) */
static int
pad_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PadInfo pi = pad_info(op);
    PtlTensorImpl *x = s[0].u.t, *y;
    Maps m;
    if (pad_setup(&pi, x, &s[1], &m) < 0) {
        return -1;
    }
    int nd = pi.nd ? pi.nd : (int)(s[1].u.il.n / 2);
    PtlMemoryFormat f = pad_format(&pi, x, nd);
    y = f == PTL_MEMORY_FORMAT_CONTIGUOUS ? maps_forward(&m, x, nd, 0, x->dtype)
                                          : pad_channels_last(&m, x, nd, f);
    maps_free(&m);
    if (y == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(y);
    return 0;
}

/* PyTorch's pad backward kernels read the input's sizes (replication_pad3d's from dim 0, the
 * others' from dim 1, up to the width at dim nd, nd + 1 when batched) before they check
 * anything (reflection_pad3d's checks its dims first: our dims message): an input of nd dims
 * or fewer raises c10's IndexError at the first dim it lacks.  0, or -1 with it set. */
static int
pad_backward_input_dims(const PtlOperator *op, int nd, const PtlTensorImpl *x)
{
    int64_t d = op->id == PTL_OP_replication_pad3d_backward ? 0 : 1;
    if (x->dim > nd || op->id == PTL_OP_reflection_pad3d_backward ||
        op->id == PTL_OP__pad_circular_backward) {
        return 0;
    }
    if (x->dim == 0) {
        return ptl_error_set(PTL_ERR_INDEX, "Dimension specified as %lld but tensor has no "
                             "dimensions", (long long)d);
    }
    d = d > x->dim ? d : x->dim;
    return ptl_wrap_dim(&d, x->dim);
}

/* *_pad*_backward(grad_output, self, padding) -> grad_input shaped like self */
static int
pad_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PadInfo pi = pad_info(op);
    PtlTensorImpl *g = s[0].u.t, *x = s[1].u.t, *gi;
    Maps m;
    int nd = pi.nd ? pi.nd : (int)(s[2].u.il.n / 2), bad;
    int64_t want[PTL_MAX_DIMS];
    if (pad_backward_input_dims(op, nd, x) < 0 || pad_setup(&pi, x, &s[2], &m) < 0) {
        return -1;
    }
    if (!grad_matches(&m, g, x->dim, x->sizes, nd, &bad, want)) {
        static const char *const names[4] = {"width", "height", "depth", "channel"};
        char b1[128], b2[128];
        int from_last = x->dim - 1 - bad;
        maps_free(&m);
        if (bad < 0) {
            return ptl_error_set(PTL_ERR_RUNTIME, "Expected grad_output of shape %s but got %s",
                                 ptl_format_sizes(b1, sizeof(b1), x->dim, want),
                                 ptl_format_sizes(b2, sizeof(b2), g->dim, g->sizes));
        }
        return ptl_error_set(PTL_ERR_RUNTIME, "gradOutput %s unexpected. Expected: %lld, Got: "
                             "%lld", from_last < nd ? names[from_last] : bad == 0 ? "batch"
                                                                                 : names[3],
                             (long long)want[bad], (long long)g->sizes[bad]);
    }
    PtlMemoryFormat f = pad_format(&pi, x, nd);
    gi = g->device.type == PTL_DEVICE_CPU && resample_pad_backward_supports(g->dtype)
             ? resample_pad_backward_rows(&m, g, x->dim, x->sizes, f)
             : maps_backward(&m, g, x->dim, x->sizes);
    maps_free(&m);
    if (gi != NULL && f != PTL_MEMORY_FORMAT_CONTIGUOUS &&
        !ptl_tensor_impl_is_contiguous_as(gi, f)) {
        PtlTensorImpl *t = gi;   /* float16, bfloat16: the weighted maps' result, laid out */
        gi = ptl_copy_as(t, f);
        ptl_decref(t);
    }
    if (gi == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(gi);
    return 0;
}

/* ---- upsampling ---- */

enum { UP_NEAREST, UP_LINEAR, UP_CUBIC };

typedef struct UpInfo {
    int mode, nd, bwd;
} UpInfo;

static UpInfo
up_info(const PtlOperator *op)
{
    static const struct {
        PtlOpId id;
        UpInfo info;
    } table[] = {
        {PTL_OP_upsample_nearest1d, {UP_NEAREST, 1, 0}},
        {PTL_OP_upsample_nearest2d, {UP_NEAREST, 2, 0}},
        {PTL_OP_upsample_nearest3d, {UP_NEAREST, 3, 0}},
        {PTL_OP_upsample_linear1d, {UP_LINEAR, 1, 0}},
        {PTL_OP_upsample_bilinear2d, {UP_LINEAR, 2, 0}},
        {PTL_OP_upsample_trilinear3d, {UP_LINEAR, 3, 0}},
        {PTL_OP_upsample_bicubic2d, {UP_CUBIC, 2, 0}},
        {PTL_OP_upsample_nearest1d_backward, {UP_NEAREST, 1, 1}},
        {PTL_OP_upsample_nearest2d_backward, {UP_NEAREST, 2, 1}},
        {PTL_OP_upsample_nearest3d_backward, {UP_NEAREST, 3, 1}},
        {PTL_OP_upsample_linear1d_backward, {UP_LINEAR, 1, 1}},
        {PTL_OP_upsample_bilinear2d_backward, {UP_LINEAR, 2, 1}},
        {PTL_OP_upsample_trilinear3d_backward, {UP_LINEAR, 3, 1}},
        {PTL_OP_upsample_bicubic2d_backward, {UP_CUBIC, 2, 1}},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (op->id == (int)table[i].id) {
            return table[i].info;
        }
    }
    return table[0].info;
}

static double
cubic1(double x, double a)
{
    return ((a + 2) * x - (a + 3)) * x * x + 1;
}

static double
cubic2(double x, double a)
{
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
}

/* The taps of output o along one dim (PyTorch's area_pixel_compute_source_index and
 * nearest_idx; `scale` is the user's scale factor or <= 0 for none). */
static void
up_taps(int mode, int64_t in, int64_t out, int align, double scale, int64_t o, int64_t *idx,
        double *wt)
{
    if (mode == UP_NEAREST) {
        int64_t i;
        if (out == in) {
            i = o;
        }
        else if (out == 2 * in) {
            i = o >> 1;
        }
        else {
            float sc = scale > 0 ? (float)(1.0 / scale) : (float)in / (float)out;
            float v = floorf((float)o * sc);
            /* a scale that disagrees with the sizes may point past the input (or be inf) */
            i = v < (float)(in - 1) ? (int64_t)v : in - 1;
        }
        idx[0] = i;
        wt[0] = 1.0;
        return;
    }
    double sc = align ? (out > 1 ? (double)(in - 1) / (double)(out - 1) : 0.0)
                      : (scale > 0 ? 1.0 / scale : (double)in / (double)out);
    double real = align ? sc * (double)o : sc * ((double)o + 0.5) - 0.5;
    if (mode == UP_LINEAR) {
        real = !align && real < 0 ? 0 : real;
        /* PyTorch's guard_index_and_lambda: the index stays in the input, the weight in
         * [0, 1], whatever the scale */
        int64_t i0 = real < (double)(in - 1) ? (int64_t)real : in - 1;
        double l1 = real - (double)i0;
        l1 = l1 < 0 ? 0 : (l1 > 1 ? 1 : l1);
        idx[0] = i0;
        idx[1] = i0 + (i0 < in - 1 ? 1 : 0);
        wt[0] = 1.0 - l1;
        wt[1] = l1;
        return;
    }
    double f = floor(real), t = real - f;
    const double a = -0.75;
    /* taps beyond either edge all clamp to it; keep f castable */
    f = f < -2.0 ? -2.0 : (f > (double)in ? (double)in : f);
    wt[0] = cubic2(t + 1.0, a);
    wt[1] = cubic1(t, a);
    wt[2] = cubic1(1.0 - t, a);
    wt[3] = cubic2(2.0 - t, a);
    for (int k = 0; k < 4; k++) {
        int64_t i = (int64_t)f - 1 + k;
        idx[k] = i < 0 ? 0 : (i > in - 1 ? in - 1 : i);
    }
}

/* upsample_*(self, output_size, [align_corners,] scales...) and their backwards
 * (grad_output, output_size, input_size, [align_corners,] scales...):
 * (N, C, *in) -> (N, C, *output_size) */
static int
upsample_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    static const char *const dn[3] = {"D", "H", "W"};
    UpInfo ui = up_info(op);
    PtlTensorImpl *x = s[0].u.t, *y;
    const PtlIValue *osize = &s[1];
    int nd = ui.nd, k = ui.bwd ? 3 : 2, align = 0;
    int64_t isz[PTL_MAX_DIMS];
    int idim;
    Maps m;
    char b1[96], b2[96];

    if (ui.mode != UP_NEAREST) {
        align = s[k++].u.b;
    }
    if (ui.bwd) {
        idim = (int)s[2].u.il.n;
        memcpy(isz, s[2].u.il.data, sizeof(int64_t) * (size_t)idim);
        PTL_CHECK(idim == nd + 2, PTL_ERR_RUNTIME,
                  "It is expected input_size equals to %d, but got size %d", nd + 2, idim);
    }
    else {
        idim = x->dim;
        memcpy(isz, x->sizes, sizeof(int64_t) * (size_t)idim);
        PTL_CHECK(idim == nd + 2, PTL_ERR_RUNTIME,
                  "Expected %dD tensor for input, but got a tensor with %d dimensions", nd + 2, idim);
    }
    PTL_CHECK(osize->u.il.n == nd, PTL_ERR_RUNTIME,
              "It is expected output_size equals to %d, but got size %lld", nd,
              (long long)osize->u.il.n);
    memset(&m, 0, sizeof(m));
    for (int i = 0; i < nd; i++) {
        m.out[NN_SPATIAL - nd + i] = osize->u.il.data[i];
    }
    maps_shape(&m, idim, isz, nd);
    int bad = 0;
    size_t o1 = 0, o2 = 0;
    for (int d = NN_SPATIAL - nd; d < NN_SPATIAL; d++) {
        const char *sep = d == NN_SPATIAL - nd ? "" : ", ";
        bad |= m.in[d] <= 0 || m.out[d] <= 0;
        o1 += (size_t)snprintf(b1 + o1, sizeof(b1) - o1, "%s%s: %lld", sep, dn[d], (long long)m.in[d]);
        o2 += (size_t)snprintf(b2 + o2, sizeof(b2) - o2, "%s%s: %lld", sep, dn[d], (long long)m.out[d]);
    }
    PTL_CHECK(!bad, PTL_ERR_RUNTIME,
              "Input and output sizes should be greater than 0, but got input (%s) output (%s)", b1, b2);
    if (!ui.bwd) {
        static const char *const names[3] = {"compute_indices_weights_nearest",
                                             "compute_indices_weights_linear",
                                             "compute_indices_weights_cubic"};
        if (!ptl_dtype_is_floating(x->dtype) && x->dtype != PTL_DTYPE_UINT8) {
            return nn_check_dtype(names[ui.mode], x->dtype, 0);
        }
    }
    if (maps_alloc(&m) < 0) {
        return -1;
    }
    for (int d = 0; d < NN_SPATIAL; d++) {
        int u = d - (NN_SPATIAL - nd);
        double scale = -1.0;
        if (u >= 0 && s[k + u].tag != PTL_IV_NONE) {
            scale = ptl_iv_to_double(&s[k + u]);
        }
        m.ntaps[d] = u < 0 ? 1 : (ui.mode == UP_NEAREST ? 1 : ui.mode == UP_LINEAR ? 2 : 4);
        for (int64_t o = 0; o < m.out[d]; o++) {
            if (u < 0) {
                m.idx[d][o * MAX_TAPS] = 0;
                m.wt[d][o * MAX_TAPS] = 1.0;
                continue;
            }
            up_taps(ui.mode, m.in[d], m.out[d], align, scale, o, m.idx[d] + o * MAX_TAPS,
                    m.wt[d] + o * MAX_TAPS);
        }
    }
    if (ui.bwd) {
        int bad;
        int64_t want[PTL_MAX_DIMS];
        if (!grad_matches(&m, x, idim, isz, nd, &bad, want)) {
            maps_free(&m);
            if (bad < 0) {
                return ptl_error_set(PTL_ERR_RUNTIME, "Expected grad_output to be a tensor of "
                                     "dimension %d but got: dimension %d", idim, x->dim);
            }
            return ptl_error_set(PTL_ERR_RUNTIME, "Expected grad_output to have the same shape "
                                 "as output; output.size(%d) = %lld but got grad_output.size(%d) "
                                 "= %lld", bad, (long long)want[bad], bad,
                                 (long long)x->sizes[bad]);
        }
        y = maps_backward(&m, x, idim, isz);
    }
    else if (ui.mode == UP_NEAREST) {
        y = maps_forward(&m, x, nd, 0, x->dtype);
    }
    else {
        y = maps_forward(&m, x, nd, 1, x->dtype);
    }
    maps_free(&m);
    if (y == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(y);
    return 0;
error:
    return -1;
}

/* ---- affine_grid_generator ---- */

/* The normalized coordinate of position i of `size` (linspace(-1, 1), shrunk by
 * (size - 1) / size without align_corners; 0 for a size-1 dim). */
static double
base_coord(int64_t i, int64_t size, int align)
{
    if (size <= 1) {
        return 0.0;
    }
    double v = -1.0 + 2.0 * (double)i / (double)(size - 1);
    return align ? v : v * (double)(size - 1) / (double)size;
}

/* Note [Device affine_grid]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * On CUDA (and in the CPU tests' emulation of the CUDA kernels) affine_grid_generator and
 * its backward are matrix products on the device, in float64 as the CPU kernel computes:
 * the base grid B [vol, nd + 1] (rows (x, y, [z,] 1), base_coord's values, made on the host
 * and copied over: it has no batch dim), then
 *     grid  [N, vol, nd]     = B @ theta^T            (matmul broadcasts B over the batch)
 *     theta [N, nd, nd + 1] = grad^T @ B             (grad viewed as [N, vol, nd])
 * and the result cast to the input's dtype.  The sums run in the GEMM's order, not the
 * CPU loop's: equal within float64 rounding. */
static int
affine_grid_device(PtlTensorImpl *t, int bwd, int nd, const int64_t *sp, int64_t vol,
                   const int64_t *gsz, int align, PtlIValue *s)
{
    PtlTensorImpl *host = NULL, *base = NULL, *tc = NULL, *lhs = NULL, *rhs = NULL;
    PtlTensorImpl *prod = NULL, *r = NULL;
    int64_t bsz[2] = {vol, nd + 1}, gv[3] = {gsz[0], vol, nd};
    if ((host = ptl_empty(2, bsz, PTL_DTYPE_FLOAT64, ptl_device_cpu())) == NULL) {
        goto done;
    }
    double *hb = (double *)ptl_tensor_data(host);
    for (int64_t p = 0; p < vol; p++) {
        int64_t x = p % sp[2], y = (p / sp[2]) % sp[1], z = p / (sp[2] * sp[1]);
        double *row = hb + p * (nd + 1);
        row[0] = base_coord(x, sp[2], align);
        row[1] = base_coord(y, sp[1], align);
        row[2] = nd == 2 ? 1.0 : base_coord(z, sp[0], align);
        if (nd == 3) {
            row[3] = 1.0;
        }
    }
    if ((base = ptl_to_copy(host, PTL_DTYPE_FLOAT64, &t->device)) == NULL ||
        (tc = ptl_to_copy(t, PTL_DTYPE_FLOAT64, &t->device)) == NULL) {
        goto done;
    }
    if (bwd) {   /* grad [N, vol, nd] transposed, times B */
        PtlIValue a0[2] = {ptl_iv_tensor(tc), ptl_iv_intlist(gv, 3)};
        if ((rhs = ptl_call_tensor(PTL_OP_reshape, a0)) == NULL) {
            goto done;
        }
        PtlIValue a1[3] = {ptl_iv_tensor(rhs), ptl_iv_int(1), ptl_iv_int(2)};
        if ((lhs = ptl_call_tensor(PTL_OP_transpose_int, a1)) == NULL) {
            goto done;
        }
        PtlIValue a2[2] = {ptl_iv_tensor(lhs), ptl_iv_tensor(base)};
        r = ptl_call_tensor(PTL_OP_matmul, a2);
    }
    else {   /* B times theta [N, nd, nd + 1] transposed, viewed as the grid */
        PtlIValue a1[3] = {ptl_iv_tensor(tc), ptl_iv_int(1), ptl_iv_int(2)};
        if ((rhs = ptl_call_tensor(PTL_OP_transpose_int, a1)) == NULL) {
            goto done;
        }
        PtlIValue a2[2] = {ptl_iv_tensor(base), ptl_iv_tensor(rhs)};
        if ((prod = ptl_call_tensor(PTL_OP_matmul, a2)) == NULL) {
            goto done;
        }
        PtlIValue a3[2] = {ptl_iv_tensor(prod), ptl_iv_intlist(gsz, nd + 2)};
        r = ptl_call_tensor(PTL_OP_reshape, a3);
    }
    if (r != NULL && (r = nn_finish(r, t->dtype)) != NULL) {
        s[0] = ptl_iv_tensor(r);
    }
done:
    ptl_xdecref(host);
    ptl_xdecref(base);
    ptl_xdecref(tc);
    ptl_xdecref(lhs);
    ptl_xdecref(rhs);
    ptl_xdecref(prod);
    return r != NULL ? 0 : -1;
}

/* affine_grid_generator(theta, size, align_corners):  theta (N, nd, nd + 1) and size
 * (N, C, [D,] H, W) -> grid (N, [D,] H, W, nd);  the backward maps a grid gradient to
 * theta's. */
static int
affine_grid_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int bwd = op->id == PTL_OP_affine_grid_generator_backward;
    PtlTensorImpl *t = s[0].u.t, *tc = NULL, *r = NULL;
    const int64_t *size = s[1].u.il.data;
    int64_t ns = s[1].u.il.n;
    int align = s[2].u.b;
    char buf[128];

    PTL_CHECK(ns == 4 || ns == 5, PTL_ERR_RUNTIME,
              "affine_grid_generator needs 4D (spatial) or 5D (volumetric) inputs.");
    int nd = (int)ns - 2;
    int64_t n = size[0], sp[3] = {1, 1, 1}, vol = 1;
    for (int i = 0; i < nd; i++) {
        sp[3 - nd + i] = size[2 + i];
        vol *= size[2 + i];
    }
    int64_t gsz[5] = {n}, thsz[3] = {n, nd, nd + 1};
    for (int i = 0; i < nd; i++) {
        gsz[1 + i] = size[2 + i];
    }
    gsz[1 + nd] = nd;
    if (!bwd) {
        PTL_CHECK(t->dim == 3 && t->sizes[0] == n && t->sizes[1] == nd && t->sizes[2] == nd + 1,
                  PTL_ERR_RUNTIME, "affine_grid_generator: expected theta of size [%lld, %d, %d], "
                  "but got %s",
                  (long long)n, nd, nd + 1, ptl_format_sizes(buf, sizeof(buf), t->dim, t->sizes));
    }
    else {
        PTL_CHECK(t->dim == nd + 2 && t->numel == n * vol * nd, PTL_ERR_RUNTIME,
                  "affine_grid_generator_backward: grad of size %s does not match size",
                  ptl_format_sizes(buf, sizeof(buf), t->dim, t->sizes));
    }
    if (nn_check_dtype("affine_grid_generator", t->dtype, 0) < 0) {
        return -1;
    }
    if (ptl_on_device_path(t)) {
        return affine_grid_device(t, bwd, nd, sp, vol, gsz, align, s);
    }
    if ((tc = nn_prepare(t, PTL_DTYPE_FLOAT64)) == NULL) {
        return -1;
    }
    r = bwd ? nn_zeros(3, thsz, PTL_DTYPE_FLOAT64) : ptl_empty(nd + 2, gsz, PTL_DTYPE_FLOAT64, t->device);
    if (r == NULL) {
        goto error;
    }
    const double *src = (const double *)ptl_tensor_data(tc);
    double *dst = (double *)ptl_tensor_data(r);
    for (int64_t b = 0; b < n; b++) {
        int64_t p = 0;
        for (int64_t z = 0; z < sp[0]; z++) {
            for (int64_t y = 0; y < sp[1]; y++) {
                for (int64_t x = 0; x < sp[2]; x++, p++) {
                    /* base = (x, y, [z,] 1) */
                    double base[4] = {base_coord(x, sp[2], align), base_coord(y, sp[1], align),
                                      base_coord(z, sp[0], align), 1.0};
                    if (nd == 2) {
                        base[2] = 1.0;
                    }
                    for (int i = 0; i < nd; i++) {
                        int64_t gi = (b * vol + p) * nd + i;
                        for (int jj = 0; jj <= nd; jj++) {
                            int64_t ti = (b * nd + i) * (nd + 1) + jj;
                            if (bwd) {
                                dst[ti] += src[gi] * base[jj];
                            }
                            else {
                                dst[gi] = (jj == 0 ? 0.0 : dst[gi]) + src[ti] * base[jj];
                            }
                        }
                    }
                }
            }
        }
    }
    ptl_decref(tc);
    if ((r = nn_finish(r, t->dtype)) == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(r);
    return 0;
error:
    ptl_xdecref(tc);
    ptl_xdecref(r);
    return -1;
}

/* upsample's result takes the layout its input suggests, its backward's that of grad_output
 * (Note [Channels-last at the kernel boundary]). */
PTL_KERNEL_AS_INPUT(upsample_cpu)

static const PtlKernelReg resample_cpu[] = {
    {PTL_OP_reflection_pad1d, PTL_KEY_CPU, pad_cpu},
    {PTL_OP_reflection_pad2d, PTL_KEY_CPU, pad_cpu},
    {PTL_OP_reflection_pad3d, PTL_KEY_CPU, pad_cpu},
    {PTL_OP_replication_pad1d, PTL_KEY_CPU, pad_cpu},
    {PTL_OP_replication_pad2d, PTL_KEY_CPU, pad_cpu},
    {PTL_OP_replication_pad3d, PTL_KEY_CPU, pad_cpu},
    {PTL_OP__pad_circular, PTL_KEY_CPU, pad_cpu},
    {PTL_OP_reflection_pad1d_backward, PTL_KEY_CPU, pad_backward_cpu},
    {PTL_OP_reflection_pad2d_backward, PTL_KEY_CPU, pad_backward_cpu},
    {PTL_OP_reflection_pad3d_backward, PTL_KEY_CPU, pad_backward_cpu},
    {PTL_OP_replication_pad1d_backward, PTL_KEY_CPU, pad_backward_cpu},
    {PTL_OP_replication_pad2d_backward, PTL_KEY_CPU, pad_backward_cpu},
    {PTL_OP_replication_pad3d_backward, PTL_KEY_CPU, pad_backward_cpu},
    {PTL_OP__pad_circular_backward, PTL_KEY_CPU, pad_backward_cpu},
    {PTL_OP_upsample_nearest1d, PTL_KEY_CPU, upsample_cpu_as_input},
    {PTL_OP_upsample_nearest2d, PTL_KEY_CPU, upsample_cpu_as_input},
    {PTL_OP_upsample_nearest3d, PTL_KEY_CPU, upsample_cpu_as_input},
    {PTL_OP_upsample_linear1d, PTL_KEY_CPU, upsample_cpu_as_input},
    {PTL_OP_upsample_bilinear2d, PTL_KEY_CPU, upsample_cpu_as_input},
    {PTL_OP_upsample_trilinear3d, PTL_KEY_CPU, upsample_cpu_as_input},
    {PTL_OP_upsample_bicubic2d, PTL_KEY_CPU, upsample_cpu_as_input},
    {PTL_OP_upsample_nearest1d_backward, PTL_KEY_CPU, upsample_cpu_as_input},
    {PTL_OP_upsample_nearest2d_backward, PTL_KEY_CPU, upsample_cpu_as_input},
    {PTL_OP_upsample_nearest3d_backward, PTL_KEY_CPU, upsample_cpu_as_input},
    {PTL_OP_upsample_linear1d_backward, PTL_KEY_CPU, upsample_cpu_as_input},
    {PTL_OP_upsample_bilinear2d_backward, PTL_KEY_CPU, upsample_cpu_as_input},
    {PTL_OP_upsample_trilinear3d_backward, PTL_KEY_CPU, upsample_cpu_as_input},
    {PTL_OP_upsample_bicubic2d_backward, PTL_KEY_CPU, upsample_cpu_as_input},
    {PTL_OP_affine_grid_generator, PTL_KEY_CPU, affine_grid_cpu},
    {PTL_OP_affine_grid_generator_backward, PTL_KEY_CPU, affine_grid_cpu},
};
PTL_DEFINE_REGISTER(resample_cpu)
