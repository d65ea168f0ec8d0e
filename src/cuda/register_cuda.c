/* register_cuda.c -- the CUDA dispatch key's kernels: each wraps a launcher of
 * elementwise.cu in the boxed kernel signature, with TensorIterator's geometry handed over
 * as a PtlCudaLoopArgs.  Mirrors the CUDA entries of native_functions.yaml's dispatch
 * sections and ATen/native/cuda/Copy.cu (copy_impl).  See Note [CUDA elementwise launch] in
 * elementwise.cu and Note [CUDA availability] in lazy_init.c: registering copy_ here is what
 * makes CUDA available where a device is present.  The reductions and softmax share the CPU
 * kernels (shared_with_cpu).  A CPU-only build registers nothing. */
#include "attention_plan.h"
#include "cuda_api.h"
#include "gemm_plan.h"
#include "register_cuda_impl.h"
#include "stream_api.h"

#include <math.h>
#include <string.h>

#include "../aten/dispatcher.h"
#include "../aten/native/device_compose.h"
#include "../aten/native/loss_impl.h"
#include "../aten/native/native.h"
#include "../aten/tensor_iterator.h"
#include "../c10/allocator.h"
#include "../c10/error.h"

#ifdef PTL_WITH_CUDA

_Static_assert(PTL_MAX_DIMS <= PTL_CUDA_MAX_DIMS, "PtlCudaLoopArgs holds every dimension");
_Static_assert(PTL_ITER_MAX >= PTL_CUDA_MAX_OPERANDS, "the kernels take up to 4 operands");
_Static_assert((int)PTL_REG_MSE == (int)PTL_CUDA_REG_MSE &&
                   (int)PTL_REG_SMOOTH_L1 == (int)PTL_CUDA_REG_SMOOTH_L1 &&
                   (int)PTL_REG_HUBER == (int)PTL_CUDA_REG_HUBER,
               "ORDER PtlRegLoss");

/* The geometry of a built iterator: CPU operands (0-dim inputs) become scalars. */
static void
iter_args(PtlCudaLoopArgs *a, const PtlTensorIter *it)
{
    memset(a, 0, sizeof(*a));
    a->ntensors = it->ntensors;
    a->ndim = it->ndim;
    a->numel = it->numel;
    a->dtype = it->compute_dtype;
    a->src_dtype = it->compute_dtype;
    for (int d = 0; d < it->ndim; d++) {
        a->sizes[d] = it->shape[d];
    }
    for (int t = 0; t < it->ntensors; t++) {
        if ((it->scalar_cast & (1u << t)) || it->ops[t]->device.type == PTL_DEVICE_CPU) {
            a->is_scalar |= 1u << t;
            ptl_convert_scalar((char *)&a->scalar[t], PTL_DTYPE_FLOAT64, it->data[t],
                               it->compute_dtype);
            ptl_convert_scalar((char *)&a->iscalar[t], PTL_DTYPE_INT64, it->data[t],
                               it->compute_dtype);
            continue;
        }
        a->data[t] = it->data[t];
        for (int d = 0; d < it->ndim; d++) {
            a->strides[t][d] = it->strides[t][d];
        }
    }
}

/* The geometry of one tensor alone (dim 0 the last, strides in bytes). */
static void
tensor_args(PtlCudaLoopArgs *a, PtlTensorImpl *t)
{
    int64_t item = (int64_t)ptl_dtype_itemsize(t->dtype);
    memset(a, 0, sizeof(*a));
    a->ntensors = 1;
    a->ndim = t->dim;
    a->numel = t->numel;
    a->dtype = t->dtype;
    a->src_dtype = t->dtype;
    a->data[0] = ptl_tensor_data(t);
    for (int d = 0; d < t->dim; d++) {
        a->sizes[d] = t->sizes[t->dim - 1 - d];
        a->strides[0][d] = t->strides[t->dim - 1 - d] * item;
    }
}

/* "add_cuda", the name of PyTorch's dtype errors for the CUDA kernel of op. */
static int
cuda_dtype_not_implemented(const PtlOperator *op, PtlDtype dt)
{
    char name[128];
    ptl_kernel_name(op, name, sizeof(name));
    size_t n = strlen(name);
    if (n >= 4 && strcmp(name + n - 4, "_cpu") == 0) {
        name[n - 4] = '\0';
    }
    return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s_cuda\" not implemented for '%s'", name,
                         ptl_dtype_legacy_name(dt));
}

/* ptl_pointwise for the CUDA kernels: the inputs are stack slots idx[0..ninputs), the output
 * comes from the schema, in the dtypes the kernel takes (ptl_cuda_pointwise_takes: the float
 * ones, integers for a few ops).  stack[0] gets the result (new reference). */
static int
cuda_pointwise(const PtlOperator *op, PtlIValue *s, int ninputs, const int *idx,
               PtlIterConfig cfg, PtlCudaPointwiseOp cop, const double *p)
{
    PtlTensorIter it;
    PtlCudaLoopArgs a;
    if (ptl_pointwise_iter(op, s, ninputs, idx, &cfg, &it) < 0) {
        return -1;
    }
    if (!ptl_cuda_pointwise_takes(cop, it.compute_dtype)) {
        PtlDtype dt = it.compute_dtype;
        ptl_iter_release(&it);
        return cuda_dtype_not_implemented(op, dt);
    }
    iter_args(&a, &it);
    if (ptl_cuda_pointwise(cop, &a, p) < 0) {
        ptl_iter_release(&it);
        return -1;
    }
    return ptl_pointwise_return(&it, &cfg, s);
}

/* register_cuda_math.c's entries to the two helpers above (register_cuda_impl.h) */
int
ptl_cuda_pointwise_run(const PtlOperator *op, PtlIValue *s, int ninputs, const int *idx,
                       PtlIterConfig cfg, PtlCudaPointwiseOp cop, const double *p)
{
    return cuda_pointwise(op, s, ninputs, idx, cfg, cop, p);
}

int
ptl_cuda_dtype_not_implemented(const PtlOperator *op, PtlDtype dt)
{
    return cuda_dtype_not_implemented(op, dt);
}

static const int first[1] = {0};
static const int first_two[2] = {0, 1};

/* add.Tensor / sub.Tensor (and add_, add.out, sub likewise): self + alpha * other */
/* binary.c's checks of add's, sub's and rsub's alpha: a bool one for bool results only, an
 * integer results refuse a floating-point one (its type, not its value, as PyTorch's
 * alpha_check) */
static int
integer_alpha_check(PtlIValue *s)
{
    PtlTensorImpl *ab[2] = {s[0].u.t, s[1].u.t};
    if (s[2].tag == PTL_IV_BOOL && ptl_result_type(ab, 2) != PTL_DTYPE_BOOL) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Boolean alpha only supported for Boolean results.");
    }
    if (s[2].tag == PTL_IV_DOUBLE && !ptl_dtype_is_floating(ptl_result_type(ab, 2))) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "For integral input tensors, argument alpha must not be a "
                             "floating point number.");
    }
    return 0;
}

static int
add_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    double alpha = ptl_iv_to_double(&s[2]);
    double p[PTL_CUDA_MAX_PARAMS] = {strncmp(op->schema.name, "aten::sub", 9) == 0 ? -alpha
                                                                                 : alpha};
    (void)ks;
    if (integer_alpha_check(s) < 0) {
        return -1;
    }
    return cuda_pointwise(op, s, 2, first_two, ptl_iter_config(), PTL_CUDA_OP_ADD, p);
}

static int
mul_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    return cuda_pointwise(op, s, 2, first_two, ptl_iter_config(), PTL_CUDA_OP_MUL, NULL);
}

/* true division: integer inputs compute in the default float dtype */
static int
div_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlIterConfig cfg = ptl_iter_config();
    (void)ks;
    cfg.int_to_float = 1;
    return cuda_pointwise(op, s, 2, first_two, cfg, PTL_CUDA_OP_DIV, NULL);
}

/* neg, relu keep the dtype; sigmoid, tanh, exp, log take integers to float (unary.c) */
static int
unary_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlIterConfig cfg = ptl_iter_config();
    PtlCudaPointwiseOp cop;
    (void)ks;
    switch (op->id) {
    case PTL_OP_neg: case PTL_OP_neg_: case PTL_OP_neg_out: cop = PTL_CUDA_OP_NEG; break;
    case PTL_OP_relu: case PTL_OP_relu_: case PTL_OP_relu_out: cop = PTL_CUDA_OP_RELU; break;
    case PTL_OP_sigmoid: case PTL_OP_sigmoid_: case PTL_OP_sigmoid_out:
        cop = PTL_CUDA_OP_SIGMOID;
        break;
    case PTL_OP_tanh: case PTL_OP_tanh_: case PTL_OP_tanh_out: cop = PTL_CUDA_OP_TANH; break;
    case PTL_OP_exp: case PTL_OP_exp_: case PTL_OP_exp_out: cop = PTL_CUDA_OP_EXP; break;
    default: cop = PTL_CUDA_OP_LOG; break;
    }
    cfg.int_to_float = cop != PTL_CUDA_OP_NEG && cop != PTL_CUDA_OP_RELU;
    return cuda_pointwise(op, s, 1, first, cfg, cop, NULL);
}

