/* summary.c -- unique, unique_consecutive, bincount, histc, searchsorted, bucketize, one_hot.
 * Mirrors ATen/native/Unique.cpp, ATen/native/SummaryOps.cpp, ATen/native/Bucketization.cpp
 * and ATen/native/Onehot.cpp. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/error.h"
#include "../loops.h"
#include "device_compose.h"
#include "device_search.h"
#include "native.h"

/* -1, 0, 1 for a < b, a == b, a > b, the order unique sorts in: NaN last, after +inf (two
 * NaNs compare 0 here, so the stable sort keeps them in input order). */
static inline int
elem_cmp(const char *a, const char *b, PtlDtype dt)
{
    if (ptl_dtype_is_floating(dt)) {
        double x = ptl_load_double(a, dt), y = ptl_load_double(b, dt);
        if (x != x || y != y) {
            return (x != x) - (y != y);
        }
        return (x > y) - (x < y);
    }
    int64_t x = ptl_load_int(a, dt), y = ptl_load_int(b, dt);
    return (x > y) - (x < y);
}

static PtlTensorImpl *
empty_1d(int64_t n, PtlDtype dt)
{
    return ptl_empty(1, &n, dt, ptl_device_cpu());
}

/* ---- unique ---- */

/* n rows of m contiguous elements, compared lexicographically. */
typedef struct Rows {
    const char *data;
    int64_t m;
    size_t item;
    PtlDtype dtype;
} Rows;

static int
row_cmp(const Rows *r, int64_t a, int64_t b)
{
    const char *pa = r->data + a * r->m * (int64_t)r->item;
    const char *pb = r->data + b * r->m * (int64_t)r->item;
    for (int64_t k = 0; k < r->m; k++) {
        int c = elem_cmp(pa + k * (int64_t)r->item, pb + k * (int64_t)r->item, r->dtype);
        if (c != 0) {
            return c;
        }
    }
    return 0;
}

/* a == b: -0.0 equals 0.0 and NaN equals nothing */
static inline int
elem_equal(const char *a, const char *b, PtlDtype dt)
{
    if (ptl_dtype_is_floating(dt)) {
        return ptl_load_double(a, dt) == ptl_load_double(b, dt);
    }
    return ptl_load_int(a, dt) == ptl_load_int(b, dt);
}

/* Whether rows a and b are one group: every element ==, so a row holding a NaN is a group
 * of its own (as in PyTorch's unique and unique_consecutive). */
static int
row_equal(const Rows *r, int64_t a, int64_t b)
{
    const char *pa = r->data + a * r->m * (int64_t)r->item;
    const char *pb = r->data + b * r->m * (int64_t)r->item;
    for (int64_t k = 0; k < r->m; k++) {
        if (!elem_equal(pa + k * (int64_t)r->item, pb + k * (int64_t)r->item, r->dtype)) {
            return 0;
        }
    }
    return 1;
}

/* Stable bottom-up merge sort of perm[0..n) by row; tmp has n entries. */
static void
sort_rows(const Rows *r, int64_t *perm, int64_t *tmp, int64_t n)
{
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                tmp[k++] = row_cmp(r, perm[j], perm[i]) < 0 ? perm[j++] : perm[i++];
            }
            while (i < mid) {
                tmp[k++] = perm[i++];
            }
            while (j < hi) {
                tmp[k++] = perm[j++];
            }
        }
        memcpy(perm, tmp, sizeof(int64_t) * (size_t)n);
    }
}

/* Groups the rows of `t` (contiguous, n rows of m elements) after sorting them (sort) or as
 * they come (consecutive runs).  Fills first[g] (a representative row), inverse[row] and
 * counts[g]; returns the number of groups, or -1. */
static int64_t
group_rows(PtlTensorImpl *t, int64_t n, int64_t m, int sort, int64_t *first, int64_t *inverse,
           int64_t *counts)
{
    Rows r = {ptl_tensor_data(t), m, ptl_tensor_itemsize(t), t->dtype};
    int64_t *perm = malloc(sizeof(int64_t) * (size_t)(2 * n + 1)), g = -1;
    if (perm == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "out of memory");
        return -1;
    }
    for (int64_t i = 0; i < n; i++) {
        perm[i] = i;
    }
    if (sort) {
        sort_rows(&r, perm, perm + n, n);
    }
    for (int64_t i = 0; i < n; i++) {
        if (i == 0 || !row_equal(&r, perm[i - 1], perm[i])) {
            g++;
            first[g] = perm[i];
            counts[g] = 0;
        }
        inverse[perm[i]] = g;
        counts[g]++;
    }
    free(perm);
    return g + 1;
}

/* start[i] = 1 where the sorted v[i] is not == v[i - 1] (-0.0 joins 0.0, each NaN starts a
 * group, as row_equal); i in [1, n) */
#define MARK_STARTS(T, ACC, LOAD)                                                         \
    for (int64_t i = 1; i < n; i++) {                                                     \
        ACC x = LOAD(((const T *)v)[i - 1]), y = LOAD(((const T *)v)[i]);                 \
        start[i] = !(x == y);                                                             \
    }                                                                                     \
    break;

static void
mark_starts(const char *v, int64_t n, PtlDtype dt, uint8_t *start)
{
    switch (dt) {
    PTL_REAL_DTYPE_CASES(MARK_STARTS)
    }
}
#undef MARK_STARTS

/* Note [Flat unique]
 * ~~~~~~~~~~~~~~~~~~
 * unique without dim sorts the flattened tensor with sort (a stable radix sort on keys, Note
 * [Sort keys]) instead of group_rows' comparison merge sort, which loads every element
 * through a dtype switch: one pass then marks where the sorted values change, and a second
 * numbers the groups, scatters the inverse through the sort's indices and takes each group's
 * first sorted element (the first occurrence in the input, as the stable merge sort did) as
 * its value.  1M int64 in [0, 1024), one thread: 244 ms -> 11-27 ms (PyTorch 27-86 ms on a
 * loaded machine).
 *
 * flat: 1-D contiguous, n > 0 elements; inverse (n) and counts (n) are filled when not NULL.
 * Returns the values (new ref; its length is the group count), or NULL with the error set. */
static PtlTensorImpl *
unique_flat_sorted(PtlTensorImpl *flat, int64_t *inverse, int64_t *counts)
{
    PtlTensorImpl *vals = NULL;
    PtlIValue a[3] = {ptl_iv_tensor(flat), ptl_iv_int(0), ptl_iv_bool(0)};
    int64_t n = flat->numel, g = -1;
    size_t item = ptl_tensor_itemsize(flat);
    uint8_t *start = malloc((size_t)n);
    if (start == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "out of memory");
        return NULL;
    }
    if (ptl_dispatcher_call(ptl_op(PTL_OP_sort), a) < 0) {
        free(start);
        return NULL;
    }
    const char *v = ptl_tensor_data(a[0].u.t);
    const int64_t *ix = (const int64_t *)ptl_tensor_data(a[1].u.t);
    start[0] = 1;
    mark_starts(v, n, flat->dtype, start);
    int64_t ng = 0;
    for (int64_t i = 0; i < n; i++) {
        ng += start[i];
    }
    if ((vals = empty_1d(ng, flat->dtype)) == NULL) {
        goto done;
    }
    char *out = ptl_tensor_data(vals);
    for (int64_t i = 0; i < n; i++) {
        g += start[i];
        if (start[i]) {
            memcpy(out + g * (int64_t)item, v + i * (int64_t)item, item);
            if (counts != NULL) {
                counts[g] = i;   /* the group's first sorted position, until the last loop */
            }
        }
        if (inverse != NULL) {
            inverse[ix[i]] = g;
        }
    }
    for (int64_t k = 0; counts != NULL && k < ng; k++) {
        counts[k] = (k + 1 < ng ? counts[k + 1] : n) - counts[k];
    }
