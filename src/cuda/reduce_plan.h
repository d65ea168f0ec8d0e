/* reduce_plan.h -- the per-element and per-thread arithmetic of the reduction and softmax
 * kernels, compiled twice: by nvcc for the device (reduce.cu) and by gcc for the host
 * (reduce_plan.c), whose emulation of the kernels runs exactly these functions in the
 * kernels' order.  Mirrors ATen/native/cuda/Reduce.cuh (ReduceConfig, the block-per-output
 * and thread-per-output layouts, the global split with a second pass) and
 * ATen/native/cuda/SoftMax.cu.
 *
 * Note [CUDA reduction plan]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * reduce.c's plan (kept dims in output order, reduced dims outermost first and merged)
 * arrives as a PtlDeviceReduceArgs; ptl_cuda_reduce merges the kept dims whose strides line
 * up and ptl_cuda_reduce_plan (reduce_plan.c) picks:
 *  - the layout: one block per output (its threads take the reduced elements t, t + block,
 *    ..., then combine through warp shuffles and shared memory) when the reduced elements
 *    are the closer ones in memory (the innermost reduced stride is below the innermost
 *    kept one) and there are at least a warp of them, or when there are fewer outputs than
 *    a warp; otherwise one thread per output (neighbouring threads read neighbouring
 *    outputs: coalesced), which loops over its reduced elements alone;
 *  - a split: when the layout's blocks are fewer than target_blocks and the reduction is at
 *    least two min_chunk long, blocks (x, y) reduce chunk y of their outputs into a
 *    workspace of accumulators and a second pass combines each output's chunks in order.
 *    No float atomics: the result is the same run after run.
 * The block's combination is a fixed tree: in each warp, for offset 16, 8, 4, 2, 1, lane i
 * combines lane i + offset's value into its own (i + offset < 32; shfl_down); lane 0 of
 * warp w stores smem[w]; warp 0 loads smem[lane] (identity past the last warp) and runs the
 * same tree.  The host emulation runs that tree in that order.  Every accumulator is a
 * PtlRedAcc: double state for floating inputs, exact int64 state for integer ones, as in
 * reduce.c; argmax's combination picks the larger value, NaN first, then the smaller index,
 * so that it does not depend on the tree's order.  logsumexp's state is (max m, sum of
 * exp(x - m)), rescaled when a larger max arrives; NaN and +inf win as in reduce.c.
 *
 * Note [CUDA scans]
 * ~~~~~~~~~~~~~~~~~
 * cumsum and cumprod run scan.c's CPU kernel on the CUDA key (its dtype rules and output);
 * its last step hands the lines to one kernel, a thread per line walking it in order with
 * scan.c's accumulator (double for float dtypes, rounded at each store; wrapping uint64
 * for integers): the CPU's bits, deterministic.  Neighbouring threads take neighbouring
 * lines, which are neighbouring columns (coalesced) when the scanned dim is not the
 * innermost; a scan along the innermost dim reads a row per thread, and a single long line
 * is one thread: a block-wide scan (decoupled look-back, as CUB's) is the next step there,
 * at the price of the CPU's order.  sort.c's cummax, cummin (values and indices) and
 * logcumsumexp take the same kernel (the line's kind: device_reduce.h's PTL_DEVICE_SCAN_*),
 * each line walked with its CPU kernel's rule: the CPU's bits for cummax and cummin, and for
 * logcumsumexp the device's exp and log1p (the last bits of float64 may differ). */
#ifndef PTL_CUDA_REDUCE_PLAN_H
#define PTL_CUDA_REDUCE_PLAN_H

#include <math.h>
#include <stdint.h>

#include "../c10/dtype.h"
#include "../c10/macros.h"
#include "cuda_api.h"

#define PTL_CUDA_WARP 32

/* One output's running state (reduce.c's Acc): a, b the float state (sum, max, mean and M2,
 * the value of argmax), i the integer state, n var's count, idx argmax's index (-1: none). */
