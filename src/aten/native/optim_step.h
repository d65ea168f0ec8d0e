/* optim_step.h -- the per-element math of the fused optimizer steps (Note [Fused optimizer
 * step] in optim.c), PTL_HD so that the CPU kernels (optim.c) and the CUDA kernels
 * (src/cuda/optim.cu) run one source, and the hooks through which optim.c hands a step on
 * a CUDA tensor to the backend without including it (src/cuda/optim_plan.c sets them).
 * Every product that feeds an add is rounded apart (Note [Products rounded apart] in
 * c10/macros.h), so the device gives the CPU's bits. */
#ifndef PTL_ATEN_NATIVE_OPTIM_STEP_H
#define PTL_ATEN_NATIVE_OPTIM_STEP_H

#include <math.h>
#include <stdint.h>

#include "../../c10/macros.h"

#ifdef __cplusplus
extern "C" {
#endif

/* _fused_sgd_step_ over n contiguous elements of dtype (float32 or float64); buf NULL
 * without momentum.  Plain data: a kernel parameter. */
typedef struct PtlSgdStepArgs {
    int32_t dtype, nesterov, maximize, first;
    char *p, *buf;
    const char *g;
    int64_t n;
    double lr, momentum, dampening, wd;
} PtlSgdStepArgs;

/* _fused_adam_step_ likewise; vmax NULL without amsgrad.  step_size = lr / bc1 and
 * bc2_sqrt = sqrt(bc2), computed once in double by the caller. */
typedef struct PtlAdamStepArgs {
    int32_t dtype, maximize, decoupled;
    char *p, *m, *v, *vmax;
    const char *g;
    int64_t n;
    double lr, beta1, beta2, wd, eps, step_size, bc2_sqrt;
} PtlAdamStepArgs;

/* Set by the CUDA backend (NULL until then); 0, or -1 with an error set.  They run for CUDA
 * tensors and, while ptl_device_reduce_emulation is on, for CPU tensors too. */
extern int (*ptl_device_sgd_hook)(const PtlSgdStepArgs *a);
extern int (*ptl_device_adam_hook)(const PtlAdamStepArgs *a);

#ifdef __cplusplus
}
#endif

/* For T (suffix SUF, products MUL, square root SQRT): the step's constants in T, made once
 * per call (ptl_sgd_consts_SUF, ptl_adam_consts_SUF), and element i's step
 * (ptl_sgd_step_SUF, ptl_adam_step_SUF), torch's single-tensor formulas in their order. */
#define PTL_DEFINE_OPTIM_STEPS(T, SUF, MUL, SQRT)                                          \
    typedef struct PtlSgdConsts_##SUF {                                                    \
        T lr, mom, damp, wd, sign;                                                         \
        int decay, nesterov, first;                                                        \
    } PtlSgdConsts_##SUF;                                                                  \
                                                                                           \
    PTL_HD static inline PtlSgdConsts_##SUF                                               \
    ptl_sgd_consts_##SUF(const PtlSgdStepArgs *a)                                          \
    {                                                                                      \
        PtlSgdConsts_##SUF c;                                                              \
        c.lr = (T)a->lr;                                                                   \
        c.mom = (T)a->momentum;                                                            \
        c.damp = (T)(1.0 - a->dampening);                                                  \
        c.wd = (T)a->wd;                                                                   \
        c.sign = a->maximize ? (T)-1 : (T)1;                                               \
        c.decay = a->wd != 0;                                                              \
        c.nesterov = a->nesterov;                                                          \
        c.first = a->first;                                                                \
        return c;                                                                          \
    }                                                                                      \
                                                                                           \
    PTL_HD static inline void                                                              \
    ptl_sgd_step_##SUF(const PtlSgdConsts_##SUF *c, T *__restrict__ p, T *__restrict__ buf, \
                       const T *__restrict__ gr, int64_t i)                                \
    {                                                                                      \
        T g = MUL(c->sign, gr[i]);                                                         \
        if (c->decay) {                                                                    \
            g = g + MUL(c->wd, p[i]);                                                      \
        }                                                                                  \
        if (buf != 0) {                                                                    \
            T m = c->first ? g : MUL(buf[i], c->mom) + MUL(c->damp, g);                   \
            buf[i] = m;                                                                    \
            g = c->nesterov ? g + MUL(c->mom, m) : m;                                      \
        }                                                                                  \
        p[i] = p[i] + MUL(-c->lr, g);                                                      \
    }                                                                                      \
                                                                                           \
    typedef struct PtlAdamConsts_##SUF {                                                   \
        T sign, w1, b2, w2, wd, decay, eps, bc2s, neg_step;                                \
        int has_wd, decoupled;                                                             \
    } PtlAdamConsts_##SUF;                                                                 \
                                                                                           \
    PTL_HD static inline PtlAdamConsts_##SUF                                              \
    ptl_adam_consts_##SUF(const PtlAdamStepArgs *a)                                        \
    {                                                                                      \
        PtlAdamConsts_##SUF c;                                                             \
        c.sign = a->maximize ? (T)-1 : (T)1;                                               \
        c.w1 = (T)(1.0 - a->beta1);                                                        \
        c.b2 = (T)a->beta2;                                                                \
        c.w2 = (T)(1.0 - a->beta2);                                                        \
        c.wd = (T)a->wd;                                                                   \
        c.decay = (T)(1.0 - a->lr * a->wd);                                                \
        c.eps = (T)a->eps;                                                                 \
        c.bc2s = (T)a->bc2_sqrt;                                                           \
        c.neg_step = (T)(-a->step_size);                                                   \
        c.has_wd = a->wd != 0;                                                             \
        c.decoupled = a->decoupled;                                                        \
        return c;                                                                          \
    }                                                                                      \
                                                                                           \
    /* m = lerp(m, g, w1) as start + weight (end - start), torch's form for a weight below \
     * 1/2; vmax keeps a nan it holds (max propagates nan) */                              \
    PTL_HD static inline void                                                              \
    ptl_adam_step_##SUF(const PtlAdamConsts_##SUF *c, T *__restrict__ p, T *__restrict__ m, \
                        T *__restrict__ v, T *__restrict__ vmax, const T *__restrict__ gr,  \
                        int64_t i)                                                         \
    {                                                                                      \
        T g = MUL(c->sign, gr[i]);                                                         \
        T x = p[i];                                                                        \
        if (c->has_wd) {                                                                   \
            if (c->decoupled) {                                                            \
                x = MUL(x, c->decay);                                                      \
            }                                                                              \
            else {                                                                         \
                g = g + MUL(c->wd, x);                                                     \
            }                                                                              \
        }                                                                                  \
        T mi = m[i] + MUL(c->w1, g - m[i]);                                                \
        T vi = MUL(v[i], c->b2) + MUL(c->w2, g * g);                                       \
        m[i] = mi;                                                                         \
        v[i] = vi;                                                                         \
        if (vmax != 0) {                                                                   \
            vi = vmax[i] > vi || isnan(vmax[i]) ? vmax[i] : vi;                            \
            vmax[i] = vi;                                                                  \
        }                                                                                  \
        T denom = SQRT(vi) / c->bc2s + c->eps;                                             \
        p[i] = x + MUL(c->neg_step, mi / denom);                                           \
    }

PTL_DEFINE_OPTIM_STEPS(float, f4, PTL_FMUL_RN, sqrtf)
PTL_DEFINE_OPTIM_STEPS(double, f8, PTL_DMUL_RN, sqrt)
#undef PTL_DEFINE_OPTIM_STEPS

#endif
