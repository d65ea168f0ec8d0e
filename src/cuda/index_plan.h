/* index_plan.h -- the per-element and per-thread arithmetic of the gather, scatter and
 * advanced-indexing kernels, compiled by nvcc for the device (index.cu) and by gcc for the
 * host (index_plan.c), whose emulation runs exactly these functions in the kernels' order.
 * Mirrors ATen/native/cuda/ScatterGatherKernel.cu and Indexing.cu in behaviour.
 *
 * Note [CUDA index and sort kernels]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * gather and the scatter family (scatter src and value, reduce= add and multiply,
 * scatter_add, scatter_reduce sum, prod, mean, amax, amin with and without include_self)
 * run scatter_gather.c's CPU kernel on the CUDA key: its checks, its output and the copy a
 * functional scatter starts from; its last step hands the geometry to these kernels
 * through device_index.h's hook instead of walking the rows.
 * - gather: one thread per index element j (row-major over index): it reads index[j],
 *   checks it and moves one element of self to out[j].
 * - scatter: one writer per output element, no float atomics.  The index elements that
 *   can write self's element (c with c[dim] = v) are the ones with c's coordinates but
 *   along dim: a fiber of index along dim.  Thread u takes fiber u % nfib (neighbouring
 *   threads, neighbouring fibers) and the rows [v0, v1) of self along dim, chunk u / nfib:
 *   it walks its fiber's index values in order and applies those that fall in its rows.
 *   Each self element has one writer, which combines its values in the fiber's order,
 *   which is the CPU kernel's row-major order restricted to that element: the CPU's bits
 *   for every reduction.  mean and include_self=False count the values each element gets
 *   in a zeroed int64 workspace the size of self's span (the CPU's count array); the same
 *   thread divides its rows' means at the end.  The rows are chunked (the embedding
 *   backward's ptl_cuda_embedding_chunk, fibers as its columns) so that few fibers still
 *   fill the device; every chunk's thread reads the whole fiber, so the work is the
 *   index's size times the chunks: fine for the scatter_adds of gradients (many fibers),
 *   slow for one long fiber into many rows, where a sort-then-segment pass would be the
 *   next step.
 * A bad index cannot raise on the device: the thread that meets it records numel - j in a
 * status word (an integer atomicMax, so the smallest j wins whatever the threads' order);
 * the host reads it back after the kernel (a synchronisation), reads that index value
 * and raises the CPU kernel's error for the first bad index in row-major order.  gather's
 * output is then discarded; an in-place scatter has written every good index (the CPU
 * kernel stops at the bad one: PyTorch leaves self unspecified either way).
 * Advanced indexing (x[i], x[mask], index_put_ with and without accumulate) and the
 * index_* family (index_select, index_add, index_copy, index_fill) run index.c's CPU kernel
 * too, whose walk is three offset tables (Note [Advanced indexing]).  The index tensors
 * are read on the host (copied back from the device: a synchronisation, which PyTorch's
 * masks and index_put's accumulate also pay) to build the tables and check every index
 * with the CPU's messages, so no bad index reaches a kernel; the tables go to the device in
 * one copy.  The gather is one thread per output element.  The scatter is one writer per
 * output element: the host sorts the walk's index tuples by offset (stably) into groups of
 * equal offsets, and thread (group, i, j) applies its group's values in ascending tuple
 * order, the CPU kernel's order for that element: the CPU's bits, no atomics.  Neighbouring
 * threads take neighbouring j (the trailing dims: coalesced rows).
 * cat (and stack, hstack, vstack, which are cat of views) runs join.c's CPU kernel: its
 * checks and its output; inputs of another dtype are converted first (the copy kernel), and
 * one kernel launch fills the whole output, one thread per element, from a table of the
 * non-empty inputs' descriptors (data, first index along dim, strides: any layout) copied
 * to the device in one transfer; a thread finds its input by a binary search over the
 * starts.
 * sort, argsort and topk: Note [CUDA sort] in sort_plan.h.
 *
 * Note [CUDA masked_fill and take]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * masked_fill (Scalar, or a 0-dim Tensor value, in place or not) and where run their CPU
 * kernels (index.c, ternary.c): their checks, dtypes, output and TensorIterator over (out,
 * self, mask) or (out, condition, self, other); the iterator's geometry (coalesced dims, byte
 * strides, broadcasting) goes to one select kernel, a thread per element, which moves the
 * bytes of the operand its condition picks: the CPU's bits in every dtype.  The comparisons
 * and logical ops (eq, ne, lt, le, gt, ge, logical_and/or/xor; compare.c) take the same
 * kernel with a predicate, computed on the promoted operands as int64 or double (exact for
 * every dtype, so the CPU loops' results).  masked_fill's
 * value and any operand broadcast from a CPU scalar (a 0-dim CPU tensor or a Python number,
 * which the iterator leaves in host memory) travel by value in the kernel's arguments.  A
 * value tensor on the device is read back first (a synchronisation, as PyTorch's .item()).  take
 * is index.c's too: one thread per index element walks index and the flattened self by
 * their strides (any layout) and moves one element; a bad index goes through the status
 * word above and raises the CPU loop's IndexError for the first one (the output is then
 * discarded).  shape.c's movers take the same road: flip, roll, rot90 and repeat hand over
 * their offset tables (Note [Gather by offset tables] in shape.c; built on the host, copied
 * to the device in one transfer) and a thread per output element adds its dims' offsets and
 * moves one element; tril and triu zero, a thread per element of their (possibly strided,
 * in-place) output, the elements the triangle drops.  Bytes moved or zeroed: the CPU's
 * bits. */
