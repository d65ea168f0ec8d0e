/* resize_output.h -- an out= tensor resized to its result's shape.  Mirrors
 * ATen/native/Resize.cpp (resize_output).  See Note [Resizing out=]. */
#ifndef PTL_ATEN_RESIZE_OUTPUT_H
#define PTL_ATEN_RESIZE_OUTPUT_H

#include <string.h>

#include "../c10/tensor_impl.h"

/* Note [Resizing out=]
 * ~~~~~~~~~~~~~~~~~~~~
 * An out= tensor whose shape is not the result's takes the result's shape (its storage grows
 * when it must, as resize_ does).  When it had elements, PyTorch deprecates that with a
 * warning, and so do we, with its words: ptl_warn here, flushed as a UserWarning by
 * src/python when the call returns.  This is the only resize of an out=: the native out=
 * kernels (TensorIterator's outputs, mm, index_select, frexp) call it, and the out= written
 * in Python (the functional overload's, the composites': pytorchlite._out_arguments) through
 * _C._resize_output.  Either way the warning names the user's line (the first frame outside
 * the package: ptlpy_flush_warnings).  Like PyTorch's CPU resize_output it does not dispatch
 * (no resize_ call, so an out that requires grad is resized under no_grad) and leaves the
 * version bump to the write that follows.  An empty out, or one of the result's shape, is quiet.  One warning per call: the
 * buffer keeps the first (a call with two resized outputs warns once where PyTorch warns
 * twice). */

/* ptl_resize_output's work for an out whose shape is not sizes[0..dim): 1, or -1 with the
 * error set */
int ptl_resize_output_reshaped(PtlTensorImpl *out, int dim, const int64_t *sizes);

/* The destination d (borrowed) of a result of sizes[0..dim) and dtype dt checked as
 * PyTorch's structured kernels' set_output checks it: the self of an in-place op (inplace)
 * must already have dt and that shape ("Bad in-place call: ..."); an out= must have dt
 * ("Expected out tensor to have dtype ...") and is resized here; neither may have two
 * elements on one memory location.  0, or -1 with PyTorch's error (Note [Products written
 * in place] in native/linalg.c). */
int ptl_check_output(PtlTensorImpl *d, int inplace, int dim, const int64_t *sizes, PtlDtype dt);

/* Resizes out (borrowed) to sizes[0..dim): 1 when it changed shape, 0 when it had it, -1
 * with the error set.  Inline: the out= of the right shape costs a compare. */
static inline int
ptl_resize_output(PtlTensorImpl *out, int dim, const int64_t *sizes)
{
    if (out->dim == dim && memcmp(out->sizes, sizes, sizeof(int64_t) * (size_t)dim) == 0) {
        return 0;
    }
    return ptl_resize_output_reshaped(out, dim, sizes);
}

#endif
