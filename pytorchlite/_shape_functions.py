"""The Python-level forms of broadcast_tensors and meshgrid, which take their tensors as
varargs or one list (torch/functional.py).  The kernels are aten::broadcast_tensors,
aten::meshgrid and aten::meshgrid.indexing (src/aten/native/shape.c)."""
import warnings

from . import _C


def _op(name, overload=""):
    return _C._op("aten::" + name, overload)


def _tensors(args):
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return list(args[0])
    return list(args)


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