typedef struct PtlRedAcc {
    double a, b;
    int64_t i, n, idx;
} PtlRedAcc;

/* *w = max(*w, v), for v >= 0: one integer atomic on the device (any order of the threads
 * gives the same result), a plain update in the host's emulation */
PTL_HD static inline void
ptl_cuda_atomic_max(int64_t *w, int64_t v)
{
#ifdef __CUDA_ARCH__
    atomicMax((unsigned long long *)w, (unsigned long long)v);
#else
    if (*w < v) {
        *w = v;
    }
#endif
}

/* Records element j of n as bad in a zeroed status word, which keeps n - j at its largest:
 * the smallest bad j, whatever the threads' order (0: none). */
PTL_HD static inline void
ptl_cuda_flag_first(int64_t *status, int64_t n, int64_t j)
{
    ptl_cuda_atomic_max(status, n - j);
}

PTL_HD static inline int64_t
ptl_red_itemsize(int dt)
{
    switch (dt) {
    case PTL_DTYPE_BOOL: case PTL_DTYPE_UINT8: case PTL_DTYPE_INT8: return 1;
    case PTL_DTYPE_INT16: case PTL_DTYPE_FLOAT16: case PTL_DTYPE_BFLOAT16: return 2;
    case PTL_DTYPE_INT32: case PTL_DTYPE_FLOAT32: return 4;
    default: return 8;
    }
}

/* a float result into a float dtype (float16, bfloat16 through float, as the CPU copy) */
PTL_HD static inline void
ptl_red_store_d(char *p, int dt, double v)
{
    switch (dt) {
    case PTL_DTYPE_FLOAT16: *(ptl_half *)p = ptl_f_to_half((float)v); break;
    case PTL_DTYPE_BFLOAT16: *(ptl_bf16 *)p = ptl_f_to_bf16((float)v); break;
    case PTL_DTYPE_FLOAT32: *(float *)p = (float)v; break;
    default: *(double *)p = v; break;
    }
}

/* an integer result (an integer reduction's value, an index) into an integer dtype */
PTL_HD static inline void
ptl_red_store_i(char *p, int dt, int64_t v)
{
    switch (dt) {
    case PTL_DTYPE_BOOL: *(uint8_t *)p = v != 0; break;
    case PTL_DTYPE_UINT8: *(uint8_t *)p = (uint8_t)v; break;
    case PTL_DTYPE_INT8: *(int8_t *)p = (int8_t)v; break;
    case PTL_DTYPE_INT16: *(int16_t *)p = (int16_t)v; break;
    case PTL_DTYPE_INT32: *(int32_t *)p = (int32_t)v; break;
    default: *(int64_t *)p = v; break;
    }
}

/* NaN-propagating max / min (reduce.c's max_nan, min_nan) */
PTL_HD static inline double
ptl_red_max_nan(double a, double x)
{
    return (x > a || isnan(x)) && !isnan(a) ? x : a;
}

PTL_HD static inline double
ptl_red_min_nan(double a, double x)
{
    return (x < a || isnan(x)) && !isnan(a) ? x : a;
}

PTL_HD static inline PtlRedAcc
ptl_red_init(int kind, double p)
{
    PtlRedAcc acc = {0, 0, 0, 0, -1};
    switch (kind) {
    case PTL_DEVICE_RED_PROD: acc.a = 1; acc.i = 1; break;
    case PTL_DEVICE_RED_MAX: acc.a = -INFINITY; acc.i = INT64_MIN; break;
    case PTL_DEVICE_RED_MIN: acc.a = INFINITY; acc.i = INT64_MAX; break;
    case PTL_DEVICE_RED_NORM: acc.a = p == -INFINITY ? INFINITY : 0; break;
    case PTL_DEVICE_RED_LSE: acc.a = -INFINITY; break;
    case PTL_DEVICE_RED_ALL: acc.i = 1; break;
    default: break;
    }
    return acc;
}

