/* device_index.h -- how scatter_gather.c hands gather and the scatter family, index.c
 * advanced indexing and the index_* family, and join.c cat, to the CUDA backend's kernels
 * without including it: the backend (src/cuda/index_plan.c) sets the hooks.  The argument
 * checks, the output and the copy of a functional op's self stay the CPU kernel's; what
 * arrives here is the geometry (index.c: its offset tables, built on the host); sort.c hands
 * sort, argsort and topk over the same way.  See Note [CUDA index and sort kernels] in
 * src/cuda/index_plan.h and Note [CUDA sort] in src/cuda/sort_plan.h. */
#ifndef PTL_ATEN_NATIVE_DEVICE_INDEX_H
#define PTL_ATEN_NATIVE_DEVICE_INDEX_H

#include <stdint.h>

#include "../../c10/macros.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ORDER Reduce: index_impl.h's enum (scatter_gather.c asserts it) */
enum {
    PTL_DEVICE_IDX_NONE,   /* a copy: the last value wins */
    PTL_DEVICE_IDX_SUM,
    PTL_DEVICE_IDX_PROD,
    PTL_DEVICE_IDX_MEAN,
    PTL_DEVICE_IDX_AMAX,
    PTL_DEVICE_IDX_AMIN,
};

/* gather (scatter 0): other[i] = self[i with i[dim] := index[i]];
 * scatter (scatter 1): self[i with i[dim] := index[i]] (reduce)= other[i], or value when
 * other is NULL; for every coordinate i of index (ndim dims, a 0-dim index as [1]).
 * Strides in elements of itemsize bytes: ist index's, sst self's (sst[dim] moves along
 * dim), ost other's; self_size is self's size along dim.  index is int32 or int64. */
typedef struct PtlDeviceScatterArgs {
    int32_t scatter, dtype, index_is64, reduce, include_self, ndim, dim;
    const char *index;
    char *self, *other;
    int64_t sizes[PTL_MAX_DIMS], ist[PTL_MAX_DIMS], sst[PTL_MAX_DIMS], ost[PTL_MAX_DIMS];
    int64_t numel, self_size, self_span, itemsize;
    int64_t value;             /* the scalar's bytes in dtype when other is NULL */
} PtlDeviceScatterArgs;

/* index.c's walk (Note [Advanced indexing]) over its host tables: self element
 * off_before[i] + off[b] + off_after[j] (elements) for i < nbefore, b < bnumel, j < nafter.
 * Gather (scatter 0): other[(i bnumel + b) nafter + j] = that element (other contiguous).
 * Scatter: that element (reduce, NONE or SUM)= alpha other[...], other broadcast to the
 * result's out_dim sizes (strides vst, elements), or value when other is NULL. */
typedef struct PtlDeviceAdvIndexArgs {
    int32_t scatter, dtype, reduce, out_dim;
    char *self, *other;
    const int64_t *off, *off_before, *off_after;
    int64_t bnumel, nbefore, nafter, itemsize;
    int64_t out_sizes[PTL_MAX_DIMS], vst[PTL_MAX_DIMS];
    double alpha;
    int64_t value;             /* the value's bytes in dtype when other is NULL */
} PtlDeviceAdvIndexArgs;

/* cat's inputs, one row of a table per non-empty input: its data (in the output's dtype),
 * its first index along dim in the output and its strides (elements) */
typedef struct PtlDeviceCatInput {
    const char *data;
    int64_t start;
    int64_t strides[PTL_MAX_DIMS];
} PtlDeviceCatInput;

/* out (contiguous, sizes) = the inputs (ninputs, by start) joined along dim */
typedef struct PtlDeviceCatArgs {
    int32_t ndim, dim;
    char *out;
    const PtlDeviceCatInput *inputs;   /* a host table: the backend copies it to the device */
    int64_t ninputs, numel, itemsize;
    int64_t sizes[PTL_MAX_DIMS];
} PtlDeviceCatArgs;

/* sort, argsort and topk (sort.c's lanes): lane l < nlanes starts at base + the offsets of
 * its index over the other nd dims (osize / ostride, bytes) and has len elements st bytes
 * apart.  Its first nsel elements in stable ascending order of the sort keys (Note [Sort
 * keys] in sort.c; descending inverts them) go to the contiguous outputs: the j-th at
 * ((l / inner) nsel + j) inner + l % inner, the value in vals (NULL: argsort), the lane
 * index in idx. */
