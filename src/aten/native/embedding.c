/* embedding.c -- embedding, its dense backward and renorm_, and the bags of
 * F.embedding_bag (_ptl_embedding_bag).  Mirrors ATen/native/Embedding.cpp and
 * EmbeddingBag.cpp. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "../loops.h"
#include "device_compose.h"
#include "device_nn.h"
#include "native.h"
#include "nn_common.h"

static int
check_indices(PtlTensorImpl *idx, const char *fn)
{
    if (idx->dtype != PTL_DTYPE_INT64 && idx->dtype != PTL_DTYPE_INT32) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Expected tensor for argument #1 'indices' to have one of the "
                             "following scalar types: Long, Int; but got torch.%sTensor instead "
                             "(while checking arguments for %s)",
                             ptl_dtype_legacy_name(idx->dtype), fn);
    }
    return 0;
}

/* embedding(Tensor weight, Tensor indices, ...) -> Tensor.  [V, D], [*] -> [*, D] */
static int
embedding_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *w = s[0].u.t, *idx = NULL, *wc = NULL, *out = NULL;
    int64_t sizes[PTL_MAX_DIMS + 1], numel = 1;
    (void)op;
    (void)ks;

    if (w->dim != 2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "'weight' must be 2-D");
    }
    if (check_indices(s[1].u.t, "embedding") < 0) {
        return -1;
    }
    if (s[1].u.t->dim >= PTL_MAX_DIMS) {
        return ptl_error_set(PTL_ERR_RUNTIME, "embedding: too many dimensions");
    }
    if ((idx = ptl_cast(s[1].u.t, PTL_DTYPE_INT64)) == NULL || (wc = ptl_contiguous(w)) == NULL) {
        goto error;
    }
    for (int d = 0; d < idx->dim; d++) {
        sizes[d] = idx->sizes[d];
        numel *= idx->sizes[d];
    }
    sizes[idx->dim] = w->sizes[1];
    if ((out = ptl_empty(idx->dim + 1, sizes, w->dtype, w->device)) == NULL) {
        goto error;
    }
    const int64_t *iv = (const int64_t *)ptl_tensor_data(idx);
    size_t row = ptl_tensor_itemsize(w) * (size_t)w->sizes[1];
    if (!ptl_tensor_is_meta(out) && nn_on_device(w, ptl_device_embedding_hook != NULL)) {
        PtlDeviceEmbeddingArgs a = {0, w->dtype, 0, ptl_tensor_data(wc), iv,
                                    ptl_tensor_data(out), numel, w->sizes[0], w->sizes[1],
                                    -1, (int64_t)ptl_tensor_itemsize(w)};
        if (ptl_device_embedding_hook(&a) < 0) {
            goto error;
        }
        numel = 0;   /* gathered on the device */
    }
    for (int64_t i = 0; i < numel && !ptl_tensor_is_meta(out); i++) {
        if (iv[i] < 0 || iv[i] >= w->sizes[0]) {
            ptl_error_set(PTL_ERR_INDEX, "index out of range in self");
            goto error;
        }
        if (row > 0) {
            memcpy(ptl_tensor_data(out) + (size_t)i * row,
                   ptl_tensor_data(wc) + (size_t)iv[i] * row, row);
        }
    }
    ptl_decref(idx);
    ptl_decref(wc);
    s[0] = ptl_iv_tensor(out);
    return 0;
error:
    ptl_xdecref(idx);
    ptl_xdecref(wc);
    ptl_xdecref(out);
    return -1;
}

/* Note [Embedding bags]
 * ~~~~~~~~~~~~~~~~~~~~~
 * F.embedding_bag (nn/functional.py) reduces bags of weight rows.  For sum and mean on the CPU
 * it calls _ptl_embedding_bag with the offsets of the bags (padding_idx's indices dropped
 * first, the offsets recounted) and, for sum, per_sample_weights as a scale; the kernel adds
 *     out[b] = +0 + scale[i] * weight[indices[i]]    for i = offsets[b], offsets[b] + 1, ...
 * in order, in the weight's dtype, straight from weight's rows; mean then divides each bag by
 * its number of rows, as PyTorch's kernel does.  Neither the [n, D] gathered rows nor the
 * dense [bags, n] membership matrix of the composite (kept in functional.py as the reference,
 * and for devices without this kernel) is made, nor a bag per index.  A bag's sum is its rows
 * added in index order from +0 whatever the width, so the bits depend on neither the vector
 * width nor the thread count.
 * 64 bags of 16 rows of width 1024, float32, one thread: 2.8 ms -> 0.12 ms (PyTorch 0.1 ms).
 * Float32 adds a bag's rows 32 columns at a time in registers (bag_run_add_f4); narrow rows
 * had gone through the output row in memory once per row (1024 bags of 8 rows of width 32:
 * 190 -> 32 us), then 8 columns at a time, vectors loaded straight from the rows and all the
 * bags in one call of the clone: 32 -> 16 us.  Then rows of 8 .. 64 columns (a multiple of 8)
 * are added whole, all their vectors at once (bag_run_sum_f4, a variant per width), with no
 * memset of the output first, and the kernel reads the offsets, not a bag per index: the
 * int64 [n] bag array cost about a third of narrow bags' time (written by a pass over the
 * offsets, 3.5 us for 8192 indices, then read and checked, another 2 us).  Tried and
 * dropped: several bags interleaved, each with its own accumulators (2 or 4 bags at once,
 * 10-30% slower: the loop already overlaps one bag's dependent adds with the next bag's), and
 * fetching rows ahead when the table fits in L2 (rows of 8: a third slower); a table of 1 MiB
 * or more fetches the rows 16 indices ahead (BAG_AHEAD: 512 bags of 20 rows of a 10000 x 64
 * table, 35 -> 31 us).  The indices are checked by one branch-free pass before any row is
 * read.  The offsets are checked with PyTorch's messages by bag_offsets_host, shared with
 * _ptl_embedding_bag_offsets, which gives each index its bag for the other paths (max,
 * padding_idx, the derivative and the device).  The derivative (derivatives/embedding.c) is
 * written with index_select / index_add, so it differentiates again. */