/* 1 when argmax's (argmin's) candidate b wins over a: the larger (smaller) value, NaN over
 * every number, the smaller index between equals -- an order-free choice. */
PTL_HD static inline int
ptl_red_arg_beats(int kind, int use_int, const PtlRedAcc *b, const PtlRedAcc *a)
{
    const int is_max = kind == PTL_DEVICE_RED_ARGMAX;
    if (use_int) {
        if (b->i != a->i) {
            return is_max ? b->i > a->i : b->i < a->i;
        }
        return b->idx < a->idx;
    }
    const int bn = isnan(b->a), an = isnan(a->a);
    if (bn || an) {
        return bn && (!an || b->idx < a->idx);
    }
    if (b->a != a->a) {
        return is_max ? b->a > a->a : b->a < a->a;
    }
    return b->idx < a->idx;
}

/* logsumexp's acc := acc combined with b, each a max a and the sum b of exp(x - a) over its
 * elements (reduce.c's lse_combine): NaN wins over everything, +inf over every number, and
 * (-inf, 0) is the empty state. */
PTL_HD static inline void
ptl_red_lse_combine(PtlRedAcc *acc, const PtlRedAcc *b)
{
    if (isnan(acc->a) || (b->a == -INFINITY && b->b == 0)) {
        return;
    }
    if (isnan(b->a) || (b->a == INFINITY && acc->a != INFINITY)) {
        acc->a = b->a;
        acc->b = 1;
        return;
    }
    if (acc->a == INFINITY) {
        return;
    }
    if (b->a > acc->a) {
        acc->b = acc->b * exp(acc->a - b->a) + b->b;
        acc->a = b->a;
    }
    else {
        acc->b += b->b * exp(b->a - acc->a);
    }
}

/* acc := acc combined with b */
PTL_HD static inline void
ptl_red_combine(int kind, int use_int, double p, PtlRedAcc *acc, const PtlRedAcc *b)
{
    double total, delta;
    switch (kind) {
    case PTL_DEVICE_RED_SUM:
    case PTL_DEVICE_RED_NANSUM:
    case PTL_DEVICE_RED_MEAN:
        acc->a += b->a;
        acc->i = (int64_t)((uint64_t)acc->i + (uint64_t)b->i);
        break;
    case PTL_DEVICE_RED_PROD:
        acc->a *= b->a;
        acc->i = (int64_t)((uint64_t)acc->i * (uint64_t)b->i);
        break;
    case PTL_DEVICE_RED_MAX:
        acc->a = ptl_red_max_nan(acc->a, b->a);
        acc->i = b->i > acc->i ? b->i : acc->i;
        break;
    case PTL_DEVICE_RED_MIN:
        acc->a = ptl_red_min_nan(acc->a, b->a);
        acc->i = b->i < acc->i ? b->i : acc->i;
        break;
    case PTL_DEVICE_RED_ARGMAX:
    case PTL_DEVICE_RED_ARGMIN:
        if (b->idx >= 0 && (acc->idx < 0 || ptl_red_arg_beats(kind, use_int, b, acc))) {
            *acc = *b;
        }
        break;
    case PTL_DEVICE_RED_VAR:   /* Chan et al.'s pairwise update of (n, mean, M2) */
        if (b->n == 0) {
            break;
        }
        if (acc->n == 0) {
            *acc = *b;
            break;
        }
        total = (double)(acc->n + b->n);
        delta = b->a - acc->a;
        acc->a += delta * (double)b->n / total;
        acc->b += b->b + delta * delta * (double)acc->n * (double)b->n / total;
        acc->n += b->n;
        break;
    case PTL_DEVICE_RED_LSE: ptl_red_lse_combine(acc, b); break;
    case PTL_DEVICE_RED_ALL: acc->i &= b->i; break;
    case PTL_DEVICE_RED_ANY: acc->i |= b->i; break;
    case PTL_DEVICE_RED_COUNT_NONZERO: acc->i += b->i; break;
    default:   /* norm */
        acc->a = p == INFINITY    ? ptl_red_max_nan(acc->a, b->a)
                 : p == -INFINITY ? ptl_red_min_nan(acc->a, b->a)
                                  : acc->a + b->a;
        break;
    }
}