typedef struct PtlDeviceSortArgs {
    int32_t dtype, descending, nd;
    const char *base;
    char *vals;
    int64_t *idx;
    int64_t len, st, nlanes, nsel, inner, itemsize;
    int64_t osize[PTL_MAX_DIMS], ostride[PTL_MAX_DIMS];
} PtlDeviceSortArgs;

/* where (ternary.c) and masked_fill (index.c), kind SEL_WHERE: out = cond ? if_true : if_false,
 * element by element over a TensorIterator's geometry (ndim dims, dim 0 innermost, byte
 * strides: out's, then the operands'), elements of itemsize bytes; data[0..2] the condition
 * (a bool), the value if true and if false, or NULL for an operand passed by value (its
 * bytes in value[t]: masked_fill's value, a broadcast scalar).  The comparisons and logical
 * ops (compare.c), kind SEL_EQ to SEL_XOR: out (bool) = data[0] op data[1], operands of
 * dtype. */
enum { PTL_DEVICE_SEL_WHERE, PTL_DEVICE_SEL_EQ, PTL_DEVICE_SEL_NE, PTL_DEVICE_SEL_LT,
       PTL_DEVICE_SEL_LE, PTL_DEVICE_SEL_GT, PTL_DEVICE_SEL_GE, PTL_DEVICE_SEL_AND,
       PTL_DEVICE_SEL_OR, PTL_DEVICE_SEL_XOR };
typedef struct PtlDeviceSelectArgs {
    int32_t kind, dtype, ndim, itemsize;
    char *out;
    const char *data[3];
    int64_t sizes[PTL_MAX_DIMS], strides[4][PTL_MAX_DIMS];
    int64_t numel, value[3];
} PtlDeviceSelectArgs;

/* take (index.c): out[j] (contiguous) = self's element at row-major position index[j]
 * (negative: from the end) for j < inumel, index's elements in row-major order; sizes and
 * strides (elements) of self (sdim dims) and index (idim dims). */
typedef struct PtlDeviceTakeArgs {
    int32_t sdim, idim;
    const char *self;
    const int64_t *index;
    char *out;
    int64_t ssizes[PTL_MAX_DIMS], sst[PTL_MAX_DIMS], isizes[PTL_MAX_DIMS], ist[PTL_MAX_DIMS];
    int64_t snumel, inumel, itemsize;
} PtlDeviceTakeArgs;

/* take's error for index v of a self of n elements (the CPU loop's and the device's) */
#define PTL_TAKE_INDEX_ERROR \
    "out of range: tried to access index %lld on a tensor of %lld elements."

/* shape.c's data movers (Note [Gather by offset tables] there).  GATHER (flip, roll, rot90,
 * repeat): out (contiguous, sizes) element i0..ik = *(src + sum_d tab[start[d] + i_d]),
 * tab a host table of ntab byte offsets.  TRIANGLE (tril, triu): out's elements (sizes,
 * byte strides) that tril (lower) or triu drops are zeroed: column j of row i (the last two
 * dims) when j - i > diagonal (tril) or j - i < diagonal (triu). */
enum { PTL_DEVICE_SHAPE_GATHER, PTL_DEVICE_SHAPE_TRIANGLE };
typedef struct PtlDeviceShapeArgs {
    int32_t kind, ndim, lower;
    const char *src;
    char *out;
    const int64_t *tab;
    int64_t sizes[PTL_MAX_DIMS], start[PTL_MAX_DIMS], strides[PTL_MAX_DIMS];
    int64_t numel, ntab, itemsize, diagonal;
} PtlDeviceShapeArgs;

/* Set by the CUDA backend (NULL until then); 0, or -1 with an error set (scatter_gather.c's
 * hook: a bad index, the CPU kernel's error; index.c checks its indices on the host).  Run
 * for CUDA tensors and, while ptl_device_reduce_emulation is on, for CPU tensors too. */
extern int (*ptl_device_scatter_hook)(const PtlDeviceScatterArgs *a);
extern int (*ptl_device_adv_index_hook)(const PtlDeviceAdvIndexArgs *a);
extern int (*ptl_device_cat_hook)(const PtlDeviceCatArgs *a);
extern int (*ptl_device_sort_hook)(const PtlDeviceSortArgs *a);
extern int (*ptl_device_select_hook)(const PtlDeviceSelectArgs *a);
/* take's: a bad index, the CPU loop's IndexError for the first one */
extern int (*ptl_device_take_hook)(const PtlDeviceTakeArgs *a);
extern int (*ptl_device_shape_hook)(const PtlDeviceShapeArgs *a);

#ifdef __cplusplus
}
#endif
#endif