/* o[:d] += scale * row[:d] (or + row[:d]) in the dtypes other than float32, compiled for AVX2
 * too (Note [Loop clones] in loops.h: no FMA, so the bits do not depend on the CPU) */
PTL_LOOP_CLONES static void
bag_row_add(char *o, const char *row, double scale, int has_scale, int64_t d, PtlDtype dt)
{
    if (dt == PTL_DTYPE_FLOAT64) {
        double *od = (double *)o;
        const double *rd = (const double *)row;
        for (int64_t j = 0; j < d; j++) {
            od[j] += has_scale ? scale * rd[j] : rd[j];
        }
        return;
    }
    size_t item = ptl_dtype_itemsize(dt);
    for (int64_t j = 0; j < d; j++) {
        double v = ptl_load_double(row + (size_t)j * item, dt);
        double a = ptl_load_double(o + (size_t)j * item, dt);
        ptl_store_double(o + (size_t)j * item, dt, a + (has_scale ? scale * v : v));
    }
}

/* One bag's m consecutive indices, float32: o[:d] += (scale[k] *) w[iv[k]][:d] for
 * k = 0 .. m-1 in order, 32 columns at a time in registers, then 8, then one by one, for rows
 * of any width (Note [Embedding bags]).  The vectors load straight from the rows: copied into
 * an array of vectors with memcpy they went through the stack 16 bytes at a time. */
typedef float BagVec __attribute__((vector_size(32)));
typedef BagVec BagVecMem __attribute__((aligned(4), may_alias));   /* a vector in a row */
#define BAG_ADD_ROWS(NV)                                                                  \
    do {                                                                                  \
        BagVec acc[NV];                                                                   \
        for (int q = 0; q < NV; q++) {                                                    \
            acc[q] = *(const BagVecMem *)(o + c + 8 * q);                                 \
        }                                                                                 \
        for (int64_t k = 0; k < m; k++) {                                                 \
            const float *r = w + iv[k] * d + c;                                           \
            for (int q = 0; q < NV; q++) {                                                \
                BagVec v = *(const BagVecMem *)(r + 8 * q);                               \
                acc[q] += scale != NULL ? scale[k] * v : v;                               \
            }                                                                             \
        }                                                                                 \
        for (int q = 0; q < NV; q++) {                                                    \
            *(BagVecMem *)(o + c + 8 * q) = acc[q];                                       \
        }                                                                                 \
    } while (0)
static inline __attribute__((always_inline)) void
bag_run_add_f4(float *o, const float *w, const int64_t *iv, const float *scale, int64_t m,
               int64_t d)
{
    int64_t c = 0;
    for (; c + 32 <= d; c += 32) {
        BAG_ADD_ROWS(4);
    }
    for (; c + 8 <= d; c += 8) {
        BAG_ADD_ROWS(1);
    }
    for (int64_t k = 0; k < m && c < d; k++) {
        const float *r = w + iv[k] * d;
        for (int64_t j = c; j < d; j++) {
            o[j] += scale != NULL ? scale[k] * r[j] : r[j];
        }
    }
}
#undef BAG_ADD_ROWS

/* One bag's m consecutive indices, float32, rows of d = 8 * NV columns (NV = 1 .. 8, a
 * constant once inlined): o[:d] = +0 + (scale[k] *) w[iv[k]][:d] for k = 0 .. m-1 in order,
 * the row's NV vectors at once (Note [Embedding bags]).  With ahead > 0 the lines of row
 * iv[k + ahead] are fetched while row iv[k] is added (the caller makes sure it exists). */
static inline __attribute__((always_inline)) void
bag_run_sum_f4(float *o, const float *w, const int64_t *iv, const float *scale, int64_t m,
               const int NV, const int ahead)
{
    const int64_t d = 8 * NV;
    BagVec acc[8];   /* NV of them: acc[NV] would be a variable-length array on the stack */
    for (int q = 0; q < NV; q++) {
        acc[q] = (BagVec){0};
    }
    for (int64_t k = 0; k < m; k++) {
        const float *r = w + iv[k] * d;
        if (ahead > 0) {
            const float *p = w + iv[k + ahead] * d;
            for (int q = 0; q < NV; q += 2) {
                __builtin_prefetch(p + 8 * q);
            }
            __builtin_prefetch(p + d - 1);
        }
        for (int q = 0; q < NV; q++) {
            BagVec v = *(const BagVecMem *)(r + 8 * q);
            acc[q] += scale != NULL ? scale[k] * v : v;
        }
    }
    for (int q = 0; q < NV; q++) {
        *(BagVecMem *)(o + 8 * q) = acc[q];
    }
}

/* A table of at least BAG_AHEAD_BYTES is read with the rows BAG_AHEAD indices ahead fetched
 * (Note [Embedding bags]) */
#define BAG_AHEAD_BYTES ((size_t)1 << 20)
#define BAG_AHEAD 16

/* bags_sum_f4 with rows of d = 8 * NV columns (NV and whether there is a scale constants once
 * inlined), or with NV = 0 of any width d */
