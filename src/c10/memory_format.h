/* memory_format.h -- the order in which a dense tensor's elements sit in memory.  Mirrors
 * c10/core/MemoryFormat.h and the contiguity predicates of c10/core/TensorImpl.h.
 *
 * Note [Memory formats]
 * ~~~~~~~~~~~~~~~~~~~~~
 * A memory format is not stored on a tensor: it is read off its strides.  channels_last
 * orders a 4-d (N, C, H, W) tensor as N, H, W, C (strides H*W*C, 1, W*C, C) and
 * channels_last_3d a 5-d (N, C, D, H, W) one as N, D, H, W, C.  A tensor can be contiguous
 * in several formats at once (C == 1, or H == W == 1): size-1 dims take any stride.
 * preserve_format is a request ("keep the input's layout"), never a layout.  Every rule of
 * this family lives here, so ops ask these functions instead of comparing strides. */
#ifndef PTL_C10_MEMORY_FORMAT_H
#define PTL_C10_MEMORY_FORMAT_H

#include <stdint.h>

#include "tensor_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum PtlMemoryFormat {   /* ORDER MEMORY_FORMAT: PyTorch's c10::MemoryFormat */
    PTL_MEMORY_FORMAT_CONTIGUOUS = 0,
    PTL_MEMORY_FORMAT_PRESERVE,
    PTL_MEMORY_FORMAT_CHANNELS_LAST,
    PTL_MEMORY_FORMAT_CHANNELS_LAST_3D,
    PTL_MEMORY_FORMAT_COUNT
} PtlMemoryFormat;

/* "contiguous_format", "preserve_format", "channels_last", "channels_last_3d" */
const char *ptl_memory_format_name(PtlMemoryFormat f);
/* 0, or -1 with PyTorch's RuntimeError when f needs another rank than dim
 * ("required rank 4 tensor to use channels_last format"); preserve is refused too
 * (it names no layout). */
int ptl_memory_format_check(PtlMemoryFormat f, int dim);
/* The dense strides of sizes in format f (contiguous or a channels-last one whose rank was
 * checked by ptl_memory_format_check). */
void ptl_memory_format_strides(PtlMemoryFormat f, int dim, const int64_t *sizes,
                               int64_t *strides);
/* A new tensor of sizes laid out in format f (as ptl_memory_format_strides).  Its storage
 * holds numel elements whatever the format, so a size that overflows raises PyTorch's
 * message with the sizes alone, as empty(..., memory_format=f) does. */
PtlTensorImpl *ptl_empty_format(int dim, const int64_t *sizes, PtlMemoryFormat f,
                                PtlDtype dtype, PtlDevice device);
/* Whether t is contiguous in format f (x.is_contiguous(memory_format=f)); preserve: 0. */
int ptl_tensor_impl_is_contiguous_as(const PtlTensorImpl *t, PtlMemoryFormat f);
/* PyTorch's suggest_memory_format: channels_last(_3d) when t's strides order it that way,
 * contiguous otherwise (and for the ambiguous N111 / C == 0-stride cases). */
PtlMemoryFormat ptl_tensor_impl_suggest_memory_format(const PtlTensorImpl *t);
/* Whether t's elements cover its extent once each (is_non_overlapping_and_dense). */
int ptl_tensor_impl_is_dense(const PtlTensorImpl *t);
/* The strides of a new tensor shaped like t in format f, as empty_like lays it out:
 * preserve keeps t's strides when t is dense, else orders the dims as t's strides do
 * (infer_dense_strides).  0, or -1 with the rank error of ptl_memory_format_check. */
int ptl_memory_format_like_strides(const PtlTensorImpl *t, PtlMemoryFormat f,
                                   int64_t *strides);

#ifdef __cplusplus
}
#endif

#endif
