/* device_pool.h -- how pool.c hands max and average pooling (and their backwards) to the
 * CUDA backend's kernels without including it: the backend (src/cuda/pool_plan.c) sets the
 * hook.  The argument checks, casts and contiguous copies stay the CPU kernel's; what
 * arrives here is contiguous data in the work dtype.  The windows are computed by
 * ptl_pool_window, which pool.c's window tables use too, so that both sides pool the same
 * elements.  See Note [CUDA pooling] in src/cuda/pool_plan.h. */
#ifndef PTL_ATEN_NATIVE_DEVICE_POOL_H
#define PTL_ATEN_NATIVE_DEVICE_POOL_H

#include <stdint.h>

#include "../../c10/macros.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a dim's windows are laid (ORDER: ptl_pool_window's switch). */
enum { PTL_POOL_WIN_MAX, PTL_POOL_WIN_AVG, PTL_POOL_WIN_ADAPTIVE };

/* One output's window along a dim (Note [Pooling windows] in pool.c): its first valid
 * input, how many valid inputs it covers (stepping by the dilation) and the span
 * count_include_pad divides by. */
typedef struct PtlPoolWin {
    int64_t start, count, span;
} PtlPoolWin;

/* Output o's window along a dim of `in` inputs: a max pooling's (kernel k, stride s,
 * padding pad, dilation dil), an average pooling's (dilation 1; the span reaches into the
 * padding), or an adaptive pooling's to `out` outputs, [floor(o in / out),
 * ceil((o + 1) in / out)). */
PTL_HD static inline PtlPoolWin
ptl_pool_window(int how, int64_t o, int64_t in, int64_t out, int64_t k, int64_t s, int64_t pad,
                int64_t dil)
{
    PtlPoolWin w;
    const int64_t hs = o * s - pad;
    int64_t end;
    if (how == PTL_POOL_WIN_ADAPTIVE) {
        w.start = o * in / out;
        w.count = w.span = ((o + 1) * in + out - 1) / out - w.start;
    }
    else if (how == PTL_POOL_WIN_AVG) {
        end = hs + k < in + pad ? hs + k : in + pad;
        w.span = end - hs;
        w.start = hs < 0 ? 0 : hs;
        end = end < in ? end : in;
        w.count = end > w.start ? end - w.start : 0;
    }
    else {
        w.start = hs < 0 ? hs + (-hs + dil - 1) / dil * dil : hs;   /* the first tap >= 0 */
        end = hs + dil * (k - 1) + 1;
        end = end < in ? end : in;
        w.count = end > w.start ? (end - w.start + dil - 1) / dil : 0;
        w.span = w.count;
    }
    return w;
}

enum { PTL_DEVICE_POOL_MAX, PTL_DEVICE_POOL_MAX_BACKWARD, PTL_DEVICE_POOL_AVG,
       PTL_DEVICE_POOL_AVG_BACKWARD, PTL_DEVICE_POOL_UNPOOL, PTL_DEVICE_POOL_UNPOOL_BACKWARD };

/* max_unpool2d's error for index v outside the output plane of h x w elements (the CPU
 * check's, and the device's status word's after its kernels) */
#define PTL_POOL_UNPOOL_INDEX_ERROR \
    "Found an invalid max index: %lld (output volumes are of size %lldx%lld)"

/* A pooling of `planes` planes of in[0] x in[1] x in[2] elements to out[0] x out[1] x
 * out[2], float32 or float64 (dtype); windows per dim by `how` (PTL_POOL_WIN_*) from k, s,
 * p, d.  MAX: x -> y and idx (each output's flat index in its plane).  MAX_BACKWARD: x the
 * output gradient, idx the forward's indices -> y the input gradient.  AVG: x -> y, each
 * window's sum over divisor (when not 0), its span (count_include_pad) or its count.
 * AVG_BACKWARD: x the output gradient -> y the input gradient.  UNPOOL (max_unpool2d, in =
 * its output_size, out = self's spatial size): x (planes x out) -> y (planes x in), zero but
 * at the indices idx (planes x out, flat in a plane), the last x of an index winning.
 * UNPOOL_BACKWARD: x the output gradient (planes x in) -> y (planes x out) gathered through
 * idx.  A bad index raises PTL_POOL_UNPOOL_INDEX_ERROR for the first one (row-major). */
typedef struct PtlDevicePoolArgs {
    int32_t kind, dtype, how, count_include_pad;
    const char *x;
    char *y;
    int64_t *idx;
    int64_t planes, divisor;
    int64_t in[3], out[3], k[3], s[3], p[3], d[3];
} PtlDevicePoolArgs;

/* Set by the CUDA backend (NULL until then); 0, or -1 with an error set.  It runs for CUDA
 * tensors and, while ptl_device_reduce_emulation is on, for CPU tensors too. */
extern int (*ptl_device_pool_hook)(const PtlDevicePoolArgs *a);

#ifdef __cplusplus
}
#endif
#endif
