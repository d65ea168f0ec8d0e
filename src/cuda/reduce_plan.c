/* reduce_plan.c -- the host side of the reduction and softmax kernels, in every build: the
 * plans (Note [CUDA reduction plan] in reduce_plan.h), the entry points reduce.c and nn.c
 * call for CUDA tensors, and the kernels' emulation on the host that the CPU tests run
 * (the same per-thread functions, block tree and grid loops as reduce.cu, over host
 * memory). */
#include "reduce_plan.h"

#include <stdlib.h>
#include <string.h>

#include "../aten/native/native.h"
#include "../c10/error.h"
#include "attention_plan.h"
#include "resample_plan.h"
#include "rnn_plan.h"
#include "search_plan.h"

/* the figures of the device the default tuning assumes when it cannot ask (132 SMs) */
#define DEFAULT_SMS 132
#define MAX_DEVICES 64

/* each device's SM count once asked (0: not yet): cudaGetDeviceProperties is too slow to
 * call per reduction */
static int device_sms[MAX_DEVICES];

static PtlCudaReduceTuning emulation_tuning;
static int64_t emulation_counts[PTL_CUDA_EMU_COUNT];

void
ptl_cuda_set_kernel_hooks(void)
{
    ptl_device_reduce_hook = ptl_cuda_reduce;
    ptl_device_softmax_hook = ptl_cuda_softmax;
    ptl_device_layer_norm_hook = ptl_cuda_layer_norm;
    ptl_device_nll_hook = ptl_cuda_nll;
    ptl_device_embedding_hook = ptl_cuda_embedding;
    ptl_device_batch_norm_hook = ptl_cuda_batch_norm;
    ptl_device_resample_hook = ptl_cuda_resample;
    ptl_device_grid_sampler_hook = ptl_cuda_grid_sampler;
    ptl_device_rnn_step_hook = ptl_cuda_rnn_step;
    ptl_device_conv_hook = ptl_cuda_conv;
    ptl_device_pool_hook = ptl_cuda_pool;
    ptl_device_random_hook = ptl_cuda_random;
    ptl_device_sgd_hook = ptl_cuda_sgd_step;
    ptl_device_adam_hook = ptl_cuda_adam_step;
    ptl_device_scatter_hook = ptl_cuda_scatter_gather;
    ptl_device_adv_index_hook = ptl_cuda_adv_index;
    ptl_device_cat_hook = ptl_cuda_cat;
    ptl_device_sort_hook = ptl_cuda_sort;
    ptl_device_attention_hook = ptl_cuda_attention;
    ptl_device_select_hook = ptl_cuda_select;
    ptl_device_take_hook = ptl_cuda_take;
    ptl_device_shape_hook = ptl_cuda_shape;
    ptl_device_scan_hook = ptl_cuda_scan;
    ptl_device_search_hook = ptl_cuda_search;
}

void
ptl_cuda_set_kernel_emulation(const PtlCudaReduceTuning *t)
{
    ptl_device_reduce_emulation = t != NULL;
    ptl_cuda_set_kernel_hooks();
    if (t != NULL) {
        emulation_tuning = *t;
        memset(emulation_counts, 0, sizeof(emulation_counts));
    }
}

void
ptl_cuda_kernel_emulation_counts(int64_t counts[PTL_CUDA_EMU_COUNT])
{
    memcpy(counts, emulation_counts, sizeof(emulation_counts));
}

void
ptl_cuda_kernel_emulation_ran(int which)
{
    emulation_counts[which]++;
}

PtlCudaReduceTuning
ptl_cuda_reduce_tuning(void)
{
    PtlCudaReduceTuning t;
    PtlCudaDeviceProperties props;
    int device = 0, sms = DEFAULT_SMS;
    if (ptl_device_reduce_emulation) {
        return emulation_tuning;
    }
    if (ptl_cuda_current_device(&device) == 0 && device >= 0 && device < MAX_DEVICES) {
        if (device_sms[device] == 0 && ptl_cuda_get_device_properties(device, &props) == 0) {
            device_sms[device] = props.multi_processor_count;
        }
        sms = device_sms[device] > 0 ? device_sms[device] : DEFAULT_SMS;
    }
    ptl_error_clear();
    t.max_threads = 512;
    t.target_blocks = 4 * (int64_t)sms;
    t.max_grid = 32 * (int64_t)sms;
    t.min_chunk = 4096;
    return t;
}

