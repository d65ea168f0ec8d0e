/* resize_output.c -- an out= tensor resized to its result's shape, warned about when it had
 * elements, and the destination checks of the structured kernels' set_output.  Mirrors
 * ATen/native/Resize.cpp.  See Note [Resizing out=]. */
#include "resize_output.h"

#include "../c10/error.h"
#include "tensor_iterator.h"

int
ptl_resize_output_reshaped(PtlTensorImpl *out, int dim, const int64_t *sizes)
{
    char had[256], want[256];
    if (out->numel != 0) {
        ptl_warn("An output with one or more elements was resized since it had shape %s, which "
                 "does not match the required output shape %s. This behavior is deprecated, and "
                 "in a future PyTorch release outputs will not be resized unless they have zero "
                 "elements. You can explicitly reuse an out tensor t by resizing it, inplace, to "
                 "zero elements with t.resize_(0).",
                 ptl_format_sizes(had, sizeof(had), out->dim, out->sizes),
                 ptl_format_sizes(want, sizeof(want), dim, sizes));
    }
    return ptl_tensor_impl_resize(out, dim, sizes) < 0 ? -1 : 1;
}

int
ptl_check_output(PtlTensorImpl *d, int inplace, int dim, const int64_t *sizes, PtlDtype dt)
{
    char have[256], want[256];
    if (inplace) {
        if (d->dtype != dt) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "Bad in-place call: input tensor dtype %s and output tensor "
                                 "dtype %s should match",
                                 ptl_dtype_cpp_name(d->dtype), ptl_dtype_cpp_name(dt));
        }
        if (d->dim != dim || memcmp(d->sizes, sizes, (size_t)dim * sizeof(int64_t)) != 0) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "Bad in-place call: input tensor size %s and output tensor "
                                 "size %s should match",
                                 ptl_format_sizes(have, sizeof(have), d->dim, d->sizes),
                                 ptl_format_sizes(want, sizeof(want), dim, sizes));
        }
    }
    else {
        if (d->dtype != dt) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "Expected out tensor to have dtype %s, but got %s instead",
                                 ptl_dtype_cpp_name(dt), ptl_dtype_cpp_name(d->dtype));
        }
        if (ptl_resize_output(d, dim, sizes) < 0) {
            return -1;
        }
    }
    return ptl_check_no_internal_overlap(d);
}
