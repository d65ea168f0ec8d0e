/* meta.c -- the Meta dispatch key: its kernels and its fallback.  Mirrors PyTorch's meta
 * functions (the TORCH_META_FUNC half of ATen's structured kernels and
 * torch/_meta_registrations.py).  See Note [Meta tensors] in c10/device.h.
 *
 * Note [Meta kernels]
 * ~~~~~~~~~~~~~~~~~~~
 * A meta kernel computes what the CPU kernel would return (sizes, strides, dtype, aliasing,
 * the errors about shapes and dtypes) and touches no data.  Most CPU kernels already split
 * that way: they check their arguments, allocate their outputs through TensorIterator, the
 * factories or ptl_empty, and move data only through ptl_iter_run, reduce.c's reduce_run,
 * ptl_copy_into or random.c's fill, each of which does nothing when the output is a meta
 * tensor; views touch no data at all.  The Meta kernel of such an op is its CPU kernel, so
 * the two can never disagree about a shape.  The ops below are those whose CPU kernel has
 * been checked to be of that kind: tests/aten/test_meta.py runs every operator of the table
 * on meta copies of its samples and compares sizes, strides and dtypes with the CPU results,
 * and a kernel that read data would crash there.  An op outside the list (one whose output
 * shape depends on values, like nonzero, or whose kernel reads its inputs) takes the Meta
 * fallback: PyTorch's "Could not run ... from the 'Meta' backend" NotImplementedError,
 * which also keeps a meta call from falling through to a CPU kernel when a CPU scalar rides
 * along.  Before a CPU kernel runs for Meta, every tensor argument must be a meta tensor (a
 * CPU 0-dim tensor may ride along with a pointwise op, as a scalar, as in PyTorch): a CPU
 * kernel handed a meta tensor beside CPU data would read the meta one. */
#include "../../c10/error.h"
#include "native.h"

static int
meta_fallback(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)s;
    return ptl_dispatcher_no_kernel_error(op, ks);
}

/* The ops whose CPU kernel is their Meta kernel (Note [Meta kernels]).  Out= variants are
 * left out (their samples are not swept), and so are the ops that read values: indexing by
 * tensors, sort and its relatives, scans, pooling, padding, resampling, linalg
 * decompositions, samplers with tensor parameters, nonzero and the other data-dependent
 * shapes.  tests/aten/test_meta.py keeps this list honest. */
