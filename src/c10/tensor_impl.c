/* tensor_impl.c -- the tensor header.  Mirrors c10/core/TensorImpl.cpp.
 * See Note [TensorImpl ownership]. */
#include "tensor_impl.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "debug_counts.h"
#include "error.h"
#include "tls.h"

_Atomic int64_t ptl_live_counts[PTL_COUNT_KINDS];
void (*ptl_autograd_meta_free)(void *meta) = NULL;

PtlDispatchKeySet
ptl_tensor_keys(PtlDevice d, PtlDtype dt)
{
    PtlDispatchKeySet backend = d.type == PTL_DEVICE_CUDA   ? PTL_KEYSET(PTL_KEY_CUDA)
                                : d.type == PTL_DEVICE_META ? PTL_KEYSET(PTL_KEY_META)
                                                            : PTL_KEYSET(PTL_KEY_CPU);
    if (ptl_dtype_is_complex(dt) && d.type != PTL_DEVICE_META) {
        backend |= PTL_KEYSET(PTL_KEY_COMPLEX);   /* meta tensors hold no values to compute */
    }
    return backend | PTL_KEYSET(PTL_KEY_AUTOGRAD);
}

static int
compute_contiguous(int dim, const int64_t *sizes, const int64_t *strides)
{
    int64_t expected = 1;
    /* an empty tensor is contiguous whatever its strides */
    for (int i = 0; i < dim; i++) {
        if (sizes[i] == 0) {
            return 1;
        }
    }
    for (int i = dim - 1; i >= 0; i--) {
        if (sizes[i] != 1 && strides[i] != expected) {
            return 0;
        }
        expected *= sizes[i];
    }
    return 1;
}

void
ptl_tensor_impl_set_sizes(PtlTensorImpl *t, int dim, const int64_t *sizes,
                          const int64_t *strides)
{
    int64_t numel = 1, st = 1;
    t->dim = dim;
    for (int i = dim - 1; i >= 0; i--) {
        t->sizes[i] = sizes[i];
        t->strides[i] = strides ? strides[i] : st;
        st *= sizes[i] > 1 ? sizes[i] : 1;
        numel *= sizes[i];
    }
    t->numel = numel;
    if (compute_contiguous(dim, t->sizes, t->strides)) {
        t->flags |= PTL_TF_CONTIGUOUS;
    }
    else {
        t->flags &= ~(uint32_t)PTL_TF_CONTIGUOUS;
    }
}

/* The number of dimensions and every size are valid; 0 or -1 with the error set. */
static int
check_dims(int dim, const int64_t *sizes)
{
    if (dim < 0 || dim > PTL_MAX_DIMS) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "pytorchlite supports tensors of at most %d dimensions, got %d",
                             PTL_MAX_DIMS, dim);
    }
    for (int i = 0; i < dim; i++) {
        if (sizes[i] < 0) {
            char buf[256];
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "Trying to create tensor with negative dimension %lld: %s",
                                 (long long)sizes[i], ptl_format_sizes(buf, sizeof(buf), dim, sizes));
        }
    }
    return 0;
}

int
ptl_check_sizes(int dim, const int64_t *sizes, int64_t *numel)
{
    int64_t n = 1;
    if (check_dims(dim, sizes) < 0) {
        return -1;
    }
    for (int i = 0; i < dim; i++) {
        if (sizes[i] != 0 && n > INT64_MAX / sizes[i]) {
            n = -1;
            break;
        }
        n *= sizes[i];
    }
    for (int i = 0; i < dim; i++) {
        if (sizes[i] == 0) {
            n = 0;
        }
    }
    if (n < 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "numel: integer multiplication overflow");
    }
    *numel = n;
    return 0;
}

