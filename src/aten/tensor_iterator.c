/* tensor_iterator.c -- see Note [TensorIterator]. */
#include "tensor_iterator.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../c10/cpu_features.h"
#include "../c10/error.h"
#include "../c10/memory_format.h"
#include "../c10/parallel.h"
#include "resize_output.h"
#include "transpose_block.h"


/* ---- result type ---- */

static PtlDtype
wrapped_dtype(PtlDtype dt)
{
    if (ptl_dtype_is_complex(dt)) {   /* a Python complex: the default complex dtype */
        return ptl_dtype_to_complex(ptl_default_dtype());
    }
    if (ptl_dtype_is_floating(dt)) {
        return ptl_default_dtype();
    }
    return dt == PTL_DTYPE_BOOL ? PTL_DTYPE_BOOL : PTL_DTYPE_INT64;
}

static int
category(PtlDtype dt)
{
    return ptl_dtype_is_complex(dt) ? 3 : ptl_dtype_is_floating(dt) ? 2 : dt == PTL_DTYPE_BOOL ? 0 : 1;
}

/* The higher-priority group wins unless the lower one is of a higher category. */
static PtlDtype
combine_categories(PtlDtype higher, PtlDtype lower)
{
    if (higher == PTL_DTYPE_UNDEFINED) {
        return lower;
    }
    if (lower == PTL_DTYPE_UNDEFINED) {
        return higher;
    }
    if (category(lower) > category(higher)) {
        return ptl_promote_types(higher, lower);
    }
    return higher;
}

PtlDtype
ptl_result_type(PtlTensorImpl *const *ts, int n)
{
    PtlDtype dim_r = PTL_DTYPE_UNDEFINED, zero_r = PTL_DTYPE_UNDEFINED,
             wrap_r = PTL_DTYPE_UNDEFINED;
    for (int i = 0; i < n; i++) {
        const PtlTensorImpl *t = ts[i];
        if (t == NULL) {
            continue;
        }
        if (t->flags & PTL_TF_WRAPPED_NUMBER) {
            wrap_r = ptl_promote_types(wrap_r, wrapped_dtype(t->dtype));
        }
        else if (t->dim == 0) {
            zero_r = ptl_promote_types(zero_r, t->dtype);
        }
        else {
            dim_r = ptl_promote_types(dim_r, t->dtype);
        }
    }
    return combine_categories(dim_r, combine_categories(zero_r, wrap_r));
}

/* ---- broadcasting ---- */

int
ptl_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout,
                     int64_t *out)
{
    int n = na > nb ? na : nb;
    for (int i = n - 1; i >= 0; i--) {
        int ia = i - (n - na), ib = i - (n - nb);
        int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
        if (sa != sb && sa != 1 && sb != 1) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "The size of tensor a (%lld) must match the size of tensor b "
                                 "(%lld) at non-singleton dimension %d",
                                 (long long)sa, (long long)sb, i);
        }
        out[i] = sa == 1 ? sb : sa;
    }
    *nout = n;
    return 0;
}

/* ---- build ---- */

void
ptl_iter_release(PtlTensorIter *it)
{
    for (int i = 0; i < it->ntensors; i++) {
        PTL_CLEAR(it->ops[i]);
    }
    PTL_CLEAR(it->writeback);
    it->ntensors = 0;
}

/* Whether iteration dim `inner` should move outside `outer` (PyTorch's reorder_dimensions):
 * 1 yes, -1 no, 0 undecided.  The first operand with distinct non-zero strides decides; of
 * equal strides the larger size goes outside; a broadcast (zero) stride tells nothing. */
static int
should_swap(const PtlTensorIter *it, int skip_out, int outer, int inner)
{
    for (int t = skip_out; t < it->ntensors; t++) {
        int64_t so = it->strides[t][outer], si = it->strides[t][inner];
        if (so == 0 || si == 0) {
            continue;
        }
        if (si != so) {
            return si > so ? 1 : -1;
        }
        if (it->shape[inner] > it->shape[outer]) {
            return 1;
        }
    }
    return 0;
}

/* Step 1 of Note [TensorIterator]: the broadcast shape of the inputs into shape[0..*ndim).
 * An in-place output takes part (copy_ broadcasts src up to dst).  -1 with the error set. */
static int
iter_broadcast_shape(const PtlIterConfig *cfg, int *ndim, int64_t *shape)
{
    const PtlTensorImpl *out = cfg->out;
    if (cfg->is_inplace && out != NULL) {
        *ndim = out->dim;
        memcpy(shape, out->sizes, sizeof(int64_t) * (size_t)out->dim);
    }
    for (int i = 0; i < cfg->ninputs; i++) {
        const PtlTensorImpl *t = cfg->inputs[i];
        if (i == 0 && !(cfg->is_inplace && out != NULL)) {
            *ndim = t->dim;
            memcpy(shape, t->sizes, sizeof(int64_t) * (size_t)t->dim);
        }
        else if (ptl_broadcast_shapes(*ndim, shape, t->dim, t->sizes, ndim, shape) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The device of every operand: all alike, except CPU 0-dim inputs, which act as scalars.
 * -1 with PyTorch's "Expected all tensors to be on the same device" error. */
static int
iter_common_device(const PtlIterConfig *cfg, PtlDevice *dev)
{
    const PtlTensorImpl *out = cfg->out;
    int have_dev = 0;
    *dev = ptl_device_cpu();
    for (int i = 0; i < cfg->ninputs + (out != NULL); i++) {
        const PtlTensorImpl *t = i < cfg->ninputs ? cfg->inputs[i] : out;
        if (t->dim == 0 && t->device.type == PTL_DEVICE_CPU && i < cfg->ninputs) {
            continue;
        }
        if (!have_dev) {
            *dev = t->device;
            have_dev = 1;
        }
        else if (!ptl_device_equal(*dev, t->device) &&
                 (dev->type == PTL_DEVICE_META || t->device.type == PTL_DEVICE_META)) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "Tensor on device %s is not on the expected device %s!",
                                 ptl_device_type_name(t->device.type),
                                 ptl_device_type_name(dev->type));
        }
        else if (!ptl_device_equal(*dev, t->device)) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "Expected all tensors to be on the same device, but found at "
                                 "least two devices, %s:%d and %s%s!",
                                 ptl_device_type_name(dev->type), dev->index,
                                 ptl_device_type_name(t->device.type),
                                 t->device.type == PTL_DEVICE_CPU ? "" : ":0");
        }
    }
    if (!have_dev && cfg->ninputs > 0) {
        *dev = cfg->inputs[0]->device;
    }
    return 0;
}