static inline __attribute__((always_inline)) void
bags_sum_width_f4(float *out, const float *w, const int64_t *iv, const int64_t *offs,
                  int64_t nbags, const float *scale, int64_t n, int64_t d, int ahead,
                  const int NV)
{
    if (NV > 0) {
        d = 8 * NV;   /* a constant */
    }
    for (int64_t b = 0; b < nbags; b++) {
        int64_t i = offs[b], m = (b + 1 < nbags ? offs[b + 1] : n) - i;
        const float *sc = scale != NULL ? scale + i : NULL;
        if (NV == 0) {
            memset(out + b * d, 0, (size_t)d * sizeof(float));
            bag_run_add_f4(out + b * d, w, iv + i, sc, m, d);
        }
        else if (ahead && i + m + BAG_AHEAD <= n) {
            bag_run_sum_f4(out + b * d, w, iv + i, sc, m, NV, BAG_AHEAD);
        }
        else {
            bag_run_sum_f4(out + b * d, w, iv + i, sc, m, NV, 0);
        }
    }
}

/* out[b][:d] = the sum of (scale[i] *) w[iv[i]][:d] for i from offs[b] up to offs[b + 1] (the
 * last bag up to n), in order from +0, float32, for nbags checked offsets and checked indices:
 * one call for all the bags (a call per bag through the clones' resolver cost a fifth of
 * narrow bags' time), a whole row of 8 .. 64 columns in registers at once, wider or odd rows
 * 32 and 8 columns at a time.  Note [Embedding bags]. */
PTL_LOOP_CLONES static void
bags_sum_f4(float *out, const float *w, const int64_t *iv, const int64_t *offs, int64_t nbags,
            const float *scale, int64_t n, int64_t d, int ahead)
{
    switch (d % 8 == 0 && d <= 64 ? d / 8 : 0) {
#define BAG_WIDTH_CASE(NV)                                                                \
    case NV:                                                                              \
        if (scale != NULL) {                                                              \
            bags_sum_width_f4(out, w, iv, offs, nbags, scale, n, d, ahead, NV);           \
        }                                                                                 \
        else {                                                                            \
            bags_sum_width_f4(out, w, iv, offs, nbags, NULL, n, d, ahead, NV);            \
        }                                                                                 \
        break;
        BAG_WIDTH_CASE(1)
        BAG_WIDTH_CASE(2)
        BAG_WIDTH_CASE(3)
        BAG_WIDTH_CASE(4)
        BAG_WIDTH_CASE(5)
        BAG_WIDTH_CASE(6)
        BAG_WIDTH_CASE(7)
        BAG_WIDTH_CASE(8)
#undef BAG_WIDTH_CASE
    default:
        bags_sum_width_f4(out, w, iv, offs, nbags, scale, n, d, 0, 0);
        break;
    }
}


/* o[:d] /= c: the mean of a bag of c rows, in the stored type as PyTorch's (a float division
 * rounds as the double one rounded to float) */
static void
bag_row_div(char *o, int64_t c, int64_t d, PtlDtype dt)
{
    if (dt == PTL_DTYPE_FLOAT32) {
        float *of = (float *)o, cf = (float)c;
        for (int64_t j = 0; j < d; j++) {
            of[j] /= cf;
        }
        return;
    }
    size_t item = ptl_dtype_itemsize(dt);
    for (int64_t j = 0; j < d; j++) {
        ptl_store_double(o + (size_t)j * item, dt,
                         ptl_load_double(o + (size_t)j * item, dt) / (double)c);
    }
}

/* Whether an index iv[i] lies outside [0, rows) (i < n): a negative one is a large unsigned
 * one, and the flags are or-ed without a branch, so the loop vectorizes */
PTL_LOOP_CLONES static int
indices_out_of_range(const int64_t *iv, int64_t n, uint64_t rows)
{
    uint64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        bad |= (uint64_t)((uint64_t)iv[i] >= rows);
    }
    return bad != 0;
}

/* F.embedding_bag's checks of 1-D offsets for n indices, with PyTorch's messages: integral,
 * offsets[0] = 0, offsets[-1] <= n, non-decreasing.  Returns them as int64 on the host (a new
 * reference: the same tensor where it is CPU int64 and contiguous), or NULL. */
static PtlTensorImpl *
bag_offsets_host(PtlTensorImpl *offs, int64_t n)
{
    PtlDevice cpu = ptl_device_cpu();
    if (offs->dim != 1) {
        ptl_error_set(PTL_ERR_RUNTIME, "offsets has to be a 1D Tensor");
        return NULL;
    }
    if (!ptl_dtype_is_integral(offs->dtype, 0)) {
        ptl_error_set(PTL_ERR_RUNTIME,
                      "Expected tensor for argument #1 'offsets' to have one of the following "
                      "scalar types: Long, Int; but got torch.%sTensor instead (while checking "
                      "arguments for embedding_bag)", ptl_dtype_legacy_name(offs->dtype));
        return NULL;
    }
    if (n < 0) {
        ptl_error_set(PTL_ERR_RUNTIME, "embedding_bag: num_indices must be >= 0");
        return NULL;
    }
    PtlTensorImpl *host = offs->device.type == PTL_DEVICE_CPU && offs->dtype == PTL_DTYPE_INT64
                              ? ptl_contiguous(offs)   /* no copy */
                              : ptl_to_copy(offs, PTL_DTYPE_INT64, &cpu);
    if (host == NULL) {
        return NULL;
    }
    const int64_t *o = (const int64_t *)ptl_tensor_data(host);
    int64_t count = offs->numel;
    if (count > 0 && o[0] != 0) {
        ptl_error_set(PTL_ERR_RUNTIME,
                      "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has "
                      "to start from position 0. However, got %lld", (long long)o[0]);
        goto error;
    }
    if (count > 0 && o[count - 1] > n) {
        ptl_error_set(PTL_ERR_RUNTIME,
                      "offsets[-1] can not be greater than input's length %lld but got "
                      "offsets[-1] of %lld", (long long)n, (long long)o[count - 1]);
        goto error;
    }
    for (int64_t b = 1; b < count; b++) {
        if (o[b] < o[b - 1]) {
            ptl_error_set(PTL_ERR_RUNTIME,
                          "offsets has to be a non-decreasing sequence, but got offsets[%lld] "
                          "= %lld after offsets[%lld] = %lld", (long long)b, (long long)o[b],
                          (long long)(b - 1), (long long)o[b - 1]);
            goto error;
        }
    }
    return host;
error:
    ptl_decref(host);
    return NULL;
}


