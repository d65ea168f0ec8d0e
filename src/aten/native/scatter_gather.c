/* scatter_gather.c -- gather, scatter, scatter_add and scatter_reduce: the index has self's
 * number of dimensions, and each index element names self's coordinate along dim.  Mirrors
 * ATen/native/TensorAdvancedIndexing.cpp (gather / scatter), ATen/native/
 * ScatterGatherChecks.h and ATen/native/cpu/ScatterGatherKernel.cpp. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/error.h"
#include "../loops.h"
#include "device_index.h"
#include "device_reduce.h"
#include "index_complex.h"
#include "index_impl.h"
#include "native.h"

_Static_assert((int)RED_NONE == PTL_DEVICE_IDX_NONE && (int)RED_SUM == PTL_DEVICE_IDX_SUM &&
                   (int)RED_PROD == PTL_DEVICE_IDX_PROD && (int)RED_MEAN == PTL_DEVICE_IDX_MEAN &&
                   (int)RED_AMAX == PTL_DEVICE_IDX_AMAX && (int)RED_AMIN == PTL_DEVICE_IDX_AMIN,
               "ORDER Reduce");

int (*ptl_device_scatter_hook)(const PtlDeviceScatterArgs *a);

/* d[j] += v[j] * alpha (j < n) for index_add_'s rows (Note [Contiguous index rows] in
 * index.c), float32 (f4) or float64; float32 adds in double and rounds once, or with alpha 1
 * adds in float, which rounds the exact sum once too (double holds twice float's precision
 * and more): the same bits at twice the vector width.  Loop clones: the baseline build's
 * 16-byte vectors left index_add of 1024 rows of 1024 float32 at 0.9x PyTorch's time. */
PTL_LOOP_CLONES void
index_add_row(char *d, const char *v, int64_t n, int f4, double alpha)
{
    if (f4 && alpha == 1.0) {
        float *o = (float *)d;
        const float *a = (const float *)v;
        for (int64_t j = 0; j < n; j++) {
            o[j] += a[j];
        }
    }
    else if (f4) {
        float *o = (float *)d;
        const float *a = (const float *)v;
        for (int64_t j = 0; j < n; j++) {
            o[j] = (float)((double)o[j] + (double)a[j] * alpha);
        }
    }
    else {
        double *o = (double *)d;
        const double *a = (const double *)v;
        for (int64_t j = 0; j < n; j++) {
            o[j] = o[j] + a[j] * alpha;
        }
    }
}

/* The loop of index_add_row_complex: o and b never overlap (index_add_ refuses a source
 * that shares self's memory), and with restrict the pairs vectorize (without it, index_add
 * with alpha 2 - 1j of 512 rows of 512 complex64 ran at 0.79-0.87x PyTorch's time) */
#define ROW_ADD_COMPLEX_LOOP(R)                                                             \
    do {                                                                                    \
        R *restrict o = (R *)d, ar = (R)alpha, ai = (R)alpha_im;                            \
        const R *restrict b = (const R *)v;                                                 \
        for (int64_t j = 0; j < n; j++) {                                                   \
            R re = b[2 * j] * ar - b[2 * j + 1] * ai, im = b[2 * j] * ai + b[2 * j + 1] * ar; \
            o[2 * j] += re;                                                                 \
            o[2 * j + 1] += im;                                                             \
        }                                                                                   \
    } while (0)

PTL_LOOP_CLONES void
index_add_row_complex(char *d, const char *v, int64_t n, int c8, double alpha, double alpha_im)
{
    if (c8) {
        ROW_ADD_COMPLEX_LOOP(double);
    }
    else {
        ROW_ADD_COMPLEX_LOOP(float);
    }
}
#undef ROW_ADD_COMPLEX_LOOP

/* Note [Index row walk]
 * ~~~~~~~~~~~~~~~~~~~~~
 * gather and scatter visit index in row-major order, one row along index's last dim at a
 * time.  An outer counter keeps the element offsets of the row's start in index, self (its
 * coordinate along dim zeroed) and other (src, or gather's out); within the row, a chunk of
 * at most ROW_CHUNK index values is checked and turned into self offsets relative to the row
 * start, off[j] = index[j] * self.stride(dim) + j * self.stride(last), and a typed loop then
 * moves (put_row) or accumulates the chunk; gather folds the check into its move
 * (gather_row), since a second pass through off[] costs as much as the move, except along a
 * contiguous last dim with int64 indices, where the check is a vectorized pass over the
 * index itself and the move has no select (gather_unit_i64).  Nothing of
 * index's size is allocated, the visiting order (hence the order in which scatter_add
 * accumulates) is the row-major order of index as before, and the range check sits inside
 * the walk as in PyTorch's cpu_scatter_gather_base_kernel: an in-place scatter that meets a
 * bad index has already written the chunks before it.  1024 x 1024 float32, dim = 1, one
 * thread: gather 8.4 -> 1.4 ms, scatter_add 19.6 -> 1.7 ms, about PyTorch's times (the
 * offset tables this replaces were three int64 arrays of index's size). */
enum { ROW_CHUNK = 256 };

typedef struct RowWalk {
    const char *index;               /* index data at the current row */
    PtlDtype index_dtype;
    int nd;                          /* the outer dims: all of index's but the last */
    int64_t sizes[PTL_MAX_DIMS], pos[PTL_MAX_DIMS];
    int64_t st[3][PTL_MAX_DIMS];     /* outer strides (elements): index, self, other */
    int64_t off[3];                  /* element offsets of the current row's start */
    int64_t inner[3];                /* strides along the row */
    int64_t n, rows;                 /* row length, number of rows */
    int64_t step, size, dim;         /* self's stride and size along dim; dim for errors */
} RowWalk;

