/* complex.c -- complex64/complex128: the Complex dispatch key's kernels and fallback, and
 * the ops that move between complex and real tensors (real, imag, view_as_real,
 * view_as_complex, complex, polar, angle, conj).  Mirrors ATen/native/Complex.cpp,
 * ATen/native/UnaryOps.cpp (angle, conj) and TensorConversions' view_as_real/complex.
 *
 * Note [Complex dtypes]
 * ~~~~~~~~~~~~~~~~~~~~~
 * Every complex tensor carries the Complex dispatch key (c10's ptl_tensor_keys), just above
 * the backends, and a call whose ScalarType argument is complex gets it too, as does one
 * with a complex Scalar (the dispatcher's argument_keys; Note [Complex Scalars] in
 * ivalue.h), so any call with a complex argument or a complex result dtype passes here
 * before a CPU kernel runs.
 * The CPU kernels were written for real dtypes (many branch on "floating or else integer"),
 * so the key decides, per op, what a complex argument may reach:
 *   - ops with a complex kernel here (add, sub, mul, div, pow, lerp, addcmul, addcdiv, neg,
 *     exp, log, sqrt, reciprocal, abs, eq, ne, isclose, isnan, isinf, isfinite, sum, mean)
 *     run it: the complex arithmetic of C99's <complex.h>, a complex Scalar (alpha, value,
 *     weight, exponent) read as {re, im};
 *   - ops whose CPU kernel only moves bytes or converts through copy.c's conversion table
 *     (views, copy_, _to_copy, clone, cat, stack, index, fill_, masked_fill, where, the
 *     factories, eye, tril/triu, diagonal, diag_embed, flip; fill_, masked_fill and full store a
 *     complex Scalar), allclose and equal (they call isclose and eq), the matrix
 *     products of linalg.c (their gemm calls take complex operands to gemm_complex.c, Note
 *     [Complex GEMM]), the gather/scatter and index_put/index_add family (their element
 *     moves take 16 bytes, their sums and products fold complex values: index_complex.h)
 *     and the ops of this file fall through to the CPU kernel (`passthrough_ops`);
 *   - an operator a library defines (torch.library, a C extension: an id past ops.def's)
 *     falls through: its kernels get complex tensors and Scalars, as PyTorch's do;
 *   - every other op raises PyTorch's error: its "not supported for complex" message for
 *     the ordering ops (`ordering_errors`), else "\"<op>_cpu\" not implemented for
 *     'ComplexFloat'";
 *   - a call whose only complex arguments are Scalars (real tensors) runs the real kernel
 *     with each Scalar converted when its imaginary part is 0 (c10's checked_convert), else
 *     raises PyTorch's "value cannot be converted to type float without overflow" (naming
 *     double for the ops that read their Scalars as double), or the op's own message
 *     (`complex_scalar_errors`).
 * linalg_complex.c registers the complex linear algebra's kernels at this key (Note
 * [Complex linear algebra]), complex_norm.c the norms' and moments' (Note [Complex norms and
 * moments]).
 * On CUDA nothing takes a complex tensor yet ("\"<op>_cuda\" not implemented for ...").
 * resize_ (out= arguments) and the FFT operators of native/fft.c, whose CPU kernels take
 * complex64/complex128 themselves, pass through too.
 * Their derivatives: Note [Complex autograd] in autograd/derivatives/complex.c. */
#include <math.h>
#include <string.h>

#include "../../c10/error.h"
#include "../complex_math.h"
#include "native.h"

/* ---- which ops a complex argument may reach ---- */

static const PtlOpId passthrough_ops[] = {
    PTL_OP_empty_memory_format, PTL_OP_empty_strided, PTL_OP_zeros, PTL_OP_ones, PTL_OP_full,
    PTL_OP_empty_like, PTL_OP_zeros_like, PTL_OP_ones_like, PTL_OP_full_like,
    PTL_OP_clone, PTL_OP_contiguous, PTL_OP_copy_, PTL_OP__to_copy, PTL_OP_alias,
    PTL_OP_fill__Scalar, PTL_OP_fill__Tensor, PTL_OP_zero_, PTL_OP_resize_, PTL_OP_resize_as_,
    PTL_OP__fft_c2c, PTL_OP__fft_r2c, PTL_OP__fft_c2r,   /* native/fft.c: complex kernels */
    PTL_OP_view, PTL_OP_view_dtype, PTL_OP_reshape, PTL_OP_expand, PTL_OP_expand_as, PTL_OP_t,
    PTL_OP_transpose_int, PTL_OP_permute, PTL_OP_select_int, PTL_OP_slice_Tensor,
    PTL_OP_squeeze, PTL_OP_squeeze_dim, PTL_OP_unsqueeze, PTL_OP_flatten_using_ints,
    PTL_OP_detach, PTL_OP_as_strided, PTL_OP_narrow, PTL_OP_unbind_int,
    PTL_OP_cat, PTL_OP_stack, PTL_OP_index_Tensor, PTL_OP_index_select,
    /* they select or store whole elements, a complex Scalar included (index.c, ternary.c) */
    PTL_OP_masked_fill_Scalar, PTL_OP_masked_fill__Scalar, PTL_OP_masked_fill_Tensor,
    PTL_OP_masked_fill__Tensor, PTL_OP_where_self, PTL_OP_where_self_out, PTL_OP_scalar_tensor,
    PTL_OP_index_fill_int_Scalar, PTL_OP_index_fill__int_Scalar, PTL_OP_index_fill_int_Tensor,
    PTL_OP_index_fill__int_Tensor,
    /* scatter_gather.c moves 16-byte elements and folds complex sums and products (amax
     * and amin refuse with PyTorch's message there) */
    PTL_OP_gather, PTL_OP_scatter_src, PTL_OP_scatter_value, PTL_OP_scatter_reduce,
    PTL_OP_scatter_value_reduce, PTL_OP_scatter__src, PTL_OP_scatter__value,
    PTL_OP_scatter__reduce, PTL_OP_scatter__value_reduce, PTL_OP_scatter_add,
    PTL_OP_scatter_add_, PTL_OP_scatter_reduce_two, PTL_OP_scatter_reduce__two,
    /* index.c moves 16-byte elements and folds complex sums (index_add's complex alpha) */
    PTL_OP_index_put_, PTL_OP_index_put, PTL_OP_index_add_, PTL_OP_index_add,
    PTL_OP_index_copy_, PTL_OP_index_copy, PTL_OP_masked_scatter_, PTL_OP_masked_scatter,
    PTL_OP_take,
    PTL_OP_real, PTL_OP_imag, PTL_OP_view_as_real, PTL_OP_view_as_complex, PTL_OP_complex,
    PTL_OP_polar, PTL_OP_angle, PTL_OP_conj, PTL_OP_conj_physical,
    PTL_OP_tril_indices, PTL_OP_triu_indices,   /* they refuse every dtype but int32/int64 */
    /* they move or zero whole elements of any size (linalg_complex.c's formulas use them) */
    PTL_OP_tril, PTL_OP_tril_, PTL_OP_triu, PTL_OP_triu_, PTL_OP_diagonal, PTL_OP_diag_embed,
    PTL_OP_flip,   /* shape.c: whole elements of 16 bytes (Note [Flip of the innermost dim]) */
    PTL_OP_eye, PTL_OP_eye_m,
    PTL_OP_allclose, PTL_OP_equal,   /* isclose(...).all() and eq(...).all(): complex below */
    /* linalg.c's matrix products: gemm_complex.c (Note [Complex GEMM]) */
    PTL_OP_mm, PTL_OP_mm_out, PTL_OP_bmm, PTL_OP_bmm_out, PTL_OP_addmm, PTL_OP_addmm_,
    PTL_OP_addmm_out, PTL_OP_baddbmm, PTL_OP_baddbmm_, PTL_OP_baddbmm_out, PTL_OP_addmv,
    PTL_OP_addmv_, PTL_OP_addmv_out, PTL_OP_mv, PTL_OP_dot, PTL_OP_vdot,
    /* random.c fills a complex tensor part by part (uniform, normal) and refuses it with
     * PyTorch's messages (exponential, cauchy) */
    PTL_OP_rand, PTL_OP_rand_generator, PTL_OP_randn, PTL_OP_randn_generator,
    PTL_OP_rand_like, PTL_OP_randn_like, PTL_OP_uniform_, PTL_OP_normal_,
    PTL_OP_normal_float_float, PTL_OP_exponential_, PTL_OP_cauchy_,
    /* shape ops: the views of view.c and shape.c (unfold), cat's composites (join.c), and
     * kernels that move whole elements of any size: roll, rot90 and repeat through
     * shape_gather.c (16-byte elements); constant_pad_nd: complex_parts.c */
    PTL_OP_swapaxes, PTL_OP_swapdims, PTL_OP_broadcast_to, PTL_OP_squeeze_dims,
    PTL_OP_unflatten_int, PTL_OP_movedim_int, PTL_OP_moveaxis_int, PTL_OP_movedim_intlist,
    PTL_OP_split_Tensor, PTL_OP_split_sizes, PTL_OP_split_with_sizes, PTL_OP_chunk,
    PTL_OP_unfold, PTL_OP_hstack, PTL_OP_vstack, PTL_OP_roll, PTL_OP_rot90, PTL_OP_repeat,
    /* nn, storage: native_dropout multiplies by its bool mask and scale, and its backward
     * likewise, through dispatcher ops (random.c); set_ takes the source's storage whole
     * (factory.c) */
    PTL_OP_native_dropout, PTL_OP_native_dropout_backward, PTL_OP_set__source_Tensor,
    /* linear algebra: shape.c's linalg_cross multiplies complex elements (complex_norm.c
     * holds the norms' and moments' Complex-key kernels) */
    PTL_OP_linalg_cross,
    /* sparse and nn: sparse.c builds and converts through dispatcher ops on whole
     * elements (a call with a sparse argument skips this key: argument_keys in
     * dispatcher.c); embedding_renorm_ scales rows by their norms of |z|; the CPU
     * kernels of _adaptive_avg_pool2d and convolution(_backward) make PyTorch's checks and
     * refuse complex with its kernels' messages (an empty pooled output is computed, as
     * PyTorch's is) */
    PTL_OP_sparse_coo_tensor_indices, PTL_OP_sparse_coo_tensor_indices_size, PTL_OP_to_dense,
    PTL_OP_to_sparse, PTL_OP_to_sparse_sparse_dim, PTL_OP_coalesce, PTL_OP_embedding_renorm_,
    PTL_OP__adaptive_avg_pool2d, PTL_OP_convolution, PTL_OP_convolution_backward,
    /* the complex pointwise, scan and norm gaps: concat is cat (join.c); _pin_memory copies
     * whole elements (copy.c), _local_scalar_dense reads one (local_scalar.c); the flash attention and group norm kernels refuse a complex
     * input with PyTorch's messages, after the checks PyTorch makes first (attention.c,
     * group_norm.c) */
    PTL_OP_concat, PTL_OP__pin_memory, PTL_OP__local_scalar_dense,
    PTL_OP__scaled_dot_product_flash_attention_for_cpu,
    PTL_OP_native_group_norm,
};

