"""The Python-level forms of broadcast_tensors and meshgrid, which take their tensors as
varargs or one list (torch/functional.py).  The kernels are aten::broadcast_tensors,
aten::meshgrid and aten::meshgrid.indexing (src/aten/native/shape.c).

Below them, the shape functions that PyTorch writes as CompositeImplicitAutograd kernels
(ravel, atleast_Nd, column_stack, dstack, h/v/dsplit, diagflat, sum_to_size, block_diag,
cartesian_prod, combinations, ...), composed here of the view, join and index ops so that
autograd differentiates them through those ops."""
import warnings

from ._out_arguments import write_cast as _write_cast
from . import _C
from . import overrides as _overrides
from ._native_signature import native
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


# ---- composites of the view and join ops (CompositeImplicitAutograd in PyTorch, so autograd
# differentiates through the ops they call) ----

@native
def ravel(input):
    """The elements of input as a 1-D tensor: a view when input is contiguous, else a copy."""
    return input.contiguous().view(-1)


def _atleast(name, tensors, lift):
    if len(tensors) == 1:
        tensors = tensors[0]
    if isinstance(tensors, (list, tuple)):
        for i, t in enumerate(tensors):
            if not isinstance(t, _C.TensorBase):
                raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                                f"{type(t).__name__}")
        return tuple(lift(t) for t in tensors)
    if not isinstance(tensors, _C.TensorBase):
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"({type(tensors).__name__})")
    return lift(tensors)


def _lift_1d(t):
    return t.reshape(1) if t.dim() == 0 else t


def _lift_2d(t):
    return t.reshape(1, 1) if t.dim() == 0 else t.unsqueeze(0) if t.dim() == 1 else t


def _lift_3d(t):
    if t.dim() == 0:
        return t.reshape(1, 1, 1)
    if t.dim() == 1:
        return t.unsqueeze(0).unsqueeze(-1)
    return t.unsqueeze(-1) if t.dim() == 2 else t


def atleast_1d(*tensors):
    """Each 0-D tensor as a 1-element 1-D one: one tensor gives a tensor, several tensors (or
    one list of them) a tuple."""
    return _atleast("atleast_1d", tensors, _lift_1d)


def atleast_2d(*tensors):
    """Each tensor with at least 2 dims (a 1-D one becomes a row); see atleast_1d."""
    return _atleast("atleast_2d", tensors, _lift_2d)


def atleast_3d(*tensors):
    """Each tensor with at least 3 dims (1-D (n) -> (1, n, 1), 2-D (m, n) -> (m, n, 1))."""
    return _atleast("atleast_3d", tensors, _lift_3d)


def _nonempty(name, tensors):
    if len(tensors) == 0:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return tensors


@native
def column_stack(tensors, *, out=None):
    """hstack of the tensors, each 0-D or 1-D one taken as a column."""
    tensors = [t.reshape(t.numel(), 1) if t.dim() <= 1 else t
               for t in _nonempty("column_stack", tensors)]
    result = _C._functions["hstack"](tensors)
    return _write_cast(result, out)


@native
def dstack(tensors, *, out=None):
    """cat along the third dim of the tensors lifted by atleast_3d."""
    tensors = [_lift_3d(t) for t in _nonempty("dstack", tensors)]
    result = _C._functions["cat"](tensors, 2)
    return _write_cast(result, out)


def _split_along(name, input, indices_or_sections, min_dim, dim):
    if input.dim() < min_dim:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dim} dimension, "
                           f"but got a tensor with {input.dim()} dimensions!")
    if isinstance(indices_or_sections, int):
        size = input.shape[dim]
        if indices_or_sections == 0 or size % indices_or_sections != 0:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the "
                               f"size of the dimension {size} is not divisible by the "
                               f"split_size {indices_or_sections}!")
    return input.tensor_split(indices_or_sections, dim)


@native
def hsplit(input, indices_or_sections):
    """tensor_split along dim 1 (dim 0 of a 1-D tensor); an int must divide that dim."""
    return _split_along("hsplit", input, indices_or_sections, 1, 0 if input.dim() == 1 else 1)


@native
def vsplit(input, indices_or_sections):
    """tensor_split along dim 0 of a tensor of at least 2 dims."""
    return _split_along("vsplit", input, indices_or_sections, 2, 0)


