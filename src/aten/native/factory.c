/* factory.c -- tensor factories: empty, zeros, ones, full, the *_like family, arange,
 * linspace, logspace, eye, tril_indices / triu_indices, scalar_tensor.  Mirrors
 * ATen/native/TensorFactories.cpp and ATen/native/RangeFactories.cpp; and resize_ / resize_as_,
 * from ATen/native/Resize.cpp.
 *
 * Factories have no tensor argument, so the dispatcher picks the backend from `device`
 * (Note [Dispatch]).  They are registered for CPU and CUDA: the values are made on the CPU
 * and moved with _to_copy when another device is asked for, after checking that the device
 * has an allocator (a CPU-only build raises ptl_allocator_for()'s error there).  Meta
 * tensors are made on the meta device straight away: their fills and ranges write nothing
 * (Note [Meta tensors] in c10/device.h), so torch.zeros(10**12, device="meta") is free. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../c10/allocator.h"
#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "native.h"

/* ---- argument helpers ---- */

static PtlDtype
dtype_or(const PtlIValue *v, PtlDtype dflt)
{
    return v->tag == PTL_IV_DTYPE ? v->u.dtype : dflt;
}

static PtlDevice
device_or(const PtlIValue *v, PtlDevice dflt)
{
    return v->tag == PTL_IV_DEVICE ? v->u.device : dflt;
}

/* 0 when dev can hold tensors, else -1 with the allocator's error. */
static int
check_device(PtlDevice dev)
{
    if (dev.type != PTL_DEVICE_CPU && dev.type != PTL_DEVICE_META &&
        ptl_allocator_for(&dev) == NULL) {
        return -1;
    }
    return 0;
}

/* Where a factory makes its values for dev: on the meta device for meta, else on the CPU. */
static PtlDevice
home(PtlDevice dev)
{
    return dev.type == PTL_DEVICE_META ? dev : ptl_device_cpu();
}

/* Puts t (made on home(dev), stolen) on the stack, moved to dev when it is elsewhere. */
static int
set_result(PtlIValue *s, PtlTensorImpl *t, PtlDevice dev)
{
    if (dev.type != t->device.type) {
        PtlTensorImpl *moved = ptl_to_copy(t, PTL_DTYPE_UNDEFINED, &dev);
        ptl_decref(t);
        if (moved == NULL) {
            return -1;
        }
        t = moved;
    }
    s[0] = ptl_iv_tensor(t);
    return 0;
}

/* Writes the Scalar v (converted to t's dtype) into every element of t; no version bump,
 * since t is new. */
static int
fill_new(PtlTensorImpl *t, const PtlIValue *v)
{
    PtlTensorImpl *src = ptl_empty(0, NULL, t->dtype, ptl_device_cpu());
    if (src == NULL) {
        return -1;
    }
    ptl_store_scalar(ptl_tensor_data(src), t->dtype, v);
    int rc = ptl_copy_into(t, src);
    ptl_decref(src);
    return rc;
}

/* A new tensor of `sizes` on home(dev) filled with v (NULL to leave it uninitialised). */
static PtlTensorImpl *
new_filled(int dim, const int64_t *sizes, PtlDtype dt, const PtlIValue *v, PtlDevice dev)
{
    PtlTensorImpl *t = ptl_empty(dim, sizes, dt, home(dev));
    if (t != NULL && v != NULL && fill_new(t, v) < 0) {
        PTL_CLEAR(t);
    }
    return t;
}

/* ---- empty, zeros, ones, full ---- */

/* empty.memory_format(int[] size, *, ScalarType? dtype, Layout?, Device? device, ...) and
 * empty_strided(int[] size, int[] stride, *, ScalarType? dtype, Layout?, Device? device, ...):
 * uninitialised memory straight from the device's allocator */
static int
empty_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int strided = op->id == PTL_OP_empty_strided;
    const PtlIValue *sz = &s[0], *st = &s[1];
    PtlDtype dt = dtype_or(&s[strided ? 2 : 1], ptl_default_dtype());
    PtlDevice dev = device_or(&s[strided ? 4 : 3], ptl_device_cpu());
    PtlTensorImpl *t;
    if (sz->u.il.n > PTL_MAX_DIMS) {
        return ptl_error_set(PTL_ERR_RUNTIME, "pytorchlite supports at most %d dimensions",
                             PTL_MAX_DIMS);
    }
    if (!strided) {
        PtlMemoryFormat f = ptl_iv_memory_format_or(&s[5], PTL_MEMORY_FORMAT_CONTIGUOUS);
        if (ptl_memory_format_check(f, (int)sz->u.il.n) < 0) {
            return -1;
        }
        t = ptl_empty_format((int)sz->u.il.n, sz->u.il.data, f, dt, dev);
    }
    else {
        if (st->u.il.n != sz->u.il.n) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "dimensionality of sizes (%lld) must match dimensionality of "
                                 "strides (%lld)",
                                 (long long)sz->u.il.n, (long long)st->u.il.n);
        }
        t = ptl_empty_strided((int)sz->u.il.n, sz->u.il.data, st->u.il.data, dt, dev);
    }
    if (t == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(t);
    return 0;
}

