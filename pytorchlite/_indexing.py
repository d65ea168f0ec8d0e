"""The Python-level forms of the index ops whose result shape depends on flags: nonzero
(as_tuple), unique and unique_consecutive (which outputs to return).  Mirrors
torch/functional.py and the as_tuple handling of torch/csrc/autograd/python_torch_functions.
The kernels are aten::nonzero, aten::_unique2, aten::unique_dim, aten::unique_consecutive.
Below them, the index composites unravel_index
(torch/functional.py) and isin (a binary search in _unique2's sorted values)."""
from ._out_arguments import write_cast as _write_cast
from . import _C
from . import overrides as _overrides
from ._native_signature import native


def _op(name):
    return _C._op("aten::" + name)


@native
def nonzero(input, *, out=None, as_tuple=False):
    """Indices of the nonzero elements: an (N, ndim) tensor, or with as_tuple one 1-D tensor
    per dimension (a 0-dim input counts as 1-D)."""
    if as_tuple:
        return tuple(_op("where")(input))
    return _write_cast(_op("nonzero")(input), out)


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
    from ._functions import _in_place
    tensor_class.nonzero_static = nonzero_static
    tensor_class.put_ = put_
    tensor_class.put = put
    tensor_class.index_reduce = index_reduce
    tensor_class.index_reduce_ = _in_place(index_reduce)


def unravel_index(indices, shape):
    """The coordinates in an array of the given shape of each flat index (torch.functional's
    floor_divide and remainder composite, so out-of-range and negative indices wrap as
    PyTorch's do): a tuple of one tensor per dim, each of the shape of indices."""
    from . import tensor
    if indices.is_floating_point() or indices.is_complex() or indices.dtype == _C.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if isinstance(shape, int):
        shape = (shape,)
    if not isinstance(shape, (list, tuple)) or not all(isinstance(d, int) for d in shape):
        raise TypeError("expected 'shape' to be int or sequence of ints, but got "
                        f"{type(shape).__name__}")
    shape = tuple(shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    coefs, step = [], 1
    for d in reversed(shape):
        coefs.append(step)
        step *= d
    coefs = tensor(coefs[::-1], dtype=_C.int64, device=indices.device)
    flat = indices.unsqueeze(-1).floor_divide(coefs)
    return tuple(flat.remainder(tensor(shape, dtype=_C.int64, device=indices.device))
                 .unbind(-1))


@native
def isin(elements, test_elements, *, assume_unique=False, invert=False, out=None):
    """True where an element of elements is among test_elements (either may be a number),
    compared in their promoted dtype; NaN is never found.  One binary search of each element
    in the sorted unique test elements, whatever the sizes (assume_unique changes nothing
    but speed in PyTorch, so it is accepted and ignored)."""
    from . import tensor
    if not isinstance(elements, _C.TensorBase):
        elements = tensor(elements, device=test_elements.device)
    if not isinstance(test_elements, _C.TensorBase):
        test_elements = tensor(test_elements, device=elements.device)
    for t in (elements, test_elements):
        if t.dtype == _C.bool or t.is_complex():
            from .linalg import _legacy
            raise RuntimeError(f"Unsupported input type encountered for isin(): "
                               f"{_legacy(t.dtype)}")
    dtype = _C.promote_types(elements.dtype, test_elements.dtype)
    elements, test_elements = elements.to(dtype), test_elements.to(dtype)
    if test_elements.numel() == 0:
        found = _op("zeros_like")(elements, dtype=_C.bool)
    else:
        table = _op("_unique2")(test_elements.flatten(), True, False, False)[0]
        where = _op("searchsorted")(table, elements).clamp(max=table.numel() - 1)
        found = table[where] == elements
    return _write_cast(found.logical_not() if invert else found, out)


# ---- put and index_reduce ----

def put_(self, index, source, accumulate=False):
    """self, as if flattened in row-major order, takes source's values at index (adding them
    when accumulate); negative indices count from the end."""
    from ._tensor_types import _NAME
    if index.dtype != _C.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got "
                           f"{_NAME[index.dtype]}")
    if self.dtype != source.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {_NAME[self.dtype]} and source.dtype = "
                           f"{_NAME[source.dtype]}")
    if index.numel() != source.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {source.numel()}, "
                         f"index.numel() = {index.numel()}")
    n = self.numel()
    flat_index = index.reshape(-1)
    bad = ((flat_index >= n) | (flat_index < -n)).nonzero()
    if bad.numel():
        raise IndexError(f"out of range: tried to access index {int(flat_index[bad[0, 0]])} "
                         f"on a tensor of {n} elements.")
    flat = self.view(-1) if self.is_contiguous() else self.reshape(-1)
    flat.index_put_((flat_index,), source.reshape(-1), accumulate)
    if not self.is_contiguous():
        self.copy_(flat.view(self.shape))
    return self


@native
def put(input, index, source, accumulate=False):
    """The out-of-place put_: a copy of input with source put at index."""
    return put_(input.clone(), index, source, accumulate)


_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


@native
def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):
    """input with source's slices along dim reduced (prod, mean, amax, amin) into the slices
    that index names, counting input's own values unless include_self=False: scatter_reduce
    with index spread over source's shape."""
    from ._tensor_types import _NAME
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError("index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    if index.dim() > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, but got dim: "
                         f"{index.dim()} with type: {_NAME[index.dtype]} and size: "
                         f"{list(index.shape)}")
    if index.dtype not in (_C.int32, _C.int64):
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got: "
                           f"{_NAME[index.dtype]}")
    if input.dtype != source.dtype:
        raise RuntimeError(f"index_reduce_(): self ({_NAME[input.dtype]}) and source "
                           f"({_NAME[source.dtype]}) must have the same scalar type")
    dim = dim + max(input.dim(), 1) if dim < 0 else dim
    source_n = source.size(dim) if source.dim() > 0 else 1
    if index.numel() != source_n:
        raise RuntimeError(f"index_reduce_(): Number of indices ({index.numel()}) should be "
                           f"equal to source.size(dim): ({source_n}), for dim: {dim}")
    shape, src_shape = list(input.shape), list(source.shape)
    if input.dim() != source.dim() or shape[:dim] + shape[dim + 1:] != \
            src_shape[:dim] + src_shape[dim + 1:]:
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {shape} source.shape = "
                           f"{src_shape}")
    size = input.size(dim) if input.dim() > 0 else 1
    if index.numel() and bool(((index < 0) | (index >= size)).any()):
        raise IndexError("index out of range in self")
    spread = [1] * source.dim()
    if source.dim() > 0:
        spread[dim] = index.numel()
    spread_index = index.to(_C.int64).reshape(spread).expand(source.shape)
    return _write_cast(input.scatter_reduce(dim, spread_index, source, reduce,
                                            include_self=include_self), out)


@native
def nonzero_static(input, *, size, fill_value=-1, out=None):
    """nonzero(input) cut or padded (with rows of fill_value) to exactly `size` rows."""
    if not isinstance(size, int) or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    found = nonzero(input)
    if found.size(0) >= size:
        return _write_cast(found[:size].clone(), out)
    pad = _op("full")([size - found.size(0), found.size(1)], fill_value, dtype=_C.int64,
                      device=input.device)
    return _write_cast(_op("cat")([found, pad], 0), out)

# each public function goes to __torch_function__ first (Note [Torch function])
_overrides._route_functions(globals())