/* An op's own refusal: PyTorch 2.13's exception type and message */
typedef struct OpRefusal {
    PtlOpId op;
    PtlErrorKind kind;
    const char *msg;
} OpRefusal;

/* The ordering and random ops' own messages (PyTorch 2.13's wording and exception type). */
static const OpRefusal ordering_errors[] = {
    {PTL_OP_max, PTL_ERR_NOT_IMPLEMENTED, "\"max_all\" not implemented for '%s'"},
    {PTL_OP_min, PTL_ERR_NOT_IMPLEMENTED, "\"min_all\" not implemented for '%s'"},
    {PTL_OP_max_dim, PTL_ERR_RUNTIME, "max(): does not support complex input"},
    {PTL_OP_min_dim, PTL_ERR_RUNTIME, "min(): does not support complex input"},
    {PTL_OP_argmax, PTL_ERR_RUNTIME, "argmax(): does not support complex input"},
    {PTL_OP_argmin, PTL_ERR_RUNTIME, "argmin(): does not support complex input"},
    {PTL_OP_maximum, PTL_ERR_RUNTIME, "maximum not implemented for complex tensors."},
    {PTL_OP_minimum, PTL_ERR_RUNTIME, "minimum not implemented for complex tensors."},
    /* PyTorch's sort and topk messages start with a space */
    {PTL_OP_sort, PTL_ERR_RUNTIME, " Sort does not support complex dtypes on CPU"},
    {PTL_OP_sort_stable, PTL_ERR_RUNTIME, " Sort does not support complex dtypes on CPU"},
    {PTL_OP_argsort, PTL_ERR_RUNTIME, " Sort does not support complex dtypes on CPU"},
    {PTL_OP_argsort_stable, PTL_ERR_RUNTIME, " Sort does not support complex dtypes on CPU"},
    {PTL_OP_msort, PTL_ERR_RUNTIME, " Sort does not support complex dtypes on CPU"},
    {PTL_OP_topk, PTL_ERR_RUNTIME, " topk does not support complex dtypes on CPU"},
    {PTL_OP_clamp, PTL_ERR_NOT_IMPLEMENTED, "clamp is not supported for complex types"},
    {PTL_OP_clamp_, PTL_ERR_NOT_IMPLEMENTED, "clamp is not supported for complex types"},
    {PTL_OP_clamp_min, PTL_ERR_NOT_IMPLEMENTED, "clamp is not supported for complex types"},
    {PTL_OP_clamp_max, PTL_ERR_NOT_IMPLEMENTED, "clamp is not supported for complex types"},
    {PTL_OP_relu, PTL_ERR_NOT_IMPLEMENTED, "clamp is not supported for complex types"},
    {PTL_OP_floor, PTL_ERR_NOT_IMPLEMENTED, "floor is not supported for complex inputs"},
    {PTL_OP_ceil, PTL_ERR_NOT_IMPLEMENTED, "ceil is not supported for complex inputs"},
    {PTL_OP_random_, PTL_ERR_NOT_IMPLEMENTED, "\"random_kernel_cpu\" not implemented for '%s'"},
    {PTL_OP_random__from, PTL_ERR_RUNTIME, "check_random_bounds handles only integral, "
     "floating-point and boolean types"},
    {PTL_OP_random__to, PTL_ERR_RUNTIME, "check_random_bounds handles only integral, "
     "floating-point and boolean types"},
    {PTL_OP_randint, PTL_ERR_RUNTIME, "check_random_bounds handles only integral, "
     "floating-point and boolean types"},
    {PTL_OP_randint_low, PTL_ERR_RUNTIME, "check_random_bounds handles only integral, "
     "floating-point and boolean types"},
    {PTL_OP_randint_generator, PTL_ERR_RUNTIME, "check_random_bounds handles only integral, "
     "floating-point and boolean types"},
    {PTL_OP_randint_low_generator, PTL_ERR_RUNTIME, "check_random_bounds handles only "
     "integral, floating-point and boolean types"},
    {PTL_OP_randint_like, PTL_ERR_RUNTIME, "check_random_bounds handles only integral, "
     "floating-point and boolean types"},
    {PTL_OP_randint_like_low_dtype, PTL_ERR_RUNTIME, "check_random_bounds handles only "
     "integral, floating-point and boolean types"},
    {PTL_OP_bernoulli__float, PTL_ERR_NOT_IMPLEMENTED,
     "\"bernoulli_scalar_cpu_\" not implemented for '%s'"},
    {PTL_OP_bernoulli__Tensor, PTL_ERR_NOT_IMPLEMENTED,
     "\"bernoulli_tensor_cpu_self_\" not implemented for '%s'"},
    {PTL_OP_bernoulli, PTL_ERR_NOT_IMPLEMENTED,
     "\"bernoulli_tensor_cpu_self_\" not implemented for '%s'"},
    {PTL_OP_sign, PTL_ERR_NOT_IMPLEMENTED,
     "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
     "torch.sgn instead."},
    /* the shape, scan and reduction ops PyTorch refuses: nansum (nanmean calls it) with a
     * message of its own, clip as clamp, the others naming the kernel that refuses */
    {PTL_OP_nansum, PTL_ERR_RUNTIME, "nansum on CPU does not support complex inputs"},
    {PTL_OP_clip, PTL_ERR_NOT_IMPLEMENTED, "clamp is not supported for complex types"},
    {PTL_OP_clip_, PTL_ERR_NOT_IMPLEMENTED, "clamp is not supported for complex types"},
    {PTL_OP_clip_out, PTL_ERR_NOT_IMPLEMENTED, "clamp is not supported for complex types"},
    {PTL_OP_clip_Tensor, PTL_ERR_NOT_IMPLEMENTED, "clamp is not supported for complex types"},
    {PTL_OP_clip__Tensor, PTL_ERR_NOT_IMPLEMENTED, "clamp is not supported for complex types"},
    {PTL_OP_clip_Tensor_out, PTL_ERR_NOT_IMPLEMENTED, "clamp is not supported for complex types"},
    {PTL_OP_clamp_out, PTL_ERR_NOT_IMPLEMENTED, "clamp is not supported for complex types"},
    {PTL_OP_clamp_Tensor, PTL_ERR_NOT_IMPLEMENTED, "clamp is not supported for complex types"},
    {PTL_OP_clamp__Tensor, PTL_ERR_NOT_IMPLEMENTED, "clamp is not supported for complex types"},
    {PTL_OP_clamp_Tensor_out, PTL_ERR_NOT_IMPLEMENTED,
     "clamp is not supported for complex types"},
    {PTL_OP__unique2, PTL_ERR_NOT_IMPLEMENTED, "\"unique\" not implemented for '%s'"},
    {PTL_OP_unique_consecutive, PTL_ERR_NOT_IMPLEMENTED, "\"unique\" not implemented for '%s'"},
    {PTL_OP_unique_dim, PTL_ERR_NOT_IMPLEMENTED, "\"unique_dim\" not implemented for '%s'"},
    {PTL_OP_amax, PTL_ERR_NOT_IMPLEMENTED, "\"max_values_cpu\" not implemented for '%s'"},
    {PTL_OP_amin, PTL_ERR_NOT_IMPLEMENTED, "\"min_values_cpu\" not implemented for '%s'"},
    {PTL_OP_histc, PTL_ERR_NOT_IMPLEMENTED, "\"aminmax_cpu\" not implemented for '%s'"},
    {PTL_OP_nanmedian, PTL_ERR_NOT_IMPLEMENTED, "\"median_cpu\" not implemented for '%s'"},
    {PTL_OP_searchsorted_Tensor, PTL_ERR_NOT_IMPLEMENTED,
     "\"searchsorted_out_cpu\" not implemented for '%s'"},
    {PTL_OP_bucketize_Tensor, PTL_ERR_NOT_IMPLEMENTED,
     "\"searchsorted_out_cpu\" not implemented for '%s'"},
    {PTL_OP_log_sigmoid_forward, PTL_ERR_NOT_IMPLEMENTED,
     "\"log_sigmoid_cpu\" not implemented for '%s'"},
    {PTL_OP_log_sigmoid_forward_output, PTL_ERR_NOT_IMPLEMENTED,
     "\"log_sigmoid_cpu\" not implemented for '%s'"},
    /* the NaN-ignoring maximum and minimum, trunc and hardtanh (the pointwise math:
     * complex_unary.c) */
    {PTL_OP_trunc, PTL_ERR_NOT_IMPLEMENTED, "trunc is not supported for complex inputs"},
    {PTL_OP_trunc_, PTL_ERR_NOT_IMPLEMENTED, "trunc is not supported for complex inputs"},
    {PTL_OP_trunc_out, PTL_ERR_NOT_IMPLEMENTED, "trunc is not supported for complex inputs"},
    {PTL_OP_hardtanh, PTL_ERR_NOT_IMPLEMENTED, "clamp is not supported for complex types"},
    {PTL_OP_hardtanh_, PTL_ERR_NOT_IMPLEMENTED, "clamp is not supported for complex types"},
    {PTL_OP_fmax, PTL_ERR_RUNTIME, "fmax not implemented for complex tensors."},
    {PTL_OP_fmax_out, PTL_ERR_RUNTIME, "fmax not implemented for complex tensors."},
    {PTL_OP_fmin, PTL_ERR_RUNTIME, "fmin not implemented for complex tensors."},
    {PTL_OP_fmin_out, PTL_ERR_RUNTIME, "fmin not implemented for complex tensors."},
    /* the ops that check for floating or ordered inputs before their kernel runs (fmax,
     * fmin: above) */
    {PTL_OP_max_other, PTL_ERR_RUNTIME, "maximum not implemented for complex tensors."},
    {PTL_OP_min_other, PTL_ERR_RUNTIME, "minimum not implemented for complex tensors."},
    {PTL_OP_frexp_Tensor, PTL_ERR_RUNTIME, "torch.frexp() only supports floating-point dtypes"},
    {PTL_OP_frexp_Tensor_out, PTL_ERR_RUNTIME,
     "torch.frexp() only supports floating-point dtypes"},
    {PTL_OP_multinomial, PTL_ERR_RUNTIME,
     "multinomial only supports floating-point dtypes for input, got: %s"},
    {PTL_OP_binomial, PTL_ERR_VALUE,
     "binomial only supports floating-point dtypes for count, got: %s"},
};

