"""Reductions composed in Python from the dispatcher ops: nanmean.  Mirrors the composite
at::native::nanmean (ATen/native/ReduceOps.cpp); autograd differentiates through nansum and
div."""
from . import _C
from ._tensor_types import _NAME


def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """The mean of the non-NaN elements over dim (all of them when dim is None): nansum
    divided by the count of non-NaN elements; NaN where every element is NaN."""
    if not input.is_floating_point():
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype "
                           f"but got {_NAME[input.dtype]}")
    if dtype is not None and not dtype.is_floating_point:
        raise RuntimeError("nanmean(): could not infer output dtype. Optional dtype must be "
                           f"either a floating point or complex dtype. Got: {_NAME[dtype]}")
    count = input.isnan().logical_not().sum(dim, keepdim=keepdim)
    result = _C._functions["nansum"](input, dim, keepdim=keepdim, dtype=dtype).div(count)
    if out is None:
        return result
    return out.copy_(result)