/* See Note [Storage bytes]. */
int
ptl_storage_nbytes(int dim, const int64_t *sizes, const int64_t *strides,
                   int64_t storage_offset, size_t itemsize, size_t *nbytes)
{
    int64_t extent = 0, numel;
    int overflow = 0, empty = 0;
    if (check_dims(dim, sizes) < 0) {
        return -1;
    }
    for (int i = 0; i < dim; i++) {
        if (strides != NULL && strides[i] < 0) {
            return ptl_error_set(PTL_ERR_RUNTIME, "as_strided: Negative strides are not "
                                 "supported at the moment, got strides: %lld",
                                 (long long)strides[i]);
        }
        empty |= sizes[i] == 0;
    }
    if (storage_offset < 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Tensor: invalid storage offset %lld",
                             (long long)storage_offset);
    }
    if (!empty) {
        /* extent: one past the last element, in elements; a contiguous stride is the
         * product of the sizes inside it, so the same sum gives offset + numel */
        int64_t contiguous_stride = 1, step;
        overflow = __builtin_add_overflow(storage_offset, 1, &extent);
        for (int i = dim - 1; i >= 0 && !overflow; i--) {
            int64_t stride = strides != NULL ? strides[i] : contiguous_stride;
            overflow = __builtin_mul_overflow(sizes[i] - 1, stride, &step) ||
                       __builtin_add_overflow(extent, step, &extent) ||
                       (strides == NULL &&
                        __builtin_mul_overflow(contiguous_stride, sizes[i], &contiguous_stride));
        }
        overflow = overflow || __builtin_mul_overflow(extent, (int64_t)itemsize, &extent);
    }
    if (overflow) {
        char sz[256], st[256];
        ptl_format_sizes(sz, sizeof(sz), dim, sizes);
        if (strides == NULL) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "Storage size calculation overflowed with sizes=%s", sz);
        }
        ptl_format_sizes(st, sizeof(st), dim, strides);
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Storage size calculation overflowed with sizes=%s and strides=%s",
                             sz, st);
    }
    if (ptl_check_sizes(dim, sizes, &numel) < 0) {
        return -1;
    }
    *nbytes = (size_t)extent;
    return 0;
}

static void
version_init(PtlVersionCounter *vc)
{
    atomic_init(&vc->version, 0);
    atomic_init(&vc->refcnt, 1);
    vc->saved = 0;
    vc->inplace_op = NULL;
    vc->inplace_site = NULL;
    vc->inplace_version = 0;
}

/* The end of every new dense impl t: no autograd meta, Python object or sparse meta yet, the
 * given sizes and strides (NULL: contiguous), counted; returns t. */
static PtlTensorImpl *
impl_finish_new(PtlTensorImpl *t, int dim, const int64_t *sizes, const int64_t *strides)
{
    t->autograd_meta = NULL;
    t->pyobj = NULL;
    t->sparse = NULL;
    ptl_tensor_impl_set_sizes(t, dim, sizes, strides);
    ptl_debug_count(PTL_COUNT_TENSOR_IMPL, 1);
    return t;
}

PtlTensorImpl *
ptl_tensor_impl_new(PtlStorage *storage, PtlDtype dtype, int dim, const int64_t *sizes,
                    const int64_t *strides, int64_t storage_offset)
{
    PtlTensorImpl *t = malloc(sizeof(PtlTensorImpl));
    if (t == NULL) {
        ptl_storage_decref(storage);
        ptl_error_set(PTL_ERR_MEMORY, "can't allocate memory for a tensor header");
        return NULL;
    }
    version_init(&t->own_version);
    atomic_init(&t->refcnt, 1);
    t->flags = ptl_tls()->inference_mode ? PTL_TF_INFERENCE : 0;   /* Note [Inference tensors] */
    t->dtype = dtype;
    t->device = storage->device;
    t->keys = ptl_tensor_keys(storage->device, dtype);
    t->storage_offset = storage_offset;
    t->storage = storage;
    t->version = &t->own_version;
    t->base = NULL;
    return impl_finish_new(t, dim, sizes, strides);
}

PtlTensorImpl *
ptl_sparse_tensor_impl_new(int dim, const int64_t *sizes, int sparse_dim,
                           PtlTensorImpl *indices, PtlTensorImpl *values, int coalesced)
{
    PtlSparseMeta *meta = malloc(sizeof(PtlSparseMeta));
    if (meta == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "can't allocate memory for a tensor header");
        return NULL;
    }
    PtlStorage *st = ptl_storage_new(0, values->device);
    PtlTensorImpl *t = st ? ptl_tensor_impl_new(st, values->dtype, dim, sizes, NULL, 0) : NULL;
    if (t == NULL) {
        free(meta);
        return NULL;
    }
    ptl_incref(indices);
    ptl_incref(values);
    meta->indices = indices;
    meta->values = values;
    meta->sparse_dim = sparse_dim;
    meta->dense_dim = dim - sparse_dim;
    meta->coalesced = coalesced;
    t->sparse = meta;
    t->keys = PTL_KEYSET(PTL_KEY_SPARSE_CPU) | PTL_KEYSET(PTL_KEY_AUTOGRAD) |
              (ptl_dtype_is_complex(values->dtype) ? PTL_KEYSET(PTL_KEY_COMPLEX) : 0);
    return t;
}

