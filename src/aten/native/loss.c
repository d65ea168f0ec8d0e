/* loss.c -- the regression losses mse_loss, smooth_l1_loss and huber_loss and their
 * backward ops, each one pass over its operands (Note [Regression losses]).  Mirrors their
 * part of ATen/native/Loss.cpp and cpu/PointwiseOpsKernel.cpp; nll_loss and
 * binary_cross_entropy are in nn.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "../loops.h"
#include "../scalar_math.h"
#include "loss_impl.h"
#include "native.h"
#include "nn_common.h"
#include "reduce_kernels.h"

/* Note [Regression losses]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * mse_loss, smooth_l1_loss and huber_loss, and their backward ops, make one pass over their
 * operands: input and target (and the backward's grad_output) are broadcast to one shape
 * and made contiguous in the dtype they promote to (no copy for the usual contiguous
 * operands of one shape and dtype; float16 and bfloat16 are widened to float32 copies and
 * the result rounded once).  The elementwise loss is computed in that dtype with the
 * formulas of scalar_math.h, in PyTorch's order of operations, so reduction 'none' and the
 * backward give PyTorch's float32 bits.  'mean' and 'sum' add the elementwise losses in
 * double without writing them out: REG_BLOCK losses a time go to a buffer in L1 and are
 * added by the contiguous sum of reduce.c (ptl_red_sum_contiguous).  The elements are cut
 * into chunks whose size depends on their count alone (REG_CHUNK, more when that would make
 * over REG_MAX_CHUNKS chunks), and the chunks' sums are added in order: the threads share
 * the chunks, and the result does not depend on their number.  A grad_output of one element
 * (the backward of 'mean' and 'sum') is read once, not expanded. */
#define REG_CHUNK 8192
/* the reduction argument: at::Reduction's values */
enum { LOSS_NONE = 0, LOSS_MEAN = 1, LOSS_SUM = 2 };
#define REG_MAX_CHUNKS 256
#define REG_BLOCK 512


typedef struct RegJob {
    const char *x, *t, *g;   /* input, target, the backward's grad_output (contiguous) */
    char *out;               /* the elementwise losses or gradients; NULL: only their sum */
    int64_t n, chunk;
    double gv;               /* the backward's grad_output when g is NULL */
    double norm, p;          /* the derivative's norm; beta or delta */
    int backward;            /* the chunks compute the gradient, not the loss */
    double parts[REG_MAX_CHUNKS];
} RegJob;

/* the loss of one element, or its derivative, in float or double */
static inline float
reg_loss_f(PtlRegLoss k, float x, float t, float p)
{
    return k == PTL_REG_MSE         ? ptl_mse_loss_f(x, t, p)
           : k == PTL_REG_SMOOTH_L1 ? ptl_smooth_l1_loss_f(x, t, p)
                                : ptl_huber_loss_f(x, t, p);
}

static inline double
reg_loss_d(PtlRegLoss k, double x, double t, double p)
{
    return k == PTL_REG_MSE         ? ptl_mse_loss_d(x, t, p)
           : k == PTL_REG_SMOOTH_L1 ? ptl_smooth_l1_loss_d(x, t, p)
                                : ptl_huber_loss_d(x, t, p);
}

static inline float
reg_grad_f(PtlRegLoss k, float g, float x, float t, float norm, float p)
{
    return k == PTL_REG_MSE         ? ptl_mse_loss_grad_f(g, x, t, norm, p)
           : k == PTL_REG_SMOOTH_L1 ? ptl_smooth_l1_loss_grad_f(g, x, t, norm, p)
                                : ptl_huber_loss_grad_f(g, x, t, norm, p);
}

static inline double
reg_grad_d(PtlRegLoss k, double g, double x, double t, double norm, double p)
{
    return k == PTL_REG_MSE         ? ptl_mse_loss_grad_d(g, x, t, norm, p)
           : k == PTL_REG_SMOOTH_L1 ? ptl_smooth_l1_loss_grad_d(g, x, t, norm, p)
                                : ptl_huber_loss_grad_d(g, x, t, norm, p);
}