static uint8_t passthrough[PTL_OP_COUNT];

static PtlDtype
first_complex_dtype(const PtlOperator *op, const PtlIValue *s)
{
    /* a wrapped number (x < 1j) counts through the result type, as PyTorch names the
     * common dtype: ComplexFloat for a float32 x */
    PtlTensorImpl *ts[PTL_SCHEMA_MAX_ARGS];
    int nt = 0, wrapped = 0;
    for (int i = 0; i < op->schema.nargs; i++) {
        if (s[i].tag == PTL_IV_TENSOR) {
            wrapped |= (s[i].u.t->flags & PTL_TF_WRAPPED_NUMBER) != 0;
            ts[nt++] = s[i].u.t;
        }
    }
    PtlDtype rt = wrapped ? ptl_result_type(ts, nt) : PTL_DTYPE_UNDEFINED;
    if (rt != PTL_DTYPE_UNDEFINED && ptl_dtype_is_complex(rt)) {
        return rt;
    }
    for (int i = 0; i < op->schema.nargs; i++) {
        if (s[i].tag == PTL_IV_DTYPE && ptl_dtype_is_complex(s[i].u.dtype)) {
            return s[i].u.dtype;
        }
        if (s[i].tag == PTL_IV_TENSOR && ptl_dtype_is_complex(s[i].u.t->dtype)) {
            return s[i].u.t->dtype;
        }
        if (s[i].tag == PTL_IV_TENSORLIST) {
            for (int64_t j = 0; j < s[i].u.tl.n; j++) {
                if (s[i].u.tl.data[j] && ptl_dtype_is_complex(s[i].u.tl.data[j]->dtype)) {
                    return s[i].u.tl.data[j]->dtype;
                }
            }
        }
    }
    return PTL_DTYPE_UNDEFINED;   /* the complex arguments are Scalars */
}

/* ---- calls whose only complex arguments are Scalars ---- */

/* Ops that refuse a complex Scalar with a message of their own (PyTorch 2.13's). */
static const OpRefusal complex_scalar_errors[] = {
    {PTL_OP_clamp_min, PTL_ERR_NOT_IMPLEMENTED, "clamp is not supported for complex types"},
    {PTL_OP_clamp_max, PTL_ERR_NOT_IMPLEMENTED, "clamp is not supported for complex types"},
    {PTL_OP_linalg_vector_norm, PTL_ERR_RUNTIME,
     "linalg.vector_norm: Expected a non-complex scalar as the order of norm."},
    {PTL_OP_norm_Scalar, PTL_ERR_RUNTIME,
     "linalg.vector_norm: Expected a non-complex scalar as the order of norm."},
    {PTL_OP_norm_ScalarOpt_dim, PTL_ERR_RUNTIME,
     "linalg.vector_norm: Expected a non-complex scalar as the order of norm."},
    {PTL_OP_index_fill_int_Scalar, PTL_ERR_RUNTIME,
     "index_fill_(): Converting complex Scalar to non-complex type is not supported"},
    {PTL_OP_index_fill__int_Scalar, PTL_ERR_RUNTIME,
     "index_fill_(): Converting complex Scalar to non-complex type is not supported"},
    {PTL_OP_searchsorted_Scalar, PTL_ERR_NOT_IMPLEMENTED,
     "\"searchsorted_out_cpu\" not implemented for 'ComplexFloat'"},
    {PTL_OP_bucketize_Scalar, PTL_ERR_NOT_IMPLEMENTED,
     "\"searchsorted_out_cpu\" not implemented for 'ComplexFloat'"},
};

/* Ops that read their Scalars as double whatever the tensor's dtype, so PyTorch's error
 * names "double" (clamp's bounds, histc's range, arange's ends, var's correction). */
static const PtlOpId double_scalar_ops[] = {
    PTL_OP_clamp, PTL_OP_clamp_, PTL_OP_clamp_out, PTL_OP_clip, PTL_OP_clip_, PTL_OP_clip_out,
    PTL_OP_histc, PTL_OP_arange, PTL_OP_arange_start, PTL_OP_arange_start_step,
    PTL_OP_var_correction, PTL_OP_std_correction, PTL_OP_var_mean_correction,
    PTL_OP_std_mean_correction,
};

/* The dtype a real kernel converts op's Scalars to: float64 for double_scalar_ops, else
 * the first tensor argument's (float32 when there is none). */
static PtlDtype
scalar_target_dtype(const PtlOperator *op, const PtlIValue *s)
{
    for (size_t i = 0; i < sizeof(double_scalar_ops) / sizeof(double_scalar_ops[0]); i++) {
        if ((int)double_scalar_ops[i] == op->id) {
            return PTL_DTYPE_FLOAT64;
        }
    }
    for (int i = 0; i < op->schema.nargs; i++) {
        if (s[i].tag == PTL_IV_TENSOR) {
            return s[i].u.t->dtype;
        }
    }
    return PTL_DTYPE_FLOAT32;
}

/* Runs the real kernel below the Complex key with every complex Scalar (imaginary part 0)
 * as its real part, c10's checked_convert; one with an imaginary part raises PyTorch's
 * "value cannot be converted to type float without overflow" naming `dt`. */
static int
redispatch_real(const PtlOperator *op, PtlDispatchKeySet below, PtlIValue *s, PtlDtype dt)
{
    PtlIValue st[PTL_SCHEMA_MAX_ARGS];
    for (int i = 0; i < op->schema.nargs; i++) {
        st[i] = s[i];
        if (s[i].tag == PTL_IV_COMPLEX) {
            if (ptl_scalar_check_range(&s[i], dt) < 0) {
                return -1;
            }
            st[i] = ptl_iv_double(s[i].u.z.re);
        }
    }
    if (ptl_dispatcher_redispatch(op, below, st) < 0) {
        return -1;
    }
    for (int i = 0; i < op->schema.nrets; i++) {
        s[i] = st[i];
    }
    return 0;
}

/* A call whose complex arguments are all Scalars and whose op has no complex kernel here:
 * the op's own error, else the CPU kernel of a passthrough op (it reads the Scalar: full's
 * dtype comes from it), else the real kernel with the Scalar converted. */
static int
complex_scalar_call(const PtlOperator *op, PtlDispatchKeySet below, PtlIValue *s, int cuda)
{
    size_t n = sizeof(complex_scalar_errors) / sizeof(complex_scalar_errors[0]);
    for (size_t i = 0; i < n; i++) {
        if ((int)complex_scalar_errors[i].op == op->id) {
            return ptl_error_set(complex_scalar_errors[i].kind, "%s",
                                 complex_scalar_errors[i].msg);
        }
    }
    if (!cuda && passthrough[op->id]) {
        return ptl_dispatcher_redispatch(op, below, s);
    }
    return redispatch_real(op, below, s, scalar_target_dtype(op, s));
}

/* Whether the out= tensor `out` is the only complex argument of the call */
static int
only_out_is_complex(const PtlOperator *op, const PtlIValue *s, const PtlTensorImpl *out)
{
    for (int i = 0; i < op->schema.nargs; i++) {
        if ((s[i].tag == PTL_IV_TENSOR && s[i].u.t != out &&
             ptl_dtype_is_complex(s[i].u.t->dtype)) || s[i].tag == PTL_IV_COMPLEX ||
            s[i].tag == PTL_IV_TENSORLIST ||
            (s[i].tag == PTL_IV_DTYPE && ptl_dtype_is_complex(s[i].u.dtype))) {
            return 0;
        }
    }
    return 1;
}

/* The out= forms of the ops that refuse complex inputs but, given real ones, write their
 * real result into a complex out= tensor (PyTorch's TensorIterator casts its common dtype
 * into the output): the real kernel below computes in the inputs' dtype and casts, as for
 * the pointwise ops (erf.out).  The ops whose refusal comes first in PyTorch (heaviside,
 * the scalar clamp's bounds) are not here. */
static const PtlOpId real_into_complex_out[] = {
    PTL_OP_maximum_out, PTL_OP_minimum_out, PTL_OP_fmax_out, PTL_OP_fmin_out,
    PTL_OP_atan2_out, PTL_OP_hypot_out, PTL_OP_nextafter_out, PTL_OP_igamma_out,
    PTL_OP_igammac_out, PTL_OP_clamp_out, PTL_OP_clamp_Tensor_out, PTL_OP_clip_out,
    PTL_OP_clip_Tensor_out, PTL_OP_gcd_out, PTL_OP_lcm_out,
};

static int
writes_real_into_complex_out(const PtlOperator *op)
{
    for (size_t i = 0; i < sizeof(real_into_complex_out) / sizeof(real_into_complex_out[0]);
         i++) {
        if ((int)real_into_complex_out[i] == op->id) {
            return 1;
        }
    }
    return op->flags & PTL_OPF_POINTWISE;
}