/* Step 2: the common dtype of the promoting inputs, the compute dtype and the output
 * dtype. */
static void
iter_compute_dtypes(PtlTensorIter *it, const PtlIterConfig *cfg)
{
    PtlTensorImpl *prom[PTL_ITER_MAX_INPUTS];
    int np = 0;
    for (int i = 0; i < cfg->ninputs; i++) {
        if (!(cfg->no_promote & (1u << i))) {
            prom[np++] = cfg->inputs[i];
        }
    }
    it->common_dtype = ptl_result_type(prom, np);
    it->compute_dtype = cfg->compute_dtype != PTL_DTYPE_UNDEFINED ? cfg->compute_dtype
                                                                  : it->common_dtype;
    if (cfg->int_to_float && !ptl_dtype_is_floating(it->compute_dtype) &&
        !ptl_dtype_is_complex(it->compute_dtype)) {
        it->compute_dtype = ptl_default_dtype();
    }
    it->out_dtype = cfg->out_dtype != PTL_DTYPE_UNDEFINED ? cfg->out_dtype : it->compute_dtype;
}

/* Step 3, given output: an in-place output may not broadcast, out= is resized to the
 * broadcast shape, and the output dtype must cast to out's.  -1 with the error set. */
static int
iter_check_output(const PtlTensorIter *it, const PtlIterConfig *cfg, int ndim,
                  const int64_t *shape)
{
    PtlTensorImpl *out = cfg->out;
    char b1[128], b2[128];
    int same = out->dim == ndim && memcmp(out->sizes, shape, sizeof(int64_t) * (size_t)ndim) == 0;
    if (!same) {
        if (cfg->is_inplace) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "output with shape %s doesn't match the broadcast shape %s",
                                 ptl_format_sizes(b1, sizeof(b1), out->dim, out->sizes),
                                 ptl_format_sizes(b2, sizeof(b2), ndim, shape));
        }
        if (ptl_resize_output(out, ndim, shape) < 0) {   /* See Note [Resizing out=] */
            return -1;
        }
    }
    if (!ptl_can_cast(it->out_dtype, out->dtype)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "result type %s can't be cast to the desired output type %s",
                             ptl_dtype_legacy_name(it->out_dtype),
                             ptl_dtype_legacy_name(out->dtype));
    }
    return 0;
}

/* A copy of t in dtype `want`, laid out as t is (empty_like's preserve rule), so that a cast
 * input takes part in the output's layout as the input itself would: a float32 and a
 * float64 channels-last tensor multiply into a channels-last result, as in PyTorch, where the
 * loop casts on the fly. */
static PtlTensorImpl *
iter_cast_like(PtlTensorImpl *t, PtlDtype want)
{
    int64_t st[PTL_MAX_DIMS];
    if (ptl_memory_format_like_strides(t, PTL_MEMORY_FORMAT_PRESERVE, st) < 0) {
        return NULL;
    }
    PtlTensorImpl *out = ptl_empty_strided(t->dim, t->sizes, st, want, t->device);
    if (out != NULL && ptl_copy_into(out, t) < 0) {
        PTL_CLEAR(out);
    }
    return out;
}

/* Step 4: it->ops[1..] holds each input in the dtype it computes in (a new reference):
 * a CPU scalar is converted into it->scalars without allocation, another tensor is cast.
 * -1 with the error set. */
static int
iter_cast_inputs(PtlTensorIter *it, const PtlIterConfig *cfg)
{
    for (int i = 0; i < cfg->ninputs; i++) {
        PtlTensorImpl *t = cfg->inputs[i];
        PtlDtype want = (cfg->no_promote & (1u << i)) ? t->dtype : it->compute_dtype;
        if (t->dtype != want && t->dim == 0 && t->device.type == PTL_DEVICE_CPU) {
            /* a scalar (often a Python number): convert it in place, no allocation */
            ptl_convert_scalar(it->scalars[i + 1].c, want, ptl_tensor_data(t), t->dtype);
            it->scalar_cast |= 1u << (i + 1);
            ptl_incref(t);
        }
        else if (t->dtype != want) {
            if ((t = iter_cast_like(t, want)) == NULL) {
                return -1;
            }
        }
        else {
            ptl_incref(t);
        }
        it->ops[i + 1] = t;
    }
    return 0;
}

/* Operands first.. get their strides in bytes over the broadcast shape, and the iteration
 * shape is set, both in reversed order (dim 0 innermost). */
