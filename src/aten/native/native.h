/* native.h -- helpers shared by the CPU kernels in native/.  Mirrors the helpers of
 * ATen/native/TensorIterator-based kernels (structured kernel "meta" + "impl"). */
#ifndef PTL_ATEN_NATIVE_H
#define PTL_ATEN_NATIVE_H

#include "../dispatcher.h"
#include "../tensor_iterator.h"

/* The cases of a switch on a real dtype, one CASE(T, ACC, LOAD) each: T the element type,
 * ACC the type its values compare in (float for float16 and bfloat16, T otherwise) and
 * LOAD the T -> ACC conversion.  Bool shares uint8's case; float64 is the default.  Each
 * CASE expansion ends its case (break or return).  ORDER DTYPE */
#define PTL_REAL_DTYPE_CASES(CASE)                                                        \
    case PTL_DTYPE_BOOL:                                                                  \
    case PTL_DTYPE_UINT8: CASE(uint8_t, uint8_t, PTL_ID)                                  \
    case PTL_DTYPE_INT8: CASE(int8_t, int8_t, PTL_ID)                                     \
    case PTL_DTYPE_INT16: CASE(int16_t, int16_t, PTL_ID)                                  \
    case PTL_DTYPE_INT32: CASE(int32_t, int32_t, PTL_ID)                                  \
    case PTL_DTYPE_INT64: CASE(int64_t, int64_t, PTL_ID)                                  \
    case PTL_DTYPE_FLOAT16: CASE(ptl_half, float, ptl_half_to_f)                          \
    case PTL_DTYPE_BFLOAT16: CASE(ptl_bf16, float, ptl_bf16_to_f)                         \
    case PTL_DTYPE_FLOAT32: CASE(float, float, PTL_ID)                                    \
    default: CASE(double, double, PTL_ID)

/* The tensor a pointwise kernel writes into: self for in-place schemas (Tensor(a!) self),
 * the out= argument for out schemas, NULL for functional ones (borrowed). */
static inline PtlTensorImpl *
ptl_kernel_out(const PtlOperator *op, const PtlIValue *s)
{
    if (op->schema.inplace) {
        return s[0].u.t;
    }
    if (op->schema.out_index >= 0 && s[op->schema.out_index].tag == PTL_IV_TENSOR) {
        return s[op->schema.out_index].u.t;
    }
    return NULL;
}

/* Puts a kernel's result r (a new reference) in s[0] and returns 0; r NULL (the kernel failed,
 * the error set) returns -1. */
