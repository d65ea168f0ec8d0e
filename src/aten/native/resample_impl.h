/* resample_impl.h -- what resample.c shares with resample_gather.c and pad_backward.c: the
 * index maps (Note [Index maps] in resample.c), the gathers along W by runs (Note [Gathers by
 * runs] in resample_gather.c) and the pads' backward by input rows (Note [Pad backward by
 * input rows] in pad_backward.c). */
#ifndef PTL_ATEN_NATIVE_RESAMPLE_IMPL_H
#define PTL_ATEN_NATIVE_RESAMPLE_IMPL_H

#include <stdint.h>

#include "../../c10/memory_format.h"
#include "device_nn.h"
#include "native.h"
#include "nn_common.h"

#define MAX_TAPS PTL_DEVICE_MAX_TAPS

/* planes x three spatial dims, each output position reading ntaps inputs */
typedef struct Maps {
    int64_t planes;
    int64_t in[NN_SPATIAL], out[NN_SPATIAL];
    int ntaps[NN_SPATIAL];
    int64_t *idx[NN_SPATIAL];   /* [out * ntaps]; -1: outside (reads zero / writes nothing) */
    double *wt[NN_SPATIAL];     /* [out * ntaps] */
} Maps;

typedef struct GatherRun {
    int64_t o, i, n, step;   /* y[o + k] = x[i + k * step] along W, for k < n; o, i and step
                              * in bytes once gather_rows has x's strides */
} GatherRun;

/* The runs of m's W map over outputs [b, e) into runs[] (room for e - b); their count. */
int64_t resample_gather_runs(const Maps *m, int64_t b, int64_t e, GatherRun *runs);

/* A gather through the maps (Note [Gathers by runs] in resample_gather.c): x's elements of
 * `item` bytes to the contiguous y, x's leading dims being the planes */
typedef struct GatherJob {
    const Maps *m;
    const GatherRun *runs;
    int64_t nruns;
    const int64_t *off;              /* short runs: x's byte offset of each output along W */
    const char *x;
    char *y;
    size_t item;
    int lead;                        /* x's leading (plane) dims */
    const int64_t *sizes, *strides;  /* x's, in elements */
    int64_t sp[NN_SPATIAL];          /* x's strides along D, H, W; 0 where absent */
    int64_t grain;                   /* output rows */
} GatherJob;

/* The gather of x's elements (y contiguous: x's leading dims, then m->out's last nd) */
GatherJob resample_gather_of(const Maps *m, PtlTensorImpl *x, int nd, PtlTensorImpl *y);
/* Runs gather j (its runs and offsets found here from j.m) over every output row, in place
 * through the maps.  0, or -1 out of memory (error set). */
int resample_gather_rows(GatherJob j);

/* g laid out in format f: a new reference to g itself where it is already */
static inline PtlTensorImpl *
resample_dense_as(PtlTensorImpl *g, PtlMemoryFormat f)
{
    if (ptl_tensor_impl_is_contiguous_as(g, f)) {
        ptl_incref(g);
        return g;
    }
    return ptl_copy_as(g, f);
}

/* Whether the pads' backward by input rows takes gradients of dtype dt */
int resample_pad_backward_supports(PtlDtype dt);
/* The input gradient (dim dims shaped in_sizes, g's dtype, in format f) from g through the
 * maps (Note [Pad backward by input rows]; channels-last: elements of a pixel's C values,
 * Note [Pads keep channels-last] in resample.c); g's dtype is supported.  New ref, or NULL
 * with the error set. */
PtlTensorImpl *resample_pad_backward_rows(const Maps *m, PtlTensorImpl *g, int dim,
                                          const int64_t *in_sizes, PtlMemoryFormat f);

#endif