static void
iter_set_strides(PtlTensorIter *it, int first, int ndim, const int64_t *shape)
{
    for (int t = first; t < it->ntensors; t++) {
        const PtlTensorImpl *op = it->ops[t];
        int64_t item = (int64_t)ptl_dtype_itemsize(op->dtype);
        int off = ndim - op->dim;
        for (int d = 0; d < ndim; d++) {
            int od = d - off;
            /* zero for a broadcast dim; a size-1 dim of the result keeps its stride, which
             * only orders the dims (reorder) */
            int64_t st = (od < 0 || (op->sizes[od] == 1 && shape[d] != 1))
                             ? 0 : op->strides[od] * item;
            it->strides[t][ndim - 1 - d] = st;
        }
    }
    for (int d = 0; d < ndim; d++) {
        it->shape[d] = shape[ndim - 1 - d];
    }
    it->ndim = ndim;
}

/* Step 3: orders the iteration dims so that dim 0 moves fastest in memory (an insertion
 * sort with should_swap over operands first..), and permutes shape and strides to match;
 * perm[d] is the original iteration dim now at d. */
static void
iter_reorder_dims(PtlTensorIter *it, int first, int *perm)
{
    int ndim = it->ndim;
    for (int d = 0; d < ndim; d++) {
        perm[d] = d;
    }
    if (ndim <= 1) {
        return;
    }
    /* an undecided pair does not stop the insertion: the dim moves on past it, so a size-1
     * dim between two ordered ones does not pin the order (PyTorch's sort) */
    for (int i = 1; i < ndim; i++) {
        int moving = i;
        for (int j = i - 1; j >= 0; j--) {
            int c = should_swap(it, first, perm[moving], perm[j]);
            if (c < 0) {
                break;
            }
            if (c > 0) {
                int tmp = perm[j];
                perm[j] = perm[moving];
                perm[moving] = tmp;
                moving = j;
            }
        }
    }
    int64_t tmp_shape[PTL_MAX_DIMS], tmp_strides[PTL_MAX_DIMS];
    for (int d = 0; d < ndim; d++) {
        tmp_shape[d] = it->shape[perm[d]];
    }
    memcpy(it->shape, tmp_shape, sizeof(int64_t) * (size_t)ndim);
    for (int t = first; t < it->ntensors; t++) {
        for (int d = 0; d < ndim; d++) {
            tmp_strides[d] = it->strides[t][perm[d]];
        }
        memcpy(it->strides[t], tmp_strides, sizeof(int64_t) * (size_t)ndim);
    }
}

/* PyTorch's fast set-up: when every input has the result's shape and all are contiguous, or
 * all channels-last contiguous, the output takes that format's strides (the strides of its
 * size-1 dims included: a (2, 3, 1, 5) channels-last input gives (15, 1, 15, 3), a
 * (0, 3, 4, 5) one a contiguous result, since an empty tensor is contiguous).  The format, or
 * PTL_MEMORY_FORMAT_PRESERVE when the strides decide.  0-dim inputs (`x * 2`) are passed over
 * where no dim of the result has size 0 or 1: there the other inputs' strides, all distinct,
 * sort to exactly that format, so the decision is the one the sort would make. */
static PtlMemoryFormat
iter_fast_format(const PtlTensorIter *it, int ndim, const int64_t *shape)
{
    PtlMemoryFormat f = ndim == 4 ? PTL_MEMORY_FORMAT_CHANNELS_LAST
                        : ndim == 5 ? PTL_MEMORY_FORMAT_CHANNELS_LAST_3D
                                    : PTL_MEMORY_FORMAT_PRESERVE;
    int contig = 1, scalars_broadcast = ndim > 0;
    for (int d = 0; d < ndim; d++) {
        scalars_broadcast = scalars_broadcast && shape[d] > 1;
    }
    for (int t = 1; t < it->ntensors; t++) {
        const PtlTensorImpl *op = it->ops[t];
        if (op->dim == 0 && scalars_broadcast) {
            continue;
        }
        if (op->dim != ndim || memcmp(op->sizes, shape, sizeof(int64_t) * (size_t)ndim) != 0) {
            return PTL_MEMORY_FORMAT_PRESERVE;
        }
        contig = contig && ptl_tensor_is_contiguous(op);
    }
    if (contig) {
        return PTL_MEMORY_FORMAT_CONTIGUOUS;
    }
    for (int t = 1; f != PTL_MEMORY_FORMAT_PRESERVE && t < it->ntensors; t++) {
        if (it->ops[t]->dim != 0 && !ptl_tensor_impl_is_contiguous_as(it->ops[t], f)) {
            f = PTL_MEMORY_FORMAT_PRESERVE;
        }
    }
    return f;
}

/* The fast set-up's iteration: every operand (the output included) has the result's shape
 * and is dense in one format, or is 0-dim, so element k of each lies k items from its start
 * (a 0-dim one's only element at its start); the whole iteration is one run, as coalescing
 * would make it, without sorting or merging dims. */
static void
iter_dense_run(PtlTensorIter *it, const int64_t *shape, int ndim)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        n *= shape[d];
    }
    it->ndim = 1;
    it->numel = n;
    it->shape[0] = n;
    for (int t = 0; t < it->ntensors; t++) {
        const PtlTensorImpl *op = it->ops[t];
        it->strides[t][0] = op->dim == 0 ? 0 : (int64_t)ptl_dtype_itemsize(op->dtype);
        it->data[t] = (it->scalar_cast & (1u << t)) ? it->scalars[t].c : ptl_tensor_data(op);
    }
}

/* The output of `shape` with element strides st: a new tensor, or `reuse` (out= that step 3
 * resized, borrowed) restrided in place, as PyTorch's set_output_raw_strided restrides a
 * resized out= to the strides it would give a new output: add(x.t(), y.t(), out=empty(0))
 * is transposed like x.t() + y.t().  New reference, or NULL with the error set. */
