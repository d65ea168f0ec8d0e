/* optim.c -- fused per-parameter optimizer steps for SGD and Adam/AdamW.  Plays the role of
 * ATen/native/FusedSGD.cpp and FusedAdam.cpp (cpu/FusedSGDKernel.cpp, FusedAdamKernel.cpp).
 *
 * Note [Fused optimizer step]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * pytorchlite.optim's SGD and Adam would otherwise run four to eight in-place ops per
 * parameter, each a full pass over memory plus a dispatch.  These kernels do one pass,
 * element by element, applying torch's single-tensor formulas in the same order and in the
 * parameter's dtype (float32 rounds after each step as the separate ops would):
 *
 *   SGD:   g = +-grad (+ wd p);  buf = g (first step) or momentum buf + (1 - dampening) g;
 *          g = g + momentum buf (nesterov) or buf;  p = p - lr g
 *   Adam:  g = +-grad;  p = (1 - lr wd) p (decoupled) or g = g + wd p;
 *          m = lerp(m, g, 1 - beta1);  v = beta2 v + (1 - beta2) g g;  vmax = max(vmax, v);
 *          p = p - lr / bc1 * m / (sqrt(v or vmax) / sqrt(bc2) + eps)
 *
 * with bc1 = 1 - beta1^step and bc2 = 1 - beta2^step computed in double, as Python does.
 * Only contiguous float32/float64 tensors of one dtype and one shape are accepted; the
 * Python optimizers fall back to their op-by-op path for anything else.  The element's
 * step is optim_step.h's, which the CUDA kernels (src/cuda/optim.cu) run too.  The chunk
 * loops are loop clones (Note [Loop clones] in loops.h): gcc vectorizes them 8 floats wide
 * with AVX2 instead of 4 with SSE2, without contracting into FMAs, so the bits do not change
 * (535818 float32 parameters, one thread: SGD with momentum 98-125 -> 81-85 us, Adam 447-492
 * -> 227-233 us; a copy of that size takes 48 us). */
#include <math.h>

#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "../loops.h"
#include "device_reduce.h"
#include "native.h"
#include "optim_step.h"

/* Checks that t is a contiguous float tensor shaped and typed like p. */
static int
check_like(const char *opname, const char *what, PtlTensorImpl *p, PtlTensorImpl *t)
{
    if (t->dtype != p->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: %s must have the dtype of self", opname,
                             what);
    }
    if (t->device.type != p->device.type || t->device.index != p->device.index) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: %s must be on the device of self", opname,
                             what);
    }
    if (t->numel != p->numel || t->dim != p->dim) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: %s must have the shape of self", opname,
                             what);
    }
    for (int i = 0; i < p->dim; i++) {
        if (t->sizes[i] != p->sizes[i]) {
            return ptl_error_set(PTL_ERR_RUNTIME, "%s: %s must have the shape of self",
                                 opname, what);
        }
    }
    if (!ptl_tensor_is_contiguous(t)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: %s must be contiguous", opname, what);
    }
    return 0;
}

static int
check_self(const char *opname, PtlTensorImpl *p)
{
    if (p->dtype != PTL_DTYPE_FLOAT32 && p->dtype != PTL_DTYPE_FLOAT64) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: expected a float32 or float64 tensor, got %s",
                             opname, ptl_dtype_legacy_name(p->dtype));
    }
    if (!ptl_tensor_is_contiguous(p)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: self must be contiguous", opname);
    }
    return 0;
}

/* ---- SGD ---- */

int (*ptl_device_sgd_hook)(const PtlSgdStepArgs *a);
int (*ptl_device_adam_hook)(const PtlAdamStepArgs *a);

/* 1 when the step runs through the device hook: a CUDA tensor, or any tensor while the
 * tests emulate the CUDA kernels (device_reduce.h) */
static int
on_device(const PtlTensorImpl *t, int has_hook)
{
    return (t->device.type == PTL_DEVICE_CUDA || ptl_device_reduce_emulation) && has_hook;
}

#define DEFINE_SGD_CHUNK(T, DT)                                                           \
    static PTL_LOOP_CLONES int                                                            \
    sgd_chunk_##DT(void *ctx, int64_t b, int64_t e)                                       \
    {                                                                                     \
        const PtlSgdStepArgs *a = (const PtlSgdStepArgs *)ctx;                            \
        const PtlSgdConsts_##DT c = ptl_sgd_consts_##DT(a);                               \
        T *p = (T *)a->p, *buf = (T *)a->buf;                                             \
        const T *gr = (const T *)a->g;                                                    \
        for (int64_t i = b; i < e; i++) {                                                 \
            ptl_sgd_step_##DT(&c, p, buf, gr, i);                                         \
        }                                                                                 \
        return 0;                                                                         \
    }
DEFINE_SGD_CHUNK(float, f4)
DEFINE_SGD_CHUNK(double, f8)
#undef DEFINE_SGD_CHUNK

/* _fused_sgd_step_(Tensor(a!) self, Tensor grad, Tensor? momentum_buffer, float lr,
 *                  float momentum, float dampening, float weight_decay, bool nesterov,
 *                  bool maximize, bool first) -> Tensor(a!)
 * self, grad, momentum_buffer: [*] alike; the buffer is written (first: set to the grad). */