static int64_t
pow2_at_least(int64_t n)
{
    int64_t p = 1;
    while (p < n) {
        p *= 2;
    }
    return p;
}

static int64_t
clamp_block(int64_t n, const PtlCudaReduceTuning *t)
{
    n = pow2_at_least(n);
    return n < PTL_CUDA_WARP ? PTL_CUDA_WARP : n > t->max_threads ? t->max_threads : n;
}

static int64_t
min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

PtlCudaReducePlan
ptl_cuda_reduce_plan(const PtlDeviceReduceArgs *a, const PtlCudaReduceTuning *t)
{
    PtlCudaReducePlan plan;
    memset(&plan, 0, sizeof(plan));
    if (a->nout == 0) {
        return plan;
    }
    /* the innermost kept dim that moves: 0 when every output reads the same elements */
    int64_t kept = 0;
    for (int d = a->nk - 1; d >= 0 && kept == 0; d--) {
        kept = a->ksize[d] != 1 ? llabs(a->kstride[d]) : 0;
    }
    int64_t reduced = llabs(a->rstride[a->nr - 1]);
    int rows = a->nout < PTL_CUDA_WARP ||
               (a->R >= PTL_CUDA_WARP && (kept == 0 || reduced < kept));
    int64_t blocks;
    if (rows) {
        plan.layout = PTL_CUDA_LAYOUT_BLOCK_PER_OUTPUT;
        plan.block = (int32_t)clamp_block(a->R, t);
        blocks = a->nout;
    }
    else {
        plan.layout = PTL_CUDA_LAYOUT_THREAD_PER_OUTPUT;
        plan.block = (int32_t)clamp_block(a->nout, t);
        blocks = (a->nout + plan.block - 1) / plan.block;
    }
    plan.nsplit = 1;
    if (blocks < t->target_blocks && a->R >= 2 * t->min_chunk) {
        plan.nsplit = min64(min64(a->R / t->min_chunk, (t->target_blocks + blocks - 1) / blocks),
                            65535);
    }
    plan.chunk = (a->R + plan.nsplit - 1) / plan.nsplit;
    plan.nsplit = plan.chunk > 0 ? (a->R + plan.chunk - 1) / plan.chunk : 1;
    plan.grid = min64(blocks, t->max_grid);
    if (plan.nsplit > 1) {
        plan.finish_grid = min64((a->nout + plan.block - 1) / plan.block, t->max_grid);
        plan.workspace_bytes = a->nout * plan.nsplit * (int64_t)sizeof(PtlRedAcc);
    }
    return plan;
}

PtlCudaSoftmaxPlan
ptl_cuda_softmax_plan(const PtlDeviceSoftmaxArgs *a, const PtlCudaReduceTuning *t)
{
    PtlCudaSoftmaxPlan plan;
    int64_t lines = a->outer * a->inner;
    memset(&plan, 0, sizeof(plan));
    if (lines == 0 || a->n == 0) {
        return plan;
    }
    if (a->inner == 1) {
        plan.layout = PTL_CUDA_LAYOUT_BLOCK_PER_OUTPUT;
        plan.block = (int32_t)clamp_block(a->n, t);
        plan.grid = min64(lines, t->max_grid);
    }
    else {
        plan.layout = PTL_CUDA_LAYOUT_THREAD_PER_OUTPUT;
        plan.block = (int32_t)clamp_block(lines, t);
        plan.grid = min64((lines + plan.block - 1) / plan.block, t->max_grid);
    }
    return plan;
}

/* ---- the emulation: reduce.cu's kernels, block by block and thread by thread ---- */

/* shfl_down's tree over one warp's values v[0..32): v[0] gets the warp's total */
static void
warp_tree(int kind, int use_int, double p, PtlRedAcc *v)
{
    for (int offset = PTL_CUDA_WARP / 2; offset > 0; offset /= 2) {
        for (int lane = 0; lane + offset < PTL_CUDA_WARP; lane++) {
            ptl_red_combine(kind, use_int, p, &v[lane], &v[lane + offset]);
        }
    }
}

