/* tensor_impl.h -- the tensor header.  Mirrors c10/core/TensorImpl.h.
 *
 * Note [TensorImpl ownership]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * - TensorImpl and Storage carry an atomic refcount: incref relaxed, decref acq_rel; the
 *   thread that reaches zero frees.
 * - A TensorImpl owns one reference to its Storage.  A view is a new TensorImpl on the same
 *   Storage that also owns its root tensor (`base`); base and views share the root's
 *   version counter (Note [Version counter]), bumped by every in-place op.
 * - The Python wrapper owns one reference to its TensorImpl; `pyobj` is a borrowed
 *   back-pointer cleared in the wrapper's tp_dealloc, so the same impl surfaces as the same
 *   Python object while that object lives.
 * - `autograd_meta` belongs to src/autograd, which installs the function that frees it.
 * - Kernels borrow inputs and return a new reference.
 * Sizes and strides are in elements; storage_offset too. */
#ifndef PTL_C10_TENSOR_IMPL_H
#define PTL_C10_TENSOR_IMPL_H

#include <stdatomic.h>
#include <stdint.h>

#include "dispatch_key.h"
#include "dtype.h"
#include "macros.h"
#include "storage.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Note [Version counter]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * Every TensorImpl carries a counter (own_version) inside its own allocation, so making a
 * tensor allocates nothing extra.  A view, or an alias that autograd saves, points at its
 * source's counter (`version`) and holds a reference on it (refcnt).  The counter's refcnt
 * starts at 1 for the tensor itself; when the tensor dies it releases everything else and
 * drops that reference, and the allocation is freed when the last reference goes.  So a
 * counter outlives its tensor exactly as long as something shares it, with no cycle through
 * `base` (a saved output must not own the output, whose grad_fn owns the saver). */
typedef struct PtlVersionCounter {
    atomic_long refcnt;
    _Atomic int64_t version;
    /* written only by src/autograd, for the "modified by an inplace operation" message:
     * whether a node saved a tensor with this counter, and the last in-place op that bumped
     * it there (static name, interned "file:line" or NULL) with the version it left */
    int saved;
    const char *inplace_op;
    const char *inplace_site;
    int64_t inplace_version;
} PtlVersionCounter;

enum {
    PTL_TF_WRAPPED_NUMBER = 1,   /* a Python number turned into a 0-dim tensor */
    PTL_TF_CONTIGUOUS = 2,       /* cached: row-major contiguous */
    PTL_TF_IS_VIEW = 4,
    PTL_TF_INFERENCE = 8,        /* made in inference mode (Note [Inference tensors]) */
};

/* Note [Inference tensors]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~
 * A tensor made while the thread's inference mode is on (PtlLocalState.inference_mode, set
 * by torch.inference_mode through src/autograd) is an inference tensor: PTL_TF_INFERENCE in
 * its flags, set once by ptl_tensor_impl_new and inherited by its views and aliases, so a
 * view of a normal tensor made inside the mode stays normal and a view of an inference
 * tensor made outside is one too.  It is one bit in a word every tensor has (PyTorch drops
 * the ADInplaceOrView and Autograd keys instead; our key set stays the backend's).  Each rule
 * lives with the concept it guards:
 * - version counter (here): ptl_tensor_impl_version refuses to read it ("Inference tensors
 *   do not track version counter.").  The counter still exists and in-place kernels still
 *   bump it, which nothing can observe; so kernels need no branch.  Normal tensors modified
 *   inside the mode are bumped as everywhere (as in PyTorch).
 * - in-place (ptl_tensor_impl_check_inplace, called by aten/dispatcher.c for every `(a!)`
 *   argument: self of an in-place op, out=; and by src/python's set_): outside the mode, a
 *   call that writes an inference tensor raises before any kernel runs, in grad mode or not.
 *   Operators that write nothing pay one test of op->write_args.
 * - autograd (autograd/node.c): outside the mode, a node may not save an inference tensor,
 *   and requires_grad may not be turned on for one.  Inside, the Autograd key stays
 *   excluded even under enable_grad, so nothing is recorded.
 * Rejected: a NULL version pointer for inference tensors (every bump would need a test). */

/* Note [Sparse tensors]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * A sparse COO tensor (PyTorch's SparseTensorImpl) is a TensorImpl whose key set holds
 * SparseCPU instead of CPU and whose `sparse` points at the PtlSparseMeta it owns: the
 * indices (int64, [sparse_dim, nnz]), the values ([nnz, *dense sizes]), both owned, and
 * whether the indices are known to be sorted and unique (coalesced).  sizes and dim are the
 * tensor's; its storage holds 0 bytes, so code that reads `storage` finds a valid object,
 * and its strides mean nothing (src/python raises PyTorch's "Sparse CPU tensors do not have
 * strides" before reading them).  Kernels that understand the layout register at SparseCPU
 * (aten/native/sparse.c); for every other operator the SparseCPU fallback raises PyTorch's
 * "Could not run ... 'SparseCPU' backend" instead of letting the call fall through to a
 * dense kernel.  A strided tensor has sparse == NULL.  Rejected: a separate struct type
 * (every TensorImpl would need a kind check before its fields are read). */