#ifndef PTL_CUDA_INDEX_PLAN_H
#define PTL_CUDA_INDEX_PLAN_H

#include "../aten/native/device_index.h"
#include "reduce_plan.h"

/* off[0], off[1], off[2]: the element offsets of index, self (its dim coordinate left out)
 * and other at index coordinate j (row-major).  fiber: j numbers the coordinates with
 * dim's left out (dim's coordinate 0). */
PTL_HD static inline void
ptl_idx_offsets(const PtlDeviceScatterArgs *a, int64_t j, int fiber, int64_t *off)
{
    off[0] = off[1] = off[2] = 0;
    for (int d = a->ndim - 1; d >= 0; d--) {
        if (fiber && d == a->dim) {
            continue;
        }
        const int64_t c = j % a->sizes[d];
        j /= a->sizes[d];
        off[0] += c * a->ist[d];
        off[1] += d == a->dim ? 0 : c * a->sst[d];
        off[2] += c * a->ost[d];
    }
}

/* Records bad index element j: the status word keeps numel - j at its largest. */
PTL_HD static inline void
ptl_idx_flag(const PtlDeviceScatterArgs *a, int64_t j, int64_t *status)
{
    ptl_cuda_flag_first(status, a->numel, j);
}

PTL_HD static inline int64_t
ptl_idx_load(const PtlDeviceScatterArgs *a, int64_t ioff)
{
    return a->index_is64 ? ((const int64_t *)a->index)[ioff]
                         : (int64_t)((const int32_t *)a->index)[ioff];
}

/* one element of itemsize bytes from s to d, as one load and one store */
PTL_HD static inline void
ptl_idx_move(char *d, const char *s, int64_t itemsize)
{
    switch (itemsize) {
    case 1: *d = *s; break;
    case 2: *(int16_t *)d = *(const int16_t *)s; break;
    case 4: *(int32_t *)d = *(const int32_t *)s; break;
    default: *(int64_t *)d = *(const int64_t *)s; break;
    }
}

/* gather's output element j */
PTL_HD static inline void
ptl_gather_at(const PtlDeviceScatterArgs *a, int64_t j, int64_t *status)
{
    int64_t off[3];
    ptl_idx_offsets(a, j, 0, off);
    const int64_t v = ptl_idx_load(a, off[0]), isz = a->itemsize;
    if ((uint64_t)v >= (uint64_t)a->self_size) {
        ptl_idx_flag(a, j, status);
        return;
    }
    ptl_idx_move(a->other + off[2] * isz, a->self + (off[1] + v * a->sst[a->dim]) * isz, isz);
}

/* *d = *d (reduce) alpha *s in dtype dt: in double for floats and int64 for integers,
 * rounded once to dt (index_impl.h's combine, the CPU kernel's) */