static int
complex_fallback(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlDispatchKeySet below = ks & ptl_keyset_below(PTL_KEY_COMPLEX);
    int cuda = (below & PTL_KEYSET(PTL_KEY_CUDA)) != 0;
    if (op->id >= PTL_OP_COUNT) {
        return ptl_dispatcher_redispatch(op, below, s);
    }
    /* a pointwise op of real inputs into a complex out=: the real kernel computes in the
     * inputs' dtype and casts into it, as PyTorch's TensorIterator does (erf.out) */
    PtlTensorImpl *out = ptl_kernel_out(op, s);
    if (!cuda && out != NULL && writes_real_into_complex_out(op) &&
        only_out_is_complex(op, s, out)) {
        return ptl_dispatcher_redispatch(op, below, s);
    }
    PtlDtype dt = first_complex_dtype(op, s);
    if (dt == PTL_DTYPE_UNDEFINED) {
        return complex_scalar_call(op, below, s, cuda);
    }
    if (!cuda && passthrough[op->id]) {
        return ptl_dispatcher_redispatch(op, below, s);
    }
    if (ptl_clamp_bounds_check(op, s) < 0) {
        return -1;
    }
    for (size_t i = 0; !cuda && i < sizeof(ordering_errors) / sizeof(ordering_errors[0]); i++) {
        if ((int)ordering_errors[i].op == op->id) {
            return ptl_error_set(ordering_errors[i].kind, ordering_errors[i].msg,
                                 ptl_dtype_legacy_name(dt));
        }
    }
    char kname[80];
    ptl_kernel_name(op, kname, sizeof(kname));
    if (cuda) {
        memcpy(kname + strlen(kname) - 3, "cuda", 5);
    }
    return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'", kname,
                         ptl_dtype_legacy_name(dt));
}

/* ---- pointwise arithmetic ---- */

/* Each family's loop is written once, over the complex type T (and its real type R), and
 * stamped for complex64 (c8) and complex128 (c16); Z_LOOPS tables the pair by dtype. */
#define Z_STAMP(LOOP, NAME, F)                                                             \
    LOOP(NAME, c8, ptl_complex64, float, F)                                                \
    LOOP(NAME, c16, ptl_complex128, double, F)                                             \
    static const PtlLoop NAME##_loops[PTL_DTYPE_COUNT] = {                                 \
        [PTL_DTYPE_COMPLEX64] = NAME##_loop_c8, [PTL_DTYPE_COMPLEX128] = NAME##_loop_c16};

/* o = F(a, b, x) with x the scalar `extra` points to as {re, im} (add and sub's alpha,
 * lerp's weight): of the real type R (the real part) in Z_BINARY_LOOP, of the complex
 * type T in Z_BINARY_LOOP_C. */
#define Z_BINARY_BODY(NAME, SUF, T, XT, XINIT, F)                                          \
    static void NAME##_loop_##SUF(char **d, const int64_t *s, int64_t n, const void *extra) \
    {                                                                                      \
        const double *e = extra;                                                           \
        const XT x = XINIT;                                                                \
        (void)x;                                                                           \
        T *o = (T *)d[0]; /* contiguous, or one side a scalar: gcc vectorizes them */      \
        const T *a = (const T *)d[1];                                                      \
        const T *b = (const T *)d[2];                                                      \
        if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == sizeof(T)) {                 \
            for (int64_t i = 0; i < n; i++) {                                              \
                o[i] = F(a[i], b[i], x);                                                   \
            }                                                                              \
            return;                                                                        \
        }                                                                                  \
        if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == 0) {                         \
            const T bv = b[0];                                                             \
            for (int64_t i = 0; i < n; i++) {                                              \
                o[i] = F(a[i], bv, x);                                                     \
            }                                                                              \
            return;                                                                        \
        }                                                                                  \
        if (s[0] == sizeof(T) && s[1] == 0 && s[2] == sizeof(T)) {                         \
            const T av = a[0];                                                             \
            for (int64_t i = 0; i < n; i++) {                                              \
                o[i] = F(av, b[i], x);                                                     \
            }                                                                              \
            return;                                                                        \
        }                                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                  \
            const T a = *(const T *)(d[1] + i * s[1]);                                     \
            const T b = *(const T *)(d[2] + i * s[2]);                                     \
            *(T *)(d[0] + i * s[0]) = F(a, b, x);                                          \
        }                                                                                  \
    }
#define Z_BINARY_LOOP(NAME, SUF, T, R, F) Z_BINARY_BODY(NAME, SUF, T, R, (R)e[0], F)
#define Z_BINARY_LOOP_C(NAME, SUF, T, R, F) \
    Z_BINARY_BODY(NAME, SUF, T, T, (T)ptl_cmplx(e[0], e[1]), F)
#define DEFINE_Z_BINARY(NAME, F) Z_STAMP(Z_BINARY_LOOP, NAME, F)
#define DEFINE_Z_BINARY_C(NAME, F) Z_STAMP(Z_BINARY_LOOP_C, NAME, F)

/* The product of two complex numbers is complex_math.h's textbook ptl_cmul / ptl_cmulf;
 * division keeps C99's scaled division, which PyTorch's also scales. */
#define ZMUL(A, B, X) _Generic((A), ptl_complex64: ptl_cmulf, default: ptl_cmul)(A, B)
#define ZDIV(A, B, X) _Generic((A), ptl_complex64: ptl_cdivf, default: ptl_cdiv)(A, B)
DEFINE_Z_BINARY(zmul, ZMUL)
DEFINE_Z_BINARY(zdiv, ZDIV)
#define ZSQRT(A) _Generic((A), ptl_complex64: csqrtf, default: csqrt)(A)
/* add and sub: a +- alpha * b with alpha complex (Note [Complex Scalars] in ivalue.h), a
 * complex product even for a real alpha, as PyTorch's kernel (so inf + inf j's imaginary
 * part comes out NaN there too) */
#define ZADDC(A, B, X) ((A) + ZMUL(X, B, X))
#define ZSUBC(A, B, X) ((A) - ZMUL(X, B, X))
DEFINE_Z_BINARY_C(zaddc, ZADDC)
DEFINE_Z_BINARY_C(zsubc, ZSUBC)
/* lerp(a, b, w): PyTorch's two-sided form, exact at both ends (|w| < 0.5: from a, else
 * from b) */
#define ZABS1(A) _Generic((A), ptl_complex64: cabsf, default: cabs)(A)
#define ZLERP(A, B, W)                                                                     \
    (ZABS1(W) < 0.5 ? (A) + ZMUL(W, (B) - (A), W) : (B) - ZMUL((B) - (A), 1 - (W), W))
DEFINE_Z_BINARY_C(zlerp, ZLERP)

/* o = F(a, b, c, x), x the complex scalar `extra` points to as {re, im} */
#define Z_TERNARY_LOOP(NAME, SUF, T, R, F)                                                 \
    static void NAME##_loop_##SUF(char **d, const int64_t *s, int64_t n, const void *extra) \
    {                                                                                      \
        const double *e = extra;                                                           \
        const T x = (T)ptl_cmplx(e[0], e[1]);                                              \
        (void)x;                                                                           \
        if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == sizeof(T) &&                 \
            s[3] == sizeof(T)) {                                                           \
            T *o = (T *)d[0]; /* contiguous: gcc vectorizes it */                          \
            const T *a = (const T *)d[1], *b = (const T *)d[2], *c = (const T *)d[3];      \
            for (int64_t i = 0; i < n; i++) {                                              \
                o[i] = F(a[i], b[i], c[i], x);                                             \
            }                                                                              \
            return;                                                                        \
        }                                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                  \
            const T a = *(const T *)(d[1] + i * s[1]);                                     \
            const T b = *(const T *)(d[2] + i * s[2]);                                     \
            const T c = *(const T *)(d[3] + i * s[3]);                                     \
            *(T *)(d[0] + i * s[0]) = F(a, b, c, x);                                       \
        }                                                                                  \
    }
/* addcmul: a + x * b * c, addcdiv: a + x * b / c (PyTorch's order), lerp.Tensor: c the
 * weight */
#define ZADDCMUL(A, B, C, X) ((A) + ZMUL(ZMUL(X, B, X), C, X))
#define ZADDCDIV(A, B, C, X) ((A) + ZDIV(ZMUL(X, B, X), C, X))
#define ZLERP3(A, B, C, X) ZLERP(A, B, C)
Z_STAMP(Z_TERNARY_LOOP, zaddcmul, ZADDCMUL)
Z_STAMP(Z_TERNARY_LOOP, zaddcdiv, ZADDCDIV)
Z_STAMP(Z_TERNARY_LOOP, zlerp3, ZLERP3)

/* pow(a, b) = exp(b log a) (C99's cpow); a Scalar exponent of 0, 1, 2, 3, -2, 0.5, -0.5
 * or -1 takes the exact forms PyTorch's kernel takes (`extra` points to the mode). */
enum { ZPOW_GENERAL, ZPOW_ZERO, ZPOW_ONE, ZPOW_SQUARE, ZPOW_CUBE, ZPOW_INV_SQUARE, ZPOW_SQRT,
       ZPOW_RSQRT, ZPOW_RECIPROCAL };
#define ZCPOW(A, B) _Generic((A), ptl_complex64: cpowf, default: cpow)(A, B)
#define Z_POW_LOOP(NAME, SUF, T, R, F)                                                     \
    static void NAME##_loop_##SUF(char **d, const int64_t *s, int64_t n, const void *extra) \
    {                                                                                      \
        const int mode = *(const int *)extra;                                              \
        for (int64_t i = 0; i < n; i++) {                                                  \
            const T a = *(const T *)(d[1] + i * s[1]);                                     \
            const T b = *(const T *)(d[2] + i * s[2]);                                     \
            T r;                                                                           \
            switch (mode) {                                                                \
            case ZPOW_ZERO: r = 1; break;                                                  \
            case ZPOW_ONE: r = a; break;                                                   \
            case ZPOW_SQUARE: r = ZMUL(a, a, a); break;                                    \
            case ZPOW_CUBE: r = ZMUL(ZMUL(a, a, a), a, a); break;                          \
            case ZPOW_INV_SQUARE: r = 1 / ZMUL(a, a, a); break;                            \
            case ZPOW_SQRT: r = ZSQRT(a); break;                                           \
            case ZPOW_RSQRT: r = 1 / ZSQRT(a); break;                                      \
            case ZPOW_RECIPROCAL: r = 1 / a; break;                                        \
            default: r = F(a, b); break;                                                   \
            }                                                                              \
            *(T *)(d[0] + i * s[0]) = r;                                                   \
        }                                                                                  \
    }