/* The accumulator of the one element at x, reduced index r. */
PTL_HD static inline PtlRedAcc
ptl_red_single(int kind, int use_int, double p, const char *x, int dt, int64_t r)
{
    PtlRedAcc acc = ptl_red_init(kind, p);
    acc.idx = r;
    if (kind >= PTL_DEVICE_RED_ALL) {   /* the truth of the element: NaN is true */
        acc.i = use_int ? ptl_load_int(x, (PtlDtype)dt) != 0
                        : ptl_load_double(x, (PtlDtype)dt) != 0;
        return acc;
    }
    if (use_int) {
        acc.i = ptl_load_int(x, (PtlDtype)dt);
        return acc;
    }
    double v = ptl_load_double(x, (PtlDtype)dt), m = fabs(v);
    switch (kind) {
    case PTL_DEVICE_RED_NANSUM: acc.a = isnan(v) ? 0 : v; break;
    case PTL_DEVICE_RED_VAR: acc.a = v; acc.n = 1; break;
    case PTL_DEVICE_RED_LSE: acc.a = v; acc.b = v == -INFINITY ? 0 : 1; break;
    case PTL_DEVICE_RED_NORM:
        acc.a = p == 2 ? m * m : p == 1 || isinf(p) ? m : p == 0 ? (double)(m != 0) : pow(m, p);
        break;
    default: acc.a = v; break;
    }
    return acc;
}

/* Input byte offset of output o's first reduced element (kept dims, row-major). */
PTL_HD static inline int64_t
ptl_red_kept_offset(const PtlDeviceReduceArgs *a, int64_t o)
{
    int64_t off = 0;
    for (int d = a->nk - 1; d >= 0; d--) {
        off += (o % a->ksize[d]) * a->kstride[d];
        o /= a->ksize[d];
    }
    return off;
}

/* Byte offset of reduced element r from its output's first (reduced dims, row-major); one
 * run (the common case) needs no 64-bit division. */
PTL_HD static inline int64_t
ptl_red_reduced_offset(const PtlDeviceReduceArgs *a, int64_t r)
{
    if (a->nr == 1) {
        return r * a->rstride[0];
    }
    int64_t off = 0;
    for (int d = a->nr - 1; d >= 0; d--) {
        off += (r % a->rsize[d]) * a->rstride[d];
        r /= a->rsize[d];
    }
    return off;
}

/* One thread's accumulator of output o: reduced elements r0 + t, r0 + t + step, ... < r1. */
PTL_HD static inline PtlRedAcc
ptl_red_thread_acc(int kind, const PtlDeviceReduceArgs *a, int64_t o, int64_t r0, int64_t r1,
                   int64_t t, int64_t step)
{
    const char *base = a->in + ptl_red_kept_offset(a, o);
    PtlRedAcc acc = ptl_red_init(kind, a->p);
    for (int64_t r = r0 + t; r < r1; r += step) {
        PtlRedAcc x = ptl_red_single(kind, a->use_int, a->p,
                                     base + ptl_red_reduced_offset(a, r), a->dtype, r);
        ptl_red_combine(kind, a->use_int, a->p, &acc, &x);
    }
    return acc;
}

/* Split y's reduced range [r0, r1). */
PTL_HD static inline void
ptl_red_split_range(const PtlCudaReducePlan *plan, int64_t R, int64_t y, int64_t *r0,
                    int64_t *r1)
{
    *r0 = y * plan->chunk;
    *r1 = *r0 + plan->chunk < R ? *r0 + plan->chunk : R;
}