/* _gelu(Tensor self, int approximate=0) */
static int
gelu_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    double p[PTL_CUDA_MAX_PARAMS] = {(double)(s[1].tag == PTL_IV_INT && s[1].u.i != 0)};
    (void)ks;
    return cuda_pointwise(op, s, 1, first, ptl_iter_config(), PTL_CUDA_OP_GELU, p);
}

/* gelu_backward(Tensor grad_output, Tensor self, *, str approximate='none') */
static int
gelu_backward_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    const char *mode = s[2].tag == PTL_IV_STRING ? s[2].u.s : "none";
    double p[PTL_CUDA_MAX_PARAMS] = {strcmp(mode, "tanh") == 0};
    (void)ks;
    return cuda_pointwise(op, s, 2, first_two, ptl_iter_config(), PTL_CUDA_OP_GELU_BACKWARD,
                          p);
}

/* threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) */
static int
threshold_backward_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    double p[PTL_CUDA_MAX_PARAMS] = {ptl_iv_to_double(&s[2])};
    (void)ks;
    return cuda_pointwise(op, s, 2, first_two, ptl_iter_config(),
                          PTL_CUDA_OP_THRESHOLD_BACKWARD, p);
}

/* acosh, asinh, atanh, erfc, i0 and special_i0e/i1/i1e (+ in-place, out=): integer inputs
 * compute in the default float dtype, as unary.c's */
static int
special_unary_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    static const struct {
        PtlOpId op;
        PtlCudaPointwiseOp cop;
    } ops[] = {
#define ROW3(NAME, COP) {PTL_OP_##NAME, COP}, {PTL_OP_##NAME##_, COP}, {PTL_OP_##NAME##_out, COP}
        ROW3(acosh, PTL_CUDA_OP_ACOSH), ROW3(asinh, PTL_CUDA_OP_ASINH),
        ROW3(atanh, PTL_CUDA_OP_ATANH), ROW3(erfc, PTL_CUDA_OP_ERFC), ROW3(i0, PTL_CUDA_OP_I0),
#undef ROW3
        {PTL_OP_special_i0e, PTL_CUDA_OP_I0E}, {PTL_OP_special_i0e_out, PTL_CUDA_OP_I0E},
        {PTL_OP_special_i1, PTL_CUDA_OP_I1}, {PTL_OP_special_i1_out, PTL_CUDA_OP_I1},
        {PTL_OP_special_i1e, PTL_CUDA_OP_I1E}, {PTL_OP_special_i1e_out, PTL_CUDA_OP_I1E},
    };
    PtlIterConfig cfg = ptl_iter_config();
    (void)ks;
    cfg.int_to_float = 1;
    for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
        if ((int)ops[k].op == op->id) {
            return cuda_pointwise(op, s, 1, first, cfg, ops[k].cop, NULL);
        }
    }
    return ptl_error_set(PTL_ERR_RUNTIME, "special_unary_cuda: unknown op");
}

/* hypot, igamma, igammac (+ in-place, out=), _ptl_igamma_density (igamma's op with the
 * parameter 1): floating dtypes only */
static int
special_binary_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    static const double density[1] = {1.0};
    const char *name = op->schema.name + strlen("aten::");
    PtlCudaPointwiseOp cop = strncmp(name, "hypot", 5) == 0     ? PTL_CUDA_OP_HYPOT
                             : strncmp(name, "igammac", 7) == 0 ? PTL_CUDA_OP_IGAMMAC
                                                                : PTL_CUDA_OP_IGAMMA;
    (void)ks;
    return cuda_pointwise(op, s, 2, first_two, ptl_iter_config(), cop,
                          op->id == PTL_OP__ptl_igamma_density ? density : NULL);
}

/* _standard_gamma_grad(self, output) and _dirichlet_grad(x, alpha, total): the CPU kernels'
 * formulas (distributions.h), float32 and float64 only, _dirichlet_grad's three of one dtype */
static int
random_grad_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    static const int three[3] = {0, 1, 2};
    int dirichlet = op->id == PTL_OP__dirichlet_grad, n = dirichlet ? 3 : 2;
    PtlTensorImpl *ts[3] = {s[0].u.t, s[1].u.t, dirichlet ? s[2].u.t : NULL};
    PtlDtype dt = ptl_result_type(ts, n);
    (void)ks;
    for (int i = 1; dirichlet && i < 3; i++) {
        if (ts[i]->dtype != ts[0]->dtype) {
            return ptl_error_set(PTL_ERR_RUNTIME, "Found dtype %s but expected %s",
                                 ptl_dtype_legacy_name(ts[i]->dtype),
                                 ptl_dtype_legacy_name(ts[0]->dtype));
        }
    }
    if (dt != PTL_DTYPE_FLOAT32 && dt != PTL_DTYPE_FLOAT64) {
        return cuda_dtype_not_implemented(op, dt);
    }
    return cuda_pointwise(op, s, n, three, ptl_iter_config(),
                          dirichlet ? PTL_CUDA_OP_DIRICHLET_GRAD : PTL_CUDA_OP_STANDARD_GAMMA_GRAD,
                          NULL);
}

/* The activations and their backward ops: (stack slots of the tensors, of the parameters,
 * bit j of in_dtype: parameter j is rounded to the input's dtype), the parameters rounded as
 * act_cpu's are (ptl_activation_param, native/activation.c) and checked by the same
 * ptl_activation_check. */
typedef struct CudaAct {
    PtlOpId op;
    PtlCudaPointwiseOp cop;
    int ninputs, nparams;
    int inputs[2], params[PTL_CUDA_MAX_PARAMS];
    int in_dtype;
} CudaAct;

static const CudaAct cuda_acts[] = {
    {PTL_OP_silu, PTL_CUDA_OP_SILU, 1, 0, {0}, {0}, 0},
    {PTL_OP_silu_, PTL_CUDA_OP_SILU, 1, 0, {0}, {0}, 0},
    {PTL_OP_silu_backward, PTL_CUDA_OP_SILU_BACKWARD, 2, 0, {0, 1}, {0}, 0},
    {PTL_OP_mish, PTL_CUDA_OP_MISH, 1, 0, {0}, {0}, 0},
    {PTL_OP_mish_, PTL_CUDA_OP_MISH, 1, 0, {0}, {0}, 0},
    {PTL_OP_mish_backward, PTL_CUDA_OP_MISH_BACKWARD, 2, 0, {0, 1}, {0}, 0},
    {PTL_OP_elu, PTL_CUDA_OP_ELU, 1, 3, {0}, {1, 2, 3}, 0},
    {PTL_OP_elu_, PTL_CUDA_OP_ELU, 1, 3, {0}, {1, 2, 3}, 0},
    {PTL_OP_elu_backward, PTL_CUDA_OP_ELU_BACKWARD, 2, 4, {0, 5}, {1, 2, 3, 4}, 0},
    {PTL_OP_softplus, PTL_CUDA_OP_SOFTPLUS, 1, 2, {0}, {1, 2}, 0},
    {PTL_OP_softplus_backward, PTL_CUDA_OP_SOFTPLUS_BACKWARD, 2, 2, {0, 1}, {2, 3}, 0},
    {PTL_OP_log_sigmoid_forward, PTL_CUDA_OP_LOG_SIGMOID, 1, 0, {0}, {0}, 0},
    {PTL_OP_log_sigmoid_forward_output, PTL_CUDA_OP_LOG_SIGMOID, 1, 0, {0}, {0}, 0},
    {PTL_OP_log_sigmoid_backward, PTL_CUDA_OP_LOG_SIGMOID_BACKWARD, 2, 0, {0, 1}, {0}, 0},
    {PTL_OP_hardswish, PTL_CUDA_OP_HARDSWISH, 1, 0, {0}, {0}, 0},
    {PTL_OP_hardswish_, PTL_CUDA_OP_HARDSWISH, 1, 0, {0}, {0}, 0},
    {PTL_OP_hardswish_backward, PTL_CUDA_OP_HARDSWISH_BACKWARD, 2, 0, {0, 1}, {0}, 0},
    {PTL_OP_hardsigmoid, PTL_CUDA_OP_HARDSIGMOID, 1, 0, {0}, {0}, 0},
    {PTL_OP_hardsigmoid_, PTL_CUDA_OP_HARDSIGMOID, 1, 0, {0}, {0}, 0},
    {PTL_OP_hardsigmoid_backward, PTL_CUDA_OP_HARDSIGMOID_BACKWARD, 2, 0, {0, 1}, {0}, 0},
    {PTL_OP_leaky_relu, PTL_CUDA_OP_LEAKY_RELU, 1, 1, {0}, {1}, 0},
    {PTL_OP_leaky_relu_, PTL_CUDA_OP_LEAKY_RELU, 1, 1, {0}, {1}, 0},
    {PTL_OP_leaky_relu_backward, PTL_CUDA_OP_LEAKY_RELU_BACKWARD, 2, 1, {0, 1}, {2}, 0},
    {PTL_OP_hardtanh, PTL_CUDA_OP_HARDTANH, 1, 2, {0}, {1, 2}, 3},
    {PTL_OP_hardtanh_, PTL_CUDA_OP_HARDTANH, 1, 2, {0}, {1, 2}, 3},
    {PTL_OP_hardtanh_backward, PTL_CUDA_OP_HARDTANH_BACKWARD, 2, 2, {0, 1}, {2, 3}, 3},
    {PTL_OP_softshrink, PTL_CUDA_OP_SOFTSHRINK, 1, 1, {0}, {1}, 1},
    {PTL_OP_softshrink_backward, PTL_CUDA_OP_SHRINK_BACKWARD, 2, 1, {0, 1}, {2}, 1},
    {PTL_OP_hardshrink, PTL_CUDA_OP_HARDSHRINK, 1, 1, {0}, {1}, 1},
    {PTL_OP_hardshrink_backward, PTL_CUDA_OP_SHRINK_BACKWARD, 2, 1, {0, 1}, {2}, 1},
};