PtlRedAcc
ptl_cuda_block_tree(int kind, int use_int, double p, PtlRedAcc *acc, int block)
{
    PtlRedAcc smem[PTL_CUDA_WARP];
    int nwarps = block / PTL_CUDA_WARP;
    for (int w = 0; w < nwarps; w++) {
        warp_tree(kind, use_int, p, acc + w * PTL_CUDA_WARP);
        smem[w] = acc[w * PTL_CUDA_WARP];
    }
    for (int lane = nwarps; lane < PTL_CUDA_WARP; lane++) {
        smem[lane] = ptl_red_init(kind, p);
    }
    warp_tree(kind, use_int, p, smem);
    return smem[0];
}

static void
emit(const PtlDeviceReduceArgs *a, const PtlCudaReducePlan *plan, PtlRedAcc *ws, int64_t o,
     int64_t y, const PtlRedAcc *acc)
{
    if (plan->nsplit == 1) {
        ptl_red_finish(a->kind, a, acc, o);
    }
    else {
        ws[o * plan->nsplit + y] = *acc;
    }
}

static int
emulate_reduce(const PtlDeviceReduceArgs *a, const PtlCudaReducePlan *plan, PtlRedAcc *ws)
{
    const int64_t block = plan->block;
    PtlRedAcc *acc = malloc(sizeof(PtlRedAcc) * (size_t)block);
    if (acc == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory");
    }
    emulation_counts[plan->layout == PTL_CUDA_LAYOUT_BLOCK_PER_OUTPUT ? PTL_CUDA_EMU_ROWS
                                                                      : PTL_CUDA_EMU_COLUMNS]++;
    emulation_counts[PTL_CUDA_EMU_SPLIT] += plan->nsplit > 1;
    for (int64_t y = 0; y < plan->nsplit; y++) {
        int64_t r0, r1;
        ptl_red_split_range(plan, a->R, y, &r0, &r1);
        for (int64_t bx = 0; bx < plan->grid; bx++) {
            if (plan->layout == PTL_CUDA_LAYOUT_BLOCK_PER_OUTPUT) {
                for (int64_t o = bx; o < a->nout; o += plan->grid) {
                    for (int64_t t = 0; t < block; t++) {
                        acc[t] = ptl_red_thread_acc(a->kind, a, o, r0, r1, t, block);
                    }
                    PtlRedAcc total =
                        ptl_cuda_block_tree(a->kind, a->use_int, a->p, acc, (int)block);
                    emit(a, plan, ws, o, y, &total);
                }
                continue;
            }
            for (int64_t t = 0; t < block; t++) {
                for (int64_t o = bx * block + t; o < a->nout; o += plan->grid * block) {
                    PtlRedAcc one = ptl_red_thread_acc(a->kind, a, o, r0, r1, 0, 1);
                    emit(a, plan, ws, o, y, &one);
                }
            }
        }
    }
    for (int64_t bx = 0; bx < plan->finish_grid; bx++) {
        for (int64_t t = 0; t < block; t++) {
            for (int64_t o = bx * block + t; o < a->nout; o += plan->finish_grid * block) {
                ptl_red_finish_split(a->kind, a, ws, plan->nsplit, o);
            }
        }
    }
    free(acc);
    return 0;
}

static int
emulate_softmax(const PtlDeviceSoftmaxArgs *a, const PtlCudaSoftmaxPlan *plan)
{
    const int64_t block = plan->block, lines = a->outer * a->inner;
    PtlRedAcc *acc = malloc(sizeof(PtlRedAcc) * (size_t)block);
    if (acc == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory");
    }
    emulation_counts[plan->layout == PTL_CUDA_LAYOUT_BLOCK_PER_OUTPUT
                         ? PTL_CUDA_EMU_SOFTMAX_ROWS
                         : PTL_CUDA_EMU_SOFTMAX_LINES]++;
    for (int64_t bx = 0; bx < plan->grid; bx++) {
        if (plan->layout == PTL_CUDA_LAYOUT_BLOCK_PER_OUTPUT) {
            for (int64_t l = bx; l < lines; l += plan->grid) {
                double shift = 0;
                if (a->y == NULL) {
                    for (int64_t t = 0; t < block; t++) {
                        acc[t] = ptl_softmax_thread_max(a, l, t, block);
                    }
                    shift = ptl_softmax_shift(
                        ptl_cuda_block_tree(PTL_DEVICE_RED_MAX, 0, 0, acc, (int)block).a);
                }
                for (int64_t t = 0; t < block; t++) {
                    acc[t] = ptl_softmax_thread_sum(a, l, shift, t, block);
                }
                double sum = ptl_cuda_block_tree(PTL_DEVICE_RED_SUM, 0, 0, acc, (int)block).a;
                for (int64_t t = 0; t < block; t++) {
                    ptl_softmax_write(a, l, shift, sum, t, block);
                }
            }
            continue;
        }
        for (int64_t t = 0; t < block; t++) {
            for (int64_t l = bx * block + t; l < lines; l += plan->grid * block) {
                double shift =
                    a->y == NULL ? ptl_softmax_shift(ptl_softmax_thread_max(a, l, 0, 1).a) : 0;
                double sum = ptl_softmax_thread_sum(a, l, shift, 0, 1).a;
                ptl_softmax_write(a, l, shift, sum, 0, 1);
            }
        }
    }
    free(acc);
    return 0;
}

