/* random_grad.c -- the reparameterised gradients of the gamma and Dirichlet samplers
 * (random.c): _standard_gamma_grad and _dirichlet_grad, elementwise formulas of
 * distributions.h that draw nothing.  Mirrors the _standard_gamma_grad and _dirichlet_grad
 * kernels of ATen/native/Distributions.cpp. */
#include "../../c10/error.h"
#include "../distributions.h"
#include "native.h"

/* _standard_gamma_grad(Tensor self, Tensor output): d output / d self, elementwise
 * (ptl_standard_gamma_grad); float32 computes in double. */
#define DEFINE_GAMMA_GRAD_LOOP(T, DT)                                                     \
    static void                                                                           \
    standard_gamma_grad_loop_##DT(char **d, const int64_t *st, int64_t n, const void *extra) \
    {                                                                                     \
        (void)extra;                                                                      \
        for (int64_t i = 0; i < n; i++) {                                                 \
            double a = *(const T *)(d[1] + i * st[1]), x = *(const T *)(d[2] + i * st[2]);  \
            *(T *)(d[0] + i * st[0]) = (T)ptl_standard_gamma_grad(a, x);                  \
        }                                                                                 \
    }
DEFINE_GAMMA_GRAD_LOOP(float, f4)
DEFINE_GAMMA_GRAD_LOOP(double, f8)
#undef DEFINE_GAMMA_GRAD_LOOP

static int
standard_gamma_grad_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    static const int both[2] = {0, 1};
    static const PtlLoop loops[PTL_DTYPE_COUNT] = {
        [PTL_DTYPE_FLOAT32] = standard_gamma_grad_loop_f4,
        [PTL_DTYPE_FLOAT64] = standard_gamma_grad_loop_f8};
    (void)ks;
    return ptl_pointwise_named(op, s, 2, both, ptl_iter_config(), loops, NULL,
                               "_standard_gamma_grad_cpu");
}

/* _dirichlet_grad(Tensor x, Tensor alpha, Tensor total): elementwise ptl_dirichlet_grad,
 * the three of one dtype as in PyTorch (no promotion); float32 computes in double. */
#define DEFINE_DIRICHLET_GRAD_LOOP(T, DT)                                                 \
    static void                                                                           \
    dirichlet_grad_loop_##DT(char **d, const int64_t *st, int64_t n, const void *extra)  \
    {                                                                                     \
        (void)extra;                                                                      \
        for (int64_t i = 0; i < n; i++) {                                                 \
            double x = *(const T *)(d[1] + i * st[1]), a = *(const T *)(d[2] + i * st[2]);  \
            double total = *(const T *)(d[3] + i * st[3]);                                \
            *(T *)(d[0] + i * st[0]) = (T)ptl_dirichlet_grad(x, a, total);                \
        }                                                                                 \
    }
DEFINE_DIRICHLET_GRAD_LOOP(float, f4)
DEFINE_DIRICHLET_GRAD_LOOP(double, f8)
#undef DEFINE_DIRICHLET_GRAD_LOOP

static int
dirichlet_grad_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    static const int three[3] = {0, 1, 2};
    static const PtlLoop loops[PTL_DTYPE_COUNT] = {
        [PTL_DTYPE_FLOAT32] = dirichlet_grad_loop_f4,
        [PTL_DTYPE_FLOAT64] = dirichlet_grad_loop_f8};
    (void)ks;
    for (int i = 1; i < 3; i++) {
        if (s[i].u.t->dtype != s[0].u.t->dtype) {
            return ptl_error_set(PTL_ERR_RUNTIME, "Found dtype %s but expected %s",
                                 ptl_dtype_legacy_name(s[i].u.t->dtype),
                                 ptl_dtype_legacy_name(s[0].u.t->dtype));
        }
    }
    return ptl_pointwise_named(op, s, 3, three, ptl_iter_config(), loops, NULL,
                               "_dirichlet_grad_cpu");
}

static const PtlKernelReg random_grad_cpu[] = {
    {PTL_OP__standard_gamma_grad, PTL_KEY_CPU, standard_gamma_grad_cpu},
    {PTL_OP__dirichlet_grad, PTL_KEY_CPU, dirichlet_grad_cpu},
};
PTL_DEFINE_REGISTER(random_grad_cpu)