static int
act_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    if (ptl_activation_check(op, s) < 0) {
        return -1;
    }
    for (size_t k = 0; k < sizeof(cuda_acts) / sizeof(cuda_acts[0]); k++) {
        const CudaAct *a = &cuda_acts[k];
        double p[PTL_CUDA_MAX_PARAMS] = {0, 0, 0, 0};
        PtlDtype dt = s[0].u.t->dtype;
        if ((int)a->op != op->id) {
            continue;
        }
        for (int j = 0; j < a->nparams; j++) {
            const PtlIValue *v = &s[a->params[j]];
            p[j] = v->tag == PTL_IV_BOOL ? (double)v->u.b
                   : ptl_activation_param(ptl_iv_to_double(v), dt, (a->in_dtype >> j) & 1);
        }
        return cuda_pointwise(op, s, a->ninputs, a->inputs, ptl_iter_config(), a->cop, p);
    }
    return ptl_error_set(PTL_ERR_RUNTIME, "act_cuda: unknown op");
}

/* log_sigmoid_forward(self) -> (output, buffer) (and .output): the output as act_cuda
 * computes it and, as PyTorch's CUDA kernel, an empty buffer (or the given one, untouched),
 * which log_sigmoid_backward's CUDA kernel never reads (Note [Log-sigmoid buffer]) */
static int
log_sigmoid_forward_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *self = s[0].u.t, *buffer;
    int64_t zero = 0;
    if (op->id == PTL_OP_log_sigmoid_forward_output) {
        buffer = s[2].u.t;
        ptl_incref(buffer);
    }
    else if ((buffer = ptl_empty(1, &zero, self->dtype, self->device)) == NULL) {
        return -1;
    }
    if (act_cuda(op, ks, s) < 0) {
        ptl_decref(buffer);
        return -1;
    }
    s[1] = ptl_iv_tensor(buffer);
    return 0;
}

/* celu(Tensor self, Scalar alpha=1.0) (and celu_): elu with scale 1 and input_scale
 * 1 / alpha, as celu_cpu computes it */
static int
celu_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    double alpha = ptl_iv_to_double(&s[1]);
    double p[PTL_CUDA_MAX_PARAMS] = {alpha, 1.0, 0.0, 0.0};
    (void)ks;
    if (ptl_activation_check(op, s) < 0) {
        return -1;
    }
    p[2] = 1.0 / alpha;
    return cuda_pointwise(op, s, 1, first, ptl_iter_config(), PTL_CUDA_OP_ELU, p);
}

/* rsub.Tensor(self, other, *, alpha=1): other - alpha * self, add's kernel on (other, self) */
static int
rsub_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    static const int other_self[2] = {1, 0};
    double p[PTL_CUDA_MAX_PARAMS] = {-ptl_iv_to_double(&s[2])};
    (void)ks;
    if (integer_alpha_check(s) < 0) {
        return -1;
    }
    return cuda_pointwise(op, s, 2, other_self, ptl_iter_config(), PTL_CUDA_OP_ADD, p);
}

/* abs, sign (keep the dtype: out= must have self's, as unary.c's U_STRICT), sqrt and
 * reciprocal (integers compute in the default float dtype) (+ in-place, out=) */
static int
math_unary_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *self = s[0].u.t, *out = ptl_kernel_out(op, s);
    PtlIterConfig cfg = ptl_iter_config();
    PtlCudaPointwiseOp cop;
    (void)ks;
    switch (op->id) {
    case PTL_OP_abs: case PTL_OP_abs_: case PTL_OP_abs_out: cop = PTL_CUDA_OP_ABS; break;
    case PTL_OP_sign: case PTL_OP_sign_: case PTL_OP_sign_out: cop = PTL_CUDA_OP_SIGN; break;
    case PTL_OP_sqrt: case PTL_OP_sqrt_: case PTL_OP_sqrt_out: cop = PTL_CUDA_OP_SQRT; break;
    default: cop = PTL_CUDA_OP_RECIPROCAL; break;
    }
    cfg.int_to_float = cop == PTL_CUDA_OP_SQRT || cop == PTL_CUDA_OP_RECIPROCAL;
    if (!cfg.int_to_float && out != NULL && out->dtype != self->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Found dtype %s but expected %s",
                             ptl_dtype_legacy_name(out->dtype),
                             ptl_dtype_legacy_name(self->dtype));
    }
    return cuda_pointwise(op, s, 1, first, cfg, cop, NULL);
}

/* clamp, clamp_, clamp.out, clip*, clamp_min, clamp_max with Scalar bounds: ternary.c's
 * checks and bounds (ptl_clamp_scalar_prepare), floating result types */
static int
clamp_scalar_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlIterConfig cfg = ptl_iter_config();
    PtlClampBounds b;
    (void)ks;
    if (ptl_clamp_scalar_prepare(op, s, "cuda", &b, &cfg.compute_dtype) < 0) {
        return -1;
    }
    double p[PTL_CUDA_MAX_PARAMS] = {b.lo, b.hi};
    return cuda_pointwise(op, s, 1, first, cfg, PTL_CUDA_OP_CLAMP, p);
}

/* pow.Tensor_Scalar, pow_.Scalar, pow.Tensor_Scalar_out: binary.c's pow_cpu for a number
 * exponent, in result_type(self, exponent); float16 rounds the exponent to float16 and takes
 * plain pow, as PyTorch's kernel does */
static int
pow_scalar_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlIterConfig cfg = ptl_iter_config();
    PtlTensorImpl *e = s[1].tag == PTL_IV_DOUBLE ? ptl_wrapped_double(s[1].u.d)
                       : s[1].tag == PTL_IV_BOOL ? ptl_wrapped_bool(s[1].u.b)
                                                 : ptl_wrapped_int(ptl_iv_to_int(&s[1]));
    (void)ks;
    if (e == NULL) {
        return -1;
    }
    PtlTensorImpl *ab[2] = {s[0].u.t, e};
    PtlDtype dt = ptl_result_type(ab, 2);
    PtlDtype et = e->dtype;
    ptl_decref(e);
    double x = ptl_iv_to_double(&s[1]);
    if (!ptl_dtype_is_floating(dt) && !ptl_dtype_is_floating(et) && x < 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Integers to negative integer powers are not allowed.");
    }
    if (!ptl_dtype_is_floating(dt)) {
        return cuda_dtype_not_implemented(op, dt);
    }
    if (dt == PTL_DTYPE_FLOAT16 && ptl_scalar_check_range(&s[1], dt) < 0) {
        return -1;
    }
    double p[PTL_CUDA_MAX_PARAMS] = {x, dt == PTL_DTYPE_FLOAT16};
    if (dt == PTL_DTYPE_FLOAT16) {
        p[0] = ptl_half_to_f(ptl_f_to_half((float)x));
    }
    cfg.compute_dtype = dt;
    return cuda_pointwise(op, s, 1, first, cfg, PTL_CUDA_OP_POW_SCALAR, p);
}

/* clamp.Tensor(self, min, max) (clamp_, clamp.Tensor_out, clip*): ternary.c's checks, then
 * the three-input kernel, or the two-input one against the bound that is given */
static int
clamp_tensor_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    static const int with_min[2] = {0, 1}, with_max[2] = {0, 2}, all[3] = {0, 1, 2};
    int has_lo = s[1].tag == PTL_IV_TENSOR, has_hi = s[2].tag == PTL_IV_TENSOR;
    (void)ks;
    if (ptl_clamp_tensor_check(op, s, "cuda") < 0) {
        return -1;
    }
    if (has_lo && has_hi) {
        return cuda_pointwise(op, s, 3, all, ptl_iter_config(), PTL_CUDA_OP_CLAMP_TENSOR, NULL);
    }
    return cuda_pointwise(op, s, 2, has_lo ? with_min : with_max, ptl_iter_config(),
                          has_lo ? PTL_CUDA_OP_CLAMP_MIN_TENSOR : PTL_CUDA_OP_CLAMP_MAX_TENSOR,
                          NULL);
}

