"""z = sigmoid(x) + y compiled at run time with load_inline: the kernel source is a string,
and `functions` exposes it to Python as a plain function (no dispatcher, no autograd; the
dispatcher route with autograd is sigmoid_add.c)."""
import pytorchlite as torch
from pytorchlite.utils.cpp_extension import load_inline

SOURCE = r"""
#include <math.h>

PtlApiTensor *
sigmoid_add(PtlApiTensor *x, PtlApiTensor *y)
{
    if (ptl_api_dtype(x) != PTL_API_FLOAT32 || ptl_api_dtype(y) != PTL_API_FLOAT32 ||
        !ptl_api_is_contiguous(x) || !ptl_api_is_contiguous(y) ||
        ptl_api_numel(x) != ptl_api_numel(y)) {
        ptl_api_set_error(PTL_API_TYPE_ERROR, "sigmoid_add: expected two contiguous float32 "
                          "tensors of the same size");
        return NULL;
    }
    PtlApiTensor *z = ptl_api_empty_like(x);
    const float *a = ptl_api_data_ptr(x), *b = ptl_api_data_ptr(y);
    float *c = ptl_api_data_ptr(z);
    for (int64_t i = 0; i < ptl_api_numel(z); i++) {
        c[i] = 1.0f / (1.0f + expf(-a[i])) + b[i];
    }
    return z;
}
"""

module = load_inline("sigmoid_add_inline_ext", SOURCE, functions=["sigmoid_add"])

if __name__ == "__main__":
    print(module.sigmoid_add(torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])))