static PtlTensorImpl *
iter_new_output(const PtlTensorIter *it, PtlTensorImpl *reuse, int ndim, const int64_t *shape,
                const int64_t *st, PtlDevice dev)
{
    if (reuse == NULL) {
        return ptl_empty_strided(ndim, shape, st, it->out_dtype, dev);
    }
    ptl_tensor_impl_set_sizes(reuse, ndim, shape, st);
    ptl_incref(reuse);
    return reuse;
}

/* Step 3: allocates the output in it->ops[0] (or restrides `reuse`, iter_new_output),
 * contiguous in iteration order (perm[0], the innermost dim, gets stride 1), and fills its
 * byte strides.  -1 with the error set.  As in PyTorch, an unpermuted order gives the plain
 * contiguous strides, where a size-0 dim counts as 1 ((2, 0, 4, 5): (20, 20, 5, 1)), and a
 * permuted one the running products of the sizes ((2, 0, 4, 5) permuted to channels-last:
 * (0, 1, 0, 0)). */
static int
iter_allocate_output(PtlTensorIter *it, PtlTensorImpl *reuse, const int *perm,
                     const int64_t *shape, PtlDevice dev)
{
    int ndim = it->ndim, permuted = 0;
    int64_t st[PTL_MAX_DIMS], s = 1;
    for (int d = 0; d < ndim; d++) {
        permuted = permuted || perm[d] != d;
    }
    for (int d = 0; d < ndim; d++) {
        int64_t size = shape[ndim - 1 - perm[d]];
        st[ndim - 1 - perm[d]] = s;
        s *= permuted || size > 1 ? size : 1;
    }
    PtlTensorImpl *o = iter_new_output(it, reuse, ndim, shape, st, dev);
    if (o == NULL) {
        return -1;
    }
    it->ops[0] = o;
    int64_t item = (int64_t)ptl_dtype_itemsize(it->out_dtype);
    for (int d = 0; d < ndim; d++) {
        int od = ndim - 1 - perm[d];
        it->strides[0][d] = shape[od] == 1 ? 0 : st[od] * item;
    }
    return 0;
}

/* Step 5: merges neighbouring dims whose strides line up in every operand, so contiguous
 * tensors become one 1-D run whatever their shape. */
static void
iter_coalesce(PtlTensorIter *it)
{
    if (it->ndim <= 1) {
        return;
    }
    int w = 0;
    for (int d = 1; d < it->ndim; d++) {
        int ok = 1;
        for (int t = 0; t < it->ntensors && ok; t++) {
            ok = it->shape[w] == 1 || it->shape[d] == 1 ||
                 it->strides[t][d] == it->shape[w] * it->strides[t][w];
        }
        if (ok) {
            if (it->shape[w] == 1) {
                for (int t = 0; t < it->ntensors; t++) {
                    it->strides[t][w] = it->strides[t][d];
                }
            }
            it->shape[w] *= it->shape[d];
        }
        else {
            w++;
            it->shape[w] = it->shape[d];
            for (int t = 0; t < it->ntensors; t++) {
                it->strides[t][w] = it->strides[t][d];
            }
        }
    }
    it->ndim = w + 1;
}

/* Note [Overlapping output]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~
 * A loop reads and writes element by element (in pieces, Note [Staged strided runs]), so a
 * written tensor that overlaps itself or an input in another layout gives an answer that
 * depends on the order of the loop: `torch.neg(x[:3], out=x[1:])` would spread row 0.
 * PyTorch's rule (its MemoryOverlap): an output with a stride-0 dimension of size > 1
 * overlaps itself; two dense non-overlapping tensors over one storage overlap fully when
 * they cover the same bytes with the same strides (in-place `x.add_(x)`: fine) and
 * partially when their byte ranges meet otherwise.  Both are errors; other layouts are too
 * hard to decide and pass, as in PyTorch.  The stride-0 rule is checked on the out= tensor
 * as given, before a resize, as PyTorch's compute_mem_overlaps precedes its resize: an
 * expanded out= of the wrong shape is refused, not silently reallocated. */
static int
iter_dense_range(const PtlTensorImpl *t, int64_t *begin, int64_t *end)
{
    int64_t st[PTL_MAX_DIMS];
    if (!ptl_tensor_impl_dense_strides(t, st)) {
        return 0;
    }
    int64_t item = (int64_t)ptl_dtype_itemsize(t->dtype);
    *begin = t->storage_offset * item;
    *end = *begin + t->numel * item;
    return 1;
}

int
ptl_check_no_internal_overlap(const PtlTensorImpl *out)
{
    if (out->numel == 0 || out->device.type == PTL_DEVICE_META) {
        return 0;
    }
    for (int d = 0; d < out->dim; d++) {
        if (out->strides[d] == 0 && out->sizes[d] > 1) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "unsupported operation: more than one element of the written-to "
                                 "tensor refers to a single memory location. Please clone() the "
                                 "tensor before performing the operation.");
        }
    }
    return 0;
}

static int
iter_check_overlap(const PtlIterConfig *cfg)
{
    const PtlTensorImpl *out = cfg->out;
    int64_t ob, oe, ib, ie;
    if (out->numel == 0 || out->device.type == PTL_DEVICE_META) {
        return 0;
    }
    if (!iter_dense_range(out, &ob, &oe)) {
        return 0;
    }
    for (int i = 0; i < cfg->ninputs; i++) {
        const PtlTensorImpl *t = cfg->inputs[i];
        if (t == out || t->numel == 0 || t->storage->data != out->storage->data ||
            !iter_dense_range(t, &ib, &ie)) {
            continue;
        }
        int full = ib == ob && ie == oe && t->dim == out->dim && t->dtype == out->dtype;
        for (int d = 0; full && d < t->dim; d++) {
            full = t->sizes[d] == out->sizes[d] &&
                   (t->sizes[d] == 1 || t->strides[d] == out->strides[d]);
        }
        if (!full && ib < oe && ob < ie) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "unsupported operation: some elements of the input tensor and "
                                 "the written-to tensor refer to a single memory location. "
                                 "Please clone() the tensor before performing the operation.");
        }
    }
    return 0;
}