/* Sets w up for index (any layout; 0-dim counts as [1]) against self along dim; `other`
 * strides follow index's coordinates (all 0 for a scalar src). */
static void
row_walk_init(RowWalk *w, const PtlTensorImpl *self, int64_t dim, const PtlTensorImpl *index,
              const int64_t *other_strides)
{
    int d1 = index->dim > 0 ? index->dim : 1, last = d1 - 1;
    memset(w, 0, sizeof(*w));
    w->index = ptl_tensor_data(index);
    w->index_dtype = index->dtype;
    w->nd = last;
    w->n = index->dim ? index->sizes[last] : 1;
    w->rows = w->n > 0 ? index->numel / w->n : 0;
    w->step = self->dim ? self->strides[dim] : 0;
    w->size = self->dim ? self->sizes[dim] : 1;
    w->dim = dim;
    for (int d = 0; d < d1; d++) {
        int64_t ist = index->dim ? index->strides[d] : 0;
        int64_t sst = d == dim || !self->dim ? 0 : self->strides[d];
        int64_t *slot[3] = {&w->st[0][d], &w->st[1][d], &w->st[2][d]};
        if (d == last) {
            slot[0] = &w->inner[0];
            slot[1] = &w->inner[1];
            slot[2] = &w->inner[2];
        }
        else {
            w->sizes[d] = index->sizes[d];
        }
        *slot[0] = ist;
        *slot[1] = sst;
        *slot[2] = other_strides[d];
    }
}

static void
row_walk_next(RowWalk *w)
{
    for (int d = w->nd - 1; d >= 0; d--) {
        for (int t = 0; t < 3; t++) {
            w->off[t] += w->st[t][d];
        }
        if (++w->pos[d] < w->sizes[d]) {
            return;
        }
        for (int t = 0; t < 3; t++) {
            w->off[t] -= w->pos[d] * w->st[t][d];
        }
        w->pos[d] = 0;
    }
}

/* The self offsets of index[j0 .. j0 + m) of the current row relative to the row start,
 * off[j] = index[j0 + j] * step + (j0 + j) * inner self stride: the index data itself when
 * that is the identity (a contiguous int64 row into self's contiguous last dim), else `buf`
 * filled.  NULL with PyTorch's error naming the first index outside [0, size).  The check
 * is folded into the sign bit of `bad` so that the loops stay branch-free and vectorize with
 * plain 64-bit subtractions and ors: v and size - 1 - v are both at least 0 exactly when v
 * is in range (a flag from (uint64_t)v >= size kept the identity case's loop scalar, as long
 * as scatter_add's own loop: 0.65x PyTorch's time for 512 x 512); a bad chunk is scanned
 * again. */
#define INDEX_ROW_LOOP(T)                                                                   \
    for (int64_t j = 0; j < m; j++) {                                                       \
        int64_t v = ((const T *)p)[j * ist];                                                \
        bad |= (uint64_t)v | (last - (uint64_t)v);                                          \
        buf[j] = v * step + (j0 + j) * sin;                                                 \
    }

static const int64_t *
row_walk_offsets(const RowWalk *w, int64_t *buf, int64_t j0, int64_t m)
{
    int is64 = w->index_dtype == PTL_DTYPE_INT64;
    const char *p = w->index + (w->off[0] + j0 * w->inner[0]) * (is64 ? 8 : 4);
    int64_t ist = w->inner[0], sin = w->inner[1], step = w->step;
    /* locals: buf[] stores cannot alias them */
    uint64_t size = (uint64_t)w->size, last = size - 1, bad = 0;
    const int64_t *off = buf;
    if (is64 && ist == 1 && step == 1 && sin == 0) {
        off = (const int64_t *)p;
        for (int64_t j = 0; j < m; j++) {
            bad |= (uint64_t)off[j] | (last - (uint64_t)off[j]);
        }
    }
    else if (is64) {
        INDEX_ROW_LOOP(int64_t)
    }
    else {
        INDEX_ROW_LOOP(int32_t)
    }
    for (int64_t j = 0; bad >> 63 && j < m; j++) {
        int64_t v = is64 ? ((const int64_t *)p)[j * ist] : ((const int32_t *)p)[j * ist];
        if ((uint64_t)v >= size) {
            ptl_error_set(PTL_ERR_RUNTIME, "index %lld is out of bounds for dimension %lld with "
                                           "size %lld",
                          (long long)v, (long long)w->dim, (long long)w->size);
            return NULL;
        }
    }
    return off;
}
#undef INDEX_ROW_LOOP

/* One chunk of a gather row fused with its index check (Note [Index row walk]):
 * out[j * ostride] = self[index[j0 + j] * step + (j0 + j) * sin].
 * A bad index moves self's first element instead and makes it return 1; gather's out is
 * then discarded. */
#define GATHER_ROW_LOOP(SZ, I)                                                              \
    for (int64_t j = 0; j < m; j++) {                                                       \
        int64_t v = ((const I *)p)[j * ist];                                                \
        int ok = (uint64_t)v < size;                                                        \
        bad |= !ok;                                                                         \
        memcpy(out + j * ostride * (SZ), self + (ok ? v * step + (j0 + j) * sin : 0) * (SZ), \
               (SZ));                                                                       \
    }
#define GATHER_ROW_SWITCH(I)                                                                \
    switch (item) {                                                                         \
    case 1: GATHER_ROW_LOOP(1, I) break;                                                    \
    case 2: GATHER_ROW_LOOP(2, I) break;                                                    \
    case 4: GATHER_ROW_LOOP(4, I) break;                                                    \
    case 8: GATHER_ROW_LOOP(8, I) break;                                                    \
    default: GATHER_ROW_LOOP(16, I) break;   /* complex128 */                               \
    }

/* The chunk with its strides as arguments: always inlined, so that a call with constant
 * strides compiles to a loop of its own */