/* nextafter(self, other) (nextafter_, nextafter.out): binary.c's, floating dtypes only;
 * float16 and bfloat16 step on their own bits */
static int
nextafter_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *ab[2] = {s[0].u.t, s[1].u.t};
    PtlDtype dt = ptl_result_type(ab, 2);
    double p[PTL_CUDA_MAX_PARAMS] = {dt == PTL_DTYPE_FLOAT16    ? PTL_CUDA_NEXTAFTER_HALF
                                     : dt == PTL_DTYPE_BFLOAT16 ? PTL_CUDA_NEXTAFTER_BF16
                                                                : PTL_CUDA_NEXTAFTER_NATIVE};
    (void)ks;
    return cuda_pointwise(op, s, 2, first_two, ptl_iter_config(), PTL_CUDA_OP_NEXTAFTER, p);
}

/* gcd(self, other), lcm (+ in-place, out=): integer dtypes only */
static int
gcd_lcm_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    int gcd = op->id == PTL_OP_gcd || op->id == PTL_OP_gcd_ || op->id == PTL_OP_gcd_out;
    (void)ks;
    return cuda_pointwise(op, s, 2, first_two, ptl_iter_config(),
                          gcd ? PTL_CUDA_OP_GCD : PTL_CUDA_OP_LCM, NULL);
}

/* mse_loss(self, target, reduction), smooth_l1_loss(..., beta), huber_loss(..., delta) and
 * their backward ops (grad_output first), as loss.c's reg_loss_cpu: the elementwise losses
 * or gradients by the pointwise kernel in the dtype the operands promote to, then for
 * 'mean' and 'sum' the CUDA reduction (aten::mean, aten::sum) of the losses */
static int
reg_loss_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    static const int operands[3] = {0, 1, 2};
    PtlRegLoss k = ptl_reg_loss_kind(op);
    int bw = op->id == PTL_OP_mse_loss_backward || op->id == PTL_OP_smooth_l1_loss_backward ||
             op->id == PTL_OP_huber_loss_backward;
    int64_t red = s[bw + 2].u.i, sizes[PTL_MAX_DIMS], numel = 1;
    double p[PTL_CUDA_MAX_PARAMS] = {(double)k, 0, 0, 0};
    double param = k == PTL_REG_MSE ? 0 : ptl_iv_to_double(&s[bw + 3]);
    PtlDtype dt = s[0].u.t->dtype;
    int dim = s[0].u.t->dim;
    (void)ks;
    PtlTensorImpl *in[3] = {s[0].u.t, s[1].u.t, bw ? s[2].u.t : NULL};
    PtlDtype self_dt = s[1].u.t->dtype;
    if ((!bw && ptl_reg_loss_check(k, param) < 0) || (bw && ptl_reg_loss_backward_check(in) < 0)) {
        return -1;
    }
    memcpy(sizes, s[0].u.t->sizes, sizeof(int64_t) * (size_t)dim);
    for (int i = 1; i < 2 + bw; i++) {
        PtlTensorImpl *t = s[i].u.t;
        dt = ptl_promote_types(dt, t->dtype);
        if (ptl_broadcast_shapes(dim, sizes, t->dim, t->sizes, &dim, sizes) < 0) {
            return -1;
        }
    }
    if (!ptl_dtype_is_floating(dt)) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s%s_cuda\" not implemented for '%s'",
                             ptl_reg_loss_name(k), bw ? "_backward" : "",
                             ptl_dtype_legacy_name(dt));
    }
    for (int d = 0; d < dim; d++) {
        numel *= sizes[d];
    }
    if (bw) {
        p[1] = (k == PTL_REG_MSE ? 2.0 : 1.0) / (red == 1 ? (double)numel : 1.0);
        p[2] = param;
        if (cuda_pointwise(op, s, 3, operands, ptl_iter_config(),
                           PTL_CUDA_OP_REG_LOSS_BACKWARD, p) < 0) {
            return -1;
        }
        if (s[0].u.t->dtype != self_dt) {   /* the gradient in self's dtype */
            PtlTensorImpl *r = ptl_cast(s[0].u.t, self_dt);
            ptl_decref(s[0].u.t);
            s[0] = ptl_iv_tensor(r);
            return r != NULL ? 0 : -1;
        }
        return 0;
    }
    p[1] = param;
    if (cuda_pointwise(op, s, 2, operands, ptl_iter_config(), PTL_CUDA_OP_REG_LOSS, p) < 0) {
        return -1;
    }
    if (red != 1 && red != 2) {
        return 0;
    }
    /* at::Reduction: 1 mean, 2 sum */
    PtlIValue args[2] = {s[0], ptl_iv_none()};
    PtlTensorImpl *r = ptl_call_tensor(red == 1 ? PTL_OP_mean : PTL_OP_sum, args);
    ptl_decref(s[0].u.t);
    s[0] = ptl_iv_tensor(r);
    return r != NULL ? 0 : -1;
}

/* ---- binary_cross_entropy ---- */

/* *v = reduction id (amin, amax) of all of x, read back to the host as a double (a
 * synchronisation).  0 or -1. */
static int
read_extreme(PtlOpId id, PtlTensorImpl *x, double *v)
{
    PtlIValue a[3] = {ptl_iv_tensor(x), ptl_iv_intlist(NULL, 0), ptl_iv_bool(0)};
    PtlDevice cpu = ptl_device_cpu();
    PtlTensorImpl *r = ptl_call_tensor(id, a), *h = NULL;
    if (r != NULL && (h = ptl_to_copy(r, PTL_DTYPE_FLOAT64, &cpu)) != NULL) {
        *v = *(const double *)ptl_tensor_data(h);
    }
    ptl_xdecref(r);
    ptl_xdecref(h);
    return h != NULL ? 0 : -1;
}

/* nn.c's bce_data checks (target of self's shape, a floating self), then *tc = target and
 * *wc = weight (NULL: none) expanded to self's shape, both in self's dtype (new refs) */
static int
bce_operands(PtlTensorImpl *x, PtlTensorImpl *t, const PtlIValue *w, PtlTensorImpl **tc,
             PtlTensorImpl **wc)
{
    *tc = *wc = NULL;
    if (ptl_bce_check(x, t) < 0 || (*tc = ptl_cast(t, x->dtype)) == NULL) {
        return -1;
    }
    if (w->tag == PTL_IV_TENSOR) {
        PtlIValue e[3] = {*w, ptl_iv_intlist(x->sizes, x->dim), ptl_iv_bool(0)};
        PtlTensorImpl *we = ptl_call_tensor(PTL_OP_expand, e);
        *wc = we != NULL ? ptl_cast(we, x->dtype) : NULL;
        ptl_xdecref(we);
        if (*wc == NULL) {
            PTL_CLEAR(*tc);
            return -1;
        }
    }
    return 0;
}

/* *r := *r * w when there is a weight w; 0 or -1 (*r released) */
static int
bce_weigh(PtlTensorImpl **r, PtlTensorImpl *w)
{
    if (w == NULL) {
        return 0;
    }
    PtlIValue a[2] = {ptl_iv_tensor(*r), ptl_iv_tensor(w)};
    PtlTensorImpl *m = ptl_call_tensor(PTL_OP_mul_Tensor, a);
    ptl_decref(*r);
    *r = m;
    return m != NULL ? 0 : -1;
}

/* binary_cross_entropy(self, target, weight, reduction), nn.c's bce_cpu on the device: the
 * range check (all of self in [0, 1], NaN outside it) reads self's amin and amax back (a
 * synchronisation, where PyTorch's kernel asserts on the device), the losses come from the
 * pointwise kernel in double, rounded to self's dtype, then times the weight, then for
 * 'mean' and 'sum' the CUDA reduction: equal to the CPU's within rounding. */
static int
bce_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    static const int operands[2] = {0, 1};
    PtlTensorImpl *x = s[0].u.t, *tc = NULL, *wc = NULL, *r = NULL;
    int64_t red = s[3].u.i;
    double lo = 0, hi = 1;
    (void)ks;
    if (bce_operands(x, s[1].u.t, &s[2], &tc, &wc) < 0) {
        return -1;
    }
    if (x->numel > 0 && (read_extreme(PTL_OP_amin, x, &lo) < 0 ||
                         read_extreme(PTL_OP_amax, x, &hi) < 0)) {
        goto done;
    }
    if (!(lo >= 0 && hi <= 1)) {
        ptl_error_set(PTL_ERR_RUNTIME, "all elements of input should be between 0 and 1");
        goto done;
    }
    PtlIValue a[2] = {ptl_iv_tensor(x), ptl_iv_tensor(tc)};
    if (cuda_pointwise(op, a, 2, operands, ptl_iter_config(), PTL_CUDA_OP_BCE, NULL) < 0) {
        goto done;
    }
    r = a[0].u.t;
    if (bce_weigh(&r, wc) < 0) {
        goto done;
    }
    if (red == 1 || red == 2) {   /* at::Reduction: 1 mean, 2 sum */
        PtlIValue m[2] = {ptl_iv_tensor(r), ptl_iv_none()};
        PtlTensorImpl *sum = ptl_call_tensor(red == 1 ? PTL_OP_mean : PTL_OP_sum, m);
        ptl_decref(r);
        r = sum;
    }
