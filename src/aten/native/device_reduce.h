/* device_reduce.h -- how reduce.c and nn.c hand a reduction's or a softmax's plan to the
 * CUDA backend's kernels without including it: the backend (src/cuda/reduce_plan.c) sets the
 * hooks.  See Note [CUDA reduction plan] in src/cuda/reduce_plan.h. */
#ifndef PTL_ATEN_NATIVE_DEVICE_REDUCE_H
#define PTL_ATEN_NATIVE_DEVICE_REDUCE_H

#include <stdint.h>

#include "../../c10/macros.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ORDER PtlDeviceReduceKind: reduce_plan.h's accumulator switch. */
typedef enum PtlDeviceReduceKind {
    PTL_DEVICE_RED_SUM,
    PTL_DEVICE_RED_NANSUM,
    PTL_DEVICE_RED_MEAN,
    PTL_DEVICE_RED_PROD,
    PTL_DEVICE_RED_MAX,
    PTL_DEVICE_RED_MIN,
    PTL_DEVICE_RED_ARGMAX,    /* out0 the index, or (out0 values, out1 indices) */
    PTL_DEVICE_RED_ARGMIN,
    PTL_DEVICE_RED_VAR,       /* out0 var (std: take_sqrt), out1 the mean or NULL */
    PTL_DEVICE_RED_NORM,      /* p: the order */
    PTL_DEVICE_RED_LSE,       /* logsumexp: the running max and the sum of exps below it */
    PTL_DEVICE_RED_ALL,       /* all, any, count_nonzero: the elements' truth in the */
    PTL_DEVICE_RED_ANY,       /* integer state, stored as bool, uint8 or int64 */
    PTL_DEVICE_RED_COUNT_NONZERO,
    PTL_DEVICE_RED_COUNT
} PtlDeviceReduceKind;

/* A reduction's geometry, reduce.c's plan: kept dims in output order (one output element per
 * index, outputs contiguous), reduced dims outermost first (merged where their strides line
 * up; at least one, the last is the innermost run), input strides in bytes.  Reduced index r
 * is row-major over the reduced dims (argmax's flattened index). */
typedef struct PtlDeviceReduceArgs {
    int32_t kind, dtype, use_int;   /* use_int: integer or bool input, exact int64 state */
    int32_t odt0, odt1;
    const char *in;
    char *out0, *out1;
    int32_t nk, nr;
    int64_t ksize[PTL_MAX_DIMS], kstride[PTL_MAX_DIMS];
    int64_t rsize[PTL_MAX_DIMS], rstride[PTL_MAX_DIMS];
    int64_t nout, R;
    double p, correction;
    int32_t take_sqrt;
} PtlDeviceReduceArgs;

/* softmax / log_softmax over the middle dim of a contiguous [outer, n, inner] float32 or
 * float64 tensor (backward: in is grad_output, y the forward's output). */
typedef struct PtlDeviceSoftmaxArgs {
    char *out;
    const char *in, *y;
    int64_t outer, n, inner;
    int32_t log, dtype;
} PtlDeviceSoftmaxArgs;

/* The scans along a dim (scan.c: cumsum, cumprod; sort.c: cummax, cummin, logcumsumexp):
 * nlines lines of len elements along dim of src (ndim sizes, strides in elements: sst
 * src's, ost out's and idx's; dim's size is len).  SUM, PROD: out[k] = src[0] (+|*) ...
 * src[k] in line order, accumulated in double (float dtypes, rounded to dtype at each
 * store) or wrapping uint64 (use_int: integer and bool dtypes), as scan.c's lines.  MAX,
 * MIN: out[k] the running extremum (its bits), idx[k] its index (ties and NaN move it to
 * the later element), as sort.c's cum_extreme.  LOGSUMEXP: out[k] = log(sum exp src[0..k])
 * in double, as sort.c's log_cum_sum_exp.  0-dim: ndim 0, one line of one element. */
enum { PTL_DEVICE_SCAN_SUM, PTL_DEVICE_SCAN_PROD, PTL_DEVICE_SCAN_MAX, PTL_DEVICE_SCAN_MIN,
       PTL_DEVICE_SCAN_LOGSUMEXP };
typedef struct PtlDeviceScanArgs {
    int32_t dtype, use_int, kind, ndim, dim;
    const char *src;
    char *out;
    int64_t *idx;
    int64_t sizes[PTL_MAX_DIMS], sst[PTL_MAX_DIMS], ost[PTL_MAX_DIMS];
    int64_t nlines, len, itemsize;
} PtlDeviceScanArgs;

/* Set by the CUDA backend (NULL until then); 0, or -1 with an error set. */
extern int (*ptl_device_reduce_hook)(const PtlDeviceReduceArgs *a);
extern int (*ptl_device_softmax_hook)(const PtlDeviceSoftmaxArgs *a);
extern int (*ptl_device_scan_hook)(const PtlDeviceScanArgs *a);
/* 1 while the tests emulate the CUDA kernels: CPU tensors take the hooks too. */
extern int ptl_device_reduce_emulation;

#ifdef __cplusplus
}
#endif
#endif