static inline __attribute__((always_inline)) int
gather_chunk(const char *p, int is64, char *out, int64_t ostride, const char *self,
             int64_t ist, int64_t sin, int64_t step, uint64_t size, int64_t j0, int64_t m,
             size_t item)
{
    int bad = 0;
    if (is64) {
        GATHER_ROW_SWITCH(int64_t)
    }
    else {
        GATHER_ROW_SWITCH(int32_t)
    }
    return bad;
}

/* A chunk of x.gather(-1, idx) with int64 indices: the indices checked first, in a pass
 * that vectorizes (row_walk_offsets' sign-bit test), then moved without a check or a select
 * per element: 6 instructions an element where the fused loop took 12 (1024 x 1024 float32,
 * one thread: 0.77-0.98x PyTorch's time fused).  The move goes four elements an iteration:
 * one at a time, its five instructions ran at 2.5 or 3.5 cycles an element by where the
 * linker happened to put the loop (gather(1, idx2) of 1024 x 1024 float32 500 or 730 us on
 * Zen 4, the same code on two builds, 0.87-0.92x PyTorch's time on main's; a stand-alone
 * copy moved in 8-byte steps: 495-900 us, unrolled 430-570).  complex128 moves its 16
 * bytes as one element here too (through gather_chunk's select, gather(1, idx) of 512 x 512
 * complex128 ran at 0.77-1.06x PyTorch's time).  1 when an index is outside [0, size), as
 * gather_chunk. */
#define GATHER_UNIT_LOOP(T)                                                                 \
    for (; j + 4 <= m; j += 4) {                                                            \
        ((T *)out)[j] = ((const T *)self)[idx[j]];                                          \
        ((T *)out)[j + 1] = ((const T *)self)[idx[j + 1]];                                  \
        ((T *)out)[j + 2] = ((const T *)self)[idx[j + 2]];                                  \
        ((T *)out)[j + 3] = ((const T *)self)[idx[j + 3]];                                  \
    }                                                                                       \
    for (; j < m; j++) {                                                                    \
        ((T *)out)[j] = ((const T *)self)[idx[j]];                                          \
    }                                                                                       \
    break
static PTL_LOOP_CLONES int
gather_unit_i64(const int64_t *idx, char *out, const char *self, uint64_t size, int64_t m,
                size_t item)
{
    uint64_t last = size - 1, bad = 0;
    for (int64_t j = 0; j < m; j++) {
        bad |= (uint64_t)idx[j] | (last - (uint64_t)idx[j]);
    }
    if (bad >> 63) {
        return 1;
    }
    int64_t j = 0;
    switch (item) {
    case 1: GATHER_UNIT_LOOP(uint8_t);
    case 2: GATHER_UNIT_LOOP(uint16_t);
    case 4: GATHER_UNIT_LOOP(uint32_t);
    case 8: GATHER_UNIT_LOOP(uint64_t);
    default: GATHER_UNIT_LOOP(Elem16);
    }
    return 0;
}
#undef GATHER_UNIT_LOOP

static int
gather_row(const RowWalk *w, char *out, int64_t ostride, const char *self, int64_t j0,
           int64_t m, size_t item)
{
    int is64 = w->index_dtype == PTL_DTYPE_INT64;
    const char *p = w->index + (w->off[0] + j0 * w->inner[0]) * (is64 ? 8 : 4);
    int64_t ist = w->inner[0], sin = w->inner[1], step = w->step;
    uint64_t size = (uint64_t)w->size;
    if (ist == 1 && ostride == 1 && step == 1 && sin == 0) {
        if (is64) {
            return gather_unit_i64((const int64_t *)p, out, self, size, m, item);
        }
        /* along a contiguous last dim (x.gather(-1, idx)): unit strides, which the compiler
         * keeps to a load, a select and a move */
        return gather_chunk(p, is64, out, 1, self, 1, 0, 1, size, j0, m, item);
    }
    return gather_chunk(p, is64, out, ostride, self, ist, sin, step, size, j0, m, item);
}
#undef GATHER_ROW_SWITCH
#undef GATHER_ROW_LOOP

static int
index_dtype_ok(const PtlTensorImpl *index)
{
    return index->dtype == PTL_DTYPE_INT64 || index->dtype == PTL_DTYPE_INT32;
}

/* gather (scatter 0: other is out) or a scatter (other is src) through the device's
 * kernels (device_index.h; Note [CUDA index and sort kernels] in src/cuda/index_plan.h)
 * when self is a CUDA tensor or the kernels are emulated: 0 when done, -1 with the error
 * set, 1 when the CPU walk is to run. */
static int
scatter_gather_on_device(int scatter, PtlTensorImpl *self, int64_t dim, PtlTensorImpl *index,
                         PtlTensorImpl *other, Reduce r, int include_self)
{
    PtlDeviceScatterArgs a;
    int by_value = scatter && other->dim == 0 && other->device.type == PTL_DEVICE_CPU;
    if ((self->device.type != PTL_DEVICE_CUDA && !ptl_device_reduce_emulation) ||
        ptl_device_scatter_hook == NULL || ptl_tensor_is_meta(self)) {
        return 1;
    }
    if (same_device(self, index) < 0 || (!by_value && same_device(self, other) < 0)) {
        return -1;
    }
    memset(&a, 0, sizeof(a));
    a.scatter = scatter;
    a.dtype = self->dtype;
    a.index_is64 = index->dtype == PTL_DTYPE_INT64;
    a.reduce = (int32_t)r;
    a.include_self = include_self;
    a.ndim = index->dim > 0 ? index->dim : 1;
    a.dim = (int32_t)dim;
    a.index = ptl_tensor_data(index);
    a.self = ptl_tensor_data(self);
    a.other = by_value ? NULL : ptl_tensor_data(other);
    a.numel = index->numel;
    a.self_size = self->dim ? self->sizes[dim] : 1;
    a.self_span = 1;
    a.itemsize = (int64_t)ptl_tensor_itemsize(self);
    for (int d = 0; d < self->dim; d++) {
        a.self_span += (self->sizes[d] - 1) * self->strides[d];
    }
    for (int d = 0; d < a.ndim; d++) {
        a.sizes[d] = index->dim ? index->sizes[d] : 1;
        a.ist[d] = index->dim ? index->strides[d] : 0;
        a.sst[d] = self->dim ? self->strides[d] : 0;
        a.ost[d] = other->dim ? other->strides[d] : 0;
    }
    if (by_value) {
        memcpy(&a.value, ptl_tensor_data(other), (size_t)a.itemsize);
    }
    return ptl_device_scatter_hook(&a);
}

/* gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False):
 *   out[i][j][k] = self[index[i][j][k]][j][k] (dim 0); out has index's shape */
static int
gather_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *index = s[2].u.t, *out;
    int64_t dim = s[1].u.i;
    char b1[256], b2[256];
    int64_t buf[ROW_CHUNK];
    RowWalk w;
    if (ptl_wrap_dim(&dim, self->dim > 0 ? self->dim : 1) < 0) {
        return -1;
    }
    if (!index_dtype_ok(index)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "gather(): Expected dtype int32/int64 for index");
    }
    if ((index->dim > 0 ? index->dim : 1) != (self->dim > 0 ? self->dim : 1)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Index tensor must have the same number of "
                                              "dimensions as input tensor");
    }
    for (int d = 0; d < index->dim && self->dim; d++) {
        if (d != dim && index->sizes[d] > self->sizes[d]) {
            ptl_format_sizes(b1, sizeof(b1), index->dim, index->sizes);
            ptl_format_sizes(b2, sizeof(b2), self->dim, self->sizes);
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "Size does not match at dimension %d expected index %s to be no "
                                 "larger than self %s apart from dimension %lld",
                                 d, b1, b2, (long long)dim);
        }
    }
    if ((out = ptl_empty(index->dim, index->sizes, self->dtype, self->device)) == NULL) {
        return -1;
    }
    int rc = scatter_gather_on_device(0, self, dim, index, out, RED_NONE, 1);
    if (rc <= 0) {
        if (rc < 0) {
            ptl_decref(out);
            return -1;
        }
        s[0] = ptl_iv_tensor(out);
        return 0;
    }
    size_t item = ptl_tensor_itemsize(self);
    const char *src = ptl_tensor_data(self);
    char *dst = ptl_tensor_data(out);
    /* out[i][j] = self[row start + index[i][j] * step + j * sin] (Note [Index row walk]) */
    row_walk_init(&w, self, dim, index, out->strides);
    for (int64_t r = 0; r < w.rows; r++, row_walk_next(&w)) {
        for (int64_t j0 = 0; j0 < w.n; j0 += ROW_CHUNK) {
            int64_t m = w.n - j0 < ROW_CHUNK ? w.n - j0 : ROW_CHUNK;
            if (gather_row(&w, dst + (w.off[2] + j0 * w.inner[2]) * (int64_t)item, w.inner[2],
                           src + w.off[1] * (int64_t)item, j0, m, item)) {
                row_walk_offsets(&w, buf, j0, m);   /* sets the error */
                ptl_decref(out);
                return -1;
            }
        }
    }
    s[0] = ptl_iv_tensor(out);
    return 0;
}

static Reduce
parse_reduce(const char *name, int two, int *bad)
{
    *bad = 0;
    if (two) {
        if (strcmp(name, "sum") == 0) {
            return RED_SUM;
        }
        if (strcmp(name, "prod") == 0) {
            return RED_PROD;
        }
        if (strcmp(name, "mean") == 0) {
            return RED_MEAN;
        }
        if (strcmp(name, "amax") == 0) {
            return RED_AMAX;
        }
        if (strcmp(name, "amin") == 0) {
            return RED_AMIN;
        }
    }
    else {
        if (strcmp(name, "add") == 0) {
            return RED_SUM;
        }
        if (strcmp(name, "multiply") == 0) {
            return RED_PROD;
        }
    }
    *bad = 1;
    return RED_NONE;
}

/* One chunk of a scatter row: self[off[j]] (r)= src[j * sstride] for j < m, in order (self
 * is the row start).  count (offset like self, NULL unless mean or !include_self) counts the
 * values each element receives; the first one replaces self's value when !include_self.
 * Float folds without counts do not come here (fold_checked: sums add in the stored type,
 * which rounds as combine()'s double add does, a float32 product is exact in double, so one
 * rounding either way, and maxima and minima keep combine()'s NaN rule; through combine()
 * the amax of 1e6 values had been 0.17x PyTorch's time, issue 16).  Float means and
 * !include_self, which count, take typed loops here (0.35x PyTorch's time for the mean of
 * 1e6 float32 values into 1000 through combine()). */
