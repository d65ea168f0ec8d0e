/* take.c -- take (self.flatten()[index]) and take_along_dim (gather after broadcasting),
 * split from index.c.  Mirrors ATen/native/TensorAdvancedIndexing.cpp (take,
 * take_along_dim) and ATen/native/cpu/IndexKernel.cpp (take_kernel). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/error.h"
#include "device_index.h"
#include "index_impl.h"
#include "native.h"

/* Note [Take chunks]
 * ~~~~~~~~~~~~~~~~~~
 * take reads self as if flattened in row-major order, whatever its layout.  A contiguous
 * self is read at index v itself, and so is a contiguous copy of any other self, unless
 * the index has fewer than 1 / TAKE_FEW as many elements as self: then each index becomes
 * its element's offset by self's sizes and strides (a division per dimension) and take_row
 * moves them.  A non-contiguous index is copied contiguous first.  The indices go
 * TAKE_CHUNK at a time: one pass checks a chunk with sign bits as Note [Index row walk]
 * does (v + n and n - 1 - v are both at least 0 exactly when -n <= v < n, computed as
 * uint64 so that nothing overflows), a typed loop by element size then moves it, a negative
 * index wrapped by adding n where its sign bit is set.  A bad chunk is scanned again for its
 * first bad index, which raises PyTorch's error; out is then discarded.  Through tables of
 * self's and the index's offsets (both built for every call) and an element copy switched
 * per element, take of 256K of 512 x 512 complex64 / complex128 had run at 0.29-0.39x /
 * 0.34-0.40x PyTorch's time, and every dtype went the same way. */
enum { TAKE_CHUNK = 1024, TAKE_FEW = 4 };

/* out[j] = self[idx[j] wrapped] for j < m */
#define TAKE_LOOP(T)                                                                        \
    for (int64_t j = 0; j < m; j++) {                                                       \
        int64_t v = idx[j];                                                                 \
        v += (v >> 63) & n;                                                                 \
        ((T *)out)[j] = ((const T *)self)[v];                                               \
    }                                                                                       \
    break

/* Whether idx[0..m) all lie in [-n, n); else the error of the first that does not */
static int
take_check(const int64_t *idx, int64_t m, int64_t n)
{
    uint64_t un = (uint64_t)n, last = un - 1, bad = 0;
    for (int64_t j = 0; j < m; j++) {
        bad |= ((uint64_t)idx[j] + un) | (last - (uint64_t)idx[j]);
    }
    for (int64_t j = 0; bad >> 63 && j < m; j++) {
        if (idx[j] < -n || idx[j] >= n) {
            return ptl_error_set(PTL_ERR_INDEX, PTL_TAKE_INDEX_ERROR, (long long)idx[j],
                                 (long long)n);
        }
    }
    return 0;
}

/* out[j] = self[idx[j]] for j < m, self contiguous with n elements (Note [Take chunks]): 0,
 * or -1 with the error of the first index outside [-n, n) */
static int
take_chunk(char *out, const char *self, const int64_t *idx, int64_t m, int64_t n, size_t item)
{
    if (take_check(idx, m, n) < 0) {
        return -1;
    }
    switch (item) {
    case 1: TAKE_LOOP(uint8_t);
    case 2: TAKE_LOOP(uint16_t);
    case 4: TAKE_LOOP(uint32_t);
    case 8: TAKE_LOOP(uint64_t);
    default: TAKE_LOOP(Elem16);
    }
    return 0;
}
#undef TAKE_LOOP

/* out[j] = self flattened [idx[j]] for j < m through self's strides (a few indices into a
 * non-contiguous self, Note [Take chunks]); off: m entries of scratch.  0 or -1. */
static int
take_strided(char *out, const PtlTensorImpl *self, const int64_t *idx, int64_t m,
             int64_t *off)
{
    if (take_check(idx, m, self->numel) < 0) {
        return -1;
    }
    for (int64_t j = 0; j < m; j++) {
        int64_t v = idx[j] < 0 ? idx[j] + self->numel : idx[j], o = 0;
        for (int d = self->dim - 1; d >= 0; d--) {
            o += v % self->sizes[d] * self->strides[d];
            v /= self->sizes[d];
        }
        off[j] = o;
    }
    take_row(out, 1, ptl_tensor_data(self), off, m, ptl_tensor_itemsize(self));
    return 0;
}