static int
fused_sgd_step_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    const char *name = "_fused_sgd_step_";
    PtlTensorImpl *p = s[0].u.t, *g = s[1].u.t;
    PtlTensorImpl *buf = s[2].tag == PTL_IV_TENSOR ? s[2].u.t : NULL;
    if (check_self(name, p) < 0 || check_like(name, "grad", p, g) < 0 ||
        (buf != NULL && check_like(name, "momentum_buffer", p, buf) < 0)) {
        return -1;
    }
    PtlSgdStepArgs job = {p->dtype, s[7].u.b, s[8].u.b, s[9].u.b, ptl_tensor_data(p),
                          buf != NULL ? ptl_tensor_data(buf) : NULL, ptl_tensor_data(g),
                          ptl_tensor_is_meta(p) ? 0 : p->numel,   /* meta: no data */
                          ptl_iv_to_double(&s[3]), ptl_iv_to_double(&s[4]),
                          ptl_iv_to_double(&s[5]), ptl_iv_to_double(&s[6])};
    int rc;
    if (job.n > 0 && on_device(p, ptl_device_sgd_hook != NULL)) {
        rc = ptl_device_sgd_hook(&job);
    }
    else {
        void *token = job.n >= PTL_GRAIN_SIZE ? ptl_nogil_begin() : NULL;
        rc = ptl_parallel_for(0, job.n, PTL_GRAIN_SIZE,
                              p->dtype == PTL_DTYPE_FLOAT32 ? sgd_chunk_f4 : sgd_chunk_f8, &job);
        ptl_nogil_end(token);
    }
    if (rc < 0) {
        return -1;
    }
    ptl_tensor_bump_version(p);
    if (buf != NULL) {
        ptl_tensor_bump_version(buf);
    }
    ptl_incref(p);
    s[0] = ptl_iv_tensor(p);
    return 0;
}

/* ---- Adam / AdamW ---- */

#define DEFINE_ADAM_CHUNK(T, DT)                                                          \
    static PTL_LOOP_CLONES int                                                            \
    adam_chunk_##DT(void *ctx, int64_t b, int64_t e)                                      \
    {                                                                                     \
        const PtlAdamStepArgs *a = (const PtlAdamStepArgs *)ctx;                          \
        const PtlAdamConsts_##DT c = ptl_adam_consts_##DT(a);                             \
        T *p = (T *)a->p, *m = (T *)a->m, *v = (T *)a->v, *vmax = (T *)a->vmax;           \
        const T *gr = (const T *)a->g;                                                    \
        for (int64_t i = b; i < e; i++) {                                                 \
            ptl_adam_step_##DT(&c, p, m, v, vmax, gr, i);                                 \
        }                                                                                 \
        return 0;                                                                         \
    }
DEFINE_ADAM_CHUNK(float, f4)
DEFINE_ADAM_CHUNK(double, f8)
#undef DEFINE_ADAM_CHUNK

/* _fused_adam_step_(Tensor(a!) self, Tensor grad, Tensor exp_avg, Tensor exp_avg_sq,
 *                   Tensor? max_exp_avg_sq, float step, float lr, float beta1, float beta2,
 *                   float weight_decay, float eps, bool maximize, bool decoupled)
 *                   -> Tensor(a!)
 * all tensors [*] alike; exp_avg, exp_avg_sq (and max_exp_avg_sq for amsgrad) are written. */
static int
fused_adam_step_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    const char *name = "_fused_adam_step_";
    PtlTensorImpl *p = s[0].u.t, *g = s[1].u.t, *m = s[2].u.t, *v = s[3].u.t;
    PtlTensorImpl *vmax = s[4].tag == PTL_IV_TENSOR ? s[4].u.t : NULL;
    if (check_self(name, p) < 0 || check_like(name, "grad", p, g) < 0 ||
        check_like(name, "exp_avg", p, m) < 0 || check_like(name, "exp_avg_sq", p, v) < 0 ||
        (vmax != NULL && check_like(name, "max_exp_avg_sq", p, vmax) < 0)) {
        return -1;
    }
    double step = ptl_iv_to_double(&s[5]), lr = ptl_iv_to_double(&s[6]);
    double beta1 = ptl_iv_to_double(&s[7]), beta2 = ptl_iv_to_double(&s[8]);
    PtlAdamStepArgs job = {p->dtype, s[11].u.b, s[12].u.b, ptl_tensor_data(p),
                           ptl_tensor_data(m), ptl_tensor_data(v),
                           vmax != NULL ? ptl_tensor_data(vmax) : NULL, ptl_tensor_data(g),
                           ptl_tensor_is_meta(p) ? 0 : p->numel,   /* meta: no data */
                           lr, beta1, beta2, ptl_iv_to_double(&s[9]), ptl_iv_to_double(&s[10]),
                           lr / (1.0 - pow(beta1, step)), sqrt(1.0 - pow(beta2, step))};
    int rc;
    if (job.n > 0 && on_device(p, ptl_device_adam_hook != NULL)) {
        rc = ptl_device_adam_hook(&job);
    }
    else {
        void *token = job.n >= PTL_GRAIN_SIZE ? ptl_nogil_begin() : NULL;
        rc = ptl_parallel_for(0, job.n, PTL_GRAIN_SIZE,
                              p->dtype == PTL_DTYPE_FLOAT32 ? adam_chunk_f4 : adam_chunk_f8,
                              &job);
        ptl_nogil_end(token);
    }
    if (rc < 0) {
        return -1;
    }
    ptl_tensor_bump_version(p);
    ptl_tensor_bump_version(m);
    ptl_tensor_bump_version(v);
    if (vmax != NULL) {
        ptl_tensor_bump_version(vmax);
    }
    ptl_incref(p);
    s[0] = ptl_iv_tensor(p);
    return 0;
}

static const PtlKernelReg optim_cpu[] = {
    {PTL_OP__fused_sgd_step_, PTL_KEY_CPU, fused_sgd_step_cpu},
    {PTL_OP__fused_adam_step_, PTL_KEY_CPU, fused_adam_step_cpu},
};
PTL_DEFINE_REGISTER(optim_cpu)