done:
    free(start);
    ptl_decref(a[0].u.t);
    ptl_decref(a[1].u.t);
    return vals;
}

/* _unique2(self, sorted, return_inverse, return_counts) / unique_dim(self, dim, ...) /
 * unique_consecutive(self, return_inverse, return_counts, dim):
 *   (values, inverse, counts); without dim the tensor is flattened */
static int
unique_host(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *rows = NULL, *vals = NULL, *inv = NULL, *cnt = NULL;
    PtlTensorImpl *firsts = NULL;
    int consecutive = op->id == PTL_OP_unique_consecutive;
    int has_dim = op->id == PTL_OP_unique_dim || (consecutive && s[3].tag == PTL_IV_INT);
    int want_inv = consecutive ? s[1].u.b : s[op->id == PTL_OP_unique_dim ? 3 : 2].u.b;
    int want_cnt = consecutive ? s[2].u.b : s[op->id == PTL_OP_unique_dim ? 4 : 3].u.b;
    int64_t dim = has_dim ? (consecutive ? s[3].u.i : s[1].u.i) : 0, n, m, *buf = NULL;
    if (has_dim) {
        /* a 0-dim tensor has no dim to take rows along (ptl_wrap_dim would accept 0, -1) */
        if (self->dim == 0) {
            return ptl_error_set(PTL_ERR_INDEX, "Dimension specified as %lld but tensor has no "
                                 "dimensions", (long long)dim);
        }
        if (ptl_wrap_dim(&dim, self->dim) < 0) {
            return -1;
        }
        PtlIValue a[3] = {ptl_iv_tensor(self), ptl_iv_int(0), ptl_iv_int(dim)};
        PtlTensorImpl *tr = ptl_call_tensor(PTL_OP_transpose_int, a);
        if (tr == NULL) {
            return -1;
        }
        rows = ptl_contiguous(tr);
        ptl_decref(tr);
        n = self->sizes[dim];
        m = n > 0 ? self->numel / n : 0;
    }
    else {
        rows = ptl_contiguous(self);
        n = self->numel;
        m = 1;
    }
    if (rows == NULL) {
        return -1;
    }
    if (!has_dim && !consecutive && n > 0) {
        /* Note [Flat unique] */
        PtlTensorImpl *flat = ptl_tensor_impl_view(rows, 1, &n, NULL, rows->storage_offset);
        inv = want_inv ? ptl_empty(self->dim, self->sizes, PTL_DTYPE_INT64, self->device)
                       : empty_1d(0, PTL_DTYPE_INT64);
        if (flat == NULL || inv == NULL ||
            (want_cnt && (buf = malloc(sizeof(int64_t) * (size_t)n)) == NULL)) {
            ptl_xdecref(flat);
            if (flat != NULL && inv != NULL) {
                ptl_error_set(PTL_ERR_MEMORY, "out of memory");
            }
            goto error;
        }
        vals = unique_flat_sorted(flat, want_inv ? (int64_t *)ptl_tensor_data(inv) : NULL, buf);
        ptl_decref(flat);
        if (vals == NULL || (cnt = empty_1d(want_cnt ? vals->numel : 0, PTL_DTYPE_INT64)) == NULL) {
            goto error;
        }
        if (buf != NULL) {
            memcpy(ptl_tensor_data(cnt), buf, sizeof(int64_t) * (size_t)cnt->numel);
        }
        goto out;
    }
    if ((buf = malloc(sizeof(int64_t) * (size_t)(3 * n + 1))) == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "out of memory");
        goto error;
    }
    int64_t *first = buf, *inverse = buf + n, *counts = buf + 2 * n;
    int64_t g = group_rows(rows, n, m, !consecutive, first, inverse, counts);
    if (g < 0) {
        goto error;
    }
    if ((firsts = empty_1d(g, PTL_DTYPE_INT64)) == NULL) {
        goto error;
    }
    memcpy(ptl_tensor_data(firsts), first, sizeof(int64_t) * (size_t)g);
    if (has_dim) {
        PtlIValue a[3] = {ptl_iv_tensor(self), ptl_iv_int(dim), ptl_iv_tensor(firsts)};
        vals = ptl_call_tensor(PTL_OP_index_select, a);
    }
    else {
        PtlIValue a[3] = {ptl_iv_tensor(rows), ptl_iv_int(0), ptl_iv_tensor(firsts)};
        PtlTensorImpl *flat;
        int64_t nflat = n;
        if ((flat = ptl_tensor_impl_view(rows, 1, &nflat, NULL, rows->storage_offset)) == NULL) {
            goto error;
        }
        a[0] = ptl_iv_tensor(flat);
        vals = ptl_call_tensor(PTL_OP_index_select, a);
        ptl_decref(flat);
    }
    if (vals == NULL) {
        goto error;
    }
    /* unique_dim and unique_consecutive with a dim return inverse and counts whatever
     * they were asked, as PyTorch's unique_dim_consecutive does */
    int dim_op = has_dim;
    if (want_inv || dim_op) {
        inv = has_dim ? empty_1d(n, PTL_DTYPE_INT64)
                      : ptl_empty(self->dim, self->sizes, PTL_DTYPE_INT64, self->device);
        if (inv != NULL) {
            memcpy(ptl_tensor_data(inv), inverse, sizeof(int64_t) * (size_t)n);
        }
    }
    else {
        inv = empty_1d(0, PTL_DTYPE_INT64);
    }
    if ((cnt = empty_1d(want_cnt || dim_op ? g : 0, PTL_DTYPE_INT64)) != NULL &&
        (want_cnt || dim_op)) {
        memcpy(ptl_tensor_data(cnt), counts, sizeof(int64_t) * (size_t)g);
    }
    if (inv == NULL || cnt == NULL) {
        goto error;
    }
out:
    free(buf);
    ptl_decref(rows);
    ptl_xdecref(firsts);
    s[0] = ptl_iv_tensor(vals);
    s[1] = ptl_iv_tensor(inv);
    s[2] = ptl_iv_tensor(cnt);
    return 0;
error:
    free(buf);
    ptl_xdecref(rows);
    ptl_xdecref(firsts);
    ptl_xdecref(vals);
    ptl_xdecref(inv);
    ptl_xdecref(cnt);
    return -1;
}

/* _unique2, unique_dim, unique_consecutive: on CUDA (or while the tests emulate it) a walk
 * of a host copy (Note [Host walks for data-dependent sizes] in device_compose.h) */