/* zeros / ones(int[] size, *, ScalarType? dtype, Layout?, Device? device, ...) and
 * full(int[] size, Scalar fill_value, *, ScalarType? dtype, ...): a bool fill gives bool, an
 * int fill int64, a float fill the default dtype, when dtype is None (torch.full) */
static int
fill_factory_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int full = op->id == PTL_OP_full;
    PtlIValue value = full ? s[1] : ptl_iv_int(op->id == PTL_OP_ones);
    PtlDtype dflt = ptl_default_dtype();
    int64_t n = s[0].u.il.n;
    const int64_t *sizes = s[0].u.il.data;
    if (full && value.tag == PTL_IV_BOOL) {
        dflt = PTL_DTYPE_BOOL;
    }
    else if (full && value.tag == PTL_IV_INT) {
        dflt = PTL_DTYPE_INT64;
    }
    else if (full && value.tag == PTL_IV_COMPLEX) {   /* the default complex dtype */
        dflt = ptl_dtype_to_complex(dflt);
    }
    PtlDtype dt = dtype_or(&s[full ? 2 : 1], dflt);
    PtlDevice dev = device_or(&s[full ? 4 : 3], ptl_device_cpu());
    if (op->id == PTL_OP_zeros) {
        for (int64_t i = 0; i < n; i++) {
            if (sizes[i] < 0) {
                return ptl_error_set(PTL_ERR_RUNTIME,
                                     "zeros: Dimension size must be non-negative.");
            }
        }
    }
    if (n > PTL_MAX_DIMS) {
        return ptl_error_set(PTL_ERR_RUNTIME, "pytorchlite supports at most %d dimensions",
                             PTL_MAX_DIMS);
    }
    if (check_device(dev) < 0 || ptl_scalar_check_range(&value, dt) < 0) {
        return -1;
    }
    PtlTensorImpl *t = new_filled((int)n, sizes, dt, &value, dev);
    return t == NULL ? -1 : set_result(s, t, dev);
}

/* ---- the *_like family ---- */

/* empty_like / zeros_like / ones_like(Tensor self, *, ScalarType? dtype, Layout?,
 * Device? device, ..., MemoryFormat? memory_format) and full_like(Tensor self, Scalar
 * fill_value, *, ...): self's shape, and its dtype and device unless given, laid out in
 * memory_format (None: preserve_format, Note [Memory formats]) */
static int
like_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *t;
    int full = op->id == PTL_OP_full_like;
    PtlDtype dt = dtype_or(&s[full ? 2 : 1], self->dtype);
    PtlDevice dev = device_or(&s[full ? 4 : 3], self->device);
    PtlIValue value = full ? s[1] : ptl_iv_int(op->id == PTL_OP_ones_like);
    PtlMemoryFormat f = ptl_iv_memory_format_or(&s[full ? 6 : 5], PTL_MEMORY_FORMAT_PRESERVE);
    int64_t strides[PTL_MAX_DIMS];
    if (check_device(dev) < 0 || ptl_scalar_check_range(&value, dt) < 0 ||
        ptl_memory_format_like_strides(self, f, strides) < 0) {
        return -1;
    }
    t = ptl_empty_strided(self->dim, self->sizes, strides, dt, home(dev));
    if (t == NULL) {
        return -1;
    }
    if (op->id != PTL_OP_empty_like && fill_new(t, &value) < 0) {
        ptl_decref(t);
        return -1;
    }
    return set_result(s, t, dev);
}

/* ---- arange, linspace, logspace ---- */

typedef enum RangeKind { RANGE_ARANGE, RANGE_LINSPACE, RANGE_LOGSPACE } RangeKind;

typedef struct RangeParams {
    RangeKind kind;
    double start, end, step, base;   /* linspace/logspace: step = (end - start) / (n - 1) */
    int64_t istart, istep;           /* arange into an integer dtype */
    int64_t n;
} RangeParams;

/* Element i of a float range.  linspace fills its second half backwards from `end` so that
 * both end points are exact (PyTorch's linspace kernel does the same). */
static inline double
range_value(const RangeParams *p, int64_t i)
{
    double v;
    if (p->kind == RANGE_ARANGE) {
        return p->start + (double)i * p->step;
    }
    v = i < p->n / 2 ? p->start + p->step * (double)i
                     : p->end - p->step * (double)(p->n - i - 1);
    return p->kind == RANGE_LOGSPACE ? pow(p->base, v) : v;
}