#define X(ID) PTL_OP_##ID
static const int meta_ops[] = {
    X(_dirichlet_grad), X(_fused_adam_step_), X(_fused_sgd_step_), X(_gelu), X(_log_softmax),
    X(_log_softmax_backward_data), X(_softmax), X(_softmax_backward_data),
    X(_standard_gamma_grad), X(_to_copy), X(abs), X(abs_), X(acos), X(acos_), X(add_Tensor),
    X(add__Tensor), X(addcdiv), X(addcdiv_), X(addcmul), X(addcmul_), X(addmm), X(addmv),
    X(alias), X(all), X(all_dim), X(all_dims), X(amax), X(amin), X(aminmax), X(any), X(any_dim),
    X(any_dims), X(arange), X(arange_start), X(arange_start_step), X(argmax), X(argmin),
    X(as_strided), X(asin), X(asin_), X(atan), X(atan2), X(atan2_), X(atan_), X(baddbmm),
    X(bernoulli_p), X(bernoulli__float), X(bitwise_and_Tensor), X(bitwise_and__Tensor),
    X(bitwise_left_shift_Tensor), X(bitwise_left_shift__Tensor), X(bitwise_not),
    X(bitwise_not_), X(bitwise_or_Tensor), X(bitwise_or__Tensor), X(bitwise_right_shift_Tensor),
    X(bitwise_right_shift__Tensor), X(bitwise_xor_Tensor), X(bitwise_xor__Tensor), X(bmm),
    X(broadcast_to), X(cat), X(cauchy_), X(ceil), X(ceil_), X(celu), X(celu_), X(chunk),
    X(clamp), X(clamp_Tensor), X(clamp_), X(clamp__Tensor), X(clamp_max), X(clamp_min), X(clip),
    X(clip_Tensor), X(clip_), X(clip__Tensor), X(clone), X(concat), X(constant_pad_nd),
    X(contiguous), X(convolution), X(convolution_backward), X(copy_), X(cos), X(cos_), X(cosh),
    X(cosh_), X(count_nonzero), X(count_nonzero_dim_IntList), X(detach), X(diagonal),
    X(digamma), X(digamma_), X(div_Tensor), X(div_Tensor_mode), X(div__Tensor),
    X(div__Tensor_mode), X(dot), X(elu), X(elu_), X(elu_backward), X(embedding),
    X(embedding_dense_backward), X(empty_memory_format), X(empty_like), X(empty_strided),
    X(eq_Tensor), X(eq__Tensor), X(erf), X(erf_), X(erfinv), X(erfinv_), X(exp), X(exp2),
    X(exp2_), X(exp_), X(expand), X(expm1), X(expm1_), X(exponential_), X(eye),
    X(eye_m), X(fill__Scalar), X(fill__Tensor), X(flatten_using_ints), X(floor), X(floor_),
    X(floor_divide), X(floor_divide_), X(fmax), X(fmin), X(fmod_Tensor), X(fmod__Tensor),
    X(frac), X(frac_), X(full), X(full_like), X(ge_Tensor), X(ge__Tensor), X(gelu_backward),
    X(geometric_), X(gt_Tensor), X(gt__Tensor), X(hardshrink), X(hardshrink_backward),
    X(hardsigmoid), X(hardsigmoid_), X(hardsigmoid_backward), X(hardswish), X(hardswish_),
    X(hardswish_backward), X(hardtanh), X(hardtanh_), X(hardtanh_backward), X(hstack),
    X(isclose), X(isfinite), X(isinf), X(isnan), X(le_Tensor), X(le__Tensor), X(leaky_relu),
    X(leaky_relu_), X(leaky_relu_backward), X(lerp_Scalar), X(lerp_Tensor), X(lerp__Scalar),
    X(lerp__Tensor), X(lgamma), X(lgamma_), X(linalg_vector_norm), X(linspace), X(log),
    X(log10), X(log10_), X(log1p), X(log1p_), X(log2), X(log2_), X(log_), X(log_normal_),
    X(log_sigmoid_backward), X(log_sigmoid_forward), X(logical_and), X(logical_and_),
    X(logical_not), X(logical_not_), X(logical_or), X(logical_or_), X(logical_xor),
    X(logical_xor_),
    X(logspace), X(logsumexp), X(lt_Tensor), X(lt__Tensor), X(masked_fill_Scalar),
    X(masked_fill_Tensor), X(masked_fill__Scalar), X(masked_fill__Tensor), X(max), X(max_dim),
    X(max_other), X(maximum), X(mean), X(mean_dim), X(min), X(min_dim), X(min_other),
    X(minimum), X(mish), X(mish_), X(mish_backward), X(mm), X(moveaxis_int), X(movedim_int),
    X(movedim_intlist), X(mul_Tensor), X(mul__Tensor), X(mv), X(nan_to_num), X(nan_to_num_),
    X(nansum), X(narrow), X(native_group_norm), X(native_group_norm_backward),
    X(native_layer_norm), X(native_layer_norm_backward), X(ne_Tensor),
    X(ne__Tensor), X(neg), X(neg_), X(nll_loss_nd), X(nll_loss_nd_backward), X(norm_Scalar),
    X(norm_ScalarOpt_dim), X(normal_float_float), X(normal_), X(ones), X(ones_like), X(permute),
    X(polygamma), X(polygamma_), X(pow_Scalar), X(pow_Tensor_Scalar), X(pow_Tensor_Tensor),
    X(pow__Scalar), X(pow__Tensor_Tensor), X(prod), X(prod_dim_int), X(rand), X(rand_generator),
    X(rand_like), X(randint), X(randint_generator), X(randint_low), X(randint_low_generator),
    X(randint_like), X(randint_like_low_dtype), X(randn), X(randn_generator), X(randn_like),
    X(random_), X(random__from), X(random__to), X(reciprocal), X(reciprocal_), X(relu),
    X(relu_), X(remainder_Tensor), X(remainder__Tensor), X(reshape), X(round),
    X(round_decimals), X(round_), X(round__decimals), X(rsqrt), X(rsqrt_), X(rsub_Tensor),
    X(scalar_tensor), X(select_int), X(sigmoid), X(sigmoid_), X(sign), X(sign_), X(silu),
    X(silu_), X(silu_backward), X(sin), X(sin_), X(sinh), X(sinh_), X(slice_Tensor),
    X(softplus), X(softplus_backward), X(softshrink), X(softshrink_backward), X(split_Tensor),
    X(split_sizes), X(split_with_sizes), X(sqrt), X(sqrt_), X(square), X(square_), X(squeeze),
    X(squeeze_dim), X(squeeze_dims), X(stack), X(std), X(std_correction), X(std_dim),
    X(std_mean), X(std_mean_correction), X(std_mean_dim), X(sub_Tensor), X(sub__Tensor), X(sum),
    X(sum_dim_IntList), X(swapaxes), X(swapdims), X(t), X(tan), X(tan_), X(tanh), X(tanh_),
    X(threshold), X(threshold_), X(threshold_backward), X(to_dense), X(transpose_int), X(tril),
    X(tril_), X(tril_indices), X(triu), X(triu_), X(triu_indices), X(trunc), X(trunc_),
    X(unbind_int), X(unflatten_int),
    X(unfold), X(uniform_), X(unsqueeze), X(var), X(var_correction), X(var_dim), X(var_mean),
    X(var_mean_correction), X(var_mean_dim), X(vdot), X(view), X(view_dtype), X(vstack),
    X(where_self), X(zero_), X(zeros), X(zeros_like),
};
#undef X