static int
unique_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    return ptl_on_device_path(s[0].u.t) ? ptl_run_on_host(unique_host, op, ks, s)
                                        : unique_host(op, ks, s);
}

/* ---- bincount, histc ---- */


/* Note [Device one_hot and bincount]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * On a CUDA tensor (or while the tests emulate the CUDA kernels: device_reduce.h) one_hot
 * and bincount are compositions of the device's kernels, as PyTorch's CUDA ops are: the
 * input's extremes by the reduction kernels, read back to the host (a synchronisation: the
 * output's size and the errors depend on them), then zeros and a scatter_ (one_hot) or an
 * index_add_ (bincount, each bin's terms added in index order, no float atomics) on the
 * device.  The checks and messages are the CPU kernel's, in the same code. */
/* bincount's bins on the device: out[v] += w[i] (1 when w is NULL) for v = self[i]. */
static int
bincount_device(PtlTensorImpl *self, PtlTensorImpl *w, PtlTensorImpl *out)
{
    PtlTensorImpl *idx = NULL, *src = NULL;
    int rc = -1;
    int64_t n = self->numel;
    if ((idx = ptl_to_copy(self, PTL_DTYPE_INT64, &self->device)) == NULL) {
        goto done;
    }
    src = w != NULL ? ptl_to_copy(w, out->dtype, &self->device)
                    : ptl_device_full(1, &n, PTL_DTYPE_INT64, self->device, 1);
    if (src == NULL) {
        goto done;
    }
    PtlIValue a[5] = {ptl_iv_tensor(out), ptl_iv_int(0), ptl_iv_tensor(idx), ptl_iv_tensor(src),
                      ptl_iv_int(1)};
    rc = ptl_call_inplace(PTL_OP_index_add_, a);
done:
    ptl_xdecref(idx);
    ptl_xdecref(src);
    return rc;
}

/* Note [Typed bincount]
 * ~~~~~~~~~~~~~~~~~~~~~
 * An int64 or int32 self is scanned for its extremes and, without weights, counted in typed
 * loops (a generic load per value had left bincount of 1e6 values at 0.46x PyTorch's time,
 * issue 16).  The counts go to BINCOUNT_LANES histograms, value i to lane i % lanes, summed
 * at the end, so that runs of equal values do not wait on one another's stores; integer
 * sums, so the counts are exact in any order.  More than BINCOUNT_LANES_MAX bins take one
 * histogram (the lanes would no longer stay in cache).  Contiguous int64 values count into
 * 32-bit lanes in a loop unrolled by the four lanes (bincount_lanes_i8).  Weights of
 * float32 or float64 add in typed loops, in index order. */
#define BINCOUNT_LANES 4
#define BINCOUNT_LANES_MAX 65536

#define BINCOUNT_SCAN(T)                                                                  \
    for (int64_t i = 0; i < n; i++) {                                                     \
        int64_t v = ((const T *)p)[i * st];                                               \
        lo = v < lo ? v : lo;                                                             \
        hi = v > hi ? v : hi;                                                             \
    }
#define BINCOUNT_COUNT(T)                                                                 \
    for (int64_t i = 0; i < n; i++) {                                                     \
        h[(i & mask) * len + ((const T *)p)[i * st]]++;                                   \
    }

/* The extremes of the n int64 values at x into *lo and *hi (loop clones: the AVX2 one
 * compares four values at a time) */
PTL_LOOP_CLONES static void
bincount_extremes_i8(const int64_t *x, int64_t n, int64_t *lo_io, int64_t *hi_io)
{
    int64_t lo = *lo_io, hi = *hi_io;
    for (int64_t i = 0; i < n; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    *lo_io = lo;
    *hi_io = hi;
}

/* The least of self's values (at most 0) into *lo and the largest plus one (at least 0)
 * into *len, int64 and int32 in typed loops */
static void
bincount_extremes(const PtlTensorImpl *self, int64_t *lo_out, int64_t *len)
{
    const char *p = ptl_tensor_data(self);
    int64_t n = self->numel, st = self->strides[0], lo = 0, hi = -1;
    if (self->dtype == PTL_DTYPE_INT64 && st == 1) {
        bincount_extremes_i8((const int64_t *)p, n, &lo, &hi);
    }
    else if (self->dtype == PTL_DTYPE_INT64) {
        BINCOUNT_SCAN(int64_t)
    }
    else if (self->dtype == PTL_DTYPE_INT32) {
        BINCOUNT_SCAN(int32_t)
    }
    else {
        st *= (int64_t)ptl_tensor_itemsize(self);
        for (int64_t i = 0; i < n; i++) {
            int64_t v = ptl_load_int(p + i * st, self->dtype);
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    }
    *lo_out = lo;
    *len = hi + 1;
}

/* h[k * len + x[i]]++ for lane k = i % 4 of the n contiguous int64 values x (32-bit lanes:
 * the caller keeps n / 4 + 1 below 2^31), unrolled so that the four lanes' increments are
 * independent (0.73x PyTorch's time for 1e6 values into 1000 bins with a lane index computed
 * per value, issue 16) */
static void
bincount_lanes_i8(const int64_t *x, int64_t n, int32_t *h, int64_t len)
{
    int32_t *h1 = h + len, *h2 = h1 + len, *h3 = h2 + len;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        h[x[i]]++;
        h1[x[i + 1]]++;
        h2[x[i + 2]]++;
        h3[x[i + 3]]++;
    }
    for (; i < n; i++) {
        h[(i & 3) * len + x[i]]++;
    }
}

/* The counts of self's values (all in [0, len)) into out[0..len), zeroed; 0 or -1 */
static int
bincount_counts(const PtlTensorImpl *self, int64_t *out, int64_t len)
{
    const char *p = ptl_tensor_data(self);
    int64_t n = self->numel, st = self->strides[0];
    int64_t lanes = len <= BINCOUNT_LANES_MAX && n >= BINCOUNT_LANES * len ? BINCOUNT_LANES : 1;
    int64_t mask = lanes - 1;   /* lanes: a power of 2 */
    if (lanes == BINCOUNT_LANES && self->dtype == PTL_DTYPE_INT64 && st == 1 &&
        n / BINCOUNT_LANES < INT32_MAX) {
        int32_t *h32 = calloc((size_t)(lanes * len), sizeof(int32_t));
        if (h32 == NULL) {
            return ptl_error_set(PTL_ERR_MEMORY, "out of memory");
        }
        bincount_lanes_i8((const int64_t *)p, n, h32, len);
        for (int64_t v = 0; v < len; v++) {
            out[v] = (int64_t)h32[v] + h32[len + v] + h32[2 * len + v] + h32[3 * len + v];
        }
        free(h32);
        return 0;
    }
    int64_t *h = lanes == 1 ? out : calloc((size_t)(lanes * len), sizeof(int64_t));
    if (h == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory");
    }
    if (self->dtype == PTL_DTYPE_INT64) {
        BINCOUNT_COUNT(int64_t)
    }
    else if (self->dtype == PTL_DTYPE_INT32) {
        BINCOUNT_COUNT(int32_t)
    }
    else {
        st *= (int64_t)ptl_tensor_itemsize(self);
        for (int64_t i = 0; i < n; i++) {
            h[(i & mask) * len + ptl_load_int(p + i * st, self->dtype)]++;
        }
    }
    for (int64_t v = 0; lanes > 1 && v < len; v++) {
        int64_t c = 0;
        for (int64_t l = 0; l < lanes; l++) {
            c += h[l * len + v];
        }
        out[v] = c;
    }
    if (lanes > 1) {
        free(h);
    }
    return 0;
}
#undef BINCOUNT_SCAN
#undef BINCOUNT_COUNT

/* bincount(Tensor self, Tensor? weights=None, int minlength=0): counts (int64) or weight
 * sums (float32 weights stay float32, others give float64) of each value of 1-D self */
static int
bincount_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *w = s[1].tag == PTL_IV_TENSOR ? s[1].u.t : NULL;
    PtlTensorImpl *out;
    int64_t minlength = s[2].u.i, len = 0;
    if (!ptl_dtype_is_integral(self->dtype, 0)) {
        return ptl_dtype_not_implemented(op, self->dtype);
    }
    if (minlength < 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "minlength should be >= 0");
    }
    if (self->dim != 1) {
        return ptl_error_set(PTL_ERR_RUNTIME, "bincount only supports 1-d non-negative integral "
                                              "inputs.");
    }
    if (w != NULL && (w->dim != 1 || w->sizes[0] != self->sizes[0])) {
        return ptl_error_set(PTL_ERR_RUNTIME, "weights should be 1-d and have the same length as "
                                              "input");
    }
    const char *p = ptl_tensor_data(self);
    int64_t st = self->strides[0] * (int64_t)ptl_tensor_itemsize(self), lo = 0;
    int dev = ptl_on_device_path(self);
    if (!dev) {   /* Note [Typed bincount] */
        bincount_extremes(self, &lo, &len);
    }
    if (dev && self->numel > 0) {
        if (ptl_device_reduce_read(PTL_OP_amin, self, &lo) < 0 ||
            ptl_device_reduce_read(PTL_OP_amax, self, &len) < 0) {
            return -1;
        }
        len += 1;
    }
    if (lo < 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "bincount only supports 1-d non-negative "
                                              "integral inputs.");
    }
    len = len > minlength ? len : minlength;
    PtlDtype odt = w == NULL ? PTL_DTYPE_INT64
                   : w->dtype == PTL_DTYPE_FLOAT32 ? PTL_DTYPE_FLOAT32
                                                   : PTL_DTYPE_FLOAT64;
    if (dev) {
        if ((out = ptl_device_full(1, &len, odt, self->device, 0)) == NULL ||
            (self->numel > 0 && bincount_device(self, w, out) < 0)) {
            ptl_xdecref(out);
            return -1;
        }
        s[0] = ptl_iv_tensor(out);
        return 0;
    }
    if ((out = empty_1d(len, odt)) == NULL) {
        return -1;
    }
    char *o = ptl_tensor_data(out);
    memset(o, 0, (size_t)len * ptl_tensor_itemsize(out));
    const char *wp = w ? ptl_tensor_data(w) : NULL;
    int64_t wst = w ? w->strides[0] * (int64_t)ptl_tensor_itemsize(w) : 0;
    if (w == NULL && bincount_counts(self, (int64_t *)o, len) < 0) {
        ptl_decref(out);
        return -1;
    }
    /* int64 values with float32 or float64 weights in typed loops, in index order (the
     * bits of the sequential sums; 0.92x PyTorch's time through the generic loads) */
