"""The Python-level forms of the index ops whose result shape depends on flags: nonzero
(as_tuple), unique and unique_consecutive (which outputs to return).  Mirrors
torch/functional.py and the as_tuple handling of torch/csrc/autograd/python_torch_functions.
The kernels are aten::nonzero, aten::_unique2, aten::unique_dim, aten::unique_consecutive."""
from . import _C


def _op(name):
    return _C._op("aten::" + name)


def nonzero(input, *, as_tuple=False):
    """Indices of the nonzero elements: an (N, ndim) tensor, or with as_tuple one 1-D tensor
    per dimension (a 0-dim input counts as 1-D)."""
    if as_tuple:
        return tuple(_op("where")(input))
    return _op("nonzero")(input)


def _pick(res, return_inverse, return_counts):
    out, inverse, counts = res
    if not return_inverse and not return_counts:
        return out
    return (out,) + ((inverse,) if return_inverse else ()) + ((counts,) if return_counts else ())


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The unique elements (or slices along dim) of input, in ascending order."""
    if dim is None:
        res = _op("_unique2")(input, sorted, return_inverse, return_counts)
    else:
        res = _op("unique_dim")(input, dim, sorted, return_inverse, return_counts)
    return _pick(res, return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapses runs of equal consecutive elements (or slices along dim)."""
    res = _op("unique_consecutive")(input, return_inverse, return_counts, dim)
    return _pick(res, return_inverse, return_counts)


def _install(tensor_class):
    def _nonzero(self, *, as_tuple=False):
        return nonzero(self, as_tuple=as_tuple)

    def _unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
        return unique(self, sorted, return_inverse, return_counts, dim)

    def _unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
        return unique_consecutive(self, return_inverse, return_counts, dim)

    tensor_class.nonzero = _nonzero
    tensor_class.unique = _unique
    tensor_class.unique_consecutive = _unique_consecutive