/* ---- the entry points ---- */

/* Merges neighbouring kept dims whose strides line up and drops size-1 ones (the outputs
 * are contiguous, so only the input's strides decide). */
static void
coalesce_kept(PtlDeviceReduceArgs *a)
{
    int n = 0;
    for (int d = 0; d < a->nk; d++) {
        if (a->ksize[d] == 1) {
            continue;
        }
        if (n > 0 && a->kstride[n - 1] == a->kstride[d] * a->ksize[d]) {
            a->ksize[n - 1] *= a->ksize[d];
            a->kstride[n - 1] = a->kstride[d];
        }
        else {
            a->ksize[n] = a->ksize[d];
            a->kstride[n++] = a->kstride[d];
        }
    }
    a->nk = n;
}

int
ptl_cuda_reduce(const PtlDeviceReduceArgs *args)
{
    PtlDeviceReduceArgs a = *args;
    PtlCudaReduceTuning tuning = ptl_cuda_reduce_tuning();
    coalesce_kept(&a);
    PtlCudaReducePlan plan = ptl_cuda_reduce_plan(&a, &tuning);
    int rc;
    if (plan.grid == 0) {
        return 0;
    }
    if (ptl_device_reduce_emulation) {
        PtlRedAcc *ws = NULL;
        if (plan.workspace_bytes > 0 && (ws = malloc((size_t)plan.workspace_bytes)) == NULL) {
            return ptl_error_set(PTL_ERR_MEMORY, "out of memory");
        }
        rc = emulate_reduce(&a, &plan, ws);
        free(ws);
        return rc;
    }
    PtlTensorImpl *ws = NULL;
    int device = 0;
    if (plan.workspace_bytes > 0) {
        PtlDevice dev = {PTL_DEVICE_CUDA, 0};
        if (ptl_cuda_current_device(&device) < 0) {
            return -1;
        }
        dev.index = (int8_t)device;
        if ((ws = ptl_empty(1, &plan.workspace_bytes, PTL_DTYPE_UINT8, dev)) == NULL) {
            return -1;
        }
    }
    rc = ptl_cuda_reduce_launch(&a, &plan, ws != NULL ? ptl_tensor_data(ws) : NULL);
    /* released at once: the caching allocator hands the block out again only to work on
     * the same stream, which runs after these kernels */
    ptl_xdecref(ws);
    return rc;
}

int
ptl_cuda_softmax(const PtlDeviceSoftmaxArgs *a)
{
    PtlCudaReduceTuning tuning = ptl_cuda_reduce_tuning();
    PtlCudaSoftmaxPlan plan = ptl_cuda_softmax_plan(a, &tuning);
    if (plan.grid == 0) {
        return 0;
    }
    return ptl_device_reduce_emulation ? emulate_softmax(a, &plan) : ptl_cuda_softmax_launch(a, &plan);
}

static void
scan_line(const void *a, int64_t l, int64_t *ws)
{
    (void)ws;
    ptl_scan_line(a, l);
}

int
ptl_cuda_scan(const PtlDeviceScanArgs *a)
{
    PtlCudaReduceTuning tuning = ptl_cuda_reduce_tuning();
    PtlCudaNnPlan elems = ptl_cuda_elems_plan(a->nlines, &tuning);
    if (a->nlines == 0) {
        return 0;
    }
    if (!ptl_device_reduce_emulation) {
        return ptl_cuda_scan_launch(a, &elems);
    }
    ptl_cuda_kernel_emulation_ran(PTL_CUDA_EMU_SCAN);
    ptl_cuda_emulate_elems(&elems, a->nlines, scan_line, a, NULL);
    return 0;
}