int
ptl_check_no_overlap(const PtlTensorImpl *written, const PtlTensorImpl *read)
{
    int64_t wb, we, rb, re;
    if (written->numel == 0 || read->numel == 0 || written->device.type == PTL_DEVICE_META ||
        read->storage->data != written->storage->data) {
        return 0;
    }
    if (written != read &&
        (!iter_dense_range(written, &wb, &we) || !iter_dense_range(read, &rb, &re) ||
         rb >= we || wb >= re)) {
        return 0;
    }
    return ptl_error_set(PTL_ERR_RUNTIME,
                         "unsupported operation: some elements of the input tensor and the "
                         "written-to tensor refer to a single memory location. Please clone() "
                         "the tensor before performing the operation.");
}

/* out= of another dtype than the result's (borrowed) becomes the writeback target of the
 * temporary in it->ops[0], restrided as the temporary when step 3 resized it. */
static void
iter_keep_writeback(PtlTensorIter *it, PtlTensorImpl *out, int resized)
{
    if (resized) {
        ptl_tensor_impl_set_sizes(out, out->dim, out->sizes, it->ops[0]->strides);
    }
    ptl_incref(out);
    it->writeback = out;
}

/* The steps of Note [TensorIterator], in PyTorch's order of checks. */
int
ptl_iter_build(PtlTensorIter *it, const PtlIterConfig *cfg)
{
    int64_t shape[PTL_MAX_DIMS];
    int ndim = 0, perm[PTL_MAX_DIMS];
    PtlTensorImpl *out = cfg->out;
    PtlDevice dev;

    memset(it, 0, offsetof(PtlTensorIter, strides));
    it->ntensors = cfg->ninputs + 1;
    it->writeback = NULL;
    it->scalar_cast = 0;
    for (int i = 0; i < PTL_ITER_MAX; i++) {
        it->ops[i] = NULL;
    }
    if (iter_broadcast_shape(cfg, &ndim, shape) < 0 || iter_common_device(cfg, &dev) < 0) {
        goto error;
    }
    iter_compute_dtypes(it, cfg);
    it->out_dim = ndim;
    memcpy(it->out_sizes, shape, sizeof(int64_t) * (size_t)ndim);
    int resized = out != NULL && !cfg->is_inplace &&
                  (out->dim != ndim ||
                   memcmp(out->sizes, shape, sizeof(int64_t) * (size_t)ndim) != 0);
    if (out != NULL && (ptl_check_no_internal_overlap(out) < 0 ||
                        iter_check_output(it, cfg, ndim, shape) < 0 ||
                        iter_check_overlap(cfg) < 0)) {
        goto error;
    }
    if (iter_cast_inputs(it, cfg) < 0) {
        goto error;
    }
    /* a resized out= is laid out as a new output would be (iter_new_output): as one when
     * it has the output's dtype, else after the temporary that stands for it */
    int need_temp = out != NULL && out->dtype != it->out_dtype;
    int alloc_out = out == NULL || need_temp || resized;
    PtlTensorImpl *reuse = resized && !need_temp ? out : NULL;
    if (!alloc_out) {
        ptl_incref(out);
        it->ops[0] = out;
    }
    /* (a given output of one dim is left to the general set-up, as cheap there) */
    PtlMemoryFormat fast = alloc_out || ndim > 1 ? iter_fast_format(it, ndim, shape)
                                                 : PTL_MEMORY_FORMAT_PRESERVE;
    if (fast != PTL_MEMORY_FORMAT_PRESERVE && alloc_out) {
        int64_t st[PTL_MAX_DIMS];
        ptl_memory_format_strides(fast, ndim, shape, st);
        if ((it->ops[0] = iter_new_output(it, reuse, ndim, shape, st, dev)) == NULL) {
            goto error;
        }
    }
    if (ndim > 0 && fast != PTL_MEMORY_FORMAT_PRESERVE &&
        (alloc_out || ptl_tensor_impl_is_contiguous_as(it->ops[0], fast))) {
        iter_dense_run(it, shape, ndim);
        if (need_temp) {
            iter_keep_writeback(it, out, resized);
        }
        return 0;
    }
    iter_set_strides(it, alloc_out && it->ops[0] == NULL ? 1 : 0, ndim, shape);
    iter_reorder_dims(it, alloc_out && it->ops[0] == NULL ? 1 : 0, perm);
    if (alloc_out) {
        if (it->ops[0] == NULL && iter_allocate_output(it, reuse, perm, shape, dev) < 0) {
            goto error;
        }
        if (need_temp) {
            iter_keep_writeback(it, out, resized);
        }
    }
    it->numel = 1;
    for (int d = 0; d < ndim; d++) {
        it->numel *= it->shape[d];
    }
    iter_coalesce(it);
    for (int t = 0; t < it->ntensors; t++) {
        it->data[t] = (it->scalar_cast & (1u << t)) ? it->scalars[t].c
                                                     : ptl_tensor_data(it->ops[t]);
    }
    return 0;
error:
    ptl_iter_release(it);
    return -1;
}

/* ---- run ---- */