static void
scatter_row(char *self, const int64_t *off, const char *src, int64_t sstride, int64_t m,
            PtlDtype dt, Reduce r, int include_self, int64_t *count)
{
    size_t item = ptl_dtype_itemsize(dt);
    if (count == NULL && r == RED_NONE) {
        put_row(self, off, src, sstride, m, item);
        return;
    }
    /* with counts (mean, !include_self): the first value of an element replaces it when
     * !include_self, the rest fold in as above (a mean sums) */
#define SCATTER_COUNT_LOOP(T, EXPR)                                                         \
    for (int64_t j = 0; j < m; j++) {                                                       \
        int64_t k = off[j];                                                                 \
        T *d = (T *)self + k, a = *d, b = ((const T *)src)[j * sstride];                    \
        *d = !include_self && count[k] == 0 ? b : (EXPR);                                   \
        count[k]++;                                                                         \
    }
#define SCATTER_COUNT_TYPE(T)                                                               \
    switch (r) {                                                                            \
    case RED_SUM:                                                                           \
    case RED_MEAN: SCATTER_COUNT_LOOP(T, a + b) return;                                     \
    case RED_PROD: SCATTER_COUNT_LOOP(T, a * b) return;                                     \
    case RED_AMAX: SCATTER_COUNT_LOOP(T, (a != a || a > b) ? a : b) return;                 \
    case RED_AMIN: SCATTER_COUNT_LOOP(T, (a != a || a < b) ? a : b) return;                 \
    default: break;                                                                         \
    }
    /* complex sums and products as pairs of R (index_complex.h's arithmetic, typed: through
     * combine_complex, scatter_add of 512 x 512 complex128 took 4.3x PyTorch's time) */
#define SCATTER_COMPLEX_LOOP(R)                                                             \
    for (int64_t j = 0; j < m; j++) {                                                       \
        int64_t k = off[j];                                                                 \
        R *d = (R *)self + 2 * k;                                                           \
        const R *b = (const R *)src + 2 * j * sstride;                                      \
        if (count != NULL && !include_self && count[k] == 0) {                              \
            d[0] = b[0];                                                                    \
            d[1] = b[1];                                                                    \
        }                                                                                   \
        else if (r == RED_PROD) {                                                           \
            R re = d[0] * b[0] - d[1] * b[1];                                               \
            d[1] = d[0] * b[1] + d[1] * b[0];                                               \
            d[0] = re;                                                                      \
        }                                                                                   \
        else {                                                                              \
            d[0] += b[0];                                                                   \
            d[1] += b[1];                                                                   \
        }                                                                                   \
        if (count != NULL) {                                                                \
            count[k]++;                                                                     \
        }                                                                                   \
    }                                                                                       \
    return;
    if (dt == PTL_DTYPE_COMPLEX64) {
        SCATTER_COMPLEX_LOOP(float)
    }
    if (dt == PTL_DTYPE_COMPLEX128) {
        SCATTER_COMPLEX_LOOP(double)
    }
#undef SCATTER_COMPLEX_LOOP
    if (count != NULL && dt == PTL_DTYPE_FLOAT32) {
        SCATTER_COUNT_TYPE(float)
    }
    if (count != NULL && dt == PTL_DTYPE_FLOAT64) {
        SCATTER_COUNT_TYPE(double)
    }
#undef SCATTER_COUNT_TYPE
#undef SCATTER_COUNT_LOOP
    for (int64_t j = 0; j < m; j++) {
        char *d = self + off[j] * (int64_t)item;
        const char *v = src + j * sstride * (int64_t)item;
        if (r == RED_NONE || (count != NULL && !include_self && count[off[j]] == 0)) {
            copy_elem(d, v, item);
        }
        else {
            combine(d, v, dt, r, 1.0);
        }
        if (count != NULL) {
            count[off[j]]++;
        }
    }
}

/* Note [Checked scatter folds]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A float32/float64 scatter that folds without counts (sum, prod, amax, amin with
 * include_self) checks each index in its own loop, a branch that is never taken until a bad
 * index, as PyTorch's cpu_scatter_gather_base_kernel does, instead of a checking pass over
 * each chunk first (row_walk_offsets).  That pass was half of the 2x between the fold loop
 * timed alone and inside the op (zeros(1000).scatter_reduce(0, I, A, amax) of 1e6 float32,
 * one thread): its OR of every index into one accumulator is a chain of dependent
 * instructions, and nothing overlaps it with the fold, whose loads of self[index] wait on the
 * loads of the index.  The other half was the layout of amax/amin: written as a select,
 * gcc keeps the value (the common case, once an element holds a large value) through a
 * taken jump to a block out of the loop and back, and the loop ran at 0.85 ms where the same
 * loop falling through when the value stays ran at 0.58; PTL_UNLIKELY on the store makes it
 * fall through for either.  1.07 -> 0.67 ms (the fold alone, outside the op: 0.57-0.59).
 * The loop stops at the first bad index, which row_walk_offsets then reports; the values
 * before it are in, as in PyTorch.  The complex sums and products fold the same way
 * (fold_complex_row). */
#define CHECKED_FOLD_LOOP(T, I, STMT)                                                       \
    for (int64_t j = 0; j < m; j++) {                                                       \
        int64_t v = ((const I *)p)[j * ist];                                                \
        if ((uint64_t)v >= size) {                                                          \
            return j;                                                                       \
        }                                                                                   \
        T *d = (T *)self + v * step + (j0 + j) * sin, a = *d;                               \
        T b = ((const T *)src)[j * sstride];                                                \
        STMT;                                                                               \
    }                                                                                       \
    return m
/* amax (OP >) and amin (OP <) keep a when a is NaN or beats b (combine()'s rule), else
 * store b, laid out as the rare case (Note [Checked scatter folds]) */
#define CHECKED_EXTREME_LOOP(T, I, OP)                                                      \
    CHECKED_FOLD_LOOP(T, I, if (PTL_UNLIKELY(!(a != a || a OP b))) { *d = b; })
#define CHECKED_FOLD_TYPE(T, I)                                                             \
    switch (r) {                                                                            \
    case RED_SUM: CHECKED_FOLD_LOOP(T, I, *d = a + b);                                      \
    case RED_PROD: CHECKED_FOLD_LOOP(T, I, *d = a * b);                                     \
    case RED_AMAX: CHECKED_EXTREME_LOOP(T, I, >);                                           \
    default: CHECKED_EXTREME_LOOP(T, I, <);                                                 \
    }

