/* memory_format.c -- memory formats: their strides and the predicates that read a format off
 * a tensor's strides.  Mirrors c10/core/MemoryFormat.h, the contiguity computations of
 * c10/core/TensorImpl.h and ATen's infer_dense_strides.  See Note [Memory formats]. */
#include "memory_format.h"

#include "error.h"

/* ORDER MEMORY_FORMAT */
static const char *const format_names[PTL_MEMORY_FORMAT_COUNT] = {
    "contiguous_format", "preserve_format", "channels_last", "channels_last_3d"};

/* The dims of a channels-last tensor of rank 4 or 5 from the innermost out: C, then the
 * spatial dims from the last, then N. */
static const int cl_order_4d[4] = {1, 3, 2, 0};
static const int cl_order_5d[5] = {1, 4, 3, 2, 0};

const char *
ptl_memory_format_name(PtlMemoryFormat f)
{
    return (unsigned)f < PTL_MEMORY_FORMAT_COUNT ? format_names[f] : "?";
}

/* The rank format f asks for: 4 or 5, or 0 for a format valid at any rank. */
static int
format_rank(PtlMemoryFormat f)
{
    return f == PTL_MEMORY_FORMAT_CHANNELS_LAST ? 4 : f == PTL_MEMORY_FORMAT_CHANNELS_LAST_3D ? 5
                                                                                              : 0;
}

int
ptl_memory_format_check(PtlMemoryFormat f, int dim)
{
    int rank = format_rank(f);
    if (f == PTL_MEMORY_FORMAT_PRESERVE) {
        return ptl_error_set(PTL_ERR_RUNTIME, "unsupported memory format Preserve");
    }
    if (rank != 0 && dim != rank) {
        return ptl_error_set(PTL_ERR_RUNTIME, "required rank %d tensor to use %s format", rank,
                             format_names[f]);
    }
    return 0;
}

void
ptl_memory_format_strides(PtlMemoryFormat f, int dim, const int64_t *sizes, int64_t *strides)
{
    const int *order = dim == 4 ? cl_order_4d : cl_order_5d;
    int64_t st = 1;
    if (format_rank(f) == 0 || format_rank(f) != dim) {
        /* row-major; a size-0 dim counts as 1 so the strides stay distinct (PyTorch) */
        for (int d = dim - 1; d >= 0; d--) {
            strides[d] = st;
            st *= sizes[d] > 1 ? sizes[d] : 1;
        }
        return;
    }
    /* channels last multiplies by the sizes as they are: (0, 3, 4, 5) -> (60, 1, 15, 3) */
    for (int k = 0; k < dim; k++) {
        strides[order[k]] = st;
        st *= sizes[order[k]];
    }
}

int
ptl_tensor_impl_is_contiguous_as(const PtlTensorImpl *t, PtlMemoryFormat f)
{
    int rank = format_rank(f);
    int64_t expected = 1;
    if (rank == 0) {
        /* contiguous, and preserve as PyTorch's is_contiguous reads it */
        return t->sparse == NULL && ptl_tensor_is_contiguous(t);
    }
    if (t->sparse != NULL || t->dim != rank) {
        return 0;
    }
    const int *order = rank == 4 ? cl_order_4d : cl_order_5d;
    for (int k = 0; k < rank; k++) {
        int d = order[k];
        if (t->sizes[d] != 1) {
            if (t->strides[d] != expected) {
                return 0;
            }
            expected *= t->sizes[d];
        }
    }
    return 1;
}

/* Whether t's strides order its dims as channels last does (is_channels_last_strides_2d/3d):
 * the strides grow along the order; a size-1 dim does not grow the bound, so that N1H1 with
 * strides (H, 1, 1, 1) reads as channels last and (H, H, 1, 1) does not; a zero C stride,
 * an empty dim and N111 tensors with equal strides stay contiguous (the ambiguous cases). */
static int
strides_like_channels_last(const PtlTensorImpl *t, const int *order)
{
    int64_t min = 0;
    if (t->strides[1] == 0) {
        return 0;
    }
    for (int k = 0; k < t->dim; k++) {
        int d = order[k];
        if (t->sizes[d] == 0 || t->strides[d] < min) {
            return 0;
        }
        if (d == 0 && min == t->strides[1]) {
            return 0;
        }
        min = t->strides[d];
        if (t->sizes[d] > 1) {
            min *= t->sizes[d];
        }
    }
    return 1;
}