@native
def dsplit(input, indices_or_sections):
    """tensor_split along dim 2 of a tensor of at least 3 dims."""
    return _split_along("dsplit", input, indices_or_sections, 3, 2)


@native
def diagflat(input, offset=0):
    """A 2-D tensor with the elements of input (flattened) on its offset-th diagonal."""
    return ravel(input).diag(offset)


def _contiguous_copy(part):
    """A contiguous tensor with part's values that never shares part's memory."""
    # contiguous() copies only a non-contiguous part (and clone keeps the part's strides)
    return part.clone() if part.is_contiguous() else part.contiguous()


@native
def narrow_copy(input, dim, start, length):
    """A contiguous copy of input.narrow(dim, start, length)."""
    return _contiguous_copy(input.narrow(dim, start, length))


# ---- the view-copy functions: NAME_copy(input, ...) is a contiguous copy of the view ----
# PyTorch has them for functionalization (a program without views); each takes out=.

def _copy_out(result, out):
    if out is None:
        return result
    if isinstance(result, tuple):
        if len(out) != len(result):
            raise RuntimeError(f"Expected an out list of {len(result)} tensors, but got "
                               f"{len(out)}")
        for o, r in zip(out, result):
            o.resize_(r.shape).copy_(r)
        return None
    return out.resize_(result.shape).copy_(result)


def _view_copy_function(name, view):
    def view_copy(input, *args, out=None, **kwargs):
        result = view(input, *args, **kwargs)
        if isinstance(result, (tuple, list)):
            return _copy_out(tuple(_contiguous_copy(r) for r in result), out)
        return _copy_out(_contiguous_copy(result), out)
    view_copy.__name__ = view_copy.__qualname__ = name
    view_copy.__doc__ = f"A contiguous copy of the {name[:-5]} view, not sharing its memory."
    return native(view_copy)


def _squeeze(input, dim=None):
    return input.squeeze() if dim is None else input.squeeze(dim)


def _slice(input, dim=0, start=None, end=None, step=1):
    index = [slice(None)] * input.dim()
    index[dim] = slice(start, end, step)
    return input[tuple(index)]


def _as_strided(input, size, stride, storage_offset=None):
    return input.as_strided(size, stride, storage_offset)


_VIEWS = {
    "view_copy": lambda input, size: input.view(size),
    "permute_copy": lambda input, dims: input.permute(dims),
    "transpose_copy": lambda input, dim0, dim1: input.transpose(dim0, dim1),
    "t_copy": lambda input: input.t(),
    "expand_copy": lambda input, size, *, implicit=False: input.expand(size),
    "select_copy": lambda input, dim, index: input.select(dim, index),
    "slice_copy": _slice,
    "diagonal_copy": lambda input, offset=0, dim1=0, dim2=1: input.diagonal(offset, dim1, dim2),
    "squeeze_copy": _squeeze,
    "unsqueeze_copy": lambda input, dim: input.unsqueeze(dim),
    "unbind_copy": lambda input, dim=0: input.unbind(dim),
    "split_copy": lambda input, split_size, dim=0: input.split(split_size, dim),
    "split_with_sizes_copy": lambda input, split_sizes, dim=0: input.split(split_sizes, dim),
    "unfold_copy": lambda input, dimension, size, step: input.unfold(dimension, size, step),
    "alias_copy": lambda input: input.view(input.shape),
    "detach_copy": lambda input: input.detach(),
    "as_strided_copy": _as_strided,
    "view_as_real_copy": lambda input: _C._functions["view_as_real"](input),
    "view_as_complex_copy": lambda input: _C._functions["view_as_complex"](input),
    "indices_copy": lambda input: input.indices(),
    "values_copy": lambda input: input.values(),
}
globals().update({name: _view_copy_function(name, view) for name, view in _VIEWS.items()})


# ---- the scatter forms: a copy of input with src written into one of its views ----

def _scatter_into(input, src, view):
    """input cloned, src copied into view(clone): src must have the view's exact shape."""
    out = input.clone()
    part = view(out)
    if tuple(src.shape) != tuple(part.shape):
        raise RuntimeError("expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(part.shape)}")
    part.copy_(src)
    return out