PTL_HD static inline void
ptl_idx_combine(char *d, const char *s, int dt, int reduce, double alpha)
{
    if (dt == PTL_DTYPE_FLOAT32 || dt == PTL_DTYPE_FLOAT64 || dt == PTL_DTYPE_FLOAT16 ||
        dt == PTL_DTYPE_BFLOAT16) {
        const double x = ptl_load_double(d, (PtlDtype)dt);
        const double y = ptl_load_double(s, (PtlDtype)dt) * alpha;
        double z = x + y;
        if (reduce == PTL_DEVICE_IDX_PROD) {
            z = x * y;
        }
        else if (reduce == PTL_DEVICE_IDX_AMAX || reduce == PTL_DEVICE_IDX_AMIN) {
            z = x != x || (reduce == PTL_DEVICE_IDX_AMAX ? x > y : x < y) ? x : y;
        }
        ptl_red_store_d(d, dt, z);
        return;
    }
    const int64_t x = ptl_load_int(d, (PtlDtype)dt);
    const int64_t y = ptl_load_int(s, (PtlDtype)dt) * (int64_t)alpha;
    int64_t z = (int64_t)((uint64_t)x + (uint64_t)y);
    if (reduce == PTL_DEVICE_IDX_PROD) {
        z = (int64_t)((uint64_t)x * (uint64_t)y);
    }
    else if (reduce == PTL_DEVICE_IDX_AMAX || reduce == PTL_DEVICE_IDX_AMIN) {
        z = (reduce == PTL_DEVICE_IDX_AMAX ? x > y : x < y) ? x : y;
    }
    ptl_red_store_i(d, dt, z);
}

/* the mean of self's element at offset o from its sum and its count c (values received;
 * self's own value counts too with include_self): floor division for integers */
PTL_HD static inline void
ptl_idx_mean(const PtlDeviceScatterArgs *a, int64_t o, int64_t c)
{
    char *d = a->self + o * a->itemsize;
    const int dt = a->dtype;
    c += a->include_self ? 1 : 0;
    if (dt == PTL_DTYPE_FLOAT32 || dt == PTL_DTYPE_FLOAT64 || dt == PTL_DTYPE_FLOAT16 ||
        dt == PTL_DTYPE_BFLOAT16) {
        ptl_red_store_d(d, dt, ptl_load_double(d, (PtlDtype)dt) / (double)c);
        return;
    }
    const int64_t x = ptl_load_int(d, (PtlDtype)dt), q = x / c;
    ptl_red_store_i(d, dt, (x % c != 0 && x < 0) ? q - 1 : q);
}

/* The scatter's thread for fiber f and self's rows [v0, v1) along dim (Note [CUDA index and
 * sort kernels]): the fiber's values in order; count (NULL unless mean or !include_self) is
 * offset like self. */
PTL_HD static inline void
ptl_scatter_fiber(const PtlDeviceScatterArgs *a, int64_t f, int64_t v0, int64_t v1,
                  int64_t *count, int64_t *status)
{
    const int64_t L = a->sizes[a->dim], isz = a->itemsize, step = a->sst[a->dim];
    int64_t off[3], inner = 1;
    for (int d = a->dim + 1; d < a->ndim; d++) {
        inner *= a->sizes[d];
    }
    ptl_idx_offsets(a, f, 1, off);
    for (int64_t k = 0; k < L; k++) {
        const int64_t v = ptl_idx_load(a, off[0] + k * a->ist[a->dim]);
        if ((uint64_t)v >= (uint64_t)a->self_size) {
            ptl_idx_flag(a, f / inner * L * inner + k * inner + f % inner, status);
            continue;
        }
        if (v < v0 || v >= v1) {
            continue;
        }
        const int64_t o = off[1] + v * step;
        const char *s = a->other != 0 ? a->other + (off[2] + k * a->ost[a->dim]) * isz
                                      : (const char *)&a->value;
        if (a->reduce == PTL_DEVICE_IDX_NONE ||
            (count != 0 && !a->include_self && count[o] == 0)) {
            ptl_idx_move(a->self + o * isz, s, isz);
        }
        else {
            ptl_idx_combine(a->self + o * isz, s, a->dtype, a->reduce, 1.0);
        }
        if (count != 0) {
            count[o]++;
        }
    }
    for (int64_t v = v0; a->reduce == PTL_DEVICE_IDX_MEAN && v < v1; v++) {
        const int64_t o = off[1] + v * step;
        if (count[o] > 0) {
            ptl_idx_mean(a, o, count[o]);
        }
    }
}

/* ---- advanced indexing: index.c's offset tables (Note [Advanced indexing]) ---- */