Z_STAMP(Z_POW_LOOP, zpow, ZCPOW)

/* eq / ne: complex inputs, bool output */
#define Z_COMPARE_LOOP(NAME, SUF, T, R, OPR)                                               \
    static void NAME##_loop_##SUF(char **d, const int64_t *s, int64_t n, const void *extra) \
    {                                                                                      \
        (void)extra;                                                                       \
        for (int64_t i = 0; i < n; i++) {                                                  \
            *(uint8_t *)(d[0] + i * s[0]) =                                                \
                *(const T *)(d[1] + i * s[1]) OPR * (const T *)(d[2] + i * s[2]);          \
        }                                                                                  \
    }
#define DEFINE_Z_COMPARE(NAME, OPR) Z_STAMP(Z_COMPARE_LOOP, NAME, OPR)
DEFINE_Z_COMPARE(zeq, ==)
DEFINE_Z_COMPARE(zne, !=)

/* isclose: |a - b| <= atol + rtol |b| with the complex modulus, or a == b (equal infinities),
 * or, with equal_nan, a NaN part in each; the tolerances come in as {rtol, atol, equal_nan}. */
#define Z_ISCLOSE_LOOP(NAME, SUF, T, R, F)                                                 \
    static void NAME##_loop_##SUF(char **d, const int64_t *s, int64_t n, const void *extra) \
    {                                                                                      \
        const double *tol = extra;                                                         \
        for (int64_t i = 0; i < n; i++) {                                                  \
            const T a = *(const T *)(d[1] + i * s[1]);                                     \
            const T b = *(const T *)(d[2] + i * s[2]);                                     \
            *(uint8_t *)(d[0] + i * s[0]) = (uint8_t)F(a, b, tol);                         \
        }                                                                                  \
    }
#define ZNAN(A) (isnan(creal(A)) || isnan(cimag(A)))
static inline int
zisclose(ptl_complex128 a, ptl_complex128 b, const double *tol)
{
    if (a == b) {
        return 1;
    }
    if (ZNAN(a) || ZNAN(b)) {
        return tol[2] != 0 && ZNAN(a) && ZNAN(b);
    }
    double diff = cabs(a - b);
    return isfinite(diff) && diff <= tol[1] + fabs(tol[0]) * cabs(b);
}
/* complex64 widens exactly to complex128, the modulus computed once in double */
#define ZISCLOSE(A, B, TOL) zisclose((ptl_complex128)(A), (ptl_complex128)(B), TOL)
Z_STAMP(Z_ISCLOSE_LOOP, zisclose, ZISCLOSE)

/* isnan / isinf / isfinite: a predicate of either part (NaN or infinite), bool output */
#define Z_PREDICATE_LOOP(NAME, SUF, T, R, F)                                               \
    static void NAME##_loop_##SUF(char **d, const int64_t *s, int64_t n, const void *extra) \
    {                                                                                      \
        (void)extra;                                                                       \
        for (int64_t i = 0; i < n; i++) {                                                  \
            const T a = *(const T *)(d[1] + i * s[1]);                                     \
            *(uint8_t *)(d[0] + i * s[0]) = (uint8_t)F(creal(a), cimag(a));                \
        }                                                                                  \
    }
#define ZISNAN(X, Y) (isnan(X) || isnan(Y))
#define ZISINF(X, Y) (isinf(X) || isinf(Y))
#define ZISFINITE(X, Y) (isfinite(X) && isfinite(Y))
Z_STAMP(Z_PREDICATE_LOOP, zisnan, ZISNAN)
Z_STAMP(Z_PREDICATE_LOOP, zisinf, ZISINF)
Z_STAMP(Z_PREDICATE_LOOP, zisfinite, ZISFINITE)

/* Unary loops: o = F(a), F being a type-generic macro of the complex type. */
#define Z_UNARY_LOOP(NAME, SUF, T, R, F)                                                   \
    static void NAME##_loop_##SUF(char **d, const int64_t *s, int64_t n, const void *extra) \
    {                                                                                      \
        (void)extra;                                                                       \
        for (int64_t i = 0; i < n; i++) {                                                  \
            *(T *)(d[0] + i * s[0]) = F(*(const T *)(d[1] + i * s[1]));                    \
        }                                                                                  \
    }
#define DEFINE_Z_UNARY(NAME, F) Z_STAMP(Z_UNARY_LOOP, NAME, F)

#define ZNEG(A) (-(A))
#define ZEXP(A) _Generic((A), ptl_complex64: cexpf, default: cexp)(A)
#define ZLOG(A) _Generic((A), ptl_complex64: clogf, default: clog)(A)
#define ZCONJ(A) _Generic((A), ptl_complex64: conjf, default: conj)(A)
#define ZRECIPROCAL(A) (1 / (A))
DEFINE_Z_UNARY(zneg, ZNEG)
DEFINE_Z_UNARY(zexp, ZEXP)
DEFINE_Z_UNARY(zlog, ZLOG)
DEFINE_Z_UNARY(zsqrt, ZSQRT)
DEFINE_Z_UNARY(zconj, ZCONJ)
DEFINE_Z_UNARY(zreciprocal, ZRECIPROCAL)

/* complex -> real: abs and angle write the real dtype R of their input */
#define Z_TO_REAL_LOOP(NAME, SUF, T, R, F)                                                 \
    static void NAME##_loop_##SUF(char **d, const int64_t *s, int64_t n, const void *extra) \
    {                                                                                      \
        (void)extra;                                                                       \
        for (int64_t i = 0; i < n; i++) {                                                  \
            *(R *)(d[0] + i * s[0]) = F(*(const T *)(d[1] + i * s[1]));                    \
        }                                                                                  \
    }
#define DEFINE_Z_TO_REAL(NAME, F) Z_STAMP(Z_TO_REAL_LOOP, NAME, F)
/* |z| of a complex64 through double: no overflow or underflow on the way, rounded once */
static inline float
zabsf(ptl_complex64 z)
{
    return (float)sqrt((double)crealf(z) * crealf(z) + (double)cimagf(z) * cimagf(z));
}
#define ZABS(A) _Generic((A), ptl_complex64: zabsf, default: cabs)(A)
#define ZANGLE(A) _Generic((A), ptl_complex64: cargf, default: carg)(A)
DEFINE_Z_TO_REAL(zabs, ZABS)
DEFINE_Z_TO_REAL(zangle, ZANGLE)

static const int self_other[2] = {0, 1};

static const int self_t1_t2[3] = {0, 1, 2};

/* The result type of the tensors at idx[0..n) (no Scalar among them). */
static PtlDtype
tensors_result_type(const PtlIValue *s, const int *idx, int n)
{
    PtlTensorImpl *ts[3];
    for (int i = 0; i < n; i++) {
        ts[i] = s[idx[i]].u.t;
    }
    return ptl_result_type(ts, n);
}

/* Two real operands whose out= tensor alone is complex: the real kernel below computes in
 * their dtype and writes into the out= tensor, as PyTorch's does.  1 when it ran (0 or -1
 * in *rc), 0 when an operand is complex. */
static int
real_operands(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s, int *rc)
{
    if (ptl_dtype_is_complex(s[0].u.t->dtype) || ptl_dtype_is_complex(s[1].u.t->dtype)) {
        return 0;
    }
    *rc = ptl_dispatcher_redispatch(op, ks & ptl_keyset_below(PTL_KEY_COMPLEX), s);
    return 1;
}

static int
add_sub_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    /* PyTorch's alpha_check, on the inputs' common dtype */
    double alpha[2] = {ptl_iv_to_double(&s[2]), ptl_iv_imag(&s[2])};
    PtlDtype rt = tensors_result_type(s, self_other, 2);
    if (s[2].tag == PTL_IV_BOOL) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Boolean alpha only supported for Boolean results.");
    }
    if (s[2].tag == PTL_IV_COMPLEX && !ptl_dtype_is_complex(rt)) {
        return ptl_error_set(PTL_ERR_RUNTIME, ptl_dtype_is_floating(rt)
            ? "For non-complex input tensors, argument alpha must not be a complex number."
            : "For integral input tensors, argument alpha must not be a floating point number.");
    }
    if (ks & PTL_KEYSET(PTL_KEY_CUDA)) {   /* no complex CUDA kernel */
        return complex_fallback(op, ks, s);
    }
    int rc;
    if (real_operands(op, ks, s, &rc)) {
        return rc;
    }
    const char *name = op->schema.name + 6;
    int is_sub = name[0] == 's' || name[0] == 'r';
    if (op->id == PTL_OP_rsub_Tensor) {   /* other - alpha * self */
        PtlIValue t = s[0];
        s[0] = s[1];
        s[1] = t;
    }
    return ptl_pointwise(op, s, 2, self_other, ptl_iter_config(),
                         is_sub ? zsubc_loops : zaddc_loops, alpha);
}

static const double no_scalar[2] = {0, 0};

static int
mul_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    int rc;
    if (real_operands(op, ks, s, &rc)) {
        return rc;
    }
    return ptl_pointwise(op, s, 2, self_other, ptl_iter_config(), zmul_loops, no_scalar);
}

static int
div_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    int rc;
    if (real_operands(op, ks, s, &rc)) {
        return rc;
    }
    return ptl_pointwise(op, s, 2, self_other, ptl_iter_config(), zdiv_loops, no_scalar);
}

/* div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor (and div_,
 * .out): without a rounding mode div's complex division.  A rounding mode, or real
 * operands with a complex out= tensor, go to the real kernel below: it checks the mode,
 * refuses complex operands with PyTorch's "div_trunc_cpu" / "div_floor_cpu" messages and
 * writes real quotients into a complex out= tensor, as PyTorch's kernels do. */
static int
div_mode_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    if (ks & PTL_KEYSET(PTL_KEY_CUDA)) {   /* no complex CUDA kernel */
        return complex_fallback(op, ks, s);
    }
    if (s[2].tag == PTL_IV_NONE) {
        return div_complex(op, ks, s);
    }
    return ptl_dispatcher_redispatch(op, ks & ptl_keyset_below(PTL_KEY_COMPLEX), s);
}