@native
def select_scatter(input, src, dim, index):
    """input with input[..., index, ...] (along dim) replaced by src."""
    return _scatter_into(input, src, lambda t: t.select(dim, index))


@native
def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """input with the slice start:end:step along dim replaced by src."""
    return _scatter_into(input, src, lambda t: _slice(t, dim, start, end, step))


@native
def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """input with its diagonal(offset, dim1, dim2) replaced by src."""
    return _scatter_into(input, src, lambda t: t.diagonal(offset, dim1, dim2))


@native
def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A clone of input with src written through as_strided(size, stride, storage_offset) of
    the clone (whose strides are input's when input is dense, else contiguous)."""
    return _scatter_into(input, src, lambda t: _as_strided(t, size, stride, storage_offset))


def sum_to_size(self, *size):
    """self summed down to size (which self must be expandable to from size): the gradient
    of an expand from size (at::sum_to).  self itself when the sizes are equal."""
    size = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else size
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(s != 1 and s != d for s, d in zip(size, shape[lead:])):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    if size == shape:
        return self
    dims = list(range(lead)) + [lead + i for i, s in enumerate(size) if s == 1 and
                                shape[lead + i] != 1]
    result = self.sum(dims, keepdim=True) if dims else self
    return result.view(size) if lead else result


def block_diag(*tensors):
    """The tensors (0-D, 1-D taken as one row, or 2-D) on the diagonal of a 2-D tensor of their
    promoted dtype, zeros elsewhere."""
    from . import zeros
    mats = []
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError("torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                               f"Input {i} has {t.dim()} dimensions")
        mats.append(_lift_2d(t))
    if not mats:
        return zeros(1, 0)
    dtype = mats[0].dtype
    for t in mats[1:]:
        dtype = _C.promote_types(dtype, t.dtype)
    width = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        r, c = m.shape
        rows.append(_C._functions["cat"]([
            zeros(r, left, dtype=dtype, device=m.device), m.to(dtype),
            zeros(r, width - left - c, dtype=dtype, device=m.device)], 1))
        left += c
    return _C._functions["cat"](rows, 0)


def _check_1d(t):
    if t.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")


def cartesian_prod(*tensors):
    """The cartesian product of 1-D tensors as rows (a single tensor is returned as is)."""
    for t in tensors:
        _check_1d(t)
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return _C._functions["stack"]([g.flatten() for g in grids], 1)


@native
def combinations(input, r=2, with_replacement=False):
    """The length-r combinations of the elements of a 1-D tensor, in lexicographic order of
    their positions, as rows (itertools.combinations; with_replacement: _with_replacement)."""
    from . import arange, empty
    _check_1d(input)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return empty(0, dtype=input.dtype, device=input.device)
    grids = meshgrid(*[arange(input.numel(), device=input.device)] * r, indexing="ij")
    mask = None
    for a, b in zip(grids[:-1], grids[1:]):
        ordered = a <= b if with_replacement else a < b
        mask = ordered if mask is None else mask.logical_and(ordered)
    picks = [g if mask is None else g.masked_select(mask) for g in grids]
    return _C._functions["stack"]([input.index_select(0, p.flatten()) for p in picks], 1)


# PyTorch's unsafe_ splits skip view tracking for speed; here they are the splits themselves
@native
def unsafe_chunk(input, chunks, dim=0):
    return input.chunk(chunks, dim)


@native
def unsafe_split(input, split_size, dim=0):
    return input.split(split_size, dim)


@native
def unsafe_split_with_sizes(input, split_sizes, dim=0):
    return input.split_with_sizes(split_sizes, dim)


def _install(tensor_class):
    for fn in (ravel, hsplit, vsplit, dsplit, diagflat, narrow_copy, sum_to_size,
               select_scatter, slice_scatter, diagonal_scatter, as_strided_scatter,
               unsafe_chunk, unsafe_split, unsafe_split_with_sizes):
        setattr(tensor_class, fn.__name__, fn)

# each public function goes to __torch_function__ first (Note [Torch function]), but
# broadcast_shapes (of shapes, not routed in PyTorch)
_overrides._route_functions(globals(), skip=("broadcast_shapes",))