/* The bag of each index from count offsets o already checked (bag_offsets_host): int64
 * [end] on `device`, where end is o[count - 1] with `last` (include_last_offset) and
 * num_indices without, and index i is in bag b when o[b] <= i < o[b + 1] (the last bag runs
 * to end).  New ref or NULL. */
static PtlTensorImpl *
bags_of_offsets(const int64_t *o, int64_t count, int64_t num_indices, int last,
                PtlDevice device)
{
    int64_t nbags = last ? (count > 0 ? count - 1 : 0) : count;
    int64_t end = last && count > 0 ? o[count - 1] : num_indices;
    PtlTensorImpl *bag, *res;
    if (nbags == 0) {
        end = 0;
    }
    if ((bag = ptl_empty(1, &end, PTL_DTYPE_INT64, ptl_device_cpu())) == NULL) {
        return NULL;
    }
    int64_t *bv = (int64_t *)ptl_tensor_data(bag);
    for (int64_t b = 0; b < nbags; b++) {
        int64_t stop = b + 1 < nbags || last ? o[b + 1] : end;
        for (int64_t i = o[b]; i < stop; i++) {
            bv[i] = b;
        }
    }
    if (device.type == PTL_DEVICE_CPU) {
        return bag;
    }
    res = ptl_to_copy(bag, PTL_DTYPE_UNDEFINED, &device);
    ptl_decref(bag);
    return res;
}

/* Note [Device embedding bags]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * On CUDA (and in the CPU tests' emulation of the CUDA kernels) _ptl_embedding_bag is the
 * composition of the device's index kernels that its derivative already uses:
 *     bag  = the bag of each index, from the offsets checked on the host (bags_of_offsets,
 *            which _ptl_embedding_bag_offsets returns)
 *     rows = weight.index_select(0, indices) [* scale.unsqueeze(1)]
 *     out  = zeros(num_bags, D).index_add_(0, bag, rows)
 * and for mean out / counts.clamp(min=1).unsqueeze(1), counts = zeros(num_bags)
 * .index_add_(0, bag, ones(n)) in the weight's dtype (a bag of none stays 0, as on the CPU).
 * It makes the [n, D] rows the CPU kernel avoids, and index_add_'s order of the adds is the
 * device's: equal within rounding, not the CPU's bits.  A bad index raises index_select's
 * error.  A fused kernel (a block per bag) is the next step where the rows' copy shows in a
 * profile. */
static int
embedding_bag_device(PtlTensorImpl *w, PtlTensorImpl *idx, PtlTensorImpl *offs,
                     PtlTensorImpl *offs_host, PtlTensorImpl *scale, int64_t nbags, int mean,
                     PtlIValue *s)
{
    PtlTensorImpl *rows = NULL, *scaled = NULL, *scale2 = NULL, *out = NULL, *cnt = NULL;
    PtlTensorImpl *ones = NULL, *div = NULL, *cnt2 = NULL, *res = NULL, *bag = NULL;
    int64_t sizes[2] = {nbags, w->sizes[1]}, n = idx->numel, col[2] = {-1, 1};
    if ((bag = bags_of_offsets((const int64_t *)ptl_tensor_data(offs_host), offs_host->numel,
                               n, offs_host->numel > nbags, offs->device)) == NULL) {
        goto done;
    }
    PtlIValue a0[3] = {ptl_iv_tensor(w), ptl_iv_int(0), ptl_iv_tensor(idx)};
    if ((rows = ptl_call_tensor(PTL_OP_index_select, a0)) == NULL) {
        goto done;
    }
    if (scale != NULL) {
        PtlIValue a1[2] = {ptl_iv_tensor(scale), ptl_iv_intlist(col, 2)};
        PtlIValue a2[2] = {ptl_iv_tensor(rows), ptl_iv_none()};
        if ((scale2 = ptl_call_tensor(PTL_OP_view, a1)) == NULL) {
            goto done;
        }
        a2[1] = ptl_iv_tensor(scale2);
        if ((scaled = ptl_call_tensor(PTL_OP_mul_Tensor, a2)) == NULL) {
            goto done;
        }
    }
    if ((out = ptl_device_full(2, sizes, w->dtype, w->device, 0)) == NULL) {
        goto done;
    }
    PtlIValue a3[5] = {ptl_iv_tensor(out), ptl_iv_int(0), ptl_iv_tensor(bag),
                       ptl_iv_tensor(scaled != NULL ? scaled : rows), ptl_iv_int(1)};
    if (ptl_call_inplace(PTL_OP_index_add_, a3) < 0) {
        goto done;
    }
    if (mean) {
        if ((cnt = ptl_device_full(1, &nbags, w->dtype, w->device, 0)) == NULL ||
            (ones = ptl_device_full(1, &n, w->dtype, w->device, 1)) == NULL) {
            goto done;
        }
        PtlIValue a4[5] = {ptl_iv_tensor(cnt), ptl_iv_int(0), ptl_iv_tensor(bag),
                           ptl_iv_tensor(ones), ptl_iv_int(1)};
        PtlIValue a5[3] = {ptl_iv_tensor(cnt), ptl_iv_int(1), ptl_iv_none()};
        if (ptl_call_inplace(PTL_OP_index_add_, a4) < 0 ||
            (cnt2 = ptl_call_tensor(PTL_OP_clamp, a5)) == NULL) {
            goto done;
        }
        PtlIValue a6[2] = {ptl_iv_tensor(cnt2), ptl_iv_intlist(col, 2)};
        if ((div = ptl_call_tensor(PTL_OP_view, a6)) == NULL) {
            goto done;
        }
        PtlIValue a7[2] = {ptl_iv_tensor(out), ptl_iv_tensor(div)};
        if ((res = ptl_call_tensor(PTL_OP_div_Tensor, a7)) == NULL) {
            goto done;
        }
    }
    else {
        res = out;
        out = NULL;
    }
    s[0] = ptl_iv_tensor(res);
done:
    ptl_xdecref(rows);
    ptl_xdecref(scaled);
    ptl_xdecref(scale2);
    ptl_xdecref(out);
    ptl_xdecref(cnt);
    ptl_xdecref(ones);
    ptl_xdecref(cnt2);
    ptl_xdecref(div);
    ptl_xdecref(bag);
    return res != NULL ? 0 : -1;
}