done:
    ptl_xdecref(tc);
    ptl_xdecref(wc);
    if (r == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(r);
    return 0;
}

/* binary_cross_entropy_backward(grad_output, self, target, weight, reduction): grad_output
 * must broadcast to self's shape (nn.c's bce_grad_output), then the pointwise kernel's
 * ptl_bce_grad_d in double, times the weight */
static int
bce_backward_cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    static const int operands[3] = {0, 1, 2};
    PtlTensorImpl *g = s[0].u.t, *x = s[1].u.t, *tc = NULL, *wc = NULL, *gc = NULL, *r = NULL;
    int64_t shape[PTL_MAX_DIMS];
    int n;
    double p[PTL_CUDA_MAX_PARAMS] = {s[4].u.i == 1 ? (double)x->numel : 1.0};
    (void)ks;
    if (bce_operands(x, s[2].u.t, &s[3], &tc, &wc) < 0 ||
        ptl_broadcast_shapes(g->dim, g->sizes, x->dim, x->sizes, &n, shape) < 0) {
        goto done;
    }
    if (n != x->dim || memcmp(shape, x->sizes, sizeof(int64_t) * (size_t)n) != 0) {
        ptl_error_set(PTL_ERR_RUNTIME,
                      "binary_cross_entropy_backward: grad_output of %d dimensions does not "
                      "broadcast to the input's %d",
                      g->dim, x->dim);
        goto done;
    }
    if ((gc = ptl_cast(g, x->dtype)) == NULL) {
        goto done;
    }
    PtlIValue a[3] = {ptl_iv_tensor(gc), ptl_iv_tensor(x), ptl_iv_tensor(tc)};
    if (cuda_pointwise(op, a, 3, operands, ptl_iter_config(), PTL_CUDA_OP_BCE_BACKWARD, p) < 0) {
        goto done;
    }
    r = a[0].u.t;
    if (bce_weigh(&r, wc) < 0) {
        goto done;
    }
done:
    ptl_xdecref(tc);
    ptl_xdecref(wc);
    ptl_xdecref(gc);
    if (r == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(r);
    return 0;
}

/* ---- copies ---- */

/* dst <- src, both on the device: the copy kernel through the iterator's offsets (any
 * strides, broadcasting, dtype conversion), or one cudaMemcpyAsync on the current stream
 * when both are dense alike.  Neither waits for the device: the stream orders the copy
 * before the work that reads dst, and a CUDA graph can capture it (Note [CUDA graphs]). */
static int
copy_on_device(PtlTensorImpl *dst, PtlTensorImpl *src)
{
    PtlTensorIter it;
    PtlCudaLoopArgs a;
    if (dst->dtype == src->dtype && ptl_tensor_is_contiguous(dst) &&
        ptl_tensor_is_contiguous(src) && dst->dim == src->dim &&
        memcmp(dst->sizes, src->sizes, sizeof(int64_t) * (size_t)dst->dim) == 0) {
        return ptl_cuda_memcpy_async(ptl_tensor_data(dst), 1, ptl_tensor_data(src), 1,
                                     (size_t)dst->numel * ptl_dtype_itemsize(dst->dtype),
                                     ptl_cuda_current_stream_here());
    }
    if (ptl_copy_iter_build(&it, dst, src) < 0) {
        return -1;
    }
    iter_args(&a, &it);
    a.dtype = dst->dtype;
    a.src_dtype = src->dtype;
    int rc = ptl_cuda_copy(&a);
    ptl_iter_release(&it);
    return rc;
}

/* A contiguous tensor of t's sizes in dtype on device (a new reference), or NULL. */
static PtlTensorImpl *
dense_like(PtlTensorImpl *t, PtlDtype dtype, PtlDevice device)
{
    return ptl_empty(t->dim, t->sizes, dtype, device);
}

/* dst (device) <- src (host): a one-element source fills; otherwise the host broadcasts and
 * converts into a dense tensor of dst's dtype, and one cudaMemcpy moves it (through a dense
 * device temporary when dst is strided). */
static int
copy_host_to_device(PtlTensorImpl *dst, PtlTensorImpl *src)
{
    PtlCudaLoopArgs a;
    PtlTensorImpl *host = NULL, *dense = NULL;
    int rc = -1;
    if (src->numel == 1 && src->dim <= dst->dim) {
        char value[16];
        ptl_convert_scalar(value, dst->dtype, ptl_tensor_data(src), src->dtype);
        tensor_args(&a, dst);
        return ptl_cuda_fill(&a, value, (int64_t)ptl_dtype_itemsize(dst->dtype));
    }
    host = dense_like(dst, dst->dtype, ptl_device_cpu());
    if (host == NULL || ptl_copy_into(host, src) < 0) {
        goto done;
    }
    if (ptl_tensor_is_contiguous(dst)) {
        ptl_incref(dst);
        dense = dst;
    }
    else {
        dense = dense_like(dst, dst->dtype, dst->device);
    }
    if (dense == NULL ||
        ptl_cuda_memcpy(ptl_tensor_data(dense), 1, ptl_tensor_data(host), 0,
                        (size_t)host->numel * ptl_dtype_itemsize(host->dtype)) < 0) {
        goto done;
    }
    rc = dense == dst ? 0 : copy_on_device(dst, dense);
done:
    ptl_xdecref(host);
    ptl_xdecref(dense);
    return rc;
}

/* dst (host) <- src (device): src made dense on the device, one cudaMemcpy, then the host
 * broadcasts and converts into dst. */
static int
copy_device_to_host(PtlTensorImpl *dst, PtlTensorImpl *src)
{
    PtlTensorImpl *dense = NULL, *host = NULL;
    int rc = -1;
    if (ptl_tensor_is_contiguous(src)) {
        ptl_incref(src);
        dense = src;
    }
    else if ((dense = dense_like(src, src->dtype, src->device)) != NULL &&
             copy_on_device(dense, src) < 0) {
        goto done;
    }
    if (dense == NULL || (host = dense_like(src, src->dtype, ptl_device_cpu())) == NULL ||
        ptl_cuda_memcpy(ptl_tensor_data(host), 0, ptl_tensor_data(dense), 1,
                        (size_t)host->numel * ptl_dtype_itemsize(host->dtype)) < 0) {
        goto done;
    }
    rc = ptl_copy_into(dst, host);
done:
    ptl_xdecref(dense);
    ptl_xdecref(host);
    return rc;
}

/* Note [Asynchronous copies]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A non_blocking copy between a contiguous tensor in pinned host memory and a contiguous
 * device tensor of the same dtype and shape is one cudaMemcpyAsync on the current stream
 * that returns at once, as in PyTorch; the stream is recorded on the pinned block, so the
 * host allocator does not hand it out again before the copy is done (Note [Caching host
 * allocator]).  Every other copy with a host side (pageable memory, a conversion, a
 * broadcast, a strided side) is synchronous, as CUDA's copies from pageable memory are.
 * 1 when the copy was queued, 0 when it does not qualify, -1 with an error set. */
static int
copy_async(PtlTensorImpl *dst, PtlTensorImpl *src)
{
    int to_device = dst->device.type != PTL_DEVICE_CPU;
    PtlTensorImpl *host = to_device ? src : dst;
    if (dst->dtype != src->dtype || dst->dim != src->dim ||
        memcmp(dst->sizes, src->sizes, (size_t)dst->dim * sizeof(int64_t)) != 0 ||
        !ptl_storage_is_pinned(host->storage) || !ptl_tensor_is_contiguous(dst) ||
        !ptl_tensor_is_contiguous(src)) {
        return 0;
    }
    PtlStreamId stream = ptl_cuda_current_stream_here();
    if (ptl_cuda_memcpy_async(ptl_tensor_data(dst), to_device, ptl_tensor_data(src),
                              !to_device, (size_t)dst->numel * ptl_dtype_itemsize(dst->dtype),
                              stream) < 0 ||
        ptl_pinned_storage_record_stream(host->storage, stream) < 0) {
        return -1;
    }
    return 1;
}

/* copy_(Tensor(a!) self, Tensor src, bool non_blocking=False): every copy with a CUDA side;
 * non_blocking: Note [Asynchronous copies]. */
static int
copy__cuda(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *self = s[0].u.t, *src = s[1].u.t;
    int rc;
    (void)op;
    (void)ks;
    if (self == src) {
        rc = 0;
    }
    else if (s[2].u.b && self->device.type != src->device.type &&
             (rc = copy_async(self, src)) != 0) {
        rc = rc < 0 ? -1 : 0;
    }
    else if (self->device.type == PTL_DEVICE_CPU) {
        rc = copy_device_to_host(self, src);
    }
    else if (src->device.type == PTL_DEVICE_CPU) {
        rc = copy_host_to_device(self, src);
    }
    else {
        rc = copy_on_device(self, src);
    }
    if (rc < 0) {
        return -1;
    }
    return ptl_kernel_return_self(s);
}