/* gather's output element q = (i bnumel + b) nafter + j */
PTL_HD static inline void
ptl_adv_gather_at(const PtlDeviceAdvIndexArgs *a, int64_t q)
{
    const int64_t j = q % a->nafter, b = q / a->nafter % a->bnumel;
    const int64_t i = q / a->nafter / a->bnumel, isz = a->itemsize;
    ptl_idx_move(a->other + q * isz,
                 a->self + (a->off_before[i] + a->off[b] + a->off_after[j]) * isz, isz);
}

/* The scatter's thread for (i, j) and group g: the walk's b = perm[k] for k in [group[g],
 * group[g + 1]), which all have one offset, in ascending b (the CPU kernel's order). */
PTL_HD static inline void
ptl_adv_scatter_group(const PtlDeviceAdvIndexArgs *a, const int64_t *perm, const int64_t *group,
                      int64_t g, int64_t i, int64_t j)
{
    const int64_t isz = a->itemsize;
    for (int64_t k = group[g]; k < group[g + 1]; k++) {
        const int64_t b = perm[k];
        char *d = a->self + (a->off_before[i] + a->off[b] + a->off_after[j]) * isz;
        const char *v = (const char *)&a->value;
        if (a->other != 0) {
            int64_t q = (i * a->bnumel + b) * a->nafter + j, o = 0;
            for (int dd = a->out_dim - 1; dd >= 0; dd--) {
                o += q % a->out_sizes[dd] * a->vst[dd];
                q /= a->out_sizes[dd];
            }
            v = a->other + o * isz;
        }
        if (a->reduce == PTL_DEVICE_IDX_NONE) {
            ptl_idx_move(d, v, isz);
        }
        else {
            ptl_idx_combine(d, v, a->dtype, a->reduce, a->alpha);
        }
    }
}

/* ---- cat ---- */

/* output element q: from the input whose rows along dim hold q's (the last with start at
 * most q's index along dim: a binary search of the table) */
PTL_HD static inline void
ptl_cat_at(const PtlDeviceCatArgs *a, int64_t q)
{
    int64_t c[PTL_MAX_DIMS], r = q, lo = 0, hi = a->ninputs - 1, off = 0;
    for (int d = a->ndim - 1; d >= 0; d--) {
        c[d] = r % a->sizes[d];
        r /= a->sizes[d];
    }
    while (lo < hi) {
        const int64_t mid = (lo + hi + 1) / 2;
        if (a->inputs[mid].start <= c[a->dim]) {
            lo = mid;
        }
        else {
            hi = mid - 1;
        }
    }
    const PtlDeviceCatInput *in = &a->inputs[lo];
    c[a->dim] -= in->start;
    for (int d = 0; d < a->ndim; d++) {
        off += c[d] * in->strides[d];
    }
    ptl_idx_move(a->out + q * a->itemsize, in->data + off * a->itemsize, a->itemsize);
}

/* ---- masked_fill and take (Note [CUDA masked_fill and take]) ---- */

/* select operand t's element at the offsets off (out's first), or its value */
PTL_HD static inline const char *
ptl_select_operand(const PtlDeviceSelectArgs *a, int t, const int64_t *off)
{
    return a->data[t] != NULL ? a->data[t] + off[t + 1] : (const char *)&a->value[t];
}

/* a op b in the operands' dtype dt (kind SEL_EQ to SEL_XOR): integers and bool as int64, floats as
 * double (exact for every float dtype, so the float compare's result) */
PTL_HD static inline uint8_t
ptl_predicate(int kind, int dt, const char *x, const char *y)
{
    const int fp = dt == PTL_DTYPE_FLOAT16 || dt == PTL_DTYPE_BFLOAT16 ||
                   dt == PTL_DTYPE_FLOAT32 || dt == PTL_DTYPE_FLOAT64;
    const int64_t ia = fp ? 0 : ptl_load_int(x, (PtlDtype)dt);
    const int64_t ib = fp ? 0 : ptl_load_int(y, (PtlDtype)dt);
    const double a = fp ? ptl_load_double(x, (PtlDtype)dt) : 0;
    const double b = fp ? ptl_load_double(y, (PtlDtype)dt) : 0;
    switch (kind) {
    case PTL_DEVICE_SEL_EQ: return fp ? a == b : ia == ib;
    case PTL_DEVICE_SEL_NE: return fp ? a != b : ia != ib;
    case PTL_DEVICE_SEL_LT: return fp ? a < b : ia < ib;
    case PTL_DEVICE_SEL_LE: return fp ? a <= b : ia <= ib;
    case PTL_DEVICE_SEL_GT: return fp ? a > b : ia > ib;
    case PTL_DEVICE_SEL_GE: return fp ? a >= b : ia >= ib;
    case PTL_DEVICE_SEL_AND: return fp ? a != 0 && b != 0 : ia != 0 && ib != 0;
    case PTL_DEVICE_SEL_OR: return fp ? a != 0 || b != 0 : ia != 0 || ib != 0;
    default: return fp ? (a != 0) != (b != 0) : (ia != 0) != (ib != 0);
    }
}