/* Chunk c of the forward: the losses into j->out, or their sum into j->parts[c] (the loss
 * loop vectorises, selects and all; Note [Select formulas] in activation.c). */
__attribute__((always_inline)) static inline void
reg_forward_chunk(RegJob *j, PtlRegLoss k, int f8, int64_t c)
{
    int64_t b = c * j->chunk, e = b + j->chunk < j->n ? b + j->chunk : j->n;
    union {
        double d[REG_BLOCK];
        float f[REG_BLOCK];
    } buf;
    double acc = 0;
    for (int64_t i0 = b; i0 < e; i0 += REG_BLOCK) {
        int64_t m = e - i0 < REG_BLOCK ? e - i0 : REG_BLOCK;
        if (f8) {
            const double *x = (const double *)j->x + i0, *t = (const double *)j->t + i0;
            double *o = j->out != NULL ? (double *)j->out + i0 : buf.d, p = j->p;
            for (int64_t i = 0; i < m; i++) {
                o[i] = reg_loss_d(k, x[i], t[i], p);
            }
        }
        else {
            const float *x = (const float *)j->x + i0, *t = (const float *)j->t + i0;
            float *o = j->out != NULL ? (float *)j->out + i0 : buf.f, p = (float)j->p;
            for (int64_t i = 0; i < m; i++) {
                o[i] = reg_loss_f(k, x[i], t[i], p);
            }
        }
        if (j->out == NULL) {
            acc += ptl_red_sum_contiguous(f8 ? PTL_DTYPE_FLOAT64 : PTL_DTYPE_FLOAT32,
                                          (const char *)&buf, m);
        }
    }
    j->parts[c] = acc;
}

/* Chunk c of the backward: the gradients into j->out */
__attribute__((always_inline)) static inline void
reg_backward_chunk(RegJob *j, PtlRegLoss k, int f8, int64_t c)
{
    int64_t b = c * j->chunk, e = b + j->chunk < j->n ? b + j->chunk : j->n;
    if (f8) {
        const double *x = (const double *)j->x, *t = (const double *)j->t;
        const double *g = (const double *)j->g, gv = j->gv, norm = j->norm, p = j->p;
        double *o = (double *)j->out;
        for (int64_t i = b; i < e; i++) {
            o[i] = reg_grad_d(k, g != NULL ? g[i] : gv, x[i], t[i], norm, p);
        }
    }
    else {
        const float *x = (const float *)j->x, *t = (const float *)j->t;
        const float *g = (const float *)j->g;
        float *o = (float *)j->out, gv = (float)j->gv, norm = (float)j->norm, p = (float)j->p;
        for (int64_t i = b; i < e; i++) {
            o[i] = reg_grad_f(k, g != NULL ? g[i] : gv, x[i], t[i], norm, p);
        }
    }
}

/* The parallel_for bodies of each loss and dtype: thin wrappers that make k and f8
 * constants of their own copy of the chunk loops, compiled for AVX2 and the baseline (Note
 * [Loop clones]; the chunk loops are inlined into each clone). */
#define DEFINE_REG_BODY(NAME, K, F8)                                                      \
    PTL_LOOP_CLONES static int                                                            \
    NAME##_chunks(void *ctx, int64_t b, int64_t e)                                        \
    {                                                                                     \
        RegJob *j = ctx;                                                                  \
        for (int64_t c = b; c < e; c++) {                                                 \
            if (j->backward) {                                                            \
                reg_backward_chunk(j, K, F8, c);                                          \
            }                                                                             \
            else {                                                                        \
                reg_forward_chunk(j, K, F8, c);                                           \
            }                                                                             \
        }                                                                                 \
        return 0;                                                                         \
    }