/* Writes output o from its accumulator (reduce.c's acc_finish). */
PTL_HD static inline void
ptl_red_finish(int kind, const PtlDeviceReduceArgs *a, const PtlRedAcc *acc, int64_t o)
{
    char *o0 = a->out0 + o * ptl_red_itemsize(a->odt0);
    char *o1 = a->out1 != 0 ? a->out1 + o * ptl_red_itemsize(a->odt1) : 0;
    double v, denom;
    switch (kind) {
    case PTL_DEVICE_RED_MEAN:
        ptl_red_store_d(o0, a->odt0, acc->a / (double)a->R);
        break;
    case PTL_DEVICE_RED_ARGMAX:
    case PTL_DEVICE_RED_ARGMIN:
        if (o1 != 0) {
            if (a->use_int) {
                ptl_red_store_i(o0, a->odt0, acc->i);
            }
            else {
                ptl_red_store_d(o0, a->odt0, acc->a);
            }
            ptl_red_store_i(o1, a->odt1, acc->idx);
        }
        else {
            ptl_red_store_i(o0, a->odt0, acc->idx);
        }
        break;
    case PTL_DEVICE_RED_VAR:
        denom = (double)a->R - a->correction;
        v = acc->b / (denom > 0 ? denom : 0.0);
        ptl_red_store_d(o0, a->odt0, a->take_sqrt ? sqrt(v) : v);
        if (o1 != 0) {
            ptl_red_store_d(o1, a->odt1, acc->n > 0 ? acc->a : NAN);
        }
        break;
    case PTL_DEVICE_RED_NORM:
        v = acc->a;
        if (a->p == 2) {
            v = sqrt(v);
        }
        else if (a->p != 1 && a->p != 0 && !isinf(a->p)) {
            v = pow(v, 1.0 / a->p);
        }
        ptl_red_store_d(o0, a->odt0, v);
        break;
    case PTL_DEVICE_RED_LSE:
        ptl_red_store_d(o0, a->odt0, isfinite(acc->a) ? acc->a + log(acc->b) : acc->a);
        break;
    case PTL_DEVICE_RED_ALL:
    case PTL_DEVICE_RED_ANY:
    case PTL_DEVICE_RED_COUNT_NONZERO:
        ptl_red_store_i(o0, a->odt0, acc->i);
        break;
    default:   /* sum, nansum, prod, max, min */
        if (a->use_int) {
            ptl_red_store_i(o0, a->odt0, acc->i);
        }
        else {
            ptl_red_store_d(o0, a->odt0, acc->a);
        }
        break;
    }
}

/* The second pass of a split reduction: output o's chunks combined in order, then written. */
PTL_HD static inline void
ptl_red_finish_split(int kind, const PtlDeviceReduceArgs *a, const PtlRedAcc *ws,
                     int64_t nsplit, int64_t o)
{
    PtlRedAcc acc = ws[o * nsplit];
    for (int64_t y = 1; y < nsplit; y++) {
        ptl_red_combine(kind, a->use_int, a->p, &acc, &ws[o * nsplit + y]);
    }
    ptl_red_finish(kind, a, &acc, o);
}

/* The block's combination of its threads' accumulators acc[0..block) on the host
 * (reduce.cu's block_reduce, in its order): the total, which thread 0 holds there.  For the
 * emulations (reduce_plan.c, nn_plan.c). */
#ifndef __CUDACC__
PtlRedAcc ptl_cuda_block_tree(int kind, int use_int, double p, PtlRedAcc *acc, int block);
#endif

/* ---- softmax: line l is (outer index l / inner, inner index l % inner); its n elements
 * are k * inner apart.  The forward's shift is the line's max (0 when it is -inf, so that
 * an all -inf line gives NaN as on the CPU), its sum the sum of exp(x - shift); the
 * backward's sum is that of g (log_softmax) or g y (softmax). ---- */