/* self[index[j0 + j] * step + (j0 + j) * sin] (r)= src[j * sstride] for j < m (self: the row
 * start; p: index[j0]), r one of sum, prod, amax, amin, f8 for float64 else float32: the
 * number of values folded in, m unless index[j0 + that] is outside [0, size).  Always
 * inlined, so that a call with constant strides compiles to loops of their own. */
static inline __attribute__((always_inline)) int64_t
fold_checked(char *self, const char *p, int is64, int64_t ist, int64_t step, int64_t sin,
             uint64_t size, int64_t j0, const char *src, int64_t sstride, int64_t m, int f8,
             Reduce r)
{
    if (f8 && is64) {
        CHECKED_FOLD_TYPE(double, int64_t)
    }
    if (f8) {
        CHECKED_FOLD_TYPE(double, int32_t)
    }
    if (is64) {
        CHECKED_FOLD_TYPE(float, int64_t)
    }
    CHECKED_FOLD_TYPE(float, int32_t)
}
#undef CHECKED_FOLD_TYPE
#undef CHECKED_EXTREME_LOOP
#undef CHECKED_FOLD_LOOP

/* fold_checked for w's current row, m long (Note [Checked scatter folds]); the int64 index
 * of a scatter along self's contiguous last dim, read contiguously, takes loops with those
 * strides as constants.  Not inlined: inside scatter_cpu the loop kept its bound on the
 * stack. */
static __attribute__((noinline)) int64_t
fold_checked_row(const RowWalk *w, char *self, const char *src, int64_t sstride, int64_t m,
                 int f8, Reduce r)
{
    int is64 = w->index_dtype == PTL_DTYPE_INT64;
    const char *p = w->index + w->off[0] * (is64 ? 8 : 4);
    int64_t ist = w->inner[0], sin = w->inner[1], step = w->step;
    if (is64 && ist == 1 && step == 1 && sin == 0 && sstride == 1) {
        return fold_checked(self, p, 1, 1, 1, 0, (uint64_t)w->size, 0, src, 1, m, f8, r);
    }
    return fold_checked(self, p, is64, ist, step, sin, (uint64_t)w->size, 0, src, sstride, m,
                        f8, r);
}

/* The complex sums and products of Note [Checked scatter folds]: an element is a pair of R
 * (float or double); a sum adds the pair as one 8- or 16-byte vector V (the same roundings
 * as two adds; as two scalar adds, scatter_add of 512 x 512 complex64 ran at 0.63-0.74x
 * PyTorch's time), a product is index_complex.h's textbook formula (no fused multiply-add
 * in either clone, Note [Loop clones]: the bits of combine_complex). */
typedef float PairF __attribute__((vector_size(8)));
typedef double PairD __attribute__((vector_size(16)));
#define CHECKED_COMPLEX_LOOP(R, I, STMT)                                                    \
    for (int64_t j = 0; j < m; j++) {                                                       \
        int64_t v = ((const I *)p)[j * ist];                                                \
        if ((uint64_t)v >= size) {                                                          \
            return j;                                                                       \
        }                                                                                   \
        R *d = (R *)self + 2 * (v * step + j * sin);                                        \
        const R *b = (const R *)src + 2 * j * sstride;                                      \
        STMT;                                                                               \
    }                                                                                       \
    return m
/* self element v (r)+= src element j: the pair as one V */
#define CHECKED_COMPLEX_ADD(V, v, j)                                                        \
    do {                                                                                    \
        V a_, c_;                                                                           \
        char *d_ = self + (int64_t)sizeof(V) * ((v) * step + (j) * sin);                    \
        memcpy(&a_, d_, sizeof(V));                                                         \
        memcpy(&c_, src + (int64_t)sizeof(V) * (j) * sstride, sizeof(V));                   \
        a_ += c_;                                                                           \
        memcpy(d_, &a_, sizeof(V));                                                         \
    } while (0)
/* the sum two elements an iteration (both indices checked first; a pair with a bad index
 * goes to the one-at-a-time loop, which stops at it): scatter_add_ of 512 x 512 complex64 in
 * place 164 -> 150 us, one thread (PyTorch: 181) */
#define CHECKED_COMPLEX_SUM_LOOP(R, V, I)                                                   \
    do {                                                                                    \
        int64_t j = 0;                                                                      \
        for (; j + 2 <= m; j += 2) {                                                        \
            int64_t v0 = ((const I *)p)[j * ist], v1 = ((const I *)p)[(j + 1) * ist];       \
            if ((uint64_t)v0 >= size || (uint64_t)v1 >= size) {                             \
                break;                                                                      \
            }                                                                               \
            CHECKED_COMPLEX_ADD(V, v0, j);                                                  \
            CHECKED_COMPLEX_ADD(V, v1, j + 1);                                              \
        }                                                                                   \
        for (; j < m; j++) {                                                                \
            int64_t v = ((const I *)p)[j * ist];                                            \
            if ((uint64_t)v >= size) {                                                      \
                return j;                                                                   \
            }                                                                               \
            CHECKED_COMPLEX_ADD(V, v, j);                                                   \
        }                                                                                   \
        return m;                                                                           \
    } while (0)
#define CHECKED_COMPLEX_TYPE(R, V, I)                                                       \
    if (r == RED_PROD) {                                                                    \
        CHECKED_COMPLEX_LOOP(R, I, R re = d[0] * b[0] - d[1] * b[1];                        \
                             d[1] = d[0] * b[1] + d[1] * b[0]; d[0] = re);                  \
    }                                                                                       \
    CHECKED_COMPLEX_SUM_LOOP(R, V, I)