/* _ptl_embedding_bag(weight [V, D], indices [n], offsets [num_bags or num_bags + 1],
 * scale [n]?, num_bags, mean) -> [num_bags, D] (Note [Embedding bags]): bag b sums indices
 * offsets[b] up to offsets[b + 1], the last one up to n (num_bags offsets) or to
 * offsets[num_bags], which must then be n; scale has weight's dtype; mean divides each bag's
 * sum by its number of rows.  On the device: Note [Device embedding bags]. */
static int
embedding_bag_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *w = s[0].u.t, *scale = s[3].tag == PTL_IV_TENSOR ? s[3].u.t : NULL;
    PtlTensorImpl *wc = NULL, *ic = NULL, *oc = NULL, *sc = NULL, *out = NULL;
    int64_t nbags = s[4].u.i, n = s[1].u.t->numel, sizes[2];
    (void)op;
    (void)ks;
    if (w->dim != 2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "'weight' must be 2-D");
    }
    if (!ptl_dtype_is_floating(w->dtype)) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED,
                             "\"embedding_bag_cpu\" not implemented for '%s'",
                             ptl_dtype_legacy_name(w->dtype));
    }
    if (check_indices(s[1].u.t, "embedding_bag") < 0) {
        return -1;
    }
    if (s[1].u.t->dim != 1 || nbags < 0 || (nbags == 0 && n > 0) ||
        (s[2].u.t->numel != nbags && s[2].u.t->numel != nbags + 1) ||
        (scale != NULL && (scale->dim != 1 || scale->numel != n || scale->dtype != w->dtype))) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "_ptl_embedding_bag: expected 1-D indices (none without bags), "
                             "num_bags or num_bags + 1 offsets and a scale of the indices' "
                             "length in weight's dtype");
    }
    if ((oc = bag_offsets_host(s[2].u.t, n)) == NULL) {
        return -1;
    }
    const int64_t *ov = (const int64_t *)ptl_tensor_data(oc);
    if (oc->numel == nbags + 1 && ov[nbags] != n) {
        ptl_decref(oc);
        return ptl_error_set(PTL_ERR_RUNTIME, "_ptl_embedding_bag: offsets[num_bags] = %lld "
                                              "is not the number of indices, %lld",
                             (long long)ov[nbags], (long long)n);
    }
    if (ptl_on_device_path(w)) {
        /* the offsets as read and checked once, on the host */
        int rc = embedding_bag_device(w, s[1].u.t, s[2].u.t, oc, scale, nbags, s[5].u.b, s);
        ptl_decref(oc);
        return rc;
    }
    sizes[0] = nbags;
    sizes[1] = w->sizes[1];
    ic = s[1].u.t->dtype == PTL_DTYPE_INT64 ? ptl_contiguous(s[1].u.t)   /* no copy */
                                             : ptl_cast(s[1].u.t, PTL_DTYPE_INT64);
    if ((wc = ptl_contiguous(w)) == NULL || ic == NULL ||
        (scale != NULL && (sc = ptl_contiguous(scale)) == NULL) ||
        (out = ptl_empty(2, sizes, w->dtype, w->device)) == NULL) {
        goto error;
    }
    size_t row = ptl_tensor_itemsize(w) * (size_t)sizes[1];
    const int64_t *iv = (const int64_t *)ptl_tensor_data(ic);
    const char *sv = sc != NULL ? ptl_tensor_data(sc) : NULL;
    char *od = ptl_tensor_data(out);
    if (indices_out_of_range(iv, n, (uint64_t)w->sizes[0])) {
        ptl_error_set(PTL_ERR_INDEX, "index out of range in self");
        goto error;
    }
    if (w->dtype == PTL_DTYPE_FLOAT32) {
        bags_sum_f4((float *)od, (const float *)ptl_tensor_data(wc), iv, ov, nbags,
                    (const float *)sv, n, sizes[1],
                    (size_t)w->sizes[0] * row >= BAG_AHEAD_BYTES);
    }
    else {
        memset(od, 0, (size_t)nbags * row);   /* +0.0 in every float dtype */
    }
    for (int64_t b = 0; w->dtype != PTL_DTYPE_FLOAT32 && b < nbags; b++) {
        for (int64_t i = ov[b]; i < (b + 1 < nbags ? ov[b + 1] : n); i++) {
            bag_row_add(od + (size_t)b * row, ptl_tensor_data(wc) + (size_t)iv[i] * row,
                        sv != NULL ? ptl_load_double(sv + (size_t)i * ptl_tensor_itemsize(w),
                                                     w->dtype)
                                   : 1.0,
                        sv != NULL, sizes[1], w->dtype);
        }
    }
    for (int64_t b = 0; s[5].u.b && b < nbags; b++) {
        int64_t m = (b + 1 < nbags ? ov[b + 1] : n) - ov[b];
        if (m > 1) {
            bag_row_div(od + (size_t)b * row, m, sizes[1], w->dtype);
        }
    }
    ptl_decref(wc);
    ptl_decref(ic);
    ptl_decref(oc);
    ptl_xdecref(sc);
    s[0] = ptl_iv_tensor(out);
    return 0;