#define BINCOUNT_WEIGHTS(T, W)                                                              \
    for (int64_t i = 0; i < self->numel; i++) {                                             \
        ((T *)o)[((const int64_t *)p)[i * (st / 8)]] +=                                     \
            (T)((const W *)wp)[i * (wst / (int64_t)sizeof(W))];                              \
    }
    if (w != NULL && self->dtype == PTL_DTYPE_INT64 && w->dtype == PTL_DTYPE_FLOAT32) {
        BINCOUNT_WEIGHTS(float, float)
        w = NULL;
    }
    else if (w != NULL && self->dtype == PTL_DTYPE_INT64 && w->dtype == PTL_DTYPE_FLOAT64) {
        BINCOUNT_WEIGHTS(double, double)
        w = NULL;
    }
#undef BINCOUNT_WEIGHTS
    for (int64_t i = 0; w != NULL && i < self->numel; i++) {
        int64_t v = ptl_load_int(p + i * st, self->dtype);
        if (w == NULL) {
            ((int64_t *)o)[v]++;
        }
        else if (odt == PTL_DTYPE_FLOAT32) {
            ((float *)o)[v] += (float)ptl_load_double(wp + i * wst, w->dtype);
        }
        else {
            ((double *)o)[v] += ptl_load_double(wp + i * wst, w->dtype);
        }
    }
    s[0] = ptl_iv_tensor(out);
    return 0;
}

/* Note [Device histc]
 * ~~~~~~~~~~~~~~~~~~~
 * histc of a CUDA tensor (or of any while the tests emulate the CUDA kernels) keeps the
 * checks below and composes device kernels: the data's range, when min == max asks for it,
 * by amin and amax read back to the host (a synchronisation, as PyTorch's CUDA histc); each
 * value's bin (v - min) * bins / (max - min) in float64 by pointwise kernels, the CPU's
 * operations in its order, so the same bin; values outside [min, max] (and NaN) sent to a
 * bin past the last; and the counts by index_add_ of ones into float64 bins, in index order
 * (exact), then cast to self's dtype.  A range with nan or inf (given, or the data's with
 * min == max: nan propagates) is refused on both, as PyTorch's. */

/* histc's error for a range (given, or the data's) with nan or inf, PyTorch's.  -1. */
static int
histc_not_finite(double lo, double hi)
{
    return ptl_error_set(PTL_ERR_RUNTIME, "torch.histc: range of [%f, %f] is not finite", lo,
                         hi);
}

/* *v = op id (amin or amax) of all of t, read back as a double.  0 or -1. */
static int
read_extreme(PtlOpId id, PtlTensorImpl *t, double *v)
{
    PtlIValue a[1] = {ptl_iv_tensor(t)};
    PtlDevice cpu = ptl_device_cpu();
    PtlTensorImpl *r = ptl_call_k(id, 1, a), *h = NULL;
    if (r != NULL && (h = ptl_to_copy(r, PTL_DTYPE_FLOAT64, &cpu)) != NULL) {
        *v = *(const double *)ptl_tensor_data(h);
    }
    ptl_xdecref(r);
    ptl_xdecref(h);
    return h != NULL ? 0 : -1;
}

/* op id on tensor a and the host double v (a 0-dim CPU float64 tensor); new ref or NULL */
static PtlTensorImpl *
with_scalar(PtlOpId id, PtlTensorImpl *a, double v)
{
    PtlTensorImpl *c = ptl_scalar_tensor(v, PTL_DTYPE_FLOAT64, ptl_device_cpu()), *r = NULL;
    PtlIValue args[2] = {ptl_iv_tensor(a), ptl_iv_tensor(c)};
    r = c != NULL ? ptl_call_k(id, 2, args) : NULL;
    ptl_xdecref(c);
    return r;
}