DEFINE_REG_BODY(mse_f4, PTL_REG_MSE, 0)
DEFINE_REG_BODY(mse_f8, PTL_REG_MSE, 1)
DEFINE_REG_BODY(smooth_l1_f4, PTL_REG_SMOOTH_L1, 0)
DEFINE_REG_BODY(smooth_l1_f8, PTL_REG_SMOOTH_L1, 1)
DEFINE_REG_BODY(huber_f4, PTL_REG_HUBER, 0)
DEFINE_REG_BODY(huber_f8, PTL_REG_HUBER, 1)
#undef DEFINE_REG_BODY

/* ORDER PtlRegLoss, then float32 / float64 */
static const PtlParallelFn reg_fns[3][2] = {{mse_f4_chunks, mse_f8_chunks},
                                            {smooth_l1_f4_chunks, smooth_l1_f8_chunks},
                                            {huber_f4_chunks, huber_f8_chunks}};
const char *
ptl_reg_loss_name(PtlRegLoss k)
{
    static const char *const names[3] = {"mse", "smooth_l1", "huber"};
    return names[k];
}

PtlRegLoss
ptl_reg_loss_kind(const PtlOperator *op)
{
    switch (op->id) {
    case PTL_OP_mse_loss:
    case PTL_OP_mse_loss_backward:
        return PTL_REG_MSE;
    case PTL_OP_smooth_l1_loss:
    case PTL_OP_smooth_l1_loss_backward:
        return PTL_REG_SMOOTH_L1;
    default:
        return PTL_REG_HUBER;
    }
}

int
ptl_reg_loss_check(PtlRegLoss k, double p)
{
    if (k == PTL_REG_SMOOTH_L1 && p < 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "smooth_l1_loss does not support negative values for beta.");
    }
    if (k == PTL_REG_HUBER && p <= 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "huber_loss does not support non-positive values for delta.");
    }
    return 0;
}

/* The nin operands in[] (borrowed) broadcast to one shape (*dim, sizes) and made contiguous
 * in the work dtype of the dtype they promote to (*dt): prep[] (new refs; on error the ones
 * made are released).  An operand marked in `scalar` that holds one element is left NULL
 * (its value is read once).  0 or -1. */
static int
reg_prepare(PtlRegLoss k, int backward, int nin, PtlTensorImpl **in, unsigned scalar,
            PtlTensorImpl **prep, PtlDtype *dt, int *dim, int64_t *sizes)
{
    *dt = in[0]->dtype;
    *dim = in[0]->dim;
    memcpy(sizes, in[0]->sizes, sizeof(int64_t) * (size_t)in[0]->dim);
    for (int i = 1; i < nin; i++) {
        *dt = ptl_promote_types(*dt, in[i]->dtype);
        if (ptl_broadcast_shapes(*dim, sizes, in[i]->dim, in[i]->sizes, dim, sizes) < 0) {
            return -1;
        }
    }
    if (!ptl_dtype_is_floating(*dt)) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s%s_cpu\" not implemented for '%s'",
                             ptl_reg_loss_name(k), backward ? "_backward" : "",
                             ptl_dtype_legacy_name(*dt));
    }
    for (int i = 0; i < nin; i++) {
        prep[i] = NULL;
    }
    for (int i = 0; i < nin; i++) {
        PtlTensorImpl *e;
        if (((scalar >> i) & 1) && in[i]->numel == 1) {
            continue;
        }
        PtlIValue a[3] = {ptl_iv_tensor(in[i]), ptl_iv_intlist(sizes, *dim), ptl_iv_bool(0)};
        if ((e = ptl_call_tensor(PTL_OP_expand, a)) == NULL) {
            goto error;
        }
        prep[i] = nn_prepare(e, nn_work_dtype(*dt));
        ptl_decref(e);
        if (prep[i] == NULL) {
            goto error;
        }
    }
    return 0;
error:
    for (int i = 0; i < nin; i++) {
        PTL_CLEAR(prep[i]);
    }
    return -1;
}