error:
    ptl_xdecref(wc);
    ptl_xdecref(ic);
    ptl_decref(oc);
    ptl_xdecref(sc);
    ptl_xdecref(out);
    return -1;
}

/* embedding_dense_backward(grad_output, indices, num_weights, padding_idx,
 * scale_grad_by_freq) -> Tensor.  [*, D], [*] -> [V, D]; rows at padding_idx get none. */
static int
embedding_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *g = NULL, *idx = NULL, *acc = NULL, *res = NULL;
    int64_t V = s[2].u.i, pad = s[3].u.i, numel = 1, *count = NULL;
    int scale = s[4].u.b;
    PtlDtype dt = s[0].u.t->dtype;
    (void)op;
    (void)ks;

    if (check_indices(s[1].u.t, "embedding_backward") < 0) {
        return -1;
    }
    /* float32 gradients are read as they are (summed in double); others go through float64 */
    if ((g = nn_contiguous_as(s[0].u.t, dt == PTL_DTYPE_FLOAT32 ? dt : PTL_DTYPE_FLOAT64)) == NULL ||
        (idx = nn_contiguous_as(s[1].u.t, PTL_DTYPE_INT64)) == NULL) {
        goto error;
    }
    for (int d = 0; d < idx->dim; d++) {
        numel *= idx->sizes[d];
    }
    int64_t D = g->dim > 0 ? g->sizes[g->dim - 1] : 1;
    int64_t sizes[2] = {V, D};
    if (numel * D != g->numel) {   /* PyTorch views grad as [numel, D] */
        ptl_error_set(PTL_ERR_RUNTIME, "shape '[%lld, %lld]' is invalid for input of size %lld",
                      (long long)numel, (long long)D, (long long)g->numel);
        goto error;
    }
    if ((acc = ptl_empty(2, sizes, PTL_DTYPE_FLOAT64, g->device)) == NULL ||
        (count = calloc((size_t)V + 1, sizeof(int64_t))) == NULL) {
        if (acc != NULL) {
            ptl_error_set(PTL_ERR_MEMORY, "embedding_backward: out of memory");
        }
        goto error;
    }
    double *av = (double *)ptl_tensor_data(acc);
    const double *gv = (const double *)ptl_tensor_data(g);
    const float *gf = (const float *)ptl_tensor_data(g);
    int f4 = g->dtype == PTL_DTYPE_FLOAT32;
    const int64_t *iv = (const int64_t *)ptl_tensor_data(idx);
    if (ptl_tensor_is_meta(acc)) {
        numel = 0;   /* no data to scatter: the shape is all */
    }
    else if (nn_on_device(g, ptl_device_embedding_hook != NULL)) {
        PtlDeviceEmbeddingArgs a = {1, g->dtype, scale, ptl_tensor_data(g), iv,
                                    ptl_tensor_data(acc), numel, V, D, pad, 8};
        if (ptl_device_embedding_hook(&a) < 0) {
            goto error;
        }
        numel = 0;   /* accumulated on the device */
    }
    else {
        memset(av, 0, sizeof(double) * (size_t)(V * D));
    }
    for (int64_t i = 0; i < numel; i++) {
        if (iv[i] < 0 || iv[i] >= V) {
            ptl_error_set(PTL_ERR_INDEX, "index out of range in self");
            goto error;
        }
        count[iv[i]]++;
    }
    for (int64_t i = 0; i < numel; i++) {
        if (iv[i] == pad) {
            continue;
        }
        double f = scale ? 1.0 / (double)count[iv[i]] : 1.0;
        double *restrict row = av + iv[i] * D;
        if (f4) {
            for (int64_t k = 0; k < D; k++) {
                row[k] += f * (double)gf[i * D + k];
            }
        }
        else {
            for (int64_t k = 0; k < D; k++) {
                row[k] += f * gv[i * D + k];
            }
        }
    }
    if ((res = ptl_cast(acc, dt)) == NULL) {
        goto error;
    }
    free(count);
    ptl_decref(acc);
    ptl_decref(g);
    ptl_decref(idx);
    s[0] = ptl_iv_tensor(res);
    return 0;
error:
    free(count);
    ptl_xdecref(acc);
    ptl_xdecref(g);
    ptl_xdecref(idx);
    return -1;
}