/* double -> int64 without undefined behaviour (out of range and NaN give INT64_MIN) */
static inline int64_t
range_to_i64(double v)
{
    if (!(v > -9.2233720368547758e18 && v < 9.2233720368547758e18)) {
        return INT64_MIN;
    }
    return (int64_t)v;
}

/* an arange bound or step in int64: a Python int as it is (through double it would round
 * past 2^53), a float truncated */
static inline int64_t
range_iv_to_i64(const PtlIValue *v)
{
    return v->tag == PTL_IV_DOUBLE ? range_to_i64(v->u.d) : ptl_iv_to_int(v);
}

typedef void (*RangeLoop)(char *out, int64_t begin, int64_t end, const RangeParams *p);

#define STORE_INT(T, V) ((T)range_to_i64(V))
#define STORE_CAST(T, V) ((T)(V))
#define STORE_HALF(T, V) (ptl_f_to_half((float)(V)))
#define STORE_BF16(T, V) (ptl_f_to_bf16((float)(V)))

/* out[begin:end] = range values (1-D, contiguous) */
#define DEFINE_RANGE_LOOP(T, TAG, STORE)                                              \
    static void                                                                       \
    range_loop_##TAG(char *out, int64_t begin, int64_t end, const RangeParams *p)     \
    {                                                                                 \
        T *o = (T *)out;                                                              \
        for (int64_t i = begin; i < end; i++) {                                       \
            o[i] = STORE(T, range_value(p, i));                                       \
        }                                                                             \
    }

/* integer arange: out[i] = start + i * step in int64 (wrapping), then narrowed */
#define DEFINE_IARANGE_LOOP(T, TAG)                                                   \
    static void                                                                       \
    iarange_loop_##TAG(char *out, int64_t begin, int64_t end, const RangeParams *p)   \
    {                                                                                 \
        T *o = (T *)out;                                                              \
        for (int64_t i = begin; i < end; i++) {                                       \
            o[i] = (T)(int64_t)((uint64_t)p->istart + (uint64_t)i * (uint64_t)p->istep); \
        }                                                                             \
    }

DEFINE_RANGE_LOOP(uint8_t, u1, STORE_INT)
DEFINE_RANGE_LOOP(int8_t, i1, STORE_INT)
DEFINE_RANGE_LOOP(int16_t, i2, STORE_INT)
DEFINE_RANGE_LOOP(int32_t, i4, STORE_INT)
DEFINE_RANGE_LOOP(int64_t, i8, STORE_INT)
DEFINE_RANGE_LOOP(ptl_half, f2, STORE_HALF)
DEFINE_RANGE_LOOP(ptl_bf16, bf, STORE_BF16)
DEFINE_RANGE_LOOP(float, f4, STORE_CAST)
DEFINE_RANGE_LOOP(double, f8, STORE_CAST)
DEFINE_IARANGE_LOOP(uint8_t, u1)
DEFINE_IARANGE_LOOP(int8_t, i1)
DEFINE_IARANGE_LOOP(int16_t, i2)
DEFINE_IARANGE_LOOP(int32_t, i4)
DEFINE_IARANGE_LOOP(int64_t, i8)

/* ORDER DTYPE; NULL (bool) = not implemented, as in PyTorch */
static const RangeLoop range_loops[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_UINT8] = range_loop_u1,     [PTL_DTYPE_INT8] = range_loop_i1,
    [PTL_DTYPE_INT16] = range_loop_i2,     [PTL_DTYPE_INT32] = range_loop_i4,
    [PTL_DTYPE_INT64] = range_loop_i8,     [PTL_DTYPE_FLOAT16] = range_loop_f2,
    [PTL_DTYPE_BFLOAT16] = range_loop_bf,  [PTL_DTYPE_FLOAT32] = range_loop_f4,
    [PTL_DTYPE_FLOAT64] = range_loop_f8,
};
static const RangeLoop iarange_loops[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_UINT8] = iarange_loop_u1,   [PTL_DTYPE_INT8] = iarange_loop_i1,
    [PTL_DTYPE_INT16] = iarange_loop_i2,   [PTL_DTYPE_INT32] = iarange_loop_i4,
    [PTL_DTYPE_INT64] = iarange_loop_i8,
};

typedef struct RangeJob {
    RangeLoop loop;
    char *out;
    const RangeParams *p;
} RangeJob;

static int
range_chunk(void *ctx, int64_t begin, int64_t end)
{
    const RangeJob *job = ctx;
    job->loop(job->out, begin, end, job->p);
    return 0;
}