/* Note [Staged strided runs]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The loops are fast on contiguous and broadcast (stride 0) operands, where they vectorise,
 * and slow on any other stride: there they fall back to a scalar loop (for exp, libm per
 * element), so `x[:, ::2].neg()` or `x + y.t()` ran at a third of PyTorch's speed.  So a run
 * in which some operand has another stride goes through the loop in pieces of up to
 * ITER_STAGE_BYTES per operand: each such input is first gathered into a contiguous buffer
 * (one load and one store per element; every other 4- or 8-byte element, `x[:, ::2]`, by
 * AVX2 shuffles, stage_copy), the loop runs on the buffers with contiguous
 * strides, and a strided output is scattered back (not gathered: a pointwise loop writes
 * every output element and never reads one).  An input that is transposed to the iteration
 * (closer in memory along dim 1 than along the run, `y.t()` in `x + y.t()`) would be read a
 * cache line per element, and at power-of-two strides the lines evict each other before the
 * next run uses them; so whole runs go ITER_TILE_ROWS at a time, a tile of columns at a time,
 * and such an input is gathered a tile at once, walking its short stride (each line read
 * once; 4-byte items whose runs are adjacent, 8 x 8 blocks transposed in AVX2 registers).
 * A tile is 16 KB per input, 256 float32 columns: on a 1000 x 1000 float32 `x + y.t()` (one
 * thread, AVX2 gather) 16 KB tiles took 1.08 ms, 8 KB 1.12-1.23 and 4 KB 1.27, since every
 * tile row is one call of the loop.  Every element is computed by the same formula as on
 * contiguous data -- the vector formulas' bits, whatever the layout -- only the order of the
 * elements changes. */
#define ITER_STAGE_BYTES 1024
#define ITER_TILE_ROWS 16
#define ITER_TILE_BYTES 16384

typedef struct RunCtx {
    PtlTensorIter *it;
    PtlLoop loop;
    const void *extra;
    uint32_t staged;                     /* bit t: operand t is strided in dim 0 */
    int64_t stage_len;                   /* elements per piece */
    uint32_t tiled;                      /* bit t: input t is transposed (run_tiles) */
    int64_t tile_cols;                   /* elements per tile row */
} RunCtx;

#ifdef PTL_HAVE_TRANSPOSE_BLOCK
/* The leading elements of a gather of every other element of 4 or 8 bytes (src's stride 2
 * item) into dst, 32 bytes a step: two vectors of src loaded, the even elements of each
 * 16-byte lane picked (a shuffle of floats, or the low doubles), and the 8-byte pairs put in
 * order (a0 a2 b0 b2 | a4 a6 b4 b6 -> a0 a2 a4 a6 b0 b2 b4 b6).  A step reads the 64 bytes
 * from element 2 i on, so it runs only while the element after them is one of the n: no
 * read past the operand's last element.  Returns the elements done. */
__attribute__((target("avx2"))) static int64_t
stage_evens_avx2(char *dst, const char *src, int64_t n, size_t item)
{
    const int64_t step = 32 / (int64_t)item;
    int64_t i = 0;
    for (; i + step < n; i += step) {
        const char *s = src + 2 * (int64_t)item * i;
        __m256d a = _mm256_loadu_pd((const double *)s);
        __m256d b = _mm256_loadu_pd((const double *)(s + 32));
        __m256d e = item == 4 ? _mm256_castps_pd(_mm256_shuffle_ps(
                                    _mm256_castpd_ps(a), _mm256_castpd_ps(b),
                                    _MM_SHUFFLE(2, 0, 2, 0)))
                              : _mm256_unpacklo_pd(a, b);
        _mm256_storeu_pd((double *)(dst + (int64_t)item * i),
                         _mm256_permute4x64_pd(e, _MM_SHUFFLE(3, 1, 2, 0)));
    }
    return i;
}
#endif

/* n elements of `item` bytes from src (stride ss bytes) to dst (stride ds).  A gather of
 * every other 4- or 8-byte element (`x[:, ::2]`) into a buffer goes by vectors on AVX2: the
 * scalar loop took 58% of `x[:, ::2] * 2`.  The shuffles move bits, so any dtype's. */
static void
stage_copy(char *dst, int64_t ds, const char *src, int64_t ss, int64_t n, size_t item)
{
#ifdef PTL_HAVE_TRANSPOSE_BLOCK
    if (ds == (int64_t)item && ss == 2 * ds && (item == 4 || item == 8) &&
        ptl_cpu_capability() >= PTL_CPU_AVX2) {
        int64_t done = stage_evens_avx2(dst, src, n, item);
        dst += done * ds;
        src += done * ss;
        n -= done;
    }
#endif
#define STAGE_COPY(ITEM)                                                                        \
    for (int64_t i = 0; i < n; i++) {                                                         \
        memcpy(dst + i * ds, src + i * ss, ITEM);                                             \
    }                                                                                         \
    return;
    switch (item) {
    case 1: STAGE_COPY(1)
    case 2: STAGE_COPY(2)
    case 4: STAGE_COPY(4)
    case 8: STAGE_COPY(8)
    default: STAGE_COPY(16)
    }
#undef STAGE_COPY
}