/* Runs the chunks of job for loss k in dtype f8 (Note [Regression losses]); 0 or -1. */
static int
reg_run(RegJob *job, PtlRegLoss k, int f8)
{
    int64_t nchunks = (job->n + REG_CHUNK - 1) / REG_CHUNK;
    job->chunk = nchunks > REG_MAX_CHUNKS ? (job->n + REG_MAX_CHUNKS - 1) / REG_MAX_CHUNKS
                                          : REG_CHUNK;
    nchunks = (job->n + job->chunk - 1) / job->chunk;
    void *token = job->n >= PTL_GRAIN_SIZE ? ptl_nogil_begin() : NULL;
    int rc = ptl_parallel_for(0, nchunks, PTL_GRAIN_SIZE / REG_CHUNK, reg_fns[k][f8], job);
    ptl_nogil_end(token);
    return rc;
}

/* r (stolen: a contiguous result of x's and t's broadcast shape) laid out as TensorIterator
 * lays out a result of x and t, as PyTorch's elementwise losses (reduction 'none') are: r
 * itself when that layout is contiguous (always so for contiguous x and t), else a copy.  A
 * new reference, or NULL with the error set. */
static PtlTensorImpl *
reg_iter_layout(PtlTensorImpl *r, PtlTensorImpl *x, PtlTensorImpl *t)
{
    PtlIterConfig cfg = ptl_iter_config();
    PtlTensorIter it;
    PtlTensorImpl *laid;
    if (r == NULL || (ptl_tensor_is_contiguous(x) && ptl_tensor_is_contiguous(t))) {
        return r;
    }
    cfg.ninputs = 2;
    cfg.inputs[0] = x;
    cfg.inputs[1] = t;
    cfg.no_promote = 3;   /* only the layout is wanted: no cast copies */
    cfg.out_dtype = r->dtype;
    if (ptl_iter_build(&it, &cfg) < 0 || (laid = ptl_iter_finish(&it)) == NULL) {
        ptl_decref(r);
        return NULL;
    }
    if (ptl_tensor_is_contiguous(laid)) {
        ptl_decref(laid);
        return r;
    }
    int rc = ptl_copy_into(laid, r);
    ptl_decref(r);
    if (rc < 0) {
        ptl_decref(laid);
        return NULL;
    }
    return laid;
}

/* huber_loss_backward's operands all in self's dtype (PyTorch's TensorIterator checks them
 * in the order grad_input (like self), self, target, grad_output) */
static int
huber_backward_dtypes_check(const PtlIValue *s)
{
    PtlDtype want = s[1].u.t->dtype;
    static const int order[2] = {2, 0};   /* target, grad_output */
    for (int i = 0; i < 2; i++) {
        PtlDtype got = s[order[i]].u.t->dtype;
        if (got != want) {
            return ptl_error_set(PTL_ERR_RUNTIME, "Found dtype %s but expected %s",
                                 ptl_dtype_legacy_name(got), ptl_dtype_legacy_name(want));
        }
    }
    return 0;
}

int
ptl_reg_loss_backward_check(PtlTensorImpl *const *in)
{
    PtlDtype common = ptl_promote_types(ptl_promote_types(in[0]->dtype, in[1]->dtype),
                                        in[2]->dtype);
    if (!ptl_can_cast(common, in[1]->dtype)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "result type %s can't be cast to the desired output type %s",
                             ptl_dtype_legacy_name(common), ptl_dtype_legacy_name(in[1]->dtype));
    }
    return 0;
}

/* mse_loss(self, target, reduction), smooth_l1_loss(self, target, reduction, beta),
 * huber_loss(self, target, reduction, delta): [*], [*] -> [*] (none) or [] (mean, sum);
 * and their backward ops <loss>_backward(grad_output, self, target, reduction[, beta or
 * delta]): [*] or [], [*], [*] -> [*].  The backward's arguments are the forward's after
 * grad_output (bw = 1); its mean divides by self's own count, as PyTorch's does (not the
 * broadcast one: self (1,) with target (1, 4) is 1). */