typedef struct PtlSparseMeta {
    struct PtlTensorImpl *indices;   /* owned */
    struct PtlTensorImpl *values;    /* owned */
    int32_t sparse_dim;
    int32_t dense_dim;
    int coalesced;
} PtlSparseMeta;

typedef struct PtlTensorImpl {
    atomic_long refcnt;
    uint32_t flags;
    int32_t dim;
    PtlDtype dtype;
    PtlDevice device;
    PtlDispatchKeySet keys;
    int64_t numel;
    int64_t storage_offset;
    PtlStorage *storage;            /* owned */
    PtlVersionCounter *version;     /* &own_version, or a shared one (Note [Version counter]) */
    PtlVersionCounter own_version;
    struct PtlTensorImpl *base;     /* owned; the tensor this one is a view of, or NULL */
    void *autograd_meta;            /* owned by src/autograd */
    void *pyobj;                    /* borrowed back-pointer, see the Note */
    PtlSparseMeta *sparse;          /* owned; NULL unless sparse (Note [Sparse tensors]) */
    int64_t sizes[PTL_MAX_DIMS];
    int64_t strides[PTL_MAX_DIMS];
} PtlTensorImpl;

/* New tensor over `storage` (stolen).  strides == NULL means contiguous.  NULL on error. */
PtlTensorImpl *ptl_tensor_impl_new(PtlStorage *storage, PtlDtype dtype, int dim,
                                   const int64_t *sizes, const int64_t *strides,
                                   int64_t storage_offset);
/* New uninitialised contiguous tensor.  Checks sizes (negative, overflow: Note [Storage
 * bytes]).  New ref. */
PtlTensorImpl *ptl_empty(int dim, const int64_t *sizes, PtlDtype dtype, PtlDevice device);
/* New uninitialised tensor with the given strides (NULL: contiguous), its storage sized to
 * fit (Note [Storage bytes]).  New ref. */
PtlTensorImpl *ptl_empty_strided(int dim, const int64_t *sizes, const int64_t *strides,
                                 PtlDtype dtype, PtlDevice device);
/* Strides laying out a tensor of t's sizes in t's dimension order, filled into out when t is
 * dense and non-overlapping (PyTorch's preserve_format, and the layout AccumulateGrad gives
 * a .grad); returns 1 then, 0 when t is not (or is empty) and out is unspecified. */
int ptl_tensor_impl_dense_strides(const PtlTensorImpl *t, int64_t *out);
/* A new tensor over t's storage and geometry (and conjugate bit) that shares t's version
 * counter but owns neither t nor its autograd history (what a node saves of its own output).
 * New ref. */
PtlTensorImpl *ptl_tensor_impl_alias(PtlTensorImpl *t);
/* The dispatch keys of a dense tensor on device d of dtype dt: its backend, Autograd, and
 * Complex for complex dtypes. */
PtlDispatchKeySet ptl_tensor_keys(PtlDevice d, PtlDtype dt);
/* A view of base (borrowed) sharing storage and version counter.  New ref. */
PtlTensorImpl *ptl_tensor_impl_view(PtlTensorImpl *base, int dim, const int64_t *sizes,
                                    const int64_t *strides, int64_t storage_offset);
/* A new sparse COO tensor of these sizes whose first sparse_dim dimensions are indexed by
 * indices and the rest held by values (both borrowed; the caller has checked them).  Its
 * dtype and device are values'.  New ref.  See Note [Sparse tensors]. */
PtlTensorImpl *ptl_sparse_tensor_impl_new(int dim, const int64_t *sizes, int sparse_dim,
                                          PtlTensorImpl *indices, PtlTensorImpl *values,
                                          int coalesced);
/* Replaces sizes/strides in place (resize_, as_strided_ internals); recomputes flags. */
void ptl_tensor_impl_set_sizes(PtlTensorImpl *t, int dim, const int64_t *sizes,
                               const int64_t *strides);
/* Makes t a tensor over src's storage, dtype, sizes, strides and offset, keeping t itself:
 * its refcount, version counter, base, autograd metadata and Python object (PyTorch's
 * TensorImpl::shallow_copy_from, what `t.data = src` does).  Both are borrowed.  0, or -1
 * when their devices differ. */
int ptl_tensor_impl_set_data(PtlTensorImpl *t, PtlTensorImpl *src);
/* Makes t a tensor over `storage` (borrowed; same device type) with this geometry (strides
 * NULL: contiguous), growing the storage to fit as PyTorch's set_ does; 0 or -1. */
