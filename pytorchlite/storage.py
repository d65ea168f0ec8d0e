"""torch.UntypedStorage and the deprecated TypedStorage (torch/storage.py).

An UntypedStorage is a handle on the C storage under one or more tensors
(_C.StorageBase holds a reference, so it outlives them safely): handles made from a tensor and
from its views share `_cdata` and `data_ptr()`.  Byte access goes through a uint8 tensor over
the whole storage, so reads, writes and copies use the tensor kernels.  Slicing a storage
returns a copy of those bytes (PyTorch returns a storage aliasing them, which dangles once the
parent is resized; see docs/decisions.md)."""
import operator
import sys
import warnings

from . import _C

__all__ = ["UntypedStorage", "TypedStorage"]


def _typed_tensor(untyped, dtype, offset=0, size=None):
    """A 1-D tensor of dtype over untyped's bytes (all whole elements from offset)."""
    from . import empty
    t = empty(0, dtype=dtype, device=untyped.device)
    if size is None:
        size = untyped.nbytes() // t.element_size() - offset
    return _C._set_storage(t, untyped, offset, (size,), None)


def _byte_index(idx, n):
    if not isinstance(idx, int):
        idx = operator.index(idx)
    if idx < 0:
        idx += n
    if idx < 0 or idx >= n:
        raise IndexError(f"index {idx} out of range for storage of size {n}")
    return idx


def _slice(s, n):
    start, stop, step = s.indices(n)
    if step != 1:
        raise RuntimeError(f"Trying to slice with a step of {step}, but only a step of 1 is "
                           "supported")
    return start, max(start, stop)


def _byte(value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise RuntimeError(f"fill_ expects int, but got {type(value).__name__}")
    return value % 256


_BYTE_ORDERS = ("big", "little", "native")


def _storage_repr(values, kind, size):
    """PyTorch's storage repr: one value a line, then the kind and size in brackets."""
    body = "\n ".join(str(v) for v in values)
    return f" {body}\n[torch.storage.{kind} of size {size}]"


class UntypedStorage(_C.StorageBase):
    """UntypedStorage(nbytes=0, *, device=None) or UntypedStorage(sequence of ints): bytes
    on one device."""

    __slots__ = ()
    is_sparse = False

    def __new__(cls, *args, device=None):
        if len(args) == 1 and not isinstance(args[0], int) and hasattr(args[0], "__len__"):
            data = [_byte(v) for v in args[0]]
            self = super().__new__(cls, len(data), device=device)
            if data:
                from . import tensor, uint8
                self._byte_tensor().copy_(tensor(data, dtype=uint8))
            return self
        return super().__new__(cls, *args, device=device)

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    def element_size(self):
        return 1

    def untyped(self):
        return self

    def tolist(self):
        return self._byte_tensor().tolist()

    def __iter__(self):
        return iter(self.tolist())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            start, stop = _slice(idx, self.nbytes())
            out = UntypedStorage(stop - start, device=self.device)
            out._byte_tensor().copy_(self._byte_tensor()[start:stop])
            return out
        if isinstance(idx, str) or not hasattr(idx, "__index__"):
            raise TypeError(f"can't index a torch.UntypedStorage with {type(idx).__name__}")
        return self._byte_tensor()[_byte_index(idx, self.nbytes())].item()

    def __setitem__(self, idx, value):
        n = self.nbytes()
        if isinstance(idx, slice):
            start, stop = _slice(idx, n)
        else:
            i = operator.index(idx)
            if not -n <= i < n:
                raise RuntimeError("out of bounds")
            start = i % n
            stop = start + 1
        self._byte_tensor()[start:stop].fill_(_byte(value))

    def fill_(self, value):
        self._byte_tensor().fill_(_byte(value))
        return self

    def copy_(self, src, non_blocking=None):
        if not isinstance(src, (UntypedStorage, TypedStorage)):
            raise TypeError(f"copy_(): expected a storage, got {type(src).__name__}")
        src = src.untyped()
        if src.nbytes() != self.nbytes():
            raise RuntimeError(f"size does not match, self was {self.nbytes()} bytes but src "
                               f"was {src.nbytes()} bytes")
        self._byte_tensor().copy_(src._byte_tensor())
        return self

    def clone(self):
        return UntypedStorage(self.nbytes(), device=self.device).copy_(self)

    def cpu(self):
        if self.device.type == "cpu":
            return self
        return UntypedStorage(self._byte_tensor().cpu().tolist())

    def is_pinned(self, device="cuda"):
        """True when the bytes are pinned host memory (pin_memory)."""
        return self.device.type == "cpu" and self._byte_tensor().is_pinned()

    def pin_memory(self, device="cuda"):
        """A copy in pinned host memory (self when pinned already); PyTorch's errors without
        an accelerator (Tensor.pin_memory)."""
        if self.device.type != "cpu":
            raise TypeError(f"cannot pin 'torch.{self.device.type}.UntypedStorage' only CPU "
                            "memory can be pinned")
        pinned = self._byte_tensor().pin_memory()
        return self if self.is_pinned() else UntypedStorage._of(pinned)

    def __repr__(self):
        return _storage_repr(self.tolist(), f"UntypedStorage(device={self.device})",
                             self.nbytes())

    __str__ = __repr__

    def __copy__(self):
        return self.clone()

    def __deepcopy__(self, memo):
        return memo.setdefault(id(self), self.clone())

    @classmethod
    def from_buffer(cls, buffer, byte_order=None, dtype=None, count=-1, offset=0):
        """The bytes of an object supporting the buffer protocol, read as elements of dtype
        in byte_order ("big", "little", "native") and stored in the machine's order."""
        from . import uint8
        if dtype is None:
            raise RuntimeError("argument 'dtype' cannot be None")
        itemsize = dtype.itemsize
        if byte_order is None and dtype != uint8:
            raise RuntimeError("function missing required argument 'byte_order' (pos 2)")
        if byte_order is not None and byte_order not in _BYTE_ORDERS:
            raise ValueError(f"invalid byte_order '{byte_order}' (expected 'big', 'little', "
                             "or 'native')")
        raw = memoryview(buffer).cast("B")
        if offset < 0 or offset > len(raw):
            raise ValueError(f"offset must be non-negative and no greater than buffer length "
                             f"({len(raw)}), but got {offset}")
        avail = len(raw) - offset
        if count < 0:
            if avail % itemsize != 0:
                raise ValueError(f"buffer size ({avail}) must be a multiple of element size "
                                 f"({itemsize})")
            count = avail // itemsize
        elif count * itemsize > avail:
            raise ValueError(f"requested buffer length ({count} * {itemsize} bytes) exceeds "
                             f"the maximum allowed length ({avail} bytes)")
        data = bytearray(raw[offset:offset + count * itemsize])
        order = sys.byteorder if byte_order in (None, "native") else byte_order
        if order != sys.byteorder and itemsize > 1:
            swapped = bytearray(len(data))
            for j in range(itemsize):
                swapped[j::itemsize] = data[itemsize - 1 - j::itemsize]
            data = swapped
        return cls(data)


_typed_storage_warned = False


def _warn_typed_storage_removal():
    """PyTorch's deprecation warning, issued once per process."""
    global _typed_storage_warned
    if not _typed_storage_warned:
        _typed_storage_warned = True
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                      "UntypedStorage will be the only storage class. This should only matter "
                      "to you if you are using storages directly.  To access UntypedStorage "
                      "directly, use tensor.untyped_storage() instead of tensor.storage()",
                      UserWarning, stacklevel=3)


