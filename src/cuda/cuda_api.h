/* cuda_api.h -- the only src/cuda header the C core includes.  Everything here is extern "C"
 * and POD; templates stay inside the .cu files.  Mirrors c10/cuda/CUDAFunctions.h. */
#ifndef PTL_CUDA_CUDA_API_H
#define PTL_CUDA_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

#include "../aten/native/device_index.h"
#include "../aten/native/device_conv.h"
#include "../aten/native/device_nn.h"
#include "../aten/native/device_pool.h"
#include "../aten/native/device_random.h"
#include "../aten/native/device_reduce.h"
#include "../aten/native/optim_step.h"

#ifdef __cplusplus
extern "C" {
#endif

struct PtlCachingAllocator;
struct PtlDeviceMemoryOps;

/* 1 when the extension was compiled with nvcc (PTL_WITH_CUDA). */
int ptl_cuda_is_built(void);
/* Number of visible devices; 0 when CUDA is not built, no driver, or no device.  Never
 * fails: the reason for 0 is kept for ptl_cuda_no_device_reason(). */
int ptl_cuda_device_count(void);
const char *ptl_cuda_no_device_reason(void);
/* CUDA runtime version as major*1000 + minor*10, or 0. */
int ptl_cuda_runtime_version(void);

/* Note [CUDA availability] in lazy_init.c: 1 only when a CUDA backend has registered its
 * allocator and kernels and a device is visible; never fails. */
int ptl_cuda_is_available(void);
/* Why ptl_cuda_is_available() is 0, or "" when it is 1. */
const char *ptl_cuda_unavailable_reason(void);

/* Note [CUDA and fork] in lazy_init.c.  Call before any CUDA use: 0, or -1 with an error
 * set (in a child forked after CUDA was initialised, or when CUDA is unavailable). */
int ptl_cuda_lazy_init(void);
/* Sets the "CUDA initialised" flag without touching a device (tests, and the backend once it
 * has created its context). */
void ptl_cuda_mark_initialized(void);
int ptl_cuda_is_initialized(void);
int ptl_cuda_in_bad_fork(void);

/* The device model (torch.cuda.current_device, set_device, synchronize,
 * get_device_properties).  Call after ptl_cuda_lazy_init(); 0, or -1 with an error set. */
typedef struct PtlCudaDeviceProperties {
    char name[256];
    size_t total_memory;
    int major, minor;
    int multi_processor_count;
    int l2_cache_size;
    int warp_size;
    int max_threads_per_multi_processor;
} PtlCudaDeviceProperties;

int ptl_cuda_current_device(int *device);
int ptl_cuda_set_device(int device);
int ptl_cuda_synchronize(int device);
int ptl_cuda_get_device_properties(int device, PtlCudaDeviceProperties *out);

/* Creates the devices' caching allocators (settings from PTL_CUDA_ALLOC_CONF) and registers
 * the CUDA storage allocator; 0, or -1 with an error (a bad PTL_CUDA_ALLOC_CONF, a CPU-only
 * build).  Called once CUDA kernels are registered (Note [CUDA availability]). */
int ptl_cuda_register_allocator(void);
/* The CUDA runtime as the caching allocator's device interface (its ctx is the device index
 * cast to a pointer), or NULL in a CPU-only build.  For tests that drive an allocator of
 * their own over a real device. */
const struct PtlDeviceMemoryOps *ptl_cuda_device_memory_ops(void);
/* The caching allocator of CUDA device `device` once the CUDA allocator is registered
 * (cuda_memory.cu), else NULL; sets no error. */
struct PtlCachingAllocator *ptl_cuda_caching_allocator(int device);

/* ---- elementwise kernels (elementwise.cu; Note [CUDA elementwise launch] there) ---- */

#define PTL_CUDA_MAX_DIMS 16
#define PTL_CUDA_MAX_OPERANDS 4

/* The TensorIterator's geometry as a POD passed by value to the kernels: operand 0 is the
 * output, dim 0 moves fastest, strides are in bytes.  An operand whose bit is set in
 * is_scalar has no data: every element is scalar[t] (a CPU 0-dim input, in the compute
 * dtype, exact in a double for every float dtype), iscalar[t] for integer dtypes (exact). */
typedef struct PtlCudaLoopArgs {
    char *data[PTL_CUDA_MAX_OPERANDS];
    int64_t sizes[PTL_CUDA_MAX_DIMS];
    int64_t strides[PTL_CUDA_MAX_OPERANDS][PTL_CUDA_MAX_DIMS];
    double scalar[PTL_CUDA_MAX_OPERANDS];
    int64_t iscalar[PTL_CUDA_MAX_OPERANDS];
    int64_t numel;
    int32_t ndim, ntensors;
    uint32_t is_scalar;
    int32_t dtype;          /* PtlDtype of every operand (a copy's destination) */
    int32_t src_dtype;      /* a copy's source PtlDtype */
} PtlCudaLoopArgs;

/* How a pointwise kernel is launched: grid x block threads, `vec` elements per load. */
typedef struct PtlCudaLaunch {
    int64_t grid;
    int32_t block;
    int32_t vec;
} PtlCudaLaunch;

/* The byte offset of every operand at element `linear` (the host build of the device's
 * offset calculator; operands beyond a->ntensors are left alone). */
void ptl_cuda_offsets(const PtlCudaLoopArgs *a, int64_t linear, int64_t *offsets);
/* The launch of a pointwise kernel over a (elements of `itemsize` bytes), at most
 * max_blocks blocks; grid 0 when there is nothing to do. */
PtlCudaLaunch ptl_cuda_launch_geometry(const PtlCudaLoopArgs *a, int64_t itemsize,
                                       int64_t max_blocks);

/* ORDER PtlCudaPointwiseOp: the kernels' switch in elementwise.cu. */
typedef enum PtlCudaPointwiseOp {
    PTL_CUDA_OP_ADD,                /* a + p[0] * b (sub passes -alpha) */
    PTL_CUDA_OP_MUL,
    PTL_CUDA_OP_DIV,
    PTL_CUDA_OP_NEG,
    PTL_CUDA_OP_RELU,
    PTL_CUDA_OP_SIGMOID,
    PTL_CUDA_OP_TANH,
    PTL_CUDA_OP_EXP,
    PTL_CUDA_OP_LOG,
    PTL_CUDA_OP_GELU,               /* p[0]: tanh approximation */
    PTL_CUDA_OP_GELU_BACKWARD,      /* (grad, self), p[0]: tanh approximation */
    PTL_CUDA_OP_THRESHOLD_BACKWARD, /* (grad, self), p[0]: threshold */
    /* special_math.h's functions; the binary ones take (self, other) */
    PTL_CUDA_OP_ACOSH,
    PTL_CUDA_OP_ASINH,
    PTL_CUDA_OP_ATANH,
    PTL_CUDA_OP_ERFC,
    PTL_CUDA_OP_I0,
    PTL_CUDA_OP_I0E,
    PTL_CUDA_OP_I1,
    PTL_CUDA_OP_I1E,
    PTL_CUDA_OP_HYPOT,
    PTL_CUDA_OP_IGAMMA,             /* p[0] != 0: its derivative in x, _ptl_igamma_density */
    PTL_CUDA_OP_IGAMMAC,
    /* distributions.h's reparameterised gradients: (self, output) and (x, alpha, total) */
    PTL_CUDA_OP_STANDARD_GAMMA_GRAD,
    PTL_CUDA_OP_DIRICHLET_GRAD,
    /* activations (scalar_math.h's functions, in double as activation.c's loops); the
     * backward ones take (grad, self) */
    PTL_CUDA_OP_SILU,
    PTL_CUDA_OP_SILU_BACKWARD,
    PTL_CUDA_OP_MISH,
    PTL_CUDA_OP_MISH_BACKWARD,
    PTL_CUDA_OP_ELU,                /* p: alpha, scale, input_scale */
    PTL_CUDA_OP_ELU_BACKWARD,       /* (grad, self_or_result), p: alpha, scale, input_scale,
                                     * is_result */
    PTL_CUDA_OP_SOFTPLUS,           /* p: beta, threshold */
    PTL_CUDA_OP_SOFTPLUS_BACKWARD,  /* p: beta, threshold */
    PTL_CUDA_OP_LOG_SIGMOID,
    PTL_CUDA_OP_LOG_SIGMOID_BACKWARD,
    PTL_CUDA_OP_HARDSWISH,
    PTL_CUDA_OP_HARDSWISH_BACKWARD,
    PTL_CUDA_OP_HARDSIGMOID,
    PTL_CUDA_OP_HARDSIGMOID_BACKWARD,
    PTL_CUDA_OP_LEAKY_RELU,         /* p: negative_slope */
    PTL_CUDA_OP_LEAKY_RELU_BACKWARD,
    PTL_CUDA_OP_HARDTANH,           /* p: min_val, max_val */
    PTL_CUDA_OP_HARDTANH_BACKWARD,
    PTL_CUDA_OP_SOFTSHRINK,         /* p: lambd */
    PTL_CUDA_OP_HARDSHRINK,         /* p: lambd */
    PTL_CUDA_OP_SHRINK_BACKWARD,    /* softshrink's and hardshrink's, p: lambd */
    /* unary.c's, ternary.c's and binary.c's formulas */
    PTL_CUDA_OP_ABS,
    PTL_CUDA_OP_SIGN,
    PTL_CUDA_OP_SQRT,
    PTL_CUDA_OP_RECIPROCAL,
    PTL_CUDA_OP_CLAMP,              /* p: min, max (-inf, inf where missing) */
    PTL_CUDA_OP_POW_SCALAR,         /* p: exponent, plain pow (float16: no fast paths) */
    PTL_CUDA_OP_CLAMP_TENSOR,       /* ternary.c's clamp.Tensor: (self, min, max) */
    PTL_CUDA_OP_CLAMP_MIN_TENSOR,   /* (self, min) */
    PTL_CUDA_OP_CLAMP_MAX_TENSOR,   /* (self, max) */
    PTL_CUDA_OP_NEXTAFTER,          /* p: PtlCudaNextafterWidth of the tensor's dtype */
    PTL_CUDA_OP_GCD,                /* special_math.h's gcd and lcm: integer dtypes only */
    PTL_CUDA_OP_LCM,
    /* loss.c's regression losses: (self, target), p: PtlCudaRegLoss, beta or delta; the
     * backward takes (grad, self, target), p: PtlCudaRegLoss, norm, beta or delta */
    PTL_CUDA_OP_REG_LOSS,
    PTL_CUDA_OP_REG_LOSS_BACKWARD,
    /* nn.c's binary_cross_entropy of (self, target) in double (scalar_math.h's ptl_bce_d);
     * the backward takes (grad, self, target), p: grad's divisor (numel for 'mean', else 1) */
    PTL_CUDA_OP_BCE,
    PTL_CUDA_OP_BCE_BACKWARD,
    /* unary.c's, binary.c's, compare.c's and ternary.c's remaining formulas, one function
     * of each family per launch: p[0] is its PtlCudaMathFn, p[1..3] its parameters.  Every
     * integer dtype and bool (as uint8) reach the kernels: register_cuda_math.c refuses what
     * the CPU op refuses before the launch. */
    PTL_CUDA_OP_MATH,               /* (self) */
    PTL_CUDA_OP_MATH2,              /* (self, other) */
    PTL_CUDA_OP_MATH3,              /* (self, tensor1, tensor2) */
    /* the predicates: (self) or (self, other) of the compute dtype -> bool, every dtype */
    PTL_CUDA_OP_PREDICATE,
    PTL_CUDA_OP_COUNT
} PtlCudaPointwiseOp;

/* The functions of PTL_CUDA_OP_MATH, MATH2, MATH3 and PREDICATE (p[0]); the parameters
 * p[1..3] */
typedef enum PtlCudaMathFn {
    /* unary: float16, bfloat16 and float32 in float, float64 in double */
    PTL_CUDA_MATH_EXP2,
    PTL_CUDA_MATH_EXPM1,
    PTL_CUDA_MATH_LOG2,
    PTL_CUDA_MATH_LOG10,
    PTL_CUDA_MATH_LOG1P,
    PTL_CUDA_MATH_RSQRT,
    PTL_CUDA_MATH_SIN,
    PTL_CUDA_MATH_COS,
    PTL_CUDA_MATH_TAN,
    PTL_CUDA_MATH_ASIN,
    PTL_CUDA_MATH_ACOS,
    PTL_CUDA_MATH_ATAN,
    PTL_CUDA_MATH_SINH,
    PTL_CUDA_MATH_COSH,
    PTL_CUDA_MATH_ERF,
    PTL_CUDA_MATH_ERFINV,           /* in double */
    PTL_CUDA_MATH_LGAMMA,
    PTL_CUDA_MATH_DIGAMMA,          /* in double */
    PTL_CUDA_MATH_POLYGAMMA,        /* in double; p[1]: n */
    PTL_CUDA_MATH_FRAC,
    /* unary, torch.special's functions of special.c (gaussian_math.h's and bessel_math.h's
     * formulas) in double, float32 ndtr by ptl_ndtr_f32 as special.c's float loops */
    PTL_CUDA_MATH_NDTR,
    PTL_CUDA_MATH_LOG_NDTR,
    PTL_CUDA_MATH_NDTRI,
    PTL_CUDA_MATH_ERFCX,
    PTL_CUDA_MATH_BESSEL_J0,
    PTL_CUDA_MATH_BESSEL_J1,
    PTL_CUDA_MATH_BESSEL_Y0,
    PTL_CUDA_MATH_BESSEL_Y1,
    PTL_CUDA_MATH_BESSEL_K0,
    PTL_CUDA_MATH_BESSEL_K1,
    PTL_CUDA_MATH_BESSEL_K0E,
    PTL_CUDA_MATH_BESSEL_K1E,
    PTL_CUDA_MATH_SPHERICAL_J0,
    PTL_CUDA_MATH_AIRY_AI,
    /* unary, integers too: floor, ceil, trunc and round are their identity there */
    PTL_CUDA_MATH_FLOOR,
    PTL_CUDA_MATH_CEIL,
    PTL_CUDA_MATH_TRUNC,
    PTL_CUDA_MATH_ROUND,            /* p[1]: decimals, p[2], p[3]: 10^|decimals| in float,
                                     * in double */
    PTL_CUDA_MATH_SQUARE,
    PTL_CUDA_MATH_NAN_TO_NUM,       /* p: nan, posinf, neginf; integers pass through */
    PTL_CUDA_MATH_THRESHOLD,        /* p: threshold, value */
    PTL_CUDA_MATH_BITWISE_NOT,      /* integers only */
    PTL_CUDA_MATH_BOOL_NOT,         /* bool (uint8 0 or 1) only */
    /* binary */
    PTL_CUDA_MATH_ATAN2,
    PTL_CUDA_MATH_MAXIMUM,          /* integers: fmax and fmin are maximum and minimum */
    PTL_CUDA_MATH_MINIMUM,
    PTL_CUDA_MATH_FMAX,
    PTL_CUDA_MATH_FMIN,
    PTL_CUDA_MATH_POW,
    PTL_CUDA_MATH_DIV_TRUNC,        /* integers: 0 where the divisor is 0 (the caller raises) */
    PTL_CUDA_MATH_DIV_FLOOR,
    PTL_CUDA_MATH_REMAINDER,
    PTL_CUDA_MATH_FMOD,
    PTL_CUDA_MATH_BITWISE_AND,      /* integers and bool only, as the shifts */
    PTL_CUDA_MATH_BITWISE_OR,
    PTL_CUDA_MATH_BITWISE_XOR,
    PTL_CUDA_MATH_LSHIFT,           /* p[1]: the dtype's width in bits */
    PTL_CUDA_MATH_RSHIFT,
    PTL_CUDA_MATH_LERP_SCALAR,      /* p[1]: weight */
    /* ternary */
    PTL_CUDA_MATH_LERP,             /* (self, end, weight) */
    PTL_CUDA_MATH_ADDCMUL,          /* p[1]: value */
    PTL_CUDA_MATH_ADDCDIV,
    /* PTL_CUDA_OP_PREDICATE's: integers and bool are never nan or inf */
    PTL_CUDA_MATH_ISNAN,
    PTL_CUDA_MATH_ISINF,
    PTL_CUDA_MATH_ISFINITE,
    PTL_CUDA_MATH_LOGICAL_NOT,
    PTL_CUDA_MATH_ISCLOSE           /* (self, other), p: rtol, atol, equal_nan */
} PtlCudaMathFn;

/* nextafter's step: float16 and bfloat16 (computed in float) step on their own bits */
typedef enum PtlCudaNextafterWidth {
    PTL_CUDA_NEXTAFTER_NATIVE,
    PTL_CUDA_NEXTAFTER_HALF,
    PTL_CUDA_NEXTAFTER_BF16
} PtlCudaNextafterWidth;

/* ORDER PtlCudaRegLoss: the regression losses of PTL_CUDA_OP_REG_LOSS (loss.c's RegLoss) */
typedef enum PtlCudaRegLoss {
    PTL_CUDA_REG_MSE,
    PTL_CUDA_REG_SMOOTH_L1,
    PTL_CUDA_REG_HUBER
} PtlCudaRegLoss;

/* Runs op over a (float16, bfloat16, float32, float64) on the current stream; p holds the
 * op's scalar parameters (NULL, or PTL_CUDA_MAX_PARAMS doubles).  0, or -1 with an error
 * set. */
#define PTL_CUDA_MAX_PARAMS 4
int ptl_cuda_pointwise(PtlCudaPointwiseOp op, const PtlCudaLoopArgs *a, const double *p);
/* 1 when ptl_cuda_pointwise runs op on dtype (every op: the float dtypes; add, mul, neg,
 * relu, abs and sign: the integer ones too, bool excepted; gcd and lcm: those alone; the
 * math family: every dtype). */
int ptl_cuda_pointwise_takes(PtlCudaPointwiseOp op, int dtype);
/* Copies operand 1 (a->src_dtype) into operand 0 (a->dtype), converting as the CPU copy does
 * (an is_scalar source is not supported: use ptl_cuda_fill).  0, or -1 with an error set. */
int ptl_cuda_copy(const PtlCudaLoopArgs *a);
/* Writes the `itemsize` bytes at value into every element of operand 0.  0 or -1. */
int ptl_cuda_fill(const PtlCudaLoopArgs *a, const void *value, int64_t itemsize);
/* cudaMemcpy of nbytes between two contiguous buffers, either on the device or the host
 * (dst_on_device, src_on_device), then synchronised.  0, or -1 with an error set. */
int ptl_cuda_memcpy(void *dst, int dst_on_device, const void *src, int src_on_device,
                    size_t nbytes);

/* ---- reductions and the softmax family (reduce.cu; Note [CUDA reduction plan] in
 * reduce_plan.h) ---- */

/* The device figures a plan depends on (tests pass small ones to cross every threshold). */
typedef struct PtlCudaReduceTuning {
    int32_t max_threads;    /* threads per block, a power of two in [32, 1024] */
    int64_t target_blocks;  /* blocks that fill the device: a split aims at this many */
    int64_t max_grid;       /* blocks in x at most; the kernels loop over the rest */
    int64_t min_chunk;      /* reduced elements per split at least */
} PtlCudaReduceTuning;

#define PTL_CUDA_LAYOUT_BLOCK_PER_OUTPUT 0
#define PTL_CUDA_LAYOUT_THREAD_PER_OUTPUT 1

/* How a reduction runs: grid x nsplit blocks of `block` threads; with nsplit > 1 block
 * (x, y) reduces the chunk [y chunk, (y + 1) chunk) of its outputs into a workspace of
 * nout * nsplit accumulators, and a second pass (finish_grid blocks of `block` threads)
 * combines each output's partials in order. */
typedef struct PtlCudaReducePlan {
    int32_t layout, block;
    int64_t grid, nsplit, chunk, finish_grid;
    int64_t workspace_bytes;
} PtlCudaReducePlan;

/* One block per row when inner == 1, else one thread per (outer, inner) line. */
typedef struct PtlCudaSoftmaxPlan {
    int32_t layout, block;
    int64_t grid;
} PtlCudaSoftmaxPlan;

/* The default tuning of the current device (figures of an H100-class device when none). */
PtlCudaReduceTuning ptl_cuda_reduce_tuning(void);
PtlCudaReducePlan ptl_cuda_reduce_plan(const PtlDeviceReduceArgs *a, const PtlCudaReduceTuning *t);
PtlCudaSoftmaxPlan ptl_cuda_softmax_plan(const PtlDeviceSoftmaxArgs *a,
                                         const PtlCudaReduceTuning *t);
/* Runs the reduction / softmax on the device, or, while kernel emulation is on, runs the
 * kernels' index arithmetic and combination order on the host over host memory (the CPU
 * tests of the plans).  0, or -1 with an error set. */
int ptl_cuda_reduce(const PtlDeviceReduceArgs *a);
int ptl_cuda_softmax(const PtlDeviceSoftmaxArgs *a);
/* Kernel emulation on (with the tuning t) or off (t NULL); while on, reductions and softmax
 * of CPU tensors take the CUDA path (ptl_device_reduce_emulation).  For tests only; not
 * thread-safe. */
void ptl_cuda_set_kernel_emulation(const PtlCudaReduceTuning *t);
/* Points the device_*.h hooks of the kernels that the emulation also runs (all but the
 * GEMM's) at the CUDA backend: at registration and when the emulation is turned on. */
void ptl_cuda_set_kernel_hooks(void);
/* What the emulation ran since it was turned on, by plan: reductions one block per output,
 * one thread per output, split (any layout); softmax one block per line, one thread per
 * line; ...; gather, scatter with self's rows in one chunk per fiber, in several;
 * advanced indexing's gather and scatter; cat; convolution, its split sum; pooling; attention;
 * sort.  The names _cuda_kernel_emulation(None) gives them are src/python/cuda_module.c's. */
enum { PTL_CUDA_EMU_ROWS, PTL_CUDA_EMU_COLUMNS, PTL_CUDA_EMU_SPLIT, PTL_CUDA_EMU_SOFTMAX_ROWS,
       PTL_CUDA_EMU_SOFTMAX_LINES, PTL_CUDA_EMU_LAYER_NORM, PTL_CUDA_EMU_LAYER_NORM_SPLIT,
       PTL_CUDA_EMU_NLL, PTL_CUDA_EMU_EMBEDDING, PTL_CUDA_EMU_RANDOM, PTL_CUDA_EMU_OPTIM,
       PTL_CUDA_EMU_GATHER, PTL_CUDA_EMU_SCATTER, PTL_CUDA_EMU_SCATTER_CHUNKED,
       PTL_CUDA_EMU_INDEX_GATHER, PTL_CUDA_EMU_INDEX_SCATTER, PTL_CUDA_EMU_CAT,
       PTL_CUDA_EMU_CONV, PTL_CUDA_EMU_CONV_SPLIT, PTL_CUDA_EMU_POOL,
       PTL_CUDA_EMU_ATTENTION, PTL_CUDA_EMU_SORT,
       /* max_unpool and its backward (Note [CUDA max_unpool]); where and masked_fill; take */
       PTL_CUDA_EMU_UNPOOL, PTL_CUDA_EMU_SELECT, PTL_CUDA_EMU_TAKE,
       PTL_CUDA_EMU_SHAPE_GATHER, PTL_CUDA_EMU_TRIANGLE, PTL_CUDA_EMU_SCAN,
       /* batch norm, its channels in one chunk, in several (Note [CUDA nn kernels]) */
       PTL_CUDA_EMU_BATCH_NORM, PTL_CUDA_EMU_BATCH_NORM_SPLIT,
       /* the pads and upsampling (Note [CUDA resampling]) */
       PTL_CUDA_EMU_RESAMPLE,
       /* im2col and col2im (Note [CUDA convolution]) */
       PTL_CUDA_EMU_FOLD,
       /* the grid sampler (Note [CUDA grid sampler]); the recurrent layer's cells (Note
        * [CUDA recurrent layer]); searchsorted (Note [CUDA searchsorted]) */
       PTL_CUDA_EMU_GRID_SAMPLER, PTL_CUDA_EMU_RNN_CELL, PTL_CUDA_EMU_SEARCH,
       PTL_CUDA_EMU_COUNT };
void ptl_cuda_kernel_emulation_counts(int64_t counts[PTL_CUDA_EMU_COUNT]);
/* Counts one emulated run of kind `which` (nn_plan.c's emulations). */
void ptl_cuda_kernel_emulation_ran(int which);
/* The device launches (reduce.cu), workspace: plan->workspace_bytes of device memory. */
int ptl_cuda_reduce_launch(const PtlDeviceReduceArgs *a, const PtlCudaReducePlan *plan,
                           void *workspace);
int ptl_cuda_softmax_launch(const PtlDeviceSoftmaxArgs *a, const PtlCudaSoftmaxPlan *plan);

/* ---- layer norm, nll_loss and embedding (nn.cu; Note [CUDA nn kernels] in nn_plan.h) ---- */

/* A launch of grid x nsplit blocks of `block` threads (grid-stride loops cover the rest);
 * nsplit > 1 only for split column sums: block (x, y) takes rows [y chunk, (y + 1) chunk). */
typedef struct PtlCudaNnPlan {
    int32_t block;
    int64_t grid, nsplit, chunk;
} PtlCudaNnPlan;

/* One block per row of `len` elements; one thread per element of n; one thread per column
 * of n over m rows, split over the rows when the columns are too few to fill the device. */
PtlCudaNnPlan ptl_cuda_rows_plan(int64_t rows, int64_t len, const PtlCudaReduceTuning *t);
PtlCudaNnPlan ptl_cuda_elems_plan(int64_t n, const PtlCudaReduceTuning *t);
PtlCudaNnPlan ptl_cuda_columns_plan(int64_t m, int64_t n, const PtlCudaReduceTuning *t);
/* Batch norm's (channel, chunk) sum tasks over c channels of m values: nsplit chunks of
 * `chunk` values a channel, one block a task. */
PtlCudaNnPlan ptl_cuda_batch_norm_plan(int64_t c, int64_t m, const PtlCudaReduceTuning *t);
/* The rows each thread of the embedding backward owns in its column (V rows, D columns). */
int64_t ptl_cuda_embedding_chunk(int64_t V, int64_t D, const PtlCudaReduceTuning *t);
/* Run on the device, or emulated on the host while kernel emulation is on.  0, or -1 with
 * an error set (a bad target or index: the CPU kernel's IndexError). */
int ptl_cuda_layer_norm(const PtlDeviceLayerNormArgs *a);
int ptl_cuda_nll(const PtlDeviceNllArgs *a);
int ptl_cuda_embedding(const PtlDeviceEmbeddingArgs *a);
int ptl_cuda_batch_norm(const PtlDeviceBatchNormArgs *a);
/* The device launches (nn.cu).  ws: a zeroed device array of int64: the status word [2],
 * the nll backward's total weight (a double) [1], then the embedding's row counts [V]. */
/* ws: 2 n nsplit doubles of device memory for split column sums, else NULL */
int ptl_cuda_layer_norm_launch(const PtlDeviceLayerNormArgs *a, const PtlCudaNnPlan *plan,
                               double *ws);
int ptl_cuda_nll_launch(const PtlDeviceNllArgs *a, const PtlCudaNnPlan *block,
                        const PtlCudaNnPlan *elems, int64_t *ws);
int ptl_cuda_embedding_launch(const PtlDeviceEmbeddingArgs *a, const PtlCudaNnPlan *count,
                              const PtlCudaNnPlan *elems, int64_t chunk, int64_t *ws);
/* ws: the sums of the tasks (2 c nsplit doubles), then the coefficients (3 c) */
int ptl_cuda_batch_norm_launch(const PtlDeviceBatchNormArgs *a, const PtlCudaNnPlan *tasks,
                               const PtlCudaNnPlan *chans, const PtlCudaNnPlan *elems,
                               double *ws);
/* The grid sampler's job (Note [CUDA grid sampler] in grid_sampler_plan.c), on the device
 * or emulated; 0, or -1 with an error set.  The launch (grid_sampler.cu): elems covers the
 * job's n npts grid points. */
int ptl_cuda_grid_sampler(const PtlGridSampler *a);
int ptl_cuda_grid_sampler_launch(const PtlGridSampler *a, const PtlCudaNnPlan *elems);
/* One step's cell launch of the recurrent layer (Note [CUDA recurrent layer] in
 * rnn_plan.h), on the device or emulated; 0, or -1 with an error set.  The launch (rnn.cu):
 * elems covers ptl_rnn_step_elems(a). */
int ptl_cuda_rnn_step(const PtlDeviceRnnStepArgs *a);
int ptl_cuda_rnn_step_launch(const PtlDeviceRnnStepArgs *a, const PtlCudaNnPlan *elems);

/* A zeroed workspace of n int64 for the kernels' status words and counts: on the host while
 * emulating (*host, free() it), else on the current device (*dev, decref it); NULL with the
 * error set. */
struct PtlTensorImpl;
int64_t *ptl_cuda_status_workspace(int64_t n, int64_t **host, struct PtlTensorImpl **dev);
/* *v = *p, an int64 in device memory, or in host memory when host (the emulation's
 * workspace) is not NULL: a status word, or the index it flags (a copy back from the device,
 * a synchronisation).  0, or -1. */
int ptl_cuda_status_load(const int64_t *p, const int64_t *host, int64_t *v);

/* fn(ctx, j, ws) for j over [0, n) in the order of plan p's grid-stride loop (nn.cu's
 * PTL_GRID_LOOP): block x, thread t, then a grid's width further on.  The emulation of the
 * kernels that take one unit of work per thread (nn_plan.c, random_plan.c, optim_plan.c). */
typedef void (*PtlCudaElemFn)(const void *ctx, int64_t j, int64_t *ws);
void ptl_cuda_emulate_elems(const PtlCudaNnPlan *p, int64_t n, PtlCudaElemFn fn,
                            const void *ctx, int64_t *ws);

/* ---- gather, scatter, advanced indexing and cat (index.cu; Note [CUDA index and sort
 * kernels] in index_plan.h) ---- */

/* Runs gather or a scatter on the device, or emulated on the host while kernel emulation is
 * on.  0, or -1 with an error set (a bad index: the CPU kernel's error). */
int ptl_cuda_scatter_gather(const PtlDeviceScatterArgs *a);
/* The device launch (index.cu): gather one thread per index element (elems); scatter one
 * per (fiber, chunk of `chunk` rows) over nfib fibers (elems).  ws: the zeroed status word
 * [1], then the counts [self_span] of mean and include_self=False. */
int ptl_cuda_scatter_gather_launch(const PtlDeviceScatterArgs *a, const PtlCudaNnPlan *elems,
                                   int64_t nfib, int64_t chunk, int64_t *ws);
/* Advanced indexing over index.c's tables, on the device (the tables copied there) or
 * emulated.  0, or -1 with an error set. */
int ptl_cuda_adv_index(const PtlDeviceAdvIndexArgs *a);
/* The device launch (index.cu; a's tables in device memory): gather one thread per output
 * element, scatter one per (group, i, j) with perm the walk's b sorted by offset and group
 * the ngroups + 1 starts of its runs of equal offsets. */
int ptl_cuda_adv_index_launch(const PtlDeviceAdvIndexArgs *a, const PtlCudaNnPlan *elems,
                              const int64_t *perm, const int64_t *group, int64_t ngroups);
/* cat on the device (the input table copied there) or emulated; 0, or -1 with an error set.
 * The launch (index.cu; a's table in device memory): one thread per output element. */
int ptl_cuda_cat(const PtlDeviceCatArgs *a);
int ptl_cuda_cat_launch(const PtlDeviceCatArgs *a, const PtlCudaNnPlan *elems);
/* where / masked_fill and take (Note [CUDA masked_fill and take] in index_plan.h): one
 * thread per element, elems plan; take's ws the status word, zeroed.  On the device, or
 * emulated. */
int ptl_cuda_select(const PtlDeviceSelectArgs *a);
int ptl_cuda_select_launch(const PtlDeviceSelectArgs *a, const PtlCudaNnPlan *elems);
int ptl_cuda_take(const PtlDeviceTakeArgs *a);
int ptl_cuda_take_launch(const PtlDeviceTakeArgs *a, const PtlCudaNnPlan *elems, int64_t *ws);
/* shape.c's movers, the same way (a->tab a host table, copied to the device) */
int ptl_cuda_shape(const PtlDeviceShapeArgs *a);
int ptl_cuda_shape_launch(const PtlDeviceShapeArgs *a, const PtlCudaNnPlan *elems);
/* cumsum, cumprod, cummax, cummin, logcumsumexp (reduce.cu; Note [CUDA scans] in
 * reduce_plan.h): one thread per line */
int ptl_cuda_scan(const PtlDeviceScanArgs *a);
int ptl_cuda_scan_launch(const PtlDeviceScanArgs *a, const PtlCudaNnPlan *elems);
/* sort, argsort and topk (sort.cu; Note [CUDA sort] in sort_plan.h) on the device or
 * emulated; 0, or -1 with an error set.  The launch: the keys and the merge passes one
 * thread per element (elems), the emit one per output element (outs); ws: 4 nlanes len
 * int64 of device memory (keys and indices, twice). */
int ptl_cuda_sort(const PtlDeviceSortArgs *a);
int ptl_cuda_sort_launch(const PtlDeviceSortArgs *a, const PtlCudaNnPlan *elems,
                         const PtlCudaNnPlan *outs, int64_t *ws);

/* ---- convolution (conv.cu; Note [CUDA convolution] in conv_plan.h) ---- */

/* One primitive as a GEMM per group, C (M x J) = A (M x K) B (K x J): tiles of
 * PTL_CONV_BM x PTL_CONV_BN outputs, nsplit chunks of `chunk` along K (WGRAD only), `tiles`
 * in all over `grid` blocks; the geometry's figures the index arithmetic needs (kernel
 * volume, column and image pixels, channels per group on the image and the column side);
 * `finish` the second pass of a split sum, one thread per output. */
typedef struct PtlCudaConvPlan {
    int64_t groups, M, J, K, kvol, cols, imgs, cpi, cpc;
    int64_t mtiles, jtiles, tiles, grid, nsplit, chunk;
    PtlCudaNnPlan finish;
} PtlCudaConvPlan;

PtlCudaConvPlan ptl_cuda_conv_plan(const PtlDeviceConvArgs *a, const PtlCudaReduceTuning *t);
/* Runs the primitive on the device, or emulated on the host while kernel emulation is on.
 * 0, or -1 with an error set. */
int ptl_cuda_conv(const PtlDeviceConvArgs *a);
/* The device launch (conv.cu); ws: nsplit G M J elements of the dtype when nsplit > 1. */
int ptl_cuda_conv_launch(const PtlDeviceConvArgs *a, const PtlCudaConvPlan *plan, void *ws);
/* im2col or col2im (conv.cu): elems covers the output's elements, isz bytes each. */
int ptl_cuda_fold_launch(const PtlDeviceConvArgs *a, const PtlCudaNnPlan *elems, int64_t isz);

/* ---- pooling (pool.cu; Note [CUDA pooling] in pool_plan.h): one thread per output element
 * (forwards) or input-gradient element (backwards), elems plan ---- */

int ptl_cuda_pool(const PtlDevicePoolArgs *a);
int ptl_cuda_pool_launch(const PtlDevicePoolArgs *a, const PtlCudaNnPlan *plan);
/* max_unpool's launches (Note [CUDA max_unpool] in pool_plan.h): one thread per source (or,
 * for the backward, gradient) element, src; the forward's fill, one per output element, dst;
 * ws the status word and the forward's winner table, zeroed. */
int ptl_cuda_unpool_launch(const PtlDevicePoolArgs *a, const PtlCudaNnPlan *src,
                           const PtlCudaNnPlan *dst, int64_t *ws);

/* ---- random fills (random.cu; Note [CUDA random fills] there) ---- */

/* The launch of a fill: one thread per Philox block of the job (elems plan). */
PtlCudaNnPlan ptl_cuda_random_plan(const PtlDistJob *j, const PtlCudaReduceTuning *t);
/* Fills j->out on the device, or emulated on the host while kernel emulation is on.  0, or
 * -1 with an error set. */
int ptl_cuda_random(const PtlDistJob *j);
int ptl_cuda_random_launch(const PtlDistJob *j, const PtlCudaNnPlan *plan);

/* ---- the fused optimizer steps (optim.cu): one thread per element (elems plan) ---- */

int ptl_cuda_sgd_step(const PtlSgdStepArgs *a);
int ptl_cuda_adam_step(const PtlAdamStepArgs *a);
int ptl_cuda_sgd_step_launch(const PtlSgdStepArgs *a, const PtlCudaNnPlan *plan);
int ptl_cuda_adam_step_launch(const PtlAdamStepArgs *a, const PtlCudaNnPlan *plan);

#ifdef __cplusplus
}
#endif
#endif