/* fold_checked for a complex dt, r a sum or a product */
static inline __attribute__((always_inline)) int64_t
fold_checked_complex(char *self, const char *p, int is64, int64_t ist, int64_t step,
                     int64_t sin, uint64_t size, const char *src, int64_t sstride, int64_t m,
                     int c8, Reduce r)
{
    if (c8 && is64) {
        CHECKED_COMPLEX_TYPE(double, PairD, int64_t);
    }
    if (c8) {
        CHECKED_COMPLEX_TYPE(double, PairD, int32_t);
    }
    if (is64) {
        CHECKED_COMPLEX_TYPE(float, PairF, int64_t);
    }
    CHECKED_COMPLEX_TYPE(float, PairF, int32_t);
}
#undef CHECKED_COMPLEX_TYPE
#undef CHECKED_COMPLEX_SUM_LOOP
#undef CHECKED_COMPLEX_ADD
#undef CHECKED_COMPLEX_LOOP

/* fold_checked_row for the complex dtypes (c8: complex128, else complex64) */
static PTL_LOOP_CLONES __attribute__((noinline)) int64_t
fold_complex_row(const RowWalk *w, char *self, const char *src, int64_t sstride, int64_t m,
                 int c8, Reduce r)
{
    int is64 = w->index_dtype == PTL_DTYPE_INT64;
    const char *p = w->index + w->off[0] * (is64 ? 8 : 4);
    int64_t ist = w->inner[0], sin = w->inner[1], step = w->step;
    if (is64 && ist == 1 && step == 1 && sin == 0 && sstride == 1) {
        return fold_checked_complex(self, p, 1, 1, 1, 0, (uint64_t)w->size, src, 1, m, c8, r);
    }
    return fold_checked_complex(self, p, is64, ist, step, sin, (uint64_t)w->size, src, sstride,
                                m, c8, r);
}

/* scatter_cpu's walk over index's rows (Note [Index row walk]): self (r)= src into dst, a
 * float fold without counts by fold_checked_row (Note [Checked scatter folds]), the rest a
 * chunk at a time by scatter_row; 0, or -1 with the error of the first bad index. */
static int
scatter_walk(RowWalk *w, char *dst, const char *sp, PtlDtype dt, Reduce r, int include_self,
             int64_t *count)
{
    int64_t item = (int64_t)ptl_dtype_itemsize(dt), buf[ROW_CHUNK];
    int checked = count == NULL && r != RED_NONE && r != RED_MEAN &&
                  (dt == PTL_DTYPE_FLOAT32 || dt == PTL_DTYPE_FLOAT64 ||
                   ptl_dtype_is_complex(dt));
    for (int64_t q = 0; q < w->rows; q++, row_walk_next(w)) {
        if (checked && w->n > 0) {   /* the whole row; a bad index: row_walk_offsets says so */
            char *d = dst + w->off[1] * item;
            const char *v = sp + w->off[2] * item;
            int64_t done = ptl_dtype_is_complex(dt)
                               ? fold_complex_row(w, d, v, w->inner[2], w->n,
                                                  dt == PTL_DTYPE_COMPLEX128, r)
                               : fold_checked_row(w, d, v, w->inner[2], w->n,
                                                  dt == PTL_DTYPE_FLOAT64, r);
            if (done < w->n) {
                row_walk_offsets(w, buf, done, 1);
                return -1;
            }
            continue;
        }
        for (int64_t j0 = 0; j0 < w->n; j0 += ROW_CHUNK) {
            int64_t m = w->n - j0 < ROW_CHUNK ? w->n - j0 : ROW_CHUNK;
            const int64_t *off = row_walk_offsets(w, buf, j0, m);
            if (off == NULL) {
                return -1;
            }
            scatter_row(dst + w->off[1] * item, off, sp + (w->off[2] + j0 * w->inner[2]) * item,
                        w->inner[2], m, dt, r, include_self,
                        count != NULL ? count + w->off[1] : NULL);
        }
    }
    return 0;
}

/* scatter[_].src/.value/.reduce/.value_reduce, scatter_add[_], scatter_reduce[_].two:
 *   self[index[i][j]][j] (op)= src[i][j] (dim 0), for every element of index */