PtlMemoryFormat
ptl_tensor_impl_suggest_memory_format(const PtlTensorImpl *t)
{
    if (t->sparse == NULL && t->dim == 4 && strides_like_channels_last(t, cl_order_4d)) {
        return PTL_MEMORY_FORMAT_CHANNELS_LAST;
    }
    if (t->sparse == NULL && t->dim == 5 && strides_like_channels_last(t, cl_order_5d)) {
        return PTL_MEMORY_FORMAT_CHANNELS_LAST_3D;
    }
    return PTL_MEMORY_FORMAT_CONTIGUOUS;
}

/* The dims of t from the innermost out, by stride then size (infer_dense_strides, the order
 * TensorIterator gives its outputs): a smaller stride is inner; of equal strides the smaller
 * size is inner; a zero stride compares equal to anything, so broadcast dims stay where a
 * contiguous tensor has them. */
static void
inner_to_outer(const PtlTensorImpl *t, int *perm)
{
    for (int k = 0; k < t->dim; k++) {
        perm[k] = t->dim - 1 - k;
    }
    for (int i = 1; i < t->dim; i++) {
        int d1 = i;
        for (int d0 = i - 1; d0 >= 0; d0--) {
            int64_t s0 = t->strides[perm[d0]], s1 = t->strides[perm[d1]];
            int swap = s0 != 0 && s1 != 0 &&
                       (s0 > s1 || (s0 == s1 && t->sizes[perm[d0]] > t->sizes[perm[d1]]));
            if (s0 != 0 && s1 != 0 && s0 < s1) {
                break;
            }
            if (swap) {
                int tmp = perm[d0];
                perm[d0] = perm[d1];
                perm[d1] = tmp;
                d1 = d0;
            }
        }
    }
}

int
ptl_tensor_impl_is_dense(const PtlTensorImpl *t)
{
    int dims[PTL_MAX_DIMS], n = 0;
    int64_t expected = 1;
    if (t->sparse != NULL) {
        return 0;
    }
    if (t->numel == 0 || ptl_tensor_is_contiguous(t) ||
        ptl_tensor_impl_is_contiguous_as(t, PTL_MEMORY_FORMAT_CHANNELS_LAST) ||
        ptl_tensor_impl_is_contiguous_as(t, PTL_MEMORY_FORMAT_CHANNELS_LAST_3D)) {
        return 1;
    }
    /* the dims of size 2 or more by increasing stride must tile the extent exactly */
    for (int d = 0; d < t->dim; d++) {
        int k;
        if (t->sizes[d] < 2) {
            continue;
        }
        k = n++;
        while (k > 0 && t->strides[dims[k - 1]] > t->strides[d]) {
            dims[k] = dims[k - 1];
            k--;
        }
        dims[k] = d;
    }
    for (int k = 0; k < n; k++) {
        if (t->strides[dims[k]] != expected) {
            return 0;
        }
        expected *= t->sizes[dims[k]];
    }
    return 1;
}

int
ptl_memory_format_like_strides(const PtlTensorImpl *t, PtlMemoryFormat f, int64_t *strides)
{
    int perm[PTL_MAX_DIMS];
    int64_t st = 1;
    if (f != PTL_MEMORY_FORMAT_PRESERVE) {
        if (ptl_memory_format_check(f, t->dim) < 0) {
            return -1;
        }
        ptl_memory_format_strides(f, t->dim, t->sizes, strides);
        return 0;
    }
    if (ptl_tensor_impl_is_dense(t)) {
        for (int d = 0; d < t->dim; d++) {
            strides[d] = t->strides[d];
        }
        return 0;
    }
    inner_to_outer(t, perm);
    for (int k = 0; k < t->dim; k++) {
        strides[perm[k]] = st;
        st *= t->sizes[perm[k]] > 1 ? t->sizes[perm[k]] : 1;
    }
    return 0;
}

PtlTensorImpl *
ptl_empty_format(int dim, const int64_t *sizes, PtlMemoryFormat f, PtlDtype dtype,
                 PtlDevice device)
{
    int64_t strides[PTL_MAX_DIMS];
    size_t nbytes;
    if (ptl_storage_nbytes(dim, sizes, NULL, 0, ptl_dtype_itemsize(dtype), &nbytes) < 0) {
        return NULL;
    }
    ptl_memory_format_strides(f, dim, sizes, strides);
    return ptl_empty_strided(dim, sizes, strides, dtype, device);
}