/* 0 when histc's outer edges lo and hi fit dt, else PyTorch's overflow error (its linspace of
 * the edges converts them to self's dtype) */
static int
histc_edges_check(double lo, double hi, PtlDtype dt)
{
    PtlIValue lv = ptl_iv_double(lo), hv = ptl_iv_double(hi);
    return ptl_scalar_check_range(&lv, dt) < 0 || ptl_scalar_check_range(&hv, dt) < 0 ? -1 : 0;
}

/* histc's bins of self on the device (Note [Device histc]): a new [bins] of self's dtype */
static PtlTensorImpl *
histc_device(PtlTensorImpl *self, int64_t bins, double lo, double hi)
{
    PtlTensorImpl *t[9] = {NULL}, *out = NULL, *flat;
    int64_t n = self->numel, nb = bins + 1, all = -1;
    PtlIValue cm[2] = {ptl_iv_none(), ptl_iv_int(bins - 1)};
    PtlIValue r[2] = {ptl_iv_tensor(self), ptl_iv_intlist(&all, 1)};
    /* t0 the values in float64 (flat), t1..t3 their bin positions, t4 the bins, t5..t6 in
     * range */
    if ((flat = ptl_call_k(PTL_OP_reshape, 2, r)) == NULL) {
        return NULL;
    }
    t[0] = ptl_to_copy(flat, PTL_DTYPE_FLOAT64, &self->device);
    ptl_decref(flat);
    if (t[0] == NULL ||
        (t[1] = with_scalar(PTL_OP_sub_Tensor, t[0], lo)) == NULL ||
        (t[2] = with_scalar(PTL_OP_mul_Tensor, t[1], (double)bins)) == NULL ||
        (t[3] = with_scalar(PTL_OP_div_Tensor, t[2], hi - lo)) == NULL ||
        (t[4] = ptl_to_copy(t[3], PTL_DTYPE_INT64, &self->device)) == NULL ||
        (t[5] = with_scalar(PTL_OP_ge_Tensor, t[0], lo)) == NULL ||
        (t[6] = with_scalar(PTL_OP_le_Tensor, t[0], hi)) == NULL) {
        goto done;
    }
    cm[0] = ptl_iv_tensor(t[4]);
    PtlTensorImpl *in_range = NULL, *clamped = ptl_call_k(PTL_OP_clamp_max, 2, cm);
    PtlTensorImpl *past = ptl_device_full(1, &n, PTL_DTYPE_INT64, self->device, bins);
    PtlIValue both[2] = {ptl_iv_tensor(t[5]), ptl_iv_tensor(t[6])};
    if (clamped != NULL && past != NULL &&
        (in_range = ptl_call_k(PTL_OP_logical_and, 2, both)) != NULL) {
        PtlIValue w[3] = {ptl_iv_tensor(in_range), ptl_iv_tensor(clamped), ptl_iv_tensor(past)};
        t[7] = ptl_call_k(PTL_OP_where_self, 3, w);
    }
    ptl_xdecref(in_range);
    ptl_xdecref(clamped);
    ptl_xdecref(past);
    /* t8 the counts, bins + 1 of them (the last: outside the range) */
    if (t[7] == NULL ||
        (t[8] = ptl_device_full(1, &nb, PTL_DTYPE_FLOAT64, self->device, 0)) == NULL) {
        goto done;
    }
    PtlTensorImpl *ones = ptl_device_full(1, &n, PTL_DTYPE_FLOAT64, self->device, 1);
    PtlIValue a[5] = {ptl_iv_tensor(t[8]), ptl_iv_int(0), ptl_iv_tensor(t[7]),
                      ptl_iv_tensor(ones), ptl_iv_int(1)};
    int rc = ones != NULL ? ptl_call_inplace(PTL_OP_index_add_, a) : -1;
    ptl_xdecref(ones);
    PtlIValue nr[4] = {ptl_iv_tensor(t[8]), ptl_iv_int(0), ptl_iv_int(0), ptl_iv_int(bins)};
    PtlTensorImpl *head = rc == 0 ? ptl_call_k(PTL_OP_narrow, 4, nr) : NULL;
    out = head != NULL ? ptl_to_copy(head, self->dtype, &self->device) : NULL;
    ptl_xdecref(head);
done:
    for (int i = 0; i < 9; i++) {
        ptl_xdecref(t[i]);
    }
    return out;
}

/* histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0): equal-width histogram of
 * self's values in [min, max] (min == max: the data's range), self's dtype */
static int
histc_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *c = NULL, *out;
    int64_t bins = s[1].u.i;
    double lo = ptl_iv_to_double(&s[2]), hi = ptl_iv_to_double(&s[3]);
    (void)op;
    if (!ptl_dtype_is_floating(self->dtype)) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"histogram_cpu\" not implemented for '%s'",
                             ptl_dtype_legacy_name(self->dtype));
    }
    if (bins <= 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "torch.histogram(): bins must be > 0, but got %lld "
                                              "for dimension 0",
                             (long long)bins);
    }
    if (lo > hi) {
        return ptl_error_set(PTL_ERR_RUNTIME, "torch.histc: max must be larger than min");
    }
    if (ptl_on_device_path(self)) {
        if (lo == hi && self->numel > 0 && (read_extreme(PTL_OP_amin, self, &lo) < 0 ||
                                            read_extreme(PTL_OP_amax, self, &hi) < 0)) {
            return -1;
        }
        if (!isfinite(lo) || !isfinite(hi)) {
            return histc_not_finite(lo, hi);
        }
        if (lo == hi) {
            lo -= 1;
            hi += 1;
        }
        if (histc_edges_check(lo, hi, self->dtype) < 0) {
            return -1;
        }
        return (out = histc_device(self, bins, lo, hi)) != NULL ? (s[0] = ptl_iv_tensor(out), 0)
                                                                : -1;
    }
    if ((c = ptl_contiguous(self)) == NULL) {
        return -1;
    }
    const char *p = ptl_tensor_data(c);
    size_t item = ptl_tensor_itemsize(c);
    if (lo == hi && c->numel > 0) {
        lo = hi = ptl_load_double(p, c->dtype);
        for (int64_t i = 1; i < c->numel; i++) {
            double v = ptl_load_double(p + i * (int64_t)item, c->dtype);
            lo = v < lo || v != v ? v : lo;   /* nan propagates, as aminmax */
            hi = v > hi || v != v ? v : hi;
        }
    }
    if (!isfinite(lo) || !isfinite(hi)) {
        ptl_decref(c);
        return histc_not_finite(lo, hi);
    }
    if (lo == hi) {
        lo -= 1;
        hi += 1;
    }
    if (histc_edges_check(lo, hi, self->dtype) < 0) {
        ptl_decref(c);
        return -1;
    }
    double *acc = calloc((size_t)bins, sizeof(double));
    if (acc == NULL || (out = empty_1d(bins, self->dtype)) == NULL) {
        free(acc);
        ptl_decref(c);
        return acc ? -1 : ptl_error_set(PTL_ERR_MEMORY, "out of memory");
    }
    for (int64_t i = 0; i < c->numel; i++) {
        double v = ptl_load_double(p + i * (int64_t)item, c->dtype);
        if (!(v >= lo && v <= hi)) {
            continue;
        }
        int64_t b = (int64_t)((v - lo) * (double)bins / (hi - lo));
        acc[b < bins ? b : bins - 1] += 1.0;
    }
    for (int64_t b = 0; b < bins; b++) {
        ptl_store_double(ptl_tensor_data(out) + b * (int64_t)item, self->dtype, acc[b]);
    }
    free(acc);
    ptl_decref(c);
    s[0] = ptl_iv_tensor(out);
    return 0;
}