/* Returns 0 when the dtype has a range loop, else -1 with PyTorch's "arange_cpu" error. */
static int
range_dtype_check(const char *kernel, PtlDtype dt)
{
    if (range_loops[dt] == NULL) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'",
                             kernel, ptl_dtype_legacy_name(dt));
    }
    return 0;
}

/* Makes the 1-D range tensor of p->n elements of dt and puts it on the stack (on dev). */
static int
set_range(PtlIValue *s, const RangeParams *p, PtlDtype dt, PtlDevice dev)
{
    int integral = ptl_dtype_is_integral(dt, 0) && p->kind == RANGE_ARANGE;
    RangeJob job = {integral ? iarange_loops[dt] : range_loops[dt], NULL, p};
    PtlTensorImpl *t = ptl_empty(1, &p->n, dt, home(dev));
    if (t == NULL) {
        return -1;
    }
    if (dev.type == PTL_DEVICE_META) {
        return set_result(s, t, dev);
    }
    job.out = ptl_tensor_data(t);
    void *token = p->n > PTL_GRAIN_SIZE ? ptl_nogil_begin() : NULL;
    int rc = ptl_parallel_for(0, p->n, PTL_GRAIN_SIZE, range_chunk, &job);
    ptl_nogil_end(token);
    if (rc < 0) {
        ptl_decref(t);
        return -1;
    }
    return set_result(s, t, dev);
}

/* Formats a Scalar argument for messages: ints as ints, floats as %g ("inf", "1.5"). */
static void
format_scalar(char *buf, size_t n, const PtlIValue *v)
{
    if (v->tag == PTL_IV_DOUBLE) {
        snprintf(buf, n, "%g", v->u.d);
    }
    else {
        snprintf(buf, n, "%lld", (long long)ptl_iv_to_int(v));
    }
}

/* arange(Scalar end, *, ScalarType? dtype, ...), arange.start(Scalar start, Scalar end, *,
 * ...), arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ...): [start, end) in
 * steps of `step`; int64 when every bound is an integer and dtype is None, else the default
 * dtype.  ceil((end - start) / step) elements, computed in double; integer dtypes truncate
 * the bounds first and count in int64 (PyTorch's arange_out). */
static int
arange_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlIValue one = ptl_iv_int(1), zero = ptl_iv_int(0);
    int nscalar = op->id == PTL_OP_arange ? 1 : op->id == PTL_OP_arange_start ? 2 : 3;
    const PtlIValue *start = nscalar == 1 ? &zero : &s[0];
    const PtlIValue *end = nscalar == 1 ? &s[0] : &s[1];
    const PtlIValue *step = nscalar == 3 ? &s[2] : &one;
    int all_int = start->tag != PTL_IV_DOUBLE && end->tag != PTL_IV_DOUBLE &&
                  step->tag != PTL_IV_DOUBLE;
    PtlDtype dt = dtype_or(&s[nscalar], all_int ? PTL_DTYPE_INT64 : ptl_default_dtype());
    PtlDevice dev = device_or(&s[nscalar + 2], ptl_device_cpu());
    RangeParams p = {RANGE_ARANGE, ptl_iv_to_double(start), ptl_iv_to_double(end),
                     ptl_iv_to_double(step), 0, 0, 0, 0};
    char b1[64], b2[64];
    double size;
    if (range_dtype_check("arange_cpu", dt) < 0 || check_device(dev) < 0) {
        return -1;
    }
    if (p.step == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "step must be nonzero");
    }
    if (!isfinite(p.start) || !isfinite(p.end)) {
        format_scalar(b1, sizeof(b1), start);
        format_scalar(b2, sizeof(b2), end);
        return ptl_error_set(PTL_ERR_RUNTIME, "unsupported range: %s -> %s", b1, b2);
    }
    if (!((p.step > 0 && p.end >= p.start) || (p.step < 0 && p.end <= p.start))) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "upper bound and lower bound inconsistent with step sign");
    }
    if (ptl_dtype_is_integral(dt, 0)) {
        /* an int64 arange takes the bounds and the step in int64, with PyTorch's overflow
         * error for a value outside it (smaller integer dtypes do not check, as PyTorch's) */
        if (dt == PTL_DTYPE_INT64 && (ptl_scalar_check_range(start, dt) < 0 ||
                                      ptl_scalar_check_range(end, dt) < 0 ||
                                      ptl_scalar_check_range(step, dt) < 0)) {
            return -1;
        }
        p.istart = range_iv_to_i64(start);
        p.istep = range_iv_to_i64(step);
    }
    if (dt == PTL_DTYPE_INT64) {
        int64_t iend = range_iv_to_i64(end);
        if (p.istep == 0) {
            return ptl_error_set(PTL_ERR_VALUE, "step must be nonzero");
        }
        /* a span past int64 (or INT64_MIN / -1) is more elements than int64 counts */
        int64_t span;
        if (__builtin_sub_overflow(iend, p.istart, &span) ||
            __builtin_add_overflow(span, p.istep - (p.istep > 0 ? 1 : -1), &span) ||
            (span == INT64_MIN && p.istep == -1)) {
            return ptl_error_set(PTL_ERR_RUNTIME, "invalid size, possible overflow?");
        }
        size = (double)(span / p.istep);
    }
    else {
        size = ceil((p.end - p.start) / p.step);
    }
    if (!(size >= 0 && size <= 9.2233720368547758e18)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "invalid size, possible overflow?");
    }
    p.n = (int64_t)size;
    return set_range(s, &p, dt, dev);
}