/* The CPU kernel each listed op runs for Meta, saved at registration. */
static PtlKernel cpu_kernels[PTL_OP_COUNT];

/* 0 when t may take part in a meta call of op, else -1 with PyTorch's device error. */
static int
check_meta_argument(const PtlOperator *op, const PtlTensorImpl *t)
{
    if (t == NULL || ptl_tensor_is_meta(t) ||
        (t->dim == 0 && t->device.type == PTL_DEVICE_CPU && (op->flags & PTL_OPF_POINTWISE))) {
        return 0;
    }
    return ptl_error_set(PTL_ERR_RUNTIME, "Tensor on device %s is not on the expected device "
                         "meta!", ptl_device_type_name(t->device.type));
}

/* The Meta kernel of every listed op: its arguments checked, then its CPU kernel.  copy_
 * is exempt: it copies from any device into a meta tensor and refuses to copy out of one
 * (ptl_copy_into). */
static int
meta_kernel(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    uint32_t m = op->id == PTL_OP_copy_ ? 0 : op->tensor_args;
    while (m) {
        const PtlIValue *v = &s[__builtin_ctz(m)];
        m &= m - 1;
        if (v->tag == PTL_IV_TENSOR && check_meta_argument(op, v->u.t) < 0) {
            return -1;
        }
        for (int64_t j = 0; v->tag == PTL_IV_TENSORLIST && j < v->u.tl.n; j++) {
            if (check_meta_argument(op, v->u.tl.data[j]) < 0) {
                return -1;
            }
        }
    }
    return cpu_kernels[op->id](op, ks, s);
}

/* Registers meta_kernel for every listed op, and the fallback.  Runs after the CPU tables
 * (native.def's order). */
int
ptl_register_meta_kernels(void)
{
    ptl_dispatcher_register_fallback(PTL_KEY_META, meta_fallback);
    for (size_t i = 0; i < sizeof(meta_ops) / sizeof(meta_ops[0]); i++) {
        PtlKernelReg r = {meta_ops[i], PTL_KEY_META, meta_kernel};
        if ((cpu_kernels[meta_ops[i]] = ptl_ops[meta_ops[i]].kernels[PTL_KEY_CPU]) == NULL) {
            return ptl_error_set(PTL_ERR_RUNTIME, "meta.c: %s has no CPU kernel to reuse",
                                 ptl_ops[meta_ops[i]].schema.name);
        }
        if (ptl_dispatcher_register(&r, 1, __FILE__) < 0) {
            return -1;
        }
    }
    return 0;
}