/* ---- searchsorted, bucketize ---- */

/* Whether the search for value v (dtype vt) goes right past boundary b (dtype bt), exactly
 * when both are integers: !(b >= v), or !(b > v) when right -- PyTorch's comparisons, so a
 * NaN value (or a NaN boundary) sends the search right: a NaN value lands at the end on
 * both sides, as in PyTorch and the device's search_plan.h. */
static inline int
mixed_go_right(const char *b, PtlDtype bt, const char *v, PtlDtype vt, int right)
{
    if (!ptl_dtype_is_floating(bt) && !ptl_dtype_is_floating(vt)) {
        int64_t x = ptl_load_int(b, bt), y = ptl_load_int(v, vt);
        return right ? !(x > y) : !(x >= y);
    }
    double x = ptl_load_double(b, bt), y = ptl_load_double(v, vt);
    return right ? !(x > y) : !(x >= y);
}

int (*ptl_device_search_hook)(const PtlDeviceSearchArgs *a);

/* Note [Typed searches]
 * ~~~~~~~~~~~~~~~~~~~~~
 * One row of boundaries and values of its dtype (int64, int32, float32, float64), without a
 * sorter, search in a typed loop without branches on the data: the candidate range halves
 * by a mask, going right past boundary b when !(b >= v) (left) or !(b > v) (right), as
 * mixed_go_right does, so sorted boundaries give the generic loop's positions.  The generic
 * loop's two generic loads per step and mispredicted
 * branches had left bucketize(A, linspace(-3, 3, 100)) of 1e6 values at 0.59x PyTorch's
 * time, and isin (a search in the sorted test elements) at 0.47x (issue 16). */
#define TYPED_SEARCH(T)                                                                   \
    for (int64_t i = 0; i < n; i++) {                                                     \
        const T *b = (const T *)bp, v = ((const T *)vp)[i];                               \
        int64_t m = len;                                                                  \
        while (m > 1) {                                                                   \
            int64_t half = m / 2;                                                         \
            int64_t go = right ? !(b[half - 1] > v) : !(b[half - 1] >= v);                \
            b += half & -go;   /* a mask, not a branch */                              \
            m -= half;                                                                    \
        }                                                                                 \
        int64_t at = (b - (const T *)bp) + (len > 0 && (right ? !(*b > v) : !(*b >= v)));  \
        if (out_int32) {                                                                  \
            ((int32_t *)op)[i] = (int32_t)at;                                             \
        }                                                                                 \
        else {                                                                            \
            ((int64_t *)op)[i] = at;                                                      \
        }                                                                                 \
    }                                                                                     \
    return 1;

/* The positions of the n values vp in the len sorted boundaries bp (both of dtype dt) into
 * op (int32 or int64), Note [Typed searches]; 1 when done, 0 for the generic loop */
static int
typed_search(const char *bp, const char *vp, PtlDtype dt, int64_t len, int64_t n, int right,
             int out_int32, char *op)
{
    switch (dt) {
    case PTL_DTYPE_INT64: TYPED_SEARCH(int64_t)
    case PTL_DTYPE_INT32: TYPED_SEARCH(int32_t)
    case PTL_DTYPE_FLOAT32: TYPED_SEARCH(float)
    case PTL_DTYPE_FLOAT64: TYPED_SEARCH(double)
    default: return 0;
    }
}
#undef TYPED_SEARCH

/* 0 when t (the values, or the sorter when is_sorter) is on bnd's device, else -1 with
 * searchsorted's device error */
static int
search_device_check(const PtlTensorImpl *bnd, const PtlTensorImpl *t, int is_sorter)
{
    if (ptl_device_equal(bnd->device, t->device)) {
        return 0;
    }
    if (is_sorter) {
        return ptl_error_set(PTL_ERR_RUNTIME, "torch.searchsorted(): sorter and boundary "
                             "tensors should have same device type, but got sorter tensor "
                             "device type %s and boundaries tensor device type %s",
                             ptl_device_type_name(t->device.type),
                             ptl_device_type_name(bnd->device.type));
    }
    return ptl_error_set(PTL_ERR_RUNTIME, "torch.searchsorted(): boundaries and input value "
                         "tensors should have same device type, but got boundaries tensor "
                         "device type %s and input value tensor device type %s",
                         ptl_device_type_name(bnd->device.type),
                         ptl_device_type_name(t->device.type));
}

/* The searches of the contiguous vc in the rows of len boundaries of bc (through sc's, NULL:
 * none) into out on the device (Note [CUDA searchsorted] in src/cuda/search_plan.h); a
 * sorter's range is checked on the host first (its extremes read back).  0 or -1. */
static int
search_device(PtlTensorImpl *bc, PtlTensorImpl *vc, PtlTensorImpl *sc, PtlTensorImpl *out,
              int right, int64_t len, int64_t per_row, int batched)
{
    PtlDeviceSearchArgs a;
    int64_t lo = 0, hi = 0;
    if (sc != NULL && sc->numel > 0 &&
        (ptl_device_reduce_read(PTL_OP_amin, sc, &lo) < 0 ||
         ptl_device_reduce_read(PTL_OP_amax, sc, &hi) < 0)) {
        return -1;
    }
    if (sc != NULL && sc->numel > 0 && (lo < 0 || hi >= len)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "torch.searchsorted(): sorter index out of range");
    }
    memset(&a, 0, sizeof(a));
    a.bdt = bc->dtype;
    a.vdt = vc->dtype;
    a.odt = out->dtype;
    a.right = right;
    a.batched = batched;
    a.ints = !ptl_dtype_is_floating(bc->dtype) && !ptl_dtype_is_floating(vc->dtype);
    a.bnd = ptl_tensor_data(bc);
    a.vals = ptl_tensor_data(vc);
    a.sorter = sc != NULL ? (const int64_t *)ptl_tensor_data(sc) : NULL;
    a.out = ptl_tensor_data(out);
    a.n = vc->numel;
    a.len = len;
    a.per_row = per_row;
    a.bsz = (int64_t)ptl_tensor_itemsize(bc);
    a.vsz = (int64_t)ptl_tensor_itemsize(vc);
    return ptl_device_search_hook(&a);
}

/* searchsorted(boundaries (1-D, or rows matching self's leading dims), self, out_int32,
 * right, side, sorter): for each value, the first position whose boundary is >= value
 * (> value when right) */