PtlTensorImpl *
ptl_empty(int dim, const int64_t *sizes, PtlDtype dtype, PtlDevice device)
{
    return ptl_empty_strided(dim, sizes, NULL, dtype, device);
}

PtlTensorImpl *
ptl_empty_strided(int dim, const int64_t *sizes, const int64_t *strides, PtlDtype dtype,
                  PtlDevice device)
{
    size_t nbytes;
    if (ptl_storage_nbytes(dim, sizes, strides, 0, ptl_dtype_itemsize(dtype), &nbytes) < 0) {
        return NULL;
    }
    PtlStorage *s = ptl_storage_new(nbytes, device);
    if (s == NULL) {
        return NULL;
    }
    return ptl_tensor_impl_new(s, dtype, dim, sizes, strides, 0);
}

int
ptl_tensor_impl_dense_strides(const PtlTensorImpl *t, int64_t *out)
{
    int perm[PTL_MAX_DIMS];
    int64_t st = 1;
    /* perm: dims from the largest stride to the smallest, ties keeping dim order */
    for (int i = 0; i < t->dim; i++) {
        int j = i;
        while (j > 0 && t->strides[perm[j - 1]] < t->strides[i]) {
            perm[j] = perm[j - 1];
            j--;
        }
        perm[j] = i;
    }
    for (int k = t->dim - 1; k >= 0; k--) {
        int d = perm[k];
        if (t->sizes[d] != 1 && t->strides[d] != st) {
            return 0;
        }
        out[d] = st;
        st *= t->sizes[d] > 1 ? t->sizes[d] : 1;
    }
    return t->numel > 0;
}

PtlTensorImpl *
ptl_tensor_impl_view(PtlTensorImpl *base, int dim, const int64_t *sizes,
                     const int64_t *strides, int64_t storage_offset)
{
    PtlTensorImpl *t = malloc(sizeof(PtlTensorImpl));
    if (t == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "can't allocate memory for a tensor header");
        return NULL;
    }
    PtlTensorImpl *root = base->base ? base->base : base;
    atomic_init(&t->refcnt, 1);
    t->flags = PTL_TF_IS_VIEW | (base->flags & PTL_TF_INFERENCE);
    t->dtype = base->dtype;
    t->device = base->device;
    t->keys = base->keys;
    t->storage_offset = storage_offset;
    t->storage = base->storage;
    ptl_storage_incref(t->storage);
    t->version = root->version;
    atomic_fetch_add_explicit(&t->version->refcnt, 1, memory_order_relaxed);
    version_init(&t->own_version);
    t->base = root;
    ptl_incref(root);
    return impl_finish_new(t, dim, sizes, strides);
}

int
ptl_tensor_impl_resize(PtlTensorImpl *t, int dim, const int64_t *sizes)
{
    size_t need;
    if (ptl_storage_nbytes(dim, sizes, NULL, t->storage_offset, ptl_dtype_itemsize(t->dtype),
                           &need) < 0) {
        return -1;
    }
    if (need > 0 && ptl_storage_resize(t->storage, need) < 0) {
        return -1;
    }
    ptl_tensor_impl_set_sizes(t, dim, sizes, NULL);
    return 0;
}

int
ptl_tensor_impl_set_storage(PtlTensorImpl *t, PtlStorage *storage, int64_t storage_offset,
                            int dim, const int64_t *sizes, const int64_t *strides)
{
    size_t need;
    if (storage->device.type != t->device.type) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Expected a storage on device type %s, but got "
                             "one on %s", ptl_device_type_name(t->device.type),
                             ptl_device_type_name(storage->device.type));
    }
    if (ptl_storage_nbytes(dim, sizes, strides, storage_offset, ptl_dtype_itemsize(t->dtype),
                           &need) < 0) {
        return -1;
    }
    if (need > 0 && ptl_storage_resize(storage, need) < 0) {
        return -1;
    }
    ptl_storage_incref(storage);
    ptl_storage_decref(t->storage);
    t->storage = storage;
    t->storage_offset = storage_offset;
    ptl_tensor_impl_set_sizes(t, dim, sizes, strides);
    return 0;
}