/* take(Tensor self, Tensor index): self.flatten()[index], index's shape */
static int
take_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *index = s[1].u.t, *ic = NULL, *sc = NULL, *out = NULL;
    int64_t off[TAKE_CHUNK];
    if (index->dtype != PTL_DTYPE_INT64) {
        return ptl_error_set(PTL_ERR_RUNTIME, "take(): Expected a long tensor for index, but got "
                                              "%s",
                             ptl_dtype_legacy_name(index->dtype));
    }
    if (self->numel == 0 && index->numel != 0) {
        return ptl_error_set(PTL_ERR_INDEX, "take(): tried to take from an empty tensor");
    }
    if (index_on_device(self)) {
        return ptl_kernel_return(s, index_take_device(self, index));
    }
    int strided = !ptl_tensor_is_contiguous(self) && index->numel < self->numel / TAKE_FEW;
    if ((ic = ptl_contiguous(index)) == NULL ||
        (!strided && (sc = ptl_contiguous(self)) == NULL) ||
        (out = ptl_empty(index->dim, index->sizes, self->dtype, self->device)) == NULL) {
        goto error;
    }
    size_t item = ptl_tensor_itemsize(self);
    const int64_t *ip = (const int64_t *)ptl_tensor_data(ic);
    char *dst = ptl_tensor_data(out);
    for (int64_t i = 0; i < index->numel; i += TAKE_CHUNK) {
        int64_t m = index->numel - i < TAKE_CHUNK ? index->numel - i : TAKE_CHUNK;
        if ((strided ? take_strided(dst + i * (int64_t)item, self, ip + i, m, off)
                     : take_chunk(dst + i * (int64_t)item, ptl_tensor_data(sc), ip + i, m,
                                  self->numel, item)) < 0) {
            goto error;
        }
    }
    ptl_decref(ic);
    ptl_xdecref(sc);
    s[0] = ptl_iv_tensor(out);
    return 0;
error:
    ptl_xdecref(ic);
    ptl_xdecref(sc);
    ptl_xdecref(out);
    return -1;
}

/* take_along_dim(Tensor self, Tensor indices, int? dim=None): gather along dim after
 * broadcasting self and indices everywhere else; dim None: take from the flattened self.
 * Composite, so autograd sees gather. */
static int
take_along_dim_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *idx = s[1].u.t, *se = NULL, *ie = NULL, *r = NULL;
    int64_t minus1 = -1, dim;
    PtlIValue a[4];
    if (idx->dtype != PTL_DTYPE_INT64 && idx->dtype != PTL_DTYPE_INT32) {
        return ptl_error_set(PTL_ERR_INDEX, "torch.take_along_dim(): dtype of indices should be "
                                            "int64 but got %s",
                             ptl_dtype_legacy_name(idx->dtype));
    }
    if (s[2].tag == PTL_IV_NONE) {
        /* view, as PyTorch's: a self or indices whose elements no one stride walks is its
         * "view size is not compatible" error */
        a[1] = ptl_iv_intlist(&minus1, 1);
        a[0] = ptl_iv_tensor(self);
        if ((se = ptl_call_tensor(PTL_OP_view, a)) == NULL) {
            goto done;
        }
        a[0] = ptl_iv_tensor(idx);
        if ((ie = ptl_call_tensor(PTL_OP_view, a)) == NULL) {
            goto done;
        }
        dim = 0;
    }
    else {
        int64_t ss[PTL_MAX_DIMS], is[PTL_MAX_DIMS];
        dim = s[2].u.i;
        if (self->dim != idx->dim) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "torch.take_along_dim(): input and indices should have the same "
                                 "number of dimensions, but got %d dimensions for input, and %d "
                                 "dimensions for indices",
                                 self->dim, idx->dim);
        }
        if (ptl_wrap_dim(&dim, self->dim > 0 ? self->dim : 1) < 0) {
            return -1;
        }
        for (int d = 0; d < self->dim; d++) {
            int64_t a1 = self->sizes[d], b1 = idx->sizes[d];
            if (d != dim && a1 != b1 && a1 != 1 && b1 != 1) {
                return ptl_error_set(PTL_ERR_RUNTIME, "The size of tensor a (%lld) must match "
                                                      "the size of tensor b (%lld) at "
                                                      "non-singleton dimension %d",
                                     (long long)a1, (long long)b1, d);
            }
            ss[d] = d == dim ? a1 : (a1 == 1 ? b1 : a1);
            is[d] = d == dim ? b1 : ss[d];
        }
        a[0] = ptl_iv_tensor(self);
        a[1] = ptl_iv_intlist(ss, self->dim);
        a[2] = ptl_iv_bool(0);
        if ((se = ptl_call_tensor(PTL_OP_expand, a)) == NULL) {
            goto done;
        }
        a[0] = ptl_iv_tensor(idx);
        a[1] = ptl_iv_intlist(is, idx->dim);
        a[2] = ptl_iv_bool(0);
        if ((ie = ptl_call_tensor(PTL_OP_expand, a)) == NULL) {
            goto done;
        }
    }
    a[0] = ptl_iv_tensor(se);
    a[1] = ptl_iv_int(dim);
    a[2] = ptl_iv_tensor(ie);
    a[3] = ptl_iv_bool(0);
    r = ptl_call_tensor(PTL_OP_gather, a);
done:
    ptl_xdecref(se);
    ptl_xdecref(ie);
    if (r == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(r);
    return 0;
}

static const PtlKernelReg take_cpu_kernels[] = {
    {PTL_OP_take, PTL_KEY_CPU, take_cpu},
    {PTL_OP_take_along_dim, PTL_KEY_COMPOSITE_IMPLICIT, take_along_dim_composite},
};
PTL_DEFINE_REGISTER(take_cpu_kernels)
