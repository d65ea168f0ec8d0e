/* tensor_iterator.h -- broadcasting, type promotion, output allocation and the loop driver
 * for elementwise kernels.  Mirrors ATen/TensorIterator.h.
 *
 * Note [TensorIterator]
 * ~~~~~~~~~~~~~~~~~~~~~
 * build():  1. broadcast the input shapes (PyTorch's "The size of tensor a ..." error);
 *           2. compute the common dtype (ptl_result_type: dimensioned tensors first, then
 *              0-dim tensors, then wrapped Python numbers, each lower group only lifting the
 *              category) and the compute dtype (int -> float for true division etc.);
 *           3. order the dimensions so that dim 0 is the one that moves fastest in memory,
 *              and allocate the output in that order (a transposed input gives a transposed
 *              output, as in PyTorch), or check the given out=/in-place tensor (in-place may
 *              not broadcast the output; out= is resized);
 *           4. cast inputs whose dtype differs from the compute dtype (a contiguous copy),
 *              and route the result through a temporary when out= has another dtype;
 *           5. coalesce dimensions whose strides line up, so contiguous tensors become one
 *              1-D run whatever their shape.
 * run():    calls the loop over every 1-D run, through contiguous buffers where an operand
 *           is strided (Note [Staged strided runs]); above PTL_GRAIN_SIZE elements it splits
 *           the runs over the thread pool and releases the GIL (Note [GIL release]).
 * finish(): writes a temporary back into out= and returns the result (new reference). */
#ifndef PTL_ATEN_TENSOR_ITERATOR_H
#define PTL_ATEN_TENSOR_ITERATOR_H

#include "../c10/tensor_impl.h"
#include "loops.h"

#define PTL_ITER_MAX_INPUTS 4
#define PTL_ITER_MAX (PTL_ITER_MAX_INPUTS + 1)

typedef struct PtlIterConfig {
    PtlTensorImpl *out;                      /* borrowed; NULL: allocate */
    int is_inplace;                          /* out is inputs[0] */
    int ninputs;
    PtlTensorImpl *inputs[PTL_ITER_MAX_INPUTS]; /* borrowed */
    uint32_t no_promote;                     /* bit i: input i keeps its dtype (where's cond) */
    int int_to_float;                        /* integer common dtype computes in default float */
    PtlDtype out_dtype;                      /* forced output dtype (bool), or UNDEFINED */
    PtlDtype compute_dtype;                  /* forced compute dtype, or UNDEFINED */
} PtlIterConfig;

static inline PtlIterConfig
ptl_iter_config(void)
{
    PtlIterConfig c = {0};
    c.out_dtype = PTL_DTYPE_UNDEFINED;
    c.compute_dtype = PTL_DTYPE_UNDEFINED;
    return c;
}

typedef struct PtlTensorIter {
    int ntensors;                        /* output + inputs */
    int ndim;                            /* iteration dims after coalescing; dim 0 innermost */
    int64_t numel;
    int64_t shape[PTL_MAX_DIMS];
    int64_t strides[PTL_ITER_MAX][PTL_MAX_DIMS];   /* bytes */
    char *data[PTL_ITER_MAX];
    PtlTensorImpl *ops[PTL_ITER_MAX];    /* owned: output (maybe a temporary), inputs (maybe casts) */
    PtlTensorImpl *writeback;            /* owned: the user's out= when ops[0] is a temporary */
    PtlDtype common_dtype;               /* promoted dtype of the inputs */
    PtlDtype compute_dtype;              /* dtype the inputs are in for the loop */
    PtlDtype out_dtype;                  /* dtype of ops[0] */
    int out_dim;
    int64_t out_sizes[PTL_MAX_DIMS];
    uint32_t scalar_cast;                /* bit t: operand t's data is scalars[t] */
    union {
        double d;
        int64_t i;
        char c[16];
    } scalars[PTL_ITER_MAX];             /* 0-dim inputs converted to the compute dtype */
} PtlTensorIter;

/* The result type of a set of operands, PyTorch's torch.result_type rules. */
PtlDtype ptl_result_type(PtlTensorImpl *const *ts, int n);
/* PyTorch's assert_no_overlap, for the ops that write one tensor while reading another
 * outside TensorIterator (index_put_, index_add_, scatter_, ...): -1 with its error when read
 * is written itself or, both dense, shares a byte with it (Note [Overlapping output]); 0
 * otherwise, for layouts too hard to decide as well. */
int ptl_check_no_overlap(const PtlTensorImpl *written, const PtlTensorImpl *read);
/* PyTorch's assert_no_internal_overlap: -1 with its error when two elements of the written
 * tensor t share memory (a stride of 0 over a size above 1), else 0. */
int ptl_check_no_internal_overlap(const PtlTensorImpl *t);
/* Broadcasts shapes a and b; 0 or -1 with PyTorch's RuntimeError. */
int ptl_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout,
                         int64_t *out);

int ptl_iter_build(PtlTensorIter *it, const PtlIterConfig *cfg);   /* 0 or -1 (released) */
/* Runs loop over every 1-D run; runs with an operand that is neither contiguous nor
 * broadcast go through contiguous buffers (Note [Staged strided runs] in tensor_iterator.c).
 * ptl_iter_run_direct hands every run to the loop as it is, for loops that are as fast on
 * any stride (the copies).  0 or -1. */
int ptl_iter_run(PtlTensorIter *it, PtlLoop loop, const void *extra);
int ptl_iter_run_direct(PtlTensorIter *it, PtlLoop loop, const void *extra);
/* Finishes (write-back) and returns the output as a new reference; releases the iterator.
 * On error returns NULL (iterator released). */
PtlTensorImpl *ptl_iter_finish(PtlTensorIter *it);
void ptl_iter_release(PtlTensorIter *it);

/* Copies src into dst with broadcasting and dtype conversion (dst is not resized). */
int ptl_copy_into(PtlTensorImpl *dst, PtlTensorImpl *src);
/* A new contiguous tensor with t's values in dtype (new ref). */
PtlTensorImpl *ptl_cast(PtlTensorImpl *t, PtlDtype dtype);
/* t itself (incref'd) when contiguous, else a contiguous copy. */
PtlTensorImpl *ptl_contiguous(PtlTensorImpl *t);
/* A new 0-dim tensor holding a Python-style number, flagged as a wrapped number. */
PtlTensorImpl *ptl_wrapped_double(double v);
PtlTensorImpl *ptl_wrapped_int(int64_t v);
PtlTensorImpl *ptl_wrapped_bool(int v);
PtlTensorImpl *ptl_wrapped_complex(double re, double im);   /* complex128, as Python's */
/* A 0-dim tensor of dtype holding v (converted). */
PtlTensorImpl *ptl_scalar_tensor(double v, PtlDtype dtype, PtlDevice device);
/* Converts one element at src (dtype st) to dst (dtype dt). */
void ptl_convert_scalar(char *dst, PtlDtype dt, const char *src, PtlDtype st);
/* Writes v converted to dtype at p (one element). */
void ptl_store_double(char *p, PtlDtype dtype, double v);
void ptl_store_int(char *p, PtlDtype dtype, int64_t v);
/* Reads element 0 of t as double / int64 (any dtype); t's data must be on the CPU. */
double ptl_item_double(PtlTensorImpl *t);
int64_t ptl_item_int(PtlTensorImpl *t);
/* Whether ptl_item_* can read t: its data is on the CPU.  A meta tensor has none, so a
 * derivative's data-dependent branch takes its general path there (which holds for any
 * values), as PyTorch's do for meta tensors. */
int ptl_item_readable(const PtlTensorImpl *t);

#endif
