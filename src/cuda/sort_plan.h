/* sort_plan.h -- the per-element arithmetic of the sort kernels (sort, argsort, topk),
 * compiled by nvcc for the device (sort.cu) and by gcc for the host (sort_plan.c), whose
 * emulation runs exactly these functions in the kernels' order.  Mirrors
 * ATen/native/cuda/Sort.cu and TensorTopK.cu in behaviour, not in method.
 *
 * Note [CUDA sort]
 * ~~~~~~~~~~~~~~~~
 * sort.c's CPU kernel does the checks and allocates the outputs on the CUDA key; its last
 * step hands the lanes to these kernels through device_index.h's hook.  Every lane is
 * sorted by a stable merge sort over 64-bit keys, all lanes at once, one thread per element:
 * - keys: element i of lane l becomes (key, i) at l len + i of a workspace, the key being
 *   sort.c's (Note [Sort keys]) widened to 64 bits for every dtype: floats through double
 *   (exact for float16, bfloat16 and float32, so the order is the CPU's 32-bit keys'), -0.0
 *   as +0.0, every NaN the largest key; integers offset by int64's minimum; descending
 *   inverts the keys, so equal elements keep their input order either way (PyTorch's
 *   stable descending sort).
 * - merge pass w = 1, 2, 4, ... < len: the runs [s, s + w) and [s + w, s + 2w) of each lane
 *   are sorted; element r of the left run goes to s + r + the number of right keys below
 *   its key, element r of the right run to s + r + the number of left keys at or below its
 *   key (two binary searches): ties put the left run first, so the merge is stable and
 *   every element has exactly one destination.  Ping-pong between two buffers;
 *   ceil(log2 len) launches.
 * - emit: output element j < nsel of lane l copies the input element at the sorted index
 *   (its bits: NaN payloads and the sign of zeros kept, as the CPU kernel does) and the
 *   index.
 * The result does not depend on the grid or the thread order (each pass reads one buffer
 * and writes the other, one writer per element), and equals the CPU's radix sort, which is
 * stable over the same order.  topk is the sorted lane's first k (largest: descending),
 * which is the CPU's result too; a selection that does not sort the whole lane (radix
 * select, as PyTorch's TensorTopK.cu) would be the next step for a small k of long lanes.
 * The work is O(n log^2 n) in global memory: simple and exact, not fast; a block-local
 * bitonic or radix pass for short lanes would be the first speed-up. */
#ifndef PTL_CUDA_SORT_PLAN_H
#define PTL_CUDA_SORT_PLAN_H

#include <string.h>

#include "index_plan.h"

/* the ascending sort key of one element (Note [Sort keys] in sort.c, in 64 bits) */
PTL_HD static inline uint64_t
ptl_sort_key(const char *p, int dt)
{
    const uint64_t top = (uint64_t)1 << 63;
    if (dt == PTL_DTYPE_FLOAT32 || dt == PTL_DTYPE_FLOAT64 || dt == PTL_DTYPE_FLOAT16 ||
        dt == PTL_DTYPE_BFLOAT16) {
        double x = ptl_load_double(p, (PtlDtype)dt);
        uint64_t u;
        if (x != x) {
            return ~(uint64_t)0;
        }
        if (x == 0.0) {
            x = 0.0;
        }
        memcpy(&u, &x, sizeof(u));
        return (u & top) ? ~u : (u | top);
    }
    return (uint64_t)ptl_load_int(p, (PtlDtype)dt) ^ top;
}

/* the address of element i of lane l */
PTL_HD static inline const char *
ptl_sort_elem(const PtlDeviceSortArgs *a, int64_t l, int64_t i)
{
    const char *p = a->base + i * a->st;
    for (int d = a->nd - 1; d >= 0; d--) {
        p += l % a->osize[d] * a->ostride[d];
        l /= a->osize[d];
    }
    return p;
}

/* keys pass: element q = l len + i of the lanes into (k[q], ix[q]) */
PTL_HD static inline void
ptl_sort_keys_at(const PtlDeviceSortArgs *a, int64_t q, uint64_t *k, int64_t *ix)
{
    const int64_t i = q % a->len;
    k[q] = ptl_sort_key(ptl_sort_elem(a, q / a->len, i), a->dtype) ^
           (a->descending ? ~(uint64_t)0 : 0);
    ix[q] = i;
}

/* the number of keys of k[lo, hi) (ascending) below key, or at or below it when `upper` */
PTL_HD static inline int64_t
ptl_sort_rank(const uint64_t *k, int64_t lo, int64_t hi, uint64_t key, int upper)
{
    const int64_t first = lo;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (k[mid] < key || (upper && k[mid] == key)) {
            lo = mid + 1;
        }
        else {
            hi = mid;
        }
    }
    return lo - first;
}

/* merge pass of runs of w: element q of (ks, is) to its place in (kd, id) */
PTL_HD static inline void
ptl_sort_merge_at(const PtlDeviceSortArgs *a, int64_t w, int64_t q, const uint64_t *ks,
                  const int64_t *is, uint64_t *kd, int64_t *id)
{
    const int64_t i = q % a->len, base = q - i, s = i / (2 * w) * (2 * w);
    const int64_t mid = s + w < a->len ? s + w : a->len;
    const int64_t end = s + 2 * w < a->len ? s + 2 * w : a->len;
    int64_t dst;
    if (i < mid) {
        dst = i + ptl_sort_rank(ks + base, mid, end, ks[q], 0);
    }
    else {
        dst = i - w + ptl_sort_rank(ks + base, s, mid, ks[q], 1);
    }
    kd[base + dst] = ks[q];
    id[base + dst] = is[q];
}

/* emit: output element q (row-major over the lanes' first nsel) from the sorted indices */
PTL_HD static inline void
ptl_sort_emit_at(const PtlDeviceSortArgs *a, int64_t q, const int64_t *ix)
{
    const int64_t j = q % a->nsel, l = q / a->nsel;
    const int64_t o = (l / a->inner * a->nsel + j) * a->inner + l % a->inner;
    const int64_t i = ix[l * a->len + j];
    a->idx[o] = i;
    if (a->vals != 0) {
        ptl_idx_move(a->vals + o * a->itemsize, ptl_sort_elem(a, l, i), a->itemsize);
    }
}

#endif
