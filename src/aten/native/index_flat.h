/* index_flat.h -- index.c's typed loops for one-dimensional indices: their offsets into
 * self, and the scatter of one value per offset.  Private to index.c (which had reached the
 * file size limit).  See Note [One-dim index offsets]. */
#ifndef PTL_ATEN_NATIVE_INDEX_FLAT_H
#define PTL_ATEN_NATIVE_INDEX_FLAT_H

#include "index_impl.h"

/* Note [One-dim index offsets]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A one-dimensional broadcast index (x[idx], index_put_((idx,), v) of any single index, or
 * several of one length) adds its offsets in a typed loop: the index read at its own stride,
 * checked against bounds hoisted out of the loop, with no table of element offsets; and when
 * no dim of self is left unindexed, index_put_ moves or adds one value per offset in a typed
 * loop too (flat_scatter).  The walk table of the index's length, a generic load per index
 * and a generic combine() per value had left x.view(-1).index_put_((I,), v,
 * accumulate=True) of 1e6 indices at 0.19x PyTorch's time (issue 16).  The first bad index
 * raises, as the walk did, and the values go in the index's order, so duplicates end the
 * same. */
#define INDEX_OFFSETS_LOOP(T)                                                               \
    for (int64_t b = 0; b < n; b++) {                                                       \
        int64_t v = ((const T *)data)[b * ist];                                             \
        if (v < lo || v >= size) {                                                          \
            *bad = v;                                                                       \
            return -1;                                                                      \
        }                                                                                   \
        off[b] += (v < 0 ? v + size : v) * stride;                                          \
    }

/* off[b] += the offset of idx[b * ist] (int64 or int32) along a dim of this size and stride,
 * b < n, for indices in [lo, size) (lo: -size when negative ones wrap, else 0); 0, or -1
 * with the first index outside in *bad */
static inline int
index_offsets_1d(int64_t *off, const PtlTensorImpl *idx, int64_t ist, int64_t n, int64_t lo,
                 int64_t size, int64_t stride, int64_t *bad)
{
    const char *data = ptl_tensor_data(idx);
    if (idx->dtype == PTL_DTYPE_INT64) {
        INDEX_OFFSETS_LOOP(int64_t)
    }
    else {
        INDEX_OFFSETS_LOOP(int32_t)
    }
    return 0;
}
#undef INDEX_OFFSETS_LOOP

/* self[off[b]] (r)= src[b * whole], b < n in order: a copy, or a float32/float64 sum with
 * combine()'s bits (one rounding of the double sum); 1 when done, 0 for the general walk */
static inline int
flat_scatter(char *self, const int64_t *off, int64_t n, const char *src, int whole,
             PtlDtype dt, Reduce r, double alpha)
{
    int64_t vs = whole ? 1 : 0;
    if (r == RED_NONE) {
        put_row(self, off, src, vs, n, ptl_dtype_itemsize(dt));
        return 1;
    }
    if (r == RED_SUM && dt == PTL_DTYPE_FLOAT32) {
        float *o = (float *)self;
        const float *v = (const float *)src;
        for (int64_t b = 0; b < n; b++) {
            o[off[b]] = (float)((double)o[off[b]] + (double)v[b * vs] * alpha);
        }
        return 1;
    }
    if (r == RED_SUM && dt == PTL_DTYPE_FLOAT64) {
        double *o = (double *)self;
        const double *v = (const double *)src;
        for (int64_t b = 0; b < n; b++) {
            o[off[b]] = o[off[b]] + v[b * vs] * alpha;
        }
        return 1;
    }
    return 0;
}

#endif