static int
search(PtlIValue *s, PtlTensorImpl *bnd, PtlTensorImpl *vals, int out_int32, int right,
       PtlTensorImpl *sorter)
{
    PtlTensorImpl *bc = NULL, *vc = NULL, *sc = NULL, *out = NULL;
    char b1[256], b2[256];
    int64_t len = bnd->dim ? bnd->sizes[bnd->dim - 1] : 1;
    if (search_device_check(bnd, vals, 0) < 0 ||
        (sorter != NULL && search_device_check(bnd, sorter, 1) < 0)) {
        return -1;
    }
    if (vals->dim == 0 && bnd->dim != 1) {
        return ptl_error_set(PTL_ERR_RUNTIME, "torch.searchsorted(): input value can be a scalar "
                             "only when boundaries tensor dimension is 1, but we got boundaries "
                             "tensor dim(%d) and input value's dim(0) numel(1)", bnd->dim);
    }
    if (bnd->dim == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "torch.searchsorted(): boundaries tensor should "
                             "have positive dimension, but got 0 dimension");
    }
    if (bnd->dim > 1) {
        int ok = bnd->dim == vals->dim;
        for (int d = 0; ok && d < bnd->dim - 1; d++) {
            ok = bnd->sizes[d] == vals->sizes[d];
        }
        if (!ok) {
            ptl_format_sizes(b1, sizeof(b1), bnd->dim, bnd->sizes);
            ptl_format_sizes(b2, sizeof(b2), vals->dim, vals->sizes);
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "torch.searchsorted(): boundaries tensor should be 1 dimension "
                                 "or the first N-1 dimensions of boundaries tensor and input "
                                 "value tensor must match, but we got boundaries tensor %s and "
                                 "input value tensor %s",
                                 b1, b2);
        }
    }
    if (sorter != NULL) {
        if (sorter->dtype != PTL_DTYPE_INT64) {
            return ptl_error_set(PTL_ERR_RUNTIME, "torch.searchsorted(): sorter must be a tensor "
                                                  "of long dtype but got dtype %s",
                                 ptl_dtype_legacy_name(sorter->dtype));
        }
        if (sorter->dim != bnd->dim ||
            memcmp(sorter->sizes, bnd->sizes, sizeof(int64_t) * (size_t)bnd->dim) != 0) {
            ptl_format_sizes(b1, sizeof(b1), bnd->dim, bnd->sizes);
            ptl_format_sizes(b2, sizeof(b2), sorter->dim, sorter->sizes);
            return ptl_error_set(PTL_ERR_RUNTIME, "torch.searchsorted(): boundary and sorter must "
                                                  "have the same size, but got boundary tensor "
                                                  "%sand got sorter tensor %s",
                                 b1, b2);
        }
    }
    if ((bc = ptl_contiguous(bnd)) == NULL || (vc = ptl_contiguous(vals)) == NULL ||
        (sorter != NULL && (sc = ptl_contiguous(sorter)) == NULL)) {
        goto error;
    }
    if ((out = ptl_empty(vals->dim, vals->sizes,
                         out_int32 ? PTL_DTYPE_INT32 : PTL_DTYPE_INT64, vals->device)) == NULL) {
        goto error;
    }
    int64_t per_row = bnd->dim > 1 && vals->dim ? vals->sizes[vals->dim - 1] : vals->numel;
    if (ptl_device_search_hook != NULL && ptl_on_device_path(bnd) && !ptl_tensor_is_meta(bnd)) {
        if (search_device(bc, vc, sc, out, right, len, per_row, bnd->dim > 1) < 0) {
            goto error;
        }
        goto done;
    }
    const int64_t *srt = sc ? (const int64_t *)ptl_tensor_data(sc) : NULL;
    for (int64_t i = 0; sc != NULL && i < sc->numel; i++) {
        if (srt[i] < 0 || srt[i] >= len) {
            ptl_error_set(PTL_ERR_RUNTIME, "torch.searchsorted(): sorter index out of range");
            goto error;
        }
    }
    size_t bi = ptl_tensor_itemsize(bc), vi = ptl_tensor_itemsize(vc);
    const char *bp = ptl_tensor_data(bc), *vp = ptl_tensor_data(vc);
    if (bnd->dim <= 1 && sc == NULL && bc->dtype == vc->dtype &&
        typed_search(bp, vp, bc->dtype, len, vals->numel, right, out_int32,
                     ptl_tensor_data(out))) {
        goto done;
    }
    for (int64_t i = 0; i < vals->numel; i++) {
        int64_t row = bnd->dim > 1 ? i / (per_row ? per_row : 1) : 0;
        int64_t lo = 0, hi = len;
        const char *v = vp + i * (int64_t)vi;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            int64_t at = row * len + (srt ? srt[row * len + mid] : mid);
            if (mixed_go_right(bp + at * (int64_t)bi, bc->dtype, v, vc->dtype, right)) {
                lo = mid + 1;
            }
            else {
                hi = mid;
            }
        }
        ptl_store_int(ptl_tensor_data(out) + i * (int64_t)ptl_tensor_itemsize(out), out->dtype,
                      lo);
    }
done:
    ptl_decref(bc);
    ptl_decref(vc);
    ptl_xdecref(sc);
    s[0] = ptl_iv_tensor(out);
    return 0;
error:
    ptl_xdecref(bc);
    ptl_xdecref(vc);
    ptl_xdecref(sc);
    ptl_xdecref(out);
    return -1;
}

/* A Scalar argument as a 0-dim tensor (int64, float64 or bool) on the host. */
static PtlTensorImpl *
scalar_arg(const PtlIValue *v)
{
    PtlTensorImpl *t = ptl_empty(0, NULL,
                                 v->tag == PTL_IV_DOUBLE ? PTL_DTYPE_FLOAT64
                                 : v->tag == PTL_IV_BOOL ? PTL_DTYPE_BOOL
                                                         : PTL_DTYPE_INT64,
                                 ptl_device_cpu());
    if (t == NULL) {
        return NULL;
    }
    if (v->tag == PTL_IV_DOUBLE) {
        *(double *)ptl_tensor_data(t) = v->u.d;
    }
    else if (v->tag == PTL_IV_BOOL) {
        *(uint8_t *)ptl_tensor_data(t) = (uint8_t)v->u.b;
    }
    else {
        *(int64_t *)ptl_tensor_data(t) = v->u.i;
    }
    return t;
}

/* scalar_arg on device dev (new ref) */
static PtlTensorImpl *
scalar_arg_on(const PtlIValue *v, PtlDevice dev)
{
    PtlTensorImpl *t = scalar_arg(v), *moved;
    if (t == NULL || dev.type == PTL_DEVICE_CPU) {
        return t;
    }
    moved = ptl_to_copy(t, PTL_DTYPE_UNDEFINED, &dev);
    ptl_decref(t);
    return moved;
}

/* searchsorted.Tensor / .Scalar(Tensor sorted_sequence, self, *, bool out_int32=False,
 * bool right=False, str? side=None, Tensor? sorter=None) */