/* A real result type with a complex Scalar: the real kernel below with the Scalar
 * converted (an imaginary part raises PyTorch's "value cannot be converted to type float
 * without overflow").  1 when it ran (0 or -1 in *rc), 0 when the result is complex. */
static int
real_result(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s, PtlDtype rt, int *rc)
{
    if (ptl_dtype_is_complex(rt)) {
        return 0;
    }
    *rc = redispatch_real(op, ks & ptl_keyset_below(PTL_KEY_COMPLEX), s, rt);
    return 1;
}

/* addcmul / addcdiv (and their _ and .out forms) of complex tensors, value complex or real */
static int
addc_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    int rc, is_div = strncmp(op->schema.name + 6, "addcdiv", 7) == 0;
    if (ks & PTL_KEYSET(PTL_KEY_CUDA)) {   /* no complex CUDA kernel */
        return complex_fallback(op, ks, s);
    }
    if (real_result(op, ks, s, tensors_result_type(s, self_t1_t2, 3), &rc)) {
        return rc;
    }
    double value[2] = {ptl_iv_to_double(&s[3]), ptl_iv_imag(&s[3])};
    return ptl_pointwise(op, s, 3, self_t1_t2, ptl_iter_config(),
                         is_div ? zaddcdiv_loops : zaddcmul_loops, value);
}

/* lerp.Scalar / lerp.Tensor (and lerp_) of complex tensors */
static int
lerp_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    int rc, tensor_weight = s[2].tag == PTL_IV_TENSOR;
    PtlTensorImpl *self = s[0].u.t, *end = s[1].u.t;
    PtlDtype rt = tensors_result_type(s, self_t1_t2, tensor_weight ? 3 : 2);
    if (ks & PTL_KEYSET(PTL_KEY_CUDA)) {   /* no complex CUDA kernel */
        return complex_fallback(op, ks, s);
    }
    if (real_result(op, ks, s, rt, &rc)) {
        return rc;
    }
    /* PyTorch's checks (ptl_lerp_check's, for the complex dtypes) */
    if (end->dtype != self->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME, "expected dtype %s for `end` but got dtype %s",
                             ptl_dtype_cpp_name(self->dtype), ptl_dtype_cpp_name(end->dtype));
    }
    if (tensor_weight && s[2].u.t->dim > 0 && s[2].u.t->dtype != self->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME, "expected dtype %s for `weight` but got dtype %s",
                             ptl_dtype_cpp_name(self->dtype),
                             ptl_dtype_cpp_name(s[2].u.t->dtype));
    }
    if (tensor_weight) {
        return ptl_pointwise(op, s, 3, self_t1_t2, ptl_iter_config(), zlerp3_loops, no_scalar);
    }
    double w[2] = {ptl_iv_to_double(&s[2]), ptl_iv_imag(&s[2])};
    return ptl_pointwise(op, s, 2, self_other, ptl_iter_config(), zlerp_loops, w);
}

/* pow.Tensor_Tensor, pow.Tensor_Scalar, pow.Scalar (and their _ and .out forms) with a
 * complex operand or result: a Scalar joins as a wrapped number (its category counts, so
 * pow(float32 tensor, 1j) is complex64), then zpow's loop. */
static int
pow_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    if (ks & PTL_KEYSET(PTL_KEY_CUDA)) {   /* no complex CUDA kernel */
        return complex_fallback(op, ks, s);
    }
    /* real operands into a complex out= tensor: the real kernel computes in their dtype and
     * writes into it, as PyTorch's does (pow(2.6, x, out=) had refused a float32 x) */
    int real = 1;
    for (int i = 0; i < 2; i++) {
        real &= s[i].tag == PTL_IV_TENSOR ? !ptl_dtype_is_complex(s[i].u.t->dtype)
                                           : s[i].tag != PTL_IV_COMPLEX;
    }
    if (real) {
        return ptl_dispatcher_redispatch(op, ks & ptl_keyset_below(PTL_KEY_COMPLEX), s);
    }
    int which = s[0].tag != PTL_IV_TENSOR ? 0 : s[1].tag != PTL_IV_TENSOR ? 1 : -1;
    int mode = ZPOW_GENERAL;
    PtlIValue st[3] = {s[0], s[1], op->schema.nargs > 2 ? s[2] : ptl_iv_none()};
    PtlTensorImpl *w = NULL;
    if (which >= 0) {
        if ((w = ptl_wrapped_scalar(&s[which])) == NULL) {
            return -1;
        }
        st[which] = ptl_iv_tensor(w);
    }
    if (which == 1 && ptl_iv_imag(&s[1]) == 0) {
        static const struct {
            double e;
            int mode;
        } exact[] = {{0, ZPOW_ZERO}, {1, ZPOW_ONE}, {2, ZPOW_SQUARE}, {3, ZPOW_CUBE},
                     {-2, ZPOW_INV_SQUARE}, {0.5, ZPOW_SQRT}, {-0.5, ZPOW_RSQRT},
                     {-1, ZPOW_RECIPROCAL}};
        double e = ptl_iv_to_double(&s[1]);
        for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++) {
            mode = e == exact[i].e ? exact[i].mode : mode;
        }
    }
    int rc = ptl_pointwise(op, st, 2, self_other, ptl_iter_config(), zpow_loops, &mode);
    ptl_xdecref(w);
    if (rc == 0) {
        s[0] = st[0];
    }
    return rc;
}

static int
compare_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    int rc;
    if (real_operands(op, ks, s, &rc)) {   /* only out= is complex */
        return rc;
    }
    const char *name = op->schema.name + 6;
    PtlIterConfig cfg = ptl_iter_config();
    cfg.out_dtype = PTL_DTYPE_BOOL;   /* eq_ / ne_: written through bool into self's dtype */
    return ptl_pointwise(op, s, 2, self_other, cfg, name[0] == 'e' ? zeq_loops : zne_loops,
                         NULL);
}

static const int self_only[1] = {0};

/* isclose(Tensor self, Tensor other, float rtol, float atol, bool equal_nan) -> Tensor */
static int
isclose_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    if (ptl_isclose_check(s) < 0) {
        return -1;
    }
    double tol[3] = {s[2].u.d, s[3].u.d, s[4].u.b ? 1.0 : 0.0};
    PtlIterConfig cfg = ptl_iter_config();
    cfg.out_dtype = PTL_DTYPE_BOOL;
    return ptl_pointwise(op, s, 2, self_other, cfg, zisclose_loops, tol);
}

/* isnan / isinf / isfinite of a complex tensor: bool */
static int
predicate_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlIterConfig cfg = ptl_iter_config();
    cfg.out_dtype = PTL_DTYPE_BOOL;
    const PtlLoop *loops = op->id == PTL_OP_isnan ? zisnan_loops
                           : op->id == PTL_OP_isinf ? zisinf_loops
                                                    : zisfinite_loops;
    return ptl_pointwise(op, s, 1, self_only, cfg, loops, NULL);
}

static int
unary_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    if (!ptl_dtype_is_complex(s[0].u.t->dtype)) {   /* complex out= only: as unary_math_complex */
        return ptl_dispatcher_redispatch(op, ks & ptl_keyset_below(PTL_KEY_COMPLEX), s);
    }
    const char *name = op->schema.name + 6;
    const PtlLoop *loops = strncmp(name, "neg", 3) == 0    ? zneg_loops
                           : strncmp(name, "exp", 3) == 0  ? zexp_loops
                           : strncmp(name, "log", 3) == 0  ? zlog_loops
                           : strncmp(name, "reciprocal", 10) == 0 ? zreciprocal_loops
                                                           : zsqrt_loops;
    return ptl_pointwise(op, s, 1, self_only, ptl_iter_config(), loops, NULL);
}

/* abs / angle of a complex tensor: a real tensor of the parts' dtype */
static int
to_real_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s, const PtlLoop *loops)
{
    if (!ptl_dtype_is_complex(s[0].u.t->dtype)) {   /* complex out= only: as unary_math_complex */
        return ptl_dispatcher_redispatch(op, ks & ptl_keyset_below(PTL_KEY_COMPLEX), s);
    }
    PtlIterConfig cfg = ptl_iter_config();
    if (op->schema.inplace) {
        return ptl_error_set(PTL_ERR_RUNTIME, "In-place %.*s is not supported for complex "
                             "tensors.", (int)strlen(op->schema.name + 6) - 1,
                             op->schema.name + 6);
    }
    cfg.out_dtype = ptl_dtype_to_real(s[0].u.t->dtype);
    return ptl_pointwise(op, s, 1, self_only, cfg, loops, NULL);
}

static int
abs_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    return to_real_complex(op, ks, s, zabs_loops);
}

/* ---- sum / mean: the real and imaginary parts reduce independently ---- */

static PtlTensorImpl *view_as_real_impl(PtlTensorImpl *self);
static PtlTensorImpl *view_as_complex_impl(PtlTensorImpl *self);

/* sum(self, dtype) / sum.dim_IntList(self, dim, keepdim, dtype), mean likewise: the
 * reduction runs on view_as_real(self) over self's dims (the last, size-2 dim is kept). */