/* The loop over one run of n elements at ptrs (strides s0), pieces staged as the Note says */
static void
run_staged(const RunCtx *c, char **ptrs, const int64_t *s0, int64_t n)
{
    _Alignas(64) char buf[PTL_ITER_MAX][ITER_STAGE_BYTES];
    int nt = c->it->ntensors;
    size_t item[PTL_ITER_MAX];
    int64_t bs[PTL_ITER_MAX];
    char *bp[PTL_ITER_MAX];
    for (int t = 0; t < nt; t++) {
        item[t] = ptl_dtype_itemsize(c->it->ops[t]->dtype);
        bs[t] = c->staged >> t & 1 ? (int64_t)item[t] : s0[t];
    }
    for (int64_t k = 0; k < n; k += c->stage_len) {
        int64_t m = n - k < c->stage_len ? n - k : c->stage_len;
        for (int t = 0; t < nt; t++) {
            char *p = ptrs[t] + k * s0[t];
            bp[t] = p;
            if (c->staged >> t & 1) {
                bp[t] = buf[t];
                if (t > 0) {
                    stage_copy(buf[t], (int64_t)item[t], p, s0[t], m, item[t]);
                }
            }
        }
        c->loop(bp, bs, m, c->extra);
        if (c->staged & 1) {
            stage_copy(ptrs[0] + k * s0[0], s0[0], buf[0], (int64_t)item[0], m, item[0]);
        }
    }
}

static inline void
run_loop(const RunCtx *c, char **ptrs, const int64_t *s0, int64_t n)
{
    if (c->staged != 0) {
        run_staged(c, ptrs, s0, n);
    }
    else {
        c->loop(ptrs, s0, n, c->extra);
    }
}

/* The tile of nr runs of n elements at src (strides s0 along a run, s1 between runs) into
 * buf as nr contiguous rows of n: the inner loop walks s1, the short stride, so each cache
 * line of a transposed operand is read once. */
static inline __attribute__((always_inline)) void
tile_gather_items(char *buf, const char *src, int64_t s0, int64_t s1, int64_t n, int64_t nr,
                  size_t item)
{
    for (int64_t j = 0; j < n; j++) {
        for (int64_t r = 0; r < nr; r++) {
            memcpy(buf + (size_t)(r * n + j) * item, src + j * s0 + r * s1, item);
        }
    }
}

#ifdef PTL_HAVE_TRANSPOSE_BLOCK
/* The whole groups of 8 runs of tile_gather for 4-byte items whose runs are adjacent (s1 ==
 * 4): 8 x 8 blocks transposed in registers and written a row vector at a time (a scalar
 * store per element, the rows 256 bytes apart, took 80% of `x + y.t()`).  Returns the runs
 * done; the j tail of each group is copied element by element. */
__attribute__((target("avx2"))) static int64_t
tile_gather_4_avx2(char *buf, const char *src, int64_t s0, int64_t n, int64_t nr)
{
    int64_t r0 = 0;
    for (; r0 + 8 <= nr; r0 += 8) {
        int64_t j = 0;
        for (; j + 8 <= n; j += 8) {
            ptl_transpose_block_4(buf + (r0 * n + j) * 4, n * 4, src + j * s0 + r0 * 4, s0);
        }
        for (; j < n; j++) {
            for (int64_t r = r0; r < r0 + 8; r++) {
                memcpy(buf + (r * n + j) * 4, src + j * s0 + r * 4, 4);
            }
        }
    }
    return r0;
}
#endif

static void
tile_gather(char *buf, const char *src, int64_t s0, int64_t s1, int64_t n, int64_t nr,
            size_t item)
{
#ifdef PTL_HAVE_TRANSPOSE_BLOCK
    if (item == 4 && s1 == 4 && ptl_cpu_capability() >= PTL_CPU_AVX2) {
        int64_t done = tile_gather_4_avx2(buf, src, s0, n, nr);
        buf += done * n * 4;
        src += done * 4;
        nr -= done;
    }
#endif
    switch (item) {
    case 1: tile_gather_items(buf, src, s0, s1, n, nr, 1); break;
    case 2: tile_gather_items(buf, src, s0, s1, n, nr, 2); break;
    case 4: tile_gather_items(buf, src, s0, s1, n, nr, 4); break;
    case 8: tile_gather_items(buf, src, s0, s1, n, nr, 8); break;
    default: tile_gather_items(buf, src, s0, s1, n, nr, 16); break;
    }
}

/* rows whole runs (dim 0) of consecutive dim-1 indices from ptrs, a tile of ITER_TILE_ROWS
 * runs by c->tile_cols elements at a time, the transposed operands through tile buffers
 * (Note [Staged strided runs]) */
static void
run_tiles(const RunCtx *c, char *const *ptrs, const int64_t *s0, int64_t rows)
{
    _Alignas(64) char tile[PTL_ITER_MAX - 1][ITER_TILE_BYTES];   /* inputs only */
    const PtlTensorIter *it = c->it;
    RunCtx rc = *c;
    int64_t cols = it->shape[0], st[PTL_ITER_MAX];
    size_t item[PTL_ITER_MAX];
    char *p[PTL_ITER_MAX];
    rc.staged &= ~c->tiled;
    for (int t = 0; t < it->ntensors; t++) {
        item[t] = ptl_dtype_itemsize(it->ops[t]->dtype);
        st[t] = c->tiled >> t & 1 ? (int64_t)item[t] : s0[t];
    }
    for (int64_t r0 = 0; r0 < rows; r0 += ITER_TILE_ROWS) {
        int64_t nr = rows - r0 < ITER_TILE_ROWS ? rows - r0 : ITER_TILE_ROWS;
        for (int64_t j = 0; j < cols; j += c->tile_cols) {
            int64_t n = cols - j < c->tile_cols ? cols - j : c->tile_cols;
            for (int t = 1; t < it->ntensors; t++) {
                if (c->tiled >> t & 1) {
                    tile_gather(tile[t - 1], ptrs[t] + r0 * it->strides[t][1] + j * s0[t], s0[t],
                                it->strides[t][1], n, nr, item[t]);
                }
            }
            for (int64_t r = 0; r < nr; r++) {
                for (int t = 0; t < it->ntensors; t++) {
                    p[t] = c->tiled >> t & 1 ? tile[t - 1] + (size_t)(r * n) * item[t]
                                             : ptrs[t] + (r0 + r) * it->strides[t][1] + j * s0[t];
                }
                run_loop(&rc, p, st, n);
            }
        }
    }
}