/* where's, masked_fill's or a comparison's element j (row-major over the iterator's dims,
 * dim 0 innermost) */
PTL_HD static inline void
ptl_select_at(const PtlDeviceSelectArgs *a, int64_t j)
{
    int64_t off[4] = {0, 0, 0, 0};
    if (a->ndim == 1) {   /* one coalesced dim (contiguous operands): no 64-bit division */
        for (int t = 0; t < 4; t++) {
            off[t] = j * a->strides[t][0];
        }
    }
    for (int d = 0; a->ndim > 1 && d < a->ndim; d++) {
        const int64_t c = j % a->sizes[d];
        j /= a->sizes[d];
        for (int t = 0; t < 4; t++) {
            off[t] += c * a->strides[t][d];
        }
    }
    if (a->kind != PTL_DEVICE_SEL_WHERE) {
        *(uint8_t *)(a->out + off[0]) = ptl_predicate(a->kind, a->dtype,
                                                      ptl_select_operand(a, 0, off),
                                                      ptl_select_operand(a, 1, off));
        return;
    }
    const int cond = *ptl_select_operand(a, 0, off) != 0;
    ptl_idx_move(a->out + off[0], ptl_select_operand(a, cond ? 1 : 2, off), a->itemsize);
}

/* the element offset of row-major position j in a tensor of ndim sizes and strides */
PTL_HD static inline int64_t
ptl_idx_walk(int ndim, const int64_t *sizes, const int64_t *st, int64_t j)
{
    int64_t off = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        off += j % sizes[d] * st[d];
        j /= sizes[d];
    }
    return off;
}

/* take's index element j: its value */
PTL_HD static inline int64_t
ptl_take_index(const PtlDeviceTakeArgs *a, int64_t j)
{
    return a->index[ptl_idx_walk(a->idim, a->isizes, a->ist, j)];
}

/* take's output element j; a bad index is flagged */
PTL_HD static inline void
ptl_take_at(const PtlDeviceTakeArgs *a, int64_t j, int64_t *status)
{
    int64_t v = ptl_take_index(a, j);
    if (v < -a->snumel || v >= a->snumel) {
        ptl_cuda_flag_first(status, a->inumel, j);
        return;
    }
    v += v < 0 ? a->snumel : 0;
    ptl_idx_move(a->out + j * a->itemsize,
                 a->self + ptl_idx_walk(a->sdim, a->ssizes, a->sst, v) * a->itemsize,
                 a->itemsize);
}

/* ---- shape.c's data movers (Note [CUDA masked_fill and take]; the GATHER table is on the
 * device) ---- */

/* output element j (row-major over sizes): its gather, or its triangle's zero */
PTL_HD static inline void
ptl_shape_at(const PtlDeviceShapeArgs *a, int64_t j)
{
    int64_t off = 0, r = j, row = 0, col = 0;
    for (int d = a->ndim - 1; d >= 0; d--) {
        const int64_t i = r % a->sizes[d];
        r /= a->sizes[d];
        if (a->kind == PTL_DEVICE_SHAPE_GATHER) {
            off += a->tab[a->start[d] + i];
            continue;
        }
        off += i * a->strides[d];
        row = d == a->ndim - 2 ? i : row;
        col = d == a->ndim - 1 ? i : col;
    }
    if (a->kind == PTL_DEVICE_SHAPE_GATHER) {
        ptl_idx_move(a->out + j * a->itemsize, a->src + off, a->itemsize);
        return;
    }
    if (a->lower ? col - row > a->diagonal : col - row < a->diagonal) {
        for (int64_t b = 0; b < a->itemsize; b++) {
            a->out[off + b] = 0;
        }
    }
}

#endif