static int
scatter_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *index = s[2].u.t, *src = NULL, *out = NULL;
    PtlOpId id = op->id;
    int two = id == PTL_OP_scatter_reduce_two || id == PTL_OP_scatter_reduce__two;
    int is_add = id == PTL_OP_scatter_add || id == PTL_OP_scatter_add_;
    int64_t dim = s[1].u.i, sst[PTL_MAX_DIMS] = {0};
    int include_self = two ? s[5].u.b : 1, bad = 0, rc;
    Reduce r = is_add ? RED_SUM : RED_NONE;
    char b1[256], b2[256], b3[256];
    int64_t *count = NULL, span = 1;
    RowWalk w;
    if (ptl_wrap_dim(&dim, self->dim > 0 ? self->dim : 1) < 0 ||
        (op->schema.inplace && ptl_check_no_internal_overlap(self) < 0)) {
        return -1;
    }
    if (two || (op->schema.nargs > 4 && op->schema.args[4].kind == PTL_ARG_STR)) {
        r = parse_reduce(s[4].u.s, two, &bad);
        if (bad) {
            return two ? ptl_error_set(PTL_ERR_RUNTIME,
                                       "reduce argument must be either sum, prod, mean, amax or "
                                       "amin, got %s", s[4].u.s)
                       : ptl_error_set(PTL_ERR_RUNTIME,
                                       "reduce argument must be either add or multiply.");
        }
    }
    if (!index_dtype_ok(index)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "scatter(): Expected dtype int32/int64 for index");
    }
    if ((r == RED_AMAX || r == RED_AMIN) && ptl_dtype_is_complex(self->dtype)) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED,
                             "\"scatter_gather_tensor_cpu_reduce_%s\" not implemented for "
                             "'%s'",
                             r == RED_AMAX ? "amax" : "amin",
                             ptl_dtype_legacy_name(self->dtype));
    }
    if (r == RED_MEAN && self->dtype == PTL_DTYPE_BOOL) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED,
                             "\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for "
                             "'Bool'");
    }
    if (s[3].tag == PTL_IV_TENSOR) {
        src = s[3].u.t;
        ptl_incref(src);
        if (src->dtype != self->dtype) {
            ptl_decref(src);
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "scatter(): Expected self.dtype to be equal to src.dtype");
        }
    }
    else if (complex_scalar_check(&s[3], self->dtype) < 0 ||
             (src = scalar_of(&s[3], self->dtype)) == NULL) {
        return -1;
    }
    /* PyTorch checks the shape of a non-empty index only (scatter_shape_check): an empty one
     * scatters nothing, whatever its dimensions */
    if (index->numel != 0 &&
        (index->dim > 0 ? index->dim : 1) != (self->dim > 0 ? self->dim : 1)) {
        ptl_error_set(PTL_ERR_RUNTIME, "Index tensor must have the same number of dimensions as "
                                       "self tensor");
        goto error;
    }
    if (index->numel != 0 && src->dim != 0 && (index->dim > 0 ? index->dim : 1) != src->dim) {
        ptl_error_set(PTL_ERR_RUNTIME, "Index tensor must have the same number of dimensions as "
                                       "src tensor");
        goto error;
    }
    for (int d = 0; index->numel != 0 && d < index->dim; d++) {
        if ((self->dim && d != dim && index->sizes[d] > self->sizes[d]) ||
            (src->dim && index->sizes[d] > src->sizes[d])) {
            ptl_format_sizes(b1, sizeof(b1), index->dim, index->sizes);
            ptl_format_sizes(b2, sizeof(b2), self->dim, self->sizes);
            ptl_format_sizes(b3, sizeof(b3), src->dim, src->sizes);
            if (src->dim) {
                ptl_error_set(PTL_ERR_RUNTIME,
                              "Expected index %s to be no larger than self %s apart from "
                              "dimension %lld and to be no larger size than src %s",
                              b1, b2, (long long)dim, b3);
            }
            else {
                ptl_error_set(PTL_ERR_RUNTIME,
                              "Expected index %s to be no larger than self %s apart from "
                              "dimension %lld",
                              b1, b2, (long long)dim);
            }
            goto error;
        }
    }
    if ((out = target_reading(op, self, src, index, 0)) == NULL) {
        goto error;
    }
    if (index->numel == 0) {
        goto done;
    }
    if ((rc = scatter_gather_on_device(1, out, dim, index, src, r, include_self)) <= 0) {
        if (rc < 0) {
            goto error;
        }
        goto done;
    }
    if (src->dim) {
        for (int d = 0; d < src->dim; d++) {
            sst[d] = src->strides[d];
        }
    }
    row_walk_init(&w, out, dim, index, sst);
    for (int d = 0; d < out->dim; d++) {
        span += (out->sizes[d] - 1) * out->strides[d];
    }
    if (w.rows > 0 && (r == RED_MEAN || !include_self)) {
        /* count[k]: how many src values land on the element at offset k (0: untouched) */
        if ((count = calloc((size_t)span, sizeof(int64_t))) == NULL) {
            ptl_error_set(PTL_ERR_MEMORY, "out of memory");
            goto error;
        }
    }
    size_t item = ptl_tensor_itemsize(out);
    char *dst = ptl_tensor_data(out);
    if (scatter_walk(&w, dst, ptl_tensor_data(src), out->dtype, r, include_self, count) < 0) {
        goto error;
    }
    for (int64_t k = 0; r == RED_MEAN && count != NULL && k < span; k++) {
        int64_t c = count[k] + (include_self ? 1 : 0);
        char *d = dst + k * (int64_t)item;
        if (count[k] == 0) {
            continue;
        }
        if (ptl_dtype_is_complex(out->dtype)) {
            divide_complex(d, out->dtype, c);
        }
        else if (ptl_dtype_is_floating(out->dtype)) {
            ptl_store_double(d, out->dtype, ptl_load_double(d, out->dtype) / (double)c);
        }
        else {
            int64_t a = ptl_load_int(d, out->dtype), quot = a / c;
            ptl_store_int(d, out->dtype, (a % c != 0 && a < 0) ? quot - 1 : quot);
        }
    }
done:
    free(count);
    ptl_tensor_bump_version(out);
    ptl_decref(src);
    s[0] = ptl_iv_tensor(out);
    return 0;
error:
    free(count);
    ptl_xdecref(src);
    ptl_xdecref(out);
    return -1;
}

static const PtlKernelReg scatter_gather_cpu_kernels[] = {
    {PTL_OP_gather, PTL_KEY_CPU, gather_cpu},
    {PTL_OP_scatter_src, PTL_KEY_CPU, scatter_cpu},
    {PTL_OP_scatter_value, PTL_KEY_CPU, scatter_cpu},
    {PTL_OP_scatter_reduce, PTL_KEY_CPU, scatter_cpu},
    {PTL_OP_scatter_value_reduce, PTL_KEY_CPU, scatter_cpu},
    {PTL_OP_scatter__src, PTL_KEY_CPU, scatter_cpu},
    {PTL_OP_scatter__value, PTL_KEY_CPU, scatter_cpu},
    {PTL_OP_scatter__reduce, PTL_KEY_CPU, scatter_cpu},
    {PTL_OP_scatter__value_reduce, PTL_KEY_CPU, scatter_cpu},
    {PTL_OP_scatter_add, PTL_KEY_CPU, scatter_cpu},
    {PTL_OP_scatter_add_, PTL_KEY_CPU, scatter_cpu},
    {PTL_OP_scatter_reduce_two, PTL_KEY_CPU, scatter_cpu},
    {PTL_OP_scatter_reduce__two, PTL_KEY_CPU, scatter_cpu},
};
PTL_DEFINE_REGISTER(scatter_gather_cpu_kernels)