/* byte offset of line l's element k */
PTL_HD static inline int64_t
ptl_softmax_offset(const PtlDeviceSoftmaxArgs *a, int64_t l, int64_t k)
{
    int64_t isz = a->dtype == PTL_DTYPE_FLOAT64 ? 8 : 4;
    return ((l / a->inner) * a->n * a->inner + k * a->inner + l % a->inner) * isz;
}

/* line l's element k of the tensor at base (the input, y or the output) */
PTL_HD static inline double
ptl_softmax_load(const PtlDeviceSoftmaxArgs *a, const char *base, int64_t l, int64_t k)
{
    return ptl_load_double(base + ptl_softmax_offset(a, l, k), (PtlDtype)a->dtype);
}

/* x - shift in the tensor's dtype (the CPU kernel rounds it to float for float32) */
PTL_HD static inline double
ptl_softmax_shifted(const PtlDeviceSoftmaxArgs *a, double x, double shift)
{
    double d = x - shift;
    return a->dtype == PTL_DTYPE_FLOAT64 ? d : (double)(float)d;
}

/* One thread's max of line l's elements t, t + step, ... (forward only). */
PTL_HD static inline PtlRedAcc
ptl_softmax_thread_max(const PtlDeviceSoftmaxArgs *a, int64_t l, int64_t t, int64_t step)
{
    PtlRedAcc acc = ptl_red_init(PTL_DEVICE_RED_MAX, 0);
    for (int64_t k = t; k < a->n; k += step) {
        double x = ptl_softmax_load(a, a->in, l, k);
        acc.a = ptl_red_max_nan(acc.a, x);
    }
    return acc;
}

PTL_HD static inline double
ptl_softmax_shift(double max)
{
    return max == -INFINITY ? 0 : max;
}

/* One thread's part of line l's sum (forward: given the shift; backward: shift unused). */
PTL_HD static inline PtlRedAcc
ptl_softmax_thread_sum(const PtlDeviceSoftmaxArgs *a, int64_t l, double shift, int64_t t,
                       int64_t step)
{
    PtlRedAcc acc = ptl_red_init(PTL_DEVICE_RED_SUM, 0);
    for (int64_t k = t; k < a->n; k += step) {
        double x = ptl_softmax_load(a, a->in, l, k);
        if (a->y == 0) {
            acc.a += exp(ptl_softmax_shifted(a, x, shift));
        }
        else {
            acc.a += a->log ? x : x * ptl_softmax_load(a, a->y, l, k);
        }
    }
    return acc;
}

/* Writes line l's elements t, t + step, ... from the line's shift and sum. */
PTL_HD static inline void
ptl_softmax_write(const PtlDeviceSoftmaxArgs *a, int64_t l, double shift, double sum, int64_t t,
                  int64_t step)
{
    const double scale = a->log ? log(sum) : 1.0 / sum;
    for (int64_t k = t; k < a->n; k += step) {
        double x = ptl_softmax_load(a, a->in, l, k), v;
        if (a->y == 0) {
            double d = ptl_softmax_shifted(a, x, shift);
            v = a->log ? d - scale : exp(d) * scale;
        }
        else {
            double y = ptl_softmax_load(a, a->y, l, k);
            v = a->log ? x - exp(y) * sum : y * (x - sum);
        }
        ptl_red_store_d(a->out + ptl_softmax_offset(a, l, k), a->dtype, v);
    }
}

/* cummax / cummin along a line (sort.c's cum_extreme): the running extremum's bits and
 * index; a later element that is not beyond it (!(v < best) for max), and from the first
 * NaN on only a later NaN, take over.  Floats compare in double (exact for every float
 * dtype), integers in int64. */
