/* index_impl.h -- helpers shared by the advanced-indexing kernels (index.c) and the
 * gather / scatter family (scatter_gather.c): element copies and combines by dtype, the
 * offsets of a strided walk, the target of an in-place/functional pair, a Scalar as a
 * 0-dim tensor.  Private to native/.  See Note [Advanced indexing]. */
#ifndef PTL_ATEN_NATIVE_INDEX_IMPL_H
#define PTL_ATEN_NATIVE_INDEX_IMPL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/error.h"
#include "device_index.h"
#include "native.h"

static inline void
copy_elem(char *dst, const char *src, size_t item)
{
    switch (item) {
    case 1: *dst = *src; break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    default: memcpy(dst, src, 16); break;   /* complex128 */
    }
}

/* A complex128 element, moved as one 16-byte value (gather's and take's typed moves) */
typedef struct Elem16 {
    uint64_t w[2];
} Elem16;

/* The typed element moves under scatter, index_select and x[idx]; offsets and
 * strides in elements of `item` bytes (memcpy of a constant size compiles to one move).
 *   take_row: out[j * ostride] = self[off[j]]     put_row: self[off[j]] = src[j * sstride] */
#define ROW_MOVE_LOOP(SZ, DST, DI, SRC, SI)                                                 \
    for (int64_t j = 0; j < n; j++) {                                                       \
        memcpy((DST) + (DI) * (SZ), (SRC) + (SI) * (SZ), (SZ));                             \
    }

/* take_row of 4-byte elements: four loads, then four stores (out never overlaps self or
 * off; with the loads and stores interleaved, index_select(1, idx) of 1024 x 1024 float32
 * took a fifth longer) */
static inline void
take_row4(char *restrict out, int64_t ostride, const char *restrict self,
          const int64_t *restrict off, int64_t n)
{
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
        uint32_t v[4];
        for (int k = 0; k < 4; k++) {
            memcpy(&v[k], self + off[j + k] * 4, 4);
        }
        for (int k = 0; k < 4; k++) {
            memcpy(out + (j + k) * ostride * 4, &v[k], 4);
        }
    }
    for (; j < n; j++) {
        memcpy(out + j * ostride * 4, self + off[j] * 4, 4);
    }
}

static inline void
take_row(char *out, int64_t ostride, const char *self, const int64_t *off, int64_t n,
         size_t item)
{
    switch (item) {
    case 1: ROW_MOVE_LOOP(1, out, j * ostride, self, off[j]) break;
    case 2: ROW_MOVE_LOOP(2, out, j * ostride, self, off[j]) break;
    case 4: take_row4(out, ostride, self, off, n); break;
    case 8: ROW_MOVE_LOOP(8, out, j * ostride, self, off[j]) break;
    default: ROW_MOVE_LOOP(16, out, j * ostride, self, off[j]) break;   /* complex128 */
    }
}

static inline void
put_row(char *self, const int64_t *off, const char *src, int64_t sstride, int64_t n,
        size_t item)
{
    switch (item) {
    case 1: ROW_MOVE_LOOP(1, self, off[j], src, j * sstride) break;
    case 2: ROW_MOVE_LOOP(2, self, off[j], src, j * sstride) break;
    case 4: ROW_MOVE_LOOP(4, self, off[j], src, j * sstride) break;
    case 8: ROW_MOVE_LOOP(8, self, off[j], src, j * sstride) break;
    default: ROW_MOVE_LOOP(16, self, off[j], src, j * sstride) break;   /* complex128 */
    }
}
#undef ROW_MOVE_LOOP

typedef enum Reduce {
    RED_NONE = 0,   /* plain copy */
    RED_SUM,
    RED_PROD,
    RED_MEAN,       /* summed here; divided by the count afterwards */
    RED_AMAX,
    RED_AMIN,
} Reduce;

/* *dst = dst (op) alpha * src, in int64 for integers and double for floats (one rounding
 * to the stored type, as a float add of two floats would give). */
static inline void
combine(char *dst, const char *src, PtlDtype dt, Reduce r, double alpha)
{
    if (ptl_dtype_is_floating(dt)) {
        double a = ptl_load_double(dst, dt), b = ptl_load_double(src, dt) * alpha, v;
        switch (r) {
        case RED_PROD: v = a * b; break;
        case RED_AMAX: v = (a != a || a > b) ? a : b; break;
        case RED_AMIN: v = (a != a || a < b) ? a : b; break;
        default: v = a + b; break;
        }
        ptl_store_double(dst, dt, v);
        return;
    }
    int64_t a = ptl_load_int(dst, dt), b = ptl_load_int(src, dt) * (int64_t)alpha, v;
    switch (r) {
    case RED_PROD: v = (int64_t)((uint64_t)a * (uint64_t)b); break;
    case RED_AMAX: v = a > b ? a : b; break;
    case RED_AMIN: v = a < b ? a : b; break;
    default: v = (int64_t)((uint64_t)a + (uint64_t)b); break;
    }
    ptl_store_int(dst, dt, v);
}

/* The element offsets of a row-major walk over (dim, sizes, strides): malloc'd array of
 * max(numel, 1) entries, or NULL with the error set. */
static inline int64_t *
walk_offsets(int dim, const int64_t *sizes, const int64_t *strides)
{
    int64_t numel = 1, idx[PTL_MAX_DIMS] = {0}, off = 0;
    for (int d = 0; d < dim; d++) {
        numel *= sizes[d];
    }
    int64_t *out = malloc(sizeof(int64_t) * (size_t)(numel > 0 ? numel : 1));
    if (out == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "out of memory");
        return NULL;
    }
    out[0] = 0;
    for (int64_t i = 0; i < numel; i++) {
        out[i] = off;
        for (int d = dim - 1; d >= 0; d--) {
            if (++idx[d] < sizes[d]) {
                off += strides[d];
                break;
            }
            off -= (idx[d] - 1) * strides[d];
            idx[d] = 0;
        }
    }
    return out;
}