/* Drops one reference on a counter; the last one frees the TensorImpl it lives in. */
static void
version_decref(PtlVersionCounter *vc)
{
    if (atomic_fetch_sub_explicit(&vc->refcnt, 1, memory_order_acq_rel) == 1) {
        free((char *)vc - offsetof(PtlTensorImpl, own_version));
    }
}

int
ptl_tensor_impl_version(const PtlTensorImpl *t, int64_t *out)
{
    if (ptl_tensor_is_inference(t)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Inference tensors do not track version counter.");
    }
    *out = atomic_load(&t->version->version);
    return 0;
}

int
ptl_tensor_impl_check_inplace(const PtlTensorImpl *t)
{
    if (ptl_tensor_is_inference(t) && !ptl_tls()->inference_mode) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Inplace update to inference tensor outside InferenceMode is not "
                             "allowed.You can make a clone to get a normal tensor before doing "
                             "inplace update.See https://github.com/pytorch/rfcs/pull/17 for "
                             "more details.");
    }
    return 0;
}

PtlTensorImpl *
ptl_tensor_impl_alias(PtlTensorImpl *t)
{
    PtlTensorImpl *a;
    if (t->sparse != NULL) {
        a = ptl_sparse_tensor_impl_new(t->dim, t->sizes, t->sparse->sparse_dim,
                                       t->sparse->indices, t->sparse->values,
                                       t->sparse->coalesced);
    }
    else {
        ptl_storage_incref(t->storage);
        a = ptl_tensor_impl_new(t->storage, t->dtype, t->dim, t->sizes, t->strides,
                                t->storage_offset);
    }
    if (a == NULL) {
        return NULL;
    }
    /* the same values: the conjugate bit too; and the Python key, so that an alias of a
     * tensor without data never reaches a kernel (Note [Python tensors]) */
    a->keys |= t->keys & (PTL_KEYSET(PTL_KEY_CONJUGATE) | PTL_KEYSET(PTL_KEY_PYTHON));
    a->flags = (a->flags & ~(uint32_t)PTL_TF_INFERENCE) | (t->flags & PTL_TF_INFERENCE);
    a->version = t->version;
    atomic_fetch_add_explicit(&a->version->refcnt, 1, memory_order_relaxed);
    return a;
}

int
ptl_tensor_impl_set_data(PtlTensorImpl *t, PtlTensorImpl *src)
{
    if (t->device.type != src->device.type || t->sparse != NULL || src->sparse != NULL) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Attempted to call `variable.set_data(tensor)`, but `variable` and "
                             "`tensor` have incompatible tensor type.");
    }
    ptl_storage_incref(src->storage);
    ptl_storage_decref(t->storage);
    t->storage = src->storage;
    t->dtype = src->dtype;
    t->device = src->device;
    t->keys = ptl_tensor_keys(src->device, src->dtype) |
              (src->keys & PTL_KEYSET(PTL_KEY_CONJUGATE));
    t->storage_offset = src->storage_offset;
    ptl_tensor_impl_set_sizes(t, src->dim, src->sizes, src->strides);
    return 0;
}

void
ptl_tensor_impl_free(PtlTensorImpl *t)
{
    PtlVersionCounter *shared = t->version;
    if (t->autograd_meta != NULL && ptl_autograd_meta_free != NULL) {
        ptl_autograd_meta_free(t->autograd_meta);
    }
    ptl_storage_decref(t->storage);
    if (t->base != NULL) {
        ptl_decref(t->base);
    }
    if (t->sparse != NULL) {
        ptl_decref(t->sparse->indices);
        ptl_decref(t->sparse->values);
        free(t->sparse);
    }
    ptl_debug_count(PTL_COUNT_TENSOR_IMPL, -1);
    if (shared != &t->own_version) {
        version_decref(shared);
    }
    version_decref(&t->own_version);   /* frees t unless a view or alias still counts on it */
}

int
ptl_wrap_dim(int64_t *d, int64_t dim)
{
    int64_t lo = dim > 0 ? -dim : -1, hi = dim > 0 ? dim - 1 : 0;
    if (*d < lo || *d > hi) {
        return ptl_error_set(PTL_ERR_INDEX,
                             "Dimension out of range (expected to be in range of [%lld, %lld], "
                             "but got %lld)",
                             (long long)lo, (long long)hi, (long long)*d);
    }
    if (*d < 0) {
        *d += dim > 0 ? dim : 1;
    }
    return 0;
}