static inline int
ptl_kernel_return(PtlIValue *s, PtlTensorImpl *r)
{
    if (r == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(r);
    return 0;
}

/* The end of an in-place kernel that has written into self = s[0]: bumps self's version and
 * leaves it in s[0] as the result (a new reference); returns 0. */
static inline int
ptl_kernel_return_self(PtlIValue *s)
{
    PtlTensorImpl *self = s[0].u.t;
    ptl_tensor_bump_version(self);
    ptl_incref(self);
    s[0] = ptl_iv_tensor(self);
    return 0;
}

/* Note [Channels-last at the kernel boundary]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * conv, batch_norm, the pools, upsample and cat compute in NCHW order (their kernels read a
 * channels-last input through its strides or a contiguous copy).  PyTorch gives their results
 * the layout of their input (Note [Memory formats]), so the CPU kernels of these ops are
 * registered through ptl_kernel_run_as, which copies each result of the format's rank into
 * the format the input suggests after the NCHW kernel has run: one extra copy per result
 * where a native channels-last kernel would write it in place.  An NCHW input costs nothing:
 * its format is contiguous and the results are left as they are.  A float32 2-d convolution
 * (groups 1) computes in channels-last itself (conv_nhwc.c, Note [Channels-last
 * convolution]); the boundary serves the rest. */

/* Runs kernel k on s, then makes each tensor result whose rank fits f contiguous in f (a
 * channels-last format; contiguous leaves them).  0, or -1 with the error set and no
 * result left on the stack. */
int ptl_kernel_run_as(PtlKernel k, const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s,
                      PtlMemoryFormat f);
/* ptl_kernel_run_as with the format suggested by the op's argument named self or input (the
 * first argument when none is: upsample's backward follows its grad_output). */
int ptl_kernel_run_as_input(PtlKernel k, const PtlOperator *op, PtlDispatchKeySet ks,
                            PtlIValue *s);
/* Defines K##_as_input: kernel K registered through ptl_kernel_run_as_input. */
#define PTL_KERNEL_AS_INPUT(K)                                                             \
    static int K##_as_input(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)     \
    {                                                                                      \
        return ptl_kernel_run_as_input(K, op, ks, s);                                      \
    }
/* A copy of t laid out in memory format f as empty_like lays it out (preserve: t's layout
 * when dense); a new reference, or NULL with PyTorch's error for a rank f does not fit. */
PtlTensorImpl *ptl_copy_as(PtlTensorImpl *t, PtlMemoryFormat f);

/* Calls op id with the first k arguments given and the schema's defaults for the rest (new
 * ref, or NULL with the error set). */
static inline PtlTensorImpl *
ptl_call_k(PtlOpId id, int k, const PtlIValue *given)
{
    PtlIValue st[PTL_SCHEMA_MAX_ARGS];
    const PtlOperator *op = ptl_op(id);
    for (int i = 0; i < op->schema.nargs; i++) {
        st[i] = i < k ? given[i] : op->schema.args[i].def;
    }
    return ptl_call_tensor(id, st);
}

/* "add_cpu": the name PyTorch's dtype errors use ("\"add_cpu\" not implemented for 'Bool'"). */
void ptl_kernel_name(const PtlOperator *op, char *buf, size_t n);
int ptl_dtype_not_implemented(const PtlOperator *op, PtlDtype dt);

/* Runs a pointwise op whose inputs are the stack slots idx[0..ninputs) and whose output
 * comes from the schema (ptl_kernel_out).  `cfg` supplies the dtype options; the loop is
 * loops[compute dtype] (NULL entries raise PyTorch's "not implemented for" error).  On
 * success stack[0] holds the result (a new reference) and in-place/out= tensors have
 * their version bumped. */
int ptl_pointwise(const PtlOperator *op, PtlIValue *s, int ninputs, const int *idx,
                  PtlIterConfig cfg, const PtlLoop *loops, const void *extra);
/* ptl_pointwise whose float16 operands (and bfloat16 ones with bf16) run loops[float32] on
 * blocks converted to float32 (Note [Half-precision pointwise through float32] in native.c),
 * for ops whose float32 loop computes their half loops' formula */
int ptl_pointwise_halves_in_float(const PtlOperator *op, PtlIValue *s, int ninputs,
                                  const int *idx, PtlIterConfig cfg, const PtlLoop *loops,
                                  const void *extra, int bf16);
/* The loop that converts st values into dt ones (copy.c's, vectorized where it can be) */
PtlLoop ptl_cast_loop(PtlDtype dt, PtlDtype st);
/* ptl_pointwise whose dtype error names the kernel `kname` ("div_floor_cpu") instead of
 * "<op>_cpu" (kname NULL: the op's name). */
int ptl_pointwise_named(const PtlOperator *op, PtlIValue *s, int ninputs, const int *idx,
                        PtlIterConfig cfg, const PtlLoop *loops, const void *extra,
                        const char *kname);
/* The two ends of ptl_pointwise, for kernels that run the iterator themselves (the CUDA
 * pointwise kernels): the iterator over stack slots idx[0..ninputs) with the output the
 * schema gives (out= or in-place), 0 or -1; and after the run, the result in s[0] (an out=
 * argument's version bumped), 0 or -1 (it is released either way). */
int ptl_pointwise_iter(const PtlOperator *op, PtlIValue *s, int ninputs, const int *idx,
                       PtlIterConfig *cfg, PtlTensorIter *it);
int ptl_pointwise_return(PtlTensorIter *it, const PtlIterConfig *cfg, PtlIValue *s);
/* The argument checks of the activation kernels (softshrink's lambd, hardtanh's dtypes,
 * celu's alpha, the in-place backward ops' negative slopes) with PyTorch's errors, shared by
 * the CPU kernels (activation.c) and the CUDA ones: 0, or -1 with the error set. */
int ptl_activation_check(const PtlOperator *op, const PtlIValue *s);
/* An activation's parameter v as PyTorch's kernels see it for an input of dtype dt: rounded
 * to the input's dtype (in_dtype: a bound compared with the input) or to its opmath type. */
double ptl_activation_param(double v, PtlDtype dt, int in_dtype);
/* clamp's scalar bounds, as double for floating dtypes and int64 for integer ones; a missing
 * bound is the infinite one. */
typedef struct PtlClampBounds {
    double lo, hi;
    int64_t ilo, ihi;
} PtlClampBounds;
/* clamp's and clip's first check, whatever the bounds' type and device: PyTorch's
 * RuntimeError when an op with two optional bounds (min, max) gets neither; 0 otherwise
 * (the Complex key runs it before refusing complex clamps, as PyTorch does). */
int ptl_clamp_bounds_check(const PtlOperator *op, const PtlIValue *s);
/* The checks of clamp, clamp_min, clamp_max and clip with Scalar bounds (PyTorch's errors,
 * the kernel named "clamp_scalar_<device>"), the bounds and the result type: 0, or -1 with
 * the error set.  Shared by the CPU kernel (ternary.c) and the CUDA one. */
int ptl_clamp_scalar_prepare(const PtlOperator *op, const PtlIValue *s, const char *device,
                             PtlClampBounds *b, PtlDtype *result_type);
/* The checks of clamp.Tensor and clip.Tensor (a bound given; clip of bools names the kernel
 * "clamp_<device>"), shared by the CPU kernel (ternary.c) and the CUDA one: 0, or -1 with
 * the error set. */
int ptl_clamp_tensor_check(const PtlOperator *op, const PtlIValue *s, const char *device);
/* The checks of lerp (scalar: lerp.Scalar's weight) and of addcdiv's integer operands, with
 * PyTorch's errors, shared by the CPU kernels (ternary.c) and the CUDA ones: 0, or -1 with
 * the error set. */
int ptl_lerp_check(const PtlIValue *s, int scalar);
/* Whether every element of t (any dtype, any device) is nonzero, as one bool read on the
 * host: 1, 0, or -1 with the error set (compare.c; equal, allclose, and the CUDA integer
 * division's zero-divisor check) */
int ptl_all_nonzero(PtlTensorImpl *t);
int ptl_addcdiv_check(const PtlIValue *s);
/* isclose's checks (the operands' dtypes, rtol and atol), shared likewise (compare.c) */
int ptl_isclose_check(const PtlIValue *s);
/* nan_to_num's out= dtype check and its replacements for self's dtype in r (nan, posinf,
 * neginf: 0 and the dtype's largest and lowest finite values by default), shared likewise
 * (unary.c): 0, or -1 with the error set. */
int ptl_nan_to_num_prepare(const PtlOperator *op, const PtlIValue *s, double *r);
/* The iterator of a copy: src broadcast into dst, converted to dst's dtype (copy_'s rules);
 * 0 or -1.  Shared by the CPU copy and the CUDA one. */
int ptl_copy_iter_build(PtlTensorIter *it, PtlTensorImpl *dst, PtlTensorImpl *src);

/* unary.c's i0 and special_i1 kernels (their vector lanes compute I0 and I1), which special.c
 * registers for modified_bessel_i0 / modified_bessel_i1 too */
int ptl_unary_i0_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s);
int ptl_unary_special_i1_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s);

