"""torch.types: the aliases PyTorch's annotations use (_int, _float, Number, Device...), for
code that imports them."""
import builtins
from typing import List, Optional, Sequence, Tuple, Union

from . import _C
from ._layout import layout
from ._size import Size
from ._tensor import Tensor
from .storage import UntypedStorage

_bool = builtins.bool
_int = builtins.int
_float = builtins.float
_complex = builtins.complex
_str = builtins.str
_dtype = _C.dtype
_device = _C.device
_layout = layout
_qscheme = type(None)
_size = Union[Size, List[_int], Tuple[_int, ...]]
_dispatchkey = Union[_str, type(None)]

Number = Union[_int, _float, _bool]
PyNumber = Union[_int, _float, _bool, _complex]
Device = Optional[Union[_device, _str, _int]]
Storage = UntypedStorage
IntLikeType = _int
FloatLikeType = _float
BoolLikeType = _bool
TensorOrTensors = Union[Tensor, Sequence[Tensor]]
FileLike = Union[_str, "os.PathLike[str]", "typing.IO[bytes]"]

__all__ = ["Number", "PyNumber", "Device", "Storage", "IntLikeType", "FloatLikeType",
           "BoolLikeType", "TensorOrTensors", "FileLike"]