static int
reduce_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int is_mean = strncmp(op->schema.name + 6, "mean", 4) == 0;
    int has_dim = op->schema.nargs == 4;
    PtlIValue dt = s[has_dim ? 3 : 1];
    PtlTensorImpl *self = s[0].u.t, *x = NULL, *r = NULL, *red = NULL, *out = NULL;
    int64_t dims[PTL_MAX_DIMS];
    int n = 0;
    int keepdim = has_dim ? s[2].u.b : 0;
    if (dt.tag == PTL_IV_DTYPE && !ptl_dtype_is_complex(dt.u.dtype)) {
        /* a real dtype: the real parts, converted (PyTorch's result, with copy_'s warning) */
        PtlTensorImpl *r = ptl_cast(self, dt.u.dtype);
        if (r == NULL) {
            return -1;
        }
        s[0] = ptl_iv_tensor(r);
        int rc = ptl_dispatcher_call(op, s);
        ptl_decref(r);
        return rc;
    }
    if (dt.tag == PTL_IV_DTYPE && dt.u.dtype != self->dtype) {
        x = ptl_cast(self, dt.u.dtype);
    }
    else {
        x = self;
        ptl_incref(x);
    }
    if (x == NULL) {
        return -1;
    }
    if (has_dim && s[1].tag == PTL_IV_INTLIST && s[1].u.il.n > 0) {
        uint32_t seen = 0;
        for (int64_t i = 0; i < s[1].u.il.n; i++) {
            int64_t d = s[1].u.il.data[i], nd = self->dim > 0 ? self->dim : 1;
            if (d < -nd || d >= nd) {
                ptl_decref(x);
                return ptl_error_set(PTL_ERR_INDEX, "Dimension out of range (expected to be in "
                                     "range of [%lld, %lld], but got %lld)", (long long)-nd,
                                     (long long)(nd - 1), (long long)d);
            }
            d = d < 0 ? d + nd : d;
            if (seen & (1u << d)) {
                ptl_decref(x);
                return ptl_error_set(PTL_ERR_RUNTIME, "dim %lld appears multiple times in the "
                                     "list of dims", (long long)d);
            }
            seen |= 1u << d;
            if (self->dim > 0) {
                dims[n++] = d;
            }
        }
    }
    else {
        for (int d = 0; d < self->dim; d++) {
            dims[n++] = d;
        }
    }
    if (n == 0) {   /* a 0-dim input, or nothing to reduce: the values themselves */
        PtlIValue a[2] = {ptl_iv_tensor(x), ptl_iv_none()};
        out = ptl_call_tensor(PTL_OP_clone, a);
        ptl_decref(x);
        if (out == NULL) {
            return -1;
        }
        s[0] = ptl_iv_tensor(out);
        return 0;
    }
    if ((r = view_as_real_impl(x)) != NULL) {
        PtlIValue a[4] = {ptl_iv_tensor(r), ptl_iv_intlist(dims, n), ptl_iv_bool(keepdim),
                          ptl_iv_none()};
        red = ptl_call_tensor(is_mean ? PTL_OP_mean_dim : PTL_OP_sum_dim_IntList, a);
    }
    if (red != NULL) {
        PtlTensorImpl *c = ptl_contiguous(red);
        if (c != NULL) {
            out = view_as_complex_impl(c);
            ptl_decref(c);
        }
    }
    ptl_decref(x);
    ptl_xdecref(r);
    ptl_xdecref(red);
    if (out == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(out);
    return 0;
}

/* ---- real, imag, view_as_real, view_as_complex ---- */

/* A view of self (a complex tensor) as its parts: strides and offset in real elements,
 * with dtype the real dtype (the dispatch keys follow the dtype). */
static PtlTensorImpl *
parts_view(PtlTensorImpl *self, int dim, const int64_t *sizes, const int64_t *strides,
           int64_t offset)
{
    PtlTensorImpl *v = ptl_tensor_impl_view(self, dim, sizes, strides, offset);
    if (v != NULL) {
        v->dtype = ptl_dtype_to_real(self->dtype);
        v->keys = ptl_tensor_keys(v->device, v->dtype) | (self->keys & ~ptl_tensor_keys(
                                                              self->device, self->dtype));
    }
    return v;
}

static PtlTensorImpl *
view_as_real_impl(PtlTensorImpl *self)
{
    int64_t sizes[PTL_MAX_DIMS + 1], strides[PTL_MAX_DIMS + 1];
    if (!ptl_dtype_is_complex(self->dtype)) {
        ptl_error_set(PTL_ERR_RUNTIME, "view_as_real is only supported for complex tensors");
        return NULL;
    }
    if (self->dim >= PTL_MAX_DIMS) {
        ptl_error_set(PTL_ERR_RUNTIME, "view_as_real: a tensor of %d dims has no room for the "
                      "last dim of size 2 (at most %d dims)", self->dim, PTL_MAX_DIMS);
        return NULL;
    }
    for (int d = 0; d < self->dim; d++) {
        sizes[d] = self->sizes[d];
        strides[d] = self->strides[d] * 2;
    }
    sizes[self->dim] = 2;
    strides[self->dim] = 1;
    return parts_view(self, self->dim + 1, sizes, strides, self->storage_offset * 2);
}

static PtlTensorImpl *
view_as_complex_impl(PtlTensorImpl *self)
{
    int64_t strides[PTL_MAX_DIMS];
    if (self->dtype != PTL_DTYPE_FLOAT32 && self->dtype != PTL_DTYPE_FLOAT64) {
        ptl_error_set(PTL_ERR_RUNTIME, "view_as_complex is only supported for float and double "
                      "tensors (pytorchlite has no complex32), but got a tensor of scalar type: "
                      "%s", ptl_dtype_legacy_name(self->dtype));
        return NULL;
    }
    if (self->dim == 0) {
        ptl_error_set(PTL_ERR_RUNTIME, "Input tensor must have one or more dimensions");
        return NULL;
    }
    if (self->sizes[self->dim - 1] != 2) {
        ptl_error_set(PTL_ERR_RUNTIME, "Tensor must have a last dimension of size 2");
        return NULL;
    }
    if (self->strides[self->dim - 1] != 1) {
        ptl_error_set(PTL_ERR_RUNTIME, "Tensor must have a last dimension with stride 1");
        return NULL;
    }
    for (int d = 0; d < self->dim - 1; d++) {
        if (self->strides[d] % 2 != 0) {
            ptl_error_set(PTL_ERR_RUNTIME,
                          "Tensor must have a stride divisible by 2 for all but last dimension");
            return NULL;
        }
        strides[d] = self->strides[d] / 2;
    }
    if (self->storage_offset % 2 != 0) {
        ptl_error_set(PTL_ERR_RUNTIME, "Tensor must have a storage_offset divisible by 2");
        return NULL;
    }
    PtlTensorImpl *v = ptl_tensor_impl_view(self, self->dim - 1, self->sizes, strides,
                                            self->storage_offset / 2);
    if (v != NULL) {
        v->dtype = ptl_dtype_to_complex(self->dtype);
        v->keys = ptl_tensor_keys(v->device, v->dtype) |
                  (self->keys & ~ptl_tensor_keys(self->device, self->dtype));
    }
    return v;
}

static int
set_result(PtlIValue *s, PtlTensorImpl *t)
{
    if (t == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(t);
    return 0;
}

/* view_as_real(Tensor(a) self) -> Tensor(a) */
static int
view_as_real_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    return set_result(s, view_as_real_impl(s[0].u.t));
}

/* view_as_complex(Tensor(a) self) -> Tensor(a) */
static int
view_as_complex_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    return set_result(s, view_as_complex_impl(s[0].u.t));
}

/* real(Tensor(a) self) -> Tensor(a), imag likewise: a complex tensor's parts as a view with
 * doubled strides; real of a real tensor is the tensor (an alias), imag of one an error. */
static int
real_imag_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    int is_imag = op->id == PTL_OP_imag;
    int64_t strides[PTL_MAX_DIMS];
    if (!ptl_dtype_is_complex(self->dtype)) {
        if (is_imag) {
            return ptl_error_set(PTL_ERR_RUNTIME, "imag is not implemented for tensors with "
                                 "non-complex dtypes.");
        }
        return set_result(s, ptl_tensor_impl_view(self, self->dim, self->sizes, self->strides,
                                                  self->storage_offset));
    }
    for (int d = 0; d < self->dim; d++) {
        strides[d] = self->strides[d] * 2;
    }
    return set_result(s, parts_view(self, self->dim, self->sizes, strides,
                                    self->storage_offset * 2 + is_imag));
}

/* ---- complex, polar: two real tensors into one complex ---- */

static void
complex_loop_f4(char **d, const int64_t *s, int64_t n, const void *extra)
{
    int polar = *(const int *)extra;
    for (int64_t i = 0; i < n; i++) {
        float a = *(const float *)(d[1] + i * s[1]), b = *(const float *)(d[2] + i * s[2]);
        *(ptl_complex64 *)(d[0] + i * s[0]) = polar ? ptl_cmplxf(a * cosf(b), a * sinf(b))
                                                    : ptl_cmplxf(a, b);
    }
}

static void
complex_loop_f8(char **d, const int64_t *s, int64_t n, const void *extra)
{
    int polar = *(const int *)extra;
    for (int64_t i = 0; i < n; i++) {
        double a = *(const double *)(d[1] + i * s[1]), b = *(const double *)(d[2] + i * s[2]);
        *(ptl_complex128 *)(d[0] + i * s[0]) = polar ? ptl_cmplx(a * cos(b), a * sin(b))
                                                     : ptl_cmplx(a, b);
    }
}

/* complex(Tensor real, Tensor imag) -> Tensor; polar(Tensor abs, Tensor angle) -> Tensor.
 * Both inputs float32 or both float64 (PyTorch's checks; float16 would give complex32). */
static int
complex_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    static const PtlLoop loops[PTL_DTYPE_COUNT] = {[PTL_DTYPE_FLOAT32] = complex_loop_f4,
                                                   [PTL_DTYPE_FLOAT64] = complex_loop_f8};
    PtlTensorImpl *a = s[0].u.t, *b = s[1].u.t;
    int polar = op->id == PTL_OP_polar;
    int ok_a = a->dtype == PTL_DTYPE_FLOAT32 || a->dtype == PTL_DTYPE_FLOAT64;
    int ok_b = b->dtype == PTL_DTYPE_FLOAT32 || b->dtype == PTL_DTYPE_FLOAT64;
    if (!ok_a || !ok_b) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Expected both inputs to be Float or Double "
                             "tensors (pytorchlite has no complex32) but got %s and %s",
                             ptl_dtype_legacy_name(a->dtype), ptl_dtype_legacy_name(b->dtype));
    }
    if (a->dtype != b->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Expected object of scalar type %s but got scalar "
                             "type %s for second argument", ptl_dtype_legacy_name(a->dtype),
                             ptl_dtype_legacy_name(b->dtype));
    }
    PtlIterConfig cfg = ptl_iter_config();
    cfg.compute_dtype = a->dtype;
    cfg.out_dtype = ptl_dtype_to_complex(a->dtype);
    return ptl_pointwise(op, s, 2, self_other, cfg, loops, &polar);
}