/* The generator argument of a random op (NULL: none given), and the generator its kernels
 * on dev draw from: gen, or dev's default one when gen is NULL; NULL with PyTorch's error when
 * gen belongs to another device type (random.c, shared with random_multinomial.c). */
struct PtlGenerator *ptl_random_generator_arg(const PtlOperator *op, const PtlIValue *s);
struct PtlGenerator *ptl_random_generator_for(struct PtlGenerator *gen, PtlDevice dev);
/* The elements [b, e) of a random sampler's job (ctx: a const PtlDistJob *, distributions.h),
 * the chunk function of random.c's fills (random_fill.c).  Always 0. */
int ptl_random_fill_range(void *ctx, int64_t b, int64_t e);
/* out[k] = words 0-1 (word 1 high) of Philox block first + k, draw 0, of the stream (seed,
 * offset), for k < n: ptl_philox_draw's words, eight blocks at a time where the CPU has AVX2
 * (random_fill.c) */
void ptl_philox_words64(uint64_t seed, uint64_t offset, int64_t first, int64_t n,
                        uint64_t *out);

/* _pin_memory's allocation: a new CPU storage of nbytes in pinned memory (new ref), or NULL
 * with an error.  The CUDA backend sets it (src/cuda/stream_state.c's
 * ptl_pinned_storage_new); NULL: no pinned memory allocator in this process. */