static int
searchsorted_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *bnd = s[0].u.t, *vals;
    int right = s[3].u.b;
    const char *side = s[4].tag == PTL_IV_STRING ? s[4].u.s : NULL;
    PtlTensorImpl *sorter = s[5].tag == PTL_IV_TENSOR ? s[5].u.t : NULL;
    if (side != NULL) {
        if (strcmp(side, "left") != 0 && strcmp(side, "right") != 0) {
            return ptl_error_set(PTL_ERR_RUNTIME, "torch.searchsorted(): side can only be 'left' "
                                                  "or 'right' but got %s",
                                 side);
        }
        if (right && strcmp(side, "left") == 0) {
            return ptl_error_set(PTL_ERR_RUNTIME, "torch.searchsorted(): side and right can't be "
                                                  "set to opposites, got side of left while "
                                                  "right was True");
        }
        right = strcmp(side, "right") == 0;
    }
    if (bnd->dtype == PTL_DTYPE_BOOL) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED,
                             "\"searchsorted_out_cpu\" not implemented for 'Bool'");
    }
    if (op->id == PTL_OP_searchsorted_Scalar) {
        if ((vals = scalar_arg_on(&s[1], bnd->device)) == NULL) {
            return -1;
        }
    }
    else {
        vals = s[1].u.t;
        ptl_incref(vals);
    }
    int rc = search(s, bnd, vals, s[2].u.b, right, sorter);
    ptl_decref(vals);
    return rc;
}

/* bucketize.Tensor(Tensor self, Tensor boundaries, ...) / bucketize.Scalar(Scalar self, ...):
 * searchsorted with 1-D boundaries */
static int
bucketize_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *bnd = s[1].u.t, *vals;
    if (bnd->dim != 1) {
        return ptl_error_set(PTL_ERR_RUNTIME, "boundaries tensor must be 1 dimension, but got "
                                              "dim(%d)",
                             bnd->dim);
    }
    if (bnd->dtype == PTL_DTYPE_BOOL) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED,
                             "\"searchsorted_out_cpu\" not implemented for 'Bool'");
    }
    if (op->id == PTL_OP_bucketize_Scalar) {
        if ((vals = scalar_arg_on(&s[0], bnd->device)) == NULL) {
            return -1;
        }
    }
    else {
        vals = s[0].u.t;
        ptl_incref(vals);
    }
    int rc = search(s, bnd, vals, s[2].u.b, s[3].u.b, NULL);
    ptl_decref(vals);
    return rc;
}

/* ---- one_hot ---- */

/* one_hot(Tensor self, int num_classes=-1): self's shape + [num_classes], int64 */
static int
one_hot_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *c, *out;
    int64_t k = s[1].u.i, sizes[PTL_MAX_DIMS];
    if (self->dtype != PTL_DTYPE_INT64) {
        return ptl_error_set(PTL_ERR_RUNTIME, "one_hot is only applicable to index tensor of type "
                                              "LongTensor.");
    }
    if (self->dim + 1 > PTL_MAX_DIMS) {
        return ptl_error_set(PTL_ERR_RUNTIME, "pytorchlite supports at most %d dimensions",
                             PTL_MAX_DIMS);
    }
    int dev = ptl_on_device_path(self);
    if ((c = ptl_contiguous(self)) == NULL) {
        return -1;
    }
    const int64_t *p = (const int64_t *)ptl_tensor_data(c);
    int64_t min = 0, max = -1;
    for (int64_t i = 0; i < (dev ? 0 : c->numel); i++) {
        min = p[i] < min ? p[i] : min;
        max = p[i] > max ? p[i] : max;
    }
    if (dev && c->numel > 0 && (ptl_device_reduce_read(PTL_OP_amin, c, &min) < 0 ||
                                ptl_device_reduce_read(PTL_OP_amax, c, &max) < 0)) {
        ptl_decref(c);
        return -1;
    }
    if (min < 0) {
        ptl_decref(c);
        return ptl_error_set(PTL_ERR_RUNTIME, "Class values must be non-negative.");
    }
    if (k == -1) {
        if (c->numel == 0) {
            ptl_decref(c);
            return ptl_error_set(PTL_ERR_RUNTIME, "Can not infer total number of classes from "
                                                  "empty tensor.");
        }
        k = max + 1;
    }
    else if (max >= k) {
        ptl_decref(c);
        return ptl_error_set(PTL_ERR_RUNTIME, "Class values must be smaller than num_classes.");
    }
    memcpy(sizes, self->sizes, sizeof(int64_t) * (size_t)self->dim);
    sizes[self->dim] = k;
    if (dev) {
        /* zeros, then 1 at each index along the new last dim (Note [Device one_hot and
         * bincount]) */
        PtlIValue u[2] = {ptl_iv_tensor(c), ptl_iv_int(-1)};
        PtlTensorImpl *col = NULL;
        out = ptl_device_full(self->dim + 1, sizes, PTL_DTYPE_INT64, self->device, 0);
        if (out != NULL && c->numel > 0) {
            col = ptl_call_tensor(PTL_OP_unsqueeze, u);
            PtlIValue a[4] = {ptl_iv_tensor(out), ptl_iv_int(-1), ptl_iv_tensor(col),
                              ptl_iv_int(1)};
            if (col == NULL || ptl_call_inplace(PTL_OP_scatter__value, a) < 0) {
                PTL_CLEAR(out);
            }
        }
        ptl_xdecref(col);
        ptl_decref(c);
        if (out == NULL) {
            return -1;
        }
        s[0] = ptl_iv_tensor(out);
        return 0;
    }
    if ((out = ptl_empty(self->dim + 1, sizes, PTL_DTYPE_INT64, self->device)) == NULL) {
        ptl_decref(c);
        return -1;
    }
    int64_t *o = (int64_t *)ptl_tensor_data(out);
    memset(o, 0, sizeof(int64_t) * (size_t)out->numel);
    for (int64_t i = 0; i < c->numel; i++) {
        o[i * k + p[i]] = 1;
    }
    ptl_decref(c);
    s[0] = ptl_iv_tensor(out);
    return 0;
}

static const PtlKernelReg summary_cpu_kernels[] = {
    {PTL_OP__unique2, PTL_KEY_CPU, unique_cpu},
    {PTL_OP_unique_dim, PTL_KEY_CPU, unique_cpu},
    {PTL_OP_unique_consecutive, PTL_KEY_CPU, unique_cpu},
    {PTL_OP_bincount, PTL_KEY_CPU, bincount_cpu},
    {PTL_OP_histc, PTL_KEY_CPU, histc_cpu},
    {PTL_OP_searchsorted_Tensor, PTL_KEY_CPU, searchsorted_cpu},
    {PTL_OP_searchsorted_Scalar, PTL_KEY_CPU, searchsorted_cpu},
    {PTL_OP_bucketize_Tensor, PTL_KEY_CPU, bucketize_cpu},
    {PTL_OP_bucketize_Scalar, PTL_KEY_CPU, bucketize_cpu},
    {PTL_OP_one_hot, PTL_KEY_CPU, one_hot_cpu},
};
PTL_DEFINE_REGISTER(summary_cpu_kernels)