/* Note [Linear algebra on the host]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The decompositions and solvers (LU, Cholesky, QR, SVD, eigh, eig, inv, det, slogdet,
 * solve, solve_triangular, lstsq's QR) have no device kernels: on CUDA tensors their CPU
 * kernel runs on host copies of the arguments and the results are copied back to the device
 * (ptl_run_on_host, device_compose.h), so the results, info codes and errors are the CPU's,
 * at the cost of the copies and a synchronisation.  PyTorch's CUDA eig takes this road
 * (MAGMA's geev runs on the host); its other decompositions run cuSOLVER on the device,
 * which batched kernels of one block per matrix would match here.  Tensors on two devices
 * are refused first, as everywhere. */
static int
linalg_on_host(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    const PtlTensorImpl *dev = NULL, *host = NULL;
    for (int i = 0; i < op->schema.nargs; i++) {
        if (s[i].tag == PTL_IV_TENSOR) {
            const PtlTensorImpl *t = s[i].u.t;
            if (t->device.type == PTL_DEVICE_CPU) {
                host = t;
            }
            else if (dev == NULL) {
                dev = t;
            }
            else if (!ptl_device_equal(dev->device, t->device)) {
                host = t;
            }
        }
    }
    if (dev != NULL && host != NULL) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Expected all tensors to be on the same device, but found at "
                             "least two devices, %s:%d and %s:%d!",
                             ptl_device_type_name(dev->device.type), dev->device.index,
                             ptl_device_type_name(host->device.type), host->device.index);
    }
    ks = (ks & ~PTL_KEYSET(PTL_KEY_CUDA)) | PTL_KEYSET(PTL_KEY_CPU);
    return ptl_run_on_host(op->kernels[PTL_KEY_CPU], op, ks, s);
}