static int
reg_loss_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlRegLoss k = ptl_reg_loss_kind(op);
    int bw = op->id == PTL_OP_mse_loss_backward || op->id == PTL_OP_smooth_l1_loss_backward ||
             op->id == PTL_OP_huber_loss_backward;
    PtlTensorImpl *in[3] = {s[0].u.t, s[1].u.t, bw ? s[2].u.t : NULL};
    PtlTensorImpl *prep[3] = {NULL, NULL, NULL}, *out = NULL;
    int64_t red = s[bw + 2].u.i, sizes[PTL_MAX_DIMS];
    double p = k == PTL_REG_MSE ? 0 : ptl_iv_to_double(&s[bw + 3]);
    int dim, rc = -1;
    PtlDtype dt;
    RegJob *job = NULL;
    (void)ks;

    if ((!bw && ptl_reg_loss_check(k, p) < 0) || (op->id == PTL_OP_huber_loss_backward &&
                                                  huber_backward_dtypes_check(s) < 0) ||
        (bw && ptl_reg_loss_backward_check(in) < 0) ||
        reg_prepare(k, bw, 2 + bw, in, (unsigned)bw, prep, &dt, &dim, sizes) < 0) {
        return -1;
    }
    red = red == LOSS_MEAN || red == LOSS_SUM ? red : LOSS_NONE;
    out = bw || red == LOSS_NONE ? ptl_empty(dim, sizes, prep[bw]->dtype, prep[bw]->device)
                                : ptl_empty(0, NULL, prep[bw]->dtype, prep[bw]->device);
    if (out == NULL || (job = malloc(sizeof(*job))) == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "%s_loss%s: out of memory", ptl_reg_loss_name(k),
                      bw ? "_backward" : "");
        goto done;
    }
    *job = (RegJob){.x = ptl_tensor_data(prep[bw]), .t = ptl_tensor_data(prep[bw + 1]),
                    .g = bw && prep[0] ? ptl_tensor_data(prep[0]) : NULL,
                    .gv = bw && !prep[0] ? ptl_item_double(in[0]) : 0,
                    .out = bw || red == LOSS_NONE ? ptl_tensor_data(out) : NULL,
                    .n = prep[bw]->numel, .p = p, .backward = bw,
                    .norm = (k == PTL_REG_MSE ? 2.0 : 1.0) /
                            (red != LOSS_MEAN ? 1.0 : bw ? (double)in[1]->numel
                                                         : (double)prep[bw]->numel)};
    if (reg_run(job, k, prep[bw]->dtype == PTL_DTYPE_FLOAT64) < 0) {
        goto done;
    }
    if (!bw && red != LOSS_NONE) {
        double acc = 0;
        for (int64_t c = 0; c * job->chunk < job->n; c++) {
            acc += job->parts[c];
        }
        ptl_store_double(ptl_tensor_data(out), out->dtype,
                         red == LOSS_MEAN ? acc / (double)job->n : acc);
    }
    out = nn_finish(out, bw ? in[1]->dtype : dt);
    s[0] = ptl_iv_tensor(!bw && red == LOSS_NONE ? reg_iter_layout(out, in[0], in[1]) : out);
    out = NULL;
    rc = s[0].u.t != NULL ? 0 : -1;
done:
    free(job);
    ptl_xdecref(out);
    for (int i = 0; i < 3; i++) {
        ptl_xdecref(prep[i]);
    }
    return rc;
}

static const PtlKernelReg loss_cpu[] = {
    {PTL_OP_mse_loss, PTL_KEY_CPU, reg_loss_cpu},
    {PTL_OP_mse_loss_backward, PTL_KEY_CPU, reg_loss_cpu},
    {PTL_OP_smooth_l1_loss, PTL_KEY_CPU, reg_loss_cpu},
    {PTL_OP_smooth_l1_loss_backward, PTL_KEY_CPU, reg_loss_cpu},
    {PTL_OP_huber_loss, PTL_KEY_CPU, reg_loss_cpu},
    {PTL_OP_huber_loss_backward, PTL_KEY_CPU, reg_loss_cpu},
};
PTL_DEFINE_REGISTER(loss_cpu)
