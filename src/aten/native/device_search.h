/* device_search.h -- how summary.c hands searchsorted and bucketize to the CUDA backend's
 * kernel without including it: the backend (src/cuda/search_plan.c) sets the hook.  The
 * checks and the contiguous copies stay the CPU kernel's (Note [CUDA searchsorted] in
 * src/cuda/search_plan.h). */
#ifndef PTL_ATEN_NATIVE_DEVICE_SEARCH_H
#define PTL_ATEN_NATIVE_DEVICE_SEARCH_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* n values (contiguous, dtype vdt, vsz bytes each), value i searched in boundary row
 * i / per_row (batched) or row 0, rows of len contiguous boundaries (dtype bdt, bsz bytes
 * each; ints: both dtypes integral, compared as int64, else as double), in the order of
 * sorter's row (int64, every entry in [0, len); NULL: the boundaries' own order): out[i]
 * (int32 or int64: odt) = the first position whose boundary is >= the value (> when
 * right), summary.c's binary search. */
typedef struct PtlDeviceSearchArgs {
    int32_t bdt, vdt, odt, right, batched, ints;
    const char *bnd, *vals;
    const int64_t *sorter;
    char *out;
    int64_t n, len, per_row, bsz, vsz;
} PtlDeviceSearchArgs;

/* Set by the CUDA backend (NULL until then); 0, or -1 with an error set.  It runs for CUDA
 * tensors and, while ptl_device_reduce_emulation is on, for CPU tensors too. */
extern int (*ptl_device_search_hook)(const PtlDeviceSearchArgs *a);

#ifdef __cplusplus
}
#endif
#endif
