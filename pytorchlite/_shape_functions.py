"""The Python-level forms of broadcast_tensors and meshgrid, which take their tensors as
varargs or one list (torch/functional.py).  The kernels are aten::broadcast_tensors,
aten::meshgrid and aten::meshgrid.indexing (src/aten/native/shape.c)."""
import warnings

from . import _C
from ._size import Size


def _op(name, overload=""):
    return _C._op("aten::" + name, overload)


def _tensors(args):
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return list(args[0])
    return list(args)


def broadcast_shapes(*shapes):
    """The shape that tensors of the given shapes broadcast to (ints stand for 1-D shapes),
    computed without making tensors, with PyTorch's errors."""
    shapes = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    result = [1] * max((len(s) for s in shapes), default=0)
    for i, shape in enumerate(shapes):
        for j in range(-1, -len(shape) - 1, -1):
            d = shape[j]
            if d < 0:
                raise ValueError("Attempting to broadcast a dimension with negative length!")
            if d == 1 or d == result[j]:
                continue
            if result[j] != 1:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {d} at {j}! "
                                   f"Mismatching argument at index {i} had {shape}; but "
                                   f"expected shape should be broadcastable to {result}")
            result[j] = d
    return Size(result)


def broadcast_tensors(*tensors):
    """The tensors expanded to their common broadcast shape (views, no copy)."""
    return tuple(_op("broadcast_tensors")(_tensors(tensors)))


def meshgrid(*tensors, indexing=None):
    """Coordinate grids of 0-D or 1-D tensors: 'ij' (matrix) or 'xy' (Cartesian) indexing;
    omitting indexing means 'ij' with PyTorch's warning."""
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    return tuple(_op("meshgrid", "indexing")(_tensors(tensors), indexing=indexing))
