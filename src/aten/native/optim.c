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
 * Python optimizers fall back to their op-by-op path for anything else. */
#include <math.h>

#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "native.h"

/* Checks that t is a contiguous float tensor shaped and typed like p. */
static int
check_like(const char *opname, const char *what, PtlTensorImpl *p, PtlTensorImpl *t)
{
    if (t->dtype != p->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: %s must have the dtype of self", opname,
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

typedef struct {
    char *p, *buf;
    const char *g;
    double lr, momentum, dampening, wd;
    int nesterov, maximize, first;
} SgdJob;

#define DEFINE_SGD_CHUNK(T, DT)                                                           \
    static int                                                                            \
    sgd_chunk_##DT(void *ctx, int64_t b, int64_t e)                                       \
    {                                                                                     \
        const SgdJob *j = (const SgdJob *)ctx;                                            \
        T *restrict p = (T *)j->p, *restrict buf = (T *)j->buf;                           \
        const T *restrict gr = (const T *)j->g;                                           \
        const T lr = (T)j->lr, mom = (T)j->momentum, damp = (T)(1.0 - j->dampening);      \
        const T wd = (T)j->wd, sign = j->maximize ? (T)-1 : (T)1;                         \
        const int decay = j->wd != 0, nesterov = j->nesterov, first = j->first;           \
        for (int64_t i = b; i < e; i++) {                                                 \
            T g = sign * gr[i];                                                           \
            if (decay) {                                                                  \
                g = g + wd * p[i];                                                        \
            }                                                                             \
            if (buf != NULL) {                                                            \
                T m = first ? g : buf[i] * mom + damp * g;                                \
                buf[i] = m;                                                               \
                g = nesterov ? g + mom * m : m;                                           \
            }                                                                             \
            p[i] = p[i] + (-lr) * g;                                                      \
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
    SgdJob job = {ptl_tensor_data(p), buf != NULL ? ptl_tensor_data(buf) : NULL,
                  ptl_tensor_data(g), ptl_iv_to_double(&s[3]), ptl_iv_to_double(&s[4]),
                  ptl_iv_to_double(&s[5]), ptl_iv_to_double(&s[6]), s[7].u.b, s[8].u.b,
                  s[9].u.b};
    int64_t n = ptl_tensor_is_meta(p) ? 0 : p->numel;   /* meta: no data to update */
    void *token = n >= PTL_GRAIN_SIZE ? ptl_nogil_begin() : NULL;
    int rc = ptl_parallel_for(0, n, PTL_GRAIN_SIZE,
                              p->dtype == PTL_DTYPE_FLOAT32 ? sgd_chunk_f4 : sgd_chunk_f8, &job);
    ptl_nogil_end(token);
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

typedef struct {
    char *p, *m, *v, *vmax;
    const char *g;
    double lr, beta1, beta2, wd, eps, step_size, bc2_sqrt;
    int maximize, decoupled;
} AdamJob;

#define DEFINE_ADAM_CHUNK(T, DT, SQRT)                                                    \
    static int                                                                            \
    adam_chunk_##DT(void *ctx, int64_t b, int64_t e)                                      \
    {                                                                                     \
        const AdamJob *j = (const AdamJob *)ctx;                                          \
        T *restrict p = (T *)j->p, *restrict m = (T *)j->m, *restrict v = (T *)j->v;      \
        T *restrict vmax = (T *)j->vmax;                                                  \
        const T *restrict gr = (const T *)j->g;                                           \
        const T sign = j->maximize ? (T)-1 : (T)1;                                        \
        const int has_wd = j->wd != 0, decoupled = j->decoupled;                          \
        const T w1 = (T)(1.0 - j->beta1), b2 = (T)j->beta2, w2 = (T)(1.0 - j->beta2);     \
        const T wd = (T)j->wd, decay = (T)(1.0 - j->lr * j->wd), eps = (T)j->eps;         \
        const T bc2s = (T)j->bc2_sqrt, neg_step = (T)(-j->step_size);                     \
        for (int64_t i = b; i < e; i++) {                                                 \
            T g = sign * gr[i];                                                           \
            T x = p[i];                                                                   \
            if (has_wd) {                                                                 \
                if (decoupled) {                                                          \
                    x = x * decay;                                                        \
                }                                                                         \
                else {                                                                    \
                    g = g + wd * x;                                                       \
                }                                                                         \
            }                                                                             \
            /* lerp with a weight below 1/2: start + weight (end - start) */              \
            T mi = m[i] + w1 * (g - m[i]);                                                \
            T vi = v[i] * b2;                                                             \
            vi = vi + w2 * (g * g);                                                       \
            m[i] = mi;                                                                    \
            v[i] = vi;                                                                    \
            if (vmax != NULL) {                                                           \
                vi = vmax[i] > vi || isnan(vmax[i]) ? vmax[i] : vi;                       \
                vmax[i] = vi;                                                             \
            }                                                                             \
            T denom = SQRT(vi) / bc2s + eps;                                              \
            p[i] = x + neg_step * (mi / denom);                                           \
        }                                                                                 \
        return 0;                                                                         \
    }
DEFINE_ADAM_CHUNK(float, f4, sqrtf)
DEFINE_ADAM_CHUNK(double, f8, sqrt)
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
    AdamJob job = {ptl_tensor_data(p), ptl_tensor_data(m), ptl_tensor_data(v),
                   vmax != NULL ? ptl_tensor_data(vmax) : NULL, ptl_tensor_data(g), lr,
                   beta1, beta2, ptl_iv_to_double(&s[9]), ptl_iv_to_double(&s[10]),
                   lr / (1.0 - pow(beta1, step)), sqrt(1.0 - pow(beta2, step)), s[11].u.b,
                   s[12].u.b};
    int64_t n = ptl_tensor_is_meta(p) ? 0 : p->numel;   /* meta: no data to update */
    void *token = n >= PTL_GRAIN_SIZE ? ptl_nogil_begin() : NULL;
    int rc = ptl_parallel_for(0, n, PTL_GRAIN_SIZE,
                              p->dtype == PTL_DTYPE_FLOAT32 ? adam_chunk_f4 : adam_chunk_f8,
                              &job);
    ptl_nogil_end(token);
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