/* 0 when t is on self's device, else -1 with PyTorch's error (the device kernels' operands;
 * a one-element CPU value goes by value instead) */
static inline int
same_device(const PtlTensorImpl *self, const PtlTensorImpl *t)
{
    if (ptl_device_equal(self->device, t->device)) {
        return 0;
    }
    return ptl_error_set(PTL_ERR_RUNTIME,
                         "Expected all tensors to be on the same device, but found at least "
                         "two devices, %s:%d and %s%s!",
                         ptl_device_type_name(self->device.type), self->device.index,
                         ptl_device_type_name(t->device.type),
                         t->device.type == PTL_DEVICE_CPU ? "" : ":0");
}

/* The tensor an in-place/functional pair writes: self (in-place), or a copy of self laid
 * out as PyTorch's functional op lays out its result: like self for index_fill and
 * index_put (self.clone(at::MemoryFormat::Preserve)), contiguous for index_add,
 * index_copy and scatter (their structured kernels' new outputs), as `keep_layout` says. */
static inline PtlTensorImpl *
target_of(const PtlOperator *op, PtlTensorImpl *self, int keep_layout)
{
    if (op->schema.inplace) {
        ptl_incref(self);
        return self;
    }
    return keep_layout ? ptl_copy_as(self, PTL_MEMORY_FORMAT_PRESERVE)
                       : ptl_cast(self, self->dtype);
}

/* target_of for an op that reads a and b (either may be NULL) while it writes: in place,
 * PyTorch's assert_no_overlap of self with each first. */
static inline PtlTensorImpl *
target_reading(const PtlOperator *op, PtlTensorImpl *self, const PtlTensorImpl *a,
               const PtlTensorImpl *b, int keep_layout)
{
    if (op->schema.inplace && ((a != NULL && ptl_check_no_overlap(self, a) < 0) ||
                               (b != NULL && ptl_check_no_overlap(self, b) < 0))) {
        return NULL;
    }
    return target_of(op, self, keep_layout);
}

/* 0 when the 0-dim value tensor v converts to dtype, else -1 with c10's checked_convert
 * error: a complex value with an imaginary part fits no real dtype (masked_fill(m,
 * tensor(2j)) of a float tensor). */
static inline int
complex_value_check(PtlTensorImpl *v, PtlDtype dtype)
{
    if (!ptl_dtype_is_complex(v->dtype) || ptl_dtype_is_complex(dtype) ||
        !ptl_item_readable(v)) {
        return 0;
    }
    double z[2];   /* complex128's layout: real, imaginary */
    ptl_convert_scalar((char *)z, PTL_DTYPE_COMPLEX128, ptl_tensor_data(v), v->dtype);
    PtlIValue zv = ptl_iv_complex(z[0], z[1]);
    return ptl_scalar_check_range(&zv, dtype);
}

/* masked_fill's loop for complex128 (the Complex key passes masked_fill through): out =
 * mask ? *extra : self, 16-byte elements as two 8-byte halves, kept by a bit mask as the
 * narrower loops do (no branch on the mask): [*] out, self, mask (bool) */
static inline void
masked_fill_loop_16(char **d, const int64_t *s, int64_t n, const void *extra)
{
    const uint64_t *v = extra;
    for (int64_t i = 0; i < n; i++) {
        const uint64_t *a = (const uint64_t *)(d[1] + i * s[1]);
        uint64_t *o = (uint64_t *)(d[0] + i * s[0]);
        uint64_t take = (uint64_t)0 - (uint64_t)(*(const uint8_t *)(d[2] + i * s[2]) != 0);
        uint64_t lo = (v[0] & take) | (a[0] & ~take), hi = (v[1] & take) | (a[1] & ~take);
        o[0] = lo;
        o[1] = hi;
    }
}

/* A 0-dim tensor of dtype holding a Scalar argument (exact for integers). */
static inline PtlTensorImpl *
scalar_of(const PtlIValue *v, PtlDtype dtype)
{
    PtlTensorImpl *t = ptl_empty(0, NULL, dtype, ptl_device_cpu());
    if (t == NULL) {
        return NULL;
    }
    ptl_store_scalar(ptl_tensor_data(t), dtype, v);
    return t;
}

/* d[j] += v[j] * alpha (j < n), float32 (f4) or float64 rows of index_add_
 * (scatter_gather.c) */
void index_add_row(char *d, const char *v, int64_t n, int f4, double alpha);

/* where, masked_fill, the comparisons and take on the CUDA kernels (index_device.c; Note
 * [CUDA masked_fill and take] in src/cuda/index_plan.h): whether t's op runs there (a CUDA
 * tensor, or the kernels emulated); over a built iterator, kind PTL_DEVICE_SEL_WHERE: out =
 * cond ? if_true : if_false, order[] the iterator operands of cond, if_true and if_false
 * (-1: the value val, a 0-dim CPU tensor of out's dtype), or a predicate kind: out = a op b,
 * order[0..1] a's and b's operands; 0 or -1; take's output (index int64), or NULL. */
int index_on_device(const PtlTensorImpl *t);
int index_select_device(const PtlTensorIter *it, int kind, const int *order,
                        const PtlTensorImpl *val);
PtlTensorImpl *index_take_device(PtlTensorImpl *self, PtlTensorImpl *index);
/* masked_scatter into out (mask checked to broadcast to it) on the device: 0 or -1 */
int index_masked_scatter_device(PtlTensorImpl *out, PtlTensorImpl *mask, PtlTensorImpl *src);

#endif