/* Note [Device embedding_renorm_]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * On CUDA weights (and under the kernel emulation) the rows are renormalised all at once by
 * device kernels: the distinct indices (_unique2, whose device path walks a host copy), their
 * extremes read back for the range check, the rows gathered (index_select), their norms in
 * float64 (linalg_vector_norm), the factor max_norm / (norm + 1e-7) where the norm exceeds
 * max_norm and 1 elsewhere, converted to the weight's dtype as the CPU loop's wrapped scalar
 * is, and the scaled rows written back (index_copy_): a row's values are the CPU's up to the
 * order of its norm's sum. */
static int
embedding_renorm_device(PtlTensorImpl *w, PtlTensorImpl *indices, double max_norm, double p)
{
    PtlTensorImpl *flat = NULL, *uniq = NULL, *rows = NULL, *norms = NULL, *big = NULL;
    PtlTensorImpl *den = NULL, *q = NULL, *fac = NULL, *scaled = NULL, *res = NULL;
    PtlTensorImpl *mx = NULL, *one = NULL, *eps = NULL;
    int64_t all = -1, lo = 0, hi = 0, dim1 = 1;
    int rc = -1;
    PtlIValue st[3] = {ptl_iv_tensor(indices), ptl_iv_intlist(&all, 1), ptl_iv_bool(0)};
    if ((flat = ptl_call_tensor(PTL_OP_reshape, st)) == NULL) {
        goto done;
    }
    PtlIValue u[4] = {ptl_iv_tensor(flat), ptl_iv_bool(1), ptl_iv_bool(0), ptl_iv_bool(0)};
    if (ptl_dispatcher_call(ptl_op(PTL_OP__unique2), u) < 0) {
        goto done;
    }
    uniq = u[0].u.t;
    ptl_xdecref(u[1].tag == PTL_IV_TENSOR ? u[1].u.t : NULL);
    ptl_xdecref(u[2].tag == PTL_IV_TENSOR ? u[2].u.t : NULL);
    if (uniq->numel == 0) {
        rc = 0;
        goto done;
    }
    if (ptl_device_reduce_read(PTL_OP_amin, uniq, &lo) < 0 ||
        ptl_device_reduce_read(PTL_OP_amax, uniq, &hi) < 0) {
        goto done;
    }
    if (lo < 0 || hi >= w->sizes[0]) {
        ptl_error_set(PTL_ERR_INDEX, "index out of range in self");
        goto done;
    }
    PtlIValue sel[3] = {ptl_iv_tensor(w), ptl_iv_int(0), ptl_iv_tensor(uniq)};
    if ((rows = ptl_call_tensor(PTL_OP_index_select, sel)) == NULL) {
        goto done;
    }
    PtlIValue nv[5] = {ptl_iv_tensor(rows), ptl_iv_double(p), ptl_iv_intlist(&dim1, 1),
                       ptl_iv_bool(1), ptl_iv_dtype(PTL_DTYPE_FLOAT64)};
    PtlDevice cpu = ptl_device_cpu();
    if ((norms = ptl_call_tensor(PTL_OP_linalg_vector_norm, nv)) == NULL ||
        (mx = ptl_scalar_tensor(max_norm, PTL_DTYPE_FLOAT64, cpu)) == NULL ||
        (one = ptl_scalar_tensor(1, PTL_DTYPE_FLOAT64, cpu)) == NULL ||
        (eps = ptl_scalar_tensor(1e-7, PTL_DTYPE_FLOAT64, cpu)) == NULL) {
        goto done;
    }
    PtlIValue a[3] = {ptl_iv_tensor(norms), ptl_iv_tensor(eps), ptl_iv_int(1)};
    if ((den = ptl_call_tensor(PTL_OP_add_Tensor, a)) == NULL) {
        goto done;
    }
    a[0] = ptl_iv_tensor(mx);
    a[1] = ptl_iv_tensor(den);
    if ((q = ptl_call_tensor(PTL_OP_div_Tensor, a)) == NULL) {
        goto done;
    }
    a[0] = ptl_iv_tensor(norms);
    a[1] = ptl_iv_tensor(mx);
    if ((big = ptl_call_tensor(PTL_OP_gt_Tensor, a)) == NULL) {
        goto done;
    }
    PtlIValue wh[3] = {ptl_iv_tensor(big), ptl_iv_tensor(q), ptl_iv_tensor(one)};
    if ((fac = ptl_call_tensor(PTL_OP_where_self, wh)) == NULL) {
        goto done;
    }
    PtlTensorImpl *fac_w = ptl_cast(fac, w->dtype);
    if (fac_w == NULL) {
        goto done;
    }
    a[0] = ptl_iv_tensor(rows);
    a[1] = ptl_iv_tensor(fac_w);
    scaled = ptl_call_tensor(PTL_OP_mul_Tensor, a);
    ptl_decref(fac_w);
    if (scaled == NULL) {
        goto done;
    }
    PtlIValue cp[4] = {ptl_iv_tensor(w), ptl_iv_int(0), ptl_iv_tensor(uniq),
                       ptl_iv_tensor(scaled)};
    if ((res = ptl_call_tensor(PTL_OP_index_copy_, cp)) != NULL) {
        rc = 0;
    }
done:
    ptl_xdecref(flat);
    ptl_xdecref(uniq);
    ptl_xdecref(rows);
    ptl_xdecref(norms);
    ptl_xdecref(big);
    ptl_xdecref(den);
    ptl_xdecref(q);
    ptl_xdecref(fac);
    ptl_xdecref(scaled);
    ptl_xdecref(res);
    ptl_xdecref(mx);
    ptl_xdecref(one);
    ptl_xdecref(eps);
    return rc;
}