PTL_HD static inline void
ptl_scan_extreme(const PtlDeviceScanArgs *a, int64_t so, int64_t ss, int64_t oo, int64_t os)
{
    const int is_max = a->kind == PTL_DEVICE_SCAN_MAX;
    const char *best = a->src + so * a->itemsize;
    int64_t bi = 0;
    for (int64_t k = 0; k < a->len; k++) {
        const char *x = a->src + (so + k * ss) * a->itemsize;
        char *y = a->out + (oo + k * os) * a->itemsize;
        int take;
        if (a->use_int) {
            const int64_t v = ptl_load_int(x, (PtlDtype)a->dtype);
            const int64_t b = ptl_load_int(best, (PtlDtype)a->dtype);
            take = is_max ? !(v < b) : !(v > b);
        }
        else {
            const double v = ptl_load_double(x, (PtlDtype)a->dtype);
            const double b = ptl_load_double(best, (PtlDtype)a->dtype);
            take = b != b ? v != v : (is_max ? !(v < b) : !(v > b));
        }
        if (take) {
            best = x;
            bi = k;
        }
        for (int64_t c = 0; c < a->itemsize; c++) {
            y[c] = best[c];
        }
        a->idx[oo + k * os] = bi;
    }
}

/* logcumsumexp along a line (sort.c's log_cum_sum_exp): r = log(exp(r) + exp(x)) as
 * max + log1p(exp(min - max)), in double, rounded to dtype at each store */
PTL_HD static inline void
ptl_scan_logsumexp(const PtlDeviceScanArgs *a, int64_t so, int64_t ss, int64_t oo, int64_t os)
{
    double r = -INFINITY;
    for (int64_t k = 0; k < a->len; k++) {
        const double x = ptl_load_double(a->src + (so + k * ss) * a->itemsize,
                                         (PtlDtype)a->dtype);
        const double hi = r > x ? r : x, lo = r > x ? x : r;
        const int hi_inf = hi == INFINITY || hi == -INFINITY;
        const int lo_inf = lo == INFINITY || lo == -INFINITY;
        if (x != x || r != r) {
            r = NAN;
        }
        else if (!hi_inf || hi < 0 || !lo_inf || lo > 0) {
            r = hi_inf ? hi : hi + log1p(exp(lo - hi));
        }
        else {
            r = hi;
        }
        ptl_red_store_d(a->out + (oo + k * os) * a->itemsize, a->dtype, r);
    }
}

/* the scans: line l, one thread (Note [CUDA scans]) */
PTL_HD static inline void
ptl_scan_line(const PtlDeviceScanArgs *a, int64_t l)
{
    int64_t so = 0, oo = 0;
    for (int d = a->ndim - 1; d >= 0; d--) {
        if (d != a->dim) {
            so += l % a->sizes[d] * a->sst[d];
            oo += l % a->sizes[d] * a->ost[d];
            l /= a->sizes[d];
        }
    }
    const int64_t ss = a->ndim > 0 ? a->sst[a->dim] : 0, os = a->ndim > 0 ? a->ost[a->dim] : 0;
    const int is_prod = a->kind == PTL_DEVICE_SCAN_PROD;
    if (a->kind == PTL_DEVICE_SCAN_MAX || a->kind == PTL_DEVICE_SCAN_MIN) {
        ptl_scan_extreme(a, so, ss, oo, os);
        return;
    }
    if (a->kind == PTL_DEVICE_SCAN_LOGSUMEXP) {
        ptl_scan_logsumexp(a, so, ss, oo, os);
        return;
    }
    double ad = is_prod ? 1 : 0;
    uint64_t ai = is_prod ? 1 : 0;
    for (int64_t k = 0; k < a->len; k++) {
        const char *x = a->src + (so + k * ss) * a->itemsize;
        char *y = a->out + (oo + k * os) * a->itemsize;
        if (a->use_int) {
            const uint64_t v = (uint64_t)ptl_load_int(x, (PtlDtype)a->dtype);
            ai = is_prod ? ai * v : ai + v;
            ptl_red_store_i(y, a->dtype, (int64_t)ai);
        }
        else {
            const double v = ptl_load_double(x, (PtlDtype)a->dtype);
            ad = is_prod ? ad * v : ad + v;
            ptl_red_store_d(y, a->dtype, ad);
        }
    }
}

#endif
