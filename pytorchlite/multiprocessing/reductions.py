"""Pickling tensors through shared memory (torch/multiprocessing/reductions.py).

A tensor travels as (segment handle, dtype, sizes, strides, storage offset, requires_grad);
the segment handle is a multiprocessing.reduction.DupFd of the storage's descriptor, which
keeps the segment alive until the receiver has taken it (Note [Shared memory lifetime]).
All tensors of one message that share a storage share one handle (pickle's memo sees the
same _Segment object), so they arrive as views of one mapping, as in the sender."""
import weakref
from multiprocessing import reduction

from .. import _C
from .._tensor import Tensor

# storage address -> the _Segment being pickled for it; entries live while a pickler's memo
# holds the segment, i.e. during one message.
_segments = weakref.WeakValueDictionary()


class _Segment:
    """A tensor's shared storage on its way to another process."""
    __slots__ = ("tensor", "fd", "nbytes", "__weakref__")

    def __init__(self, tensor):
        self.tensor = tensor   # keeps the storage (and its descriptor) alive meanwhile
        self.fd, self.nbytes = _C._shared_fd(tensor)

    def __reduce__(self):
        return (_rebuild_segment, (reduction.DupFd(self.fd), self.nbytes))


def _rebuild_segment(dup_fd, nbytes):
    """The receiver's mapping of a segment, as a flat uint8 tensor over the whole storage."""
    return _C._tensor_from_shared_fd(dup_fd.detach(), nbytes)


def _rebuild_tensor(segment, dtype_name, sizes, strides, offset, requires_grad):
    t = _C._tensor_on_storage(segment, getattr(_C, dtype_name), sizes, strides, offset)
    if requires_grad:
        t.requires_grad_(True)
    return t


def reduce_tensor(tensor):
    """ForkingPickler reducer for Tensor: moves the storage to shared memory (in place, as
    PyTorch does) and sends a handle to it."""
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since "
            "autograd does not support crossing process boundaries.  If you just want to "
            "transfer the data, call detach() on the tensor before serializing (e.g., "
            "putting it on the queue).")
    if tensor.device.type != "cpu":
        return tensor.__reduce_ex__(2)
    _C._share_memory_(tensor)
    key = tensor._storage_ptr()
    segment = _segments.get(key)
    if segment is None:
        segment = _segments[key] = _Segment(tensor)
    return (_rebuild_tensor, (segment, str(tensor.dtype).split(".")[1], tuple(tensor.shape),
                              tuple(tensor.stride()), tensor.storage_offset(),
                              tensor.requires_grad))


def init_reductions():
    reduction.ForkingPickler.register(Tensor, reduce_tensor)