/* The p-norm of the 1-D row as PyTorch's norm(p) computes it: of |x| (|z| of a complex
 * row), the largest for p = inf, the smallest for p = -inf, the count of nonzeros for
 * p = 0, in double.  0 or -1. */
static int
row_norm(PtlTensorImpl *row, double p, double *norm)
{
    int cplx = ptl_dtype_is_complex(row->dtype);
    PtlTensorImpl *r64 = ptl_cast(row, cplx ? PTL_DTYPE_COMPLEX128 : PTL_DTYPE_FLOAT64);
    if (r64 == NULL) {
        return -1;
    }
    const double *rv = (const double *)ptl_tensor_data(r64);
    int64_t n = row->sizes[0];
    double acc = isinf(p) && p < 0 ? INFINITY : 0;
    for (int64_t k = 0; k < n; k++) {
        double a = cplx ? hypot(rv[2 * k], rv[2 * k + 1]) : fabs(rv[k]);
        acc = isinf(p) ? ((p > 0 ? a > acc : a < acc) || a != a ? a : acc)   /* nan wins */
              : p == 0 ? acc + (a != 0)
              : p == 1 ? acc + a
              : p == 2 ? acc + a * a
                       : acc + pow(a, p);
    }
    *norm = isinf(p) || p == 0 || p == 1 ? acc : p == 2 ? sqrt(acc) : pow(acc, 1.0 / p);
    ptl_decref(r64);
    return 0;
}

/* embedding_renorm_(Tensor(a!) self, Tensor indices, float max_norm, float norm_type):
 * rows named by indices whose norm exceeds max_norm are scaled to max_norm (in place). */
static int
embedding_renorm_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *w = s[0].u.t, *idx = NULL, *rowv = NULL, *scaled = NULL;
    double max_norm = s[2].u.d, p = s[3].u.d;
    int64_t numel = 1;
    (void)op;
    (void)ks;

    if (w->dim != 2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "'self' must be 2-D");
    }
    if (check_indices(s[1].u.t, "embedding_renorm_") < 0) {
        return -1;
    }
    if (ptl_on_device_path(w)) {
        if (embedding_renorm_device(w, s[1].u.t, max_norm, p) < 0) {
            return -1;
        }
        return ptl_kernel_return_self(s);
    }
    if ((idx = ptl_cast(s[1].u.t, PTL_DTYPE_INT64)) == NULL) {
        goto error;
    }
    for (int d = 0; d < idx->dim; d++) {
        numel *= idx->sizes[d];
    }
    const int64_t *iv = (const int64_t *)ptl_tensor_data(idx);
    for (int64_t i = 0; i < numel; i++) {
        int seen = 0;
        for (int64_t k = 0; k < i && !seen; k++) {
            seen = iv[k] == iv[i];
        }
        if (iv[i] < 0 || iv[i] >= w->sizes[0]) {
            ptl_error_set(PTL_ERR_INDEX, "index out of range in self");
            goto error;
        }
        if (seen) {
            continue;
        }
        PtlIValue sel[3] = {ptl_iv_tensor(w), ptl_iv_int(0), ptl_iv_int(iv[i])};
        if ((rowv = ptl_call_tensor(PTL_OP_select_int, sel)) == NULL) {
            goto error;
        }
        double norm;
        if (row_norm(rowv, p, &norm) < 0) {
            goto error;
        }
        if (norm > max_norm) {
            double f = max_norm / (norm + 1e-7);
            PtlIValue m[2] = {ptl_iv_tensor(rowv), ptl_iv_none()};
            PtlTensorImpl *fw = ptl_wrapped_double(f);
            if (fw == NULL) {
                goto error;
            }
            m[1] = ptl_iv_tensor(fw);
            scaled = ptl_call_tensor(PTL_OP_mul__Tensor, m);
            ptl_decref(fw);
            if (scaled == NULL) {
                goto error;
            }
            PTL_CLEAR(scaled);
        }
        PTL_CLEAR(rowv);
    }
    ptl_decref(idx);
    ptl_incref(w);
    s[0] = ptl_iv_tensor(w);
    return 0;
error:
    ptl_xdecref(idx);
    ptl_xdecref(rowv);
    return -1;
}

/* _ptl_embedding_bag_offsets(Tensor offsets, int num_indices, bool include_last_offset)
 * -> bag: F.embedding_bag's check of 1-D offsets (bag_offsets_host) and the bag of each
 * index (bags_of_offsets), for the paths that take one (Note [Embedding bags]).  Device
 * offsets are read on the host (the max and composite paths read them there too) and the bag
 * goes back to their device. */
static int
embedding_bag_offsets_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *offs = s[0].u.t, *host, *res;
    (void)op;
    (void)ks;
    if ((host = bag_offsets_host(offs, s[1].u.i)) == NULL) {
        return -1;
    }
    res = bags_of_offsets((const int64_t *)ptl_tensor_data(host), host->numel, s[1].u.i,
                          s[2].u.b, offs->device);
    ptl_decref(host);
    if (res == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(res);
    return 0;
}

static const PtlKernelReg embedding_cpu_kernels[] = {
    {PTL_OP_embedding, PTL_KEY_CPU, embedding_cpu},
    {PTL_OP_embedding_dense_backward, PTL_KEY_CPU, embedding_backward_cpu},
    {PTL_OP_embedding_renorm_, PTL_KEY_CPU, embedding_renorm_cpu},
    {PTL_OP__ptl_embedding_bag, PTL_KEY_CPU, embedding_bag_cpu},
    {PTL_OP__ptl_embedding_bag_offsets, PTL_KEY_CPU, embedding_bag_offsets_cpu},
};
PTL_DEFINE_REGISTER(embedding_cpu_kernels)