int ptl_tensor_impl_set_storage(PtlTensorImpl *t, PtlStorage *storage, int64_t storage_offset,
                                int dim, const int64_t *sizes, const int64_t *strides);
/* Resizes t to `sizes` (contiguous), growing its storage if needed; 0 or -1. */
int ptl_tensor_impl_resize(PtlTensorImpl *t, int dim, const int64_t *sizes);
/* Checks dim/size validity and fills the element count; 0 or -1 with an error set. */
int ptl_check_sizes(int dim, const int64_t *sizes, int64_t *numel);
/* Note [Storage bytes]
 * ~~~~~~~~~~~~~~~~~~~~
 * Every tensor that gets memory, or that is placed over a storage, has its byte count
 * computed here and nowhere else (PyTorch's computeStorageNbytes): empty, empty_strided,
 * resize_, as_strided (and so the checkpoint loader's rebuild) and the shared-memory
 * constructor.  The count is (storage_offset + sum((size - 1) * stride) + 1) * itemsize, or
 * 0 without elements, each step checked: a size, stride, offset or byte count that does not
 * fit in int64 raises PyTorch's "Storage size calculation overflowed with sizes=[...] and
 * strides=[...]" (without the strides for a contiguous tensor) instead of wrapping to a
 * small allocation that the kernels then overrun.  An element count that does not fit
 * raises "numel: integer multiplication overflow" (stride-0 tensors need few bytes). */
/* Fills *nbytes for a tensor of these sizes and strides (NULL: contiguous) starting
 * storage_offset elements into its storage; 0, or -1 with the error set (negative sizes and
 * strides too).  See Note [Storage bytes]. */
int ptl_storage_nbytes(int dim, const int64_t *sizes, const int64_t *strides,
                       int64_t storage_offset, size_t itemsize, size_t *nbytes);

void ptl_tensor_impl_free(PtlTensorImpl *t);
extern void (*ptl_autograd_meta_free)(void *meta);   /* installed by src/autograd */

static inline void
ptl_incref(PtlTensorImpl *t)
{
    atomic_fetch_add_explicit(&t->refcnt, 1, memory_order_relaxed);
}

static inline void
ptl_decref(PtlTensorImpl *t)
{
    if (atomic_fetch_sub_explicit(&t->refcnt, 1, memory_order_acq_rel) == 1) {
        ptl_tensor_impl_free(t);
    }
}

static inline void
ptl_xdecref(PtlTensorImpl *t)
{
    if (t != NULL) {
        ptl_decref(t);
    }
}

#define PTL_CLEAR(P)                    \
    do {                                \
        PtlTensorImpl *t_ = (P);        \
        (P) = NULL;                     \
        ptl_xdecref(t_);                \
    } while (0)

static inline char *
ptl_tensor_data(const PtlTensorImpl *t)
{
    return t->storage->data + t->storage_offset * (int64_t)ptl_dtype_itemsize(t->dtype);
}

/* A tensor without data (Note [Meta tensors] in device.h): kernels skip their loops. */
static inline int
ptl_tensor_is_meta(const PtlTensorImpl *t)
{
    return t->device.type == PTL_DEVICE_META;
}

static inline int
ptl_tensor_is_contiguous(const PtlTensorImpl *t)
{
    return (t->flags & PTL_TF_CONTIGUOUS) != 0;
}

static inline size_t
ptl_tensor_itemsize(const PtlTensorImpl *t)
{
    return ptl_dtype_itemsize(t->dtype);
}

static inline int
ptl_tensor_is_inference(const PtlTensorImpl *t)
{
    return (t->flags & PTL_TF_INFERENCE) != 0;
}

/* t's version into *out; 0, or -1 with PyTorch's RuntimeError for an inference tensor
 * (Note [Inference tensors]). */
int ptl_tensor_impl_version(const PtlTensorImpl *t, int64_t *out);
/* Whether t may be modified in place now: 0, or -1 with PyTorch's RuntimeError for an
 * inference tensor outside inference mode (Note [Inference tensors]). */
int ptl_tensor_impl_check_inplace(const PtlTensorImpl *t);

static inline void
ptl_tensor_bump_version(PtlTensorImpl *t)
{
    atomic_fetch_add_explicit(&t->version->version, 1, memory_order_relaxed);
}

/* Wraps a negative dim and checks range; -1 with PyTorch's IndexError on failure. */
int ptl_wrap_dim(int64_t *d, int64_t dim);

/* Whether t's conjugate bit is set: its values are the conjugates of its memory's (Note
 * [Conjugate views] in aten/native/conjugate.c). */
static inline int
ptl_tensor_is_conj(const PtlTensorImpl *t)
{
    return (t->keys & PTL_KEYSET(PTL_KEY_CONJUGATE)) != 0;
}

#ifdef __cplusplus
}
#endif
#endif