/* *d = the end point v as an integer dtype dt holds it: truncated, then wrapped to dt's
 * width (PyTorch's kernels convert start and end to the dtype first, c10's checked
 * conversion: linspace(1.157, 5.9, 4, dtype=int64) runs from 1 to 5, an end of -1 in uint8
 * is 255, -256 is refused).  0 or -1. */
static int
range_end_in_int(double *d, const PtlIValue *v, PtlDtype dt)
{
    if (ptl_scalar_check_range(v, dt) < 0) {
        return -1;
    }
    int64_t i = ptl_iv_to_int(v);
    int bits = 8 * (int)ptl_dtype_itemsize(dt);
    if (bits < 64) {
        uint64_t low = (uint64_t)i & ((UINT64_C(1) << bits) - 1);
        int negative = dt != PTL_DTYPE_UINT8 && (low >> (bits - 1)) != 0;
        i = negative ? (int64_t)low - ((int64_t)1 << bits) : (int64_t)low;
    }
    *d = (double)i;
    return 0;
}

/* linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype, ...) and
 * logspace(Scalar start, Scalar end, int steps, float base=10.0, *, ...): `steps` evenly
 * spaced points from start to end (both included), or base ** those points */
static int
linspace_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int log = op->id == PTL_OP_logspace;
    PtlDevice dev = device_or(&s[log ? 6 : 5], ptl_device_cpu());
    /* complex ends or a complex dtype take the Complex key's kernel (complex_parts.c), which
     * the meta device does not reach: its result's dtype is inferred here alike, and nothing
     * is filled */
    int meta = dev.type == PTL_DEVICE_META;
    int complex_ends = ptl_iv_imag(&s[0]) != 0 || ptl_iv_imag(&s[1]) != 0 ||
                       s[0].tag == PTL_IV_COMPLEX || s[1].tag == PTL_IV_COMPLEX;
    PtlDtype dt = dtype_or(&s[log ? 4 : 3], meta && complex_ends
                                                ? ptl_dtype_to_complex(ptl_default_dtype())
                                                : ptl_default_dtype());
    RangeParams p = {log ? RANGE_LOGSPACE : RANGE_LINSPACE, ptl_iv_to_double(&s[0]),
                     ptl_iv_to_double(&s[1]), 0, log ? s[3].u.d : 0, 0, 0, s[2].u.i};
    if ((!(meta && ptl_dtype_is_complex(dt)) &&
         range_dtype_check(log ? "logspace_cpu" : "linspace_cpu", dt) < 0) ||
        check_device(dev) < 0) {
        return -1;
    }
    if (p.n < 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "number of steps must be non-negative");
    }
    /* one step is PyTorch's fill of start (logspace: base ** start) in double */
    if (ptl_dtype_is_integral(dt, 0) && !meta && p.n > 1 &&
        (range_end_in_int(&p.start, &s[0], dt) < 0 || range_end_in_int(&p.end, &s[1], dt) < 0)) {
        return -1;
    }
    if (p.n == 1) {
        p.end = p.start;
    }
    p.step = p.n > 1 ? (p.end - p.start) / (double)(p.n - 1) : 0;
    return set_range(s, &p, dt, dev);
}

/* ---- eye, scalar_tensor ---- */

/* eye(int n, *, ScalarType? dtype, ...) and eye.m(int n, int m, *, ...): an n x m tensor
 * with ones on the main diagonal */