extern struct PtlStorage *(*ptl_device_pinned_storage_hook)(size_t nbytes);

/* Resolves one -1 in shape[0..n) against numel into out (view/reshape); 0 or -1. */
int ptl_infer_size(const int64_t *shape, int64_t n, int64_t numel, int64_t *out);

/* A zeroed array for a list of n tensors (at least one slot), or NULL with the error set. */
PtlTensorImpl **ptl_tensorlist_new(int64_t n);

/* Puts the list ts[0..n) (new refs or NULL, from ptl_tensorlist_new) in s[0], owned by the
 * stack, and returns 0; when `failed`, releases the tensors and the array and returns -1. */
int ptl_set_tensorlist(PtlIValue *s, PtlTensorImpl **ts, int64_t n, int failed);

/* Sets every element of t to value (converted); bumps t's version. */
int ptl_fill_scalar(PtlTensorImpl *t, const PtlIValue *value);
/* 0 when the Scalar v converts to dt, else -1 with PyTorch's "value cannot be converted to
 * type X without overflow" (c10's checked_convert, as fill_, masked_fill, full do). */
int ptl_scalar_check_range(const PtlIValue *v, PtlDtype dt);
/* Writes the Scalar v (int, double, bool or complex) converted to dtype at p (one element):
 * a complex into a real dtype keeps its real part (check the range first). */
void ptl_store_scalar(char *p, PtlDtype dtype, const PtlIValue *v);
/* A wrapped-number tensor for the Scalar v (new ref): int64, float64, bool or complex128,
 * so a result type computed with it follows PyTorch's category rules. */
PtlTensorImpl *ptl_wrapped_scalar(const PtlIValue *v);

/* logsumexp's vector kernels, the softmax ones without their stores (nn.c, Note [Softmax
 * columns]): for the contiguous float32/float64 run x[0..n), *m = its max (NaN when the run
 * holds one) and *s = the sum of e^(x - *m) (0 when *m is -inf); _cols does the same for each
 * column c < w of the n rows x, x + rs bytes, ..., into m[c] and s[c].  They return 1, or 0
 * without touching m and s where this CPU or dtype has no vector kernel. */
int ptl_softmax_expsum_row(PtlDtype dt, const char *x, int64_t n, double *m, double *s);
int ptl_softmax_expsum_cols(PtlDtype dt, const char *x, int64_t n, int64_t rs, int64_t w,
                            double *m, double *s);

/* Conjugates t's memory in place (t's values, read through its bit, become their
 * conjugates): what ptl_copy_into does after moving bytes between a conj view and a plain
 * tensor.  0 or -1.  See Note [Conjugate views] in conjugate.c. */
int ptl_conj_memory(PtlTensorImpl *t);

#endif