#define POINTWISE(ID, FN) {PTL_OP_##ID, PTL_KEY_CUDA, FN}
/* a binary op's three overloads: NAME.Tensor, NAME_.Tensor, NAME.out */
#define BINARY_OVERLOADS(NAME, FN) \
    POINTWISE(NAME##_Tensor, FN), POINTWISE(NAME##__Tensor, FN), POINTWISE(NAME##_out, FN)
/* a unary op's three overloads: NAME, NAME_, NAME.out */
#define UNARY_OVERLOADS(NAME, FN) \
    POINTWISE(NAME, FN), POINTWISE(NAME##_, FN), POINTWISE(NAME##_out, FN)

static const PtlKernelReg cuda_kernels[] = {
    POINTWISE(copy_, copy__cuda),
    POINTWISE(_standard_gamma_grad, random_grad_cuda), POINTWISE(_dirichlet_grad, random_grad_cuda),
    /* Note [Linear algebra on the host] */
    POINTWISE(_linalg_svd, linalg_on_host), POINTWISE(linalg_lu_factor_ex, linalg_on_host),
    POINTWISE(_linalg_solve_ex, linalg_on_host), POINTWISE(linalg_inv_ex, linalg_on_host),
    POINTWISE(_linalg_det, linalg_on_host), POINTWISE(_linalg_slogdet, linalg_on_host),
    POINTWISE(linalg_solve_triangular, linalg_on_host),
    POINTWISE(linalg_cholesky_ex, linalg_on_host), POINTWISE(linalg_qr, linalg_on_host),
    POINTWISE(_linalg_eigh, linalg_on_host), POINTWISE(_linalg_eig_split, linalg_on_host),
    POINTWISE(_linalg_lstsq_qr, linalg_on_host),
    BINARY_OVERLOADS(add, add_cuda),
    BINARY_OVERLOADS(sub, add_cuda),
    BINARY_OVERLOADS(mul, mul_cuda),
    BINARY_OVERLOADS(div, div_cuda),
    UNARY_OVERLOADS(neg, unary_cuda),
    UNARY_OVERLOADS(relu, unary_cuda),
    UNARY_OVERLOADS(sigmoid, unary_cuda),
    UNARY_OVERLOADS(tanh, unary_cuda),
    UNARY_OVERLOADS(exp, unary_cuda),
    UNARY_OVERLOADS(log, unary_cuda),
    POINTWISE(_gelu, gelu_cuda),
    POINTWISE(gelu_backward, gelu_backward_cuda),
    POINTWISE(threshold_backward, threshold_backward_cuda),
    UNARY_OVERLOADS(acosh, special_unary_cuda),
    UNARY_OVERLOADS(asinh, special_unary_cuda),
    UNARY_OVERLOADS(atanh, special_unary_cuda),
    UNARY_OVERLOADS(erfc, special_unary_cuda),
    UNARY_OVERLOADS(i0, special_unary_cuda),
    POINTWISE(special_i0e, special_unary_cuda),
    POINTWISE(special_i0e_out, special_unary_cuda),
    POINTWISE(special_i1, special_unary_cuda),
    POINTWISE(special_i1_out, special_unary_cuda),
    POINTWISE(special_i1e, special_unary_cuda),
    POINTWISE(special_i1e_out, special_unary_cuda),
    POINTWISE(hypot, special_binary_cuda),
    POINTWISE(hypot_, special_binary_cuda),
    POINTWISE(hypot_out, special_binary_cuda),
    POINTWISE(igamma, special_binary_cuda),
    POINTWISE(igamma_, special_binary_cuda),
    POINTWISE(igamma_out, special_binary_cuda),
    POINTWISE(igammac, special_binary_cuda),
    POINTWISE(igammac_, special_binary_cuda),
    POINTWISE(igammac_out, special_binary_cuda),
    POINTWISE(_ptl_igamma_density, special_binary_cuda),
    POINTWISE(silu, act_cuda),
    POINTWISE(silu_, act_cuda),
    POINTWISE(silu_backward, act_cuda),
    POINTWISE(mish, act_cuda),
    POINTWISE(mish_, act_cuda),
    POINTWISE(mish_backward, act_cuda),
    POINTWISE(elu, act_cuda),
    POINTWISE(elu_, act_cuda),
    POINTWISE(elu_backward, act_cuda),
    POINTWISE(softplus, act_cuda),
    POINTWISE(softplus_backward, act_cuda),
    POINTWISE(log_sigmoid_forward, log_sigmoid_forward_cuda),
    POINTWISE(log_sigmoid_forward_output, log_sigmoid_forward_cuda),
    POINTWISE(log_sigmoid_backward, act_cuda),
    POINTWISE(hardswish, act_cuda),
    POINTWISE(hardswish_, act_cuda),
    POINTWISE(hardswish_backward, act_cuda),
    POINTWISE(hardsigmoid, act_cuda),
    POINTWISE(hardsigmoid_, act_cuda),
    POINTWISE(hardsigmoid_backward, act_cuda),
    POINTWISE(leaky_relu, act_cuda),
    POINTWISE(leaky_relu_, act_cuda),
    POINTWISE(leaky_relu_backward, act_cuda),
    POINTWISE(hardtanh, act_cuda),
    POINTWISE(hardtanh_, act_cuda),
    POINTWISE(hardtanh_backward, act_cuda),
    POINTWISE(softshrink, act_cuda),
    POINTWISE(softshrink_backward, act_cuda),
    POINTWISE(hardshrink, act_cuda),
    POINTWISE(hardshrink_backward, act_cuda),
    POINTWISE(celu, celu_cuda),
    POINTWISE(celu_, celu_cuda),
    POINTWISE(rsub_Tensor, rsub_cuda),
    UNARY_OVERLOADS(abs, math_unary_cuda),
    UNARY_OVERLOADS(sign, math_unary_cuda),
    UNARY_OVERLOADS(sqrt, math_unary_cuda),
    UNARY_OVERLOADS(reciprocal, math_unary_cuda),
    UNARY_OVERLOADS(clamp, clamp_scalar_cuda),
    UNARY_OVERLOADS(clip, clamp_scalar_cuda),
    POINTWISE(clamp_min, clamp_scalar_cuda),
    POINTWISE(clamp_max, clamp_scalar_cuda),
    POINTWISE(clamp_Tensor, clamp_tensor_cuda),
    POINTWISE(clamp__Tensor, clamp_tensor_cuda),
    POINTWISE(clamp_Tensor_out, clamp_tensor_cuda),
    POINTWISE(clip_Tensor, clamp_tensor_cuda),
    POINTWISE(clip__Tensor, clamp_tensor_cuda),
    POINTWISE(clip_Tensor_out, clamp_tensor_cuda),
    UNARY_OVERLOADS(nextafter, nextafter_cuda),
    UNARY_OVERLOADS(gcd, gcd_lcm_cuda),
    UNARY_OVERLOADS(lcm, gcd_lcm_cuda),
    POINTWISE(pow_Tensor_Scalar, pow_scalar_cuda),
    POINTWISE(pow__Scalar, pow_scalar_cuda),
    POINTWISE(pow_Tensor_Scalar_out, pow_scalar_cuda),
    POINTWISE(binary_cross_entropy, bce_cuda),
    POINTWISE(binary_cross_entropy_backward, bce_backward_cuda),
    POINTWISE(mse_loss, reg_loss_cuda),
    POINTWISE(mse_loss_backward, reg_loss_cuda),
    POINTWISE(smooth_l1_loss, reg_loss_cuda),
    POINTWISE(smooth_l1_loss_backward, reg_loss_cuda),
    POINTWISE(huber_loss, reg_loss_cuda),
    POINTWISE(huber_loss_backward, reg_loss_cuda),
};
#undef UNARY_OVERLOADS
#undef BINARY_OVERLOADS
#undef POINTWISE

/* The CUDA allocator's initializer: CUDA initialised (which registers the caching allocator)
 * and "cuda" made "cuda:<current device>", as PyTorch's tensors always carry an index. */
static int
init_device(PtlDevice *device)
{
    int current = 0;
    if (ptl_cuda_lazy_init() < 0) {
        return -1;
    }
    if (device->index < 0) {
        if (ptl_cuda_current_device(&current) < 0) {
            return -1;
        }
        device->index = (int8_t)current;
    }
    return 0;
}

/* The reductions, the softmax family and the matrix products run their CPU kernel on the
 * CUDA key too: its argument handling (dtypes, dims, PyTorch's errors) is the CPU's, and its
 * last step hands the plan to reduce.cu through device_reduce.h's hooks (Note [CUDA
 * reduction plan]) or the product to gemm.cu through device_gemm.h's (Note [CUDA GEMM
 * plan]). */
static const int shared_with_cpu[] = {
    PTL_OP_sum, PTL_OP_sum_dim_IntList, PTL_OP_nansum, PTL_OP_mean, PTL_OP_mean_dim,
    PTL_OP_prod, PTL_OP_prod_dim_int, PTL_OP_amax, PTL_OP_amin, PTL_OP_max, PTL_OP_min,
    PTL_OP_max_dim, PTL_OP_min_dim, PTL_OP_argmax, PTL_OP_argmin, PTL_OP_var, PTL_OP_var_dim,
    PTL_OP_var_correction, PTL_OP_std, PTL_OP_std_dim, PTL_OP_std_correction, PTL_OP_var_mean,
    PTL_OP_var_mean_dim, PTL_OP_var_mean_correction, PTL_OP_std_mean, PTL_OP_std_mean_dim,
    PTL_OP_std_mean_correction, PTL_OP_norm_Scalar, PTL_OP_norm_ScalarOpt_dim, PTL_OP__softmax,
    PTL_OP__log_softmax, PTL_OP__softmax_backward_data, PTL_OP__log_softmax_backward_data,
    PTL_OP_all, PTL_OP_all_dim, PTL_OP_all_dims, PTL_OP_any, PTL_OP_any_dim, PTL_OP_any_dims,
    PTL_OP_count_nonzero, PTL_OP_count_nonzero_dim_IntList, PTL_OP_linalg_vector_norm,
    PTL_OP_logsumexp,
    /* layer norm, nll_loss, embedding and batch norm: their last step takes device_nn.h's
     * hooks (Note [CUDA nn kernels] in nn_plan.h) */
    PTL_OP_native_layer_norm, PTL_OP_native_layer_norm_backward, PTL_OP_nll_loss_nd,
    PTL_OP_nll_loss_nd_backward, PTL_OP_embedding, PTL_OP_embedding_dense_backward,
    PTL_OP_native_batch_norm, PTL_OP_native_batch_norm_backward,
    /* embedding_bag and affine_grid: compositions of the device's index kernels and matrix
     * products (Note [Device embedding bags] in embedding.c, Note [Device affine_grid] in
     * resample.c); embedding_bag's offsets are checked and turned into bags on the host */
    PTL_OP__ptl_embedding_bag, PTL_OP__ptl_embedding_bag_offsets, PTL_OP_affine_grid_generator,
    PTL_OP_affine_grid_generator_backward,
    /* convolution: its primitives take device_conv.h's hook (Note [CUDA convolution] in
     * conv_plan.h) */
    PTL_OP_convolution, PTL_OP_convolution_backward, PTL_OP_im2col, PTL_OP_col2im,
    /* max, average and adaptive average pooling: device_pool.h's hook (Note [CUDA pooling]
     * in pool_plan.h) */
    PTL_OP_max_pool2d_with_indices, PTL_OP_max_pool2d_with_indices_backward,
    PTL_OP_max_pool3d_with_indices, PTL_OP_max_pool3d_with_indices_backward, PTL_OP_avg_pool2d,
    PTL_OP_avg_pool2d_backward, PTL_OP_avg_pool3d, PTL_OP_avg_pool3d_backward,
    PTL_OP__adaptive_avg_pool2d, PTL_OP__adaptive_avg_pool2d_backward,
    /* the matrix products: device_gemm.h's hook */
    PTL_OP_mm, PTL_OP_mm_out, PTL_OP_bmm, PTL_OP_bmm_out, PTL_OP_addmm, PTL_OP_addmm_,
    PTL_OP_addmm_out, PTL_OP_baddbmm, PTL_OP_baddbmm_, PTL_OP_baddbmm_out, PTL_OP_addmv,
    PTL_OP_addmv_, PTL_OP_addmv_out, PTL_OP_mv, PTL_OP_dot,
    /* the random fills: device_random.h's hook (Note [CUDA random fills] in random.cu) */
    PTL_OP_uniform_, PTL_OP_normal_, PTL_OP_log_normal_, PTL_OP_exponential_, PTL_OP_cauchy_,
    PTL_OP_geometric_, PTL_OP_bernoulli__float, PTL_OP_bernoulli__Tensor, PTL_OP_bernoulli,
    PTL_OP_bernoulli_p, PTL_OP_random_, PTL_OP_random__to, PTL_OP_random__from,
    PTL_OP_rand_like, PTL_OP_randn_like, PTL_OP_randint_like, PTL_OP_randint_like_low_dtype,
    PTL_OP_native_dropout, PTL_OP_native_dropout_backward, PTL_OP_normal_Tensor_Tensor,
    PTL_OP_normal_Tensor_float, PTL_OP_normal_float_Tensor, PTL_OP_poisson, PTL_OP__standard_gamma,
    PTL_OP__sample_dirichlet,
    /* the random factories for device="cuda", and randperm and multinomial (Note [CUDA
     * randperm and multinomial] in random.c); all draw from the device's generator (Note
     * [CUDA generators] in generator.h) */
    PTL_OP_rand, PTL_OP_rand_generator, PTL_OP_randn, PTL_OP_randn_generator,
    PTL_OP_normal_float_float, PTL_OP_randint, PTL_OP_randint_generator, PTL_OP_randint_low,
    PTL_OP_randint_low_generator, PTL_OP_randperm, PTL_OP_randperm_generator, PTL_OP_multinomial,
    /* the fused optimizer steps: optim_step.h's hooks (optim.cu) */
    PTL_OP__fused_sgd_step_, PTL_OP__fused_adam_step_,
    /* gather and the scatter family: device_index.h's hooks (Note [CUDA index and sort
     * kernels] in index_plan.h) */
    PTL_OP_gather, PTL_OP_scatter_src, PTL_OP_scatter_value, PTL_OP_scatter_reduce,
    PTL_OP_scatter_value_reduce, PTL_OP_scatter__src, PTL_OP_scatter__value,
    PTL_OP_scatter__reduce, PTL_OP_scatter__value_reduce, PTL_OP_scatter_add,
    PTL_OP_scatter_add_, PTL_OP_scatter_reduce_two, PTL_OP_scatter_reduce__two,
    /* advanced indexing and the index_* family: the same, with index.c's tables */
    PTL_OP_index_Tensor, PTL_OP_index_put_, PTL_OP_index_put, PTL_OP_index_select,
    PTL_OP_index_select_out, PTL_OP_index_add_, PTL_OP_index_add, PTL_OP_index_copy_,
    PTL_OP_index_copy, PTL_OP_index_fill__int_Tensor, PTL_OP_index_fill__int_Scalar,
    PTL_OP_index_fill_int_Tensor, PTL_OP_index_fill_int_Scalar,
    /* cat and the joins built on it (join.c) */
    PTL_OP_cat, PTL_OP_concat, PTL_OP_stack, PTL_OP_hstack, PTL_OP_vstack,
    /* sort, argsort and topk: device_index.h's sort hook (Note [CUDA sort] in sort_plan.h) */
    PTL_OP_sort, PTL_OP_sort_stable, PTL_OP_argsort, PTL_OP_argsort_stable, PTL_OP_topk,
    /* the fused attention: device_attention.h's hook (Note [CUDA flash attention] in
     * attention_plan.h) */
    PTL_OP__scaled_dot_product_flash_attention_for_cpu,
    PTL_OP__scaled_dot_product_flash_attention_for_cpu_backward,
    /* adaptive max pooling and max_unpool2d: device_pool.h's hook (Note [CUDA pooling] and
     * Note [CUDA max_unpool] in pool_plan.h) */
    PTL_OP_adaptive_max_pool2d, PTL_OP_adaptive_max_pool2d_backward, PTL_OP_max_unpool2d,
    PTL_OP_max_unpool2d_backward, PTL_OP_adaptive_max_pool3d, PTL_OP_adaptive_max_pool3d_backward,
    /* where, masked_fill and take: device_index.h's hooks (Note [CUDA masked_fill and take]
     * in index_plan.h) */
    PTL_OP_masked_fill_Scalar, PTL_OP_masked_fill_Tensor, PTL_OP_masked_fill__Scalar,
    PTL_OP_masked_fill__Tensor, PTL_OP_take, PTL_OP_where_self, PTL_OP_where_self_out,
    /* the comparisons and logical ops: the same select kernel with a predicate */
    PTL_OP_eq_Tensor, PTL_OP_eq__Tensor, PTL_OP_eq_out, PTL_OP_ne_Tensor, PTL_OP_ne__Tensor,
    PTL_OP_ne_out, PTL_OP_lt_Tensor, PTL_OP_lt__Tensor, PTL_OP_lt_out, PTL_OP_le_Tensor,
    PTL_OP_le__Tensor, PTL_OP_le_out, PTL_OP_gt_Tensor, PTL_OP_gt__Tensor, PTL_OP_gt_out,
    PTL_OP_ge_Tensor, PTL_OP_ge__Tensor, PTL_OP_ge_out, PTL_OP_logical_and, PTL_OP_logical_and_,
    PTL_OP_logical_and_out, PTL_OP_logical_or, PTL_OP_logical_or_, PTL_OP_logical_or_out,
    PTL_OP_logical_xor, PTL_OP_logical_xor_, PTL_OP_logical_xor_out,
    /* equal: eq on the device, reduced there by all, one bool read back (compare.c) */
    PTL_OP_equal,
    /* shape.c's movers: device_index.h's shape hook (the same Note) */
    PTL_OP_flip, PTL_OP_roll, PTL_OP_rot90, PTL_OP_repeat, PTL_OP_tril, PTL_OP_tril_,
    PTL_OP_triu, PTL_OP_triu_,
    /* cumsum and cumprod: device_reduce.h's scan hook (Note [CUDA scans] in reduce_plan.h) */
    PTL_OP_cumsum, PTL_OP_cumprod,
    /* one_hot, bincount and repeat_interleave: the device's reductions, scans, scatter_ and
     * index_add_ (Note [Device one_hot and bincount] in summary.c, shape.c) */
    PTL_OP_one_hot, PTL_OP_bincount, PTL_OP_repeat_interleave_Tensor,
    /* nonzero and unique: a walk of a host copy, masked_select's way (Note [Host walks for
     * data-dependent sizes] in device_compose.h) */
    PTL_OP_nonzero, PTL_OP__unique2, PTL_OP_unique_dim, PTL_OP_unique_consecutive,
    /* the pads and upsampling: resample.c's maps, device_nn.h's resample hook (Note [CUDA
     * resampling] in resample_plan.h) */
    PTL_OP_reflection_pad1d, PTL_OP_reflection_pad1d_backward, PTL_OP_reflection_pad2d,
    PTL_OP_reflection_pad2d_backward, PTL_OP_reflection_pad3d, PTL_OP_reflection_pad3d_backward,
    PTL_OP_replication_pad1d, PTL_OP_replication_pad1d_backward, PTL_OP_replication_pad2d,
    PTL_OP_replication_pad2d_backward, PTL_OP_replication_pad3d,
    PTL_OP_replication_pad3d_backward, PTL_OP__pad_circular, PTL_OP__pad_circular_backward,
    PTL_OP_upsample_nearest1d, PTL_OP_upsample_nearest1d_backward, PTL_OP_upsample_nearest2d,
    PTL_OP_upsample_nearest2d_backward, PTL_OP_upsample_nearest3d,
    PTL_OP_upsample_nearest3d_backward, PTL_OP_upsample_linear1d,
    PTL_OP_upsample_linear1d_backward, PTL_OP_upsample_bilinear2d,
    PTL_OP_upsample_bilinear2d_backward, PTL_OP_upsample_trilinear3d,
    PTL_OP_upsample_trilinear3d_backward, PTL_OP_upsample_bicubic2d,
    PTL_OP_upsample_bicubic2d_backward,
    /* the grid sampler: device_nn.h's grid sampler hook (Note [CUDA grid sampler] in
     * grid_sampler_plan.c) */
    PTL_OP_grid_sampler_2d, PTL_OP_grid_sampler_2d_backward, PTL_OP_grid_sampler_3d,
    PTL_OP_grid_sampler_3d_backward,
    /* the recurrent layer: device GEMMs and device_nn.h's cell hook (Note [CUDA recurrent
     * layer] in rnn_plan.h) */
    PTL_OP__ptl_rnn_layer, PTL_OP__ptl_rnn_layer_backward,
    /* the fused cells: one launch of the same cell kernel (Note [CUDA fused cells] in
     * rnn_cells.c) */
    PTL_OP__thnn_fused_lstm_cell, PTL_OP__thnn_fused_lstm_cell_backward_impl,
    PTL_OP__thnn_fused_gru_cell, PTL_OP__thnn_fused_gru_cell_backward,
    /* cummax, cummin, logcumsumexp: the scan kernel; kthvalue, median, nanmedian and mode:
     * the device sort, pointwise ops and gather (Note [Device selections and scans] in
     * sort_device.c) */
    PTL_OP_cummax, PTL_OP_cummin, PTL_OP_logcumsumexp, PTL_OP_kthvalue, PTL_OP_median,
    PTL_OP_median_dim, PTL_OP_nanmedian, PTL_OP_nanmedian_dim, PTL_OP_mode,
    /* aminmax: the min and max reductions (reduce.c's reduce_cuda) */
    PTL_OP_aminmax,
    /* trace and diag_embed: the sum over the diagonal's view, the fill and copy kernels into
     * it (shape.c) */
    PTL_OP_trace, PTL_OP_diag_embed,
    /* renorm: its composition of norm, pointwise ops and where (linalg_norm.c); masked_scatter:
     * the count read back, cumsum, take and where (Note [Device masked_scatter] in
     * index_device.c) */
    PTL_OP_renorm, PTL_OP_renorm_, PTL_OP_masked_scatter, PTL_OP_masked_scatter_,
    /* histc: the range read back, pointwise kernels and index_add_ (Note [Device histc] in
     * summary.c) */
    PTL_OP_histc,
    /* searchsorted and bucketize: device_search.h's hook (Note [CUDA searchsorted] in
     * search_plan.h) */
    PTL_OP_searchsorted_Tensor, PTL_OP_searchsorted_Scalar, PTL_OP_bucketize_Tensor,
    PTL_OP_bucketize_Scalar,
    /* vdot: dot's kernel (device_gemm.h's hook); linalg_cross and unfold_backward: rolls,
     * products and adds into strided views (Note [Device cross and unfold_backward] in
     * shape_device.c); cdist's two ops: the differences' norm and the per-p gradient
     * formula (Note [Device cdist] in linalg_norm.c); embedding_renorm_: the distinct rows'
     * norms and index_copy_ (Note [Device embedding_renorm_] in embedding.c); frexp: bit
     * operations on its integer view (Note [Device frexp] in unary.c) */
    PTL_OP_vdot, PTL_OP_linalg_cross, PTL_OP_unfold_backward, PTL_OP__cdist_forward,
    PTL_OP__cdist_backward, PTL_OP_embedding_renorm_, PTL_OP_frexp_Tensor,
    PTL_OP_frexp_Tensor_out,
};
#define NSHARED (sizeof(shared_with_cpu) / sizeof(shared_with_cpu[0]))

/* Registers the table and the CPU kernels shared with CUDA (after the CPU tables, native.def)
 * and makes the first CUDA allocation initialise CUDA. */
int
ptl_register_cuda_kernels(void)
{
    PtlKernelReg shared[NSHARED];
    for (size_t i = 0; i < NSHARED; i++) {
        shared[i].op = shared_with_cpu[i];
        shared[i].key = PTL_KEY_CUDA;
        shared[i].fn = ptl_op((PtlOpId)shared_with_cpu[i])->kernels[PTL_KEY_CPU];
    }
    ptl_cuda_set_kernel_hooks();
    ptl_device_gemm_hook = ptl_cuda_gemm;
    ptl_device_pinned_storage_hook = ptl_pinned_storage_new;
    ptl_allocator_set_initializer(PTL_DEVICE_CUDA, init_device);
    if (ptl_dispatcher_register(shared, NSHARED, __FILE__) < 0 ||
        ptl_register_cuda_math_kernels() < 0) {
        return -1;
    }
    return ptl_dispatcher_register(cuda_kernels, sizeof(cuda_kernels) / sizeof(cuda_kernels[0]),
                                   __FILE__);
}
#undef NSHARED

#else

int
ptl_register_cuda_kernels(void)
{
    /* pinned memory comes from the testing hook's fake host allocator, or is refused */
    ptl_device_pinned_storage_hook = ptl_pinned_storage_new;
    return 0;
}

#endif
