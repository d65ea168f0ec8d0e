"""The tensor-creating functions of the torch namespace that are written over other factories:
asarray and frombuffer (sharing the memory of a tensor, NumPy array or buffer when they can),
empty_permuted (an empty tensor with a chosen memory order of its dims), the deprecated range
(with its end point)."""
import builtins
import math
import warnings

from . import _C
from . import overrides as _overrides
from ._native_signature import native

__all__ = ["asarray", "frombuffer", "empty_permuted", "range"]

_f = _C._functions
_warned_not_writable = False


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor of `count` elements of dtype (all of them when -1) read from an object
    with the buffer protocol, from byte `offset`, sharing the buffer's memory."""
    import numpy as np
    length = memoryview(buffer).nbytes
    size = dtype.itemsize
    if length <= 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if offset < 0 or offset >= length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % size != 0:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} "
                             f"bytes) must be a multiple of element size ({size})")
        count = (length - offset) // size
    elif offset + count * size > length:
        raise ValueError(f"requested buffer length ({count} * {size} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({length} bytes)")
    raw = np.frombuffer(buffer, dtype=np.uint8, count=count * size, offset=offset)
    global _warned_not_writable
    if not raw.flags.writeable and not _warned_not_writable:
        _warned_not_writable = True
        warnings.warn("The given buffer is not writable, and PyTorch does not support "
                      "non-writable tensors. This means you can write to the underlying "
                      "(supposedly non-writable) buffer using the tensor. You may want to copy "
                      "the buffer to protect its data or make it writable before converting it "
                      "to a tensor. This type of warning will be suppressed for the rest of "
                      "this program.", UserWarning, stacklevel=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = _C.from_numpy(raw).view(dtype)
    return result.requires_grad_(requires_grad)


def _alias_error(src, dtype):
    from ._tensor_types import _NAME
    return ValueError(f"can't alias tensor with dtype '{_NAME[src]}' into dtype "
                      f"'{_NAME[dtype]}'.")


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """obj as a tensor: a tensor, a NumPy array or a buffer-protocol object shares its memory
    unless dtype or device ask for a conversion or copy=True; copy=False refuses to copy.
    Anything else (numbers, nested sequences) becomes a new tensor."""
    import numpy as np
    if isinstance(obj, _C.TensorBase):
        source = obj
    elif isinstance(obj, np.ndarray):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            source = _C.from_numpy(obj)
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        source = frombuffer(obj, dtype=dtype or _C.get_default_dtype())
    else:
        if copy is False:
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        result = _C.tensor(obj, dtype=dtype, device=device)
        return result.requires_grad_(requires_grad) if requires_grad else result
    target_dtype = dtype or source.dtype
    target_device = source.device if device is None else _C.device(device)
    if copy is False:
        if target_dtype != source.dtype:
            raise _alias_error(source.dtype, target_dtype)
        if target_device != source.device:
            raise ValueError(f"can't alias tensor from device '{source.device}' to "
                             f"'{target_device}'.")
    result = source.to(device=target_device, dtype=target_dtype)
    if copy and result is source:
        result = source.clone()
    return result.requires_grad_(requires_grad) if requires_grad else result


@native
def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """An uninitialized tensor of `size` whose dims lie in memory in the order physical_layout
    names, outermost first: empty_permuted((2, 3, 4), (0, 2, 1)).stride() == (12, 1, 3)."""
    size, physical_layout = list(size), list(physical_layout)
    if len(size) != len(physical_layout):
        raise RuntimeError("Number of dimensions in size does not match the length of the "
                           "physical_layout; i.e. len(size) = "
                           f"{len(size)} is not equal to len(physical_layout) = "
                           f"{len(physical_layout)}")
    if len(set(physical_layout)) != len(physical_layout):
        raise RuntimeError("Duplicate dim not allowed")
    dims = list(builtins.range(len(size)))
    for i, d in enumerate(physical_layout):
        if d not in dims:
            raise RuntimeError(f"Dimension out of range (expected to be between 0 and "
                               f"{len(size) - 1}, but got {d} at index {i}).  NB: negative "
                               "dims not currently supported; file an issue if you want it.")
    inverse = [physical_layout.index(d) for d in dims]
    storage_order = _f["empty"]([size[d] for d in physical_layout], dtype=dtype, device=device)
    result = storage_order.permute(inverse)
    return result.requires_grad_(requires_grad) if requires_grad else result


@native
def range(start, end, step=1, *, out=None, dtype=None, layout=None, device=None,
          requires_grad=False):
    """Deprecated: start, start + step, ... up to and including end, in the default dtype
    unless dtype says otherwise (torch.arange excludes end)."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    dtype = dtype or _C.get_default_dtype()
    if not (dtype.is_floating_point or dtype.is_complex):   # the bounds cast to dtype first
        start, end, step = int(start), int(end), int(step)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and start > end) or (step < 0 and start < end):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = int(math.floor((end - start) / step)) + 1
    result = _f["arange"](n, dtype=_C.float64, device=device).mul(step).add(start).to(dtype)
    if out is not None:
        return out.resize_(result.shape).copy_(result)
    return result.requires_grad_(requires_grad) if requires_grad else result


# each public function goes to __torch_function__ first (Note [Torch function]), but those
# that PyTorch does not route
_overrides._route_functions(globals(), skip=("frombuffer", "range"))