/* rows whole runs (dim 0) of consecutive dim-1 indices from ptrs: each run's pointers step by
 * dim 1's strides from the last, where run_range would rebuild them from the index (short
 * runs, such as the 32-value rows of a padded image, spent more there than in the loop) */
static void
run_rows(const RunCtx *c, char *const *ptrs, const int64_t *s0, int64_t rows)
{
    const PtlTensorIter *it = c->it;
    char *p[PTL_ITER_MAX];
    for (int64_t r = 0; r < rows; r++) {
        for (int t = 0; t < it->ntensors; t++) {
            p[t] = ptrs[t] + r * it->strides[t][1];
        }
        run_loop(c, p, s0, it->shape[0]);
    }
}

static int
run_range(void *vctx, int64_t begin, int64_t end)
{
    RunCtx *c = vctx;
    PtlTensorIter *it = c->it;
    int nt = it->ntensors, nd = it->ndim;
    int64_t idx[PTL_MAX_DIMS], s0[PTL_ITER_MAX];
    char *ptrs[PTL_ITER_MAX];

    for (int t = 0; t < nt; t++) {
        s0[t] = nd > 0 ? it->strides[t][0] : 0;
    }
    if (nd <= 1) {
        for (int t = 0; t < nt; t++) {
            ptrs[t] = it->data[t] + begin * s0[t];
        }
        run_loop(c, ptrs, s0, end - begin);
        return 0;
    }
    int64_t rem = begin;
    for (int d = 0; d < nd; d++) {
        idx[d] = rem % it->shape[d];
        rem /= it->shape[d];
    }
    while (begin < end) {
        for (int t = 0; t < nt; t++) {
            char *p = it->data[t];
            for (int d = 0; d < nd; d++) {
                p += idx[d] * it->strides[t][d];
            }
            ptrs[t] = p;
        }
        int64_t n = it->shape[0] - idx[0];
        if (n > end - begin) {
            n = end - begin;
        }
        int64_t rows = it->shape[1] - idx[1];
        if (rows > (end - begin) / it->shape[0]) {
            rows = (end - begin) / it->shape[0];
        }
        if (c->tiled && idx[0] == 0 && rows > 1) {
            run_tiles(c, ptrs, s0, rows);
            n = rows * it->shape[0];
            idx[0] = it->shape[0];
            idx[1] += rows - 1;
        }
        else if (idx[0] == 0 && rows > 1) {
            run_rows(c, ptrs, s0, rows);
            n = rows * it->shape[0];
            idx[0] = it->shape[0];
            idx[1] += rows - 1;
        }
        else {
            run_loop(c, ptrs, s0, n);
            idx[0] += n;
        }
        begin += n;
        for (int d = 0; d < nd - 1 && idx[d] == it->shape[d]; d++) {
            idx[d] = 0;
            idx[d + 1]++;
        }
    }
    return 0;
}

static int
iter_run(PtlTensorIter *it, PtlLoop loop, const void *extra, int stage)
{
    RunCtx c = {it, loop, extra, 0, ITER_STAGE_BYTES, 0, ITER_TILE_BYTES};
    if (it->numel == 0 || it->ops[0]->device.type == PTL_DEVICE_META) {   /* no data */
        return 0;
    }
    for (int t = 0; stage && t < it->ntensors && it->ndim > 0; t++) {
        int64_t st = it->strides[t][0], item = (int64_t)ptl_dtype_itemsize(it->ops[t]->dtype);
        if (st != 0 && st != item && !(it->scalar_cast >> t & 1)) {
            c.staged |= 1u << t;
            c.stage_len = ITER_STAGE_BYTES / item < c.stage_len ? ITER_STAGE_BYTES / item
                                                                : c.stage_len;
            if (t > 0 && it->ndim > 1 && labs(it->strides[t][1]) < labs(st)) {
                c.tiled |= 1u << t;
                c.tile_cols = ITER_TILE_BYTES / ITER_TILE_ROWS / item < c.tile_cols
                                  ? ITER_TILE_BYTES / ITER_TILE_ROWS / item
                                  : c.tile_cols;
            }
        }
    }
    if (it->numel < PTL_GRAIN_SIZE) {
        return run_range(&c, 0, it->numel);
    }
    void *tok = ptl_nogil_begin();
    int rc = ptl_parallel_for(0, it->numel, PTL_GRAIN_SIZE, run_range, &c);
    ptl_nogil_end(tok);
    return rc;
}

int
ptl_iter_run(PtlTensorIter *it, PtlLoop loop, const void *extra)
{
    return iter_run(it, loop, extra, 1);
}

int
ptl_iter_run_direct(PtlTensorIter *it, PtlLoop loop, const void *extra)
{
    return iter_run(it, loop, extra, 0);
}

PtlTensorImpl *
ptl_iter_finish(PtlTensorIter *it)
{
    PtlTensorImpl *res;
    if (it->writeback != NULL) {
        if (ptl_copy_into(it->writeback, it->ops[0]) < 0) {
            ptl_iter_release(it);
            return NULL;
        }
        res = it->writeback;
        it->writeback = NULL;
    }
    else {
        res = it->ops[0];
        it->ops[0] = NULL;
    }
    ptl_iter_release(it);
    return res;
}