static int
eye_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int has_m = op->id == PTL_OP_eye_m;
    int64_t sizes[2] = {s[0].u.i, has_m ? s[1].u.i : s[0].u.i};
    PtlDtype dt = dtype_or(&s[has_m ? 2 : 1], ptl_default_dtype());
    PtlDevice dev = device_or(&s[has_m ? 4 : 3], ptl_device_cpu());
    PtlIValue zero = ptl_iv_int(0), one = ptl_iv_int(1);
    PtlTensorImpl *t = NULL, *diag = NULL;
    if (sizes[0] < 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "n must be greater or equal to 0, got %lld",
                             (long long)sizes[0]);
    }
    if (sizes[1] < 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "m must be greater or equal to 0, got %lld",
                             (long long)sizes[1]);
    }
    if (check_device(dev) < 0 || (t = new_filled(2, sizes, dt, &zero, dev)) == NULL) {
        return -1;
    }
    /* the diagonal as a 1-D view with stride m + 1 */
    int64_t dsize = sizes[0] < sizes[1] ? sizes[0] : sizes[1], dstride = sizes[1] + 1;
    if ((diag = ptl_tensor_impl_view(t, 1, &dsize, &dstride, 0)) == NULL ||
        fill_new(diag, &one) < 0) {
        goto error;
    }
    ptl_decref(diag);
    return set_result(s, t, dev);
error:
    ptl_xdecref(diag);
    ptl_decref(t);
    return -1;
}

/* scalar_tensor(Scalar s, *, ScalarType? dtype, ...): a 0-dim tensor of the default dtype
 * unless dtype is given */
static int
scalar_tensor_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlDtype dt = dtype_or(&s[1], ptl_default_dtype());
    PtlDevice dev = device_or(&s[3], ptl_device_cpu());
    PtlTensorImpl *t;
    /* PyTorch's checked conversion; a half type converts through double there (1e300 gives
     * inf, 1j double's error) */
    int halves = dt == PTL_DTYPE_FLOAT16 || dt == PTL_DTYPE_BFLOAT16;
    if (check_device(dev) < 0 ||
        ptl_scalar_check_range(&s[0], halves ? PTL_DTYPE_FLOAT64 : dt) < 0 ||
        (t = new_filled(0, NULL, dt, &s[0], dev)) == NULL) {
        return -1;
    }
    return set_result(s, t, dev);
}

/* ---- tril_indices, triu_indices ---- */

/* The columns [*lo, *hi) of row i kept by the lower (tril) or upper triangle at offset off,
 * which the caller clamped to [-row, col] so that i + off cannot overflow. */
static inline void
tri_row_span(int upper, int64_t i, int64_t off, int64_t col, int64_t *lo, int64_t *hi)
{
    int64_t d = i + off;
    *lo = upper ? (d > 0 ? d : 0) : 0;
    *hi = upper ? col : (d + 1 < 0 ? 0 : d + 1 < col ? d + 1 : col);
    if (*hi < *lo) {
        *hi = *lo;
    }
}

/* The sum over rows i in [0, row) of clamp(i + c, 0, col), in closed form (row alone can be
 * 2^63 - 1): the rows at or below 0, the rows of col, and the arithmetic run between them;
 * -1 when a step overflows int64 (the sum is then at least about 2^61: its [2, n] tensor
 * could not exist anyway). */
static int
tri_clamped_sum(int64_t row, int64_t col, int64_t c, int64_t *sum)
{
    int64_t zeros = c >= 1 ? 0 : -c < row ? -c + 1 : row;   /* rows i <= -c */
    int64_t first_full, full, ends, mid = 0;
    if (__builtin_sub_overflow(col, c, &first_full) || first_full > row) {
        first_full = row;
    }
    if (first_full < zeros) {
        first_full = zeros;
    }
    int64_t run = first_full - zeros;
    if (__builtin_mul_overflow(row - first_full, col, &full)) {
        return -1;
    }
    /* run odd makes the ends' sum even: the halving never rounds */
    if (run > 0 && (__builtin_add_overflow(zeros + c, first_full - 1 + c, &ends) ||
                    __builtin_mul_overflow(run % 2 == 0 ? run / 2 : run,
                                           run % 2 == 0 ? ends : ends / 2, &mid))) {
        return -1;
    }
    return __builtin_add_overflow(full, mid, sum) ? -1 : 0;
}

/* The rows of a triu that keep a column: those with i + off < col. */
static inline int64_t
triu_rows(int64_t row, int64_t col, int64_t off)
{
    int64_t rows;
    return __builtin_sub_overflow(col, off, &rows) || rows > row ? row : rows;
}

/* How many indices tri_row_span keeps over the rows [0, row): a tril row i keeps
 * clamp(i + off + 1, 0, col) columns (all from off = col - 1 on), a triu row
 * col - clamp(i + off, 0, col) (none from i = col - off on). */
static int
tri_count(int upper, int64_t row, int64_t col, int64_t off, int64_t *n)
{
    if (!upper) {
        return tri_clamped_sum(row, col, off < col ? off + 1 : col, n);
    }
    int64_t rows = triu_rows(row, col, off), all, below;
    if (__builtin_mul_overflow(rows, col, &all) ||
        tri_clamped_sum(rows, col, off, &below) < 0) {
        return -1;
    }
    *n = all - below;
    return 0;
}

