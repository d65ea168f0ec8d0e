"""torch.utils.dlpack: exchanging tensors with other libraries through DLPack capsules.
from_dlpack lives with Tensor.__dlpack__ in _tensor.py; this module adds the legacy
to_dlpack and the DLDeviceType codes."""
import enum

from .. import _C
from .._tensor import from_dlpack

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


class DLDeviceType(enum.IntEnum):
    """DLPack's device codes (dlpack.h's DLDeviceType)."""
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


def to_dlpack(tensor):
    """A legacy (unversioned, "dltensor") DLPack capsule sharing tensor's memory, for
    from_dlpack; unlike __dlpack__ it exports a tensor that requires grad, as PyTorch's does."""
    if not isinstance(tensor, _C.TensorBase):
        raise TypeError(f"_to_dlpack(): argument 'data' (position 1) must be Tensor, not "
                        f"{type(tensor).__name__}")
    return _C._to_dlpack(tensor, False)
