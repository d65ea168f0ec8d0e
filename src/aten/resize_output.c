/* resize_output.c -- an out= tensor resized to its result's shape, warned about when it had
 * elements.  Mirrors ATen/native/Resize.cpp.  See Note [Resizing out=]. */
#include "resize_output.h"

#include "../c10/error.h"

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