#define TRI_FILL(T)                                                                  \
    do {                                                                             \
        T *r0 = (T *)base, *r1 = r0 + n;                                             \
        for (int64_t i = first; i < last; i++) {                                     \
            int64_t lo, hi;                                                          \
            tri_row_span(upper, i, off, col, &lo, &hi);                              \
            for (int64_t j = lo; j < hi; j++) {                                      \
                *r0++ = (T)i;                                                        \
                *r1++ = (T)j;                                                        \
            }                                                                        \
        }                                                                            \
    } while (0)

/* tril_indices / triu_indices(int row, int col, int offset=0, *, ScalarType? dtype=long, ...):
 * the (row, col) coordinates of the elements on or below (tril) or on or above (triu) the
 * offset-th diagonal of a row x col matrix, as a 2 x N tensor in row-major order; one pass
 * of stores per row, int32 or int64 as in PyTorch. */
static int
tri_indices_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int upper = op->id == PTL_OP_triu_indices;
    int64_t row = s[0].u.i, col = s[1].u.i, off = s[2].u.i;
    PtlDtype dt = dtype_or(&s[3], PTL_DTYPE_INT64);
    PtlDevice dev = device_or(&s[5], ptl_device_cpu());
    if (row < 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "row must be non-negative, got%lld",
                             (long long)row);
    }
    if (col < 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "col must be non-negative, got%lld",
                             (long long)col);
    }
    if (dt != PTL_DTYPE_INT64 && dt != PTL_DTYPE_INT32) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'",
                             upper ? "triu_indices" : "tril_indices",
                             ptl_dtype_legacy_name(dt));
    }
    off = off < -row ? -row : off > col ? col : off;
    int64_t n;
    if (tri_count(upper, row, col, off, &n) < 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Storage size calculation overflowed: %s(%lld, "
                             "%lld, offset) has more than 2^63 - 1 indices",
                             upper ? "triu_indices" : "tril_indices", (long long)row,
                             (long long)col);
    }
    int64_t sizes[2] = {2, n};
    PtlTensorImpl *t;
    if (check_device(dev) < 0 || (t = new_filled(2, sizes, dt, NULL, dev)) == NULL) {
        return -1;
    }
    if (n > 0 && t->device.type != PTL_DEVICE_META) {
        char *base = ptl_tensor_data(t);
        /* only the rows that keep a column (col > 0 here): a tril row from i = -off on, a
         * triu row while i + off < col (row alone can be 2^63 - 1) */
        int64_t first = upper || off >= 0 ? 0 : -off;
        int64_t last = upper ? triu_rows(row, col, off) : row;
        if (dt == PTL_DTYPE_INT64) {
            TRI_FILL(int64_t);
        }
        else {
            TRI_FILL(int32_t);
        }
    }
    return set_result(s, t, dev);
}
#undef TRI_FILL

/* ---- resize_ and set_ (ATen/native/Resize.cpp, TensorShape.cpp) ---- */

/* resize_(Tensor(a!) self, int[] size, *, MemoryFormat? memory_format) and
 * resize_as_(Tensor(a!) self, Tensor the_template, *, MemoryFormat? memory_format): self takes
 * the new sizes with contiguous strides, its storage growing, never shrinking, when the
 * elements past its offset do not fit; the same sizes leave it as it is, strides included,
 * as in PyTorch, unless memory_format names the strides to take.  The Autograd key refuses a
 * tensor that requires grad (autograd_kernel.c). */
static int
resize_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int as = op->id == PTL_OP_resize_as_;
    int64_t n = as ? s[1].u.t->dim : s[1].u.il.n;
    const int64_t *sizes = as ? s[1].u.t->sizes : s[1].u.il.data;
    char buf[256];
    if (n > PTL_MAX_DIMS) {
        return ptl_error_set(PTL_ERR_RUNTIME, "pytorchlite supports at most %d dimensions",
                             PTL_MAX_DIMS);
    }
    for (int64_t i = 0; i < n; i++) {
        if (sizes[i] < 0) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "Trying to create tensor with negative dimension %lld: %s",
                                 (long long)sizes[i], ptl_format_sizes(buf, sizeof(buf), n, sizes));
        }
    }
    if (s[2].tag == PTL_IV_MEMFORMAT) {
        PtlMemoryFormat f = (PtlMemoryFormat)s[2].u.i;
        if (f == PTL_MEMORY_FORMAT_PRESERVE) {
            return ptl_error_set(PTL_ERR_RUNTIME, "Unsupported memory formatPreserve");
        }
        if (ptl_memory_format_check(f, (int)n) < 0) {
            return -1;
        }
    }
    if (n != self->dim || memcmp(sizes, self->sizes, sizeof(int64_t) * (size_t)n) != 0) {
        if (ptl_tensor_impl_resize(self, (int)n, sizes) < 0) {
            return -1;
        }
        ptl_tensor_bump_version(self);
    }
    if (s[2].tag == PTL_IV_MEMFORMAT) {
        int64_t sz[PTL_MAX_DIMS], strides[PTL_MAX_DIMS];
        memcpy(sz, self->sizes, sizeof(int64_t) * (size_t)n);
        ptl_memory_format_strides((PtlMemoryFormat)s[2].u.i, (int)n, sz, strides);
        if (ptl_tensor_impl_set_storage(self, self->storage, self->storage_offset, (int)n, sz,
                                        strides) < 0) {
            return -1;
        }
    }
    ptl_incref(self);
    return 0;
}