class TypedStorage:
    """The storage under a tensor seen as elements of its dtype (deprecated in PyTorch in
    favour of UntypedStorage, which it wraps as `_untyped_storage`)."""

    is_sparse = False

    def __init__(self, *, wrap_storage, dtype):
        if not isinstance(wrap_storage, UntypedStorage):
            raise TypeError("TypedStorage(): wrap_storage must be an UntypedStorage, got "
                            f"{type(wrap_storage).__name__}")
        self._untyped_storage = wrap_storage
        self.dtype = dtype

    @property
    def device(self):
        return self._untyped_storage.device

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    def untyped(self):
        return self._untyped_storage

    def element_size(self):
        return self.dtype.itemsize

    def size(self):
        return self._untyped_storage.nbytes() // self.element_size()

    __len__ = size

    def nbytes(self):
        return self._untyped_storage.nbytes()

    def data_ptr(self):
        return self._untyped_storage.data_ptr()

    @property
    def _cdata(self):
        return self._untyped_storage._cdata

    def _elements(self):
        return _typed_tensor(self._untyped_storage, self.dtype)

    def tolist(self):
        return self._elements().tolist()

    def __iter__(self):
        return iter(self.tolist())

    def __getitem__(self, idx):
        if isinstance(idx, str) or not hasattr(idx, "__index__"):
            raise TypeError(f"can't index a torch.TypedStorage with {type(idx).__name__}")
        return self._elements()[_byte_index(idx, self.size())].item()

    def __setitem__(self, idx, value):
        self._elements()[_byte_index(idx, self.size())] = value

    def fill_(self, value):
        self._elements().fill_(value)
        return self

    def is_shared(self):
        return self._untyped_storage.is_shared()

    def share_memory_(self):
        self._untyped_storage.share_memory_()
        return self

    def is_pinned(self, device="cuda"):
        return self._untyped_storage.is_pinned(device)

    def pin_memory(self, device="cuda"):
        """A TypedStorage over a pinned copy of the bytes (UntypedStorage.pin_memory)."""
        return TypedStorage(wrap_storage=self._untyped_storage.pin_memory(device),
                            dtype=self.dtype)

    def __repr__(self):
        return _storage_repr(self.tolist(),
                             f"TypedStorage(dtype={self.dtype}, device={self.device})",
                             self.size())

    __str__ = __repr__