/* ---- angle, conj ---- */

/* angle of a real value: pi for negatives, 0 otherwise, nan stays nan; float16 and bfloat16
 * in float, rounded back (pi is 3.1406 there) */
#define DEFINE_REAL_ANGLE(SUF, T, C, LOAD, STORE)                                         \
    static void                                                                           \
    real_angle_##SUF(char **d, const int64_t *s, int64_t n, const void *extra)            \
    {                                                                                     \
        (void)extra;                                                                      \
        for (int64_t i = 0; i < n; i++) {                                                 \
            C x = LOAD(*(const T *)(d[1] + i * s[1]));                                    \
            *(T *)(d[0] + i * s[0]) =                                                     \
                STORE(isnan(x) ? x : x < 0 ? (C)3.14159265358979323846 : (C)0);           \
        }                                                                                 \
    }
#define REAL_ANGLE_ID(X) (X)
DEFINE_REAL_ANGLE(f2, ptl_half, float, ptl_half_to_f, ptl_f_to_half)
DEFINE_REAL_ANGLE(bf, ptl_bf16, float, ptl_bf16_to_f, ptl_f_to_bf16)
DEFINE_REAL_ANGLE(f4, float, float, REAL_ANGLE_ID, REAL_ANGLE_ID)
DEFINE_REAL_ANGLE(f8, double, double, REAL_ANGLE_ID, REAL_ANGLE_ID)
#undef REAL_ANGLE_ID
#undef DEFINE_REAL_ANGLE

/* angle(Tensor self) -> Tensor: complex -> its argument (real dtype); real and integer
 * inputs -> pi or 0 in a floating dtype (integers in the default one). */
static int
angle_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    static const PtlLoop real_loops[PTL_DTYPE_COUNT] = {
        [PTL_DTYPE_FLOAT16] = real_angle_f2, [PTL_DTYPE_BFLOAT16] = real_angle_bf,
        [PTL_DTYPE_FLOAT32] = real_angle_f4, [PTL_DTYPE_FLOAT64] = real_angle_f8};
    if (ptl_dtype_is_complex(s[0].u.t->dtype)) {
        return to_real_complex(op, ks, s, zangle_loops);
    }
    PtlIterConfig cfg = ptl_iter_config();
    cfg.int_to_float = 1;
    return ptl_pointwise(op, s, 1, self_only, cfg, real_loops, NULL);
}

/* conj(Tensor(a) self) -> Tensor(a): a view of self with the conjugate bit flipped for a
 * complex self (Note [Conjugate views] in conjugate.c), an alias of a real one.
 * conj_physical(Tensor self) -> Tensor: always a new tensor. */
static int
conj_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    if (op->id == PTL_OP_conj) {
        PtlTensorImpl *v = ptl_tensor_impl_view(self, self->dim, self->sizes, self->strides,
                                                self->storage_offset);
        if (v != NULL && ptl_dtype_is_complex(self->dtype)) {
            v->keys ^= PTL_KEYSET(PTL_KEY_CONJUGATE);
        }
        return set_result(s, v);
    }
    if (ptl_dtype_is_complex(self->dtype)) {
        return ptl_pointwise(op, s, 1, self_only, ptl_iter_config(), zconj_loops, NULL);
    }
    PtlIValue a[2] = {ptl_iv_tensor(self), ptl_iv_none()};
    return set_result(s, ptl_call_tensor(PTL_OP_clone, a));
}

static const PtlKernelReg complex_kernels[] = {
    {PTL_OP_add_Tensor, PTL_KEY_COMPLEX, add_sub_complex},
    {PTL_OP_add__Tensor, PTL_KEY_COMPLEX, add_sub_complex},
    {PTL_OP_add_out, PTL_KEY_COMPLEX, add_sub_complex},
    {PTL_OP_sub_Tensor, PTL_KEY_COMPLEX, add_sub_complex},
    {PTL_OP_sub__Tensor, PTL_KEY_COMPLEX, add_sub_complex},
    {PTL_OP_sub_out, PTL_KEY_COMPLEX, add_sub_complex},
    {PTL_OP_rsub_Tensor, PTL_KEY_COMPLEX, add_sub_complex},
    {PTL_OP_mul_Tensor, PTL_KEY_COMPLEX, mul_complex},
    {PTL_OP_mul__Tensor, PTL_KEY_COMPLEX, mul_complex},
    {PTL_OP_mul_out, PTL_KEY_COMPLEX, mul_complex},
    {PTL_OP_addcmul, PTL_KEY_COMPLEX, addc_complex},
    {PTL_OP_addcmul_, PTL_KEY_COMPLEX, addc_complex},
    {PTL_OP_addcmul_out, PTL_KEY_COMPLEX, addc_complex},
    {PTL_OP_addcdiv, PTL_KEY_COMPLEX, addc_complex},
    {PTL_OP_addcdiv_, PTL_KEY_COMPLEX, addc_complex},
    {PTL_OP_addcdiv_out, PTL_KEY_COMPLEX, addc_complex},
    {PTL_OP_lerp_Scalar, PTL_KEY_COMPLEX, lerp_complex},
    {PTL_OP_lerp__Scalar, PTL_KEY_COMPLEX, lerp_complex},
    {PTL_OP_lerp_Tensor, PTL_KEY_COMPLEX, lerp_complex},
    {PTL_OP_lerp__Tensor, PTL_KEY_COMPLEX, lerp_complex},
    {PTL_OP_pow_Tensor_Tensor, PTL_KEY_COMPLEX, pow_complex},
    {PTL_OP_pow__Tensor_Tensor, PTL_KEY_COMPLEX, pow_complex},
    {PTL_OP_pow_Tensor_Tensor_out, PTL_KEY_COMPLEX, pow_complex},
    {PTL_OP_pow_Tensor_Scalar, PTL_KEY_COMPLEX, pow_complex},
    {PTL_OP_pow__Scalar, PTL_KEY_COMPLEX, pow_complex},
    {PTL_OP_pow_Tensor_Scalar_out, PTL_KEY_COMPLEX, pow_complex},
    {PTL_OP_pow_Scalar, PTL_KEY_COMPLEX, pow_complex},
    {PTL_OP_pow_Scalar_out, PTL_KEY_COMPLEX, pow_complex},
    {PTL_OP_div_Tensor, PTL_KEY_COMPLEX, div_complex},
    {PTL_OP_div__Tensor, PTL_KEY_COMPLEX, div_complex},
    {PTL_OP_div_out, PTL_KEY_COMPLEX, div_complex},
    {PTL_OP_div_Tensor_mode, PTL_KEY_COMPLEX, div_mode_complex},
    {PTL_OP_div__Tensor_mode, PTL_KEY_COMPLEX, div_mode_complex},
    {PTL_OP_div_Tensor_mode_out, PTL_KEY_COMPLEX, div_mode_complex},
    {PTL_OP_eq_Tensor, PTL_KEY_COMPLEX, compare_complex},
    {PTL_OP_eq__Tensor, PTL_KEY_COMPLEX, compare_complex},
    {PTL_OP_eq_out, PTL_KEY_COMPLEX, compare_complex},
    {PTL_OP_ne_Tensor, PTL_KEY_COMPLEX, compare_complex},
    {PTL_OP_ne__Tensor, PTL_KEY_COMPLEX, compare_complex},
    {PTL_OP_ne_out, PTL_KEY_COMPLEX, compare_complex},
    {PTL_OP_neg, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_neg_, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_neg_out, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_exp, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_exp_, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_exp_out, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_log, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_log_, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_log_out, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_sqrt, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_sqrt_, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_sqrt_out, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_reciprocal, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_reciprocal_, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_reciprocal_out, PTL_KEY_COMPLEX, unary_complex},
    {PTL_OP_abs, PTL_KEY_COMPLEX, abs_complex},
    {PTL_OP_isclose, PTL_KEY_COMPLEX, isclose_complex},
    {PTL_OP_isnan, PTL_KEY_COMPLEX, predicate_complex},
    {PTL_OP_isinf, PTL_KEY_COMPLEX, predicate_complex},
    {PTL_OP_isfinite, PTL_KEY_COMPLEX, predicate_complex},
    {PTL_OP_abs_, PTL_KEY_COMPLEX, abs_complex},
    {PTL_OP_abs_out, PTL_KEY_COMPLEX, abs_complex},
    {PTL_OP_sum, PTL_KEY_COMPLEX, reduce_complex},
    {PTL_OP_sum_dim_IntList, PTL_KEY_COMPLEX, reduce_complex},
    {PTL_OP_mean, PTL_KEY_COMPLEX, reduce_complex},
    {PTL_OP_mean_dim, PTL_KEY_COMPLEX, reduce_complex},
    {PTL_OP_real, PTL_KEY_CPU, real_imag_cpu},
    {PTL_OP_imag, PTL_KEY_CPU, real_imag_cpu},
    {PTL_OP_view_as_real, PTL_KEY_CPU, view_as_real_cpu},
    {PTL_OP_view_as_complex, PTL_KEY_CPU, view_as_complex_cpu},
    {PTL_OP_complex, PTL_KEY_CPU, complex_cpu},
    {PTL_OP_polar, PTL_KEY_CPU, complex_cpu},
    {PTL_OP_angle, PTL_KEY_CPU, angle_cpu},
    {PTL_OP_conj, PTL_KEY_CPU, conj_cpu},
    {PTL_OP_conj_physical, PTL_KEY_CPU, conj_cpu},
};

/* Registers the table and the Complex fallback (native.def). */
int
ptl_register_complex_kernels(void)
{
    for (size_t i = 0; i < sizeof(passthrough_ops) / sizeof(passthrough_ops[0]); i++) {
        passthrough[passthrough_ops[i]] = 1;
    }
    ptl_dispatcher_register_fallback(PTL_KEY_COMPLEX, complex_fallback);
    return ptl_dispatcher_register(complex_kernels,
                                   sizeof(complex_kernels) / sizeof(complex_kernels[0]),
                                   __FILE__);
}