/* "cpu", "meta", "cuda:0": a device as PyTorch prints it */
static void
device_str(char *buf, size_t n, PtlDevice d)
{
    if (d.index >= 0) {
        snprintf(buf, n, "%s:%d", ptl_device_type_name(d.type), d.index);
    }
    else {
        snprintf(buf, n, "%s", ptl_device_type_name(d.type));
    }
}

/* set_.source_Tensor(Tensor(a!) self, Tensor source): self views source's storage with
 * source's geometry (the storage overloads are Tensor.set_'s, in Python).  It has no
 * derivative: under the Autograd key a self or source that requires grad gives self a
 * NotImplemented node, as in PyTorch. */
static int
set_source_tensor_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *src = s[1].u.t;
    if (self->dtype != src->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Could not set tensor of type %s to a tensor of "
                             "type %s", ptl_dtype_cpp_name(src->dtype),
                             ptl_dtype_cpp_name(self->dtype));
    }
    if (!ptl_device_equal(self->storage->device, src->storage->device)) {
        char a[32], b[32];
        device_str(a, sizeof(a), self->storage->device);
        device_str(b, sizeof(b), src->storage->device);
        return ptl_error_set(PTL_ERR_RUNTIME, "Attempted to set the storage of a tensor on "
                             "device \"%s\" to a storage on different device \"%s\".  This "
                             "is no longer allowed; the devices must match.",
                             a, b);
    }
    if (ptl_tensor_impl_set_storage(self, src->storage, src->storage_offset, src->dim,
                                    src->sizes, src->strides) < 0) {
        return -1;
    }
    ptl_tensor_bump_version(self);
    ptl_incref(self);
    return 0;
}

static const PtlKernelReg resize_kernels[] = {
    {PTL_OP_resize_, PTL_KEY_CPU, resize_cpu},
    {PTL_OP_resize_as_, PTL_KEY_CPU, resize_cpu},
    {PTL_OP_set__source_Tensor, PTL_KEY_CPU, set_source_tensor_cpu},
    /* metadata and the storage's size only: a device storage grows through its allocator's
     * copy (storage.c) */
    {PTL_OP_resize_, PTL_KEY_CUDA, resize_cpu},
    {PTL_OP_resize_as_, PTL_KEY_CUDA, resize_cpu},
    {PTL_OP_set__source_Tensor, PTL_KEY_CUDA, set_source_tensor_cpu},
};
PTL_DEFINE_REGISTER(resize_kernels)

#define FACTORY(ID, FN) {PTL_OP_##ID, PTL_KEY_CPU, FN}, {PTL_OP_##ID, PTL_KEY_CUDA, FN}
static const PtlKernelReg factory_kernels[] = {
    FACTORY(empty_memory_format, empty_cpu),
    FACTORY(empty_strided, empty_cpu),
    FACTORY(zeros, fill_factory_cpu),
    FACTORY(ones, fill_factory_cpu),
    FACTORY(full, fill_factory_cpu),
    FACTORY(empty_like, like_cpu),
    FACTORY(zeros_like, like_cpu),
    FACTORY(ones_like, like_cpu),
    FACTORY(full_like, like_cpu),
    FACTORY(arange, arange_cpu),
    FACTORY(arange_start, arange_cpu),
    FACTORY(arange_start_step, arange_cpu),
    FACTORY(linspace, linspace_cpu),
    FACTORY(logspace, linspace_cpu),
    FACTORY(eye, eye_cpu),
    FACTORY(eye_m, eye_cpu),
    FACTORY(scalar_tensor, scalar_tensor_cpu),
    FACTORY(tril_indices, tri_indices_cpu),
    FACTORY(triu_indices, tri_indices_cpu),
};
#undef FACTORY
PTL_DEFINE_REGISTER(factory_kernels)
